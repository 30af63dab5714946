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
 * copy of each side and their ratio.
 *
 *   bench_launch CUBIN ab-threads ITERS LIB T
 * T threads launch at once, each on its own stream, alternating blocks of 256
 * empty launches through the driver and through the wrapper, each block
 * followed by a cuStreamSynchronize of its own side; prints the median ns
 * per launch of each side over every thread's blocks and their ratio, so a
 * lock or a shared cache line on the launch path shows as a ratio that grows
 * with T. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
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

/* The driver's `name` and LIB's wrapper of it (LIB dlopen'ed); exits unless
 * both exist and differ. */
static void both(const char *lib, const char *name, void **real, void **wrap)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h || !cu) {
        fprintf(stderr, "ab: %s\n", dlerror());
        exit(1);
    }
    *real = dlsym(cu, name);
    *wrap = dlsym(h, name);
    if (!*real || !*wrap || *real == *wrap) {
        fprintf(stderr, "ab: could not find both %s\n", name);
        exit(1);
    }
}

static double median(double *v, long n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Alternating blocks through `real` and `wrap`; per-block ns/launch medians. */
static void ab(CUfunction f, void **params, long iters, const char *lib)
{
    launch_fn real, wrap;
    CUresult (*real_sync)(void), (*wrap_sync)(void);
    both(lib, "cuLaunchKernel", (void **)&real, (void **)&wrap);
    both(lib, "cuCtxSynchronize", (void **)&real_sync, (void **)&wrap_sync);
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
    double mr = median(tr, blocks), mw = median(tw, blocks);
    double msr = median(sr, blocks), msw = median(sw, blocks);
    printf("ab enqueue: native %.1f atlastrace %.1f ratio %.4f | with the sync: native %.1f "
           "atlastrace %.1f ratio %.4f\n",
           mr, mw, mw / mr, msr, msw, msw / msr);
}

typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);

static void ab_d2h(CUdeviceptr src, long iters, const char *lib)
{
    dtoh_fn real, wrap;
    both(lib, "cuMemcpyDtoH_v2", (void **)&real, (void **)&wrap);
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
    double mr = median(tr, blocks), mw = median(tw, blocks);
    printf("ab d2h: native %.1f atlastrace %.1f ratio %.4f\n", mr, mw, mw / mr);
}

/* ab-threads: every thread's share of the work and its timings. */
struct tjob {
    CUcontext ctx;
    CUfunction f;
    launch_fn real, wrap;
    CUresult (*real_sync)(CUstream), (*wrap_sync)(CUstream);
    long blocks;
    double *tr, *tw;
};

static void *tjob_run(void *arg)
{
    struct tjob *j = arg;
    CUstream st;
    CHECK(cuCtxSetCurrent(j->ctx));
    CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    for (long b = 0; b < 2 * j->blocks; b++) {
        launch_fn fn = (b & 1) ? j->wrap : j->real;
        double t0 = now();
        for (int i = 0; i < 256; i++)
            CHECK(fn(j->f, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL));
        ((b & 1) ? j->tw : j->tr)[b / 2] = (now() - t0) / 256;
        CHECK((b & 1) ? j->wrap_sync(st) : j->real_sync(st));
    }
    CHECK(cuStreamDestroy(st));
    return NULL;
}

static void ab_threads(CUcontext ctx, CUfunction f, long iters, const char *lib, int nt)
{
    struct tjob proto = {.ctx = ctx, .f = f, .blocks = iters / 256};
    both(lib, "cuLaunchKernel", (void **)&proto.real, (void **)&proto.wrap);
    both(lib, "cuStreamSynchronize", (void **)&proto.real_sync, (void **)&proto.wrap_sync);
    struct tjob *jobs = calloc((size_t)nt, sizeof *jobs);
    pthread_t *tid = calloc((size_t)nt, sizeof *tid);
    double *tr = calloc((size_t)(nt * proto.blocks), sizeof *tr);
    double *tw = calloc((size_t)(nt * proto.blocks), sizeof *tw);
    if (!jobs || !tid || !tr || !tw || proto.blocks < 1)
        exit(1);
    for (int t = 0; t < nt; t++) {
        jobs[t] = proto;
        jobs[t].tr = tr + t * proto.blocks;
        jobs[t].tw = tw + t * proto.blocks;
        if (pthread_create(&tid[t], NULL, tjob_run, &jobs[t]) != 0)
            exit(1);
    }
    for (int t = 0; t < nt; t++)
        pthread_join(tid[t], NULL);
    double mr = median(tr, nt * proto.blocks), mw = median(tw, nt * proto.blocks);
    printf("ab threads=%d: native %.1f atlastrace %.1f ratio %.4f\n", nt, mr, mw, mw / mr);
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
    if (strcmp(mode, "ab-threads") == 0) {
        if (argc < 6)
            return 2;
        ab_threads(ctx, fe, iters, argv[4], atoi(argv[5]));
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
