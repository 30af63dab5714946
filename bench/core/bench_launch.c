/* One benchmark loop per process, so a preload's cost is measured against
 * the same loop run natively (bench/core/run_bench.sh interleaves them).
 *   bench_launch CUBIN empty|args8|d2h ITERS
 * Prints "ns_per_op N".
 *
 *   bench_launch CUBIN ab-empty|ab-args8 ITERS LIB
 * The small overheads measured inside one process: LIB (libatlastrace.so)
 * is dlopen'ed, not preloaded, and blocks of 256 launches alternate between
 * the driver's cuLaunchKernel and the library's exported wrapper of it; each
 * block ends with a cuCtxSynchronize of its own side (the wrapper's ends a
 * step under ATLAS_TRACE=1, so a traced run is a loop of identical steps).
 * Process to process variation (clocks, placement) cancels out. Prints the
 * median ns per launch of each side and their ratio twice: the launches
 * alone (the enqueue), and the whole block with its sync divided by 256
 * (the step end's work included).
 *
 *   bench_launch CUBIN ab-d2h ITERS LIB
 * The same for synchronous 16-byte cuMemcpyDtoH_v2 (always counted as
 * blocking copies): blocks of 256 copies alternate; prints the median ns per
 * copy of each side and their ratio. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s failed: %d\n", #call, (int)r_);                                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Alternating blocks through `real` and `wrap`; per-block ns/launch medians. */
static void ab(CUfunction f, void **params, long iters, const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h || !cu) {
        fprintf(stderr, "ab: %s\n", dlerror());
        exit(1);
    }
    launch_fn real = (launch_fn)dlsym(cu, "cuLaunchKernel");
    launch_fn wrap = (launch_fn)dlsym(h, "cuLaunchKernel");
    CUresult (*real_sync)(void) = (CUresult(*)(void))dlsym(cu, "cuCtxSynchronize");
    CUresult (*wrap_sync)(void) = (CUresult(*)(void))dlsym(h, "cuCtxSynchronize");
    if (!real || !wrap || real == wrap || !real_sync || !wrap_sync || real_sync == wrap_sync) {
        fprintf(stderr, "ab: could not find both functions\n");
        exit(1);
    }
    enum { BLOCK = 256 };
    long blocks = iters / BLOCK;
    double *tr = calloc(blocks, sizeof *tr), *tw = calloc(blocks, sizeof *tw);
    double *sr = calloc(blocks, sizeof *sr), *sw = calloc(blocks, sizeof *sw);
    if (!tr || !tw || !sr || !sw)
        exit(1);
    for (long b = 0; b < 2 * blocks; b++) {
        launch_fn fn = (b & 1) ? wrap : real;
        double t0 = now();
        for (int i = 0; i < BLOCK; i++)
            CHECK(fn(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
        double t1 = now();
        CHECK((b & 1) ? wrap_sync() : real_sync());
        double t2 = now();
        ((b & 1) ? tw : tr)[b / 2] = (t1 - t0) / BLOCK;
        ((b & 1) ? sw : sr)[b / 2] = (t2 - t0) / BLOCK;
    }
    qsort(tr, blocks, sizeof *tr, cmp_double);
    qsort(tw, blocks, sizeof *tw, cmp_double);
    qsort(sr, blocks, sizeof *sr, cmp_double);
    qsort(sw, blocks, sizeof *sw, cmp_double);
    long m = blocks / 2;
    printf("ab enqueue: native %.1f atlastrace %.1f ratio %.4f | with the sync: native %.1f "
           "atlastrace %.1f ratio %.4f\n",
           tr[m], tw[m], tw[m] / tr[m], sr[m], sw[m], sw[m] / sr[m]);
}

typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);

static void ab_d2h(CUdeviceptr src, long iters, const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    dtoh_fn real = h && cu ? (dtoh_fn)dlsym(cu, "cuMemcpyDtoH_v2") : NULL;
    dtoh_fn wrap = h && cu ? (dtoh_fn)dlsym(h, "cuMemcpyDtoH_v2") : NULL;
    if (!real || !wrap || real == wrap) {
        fprintf(stderr, "ab-d2h: could not find both functions\n");
        exit(1);
    }
    enum { BLOCK = 256 };
    long blocks = iters / BLOCK;
    double *tr = calloc(blocks, sizeof *tr), *tw = calloc(blocks, sizeof *tw);
    char host[16];
    if (!tr || !tw)
        exit(1);
    for (long b = 0; b < 2 * blocks; b++) {
        dtoh_fn fn = (b & 1) ? wrap : real;
        double t0 = now();
        for (int i = 0; i < BLOCK; i++)
            CHECK(fn(host, src, sizeof host));
        ((b & 1) ? tw : tr)[b / 2] = (now() - t0) / BLOCK;
    }
    qsort(tr, blocks, sizeof *tr, cmp_double);
    qsort(tw, blocks, sizeof *tw, cmp_double);
    printf("ab d2h: native %.1f atlastrace %.1f ratio %.4f\n", tr[blocks / 2], tw[blocks / 2],
           tw[blocks / 2] / tr[blocks / 2]);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    const char *mode = argv[2];
    long iters = atol(argv[3]);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fe, f8;
    CUdeviceptr buf;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoad(&mod, argv[1]));
    CHECK(cuModuleGetFunction(&fe, mod, "empty"));
    CHECK(cuModuleGetFunction(&f8, mod, "args8"));
    CHECK(cuMemAlloc(&buf, 1 << 20));
    unsigned n = 1, m = 2;
    float s = 1.5f;
    unsigned long long k = 3;
    int j = 4;
    CUdeviceptr b2 = buf + 4096, b3 = buf + 8192;
    void *p8[] = {&buf, &b2, &b3, &n, &m, &s, &k, &j};
    char host[16];

    /* warm up */
    for (int i = 0; i < 2000; i++)
        CHECK(cuLaunchKernel(fe, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());

    if (strcmp(mode, "ab-d2h") == 0) {
        if (argc < 5)
            return 2;
        ab_d2h(buf, iters, argv[4]);
        return 0;
    }
    if (strncmp(mode, "ab-", 3) == 0) {
        if (argc < 5)
            return 2;
        ab(strcmp(mode, "ab-args8") == 0 ? f8 : fe, strcmp(mode, "ab-args8") == 0 ? p8 : NULL,
           iters, argv[4]);
        return 0;
    }

    double t0 = now();
    if (strcmp(mode, "empty") == 0) {
        for (long i = 0; i < iters; i++) {
            CHECK(cuLaunchKernel(fe, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
            if ((i & 255) == 255)
                CHECK(cuCtxSynchronize());
        }
    } else if (strcmp(mode, "args8") == 0) {
        for (long i = 0; i < iters; i++) {
            CHECK(cuLaunchKernel(f8, 1, 1, 1, 32, 1, 1, 0, NULL, p8, NULL));
            if ((i & 255) == 255)
                CHECK(cuCtxSynchronize());
        }
    } else if (strcmp(mode, "d2h") == 0) {
        for (long i = 0; i < iters; i++)
            CHECK(cuMemcpyDtoH(host, buf, sizeof host));
    } else {
        return 2;
    }
    CHECK(cuCtxSynchronize());
    double t1 = now();
    printf("ns_per_op %.1f\n", (t1 - t0) / (double)iters);
    return 0;
}
