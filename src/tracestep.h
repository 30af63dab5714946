/*
 * The step trace's steps and step ends (src/tracestep.c): harvesting the
 * threads' buffers, stream order, pointer names, the diff with the previous
 * step of a kind, the JSON lines and the Chrome trace. In the trace's stack
 * (src/trace.c, src/nvtx.c, this, src/tracebuf.c, src/chrome.c: each file
 * calls only those after it; make layers-check) it is called by the events
 * and the NVTX ranges and calls the buffers: nothing outside the feature
 * includes this.
 */
#ifndef ATL_TRACESTEP_H
#define ATL_TRACESTEP_H

#include <stdint.h>

struct tbuf;

/* What a step end takes from the threads' buffers (see docs/trace.md, "Steps
 * and threads"). */
enum atl_take {
    ATL_TAKE_NONE,   /* drop every thread's ops (a capture begins) */
    ATL_TAKE_STREAM, /* the ender's ops, and the lent ops on the step's stream */
    ATL_TAKE_LENT,   /* the ender's ops, and every lent op */
    ATL_TAKE_ALL,    /* every op of every thread (capture mode, the exit) */
};

/* Whether ops are recorded now, and whether the step ends are over: src/tracestep.c's (each
 * written only there), read on every traced op through these read-only views: the same
 * variables under const names (aliases, no pointer to follow), so a read costs what it did
 * when the variables were shared. */
extern const int atl_tstep_recording_v __attribute__((visibility("hidden")));
extern const int atl_tstep_done_v __attribute__((visibility("hidden")));

/* Whether any step is open (the ops of threads without one of their own are
 * then recorded meanwhile, lent to the step that ends next): threads with an
 * NVTX or api step open, sync mode's one step (always open), capture mode's
 * capture step. False after the exit summary. */
static inline int atl_tstep_recording(void)
{
    return __atomic_load_n(&atl_tstep_recording_v, __ATOMIC_RELAXED) > 0;
}
/* The exit summary is out (atl_tstep_exit): later markers are ignored. */
static inline int atl_tstep_done(void)
{
    return __atomic_load_n(&atl_tstep_done_v, __ATOMIC_ACQUIRE);
}
/* A step that the caller keeps open itself (sync mode's, from init on;
 * capture mode's, from a capture's begin to its step end) opens (+1) or
 * closes (-1). */
void atl_tstep_recording_add(int n);

/* At init (after the mode is known): the ignore list, the JSON lines and
 * the Chrome trace. `captures`: steps are stream captures (ATLAS_STEP=capture,
 * each reported replay-safe or not: no warm-up, no fast path, keyed by the
 * capture's stream). */
void atl_tstep_init(int captures);
/* Ends a step on the calling thread (its buffer `me`, NULL when it has
 * none): takes what `take` says, keys the step by the thread and `stream`
 * (0: the one stream of its ops, if they share one) and compares it with the
 * previous step of its kind. `begin` is the Chrome export's start of the
 * step. */
void atl_tstep_end(const char *name, struct tbuf *me, enum atl_take take, uint64_t stream,
                   uint64_t begin);
/* Sync mode: the calling thread's host synchronisation ends its step
 * (atl_tstep_end, from when its last one ended), and its next step begins. */
void atl_tstep_sync(const char *name, enum atl_take take, uint64_t stream);
/* Drops every thread's ops (a capture begins: nothing before it is part of
 * it). */
void atl_tstep_drop(void);
/* Sync, nvtx and api modes: the last open stream capture ended; its ops
 * (atl_tbuf_capture) are compared with the latest eager step of their shape,
 * and kept for the eager steps to come (eager against captured). */
void atl_tstep_captured(void);
/* NVTX and api steps: the calling thread opens a step named `name` (one
 * already open ends first), or closes its open step. Called once the trace
 * is on: the api markers in api mode, NVTX's ranges in nvtx mode. */
void atl_tstep_open(const char *name);
void atl_tstep_close(void);
/* At exit, once the last step has ended: the step ends are over (done, and
 * nothing recorded from here), then `hints` (the mode's reasons for finding
 * no step, said under the step ends' lock), the summary, and the files
 * closed. */
void atl_tstep_exit(void (*hints)(void));

/* For the trace's front (src/trace.c, atl_trace_counts and the hang
 * report's atl_trace_progress, atl_trace_flush): see src/trace.h. */
void atl_tstep_counts(uint64_t *steps, uint64_t *differ);
int atl_tstep_progress(uint64_t *steps, uint64_t *ops, unsigned max, void (*line)(const char *));
void atl_tstep_flush(void);

#endif
