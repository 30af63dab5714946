/*
 * Ways a program leaves:
 *   rel_exit leak     allocates, launches, copies; frees and destroys nothing;
 *                     returns 0 from main
 *   rel_exit _exit    the same work, then _exit(3): no atexit handlers run
 *   rel_exit thread   the main thread launches in a loop while a second thread
 *                     calls exit(5) in the middle of it
 * Prints "ok" (leak, thread) before leaving.
 */
#include "../fake/fakecuda.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static CUresult k_nop(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_SUCCESS;
}

static const struct fake_kernel_def kernels[] = {{"nop", k_nop, 0, NULL, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 1, kernels};

static CUfunction nop;

static void *exiter(void *arg)
{
    (void)arg;
    usleep(20000);
    printf("ok\n");
    fflush(stdout);
    exit(5);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "leak";
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUdeviceptr p;
    char buf[64] = "x";
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, &image) ||
        cuModuleGetFunction(&nop, mod, "nop") || cuMemAlloc(&p, sizeof buf) ||
        cuMemcpyHtoD(p, buf, sizeof buf) ||
        cuLaunchKernel(nop, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) ||
        cuMemcpyDtoH(buf, p, sizeof buf)) {
        fprintf(stderr, "rel_exit: setup failed\n");
        return 1;
    }
    if (strcmp(mode, "_exit") == 0) {
        fflush(stdout);
        _exit(3);
    }
    if (strcmp(mode, "thread") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, exiter, NULL);
        for (;;) {
            /* The results after exit() began are whatever the driver says
             * during teardown; only a crash or a hang would be wrong. */
            cuLaunchKernel(nop, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
            cuMemAlloc(&p, 64);
        }
    }
    printf("ok\n");
    return 0;
}
