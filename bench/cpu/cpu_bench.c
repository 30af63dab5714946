/*
 * Cost of an intercepted call, without a GPU: loops of cuLaunchKernel on a
 * kernel that does nothing (no parameters; 8 parameters, like the GPU
 * benchmark's args8: 4 pointers, 2 u32, 1 f32, 1 u64, a cuCtxSynchronize
 * every 256 launches, so ATLAS_TRACE=1 sees 256-op steps), and a loop of 16-byte
 * cuMemcpyDtoH, against the fake driver. Run natively and under the preload;
 * the difference is ours.
 *   cpu_bench N            every loop, prints "launch NS", "args8 NS" and
 *                          "dtoh NS" (nanoseconds per call, after a warm-up)
 *   cpu_bench N launch|args8|dtoh  only that loop, no timing (for callgrind)
 *   cpu_bench N launch:K   the launch loop over K distinct kernels, in turn
 *                          (K up to 65536): the cost of naming and recording
 *                          launches must not grow with the number of kernels
 *   cpu_bench N gpt2       a GPT-2-like training step's op mix (below), N
 *                          launches in steps of 161; timed as "gpt2 NS" (per
 *                          launch, the step ends included) in every run
 *   cpu_bench N adamw      PyTorch's AdamW step on top of a step's elementwise ops
 *                          (below), N launches in steps of 308; adamw:pool with
 *                          the elementwise pointers moving within one allocation
 *   cpu_bench N cupy       CuPy's step (below): 5 launches and a blocking 4-byte copy
 *   cpu_bench N sync       N cuCtxSynchronize (a sync's own cost)
 *   cpu_bench N sN:kK:pP   launches over K kernels of P parameters (0 or 8)
 *                          in turn, a cuCtxSynchronize after every N: a
 *                          good sync must not make launches dearer
 *   cpu_bench N reload:R   R times: load a module of 256 kernels, look each
 *                          up, launch each, unload it; then the launch loop
 *                          over the 256 kernels of one more load (a launch
 *                          must cost the same after any number of reloads)
 *   cpu_bench N cycles     N module reload cycles (load, look up, launch,
 *                          unload) and what they took: "cpu_s S", the
 *                          peak resident size "hwm_kb K" and the heap in use
 *                          "heap_kb H" (make reload-bench)
 * With CPU_BENCH_KERNELS="256 10000" in the environment, the timing run also
 * prints "launch:K NS" for each count, and with CPU_BENCH_EXTRA_LOOPS="sync
 * s16:k256:p0 reload:30 ..." "LOOP NS" for each of those loops (timed over
 * N/10 calls).
 */
#include "../../tests/fake/fakecuda.h"

#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
/* ---- many kernels: modules of MANY_PER_MOD "nop" kernels named m<i> ---- */
#define MANY_MAX 65536
#define MANY_PER_MOD 256
static struct fake_kernel_def many_defs[MANY_PER_MOD];
static char many_names[MANY_PER_MOD][16];
static const struct fake_image many_image = {FAKE_IMAGE_MAGIC, MANY_PER_MOD, many_defs};
static CUfunction many[MANY_MAX];
static long many_n; /* how many are loaded */

/* The kernels of many_image: 0 or 8 parameters (sizes8). */
static void many_defs_set(int params)
{
    for (int i = 0; i < MANY_PER_MOD; i++) {
        snprintf(many_names[i], sizeof many_names[i], "m%d", i);
        many_defs[i] = (struct fake_kernel_def){many_names[i], k_nop, params ? 8 : 0,
                                                params ? sizes8 : NULL, NULL};
    }
}

/* Loads kernels until there are k (each module is one more image load). */
static int many_load(long k)
{
    if (k < 1 || k > MANY_MAX)
        return 1;
    many_defs_set(0);
    while (many_n < k) {
        CUmodule m;
        if (cuModuleLoadData(&m, &many_image))
            return 1;
        for (int i = 0; i < MANY_PER_MOD && many_n < MANY_MAX; i++)
            if (cuModuleGetFunction(&many[many_n++], m, many_names[i]))
                return 1;
    }
    return 0;
}

static int loop_many(long n, long k)
{
    long j = 0;
    for (long i = 0; i < n; i++) {
        if (cuLaunchKernel(many[j], 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
            return 1;
        if (++j == k)
            j = 0;
    }
    return 0;
}

/* ---- a GPT-2-like step (issue #30). On the H200, a Hugging Face GPT-2
 * training step (4 layers, width 256, batch 8x128) enqueued 12,439 ops in 77
 * steps (161 a step) over 55 kernels, with 310 parameter bytes and 5.4
 * pointers an op, and cost 1.3-1.67x native traced against 1.02x on the
 * 8-parameter loop. Here: 55 kernels of 300 parameter bytes (5 pointers into
 * one allocation, two ints, a 252-byte by-value struct), 161 launches a step
 * over them in turn, each step ended by cuStreamSynchronize. One int (the
 * step's number, as a learning-rate schedule's value would be) changes every
 * step, so every step end diffs: the traced side's slow path. ---- */
#define GPT_KERNELS 55
#define GPT_OPS 161
static const size_t gpt_sizes[8] = {8, 8, 8, 8, 8, 4, 4, 252};
static struct fake_kernel_def gpt_defs[GPT_KERNELS];
static char gpt_names[GPT_KERNELS][16];
static const struct fake_image gpt_image = {FAKE_IMAGE_MAGIC, GPT_KERNELS, gpt_defs};
static CUfunction gpt[GPT_KERNELS];
static CUstream gpt_stream;
static CUdeviceptr gpt_buf;

static int gpt_load(void)
{
    CUmodule m;
    for (int i = 0; i < GPT_KERNELS; i++) {
        snprintf(gpt_names[i], sizeof gpt_names[i], "g%d", i);
        gpt_defs[i] = (struct fake_kernel_def){gpt_names[i], k_nop, 8, gpt_sizes, NULL};
    }
    if (cuModuleLoadData(&m, &gpt_image) || cuStreamCreate(&gpt_stream, 0) ||
        cuMemAlloc(&gpt_buf, 1 << 20))
        return 1;
    for (int i = 0; i < GPT_KERNELS; i++)
        if (cuModuleGetFunction(&gpt[i], m, gpt_names[i]))
            return 1;
    return 0;
}

static int loop_gpt2(long n)
{
    struct {
        unsigned char b[252];
    } blob;
    memset(&blob, 0x11, sizeof blob);
    CUdeviceptr p[5];
    int a = 0, b = 7;
    void *params[8] = {&p[0], &p[1], &p[2], &p[3], &p[4], &a, &b, &blob};
    static long step;
    for (long i = 0; i < n; i++) {
        long k = i % GPT_OPS;
        for (int j = 0; j < 5; j++)
            p[j] = gpt_buf + 4096 * (CUdeviceptr)((k + j) % 64);
        a = k == 0 ? (int)step : (int)k;
        if (cuLaunchKernel(gpt[k % GPT_KERNELS], 1, 1, 1, 128, 1, 1, 0, gpt_stream, params, NULL) !=
            CUDA_SUCCESS)
            return 1;
        if (k == GPT_OPS - 1) {
            if (cuStreamSynchronize(gpt_stream) != CUDA_SUCCESS)
                return 1;
            step++;
        }
    }
    return 0;
}

/* ---- AdamW's step (issue #43): on the H100 the traced GPT-2 step of the real-program matrix
 * cost 1.17-1.19x. Its optimizer launches PyTorch's multi_tensor_apply_kernel with a 3.5 KiB
 * by-value struct (four lists of 110 tensor addresses, their sizes, a block map) whose
 * learning-rate and bias-correction scalars change every step; around it, elementwise
 * kernels whose pointers move across a caching allocator's blocks. Here: 300 launches of
 * four parameters (pointers moving every step over four 2 MiB segments) and 8 of the struct,
 * its scalars changed each step, then cuStreamSynchronize. ---- */
#define ADAM_EW 300
#define ADAM_MTA 8
struct adam_meta {
    unsigned long long addr[4][110];
    long sizes[110];
    unsigned char block_to_tensor[320];
    int start;
    float lr, bc1, bc2;
};
static const size_t adam_sz_mta[1] = {sizeof(struct adam_meta)};
static const size_t adam_sz_ew[4] = {8, 8, 8, 4};
static const struct fake_kernel_def adam_defs[2] = {
    {"_Z24multi_tensor_apply_kernel10adam_meta", k_nop, 1, adam_sz_mta, NULL},
    {"_Z11elementwisePfPKfS_i", k_nop, 4, adam_sz_ew, NULL}};
static const struct fake_image adam_image = {FAKE_IMAGE_MAGIC, 2, adam_defs};
static CUfunction adam_mta, adam_ew;
static CUstream adam_stream;
static CUdeviceptr adam_seg[8];
static struct adam_meta adam_m;
/* adamw:pool: the elementwise ops' first pointers move within one segment instead (the
 * caching allocator's blocks), so each step's report folds into the run before it, as the
 * GPU's GPT-2 row's do; plain adamw's move to another segment every step, more changes than a
 * report folds, and every step is printed until the print limit */
static int adam_pool;

static int adam_load(void)
{
    CUmodule m;
    if (cuModuleLoadData(&m, &adam_image) || cuModuleGetFunction(&adam_mta, m, adam_defs[0].name) ||
        cuModuleGetFunction(&adam_ew, m, adam_defs[1].name) || cuStreamCreate(&adam_stream, 0))
        return 1;
    for (int i = 0; i < 8; i++)
        if (cuMemAlloc(&adam_seg[i], 2 << 20))
            return 1;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 110; j++)
            adam_m.addr[i][j] = adam_seg[i] + 4096 * (CUdeviceptr)j;
    return 0;
}

static int loop_adamw(long n)
{
    static long step;
    for (long i = 0; i < n; i++) {
        long k = i % (ADAM_EW + ADAM_MTA);
        CUresult r;
        if (k < ADAM_EW) {
            CUdeviceptr a = adam_seg[4 + (adam_pool ? 0 : (k + step) % 4)] +
                            512 * (CUdeviceptr)((k * 7 + step) % 100);
            CUdeviceptr b = adam_seg[5] + 512 * (CUdeviceptr)(k % 50);
            CUdeviceptr o = adam_seg[6] + 1024 * (CUdeviceptr)(k % 30);
            int cnt = 1000 + (int)k;
            void *kp[] = {&a, &b, &o, &cnt};
            r = cuLaunchKernel(adam_ew, 1, 1, 1, 128, 1, 1, 0, adam_stream, kp, NULL);
        } else {
            adam_m.lr = 0.001f * (float)(step + 1);
            adam_m.bc1 = 1.0f / (float)(step + 1);
            adam_m.start = (int)(k - ADAM_EW);
            void *kp[] = {&adam_m};
            r = cuLaunchKernel(adam_mta, 1, 1, 1, 512, 1, 1, 0, adam_stream, kp, NULL);
        }
        if (r != CUDA_SUCCESS)
            return 1;
        if (k == ADAM_EW + ADAM_MTA - 1) {
            if (cuStreamSynchronize(adam_stream) != CUDA_SUCCESS)
                return 1;
            step++;
        }
    }
    return 0;
}

/* ---- CuPy's step (issue #43): on the H100 the matrix's CuPy row (an 82 us step: a RawKernel
 * saxpy, three elementwise kernels on pool temporaries, a sum, then float() of it) cost
 * 1.12-1.18x traced. Here: 5 launches, then a 4-byte cuMemcpyDtoH (blocking: the step's end)
 * into a host buffer that moves from step to step, as a Python float's does. ---- */
#define CUPY_OPS 6
static const size_t cupy_sz[4] = {4, 8, 8, 4};
static const struct fake_kernel_def cupy_defs[2] = {{"saxpy", k_nop, 4, cupy_sz, NULL},
                                                    {"_Z4tanhPfS_i", k_nop, 3, cupy_sz + 1, NULL}};
static const struct fake_image cupy_image = {FAKE_IMAGE_MAGIC, 2, cupy_defs};
static CUfunction cupy_k[2];
static CUdeviceptr cupy_x, cupy_y, cupy_t[4];

static int cupy_load(void)
{
    CUmodule m;
    if (cuModuleLoadData(&m, &cupy_image) || cuModuleGetFunction(&cupy_k[0], m, "saxpy") ||
        cuModuleGetFunction(&cupy_k[1], m, cupy_defs[1].name) || cuMemAlloc(&cupy_x, 4 << 20) ||
        cuMemAlloc(&cupy_y, 4 << 20))
        return 1;
    for (int i = 0; i < 4; i++)
        if (cuMemAlloc(&cupy_t[i], 4 << 20))
            return 1;
    return 0;
}

static int loop_cupy(long n)
{
    static long step;
    static char host[2][64];
    for (long i = 0; i < n; i++) {
        long k = i % CUPY_OPS;
        float a = 0.5f;
        int cnt = 1 << 20;
        CUdeviceptr src = k == 1 ? cupy_y : cupy_t[(k + 1) % 4], dst = cupy_t[k % 4];
        void *sp[] = {&a, &cupy_x, &cupy_y, &cnt}, *ep[] = {&src, &dst, &cnt};
        CUresult r;
        if (k == 0)
            r = cuLaunchKernel(cupy_k[0], 4096, 1, 1, 256, 1, 1, 0, NULL, sp, NULL);
        else if (k < CUPY_OPS - 1)
            r = cuLaunchKernel(cupy_k[1], 4096, 1, 1, 256, 1, 1, 0, NULL, ep, NULL);
        else {
            r = cuMemcpyDtoH(host[step % 2] + 8 * (step % 5), cupy_t[0], 4);
            step++;
        }
        if (r != CUDA_SUCCESS)
            return 1;
    }
    return 0;
}

static CUdeviceptr dbuf;
static char hbuf[16];

/* ---- syncs, and reloads ---- */

/* sN:kK:pP: K kernels of P parameters, loaded apart from many[] */
static CUfunction *synced;
static long synced_k, synced_every;
static void **synced_params;

static int synced_load(long k, long every, int params)
{
    static CUdeviceptr a, b, c, d;
    static unsigned m = 1024, kk = 64;
    static float alpha = 1.5f;
    static unsigned long long seed = 42;
    static void *p8[8] = {&a, &b, &c, &d, &m, &kk, &alpha, &seed};
    if (k < 1 || k > MANY_MAX || every < 1 || (params != 0 && params != 8))
        return 1;
    a = b = c = d = dbuf;
    synced = calloc((size_t)k, sizeof *synced);
    if (!synced)
        return 1;
    many_defs_set(params);
    for (long n = 0; n < k;) {
        CUmodule mod;
        if (cuModuleLoadData(&mod, &many_image))
            return 1;
        for (int i = 0; i < MANY_PER_MOD && n < k; i++)
            if (cuModuleGetFunction(&synced[n++], mod, many_names[i]))
                return 1;
    }
    synced_k = k, synced_every = every, synced_params = params ? p8 : NULL;
    return 0;
}

static int loop_synced(long n)
{
    long j = 0;
    for (long i = 0; i < n; i++) {
        if (cuLaunchKernel(synced[j], 1, 1, 1, 1, 1, 1, 0, NULL, synced_params, NULL) !=
            CUDA_SUCCESS)
            return 1;
        if (++j == synced_k)
            j = 0;
        if (i % synced_every == synced_every - 1 && cuCtxSynchronize() != CUDA_SUCCESS)
            return 1;
    }
    return 0;
}

static int loop_sync(long n)
{
    for (long i = 0; i < n; i++)
        if (cuCtxSynchronize() != CUDA_SUCCESS)
            return 1;
    return 0;
}

/* reload:R: the launch loop runs over the 256 kernels of the last load */
static int reload_load(long r)
{
    many_defs_set(0);
    synced = calloc(MANY_PER_MOD, sizeof *synced);
    if (!synced || r < 0)
        return 1;
    for (long c = 0; c <= r; c++) {
        CUmodule mod;
        if (cuModuleLoadData(&mod, &many_image))
            return 1;
        for (int i = 0; i < MANY_PER_MOD; i++)
            if (cuModuleGetFunction(&synced[i], mod, many_names[i]) ||
                cuLaunchKernel(synced[i], 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL))
                return 1;
        if (c < r && cuModuleUnload(mod))
            return 1;
    }
    synced_k = MANY_PER_MOD, synced_every = LONG_MAX, synced_params = NULL;
    return 0;
}

/* N reload cycles of the one-kernel image, then their cost. */
static int reload_cycles(long n)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (long i = 0; i < n; i++) {
        CUmodule mod;
        CUfunction f;
        if (cuModuleLoadData(&mod, &image) || cuModuleGetFunction(&f, mod, "nop") ||
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) || cuModuleUnload(mod))
            return 1;
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    long hwm = -1;
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &hwm) == 1)
            break;
    if (f)
        fclose(f);
    struct mallinfo2 m = mallinfo2();
    printf("cpu_s %.3f\nhwm_kb %ld\nheap_kb %zu\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, hwm,
           (m.uordblks + m.hblkhd) / 1024);
    return 0;
}

/* Sets up the loop `name` (sync, sN:kK:pP, reload:R); its runner in *run.
 * 0, 1 when it cannot be set up, 2 for an unknown name. */
static int extra_setup(const char *name, int (**run)(long))
{
    long every, k, params, r;
    char tail;
    if (strcmp(name, "sync") == 0) {
        *run = loop_sync;
        return 0;
    }
    if (strcmp(name, "cupy") == 0) {
        *run = loop_cupy;
        return cupy_load() || loop_cupy(CUPY_OPS);
    }
    if (strcmp(name, "adamw") == 0 || strcmp(name, "adamw:pool") == 0) {
        adam_pool = name[5] == ':';
        *run = loop_adamw;
        return adam_load() || loop_adamw(ADAM_EW + ADAM_MTA);
    }
    if (sscanf(name, "s%ld:k%ld:p%ld%c", &every, &k, &params, &tail) == 3) {
        *run = loop_synced;
        return synced_load(k, every, (int)params) || loop_synced(k); /* each kernel once first */
    }
    if (sscanf(name, "reload:%ld%c", &r, &tail) == 1) {
        *run = loop_synced;
        return reload_load(r) || loop_synced(MANY_PER_MOD);
    }
    return 2;
}

static int loop_launch(long n)
{
    for (long i = 0; i < n; i++)
        if (cuLaunchKernel(nop, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
            return 1;
    return 0;
}

static int loop_args8(long n)
{
    CUdeviceptr a = dbuf, b = dbuf, c = dbuf, d = dbuf;
    unsigned m = 1024, k = 64;
    float alpha = 1.5f;
    unsigned long long seed = 42;
    void *params[8] = {&a, &b, &c, &d, &m, &k, &alpha, &seed};
    for (long i = 0; i < n; i++) {
        if (cuLaunchKernel(nop8, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL) != CUDA_SUCCESS)
            return 1;
        if (i % 256 == 255 && cuCtxSynchronize() != CUDA_SUCCESS)
            return 1;
    }
    return 0;
}

static int loop_dtoh(long n)
{
    for (long i = 0; i < n; i++)
        if (cuMemcpyDtoH(hbuf, dbuf, sizeof hbuf) != CUDA_SUCCESS)
            return 1;
    return 0;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    const char *only = argc > 2 ? argv[2] : NULL;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    if (n <= 0 || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, &image) ||
        cuModuleGetFunction(&nop, mod, "nop") || cuModuleGetFunction(&nop8, mod, "nop8") ||
        cuMemAlloc(&dbuf, sizeof hbuf) || gpt_load()) {
        fprintf(stderr, "cpu_bench: setup failed\n");
        return 1;
    }
    if (only) {
        if (strncmp(only, "launch:", 7) == 0) {
            long k = atol(only + 7);
            if (many_load(k)) {
                fprintf(stderr, "cpu_bench: cannot load %ld kernels (1..%d)\n", k, MANY_MAX);
                return 2;
            }
            return loop_many(k, k) || loop_many(n, k); /* each kernel once first: a constant */
        }
        if (strcmp(only, "launch") == 0)
            return loop_launch(n);
        if (strcmp(only, "args8") == 0)
            return loop_args8(n);
        if (strcmp(only, "dtoh") == 0)
            return loop_dtoh(n);
        if (strcmp(only, "gpt2") == 0)
            return loop_gpt2(n);
        if (strcmp(only, "cycles") == 0)
            return reload_cycles(n);
        int (*run)(long) = NULL;
        int rc = extra_setup(only, &run);
        if (rc == 0)
            return run(n);
        if (rc == 1) {
            fprintf(stderr, "cpu_bench: cannot set up '%s'\n", only);
            return 2;
        }
        fprintf(stderr,
                "cpu_bench: unknown loop '%s' (launch, args8, dtoh, gpt2, launch:K, sync, "
                "sN:kK:pP, reload:R, adamw, adamw:pool, cupy)\n",
                only);
        return 2;
    }
    if (loop_launch(n / 10 + 1) || loop_args8(n / 10 + 1) || loop_dtoh(n / 10 + 1) ||
        loop_gpt2(n / 10 + 1))
        return 1;
    double t0 = now_ns();
    if (loop_launch(n))
        return 1;
    double t1 = now_ns();
    if (loop_args8(n))
        return 1;
    double t2 = now_ns();
    if (loop_dtoh(n))
        return 1;
    double t3 = now_ns();
    if (loop_gpt2(n))
        return 1;
    double t4 = now_ns();
    printf("launch %.2f\nargs8 %.2f\ndtoh %.2f\ngpt2 %.2f\n", (t1 - t0) / (double)n,
           (t2 - t1) / (double)n, (t3 - t2) / (double)n, (t4 - t3) / (double)n);
    const char *ks = getenv("CPU_BENCH_KERNELS");
    for (char *p = (char *)ks; p && *p;) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p)
            break;
        p = end;
        if (many_load(k) || loop_many(n / 10 + 1, k))
            return 1;
        double a = now_ns();
        if (loop_many(n, k))
            return 1;
        printf("launch:%ld %.2f\n", k, (now_ns() - a) / (double)n);
    }
    /* each of these in turn, one set up at a time (they share `synced`), over
     * a tenth of the calls: 15 of them, a sync after each launch in some, and
     * the fake driver's launch looks its handle up in a list (27,000
     * instructions a launch with 10,000 kernels): over N calls each, one
     * timing run took 8 minutes */
    const long xn = n / 10 + 1;
    const char *ls = getenv("CPU_BENCH_EXTRA_LOOPS");
    char name[64];
    for (const char *p = ls; p && *p;) {
        p += strspn(p, " ");
        size_t len = strcspn(p, " ");
        if (!len || len >= sizeof name)
            break;
        memcpy(name, p, len);
        name[len] = '\0';
        p += len;
        int (*run)(long) = NULL;
        free(synced);
        synced = NULL;
        if (extra_setup(name, &run) != 0 || run(xn / 10 + 1))
            return 1;
        double a = now_ns();
        if (run(xn))
            return 1;
        printf("%s %.2f\n", name, (now_ns() - a) / (double)xn);
    }
    return 0;
}
