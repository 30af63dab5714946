/*
 * For tests/targets/sym_prog.c: a header named as CUDA's (cuda_runtime.h) whose helper is
 * inlined into the program's function, as cuda_runtime.h's cudaMalloc<T> is inlined into
 * main by nvcc -O2: the call into the runtime lies in the program's function, but the line
 * table gives it this header's line. A report names the program's line that the helper was
 * inlined at.
 */
#ifndef SYM_CUDA_RUNTIME_H
#define SYM_CUDA_RUNTIME_H

#include "../fake/fakecuda.h"

CUdeviceptr cudaFakeMalloc(size_t n); /* sym_rt.c */

static inline __attribute__((always_inline)) CUdeviceptr cudaFakeMallocT(size_t n)
{
    CUdeviceptr p = cudaFakeMalloc(n);
    __asm__ volatile("" ::: "memory");
    return p;
}

#endif
