// Real-GPU target: an nvcc program on the runtime API, built twice (static
// and shared cudart). cudart fetches the driver through cuGetProcAddress, so
// a plain symbol override sees none of these calls.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define LAUNCHES 500
#define N (1 << 16)

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__global__ void scale(float *x, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * a + 1.0f;
}

int main()
{
    float *x, *host = (float *)malloc(N * sizeof(float));
    cudaStream_t s;
    for (int i = 0; i < N; i++)
        host[i] = (float)(i % 89) * 0.5f;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&x, N * sizeof(float)));
    CHECK(cudaMemcpy(x, host, N * sizeof(float), cudaMemcpyHostToDevice)); // 1 HtoD
    CHECK(cudaMemset(x + N / 2, 0, sizeof(float)));                       // 1 memset
    for (int i = 0; i < LAUNCHES; i++)                                     // 500 launches
        scale<<<N / 256, 256, 0, i % 2 ? s : 0>>>(x, 0.75f, N);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));                                       // 1 stream sync
    CHECK(cudaDeviceSynchronize());                                        // 1 device sync
    CHECK(cudaMemcpy(host, x, N * sizeof(float), cudaMemcpyDeviceToHost)); // 1 DtoH
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += host[i];
    printf("cudart: checksum %.6f\n", sum);
    CHECK(cudaFree(x));
    CHECK(cudaStreamDestroy(s));
    free(host);
    return 0;
}
