/*
 * The feature "fault": which launch broke the context.
 *
 * - The sticky-fault latch (src/fault.h) is always armed: the first sticky
 *   error (700, 719, ...) any call that reaches the engine returns is
 *   reported once, with the flight recorder's suspects: every launch since
 *   the last good sync (src/flight.h). The engine checks the latch once per
 *   call, in its post path, and calls atl_faultrep_check on a failure.
 * - ATLAS_DEBUG_SYNC_KERNELS=1 synchronises after every launch and names the
 *   first launch that fails; =name1,name2 only after those kernels' launches
 *   (dsk.h). Graph launches are synchronised as a whole.
 * - The flight recorder (src/flight.c, the launch path's part in
 *   src/ring.h): good syncs, the kernel nodes of instantiated graphs, the
 *   arguments of each kernel's first launch since the last good sync.
 */
#ifndef ATL_FAULTREP_H
#define ATL_FAULTREP_H

#include "events.h"

/* Reads the settings and starts the launch history (the engine's init);
 * returns the event classes it needs (never 0: the latch is always on). */
unsigned atl_faultrep_init(void);

/* A call that reached the engine failed with r: the first context-destroying
 * error the launch history's latch takes is reported, once, with the flight
 * recorder's suspects. */
void atl_faultrep_check(int hook, CUresult r);

/* Debug sync after a successful launch (atl_faultrep_launch_post) or graph
 * launch: the result the program sees (a failing sync's error replaces the
 * launch's success). */
CUresult atl_faultrep_launch_post(const struct atl_launch *l);
CUresult atl_faultrep_graph_launch_post(const struct atl_graph_launch *g, CUresult r);
/* The flight recorder: an instantiated graph's kernel nodes; a good sync. */
void atl_faultrep_graph_inst_post(const struct atl_graph_inst *g, CUresult r);
void atl_faultrep_sync_post(const struct atl_sync *s, CUresult r);
/* At exit: names of ATLAS_DEBUG_SYNC_KERNELS's list that no launched kernel
 * had (debug sync did nothing for them). */
void atl_faultrep_exit(void);
/* The launches (and graph launches) debug sync synchronised after, in *n (the summary line);
 * 1 when debug sync is on. */
int atl_faultrep_synced(uint64_t *n);

#endif
