/*
 * CUDA's runtime as nvcc links it by default (-cudart static), for tests/targets/sym_prog.c:
 * inside the program itself, built without debug information, its API functions named cuda*
 * and its insides libcudart_static_<hash> (as CUDA 13's libcudart_static.a names them), and
 * the launch stub nvcc generates for a kernel poke(float*) (its C++ name, spelled out: a C
 * compiler takes it as it is). A report names the program's own frame that called it, not
 * these (src/stack.c).
 */
#include "../fake/fakecuda.h"

CUdeviceptr libcudart_static_5e1f0c4a9b(size_t n);
CUdeviceptr cudaFakeMalloc(size_t n);
CUdeviceptr _Z23__device_stub__Z4pokePfPf(size_t n);

__attribute__((noinline)) CUdeviceptr libcudart_static_5e1f0c4a9b(size_t n)
{
    CUdeviceptr p = 0;
    cuMemAlloc(&p, n);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) CUdeviceptr cudaFakeMalloc(size_t n)
{
    CUdeviceptr p = libcudart_static_5e1f0c4a9b(n);
    __asm__ volatile("" ::: "memory");
    return p;
}

/* __device_stub__Z4pokePf(float*) */
__attribute__((noinline)) CUdeviceptr _Z23__device_stub__Z4pokePfPf(size_t n)
{
    CUdeviceptr p = libcudart_static_5e1f0c4a9b(n);
    __asm__ volatile("" ::: "memory");
    return p;
}
