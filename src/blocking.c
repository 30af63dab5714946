/*
 * The feature "blocking": blocking copies and host syncs.
 *
 * Why: a GPU sits idle while the host waits on device-to-host copies (one
 * prefill trace counted 32,343 of them and 58% idle). Counting is always on;
 * it costs
 * relaxed atomic adds, plus one cuPointerGetAttribute per asynchronous copy
 * with a host side (pageable or pinned decides whether it blocks; shared with
 * the step trace, which asks the same, through struct atl_copy's host_mem) and two per
 * generic cuMemcpy (its direction is only known through unified addressing).
 */
#include "blocking.h"

#include "config.h"
#include "driver.h"
#include "hint.h"
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

static int trace_on;      /* ATLAS_D2H_TRACE given */
static uint64_t trace_at; /* its value: backtrace at this blocking copy */

/* Reads the settings; the events it needs: copies and syncs, always (the
 * counts). */
unsigned atl_blocking_init(void)
{
    int i = atl_config_find("ATLAS_D2H_TRACE");
    trace_on = i >= 0 && atl_cfg.set[i];
    trace_at = atl_cfg.d2h_trace;
    unsigned on = ATL_ON_COPY | ATL_ON_SYNC;
    /* synchronous DtoH copies: counted on the hooks' light path, unless
     * ATLAS_D2H_TRACE wants their call sites */
    on |= trace_on ? ATL_ON_COPY_DTOH : ATL_ON_DTOH_COUNT;
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
static uint64_t copy_sites; /* sites with a blocking copy (not only host syncs) */
static uint64_t sites_dropped;
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;

int atl_blocking_sites(uint64_t *n)
{
    /* the summary says "N blocking copies from M sites": sites of copies only (it counted the
     * host syncs' sites too: "4 blocking copies from 3 sites", one of them a copy) */
    *n = __atomic_load_n(&copy_sites, __ATOMIC_RELAXED);
    return trace_on;
}

/* s's first blocking copy: one more site of copies. Under sites_lock. */
static void copy_site_note(const struct site *s, enum atl_blocking_counter k)
{
    if (k > ATL_SC_BLOCKING_D2H_LAST)
        return;
    uint64_t before = 0;
    for (int i = 0; i <= ATL_SC_BLOCKING_D2H_LAST; i++)
        before += s->n[i];
    if (before == 1) /* the one just counted */
        __atomic_add_fetch(&copy_sites, 1, __ATOMIC_RELAXED);
}

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
            copy_site_note(s, k);
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
            copy_site_note(s, k);
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

/* One end of a 2D/3D copy: host memory may be pinned or pageable, and a
 * unified address may be either kind. */
static enum atl_mem end_type(const struct atl_copy_end *e)
{
    switch (e->type) {
    case CU_MEMORYTYPE_HOST:
        return atl_mem_type((CUdeviceptr)(uintptr_t)e->host);
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY:
        return ATL_MEM_DEVICE;
    case CU_MEMORYTYPE_UNIFIED:
        return atl_mem_type(e->dev);
    default:
        return ATL_MEM_UNKNOWN;
    }
}

static int hostlike(enum atl_mem t)
{
    return t == ATL_MEM_PINNED || t == ATL_MEM_PAGEABLE;
}

void atl_blocking_copy_post(const struct atl_copy *c, CUresult r)
{
    if (r != CUDA_SUCCESS)
        return;
    enum atl_mem src = ATL_MEM_UNKNOWN, dst = ATL_MEM_UNKNOWN;
    size_t n = c->bytes;
    enum atl_blocking_counter sync_kind = ATL_SC_DTOH;
    switch (c->kind) {
    case ATL_CPY_DTOH:
    case ATL_CPY_ATOH:
        src = ATL_MEM_DEVICE;
        /* a synchronous copy blocks whatever the host memory is */
        dst = c->async ? atl_copy_host_mem(c, c->host_dst) : ATL_MEM_PINNED;
        break;
    case ATL_CPY_HTOD:
    case ATL_CPY_HTOA:
        if (!c->async)
            return; /* blocks too, but it is not what starves the GPU */
        src = atl_copy_host_mem(c, c->host_src);
        dst = ATL_MEM_DEVICE;
        break;
    case ATL_CPY_GENERIC:
    case ATL_CPY_PEER:
        sync_kind = c->kind == ATL_CPY_PEER ? ATL_SC_PEER : ATL_SC_MEMCPY;
        src = atl_mem_type(c->src);
        dst = atl_mem_type(c->dst);
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
    if (src == ATL_MEM_DEVICE && hostlike(dst)) {
        if (!c->async)
            count(sync_kind, n);
        else if (dst == ATL_MEM_PAGEABLE)
            count(ATL_SC_ASYNC_D2H_PAGEABLE, n);
    } else if (c->async && src == ATL_MEM_PAGEABLE && dst == ATL_MEM_DEVICE) {
        count(ATL_SC_ASYNC_H2D_PAGEABLE, n);
    }
}

void atl_blocking_dtoh_count(size_t n)
{
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

void atl_blocking_report(int brief)
{
    uint64_t c[ATL_SC_COUNT], b[ATL_SC_COUNT], blk = 0, blk_bytes = 0;
    for (int k = 0; k < ATL_SC_COUNT; k++) {
        c[k] = __atomic_load_n(&counts[k], __ATOMIC_RELAXED);
        b[k] = __atomic_load_n(&bytes[k], __ATOMIC_RELAXED);
        if (k <= ATL_SC_BLOCKING_D2H_LAST)
            blk += c[k], blk_bytes += b[k];
    }
    if (!trace_on) {
        /* the counts are kept anyway (always on); the sites cost a stack a
         * copy, so they are ATLAS_D2H_TRACE's */
        uint64_t hidden = c[ATL_SC_ASYNC_D2H_PAGEABLE] + c[ATL_SC_ASYNC_H2D_PAGEABLE],
                 syncs = c[ATL_SC_SYNC_STREAM] + c[ATL_SC_SYNC_CTX] + c[ATL_SC_SYNC_EVENT];
        char opt[48];
        if ((blk || hidden) && brief)
            atl_log(ATL_WARN,
                    "d2h-summary: %llu blocking device-to-host cop%s (%llu bytes), %llu hidden "
                    "sync%s (async copies with pageable host memory), %llu host sync%s; %s "
                    "lists their call sites",
                    (unsigned long long)blk, blk == 1 ? "y" : "ies", (unsigned long long)blk_bytes,
                    (unsigned long long)hidden, hidden == 1 ? "" : "s", (unsigned long long)syncs,
                    syncs == 1 ? "" : "s", atl_hint_name("ATLAS_D2H_TRACE", opt, sizeof opt));
        return;
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
