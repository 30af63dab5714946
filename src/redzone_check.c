/*
 * Red zones' checks (src/redzone.c says what they find; docs/redzone.md):
 * the check kernels and their mapped memory, the queued checks of a few
 * zones and the ring of their verdicts, the full check of every zone (at
 * host syncs, teardown and exit), and the check queued after a launch in
 * launch mode. Each finding goes to src/redzone_report.c.
 */
#define _GNU_SOURCE
#include "redzone.h"

#include "capture.h"
#include "driver.h"
#include "fault.h"
#include "log.h"
#include "redzone_internal.h"
#include "services.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t checks, skipped_capture;

static uint64_t clean_upto; /* launches up to this one passed a full check */
/* ... one that read the quarantine too: where a freed allocation's suspects begin. A check of
 * the live zones says nothing of it: a launch made before the free may write after it (on
 * another stream, the missing record_stream), and a live zone's check after that launch read
 * only the tail the allocation had then. */
static uint64_t clean_upto_freed;

uint64_t atl_rz_clean_upto(int freed)
{
    return __atomic_load_n(freed ? &clean_upto_freed : &clean_upto, __ATOMIC_ACQUIRE);
}

void atl_rz_check_skipped(void)
{
    __atomic_add_fetch(&skipped_capture, 1, __ATOMIC_RELAXED);
}

void atl_rz_check_counts(struct atl_rz_counts *c)
{
    c->checks = __atomic_load_n(&checks, __ATOMIC_RELAXED);
    c->skipped = __atomic_load_n(&skipped_capture, __ATOMIC_RELAXED);
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

void atl_rz_lock(void)
{
    pthread_mutex_lock(&scan_lock);
}

void atl_rz_unlock(void)
{
    pthread_mutex_unlock(&scan_lock);
}

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
static size_t captab, ntab;
static struct zone *snap; /* host copy of the zones scanned */
static size_t nsnap, capsnap;
/* a long zone (a freed allocation) is several entries of the table, each
 * read by one block: entry i is bytes tab_off[i].. of zone tab_zone[i] */
static size_t *tab_zone, *tab_off;
#define TAB_CHUNK ((size_t)256 << 10)
static uint64_t snap_version = (uint64_t)-1;
static int snap_freed;          /* the snapshot holds the quarantine's zones too */
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

/* Makes the mapped buffers hold n table entries. */
static int tables_reserve(size_t n)
{
    if (n <= captab && tab)
        return 0;
    size_t cap = captab ? captab : 256;
    while (cap < n)
        cap *= 2;
    void *t = NULL, *r = NULL;
    size_t *tz = malloc(cap * sizeof *tz), *to = malloc(cap * sizeof *to);
    if (!tz || !to) {
        free(tz), free(to);
        return -1;
    }
    if (atl_drv.cuMemAllocHost_v2((void **)&t, cap * sizeof *tab) != CUDA_SUCCESS) {
        free(tz), free(to);
        return -1;
    }
    if (atl_drv.cuMemAllocHost_v2((void **)&r, cap * sizeof *res) != CUDA_SUCCESS) {
        atl_drv.cuMemFreeHost(t);
        free(tz), free(to);
        return -1;
    }
    CUdeviceptr dt, dr;
    if (!atl_drv.cuMemHostGetDevicePointer_v2 ||
        atl_drv.cuMemHostGetDevicePointer_v2(&dt, t, 0) != CUDA_SUCCESS ||
        atl_drv.cuMemHostGetDevicePointer_v2(&dr, r, 0) != CUDA_SUCCESS) {
        atl_drv.cuMemFreeHost(t);
        atl_drv.cuMemFreeHost(r);
        free(tz), free(to);
        return -1;
    }
    if (tab) {
        atl_drv.cuMemFreeHost(tab);
        atl_drv.cuMemFreeHost(res);
    }
    free(tab_zone), free(tab_off);
    tab_zone = tz;
    tab_off = to;
    tab = t;
    res = r;
    captab = cap;
    dtab = dt;
    dres = dr;
    snap_version = (uint64_t)-1;
    return 0;
}

/* Copies the watched zones (with `freed`, the quarantine's too) into snap
 * (and the mapped table, long zones cut into TAB_CHUNK entries) when they
 * changed since the last full check. */
static int snapshot_zones(int to_gpu, int freed)
{
    uint64_t v = snap_version;
    size_t entries;
    int r = atl_rz_zones_copy(freed == snap_freed && (!to_gpu || tab), freed, TAB_CHUNK, &snap,
                              &capsnap, &nsnap, &entries, &v);
    if (r != 0)
        return r > 0 ? 0 : -1;
    if (to_gpu) {
        if (tables_reserve(entries) != 0)
            return -1;
        ntab = 0;
        unsigned char fill = atl_rz_opt->fill;
        for (size_t i = 0; i < nsnap; i++) {
            size_t off = 0;
            do {
                size_t len = snap[i].len - off < TAB_CHUNK ? snap[i].len - off : TAB_CHUNK;
                tab[ntab] = (struct atl_rz_zone){snap[i].start + off, len, fill, 0};
                tab_zone[ntab] = i;
                tab_off[ntab++] = off;
                off += len;
            } while (off < snap[i].len);
        }
    }
    snap_version = v;
    snap_freed = freed;
    return 0;
}

/* Checks one zone with a copy; fills bad/first/last. -1 if unreadable. */
static int zone_read(const struct zone *z, unsigned *bad, size_t *first, size_t *last)
{
    unsigned char fill = atl_rz_opt->fill;
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
int atl_rz_sync_for_scan(void)
{
    /* a check whose launch another thread is making now is queued after
     * the sync, and would be taken for one that never ran */
    launching_wait();
    if (atl_capture_any()) {
        atl_rz_check_skipped();
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
 * before a free, when a freed allocation leaves the quarantine) and never
 * waited for: its verdict goes to a slot of a ring in mapped host memory,
 * and the zones' details (and who queued the check) stay here, in `pend`,
 * for the report. Slots are read in the order they were queued, at the
 * program's syncs, at the next check queued and at frees; only when the ring
 * is full is the oldest waited for (its stream synchronised). A check reads
 * only the zones listed in its own slot, so a zone table rebuilt meanwhile
 * cannot change what a check in flight reads. All of it under scan_lock, but
 * for the driver's launch of a check after a program's launch: the slot is
 * taken under the lock and the launch made without it (so threads launching
 * on their own streams do not wait for each other's checks), and its
 * outcome is then written into the slot's `state` with a compare-and-swap,
 * which fails harmlessly when the slot was given up meanwhile (a context
 * teardown) and taken again. Readers stop at a slot whose launch is still
 * being made. */
#define SLOTS 1024
#define SLOT_LAUNCHING 1u /* taken; its launch is being made */
#define SLOT_QUEUED 2u
#define SLOT_FAILED 3u /* the driver refused the launch: nothing to read */
#define SLOT_STATE(ticket, st) ((uint64_t)(ticket) << 2 | (st))
static struct atl_rz_slot *slots; /* mapped host memory */
static CUdeviceptr dslots;
static CUdeviceptr dmerge; /* a struct atl_rz_merge per slot, in device memory */
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
    how.q = p->qe[i];
    return how;
}

/* The slot's quarantine entries are done with (their verdict read, or the
 * slot given up). */
static void pend_done(struct pending *p)
{
    /* a slot's entries are a prefix (q_release_batch_locked puts them at
     * 0 up; every other slot has none): the check after a launch, which
     * has none, costs one look and no call to free */
    for (unsigned i = 0; i < ATL_RZ_SLOT_ZONES && p->qe[i]; i++) {
        free(p->qe[i]);
        p->qe[i] = NULL;
    }
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
        atl_rz_report(&p->z[r.zone], p->has_site ? &p->site[r.zone] : NULL, r.bad, r.first, r.last,
                      &how);
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
        struct pending *q = &pend[k % SLOTS];
        uint64_t st = __atomic_load_n(&q->state, __ATOMIC_ACQUIRE);
        if (st == SLOT_STATE(q->ticket, SLOT_LAUNCHING))
            break;
        if (st == SLOT_STATE(q->ticket, SLOT_QUEUED)) {
            if (__atomic_load_n(&slots[k % SLOTS].done, __ATOMIC_ACQUIRE) == q->ticket)
                slot_process(k);
            else if (!all)
                break;
        }
        pend_done(q);
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
    struct pending *p = &pend[pend_tail % SLOTS];
    if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == SLOT_STATE(p->ticket, SLOT_LAUNCHING) &&
        launching_wait() != 0)
        return; /* still being launched: the caller checks another way */
    if (atl_own_result(atl_drv.cuStreamSynchronize(p->how.stream)) != CUDA_SUCCESS &&
        atl_rz_sync_for_scan() != 0) {
        pend_done(p);
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

/* The merge records, made at the first check long enough to want several
 * blocks (zeroed: see struct atl_rz_merge); 0 when they cannot be had (not
 * during a capture: an allocation and a memset are no calls to make then),
 * and every check is then one block. With scan_lock held. */
static int merge_tried;
static CUdeviceptr merge_ready(void)
{
    if (dmerge || merge_tried || atl_capture_any() || !atl_drv.cuMemAlloc_v2 ||
        !atl_drv.cuMemsetD8_v2)
        return dmerge;
    merge_tried = 1;
    CUdeviceptr m;
    size_t n = SLOTS * sizeof(struct atl_rz_merge);
    if (atl_drv.cuMemAlloc_v2(&m, n) != CUDA_SUCCESS)
        return 0;
    if (atl_own_result(atl_drv.cuMemsetD8_v2(m, 0, n)) != CUDA_SUCCESS) {
        atl_drv.cuMemFree_v2(m);
        return 0;
    }
    dmerge = m;
    return dmerge;
}

/* Launches the check kernel on `stream` (grid blocks), on sm_90 and up as a
 * programmatic dependent launch: the driver's enqueue costs less (on the
 * H200 about 0.6 us of the 3.4 us a tiny launch costs the host) and the
 * kernel waits for what precedes it itself (griddepcontrol.wait) before it
 * reads a zone. After a launch that is the launch's grid; before a free it
 * may be any operation, and an operation that is not a kernel (a copy, a
 * memset) never lets the check start early: the wait then returns at once.
 * A driver that refuses the attribute, where a plain launch then works, gets
 * plain launches from then on. */
#define CHECK_THREADS 256 /* a check's block */
static CUresult check_queue_launch(CUfunction fn, void **args, CUstream stream, unsigned grid)
{
    CUresult dep = CUDA_SUCCESS; /* what the driver said to a dependent launch */
    if (__atomic_load_n(&check_pdl, __ATOMIC_RELAXED)) {
        CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
        at.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig cfg = {.gridDimX = grid,
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
    CUresult r = atl_drv.cuLaunchKernel(fn, grid, 1, 1, CHECK_THREADS, 1, 1, 0, stream, args, NULL);
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

/* The check kernels and their slots are made ready at the first guarded allocation rather than
 * at the first check that needs them: loading a module and allocating page-locked memory may
 * wait for the device (CUDA's lazy loading: loading a kernel may need a context
 * synchronisation). At a stream-ordered free a kernel of another stream may still be about to
 * write the allocation; a wait there let that write land before the free's poison, which then
 * hid it (issue #45: `rz_uaf other` was found only in the modes whose first host sync had
 * loaded them). */
static int checks_tried; /* atomic: the check kernels were tried (kernel_state no longer 0) */

void atl_rz_checks_early(void)
{
    if (__atomic_load_n(&checks_tried, __ATOMIC_RELAXED) || atl_capture_any())
        return;
    atl_rz_lock();
    if (!__atomic_load_n(&checks_tried, __ATOMIC_RELAXED)) {
        (void)atl_rz_checks_ready_locked();
        /* a capture that began meanwhile left them untried: the next allocation tries */
        __atomic_store_n(&checks_tried, kernel_state != 0, __ATOMIC_RELAXED);
    }
    atl_rz_unlock();
}

int atl_rz_checks_ready_locked(void)
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
    unsigned n, nfill, fill, grid;
    CUdeviceptr slot, merge;
    unsigned long long ticket;
};

/* Blocks for a check of `bytes`: one reads a few tails at once; a freed
 * allocation checked whole, or a body filled, gets a block per 64 KiB (up
 * to 256) when the blocks can merge their counts. */
static unsigned check_grid(size_t bytes)
{
    if (bytes <= ((size_t)64 << 10) || !merge_ready())
        return 1;
    size_t g = bytes / ((size_t)64 << 10) + 1;
    return g > 256 ? 256 : (unsigned)g;
}

/* The next slot for a check, its verdict cleared, into *k: 0, or -1 when
 * the caller must check another way. With scan_lock held. */
static int slot_next_locked(uint64_t *k)
{
    if (!atl_rz_checks_ready_locked())
        return -1;
    slots_poll(0);
    if (pend_head - pend_tail == SLOTS)
        wait_oldest();
    if (pend_head - pend_tail == SLOTS)
        return -1;
    *k = pend_head;
    struct atl_rz_slot *sl = &slots[*k % SLOTS];
    sl->done = 0;
    sl->nbad = 0;
    return 0;
}

/* Slot k, its pend entry filled, taken (its launch being made) and c made
 * ready for check_launch; c->list is the caller's. With scan_lock held. */
static void slot_taken_locked(uint64_t k, struct check_call *c, unsigned nz, unsigned nfill,
                              size_t bytes)
{
    struct pending *q = &pend[k % SLOTS];
    __atomic_store_n(&q->state, SLOT_STATE(k + 1, SLOT_LAUNCHING), __ATOMIC_RELAXED);
    __atomic_add_fetch(&launching, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&pend_head, k + 1, __ATOMIC_RELAXED);
    c->q = q;
    c->fn = check_fn;
    c->n = nz;
    c->nfill = nfill;
    c->fill = atl_rz_opt->fill;
    c->grid = check_grid(bytes);
    c->slot = dslots + (k % SLOTS) * sizeof *slots;
    c->merge = dmerge ? dmerge + (k % SLOTS) * sizeof(struct atl_rz_merge) : 0;
    c->ticket = k + 1;
}

/* Takes a slot for the check of p's zones (and fills) and fills it: the
 * launch is the caller's (check_launch), with or without scan_lock. 0, or
 * -1 when the caller must check another way. With scan_lock held. */
static int check_take_locked(const struct pending *p, struct check_call *c)
{
    uint64_t k;
    if (slot_next_locked(&k) != 0)
        return -1;
    memset(&c->list, 0, sizeof c->list);
    size_t bytes = 0;
    unsigned char fill = atl_rz_opt->fill;
    for (unsigned i = 0; i < p->nz; i++) {
        c->list.z[i] = (struct atl_rz_zone){p->z[i].start, p->z[i].len, fill, 0};
        bytes += p->z[i].len;
    }
    for (unsigned i = 0; i < p->nfill; i++) {
        c->list.f[i] = p->f[i];
        bytes += p->f[i].len;
    }
    /* only what p holds: a launch's check has no call stack, and most
     * lists are short */
    struct pending *q = &pend[k % SLOTS];
    q->ticket = k + 1;
    q->how = p->how;
    q->nz = p->nz;
    q->nfill = 0; /* the fills are the kernel's; the report needs none */
    memcpy(q->z, p->z, p->nz * sizeof *p->z);
    memcpy(q->arg, p->arg, p->nz * sizeof *p->arg);
    memcpy(q->off, p->off, p->nz * sizeof *p->off);
    q->has_site = p->has_site;
    for (unsigned i = 0; p->has_site && i < p->nz; i++) {
        atl_rz_site_copy(&q->site[i], &p->site[i]);
        q->upto[i] = p->upto[i];
    }
    memcpy(q->qe, p->qe, sizeof q->qe);
    slot_taken_locked(k, c, p->nz, p->nfill, bytes);
    return 0;
}

/* Launches a taken check on `stream` and says so in its slot. */
static CUresult check_launch(struct check_call *c, CUstream stream)
{
    void *args[] = {&c->list, &c->n, &c->nfill, &c->fill, &c->slot, &c->ticket, &c->merge};
    CUresult r = check_queue_launch(c->fn, args, stream, c->grid);
    uint64_t want = SLOT_STATE(c->ticket, SLOT_LAUNCHING);
    if (r != CUDA_SUCCESS)
        memset(c->q->qe, 0, sizeof c->q->qe); /* the caller keeps its entries */
    __atomic_compare_exchange_n(
        &c->q->state, &want, SLOT_STATE(c->ticket, r == CUDA_SUCCESS ? SLOT_QUEUED : SLOT_FAILED),
        0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&launching, 1, __ATOMIC_RELEASE);
    return r;
}

int atl_rz_check_queue_locked(const struct pending *p, CUstream stream)
{
    struct check_call c;
    if (check_take_locked(p, &c) != 0)
        return -1;
    return check_launch(&c, stream) == CUDA_SUCCESS ? 0 : -1;
}

int atl_rz_free_check_locked(const struct pending *p, CUstream stream)
{
    if (atl_rz_check_queue_locked(p, stream) == 0)
        return 0;
    if (atl_rz_sync_for_scan() != 0)
        return -1;
    slots_poll(1);
    for (unsigned i = 0; i < p->nz; i++) {
        unsigned bad;
        size_t first = 0, last = 0;
        __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
        if (zone_read(&p->z[i], &bad, &first, &last) == 0 && bad) {
            struct finder how = zone_finder(p, i);
            atl_rz_report(&p->z[i], p->has_site ? &p->site[i] : NULL, bad, first, last, &how);
        }
    }
    return -1;
}

void atl_rz_poll_locked(int all)
{
    slots_poll(all);
}

void atl_rz_poll(void)
{
    if (pending_any()) {
        pthread_mutex_lock(&scan_lock);
        slots_poll(0);
        pthread_mutex_unlock(&scan_lock);
    }
}

int atl_rz_merge_held_locked(void)
{
    return dmerge != 0;
}

int atl_rz_merge_give_back_locked(void)
{
    slots_poll(1);
    if (pending_any())
        return 0;
    atl_drv.cuMemFree_v2(dmerge);
    dmerge = 0;
    merge_tried = 1;
    atl_log(ATL_INFO,
            "redzone: an allocation failed for memory: the checks' own %zu KiB of device "
            "memory given back (each check runs on one block from now on)",
            SLOTS * sizeof(struct atl_rz_merge) >> 10);
    return 1;
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
    for (uint64_t k = pend_tail; k < pend_head; k++)
        pend_done(&pend[k % SLOTS]);
    __atomic_store_n(&pend_tail, pend_head, __ATOMIC_RELAXED);
    if (idle && slots && atl_drv.cuMemFreeHost)
        atl_drv.cuMemFreeHost(slots);
    if (idle && dmerge && atl_drv.cuMemFree_v2)
        atl_drv.cuMemFree_v2(dmerge);
    merge_tried = 0;
    if (idle && tab && atl_drv.cuMemFreeHost) {
        atl_drv.cuMemFreeHost(tab);
        atl_drv.cuMemFreeHost(res);
    }
    if (idle && kernel_mod && atl_drv.cuModuleUnload)
        atl_drv.cuModuleUnload(kernel_mod);
    slots = NULL;
    dmerge = 0;
    tab = NULL;
    res = NULL;
    captab = 0;
    snap_version = (uint64_t)-1;
    kernel_mod = NULL;
    scan_fn = check_fn = NULL;
    if (kernel_state == 1) /* a driver that refused the PTX refuses it again */
        kernel_state = 0;
    atl_rz_quar_forget_events(); /* events are the context's too */
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
 * exit) reports what none found. `unchecked` is src/redzone.c's count
 * (atl_rz_launches_unchecked). */
static int full_report(const struct zone *z, unsigned bad, size_t first, size_t last,
                       const struct finder *how, int defer, int *left)
{
    if (defer) {
        ++*left;
        return 0;
    }
    return atl_rz_report(z, NULL, bad, first, last, how);
}

/* ---- every zone --------------------------------------------------------------------
 * Every watched zone, freed ones included, after a context sync. The sync
 * is what makes a zone safe to include: its poison (a memset on the
 * allocation's stream, which the check's stream need not wait for) is
 * complete, as is every queued check, whose verdicts are read first.
 * `culprit`: name that launch (a launch whose reach could not be told).
 * Called with scan_lock held (it guards the mapped tables; the driver calls
 * made under it never call back into atlastrace). */
static int scan_locked(const struct finder *how, const struct atl_launch *culprit, const char *why)
{
    if (!atl_rz_opt->pad)
        return 0;
    if (kernel_state == 0)
        kernel_load();
    int gpu = kernel_state == 1;
    atl_rz_held_release_locked(); /* their zones are checked with the rest */
    uint64_t upto = atl_fault_last_launch();
    if (atl_rz_sync_for_scan() != 0)
        return 0;
    slots_poll(1);
    if (snapshot_zones(gpu, how->freed_too) != 0) {
        if (!gpu)
            return 0;
        kernel_state = -1; /* no mapped memory: copies from now on */
        gpu = 0;
        if (snapshot_zones(0, how->freed_too) != 0)
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
    int defer = how->defer && atl_rz_launches_unchecked() > (culprit ? 1u : 0u);
    int found = 0, left = 0;
    if (nsnap == 0)
        goto clean;
    if (gpu) {
        unsigned n = (unsigned)ntab;
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
        /* the entries of one zone are consecutive: add them up */
        for (size_t i = 0; i < ntab;) {
            size_t z = tab_zone[i];
            unsigned bad = 0;
            size_t first = 0, last = 0;
            for (; i < ntab && tab_zone[i] == z; i++) {
                volatile struct atl_rz_result *g = &res[i];
                if (!g->bad)
                    continue;
                if (!bad)
                    first = tab_off[i] + g->first;
                last = tab_off[i] + g->last;
                bad += g->bad;
            }
            if (bad)
                found += full_report(&snap[z], bad, first, last, &f, defer, &left);
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
    if (how->freed_too && upto > __atomic_load_n(&clean_upto_freed, __ATOMIC_RELAXED))
        __atomic_store_n(&clean_upto_freed, upto, __ATOMIC_RELEASE);
    return 0;
}

int atl_rz_scan_all(const char *where, int defer, int freed_too)
{
    if (!atl_rz_opt->pad)
        return 0;
    struct finder how = {.by = BY_FULL, .where = where, .defer = defer, .freed_too = freed_too};
    pthread_mutex_lock(&scan_lock);
    int n = scan_locked(&how, NULL, NULL);
    pthread_mutex_unlock(&scan_lock);
    return n;
}

int atl_redzone_scan_all(const char *where)
{
    return atl_rz_scan_all(where, 0, 1);
}

void atl_rz_scan_whole(const struct atl_launch *l, const char *why)
{
    struct finder how = {.by = BY_FULL, .where = "launch", .defer = 1};
    pthread_mutex_lock(&scan_lock);
    scan_locked(&how, l, why);
    pthread_mutex_unlock(&scan_lock);
}

/* ---- the check after a launch --------------------------------------------------------
 * Of the zones it reaches (src/redzone.c, reach_of). */
/* check_take_locked for the check after a launch, straight from its reach
 * list (nz zones of it): each zone is copied once, into its slot, and its
 * span into the kernel's list, with no struct pending made on the way (a
 * launch's check has no call stack, fills or quarantine entries). */
static int launch_take_locked(const struct finder *how, const struct reach *r, unsigned nz,
                              struct check_call *c)
{
    uint64_t k;
    if (slot_next_locked(&k) != 0)
        return -1;
    memset(&c->list, 0, sizeof c->list);
    struct pending *q = &pend[k % SLOTS];
    size_t bytes = 0;
    unsigned char fill = atl_rz_opt->fill;
    q->ticket = k + 1;
    q->how = *how;
    q->nz = nz;
    q->nfill = 0;
    q->has_site = 0;
    for (unsigned i = 0; i < nz; i++) {
        q->z[i] = r[i].z;
        q->arg[i] = r[i].arg;
        q->off[i] = r[i].off;
        c->list.z[i] = (struct atl_rz_zone){r[i].z.start, r[i].z.len, fill, 0};
        bytes += r[i].z.len;
    }
    memset(q->qe, 0, sizeof q->qe);
    slot_taken_locked(k, c, nz, 0, bytes);
    return 0;
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
void atl_rz_launch_check(const struct atl_launch *l, const struct reach *r, int n)
{
    struct finder how = {
        .by = BY_LAUNCH, .seq = l->seq, .func = (void *)l->func, .stream = l->stream};
    memcpy(how.grid, l->grid, sizeof how.grid);
    memcpy(how.block, l->block, sizeof how.block);
    struct check_call small[REACH_STACK / ATL_RZ_SLOT_ZONES], *calls = small;
    int ncalls = 0, queued = 1;
    if (n > REACH_STACK && !(calls = malloc((size_t)(n + ATL_RZ_SLOT_ZONES - 1) /
                                            ATL_RZ_SLOT_ZONES * sizeof *calls))) {
        atl_log_once_oom("a wide launch's red-zone checks");
        calls = small;
        queued = 0; /* checked with copies, below */
    }
    pthread_mutex_lock(&scan_lock);
    for (int i = 0; i < n && queued; i += ATL_RZ_SLOT_ZONES) {
        unsigned nz = n - i < ATL_RZ_SLOT_ZONES ? (unsigned)(n - i) : ATL_RZ_SLOT_ZONES;
        queued = launch_take_locked(&how, r + i, nz, &calls[ncalls]) == 0;
        ncalls += queued;
    }
    pthread_mutex_unlock(&scan_lock);
    for (int i = 0; i < ncalls; i++)
        if (check_launch(&calls[i], l->stream) != CUDA_SUCCESS)
            queued = 0;
    if (calls != small)
        free(calls);
    if (queued)
        return;
    /* not queued (no kernel, or its launch failed): every zone with copies;
     * a zone a queued slot reports too is reported once */
    if (atl_capture_any()) {
        atl_rz_check_skipped();
        return;
    }
    pthread_mutex_lock(&scan_lock);
    if (atl_own_result(atl_drv.cuStreamSynchronize(l->stream)) == CUDA_SUCCESS) {
        for (int i = 0; i < n; i++) {
            unsigned bad;
            size_t first = 0, last = 0;
            __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
            struct finder zhow = how;
            zhow.arg = r[i].arg;
            zhow.off = r[i].off;
            if (zone_read(&r[i].z, &bad, &first, &last) == 0 && bad)
                atl_rz_report(&r[i].z, NULL, bad, first, last, &zhow);
        }
    }
    pthread_mutex_unlock(&scan_lock);
}

/* ---- teardown -------------------------------------------------------------------- */

void atl_redzone_teardown(const char *where)
{
    if (!atl_rz_opt->pad)
        return;
    /* The last moment the device memory is readable. Afterwards the zones
     * are forgotten: their memory goes with the context, and a scan kernel
     * reading it would fault. (The ledger keeps the records: the program
     * never freed them, which is what the leak list says.) The quarantine
     * is checked and freed first. At exit the locks are waited for only so
     * long (atl_exit_lock). */
    if (atl_exit_lock(&scan_lock, "the red-zone check at exit") != 0)
        return;
    atl_rz_quar_flush_locked();
    struct finder how = {.by = BY_FULL, .where = where, .freed_too = 1};
    scan_locked(&how, NULL, NULL);
    kernels_forget_locked();
    atl_rz_zones_forget();
    pthread_mutex_unlock(&scan_lock);
}
