/* Launch-mode red zones against the number of live allocations (issue #16):
 *   rz_launch_bench MODULE LIVE [LAUNCHES]
 * Makes LIVE allocations of 4 KB, then times LAUNCHES (default 3,000) tiny
 * launches of `args8` (bench/core/kern_bench.cu: three pointers, which fall
 * into three of the live allocations in turn, and five scalars; it writes
 * nothing), with a cuCtxSynchronize at the end. Prints
 *   us_per_launch LIVE US
 *   enqueue_us_per_launch LIVE US    (the loop alone, before the sync)
 * One configuration per process: bench/redzone/run_redzone_bench.sh runs it
 * natively, under each ATLAS_REDZONE_CHECK mode and under compute-sanitizer,
 * interleaved. MODULE is the cubin on a GPU, or on the fake driver
 * (make redzone-bench-fake) the shared object of bench/redzone/fake_kernels.c. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "rz_launch_bench: %s failed: %d\n", #call, (int)r_);                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void launches(CUfunction f, const CUdeviceptr *live, long nlive, long n)
{
    unsigned a = 1, b = 2;
    float s = 1.5f;
    unsigned long long k = 3;
    int j = 4;
    for (long i = 0; i < n; i++) {
        CUdeviceptr p0 = live[i % nlive], p1 = live[(i + 1) % nlive], p2 = live[(i + 2) % nlive];
        void *params[] = {&p0, &p1, &p2, &a, &b, &s, &k, &j};
        CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    }
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long nlive = atol(argv[2]);
    long n = argc > 3 ? atol(argv[3]) : 3000;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    if (nlive < 1 || n < 1)
        return 2;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoad(&mod, argv[1]));
    CHECK(cuModuleGetFunction(&f, mod, "args8"));
    CUdeviceptr *live = malloc((size_t)nlive * sizeof *live);
    if (!live)
        return 1;
    for (long i = 0; i < nlive; i++)
        CHECK(cuMemAlloc(&live[i], 4096));
    launches(f, live, nlive, 300); /* warm up: module, check kernel, caches */
    CHECK(cuCtxSynchronize());
    double t0 = now_us();
    launches(f, live, nlive, n);
    double te = now_us();
    CHECK(cuCtxSynchronize());
    double t1 = now_us();
    printf("us_per_launch %ld %.2f\n", nlive, (t1 - t0) / (double)n);
    printf("enqueue_us_per_launch %ld %.2f\n", nlive, (te - t0) / (double)n);
    for (long i = 0; i < nlive; i++)
        CHECK(cuMemFree(live[i]));
    return 0;
}
