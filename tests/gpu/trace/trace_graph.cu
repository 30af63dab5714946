// A CUDA graph captured once and replayed ten times, a stream sync after
// each replay (the default step end). The captured launches belong to the
// capture, not to the first eager step, so every step holds one graph
// launch and ATLAS_TRACE=1 must report nothing (tests/gpu/trace/run_trace.sh).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(float *x, float v)
{
    x[threadIdx.x] = v;
}

__global__ void scale(float *out, const float *in, float s)
{
    out[threadIdx.x] = in[threadIdx.x] * s;
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
    const int replays = 10;
    float *x, *y;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&x, 32 * sizeof(float)));
    CHECK(cudaMalloc(&y, 32 * sizeof(float)));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    fill<<<1, 32, 0, s>>>(x, 10.0f);
    scale<<<1, 32, 0, s>>>(y, x, 2.0f);
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    for (int i = 0; i < replays; i++) {
        CHECK(cudaGraphLaunch(ge, s));
        CHECK(cudaStreamSynchronize(s));
    }
    float h[32];
    CHECK(cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    CHECK(cudaStreamDestroy(s));
    // no eager op before the replays: the only steps of this stream are the
    // ten replays (the final copy is on the legacy stream, a kind of its own)
    printf("%s: result %.1f\n", h[0] == 20.0f ? "ok" : "FAIL", h[0]);
    return h[0] == 20.0f ? 0 : 1;
}
