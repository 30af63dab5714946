/*
 * Target for the two-rank test (tests/integration/test_chrome.c): one SPMD
 * "script" run as two processes with RANK=0 and RANK=1. Four steps, each a
 * fill and an add_step, ended by a stream synchronisation. With argv[1] =
 * "diverge", rank 1 takes another branch in the second step and launches
 * one extra kernel (scale) between the two: the op a collective would wait
 * on in a real program. With "same", every rank enqueues the same ops. With
 * "hang", it enqueues one more op after the second step and waits for ever
 * (the test kills it). With "loss", each step ends by reading a value back
 * with cuMemcpyDtoH (a training loop's loss.item()) instead of a stream sync.
 */
#include "../fake/fakecuda.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "ranks: %s failed: %d\n", #call, (int)r_);                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUresult k_noop(const struct fake_launch *l, void **p)
{
    (void)l, (void)p;
    return CUDA_SUCCESS;
}

static const size_t sz_ptr_int[] = {8, 4};
static const size_t sz_one[] = {8};
static const struct fake_kernel_def kernels[] = {
    {"_Z8add_stepPfi", k_noop, 2, sz_ptr_int, NULL},
    {"_Z4fillPf", k_noop, 1, sz_one, NULL},
    {"_Z5scalePfi", k_noop, 2, sz_ptr_int, NULL},
};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 3, kernels};

int main(int argc, char **argv)
{
    int diverge = argc > 1 && strcmp(argv[1], "diverge") == 0;
    int hang = argc > 1 && strcmp(argv[1], "hang") == 0; /* stops after two steps */
    int loss = argc > 1 && strcmp(argv[1], "loss") == 0;
    const char *rank_env = getenv("RANK");
    int rank = rank_env ? atoi(rank_env) : 0;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f_add, f_fill, f_scale;
    CUdeviceptr buf;
    CUstream stream;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, &image));
    CHECK(cuModuleGetFunction(&f_add, mod, "_Z8add_stepPfi"));
    CHECK(cuModuleGetFunction(&f_fill, mod, "_Z4fillPf"));
    CHECK(cuModuleGetFunction(&f_scale, mod, "_Z5scalePfi"));
    CHECK(cuMemAlloc(&buf, 4096));
    CHECK(cuStreamCreate(&stream, 0));
    CHECK(cuCtxSynchronize()); /* setup ends here (an empty step) */

    for (int i = 0; i < 4; i++) {
        int v = 100 + i, two = 2;
        void *kfill[] = {&buf};
        void *kadd[] = {&buf, &v};
        void *kscale[] = {&buf, &two};
        CHECK(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, stream, kfill, NULL));
        if (diverge && rank == 1 && i == 1) /* the branch only rank 1 takes */
            CHECK(cuLaunchKernel(f_scale, 1, 1, 1, 32, 1, 1, 0, stream, kscale, NULL));
        CHECK(cuLaunchKernel(f_add, 4, 1, 1, 32, 1, 1, 0, stream, kadd, NULL));
        if (loss) {
            float h;
            CHECK(cuMemcpyDtoH(&h, buf, sizeof h));
        } else {
            CHECK(cuStreamSynchronize(stream));
        }
        if (hang && i == 1) {
            CHECK(cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, stream, kfill, NULL));
            for (;;) /* a collective that never returns: the test kills us */
                pause();
        }
    }
    printf("ok rank=%d\n", rank);
    return 0;
}
