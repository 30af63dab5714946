/*
 * Races between streams (ATLAS_RACES): see src/races.h and docs/races.md.
 *
 * Happens-before is kept as vector clocks. Each stream has a clock of its
 * own, which moves on only when another party takes a snapshot of it (an
 * event record, a host synchronisation, the legacy stream's implicit wait),
 * and a vector of what it is ordered after (vc[t]: stream t's work up to clock vc[t]). An access
 * carries its stream and that stream's clock; a later access on stream u is
 * ordered after it when they share the stream, or when the clock is at most
 * u's vc entry or the host's (what host synchronisations have shown to be
 * done: the host then enqueued everything that follows, on any thread, so
 * the host's knowledge orders every later access; threads synchronising
 * among themselves are not seen, and this errs towards silence).
 *
 * Per allocation, the accesses kept are those not yet known to be ordered
 * before everything that follows: an access that the host knows done is
 * dropped, and one that a later access on the same stream covers (same
 * bytes, the same or a stronger kind) is replaced by it; at most RC_KEEP
 * stay (the oldest goes, counted). So memory grows with the allocations
 * touched and the streams that touch each, not with the number of ops.
 *
 * Everything runs under one mutex. The call sites are captured before it is
 * taken (the unwinder may take the loader's lock), and the reports are
 * written after it is released (naming frames does too).
 */
#define _GNU_SOURCE /* syscall */
#include "races.h"

#include "addrmap.h"
#include "capture.h"
#include "config.h"
#include "driver.h"
#include "findings.h"
#include "hint.h"
#include "hookid.h"
#include "kernels.h"
#include "ledger.h"
#include "log.h"
#include "races_watch.h"
#include "services.h"
#include "stack.h"
#include "summary.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RC_KEEP 16          /* accesses kept per allocation */
#define RC_MAX_STREAMS 4096 /* streams tracked; more are not checked (said once) */
#define RC_OP_ACCESSES 64   /* allocations one op is checked against */
#define RC_SITE_DEPTH 8     /* frames of a call site (the first outside CUDA's libraries) */
#define RC_MAX_SITES 16384  /* call sites kept; past it the oldest are forgotten ("?") */
#define RC_EVENT_VC_MAX ((size_t)64 << 20) /* events' clocks, bytes; past it: see ev_snap */
#define RC_PRINT_MAX 100    /* distinct races printed; more are counted */
#define RC_PEND 4           /* reports one op may print */
#define RC_CACHE 1024       /* pages of the address -> allocation cache */
#define RC_GRAPH_MAX 4096   /* accesses kept per captured graph */
#define RC_LEGACY_KEY 1     /* the legacy default stream's key (CU_STREAM_LEGACY) */
/* Watching what a kernel writes (src/races_watch.h) */
#define RC_WATCH_TRIES 3          /* launches of one parameter watched without a change seen */
#define RC_WATCH_MAX 4096         /* launches watched in all */
#define RC_WATCH_WAIT_US 2000     /* a launch's post waits this long for its watch */
#define RC_WATCH_BUDGET_US 3000000 /* and all of them this long in all; then no more watches */
#define RC_WATCH_NEAR 16          /* a write seen this near its pointer is taken from it */

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
static int rmap_get(const struct rmap *m, uint64_t key, void **val)
{
    size_t v = 0;
    int found = key ? atl_addrmap_get(&m->m, key, &v) : m->has0;
    if (found && val)
        *val = key ? (void *)(uintptr_t)v : m->v0;
    return found;
}

static int rmap_put(struct rmap *m, uint64_t key, void *val)
{
    if (!key) {
        m->has0 = 1, m->v0 = val;
        return 0;
    }
    return atl_addrmap_put(&m->m, key, (size_t)(uintptr_t)val);
}

/* Removes key; its value, or NULL. */
static void *rmap_del(struct rmap *m, uint64_t key)
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

/* ---- the state -------------------------------------------------------------- */

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
    uint64_t legacy_seen;  /* blocking streams: the legacy stream's ops absorbed */
    struct vc vc;          /* what it is ordered after */
    uint64_t ver;          /* counts changes of clock and vc: an epoch is (clock, ver) */
    struct rcap *cap;      /* capturing into */
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

struct revent {
    int recorded; /* live (not in a capture) */
    int whole;    /* no clock kept (RC_EVENT_VC_MAX): a wait joins all `from` has done then */
    int from;
    uint64_t clock;
    struct vc vc;
    uint32_t site;
    uint64_t cap_id; /* recorded in that capture (0: none) */
};

/* A kernel's last launch on a stream: its words and the accesses they
 * resolved to, while no allocation came or went (gen == rc.alloc_gen): a
 * loop launches a kernel on the same buffers again and again. */
#define RC_MEMO 4        /* ways per kernel, by stream slot */
#define RC_MEMO_WORDS 64 /* words of a launch a memo holds at most */
struct rmemo {
    uint64_t *v;
    struct racc_op *acc;
    unsigned n;
    uint64_t gen; /* 0: none */
    /* where the accesses were last checked: that stream at that epoch
     * (clock, ver); the same accesses there again check nothing new */
    int u;
    uint64_t clock, ver;
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
    struct rmemo memo[RC_MEMO]; /* by stream slot */
};

/* A stream's slot, as stream_slot last found it (key 0: none). */
#define RC_SLOTC 8
struct rslotc {
    uintptr_t key;
    int slot;
};

/* A launch's caller and the site it names. */
#define RC_CALLERS 256
struct rcaller {
    void *pc;
    uint32_t site;
};

struct rcache {
    uint64_t base, span;
    struct ralloc *a;
};

struct hsrc {
    unsigned char kind;
    uint32_t site;
};

/* A launch being watched: the kernel (its handle, in its unload generation) and the words
 * whose regions are watched. */
struct rwatch {
    int used, running; /* running: its launch was made and the result not yet read */
    int waiting;       /* its launch's post is waiting for the result (watch_poll leaves it) */
    /* the watched stream (enq_key); an op begun on another while running taints it: its
     * result proves nothing (atomic) */
    uintptr_t key;
    int tainted;
    struct atl_watch *w;
    struct atl_krec *rec; /* the watched kernel's record, held (atl_krec_hold) till released */
    CUgraphExec exec; /* a graph launch's: word[] are indices of the graph's accesses */
    uint64_t seq, starts; /* the launch's number; the ops begun when it began */
    unsigned n;
    uint16_t word[ATL_WATCH_REGIONS];
    unsigned char contested[ATL_WATCH_REGIONS];
    struct atl_wregion r[ATL_WATCH_REGIONS];
};

static struct {
    int mode; /* ATLAS_RACES: 1 on, 2 all */
    int dead; /* out of memory: checking stopped */
    pthread_mutex_t mu;
    struct rstream *st;
    unsigned nst, capst;
    unsigned *freeslot, nfree;
    unsigned *dirtyl, ndirty;
    uint64_t legacy_ops;
    struct vc host;
    struct hsrc *hsrc;
    struct rmap streams, events, allocs, graphs, execs, seen, sitemap;
    struct atl_stack *sites;
    uint64_t *site_hash;   /* the stack hash of each slot of sites */
    uint32_t *site_gen;    /* each slot's generation: an id names (slot, generation) */
    unsigned nsites, capsites, site_next; /* site_next: the slot forgotten next, once full */
    size_t ev_vc_bytes;    /* what the events' clocks hold */
    unsigned refused;      /* streams refused a slot (all taken) */
    struct rcache cache[RC_CACHE];
    uint64_t lo, hi;
    struct rcap *caps;
    uint64_t capids;
    uint64_t alloc_gen;            /* counts allocations made and gone (struct rmemo) */
    struct rslotc slotc[RC_SLOTC]; /* stream_slot's last answers */
    struct rcaller callers[RC_CALLERS];
    /* counts */
    uint64_t races, races_distinct, possible, possible_distinct, accesses, forgotten, dropped;
    /* races printed, or held for printing by an op not yet closed (atomic: an op's report is
     * made after the lock, and gives back what the findings sink did not print); races this
     * file had no room to print (RC_PEND, RC_PRINT_MAX) */
    uint64_t printed, held;
    int said_streams, said_graph, said_layout, said_sites, said_events;
    /* Watches (src/races_watch.h). Ops being enqueued and ops begun, by every thread
     * (atomic): a watch counts only when its launch was the one op being enqueued when it
     * began and no other began until its result was read. */
    int enq_inflight;
    uint64_t enq_starts;
    int watch_off; /* no more watches: RC_WATCH_MAX or RC_WATCH_BUDGET_US reached (atomic) */
    int nrunning;  /* watches running (atomic): ops begun look at them */
    struct rwatch wp[ATL_WATCH_SLOTS];
    unsigned nwp; /* of them, in use */
    uint64_t watched, watch_wait_us, words_seen, words_unseen;
} rc = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void oom(void)
{
    if (!rc.dead)
        atl_log_once_oom("the race detector (checking stopped)");
    rc.dead = 1;
}

static int vc_fit(struct vc *v, unsigned n)
{
    if (n <= v->n)
        return 0;
    unsigned m = v->n ? v->n : 8;
    while (m < n)
        m *= 2;
    uint64_t *c = realloc(v->c, (size_t)m * sizeof *c);
    if (!c) {
        oom();
        return -1;
    }
    memset(c + v->n, 0, (size_t)(m - v->n) * sizeof *c);
    v->c = c, v->n = m;
    return 0;
}

static void vc_raise(struct vc *v, unsigned i, uint64_t x)
{
    if (x > vc_get(v, i) && vc_fit(v, i + 1) == 0)
        v->c[i] = x;
}

static void vc_join(struct vc *dst, const struct vc *src)
{
    for (unsigned i = 0; i < src->n; i++)
        if (src->c[i] > vc_get(dst, i))
            vc_raise(dst, i, src->c[i]);
}

/* ---- streams ------------------------------------------------------------------ */

static int grow_streams(void)
{
    unsigned cap = rc.capst ? rc.capst * 2 : 16;
    struct rstream *st = realloc(rc.st, cap * sizeof *st);
    if (!st)
        return -1;
    rc.st = st;
    struct hsrc *hs = realloc(rc.hsrc, cap * sizeof *hs);
    if (!hs)
        return -1;
    rc.hsrc = hs;
    unsigned *d = realloc(rc.dirtyl, cap * sizeof *d);
    if (!d)
        return -1;
    rc.dirtyl = d;
    unsigned *f = realloc(rc.freeslot, cap * sizeof *f);
    if (!f)
        return -1;
    rc.freeslot = f;
    memset(rc.hsrc + rc.capst, 0, (cap - rc.capst) * sizeof *hs);
    rc.capst = cap;
    return 0;
}

static unsigned reclaim_dead_threads(void);

static int slot_new(uintptr_t key, int kind)
{
    unsigned i;
    uint64_t birth = 1;
    struct vc keep = {NULL, 0};
    unsigned char listed = 0; /* still on the legacy stream's list of dirty streams */
    struct rstream old = {0};
    /* all slots taken: those of threads that ended (their per-thread default streams) are
     * given back first, looked for at most once in 256 refusals */
    if (!rc.nfree && rc.nst >= RC_MAX_STREAMS && rc.refused++ % 256 == 0)
        reclaim_dead_threads();
    if (rc.nfree) {
        i = rc.freeslot[--rc.nfree];
        old = rc.st[i];
        birth = rc.st[i].clock + 1; /* later than anything the old stream's accesses carry */
        listed = rc.st[i].dirty;
        keep = rc.st[i].vc;
        if (keep.c)
            memset(keep.c, 0, keep.n * sizeof *keep.c);
    } else {
        if (rc.nst >= RC_MAX_STREAMS) {
            if (!rc.said_streams++)
                atl_log(ATL_WARN,
                        "races: more than %d streams live at once: the accesses of the "
                        "streams past that are not checked",
                        RC_MAX_STREAMS);
            return -1;
        }
        if (rc.nst == rc.capst && grow_streams() != 0) {
            oom();
            return -1;
        }
        i = rc.nst++;
    }
    rc.st[i] = (struct rstream){.key = key,
                                .kind = (unsigned char)kind,
                                .live = 1,
                                .clock = birth,
                                .birth = birth,
                                .dirty = listed,
                                .vc = keep,
                                .wait_from = -1,
                                .old_key = old.key,
                                .old_birth = old.birth,
                                .old_tid = old.tid,
                                .old_kind = old.kind};
    if (kind == RC_PTDS)
        rc.st[i].tid = (uint32_t)(key >> 2);
    rc.hsrc[i] = (struct hsrc){HS_NONE, 0};
    if (rmap_put(&rc.streams, key, (void *)(uintptr_t)(i + 1)) != 0) {
        oom();
        return -1;
    }
    return (int)i;
}

/* The slot of the stream a call names: NULL is the legacy default stream,
 * or the calling thread's per-thread one when the entry point is a _ptsz or
 * _ptds variant. A stream first seen here (not created through a hooked
 * call) is asked for its flags. -1 when not tracked. */
static int stream_slot_slow(CUstream s, int hook);

static inline int stream_slot(CUstream s, int hook)
{
    if (s == CU_STREAM_LEGACY || (s == NULL && !(atl_hook_flags[hook] & ATL_F_PT)))
        return 0;
    /* a created stream's slot, as last found */
    struct rslotc *c = &rc.slotc[((uintptr_t)s >> 4) % RC_SLOTC];
    if (c->key == (uintptr_t)s && s != CU_STREAM_PER_THREAD && s != NULL)
        return c->slot;
    return stream_slot_slow(s, hook);
}

static int stream_slot_slow(CUstream s, int hook)
{
    (void)hook;
    uintptr_t key = (uintptr_t)s;
    int kind = RC_BLOCKING;
    if (s == CU_STREAM_PER_THREAD || s == NULL) {
        /* the thread's id, not its pthread_t: a thread started after another
         * ended often gets the same pthread_t, never the same id (until they
         * wrap); handles are aligned, so an odd key is never one */
        key = ((uintptr_t)syscall(SYS_gettid) << 2) | 3;
        kind = RC_PTDS;
    }
    struct rslotc *c = &rc.slotc[(key >> 4) % RC_SLOTC];
    if (c->key == key)
        return c->slot;
    void *p;
    if (rmap_get(&rc.streams, key, &p)) {
        *c = (struct rslotc){key, (int)(uintptr_t)p - 1};
        return c->slot;
    }
    unsigned flags = 0;
    if (kind == RC_BLOCKING && atl_drv.cuStreamGetFlags &&
        atl_drv.cuStreamGetFlags(s, &flags) == CUDA_SUCCESS && (flags & CU_STREAM_NON_BLOCKING))
        kind = RC_NONBLOCKING;
    return slot_new(key, kind);
}

/* After a snapshot of stream t covers its clock, its later accesses carry
 * a new one, so that the snapshot does not cover them. */
static void tick(unsigned t)
{
    rc.st[t].clock++;
    rc.st[t].ver++;
}

/* Everything stream t has done so far (and what it is ordered after) into
 * dst; then its clock moves on. */
static void join_snap(struct vc *dst, unsigned t)
{
    vc_join(dst, &rc.st[t].vc);
    vc_raise(dst, t, rc.st[t].clock);
    tick(t);
}

/* Before an op on stream u: the legacy default stream's implicit ordering.
 * An op on it waits for the work before it on every blocking stream (the
 * per-thread default streams are blocking ones); an op on a blocking stream
 * waits for the legacy stream's work before it. Non-blocking streams escape
 * both. Contexts are not told apart: one legacy stream for all of them. */
static inline void touch(unsigned u)
{
    struct rstream *s = &rc.st[u];
    if (s->kind == RC_LEGACY) {
        for (unsigned k = 0; k < rc.ndirty; k++) {
            unsigned b = rc.dirtyl[k];
            if (rc.st[b].live && rc.st[b].dirty)
                join_snap(&rc.st[u].vc, b), rc.st[u].ver++;
            rc.st[b].dirty = 0;
        }
        rc.ndirty = 0;
        rc.legacy_ops++;
    } else if (s->kind == RC_BLOCKING || s->kind == RC_PTDS) {
        if (s->legacy_seen != rc.legacy_ops) {
            join_snap(&rc.st[u].vc, 0), rc.st[u].ver++;
            rc.st[u].legacy_seen = rc.legacy_ops;
        }
        if (!rc.st[u].dirty) {
            rc.st[u].dirty = 1;
            rc.dirtyl[rc.ndirty++] = u;
        }
    }
}

/* The clock an access on u carries. */
static uint64_t stamp(unsigned u)
{
    return rc.st[u].clock;
}

/* ---- what the host knows is done -------------------------------------------- */

static void host_raise(unsigned i, uint64_t c, int kind, uint32_t site)
{
    if (c > vc_get(&rc.host, i)) {
        vc_raise(&rc.host, i, c);
        if (i < rc.capst)
            rc.hsrc[i] = (struct hsrc){(unsigned char)kind, site};
    }
}

static void host_learns_vc(const struct vc *v, int kind, uint32_t site)
{
    for (unsigned i = 0; i < v->n; i++)
        host_raise(i, v->c[i], kind, site);
}

static void host_learns_stream(unsigned t, int kind, uint32_t site)
{
    host_learns_vc(&rc.st[t].vc, kind, site);
    host_raise(t, rc.st[t].clock, kind, site);
    tick(t);
}

/* ---- call sites ----------------------------------------------------------------- */

static void site_capture(struct atl_stack *s)
{
    int depth = (int)atl_cfg.stack_depth;
    atl_stack_capture_n(s, depth < RC_SITE_DEPTH ? depth : RC_SITE_DEPTH);
}

/* A site's id: its slot and that slot's generation, + 1 (0: none). Once RC_MAX_SITES are
 * kept, the oldest slot is forgotten for each new site: an id whose slot has moved on names
 * no site ("?"), and is never another's (before, every site past the bound was id 0, and two
 * races at two such sites were one; issue #48). */
#define RC_SITE_BITS 14 /* RC_MAX_SITES = 1 << RC_SITE_BITS */
static uint32_t site_id(unsigned slot)
{
    return ((rc.site_gen[slot] << RC_SITE_BITS) | slot) + 1;
}

static uint32_t site_intern(const struct atl_stack *s)
{
    if (!s->n)
        return 0;
    uint64_t h = atl_stack_hash(s);
    void *p;
    if (rmap_get(&rc.sitemap, h, &p))
        return (uint32_t)(uintptr_t)p;
    unsigned slot;
    if (rc.nsites < RC_MAX_SITES) {
        if (rc.nsites == rc.capsites) {
            unsigned cap = rc.capsites ? rc.capsites * 2 : 64;
            struct atl_stack *n = realloc(rc.sites, cap * sizeof *n);
            if (n)
                rc.sites = n;
            uint64_t *hs = n ? realloc(rc.site_hash, cap * sizeof *hs) : NULL;
            if (hs)
                rc.site_hash = hs;
            uint32_t *g = hs ? realloc(rc.site_gen, cap * sizeof *g) : NULL;
            if (!g)
                return 0;
            rc.site_gen = g;
            rc.capsites = cap;
        }
        slot = rc.nsites++;
        rc.site_gen[slot] = 0;
    } else {
        if (!rc.said_sites++)
            atl_log(ATL_INFO,
                    "races: more than %d call sites: the oldest are forgotten from now on (an "
                    "access made there long ago reads \"at ?\")",
                    RC_MAX_SITES);
        slot = rc.site_next;
        rc.site_next = (rc.site_next + 1) % RC_MAX_SITES;
        rmap_del(&rc.sitemap, rc.site_hash[slot]);
        rc.site_gen[slot] = (rc.site_gen[slot] + 1) & ((1u << (31 - RC_SITE_BITS)) - 1);
    }
    rc.sites[slot] = *s;
    rc.site_hash[slot] = h;
    uint32_t id = site_id(slot);
    if (rmap_put(&rc.sitemap, h, (void *)(uintptr_t)id) != 0)
        return 0;
    return id;
}

/* 1 when id still names the site it was given for (its slot not forgotten since). */
static int site_live(uint32_t id)
{
    unsigned slot = id ? (id - 1) & (RC_MAX_SITES - 1) : 0;
    return id && slot < rc.nsites && site_id(slot) == id;
}

static void site_copy(uint32_t id, struct atl_stack *out)
{
    unsigned slot = id ? (id - 1) & (RC_MAX_SITES - 1) : 0;
    if (id && slot < rc.nsites && site_id(slot) == id)
        *out = rc.sites[slot];
    else
        out->n = 0;
}

/* ---- allocations ---------------------------------------------------------------- */

static size_t cache_index(uint64_t v)
{
    return (size_t)(((v >> 12) * 0x9E3779B97F4A7C15ULL) >> 54) & (RC_CACHE - 1);
}

static struct ralloc *alloc_state(uint64_t seq, uint64_t base, uint64_t span)
{
    void *p;
    if (rmap_get(&rc.allocs, seq, &p))
        return p;
    struct ralloc *a = calloc(1, sizeof *a);
    if (!a || rmap_put(&rc.allocs, seq, a) != 0) {
        free(a);
        oom();
        return NULL;
    }
    a->seq = seq, a->base = base, a->span = span;
    return a;
}

/* The allocation v points into, through the ledger; its base in *base. */
static struct ralloc *resolve(uint64_t v)
{
    if (v < 65536 || v - rc.lo >= rc.hi - rc.lo)
        return NULL;
    struct rcache *c = &rc.cache[cache_index(v)];
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
            struct rcache *c = &rc.cache[cache_index(p)];
            if (c->a == a)
                c->a = NULL;
        }
        return;
    }
    for (size_t i = 0; i < RC_CACHE; i++)
        if (!a || rc.cache[i].a == a)
            rc.cache[i].a = NULL;
}

static void alloc_drop(uint64_t seq)
{
    struct ralloc *a = rmap_del(&rc.allocs, seq);
    if (!a)
        return;
    rc.alloc_gen++;
    cache_drop(a);
    free(a->e);
    free(a);
}

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
static void op_proto(struct rop *op, uint32_t site)
{
    op->proto = (struct racc){
        .what = (uint8_t)op->what, .hook = (uint16_t)op->hook, .site = site, .param = 255};
}

/* An op that has found nothing (yet). */
static void op_none(struct rop *op)
{
    op->npend = 0;
    op->over = NULL;
    op->nover = op->capover = 0;
}

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
        rc.dropped++;
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
    struct ralloc *a = resolve(p);
    if (!a)
        return;
    uint64_t lo = p - a->base, hi = lo + len > a->span ? a->span : lo + len;
    op_add(op, a, lo, hi, lo, mode, 1, 255, NULL);
}

/* A pointer a kernel was given: the whole allocation it reaches, surely at
 * the address itself. */
static void op_pointer(struct rop *op, uint64_t v, int mode, unsigned param)
{
    struct ralloc *a = resolve(v);
    if (a)
        op_add(op, a, 0, a->span, v - a->base, mode, 0, param, NULL);
}

/* The same through a kernel's word w. */
static void op_word(struct rop *op, uint64_t v, const struct rword *w)
{
    struct ralloc *a = resolve(v);
    if (a)
        op_add(op, a, 0, a->span, v - a->base, w->mode, 0, w->param, w);
}

static void stream_desc(unsigned t, struct rsd *d)
{
    d->key = rc.st[t].key, d->kind = rc.st[t].kind, d->tid = rc.st[t].tid;
    d->gone = !rc.st[t].live;
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

static const char *site_name(const struct atl_stack *s, char *buf, size_t n);
static void kernel_name(const char *m, char *buf, size_t n);

/* The first line of a race's report. */
static void race_head(const struct rpend *p, char *buf, size_t n)
{
    char site[256];
    const char *how = p->e.mode == RC_READ || p->x.mode == RC_READ
                          ? (p->sure ? "written on one stream and read on another"
                                     : "maybe written on one stream and read on another")
                          : (p->sure ? "written on two streams" : "maybe written on two streams");
    snprintf(buf, n,
             "%s: alloc#%llu (%llu bytes at 0x%llx, allocated at %s): %s, with nothing "
             "ordering them",
             p->sure ? "race" : "possible race", (unsigned long long)p->seq,
             (unsigned long long)p->bytes, (unsigned long long)p->base,
             site_name(&p->alloc_site, site, sizeof site), how);
}

/* A race as a finding: the allocation, the kernel of a side (the 2nd's
 * first), the 2nd side's call site (where the program made the racing call). */
static void race_finding(struct rpend *p)
{
    race_head(p, p->head, sizeof p->head);
    const struct racc *k = p->x.what == RC_OP_KERNEL   ? &p->x
                           : p->e.what == RC_OP_KERNEL ? &p->e
                                                       : NULL;
    if (k)
        kernel_name(k->name, p->kn, sizeof p->kn);
    p->f = (struct atl_find){.kind = ATL_FINDING_RACE,
                             .message = p->head,
                             .kernel = k ? p->kn : NULL,
                             .kernel_mangled = k ? k->name : NULL,
                             .launch = k ? k->opnum : 0,
                             .alloc = p->seq,
                             .bytes = p->bytes,
                             .has_bytes = 1,
                             .stack = p->site_x.n ? &p->site_x : NULL};
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
            oom();
            return;
        }
        op->over = n, op->capover = cap;
    }
    struct rover *o = &op->over[op->nover++];
    alloc_of(op, a, &o->seq, &o->base, &o->bytes, &o->alloc_site);
    o->e = *e, o->x = *x;
    site_copy(x->site, &o->site_x);
}

/* e (earlier) and x (now, on stream op->u) touch the same bytes of a with
 * nothing ordering them; sure: one of them certainly writes bytes the other
 * certainly touches. */
static void conflict(struct rop *op, const struct ralloc *a, const struct racc *e,
                     const struct racc *x, int sure)
{
    if (sure)
        rc.races++;
    else
        rc.possible++;
    uint64_t key = side_key(side_key(mix(1469598103934665603ULL, (uint64_t)sure), e), x);
    if (rmap_get(&rc.seen, key, NULL))
        return;
    if (rmap_put(&rc.seen, key, (void *)1) != 0) {
        oom();
        return;
    }
    if (sure)
        rc.races_distinct++;
    else
        rc.possible_distinct++;
    /* A race is a finding whether printed or not; a possible one is listed with
     * ATLAS_RACES=all only. Both are formatted and handed to the findings sink after the
     * lock (print_pending): naming a frame asks the loader (dladdr, libdw), whose lock a
     * thread in a library's constructor holds while it may call CUDA and so wait for ours. */
    int room = op->npend < RC_PEND && __atomic_load_n(&rc.printed, __ATOMIC_RELAXED) < RC_PRINT_MAX;
    if (!sure && rc.mode < 2)
        return;
    if (!room) {
        __atomic_add_fetch(&rc.held, 1, __ATOMIC_RELAXED);
        if (sure)
            over_add(op, a, e, x);
        return;
    }
    __atomic_add_fetch(&rc.printed, 1, __ATOMIC_RELAXED); /* the place, taken now */
    struct rpend *p = &op->pend[op->npend++];
    memset(p, 0, sizeof *p);
    p->sure = sure;
    alloc_of(op, a, &p->seq, &p->base, &p->bytes, &p->alloc_site);
    p->e = *e, p->x = *x;
    unsigned u = (unsigned)op->u;
    stream_desc(e->stream, &p->se);
    if (e->clock < rc.st[e->stream].birth) {
        /* an access of the stream the slot held before (destroyed, or its thread ended): that
         * stream, not the one the slot holds now (which may be the 2nd's own: the fix would
         * tell it to wait for itself) */
        const struct rstream *t = &rc.st[e->stream];
        int prev = e->clock >= t->old_birth && t->old_birth;
        p->se.key = prev ? t->old_key : 0;
        p->se.kind = prev ? t->old_kind : RC_BLOCKING;
        p->se.tid = prev ? t->old_tid : 0;
        p->se.gone = 1;
    }
    stream_desc(u, &p->sx);
    site_copy(e->site, &p->site_e);
    site_copy(e->site2, &p->site_e2);
    site_copy(x->site, &p->site_x);
    site_copy(x->site2, &p->site_x2);
    p->host_knew = vc_get(&rc.host, e->stream);
    p->host_kind = rc.hsrc[e->stream].kind;
    site_copy(rc.hsrc[e->stream].site, &p->site_host);
    p->wait_ev = rc.st[u].wait_ev;
    p->wait_from = rc.st[u].wait_from;
    p->wait_clock = rc.st[u].wait_clock;
    site_copy(rc.st[u].wait_site, &p->site_wait);
    if (p->wait_from >= 0)
        stream_desc((unsigned)p->wait_from, &p->swf);
}

static int ordered(const struct racc *e, unsigned u)
{
    if (e->stream == u && e->clock >= rc.st[u].birth)
        return 1;
    return e->clock <= vc_get(&rc.st[u].vc, e->stream);
}

static int overlap(uint64_t alo, uint64_t ahi, uint64_t blo, uint64_t bhi)
{
    return alo < bhi && blo < ahi;
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
    uint64_t birth = rc.st[u].birth;
    rc.accesses++;
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
            if (e->clock <= vc_get(&rc.host, e->stream)) {
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
            rc.forgotten++;
        }
        acc_remove(a, i);
    }
    if (a->n == a->cap) {
        unsigned cap = a->cap ? a->cap * 2 : 2;
        struct racc *n = realloc(a->e, cap * sizeof *n);
        if (!n) {
            oom();
            return;
        }
        a->e = n, a->cap = cap;
    }
    a->e[a->n++] = *x;
}

static struct rgraph *graph_new(void)
{
    struct rgraph *g = calloc(1, sizeof *g);
    if (g)
        g->refs = 1;
    else
        oom();
    return g;
}

static void graph_unref(struct rgraph *g)
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

/* The op is enqueued: recorded into the capture its stream is in, or
 * ordered and checked. */
static void op_apply(struct rop *op);

static void op_end(struct rop *op)
{
    unsigned u = (unsigned)op->u;
    if (rc.st[u].cap) {
        struct rgraph *g = rc.st[u].cap->g;
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
    op_apply(op);
}

/* The op's accesses, checked and kept, at its stream's clock. */
static void op_apply(struct rop *op)
{
    unsigned u = (unsigned)op->u;
    if (!op->n)
        return;
    struct racc x = op->proto;
    x.clock = stamp(u), x.stream = u;
    for (unsigned i = 0; i < op->n && !rc.dead; i++) {
        const struct racc_op *o = &op->accp[i];
        x.lo = o->lo, x.hi = o->hi, x.anchor = o->anchor;
        x.seen = o->seen, x.clo = o->clo, x.chi = o->chi;
        x.mode = o->mode, x.exact = o->exact;
        if (x.what == RC_OP_KERNEL)
            x.param = o->param;
        check(op, o->a, &x);
    }
}

static void print_pending(struct rop *op);
static void watch_poll(unsigned wait_us);

static int lock(void)
{
    if (atl_exit_lock(&rc.mu, "the race report") != 0)
        return -1;
    if (rc.dead) {
        pthread_mutex_unlock(&rc.mu);
        return -1;
    }
    return 0;
}

/* ---- the events -------------------------------------------------------------------- */

static void kern_free(void *p);

unsigned atl_races_init(void)
{
    rc.mode = (int)atl_cfg.races;
    if (!rc.mode)
        return 0;
    atl_ledger_on = 1; /* pointers are resolved to allocations */
    rc.alloc_gen = 1;  /* a memo's gen 0 means none */
    /* the demangler is looked up (dlsym), and the unwinder and stack.c set
     * up (dladdr), now, not first under the lock */
    free(atl_demangle_dup("_Z1fv"));
    struct atl_stack warm;
    atl_stack_capture_n(&warm, 1);
    if (slot_new(RC_LEGACY_KEY, RC_LEGACY) != 0) {
        rc.dead = 1;
        return 0;
    }
    atl_krec_set_races_free(kern_free); /* a kernel's view goes with its record */
    return ATL_ON_LAUNCH | ATL_ON_ALLOC | ATL_ON_COPY | ATL_ON_COPY_DTOH | ATL_ON_MEMSET |
           ATL_ON_SYNC | ATL_ON_CAPTURE | ATL_ON_STREAM;
}

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

static void kern_free(void *p)
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
            oom();
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
            oom();
            return NULL;
        }
        memcpy(k->off, r->off, n * sizeof *k->off);
        memcpy(k->size, r->size, n * sizeof *k->size);
        char *dem = atl_demangle_dup(m);
        atl_races_param_classes(dem, n, k->cls);
        free(dem);
        k->n = n;
        if (kern_words(k) != 0) {
            oom();
            return NULL;
        }
    }
    return k;
}

/* The allocations a launch's parameters point into: the memo of the
 * kernel's last launch on the stream when every word is the same and no
 * allocation came or went since, else resolved (and kept as the memo).
 * Returns the memo, or NULL. */
static struct rmemo *launch_words(struct rkern *k, const void *const *params, unsigned u,
                                  struct rop *op)
{
    struct rmemo *m = &k->memo[u % RC_MEMO];
    unsigned nv = k->nwords <= RC_MEMO_WORDS ? k->nwords : 0;
    if (nv && m->gen == rc.alloc_gen && m->gen) {
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
            op->accp = m->acc;
            op->n = m->n;
            return m;
        }
    }
    uint64_t v[RC_MEMO_WORDS];
    for (unsigned i = 0; i < nv; i++) {
        const unsigned char *p = params[k->words[i].param];
        v[i] = 0;
        if (p)
            memcpy(&v[i], p + k->words[i].off, 8);
    }
    for (unsigned i = 0; i < k->nwords; i++) {
        const struct rword *w = &k->words[i];
        const unsigned char *p = params[w->param];
        uint64_t x;
        if (!p)
            continue;
        memcpy(&x, p + w->off, 8);
        if (x - rc.lo < rc.hi - rc.lo) /* most words are no address at all */
            op_word(op, x, w);
    }
    if (!nv || rc.dead)
        return NULL;
    if (!m->v) {
        m->v = malloc(RC_MEMO_WORDS * sizeof *m->v);
        m->acc = malloc(RC_OP_ACCESSES * sizeof *m->acc);
        if (!m->v || !m->acc) {
            free(m->v), free(m->acc);
            m->v = NULL, m->acc = NULL;
            return NULL; /* no memo: resolved every time */
        }
    }
    memcpy(m->v, v, nv * sizeof *v);
    memcpy(m->acc, op->acc, op->n * sizeof *op->acc);
    m->n = op->n;
    m->gen = rc.alloc_gen;
    m->u = -1;
    return m;
}

/* The 8-byte words of bytes p[0..size) (a by-value blob) that point into an
 * allocation: each may write there. */
static void scan_blob(struct rop *op, const unsigned char *p, size_t size)
{
    for (size_t w = 0; w + 8 <= size; w += 8) {
        uint64_t v;
        memcpy(&v, p + w, 8);
        op_pointer(op, v, RC_MAYWRITE, 0);
    }
}

/* Whether a launch's caller is a frame a report skips (a CUDA library's,
 * as under PyTorch, or ours): then the call site is found by unwinding.
 * Found once per caller (dladdr) and kept in a table read without the lock,
 * one word an entry: the address shifted left, the answer in bit 0. */
#define RC_VERDICTS 1024
static uint64_t verdicts[RC_VERDICTS];

static int caller_skipped(void *caller)
{
    if (!caller)
        return 1;
    uint64_t *slot = &verdicts[((uintptr_t)caller >> 2) % RC_VERDICTS];
    uint64_t w = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (w >> 1 == (uintptr_t)caller)
        return (int)(w & 1);
    int skip = atl_stack_skipped(caller); /* dladdr: not under the lock (the loader's) */
    __atomic_store_n(slot, ((uint64_t)(uintptr_t)caller << 1) | (uint64_t)skip, __ATOMIC_RELAXED);
    return skip;
}

/* The site of a launch whose caller is the program's own code (a program
 * on the driver API): that one frame, no unwinding. Under the lock. */
static uint32_t caller_site(void *caller)
{
    if (atl_cfg.stack_depth == 0)
        return 0;
    struct rcaller *c = &rc.callers[((uintptr_t)caller >> 2) % RC_CALLERS];
    if (c->pc != caller || !site_live(c->site)) {
        struct atl_stack one = {.n = 1, .pc = {caller}};
        c->pc = caller;
        c->site = site_intern(&one);
    }
    return c->site;
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

static void site_pre(struct rsite *s, void *caller)
{
    s->caller = caller;
    s->unwind = caller_skipped(caller);
}

static uint32_t site_get(const struct rsite *s)
{
    if (!s->unwind)
        return caller_site(s->caller);
    struct atl_stack stk;
    site_capture(&stk);
    return site_intern(&stk);
}

/* An op's start: its call site's first step (into *where), the lock, its
 * stream (op->u: -1 when not tracked). 0 with the lock held, -1 without it
 * (checking stopped). The site is op_site's, when the op is checked. */
static int op_open(struct rop *op, struct rpend *pend, int what, int hook, CUstream s, void *caller,
                   struct rsite *where)
{
    site_pre(where, caller);
    op_none(op);
    if (lock() != 0)
        return -1;
    if (rc.nwp)
        watch_poll(0);
    op->u = stream_slot(s, hook);
    op->what = what, op->hook = hook;
    op->n = 0;
    op->accp = op->acc;
    op->freed = NULL;
    op->pend = pend;
    return 0;
}

/* The op is checked: its description, its call site interned. */
static void op_site(struct rop *op, const struct rsite *where)
{
    op_proto(op, site_get(where));
}

/* Its end: the lock released, then what it found reported. */
static void op_close(struct rop *op)
{
    pthread_mutex_unlock(&rc.mu);
    print_pending(op);
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
    int others = __atomic_add_fetch(&rc.enq_inflight, 1, __ATOMIC_ACQ_REL) != 1;
    atl_thr.races_starts = __atomic_add_fetch(&rc.enq_starts, 1, __ATOMIC_ACQ_REL);
    if (__atomic_load_n(&rc.nrunning, __ATOMIC_ACQUIRE) > 0) {
        uintptr_t key = enq_key(s, hook);
        for (int i = 0; i < ATL_WATCH_SLOTS; i++)
            if (__atomic_load_n(&rc.wp[i].running, __ATOMIC_ACQUIRE) &&
                __atomic_load_n(&rc.wp[i].key, __ATOMIC_RELAXED) != key)
                __atomic_store_n(&rc.wp[i].tainted, 1, __ATOMIC_RELEASE);
    }
    return others;
}

void atl_races_enq(int begin, CUstream s, int hook)
{
    if (begin) {
        enq_begin(s, hook);
    } else if (atl_thr.races_enq) {
        atl_thr.races_enq = 0;
        __atomic_sub_fetch(&rc.enq_inflight, 1, __ATOMIC_ACQ_REL);
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
    __atomic_add_fetch(&rc.nrunning, 1, __ATOMIC_ACQ_REL);
}

static void watch_release(struct rwatch *wp)
{
    if (wp->running)
        __atomic_sub_fetch(&rc.nrunning, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&wp->running, 0, __ATOMIC_RELEASE);
    wp->used = wp->waiting = 0;
    wp->w = NULL;
    if (wp->rec)
        atl_krec_release(wp->rec);
    wp->rec = NULL;
    rc.nwp--;
}

/* Under the lock: what a watch saw, into its kernel's words. clean: no other op was begun
 * from its launch's start to its result. A change seen makes the word write, from then on;
 * none (or a result that proves nothing) is a try. */
static void watch_apply_graph(struct rwatch *wp, const struct atl_wregion *out, int clean);

static void watch_apply(struct rwatch *wp, const struct atl_wregion *out, int clean)
{
    rc.watched++;
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
            rc.words_seen++;
            changed = 1;
        } else if (++w->tries == RC_WATCH_TRIES) {
            rc.words_unseen++;
        }
    }
    if (changed) /* the memos hold the accesses' modes */
        for (int i = 0; i < RC_MEMO; i++)
            k->memo[i].gen = 0;
}

/* The same for a graph launch: the graph's kernel accesses that may write. */
static void watch_apply_graph(struct rwatch *wp, const struct atl_wregion *out, int clean)
{
    void *p = NULL;
    rmap_get(&rc.execs, (uint64_t)(uintptr_t)wp->exec, &p);
    struct rgraph *g = p;
    for (unsigned i = 0; g && i < wp->n; i++) {
        if (wp->word[i] >= g->n)
            continue;
        struct rgacc *a = &g->a[wp->word[i]];
        if (a->mode != RC_MAYWRITE || a->anchor != wp->r[i].dptr)
            continue;
        if (clean && !wp->contested[i] && out[i].lo < out[i].hi) {
            a->mode = RC_WRITE, a->seen = 1, a->clo = out[i].lo, a->chi = out[i].hi;
            rc.words_seen++;
        } else if (++a->tries == RC_WATCH_TRIES) {
            rc.words_unseen++;
        }
    }
}

/* Under the lock: watches whose result was not read at their launch, read when done. */
static void watch_poll(unsigned wait_us)
{
    if (atl_capture_forbids_sync())
        return; /* an event query is refused during a global capture */
    for (int i = 0; i < ATL_WATCH_SLOTS && rc.nwp; i++) {
        struct rwatch *wp = &rc.wp[i];
        if (!wp->used || !wp->running || wp->waiting)
            continue;
        struct atl_wregion out[ATL_WATCH_REGIONS];
        int res = atl_watch_result(wp->w, wait_us, out, wp->n);
        if (res == 0)
            continue;
        if (res == 1) /* clean: no op begun on another stream since the launch */
            watch_apply(wp, out, !__atomic_load_n(&wp->tainted, __ATOMIC_ACQUIRE));
        else
            rc.watched++;
        watch_release(wp);
    }
}

/* Whether an access kept for a, of another stream and not ordered before stream u now,
 * may write bytes [lo, hi): then a change there proves nothing of u's launch. */
static int contested(const struct ralloc *a, unsigned u, uint64_t lo, uint64_t hi)
{
    for (unsigned i = 0; i < a->n; i++) {
        const struct racc *e = &a->e[i];
        if (e->mode != RC_READ && !ordered(e, u) && e->clock > vc_get(&rc.host, e->stream) &&
            overlap(e->lo, e->hi, lo, hi))
            return 1;
    }
    return 0;
}

void atl_races_teardown(void)
{
    if (lock() != 0)
        return;
    if (rc.nwp)
        watch_poll(100000);
    for (int i = 0; i < ATL_WATCH_SLOTS; i++)
        if (rc.wp[i].used && rc.wp[i].running)
            watch_release(&rc.wp[i]);
    pthread_mutex_unlock(&rc.mu);
    atl_watch_reset();
}

/* Under the lock: a watch slot not in use, or NULL. */
static struct rwatch *watch_slot(void)
{
    for (int i = 0; i < ATL_WATCH_SLOTS; i++)
        if (!rc.wp[i].used)
            return &rc.wp[i];
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
        rc.nwp++;
        wp->key = enq_key(s, hook);
        wp->starts = atl_thr.races_starts;
        wp->n = n;
        memcpy(wp->r, r, n * sizeof *r);
    }
    pthread_mutex_unlock(&rc.mu);
    if (!n)
        return;
    wp->w = atl_watch_begin(atl_own_stream(s, hook), r, n);
    if (!wp->w) {
        if (lock() == 0) {
            watch_release(wp);
            pthread_mutex_unlock(&rc.mu);
        }
        return;
    }
    atl_thr.races_watch = (int)(wp - rc.wp) + 1;
}

/* Before a launch: the first launches of a kernel with parameters that may write, each of
 * whose pointers reaches an allocation, are watched (src/races_watch.h), until a write is
 * seen through each or RC_WATCH_TRIES were not. Only when this launch is the one op being
 * enqueued, and no capture could see the watch's copies or forbids its event query. */
void atl_races_launch_pre(const struct atl_launch *l)
{
    atl_thr.races_watch = 0;
    int others = enq_begin(l->stream, l->hook);
    if (others || __atomic_load_n(&rc.watch_off, __ATOMIC_RELAXED) || !l->func ||
        (l->rec && __atomic_load_n(&l->rec->races_quiet, __ATOMIC_RELAXED)) ||
        atl_capture_any() || atl_capture_forbids_sync())
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
        if (w->mode != RC_MAYWRITE || w->tries >= RC_WATCH_TRIES ||
            w->misses >= RC_WATCH_TRIES)
            continue;
        /* a word that points into no allocation at RC_WATCH_TRIES launches in a row is no
         * pointer (a size or a stride of a by-value struct, cuBLAS's): not looked at again,
         * so that its kernel's launches skip all this (such words kept every launch of their
         * kernel here: races-bench's untyped loop +1,048 instructions a launch, +780 now) */
        uint64_t v = word_value(k, w, params, packed, psize);
        struct ralloc *a = v - rc.lo < rc.hi - rc.lo ? resolve(v) : NULL;
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
        wp->contested[n] = (unsigned char)contested(a, (unsigned)u, v - a->base, v - a->base + len);
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
    if (others || __atomic_load_n(&rc.watch_off, __ATOMIC_RELAXED) || atl_capture_any() ||
        atl_capture_forbids_sync() || lock() != 0)
        return;
    void *p = NULL;
    rmap_get(&rc.execs, (uint64_t)(uintptr_t)g->exec, &p);
    struct rgraph *gr = p;
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
        struct ralloc *al = resolve(a->anchor);
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
        wp->contested[n] = (unsigned char)contested(al, (unsigned)u, off, off + len);
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
static void watch_post(CUstream stream, int hook, CUresult r)
{
    int wi = atl_thr.races_watch;
    atl_thr.races_watch = 0;
    if (!wi) {
        atl_races_enq(0, NULL, 0);
        return;
    }
    struct rwatch *wp = &rc.wp[wi - 1];
    /* running (ops begun on other streams taint it) before the check that none at all was
     * begun since its start: between the two, nothing is missed */
    if (lock() != 0) {
        atl_races_enq(0, NULL, 0);
        return;
    }
    watch_run(wp);
    wp->waiting = 1;
    pthread_mutex_unlock(&rc.mu);
    int ok = r == CUDA_SUCCESS &&
             __atomic_load_n(&rc.enq_starts, __ATOMIC_ACQUIRE) == wp->starts;
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
        if (__atomic_add_fetch(&rc.watch_wait_us, us, __ATOMIC_RELAXED) >= RC_WATCH_BUDGET_US)
            __atomic_store_n(&rc.watch_off, 1, __ATOMIC_RELAXED);
    }
    if (lock() != 0)
        return;
    wp->waiting = 0;
    if (res == 1) /* clean: no op begun on another stream since the launch began */
        watch_apply(wp, out, !__atomic_load_n(&wp->tainted, __ATOMIC_ACQUIRE));
    if (res != 0) { /* done, or failed; else read when done (watch_poll) */
        if (res < 0)
            rc.watched++;
        watch_release(wp);
    }
    if (rc.watched >= RC_WATCH_MAX)
        __atomic_store_n(&rc.watch_off, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&rc.mu);
}

void atl_races_launch(const struct atl_launch *l, CUresult r)
{
    watch_post(l->stream, l->hook, r);
    if (r != CUDA_SUCCESS)
        return;
    const unsigned char *packed = l->packed;
    size_t psize = l->packed_size;
    struct rpend pend[RC_PEND];
    struct rop op;
    struct rsite where;
    if (op_open(&op, pend, RC_OP_KERNEL, l->hook, l->stream, l->caller, &where) != 0)
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
                op_word(&op, v, w);
            }
        if (!k->exact && packed) /* no layout: the packed buffer, one by-value blob */
            scan_blob(&op, packed, psize > 65536 ? 65536 : psize);
        else if (!k->exact && params && !rc.said_layout++)
            atl_log(ATL_INFO, "races: a kernel without a parameter layout from the driver "
                              "(cuFuncGetParamInfo): its pointers are not checked");
        if (memo && !rc.st[u].cap) {
            /* The same accesses as this kernel's last launch, on the same
             * stream in the same epoch (nothing ordered it anew since):
             * whatever they race with, the last launch's accesses, still
             * kept (or replaced by ones that cover them), race with too, and
             * were checked when it came. Only the legacy stream's books. */
            touch((unsigned)u);
            struct rstream *su = &rc.st[u];
            if (memo->u != u || memo->clock != su->clock || memo->ver != su->ver) {
                op_site(&op, &where);
                op.proto.name = k->name, op.proto.opnum = l->seq;
                op_apply(&op);
                memo->u = u, memo->clock = su->clock, memo->ver = su->ver;
            }
        } else {
            op_site(&op, &where);
            op.proto.name = k->name, op.proto.opnum = l->seq;
            op_end(&op);
        }
    }
    op_close(&op);
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
    op_pointer(op, o->op.ptr.ptr, mode, 255);
}

void atl_races_copy(const struct atl_copy *c, CUresult r)
{
    if (r != CUDA_SUCCESS)
        return;
    struct rpend pend[RC_PEND];
    struct rop op;
    struct rsite where;
    if (op_open(&op, pend, RC_OP_COPY, c->hook, c->stream, c->caller, &where) != 0)
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
        op_end(&op);
        /* the engine decided whether the host waited (src/events.h): a generic copy, whose
         * direction only the driver knows, is taken as waiting (errs towards silence) */
        if (c->host_waits && !rc.st[u].cap)
            host_learns_stream((unsigned)u, HS_COPY, op.proto.site);
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
    if (op_open(&op, pend, RC_OP_MEMSET, m->hook, m->stream, m->caller, &where) != 0)
        return;
    if (op.u >= 0) {
        op_site(&op, &where);
        uint64_t row = (uint64_t)m->count * m->elem;
        op_range(&op, m->dst, m->height ? (m->height - 1) * m->pitch + row : row, RC_WRITE);
        op_end(&op);
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
    rc.alloc_gen++; /* a pointer that named nothing may name it now */
    if (a->kind != ATL_ALLOC_VMM) {
        if (rc.hi == rc.lo) /* the first: lo == hi == 0 until now */
            rc.lo = lo, rc.hi = hi;
        rc.lo = lo < rc.lo ? lo : rc.lo;
        rc.hi = hi > rc.hi ? hi : rc.hi;
    }
    pthread_mutex_unlock(&rc.mu);
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
    int known = rmap_get(&rc.allocs, f->rec.seq, &p);
    int u = f->async && known ? stream_slot(f->stream, f->hook) : -1;
    if (u >= 0 && !rc.st[u].cap) {
        /* freed in stream order: the memory may be handed out again after
         * it, so every access on another stream must come before it */
        struct ralloc *a = p;
        op_begin(&op, u, RC_OP_FREE, f->hook, site_get(&where), pend);
        op.freed = &f->rec;
        op_add(&op, a, 0, a->span, 0, RC_WRITE, 1, 255, NULL);
        op_end(&op);
    }
    alloc_drop(f->rec.seq);
    pthread_mutex_unlock(&rc.mu);
    print_pending(&op);
}

void atl_races_vmm(const struct atl_vmm *v, CUresult r)
{
    if (r != CUDA_SUCCESS || lock() != 0)
        return;
    if (v->op == ATL_VMM_MAP) {
        rc.alloc_gen++;
        if (rc.hi == rc.lo)
            rc.lo = v->ptr, rc.hi = v->ptr + v->bytes;
        rc.lo = v->ptr < rc.lo ? v->ptr : rc.lo;
        rc.hi = v->ptr + v->bytes > rc.hi ? v->ptr + v->bytes : rc.hi;
    } else if (v->op == ATL_VMM_UNMAP) {
        cache_drop(NULL); /* the addresses name nothing now */
        rc.alloc_gen++;
    } else if (v->op == ATL_VMM_RELEASE && v->known) {
        alloc_drop(v->rec.seq);
    }
    pthread_mutex_unlock(&rc.mu);
}

/* A stream gone (destroyed; a thread's default stream, its thread ended): the key may name
 * another stream next; its slot goes to the next stream made, its clock going on. */
static void slot_release(uintptr_t key)
{
    void *v = rmap_del(&rc.streams, (uint64_t)key);
    memset(rc.slotc, 0, sizeof rc.slotc);
    if (v) {
        unsigned t = (unsigned)(uintptr_t)v - 1;
        rc.st[t].live = 0;
        rc.st[t].cap = NULL;
        rc.st[t].clock++;
        rc.freeslot[rc.nfree++] = t;
    }
}

static void stream_gone(CUstream s)
{
    slot_release((uintptr_t)s);
}

/* The slots of per-thread default streams whose thread has ended (a signal 0 to it finds no
 * such thread): given back. A program that starts thousands of threads, each using its
 * default stream once, took a slot for each, and past RC_MAX_STREAMS no new stream was
 * checked (issue #48: a plain two-stream race missed after 4,094 threads). */
static unsigned reclaim_dead_threads(void)
{
    unsigned n = 0;
    pid_t pid = getpid();
    int saved = errno; /* the program's */
    for (unsigned t = 0; t < rc.nst; t++) {
        const struct rstream *s = &rc.st[t];
        if (!s->live || s->kind != RC_PTDS)
            continue;
        if (syscall(SYS_tgkill, pid, (pid_t)s->tid, 0) == 0 || errno != ESRCH)
            continue;
        slot_release(s->key);
        n++;
    }
    errno = saved;
    return n;
}

/* An event's clock, as of its record on stream u: a copy of u's vector clock (one entry per
 * stream slot). 20,000 live events beside 4,000 streams held 791 MB (issue #48): past
 * RC_EVENT_VC_MAX of them, an event keeps no copy (whole), and what waits for it, or syncs
 * on it, is ordered after all that its stream has done by then: more than the record
 * covered, so races hidden, never false ones. Said once. */
static void ev_snap(struct revent *ev, unsigned u)
{
    size_t had = (size_t)ev->vc.n * sizeof *ev->vc.c;
    size_t need = (size_t)(rc.st[u].vc.n > u + 1 ? rc.st[u].vc.n : u + 1) * sizeof *ev->vc.c;
    if (rc.ev_vc_bytes - had + need > RC_EVENT_VC_MAX) {
        if (!rc.said_events++)
            atl_log(ATL_INFO,
                    "races: the recorded events' clocks hold %zu MiB: events recorded from now "
                    "on order what waits for them after all their stream has done by the wait "
                    "(races behind such a wait may go unreported; none is made up)",
                    RC_EVENT_VC_MAX >> 20);
        free(ev->vc.c);
        ev->vc = (struct vc){NULL, 0};
        ev->whole = 1;
        rc.ev_vc_bytes -= had;
        tick(u); /* what follows the record is after it, as join_snap's tick says */
        return;
    }
    ev->whole = 0;
    if (ev->vc.c)
        memset(ev->vc.c, 0, ev->vc.n * sizeof *ev->vc.c);
    join_snap(&ev->vc, u);
    rc.ev_vc_bytes = rc.ev_vc_bytes - had + (size_t)ev->vc.n * sizeof *ev->vc.c;
}

/* What an event orders a wait after, into dst: its clock, or (whole) all its stream has done
 * by now. */
static void ev_join(struct vc *dst, const struct revent *ev)
{
    if (!ev->whole) {
        vc_join(dst, &ev->vc);
        return;
    }
    if (ev->from >= 0 && (unsigned)ev->from < rc.nst)
        join_snap(dst, (unsigned)ev->from);
}

/* The host learns an event's work done (a sync on it, a query that succeeded): its clock, or
 * (whole) all its stream has done by now. */
static void host_learns_event(const struct revent *ev, int kind, uint32_t site)
{
    if (ev->whole && ev->from >= 0)
        host_learns_stream((unsigned)ev->from, kind, site);
    else
        host_learns_vc(&ev->vc, kind, site);
}

static struct revent *event_get(CUevent e, int make)
{
    void *p = NULL;
    if (rmap_get(&rc.events, (uint64_t)(uintptr_t)e, &p) || !make)
        return p;
    struct revent *ev = calloc(1, sizeof *ev);
    if (!ev || rmap_put(&rc.events, (uint64_t)(uintptr_t)e, ev) != 0) {
        free(ev);
        oom();
        return NULL;
    }
    ev->from = -1;
    return ev;
}

static int capture_active(uint64_t id)
{
    for (struct rcap *c = rc.caps; c; c = c->next)
        if (c->id == id)
            return 1;
    return 0;
}

static struct rcap *capture_of(uint64_t id)
{
    for (struct rcap *c = rc.caps; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

void atl_races_sync(const struct atl_sync *s, CUresult r)
{
    if (r != CUDA_SUCCESS)
        return;
    struct rsite where;
    site_pre(&where, s->caller);
    if (lock() != 0)
        return;
    uint32_t site = site_get(&where);
    if (s->kind == ATL_SYNC_CTX) {
        for (unsigned t = 0; t < rc.nst; t++) {
            host_raise(t, rc.st[t].clock, HS_CTX, site);
            tick(t);
        }
    } else if (s->kind == ATL_SYNC_STREAM) {
        int u = stream_slot(s->stream, s->hook);
        if (u >= 0)
            host_learns_stream((unsigned)u, HS_STREAM, site);
    } else {
        struct revent *ev = event_get(s->event, 0);
        if (ev && ev->recorded)
            host_learns_event(ev, HS_EVENT, site);
    }
    pthread_mutex_unlock(&rc.mu);
}

void atl_races_capture(const struct atl_capture *c, CUresult r)
{
    if (lock() != 0)
        return;
    int u = stream_slot(c->stream, c->hook);
    if (u < 0) {
        pthread_mutex_unlock(&rc.mu);
        return;
    }
    if (c->begin) {
        struct rcap *cap = r == CUDA_SUCCESS ? calloc(1, sizeof *cap) : NULL;
        if (cap && (cap->g = graph_new()) != NULL) {
            cap->id = ++rc.capids;
            cap->next = rc.caps;
            rc.caps = cap;
            rc.st[u].cap = cap;
        } else {
            free(cap);
        }
    } else if (rc.st[u].cap) {
        /* the capture ends, whatever the driver answers: every stream in it leaves */
        struct rcap *cap = rc.st[u].cap;
        for (unsigned t = 0; t < rc.nst; t++)
            if (rc.st[t].cap == cap)
                rc.st[t].cap = NULL;
        for (struct rcap **pp = &rc.caps; *pp; pp = &(*pp)->next)
            if (*pp == cap) {
                *pp = cap->next;
                break;
            }
        if (r == CUDA_SUCCESS && c->graph) {
            struct rgraph *old = rmap_del(&rc.graphs, (uint64_t)(uintptr_t)c->graph);
            graph_unref(old);
            if (rmap_put(&rc.graphs, (uint64_t)(uintptr_t)c->graph, cap->g) == 0)
                cap->g = NULL;
        }
        graph_unref(cap->g);
        free(cap);
    }
    pthread_mutex_unlock(&rc.mu);
}

void atl_races_graph_inst(const struct atl_graph_inst *g, CUresult r)
{
    if (r != CUDA_SUCCESS || !g->exec || lock() != 0)
        return;
    graph_unref(rmap_del(&rc.execs, (uint64_t)(uintptr_t)g->exec));
    void *p;
    if (rmap_get(&rc.graphs, (uint64_t)(uintptr_t)g->graph, &p)) {
        struct rgraph *gr = p;
        if (rmap_put(&rc.execs, (uint64_t)(uintptr_t)g->exec, gr) == 0)
            gr->refs++;
    }
    pthread_mutex_unlock(&rc.mu);
}

void atl_races_graph_launch(const struct atl_graph_launch *g, CUresult r)
{
    watch_post(g->stream, g->hook, r);
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
    rmap_get(&rc.execs, (uint64_t)(uintptr_t)g->exec, &p);
    struct rgraph *gr = p;
    if (u >= 0 && rc.st[u].cap) {
        /* launched into a capture: its accesses become the outer graph's */
        for (size_t i = 0; gr && rc.st[u].cap->g && i < gr->n; i++)
            graph_add(rc.st[u].cap->g, &gr->a[i]);
    } else if (u >= 0) {
        uint32_t site = site_get(&where);
        op_begin(&op, u, RC_OP_GRAPH, g->hook, site, pend);
        if (!gr && !rc.said_graph++)
            atl_log(ATL_INFO, "races: a graph launched that was not captured from streams "
                              "(built node by node, or captured before): it orders its "
                              "stream, its own accesses are not checked");
        if (gr && gr->overflow && !rc.said_graph++)
            atl_log(ATL_INFO,
                    "races: a captured graph with more than %d accesses: the rest "
                    "are not checked",
                    RC_GRAPH_MAX);
        /* One unit on its stream: every node's access at the launch's
         * place. Each node keeps its own description; the op is rebuilt per
         * node so that a report names the node. */
        touch((unsigned)u);
        uint64_t clock = stamp((unsigned)u);
        for (size_t i = 0; gr && i < gr->n && !rc.dead; i++) {
            const struct rgacc *n = &gr->a[i];
            struct ralloc *a = resolve(n->anchor);
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
    pthread_mutex_unlock(&rc.mu);
    print_pending(&op);
}

/* ---- host functions and callbacks -------------------------------------------------- */

/* The program's function with what the host learns when it runs: the
 * stream's work up to it is done. */
struct rhostfn {
    CUhostFn fn;
    CUstreamCallback cb;
    void *data;
    struct vc vc;
    uint32_t site;
};

static void host_fn_learn(struct rhostfn *h, int kind)
{
    pthread_mutex_lock(&rc.mu);
    if (!rc.dead)
        host_learns_vc(&h->vc, kind, h->site);
    pthread_mutex_unlock(&rc.mu);
}

static void CUDA_CB host_fn_run(void *p)
{
    struct rhostfn *h = p;
    host_fn_learn(h, HS_HOSTFN);
    CUhostFn fn = h->fn;
    void *data = h->data;
    free(h->vc.c);
    free(h);
    fn(data);
}

static void CUDA_CB host_cb_run(CUstream s, CUresult status, void *p)
{
    struct rhostfn *h = p;
    if (status == CUDA_SUCCESS)
        host_fn_learn(h, HS_CALLBACK);
    CUstreamCallback cb = h->cb;
    void *data = h->data;
    free(h->vc.c);
    free(h);
    cb(s, status, data);
}

void atl_races_stream_pre(struct atl_stream_op *s)
{
    if ((s->kind != ATL_SOP_HOST_FN || !s->fn) && (s->kind != ATL_SOP_CALLBACK || !s->cb))
        return;
    struct rsite where;
    site_pre(&where, s->caller);
    if (lock() != 0)
        return;
    int u = stream_slot(s->stream, s->hook);
    struct rhostfn *h = NULL;
    /* a captured host node runs at every replay: left alone */
    if (u >= 0 && !rc.st[u].cap && (h = calloc(1, sizeof *h)) != NULL) {
        touch((unsigned)u);
        h->fn = s->fn, h->cb = s->cb, h->data = s->data;
        h->site = site_get(&where);
        join_snap(&h->vc, (unsigned)u);
        if (rc.dead) {
            free(h->vc.c);
            free(h);
            h = NULL;
        }
    }
    pthread_mutex_unlock(&rc.mu);
    if (!h)
        return;
    if (s->kind == ATL_SOP_HOST_FN)
        s->fn = host_fn_run;
    else
        s->cb = host_cb_run;
    s->data = h;
}

void atl_races_stream_post(const struct atl_stream_op *s, CUresult r)
{
    if ((s->kind == ATL_SOP_HOST_FN && s->fn == host_fn_run) ||
        (s->kind == ATL_SOP_CALLBACK && s->cb == host_cb_run)) {
        if (r != CUDA_SUCCESS) { /* never called: ours to free */
            struct rhostfn *h = s->data;
            free(h->vc.c);
            free(h);
        }
        return;
    }
    if (s->kind == ATL_SOP_HOST_FN || s->kind == ATL_SOP_CALLBACK || r != CUDA_SUCCESS)
        return;
    struct rsite where = {.unwind = 1};
    if (s->kind == ATL_SOP_RECORD)
        site_pre(&where, s->caller); /* named in reports as where the event was recorded */
    if (lock() != 0)
        return;
    switch (s->kind) {
    case ATL_SOP_CREATE:
        if (s->pstream && *s->pstream) {
            /* a handle still known: its stream was destroyed through a path
             * not seen; this is another stream */
            stream_gone(*s->pstream);
            slot_new((uintptr_t)*s->pstream,
                     (s->flags & CU_STREAM_NON_BLOCKING) ? RC_NONBLOCKING : RC_BLOCKING);
        }
        break;
    case ATL_SOP_DESTROY:
        stream_gone(s->stream);
        break;
    case ATL_SOP_RECORD: {
        int u = stream_slot(s->stream, s->hook);
        struct revent *ev = u >= 0 ? event_get(s->event, 1) : NULL;
        if (!ev)
            break;
        if (rc.st[u].cap) { /* a node of the capture: a wait on it joins the capture */
            ev->cap_id = rc.st[u].cap->id;
            break;
        }
        touch((unsigned)u);
        ev->cap_id = 0;
        ev->recorded = 1;
        ev->from = u;
        ev->clock = rc.st[u].clock;
        ev->site = site_get(&where);
        ev_snap(ev, (unsigned)u);
        break;
    }
    case ATL_SOP_WAIT: {
        int u = stream_slot(s->stream, s->hook);
        struct revent *ev = event_get(s->event, 0);
        if (u < 0)
            break;
        if (ev && ev->cap_id && !rc.st[u].cap && capture_active(ev->cap_id)) {
            rc.st[u].cap = capture_of(ev->cap_id); /* joins the capture */
            break;
        }
        if (rc.st[u].cap)
            break;
        touch((unsigned)u);
        rc.st[u].wait_ev = (uintptr_t)s->event;
        rc.st[u].wait_from = ev && ev->recorded ? ev->from : -1;
        rc.st[u].wait_clock = ev && ev->recorded ? ev->clock : 0;
        rc.st[u].wait_site = ev && ev->recorded ? ev->site : 0;
        if (ev && ev->recorded) /* a wait for an event never recorded waits for nothing */
            ev_join(&rc.st[u].vc, ev), rc.st[u].ver++;
        break;
    }
    case ATL_SOP_QUERY_STREAM: {
        int u = stream_slot(s->stream, s->hook);
        if (u >= 0 && !rc.st[u].cap)
            host_learns_stream((unsigned)u, HS_QUERY, 0);
        break;
    }
    case ATL_SOP_QUERY_EVENT: {
        struct revent *ev = event_get(s->event, 0);
        if (ev && ev->recorded)
            host_learns_event(ev, HS_QUERY, 0);
        break;
    }
    case ATL_SOP_GRAPH_DESTROY:
        graph_unref(rmap_del(&rc.graphs, (uint64_t)(uintptr_t)s->graph));
        break;
    case ATL_SOP_EXEC_DESTROY:
        graph_unref(rmap_del(&rc.execs, (uint64_t)(uintptr_t)s->exec));
        break;
    case ATL_SOP_EVENT_DESTROY: {
        struct revent *ev = rmap_del(&rc.events, (uint64_t)(uintptr_t)s->event);
        if (ev) {
            rc.ev_vc_bytes -= (size_t)ev->vc.n * sizeof *ev->vc.c;
            free(ev->vc.c);
            free(ev);
        }
        break;
    }
    default:
        break;
    }
    pthread_mutex_unlock(&rc.mu);
}

/* ---- the reports --------------------------------------------------------------------- */

static const char *stream_name(const struct rsd *d, char *buf, size_t n)
{
    switch (d->kind) {
    case RC_LEGACY:
        snprintf(buf, n, "the legacy default stream");
        break;
    case RC_PTDS:
        snprintf(buf, n, "the per-thread default stream of thread %u%s", d->tid,
                 d->gone ? " (ended since)" : "");
        break;
    default:
        if (d->gone && !d->key) {
            snprintf(buf, n, "a stream destroyed since");
            break;
        }
        snprintf(buf, n, "stream 0x%llx%s%s%s%s", (unsigned long long)d->key,
                 d->kind == RC_NONBLOCKING || d->gone ? " (" : "",
                 d->kind == RC_NONBLOCKING ? "non-blocking" : "",
                 d->kind == RC_NONBLOCKING && d->gone ? ", " : "",
                 d->gone                     ? "destroyed since)"
                 : d->kind == RC_NONBLOCKING ? ")"
                                             : "");
    }
    return buf;
}

static const char *site_name(const struct atl_stack *s, char *buf, size_t n)
{
    if (!s->n)
        snprintf(buf, n, "?");
    else
        atl_stack_site(s, buf, n);
    return buf;
}

static const char *mode_name(int mode, int kernel)
{
    if (mode == RC_READ)
        return "reads";
    if (mode == RC_WRITE)
        return kernel ? "the operator's output: writes" : "writes";
    return "may write";
}

static void kernel_name(const char *m, char *buf, size_t n)
{
    char *dem = atl_demangle_dup(m);
    snprintf(buf, n, "%.300s", dem ? dem : m ? m : "?");
    free(dem);
}

/* One side of a race: what it was, where in the allocation, which stream,
 * from where. */
static void side_desc(const struct racc *a, const struct rsd *sd, const struct atl_stack *site,
                      const struct atl_stack *site2, char *buf, size_t n)
{
    char what[720], sn[128], st[256], st2[256];
    char kn[320];
    int what_kind = a->what == RC_OP_GRAPH ? a->sub : a->what;
    const char *hook = atl_hook_names[a->what == RC_OP_GRAPH ? a->hook2 : a->hook];
    switch (what_kind) {
    case RC_OP_KERNEL: {
        char mode[160];
        kernel_name(a->name, kn, sizeof kn);
        if (a->seen && a->what == RC_OP_GRAPH)
            snprintf(mode, sizeof mode,
                     "writes: +%llu..+%llu from it changed at a watched launch of the graph",
                     (unsigned long long)a->clo, (unsigned long long)a->chi - 1);
        else if (a->seen && a->opnum == a->seen)
            snprintf(mode, sizeof mode, "writes: +%llu..+%llu from it changed at this launch",
                     (unsigned long long)a->clo, (unsigned long long)a->chi - 1);
        else if (a->seen)
            snprintf(mode, sizeof mode, "writes: +%llu..+%llu from it changed at launch#%llu",
                     (unsigned long long)a->clo, (unsigned long long)a->chi - 1,
                     (unsigned long long)a->seen);
        else
            snprintf(mode, sizeof mode, "%s", mode_name(a->mode, 1));
        if (a->what == RC_OP_GRAPH)
            snprintf(what, sizeof what, "kernel=%s parameter %u (%s) at +%llu", kn, a->param,
                     mode, (unsigned long long)a->anchor);
        else
            snprintf(what, sizeof what, "launch#%llu kernel=%s parameter %u (%s) at +%llu",
                     (unsigned long long)a->opnum, kn, a->param, mode,
                     (unsigned long long)a->anchor);
        break;
    }
    case RC_OP_FREE:
        snprintf(what, sizeof what, "%s frees it", hook);
        break;
    default:
        if (a->exact)
            snprintf(what, sizeof what, "%s %s +%llu..+%llu", hook, mode_name(a->mode, 0),
                     (unsigned long long)a->lo, (unsigned long long)(a->hi - 1));
        else
            snprintf(what, sizeof what, "%s %s at +%llu", hook, mode_name(a->mode, 0),
                     (unsigned long long)a->anchor);
    }
    if (a->what == RC_OP_GRAPH)
        snprintf(buf, n, "%s of a graph (its node %s, captured at %s), on %s, at %s",
                 atl_hook_names[a->hook], what, site_name(site2, st2, sizeof st2),
                 stream_name(sd, sn, sizeof sn), site_name(site, st, sizeof st));
    else
        snprintf(buf, n, "%s, on %s, at %s", what, stream_name(sd, sn, sizeof sn),
                 site_name(site, st, sizeof st));
}

static const char *host_kind_name(int k)
{
    static const char *const names[] = {"?",
                                        "a stream synchronisation",
                                        "an event synchronisation",
                                        "a context synchronisation",
                                        "a blocking copy",
                                        "a successful query",
                                        "a host function",
                                        "a stream callback"};
    return k >= 0 && k < (int)(sizeof names / sizeof names[0]) ? names[k] : "?";
}

/* Why nothing orders the 2nd after the 1st, from what the 2nd's stream last
 * waited for and what the host last learned of the 1st's stream. */
static void missing_edge(const struct rpend *p, char *buf, size_t n)
{
    char a[128], b[128], c[128], site[256];
    stream_name(&p->se, a, sizeof a);
    stream_name(&p->sx, b, sizeof b);
    size_t k = 0;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (k < n)                                                                                 \
            k += (size_t)snprintf(buf + k, n - k, __VA_ARGS__);                                    \
    } while (0)
    if (p->wait_ev && p->wait_from < 0)
        ADD("%s last waited for event 0x%llx, which was never recorded (a wait for nothing)", b,
            (unsigned long long)p->wait_ev);
    else if (p->wait_ev && p->swf.key == p->se.key && p->swf.kind == p->se.kind &&
             p->wait_clock < p->e.clock)
        ADD("%s last waited for event 0x%llx, recorded on %s at %s before the 1st: the record "
            "must come after the 1st",
            b, (unsigned long long)p->wait_ev, a, site_name(&p->site_wait, site, sizeof site));
    else if (p->wait_ev)
        ADD("%s last waited for event 0x%llx, recorded on %s at %s, not on %s", b,
            (unsigned long long)p->wait_ev, stream_name(&p->swf, c, sizeof c),
            site_name(&p->site_wait, site, sizeof site), a);
    else
        ADD("%s never waited for an event recorded on %s after the 1st", b, a);
    if (p->host_knew)
        ADD("; the host last synchronised with %s through %s at %s, before the 1st", a,
            host_kind_name(p->host_kind), site_name(&p->site_host, site, sizeof site));
    else
        ADD("; the host did not synchronise with %s in between", a);
    if ((p->se.kind == RC_LEGACY && p->sx.kind == RC_NONBLOCKING) ||
        (p->sx.kind == RC_LEGACY && p->se.kind == RC_NONBLOCKING))
        ADD("; a non-blocking stream is not ordered by the legacy default stream");
    if (p->se.kind == RC_PTDS && p->sx.kind == RC_PTDS)
        ADD("; the per-thread default streams of two threads do not order each other");
    ADD(". Fix: record an event on %s after the 1st and make %s wait for it "
        "(cuEventRecord, cuStreamWaitEvent) before the 2nd",
        a, b);
#undef ADD
}

/* The missing edge printed last (print_pending), to tell the same again in a few words. */
static pthread_mutex_t edge_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_edge[1400];

/* After the lock: what the op found, through the findings sink, printed where it says so. */
static void print_pending(struct rop *op)
{
    struct rpend *p = op->pend;
    for (int i = 0; i < op->npend; i++, p++) {
        const char *tag = p->sure ? "race" : "possible race";
        /* a race is a finding (said at ATLAS_LOG_LEVEL=error, atlas-trace -q); a possible one
         * is listed only when asked for */
        int lvl = p->sure ? ATL_ERROR : ATL_WARN;
        char e[1400], x[1400], edge[1400];
        if (p->sure) {
            race_finding(p);
            if (!atl_find_open(&p->f)) {
                /* suppressed, or past the print limit: its place is given back */
                __atomic_sub_fetch(&rc.printed, 1, __ATOMIC_RELAXED);
                continue;
            }
        } else {
            race_head(p, p->head, sizeof p->head);
        }
        atl_log(lvl, "%s", p->head);
        side_desc(&p->e, &p->se, &p->site_e, &p->site_e2, e, sizeof e);
        side_desc(&p->x, &p->sx, &p->site_x, &p->site_x2, x, sizeof x);
        missing_edge(p, edge, sizeof edge);
        atl_log(lvl, "%s:   1st: %s", tag, e);
        atl_log(lvl, "%s:   2nd: %s", tag, x);
        /* the same edge as the race printed just before (one missing wait found on several
         * buffers): said once, then named (issue #46: one edge told four times in 16 lines) */
        char sa[128], sb[128];
        pthread_mutex_lock(&edge_mu);
        int same = strcmp(edge, last_edge) == 0;
        if (!same)
            snprintf(last_edge, sizeof last_edge, "%s", edge);
        pthread_mutex_unlock(&edge_mu);
        if (same)
            atl_log(lvl, "%s:   missing edge: the same as the race above's (between %s and %s)",
                    tag, stream_name(&p->se, sa, sizeof sa), stream_name(&p->sx, sb, sizeof sb));
        else
            atl_log(lvl, "%s:   missing edge: %s", tag, edge);
        if (p->sure)
            atl_find_close(&p->f);
    }
    if (op->nover) {
        /* one at a time through a full record, as race_finding reads it */
        struct rpend *t = malloc(sizeof *t);
        for (size_t i = 0; t && i < op->nover; i++) {
            const struct rover *o = &op->over[i];
            memset(t, 0, sizeof *t);
            t->sure = 1;
            t->seq = o->seq, t->base = o->base, t->bytes = o->bytes;
            t->alloc_site = o->alloc_site, t->site_x = o->site_x;
            t->e = o->e, t->x = o->x;
            race_finding(t);
            t->f.no_print = 1;
            atl_find_open(&t->f);
        }
        if (!t)
            atl_log_once_oom("the race report (races past the printed ones are not written)");
        free(t);
    }
    free(op->over);
    op_none(op);
}

void atl_races_exit(void)
{
    if (atl_exit_lock(&rc.mu, "the race summary") != 0)
        return;
    if (rc.nwp) /* watches still under way: a last look */
        watch_poll(100000);
    __atomic_store_n(&rc.watch_off, 1, __ATOMIC_RELAXED);
    if (!rc.nwp)
        atl_watch_exit();
    uint64_t watched = rc.watched, wseen = rc.words_seen, wunseen = rc.words_unseen;
    uint64_t races = rc.races, rd = rc.races_distinct, poss = rc.possible,
             pd = rc.possible_distinct, acc = rc.accesses, forgot = rc.forgotten,
             dropped = rc.dropped;
    unsigned streams = rc.nst;
    uint64_t unprinted = __atomic_load_n(&rc.held, __ATOMIC_RELAXED);
    int dead = rc.dead;
    pthread_mutex_unlock(&rc.mu);
    char all[64], lists[80];
    snprintf(lists, sizeof lists, "%s lists them",
             atl_hint_setting("ATLAS_RACES", "all", all, sizeof all));
    /* the races a suppressions file silenced are said apart, as the summary line says them
     * (this line said "6 found" where the summary said "0 races, 6 findings suppressed") */
    uint64_t quiet = atl_findings_suppressed(ATL_FINDING_RACE);
    char supp[64] = "";
    if (quiet)
        snprintf(supp, sizeof supp, "; %llu of them suppressed", (unsigned long long)quiet);
    /* numbers as the summary line writes them (2,114), in one run alike */
    char n1[32], n2[32], n3[32], n4[32], n5[32], n6[32], n7[32];
    atl_log(ATL_WARN,
            "races: %s found (%s distinct%s), %s possible (%s distinct: a side only may write, or "
            "may not touch the same bytes; %s); %s access%s checked on %s stream%s; %s launch%s "
            "watched for %s writes%s",
            atl_summary_number(races, n1), atl_summary_number(rd, n2), supp,
            atl_summary_number(poss, n3), atl_summary_number(pd, n4),
            rc.mode > 1 ? "listed above" : lists, atl_summary_number(acc, n5),
            acc == 1 ? "" : "es", atl_summary_number(streams, n6), streams == 1 ? "" : "s",
            atl_summary_number(watched, n7), watched == 1 ? "" : "es",
            watched == 1 ? "its kernel's" : "their kernels'",
            dead ? " (stopped early: out of memory)" : "");
    if (watched)
        atl_log(ATL_INFO,
                "races: %s launch%s watched for what their kernels write: %s parameter%s "
                "seen writing, %s not in %d launches each (those stay \"may write\")",
                atl_summary_number(watched, n1), watched == 1 ? "" : "es",
                atl_summary_number(wseen, n2), wseen == 1 ? "" : "s",
                atl_summary_number(wunseen, n3), RC_WATCH_TRIES);
    if (unprinted)
        atl_log(ATL_WARN,
                "races: %llu distinct ones not printed (at most %d are printed for one call, %d "
                "in all; the races among them are findings all the same: counted, in the "
                "findings file)",
                (unsigned long long)unprinted, RC_PEND, RC_PRINT_MAX);
    if (forgot)
        atl_log(ATL_INFO,
                "races: %llu accesses forgotten (more than %d unordered ones kept for "
                "one allocation): races with them are not seen",
                (unsigned long long)forgot, RC_KEEP);
    if (dropped)
        atl_log(ATL_INFO,
                "races: %llu accesses not checked (ops reaching more than %d allocations, or "
                "places in one, such as PyTorch's multi-tensor kernels: the first %d are)",
                (unsigned long long)dropped, RC_OP_ACCESSES, RC_OP_ACCESSES);
}
