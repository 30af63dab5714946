/*
 * Programs that the preload once harmed (issue #13), each in one mode:
 *   rel_harm sigint trace     SIGINT (sent by a second thread after a few ms)
 *                             runs a handler that calls exit(3) while the
 *                             main thread launches and copies in a loop
 *   rel_harm sigint redzone   the same with allocations, launches, context
 *                             syncs and frees in the loop
 *   rel_harm sigint redzone-bg the loop of launches on a second thread, while
 *                             the main thread, which the handler runs on,
 *                             makes no driver call
 *   rel_harm unload [N]       N times: load a module with a 64-parameter
 *                             kernel, launch it, unload it; then the same with
 *                             a 1-parameter kernel, whose parameter array ends
 *                             right before an unmapped page (reading a second
 *                             entry faults). Prints "ok"
 *   rel_harm dlclose LIB      threads launch through LIB (dlopened), then LIB
 *                             is dlclosed and the threads exit. Prints "ok"
 *   rel_harm poll N MB        N launches of a kernel with 4 KiB of parameters
 *                             polling cuStreamQuery, never synchronising; then
 *                             malloc(MB MiB) and touch it. Prints "ok" and the
 *                             peak resident size ("hwm_kb N")
 *   rel_harm oneshot sync|dtoh a kernel fails with a one-shot (not sticky)
 *                             error; the program frees a buffer, then calls
 *                             cuCtxSynchronize (sync) or cuMemcpyDtoH (dtoh)
 *                             and prints "status N" of that call, then the
 *                             status of a second one
 */
#define _GNU_SOURCE
#include "../fake/fakecuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static CUresult k_nop(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_SUCCESS;
}

static CUresult k_fail(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_ERROR_UNKNOWN; /* not context-destroying: reported once */
}

static const size_t one8[] = {8}, big[] = {4096};
static size_t wide_sizes[64];
static struct fake_kernel_def wide_def[] = {{"wide", k_nop, 64, wide_sizes, NULL}};
static const struct fake_kernel_def narrow_def[] = {{"narrow", k_nop, 1, one8, NULL}};
static const struct fake_kernel_def kernels[] = {
    {"nop1", k_nop, 1, one8, NULL}, {"big", k_nop, 1, big, NULL}, {"fail", k_fail, 0, NULL, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 3, kernels};
static const struct fake_image wide_img = {FAKE_IMAGE_MAGIC, 1, wide_def};
static const struct fake_image narrow_img = {FAKE_IMAGE_MAGIC, 1, narrow_def};

static CUfunction nop1, bigk, failk;

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "rel_harm: %s failed: %d\n", #call, (int)r_);                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void setup(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, &image));
    CK(cuModuleGetFunction(&nop1, mod, "nop1"));
    CK(cuModuleGetFunction(&bigk, mod, "big"));
    CK(cuModuleGetFunction(&failk, mod, "fail"));
}

/* ---- exit from a signal handler ---- */

static void on_sigint(int sig)
{
    (void)sig;
    exit(3);
}

static pthread_t main_thread;

static void *interrupter(void *arg)
{
    (void)arg;
    usleep(30000);
    pthread_kill(main_thread, SIGINT);
    return NULL;
}

static CUcontext bg_ctx;
static void *bg_launcher(void *arg)
{
    (void)arg;
    cuCtxSetCurrent(bg_ctx);
    for (unsigned long i = 0;; i++) {
        void *params[] = {&i};
        cuLaunchKernel(nop1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    }
    return NULL;
}

static int sigint_loop(const char *what)
{
    setup();
    signal(SIGINT, on_sigint);
    main_thread = pthread_self();
    pthread_t t;
    pthread_create(&t, NULL, interrupter, NULL);
    CUdeviceptr p;
    CK(cuMemAlloc(&p, 64));
    if (strcmp(what, "redzone-bg") == 0) {
        pthread_t bg;
        CK(cuCtxGetCurrent(&bg_ctx));
        pthread_create(&bg, NULL, bg_launcher, NULL);
        for (volatile unsigned long spin = 0;; spin++)
            ;
    }
    for (unsigned long i = 0;; i++) {
        void *params[] = {&i};
        if (strcmp(what, "redzone") == 0) {
            CUdeviceptr q;
            cuMemAlloc(&q, 64 + i % 64);
            cuLaunchKernel(nop1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
            cuCtxSynchronize();
            cuMemFree(q);
        } else {
            /* a different argument every step: each step end diffs */
            cuLaunchKernel(nop1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
            unsigned long back;
            cuMemcpyDtoH(&back, p, sizeof back);
        }
    }
}

/* ---- module unload, and a new kernel at the old handle's address ---- */

static int unload_loop(int n)
{
    setup();
    for (int i = 0; i < 64; i++)
        wide_sizes[i] = 8;
    /* one parameter pointer at the very end of a page; the next is unmapped */
    long pg = sysconf(_SC_PAGESIZE);
    char *area =
        mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED || mprotect(area + pg, (size_t)pg, PROT_NONE) != 0)
        return 1;
    void **narrow_params = (void **)(area + pg - sizeof(void *));
    unsigned long long vals[64] = {0}, one = 7;
    void *wide_params[64];
    for (int i = 0; i < 64; i++)
        wide_params[i] = &vals[i];
    narrow_params[0] = &one;
    CUdeviceptr p;
    CK(cuMemAlloc(&p, 64));
    int reused = 0;
    void *last_wide = NULL;
    for (int i = 0; i < n; i++) {
        CUmodule m;
        CUfunction f;
        CK(cuModuleLoadData(&m, &wide_img));
        CK(cuModuleGetFunction(&f, m, "wide"));
        last_wide = f;
        CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, wide_params, NULL));
        CK(cuCtxSynchronize());
        CK(cuModuleUnload(m));
        CK(cuModuleLoadData(&m, &narrow_img));
        CK(cuModuleGetFunction(&f, m, "narrow"));
        reused += (void *)f == last_wide;
        CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, narrow_params, NULL));
        CK(cuCtxSynchronize());
        CK(cuModuleUnload(m));
    }
    /* the driver handed out the old address again (the case that crashed) */
    printf("reused %d\nok\n", reused);
    return 0;
}

/* ---- the library dlopened and dlclosed ---- */

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
static launch_fn dl_launch;
static pthread_barrier_t used, closed;

/* Launches through the library (so its per-thread state exists), waits
 * until the library is gone, then exits: its thread-specific data is
 * destroyed after the dlclose. */
static void *user_thread(void *arg)
{
    unsigned long x = 0;
    void *params[] = {&x};
    dl_launch(nop1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    pthread_barrier_wait(&used);
    pthread_barrier_wait(&closed);
    return arg;
}

static int dlclose_then_threads(const char *lib)
{
    enum { N = 4 };
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "rel_harm: dlopen: %s\n", dlerror());
        return 1;
    }
    dl_launch = (launch_fn)dlsym(h, "cuLaunchKernel");
    if (!dl_launch)
        return 1;
    setup();
    pthread_barrier_init(&used, NULL, N + 1);
    pthread_barrier_init(&closed, NULL, N + 1);
    pthread_t t[N];
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, user_thread, NULL);
    pthread_barrier_wait(&used);
    dlclose(h);
    pthread_barrier_wait(&closed);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    printf("ok\n");
    return 0;
}

/* ---- a program that never synchronises ---- */

static long hwm_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

static int poll_loop(long n, long mb)
{
    setup();
    static unsigned char arg[4096];
    void *params[] = {arg};
    for (long i = 0; i < n; i++) {
        memcpy(arg, &i, sizeof i); /* every launch's bytes differ */
        CK(cuLaunchKernel(bigk, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        CUresult q = cuStreamQuery(NULL);
        if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY)
            return 1;
    }
    size_t sz = (size_t)mb << 20;
    char *mine = malloc(sz);
    if (!mine) {
        printf("malloc of %ld MiB failed\n", mb);
        return 2;
    }
    memset(mine, 1, sz);
    /* read back, so the compiler keeps the memory */
    printf("ok %d\nhwm_kb %ld\n", mine[sz - 1] + mine[sz / 2], hwm_kb());
    free(mine);
    return 0;
}

/* ---- a one-shot error the program must see ---- */

static int oneshot(const char *how)
{
    setup();
    CUdeviceptr p, q;
    unsigned long back;
    CK(cuMemAlloc(&p, 64));
    CK(cuMemAlloc(&q, 64));
    CK(cuLaunchKernel(failk, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    /* the program does other work before it looks: the library may check
     * its red zones here */
    CK(cuMemFree(q));
    CUresult a, b;
    if (strcmp(how, "dtoh") == 0) {
        a = cuMemcpyDtoH(&back, p, sizeof back);
        b = cuMemcpyDtoH(&back, p, sizeof back);
    } else {
        a = cuCtxSynchronize();
        b = cuCtxSynchronize();
    }
    printf("status %d\nstatus %d\n", (int)a, (int)b);
    return 0;
}

/* "setenv": the program sets a variable of its own after the library's
 * constructors edited `environ` (under ATLAS_REDZONE they route the
 * framework pools); the C library then copies the array. Under the ASan
 * build's leak checker, what the library made must not be counted lost. */
static int set_own_env(void)
{
    if (setenv("REL_HARM_OWN", "1", 1) != 0)
        return 1;
    printf("%s\n", getenv("PYTORCH_CUDA_ALLOC_CONF") ? getenv("PYTORCH_CUDA_ALLOC_CONF") : "-");
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "sigint") == 0 && argc > 2)
        return sigint_loop(argv[2]);
    if (strcmp(mode, "unload") == 0)
        return unload_loop(argc > 2 ? atoi(argv[2]) : 2000);
    if (strcmp(mode, "dlclose") == 0 && argc > 2)
        return dlclose_then_threads(argv[2]);
    if (strcmp(mode, "poll") == 0 && argc > 3)
        return poll_loop(atol(argv[2]), atol(argv[3]));
    if (strcmp(mode, "oneshot") == 0 && argc > 2)
        return oneshot(argv[2]);
    if (strcmp(mode, "setenv") == 0)
        return set_own_env();
    fprintf(stderr, "usage: rel_harm sigint|unload|dlclose|poll|oneshot|setenv ...\n");
    return 64;
}
