// Real-GPU tests of libatlaslaunch (Hopper: built with -arch=sm_90a).
//
//   launch_gpu_test          mixed arguments, a TMA tile copy, a refused wrong size
//   launch_gpu_test fault    under ATLAS_DEBUG_SYNC_KERNELS=1: a faulting kernel is reported
//                            by its own launch (run in its own process: the fault poisons the
//                            context)
//
// Every check prints one PASS or FAIL line; the exit status is the number of failures.
#include "atlas/launch.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(bool ok, const char *what)
{
    printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
    if (!ok)
        failures++;
}

#define CHECK_RT(call)                                                                             \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            printf("FAIL: %s: %s\n", #call, cudaGetErrorString(e_));                              \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// ---- a kernel with every kind of argument ----------------------------------------------------

struct Params {
    float a;
    float b;
    int c;
    double d; // 8-aligned: the struct is 24 bytes with 4 bytes of padding after c
};

extern "C" __global__ void mixed(float *out, unsigned n, float scale, unsigned long long offset,
                                 Params p, int neg, long long big, double dd,
                                 unsigned long long *echo)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        echo[0] = n;
        echo[1] = __float_as_uint(scale);
        echo[2] = offset;
        echo[3] = __float_as_uint(p.a);
        echo[4] = __float_as_uint(p.b);
        echo[5] = (unsigned)p.c;
        echo[6] = (unsigned long long)__double_as_longlong(p.d);
        echo[7] = (unsigned)neg;
        echo[8] = (unsigned long long)big;
        echo[9] = (unsigned long long)__double_as_longlong(dd);
    }
    if (i < n)
        out[i] = scale * (float)i + (float)offset + p.a * p.b + (float)p.c + (float)p.d +
                 (float)neg + (float)(big + (1ll << 40)) + (float)dd;
}

static float mixed_expected(unsigned i)
{
    // scale 2, offset 100, a*b 3, c 3, d 0.25, neg -5, big + 2^40 = 0, dd 0.5: all exact
    return 2.0f * (float)i + 100.0f + 3.0f + 3.0f + 0.25f - 5.0f + 0.0f + 0.5f;
}

static void add_mixed_args(struct atlas_launch *b, float *out, unsigned n, const Params &p,
                           unsigned long long *echo)
{
    atlas_arg_ptr(b, (CUdeviceptr)out);
    atlas_arg_u32(b, n);
    atlas_arg_f32(b, 2.0f);
    atlas_arg_u64(b, 100);
    atlas_arg_struct(b, p);
    atlas_arg_i32(b, -5);
    atlas_arg_i64(b, -(1ll << 40));
    atlas_arg_f64(b, 0.5);
    atlas_arg_ptr(b, (CUdeviceptr)echo);
}

static void test_mixed(bool through_cukernel)
{
    const unsigned n = 1000;
    float *out;
    unsigned long long *echo;
    CHECK_RT(cudaMalloc(&out, n * sizeof(float)));
    CHECK_RT(cudaMalloc(&echo, 10 * sizeof(unsigned long long)));
    CHECK_RT(cudaMemset(out, 0xFF, n * sizeof(float)));
    Params p = {1.5f, 2.0f, 3, 0.25};

    struct atlas_launch b;
    if (through_cukernel) {
        cudaKernel_t k;
        CHECK_RT(cudaGetKernel(&k, (const void *)mixed));
        atlas_launch_init_kernel(&b, (CUkernel)k);
    } else {
        cudaFunction_t f;
        CHECK_RT(cudaGetFuncBySymbol(&f, (const void *)mixed));
        atlas_launch_init(&b, (CUfunction)f);
    }
    atlas_launch_cover(&b, n, 128);
    add_mixed_args(&b, out, n, p, echo);
    CUresult r = atlas_launch(&b, 0);
    CHECK_RT(cudaDeviceSynchronize());

    float host[n];
    unsigned long long e[10];
    CHECK_RT(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
    CHECK_RT(cudaMemcpy(e, echo, sizeof(e), cudaMemcpyDeviceToHost));
    unsigned bad = 0;
    for (unsigned i = 0; i < n; i++)
        bad += host[i] != mixed_expected(i);
    double pd = 0.25, dd = 0.5;
    unsigned long long pd_bits, dd_bits;
    memcpy(&pd_bits, &pd, 8);
    memcpy(&dd_bits, &dd, 8);
    unsigned long long want[10] = {n,       0x40000000ull,
                                   100,     0x3FC00000ull,
                                   0x40000000ull, 3,
                                   pd_bits, 0xFFFFFFFBull,
                                   (unsigned long long)-(1ll << 40), dd_bits};
    char what[160];
    snprintf(what, sizeof(what),
             "mixed ptr/u32/f32/u64/struct/i32/i64/f64 arguments via %s: launch=%d, %u of %u "
             "results wrong",
             through_cukernel ? "CUkernel" : "CUfunction", (int)r, bad, n);
    expect(r == CUDA_SUCCESS && bad == 0, what);
    snprintf(what, sizeof(what), "every argument reaches the kernel bit for bit (%s)",
             through_cukernel ? "CUkernel" : "CUfunction");
    expect(memcmp(e, want, sizeof(e)) == 0, what);
    cudaFree(out);
    cudaFree(echo);
}

static void test_wrong_size_refused(bool through_cukernel)
{
    const unsigned n = 256;
    float *out;
    unsigned long long *echo;
    CHECK_RT(cudaMalloc(&out, n * sizeof(float)));
    CHECK_RT(cudaMalloc(&echo, 10 * sizeof(unsigned long long)));
    CHECK_RT(cudaMemset(out, 0xFF, n * sizeof(float)));
    Params p = {1.5f, 2.0f, 3, 0.25};

    struct atlas_launch b;
    if (through_cukernel) {
        cudaKernel_t k;
        CHECK_RT(cudaGetKernel(&k, (const void *)mixed));
        atlas_launch_init_kernel(&b, (CUkernel)k);
    } else {
        cudaFunction_t f;
        CHECK_RT(cudaGetFuncBySymbol(&f, (const void *)mixed));
        atlas_launch_init(&b, (CUfunction)f);
    }
    atlas_launch_cover(&b, n, 128);
    atlas_arg_ptr(&b, (CUdeviceptr)out);
    atlas_arg_u32(&b, n);
    atlas_arg_f32(&b, 2.0f);
    atlas_arg_u32(&b, 100); // the kernel takes an unsigned long long here
    atlas_arg_struct(&b, p);
    atlas_arg_i32(&b, -5);
    atlas_arg_i64(&b, -(1ll << 40));
    atlas_arg_f64(&b, 0.5);
    atlas_arg_ptr(&b, (CUdeviceptr)echo);
    CUresult r = atlas_launch(&b, 0);
    CHECK_RT(cudaDeviceSynchronize());

    float host[n];
    CHECK_RT(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
    unsigned touched = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned bits;
        memcpy(&bits, &host[i], 4);
        touched += bits != 0xFFFFFFFFu;
    }
    const char *msg = atlas_launch_error(&b);
    printf("      message: %s\n", msg);
    char what[160];
    snprintf(what, sizeof(what), "a u32 for a u64 parameter is refused before launch (%s)",
             through_cukernel ? "CUkernel" : "CUfunction");
    expect(r == CUDA_ERROR_INVALID_VALUE && strstr(msg, "kernel=mixed param=3 expected=8 given=4") &&
               touched == 0,
           what);
    cudaFree(out);
    cudaFree(echo);
}

// ---- a Hopper TMA copy with a CUtensorMap passed by value -----------------------------------

#define G_W 64
#define G_H 64
#define T_W 16
#define T_H 16

extern "C" __global__ void tma_tile(const __grid_constant__ CUtensorMap tmap, float *out, int x0,
                                    int y0)
{
    __shared__ alignas(128) float tile[T_H * T_W];
    __shared__ alignas(8) unsigned long long bar;
    unsigned tile_s = (unsigned)__cvta_generic_to_shared(tile);
    unsigned bar_s = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_s) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_s),
                     "r"((unsigned)sizeof(tile))
                     : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];" ::"r"(tile_s),
                     "l"((unsigned long long)&tmap), "r"(x0), "r"(y0), "r"(bar_s)
                     : "memory");
    }
    __syncthreads();
    unsigned done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(bar_s)
                     : "memory");
    for (unsigned i = threadIdx.x; i < T_H * T_W; i += blockDim.x)
        out[i] = tile[i];
}

static void test_tma(void)
{
    float host[G_H * G_W];
    for (int i = 0; i < G_H * G_W; i++)
        host[i] = (float)i;
    float *g, *out;
    CHECK_RT(cudaMalloc(&g, sizeof(host)));
    CHECK_RT(cudaMalloc(&out, T_H * T_W * sizeof(float)));
    CHECK_RT(cudaMemcpy(g, host, sizeof(host), cudaMemcpyHostToDevice));
    CHECK_RT(cudaMemset(out, 0xFF, T_H * T_W * sizeof(float)));

    CUtensorMap map;
    cuuint64_t dims[2] = {G_W, G_H};
    cuuint64_t strides[1] = {G_W * sizeof(float)};
    cuuint32_t box[2] = {T_W, T_H};
    cuuint32_t estr[2] = {1, 1};
    CUresult er = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, g, dims, strides,
                                         box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                         CU_TENSOR_MAP_SWIZZLE_NONE,
                                         CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    expect(er == CUDA_SUCCESS, "cuTensorMapEncodeTiled");
    if (er != CUDA_SUCCESS)
        return;

    const int x0 = 16, y0 = 32;
    cudaKernel_t k;
    CHECK_RT(cudaGetKernel(&k, (const void *)tma_tile));
    struct atlas_launch b;
    atlas_launch_init_kernel(&b, (CUkernel)k);
    atlas_launch_block(&b, 128, 1, 1);
    atlas_arg_tensormap(&b, &map);
    atlas_arg_ptr(&b, (CUdeviceptr)out);
    atlas_arg_i32(&b, x0);
    atlas_arg_i32(&b, y0);
    CUresult r = atlas_launch(&b, 0);
    cudaError_t sync = cudaDeviceSynchronize();

    float tile[T_H * T_W], want[T_H * T_W];
    CHECK_RT(cudaMemcpy(tile, out, sizeof(tile), cudaMemcpyDeviceToHost));
    for (int rr = 0; rr < T_H; rr++)
        for (int c = 0; c < T_W; c++)
            want[rr * T_W + c] = host[(y0 + rr) * G_W + x0 + c];
    char what[200];
    snprintf(what, sizeof(what),
             "TMA kernel copies a %dx%d tile through a CUtensorMap passed by the builder "
             "(launch=%d, sync=%s)",
             T_H, T_W, (int)r, cudaGetErrorName(sync));
    expect(r == CUDA_SUCCESS && sync == cudaSuccess && memcmp(tile, want, sizeof(tile)) == 0,
           what);
    cudaFree(g);
    cudaFree(out);
}

// ---- ATLAS_DEBUG_SYNC_KERNELS=1: a fault is reported by the launch that caused it ------------

extern "C" __global__ void fault_kernel(int *p)
{
    p[threadIdx.x] = 1;
}

static int test_fault(void)
{
    cudaFunction_t f;
    CHECK_RT(cudaGetFuncBySymbol(&f, (const void *)fault_kernel));
    struct atlas_launch b;
    atlas_launch_init(&b, (CUfunction)f);
    atlas_launch_grid(&b, 1, 1, 1);
    atlas_launch_block(&b, 32, 1, 1);
    atlas_arg_ptr(&b, (CUdeviceptr)0x8); // unmapped
    CUresult r = atlas_launch(&b, 0);
    const char *msg = atlas_launch_error(&b);
    printf("      message: %s\n", msg);
    expect(r == CUDA_ERROR_ILLEGAL_ADDRESS && strstr(msg, "kernel=fault_kernel") &&
               strstr(msg, "grid=(1,1,1) block=(32,1,1) shared=0"),
           "ATLAS_DEBUG_SYNC_KERNELS=1 reports an async fault at its own launch");
    return failures;
}

int main(int argc, char **argv)
{
    CHECK_RT(cudaSetDevice(0));
    CHECK_RT(cudaFree(0)); // makes the primary context current for the driver calls
    if (argc > 1 && strcmp(argv[1], "fault") == 0)
        return test_fault();

    test_mixed(false);
    test_mixed(true);
    test_tma();
    test_wrong_size_refused(false);
    test_wrong_size_refused(true);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures;
}
