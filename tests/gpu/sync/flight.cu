// The flight recorder on a GPU (make sync-gpu-check): a kernel that faults
// (illegal address) among many good launches, the fault surfacing at the
// sync long after it.
//   flight plain [before] [after]  `before` good launches (300), bad_kernel,
//                                  `after` good launches (300), then a sync
//   flight graph                   the same inside a captured graph: 3 good
//                                  nodes, bad_kernel, 3 good; the graph is
//                                  destroyed once instantiated; launched
//                                  between 100 good launches on each side
// Prints the first launch that returned an error (0-based; -1: none), what
// the sync returned, and the time per good launch before bad_kernel (the
// cost of ATLAS_DEBUG_SYNC_KERNELS=bad_kernel against a native run).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

__global__ void good(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * 0.5f + 1.0f;
}

__global__ void bad_kernel(float *x, long off)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *(volatile float *)(x + off) = 1.0f; // 256 GiB past the buffer: unmapped
}

static const int n = 1 << 12;

// Launches `count` good kernels; notes the first error; returns its index.
static int launch_good(float *x, int count, int base, cudaStream_t s, int *first_bad,
                       cudaError_t *first_err)
{
    for (int i = 0; i < count; i++) {
        good<<<n / 256, 256, 0, s>>>(x, n);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess && *first_bad < 0)
            *first_bad = base + i, *first_err = e;
    }
    return base + count;
}

static int plain(float *x, int before, int after)
{
    int first_bad = -1;
    cudaError_t first_err = cudaSuccess;
    auto t0 = std::chrono::steady_clock::now();
    int at = launch_good(x, before, 0, 0, &first_bad, &first_err);
    auto t1 = std::chrono::steady_clock::now();
    bad_kernel<<<1, 32>>>(x, 1L << 36);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess && first_bad < 0)
        first_bad = at, first_err = e;
    launch_good(x, after, at + 1, 0, &first_bad, &first_err);
    printf("good launches before bad_kernel: %.3f us/launch\n",
           std::chrono::duration<double, std::micro>(t1 - t0).count() / before);
    printf("first failing launch: %d (%s)\n", first_bad, cudaGetErrorName(first_err));
    printf("sync returned: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}

static int graph(float *x)
{
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    int first_bad = -1;
    cudaError_t first_err = cudaSuccess;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess) {
        printf("FAIL: capture\n");
        return 1;
    }
    launch_good(x, 3, 0, s, &first_bad, &first_err);
    bad_kernel<<<1, 32, 0, s>>>(x, 1L << 36);
    launch_good(x, 3, 0, s, &first_bad, &first_err);
    if (cudaStreamEndCapture(s, &g) != cudaSuccess ||
        cudaGraphInstantiateWithFlags(&ge, g, 0) != cudaSuccess) {
        printf("FAIL: instantiate\n");
        return 1;
    }
    cudaGraphDestroy(g); // its nodes are known from the instantiation
    int at = launch_good(x, 100, 0, s, &first_bad, &first_err);
    cudaError_t e = cudaGraphLaunch(ge, s);
    if (e != cudaSuccess && first_bad < 0)
        first_bad = at, first_err = e;
    launch_good(x, 100, at + 1, s, &first_bad, &first_err);
    printf("first failing launch: %d (%s)\n", first_bad, cudaGetErrorName(first_err));
    printf("sync returned: %s\n", cudaGetErrorName(cudaStreamSynchronize(s)));
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "plain";
    float *x;
    if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess) {
        printf("FAIL: cudaMalloc\n");
        return 1;
    }
    cudaMemset(x, 0, n * sizeof(float));
    cudaDeviceSynchronize(); // the last good sync
    if (strcmp(mode, "plain") == 0)
        return plain(x, argc > 2 ? atoi(argv[2]) : 300, argc > 3 ? atoi(argv[3]) : 300);
    if (strcmp(mode, "graph") == 0)
        return graph(x);
    printf("usage: flight plain [before] [after] | flight graph\n");
    return 2;
}
