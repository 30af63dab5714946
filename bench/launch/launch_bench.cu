// Cost of the builder over a hand-packed cuLaunchKernel of the same empty 8-parameter kernel.
//
// Each rep enqueues LAUNCHES launches one way and waits for the stream; reps of the two ways
// alternate (and alternate which goes first) so that clock and driver drift hit both alike.
// Prints the median ns per launch of each and their ratio; exits 1 if the ratio is over the
// bar (1.02). Also prints the builder's host cost alone (build and check, no launch), which
// does not depend on the driver.
#include "atlas/launch.h"

#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LAUNCHES 1000
#define REPS 41
#define BAR 1.02

extern "C" __global__ void empty8(float *a, float *b, unsigned n, unsigned m, float s,
                                  unsigned long long off, int k, double d)
{
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static CUfunction fn;
static CUstream stream;
static CUdeviceptr pa, pb;

static double rep_hand(void)
{
    double t0 = now_ns();
    for (unsigned i = 0; i < LAUNCHES; i++) {
        CUdeviceptr a = pa, b = pb;
        unsigned n = i, m = 7;
        float s = 1.5f;
        unsigned long long off = i;
        int k = -3;
        double d = 0.5;
        void *params[8] = {&a, &b, &n, &m, &s, &off, &k, &d};
        if (cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, NULL) != CUDA_SUCCESS)
            exit(2);
    }
    cuStreamSynchronize(stream);
    return (now_ns() - t0) / LAUNCHES;
}

static inline void build(struct atlas_launch *b, unsigned i)
{
    atlas_launch_init(b, fn);
    atlas_launch_grid(b, 1, 1, 1);
    atlas_launch_block(b, 32, 1, 1);
    atlas_arg_ptr(b, pa);
    atlas_arg_ptr(b, pb);
    atlas_arg_u32(b, i);
    atlas_arg_u32(b, 7);
    atlas_arg_f32(b, 1.5f);
    atlas_arg_u64(b, i);
    atlas_arg_i32(b, -3);
    atlas_arg_f64(b, 0.5);
}

static double rep_builder(void)
{
    double t0 = now_ns();
    for (unsigned i = 0; i < LAUNCHES; i++) {
        struct atlas_launch b;
        build(&b, i);
        if (atlas_launch(&b, stream) != CUDA_SUCCESS)
            exit(2);
    }
    cuStreamSynchronize(stream);
    return (now_ns() - t0) / LAUNCHES;
}

static double median(double *v, int n)
{
    std::sort(v, v + n);
    return v[n / 2];
}

int main(void)
{
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "launch_bench: no CUDA device\n");
        return 2;
    }
    cudaFunction_t f;
    cudaGetFuncBySymbol(&f, (const void *)empty8);
    fn = (CUfunction)f;
    cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    cuMemAlloc(&pa, 256);
    cuMemAlloc(&pb, 256);

    // warm up both paths (module load, the builder's layout cache)
    for (int i = 0; i < 3; i++) {
        rep_hand();
        rep_builder();
    }
    double hand[REPS], built[REPS];
    for (int r = 0; r < REPS; r++) {
        if (r % 2 == 0) {
            hand[r] = rep_hand();
            built[r] = rep_builder();
        } else {
            built[r] = rep_builder();
            hand[r] = rep_hand();
        }
    }
    double mh = median(hand, REPS), mb = median(built, REPS);

    // the builder's host work alone: build and read back, no driver call
    volatile unsigned sink = 0;
    double t0 = now_ns();
    for (unsigned i = 0; i < 100000; i++) {
        struct atlas_launch b;
        build(&b, i);
        sink += atlas_launch_slot_count(&b);
    }
    double build_ns = (now_ns() - t0) / 100000;

    double ratio = mb / mh;
    printf("launch-bench: kernel=empty8 params=8 launches=%d reps=%d\n", LAUNCHES, REPS);
    printf("launch-bench: hand-packed cuLaunchKernel median=%.1f ns/launch\n", mh);
    printf("launch-bench: atlas builder           median=%.1f ns/launch\n", mb);
    printf("launch-bench: builder build only (no launch) %.1f ns\n", build_ns);
    printf("launch-bench: ratio=%.4f bar<=%.2f %s\n", ratio, BAR, ratio <= BAR ? "PASS" : "FAIL");
    return ratio <= BAR ? 0 : 1;
}
