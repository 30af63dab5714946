/*
 * fake_gpa.c: cuGetProcAddress.
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

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
    GPA(cuStreamGetFlags, 5050, 0, cuStreamGetFlags)                                               \
    GPA(cuStreamAddCallback, 5000, 0, cuStreamAddCallback)                                         \
    GPA(cuLaunchHostFunc, 10000, 0, cuLaunchHostFunc)                                              \
    GPA(cuEventRecordWithFlags, 11010, 0, cuEventRecordWithFlags)                                  \
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
