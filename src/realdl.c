/*
 * The C library's own dlsym (see realdl.h).
 */
#define _GNU_SOURCE /* dlvsym, RTLD_NEXT */
#include "realdl.h"

#include <dlfcn.h>
#include <stddef.h>

static atl_dlsym_fn real_dlsym_ptr;

ATL_NO_SANITIZE atl_dlsym_fn atl_real_dlsym(void)
{
    atl_dlsym_fn f = __atomic_load_n(&real_dlsym_ptr, __ATOMIC_ACQUIRE);
    if (f)
        return f;
    /* dlvsym is not ours, so this cannot recurse. glibc 2.34 moved dlsym
     * into libc under a new version; older ones only have the first. */
    f = (atl_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f)
        f = (atl_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!f) {
        /* Loaded with dlopen rather than preloaded, libc comes before us and
         * RTLD_NEXT cannot see it: ask libc itself. */
        void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        if (libc) {
            f = (atl_dlsym_fn)dlvsym(libc, "dlsym", "GLIBC_2.34");
            if (!f)
                f = (atl_dlsym_fn)dlvsym(libc, "dlsym", "GLIBC_2.2.5");
        }
    }
    __atomic_store_n(&real_dlsym_ptr, f, __ATOMIC_RELEASE);
    return f;
}

void *atl_dlsym(void *handle, const char *name)
{
    atl_dlsym_fn f = atl_real_dlsym();
    return f ? f(handle, name) : NULL;
}
