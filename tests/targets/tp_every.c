/* Target: every hooked symbol, called once through dlsym with all-zero
 * arguments (none of them takes a floating-point argument, so on x86-64 a
 * call through a pointer of twelve integer parameters passes zeros in each
 * one's place). The fake driver answers most with an error and counts each
 * call under the exact symbol it received, so the harness can check that
 * every wrapper reached its own variant and returned the driver's answer. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef CUresult (*any_fn)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t,
                           uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

static const char *const names[] = {
#define ATL_HOOK(sym, kind, flags) #sym,
#include "../../hooks/hooks.def"
#undef ATL_HOOK
};

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        return 1;
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*setcur)(CUcontext) = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
    CUcontext ctx;
    if (init(0) || retain(&ctx, 0) || setcur(ctx))
        return 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        any_fn f = (any_fn)dlsym(h, names[i]);
        if (!f) {
            printf("%s missing\n", names[i]);
            continue;
        }
        /* the resolvers with a NULL name would fault in the real driver too:
         * give them a name that does not exist */
        uintptr_t a0 = 0;
        if (names[i][2] == 'G' && names[i][3] == 'e' && names[i][5] == 'P')
            a0 = (uintptr_t) "cuNoSuchFunction";
        CUresult r = f(a0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        printf("%s -> %d\n", names[i], (int)r);
    }
    unsigned long (*calls)(const char *) = (unsigned long (*)(const char *))dlsym(h, "fake_calls");
    for (size_t i = 0; calls && i < sizeof names / sizeof names[0]; i++)
        printf("fake: %s %lu\n", names[i], calls(names[i]));
    return 0;
}
