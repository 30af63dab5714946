/*
 * Races between streams (ATLAS_RACES): kernels and their launches (src/races_internal.h says
 * how the detector is cut; docs/races.md).
 *
 * This file owns what the detector keeps of a kernel (its view on the kernel's record: the
 * parameter words to read at each launch and what the kernel does through each, the memo of
 * its last launch on a stream), the watches of what a launch writes (src/races_watch.h) that
 * turn a word's "may write" into "writes", and the marks of ops being enqueued that tell
 * whether a watch's result proves anything; and handles launches and graph launches' watches.
 */
#include "races_internal.h"

#include "capture.h"
#include "driver.h"
#include "kernels.h"
#include "log.h"
#include "races_watch.h"
#include "thread.h"
#include "tracediff.h" /* atl_hash_mix */

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Watching what a kernel writes (src/races_watch.h) */
#define RC_WATCH_MAX 4096          /* launches watched in all */
#define RC_WATCH_WAIT_US 2000      /* a launch's post waits this long for its watch */
#define RC_WATCH_BUDGET_US 3000000 /* and all of them this long in all; then no more watches */

/* A launch of a kernel with these words and the accesses they resolved to, while no allocation
 * came or went (gen == atl_rspan.gen): a loop launches a kernel on the same buffers again and
 * again, and a framework's step launches one kernel for each of its layers, each on buffers of
 * its own (a GEMM library's 64-word parameters resolved at every launch cost about 3,000
 * instructions more than a memo's hit: make races-bench, `layers`). RC_MEMO per kernel, found by
 * the words' hash; the least recently used one goes. */
#define RC_MEMO 8        /* ways per kernel */
#define RC_MEMO_WORDS 64 /* words of a launch a memo holds at most */
struct rmemo {
    uint64_t *v;
    struct racc_op *acc;
    unsigned n, cap; /* accesses in acc, and room */
    uint64_t gen;    /* 0: none */
    uint64_t h;      /* the words' hash */
    uint64_t used;   /* the kernel's launch count when last found */
    /* where the accesses were last checked: that stream at that epoch
     * (clock, ver); the same accesses there again check nothing new */
    int u;
    uint64_t clock, ver;
};

/* A kernel as the detector sees it: its view on the kernel's record (struct atl_krec's races),
 * made at its first launch, freed with the record (a handle a module unload gives to another
 * kernel gets a record, and so a view, of its own). */
struct rkern {
    const char *name;
    int exact; /* the driver gave the layout (n may then be 0) */
    unsigned n;
    uint32_t *off, *size;
    unsigned char *cls;
    struct rword *words;
    unsigned nwords;
    struct rmemo memo[RC_MEMO]; /* by the words' hash */
    uint64_t launches;          /* for the memos' recency */
    unsigned char last[4];      /* by stream slot, the memo found or made last there: a loop's
                                 * launch looks there first */
};

/* A launch being watched: the kernel (its handle, in its unload generation) and the words
 * whose regions are watched. */
struct rwatch {
    int used, running; /* running: its launch was made and the result not yet read */
    int waiting;       /* its launch's post is waiting for the result (atl_rk_poll leaves it) */
    /* the watched stream (enq_key); an op begun on another while running taints it: its
     * result proves nothing (atomic) */
    uintptr_t key;
    int tainted;
    struct atl_watch *w;
    struct atl_krec *rec; /* the watched kernel's record, held (atl_krec_hold) till released */
    CUgraphExec exec;     /* a graph launch's: word[] are indices of the graph's accesses */
    uint64_t seq, starts; /* the launch's number; the ops begun when it began */
    unsigned n;
    uint16_t word[ATL_WATCH_REGIONS];
    unsigned char contested[ATL_WATCH_REGIONS];
    struct atl_wregion r[ATL_WATCH_REGIONS];
};

/* Watches in use (src/races_internal.h: ops look at them when any is). */
unsigned atl_rk_nwp;

static struct {
    /* Ops being enqueued and ops begun, by every thread (atomic): a watch counts only when
     * its launch was the one op being enqueued when it began and no other began until its
     * result was read. */
    int enq_inflight;
    uint64_t enq_starts;
    int watch_off; /* no more watches: RC_WATCH_MAX or RC_WATCH_BUDGET_US reached (atomic) */
    int nrunning;  /* watches running (atomic): ops begun look at them */
    struct rwatch wp[ATL_WATCH_SLOTS];
    uint64_t watched, watch_wait_us, words_seen, words_unseen;
    int said_layout;
} rk;

/* ---- a kernel's view ------------------------------------------------------------------ */

/* The 8-byte words of a kernel's parameters to look at on each launch, and
 * what the kernel does through each, worked out once per kernel. */
static int kern_words(struct rkern *k)
{
    unsigned n = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned j = 0; j < k->n; j++) {
            int c = k->cls[j];
            if (c == ATL_RP_SKIP)
                continue;
            for (uint32_t w = 0; w + 8 <= k->size[j]; w += 8, n++) {
                if (!pass)
                    continue;
                uint8_t mode = c == ATL_RP_READ                 ? RC_READ
                               : c == ATL_RP_OPERANDS && w == 0 ? RC_WRITE
                               : c == ATL_RP_OPERANDS           ? RC_READ
                                                                : RC_MAYWRITE;
                k->words[n] = (struct rword){.param = j, .off = w, .mode = mode};
            }
        }
        if (!pass) {
            k->words = n ? malloc(n * sizeof *k->words) : NULL;
            if (n && !k->words)
                return -1;
            k->nwords = n;
            n = 0;
        }
    }
    return 0;
}

void atl_rk_free(void *p)
{
    struct rkern *k = p;
    free(k->off), free(k->size), free(k->cls), free(k->words);
    for (int i = 0; i < RC_MEMO; i++)
        free(k->memo[i].v), free(k->memo[i].acc);
    free(k);
}

/* Under the lock: the detector's view of a launch's kernel (its record's `races`), made at the
 * kernel's first launch, and made again once the driver gives a layout it refused before.
 * NULL: no record (out of memory). */
static struct rkern *kern_of(const struct atl_launch *l)
{
    struct atl_krec *r = l->rec;
    if (!r)
        return NULL;
    struct rkern *k = r->races;
    if (k && k->exact)
        return k; /* a loop launches one kernel again and again */
    const int exact = atl_krec_exact(r);
    if (k && !exact)
        return k;
    unsigned n = exact ? r->nparams : 0;
    if (!k) {
        if (!(k = calloc(1, sizeof *k))) {
            atl_rc_oom();
            return NULL;
        }
        r->races = k;
    }
    free(k->off), free(k->size), free(k->cls), free(k->words);
    k->off = k->size = NULL, k->cls = NULL, k->words = NULL;
    k->n = k->nwords = 0;
    for (int i = 0; i < RC_MEMO; i++) {
        free(k->memo[i].v), free(k->memo[i].acc);
        k->memo[i] = (struct rmemo){.u = -1};
    }
    k->exact = exact;
    const char *m = atl_krec_mangled(r);
    /* interned by kernels.c, kept for the process: accesses name it, and a race is told
     * by it, so a kernel loaded again is the same kernel (a copy per load made every
     * reload's race a new one, and grew with the reloads: issue #48) */
    k->name = m;
    if (n) {
        k->off = malloc(n * sizeof *k->off);
        k->size = malloc(n * sizeof *k->size);
        k->cls = malloc(n);
        if (!k->off || !k->size || !k->cls) {
            atl_rc_oom();
            return NULL;
        }
        memcpy(k->off, r->off, n * sizeof *k->off);
        memcpy(k->size, r->size, n * sizeof *k->size);
        char *dem = atl_demangle_dup(m);
        atl_races_param_classes(dem, n, k->cls);
        free(dem);
        k->n = n;
        if (kern_words(k) != 0) {
            atl_rc_oom();
            return NULL;
        }
    }
    return k;
}

/* The allocations a launch's parameters point into: the memo of an earlier
 * launch of the kernel with the same words when no allocation came or went
 * since, else resolved (and kept as a memo, in place of the least recently
 * used one). Returns the memo, or NULL. */
static struct rmemo *launch_words(struct rkern *k, const void *const *params, unsigned u,
                                  struct rop *op)
{
    unsigned nv = k->nwords <= RC_MEMO_WORDS ? k->nwords : 0;
    k->launches++;
    unsigned char *last = &k->last[u % sizeof k->last];
    struct rmemo *m = &k->memo[*last];
    if (nv && m->gen == atl_rspan.gen && m->gen) {
        /* a loop: the words of the stream's last launch of the kernel, read in place */
        unsigned i = 0;
        for (; i < nv; i++) {
            const unsigned char *p = params[k->words[i].param];
            uint64_t x = 0;
            if (p)
                memcpy(&x, p + k->words[i].off, 8);
            if (x != m->v[i])
                break;
        }
        if (i == nv) {
            m->used = k->launches;
            op->accp = m->acc;
            op->n = m->n;
            return m;
        }
    }
    m = NULL;
    uint64_t v[RC_MEMO_WORDS], h = 0;
    for (unsigned i = 0; i < nv; i++) {
        const unsigned char *p = params[k->words[i].param];
        v[i] = 0;
        if (p)
            memcpy(&v[i], p + k->words[i].off, 8);
        h = atl_hash_mix(h, v[i]);
    }
    if (nv && atl_rspan.gen) {
        struct rmemo *old = &k->memo[0];
        for (unsigned j = 0, i = *last; j < RC_MEMO; j++, i = i + 1 == RC_MEMO ? 0 : i + 1) {
            struct rmemo *x = &k->memo[i];
            if (x->gen == atl_rspan.gen && x->h == h && !memcmp(x->v, v, nv * sizeof *v)) {
                x->used = k->launches;
                *last = (unsigned char)i;
                op->accp = x->acc;
                op->n = x->n;
                return x;
            }
            /* the one to replace: one of another allocation set, else the least recently used */
            if (x->gen != atl_rspan.gen ? old->gen == atl_rspan.gen || x->used < old->used
                                        : old->gen == atl_rspan.gen && x->used < old->used)
                old = x;
        }
        m = old;
    }
    for (unsigned i = 0; i < k->nwords; i++) {
        const struct rword *w = &k->words[i];
        uint64_t x;
        if (i < nv) {
            x = v[i];
        } else {
            const unsigned char *p = params[w->param];
            if (!p)
                continue;
            memcpy(&x, p + w->off, 8);
        }
        if (rspan_has(x)) /* most words are no address at all */
            atl_racc_word(op, x, w);
    }
    if (!m || atl_rc.dead)
        return NULL;
    if (!m->v && !(m->v = malloc(RC_MEMO_WORDS * sizeof *m->v)))
        return NULL; /* no memo: resolved every time */
    if (op->n > m->cap) {
        struct racc_op *a = realloc(m->acc, op->n * sizeof *a);
        if (!a) {
            m->gen = 0;
            return NULL;
        }
        m->acc = a, m->cap = op->n;
    }
    memcpy(m->v, v, nv * sizeof *v);
    if (op->n)
        memcpy(m->acc, op->acc, op->n * sizeof *op->acc);
    m->n = op->n;
    m->h = h;
    m->gen = atl_rspan.gen;
    m->used = k->launches;
    m->u = -1;
    *last = (unsigned char)(m - k->memo);
    return m;
}

/* The 8-byte words of bytes p[0..size) (a by-value blob) that point into an
 * allocation: each may write there. */
static void scan_blob(struct rop *op, const unsigned char *p, size_t size)
{
    for (size_t w = 0; w + 8 <= size; w += 8) {
        uint64_t v;
        memcpy(&v, p + w, 8);
        atl_racc_pointer(op, v, RC_MAYWRITE, 0);
    }
}

/* ---- watching what a kernel writes (src/races_watch.h) ----------------------------- */

/* A stream as the watches compare them: the legacy stream 1, a thread's per-thread default
 * stream its thread (odd: never a handle), else the handle. */
static uintptr_t enq_key(CUstream s, int hook)
{
    if (s == CU_STREAM_PER_THREAD || (s == NULL && (atl_hook_flags[hook] & ATL_F_PT)))
        return (uintptr_t)pthread_self() | 3;
    if (s == NULL || s == CU_STREAM_LEGACY)
        return 1;
    return (uintptr_t)s;
}

/* An op is begun on stream s: counted; a running watch of another stream is tainted. Returns
 * whether another op was being enqueued. */
static int enq_begin(CUstream s, int hook)
{
    atl_thr.races_enq = 1;
    int others = __atomic_add_fetch(&rk.enq_inflight, 1, __ATOMIC_ACQ_REL) != 1;
    atl_thr.races_starts = __atomic_add_fetch(&rk.enq_starts, 1, __ATOMIC_ACQ_REL);
    if (__atomic_load_n(&rk.nrunning, __ATOMIC_ACQUIRE) > 0) {
        uintptr_t key = enq_key(s, hook);
        for (int i = 0; i < ATL_WATCH_SLOTS; i++)
            if (__atomic_load_n(&rk.wp[i].running, __ATOMIC_ACQUIRE) &&
                __atomic_load_n(&rk.wp[i].key, __ATOMIC_RELAXED) != key)
                __atomic_store_n(&rk.wp[i].tainted, 1, __ATOMIC_RELEASE);
    }
    return others;
}

void atl_races_enq(int begin, CUstream s, int hook)
{
    if (begin) {
        enq_begin(s, hook);
    } else if (atl_thr.races_enq) {
        atl_thr.races_enq = 0;
        __atomic_sub_fetch(&rk.enq_inflight, 1, __ATOMIC_ACQ_REL);
    }
}

/* Word w of a launch's parameters; 0 when out of reach. */
static uint64_t word_value(const struct rkern *k, const struct rword *w, const void *const *params,
                           const unsigned char *packed, size_t psize)
{
    uint64_t v = 0;
    if (params) {
        const unsigned char *p = params[w->param];
        if (p)
            memcpy(&v, p + w->off, 8);
    } else if (packed && k->off[w->param] + (size_t)w->off + 8 <= psize) {
        memcpy(&v, packed + k->off[w->param] + w->off, 8);
    }
    return v;
}

/* Under the lock: the watch runs (its launch made); ops begun on other streams taint it. */
static void watch_run(struct rwatch *wp)
{
    if (wp->running)
        return;
    wp->tainted = 0;
    __atomic_store_n(&wp->running, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&rk.nrunning, 1, __ATOMIC_ACQ_REL);
}

static void watch_release(struct rwatch *wp)
{
    if (wp->running)
        __atomic_sub_fetch(&rk.nrunning, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&wp->running, 0, __ATOMIC_RELEASE);
    wp->used = wp->waiting = 0;
    wp->w = NULL;
    if (wp->rec)
        atl_krec_release(wp->rec);
    wp->rec = NULL;
    atl_rk_nwp--;
}

/* Under the lock: what a watch saw, into its kernel's words. clean: no other op was begun
 * from its launch's start to its result. A change seen makes the word write, from then on;
 * none (or a result that proves nothing) is a try. */
static void watch_apply_graph(struct rwatch *wp, const struct atl_wregion *out, int clean);

static void watch_apply(struct rwatch *wp, const struct atl_wregion *out, int clean)
{
    rk.watched++;
    if (wp->exec) {
        watch_apply_graph(wp, out, clean);
        return;
    }
    /* the record is held while the watch is: its view is there, unloaded or not */
    struct rkern *k = wp->rec ? wp->rec->races : NULL;
    if (!k)
        return;
    int changed = 0;
    for (unsigned i = 0; i < wp->n; i++) {
        if (wp->word[i] >= k->nwords)
            continue;
        struct rword *w = &k->words[wp->word[i]];
        if (w->mode != RC_MAYWRITE)
            continue;
        if (clean && !wp->contested[i] && out[i].lo < out[i].hi) {
            w->mode = RC_WRITE, w->seen = wp->seq, w->clo = out[i].lo, w->chi = out[i].hi;
            rk.words_seen++;
            changed = 1;
        } else if (++w->tries == RC_WATCH_TRIES) {
            rk.words_unseen++;
        }
    }
    if (changed) /* the memos hold the accesses' modes */
        for (int i = 0; i < RC_MEMO; i++)
            k->memo[i].gen = 0;
}

/* The same for a graph launch: the graph's kernel accesses that may write. */
static void watch_apply_graph(struct rwatch *wp, const struct atl_wregion *out, int clean)
{
    struct rgraph *g = atl_racc_exec(wp->exec);
    for (unsigned i = 0; g && i < wp->n; i++) {
        if (wp->word[i] >= g->n)
            continue;
        struct rgacc *a = &g->a[wp->word[i]];
        if (a->mode != RC_MAYWRITE || a->anchor != wp->r[i].dptr)
            continue;
        if (clean && !wp->contested[i] && out[i].lo < out[i].hi) {
            a->mode = RC_WRITE, a->seen = 1, a->clo = out[i].lo, a->chi = out[i].hi;
            rk.words_seen++;
        } else if (++a->tries == RC_WATCH_TRIES) {
            rk.words_unseen++;
        }
    }
}

/* Under the lock: watches whose result was not read at their launch, read when done. */
void atl_rk_poll(unsigned wait_us)
{
    if (atl_capture_forbids_sync())
        return; /* an event query is refused during a global capture */
    for (int i = 0; i < ATL_WATCH_SLOTS && atl_rk_nwp; i++) {
        struct rwatch *wp = &rk.wp[i];
        if (!wp->used || !wp->running || wp->waiting)
            continue;
        struct atl_wregion out[ATL_WATCH_REGIONS];
        int res = atl_watch_result(wp->w, wait_us, out, wp->n);
        if (res == 0)
            continue;
        if (res == 1) /* clean: no op begun on another stream since the launch */
            watch_apply(wp, out, !__atomic_load_n(&wp->tainted, __ATOMIC_ACQUIRE));
        else
            rk.watched++;
        watch_release(wp);
    }
}

void atl_races_teardown(void)
{
    if (lock() != 0)
        return;
    if (atl_rk_nwp)
        atl_rk_poll(100000);
    for (int i = 0; i < ATL_WATCH_SLOTS; i++)
        if (rk.wp[i].used && rk.wp[i].running)
            watch_release(&rk.wp[i]);
    pthread_mutex_unlock(&atl_rc.mu);
    atl_watch_reset();
}

/* Under the lock: a watch slot not in use, or NULL. */
static struct rwatch *watch_slot(void)
{
    for (int i = 0; i < ATL_WATCH_SLOTS; i++)
        if (!rk.wp[i].used)
            return &rk.wp[i];
    return NULL;
}

/* The bytes a region watched from v in a (total bytes already taken by the watch) covers. */
static uint64_t region_len(const struct ralloc *a, uint64_t v, size_t total)
{
    uint64_t len = a->base + a->span - v;
    if (len > ATL_WATCH_REGION)
        len = ATL_WATCH_REGION;
    if (len > ATL_WATCH_BYTES - total)
        len = ATL_WATCH_BYTES - total;
    return len;
}

/* Under the lock, which it releases: wp (its kernel's or graph's fields set by the caller)
 * takes regions r[0..n) of a launch on stream s through hook, and its first copies are
 * enqueued; the launch's post finds it through this thread. n 0: nothing to watch. */
static void watch_start(struct rwatch *wp, const struct atl_wregion *r, unsigned n, CUstream s,
                        int hook)
{
    if (n) {
        wp->used = 1, wp->running = 0;
        atl_rk_nwp++;
        wp->key = enq_key(s, hook);
        wp->starts = atl_thr.races_starts;
        wp->n = n;
        memcpy(wp->r, r, n * sizeof *r);
    }
    pthread_mutex_unlock(&atl_rc.mu);
    if (!n)
        return;
    wp->w = atl_watch_begin(atl_own_stream(s, hook), r, n);
    if (!wp->w) {
        if (lock() == 0) {
            watch_release(wp);
            pthread_mutex_unlock(&atl_rc.mu);
        }
        return;
    }
    atl_thr.races_watch = (int)(wp - rk.wp) + 1;
}

/* Before a launch: the first launches of a kernel with parameters that may write, each of
 * whose pointers reaches an allocation, are watched (src/races_watch.h), until a write is
 * seen through each or RC_WATCH_TRIES were not. Only when this launch is the one op being
 * enqueued, and no capture could see the watch's copies or forbids its event query. */
void atl_races_launch_pre(const struct atl_launch *l)
{
    atl_thr.races_watch = 0;
    int others = enq_begin(l->stream, l->hook);
    if (others || __atomic_load_n(&rk.watch_off, __ATOMIC_RELAXED) || !l->func ||
        (l->rec && __atomic_load_n(&l->rec->races_quiet, __ATOMIC_RELAXED)) || atl_capture_any() ||
        atl_capture_forbids_sync())
        return;
    const unsigned char *packed = l->packed;
    size_t psize = l->packed_size;
    const void *const *params = (const void *const *)l->params;
    if (!params && !packed)
        return;
    if (lock() != 0)
        return;
    struct rkern *k = kern_of(l);
    int u = stream_slot(l->stream, l->hook);
    struct rwatch *wp = u >= 0 ? watch_slot() : NULL;
    unsigned n = 0, left = 0;
    size_t total = 0;
    struct atl_wregion r[ATL_WATCH_REGIONS];
    for (unsigned i = 0; k && i < k->nwords; i++) {
        struct rword *w = &k->words[i];
        if (w->mode != RC_MAYWRITE || w->tries >= RC_WATCH_TRIES || w->misses >= RC_WATCH_TRIES)
            continue;
        /* a word that points into no allocation at RC_WATCH_TRIES launches in a row is no
         * pointer (a size or a stride of a by-value struct, cuBLAS's): not looked at again,
         * so that its kernel's launches skip all this (such words kept every launch of their
         * kernel here: races-bench's untyped loop +1,048 instructions a launch, +780 now) */
        uint64_t v = word_value(k, w, params, packed, psize);
        struct ralloc *a = rspan_has(v) ? atl_racc_resolve(v) : NULL;
        if (!a) {
            if (++w->misses < RC_WATCH_TRIES)
                left++;
            continue;
        }
        w->misses = 0;
        left++;
        if (!wp || n == ATL_WATCH_REGIONS)
            continue;
        uint64_t len = region_len(a, v, total);
        if (!len)
            continue;
        wp->contested[n] =
            (unsigned char)atl_racc_contested(a, (unsigned)u, v - a->base, v - a->base + len);
        wp->word[n] = (uint16_t)i;
        r[n++] = (struct atl_wregion){.dptr = v, .len = (uint32_t)len};
        total += len;
    }
    if (k && !left && l->rec)
        __atomic_store_n(&l->rec->races_quiet, 1, __ATOMIC_RELAXED);
    if (n) {
        /* pinned (the launch's pre): held past it till the watch is released */
        atl_krec_hold(l->rec);
        wp->rec = l->rec, wp->seq = l->seq, wp->exec = NULL;
    }
    watch_start(wp, r, n, l->stream, l->hook);
}

/* Before a graph launch: the same for the kernel nodes of a captured graph that may write,
 * each whose bytes no other node of the graph may write (else a change could be the other's):
 * the graph's first launches are watched until each is seen writing or was not in
 * RC_WATCH_TRIES. */
void atl_races_graph_launch_pre(const struct atl_graph_launch *g)
{
    atl_thr.races_watch = 0;
    int others = enq_begin(g->stream, g->hook);
    if (others || __atomic_load_n(&rk.watch_off, __ATOMIC_RELAXED) || atl_capture_any() ||
        atl_capture_forbids_sync() || lock() != 0)
        return;
    struct rgraph *gr = atl_racc_exec(g->exec);
    int u = stream_slot(g->stream, g->hook);
    struct rwatch *wp = u >= 0 && gr ? watch_slot() : NULL;
    unsigned n = 0;
    size_t total = 0;
    struct atl_wregion r[ATL_WATCH_REGIONS];
    for (size_t i = 0; wp && i < gr->n && i <= UINT16_MAX && n < ATL_WATCH_REGIONS; i++) {
        const struct rgacc *a = &gr->a[i];
        if (a->what != RC_OP_KERNEL || a->mode != RC_MAYWRITE || a->exact ||
            a->tries >= RC_WATCH_TRIES)
            continue;
        struct ralloc *al = atl_racc_resolve(a->anchor);
        if (!al)
            continue;
        uint64_t len = region_len(al, a->anchor, total);
        int alone = len > 0;
        for (size_t j = 0; alone && j < gr->n; j++)
            alone = j == i || gr->a[j].mode == RC_READ ||
                    !overlap(gr->a[j].lo, gr->a[j].hi, a->anchor, a->anchor + len);
        if (!alone)
            continue;
        uint64_t off = a->anchor - al->base;
        wp->contested[n] = (unsigned char)atl_racc_contested(al, (unsigned)u, off, off + len);
        wp->word[n] = (uint16_t)i;
        r[n++] = (struct atl_wregion){.dptr = a->anchor, .len = (uint32_t)len};
        total += len;
    }
    if (n)
        wp->rec = NULL, wp->seq = 0, wp->exec = g->exec;
    watch_start(wp, r, n, g->stream, g->hook);
}

/* After the launch, before it is checked: the watch's second copies, and its result when it
 * comes within RC_WATCH_WAIT_US (else it is read later, when done). */
void atl_rk_post(CUstream stream, int hook, CUresult r)
{
    int wi = atl_thr.races_watch;
    atl_thr.races_watch = 0;
    if (!wi) {
        atl_races_enq(0, NULL, 0);
        return;
    }
    struct rwatch *wp = &rk.wp[wi - 1];
    /* running (ops begun on other streams taint it) before the check that none at all was
     * begun since its start: between the two, nothing is missed */
    if (lock() != 0) {
        atl_races_enq(0, NULL, 0);
        return;
    }
    watch_run(wp);
    wp->waiting = 1;
    pthread_mutex_unlock(&atl_rc.mu);
    int ok = r == CUDA_SUCCESS && __atomic_load_n(&rk.enq_starts, __ATOMIC_ACQUIRE) == wp->starts;
    int after = atl_watch_after(wp->w, atl_own_stream(stream, hook), ok);
    atl_races_enq(0, NULL, 0);
    int res = -1;
    struct atl_wregion out[ATL_WATCH_REGIONS];
    if (after == 0) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        res = atl_watch_result(wp->w, RC_WATCH_WAIT_US, out, wp->n);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        uint64_t us = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000u +
                      (uint64_t)((t1.tv_nsec - t0.tv_nsec) / 1000);
        if (__atomic_add_fetch(&rk.watch_wait_us, us, __ATOMIC_RELAXED) >= RC_WATCH_BUDGET_US)
            __atomic_store_n(&rk.watch_off, 1, __ATOMIC_RELAXED);
    }
    if (lock() != 0)
        return;
    wp->waiting = 0;
    if (res == 1) /* clean: no op begun on another stream since the launch began */
        watch_apply(wp, out, !__atomic_load_n(&wp->tainted, __ATOMIC_ACQUIRE));
    if (res != 0) { /* done, or failed; else read when done (atl_rk_poll) */
        if (res < 0)
            rk.watched++;
        watch_release(wp);
    }
    if (rk.watched >= RC_WATCH_MAX)
        __atomic_store_n(&rk.watch_off, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&atl_rc.mu);
}

void atl_races_launch(const struct atl_launch *l, CUresult r)
{
    atl_rk_post(l->stream, l->hook, r);
    if (r != CUDA_SUCCESS)
        return;
    const unsigned char *packed = l->packed;
    size_t psize = l->packed_size;
    struct rpend pend[RC_PEND];
    struct rop op;
    struct rsite where;
    if (atl_rc_op_open(&op, pend, RC_OP_KERNEL, l->hook, l->stream, l->caller, &where) != 0)
        return;
    struct rkern *k = kern_of(l);
    int u = op.u;
    if (k && u >= 0) {
        const void *const *params = (const void *const *)l->params;
        struct rmemo *memo = NULL;
        if (params)
            memo = launch_words(k, params, (unsigned)u, &op);
        else if (packed)
            for (unsigned i = 0; i < k->nwords; i++) {
                const struct rword *w = &k->words[i];
                uint64_t v;
                if (k->off[w->param] + (size_t)w->off + 8 > psize)
                    continue;
                memcpy(&v, packed + k->off[w->param] + w->off, 8);
                atl_racc_word(&op, v, w);
            }
        if (!k->exact && packed) /* no layout: the packed buffer, one by-value blob */
            scan_blob(&op, packed, psize > 65536 ? 65536 : psize);
        else if (!k->exact && params && !rk.said_layout++)
            atl_log(ATL_INFO, "races: a kernel without a parameter layout from the driver "
                              "(cuFuncGetParamInfo): its pointers are not checked");
        if (memo && !rhb_cap((unsigned)u)) {
            /* The same accesses as this kernel's last launch, on the same
             * stream in the same epoch (nothing ordered it anew since):
             * whatever they race with, the last launch's accesses, still
             * kept (or replaced by ones that cover them), race with too, and
             * were checked when it came. Only the legacy stream's books. */
            touch((unsigned)u);
            const struct rstream *su = rhb_st((unsigned)u);
            if (memo->u != u || memo->clock != su->clock || memo->ver != su->ver) {
                op_site(&op, &where);
                op.proto.name = k->name, op.proto.opnum = l->seq;
                atl_racc_apply(&op);
                memo->u = u, memo->clock = su->clock, memo->ver = su->ver;
            }
        } else {
            op_site(&op, &where);
            op.proto.name = k->name, op.proto.opnum = l->seq;
            atl_racc_end(&op);
        }
    }
    op_close(&op);
}

void atl_rk_exit(uint64_t *watched, uint64_t *seen, uint64_t *unseen, uint64_t *wait_us)
{
    if (atl_rk_nwp) /* watches still under way: a last look */
        atl_rk_poll(100000);
    __atomic_store_n(&rk.watch_off, 1, __ATOMIC_RELAXED);
    if (!atl_rk_nwp)
        atl_watch_exit();
    *watched = rk.watched, *seen = rk.words_seen, *unseen = rk.words_unseen;
    *wait_us = __atomic_load_n(&rk.watch_wait_us, __ATOMIC_RELAXED);
}
