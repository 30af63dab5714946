/*
 * A stand-in for a CUDA runtime library in the race tests: built as
 * libcudart_races.so, a name the reports take for CUDA's plumbing, it
 * launches on the program's behalf, as cudart does under PyTorch. The
 * race detector must then unwind past it and name the program's frame.
 */
#include <cuda.h>

CUresult rt_launch(CUfunction f, CUstream s, void **args);

CUresult rt_launch(CUfunction f, CUstream s, void **args)
{
    return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL);
}
