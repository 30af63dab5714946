/*
 * Call statistics (ATLAS_STATS=1): how often each hook was called, by which
 * path (linked, dlsym, cuGetProcAddress), and how often dlsym and
 * cuGetProcAddress handed each wrapper out. Counted by the engine's
 * re-entrancy guard and by symbol resolution; printed at exit and on demand.
 */
#ifndef ATL_STATS_H
#define ATL_STATS_H

#include <stdint.h>
#include <time.h>

#include "hookid.h"

/* Written by atl_stats_count_call, inline in the engine's atl_enter. */
extern uint64_t atl_stats_calls[ATL_ID_COUNT][ATL_PATH_COUNT];

static inline void atl_stats_count_call(int hook, int path)
{
    __atomic_fetch_add(&atl_stats_calls[hook][path], 1, __ATOMIC_RELAXED);
}

/* Counts one hand-out of a wrapper by dlsym or cuGetProcAddress. */
void atl_note_resolved(int hook, int path);

/* Readable by tests. */
uint64_t atl_stat_calls(int hook, int path);
uint64_t atl_stat_resolved(int hook, int path);

/* The exit table (ATLAS_STATS=1). */
void atl_stats_report(int fd);

/* Exported as atlas_stats_snapshot(label) (src/api.c): prints the statistics
 * table now, each row tagged with `label`, so a program (or a Python script
 * through ctypes) can bracket a region and compare it with another tool's
 * counts. */
void atl_stats_snapshot(const char *label);

/* ATLAS_SELF_TIME=1: the library's own time in each hooked call that goes through the engine
 * (hooks/hooks.c's slow path), the real driver call's time apart, by function; a table at
 * exit. atl_selftime_on is set once at start. The slow path reads the clock at its entry,
 * around the real call and at its return: t0, t1 (0: it returned before the real call), t2. */
extern int atl_selftime_on;
static inline uint64_t atl_selftime_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
void atl_selftime_add(int hook, uint64_t t0, uint64_t t1, uint64_t t2);
void atl_selftime_report(void);

#endif
