/*
 * The feature "blocking": who blocks the host. (Named apart from the sync
 * event, struct atl_sync and atl_sync_pre/post, which it is only one reader
 * of; which launch broke the context is the feature "fault", faultrep.h.)
 *
 * Blocking device-to-host copies and host syncs are counted always (a few
 * relaxed atomic adds per copy or sync; the pageable check costs one
 * cuPointerGetAttribute per asynchronous host copy). ATLAS_D2H_TRACE adds
 * backtraces, call sites and an exit summary.
 */
#ifndef ATL_BLOCKING_H
#define ATL_BLOCKING_H

#include "events.h"

/* Counters, by kind. The first six are blocking device-to-host copies. */
enum atl_blocking_counter {
    ATL_SC_DTOH,               /* cuMemcpyDtoH / cuMemcpyAtoH */
    ATL_SC_MEMCPY,             /* cuMemcpy whose direction is device to host */
    ATL_SC_PEER,               /* cuMemcpyPeer / cuMemcpy3DPeer, device to host */
    ATL_SC_2D,                 /* cuMemcpy2D, device to host */
    ATL_SC_3D,                 /* cuMemcpy3D, device to host */
    ATL_SC_ASYNC_D2H_PAGEABLE, /* async copy into pageable memory: synchronous in fact */
    ATL_SC_ASYNC_H2D_PAGEABLE, /* async copy from pageable memory: a hidden sync too */
    ATL_SC_SYNC_STREAM,
    ATL_SC_SYNC_CTX,
    ATL_SC_SYNC_EVENT,
    ATL_SC_COUNT
};
#define ATL_SC_BLOCKING_D2H_LAST ATL_SC_ASYNC_D2H_PAGEABLE

/* Reads the settings (the engine's init) and returns the event classes it
 * needs (never 0: counting is always on). */
unsigned atl_blocking_init(void);

/* Event entry points, called from the engine's (atl_blocking_sync_post: the
 * host-sync event). A failed copy counts nothing. */
void atl_blocking_copy_post(const struct atl_copy *c, CUresult r);
void atl_blocking_sync_post(const struct atl_sync *s, CUresult r);

/* A synchronous cuMemcpyDtoH of n bytes that succeeded on the hooks' light
 * path (ATL_ON_DTOH_COUNT, which this feature alone asks for; a failure goes
 * to the engine's atl_dtoh_failed): counted as a blocking copy. */
void atl_blocking_dtoh_count(size_t n);

/* Exit summary: with ATLAS_D2H_TRACE the counters and the call sites, each
 * with its frames; otherwise, with `brief` (the run asked for other reports:
 * a bare preload stays silent) and when something blocked, one line of
 * counts. */
void atl_blocking_report(int brief);

uint64_t atl_blocking_counter(enum atl_blocking_counter k);
uint64_t atl_blocking_d2h(void);
/* The call sites of blocking copies in *n (the summary line); 1 when they are kept
 * (ATLAS_D2H_TRACE). */
int atl_blocking_sites(uint64_t *n);
/* One counter by its name, or the blocking total for "blocking_d2h"; -1 for
 * an unknown name (exported as atlas_sync_count, src/api.c). */
long long atl_blocking_count_named(const char *name);

#endif
