/*
 * What we know of each kernel handle: its name (from the lookup that
 * produced it, else cuFuncGetName/cuKernelGetName), and where it came from.
 * Handles are CUfunction or CUkernel values; a CUfunction obtained from a
 * CUkernel inherits the kernel's entry.
 */
#ifndef ATL_KERNELS_H
#define ATL_KERNELS_H

#include <cuda.h>
#include <stdint.h>

#include "events.h"

struct atl_kernel {
    void *handle;
    void *owner;       /* CUmodule or CUlibrary, when known */
    const char *name;  /* mangled, as the driver gives it (owned by the registry) */
    int is_kernel;     /* a CUkernel rather than a CUfunction */
    uint64_t launches; /* maintained by features that count them */
    uint64_t blocks;
};

/* Records a successful lookup (cuModuleGetFunction, cuLibraryGetKernel,
 * cuKernelGetFunction). */
void atl_kernels_note_lookup(const struct atl_lookup *l, CUresult r);

/* The mangled name of a kernel handle, or NULL when unknown. Asks the driver
 * once per unknown handle and remembers the answer. The string stays valid
 * for the life of the process. */
const char *atl_kernel_mangled(void *handle);

/* The name for people: demangled, or "kernel@0x..." as a last resort.
 * Writes into buf and returns it. */
const char *atl_kernel_name(void *handle, char *buf, unsigned len);

/* Calls fn for each known kernel (under the registry lock: fn must not call
 * back into the registry). */
void atl_kernels_each(void (*fn)(const struct atl_kernel *k, void *ctx), void *ctx);

/* A module or library is gone: forgets the handles it owned (and those whose
 * owner is unknown), so a new kernel the driver gives the same address is
 * named afresh, and counts the unload in atl_unload_gen. */
void atl_kernels_forget_owner(void *owner);
/* Counts successful module and library unloads: a cache keyed by kernel
 * handle checks an entry made before the latest unload before trusting it. */
extern unsigned long atl_unload_gen;

/* The rule both the registry and the flight recorder's table forget by: 1
 * when k goes with owner (it is owner's, or its owner is unknown: fetched by
 * name from the driver, it may be owner's, and asking again costs one call). */
static inline int atl_kernel_gone_with(const struct atl_kernel *k, const void *owner)
{
    return k->owner == owner || !k->owner;
}

/* Adds to the launch statistics of a handle. */
void atl_kernels_count_launch(void *handle, uint64_t blocks);

#endif
