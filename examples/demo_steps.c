/*
 * The program `make demo` runs under atlas-trace: three bugs atlastrace is for, in a few lines
 * of driver-API C.
 *
 *   1. Steps that should be the same are not: each "decode step" launches the same two kernels,
 *      but add_pos takes the step number, a host value, as an argument. In a CUDA graph captured
 *      once, that value would be frozen at capture time; `atlas-trace --trace` shows it as the
 *      argument that differs between consecutive steps.
 *   2. The GPU waits for the host: every step copies one value back with a blocking cuMemcpyDtoH
 *      to "check the loss". `atlas-trace --d2h` counts them and names the first.
 *   3. A kernel writes past the end of its buffer: fill is launched for 1004 floats on a
 *      1000-float allocation. Nothing fails; the 16 bytes land in whatever follows.
 *      `atlas-trace --redzone=256` reports the kernel and the allocation.
 *
 *   demo_steps             kernels from the PTX below (a real GPU: the driver compiles it)
 *   demo_steps MODULE      kernels from MODULE (cuModuleLoad): a cubin, or on the project's
 *                          fake driver the host-side module build/tests/front_demo_kernels.so
 *
 * Exits 0 when the arithmetic came out right, 1 otherwise.
 */
#include <cuda.h>
#include <stdio.h>

#define N 1000u
#define STEPS 4u

/* scale(y, x, a, n): y[i] = a * x[i];  add_pos(y, pos, n): y[i] += pos;  fill(p, v, n): p[i] = v */
static const char demo_ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry scale(.param .u64 y, .param .u64 x, .param .f32 a, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<4>; .reg .b64 %rd<8>;\n"
    "  ld.param.u64 %rd1, [y];\n"
    "  ld.param.u64 %rd2, [x];\n"
    "  ld.param.f32 %f1, [a];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n"
    "  @%p1 bra SCALE_DONE;\n"
    "  cvta.to.global.u64 %rd3, %rd1;\n"
    "  cvta.to.global.u64 %rd4, %rd2;\n"
    "  mul.wide.u32 %rd5, %r5, 4;\n"
    "  add.s64 %rd6, %rd3, %rd5;\n"
    "  add.s64 %rd7, %rd4, %rd5;\n"
    "  ld.global.f32 %f2, [%rd7];\n"
    "  mul.f32 %f3, %f2, %f1;\n"
    "  st.global.f32 [%rd6], %f3;\n"
    "SCALE_DONE:\n"
    "  ret;\n"
    "}\n"
    ".visible .entry add_pos(.param .u64 y, .param .u32 pos, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>; .reg .b32 %r<7>; .reg .f32 %f<4>; .reg .b64 %rd<7>;\n"
    "  ld.param.u64 %rd1, [y];\n"
    "  ld.param.u32 %r6, [pos];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n"
    "  @%p1 bra ADD_DONE;\n"
    "  cvta.to.global.u64 %rd3, %rd1;\n"
    "  mul.wide.u32 %rd5, %r5, 4;\n"
    "  add.s64 %rd6, %rd3, %rd5;\n"
    "  cvt.rn.f32.u32 %f1, %r6;\n"
    "  ld.global.f32 %f2, [%rd6];\n"
    "  add.f32 %f3, %f2, %f1;\n"
    "  st.global.f32 [%rd6], %f3;\n"
    "ADD_DONE:\n"
    "  ret;\n"
    "}\n"
    ".visible .entry fill(.param .u64 p, .param .f32 v, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<2>; .reg .b64 %rd<7>;\n"
    "  ld.param.u64 %rd1, [p];\n"
    "  ld.param.f32 %f1, [v];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n"
    "  @%p1 bra FILL_DONE;\n"
    "  cvta.to.global.u64 %rd3, %rd1;\n"
    "  mul.wide.u32 %rd5, %r5, 4;\n"
    "  add.s64 %rd6, %rd3, %rd5;\n"
    "  st.global.f32 [%rd6], %f1;\n"
    "FILL_DONE:\n"
    "  ret;\n"
    "}\n";

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = NULL;                                                                 \
            cuGetErrorName(r_, &s_);                                                               \
            fprintf(stderr, "demo: %s failed: %s (%d)\n", #call, s_ ? s_ : "?", (int)r_);          \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static unsigned blocks(unsigned n)
{
    return (n + 255) / 256;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction scale, add_pos, fill;

    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    /* the primary context, as the CUDA runtime and PyTorch use it */
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    if (argc > 1)
        CHECK(cuModuleLoad(&mod, argv[1]));
    else
        CHECK(cuModuleLoadData(&mod, demo_ptx));
    CHECK(cuModuleGetFunction(&scale, mod, "scale"));
    CHECK(cuModuleGetFunction(&add_pos, mod, "add_pos"));
    CHECK(cuModuleGetFunction(&fill, mod, "fill"));

    CUdeviceptr x, y, small;
    CHECK(cuMemAlloc(&x, N * sizeof(float)));
    CHECK(cuMemAlloc(&y, N * sizeof(float)));
    CHECK(cuMemAlloc(&small, N * sizeof(float)));

    static float host[N];
    for (unsigned i = 0; i < N; i++)
        host[i] = 1.0f;
    CHECK(cuMemcpyHtoD(x, host, sizeof host));

    int ok = 1;
    float a = 2.0f;
    unsigned n = N;
    for (unsigned step = 0; step < STEPS; step++) {
        void *scale_args[] = {&y, &x, &a, &n};
        CHECK(cuLaunchKernel(scale, blocks(n), 1, 1, 256, 1, 1, 0, NULL, scale_args, NULL));
        /* bug 1: `step` is a host value passed by value; a graph would freeze it */
        void *add_args[] = {&y, &step, &n};
        CHECK(cuLaunchKernel(add_pos, blocks(n), 1, 1, 256, 1, 1, 0, NULL, add_args, NULL));
        /* bug 2: a blocking device-to-host copy every step */
        float loss;
        CHECK(cuMemcpyDtoH(&loss, y, sizeof loss));
        printf("demo: step %u: y[0] = %g\n", step, loss);
        ok &= loss == a * 1.0f + (float)step;
        CHECK(cuCtxSynchronize()); /* the end of the step */
    }

    /* bug 3: 1004 floats written into a 1000-float buffer */
    float v = 7.0f;
    unsigned too_many = N + 4;
    void *fill_args[] = {&small, &v, &too_many};
    CHECK(cuLaunchKernel(fill, blocks(too_many), 1, 1, 256, 1, 1, 0, NULL, fill_args, NULL));
    CHECK(cuCtxSynchronize());
    printf("demo: fill wrote %u floats into a buffer of %u (16 bytes past its end)\n", too_many, N);

    CHECK(cuMemFree(small));
    CHECK(cuMemFree(y));
    CHECK(cuMemFree(x));
    CHECK(cuModuleUnload(mod));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("demo: %s\n", ok ? "ok" : "WRONG RESULTS");
    return ok ? 0 : 1;
}
