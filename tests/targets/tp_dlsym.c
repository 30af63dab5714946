/* Target (b): dlopen("libcuda.so.1") and dlsym of each exact symbol, as
 * PyTorch and Triton do. Links no libcuda. */
#include "workload.h"

#include <dlfcn.h>
#include <stdio.h>

#define GET(field, name)                                                                           \
    do {                                                                                           \
        *(void **)&api.field = dlsym(h, name);                                                     \
        if (!api.field) {                                                                          \
            fprintf(stderr, "dlsym(%s) failed\n", name);                                           \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    struct wl_api api;
    GET(Init, "cuInit");
    GET(DeviceGet, "cuDeviceGet");
    GET(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    GET(CtxSetCurrent, "cuCtxSetCurrent");
    GET(ModuleLoadData, "cuModuleLoadData");
    GET(ModuleGetFunction, "cuModuleGetFunction");
    GET(MemAlloc, "cuMemAlloc_v2");
    GET(MemFree, "cuMemFree_v2");
    GET(MemcpyHtoD, "cuMemcpyHtoD_v2");
    GET(MemcpyDtoH, "cuMemcpyDtoH_v2");
    GET(MemsetD32Async, "cuMemsetD32Async");
    GET(LaunchKernel, "cuLaunchKernel");
    GET(StreamSynchronize, "cuStreamSynchronize");
    GET(CtxSynchronize, "cuCtxSynchronize");
    CUfunction f;
    if (wl_setup(&api, &f) || wl_run(&api, f, 2, 1))
        return 1;
    wl_print_fake_counts();
    printf("ok\n");
    return 0;
}
