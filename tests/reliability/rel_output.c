/*
 * A target for the output-file tests (test_output.c): what a program does
 * that breaks report files. One mode per run:
 *   fork N      a thread runs steps of 200 launches each while the main
 *               thread forks N children that exit() at once (they inherit
 *               whatever the trace file's buffer held at the fork)
 *   exec        one step, then this program again ("child") with the same
 *               environment, waited for, then one more step
 *   child       one step (the exec'd child of "exec")
 *   steps N     N steps of 50 launches each
 *   killed MS   steps of 2000 launches until a thread kills the process
 *               with SIGKILL after MS milliseconds (mid-step, most often)
 *   names       looks up and launches a kernel whose name holds a newline
 *               and an escape byte
 *   allocfail N N allocations the fake refuses, with 6 live ones
 * Prints "ok" and exits 0 when every driver call did what it should.
 */
#include "../fake/fakecuda.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static CUresult k_nop(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_SUCCESS;
}

static const size_t one_int[] = {4};
static const struct fake_kernel_def kernels[] = {
    {"nop", k_nop, 1, one_int, NULL},
    {"bad\nname\x1b[31m", k_nop, 1, one_int, NULL},
};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 2, kernels};

static CUcontext ctx;
static CUfunction nop;

static int step(int launches)
{
    for (int i = 0; i < launches; i++) {
        int x = i;
        void *args[] = {&x};
        if (cuLaunchKernel(nop, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS)
            return 1;
    }
    return cuCtxSynchronize() != CUDA_SUCCESS;
}

static volatile int stop;

static void *stepper(void *arg)
{
    (void)arg;
    cuCtxSetCurrent(ctx);
    while (!stop)
        if (step(200))
            return (void *)1;
    return NULL;
}

static int run_fork(int n)
{
    pthread_t t;
    pthread_create(&t, NULL, stepper, NULL);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        usleep(300 + 211 * i % 500);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            exit(0);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            bad = 1;
    }
    stop = 1;
    void *rv;
    pthread_join(t, &rv);
    return bad || rv;
}

static void *killer(void *arg)
{
    usleep((useconds_t)(long)arg * 1000);
    kill(getpid(), SIGKILL);
    return NULL;
}

static int run_killed(int ms)
{
    pthread_t t;
    pthread_create(&t, NULL, killer, (void *)(long)ms);
    for (;;)
        if (step(2000))
            return 1;
}

static int run_exec(const char *self)
{
    if (step(20))
        return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "child", (char *)NULL);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
        return 1;
    return step(20);
}

static int run_names(void)
{
    CUmodule mod;
    CUfunction f;
    if (cuModuleLoadData(&mod, &image) || cuModuleGetFunction(&f, mod, kernels[1].name))
        return 1;
    int x = 1;
    void *args[] = {&x};
    for (int i = 0; i < 2; i++) {
        x = i;
        if (cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) || cuCtxSynchronize())
            return 1;
    }
    return 0;
}

static int run_allocfail(int n)
{
    CUdeviceptr live[6], p;
    for (int i = 0; i < 6; i++)
        if (cuMemAlloc(&live[i], 4096u << i))
            return 1;
    for (int i = 0; i < n; i++)
        if (cuMemAlloc(&p, (size_t)1 << 60) != CUDA_ERROR_OUT_OF_MEMORY)
            return 1;
    for (int i = 0; i < 6; i++)
        if (cuMemFree(live[i]))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod;
    if (argc < 2 || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, &image) ||
        cuModuleGetFunction(&nop, mod, "nop")) {
        fprintf(stderr, "rel_output: setup failed\n");
        return 1;
    }
    int n = argc > 2 ? atoi(argv[2]) : 0;
    int bad;
    if (strcmp(argv[1], "fork") == 0)
        bad = run_fork(n);
    else if (strcmp(argv[1], "exec") == 0)
        bad = run_exec(argv[0]);
    else if (strcmp(argv[1], "child") == 0)
        bad = step(20);
    else if (strcmp(argv[1], "steps") == 0)
        for (int i = bad = 0; i < n && !bad; i++)
            bad = step(50);
    else if (strcmp(argv[1], "killed") == 0)
        bad = run_killed(n);
    else if (strcmp(argv[1], "names") == 0)
        bad = run_names();
    else if (strcmp(argv[1], "allocfail") == 0)
        bad = run_allocfail(n);
    else
        bad = 1;
    if (bad) {
        fprintf(stderr, "rel_output: %s failed\n", argv[1]);
        return 1;
    }
    printf("ok\n");
    return 0;
}
