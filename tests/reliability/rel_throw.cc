/*
 * A C++ exception thrown through a hooked driver call (issue #48): the fake driver's kernels
 * are host functions, and "thrower" throws from inside cuLaunchKernel, as a host callback or
 * a C++ driver shim can. The program catches it three times, then makes 10 launches and a
 * sync. Under the preload every one of them must still be seen (the exception left the
 * thread's re-entrancy depth raised: nothing more of the thread was traced). Prints
 * "caught 3" and "ok".
 */
#include "../fake/fakecuda.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

static CUresult k_throw(const struct fake_launch *, void **)
{
    throw std::runtime_error("a host function of the fake driver's threw");
}

static CUresult k_nop(const struct fake_launch *, void **)
{
    return CUDA_SUCCESS;
}

static const size_t one8[] = {8};
static const struct fake_kernel_def kernels[] = {{"thrower", k_throw, 1, one8, nullptr},
                                                 {"nop1", k_nop, 1, one8, nullptr}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 2, kernels};

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            std::fprintf(stderr, "rel_throw: %s failed: %d\n", #call, (int)r_);                    \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

int main()
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction thrower, nop;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, &image));
    CK(cuModuleGetFunction(&thrower, mod, "thrower"));
    CK(cuModuleGetFunction(&nop, mod, "nop1"));
    unsigned long x = 1;
    void *params[] = {&x};
    int caught = 0;
    for (int i = 0; i < 3; i++) {
        try {
            cuLaunchKernel(thrower, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
        } catch (const std::exception &) {
            caught++;
        }
    }
    std::printf("caught %d\n", caught);
    for (int i = 0; i < 10; i++)
        CK(cuLaunchKernel(nop, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
    CK(cuCtxSynchronize());
    std::printf("ok\n");
    return 0;
}
