/*
 * The kernel parameter layout check: what the kernel really takes, per the driver, cached per
 * function so a launch pays for the driver queries once.
 */
#include "launch/internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Parameter info arrived in driver 12.4 and kernel names in 12.3. Weak references: on an older
 * driver they are NULL and the check says it is unavailable, instead of the program failing to
 * load or dying on its first launch with an unresolved symbol. */
extern __typeof__(cuFuncGetParamInfo) cuFuncGetParamInfo __attribute__((weak));
extern __typeof__(cuKernelGetParamInfo) cuKernelGetParamInfo __attribute__((weak));
extern __typeof__(cuFuncGetName) cuFuncGetName __attribute__((weak));
extern __typeof__(cuKernelGetName) cuKernelGetName __attribute__((weak));

/* A kernel's parameters fit in 32764 bytes, so a driver that keeps answering past this many
 * indices is not describing a real kernel; stop rather than loop. */
#define LAYOUT_MAX_QUERY 32768u

/* Open-addressed, insert-only table. A reader probes with acquire loads and never locks; a
 * writer fills an entry and then publishes its key with a release store, so a reader that sees
 * the key sees the whole entry. Writers take the lock with trylock only: if it is busy (or was
 * held across a fork), the caller simply goes uncached this time. 1024 entries are 150 KiB of
 * zero pages, touched only as kernels are launched. */
#define LAYOUT_CACHE_SIZE 1024u

struct layout_entry {
    _Atomic uintptr_t key; /* handle | is_kernel; 0 while empty */
    struct launch_layout layout;
};

static struct layout_entry layout_cache[LAYOUT_CACHE_SIZE];
static pthread_mutex_t layout_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t layout_key(void *fn, int is_kernel)
{
    /* Driver handles are pointers to at least 8-aligned objects: bit 0 is free. */
    return (uintptr_t)fn | (uintptr_t)(is_kernel != 0);
}

static uint32_t layout_hash(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32) & (LAYOUT_CACHE_SIZE - 1);
}

static void layout_query(void *fn, int is_kernel, struct launch_layout *l)
{
    memset(l, 0, sizeof(*l));
    if (is_kernel ? !cuKernelGetParamInfo : !cuFuncGetParamInfo) {
        l->status = LAYOUT_UNKNOWN;
        l->why = CUDA_ERROR_NOT_SUPPORTED;
        return;
    }
    uint32_t i;
    for (i = 0; i < LAYOUT_MAX_QUERY; i++) {
        size_t offset = 0, size = 0;
        CUresult r = is_kernel ? cuKernelGetParamInfo((CUkernel)fn, i, &offset, &size)
                               : cuFuncGetParamInfo((CUfunction)fn, i, &offset, &size);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break; /* one past the last parameter */
        if (r != CUDA_SUCCESS) {
            l->status = LAYOUT_UNKNOWN;
            l->why = r;
            return;
        }
        if (i < ATLAS_LAUNCH_MAX_ARGS)
            l->sizes[i] = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    }
    l->status = LAYOUT_KNOWN;
    l->nparams = i;
    l->none_reported = i == 0;
}

static struct layout_entry *layout_find(uintptr_t key, int *full)
{
    uint32_t h = layout_hash(key);
    for (uint32_t n = 0; n < LAYOUT_CACHE_SIZE; n++) {
        struct layout_entry *e = &layout_cache[(h + n) & (LAYOUT_CACHE_SIZE - 1)];
        uintptr_t k = atomic_load_explicit(&e->key, memory_order_acquire);
        if (k == key || k == 0)
            return e;
    }
    *full = 1;
    return NULL;
}

const struct launch_layout *launch_layout_get(void *fn, int is_kernel, int fresh,
                                              struct launch_layout *scratch)
{
    uintptr_t key = layout_key(fn, is_kernel);
    int full = 0;
    if (!fresh) {
        struct layout_entry *e = layout_find(key, &full);
        if (e && atomic_load_explicit(&e->key, memory_order_acquire) == key)
            return &e->layout;
    }
    layout_query(fn, is_kernel, scratch);
    if (fresh || full || pthread_mutex_trylock(&layout_cache_lock) != 0)
        return scratch;
    struct layout_entry *e = layout_find(key, &full);
    if (e && atomic_load_explicit(&e->key, memory_order_relaxed) == 0) {
        e->layout = *scratch;
        atomic_store_explicit(&e->key, key, memory_order_release);
    }
    pthread_mutex_unlock(&layout_cache_lock);
    return scratch;
}

const char *launch_kernel_name(void *fn, int is_kernel, char *buf, size_t len)
{
    const char *name = NULL;
    if (fn && is_kernel && cuKernelGetName)
        (void)cuKernelGetName(&name, (CUkernel)fn);
    else if (fn && !is_kernel && cuFuncGetName)
        (void)cuFuncGetName(&name, (CUfunction)fn);
    if (name && *name)
        return name;
    snprintf(buf, len, "%s@%p", is_kernel ? "CUkernel" : "CUfunction", fn);
    return buf;
}

void launch_layout_reset_for_tests(void)
{
    for (uint32_t i = 0; i < LAYOUT_CACHE_SIZE; i++)
        atomic_store_explicit(&layout_cache[i].key, 0, memory_order_relaxed);
}
