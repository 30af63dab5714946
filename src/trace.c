/*
 * Step traces. A CUDA graph bakes the grid, block, shared memory and
 * argument bytes of every launch at capture time, so a region is replayable
 * only if two executions of it enqueue byte-identical ops. The step trace
 * records the ops of each step and hands consecutive steps of one kind to
 * the diff (tracediff.c), which names the host values that changed.
 *
 * This file is its events and lifecycle: what each event records, the step
 * boundaries of sync and capture modes, init and exit. It is the top of the
 * feature's stack, each file calling only those below it (make layers-check):
 * this, NVTX ranges (nvtx.c), steps and step ends (tracestep.c), the
 * per-thread buffers (tracebuf.c), the Chrome trace (chrome.c).
 *
 * Cost when on (per op, on the enqueueing thread): one load of the kernel's
 * view from the record the launch carries, one uncontended lock of the
 * thread's own buffer, a 64-byte record written in place and the parameter
 * bytes gathered after the last op's. Everything heavier (merging threads,
 * ordering by stream, resolving pointers through the ledger, the diff, JSON)
 * runs at the step end.
 */
#include "trace.h"

#include "capture.h"
#include "chrome.h"
#include "config.h"
#include "copy.h"
#include "driver.h"
#include "hint.h"
#include "kernels.h"
#include "kselect.h"
#include "ledger.h"
#include "log.h"
#include "nvtx.h"
#include "tracebuf.h"
#include "tracestep.h"

#include <pthread.h>
#include <string.h>

/* Set once, at init: ATLAS_TRACE=1 (or a trace file), and ATLAS_STEP, what ends a step. What
 * the layers below need of the mode they are told at init (the step ends: whether steps are
 * captures; NVTX: the range's name). */
static int on;
static enum { MODE_SYNC, MODE_CAPTURE, MODE_NVTX, MODE_API } mode;

/* ---- events ----------------------------------------------------------------------- */

/* Whether any step is open (src/tracestep.c counts them). */
static inline int rec_now(void)
{
    return atl_tstep_recording();
}

/* Where an op is recorded. While stream captures are in progress (any mode),
 * the engine asked the driver once whether the op's stream captures.
 * A captured op is not executed where it is enqueued: it belongs to the
 * capture step only (ATLAS_STEP=capture: eager ops are not recorded), and
 * the eager step records the graph's launch instead; in the other modes the
 * captured ops go to the capture buffer, to be compared with eager steps of
 * their shape when the capture ends. SKIP: none. */
#define SKIP ((enum atl_tbuf_into) - 1)
static enum atl_tbuf_into op_buf(int cap)
{
    /* cap: the status the engine asked once for the op's stream (its event's `cap`) */
    if (cap != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return mode == MODE_CAPTURE ? SKIP : ATL_TBUF_OWN;
    return mode == MODE_CAPTURE ? ATL_TBUF_OWN : ATL_TBUF_CAPTURE;
}

static void warn_inexact(const struct atl_kfn *k)
{
    /* said once per kernel (per view of its record: a record made anew, after
     * an unload, may say it again) */
    static struct atl_kfn *said[64];
    static int nsaid;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nsaid; i++)
        if (said[i] == k)
            goto out;
    if (nsaid < 64)
        said[nsaid++] = (struct atl_kfn *)k;
    atl_log(ATL_WARN,
            "step trace: kernel=%s: the driver gives no parameter layout "
            "(cuFuncGetParamInfo/cuKernelGetParamInfo) and the launch passes no packed buffer; "
            "its arguments are not recorded, only its grid, block and shared memory",
            atl_kfn_pretty(k));
out:
    pthread_mutex_unlock(&mu);
}

void atl_trace_launch(const struct atl_launch *l, CUresult r)
{
    /* ATLAS_KERNEL: the launches of the kernels it selects only (one match per kernel, kept in
     * its record) */
    enum atl_tbuf_into into;
    if (r != CUDA_SUCCESS || !rec_now() || !atl_ksel_match(l->rec) ||
        (into = op_buf(l->cap)) == SKIP)
        return;
    /* the packed buffer, decoded by the engine (atl_launch_packed) */
    const void *packed = l->packed;
    size_t packed_size = l->packed_size;
    /* the kernel's view, kept in the record the event carries (made at its
     * first traced launch: before the buffer is locked, it may ask the driver) */
    const struct atl_kfn *k = atl_krec_view(l->rec, 0);
    if (!k->exact && packed && packed_size)
        k = atl_krec_view(l->rec, packed_size);
    else if (!k->exact && l->params)
        warn_inexact(k);
    if (packed && packed_size < k->total)
        packed = NULL; /* a short buffer: do not read past it */
    atl_tbuf_record_launch(into, l, k, packed);
}

void atl_trace_graph_launch(const struct atl_graph_launch *g, CUresult r)
{
    enum atl_tbuf_into into;
    if (r != CUDA_SUCCESS || !rec_now() || (into = op_buf(g->cap)) == SKIP)
        return;
    struct atl_op o = {.kind = ATL_OP_GRAPH, .stream = (uint64_t)(uintptr_t)g->stream};
    o.u.g.exec = (uint64_t)(uintptr_t)g->exec;
    atl_tbuf_record(into, &o);
}

void atl_trace_memset(const struct atl_memset *m, CUresult r)
{
    enum atl_tbuf_into into;
    if (r == CUDA_SUCCESS && rec_now() && (into = op_buf(m->cap)) != SKIP) {
        struct atl_op o = {.kind = ATL_OP_MEMSET,
                           .sub = (uint8_t)m->elem,
                           .stream = (uint64_t)(uintptr_t)m->stream,
                           .shmem = m->value};
        o.u.m.ptr = m->dst, o.u.m.count = m->count, o.u.m.pitch = m->pitch;
        o.u.m.height = m->height;
        atl_tbuf_record(into, &o);
    }
    /* a synchronous memset is not a host synchronisation point: the driver
     * may return before it completes */
}

static uint8_t copy_dir(enum atl_copy_way w)
{
    switch (w) {
    case ATL_WAY_HTOD:
        return ATL_DIR_HTOD;
    case ATL_WAY_DTOH:
        return ATL_DIR_DTOH;
    case ATL_WAY_DTOD:
        return ATL_DIR_DTOD;
    case ATL_WAY_HTOH:
        return ATL_DIR_HTOH;
    default:
        return ATL_DIR_OTHER;
    }
}

/* Host memory the driver does not know (not pinned, not registered, not managed): pageable. */
static int host_pageable(const struct atl_copy *c, const void *p)
{
    return p && atl_copy_host_mem(c, p) == ATL_MEM_PAGEABLE;
}

static void copy_op(const struct atl_copy *c, struct atl_op *o)
{
    o->kind = ATL_OP_COPY;
    o->stream = (uint64_t)(uintptr_t)c->stream;
    o->u.c.w = c->bytes, o->u.c.h = 1, o->u.c.d = 1;
    switch (c->kind) {
    case ATL_CPY_HTOD:
        o->sub = ATL_DIR_HTOD;
        o->u.c.dst = c->dst, o->u.c.src = (uint64_t)(uintptr_t)c->host_src;
        o->flags = host_pageable(c, c->host_src) ? ATL_COPY_SRC_PAGEABLE : 0;
        break;
    case ATL_CPY_DTOH:
        o->sub = ATL_DIR_DTOH;
        o->u.c.dst = (uint64_t)(uintptr_t)c->host_dst, o->u.c.src = c->src;
        o->flags = host_pageable(c, c->host_dst) ? ATL_COPY_DST_PAGEABLE : 0;
        break;
    case ATL_CPY_DTOD:
    case ATL_CPY_PEER:
        o->sub = ATL_DIR_DTOD;
        o->u.c.dst = c->dst, o->u.c.src = c->src;
        break;
    case ATL_CPY_2D:
    case ATL_CPY_3D:
    case ATL_CPY_3D_PEER:
        /* 3D copies are OTHER whatever their ends; a 3D peer copy is
         * device to device and prints the device pointers */
        o->sub = c->kind == ATL_CPY_3D_PEER ? ATL_DIR_DTOD : ATL_DIR_OTHER;
        if (c->geom.set) {
            const struct atl_copy_geom *g = &c->geom;
            int peer = c->kind == ATL_CPY_3D_PEER;
            o->u.c.dst = peer ? g->dst.dev : g->dst.addr;
            o->u.c.src = peer ? g->src.dev : g->src.addr;
            o->u.c.w = g->width, o->u.c.h = g->height, o->u.c.d = g->depth;
            if (c->kind == ATL_CPY_2D)
                o->sub = copy_dir(g->way);
        }
        break;
    case ATL_CPY_BATCH:
    case ATL_CPY_3D_BATCH:
        o->sub = ATL_DIR_OTHER;
        o->u.c.w = c->count; /* the number of copies in the batch */
        if (c->kind == ATL_CPY_BATCH && c->count && c->batch_dst && c->batch_src) {
            o->u.c.dst = c->batch_dst[0], o->u.c.src = c->batch_src[0];
        }
        break;
    case ATL_CPY_GENERIC:
        o->sub = ATL_DIR_OTHER;
        o->u.c.dst = c->dst, o->u.c.src = c->src;
        break;
    default: /* arrays */
        o->sub = ATL_DIR_OTHER;
        o->u.c.dst = c->adst ? (uint64_t)(uintptr_t)c->adst + c->dst_off : c->dst;
        o->u.c.src = c->asrc ? (uint64_t)(uintptr_t)c->asrc + c->src_off : c->src;
        if (c->host_dst)
            o->u.c.dst = (uint64_t)(uintptr_t)c->host_dst;
        if (c->host_src)
            o->u.c.src = (uint64_t)(uintptr_t)c->host_src;
    }
}

static void sync_step(const char *name, enum atl_take take, uint64_t stream);

/* From the host to device memory or an array: the copy's source is the host's */
static int to_device(const struct atl_copy *c)
{
    if (c->kind == ATL_CPY_HTOD || c->kind == ATL_CPY_HTOA)
        return 1;
    return (c->kind == ATL_CPY_2D || c->kind == ATL_CPY_3D) && c->geom.set &&
           c->geom.src.type == CU_MEMORYTYPE_HOST && c->geom.dst.type != CU_MEMORYTYPE_HOST;
}

void atl_trace_copy(const struct atl_copy *c, CUresult r)
{
    enum atl_tbuf_into into;
    if (r == CUDA_SUCCESS && rec_now() && (into = op_buf(c->cap)) != SKIP) {
        struct atl_op o = {0};
        copy_op(c, &o);
        atl_tbuf_record(into, &o);
    }
    /* A copy the host waited for (the engine's host_waits: src/events.h) ends the step, but
     * one from the host to the device: it returns once its source is taken (a pageable one
     * may return before the device has it), and it is a step's input, not its result. */
    if (mode == MODE_SYNC && c->host_waits && !to_device(c))
        sync_step(atl_hook_names[c->hook], ATL_TAKE_LENT, 0);
}

/* Sync mode: the calling thread's host synchronisation ends its step. */
static void sync_step(const char *name, enum atl_take take, uint64_t stream)
{
    if (!on || atl_tstep_done())
        return;
    atl_tstep_sync(name, take, stream);
}

void atl_trace_sync(const struct atl_sync *s, CUresult r)
{
    (void)r;
    if (mode != MODE_SYNC)
        return;
    /* a stream's sync waits for that stream only: the lent ops of other
     * streams wait for their own. The legacy default stream (NULL, or
     * CU_STREAM_LEGACY: the runtime may name it either way when it launches
     * and when it synchronises) waits for every blocking stream: all. */
    if (s->kind == ATL_SYNC_STREAM && s->stream != NULL && s->stream != CU_STREAM_LEGACY)
        sync_step(atl_hook_names[s->hook], ATL_TAKE_STREAM, (uint64_t)(uintptr_t)s->stream);
    else
        sync_step(atl_hook_names[s->hook], ATL_TAKE_LENT, 0);
}

/* A step ends when the host synchronises; its end (the step's diff) runs before the wait,
 * not after it: the device is still running the step's work, and a loop that keeps the
 * device busy has its host waiting anyway, so the diff costs it nothing (the GPT-2 training
 * step's sync waits for milliseconds). The ops are the same either way: the wait enqueues
 * none. Not with the Chrome trace, whose step spans end when the wait does. */
int atl_trace_sync_pre(const struct atl_sync *s)
{
    if (mode != MODE_SYNC || atl_chrome_on)
        return 0;
    atl_trace_sync(s, CUDA_SUCCESS);
    return 1;
}

/* Captures on several streams at once (one region forked into others)
 * make one step: it begins with the first capture and ends with the last,
 * and is keyed by the stream the first one began on. Which captures are
 * open is the tracker's (src/capture.c: the engine tells it first); the
 * trace keeps only whether its capture step is open. */
static int cap_step;
static int captured_any; /* for the exit's "no capture" line */
static uint64_t cap_stream, cap_begin_ns;

static void capture_step_end(void)
{
    atl_tstep_end("capture", atl_tbuf_get(), ATL_TAKE_ALL, cap_stream, cap_begin_ns);
    atl_tstep_recording_add(-1);
}

void atl_trace_capture_pre(const struct atl_capture *c)
{
    if (c->begin)
        return;
    /* eager against captured: the last open capture ended */
    if (mode != MODE_CAPTURE && !atl_capture_any() &&
        __atomic_load_n(&atl_tbuf_capture()->nops, __ATOMIC_RELAXED) && !atl_tstep_done())
        atl_tstep_captured();
    /* ops enqueued from now on are not in this capture: the engine has
     * already closed it in src/capture.c; the last one ends the step (an
     * end on a stream that was not capturing closed nothing) */
    if (mode == MODE_CAPTURE && !atl_capture_any() &&
        __atomic_exchange_n(&cap_step, 0, __ATOMIC_ACQ_REL) && !atl_tstep_done())
        capture_step_end();
}

void atl_trace_module_unloaded(void)
{
    if (on)
        atl_tbuf_budget_check();
}

void atl_trace_capture_post(const struct atl_capture *c, CUresult r)
{
    if (!c->begin || r != CUDA_SUCCESS)
        return;
    __atomic_store_n(&captured_any, 1, __ATOMIC_RELAXED);
    if (mode == MODE_CAPTURE &&
        !__atomic_exchange_n(&cap_step, 1, __ATOMIC_ACQ_REL) && !atl_tstep_done()) {
        atl_tstep_drop(); /* nothing before the capture is part of it */
        cap_stream = (uint64_t)(uintptr_t)c->stream;
        cap_begin_ns = atl_chrome_on ? atl_chrome_now() : 0;
        atl_tstep_recording_add(1);
    }
}

/* ---- the step API of include/atlas/trace.h ------------------------------------------ */

static int api_begun; /* atlas_step_begin was called: else the exit says why there are no steps */

void atl_trace_api_step_begin(const char *name)
{
    __atomic_store_n(&api_begun, 1, __ATOMIC_RELAXED);
    if (mode == MODE_API)
        atl_tstep_open(name);
}

void atl_trace_api_step_end(void)
{
    if (mode == MODE_API)
        atl_tstep_close();
}

/* ---- lifecycle --------------------------------------------------------------------- */

unsigned atl_trace_init(void)
{
    /* ATLAS_CHROME_TRACE or ATLAS_TRACE_FILE alone records too (as
     * atlas-trace --chrome does): a file setting never does nothing */
    if (!atl_cfg.trace && !atl_cfg.chrome_trace && !atl_cfg.trace_file)
        return 0;
    /* read by the rule the settings were checked with (a bad value was reported then, and
     * left unset: sync) */
    const char *range;
    switch (atl_step_mode(atl_cfg.step, &range)) {
    case ATL_STEP_CAPTURE:
        mode = MODE_CAPTURE;
        break;
    case ATL_STEP_API:
        mode = MODE_API;
        break;
    case ATL_STEP_NVTX:
        mode = MODE_NVTX;
        atl_nvtx_init(range);
        break;
    default:
        mode = MODE_SYNC;
    }
    atl_ksel_init();
    atl_tbuf_init((size_t)atl_cfg.trace_max_mb << 20);
    atl_tstep_init(mode == MODE_CAPTURE);
    atl_ledger_on = 1; /* pointer parameters are named alloc#N+0xOFF */
    on = 1;
    if (mode == MODE_SYNC)
        atl_tstep_recording_add(1); /* sync mode: a step is always open */
    return ATL_ON_LAUNCH | ATL_ON_COPY | ATL_ON_COPY_DTOH | ATL_ON_MEMSET | ATL_ON_SYNC |
           ATL_ON_CAPTURE | ATL_ON_LOOKUP | ATL_ON_ALLOC;
}

/* Under the step ends' lock, before the summary: why the mode found no
 * step, where the library can tell. */
static void exit_hints(void)
{
    if (mode == MODE_NVTX)
        atl_nvtx_hint();
    char set[64];
    if (mode == MODE_API && !__atomic_load_n(&api_begun, __ATOMIC_RELAXED))
        atl_log(ATL_WARN,
                "step trace: %s but the program never called atlas_step_begin "
                "(include/atlas/trace.h): no steps were recorded",
                atl_hint_setting("ATLAS_STEP", "api", set, sizeof set));
    if (mode == MODE_CAPTURE && !__atomic_load_n(&captured_any, __ATOMIC_RELAXED))
        atl_log(ATL_WARN,
                "step trace: %s but the program captured no graph (no stream capture began): "
                "no steps were recorded",
                atl_hint_setting("ATLAS_STEP", "capture", set, sizeof set));
}

void atl_trace_exit(void)
{
    if (!on)
        return;
    /* the work enqueued after the last boundary is a step of its own in sync
     * mode (a program that ends without a final sync); an open api/nvtx step
     * is closed the same way */
    if (mode == MODE_SYNC)
        sync_step("exit", ATL_TAKE_ALL, 0);
    else if (mode == MODE_CAPTURE &&
             __atomic_exchange_n(&cap_step, 0, __ATOMIC_ACQ_REL))
        capture_step_end();
    else
        atl_tstep_close();
    atl_tstep_exit(exit_hints);
}

void atl_trace_counts(uint64_t *steps, uint64_t *differ)
{
    atl_tstep_counts(steps, differ);
}

int atl_trace_progress(uint64_t *steps, uint64_t *ops, unsigned max, void (*line)(const char *))
{
    return on ? atl_tstep_progress(steps, ops, max, line) : 0;
}

void atl_trace_flush(void)
{
    if (on)
        atl_tstep_flush();
}
