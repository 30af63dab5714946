/*
 * fake_device.c: init, devices, primary and created contexts, error names.
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

/* ------------------------------------------------------------------------ */
/* Init, device, context                                                     */
/* ------------------------------------------------------------------------ */

#define FAKE_DRIVER_VERSION 13000
#define FAKE_DEVICE_NAME "NVIDIA Fake H200 (fakecuda)"

int fake_cc_major(void)
{
    static _Atomic int major; /* 0: not read yet */
    int m = atomic_load(&major);
    if (!m) {
        const char *v = getenv("FAKE_CC_MAJOR");
        int set = v ? atoi(v) : 0;
        m = set > 0 ? set : 9;
        atomic_store(&major, m);
    }
    return m;
}

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
CUresult need_init(void)
{
    return __atomic_load_n(&g_initialized, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS
                                                             : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult dev_check(CUdevice dev)
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
        v = fake_cc_major();
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

CUresult ctx_arg(CUcontext ctx, struct fake_ctx **out)
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
