/*
 * A caching allocator's steady state under the step trace, against the fake driver (issue
 * #43). Every step launches LAUNCHES kernels whose two pointer arguments rotate over LIVE live
 * allocations (each launch is handed other blocks than the step before, as PyTorch's pool
 * hands intermediates out), and frees and makes CHURN of them again, all through
 * libchurn's chains (bench/trace/churn_lib.c: a library with a large symbol table, CHURN_VIA
 * call chains meeting at one stack address). So every step end finds 2 x LAUNCHES pointers
 * that moved to another buffer, whose allocations and frees were made deep in a large module:
 * what a report would name, and must not name on the hook's path.
 *
 *   trace_churn STEPS [LIVE [LAUNCHES [CHURN]]]
 *     prints "step_us X" (the median wall time of a step, the sync that ends it included,
 *     over the steps after the first 3) and "steps N"
 *   trace_churn STEPS LIVE LAUNCHES CHURN count
 *     the same steps, nothing timed (for callgrind: instructions per step are the difference
 *     between two step counts)
 */
#include "../../tests/fake/fakecuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

CUresult churn_alloc(int via, CUdeviceptr *p, size_t n);
CUresult churn_free(int via, CUdeviceptr p);

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "trace_churn: %s failed: %d\n", #call, (int)r_);                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUresult k_pair(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_SUCCESS;
}

static const size_t pair_sizes[3] = {8, 8, 4};
static const struct fake_kernel_def kernels[] = {{"pair", k_pair, 3, pair_sizes, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 1, kernels};

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 20;
    long live = argc > 2 ? atol(argv[2]) : 2000;
    long launches = argc > 3 ? atol(argv[3]) : 600;
    long churn = argc > 4 ? atol(argv[4]) : 8;
    int timed = !(argc > 5 && strcmp(argv[5], "count") == 0);
    if (steps < 1 || live < 2 || launches < 1 || churn < 0 || churn > live) {
        fprintf(stderr, "usage: trace_churn STEPS [LIVE [LAUNCHES [CHURN]]] [count]\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction pair;
    CUstream stream;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, &image));
    CHECK(cuModuleGetFunction(&pair, mod, "pair"));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr *p = calloc((size_t)live, sizeof *p);
    double *t = calloc((size_t)steps, sizeof *t);
    if (!p || !t)
        return 1;
    for (long i = 0; i < live; i++)
        CHECK(churn_alloc((int)i, &p[i], 1024));
    CHECK(cuStreamSynchronize(stream));
    unsigned n = 64;
    for (long s = 0; s < steps; s++) {
        double t0 = now_us();
        for (long j = 0; j < churn; j++) {
            long i = (s * churn + j * 251) % live;
            CHECK(churn_free((int)(s + j), p[i]));
            CHECK(churn_alloc((int)(s * churn + j), &p[i], 1024));
        }
        for (long i = 0; i < launches; i++) {
            CUdeviceptr a = p[(i + s * 37) % live], b = p[(i * 7 + s * 101 + 1) % live];
            void *args[] = {&a, &b, &n};
            CHECK(cuLaunchKernel(pair, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL));
        }
        CHECK(cuStreamSynchronize(stream));
        t[s] = now_us() - t0;
    }
    if (timed) {
        long from = steps > 6 ? 3 : 0;
        qsort(t + from, (size_t)(steps - from), sizeof *t, cmp_double);
        printf("step_us %.1f\nsteps %ld\n", t[from + (steps - from) / 2], steps);
    }
    for (long i = 0; i < live; i++)
        CHECK(churn_free((int)i, p[i]));
    free(p);
    free(t);
    return 0;
}
