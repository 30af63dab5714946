/*
 * Cost of race detection per launch, without a GPU (make races-bench): the
 * launch loop of cpu_bench's args8 (4 pointers, 2 u32, a float, a u64; a
 * cuCtxSynchronize every 256 launches, so ATLAS_TRACE=1 records 256-op
 * steps), its pointers into four allocations, here typed (two const), as
 * nvcc names such a kernel, against the fake driver:
 *   one  every launch on one stream
 *   two  launches alternating between two non-blocking streams, each on
 *        buffers of its own, the streams waiting for each other's events
 *        every 8 launches (a correct multi-stream program: nothing to report)
 *   untyped  the launches of one, of the same kernel named as extern "C" (no types:
 *        every 8-byte word may write, the u64 scalar too, as in cuBLAS's and
 *        XLA's by-value structs): after its first launches nothing is left to
 *        watch, and the launch is as cheap as one's
 *   layers  a framework's step: one kernel with a 512-byte by-value struct (64
 *        words, three of them pointers, as a GEMM library's parameters) launched
 *        for 8 layers in turn, each layer's pointers into buffers of its own, so
 *        that consecutive launches of the kernel never pass the same words
 * Run natively and under the preload; the difference is ours.
 *   races_bench N            both loops, prints "one NS" and "two NS"
 *                            (nanoseconds per launch, after a warm-up)
 *   races_bench N one|two    only that loop, no timing (for callgrind)
 */
#define _GNU_SOURCE /* program_invocation_short_name, in CHECK */
#include "../../tests/fake/fakecuda.h"
#include "../redzone/bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUresult k_nop(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_SUCCESS;
}

/* args8(float*, float const*, float*, float const*, unsigned, unsigned, float,
 * unsigned long long) */
static const size_t sizes8[8] = {8, 8, 8, 8, 4, 4, 4, 8};
static const size_t sizes_gemm[1] = {512};
static const struct fake_kernel_def kernels[] = {
    {"_Z5args8PfPKfS_S1_jjfy", k_nop, 8, sizes8, NULL},
    {"args8_c", k_nop, 8, sizes8, NULL},
    {"_Z4gemm10GemmParams", k_nop, 1, sizes_gemm, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 3, kernels};

static CUfunction args8, args8_c, gemm, kernel;
static CUdeviceptr buf[8], lbuf[8][3];
static CUstream s1, s2;
static CUevent ev1, ev2;

static int launch(long i, CUstream s, const CUdeviceptr *p)
{
    CUdeviceptr a = p[0], b = p[1], c = p[2], d = p[3];
    unsigned m = 1024, k = 64;
    float alpha = 1.5f;
    unsigned long long seed = 42;
    void *params[8] = {&a, &b, &c, &d, &m, &k, &alpha, &seed};
    if (cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, s, params, NULL) != CUDA_SUCCESS)
        return 1;
    return i % 256 == 255 && cuCtxSynchronize() != CUDA_SUCCESS;
}

static int loop_one(long n)
{
    kernel = args8;
    for (long i = 0; i < n; i++)
        if (launch(i, s1, buf))
            return 1;
    return 0;
}

static int loop_untyped(long n)
{
    kernel = args8_c;
    for (long i = 0; i < n; i++)
        if (launch(i, s1, buf))
            return 1;
    return 0;
}

static int loop_layers(long n)
{
    unsigned long long p[64];
    for (int w = 0; w < 64; w++)
        p[w] = 16 + (unsigned long long)w; /* sizes, strides, leading dimensions */
    for (long i = 0; i < n; i++) {
        const CUdeviceptr *l = lbuf[i % 8];
        p[0] = l[0], p[1] = l[1], p[2] = l[2];
        void *params[1] = {p};
        if (cuLaunchKernel(gemm, 1, 1, 1, 1, 1, 1, 0, s1, params, NULL) != CUDA_SUCCESS)
            return 1;
        if (i % 256 == 255 && cuCtxSynchronize() != CUDA_SUCCESS)
            return 1;
    }
    return 0;
}

static int loop_two(long n)
{
    kernel = args8;
    for (long i = 0; i < n; i++) {
        if (i % 8 == 7 && (cuEventRecord(ev1, s1) || cuStreamWaitEvent(s2, ev1, 0) ||
                           cuEventRecord(ev2, s2) || cuStreamWaitEvent(s1, ev2, 0)))
            return 1;
        if (launch(i, i & 1 ? s2 : s1, i & 1 ? buf + 4 : buf))
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    const char *only = argc > 2 ? argv[2] : NULL;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    if (n <= 0)
        return 2;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, &image));
    CHECK(cuModuleGetFunction(&args8, mod, kernels[0].name));
    CHECK(cuModuleGetFunction(&args8_c, mod, kernels[1].name));
    CHECK(cuModuleGetFunction(&gemm, mod, kernels[2].name));
    CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&ev1, CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventCreate(&ev2, CU_EVENT_DISABLE_TIMING));
    for (int i = 0; i < 8; i++)
        CHECK(cuMemAlloc(&buf[i], 4096));
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 3; j++)
            CHECK(cuMemAlloc(&lbuf[i][j], 65536));
    static const struct {
        const char *name;
        int (*run)(long);
    } loops[] = {{"one", loop_one},
                 {"two", loop_two},
                 {"untyped", loop_untyped},
                 {"layers", loop_layers}};
    const int nloops = 4;
    for (int i = 0; i < nloops; i++)
        if (only && strcmp(only, loops[i].name) == 0)
            return loops[i].run(n);
    if (only) {
        fprintf(stderr, "races_bench: unknown loop '%s' (one, two, untyped, layers)\n", only);
        return 2;
    }
    for (int i = 0; i < nloops; i++)
        if (loops[i].run(n / 10 + 1))
            return 1;
    for (int i = 0; i < nloops; i++) {
        double t = now_us();
        if (loops[i].run(n))
            return 1;
        printf("%s %.2f\n", loops[i].name, (now_us() - t) * 1e3 / (double)n);
    }
    return 0;
}
