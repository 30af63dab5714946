/*
 * Cost of an allocation + free pair with many allocations live, without a
 * GPU: makes LIVE allocations of 256 bytes, then times PAIRS rounds of
 * cuMemFree of a random live one + cuMemAlloc of its replacement against the
 * fake driver, and prints
 *   pair LIVE NS        (nanoseconds per pair, after a warm-up)
 * Run natively and under the preload (ATLAS_TRACE=1, ATLAS_REDZONE=N):
 * the difference is the ledger's and the red zones' bookkeeping, which must
 * not grow with the number of live allocations.
 *   alloc_bench LIVE [PAIRS] [async]
 * async: cuMemFreeAsync and cuMemAllocAsync on the legacy stream, as PyTorch's
 * cudaMallocAsync backend (the pool red zones route it to) makes them.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Under callgrind --instr-atstart=no only the timed rounds are counted:
 * building a million live allocations under full instrumentation would take
 * most of an hour. Outside valgrind these are a few no-op instructions. */
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static CUdeviceptr *keep;
static long live;
static int async;

static CUresult pair_free(CUdeviceptr p)
{
    return async ? cuMemFreeAsync(p, NULL) : cuMemFree(p);
}

static CUresult pair_alloc(CUdeviceptr *p)
{
    return async ? cuMemAllocAsync(p, 256, NULL) : cuMemAlloc(p, 256);
}

/* Each round frees one live allocation, picked pseudo-randomly as a program
 * without a caching allocator frees them, and allocates its replacement: the
 * live set keeps its size and the ledger sees inserts and removals all over
 * its address range. */
static int pairs(long n)
{
    static unsigned long long x = 88172645463325252ULL;
    for (long i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        CUdeviceptr *slot = &keep[live ? (long)(x % (unsigned long long)live) : 0];
        if (live && pair_free(*slot) != CUDA_SUCCESS)
            return 1;
        if (pair_alloc(slot) != CUDA_SUCCESS)
            return 1;
        if (!live && pair_free(*slot) != CUDA_SUCCESS)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    live = argc > 1 ? atol(argv[1]) : 10;
    long n = argc > 2 ? atol(argv[2]) : 20000;
    async = argc > 3 && argv[3][0] == 'a';
    CUdevice dev;
    CUcontext ctx;
    if (live < 0 || n <= 0 || cuInit(0) || cuDeviceGet(&dev, 0) ||
        cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) {
        fprintf(stderr, "alloc_bench: setup failed\n");
        return 1;
    }
    keep = malloc((size_t)(live ? live : 1) * sizeof *keep);
    if (!keep)
        return 1;
    for (long i = 0; i < live; i++)
        if (cuMemAlloc(&keep[i], 256) != CUDA_SUCCESS) {
            fprintf(stderr, "alloc_bench: allocation %ld of %ld failed\n", i, live);
            return 1;
        }
    if (pairs(n / 10 + 1))
        return 1;
    CALLGRIND_START_INSTRUMENTATION;
    double t0 = now_ns();
    if (pairs(n))
        return 1;
    double t1 = now_ns();
    CALLGRIND_STOP_INSTRUMENTATION;
    printf("pair%s %ld %.1f\n", async ? "-async" : "", live, (t1 - t0) / (double)n);
    /* the live set is left to process exit, as a leaking program would */
    return 0;
}
