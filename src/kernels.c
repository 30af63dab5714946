/*
 * The per-handle records (see kernels.h).
 */
#include "kernels.h"

#include "addrmap.h"
#include "driver.h"
#include "log.h"
#include "stack.h"
#include "step.h"
#include "thread.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writers: making, replacing and forgetting records, growing the table,
 * interning names, freeing records. Readers take no lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A record and what only this file reads of it. */
struct kr {
    struct atl_krec r;              /* first: a record is its kr */
    struct kr *own_next, *own_prev; /* its owner's records in the table */
    struct kr *limbo_next;          /* gone, not yet freed */
    uint64_t gone;                  /* 0 while in the table; else the generation it left at */
    unsigned refs;                  /* atl_krec_hold's */
    size_t bytes;                   /* gone: the memory it holds (limbo_bytes) */
};

static struct kr *kr_of(struct atl_krec *r)
{
    return (struct kr *)r;
}

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

/* The layout's pointer-sized words (struct atl_krec's words), a list even
 * when empty; NULL with no memory for it (*n 0). A parameter at offset po
 * has its first such word (8 - po % 8) % 8 bytes in: the words are
 * 8-byte-aligned in the parameter block, as the driver lays a pointer out. */
static const struct atl_kword *words_of(const uint32_t *off, const uint32_t *size, unsigned np,
                                        unsigned *n)
{
    size_t nw = 0;
    for (unsigned i = 0; i < np; i++)
        for (uint32_t o = (8 - off[i] % 8) % 8; (size_t)o + 8 <= size[i]; o += 8)
            nw++;
    *n = 0;
    struct atl_kword *w = malloc((nw ? nw : 1) * sizeof *w);
    if (!w)
        return NULL; /* launch_words walks the layout instead */
    for (unsigned i = 0; i < np; i++)
        for (uint32_t o = (8 - off[i] % 8) % 8; (size_t)o + 8 <= size[i]; o += 8)
            w[(*n)++] = (struct atl_kword){i, o};
    return w;
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
        r->words = words_of(off, size, n, &r->nwords);
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

#define ENT(t, off) ((struct atl_ktab_ent *)((char *)(t)->e + (off)))

static uint64_t ktab_home(const struct atl_ktab *t, const void *key)
{
    return (((uint64_t)(uintptr_t)key * ATL_KTAB_MUL) >> ATL_KTAB_SHIFT) & t->mask;
}

/* Under lock: the empty entry where key goes in t. */
static struct atl_ktab_ent *ktab_place(struct atl_ktab *t, const void *key)
{
    for (uint64_t off = ktab_home(t, key);; off = (off + ATL_KTAB_ENT) & t->mask)
        if (!ENT(t, off)->key)
            return ENT(t, off);
}

static uint64_t tables_made;

/* Under lock: enters r (not yet published) for its handle, which the
 * current table lacks. A table half full is replaced by one twice the size;
 * the old one stays allocated (a launch may still be probing it; the tables
 * add up to twice the last one). 0, or -1 out of memory. */
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
            if (!k)
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
        tables_made++;
        t = nt;
    }
    struct atl_ktab_ent *e = ktab_place(t, r->handle);
    __atomic_store_n(&e->rec, r, __ATOMIC_RELAXED);
    __atomic_store_n(&e->epoch, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->key, r->handle, __ATOMIC_RELEASE); /* last: readers see a whole entry */
    t->used++;
    return 0;
}

/* Under lock: takes h's key out of the table. The later keys of its probe
 * run move back one hole at a time (backward-shift deletion), so the table
 * keeps no tombstones and a probe never walks past the keys of unloaded
 * modules. Each move writes the entry's record and epoch before its key, and
 * the key it leaves stays readable until the next move overwrites it: a
 * reader sees every key it probes for at its old place or its new one, but
 * for the last hole, emptied at the end (then it misses once and takes the
 * cold path, which looks again under the lock). */
static void ktab_forget(const void *h)
{
    struct atl_ktab *t = atl_fl.ktab;
    struct atl_ktab_ent *e = atl_ktab_find(t, h);
    if (!e || !h)
        return;
    uint64_t mask = t->mask, hole = (uint64_t)((char *)e - (char *)t->e);
    for (uint64_t j = (hole + ATL_KTAB_ENT) & mask;; j = (j + ATL_KTAB_ENT) & mask) {
        struct atl_ktab_ent *ej = ENT(t, j);
        void *k = __atomic_load_n(&ej->key, __ATOMIC_RELAXED);
        if (!k)
            break;
        uint64_t home = ktab_home(t, k);
        if (((j - home) & mask) < ((j - hole) & mask))
            continue; /* the hole is before its home: it stays */
        struct atl_ktab_ent *eh = ENT(t, hole);
        __atomic_store_n(&eh->rec, __atomic_load_n(&ej->rec, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
        __atomic_store_n(&eh->epoch, __atomic_load_n(&ej->epoch, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&eh->key, k, __ATOMIC_RELEASE);
        hole = j;
    }
    struct atl_ktab_ent *eh = ENT(t, hole);
    __atomic_store_n(&eh->key, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&eh->epoch, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&eh->rec, NULL, __ATOMIC_RELAXED);
    t->used--;
}

/* ---- owners -------------------------------------------------------------------- */

/* The kernel audit's counts of a kernel whose records are gone. */
struct departed {
    const char *name; /* interned; NULL: unnamed, then by handle */
    void *handle;
    uint64_t launches, blocks;
};

/* Under lock: each owner's records in the table, so that an unload finds
 * its kernels without a look at the others; the records of unknown owner
 * (fetched by name from the driver) in one list of their own. An owner is
 * dropped once it has neither records nor departed counts. */
struct own {
    void *owner;
    struct kr *head;
    struct departed *dep;
    size_t ndep, capdep;
};
static struct atl_addrmap owners; /* owner -> struct own * */
static struct own unowned;

static struct own *own_of(void *owner, int make)
{
    if (!owner)
        return &unowned;
    size_t v;
    if (atl_addrmap_get(&owners, (uint64_t)(uintptr_t)owner, &v))
        return (struct own *)v;
    if (!make)
        return NULL;
    struct own *o = calloc(1, sizeof *o);
    if (!o || atl_addrmap_put(&owners, (uint64_t)(uintptr_t)owner, (size_t)o) != 0) {
        free(o);
        return NULL;
    }
    o->owner = owner;
    return o;
}

static void own_drop_if_empty(struct own *o)
{
    if (o == &unowned || o->head || o->ndep)
        return;
    atl_addrmap_del(&owners, (uint64_t)(uintptr_t)o->owner);
    free(o->dep);
    free(o);
}

/* Under lock: the counts of a record that goes, kept for the audit's
 * report; only when it counted (the audit is on), so that memory stays flat
 * without it. */
static void departed_add(struct own *o, const struct kr *k)
{
    uint64_t n = __atomic_load_n(&k->r.launches, __ATOMIC_RELAXED);
    uint64_t b = __atomic_load_n(&k->r.blocks, __ATOMIC_RELAXED);
    if (!n && !b)
        return;
    const char *name = __atomic_load_n(&k->r.name, __ATOMIC_ACQUIRE);
    struct departed *d = NULL;
    for (size_t i = 0; i < o->ndep && !d; i++)
        if (name ? o->dep[i].name == name : o->dep[i].handle == k->r.handle && !o->dep[i].name)
            d = &o->dep[i];
    if (!d) {
        if (o->ndep == o->capdep) {
            size_t cap = o->capdep ? o->capdep * 2 : 8;
            struct departed *nd = realloc(o->dep, cap * sizeof *nd);
            if (!nd) {
                atl_log_once_oom("the kernel audit");
                return;
            }
            o->dep = nd, o->capdep = cap;
        }
        d = &o->dep[o->ndep++];
        *d = (struct departed){.name = name, .handle = k->r.handle};
    }
    d->launches += n;
    d->blocks += b;
}

/* ---- lifetime: pins, references, freeing ------------------------------------ */

/* The generation: + 1 each time a record leaves the table. A pinned thread
 * shows the generation it pinned at in its slot (src/thread.h); a record
 * that left at generation G is freed once no slot shows a pin below G (the
 * threads pinned before it left are done) and nobody holds a reference. */
uint64_t atl_krec_gen = 1;
#define gen atl_krec_gen
static uint64_t unslotted; /* threads pinned without a slot: nothing is freed meanwhile */
/* The oldest pin of what keeps records found while pinned past the pin
 * without a reference of each (atl_krec_set_holders) */
static uint64_t (*holders_low)(void);
/* Gone records in the order they left (their generations ascend): a
 * freeing pass stops at the first one a pin keeps, so records a long pin
 * keeps waiting (a step trace's buffer that fills for a long time) cost
 * nothing per unload. */
static struct kr *limbo, **limbo_tail = &limbo;
static uint64_t nrecords, nlimbo;
static size_t limbo_bytes; /* what the gone records hold (written under lock, read atomically) */

size_t atl_krec_waiting_bytes(void)
{
    return __atomic_load_n(&limbo_bytes, __ATOMIC_RELAXED);
}

/* The first pin of a thread (it takes its slot now), or one of a thread
 * that has none. */
void atl_krec_pin_slow(void)
{
    struct atl_tslot *s = atl_tslot_mine();
    if (s)
        __atomic_store_n(&s->krec_pin, __atomic_load_n(&gen, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
    else
        __atomic_add_fetch(&unslotted, 1, __ATOMIC_SEQ_CST);
}

void atl_krec_unpin_slow(void)
{
    __atomic_sub_fetch(&unslotted, 1, __ATOMIC_RELEASE);
}

void atl_krec_unpin_all(void)
{
    if (atl_thr.krec_pins > 0) {
        atl_thr.krec_pins = 1;
        atl_krec_unpin();
    }
}

/* How the race detector's view is freed (src/races.c gives it at its start). */
static void (*races_free)(void *);

void atl_krec_set_races_free(void (*fn)(void *))
{
    __atomic_store_n(&races_free, fn, __ATOMIC_RELEASE);
}

/* Everything a record owns, freed: the one place (a field that points to
 * memory of its own is freed here). */
static void krec_free(struct kr *k)
{
    if (!k)
        return;
    atl_krec_view_free(&k->r);
    void (*rf)(void *) = __atomic_load_n(&races_free, __ATOMIC_ACQUIRE);
    if (k->r.races && rf)
        rf(k->r.races);
    free((void *)k->r.off), free((void *)k->r.size), free((void *)k->r.words);
    free(k);
}

/* Under lock: frees the records that left the table and that nothing can
 * refer to any more. */
static void reclaim(void)
{
    if (!limbo || __atomic_load_n(&unslotted, __ATOMIC_SEQ_CST))
        return;
    uint64_t low = UINT64_MAX; /* the oldest pin */
    for (unsigned i = 0, n = atl_tslot_count(); i < n; i++) {
        uint64_t p = __atomic_load_n(&atl_tslot_at(i)->krec_pin, __ATOMIC_SEQ_CST);
        if (p && p < low)
            low = p;
    }
    /* after the threads: a thread that kept what it found (into a buffer of
     * the step trace's) before it unpinned shows it there by now */
    uint64_t (*holders)(void) = __atomic_load_n(&holders_low, __ATOMIC_ACQUIRE);
    if (holders) {
        uint64_t h = holders(); /* 0: none */
        if (h && h < low)
            low = h;
    }
    for (struct kr **pp = &limbo; *pp && (*pp)->gone <= low;) {
        struct kr *k = *pp;
        if (__atomic_load_n(&k->refs, __ATOMIC_ACQUIRE) == 0) {
            *pp = k->limbo_next;
            if (!*pp)
                limbo_tail = pp;
            __atomic_store_n(&limbo_bytes, limbo_bytes - k->bytes, __ATOMIC_RELAXED);
            krec_free(k);
            nrecords--, nlimbo--;
        } else {
            pp = &k->limbo_next; /* held (a kept step's): freed at its release */
        }
    }
}

static size_t view_bytes(const struct atl_kfn *v);

/* The heap memory record k holds (it and its views), for the step trace's bound on what
 * it keeps waiting (ATLAS_TRACE_MAX_MB). */
static size_t krec_bytes(const struct kr *k)
{
    return malloc_usable_size((void *)k) + malloc_usable_size((void *)k->r.off) +
           malloc_usable_size((void *)k->r.size) + malloc_usable_size((void *)k->r.words) +
           view_bytes(__atomic_load_n(&k->r.view, __ATOMIC_ACQUIRE)) +
           view_bytes(__atomic_load_n(&k->r.view_packed, __ATOMIC_ACQUIRE));
}

/* Under lock: k leaves the table (its counts kept for the audit) and waits
 * to be freed. */
static void krec_retire(struct kr *k)
{
    ktab_forget(k->r.handle);
    struct own *o = own_of(k->r.owner, 0);
    if (k->own_prev)
        k->own_prev->own_next = k->own_next;
    else if (o)
        o->head = k->own_next;
    if (k->own_next)
        k->own_next->own_prev = k->own_prev;
    k->own_next = k->own_prev = NULL;
    if (o)
        departed_add(o, k);
    /* a full barrier: the record is out of the table before the pins are
     * read (reclaim) */
    k->gone = __atomic_add_fetch(&gen, 1, __ATOMIC_SEQ_CST);
    k->limbo_next = NULL;
    *limbo_tail = k;
    limbo_tail = &k->limbo_next;
    nlimbo++;
    k->bytes = krec_bytes(k);
    __atomic_store_n(&limbo_bytes, limbo_bytes + k->bytes, __ATOMIC_RELAXED);
    if (o)
        own_drop_if_empty(o);
}

void atl_krec_set_holders(uint64_t (*low)(void))
{
    __atomic_store_n(&holders_low, low, __ATOMIC_RELEASE);
}

void atl_krec_hold(struct atl_krec *r)
{
    if (r)
        __atomic_add_fetch(&kr_of(r)->refs, 1, __ATOMIC_ACQ_REL);
}

void atl_krec_release(struct atl_krec *r)
{
    if (!r || __atomic_sub_fetch(&kr_of(r)->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (__atomic_load_n(&kr_of(r)->gone, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&lock);
        reclaim();
        pthread_mutex_unlock(&lock);
    }
}

/* ---- records ---------------------------------------------------------------------- */

/* A new record of h, not yet published: its layout from the driver (called
 * without the lock: a driver call may be slow, or come back to us). */
static struct kr *krec_new(void *h, void *owner, int is_kernel)
{
    struct kr *k = calloc(1, sizeof *k);
    if (!k) {
        atl_log_once_oom("the kernel records");
        return NULL;
    }
    k->r.handle = h;
    k->r.owner = owner;
    k->r.is_kernel = is_kernel;
    layout_fetch(&k->r);
    return k;
}

/* Publishes k (made by krec_new) under lock, with name (interned here). With
 * `replace`, an existing record of the handle under another name leaves the
 * table first; else an existing one (a race with another thread, or the
 * same kernel again) wins and k is dropped. Returns the handle's record,
 * NULL out of memory. */
static struct atl_krec *krec_publish(struct kr *k, const char *name, int replace)
{
    pthread_mutex_lock(&lock);
    struct atl_krec *old = atl_krec_find(k->r.handle);
    if (old && replace && name) {
        const char *have = __atomic_load_n(&old->name, __ATOMIC_ACQUIRE);
        if (!have || strcmp(have, name) != 0)
            krec_retire(kr_of(old)), old = NULL;
    }
    struct own *o = old ? NULL : own_of(k->r.owner, 1);
    if (old || !o) {
        pthread_mutex_unlock(&lock);
        krec_free(k);
        if (!old)
            atl_log_once_oom("the kernel records");
        return old;
    }
    k->r.name = intern(name);
    if (ktab_add(&k->r) != 0) {
        own_drop_if_empty(o);
        pthread_mutex_unlock(&lock);
        krec_free(k);
        atl_log_once_oom("the kernel records");
        return NULL;
    }
    k->own_next = o->head;
    if (o->head)
        o->head->own_prev = k;
    o->head = k;
    nrecords++;
    reclaim(); /* records may wait for a pin to go: looked at again here */
    pthread_mutex_unlock(&lock);
    return &k->r;
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
    struct kr *k = krec_new(h, NULL, is_kernel);
    return k ? krec_publish(k, name, 0) : NULL;
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
    atl_krec_pin();
    const char *name = l->name;
    void *owner = l->owner;
    if (l->kind == ATL_LOOKUP_KERNEL_FUNCTION) {
        /* the CUfunction of a CUkernel: same name, same library */
        struct atl_krec *src = atl_krec_find(l->owner);
        name = src ? atl_krec_mangled(src) : NULL;
        owner = src ? src->owner : NULL;
    }
    struct atl_krec *k = atl_krec_find(l->result);
    const char *have = k ? atl_krec_mangled(k) : NULL;
    atl_krec_unpin();
    /* the same kernel again; or a handle the driver reused for another
     * kernel without an unload we saw: a record of its own */
    if (k && (!name || (have && strcmp(have, name) == 0)))
        return;
    struct kr *n = krec_new(l->result, owner, l->kind == ATL_LOOKUP_LIBRARY_KERNEL);
    if (n)
        krec_publish(n, name, 1);
}

const char *atl_kernel_mangled(void *handle)
{
    atl_krec_pin();
    const char *m = atl_krec_mangled(atl_krec_get(handle)); /* interned: outlives the pin */
    atl_krec_unpin();
    return m;
}

const char *atl_kernel_name_of(struct atl_krec *r, void *handle, char *buf, unsigned len)
{
    const char *m = r ? atl_krec_mangled(r) : atl_kernel_mangled(handle);
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
    for (uint64_t i = 0; i < t->cap; i++)
        if (t->e[i].key)
            fn(t->e[i].rec, ctx);
    for (size_t i = 0; i <= owners.cap; i++) {
        const struct own *o =
            i < owners.cap ? (owners.slots[i].key ? (const struct own *)owners.slots[i].val : NULL)
                           : &unowned;
        for (size_t j = 0; o && j < o->ndep; j++) {
            struct atl_krec gone = {.handle = o->dep[j].handle,
                                    .owner = o->owner,
                                    .name = o->dep[j].name,
                                    .launches = o->dep[j].launches,
                                    .blocks = o->dep[j].blocks};
            fn(&gone, ctx);
        }
    }
    pthread_mutex_unlock(&lock);
}

void atl_kernels_forget(void *handle)
{
    if (!handle)
        return;
    pthread_mutex_lock(&lock);
    struct atl_krec *r = atl_krec_find(handle);
    if (r)
        krec_retire(kr_of(r));
    reclaim();
    pthread_mutex_unlock(&lock);
}

void atl_kernels_forget_owner(void *owner)
{
    if (owner) {
        pthread_mutex_lock(&lock);
        struct own *o = own_of(owner, 0);
        while (o && o->head) {
            struct kr *k = o->head;
            if (!k->own_next && !o->ndep) /* the last one drops o */
                o = NULL;
            krec_retire(k);
        }
        while (unowned.head)
            krec_retire(unowned.head);
        reclaim();
        pthread_mutex_unlock(&lock);
    }
}

void atl_kernels_census(struct atl_kernels_census *c)
{
    pthread_mutex_lock(&lock);
    *c = (struct atl_kernels_census){.records = nrecords,
                                     .live = atl_fl.ktab->used,
                                     .waiting = nlimbo,
                                     .capacity = atl_fl.ktab->cap,
                                     .tables = tables_made};
    pthread_mutex_unlock(&lock);
}

/* ---- the step trace's view ------------------------------------------------------ */

/* A view and the record it is of: a step that keeps ops of the view holds
 * that record (atl_krec_of_view). */
struct kview {
    struct atl_kfn k; /* first: a view is its kview */
    struct atl_krec *rec;
};

/* A record's view when there is no record (out of memory): not kept. */
static struct kview view_unknown = {.k = {.mangled = "kernel@?", .pretty = "kernel@?"}};

struct atl_krec *atl_krec_of_view(const struct atl_kfn *k)
{
    return k ? ((const struct kview *)k)->rec : NULL;
}

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

static size_t view_bytes(const struct atl_kfn *v)
{
    if (!v || v == &view_unknown.k)
        return 0;
    return malloc_usable_size((void *)v) + malloc_usable_size((void *)v->mangled) +
           (v->pretty != v->mangled ? malloc_usable_size((void *)v->pretty) : 0) +
           malloc_usable_size((void *)v->base) + malloc_usable_size((void *)v->off) +
           malloc_usable_size((void *)v->size) + malloc_usable_size((void *)v->plan) +
           malloc_usable_size((void *)v->words);
}

static void view_free(struct atl_kfn *k)
{
    if (!k || k == &view_unknown.k)
        return;
    if (k->pretty != k->mangled)
        free((void *)k->pretty);
    free((void *)k->base), free((void *)k->mangled);
    free((void *)k->off), free((void *)k->size), free((void *)k->plan);
    free((void *)k->words), free((struct kview *)k);
}

void atl_krec_view_free(struct atl_krec *r)
{
    view_free(r->view), view_free(r->view_packed);
    r->view = r->view_packed = NULL;
}

const struct atl_kfn *atl_krec_view_make(struct atl_krec *r, size_t packed)
{
    if (!r)
        return &view_unknown.k;
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
    struct kview *kv = calloc(1, sizeof *kv);
    struct atl_kfn *k = kv ? &kv->k : NULL;
    uint32_t *o = calloc(n + 1, 4), *s = calloc(n + 1, 4);
    char *m = strdup(mangled);
    if (!k || !o || !s || !m) {
        free(kv), free(o), free(s), free(m);
        atl_log_once_oom("the step trace");
        return &view_unknown.k;
    }
    kv->rec = r;
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
