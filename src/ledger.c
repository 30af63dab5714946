#include "ledger.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A sorted array of live allocations: lookups by address are a binary
 * search; inserts and removals move the tail. Programs that call the driver
 * allocator often (PyTorch without its caching allocator) have thousands of
 * live allocations, not millions, and the array stays cache-friendly. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct atl_alloc_rec *live;
static size_t nlive, caplive;
static size_t live_bytes;
static uint64_t seq;

uint64_t atl_ledger_next_seq(void)
{
    return __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
}

/* Index of the first record with ptr >= p. */
static size_t lower_bound(CUdeviceptr p)
{
    size_t lo = 0, hi = nlive;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (live[mid].ptr < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int atl_ledger_add(const struct atl_alloc_rec *r)
{
    pthread_mutex_lock(&lock);
    if (nlive == caplive) {
        size_t ncap = caplive ? caplive * 2 : 64;
        struct atl_alloc_rec *n = realloc(live, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&lock);
            return -1;
        }
        live = n;
        caplive = ncap;
    }
    size_t i = lower_bound(r->ptr);
    if (i < nlive && live[i].ptr == r->ptr) {
        /* the driver handed out an address we think is live: the free went
         * past us (a path we do not hook); the new record wins */
        live_bytes -= live[i].bytes;
        live[i] = *r;
    } else {
        memmove(&live[i + 1], &live[i], (nlive - i) * sizeof *live);
        live[i] = *r;
        nlive++;
    }
    live_bytes += r->bytes;
    pthread_mutex_unlock(&lock);
    return 0;
}

int atl_ledger_remove(CUdeviceptr ptr, struct atl_alloc_rec *out)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    size_t i = lower_bound(ptr);
    if (i < nlive && live[i].ptr == ptr) {
        if (out)
            *out = live[i];
        live_bytes -= live[i].bytes;
        memmove(&live[i], &live[i + 1], (nlive - i - 1) * sizeof *live);
        nlive--;
        found = 1;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

int atl_ledger_find(CUdeviceptr addr, struct atl_alloc_rec *out)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    size_t i = lower_bound(addr + 1); /* first with ptr > addr */
    if (i > 0) {
        const struct atl_alloc_rec *r = &live[i - 1];
        size_t span = r->padded > r->bytes ? r->padded : r->bytes;
        if (addr - r->ptr < (span ? span : 1)) {
            if (out)
                *out = *r;
            found = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

size_t atl_ledger_count(size_t *bytes)
{
    pthread_mutex_lock(&lock);
    size_t n = nlive;
    if (bytes)
        *bytes = live_bytes;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t atl_ledger_snapshot(struct atl_alloc_rec *out, size_t max)
{
    pthread_mutex_lock(&lock);
    size_t n = nlive < max ? nlive : max;
    memcpy(out, live, n * sizeof *out);
    pthread_mutex_unlock(&lock);
    return n;
}

void atl_ledger_reset(void)
{
    pthread_mutex_lock(&lock);
    nlive = 0;
    live_bytes = 0;
    seq = 0;
    pthread_mutex_unlock(&lock);
}
