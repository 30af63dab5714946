/*
 * VMM target: allocates through cuMemCreate / cuMemAddressReserve /
 * cuMemMap as JAX, NCCL and PyTorch's expandable segments do. argv[1] picks
 * the scenario, argv[2] "gpa" fetches the VMM entry points through
 * cuGetProcAddress_v2 (as cudart does) instead of calling the linked
 * symbols. tests/integration/test_vmm.c runs it under the preload.
 */
#include "../fake/fakecuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

static struct {
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                       unsigned long long);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*addr_free)(CUdeviceptr, size_t);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
} vmm = {cuMemCreate, cuMemRelease, cuMemAddressReserve, cuMemAddressFree,
         cuMemMap,    cuMemUnmap,   cuMemSetAccess};

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "vmm_prog: %s failed: %d\n", #call, (int)r_);                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void through_gpa(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa)
        exit(2);
    struct {
        const char *name;
        void **fn;
    } want[] = {{"cuMemCreate", (void **)&vmm.create},
                {"cuMemRelease", (void **)&vmm.release},
                {"cuMemAddressReserve", (void **)&vmm.reserve},
                {"cuMemAddressFree", (void **)&vmm.addr_free},
                {"cuMemMap", (void **)&vmm.map},
                {"cuMemUnmap", (void **)&vmm.unmap},
                {"cuMemSetAccess", (void **)&vmm.set_access}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CUdriverProcAddressQueryResult st;
        CHECK(gpa(want[i].name, want[i].fn, 12000, 0, &st));
    }
}

/* Every physical allocation is made here, so reports name it as the site. */
__attribute__((noinline)) CUresult vmm_create(CUmemGenericAllocationHandle *h, size_t bytes)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    return vmm.create(h, bytes, &prop, 0);
}

static void map_rw(CUdeviceptr va, size_t bytes, CUmemGenericAllocationHandle h)
{
    CUmemAccessDesc acc = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                           .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(vmm.map(va, bytes, 0, h, 0));
    CHECK(vmm.set_access(va, bytes, &acc, 1));
}

/* One 2 MiB handle mapped at two addresses: bytes written through the first
 * are read back through the second; then everything is given back. */
static void clean(void)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    CHECK(vmm_create(&h, 2 * MiB));
    CHECK(vmm.reserve(&va, 4 * MiB, 0, 0, 0));
    map_rw(va, 2 * MiB, h);
    map_rw(va + 2 * MiB, 2 * MiB, h);
    char msg[] = "through a mapped range", back[sizeof msg] = "";
    CHECK(cuMemcpyHtoD(va + 4096, msg, sizeof msg));
    CHECK(cuMemcpyDtoH(back, va + 2 * MiB + 4096, sizeof back));
    printf("read back: %s\n", back);
    CHECK(vmm.unmap(va, 4 * MiB));
    CHECK(vmm.release(h));
    CHECK(vmm.addr_free(va, 4 * MiB));
}

/* oob_write(float *p): a kernel that faults (the fake's model of an illegal
 * address, reported at the next sync) */
static CUresult k_oob(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
}
static const size_t oob_sizes[] = {8};
static const struct fake_kernel_def kernels[] = {{"oob_write", k_oob, 1, oob_sizes, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 1, kernels};

/* A kernel given a pointer 0x40 into a mapped cuMemCreate allocation
 * faults: the fault report names its argument after the allocation. */
static void fault(void)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    CUmodule mod;
    CUfunction f;
    CHECK(vmm_create(&h, 2 * MiB));
    CHECK(vmm.reserve(&va, 2 * MiB, 0, 0, 0));
    map_rw(va, 2 * MiB, h);
    CHECK(cuModuleLoadData(&mod, &image));
    CHECK(cuModuleGetFunction(&f, mod, "oob_write"));
    CUdeviceptr p = va + 0x40;
    void *args[] = {&p};
    CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    printf("sync returned %d\n", (int)cuCtxSynchronize());
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    const char *what = argc > 1 ? argv[1] : "";
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    if (argc > 2 && strcmp(argv[2], "gpa") == 0)
        through_gpa();

    if (strcmp(what, "clean") == 0) {
        clean();
        clean();
    } else if (strcmp(what, "leak") == 0) {
        /* alloc#1 released while mapped, alloc#2 (4 MiB) never */
        CUmemGenericAllocationHandle a, b;
        CUdeviceptr va;
        CHECK(vmm_create(&a, 2 * MiB));
        CHECK(vmm_create(&b, 4 * MiB));
        CHECK(vmm.reserve(&va, 2 * MiB, 0, 0, 0));
        map_rw(va, 2 * MiB, a);
        CHECK(vmm.release(a));
        CHECK(vmm.unmap(va, 2 * MiB));
        CHECK(vmm.addr_free(va, 2 * MiB));
    } else if (strcmp(what, "fault") == 0) {
        fault();
        return 0;
    } else if (strcmp(what, "oom") == 0) {
        /* 64 MiB held through cuMemCreate and 4 KB through cuMemAlloc when a
         * cuMemCreate runs out of memory */
        CUmemGenericAllocationHandle big, h;
        CUdeviceptr small;
        CHECK(vmm_create(&big, 64 * MiB));
        CHECK(cuMemAlloc(&small, 4096));
        fake_fail_next("cuMemCreate", CUDA_ERROR_OUT_OF_MEMORY);
        printf("cuMemCreate -> %d\n", (int)vmm_create(&h, 2 * MiB));
        CHECK(cuMemFree(small));
        CHECK(vmm.release(big));
    } else {
        fprintf(stderr, "vmm_prog: unknown scenario '%s'\n", what);
        return 2;
    }
    printf("ok\n");
    return 0;
}
