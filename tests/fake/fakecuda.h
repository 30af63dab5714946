/*
 * fakecuda.h: the test-control API of the fake CUDA driver
 * (build/fake/libcuda.so.1), and the format of its "module images".
 *
 * The fake is a host-only libcuda: device memory is host memory (every
 * CUdeviceptr is a host address, aligned to 256), kernels are host functions,
 * stream work runs at once on the calling thread, and asynchronous kernel
 * faults surface at the next synchronising call exactly as on a GPU. Work on
 * the legacy stream while a blocking stream of the context is being
 * captured invalidates that capture and fails with
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, as on a GPU. Tests of
 * the interposer run real, unmodified driver-API code against it.
 *
 * Kernels
 *   A kernel is a host function of type fake_kernel_fn. `params` is an array
 *   of pointers, one per parameter, to the argument bytes (the same shape as
 *   cuLaunchKernel's kernelParams, whichever way the launch passed them).
 *   Since device pointers are host pointers, a kernel reads and writes them
 *   directly, and may deliberately write past the end of a buffer (red-zone
 *   tests). A kernel that returns an error (CUDA_ERROR_ILLEGAL_ADDRESS, ...)
 *   models a device fault: the launch still returns CUDA_SUCCESS, the error is
 *   returned by the next synchronising call on that context, and the
 *   context-destroying ones (700, 702, 710, 714-719) then stay sticky.
 *
 * Module images
 *   cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary and
 *   cuLibraryLoadData take a pointer to a struct fake_image.
 *   cuModuleLoad and cuLibraryLoadFromFile take a name: first a name given to
 *   fake_register_image(), else a path to a shared object that exports a data
 *   symbol `const struct fake_image fake_image_of_module` (dlopen + dlsym).
 *   Anything else gives CUDA_ERROR_INVALID_IMAGE (or FILE_NOT_FOUND).
 *   The kernel handles of the last module or library unloaded go to the next
 *   one loaded with as many kernels: the same CUfunction values, now naming
 *   other kernels (a real driver may reuse the addresses too).
 *
 * Parameter layout (cuFuncGetParamInfo / cuKernelGetParamInfo, the `extra`
 * packed buffer, and the bytes copied at capture time)
 *   Parameters are laid out in order; each starts at its alignment:
 *   param_aligns[i] when the kernel gives param_aligns, else
 *   min(size rounded up to a power of two, 8). (So 1, 2, 4, 8-byte scalars
 *   align naturally, and structs align to 8; give param_aligns for a 16-byte
 *   float4 or a 64-aligned struct.)
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_IMAGE_MAGIC 0xFA4E1A6Eu

/* What a kernel sees of its launch. */
struct fake_launch {
    unsigned grid[3];
    unsigned block[3];
    unsigned shmem;
    CUstream stream;  /* as the caller passed it (may be NULL or CU_STREAM_*) */
    CUcontext ctx;    /* the context the launch runs in */
    const char *name; /* the kernel's name, as in its fake_kernel_def */
};

typedef CUresult (*fake_kernel_fn)(const struct fake_launch *l, void **params);

struct fake_kernel_def {
    const char *name;
    fake_kernel_fn fn;
    unsigned nparams;
    const size_t *param_sizes;  /* nparams entries */
    const size_t *param_aligns; /* optional: NULL = the default rule above */
};

struct fake_image {
    uint32_t magic; /* FAKE_IMAGE_MAGIC */
    unsigned nkernels;
    const struct fake_kernel_def *kernels;
};

/* Name an image so cuModuleLoad(name) / cuLibraryLoadFromFile(name) find it.
 * A later registration of the same name replaces the earlier one.
 * Returns CUDA_ERROR_INVALID_VALUE for a NULL name or a bad image. */
CUresult fake_register_image(const char *name, const struct fake_image *img);

/* The next call of exactly that exported symbol (e.g. "cuMemAlloc_v2",
 * "cuLaunchKernel_ptsz") returns err and does nothing. err == CUDA_SUCCESS
 * cancels a pending failure. Returns -1 for a symbol the fake does not
 * export, else 0. */
int fake_fail_next(const char *symbol, CUresult err);

/* How many times that exported symbol was called since the last reset
 * (each ABI variant counts under its own name; a call that failed by
 * fake_fail_next or deinitialisation counts too). 0 for unknown names. */
unsigned long fake_calls(const char *symbol);
void fake_reset_counts(void);

/* atlastrace's red-zone PTX (src/redzone_scan.cu) loads as a host twin of
 * its kernels (tests/fake/fake_redzone.c) unless FAKE_REFUSE_PTX=1 is set.
 * The zones the twin's queued check has read, over the process, and the
 * bytes it has filled (freed allocations poisoned for the quarantine). */
unsigned long fake_redzone_zones_checked(void);
unsigned long fake_redzone_bytes_filled(void);

/* Launches made with programmatic stream serialisation allowed (a
 * programmatic dependent launch, cuLaunchKernelEx), over the process. Such
 * a launch fails with CUDA_ERROR_NOT_SUPPORTED on a device of compute
 * capability under 9.0, as on a real one. */
unsigned long fake_programmatic_launches(void);

/* The device's compute capability major: 9 (an H100/H200), or
 * FAKE_CC_MAJOR from the environment. */
int fake_cc_major(void);

/* Device memory size: cuMemGetInfo_v2 / cuDeviceTotalMem_v2 report it, and a
 * device allocation that would take the used total past it fails with
 * CUDA_ERROR_OUT_OF_MEMORY. Default 80 GiB. */
void fake_set_total_mem(size_t bytes);

/* While on, every cu* call returns CUDA_ERROR_DEINITIALIZED, as the real
 * driver does once it is being torn down at exit. */
void fake_set_deinitialized(int on);

/* Live device + managed allocations (not pinned host memory). */
size_t fake_live_allocations(void);

/* Number of operations recorded in a graph (captured or replayed), or
 * (size_t)-1 for a bad handle. */
size_t fake_graph_num_ops(CUgraph g);

#ifdef __cplusplus
}
#endif

#endif /* FAKECUDA_H */
