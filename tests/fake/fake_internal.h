/*
 * A fake CUDA driver (libcuda.so.1) for machines without a GPU.
 *
 * Every test of the interposer runs against this library, so what it models
 * is what the interposer's features depend on: real ABI variants as distinct
 * exported symbols (and cuGetProcAddress resolving base names to exactly
 * those pointers), bytes that really move, kernel faults that surface late and
 * stick, stream capture that freezes argument bytes, and the driver's error
 * codes for the misuse a tool must not hide. See fakecuda.h for the model.
 *
 * Built with -D__CUDA_API_VERSION_INTERNAL so cuda.h declares every variant
 * with its exact prototype and each definition below is checked against it,
 * and linked -Bsymbolic so the pointers handed out by cuGetProcAddress are
 * this library's own (what dlsym on its handle returns), even when an
 * LD_PRELOADed interposer exports the same names.
 *
 * The files, by area (fake_internal.h holds what they share: the types of
 * the model, the driver lock, the call counters' ENTER, and the functions
 * one area calls in another; all hidden, so the library exports exactly the
 * driver's functions and fakecuda.h's test controls):
 *   fake_core.c     the call counters, the driver lock, handles, and the
 *                   model every area shares: contexts, allocations,
 *                   modules and kernels, arrays, copy descriptors, graph
 *                   ops and stream submission
 *   fake_device.c   init, devices, primary and created contexts, error names
 *   fake_mem.c      allocation and free, virtual memory management, host
 *                   memory, pointer attributes, arrays
 *   fake_copy.c     copies and memsets (the descriptors of fake_core.c,
 *                   executed now or recorded)
 *   fake_stream.c   streams, events, stream capture
 *   fake_graph.c    graphs, instantiation, graph launch
 *   fake_module.c   modules, libraries, kernel names and parameter layouts
 *   fake_launch.c   kernel launches
 *   fake_ptds.c     the per-thread default stream twins and their legacy
 *                   functions, generated from ptds.def
 *   fake_gpa.c      cuGetProcAddress
 *   ptds.def        the one list of _ptds/_ptsz twins
 */
#ifndef FAKE_INTERNAL_H
#define FAKE_INTERNAL_H

#include "fakecuda.h"

#include "addrmap.h" /* the engine's address map, compiled in */

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

/* Every exported cu* function, once: FAKE_SYMBOLS, then both functions of
 * each row of ptds.def. Drives the call counters and fake_fail_next; ENTER()
 * checks each name against __func__. */
/* clang-format off */
#define FAKE_SYMBOLS(X) \
    X(cuInit) \
    X(cuDriverGetVersion) \
    X(cuDeviceGet) \
    X(cuDeviceGetCount) \
    X(cuDeviceGetName) \
    X(cuDeviceGetAttribute) \
    X(cuDeviceTotalMem_v2) \
    X(cuDeviceGetUuid_v2) \
    X(cuDevicePrimaryCtxRetain) \
    X(cuDevicePrimaryCtxRelease) \
    X(cuDevicePrimaryCtxRelease_v2) \
    X(cuDevicePrimaryCtxReset) \
    X(cuDevicePrimaryCtxReset_v2) \
    X(cuDevicePrimaryCtxGetState) \
    X(cuDeviceGetDefaultMemPool) \
    X(cuCtxCreate_v4) \
    X(cuCtxDestroy) \
    X(cuCtxDestroy_v2) \
    X(cuCtxSetCurrent) \
    X(cuCtxGetCurrent) \
    X(cuCtxPushCurrent_v2) \
    X(cuCtxPopCurrent_v2) \
    X(cuCtxGetDevice) \
    X(cuCtxGetDevice_v2) \
    X(cuCtxSynchronize) \
    X(cuCtxSynchronize_v2) \
    X(cuGetErrorName) \
    X(cuGetErrorString) \
    X(cuGetProcAddress) \
    X(cuGetProcAddress_v2) \
    X(cuMemAlloc_v2) \
    X(cuMemAllocPitch_v2) \
    X(cuMemAllocManaged) \
    X(cuMemFree_v2) \
    X(cuMemCreate) \
    X(cuMemRelease) \
    X(cuMemAddressReserve) \
    X(cuMemAddressFree) \
    X(cuMemMap) \
    X(cuMemUnmap) \
    X(cuMemSetAccess) \
    X(cuMemGetAllocationGranularity) \
    X(cuMemGetInfo_v2) \
    X(cuMemGetAddressRange_v2) \
    X(cuMemAllocHost_v2) \
    X(cuMemHostAlloc) \
    X(cuMemFreeHost) \
    X(cuMemHostRegister_v2) \
    X(cuMemHostUnregister) \
    X(cuMemHostGetDevicePointer_v2) \
    X(cuPointerGetAttribute) \
    X(cuPointerGetAttributes) \
    X(cuArrayCreate_v2) \
    X(cuArray3DCreate_v2) \
    X(cuArrayDestroy) \
    X(cuArrayGetDescriptor_v2) \
    X(cuStreamCreate) \
    X(cuStreamCreateWithPriority) \
    X(cuStreamDestroy_v2) \
    X(cuStreamGetCtx) \
    X(cuEventCreate) \
    X(cuEventSynchronize) \
    X(cuEventQuery) \
    X(cuEventDestroy_v2) \
    X(cuEventElapsedTime) \
    X(cuEventElapsedTime_v2) \
    X(cuGraphCreate) \
    X(cuGraphInstantiate) \
    X(cuGraphInstantiate_v2) \
    X(cuGraphInstantiateWithFlags) \
    X(cuGraphDestroy) \
    X(cuGraphExecDestroy) \
    X(cuGraphGetNodes) \
    X(cuGraphNodeGetType) \
    X(cuGraphKernelNodeGetParams_v2) \
    X(cuModuleLoad) \
    X(cuModuleLoadData) \
    X(cuModuleLoadDataEx) \
    X(cuModuleLoadFatBinary) \
    X(cuModuleUnload) \
    X(cuModuleGetFunction) \
    X(cuLibraryLoadData) \
    X(cuLibraryLoadFromFile) \
    X(cuLibraryUnload) \
    X(cuLibraryGetKernel) \
    X(cuLibraryGetModule) \
    X(cuKernelGetFunction) \
    X(cuFuncGetName) \
    X(cuKernelGetName) \
    X(cuFuncGetParamInfo) \
    X(cuKernelGetParamInfo) \
    X(cuFuncGetModule)
/* clang-format on */

enum fake_sym {
#define X(s) SYM_##s,
    FAKE_SYMBOLS(X)
#undef X
#define FAKE_PT(api, ver, sym, sfx, params, args) SYM_##sym, SYM_##sym##_##sfx,
#include "ptds.def"
#undef FAKE_PT
        SYM_COUNT
};

#define ENTER(sym)                                                                                 \
    do {                                                                                           \
        CUresult enter_rc_ = sym_enter(SYM_##sym, __func__);                                       \
        if (enter_rc_ != CUDA_SUCCESS)                                                             \
            return enter_rc_;                                                                      \
    } while (0)

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        CUresult try_rc_ = (expr);                                                                 \
        if (try_rc_ != CUDA_SUCCESS)                                                               \
            return try_rc_;                                                                        \
    } while (0)

#define LOCK() pthread_mutex_lock(&g_lock)

#define UNLOCK() pthread_mutex_unlock(&g_lock)

/* Handle magics: every handle the fake gives out starts with one, and is
 * looked up in g_handles before use, so a stale or foreign handle gives
 * CUDA_ERROR_INVALID_HANDLE instead of a crash. */
enum {
    MAGIC_CTX = 0xC7C7C701,
    MAGIC_STREAM = 0x57EA4D02,
    MAGIC_EVENT = 0xE7E47003,
    MAGIC_MODULE = 0x40D01E04,
    MAGIC_LIBRARY = 0x11B2A205,
    MAGIC_FUNC = 0xF7C00006,
    MAGIC_KERNEL = 0x4E2E1007,
    MAGIC_GRAPH = 0x62A90008,
    MAGIC_EXEC = 0xE8EC0009,
    MAGIC_ARRAY = 0xA22A000A,
    MAGIC_VMM = 0x7A3A000B,
};

struct hdr {
    uint32_t magic;
    void *owner; /* the object this header belongs to */
};

struct fake_ctx {
    struct hdr h;
    int primary;
    int alive;        /* primary: refcount > 0; created: not destroyed */
    int refcount;     /* primary only */
    CUresult pending; /* a kernel fault not yet reported */
    CUresult sticky;  /* reported context-destroying fault */
    int ncapturing;   /* streams of this context now capturing */
};

#define CTX_STACK_MAX 32

/* AK_VMM: a cuMemMap mapping; its memory belongs to the physical
 * allocation (fake_vmm), not to the record */
enum alloc_kind { AK_DEVICE, AK_MANAGED, AK_HOST, AK_REGISTERED, AK_VMM };

struct alloc {
    uintptr_t base;
    size_t size;    /* as requested */
    size_t charged; /* counted against g_total_mem */
    enum alloc_kind kind;
    struct fake_ctx *ctx;
};

/* Slack past the end of every allocation, so a test kernel that writes a
 * little past its buffer (the red-zone tests) hits memory the fake owns
 * instead of the malloc heap. */
#define ALLOC_SLACK 4096

#define ALLOC_ALIGN 256

struct fake_fn {
    struct hdr as_func;   /* the CUfunction */
    struct hdr as_kernel; /* the CUkernel (libraries only) */
    const struct fake_kernel_def *def;
    struct fake_mod *mod;
    size_t *offsets;
    size_t argbytes;
};

struct fake_mod {
    struct hdr as_module;
    struct hdr as_library;
    int is_library;
    const struct fake_image *img;
    void *dl;
    struct fake_fn *fns;
};

struct named_image {
    char *name;
    const struct fake_image *img;
    struct named_image *next;
};

struct fake_array {
    struct hdr h;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    size_t row_bytes, height, depth;
    unsigned char *data;
};

struct xfer_side {
    CUmemorytype type;
    const void *host;
    CUdeviceptr dev;
    CUarray arr;
    size_t x, y, z, pitch, height;
    int linear; /* array side of a 1D copy: x is a byte offset into all of it */
};

struct xfer {
    struct xfer_side src, dst;
    size_t w, h, d;
};

struct setop {
    CUdeviceptr p;
    size_t pitch; /* bytes; 0 for 1D */
    unsigned value;
    unsigned esize; /* 1, 2 or 4 */
    size_t w, h;    /* elements, rows */
};

/* OP_HOST: a host function (cuLaunchHostFunc), run in stream order */
enum op_kind { OP_KERNEL, OP_COPY, OP_SET, OP_HOST };

struct op {
    enum op_kind kind;
    /* kernel */
    struct fake_fn *fn;
    struct fake_launch launch;
    unsigned char *args; /* argbytes, frozen at capture time */
    /* copy / memset */
    struct xfer x;
    struct setop s;
    /* host function */
    CUhostFn hfn;
    void *hdata;
};

struct fake_graph {
    struct hdr h;
    struct op **ops;
    size_t nops, capops;
};

struct fake_exec {
    struct hdr h;
    struct op **ops;
    size_t nops;
};

struct capture {
    struct fake_graph *graph;
    struct fake_stream *origin;
    uint64_t id;
    int invalidated;
    CUstreamCaptureMode mode;
};

struct fake_stream {
    struct hdr h;
    struct fake_ctx *ctx;
    unsigned flags;
    int priority;
    struct capture *cap; /* non-NULL while capturing (origin or joined) */
};

struct fake_event {
    struct hdr h;
    struct fake_ctx *ctx;
    unsigned flags;
    int recorded;
    double ms;
    struct capture *cap; /* recorded in a capture: waiting on it joins */
    uint64_t cap_id;     /* cap may be gone and its address reused: check */
};

/* The per-thread default stream, modelled only as far as capture needs: a thread's stream
 * object is made when a capture begins on it (cuStreamBeginCapture on CU_STREAM_PER_THREAD, or
 * on 0 through a _ptsz twin), and from then on that thread's per-thread stream is it (a
 * capture's ops go into its graph). Before, and on threads that never capture on it, the
 * per-thread stream is the context's one stream, as the legacy one. fake_pt_call: the call
 * came through a _ptsz/_ptds twin, whose 0 is the per-thread stream (fake_ptds.c). */
extern __thread int fake_pt_call;
int fake_is_pt_stream(CUstream s);
struct fake_stream *fake_pt_stream_make_locked(struct fake_ctx *ctx);
/* A new stream object in ctx, its handle added (NULL: out of memory); caller holds g_lock
 * (fake_stream.c: cuStreamCreate's, and the per-thread stream's). */
struct fake_stream *fake_stream_new_locked(struct fake_ctx *ctx, unsigned flags, int priority);

/* The model's shared state (fake_core.c). */
extern pthread_mutex_t g_lock;
extern int g_initialized;
extern size_t g_total_mem;
extern size_t g_used_mem;
extern struct hdr **g_handles;
extern size_t g_nhandles, g_caphandles;
extern struct fake_ctx g_primary;
extern __thread struct fake_ctx *tls_ctx[CTX_STACK_MAX];
extern __thread int tls_depth;
extern struct alloc *g_allocs;
extern size_t g_nallocs, g_capallocs;
extern struct atl_addrmap g_byb;
extern uint64_t g_capture_ids;

/* fake_core.c */
CUresult sym_enter(int idx, const char *func);
int handle_add(struct hdr *h);
void handle_remove(struct hdr *h);
void *handle_get(const void *p, uint32_t magic);
struct fake_ctx *ctx_current(void);
int err_is_sticky(CUresult e);
CUresult ctx_check_locked(struct fake_ctx *ctx);
CUresult ctx_enter(struct fake_ctx **out);
CUresult ctx_sync_locked(struct fake_ctx *ctx);
CUresult ctx_sync(struct fake_ctx *ctx);
void ctx_fault(struct fake_ctx *ctx, CUresult err);
struct alloc *alloc_find_locked(uintptr_t p);
int alloc_add_locked(uintptr_t base, size_t size, size_t charged, enum alloc_kind kind,
                     struct fake_ctx *ctx);
void alloc_remove_locked(struct alloc *a);
CUresult mem_alloc(struct fake_ctx *ctx, uintptr_t *out, size_t size, enum alloc_kind kind);
CUresult mem_free(uintptr_t p, unsigned kinds);
void ctx_free_allocs_locked(struct fake_ctx *ctx);
void mod_free(struct fake_mod *m);
CUresult mod_create(const struct fake_image *img, void *dl, int is_library, struct fake_mod **out);
void mod_unregister_locked(struct fake_mod *m);
CUresult mod_load_named(const char *name, int is_library, struct fake_mod **out);
struct fake_fn *fn_from_handle_locked(const void *h);
size_t format_bytes(CUarray_format f);
struct fake_array *array_get(CUarray a);
CUresult xfer_check(const struct xfer *x);
CUresult xfer_exec(const struct xfer *x);
CUresult setop_check(const struct setop *s);
struct op *op_clone(const struct op *o);
void op_free(struct op *o);
CUresult graph_append_locked(struct fake_graph *g, const struct op *o);
void graph_free(struct fake_graph *g);
CUresult stream_resolve_locked(CUstream s, struct fake_ctx **ctx, struct fake_stream **st);
CUresult op_run(struct fake_ctx *ctx, const struct op *o, const void *src_args);
CUresult stream_submit(CUstream s, struct op *o, void **params);

/* fake_device.c */
CUresult need_init(void);
CUresult dev_check(CUdevice dev);
CUresult ctx_arg(CUcontext ctx, struct fake_ctx **out);

/* fake_copy.c */
CUresult stream_usable(CUstream s);
void sync_sleep(void);

/* fake_stream.c */
int ctx_invalidate_captures_locked(struct fake_ctx *ctx);
int ctx_invalidate_blocking_captures_locked(struct fake_ctx *ctx);
struct fake_graph *graph_new_locked(void);

/* The bodies a row of ptds.def and its twin share (fake_ptds.c calls them). */
#define FAKE_PT(api, ver, sym, sfx, params, args) CUresult sym##_impl params;
#include "ptds.def"
#undef FAKE_PT

#pragma GCC visibility pop

#endif
