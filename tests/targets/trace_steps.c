/*
 * Target for the step-trace tests: a step loop against the fake driver,
 * one scenario per argv[1], each with a known set of host values that
 * change between steps (see tests/integration/test_trace.c for what the
 * report must say about each).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "../fake/fakecuda.h"

#include <atlas/trace.h>
#include <nvtx3/nvToolsExt.h>

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "trace_steps: %s failed: %d\n", #call, (int)r_);                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUresult k_noop(const struct fake_launch *l, void **p)
{
    (void)l, (void)p;
    return CUDA_SUCCESS;
}

struct blob {
    unsigned char b[128];
};

static const size_t sz_ptr_int[] = {8, 4};
static const size_t sz_ptr_ptr[] = {8, 8};
static const size_t sz_ptr_blob[] = {8, 128};
static const size_t sz_eight[] = {4, 4, 4, 4, 4, 4, 4, 4};
static const size_t sz_one[] = {8};
static const struct fake_kernel_def kernels[] = {
    {"_Z8add_stepPfi", k_noop, 2, sz_ptr_int, NULL},
    {"_Z4pairPfS_", k_noop, 2, sz_ptr_ptr, NULL},
    {"_Z4blobPf4blob", k_noop, 2, sz_ptr_blob, NULL},
    {"_Z5eightiiiiiiii", k_noop, 8, sz_eight, NULL},
    {"_Z4fillPf", k_noop, 1, sz_one, NULL},
    {"_Z4nonev", k_noop, 0, NULL, NULL},
};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 6, kernels};
/* "variants": one extern "C" name in two modules with other parameter layouts, as XLA's
 * autotuner compiles a fusion in several modules (16 bytes of parameters, then 304) */
static const size_t sz_va[] = {8, 8};
static const size_t sz_vb[] = {8, 296};
static const struct fake_kernel_def kern_va[] = {{"loop_fusion", k_noop, 2, sz_va, NULL}};
static const struct fake_kernel_def kern_vb[] = {{"loop_fusion", k_noop, 2, sz_vb, NULL}};
static const struct fake_image image_va = {FAKE_IMAGE_MAGIC, 1, kern_va};
static const struct fake_image image_vb = {FAKE_IMAGE_MAGIC, 1, kern_vb};
static CUfunction f_add, f_pair, f_blob, f_eight, f_fill, f_none, f_va, f_vb;
static CUdeviceptr buf;
static CUstream stream;

static void launch(CUfunction f, unsigned grid, void **kp)
{
    CHECK(cuLaunchKernel(f, grid, 1, 1, 32, 1, 1, 0, stream, kp, NULL));
}

static void fill(void)
{
    void *kp[] = {&buf};
    launch(f_fill, 1, kp);
}

/* "threads": four threads, each with its own stream, enqueue at once; the
 * interleaving differs from step to step, the per-stream order does not. */
static CUstream tstreams[4];
static CUcontext tctx;
static int tstep;

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    CHECK(cuCtxSetCurrent(tctx));
    for (int k = 0; k < 50; k++) {
        int v = t * 1000 + k + (tstep == 2 && t == 2 && k == 7); /* one change, in step 2 */
        void *kp[] = {&buf, &v};
        CHECK(cuLaunchKernel(f_add, 1, 1, 1, 32, 1, 1, 0, tstreams[t], kp, NULL));
    }
    return NULL;
}

/* "race": the workers launch while the main thread ends steps under them;
 * every op must land in exactly one step (the test counts them). */
#define RACE_LAUNCHES 2000
static volatile int race_done;

static void *race_worker(void *arg)
{
    int t = (int)(long)arg;
    CHECK(cuCtxSetCurrent(tctx));
    for (int k = 0; k < RACE_LAUNCHES; k++) {
        int v = k;
        void *kp[] = {&buf, &v};
        CHECK(cuLaunchKernel(f_add, 1, 1, 1, 32, 1, 1, 0, tstreams[t], kp, NULL));
    }
    return NULL;
}

static void race(void)
{
    pthread_t th[4];
    for (long t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, race_worker, (void *)t);
    for (int k = 0; k < 200; k++)
        CHECK(cuCtxSynchronize()); /* each one ends a step, with the workers' ops */
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
}

/* "tsteps[-ctx][-change]": four threads, each with its own stream and
 * buffer, each running 50 steps of three ops and then synchronising its own
 * stream (-ctx: the context). Without -ctx the threads are named
 * ("worker-N"); with -change thread 2 passes another scalar in its step 20
 * (and back in 21). Each thread synchronises once before its loop: from its
 * first sync on, its ops are its own (before, they are lent to others). */
static const char *tsc;
static pthread_barrier_t tbarrier;

static void *tsteps_worker(void *arg)
{
    int t = (int)(long)arg, ctxsync = strstr(tsc, "-ctx") != NULL;
    CUdeviceptr mine;
    CHECK(cuCtxSetCurrent(tctx));
    if (!ctxsync) {
        char name[16];
        snprintf(name, sizeof name, "worker-%d", t);
        pthread_setname_np(pthread_self(), name);
    }
    CHECK(cuMemAlloc(&mine, 1024));
    CHECK(ctxsync ? cuCtxSynchronize() : cuStreamSynchronize(tstreams[t]));
    pthread_barrier_wait(&tbarrier); /* four threads have steps before any reports one */
    for (int k = 0; k < 50; k++) {
        int v = t * 1000 + (strstr(tsc, "-change") && t == 2 && k == 20);
        void *kp[] = {&mine, &v}, *kf[] = {&mine};
        CHECK(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, tstreams[t], kf, NULL));
        CHECK(cuLaunchKernel(f_add, 1, 1, 1, 32, 1, 1, 0, tstreams[t], kp, NULL));
        CHECK(cuMemsetD32Async(mine, 0, 16, tstreams[t]));
        CHECK(ctxsync ? cuCtxSynchronize() : cuStreamSynchronize(tstreams[t]));
    }
    return NULL;
}

static void tsteps(void)
{
    pthread_t th[4];
    pthread_barrier_init(&tbarrier, NULL, 4);
    for (long t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, tsteps_worker, (void *)t);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
}

/* "twins": two threads of one name on one stream take turns, so their steps
 * are of one kind (name, thread, stream) and each is compared with the
 * other's: A records a step whole, B half of one, A's sync ends A's step
 * (the kind keeps it in place of the step B records against), then B records
 * the rest and syncs. Three ops of each step carry its number, and B's
 * steps launch one op with another grid. */
enum { TWIN_OPS = 3000 };
static pthread_mutex_t tw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tw_cv = PTHREAD_COND_INITIALIZER;
static int tw_turn, tw_rounds;

static void twin_ops(int who, int step, int from, int to)
{
    for (int n = from; n < to; n++) {
        int v = n % 1000 == 7 ? step : n;
        void *kp[] = {&buf, &v};
        launch(f_add, who && n == 1500 ? 2 : 1, kp);
    }
}

static void twin_wait(int turn)
{
    pthread_mutex_lock(&tw_mu);
    while (tw_turn != turn)
        pthread_cond_wait(&tw_cv, &tw_mu);
    pthread_mutex_unlock(&tw_mu);
}

static void twin_pass(int turn)
{
    pthread_mutex_lock(&tw_mu);
    tw_turn = turn;
    pthread_cond_broadcast(&tw_cv);
    pthread_mutex_unlock(&tw_mu);
}

static void *twin(void *arg)
{
    const int who = (int)(long)arg;
    pthread_setname_np(pthread_self(), "twin");
    CHECK(cuCtxSetCurrent(tctx));
    for (int r = 0; r < tw_rounds; r++) {
        if (who == 0) {
            twin_wait(4 * r);
            twin_ops(0, 2 * r, 0, TWIN_OPS);
            twin_pass(4 * r + 1);
            twin_wait(4 * r + 2);
            CHECK(cuStreamSynchronize(stream));
            twin_pass(4 * r + 3);
        } else {
            twin_wait(4 * r + 1);
            twin_ops(1, 2 * r + 1, 0, TWIN_OPS / 2);
            twin_pass(4 * r + 2);
            twin_wait(4 * r + 3);
            twin_ops(1, 2 * r + 1, TWIN_OPS / 2, TWIN_OPS);
            CHECK(cuStreamSynchronize(stream));
            twin_pass(4 * r + 4);
        }
    }
    return NULL;
}

static void twins(int rounds)
{
    pthread_t th[2];
    tw_rounds = rounds;
    for (long t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, twin, (void *)t);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
}

/* "autograd[-same][-legacy]": a training step as PyTorch runs it: the forward pass
 * launched from the main thread, the backward pass from a long-lived helper
 * thread (autograd's engine) on the same stream while the main thread
 * waits, then the optimizer step from the main thread again. The helper
 * never synchronises. The backward kernel's scalar changes each step
 * (-same: it does not). */
static pthread_mutex_t ag_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ag_cv = PTHREAD_COND_INITIALIZER;
static int ag_todo = -1, ag_done = -1, ag_same;

static void *ag_engine(void *arg)
{
    (void)arg;
    CHECK(cuCtxSetCurrent(tctx));
    for (;;) {
        pthread_mutex_lock(&ag_mu);
        while (ag_todo == ag_done)
            pthread_cond_wait(&ag_cv, &ag_mu);
        int i = ag_todo;
        pthread_mutex_unlock(&ag_mu);
        if (i < 0)
            return NULL;
        int v = ag_same ? 5 : 200 + i;
        void *kp[] = {&buf, &v};
        fill();
        launch(f_add, 2, kp);
        fill();
        pthread_mutex_lock(&ag_mu);
        ag_done = i;
        pthread_cond_broadcast(&ag_cv);
        pthread_mutex_unlock(&ag_mu);
    }
}

static void autograd_step(int i)
{
    int v = 7;
    void *kp[] = {&buf, &v};
    launch(f_add, 1, kp); /* forward */
    pthread_mutex_lock(&ag_mu);
    ag_todo = i; /* backward, on the engine's thread */
    pthread_cond_broadcast(&ag_cv);
    while (ag_done != i)
        pthread_cond_wait(&ag_cv, &ag_mu);
    pthread_mutex_unlock(&ag_mu);
    CHECK(cuMemsetD32Async(buf, 0, 16, stream)); /* the optimizer */
}

/* "stale": thread A synchronises once, then launches 10 ops and leaves
 * synchronising to others; thread H launches 7 memsets on a stream nobody
 * synchronises. The main thread ends 5000 steps of its own stream, then
 * synchronises the context: by then A lends its ops again (they are in that
 * step) and H's, claimed by no step for thousands of step ends, were
 * dropped. */
static pthread_mutex_t st_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t st_cv = PTHREAD_COND_INITIALIZER;
static int st_ready, st_done;

static void st_signal(int *flag)
{
    pthread_mutex_lock(&st_mu);
    (*flag)++;
    pthread_cond_broadcast(&st_cv);
    pthread_mutex_unlock(&st_mu);
}

static void st_wait(int *flag, int n)
{
    pthread_mutex_lock(&st_mu);
    while (*flag < n)
        pthread_cond_wait(&st_cv, &st_mu);
    pthread_mutex_unlock(&st_mu);
}

static void *stale_worker(void *arg)
{
    int helper = (int)(long)arg;
    CHECK(cuCtxSetCurrent(tctx));
    if (!helper)
        CHECK(cuStreamSynchronize(tstreams[0]));
    for (int k = 0; k < (helper ? 7 : 10); k++) {
        if (helper) {
            CHECK(cuMemsetD8Async(buf, 0, 16, tstreams[1]));
        } else {
            void *kp[] = {&buf};
            CHECK(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, tstreams[0], kp, NULL));
        }
    }
    st_signal(&st_ready);
    st_wait(&st_done, 1); /* alive until the main thread is done */
    return NULL;
}

static void stale(void)
{
    pthread_t th[2];
    for (long t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, stale_worker, (void *)t);
    st_wait(&st_ready, 2);
    for (int k = 0; k < 5000; k++) {
        fill();
        CHECK(cuStreamSynchronize(stream));
    }
    CHECK(cuCtxSynchronize());
    st_signal(&st_done);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
}

enum { MANY_OPS = 200000, SHIFT_OPS = 20000 };

/* One step of each scenario; `i` is the step index. */
static void step(const char *sc, int i)
{
    if (!strcmp(sc, "scalar") || !strcmp(sc, "api") || !strcmp(sc, "nvtx") ||
        !strcmp(sc, "capture-changing")) {
        int v = 100 + i;
        void *kp[] = {&buf, &v};
        fill();
        launch(f_add, 4, kp);
        fill();
    } else if (!strcmp(sc, "same") || !strcmp(sc, "capture") || !strcmp(sc, "capture-stray-end")) {
        int v = 7;
        void *kp[] = {&buf, &v};
        fill();
        launch(f_add, 4, kp);
        CHECK(cuMemsetD32Async(buf, 0, 64, stream));
    } else if (!strcmp(sc, "ptr")) {
        /* arg0: a fresh buffer each step (the old one stays allocated);
         * arg1: the same buffer, one element further each step */
        static CUdeviceptr fresh;
        CHECK(cuMemAlloc(&fresh, 1024));
        CUdeviceptr within = buf + 16 * (CUdeviceptr)i;
        void *kp[] = {&fresh, &within};
        launch(f_pair, 1, kp);
    } else if (!strcmp(sc, "swap")) {
        /* two buffers made in the first step, passed in turn: the ledger is
         * the same from step 2 on, so a step's pointers are resolved from
         * the last step of its shape, op by op where the ops differ */
        static CUdeviceptr two[2];
        if (!two[0] && (cuMemAlloc(&two[0], 256) || cuMemAlloc(&two[1], 256)))
            exit(1);
        CUdeviceptr p = two[i % 2];
        void *kp[] = {&p, &buf};
        fill();
        launch(f_pair, 1, kp);
    } else if (!strcmp(sc, "segments")) {
        /* a caching allocator's two segments, made by the library TS_SEGLIB names (a test
         * libc10_cuda.so, or the same code under another name): the step's tensor gets a block
         * of one segment, then of the other, at offsets in turn (a cycle of six steps); a kernel
         * and a memset take it */
        static CUdeviceptr seg[2];
        if (!seg[0]) {
            const char *lib = getenv("TS_SEGLIB");
            void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
            CUresult (*make)(CUdeviceptr *, size_t) =
                h ? (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "seg_alloc") : NULL;
            if (!make || make(&seg[0], 1u << 21) || make(&seg[1], 1u << 21)) {
                fprintf(stderr, "trace_steps: no segments from %s\n", lib ? lib : "(TS_SEGLIB unset)");
                exit(1);
            }
        }
        CUdeviceptr p = seg[i % 2] + 512 * (CUdeviceptr)(i % 3);
        void *kp[] = {&p, &buf};
        fill();
        launch(f_pair, 1, kp);
        CHECK(cuMemsetD8Async(p, 0, 512, stream));
    } else if (!strcmp(sc, "variants")) {
        /* the first module's kernel for four steps, then the second's: another kernel of the
         * same name, a new shape rather than a changed launch */
        static unsigned char wide[296];
        void *kp[] = {&buf, wide};
        fill();
        CHECK(cuLaunchKernel(i < 4 ? f_va : f_vb, 1, 1, 1, 32, 1, 1, i < 4 ? 0 : 64, stream, kp,
                             NULL));
    } else if (!strcmp(sc, "period4")) {
        /* two buffers, each passed for four steps in turn: a change every fourth step */
        static CUdeviceptr two[2];
        if (!two[0] && (cuMemAlloc(&two[0], 256) || cuMemAlloc(&two[1], 256)))
            exit(1);
        CUdeviceptr p = two[(i / 4) % 2];
        void *kp[] = {&p, &buf};
        fill();
        launch(f_pair, 1, kp);
    } else if (!strcmp(sc, "churn")) {
        /* a buffer made each step and the one before freed (a framework's
         * set-up, without a caching allocator): arg0 is another buffer each
         * step, which replaces the one freed */
        static CUdeviceptr cur;
        CUdeviceptr fresh;
        CHECK(cuMemAlloc(&fresh, 1024));
        if (cur)
            CHECK(cuMemFree(cur));
        cur = fresh;
        void *kp[] = {&cur, &buf};
        launch(f_pair, 1, kp);
    } else if (!strcmp(sc, "many")) {
        /* MANY_OPS launches of two pointers into one allocation; the last
         * one's pointer moves each step, so every step is resolved and
         * diffed (what the trace holds per op then is measured) */
        for (int n = 0; n < MANY_OPS; n++) {
            CUdeviceptr a = buf + 8 * (CUdeviceptr)(n % 64),
                        b = buf + 2048 + (n == MANY_OPS - 1 ? 8 * (CUdeviceptr)i : 0);
            void *kp[] = {&a, &b};
            launch(f_pair, 1, kp);
        }
    } else if (!strcmp(sc, "shift")) {
        /* two shapes in turn: every other step begins with a memset, so
         * each step's ops sit one place off those of the step before it
         * (each is compared with the last of its own shape); the scalar of
         * op 5000 changes every fourth step */
        if (i % 2)
            CHECK(cuMemsetD8Async(buf, 0, 16, stream));
        for (int n = 0; n < SHIFT_OPS; n++) {
            int v = n == 5000 ? i / 4 : n;
            void *kp[] = {&buf, &v};
            launch(f_add, 1, kp);
        }
    } else if (!strcmp(sc, "noparams")) {
        /* only kernels without parameters, from the process's first op: the
         * thread's buffer never holds a parameter byte */
        launch(f_none, 2u << i, NULL);
        launch(f_none, 1, NULL);
    } else if (!strcmp(sc, "grid")) {
        int v = 1;
        void *kp[] = {&buf, &v};
        launch(f_add, 2u << i, kp);
    } else if (!strcmp(sc, "insert")) {
        int v = 5;
        void *kp[] = {&buf, &v};
        fill();
        launch(f_add, 4, kp);
        if (i == 1)
            CHECK(cuMemsetD8Async(buf, 0, 16, stream));
        launch(f_add, 4, kp);
        fill();
        fill();
    } else if (!strcmp(sc, "blob")) {
        struct blob b;
        memset(&b, 0x11, sizeof b);
        b.b[64] = (unsigned char)(0x11 + i);
        void *kp[] = {&buf, &b};
        launch(f_blob, 1, kp);
    } else if (!strcmp(sc, "residue")) {
        /* a struct whose tail the code never set, as PyTorch's
         * TensorListMetadata: it holds what the stack held, here an address
         * of the stack and a counter, both different every step */
        struct blob b;
        memset(&b, 0x11, 64);
        uint64_t junk[2] = {(uint64_t)(uintptr_t)&b + 8u * (unsigned)i, 0x10 + 4u * (unsigned)i};
        memcpy(b.b + 64, junk, sizeof junk);
        memset(b.b + 80, 0, 48);
        void *kp[] = {&buf, &b};
        launch(f_blob, 1, kp);
    } else if (!strcmp(sc, "eight")) {
        int v[8];
        void *kp[8];
        for (int k = 0; k < 8; k++)
            v[k] = i * 10 + k, kp[k] = &v[k];
        launch(f_eight, 1, kp);
    } else if (!strcmp(sc, "threads")) {
        pthread_t th[4];
        tstep = i;
        for (long t = 0; t < 4; t++)
            pthread_create(&th[t], NULL, worker, (void *)t);
        for (int t = 0; t < 4; t++)
            pthread_join(th[t], NULL);
    } else if (!strcmp(sc, "copies") || !strcmp(sc, "copy-grow")) {
        /* a host-to-device copy from a host buffer, a device-to-device copy
         * within buf and a memset: addresses that differ from run to run
         * (ASLR), the same buffers in every run; copy-grow: the first
         * copy's size doubles each step */
        static unsigned char *host;
        if (!host)
            host = calloc(1, 8192);
        size_t n = !strcmp(sc, "copy-grow") ? 1024u << i : 1024;
        CHECK(cuMemcpyHtoDAsync(buf, host, n, stream));
        CHECK(cuMemcpyDtoDAsync(buf + 2048, buf, 512, stream));
        CHECK(cuMemsetD8Async(buf + 3072, 0, 16, stream));
    } else if (!strcmp(sc, "devcopies")) {
        /* synchronous copies between device memories (1D and 2D) inside a step: the host does
         * not wait for them (CUDA's documented behaviour), so they end no step */
        int v = 7;
        void *kp[] = {&buf, &v};
        fill();
        CHECK(cuMemcpyDtoD(buf + 2048, buf, 512));
        CUDA_MEMCPY2D c2 = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                            .srcDevice = buf,
                            .srcPitch = 64,
                            .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                            .dstDevice = buf + 3072,
                            .dstPitch = 64,
                            .WidthInBytes = 64,
                            .Height = 4};
        CHECK(cuMemcpy2D(&c2));
        launch(f_add, 4, kp);
    } else if (!strcmp(sc, "noinfo")) {
        /* the driver cannot give add_step's layout: its argument changes,
         * and atlastrace must say it could not see it rather than call the
         * steps identical silently (the failure is set up at its lookup,
         * in main: the layout is asked for once, then) */
        int v = 100 + i;
        void *kp[] = {&buf, &v};
        launch(f_add, 4, kp);
    } else if (!strcmp(sc, "warmup")) {
        /* ten set-up syncs, each after work of its own (a framework's
         * autotuning), then the loop: the scalar of "scalar" */
        if (i < 10) {
            for (int k = 0; k <= i; k++)
                fill();
            if (i % 2)
                CHECK(cuMemsetD8Async(buf, 0, 16, stream));
        } else {
            step("scalar", i);
        }
    } else if (!strcmp(sc, "autotune")) {
        /* nine set-up syncs of three shapes in turn, each shape's steps with other values
         * every time (an autotuner trying configurations: grids, scalars, sizes), then the
         * loop: fill, add_step with 7 (8 from step 26 on), fill */
        static const unsigned grids[] = {4, 4, 7};
        static const int vals[] = {13, 2, 2};
        if (i < 9) {
            int r = i / 3, v = vals[r];
            void *kp[] = {&buf, &v};
            if (i % 3 == 0) {
                launch(f_add, grids[r], kp);
            } else if (i % 3 == 1) {
                fill();
                v = 20 + 3 * r * r;
                launch(f_add, 4, kp);
            } else {
                CHECK(cuMemsetD8Async(buf, 0, 16 + 16 * (unsigned)(r * r), stream));
                fill();
            }
        } else {
            int v = i < 25 ? 7 : 8;
            void *kp[] = {&buf, &v};
            fill();
            launch(f_add, 4, kp);
            fill();
        }
    } else if (!strcmp(sc, "hostbufs")) {
        /* a result read back each step into one of two host buffers in turn: pageable
         * (malloc'd) ones, which no capture takes, and pinned ones, whose address a graph
         * would freeze */
        static unsigned char *pageable[2], *pinned[2];
        if (!pageable[0]) {
            pageable[0] = malloc(64), pageable[1] = malloc(64);
            CHECK(cuMemAllocHost((void **)&pinned[0], 64));
            CHECK(cuMemAllocHost((void **)&pinned[1], 64));
        }
        fill();
        CHECK(cuMemcpyDtoHAsync(pageable[i % 2], buf, 64, stream));
        CHECK(cuMemcpyDtoHAsync(pinned[(i / 4) % 2], buf, 64, stream));
    } else if (!strcmp(sc, "extra")) {
        unsigned char packed[16] = {0};
        memcpy(packed, &buf, 8);
        int v = 40 + i;
        memcpy(packed + 8, &v, 4);
        size_t size = 12;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                         CU_LAUNCH_PARAM_END};
        CHECK(cuLaunchKernel(f_add, 1, 1, 1, 32, 1, 1, 0, stream, NULL, extra));
    }
}

int main(int argc, char **argv)
{
    const char *sc = argc > 1 ? argv[1] : "scalar";
    int steps = argc > 2 ? atoi(argv[2]) : 3;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, &image));
    if (!strcmp(sc, "noinfo")) {
        /* the layout's query, at the lookup, fails as a driver without it answers (both entry
         * points: a layout refused for another reason is asked again at the next use) */
        fake_fail_next("cuFuncGetParamInfo", CUDA_ERROR_NOT_SUPPORTED);
        fake_fail_next("cuKernelGetParamInfo", CUDA_ERROR_NOT_SUPPORTED);
    }
    CHECK(cuModuleGetFunction(&f_add, mod, "_Z8add_stepPfi"));
    CHECK(cuModuleGetFunction(&f_pair, mod, "_Z4pairPfS_"));
    CHECK(cuModuleGetFunction(&f_blob, mod, "_Z4blobPf4blob"));
    CHECK(cuModuleGetFunction(&f_eight, mod, "_Z5eightiiiiiiii"));
    CHECK(cuModuleGetFunction(&f_fill, mod, "_Z4fillPf"));
    CHECK(cuModuleGetFunction(&f_none, mod, "_Z4nonev"));
    if (!strcmp(sc, "variants")) {
        CUmodule ma, mb;
        CHECK(cuModuleLoadData(&ma, &image_va));
        CHECK(cuModuleLoadData(&mb, &image_vb));
        CHECK(cuModuleGetFunction(&f_va, ma, "loop_fusion"));
        CHECK(cuModuleGetFunction(&f_vb, mb, "loop_fusion"));
    }
    CHECK(cuMemAlloc(&buf, 4096));
    CHECK(cuStreamCreate(&stream, 0));
    tctx = ctx;
    for (int t = 0; t < 4; t++)
        CHECK(cuStreamCreate(&tstreams[t], 0));
    CHECK(cuCtxSynchronize()); /* setup ends here (an empty step) */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long rss0 = ru.ru_maxrss;

    if (!strcmp(sc, "stale")) {
        stale();
        steps = 0;
    }
    if (!strcmp(sc, "twins")) {
        twins(steps);
        steps = 0;
    }
    if (!strncmp(sc, "tsteps", 6)) {
        tsc = sc;
        tsteps();
        steps = 0;
    }
    pthread_t engine;
    if (!strncmp(sc, "autograd", 8)) {
        ag_same = strstr(sc, "-same") != NULL;
        if (strstr(sc, "-legacy"))
            stream = NULL; /* launches name the default stream NULL, its sync CU_STREAM_LEGACY */
        pthread_create(&engine, NULL, ag_engine, NULL);
    }
    CUgraphExec replay_exec = NULL;
    for (int i = 0; i < steps; i++) {
        if (!strncmp(sc, "autograd", 8)) {
            /* under ATLAS_STEP=nvtx:step the range is the step; else the sync */
            nvtxRangePushA("step");
            autograd_step(i);
            nvtxRangePop();
            CHECK(cuStreamSynchronize(stream ? stream : CU_STREAM_LEGACY));
        } else if (!strcmp(sc, "replay")) {
            /* captured once, replayed every step */
            if (!replay_exec) {
                CUgraph g;
                CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
                step("scalar", 0);
                CHECK(cuStreamEndCapture(stream, &g));
                CHECK(cuGraphInstantiate(&replay_exec, g, 0));
            }
            CHECK(cuGraphLaunch(replay_exec, stream));
            CHECK(cuStreamSynchronize(stream));
        } else if (!strcmp(sc, "api")) {
            atlas_step_begin("train");
            step(sc, i);
            atlas_step_end();
            fill(); /* outside any step: not recorded */
            CHECK(cuStreamSynchronize(stream));
        } else if (!strcmp(sc, "nvtx")) {
            nvtxRangePushA("other"); /* an unrelated range around ours */
            nvtxRangePushA("step");
            step(sc, i);
            nvtxRangePop();
            fill();
            nvtxRangePop();
            CHECK(cuStreamSynchronize(stream));
        } else if (!strcmp(sc, "captured") || !strcmp(sc, "captured-late")) {
            /* eager against captured: a graph of "scalar"'s ops with the
             * scalar 17 baked in, captured (and replayed once) before the
             * eager steps (captured) or after three of them (captured-late);
             * the eager steps pass 100 + i */
            if (i == (!strcmp(sc, "captured") ? 0 : 3)) {
                CUgraph g;
                CUgraphExec ge;
                CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
                step("scalar", 17 - 100);
                CHECK(cuStreamEndCapture(stream, &g));
                CHECK(cuGraphInstantiate(&ge, g, 0));
                CHECK(cuGraphLaunch(ge, stream));
                CHECK(cuStreamSynchronize(stream));
            }
            step("scalar", i);
            CHECK(cuStreamSynchronize(stream));
        } else if (!strcmp(sc, "race")) {
            race();
        } else if (!strncmp(sc, "capture", 7)) {
            CUgraph g;
            CUgraphExec ge;
            CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
            if (!strcmp(sc, "capture-stray-end")) {
                /* ending a capture on a stream that is not capturing: refused,
                 * and the capture of `stream` stays open */
                static CUstream idle;
                if (!idle)
                    CHECK(cuStreamCreate(&idle, 0));
                CUgraph none;
                CHECK(cuStreamEndCapture(idle, &none) == CUDA_ERROR_ILLEGAL_STATE
                          ? CUDA_SUCCESS
                          : CUDA_ERROR_UNKNOWN);
            }
            step(sc, i);
            CHECK(cuStreamEndCapture(stream, &g));
            CHECK(cuGraphInstantiate(&ge, g, 0));
            CHECK(cuGraphLaunch(ge, stream));
            CHECK(cuStreamSynchronize(stream));
        } else {
            step(sc, i);
            CHECK(!strcmp(sc, "threads") ? cuCtxSynchronize() : cuStreamSynchronize(stream));
        }
    }
    if (!strncmp(sc, "autograd", 8)) {
        pthread_mutex_lock(&ag_mu);
        ag_todo = -2; /* the engine stops */
        pthread_cond_broadcast(&ag_cv);
        pthread_mutex_unlock(&ag_mu);
        pthread_join(engine, NULL);
    }
    if (!strcmp(sc, "many")) {
        getrusage(RUSAGE_SELF, &ru);
        printf("peak RSS grew %ld KiB for %d ops a step\n", ru.ru_maxrss - rss0, MANY_OPS);
    }
    if (getenv("TS_PARAMINFO")) /* how often the driver was asked for layouts, by anyone */
        printf("param-info calls=%lu\n",
               fake_calls("cuFuncGetParamInfo") + fake_calls("cuKernelGetParamInfo"));
    printf("ok\n");
    return 0;
}
