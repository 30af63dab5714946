/*
 * The ledger's reports, with red zones or ATLAS_LEAKS (see leaks.h).
 */
#include "leaks.h"

#include "config.h"
#include "driver.h"
#include "ledger.h"
#include "log.h"
#include "services.h"
#include "stack.h"

#include <pthread.h>
#include <stdlib.h>

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
    atl_log(ATL_WARN,
            "alloc failed: alloc#%llu %s bytes=%zu status=%s device free=%zu total=%zu live=%zu "
            "(%zu bytes, %zu through cuMemCreate) (the driver's error is returned unchanged)",
            (unsigned long long)a->seq, atl_hook_names[a->hook], a->bytes,
            atl_error_name(r, nm, sizeof nm), freeb, total, nlive, live_bytes,
            atl_ledger_vmm_bytes());
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
    atl_log(ATL_WARN,
            "redzone: alloc#%llu bytes=%zu ptr=0x%llx backtrace (ATLAS_REDZONE_TRACE_IDX):",
            (unsigned long long)a->seq, a->bytes, a->dptr ? (unsigned long long)*a->dptr : 0ULL);
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
    if (was)
        atl_log(ATL_WARN,
                "free of unknown pointer: 0x%llx (alloc#%llu, already freed: a double "
                "free) status=%s (passed through)",
                (unsigned long long)f->ptr, (unsigned long long)was,
                atl_error_name(r, nm, sizeof nm));
    else
        atl_log(r == CUDA_SUCCESS ? ATL_INFO : ATL_WARN,
                "free of unknown pointer: 0x%llx (never allocated through a hooked call) "
                "status=%s (passed through)",
                (unsigned long long)f->ptr, atl_error_name(r, nm, sizeof nm));
}

static int by_size_desc(const void *a, const void *b)
{
    const struct atl_alloc_rec *x = a, *y = b;
    return x->bytes < y->bytes   ? 1
           : x->bytes > y->bytes ? -1
                                 : (x->seq > y->seq) - (x->seq < y->seq);
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
    size_t total = 0, n = atl_ledger_count(&total);
    if (n == 0) {
        atl_log(ATL_WARN, "leaks: none: every driver allocation was freed");
        return;
    }
    atl_note_finding(ATL_FINDING_LEAK, n);
    struct atl_alloc_rec *all = malloc(n * sizeof *all);
    if (!all) {
        atl_log_once_oom("the leak list");
        return;
    }
    n = atl_ledger_snapshot(all, n);
    qsort(all, n, sizeof *all, by_size_desc);
    /* findings: said at ATLAS_LOG_LEVEL=error too (atlas-trace -q) */
    atl_log(ATL_ERROR,
            "leaks: %zu allocation%s never freed, %zu bytes in total (largest first):", n,
            n == 1 ? "" : "s", total);
    for (size_t i = 0; i < n && i < 100; i++) {
        char site[512], where[64];
        atl_stack_site(&all[i].site, site, sizeof site);
        atl_log(ATL_ERROR, "leaks:   alloc#%llu %zu bytes %s, allocated at %s",
                (unsigned long long)all[i].seq, all[i].bytes,
                atl_ledger_where(&all[i], where, sizeof where), site);
    }
    if (n > 100)
        atl_log(ATL_ERROR, "leaks:   ... and %zu more", n - 100);
    free(all);
}
