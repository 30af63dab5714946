/*
 * The ledger's reports, with red zones or ATLAS_LEAKS (see leaks.h).
 */
#include "leaks.h"

#include "config.h"
#include "driver.h"
#include "findings.h"
#include "hint.h"
#include "ledger.h"
#include "log.h"
#include "services.h"
#include "stack.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int list_on;        /* ATLAS_LEAKS: the leak list at exit */
static uint64_t trace_idx; /* ATLAS_REDZONE_TRACE_IDX */

unsigned atl_leaks_init(void)
{
    /* a failed allocation or a bad free is reported whenever the ledger is
     * kept for memory (red zones, the leak list); the step trace keeps it
     * only to name pointers */
    if (!atl_cfg.redzone && !atl_cfg.leaks)
        return 0;
    list_on = (int)atl_cfg.leaks;
    trace_idx = atl_cfg.redzone_trace_idx;
    atl_ledger_on = 1;
    return ATL_ON_ALLOC; /* allocations, frees, cuMemCreate */
}

#define ALLOC_FAILED_DETAIL 3

static void alloc_failed(const struct atl_alloc *a, CUresult r)
{
    size_t freeb = 0, total = 0;
    char nm[64];
    if (r != CUDA_ERROR_OUT_OF_MEMORY) {
        /* Not a memory problem (a call without a current context, a bad
         * stream or pool): the program sees the error and decides; memory
         * figures would mislead. PyTorch's cudaMallocAsync backend gets
         * CUDA_ERROR_INVALID_CONTEXT so and runs on. */
        atl_log(ATL_INFO,
                "alloc failed: alloc#%llu %s bytes=%zu status=%s (not out of memory; the "
                "driver's error is returned unchanged)",
                (unsigned long long)a->seq, atl_hook_names[a->hook], a->bytes,
                atl_error_name(r, nm, sizeof nm));
        return;
    }
    if (atl_drv.cuMemGetInfo_v2)
        atl_drv.cuMemGetInfo_v2(&freeb, &total);
    size_t live_bytes, nlive = atl_ledger_count(&live_bytes);
    char retried[160] = "";
    if (a->retries)
        snprintf(retried, sizeof retried,
                 " (asked again %u time%s after red zones released the frees they held%s)",
                 a->retries, a->retries == 1 ? "" : "s",
                 a->unpadded ? ", then without its red zone" : "");
    else if (a->unpadded)
        snprintf(retried, sizeof retried, " (asked again without its red zone)");
    atl_log(ATL_WARN,
            "alloc failed: alloc#%llu %s bytes=%zu status=%s device free=%zu total=%zu live=%zu "
            "(%zu bytes, %zu through cuMemCreate)%s (the driver's error is returned unchanged)",
            (unsigned long long)a->seq, atl_hook_names[a->hook], a->bytes,
            atl_error_name(r, nm, sizeof nm), freeb, total, nlive, live_bytes,
            atl_ledger_vmm_bytes(), retried);
    /* The largest live allocations, for the first few failures only: a
     * program that retries smaller sizes fails dozens of times, and the
     * list (a pass over the ledger) rarely changes between tries. */
    static unsigned failures;
    unsigned nth = __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    if (nth > ALLOC_FAILED_DETAIL) {
        if (nth == ALLOC_FAILED_DETAIL + 1)
            atl_log(ATL_WARN,
                    "alloc failed: largest live allocations listed for the first %d "
                    "failures only",
                    ALLOC_FAILED_DETAIL);
        return;
    }
    struct atl_alloc_rec top[5];
    size_t ntop = 0, n = atl_ledger_count(NULL);
    struct atl_alloc_rec *all = n ? malloc(n * sizeof *all) : NULL;
    if (!all)
        return;
    n = atl_ledger_snapshot(all, n);
    for (size_t i = 0; i < n; i++) {
        size_t j = ntop < 5 ? ntop++ : 5;
        if (j == 5 && all[i].bytes <= top[4].bytes)
            continue;
        if (j == 5)
            j = 4;
        while (j > 0 && top[j - 1].bytes < all[i].bytes) {
            top[j] = top[j - 1];
            j--;
        }
        top[j] = all[i];
    }
    free(all);
    for (size_t i = 0; i < ntop; i++) {
        char site[512], where[64];
        atl_stack_site(&top[i].site, site, sizeof site);
        atl_log(ATL_WARN, "alloc failed:   largest live: alloc#%llu %zu bytes %s, allocated at %s",
                (unsigned long long)top[i].seq, top[i].bytes,
                atl_ledger_where(&top[i], where, sizeof where), site);
    }
}

static void trace_alloc(const struct atl_alloc *a)
{
    struct atl_stack st;
    atl_stack_capture(&st);
    char name[64];
    atl_log(ATL_WARN, "redzone: alloc#%llu bytes=%zu ptr=0x%llx backtrace (%s):",
            (unsigned long long)a->seq, a->bytes, a->dptr ? (unsigned long long)*a->dptr : 0ULL,
            atl_hint_name("ATLAS_REDZONE_TRACE_IDX", name, sizeof name));
    atl_log_frames(ATL_WARN, "redzone", &st, 0, ATL_STACK_MAX);
}

void atl_leaks_alloc_post(const struct atl_alloc *a, CUresult r)
{
    if (r != CUDA_SUCCESS) {
        /* status 4: the driver is being torn down, not out of memory */
        if (r != CUDA_ERROR_DEINITIALIZED)
            alloc_failed(a, r);
        return;
    }
    if (a->dptr && trace_idx && a->seq == trace_idx)
        trace_alloc(a);
}

void atl_leaks_vmm_post(const struct atl_vmm *v, CUresult r)
{
    if (v->op != ATL_VMM_CREATE || r == CUDA_SUCCESS)
        return;
    /* the failed-allocation report, VMM bytes among the live ones */
    struct atl_alloc a = {.hook = v->hook,
                          .kind = ATL_ALLOC_VMM,
                          .bytes = v->bytes,
                          .padded = v->bytes,
                          .seq = v->seq};
    atl_leaks_alloc_post(&a, r);
}

/* Recently freed pointers, to tell a double free from a stray pointer. */
#define FREED 64
static pthread_mutex_t freed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    CUdeviceptr ptr;
    uint64_t seq;
} freed[FREED];
static unsigned freed_next;

void atl_leaks_free_pre(const struct atl_free *f)
{
    if (!f->known)
        return;
    pthread_mutex_lock(&freed_lock);
    freed[freed_next % FREED].ptr = f->ptr;
    freed[freed_next % FREED].seq = f->rec.seq;
    freed_next++;
    pthread_mutex_unlock(&freed_lock);
}

void atl_leaks_free_post(const struct atl_free *f, CUresult r)
{
    char nm[64];
    if (!f->ptr)
        return;
    if (f->known) {
        /* status 4: the driver is being torn down and has reclaimed it */
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED) {
            atl_log(ATL_WARN, "free failed: alloc#%llu at 0x%llx: %s; it stays on the ledger",
                    (unsigned long long)f->rec.seq, (unsigned long long)f->ptr,
                    atl_error_name(r, nm, sizeof nm));
            atl_ledger_add(&f->rec);
        }
        return;
    }
    if (r == CUDA_ERROR_DEINITIALIZED)
        return;
    uint64_t was = 0;
    pthread_mutex_lock(&freed_lock);
    for (unsigned i = 0; i < FREED; i++)
        if (freed[i].ptr == f->ptr && freed[i].seq > was)
            was = freed[i].seq; /* the latest allocation at that address */
    pthread_mutex_unlock(&freed_lock);
    struct atl_alloc_rec in;
    if (was)
        atl_log(ATL_WARN,
                "free of unknown pointer: 0x%llx (alloc#%llu, already freed: a double "
                "free) status=%s (passed through)",
                (unsigned long long)f->ptr, (unsigned long long)was,
                atl_error_name(r, nm, sizeof nm));
    else if (atl_ledger_find(f->ptr, &in))
        /* a pointer into a live allocation, not its start: the driver frees only starts */
        atl_log(ATL_WARN,
                "free of a pointer inside alloc#%llu: 0x%llx is +0x%llx of it (%zu bytes at "
                "0x%llx), not its start; status=%s (passed through; alloc#%llu stays live)",
                (unsigned long long)in.seq, (unsigned long long)f->ptr,
                (unsigned long long)(f->ptr - in.ptr), in.bytes, (unsigned long long)in.ptr,
                atl_error_name(r, nm, sizeof nm), (unsigned long long)in.seq);
    else
        atl_log(r == CUDA_SUCCESS ? ATL_INFO : ATL_WARN,
                "free of unknown pointer: 0x%llx (never allocated through a hooked call) "
                "status=%s (passed through)",
                (unsigned long long)f->ptr, atl_error_name(r, nm, sizeof nm));
}

/* Allocations never freed from one call stack: one finding, one line. */
struct leak_group {
    uint64_t hash;
    size_t n, bytes, min, max;
    size_t first; /* index of its oldest allocation in the snapshot */
    uint64_t last_seq;
};

static int by_stack(const void *a, const void *b)
{
    const struct atl_alloc_rec *x = a, *y = b;
    uint64_t hx = atl_stack_hash(&x->site), hy = atl_stack_hash(&y->site);
    if (hx != hy)
        return hx < hy ? -1 : 1;
    if (x->site.n != y->site.n)
        return x->site.n - y->site.n;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int same_stack(const struct atl_stack *a, const struct atl_stack *b)
{
    return a->n == b->n && memcmp(a->pc, b->pc, (size_t)a->n * sizeof a->pc[0]) == 0;
}

static int by_bytes_desc(const void *a, const void *b)
{
    const struct leak_group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return (x->first > y->first) - (x->first < y->first);
}

/* The line of group g (all[g->first] its oldest allocation). */
static void group_line(const struct leak_group *g, const struct atl_alloc_rec *all, char *line,
                       size_t len)
{
    const struct atl_alloc_rec *r = &all[g->first];
    char site[512], where[64];
    atl_stack_site(&r->site, site, sizeof site);
    if (g->n == 1) {
        snprintf(line, len, "leaks:   alloc#%llu %zu bytes %s, allocated at %s",
                 (unsigned long long)r->seq, r->bytes, atl_ledger_where(r, where, sizeof where),
                 site);
        return;
    }
    char sizes[64];
    if (g->min == g->max)
        snprintf(sizes, sizeof sizes, "%zu bytes each", g->min);
    else
        snprintf(sizes, sizeof sizes, "%zu to %zu bytes", g->min, g->max);
    snprintf(line, len,
             "leaks:   %zu allocations, %zu bytes (alloc#%llu to alloc#%llu, %s), allocated at %s",
             g->n, g->bytes, (unsigned long long)r->seq, (unsigned long long)g->last_seq, sizes,
             site);
}

static uint64_t found_allocs, found_bytes; /* what atl_leaks_exit reported, unsuppressed */

void atl_leaks_found(uint64_t *allocs, uint64_t *bytes)
{
    *allocs = found_allocs;
    *bytes = found_bytes;
}

void atl_leaks_exit(void)
{
    if (!list_on)
        return;
    uint64_t hits, misses;
    atl_stack_cache_counts(&hits, &misses);
    if (hits + misses)
        atl_log(ATL_INFO, "leaks: %llu call stacks taken, %llu of them unwound (the rest reused)",
                (unsigned long long)(hits + misses), (unsigned long long)misses);
    size_t n = atl_ledger_count(NULL);
    if (n == 0) {
        atl_log(ATL_WARN, "leaks: none: every driver allocation was freed");
        return;
    }
    struct atl_alloc_rec *all = malloc(n * sizeof *all);
    struct leak_group *g = malloc(n * sizeof *g);
    struct atl_find *f = malloc(n * sizeof *f);
    if (!all || !g || !f) {
        free(all), free(g), free(f);
        atl_log_once_oom("the leak list");
        return;
    }
    n = atl_ledger_snapshot(all, n);
    /* grouped by the whole call stack (as valgrind's loss records): 1,000
     * allocations made in one loop are one finding */
    qsort(all, n, sizeof *all, by_stack);
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ng || !same_stack(&all[g[ng - 1].first].site, &all[i].site)) {
            g[ng++] = (struct leak_group){.n = 0, .min = all[i].bytes, .first = i};
        }
        struct leak_group *c = &g[ng - 1];
        c->n++;
        c->bytes += all[i].bytes;
        c->min = all[i].bytes < c->min ? all[i].bytes : c->min;
        c->max = all[i].bytes > c->max ? all[i].bytes : c->max;
        c->last_seq = all[i].seq;
    }
    qsort(g, ng, sizeof *g, by_bytes_desc);
    /* each group through the findings sink first: the headline counts what
     * is not suppressed */
    size_t kept = 0, kept_n = 0, kept_bytes = 0, quiet = 0;
    for (size_t i = 0; i < ng; i++) {
        char line[900];
        group_line(&g[i], all, line, sizeof line);
        f[i] = (struct atl_find){.kind = ATL_FINDING_LEAK,
                                 .message = line,
                                 .alloc = all[g[i].first].seq,
                                 .bytes = g[i].bytes,
                                 .has_bytes = 1,
                                 .count = g[i].n,
                                 .stack = &all[g[i].first].site};
        atl_find_open(&f[i]);
        /* kept for printing below: the lines of those printed only */
        f[i].message = f[i].shown ? strdup(line) : NULL;
        f[i].shown &= f[i].message != NULL;
        if (f[i].suppressed) {
            quiet += g[i].n;
            continue;
        }
        kept++, kept_n += g[i].n, kept_bytes += g[i].bytes;
    }
    found_allocs = kept_n, found_bytes = kept_bytes;
    char sup[64] = "";
    if (quiet)
        snprintf(sup, sizeof sup, "; %zu more suppressed", quiet);
    /* findings: said at ATLAS_LOG_LEVEL=error too (atlas-trace -q) */
    if (!kept)
        atl_log(ATL_WARN, "leaks: none but suppressed ones (%zu allocation%s never freed)", quiet,
                quiet == 1 ? "" : "s");
    else
        atl_log(ATL_ERROR,
                "leaks: %zu allocation%s never freed, %zu bytes in total, from %zu call stack%s "
                "(largest first)%s:",
                kept_n, kept_n == 1 ? "" : "s", kept_bytes, kept, kept == 1 ? "" : "s", sup);
    for (size_t i = 0; i < ng; i++) {
        if (!f[i].shown)
            continue;
        atl_log(ATL_ERROR, "%s", f[i].message);
        atl_find_close(&f[i]);
        free((char *)f[i].message);
    }
    free(f);
    free(g);
    free(all);
}
