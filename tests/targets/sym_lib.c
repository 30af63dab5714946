/*
 * The allocation site of tests/targets/sym_prog.c, in a shared library of its own: the test
 * builds it with debug information, stripped, and replaces or removes its file while the
 * program runs (tests/integration/test_reports.c).
 */
#include "../fake/fakecuda.h"

__attribute__((noinline)) CUdeviceptr sym_alloc(size_t n)
{
    CUdeviceptr p = 0;
    cuMemAlloc(&p, n); /* SYM_ALLOC_LINE */
    __asm__ volatile("" ::: "memory");
    return p;
}

/* A second site, named by no report before the file is cut short ("cut-in-place"). */
__attribute__((noinline)) CUdeviceptr sym_alloc2(size_t n)
{
    CUdeviceptr p = 0;
    cuMemAlloc(&p, n); /* SYM_ALLOC2_LINE */
    __asm__ volatile("" ::: "memory");
    return p;
}
