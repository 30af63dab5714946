/*
 * libatlaslaunch example: y = a*x + y through the typed builder, then the same launch with a
 * mistake (a double where the kernel takes a float), which the builder refuses before it
 * reaches the GPU.
 *
 *   make build/examples/launch_saxpy && build/examples/launch_saxpy
 *   cc launch_saxpy.c $(pkg-config --cflags --libs atlaslaunch)     # once installed
 */
#include <atlas/launch.h>

#include <cuda.h>
#include <stdio.h>

/* extern "C" __global__ void saxpy(float *y, const float *x, float a, unsigned n), as PTX so
 * that this example is plain C; the driver compiles it for the GPU at load time. */
static const char saxpy_ptx[] = ".version 8.0\n"
                                ".target sm_80\n"
                                ".address_size 64\n"
                                ".visible .entry saxpy(.param .u64 y, .param .u64 x,\n"
                                "                      .param .f32 a, .param .u32 n)\n"
                                "{\n"
                                "  .reg .pred %p<2>; .reg .b32 %r<6>; .reg .f32 %f<5>;\n"
                                "  .reg .b64 %rd<8>;\n"
                                "  ld.param.u64 %rd1, [y];\n"
                                "  ld.param.u64 %rd2, [x];\n"
                                "  ld.param.f32 %f1, [a];\n"
                                "  ld.param.u32 %r1, [n];\n"
                                "  mov.u32 %r2, %ctaid.x;\n"
                                "  mov.u32 %r3, %ntid.x;\n"
                                "  mov.u32 %r4, %tid.x;\n"
                                "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
                                "  setp.ge.u32 %p1, %r5, %r1;\n"
                                "  @%p1 bra DONE;\n"
                                "  cvta.to.global.u64 %rd3, %rd1;\n"
                                "  cvta.to.global.u64 %rd4, %rd2;\n"
                                "  mul.wide.u32 %rd5, %r5, 4;\n"
                                "  add.s64 %rd6, %rd3, %rd5;\n"
                                "  add.s64 %rd7, %rd4, %rd5;\n"
                                "  ld.global.f32 %f2, [%rd7];\n"
                                "  ld.global.f32 %f3, [%rd6];\n"
                                "  fma.rn.f32 %f4, %f1, %f2, %f3;\n"
                                "  st.global.f32 [%rd6], %f4;\n"
                                "DONE:\n"
                                "  ret;\n"
                                "}\n";

#define N 10000u

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            cuGetErrorName(r_, &s_);                                                               \
            fprintf(stderr, "launch_saxpy: %s: %s\n", #call, s_);                                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction saxpy;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, saxpy_ptx));
    CHECK(cuModuleGetFunction(&saxpy, mod, "saxpy"));

    static float hx[N], hy[N];
    for (unsigned i = 0; i < N; i++) {
        hx[i] = (float)i;
        hy[i] = 1.0f;
    }
    CUdeviceptr x, y;
    CHECK(cuMemAlloc(&x, sizeof(hx)));
    CHECK(cuMemAlloc(&y, sizeof(hy)));
    CHECK(cuMemcpyHtoD(x, hx, sizeof(hx)));
    CHECK(cuMemcpyHtoD(y, hy, sizeof(hy)));

    /* y = 2x + y: the shape, then one short line per argument */
    struct atlas_launch b;
    atlas_launch_init(&b, saxpy);
    atlas_launch_cover(&b, N, 256);
    atlas_arg_ptr(&b, y);
    atlas_arg_ptr(&b, x);
    atlas_arg_f32(&b, 2.0f);
    atlas_arg_u32(&b, N);
    if (atlas_launch(&b, NULL) != CUDA_SUCCESS) {
        fprintf(stderr, "launch_saxpy: %s\n", atlas_launch_error(&b));
        return 1;
    }
    CHECK(cuMemcpyDtoH(hy, y, sizeof(hy)));
    unsigned wrong = 0;
    for (unsigned i = 0; i < N; i++)
        wrong += hy[i] != 2.0f * (float)i + 1.0f;
    printf("saxpy: %u of %u results wrong\n", wrong, N);

    /* The same launch with a double for the float `a`: refused, nothing runs. */
    atlas_launch_init(&b, saxpy);
    atlas_launch_cover(&b, N, 256);
    atlas_arg_ptr(&b, y);
    atlas_arg_ptr(&b, x);
    atlas_arg_f64(&b, 2.0);
    atlas_arg_u32(&b, N);
    CUresult r = atlas_launch(&b, NULL);
    printf("with a double for a float: %s\n",
           r == CUDA_SUCCESS ? "launched (not refused!)" : atlas_launch_error(&b));

    cuMemFree(x);
    cuMemFree(y);
    cuModuleUnload(mod);
    cuDevicePrimaryCtxRelease(dev);
    return wrong == 0 && r == CUDA_ERROR_INVALID_VALUE ? 0 : 1;
}
