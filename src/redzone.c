/*
 * Red zones: a poisoned tail after every guarded driver allocation, checked
 * on the GPU; and the allocation ledger's reports (leaks at exit, failed
 * allocations, frees of pointers nobody allocated).
 *
 * Why tails and not a sanitizer: compute-sanitizer memcheck costs 12x to
 * 44x per launch on the H200 and cannot see an overrun that stays inside
 * one big allocation a program carves up. A tail costs one memset at birth
 * and one read per check, so it can stay on; it finds overruns past the end
 * of each driver allocation (writes before the start are not seen).
 *
 * Checks read device memory, so they synchronise first, and never while a
 * stream capture is active (a sync or a launch on the legacy stream would
 * invalidate the capture, and a memset into a capturing stream would be
 * recorded into the user's graph). A check skipped for a capture is simply
 * made at the next opportunity.
 */
#include "redzone.h"

#include "addrmap.h"
#include "config.h"
#include "driver.h"
#include "kernels.h"
#include "ledger.h"
#include "log.h"
#include "pools.h"
#include "stack.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHECK_FREE, CHECK_SYNC, CHECK_LAUNCH };

static size_t pad; /* ATLAS_REDZONE; 0: no red zones */
static unsigned char fill;
static int mode;
static int leaks_on;
static int active; /* red zones or leak list on */
static uint64_t min_idx, trace_idx;

static int captures; /* stream captures in progress (begun, not ended) */
static uint64_t overruns, guarded_total, checks, skipped_capture;

/* ---- the zone set -----------------------------------------------------------
 * The ledger holds full records (call stacks and all); a scan needs only
 * (start, length), so the zones keep their own compact array, and the copy
 * into the scan's table is redone only when `version` moved. In a launch-
 * bound loop with ATLAS_REDZONE_CHECK=launch that makes a check one kernel
 * launch and one stream sync, nothing more. */
struct zone {
    CUdeviceptr base, start; /* allocation base; first byte of the tail */
    size_t bytes, len;       /* what the program asked for; tail length */
    uint64_t seq;
    int watched; /* poisoned and not yet reported */
};
static pthread_mutex_t zones_lock = PTHREAD_MUTEX_INITIALIZER;
static struct zone *zones;
static size_t nzones, capzones;
static struct atl_addrmap zone_at; /* base -> index in zones */
static uint64_t version;

static void zone_add(const struct zone *z)
{
    pthread_mutex_lock(&zones_lock);
    size_t i;
    if (atl_addrmap_get(&zone_at, z->base, &i)) {
        /* the base came back without a free we saw: the new zone wins */
        zones[i] = *z;
        version++;
        pthread_mutex_unlock(&zones_lock);
        return;
    }
    if (nzones == capzones) {
        size_t ncap = capzones ? capzones * 2 : 64;
        struct zone *n = realloc(zones, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&zones_lock);
            atl_log_once_oom("the red-zone table");
            return;
        }
        zones = n;
        capzones = ncap;
    }
    if (atl_addrmap_put(&zone_at, z->base, nzones) != 0) {
        pthread_mutex_unlock(&zones_lock);
        atl_log_once_oom("the red-zone table");
        return;
    }
    zones[nzones++] = *z;
    version++;
    pthread_mutex_unlock(&zones_lock);
}

/* Removes the zone of `base`; 1 and *out when found. O(1): the last zone
 * moves into the hole. */
static int zone_remove(CUdeviceptr base, struct zone *out)
{
    size_t i;
    pthread_mutex_lock(&zones_lock);
    int found = atl_addrmap_get(&zone_at, base, &i);
    if (found) {
        *out = zones[i];
        atl_addrmap_del(&zone_at, base);
        if (i != --nzones) {
            zones[i] = zones[nzones];
            atl_addrmap_put(&zone_at, zones[i].base, i); /* present: no growth */
        }
        version++;
    }
    pthread_mutex_unlock(&zones_lock);
    return found;
}

static void zone_set_watched(CUdeviceptr base, int watched)
{
    size_t i;
    pthread_mutex_lock(&zones_lock);
    if (atl_addrmap_get(&zone_at, base, &i)) {
        zones[i].watched = watched;
        version++;
    }
    pthread_mutex_unlock(&zones_lock);
}

/* ---- recent launches ----------------------------------------------------------
 * Outside launch mode an overrun is found later than it happened; the
 * launches since the last clean check are the suspects. A ring of the last
 * RING of them, under a mutex (uncontended: some tens of ns per launch, next
 * to a launch's 4 us). */
#define RING 16
struct launch_note {
    uint64_t seq;
    void *func;
    unsigned grid[3], block[3];
};
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static struct launch_note ring[RING];
static uint64_t ring_last;  /* seq of the newest launch noted */
static uint64_t clean_upto; /* launches up to this seq passed a full check */

static void ring_note(const struct atl_launch *l)
{
    pthread_mutex_lock(&ring_lock);
    struct launch_note *n = &ring[l->seq % RING];
    n->seq = l->seq;
    n->func = (void *)l->func;
    memcpy(n->grid, l->grid, sizeof n->grid);
    memcpy(n->block, l->block, sizeof n->block);
    if (l->seq > ring_last)
        ring_last = l->seq;
    pthread_mutex_unlock(&ring_lock);
}

static void launch_line(const char *lead, uint64_t seq, void *func, const unsigned g[3],
                        const unsigned b[3])
{
    char name[256];
    atl_kernel_name(func, name, sizeof name);
    atl_log(ATL_ERROR, "redzone: %slaunch#%llu kernel=%s grid=(%u,%u,%u) block=(%u,%u,%u)", lead,
            (unsigned long long)seq, name, g[0], g[1], g[2], b[0], b[1], b[2]);
}

static void suspects(uint64_t seq, const char *where)
{
    struct launch_note copy[RING];
    uint64_t last, from;
    pthread_mutex_lock(&ring_lock);
    memcpy(copy, ring, sizeof copy);
    last = ring_last;
    from = clean_upto;
    pthread_mutex_unlock(&ring_lock);
    uint64_t n = last > from ? last - from : 0;
    if (n == 0) {
        atl_log(ATL_ERROR,
                "redzone: alloc#%llu found at %s: no kernel launch since the last clean "
                "check (a graph launch, a copy, a memset or a host write through managed memory?)",
                (unsigned long long)seq, where);
        return;
    }
    atl_log(ATL_ERROR,
            "redzone: alloc#%llu found at %s: written by one of the %llu launches since the last "
            "clean check%s:",
            (unsigned long long)seq, where, (unsigned long long)n,
            n > RING ? " (the newest listed)" : "");
    uint64_t s = last - (n > RING ? RING : n) + 1;
    for (; s <= last; s++) {
        const struct launch_note *e = &copy[s % RING];
        if (e->seq == s)
            launch_line("  ", s, e->func, e->grid, e->block);
    }
}

/* ---- reports ------------------------------------------------------------------ */

static void site_of(CUdeviceptr base, const struct atl_stack *known, char *buf, size_t len)
{
    struct atl_alloc_rec rec;
    if (known)
        atl_stack_site(known, buf, len);
    else if (atl_ledger_find(base, &rec))
        atl_stack_site(&rec.site, buf, len);
    else
        snprintf(buf, len, "?");
}

/* One report per corrupted zone; afterwards the zone is no longer watched
 * (atlas_redzone_poison() re-arms it). */
static void report(const struct zone *z, const struct atl_stack *known_site, unsigned bad,
                   size_t first, size_t last, const char *where, const struct atl_launch *culprit)
{
    char site[512];
    site_of(z->base, known_site, site, sizeof site);
    size_t lo = z->bytes + first, hi = z->bytes + last;
    atl_log(ATL_ERROR,
            "redzone overrun: alloc#%llu %zu bytes at 0x%llx, allocated at %s: %u bytes corrupted "
            "at +%zu..+%zu%s",
            (unsigned long long)z->seq, z->bytes, (unsigned long long)z->base, site, bad, lo, hi,
            last + 1 == z->len ? " (up to the end of the red zone: the write may reach further)"
                               : "");
    if (culprit)
        launch_line("culprit: ", culprit->seq, (void *)culprit->func, culprit->grid,
                    culprit->block);
    else
        suspects(z->seq, where);
    __atomic_add_fetch(&overruns, 1, __ATOMIC_RELAXED);
    atl_note_finding(ATL_FINDING_OVERRUN, 1);
    zone_set_watched(z->base, 0);
}

/* ---- the GPU scan ---------------------------------------------------------------
 * The kernel is PTX built from src/redzone_scan.cu at build time and embedded
 * (build/gen/redzone_ptx.c): PTX, not a cubin, so the driver JIT-compiles it
 * for whatever GPU is there; generated from CUDA source rather than written
 * by hand so that it stays readable and checked by the compiler. Its zone
 * table and results live in page-locked host memory mapped into the device:
 * the host reads the answer after one sync, without a copy call.
 *
 * Where the kernel cannot be loaded (the fake driver of the tests, a build
 * without nvcc), each zone is read back with one device-to-host copy:
 * correct, slower; said once at info level. */
struct gpu_zone {
    unsigned long long ptr, len;
    unsigned fill, pad_;
};
struct gpu_result {
    unsigned bad, first, last, pad_;
};

static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static int kernel_state; /* 0 untried, 1 loaded, -1 unavailable */
static CUfunction scan_fn;
static CUfunction check_fn;    /* launch mode, asynchronous; NULL: synchronous scans */
static struct gpu_zone *tab;   /* mapped host memory */
static struct gpu_result *res; /* mapped host memory */
static CUdeviceptr dtab, dres;
static size_t captab;
static struct zone *snap; /* host copy of the zones scanned */
static size_t nsnap, capsnap;
static uint64_t snap_version = (uint64_t)-1;
static unsigned char *readback; /* fallback: one zone's bytes */
static size_t capreadback;

static void kernel_load(void)
{
    char why[96] = "built without nvcc";
    kernel_state = -1;
    if (atl_redzone_ptx[0] && atl_drv.cuModuleLoadData && atl_drv.cuModuleGetFunction &&
        atl_drv.cuLaunchKernel && atl_drv.cuMemAllocHost_v2) {
        CUmodule m;
        CUresult r = atl_drv.cuModuleLoadData(&m, atl_redzone_ptx);
        if (r == CUDA_SUCCESS)
            r = atl_drv.cuModuleGetFunction(&scan_fn, m, "atl_redzone_scan");
        if (r == CUDA_SUCCESS) {
            kernel_state = 1;
            if (atl_drv.cuModuleGetFunction(&check_fn, m, "atl_redzone_check_launch") !=
                CUDA_SUCCESS)
                check_fn = NULL;
            return;
        }
        char nm[64];
        snprintf(why, sizeof why, "the driver refused its PTX: %s",
                 atl_error_name(r, nm, sizeof nm));
    }
    atl_log(ATL_INFO, "redzone: scan kernel unavailable (%s): checking each zone with a copy", why);
}

/* Makes the mapped buffers hold n zones. */
static int tables_reserve(size_t n)
{
    if (n <= captab && tab)
        return 0;
    size_t cap = captab ? captab : 256;
    while (cap < n)
        cap *= 2;
    void *t = NULL, *r = NULL;
    if (atl_drv.cuMemAllocHost_v2((void **)&t, cap * sizeof *tab) != CUDA_SUCCESS)
        return -1;
    if (atl_drv.cuMemAllocHost_v2((void **)&r, cap * sizeof *res) != CUDA_SUCCESS) {
        atl_drv.cuMemFreeHost(t);
        return -1;
    }
    CUdeviceptr dt, dr;
    if (!atl_drv.cuMemHostGetDevicePointer_v2 ||
        atl_drv.cuMemHostGetDevicePointer_v2(&dt, t, 0) != CUDA_SUCCESS ||
        atl_drv.cuMemHostGetDevicePointer_v2(&dr, r, 0) != CUDA_SUCCESS) {
        atl_drv.cuMemFreeHost(t);
        atl_drv.cuMemFreeHost(r);
        return -1;
    }
    if (tab) {
        atl_drv.cuMemFreeHost(tab);
        atl_drv.cuMemFreeHost(res);
    }
    tab = t;
    res = r;
    captab = cap;
    dtab = dt;
    dres = dr;
    snap_version = (uint64_t)-1;
    return 0;
}

/* Copies the watched zones into snap (and the mapped table) when they
 * changed since the last scan. */
static int snapshot_zones(int to_gpu)
{
    pthread_mutex_lock(&zones_lock);
    if (version == snap_version && (!to_gpu || tab)) {
        pthread_mutex_unlock(&zones_lock);
        return 0;
    }
    if (nzones > capsnap) {
        size_t cap = capsnap ? capsnap : 256;
        while (cap < nzones)
            cap *= 2;
        struct zone *n = realloc(snap, cap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&zones_lock);
            atl_log_once_oom("the red-zone scan");
            return -1;
        }
        snap = n;
        capsnap = cap;
    }
    nsnap = 0;
    for (size_t i = 0; i < nzones; i++)
        if (zones[i].watched)
            snap[nsnap++] = zones[i];
    uint64_t v = version;
    pthread_mutex_unlock(&zones_lock);
    if (to_gpu) {
        if (tables_reserve(nsnap) != 0)
            return -1;
        for (size_t i = 0; i < nsnap; i++)
            tab[i] = (struct gpu_zone){snap[i].start, snap[i].len, fill, 0};
    }
    snap_version = v;
    return 0;
}

/* Checks one zone with a copy; fills bad/first/last. -1 if unreadable. */
static int zone_read(const struct zone *z, unsigned *bad, size_t *first, size_t *last)
{
    if (z->len > capreadback) {
        unsigned char *n = realloc(readback, z->len);
        if (!n)
            return -1;
        readback = n;
        capreadback = z->len;
    }
    if (atl_own_result(atl_drv.cuMemcpyDtoH_v2(readback, z->start, z->len)) != CUDA_SUCCESS)
        return -1;
    *bad = 0;
    for (size_t i = 0; i < z->len; i++) {
        if (readback[i] != fill) {
            if (!*bad)
                *first = i;
            *last = i;
            ++*bad;
        }
    }
    return 0;
}

static int capture_active(void)
{
    return __atomic_load_n(&captures, __ATOMIC_ACQUIRE) > 0;
}

/* The device is readable now? Skips (quietly) during captures and after
 * teardown, and says once why a sync failed otherwise. */
static int sync_for_scan(void)
{
    if (capture_active()) {
        __atomic_add_fetch(&skipped_capture, 1, __ATOMIC_RELAXED);
        return -1;
    }
    CUresult r = atl_drv.cuCtxSynchronize ? atl_own_result(atl_drv.cuCtxSynchronize())
                                          : CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS)
        return 0;
    static int said;
    /* status 4: the driver is being torn down at exit; no current context:
     * the program released it (its zones were scanned at that teardown).
     * Both normal, not an error. */
    if (r != CUDA_ERROR_DEINITIALIZED && r != CUDA_ERROR_INVALID_CONTEXT &&
        r != CUDA_ERROR_CONTEXT_IS_DESTROYED && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
        char nm[64];
        atl_log(ATL_WARN, "redzone: cannot check red zones: the context reports %s",
                atl_error_name(r, nm, sizeof nm));
    }
    return -1;
}

/* ---- launch mode without waiting ----------------------------------------------
 * Waiting for every launch and its check costs a round trip per launch
 * (about 3x a bare launch). Instead the check kernel is queued on the
 * launch's stream right after it and leaves its verdict in a ring of slots
 * in mapped host memory; the host reads finished slots at the next launches
 * and at every synchronisation. Stream order makes the culprit exact as long
 * as one stream runs at a time: before a launch on another stream than the
 * previous one, the host waits for the checks in flight (launch_pre). A slot
 * refers to zones by index in `snap`, which is only rebuilt after a context
 * sync and a drain. */
#define SLOTS 256
#define SLOT_RECS 4
struct gpu_slot {
    unsigned long long done; /* the launch number, written last by the kernel */
    unsigned nbad, pad_;
    struct gpu_result rec[SLOT_RECS]; /* .pad_: zone index */
};
struct pending {
    struct atl_launch l; /* the launch checked (seq, func, grid, block, stream) */
};
static struct gpu_slot *slots; /* mapped host memory */
static CUdeviceptr dslots;
static struct pending pend[SLOTS];
static uint64_t pend_head, pend_tail; /* checks queued [tail, head) */
static CUstream last_stream;

static void slot_process(uint64_t k)
{
    volatile struct gpu_slot *sl = &slots[k % SLOTS];
    const struct atl_launch *l = &pend[k % SLOTS].l;
    __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
    /* the kernel writes `done` last: an acquire load of it orders the reads
     * of the record after it (a plain fence is not supported under TSan) */
    (void)__atomic_load_n(&slots[k % SLOTS].done, __ATOMIC_ACQUIRE);
    unsigned nbad = sl->nbad;
    if (nbad == 0) {
        pthread_mutex_lock(&ring_lock);
        if (l->seq > clean_upto)
            clean_upto = l->seq;
        pthread_mutex_unlock(&ring_lock);
        return;
    }
    for (unsigned i = 0; i < nbad && i < SLOT_RECS; i++) {
        unsigned z = sl->rec[i].pad_;
        /* a later check in flight sees the same zone: report it once */
        if (z >= nsnap || !snap[z].watched)
            continue;
        report(&snap[z], NULL, sl->rec[i].bad, sl->rec[i].first, sl->rec[i].last, "launch", l);
        snap[z].watched = 0;
    }
    if (nbad > SLOT_RECS)
        atl_log(ATL_ERROR, "redzone: launch#%llu corrupted %u more zones, not listed",
                (unsigned long long)l->seq, nbad - SLOT_RECS);
}

/* Reads the finished slots, in order; with `all` (after a context sync),
 * every queued one (a slot still unfinished then never ran: dropped). */
static void slots_poll(int all)
{
    while (pend_tail < pend_head) {
        uint64_t k = pend_tail;
        unsigned long long done = ((volatile struct gpu_slot *)&slots[k % SLOTS])->done;
        if (done == pend[k % SLOTS].l.seq)
            slot_process(k);
        else if (!all)
            break;
        __atomic_store_n(&pend_tail, k + 1, __ATOMIC_RELAXED);
    }
}

static void slots_drain(void)
{
    if (slots)
        slots_poll(1);
}

static int slots_ready(void)
{
    if (slots)
        return 0;
    void *p = NULL;
    CUdeviceptr d;
    if (atl_drv.cuMemAllocHost_v2(&p, SLOTS * sizeof *slots) != CUDA_SUCCESS)
        return -1;
    if (atl_drv.cuMemHostGetDevicePointer_v2(&d, p, 0) != CUDA_SUCCESS) {
        atl_drv.cuMemFreeHost(p);
        return -1;
    }
    memset(p, 0, SLOTS * sizeof *slots);
    slots = p;
    dslots = d;
    return 0;
}

static int sync_for_scan(void);
static int snapshot_zones(int to_gpu);

/* Queues the check of launch l. 0 when queued (or nothing to check), -1
 * when the caller must check synchronously instead. */
static int check_queue_locked(const struct atl_launch *l)
{
    pthread_mutex_lock(&zones_lock);
    int changed = version != snap_version;
    pthread_mutex_unlock(&zones_lock);
    if (changed || pend_head - pend_tail == SLOTS) {
        /* new zones may still be being poisoned on another stream; a full
         * ring means the host is far ahead of the GPU */
        if (sync_for_scan() != 0)
            return 0;
        slots_drain();
        if (snapshot_zones(1) != 0)
            return -1;
    } else if (capture_active()) {
        __atomic_add_fetch(&skipped_capture, 1, __ATOMIC_RELAXED);
        return 0;
    }
    if (nsnap == 0)
        return 0;
    if (slots_ready() != 0)
        return -1;
    uint64_t k = pend_head;
    slots[k % SLOTS].done = 0;
    slots[k % SLOTS].nbad = 0;
    pend[k % SLOTS].l = *l;
    unsigned n = (unsigned)nsnap;
    unsigned long long seq = l->seq;
    CUdeviceptr ds = dslots + (k % SLOTS) * sizeof *slots;
    void *args[] = {&dtab, &n, &ds, &seq};
    if (atl_drv.cuLaunchKernel(check_fn, 1, 1, 1, 256, 1, 1, 0, l->stream, args, NULL) !=
        CUDA_SUCCESS)
        return -1;
    __atomic_store_n(&pend_head, k + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&last_stream, l->stream, __ATOMIC_RELAXED);
    slots_poll(0);
    return 0;
}

/* The scan proper. `culprit` (launch mode): run on its stream, right after
 * it, and name it; otherwise synchronise the context first. Called with
 * scan_lock held (it guards the mapped tables; the driver calls made under
 * it never call back into atlastrace). */
static int scan_locked(const char *where, const struct atl_launch *culprit)
{
    if (!pad)
        return 0;
    if (kernel_state == 0)
        kernel_load();
    int gpu = kernel_state == 1;
    CUstream stream = culprit ? culprit->stream : NULL;
    /* A zone poisoned (or re-poisoned) since the last scan was poisoned on
     * the legacy or its own stream, which the culprit's stream need not wait
     * for: the first scan that sees it synchronises the whole context, or a
     * memset still in flight would read as an overrun. */
    pthread_mutex_lock(&zones_lock);
    int changed = version != snap_version;
    pthread_mutex_unlock(&zones_lock);
    if (!culprit || !gpu || changed) {
        if (sync_for_scan() != 0)
            return 0;
        slots_drain();
    } else if (capture_active()) {
        __atomic_add_fetch(&skipped_capture, 1, __ATOMIC_RELAXED);
        return 0;
    }
    if (snapshot_zones(gpu) != 0) {
        if (!gpu)
            return 0;
        kernel_state = -1; /* no mapped memory: copies from now on */
        gpu = 0;
        if (snapshot_zones(0) != 0)
            return 0;
    }
    uint64_t upto = __atomic_load_n(&ring_last, __ATOMIC_RELAXED);
    __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
    int found = 0;
    if (nsnap == 0)
        goto clean;
    if (gpu) {
        unsigned n = (unsigned)nsnap;
        void *args[] = {&dtab, &n, &dres};
        unsigned blocks = n < 1024 ? n : 1024;
        CUresult r =
            atl_drv.cuLaunchKernel(scan_fn, blocks, 1, 1, 128, 1, 1, 0, stream, args, NULL);
        if (r != CUDA_SUCCESS) {
            /* e.g. another context is current than the one the kernel was
             * loaded into: check this time with copies */
            gpu = 0;
            goto copies;
        }
        if (atl_own_result(atl_drv.cuStreamSynchronize(stream)) != CUDA_SUCCESS)
            return 0; /* a fault of the program's own: its next call reports it (latched) */
        for (size_t i = 0; i < nsnap; i++) {
            volatile struct gpu_result *g = &res[i];
            if (g->bad) {
                report(&snap[i], NULL, g->bad, g->first, g->last, where, culprit);
                found++;
            }
        }
    } else {
    copies:
        if (culprit && atl_own_result(atl_drv.cuStreamSynchronize(stream)) != CUDA_SUCCESS)
            return 0;
        for (size_t i = 0; i < nsnap; i++) {
            unsigned bad;
            size_t first = 0, last = 0;
            if (zone_read(&snap[i], &bad, &first, &last) == 0 && bad) {
                report(&snap[i], NULL, bad, first, last, where, culprit);
                found++;
            }
        }
    }
    if (found)
        return found;
clean:
    pthread_mutex_lock(&ring_lock);
    if (upto > clean_upto)
        clean_upto = upto;
    pthread_mutex_unlock(&ring_lock);
    return 0;
}

int atl_redzone_scan_all(const char *where)
{
    if (!pad)
        return 0;
    pthread_mutex_lock(&scan_lock);
    int n = scan_locked(where, NULL);
    pthread_mutex_unlock(&scan_lock);
    return n;
}

/* ---- events ---------------------------------------------------------------------- */

unsigned atl_redzone_init(void)
{
    pad = (size_t)atl_cfg.redzone;
    fill = (unsigned char)atl_cfg.redzone_fill;
    mode = (int)atl_cfg.redzone_check;
    min_idx = atl_cfg.redzone_min_idx;
    trace_idx = atl_cfg.redzone_trace_idx;
    leaks_on = (int)atl_cfg.leaks;
    active = pad > 0 || leaks_on;
    if (active)
        atl_ledger_on = 1;
    if (pad && *atl_pools_routed())
        atl_log(ATL_INFO, "redzone: framework pools routed to one driver allocation per tensor: %s",
                atl_pools_routed());
    return atl_redzone_events();
}

unsigned atl_redzone_events(void)
{
    if (!active)
        return 0;
    unsigned on = ATL_ON_ALLOC | ATL_ON_CTX;
    if (pad)
        on |= ATL_ON_LAUNCH | ATL_ON_CAPTURE | (mode != CHECK_FREE ? ATL_ON_SYNC : 0);
    return on;
}

void atl_redzone_alloc_pre(struct atl_alloc *a)
{
    if (!pad || a->seq < min_idx || a->bytes == 0)
        return;
    if (a->kind == ATL_ALLOC_PITCH) {
        /* the pitch is only known afterwards, but it is at least the width:
         * this many extra rows make a tail of at least `pad` bytes */
        if (!a->width || !a->height)
            return;
        size_t rows = (pad + a->width - 1) / a->width;
        if (a->height + rows < a->height)
            return;
        a->padded_height = a->height + rows;
        return;
    }
    if (a->bytes + pad < a->bytes)
        return;
    a->padded = a->bytes + pad;
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
    atl_log(ATL_WARN,
            "alloc failed: alloc#%llu %s bytes=%zu status=%s device free=%zu total=%zu live=%zu "
            "(the driver's error is returned unchanged)",
            (unsigned long long)a->seq, atl_hook_names[a->hook], a->bytes,
            atl_error_name(r, nm, sizeof nm), freeb, total, atl_ledger_count(NULL));
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
        char site[512];
        atl_stack_site(&top[i].site, site, sizeof site);
        atl_log(ATL_WARN,
                "alloc failed:   largest live: alloc#%llu %zu bytes at 0x%llx, allocated at %s",
                (unsigned long long)top[i].seq, top[i].bytes, (unsigned long long)top[i].ptr, site);
    }
}

static void trace_alloc(const struct atl_alloc *a)
{
    struct atl_stack st;
    atl_stack_capture(&st);
    atl_log(ATL_WARN,
            "redzone: alloc#%llu bytes=%zu ptr=0x%llx backtrace (ATLAS_REDZONE_TRACE_IDX):",
            (unsigned long long)a->seq, a->bytes, a->dptr ? (unsigned long long)*a->dptr : 0ULL);
    for (int i = 0; i < st.n; i++) {
        char fr[512];
        atl_frame_format(st.pc[i], fr, sizeof fr);
        atl_log(ATL_WARN, "redzone:   #%d %s", i, fr);
    }
}

static int stream_capturing(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!capture_active() || !atl_drv.cuStreamIsCapturing)
        return 0;
    return atl_drv.cuStreamIsCapturing(s, &st) == CUDA_SUCCESS &&
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

int atl_redzone_alloc_post(struct atl_alloc *a, CUresult r)
{
    if (!active)
        return 0;
    if (r != CUDA_SUCCESS) {
        if (r != CUDA_ERROR_DEINITIALIZED)
            alloc_failed(a, r);
        return 0;
    }
    if (!a->dptr)
        return 0;
    if (trace_idx && a->seq == trace_idx)
        trace_alloc(a);
    if (a->padded <= a->bytes && !a->padded_height)
        return 0;
    struct zone z = {.base = *a->dptr,
                     .bytes = a->bytes,
                     .len = a->padded - a->bytes,
                     .seq = a->seq,
                     .watched = 1};
    if (a->kind == ATL_ALLOC_PITCH) {
        if (!a->pitch)
            return 0;
        z.bytes = *a->pitch * a->height;
        z.len = *a->pitch * (a->padded_height - a->height);
    }
    z.start = z.base + z.bytes;
    CUresult pr;
    if (a->kind == ATL_ALLOC_ASYNC) {
        if (stream_capturing(a->stream)) {
            /* a memset now would be recorded into the program's graph */
            static int said;
            if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
                atl_log(ATL_INFO,
                        "redzone: alloc#%llu made on a capturing stream is not guarded "
                        "(poisoning it would add a node to the program's graph)",
                        (unsigned long long)a->seq);
            return 0;
        }
        pr = atl_drv.cuMemsetD8Async ? atl_drv.cuMemsetD8Async(z.start, fill, z.len, a->stream)
                                     : CUDA_ERROR_NOT_SUPPORTED;
    } else {
        pr = atl_drv.cuMemsetD8_v2 ? atl_own_result(atl_drv.cuMemsetD8_v2(z.start, fill, z.len))
                                   : CUDA_ERROR_NOT_SUPPORTED;
    }
    if (pr != CUDA_SUCCESS) {
        static int said;
        char nm[64];
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            atl_log(ATL_WARN,
                    "redzone: poisoning the red zone of alloc#%llu failed (%s): it is "
                    "not checked",
                    (unsigned long long)a->seq, atl_error_name(pr, nm, sizeof nm));
        return 0;
    }
    zone_add(&z);
    __atomic_add_fetch(&guarded_total, 1, __ATOMIC_RELAXED);
    atl_log(ATL_INFO, "redzone: alloc#%llu bytes=%zu ptr=0x%llx", (unsigned long long)z.seq,
            z.bytes, (unsigned long long)z.base);
    return 1;
}

/* Recently freed pointers, to tell a double free from a stray pointer. */
#define FREED 64
static pthread_mutex_t freed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    CUdeviceptr ptr;
    uint64_t seq;
} freed[FREED];
static unsigned freed_next;

void atl_redzone_free_pre(struct atl_free *f)
{
    if (!active || !f->known)
        return;
    pthread_mutex_lock(&freed_lock);
    freed[freed_next % FREED].ptr = f->ptr;
    freed[freed_next % FREED].seq = f->rec.seq;
    freed_next++;
    pthread_mutex_unlock(&freed_lock);
    struct zone z;
    if (!pad || !zone_remove(f->ptr, &z))
        return;
    /* Taking scan_lock waits for a scan in progress that may still read this
     * zone; queued launch-mode checks may read it too, so they are waited
     * for before the real free. The last moment the zone is readable: check
     * it alone, after the work queued before the free (cuMemFree
     * synchronises anyway). */
    pthread_mutex_lock(&scan_lock);
    int queued = pend_head != pend_tail;
    if ((z.watched || queued) && sync_for_scan() == 0) {
        slots_drain();
        if (!z.watched)
            goto out;
        unsigned bad;
        size_t first = 0, last = 0;
        __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
        if (zone_read(&z, &bad, &first, &last) == 0 && bad)
            report(&z, &f->rec.site, bad, first, last, atl_hook_names[f->hook], NULL);
    }
out:
    pthread_mutex_unlock(&scan_lock);
}

void atl_redzone_free_post(struct atl_free *f, CUresult r)
{
    if (!active || !f->ptr)
        return;
    char nm[64];
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

void atl_redzone_launch_post(const struct atl_launch *l, CUresult r)
{
    if (!pad || r != CUDA_SUCCESS)
        return;
    ring_note(l);
    if (mode != CHECK_LAUNCH || stream_capturing(l->stream))
        return;
    pthread_mutex_lock(&scan_lock);
    if (kernel_state == 0)
        kernel_load();
    /* queued and read later when the check kernel runs; else one scan and
     * one stream sync per launch */
    if (!(kernel_state == 1 && check_fn && check_queue_locked(l) == 0))
        scan_locked("launch", l);
    pthread_mutex_unlock(&scan_lock);
}

/* Launch mode: a graph's kernels are not seen one by one; check right after
 * the graph, so its overrun is not blamed on the next launch. */
void atl_redzone_graph_launch_post(const struct atl_graph_launch *g, CUresult r)
{
    if (!pad || mode != CHECK_LAUNCH || r != CUDA_SUCCESS || stream_capturing(g->stream))
        return;
    pthread_mutex_lock(&scan_lock);
    scan_locked(atl_hook_names[g->hook], NULL);
    pthread_mutex_unlock(&scan_lock);
}

void atl_redzone_launch_pre(const struct atl_launch *l)
{
    if (!pad || mode != CHECK_LAUNCH)
        return;
    /* About to launch on another stream while checks are queued: wait for
     * them, so that the two streams' kernels never run at the same time and
     * each check still names exactly one launch. */
    if (__atomic_load_n(&pend_head, __ATOMIC_RELAXED) ==
            __atomic_load_n(&pend_tail, __ATOMIC_RELAXED) ||
        l->stream == __atomic_load_n(&last_stream, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&scan_lock);
    if (pend_head != pend_tail && sync_for_scan() == 0)
        slots_drain();
    pthread_mutex_unlock(&scan_lock);
}

void atl_redzone_sync_post(const struct atl_sync *s, CUresult r)
{
    if (!pad || r != CUDA_SUCCESS)
        return;
    if (mode == CHECK_SYNC) {
        atl_redzone_scan_all(atl_hook_names[s->hook]);
    } else if (mode == CHECK_LAUNCH && __atomic_load_n(&pend_head, __ATOMIC_RELAXED) !=
                                           __atomic_load_n(&pend_tail, __ATOMIC_RELAXED)) {
        /* the program waited: the queued checks are likely done; read them */
        pthread_mutex_lock(&scan_lock);
        slots_poll(0);
        pthread_mutex_unlock(&scan_lock);
    }
}

void atl_redzone_capture_post(const struct atl_capture *c, CUresult r)
{
    if (!pad)
        return;
    if (c->begin) {
        if (r == CUDA_SUCCESS)
            __atomic_add_fetch(&captures, 1, __ATOMIC_ACQ_REL);
        return;
    }
    /* an end that found a capture (valid or invalidated) closes it */
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
        r == CUDA_ERROR_STREAM_CAPTURE_UNJOINED) {
        int n = __atomic_load_n(&captures, __ATOMIC_ACQUIRE);
        while (n > 0 && !__atomic_compare_exchange_n(&captures, &n, n - 1, 0, __ATOMIC_ACQ_REL,
                                                     __ATOMIC_ACQUIRE))
            ;
    }
}

void atl_redzone_teardown(const char *where)
{
    if (!pad)
        return;
    /* The last moment the device memory is readable. Afterwards the zones
     * are forgotten: their memory goes with the context, and a scan kernel
     * reading it would fault. (The ledger keeps the records: the program
     * never freed them, which is what the leak list says.) At exit the locks
     * are waited for only so long (atl_exit_lock). */
    if (atl_exit_lock(&scan_lock, "the red-zone check at exit") != 0)
        return;
    scan_locked(where, NULL);
    if (atl_exit_lock(&zones_lock, "the red-zone check at exit") == 0) {
        nzones = 0;
        atl_addrmap_clear(&zone_at);
        version++;
        pthread_mutex_unlock(&zones_lock);
    }
    pthread_mutex_unlock(&scan_lock);
}

static int by_size_desc(const void *a, const void *b)
{
    const struct atl_alloc_rec *x = a, *y = b;
    return x->bytes < y->bytes   ? 1
           : x->bytes > y->bytes ? -1
                                 : (x->seq > y->seq) - (x->seq < y->seq);
}

static void leak_report(void)
{
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
    atl_log(ATL_WARN, "leaks: %zu allocations never freed, %zu bytes in total (largest first):", n,
            total);
    for (size_t i = 0; i < n && i < 100; i++) {
        char site[512];
        atl_stack_site(&all[i].site, site, sizeof site);
        atl_log(ATL_WARN, "leaks:   alloc#%llu %zu bytes at 0x%llx, allocated at %s",
                (unsigned long long)all[i].seq, all[i].bytes, (unsigned long long)all[i].ptr, site);
    }
    if (n > 100)
        atl_log(ATL_WARN, "leaks:   ... and %zu more", n - 100);
    free(all);
}

void atl_redzone_exit(void)
{
    if (!active)
        return;
    if (pad) {
        atl_redzone_teardown("exit");
        if (skipped_capture)
            atl_log(ATL_INFO, "redzone: %llu checks were skipped while a stream capture was active",
                    (unsigned long long)skipped_capture);
        atl_log(ATL_WARN, "redzone: %llu overruns found in %llu guarded allocations (%llu checks)",
                (unsigned long long)overruns, (unsigned long long)guarded_total,
                (unsigned long long)checks);
    }
    if (leaks_on)
        leak_report();
}

int atl_redzone_poison(uint64_t lo, uint64_t hi)
{
    if (!pad)
        return 0;
    int n = 0;
    pthread_mutex_lock(&zones_lock);
    size_t cnt = nzones;
    struct zone *copy = cnt ? malloc(cnt * sizeof *copy) : NULL;
    if (copy)
        memcpy(copy, zones, cnt * sizeof *copy);
    pthread_mutex_unlock(&zones_lock);
    for (size_t i = 0; copy && i < cnt; i++) {
        if (copy[i].seq < lo || copy[i].seq > hi)
            continue;
        if (atl_drv.cuMemsetD8_v2(copy[i].start, fill, copy[i].len) == CUDA_SUCCESS) {
            zone_set_watched(copy[i].base, 1);
            n++;
        }
    }
    free(copy);
    return n;
}
