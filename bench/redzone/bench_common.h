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

/* The library's queued check kernel, loaded from its sm_90 PTX (mk/redzone.mk:
 * BUILD/gen/redzone_ptx.c.pdl.ptx), with a ring of 64 verdict slots in mapped
 * memory: what one check after a launch costs without the library, queued
 * as the library queues it (one block; on sm_90 a dependent launch). */
#include <string.h>

#include "../../src/redzone_gpu.h"

struct rz_check {
    CUfunction fn;
    struct atl_rz_slot *slots;
    CUdeviceptr dslots;
};

static inline void rz_check_load(struct rz_check *c, const char *ptx)
{
    /* the text, loaded as the library loads it (the fake driver takes the
     * PTX text for its host twin of the kernels, not a path) */
    FILE *f = fopen(ptx, "r");
    static char text[1 << 20];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    if (!n) {
        fprintf(stderr, "%s: cannot read %s\n", program_invocation_short_name, ptx);
        exit(1);
    }
    text[n] = '\0';
    CUmodule m;
    CHECK(cuModuleLoadData(&m, text));
    CHECK(cuModuleGetFunction(&c->fn, m, ATL_RZ_CHECK_ENTRY));
    CHECK(cuMemHostAlloc((void **)&c->slots, 64 * sizeof *c->slots, CU_MEMHOSTALLOC_DEVICEMAP));
    memset(c->slots, 0, 64 * sizeof *c->slots);
    CHECK(cuMemHostGetDevicePointer(&c->dslots, c->slots, 0));
}

/* Queues a check of the nz zones of `len` bytes at zone[i] (filled with
 * 0xa5), verdict into slot ticket % 64. */
static inline CUresult rz_check_queue(const struct rz_check *c, CUstream st,
                                      const CUdeviceptr *zone, unsigned nz, size_t len,
                                      unsigned long long ticket, int pdl)
{
    struct atl_rz_list list;
    memset(&list, 0, sizeof list);
    for (unsigned i = 0; i < nz && i < ATL_RZ_SLOT_ZONES; i++)
        list.z[i] = (struct atl_rz_zone){zone[i], len, 0xa5, 0};
    CUdeviceptr slot = c->dslots + (ticket % 64) * sizeof(struct atl_rz_slot), merge = 0;
    unsigned nfill = 0, fill = 0xa5;
    void *args[] = {&list, &nz, &nfill, &fill, &slot, &ticket, &merge};
    if (!pdl)
        return cuLaunchKernel(c->fn, 1, 1, 1, 256, 1, 1, 0, st, args, NULL);
    CUlaunchAttribute at;
    memset(&at, 0, sizeof at);
    at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    at.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 256;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = st;
    cfg.attrs = &at;
    cfg.numAttrs = 1;
    return cuLaunchKernelEx(&cfg, c->fn, args, NULL);
}

/* 1 when no check found a zone changed. */
static inline int rz_check_clean(const struct rz_check *c)
{
    for (int i = 0; i < 64; i++)
        if (c->slots[i].nbad)
            return 0;
    return 1;
}

#endif
