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

#ifdef __cplusplus
}
#endif

#endif
