// Kernels of the real-GPU suite, compiled to a cubin the driver-API
// program loads with cuModuleLoad.
extern "C" __global__ void scale(float *x, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * a + 1.0f;
}
