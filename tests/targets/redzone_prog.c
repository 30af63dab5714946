/*
 * Red-zone target: a driver-API program, linked against (fake) libcuda, that
 * overruns its buffers on purpose. argv[1] picks the scenario; the harness
 * (tests/integration/test_redzone.c) runs it under the preload and checks
 * the reports. Every scenario prints the driver's answers it relies on, so
 * runs with and without the preload can be compared.
 */
#include "../fake/fakecuda.h"

#include <atlas/trace.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* poke(unsigned char *p, long off, unsigned n, unsigned v): p[off..off+n) = v */
static CUresult k_poke(const struct fake_launch *l, void **params)
{
    unsigned char *p = *(unsigned char **)params[0];
    long off = *(long *)params[1];
    unsigned n = *(unsigned *)params[2];
    unsigned v = *(unsigned *)params[3];
    (void)l;
    memset(p + off, (int)v, n);
    return CUDA_SUCCESS;
}

/* fill(unsigned char *p, unsigned n): a well-behaved kernel */
static CUresult k_fill(const struct fake_launch *l, void **params)
{
    unsigned char *p = *(unsigned char **)params[0];
    unsigned n = *(unsigned *)params[1];
    (void)l;
    memset(p, 7, n);
    return CUDA_SUCCESS;
}

/* spoke(struct sp s): s.p[s.off] = 0x22, the pointer inside a by-value struct */
struct sp {
    int off;
    int pad;
    unsigned char *p;
};
static CUresult k_spoke(const struct fake_launch *l, void **params)
{
    const struct sp *s = params[0];
    (void)l;
    s->p[s->off] = 0x22;
    return CUDA_SUCCESS;
}

/* ipoke(unsigned char **pp, long off, unsigned n): (*pp)[off..off+n) = 0x33, through a
 * pointer the kernel reads from device memory */
static CUresult k_ipoke(const struct fake_launch *l, void **params)
{
    unsigned char *p = **(unsigned char ***)params[0];
    long off = *(long *)params[1];
    unsigned n = *(unsigned *)params[2];
    (void)l;
    memset(p + off, 0x33, n);
    return CUDA_SUCCESS;
}

/* wpoke(struct { unsigned char *p[300]; } s, int k): s.p[k][4096] = 0x44 */
#define WIDE 300
struct wide {
    unsigned char *p[WIDE];
};
static CUresult k_wpoke(const struct fake_launch *l, void **params)
{
    const struct wide *w = params[0];
    int k = *(int *)params[1];
    (void)l;
    w->p[k][4096] = 0x44;
    return CUDA_SUCCESS;
}

/* lateset(unsigned char *p, long off, unsigned n): a kernel still running
 * when its buffer is freed (on another stream): it takes its pointer now and
 * writes p[off..off+n) = 0x55 only when flush() runs, later */
static struct {
    unsigned char *p;
    long off;
    unsigned n;
} late;
static CUresult k_lateset(const struct fake_launch *l, void **params)
{
    (void)l;
    late.p = *(unsigned char **)params[0];
    late.off = *(long *)params[1];
    late.n = *(unsigned *)params[2];
    return CUDA_SUCCESS;
}

/* flush(void): the late write of the last lateset() */
static CUresult k_flush(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    if (late.p)
        memset(late.p + late.off, 0x55, late.n);
    late.p = NULL;
    return CUDA_SUCCESS;
}

/* dpoke(unsigned char *p, const unsigned *n): p[0..*n) = 0x66, a length the kernel reads
 * from device memory (the same parameters, another write) */
static CUresult k_dpoke(const struct fake_launch *l, void **params)
{
    unsigned char *p = *(unsigned char **)params[0];
    const unsigned *n = *(const unsigned **)params[1];
    (void)l;
    memset(p, 0x66, *n);
    return CUDA_SUCCESS;
}

static const size_t poke_sizes[] = {8, 8, 4, 4};
static const size_t dpoke_sizes[] = {8, 8};
static const size_t lateset_sizes[] = {8, 8, 4};
static const size_t fill_sizes[] = {8, 4};
static const size_t spoke_sizes[] = {sizeof(struct sp)};
static const size_t ipoke_sizes[] = {8, 8, 4};
static const size_t wpoke_sizes[] = {sizeof(struct wide), 4};
static const struct fake_kernel_def kernels[] = {
    {"poke", k_poke, 4, poke_sizes, NULL},    {"fill", k_fill, 2, fill_sizes, NULL},
    {"spoke", k_spoke, 1, spoke_sizes, NULL}, {"ipoke", k_ipoke, 3, ipoke_sizes, NULL},
    {"wpoke", k_wpoke, 2, wpoke_sizes, NULL}, {"lateset", k_lateset, 3, lateset_sizes, NULL},
    {"flush", k_flush, 0, NULL, NULL},        {"dpoke", k_dpoke, 2, dpoke_sizes, NULL},
};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 8, kernels};

static CUfunction f_poke, f_fill, f_spoke, f_ipoke, f_wpoke, f_lateset, f_flush, f_dpoke;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "redzone_prog: %s failed: %d\n", #call, (int)r_);                      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Every allocation is made here, so reports name this function as the site. */
__attribute__((noinline)) CUdeviceptr rz_alloc(size_t n)
{
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, n));
    return p;
}

/* A stream-ordered allocation on the legacy stream from a site of its own
 * (the held-frees scenarios name it). */
__attribute__((noinline)) CUdeviceptr held_alloc(size_t n)
{
    CUdeviceptr p;
    CHECK(cuMemAllocAsync(&p, n, NULL));
    return p;
}

/* "held-threads": four threads, each making and freeing 500 tensors on the
 * legacy stream; thread t overruns its tensor 100 * t + 7 by one byte. */
static void poke(CUdeviceptr p, long off, unsigned n, CUstream s);
static CUcontext held_ctx;
static void *held_worker(void *arg)
{
    long t = (long)arg;
    CHECK(cuCtxSetCurrent(held_ctx));
    for (int i = 0; i < 500; i++) {
        CUdeviceptr p;
        CHECK(cuMemAllocAsync(&p, 256 + (size_t)t * 16, NULL));
        if (i == 100 * t + 7)
            poke(p, 256 + t * 16, 1, NULL);
        CHECK(cuMemFreeAsync(p, NULL));
    }
    return NULL;
}

/* "launch-threads": four threads, each on a stream of its own, make 300
 * launches over nine buffers of their own (allocated first, in thread
 * order: thread t's are alloc#9t+1..9t+9) and synchronise their stream every
 * 50; thread t's launch 60 * t + 11 overruns its alloc#9t+9, which no other
 * launch reaches, by t + 1 bytes, and the others write inside the first
 * eight. */
static CUdeviceptr lt_buf[4][9];
static CUstream lt_stream[4];
static void *launch_worker(void *arg)
{
    long t = (long)arg;
    CHECK(cuCtxSetCurrent(held_ctx));
    for (int i = 0; i < 300; i++) {
        if (i == 60 * t + 11)
            poke(lt_buf[t][8], 4096, (unsigned)t + 1, lt_stream[t]);
        else
            poke(lt_buf[t][i % 8], 0, 16, lt_stream[t]);
        if (i % 50 == 49)
            CHECK(cuStreamSynchronize(lt_stream[t]));
    }
    return NULL;
}

/* Two allocation sites with the same frame, called from one place: the
 * same stack depth, so the ledger's unwind cache sees the same stack address
 * for both and must tell them apart by their return addresses ("sites"). */
__attribute__((noinline)) CUdeviceptr site_one(size_t n)
{
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, n)); /* SITE_ONE_ALLOC */
    __asm__ volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) CUdeviceptr site_two(size_t n)
{
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, n));
    __asm__ volatile("" ::: "memory");
    return p;
}
__attribute__((noinline)) CUdeviceptr from_site(int which, size_t n)
{
    return which ? site_two(n) : site_one(n);
}

/* Eighty callers of site_one with one frame size, each its own function
 * (a size of its own keeps the compiler from folding them into one): as
 * many call chains through one stack address ("chains N"). */
/* clang-format off */
#define HOP(k)                                                                                     \
    __attribute__((noinline)) static CUdeviceptr hop##k(size_t n)                                  \
    {                                                                                              \
        CUdeviceptr p = site_one(n + k);                                                           \
        __asm__ volatile("" ::: "memory");                                                         \
        return p;                                                                                  \
    }
#define HOP10(t) HOP(t##0) HOP(t##1) HOP(t##2) HOP(t##3) HOP(t##4) \
                 HOP(t##5) HOP(t##6) HOP(t##7) HOP(t##8) HOP(t##9)
HOP10(1) HOP10(2) HOP10(3) HOP10(4) HOP10(5) HOP10(6) HOP10(7) HOP10(8)
#define HOPS10(t) hop##t##0, hop##t##1, hop##t##2, hop##t##3, hop##t##4, \
                  hop##t##5, hop##t##6, hop##t##7, hop##t##8, hop##t##9
static CUdeviceptr (*const hops[80])(size_t) = {HOPS10(1), HOPS10(2), HOPS10(3), HOPS10(4),
                                                HOPS10(5), HOPS10(6), HOPS10(7), HOPS10(8)};
/* clang-format on */

/* The per-thread default stream's twins, as a program built with nvcc --default-stream
 * per-thread calls them (their 0 is the thread's own default stream). */
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                             void **extra);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g);
CUresult cuGraphLaunch_ptsz(CUgraphExec ge, CUstream s);
CUresult cuStreamSynchronize_ptsz(CUstream s);

static void poke(CUdeviceptr p, long off, unsigned n, CUstream s)
{
    unsigned v = 0x11;
    void *args[] = {&p, &off, &n, &v};
    CHECK(cuLaunchKernel(f_poke, 2, 1, 1, 32, 1, 1, 0, s, args, NULL));
}

static void fill(CUdeviceptr p, unsigned n)
{
    void *args[] = {&p, &n};
    CHECK(cuLaunchKernel(f_fill, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
}

static void spoke(CUdeviceptr p, int off)
{
    struct sp s = {off, 0, (unsigned char *)(uintptr_t)p};
    void *args[] = {&s};
    CHECK(cuLaunchKernel(f_spoke, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
}

static void ipoke(CUdeviceptr pp, long off, unsigned n)
{
    void *args[] = {&pp, &off, &n};
    CHECK(cuLaunchKernel(f_ipoke, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
}

/* Two 4096-byte buffers; alloc#2 is overrun by `n` bytes by launch#4 of 6. */
static void two_buffers(unsigned n)
{
    fake_reset_counts();
    CUdeviceptr a = rz_alloc(4096), b = rz_alloc(4096);
    fill(a, 4096);
    fill(a, 4096);
    fill(b, 4096);
    if (n)
        poke(b, 4096, n, NULL);
    else
        fill(b, 4096);
    fill(a, 4096);
    fill(b, 4096);
    CHECK(cuCtxSynchronize());
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    printf("context syncs: %lu, copies back: %lu\n", fake_calls("cuCtxSynchronize"),
           fake_calls("cuMemcpyDtoH_v2"));
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    const char *what = argc > 1 ? argv[1] : "";
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, &image));
    CHECK(cuModuleGetFunction(&f_poke, mod, "poke"));
    CHECK(cuModuleGetFunction(&f_fill, mod, "fill"));
    CHECK(cuModuleGetFunction(&f_spoke, mod, "spoke"));
    CHECK(cuModuleGetFunction(&f_ipoke, mod, "ipoke"));
    CHECK(cuModuleGetFunction(&f_wpoke, mod, "wpoke"));
    CHECK(cuModuleGetFunction(&f_lateset, mod, "lateset"));
    CHECK(cuModuleGetFunction(&f_flush, mod, "flush"));
    CHECK(cuModuleGetFunction(&f_dpoke, mod, "dpoke"));

    if (strcmp(what, "over") == 0) {
        /* RZ_REFUSE_EX=1: the driver refuses the first cuLaunchKernelEx (the
         * library's dependent launch of its check; this program makes none) */
        if (getenv("RZ_REFUSE_EX"))
            fake_fail_next("cuLaunchKernelEx", CUDA_ERROR_NOT_SUPPORTED);
        unsigned long dep = fake_programmatic_launches();
        two_buffers(argc > 2 ? (unsigned)atoi(argv[2]) : 1);
        /* RZ_COUNT_DEP=1: how many of the library's checks the fake saw
         * queued as dependent launches (what the library did, not what
         * this program sees) */
        if (getenv("RZ_COUNT_DEP"))
            printf("dependent launches: %lu\n", fake_programmatic_launches() - dep);
        /* over N HOW STATUS: end with STATUS by returning from main, exit() or _exit(), the
         * three ways ATLAS_ERROR_EXITCODE treats differently; the line stays in stdio's buffer
         * (stdout is a pipe) until the exit path flushes it */
        if (argc > 4) {
            int status = atoi(argv[4]);
            printf("ending by %s(%d)\n", argv[3], status);
            if (strcmp(argv[3], "exit") == 0)
                exit(status);
            if (strcmp(argv[3], "_exit") == 0) {
                fflush(stdout);
                _exit(status);
            }
            return status;
        }
    } else if (strcmp(what, "same") == 0) {
        /* seven launches of dpoke with the same parameters: the first six write 4096 bytes
         * of a 4096-byte buffer, the seventh 4100 (the length it reads from device memory was
         * changed between): an overrun by a launch identical to ones checked before, then a
         * sync; then a launch of poke that overruns another buffer, checked (a new launch) */
        CUdeviceptr buf = rz_alloc(4096), len = rz_alloc(sizeof(unsigned)), other = rz_alloc(64);
        unsigned n = 4096;
        unsigned long dep = fake_programmatic_launches();
        CHECK(cuMemcpyHtoD(len, &n, sizeof n));
        void *kp[] = {&buf, &len};
        for (int i = 0; i < 7; i++) {
            if (i == 6) {
                n = 4100;
                CHECK(cuMemcpyHtoD(len, &n, sizeof n));
            }
            CHECK(cuLaunchKernel(f_dpoke, 1, 1, 1, 32, 1, 1, 0, NULL, kp, NULL));
        }
        printf("checks after dpoke: %lu\n", fake_programmatic_launches() - dep);
        CHECK(cuCtxSynchronize());
        poke(other, 64, 2, NULL);
        CHECK(cuCtxSynchronize());
    } else if (strcmp(what, "before") == 0) {
        /* a buffer carved from the second half of one allocation, written
         * 8 bytes before its start: inside the allocation, not caught */
        CUdeviceptr a = rz_alloc(8192);
        poke(a + 4096, -8, 8, NULL);
        CHECK(cuCtxSynchronize());
        CHECK(cuMemFree(a));
    } else if (strcmp(what, "three") == 0) {
        /* alloc#1 and alloc#3 overrun by one byte; alloc#2 clean */
        CUdeviceptr p[3] = {rz_alloc(4096), rz_alloc(4096), rz_alloc(4096)};
        poke(p[0], 4096, 1, NULL);
        fill(p[1], 4096);
        poke(p[2], 4096, 1, NULL);
        CHECK(cuCtxSynchronize());
        for (int i = 0; i < 3; i++)
            CHECK(cuMemFree(p[i]));
    } else if (strcmp(what, "leak") == 0) {
        /* alloc#1 freed; #2 (8192) and #3 (300, overrun by 4 bytes) never */
        CUdeviceptr a = rz_alloc(1000);
        rz_alloc(8192);
        CUdeviceptr c = rz_alloc(300);
        poke(c, 300, 4, NULL);
        CHECK(cuMemFree(a));
    } else if (strcmp(what, "sites") == 0) {
        /* alternating sites, each allocation freed; then one leak from
         * each: site_one 111 bytes, site_two 222 bytes */
        for (int i = 0; i < 20; i++)
            CHECK(cuMemFree(from_site(i & 1, 64)));
        from_site(0, 111);
        from_site(1, 222);
        from_site(0, 333);
    } else if (strcmp(what, "chains") == 0) {
        /* chains N (at most 80): the first N chains in turn, five rounds,
         * each allocation freed */
        int n = argc > 2 ? atoi(argv[2]) : 40;
        for (int round = 0; round < 5; round++)
            for (int i = 0; i < n && i < 80; i++)
                CHECK(cuMemFree(hops[i](64)));
    } else if (strcmp(what, "leakmany") == 0) {
        /* leakmany N: N allocations of 4096 bytes from one call stack, never freed (one leak
         * group, tests/integration/test_reports.c) */
        int n = argc > 2 ? atoi(argv[2]) : 1000;
        for (int i = 0; i < n; i++)
            site_one(4096);
    } else if (strcmp(what, "teardown") == 0) {
        /* the driver is torn down (as at exit) before the program frees */
        CUdeviceptr a = rz_alloc(4096);
        rz_alloc(512);
        fake_set_deinitialized(1);
        printf("free after teardown: %d\n", (int)cuMemFree(a));
    } else if (strcmp(what, "oom") == 0) {
        fake_set_total_mem((size_t)1 << 20);
        rz_alloc(4096);
        rz_alloc(65536);
        CUdeviceptr p;
        printf("big alloc: %d\n", (int)cuMemAlloc(&p, (size_t)2 << 20));
    } else if (strcmp(what, "nonoom") == 0) {
        /* an allocation that fails for another reason than memory: no
         * current context (PyTorch's cudaMallocAsync backend was seen
         * getting CUDA_ERROR_INVALID_CONTEXT so, and running on) */
        rz_alloc(4096);
        CUcontext cur;
        CHECK(cuCtxGetCurrent(&cur));
        CHECK(cuCtxSetCurrent(NULL));
        CUdeviceptr p;
        printf("async alloc without a context: %d\n", (int)cuMemAllocAsync(&p, 4096, NULL));
        CHECK(cuCtxSetCurrent(cur));
    } else if (strcmp(what, "torchpool") == 0) {
        /* a library named as PyTorch's allocator's (argv[2]) loaded, then allocations: under
         * red zones, one line says what its pool leaves unguarded */
        if (argc < 3 || !dlopen(argv[2], RTLD_NOW)) {
            printf("torchpool: %s\n", argc < 3 ? "no library" : dlerror());
            return 1;
        }
        for (int i = 0; i < 3; i++)
            CHECK(cuMemFree(rz_alloc(4096)));
    } else if (strcmp(what, "badfree") == 0) {
        CUdeviceptr a = rz_alloc(4096);
        printf("interior free: %d\n", (int)cuMemFree(a + 16));
        printf("free: %d\n", (int)cuMemFree(a));
        printf("double free: %d\n", (int)cuMemFree(a));
        printf("stray free: %d\n", (int)cuMemFree((CUdeviceptr)0x12345600));
    } else if (strcmp(what, "held") == 0) {
        /* PyTorch's shape: tensors made and freed stream-ordered on the
         * legacy default stream; the sixth overrun by 2 bytes. The
         * library holds such frees back and checks them eight at a time;
         * a free on another stream goes through at once. */
        enum { N = 20 };
        CUdeviceptr p[N], q;
        CUstream s;
        CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        for (int i = 0; i < N; i++)
            if (i == 5)
                p[i] = held_alloc(4096);
            else
                CHECK(cuMemAllocAsync(&p[i], 4096, NULL));
        CHECK(cuMemAllocAsync(&q, 4096, s));
        poke(p[5], 4096, 2, NULL);
        fake_reset_counts();
        unsigned long dep = fake_programmatic_launches();
        for (int i = 0; i < N; i++)
            CHECK(cuMemFreeAsync(p[i], NULL));
        printf("before the sync: frees %lu, checks %lu\n", fake_calls("cuMemFreeAsync"),
               fake_programmatic_launches() - dep);
        CHECK(cuMemFreeAsync(q, s));
        printf("another stream's free: frees %lu\n", fake_calls("cuMemFreeAsync"));
        CHECK(cuStreamSynchronize(NULL));
        printf("after the sync: frees %lu, checks %lu\n", fake_calls("cuMemFreeAsync"),
               fake_programmatic_launches() - dep);
        printf("context syncs: %lu, copies back: %lu\n", fake_calls("cuCtxSynchronize"),
               fake_calls("cuMemcpyDtoH_v2"));
    } else if (strcmp(what, "quarantine-loop") == 0) {
        /* A training loop's shape: 200 steps of 32 tensors of 64 KiB made and freed on the
         * legacy stream, a sync per step, with a 1 MiB quarantine (ATLAS_REDZONE_QUARANTINE_MB=1)
         * full after the first step: the checks of the last 100 steps (programmatic launches:
         * the held frees' batches and the quarantine's) */
        enum { STEPS = 200, PER = 32 };
        unsigned long dep = 0;
        for (int st = 0; st < STEPS; st++) {
            if (st == STEPS / 2)
                dep = fake_programmatic_launches();
            CUdeviceptr t[PER];
            for (int i = 0; i < PER; i++)
                CHECK(cuMemAllocAsync(&t[i], 64 << 10, NULL));
            for (int i = 0; i < PER; i++)
                CHECK(cuMemFreeAsync(t[i], NULL));
            CHECK(cuStreamSynchronize(NULL));
        }
        printf("checks per step: %.1f\n",
               (double)(fake_programmatic_launches() - dep) / (STEPS - STEPS / 2));
    } else if (strcmp(what, "held-threads") == 0) {
        pthread_t th[4];
        CHECK(cuCtxGetCurrent(&held_ctx));
        fake_reset_counts();
        for (long t = 0; t < 4; t++)
            pthread_create(&th[t], NULL, held_worker, (void *)t);
        for (int t = 0; t < 4; t++)
            pthread_join(th[t], NULL);
        CHECK(cuCtxSynchronize());
        printf("frees: %lu\n", fake_calls("cuMemFreeAsync"));
    } else if (strcmp(what, "launch-threads") == 0) {
        pthread_t th[4];
        CHECK(cuCtxGetCurrent(&held_ctx));
        for (int t = 0; t < 4; t++) {
            CHECK(cuStreamCreate(&lt_stream[t], CU_STREAM_NON_BLOCKING));
            printf("thread %d stream=%p\n", t, (void *)lt_stream[t]);
            for (int b = 0; b < 9; b++)
                lt_buf[t][b] = rz_alloc(4096);
        }
        fake_reset_counts();
        unsigned long dep = fake_programmatic_launches();
        for (long t = 0; t < 4; t++)
            pthread_create(&th[t], NULL, launch_worker, (void *)t);
        for (int t = 0; t < 4; t++)
            pthread_join(th[t], NULL);
        CHECK(cuCtxSynchronize());
        printf("checks queued: %lu\n", fake_programmatic_launches() - dep);
        for (int t = 0; t < 4; t++)
            for (int b = 0; b < 9; b++)
                CHECK(cuMemFree(lt_buf[t][b]));
    } else if (strcmp(what, "held-exit") == 0) {
        /* held frees the program never synchronises after: checked at exit */
        CUdeviceptr p = held_alloc(512), q = held_alloc(512);
        poke(q, 512, 3, NULL);
        CHECK(cuMemFreeAsync(p, NULL));
        CHECK(cuMemFreeAsync(q, NULL));
    } else if (strcmp(what, "held-refree") == 0) {
        /* a double free of a free held back: the driver answers it as it
         * would have without the library */
        CUdeviceptr p, q;
        CHECK(cuMemAllocAsync(&p, 4096, NULL));
        CHECK(cuMemAllocAsync(&q, 4096, NULL));
        printf("free: %d\n", (int)cuMemFreeAsync(p, NULL));
        printf("double free: %d\n", (int)cuMemFreeAsync(p, NULL));
        printf("free: %d\n", (int)cuMemFreeAsync(q, NULL));
        printf("sync: %d\n", (int)cuStreamSynchronize(NULL));
    } else if (strcmp(what, "held-oom") == 0) {
        /* memory for one 600 KB buffer: the second fits once the first is
         * freed, held back or not */
        fake_set_total_mem((size_t)1 << 20);
        CUdeviceptr p, q, r;
        printf("first: %d\n", (int)cuMemAllocAsync(&p, 600 << 10, NULL));
        printf("free: %d\n", (int)cuMemFreeAsync(p, NULL));
        printf("second: %d\n", (int)cuMemAllocAsync(&q, 600 << 10, NULL));
        printf("free: %d\n", (int)cuMemFreeAsync(q, NULL));
        printf("synchronous: %d\n", (int)cuMemAlloc(&r, 600 << 10));
        printf("too big: %d\n", (int)cuMemAlloc(&p, 600 << 10));
        printf("free: %d\n", (int)cuMemFree(r));
    } else if (strcmp(what, "async") == 0) {
        /* stream-ordered allocations, overrun by 2 bytes each */
        CUstream s;
        CUmemoryPool pool;
        CUdeviceptr p, q;
        CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        CHECK(cuDeviceGetDefaultMemPool(&pool, dev));
        fake_reset_counts();
        CHECK(cuMemAllocAsync(&p, 4096, s));
        CHECK(cuMemAllocFromPoolAsync(&q, 1000, pool, s));
        poke(p, 4096, 2, s);
        poke(q, 1000, 2, s);
        CHECK(cuMemFreeAsync(p, s));
        CHECK(cuMemFreeAsync(q, s));
        CHECK(cuStreamSynchronize(s));
        printf("poisoned on the stream: %lu, synchronously: %lu\n", fake_calls("cuMemsetD8Async"),
               fake_calls("cuMemsetD8_v2"));
        /* the guarded frees checked their zones without stalling */
        printf("context syncs: %lu, copies back: %lu\n", fake_calls("cuCtxSynchronize"),
               fake_calls("cuMemcpyDtoH_v2"));
    } else if (strcmp(what, "reach") == 0) {
        /* three ways a launch reaches an allocation, each overrunning it by
         * one byte: a pointer inside a by-value struct (alloc#1, launch#1),
         * a pointer to its middle (alloc#2, launch#2), a pointer just past
         * its end (alloc#3, launch#3) */
        CUdeviceptr a = rz_alloc(4096), b = rz_alloc(4096), c = rz_alloc(4096);
        spoke(a, 4096);
        poke(b + 100, 3996, 1, NULL);
        poke(c + 4096, 0, 1, NULL);
        CHECK(cuCtxSynchronize());
        CHECK(cuMemFree(a));
        CHECK(cuMemFree(b));
        CHECK(cuMemFree(c));
    } else if (strcmp(what, "indirect") == 0) {
        /* alloc#2 is overrun through a pointer the kernel reads from device
         * memory (alloc#1): no parameter reaches alloc#2 */
        CUdeviceptr pp = rz_alloc(8), b = rz_alloc(4096);
        CHECK(cuMemcpyHtoD(pp, &b, sizeof b));
        ipoke(pp, 4096, 2);
        CHECK(cuCtxSynchronize());
        CHECK(cuMemFree(b));
        CHECK(cuMemFree(pp));
    } else if (strcmp(what, "streams") == 0) {
        /* launch#1 on s1 overruns alloc#1, launch#2 on s2 overruns alloc#2 */
        CUstream s1, s2;
        CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
        CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
        printf("s1=%p s2=%p\n", (void *)s1, (void *)s2);
        CUdeviceptr a = rz_alloc(4096), b = rz_alloc(4096);
        poke(a, 4096, 1, s1);
        poke(b, 4096, 2, s2);
        CHECK(cuCtxSynchronize());
        CHECK(cuMemFree(a));
        CHECK(cuMemFree(b));
    } else if (strcmp(what, "many") == 0) {
        /* N live allocations; 100 launches that each reach one of them */
        size_t n = argc > 2 ? (size_t)atol(argv[2]) : 1000;
        CUdeviceptr *p = calloc(n, sizeof *p);
        if (!p)
            return 1;
        for (size_t i = 0; i < n; i++)
            p[i] = rz_alloc(64);
        unsigned long before = fake_redzone_zones_checked();
        unsigned long dep = fake_programmatic_launches();
        for (int i = 0; i < 100; i++)
            fill(p[i % n], 64);
        printf("zones checked per launch: %lu\n", (fake_redzone_zones_checked() - before) / 100);
        printf("dependent launches: %lu\n", fake_programmatic_launches() - dep);
        CHECK(cuCtxSynchronize());
        for (size_t i = 0; i < n; i++)
            CHECK(cuMemFree(p[i]));
        free(p);
    } else if (strcmp(what, "wide") == 0) {
        /* one launch given N pointers in a struct, overrunning the last */
        int n = argc > 2 ? atoi(argv[2]) : WIDE;
        struct wide w = {{0}};
        for (int i = 0; i < n && i < WIDE; i++)
            w.p[i] = (unsigned char *)(uintptr_t)rz_alloc(4096);
        int k = n - 1;
        void *args[] = {&w, &k};
        CHECK(cuLaunchKernel(f_wpoke, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
        CHECK(cuCtxSynchronize());
        for (int i = 0; i < n && i < WIDE; i++)
            CHECK(cuMemFree((CUdeviceptr)(uintptr_t)w.p[i]));
    } else if (strcmp(what, "reset") == 0) {
        /* the primary context is reset (its page-locked memory goes with it,
         * the library's included), then used again: alloc#2 is overrun */
        CUdeviceptr a = rz_alloc(4096);
        CHECK(cuMemFree(a));
        CHECK(cuDevicePrimaryCtxReset(dev));
        CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
        CHECK(cuCtxSetCurrent(ctx));
        CHECK(cuModuleLoadData(&mod, &image));
        CHECK(cuModuleGetFunction(&f_poke, mod, "poke"));
        CUdeviceptr b = rz_alloc(4096);
        unsigned long before = fake_redzone_zones_checked();
        poke(b, 4096, 1, NULL);
        CHECK(cuMemFree(b));
        CHECK(cuCtxSynchronize());
        printf("checked by the kernel after the reset: %lu\n",
               fake_redzone_zones_checked() - before);
    } else if (strcmp(what, "pitch") == 0) {
        /* 10 rows of 100 bytes; one byte written just past the last row */
        CUdeviceptr p;
        size_t pitch;
        CHECK(cuMemAllocPitch(&p, &pitch, 100, 10, 4));
        printf("pitch: %zu\n", pitch);
        poke(p, (long)(pitch * 10), 1, NULL);
        CHECK(cuCtxSynchronize());
        CHECK(cuMemFree(p));
    } else if (strcmp(what, "api") == 0) {
        /* the program checks and re-arms the zones itself */
        CUdeviceptr a = rz_alloc(4096);
        poke(a, 4096, 3, NULL);
        printf("scan: %d\n", atlas_redzone_scan());
        printf("scan again: %d\n", atlas_redzone_scan());
        printf("poisoned: %d\n", atlas_redzone_poison(1, 1));
        printf("scan after poison: %d\n", atlas_redzone_scan());
        poke(a, 4100, 1, NULL);
        printf("scan after second overrun: %d\n", atlas_redzone_scan());
        CHECK(cuMemFree(a));
    } else if (strcmp(what, "capture") == 0) {
        /* launch mode with a capture: no check may touch the capturing
         * stream; the overrun replayed by the graph is found at free */
        CUstream s;
        CUgraph g;
        CUgraphExec ge;
        CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        CUdeviceptr a = rz_alloc(4096);
        CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        poke(a, 4096, 5, s);
        CHECK(cuStreamEndCapture(s, &g));
        printf("captured ops: %zu\n", fake_graph_num_ops(g));
        CHECK(cuGraphInstantiate(&ge, g, 0));
        CHECK(cuGraphLaunch(ge, s));
        CHECK(cuStreamSynchronize(s));
        CHECK(cuMemFree(a));
    } else if (strcmp(what, "capture-pt") == 0) {
        /* the same on the per-thread default stream, through the _ptsz twins and stream 0:
         * no check may go into the capture there either */
        CUgraph g;
        CUgraphExec ge;
        CUdeviceptr a = rz_alloc(4096);
        CHECK(cuStreamBeginCapture_v2_ptsz(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
        unsigned v = 0x11, n = 5;
        long off = 4096;
        void *args[] = {&a, &off, &n, &v};
        CHECK(cuLaunchKernel_ptsz(f_poke, 2, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
        CHECK(cuStreamEndCapture_ptsz(NULL, &g));
        printf("captured ops: %zu\n", fake_graph_num_ops(g));
        CHECK(cuGraphInstantiate(&ge, g, 0));
        CHECK(cuGraphLaunch_ptsz(ge, NULL));
        CHECK(cuStreamSynchronize_ptsz(NULL));
        CHECK(cuMemFree(a));
    } else if (strcmp(what, "uaf") == 0) {
        /* a CUDA C program's use after free: alloc#2 is filled, freed, then
         * written through the freed pointer (8 bytes at +16) by launch#3 */
        CUdeviceptr a = rz_alloc(4096), b = rz_alloc(4096);
        fill(a, 4096);
        fill(b, 4096);
        CHECK(cuMemFree(b));
        poke(b, 16, 8, NULL);
        fill(a, 4096);
        CHECK(cuCtxSynchronize());
        CHECK(cuMemFree(a));
    } else if (strcmp(what, "early") == 0) {
        /* the check kernels are made ready at the first guarded allocation, not at the first
         * free (issue #45): on a GPU, loading a module waits for the device, so made at a
         * stream-ordered free it let another stream's write land before the free's poison.
         * Prints the module loads after the allocation, before any free or sync (the
         * program's own is one), and after its stream-ordered free */
        CUdeviceptr a;
        CUstream s;
        CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        CHECK(cuMemAllocAsync(&a, 4096, s));
        printf("module loads after the allocation: %lu\n", fake_calls("cuModuleLoadData"));
        CHECK(cuMemFreeAsync(a, s));
        printf("module loads after the free: %lu\n", fake_calls("cuModuleLoadData"));
        CHECK(cuStreamSynchronize(s));
        CHECK(cuStreamDestroy(s));
    } else if (strcmp(what, "uaf-async") == 0) {
        /* the same with stream-ordered frees on the legacy stream (held back
         * in batches): alloc#2 freed, then written at once by launch#3 */
        CUdeviceptr a, b;
        CHECK(cuMemAllocAsync(&a, 4096, NULL));
        CHECK(cuMemAllocAsync(&b, 4096, NULL));
        fill(a, 4096);
        fill(b, 4096);
        CHECK(cuMemFreeAsync(b, NULL));
        poke(b, 16, 8, NULL);
        fill(a, 4096);
        CHECK(cuCtxSynchronize());
        CHECK(cuMemFreeAsync(a, NULL));
    } else if (strcmp(what, "uaf-stream") == 0) {
        /* the missing record_stream: alloc#1, made on the legacy stream, is
         * used by a kernel on a side stream (launch#2, lateset), freed on
         * the legacy stream while that kernel still runs, and written by it
         * after the free (16 bytes at +64, when launch#3, flush, runs) */
        CUstream side;
        CUdeviceptr a, b;
        CHECK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
        CHECK(cuMemAllocAsync(&a, 4096, NULL));
        CHECK(cuMemAllocAsync(&b, 4096, NULL));
        fill(a, 4096);
        long off = 64;
        unsigned n = 16;
        void *args[] = {&a, &off, &n};
        CHECK(cuLaunchKernel(f_lateset, 1, 1, 1, 32, 1, 1, 0, side, args, NULL));
        CHECK(cuMemFreeAsync(a, NULL));
        CHECK(cuStreamSynchronize(NULL));
        CHECK(cuLaunchKernel(f_flush, 1, 1, 1, 1, 1, 1, 0, side, NULL, NULL));
        fill(b, 4096);
        CHECK(cuCtxSynchronize());
        CHECK(cuMemFreeAsync(b, NULL));
        CHECK(cuCtxSynchronize());
    } else if (strcmp(what, "quar-many") == 0) {
        /* a clean program that makes and frees many allocations of many
         * sizes, synchronously, on the legacy stream and on another stream,
         * each written inside its bounds before its free */
        CUstream s;
        CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        for (int i = 0; i < 3000; i++) {
            size_t n = 64 + (size_t)(i * 37 % 5000);
            CUdeviceptr p;
            if (i % 3 == 0) {
                p = rz_alloc(n);
                fill(p, (unsigned)n);
                CHECK(cuMemFree(p));
            } else {
                CUstream on = i % 3 == 1 ? NULL : s;
                CHECK(cuMemAllocAsync(&p, n, on));
                poke(p, 0, (unsigned)n, on);
                CHECK(cuMemFreeAsync(p, on));
            }
            if (i % 500 == 499)
                CHECK(cuCtxSynchronize());
        }
        CHECK(cuCtxSynchronize());
    } else if (strcmp(what, "quar-bound") == 0) {
        /* 100 buffers of 64 KiB made and freed one after the other: the
         * quarantine (ATLAS_REDZONE_QUARANTINE_MB=1 in the test) keeps the
         * newest it has room for and gives the oldest back */
        CUdeviceptr p[100], base;
        size_t size;
        for (int i = 0; i < 100; i++) {
            p[i] = rz_alloc(64 << 10);
            fill(p[i], 64 << 10);
            CHECK(cuMemFree(p[i]));
        }
        /* buffer i is still held when its address is live and no later
         * buffer got it (an address given back is handed out again) */
        int held = 0, given[100];
        for (int i = 0; i < 100; i++) {
            given[i] = cuMemGetAddressRange(&base, &size, p[i]) != CUDA_SUCCESS;
            for (int j = i + 1; j < 100 && !given[i]; j++)
                given[i] = p[j] == p[i];
            held += !given[i];
        }
        printf("still held: %d\n", held);
        printf("first given back: %s\n", given[0] ? "yes" : "no");
        printf("last given back: %s\n", given[99] ? "yes" : "no");
    } else if (strcmp(what, "quar-oom") == 0) {
        /* a device of 1 MiB: 64 buffers of 64 KiB made and freed (4 MiB in
         * all) fit natively one at a time; the quarantine must not make
         * any of them fail */
        fake_set_total_mem((size_t)1 << 20);
        int ok = 0;
        for (int i = 0; i < 64; i++) {
            CUdeviceptr p;
            if (i % 2 ? cuMemAlloc(&p, 64 << 10) == CUDA_SUCCESS
                      : cuMemAllocAsync(&p, 64 << 10, NULL) == CUDA_SUCCESS) {
                ok++;
                fill(p, 64 << 10);
                if (i % 2)
                    CHECK(cuMemFree(p));
                else
                    CHECK(cuMemFreeAsync(p, NULL));
            }
        }
        printf("allocations that succeeded: %d of 64\n", ok);
    } else if (strcmp(what, "capture-alloc") == 0) {
        /* a graph's private pool grows during the capture of a blocking
         * stream (PyTorch's caching allocator calls cudaMalloc then): the
         * allocation must not touch the legacy stream, which would end the
         * capture */
        CUstream s;
        CUgraph g;
        CUgraphExec ge;
        CHECK(cuStreamCreate(&s, 0));
        CUdeviceptr a = rz_alloc(4096);
        CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
        CUdeviceptr b = rz_alloc(4096);
        poke(b, 0, 16, s);
        printf("end capture: %d\n", (int)cuStreamEndCapture(s, &g));
        CHECK(cuGraphInstantiate(&ge, g, 0));
        CHECK(cuGraphLaunch(ge, s));
        CHECK(cuStreamSynchronize(s));
        CHECK(cuMemFree(b));
        CHECK(cuMemFree(a));
    } else {
        fprintf(stderr, "redzone_prog: unknown scenario '%s'\n", what);
        return 2;
    }
    printf("ok\n");
    return 0;
}
