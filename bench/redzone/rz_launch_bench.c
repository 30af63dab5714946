/* Launch-mode red zones against the number of live allocations (issue #16):
 *   rz_launch_bench MODULE LIVE [LAUNCHES [BLOCKS]]
 * Makes LIVE allocations of 4 KB, then times BLOCKS (default 7) blocks of
 * LAUNCHES (default 3,000) tiny launches of `args8` (bench/core/kern_bench.cu:
 * three pointers, which fall into three of the live allocations in turn, and
 * five scalars; it writes nothing), each block ended by a cuCtxSynchronize.
 * Prints the medians over the blocks:
 *   us_per_launch LIVE US
 *   enqueue_us_per_launch LIVE US    (the loop alone, before the sync)
 * One configuration per process: bench/redzone/run_redzone_bench.sh runs it
 * natively, under each ATLAS_REDZONE_CHECK mode and under compute-sanitizer,
 * interleaved.
 *
 *   rz_launch_bench MODULE LIVE LAUNCHES BLOCKS ab LIB
 * The same loop inside one process, so process-to-process variation (clocks,
 * placement) cancels out: LIB (libatlastrace.so) is dlopen'ed, not preloaded,
 * the LIVE allocations are made through its cuMemAlloc_v2 (guarded, under
 * ATLAS_REDZONE), and BLOCKS blocks alternate between the driver's
 * cuLaunchKernel and cuCtxSynchronize and the library's wrappers of them.
 * Prints the median block of each side and their ratio:
 *   ab LIVE native US atlastrace US ratio R | enqueue: native US atlastrace US ratio R MODULE is
 * the cubin on a GPU, or on the fake driver (make redzone-bench-fake) the shared object of
 * bench/redzone/fake_kernels.c.
 *
 *   rz_launch_bench MODULE LIVE LAUNCHES BLOCKS ab-threads LIB T
 * The A/B with T threads launching at once, each on a stream of its own over
 * the same LIVE allocations; the threads meet at a barrier before every
 * block, so all of them run the same side together and a lock on the
 * library's launch path shows as a ratio that grows with T. Prints
 *   ab-threads T LIVE native US atlastrace US ratio R
 * (median block over every thread's blocks, microseconds per launch of one
 * thread).
 *
 *   rz_launch_bench MODULE LIVE LAUNCHES BLOCKS ab-floor LIB CHECK_PTX
 * Launch mode's own cost above its floor (issue #29): blocks alternate
 * between three sides, the driver's launches alone, the driver's launches
 * each followed by the library's check kernel of the three zones the launch
 * reaches, queued by hand as the library queues it (CHECK_PTX: the sm_90
 * PTX of the kernels, a dependent launch; the floor), and the library's
 * launch mode (LIB under ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch). Prints
 *   floor LIVE native US floor US atlastrace US over-floor R
 * R: the library's time over the floor's (the bar: at most 1.10x, flat
 * from 10 to 10,000 live allocations). */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);

static void launches_on(launch_fn fn, CUfunction f, const CUdeviceptr *live, long nlive, long n,
                        CUstream st)
{
    unsigned a = 1, b = 2;
    float s = 1.5f;
    unsigned long long k = 3;
    int j = 4;
    for (long i = 0; i < n; i++) {
        CUdeviceptr p0 = live[i % nlive], p1 = live[(i + 1) % nlive], p2 = live[(i + 2) % nlive];
        void *params[] = {&p0, &p1, &p2, &a, &b, &s, &k, &j};
        CHECK(fn(f, 1, 1, 1, 32, 1, 1, 0, st, params, NULL));
    }
}

static void launches_by(launch_fn fn, CUfunction f, const CUdeviceptr *live, long nlive, long n)
{
    launches_on(fn, f, live, nlive, n, NULL);
}

static void launches(CUfunction f, const CUdeviceptr *live, long nlive, long n)
{
    launches_by(cuLaunchKernel, f, live, nlive, n);
}

/* The driver's `name` and LIB's wrapper of it; exits unless both exist and
 * differ. */
static void *wrapper(void *lib, void *cu, const char *name, void **real)
{
    void *w = dlsym(lib, name);
    *real = dlsym(cu, name);
    if (!w || !*real || w == *real) {
        fprintf(stderr, "rz_launch_bench: could not find both %s\n", name);
        exit(1);
    }
    return w;
}

/* The A/B's two sides: LIB dlopen'ed, and the driver it wraps. */
struct ab_side {
    void *lib, *cu;
};

/* Opens both sides and makes the LIVE allocations through LIB's
 * cuMemAlloc_v2 (guarded, under ATLAS_REDZONE); exits on failure. */
static struct ab_side ab_open(const char *libpath, CUdeviceptr *live, long nlive)
{
    struct ab_side s = {dlopen(libpath, RTLD_NOW | RTLD_LOCAL),
                        dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)};
    if (!s.lib || !s.cu) {
        fprintf(stderr, "rz_launch_bench: %s\n", dlerror());
        exit(1);
    }
    void *real;
    CUresult (*wrap_alloc)(CUdeviceptr *, size_t) = wrapper(s.lib, s.cu, "cuMemAlloc_v2", &real);
    for (long i = 0; i < nlive; i++)
        CHECK(wrap_alloc(&live[i], 4096));
    return s;
}

/* Frees the LIVE allocations through LIB's cuMemFree_v2. */
static void ab_close(struct ab_side s, const CUdeviceptr *live, long nlive)
{
    void *real;
    CUresult (*wrap_free)(CUdeviceptr) = wrapper(s.lib, s.cu, "cuMemFree_v2", &real);
    for (long i = 0; i < nlive; i++)
        CHECK(wrap_free(live[i]));
}

static int ab(CUfunction f, CUdeviceptr *live, long nlive, long n, int blocks, const char *libpath)
{
    struct ab_side s = ab_open(libpath, live, nlive);
    void *real_launch, *real_sync;
    launch_fn wrap_launch = (launch_fn)wrapper(s.lib, s.cu, "cuLaunchKernel", &real_launch);
    CUresult (*wrap_sync)(void) = wrapper(s.lib, s.cu, "cuCtxSynchronize", &real_sync);
    CUresult (*native_sync)(void) = (CUresult(*)(void))real_sync;
    /* warm up both sides */
    launches_by((launch_fn)real_launch, f, live, nlive, 300);
    CHECK(native_sync());
    launches_by(wrap_launch, f, live, nlive, 300);
    CHECK(wrap_sync());
    double all[2][99], enq[2][99];
    for (int b = 0; b < 2 * blocks; b++) {
        int w = b & 1;
        double t0 = now_us();
        launches_by(w ? wrap_launch : (launch_fn)real_launch, f, live, nlive, n);
        double te = now_us();
        CHECK(w ? wrap_sync() : native_sync());
        double t1 = now_us();
        all[w][b / 2] = (t1 - t0) / (double)n;
        enq[w][b / 2] = (te - t0) / (double)n;
    }
    double an = median(all[0], blocks), aw = median(all[1], blocks);
    double en = median(enq[0], blocks), ew = median(enq[1], blocks);
    printf("ab %ld native %.2f atlastrace %.2f ratio %.3f | enqueue: native %.2f atlastrace %.2f "
           "ratio %.3f\n",
           nlive, an, aw, aw / an, en, ew, ew / en);
    ab_close(s, live, nlive);
    return 0;
}

/* ab-floor: launch mode against what its one check per launch costs by
 * itself. */
static int ab_floor(CUfunction f, CUdeviceptr *live, long nlive, long n, int blocks,
                    const char *libpath, const char *ptx)
{
    struct ab_side s = ab_open(libpath, live, nlive);
    void *real_launch, *real_sync;
    launch_fn wrap_launch = (launch_fn)wrapper(s.lib, s.cu, "cuLaunchKernel", &real_launch);
    CUresult (*wrap_sync)(void) = wrapper(s.lib, s.cu, "cuCtxSynchronize", &real_sync);
    CUresult (*native_sync)(void) = (CUresult(*)(void))real_sync;
    struct rz_check chk;
    rz_check_load(&chk, ptx);
    int major = 0;
    CUdevice dev;
    CHECK(cuCtxGetDevice(&dev));
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    unsigned a = 1, b = 2;
    float sc = 1.5f;
    unsigned long long k = 3, ticket = 0;
    int j = 4;
    double all[3][99];
    for (int b3 = -3; b3 < 3 * blocks; b3++) { /* the first three: a warm-up of each side */
        int w = (b3 + 3) % 3;
        double t0 = now_us();
        for (long i = 0; i < n; i++) {
            CUdeviceptr p[3] = {live[i % nlive], live[(i + 1) % nlive], live[(i + 2) % nlive]};
            void *params[] = {&p[0], &p[1], &p[2], &a, &b, &sc, &k, &j};
            CHECK((w == 2 ? wrap_launch : (launch_fn)real_launch)(f, 1, 1, 1, 32, 1, 1, 0, NULL,
                                                                  params, NULL));
            if (w == 1) {
                CUdeviceptr z[3] = {p[0] + 4096, p[1] + 4096, p[2] + 4096};
                CHECK(rz_check_queue(&chk, NULL, z, 3, 64, ++ticket, major >= 9));
            }
        }
        CHECK(w == 2 ? wrap_sync() : native_sync());
        if (b3 >= 0)
            all[w][b3 / 3] = (now_us() - t0) / (double)n;
    }
    double an = median(all[0], blocks), af = median(all[1], blocks), aw = median(all[2], blocks);
    printf("floor %ld native %.2f floor %.2f atlastrace %.2f over-floor %.3f\n", nlive, an, af, aw,
           aw / af);
    if (!rz_check_clean(&chk))
        fprintf(stderr, "rz_launch_bench: a check found a zone changed\n");
    ab_close(s, live, nlive);
    return 0;
}

/* ab-threads: one thread's share. */
struct tjob {
    CUcontext ctx;
    CUfunction f;
    const CUdeviceptr *live;
    long nlive, n;
    int blocks;
    launch_fn real, wrap;
    CUresult (*real_sync)(CUstream), (*wrap_sync)(CUstream);
    pthread_barrier_t *bar;
    double *t[2]; /* blocks microseconds per launch, each side */
};

static void *tjob_run(void *arg)
{
    struct tjob *j = arg;
    CUstream st;
    CHECK(cuCtxSetCurrent(j->ctx));
    CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    for (int w = 0; w < 2; w++) { /* warm up both sides */
        launches_on(w ? j->wrap : j->real, j->f, j->live, j->nlive, 300, st);
        CHECK(w ? j->wrap_sync(st) : j->real_sync(st));
    }
    for (int b = 0; b < 2 * j->blocks; b++) {
        int w = b & 1;
        pthread_barrier_wait(j->bar);
        double t0 = now_us();
        launches_on(w ? j->wrap : j->real, j->f, j->live, j->nlive, j->n, st);
        CHECK(w ? j->wrap_sync(st) : j->real_sync(st));
        j->t[w][b / 2] = (now_us() - t0) / (double)j->n;
    }
    pthread_barrier_wait(j->bar);
    CHECK(j->wrap_sync(st));
    CHECK(cuStreamDestroy(st));
    return NULL;
}

static int ab_threads(CUcontext ctx, CUfunction f, CUdeviceptr *live, long nlive, long n,
                      int blocks, const char *libpath, int nt)
{
    if (nt < 1 || nt > 64) {
        fprintf(stderr, "rz_launch_bench: 1 to 64 threads\n");
        return 1;
    }
    struct ab_side s = ab_open(libpath, live, nlive);
    struct tjob proto = {
        .ctx = ctx, .f = f, .live = live, .nlive = nlive, .n = n, .blocks = blocks};
    void *real;
    proto.wrap = (launch_fn)wrapper(s.lib, s.cu, "cuLaunchKernel", &real);
    proto.real = (launch_fn)real;
    proto.wrap_sync = wrapper(s.lib, s.cu, "cuStreamSynchronize", &real);
    proto.real_sync = (CUresult(*)(CUstream))real;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nt);
    proto.bar = &bar;
    struct tjob *jobs = calloc((size_t)nt, sizeof *jobs);
    pthread_t *tid = calloc((size_t)nt, sizeof *tid);
    double *all[2] = {calloc((size_t)(nt * blocks), sizeof(double)),
                      calloc((size_t)(nt * blocks), sizeof(double))};
    if (!jobs || !tid || !all[0] || !all[1])
        return 1;
    for (int t = 0; t < nt; t++) {
        jobs[t] = proto;
        jobs[t].t[0] = all[0] + t * blocks;
        jobs[t].t[1] = all[1] + t * blocks;
        if (pthread_create(&tid[t], NULL, tjob_run, &jobs[t]) != 0)
            return 1;
    }
    for (int t = 0; t < nt; t++)
        pthread_join(tid[t], NULL);
    double an = median(all[0], nt * blocks), aw = median(all[1], nt * blocks);
    printf("ab-threads %d %ld native %.2f atlastrace %.2f ratio %.3f\n", nt, nlive, an, aw,
           aw / an);
    ab_close(s, live, nlive);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long nlive = atol(argv[2]);
    long n = argc > 3 ? atol(argv[3]) : 3000;
    int blocks = argc > 4 ? atoi(argv[4]) : 7;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    if (nlive < 1 || n < 1 || blocks < 1 || blocks > 99)
        return 2;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoad(&mod, argv[1]));
    CHECK(cuModuleGetFunction(&f, mod, "args8"));
    CUdeviceptr *live = malloc((size_t)nlive * sizeof *live);
    if (!live)
        return 1;
    if (argc > 6 && strcmp(argv[5], "ab") == 0)
        return ab(f, live, nlive, n, blocks, argv[6]);
    if (argc > 7 && strcmp(argv[5], "ab-floor") == 0)
        return ab_floor(f, live, nlive, n, blocks, argv[6], argv[7]);
    if (argc > 7 && strcmp(argv[5], "ab-threads") == 0)
        return ab_threads(ctx, f, live, nlive, n, blocks, argv[6], atoi(argv[7]));
    for (long i = 0; i < nlive; i++)
        CHECK(cuMemAlloc(&live[i], 4096));
    launches(f, live, nlive, 300); /* warm up: module, check kernel, caches */
    CHECK(cuCtxSynchronize());
    double all[99], enq[99];
    for (int b = 0; b < blocks; b++) {
        double t0 = now_us();
        launches(f, live, nlive, n);
        double te = now_us();
        CHECK(cuCtxSynchronize());
        double t1 = now_us();
        all[b] = (t1 - t0) / (double)n;
        enq[b] = (te - t0) / (double)n;
    }
    printf("us_per_launch %ld %.2f\n", nlive, median(all, blocks));
    printf("enqueue_us_per_launch %ld %.2f\n", nlive, median(enq, blocks));
    for (long i = 0; i < nlive; i++)
        CHECK(cuMemFree(live[i]));
    return 0;
}
