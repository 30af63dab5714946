/*
 * Engine core: lifecycle (lazy init, exit reports, fork), the re-entrancy
 * guard, and the event entry points the hooks call (the one place that fans
 * each event out to the features). The call statistics are src/stats.c's.
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include "engine.h"
#include "realdl.h"
#include "capture.h"
#include "driver.h"

#include "blocking.h"
#include "config.h"
#include "faultrep.h"
#include "findings.h"
#include "flight.h"
#include "hang.h"
#include "kaudit.h"
#include "kernels.h"
#include "leaks.h"
#include "ledger.h"
#include "log.h"
#include "races.h"
#include "redzone.h"
#include "ring.h"
#include "stats.h"
#include "summary.h"
#include "thread.h"
#include "trace.h"
#include "unused.h"
#include "vmm.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int initialised;  /* init finished */
static int finished;     /* exit report done: hooks pass through */
static int in_child;     /* forked child: never report */
static int exit_started; /* atl_engine_exit entered */
static int late_atexit;  /* second atexit registration done */
static int summarised;   /* the summary line said (the destructor, or _exit) */
/* The process that initialised: a child of a raw fork (syscall(SYS_fork), or
 * clone, which run no atfork handler) is told apart by its pid at exit. */
static pid_t init_pid;

static void warn_line(void *ctx, const char *line)
{
    (void)ctx;
    atl_log_line(line);
}

/* What each feature's init answered (engine.h): its event classes, 0 when
 * it is off. Written before atl_on is published, read-only after. */
static unsigned feature_events[ATL_FEAT_COUNT];

static unsigned (*const feature_init[ATL_FEAT_COUNT])(void) = {
    [ATL_FEAT_FAULT] = atl_faultrep_init, [ATL_FEAT_BLOCKING] = atl_blocking_init,
    [ATL_FEAT_KAUDIT] = atl_kaudit_init,  [ATL_FEAT_REDZONE] = atl_redzone_init,
    [ATL_FEAT_LEAKS] = atl_leaks_init,    [ATL_FEAT_TRACE] = atl_trace_init,
    [ATL_FEAT_HANG] = atl_hang_init,      [ATL_FEAT_RACES] = atl_races_init,
};

void atl_engine_enable(enum atl_feature f, unsigned events)
{
    feature_events[f] = events;
}

/* The one gate of the fan-out below. */
static inline int on(enum atl_feature f)
{
    return feature_events[f] != 0;
}

/* The sticky-fault latch, checked once per call that reaches the engine, in
 * its post path: a failure goes to the fault report, which reports the first
 * context-destroying one (src/fault.h keeps the latch). */
static inline void latch(int hook, CUresult r)
{
    if (__builtin_expect(r != CUDA_SUCCESS, 0) && on(ATL_FEAT_FAULT))
        atl_faultrep_check(hook, r);
}

static unsigned wanted_events(void)
{
    /* module unloads: they clear the per-handle caches (atl_module_post) */
    unsigned want = ATL_ON_RESOLVE | ATL_ON_MODULE;
    if (atl_cfg.stats)
        want = ATL_ON_ALL;
    if (atl_ledger_on)
        want |= ATL_ON_ALLOC;
    for (int f = 0; f < ATL_FEAT_COUNT; f++)
        want |= feature_events[f];
    return want;
}

/* Reports go to ATLAS_LOG's file from here (stderr when unset or it cannot be opened). */
static void open_log(char *const *envp)
{
    const char *logp = NULL;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, "ATLAS_LOG=", 10) == 0 && (*e)[10])
            logp = *e + 10;
    atl_log_open(logp);
}

static void init_body(void)
{
    atl_thr.depth++;
    /* secure_getenv semantics for the whole table: a set-uid program reads
     * no settings at all. */
    char *empty[] = {NULL};
    char *const *envp = getauxval(AT_SECURE) ? empty : environ;

    /* ATLAS_LOG first, so problems with the other settings land there. */
    open_log(envp);

    atl_config_parse(&atl_cfg, envp, warn_line, NULL);
    atl_log_set_level((int)atl_cfg.log_level);
    atl_selftime_on = (int)atl_cfg.self_time;
    atl_unused_settings(); /* a setting whose feature is off is said, not ignored */
    /* suppressions and the findings file, before any feature can report */
    atl_findings_init();

    /* Features read their settings here (and set atl_ledger_on if they need
     * the ledger), before wanted_events() decides what the hooks report. */
    for (int f = 0; f < ATL_FEAT_COUNT; f++)
        atl_engine_enable((enum atl_feature)f, feature_init[f]());
    /* the hang report shows what the step trace and the flight recorder
     * know; a feature calls no other feature, so the engine hands it theirs */
    if (on(ATL_FEAT_HANG))
        atl_hang_sources(&(struct atl_hang_sources){
            .progress = on(ATL_FEAT_TRACE) ? atl_trace_progress : NULL,
            .flush = on(ATL_FEAT_TRACE) ? atl_trace_flush : NULL,
            .suspects = on(ATL_FEAT_FAULT) ? atl_flight_report : NULL,
        });

    init_pid = getpid();
    pthread_atfork(NULL, NULL, atl_engine_atfork_child);
    atexit(atl_engine_exit);

    __atomic_store_n(&initialised, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&atl_on, wanted_events(), __ATOMIC_RELEASE);
    atl_thr.depth--;
}

void atl_engine_init(void)
{
    pthread_once(&init_once, init_body);
}

int atl_self_enter(void)
{
    atl_engine_init();
    if (atl_thr.depth || __atomic_load_n(&finished, __ATOMIC_ACQUIRE))
        return 0;
    atl_thr.depth++;
    return 1;
}

int atl_enter(int hook, int path)
{
    if (__builtin_expect(!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE), 0))
        atl_engine_init();
    if (atl_thr.depth || __atomic_load_n(&finished, __ATOMIC_ACQUIRE))
        return 0;
    atl_thr.depth++;
    /* A shared counter is an atomic read-modify-write on a line every thread
     * touches: only paid when someone will read it (about half of the
     * always-on launch path's cost, measured against the fake driver). */
    if (atl_cfg.stats)
        atl_stats_count_call(hook, path);
    return 1;
}

void atl_hold(void)
{
    atl_engine_init();
    atl_thr.depth++;
}

void atl_leave(void)
{
    atl_thr.depth--;
}

void atl_unwound(void *arg)
{
    (void)arg;
    if (on(ATL_FEAT_HANG))
        atl_hang_leave();
    if (on(ATL_FEAT_RACES))
        atl_races_enq(0, NULL, 0);
    atl_krec_unpin_all();
    atl_thr.depth = 0; /* the slow path runs only from depth 0 (atl_enter) */
}

/* cudart registers its own exit handler (which tears the context down) when
 * it initialises, after our first hook ran. atexit handlers run in reverse
 * order, so registering again at the first real work puts our report ahead
 * of that teardown, while the driver still answers. The report runs once. */
static void register_late_atexit(void)
{
    if (!__atomic_load_n(&late_atexit, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&late_atexit, 1, __ATOMIC_ACQ_REL))
        atexit(atl_engine_exit);
}

/* ---- events: the core only keeps the books; features plug in here -------- */

void atl_launch_from_config(struct atl_launch *l)
{
    const CUlaunchConfig *c = l->config;
    if (!c)
        return;
    l->grid[0] = c->gridDimX, l->grid[1] = c->gridDimY, l->grid[2] = c->gridDimZ;
    l->block[0] = c->blockDimX, l->block[1] = c->blockDimY, l->block[2] = c->blockDimZ;
    l->shmem = c->sharedMemBytes;
    l->stream = c->hStream;
    for (unsigned i = 0; c->attrs && i < c->numAttrs; i++) {
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            l->cluster[0] = c->attrs[i].value.clusterDim.x;
            l->cluster[1] = c->attrs[i].value.clusterDim.y;
            l->cluster[2] = c->attrs[i].value.clusterDim.z;
        }
    }
}

void atl_launch_pre(struct atl_launch *l)
{
    register_late_atexit();
    /* the one look-up of the kernel's record: every feature reads it in the
     * event, pinned until the end of atl_launch_post (src/kernels.h); the
     * flight recorder's first launch of a kernel in its epoch (its cold
     * half) makes it when there is none */
    atl_krec_pin();
    l->cap = atl_capture_status(l->stream, l->hook);
    l->packed = atl_launch_packed(l->extra, &l->packed_size); /* NULL, 0 without extra */
    l->seq = atl_ring_put(l->hook, l->func, l->stream, l->grid[0], l->grid[1], l->grid[2],
                          l->block[0], l->block[1], l->block[2], l->shmem);
    if (on(ATL_FEAT_FAULT)) {
        l->rec = atl_ring_ready_rec(l->func);
        if (!l->rec)
            l->rec = atl_ring_first(l->func, l->params, l->extra, l->seq);
    } else {
        l->rec = atl_krec_get(l->func);
    }
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_launch_pre(l);
    if (on(ATL_FEAT_RACES))
        atl_races_launch_pre(l);
}

CUresult atl_launch_post(struct atl_launch *l, CUresult r)
{
    if (on(ATL_FEAT_KAUDIT))
        atl_kaudit_launch(l);
    CUresult out = r;
    if (__builtin_expect(r != CUDA_SUCCESS, 0))
        latch(l->hook, r);
    else if (on(ATL_FEAT_FAULT))
        out = atl_faultrep_launch_post(l); /* debug sync */
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_launch_post(l, r);
    if (on(ATL_FEAT_TRACE))
        atl_trace_launch(l, r);
    if (on(ATL_FEAT_RACES))
        atl_races_launch(l, r);
    atl_krec_unpin();
    return out;
}

void atl_graph_launch_pre(struct atl_graph_launch *g)
{
    atl_ring_put(g->hook | ATL_RING_GRAPH, g->exec, g->stream, 0, 0, 0, 0, 0, 0, 0);
    g->cap = atl_capture_status(g->stream, g->hook);
    if (on(ATL_FEAT_RACES))
        atl_races_graph_launch_pre(g);
}

void atl_graph_inst_post(struct atl_graph_inst *g, CUresult r)
{
    if (on(ATL_FEAT_FAULT))
        atl_faultrep_graph_inst_post(g, r);
    latch(g->hook, r);
    if (on(ATL_FEAT_RACES))
        atl_races_graph_inst(g, r);
}

CUresult atl_graph_launch_post(struct atl_graph_launch *g, CUresult r)
{
    latch(g->hook, r);
    if (on(ATL_FEAT_FAULT))
        r = atl_faultrep_graph_launch_post(g, r);
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_graph_launch_post(g, r);
    if (on(ATL_FEAT_TRACE))
        atl_trace_graph_launch(g, r);
    if (on(ATL_FEAT_RACES))
        atl_races_graph_launch(g, r);
    return r;
}

void atl_alloc_pre(struct atl_alloc *a)
{
    register_late_atexit();
    a->seq = atl_ledger_next_seq();
    a->padded = a->bytes;
    if (a->kind == ATL_ALLOC_ASYNC)
        a->cap = atl_capture_status(a->stream, a->hook);
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_alloc_pre(a);
}

static void ledger_note_alloc(const struct atl_alloc *a, CUresult r, int guarded)
{
    if (r != CUDA_SUCCESS || !a->dptr)
        return;
    struct atl_alloc_rec rec = {
        .seq = a->seq,
        .ptr = *a->dptr,
        .bytes = a->bytes,
        .padded = a->padded,
        .kind = (int)a->kind,
        .hook = a->hook,
        .stream = a->stream,
        .guarded = guarded,
    };
    if (a->kind == ATL_ALLOC_PITCH && a->pitch) {
        rec.bytes = *a->pitch * a->height;
        rec.padded = *a->pitch * (a->padded_height ? a->padded_height : a->height);
    }
    atl_stack_capture_n(&rec.site, (int)atl_cfg.stack_depth);
    if (atl_ledger_add(&rec) != 0)
        atl_log_once_oom("the allocation ledger");
}

void atl_alloc_post(struct atl_alloc *a, CUresult r)
{
    latch(a->hook, r);
    if (on(ATL_FEAT_LEAKS))
        atl_leaks_alloc_post(a, r);
    int guarded = on(ATL_FEAT_REDZONE) ? atl_redzone_alloc_post(a, r) : 0;
    if (atl_ledger_on)
        ledger_note_alloc(a, r, guarded);
    if (on(ATL_FEAT_RACES))
        atl_races_alloc(a, r);
}

int atl_alloc_pressure(int begin)
{
    return on(ATL_FEAT_REDZONE) && atl_redzone_pressure(begin);
}

int atl_alloc_release_held(void)
{
    return on(ATL_FEAT_REDZONE) && atl_redzone_release_held();
}

int atl_alloc_unpad(struct atl_alloc *a)
{
    return on(ATL_FEAT_REDZONE) && atl_redzone_unpad(a);
}

void atl_free_pre(struct atl_free *f)
{
    if (f->async)
        f->cap = atl_capture_status(f->stream, f->hook);
    if (atl_ledger_on)
        f->known = atl_ledger_remove(f->ptr, &f->rec);
    if (on(ATL_FEAT_RACES))
        atl_races_free(f);
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_free_pre(f);
    if (on(ATL_FEAT_LEAKS))
        atl_leaks_free_pre(f);
}

void atl_free_post(struct atl_free *f, CUresult r)
{
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_free_post(f, r);
    if (on(ATL_FEAT_LEAKS))
        atl_leaks_free_post(f, r);
}

void atl_vmm_pre(struct atl_vmm *v)
{
    register_late_atexit();
    if (atl_ledger_on)
        atl_vmm_ledger_pre(v);
}

void atl_vmm_post(struct atl_vmm *v, CUresult r)
{
    latch(v->hook, r);
    if (atl_ledger_on)
        atl_vmm_ledger_post(v, r);
    if (on(ATL_FEAT_LEAKS))
        atl_leaks_vmm_post(v, r);
    if (on(ATL_FEAT_RACES))
        atl_races_vmm(v, r);
}

void atl_copy_pre(struct atl_copy *c)
{
    c->cap = atl_capture_status(c->stream, c->hook);
    if (on(ATL_FEAT_HANG) && !c->async) /* a synchronous copy may wait on the GPU */
        atl_hang_enter(c->hook);
    if (on(ATL_FEAT_RACES))
        atl_races_enq(1, c->async ? c->stream : NULL, c->hook);
}

/* Does a descriptor copy's end make the host wait (struct atl_copy's host_waits)? */
static int end_waits(CUmemorytype t)
{
    return t == CU_MEMORYTYPE_HOST || t == CU_MEMORYTYPE_UNIFIED;
}

/* A descriptor copy's fields, once, for every feature that reads them, and whether the host
 * waited (src/events.h says the rule). */
static void copy_decode(struct atl_copy *c)
{
    switch (c->kind) {
    case ATL_CPY_2D:
        atl_copy_decode_2d(&c->geom, c->p2d);
        break;
    case ATL_CPY_3D:
        atl_copy_decode_3d(&c->geom, c->p3d);
        break;
    case ATL_CPY_3D_PEER:
        atl_copy_decode_3d_peer(&c->geom, c->p3dp);
        break;
    default:
        break;
    }
    if (c->async) {
        c->host_waits = 0;
        return;
    }
    switch (c->kind) {
    case ATL_CPY_GENERIC:
    case ATL_CPY_HTOD:
    case ATL_CPY_DTOH:
    case ATL_CPY_HTOA:
    case ATL_CPY_ATOH:
        c->host_waits = 1;
        break;
    case ATL_CPY_2D:
    case ATL_CPY_3D:
        /* a descriptor the engine could not read: as cuMemcpy, whose ends are not known */
        c->host_waits = !c->geom.set || end_waits(c->geom.src.type) || end_waits(c->geom.dst.type);
        break;
    default: /* device to device, peer, arrays, a 3D peer copy */
        c->host_waits = 0;
        break;
    }
}

CUresult atl_copy_post(struct atl_copy *c, CUresult r)
{
    copy_decode(c);
    if (!c->async)
        r = atl_own_error_deliver(r);
    if (on(ATL_FEAT_HANG) && !c->async)
        atl_hang_leave();
    if (on(ATL_FEAT_RACES))
        atl_races_enq(0, NULL, 0);
    latch(c->hook, r);
    if (on(ATL_FEAT_BLOCKING) && on(ATL_FEAT_TRACE) && c->async && r == CUDA_SUCCESS &&
        (c->kind == ATL_CPY_HTOD || c->kind == ATL_CPY_DTOH)) {
        /* both ask what the host end is: one cuPointerGetAttribute for the two */
        const void *host = c->kind == ATL_CPY_HTOD ? c->host_src : c->host_dst;
        if (host)
            c->host_mem = (int)atl_mem_type((CUdeviceptr)(uintptr_t)host);
    }
    if (on(ATL_FEAT_BLOCKING))
        atl_blocking_copy_post(c, r);
    if (on(ATL_FEAT_TRACE))
        atl_trace_copy(c, r);
    if (on(ATL_FEAT_RACES))
        atl_races_copy(c, r);
    return r;
}

void atl_memset_pre(struct atl_memset *m)
{
    m->cap = atl_capture_status(m->stream, m->hook);
    if (on(ATL_FEAT_RACES))
        atl_races_enq(1, m->async ? m->stream : NULL, m->hook);
}

CUresult atl_memset_post(struct atl_memset *m, CUresult r)
{
    if (on(ATL_FEAT_RACES))
        atl_races_enq(0, NULL, 0);
    latch(m->hook, r);
    if (on(ATL_FEAT_TRACE))
        atl_trace_memset(m, r);
    if (on(ATL_FEAT_RACES))
        atl_races_memset(m, r);
    return r;
}

void atl_sync_pre(struct atl_sync *s)
{
    s->launches_before = atl_fault_last_launch();
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_sync_pre(s);
    if (on(ATL_FEAT_HANG))
        atl_hang_enter(s->hook);
    else if (on(ATL_FEAT_TRACE))
        s->step_ended = atl_trace_sync_pre(s);
}

CUresult atl_sync_post(struct atl_sync *s, CUresult r)
{
    r = atl_own_error_deliver(r);
    if (on(ATL_FEAT_HANG))
        atl_hang_leave();
    if (on(ATL_FEAT_BLOCKING))
        atl_blocking_sync_post(s, r);
    latch(s->hook, r);
    if (on(ATL_FEAT_FAULT))
        atl_faultrep_sync_post(s, r);
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_sync_post(s, r);
    if (on(ATL_FEAT_TRACE) && !s->step_ended)
        atl_trace_sync(s, r);
    if (on(ATL_FEAT_RACES))
        atl_races_sync(s, r);
    return r;
}

void atl_capture_pre(struct atl_capture *c)
{
    /* the one tracker (src/capture.h), before the features ask it */
    if (!c->begin)
        atl_capture_ending(atl_own_stream(c->stream, c->hook));
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_capture_pre(c);
    if (on(ATL_FEAT_TRACE))
        atl_trace_capture_pre(c);
}

void atl_capture_post(struct atl_capture *c, CUresult r)
{
    if (c->begin && r == CUDA_SUCCESS)
        atl_capture_begun(atl_own_stream(c->stream, c->hook), c->mode);
    if (on(ATL_FEAT_TRACE))
        atl_trace_capture_post(c, r);
    if (on(ATL_FEAT_RACES))
        atl_races_capture(c, r);
}

void atl_lookup_post(struct atl_lookup *l, CUresult r)
{
    atl_kernels_note_lookup(l, r);
    if (on(ATL_FEAT_KAUDIT))
        atl_kaudit_lookup(l, r);
}

void atl_stream_pre(struct atl_stream_op *s)
{
    if (on(ATL_FEAT_RACES))
        atl_races_stream_pre(s);
}

void atl_stream_post(struct atl_stream_op *s, CUresult r)
{
    if (on(ATL_FEAT_RACES))
        atl_races_stream_post(s, r);
}

void atl_module_pre(struct atl_module *m)
{
    (void)m;
}

void atl_module_post(struct atl_module *m, CUresult r)
{
    if (on(ATL_FEAT_KAUDIT))
        atl_kaudit_module(m, r);
    if (m->unload && r == CUDA_SUCCESS) {
        /* Every per-handle record of its kernels goes: the driver may give a
         * later kernel the same address (seen: a 1-parameter kernel at the
         * address of an unloaded 64-parameter one). */
        atl_kernels_forget_owner(m->handle);
        if (on(ATL_FEAT_TRACE))
            atl_trace_module_unloaded();
    }
}

void atl_ctx_teardown_pre(struct atl_ctx_teardown *t)
{
    if (on(ATL_FEAT_REDZONE))
        atl_redzone_teardown(atl_hook_names[t->hook]);
    if (on(ATL_FEAT_RACES))
        atl_races_teardown();
}

void atl_dtoh_failed(int hook, CUresult r)
{
    latch(hook, r);
}

/* ---- exit -------------------------------------------------------------------- */

/* In a child that no atfork handler told (a raw fork): the same as the
 * handler would have done. */
static int child_of_raw_fork(void)
{
    if (in_child || getpid() == init_pid)
        return in_child;
    atl_engine_atfork_child();
    return 1;
}

void atl_engine_exit(void)
{
    if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE) || child_of_raw_fork())
        return;
    if (__atomic_exchange_n(&exit_started, 1, __ATOMIC_ACQ_REL))
        return;
    /* exit() called while this thread was inside atlastrace: a signal
     * handler that interrupted a hook (or a driver that exits from inside a
     * call). Any lock of ours, or malloc's, may be held by the code it
     * interrupted, and a table may be half-updated: only the lock-free
     * report runs. */
    int interrupted = atl_thr.depth > 0;
    atl_thr.depth++;
    atl_exit_begin();
    if (interrupted) {
        atl_log(ATL_WARN, "exit: the program exited while this thread was inside atlastrace (exit "
                          "from a signal handler?): the red-zone, leak, step-trace, race, sync "
                          "and kernel-audit reports are skipped; the program is not affected");
    } else {
        if (on(ATL_FEAT_REDZONE))
            atl_redzone_exit();
        if (on(ATL_FEAT_LEAKS))
            atl_leaks_exit();
        if (on(ATL_FEAT_TRACE))
            atl_trace_exit();
        if (on(ATL_FEAT_RACES))
            atl_races_exit();
    }
    if (atl_cfg.stats)
        atl_stats_report(atl_log_fd());
    if (atl_cfg.self_time)
        atl_selftime_report();
    if (!interrupted) {
        if (on(ATL_FEAT_FAULT))
            atl_faultrep_exit();
        /* one line of blocking counts when the run asked for any report */
        int asked = atl_cfg.stats || atl_cfg.debug_sync_kernels;
        for (int f = 0; f < ATL_FEAT_COUNT; f++)
            asked |= f != ATL_FEAT_FAULT && f != ATL_FEAT_BLOCKING && on((enum atl_feature)f);
        if (on(ATL_FEAT_BLOCKING))
            atl_blocking_report(asked);
        if (on(ATL_FEAT_KAUDIT))
            atl_kaudit_report();
    }
    /* after every report: what was not printed or was suppressed */
    atl_findings_exit();
    __atomic_store_n(&atl_on, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&finished, 1, __ATOMIC_RELEASE);
    atl_thr.depth--;
}

/* The summary line's counts, from each feature that is on (src/summary.h). */
static void summary_counts(struct atl_summary *s)
{
    memset(s, 0, sizeof *s);
    uint64_t kept = 0;
    s->redzone = on(ATL_FEAT_REDZONE) &&
                 atl_redzone_counts(&s->overruns, &s->guarded, &s->after_free, &kept);
    s->quarantine = kept != 0;
    /* the findings sink's counts: suppressed findings are said apart */
    s->faults = atl_findings_count(ATL_FINDING_FAULT);
    s->launches = atl_fault_last_launch();
    s->launches_counted = atl_fault_ring_on() || s->launches;
    s->debug_sync = on(ATL_FEAT_FAULT) && atl_faultrep_synced(&s->synced);
    s->leaks = atl_cfg.leaks != 0;
    s->leaked = atl_findings_count(ATL_FINDING_LEAK);
    if (s->leaks)
        atl_leaks_found(&s->leaked_allocs, &s->leaked_bytes);
    s->races = on(ATL_FEAT_RACES);
    s->race_count = atl_findings_count(ATL_FINDING_RACE);
    s->trace = on(ATL_FEAT_TRACE);
    if (s->trace)
        atl_trace_counts(&s->steps, &s->differ);
    s->copies = atl_blocking_d2h();
    s->sites_counted = atl_blocking_sites(&s->sites);
    s->syncs = atl_blocking_counter(ATL_SC_SYNC_STREAM) + atl_blocking_counter(ATL_SC_SYNC_CTX) +
               atl_blocking_counter(ATL_SC_SYNC_EVENT);
    s->suppressions = atl_cfg.suppressions != NULL;
    for (int k = 0; k < ATL_FINDING_KINDS; k++)
        s->suppressed += atl_findings_suppressed((enum atl_finding)k);
}

/* The summary line of a process that runs under atlas-trace (src/summary.h) into line, or
 * NULL; `init`: the library initialised (one that never did opens the log for it). */
static const char *summary_line(int init, char *line, size_t len)
{
    if (!atl_summary_wanted(init))
        return NULL;
    struct atl_summary s;
    if (init)
        summary_counts(&s);
    else
        open_log(getauxval(AT_SECURE) ? NULL : environ);
    atl_summary_format(init ? &s : NULL, line, len);
    return line;
}

/* Last, after the exit reports and the verdict's line: the summary line, in a process that
 * runs under atlas-trace (src/summary.h); one that never initialised opens the log for it. */
__attribute__((destructor)) static void engine_fini(void)
{
    if (__atomic_exchange_n(&summarised, 1, __ATOMIC_ACQ_REL))
        return; /* _exit said it already */
    atl_engine_exit();
    int init = __atomic_load_n(&initialised, __ATOMIC_ACQUIRE);
    /* a raw fork's child is told by its pid, which only an initialised
     * library knows */
    if (in_child || (init && child_of_raw_fork()))
        return;
    char line[512];
    const char *last = summary_line(init, line, sizeof line);
    if (init)
        atl_exit_verdict(last);
    else if (last)
        atl_log_line(last);
}

/*
 * _exit and _Exit, for a program that ends without an exit path: Python's os._exit, a
 * framework that skips teardown. Nothing the exit path runs is run (the program asked for
 * that, and _exit is what a signal handler may call, with any lock of the program's or
 * malloc's held), except the summary line, whose counts are read without a lock: a run
 * through atlas-trace that ended so still ends with it. Its findings were said as they came;
 * atlas-trace's --error-exitcode counts them in the files they went to (findings.c), so the
 * status it gives is right too. A child of vfork or posix_spawn shares our memory and a forked
 * child has our counts: both are told by their pid and pass straight through, as does a
 * second call. The library's own exits (the verdict's) go to atl_exit_now, not here.
 */
static pid_t load_pid;
__attribute__((constructor)) static void engine_load(void)
{
    load_pid = getpid();
    /* Loaded with dlopen (or linked after libcuda), the library sees none of the program's
     * driver calls: those resolve to libcuda first, or were bound before it came. Said once
     * rather than doing nothing silently (issue #48): the global scope's cuLaunchKernel is not
     * ours. */
    Dl_info me, it, exe;
    void *seen = atl_dlsym(RTLD_DEFAULT, "cuLaunchKernel");
    int shared = dladdr((void *)engine_load, &me) &&
                 !(dladdr((void *)getauxval(AT_PHDR), &exe) && exe.dli_fbase == me.dli_fbase);
    if (shared && !(seen && dladdr(seen, &it) && it.dli_fbase == me.dli_fbase))
        atl_log(ATL_WARN,
                "%s is loaded but the program's CUDA driver calls do not come to it (it was "
                "loaded with dlopen, or after libcuda): nothing is traced; load it first, with "
                "LD_PRELOAD (atlas-trace does)",
                me.dli_fname ? me.dli_fname : "libatlastrace.so");
}

__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
    int init = __atomic_load_n(&initialised, __ATOMIC_ACQUIRE);
    if (!in_child && getpid() == (init ? init_pid : load_pid) &&
        !__atomic_exchange_n(&summarised, 1, __ATOMIC_ACQ_REL)) {
        char line[512];
        const char *last = summary_line(init, line, sizeof line);
        if (last)
            atl_log_line(last);
    }
    atl_exit_now(status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
    _exit(status);
}

/* A forked child inherits our counters and any lock another thread held at
 * the fork. CUDA does not work in a forked child anyway, so the child's
 * hooks simply pass through and it never reports the parent's figures. */
void atl_engine_atfork_child(void)
{
    in_child = 1;
    finished = 1;
    atl_on = 0;
    atl_thr.depth = 0;
}
