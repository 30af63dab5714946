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
 */
#define _GNU_SOURCE
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

/* ------------------------------------------------------------------------ */
/* Exported symbols: call counts, fail_next, deinitialisation                */
/* ------------------------------------------------------------------------ */

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

static const char *const sym_names[SYM_COUNT] = {
#define X(s) #s,
    FAKE_SYMBOLS(X)
#undef X
#define FAKE_PT(api, ver, sym, sfx, params, args) #sym, #sym "_" #sfx,
#include "ptds.def"
#undef FAKE_PT
};

static atomic_ulong sym_calls[SYM_COUNT];
static atomic_int sym_fail[SYM_COUNT];
static atomic_int sym_checked[SYM_COUNT];
static atomic_int g_deinit;

static int sym_index(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < SYM_COUNT; i++)
        if (strcmp(sym_names[i], name) == 0)
            return i;
    return -1;
}

/* A mistyped ENTER() would count calls under the wrong name, which a test
 * would then trust; check the name against __func__ once per symbol. */
static void sym_check_name(int idx, const char *func)
{
    if (strcmp(sym_names[idx], func) != 0) {
        fprintf(stderr, "fakecuda: ENTER(%s) inside %s\n", sym_names[idx], func);
        abort();
    }
    atomic_store(&sym_checked[idx], 1);
}

static CUresult sym_enter(int idx, const char *func)
{
    if (__builtin_expect(!atomic_load_explicit(&sym_checked[idx], memory_order_relaxed), 0))
        sym_check_name(idx, func);
    atomic_fetch_add_explicit(&sym_calls[idx], 1, memory_order_relaxed);
    if (__builtin_expect(atomic_load_explicit(&sym_fail[idx], memory_order_relaxed) != 0, 0)) {
        int err = atomic_exchange(&sym_fail[idx], 0);
        if (err)
            return (CUresult)err;
    }
    if (__builtin_expect(atomic_load_explicit(&g_deinit, memory_order_relaxed), 0))
        return CUDA_ERROR_DEINITIALIZED;
    return CUDA_SUCCESS;
}

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

int fake_fail_next(const char *symbol, CUresult err)
{
    int i = sym_index(symbol);
    if (i < 0)
        return -1;
    atomic_store(&sym_fail[i], (int)err);
    return 0;
}

unsigned long fake_calls(const char *symbol)
{
    int i = sym_index(symbol);
    return i < 0 ? 0 : atomic_load(&sym_calls[i]);
}

void fake_reset_counts(void)
{
    for (int i = 0; i < SYM_COUNT; i++)
        atomic_store(&sym_calls[i], 0);
}

void fake_set_deinitialized(int on)
{
    atomic_store(&g_deinit, on != 0);
}

/* ------------------------------------------------------------------------ */
/* Global state: one lock around every table; never held while a kernel runs */
/* ------------------------------------------------------------------------ */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized;
static size_t g_total_mem = (size_t)80 << 30;
static size_t g_used_mem;

#define LOCK() pthread_mutex_lock(&g_lock)
#define UNLOCK() pthread_mutex_unlock(&g_lock)

void fake_set_total_mem(size_t bytes)
{
    LOCK();
    g_total_mem = bytes;
    UNLOCK();
}

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

static struct hdr **g_handles;
static size_t g_nhandles, g_caphandles;

static int handle_add(struct hdr *h)
{
    if (g_nhandles == g_caphandles) {
        size_t ncap = g_caphandles ? 2 * g_caphandles : 64;
        struct hdr **n = realloc(g_handles, ncap * sizeof *n);
        if (!n)
            return -1;
        g_handles = n;
        g_caphandles = ncap;
    }
    g_handles[g_nhandles++] = h;
    return 0;
}

static void handle_remove(struct hdr *h)
{
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i] == h) {
            g_handles[i] = g_handles[--g_nhandles];
            return;
        }
}

/* The object behind handle p if it is live and of kind magic, else NULL. */
static void *handle_get(const void *p, uint32_t magic)
{
    if (!p)
        return NULL;
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i] == p)
            return g_handles[i]->magic == magic ? g_handles[i]->owner : NULL;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                  */
/* ------------------------------------------------------------------------ */

struct fake_ctx {
    struct hdr h;
    int primary;
    int alive;        /* primary: refcount > 0; created: not destroyed */
    int refcount;     /* primary only */
    CUresult pending; /* a kernel fault not yet reported */
    CUresult sticky;  /* reported context-destroying fault */
    int ncapturing;   /* streams of this context now capturing */
};

static struct fake_ctx g_primary = {.h = {MAGIC_CTX, &g_primary}, .primary = 1};

#define CTX_STACK_MAX 32
static __thread struct fake_ctx *tls_ctx[CTX_STACK_MAX];
static __thread int tls_depth;

static struct fake_ctx *ctx_current(void)
{
    return tls_depth > 0 ? tls_ctx[tls_depth - 1] : NULL;
}

static int err_is_sticky(CUresult e)
{
    switch (e) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
        return 1;
    default:
        return 0;
    }
}

/* Caller holds g_lock. Checks init and that ctx is usable. */
static CUresult ctx_check_locked(struct fake_ctx *ctx)
{
    if (!g_initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx || !ctx->alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx->sticky)
        return ctx->sticky;
    return CUDA_SUCCESS;
}

/* The calling thread's current context, usable, or the error a real driver
 * gives: not initialised, no context, or the context's sticky fault. */
static CUresult ctx_enter(struct fake_ctx **out)
{
    struct fake_ctx *ctx = ctx_current();
    LOCK();
    CUresult r = ctx_check_locked(ctx);
    UNLOCK();
    *out = ctx;
    return r;
}

/* A synchronising call: report the pending fault once, and keep the
 * context-destroying ones. */
static CUresult ctx_sync_locked(struct fake_ctx *ctx)
{
    if (ctx->sticky)
        return ctx->sticky;
    CUresult r = ctx->pending;
    ctx->pending = CUDA_SUCCESS;
    if (err_is_sticky(r))
        ctx->sticky = r;
    return r;
}

static CUresult ctx_sync(struct fake_ctx *ctx)
{
    LOCK();
    CUresult r = ctx_sync_locked(ctx);
    UNLOCK();
    return r;
}

static void ctx_fault(struct fake_ctx *ctx, CUresult err)
{
    LOCK();
    if (!ctx->pending && !ctx->sticky)
        ctx->pending = err;
    UNLOCK();
}

/* ------------------------------------------------------------------------ */
/* Allocations (device, managed, pinned host, registered host)               */
/* ------------------------------------------------------------------------ */

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

static struct alloc *g_allocs;
static size_t g_nallocs, g_capallocs;

/* Exact base -> slot in g_allocs, so cuMemFree and most lookups are O(1)
 * with a million allocations live (the allocation benchmark measures the
 * preload's cost, not ours). */
static struct atl_addrmap g_byb;

/* Slack past the end of every allocation, so a test kernel that writes a
 * little past its buffer (the red-zone tests) hits memory the fake owns
 * instead of the malloc heap. */
#define ALLOC_SLACK 4096
#define ALLOC_ALIGN 256

static int holds(const struct alloc *a, uintptr_t p)
{
    return p >= a->base && (p - a->base < a->size || (a->size == 0 && p == a->base));
}

/* The allocation holding p. Our allocations start on ALLOC_ALIGN, so the
 * bases of the 64 aligned addresses at or below p are tried through the hash
 * first (a red-zone check reads just past a small allocation, with a
 * million others live); then every record, newest first. */
static struct alloc *alloc_find_locked(uintptr_t p)
{
    uintptr_t b = p & ~(uintptr_t)(ALLOC_ALIGN - 1);
    for (int k = 0; k < 64 && b; k++, b -= ALLOC_ALIGN) {
        size_t i;
        if (atl_addrmap_get(&g_byb, b, &i)) {
            struct alloc *a = &g_allocs[i];
            if (holds(a, p))
                return a;
            break; /* allocations do not overlap: nothing lower holds p */
        }
    }
    for (size_t i = g_nallocs; i-- > 0;) {
        struct alloc *a = &g_allocs[i];
        if (p >= a->base && (p - a->base < a->size || (a->size == 0 && p == a->base)))
            return a;
    }
    return NULL;
}

/* Is [p, p+n) inside one allocation the device can reach? */
static int dev_range_ok_locked(uintptr_t p, size_t n)
{
    struct alloc *a = alloc_find_locked(p);
    return a && n <= a->size - (p - a->base);
}

static int dev_range_ok(uintptr_t p, size_t n)
{
    LOCK();
    int ok = dev_range_ok_locked(p, n);
    UNLOCK();
    return ok;
}

static int alloc_add_locked(uintptr_t base, size_t size, size_t charged, enum alloc_kind kind,
                            struct fake_ctx *ctx)
{
    if (g_nallocs == g_capallocs) {
        size_t ncap = g_capallocs ? 2 * g_capallocs : 256;
        struct alloc *n = realloc(g_allocs, ncap * sizeof *n);
        if (!n)
            return -1;
        g_allocs = n;
        g_capallocs = ncap;
    }
    if (atl_addrmap_put(&g_byb, base, g_nallocs) != 0)
        return -1;
    g_allocs[g_nallocs++] = (struct alloc){base, size, charged, kind, ctx};
    g_used_mem += charged;
    return 0;
}

static void alloc_remove_locked(struct alloc *a)
{
    g_used_mem -= a->charged;
    if (a->kind != AK_REGISTERED && a->kind != AK_VMM)
        free((void *)a->base);
    atl_addrmap_del(&g_byb, a->base);
    size_t last = --g_nallocs;
    if (a != &g_allocs[last]) { /* the last record moves into a's slot */
        atl_addrmap_put(&g_byb, g_allocs[last].base, (size_t)(a - g_allocs)); /* overwrites */
        *a = g_allocs[last];
    }
}

static CUresult mem_alloc(struct fake_ctx *ctx, uintptr_t *out, size_t size, enum alloc_kind kind)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t rounded = (size + ALLOC_ALIGN - 1) & ~(size_t)(ALLOC_ALIGN - 1);
    if (rounded < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t charged = kind == AK_HOST ? 0 : rounded;
    LOCK();
    if (charged > g_total_mem - g_used_mem) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_used_mem += charged; /* reserve, so racing threads cannot overshoot */
    UNLOCK();
    void *p = NULL;
    if (posix_memalign(&p, ALLOC_ALIGN, rounded + ALLOC_SLACK) != 0) {
        LOCK();
        g_used_mem -= charged;
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(p, 0, rounded + ALLOC_SLACK);
    LOCK();
    g_used_mem -= charged;
    int bad = alloc_add_locked((uintptr_t)p, size, charged, kind, ctx);
    UNLOCK();
    if (bad) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = (uintptr_t)p;
    return CUDA_SUCCESS;
}

/* Free an allocation by its exact base; kinds says which kinds qualify. */
static CUresult mem_free(uintptr_t p, unsigned kinds)
{
    LOCK();
    size_t i;
    if (atl_addrmap_get(&g_byb, p, &i)) {
        struct alloc *a = &g_allocs[i];
        if (kinds & (1u << a->kind)) {
            alloc_remove_locked(a);
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_INVALID_VALUE;
}

/* A context's memory goes with it (cuCtxDestroy, last primary release,
 * primary reset), as on the real driver. */
static void ctx_free_allocs_locked(struct fake_ctx *ctx)
{
    for (size_t i = 0; i < g_nallocs;) {
        if (g_allocs[i].ctx == ctx && g_allocs[i].kind != AK_REGISTERED &&
            g_allocs[i].kind != AK_VMM) /* VMM memory outlives contexts */
            alloc_remove_locked(&g_allocs[i]);
        else
            i++;
    }
}

/* For the red-zone twin (fake_redzone.c): 1 when [p, p + n) lies in live
 * page-locked host memory, which a real GPU could reach through its mapping;
 * else the twin faults as the GPU would. */
int fake_host_mapped(const void *p, size_t n)
{
    LOCK();
    const struct alloc *a = alloc_find_locked((uintptr_t)p);
    int ok = a && (a->kind == AK_HOST || a->kind == AK_REGISTERED) && n &&
             holds(a, (uintptr_t)p + n - 1);
    UNLOCK();
    return ok;
}

size_t fake_live_allocations(void)
{
    size_t n = 0;
    LOCK();
    for (size_t i = 0; i < g_nallocs; i++)
        if (g_allocs[i].kind == AK_DEVICE || g_allocs[i].kind == AK_MANAGED)
            n++;
    UNLOCK();
    return n;
}

/* ------------------------------------------------------------------------ */
/* Modules, libraries, functions, kernels                                    */
/* ------------------------------------------------------------------------ */

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
static struct named_image *g_named;

static int image_ok(const struct fake_image *img)
{
    if (!img || img->magic != FAKE_IMAGE_MAGIC || (img->nkernels && !img->kernels))
        return 0;
    for (unsigned i = 0; i < img->nkernels; i++) {
        const struct fake_kernel_def *k = &img->kernels[i];
        if (!k->name || !k->fn || (k->nparams && !k->param_sizes))
            return 0;
    }
    return 1;
}

CUresult fake_register_image(const char *name, const struct fake_image *img)
{
    if (!name || !image_ok(img))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (struct named_image *n = g_named; n; n = n->next)
        if (strcmp(n->name, name) == 0) {
            n->img = img;
            UNLOCK();
            return CUDA_SUCCESS;
        }
    struct named_image *n = calloc(1, sizeof *n);
    char *copy = strdup(name);
    if (!n || !copy) {
        free(n);
        free(copy);
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n->name = copy;
    n->img = img;
    n->next = g_named;
    g_named = n;
    UNLOCK();
    return CUDA_SUCCESS;
}

static size_t param_align(size_t size)
{
    size_t a = 1;
    while (a < size && a < 8)
        a <<= 1;
    return a;
}

/* The kernel handles of the last module unloaded, kept for the next module
 * with as many kernels: its kernels get the old addresses, as a real driver
 * may hand them out, and interposers' per-handle caches must cope. (malloc
 * often reuses the memory anyway; a sanitizer's allocator does not.) */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_fn *spare_fns;
static unsigned spare_n;

static void fns_put(struct fake_fn *fns, unsigned n)
{
    pthread_mutex_lock(&spare_lock);
    free(spare_fns);
    spare_fns = fns, spare_n = n;
    pthread_mutex_unlock(&spare_lock);
}

static struct fake_fn *fns_get(unsigned n)
{
    struct fake_fn *f = NULL;
    pthread_mutex_lock(&spare_lock);
    if (spare_fns && spare_n == n) {
        f = spare_fns, spare_fns = NULL;
        memset(f, 0, n * sizeof *f);
    }
    pthread_mutex_unlock(&spare_lock);
    return f ? f : calloc(n, sizeof *f);
}

static void mod_free(struct fake_mod *m)
{
    if (!m)
        return;
    if (m->fns) {
        for (unsigned i = 0; i < m->img->nkernels; i++)
            free(m->fns[i].offsets);
        fns_put(m->fns, m->img->nkernels ? m->img->nkernels : 1);
    }
    if (m->dl)
        dlclose(m->dl);
    free(m);
}

/* Build a module from an image; registers its handles. */
static CUresult mod_create(const struct fake_image *img, void *dl, int is_library,
                           struct fake_mod **out)
{
    if (!image_ok(img))
        return CUDA_ERROR_INVALID_IMAGE;
    struct fake_mod *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->as_module = (struct hdr){MAGIC_MODULE, m};
    m->as_library = (struct hdr){MAGIC_LIBRARY, m};
    m->is_library = is_library;
    m->img = img;
    m->fns = fns_get(img->nkernels ? img->nkernels : 1);
    if (!m->fns) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (unsigned i = 0; i < img->nkernels; i++) {
        struct fake_fn *f = &m->fns[i];
        const struct fake_kernel_def *k = &img->kernels[i];
        f->as_func = (struct hdr){MAGIC_FUNC, f};
        f->as_kernel = (struct hdr){MAGIC_KERNEL, f};
        f->def = k;
        f->mod = m;
        f->offsets = calloc(k->nparams ? k->nparams : 1, sizeof *f->offsets);
        if (!f->offsets) {
            mod_free(m);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        size_t off = 0;
        for (unsigned p = 0; p < k->nparams; p++) {
            size_t al = k->param_aligns && k->param_aligns[p] ? k->param_aligns[p]
                                                              : param_align(k->param_sizes[p]);
            off = (off + al - 1) / al * al;
            f->offsets[p] = off;
            off += k->param_sizes[p];
        }
        f->argbytes = off;
    }
    m->dl = dl;
    LOCK();
    int bad = handle_add(is_library ? &m->as_library : &m->as_module);
    if (is_library)
        bad |= handle_add(&m->as_module);
    for (unsigned i = 0; i < img->nkernels && !bad; i++) {
        bad |= handle_add(&m->fns[i].as_func);
        if (is_library)
            bad |= handle_add(&m->fns[i].as_kernel);
    }
    UNLOCK();
    if (bad)
        return CUDA_ERROR_OUT_OF_MEMORY; /* leaks the partial module: tool OOM only */
    *out = m;
    return CUDA_SUCCESS;
}

static void mod_unregister_locked(struct fake_mod *m)
{
    handle_remove(&m->as_module);
    handle_remove(&m->as_library);
    for (unsigned i = 0; i < m->img->nkernels; i++) {
        handle_remove(&m->fns[i].as_func);
        handle_remove(&m->fns[i].as_kernel);
    }
}

/* cuModuleLoad / cuLibraryLoadFromFile: a registered name, else a shared
 * object exporting fake_image_of_module. */
static CUresult mod_load_named(const char *name, int is_library, struct fake_mod **out)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    const struct fake_image *img = NULL;
    LOCK();
    for (struct named_image *n = g_named; n; n = n->next)
        if (strcmp(n->name, name) == 0)
            img = n->img;
    UNLOCK();
    if (img)
        return mod_create(img, NULL, is_library, out);
    FILE *probe = fopen(name, "rb");
    if (!probe)
        return CUDA_ERROR_FILE_NOT_FOUND;
    fclose(probe);
    void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return CUDA_ERROR_INVALID_IMAGE;
    img = dlsym(dl, "fake_image_of_module");
    CUresult r = img ? mod_create(img, dl, is_library, out) : CUDA_ERROR_INVALID_IMAGE;
    if (r != CUDA_SUCCESS)
        dlclose(dl);
    return r;
}

/* A CUfunction or a CUkernel (cuLaunchKernel accepts either). */
static struct fake_fn *fn_from_handle_locked(const void *h)
{
    struct fake_fn *f = handle_get(h, MAGIC_FUNC);
    return f ? f : handle_get(h, MAGIC_KERNEL);
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */
/* ------------------------------------------------------------------------ */

struct fake_array {
    struct hdr h;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    size_t row_bytes, height, depth;
    unsigned char *data;
};

static size_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

static struct fake_array *array_get(CUarray a)
{
    LOCK();
    struct fake_array *r = handle_get(a, MAGIC_ARRAY);
    UNLOCK();
    return r;
}

/* ------------------------------------------------------------------------ */
/* Copies and memsets: one descriptor each, executed now or recorded          */
/* ------------------------------------------------------------------------ */

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

/* Resolve one side to base address, row pitch and slice height; check that
 * device memory ranges lie inside an allocation and array ranges inside the
 * array, as the real driver does (CUDA_ERROR_INVALID_VALUE otherwise). */
static CUresult xfer_side_resolve(const struct xfer_side *s, size_t w, size_t h, size_t d,
                                  unsigned char **base, size_t *pitch, size_t *height)
{
    size_t p = s->pitch, hh = s->height;
    if (s->type == CU_MEMORYTYPE_ARRAY) {
        struct fake_array *a = array_get(s->arr);
        if (!a)
            return CUDA_ERROR_INVALID_HANDLE;
        if (s->linear) {
            size_t all = a->row_bytes * a->height * a->depth;
            if (s->x > all || w > all - s->x || h != 1 || d != 1)
                return CUDA_ERROR_INVALID_VALUE;
            *base = a->data + s->x;
            *pitch = w;
            *height = 1;
            return CUDA_SUCCESS;
        }
        if (s->x + w > a->row_bytes || s->y + h > a->height || s->z + d > a->depth)
            return CUDA_ERROR_INVALID_VALUE;
        *base = a->data;
        *pitch = a->row_bytes;
        *height = a->height;
        return CUDA_SUCCESS;
    }
    if (p == 0)
        p = w;
    if (hh == 0)
        hh = h;
    if ((h > 1 || d > 1) && p < w)
        return CUDA_ERROR_INVALID_VALUE;
    if (d > 1 && hh < h)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t b;
    switch (s->type) {
    case CU_MEMORYTYPE_HOST:
        b = (uintptr_t)s->host;
        break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        b = (uintptr_t)s->dev;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!b && w && h && d)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->type == CU_MEMORYTYPE_DEVICE && w && h && d) {
        uintptr_t first = b + (s->z * hh + s->y) * p + s->x;
        uintptr_t last = b + ((s->z + d - 1) * hh + s->y + h - 1) * p + s->x + w;
        if (!dev_range_ok(first, last - first))
            return CUDA_ERROR_INVALID_VALUE;
    }
    *base = (unsigned char *)b;
    *pitch = p;
    *height = hh;
    return CUDA_SUCCESS;
}

static CUresult xfer_check(const struct xfer *x)
{
    unsigned char *b;
    size_t p, hh;
    TRY(xfer_side_resolve(&x->src, x->w, x->h, x->d, &b, &p, &hh));
    TRY(xfer_side_resolve(&x->dst, x->w, x->h, x->d, &b, &p, &hh));
    return CUDA_SUCCESS;
}

static CUresult xfer_exec(const struct xfer *x)
{
    unsigned char *sb, *db;
    size_t sp, sh, dp, dh;
    TRY(xfer_side_resolve(&x->src, x->w, x->h, x->d, &sb, &sp, &sh));
    TRY(xfer_side_resolve(&x->dst, x->w, x->h, x->d, &db, &dp, &dh));
    if (x->w == 0)
        return CUDA_SUCCESS; /* a zero-byte copy may name no memory at all */
    for (size_t z = 0; z < x->d; z++)
        for (size_t y = 0; y < x->h; y++) {
            const unsigned char *s =
                sb + ((x->src.z + z) * sh + x->src.y + y) * sp + (x->src.linear ? 0 : x->src.x);
            unsigned char *dd =
                db + ((x->dst.z + z) * dh + x->dst.y + y) * dp + (x->dst.linear ? 0 : x->dst.x);
            memmove(dd, s, x->w);
        }
    return CUDA_SUCCESS;
}

static CUresult setop_check(const struct setop *s)
{
    if (s->p % s->esize)
        return CUDA_ERROR_INVALID_VALUE;
    if (!s->w || !s->h)
        return CUDA_SUCCESS;
    size_t row = s->w * s->esize;
    if (s->h > 1 && s->pitch < row)
        return CUDA_ERROR_INVALID_VALUE;
    size_t span = (s->h - 1) * s->pitch + row;
    return dev_range_ok(s->p, span) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static void setop_exec(const struct setop *s)
{
    if (s->w == 0)
        return; /* a zero-element memset may name no memory at all */
    for (size_t y = 0; y < s->h; y++) {
        unsigned char *row = (unsigned char *)(uintptr_t)s->p + y * s->pitch;
        if (s->esize == 1) {
            memset(row, (int)(s->value & 0xff), s->w);
        } else if (s->esize == 2) {
            uint16_t v = (uint16_t)s->value;
            for (size_t i = 0; i < s->w; i++)
                memcpy(row + 2 * i, &v, 2);
        } else {
            uint32_t v = s->value;
            for (size_t i = 0; i < s->w; i++)
                memcpy(row + 4 * i, &v, 4);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Graph ops, graphs, streams, events                                        */
/* ------------------------------------------------------------------------ */

enum op_kind { OP_KERNEL, OP_COPY, OP_SET };

struct op {
    enum op_kind kind;
    /* kernel */
    struct fake_fn *fn;
    struct fake_launch launch;
    unsigned char *args; /* argbytes, frozen at capture time */
    /* copy / memset */
    struct xfer x;
    struct setop s;
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

static uint64_t g_capture_ids;

static struct op *op_clone(const struct op *o)
{
    struct op *n = malloc(sizeof *n);
    if (!n)
        return NULL;
    *n = *o;
    if (o->kind == OP_KERNEL) {
        n->args = malloc(o->fn->argbytes ? o->fn->argbytes : 1);
        if (!n->args) {
            free(n);
            return NULL;
        }
        memcpy(n->args, o->args, o->fn->argbytes);
    }
    return n;
}

static void op_free(struct op *o)
{
    if (o) {
        free(o->args);
        free(o);
    }
}

static CUresult graph_append_locked(struct fake_graph *g, const struct op *o)
{
    if (g->nops == g->capops) {
        size_t ncap = g->capops ? 2 * g->capops : 16;
        struct op **n = realloc(g->ops, ncap * sizeof *n);
        if (!n)
            return CUDA_ERROR_OUT_OF_MEMORY;
        g->ops = n;
        g->capops = ncap;
    }
    struct op *c = op_clone(o);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->ops[g->nops++] = c;
    return CUDA_SUCCESS;
}

static void graph_free(struct fake_graph *g)
{
    for (size_t i = 0; i < g->nops; i++)
        op_free(g->ops[i]);
    free(g->ops);
    free(g);
}

size_t fake_graph_num_ops(CUgraph hg)
{
    LOCK();
    struct fake_graph *g = handle_get(hg, MAGIC_GRAPH);
    size_t n = g ? g->nops : (size_t)-1;
    UNLOCK();
    return n;
}

static int is_special_stream(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* The context and stream object for a stream argument (NULL stream object
 * for the default streams). Caller holds g_lock. */
static CUresult stream_resolve_locked(CUstream s, struct fake_ctx **ctx, struct fake_stream **st)
{
    if (!g_initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (is_special_stream(s)) {
        *st = NULL;
        *ctx = ctx_current();
    } else {
        *st = handle_get(s, MAGIC_STREAM);
        if (!*st)
            return CUDA_ERROR_INVALID_HANDLE;
        *ctx = (*st)->ctx;
    }
    return ctx_check_locked(*ctx);
}

static CUresult op_run(struct fake_ctx *ctx, const struct op *o, const void *src_args)
{
    switch (o->kind) {
    case OP_KERNEL: {
        const struct fake_kernel_def *k = o->fn->def;
        void *ptrs[k->nparams ? k->nparams : 1];
        for (unsigned i = 0; i < k->nparams; i++)
            ptrs[i] = (unsigned char *)src_args + o->fn->offsets[i];
        struct fake_launch l = o->launch;
        l.ctx = (CUcontext)ctx;
        CUresult r = k->fn(&l, ptrs);
        if (r != CUDA_SUCCESS)
            ctx_fault(ctx, r);
        return CUDA_SUCCESS;
    }
    case OP_COPY:
        return xfer_exec(&o->x);
    case OP_SET:
        setop_exec(&o->s);
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_UNKNOWN;
}

/* Enqueue one operation on a stream: recorded if the stream captures, else
 * run now. A context with a fault pending runs nothing more (the GPU would
 * not), but the enqueue itself still succeeds, as an async call does.
 * For kernels, params points at the caller's argument pointers. */
/* A driver busy inside its own lock: FAKE_LAUNCH_HOLD_MS=MS makes every
 * enqueue of the kernel FAKE_LAUNCH_HOLD_KERNEL (a name; default any) hold
 * the driver lock MS milliseconds (the exit tests: a signal handler that
 * calls exit() interrupts a launch that holds it). */
static void launch_hold(const struct op *o)
{
    static long ms = -1;
    static const char *only;
    if (ms < 0) {
        const char *v = getenv("FAKE_LAUNCH_HOLD_MS");
        only = getenv("FAKE_LAUNCH_HOLD_KERNEL");
        ms = v ? strtol(v, NULL, 10) : 0;
    }
    if (ms <= 0 || o->kind != OP_KERNEL ||
        (only && (!o->fn || !o->fn->def || strcmp(o->fn->def->name, only) != 0)))
        return;
    struct timespec t = {(time_t)(ms / 1000), (ms % 1000) * 1000000L};
    nanosleep(&t, NULL); /* a signal may cut it short, as it may a real call */
}

static CUresult stream_submit(CUstream s, struct op *o, void **params)
{
    struct fake_ctx *ctx;
    struct fake_stream *st;
    LOCK();
    launch_hold(o);
    CUresult r = stream_resolve_locked(s, &ctx, &st);
    if (r != CUDA_SUCCESS) {
        UNLOCK();
        return r;
    }
    if (st && st->cap) {
        if (st->cap->invalidated) {
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else if (o->kind == OP_KERNEL) {
            /* freeze the argument bytes now: that is what a graph does */
            unsigned char stackbuf[256];
            size_t n = o->fn->argbytes;
            unsigned char *buf = n <= sizeof stackbuf ? stackbuf : malloc(n);
            if (!buf) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                memset(buf, 0, n);
                for (unsigned i = 0; i < o->fn->def->nparams; i++)
                    memcpy(buf + o->fn->offsets[i], params[i], o->fn->def->param_sizes[i]);
                o->args = buf;
                r = graph_append_locked(st->cap->graph, o);
                o->args = NULL;
                if (buf != stackbuf)
                    free(buf);
            }
        } else {
            r = graph_append_locked(st->cap->graph, o);
        }
        UNLOCK();
        return r;
    }
    int dead = ctx->pending != CUDA_SUCCESS && err_is_sticky(ctx->pending);
    UNLOCK();
    if (dead)
        return CUDA_SUCCESS;
    if (o->kind == OP_KERNEL) {
        const struct fake_kernel_def *k = o->fn->def;
        struct fake_launch l = o->launch;
        l.ctx = (CUcontext)ctx;
        CUresult kr = k->fn(&l, params);
        if (kr != CUDA_SUCCESS)
            ctx_fault(ctx, kr);
        return CUDA_SUCCESS;
    }
    return op_run(ctx, o, NULL);
}

/* ------------------------------------------------------------------------ */
/* Init, device, context                                                     */
/* ------------------------------------------------------------------------ */

#define FAKE_DRIVER_VERSION 13000
#define FAKE_DEVICE_NAME "NVIDIA Fake H200 (fakecuda)"

CUresult cuInit(unsigned int Flags)
{
    ENTER(cuInit);
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    __atomic_store_n(&g_initialized, 1, __ATOMIC_RELEASE);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    ENTER(cuDriverGetVersion);
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = FAKE_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

/* Lock-free, as a real driver's check is: cuCtxGetCurrent must answer while
 * another call holds the lock (an exit path asks it from a signal handler
 * that interrupted a launch). */
static CUresult need_init(void)
{
    return __atomic_load_n(&g_initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS
                                                             : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult dev_check(CUdevice dev)
{
    TRY(need_init());
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    ENTER(cuDeviceGet);
    TRY(need_init());
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    ENTER(cuDeviceGetCount);
    TRY(need_init());
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    ENTER(cuDeviceGetName);
    TRY(dev_check(dev));
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", FAKE_DEVICE_NAME);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    ENTER(cuDeviceGetAttribute);
    TRY(dev_check(dev));
    if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    int v = 0;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
        v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        v = 64;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        v = 2147483647;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
        v = 65535;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        v = 65535;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        v = 49152;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        v = 232448;
        break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
        v = 65536;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        v = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
        v = 2147483647;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
        v = 65536;
        break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        v = 1980000;
        break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
        v = 512;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        v = 132;
        break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
        v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        v = 0x19;
        break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        v = 3;
        break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        v = 2619000;
        break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        v = 6144;
        break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        v = 52428800;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        v = 2048;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        v = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        v = 32;
        break;
    default:
        v = 0;
        break;
    }
    *pi = v;
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    ENTER(cuDeviceTotalMem_v2);
    TRY(dev_check(dev));
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    *bytes = g_total_mem;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    ENTER(cuDeviceGetUuid_v2);
    TRY(dev_check(dev));
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    static const char id[16] = "fakecuda-uuid-00";
    memcpy(uuid->bytes, id, sizeof uuid->bytes);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxRetain);
    TRY(dev_check(dev));
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    if (g_primary.refcount++ == 0) {
        g_primary.alive = 1;
        handle_add(&g_primary.h);
    }
    UNLOCK();
    *pctx = (CUcontext)&g_primary;
    return CUDA_SUCCESS;
}

/* Tear a context down: its memory goes, its faults are forgotten. */
static void ctx_teardown_locked(struct fake_ctx *ctx)
{
    ctx_free_allocs_locked(ctx);
    ctx->pending = CUDA_SUCCESS;
    ctx->sticky = CUDA_SUCCESS;
}

static CUresult primary_release_impl(CUdevice dev)
{
    TRY(dev_check(dev));
    LOCK();
    if (g_primary.refcount == 0) {
        UNLOCK();
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (--g_primary.refcount == 0) {
        ctx_teardown_locked(&g_primary);
        g_primary.alive = 0;
        handle_remove(&g_primary.h);
    }
    UNLOCK();
    return CUDA_SUCCESS;
}

/* The v1 and v2 entry points are the same function under two ABI names; the
 * interposer wraps each, so the fake exports both. */
CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxRelease);
    return primary_release_impl(dev);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxRelease_v2);
    return primary_release_impl(dev);
}

static CUresult primary_reset_impl(CUdevice dev)
{
    TRY(dev_check(dev));
    LOCK();
    ctx_teardown_locked(&g_primary);
    UNLOCK();
    return CUDA_SUCCESS;
}

/* The v1 and v2 entry points are the same function under two ABI names; the
 * interposer wraps each, so the fake exports both. */
CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxReset);
    return primary_reset_impl(dev);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxReset_v2);
    return primary_reset_impl(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    ENTER(cuDevicePrimaryCtxGetState);
    TRY(dev_check(dev));
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    *flags = 0;
    *active = g_primary.refcount > 0;
    UNLOCK();
    return CUDA_SUCCESS;
}

/* The pool handle is never dereferenced: allocations ignore pools. */
static int g_default_pool;

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    ENTER(cuDeviceGetDefaultMemPool);
    TRY(dev_check(dev));
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    *pool_out = (CUmemoryPool)&g_default_pool;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                        CUdevice dev)
{
    ENTER(cuCtxCreate_v4);
    TRY(dev_check(dev));
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (tls_depth >= CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->h = (struct hdr){MAGIC_CTX, c};
    c->alive = 1;
    LOCK();
    int bad = handle_add(&c->h);
    UNLOCK();
    if (bad) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    tls_ctx[tls_depth++] = c;
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

static CUresult ctx_destroy_impl(CUcontext ctx)
{
    TRY(need_init());
    LOCK();
    struct fake_ctx *c = handle_get(ctx, MAGIC_CTX);
    if (!c || c->primary) {
        UNLOCK();
        return c ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_VALUE;
    }
    ctx_teardown_locked(c);
    c->alive = 0;
    handle_remove(&c->h);
    UNLOCK();
    /* Kept allocated (not freed): other threads may still have it current,
     * and must get CUDA_ERROR_INVALID_CONTEXT rather than a use-after-free. */
    for (int i = tls_depth - 1; i >= 0; i--)
        if (tls_ctx[i] == c) {
            memmove(&tls_ctx[i], &tls_ctx[i + 1], (size_t)(tls_depth - i - 1) * sizeof tls_ctx[0]);
            tls_depth--;
        }
    return CUDA_SUCCESS;
}

/* The v1 and v2 entry points are the same function under two ABI names; the
 * interposer wraps each, so the fake exports both. */
CUresult cuCtxDestroy(CUcontext ctx)
{
    ENTER(cuCtxDestroy);
    return ctx_destroy_impl(ctx);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    ENTER(cuCtxDestroy_v2);
    return ctx_destroy_impl(ctx);
}

static CUresult ctx_arg(CUcontext ctx, struct fake_ctx **out)
{
    LOCK();
    struct fake_ctx *c = handle_get(ctx, MAGIC_CTX);
    UNLOCK();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER(cuCtxSetCurrent);
    TRY(need_init());
    struct fake_ctx *c = NULL;
    if (ctx)
        TRY(ctx_arg(ctx, &c));
    if (!c) {
        if (tls_depth > 0)
            tls_depth--;
    } else if (tls_depth == 0) {
        tls_ctx[tls_depth++] = c;
    } else {
        tls_ctx[tls_depth - 1] = c;
    }
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    ENTER(cuCtxGetCurrent);
    TRY(need_init());
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)ctx_current();
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    ENTER(cuCtxPushCurrent_v2);
    TRY(need_init());
    struct fake_ctx *c;
    TRY(ctx_arg(ctx, &c));
    if (tls_depth >= CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    tls_ctx[tls_depth++] = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    ENTER(cuCtxPopCurrent_v2);
    TRY(need_init());
    if (tls_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct fake_ctx *c = tls_ctx[--tls_depth];
    if (pctx)
        *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    ENTER(cuCtxGetDevice);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    ENTER(cuCtxGetDevice_v2);
    struct fake_ctx *c;
    if (ctx) {
        TRY(need_init());
        TRY(ctx_arg(ctx, &c));
    } else {
        TRY(ctx_enter(&c));
    }
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
}

/* Synchronising with a context that has a stream capturing is a prohibited
 * "unsafe" call: it fails and invalidates the captures (CUDA's rule for
 * global/thread-local captures). Caller holds g_lock. */
static int ctx_invalidate_captures_locked(struct fake_ctx *ctx);

static CUresult ctx_synchronize(struct fake_ctx *c)
{
    LOCK();
    CUresult r = ctx_check_locked(c);
    if (r == CUDA_SUCCESS && c->ncapturing > 0 && ctx_invalidate_captures_locked(c))
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r == CUDA_SUCCESS)
        r = ctx_sync_locked(c);
    UNLOCK();
    return r;
}

CUresult cuCtxSynchronize(void)
{
    ENTER(cuCtxSynchronize);
    struct fake_ctx *c;
    TRY(need_init());
    c = ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx_synchronize(c);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    ENTER(cuCtxSynchronize_v2);
    TRY(need_init());
    struct fake_ctx *c = ctx_current();
    if (ctx)
        TRY(ctx_arg(ctx, &c));
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx_synchronize(c);
}

/* ------------------------------------------------------------------------ */
/* Error names and strings (texts as the real driver gives them)             */
/* ------------------------------------------------------------------------ */

static const struct {
    CUresult code;
    const char *name, *text;
} g_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT",
     "the launch timed out and was terminated"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_ASSERT, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_INVALID_ADDRESS_SPACE, "CUDA_ERROR_INVALID_ADDRESS_SPACE",
     "operation not supported on global/shared address space"},
    {CUDA_ERROR_INVALID_PC, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_MERGE, "CUDA_ERROR_STREAM_CAPTURE_MERGE",
     "operation would result in a merge of separate capture sequences"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not ended in the same stream as it began"},
    {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
     "capturing stream has unjoined work"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
     "operation not permitted on an event last recorded in a capturing stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    ENTER(cuGetErrorName);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == error) {
            *pStr = g_errors[i].name;
            return CUDA_SUCCESS;
        }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    ENTER(cuGetErrorString);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == error) {
            *pStr = g_errors[i].text;
            return CUDA_SUCCESS;
        }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

static CUresult alloc_dev(struct fake_ctx *c, CUdeviceptr *dptr, size_t n, enum alloc_kind k)
{
    uintptr_t p;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    TRY(mem_alloc(c, &p, n, k));
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

static CUresult alloc_host(struct fake_ctx *c, void **pp, size_t n)
{
    uintptr_t p;
    if (!pp)
        return CUDA_ERROR_INVALID_VALUE;
    TRY(mem_alloc(c, &p, n, AK_HOST));
    *pp = (void *)p;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    ENTER(cuMemAlloc_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    return alloc_dev(c, dptr, bytesize, AK_DEVICE);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    ENTER(cuMemAllocPitch_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pPitch || !WidthInBytes || !Height ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = (WidthInBytes + 511) & ~(size_t)511;
    if (Height > SIZE_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    TRY(alloc_dev(c, dptr, pitch * Height, AK_DEVICE));
    *pPitch = pitch;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    ENTER(cuMemAllocManaged);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_dev(c, dptr, bytesize, AK_MANAGED);
}

/* Stream-ordered allocation: the stream's work runs at once, so the
 * allocation is usable at once; a capturing stream is not modelled for it. */
static CUresult mem_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    UNLOCK();
    TRY(r);
    return alloc_dev(c, dptr, bytesize, AK_DEVICE);
}

static CUresult cuMemAllocAsync_impl(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return mem_alloc_async(dptr, bytesize, hStream);
}

static CUresult cuMemAllocFromPoolAsync_impl(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream hStream)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return mem_alloc_async(dptr, bytesize, hStream);
}

#define KINDS_DEVICE ((1u << AK_DEVICE) | (1u << AK_MANAGED))

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    ENTER(cuMemFree_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!dptr)
        return CUDA_SUCCESS;
    return mem_free(dptr, KINDS_DEVICE);
}

static CUresult mem_free_async(CUdeviceptr dptr, CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    UNLOCK();
    TRY(r);
    return mem_free(dptr, KINDS_DEVICE);
}

static CUresult cuMemFreeAsync_impl(CUdeviceptr dptr, CUstream hStream)
{
    return mem_free_async(dptr, hStream);
}

/* ------------------------------------------------------------------------ */
/* Virtual memory management (cuMemCreate, cuMemMap, ...)                    */
/* ------------------------------------------------------------------------ */

/* A physical allocation is a memfd of its size; a reservation is
 * inaccessible address space; cuMemMap maps the memfd over part of a
 * reservation, so what the program writes through the mapped address lands
 * in the handle's memory and is seen through every other mapping of it, as
 * on the device. Each mapping is also an AK_VMM allocation record, so copies
 * and kernels accept its addresses. */
#define VMM_GRANULARITY ((size_t)2 << 20)

struct fake_vmm {
    struct hdr h;
    int fd;
    size_t size;
    int maps;     /* live mappings */
    int released; /* cuMemRelease'd: gone with its last mapping */
};

struct vmm_range {
    uintptr_t base;
    size_t size;
    struct fake_vmm *v; /* mappings only */
};
static struct vmm_range *g_reserved, *g_mapped;
static size_t g_nreserved, g_nmapped;

static int range_push(struct vmm_range **arr, size_t *n, struct vmm_range r)
{
    struct vmm_range *na = realloc(*arr, (*n + 1) * sizeof *na);
    if (!na)
        return -1;
    *arr = na;
    na[(*n)++] = r;
    return 0;
}

static void vmm_destroy_locked(struct fake_vmm *v)
{
    handle_remove(&v->h);
    g_used_mem -= v->size;
    close(v->fd);
    free(v);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    ENTER(cuMemGetAllocationGranularity);
    TRY(need_init());
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = VMM_GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    ENTER(cuMemCreate);
    TRY(need_init());
    if (!handle || !prop || flags || !size || size % VMM_GRANULARITY ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev_check(prop->location.id) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    struct fake_vmm *v = calloc(1, sizeof *v);
    if (!v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    v->h = (struct hdr){MAGIC_VMM, v};
    v->size = size;
    v->fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
    if (v->fd < 0 || ftruncate(v->fd, (off_t)size) != 0) {
        if (v->fd >= 0)
            close(v->fd);
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    LOCK();
    if (size > g_total_mem - g_used_mem || handle_add(&v->h) != 0) {
        UNLOCK();
        close(v->fd);
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_used_mem += size;
    UNLOCK();
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)&v->h;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    ENTER(cuMemRelease);
    TRY(need_init());
    LOCK();
    struct fake_vmm *v = handle_get((void *)(uintptr_t)handle, MAGIC_VMM);
    if (!v || v->released) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    v->released = 1;
    if (!v->maps)
        vmm_destroy_locked(v);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    ENTER(cuMemAddressReserve);
    TRY(need_init());
    if (!ptr || !size || size % VMM_GRANULARITY || (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment > VMM_GRANULARITY ? alignment : VMM_GRANULARITY;
    /* `addr` is a hint: the fake takes whatever the kernel gives */
    char *raw =
        mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1);
    if (base > (uintptr_t)raw)
        munmap(raw, base - (uintptr_t)raw);
    if ((uintptr_t)raw + size + align > base + size)
        munmap((void *)(base + size), (uintptr_t)raw + size + align - (base + size));
    LOCK();
    int bad = range_push(&g_reserved, &g_nreserved, (struct vmm_range){base, size, NULL});
    UNLOCK();
    if (bad) {
        munmap((void *)base, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = base;
    return CUDA_SUCCESS;
}

static int overlaps(const struct vmm_range *r, uintptr_t p, size_t n)
{
    return p < r->base + r->size && r->base < p + n;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    ENTER(cuMemAddressFree);
    TRY(need_init());
    LOCK();
    for (size_t i = 0; i < g_nreserved; i++) {
        if (g_reserved[i].base != ptr || g_reserved[i].size != size)
            continue;
        for (size_t m = 0; m < g_nmapped; m++)
            if (overlaps(&g_mapped[m], ptr, size)) { /* still mapped: unmap first */
                UNLOCK();
                return CUDA_ERROR_INVALID_VALUE;
            }
        g_reserved[i] = g_reserved[--g_nreserved];
        UNLOCK();
        munmap((void *)(uintptr_t)ptr, size);
        return CUDA_SUCCESS;
    }
    UNLOCK();
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    ENTER(cuMemMap);
    TRY(need_init());
    if (!ptr || !size || flags || ptr % VMM_GRANULARITY || size % VMM_GRANULARITY ||
        offset % VMM_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_vmm *v = handle_get((void *)(uintptr_t)handle, MAGIC_VMM);
    int inside = 0;
    for (size_t i = 0; i < g_nreserved; i++)
        inside |=
            ptr >= g_reserved[i].base && ptr + size <= g_reserved[i].base + g_reserved[i].size;
    for (size_t m = 0; m < g_nmapped; m++)
        if (overlaps(&g_mapped[m], ptr, size))
            inside = 0; /* mapped already */
    if (!v || v->released || offset > v->size || size > v->size - offset || !inside) {
        UNLOCK();
        return v && !v->released ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    }
    if (mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, v->fd,
             (off_t)offset) == MAP_FAILED) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (range_push(&g_mapped, &g_nmapped, (struct vmm_range){ptr, size, v}) != 0 ||
        alloc_add_locked(ptr, size, 0, AK_VMM, NULL) != 0) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    v->maps++;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    ENTER(cuMemUnmap);
    TRY(need_init());
    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    int found = 0;
    LOCK();
    for (size_t m = 0; m < g_nmapped;) {
        struct vmm_range r = g_mapped[m];
        if (r.base < ptr || r.base + r.size > ptr + size) {
            m++;
            continue;
        }
        found = 1;
        /* back to reserved, inaccessible address space */
        mmap((void *)r.base, r.size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        size_t i;
        if (atl_addrmap_get(&g_byb, r.base, &i))
            alloc_remove_locked(&g_allocs[i]);
        g_mapped[m] = g_mapped[--g_nmapped];
        if (--r.v->maps == 0 && r.v->released)
            vmm_destroy_locked(r.v);
    }
    UNLOCK();
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Every mapping is readable and writable from the start; this only checks
 * its arguments. */
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    ENTER(cuMemSetAccess);
    TRY(need_init());
    if (!ptr || !size || !desc || !count)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    ENTER(cuMemGetInfo_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    *total = g_total_mem;
    *free_bytes = g_total_mem > g_used_mem ? g_total_mem - g_used_mem : 0;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    ENTER(cuMemGetAddressRange_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    LOCK();
    struct alloc *a = alloc_find_locked(dptr);
    int ok = a && (a->kind == AK_DEVICE || a->kind == AK_MANAGED);
    if (ok) {
        if (pbase)
            *pbase = a->base;
        if (psize)
            *psize = a->size;
    }
    UNLOCK();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    ENTER(cuMemAllocHost_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    return alloc_host(c, pp, bytesize);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    ENTER(cuMemHostAlloc);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_host(c, pp, bytesize);
}

CUresult cuMemFreeHost(void *p)
{
    ENTER(cuMemFreeHost);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    return mem_free((uintptr_t)p, 1u << AK_HOST);
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    ENTER(cuMemHostRegister_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!p || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t b = (uintptr_t)p;
    LOCK();
    for (size_t i = 0; i < g_nallocs; i++) {
        struct alloc *a = &g_allocs[i];
        if (b < a->base + a->size && a->base < b + bytesize) {
            CUresult r = a->kind == AK_REGISTERED ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                                                  : CUDA_ERROR_INVALID_VALUE;
            UNLOCK();
            return r;
        }
    }
    int bad = alloc_add_locked(b, bytesize, 0, AK_REGISTERED, c);
    UNLOCK();
    return bad ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
    ENTER(cuMemHostUnregister);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return mem_free((uintptr_t)p, 1u << AK_REGISTERED) == CUDA_SUCCESS
               ? CUDA_SUCCESS
               : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    ENTER(cuMemHostGetDevicePointer_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pdptr || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct alloc *a = alloc_find_locked((uintptr_t)p);
    int ok = a && (a->kind == AK_HOST || a->kind == AK_REGISTERED);
    UNLOCK();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* One attribute of a known allocation a (NULL: pageable host memory). */
static CUresult ptr_attr_locked(const struct alloc *a, CUdeviceptr ptr, CUpointer_attribute attr,
                                void *data)
{
    unsigned mt = 0;
    if (a)
        mt = a->kind == AK_DEVICE || a->kind == AK_MANAGED || a->kind == AK_VMM
                 ? CU_MEMORYTYPE_DEVICE
                 : CU_MEMORYTYPE_HOST;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = a ? (CUcontext)a->ctx : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = mt;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = a ? ptr : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(void **)data =
            a && a->kind != AK_DEVICE && a->kind != AK_VMM ? (void *)(uintptr_t)ptr : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned *)data = a && a->kind == AK_MANAGED;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = a ? 0 : -2;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = a ? (unsigned long long)a->base : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = a ? a->base : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = a ? a->size : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned *)data = a != NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(unsigned *)data = 1;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    ENTER(cuPointerGetAttribute);
    TRY(need_init());
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct alloc *a = alloc_find_locked(ptr);
    /* the real driver knows nothing of pageable host memory */
    CUresult r = a ? ptr_attr_locked(a, ptr, attribute, data) : CUDA_ERROR_INVALID_VALUE;
    UNLOCK();
    return r;
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                void **data, CUdeviceptr ptr)
{
    ENTER(cuPointerGetAttributes);
    TRY(need_init());
    if (!attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct alloc *a = alloc_find_locked(ptr);
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < numAttributes && r == CUDA_SUCCESS; i++)
        r = ptr_attr_locked(a, ptr, attributes[i], data[i]);
    UNLOCK();
    return r;
}

/* Arrays: host-backed, rows packed (pitch = width * element size). */
static CUresult array_create(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pHandle || !d)
        return CUDA_ERROR_INVALID_VALUE;
    size_t fb = format_bytes(d->Format);
    if (!fb || !d->Width || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_array *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->h = (struct hdr){MAGIC_ARRAY, a};
    a->desc = *d;
    a->row_bytes = d->Width * fb * d->NumChannels;
    a->height = d->Height ? d->Height : 1;
    a->depth = d->Depth ? d->Depth : 1;
    a->data = calloc(a->row_bytes * a->height * a->depth, 1);
    LOCK();
    int bad = !a->data || handle_add(&a->h);
    UNLOCK();
    if (bad) {
        free(a->data);
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pHandle = (CUarray)a;
    return CUDA_SUCCESS;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    ENTER(cuArrayCreate_v2);
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = pAllocateArray->Width,
                                 .Height = pAllocateArray->Height,
                                 .Depth = 0,
                                 .Format = pAllocateArray->Format,
                                 .NumChannels = pAllocateArray->NumChannels};
    return array_create(pHandle, &d);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    ENTER(cuArray3DCreate_v2);
    return array_create(pHandle, pAllocateArray);
}

CUresult cuArrayDestroy(CUarray hArray)
{
    ENTER(cuArrayDestroy);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    LOCK();
    struct fake_array *a = handle_get(hArray, MAGIC_ARRAY);
    if (a)
        handle_remove(&a->h);
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_HANDLE;
    free(a->data);
    free(a);
    return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    ENTER(cuArrayGetDescriptor_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    struct fake_array *a = array_get(hArray);
    if (!a)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    pArrayDescriptor->Width = a->desc.Width;
    pArrayDescriptor->Height = a->desc.Height;
    pArrayDescriptor->Format = a->desc.Format;
    pArrayDescriptor->NumChannels = a->desc.NumChannels;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Copies and memsets                                                        */
/* ------------------------------------------------------------------------ */

static struct xfer_side side_host(const void *p)
{
    return (struct xfer_side){.type = CU_MEMORYTYPE_HOST, .host = p};
}

static struct xfer_side side_dev(CUdeviceptr p)
{
    return (struct xfer_side){.type = CU_MEMORYTYPE_DEVICE, .dev = p};
}

static struct xfer_side side_uni(CUdeviceptr p)
{
    return (struct xfer_side){.type = CU_MEMORYTYPE_UNIFIED, .dev = p};
}

static struct xfer_side side_arr(CUarray a, size_t off)
{
    return (struct xfer_side){.type = CU_MEMORYTYPE_ARRAY, .arr = a, .x = off, .linear = 1};
}

static struct xfer xfer_1d(struct xfer_side src, struct xfer_side dst, size_t n)
{
    return (struct xfer){.src = src, .dst = dst, .w = n, .h = 1, .d = 1};
}

static struct xfer xfer_2d(const CUDA_MEMCPY2D *p)
{
    struct xfer x = {.w = p->WidthInBytes, .h = p->Height, .d = 1};
    x.src =
        (struct xfer_side){p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes,
                           p->srcY,          0,          p->srcPitch,  0,           0};
    x.dst =
        (struct xfer_side){p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
                           p->dstY,          0,          p->dstPitch,  0,           0};
    return x;
}

#define XFER_3D(x, p)                                                                              \
    do {                                                                                           \
        (x).w = (p)->WidthInBytes;                                                                 \
        (x).h = (p)->Height;                                                                       \
        (x).d = (p)->Depth;                                                                        \
        (x).src = (struct xfer_side){                                                              \
            (p)->srcMemoryType, (p)->srcHost, (p)->srcDevice, (p)->srcArray,  (p)->srcXInBytes,    \
            (p)->srcY,          (p)->srcZ,    (p)->srcPitch,  (p)->srcHeight, 0};                  \
        (x).dst = (struct xfer_side){                                                              \
            (p)->dstMemoryType, (p)->dstHost, (p)->dstDevice, (p)->dstArray,  (p)->dstXInBytes,    \
            (p)->dstY,          (p)->dstZ,    (p)->dstPitch,  (p)->dstHeight, 0};                  \
    } while (0)

/* A synchronous copy waits for all earlier work, so a pending kernel fault
 * is reported by it (and nothing is copied). */
static CUresult copy_sync(const struct xfer *x)
{
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    TRY(xfer_check(x));
    TRY(ctx_sync(c));
    return xfer_exec(x);
}

static CUresult stream_usable(CUstream s)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(s, &c, &st);
    UNLOCK();
    return r;
}

static CUresult copy_async(const struct xfer *x, CUstream s)
{
    TRY(stream_usable(s));
    TRY(xfer_check(x));
    struct op o = {.kind = OP_COPY, .x = *x};
    return stream_submit(s, &o, NULL);
}

static CUresult set_async(CUdeviceptr p, size_t pitch, unsigned value, unsigned esize, size_t w,
                          size_t h, CUstream s)
{
    TRY(stream_usable(s));
    struct op o = {
        .kind = OP_SET,
        .s = {.p = p, .pitch = h > 1 ? pitch : 0, .value = value, .esize = esize, .w = w, .h = h}};
    TRY(setop_check(&o.s));
    return stream_submit(s, &o, NULL);
}

static CUresult peer_check(CUcontext a, CUcontext b)
{
    struct fake_ctx *x;
    TRY(ctx_arg(a, &x));
    return ctx_arg(b, &x);
}

static CUresult batch_copy(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                           CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                           size_t *failIdx, CUstream s)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    TRY(stream_usable(s));
    if (!count || !dsts || !srcs || !sizes || (numAttrs && (!attrs || !attrsIdxs)))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        struct xfer x = xfer_1d(side_uni(srcs[i]), side_uni(dsts[i]), sizes[i]);
        CUresult r = copy_async(&x, s);
        if (r != CUDA_SUCCESS) {
            if (failIdx)
                *failIdx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult operand_side(const CUmemcpy3DOperand *o, size_t *esize, struct xfer_side *out)
{
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
        struct fake_array *a = array_get(o->op.array.array);
        if (!a)
            return CUDA_ERROR_INVALID_HANDLE;
        *esize = format_bytes(a->desc.Format) * a->desc.NumChannels;
        *out = (struct xfer_side){.type = CU_MEMORYTYPE_ARRAY,
                                  .arr = o->op.array.array,
                                  .x = o->op.array.offset.x, /* scaled by caller */
                                  .y = o->op.array.offset.y,
                                  .z = o->op.array.offset.z};
        return CUDA_SUCCESS;
    }
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
        return CUDA_ERROR_INVALID_VALUE;
    *out = (struct xfer_side){.type = CU_MEMORYTYPE_UNIFIED,
                              .dev = o->op.ptr.ptr,
                              .pitch = o->op.ptr.rowLength, /* elements, scaled by caller */
                              .height = o->op.ptr.layerHeight};
    return CUDA_SUCCESS;
}

/* Extents are in elements of the array when one side is an array, else in
 * bytes; rowLength/layerHeight 0 mean "packed". */
static CUresult batch3d_copy(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                             unsigned long long flags, CUstream s)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    TRY(stream_usable(s));
    if (!numOps || !opList || flags)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numOps; i++) {
        const CUDA_MEMCPY3D_BATCH_OP *op = &opList[i];
        size_t es = 1, es2 = 1;
        struct xfer x = {0};
        CUresult r = operand_side(&op->src, &es, &x.src);
        if (r == CUDA_SUCCESS)
            r = operand_side(&op->dst, &es2, &x.dst);
        if (r == CUDA_SUCCESS) {
            size_t e = es > 1 ? es : es2;
            struct xfer_side *sides[2] = {&x.src, &x.dst};
            for (int k = 0; k < 2; k++) {
                struct xfer_side *sd = sides[k];
                if (sd->type == CU_MEMORYTYPE_ARRAY) {
                    sd->x *= e;
                } else {
                    sd->pitch = (sd->pitch ? sd->pitch : op->extent.width) * e;
                    sd->height = sd->height ? sd->height : op->extent.height;
                }
            }
            x.w = op->extent.width * e;
            x.h = op->extent.height;
            x.d = op->extent.depth;
            if (!x.w || !x.h || !x.d)
                r = CUDA_ERROR_INVALID_VALUE;
            else
                r = copy_async(&x, s);
        }
        if (r != CUDA_SUCCESS) {
            if (failIdx)
                *failIdx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult cuMemcpy_impl(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    struct xfer x = xfer_1d(side_uni(src), side_uni(dst), ByteCount);
    return copy_sync(&x);
}

static CUresult cuMemcpyAsync_impl(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                   CUstream hStream)
{
    struct xfer x = xfer_1d(side_uni(src), side_uni(dst), ByteCount);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpyPeer_impl(CUdeviceptr dstDevice, CUcontext dstContext,
                                  CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
    TRY(need_init());
    TRY(peer_check(dstContext, srcContext));
    struct xfer x = xfer_1d(side_dev(srcDevice), side_dev(dstDevice), ByteCount);
    return copy_sync(&x);
}

static CUresult cuMemcpyPeerAsync_impl(CUdeviceptr dstDevice, CUcontext dstContext,
                                       CUdeviceptr srcDevice, CUcontext srcContext,
                                       size_t ByteCount, CUstream hStream)
{
    TRY(need_init());
    TRY(peer_check(dstContext, srcContext));
    struct xfer x = xfer_1d(side_dev(srcDevice), side_dev(dstDevice), ByteCount);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpyHtoD_v2_impl(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    struct xfer x = xfer_1d(side_host(srcHost), side_dev(dstDevice), ByteCount);
    return copy_sync(&x);
}

/* A GPU that takes its time: FAKE_SYNC_SLEEP_MS=MS makes the FAKE_SYNC_SLEEP_AT-th call
 * (default the first) of cuStreamSynchronize or cuMemcpyDtoH_v2, counted together, wait MS
 * milliseconds before it returns, as a rank waiting on a collective does (the hang report's
 * tests). Outside the driver lock. */
static void sync_sleep(void)
{
    static _Atomic unsigned long calls;
    const char *ms = getenv("FAKE_SYNC_SLEEP_MS"), *at = getenv("FAKE_SYNC_SLEEP_AT");
    unsigned long n = atomic_fetch_add(&calls, 1) + 1;
    if (!ms || n != (at ? strtoul(at, NULL, 10) : 1))
        return;
    unsigned long v = strtoul(ms, NULL, 10);
    struct timespec t = {(time_t)(v / 1000), (long)(v % 1000) * 1000000};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

static CUresult cuMemcpyDtoH_v2_impl(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_host(dstHost), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER(cuMemcpyDtoH_v2);
    sync_sleep();
    return cuMemcpyDtoH_v2_impl(dstHost, srcDevice, ByteCount);
}

static CUresult cuMemcpyDtoD_v2_impl(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_dev(dstDevice), ByteCount);
    return copy_sync(&x);
}

static CUresult cuMemcpyHtoDAsync_v2_impl(CUdeviceptr dstDevice, const void *srcHost,
                                          size_t ByteCount, CUstream hStream)
{
    struct xfer x = xfer_1d(side_host(srcHost), side_dev(dstDevice), ByteCount);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpyDtoHAsync_v2_impl(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                          CUstream hStream)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_host(dstHost), ByteCount);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpyDtoDAsync_v2_impl(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                          size_t ByteCount, CUstream hStream)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_dev(dstDevice), ByteCount);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpyDtoA_v2_impl(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                                     size_t ByteCount)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_arr(dstArray, dstOffset), ByteCount);
    return copy_sync(&x);
}

static CUresult cuMemcpyAtoD_v2_impl(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                                     size_t ByteCount)
{
    struct xfer x = xfer_1d(side_arr(srcArray, srcOffset), side_dev(dstDevice), ByteCount);
    return copy_sync(&x);
}

static CUresult cuMemcpyHtoA_v2_impl(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                     size_t ByteCount)
{
    struct xfer x = xfer_1d(side_host(srcHost), side_arr(dstArray, dstOffset), ByteCount);
    return copy_sync(&x);
}

static CUresult cuMemcpyAtoH_v2_impl(void *dstHost, CUarray srcArray, size_t srcOffset,
                                     size_t ByteCount)
{
    struct xfer x = xfer_1d(side_arr(srcArray, srcOffset), side_host(dstHost), ByteCount);
    return copy_sync(&x);
}

static CUresult cuMemcpyAtoA_v2_impl(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                                     size_t srcOffset, size_t ByteCount)
{
    struct xfer x =
        xfer_1d(side_arr(srcArray, srcOffset), side_arr(dstArray, dstOffset), ByteCount);
    return copy_sync(&x);
}

static CUresult cuMemcpyHtoAAsync_v2_impl(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                          size_t ByteCount, CUstream hStream)
{
    struct xfer x = xfer_1d(side_host(srcHost), side_arr(dstArray, dstOffset), ByteCount);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpyAtoHAsync_v2_impl(void *dstHost, CUarray srcArray, size_t srcOffset,
                                          size_t ByteCount, CUstream hStream)
{
    struct xfer x = xfer_1d(side_arr(srcArray, srcOffset), side_host(dstHost), ByteCount);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpy2D_v2_impl(const CUDA_MEMCPY2D *pCopy)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x = xfer_2d(pCopy);
    return copy_sync(&x);
}

static CUresult cuMemcpy2DUnaligned_v2_impl(const CUDA_MEMCPY2D *pCopy)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x = xfer_2d(pCopy);
    return copy_sync(&x);
}

static CUresult cuMemcpy2DAsync_v2_impl(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x = xfer_2d(pCopy);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpy3D_v2_impl(const CUDA_MEMCPY3D *pCopy)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x;
    XFER_3D(x, pCopy);
    return copy_sync(&x);
}

static CUresult cuMemcpy3DAsync_v2_impl(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x;
    XFER_3D(x, pCopy);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpy3DPeer_impl(const CUDA_MEMCPY3D_PEER *pCopy)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    TRY(need_init());
    TRY(peer_check(pCopy->dstContext, pCopy->srcContext));
    struct xfer x;
    XFER_3D(x, pCopy);
    return copy_sync(&x);
}

static CUresult cuMemcpy3DPeerAsync_impl(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    TRY(need_init());
    TRY(peer_check(pCopy->dstContext, pCopy->srcContext));
    struct xfer x;
    XFER_3D(x, pCopy);
    return copy_async(&x, hStream);
}

static CUresult cuMemcpyBatchAsync_impl(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                        size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                        size_t numAttrs, size_t *failIdx, CUstream hStream)
{
    return batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream);
}

static CUresult cuMemcpyBatchAsync_v2_impl(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                           size_t count, CUmemcpyAttributes *attrs,
                                           size_t *attrsIdxs, size_t numAttrs, CUstream hStream)
{
    return batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream);
}

static CUresult cuMemcpy3DBatchAsync_impl(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                          size_t *failIdx, unsigned long long flags,
                                          CUstream hStream)
{
    return batch3d_copy(numOps, opList, failIdx, flags, hStream);
}

static CUresult cuMemcpy3DBatchAsync_v2_impl(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                             unsigned long long flags, CUstream hStream)
{
    return batch3d_copy(numOps, opList, NULL, flags, hStream);
}

static CUresult cuMemsetD8_v2_impl(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return set_async(dstDevice, 0, uc, 1, N, 1, NULL);
}

static CUresult cuMemsetD2D8_v2_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                     size_t Width, size_t Height)
{
    return set_async(dstDevice, dstPitch, uc, 1, Width, Height, NULL);
}

static CUresult cuMemsetD8Async_impl(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                     CUstream hStream)
{
    return set_async(dstDevice, 0, uc, 1, N, 1, hStream);
}

static CUresult cuMemsetD2D8Async_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                       size_t Width, size_t Height, CUstream hStream)
{
    return set_async(dstDevice, dstPitch, uc, 1, Width, Height, hStream);
}

static CUresult cuMemsetD16_v2_impl(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return set_async(dstDevice, 0, us, 2, N, 1, NULL);
}

static CUresult cuMemsetD2D16_v2_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                      size_t Width, size_t Height)
{
    return set_async(dstDevice, dstPitch, us, 2, Width, Height, NULL);
}

static CUresult cuMemsetD16Async_impl(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                      CUstream hStream)
{
    return set_async(dstDevice, 0, us, 2, N, 1, hStream);
}

static CUresult cuMemsetD2D16Async_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                        size_t Width, size_t Height, CUstream hStream)
{
    return set_async(dstDevice, dstPitch, us, 2, Width, Height, hStream);
}

static CUresult cuMemsetD32_v2_impl(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return set_async(dstDevice, 0, ui, 4, N, 1, NULL);
}

static CUresult cuMemsetD2D32_v2_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                      size_t Width, size_t Height)
{
    return set_async(dstDevice, dstPitch, ui, 4, Width, Height, NULL);
}

static CUresult cuMemsetD32Async_impl(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                      CUstream hStream)
{
    return set_async(dstDevice, 0, ui, 4, N, 1, hStream);
}

static CUresult cuMemsetD2D32Async_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                        size_t Width, size_t Height, CUstream hStream)
{
    return set_async(dstDevice, dstPitch, ui, 4, Width, Height, hStream);
}

/* ------------------------------------------------------------------------ */
/* Streams                                                                   */
/* ------------------------------------------------------------------------ */

static void stream_detach_locked(struct fake_stream *st)
{
    if (st->cap) {
        st->cap = NULL;
        st->ctx->ncapturing--;
    }
}

/* End a capture sequence: every stream in it leaves capture mode. */
static void capture_detach_all_locked(struct capture *cap)
{
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i]->magic == MAGIC_STREAM) {
            struct fake_stream *s = g_handles[i]->owner;
            if (s->cap == cap)
                stream_detach_locked(s);
        }
}

static int ctx_invalidate_captures_locked(struct fake_ctx *ctx)
{
    int any = 0;
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i]->magic == MAGIC_STREAM) {
            struct fake_stream *s = g_handles[i]->owner;
            if (s->ctx == ctx && s->cap) {
                s->cap->invalidated = 1;
                any = 1;
            }
        }
    return any;
}

static CUresult stream_create(CUstream *phStream, unsigned int flags, int priority)
{
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_stream *s = calloc(1, sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->h = (struct hdr){MAGIC_STREAM, s};
    s->ctx = c;
    s->flags = flags;
    s->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    LOCK();
    int bad = handle_add(&s->h);
    UNLOCK();
    if (bad) {
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phStream = (CUstream)s;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    ENTER(cuStreamCreate);
    return stream_create(phStream, Flags, 0);
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    ENTER(cuStreamCreateWithPriority);
    return stream_create(phStream, flags, priority);
}

static void capture_free_locked(struct capture *cap, int drop_graph);

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    ENTER(cuStreamDestroy_v2);
    TRY(need_init());
    LOCK();
    struct fake_stream *s = handle_get(hStream, MAGIC_STREAM);
    if (!s) {
        UNLOCK();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (s->cap && s->cap->origin == s) {
        struct capture *cap = s->cap;
        capture_detach_all_locked(cap);
        capture_free_locked(cap, 1);
    }
    stream_detach_locked(s);
    handle_remove(&s->h);
    UNLOCK();
    free(s);
    return CUDA_SUCCESS;
}

/* Synchronising with (or querying) a capturing stream is illegal and
 * invalidates its capture; otherwise it reports the context's pending fault. */
static CUresult stream_sync(CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    if (r == CUDA_SUCCESS) {
        if (st && st->cap) {
            st->cap->invalidated = 1;
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        } else {
            r = ctx_sync_locked(c);
        }
    }
    UNLOCK();
    return r;
}

static CUresult cuStreamSynchronize_impl(CUstream hStream)
{
    return stream_sync(hStream);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    ENTER(cuStreamSynchronize);
    sync_sleep();
    return cuStreamSynchronize_impl(hStream);
}

static CUresult cuStreamQuery_impl(CUstream hStream)
{
    return stream_sync(hStream);
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    ENTER(cuStreamGetCtx);
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    UNLOCK();
    TRY(r);
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The capture an event was last recorded into, if that capture is still
 * going. Caller holds g_lock. */
static struct capture *event_capture_locked(struct fake_event *e)
{
    if (!e->cap)
        return NULL;
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i]->magic == MAGIC_STREAM) {
            struct fake_stream *s = g_handles[i]->owner;
            if (s->cap == e->cap && s->cap->id == e->cap_id)
                return e->cap;
        }
    e->cap = NULL;
    return NULL;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    ENTER(cuEventCreate);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                         CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_event *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->h = (struct hdr){MAGIC_EVENT, e};
    e->ctx = c;
    e->flags = Flags;
    LOCK();
    int bad = handle_add(&e->h);
    UNLOCK();
    if (bad) {
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phEvent = (CUevent)e;
    return CUDA_SUCCESS;
}

static CUresult event_record(CUevent hEvent, CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    struct fake_event *e = handle_get(hEvent, MAGIC_EVENT);
    if (r == CUDA_SUCCESS && !e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS) {
        if (st && st->cap) {
            e->cap = st->cap; /* a capture-time record: a fork/join point */
            e->cap_id = st->cap->id;
        } else {
            e->cap = NULL;
            e->recorded = 1;
            e->ms = now_ms();
        }
    }
    UNLOCK();
    return r;
}

static CUresult cuEventRecord_impl(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream);
}

static CUresult event_wait_host(CUevent hEvent)
{
    TRY(need_init());
    LOCK();
    struct fake_event *e = handle_get(hEvent, MAGIC_EVENT);
    CUresult r;
    if (!e)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (event_capture_locked(e))
        r = CUDA_ERROR_CAPTURED_EVENT;
    else
        r = ctx_sync_locked(e->ctx);
    UNLOCK();
    return r;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    ENTER(cuEventSynchronize);
    return event_wait_host(hEvent);
}

CUresult cuEventQuery(CUevent hEvent)
{
    ENTER(cuEventQuery);
    return event_wait_host(hEvent);
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    ENTER(cuEventDestroy_v2);
    TRY(need_init());
    LOCK();
    struct fake_event *e = handle_get(hEvent, MAGIC_EVENT);
    if (e)
        handle_remove(&e->h);
    UNLOCK();
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    free(e);
    return CUDA_SUCCESS;
}

static CUresult event_elapsed(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    TRY(need_init());
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_event *a = handle_get(hStart, MAGIC_EVENT);
    struct fake_event *b = handle_get(hEnd, MAGIC_EVENT);
    CUresult r = CUDA_SUCCESS;
    if (!a || !b || !a->recorded || !b->recorded ||
        ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
        r = CUDA_ERROR_INVALID_HANDLE;
    else
        *pMilliseconds = (float)(b->ms - a->ms);
    UNLOCK();
    return r;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    ENTER(cuEventElapsedTime);
    return event_elapsed(pMilliseconds, hStart, hEnd);
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    ENTER(cuEventElapsedTime_v2);
    return event_elapsed(pMilliseconds, hStart, hEnd);
}

/* Waiting on an event recorded inside a capture pulls the waiting stream
 * into that capture (the fork/join pattern of multi-stream capture). */
static CUresult stream_wait_event(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    struct fake_event *e = handle_get(hEvent, MAGIC_EVENT);
    if (r == CUDA_SUCCESS && !e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct capture *cap = event_capture_locked(e);
        if (cap && !st)
            r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        else if (cap && st->cap && st->cap != cap)
            r = CUDA_ERROR_STREAM_CAPTURE_MERGE;
        else if (cap && !st->cap) {
            st->cap = cap;
            st->ctx->ncapturing++;
        }
    }
    UNLOCK();
    return r;
}

static CUresult cuStreamWaitEvent_impl(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags);
}

/* ------------------------------------------------------------------------ */
/* Stream capture                                                            */
/* ------------------------------------------------------------------------ */

struct capture_ext {
    struct capture cap;
    int user_graph; /* BeginCaptureToGraph: the graph is the caller's */
};

static void capture_free_locked(struct capture *cap, int drop_graph)
{
    struct capture_ext *x = (struct capture_ext *)cap;
    if (drop_graph && !x->user_graph) {
        handle_remove(&cap->graph->h);
        graph_free(cap->graph);
    }
    free(x);
}

static struct fake_graph *graph_new_locked(void)
{
    struct fake_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->h = (struct hdr){MAGIC_GRAPH, g};
    if (handle_add(&g->h)) {
        free(g);
        return NULL;
    }
    return g;
}

static CUresult capture_begin(CUstream hStream, CUstreamCaptureMode mode, CUgraph into)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    struct fake_graph *g = NULL;
    if (r == CUDA_SUCCESS && !st)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy NULL stream */
    else if (r == CUDA_SUCCESS && st->cap)
        r = CUDA_ERROR_ILLEGAL_STATE;
    if (r == CUDA_SUCCESS && into && !(g = handle_get(into, MAGIC_GRAPH)))
        r = CUDA_ERROR_INVALID_VALUE;
    struct capture_ext *x = NULL;
    if (r == CUDA_SUCCESS) {
        x = calloc(1, sizeof *x);
        if (!g)
            g = x ? graph_new_locked() : NULL;
        else if (x)
            x->user_graph = 1;
        if (!x || !g) {
            free(x);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (r == CUDA_SUCCESS) {
        x->cap.graph = g;
        x->cap.origin = st;
        x->cap.id = ++g_capture_ids;
        x->cap.mode = mode;
        st->cap = &x->cap;
        c->ncapturing++;
    }
    UNLOCK();
    return r;
}

static CUresult cuStreamBeginCapture_impl(CUstream hStream)
{
    return capture_begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL);
}

static CUresult cuStreamBeginCapture_v2_impl(CUstream hStream, CUstreamCaptureMode mode)
{
    return capture_begin(hStream, mode, NULL);
}

static CUresult cuStreamBeginCaptureToGraph_impl(CUstream hStream, CUgraph hGraph,
                                                 const CUgraphNode *dependencies,
                                                 const CUgraphEdgeData *dependencyData,
                                                 size_t numDependencies, CUstreamCaptureMode mode)
{
    if (!hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    return capture_begin(hStream, mode, hGraph);
}

static CUresult capture_end(CUstream hStream, CUgraph *phGraph)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    if (r == CUDA_SUCCESS && (!st || !st->cap))
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (r == CUDA_SUCCESS && st->cap->origin != st)
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    if (r == CUDA_SUCCESS) {
        struct capture *cap = st->cap;
        capture_detach_all_locked(cap);
        if (cap->invalidated) {
            *phGraph = NULL;
            capture_free_locked(cap, 1);
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else {
            *phGraph = (CUgraph)cap->graph;
            capture_free_locked(cap, 0);
        }
    }
    UNLOCK();
    return r;
}

static CUresult cuStreamEndCapture_impl(CUstream hStream, CUgraph *phGraph)
{
    return capture_end(hStream, phGraph);
}

static CUresult capture_info(CUstream hStream, CUstreamCaptureStatus *status, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    if (r == CUDA_SUCCESS) {
        struct capture *cap = st ? st->cap : NULL;
        *status = !cap               ? CU_STREAM_CAPTURE_STATUS_NONE
                  : cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                     : CU_STREAM_CAPTURE_STATUS_ACTIVE;
        if (cap && id)
            *id = cap->id;
        if (cap && graph)
            *graph = (CUgraph)cap->graph;
        if (cap && deps)
            *deps = NULL;
        if (cap && edges)
            *edges = NULL;
        if (cap && ndeps)
            *ndeps = 0;
    }
    UNLOCK();
    return r;
}

static CUresult cuStreamIsCapturing_impl(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return capture_info(hStream, captureStatus, NULL, NULL, NULL, NULL, NULL);
}

static CUresult cuStreamGetCaptureInfo_v3_impl(CUstream hStream,
                                               CUstreamCaptureStatus *captureStatus_out,
                                               cuuint64_t *id_out, CUgraph *graph_out,
                                               const CUgraphNode **dependencies_out,
                                               const CUgraphEdgeData **edgeData_out,
                                               size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

/* ------------------------------------------------------------------------ */
/* Graphs: a graph is its recorded ops in order; an exec is a frozen copy    */
/* ------------------------------------------------------------------------ */

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    ENTER(cuGraphCreate);
    TRY(need_init());
    if (!phGraph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_graph *g = graph_new_locked();
    UNLOCK();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = (CUgraph)g;
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
    ENTER(cuGraphDestroy);
    TRY(need_init());
    LOCK();
    struct fake_graph *g = handle_get(hGraph, MAGIC_GRAPH);
    if (g)
        handle_remove(&g->h);
    UNLOCK();
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    graph_free(g);
    return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    ENTER(cuGraphGetNodes);
    TRY(need_init());
    if (!numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_graph *g = handle_get(hGraph, MAGIC_GRAPH);
    if (g && !nodes) {
        *numNodes = g->nops;
    } else if (g) {
        size_t n = *numNodes < g->nops ? *numNodes : g->nops;
        for (size_t i = 0; i < n; i++)
            nodes[i] = (CUgraphNode)g->ops[i];
        for (size_t i = n; i < *numNodes; i++)
            nodes[i] = NULL;
        *numNodes = n;
    }
    UNLOCK();
    return g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A node is one of the graph's ops (as cuGraphGetNodes hands them out). */
CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    ENTER(cuGraphNodeGetType);
    TRY(need_init());
    const struct op *o = (const struct op *)hNode;
    if (!o || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = o->kind == OP_KERNEL ? CU_GRAPH_NODE_TYPE_KERNEL
            : o->kind == OP_COPY ? CU_GRAPH_NODE_TYPE_MEMCPY
                                 : CU_GRAPH_NODE_TYPE_MEMSET;
    return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    ENTER(cuGraphKernelNodeGetParams_v2);
    TRY(need_init());
    const struct op *o = (const struct op *)hNode;
    if (!o || !p || o->kind != OP_KERNEL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(p, 0, sizeof *p);
    p->func = (CUfunction)&o->fn->as_func;
    p->gridDimX = o->launch.grid[0], p->gridDimY = o->launch.grid[1];
    p->gridDimZ = o->launch.grid[2];
    p->blockDimX = o->launch.block[0], p->blockDimY = o->launch.block[1];
    p->blockDimZ = o->launch.block[2];
    p->sharedMemBytes = o->launch.shmem;
    return CUDA_SUCCESS;
}

static CUresult graph_instantiate(CUgraphExec *phGraphExec, CUgraph hGraph)
{
    TRY(need_init());
    if (!phGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_exec *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->h = (struct hdr){MAGIC_EXEC, x};
    LOCK();
    struct fake_graph *g = handle_get(hGraph, MAGIC_GRAPH);
    CUresult r = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (g && g->nops) {
        x->ops = calloc(g->nops, sizeof *x->ops);
        for (size_t i = 0; x->ops && i < g->nops; i++) {
            x->ops[i] = op_clone(g->ops[i]);
            if (!x->ops[i])
                break;
            x->nops++;
        }
        if (x->nops != g->nops)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS && handle_add(&x->h))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    UNLOCK();
    if (r != CUDA_SUCCESS) {
        for (size_t i = 0; i < x->nops; i++)
            op_free(x->ops[i]);
        free(x->ops);
        free(x);
        return r;
    }
    *phGraphExec = (CUgraphExec)x;
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                            char *logBuffer, size_t bufferSize)
{
    ENTER(cuGraphInstantiate);
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    return graph_instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                               char *logBuffer, size_t bufferSize)
{
    ENTER(cuGraphInstantiate_v2);
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    return graph_instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags)
{
    ENTER(cuGraphInstantiateWithFlags);
    return graph_instantiate(phGraphExec, hGraph);
}

static CUresult graph_instantiate_params(CUgraphExec *phGraphExec, CUgraph hGraph,
                                         CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = graph_instantiate(phGraphExec, hGraph);
    p->hErrNode_out = NULL;
    p->result_out =
        r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

static CUresult cuGraphInstantiateWithParams_impl(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return graph_instantiate_params(phGraphExec, hGraph, instantiateParams);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    ENTER(cuGraphExecDestroy);
    TRY(need_init());
    LOCK();
    struct fake_exec *x = handle_get(hGraphExec, MAGIC_EXEC);
    if (x)
        handle_remove(&x->h);
    UNLOCK();
    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < x->nops; i++)
        op_free(x->ops[i]);
    free(x->ops);
    free(x);
    return CUDA_SUCCESS;
}

/* Replay: the ops run in recorded order with the argument bytes frozen at
 * capture. A copy or memset whose memory has gone since capture faults the
 * context the way a GPU would (an illegal address, reported at the next
 * sync), rather than touching freed memory. */
static CUresult graph_launch(CUgraphExec hGraphExec, CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    struct fake_exec *x = handle_get(hGraphExec, MAGIC_EXEC);
    if (r == CUDA_SUCCESS && !x)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && st && st->cap) {
        /* launched into a capture: becomes part of the captured graph */
        for (size_t i = 0; i < x->nops && r == CUDA_SUCCESS; i++)
            r = graph_append_locked(st->cap->graph, x->ops[i]);
        UNLOCK();
        return r;
    }
    UNLOCK();
    TRY(r);
    for (size_t i = 0; i < x->nops; i++) {
        const struct op *o = x->ops[i];
        LOCK();
        int dead = c->pending != CUDA_SUCCESS && err_is_sticky(c->pending);
        UNLOCK();
        if (dead)
            break;
        if (o->kind == OP_COPY && xfer_check(&o->x) != CUDA_SUCCESS)
            ctx_fault(c, CUDA_ERROR_ILLEGAL_ADDRESS);
        else if (o->kind == OP_SET && setop_check(&o->s) != CUDA_SUCCESS)
            ctx_fault(c, CUDA_ERROR_ILLEGAL_ADDRESS);
        else
            op_run(c, o, o->args);
    }
    return CUDA_SUCCESS;
}

static CUresult cuGraphLaunch_impl(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_launch(hGraphExec, hStream);
}

/* ------------------------------------------------------------------------ */
/* Modules and libraries                                                     */
/* ------------------------------------------------------------------------ */

/* tests/fake/fake_redzone.c: the host twin of atlastrace's red-zone PTX, or NULL */
const struct fake_image *fake_redzone_twin(const void *image);

static CUresult module_load_image(CUmodule *module, const void *image)
{
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    const struct fake_image *twin = fake_redzone_twin(image);
    struct fake_mod *m;
    TRY(mod_create(twin ? twin : image, NULL, 0, &m));
    *module = (CUmodule)&m->as_module;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    ENTER(cuModuleLoad);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_mod *m;
    TRY(mod_load_named(fname, 0, &m));
    *module = (CUmodule)&m->as_module;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    ENTER(cuModuleLoadData);
    return module_load_image(module, image);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues)
{
    ENTER(cuModuleLoadDataEx);
    return module_load_image(module, image);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    ENTER(cuModuleLoadFatBinary);
    return module_load_image(module, fatCubin);
}

static CUresult mod_unload(const void *h, uint32_t magic)
{
    TRY(need_init());
    LOCK();
    struct fake_mod *m = handle_get(h, magic);
    if (m && magic == MAGIC_MODULE && m->is_library)
        m = NULL; /* a library's module goes with the library */
    if (m)
        mod_unregister_locked(m);
    UNLOCK();
    if (!m)
        return CUDA_ERROR_INVALID_HANDLE;
    mod_free(m);
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod)
{
    ENTER(cuModuleUnload);
    return mod_unload(hmod, MAGIC_MODULE);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    ENTER(cuModuleGetFunction);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_mod *m = handle_get(hmod, MAGIC_MODULE);
    CUresult r = m ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; m && i < m->img->nkernels; i++)
        if (strcmp(m->fns[i].def->name, name) == 0) {
            *hfunc = (CUfunction)&m->fns[i].as_func;
            r = CUDA_SUCCESS;
            break;
        }
    UNLOCK();
    return r;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                           void **jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    ENTER(cuLibraryLoadData);
    TRY(need_init());
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_mod *m;
    TRY(mod_create(code, NULL, 1, &m));
    *library = (CUlibrary)&m->as_library;
    return CUDA_SUCCESS;
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions)
{
    ENTER(cuLibraryLoadFromFile);
    TRY(need_init());
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_mod *m;
    TRY(mod_load_named(fileName, 1, &m));
    *library = (CUlibrary)&m->as_library;
    return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(CUlibrary library)
{
    ENTER(cuLibraryUnload);
    return mod_unload(library, MAGIC_LIBRARY);
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    ENTER(cuLibraryGetKernel);
    TRY(need_init());
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_mod *m = handle_get(library, MAGIC_LIBRARY);
    CUresult r = m ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; m && i < m->img->nkernels; i++)
        if (strcmp(m->fns[i].def->name, name) == 0) {
            *pKernel = (CUkernel)&m->fns[i].as_kernel;
            r = CUDA_SUCCESS;
            break;
        }
    UNLOCK();
    return r;
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    ENTER(cuLibraryGetModule);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_mod *m = handle_get(library, MAGIC_LIBRARY);
    UNLOCK();
    if (!m)
        return CUDA_ERROR_INVALID_HANDLE;
    *pMod = (CUmodule)&m->as_module;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    ENTER(cuKernelGetFunction);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_fn *f = handle_get(kernel, MAGIC_KERNEL);
    UNLOCK();
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = (CUfunction)&f->as_func;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    ENTER(cuFuncGetModule);
    TRY(need_init());
    if (!hmod)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_fn *f = handle_get(hfunc, MAGIC_FUNC);
    UNLOCK();
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *hmod = (CUmodule)&f->mod->as_module;
    return CUDA_SUCCESS;
}

static CUresult fn_name(const char **name, const void *h, uint32_t magic)
{
    TRY(need_init());
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_fn *f = handle_get(h, magic);
    UNLOCK();
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->def->name;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    ENTER(cuFuncGetName);
    return fn_name(name, hfunc, MAGIC_FUNC);
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    ENTER(cuKernelGetName);
    return fn_name(name, hfunc, MAGIC_KERNEL);
}

static CUresult fn_param_info(const void *h, uint32_t magic, size_t idx, size_t *off, size_t *size)
{
    TRY(need_init());
    if (!off)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_fn *f = handle_get(h, magic);
    UNLOCK();
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (idx >= f->def->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    *off = f->offsets[idx];
    if (size)
        *size = f->def->param_sizes[idx];
    return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                            size_t *paramSize)
{
    ENTER(cuFuncGetParamInfo);
    return fn_param_info(func, MAGIC_FUNC, paramIndex, paramOffset, paramSize);
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                              size_t *paramSize)
{
    ENTER(cuKernelGetParamInfo);
    return fn_param_info(kernel, MAGIC_KERNEL, paramIndex, paramOffset, paramSize);
}

/* ------------------------------------------------------------------------ */
/* Launches                                                                  */
/* ------------------------------------------------------------------------ */

#define FAKE_MAX_PARAMS 512

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **kernelParams,
                       void **extra)
{
    TRY(stream_usable(s));
    LOCK();
    struct fake_fn *fn = fn_from_handle_locked(f);
    UNLOCK();
    if (!fn)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || bx > 1024 ||
        by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (shmem > 232448)
        return CUDA_ERROR_INVALID_VALUE;
    const struct fake_kernel_def *k = fn->def;
    if ((kernelParams && extra) || k->nparams > FAKE_MAX_PARAMS)
        return CUDA_ERROR_INVALID_VALUE;
    void *ptrs[FAKE_MAX_PARAMS];
    if (extra) {
        unsigned char *buf = NULL;
        size_t *sizep = NULL;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                sizep = extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (k->nparams && (!buf || !sizep || *sizep < fn->argbytes))
            return CUDA_ERROR_INVALID_VALUE;
        for (unsigned i = 0; i < k->nparams; i++)
            ptrs[i] = buf + fn->offsets[i];
    } else if (kernelParams) {
        for (unsigned i = 0; i < k->nparams; i++)
            ptrs[i] = kernelParams[i];
    } else if (k->nparams) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct op o = {.kind = OP_KERNEL,
                   .fn = fn,
                   .launch = {.grid = {gx, gy, gz},
                              .block = {bx, by, bz},
                              .shmem = shmem,
                              .stream = s,
                              .name = k->name}};
    return stream_submit(s, &o, ptrs);
}

static CUresult cuLaunchKernel_impl(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                    unsigned int gridDimZ, unsigned int blockDimX,
                                    unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream,
                                    void **kernelParams, void **extra)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, kernelParams, extra);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra)
{
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                  config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
                  kernelParams, extra);
}

static CUresult cuLaunchKernelEx_impl(const CUlaunchConfig *config, CUfunction f,
                                      void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra);
}

static CUresult cuLaunchCooperativeKernel_impl(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream hStream, void **kernelParams)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, kernelParams, NULL);
}

/* ------------------------------------------------------------------------ */
/* The per-thread default stream twins and their legacy functions: ptds.def  */
/* ------------------------------------------------------------------------ */

/* name: the exported function; impl: the body it shares with its twin */
#define FAKE_PT_FN(name, impl, params, args)                                                       \
    CUresult name params                                                                           \
    {                                                                                              \
        ENTER(name);                                                                               \
        return impl args;                                                                          \
    }
#define FAKE_PT(api, ver, sym, sfx, params, args)                                                  \
    FAKE_PT_FN(sym, sym##_impl, params, args)                                                      \
    FAKE_PT_FN(sym##_##sfx, sym##_impl, params, args)
#define FAKE_PT_TWIN(api, ver, sym, sfx, params, args)                                             \
    FAKE_PT_FN(sym##_##sfx, sym##_impl, params, args)
#include "ptds.def"
#undef FAKE_PT
#undef FAKE_PT_TWIN

/* ------------------------------------------------------------------------ */
/* cuGetProcAddress                                                          */
/* ------------------------------------------------------------------------ */

/* GPA(base name, first CUDA version that returns this variant, per-thread
 * variant?, exported symbol); the per-thread twins come from ptds.def. Versions are those of
 * cudaTypedefs.h's PFN_<base>_v<version> typedefs. A request resolves to the highest version
 * <= the requested one, preferring the per-thread variant when the flags ask
 * for per-thread default stream semantics. Only variants the fake exports are
 * listed, so e.g. cuMemAlloc below 3020 (the 32-bit v1) is "version not
 * sufficient". */
#define PT 1
#define GPA_TABLE(GPA)                                                                             \
    GPA(cuInit, 2000, 0, cuInit)                                                                   \
    GPA(cuDriverGetVersion, 2020, 0, cuDriverGetVersion)                                           \
    GPA(cuDeviceGet, 2000, 0, cuDeviceGet)                                                         \
    GPA(cuDeviceGetCount, 2000, 0, cuDeviceGetCount)                                               \
    GPA(cuDeviceGetName, 2000, 0, cuDeviceGetName)                                                 \
    GPA(cuDeviceGetAttribute, 2000, 0, cuDeviceGetAttribute)                                       \
    GPA(cuDeviceTotalMem, 3020, 0, cuDeviceTotalMem_v2)                                            \
    GPA(cuDeviceGetUuid, 11040, 0, cuDeviceGetUuid_v2)                                             \
    GPA(cuDevicePrimaryCtxRetain, 7000, 0, cuDevicePrimaryCtxRetain)                               \
    GPA(cuDevicePrimaryCtxRelease, 11000, 0, cuDevicePrimaryCtxRelease_v2)                         \
    GPA(cuDevicePrimaryCtxReset, 11000, 0, cuDevicePrimaryCtxReset_v2)                             \
    GPA(cuDevicePrimaryCtxGetState, 7000, 0, cuDevicePrimaryCtxGetState)                           \
    GPA(cuDeviceGetDefaultMemPool, 11020, 0, cuDeviceGetDefaultMemPool)                            \
    GPA(cuCtxCreate, 12050, 0, cuCtxCreate_v4)                                                     \
    GPA(cuCtxDestroy, 4000, 0, cuCtxDestroy_v2)                                                    \
    GPA(cuCtxSetCurrent, 4000, 0, cuCtxSetCurrent)                                                 \
    GPA(cuCtxGetCurrent, 4000, 0, cuCtxGetCurrent)                                                 \
    GPA(cuCtxPushCurrent, 4000, 0, cuCtxPushCurrent_v2)                                            \
    GPA(cuCtxPopCurrent, 4000, 0, cuCtxPopCurrent_v2)                                              \
    GPA(cuCtxGetDevice, 2000, 0, cuCtxGetDevice)                                                   \
    GPA(cuCtxGetDevice, 13000, 0, cuCtxGetDevice_v2)                                               \
    GPA(cuCtxSynchronize, 2000, 0, cuCtxSynchronize)                                               \
    GPA(cuCtxSynchronize, 13000, 0, cuCtxSynchronize_v2)                                           \
    GPA(cuGetErrorName, 6000, 0, cuGetErrorName)                                                   \
    GPA(cuGetErrorString, 6000, 0, cuGetErrorString)                                               \
    GPA(cuGetProcAddress, 11030, 0, cuGetProcAddress)                                              \
    GPA(cuGetProcAddress, 12000, 0, cuGetProcAddress_v2)                                           \
    GPA(cuMemAlloc, 3020, 0, cuMemAlloc_v2)                                                        \
    GPA(cuMemAllocPitch, 3020, 0, cuMemAllocPitch_v2)                                              \
    GPA(cuMemAllocManaged, 6000, 0, cuMemAllocManaged)                                             \
    GPA(cuMemAllocAsync, 11020, 0, cuMemAllocAsync)                                                \
    GPA(cuMemAllocFromPoolAsync, 11020, 0, cuMemAllocFromPoolAsync)                                \
    GPA(cuMemFree, 3020, 0, cuMemFree_v2)                                                          \
    GPA(cuMemFreeAsync, 11020, 0, cuMemFreeAsync)                                                  \
    GPA(cuMemGetInfo, 3020, 0, cuMemGetInfo_v2)                                                    \
    GPA(cuMemCreate, 10020, 0, cuMemCreate)                                                        \
    GPA(cuMemRelease, 10020, 0, cuMemRelease)                                                      \
    GPA(cuMemAddressReserve, 10020, 0, cuMemAddressReserve)                                        \
    GPA(cuMemAddressFree, 10020, 0, cuMemAddressFree)                                              \
    GPA(cuMemMap, 10020, 0, cuMemMap)                                                              \
    GPA(cuMemUnmap, 10020, 0, cuMemUnmap)                                                          \
    GPA(cuMemSetAccess, 10020, 0, cuMemSetAccess)                                                  \
    GPA(cuMemGetAllocationGranularity, 10020, 0, cuMemGetAllocationGranularity)                    \
    GPA(cuMemGetAddressRange, 3020, 0, cuMemGetAddressRange_v2)                                    \
    GPA(cuMemAllocHost, 3020, 0, cuMemAllocHost_v2)                                                \
    GPA(cuMemHostAlloc, 2020, 0, cuMemHostAlloc)                                                   \
    GPA(cuMemFreeHost, 2000, 0, cuMemFreeHost)                                                     \
    GPA(cuMemHostRegister, 6050, 0, cuMemHostRegister_v2)                                          \
    GPA(cuMemHostUnregister, 4000, 0, cuMemHostUnregister)                                         \
    GPA(cuMemHostGetDevicePointer, 3020, 0, cuMemHostGetDevicePointer_v2)                          \
    GPA(cuPointerGetAttribute, 4000, 0, cuPointerGetAttribute)                                     \
    GPA(cuPointerGetAttributes, 7000, 0, cuPointerGetAttributes)                                   \
    GPA(cuArrayCreate, 3020, 0, cuArrayCreate_v2)                                                  \
    GPA(cuArray3DCreate, 3020, 0, cuArray3DCreate_v2)                                              \
    GPA(cuArrayDestroy, 2000, 0, cuArrayDestroy)                                                   \
    GPA(cuArrayGetDescriptor, 3020, 0, cuArrayGetDescriptor_v2)                                    \
    GPA(cuMemcpy, 4000, 0, cuMemcpy)                                                               \
    GPA(cuMemcpyAsync, 4000, 0, cuMemcpyAsync)                                                     \
    GPA(cuMemcpyPeer, 4000, 0, cuMemcpyPeer)                                                       \
    GPA(cuMemcpyPeerAsync, 4000, 0, cuMemcpyPeerAsync)                                             \
    GPA(cuMemcpyHtoD, 3020, 0, cuMemcpyHtoD_v2)                                                    \
    GPA(cuMemcpyDtoH, 3020, 0, cuMemcpyDtoH_v2)                                                    \
    GPA(cuMemcpyDtoD, 3020, 0, cuMemcpyDtoD_v2)                                                    \
    GPA(cuMemcpyHtoDAsync, 3020, 0, cuMemcpyHtoDAsync_v2)                                          \
    GPA(cuMemcpyDtoHAsync, 3020, 0, cuMemcpyDtoHAsync_v2)                                          \
    GPA(cuMemcpyDtoDAsync, 3020, 0, cuMemcpyDtoDAsync_v2)                                          \
    GPA(cuMemcpyDtoA, 3020, 0, cuMemcpyDtoA_v2)                                                    \
    GPA(cuMemcpyAtoD, 3020, 0, cuMemcpyAtoD_v2)                                                    \
    GPA(cuMemcpyHtoA, 3020, 0, cuMemcpyHtoA_v2)                                                    \
    GPA(cuMemcpyAtoH, 3020, 0, cuMemcpyAtoH_v2)                                                    \
    GPA(cuMemcpyAtoA, 3020, 0, cuMemcpyAtoA_v2)                                                    \
    GPA(cuMemcpyHtoAAsync, 3020, 0, cuMemcpyHtoAAsync_v2)                                          \
    GPA(cuMemcpyAtoHAsync, 3020, 0, cuMemcpyAtoHAsync_v2)                                          \
    GPA(cuMemcpy2D, 3020, 0, cuMemcpy2D_v2)                                                        \
    GPA(cuMemcpy2DUnaligned, 3020, 0, cuMemcpy2DUnaligned_v2)                                      \
    GPA(cuMemcpy2DAsync, 3020, 0, cuMemcpy2DAsync_v2)                                              \
    GPA(cuMemcpy3D, 3020, 0, cuMemcpy3D_v2)                                                        \
    GPA(cuMemcpy3DAsync, 3020, 0, cuMemcpy3DAsync_v2)                                              \
    GPA(cuMemcpy3DPeer, 4000, 0, cuMemcpy3DPeer)                                                   \
    GPA(cuMemcpy3DPeerAsync, 4000, 0, cuMemcpy3DPeerAsync)                                         \
    GPA(cuMemcpyBatchAsync, 12080, 0, cuMemcpyBatchAsync)                                          \
    GPA(cuMemcpyBatchAsync, 13000, 0, cuMemcpyBatchAsync_v2)                                       \
    GPA(cuMemcpy3DBatchAsync, 12080, 0, cuMemcpy3DBatchAsync)                                      \
    GPA(cuMemcpy3DBatchAsync, 13000, 0, cuMemcpy3DBatchAsync_v2)                                   \
    GPA(cuMemsetD8, 3020, 0, cuMemsetD8_v2)                                                        \
    GPA(cuMemsetD16, 3020, 0, cuMemsetD16_v2)                                                      \
    GPA(cuMemsetD32, 3020, 0, cuMemsetD32_v2)                                                      \
    GPA(cuMemsetD2D8, 3020, 0, cuMemsetD2D8_v2)                                                    \
    GPA(cuMemsetD2D16, 3020, 0, cuMemsetD2D16_v2)                                                  \
    GPA(cuMemsetD2D32, 3020, 0, cuMemsetD2D32_v2)                                                  \
    GPA(cuMemsetD8Async, 3020, 0, cuMemsetD8Async)                                                 \
    GPA(cuMemsetD16Async, 3020, 0, cuMemsetD16Async)                                               \
    GPA(cuMemsetD32Async, 3020, 0, cuMemsetD32Async)                                               \
    GPA(cuMemsetD2D8Async, 3020, 0, cuMemsetD2D8Async)                                             \
    GPA(cuMemsetD2D16Async, 3020, 0, cuMemsetD2D16Async)                                           \
    GPA(cuMemsetD2D32Async, 3020, 0, cuMemsetD2D32Async)                                           \
    GPA(cuStreamCreate, 2000, 0, cuStreamCreate)                                                   \
    GPA(cuStreamCreateWithPriority, 5050, 0, cuStreamCreateWithPriority)                           \
    GPA(cuStreamDestroy, 4000, 0, cuStreamDestroy_v2)                                              \
    GPA(cuStreamSynchronize, 2000, 0, cuStreamSynchronize)                                         \
    GPA(cuStreamQuery, 2000, 0, cuStreamQuery)                                                     \
    GPA(cuStreamWaitEvent, 3020, 0, cuStreamWaitEvent)                                             \
    GPA(cuStreamGetCtx, 9020, 0, cuStreamGetCtx)                                                   \
    GPA(cuEventCreate, 2000, 0, cuEventCreate)                                                     \
    GPA(cuEventRecord, 2000, 0, cuEventRecord)                                                     \
    GPA(cuEventSynchronize, 2000, 0, cuEventSynchronize)                                           \
    GPA(cuEventQuery, 2000, 0, cuEventQuery)                                                       \
    GPA(cuEventDestroy, 4000, 0, cuEventDestroy_v2)                                                \
    GPA(cuEventElapsedTime, 2000, 0, cuEventElapsedTime)                                           \
    GPA(cuEventElapsedTime, 12080, 0, cuEventElapsedTime_v2)                                       \
    GPA(cuStreamBeginCapture, 10000, 0, cuStreamBeginCapture)                                      \
    GPA(cuStreamBeginCapture, 10010, 0, cuStreamBeginCapture_v2)                                   \
    GPA(cuStreamBeginCaptureToGraph, 12030, 0, cuStreamBeginCaptureToGraph)                        \
    GPA(cuStreamEndCapture, 10000, 0, cuStreamEndCapture)                                          \
    GPA(cuStreamIsCapturing, 10000, 0, cuStreamIsCapturing)                                        \
    GPA(cuStreamGetCaptureInfo, 12030, 0, cuStreamGetCaptureInfo_v3)                               \
    GPA(cuGraphCreate, 10000, 0, cuGraphCreate)                                                    \
    GPA(cuGraphInstantiate, 10000, 0, cuGraphInstantiate)                                          \
    GPA(cuGraphInstantiate, 11000, 0, cuGraphInstantiate_v2)                                       \
    GPA(cuGraphInstantiate, 12000, 0, cuGraphInstantiateWithFlags)                                 \
    GPA(cuGraphInstantiateWithFlags, 11040, 0, cuGraphInstantiateWithFlags)                        \
    GPA(cuGraphInstantiateWithParams, 12000, 0, cuGraphInstantiateWithParams)                      \
    GPA(cuGraphLaunch, 10000, 0, cuGraphLaunch)                                                    \
    GPA(cuGraphDestroy, 10000, 0, cuGraphDestroy)                                                  \
    GPA(cuGraphExecDestroy, 10000, 0, cuGraphExecDestroy)                                          \
    GPA(cuGraphGetNodes, 10000, 0, cuGraphGetNodes)                                                \
    GPA(cuModuleLoad, 2000, 0, cuModuleLoad)                                                       \
    GPA(cuModuleLoadData, 2000, 0, cuModuleLoadData)                                               \
    GPA(cuModuleLoadDataEx, 2010, 0, cuModuleLoadDataEx)                                           \
    GPA(cuModuleLoadFatBinary, 2000, 0, cuModuleLoadFatBinary)                                     \
    GPA(cuModuleUnload, 2000, 0, cuModuleUnload)                                                   \
    GPA(cuModuleGetFunction, 2000, 0, cuModuleGetFunction)                                         \
    GPA(cuLibraryLoadData, 12000, 0, cuLibraryLoadData)                                            \
    GPA(cuLibraryLoadFromFile, 12000, 0, cuLibraryLoadFromFile)                                    \
    GPA(cuLibraryUnload, 12000, 0, cuLibraryUnload)                                                \
    GPA(cuLibraryGetKernel, 12000, 0, cuLibraryGetKernel)                                          \
    GPA(cuLibraryGetModule, 12000, 0, cuLibraryGetModule)                                          \
    GPA(cuKernelGetFunction, 12000, 0, cuKernelGetFunction)                                        \
    GPA(cuFuncGetModule, 11000, 0, cuFuncGetModule)                                                \
    GPA(cuFuncGetName, 12030, 0, cuFuncGetName)                                                    \
    GPA(cuKernelGetName, 12030, 0, cuKernelGetName)                                                \
    GPA(cuFuncGetParamInfo, 12040, 0, cuFuncGetParamInfo)                                          \
    GPA(cuKernelGetParamInfo, 12040, 0, cuKernelGetParamInfo)                                      \
    GPA(cuLaunchKernel, 4000, 0, cuLaunchKernel)                                                   \
    GPA(cuLaunchKernelEx, 11060, 0, cuLaunchKernelEx)                                              \
    GPA(cuLaunchCooperativeKernel, 9000, 0, cuLaunchCooperativeKernel)
static const struct gpa_entry {
    const char *base;
    int version;
    int per_thread;
    void *fn;
} g_gpa[] = {
#define GPA_ROW(base, ver, pt, sym) {#base, ver, pt, (void *)sym},
    GPA_TABLE(GPA_ROW)
#undef GPA_ROW
#define FAKE_PT(api, ver, sym, sfx, params, args) {#api, ver, PT, (void *)sym##_##sfx},
#include "ptds.def"
#undef FAKE_PT
};

static CUresult gpa_resolve(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                            CUdriverProcAddressQueryResult *status)
{
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !pfn ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    int want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct gpa_entry *best = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof g_gpa / sizeof g_gpa[0]; i++) {
        const struct gpa_entry *e = &g_gpa[i];
        if (strcmp(e->base, symbol) != 0)
            continue;
        known = 1;
        if (e->version > cudaVersion || (e->per_thread && !want_pt))
            continue;
        if (!best || e->per_thread > best->per_thread ||
            (e->per_thread == best->per_thread && e->version > best->version))
            best = e;
    }
    if (!best) {
        if (status)
            *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = best->fn;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    ENTER(cuGetProcAddress);
    return gpa_resolve(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    ENTER(cuGetProcAddress_v2);
    return gpa_resolve(symbol, pfn, cudaVersion, flags, symbolStatus);
}
