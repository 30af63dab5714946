/* What the red-zone benchmark programs (rz_launch_bench.c, rz_check_ops.c)
 * share: a driver call that must succeed, a clock, a median. */
#ifndef RZ_BENCH_COMMON_H
#define RZ_BENCH_COMMON_H

#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The call, or exit(1) with its error's name. */
#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            cuGetErrorName(r_, &s_);                                                               \
            fprintf(stderr, "%s: %s failed: %s\n", program_invocation_short_name, #call, s_);      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static inline int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Sorts v. */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

#endif
