/*
 * Races between streams (ATLAS_RACES): the accesses (src/races_internal.h says how the
 * detector is cut; docs/races.md).
 *
 * Per allocation, the accesses kept are those not yet known to be ordered
 * before everything that follows: an access that the host knows done is
 * dropped, and one that a later access on the same stream covers (same
 * bytes, the same or a stronger kind) is replaced by it; at most RC_KEEP
 * stay (the oldest goes, counted). So memory grows with the allocations
 * touched and the streams that touch each, not with the number of ops.
 *
 * This file owns the allocations the detector has seen (their accesses, the address ->
 * allocation cache in front of the ledger, the span of addresses), an op's accesses and
 * their check against those kept, the races already seen and the counts, and the captured
 * graphs' accesses; and handles copies, memsets, allocations, frees, VMM and graphs.
 */
#include "races_internal.h"

#include "log.h"

#include <stdlib.h>
#include <string.h>

#define RC_CACHE 1024     /* pages of the address -> allocation cache */
#define RC_GRAPH_MAX 4096 /* accesses kept per captured graph */

struct rcache {
    uint64_t base, span;
    struct ralloc *a;
};

/* The span of addresses and the allocations' generation, read on every launch
 * (src/races_internal.h); the rest, this file's own. */
struct atl_rspan atl_rspan = {.gen = 1}; /* a memo's gen 0 means none */

static struct {
    struct rmap allocs, graphs, execs, seen;
    struct rcache cache[RC_CACHE];
    /* counts */
    uint64_t races, races_distinct, possible, possible_distinct, accesses, forgotten, dropped;
    int said_graph;
} ac;

/* ---- allocations ---------------------------------------------------------------- */

static size_t cache_index(uint64_t v)
{
    return (size_t)(((v >> 12) * 0x9E3779B97F4A7C15ULL) >> 54) & (RC_CACHE - 1);
}

static struct ralloc *alloc_state(uint64_t seq, uint64_t base, uint64_t span)
{
    void *p;
    if (rmap_get(&ac.allocs, seq, &p))
        return p;
    struct ralloc *a = calloc(1, sizeof *a);
    if (!a || rmap_put(&ac.allocs, seq, a) != 0) {
        free(a);
        atl_rc_oom();
        return NULL;
    }
    a->seq = seq, a->base = base, a->span = span;
    return a;
}

/* The allocation v points into, through the ledger; its base in *base. */
struct ralloc *atl_racc_resolve(uint64_t v)
{
    if (v < 65536 || v - atl_rspan.lo >= atl_rspan.hi - atl_rspan.lo)
        return NULL;
    struct rcache *c = &ac.cache[cache_index(v)];
    if (c->a && v - c->base < c->span)
        return c->a;
    CUdeviceptr base;
    size_t span;
    uint64_t seq;
    if (!atl_ledger_find_base((CUdeviceptr)v, &base, &span, &seq))
        return NULL;
    struct ralloc *a = alloc_state(seq, base, span);
    if (a)
        *c = (struct rcache){base, span, a};
    return a;
}

/* Forget the cache's entries of a (all of them when a is NULL). */
static void cache_drop(const struct ralloc *a)
{
    if (a && a->span / 4096 < RC_CACHE) {
        for (uint64_t p = a->base; p < a->base + a->span + 4096; p += 4096) {
            struct rcache *c = &ac.cache[cache_index(p)];
            if (c->a == a)
                c->a = NULL;
        }
        return;
    }
    for (size_t i = 0; i < RC_CACHE; i++)
        if (!a || ac.cache[i].a == a)
            ac.cache[i].a = NULL;
}

static void alloc_drop(uint64_t seq)
{
    struct ralloc *a = rmap_del(&ac.allocs, seq);
    if (!a)
        return;
    atl_rspan.gen++;
    cache_drop(a);
    free(a->e);
    free(a);
}
/* ---- an op and its accesses -------------------------------------------------------- */

static void op_begin(struct rop *op, int u, int what, int hook, uint32_t site, struct rpend *pend)
{
    op->u = u;
    op->what = what, op->hook = hook;
    op->n = 0;
    op->accp = op->acc;
    op->freed = NULL;
    op->pend = pend;
    op->npend = 0;
    op_proto(op, site);
}

/* w: the kernel's word the access is through (NULL: none, or not seen writing) */
static void op_add(struct rop *op, struct ralloc *a, uint64_t lo, uint64_t hi, uint64_t anchor,
                   int mode, int exact, unsigned param, const struct rword *w)
{
    uint64_t seen = w && w->mode == RC_WRITE ? w->seen : 0;
    for (unsigned i = 0; i < op->n; i++) {
        struct racc_op *o = &op->acc[i];
        if (o->a == a && o->anchor == anchor && o->exact == exact) {
            if (mode > o->mode || (mode == o->mode && seen && !o->seen)) {
                o->mode = (uint8_t)mode, o->param = (uint8_t)(param > 254 ? 254 : param);
                o->seen = seen, o->clo = seen ? w->clo : 0, o->chi = seen ? w->chi : 0;
            }
            if (lo < o->lo)
                o->lo = lo;
            if (hi > o->hi)
                o->hi = hi;
            return;
        }
    }
    if (op->n == RC_OP_ACCESSES) {
        ac.dropped++;
        return;
    }
    op->acc[op->n++] = (struct racc_op){a,
                                        lo,
                                        hi,
                                        anchor,
                                        seen,
                                        seen ? w->clo : 0,
                                        seen ? w->chi : 0,
                                        (uint8_t)mode,
                                        (uint8_t)exact,
                                        (uint8_t)(param > 254 ? 254 : param)};
}

/* Bytes [p, p+len) accessed exactly (a copy or a memset). */
static void op_range(struct rop *op, uint64_t p, uint64_t len, int mode)
{
    if (!len)
        return;
    struct ralloc *a = atl_racc_resolve(p);
    if (!a)
        return;
    uint64_t lo = p - a->base, hi = lo + len > a->span ? a->span : lo + len;
    op_add(op, a, lo, hi, lo, mode, 1, 255, NULL);
}

/* A pointer a kernel was given: the whole allocation it reaches, surely at
 * the address itself. */
void atl_racc_pointer(struct rop *op, uint64_t v, int mode, unsigned param)
{
    struct ralloc *a = atl_racc_resolve(v);
    if (a)
        op_add(op, a, 0, a->span, v - a->base, mode, 0, param, NULL);
}

/* The same through a kernel's word w. */
void atl_racc_word(struct rop *op, uint64_t v, const struct rword *w)
{
    struct ralloc *a = atl_racc_resolve(v);
    if (a)
        op_add(op, a, 0, a->span, v - a->base, w->mode, 0, w->param, w);
}
static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    return h * 1099511628211ULL;
}

static uint64_t side_key(uint64_t h, const struct racc *a)
{
    h = mix(h, a->site);
    h = mix(h, a->site2);
    h = mix(h, a->hook);
    h = mix(h, a->hook2);
    h = mix(h, (uint64_t)(uintptr_t)a->name);
    h = mix(h, a->param);
    h = mix(h, a->what);
    return mix(h, a->mode);
}

/* The allocation a race is in, as its report names it: the ledger's record,
 * or the one the op frees (already gone from the ledger). */
static void alloc_of(const struct rop *op, const struct ralloc *a, uint64_t *seq, uint64_t *base,
                     uint64_t *bytes, struct atl_stack *site)
{
    *seq = a->seq, *base = a->base, *bytes = a->span;
    site->n = 0;
    struct atl_alloc_rec rec;
    if (atl_ledger_find((CUdeviceptr)a->base, &rec) && rec.seq == a->seq) {
        *bytes = rec.bytes;
        *site = rec.site;
    } else if (op->freed && op->freed->seq == a->seq) {
        *bytes = op->freed->bytes;
        *site = op->freed->site;
    }
}

/* A race the op has no room to print, kept for the findings sink. */
static void over_add(struct rop *op, const struct ralloc *a, const struct racc *e,
                     const struct racc *x)
{
    if (op->nover == op->capover) {
        size_t cap = op->capover ? op->capover * 2 : 16;
        struct rover *n = realloc(op->over, cap * sizeof *n);
        if (!n) {
            atl_rc_oom();
            return;
        }
        op->over = n, op->capover = cap;
    }
    struct rover *o = &op->over[op->nover++];
    alloc_of(op, a, &o->seq, &o->base, &o->bytes, &o->alloc_site);
    o->e = *e, o->x = *x;
    atl_rsite_copy(x->site, &o->site_x);
}

/* e (earlier) and x (now, on stream op->u) touch the same bytes of a with
 * nothing ordering them; sure: one of them certainly writes bytes the other
 * certainly touches. */
static void conflict(struct rop *op, const struct ralloc *a, const struct racc *e,
                     const struct racc *x, int sure)
{
    if (sure)
        ac.races++;
    else
        ac.possible++;
    uint64_t key = side_key(side_key(mix(1469598103934665603ULL, (uint64_t)sure), e), x);
    if (rmap_get(&ac.seen, key, NULL))
        return;
    if (rmap_put(&ac.seen, key, (void *)1) != 0) {
        atl_rc_oom();
        return;
    }
    if (sure)
        ac.races_distinct++;
    else
        ac.possible_distinct++;
    /* A race is a finding whether printed or not; a possible one is listed with
     * ATLAS_RACES=all only. Both are formatted and handed to the findings sink after the
     * lock (atl_rrep_print): naming a frame asks the loader (dladdr, libdw), whose lock a
     * thread in a library's constructor holds while it may call CUDA and so wait for ours. */
    if (!sure && atl_rc.mode < 2)
        return;
    struct rpend *p = atl_rrep_place(op, sure);
    if (!p) {
        if (sure)
            over_add(op, a, e, x);
        return;
    }
    alloc_of(op, a, &p->seq, &p->base, &p->bytes, &p->alloc_site);
    p->e = *e, p->x = *x;
    atl_rhb_describe(p, (unsigned)op->u);
    atl_rsite_copy(e->site, &p->site_e);
    atl_rsite_copy(e->site2, &p->site_e2);
    atl_rsite_copy(x->site, &p->site_x);
    atl_rsite_copy(x->site2, &p->site_x2);
}

/* Bytes an access surely touches: its range when exact; for a kernel's parameter seen
 * writing, the bytes seen written (at the launch watched) or the first of them (at the
 * kernel's other launches, from their pointer); else the byte its pointer points at. */
static void sure_range(const struct racc *a, uint64_t *lo, uint64_t *hi)
{
    if (a->exact) {
        *lo = a->lo, *hi = a->hi;
    } else if (a->seen) {
        /* a first change within RC_WATCH_NEAR bytes of the pointer: the bytes before it were
         * stored too, with the value they held (x[0] = 0 into zeroed memory) */
        uint64_t from = a->clo < RC_WATCH_NEAR ? 0 : a->clo;
        *lo = a->anchor + from;
        *hi = a->anchor + (a->opnum == a->seen ? a->chi : from + 1);
        if (*hi > a->hi)
            *hi = a->hi;
    } else {
        *lo = a->anchor, *hi = a->anchor + 1;
    }
}

static int sure_overlap(const struct racc *a, const struct racc *b)
{
    uint64_t alo, ahi, blo, bhi;
    sure_range(a, &alo, &ahi);
    sure_range(b, &blo, &bhi);
    return overlap(alo, ahi, blo, bhi);
}

/* x makes e redundant: it comes after it, touches at least its bytes, and
 * is at least as strong a kind of access. */
static int covers(const struct racc *x, const struct racc *e)
{
    if (x->mode < e->mode || x->lo > e->lo || x->hi < e->hi)
        return 0;
    return x->exact || (!e->exact && x->anchor == e->anchor);
}

static void acc_remove(struct ralloc *a, unsigned i)
{
    memmove(&a->e[i], &a->e[i + 1], (a->n - i - 1) * sizeof *a->e);
    a->n--;
}

static void check(struct rop *op, struct ralloc *a, const struct racc *x)
{
    unsigned u = (unsigned)op->u;
    uint64_t birth = rhb_st(u)->birth;
    ac.accesses++;
    if (a->mono == u + 1 && a->mono_birth == birth) {
        /* every access kept is this stream's own (the common case: one
         * stream uses the allocation), ordered before x: nothing to check;
         * those x covers go. Most often that is the newest alone, whose
         * place x takes. */
        if (a->n && covers(x, &a->e[a->n - 1]) && (a->n == 1 || !covers(x, &a->e[0]))) {
            a->e[a->n - 1] = *x;
            return;
        }
        for (unsigned i = 0; i < a->n;) {
            if (covers(x, &a->e[i]))
                acc_remove(a, i);
            else
                i++;
        }
    } else {
        int mono = 1;
        for (unsigned i = 0; i < a->n;) {
            const struct racc *e = &a->e[i];
            if (host_done(e)) {
                acc_remove(a, i); /* done, as far as the host knows: orders everything after */
                continue;
            }
            if (ordered(e, u)) {
                if (covers(x, e)) {
                    acc_remove(a, i);
                    continue;
                }
            } else if ((e->mode != RC_READ || x->mode != RC_READ) &&
                       overlap(e->lo, e->hi, x->lo, x->hi)) {
                /* two kernels both seen writing the same bytes stay possible: a watch cannot
                 * tell atomics (a well-defined sum from two streams) from plain stores */
                int both_seen = e->seen && x->seen;
                conflict(op, a, e, x,
                         (e->mode == RC_WRITE || x->mode == RC_WRITE) && !both_seen &&
                             sure_overlap(e, x));
            }
            mono &= e->stream == u && e->clock >= birth;
            i++;
        }
        a->mono = mono ? u + 1 : 0;
        a->mono_birth = birth;
    }
    if (a->n == RC_KEEP) {
        /* the oldest of x's own stream goes first (x comes after it: a later
         * access that races with it races with x too, if it touches x's
         * bytes); else the oldest of all, counted */
        unsigned i = 0;
        while (i < a->n && a->e[i].stream != u)
            i++;
        if (i == a->n) {
            i = 0;
            ac.forgotten++;
        }
        acc_remove(a, i);
    }
    if (a->n == a->cap) {
        unsigned cap = a->cap ? a->cap * 2 : 2;
        struct racc *n = realloc(a->e, cap * sizeof *n);
        if (!n) {
            atl_rc_oom();
            return;
        }
        a->e = n, a->cap = cap;
    }
    a->e[a->n++] = *x;
}

struct rgraph *atl_racc_graph_new(void)
{
    struct rgraph *g = calloc(1, sizeof *g);
    if (g)
        g->refs = 1;
    else
        atl_rc_oom();
    return g;
}

void atl_racc_graph_unref(struct rgraph *g)
{
    if (g && --g->refs == 0) {
        free(g->a);
        free(g);
    }
}

static void graph_add(struct rgraph *g, const struct rgacc *x)
{
    if (g->n == RC_GRAPH_MAX) {
        g->overflow = 1;
        return;
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        struct rgacc *n = realloc(g->a, cap * sizeof *n);
        if (!n) {
            g->overflow = 1;
            return;
        }
        g->a = n, g->cap = cap;
    }
    g->a[g->n++] = *x;
}

void atl_racc_end(struct rop *op)
{
    unsigned u = (unsigned)op->u;
    if (rhb_cap(u)) {
        struct rgraph *g = rhb_cap(u)->g;
        for (unsigned i = 0; g && i < op->n; i++) {
            const struct racc_op *o = &op->accp[i];
            struct rgacc x = {.lo = o->a->base + o->lo,
                              .hi = o->a->base + o->hi,
                              .anchor = o->a->base + o->anchor,
                              .seen = o->seen,
                              .clo = o->clo,
                              .chi = o->chi,
                              .name = op->proto.name,
                              .site = op->proto.site,
                              .hook = op->proto.hook,
                              .what = op->proto.what,
                              .mode = o->mode,
                              .exact = o->exact,
                              .param = o->param};
            graph_add(g, &x);
        }
        return;
    }
    touch(u);
    atl_racc_apply(op);
}

void atl_racc_apply(struct rop *op)
{
    unsigned u = (unsigned)op->u;
    if (!op->n)
        return;
    struct racc x = op->proto;
    x.clock = stamp(u), x.stream = u;
    for (unsigned i = 0; i < op->n && !atl_rc.dead; i++) {
        const struct racc_op *o = &op->accp[i];
        x.lo = o->lo, x.hi = o->hi, x.anchor = o->anchor;
        x.seen = o->seen, x.clo = o->clo, x.chi = o->chi;
        x.mode = o->mode, x.exact = o->exact;
        if (x.what == RC_OP_KERNEL)
            x.param = o->param;
        check(op, o->a, &x);
    }
}

/* Whether an access kept for a, of another stream and not ordered before stream u now,
 * may write bytes [lo, hi): then a change there proves nothing of u's launch. */
int atl_racc_contested(const struct ralloc *a, unsigned u, uint64_t lo, uint64_t hi)
{
    for (unsigned i = 0; i < a->n; i++) {
        const struct racc *e = &a->e[i];
        if (e->mode != RC_READ && !ordered(e, u) && !host_done(e) && overlap(e->lo, e->hi, lo, hi))
            return 1;
    }
    return 0;
}

static void copy_end(struct rop *op, const struct atl_copy_end *e, const struct atl_copy_geom *g,
                     int mode)
{
    if ((e->type != CU_MEMORYTYPE_DEVICE && e->type != CU_MEMORYTYPE_UNIFIED) || !g->width ||
        !g->height || !g->depth)
        return;
    uint64_t pitch = e->pitch ? e->pitch : g->width;
    uint64_t h = e->height ? e->height : g->height;
    uint64_t start = e->dev + e->x + e->y * pitch + e->z * pitch * h;
    op_range(op, start, (g->depth - 1) * pitch * h + (g->height - 1) * pitch + g->width, mode);
}

static void copy_operand(struct rop *op, const CUmemcpy3DOperand *o, int mode)
{
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
        return;
    /* its extent is in elements of a size the operand does not give: the
     * allocation, surely at the pointer */
    atl_racc_pointer(op, o->op.ptr.ptr, mode, 255);
}

void atl_races_copy(const struct atl_copy *c, CUresult r)
{
    if (r != CUDA_SUCCESS)
        return;
    struct rpend pend[RC_PEND];
    struct rop op;
    struct rsite where;
    if (atl_rc_op_open(&op, pend, RC_OP_COPY, c->hook, c->stream, c->caller, &where) != 0)
        return;
    int u = op.u;
    if (u >= 0) {
        op_site(&op, &where);
        op.proto.sub = (uint8_t)c->kind;
        switch (c->kind) {
        case ATL_CPY_GENERIC:
        case ATL_CPY_PEER:
        case ATL_CPY_DTOD:
            op_range(&op, c->src, c->bytes, RC_READ);
            op_range(&op, c->dst, c->bytes, RC_WRITE);
            break;
        case ATL_CPY_HTOD:
        case ATL_CPY_ATOD:
            op_range(&op, c->dst, c->bytes, RC_WRITE);
            break;
        case ATL_CPY_DTOH:
        case ATL_CPY_DTOA:
            op_range(&op, c->src, c->bytes, RC_READ);
            break;
        case ATL_CPY_2D:
        case ATL_CPY_3D:
        case ATL_CPY_3D_PEER:
            if (c->geom.set) {
                copy_end(&op, &c->geom.src, &c->geom, RC_READ);
                copy_end(&op, &c->geom.dst, &c->geom, RC_WRITE);
            }
            break;
        case ATL_CPY_BATCH:
            for (size_t i = 0; c->batch_sizes && i < c->count && i < RC_OP_ACCESSES; i++) {
                if (c->batch_src)
                    op_range(&op, c->batch_src[i], c->batch_sizes[i], RC_READ);
                if (c->batch_dst)
                    op_range(&op, c->batch_dst[i], c->batch_sizes[i], RC_WRITE);
            }
            break;
        case ATL_CPY_3D_BATCH:
            for (size_t i = 0; c->batch3d && i < c->count && i < RC_OP_ACCESSES; i++) {
                copy_operand(&op, &c->batch3d[i].src, RC_READ);
                copy_operand(&op, &c->batch3d[i].dst, RC_WRITE);
            }
            break;
        default: /* host and array ends: not on the ledger */
            break;
        }
        atl_racc_end(&op);
        /* the engine decided whether the host waited (src/events.h): a generic copy, whose
         * direction only the driver knows, is taken as waiting (errs towards silence) */
        if (c->host_waits && !rhb_cap(u))
            atl_rhb_host_learns_stream((unsigned)u, HS_COPY, op.proto.site);
    }
    op_close(&op);
}

void atl_races_memset(const struct atl_memset *m, CUresult r)
{
    if (r != CUDA_SUCCESS)
        return;
    struct rpend pend[RC_PEND];
    struct rop op;
    struct rsite where;
    if (atl_rc_op_open(&op, pend, RC_OP_MEMSET, m->hook, m->stream, m->caller, &where) != 0)
        return;
    if (op.u >= 0) {
        op_site(&op, &where);
        uint64_t row = (uint64_t)m->count * m->elem;
        op_range(&op, m->dst, m->height ? (m->height - 1) * m->pitch + row : row, RC_WRITE);
        atl_racc_end(&op);
    }
    op_close(&op);
}

void atl_races_alloc(const struct atl_alloc *a, CUresult r)
{
    if (r != CUDA_SUCCESS || !a->dptr || lock() != 0)
        return;
    uint64_t lo = *a->dptr, hi = lo + (a->padded > a->bytes ? a->padded : a->bytes);
    if (a->kind == ATL_ALLOC_PITCH && a->pitch)
        hi = lo + *a->pitch * (a->padded_height ? a->padded_height : a->height);
    atl_rspan.gen++; /* a pointer that named nothing may name it now */
    if (a->kind != ATL_ALLOC_VMM) {
        if (atl_rspan.hi == atl_rspan.lo) /* the first: lo == hi == 0 until now */
            atl_rspan.lo = lo, atl_rspan.hi = hi;
        atl_rspan.lo = lo < atl_rspan.lo ? lo : atl_rspan.lo;
        atl_rspan.hi = hi > atl_rspan.hi ? hi : atl_rspan.hi;
    }
    pthread_mutex_unlock(&atl_rc.mu);
}

void atl_races_free(const struct atl_free *f)
{
    if (!f->known)
        return;
    struct rsite where = {.unwind = 1};
    if (f->async)
        site_pre(&where, f->caller);
    struct rpend pend[RC_PEND];
    struct rop op;
    op_none(&op);
    if (lock() != 0)
        return;
    void *p = NULL;
    int known = rmap_get(&ac.allocs, f->rec.seq, &p);
    int u = f->async && known ? stream_slot(f->stream, f->hook) : -1;
    if (u >= 0 && !rhb_cap(u)) {
        /* freed in stream order: the memory may be handed out again after
         * it, so every access on another stream must come before it */
        struct ralloc *a = p;
        op_begin(&op, u, RC_OP_FREE, f->hook, atl_rsite_get(&where), pend);
        op.freed = &f->rec;
        op_add(&op, a, 0, a->span, 0, RC_WRITE, 1, 255, NULL);
        atl_racc_end(&op);
    }
    alloc_drop(f->rec.seq);
    pthread_mutex_unlock(&atl_rc.mu);
    atl_rrep_print(&op);
}

void atl_races_vmm(const struct atl_vmm *v, CUresult r)
{
    if (r != CUDA_SUCCESS || lock() != 0)
        return;
    if (v->op == ATL_VMM_MAP) {
        atl_rspan.gen++;
        if (atl_rspan.hi == atl_rspan.lo)
            atl_rspan.lo = v->ptr, atl_rspan.hi = v->ptr + v->bytes;
        atl_rspan.lo = v->ptr < atl_rspan.lo ? v->ptr : atl_rspan.lo;
        atl_rspan.hi = v->ptr + v->bytes > atl_rspan.hi ? v->ptr + v->bytes : atl_rspan.hi;
    } else if (v->op == ATL_VMM_UNMAP) {
        cache_drop(NULL); /* the addresses name nothing now */
        atl_rspan.gen++;
    } else if (v->op == ATL_VMM_RELEASE && v->known) {
        alloc_drop(v->rec.seq);
    }
    pthread_mutex_unlock(&atl_rc.mu);
}

void atl_races_graph_inst(const struct atl_graph_inst *g, CUresult r)
{
    if (r != CUDA_SUCCESS || !g->exec || lock() != 0)
        return;
    atl_racc_graph_unref(rmap_del(&ac.execs, (uint64_t)(uintptr_t)g->exec));
    void *p;
    if (rmap_get(&ac.graphs, (uint64_t)(uintptr_t)g->graph, &p)) {
        struct rgraph *gr = p;
        if (rmap_put(&ac.execs, (uint64_t)(uintptr_t)g->exec, gr) == 0)
            gr->refs++;
    }
    pthread_mutex_unlock(&atl_rc.mu);
}

void atl_races_graph_launch(const struct atl_graph_launch *g, CUresult r)
{
    atl_rk_post(g->stream, g->hook, r);
    if (r != CUDA_SUCCESS)
        return;
    struct rsite where;
    site_pre(&where, g->caller);
    struct rpend pend[RC_PEND];
    struct rop op;
    op_none(&op);
    if (lock() != 0)
        return;
    int u = stream_slot(g->stream, g->hook);
    void *p = NULL;
    rmap_get(&ac.execs, (uint64_t)(uintptr_t)g->exec, &p);
    struct rgraph *gr = p;
    if (u >= 0 && rhb_cap(u)) {
        /* launched into a capture: its accesses become the outer graph's */
        for (size_t i = 0; gr && rhb_cap(u)->g && i < gr->n; i++)
            graph_add(rhb_cap(u)->g, &gr->a[i]);
    } else if (u >= 0) {
        uint32_t site = atl_rsite_get(&where);
        op_begin(&op, u, RC_OP_GRAPH, g->hook, site, pend);
        if (!gr && !ac.said_graph++)
            atl_log(ATL_INFO, "races: a graph launched that was not captured from streams "
                              "(built node by node, or captured before): it orders its "
                              "stream, its own accesses are not checked");
        if (gr && gr->overflow && !ac.said_graph++)
            atl_log(ATL_INFO,
                    "races: a captured graph with more than %d accesses: the rest "
                    "are not checked",
                    RC_GRAPH_MAX);
        /* One unit on its stream: every node's access at the launch's
         * place. Each node keeps its own description; the op is rebuilt per
         * node so that a report names the node. */
        touch((unsigned)u);
        uint64_t clock = stamp((unsigned)u);
        for (size_t i = 0; gr && i < gr->n && !atl_rc.dead; i++) {
            const struct rgacc *n = &gr->a[i];
            struct ralloc *a = atl_racc_resolve(n->anchor);
            if (!a)
                continue;
            struct racc x = op.proto;
            x.clock = clock, x.stream = (uint32_t)u;
            x.lo = n->lo > a->base ? n->lo - a->base : 0;
            x.hi = n->hi - a->base > a->span ? a->span : n->hi - a->base;
            x.anchor = n->anchor - a->base;
            x.seen = n->seen, x.clo = n->clo, x.chi = n->chi;
            x.mode = n->mode, x.exact = n->exact, x.param = n->param;
            x.sub = n->what, x.hook2 = n->hook, x.site2 = n->site, x.name = n->name;
            check(&op, a, &x);
        }
    }
    pthread_mutex_unlock(&atl_rc.mu);
    atl_rrep_print(&op);
}

void atl_racc_graph_keep(CUgraph graph, struct rgraph *g)
{
    struct rgraph *old = rmap_del(&ac.graphs, (uint64_t)(uintptr_t)graph);
    atl_racc_graph_unref(old);
    if (rmap_put(&ac.graphs, (uint64_t)(uintptr_t)graph, g) != 0)
        atl_racc_graph_unref(g);
}

void atl_racc_graph_drop(CUgraph graph)
{
    atl_racc_graph_unref(rmap_del(&ac.graphs, (uint64_t)(uintptr_t)graph));
}

void atl_racc_exec_drop(CUgraphExec exec)
{
    atl_racc_graph_unref(rmap_del(&ac.execs, (uint64_t)(uintptr_t)exec));
}

struct rgraph *atl_racc_exec(CUgraphExec exec)
{
    void *p = NULL;
    rmap_get(&ac.execs, (uint64_t)(uintptr_t)exec, &p);
    return p;
}

void atl_racc_counts(struct racc_counts *c)
{
    *c = (struct racc_counts){ac.races,    ac.races_distinct, ac.possible, ac.possible_distinct,
                              ac.accesses, ac.forgotten,      ac.dropped};
}
