// The real-program matrix's nvcc program (static cudart, nvcc's default): a loop of steps as
// CUDA C++ code writes them. Each step makes a scratch buffer, launches 64 kernels through
// <<<>>> (a buffer pair that swaps every launch, a scalar), copies 4 bytes back (a blocking
// copy: the step's end for the step trace) and frees the scratch buffer. Prints
// "ms_per_step X" (timed.h: the median of 5 blocks after a warm-up, the GPU its own).
#include "timed.h"

#include <cuda_runtime.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void axpb(float *y, const float *x, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + 1.0f;
}

static const unsigned n = 1 << 16;
static float *a, *b, h;
static cudaStream_t s;

static void step(void)
{
    float *scratch;
    CK(cudaMalloc(&scratch, 4096));
    for (int i = 0; i < 64; i++) {
        float *y = i % 2 ? a : b, *x = i % 2 ? b : a;
        axpb<<<(n + 255) / 256, 256, 0, s>>>(y, x, 0.5f, n);
    }
    axpb<<<1, 256, 0, s>>>(scratch, a, 2.0f, 256);
    CK(cudaMemcpyAsync(&h, scratch, sizeof h, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaFree(scratch));
}

int main(void)
{
    matrix_gpu_lock();
    CK(cudaMalloc(&a, n * sizeof(float)));
    CK(cudaMalloc(&b, n * sizeof(float)));
    CK(cudaMemset(a, 0, n * sizeof(float)));
    // a memset of device memory may return before it is done, and the legacy stream it runs
    // on does not order the non-blocking stream the steps use: wait for it (ATLAS_RACES named
    // the race on the H100)
    CK(cudaDeviceSynchronize());
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    printf("model nvcc static cudart: 65 launches, a 4-byte copy back, a cudaMalloc/cudaFree a step\n");
    matrix_timed(step, 20, 40);
    CK(cudaFree(a));
    CK(cudaFree(b));
    return 0;
}
