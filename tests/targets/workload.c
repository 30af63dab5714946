#include "workload.h"

#include "../fake/fakecuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* scale(float *x, float a, unsigned n): x[i] = x[i] * a + 1 */
static CUresult k_scale(const struct fake_launch *l, void **params)
{
    float *x = *(float **)params[0];
    float a = *(float *)params[1];
    unsigned n = *(unsigned *)params[2];
    (void)l;
    for (unsigned i = 0; i < n; i++)
        x[i] = x[i] * a + 1.0f;
    return CUDA_SUCCESS;
}

static const size_t scale_sizes[] = {8, 4, 4};
static const struct fake_kernel_def kernels[] = {{"scale", k_scale, 3, scale_sizes, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 1, kernels};

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "workload: %s failed: %d\n", #call, (int)r_);                          \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* The fake's control functions, found at run time so the target programs
 * need not link libcuda (the dlsym and cuGetProcAddress paths must not). */
static int (*fail_next)(const char *, CUresult);

static void find_controls(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        fail_next = (int (*)(const char *, CUresult))dlsym(h, "fake_fail_next");
}

int wl_setup(const struct wl_api *api, CUfunction *scale)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CHECK(api->Init(0));
    find_controls();
    CHECK(api->DeviceGet(&dev, 0));
    CHECK(api->PrimaryCtxRetain(&ctx, dev));
    CHECK(api->CtxSetCurrent(ctx));
    CHECK(api->ModuleLoadData(&mod, &image));
    CHECK(api->ModuleGetFunction(scale, mod, "scale"));
    return 0;
}

int wl_run(const struct wl_api *api, CUfunction scale, int tag, int inject)
{
    float host[WL_N], out[WL_N];
    CUdeviceptr x, y, z;
    unsigned n = WL_N;
    float a = 2.0f;
    void *params[] = {&x, &a, &n};

    for (unsigned i = 0; i < WL_N; i++)
        host[i] = (float)(i + tag);
    CHECK(api->MemAlloc(&x, sizeof host));
    CHECK(api->MemAlloc(&y, sizeof host));
    CHECK(api->MemcpyHtoD(x, host, sizeof host));
    for (int i = 0; i < WL_LAUNCHES; i++)
        CHECK(api->LaunchKernel(scale, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    CHECK(api->MemsetD32Async(y, 0x3f800000u, WL_N, NULL));
    CHECK(api->StreamSynchronize(NULL));
    CHECK(api->CtxSynchronize());
    CHECK(api->MemcpyDtoH(out, x, sizeof out));
    for (unsigned i = 0; i < WL_N; i++) {
        float want = host[i];
        for (int k = 0; k < WL_LAUNCHES; k++)
            want = want * 2.0f + 1.0f;
        if (out[i] != want) {
            fprintf(stderr, "workload: x[%u] = %g, want %g\n", i, out[i], want);
            return 1;
        }
    }
    CHECK(api->MemFree(x));
    CHECK(api->MemFree(y));

    /* Errors from the driver must reach the program unchanged. */
    if (!inject)
        return 0;
    if (!fail_next) {
        fprintf(stderr, "workload: the fake driver's controls are missing\n");
        return 1;
    }
    fail_next("cuMemAlloc_v2", CUDA_ERROR_OUT_OF_MEMORY);
    CUresult r = api->MemAlloc(&z, 1024);
    if (r != CUDA_ERROR_OUT_OF_MEMORY) {
        fprintf(stderr, "workload: injected OOM came back as %d\n", (int)r);
        return 1;
    }
    r = api->LaunchKernel(scale, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL);
    if (r != CUDA_ERROR_INVALID_VALUE) {
        fprintf(stderr, "workload: launch without parameters returned %d, want %d\n", (int)r,
                (int)CUDA_ERROR_INVALID_VALUE);
        return 1;
    }
    return 0;
}

void wl_print_fake_counts(void)
{
    static const char *const names[] = {
#define ATL_HOOK(sym, kind, flags) #sym,
#include "../../hooks/hooks.def"
#undef ATL_HOOK
    };
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    unsigned long (*calls)(const char *) =
        h ? (unsigned long (*)(const char *))dlsym(h, "fake_calls") : NULL;
    if (!calls)
        return;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        unsigned long c = calls(names[i]);
        if (c)
            printf("fake: %s %lu\n", names[i], c);
    }
}
