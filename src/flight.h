/*
 * The flight recorder: every launch since the last good host synchronisation
 * is a suspect when a sticky fault surfaces. The launches themselves are
 * the launch history's (src/fault.h), the kernels' records (names, layouts,
 * the arguments kept) src/kernels.h's; ring.h is the recorder's part of the
 * launch path; this is everything else: the cold half of the launch path,
 * graphs, good syncs, the report (which launches went into captures is
 * src/capture.h's).
 */
#ifndef ATL_FLIGHT_H
#define ATL_FLIGHT_H

#include <cuda.h>
#include <stdint.h>

#include "events.h"

/* An executable graph was instantiated from graph: its kernel nodes (names,
 * grid and block) are read now, while the graph exists, for the report. */
void atl_flight_note_graph(CUgraphExec exec, CUgraph graph);

/* Logs the kernel nodes of exec, as "TAG:     node ..." lines; 0 when the
 * graph is unknown (instantiated before we were loaded). */
int atl_flight_graph_nodes(const char *tag, CUgraphExec exec);

/* A host synchronisation that returned success: launches up to `upto` (all
 * of them for a context sync; on its stream for a stream sync) are no
 * longer suspects. */
void atl_flight_good_sync(enum atl_sync_kind kind, CUstream stream, uint64_t upto);

/* The suspects: counts by kernel, rarest first, the streams, the arguments
 * of the rare ones, the newest launches and a re-run hint. */
void atl_flight_report(const char *tag);

#endif
