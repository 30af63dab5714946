/*
 * Cost of an intercepted call, without a GPU: a loop of cuLaunchKernel on a
 * kernel that does nothing, and a loop of 16-byte cuMemcpyDtoH, against the
 * fake driver. Run natively and under the preload; the difference is ours.
 *   cpu_bench N            both loops, prints "launch NS" and "dtoh NS"
 *                          (nanoseconds per call, after a warm-up)
 *   cpu_bench N launch|dtoh  only that loop, no timing (for callgrind)
 */
#include "../../tests/fake/fakecuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUresult k_nop(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_SUCCESS;
}

static const struct fake_kernel_def kernels[] = {{"nop", k_nop, 0, NULL, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 1, kernels};

static CUfunction nop;
static CUdeviceptr dbuf;
static char hbuf[16];

static int loop_launch(long n)
{
    for (long i = 0; i < n; i++)
        if (cuLaunchKernel(nop, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
            return 1;
    return 0;
}

static int loop_dtoh(long n)
{
    for (long i = 0; i < n; i++)
        if (cuMemcpyDtoH(hbuf, dbuf, sizeof hbuf) != CUDA_SUCCESS)
            return 1;
    return 0;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    const char *only = argc > 2 ? argv[2] : NULL;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    if (n <= 0 || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, &image) ||
        cuModuleGetFunction(&nop, mod, "nop") || cuMemAlloc(&dbuf, sizeof hbuf)) {
        fprintf(stderr, "cpu_bench: setup failed\n");
        return 1;
    }
    if (only) {
        int bad = strcmp(only, "launch") == 0 ? loop_launch(n) : loop_dtoh(n);
        return bad;
    }
    if (loop_launch(n / 10 + 1) || loop_dtoh(n / 10 + 1))
        return 1;
    double t0 = now_ns();
    if (loop_launch(n))
        return 1;
    double t1 = now_ns();
    if (loop_dtoh(n))
        return 1;
    double t2 = now_ns();
    printf("launch %.2f\ndtoh %.2f\n", (t1 - t0) / (double)n, (t2 - t1) / (double)n);
    return 0;
}
