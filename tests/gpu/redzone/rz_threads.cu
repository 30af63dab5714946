// Red zones at the scale of a real program: 4 threads, each with its own
// non-blocking stream and 1,000 live allocations of its own (4,000 in all,
// plus one odd-sized buffer per thread), each making 600 launches over its
// buffers with a stream sync every 100. In thread 2, launch 300 of the
// thread's own writes 8 bytes past its 1000-byte buffer; `./rz_threads clean`
// makes the same launches without the bug. Every buffer is freed at the end
// (stream-ordered frees on the thread's stream). Prints "ok" and the bad
// launch's grid for the suite to match (tests/gpu/redzone/run_redzone.sh).
#include <cstdio>
#include <cstring>
#include <pthread.h>

__global__ void touch_kernel(float *a, float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[i] = a[i] * 0.5f + b[i];
}

__global__ void tail_kernel(unsigned char *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = (unsigned char)i;
}

enum { THREADS = 4, LIVE = 1000, LAUNCHES = 600, FLOATS = 256, ODD = 1000 };
static int bug;
static int failed;

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    cudaStream_t s;
    float *buf[LIVE];
    unsigned char *odd;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
        return (void *)1;
    for (int i = 0; i < LIVE; i++)
        if (cudaMallocAsync(&buf[i], FLOATS * sizeof(float), s) != cudaSuccess)
            return (void *)1;
    if (cudaMallocAsync(&odd, ODD, s) != cudaSuccess)
        return (void *)1;
    cudaMemsetAsync(odd, 0, ODD, s);
    for (int i = 0; i < LIVE; i++)
        cudaMemsetAsync(buf[i], 0, FLOATS * sizeof(float), s);
    for (int k = 0; k < LAUNCHES; k++) {
        if (k == 300) {
            // the odd buffer: exactly its size, or 8 bytes more in thread 2
            int n = ODD + (bug && t == 2 ? 8 : 0);
            tail_kernel<<<(n + 255) / 256, 256, 0, s>>>(odd, n);
        } else {
            touch_kernel<<<1, FLOATS, 0, s>>>(buf[k % LIVE], buf[(k * 7 + 1) % LIVE], FLOATS);
        }
        if (k % 100 == 99 && cudaStreamSynchronize(s) != cudaSuccess)
            return (void *)1;
    }
    for (int i = 0; i < LIVE; i++)
        cudaFreeAsync(buf[i], s);
    cudaFreeAsync(odd, s);
    if (cudaStreamSynchronize(s) != cudaSuccess || cudaGetLastError() != cudaSuccess)
        return (void *)1;
    cudaStreamDestroy(s);
    return NULL;
}

int main(int argc, char **argv)
{
    bug = !(argc > 1 && strcmp(argv[1], "clean") == 0);
    pthread_t th[THREADS];
    cudaFree(0); // the context, before the threads race to make it
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(long)t);
    for (int t = 0; t < THREADS; t++) {
        void *r;
        pthread_join(th[t], &r);
        failed |= r != NULL;
    }
    if (failed) {
        printf("FAIL: a CUDA call failed\n");
        return 1;
    }
    printf("ok: bad launch grid=(%d,1,1) block=(256,1,1)\n", (ODD + 8 + 255) / 256);
    return 0;
}
