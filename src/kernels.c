#include "kernels.h"

#include "driver.h"
#include "stack.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An open-addressing table that grows. A module or library unload removes
 * its handles (atl_kernels_forget_owner): the driver may hand the same
 * address to the next kernel it loads. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct atl_kernel *table;
static size_t cap, used;

static size_t slot_of(void *h)
{
    uint64_t x = (uint64_t)(uintptr_t)h;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return (size_t)x;
}

/* Under lock. Returns the entry for h, inserting it when `create`. */
static struct atl_kernel *find(void *h, int create)
{
    if (cap == 0 || (create && (used + 1) * 2 > cap)) {
        if (!create)
            return NULL;
        size_t ncap = cap ? cap * 2 : 256;
        struct atl_kernel *nt = calloc(ncap, sizeof *nt);
        if (!nt)
            return NULL;
        for (size_t i = 0; i < cap; i++) {
            if (!table[i].handle)
                continue;
            size_t j = slot_of(table[i].handle) & (ncap - 1);
            while (nt[j].handle)
                j = (j + 1) & (ncap - 1);
            nt[j] = table[i];
        }
        free(table);
        table = nt;
        cap = ncap;
    }
    for (size_t j = slot_of(h) & (cap - 1);; j = (j + 1) & (cap - 1)) {
        if (table[j].handle == h)
            return &table[j];
        if (!table[j].handle) {
            if (!create)
                return NULL;
            table[j].handle = h;
            used++;
            return &table[j];
        }
    }
}

/* Under lock. Names are interned: one copy per distinct name, kept for the
 * process (callers may hold them), so a program that loads and unloads the
 * same modules again and again does not grow the set. NULL when out of
 * memory (the name is then unknown). */
static char **names;
static size_t names_cap, names_used;

static size_t name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return (size_t)h;
}

static const char *intern(const char *s)
{
    if (!s)
        return NULL;
    if ((names_used + 1) * 2 > names_cap) {
        size_t ncap = names_cap ? names_cap * 2 : 256;
        char **nn = calloc(ncap, sizeof *nn);
        if (!nn)
            return NULL;
        for (size_t i = 0; i < names_cap; i++) {
            if (!names[i])
                continue;
            size_t j = name_hash(names[i]) & (ncap - 1);
            while (nn[j])
                j = (j + 1) & (ncap - 1);
            nn[j] = names[i];
        }
        free(names);
        names = nn;
        names_cap = ncap;
    }
    size_t j = name_hash(s) & (names_cap - 1);
    for (; names[j]; j = (j + 1) & (names_cap - 1))
        if (strcmp(names[j], s) == 0)
            return names[j];
    names[j] = strdup(s);
    if (names[j])
        names_used++;
    return names[j];
}

void atl_kernels_note_lookup(const struct atl_lookup *l, CUresult r)
{
    if (r != CUDA_SUCCESS || !l->result)
        return;
    pthread_mutex_lock(&lock);
    struct atl_kernel *k = find(l->result, 1);
    if (k) {
        k->is_kernel = l->kind == ATL_LOOKUP_LIBRARY_KERNEL;
        if (l->kind == ATL_LOOKUP_KERNEL_FUNCTION) {
            /* the CUfunction of a CUkernel: same name, same library */
            struct atl_kernel *src = find(l->owner, 0);
            if (src) {
                k = find(l->result, 1); /* the table may have moved */
                if (!k->name && src->name)
                    k->name = intern(src->name);
                k->owner = src->owner;
            }
        } else {
            if (k->name && l->name && strcmp(k->name, l->name) != 0)
                k->name = NULL; /* interned: stays valid for whoever holds it */
            if (!k->name)
                k->name = intern(l->name);
            k->owner = l->owner;
        }
    }
    pthread_mutex_unlock(&lock);
}

const char *atl_kernel_mangled(void *handle)
{
    if (!handle)
        return NULL;
    pthread_mutex_lock(&lock);
    struct atl_kernel *k = find(handle, 0);
    const char *name = k ? k->name : NULL;
    pthread_mutex_unlock(&lock);
    if (name)
        return name;
    /* Not looked up through us (fetched before we were loaded, or by the
     * driver itself): ask. A CUkernel passed where a CUfunction is expected
     * answers to cuKernelGetName. */
    const char *drv = NULL;
    int is_kernel = 0;
    if (atl_drv.cuFuncGetName && atl_drv.cuFuncGetName(&drv, (CUfunction)handle) == CUDA_SUCCESS &&
        drv)
        ;
    else if (atl_drv.cuKernelGetName &&
             atl_drv.cuKernelGetName(&drv, (CUkernel)handle) == CUDA_SUCCESS && drv)
        is_kernel = 1;
    if (!drv)
        return NULL;
    pthread_mutex_lock(&lock);
    k = find(handle, 1);
    if (k && !k->name) {
        k->name = intern(drv);
        k->is_kernel = is_kernel;
    }
    name = k ? k->name : NULL;
    pthread_mutex_unlock(&lock);
    return name;
}

const char *atl_kernel_name(void *handle, char *buf, unsigned len)
{
    const char *m = atl_kernel_mangled(handle);
    if (m)
        snprintf(buf, len, "%s", atl_demangle(m));
    else
        snprintf(buf, len, "kernel@%p", handle);
    return buf;
}

void atl_kernels_each(void (*fn)(const struct atl_kernel *k, void *ctx), void *ctx)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < cap; i++)
        if (table[i].handle)
            fn(&table[i], ctx);
    pthread_mutex_unlock(&lock);
}

void atl_kernels_count_launch(void *handle, uint64_t blocks)
{
    pthread_mutex_lock(&lock);
    struct atl_kernel *k = find(handle, 1);
    if (k) {
        k->launches++;
        k->blocks += blocks;
    }
    pthread_mutex_unlock(&lock);
}

unsigned long atl_unload_gen;

void atl_kernels_forget_owner(void *owner)
{
    pthread_mutex_lock(&lock);
    /* Rebuilt without the forgotten entries (removing in place would break
     * the probe chains). Names are interned, not freed: callers may still
     * hold them (atl_kernel_mangled promises they stay valid). */
    struct atl_kernel *nt = cap ? calloc(cap, sizeof *nt) : NULL;
    size_t kept = 0;
    for (size_t i = 0; i < cap; i++) {
        struct atl_kernel *k = &table[i];
        if (!k->handle)
            continue;
        int gone = atl_kernel_gone_with(k, owner);
        if (!nt) { /* out of memory: forget the names only */
            if (gone)
                k->name = NULL, k->owner = NULL;
            continue;
        }
        if (gone)
            continue;
        size_t j = slot_of(k->handle) & (cap - 1);
        while (nt[j].handle)
            j = (j + 1) & (cap - 1);
        nt[j] = *k;
        kept++;
    }
    if (nt) {
        free(table);
        table = nt;
        used = kept;
    }
    pthread_mutex_unlock(&lock);
    __atomic_add_fetch(&atl_unload_gen, 1, __ATOMIC_RELEASE);
}
