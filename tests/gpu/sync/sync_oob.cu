// A CUDA program with one out-of-bounds kernel among hundreds of good
// launches (make sync-gpu-check). Launch 500 (0-based) writes far outside any
// allocation; the fault surfaces at the next synchronising call, long after.
// Prints which launch first reported an error, what the later calls
// returned, and the time per good launch (for the debug-sync cost).
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void good_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * 0.5f + 1.0f;
}

__global__ void oob_kernel(float *x, long off)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *(volatile float *)(x + off) = 1.0f; // 256 GiB past the buffer: unmapped
}

int main()
{
    const int n = 1 << 12, good_before = 500, good_after = 3;
    float *x;
    if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess) {
        printf("FAIL: cudaMalloc\n");
        return 1;
    }
    cudaMemset(x, 0, n * sizeof(float));
    cudaDeviceSynchronize();
    // timed: good launches only (the debug-sync cost per launch)
    auto t0 = std::chrono::steady_clock::now();
    int first_bad = -1;
    cudaError_t first_err = cudaSuccess;
    for (int i = 0; i < good_before; i++) {
        good_kernel<<<n / 256, 256>>>(x, n);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess && first_bad < 0)
            first_bad = i, first_err = e;
    }
    cudaDeviceSynchronize();
    auto t1 = std::chrono::steady_clock::now();
    printf("good launches: %.2f us/launch\n",
           std::chrono::duration<double, std::micro>(t1 - t0).count() / good_before);
    oob_kernel<<<1, 32>>>(x, 1L << 36);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess && first_bad < 0)
        first_bad = good_before, first_err = e;
    for (int i = 0; i < good_after; i++) {
        good_kernel<<<n / 256, 256>>>(x, n);
        e = cudaGetLastError();
        if (e != cudaSuccess && first_bad < 0)
            first_bad = good_before + 1 + i, first_err = e;
    }
    printf("first failing launch: %d (%s)\n", first_bad, cudaGetErrorName(first_err));
    printf("sync returned: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    float h[4];
    printf("memcpy returned: %s\n", cudaGetErrorName(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost)));
    return 0;
}
