/*
 * The events: what one intercepted driver call says, as the hooks build it
 * (hooks/kinds.h) and the engine hands it to the features. Every feature
 * includes this, never src/engine.h: a feature reads events and answers
 * with the classes it wants (ATL_ON_*); it does not call the engine. What a
 * feature needs of the library's lifecycle is in src/services.h.
 */
#ifndef ATL_EVENTS_H
#define ATL_EVENTS_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "copy.h"   /* struct atl_copy_geom, a decoded 2D/3D descriptor */
#include "hookid.h" /* every event names its entry point (ATL_ID_*) */
#include "ledger.h" /* struct atl_alloc_rec, in a free's event */

/* The packed parameter buffer a launch's `extra` array names, and its size (0 when not
 * given): the one reading of `extra` (the engine's, into the launch event, and the flight
 * recorder's light path, which has no event). Read up to CU_LAUNCH_PARAM_END, the first key
 * that is none of the three, or 32 pairs, whichever comes first. */
static inline const void *atl_launch_packed(void *const *extra, size_t *size)
{
    const void *buf = NULL;
    *size = 0;
    for (unsigned i = 0; extra && i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
            *size = *(const size_t *)extra[i + 1];
        else if (extra[i] != CU_LAUNCH_PARAM_BUFFER_SIZE)
            break;
    }
    return buf;
}

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
    /* what orders streams without moving memory: stream creation and
     * destruction, event records and waits, host functions and callbacks,
     * stream and event queries (struct atl_stream_op) */
    ATL_ON_STREAM = 1u << 13,
    ATL_ON_ALL = 0xffffffffu,
};

struct atl_krec;
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
    /* func's record (src/kernels.h: name, parameter layout, counters), found
     * once by the engine's atl_launch_pre; NULL when func is NULL (or out of
     * memory). Features read it here instead of looking func up again. */
    struct atl_krec *rec;
    /* where the hook was called from (its return address): the program's
     * launch, or the runtime library's that made it; a call site without
     * unwinding (src/races.c) */
    void *caller;
    /* the capture status of the op's stream (CUstreamCaptureStatus), asked once by the engine
     * before any feature sees the event (atl_capture_status: 0, NONE, while no capture is open) */
    int cap;
    /* the packed parameter buffer of `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER) and its size
     * (CU_LAUNCH_PARAM_BUFFER_SIZE; 0 when not given), decoded once by the engine before any
     * feature sees the event (atl_launch_packed); NULL when the launch passes none */
    const void *packed;
    size_t packed_size;
};

struct atl_graph_launch {
    int hook;
    CUgraphExec exec;
    CUstream stream;
    void *caller; /* the hook's return address (struct atl_launch's caller) */
    /* the capture status of the op's stream (CUstreamCaptureStatus), asked once by the engine
     * before any feature sees the event (atl_capture_status: 0, NONE, while no capture is open) */
    int cap;
};

struct atl_graph_inst {
    int hook;
    CUgraph graph;
    CUgraphExec exec; /* when r == CUDA_SUCCESS */
};

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
    unsigned retries;     /* the driver was asked again after red zones let held frees go */
    int unpadded;         /* made without its red zone: it fit only so (atl_alloc_unpad) */
    /* the capture status of the op's stream (CUstreamCaptureStatus), asked once by the engine
     * before any feature sees the event (atl_capture_status: 0, NONE, while no capture is open) */
    int cap;
};

struct atl_free {
    int hook;
    CUdeviceptr ptr;
    CUstream stream; /* cuMemFreeAsync */
    int async;
    int known; /* the ledger knew ptr (rec filled) */
    int held;  /* red zones hold the free back: the hook returns success without calling the
                * driver, which frees it later (a batch, the quarantine: src/redzone_quar.c) */
    int drain; /* red zones count the free as under way until its post (epoch + 1; 0 not) */
    struct atl_alloc_rec rec; /* what the ledger had, removed before the real free */
    void *caller;             /* the hook's return address (struct atl_launch's caller) */
    /* the capture status of the op's stream (CUstreamCaptureStatus), asked once by the engine
     * before any feature sees the event (atl_capture_status: 0, NONE, while no capture is open) */
    int cap;
};

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
    void *caller; /* the hook's return address (struct atl_launch's caller) */
    /* Set by the engine before any feature sees the event (the one place this is decided):
     * the call returned only after the work queued before it on its stream was done. CUDA's
     * documented behaviour: every synchronous copy with a host end (a pageable host-to-device
     * copy syncs the stream before it starts), and one whose ends are not known without asking
     * the driver (cuMemcpy through unified addressing, a 2D/3D copy with a unified end); never
     * an asynchronous one, nor one between device memories and arrays (device to device, peer,
     * arrays, a 2D/3D copy with no host end), for which no host synchronisation is performed.
     * Races: the host learns the stream; step traces in sync mode: a step ends (host to device
     * excepted: src/trace.c). */
    int host_waits;
    /* the memory type of the host end of an asynchronous HtoD or DtoH copy (enum atl_mem,
     * src/copy.h), asked once by the engine when two features would each ask the driver; 0:
     * not asked (atl_copy_host_mem asks then) */
    int host_mem;
    /* the capture status of the op's stream (CUstreamCaptureStatus), asked once by the engine
     * before any feature sees the event (atl_capture_status: 0, NONE, while no capture is open) */
    int cap;
};

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
    void *caller; /* the hook's return address (struct atl_launch's caller) */
    /* the capture status of the op's stream (CUstreamCaptureStatus), asked once by the engine
     * before any feature sees the event (atl_capture_status: 0, NONE, while no capture is open) */
    int cap;
};

enum atl_sync_kind { ATL_SYNC_CTX, ATL_SYNC_STREAM, ATL_SYNC_EVENT };
struct atl_sync {
    int hook;
    enum atl_sync_kind kind;
    CUcontext ctx; /* cuCtxSynchronize_v2 */
    CUstream stream;
    CUevent event;
    uint64_t launches_before; /* the newest launch when it started (engine) */
    void *caller;             /* the hook's return address (struct atl_launch's caller) */
    int step_ended;           /* the step trace ended its step before the wait (engine) */
};

struct atl_capture {
    int hook;
    CUstream stream;
    int mode;      /* CUstreamCaptureMode; -1 for the legacy one-argument form */
    CUgraph graph; /* end: the captured graph; to-graph: the target */
    int begin;
};

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

struct atl_module {
    int hook;
    int library; /* CUlibrary rather than CUmodule */
    int unload;
    void *handle;
    const char *file; /* cuModuleLoad, cuLibraryLoadFromFile */
};

/* Calls that order work between streams, or tell the host that work is
 * done, without moving memory (ATL_ON_STREAM). */
enum atl_stream_op_kind {
    ATL_SOP_CREATE,        /* cuStreamCreate(WithPriority): *pstream, flags, priority */
    ATL_SOP_DESTROY,       /* cuStreamDestroy_v2 */
    ATL_SOP_RECORD,        /* cuEventRecord(WithFlags): event on stream */
    ATL_SOP_WAIT,          /* cuStreamWaitEvent: stream waits for event */
    ATL_SOP_HOST_FN,       /* cuLaunchHostFunc: fn(data) runs after the stream's work */
    ATL_SOP_CALLBACK,      /* cuStreamAddCallback: cb(stream, status, data) likewise */
    ATL_SOP_QUERY_STREAM,  /* cuStreamQuery: CUDA_SUCCESS means the stream's work is done */
    ATL_SOP_QUERY_EVENT,   /* cuEventQuery: CUDA_SUCCESS means the event's work is done */
    ATL_SOP_EVENT_DESTROY, /* cuEventDestroy_v2 */
    ATL_SOP_GRAPH_DESTROY, /* cuGraphDestroy: graph */
    ATL_SOP_EXEC_DESTROY,  /* cuGraphExecDestroy: exec */
};
struct atl_stream_op {
    int hook;
    enum atl_stream_op_kind kind;
    CUstream stream;
    CUstream *pstream; /* CREATE */
    CUevent event;
    unsigned flags; /* CREATE: the stream's; RECORD, WAIT, CALLBACK: the call's */
    int priority;   /* CREATE */
    /* HOST_FN and CALLBACK: the program's function and its argument. A
     * feature's pre may replace them with its own function that calls the
     * program's (the hook passes what is here to the driver). */
    CUhostFn fn;
    CUstreamCallback cb;
    void *data;
    void *caller; /* the hook's return address (struct atl_launch's caller) */
    CUgraph graph;    /* GRAPH_DESTROY */
    CUgraphExec exec; /* EXEC_DESTROY */
};

struct atl_ctx_teardown {
    int hook;
    CUcontext ctx; /* cuCtxDestroy_v2 */
    CUdevice dev;  /* primary context release/reset */
};

#endif
