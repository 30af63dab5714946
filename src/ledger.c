#include "ledger.h"

#include "events.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Live allocations in an AVL tree keyed by address: add, remove and the
 * lookup of the allocation holding an address are O(log n), and a record
 * never moves once made. A sorted array was simpler but moved the tail of
 * 264-byte records on every change: about 1.5 ms per allocation + free with
 * 100,000 allocations live (make alloc-bench), which a program without a
 * caching allocator reaches. Physical VMM allocations (cuMemCreate) have a
 * second tree, by handle; their mappings sit in the address tree.
 *
 * The tree's nodes are small (links, key, height, the record's address) and
 * come with the records from slabs of their own: with one malloc'ed node of
 * 300 bytes per allocation, spread over the program's heap between its other
 * blocks, each level of a walk was a cache and TLB miss, and a free + alloc
 * pair with 1,000,000 allocations live cost about 50 us more than with 10
 * (make alloc-bench; the instructions grew 6%). */
struct node {
    struct node *kid[2];
    uint64_t key; /* rec->ptr, or rec->handle in the handle tree */
    int height;
    struct atl_alloc_rec *rec;
};

/* Fixed-size objects carved from 2 MiB chunks, kept until exit (at most the
 * peak number of live allocations); free ones are chained through their
 * first word. Used under `lock`. */
struct slab {
    size_t size;
    void *free;
};

#define SLAB_CHUNK ((size_t)2 << 20)

/* A 2 MiB chunk on a 2 MiB boundary, so that the kernel can back it with
 * one huge page (a TLB entry for 50,000 nodes). */
static char *chunk_get(void)
{
    char *raw =
        mmap(NULL, 2 * SLAB_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *c = (char *)(((uintptr_t)raw + SLAB_CHUNK - 1) & ~(uintptr_t)(SLAB_CHUNK - 1));
    if (c > raw)
        munmap(raw, (size_t)(c - raw));
    munmap(c + SLAB_CHUNK, (size_t)(raw + SLAB_CHUNK - c));
    madvise(c, SLAB_CHUNK, MADV_HUGEPAGE); /* a hint */
    return c;
}

static void *slab_get(struct slab *s)
{
    if (!s->free) {
        char *c = chunk_get();
        if (!c)
            return NULL;
        for (size_t i = SLAB_CHUNK / s->size; i-- > 0;) {
            *(void **)(c + i * s->size) = s->free;
            s->free = c + i * s->size;
        }
    }
    void *p = s->free;
    s->free = *(void **)p;
    return p;
}

static void slab_put(struct slab *s, void *p)
{
    if (!p)
        return;
    *(void **)p = s->free;
    s->free = p;
}

int atl_ledger_on;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slab nodes = {sizeof(struct node), NULL};
static struct slab recs = {(sizeof(struct atl_alloc_rec) + 7) & ~(size_t)7, NULL};
static struct node *root;  /* by address: allocations and VMM mappings */
static struct node *hroot; /* by handle: physical VMM allocations */
static size_t nlive;
static size_t live_bytes, vmm_bytes;
static uint64_t seq;

/* A mapping is where an allocation is, not one more allocation. */
static int counted(const struct atl_alloc_rec *r)
{
    return r->kind != ATL_ALLOC_VMM_MAP;
}

uint64_t atl_ledger_next_seq(void)
{
    return __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
}

uint64_t atl_ledger_seq_peek(void)
{
    return __atomic_load_n(&seq, __ATOMIC_RELAXED) + 1;
}

/* Bumped under `lock` at every change of the address tree. */
static uint64_t generation;

uint64_t atl_ledger_generation(void)
{
    return __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
}

/* The freed history: a ring, under its own lock (the ledger's is held for
 * the tree only). An entry is a record and the stack of its free: about 470
 * bytes, 470 KiB in all, allocated at the first free once asked for. */
static int freed_depth = -1; /* -1: not kept */
static pthread_mutex_t freed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct freed {
    struct atl_alloc_rec rec;
    struct atl_stack where;
} * freed;
static size_t freed_next;

void atl_ledger_keep_freed(int depth)
{
    __atomic_store_n(&freed_depth, depth < 0 ? 0 : depth, __ATOMIC_RELAXED);
}

static void note_freed(const struct atl_alloc_rec *r)
{
    struct atl_stack where;
    atl_stack_capture_n(&where, __atomic_load_n(&freed_depth, __ATOMIC_RELAXED));
    pthread_mutex_lock(&freed_lock);
    if (!freed)
        freed = calloc(ATL_LEDGER_FREED, sizeof *freed);
    if (freed) {
        freed[freed_next % ATL_LEDGER_FREED] = (struct freed){*r, where};
        freed_next++;
    }
    pthread_mutex_unlock(&freed_lock);
}

int atl_ledger_freed(uint64_t n, struct atl_alloc_rec *out, struct atl_stack *where)
{
    int found = 0;
    pthread_mutex_lock(&freed_lock);
    /* newest first: a number is freed once */
    for (size_t i = 0; freed && i < ATL_LEDGER_FREED && i < freed_next && !found; i++) {
        const struct freed *f = &freed[(freed_next - 1 - i) % ATL_LEDGER_FREED];
        if (f->rec.seq == n) {
            *out = f->rec;
            if (where)
                *where = f->where;
            found = 1;
        }
    }
    pthread_mutex_unlock(&freed_lock);
    return found;
}

static int height(const struct node *n)
{
    return n ? n->height : 0;
}

static void fix_height(struct node *n)
{
    int a = height(n->kid[0]), b = height(n->kid[1]);
    n->height = (a > b ? a : b) + 1;
}

/* Rotates n's child on side `d` up into n's place. */
static struct node *rotate(struct node *n, int d)
{
    struct node *up = n->kid[d];
    n->kid[d] = up->kid[!d];
    up->kid[!d] = n;
    fix_height(n);
    fix_height(up);
    return up;
}

static struct node *balance(struct node *n)
{
    fix_height(n);
    int skew = height(n->kid[1]) - height(n->kid[0]);
    if (skew < -1 || skew > 1) {
        int d = skew > 0; /* the heavy side */
        struct node *k = n->kid[d];
        if (height(k->kid[!d]) > height(k->kid[d]))
            n->kid[d] = rotate(k, !d);
        n = rotate(n, d);
    }
    return n;
}

/* n's child on side d, `before` high, became `kid`. When the height did not
 * change, neither did n's height or balance: the walk back up stops reading
 * the siblings' heights (a cache miss per level with a million nodes). */
static struct node *settle(struct node *n, int d, int before, struct node *kid)
{
    n->kid[d] = kid;
    return height(kid) == before ? n : balance(n);
}

/* Inserts `nn` (or, when its key is already live, overwrites that record
 * and copies the record it had into *old). */
static struct node *insert(struct node *n, struct node *nn, struct atl_alloc_rec *old,
                           int *replaced)
{
    if (!n)
        return nn;
    if (nn->key == n->key) {
        *old = *n->rec;
        *replaced = 1;
        *n->rec = *nn->rec;
        return n;
    }
    int d = nn->key > n->key;
    int before = height(n->kid[d]);
    return settle(n, d, before, insert(n->kid[d], nn, old, replaced));
}

/* Unlinks the smallest node under n into *min. */
static struct node *take_min(struct node *n, struct node **min)
{
    if (!n->kid[0]) {
        *min = n;
        return n->kid[1];
    }
    int before = height(n->kid[0]);
    return settle(n, 0, before, take_min(n->kid[0], min));
}

/* Unlinks the node with key `ptr` into *gone, if it is a mapping record
 * when `map` is set, an allocation's when not. */
static struct node *erase(struct node *n, uint64_t ptr, int map, struct node **gone)
{
    if (!n)
        return NULL;
    if (ptr != n->key) {
        int d = ptr > n->key;
        int before = height(n->kid[d]);
        return settle(n, d, before, erase(n->kid[d], ptr, map, gone));
    }
    if (counted(n->rec) == map)
        return n;
    *gone = n;
    if (!n->kid[0] || !n->kid[1])
        return n->kid[0] ? n->kid[0] : n->kid[1];
    struct node *m;
    struct node *right = take_min(n->kid[1], &m);
    m->kid[0] = n->kid[0];
    m->kid[1] = right;
    return balance(m);
}

static void account(const struct atl_alloc_rec *r, int sign)
{
    if (!counted(r))
        return;
    nlive += (size_t)sign;
    live_bytes += (size_t)sign * r->bytes;
    if (r->kind == ATL_ALLOC_VMM)
        vmm_bytes += (size_t)sign * r->bytes;
}

static void node_put(struct node *n)
{
    if (!n)
        return;
    slab_put(&recs, n->rec);
    slab_put(&nodes, n);
}

static int add_to(struct node **tree, uint64_t key, const struct atl_alloc_rec *r)
{
    pthread_mutex_lock(&lock);
    struct node *nn = slab_get(&nodes);
    struct atl_alloc_rec *rec = nn ? slab_get(&recs) : NULL;
    if (!rec) {
        slab_put(&nodes, nn);
        pthread_mutex_unlock(&lock);
        return -1;
    }
    *rec = *r;
    nn->rec = rec;
    nn->key = key;
    nn->kid[0] = nn->kid[1] = NULL;
    nn->height = 1;
    struct atl_alloc_rec old;
    int replaced = 0;
    /* an address (handle) we think is live handed out again: the free went
     * past us (a path we do not hook); the new record wins */
    *tree = insert(*tree, nn, &old, &replaced);
    if (replaced) {
        account(&old, -1);
        node_put(nn);
    }
    account(r, 1);
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
    return 0;
}

int atl_ledger_add(const struct atl_alloc_rec *r)
{
    return add_to(&root, r->ptr, r);
}

int atl_ledger_add_handle(const struct atl_alloc_rec *r)
{
    return add_to(&hroot, r->handle, r);
}

static const struct node *exact(const struct node *n, uint64_t key)
{
    while (n && n->key != key)
        n = n->kid[key > n->key];
    return n;
}

static int remove_from(struct node **tree, uint64_t key, struct atl_alloc_rec *out)
{
    struct node *gone = NULL;
    pthread_mutex_lock(&lock);
    /* a free of a mapped address is not a free of the mapping's allocation */
    *tree = erase(*tree, key, 0, &gone);
    if (gone) {
        if (out)
            *out = *gone->rec;
        account(gone->rec, -1);
        node_put(gone);
        __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
    return gone != NULL;
}

int atl_ledger_remove(CUdeviceptr ptr, struct atl_alloc_rec *out)
{
    if (__atomic_load_n(&freed_depth, __ATOMIC_RELAXED) < 0)
        return remove_from(&root, ptr, out);
    struct atl_alloc_rec r;
    int gone = remove_from(&root, ptr, &r);
    if (gone) {
        note_freed(&r);
        if (out)
            *out = r;
    }
    return gone;
}

int atl_ledger_remove_handle(uint64_t handle, struct atl_alloc_rec *out)
{
    return remove_from(&hroot, handle, out);
}

int atl_ledger_map(CUdeviceptr va, size_t bytes, uint64_t handle)
{
    struct atl_alloc_rec m;
    pthread_mutex_lock(&lock);
    const struct node *h = exact(hroot, handle);
    if (h)
        m = *h->rec;
    pthread_mutex_unlock(&lock);
    if (!h)
        return 0;
    m.kind = ATL_ALLOC_VMM_MAP;
    m.ptr = va;
    m.bytes = m.padded = bytes;
    return add_to(&root, va, &m) == 0 ? 1 : -1;
}

/* The record with the smallest key at or above lo, or NULL. */
static const struct node *lower_bound(const struct node *n, uint64_t lo)
{
    const struct node *best = NULL;
    while (n) {
        if (n->key >= lo) {
            best = n;
            n = n->kid[0];
        } else {
            n = n->kid[1];
        }
    }
    return best;
}

size_t atl_ledger_unmap(CUdeviceptr va, size_t bytes)
{
    size_t k = 0;
    uint64_t hi = va + bytes < va ? UINT64_MAX : va + bytes;
    pthread_mutex_lock(&lock);
    for (const struct node *n; (n = lower_bound(root, va)) != NULL && n->key < hi;) {
        va = n->key + 1; /* in address order, past the records that stay */
        if (counted(n->rec))
            continue;
        struct node *gone = NULL;
        root = erase(root, n->key, 1, &gone);
        node_put(gone);
        k++;
        __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
    return k;
}

const char *atl_ledger_where(const struct atl_alloc_rec *r, char *buf, size_t n)
{
    if (r->kind == ATL_ALLOC_VMM)
        snprintf(buf, n, "through cuMemCreate (handle 0x%llx)", (unsigned long long)r->handle);
    else
        snprintf(buf, n, "at 0x%llx", (unsigned long long)r->ptr);
    return buf;
}

/* The record whose [ptr, ptr+atl_alloc_span) holds addr, or NULL; with the
 * lock. */
static const struct atl_alloc_rec *holding_locked(CUdeviceptr addr)
{
    const struct node *best = NULL; /* the last record starting at or below addr */
    for (const struct node *n = root; n;) {
        if (n->key <= addr) {
            best = n;
            n = n->kid[1];
        } else {
            n = n->kid[0];
        }
    }
    if (!best)
        return NULL;
    const struct atl_alloc_rec *r = best->rec;
    return addr - r->ptr < atl_alloc_span(r) ? r : NULL;
}

int atl_ledger_find(CUdeviceptr addr, struct atl_alloc_rec *out)
{
    pthread_mutex_lock(&lock);
    const struct atl_alloc_rec *r = holding_locked(addr);
    if (r && out)
        *out = *r;
    pthread_mutex_unlock(&lock);
    return r != NULL;
}

int atl_ledger_find_guarded(CUdeviceptr addr, CUdeviceptr *base, uint64_t *number)
{
    pthread_mutex_lock(&lock);
    const struct atl_alloc_rec *r = holding_locked(addr);
    int found = r && r->guarded;
    if (found) {
        *base = r->ptr;
        *number = r->seq;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

int atl_ledger_find_base(CUdeviceptr addr, CUdeviceptr *base, size_t *span, uint64_t *number)
{
    pthread_mutex_lock(&lock);
    const struct atl_alloc_rec *r = holding_locked(addr);
    if (r) {
        *base = r->ptr;
        *span = atl_alloc_span(r);
        *number = r->seq;
    }
    pthread_mutex_unlock(&lock);
    return r != NULL;
}

size_t atl_ledger_count(size_t *bytes)
{
    pthread_mutex_lock(&lock);
    size_t n = nlive;
    if (bytes)
        *bytes = live_bytes;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t atl_ledger_vmm_bytes(void)
{
    pthread_mutex_lock(&lock);
    size_t b = vmm_bytes;
    pthread_mutex_unlock(&lock);
    return b;
}

/* In key order, without recursion deeper than the tree (about 1.44
 * log2 n: 29 levels for a million records). */
static void walk(const struct node *n, struct atl_alloc_rec *out, size_t max, size_t *k)
{
    while (n && *k < max) {
        walk(n->kid[0], out, max, k);
        if (*k < max && counted(n->rec))
            out[(*k)++] = *n->rec;
        n = n->kid[1];
    }
}

size_t atl_ledger_snapshot(struct atl_alloc_rec *out, size_t max)
{
    size_t k = 0;
    pthread_mutex_lock(&lock);
    walk(root, out, max, &k);
    walk(hroot, out, max, &k);
    pthread_mutex_unlock(&lock);
    return k;
}

static void drop(struct node *n)
{
    while (n) {
        drop(n->kid[0]);
        struct node *r = n->kid[1];
        node_put(n);
        n = r;
    }
}

void atl_ledger_reset(void)
{
    pthread_mutex_lock(&lock);
    drop(root);
    drop(hroot);
    root = hroot = NULL;
    nlive = 0;
    live_bytes = vmm_bytes = 0;
    seq = 0;
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
    pthread_mutex_lock(&freed_lock);
    freed_next = 0;
    pthread_mutex_unlock(&freed_lock);
}
