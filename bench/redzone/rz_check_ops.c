/* What one extra stream operation after every tiny launch costs (issue #16):
 * the floor under launch mode's red-zone check, measured without the
 * library.
 *   rz_check_ops KERNELS CHECK_PTX [LAUNCHES [BLOCKS]]
 * KERNELS is bench/core/kern_bench.cu's cubin (`args8`: three pointers and
 * five scalars, writes nothing), CHECK_PTX the library's check kernels as
 * built for sm_90 (mk/redzone.mk: BUILD/gen/redzone_ptx.c.pdl.ptx). Three
 * buffers of 4 KB plus a 64-byte zone filled like a red zone stand in for
 * the allocations a launch reaches. On the legacy stream (what
 * rz_launch_bench launches on) and then on a stream of its own, BLOCKS
 * (default 7) blocks of LAUNCHES (default 3,000) args8 launches are timed
 * for each way of following every launch, interleaved (one block of each,
 * BLOCKS times), each block ended by a stream sync; the median block of each
 * is printed in microseconds per launch, with its ratio to the launches
 * alone and the loop's time before the sync ("enqueue"):
 *   ops STREAM OP us US ratio R enqueue US
 * An operation the driver refuses on a stream (a batched copy on the legacy
 * stream) is printed once as "ops STREAM OP refused ERROR" and left out. */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define ZONE 64
#define RING 1024 /* slots of the copies' destination rings */

enum op {
    OP_NONE,
    OP_CHECK,
    OP_CHECK_PDL,
    OP_CHECK_PDL_HALF,
    OP_DTOH_1,
    OP_DTOH_3,
    OP_DTOH_BATCH_3,
    OP_MEMSET,
    OP_WRITE_VALUE,
    NOPS
};

static const char *const op_name[NOPS] = {
    [OP_NONE] = "none",
    [OP_CHECK] = "check-kernel-3-zones",
    [OP_CHECK_PDL] = "check-kernel-3-zones-dependent-launch",
    [OP_CHECK_PDL_HALF] = "check-kernel-6-zones-every-second-launch",
    [OP_DTOH_1] = "copy-1-zone-to-host",
    [OP_DTOH_3] = "copy-3-zones-to-host",
    [OP_DTOH_BATCH_3] = "copy-3-zones-to-host-batched",
    [OP_MEMSET] = "memset-64-bytes",
    [OP_WRITE_VALUE] = "write-value-32",
};

static CUfunction args8;
static CUdeviceptr buf[3];
static unsigned char *ring; /* page-locked */
static int refused[NOPS];

static struct rz_check chk;

static CUresult queue_check(CUstream st, unsigned nz, unsigned long long ticket, int pdl)
{
    CUdeviceptr zone[ATL_RZ_SLOT_ZONES];
    for (unsigned i = 0; i < nz; i++)
        zone[i] = buf[i % 3] + 4096;
    return rz_check_queue(&chk, st, zone, nz, ZONE, ticket, pdl);
}

static CUresult after(enum op op, CUstream st, long i)
{
    unsigned char *dst = ring + (size_t)(i % RING) * 3 * ZONE;
    switch (op) {
    case OP_NONE:
        return CUDA_SUCCESS;
    case OP_CHECK:
        return queue_check(st, 3, (unsigned long long)i + 1, 0);
    case OP_CHECK_PDL:
        return queue_check(st, 3, (unsigned long long)i + 1, 1);
    case OP_CHECK_PDL_HALF:
        return i % 2 ? queue_check(st, 6, (unsigned long long)i + 1, 1) : CUDA_SUCCESS;
    case OP_DTOH_1:
        return cuMemcpyDtoHAsync(dst, buf[0] + 4096, ZONE, st);
    case OP_DTOH_3:
        for (int k = 0; k < 3; k++) {
            CUresult r = cuMemcpyDtoHAsync(dst + k * ZONE, buf[k] + 4096, ZONE, st);
            if (r != CUDA_SUCCESS)
                return r;
        }
        return CUDA_SUCCESS;
    case OP_DTOH_BATCH_3: {
        CUdeviceptr d[3], s[3];
        size_t sz[3] = {ZONE, ZONE, ZONE}, first = 0;
        for (int k = 0; k < 3; k++) {
            d[k] = (CUdeviceptr)(dst + k * ZONE);
            s[k] = buf[k] + 4096;
        }
        CUmemcpyAttributes a;
        memset(&a, 0, sizeof a);
        a.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
        a.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
        a.dstLocHint.type = CU_MEM_LOCATION_TYPE_HOST;
        return cuMemcpyBatchAsync(d, s, sz, 3, &a, &first, 1, st);
    }
    case OP_MEMSET:
        return cuMemsetD8Async(buf[0] + 4096, 0xa5, ZONE, st);
    case OP_WRITE_VALUE:
        return cuStreamWriteValue32(st, buf[0], (cuuint32_t)i, 0);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* One block: n launches, each followed by op. Microseconds per launch, the
 * loop alone in *enq; a negative answer when the driver refused op. */
static double block(enum op op, CUstream st, long n, double *enq)
{
    unsigned a = 1, b = 2;
    float s = 1.5f;
    unsigned long long k = 3;
    int j = 4;
    void *params[] = {&buf[0], &buf[1], &buf[2], &a, &b, &s, &k, &j};
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
        CHECK(cuLaunchKernel(args8, 1, 1, 1, 32, 1, 1, 0, st, params, NULL));
        CUresult r = after(op, st, i);
        if (r != CUDA_SUCCESS) {
            CHECK(cuStreamSynchronize(st));
            return -(double)r;
        }
    }
    double te = now_us();
    CHECK(cuStreamSynchronize(st));
    double t1 = now_us();
    *enq = (te - t0) / (double)n;
    return (t1 - t0) / (double)n;
}

static void run(const char *name, CUstream st, long n, int blocks)
{
    static double all[NOPS][99], enq[NOPS][99];
    memset(refused, 0, sizeof refused);
    for (int op = 0; op < NOPS; op++) { /* warm up, and find what is refused */
        double e;
        double t = block((enum op)op, st, 300, &e);
        if (t < 0) {
            const char *s = "?";
            cuGetErrorName((CUresult)(int)-t, &s);
            printf("ops %s %s refused %s\n", name, op_name[op], s);
            refused[op] = 1;
        }
    }
    for (int b = 0; b < blocks; b++)
        for (int op = 0; op < NOPS; op++)
            if (!refused[op])
                all[op][b] = block((enum op)op, st, n, &enq[op][b]);
    double base = median(all[OP_NONE], blocks);
    for (int op = 0; op < NOPS; op++) {
        if (refused[op])
            continue;
        double t = median(all[op], blocks);
        printf("ops %s %s us %.2f ratio %.2f enqueue %.2f\n", name, op_name[op], t, t / base,
               median(enq[op], blocks));
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rz_check_ops KERNELS CHECK_PTX [LAUNCHES [BLOCKS]]\n");
        return 2;
    }
    long n = argc > 3 ? atol(argv[3]) : 3000;
    int blocks = argc > 4 ? atoi(argv[4]) : 7;
    if (n < 2 || blocks < 1 || blocks > 99)
        return 2;
    CUdevice dev;
    CUcontext ctx;
    CUmodule kernels;
    CUstream own;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoad(&kernels, argv[1]));
    CHECK(cuModuleGetFunction(&args8, kernels, "args8"));
    rz_check_load(&chk, argv[2]);
    for (int i = 0; i < 3; i++) {
        CHECK(cuMemAlloc(&buf[i], 4096 + ZONE));
        CHECK(cuMemsetD8(buf[i] + 4096, 0xa5, ZONE));
    }
    CHECK(cuMemHostAlloc((void **)&ring, RING * 3 * ZONE, 0));
    CHECK(cuStreamCreate(&own, CU_STREAM_DEFAULT));
    run("legacy", CU_STREAM_LEGACY, n, blocks);
    run("own", own, n, blocks);
    if (!rz_check_clean(&chk)) {
        fprintf(stderr, "rz_check_ops: a check found a zone changed\n");
        return 1;
    }
    return 0;
}
