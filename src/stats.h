/*
 * Call statistics (ATLAS_STATS=1): how often each hook was called, by which
 * path (linked, dlsym, cuGetProcAddress), and how often dlsym and
 * cuGetProcAddress handed each wrapper out. Counted by the engine's
 * re-entrancy guard and by symbol resolution; printed at exit and on demand.
 */
#ifndef ATL_STATS_H
#define ATL_STATS_H

#include <stdint.h>

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

#endif
