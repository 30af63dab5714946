/* One benchmark loop per process, so a preload's cost is measured against
 * the same loop run natively (bench/core/run_bench.sh interleaves them).
 *   bench_launch CUBIN empty|args8|d2h ITERS
 * Prints "ns_per_op N". */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s failed: %d\n", #call, (int)r_);                                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    const char *mode = argv[2];
    long iters = atol(argv[3]);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fe, f8;
    CUdeviceptr buf;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoad(&mod, argv[1]));
    CHECK(cuModuleGetFunction(&fe, mod, "empty"));
    CHECK(cuModuleGetFunction(&f8, mod, "args8"));
    CHECK(cuMemAlloc(&buf, 1 << 20));
    unsigned n = 1, m = 2;
    float s = 1.5f;
    unsigned long long k = 3;
    int j = 4;
    CUdeviceptr b2 = buf + 4096, b3 = buf + 8192;
    void *p8[] = {&buf, &b2, &b3, &n, &m, &s, &k, &j};
    char host[16];

    /* warm up */
    for (int i = 0; i < 2000; i++)
        CHECK(cuLaunchKernel(fe, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());

    double t0 = now();
    if (strcmp(mode, "empty") == 0) {
        for (long i = 0; i < iters; i++) {
            CHECK(cuLaunchKernel(fe, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
            if ((i & 255) == 255)
                CHECK(cuCtxSynchronize());
        }
    } else if (strcmp(mode, "args8") == 0) {
        for (long i = 0; i < iters; i++) {
            CHECK(cuLaunchKernel(f8, 1, 1, 1, 32, 1, 1, 0, NULL, p8, NULL));
            if ((i & 255) == 255)
                CHECK(cuCtxSynchronize());
        }
    } else if (strcmp(mode, "d2h") == 0) {
        for (long i = 0; i < iters; i++)
            CHECK(cuMemcpyDtoH(host, buf, sizeof host));
    } else {
        return 2;
    }
    CHECK(cuCtxSynchronize());
    double t1 = now();
    printf("ns_per_op %.1f\n", (t1 - t0) / (double)iters);
    return 0;
}
