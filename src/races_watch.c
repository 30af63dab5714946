/*
 * Watching what a launch writes: see src/races_watch.h.
 *
 * A slot is a pinned buffer (two halves: before and after), an event and the
 * regions. Its life: free -> before (the first copies enqueued) -> after (the
 * launch, the second copies and the event enqueued) -> free once the result
 * is read. A watch whose launch failed, or whose copies were refused, is
 * dropped: the slot comes back once its event says the copies already
 * enqueued are done (they write into its buffer). One whose event cannot be
 * recorded is never used again (its buffer may still be written).
 */
#define _GNU_SOURCE
#include "races_watch.h"

#include "driver.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

enum { W_FREE, W_BEFORE, W_AFTER, W_DROP, W_DEAD };

struct atl_watch {
    int state;
    CUcontext ctx; /* the event's */
    CUevent ev;
    unsigned char *buf; /* 2 * ATL_WATCH_BYTES, pinned, for every context */
    unsigned n;
    struct atl_wregion r[ATL_WATCH_REGIONS];
};

static struct atl_watch slots[ATL_WATCH_SLOTS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int have_driver(void)
{
    return atl_drv.cuMemHostAlloc && atl_drv.cuMemcpyDtoHAsync_v2 && atl_drv.cuEventQuery &&
           atl_drv.cuEventRecord && atl_drv.cuEventCreate && atl_drv.cuEventDestroy_v2 &&
           atl_drv.cuCtxGetCurrent;
}

/* A dropped slot whose copies are done is free again. Under mu. */
static void reclaim(struct atl_watch *w)
{
    if (w->state != W_DROP)
        return;
    CUresult q = atl_drv.cuEventQuery(w->ev);
    if (q == CUDA_SUCCESS)
        w->state = W_FREE;
    else if (q != CUDA_ERROR_NOT_READY)
        w->state = W_DEAD; /* the context failed: its copies' fate unknown */
}

/* The slot given up: free once what it enqueued is done. */
static void drop(struct atl_watch *w, CUstream s)
{
    int st = atl_drv.cuEventRecord(w->ev, s) == CUDA_SUCCESS ? W_DROP : W_DEAD;
    pthread_mutex_lock(&mu);
    w->state = st;
    pthread_mutex_unlock(&mu);
}

struct atl_watch *atl_watch_begin(CUstream s, const struct atl_wregion *r, unsigned n)
{
    if (!n || n > ATL_WATCH_REGIONS || !have_driver())
        return NULL;
    size_t total = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!r[i].len || r[i].len > ATL_WATCH_REGION)
            return NULL;
        total += r[i].len;
    }
    if (total > ATL_WATCH_BYTES)
        return NULL;
    struct atl_watch *w = NULL;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < ATL_WATCH_SLOTS && !w; i++) {
        reclaim(&slots[i]);
        if (slots[i].state == W_FREE)
            w = &slots[i], w->state = W_BEFORE;
    }
    pthread_mutex_unlock(&mu);
    if (!w)
        return NULL;
    CUcontext ctx = NULL;
    if (atl_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
        goto give_back;
    if (!w->buf) {
        void *p = NULL;
        if (atl_drv.cuMemHostAlloc(&p, 2 * (size_t)ATL_WATCH_BYTES, CU_MEMHOSTALLOC_PORTABLE) !=
                CUDA_SUCCESS ||
            !p)
            goto give_back;
        w->buf = p;
    }
    if (w->ev && w->ctx != ctx) {
        atl_drv.cuEventDestroy_v2(w->ev); /* the slot is free: nothing waits on it */
        w->ev = NULL;
    }
    if (!w->ev) {
        if (atl_drv.cuEventCreate(&w->ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
            w->ev = NULL;
            goto give_back;
        }
        w->ctx = ctx;
    }
    w->n = n;
    memcpy(w->r, r, n * sizeof *r);
    size_t off = 0, copied = 0;
    for (unsigned i = 0; i < n; i++) {
        /* never past what the driver says the allocation is: a copy of memory not mapped
         * could fault the context (a region the driver does not know is left out) */
        CUdeviceptr base = 0;
        size_t size = 0;
        if (atl_drv.cuMemGetAddressRange_v2 &&
            (atl_drv.cuMemGetAddressRange_v2(&base, &size, (CUdeviceptr)r[i].dptr) !=
                 CUDA_SUCCESS ||
             r[i].dptr < base || r[i].dptr >= base + size))
            w->r[i].len = 0;
        else if (atl_drv.cuMemGetAddressRange_v2 && r[i].dptr + r[i].len > base + size)
            w->r[i].len = (uint32_t)(base + size - r[i].dptr);
        if (w->r[i].len &&
            atl_drv.cuMemcpyDtoHAsync_v2(w->buf + off, (CUdeviceptr)r[i].dptr, w->r[i].len, s) !=
                CUDA_SUCCESS) {
            drop(w, s);
            return NULL;
        }
        off += w->r[i].len, copied += w->r[i].len;
    }
    if (!copied)
        goto give_back;
    return w;
give_back:
    pthread_mutex_lock(&mu);
    w->state = W_FREE;
    pthread_mutex_unlock(&mu);
    return NULL;
}

int atl_watch_after(struct atl_watch *w, CUstream s, int ok)
{
    if (!ok) {
        drop(w, s);
        return -1;
    }
    size_t off = 0;
    for (unsigned i = 0; i < w->n; i++) {
        if (w->r[i].len &&
            atl_drv.cuMemcpyDtoHAsync_v2(w->buf + ATL_WATCH_BYTES + off,
                                         (CUdeviceptr)w->r[i].dptr, w->r[i].len,
                                         s) != CUDA_SUCCESS) {
            drop(w, s);
            return -1;
        }
        off += w->r[i].len;
    }
    if (atl_drv.cuEventRecord(w->ev, s) != CUDA_SUCCESS) {
        pthread_mutex_lock(&mu);
        w->state = W_DEAD;
        pthread_mutex_unlock(&mu);
        return -1;
    }
    pthread_mutex_lock(&mu);
    w->state = W_AFTER;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* The first and one past the last byte where a and b differ; lo == hi: none. */
static void changed(const unsigned char *a, const unsigned char *b, uint32_t n, uint32_t *lo,
                    uint32_t *hi)
{
    uint32_t i = 0, j = n;
    while (i + 8 <= n && memcmp(a + i, b + i, 8) == 0)
        i += 8;
    while (i < n && a[i] == b[i])
        i++;
    if (i == n) {
        *lo = *hi = 0;
        return;
    }
    while (j >= i + 8 && memcmp(a + j - 8, b + j - 8, 8) == 0)
        j -= 8;
    while (j > i && a[j - 1] == b[j - 1])
        j--;
    *lo = i, *hi = j;
}

int atl_watch_result(struct atl_watch *w, unsigned wait_us, struct atl_wregion *r, unsigned n)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        CUresult q = atl_drv.cuEventQuery(w->ev);
        if (q == CUDA_SUCCESS)
            break;
        if (q != CUDA_ERROR_NOT_READY) {
            pthread_mutex_lock(&mu);
            w->state = W_DEAD;
            pthread_mutex_unlock(&mu);
            return -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        uint64_t us = (uint64_t)(t.tv_sec - t0.tv_sec) * 1000000u +
                      (uint64_t)((t.tv_nsec - t0.tv_nsec) / 1000);
        if (us >= wait_us)
            return 0;
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
    }
    size_t off = 0;
    for (unsigned i = 0; i < w->n && i < n; i++) {
        r[i] = w->r[i];
        changed(w->buf + off, w->buf + ATL_WATCH_BYTES + off, w->r[i].len, &r[i].lo, &r[i].hi);
        off += w->r[i].len;
    }
    pthread_mutex_lock(&mu);
    w->state = W_FREE;
    pthread_mutex_unlock(&mu);
    return 1;
}

void atl_watch_reset(void)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < ATL_WATCH_SLOTS; i++) {
        struct atl_watch *w = &slots[i];
        if (w->state == W_BEFORE)
            continue; /* another thread's launch, between its pre and post */
        reclaim(w);
        if (w->state == W_FREE) {
            if (w->buf && atl_drv.cuMemFreeHost)
                atl_drv.cuMemFreeHost(w->buf);
            if (w->ev)
                atl_drv.cuEventDestroy_v2(w->ev);
        }
        /* the others' copies may still be under way: their memory goes with the context */
        w->buf = NULL, w->ev = NULL, w->ctx = NULL;
        w->state = W_FREE;
    }
    pthread_mutex_unlock(&mu);
}

void atl_watch_exit(void)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < ATL_WATCH_SLOTS; i++) {
        struct atl_watch *w = &slots[i];
        reclaim(w);
        if (w->state != W_FREE)
            continue; /* still being written: left as it is */
        if (w->buf && atl_drv.cuMemFreeHost)
            atl_drv.cuMemFreeHost(w->buf);
        if (w->ev)
            atl_drv.cuEventDestroy_v2(w->ev);
        w->buf = NULL, w->ev = NULL;
        w->state = W_DEAD; /* no more watches after exit */
    }
    pthread_mutex_unlock(&mu);
}
