/*
 * The step trace at scale, against the fake driver (no GPU):
 *
 *   trace_scale big N DIFFS
 *     Four steps of N 8-parameter launches (4 pointers into one allocation,
 *     2 u32, 1 f32, 1 u64: cpu_bench's args8), each ended by
 *     cuCtxSynchronize; in the second step DIFFS launches spread over the
 *     step pass another u32 (so steps 2 and 3 differ from the one before,
 *     step 4 is identical to step 3). Prints the wall time of each step's end (the
 *     sync: merge, pointer resolution, diff, and the JSON lines under
 *     ATLAS_TRACE_FILE) and the peak RSS. Run under LD_PRELOAD with
 *     ATLAS_TRACE=1 (and ATLAS_TRACE_MAX_MB large enough for two steps).
 *
 *   trace_scale threads T N LIB
 *     T threads start at once, each on its own stream, each launching N
 *     tiny kernels with a cuStreamSynchronize every 256, once through the
 *     driver and once through LIB's wrappers (LIB dlopen'ed, ATLAS_TRACE=1
 *     in the environment applies to it), in alternating rounds. Prints the
 *     wall time of each side (median of the rounds) and their ratio, so a
 *     lock shared by the threads shows as a ratio that grows with T.
 */
#include "../../tests/fake/fakecuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "trace_scale: %s failed: %d\n", #call, (int)r_);                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUresult k_nop(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_SUCCESS;
}

static const size_t sizes8[8] = {8, 8, 8, 8, 4, 4, 4, 8};
static const struct fake_kernel_def kernels[] = {{"nop", k_nop, 0, NULL, NULL},
                                                 {"nop8", k_nop, 8, sizes8, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 2, kernels};
static CUfunction nop, nop8;
static CUcontext ctx;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* this thread's CPU time: the step end's own cost on a machine shared with other work */
static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void big(long n, long diffs)
{
    CUdeviceptr buf;
    CHECK(cuMemAlloc(&buf, 1 << 20));
    CHECK(cuCtxSynchronize()); /* setup: a step of its own */
    /* 1: the first; 2: DIFFS ops differ; 3: as 1 again; 4: identical to 3 */
    for (int step = 0; step < 4; step++) {
        CUdeviceptr a = buf, b = buf + 256, c = buf + 512, d = buf + 768;
        unsigned m = 1024, k = 64;
        float alpha = 1.5f;
        unsigned long long seed = 42;
        void *params[8] = {&a, &b, &c, &d, &m, &k, &alpha, &seed};
        double t0 = now_ms();
        for (long i = 0; i < n; i++) {
            /* the second step's differing ops: evenly spread */
            k = step == 1 && diffs && i % (n / diffs) == n / diffs / 2 ? 65 : 64;
            CHECK(cuLaunchKernel(nop8, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
        }
        double t1 = now_ms(), c1 = cpu_ms();
        CHECK(cuCtxSynchronize());
        double t2 = now_ms(), c2 = cpu_ms();
        printf("step %d: %ld launches %.1f ms, step end %.1f ms (CPU %.1f ms)\n", step + 1, n,
               t1 - t0, t2 - t1, c2 - c1);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS %ld KiB\n", ru.ru_maxrss);
}

/* ---- threads ---------------------------------------------------------------------- */

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*sync_fn)(CUstream);
static launch_fn real_launch, wrap_launch;
static sync_fn real_sync, wrap_sync;
static long per_thread;
static pthread_barrier_t go, done;
static int rounds, side; /* written by the main thread between the barriers */

static void both(void *lib, const char *name, void **real, void **wrap)
{
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    *real = cu ? dlsym(cu, name) : NULL;
    *wrap = dlsym(lib, name);
    if (!*real || !*wrap || *real == *wrap) {
        fprintf(stderr, "trace_scale: could not find both %s\n", name);
        exit(1);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    CUstream st;
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    for (int r = 0; r < 2 * rounds; r++) {
        pthread_barrier_wait(&go);
        launch_fn l = side ? wrap_launch : real_launch;
        sync_fn s = side ? wrap_sync : real_sync;
        for (long i = 0; i < per_thread; i++) {
            CHECK(l(nop, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL));
            if (i % 256 == 255)
                CHECK(s(st));
        }
        CHECK(s(st));
        pthread_barrier_wait(&done);
    }
    return NULL;
}

static void threads(int nt, long n, const char *libpath)
{
    void *lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "trace_scale: %s\n", dlerror());
        exit(1);
    }
    both(lib, "cuLaunchKernel", (void **)&real_launch, (void **)&wrap_launch);
    both(lib, "cuStreamSynchronize", (void **)&real_sync, (void **)&wrap_sync);
    per_thread = n, rounds = 5;
    pthread_barrier_init(&go, NULL, (unsigned)nt + 1);
    pthread_barrier_init(&done, NULL, (unsigned)nt + 1);
    pthread_t *tid = calloc((size_t)nt, sizeof *tid);
    double tr[16], tw[16];
    for (int t = 0; t < nt; t++)
        pthread_create(&tid[t], NULL, worker, NULL);
    for (int r = 0; r < 2 * rounds; r++) {
        side = r & 1;
        double t0 = now_ms();
        pthread_barrier_wait(&go);
        pthread_barrier_wait(&done);
        (side ? tw : tr)[r / 2] = now_ms() - t0;
    }
    for (int t = 0; t < nt; t++)
        pthread_join(tid[t], NULL);
    qsort(tr, (size_t)rounds, sizeof *tr, cmp_double);
    qsort(tw, (size_t)rounds, sizeof *tw, cmp_double);
    double mr = tr[rounds / 2], mw = tw[rounds / 2];
    printf("threads=%d launches=%ld each: native %.1f ms, traced %.1f ms, traced/native %.3f "
           "(throughput %.3fx native)\n",
           nt, n, mr, mw, mw / mr, mr / mw);
    free(tid);
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod;
    if (argc < 3) {
        fprintf(stderr, "usage: trace_scale big N DIFFS | threads T N LIB\n");
        return 2;
    }
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, &image));
    CHECK(cuModuleGetFunction(&nop, mod, "nop"));
    CHECK(cuModuleGetFunction(&nop8, mod, "nop8"));
    if (!strcmp(argv[1], "big") && argc >= 4)
        big(atol(argv[2]), atol(argv[3]));
    else if (!strcmp(argv[1], "threads") && argc >= 5)
        threads(atoi(argv[2]), atol(argv[3]), argv[4]);
    else
        return 2;
    return 0;
}
