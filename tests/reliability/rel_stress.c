/*
 * Stress target: THREADS threads x ITERS iterations, each iteration one
 * allocation, one host-to-device copy, one kernel launch, one device-to-host
 * copy and one free, all on the legacy default stream of one shared context;
 * every 256th iteration a stream sync (each starts a new epoch of the flight
 * recorder: every thread's next launch takes its cold path at once).
 *   rel_stress [threads] [iters]
 * Prints "fake: SYMBOL COUNT" for each hooked symbol the driver saw, then
 * "ok". Exactly, per run:
 *   cuMemAlloc_v2, cuMemcpyHtoD_v2, cuLaunchKernel, cuMemcpyDtoH_v2,
 *   cuMemFree_v2: threads * iters each.
 */
#include "../fake/fakecuda.h"
#include "../targets/workload.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUresult k_add(const struct fake_launch *l, void **params)
{
    unsigned *x = *(unsigned **)params[0];
    (void)l;
    x[0] += 1;
    return CUDA_SUCCESS;
}

static const size_t add_sizes[] = {8};
static const struct fake_kernel_def kernels[] = {{"add1", k_add, 1, add_sizes, NULL}};
static const struct fake_image image = {FAKE_IMAGE_MAGIC, 1, kernels};

static CUcontext ctx;
static CUfunction add1;
static long iters;
static pthread_barrier_t start;

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "rel_stress: %s failed: %d\n", #call, (int)r_);                        \
            return (void *)1;                                                                      \
        }                                                                                          \
    } while (0)

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(long)arg;
    CK(cuCtxSetCurrent(ctx));
    pthread_barrier_wait(&start);
    for (long i = 0; i < iters; i++) {
        CUdeviceptr p;
        unsigned v = seed + (unsigned)i, back = 0;
        /* sizes vary so allocations of all shapes interleave across threads */
        size_t bytes = 16 + (size_t)((seed * 131 + (unsigned)i * 17) % 4096);
        void *params[] = {&p};
        CK(cuMemAlloc(&p, bytes));
        CK(cuMemcpyHtoD(p, &v, sizeof v));
        CK(cuLaunchKernel(add1, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        CK(cuMemcpyDtoH(&back, p, sizeof back));
        CK(cuMemFree(p));
        if (i % 256 == 255)
            CK(cuStreamSynchronize(NULL));
        if (back != v + 1) {
            fprintf(stderr, "rel_stress: thread %u iteration %ld read %u, want %u\n", seed, i, back,
                    v + 1);
            return (void *)1;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 16;
    iters = argc > 2 ? atol(argv[2]) : 100000;
    if (threads < 1 || threads > 256 || iters < 0) {
        fprintf(stderr, "usage: rel_stress [threads 1..256] [iters]\n");
        return 2;
    }
    CUdevice dev;
    CUmodule mod;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, &image) ||
        cuModuleGetFunction(&add1, mod, "add1")) {
        fprintf(stderr, "rel_stress: setup failed\n");
        return 1;
    }
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    int bad = 0;
    for (int i = 0; i < threads; i++) {
        void *rv;
        pthread_join(t[i], &rv);
        bad |= rv != NULL;
    }
    pthread_barrier_destroy(&start);
    free(t);
    cuModuleUnload(mod);
    cuDevicePrimaryCtxRelease(dev);
    if (bad)
        return 1;
    wl_print_fake_counts();
    printf("ok\n");
    return 0;
}
