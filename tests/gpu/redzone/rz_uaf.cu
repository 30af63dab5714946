// A CUDA program that writes through a pointer it freed (issue #29):
//   rz_uaf pool    cudaMallocAsync / cudaFreeAsync on the legacy stream (the
//                  pool keeps the freed memory mapped: the write cannot fault
//                  natively, it lands in whatever the pool hands out next)
//   rz_uaf sync    cudaMalloc / cudaFree (a neighbour allocation keeps the
//                  2 MiB page mapped)
//   rz_uaf clean   the same launches as `pool`, without the bad one
//   rz_uaf other   the C form of PyTorch's missing record_stream (issue #45): a kernel on
//                  stream B, launched before cudaFreeAsync on stream A and still running when
//                  the free is done, writes 64 bytes at +128 after it (nothing orders the free
//                  after B)
// Among 200 clean launches over 8 buffers, `late_write` writes 64 bytes at
// +128 into the freed 4096-byte buffer. Prints the launch number of the bad
// launch (counting every kernel launch of the program from 1) and a checksum
// of the live buffers.
#include <cstdint>
#include <cstdio>
#include <cstring>

__global__ void clean_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * 0.5f + 1.0f;
}

__global__ void late_write(unsigned char *p, int off, int n)
{
    int i = threadIdx.x;
    if (i < n)
        p[off + i] = 0x5a;
}

// spins about `ns` nanoseconds, then writes
__global__ void slow_write(unsigned char *p, int off, int n, long long ns)
{
    long long t0 = clock64();
    // clock64 counts SM cycles: about 1.5-2 GHz; 2 cycles a nanosecond is long enough
    while (clock64() - t0 < 2 * ns)
        ;
    int i = threadIdx.x;
    if (i < n)
        p[off + i] = 0x5a;
}

#include "rz_ck.h"

static int other_stream(void)
{
    cudaMemPool_t mp;
    CK(cudaDeviceGetDefaultMemPool(&mp, 0));
    uint64_t keep = UINT64_MAX; // freed memory stays mapped in the pool
    CK(cudaMemPoolSetAttribute(mp, cudaMemPoolAttrReleaseThreshold, &keep));
    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    unsigned char *victim;
    CK(cudaMallocAsync(&victim, 4096, a));
    CK(cudaMemsetAsync(victim, 0, 4096, a));
    CK(cudaStreamSynchronize(a));
    slow_write<<<1, 64, 0, b>>>(victim, 128, 64, 50 * 1000 * 1000); // 50 ms, then the write
    printf("bad launch: 1\n");
    CK(cudaFreeAsync(victim, a)); // the bug: not ordered after stream b
    CK(cudaStreamSynchronize(a));
    CK(cudaStreamSynchronize(b));
    CK(cudaGetLastError());
    CK(cudaStreamDestroy(a));
    CK(cudaStreamDestroy(b));
    printf("checksum 0.0\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "pool";
    if (strcmp(how, "other") == 0)
        return other_stream();
    int pool = strcmp(how, "sync") != 0, bug = strcmp(how, "clean") != 0;
    const int nbuf = 8, nfl = 1024;
    float *bufs[nbuf];
    unsigned char *victim;
    if (pool) {
        cudaMemPool_t mp;
        CK(cudaDeviceGetDefaultMemPool(&mp, 0));
        uint64_t keep = UINT64_MAX; // freed memory stays mapped in the pool
        CK(cudaMemPoolSetAttribute(mp, cudaMemPoolAttrReleaseThreshold, &keep));
    }
    for (int i = 0; i < nbuf; i++) {
        if (pool)
            CK(cudaMallocAsync(&bufs[i], nfl * sizeof(float), 0));
        else
            CK(cudaMalloc(&bufs[i], nfl * sizeof(float)));
        CK(cudaMemsetAsync(bufs[i], 0, nfl * sizeof(float), 0));
    }
    if (pool)
        CK(cudaMallocAsync(&victim, 4096, 0));
    else
        CK(cudaMalloc(&victim, 4096));
    CK(cudaMemsetAsync(victim, 0, 4096, 0));
    unsigned long long launch = 0;
    for (int it = 0; it < 200; it++) {
        clean_kernel<<<nfl / 256, 256>>>(bufs[it % nbuf], nfl);
        launch++;
        if (it == 100) {
            if (pool)
                CK(cudaFreeAsync(victim, 0));
            else
                CK(cudaFree(victim));
            if (bug) {
                late_write<<<1, 64>>>(victim, 128, 64); // the bug: a write after its free
                launch++;
                printf("bad launch: %llu\n", launch);
            }
        }
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double sum = 0;
    float host[nfl];
    for (int i = 0; i < nbuf; i++) {
        CK(cudaMemcpy(host, bufs[i], sizeof host, cudaMemcpyDeviceToHost));
        for (int k = 0; k < nfl; k++)
            sum += host[k];
        if (pool)
            CK(cudaFreeAsync(bufs[i], 0));
        else
            CK(cudaFree(bufs[i]));
    }
    CK(cudaDeviceSynchronize());
    printf("checksum %.1f\n", sum);
    return 0;
}
