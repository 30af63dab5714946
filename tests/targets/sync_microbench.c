/*
 * CPU cost of the always-on parts of the sync feature, against the fake
 * driver: ns per cuLaunchKernel (the fault latch's ring of recent launches),
 * per synchronous cuMemcpyDtoH (counting), and per cuMemcpyDtoHAsync into
 * pinned memory (counting plus the pageable check: one cuPointerGetAttribute).
 * Run it without the preload, with an idle build, and with this one; the
 * differences are the costs. Prints the median and the minimum of 7 runs of each loop.
 */
#include "../fake/fakecuda.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static CUresult k_empty(const struct fake_launch *l, void **params)
{
    (void)l;
    (void)params;
    return CUDA_SUCCESS;
}

static const size_t one_ptr[] = {8};
static const struct fake_kernel_def kernels[] = {{"empty", k_empty, 1, one_ptr, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 1, kernels};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define REPS 7

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUdeviceptr d;
    void *pinned;
    char host[16];
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, &image) ||
        cuModuleGetFunction(&f, mod, "empty") || cuMemAlloc(&d, 64) ||
        cuMemAllocHost(&pinned, 64)) {
        printf("FAIL setup\n");
        return 1;
    }
    void *params[] = {&d};
    const char *names[] = {"launch", "dtoh", "dtoh_async_pinned"};
    for (int which = 0; which < 3; which++) {
        double t[REPS];
        for (int r = 0; r < REPS; r++) {
            double t0 = now();
            for (long i = 0; i < n; i++) {
                if (which == 0)
                    cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
                else if (which == 1)
                    cuMemcpyDtoH(host, d, 4);
                else
                    cuMemcpyDtoHAsync(pinned, d, 4, NULL);
            }
            t[r] = (now() - t0) / (double)n;
        }
        qsort(t, REPS, sizeof t[0], cmp);
        printf("%s ns_per_call=%.1f min=%.1f\n", names[which], t[REPS / 2], t[0]);
    }
    return 0;
}
