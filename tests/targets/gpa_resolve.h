/* Resolution as cudart, CuPy and JAX do it: dlopen libcuda, dlsym only
 * cuGetProcAddress_v2, then ask it for every base name. */
#ifndef GPA_RESOLVE_H
#define GPA_RESOLVE_H

#include "workload.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

/* Fills *api through cuGetProcAddress_v2 with `flags`. With `self`, first
 * asks the resolver for "cuGetProcAddress" and uses the answer for the rest
 * (cudart does this; if we did not hand back our own resolver, everything
 * fetched afterwards would bypass us). Returns 0 on success. */
int gpa_resolve(struct wl_api *api, cuuint64_t flags, int self);

#endif
