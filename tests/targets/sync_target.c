/*
 * Target for the sync/copy/fault tests: a program linked against libcuda (the
 * fake driver) that makes a known number of each kind of copy and sync, or
 * faults once among many launches, or looks kernels up. Each mode prints what
 * it did and what the driver returned, so the test can hold atlastrace's
 * report against the program's own knowledge.
 *
 *   sync_target copies    every kind of copy and sync (counts in the test)
 *   sync_target many      25,000 synchronous device-to-host copies
 *   sync_target fault     300 good launches, one faulting, 5 good, then syncs
 *   sync_target suspects  50 good launches and a good sync, then 300 good, one
 *                         faulting (launch 351), 300 good, then syncs
 *   sync_target graph     a captured graph of 3 good launches and a faulting
 *                         one, instantiated, the graph destroyed, launched
 *                         after 20 good launches, then 20 more and syncs
 *   sync_target capture   launches inside a global-mode stream capture
 *   sync_target audit     look-ups (one fails) and launches
 */
#include "../fake/fakecuda.h"

#include <atlas/trace.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            printf("FAIL %s: %d\n", #call, (int)r_);                                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUresult k_good(const struct fake_launch *l, void **params)
{
    (void)l;
    float *x = *(float **)params[0];
    x[0] += 1.0f;
    return CUDA_SUCCESS;
}

/* models a kernel that writes out of bounds: the fault surfaces at the next
 * synchronising call, as on a GPU */
static CUresult k_oob(const struct fake_launch *l, void **params)
{
    (void)l;
    (void)params;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
}

static const size_t one_ptr[] = {8};
static const struct fake_kernel_def kernels[] = {
    {"_Z9axpy_goodPf", k_good, 1, one_ptr, NULL},
    {"_Z9oob_writePf", k_oob, 1, one_ptr, NULL},
};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 2, kernels};

static CUmodule mod;
static CUfunction good, oob;
static CUdeviceptr dbuf;

__attribute__((noinline)) void setup(void)
{
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, &image));
    CHECK(cuModuleGetFunction(&good, mod, "_Z9axpy_goodPf"));
    CHECK(cuModuleGetFunction(&oob, mod, "_Z9oob_writePf"));
    CHECK(cuMemAlloc(&dbuf, 4096));
}

/* Each kind of copy from its own function, so each is its own call site. */
__attribute__((noinline)) void copy_dtoh(void *h, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(cuMemcpyDtoH(h, dbuf, 64));
}

__attribute__((noinline)) void copy_generic_d2h(void *h, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(cuMemcpy((CUdeviceptr)(uintptr_t)h, dbuf, 32));
}

__attribute__((noinline)) void copy_2d_3d(void *h)
{
    CUDA_MEMCPY2D c2 = {0};
    c2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.srcDevice = dbuf;
    c2.srcPitch = 64;
    c2.dstMemoryType = CU_MEMORYTYPE_HOST;
    c2.dstHost = h;
    c2.dstPitch = 16;
    c2.WidthInBytes = 16;
    c2.Height = 4;
    CHECK(cuMemcpy2D(&c2));
    CUDA_MEMCPY3D c3 = {0};
    c3.srcMemoryType = CU_MEMORYTYPE_UNIFIED; /* direction through unified addressing */
    c3.srcDevice = dbuf;
    c3.srcPitch = 64;
    c3.srcHeight = 4;
    c3.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    c3.dstDevice = (CUdeviceptr)(uintptr_t)h;
    c3.dstPitch = 8;
    c3.dstHeight = 2;
    c3.WidthInBytes = 8;
    c3.Height = 2;
    c3.Depth = 2;
    CHECK(cuMemcpy3D(&c3));
}

__attribute__((noinline)) void copy_async_pageable(void *h, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(cuMemcpyDtoHAsync(h, dbuf, 16, NULL));
}

__attribute__((noinline)) void copy_async_pinned(void *pinned, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(cuMemcpyDtoHAsync(pinned, dbuf, 16, NULL));
}

__attribute__((noinline)) void upload_async(void *pageable, void *pinned)
{
    CHECK(cuMemcpyHtoDAsync(dbuf, pageable, 128, NULL));
    CHECK(cuMemcpyHtoDAsync(dbuf, pageable, 128, NULL));
    CHECK(cuMemcpyHtoDAsync(dbuf, pinned, 128, NULL));
}

__attribute__((noinline)) int mode_copies(void)
{
    static char pageable[4096];
    void *pinned;
    CUdeviceptr d2;
    CUevent ev;
    CHECK(cuMemAllocHost(&pinned, 4096));
    CHECK(cuMemAlloc(&d2, 4096));
    CHECK(cuEventCreate(&ev, 0));

    CHECK(cuMemcpyHtoD(dbuf, pageable, 64));                     /* not counted: host to device */
    copy_dtoh(pageable, 3);                                      /* dtoh 3 */
    copy_generic_d2h(pageable, 2);                               /* memcpy 2 */
    CHECK(cuMemcpy(dbuf, (CUdeviceptr)(uintptr_t)pageable, 16)); /* h2d: not counted */
    CHECK(cuMemcpy(d2, dbuf, 16));                               /* d2d: not counted */
    copy_2d_3d(pageable);                                        /* 2d 1, 3d 1 */
    copy_async_pinned(pinned, 4);                                /* pinned: not counted */
    copy_async_pageable(pageable, 5);                            /* async d2h pageable 5 */
    CHECK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)pageable, dbuf, 8, NULL)); /* and 1 more */
    upload_async(pageable, pinned);               /* async h2d pageable 2 */
    CHECK(cuMemcpyDtoDAsync(d2, dbuf, 64, NULL)); /* not counted */
    CHECK(cuStreamSynchronize(NULL));
    CHECK(cuStreamSynchronize(NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuEventRecord(ev, NULL));
    CHECK(cuEventSynchronize(ev));

    /* through the program API's header (include/atlas/trace.h) */
    if (atlas_sync_count("blocking_d2h") >= 0)
        printf("api blocking_d2h=%lld hidden_h2d=%lld stream_syncs=%lld\n",
               atlas_sync_count("blocking_d2h"), atlas_sync_count("async-h2d-pageable"),
               atlas_sync_count("stream-sync"));
    CHECK(cuMemFreeHost(pinned));
    printf("ok\n");
    return 0;
}

/* 25,000 small synchronous copies: the running count every 10,000th */
__attribute__((noinline)) int mode_many(void)
{
    char h[64];
    copy_dtoh(h, 25000);
    printf("ok\n");
    return 0;
}

/* dtoh_first: the first call after the launches is a synchronous copy (the
 * hooks' light path for it), not a sync */
__attribute__((noinline)) int mode_fault(int dtoh_first)
{
    void *p = &dbuf;
    void *params[] = {p};
    int i;
    CUresult r = CUDA_SUCCESS;
    for (i = 0; i < 306 && r == CUDA_SUCCESS; i++)
        r = cuLaunchKernel(i == 300 ? oob : good, 4, 2, 1, 128, 1, 1, i == 300 ? 512 : 0, NULL,
                           params, NULL);
    if (r != CUDA_SUCCESS) {
        /* only under debug sync: the launch itself reports the fault */
        printf("launch %d returned %d\n", i - 1, (int)r);
    }
    char h[64];
    if (dtoh_first)
        printf("dtoh returned %d\n", (int)cuMemcpyDtoH(h, dbuf, 64));
    printf("sync returned %d\n", (int)cuCtxSynchronize());
    if (!dtoh_first)
        printf("dtoh returned %d\n", (int)cuMemcpyDtoH(h, dbuf, 64));
    printf("stream sync returned %d\n", (int)cuStreamSynchronize(NULL));
    printf("ok\n");
    return 0;
}

/* The flight recorder's case: the culprit is 300 launches before the sync
 * that sees its fault, and a good sync before it clears the first 50. Its
 * argument points 0x40 into the first allocation. */
__attribute__((noinline)) int mode_suspects(void)
{
    CUdeviceptr inside = dbuf + 0x40;
    void *params[] = {&dbuf}, *bad_params[] = {&inside};
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < 50; i++)
        CHECK(cuLaunchKernel(good, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CHECK(cuCtxSynchronize());
    int i;
    for (i = 0; i < 601 && r == CUDA_SUCCESS; i++)
        r = cuLaunchKernel(i == 300 ? oob : good, 4, 2, 1, 128, 1, 1, 0, NULL,
                           i == 300 ? bad_params : params, NULL);
    if (r != CUDA_SUCCESS)
        printf("launch %d returned %d\n", 50 + i, (int)r); /* under debug sync */
    printf("stream syncs seen by the driver=%lu\n", fake_calls("cuStreamSynchronize"));
    printf("sync returned %d\n", (int)cuCtxSynchronize());
    printf("ok\n");
    return 0;
}

__attribute__((noinline)) int mode_graph(void)
{
    CUstream s;
    CUgraph g;
    CUgraphExec x;
    void *params[] = {&dbuf};
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 4; i++)
        CHECK(cuLaunchKernel(i == 2 ? oob : good, 2, 1, 1, 64 << i, 1, 1, 0, s, params, NULL));
    CHECK(cuStreamEndCapture(s, &g));
    CHECK(cuGraphInstantiateWithFlags(&x, g, 0));
    CHECK(cuGraphDestroy(g)); /* its nodes are known from the instantiation */
    for (int i = 0; i < 20; i++)
        CHECK(cuLaunchKernel(good, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    CUresult r = cuGraphLaunch(x, s);
    printf("graph launch returned %d\n", (int)r);
    for (int i = 0; i < 20 && r == CUDA_SUCCESS; i++)
        CHECK(cuLaunchKernel(good, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    printf("sync returned %d\n", (int)cuStreamSynchronize(s));
    printf("ok\n");
    return 0;
}

__attribute__((noinline)) int mode_capture(void)
{
    CUstream s, other;
    CUgraph g;
    void *params[] = {&dbuf};
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 3; i++)
        CHECK(cuLaunchKernel(good, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    /* a launch on another stream while a global capture is open */
    CHECK(cuLaunchKernel(good, 1, 1, 1, 32, 1, 1, 0, other, params, NULL));
    CHECK(cuStreamEndCapture(s, &g));
    printf("graph ops=%zu\n", fake_graph_num_ops(g));
    /* after the capture: synchronised again */
    CHECK(cuLaunchKernel(good, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    printf("stream syncs seen by the driver=%lu\n", fake_calls("cuStreamSynchronize"));
    printf("ok\n");
    return 0;
}

__attribute__((noinline)) int mode_audit(void)
{
    CUfunction f;
    void *params[] = {&dbuf};
    CHECK(cuModuleGetFunction(&f, mod, "_Z9axpy_goodPf")); /* a second look-up of one kernel */
    CUresult r = cuModuleGetFunction(&f, mod, "_Z18optional_fast_pathPf");
    printf("optional lookup returned %d\n", (int)r);
    for (int i = 0; i < 7; i++)
        CHECK(cuLaunchKernel(good, 3, 2, 1, 64, 1, 1, 0, NULL, params, NULL));
    CHECK(cuCtxSynchronize());
    printf("ok\n");
    return 0;
}

/* hostcopies: 10 async copies into pageable memory and 10 from it, then how
 * often the driver was asked what memory an address is */
__attribute__((noinline)) int mode_hostcopies(void)
{
    static char pageable[4096];
    fake_reset_counts();
    for (int i = 0; i < 10; i++) {
        CHECK(cuMemcpyDtoHAsync(pageable, dbuf, 64, NULL));
        CHECK(cuMemcpyHtoDAsync(dbuf, pageable, 64, NULL));
    }
    CHECK(cuStreamSynchronize(NULL));
    printf("pointer queries: %lu\n", fake_calls("cuPointerGetAttribute"));
    printf("ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    setup();
    if (strcmp(argv[1], "copies") == 0)
        return mode_copies();
    if (strcmp(argv[1], "many") == 0)
        return mode_many();
    if (strcmp(argv[1], "hostcopies") == 0)
        return mode_hostcopies();
    if (strcmp(argv[1], "fault") == 0)
        return mode_fault(0);
    if (strcmp(argv[1], "fault_dtoh") == 0)
        return mode_fault(1);
    if (strcmp(argv[1], "suspects") == 0)
        return mode_suspects();
    if (strcmp(argv[1], "graph") == 0)
        return mode_graph();
    if (strcmp(argv[1], "capture") == 0)
        return mode_capture();
    if (strcmp(argv[1], "audit") == 0)
        return mode_audit();
    return 2;
}
