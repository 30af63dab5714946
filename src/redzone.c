/*
 * Red zones: a poisoned tail after every guarded driver allocation, checked
 * on the GPU. (The allocation ledger's reports, which run with red zones
 * too: src/leaks.c.)
 *
 * Why tails and not a sanitizer: compute-sanitizer memcheck costs 12x to
 * 44x per launch on the H200 and cannot see an overrun that stays inside
 * one big allocation a program carves up. A tail costs one memset at birth
 * and one read per check, so it can stay on; it finds overruns past the end
 * of each driver allocation (writes before the start are not seen).
 *
 * Two kinds of check (docs/redzone.md):
 * - queued checks, of a few zones, on the program's own stream and never
 *   waited for: before every free of a guarded allocation (that zone), and
 *   in launch mode after every launch (the zones of the allocations its
 *   parameters point into). Stream order places them exactly; their
 *   verdicts land in mapped host memory and are read at the program's next
 *   synchronisation, at the next check queued, or when the ring of verdicts
 *   fills (only then is the oldest waited for);
 * - full checks of every zone, at host syncs (sync and launch modes), at
 *   context teardown and exit: they synchronise the context first.
 * No check runs while a stream capture is in progress (a sync or a launch on
 * the legacy stream would invalidate the capture, and a kernel or memset
 * into a capturing stream would be recorded into the user's graph). A check
 * skipped for a capture is simply made at the next opportunity.
 */
#include "redzone.h"

#include "addrmap.h"
#include "capture.h"
#include "config.h"
#include "driver.h"
#include "fault.h"
#include "kernels.h"
#include "ledger.h"
#include "log.h"
#include "pools.h"
#include "redzone_gpu.h"
#include "services.h"
#include "stack.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CHECK_FREE, CHECK_SYNC, CHECK_LAUNCH };

static size_t pad; /* ATLAS_REDZONE; 0: no red zones */
static unsigned char fill;
static int mode;
static int active; /* red zones on (the ledger's reports are src/leaks.c's) */
static uint64_t min_idx;

static uint64_t overruns, guarded_total, checks, skipped_capture;

/* ---- the zone set -----------------------------------------------------------
 * The ledger holds full records (call stacks and all); a scan needs only
 * (start, length), so the zones keep their own compact array, and the copy
 * into the full check's table is redone only when `version` moved. `lo` and
 * `hi` bound every zone's allocation (never shrunk): a parameter word outside
 * them is no pointer to a guarded allocation, without a lookup. */
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
static uint64_t zones_lo = UINT64_MAX, zones_hi; /* read without the lock */

static void zone_add(const struct zone *z)
{
    pthread_mutex_lock(&zones_lock);
    size_t i;
    if (z->base < __atomic_load_n(&zones_lo, __ATOMIC_RELAXED))
        __atomic_store_n(&zones_lo, z->base, __ATOMIC_RELAXED);
    if (z->start + z->len > __atomic_load_n(&zones_hi, __ATOMIC_RELAXED))
        __atomic_store_n(&zones_hi, z->start + z->len, __ATOMIC_RELAXED);
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

/* Sets the watch of allocation seq's zone (if still live: its base may be
 * another allocation's by now). */
static void zone_set_watched(CUdeviceptr base, uint64_t seq, int watched)
{
    size_t i;
    pthread_mutex_lock(&zones_lock);
    if (atl_addrmap_get(&zone_at, base, &i) && zones[i].seq == seq) {
        zones[i].watched = watched;
        version++;
    }
    pthread_mutex_unlock(&zones_lock);
}

/* The watched zone of the guarded allocation that address v points into
 * (its first byte up to the end of its red zone, so a pointer one past the
 * end counts). With zones_lock held. A launch's parameter words repeat from
 * launch to launch (the same buffers), so the answers are kept in a small
 * direct-mapped cache: a hit costs a few compares, a miss a lookup in the
 * ledger (O(log n)) and here (O(1)). An entry names its zone by index and
 * by allocation number, and is used only while the zone at that index is
 * still that allocation's: zone_remove moves zones about, and numbers are
 * never reused, so nothing has to be invalidated. */
#define HOLD_CACHE 256
static struct {
    uint64_t lo, hi; /* the allocation: base up to the end of its red zone */
    uint64_t seq;
    size_t i;
} hold_cache[HOLD_CACHE];

static int zone_holding_locked(uint64_t v, struct zone *out)
{
    size_t h = (size_t)(((v >> 4) * 0x9E3779B97F4A7C15ull) >> 56) % HOLD_CACHE;
    size_t i = hold_cache[h].i;
    if (!(v - hold_cache[h].lo < hold_cache[h].hi - hold_cache[h].lo && i < nzones &&
          zones[i].seq == hold_cache[h].seq)) {
        /* most pointers are an allocation's base: one hash probe; the
         * others walk the ledger's tree (14 levels at 10,000 allocations,
         * each a cache miss once they outgrow the cache) */
        CUdeviceptr base;
        uint64_t seq;
        if (!atl_addrmap_get(&zone_at, v, &i) &&
            (!atl_ledger_find_guarded(v, &base, &seq) || !atl_addrmap_get(&zone_at, base, &i) ||
             zones[i].seq != seq))
            return 0;
        /* the zone's allocation ends where its red zone does */
        hold_cache[h].lo = zones[i].base;
        hold_cache[h].hi = zones[i].start + zones[i].len;
        hold_cache[h].seq = zones[i].seq;
        hold_cache[h].i = i;
    }
    if (!zones[i].watched)
        return 0;
    *out = zones[i];
    return 1;
}

/* ---- recent launches ----------------------------------------------------------
 * Outside a launch's own check an overrun is found later than it happened;
 * the launches since the last clean full check are the suspects. They are
 * the launch history's answer (src/fault.h: the launches since number N),
 * whose ring every launch writes without a lock anyway: nothing of ours on
 * the launch path. */
#define SUSPECTS 16
static uint64_t clean_upto; /* launches up to this one passed a full check */

static void launch_line(const char *lead, uint64_t seq, void *func, const unsigned g[3],
                        const unsigned b[3])
{
    char name[256];
    atl_kernel_name(func, name, sizeof name);
    atl_log(ATL_ERROR, "redzone: %slaunch#%llu kernel=%s grid=(%u,%u,%u) block=(%u,%u,%u)", lead,
            (unsigned long long)seq, name, g[0], g[1], g[2], b[0], b[1], b[2]);
}

/* ---- reports ------------------------------------------------------------------
 * Who found an overrun, for the report. */
enum { BY_LAUNCH, BY_FREE, BY_FULL };
struct finder {
    int by;
    const char *where; /* BY_FREE, BY_FULL: the entry point (or "exit") */
    uint64_t upto;     /* BY_FREE, BY_FULL: the newest launch made before the check */
    int unreached;     /* BY_FULL after launch checks: no launch's parameters reached it */
    int defer;         /* a full check in launch mode before exit: see full_report */
    /* BY_LAUNCH: the launch, its stream, and the parameter word that reached the zone */
    uint64_t seq;
    void *func;
    unsigned grid[3], block[3];
    CUstream stream;
    unsigned arg, off;
    const char *whole; /* BY_LAUNCH: a full check, and why (what the launch reaches is not known) */
};

static void suspect_line(const struct atl_ring_ent *e, void *ctx)
{
    (void)ctx;
    if (e->hook & ATL_RING_GRAPH)
        atl_log(ATL_ERROR, "redzone:   launch#%llu graph=%p", (unsigned long long)e->seq, e->obj);
    else
        launch_line("  ", e->seq, e->obj, e->grid, e->block);
}

static void suspects(uint64_t seq, const struct finder *how)
{
    uint64_t from = __atomic_load_n(&clean_upto, __ATOMIC_ACQUIRE), last = how->upto;
    uint64_t n = last > from ? last - from : 0;
    char lead[256];
    if (how->unreached)
        snprintf(lead, sizeof lead,
                 "redzone: alloc#%llu found by the full check at %s; no launch's parameters "
                 "reached it (a pointer held in device memory?)",
                 (unsigned long long)seq, how->where);
    else
        snprintf(lead, sizeof lead, "redzone: alloc#%llu found at %s", (unsigned long long)seq,
                 how->where);
    if (n == 0) {
        atl_log(ATL_ERROR,
                "%s: no kernel launch since the last clean check (a graph launch, a copy, a "
                "memset or a host write through managed memory?)",
                lead);
        return;
    }
    atl_log(ATL_ERROR,
            "%s: written by one of the %llu launches since the last clean check%s:", lead,
            (unsigned long long)n, n > SUSPECTS ? " (the newest listed)" : "");
    atl_fault_launches_since(from, last, SUSPECTS, suspect_line, NULL);
}

static void site_of(CUdeviceptr base, const struct atl_stack *known, char *buf, size_t len)
{
    struct atl_alloc_rec rec;
    if (known)
        atl_stack_site(known, buf, len);
    else if (atl_ledger_find(base, &rec) && rec.ptr == base)
        atl_stack_site(&rec.site, buf, len);
    else
        snprintf(buf, len, "?");
}

/* Allocations reported, by number: a zone is reported once, though a check
 * queued before the report saw it too (called with scan_lock held). */
static struct atl_addrmap reported;

/* One report per corrupted zone; afterwards the zone is no longer watched
 * (atlas_redzone_poison() re-arms it). */
static int report(const struct zone *z, const struct atl_stack *known_site, unsigned bad,
                  size_t first, size_t last, const struct finder *how)
{
    size_t was;
    if (atl_addrmap_get(&reported, z->seq, &was))
        return 0;
    atl_addrmap_put(&reported, z->seq, 1);
    char site[512];
    site_of(z->base, known_site, site, sizeof site);
    size_t lo = z->bytes + first, hi = z->bytes + last;
    atl_log(ATL_ERROR,
            "redzone overrun: alloc#%llu %zu bytes at 0x%llx, allocated at %s: %u bytes corrupted "
            "at +%zu..+%zu%s",
            (unsigned long long)z->seq, z->bytes, (unsigned long long)z->base, site, bad, lo, hi,
            last + 1 == z->len ? " (up to the end of the red zone: the write may reach further)"
                               : "");
    if (how->by == BY_LAUNCH) {
        launch_line("culprit: ", how->seq, how->func, how->grid, how->block);
        if (how->whole)
            atl_log(ATL_ERROR,
                    "redzone: found by the full check after launch#%llu on stream 0x%llx (%s: "
                    "every zone was checked)",
                    (unsigned long long)how->seq, (unsigned long long)(uintptr_t)how->stream,
                    how->whole);
        else
            atl_log(ATL_ERROR,
                    "redzone: found by the check after launch#%llu on stream 0x%llx, which "
                    "reached alloc#%llu through arg%u+0x%x",
                    (unsigned long long)how->seq, (unsigned long long)(uintptr_t)how->stream,
                    (unsigned long long)z->seq, how->arg, how->off);
    } else {
        suspects(z->seq, how);
    }
    __atomic_add_fetch(&overruns, 1, __ATOMIC_RELAXED);
    atl_note_finding(ATL_FINDING_OVERRUN, 1);
    zone_set_watched(z->base, z->seq, 0);
    return 1;
}

/* ---- the kernels ----------------------------------------------------------------
 * PTX built from src/redzone_scan.cu at build time and embedded
 * (build/gen/redzone_ptx.c): PTX, not a cubin, so the driver JIT-compiles it
 * for whatever GPU is there; generated from CUDA source rather than written
 * by hand so that it stays readable and checked by the compiler. Their zone
 * lists and answers live in page-locked host memory mapped into the device:
 * the host reads an answer without a copy call.
 *
 * Where the kernels cannot be loaded (a build without nvcc, a driver that
 * refuses the PTX) each zone is read back with one device-to-host copy
 * after a sync: correct, slower; said once at info level. */
extern const int atl_redzone_ptx_stub; /* built without nvcc: entry names only */

static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static int kernel_state; /* 0 untried, 1 loaded, -1 unavailable */
static CUmodule kernel_mod;
static CUfunction scan_fn;
static CUfunction check_fn; /* the queued check; NULL: synchronous checks */
/* check_fn waits for the grid before it: queue it as a dependent launch.
 * Read by launches made without scan_lock: atomic. */
static int check_pdl;
static struct atl_rz_zone *tab;   /* mapped host memory */
static struct atl_rz_result *res; /* mapped host memory */
static CUdeviceptr dtab, dres;
static size_t captab;
static struct zone *snap; /* host copy of the zones scanned */
static size_t nsnap, capsnap;
static uint64_t snap_version = (uint64_t)-1;
static unsigned char *readback; /* fallback: one zone's bytes */
static size_t capreadback;

/* The current context's GPU is sm_90 or later (programmatic dependent
 * launches) and the driver can queue a launch with attributes. */
static int device_takes_pdl(void)
{
    CUdevice dev;
    int major = 0;
    return atl_drv.cuLaunchKernelEx && atl_drv.cuCtxGetDevice && atl_drv.cuDeviceGetAttribute &&
           atl_drv.cuCtxGetDevice(&dev) == CUDA_SUCCESS &&
           atl_drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                        dev) == CUDA_SUCCESS &&
           major >= 9;
}

static void kernel_load(void)
{
    char why[96] = "built without nvcc";
    kernel_state = -1;
    __atomic_store_n(&check_pdl, 0, __ATOMIC_RELAXED);
    if (atl_redzone_ptx[0] && atl_drv.cuModuleLoadData && atl_drv.cuModuleGetFunction &&
        atl_drv.cuLaunchKernel && atl_drv.cuMemAllocHost_v2) {
        CUmodule m;
        /* the sm_90 build first where the GPU takes it; the portable one
         * if the driver refuses that */
        int pdl =
            device_takes_pdl() && atl_drv.cuModuleLoadData(&m, atl_redzone_ptx_pdl) == CUDA_SUCCESS;
        __atomic_store_n(&check_pdl, pdl, __ATOMIC_RELAXED);
        CUresult r = pdl ? CUDA_SUCCESS : atl_drv.cuModuleLoadData(&m, atl_redzone_ptx);
        if (r == CUDA_SUCCESS) {
            kernel_mod = m;
            r = atl_drv.cuModuleGetFunction(&scan_fn, m, ATL_RZ_SCAN_ENTRY);
        }
        if (r == CUDA_SUCCESS) {
            kernel_state = 1;
            if (atl_drv.cuModuleGetFunction(&check_fn, m, ATL_RZ_CHECK_ENTRY) != CUDA_SUCCESS)
                check_fn = NULL;
            atl_log(ATL_INFO, "redzone: check kernels loaded (%s)",
                    pdl ? "sm_90 build: each check is a dependent launch"
                        : "portable build: plain launches");
            return;
        }
        __atomic_store_n(&check_pdl, 0, __ATOMIC_RELAXED);
        char nm[64];
        if (!atl_redzone_ptx_stub)
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
 * changed since the last full check. */
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
            tab[i] = (struct atl_rz_zone){snap[i].start, snap[i].len, fill, 0};
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

static unsigned launching; /* checks whose launch is being made, atomic */

/* Waits (a tenth of a second at most: the thread making the launch may be
 * the one waiting, in a signal handler) until no check's launch is being
 * made. 0 when none is. */
static int launching_wait(void)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (__atomic_load_n(&launching, __ATOMIC_ACQUIRE)) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > 100000000L)
            return -1;
    }
    return 0;
}

/* The device is readable now? Skips (quietly) during captures and after
 * teardown, and says once why a sync failed otherwise. */
static int sync_for_scan(void)
{
    /* a check whose launch another thread is making now is queued after
     * the sync, and would be taken for one that never ran */
    launching_wait();
    if (atl_capture_any()) {
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

/* ---- queued checks ----------------------------------------------------------------
 * A check of a few zones is queued on the program's stream (after a launch,
 * before a free) and never waited for: its verdict goes to a slot of a ring
 * in mapped host memory, and the zones' details (and who queued the check)
 * stay here, in `pend`, for the report. Slots are read in the order they
 * were queued, at the program's syncs, at the next check queued and at
 * frees; only when the ring is full is the oldest waited for (its stream
 * synchronised). A check reads only the zones listed in its own slot, so a
 * zone table rebuilt meanwhile cannot change what a check in flight reads.
 * All of it under scan_lock, but for the driver's launch of a check after a
 * program's launch: the slot is taken under the lock and the launch made
 * without it (so threads launching on their own streams do not wait for
 * each other's checks), and its outcome is then written into the slot's
 * `state` with a compare-and-swap, which fails harmlessly when the slot was
 * given up meanwhile (a context teardown) and taken again. Readers stop at
 * a slot whose launch is still being made. */
#define SLOTS 1024
#define SLOT_LAUNCHING 1u /* taken; its launch is being made */
#define SLOT_QUEUED 2u
#define SLOT_FAILED 3u /* the driver refused the launch: nothing to read */
#define SLOT_STATE(ticket, st) ((uint64_t)(ticket) << 2 | (st))
struct pending {
    uint64_t ticket; /* what the kernel writes into `done` */
    uint64_t state;  /* SLOT_STATE(ticket, SLOT_...), atomic */
    struct finder how;
    unsigned nz;
    struct zone z[ATL_RZ_SLOT_ZONES];
    unsigned arg[ATL_RZ_SLOT_ZONES], off[ATL_RZ_SLOT_ZONES]; /* BY_LAUNCH */
    /* BY_FREE, one per zone (a batch of held frees has several): where the
     * allocation was made (the ledger has dropped the record) and the newest
     * launch before its free */
    int has_site;
    struct atl_stack site[ATL_RZ_SLOT_ZONES];
    uint64_t upto[ATL_RZ_SLOT_ZONES];
};
static struct atl_rz_slot *slots; /* mapped host memory */
static CUdeviceptr dslots;
static struct pending pend[SLOTS];
static uint64_t pend_head, pend_tail; /* checks queued [tail, head) */

/* Who found zone i of p, for its report: p's finder with that zone's
 * parameter word (after a launch) or launch horizon (before a free). */
static struct finder zone_finder(const struct pending *p, unsigned i)
{
    struct finder how = p->how;
    how.arg = p->arg[i];
    how.off = p->off[i];
    if (p->has_site)
        how.upto = p->upto[i];
    return how;
}

static void site_copy(struct atl_stack *to, const struct atl_stack *from)
{
    to->n = from->n;
    memcpy(to->pc, from->pc, (size_t)from->n * sizeof *from->pc);
}

static void slot_process(uint64_t k)
{
    struct atl_rz_slot *sl = &slots[k % SLOTS];
    struct pending *p = &pend[k % SLOTS];
    __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
    /* the kernel writes `done` last: an acquire load of it orders the reads
     * of the record after it (a plain fence is not supported under TSan) */
    (void)__atomic_load_n(&sl->done, __ATOMIC_ACQUIRE);
    unsigned nbad = __atomic_load_n(&sl->nbad, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < nbad && i < ATL_RZ_RECS; i++) {
        struct atl_rz_result r;
        memcpy(&r, &sl->rec[i], sizeof r);
        if (r.zone >= p->nz)
            continue;
        struct finder how = zone_finder(p, r.zone);
        report(&p->z[r.zone], p->has_site ? &p->site[r.zone] : NULL, r.bad, r.first, r.last, &how);
    }
    if (nbad > ATL_RZ_RECS)
        atl_log(ATL_ERROR, "redzone: the check after launch#%llu found %u more zones, not listed",
                (unsigned long long)p->how.seq, nbad - ATL_RZ_RECS);
}

/* Reads the finished slots, in order; with `all` (after a context sync
 * made when no launch was being made), every queued one (a slot still
 * unfinished then never ran: dropped). Stops at a slot whose launch is
 * being made. */
static void slots_poll(int all)
{
    while (pend_tail < pend_head) {
        uint64_t k = pend_tail;
        const struct pending *q = &pend[k % SLOTS];
        uint64_t st = __atomic_load_n(&q->state, __ATOMIC_ACQUIRE);
        if (st == SLOT_STATE(q->ticket, SLOT_LAUNCHING))
            break;
        if (st == SLOT_STATE(q->ticket, SLOT_QUEUED)) {
            if (__atomic_load_n(&slots[k % SLOTS].done, __ATOMIC_ACQUIRE) == q->ticket)
                slot_process(k);
            else if (!all)
                break;
        }
        __atomic_store_n(&pend_tail, k + 1, __ATOMIC_RELAXED);
    }
}

static int pending_any(void)
{
    return __atomic_load_n(&pend_head, __ATOMIC_RELAXED) !=
           __atomic_load_n(&pend_tail, __ATOMIC_RELAXED);
}

/* The ring is full: waits for the oldest check (its stream; the context if
 * that fails, say the program destroyed the stream) and reads it. */
static void wait_oldest(void)
{
    const struct pending *p = &pend[pend_tail % SLOTS];
    if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == SLOT_STATE(p->ticket, SLOT_LAUNCHING) &&
        launching_wait() != 0)
        return; /* still being launched: the caller checks another way */
    if (atl_own_result(atl_drv.cuStreamSynchronize(p->how.stream)) != CUDA_SUCCESS &&
        sync_for_scan() != 0) {
        __atomic_store_n(&pend_tail, pend_tail + 1, __ATOMIC_RELAXED); /* give it up */
        return;
    }
    slots_poll(0);
    if (pend_head - pend_tail == SLOTS)
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

/* Launches the check kernel on `stream`, on sm_90 and up as a programmatic
 * dependent launch: the driver's enqueue costs less (on the H200 about
 * 0.6 us of the 3.4 us a tiny launch costs the host) and the kernel waits
 * for what precedes it itself (griddepcontrol.wait) before it reads a zone.
 * After a launch that is the launch's grid; before a free it may be any
 * operation, and an operation that is not a kernel (a copy, a memset) never
 * lets the check start early: the wait then returns at once. A driver that
 * refuses the attribute, where a plain launch then works, gets plain
 * launches from then on. */
#define CHECK_THREADS 256 /* the check's one block */
static CUresult check_queue_launch(CUfunction fn, void **args, CUstream stream)
{
    CUresult dep = CUDA_SUCCESS; /* what the driver said to a dependent launch */
    if (__atomic_load_n(&check_pdl, __ATOMIC_RELAXED)) {
        CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
        at.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig cfg = {.gridDimX = 1,
                              .gridDimY = 1,
                              .gridDimZ = 1,
                              .blockDimX = CHECK_THREADS,
                              .blockDimY = 1,
                              .blockDimZ = 1,
                              .hStream = stream,
                              .attrs = &at,
                              .numAttrs = 1};
        dep = atl_drv.cuLaunchKernelEx(&cfg, fn, args, NULL);
        if (dep == CUDA_SUCCESS)
            return dep;
    }
    CUresult r = atl_drv.cuLaunchKernel(fn, 1, 1, 1, CHECK_THREADS, 1, 1, 0, stream, args, NULL);
    if (dep != CUDA_SUCCESS && r == CUDA_SUCCESS &&
        __atomic_exchange_n(&check_pdl, 0, __ATOMIC_RELAXED)) {
        char nm[64];
        atl_log(ATL_INFO,
                "redzone: the driver refused a dependent launch of the check (%s): plain "
                "launches from now on",
                atl_error_name(dep, nm, sizeof nm));
    }
    return r;
}

/* 1 when the check kernel and its verdict ring are there (made now if not
 * yet tried). With scan_lock held. */
static int checks_ready_locked(void)
{
    /* loading a module and allocating page-locked memory are among the
     * calls a capture in the global mode forbids: not while one is on (a
     * launch onto a stream that is not capturing is fine) */
    if ((kernel_state == 0 || !slots) && atl_capture_any())
        return 0;
    if (kernel_state == 0)
        kernel_load();
    return kernel_state == 1 && check_fn && slots_ready() == 0;
}

/* A check with its slot taken, ready to be launched: what the kernel is
 * given. */
struct check_call {
    struct pending *q;
    CUfunction fn;
    struct atl_rz_list list;
    unsigned n;
    CUdeviceptr slot;
    unsigned long long ticket;
};

/* Takes a slot for the check of p's zones and fills it: the launch is the
 * caller's (check_launch), with or without scan_lock. 0, or -1 when the
 * caller must check another way. With scan_lock held. */
static int check_take_locked(const struct pending *p, struct check_call *c)
{
    if (!checks_ready_locked())
        return -1;
    slots_poll(0);
    if (pend_head - pend_tail == SLOTS)
        wait_oldest();
    if (pend_head - pend_tail == SLOTS)
        return -1;
    uint64_t k = pend_head;
    struct atl_rz_slot *sl = &slots[k % SLOTS];
    sl->done = 0;
    sl->nbad = 0;
    memset(&c->list, 0, sizeof c->list);
    for (unsigned i = 0; i < p->nz; i++)
        c->list.z[i] = (struct atl_rz_zone){p->z[i].start, p->z[i].len, fill, 0};
    /* only what p holds: a launch's check has no call stack, and most
     * lists are short */
    struct pending *q = &pend[k % SLOTS];
    q->ticket = k + 1;
    q->how = p->how;
    q->nz = p->nz;
    memcpy(q->z, p->z, p->nz * sizeof *p->z);
    memcpy(q->arg, p->arg, p->nz * sizeof *p->arg);
    memcpy(q->off, p->off, p->nz * sizeof *p->off);
    q->has_site = p->has_site;
    for (unsigned i = 0; p->has_site && i < p->nz; i++) {
        site_copy(&q->site[i], &p->site[i]);
        q->upto[i] = p->upto[i];
    }
    __atomic_store_n(&q->state, SLOT_STATE(k + 1, SLOT_LAUNCHING), __ATOMIC_RELAXED);
    __atomic_add_fetch(&launching, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&pend_head, k + 1, __ATOMIC_RELAXED);
    c->q = q;
    c->fn = check_fn;
    c->n = p->nz;
    c->slot = dslots + (k % SLOTS) * sizeof *slots;
    c->ticket = k + 1;
    return 0;
}

/* Launches a taken check on `stream` and says so in its slot. */
static CUresult check_launch(struct check_call *c, CUstream stream)
{
    void *args[] = {&c->list, &c->n, &c->slot, &c->ticket};
    CUresult r = check_queue_launch(c->fn, args, stream);
    uint64_t want = SLOT_STATE(c->ticket, SLOT_LAUNCHING);
    __atomic_compare_exchange_n(
        &c->q->state, &want, SLOT_STATE(c->ticket, r == CUDA_SUCCESS ? SLOT_QUEUED : SLOT_FAILED),
        0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&launching, 1, __ATOMIC_RELEASE);
    return r;
}

/* Queues the check of p's zones on p->how.stream. 0 when queued, -1 when
 * the caller must check another way. With scan_lock held. */
static int check_queue_locked(const struct pending *p)
{
    struct check_call c;
    if (check_take_locked(p, &c) != 0)
        return -1;
    return check_launch(&c, p->how.stream) == CUDA_SUCCESS ? 0 : -1;
}

/* The check before a free (of p's zones): queued, or where no kernel can be
 * queued, made now with copies after everything queued. With scan_lock
 * held. */
static void free_check_locked(const struct pending *p)
{
    if (check_queue_locked(p) == 0 || sync_for_scan() != 0)
        return;
    slots_poll(1);
    for (unsigned i = 0; i < p->nz; i++) {
        unsigned bad;
        size_t first = 0, last = 0;
        __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
        if (zone_read(&p->z[i], &bad, &first, &last) == 0 && bad) {
            struct finder how = zone_finder(p, i);
            report(&p->z[i], &p->site[i], bad, first, last, &how);
        }
    }
}

/* ---- frees held back ------------------------------------------------------------
 * A training step frees a few dozen tensors, and a check queued before each
 * free is one kernel launch each: on the H200 about as much host time as one
 * of the program's own small launches. Frees on the legacy default stream
 * (PyTorch's default stream, cudart's stream 0) of allocations up to
 * HELD_ALLOC_MAX are therefore held back, up to ATL_RZ_SLOT_ZONES of them and
 * HELD_BYTES_MAX in all, and released together: one check of all their
 * zones, queued on that stream, then the driver's frees in the program's
 * order. The memory returns to the pool later than the program asked, never
 * earlier, which stream order allows. The batch is released when it is full,
 * before every host sync (so that sync's verdicts include it), before a
 * capture begins, at every full check (teardown, exit), when the program
 * frees a held pointer again (the driver then answers what it would have),
 * and when an allocation fails for memory (released, the context
 * synchronised, the allocation retried once: atl_redzone_release_held).
 * Only the legacy stream: the program cannot destroy it under a held free,
 * and every thread names the same one (a per-thread default stream is the
 * calling thread's own). Nothing is held while a capture is active: work on
 * the legacy stream would then invalidate it. Under scan_lock. */
#define HELD_ALLOC_MAX ((size_t)16 << 20)
#define HELD_BYTES_MAX ((size_t)64 << 20)
static struct {
    CUcontext ctx;   /* current when the frees were made */
    CUstream stream; /* as the program named it: NULL or CU_STREAM_LEGACY */
    size_t bytes;
    CUdeviceptr ptr[ATL_RZ_SLOT_ZONES];
    struct pending p; /* the batch's check: p.nz frees, their zones, sites and launches */
} held;
static unsigned held_n; /* held.p.nz, for a look without the lock */
static uint64_t held_frees, held_batches;

/* Queues the batch's check and the driver's frees; the verdicts come with
 * the next poll, like any queued check. */
static void held_release_locked(void)
{
    if (!held.p.nz || atl_capture_any())
        return;
    CUcontext cur = NULL;
    int other = atl_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != held.ctx;
    int gone = other && atl_drv.cuCtxSetCurrent(held.ctx) != CUDA_SUCCESS;
    if (!gone)
        free_check_locked(&held.p);
    /* a context that is gone took its memory with it: nothing to free */
    for (unsigned i = 0; i < held.p.nz && !gone; i++) {
        CUresult r = atl_own_result(atl_drv.cuMemFreeAsync(held.ptr[i], held.stream));
        static int said;
        char nm[64];
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED &&
            !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            atl_log(ATL_INFO, "redzone: the held free of alloc#%llu failed (%s)",
                    (unsigned long long)held.p.z[i].seq, atl_error_name(r, nm, sizeof nm));
    }
    held_batches++;
    held.p.nz = 0;
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
    if (!checks_ready_locked() || atl_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur)
        return 0;
    if (held.p.nz &&
        (held.ctx != cur || held.stream != f->stream || held.p.nz == ATL_RZ_SLOT_ZONES ||
         held.bytes + z->bytes + z->len > HELD_BYTES_MAX))
        held_release_locked();
    if (held.p.nz == 0) {
        held.ctx = cur;
        held.stream = f->stream;
        held.bytes = 0;
        held.p.how =
            (struct finder){.by = BY_FREE, .where = atl_hook_names[f->hook], .stream = f->stream};
        held.p.has_site = 1;
    }
    unsigned i = held.p.nz;
    held.ptr[i] = f->ptr;
    held.p.z[i] = *z;
    site_copy(&held.p.site[i], &f->rec.site);
    held.p.upto[i] = atl_fault_last_launch();
    held.p.nz = i + 1;
    held.bytes += z->bytes + z->len;
    __atomic_store_n(&held_n, held.p.nz, __ATOMIC_RELAXED);
    held_frees++;
    return 1;
}

/* The program frees ptr, which no live allocation holds: if a held free
 * has it, the batch goes first, so that the driver answers this free as it
 * would have without us (a double free). */
static void held_refree(CUdeviceptr ptr)
{
    pthread_mutex_lock(&scan_lock);
    for (unsigned i = 0; i < held.p.nz; i++)
        if (held.ptr[i] == ptr) {
            held_release_locked();
            break;
        }
    pthread_mutex_unlock(&scan_lock);
}

static void held_release(void)
{
    if (!__atomic_load_n(&held_n, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&scan_lock);
    held_release_locked();
    pthread_mutex_unlock(&scan_lock);
}

int atl_redzone_release_held(void)
{
    if (!pad || !__atomic_load_n(&held_n, __ATOMIC_RELAXED))
        return 0;
    pthread_mutex_lock(&scan_lock);
    held_release_locked();
    int ok = held.p.nz == 0 && sync_for_scan() == 0;
    pthread_mutex_unlock(&scan_lock);
    return ok;
}

/* A context is being torn down, perhaps the one the kernels and the mapped
 * buffers live in: the driver would free them with it, and the next check
 * would write into freed memory. They are freed now, while valid, and made
 * again at the next check, in whatever context is current then (a
 * teardown of another context costs a reload). Checks still in flight
 * (the sync before failed) keep their memory: it is let go, not freed. */
static void kernels_forget_locked(void)
{
    int idle = pend_tail == pend_head;
    __atomic_store_n(&pend_tail, pend_head, __ATOMIC_RELAXED);
    if (idle && slots && atl_drv.cuMemFreeHost)
        atl_drv.cuMemFreeHost(slots);
    if (idle && tab && atl_drv.cuMemFreeHost) {
        atl_drv.cuMemFreeHost(tab);
        atl_drv.cuMemFreeHost(res);
    }
    if (idle && kernel_mod && atl_drv.cuModuleUnload)
        atl_drv.cuModuleUnload(kernel_mod);
    slots = NULL;
    tab = NULL;
    res = NULL;
    captab = 0;
    snap_version = (uint64_t)-1;
    kernel_mod = NULL;
    scan_fn = check_fn = NULL;
    if (kernel_state == 1) /* a driver that refused the PTX refuses it again */
        kernel_state = 0;
}

/* ---- full checks --------------------------------------------------------------------
 * In launch mode another thread's launch may have overrun a zone and not yet
 * queued its own check when a full check (at this thread's sync) reads the
 * zone: reported then, the overrun would be put down to no launch. While
 * such launches are in flight (`unchecked`, counted from before their
 * driver call until their check is queued), a full check that may defer
 * (how->defer) leaves a corrupted zone watched and unreported, and the
 * launches since the last clean check suspects, for the launch's own check
 * to find; a full check with no launch in flight (at the latest the one at
 * exit) reports what none found. */
static unsigned unchecked; /* atomic */

static int full_report(const struct zone *z, unsigned bad, size_t first, size_t last,
                       const struct finder *how, int defer, int *left)
{
    if (defer) {
        ++*left;
        return 0;
    }
    return report(z, NULL, bad, first, last, how);
}

/* ---- every zone --------------------------------------------------------------------
 * Every watched zone, after a context sync. The sync is what makes a zone
 * safe to include: its poison (a memset on the allocation's stream, which
 * the check's stream need not wait for) is complete, as is every queued
 * check, whose verdicts are read first. `culprit`: name that launch (a
 * launch whose reach could not be told). Called with scan_lock held (it
 * guards the mapped tables; the driver calls made under it never call back
 * into atlastrace). */
static int scan_locked(const struct finder *how, const struct atl_launch *culprit, const char *why)
{
    if (!pad)
        return 0;
    if (kernel_state == 0)
        kernel_load();
    int gpu = kernel_state == 1;
    held_release_locked(); /* their zones are checked with the rest */
    uint64_t upto = atl_fault_last_launch();
    if (sync_for_scan() != 0)
        return 0;
    slots_poll(1);
    if (snapshot_zones(gpu) != 0) {
        if (!gpu)
            return 0;
        kernel_state = -1; /* no mapped memory: copies from now on */
        gpu = 0;
        if (snapshot_zones(0) != 0)
            return 0;
    }
    struct finder f = *how;
    f.upto = upto;
    if (culprit) {
        f.by = BY_LAUNCH;
        f.seq = culprit->seq;
        f.func = (void *)culprit->func;
        memcpy(f.grid, culprit->grid, sizeof f.grid);
        memcpy(f.block, culprit->block, sizeof f.block);
        f.stream = culprit->stream;
        f.whole = why;
    }
    __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
    /* launches in flight other than the culprit (whose post this is) */
    int defer = how->defer && __atomic_load_n(&unchecked, __ATOMIC_ACQUIRE) > (culprit ? 1u : 0u);
    int found = 0, left = 0;
    if (nsnap == 0)
        goto clean;
    if (gpu) {
        unsigned n = (unsigned)nsnap;
        void *args[] = {&dtab, &n, &dres};
        unsigned blocks = n < 1024 ? n : 1024;
        CUresult r = atl_drv.cuLaunchKernel(scan_fn, blocks, 1, 1, 128, 1, 1, 0, NULL, args, NULL);
        if (r != CUDA_SUCCESS) {
            /* e.g. another context is current than the one the kernel was
             * loaded into: check this time with copies */
            gpu = 0;
            goto copies;
        }
        if (atl_own_result(atl_drv.cuStreamSynchronize(NULL)) != CUDA_SUCCESS)
            return 0; /* a fault of the program's own: its next call reports it (latched) */
        for (size_t i = 0; i < nsnap; i++) {
            volatile struct atl_rz_result *g = &res[i];
            if (g->bad)
                found += full_report(&snap[i], g->bad, g->first, g->last, &f, defer, &left);
        }
    } else {
    copies:
        for (size_t i = 0; i < nsnap; i++) {
            unsigned bad;
            size_t first = 0, last = 0;
            if (zone_read(&snap[i], &bad, &first, &last) == 0 && bad)
                found += full_report(&snap[i], bad, first, last, &f, defer, &left);
        }
    }
    if (found || left)
        return found;
clean:
    if (upto > __atomic_load_n(&clean_upto, __ATOMIC_RELAXED))
        __atomic_store_n(&clean_upto, upto, __ATOMIC_RELEASE);
    return 0;
}

static int scan_all(const char *where, int unreached)
{
    if (!pad)
        return 0;
    struct finder how = {.by = BY_FULL, .where = where, .unreached = unreached, .defer = unreached};
    pthread_mutex_lock(&scan_lock);
    int n = scan_locked(&how, NULL, NULL);
    pthread_mutex_unlock(&scan_lock);
    return n;
}

int atl_redzone_scan_all(const char *where)
{
    return scan_all(where, 0);
}

/* ---- what a launch can reach ---------------------------------------------------------
 * The zones of the guarded allocations a launch's parameters point into:
 * every 8-byte-aligned word of every parameter (by-value structs included)
 * whose value falls in a guarded allocation, from its base up to the end of
 * its red zone (a pointer one past the end counts: kernels are given end
 * pointers). The layout comes from the flight recorder, which asked the
 * driver at the kernel's first launch: no driver call here. The cost grows
 * with the parameter bytes, never with the allocations live. Returns how
 * many zones (each once), or -1 when it cannot tell (no layout, more zones
 * than REACH_MAX): the caller then checks every zone. */
#define REACH_MAX 32 /* 4 slots of ATL_RZ_SLOT_ZONES */
#define ATL_STR_(x) #x
#define ATL_STR(x) ATL_STR_(x)
struct reach {
    struct zone z;
    unsigned arg, off;
};

static int reach_word(const unsigned char *p, unsigned arg, unsigned off, struct reach *out, int n)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    if (v < __atomic_load_n(&zones_lo, __ATOMIC_RELAXED) ||
        v > __atomic_load_n(&zones_hi, __ATOMIC_RELAXED))
        return n;
    struct zone z;
    if (!zone_holding_locked(v, &z))
        return n;
    for (int i = 0; i < n; i++)
        if (out[i].z.base == z.base)
            return n;
    if (n == REACH_MAX)
        return -1;
    out[n] = (struct reach){z, arg, off};
    return n + 1;
}

static int reach_of(const struct atl_launch *l, struct reach *out, const char **why)
{
    /* the layout the kernel's record took from the driver, of any length;
     * none (or no parameters: a kernel may still write through a pointer
     * it reads from device memory) takes the full check */
    const struct atl_krec *rec = l->rec;
    *why = "the driver gave no parameter layout for its kernel";
    if (!rec || !rec->exact || rec->nparams == 0)
        return -1;
    const uint32_t *off = rec->off, *size = rec->size;
    int np = (int)rec->nparams;
    *why = "its parameter buffer could not be read";
    const unsigned char *buf = NULL;
    size_t buflen = 0;
    if (!l->params && l->extra) {
        for (void **e = l->extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
            if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = e[1];
            else if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE && e[1])
                buflen = *(size_t *)e[1];
            else if (*e != CU_LAUNCH_PARAM_BUFFER_POINTER && *e != CU_LAUNCH_PARAM_BUFFER_SIZE)
                return -1;
        }
    }
    if (!l->params && !buf)
        return -1;
    int n = 0, unreadable = 0;
    pthread_mutex_lock(&zones_lock);
    for (int i = 0; i < np && n >= 0; i++) {
        const unsigned char *p;
        if (l->params) {
            p = l->params[i];
        } else {
            if ((size_t)off[i] + size[i] > buflen) {
                unreadable = 1;
                n = -1;
                break;
            }
            p = buf + off[i];
        }
        if (!p)
            continue;
        for (uint32_t o = (8 - off[i] % 8) % 8; o + 8 <= size[i] && n >= 0; o += 8)
            n = reach_word(p + o, (unsigned)i, o, out, n);
    }
    pthread_mutex_unlock(&zones_lock);
    if (!unreadable)
        *why = "its parameters point into more than " ATL_STR(REACH_MAX) " guarded allocations";
    return n;
}

/* The launch's own check of the zones it reaches: queued right after it, on
 * its stream. No context sync, even for a zone made since the last check:
 * the zone was poisoned on its allocation's stream, and a launch that uses
 * the allocation is ordered after that in any correctly ordered program,
 * so the check (after the launch on the launch's stream) is too. The slots
 * are taken under scan_lock and the checks launched after it is let go:
 * the driver's enqueue is most of a check's cost, and threads launching on
 * their own streams would otherwise make theirs one at a time. The check
 * is queued before the program's launch call returns, so anything the
 * program orders after its launch (a sync, then a free) comes after the
 * check too. With no kernel: the launch's stream is synchronised and the
 * zones are copied. */
static void launch_check(const struct atl_launch *l, const struct reach *r, int n)
{
    struct pending p; /* the fields check_take_locked reads, no more */
    p.how = (struct finder){
        .by = BY_LAUNCH, .seq = l->seq, .func = (void *)l->func, .stream = l->stream};
    p.has_site = 0;
    memcpy(p.how.grid, l->grid, sizeof p.how.grid);
    memcpy(p.how.block, l->block, sizeof p.how.block);
    struct check_call calls[REACH_MAX / ATL_RZ_SLOT_ZONES];
    int ncalls = 0, queued = 1;
    pthread_mutex_lock(&scan_lock);
    for (int i = 0; i < n && queued; i += ATL_RZ_SLOT_ZONES) {
        p.nz = 0;
        for (int j = i; j < n && p.nz < ATL_RZ_SLOT_ZONES; j++, p.nz++) {
            p.z[p.nz] = r[j].z;
            p.arg[p.nz] = r[j].arg;
            p.off[p.nz] = r[j].off;
        }
        queued = check_take_locked(&p, &calls[ncalls]) == 0;
        ncalls += queued;
    }
    pthread_mutex_unlock(&scan_lock);
    for (int i = 0; i < ncalls; i++)
        if (check_launch(&calls[i], l->stream) != CUDA_SUCCESS)
            queued = 0;
    if (queued)
        return;
    /* not queued (no kernel, or its launch failed): every zone with copies;
     * a zone a queued slot reports too is reported once */
    if (atl_capture_any()) {
        __atomic_add_fetch(&skipped_capture, 1, __ATOMIC_RELAXED);
        return;
    }
    pthread_mutex_lock(&scan_lock);
    if (atl_own_result(atl_drv.cuStreamSynchronize(l->stream)) == CUDA_SUCCESS) {
        for (int i = 0; i < n; i++) {
            unsigned bad;
            size_t first = 0, last = 0;
            __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
            struct finder how = p.how;
            how.arg = r[i].arg;
            how.off = r[i].off;
            if (zone_read(&r[i].z, &bad, &first, &last) == 0 && bad)
                report(&r[i].z, NULL, bad, first, last, &how);
        }
    }
    pthread_mutex_unlock(&scan_lock);
}

/* ---- events ---------------------------------------------------------------------- */

unsigned atl_redzone_init(void)
{
    pad = (size_t)atl_cfg.redzone;
    fill = (unsigned char)atl_cfg.redzone_fill;
    mode = (int)atl_cfg.redzone_check;
    min_idx = atl_cfg.redzone_min_idx;
    active = pad > 0;
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
    /* Syncs: the queued checks' verdicts are read there in every mode.
     * Launches: only launch mode looks at them; the suspects of the other
     * modes are read from the flight recorder's ring, which the hooks' light
     * path writes, unless ATLAS_LAUNCH_RING=0 (the engine's path writes it
     * then). */
    if (pad)
        on |= ATL_ON_CAPTURE | ATL_ON_SYNC |
              (mode == CHECK_LAUNCH || !atl_fault_ring_on() ? ATL_ON_LAUNCH : 0);
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

static int stream_capturing(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!atl_capture_any() || !atl_drv.cuStreamIsCapturing)
        return 0;
    return atl_drv.cuStreamIsCapturing(s, &st) == CUDA_SUCCESS &&
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

int atl_redzone_alloc_post(struct atl_alloc *a, CUresult r)
{
    if (!active || r != CUDA_SUCCESS || !a->dptr)
        return 0;
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

void atl_redzone_free_pre(struct atl_free *f)
{
    if (pad && !f->known && __atomic_load_n(&held_n, __ATOMIC_RELAXED))
        held_refree(f->ptr);
    if (!active || !f->known)
        return;
    struct zone z;
    if (!pad || !zone_remove(f->ptr, &z) || !z.watched)
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
     * after free. Checks queued earlier that list this zone ran before it
     * too: each was queued right after a launch that used the allocation,
     * which the free must follow. No context sync, no copy. */
    if (f->async ? stream_capturing(f->stream) : atl_capture_any()) {
        /* a check now would become a node of the program's graph (or
         * invalidate its capture): this zone goes unchecked */
        __atomic_add_fetch(&skipped_capture, 1, __ATOMIC_RELAXED);
        return;
    }
    pthread_mutex_lock(&scan_lock);
    if (held_take_locked(f, &z)) {
        f->held = 1; /* the hook returns success without the driver's free */
        pthread_mutex_unlock(&scan_lock);
        return;
    }
    /* only the fields check_queue_locked reads (the site arrays are large) */
    struct pending p;
    p.how = (struct finder){.by = BY_FREE,
                            .where = atl_hook_names[f->hook],
                            .upto = atl_fault_last_launch(),
                            .stream = f->async ? f->stream : NULL};
    p.nz = 1;
    p.has_site = 1;
    p.z[0] = z;
    p.arg[0] = p.off[0] = 0;
    site_copy(&p.site[0], &f->rec.site);
    p.upto[0] = p.how.upto;
    free_check_locked(&p);
    pthread_mutex_unlock(&scan_lock);
}

void atl_redzone_free_post(struct atl_free *f, CUresult r)
{
    if (!active || !f->ptr)
        return;
    if (pad && !f->async && pending_any()) {
        /* cuMemFree waited for the device: the check before it is done */
        pthread_mutex_lock(&scan_lock);
        slots_poll(0);
        pthread_mutex_unlock(&scan_lock);
    }
}

void atl_redzone_launch_pre(const struct atl_launch *l)
{
    (void)l;
    if (pad && mode == CHECK_LAUNCH)
        __atomic_add_fetch(&unchecked, 1, __ATOMIC_ACQ_REL);
}

static void launch_checks(const struct atl_launch *l)
{
    struct reach reach[REACH_MAX];
    const char *why;
    int n = reach_of(l, reach, &why);
    if (n > 0) {
        launch_check(l, reach, n);
    } else if (n < 0) {
        /* what it reaches cannot be told: check every zone, and wait */
        struct finder how = {.by = BY_FULL, .where = "launch", .defer = 1};
        pthread_mutex_lock(&scan_lock);
        scan_locked(&how, l, why);
        pthread_mutex_unlock(&scan_lock);
    }
}

void atl_redzone_launch_post(const struct atl_launch *l, CUresult r)
{
    if (!pad || mode != CHECK_LAUNCH)
        return;
    if (r == CUDA_SUCCESS && !stream_capturing(l->stream))
        launch_checks(l);
    __atomic_sub_fetch(&unchecked, 1, __ATOMIC_ACQ_REL);
}

/* Launch mode: a graph's kernels are not seen one by one; check right after
 * the graph, so its overrun is not blamed on the next launch. */
void atl_redzone_graph_launch_post(const struct atl_graph_launch *g, CUresult r)
{
    if (!pad || mode != CHECK_LAUNCH || r != CUDA_SUCCESS || stream_capturing(g->stream))
        return;
    scan_all(atl_hook_names[g->hook], 0);
}

void atl_redzone_sync_pre(const struct atl_sync *s)
{
    (void)s;
    if (pad)
        held_release(); /* before the wait: the sync's verdicts include them */
}

void atl_redzone_capture_pre(const struct atl_capture *c)
{
    if (pad && c->begin)
        held_release(); /* afterwards the legacy stream takes no work */
}

void atl_redzone_sync_post(const struct atl_sync *s, CUresult r)
{
    if (!pad || r != CUDA_SUCCESS)
        return;
    if (mode != CHECK_FREE) {
        /* the backstop: every zone, for what no launch's check saw (a
         * pointer the kernel read from device memory) */
        scan_all(atl_hook_names[s->hook], mode == CHECK_LAUNCH);
    } else if (pending_any()) {
        /* the program waited: the checks queued before are likely done */
        pthread_mutex_lock(&scan_lock);
        slots_poll(0);
        pthread_mutex_unlock(&scan_lock);
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
    struct finder how = {.by = BY_FULL, .where = where, .unreached = mode == CHECK_LAUNCH};
    scan_locked(&how, NULL, NULL);
    kernels_forget_locked();
    if (atl_exit_lock(&zones_lock, "the red-zone check at exit") == 0) {
        nzones = 0;
        atl_addrmap_clear(&zone_at);
        version++;
        pthread_mutex_unlock(&zones_lock);
    }
    pthread_mutex_unlock(&scan_lock);
}

/* The exit's last full check, on atl_exit_bounded's helper thread. */
static void *exit_scan(void *arg)
{
    CUcontext ctx = *(CUcontext *)arg;
    if (ctx && atl_drv.cuCtxSetCurrent)
        atl_drv.cuCtxSetCurrent(ctx);
    atl_redzone_teardown("exit");
    return NULL;
}

void atl_redzone_exit(void)
{
    if (!active)
        return;
    if (pad) {
        /* in the exiting thread's context (read without a lock: a real
         * driver's and the fake's cuCtxGetCurrent take none) */
        static CUcontext ctx;
        if (atl_drv.cuCtxGetCurrent && atl_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
            ctx = NULL;
        atl_exit_bounded(exit_scan, &ctx, "the red-zone check at exit (the driver did not answer)");
        if (skipped_capture)
            atl_log(ATL_INFO, "redzone: %llu checks were skipped while a stream capture was active",
                    (unsigned long long)skipped_capture);
        if (held_frees)
            atl_log(ATL_INFO,
                    "redzone: %llu frees on the legacy stream were held back and checked in %llu "
                    "batches",
                    (unsigned long long)held_frees, (unsigned long long)held_batches);
        atl_log(ATL_WARN, "redzone: %llu overruns found in %llu guarded allocations (%llu checks)",
                (unsigned long long)overruns, (unsigned long long)guarded_total,
                (unsigned long long)checks);
    }
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
            zone_set_watched(copy[i].base, copy[i].seq, 1);
            pthread_mutex_lock(&scan_lock);
            atl_addrmap_del(&reported, copy[i].seq);
            pthread_mutex_unlock(&scan_lock);
            n++;
        }
    }
    free(copy);
    return n;
}
