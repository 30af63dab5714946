// A step loop with two host values leaking into kernel arguments: the step
// index (add_step, arg1) and a buffer allocated afresh each step (scale,
// arg0). Everything else is the same every step. Under ATLAS_TRACE=1 the
// report must name exactly those two parameters (tests/gpu/trace/run_trace.sh).
// Steps are marked with atlas/trace.h (ATLAS_STEP=api), so the setup and the
// final copy are outside them; without the preload the markers do nothing.
#include <atlas/trace.h>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void add_step(float *x, int step)
{
    x[threadIdx.x] += (float)step;
}

__global__ void scale(float *out, const float *in, float s)
{
    out[threadIdx.x] = in[threadIdx.x] * s;
}

__global__ void touch(float *x, int n)
{
    if ((int)threadIdx.x < n)
        x[threadIdx.x] *= 1.0f;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            printf("FAIL: %s: %s\n", #call, cudaGetErrorString(e_));                               \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main()
{
    const int steps = 5;
    float *x, *fresh[steps];
    CHECK(cudaMalloc(&x, 32 * sizeof(float)));
    CHECK(cudaMemset(x, 0, 32 * sizeof(float)));
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < steps; i++) {
        // kept until the end, so each step's buffer is a new allocation
        CHECK(cudaMalloc(&fresh[i], 32 * sizeof(float)));
        atlas_step_begin("loop");
        touch<<<1, 32>>>(x, 32);
        add_step<<<1, 32>>>(x, i);
        scale<<<1, 32>>>(fresh[i], x, 2.0f);
        touch<<<1, 32>>>(x, 32);
        atlas_step_end();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
    }
    float h[32];
    CHECK(cudaMemcpy(h, fresh[steps - 1], sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < steps; i++)
        CHECK(cudaFree(fresh[i]));
    CHECK(cudaFree(x));
    // x = 0+1+2+3+4 = 10, doubled
    printf("%s: result %.1f\n", h[0] == 20.0f ? "ok" : "FAIL", h[0]);
    return h[0] == 20.0f ? 0 : 1;
}
