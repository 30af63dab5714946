#include "gpa_resolve.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

int gpa_resolve(struct wl_api *api, cuuint64_t flags, int self)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
    if (!gpa) {
        fprintf(stderr, "no cuGetProcAddress_v2\n");
        return 1;
    }
    CUdriverProcAddressQueryResult st;
    if (self) {
        void *p = NULL;
        if (gpa("cuGetProcAddress", &p, 13000, flags, &st) != CUDA_SUCCESS || !p) {
            fprintf(stderr, "cuGetProcAddress(\"cuGetProcAddress\") failed\n");
            return 1;
        }
        gpa = (gpa_fn)p;
    }
    static const struct {
        const char *name;
        size_t off;
    } want[] = {
#define W(field, name) {name, offsetof(struct wl_api, field)},
        GPA_NAMES(W)
#undef W
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        void *p = NULL;
        CUresult r = gpa(want[i].name, &p, 13000, flags, &st);
        if (r != CUDA_SUCCESS || !p) {
            fprintf(stderr, "cuGetProcAddress(%s) failed: %d\n", want[i].name, (int)r);
            return 1;
        }
        *(void **)((char *)api + want[i].off) = p;
    }
    /* cuCtxSynchronize changed its signature in CUDA 13 under the same base
     * name: ask for the version whose signature the workload calls. */
    void *p = NULL;
    if (gpa("cuCtxSynchronize", &p, 12000, flags, &st) != CUDA_SUCCESS || !p) {
        fprintf(stderr, "cuGetProcAddress(cuCtxSynchronize, 12000) failed\n");
        return 1;
    }
    *(void **)&api->CtxSynchronize = p;
    return 0;
}
