/* Real-GPU target (issue #28): a module load/unload loop, as JIT-heavy
 * programs run (Triton autotuning, torch.compile, NVRTC). N cycles of
 * cuModuleLoad, cuModuleGetFunction, a launch and cuModuleUnload; prints the
 * CPU time of cycles 500-2,499 and of the last 2,000, the heap in use after
 * each, and the launches made. run_core.sh compares them under the preload.
 * With "before", each module is unloaded before the cycle's sync (the step
 * trace's op of the launch then waits for its step end with its module
 * gone).
 *   gpu_reload CUBIN N [before] */
#include <cuda.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            cuGetErrorName(r_, &s_);                                                               \
            fprintf(stderr, "%s failed: %s\n", #call, s_);                                         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define WARM 500
#define WINDOW 2000

static long cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static size_t heap(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr x;
    long n = argc > 2 ? atol(argv[2]) : 0;
    if (argc < 3 || n < WARM + 2 * WINDOW) {
        fprintf(stderr, "usage: gpu_reload CUBIN N [before] (N >= %d)\n", WARM + 2 * WINDOW);
        return 2;
    }
    const int before = argc > 3 && strcmp(argv[3], "before") == 0;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuMemAlloc(&x, 256 * sizeof(float)));
    float a = 1.0f;
    unsigned count = 256;
    void *params[] = {&x, &a, &count};
    long t0 = 0, t1 = 0, t2 = 0;
    size_t h1 = 0;
    for (long i = 0; i < n; i++) {
        if (i == WARM)
            t0 = cpu_us();
        if (i == WARM + WINDOW)
            t1 = cpu_us(), h1 = heap();
        if (i == n - WINDOW)
            t2 = cpu_us();
        CUmodule mod;
        CUfunction f;
        CHECK(cuModuleLoad(&mod, argv[1]));
        CHECK(cuModuleGetFunction(&f, mod, "scale"));
        CHECK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        if (before)
            CHECK(cuModuleUnload(mod));
        CHECK(cuCtxSynchronize());
        if (!before)
            CHECK(cuModuleUnload(mod));
    }
    long t3 = cpu_us();
    /* the output compared byte for byte with the native run's */
    printf("cycles %ld\n", n);
    fprintf(stderr, "first_us %ld\nlast_us %ld\nheap_first %zu\nheap_last %zu\n", t1 - t0, t3 - t2,
            h1, heap());
    CHECK(cuMemFree(x));
    return 0;
}
