/*
 * Fork while another thread is inside a hook. A spinner thread launches a
 * kernel that busy-waits, so it spends nearly all its time between our
 * pre and post events; the main thread forks FORKS times meanwhile. Each
 * child calls hooked functions (cuGetProcAddress_v2, which the fake answers
 * without taking its own lock, so a lock the spinner held at the fork
 * cannot hang the child in the fake) and exits through exit(), running the
 * atexit handlers: it must neither hang nor print the parent's report.
 * Prints the fake's counts and "ok"; exits non-zero if a child failed.
 */
#include "../fake/fakecuda.h"
#include "../targets/workload.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKS 20

static CUresult k_spin(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 200000);
    return CUDA_SUCCESS;
}

static const struct fake_kernel_def kernels[] = {{"spin", k_spin, 0, NULL, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 1, kernels};

static CUcontext ctx;
static CUfunction spin;
static volatile int stop;
static long launches;

static void *spinner(void *arg)
{
    (void)arg;
    cuCtxSetCurrent(ctx);
    while (!stop) {
        if (cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
            return (void *)1;
        launches++;
    }
    return NULL;
}

int main(void)
{
    CUdevice dev;
    CUmodule mod;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, &image) ||
        cuModuleGetFunction(&spin, mod, "spin")) {
        fprintf(stderr, "rel_fork: setup failed\n");
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, spinner, NULL);
    int bad = 0;
    for (int i = 0; i < FORKS; i++) {
        usleep(1000 + 537 * i % 700);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            void *fn = NULL;
            CUdriverProcAddressQueryResult q;
            for (int k = 0; k < 3; k++)
                if (cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &q) != CUDA_SUCCESS || !fn)
                    _exit(3);
            exit(0);
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "rel_fork: child %d failed (status %#x)\n", i, st);
            bad = 1;
        }
    }
    stop = 1;
    void *rv;
    pthread_join(t, &rv);
    if (bad || rv)
        return 1;
    printf("launches %ld\n", launches);
    wl_print_fake_counts();
    printf("ok\n");
    return 0;
}
