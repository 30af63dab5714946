// A JAX custom call (XLA FFI) whose kernel writes its output on a stream of its own: the
// form a hand-written extension takes when it keeps a side stream (issue #44: "a JAX
// computation on two streams"). Built by tests/gpu/races/run_races.sh against the FFI headers
// jax ships (jax.ffi.include_dir()); loaded by races_jax.py with ctypes.
//   SideWrite        the bug: the kernel goes on the side stream and the handler returns; XLA's
//                    next kernel, on XLA's stream, reads the output with nothing between
//   SideWriteJoined  the fix: an event recorded on the side stream after the kernel, and XLA's
//                    stream made to wait for it
#include <cuda_runtime.h>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void side_scale(const float *x, float *y, long n)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 3.0f * x[i];
}

static cudaStream_t side;
static cudaEvent_t done;

static ffi::Error side_write(cudaStream_t stream, ffi::Buffer<ffi::F32> x,
                             ffi::ResultBuffer<ffi::F32> y, bool join)
{
    if (!side && (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess ||
                  cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess))
        return ffi::Error::Internal("side stream");
    // the side stream starts after XLA's stream has written x
    cudaEvent_t ready;
    cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
    cudaEventRecord(ready, stream);
    cudaStreamWaitEvent(side, ready, 0);
    cudaEventDestroy(ready);
    long n = (long)y->element_count();
    side_scale<<<(unsigned)((n + 255) / 256), 256, 0, side>>>(x.typed_data(), y->typed_data(), n);
    if (join) {
        cudaEventRecord(done, side);
        cudaStreamWaitEvent(stream, done, 0);
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return ffi::Error::Internal(cudaGetErrorString(e));
    return ffi::Error::Success();
}

static ffi::Error side_write_raced(cudaStream_t s, ffi::Buffer<ffi::F32> x,
                                   ffi::ResultBuffer<ffi::F32> y)
{
    return side_write(s, x, y, false);
}

static ffi::Error side_write_joined(cudaStream_t s, ffi::Buffer<ffi::F32> x,
                                    ffi::ResultBuffer<ffi::F32> y)
{
    return side_write(s, x, y, true);
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(SideWrite, side_write_raced,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(SideWriteJoined, side_write_joined,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
