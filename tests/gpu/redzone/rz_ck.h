// What the red-zone GPU test programs share: a runtime call that must
// succeed, or main returns 1 with the error's text.
#ifndef RZ_CK_H
#define RZ_CK_H

#include <cstdio>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                            \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#endif
