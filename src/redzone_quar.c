/*
 * Red zones' frees (src/redzone.c says what the feature does): a guarded
 * allocation's free is held back with others on the legacy stream and
 * checked in a batch, or goes into the quarantine (its bytes poisoned by
 * the check queued before it, its real free later), or is checked and
 * passed on to the driver; and what an allocation that fails for memory
 * releases of all that. The checks themselves are src/redzone_check.c's.
 */
#define _GNU_SOURCE
#include "redzone.h"

#include "addrmap.h"
#include "capture.h"
#include "config.h"
#include "driver.h"
#include "fault.h"
#include "log.h"
#include "redzone_internal.h"
#include "services.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t quarantined_total;

/* The stream a free names, as the library's own calls (never the _ptsz
 * forms) must name it. */
static CUstream own_stream(const struct atl_free *f)
{
    return f->async ? atl_own_stream(f->stream, f->hook) : NULL;
}

/* ---- the quarantine ----------------------------------------------------------------
 * A kernel that writes through a pointer after its allocation was freed
 * (most often one still running on another stream: a tensor freed without
 * record_stream) corrupts whatever the pool hands that memory to next,
 * silently. A guarded allocation's free is therefore not passed to the
 * driver at once: the check queued before it also fills the freed bytes
 * with the poison, and the allocation waits in a FIFO, its whole span a
 * watched zone (so the full checks and, in launch mode, the check after a
 * launch whose parameter points at its base, read it too), until the
 * quarantine holds more than ATLAS_REDZONE_QUARANTINE_MB (or QUAR_MAX
 * entries): then the oldest leave, eight at a time (a check's zones), each batch checked
 * whole by one queued check on the legacy stream, then really freed. A
 * write found then is a write after free. Reads after free change nothing
 * and stay invisible.
 *
 * Stream order: the poison is queued on the free's stream. A batch leaves on
 * the legacy stream, which follows the legacy stream's own work and that of
 * blocking streams, not that of a non-blocking stream or a per-thread
 * default stream: an entry freed on one of those carries an event recorded
 * after its poison, which the legacy stream waits for first. The stream
 * itself may be gone by then; an event outlives it.
 *
 * What the program sees: a free that returns success at once (cuMemFree
 * also waits for the device first, as the driver's does, and an error of
 * the program's from that wait is answered by the driver's own free
 * instead); its pool or the device holding the memory a while longer. An
 * allocation that fails for memory releases the whole quarantine and is
 * retried (atl_redzone_release_held), so the quarantine never makes an
 * allocation fail that would succeed natively. A second free of a pointer
 * in the quarantine releases it first, and the driver answers that free as
 * it would have. Not quarantined: frees while a capture is active, managed
 * memory, allocations bigger than the bound, or when the check kernel
 * cannot be loaded. Everything under scan_lock. */
#define QUAR_MAX 16384
static struct qent **qring; /* entries oldest first: [q_tail, q_head) mod qcap */
static size_t qcap, q_head, q_tail, q_bytes;
static struct atl_addrmap q_at; /* base -> struct qent * of the entries in the quarantine */
/* events let go, to be recorded again in their context (an event belongs
 * to the context it was made in) */
static struct {
    CUevent e;
    CUcontext ctx;
} ev_free[64];
static unsigned nev_free;

static size_t q_count(void)
{
    return q_head - q_tail;
}

const struct qent *atl_rz_quar_find(CUdeviceptr base, uint64_t seq)
{
    size_t v;
    if (!atl_addrmap_get(&q_at, base, &v))
        return NULL;
    const struct qent *q = (const struct qent *)(uintptr_t)v;
    return q->z.seq == seq ? q : NULL;
}

static CUevent event_get(CUcontext ctx)
{
    for (unsigned i = nev_free; i-- > 0;)
        if (ev_free[i].ctx == ctx) {
            CUevent e = ev_free[i].e;
            ev_free[i] = ev_free[--nev_free];
            return e;
        }
    CUevent e = NULL;
    if (!atl_drv.cuEventCreate ||
        atl_drv.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return NULL;
    return e;
}

static void event_put(CUevent e, CUcontext ctx)
{
    if (!e)
        return;
    if (nev_free < sizeof ev_free / sizeof ev_free[0]) {
        ev_free[nev_free].e = e;
        ev_free[nev_free++].ctx = ctx;
    } else if (atl_drv.cuEventDestroy_v2) {
        atl_drv.cuEventDestroy_v2(e);
    }
}

/* Really frees q's allocation (in its context, which is current). */
static void q_free_now(const struct qent *q)
{
    CUresult r = q->sync                  ? atl_drv.cuMemFree_v2(q->ptr)
                 : atl_drv.cuMemFreeAsync ? atl_drv.cuMemFreeAsync(q->ptr, NULL)
                                          : atl_drv.cuMemFree_v2(q->ptr);
    atl_own_result(r);
    static int said;
    char nm[64];
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED &&
        !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        atl_log(ATL_INFO, "redzone: the free of alloc#%llu leaving the quarantine failed (%s)",
                (unsigned long long)q->z.seq, atl_error_name(r, nm, sizeof nm));
}

/* Takes out the oldest entries of one context (up to a check's zones; with
 * `all` unset, only when the quarantine is over its bound), checks each
 * whole on the legacy stream and frees it. 0 when some left. */
static int q_release_batch_locked(int all)
{
    if (!q_count() || atl_capture_any())
        return -1;
    struct pending p;
    memset(&p.qe, 0, sizeof p.qe);
    p.how = (struct finder){.by = BY_RELEASE, .upto = atl_fault_last_launch(), .stream = NULL};
    p.nz = p.nfill = 0;
    p.has_site = 1;
    CUcontext ctx = qring[q_tail % qcap]->ctx;
    /* a batch, once the quarantine is over its bound, fills all its check's zones: one check
     * per eight frees in a steady loop, not one per free (on the fake: 36 checks per 32-free
     * step, 8 after; the H200's PyTorch steps paid 15-20% for the quarantine) */
    int over = all || q_bytes > atl_rz_opt->qmax || q_count() > QUAR_MAX;
    while (over && q_count() && p.nz < ATL_RZ_SLOT_ZONES && qring[q_tail % qcap]->ctx == ctx) {
        struct qent *q = qring[q_tail++ % qcap];
        struct zone z;
        atl_addrmap_del(&q_at, q->z.base);
        q_bytes -= q->z.len;
        if (!atl_rz_zone_remove(q->z.base, 1, &z))
            z = q->z;
        z.watched = 1; /* reported already: atl_rz_report says nothing again */
        p.z[p.nz] = z;
        p.arg[p.nz] = p.off[p.nz] = 0;
        atl_rz_site_copy(&p.site[p.nz], &q->alloc_site);
        p.upto[p.nz] = p.how.upto;
        p.qe[p.nz++] = q;
    }
    CUcontext cur = NULL;
    int other = atl_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != ctx;
    int gone = other && atl_drv.cuCtxSetCurrent(ctx) != CUDA_SUCCESS;
    if (!gone) {
        for (unsigned i = 0; i < p.nz; i++)
            if (p.qe[i]->ev && atl_drv.cuStreamWaitEvent)
                atl_own_result(atl_drv.cuStreamWaitEvent(NULL, p.qe[i]->ev, 0));
        struct qent *mine[ATL_RZ_SLOT_ZONES];
        memcpy(mine, p.qe, sizeof mine);
        int queued = atl_rz_free_check_locked(&p, NULL) == 0;
        for (unsigned i = 0; i < p.nz; i++) {
            /* poisoned whole at its free, checked before this free in stream order */
            atl_rz_rel_add(mine[i]->z.base, mine[i]->z.start + mine[i]->z.len);
            q_free_now(mine[i]);
            event_put(mine[i]->ev, mine[i]->ctx);
            mine[i]->ev = NULL;
            if (!queued)
                free(mine[i]); /* checked with copies: the slot does not own it */
        }
    } else {
        /* a context that is gone took its memory with it: nothing to free */
        for (unsigned i = 0; i < p.nz; i++)
            free(p.qe[i]);
    }
    if (other && !gone)
        atl_drv.cuCtxSetCurrent(cur);
    return 0;
}

/* Releases the oldest entries until the quarantine is within its bound. */
static void q_trim_locked(void)
{
    while ((q_bytes > atl_rz_opt->qmax || q_count() > QUAR_MAX) && q_release_batch_locked(0) == 0)
        ;
}

void atl_rz_quar_flush_locked(void)
{
    while (q_count() && q_release_batch_locked(1) == 0)
        ;
}

/* Adds a freed allocation, its bytes already poisoned (queued). */
static void q_add_locked(struct qent *q)
{
    if (q_count() == qcap) {
        size_t ncap = qcap ? qcap * 2 : 256;
        struct qent **n = malloc(ncap * sizeof *n);
        if (!n) {
            atl_log_once_oom("the red zones' quarantine");
            q_free_now(q);
            event_put(q->ev, q->ctx);
            free(q);
            return;
        }
        for (size_t i = 0; i < q_count(); i++)
            n[i] = qring[(q_tail + i) % qcap];
        free(qring);
        q_head -= q_tail;
        q_tail = 0;
        qring = n;
        qcap = ncap;
    }
    struct zone z = q->z;
    atl_rz_zone_add(&z);
    atl_addrmap_put(&q_at, q->z.base, (size_t)(uintptr_t)q);
    qring[q_head++ % qcap] = q;
    q_bytes += q->z.len;
    quarantined_total++;
    q_trim_locked();
}

/* The quarantine entry made for zone z (a live zone just removed) of free f:
 * its whole span, where it was made and freed; NULL when it does not go
 * into the quarantine. */
static struct qent *q_entry(const struct atl_free *f, const struct zone *z)
{
    size_t qmax = atl_rz_opt->qmax;
    if (!qmax || f->rec.kind == ATL_ALLOC_MANAGED || z->bytes + z->len > qmax ||
        z->bytes + z->len > UINT32_MAX)
        return NULL;
    struct qent *q = malloc(sizeof *q);
    if (!q)
        return NULL;
    q->z = *z;
    q->z.start = z->base;
    q->z.len = z->bytes + z->len;
    q->z.freed = 1;
    q->z.watched = 1;
    q->ptr = f->ptr;
    q->ctx = NULL;
    if (atl_drv.cuCtxGetCurrent)
        atl_drv.cuCtxGetCurrent(&q->ctx);
    q->ev = NULL;
    q->sync = !f->async;
    q->hook = f->hook;
    q->stream = own_stream(f);
    q->freed_upto = atl_fault_last_launch();
    atl_rz_site_copy(&q->alloc_site, &f->rec.site);
    atl_stack_capture_n(&q->free_site, (int)atl_cfg.stack_depth);
    return q;
}

/* The program frees ptr, which no live allocation holds: if the quarantine
 * has it, it leaves first, so that the driver answers this free as it would
 * have without us (a double free). */
static int q_refree_locked(CUdeviceptr ptr)
{
    size_t v;
    if (!atl_addrmap_get(&q_at, ptr, &v))
        return 0;
    /* the entry and everything older: the order of releases is kept */
    while (atl_addrmap_get(&q_at, ptr, &v) && q_release_batch_locked(1) == 0)
        ;
    return 1;
}

void atl_rz_quar_forget_events(void)
{
    while (nev_free)
        atl_drv.cuEventDestroy_v2(ev_free[--nev_free].e);
}

/* The free of guarded allocation z (its zone just removed) goes into the
 * quarantine (with scan_lock held, let go during cuMemFree's wait): its zone is checked and its
 * bytes poisoned by one kernel queued on the free's stream (cuMemFree: the legacy stream, then the
 * device is waited for, as the driver's free does); 1 when it did (the
 * free is held), 0 when the caller checks and frees as without one. */
static int quarantine_free_locked(struct atl_free *f, const struct zone *z)
{
    struct qent *q = q_entry(f, z);
    if (!q)
        return 0;
    CUstream s = own_stream(f);
    struct pending p;
    p.how = (struct finder){.by = BY_FREE,
                            .where = atl_hook_names[f->hook],
                            .upto = atl_fault_last_launch(),
                            .stream = s};
    p.nz = 1;
    p.nfill = 1;
    p.has_site = 1;
    memset(p.qe, 0, sizeof p.qe);
    p.z[0] = *z;
    p.f[0] = (struct atl_rz_fill){z->base, z->bytes};
    p.arg[0] = p.off[0] = 0;
    atl_rz_site_copy(&p.site[0], &f->rec.site);
    p.upto[0] = p.how.upto;
    if (atl_rz_check_queue_locked(&p, s) != 0) {
        free(q);
        return -1; /* the caller checks with copies, as without a quarantine */
    }
    int ok = 1;
    if (!f->async) {
        /* the driver's cuMemFree waits for the device; so does this one, and
         * an error of the program's that the wait returns is left to the
         * driver's own free to answer. Without scan_lock: other threads'
         * checks and frees go on meanwhile (an allocation that fails for
         * memory meanwhile waits for this free: atl_redzone_release_held). */
        atl_rz_unlock();
        ok = atl_drv.cuCtxSynchronize && atl_own_result(atl_drv.cuCtxSynchronize()) == CUDA_SUCCESS;
        atl_rz_lock();
        atl_rz_poll_locked(0);
    } else if (s != NULL && s != CU_STREAM_LEGACY) {
        ok = (q->ev = event_get(q->ctx)) != NULL &&
             atl_own_result(atl_drv.cuEventRecord(q->ev, s)) == CUDA_SUCCESS;
    }
    if (!ok) {
        event_put(q->ev, q->ctx);
        free(q);
        return -2; /* checked (queued); the driver frees */
    }
    q_add_locked(q);
    f->held = 1;
    return 1;
}

/* ---- frees held back ------------------------------------------------------------
 * A training step frees a few dozen tensors, and a check queued before each
 * free is one kernel launch each: on the H200 about as much host time as one
 * of the program's own small launches. Frees on the legacy default stream
 * (PyTorch's default stream, cudart's stream 0) of allocations up to
 * HELD_ALLOC_MAX are therefore held back, up to ATL_RZ_SLOT_ZONES of them and
 * HELD_BYTES_MAX in all, and released together: one check of all their
 * zones, queued on that stream, which also poisons their bytes, then the
 * allocations go into the quarantine (without one, the driver's frees in the
 * program's order). The memory returns to the pool later than the program
 * asked, never earlier, which stream order allows. The batch is released
 * when it is full, before every host sync (so that sync's verdicts include
 * it), before a capture begins, at every full check (teardown, exit), when
 * the program frees a held pointer again (the driver then answers what it
 * would have), and when an allocation fails for memory (released, the
 * context synchronised, the allocation retried once:
 * atl_redzone_release_held). Only the legacy stream: the program cannot
 * destroy it under a held free, and every thread names the same one (a
 * per-thread default stream is the calling thread's own). Nothing is held
 * while a capture is active: work on the legacy stream would then
 * invalidate it. A write after free in the short time a free is held (up to
 * seven more frees, or the next sync) is not seen: the poison comes after
 * it. Under scan_lock. */
#define HELD_ALLOC_MAX ((size_t)16 << 20)
#define HELD_BYTES_MAX ((size_t)64 << 20)
static struct {
    CUcontext ctx;   /* current when the frees were made */
    CUstream stream; /* as the program named it: NULL or CU_STREAM_LEGACY */
    size_t bytes;
    CUdeviceptr ptr[ATL_RZ_SLOT_ZONES];
    struct qent *q[ATL_RZ_SLOT_ZONES]; /* its quarantine entry, or NULL */
    struct pending p; /* the batch's check: p.nz frees, their zones, sites and launches */
} held;
static unsigned held_n; /* held.p.nz, for a look without the lock */
const unsigned *const atl_rz_held_n = &held_n;
/* the held allocations' spans (base to the end of the zone), for a look
 * without the lock (atomic; a stale one costs an early release or misses
 * one, never a wrong answer) */
static uint64_t held_lo[ATL_RZ_SLOT_ZONES], held_hi[ATL_RZ_SLOT_ZONES];
static uint64_t held_frees, held_batches;

/* Queues the batch's check (and poison) and the driver's frees or the
 * quarantine; the verdicts come with the next poll, like any queued
 * check. */
void atl_rz_held_release_locked(void)
{
    if (!held.p.nz || atl_capture_any())
        return;
    CUcontext cur = NULL;
    int other = atl_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != held.ctx;
    int gone = other && atl_drv.cuCtxSetCurrent(held.ctx) != CUDA_SUCCESS;
    int poisoned = 0;
    if (!gone) {
        held.p.nfill = 0;
        for (unsigned i = 0; i < held.p.nz; i++)
            if (held.q[i])
                held.p.f[held.p.nfill++] =
                    (struct atl_rz_fill){held.q[i]->z.base, held.q[i]->z.bytes};
        poisoned = atl_rz_free_check_locked(&held.p, held.stream) == 0;
    }
    /* a context that is gone took its memory with it: nothing to free */
    for (unsigned i = 0; i < held.p.nz && !gone; i++) {
        if (held.q[i] && poisoned) {
            q_add_locked(held.q[i]);
            held.q[i] = NULL;
            continue;
        }
        CUresult r = atl_own_result(atl_drv.cuMemFreeAsync(held.ptr[i], held.stream));
        static int said;
        char nm[64];
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED &&
            !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            atl_log(ATL_INFO, "redzone: the held free of alloc#%llu failed (%s)",
                    (unsigned long long)held.p.z[i].seq, atl_error_name(r, nm, sizeof nm));
    }
    for (unsigned i = 0; i < held.p.nz; i++) {
        free(held.q[i]);
        held.q[i] = NULL;
    }
    held_batches++;
    held.p.nz = 0;
    held.p.nfill = 0;
    held.bytes = 0;
    __atomic_store_n(&held_n, 0, __ATOMIC_RELAXED);
    if (other && !gone)
        atl_drv.cuCtxSetCurrent(cur);
}

/* Holds f's free of the allocation with zone z back (1), or leaves it to the
 * caller (0). */
static int held_take_locked(const struct atl_free *f, const struct zone *z)
{
    if (!f->async || (atl_hook_flags[f->hook] & ATL_F_PT) ||
        (f->stream != NULL && f->stream != CU_STREAM_LEGACY) || z->bytes > HELD_ALLOC_MAX ||
        !atl_drv.cuMemFreeAsync || atl_capture_any())
        return 0;
    CUcontext cur = NULL;
    if (!atl_rz_checks_ready_locked() || atl_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur)
        return 0;
    if (held.p.nz &&
        (held.ctx != cur || held.stream != f->stream || held.p.nz == ATL_RZ_SLOT_ZONES ||
         held.bytes + z->bytes + z->len > HELD_BYTES_MAX))
        atl_rz_held_release_locked();
    if (held.p.nz == 0) {
        held.ctx = cur;
        held.stream = f->stream;
        held.bytes = 0;
        held.p.how =
            (struct finder){.by = BY_FREE, .where = atl_hook_names[f->hook], .stream = f->stream};
        held.p.has_site = 1;
        memset(held.p.qe, 0, sizeof held.p.qe);
    }
    unsigned i = held.p.nz;
    held.ptr[i] = f->ptr;
    held.q[i] = q_entry(f, z);
    held.p.z[i] = *z;
    __atomic_store_n(&held_lo[i], z->base, __ATOMIC_RELAXED);
    __atomic_store_n(&held_hi[i], z->start + z->len, __ATOMIC_RELAXED);
    atl_rz_site_copy(&held.p.site[i], &f->rec.site);
    held.p.upto[i] = atl_fault_last_launch();
    held.p.nz = i + 1;
    held.bytes += z->bytes + z->len;
    __atomic_store_n(&held_n, held.p.nz, __ATOMIC_RELAXED);
    held_frees++;
    return 1;
}

/* The program frees ptr, which no live allocation holds: if a held free
 * has it, the batch goes first, and if the quarantine has it, it leaves,
 * so that the driver answers this free as it would have without us (a
 * double free). */
static void held_refree(CUdeviceptr ptr)
{
    atl_rz_lock();
    for (unsigned i = 0; i < held.p.nz; i++)
        if (held.ptr[i] == ptr) {
            atl_rz_held_release_locked();
            break;
        }
    q_refree_locked(ptr);
    atl_rz_unlock();
}

void atl_rz_held_release(void)
{
    if (!__atomic_load_n(&held_n, __ATOMIC_RELAXED))
        return;
    atl_rz_lock();
    atl_rz_held_release_locked();
    atl_rz_unlock();
}

/* A launch whose parameters point into a free held back: the batch is
 * released (its poison queued) before the launch is, so that a write after
 * that free by this launch lands in the poison; on the legacy stream the
 * poison runs first. */
void atl_rz_held_reached(const struct lword *w, unsigned n)
{
    unsigned hit = 0;
    unsigned nh = __atomic_load_n(&held_n, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < nh && i < ATL_RZ_SLOT_ZONES && !hit; i++) {
        uint64_t lo = __atomic_load_n(&held_lo[i], __ATOMIC_RELAXED);
        uint64_t hi = __atomic_load_n(&held_hi[i], __ATOMIC_RELAXED);
        for (unsigned k = 0; k < n && !hit; k++)
            hit = w[k].v - lo < hi - lo;
    }
    if (hit)
        atl_rz_held_release();
}

/* ---- an allocation that fails for memory --------------------------------------- */

/* Allocations being retried after failing for memory (hooks/kinds.h ATL_ALLOC_RETRY): while
 * there are any, frees are neither held nor quarantined but go straight to the driver, so
 * that other threads' frees cannot refill the quarantine between a release and the retry
 * (issue #48: four threads on a full device saw up to 30% of their allocations fail). */
static unsigned pressure;

/* Frees under way (from atl_redzone_free_pre to atl_redzone_free_post: removed from the
 * ledger and the zones, not yet with the driver, nor held, nor in the quarantine; perhaps
 * waiting for scan_lock or for the device), counted by epoch: a retry flips the epoch and
 * waits for the frees of the old one, 2 s at most, so that what they hold is given back
 * before it asks again. 1 when there were any. */
static unsigned free_busy[2], free_epoch;
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;

static int frees_drain(void)
{
    pthread_mutex_lock(&drain_lock);
    unsigned old = __atomic_fetch_xor(&free_epoch, 1, __ATOMIC_SEQ_CST) & 1;
    int any = __atomic_load_n(&free_busy[old], __ATOMIC_SEQ_CST) != 0;
    for (int i = 0; i < 10000 && __atomic_load_n(&free_busy[old], __ATOMIC_SEQ_CST); i++)
        nanosleep(&(struct timespec){0, 200000}, NULL);
    pthread_mutex_unlock(&drain_lock);
    return any;
}

int atl_redzone_pressure(int begin)
{
    if (!atl_rz_opt->pad)
        return 0;
    if (begin)
        __atomic_add_fetch(&pressure, 1, __ATOMIC_SEQ_CST);
    else
        __atomic_sub_fetch(&pressure, 1, __ATOMIC_SEQ_CST);
    return 1;
}

int atl_redzone_release_held(void)
{
    if (!atl_rz_opt->pad)
        return 0;
    int draining = frees_drain();
    atl_rz_lock();
    int any = held.p.nz || q_count() || draining;
    atl_rz_held_release_locked();
    atl_rz_quar_flush_locked();
    /* nothing of the program's held: the checks' own device memory (the merge records, which
     * only let a check run on several blocks) is given back, for good */
    int mine = !any && atl_rz_merge_held_locked();
    int ok = (any || mine) && held.p.nz == 0 && atl_rz_sync_for_scan() == 0;
    if (ok && mine)
        ok = atl_rz_merge_give_back_locked();
    atl_rz_unlock();
    return ok;
}

/* ---- the events ------------------------------------------------------------------- */

void atl_redzone_free_pre(struct atl_free *f)
{
    size_t pad = atl_rz_opt->pad;
    if (pad) {
        unsigned e = __atomic_load_n(&free_epoch, __ATOMIC_SEQ_CST) & 1;
        __atomic_add_fetch(&free_busy[e], 1, __ATOMIC_SEQ_CST);
        f->drain = e + 1;
    }
    if (pad && !f->known && (__atomic_load_n(&held_n, __ATOMIC_RELAXED) || atl_rz_opt->qmax))
        held_refree(f->ptr);
    if (!atl_rz_opt->active || !f->known)
        return;
    struct zone z;
    if (!pad || !atl_rz_zone_remove(f->ptr, 0, &z))
        return;
    /* The last moment the zone is readable: a check of it alone is queued
     * on the free's stream, before the real free, so it runs after the work
     * the free is ordered after and before the memory can be handed out
     * again (a pool reuses it only after the free, in stream order).
     * cuMemFreeAsync: the free's stream. cuMemFree: the legacy stream, which
     * runs after the work of every blocking stream; the driver completes the
     * work queued on the device before it releases memory with cuMemFree
     * (cuMemFree synchronises), so the check has run, and its verdict is
     * read, when the free returns (free_post). A kernel of a non-blocking
     * stream still writing the allocation then is the program's own use
     * after free, which the quarantine's poison catches. Checks queued
     * earlier that list this zone ran before it too: each was queued right
     * after a launch that used the allocation, which the free must follow.
     * No context sync, no copy. A zone already reported is not checked
     * again, but still goes into the quarantine. */
    if (f->async ? f->cap : atl_capture_any()) {
        /* a check now would become a node of the program's graph (or
         * invalidate its capture): this zone goes unchecked */
        atl_rz_check_skipped();
        return;
    }
    atl_rz_lock();
    /* an allocation is being retried for memory: nothing held back now */
    int press = __atomic_load_n(&pressure, __ATOMIC_SEQ_CST) != 0;
    if (!press && held_take_locked(f, &z)) {
        f->held = 1; /* the hook returns success without the driver's free */
        atl_rz_unlock();
        return;
    }
    int qr = !press && atl_rz_checks_ready_locked() ? quarantine_free_locked(f, &z) : 0;
    if (qr == 1 || qr == -2) {
        atl_rz_unlock();
        return;
    }
    /* only the fields the check reads (the site arrays are large) */
    struct pending p;
    p.how = (struct finder){.by = BY_FREE,
                            .where = atl_hook_names[f->hook],
                            .upto = atl_fault_last_launch(),
                            .stream = own_stream(f)};
    p.nz = 1;
    p.nfill = 0;
    p.has_site = 1;
    memset(p.qe, 0, sizeof p.qe);
    p.z[0] = z;
    p.arg[0] = p.off[0] = 0;
    atl_rz_site_copy(&p.site[0], &f->rec.site);
    p.upto[0] = p.how.upto;
    if (z.watched || qr == -1)
        atl_rz_free_check_locked(&p, p.how.stream);
    atl_rz_unlock();
}

void atl_redzone_free_post(struct atl_free *f, CUresult r)
{
    if (f->drain) {
        __atomic_sub_fetch(&free_busy[f->drain - 1], 1, __ATOMIC_SEQ_CST);
        f->drain = 0;
    }
    if (!atl_rz_opt->active || !f->ptr)
        return;
    if (atl_rz_opt->pad && !f->async && !f->held) {
        /* cuMemFree waited for the device: the check before it is done */
        atl_rz_poll();
    }
}

/* ---- memory released poisoned (redzone_internal.h) ---- */

/* Disjoint spans, sorted, none touching another (touching ones are merged); at most
 * REL_MAX, past which a released span is not kept (counted). */
#define REL_MAX 65536
static pthread_mutex_t rel_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rspan {
    uint64_t lo, hi;
} *rel;
static size_t rel_n, rel_cap;
static uint64_t births, births_in_poison, rel_full;

/* The first span that ends after v (rel_n when none). */
static size_t rel_after(uint64_t v)
{
    size_t a = 0, b = rel_n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (rel[m].hi <= v)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* Spans [i, j) replaced by the k spans of `with`. */
static void rel_splice(size_t i, size_t j, const struct rspan *with, size_t k)
{
    memmove(&rel[i + k], &rel[j], (rel_n - j) * sizeof *rel);
    memcpy(&rel[i], with, k * sizeof *rel);
    rel_n = rel_n - (j - i) + k;
}

void atl_rz_rel_add(uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return;
    pthread_mutex_lock(&rel_mu);
    if (rel_n + 1 > rel_cap) {
        size_t cap = rel_cap ? 2 * rel_cap : 256;
        struct rspan *r = cap <= REL_MAX ? realloc(rel, cap * sizeof *r) : NULL;
        if (!r) {
            rel_full++;
            pthread_mutex_unlock(&rel_mu);
            return;
        }
        rel = r, rel_cap = cap;
    }
    /* every span that overlaps or touches [lo, hi) merges into one */
    size_t i = lo ? rel_after(lo - 1) : 0, j = i;
    struct rspan m = {lo, hi};
    while (j < rel_n && rel[j].lo <= hi) {
        if (rel[j].lo < m.lo)
            m.lo = rel[j].lo;
        if (rel[j].hi > m.hi)
            m.hi = rel[j].hi;
        j++;
    }
    rel_splice(i, j, &m, 1);
    pthread_mutex_unlock(&rel_mu);
}

int atl_rz_rel_birth(uint64_t base, uint64_t zone, uint64_t end)
{
    pthread_mutex_lock(&rel_mu);
    births++;
    size_t i = rel_after(base), j = i;
    int in = 0;
    if (i < rel_n) {
        size_t z = rel_after(zone);
        in = z < rel_n && rel[z].lo <= zone && rel[z].hi >= end;
    }
    births_in_poison += (uint64_t)in;
    /* the allocation's span leaves the set: what lies around it stays */
    struct rspan keep[2];
    size_t k = 0;
    while (j < rel_n && rel[j].lo < end)
        j++;
    if (j > i) {
        if (rel[i].lo < base)
            keep[k++] = (struct rspan){rel[i].lo, base};
        if (rel[j - 1].hi > end)
            keep[k++] = (struct rspan){end, rel[j - 1].hi};
        /* a split needs one more span: without room, the pieces around go too (the set then
         * says less than it could, never more) */
        rel_splice(i, j, keep, rel_n - (j - i) + k <= rel_cap ? k : 0);
    }
    pthread_mutex_unlock(&rel_mu);
    return in;
}

void atl_rz_quar_counts(struct atl_rz_counts *c)
{
    pthread_mutex_lock(&rel_mu);
    c->births = births;
    c->births_in_poison = births_in_poison;
    c->rel_full = rel_full;
    pthread_mutex_unlock(&rel_mu);
    c->quarantined = __atomic_load_n(&quarantined_total, __ATOMIC_RELAXED);
    c->held_frees = __atomic_load_n(&held_frees, __ATOMIC_RELAXED);
    c->held_batches = __atomic_load_n(&held_batches, __ATOMIC_RELAXED);
}
