/*
 * Step traces: records every op a step enqueues and diffs each step with
 * the previous step of the same name (see docs/trace.md). The engine calls
 * these from its event entry points when ATLAS_TRACE=1. The feature's
 * files are a stack, each calling only those below it (make layers-check):
 * src/trace.c (events and lifecycle: everything declared here), src/nvtx.c
 * (NVTX ranges, nvtx.h), src/tracestep.c (steps and step ends, tracestep.h),
 * src/tracebuf.c (per-thread buffers, tracebuf.h), src/chrome.c (the Chrome
 * trace, chrome.h).
 */
#ifndef ATL_TRACE_H
#define ATL_TRACE_H

#include "events.h"

/* Reads the ATLAS_TRACE/STEP/DIFF_* settings; returns the atl_on bits the
 * tracer needs (0 when off). */
unsigned atl_trace_init(void);

void atl_trace_launch(const struct atl_launch *l, CUresult r);
void atl_trace_graph_launch(const struct atl_graph_launch *g, CUresult r);
void atl_trace_memset(const struct atl_memset *m, CUresult r);
void atl_trace_copy(const struct atl_copy *c, CUresult r);
void atl_trace_sync(const struct atl_sync *s, CUresult r);
/* Before a host sync waits (the engine: not with the hang report, whose "ops since the last
 * step end" are the wait's): ends the step there instead of after the wait, where it can.
 * 1 when it did (atl_trace_sync is then not to be called for this sync). */
int atl_trace_sync_pre(const struct atl_sync *s);
void atl_trace_capture_pre(const struct atl_capture *c);
void atl_trace_capture_post(const struct atl_capture *c, CUresult r);
/* A module was unloaded (its kernels' records now wait for the ops that may name them):
 * the trace's memory bound is checked. */
void atl_trace_module_unloaded(void);

/* The program's markers (atlas_step_begin/end, src/api.c, which initialises
 * the library first): steps in api mode. */
void atl_trace_api_step_begin(const char *name);
void atl_trace_api_step_end(void);

/* The exit summary. */
void atl_trace_exit(void);
/* After it, for the summary line: the steps recorded, and those that differed from the
 * previous step of their kind. */
void atl_trace_counts(uint64_t *steps, uint64_t *differ);

/* For the hang report (src/hang.c), from any thread, taking no lock the
 * launch path waits on for long (src/tracestep.c): the steps finished so
 * far, the ops recorded since the last one ended, and up to `max` of the
 * last of them, one line each through `line`. Returns 0 when the trace is
 * off. */
int atl_trace_progress(uint64_t *steps, uint64_t *ops, unsigned max, void (*line)(const char *));
/* Pushes the JSON lines written so far to the file, unless a step end is
 * writing them right now (it then flushes them itself). */
void atl_trace_flush(void);

#endif
