/*
 * fake_launch.c: kernel launches.
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

/* ------------------------------------------------------------------------ */
/* Launches                                                                  */
/* ------------------------------------------------------------------------ */

#define FAKE_MAX_PARAMS 512

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **kernelParams,
                       void **extra)
{
    TRY(stream_usable(s));
    LOCK();
    struct fake_fn *fn = fn_from_handle_locked(f);
    UNLOCK();
    if (!fn)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || bx > 1024 ||
        by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (shmem > 232448)
        return CUDA_ERROR_INVALID_VALUE;
    const struct fake_kernel_def *k = fn->def;
    if ((kernelParams && extra) || k->nparams > FAKE_MAX_PARAMS)
        return CUDA_ERROR_INVALID_VALUE;
    void *ptrs[FAKE_MAX_PARAMS];
    if (extra) {
        unsigned char *buf = NULL;
        size_t *sizep = NULL;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                sizep = extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (k->nparams && (!buf || !sizep || *sizep < fn->argbytes))
            return CUDA_ERROR_INVALID_VALUE;
        for (unsigned i = 0; i < k->nparams; i++)
            ptrs[i] = buf + fn->offsets[i];
    } else if (kernelParams) {
        for (unsigned i = 0; i < k->nparams; i++)
            ptrs[i] = kernelParams[i];
    } else if (k->nparams) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct op o = {.kind = OP_KERNEL,
                   .fn = fn,
                   .launch = {.grid = {gx, gy, gz},
                              .block = {bx, by, bz},
                              .shmem = shmem,
                              .stream = s,
                              .name = k->name}};
    return stream_submit(s, &o, ptrs);
}

CUresult cuLaunchKernel_impl(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, kernelParams, extra);
}

static _Atomic unsigned long programmatic;

unsigned long fake_programmatic_launches(void)
{
    return atomic_load(&programmatic);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra)
{
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *a = &config->attrs[i];
        if (a->id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            continue;
        /* like the driver: only devices of compute capability 9.0 and up */
        if (fake_cc_major() < 9)
            return CUDA_ERROR_NOT_SUPPORTED;
        if (a->value.programmaticStreamSerializationAllowed)
            atomic_fetch_add(&programmatic, 1);
    }
    return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                  config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
                  kernelParams, extra);
}

CUresult cuLaunchKernelEx_impl(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                               void **extra)
{
    return launch_ex(config, f, kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel_impl(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX,
                                        unsigned int blockDimY, unsigned int blockDimZ,
                                        unsigned int sharedMemBytes, CUstream hStream,
                                        void **kernelParams)
{
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, kernelParams, NULL);
}
