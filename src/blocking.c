/*
 * The feature "blocking": blocking copies, host syncs, the fault report and
 * debug sync.
 *
 * Why: a GPU sits idle while the host waits on device-to-host copies (one
 * prefill trace counted 32,343 of them and 58% idle), and an asynchronous
 * fault surfaces at a later, unrelated sync. Counting is always on; it costs
 * relaxed atomic adds, plus one cuPointerGetAttribute per asynchronous copy
 * with a host side (pageable or pinned decides whether it blocks) and two per
 * generic cuMemcpy (its direction is only known through unified addressing).
 */
#include "blocking.h"

#include "capture.h"
#include "config.h"
#include "driver.h"
#include "dsk.h"
#include "flight.h"
#include "hint.h"
#include "kernels.h"
#include "log.h"
#include "services.h"
#include "stack.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const counter_names[ATL_SC_COUNT] = {
    "dtoh",        "memcpy",   "peer",       "2d", "3d", "async-d2h-pageable", "async-h2d-pageable",
    "stream-sync", "ctx-sync", "event-sync",
};

static uint64_t counts[ATL_SC_COUNT];
static uint64_t bytes[ATL_SC_COUNT];
static uint64_t blocking_n; /* blocking device-to-host copies, numbered */

static int trace_on;                /* ATLAS_D2H_TRACE given */
static uint64_t trace_at;           /* its value: backtrace at this blocking copy */
static enum atl_dsk debug_sync;     /* ATLAS_DEBUG_SYNC_KERNELS */
static const char *dsk_list;        /* its list of names (ATL_DSK_LIST) */
static unsigned long long dsk_seen; /* the list's entries that named a launched kernel */

/* Reads the settings and starts the flight recorder; the events it needs:
 * copies and syncs always, for the counts and the latch; launches always, for
 * the latch's ring of recent launches (measured: see docs/sync.md); lookups
 * always, so the ring can name kernels after a fault, when the driver no
 * longer answers cuFuncGetName (seen on the H200); captures, so debug sync
 * never synchronises inside one. */
unsigned atl_blocking_init(void)
{
    int i = atl_config_find("ATLAS_D2H_TRACE");
    trace_on = i >= 0 && atl_cfg.set[i];
    trace_at = atl_cfg.d2h_trace;
    const char *why;
    debug_sync = atl_dsk_parse(atl_cfg.debug_sync_kernels, &why);
    if (debug_sync == ATL_DSK_BAD) {
        char shown[80];
        atl_config_show_value(atl_cfg.debug_sync_kernels, shown, sizeof shown);
        atl_log(ATL_ERROR, "ignoring ATLAS_DEBUG_SYNC_KERNELS='%s': %s; using 0", shown, why);
        debug_sync = ATL_DSK_OFF;
    }
    atl_fault_init(atl_cfg.launch_ring);
    if (debug_sync == ATL_DSK_LIST) {
        /* a copy: the environment's string may be changed by the program */
        dsk_list = strdup(atl_cfg.debug_sync_kernels);
        if (!dsk_list)
            dsk_list = atl_cfg.debug_sync_kernels;
    }
    /* ...and module unloads, so their kernels' records are forgotten */
    unsigned on = ATL_ON_COPY | ATL_ON_SYNC | ATL_ON_LOOKUP | ATL_ON_CAPTURE | ATL_ON_MODULE;
    /* The flight recorder's ring is written from the hooks' light path (a
     * table probe, a launch number and one ring slot, no engine slow path):
     * +39 instructions a launch against the fake driver at any number of
     * kernels (make cpu-bench), where the engine's slow path cost +293 and
     * 60 ns (1.7-2.4% of a 3.5 us launch) measured in-process on the H200.
     * ATLAS_LAUNCH_RING=0 gives even that back; the latch then still reports
     * the first sticky error, without the launches before it. A list of
     * kernels to debug-sync takes every launch through the engine, which
     * matches the kernel by its record, which the launch event carries. */
    /* synchronous DtoH copies: counted on the hooks' light path, unless
     * ATLAS_D2H_TRACE wants their call sites */
    on |= trace_on ? ATL_ON_COPY_DTOH : ATL_ON_DTOH_COUNT;
    if (debug_sync)
        on |= ATL_ON_LAUNCH;
    else if (atl_fault_ring_on())
        on |= ATL_ON_LAUNCH_RING; /* hooks' light path, not the engine */
    return on;
}

uint64_t atl_blocking_counter(enum atl_blocking_counter k)
{
    return (unsigned)k < ATL_SC_COUNT ? __atomic_load_n(&counts[k], __ATOMIC_RELAXED) : 0;
}

uint64_t atl_blocking_d2h(void)
{
    uint64_t n = 0;
    for (int k = 0; k <= ATL_SC_BLOCKING_D2H_LAST; k++)
        n += atl_blocking_counter((enum atl_blocking_counter)k);
    return n;
}

/* ---- call sites (only with ATLAS_D2H_TRACE) --------------------------------- */

/* A fixed table: no malloc on the copy path. Grouped by the whole stack, so
 * two callers of one helper stay apart. */
#define SITES 1024
struct site {
    uint64_t hash;
    unsigned order; /* first seen: 0, 1, ... (ties in the summary: the newest first) */
    uint64_t n[ATL_SC_COUNT];
    uint64_t bytes;
    struct atl_stack stack;
};
static struct site sites[SITES];
static unsigned nsites;
static uint64_t sites_dropped;
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;

static void site_note(enum atl_blocking_counter k, size_t nbytes)
{
    struct atl_stack st;
    atl_stack_capture(&st);
    uint64_t h = atl_stack_hash(&st);
    pthread_mutex_lock(&sites_lock);
    for (unsigned j = (unsigned)h & (SITES - 1), probes = 0; probes < SITES;
         j = (j + 1) & (SITES - 1), probes++) {
        struct site *s = &sites[j];
        if (s->hash == h && s->stack.n == st.n) {
            s->n[k]++;
            s->bytes += nbytes;
            goto out;
        }
        if (s->hash == 0 && s->stack.n == 0) {
            if (nsites * 4 >= SITES * 3)
                break; /* keep probes short: count the rest as dropped */
            s->hash = h;
            s->order = nsites;
            s->stack = st;
            s->n[k] = 1;
            s->bytes = nbytes;
            nsites++;
            goto out;
        }
    }
    sites_dropped++;
out:
    pthread_mutex_unlock(&sites_lock);
}

static void count(enum atl_blocking_counter k, size_t nbytes)
{
    __atomic_fetch_add(&counts[k], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&bytes[k], nbytes, __ATOMIC_RELAXED);
    if (k <= ATL_SC_BLOCKING_D2H_LAST) {
        uint64_t n = __atomic_add_fetch(&blocking_n, 1, __ATOMIC_RELAXED);
        if (!trace_on)
            return;
        if (n == trace_at) {
            struct atl_stack st;
            atl_stack_capture(&st);
            atl_log(ATL_ERROR,
                    "d2h-trace: blocking device-to-host copy #%llu kind=%s bytes=%zu "
                    "backtrace:",
                    (unsigned long long)n, counter_names[k], nbytes);
            atl_log_frames(ATL_ERROR, "d2h-trace", &st, 0, ATL_STACK_MAX);
        }
        if (n % 10000 == 0)
            atl_log(ATL_ERROR, "d2h-trace: %llu blocking device-to-host copies so far",
                    (unsigned long long)n);
    }
    if (trace_on)
        site_note(k, nbytes);
}

/* ---- copies --------------------------------------------------------------------- */

enum mt { MT_UNKNOWN, MT_DEVICE, MT_PINNED, MT_PAGEABLE };

/* What a unified address is. The driver answers an error for memory it does
 * not know, which on the host means pageable (the fake driver agrees). */
static enum mt mem_type(CUdeviceptr p)
{
    if (!atl_drv.cuPointerGetAttribute)
        return MT_UNKNOWN;
    unsigned t = 0;
    if (atl_drv.cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS)
        return MT_PAGEABLE;
    if (t == CU_MEMORYTYPE_HOST)
        return MT_PINNED;
    return MT_DEVICE; /* device, array, or managed */
}

/* One end of a 2D/3D copy: host memory may be pinned or pageable, and a
 * unified address may be either kind. */
static enum mt end_type(const struct atl_copy_end *e)
{
    switch (e->type) {
    case CU_MEMORYTYPE_HOST:
        return mem_type((CUdeviceptr)(uintptr_t)e->host);
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY:
        return MT_DEVICE;
    case CU_MEMORYTYPE_UNIFIED:
        return mem_type(e->dev);
    default:
        return MT_UNKNOWN;
    }
}

static int hostlike(enum mt t)
{
    return t == MT_PINNED || t == MT_PAGEABLE;
}

void atl_blocking_copy_post(const struct atl_copy *c, CUresult r)
{
    if (r != CUDA_SUCCESS) {
        atl_fault_check(c->hook, r);
        return;
    }
    enum mt src = MT_UNKNOWN, dst = MT_UNKNOWN;
    size_t n = c->bytes;
    enum atl_blocking_counter sync_kind = ATL_SC_DTOH;
    switch (c->kind) {
    case ATL_CPY_DTOH:
    case ATL_CPY_ATOH:
        src = MT_DEVICE;
        /* a synchronous copy blocks whatever the host memory is */
        dst = c->async ? mem_type((CUdeviceptr)(uintptr_t)c->host_dst) : MT_PINNED;
        break;
    case ATL_CPY_HTOD:
    case ATL_CPY_HTOA:
        if (!c->async)
            return; /* blocks too, but it is not what starves the GPU */
        src = mem_type((CUdeviceptr)(uintptr_t)c->host_src);
        dst = MT_DEVICE;
        break;
    case ATL_CPY_GENERIC:
    case ATL_CPY_PEER:
        sync_kind = c->kind == ATL_CPY_PEER ? ATL_SC_PEER : ATL_SC_MEMCPY;
        src = mem_type(c->src);
        dst = mem_type(c->dst);
        break;
    case ATL_CPY_2D:
    case ATL_CPY_3D:
    case ATL_CPY_3D_PEER:
        if (!c->geom.set)
            return;
        sync_kind = c->kind == ATL_CPY_2D   ? ATL_SC_2D
                    : c->kind == ATL_CPY_3D ? ATL_SC_3D
                                            : ATL_SC_PEER;
        n = c->geom.bytes;
        src = end_type(&c->geom.src);
        dst = end_type(&c->geom.dst);
        break;
    default:
        return; /* device to device, arrays, batches: never block the host */
    }
    if (src == MT_DEVICE && hostlike(dst)) {
        if (!c->async)
            count(sync_kind, n);
        else if (dst == MT_PAGEABLE)
            count(ATL_SC_ASYNC_D2H_PAGEABLE, n);
    } else if (c->async && src == MT_PAGEABLE && dst == MT_DEVICE) {
        count(ATL_SC_ASYNC_H2D_PAGEABLE, n);
    }
}

void atl_blocking_dtoh_light(int hook, size_t n, CUresult r)
{
    if (r != CUDA_SUCCESS)
        atl_fault_check(hook, r);
    else
        count(ATL_SC_DTOH, n); /* what atl_blocking_copy_post counts for one */
}

void atl_blocking_sync_post(const struct atl_sync *s, CUresult r)
{
    static const enum atl_blocking_counter k[] = {
        [ATL_SYNC_CTX] = ATL_SC_SYNC_CTX,
        [ATL_SYNC_STREAM] = ATL_SC_SYNC_STREAM,
        [ATL_SYNC_EVENT] = ATL_SC_SYNC_EVENT,
    };
    count(k[s->kind], 0);
    if (r != CUDA_SUCCESS)
        atl_fault_check(s->hook, r);
    else
        atl_flight_good_sync(s->kind, s->stream, s->launches_before);
}

/* ---- the fault latch ---------------------------------------------------------------- */

static void error_text(CUresult r, const char **name, const char **text, char *buf, unsigned len)
{
    *name = atl_error_name(r, buf, len);
    *text = NULL;
    if (!atl_drv.cuGetErrorString || atl_drv.cuGetErrorString(r, text) != CUDA_SUCCESS || !*text)
        *text = "(no description)";
}

void atl_fault_check(int hook, CUresult r)
{
    if (__builtin_expect(!atl_fault_latch(r), 1))
        return; /* not sticky, or reported once: later calls fail for the same reason */
    atl_note_finding(ATL_FINDING_FAULT, 1);
    char buf[48];
    const char *name, *text;
    error_text(r, &name, &text, buf, sizeof buf);
    struct atl_stack st;
    atl_stack_capture(&st);
    char site[400];
    atl_stack_site(&st, site, sizeof site);
    char all[96];
    atl_log(ATL_ERROR,
            "fault: error=%s code=%d first_seen_by=%s site=%s: %s. The context is lost; the "
            "fault happened in an earlier launch (%s names it); later failures are not repeated",
            name, (int)r, atl_hook_names[hook], site, text,
            atl_hint_setting("ATLAS_DEBUG_SYNC_KERNELS", "1", all, sizeof all));
    atl_log_frames(ATL_ERROR, "fault", &st, 0, 8);
    atl_flight_report("fault");
}

/* ---- debug sync --------------------------------------------------------------------- */

static int debug_reported;

/* The flight recorder's windows of captured launches (open captures
 * themselves: src/capture.h). */
void atl_blocking_capture_post(const struct atl_capture *c, CUresult r)
{
    if (c->begin) {
        if (r == CUDA_SUCCESS)
            atl_flight_capture(c->stream, 1);
        return;
    }
    /* the end of a capture ends it, whatever the result */
    atl_flight_capture(c->stream, 0);
}

/* Synchronises the launch's stream. Success marks the launches so far as
 * good; the first failure latches (this report says it all) and gives its
 * error's name and text, which stay NULL otherwise (reported once). */
static CUresult debug_sync_stream(int hook, CUstream stream, uint64_t *upto_out, const char **ename,
                                  const char **text, char *buf, unsigned len)
{
    *ename = NULL;
    int pt = atl_hook_flags[hook] & ATL_F_PT;
    uint64_t upto = atl_fault_last_launch();
    if (upto_out)
        *upto_out = upto;
    CUresult r = atl_drv.cuStreamSynchronize((pt && !stream) ? CU_STREAM_PER_THREAD : stream);
    if (r == CUDA_SUCCESS) {
        atl_flight_good_sync(ATL_SYNC_STREAM, stream, upto);
        return r;
    }
    if (__atomic_exchange_n(&debug_reported, 1, __ATOMIC_ACQ_REL))
        return r;
    atl_note_finding(ATL_FINDING_FAULT, 1);
    atl_fault_latch(r); /* a sticky one: this report says it all */
    error_text(r, ename, text, buf, len);
    return r;
}

/* With a list of kernel names: 1 when launches of l's kernel synchronise.
 * The answer is kept in the kernel's record (the event carries it), once
 * the kernel has a name to match. */
static int debug_sync_wanted(const struct atl_launch *l)
{
    struct atl_krec *r = l->rec;
    int kept = r ? __atomic_load_n(&r->dsk, __ATOMIC_RELAXED) : 0;
    if (kept)
        return kept == 2;
    const char *m = r ? atl_krec_mangled(r) : NULL;
    unsigned long long which = atl_dsk_matches(dsk_list, m);
    if (m)
        __atomic_store_n(&r->dsk, which ? 2 : 1, __ATOMIC_RELAXED);
    __atomic_fetch_or(&dsk_seen, which, __ATOMIC_RELAXED);
    return which != 0;
}

/* A name of the list that no launched kernel had: debug sync did nothing for it (a misspelt
 * name, or a kernel that never ran), which would otherwise read as "it did not fault". */
static void debug_sync_unseen(void)
{
    if (debug_sync != ATL_DSK_LIST)
        return;
    unsigned long long seen = __atomic_load_n(&dsk_seen, __ATOMIC_RELAXED);
    char names[512], set[600];
    size_t used = 0;
    unsigned total = 0, n = 0, i = 0;
    for (int pass = 0; pass < 2; pass++, i = 0) {
        names[0] = '\0';
        for (const char *p = dsk_list; *p; i++) {
            size_t len = strcspn(p, ",");
            if (!(seen & (1ULL << (i < 63 ? i : 63)))) {
                if (!pass)
                    total++;
                else if (used < sizeof names) {
                    const char *sep = !n ? "" : n + 1 == total ? " or " : ", ";
                    used += (size_t)snprintf(names + used, sizeof names - used, "%s%.*s", sep,
                                             (int)len, p);
                    n++;
                }
            }
            p += len + (p[len] == ',');
        }
    }
    if (!total)
        return;
    char shown[520];
    atl_config_show_value(names, shown, sizeof shown);
    atl_log(ATL_WARN,
            "debug-sync: %s: no kernel named %s was launched (outside graphs), so no launch was "
            "synchronised for %s",
            atl_hint_setting("ATLAS_DEBUG_SYNC_KERNELS", dsk_list, set, sizeof set), shown,
            total == 1 ? "it" : "them");
}

/* Costs one cuStreamIsCapturing, a name look-up and a cuStreamSynchronize per
 * launch: the GPU runs one kernel at a time, which is the point. */
static CUresult debug_sync_after(const struct atl_launch *l)
{
    /* the list first: a launch into a capture still shows its kernel was named */
    if (debug_sync == ATL_DSK_LIST && !debug_sync_wanted(l))
        return CUDA_SUCCESS;
    if (atl_capture_forbids_sync())
        return CUDA_SUCCESS;
    int pt = atl_hook_flags[l->hook] & ATL_F_PT;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult (*is_cap)(CUstream, CUstreamCaptureStatus *) =
        pt ? atl_drv.cuStreamIsCapturing_ptsz : atl_drv.cuStreamIsCapturing;
    if (!is_cap || !atl_drv.cuStreamSynchronize)
        return CUDA_SUCCESS;
    CUresult cr = is_cap(l->stream, &st);
    if (cr == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE)
        return CUDA_SUCCESS;
    if (cr != CUDA_SUCCESS && !atl_fault_is_sticky(cr))
        return CUDA_SUCCESS;
    /* name it now: after a fault the driver stops answering cuFuncGetName */
    char name[256];
    atl_kernel_name_of(l->rec, l->func, name, sizeof name);
    char buf[48];
    const char *ename, *text;
    CUresult r = debug_sync_stream(l->hook, l->stream, NULL, &ename, &text, buf, sizeof buf);
    if (!ename)
        return r;
    atl_log(ATL_ERROR,
            "debug-sync: launch failed: kernel=%s grid=(%u,%u,%u) block=(%u,%u,%u) shmem=%u "
            "stream=%p launch=%llu via=%s error=%s code=%d: %s",
            name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
            l->shmem, (void *)l->stream, (unsigned long long)l->seq, atl_hook_names[l->hook], ename,
            (int)r, text);
    struct atl_stack stk;
    atl_stack_capture(&stk);
    atl_log_frames(ATL_ERROR, "debug-sync", &stk, 0, 12);
    return r;
}

/* Debug sync of a graph launch: the graph is synchronised as a whole, so a
 * fault is inside one of its kernel nodes, which the report lists. With a
 * list of kernel names, every graph launch is synchronised too: a kernel
 * named may be one of its nodes, and graph launches are few. */
CUresult atl_blocking_graph_launch_post(const struct atl_graph_launch *g, CUresult r)
{
    if (r != CUDA_SUCCESS) {
        atl_fault_check(g->hook, r);
        return r;
    }
    if (!debug_sync || atl_capture_forbids_sync() || !atl_drv.cuStreamSynchronize)
        return r;
    char buf[48];
    const char *ename, *text;
    uint64_t upto;
    r = debug_sync_stream(g->hook, g->stream, &upto, &ename, &text, buf, sizeof buf);
    if (!ename)
        return r;
    atl_log(ATL_ERROR,
            "debug-sync: graph launch failed: graph=%p stream=%p launch=%llu via=%s error=%s "
            "code=%d: %s. Graph launches are synchronised as a whole: the fault is inside one of "
            "its kernel nodes",
            (void *)g->exec, (void *)g->stream, (unsigned long long)upto, atl_hook_names[g->hook],
            ename, (int)r, text);
    if (!atl_flight_graph_nodes("debug-sync", g->exec))
        atl_log(ATL_ERROR, "debug-sync:     (its kernel nodes are unknown: instantiated before "
                           "atlastrace was loaded)");
    struct atl_stack stk;
    atl_stack_capture(&stk);
    atl_log_frames(ATL_ERROR, "debug-sync", &stk, 0, 12);
    return r;
}

CUresult atl_blocking_launch_post(const struct atl_launch *l, CUresult r)
{
    if (r != CUDA_SUCCESS) {
        atl_fault_check(l->hook, r);
        return r;
    }
    if (debug_sync)
        return debug_sync_after(l);
    return r;
}

/* ---- exit summary --------------------------------------------------------------------- */

static int by_count(const void *a, const void *b)
{
    const struct site *x = *(const struct site *const *)a, *y = *(const struct site *const *)b;
    uint64_t nx = 0, ny = 0;
    for (int k = 0; k < ATL_SC_COUNT; k++)
        nx += x->n[k], ny += y->n[k];
    if (nx != ny)
        return nx < ny ? 1 : -1;
    /* equal counts: an order that does not hang on the stacks' hashes (the
     * table's order), so the top ten are the same from run to run */
    return x->order < y->order ? 1 : x->order > y->order ? -1 : 0;
}

#define TOP_SITES 10
#define SITE_FRAMES 6

void atl_blocking_report(void)
{
    debug_sync_unseen();
    if (!trace_on)
        return;
    uint64_t c[ATL_SC_COUNT], b[ATL_SC_COUNT], blk = 0, blk_bytes = 0;
    for (int k = 0; k < ATL_SC_COUNT; k++) {
        c[k] = __atomic_load_n(&counts[k], __ATOMIC_RELAXED);
        b[k] = __atomic_load_n(&bytes[k], __ATOMIC_RELAXED);
        if (k <= ATL_SC_BLOCKING_D2H_LAST)
            blk += c[k], blk_bytes += b[k];
    }
    atl_log(ATL_ERROR,
            "d2h-summary: blocking_d2h=%llu bytes=%llu dtoh=%llu memcpy=%llu peer=%llu 2d=%llu "
            "3d=%llu async_d2h_pageable=%llu",
            (unsigned long long)blk, (unsigned long long)blk_bytes, (unsigned long long)c[0],
            (unsigned long long)c[1], (unsigned long long)c[2], (unsigned long long)c[3],
            (unsigned long long)c[4], (unsigned long long)c[5]);
    atl_log(ATL_ERROR,
            "d2h-summary: hidden_syncs=%llu (async copies with pageable host memory, performed "
            "synchronously) d2h_pageable=%llu h2d_pageable=%llu h2d_pageable_bytes=%llu",
            (unsigned long long)(c[5] + c[6]), (unsigned long long)c[5], (unsigned long long)c[6],
            (unsigned long long)b[6]);
    atl_log(ATL_ERROR, "d2h-summary: host_syncs=%llu stream=%llu ctx=%llu event=%llu",
            (unsigned long long)(c[7] + c[8] + c[9]), (unsigned long long)c[7],
            (unsigned long long)c[8], (unsigned long long)c[9]);

    static struct site *order[SITES];
    unsigned n = 0;
    if (atl_exit_lock(&sites_lock, "the d2h-summary call sites") != 0)
        return;
    for (unsigned i = 0; i < SITES; i++)
        if (sites[i].stack.n || sites[i].hash)
            order[n++] = &sites[i];
    qsort(order, n, sizeof order[0], by_count);
    atl_log(ATL_ERROR, "d2h-summary: %u call sites (grouped by stack)%s; top %u by count:", n,
            sites_dropped ? ", table full: some not shown" : "", n < TOP_SITES ? n : TOP_SITES);
    for (unsigned i = 0; i < n && i < TOP_SITES; i++) {
        const struct site *s = order[i];
        char kinds[300] = "", site[400];
        size_t used = 0;
        uint64_t total = 0;
        for (int k = 0; k < ATL_SC_COUNT; k++) {
            if (!s->n[k])
                continue;
            total += s->n[k];
            used += (size_t)snprintf(kinds + used, used < sizeof kinds ? sizeof kinds - used : 0,
                                     "%s%s=%llu", used ? "," : "", counter_names[k],
                                     (unsigned long long)s->n[k]);
            if (used >= sizeof kinds)
                used = sizeof kinds - 1;
        }
        atl_stack_site(&s->stack, site, sizeof site);
        atl_log(ATL_ERROR, "d2h-summary: site=%u count=%llu bytes=%llu kinds=%s%s at %s", i + 1,
                (unsigned long long)total, (unsigned long long)s->bytes, kinds,
                (s->n[ATL_SC_ASYNC_D2H_PAGEABLE] || s->n[ATL_SC_ASYNC_H2D_PAGEABLE])
                    ? " (pageable: hidden sync)"
                    : "",
                site);
        atl_log_frames(ATL_ERROR, "d2h-summary", &s->stack, atl_stack_site_index(&s->stack),
                       SITE_FRAMES);
    }
    pthread_mutex_unlock(&sites_lock);
}

long long atl_blocking_count_named(const char *name)
{
    if (!name)
        return -1;
    if (strcmp(name, "blocking_d2h") == 0)
        return (long long)atl_blocking_d2h();
    for (int k = 0; k < ATL_SC_COUNT; k++)
        if (strcmp(name, counter_names[k]) == 0)
            return (long long)atl_blocking_counter((enum atl_blocking_counter)k);
    return -1;
}
