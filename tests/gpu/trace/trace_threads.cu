// Four host threads, each with its own stream and buffer, each running 50
// identical steps (three kernels, then a sync of its own stream; "ctx": a
// cudaDeviceSynchronize instead). Under ATLAS_TRACE=1 each thread's steps
// are its own, so the report says nothing (tests/gpu/trace/run_trace.sh).
//
//   trace_threads same     named threads (worker-N), stream syncs: no report
//   trace_threads change   worker-2 passes another scalar in its step 20 (and
//                          back in 21): two reports, naming worker-2
//   trace_threads ctx      unnamed threads, device syncs: no report
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <pthread.h>

__global__ void add_step(float *x, int v)
{
    x[threadIdx.x] += (float)v;
}

__global__ void scale(float *x, float s)
{
    x[threadIdx.x] *= s;
}

static const char *mode = "same";
static pthread_barrier_t barrier;
static int failed;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            printf("FAIL: %s: %s\n", #call, cudaGetErrorString(e_));                               \
            failed = 1;                                                                            \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

static void *worker(void *arg)
{
    int t = (int)(long)arg, ctx = strcmp(mode, "ctx") == 0, change = strcmp(mode, "change") == 0;
    if (!ctx) {
        char name[16];
        snprintf(name, sizeof name, "worker-%d", t);
        pthread_setname_np(pthread_self(), name);
    }
    cudaStream_t s;
    float *x;
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&x, 256 * sizeof(float))); // its values do not matter
    // the first sync (a step with nothing in it) makes the thread's ops its
    // own (before, they are lent to whichever thread synchronises); the
    // barrier lets every thread get there before any runs its steps
    CHECK(ctx ? cudaDeviceSynchronize() : cudaStreamSynchronize(s));
    pthread_barrier_wait(&barrier);
    for (int k = 0; k < 50; k++) {
        int v = t * 1000 + (change && t == 2 && k == 20);
        add_step<<<1, 256, 0, s>>>(x, v);
        scale<<<1, 256, 0, s>>>(x, 0.5f);
        add_step<<<1, 256, 0, s>>>(x, -v);
        CHECK(cudaGetLastError());
        CHECK(ctx ? cudaDeviceSynchronize() : cudaStreamSynchronize(s));
    }
    CHECK(cudaFree(x));
    CHECK(cudaStreamDestroy(s));
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        mode = argv[1];
    if (cudaFree(0) != cudaSuccess) { // the context, before the threads
        printf("FAIL: no CUDA device\n");
        return 1;
    }
    pthread_barrier_init(&barrier, NULL, 4);
    pthread_t th[4];
    for (long t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    if (failed)
        return 1;
    printf("ok: 4 threads x 50 steps (%s)\n", mode);
    return 0;
}
