/*
 * The step trace's per-thread buffers and its memory budget (see
 * tracebuf.h): each thread records its ops into a buffer of its own,
 * under the buffer's own spin lock (uncontended: its thread takes it once
 * per op, a step end once per step); the step end takes the arrays over.
 * Buffers grow by doubling, so there is no allocation per op; what they
 * hold, and what the last step end kept, is counted against
 * ATLAS_TRACE_MAX_MB when a buffer grows. A buffer recording against a
 * reference (tracebuf.h) keeps only the ops that differ from it.
 */
#include "tracebuf.h"

#include "chrome.h"
#include "config.h"
#include "hint.h"
#include "kernels.h"
#include "log.h"
#include "services.h"
#include "thread.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Every thread's buffer (tracebuf.h: atl_tbuf_first), and the capture's. */
static struct tbuf *list;
extern struct tbuf *const atl_tbuf_head __attribute__((alias("list")));
static struct tbuf capture;

struct tbuf *atl_tbuf_capture(void)
{
    return &capture;
}

int atl_tbuf_lock_step(struct tbuf *b)
{
    if (!atl_exiting()) {
        atl_tbuf_lock(b);
        return 0;
    }
    for (unsigned n = 1;; n++) {
        if (!__atomic_exchange_n(&b->busy, 1, __ATOMIC_ACQUIRE))
            return 0;
        if (n % 1024 == 0 && atl_exit_past_deadline())
            return -1;
        atl_cpu_relax();
    }
}

static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;

/* Programs that start a thread per step (or per request) must not grow the
 * list without bound: an exited thread's buffer, with whatever ops it still
 * holds for the current step, passes to the next new thread. */
static void tbuf_release(void *p)
{
    /* what its thread left unsynchronised goes to whichever step ends next */
    __atomic_store_n(&((struct tbuf *)p)->owner, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&((struct tbuf *)p)->free_, 1, __ATOMIC_RELEASE);
}

struct tbuf *atl_tbuf_new(void)
{
    struct tbuf *b;
    for (b = atl_tbuf_first(); b; b = atl_tbuf_next(b)) {
        int one = 1;
        if (__atomic_compare_exchange_n(&b->free_, &one, 0, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            __atomic_store_n(&b->owner, 0, __ATOMIC_RELAXED); /* a new thread: not yet */
            atl_thr.trace_buf = b;
            pthread_setspecific(exit_key, b);
            return b;
        }
    }
    b = calloc(1, sizeof *b);
    if (!b) {
        atl_log_once_oom("the step trace");
        return NULL;
    }
    pthread_mutex_lock(&threads_mu);
    /* appended at the tail: step merges walk threads in the order they
     * first enqueued, which keeps merged steps stable from step to step */
    static unsigned nmade;
    b->idx = ++nmade;
    struct tbuf **pp = &list;
    while (*pp)
        pp = &(*pp)->next;
    __atomic_store_n(pp, b, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&threads_mu);
    atl_thr.trace_buf = b;
    pthread_setspecific(exit_key, b);
    return b;
}

/* ATLAS_TRACE_MAX_MB: the memory the trace may hold. Counted when a buffer
 * grows (rare: they double), so recording an op costs nothing more: every
 * thread's buffers, plus what the last step end kept (the previous step of
 * each name and the spare arrays; `kept`, written under the step ends' lock). */
static size_t max_bytes;
static size_t kept;

void atl_tbuf_init(size_t bytes)
{
    max_bytes = bytes;
    pthread_key_create(&exit_key, tbuf_release);
}

void atl_tbuf_set_kept(size_t bytes)
{
    __atomic_store_n(&kept, bytes, __ATOMIC_RELAXED);
}

void atl_tbuf_held_note(struct tbuf *b)
{
    __atomic_store_n(&b->held,
                     b->cap * sizeof *b->ops + b->capbytes + b->tscap * sizeof *b->ts +
                         b->ridxcap * sizeof *b->ridx,
                     __ATOMIC_RELAXED);
}

/* What atl_grow would add to an array of `cap` elements to hold `need`. */
static size_t grow_adds(size_t cap, size_t need, size_t elem, size_t first)
{
    if (need <= cap)
        return 0;
    size_t n = cap ? cap : first;
    while (n < need)
        n *= 2;
    return (n - cap) * elem;
}

/* What the trace holds: the buffers, the kept steps, and the records of unloaded kernels
 * that wait while ops that may point to them are held (src/kernels.h). */
static size_t budget_used(void)
{
    size_t sum = __atomic_load_n(&kept, __ATOMIC_RELAXED) +
                 __atomic_load_n(&capture.held, __ATOMIC_RELAXED) +
                 atl_krec_waiting_bytes();
    for (struct tbuf *t = atl_tbuf_first(); t; t = atl_tbuf_next(t))
        sum += __atomic_load_n(&t->held, __ATOMIC_RELAXED);
    return sum;
}

static void say_over(void)
{
    static int said;
    char set[96], mb[32];
    snprintf(mb, sizeof mb, "%llu", atl_cfg.trace_max_mb);
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        atl_log(ATL_WARN,
                "step trace: %s reached: the rest of this step is not recorded, nor of any later "
                "step that needs more (the program is not affected)",
                atl_hint_setting("ATLAS_TRACE_MAX_MB", mb, set, sizeof set));
}

/* Would `more` bytes take the trace past ATLAS_TRACE_MAX_MB? Says so once. */
static int over_budget(struct tbuf *b, size_t more)
{
    if (more + budget_used() <= max_bytes)
        return 0;
    b->oom = 3;
    say_over();
    return 1;
}

void atl_tbuf_budget_check(void)
{
    if (!max_bytes || budget_used() <= max_bytes)
        return;
    /* the ops go, and the pins they kept: the records wait no more (the capture's buffer
     * stays: its ops become the captured graph's, at the capture's end) */
    for (struct tbuf *t = atl_tbuf_first(); t; t = atl_tbuf_next(t)) {
        atl_tbuf_lock(t);
        atl_tbuf_empty(t);
        t->oom = 3;
        __atomic_store_n(&t->krec_since, 0, __ATOMIC_RELEASE);
        atl_tbuf_unlock(t);
    }
    say_over();
}

static size_t op_len(const struct atl_op *o)
{
    return o->kind == ATL_OP_LAUNCH && o->u.k.kfn ? o->u.k.kfn->total : 0;
}

/* Against a reference: records x and y are one but for their bytes' offsets. */
static inline int rec_same(const struct atl_op *x, const struct atl_op *y)
{
    if (x->kind != ATL_OP_LAUNCH)
        return memcmp(x, y, sizeof *x) == 0;
    enum { OFF = offsetof(struct atl_op, u.k.bytes), AFTER = OFF + sizeof x->u.k.bytes };
    return memcmp(x, y, OFF) == 0 &&
           memcmp((const char *)x + AFTER, (const char *)y + AFTER, sizeof *x - AFTER) == 0;
}

/* Ops the window holds (compared a window at a time: two memcmps for 256 ops, which cost
 * about what one op compared on its own did). */
#define TBUF_WINDOW 256

void atl_tbuf_compare(struct tbuf *b)
{
    const size_t n = b->nrec - b->ndiff;
    if (!b->rops || !n)
        return;
    const size_t i0 = b->nops - n;
    struct atl_op *w = &b->ops[b->ndiff];
    const size_t wb = b->nbytes - b->dbytes;
    /* every record (their offsets the reference's too) and the bytes they name, which lie
     * side by side in both: all matched, the common case */
    if (i0 + n <= b->rnops && memcmp(w, &b->rops[i0], n * sizeof *w) == 0 &&
        (wb == 0 || memcmp(b->bytes + b->dbytes, b->rbytes + b->dbytes + b->vgap, wb) == 0)) {
        b->nrec = b->ndiff;
        b->nbytes = b->dbytes;
        b->vgap += wb;
        return;
    }
    /* op by op: those that differ join the ones before them, their bytes moved down to
     * theirs (never up: what is dropped is only ever behind) */
    size_t nd = b->ndiff, db = b->dbytes;
    for (size_t j = 0; j < n; j++) {
        struct atl_op o = w[j];
        const size_t i = i0 + j, len = op_len(&o);
        const uint8_t *from = o.kind == ATL_OP_LAUNCH ? b->bytes + (o.u.k.bytes - b->vgap) : NULL;
        if (i < b->rnops && rec_same(&o, &b->rops[i]) &&
            (!len || memcmp(from, b->rbytes + b->rops[i].u.k.bytes, len) == 0))
            continue;
        if (o.kind == ATL_OP_LAUNCH) {
            if (len)
                memmove(b->bytes + db, from, len);
            o.u.k.bytes = db;
            db += len;
        }
        b->ops[nd] = o;
        b->ridx[nd++] = (uint32_t)i;
    }
    b->vgap += b->nbytes - db;
    b->ndiff = b->nrec = nd;
    b->dbytes = b->nbytes = db;
}

int atl_tbuf_materialize(struct tbuf *b)
{
    const struct atl_op *r = b->rops;
    if (!r)
        return 0;
    atl_tbuf_flush(b);
    const size_t n = b->nops, k = b->nrec;
    size_t tot = 0;
    for (size_t i = 0, j = 0; i < n; i++)
        tot += op_len(j < k && b->ridx[j] == i ? &b->ops[j++] : &r[i]);
    int rc = 0;
    if (atl_grow((void **)&b->ops, &b->cap, n, sizeof *b->ops, 4096) ||
        (tot && atl_grow((void **)&b->bytes, &b->capbytes, tot, 1, 65536))) {
        atl_tbuf_empty(b);
        b->oom = 1;
        rc = -1;
    } else {
        /* from the back: a kept op moves to its place, at or after where it is
         * (its bytes likewise), over nothing still to be moved */
        size_t end = tot, j = k;
        for (size_t i = n; i-- > 0;) {
            const int mine = j && b->ridx[j - 1] == i;
            struct atl_op o = mine ? b->ops[--j] : r[i];
            const size_t len = op_len(&o);
            end -= len;
            if (o.kind == ATL_OP_LAUNCH) {
                if (len)
                    memmove(b->bytes + end, (mine ? b->bytes : b->rbytes) + o.u.k.bytes, len);
                o.u.k.bytes = end;
            }
            b->ops[i] = o;
        }
        b->nrec = n, b->nbytes = tot;
    }
    b->ndiff = b->dbytes = b->vgap = 0;
    __atomic_store_n(&b->rops, NULL, __ATOMIC_RELAXED);
    b->rbytes = NULL, b->rnops = 0;
    free(b->ridx);
    b->ridx = NULL, b->ridxcap = 0;
    atl_tbuf_held_note(b);
    return rc;
}

const struct atl_op *atl_tbuf_op(const struct tbuf *b, size_t i)
{
    if (!b->rops)
        return &b->ops[i];
    if (b->nrec != b->ndiff)
        return NULL; /* (not flushed) */
    size_t lo = 0, hi = b->nrec;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (b->ridx[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < b->nrec && b->ridx[lo] == i ? &b->ops[lo] : &b->rops[i];
}

/* Under the buffer's lock: room for one more op, and for its Chrome time
 * when the export is on. NULL (and b->oom set) when there is none. */
static __attribute__((noinline)) struct atl_op *op_grow(struct tbuf *b)
{
    if (b->nops >= ATL_TBUF_MAX_OPS) {
        b->oom = 2;
        return NULL;
    }
    if (b->oom == 3)
        return NULL;
    /* Against a reference, most ops are expected to match it: when a quarter
     * of them so far did not (another shape, an op inserted early), the step
     * is recorded in full from here, which costs no more than comparing on. */
    atl_tbuf_flush(b);
    if (b->rops && b->nrec >= 4096 && b->nrec > b->nops / 4) {
        b->sparse_skip = ATL_SPARSE_SKIP;
        /* what writing it out adds (about: the reference's bytes stand for the step's) */
        size_t bytes = 0;
        for (size_t i = 0; i < b->nops && i < b->rnops; i++)
            bytes += op_len(&b->rops[i]);
        if (over_budget(b, (b->nops - b->nrec) * sizeof *b->ops +
                               (bytes > b->nbytes ? bytes - b->nbytes : 0)))
            return NULL;
        if (atl_tbuf_materialize(b))
            return NULL;
    }
    size_t more = grow_adds(b->cap, b->nrec + 1, sizeof *b->ops, 4096);
    if (atl_chrome_on)
        more += grow_adds(b->tscap, b->cap + more / sizeof *b->ops, sizeof *b->ts, 4096);
    if (b->rops)
        more += more / sizeof *b->ops * sizeof *b->ridx;
    if (more && over_budget(b, more))
        return NULL;
    if (atl_grow((void **)&b->ops, &b->cap, b->nrec + 1, sizeof *b->ops, 4096) ||
        (atl_chrome_on && atl_grow((void **)&b->ts, &b->tscap, b->cap, sizeof *b->ts, 4096)) ||
        (b->rops && atl_grow((void **)&b->ridx, &b->ridxcap, b->cap, sizeof *b->ridx, 4096)))
        goto oom;
    atl_tbuf_held_note(b);
    return &b->ops[b->nrec];
oom:
    atl_tbuf_held_note(b);
    if (!b->oom)
        b->oom = 1;
    return NULL;
}

static inline struct atl_op *op_take(struct tbuf *b)
{
    if (__builtin_expect(b->nrec < b->cap && (!atl_chrome_on || b->nrec < b->tscap), 1))
        return &b->ops[b->nrec];
    return op_grow(b);
}

/* Under the buffer's lock: room for n parameter bytes at b->nbytes (not
 * aligned: every read and write of them goes through memcpy); NULL (and
 * b->oom set) when out of memory. */
static __attribute__((noinline)) uint8_t *bytes_grow(struct tbuf *b, size_t n)
{
    if (b->oom == 3 || over_budget(b, grow_adds(b->capbytes, b->nbytes + n, 1, 65536)))
        return NULL;
    if (atl_grow((void **)&b->bytes, &b->capbytes, b->nbytes + n, 1, 65536)) {
        if (!b->oom)
            b->oom = 1;
        return NULL;
    }
    atl_tbuf_held_note(b);
    return b->bytes + b->nbytes;
}

static inline uint8_t *bytes_take(struct tbuf *b, size_t n)
{
    if (__builtin_expect(b->nbytes + n <= b->capbytes, 1))
        return b->bytes + b->nbytes;
    return bytes_grow(b, n);
}

/* The op is complete: count it (and its bytes), stamp its Chrome time. Against
 * a reference, a full window is compared with it. */
static inline void op_done(struct tbuf *b, uint64_t now, size_t nbytes)
{
    if (atl_chrome_on)
        b->ts[b->nrec] = now;
    const uint64_t st = b->ops[b->nrec].stream; /* just written: in cache */
    if (b->nops == 0)
        b->stream0 = st, b->multi = 0;
    else
        b->multi |= st != b->stream0;
    b->nrec++;
    /* a store other threads may read (tracestep.c's fast_step): atomic, still
     * one plain store on x86 */
    __atomic_store_n(&b->nops, b->nops + 1, __ATOMIC_RELAXED);
    b->nbytes += nbytes; /* packed: 64 bytes an op plus exactly its parameter bytes */
    if (b->rops && b->nrec - b->ndiff >= TBUF_WINDOW)
        atl_tbuf_compare(b);
}

/* Buffer `into`, locked (NULL: out of memory), and the
 * Chrome export's enqueue time: one vDSO clock read (about 20 ns), taken only
 * when the export is on. */
static inline struct tbuf *rec_begin(enum atl_tbuf_into into, uint64_t *now)
{
    *now = atl_chrome_on ? atl_chrome_now() : 0;
    struct tbuf *b = into ? &capture : atl_tbuf_get(); /* (ATL_TBUF_OWN is 0) */
    if (b)
        atl_tbuf_lock(b);
    return b;
}

void atl_tbuf_record(enum atl_tbuf_into into, const struct atl_op *o)
{
    uint64_t now;
    struct tbuf *b = rec_begin(into, &now);
    if (!b)
        return;
    struct atl_op *d = op_take(b);
    if (d) {
        *d = *o;
        op_done(b, now, 0);
    }
    atl_tbuf_unlock(b);
}

void atl_tbuf_record_launch(enum atl_tbuf_into into, const struct atl_launch *l,
                            const struct atl_kfn *k, const void *packed)
{
    uint64_t now;
    struct tbuf *b = rec_begin(into, &now);
    if (!b)
        return;
    struct atl_op *d = op_take(b);
    const unsigned total = k->total;
    /* a kernel without parameters takes no bytes (and the buffer may have
     * none yet: bytes_take would answer NULL without being out of memory) */
    uint8_t *p = d && total ? bytes_take(b, total) : NULL;
    if (!d || (total && !p))
        goto out;
    memset(d, 0, sizeof *d);
    d->kind = ATL_OP_LAUNCH;
    d->stream = (uint64_t)(uintptr_t)l->stream;
    for (int i = 0; i < 3; i++) {
        d->u.k.grid[i] = l->grid[i];
        d->u.k.block[i] = l->block[i];
    }
    if (__builtin_expect(l->cluster[0] | l->cluster[1] | l->cluster[2], 0))
        for (int i = 0; i < 3; i++)
            d->cluster[i] = (uint8_t)(l->cluster[i] > 255 ? 255 : l->cluster[i]);
    d->shmem = l->shmem;
    d->u.k.kfn = k;
    d->u.k.bytes = b->nbytes + b->vgap; /* its offset in the whole step (vgap: 0 in full mode) */
    const void *const *params = (const void *const *)l->params;
    if (!total) {
        /* nothing to copy */
    } else if (packed) {
        memcpy(p, packed, total);
    } else if (params && k->plan) {
        const struct atl_kslot *plan = k->plan;
        const unsigned n = k->nparams;
        for (unsigned i = 0; i < n; i++) {
            const struct atl_kslot *e = &plan[i];
            const void *src = params[i];
            uint8_t *dst = p + e->off;
            if (__builtin_expect(src == NULL, 0)) {
                memset(dst, 0, e->span);
                continue;
            }
            switch (e->how) {
            case ATL_SLOT_8:
                memcpy(dst, src, 8);
                break;
            case ATL_SLOT_4_IN_8: {
                uint32_t v32;
                memcpy(&v32, src, 4);
                uint64_t v = v32; /* the value, then four zero bytes (little-endian) */
                memcpy(dst, &v, 8);
                break;
            }
            case ATL_SLOT_4:
                memcpy(dst, src, 4);
                break;
            default:
                memcpy(dst, src, e->size);
                memset(dst + e->size, 0, e->span - e->size);
            }
        }
    } else if (params) {
        /* padding between parameters must read the same every step */
        if (!k->gapless)
            memset(p, 0, total);
        /* locals: the stores below may alias k as far as the compiler knows */
        const unsigned n = k->nparams;
        const uint32_t *off = k->off, *size = k->size;
        for (unsigned i = 0; i < n; i++) {
            const void *src = params[i];
            uint8_t *dst = p + off[i];
            const uint32_t sz = size[i];
            /* scalars and pointers: inline copies, no call */
            if (__builtin_expect(sz == 8 && src != NULL, 1))
                memcpy(dst, src, 8);
            else if (sz == 4 && src)
                memcpy(dst, src, 4);
            else if (src)
                memcpy(dst, src, sz);
            else
                memset(dst, 0, sz);
        }
    } else {
        memset(p, 0, total);
    }
    /* the view's record stays while the op is in the buffer: the pin this
     * thread found it under passes to the buffer (src/kernels.h) */
    const uint64_t pin = atl_krec_pin_gen(), since = b->krec_since;
    if (!since || pin < since)
        __atomic_store_n(&b->krec_since, pin, __ATOMIC_RELAXED);
    op_done(b, now, total);
out:
    atl_tbuf_unlock(b);
}
