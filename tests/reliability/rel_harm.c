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
 * Issue #28 (round two):
 *   rel_harm reload N         N times: load a module, look its kernel up,
 *                             launch it, unload it. Prints the CPU time of
 *                             cycles 1,000-5,999 and of the last 5,000
 *                             ("first_us", "last_us"), the heap in use after
 *                             each ("heap_first", "heap_last") and "ok"
 *   rel_harm longjmp [free]   (free: first allocates and frees a buffer, from
 *                             a few stack depths) a SIGUSR1 handler siglongjmps out of a
 *                             cuStreamSynchronize that blocks (the fake's
 *                             FAKE_SYNC_SLEEP_MS); then 10 launches, 10
 *                             syncs, 1.5 s of quiet, "ok"
 *   rel_harm cancel           a thread blocked in cuStreamSynchronize is
 *                             cancelled; then 2.5 s of quiet, "ok"
 *   rel_harm threads N        N threads, 50 at a time, each syncs once and
 *                             ends; then the main thread syncs (the one the
 *                             fake makes wait: FAKE_SYNC_SLEEP_AT=N+1), "ok"
 *   rel_harm fds HOW PATH     after the library started, HOW=log closes
 *                             descriptors 3-63, HOW=every closes them all and
 *                             makes every number but the last 16 the data
 *                             file, HOW=stderr closes 2; then opens PATH (the
 *                             program's data file), writes "data" lines to it
 *                             while it launches, and exits with it open
 *   rel_harm rawfork          launches, then syscall(SYS_fork): the child
 *                             (no atfork handler ran) exits through exit(0)
 *   rel_harm audit            loads a module, looks "narrow" up, launches it
 *                             7 times on a 2x3 grid, unloads the module and
 *                             exits (issue #27: the audit's counts)
 *   rel_harm unloaddiff N     N steps of one launch of "narrow" (argument
 *                             i * i at step i), each of a module loaded
 *                             for it and unloaded after its step ends (even
 *                             steps) or before it does (odd steps: the op
 *                             waits in its buffer for the sync); the
 *                             program's own allocations take the memory
 *                             freed meanwhile. Prints "ok"
 * Issue #48 (round three):
 *   rel_harm oom T N KIB      a device of 4 MiB; T threads, each N times
 *                             allocates KIB KiB and frees it (at most T
 *                             blocks live: they fit natively). Prints
 *                             "failed F of T*N"
 *   rel_harm dlopen LIB       dlopens LIB (the library itself, not preloaded), then
 *                             launches once and syncs. Prints "ok"
 *   rel_harm oomexact         allocates exactly the device's free memory,
 *                             writes its last byte, frees it. Prints
 *                             "status N"
 */
#define _GNU_SOURCE
#include "../fake/fakecuda.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
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

/* ---- issue #28: module reloads, control flow, descriptors, raw fork ---- */

static long cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

#define RELOAD_WARM 1000
#define RELOAD_WINDOW 5000

static int reload_loop(long n)
{
    setup();
    if (n < RELOAD_WARM + 2 * RELOAD_WINDOW)
        return 64;
    unsigned long long one = 7;
    void *params[] = {&one};
    long t0 = 0, t1 = 0, t2 = 0;
    size_t h1 = 0;
    for (long i = 0; i < n; i++) {
        if (i == RELOAD_WARM)
            t0 = cpu_us();
        if (i == RELOAD_WARM + RELOAD_WINDOW)
            t1 = cpu_us(), h1 = heap_in_use();
        if (i == n - RELOAD_WINDOW)
            t2 = cpu_us();
        CUmodule m;
        CUfunction f;
        CK(cuModuleLoadData(&m, &narrow_img));
        CK(cuModuleGetFunction(&f, m, "narrow"));
        CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        CK(cuModuleUnload(m));
    }
    long t3 = cpu_us();
    printf("first_us %ld\nlast_us %ld\nheap_first %zu\nheap_last %zu\nok\n", t1 - t0, t3 - t2, h1,
           heap_in_use());
    return 0;
}

static sigjmp_buf jumped;

static void on_usr1(int sig)
{
    (void)sig;
    siglongjmp(jumped, 1);
}

static void *poke_main(void *arg)
{
    (void)arg;
    usleep(200000);
    pthread_kill(main_thread, SIGUSR1);
    return NULL;
}

static void quiet(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0)
        ;
}

/* An allocation and its free, a few frames down (under red zones the free is held: the hook
 * answers it without the driver's call) */
static __attribute__((noinline)) void alloc_free_deep(int depth)
{
    volatile char pad[512];
    pad[0] = (char)depth;
    if (depth > 0) {
        alloc_free_deep(depth - 1);
        return;
    }
    CUdeviceptr d = 0;
    CK(cuMemAlloc(&d, 4096));
    CK(cuMemFree(d));
    (void)pad[0];
}

static int longjmp_out(int free_first)
{
    setup();
    if (free_first)
        for (int depth = 0; depth < 4; depth++)
            alloc_free_deep(depth);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    main_thread = pthread_self();
    pthread_t t;
    pthread_create(&t, NULL, poke_main, NULL);
    if (!sigsetjmp(jumped, 1)) {
        cuStreamSynchronize(NULL); /* the fake waits FAKE_SYNC_SLEEP_MS */
        printf("the sync returned\n");
    } else {
        printf("jumped out\n");
    }
    pthread_join(t, NULL);
    unsigned long x = 1;
    void *params[] = {&x};
    for (int i = 0; i < 10; i++) {
        CK(cuLaunchKernel(nop1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        CK(cuStreamSynchronize(NULL));
    }
    quiet(1500);
    printf("ok\n");
    return 0;
}

static void *blocked_in_sync(void *arg)
{
    (void)arg;
    cuStreamSynchronize(NULL); /* the fake waits FAKE_SYNC_SLEEP_MS: cancelled there */
    return NULL;
}

static int cancel_in_sync(void)
{
    setup();
    pthread_t t;
    void *ret = NULL;
    pthread_create(&t, NULL, blocked_in_sync, NULL);
    usleep(200000);
    pthread_cancel(t);
    pthread_join(t, &ret);
    printf("cancelled %d\n", ret == PTHREAD_CANCELED);
    quiet(2500);
    printf("ok\n");
    return 0;
}

static CUcontext the_ctx;

static void *sync_once(void *arg)
{
    (void)arg;
    cuCtxSetCurrent(the_ctx);
    CK(cuStreamSynchronize(NULL));
    return NULL;
}

static int many_threads(int n)
{
    setup();
    CK(cuCtxGetCurrent(&the_ctx));
    for (int done = 0; done < n;) {
        pthread_t t[50];
        int k = n - done < 50 ? n - done : 50;
        for (int i = 0; i < k; i++)
            pthread_create(&t[i], NULL, sync_once, NULL);
        for (int i = 0; i < k; i++)
            pthread_join(t[i], NULL);
        done += k;
    }
    CK(cuStreamSynchronize(NULL)); /* the fake makes this one wait */
    printf("ok\n");
    return 0;
}

static int fds(const char *how, const char *path)
{
    setup();
    unsigned long x = 1;
    void *params[] = {&x};
    CK(cuLaunchKernel(nop1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    struct rlimit rl;
    int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
    if (strcmp(how, "stderr") == 0) {
        close(2);
    } else {
        for (int fd = 3; fd < (strcmp(how, "every") == 0 ? top : 64); fd++)
            close(fd);
    }
    int d = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (d < 0)
        return 1;
    if (strcmp(how, "every") == 0)
        for (int fd = 3; fd < top - 16; fd++)
            if (fd != d)
                dup2(d, fd);
    for (int i = 0; i < 100; i++) {
        dprintf(d, "data %d\n", i);
        CK(cuLaunchKernel(nop1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        CK(cuCtxSynchronize());
    }
    printf("ok\n");
    fflush(stdout);
    exit(0); /* the file still open: the exit report comes after */
}

static int raw_fork(void)
{
    setup();
    unsigned long x = 1;
    void *params[] = {&x};
    for (int i = 0; i < 5; i++)
        CK(cuLaunchKernel(nop1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    fflush(stdout);
    long pid = syscall(SYS_fork);
    if (pid == 0)
        exit(0);
    int st = -1;
    waitpid((pid_t)pid, &st, 0);
    printf("child %d\nok\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}

static int audit_after_unload(void)
{
    setup();
    CUmodule m;
    CUfunction f;
    unsigned long long one = 7;
    void *params[] = {&one};
    CK(cuModuleLoadData(&m, &narrow_img));
    CK(cuModuleGetFunction(&f, m, "narrow"));
    for (int i = 0; i < 7; i++)
        CK(cuLaunchKernel(f, 2, 3, 1, 1, 1, 1, 0, NULL, params, NULL));
    CK(cuModuleUnload(m));
    printf("ok\n");
    return 0;
}

/* ---- steps diffed across module unloads (the step trace's kept steps) ---- */

static int unload_diff(int n)
{
    setup();
    unsigned long long v = 0;
    void *params[] = {&v};
    /* what the program allocates between steps: blocks of the sizes the
     * library frees at an unload, filled, so memory freed too early is
     * written over before the next step end reads it */
    static void *junk[64];
    for (int i = 0; i < n; i++) {
        CUmodule m;
        CUfunction f;
        CK(cuModuleLoadData(&m, &narrow_img));
        CK(cuModuleGetFunction(&f, m, "narrow"));
        v = (unsigned long long)i * (unsigned long long)i;
        CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        if (i % 2) {
            CK(cuModuleUnload(m)); /* the launch's op still in its buffer */
            CK(cuCtxSynchronize());
        } else {
            CK(cuCtxSynchronize());
            CK(cuModuleUnload(m));
        }
        for (int j = 0; j < 64; j++) {
            free(junk[j]);
            size_t size = 16 + 16 * (size_t)(j % 32);
            junk[j] = malloc(size);
            if (junk[j])
                memset(junk[j], 0xff, size);
        }
    }
    for (int j = 0; j < 64; j++)
        free(junk[j]);
    printf("ok\n");
    return 0;
}

struct oom_arg {
    CUcontext ctx;
    int n;
    size_t bytes;
    int failed;
};

static void *oom_thread(void *p)
{
    struct oom_arg *a = p;
    cuCtxSetCurrent(a->ctx);
    for (int i = 0; i < a->n; i++) {
        CUdeviceptr d = 0;
        if (cuMemAlloc(&d, a->bytes) != CUDA_SUCCESS) {
            a->failed++;
            continue;
        }
        ((volatile char *)d)[a->bytes - 1] = 1; /* the fake's device memory is the host's */
        cuMemFree(d);
    }
    return NULL;
}

static int oom_threads(int t, int n, size_t kib)
{
    setup();
    CUcontext ctx;
    CK(cuCtxGetCurrent(&ctx));
    fake_set_total_mem((size_t)4 << 20);
    if (t < 1 || t > 64)
        return 64;
    pthread_t th[64];
    struct oom_arg arg[64];
    for (int i = 0; i < t; i++) {
        arg[i] = (struct oom_arg){.ctx = ctx, .n = n, .bytes = kib << 10};
        pthread_create(&th[i], NULL, oom_thread, &arg[i]);
    }
    int failed = 0;
    for (int i = 0; i < t; i++) {
        pthread_join(th[i], NULL);
        failed += arg[i].failed;
    }
    printf("failed %d of %d\n", failed, t * n);
    return 0;
}

static int oom_exact(void)
{
    setup();
    fake_set_total_mem((size_t)4 << 20);
    size_t freeb = 0, total = 0;
    CK(cuMemGetInfo(&freeb, &total));
    CUdeviceptr d = 0;
    CUresult r = cuMemAlloc(&d, freeb);
    if (r == CUDA_SUCCESS) {
        ((volatile char *)d)[freeb - 1] = 1;
        CK(cuMemFree(d));
    }
    printf("status %d\n", (int)r);
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
    if (strcmp(mode, "reload") == 0 && argc > 2)
        return reload_loop(atol(argv[2]));
    if (strcmp(mode, "longjmp") == 0)
        return longjmp_out(argc > 2 && strcmp(argv[2], "free") == 0);
    if (strcmp(mode, "cancel") == 0)
        return cancel_in_sync();
    if (strcmp(mode, "threads") == 0 && argc > 2)
        return many_threads(atoi(argv[2]));
    if (strcmp(mode, "fds") == 0 && argc > 3)
        return fds(argv[2], argv[3]);
    if (strcmp(mode, "rawfork") == 0)
        return raw_fork();
    if (strcmp(mode, "audit") == 0)
        return audit_after_unload();
    if (strcmp(mode, "unloaddiff") == 0 && argc > 2)
        return unload_diff(atoi(argv[2]));
    if (strcmp(mode, "oom") == 0 && argc > 4)
        return oom_threads(atoi(argv[2]), atoi(argv[3]), (size_t)atol(argv[4]));
    if (strcmp(mode, "oomexact") == 0)
        return oom_exact();
    if (strcmp(mode, "dlopen") == 0 && argc > 2) {
        if (!dlopen(argv[2], RTLD_NOW)) {
            fprintf(stderr, "rel_harm: %s\n", dlerror());
            return 1;
        }
        setup();
        unsigned long x = 1;
        void *params[] = {&x};
        CK(cuLaunchKernel(nop1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        CK(cuCtxSynchronize());
        printf("ok\n");
        return 0;
    }
    fprintf(stderr, "usage: rel_harm sigint|unload|dlclose|poll|oneshot|setenv|reload|longjmp|"
                    "cancel|threads|fds|rawfork|audit|unloaddiff|oom|oomexact ...\n");
    return 64;
}
