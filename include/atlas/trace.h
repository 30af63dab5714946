/*
 * atlastrace's optional program API. Every function here is a no-op (or
 * returns 0) when the program runs without the preload: each resolves its
 * implementation in libatlastrace.so at the first call, through dlsym.
 * Link with -ldl on older glibc.
 */
#ifndef ATLAS_TRACE_H
#define ATLAS_TRACE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- red zones (ATLAS_REDZONE) ------------------------------------------
 * atlas_redzone_scan(): checks every live red zone now (synchronises the
 * device first) and reports each newly corrupted one; returns how many.
 * atlas_redzone_poison(lo, hi): re-poisons the red zones of allocations
 * numbered lo..hi (the numbers in the reports) and watches them again, to
 * bisect which step corrupts a zone. Returns how many were re-poisoned. */

typedef int (*atlas_redzone_scan_fn)(void);
typedef int (*atlas_redzone_poison_fn)(unsigned long long, unsigned long long);

static inline int atlas_redzone_scan(void)
{
    static atlas_redzone_scan_fn fn;
    static int looked;
    if (!looked) {
        fn = (atlas_redzone_scan_fn)dlsym(RTLD_DEFAULT, "atlas_redzone_scan_impl");
        looked = 1;
    }
    return fn ? fn() : 0;
}

static inline int atlas_redzone_poison(unsigned long long lo, unsigned long long hi)
{
    static atlas_redzone_poison_fn fn;
    static int looked;
    if (!looked) {
        fn = (atlas_redzone_poison_fn)dlsym(RTLD_DEFAULT, "atlas_redzone_poison_impl");
        looked = 1;
    }
    return fn ? fn(lo, hi) : 0;
}

/* ---- end of red zones ---- */

/* ---- step markers (ATLAS_TRACE=1 ATLAS_STEP=api) ---------------------------
 * atlas_step_begin(name): a step named `name` starts here.
 * atlas_step_end(): it ends; it is diffed with the previous step of its name,
 * and what differs (grid, block, shared memory, argument bytes) is reported.
 *
 *   atlas_step_begin("decode");
 *   ...enqueue the work...
 *   atlas_step_end(); */

typedef void (*atlas_step_begin_fn)(const char *);
typedef void (*atlas_step_end_fn)(void);

static inline void atlas_step_begin(const char *name)
{
    static atlas_step_begin_fn fn;
    static int looked;
    if (!looked) {
        fn = (atlas_step_begin_fn)dlsym(RTLD_DEFAULT, "atlas_step_begin_impl");
        looked = 1;
    }
    if (fn)
        fn(name);
}

static inline void atlas_step_end(void)
{
    static atlas_step_end_fn fn;
    static int looked;
    if (!looked) {
        fn = (atlas_step_end_fn)dlsym(RTLD_DEFAULT, "atlas_step_end_impl");
        looked = 1;
    }
    if (fn)
        fn();
}

/* ---- end of step markers ---- */

/* ---- counters and statistics --------------------------------------------
 * atlas_sync_count(name): a blocking-copy and sync counter by its name
 * ("blocking_d2h", "dtoh", "stream-sync", "async-h2d-pageable", ...: docs/sync.md);
 * -1 for an unknown name, and without the preload.
 * atlas_stats_snapshot(label): prints the statistics table (ATLAS_STATS's)
 * now, each row tagged with `label`; nothing without the preload.
 * Both are also exported under these names for ctypes and dlsym. */

typedef long long (*atlas_sync_count_fn)(const char *);
typedef void (*atlas_stats_snapshot_fn)(const char *);

#ifndef ATLAS_TRACE_LIBRARY
static inline long long atlas_sync_count(const char *name)
{
    static atlas_sync_count_fn fn;
    static int looked;
    if (!looked) {
        fn = (atlas_sync_count_fn)dlsym(RTLD_DEFAULT, "atlas_sync_count");
        looked = 1;
    }
    return fn ? fn(name) : -1;
}

static inline void atlas_stats_snapshot(const char *label)
{
    static atlas_stats_snapshot_fn fn;
    static int looked;
    if (!looked) {
        fn = (atlas_stats_snapshot_fn)dlsym(RTLD_DEFAULT, "atlas_stats_snapshot");
        looked = 1;
    }
    if (fn)
        fn(label);
}
#endif

/* ---- the library's side ---------------------------------------------------
 * What libatlastrace.so exports for the functions above, by the names they
 * resolve (src/api.c defines ATLAS_TRACE_LIBRARY, so the compiler checks its
 * definitions against these; a program never needs them). */
#ifdef ATLAS_TRACE_LIBRARY
int atlas_redzone_scan_impl(void);
int atlas_redzone_poison_impl(unsigned long long lo, unsigned long long hi);
void atlas_step_begin_impl(const char *name);
void atlas_step_end_impl(void);
long long atlas_sync_count(const char *name);
void atlas_stats_snapshot(const char *label);
#endif

#ifdef __cplusplus
}
#endif

#endif
