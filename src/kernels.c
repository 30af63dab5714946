/*
 * The per-handle records (see kernels.h).
 */
#include "kernels.h"

#include "driver.h"
#include "log.h"
#include "stack.h"
#include "step.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writers: making, replacing and forgetting records, growing the table,
 * interning names. Readers take no lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- names -------------------------------------------------------------------- */

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

/* The driver's name for h (NULL when it does not answer). A CUkernel passed
 * where a CUfunction is expected answers to cuKernelGetName. */
static const char *driver_name(void *h, int *is_kernel)
{
    const char *drv = NULL;
    *is_kernel = 0;
    if (atl_drv.cuFuncGetName && atl_drv.cuFuncGetName(&drv, (CUfunction)h) == CUDA_SUCCESS && drv)
        return drv;
    drv = NULL;
    if (atl_drv.cuKernelGetName && atl_drv.cuKernelGetName(&drv, (CUkernel)h) == CUDA_SUCCESS &&
        drv) {
        *is_kernel = 1;
        return drv;
    }
    return NULL;
}

/* ---- layouts -------------------------------------------------------------------- */

unsigned atl_param_layout(void *h, uint32_t *off, uint32_t *size, unsigned max, int *exact,
                          CUresult *why)
{
    CUresult (*fns[2])(void *, size_t, size_t *, size_t *) = {
        (CUresult(*)(void *, size_t, size_t *, size_t *))atl_drv.cuFuncGetParamInfo,
        (CUresult(*)(void *, size_t, size_t *, size_t *))atl_drv.cuKernelGetParamInfo,
    };
    *exact = 0;
    *why = CUDA_ERROR_NOT_SUPPORTED; /* neither entry point */
    for (int f = 0; f < 2; f++) {
        if (!fns[f])
            continue;
        unsigned n = 0;
        CUresult r = CUDA_SUCCESS;
        for (; n < max; n++) {
            size_t o = 0, s = 0;
            r = fns[f](h, n, &o, &s);
            if (r != CUDA_SUCCESS)
                break;
            off[n] = (uint32_t)o, size[n] = (uint32_t)s;
        }
        /* out of range ends a good layout; a wrong handle type means try the other */
        if (n > 0 || r == CUDA_ERROR_INVALID_VALUE) {
            *exact = 1;
            return n;
        }
        *why = r;
    }
    return 0;
}

/* A kernel's parameters fit in 32,764 bytes (the driver's limit): at most
 * that many of one byte each. */
#define PARAMS_LIMIT 32768

/* Fills r's layout from the driver, of any length (first 64 parameters,
 * then twice as many until the driver says there are no more). Before r is
 * published, or under lock. */
static void layout_fetch(struct atl_krec *r)
{
    for (unsigned max = 64; max <= PARAMS_LIMIT; max *= 2) {
        uint32_t *off = malloc(max * sizeof *off), *size = malloc(max * sizeof *size);
        if (!off || !size) {
            free(off), free(size);
            atl_log_once_oom("the kernel records");
            return;
        }
        int exact = 0;
        CUresult why = CUDA_SUCCESS;
        unsigned n = atl_param_layout(r->handle, off, size, max, &exact, &why);
        if (n == max && max < PARAMS_LIMIT) { /* there may be more */
            free(off), free(size);
            continue;
        }
        if (!(exact && n < max)) {
            free(off), free(size);
            /* no driver entry point: never; else asked again at the next use */
            if (why != CUDA_ERROR_NOT_SUPPORTED && r->layout_retry < ATL_KREC_LAYOUT_TRIES)
                __atomic_store_n(&r->layout_retry, r->layout_retry + 1, __ATOMIC_RELAXED);
            else
                __atomic_store_n(&r->layout_retry, 0, __ATOMIC_RELAXED);
            atl_log(ATL_DEBUG, "kernel@%p: no parameter layout from the driver (error %d)%s",
                    r->handle, (int)why, r->layout_retry ? ", asked again at its next use" : "");
            return;
        }
        r->nparams = n;
        r->off = off, r->size = size;
        __atomic_store_n(&r->exact, 1, __ATOMIC_RELEASE); /* last: readers see a whole layout */
        __atomic_store_n(&r->layout_retry, 0, __ATOMIC_RELAXED);
        return;
    }
}

/* retries only: not the table's lock, which a driver call must never be made under */
static pthread_mutex_t retry_lock = PTHREAD_MUTEX_INITIALIZER;

int atl_krec_layout_retry(struct atl_krec *r)
{
    pthread_mutex_lock(&retry_lock);
    if (!r->exact && r->layout_retry)
        layout_fetch(r);
    int exact = r->exact;
    pthread_mutex_unlock(&retry_lock);
    return exact;
}

/* ---- the table -------------------------------------------------------------------- */

/* Under lock: places key in t (which has room). */
static struct atl_ktab_ent *ktab_place(struct atl_ktab *t, void *key)
{
    uint64_t off = (((uint64_t)(uintptr_t)key * ATL_KTAB_MUL) >> ATL_KTAB_SHIFT) & t->mask;
    for (;;) {
        struct atl_ktab_ent *e = (struct atl_ktab_ent *)((char *)t->e + off);
        if (!e->key || e->key == key)
            return e;
        off = (off + ATL_KTAB_ENT) & t->mask;
    }
}

/* Under lock: enters r (not yet published) for its handle, which the
 * current table lacks. A table half full is replaced by one twice the size;
 * the old one stays allocated (a launch may still be probing it; the tables
 * add up to twice the last one). Forgotten keys are dropped then. 0, or -1
 * out of memory. */
static int ktab_add(struct atl_krec *r)
{
    struct atl_ktab *t = atl_fl.ktab;
    if ((t->used + 1) * 2 > t->cap) {
        uint64_t cap = t->cap < 256 ? 256 : t->cap * 2;
        struct atl_ktab *nt = calloc(1, sizeof *nt + cap * sizeof nt->e[0]);
        if (!nt)
            return -1;
        nt->cap = cap;
        nt->mask = (cap - 1) * ATL_KTAB_ENT;
        nt->older = t;
        for (uint64_t i = 0; i < t->cap; i++) {
            void *k = __atomic_load_n(&t->e[i].key, __ATOMIC_RELAXED);
            if (!k || k == ATL_KTAB_GONE)
                continue;
            /* a launch's cold path may store the epoch meanwhile: read it
             * atomically (a store missed here costs one more cold path) */
            struct atl_ktab_ent *d = ktab_place(nt, k);
            d->key = k;
            d->epoch = __atomic_load_n(&t->e[i].epoch, __ATOMIC_RELAXED);
            d->rec = t->e[i].rec;
            nt->used++;
        }
        __atomic_store_n(&atl_fl.ktab, nt, __ATOMIC_RELEASE);
        t = nt;
    }
    struct atl_ktab_ent *e = ktab_place(t, r->handle);
    e->rec = r;
    e->epoch = 0;
    __atomic_store_n(&e->key, r->handle, __ATOMIC_RELEASE); /* last: readers see a whole entry */
    t->used++;
    return 0;
}

/* Under lock: h's key becomes a tombstone (probes for other keys still run
 * past it); its record stays allocated. */
static void ktab_forget(void *h)
{
    struct atl_ktab_ent *e = atl_ktab_find(atl_fl.ktab, h);
    if (e)
        __atomic_store_n(&e->key, ATL_KTAB_GONE, __ATOMIC_RELEASE);
}

/* A new record of h, not yet published: its layout from the driver (called
 * without the lock: a driver call may be slow, or come back to us). */
static struct atl_krec *krec_new(void *h, void *owner, int is_kernel)
{
    struct atl_krec *r = calloc(1, sizeof *r);
    if (!r) {
        atl_log_once_oom("the kernel records");
        return NULL;
    }
    r->handle = h;
    r->owner = owner;
    r->is_kernel = is_kernel;
    layout_fetch(r);
    return r;
}

static void krec_free(struct atl_krec *r)
{
    if (!r)
        return;
    atl_krec_view_free(r);
    free((void *)r->off), free((void *)r->size);
    free(r);
}

/* Publishes r (made by krec_new) under lock, with name (interned here). With
 * `replace`, an existing record of the handle is forgotten first; else an
 * existing one (a race with another thread) wins and r is dropped. Returns
 * the handle's record, NULL out of memory. */
static struct atl_krec *krec_publish(struct atl_krec *r, const char *name, int replace)
{
    pthread_mutex_lock(&lock);
    struct atl_krec *old = atl_krec_find(r->handle);
    if (old && replace)
        ktab_forget(r->handle), old = NULL;
    if (old) {
        pthread_mutex_unlock(&lock);
        krec_free(r);
        return old;
    }
    r->name = intern(name);
    if (ktab_add(r) != 0) {
        pthread_mutex_unlock(&lock);
        krec_free(r);
        return NULL;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

struct atl_krec *atl_krec_get(void *h)
{
    if (!h)
        return NULL;
    struct atl_krec *r = atl_krec_find(h);
    if (r)
        return r;
    /* Not looked up through us (fetched before we were loaded, or by the
     * driver itself): named and described by the driver. */
    int is_kernel = 0;
    const char *name = driver_name(h, &is_kernel);
    r = krec_new(h, NULL, is_kernel);
    return r ? krec_publish(r, name, 0) : NULL;
}

const char *atl_krec_mangled(struct atl_krec *r)
{
    if (!r)
        return NULL;
    const char *name = __atomic_load_n(&r->name, __ATOMIC_ACQUIRE);
    if (name)
        return name;
    int is_kernel;
    const char *drv = driver_name(r->handle, &is_kernel);
    if (!drv)
        return NULL;
    pthread_mutex_lock(&lock);
    if (!r->name)
        __atomic_store_n(&r->name, intern(drv), __ATOMIC_RELEASE);
    name = r->name;
    pthread_mutex_unlock(&lock);
    return name;
}

void atl_kernels_note_lookup(const struct atl_lookup *l, CUresult r)
{
    if (r != CUDA_SUCCESS || !l->result)
        return;
    const char *name = l->name;
    void *owner = l->owner;
    if (l->kind == ATL_LOOKUP_KERNEL_FUNCTION) {
        /* the CUfunction of a CUkernel: same name, same library */
        struct atl_krec *src = atl_krec_find(l->owner);
        name = src ? atl_krec_mangled(src) : NULL;
        owner = src ? src->owner : NULL;
    }
    struct atl_krec *k = atl_krec_find(l->result);
    if (k) {
        const char *have = atl_krec_mangled(k);
        /* the same kernel again; or a handle the driver reused for another
         * kernel without an unload we saw: a record of its own */
        if (!name || (have && strcmp(have, name) == 0))
            return;
    }
    k = krec_new(l->result, owner, l->kind == ATL_LOOKUP_LIBRARY_KERNEL);
    if (k)
        krec_publish(k, name, 1);
}

const char *atl_kernel_mangled(void *handle)
{
    return atl_krec_mangled(atl_krec_get(handle));
}

const char *atl_kernel_name_of(struct atl_krec *r, void *handle, char *buf, unsigned len)
{
    const char *m = atl_krec_mangled(r ? r : atl_krec_get(handle));
    if (m)
        snprintf(buf, len, "%s", atl_demangle(m));
    else
        snprintf(buf, len, "kernel@%p", handle);
    return buf;
}

const char *atl_kernel_name(void *handle, char *buf, unsigned len)
{
    return atl_kernel_name_of(NULL, handle, buf, len);
}

void atl_kernels_each(void (*fn)(const struct atl_krec *k, void *ctx), void *ctx)
{
    pthread_mutex_lock(&lock);
    const struct atl_ktab *t = atl_fl.ktab;
    for (uint64_t i = 0; i < t->cap; i++) {
        void *k = t->e[i].key;
        if (k && k != ATL_KTAB_GONE)
            fn(t->e[i].rec, ctx);
    }
    pthread_mutex_unlock(&lock);
}

void atl_kernels_forget(void *handle)
{
    if (!handle || handle == ATL_KTAB_GONE)
        return;
    pthread_mutex_lock(&lock);
    ktab_forget(handle);
    pthread_mutex_unlock(&lock);
}

unsigned long atl_unload_gen;

void atl_kernels_forget_owner(void *owner)
{
    if (owner) {
        pthread_mutex_lock(&lock);
        struct atl_ktab *t = atl_fl.ktab;
        for (uint64_t i = 0; i < t->cap; i++) {
            void *k = t->e[i].key;
            if (!k || k == ATL_KTAB_GONE)
                continue;
            const struct atl_krec *r = t->e[i].rec;
            if (r->owner == owner || !r->owner)
                __atomic_store_n(&t->e[i].key, ATL_KTAB_GONE, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&lock);
    }
    __atomic_add_fetch(&atl_unload_gen, 1, __ATOMIC_RELEASE);
}

/* ---- the step trace's view ------------------------------------------------------ */

/* A record's view when there is no record (out of memory): not kept. */
static struct atl_kfn view_unknown = {.mangled = "kernel@?", .pretty = "kernel@?"};

static struct atl_kslot *plan_make(const uint32_t *off, const uint32_t *size, unsigned n,
                                   unsigned total)
{
    if (n == 0)
        return NULL;
    for (unsigned i = 0; i < n; i++)
        if (off[i] % 4 || (i + 1 < n && off[i + 1] < off[i] + size[i]) || (i == 0 && off[0] != 0))
            return NULL;
    struct atl_kslot *p = calloc(n, sizeof *p);
    if (!p)
        return NULL;
    for (unsigned i = 0; i < n; i++) {
        uint32_t end = i + 1 < n ? off[i + 1] : total;
        uint32_t sz = size[i], span = end - off[i];
        uint16_t how = ATL_SLOT_OTHER;
        if (sz == 8 && span == 8 && off[i] % 8 == 0)
            how = ATL_SLOT_8;
        else if (sz == 4 && span == 8)
            how = ATL_SLOT_4_IN_8;
        else if (sz == 4 && span == 4)
            how = ATL_SLOT_4;
        p[i] = (struct atl_kslot){.off = off[i], .how = how, .size = sz, .span = span};
    }
    return p;
}

static void view_free(struct atl_kfn *k)
{
    if (!k || k == &view_unknown)
        return;
    if (k->pretty != k->mangled)
        free((void *)k->pretty);
    free((void *)k->mangled);
    free((void *)k->off), free((void *)k->size), free((void *)k->plan);
    free((void *)k->words), free(k);
}

void atl_krec_view_free(struct atl_krec *r)
{
    view_free(r->view), view_free(r->view_packed);
    r->view = r->view_packed = NULL;
}

const struct atl_kfn *atl_krec_view_make(struct atl_krec *r, size_t packed)
{
    if (!r)
        return &view_unknown;
    /* The name for people is demangled later, on the thread that reports
     * (atl_kfn_pretty): demangling here would run on whichever thread
     * launched first. Asked before the lock: the driver may be slow. */
    char buf[64];
    const char *mangled = atl_krec_mangled(r);
    if (!mangled) {
        snprintf(buf, sizeof buf, "kernel@%p", r->handle);
        mangled = buf;
    }
    const uint32_t one_off = 0, one_size = (uint32_t)packed;
    const int exact = atl_krec_exact(r);
    const unsigned n = packed ? 1 : exact ? r->nparams : 0;
    const uint32_t *off = packed ? &one_off : r->off, *size = packed ? &one_size : r->size;
    struct atl_kfn *k = calloc(1, sizeof *k);
    uint32_t *o = calloc(n + 1, 4), *s = calloc(n + 1, 4);
    char *m = strdup(mangled);
    if (!k || !o || !s || !m) {
        free(k), free(o), free(s), free(m);
        atl_log_once_oom("the step trace");
        return &view_unknown;
    }
    unsigned total = 0, covered = 0;
    for (unsigned i = 0; i < n; i++) {
        o[i] = off[i], s[i] = size[i];
        if (off[i] + size[i] > total)
            total = off[i] + size[i];
        covered += s[i];
    }
    *k = (struct atl_kfn){.mangled = m,
                          .nparams = n,
                          .total = total,
                          .exact = exact || packed,
                          .off = o,
                          .size = s,
                          .gapless = covered == total,
                          .plan = plan_make(o, s, n, total)};
    atl_kfn_words(k);
    /* another thread may have made it meanwhile: the first one stays */
    struct atl_kfn **slot = packed ? &r->view_packed : &r->view;
    pthread_mutex_lock(&lock);
    struct atl_kfn *have = *slot;
    if (!have)
        __atomic_store_n(slot, k, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
    if (have) {
        view_free(k);
        return have;
    }
    return k;
}
