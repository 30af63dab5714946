// A CUDA program with one bug among many clean launches: a kernel writes 8
// bytes past the end of a 1000-byte allocation (cudaMalloc, so the driver
// call arrives through cuGetProcAddress). `./rz_overrun clean` makes the same
// launches without the bug. Prints the launch number of the bad launch
// (counting every kernel launch of the program from 1).
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void clean_kernel(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * 0.5f + 1.0f;
}

__global__ void overrun_kernel(unsigned char *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = (unsigned char)i;
}

#include "rz_ck.h"

int main(int argc, char **argv)
{
    int bug = !(argc > 1 && strcmp(argv[1], "clean") == 0);
    const int nbuf = 16, nfl = 4096;
    float *bufs[nbuf];
    unsigned char *small;
    for (int i = 0; i < nbuf / 2; i++)
        CK(cudaMalloc(&bufs[i], nfl * sizeof(float)));
    CK(cudaMalloc(&small, 1000));
    for (int i = nbuf / 2; i < nbuf; i++)
        CK(cudaMalloc(&bufs[i], nfl * sizeof(float)));
    for (int i = 0; i < nbuf; i++)
        CK(cudaMemset(bufs[i], 0, nfl * sizeof(float)));
    CK(cudaMemset(small, 0, 1000));
    unsigned long long launch = 0;
    for (int it = 0; it < 300; it++) {
        clean_kernel<<<nfl / 256, 256>>>(bufs[it % nbuf], nfl);
        launch++;
        if (it == 150) {
            // the bug: 1008 bytes written into a 1000-byte buffer
            overrun_kernel<<<4, 256>>>(small, bug ? 1008 : 1000);
            launch++;
            printf("bad launch: %llu\n", launch);
        }
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    float host[4];
    CK(cudaMemcpy(host, bufs[0], sizeof host, cudaMemcpyDeviceToHost));
    printf("value: %.4f\n", host[0]);
    for (int i = 0; i < nbuf; i++)
        CK(cudaFree(bufs[i]));
    CK(cudaFree(small));
    printf("done\n");
    return 0;
}
