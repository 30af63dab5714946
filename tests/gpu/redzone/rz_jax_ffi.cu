// A JAX custom call (XLA FFI) whose kernel writes one element past its
// output: what a hand-written kernel with an off-by-one bound does. Built by
// tests/gpu/redzone/run_redzone.sh against the FFI headers jax ships
// (jax.ffi.include_dir()); loaded by rz_jax_overrun.py with ctypes.
#include <cuda_runtime.h>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// y[i] = 2 * x[i] for i <= n: the bound should be i < n
__global__ void past_end_kernel(const float *x, float *y, long n)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)
        y[i] = i < n ? 2.0f * x[i] : 1.0f;
}

static ffi::Error past_end_impl(cudaStream_t stream, ffi::Buffer<ffi::F32> x,
                                ffi::ResultBuffer<ffi::F32> y)
{
    long n = (long)y->element_count();
    past_end_kernel<<<(unsigned)((n + 256) / 256), 256, 0, stream>>>(x.typed_data(),
                                                                      y->typed_data(), n);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return ffi::Error::Internal(cudaGetErrorString(e));
    return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(PastEnd, past_end_impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
