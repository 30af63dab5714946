// Eager against captured (issue #30): a step's work captured into a CUDA
// graph with the scalar 17 baked in (replayed once), then the same work run
// eagerly for 20 steps with the scalar 18, 19, ...; each step ends with a
// stream sync. Under ATLAS_TRACE=1 (steps at syncs) the report compares the
// eager steps with the capture and must name the scalar (scale_add's arg1)
// and nothing else (tests/gpu/trace/run_programs.sh).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(float *x, int n)
{
    if ((int)threadIdx.x < n)
        x[threadIdx.x] = 1.0f;
}

__global__ void scale_add(float *x, float s, const float *y, int n)
{
    if ((int)threadIdx.x < n)
        x[threadIdx.x] = x[threadIdx.x] * s + y[threadIdx.x];
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            printf("FAIL: %s: %s\n", #call, cudaGetErrorString(e_));                               \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static void work(cudaStream_t st, float *x, const float *y, float s)
{
    fill<<<1, 32, 0, st>>>(x, 32);
    scale_add<<<1, 32, 0, st>>>(x, s, y, 32);
}

int main()
{
    float *x, *y;
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&x, 32 * sizeof(float)));
    CHECK(cudaMalloc(&y, 32 * sizeof(float)));
    CHECK(cudaMemsetAsync(y, 0, 32 * sizeof(float), st));
    CHECK(cudaStreamSynchronize(st));

    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    work(st, x, y, 17.0f);
    CHECK(cudaStreamEndCapture(st, &g));
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphLaunch(ge, st));
    CHECK(cudaStreamSynchronize(st));

    for (int i = 0; i < 20; i++) {
        work(st, x, y, 18.0f + (float)i);
        CHECK(cudaGetLastError());
        CHECK(cudaStreamSynchronize(st));
    }
    float h;
    CHECK(cudaMemcpy(&h, x, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    // the last step: 1 * 37 + 0
    printf("%s: result %.1f\n", h == 37.0f ? "ok" : "FAIL", h);
    return h == 37.0f ? 0 : 1;
}
