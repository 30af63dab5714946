/*
 * Red zones (ATLAS_REDZONE). The allocation ledger's reports, on with red
 * zones or ATLAS_LEAKS, are a feature of their own (src/leaks.h).
 *
 * Every guarded driver allocation is over-allocated by a poisoned tail; the
 * program keeps the base pointer the driver returned. Freed ones wait
 * poisoned in a quarantine, checked for writes after free. The tails are checked
 * on the GPU (small kernels embedded as PTX): each by a check queued before
 * its free; those a launch's parameters reach by a check queued after the
 * launch (launch mode); all of them at host syncs (sync and launch modes),
 * at teardown and at exit. An overrun is reported once, with the
 * allocation's site and the launch (or launches) that could have written
 * it. The engine calls the functions below from its event entry
 * points; each returns at once when the feature is off.
 */
#ifndef ATL_REDZONE_H
#define ATL_REDZONE_H

#include "events.h"

/* Reads the settings (called from the engine's init); sets atl_ledger_on
 * when red zones are on. Returns atl_redzone_events(). */
unsigned atl_redzone_init(void);

/* The event classes the feature needs (ATL_ON_* bits), 0 when off. */
unsigned atl_redzone_events(void);

void atl_redzone_alloc_pre(struct atl_alloc *a);
/* Poisons the tail of a guarded allocation. Returns 1 when the allocation
 * is guarded (its tail poisoned), else 0. */
int atl_redzone_alloc_post(struct atl_alloc *a, CUresult r);
/* May hold a free back (f->held): see "frees held back" and "the
 * quarantine" in src/redzone_quar.c. */
void atl_redzone_free_pre(struct atl_free *f);
void atl_redzone_free_post(struct atl_free *f, CUresult r);
/* An allocation failed for memory: releases the frees held back and the
 * quarantine, and synchronises the context. 1 when the allocation is worth
 * retrying. */
int atl_redzone_release_held(void);
/* engine.h's atl_alloc_pressure and atl_alloc_unpad */
int atl_redzone_pressure(int begin);
int atl_redzone_unpad(struct atl_alloc *a);
void atl_redzone_sync_pre(const struct atl_sync *s);
void atl_redzone_capture_pre(const struct atl_capture *c);
void atl_redzone_graph_launch_post(const struct atl_graph_launch *g, CUresult r);
/* Launch mode: the pre event counts the launch as in flight until its
 * check is queued (the post event). */
void atl_redzone_launch_pre(const struct atl_launch *l);
void atl_redzone_launch_post(const struct atl_launch *l, CUresult r);
void atl_redzone_sync_post(const struct atl_sync *s, CUresult r);
void atl_redzone_teardown(const char *where);
void atl_redzone_exit(void);
/* For the summary line: overruns found, allocations guarded, writes after free found, freed
 * allocations kept poisoned; 1 when red zones are on. */
int atl_redzone_counts(uint64_t *found, uint64_t *guarded, uint64_t *freed_written,
                       uint64_t *freed_kept);

/* Scans every live zone now; returns the number of newly corrupted zones. */
int atl_redzone_scan_all(const char *where);

/* Re-poisons the zones of allocations numbered lo..hi (inclusive) and
 * watches them again; returns how many were re-poisoned. */
int atl_redzone_poison(uint64_t lo, uint64_t hi);

/* Test hook: the PTX of the check kernels, portable and for sm_90 and up
 * (entry names only when built without nvcc). */
extern const char atl_redzone_ptx[];
extern const char atl_redzone_ptx_pdl[];

#endif
