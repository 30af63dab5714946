/* Target (a): a program linked against libcuda, calling the driver directly.
 * Built twice: plain, and with CUDA_API_PER_THREAD_DEFAULT_STREAM so cuda.h
 * maps the calls to their _ptsz/_ptds variants. */
#include "workload.h"

#include <stdio.h>

int main(void)
{
    struct wl_api api = {
        .Init = cuInit,
        .DeviceGet = cuDeviceGet,
        .PrimaryCtxRetain = cuDevicePrimaryCtxRetain,
        .CtxSetCurrent = cuCtxSetCurrent,
        .ModuleLoadData = cuModuleLoadData,
        .ModuleGetFunction = cuModuleGetFunction,
        .MemAlloc = cuMemAlloc,
        .MemFree = cuMemFree,
        .MemcpyHtoD = cuMemcpyHtoD,
        .MemcpyDtoH = cuMemcpyDtoH,
        .MemsetD32Async = cuMemsetD32Async,
        .LaunchKernel = cuLaunchKernel,
        .StreamSynchronize = cuStreamSynchronize,
        .CtxSynchronize = cuCtxSynchronize,
    };
    CUfunction f;
    if (wl_setup(&api, &f) || wl_run(&api, f, 1, 1))
        return 1;
    wl_print_fake_counts();
    printf("ok\n");
    return 0;
}
