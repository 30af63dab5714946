/*
 * A caching allocator's segment maker, for trace_steps' "segments" scenario: built twice, as
 * libc10_cuda.so (PyTorch's allocator's file name, which the step trace knows its segments by)
 * and as libsegs.so (any other library). Its frame must be on the allocation's stack, so the
 * call is no tail call.
 */
#include <cuda.h>

__attribute__((visibility("default"))) volatile unsigned seg_made;

__attribute__((visibility("default"))) CUresult seg_alloc(CUdeviceptr *p, size_t bytes)
{
    CUresult r = cuMemAlloc(p, bytes);
    seg_made += r == CUDA_SUCCESS;
    return r;
}
