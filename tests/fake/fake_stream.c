/*
 * fake_stream.c: streams, events, stream capture.
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

/* ------------------------------------------------------------------------ */
/* Streams                                                                   */
/* ------------------------------------------------------------------------ */

static void stream_detach_locked(struct fake_stream *st)
{
    if (st->cap) {
        st->cap = NULL;
        st->ctx->ncapturing--;
    }
}

/* End a capture sequence: every stream in it leaves capture mode. */
static void capture_detach_all_locked(struct capture *cap)
{
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i]->magic == MAGIC_STREAM) {
            struct fake_stream *s = g_handles[i]->owner;
            if (s->cap == cap)
                stream_detach_locked(s);
        }
}

int ctx_invalidate_captures_locked(struct fake_ctx *ctx)
{
    int any = 0;
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i]->magic == MAGIC_STREAM) {
            struct fake_stream *s = g_handles[i]->owner;
            if (s->ctx == ctx && s->cap) {
                s->cap->invalidated = 1;
                any = 1;
            }
        }
    return any;
}

/* Work on the legacy stream while a blocking stream (one made without
 * CU_STREAM_NON_BLOCKING) of the context is capturing: the legacy stream
 * would wait for the capturing stream, an implicit dependency no graph can
 * hold, so (as a real driver does) those captures are invalidated. 1 when
 * there were any. */
int ctx_invalidate_blocking_captures_locked(struct fake_ctx *ctx)
{
    int any = 0;
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i]->magic == MAGIC_STREAM) {
            struct fake_stream *s = g_handles[i]->owner;
            if (s->ctx == ctx && s->cap && !(s->flags & CU_STREAM_NON_BLOCKING)) {
                s->cap->invalidated = 1;
                any = 1;
            }
        }
    return any;
}

struct fake_stream *fake_stream_new_locked(struct fake_ctx *ctx, unsigned flags, int priority)
{
    struct fake_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->h = (struct hdr){MAGIC_STREAM, s};
    s->ctx = ctx;
    s->flags = flags;
    s->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    if (handle_add(&s->h)) {
        free(s);
        return NULL;
    }
    return s;
}

static CUresult stream_create(CUstream *phStream, unsigned int flags, int priority)
{
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_stream *s = fake_stream_new_locked(c, flags, priority);
    UNLOCK();
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phStream = (CUstream)s;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    ENTER(cuStreamCreate);
    return stream_create(phStream, Flags, 0);
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    ENTER(cuStreamCreateWithPriority);
    return stream_create(phStream, flags, priority);
}

static void capture_free_locked(struct capture *cap, int drop_graph);

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    ENTER(cuStreamDestroy_v2);
    TRY(need_init());
    LOCK();
    struct fake_stream *s = handle_get(hStream, MAGIC_STREAM);
    if (!s) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (s->cap && s->cap->origin == s) {
        struct capture *cap = s->cap;
        capture_detach_all_locked(cap);
        capture_free_locked(cap, 1);
    }
    stream_detach_locked(s);
    handle_remove(&s->h);
    UNLOCK();
    free(s);
    return CUDA_SUCCESS;
}

/* Synchronising with (or querying) a capturing stream is illegal and
 * invalidates its capture; otherwise it reports the context's pending fault. */
static CUresult stream_sync(CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    if (r == CUDA_SUCCESS) {
        if (st && st->cap) {
            st->cap->invalidated = 1;
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        } else {
            r = ctx_sync_locked(c);
        }
    }
    UNLOCK();
    return r;
}

CUresult cuStreamSynchronize_impl(CUstream hStream)
{
    return stream_sync(hStream);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    ENTER(cuStreamSynchronize);
    sync_sleep();
    return cuStreamSynchronize_impl(hStream);
}

CUresult cuStreamQuery_impl(CUstream hStream)
{
    return stream_sync(hStream);
}

/* stream_resolve_locked, taking the lock. */
static CUresult stream_resolve(CUstream s, struct fake_ctx **ctx, struct fake_stream **st)
{
    LOCK();
    CUresult r = stream_resolve_locked(s, ctx, st);
    UNLOCK();
    return r;
}

CUresult cuStreamGetFlags_impl(CUstream hStream, unsigned int *flags)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    TRY(stream_resolve(hStream, &c, &st));
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = st ? st->flags : 0; /* the default streams are blocking */
    return CUDA_SUCCESS;
}

/* A host function runs in stream order: now, as all stream work does here,
 * or at each replay when the stream captures (a host node). */
CUresult cuLaunchHostFunc_impl(CUstream hStream, CUhostFn fn, void *userData)
{
    TRY(need_init());
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct op o = {.kind = OP_HOST, .hfn = fn, .hdata = userData};
    return stream_submit(hStream, &o, NULL);
}

/* A callback gets the stream and the context's error; no capture takes one
 * (the driver refuses it there, and invalidates the capture). */
CUresult cuStreamAddCallback_impl(CUstream hStream, CUstreamCallback callback, void *userData,
                                  unsigned int flags)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    if (!callback || flags)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    if (r == CUDA_SUCCESS && st && st->cap) {
        st->cap->invalidated = 1;
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    CUresult status = r == CUDA_SUCCESS ? c->pending : r;
    UNLOCK();
    TRY(r);
    callback(hStream, status, userData);
    return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    ENTER(cuStreamGetCtx);
    struct fake_ctx *c;
    struct fake_stream *st;
    TRY(stream_resolve(hStream, &c, &st));
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The capture an event was last recorded into, if that capture is still
 * going. Caller holds g_lock. */
static struct capture *event_capture_locked(struct fake_event *e)
{
    if (!e->cap)
        return NULL;
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i]->magic == MAGIC_STREAM) {
            struct fake_stream *s = g_handles[i]->owner;
            if (s->cap == e->cap && s->cap->id == e->cap_id)
                return e->cap;
        }
    e->cap = NULL;
    return NULL;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    ENTER(cuEventCreate);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                         CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_event *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->h = (struct hdr){MAGIC_EVENT, e};
    e->ctx = c;
    e->flags = Flags;
    LOCK();
    int bad = handle_add(&e->h);
    UNLOCK();
    if (bad) {
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phEvent = (CUevent)e;
    return CUDA_SUCCESS;
}

static CUresult event_record(CUevent hEvent, CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    struct fake_event *e = handle_get(hEvent, MAGIC_EVENT);
    if (r == CUDA_SUCCESS && !e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS) {
        if (st && st->cap) {
            e->cap = st->cap; /* a capture-time record: a fork/join point */
            e->cap_id = st->cap->id;
        } else {
            e->cap = NULL;
            e->recorded = 1;
            e->ms = now_ms();
        }
    }
    UNLOCK();
    return r;
}

CUresult cuEventRecord_impl(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream);
}

CUresult cuEventRecordWithFlags_impl(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    return event_record(hEvent, hStream);
}

static CUresult event_wait_host(CUevent hEvent)
{
    TRY(need_init());
    LOCK();
    struct fake_event *e = handle_get(hEvent, MAGIC_EVENT);
    CUresult r;
    if (!e)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (event_capture_locked(e))
        r = CUDA_ERROR_CAPTURED_EVENT;
    else
        r = ctx_sync_locked(e->ctx);
    UNLOCK();
    return r;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    ENTER(cuEventSynchronize);
    return event_wait_host(hEvent);
}

/* A GPU that is behind: FAKE_EVENT_DELAY_MS=MS makes cuEventQuery answer
 * CUDA_ERROR_NOT_READY until MS milliseconds after the event's record (the
 * work itself is done at once, as always; a synchronisation does not wait). */
static int event_pending(CUevent hEvent)
{
    static double delay = -1;
    if (delay < 0) {
        const char *v = getenv("FAKE_EVENT_DELAY_MS");
        delay = v ? strtod(v, NULL) : 0;
    }
    if (delay <= 0)
        return 0;
    LOCK();
    struct fake_event *e = handle_get(hEvent, MAGIC_EVENT);
    int pending = e && e->recorded && now_ms() < e->ms + delay;
    UNLOCK();
    return pending;
}

CUresult cuEventQuery(CUevent hEvent)
{
    ENTER(cuEventQuery);
    CUresult r = event_wait_host(hEvent);
    return r == CUDA_SUCCESS && event_pending(hEvent) ? CUDA_ERROR_NOT_READY : r;
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    ENTER(cuEventDestroy_v2);
    TRY(need_init());
    LOCK();
    struct fake_event *e = handle_get(hEvent, MAGIC_EVENT);
    if (e)
        handle_remove(&e->h);
    UNLOCK();
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    free(e);
    return CUDA_SUCCESS;
}

static CUresult event_elapsed(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    TRY(need_init());
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_event *a = handle_get(hStart, MAGIC_EVENT);
    struct fake_event *b = handle_get(hEnd, MAGIC_EVENT);
    CUresult r = CUDA_SUCCESS;
    if (!a || !b || !a->recorded || !b->recorded ||
        ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        *pMilliseconds = (float)(b->ms - a->ms);
    UNLOCK();
    return r;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    ENTER(cuEventElapsedTime);
    return event_elapsed(pMilliseconds, hStart, hEnd);
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    ENTER(cuEventElapsedTime_v2);
    return event_elapsed(pMilliseconds, hStart, hEnd);
}

/* Waiting on an event recorded inside a capture pulls the waiting stream
 * into that capture (the fork/join pattern of multi-stream capture). */
static CUresult stream_wait_event(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    struct fake_event *e = handle_get(hEvent, MAGIC_EVENT);
    if (r == CUDA_SUCCESS && !e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct capture *cap = event_capture_locked(e);
        if (cap && !st)
            r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        else if (cap && st->cap && st->cap != cap)
            r = CUDA_ERROR_STREAM_CAPTURE_MERGE;
        else if (cap && !st->cap) {
            st->cap = cap;
            st->ctx->ncapturing++;
        }
    }
    UNLOCK();
    return r;
}

CUresult cuStreamWaitEvent_impl(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags);
}

/* ------------------------------------------------------------------------ */
/* Stream capture                                                            */
/* ------------------------------------------------------------------------ */

struct capture_ext {
    struct capture cap;
    int user_graph; /* BeginCaptureToGraph: the graph is the caller's */
};

static void capture_free_locked(struct capture *cap, int drop_graph)
{
    struct capture_ext *x = (struct capture_ext *)cap;
    if (drop_graph && !x->user_graph) {
        handle_remove(&cap->graph->h);
        graph_free(cap->graph);
    }
    free(x);
}

struct fake_graph *graph_new_locked(void)
{
    struct fake_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->h = (struct hdr){MAGIC_GRAPH, g};
    if (handle_add(&g->h)) {
        free(g);
        return NULL;
    }
    return g;
}

static CUresult capture_begin(CUstream hStream, CUstreamCaptureMode mode, CUgraph into)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    struct fake_graph *g = NULL;
    if (r == CUDA_SUCCESS && !st && fake_is_pt_stream(hStream) &&
        !(st = fake_pt_stream_make_locked(c)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && !st)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy NULL stream */
    else if (r == CUDA_SUCCESS && st->cap)
        r = CUDA_ERROR_ILLEGAL_STATE;
    if (r == CUDA_SUCCESS && into && !(g = handle_get(into, MAGIC_GRAPH)))
        r = CUDA_ERROR_INVALID_VALUE;
    struct capture_ext *x = NULL;
    if (r == CUDA_SUCCESS) {
        x = calloc(1, sizeof *x);
        if (!g)
            g = x ? graph_new_locked() : NULL;
        else if (x)
            x->user_graph = 1;
        if (!x || !g) {
            free(x);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (r == CUDA_SUCCESS) {
        x->cap.graph = g;
        x->cap.origin = st;
        x->cap.id = ++g_capture_ids;
        x->cap.mode = mode;
        st->cap = &x->cap;
        c->ncapturing++;
    }
    UNLOCK();
    return r;
}

CUresult cuStreamBeginCapture_impl(CUstream hStream)
{
    return capture_begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL);
}

CUresult cuStreamBeginCapture_v2_impl(CUstream hStream, CUstreamCaptureMode mode)
{
    return capture_begin(hStream, mode, NULL);
}

CUresult cuStreamBeginCaptureToGraph_impl(CUstream hStream, CUgraph hGraph,
                                          const CUgraphNode *dependencies,
                                          const CUgraphEdgeData *dependencyData,
                                          size_t numDependencies, CUstreamCaptureMode mode)
{
    if (!hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    return capture_begin(hStream, mode, hGraph);
}

static CUresult capture_end(CUstream hStream, CUgraph *phGraph)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    if (r == CUDA_SUCCESS && (!st || !st->cap))
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (r == CUDA_SUCCESS && st->cap->origin != st)
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    if (r == CUDA_SUCCESS) {
        struct capture *cap = st->cap;
        capture_detach_all_locked(cap);
        if (cap->invalidated) {
            *phGraph = NULL;
            capture_free_locked(cap, 1);
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else {
            *phGraph = (CUgraph)cap->graph;
            capture_free_locked(cap, 0);
        }
    }
    UNLOCK();
    return r;
}

CUresult cuStreamEndCapture_impl(CUstream hStream, CUgraph *phGraph)
{
    return capture_end(hStream, phGraph);
}

static CUresult capture_info(CUstream hStream, CUstreamCaptureStatus *status, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    if (r == CUDA_SUCCESS) {
        struct capture *cap = st ? st->cap : NULL;
        *status = !cap               ? CU_STREAM_CAPTURE_STATUS_NONE
                  : cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                     : CU_STREAM_CAPTURE_STATUS_ACTIVE;
        if (cap && id)
            *id = cap->id;
        if (cap && graph)
            *graph = (CUgraph)cap->graph;
        if (cap && deps)
            *deps = NULL;
        if (cap && edges)
            *edges = NULL;
        if (cap && ndeps)
            *ndeps = 0;
    }
    UNLOCK();
    return r;
}

CUresult cuStreamIsCapturing_impl(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return capture_info(hStream, captureStatus, NULL, NULL, NULL, NULL, NULL);
}

CUresult cuStreamGetCaptureInfo_v3_impl(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out, CUgraph *graph_out,
                                        const CUgraphNode **dependencies_out,
                                        const CUgraphEdgeData **edgeData_out,
                                        size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}
