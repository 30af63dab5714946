/*
 * The feature "leaks": the allocation ledger's reports (src/ledger.h keeps
 * the ledger itself). On with red zones or ATLAS_LEAKS:
 *   - a failed allocation (cuMemAlloc*, cuMemCreate): out of memory warns
 *     with the device's free memory and the largest live allocations (the
 *     first few times); any other error is one info line;
 *   - a free the driver refuses, or of a pointer the ledger does not know (a
 *     double free is told from a stray pointer by the recently freed ones);
 *   - ATLAS_REDZONE_TRACE_IDX=N: the host backtrace of allocation N;
 *   - ATLAS_LEAKS=1, at exit: the allocations never freed, largest first.
 * The engine calls these from its event entry points while the feature is
 * on.
 */
#ifndef ATL_LEAKS_H
#define ATL_LEAKS_H

#include "events.h"

/* Reads the settings (the engine's init); sets atl_ledger_on when on.
 * Returns the event classes it needs, 0 when off. */
unsigned atl_leaks_init(void);

void atl_leaks_alloc_post(const struct atl_alloc *a, CUresult r);
/* cuMemCreate's failure is a failed allocation too. */
void atl_leaks_vmm_post(const struct atl_vmm *v, CUresult r);
void atl_leaks_free_pre(const struct atl_free *f);
void atl_leaks_free_post(const struct atl_free *f, CUresult r);
/* The leak list (ATLAS_LEAKS). */
void atl_leaks_exit(void);
/* After atl_leaks_exit: the allocations never freed and their bytes, those a suppression
 * entry matched left out (the summary line; the findings are the call stacks). */
void atl_leaks_found(uint64_t *allocs, uint64_t *bytes);

#endif
