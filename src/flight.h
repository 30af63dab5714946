/*
 * The flight recorder: every launch since the last good host synchronisation
 * is a suspect when a sticky fault surfaces. The launches themselves are
 * the launch history's (src/fault.h); ring.h is the recorder's part of the
 * launch path (its kernel table); this is everything else: naming, good
 * syncs, capture windows, the report.
 */
#ifndef ATL_FLIGHT_H
#define ATL_FLIGHT_H

#include <cuda.h>
#include <stdint.h>

#include "events.h"
#include "fault.h"

/* Reads the ATLAS_DEBUG_SYNC_KERNELS list (NULL: none). */
void atl_flight_init(const char *dsk_list);

/* A kernel handle the program looked up (cuModuleGetFunction, ...): named
 * and entered in the table now, so its launches find it there. */
void atl_flight_note_lookup(void *handle);

/* Forgets a handle (its module or library was unloaded; the driver may hand
 * the address out again for another kernel). Safe against concurrent
 * launches: they find no entry and take the cold path. */
void atl_flight_forget(void *handle);

/* An executable graph was instantiated from graph: its kernel nodes (names,
 * grid and block) are read now, while the graph exists, for the report. */
void atl_flight_note_graph(CUgraphExec exec, CUgraph graph);

/* Logs the kernel nodes of exec, as "TAG:     node ..." lines; 0 when the
 * graph is unknown (instantiated before we were loaded). */
int atl_flight_graph_nodes(const char *tag, CUgraphExec exec);

/* Forgets every handle the kernel registry says came from owner (a CUmodule
 * or CUlibrary being unloaded). */
void atl_flight_forget_owner(void *owner);

/* A host synchronisation that returned success: launches up to `upto` (all
 * of them for a context sync; on its stream for a stream sync) are no
 * longer suspects. */
void atl_flight_good_sync(enum atl_sync_kind kind, CUstream stream, uint64_t upto);

/* A stream capture began (begin 1, when it succeeded) or ended (0): the
 * launches into it in between are no suspects. */
void atl_flight_capture(CUstream stream, int begin);

/* The parameter layout of a launched kernel (offsets and sizes, as the
 * driver gave them at its first launch), without a lock; the number of
 * parameters, or -1 when unknown (no layout, none, or more than are kept). */
int atl_flight_param_layout(void *func, const uint32_t **off, const uint32_t **size);

/* With an ATLAS_DEBUG_SYNC_KERNELS list: 1 when launches of func synchronise. */
int atl_flight_debug_sync_wanted(void *func);

/* The suspects: counts by kernel, rarest first, the streams, the arguments
 * of the rare ones, the newest launches and a re-run hint. */
void atl_flight_report(const char *tag);

#endif
