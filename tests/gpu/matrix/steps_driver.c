/* The real-program matrix's driver-API program (C, linked against libcuda): a loop of steps.
 * Each step makes a scratch allocation, launches scale() 64 times over 8 buffers in turn,
 * sets the scratch buffer, reads 16 bytes back (cuMemcpyDtoH: a blocking copy, the step's end
 * for the step trace) and frees it. Prints "ms_per_step X", the median of 5 blocks after a
 * warm-up, the GPU its own (timed.h).
 *   steps_driver CUBIN  (build/gpu/kern.cubin: tests/gpu/core/kern.cu) */
#include "timed.h"

#include <cuda.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            cuGetErrorName(r_, &s_);                                                               \
            fprintf(stderr, "%s failed: %s\n", #call, s_);                                         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define N (1u << 16)

static CUfunction scale;
static CUstream stream;
static CUdeviceptr bufs[8];

static void step(void)
{
    CUdeviceptr scratch;
    float host[4];
    unsigned n = N;
    float a = 0.5f;
    CK(cuMemAlloc(&scratch, 4096));
    for (int i = 0; i < 64; i++) {
        void *args[] = {&bufs[i % 8], &a, &n};
        CK(cuLaunchKernel(scale, (N + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL));
    }
    CK(cuMemsetD8Async(scratch, 0, 4096, stream));
    CK(cuStreamSynchronize(stream));
    CK(cuMemcpyDtoH(host, scratch, sizeof host));
    CK(cuMemFree(scratch));
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    if (argc < 2) {
        fprintf(stderr, "usage: steps_driver CUBIN\n");
        return 2;
    }
    matrix_gpu_lock();
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoad(&mod, argv[1]));
    CK(cuModuleGetFunction(&scale, mod, "scale"));
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 8; i++) {
        CK(cuMemAlloc(&bufs[i], N * sizeof(float)));
        CK(cuMemsetD32(bufs[i], 0, N));
    }
    /* a memset of device memory may return before it is done, and the legacy stream it runs
     * on does not order the non-blocking stream the steps use: wait for it (ATLAS_RACES named
     * the race on the H100) */
    CK(cuCtxSynchronize());
    printf("model driver API (-lcuda): 64 launches, a memset, a 16-byte cuMemcpyDtoH, "
           "cuMemAlloc/cuMemFree a step\n");
    matrix_timed(step, 20, 40);
    for (int i = 0; i < 8; i++)
        CK(cuMemFree(bufs[i]));
    return 0;
}
