/* Resolution as cudart, CuPy and JAX do it: dlopen libcuda, dlsym only
 * cuGetProcAddress_v2, then ask it for every base name. */
#ifndef GPA_RESOLVE_H
#define GPA_RESOLVE_H

#include "workload.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

/* The base names gpa_resolve asks cuGetProcAddress for, with the wl_api
 * field each fills (X(field, name)); cuCtxSynchronize is asked for apart,
 * at another version. */
#define GPA_NAMES(X)                                                                               \
    X(Init, "cuInit")                                                                              \
    X(DeviceGet, "cuDeviceGet")                                                                    \
    X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain")                                                \
    X(CtxSetCurrent, "cuCtxSetCurrent")                                                            \
    X(ModuleLoadData, "cuModuleLoadData")                                                          \
    X(ModuleGetFunction, "cuModuleGetFunction")                                                    \
    X(MemAlloc, "cuMemAlloc")                                                                      \
    X(MemFree, "cuMemFree")                                                                        \
    X(MemcpyHtoD, "cuMemcpyHtoD")                                                                  \
    X(MemcpyDtoH, "cuMemcpyDtoH")                                                                  \
    X(MemsetD32Async, "cuMemsetD32Async")                                                          \
    X(LaunchKernel, "cuLaunchKernel")                                                              \
    X(StreamSynchronize, "cuStreamSynchronize")

/* How many calls of the resolver gpa_resolve makes (each name, then
 * cuCtxSynchronize), besides the one for "cuGetProcAddress" itself. */
#define GPA_ONE(field, name) +1
#define GPA_CALLS (0 GPA_NAMES(GPA_ONE) + 1)

/* Fills *api through cuGetProcAddress_v2 with `flags`. With `self`, first
 * asks the resolver for "cuGetProcAddress" and uses the answer for the rest
 * (cudart does this; if we did not hand back our own resolver, everything
 * fetched afterwards would bypass us). Returns 0 on success. */
int gpa_resolve(struct wl_api *api, cuuint64_t flags, int self);

#endif
