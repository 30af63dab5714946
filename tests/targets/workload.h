/*
 * A driver-API workload with a known shape, run by the target programs
 * through whichever resolution path each one tests. The test harness
 * knows the exact number of each call it makes (see WL_* below).
 */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <cuda.h>

#define WL_LAUNCHES 10 /* kernel launches per workload run */
#define WL_N 256       /* elements per buffer */

/* The driver functions the workload calls, however they were obtained. */
struct wl_api {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*CtxSynchronize)(void);
};

/* One-time setup: init, context, module. Returns 0 on success. */
int wl_setup(const struct wl_api *api, CUfunction *scale);

/* Allocates two buffers, copies in, launches WL_LAUNCHES kernels, memsets,
 * syncs, copies out, checks the numbers, frees; then, with `inject`, checks
 * that errors from the driver reach the caller unchanged. Returns 0 when
 * every result was right. Calls made per run (each exactly):
 *   MemAlloc 2, MemFree 2, MemcpyHtoD 1, MemcpyDtoH 1, MemsetD32Async 1,
 *   LaunchKernel WL_LAUNCHES, StreamSynchronize 1, CtxSynchronize 1;
 *   with `inject` one more MemAlloc (fails with CUDA_ERROR_OUT_OF_MEMORY) and
 *   one more LaunchKernel (fails with CUDA_ERROR_INVALID_VALUE). */
int wl_run(const struct wl_api *api, CUfunction scale, int tag, int inject);

/* Prints "fake: SYMBOL COUNT" for every hooked symbol the fake driver saw,
 * so the harness can compare them with atlastrace's own counts. */
void wl_print_fake_counts(void);

#endif
