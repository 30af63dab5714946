// Kernels the overhead benchmark launches: they do nothing, so the loop
// measures the host-side enqueue cost that a preload adds to.
extern "C" __global__ void empty() {}
extern "C" __global__ void args8(float *a, float *b, float *c, unsigned n, unsigned m, float s,
                                 unsigned long long k, int j)
{
    if (n == 0xffffffffu && threadIdx.x == 0)
        a[0] = b[0] + c[0] + (float)(m + k + j) * s;
}
