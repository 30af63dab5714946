/*
 * What the race detector's files share (ATLAS_RACES; src/races.h, docs/races.md). Hidden: no
 * file outside the detector includes it.
 *
 * The detector is cut by the state each part owns:
 *   src/races.c         the setting, the one lock, an op's opening and closing, call sites
 *   src/races_hb.c      happens-before: streams and their vector clocks, what the host knows
 *                       is done, events, captures, host functions; the stream events
 *   src/races_access.c  the accesses kept per allocation, an op's accesses and their check,
 *                       captured graphs' accesses; copies, memsets, frees, graph launches
 *   src/races_kern.c    a kernel's view (its parameter words, the memo of its last launch)
 *                       and the watches of what a launch writes; the launch events
 *   src/races_report.c  a race's report and the exit summary
 * (and src/races_params.c, what a kernel does with each parameter, src/races_watch.c, the
 * device copies a watch makes).
 *
 * Each file keeps its state `static`, and the others ask through the functions below, but
 * for what an op or an access reads of another file's state: the detector's lock and setting
 * (struct atl_rc, src/races.c), the streams' clocks (struct atl_rhb, src/races_hb.c), the
 * span of device addresses and the allocations' generation (struct atl_rspan,
 * src/races_access.c) and the count of watches open (atl_rk_nwp, src/races_kern.c): read in
 * place (mostly through this header's `static inline` functions), written only by their
 * owner's file and its inline functions here.
 *
 * Everything runs under the one mutex. The call sites are captured before it is taken (the
 * unwinder may take the loader's lock), and the reports are written after it is released
 * (naming frames does too).
 */
#ifndef ATL_RACES_INTERNAL_H
#define ATL_RACES_INTERNAL_H

#include "races.h"

#include "addrmap.h"
#include "findings.h"
#include "hookid.h"
#include "ledger.h"
#include "services.h"
#include "stack.h"

#include <pthread.h>
#include <stdint.h>

/* Every name below is the detector's own: hidden, so that the inline functions read the
 * shared state and call the other files directly (no GOT, no PLT). */
#pragma GCC visibility push(hidden)

#define RC_KEEP 16        /* accesses kept per allocation */
#define RC_OP_ACCESSES 64 /* allocations one op is checked against */
#define RC_PRINT_MAX 100  /* distinct races printed; more are counted */
#define RC_PEND 4         /* reports one op may print */
#define RC_WATCH_TRIES 3  /* launches of one parameter watched without a change seen */
#define RC_WATCH_NEAR 16  /* a write seen this near its pointer is taken from it */

enum { RC_LEGACY, RC_PTDS, RC_BLOCKING, RC_NONBLOCKING };
enum { RC_READ = 1, RC_MAYWRITE = 2, RC_WRITE = 3 };
enum { RC_OP_KERNEL, RC_OP_COPY, RC_OP_MEMSET, RC_OP_FREE, RC_OP_GRAPH };
/* what last told the host of a stream's work */
enum { HS_NONE, HS_STREAM, HS_EVENT, HS_CTX, HS_COPY, HS_QUERY, HS_HOSTFN, HS_CALLBACK };

/* ---- small tools: a hash map of 64-bit keys, vector clocks ------------------ */

/* The detector's maps, by 64-bit key: src/addrmap.h's (the one hash map of the library), with
 * pointer values and the key 0 kept beside it (addrmap's empty slot). */
struct rmap {
    struct atl_addrmap m;
    int has0;
    void *v0;
};

/* 1 and *val (when val) if key is present, else 0. */
static inline int rmap_get(const struct rmap *m, uint64_t key, void **val)
{
    size_t v = 0;
    int found = key ? atl_addrmap_get(&m->m, key, &v) : m->has0;
    if (found && val)
        *val = key ? (void *)(uintptr_t)v : m->v0;
    return found;
}

static inline int rmap_put(struct rmap *m, uint64_t key, void *val)
{
    if (!key) {
        m->has0 = 1, m->v0 = val;
        return 0;
    }
    return atl_addrmap_put(&m->m, key, (size_t)(uintptr_t)val);
}

/* Removes key; its value, or NULL. */
static inline void *rmap_del(struct rmap *m, uint64_t key)
{
    void *v = NULL;
    if (!rmap_get(m, key, &v))
        return NULL;
    if (key)
        atl_addrmap_del(&m->m, key);
    else
        m->has0 = 0, m->v0 = NULL;
    return v;
}

/* A vector clock: c[i] for streams 0..n-1, zero beyond. */
struct vc {
    uint64_t *c;
    unsigned n;
};

static inline uint64_t vc_get(const struct vc *v, unsigned i)
{
    return i < v->n ? v->c[i] : 0;
}

/* ---- what the files share ------------------------------------------------------ */

struct rcap;

struct rstream {
    uintptr_t key; /* the handle; the legacy stream's RC_LEGACY_KEY; a thread's own for PTDS */
    unsigned char kind, live, dirty;
    uint32_t tid;          /* RC_PTDS: the thread */
    uint64_t clock, birth; /* its own clock now; the first of this incarnation of the slot */
    /* the stream the slot held before (destroyed, or its thread ended): reports of its
     * accesses name it, not the slot's new stream */
    uintptr_t old_key;
    uint64_t old_birth;
    uint32_t old_tid;
    unsigned char old_kind;
    uint64_t legacy_seen; /* blocking streams: the legacy stream's ops absorbed */
    struct vc vc;         /* what it is ordered after */
    uint64_t ver;         /* counts changes of clock and vc: an epoch is (clock, ver) */
    struct rcap *cap;     /* capturing into */
    /* the last event it waited for, for the reports */
    uintptr_t wait_ev;
    int wait_from; /* the stream it was recorded on; -1: never recorded */
    uint64_t wait_clock;
    uint32_t wait_site;
};

struct racc {
    uint64_t clock;
    uint64_t lo, hi; /* bytes from the allocation's base */
    uint64_t anchor; /* where the op's own pointer points (== lo for exact ranges) */
    uint64_t opnum;  /* launch number (kernels), else 0 */
    /* a kernel's parameter seen writing (mode RC_WRITE): at launch `seen`, the bytes
     * [clo, chi) from the pointer (anchor) changed; 0: not known so */
    uint64_t seen;
    uint32_t clo, chi;
    const char *name;
    uint32_t stream, site, site2; /* site2: a graph node's capture site */
    uint16_t hook, hook2;         /* hook2: a graph node's entry point */
    uint8_t what, sub, mode, exact, param;
};

struct ralloc {
    uint64_t seq, base, span;
    unsigned n, cap;
    struct racc *e; /* oldest first */
    /* slot + 1 of the one stream (incarnation mono_birth) all of e are of;
     * 0: several */
    unsigned mono;
    uint64_t mono_birth;
};

/* An access of a captured graph, in absolute addresses (the allocation is
 * found again at each launch). */
struct rgacc {
    uint64_t lo, hi, anchor;
    uint64_t seen; /* struct racc's */
    uint32_t clo, chi;
    uint8_t tries; /* a kernel's "may write": its graph's launches watched without a change */
    const char *name;
    uint32_t site;
    uint16_t hook;
    uint8_t what, mode, exact, param;
};
struct rgraph {
    int refs;
    size_t n, cap;
    struct rgacc *a;
    int overflow;
};
struct rcap {
    uint64_t id;
    struct rgraph *g;
    struct rcap *next;
};

/* One 8-byte word of a kernel's parameters: param's bytes at off. A word that may write is
 * watched (src/races_watch.h) until a launch is seen writing through it (mode RC_WRITE,
 * seen, [clo, chi) from the pointer), or RC_WATCH_TRIES launches were not. */
struct rword {
    uint32_t param, off;
    uint8_t mode;
    uint8_t tries;
    uint8_t misses; /* launches in a row whose value pointed into no allocation */
    uint32_t clo, chi;
    uint64_t seen;
};

/* ---- an op and its accesses -------------------------------------------------------- */

struct rsd { /* a stream, for a report */
    uintptr_t key;
    unsigned char kind, gone;
    uint32_t tid;
};

struct rpend {
    int sure;
    uint64_t seq, base, bytes;
    struct atl_stack alloc_site;
    struct racc e, x;
    struct rsd se, sx, swf;
    struct atl_stack site_e, site_e2, site_x, site_x2, site_wait, site_host;
    uint64_t host_knew;
    unsigned char host_kind;
    uintptr_t wait_ev;
    int wait_from;
    uint64_t wait_clock;
    /* a race (sure): its finding (src/findings.h), its first line, its kernel */
    struct atl_find f;
    char head[600], kn[320];
};

struct racc_op {
    struct ralloc *a;
    uint64_t lo, hi, anchor;
    uint64_t seen; /* struct racc's */
    uint32_t clo, chi;
    uint8_t mode, exact, param;
};

/* A race past what an op prints: what its finding needs, taken under the lock
 * (a struct rpend is 2.6 KB; an op of a graph may find thousands). */
struct rover {
    uint64_t seq, base, bytes;
    struct atl_stack alloc_site, site_x;
    struct racc e, x;
};

struct rop {
    int u;
    int what, hook;
    struct racc proto;
    unsigned n;
    const struct racc_op *accp; /* acc, or a kernel's memo */
    struct racc_op acc[RC_OP_ACCESSES];
    const struct atl_alloc_rec *freed; /* a free: the ledger's record, already removed */
    struct rpend *pend;
    int npend;
    /* races past what it prints (pend full, RC_PRINT_MAX): findings all the same, handed to
     * the findings sink after the lock (malloc'd) */
    struct rover *over;
    size_t nover, capover;
};

/* The op's description its accesses carry (what, where, and for a kernel
 * its name and launch number): set only when they are checked. */
static inline void op_proto(struct rop *op, uint32_t site)
{
    op->proto = (struct racc){
        .what = (uint8_t)op->what, .hook = (uint16_t)op->hook, .site = site, .param = 255};
}

/* An op that has found nothing (yet). */
static inline void op_none(struct rop *op)
{
    op->npend = 0;
    op->over = NULL;
    op->nover = op->capover = 0;
}

/* ---- src/races.c: the setting, the lock, an op's frame, call sites ------------------- */

extern struct atl_rc {
    int mode; /* ATLAS_RACES: 1 on, 2 all */
    int dead; /* out of memory: checking stopped */
    pthread_mutex_t mu;
} atl_rc;

/* Out of memory: said once, checking stops. */
void atl_rc_oom(void);

static inline int lock(void)
{
    if (atl_exit_lock(&atl_rc.mu, "the race report") != 0)
        return -1;
    if (atl_rc.dead) {
        pthread_mutex_unlock(&atl_rc.mu);
        return -1;
    }
    return 0;
}

/* A call site, in two steps: before the lock, whether the caller is the
 * program's own frame (dladdr, once per caller: it takes the loader's
 * lock); under it, when the op is checked, the site: that frame, or the
 * stack unwound (the unwinder takes only the loader's write lock, which
 * no thread holds while it runs library constructors; atl_races_init
 * unwinds once first, outside the lock, for what is set up on first use). */
struct rsite {
    void *caller;
    int unwind;
};

/* Whether a launch's caller is a frame a report skips (a CUDA library's, or ours). */
int atl_rsite_skipped(void *caller);

static inline void site_pre(struct rsite *s, void *caller)
{
    s->caller = caller;
    s->unwind = atl_rsite_skipped(caller);
}

/* Under the lock: the site's id (0: none). */
uint32_t atl_rsite_get(const struct rsite *s);
/* The stack a site id names (n 0: none, or forgotten since). */
void atl_rsite_copy(uint32_t id, struct atl_stack *out);

/* An op's start: its call site's first step (into *where), the lock, its
 * stream (op->u: -1 when not tracked). 0 with the lock held, -1 without it
 * (checking stopped). The site is op_site's, when the op is checked. */
int atl_rc_op_open(struct rop *op, struct rpend *pend, int what, int hook, CUstream s, void *caller,
                   struct rsite *where);

/* The op is checked: its description, its call site interned. */
static inline void op_site(struct rop *op, const struct rsite *where)
{
    op_proto(op, atl_rsite_get(where));
}

/* ---- src/races_hb.c: happens-before ---------------------------------------------- */

/* A stream's slot, as stream_slot last found it (key 0: none). */
#define RC_SLOTC 8
struct rslotc {
    uintptr_t key;
    int slot;
};

/* The streams' part read on every op (the rest is races_hb.c's own). */
extern struct atl_rhb {
    struct rstream *st;
    unsigned *dirtyl, ndirty;
    uint64_t legacy_ops;
    struct vc host;                /* what host synchronisations have shown done */
    struct rslotc slotc[RC_SLOTC]; /* stream_slot's last answers */
} atl_rhb;

/* The first stream, the legacy default one (slot 0); -1 out of memory. */
int atl_rhb_init(void);
int atl_rhb_slot_slow(CUstream s, int hook);
/* Everything stream t has done so far (and what it is ordered after) into
 * dst; then its clock moves on. */
void atl_rhb_join_snap(struct vc *dst, unsigned t);
/* The host has seen stream t's work done (kind: HS_*, through the call at site). */
void atl_rhb_host_learns_stream(unsigned t, int kind, uint32_t site);
/* A race's streams, what the 2nd's stream last waited for and what the host last learned of
 * the 1st's, into p (p->e: the 1st; u: the 2nd's stream). */
void atl_rhb_describe(struct rpend *p, unsigned u);
/* Streams tracked (slots made). */
unsigned atl_rhb_streams(void);

/* The slot of the stream a call names: NULL is the legacy default stream,
 * or the calling thread's per-thread one when the entry point is a _ptsz or
 * _ptds variant. A stream first seen here (not created through a hooked
 * call) is asked for its flags. -1 when not tracked. */
static inline int stream_slot(CUstream s, int hook)
{
    if (s == CU_STREAM_LEGACY || (s == NULL && !(atl_hook_flags[hook] & ATL_F_PT)))
        return 0;
    /* a created stream's slot, as last found */
    struct rslotc *c = &atl_rhb.slotc[((uintptr_t)s >> 4) % RC_SLOTC];
    if (c->key == (uintptr_t)s && s != CU_STREAM_PER_THREAD && s != NULL)
        return c->slot;
    return atl_rhb_slot_slow(s, hook);
}

/* Stream u, read only. */
static inline const struct rstream *rhb_st(unsigned u)
{
    return &atl_rhb.st[u];
}

/* Before an op on stream u: the legacy default stream's implicit ordering.
 * An op on it waits for the work before it on every blocking stream (the
 * per-thread default streams are blocking ones); an op on a blocking stream
 * waits for the legacy stream's work before it. Non-blocking streams escape
 * both. Contexts are not told apart: one legacy stream for all of them. */
static inline void touch(unsigned u)
{
    struct rstream *s = &atl_rhb.st[u];
    if (s->kind == RC_LEGACY) {
        for (unsigned k = 0; k < atl_rhb.ndirty; k++) {
            unsigned b = atl_rhb.dirtyl[k];
            if (atl_rhb.st[b].live && atl_rhb.st[b].dirty)
                atl_rhb_join_snap(&atl_rhb.st[u].vc, b), atl_rhb.st[u].ver++;
            atl_rhb.st[b].dirty = 0;
        }
        atl_rhb.ndirty = 0;
        atl_rhb.legacy_ops++;
    } else if (s->kind == RC_BLOCKING || s->kind == RC_PTDS) {
        if (s->legacy_seen != atl_rhb.legacy_ops) {
            atl_rhb_join_snap(&atl_rhb.st[u].vc, 0), atl_rhb.st[u].ver++;
            atl_rhb.st[u].legacy_seen = atl_rhb.legacy_ops;
        }
        if (!atl_rhb.st[u].dirty) {
            atl_rhb.st[u].dirty = 1;
            atl_rhb.dirtyl[atl_rhb.ndirty++] = u;
        }
    }
}

/* The clock an access on u carries. */
static inline uint64_t stamp(unsigned u)
{
    return atl_rhb.st[u].clock;
}

/* e is ordered before what stream u does now. */
static inline int ordered(const struct racc *e, unsigned u)
{
    if (e->stream == u && e->clock >= atl_rhb.st[u].birth)
        return 1;
    return e->clock <= vc_get(&atl_rhb.st[u].vc, e->stream);
}

/* The host knows e done: it orders everything after. */
static inline int host_done(const struct racc *e)
{
    return e->clock <= vc_get(&atl_rhb.host, e->stream);
}

/* The capture stream u is in (NULL: none). */
static inline struct rcap *rhb_cap(unsigned u)
{
    return atl_rhb.st[u].cap;
}

/* ---- src/races_access.c: allocations, an op's accesses, the check ------------------ */

/* The span of device addresses any allocation has held, and the allocations' generation
 * (changes with every allocation made or gone: struct rmemo). */
extern struct atl_rspan {
    uint64_t lo, hi;
    uint64_t gen;
} atl_rspan;

/* v may point into an allocation (most words of a launch are no address at all). */
static inline int rspan_has(uint64_t v)
{
    return v - atl_rspan.lo < atl_rspan.hi - atl_rspan.lo;
}

static inline int overlap(uint64_t alo, uint64_t ahi, uint64_t blo, uint64_t bhi)
{
    return alo < bhi && blo < ahi;
}

/* The allocation v points into, through the ledger. */
struct ralloc *atl_racc_resolve(uint64_t v);
/* A pointer a kernel was given: the whole allocation it reaches, surely at
 * the address itself. */
void atl_racc_pointer(struct rop *op, uint64_t v, int mode, unsigned param);
/* The same through a kernel's word w. */
void atl_racc_word(struct rop *op, uint64_t v, const struct rword *w);
/* The op is enqueued: recorded into the capture its stream is in, or
 * ordered and checked. */
void atl_racc_end(struct rop *op);
/* The op's accesses, checked and kept, at its stream's clock. */
void atl_racc_apply(struct rop *op);
/* Whether an access kept for a, of another stream and not ordered before stream u now,
 * may write bytes [lo, hi): then a change there proves nothing of u's launch. */
int atl_racc_contested(const struct ralloc *a, unsigned u, uint64_t lo, uint64_t hi);
/* Captured graphs: a new one (refs 1, NULL out of memory), one reference less, a capture's
 * graph kept under its handle (the reference handed over), a graph or an instance gone. */
struct rgraph *atl_racc_graph_new(void);
void atl_racc_graph_unref(struct rgraph *g);
void atl_racc_graph_keep(CUgraph graph, struct rgraph *g);
void atl_racc_graph_drop(CUgraph graph);
void atl_racc_exec_drop(CUgraphExec exec);
/* The accesses of a graph instance (NULL: not captured from streams). */
struct rgraph *atl_racc_exec(CUgraphExec exec);

struct racc_counts {
    uint64_t races, races_distinct, possible, possible_distinct, accesses, forgotten, dropped;
};
void atl_racc_counts(struct racc_counts *c);

/* ---- src/races_kern.c: kernels' views, watches ------------------------------------- */

/* Watches in use: ops look at them when any is. */
extern unsigned atl_rk_nwp;

/* A kernel's view, freed with its record (atl_krec_set_races_free). */
void atl_rk_free(void *p);
/* Under the lock: watches whose result was not read at their launch, read when done. */
void atl_rk_poll(unsigned wait_us);
/* After a launch, before it is checked: its watch's second copies, and its result. */
void atl_rk_post(CUstream stream, int hook, CUresult r);
/* At exit, under the lock: a last look at the watches, none after; their counts. */
void atl_rk_exit(uint64_t *watched, uint64_t *seen, uint64_t *unseen, uint64_t *wait_us);

/* ---- src/races_report.c: the reports ------------------------------------------------ */

/* Under the lock: the place of a race (sure) or a possible one the op may print, or NULL
 * (no room left: counted; a race is then kept by the caller for the findings sink). */
struct rpend *atl_rrep_place(struct rop *op, int sure);
/* After the lock: what the op found, through the findings sink, printed where it says so. */
void atl_rrep_print(struct rop *op);

/* Its end: the lock released, then what it found reported. */
static inline void op_close(struct rop *op)
{
    pthread_mutex_unlock(&atl_rc.mu);
    atl_rrep_print(op);
}

#pragma GCC visibility pop

#endif
