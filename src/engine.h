/*
 * The engine: what atlastrace does with the driver calls the hooks report.
 *
 * The hooks (hooks/) are thin: they call the real function and report one
 * event per call through the functions below. Everything here is callable
 * without a preload or a GPU, which is how tests/unit exercises it.
 */
#ifndef ATL_ENGINE_H
#define ATL_ENGINE_H

#include <cuda.h>
#include <stdint.h>

#include "events.h"
#include "hookid.h"
#include "services.h"

/* The features the engine fans events out to. Each has one init of one
 * shape, `unsigned atl_<feature>_init(void)`: it reads its settings (and
 * sets atl_ledger_on when it needs the ledger) and returns the ATL_ON_*
 * classes it needs, 0 when it is off (never 0 when on). The engine keeps
 * each answer (atl_engine_enable), sets atl_on to what they ask together,
 * and calls a feature's event functions only while its answer is non-zero:
 * that is the one gate; a feature's own early returns only refine it. */
enum atl_feature {
    ATL_FEAT_FAULT,    /* src/faultrep.c, src/flight.c: the fault report, debug sync */
    ATL_FEAT_BLOCKING, /* src/blocking.c: blocking-copy and host-sync counts */
    ATL_FEAT_KAUDIT,   /* src/kaudit.c: ATLAS_KERNEL_AUDIT */
    ATL_FEAT_REDZONE,  /* src/redzone.c: ATLAS_REDZONE */
    ATL_FEAT_LEAKS,    /* src/leaks.c: the ledger's reports (ATLAS_REDZONE or ATLAS_LEAKS) */
    ATL_FEAT_TRACE,    /* src/trace.c: ATLAS_TRACE */
    ATL_FEAT_HANG,     /* src/hang.c: ATLAS_HANG_SECONDS */
    ATL_FEAT_RACES,    /* src/races.c: ATLAS_RACES */
    ATL_FEAT_COUNT,
};
/* Records a feature's answer. The engine's init calls every feature's init
 * through here; a unit test that drives one feature calls it itself. */
void atl_engine_enable(enum atl_feature f, unsigned events);

/* Lazy, once-only initialisation (settings, log, what is enabled). Safe to
 * call from every entry point; cheap after the first call. */
void atl_engine_init(void);

/* Per-thread re-entrancy guard: while the library itself is working (or
 * calling the driver or libc on its own behalf) hooks on this thread pass
 * straight through. atl_enter() returns 0 when the hook must pass through
 * (re-entered, after the exit report, or in a forked child). */
int atl_enter(int hook, int path);
void atl_leave(void);

/* A hook's call left by longjmp (a signal handler that siglongjmps out of a
 * blocking sync) or by thread cancellation never reaches atl_leave: the
 * slow path registers this as one of glibc's cleanup buffers around its
 * work, which glibc runs for the frames either unwinds (longjmp's
 * _longjmp_unwind, cancellation's unwinder). It undoes what the call's pre
 * left for its post: the re-entrancy depth, the hang watch's wait, the
 * kernel records' pin. Async-signal-safe. */
void atl_unwound(void *arg);
/* glibc's, exported since 2.2.5 but not declared by <pthread.h> in C: the
 * buffer form that longjmp runs (pthread_cleanup_push's own form is not). */
struct _pthread_cleanup_buffer;
extern void _pthread_cleanup_push(struct _pthread_cleanup_buffer *buffer, void (*routine)(void *),
                                  void *arg);
extern void _pthread_cleanup_pop(struct _pthread_cleanup_buffer *buffer, int execute);

/* atl_enter for the library's own API entry points (atlas_* functions):
 * marks the thread re-entrant without counting a hook call. */
int atl_self_enter(void);
/* Marks the thread re-entrant unconditionally (initialising first), also
 * after the exit report: for a report the program asks for (atl_leave
 * ends it). */
void atl_hold(void);

/* ---- event entry points (the structs are src/events.h's) ---------------- */

/* Fills grid, block, shared memory, stream and cluster from l->config. */
void atl_launch_from_config(struct atl_launch *l);
void atl_launch_pre(struct atl_launch *l);
CUresult atl_launch_post(struct atl_launch *l, CUresult r);

void atl_graph_launch_pre(struct atl_graph_launch *g);

void atl_graph_inst_post(struct atl_graph_inst *g, CUresult r);
CUresult atl_graph_launch_post(struct atl_graph_launch *g, CUresult r);

void atl_alloc_pre(struct atl_alloc *a);
void atl_alloc_post(struct atl_alloc *a, CUresult r);

/* An allocation failed for memory (hooks/kinds.h ATL_ALLOC_RETRY): atl_alloc_pressure(1) says
 * one is being retried (0 when red zones are off: no retry), and until atl_alloc_pressure(0)
 * frees go straight to the driver, none held back; atl_alloc_release_held gives 1 when frees
 * held back were released and the context synchronised, so that a retry may succeed (0:
 * nothing was held); atl_alloc_unpad gives 1 when a is padded, and makes it unpadded, for a
 * last try without its red zone. */
int atl_alloc_pressure(int begin);
int atl_alloc_release_held(void);
int atl_alloc_unpad(struct atl_alloc *a);
/* Sets f->held when the free is held back: the hook then returns success
 * without the driver's call (after atl_free_post). */
void atl_free_pre(struct atl_free *f);
void atl_free_post(struct atl_free *f, CUresult r);

void atl_vmm_pre(struct atl_vmm *v);
void atl_vmm_post(struct atl_vmm *v, CUresult r);

void atl_copy_pre(struct atl_copy *c);
CUresult atl_copy_post(struct atl_copy *c, CUresult r);

void atl_memset_pre(struct atl_memset *m);
CUresult atl_memset_post(struct atl_memset *m, CUresult r);

void atl_sync_pre(struct atl_sync *s);
CUresult atl_sync_post(struct atl_sync *s, CUresult r);

void atl_capture_pre(struct atl_capture *c);
void atl_capture_post(struct atl_capture *c, CUresult r);

void atl_lookup_post(struct atl_lookup *l, CUresult r);

/* Records, waits, host functions, queries, stream and event lifetime. pre
 * may replace a host function or callback (and its argument) in the event:
 * the hook passes the event's to the driver. */
void atl_stream_pre(struct atl_stream_op *s);
void atl_stream_post(struct atl_stream_op *s, CUresult r);

void atl_module_pre(struct atl_module *m);
void atl_module_post(struct atl_module *m, CUresult r);

void atl_ctx_teardown_pre(struct atl_ctx_teardown *t);

/* A synchronous cuMemcpyDtoH on the hooks' light path (no event) failed
 * with r: the latch. (A success is counted by the blocking feature's
 * atl_blocking_dtoh_count, which alone asks for the light path.) */
void atl_dtoh_failed(int hook, CUresult r);

/* ---- reports ------------------------------------------------------------ */

/* Runs the exit reports once (the first caller wins); afterwards every hook
 * passes through. Registered with atexit, also called from the destructor. */
void atl_engine_exit(void);

/* Fork support: prepare/parent/child handlers for pthread_atfork. */
void atl_engine_atfork_child(void);

#endif
