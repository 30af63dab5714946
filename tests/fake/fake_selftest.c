/*
 * Self-test of the fake CUDA driver: what the interposer's tests will rely
 * on, checked as a user would see it (bytes read back, exact error codes,
 * exact function pointers).
 *
 *   make fake-check
 *   (LD_LIBRARY_PATH=build/fake build/fake/fake_selftest; CK_FORK=no to run
 *    every test in one process, e.g. under a sanitizer)
 */
#define _GNU_SOURCE
#include "fakecuda.h"

#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CU_OK(expr) ck_assert_int_eq((expr), CUDA_SUCCESS)

/* ---- test kernels ------------------------------------------------------ */

/* fill(uint32_t *out, uint32_t start, uint64_t n): out[i] = start + i */
static CUresult k_fill(const struct fake_launch *l, void **p)
{
    uint32_t *out = *(uint32_t **)p[0];
    uint32_t start = *(uint32_t *)p[1];
    uint64_t n = *(uint64_t *)p[2];
    for (uint64_t i = 0; i < n; i++)
        out[i] = start + (uint32_t)i;
    return CUDA_SUCCESS;
}

static CUresult k_fault(const struct fake_launch *l, void **p)
{
    return CUDA_ERROR_ILLEGAL_ADDRESS;
}

static CUresult k_soft(const struct fake_launch *l, void **p)
{
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
}

/* overrun(uint8_t *buf, uint64_t n): writes n + 64 bytes */
static CUresult k_overrun(const struct fake_launch *l, void **p)
{
    unsigned char *buf = *(unsigned char **)p[0];
    uint64_t n = *(uint64_t *)p[1];
    memset(buf, 0xAB, n + 64);
    return CUDA_SUCCESS;
}

struct blob16 {
    unsigned char b[16];
};

static struct {
    char c;
    double d;
    int i;
    struct blob16 s;
    unsigned grid0, block0;
    const char *name;
} g_mixed_seen;

/* mixed(char, double, int, struct blob16) */
static CUresult k_mixed(const struct fake_launch *l, void **p)
{
    g_mixed_seen.c = *(char *)p[0];
    g_mixed_seen.d = *(double *)p[1];
    g_mixed_seen.i = *(int *)p[2];
    memcpy(&g_mixed_seen.s, p[3], sizeof g_mixed_seen.s);
    g_mixed_seen.grid0 = l->grid[0];
    g_mixed_seen.block0 = l->block[0];
    g_mixed_seen.name = l->name;
    return CUDA_SUCCESS;
}

static const size_t fill_sizes[] = {8, 4, 8};
static const size_t overrun_sizes[] = {8, 8};
static const size_t mixed_sizes[] = {1, 8, 4, 16};
static const struct fake_kernel_def test_kernels[] = {
    {"fill", k_fill, 3, fill_sizes, NULL},    {"fault", k_fault, 0, NULL, NULL},
    {"soft", k_soft, 0, NULL, NULL},          {"overrun", k_overrun, 2, overrun_sizes, NULL},
    {"mixed", k_mixed, 4, mixed_sizes, NULL},
};
static const struct fake_image test_image = {FAKE_IMAGE_MAGIC, 5, test_kernels};

/* ---- fixture ----------------------------------------------------------- */

static CUcontext g_ctx;

static void setup(void)
{
    fake_set_deinitialized(0);
    fake_set_total_mem((size_t)80 << 30);
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&g_ctx, 0));
    CU_OK(cuDevicePrimaryCtxReset(0)); /* fresh state when CK_FORK=no */
    CU_OK(cuCtxSetCurrent(g_ctx));
}

static void teardown(void)
{
    cuDevicePrimaryCtxRelease(0);
}

static CUfunction get_fn(const char *name)
{
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, &test_image));
    CU_OK(cuModuleGetFunction(&f, m, name));
    return f;
}

static void launch_fill(CUfunction f, CUstream s, CUdeviceptr out, uint32_t start, uint64_t n)
{
    void *args[] = {&out, &start, &n};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
}

/* ---- tests ------------------------------------------------------------- */

START_TEST(kernel_writes_bytes_read_back)
{
    CUfunction f = get_fn("fill");
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 64 * sizeof(uint32_t)));
    ck_assert_uint_eq(d % 256, 0);
    launch_fill(f, NULL, d, 100, 64);
    uint32_t h[64];
    CU_OK(cuMemcpyDtoH(h, d, sizeof h));
    for (int i = 0; i < 64; i++)
        ck_assert_uint_eq(h[i], 100u + (unsigned)i);

    /* the same through a packed `extra` buffer laid out by the param info */
    size_t off1, off2, sz;
    CU_OK(cuFuncGetParamInfo(f, 1, &off1, &sz));
    CU_OK(cuFuncGetParamInfo(f, 2, &off2, &sz));
    unsigned char buf[24] = {0};
    uint32_t start = 7;
    uint64_t n = 64;
    memcpy(buf, &d, 8);
    memcpy(buf + off1, &start, 4);
    memcpy(buf + off2, &n, 8);
    size_t bufsize = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bufsize,
                     CU_LAUNCH_PARAM_END};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    CU_OK(cuMemcpyDtoH(h, d, sizeof h));
    ck_assert_uint_eq(h[0], 7);
    ck_assert_uint_eq(h[63], 70);

    /* both or (with params) neither: invalid; bad handle: invalid handle */
    void *args[] = {&d, &start, &n};
    ck_assert_int_eq(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, extra),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuLaunchKernel((CUfunction)buf, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(d));
}
END_TEST

START_TEST(library_kernel_is_accepted_as_function)
{
    CUlibrary lib;
    CUkernel k;
    CUfunction kf;
    CU_OK(cuLibraryLoadData(&lib, &test_image, NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryGetKernel(&k, lib, "fill"));
    ck_assert_int_eq(cuLibraryGetKernel(&k, lib, "nope"), CUDA_ERROR_NOT_FOUND);
    CU_OK(cuLibraryGetKernel(&k, lib, "fill"));
    CU_OK(cuKernelGetFunction(&kf, k));
    ck_assert_ptr_ne((void *)kf, (void *)k);
    const char *name;
    CU_OK(cuKernelGetName(&name, k));
    ck_assert_str_eq(name, "fill");
    CU_OK(cuFuncGetName(&name, kf));
    ck_assert_str_eq(name, "fill");

    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 16 * 4));
    launch_fill((CUfunction)k, NULL, d, 5, 16); /* a CUkernel where a CUfunction goes */
    uint32_t h[16];
    CU_OK(cuMemcpyDtoH(h, d, sizeof h));
    ck_assert_uint_eq(h[15], 20);

    CUlaunchConfig cfg = {.gridDimX = 3,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 128,
                          .blockDimY = 1,
                          .blockDimZ = 1};
    uint32_t start = 1000;
    uint64_t n = 16;
    void *args[] = {&d, &start, &n};
    CU_OK(cuLaunchKernelEx(&cfg, kf, args, NULL));
    CU_OK(cuMemcpyDtoH(h, d, sizeof h));
    ck_assert_uint_eq(h[0], 1000);

    CUmodule m;
    CUfunction f2;
    CU_OK(cuLibraryGetModule(&m, lib));
    CU_OK(cuModuleGetFunction(&f2, m, "fill"));
    ck_assert_ptr_eq((void *)f2, (void *)kf);
    ck_assert_int_eq(cuModuleGetFunction(&f2, m, "nope"), CUDA_ERROR_NOT_FOUND);
    CU_OK(cuLibraryUnload(lib));
    ck_assert_int_eq(cuLibraryGetKernel(&k, lib, "fill"), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuMemFree(d));
}
END_TEST

START_TEST(param_info_offsets)
{
    CUfunction f = get_fn("mixed");
    size_t off, sz;
    const size_t want_off[] = {0, 8, 16, 24}, want_sz[] = {1, 8, 4, 16};
    for (size_t i = 0; i < 4; i++) {
        CU_OK(cuFuncGetParamInfo(f, i, &off, &sz));
        ck_assert_uint_eq(off, want_off[i]);
        ck_assert_uint_eq(sz, want_sz[i]);
    }
    ck_assert_int_eq(cuFuncGetParamInfo(f, 4, &off, &sz), CUDA_ERROR_INVALID_VALUE);

    char c = 'x';
    double dv = 2.5;
    int iv = -3;
    struct blob16 s;
    for (int i = 0; i < 16; i++)
        s.b[i] = (unsigned char)i;
    void *args[] = {&c, &dv, &iv, &s};
    CU_OK(cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
    ck_assert_int_eq(g_mixed_seen.c, 'x');
    ck_assert(g_mixed_seen.d == 2.5);
    ck_assert_int_eq(g_mixed_seen.i, -3);
    ck_assert_int_eq(memcmp(&g_mixed_seen.s, &s, 16), 0);
    ck_assert_uint_eq(g_mixed_seen.grid0, 2);
    ck_assert_uint_eq(g_mixed_seen.block0, 64);
    ck_assert_str_eq(g_mixed_seen.name, "mixed");
}
END_TEST

struct gpa_case {
    const char *base;
    int version;
    cuuint64_t flags;
    const char *symbol;
};

static const struct gpa_case gpa_cases[] = {
    {"cuMemcpyHtoD", 12000, 0, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpyHtoD_v2_ptds"},
    {"cuMemcpyHtoD", 6000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemcpyHtoD_v2"},
    {"cuLaunchKernel", 12000, 0, "cuLaunchKernel"},
    {"cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuLaunchKernel_ptsz"},
    {"cuLaunchKernelEx", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuLaunchKernelEx_ptsz"},
    {"cuMemAlloc", 12000, 0, "cuMemAlloc_v2"},
    {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
    {"cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture"},
    {"cuStreamBeginCapture", 10000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuStreamBeginCapture_ptsz"},
    {"cuStreamBeginCapture", 12000, 0, "cuStreamBeginCapture_v2"},
    {"cuStreamBeginCapture", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuStreamBeginCapture_v2_ptsz"},
    {"cuCtxSynchronize", 12080, 0, "cuCtxSynchronize"},
    {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
    {"cuCtxSynchronize", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuCtxSynchronize_v2"},
    {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
    {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
    {"cuMemcpyBatchAsync", 12080, 0, "cuMemcpyBatchAsync"},
    {"cuMemcpyBatchAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuMemcpyBatchAsync_v2_ptsz"},
    {"cuEventElapsedTime", 13000, 0, "cuEventElapsedTime_v2"},
    {"cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags"},
    {"cuGraphLaunch", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuGraphLaunch_ptsz"},
    {"cuMemsetD32Async", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuMemsetD32Async_ptsz"},
    {"cuCtxCreate", 13000, 0, "cuCtxCreate_v4"},
    {"cuStreamGetCaptureInfo", 13000, 0, "cuStreamGetCaptureInfo_v3"},
};

START_TEST(get_proc_address_matches_dlsym)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(lib);
    for (size_t i = 0; i < sizeof gpa_cases / sizeof gpa_cases[0]; i++) {
        const struct gpa_case *c = &gpa_cases[i];
        void *want = dlsym(lib, c->symbol);
        ck_assert_msg(want != NULL, "dlsym %s", c->symbol);
        void *got = NULL;
        CUdriverProcAddressQueryResult st = 99;
        CU_OK(cuGetProcAddress_v2(c->base, &got, c->version, c->flags, &st));
        ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
        ck_assert_msg(got == want, "%s@%d flags %llu: not %s", c->base, c->version,
                      (unsigned long long)c->flags, c->symbol);
        /* the legacy 4-argument resolver gives the same answer */
        CUresult (*gpa1)(const char *, void **, int, cuuint64_t) =
            (CUresult(*)(const char *, void **, int, cuuint64_t))dlsym(lib, "cuGetProcAddress");
        got = NULL;
        CU_OK(gpa1(c->base, &got, c->version, c->flags));
        ck_assert_ptr_eq(got, want);
    }
    void *got = (void *)1;
    CUdriverProcAddressQueryResult st;
    ck_assert_int_eq(cuGetProcAddress_v2("cuNoSuchThing", &got, 13000, 0, &st),
                     CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(cuGetProcAddress_v2("cuLibraryLoadData", &got, 11000, 0, &st),
                     CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    /* base names only, as the real driver */
    ck_assert_int_eq(cuGetProcAddress_v2("cuMemAlloc_v2", &got, 13000, 0, &st),
                     CUDA_ERROR_NOT_FOUND);
    dlclose(lib);
}
END_TEST

/* Every row of ptds.def: two exported functions, counted apart, and the twin
 * is what cuGetProcAddress gives for per-thread semantics from its version. */
static const struct twin_row {
    const char *api;
    int version;
    const char *legacy, *twin;
} twin_rows[] = {
#define FAKE_PT(api, ver, sym, sfx, params, args) {#api, ver, #sym, #sym "_" #sfx},
#include "ptds.def"
#undef FAKE_PT
};

START_TEST(every_twin_is_its_own_symbol)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(lib);
    ck_assert_uint_ge(sizeof twin_rows / sizeof twin_rows[0], 58);
    for (size_t i = 0; i < sizeof twin_rows / sizeof twin_rows[0]; i++) {
        const struct twin_row *r = &twin_rows[i];
        void *legacy = dlsym(lib, r->legacy), *twin = dlsym(lib, r->twin);
        ck_assert_msg(legacy && twin && legacy != twin, "%s / %s", r->legacy, r->twin);
        ck_assert_msg(fake_fail_next(r->legacy, CUDA_SUCCESS) == 0, "no counter: %s", r->legacy);
        ck_assert_msg(fake_fail_next(r->twin, CUDA_SUCCESS) == 0, "no counter: %s", r->twin);
        void *got = NULL;
        CU_OK(cuGetProcAddress_v2(r->api, &got, r->version,
                                  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
        ck_assert_msg(got == twin, "%s@%d per-thread: not %s", r->api, r->version, r->twin);
        CU_OK(cuGetProcAddress_v2(r->api, &got, r->version, 0, NULL));
        ck_assert_msg(got == legacy, "%s@%d: not %s", r->api, r->version, r->legacy);
    }
    dlclose(lib);
}
END_TEST

START_TEST(every_hooked_symbol_is_exported)
{
    /* run from the repository root by make */
    FILE *f = fopen("hooks/hooks.def", "r");
    if (!f)
        return; /* not in a checkout: nothing to compare against */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(lib);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128];
        if (sscanf(line, " ATL_HOOK(%127[A-Za-z0-9_]", name) == 1 ||
            sscanf(line, " ATL_HOOK_LIGHT(%127[A-Za-z0-9_]", name) == 1) {
            ck_assert_msg(dlsym(lib, name) != NULL, "fake does not export %s", name);
            n++;
        }
    }
    fclose(f);
    ck_assert_int_gt(n, 100);
    dlclose(lib);
}
END_TEST

START_TEST(fault_is_pending_then_sticky)
{
    CUfunction fault = get_fn("fault");
    CUfunction fill = get_fn("fill");
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 256));
    CU_OK(cuLaunchKernel(fault, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)); /* async: fine */
    launch_fill(fill, NULL, d, 1, 4); /* enqueues fine; a dead context runs nothing */
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS); /* sticky */
    CUdeviceptr d2;
    ck_assert_int_eq(cuMemAlloc(&d2, 256), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuStreamSynchronize(NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
    uint32_t h = 0;
    ck_assert_int_eq(cuMemcpyDtoH(&h, d, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
    /* a reset gives a working context again */
    CU_OK(cuDevicePrimaryCtxReset(0));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemAlloc(&d2, 256));
    CU_OK(cuMemFree(d2));
}
END_TEST

START_TEST(fault_surfaces_at_first_sync_copy)
{
    CUfunction fault = get_fn("fault");
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 256));
    CU_OK(cuLaunchKernel(fault, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    uint32_t h = 0;
    ck_assert_int_eq(cuMemcpyDtoH(&h, d, 4), CUDA_ERROR_ILLEGAL_ADDRESS);
    CUevent e;
    ck_assert_int_eq(cuEventCreate(&e, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
}
END_TEST

START_TEST(soft_error_is_reported_once)
{
    CUfunction soft = get_fn("soft");
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuLaunchKernel(soft, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(capture_freezes_arguments_and_replays)
{
    CUfunction fill = get_fn("fill");
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d, d2;
    CU_OK(cuMemAlloc(&d, 16 * 4));
    CU_OK(cuMemAlloc(&d2, 16 * 4));

    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus cs;
    CU_OK(cuStreamIsCapturing(s, &cs));
    ck_assert_int_eq(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    uint32_t start = 1;
    uint64_t n = 16;
    void *args[] = {&d, &start, &n};
    CU_OK(cuMemsetD32Async(d2, 0xdeadbeef, 16, s));
    CU_OK(cuLaunchKernel(fill, 1, 1, 1, 16, 1, 1, 0, s, args, NULL));
    CU_OK(cuMemcpyDtoDAsync(d2, d, 8, s)); /* first two words */
    start = 2;                             /* too late: frozen at capture */
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    ck_assert_uint_eq(fake_graph_num_ops(g), 3);
    CU_OK(cuStreamIsCapturing(s, &cs));
    ck_assert_int_eq(cs, CU_STREAM_CAPTURE_STATUS_NONE);

    uint32_t h[16];
    CU_OK(cuMemcpyDtoH(h, d, sizeof h));
    ck_assert_uint_eq(h[0], 0); /* nothing ran during capture */

    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(h, d, sizeof h));
    ck_assert_uint_eq(h[0], 1);
    ck_assert_uint_eq(h[15], 16);
    CU_OK(cuMemcpyDtoH(h, d2, sizeof h));
    ck_assert_uint_eq(h[0], 1);
    ck_assert_uint_eq(h[1], 2);
    ck_assert_uint_eq(h[2], 0xdeadbeef);

    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(sync_during_capture_invalidates)
{
    CUfunction fill = get_fn("fill");
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 64));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_fill(fill, s, d, 1, 4);
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUstreamCaptureStatus cs;
    CU_OK(cuStreamIsCapturing(s, &cs));
    ck_assert_int_eq(cs, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph g = (CUgraph)1;
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_ptr_null(g);
    /* the legacy NULL stream cannot capture */
    ck_assert_int_eq(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
    /* the legacy one-argument entry point */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CUresult (*begin1)(CUstream) = (CUresult(*)(CUstream))dlsym(lib, "cuStreamBeginCapture");
    CU_OK(begin1(s));
    CU_OK(cuStreamEndCapture(s, &g));
    ck_assert_uint_eq(fake_graph_num_ops(g), 0);
    CU_OK(cuGraphDestroy(g));
    dlclose(lib);
}
END_TEST

START_TEST(pointer_attributes)
{
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 1000));
    unsigned mt = 0;
    CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    ck_assert_uint_eq(mt, CU_MEMORYTYPE_DEVICE);
    CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 999));
    ck_assert_uint_eq(mt, CU_MEMORYTYPE_DEVICE);
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, d + 500));
    ck_assert_uint_eq(base, d);
    ck_assert_uint_eq(size, 1000);

    CUdeviceptr m;
    CU_OK(cuMemAllocManaged(&m, 64, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, m));
    ck_assert_uint_eq(mt, CU_MEMORYTYPE_DEVICE);

    void *pinned;
    CU_OK(cuMemAllocHost(&pinned, 128));
    CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pinned));
    ck_assert_uint_eq(mt, CU_MEMORYTYPE_HOST);

    char *pageable = malloc(4096);
    ck_assert_int_eq(
        cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pageable),
        CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
    void *data[] = {&mt};
    mt = 77;
    CU_OK(cuPointerGetAttributes(1, attrs, data, (CUdeviceptr)pageable));
    ck_assert_uint_eq(mt, 0);

    CU_OK(cuMemHostRegister(pageable, 4096, 0));
    CU_OK(
        cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(pageable + 10)));
    ck_assert_uint_eq(mt, CU_MEMORYTYPE_HOST);
    ck_assert_int_eq(cuMemHostRegister(pageable, 4096, 0),
                     CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CU_OK(cuMemHostUnregister(pageable));
    ck_assert_int_eq(cuMemHostUnregister(pageable), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    free(pageable);
    CU_OK(cuMemFreeHost(pinned));
    CU_OK(cuMemFree(m));
    CU_OK(cuMemFree(d));
}
END_TEST

START_TEST(free_errors_and_live_count)
{
    size_t before = fake_live_allocations();
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 10));
    ck_assert_uint_eq(fake_live_allocations(), before + 1);
    ck_assert_int_eq(cuMemFree(d + 4), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(d));
    ck_assert_int_eq(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFree((CUdeviceptr)0x1234), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(fake_live_allocations(), before);
    ck_assert_int_eq(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);

    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuMemAllocAsync(&d, 100, s));
    CU_OK(cuMemsetD8Async(d, 1, 100, s));
    CU_OK(cuMemFreeAsync(d, s));
    ck_assert_int_eq(cuMemFreeAsync(d, s), CUDA_ERROR_INVALID_VALUE);
    CUmemoryPool pool;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    CU_OK(cuMemAllocFromPoolAsync(&d, 100, pool, s));
    CU_OK(cuMemFreeAsync(d, s));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* VMM: a handle's memory is seen through every mapping of it, kernels and
 * copies accept mapped addresses, memory is charged at cuMemCreate, and the
 * misuse the real driver refuses is refused. */
START_TEST(vmm_maps_one_handle_at_two_addresses)
{
    const size_t g = (size_t)2 << 20;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    size_t gran = 0, freeb, total, free0;
    CU_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ck_assert_uint_eq(gran, g);
    CU_OK(cuMemGetInfo(&free0, &total));
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(cuMemCreate(&h, g + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemCreate(&h, g, &prop, 0));
    CU_OK(cuMemGetInfo(&freeb, &total));
    ck_assert_uint_eq(free0 - freeb, g);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
    ck_assert_uint_eq(va % g, 0);
    CU_OK(cuMemMap(va, g, 0, h, 0));
    ck_assert_int_eq(cuMemMap(va, g, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* mapped already */
    CU_OK(cuMemMap(va + g, g, 0, h, 0));
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, 2 * g, &acc, 1));

    launch_fill(get_fn("fill"), NULL, va + 256, 5, 16);
    uint32_t back[16];
    CU_OK(cuMemcpyDtoH(back, va + g + 256, sizeof back));
    ck_assert_uint_eq(back[0], 5);
    ck_assert_uint_eq(back[15], 20);

    ck_assert_int_eq(cuMemAddressFree(va, 2 * g), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    CU_OK(cuMemRelease(h)); /* the memory stays until its last mapping goes */
    ck_assert_int_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemcpyDtoH(back, va + 256, sizeof back));
    ck_assert_uint_eq(back[1], 6);
    CU_OK(cuMemUnmap(va, 2 * g));
    ck_assert_int_eq(cuMemUnmap(va, 2 * g), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpyDtoH(back, va + 256, sizeof back), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemGetInfo(&freeb, &total));
    ck_assert_uint_eq(freeb, free0);
    CU_OK(cuMemAddressFree(va, 2 * g));

    fake_set_total_mem(g);
    ck_assert_int_eq(cuMemCreate(&h, 2 * g, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
}
END_TEST

START_TEST(fail_next_and_counts)
{
    fake_reset_counts();
    ck_assert_int_eq(fake_fail_next("cuMemAlloc_v2", CUDA_ERROR_OUT_OF_MEMORY), 0);
    CUdeviceptr d = 0;
    ck_assert_int_eq(cuMemAlloc(&d, 64), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(d, 0);
    CU_OK(cuMemAllocManaged(&d, 64, CU_MEM_ATTACH_GLOBAL)); /* other symbols unaffected */
    CU_OK(cuMemFree(d));
    CU_OK(cuMemAlloc(&d, 64)); /* only the next call */
    CU_OK(cuMemFree(d));
    ck_assert_uint_eq(fake_calls("cuMemAlloc_v2"), 2);
    ck_assert_uint_eq(fake_calls("cuMemFree_v2"), 2);
    ck_assert_uint_eq(fake_calls("cuMemcpyHtoD_v2_ptds"), 0);
    ck_assert_int_eq(fake_fail_next("cuNoSuch", CUDA_ERROR_UNKNOWN), -1);
    fake_reset_counts();
    ck_assert_uint_eq(fake_calls("cuMemAlloc_v2"), 0);

    fake_set_deinitialized(1);
    ck_assert_int_eq(cuMemAlloc(&d, 64), CUDA_ERROR_DEINITIALIZED);
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_DEINITIALIZED);
    fake_set_deinitialized(0);
    CU_OK(cuCtxSynchronize());
}
END_TEST

START_TEST(oom_by_total_mem)
{
    fake_set_total_mem(1 << 20);
    size_t fr, total;
    CU_OK(cuMemGetInfo(&fr, &total));
    ck_assert_uint_eq(total, 1 << 20);
    ck_assert_uint_eq(fr, 1 << 20);
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, 512 << 10));
    CU_OK(cuMemGetInfo(&fr, &total));
    ck_assert_uint_eq(fr, 512 << 10);
    ck_assert_int_eq(cuMemAlloc(&b, 768 << 10), CUDA_ERROR_OUT_OF_MEMORY);
    void *pinned; /* host memory does not count */
    CU_OK(cuMemAllocHost(&pinned, 4 << 20));
    CU_OK(cuMemFreeHost(pinned));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemAlloc(&b, 768 << 10));
    CU_OK(cuMemFree(b));
}
END_TEST

START_TEST(copies_2d_3d_arrays_memsets)
{
    /* 2D: a 5x3 block between a pitched device buffer and packed host */
    CUdeviceptr d;
    size_t pitch;
    CU_OK(cuMemAllocPitch(&d, &pitch, 40, 4, 4));
    ck_assert_uint_eq(pitch, 512);
    CU_OK(cuMemsetD2D32(d, pitch, 0x11111111, 10, 4));
    unsigned char host[15];
    for (int i = 0; i < 15; i++)
        host[i] = (unsigned char)(i + 1);
    CUDA_MEMCPY2D c2 = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = host,
                        .srcPitch = 5,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = d,
                        .dstPitch = pitch,
                        .dstXInBytes = 2,
                        .dstY = 1,
                        .WidthInBytes = 5,
                        .Height = 3};
    CU_OK(cuMemcpy2D(&c2));
    unsigned char back[4 * 512];
    CU_OK(cuMemcpyDtoH(back, d, sizeof back));
    ck_assert_uint_eq(back[0], 0x11);
    ck_assert_uint_eq(back[512 + 1], 0x11);
    ck_assert_uint_eq(back[512 + 2], 1);
    ck_assert_uint_eq(back[512 + 6], 5);
    ck_assert_uint_eq(back[3 * 512 + 6], 15);
    ck_assert_uint_eq(back[3 * 512 + 7], 0x11);
    /* a copy past the end of device memory is refused */
    c2.dstY = 2;
    ck_assert_int_eq(cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);

    /* 3D: 2x2x2 bytes out of a 4x4x4 device cube */
    CUdeviceptr cube;
    CU_OK(cuMemAlloc(&cube, 64));
    unsigned char vals[64];
    for (int i = 0; i < 64; i++)
        vals[i] = (unsigned char)i;
    CU_OK(cuMemcpyHtoD(cube, vals, 64));
    unsigned char out[8] = {0};
    CUDA_MEMCPY3D c3 = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = cube,
                        .srcPitch = 4,
                        .srcHeight = 4,
                        .srcXInBytes = 1,
                        .srcY = 1,
                        .srcZ = 1,
                        .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = out,
                        .dstPitch = 2,
                        .dstHeight = 2,
                        .WidthInBytes = 2,
                        .Height = 2,
                        .Depth = 2};
    CU_OK(cuMemcpy3D(&c3));
    const unsigned char want[8] = {21, 22, 25, 26, 37, 38, 41, 42};
    ck_assert_int_eq(memcmp(out, want, 8), 0);

    /* arrays */
    CUarray arr;
    CUDA_ARRAY_DESCRIPTOR ad = {
        .Width = 16, .Height = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    CU_OK(cuArrayCreate(&arr, &ad));
    CU_OK(cuMemcpyHtoA(arr, 4, vals, 8));
    unsigned char ab[16] = {0};
    CU_OK(cuMemcpyAtoH(ab, arr, 0, 16));
    ck_assert_uint_eq(ab[3], 0);
    ck_assert_uint_eq(ab[4], 0);
    ck_assert_uint_eq(ab[11], 7);
    ck_assert_int_eq(cuMemcpyHtoA(arr, 10, vals, 8), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemcpyAtoD(cube, arr, 4, 8));
    CU_OK(cuArrayDestroy(arr));

    /* memsets and the generic unified copy (device <-> pageable host) */
    CU_OK(cuMemsetD16(cube, 0xabcd, 4));
    uint16_t w[5];
    CU_OK(cuMemcpy((CUdeviceptr)w, cube, sizeof w));
    ck_assert_uint_eq(w[3], 0xabcd);
    ck_assert_uint_eq(w[4], (9 << 8) | 8);
    ck_assert_int_eq(cuMemsetD32(cube + 1, 0, 1), CUDA_ERROR_INVALID_VALUE);

    /* batch */
    CUdeviceptr dsts[2] = {cube, cube + 32}, srcs[2] = {(CUdeviceptr)vals, (CUdeviceptr)vals};
    size_t sizes[2] = {4, 4};
    CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    size_t idx = 0;
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &idx, 1, s));
    unsigned char bb[36];
    CU_OK(cuMemcpyDtoH(bb, cube, 36));
    ck_assert_uint_eq(bb[3], 3);
    ck_assert_uint_eq(bb[35], 3);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(cube));
    CU_OK(cuMemFree(d));
}
END_TEST

START_TEST(overrun_lands_in_owned_memory)
{
    CUfunction f = get_fn("overrun");
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 100));
    uint64_t n = 100;
    void *args[] = {&d, &n};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CU_OK(cuCtxSynchronize());
    ck_assert_uint_eq(((unsigned char *)d)[150], 0xAB);
    CU_OK(cuMemFree(d));
}
END_TEST

START_TEST(module_load_by_path_and_name)
{
    const char *path = getenv("FAKE_TESTMOD");
    CUmodule m;
    CUfunction f;
    if (path) {
        CU_OK(cuModuleLoad(&m, path));
        CU_OK(cuModuleGetFunction(&f, m, "_Z4iotaPjjm"));
        CUdeviceptr d;
        CU_OK(cuMemAlloc(&d, 16));
        launch_fill(f, NULL, d, 40, 4);
        uint32_t h[4];
        CU_OK(cuMemcpyDtoH(h, d, 16));
        ck_assert_uint_eq(h[3], 43);
        CU_OK(cuMemFree(d));
        CU_OK(cuModuleUnload(m));
        CUlibrary lib;
        CU_OK(cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0));
        CU_OK(cuLibraryUnload(lib));
    }
    ck_assert_int_eq(cuModuleLoad(&m, "/nonexistent/x.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
    CU_OK(fake_register_image("tests.cubin", &test_image));
    CU_OK(cuModuleLoad(&m, "tests.cubin"));
    CU_OK(cuModuleGetFunction(&f, m, "mixed"));
    CU_OK(cuModuleUnload(m));
    ck_assert_int_eq(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    int junk = 0;
    ck_assert_int_eq(cuModuleLoadData(&m, &junk), CUDA_ERROR_INVALID_IMAGE);
}
END_TEST

START_TEST(init_context_and_errors)
{
    int v = 0;
    CU_OK(cuDriverGetVersion(&v));
    ck_assert_int_eq(v, 13000);
    int count = 0;
    CU_OK(cuDeviceGetCount(&count));
    ck_assert_int_eq(count, 1);
    int major = 0, uva = 0;
    CU_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CU_OK(cuDeviceGetAttribute(&uva, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
    ck_assert_int_eq(major, 9);
    ck_assert_int_eq(uva, 1);
    char name[64];
    CU_OK(cuDeviceGetName(name, sizeof name, 0));
    ck_assert_ptr_nonnull(strstr(name, "fake"));

    CUcontext c2, cur;
    CU_OK(cuCtxCreate(&c2, NULL, 0, 0));
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, c2);
    CU_OK(cuCtxSynchronize_v2(c2));
    CU_OK(cuCtxPopCurrent(&cur));
    ck_assert_ptr_eq(cur, c2);
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, g_ctx);
    CU_OK(cuCtxDestroy(c2));
    ck_assert_int_eq(cuCtxPushCurrent(c2), CUDA_ERROR_INVALID_CONTEXT);

    CU_OK(cuCtxSetCurrent(NULL));
    CUdeviceptr d;
    ck_assert_int_eq(cuMemAlloc(&d, 8), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuCtxSetCurrent(g_ctx));

    const struct {
        CUresult code;
        const char *name, *text;
    } errs[] = {
        {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
        {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
        {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
        {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
        {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
         "an illegal memory access was encountered"},
        {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
        {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
         "operation failed due to a previous error during capture"},
    };
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
        const char *s;
        CU_OK(cuGetErrorName(errs[i].code, &s));
        ck_assert_str_eq(s, errs[i].name);
        CU_OK(cuGetErrorString(errs[i].code, &s));
        ck_assert_str_eq(s, errs[i].text);
    }
    const char *s = "x";
    ck_assert_int_eq(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_ptr_null(s);
}
END_TEST

START_TEST(events_and_streams)
{
    CUstream s;
    CU_OK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -1));
    CUevent a, b;
    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, 0));
    float ms = -1;
    ck_assert_int_eq(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuEventRecord(a, s));
    CU_OK(cuEventRecord(b, s));
    CU_OK(cuEventSynchronize(b));
    CU_OK(cuEventQuery(b));
    CU_OK(cuStreamQuery(s));
    CU_OK(cuEventElapsedTime(&ms, a, b));
    ck_assert(ms >= 0);
    CU_OK(cuStreamWaitEvent(s, a, 0));
    CU_OK(cuEventDestroy(a));
    CU_OK(cuEventDestroy(b));
    ck_assert_int_eq(cuEventDestroy(b), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuStreamDestroy(s));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
}
END_TEST

START_TEST(multi_stream_capture_and_to_graph)
{
    CUfunction fill = get_fn("fill");
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CUevent fork, join;
    CU_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 64));

    CU_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuEventRecord(fork, a));
    ck_assert_int_eq(cuEventSynchronize(fork), CUDA_ERROR_CAPTURED_EVENT);
    CU_OK(cuStreamWaitEvent(b, fork, 0)); /* b joins a's capture */
    CUstreamCaptureStatus cs;
    cuuint64_t ida = 0, idb = 1;
    CUgraph ga = NULL, gb = NULL;
    CU_OK(cuStreamGetCaptureInfo(a, &cs, &ida, &ga, NULL, NULL, NULL));
    CU_OK(cuStreamGetCaptureInfo(b, &cs, &idb, &gb, NULL, NULL, NULL));
    ck_assert_int_eq(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ck_assert_uint_eq(ida, idb);
    ck_assert_ptr_eq(ga, gb);
    launch_fill(fill, b, d, 9, 4);
    CU_OK(cuEventRecord(join, b));
    CU_OK(cuStreamWaitEvent(a, join, 0));
    ck_assert_int_eq(cuStreamEndCapture(b, &gb), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    CU_OK(cuStreamEndCapture(a, &ga));
    CU_OK(cuStreamIsCapturing(b, &cs));
    ck_assert_int_eq(cs, CU_STREAM_CAPTURE_STATUS_NONE);
    ck_assert_uint_eq(fake_graph_num_ops(ga), 1);

    /* capture into an existing graph; a graph launched inside a capture
     * becomes part of it */
    CUgraphExec xa;
    CU_OK(cuGraphInstantiate(&xa, ga, 0));
    CUgraph g2, got;
    CU_OK(cuGraphCreate(&g2, 0));
    CU_OK(cuStreamBeginCaptureToGraph(a, g2, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD8Async(d, 0, 64, a));
    CU_OK(cuGraphLaunch(xa, a));
    CU_OK(cuStreamEndCapture(a, &got));
    ck_assert_ptr_eq(got, g2);
    ck_assert_uint_eq(fake_graph_num_ops(g2), 2);
    size_t nn = 0;
    CU_OK(cuGraphGetNodes(g2, NULL, &nn));
    ck_assert_uint_eq(nn, 2);

    CU_OK(cuMemsetD8(d, 0xff, 64));
    CUgraphExec x2;
    CU_OK(cuGraphInstantiate(&x2, g2, 0));
    CU_OK(cuGraphLaunch(x2, b));
    uint32_t h[16];
    CU_OK(cuMemcpyDtoH(h, d, sizeof h));
    ck_assert_uint_eq(h[0], 9);
    ck_assert_uint_eq(h[3], 12);
    ck_assert_uint_eq(h[4], 0);
    CU_OK(cuGraphExecDestroy(x2));
    CU_OK(cuGraphExecDestroy(xa));
    CU_OK(cuGraphDestroy(g2));
    CU_OK(cuGraphDestroy(ga));
    CU_OK(cuStreamDestroy(a));
    CU_OK(cuStreamDestroy(b));
}
END_TEST

START_TEST(ctx_sync_during_capture_and_replay_fault)
{
    CUfunction fault = get_fn("fault");
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g;
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* a faulting kernel recorded in a graph faults when the graph runs */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuLaunchKernel(fault, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuCtxSynchronize()); /* capture ran nothing */
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(cuGraphLaunch(x, s), CUDA_ERROR_ILLEGAL_ADDRESS);
}
END_TEST

START_TEST(batch_3d_copy)
{
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 64));
    unsigned char src[16];
    for (int i = 0; i < 16; i++)
        src[i] = (unsigned char)(i + 1);
    CUDA_MEMCPY3D_BATCH_OP op = {0};
    op.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op.src.op.ptr.ptr = (CUdeviceptr)src;
    op.src.op.ptr.rowLength = 4;
    op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op.dst.op.ptr.ptr = d;
    op.dst.op.ptr.rowLength = 8;
    op.extent = (CUextent3D){2, 2, 1};
    op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    CU_OK(cuMemcpy3DBatchAsync(1, &op, 0, NULL));
    unsigned char out[16];
    CU_OK(cuMemcpyDtoH(out, d, 16));
    ck_assert_uint_eq(out[0], 1);
    ck_assert_uint_eq(out[1], 2);
    ck_assert_uint_eq(out[2], 0);
    ck_assert_uint_eq(out[8], 5);
    ck_assert_uint_eq(out[9], 6);
    CU_OK(cuMemFree(d));
}
END_TEST

struct worker {
    CUcontext ctx;
    CUfunction fill;
    int id, failures;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (cuCtxSetCurrent(w->ctx) != CUDA_SUCCESS) {
        w->failures++;
        return NULL;
    }
    CUstream s;
    if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        w->failures++;
        return NULL;
    }
    for (int it = 0; it < 200; it++) {
        CUdeviceptr d;
        uint32_t h[32], start = (uint32_t)(w->id * 100000 + it);
        uint64_t n = 32;
        if (cuMemAlloc(&d, sizeof h) != CUDA_SUCCESS) {
            w->failures++;
            continue;
        }
        void *args[] = {&d, &start, &n};
        CUstream use = (it & 1) ? s : NULL;
        if (cuLaunchKernel(w->fill, 1, 1, 1, 32, 1, 1, 0, use, args, NULL) != CUDA_SUCCESS ||
            cuMemcpyDtoHAsync(h, d, sizeof h, use) != CUDA_SUCCESS ||
            cuStreamSynchronize(use) != CUDA_SUCCESS)
            w->failures++;
        else
            for (int i = 0; i < 32; i++)
                if (h[i] != start + (uint32_t)i)
                    w->failures++;
        if (cuMemFree(d) != CUDA_SUCCESS)
            w->failures++;
    }
    cuStreamDestroy(s);
    return NULL;
}

START_TEST(threads_launch_alloc_copy)
{
    CUfunction fill = get_fn("fill");
    size_t before = fake_live_allocations();
    pthread_t t[8];
    struct worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (struct worker){g_ctx, fill, i, 0};
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(w[i].failures, 0);
    }
    ck_assert_uint_eq(fake_live_allocations(), before);
}
END_TEST

static Suite *fake_suite(void)
{
    Suite *s = suite_create("fakecuda");
    TCase *tc = tcase_create("driver");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, kernel_writes_bytes_read_back);
    tcase_add_test(tc, library_kernel_is_accepted_as_function);
    tcase_add_test(tc, param_info_offsets);
    tcase_add_test(tc, get_proc_address_matches_dlsym);
    tcase_add_test(tc, every_hooked_symbol_is_exported);
    tcase_add_test(tc, every_twin_is_its_own_symbol);
    tcase_add_test(tc, fault_is_pending_then_sticky);
    tcase_add_test(tc, fault_surfaces_at_first_sync_copy);
    tcase_add_test(tc, soft_error_is_reported_once);
    tcase_add_test(tc, capture_freezes_arguments_and_replays);
    tcase_add_test(tc, sync_during_capture_invalidates);
    tcase_add_test(tc, pointer_attributes);
    tcase_add_test(tc, free_errors_and_live_count);
    tcase_add_test(tc, vmm_maps_one_handle_at_two_addresses);
    tcase_add_test(tc, fail_next_and_counts);
    tcase_add_test(tc, oom_by_total_mem);
    tcase_add_test(tc, copies_2d_3d_arrays_memsets);
    tcase_add_test(tc, overrun_lands_in_owned_memory);
    tcase_add_test(tc, module_load_by_path_and_name);
    tcase_add_test(tc, init_context_and_errors);
    tcase_add_test(tc, events_and_streams);
    tcase_add_test(tc, multi_stream_capture_and_to_graph);
    tcase_add_test(tc, ctx_sync_during_capture_and_replay_fault);
    tcase_add_test(tc, batch_3d_copy);
    tcase_add_test(tc, threads_launch_alloc_copy);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fake_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
