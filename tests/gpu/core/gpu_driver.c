/* Real-GPU target: a C program on the driver API, linked against libcuda.
 * Its calls are known exactly; run_core.sh checks atlastrace counted each.
 *   gpu_driver CUBIN */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define LAUNCHES 1000
#define N (1 << 16)

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

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUdeviceptr x, y;
    if (argc < 2) {
        fprintf(stderr, "usage: gpu_driver CUBIN\n");
        return 2;
    }
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoad(&mod, argv[1]));
    CHECK(cuModuleGetFunction(&f, mod, "scale"));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    float *host = malloc(N * sizeof(float)), *pinned;
    for (int i = 0; i < N; i++)
        host[i] = (float)(i % 97) * 0.25f;
    CHECK(cuMemAllocHost((void **)&pinned, N * sizeof(float)));
    CHECK(cuMemAlloc(&x, N * sizeof(float))); /* cuMemAlloc_v2 x2 */
    CHECK(cuMemAlloc(&y, N * sizeof(float)));
    CHECK(cuMemcpyHtoD(x, host, N * sizeof(float))); /* cuMemcpyHtoD_v2 x1 */
    CHECK(cuMemsetD32(y, 0, N));                     /* cuMemsetD32_v2 x1 */
    unsigned n = N;
    float a = 0.5f;
    void *params[] = {&x, &a, &n};
    for (int i = 0; i < LAUNCHES; i++) /* cuLaunchKernel x1000 */
        CHECK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, i % 2 ? s : NULL, params, NULL));
    CHECK(cuStreamSynchronize(s));                             /* cuStreamSynchronize x1 */
    CHECK(cuCtxSynchronize());                                 /* cuCtxSynchronize x2 */
    CHECK(cuMemcpyDtoH(host, x, N * sizeof(float)));           /* cuMemcpyDtoH_v2 x2 */
    CHECK(cuMemcpyDtoHAsync(pinned, x, N * sizeof(float), s)); /* cuMemcpyDtoHAsync_v2 x1 */
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(host, y, sizeof(float)));
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += pinned[i];
    printf("driver: checksum %.6f y0 %.1f\n", sum, host[0]);
    CHECK(cuMemFree(x)); /* cuMemFree_v2 x2 */
    CHECK(cuMemFree(y));
    CHECK(cuMemFreeHost(pinned));
    CHECK(cuStreamDestroy(s));
    CHECK(cuModuleUnload(mod));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    free(host);
    return 0;
}
