/*
 * Issue #48: more call sites than the race detector keeps (16,384). A program on the driver
 * API launches a reading kernel from 17,000 call sites of its own (races_sites_gen.c, made
 * by the build: one cuLaunchKernel per case, each its own return address), all on one
 * stream; then a copy writes the buffer on a second stream, and two more call sites read it
 * on two more with nothing between: two races, each at its own site (past the bound every
 * site was "?", and the two were told as one).
 */
#include "../fake/fakecuda.h"

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            printf("FAIL %s: %d\n", #call, (int)r_);                                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define N 1024

void launch_at(int i, CUfunction f, CUstream s, void **args); /* races_sites_gen.c */

static CUresult k_consume(const struct fake_launch *l, void **p)
{
    (void)l, (void)p;
    return CUDA_SUCCESS;
}

static const size_t sz_ptr_int[] = {8, 4};
static const struct fake_kernel_def kernels[] = {{"_Z7consumePKfi", k_consume, 2, sz_ptr_int, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 1, kernels};

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction consume;
    CUdeviceptr d;
    static float host[N];
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, &image));
    CHECK(cuModuleGetFunction(&consume, mod, "_Z7consumePKfi"));
    CHECK(cuMemAlloc(&d, sizeof host));
    CUstream a, b, c, e;
    CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&e, CU_STREAM_NON_BLOCKING));
    int n = N;
    CUdeviceptr p = d;
    void *args[] = {&p, &n};
    /* the pointer moves through 64 places: each launch is checked (words a kernel was launched
     * with among its last 8 are not checked again), and its site kept */
    for (int i = 0; i < 17000; i++) {
        p = d + (CUdeviceptr)(i % 64) * 4;
        launch_at(i, consume, b, args);
    }
    p = d;
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyHtoDAsync(d, host, sizeof host, a));
    launch_at(17000, consume, c, args);
    launch_at(17001, consume, e, args);
    CHECK(cuCtxSynchronize());
    printf("ok\n");
    return 0;
}
