/*
 * How calls reach the wrappers (measured on an H200): programs
 * linked against libcuda find our exported symbols first; cudart, PyTorch,
 * Triton, CuPy and JAX fetch driver functions with dlsym on a dlopen'ed
 * libcuda.so.1 and with cuGetProcAddress. So we override dlsym and wrap
 * cuGetProcAddress(_v2): both call the real resolver, then swap a returned
 * driver function for our wrapper of that exact variant, recognised by
 * pointer identity with the real symbol. Anything we do not hook is handed
 * back untouched.
 */
#define _GNU_SOURCE
#include "hooks.h"

#include "driver.h"
#include "realdl.h"
#include "stats.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* ---- pointer -> hook id ------------------------------------------------------ */

/* Open addressing, written once while binding, read without locks after. */
#define MAP_SLOTS 1024
static struct {
    void *key;
    int id;
} map[MAP_SLOTS];
static int bound; /* 1: bound to a driver, 2: no driver could be opened */

static size_t map_hash(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (MAP_SLOTS - 1);
}

static void map_put(void *key, int id)
{
    if (!key)
        return;
    for (size_t i = map_hash(key);; i = (i + 1) & (MAP_SLOTS - 1)) {
        if (map[i].key == key)
            return; /* aliases: the first (the real function's own id) wins */
        if (!map[i].key) {
            map[i].key = key;
            map[i].id = id;
            return;
        }
    }
}

static int map_get(const void *key)
{
    for (size_t i = map_hash(key);; i = (i + 1) & (MAP_SLOTS - 1)) {
        if (map[i].key == key)
            return map[i].id;
        if (!map[i].key)
            return -1;
    }
}

/* ---- binding to the real driver -------------------------------------------- */

static pthread_once_t bind_once = PTHREAD_ONCE_INIT;

static void bind_body(void)
{
    atl_engine_init();
    /* Every caller reaches us after the program loaded libcuda (it linked
     * it, or a dlsym/cuGetProcAddress answer came from it), so NOLOAD finds
     * it without side effects; a plain open is the fallback. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        __atomic_store_n(&bound, 2, __ATOMIC_RELEASE);
        return;
    }
    atl_dlsym_fn rd = atl_real_dlsym();
    void *real[ATL_ID_COUNT];
    for (int id = 0; id < ATL_ID_COUNT; id++) {
        real[id] = rd ? rd(h, atl_hook_names[id]) : NULL;
        /* A program that found our exported wrapper (RTLD_DEFAULT) must not
         * make us forward to ourselves. */
        if (real[id] == atl_wrappers[ATL_PATH_LINKED][id])
            real[id] = NULL;
        map_put(real[id], id);
    }
    for (int id = 0; id < ATL_ID_COUNT; id++)
        for (int p = 0; p < ATL_PATH_COUNT; p++)
            map_put(atl_wrappers[p][id], id);
    atl_driver_bind(h, rd);
    for (int id = 0; id < ATL_ID_COUNT; id++)
        __atomic_store_n(&atl_real_ptr[id], real[id], __ATOMIC_RELEASE);
    __atomic_store_n(&bound, 1, __ATOMIC_RELEASE);
}

int atl_bind_driver(void)
{
    pthread_once(&bind_once, bind_body);
    return __atomic_load_n(&bound, __ATOMIC_ACQUIRE) == 1;
}

/* Our wrapper for the function `p` on `path`, or NULL when `p` is not a
 * function we hook. */
static void *wrapper_for(void *p, int path)
{
    int id = map_get(p);
    if (id < 0 || !atl_real_ptr[id])
        return NULL;
    atl_note_resolved(id, path);
    return atl_wrappers[path][id];
}

void atl_gpa_swap(CUresult r, void **pfn)
{
    if (r != CUDA_SUCCESS || !pfn || !*pfn)
        return;
    void *w = wrapper_for(*pfn, ATL_PATH_GPA);
    if (w)
        *pfn = w;
}

/* Is `p` a libcuda function or one of our exported wrappers? Asked before
 * we bind, so that a dlsym of some other library's "cu..." symbol (cuBLAS,
 * cuDNN) never makes us open the driver. */
static int from_driver(void *p)
{
    for (int id = 0; id < ATL_ID_COUNT; id++)
        if (atl_wrappers[ATL_PATH_LINKED][id] == p)
            return 1;
    Dl_info info;
    if (!dladdr(p, &info) || !info.dli_fname)
        return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, "libcuda.so", 10) == 0;
}

/* Up to the "not a cu* name" return, no sanitizer instrumentation
 * (ATL_NO_SANITIZE, src/realdl.h). */
ATL_NO_SANITIZE __attribute__((visibility("default"))) void *dlsym(void *handle, const char *name)
{
    atl_dlsym_fn rd = atl_real_dlsym();
    if (!rd)
        return NULL;
    void *p = rd(handle, name);
    if (!p || name[0] != 'c' || name[1] != 'u')
        return p;
    int b = __atomic_load_n(&bound, __ATOMIC_ACQUIRE);
    if (b == 0) {
        if (!from_driver(p))
            return p;
        if (!atl_bind_driver())
            return p;
    } else if (b != 1) {
        return p;
    }
    void *w = wrapper_for(p, ATL_PATH_DLSYM);
    return w ? w : p;
}
