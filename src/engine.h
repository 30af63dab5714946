/*
 * The engine: what atlastrace does with the driver calls the hooks report.
 *
 * The hooks (hooks/) are thin: they call the real function and report one
 * event per call through the functions below. Everything here is callable
 * without a preload or a GPU, which is how tests/unit exercises it.
 */
#ifndef ATL_ENGINE_H
#define ATL_ENGINE_H

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

#include "copy.h"
#include "hookid.h"
#include "ledger.h"

/* Bits of atl_on: which event classes the engine wants to see. A hook whose
 * class bit is clear forwards straight to the driver (one load, one branch). */
enum {
    ATL_ON_LAUNCH = 1u << 0,
    ATL_ON_ALLOC = 1u << 1,
    ATL_ON_COPY = 1u << 2,
    ATL_ON_MEMSET = 1u << 3,
    ATL_ON_SYNC = 1u << 4,
    ATL_ON_CAPTURE = 1u << 5,
    ATL_ON_LOOKUP = 1u << 6,
    ATL_ON_MODULE = 1u << 7,
    ATL_ON_CTX = 1u << 8,
    ATL_ON_RESOLVE = 1u << 9, /* cuGetProcAddress: always slow, it rewrites answers */
    /* launches note themselves in the fault latch's ring on the fast path
     * (only looked at while ATL_ON_LAUNCH is clear) */
    ATL_ON_LAUNCH_RING = 1u << 10,
    /* synchronous cuMemcpyDtoH: the engine's full path (a feature that
     * records or traces copies), or only the blocking-copy count and the
     * fault latch on the light path (looked at while ATL_ON_COPY_DTOH is
     * clear) */
    ATL_ON_COPY_DTOH = 1u << 11,
    ATL_ON_DTOH_COUNT = 1u << 12,
    ATL_ON_ALL = 0xffffffffu,
};

/* All bits set until initialisation decides, so the first call of any hook
 * takes the slow path and initialises. Zero after the exit report, in a
 * forked child, and when nothing is enabled. */
extern unsigned atl_on;

/* The features the engine fans events out to. Each has one init of one
 * shape, `unsigned atl_<feature>_init(void)`: it reads its settings (and
 * sets atl_ledger_on when it needs the ledger) and returns the ATL_ON_*
 * classes it needs, 0 when it is off (never 0 when on). The engine keeps
 * each answer (atl_engine_enable), sets atl_on to what they ask together,
 * and calls a feature's event functions only while its answer is non-zero:
 * that is the one gate; a feature's own early returns only refine it. */
enum atl_feature {
    ATL_FEAT_SYNC,    /* src/sync.c: blocking-copy counts, fault latch, debug sync */
    ATL_FEAT_KAUDIT,  /* src/kaudit.c: ATLAS_KERNEL_AUDIT */
    ATL_FEAT_REDZONE, /* src/redzone.c: ATLAS_REDZONE, ATLAS_LEAKS */
    ATL_FEAT_TRACE,   /* src/trace.c: ATLAS_TRACE */
    ATL_FEAT_HANG,    /* src/hang.c: ATLAS_HANG_SECONDS */
    ATL_FEAT_COUNT,
};
/* Records a feature's answer. The engine's init calls every feature's init
 * through here; a unit test that drives one feature calls it itself. */
void atl_engine_enable(enum atl_feature f, unsigned events);

/* Set by features that need the allocation ledger (step diffs, red zones,
 * leak lists), before initialisation ends. */
extern int atl_ledger_on;

/* The result of a driver call the library makes on its own behalf (a red-zone
 * sync or copy). A synchronising call reports the program's pending kernel
 * error once, and the library's call must not swallow it: such an error is
 * latched and returned by the program's next synchronising call or
 * synchronous copy that would otherwise succeed. Returns r. */
CUresult atl_own_result(CUresult r);

/* Says once that the tool ran out of memory (the program is unaffected). */
void atl_log_once_oom(const char *what);

/* What a feature reported that makes ATLAS_ERROR_EXITCODE replace the program's
 * exit status. Each report adds what it found to its kind; the engine decides at exit. */
enum atl_finding {
    ATL_FINDING_OVERRUN, /* a red zone found corrupted */
    ATL_FINDING_FAULT,   /* a sticky fault, or a launch debug sync found failing */
    ATL_FINDING_LEAK,    /* allocations never freed (ATLAS_LEAKS) */
    ATL_FINDING_DIFF,    /* a step that differs (counts only with ATLAS_ERROR_ON=diff) */
    ATL_FINDING_KINDS,
};
void atl_note_finding(enum atl_finding kind, uint64_t n);

/* Lazy, once-only initialisation (settings, log, what is enabled). Safe to
 * call from every entry point; cheap after the first call. */
void atl_engine_init(void);

/* Per-thread re-entrancy guard: while the library itself is working (or
 * calling the driver or libc on its own behalf) hooks on this thread pass
 * straight through. atl_enter() returns 0 when the hook must pass through
 * (re-entered, after the exit report, or in a forked child). */
int atl_enter(int hook, int path);
void atl_leave(void);

/* atl_enter for the library's own API entry points (atlas_* functions):
 * marks the thread re-entrant without counting a hook call. */
int atl_self_enter(void);
/* Marks the thread re-entrant unconditionally (initialising first), also
 * after the exit report: for a report the program asks for (atl_leave
 * ends it). */
void atl_hold(void);

/* ---- events ---------------------------------------------------------- */

struct atl_launch {
    int hook;
    CUfunction func; /* a CUfunction, or a CUkernel passed where one is accepted */
    unsigned grid[3], block[3], cluster[3];
    unsigned shmem;
    CUstream stream;
    void **params;
    void **extra;
    const CUlaunchConfig *config; /* cuLaunchKernelEx only */
    uint64_t seq;                 /* launch number, set by the engine */
};
/* Fills grid, block, shared memory, stream and cluster from l->config. */
void atl_launch_from_config(struct atl_launch *l);
void atl_launch_pre(struct atl_launch *l);
CUresult atl_launch_post(struct atl_launch *l, CUresult r);

struct atl_graph_launch {
    int hook;
    CUgraphExec exec;
    CUstream stream;
};
void atl_graph_launch_pre(struct atl_graph_launch *g);

struct atl_graph_inst {
    int hook;
    CUgraph graph;
    CUgraphExec exec; /* when r == CUDA_SUCCESS */
};
void atl_graph_inst_post(struct atl_graph_inst *g, CUresult r);
CUresult atl_graph_launch_post(struct atl_graph_launch *g, CUresult r);

/* ATL_ALLOC_VMM: a physical allocation (cuMemCreate), keyed by its handle;
 * ATL_ALLOC_VMM_MAP: where one is mapped (cuMemMap), so an address in the
 * mapping resolves to it. */
enum atl_alloc_kind {
    ATL_ALLOC_DEVICE,
    ATL_ALLOC_PITCH,
    ATL_ALLOC_MANAGED,
    ATL_ALLOC_ASYNC,
    ATL_ALLOC_VMM,
    ATL_ALLOC_VMM_MAP,
};
struct atl_alloc {
    int hook;
    enum atl_alloc_kind kind;
    CUdeviceptr *dptr;
    size_t bytes;         /* asked for; pre may raise `padded` above it */
    size_t padded;        /* what is passed to the driver */
    size_t *pitch;        /* cuMemAllocPitch_v2 */
    size_t width, height; /* cuMemAllocPitch_v2: bytes per row, rows */
    unsigned elem;        /* cuMemAllocPitch_v2 element size */
    CUstream stream;      /* stream-ordered */
    CUmemoryPool pool;    /* cuMemAllocFromPoolAsync */
    size_t padded_height; /* cuMemAllocPitch_v2: rows passed to the driver (0: height) */
    uint64_t seq;         /* creation number (the ledger's), set by the engine */
};
void atl_alloc_pre(struct atl_alloc *a);
void atl_alloc_post(struct atl_alloc *a, CUresult r);

struct atl_free {
    int hook;
    CUdeviceptr ptr;
    CUstream stream; /* cuMemFreeAsync */
    int async;
    int known;                /* the ledger knew ptr (rec filled) */
    struct atl_alloc_rec rec; /* what the ledger had, removed before the real free */
};
void atl_free_pre(struct atl_free *f);
void atl_free_post(struct atl_free *f, CUresult r);

/* Virtual memory management (src/vmm.c): cuMemCreate and cuMemRelease
 * make and drop physical allocations, cuMemMap and cuMemUnmap put them at
 * addresses reserved with cuMemAddressReserve. */
enum atl_vmm_op {
    ATL_VMM_CREATE,
    ATL_VMM_RELEASE,
    ATL_VMM_RESERVE,
    ATL_VMM_ADDR_FREE,
    ATL_VMM_MAP,
    ATL_VMM_UNMAP,
};
struct atl_vmm {
    int hook;
    enum atl_vmm_op op;
    CUmemGenericAllocationHandle handle;      /* RELEASE, MAP */
    CUmemGenericAllocationHandle *handle_out; /* CREATE */
    CUdeviceptr ptr;                          /* MAP, UNMAP, ADDR_FREE */
    CUdeviceptr *ptr_out;                     /* RESERVE */
    size_t bytes;
    size_t offset;            /* MAP: into the physical allocation */
    uint64_t seq;             /* CREATE: creation number (the ledger's) */
    int known;                /* RELEASE: the ledger knew the handle (rec filled) */
    struct atl_alloc_rec rec; /* RELEASE: what the ledger had, removed before the call */
};
void atl_vmm_pre(struct atl_vmm *v);
void atl_vmm_post(struct atl_vmm *v, CUresult r);

enum atl_copy_kind {
    ATL_CPY_GENERIC, /* cuMemcpy*: direction found through unified addressing */
    ATL_CPY_PEER,
    ATL_CPY_HTOD,
    ATL_CPY_DTOH,
    ATL_CPY_DTOD,
    ATL_CPY_DTOA,
    ATL_CPY_ATOD,
    ATL_CPY_HTOA,
    ATL_CPY_ATOH,
    ATL_CPY_ATOA,
    ATL_CPY_2D,
    ATL_CPY_3D,
    ATL_CPY_3D_PEER,
    ATL_CPY_BATCH,
    ATL_CPY_3D_BATCH,
};
struct atl_copy {
    int hook;
    enum atl_copy_kind kind;
    int async;
    CUdeviceptr dst, src; /* device side(s), or UVA pointers for GENERIC */
    void *host_dst;       /* DTOH, ATOH */
    const void *host_src; /* HTOD, HTOA */
    CUarray adst, asrc;
    size_t dst_off, src_off;
    size_t bytes;
    /* 2D, 3D, 3D peer: the program's descriptor, which the engine decodes
     * into geom before any feature sees the event; features read geom */
    const CUDA_MEMCPY2D *p2d;
    const CUDA_MEMCPY3D *p3d;
    const CUDA_MEMCPY3D_PEER *p3dp;
    struct atl_copy_geom geom;
    size_t count; /* batch: number of copies */
    const CUdeviceptr *batch_dst, *batch_src;
    const size_t *batch_sizes;
    const CUDA_MEMCPY3D_BATCH_OP *batch3d;
    CUstream stream;
};
void atl_copy_pre(struct atl_copy *c);
/* A synchronous cuMemcpyDtoH of n bytes, from the hooks' light path
 * (ATL_ON_DTOH_COUNT): counted as a blocking copy, its result latched. */
void atl_sync_dtoh_light(int hook, size_t n, CUresult r);
CUresult atl_copy_post(struct atl_copy *c, CUresult r);

struct atl_memset {
    int hook;
    int async;
    CUdeviceptr dst;
    unsigned value;
    unsigned elem; /* 1, 2 or 4 bytes */
    size_t count;  /* elements (1D), or width in elements (2D) */
    size_t pitch;  /* 2D only; 0 for 1D */
    size_t height; /* 2D only; 0 for 1D */
    CUstream stream;
};
void atl_memset_pre(struct atl_memset *m);
CUresult atl_memset_post(struct atl_memset *m, CUresult r);

enum atl_sync_kind { ATL_SYNC_CTX, ATL_SYNC_STREAM, ATL_SYNC_EVENT };
struct atl_sync {
    int hook;
    enum atl_sync_kind kind;
    CUcontext ctx; /* cuCtxSynchronize_v2 */
    CUstream stream;
    CUevent event;
    uint64_t launches_before; /* the newest launch when it started (engine) */
};
void atl_sync_pre(struct atl_sync *s);
CUresult atl_sync_post(struct atl_sync *s, CUresult r);

struct atl_capture {
    int hook;
    CUstream stream;
    int mode;      /* CUstreamCaptureMode; -1 for the legacy one-argument form */
    CUgraph graph; /* end: the captured graph; to-graph: the target */
    int begin;
};
void atl_capture_pre(struct atl_capture *c);
void atl_capture_post(struct atl_capture *c, CUresult r);

enum atl_lookup_kind {
    ATL_LOOKUP_MODULE_FUNCTION,
    ATL_LOOKUP_LIBRARY_KERNEL,
    ATL_LOOKUP_KERNEL_FUNCTION
};
struct atl_lookup {
    int hook;
    enum atl_lookup_kind kind;
    void *owner;      /* CUmodule, CUlibrary or CUkernel */
    const char *name; /* NULL for cuKernelGetFunction */
    void *result;     /* the handle returned, when r == CUDA_SUCCESS */
};
void atl_lookup_post(struct atl_lookup *l, CUresult r);

struct atl_module {
    int hook;
    int library; /* CUlibrary rather than CUmodule */
    int unload;
    void *handle;
    const char *file; /* cuModuleLoad, cuLibraryLoadFromFile */
};
void atl_module_pre(struct atl_module *m);
/* Counts successful module and library unloads: a cache keyed by kernel
 * handle checks an entry made before the latest unload before trusting it. */
extern unsigned long atl_unload_gen;
void atl_module_post(struct atl_module *m, CUresult r);

struct atl_ctx_teardown {
    int hook;
    CUcontext ctx; /* cuCtxDestroy_v2 */
    CUdevice dev;  /* primary context release/reset */
};
void atl_ctx_teardown_pre(struct atl_ctx_teardown *t);

/* ---- reports ------------------------------------------------------------ */

/* Runs the exit reports once (the first caller wins); afterwards every hook
 * passes through. Registered with atexit, also called from the destructor. */
void atl_engine_exit(void);

/* Locks for the exit reports. The exit may come from a signal handler on a
 * thread stopped while holding a lock, or while another thread is stopped in
 * a driver call holding one: the reports never wait for such a lock longer
 * than ATL_EXIT_WAIT_MS, counted once from the start of the exit, and the
 * report that needs it is skipped and named (`what`) in one line. Returns 0
 * when locked, -1 when skipped. Outside the exit it is pthread_mutex_lock. */
#define ATL_EXIT_WAIT_MS 2000
int atl_exit_lock(pthread_mutex_t *m, const char *what);
/* At exit, runs fn(arg) on a helper thread and waits for it until the exit's
 * deadline: for driver calls, which may wait for a lock of the driver's own
 * that the exiting thread holds (a signal handler that calls exit() may have
 * interrupted a launch on the light path, which marks nothing). Then says
 * `what` was skipped and returns -1 (the helper stays blocked; the process is
 * ending). Outside the exit, or when no thread can be made, calls fn(arg). */
int atl_exit_bounded(void *(*fn)(void *), void *arg, const char *what);
/* 1 while the exit reports run: code shared with normal operation takes its
 * locks through atl_exit_lock then. */
int atl_exiting(void);
/* The exit's deadline has passed (spin locks poll it). */
int atl_exit_past_deadline(void);
/* Says once per report that it was skipped at exit, and why. */
void atl_exit_skipped(const char *what);

/* Fork support: prepare/parent/child handlers for pthread_atfork. */
void atl_engine_atfork_child(void);

#endif
