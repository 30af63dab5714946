/*
 * Red zones: a poisoned tail after every guarded driver allocation, checked
 * on the GPU; freed allocations kept poisoned a while (the quarantine) and
 * checked for writes after free. (The allocation ledger's reports, which
 * run with red zones too: src/leaks.c.)
 *
 * Why tails and not a sanitizer: compute-sanitizer memcheck costs 12x to
 * 44x per launch on the H200 and cannot see an overrun that stays inside
 * one big allocation a program carves up. A tail costs one memset at birth
 * and one read per check, so it can stay on; it finds overruns past the end
 * of each driver allocation (writes before the start are not seen).
 *
 * Two kinds of check (docs/redzone.md):
 * - queued checks, of a few zones, on the program's own stream and never
 *   waited for: before every free of a guarded allocation (that zone; the
 *   same kernel then fills the freed body with the poison, for the
 *   quarantine), when a freed allocation leaves the quarantine (all of it),
 *   and in launch mode after every launch (the zones of the allocations its
 *   parameters point into, freed ones included). Stream order places them
 *   exactly; their verdicts land in mapped host memory and are read at the
 *   program's next synchronisation, at the next check queued, or when the
 *   ring of verdicts fills (only then is the oldest waited for);
 * - full checks of every zone, at host syncs (sync and launch modes), at
 *   context teardown and exit: they synchronise the context first.
 * Outside launch mode an overrun is found later than it happened; the
 * launches whose parameter words point into the damaged allocation are the
 * suspects (each launch's candidate words are kept in a log beside the
 * launch history).
 * No check runs while a stream capture is in progress (a sync or a launch on
 * the legacy stream would invalidate the capture, and a kernel or memset
 * into a capturing stream would be recorded into the user's graph). A check
 * skipped for a capture is simply made at the next opportunity.
 */
#define _GNU_SOURCE
#include "redzone.h"

#include "addrmap.h"
#include "capture.h"
#include "config.h"
#include "driver.h"
#include "fault.h"
#include "findings.h"
#include "hint.h"
#include "kernels.h"
#include "kselect.h"
#include "ledger.h"
#include "log.h"
#include "pools.h"
#include "summary.h"
#include "redzone_gpu.h"
#include "services.h"
#include "stack.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CHECK_FREE, CHECK_SYNC, CHECK_LAUNCH };

static size_t pad; /* ATLAS_REDZONE; 0: no red zones */
static unsigned char fill;
static int mode;
static int active; /* red zones on (the ledger's reports are src/leaks.c's) */
static uint64_t min_idx;
static size_t qmax; /* ATLAS_REDZONE_QUARANTINE_MB in bytes; 0: no quarantine */

static uint64_t guarded_total, quarantined_total, checks, skipped_capture;
static uint64_t unpadded_total; /* allocations made without their red zone (no memory for it) */

/* ---- the zone set -----------------------------------------------------------
 * The ledger holds full records (call stacks and all); a scan needs only
 * (start, length), so the zones keep their own compact array, and the copy
 * into the full check's table is redone only when `version` moved. `lo` and
 * `hi` bound every zone's allocation (never shrunk): a parameter word outside
 * them is no pointer to a guarded allocation, without a lookup. A freed
 * allocation in the quarantine stays here as a zone of its own bytes and
 * tail (`freed`), checked like any other. */
struct zone {
    CUdeviceptr base, start; /* allocation base; first byte checked */
    size_t bytes, len;       /* what the program asked for; bytes checked */
    uint64_t seq;
    uint64_t born; /* the newest launch when it was made: no older launch reaches it */
    int watched;   /* poisoned and not yet reported */
    int freed;     /* in the quarantine: start == base, len = bytes + red zone */
    /* launch mode with ATLAS_KERNEL: the newest launch that reached it and
     * had no check (its kernel left out), so a later check cannot tell
     * which launch wrote it */
    uint64_t unchecked;
};
static pthread_mutex_t zones_lock = PTHREAD_MUTEX_INITIALIZER;
static struct zone *zones;
static size_t nzones, capzones;
static struct atl_addrmap zone_at; /* base -> index in zones */
static uint64_t version;
static uint64_t zones_lo = UINT64_MAX, zones_hi; /* read without the lock */

static void zone_add(const struct zone *z)
{
    pthread_mutex_lock(&zones_lock);
    size_t i;
    if (z->base < __atomic_load_n(&zones_lo, __ATOMIC_RELAXED))
        __atomic_store_n(&zones_lo, z->base, __ATOMIC_RELAXED);
    if (z->start + z->len > __atomic_load_n(&zones_hi, __ATOMIC_RELAXED))
        __atomic_store_n(&zones_hi, z->start + z->len, __ATOMIC_RELAXED);
    if (atl_addrmap_get(&zone_at, z->base, &i)) {
        /* the base came back without a free we saw: the new zone wins */
        zones[i] = *z;
        version++;
        pthread_mutex_unlock(&zones_lock);
        return;
    }
    if (nzones == capzones) {
        size_t ncap = capzones ? capzones * 2 : 64;
        struct zone *n = realloc(zones, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&zones_lock);
            atl_log_once_oom("the red-zone table");
            return;
        }
        zones = n;
        capzones = ncap;
    }
    if (atl_addrmap_put(&zone_at, z->base, nzones) != 0) {
        pthread_mutex_unlock(&zones_lock);
        atl_log_once_oom("the red-zone table");
        return;
    }
    zones[nzones++] = *z;
    version++;
    pthread_mutex_unlock(&zones_lock);
}

/* Removes the zone of `base` (when `freed` matches); 1 and *out when found.
 * O(1): the last zone moves into the hole. */
static int zone_remove_kind(CUdeviceptr base, int freed, struct zone *out)
{
    size_t i;
    pthread_mutex_lock(&zones_lock);
    int found = atl_addrmap_get(&zone_at, base, &i) && zones[i].freed == freed;
    if (found) {
        *out = zones[i];
        atl_addrmap_del(&zone_at, base);
        if (i != --nzones) {
            zones[i] = zones[nzones];
            atl_addrmap_put(&zone_at, zones[i].base, i); /* present: no growth */
        }
        version++;
    }
    pthread_mutex_unlock(&zones_lock);
    return found;
}

static int zone_remove(CUdeviceptr base, struct zone *out)
{
    return zone_remove_kind(base, 0, out);
}

/* Sets the watch of allocation seq's zone (if still there: its base may be
 * another allocation's by now). */
static void zone_set_watched(CUdeviceptr base, uint64_t seq, int watched)
{
    size_t i;
    pthread_mutex_lock(&zones_lock);
    if (atl_addrmap_get(&zone_at, base, &i) && zones[i].seq == seq) {
        zones[i].watched = watched;
        version++;
    }
    pthread_mutex_unlock(&zones_lock);
}

/* The watched zone of the guarded allocation that address v points into
 * (its first byte up to the end of its red zone, so a pointer one past the
 * end counts; a freed allocation in the quarantine by its base only). With
 * zones_lock held. A launch's parameter words repeat from launch to launch
 * (the same buffers), so the answers are kept in a small direct-mapped
 * cache: a hit costs a few compares, a miss a lookup in the ledger
 * (O(log n)) and here (O(1)). An entry names its zone by index and by
 * allocation number, and is used only while the zone at that index is
 * still that allocation's: zone_remove moves zones about, and numbers are
 * never reused, so nothing has to be invalidated. */
#define HOLD_CACHE 256
static struct {
    uint64_t lo, hi; /* the allocation: base up to the end of its red zone */
    uint64_t seq;
    size_t i;
} hold_cache[HOLD_CACHE];

static const struct zone *zone_holding_locked(uint64_t v)
{
    size_t h = (size_t)(((v >> 4) * 0x9E3779B97F4A7C15ull) >> 56) % HOLD_CACHE;
    size_t i = hold_cache[h].i;
    if (!(v - hold_cache[h].lo < hold_cache[h].hi - hold_cache[h].lo && i < nzones &&
          zones[i].seq == hold_cache[h].seq)) {
        /* most pointers are an allocation's base: one hash probe; the
         * others walk the ledger's tree (14 levels at 10,000 allocations,
         * each a cache miss once they outgrow the cache) */
        CUdeviceptr base;
        uint64_t seq;
        if (!atl_addrmap_get(&zone_at, v, &i) &&
            (!atl_ledger_find_guarded(v, &base, &seq) || !atl_addrmap_get(&zone_at, base, &i) ||
             zones[i].seq != seq))
            return NULL;
        /* the zone's allocation ends where its red zone does */
        hold_cache[h].lo = zones[i].base;
        hold_cache[h].hi = zones[i].start + zones[i].len;
        hold_cache[h].seq = zones[i].seq;
        hold_cache[h].i = i;
    }
    /* the zone itself, not a copy: the caller copies it once, where it
     * keeps it */
    return zones[i].watched ? &zones[i] : NULL;
}

/* Launch mode, a launch ATLAS_KERNEL leaves out: the zones its words reach
 * are marked, so that the check after a later launch does not take that
 * launch for the culprit of what it finds there. */
static void zones_mark_unchecked(const uint64_t *v, unsigned n, uint64_t seq)
{
    pthread_mutex_lock(&zones_lock);
    for (unsigned k = 0; k < n; k++) {
        CUdeviceptr base;
        uint64_t s;
        size_t i;
        if (atl_addrmap_get(&zone_at, v[k], &i) ||
            (atl_ledger_find_guarded(v[k], &base, &s) && atl_addrmap_get(&zone_at, base, &i) &&
             zones[i].seq == s))
            zones[i].unchecked = seq;
    }
    pthread_mutex_unlock(&zones_lock);
}

/* ---- what each launch's parameters point at ------------------------------------
 * Every 8-byte-aligned word of every parameter (by-value structs included;
 * the layout is the kernel record's, from the driver) whose value falls
 * between the lowest and the highest guarded address is a candidate
 * pointer. They are computed once per launch: launch mode looks each up to
 * find the zones to check after it; every mode keeps them in a log beside
 * the launch history, so that an overrun found later can be put down to the
 * launches that could have reached it (and the others ruled out). No lookup
 * and no lock on the launch path for the log: a launch reserves its words
 * with one atomic add and publishes its index entry last, seqlock-style
 * like the launch history's ring. The log holds about the ring's launches
 * (8 words each on average); a launch whose words were overwritten, or that
 * had more than WORDS_MAX candidates, cannot be ruled out. WORDS_MAX holds
 * the widest launch PyTorch makes: a multi-tensor kernel (the foreach
 * optimizers' _foreach_* ops) gets up to 110 tensors' addresses in one
 * by-value struct (up to 36 in each of 4 lists). */
#define WORDS_MAX 256
#define WL_UNKNOWN 1u   /* no parameter layout: its words are not known */
#define WL_TRUNC 2u     /* more candidate words than kept */
#define WL_NOTRUN 4u    /* it failed, or went into a capture: it did not run */
#define WL_NOBUF 8u     /* with WL_UNKNOWN: the packed parameter buffer could not be read */
#define WL_NOPARAMS 16u /* its kernel has no parameters: it reaches nothing through them */
struct lword {
    uint64_t v;
    uint32_t arg, off;
};
struct wl_idx {
    uint64_t seq; /* written last; 0 while being written */
    uint64_t pos;
    uint32_t n, flags;
};
static struct lword *wl_words;
static struct wl_idx *wl_idx;
static uint64_t wl_wmask, wl_imask, wl_head;
static pthread_once_t wl_once = PTHREAD_ONCE_INIT;

static void wl_make(void)
{
    uint64_t slots = atl_fault_ring_slots();
    struct wl_idx *idx = calloc(slots, sizeof *idx);
    struct lword *w = calloc(slots * 8, sizeof *w);
    if (!idx || !w) {
        free(idx), free(w);
        atl_log_once_oom("the red zones' log of launch parameters");
        return;
    }
    wl_wmask = slots * 8 - 1;
    wl_imask = slots - 1;
    wl_words = w;
    __atomic_store_n(&wl_idx, idx, __ATOMIC_RELEASE);
}

static void wl_put(uint64_t seq, const struct lword *w, unsigned n, unsigned flags)
{
    struct wl_idx *idx = __atomic_load_n(&wl_idx, __ATOMIC_ACQUIRE);
    if (!idx) { /* the first launch (or no memory for the log) */
        pthread_once(&wl_once, wl_make);
        idx = __atomic_load_n(&wl_idx, __ATOMIC_ACQUIRE);
    }
    if (!idx || !seq)
        return;
    uint64_t pos = __atomic_fetch_add(&wl_head, n, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n; i++) {
        struct lword *d = &wl_words[(pos + i) & wl_wmask];
        ATL_RST(d->v, w[i].v);
        ATL_RST(d->arg, w[i].arg);
        ATL_RST(d->off, w[i].off);
    }
    struct wl_idx *e = &idx[seq & wl_imask];
    ATL_RST(e->seq, 0);
    ATL_RST(e->pos, pos);
    ATL_RST(e->n, n);
    ATL_RST(e->flags, flags);
    __atomic_store_n(&e->seq, seq, __ATOMIC_RELEASE);
}

/* Whether launch `seq` has a parameter word in [lo, hi): 1 (and which, in
 * *arg and *off), 0 (none: ruled out, or it did not run), -1 (not known). */
static int wl_reaches(uint64_t seq, uint64_t lo, uint64_t hi, unsigned *arg, unsigned *off)
{
    struct wl_idx *idx = __atomic_load_n(&wl_idx, __ATOMIC_ACQUIRE);
    if (!idx)
        return -1;
    struct wl_idx *e = &idx[seq & wl_imask];
    if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != seq)
        return -1;
    uint64_t pos = __atomic_load_n(&e->pos, __ATOMIC_ACQUIRE);
    uint32_t n = __atomic_load_n(&e->n, __ATOMIC_ACQUIRE);
    uint32_t flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);
    int r = flags & WL_NOTRUN ? 0 : flags & WL_UNKNOWN ? -1 : 0;
    for (uint32_t i = 0; r == 0 && !(flags & WL_NOTRUN) && i < n; i++) {
        const struct lword *d = &wl_words[(pos + i) & wl_wmask];
        uint64_t v = __atomic_load_n(&d->v, __ATOMIC_ACQUIRE);
        if (v - lo < hi - lo) {
            *arg = __atomic_load_n(&d->arg, __ATOMIC_ACQUIRE);
            *off = __atomic_load_n(&d->off, __ATOMIC_ACQUIRE);
            r = 1;
        }
    }
    if (r == 0 && (flags & WL_TRUNC) && !(flags & WL_NOTRUN))
        r = -1;
    /* still that launch's, and its words not overwritten while read (the
     * loads above are acquires: none moves after these) */
    if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != seq ||
        __atomic_load_n(&wl_head, __ATOMIC_ACQUIRE) - pos > wl_wmask + 1)
        return -1;
    return r;
}

/* The candidate words of launch l, into w (at most WORDS_MAX); *flags says
 * what is not known. Returns how many. */
static unsigned launch_words(const struct atl_launch *l, struct lword *w, unsigned *flags)
{
    /* the layout the kernel's record took from the driver, of any length;
     * none (or no parameters: a kernel may still write through a pointer
     * it reads from device memory) is not known */
    struct atl_krec *rec = l->rec;
    *flags = 0;
    if (!rec || !atl_krec_exact(rec)) {
        *flags = WL_UNKNOWN;
        return 0;
    }
    if (rec->nparams == 0) {
        *flags = WL_NOPARAMS;
        return 0;
    }
    const uint32_t *off = rec->off, *size = rec->size;
    /* the packed buffer, decoded by the engine (atl_launch_packed) */
    const unsigned char *buf = l->params ? NULL : l->packed;
    size_t buflen = l->params ? 0 : l->packed_size;
    if (!l->params && !buf) {
        *flags = WL_UNKNOWN | WL_NOBUF;
        return 0;
    }
    uint64_t lo = __atomic_load_n(&zones_lo, __ATOMIC_RELAXED);
    uint64_t hi = __atomic_load_n(&zones_hi, __ATOMIC_RELAXED);
    /* in locals: the stores into w would otherwise make the compiler read
     * the record's fields again at every word (this runs at every launch) */
    unsigned n = 0, np = rec->nparams;
    void **params = l->params;
    const struct atl_kword *kw = rec->words;
    if (params && kw) {
        /* the record's list of the words the loop below would find: the
         * same words in the same order, without the walk of the layout */
        for (unsigned k = 0, nk = rec->nwords; k < nk; k++) {
            const unsigned char *p = params[kw[k].param];
            uint64_t v;
            if (!p)
                continue;
            memcpy(&v, p + kw[k].off, sizeof v);
            if (v < lo || v > hi)
                continue;
            if (n == WORDS_MAX) {
                *flags |= WL_TRUNC;
                return n;
            }
            w[n++] = (struct lword){v, kw[k].param, kw[k].off};
        }
        return n;
    }
    for (unsigned i = 0; i < np; i++) {
        uint32_t po = off[i], ps = size[i];
        const unsigned char *p;
        if (params) {
            p = params[i];
        } else {
            if ((size_t)po + ps > buflen) {
                *flags = WL_UNKNOWN | WL_NOBUF;
                return 0;
            }
            p = buf + po;
        }
        if (!p || ps < 8)
            continue;
        for (uint32_t o = (8 - po % 8) % 8; o + 8 <= ps; o += 8) {
            uint64_t v;
            memcpy(&v, p + o, sizeof v);
            if (v < lo || v > hi)
                continue;
            if (n == WORDS_MAX) {
                *flags |= WL_TRUNC;
                return n;
            }
            w[n++] = (struct lword){v, i, o};
        }
    }
    return n;
}

/* ---- recent launches ----------------------------------------------------------
 * Outside a launch's own check an overrun is found later than it happened;
 * the launches since the last clean full check are the suspects. They are
 * the launch history's answer (src/fault.h: the launches since number N),
 * whose ring every launch writes anyway; the launch words' log rules out
 * those that could not have reached the damaged allocation. */
#define SUSPECTS 16
static uint64_t clean_upto; /* launches up to this one passed a full check */
/* ... one that read the quarantine too: where a freed allocation's suspects begin. A check of
 * the live zones says nothing of it: a launch made before the free may write after it (on
 * another stream, the missing record_stream), and a live zone's check after that launch read
 * only the tail the allocation had then. */
static uint64_t clean_upto_freed;

/* The launch after which zone z's suspects are looked for. */
static uint64_t clean_from(const struct zone *z)
{
    return __atomic_load_n(z->freed ? &clean_upto_freed : &clean_upto, __ATOMIC_ACQUIRE);
}

static void launch_line(const char *lead, uint64_t seq, void *func, const unsigned g[3],
                        const unsigned b[3], const char *tail)
{
    char name[256];
    atl_kernel_name(func, name, sizeof name);
    atl_log(ATL_ERROR, "redzone: %slaunch#%llu kernel=%s grid=(%u,%u,%u) block=(%u,%u,%u)%s", lead,
            (unsigned long long)seq, name, g[0], g[1], g[2], b[0], b[1], b[2], tail);
}

/* ---- reports ------------------------------------------------------------------
 * Who found an overrun, for the report. */
enum { BY_LAUNCH, BY_FREE, BY_FULL, BY_RELEASE };
struct qent;
struct finder {
    int by;
    const char *where; /* BY_FREE, BY_FULL: the entry point (or "exit") */
    uint64_t upto;     /* BY_FREE, BY_FULL, BY_RELEASE: the newest launch made before the check */
    int defer;         /* a full check in launch mode before exit: see full_report */
    /* BY_LAUNCH: the launch, its stream, and the parameter word that reached the zone */
    uint64_t seq;
    void *func;
    unsigned grid[3], block[3];
    CUstream stream;
    unsigned arg, off;
    const char *whole; /* BY_LAUNCH: a full check, and why (what the launch reaches is not known) */
    const struct qent *q; /* a freed allocation's quarantine entry, when the check had it */
    /* BY_FULL: the quarantine's zones too (teardown, exit, atlas_redzone_scan:
     * a full check at every host sync would read all of it each time) */
    int freed_too;
};

/* The launches since the last clean check, sorted out by reach. */
#define SUS_GROUPS 64
struct sus_group {
    void *obj;
    int graph, unknown; /* a graph launch; a launch whose words are not known */
    int after;          /* made after the free of the (freed) allocation */
    uint64_t n;
    struct atl_ring_ent newest;
    unsigned arg, off;
};
struct sus_tally {
    uint64_t lo, hi, born;
    /* a freed allocation: the newest launch before its free, and what
     * ordered the launches before it: all of them (cuMemFree waits for the
     * device), or those on its stream */
    uint64_t freed_upto;
    int freed, free_sync;
    CUstream free_stream;
    uint64_t reached, reached_after, ruled, unknown, graphs;
    uint64_t more; /* in no group (too many kernels) */
    unsigned ng;
    struct sus_group g[SUS_GROUPS];
};

static void sus_add(struct sus_tally *t, const struct atl_ring_ent *e, int graph, int unknown,
                    unsigned arg, unsigned off)
{
    int after = t->freed && e->seq > t->freed_upto;
    unsigned i = 0;
    while (i < t->ng && !(t->g[i].obj == e->obj && t->g[i].graph == graph &&
                          t->g[i].unknown == unknown && t->g[i].after == after))
        i++;
    if (i == t->ng) {
        if (t->ng == SUS_GROUPS) {
            t->more++;
            return;
        }
        t->g[t->ng++] =
            (struct sus_group){.obj = e->obj, .graph = graph, .unknown = unknown, .after = after};
    }
    struct sus_group *g = &t->g[i];
    g->n++;
    g->newest = *e;
    g->arg = arg;
    g->off = off;
}

static void sus_launch(const struct atl_ring_ent *e, void *ctx)
{
    struct sus_tally *t = ctx;
    unsigned arg = 0, off = 0;
    if (e->seq <= t->born) {
        t->ruled++; /* made before the allocation was */
        return;
    }
    if (t->freed && e->seq <= t->freed_upto &&
        (t->free_sync || (e->stream == t->free_stream ||
                          ((!e->stream || e->stream == CU_STREAM_LEGACY) &&
                           (!t->free_stream || t->free_stream == CU_STREAM_LEGACY))))) {
        t->ruled++; /* ordered before the free, and its poison */
        return;
    }
    if (e->hook & ATL_RING_GRAPH) {
        t->graphs++;
        sus_add(t, e, 1, 1, 0, 0);
        return;
    }
    int r = wl_reaches(e->seq, t->lo, t->hi, &arg, &off);
    if (r == 0) {
        t->ruled++;
    } else if (r > 0) {
        t->reached++;
        t->reached_after += t->freed && e->seq > t->freed_upto;
        sus_add(t, e, 0, 0, arg, off);
    } else {
        t->unknown++;
        sus_add(t, e, 0, 1, 0, 0);
    }
}

/* Launches after the free of a freed allocation first, then the rarest
 * kernel (the culprit of a real program is usually launched once or twice
 * among many launches of healthy ones), then the newest. */
static int sus_order(const void *x, const void *y)
{
    const struct sus_group *a = x, *b = y;
    if (a->unknown != b->unknown)
        return a->unknown - b->unknown;
    if (a->after != b->after)
        return b->after - a->after;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return a->newest.seq > b->newest.seq ? -1 : a->newest.seq < b->newest.seq;
}

struct qent;
static void sus_freed(struct sus_tally *t, const struct qent *q);

static void sus_count(struct sus_tally *t, const struct zone *z, const struct qent *q,
                      uint64_t from, uint64_t upto, uint64_t *lost)
{
    memset(t, 0, sizeof *t);
    t->lo = z->base;
    t->hi = z->start + z->len; /* the allocation and its zone */
    t->born = z->born;
    if (z->freed && q)
        sus_freed(t, q);
    *lost = upto > from ? atl_fault_launches_since(from, upto, 0, sus_launch, t) : 0;
    qsort(t->g, t->ng, sizeof t->g[0], sus_order);
}

/* The one place that renders a red-zone re-run hint: the program's command
 * line as it was run (through atlas-trace or a bare preload, src/hint.h),
 * with launch mode added and, when `kernels` is not NULL, the kernel filter
 * (ATLAS_KERNEL) limiting it to them. */
static void rerun_hint(const char *why, const char *kernels)
{
    char size[24];
    snprintf(size, sizeof size, "%zu", pad);
    struct atl_hint_set add[3] = {
        {"ATLAS_REDZONE", size}, {"ATLAS_REDZONE_CHECK", "launch"}, {"ATLAS_KERNEL", kernels}};
    char *cmd = atl_hint_command(add, kernels ? 3 : 2);
    atl_log(ATL_ERROR, "redzone: %s: %s", why, cmd ? cmd : "(the command line could not be read)");
    free(cmd);
}

/* Appends name, escaped for a POSIX extended regular expression, to out. */
static void ere_escape(char *out, size_t len, size_t *used, const char *name)
{
    for (const char *c = name; *c && *used + 3 < len; c++) {
        if (strchr("\\^$.|?*+()[]{}", *c))
            out[(*used)++] = '\\';
        out[(*used)++] = *c;
    }
    out[*used] = '\0';
}

/* The hint after a list of suspects: launch mode on their kernels (the
 * rarest first, as many as fit on the line), every kernel when none is
 * named. */
static void suspects_hint(const struct sus_tally *t)
{
    if (mode == CHECK_LAUNCH && !atl_ksel_on())
        return; /* launch mode on every kernel already */
    char re[640], extra[700];
    size_t used = 0;
    unsigned named = 0, skipped = 0;
    used += (size_t)snprintf(re, sizeof re, "^(");
    for (unsigned i = 0; i < t->ng; i++) {
        const char *m = t->g[i].graph ? NULL : atl_kernel_mangled(t->g[i].obj);
        size_t before = used;
        if (m && strlen(m) * 2 + used + 4 < sizeof re) {
            if (named)
                re[used++] = '|';
            ere_escape(re, sizeof re, &used, m);
            named++;
        } else {
            used = before;
            skipped += !t->g[i].graph;
        }
    }
    if (!named || skipped) {
        rerun_hint("launch mode names the culprit (a check after every launch names the one that "
                   "wrote past the end); re-run with it",
                   NULL);
        return;
    }
    snprintf(extra, sizeof extra, "%s)$", re);
    rerun_hint("launch mode names the culprit (a check after each launch of these kernels names "
               "the one that wrote past the end); re-run with it",
               extra);
}

static void newest_line(const struct atl_ring_ent *e, void *ctx)
{
    (void)ctx;
    if (e->hook & ATL_RING_GRAPH)
        atl_log(ATL_ERROR, "redzone:   launch#%llu graph=%p", (unsigned long long)e->seq, e->obj);
    else
        launch_line("  ", e->seq, e->obj, e->grid, e->block, "");
}

/* The suspects of an overrun (or write after free) of zone z found outside
 * the check after a launch: the launches since the last clean check whose
 * parameter words point into the allocation or its zone, by kernel, rarest
 * first, with how many were ruled out; the newest launches when none
 * reaches it; then the command that names the launch. `t` is the tally
 * (sus_count) or NULL when it could not be made. */
static void suspects(const struct sus_tally *t, uint64_t lost, const char *lead,
                     const struct finder *how, uint64_t from)
{
    uint64_t last = how->upto;
    uint64_t n = last > from ? last - from : 0;
    if (n == 0) {
        atl_log(ATL_ERROR,
                "%s: no kernel launch since the last clean check (a graph launch, a copy, a "
                "memset or a host write through managed memory?)",
                lead);
        return;
    }
    if (!t) {
        atl_log(ATL_ERROR, "%s: written by one of the %llu launches since the last clean check",
                lead, (unsigned long long)n);
        return;
    }
    char lostnote[160] = "", ring[64];
    if (lost)
        snprintf(lostnote, sizeof lostnote,
                 " (%llu of them older than the launch history holds: %s keeps more)",
                 (unsigned long long)lost, atl_hint_name("ATLAS_LAUNCH_RING", ring, sizeof ring));
    if (t->reached + t->unknown + t->graphs == 0) {
        atl_log(ATL_ERROR,
                "%s: none of the %llu launches since the last clean check%s has a parameter that "
                "points into it (an address computed on the device, or held in device memory?); "
                "the newest%s:",
                lead, (unsigned long long)n, lostnote, n > SUSPECTS ? " 16" : "");
        atl_fault_launches_since(from, last, SUSPECTS, newest_line, NULL);
        if (mode != CHECK_LAUNCH)
            rerun_hint("launch mode narrows it down (its full check at every host sync leaves only "
                       "the launches between two syncs); re-run with it",
                       NULL);
        return;
    }
    char notes[200] = "";
    if (t->unknown || t->graphs)
        snprintf(notes, sizeof notes, "; %llu more could not be ruled out",
                 (unsigned long long)(t->unknown + t->graphs));
    atl_log(ATL_ERROR,
            "%s: %llu of the %llu launches since the last clean check%s reach it (a parameter "
            "points into it; %llu ruled out%s), by kernel, rarest first:",
            lead, (unsigned long long)t->reached, (unsigned long long)n, lostnote,
            (unsigned long long)t->ruled, notes);
    for (unsigned i = 0; i < t->ng && i < SUSPECTS; i++) {
        const struct sus_group *g = &t->g[i];
        char lead2[64], tail[96];
        snprintf(lead2, sizeof lead2, "  x%llu, newest ", (unsigned long long)g->n);
        if (g->graph) {
            atl_log(ATL_ERROR,
                    "redzone:   x%llu, newest launch#%llu graph=%p (not ruled out: its kernels "
                    "are not looked at one by one)",
                    (unsigned long long)g->n, (unsigned long long)g->newest.seq, g->newest.obj);
            continue;
        }
        if (g->unknown)
            snprintf(tail, sizeof tail, " (not ruled out: its parameters are not known)");
        else
            snprintf(tail, sizeof tail, " through arg%u+0x%x%s", g->arg, g->off,
                     g->after ? ", after the free" : "");
        launch_line(lead2, g->newest.seq, g->newest.obj, g->newest.grid, g->newest.block, tail);
    }
    if (t->ng > SUSPECTS || t->more)
        atl_log(ATL_ERROR, "redzone:   and launches of %llu more kernels",
                (unsigned long long)(t->ng > SUSPECTS ? t->ng - SUSPECTS : 0) +
                    (unsigned long long)t->more);
    suspects_hint(t);
}

/* Where allocation `base` was made: its stack into *st (none when unknown)
 * and its site, formatted. */
static void site_of(CUdeviceptr base, const struct atl_stack *known, char *buf, size_t len,
                    struct atl_stack *st)
{
    struct atl_alloc_rec rec;
    st->n = 0;
    if (known)
        *st = *known;
    else if (atl_ledger_find(base, &rec) && rec.ptr == base)
        *st = rec.site;
    if (known || st->n)
        atl_stack_site(st, buf, len);
    else
        snprintf(buf, len, "?");
}

/* The finding of allocation z for the findings sink (src/findings.h); in
 * launch mode the launch whose check found it is its culprit. */
static struct atl_find zone_finding(enum atl_finding kind, const struct zone *z,
                                    const struct finder *how, const struct atl_stack *site,
                                    char *kname, size_t klen)
{
    struct atl_find f = {.kind = kind,
                         .alloc = z->seq,
                         .bytes = z->bytes,
                         .has_bytes = 1,
                         .stack = site->n ? site : NULL};
    if (how->by == BY_LAUNCH && !how->whole) {
        atl_kernel_name(how->func, kname, (unsigned)klen);
        f.kernel = kname;
        f.kernel_mangled = atl_kernel_mangled(how->func);
        f.launch = how->seq;
    }
    return f;
}

/* ---- the quarantine's entries (the rest of it after the queued checks) --------
 * A freed guarded allocation kept poisoned before its real free: its zone
 * (all of it now), where it was made and freed, and how to free it. */
struct qent {
    struct zone z;
    CUdeviceptr ptr;
    CUcontext ctx;
    CUevent ev;      /* recorded on the free's stream after the poison; NULL: the legacy stream */
    int sync;        /* freed with cuMemFree: released with it */
    int hook;        /* the program's free */
    CUstream stream; /* the free's stream, as the library names it */
    uint64_t freed_upto; /* the newest launch when it was freed */
    struct atl_stack alloc_site, free_site;
};
static struct atl_addrmap q_at; /* base -> struct qent * of the entries in the quarantine */

static void sus_freed(struct sus_tally *t, const struct qent *q)
{
    t->freed = 1;
    t->freed_upto = q->freed_upto;
    t->free_sync = q->sync;
    t->free_stream = q->stream;
}

static const struct qent *q_find(CUdeviceptr base, uint64_t seq)
{
    size_t v;
    if (!atl_addrmap_get(&q_at, base, &v))
        return NULL;
    const struct qent *q = (const struct qent *)(uintptr_t)v;
    return q->z.seq == seq ? q : NULL;
}

/* Allocations reported, by number: a zone is reported once, though a check
 * queued before the report saw it too (called with scan_lock held). */
static struct atl_addrmap reported;

static const char *const found_by[] = {
    [BY_FREE] = "at", [BY_FULL] = "at", [BY_RELEASE] = "when it left the"};

/* Which check after a launch found zone z. */
static void launch_found(const struct zone *z, const struct finder *how)
{
    if (how->whole)
        atl_log(ATL_ERROR,
                "redzone: found by the full check after launch#%llu on stream 0x%llx (%s: every "
                "zone was checked)",
                (unsigned long long)how->seq, (unsigned long long)(uintptr_t)how->stream,
                how->whole);
    else
        atl_log(ATL_ERROR,
                "redzone: found by the check after launch#%llu on stream 0x%llx, which reached "
                "alloc#%llu through arg%u+0x%x",
                (unsigned long long)how->seq, (unsigned long long)(uintptr_t)how->stream,
                (unsigned long long)z->seq, how->arg, how->off);
}

/* The lines of a write after free into allocation z (its quarantine entry
 * q, when known): what was written, by whom, where it was made and freed,
 * the free's call stack. */
static void report_after_free(const struct zone *z, const struct qent *q, unsigned bad,
                              size_t first, size_t last, const struct finder *how,
                              const struct sus_tally *t, uint64_t lost, uint64_t from)
{
    char fsite[512] = "?", asite[512], who[400], lead[256];
    struct atl_stack ast;
    if (q)
        atl_stack_site(&q->free_site, fsite, sizeof fsite);
    site_of(z->base, q ? &q->alloc_site : NULL, asite, sizeof asite, &ast);
    if (how->by == BY_LAUNCH) {
        char name[256];
        atl_kernel_name(how->func, name, sizeof name);
        snprintf(who, sizeof who, "%s (launch#%llu)", name, (unsigned long long)how->seq);
    } else if (t && t->reached_after == 1 && t->g[0].after && !t->g[0].unknown) {
        char name[256];
        atl_kernel_name(t->g[0].newest.obj, name, sizeof name);
        snprintf(who, sizeof who, "%s (launch#%llu, the one launch since its free that reaches it)",
                 name, (unsigned long long)t->g[0].newest.seq);
    } else if (t && t->reached == 1 && !t->unknown && !t->graphs && t->ng == 1) {
        char name[256];
        atl_kernel_name(t->g[0].newest.obj, name, sizeof name);
        snprintf(who, sizeof who, "%s (launch#%llu, the one launch that reaches it)", name,
                 (unsigned long long)t->g[0].newest.seq);
    } else {
        snprintf(who, sizeof who, "one of the launches below");
    }
    char head[1400];
    snprintf(head, sizeof head,
             "redzone: write after free: alloc#%llu (freed at %s) written by %s: %u bytes at "
             "+%zu..+%zu of its %zu bytes at 0x%llx",
             (unsigned long long)z->seq, fsite, who, bad, first, last, z->bytes,
             (unsigned long long)z->base);
    char kname[256];
    struct atl_find f = zone_finding(ATL_FINDING_AFTER_FREE, z, how, &ast, kname, sizeof kname);
    f.message = head;
    if (!atl_find_open(&f))
        return;
    atl_log(ATL_ERROR, "%s", head);
    atl_log(ATL_ERROR, "redzone:   allocated at %s; freed by %s at:", asite,
            q ? atl_hook_names[q->hook] : "?");
    if (q)
        atl_log_frames(ATL_ERROR, "redzone", &q->free_site, 0, ATL_STACK_MAX);
    if (how->by == BY_LAUNCH) {
        launch_found(z, how);
    } else {
        snprintf(lead, sizeof lead, "redzone: alloc#%llu found %s %s", (unsigned long long)z->seq,
                 how->by == BY_RELEASE ? "when it left the" : found_by[how->by],
                 how->by == BY_RELEASE ? "quarantine" : how->where);
        suspects(t, lost, lead, how, from);
    }
    atl_find_close(&f);
}

/* One report per corrupted zone; afterwards the zone is no longer watched
 * (atlas_redzone_poison() re-arms it). */
static int report(const struct zone *z, const struct atl_stack *known_site, unsigned bad,
                  size_t first, size_t last, const struct finder *how)
{
    size_t was;
    if (atl_addrmap_get(&reported, z->seq, &was))
        return 0;
    atl_addrmap_put(&reported, z->seq, 1);
    /* outside a launch's own check: the launches that reach it */
    struct sus_tally *t = NULL;
    uint64_t lost = 0;
    const struct qent *q = !z->freed ? NULL : how->q ? how->q : q_find(z->base, z->seq);
    /* where the suspects begin, read once for the tally and the count it is printed
     * against (under scan_lock, as the clean checks that move it) */
    uint64_t from = clean_from(z);
    if (how->by != BY_LAUNCH && (t = malloc(sizeof *t)) != NULL)
        sus_count(t, z, q, from, how->upto, &lost);
    if (z->freed) {
        report_after_free(z, q, bad, z->start - z->base + first, z->start - z->base + last, how, t,
                          lost, from);
    } else {
        char site[512], head[1200], kname[256];
        struct atl_stack ast;
        site_of(z->base, known_site, site, sizeof site, &ast);
        size_t lo = z->bytes + first, hi = z->bytes + last;
        snprintf(head, sizeof head,
                 "redzone overrun: alloc#%llu %zu bytes at 0x%llx, allocated at %s: %u byte%s "
                 "corrupted at +%zu..+%zu%s",
                 (unsigned long long)z->seq, z->bytes, (unsigned long long)z->base, site, bad,
                 bad == 1 ? "" : "s", lo, hi,
                 last + 1 == z->len
                     ? " (up to the end of the red zone: the write may reach further)"
                     : "");
        struct atl_find f = zone_finding(ATL_FINDING_OVERRUN, z, how, &ast, kname, sizeof kname);
        f.message = head;
        if (!atl_find_open(&f)) {
            /* counted by the sink: not printed */
        } else if (how->by == BY_LAUNCH && z->unchecked && !how->whole) {
            atl_log(ATL_ERROR, "%s", head);
            /* launches of kernels ATLAS_KERNEL leaves out reached it too:
             * the launches that reach it, not a culprit */
            char lead[256], kvar[64];
            struct finder h = *how;
            h.upto = how->seq;
            snprintf(lead, sizeof lead,
                     "redzone: alloc#%llu found by the check after launch#%llu (launches of "
                     "kernels %s leaves out reached it too, unchecked)",
                     (unsigned long long)z->seq, (unsigned long long)how->seq,
                     atl_hint_name("ATLAS_KERNEL", kvar, sizeof kvar));
            if (!t && (t = malloc(sizeof *t)) != NULL)
                sus_count(t, z, q, from, h.upto, &lost);
            suspects(t, lost, lead, &h, from);
        } else if (how->by == BY_LAUNCH) {
            atl_log(ATL_ERROR, "%s", head);
            launch_line("culprit: ", how->seq, how->func, how->grid, how->block, "");
            launch_found(z, how);
        } else {
            atl_log(ATL_ERROR, "%s", head);
            char lead[256];
            snprintf(lead, sizeof lead, "redzone: alloc#%llu found %s %s",
                     (unsigned long long)z->seq, found_by[how->by], how->where);
            suspects(t, lost, lead, how, from);
        }
        atl_find_close(&f);
    }
    free(t);
    zone_set_watched(z->base, z->seq, 0);
    return 1;
}
/* ---- the kernels ----------------------------------------------------------------
 * PTX built from src/redzone_scan.cu at build time and embedded
 * (build/gen/redzone_ptx.c): PTX, not a cubin, so the driver JIT-compiles it
 * for whatever GPU is there; generated from CUDA source rather than written
 * by hand so that it stays readable and checked by the compiler. Their zone
 * lists and answers live in page-locked host memory mapped into the device:
 * the host reads an answer without a copy call.
 *
 * Where the kernels cannot be loaded (a build without nvcc, a driver that
 * refuses the PTX) each zone is read back with one device-to-host copy
 * after a sync: correct, slower; said once at info level. */
extern const int atl_redzone_ptx_stub; /* built without nvcc: entry names only */

static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static int kernel_state; /* 0 untried, 1 loaded, -1 unavailable */
static CUmodule kernel_mod;
static CUfunction scan_fn;
static CUfunction check_fn; /* the queued check; NULL: synchronous checks */
/* check_fn waits for the grid before it: queue it as a dependent launch.
 * Read by launches made without scan_lock: atomic. */
static int check_pdl;
static struct atl_rz_zone *tab;   /* mapped host memory */
static struct atl_rz_result *res; /* mapped host memory */
static CUdeviceptr dtab, dres;
static size_t captab, ntab;
static struct zone *snap; /* host copy of the zones scanned */
static size_t nsnap, capsnap;
/* a long zone (a freed allocation) is several entries of the table, each
 * read by one block: entry i is bytes tab_off[i].. of zone tab_zone[i] */
static size_t *tab_zone, *tab_off;
#define TAB_CHUNK ((size_t)256 << 10)
static uint64_t snap_version = (uint64_t)-1;
static int snap_freed;          /* the snapshot holds the quarantine's zones too */
static unsigned char *readback; /* fallback: one zone's bytes */
static size_t capreadback;

/* The current context's GPU is sm_90 or later (programmatic dependent
 * launches) and the driver can queue a launch with attributes. */
static int device_takes_pdl(void)
{
    CUdevice dev;
    int major = 0;
    return atl_drv.cuLaunchKernelEx && atl_drv.cuCtxGetDevice && atl_drv.cuDeviceGetAttribute &&
           atl_drv.cuCtxGetDevice(&dev) == CUDA_SUCCESS &&
           atl_drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                        dev) == CUDA_SUCCESS &&
           major >= 9;
}

static void kernel_load(void)
{
    char why[96] = "built without nvcc";
    kernel_state = -1;
    __atomic_store_n(&check_pdl, 0, __ATOMIC_RELAXED);
    if (atl_redzone_ptx[0] && atl_drv.cuModuleLoadData && atl_drv.cuModuleGetFunction &&
        atl_drv.cuLaunchKernel && atl_drv.cuMemAllocHost_v2) {
        CUmodule m;
        /* the sm_90 build first where the GPU takes it; the portable one
         * if the driver refuses that */
        int pdl =
            device_takes_pdl() && atl_drv.cuModuleLoadData(&m, atl_redzone_ptx_pdl) == CUDA_SUCCESS;
        __atomic_store_n(&check_pdl, pdl, __ATOMIC_RELAXED);
        CUresult r = pdl ? CUDA_SUCCESS : atl_drv.cuModuleLoadData(&m, atl_redzone_ptx);
        if (r == CUDA_SUCCESS) {
            kernel_mod = m;
            r = atl_drv.cuModuleGetFunction(&scan_fn, m, ATL_RZ_SCAN_ENTRY);
        }
        if (r == CUDA_SUCCESS) {
            kernel_state = 1;
            if (atl_drv.cuModuleGetFunction(&check_fn, m, ATL_RZ_CHECK_ENTRY) != CUDA_SUCCESS)
                check_fn = NULL;
            atl_log(ATL_INFO, "redzone: check kernels loaded (%s)",
                    pdl ? "sm_90 build: each check is a dependent launch"
                        : "portable build: plain launches");
            return;
        }
        __atomic_store_n(&check_pdl, 0, __ATOMIC_RELAXED);
        char nm[64];
        if (!atl_redzone_ptx_stub)
            snprintf(why, sizeof why, "the driver refused its PTX: %s",
                     atl_error_name(r, nm, sizeof nm));
    }
    atl_log(ATL_INFO, "redzone: scan kernel unavailable (%s): checking each zone with a copy", why);
}

/* Makes the mapped buffers hold n zones. */

/* Makes the mapped buffers hold n table entries. */
static int tables_reserve(size_t n)
{
    if (n <= captab && tab)
        return 0;
    size_t cap = captab ? captab : 256;
    while (cap < n)
        cap *= 2;
    void *t = NULL, *r = NULL;
    size_t *tz = malloc(cap * sizeof *tz), *to = malloc(cap * sizeof *to);
    if (!tz || !to) {
        free(tz), free(to);
        return -1;
    }
    if (atl_drv.cuMemAllocHost_v2((void **)&t, cap * sizeof *tab) != CUDA_SUCCESS) {
        free(tz), free(to);
        return -1;
    }
    if (atl_drv.cuMemAllocHost_v2((void **)&r, cap * sizeof *res) != CUDA_SUCCESS) {
        atl_drv.cuMemFreeHost(t);
        free(tz), free(to);
        return -1;
    }
    CUdeviceptr dt, dr;
    if (!atl_drv.cuMemHostGetDevicePointer_v2 ||
        atl_drv.cuMemHostGetDevicePointer_v2(&dt, t, 0) != CUDA_SUCCESS ||
        atl_drv.cuMemHostGetDevicePointer_v2(&dr, r, 0) != CUDA_SUCCESS) {
        atl_drv.cuMemFreeHost(t);
        atl_drv.cuMemFreeHost(r);
        free(tz), free(to);
        return -1;
    }
    if (tab) {
        atl_drv.cuMemFreeHost(tab);
        atl_drv.cuMemFreeHost(res);
    }
    free(tab_zone), free(tab_off);
    tab_zone = tz;
    tab_off = to;
    tab = t;
    res = r;
    captab = cap;
    dtab = dt;
    dres = dr;
    snap_version = (uint64_t)-1;
    return 0;
}

/* Copies the watched zones (with `freed`, the quarantine's too) into snap
 * (and the mapped table, long zones cut into TAB_CHUNK entries) when they
 * changed since the last full check. */
static int snapshot_zones(int to_gpu, int freed)
{
    pthread_mutex_lock(&zones_lock);
    if (version == snap_version && freed == snap_freed && (!to_gpu || tab)) {
        pthread_mutex_unlock(&zones_lock);
        return 0;
    }
    if (nzones > capsnap) {
        size_t cap = capsnap ? capsnap : 256;
        while (cap < nzones)
            cap *= 2;
        struct zone *n = realloc(snap, cap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&zones_lock);
            atl_log_once_oom("the red-zone scan");
            return -1;
        }
        snap = n;
        capsnap = cap;
    }
    nsnap = 0;
    size_t entries = 0;
    for (size_t i = 0; i < nzones; i++)
        if (zones[i].watched && (freed || !zones[i].freed)) {
            snap[nsnap++] = zones[i];
            entries += zones[i].len ? (zones[i].len + TAB_CHUNK - 1) / TAB_CHUNK : 1;
        }
    uint64_t v = version;
    pthread_mutex_unlock(&zones_lock);
    if (to_gpu) {
        if (tables_reserve(entries) != 0)
            return -1;
        ntab = 0;
        for (size_t i = 0; i < nsnap; i++) {
            size_t off = 0;
            do {
                size_t len = snap[i].len - off < TAB_CHUNK ? snap[i].len - off : TAB_CHUNK;
                tab[ntab] = (struct atl_rz_zone){snap[i].start + off, len, fill, 0};
                tab_zone[ntab] = i;
                tab_off[ntab++] = off;
                off += len;
            } while (off < snap[i].len);
        }
    }
    snap_version = v;
    snap_freed = freed;
    return 0;
}

/* Checks one zone with a copy; fills bad/first/last. -1 if unreadable. */
static int zone_read(const struct zone *z, unsigned *bad, size_t *first, size_t *last)
{
    if (z->len > capreadback) {
        unsigned char *n = realloc(readback, z->len);
        if (!n)
            return -1;
        readback = n;
        capreadback = z->len;
    }
    if (atl_own_result(atl_drv.cuMemcpyDtoH_v2(readback, z->start, z->len)) != CUDA_SUCCESS)
        return -1;
    *bad = 0;
    for (size_t i = 0; i < z->len; i++) {
        if (readback[i] != fill) {
            if (!*bad)
                *first = i;
            *last = i;
            ++*bad;
        }
    }
    return 0;
}
static unsigned launching; /* checks whose launch is being made, atomic */

/* Waits (a tenth of a second at most: the thread making the launch may be
 * the one waiting, in a signal handler) until no check's launch is being
 * made. 0 when none is. */
static int launching_wait(void)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (__atomic_load_n(&launching, __ATOMIC_ACQUIRE)) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > 100000000L)
            return -1;
    }
    return 0;
}

/* The device is readable now? Skips (quietly) during captures and after
 * teardown, and says once why a sync failed otherwise. */
static int sync_for_scan(void)
{
    /* a check whose launch another thread is making now is queued after
     * the sync, and would be taken for one that never ran */
    launching_wait();
    if (atl_capture_any()) {
        __atomic_add_fetch(&skipped_capture, 1, __ATOMIC_RELAXED);
        return -1;
    }
    CUresult r = atl_drv.cuCtxSynchronize ? atl_own_result(atl_drv.cuCtxSynchronize())
                                          : CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS)
        return 0;
    static int said;
    /* status 4: the driver is being torn down at exit; no current context:
     * the program released it (its zones were scanned at that teardown).
     * Both normal, not an error. */
    if (r != CUDA_ERROR_DEINITIALIZED && r != CUDA_ERROR_INVALID_CONTEXT &&
        r != CUDA_ERROR_CONTEXT_IS_DESTROYED && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
        char nm[64];
        atl_log(ATL_WARN, "redzone: cannot check red zones: the context reports %s",
                atl_error_name(r, nm, sizeof nm));
    }
    return -1;
}

/* ---- queued checks ----------------------------------------------------------------
 * A check of a few zones is queued on the program's stream (after a launch,
 * before a free, when a freed allocation leaves the quarantine) and never
 * waited for: its verdict goes to a slot of a ring in mapped host memory,
 * and the zones' details (and who queued the check) stay here, in `pend`,
 * for the report. Slots are read in the order they were queued, at the
 * program's syncs, at the next check queued and at frees; only when the ring
 * is full is the oldest waited for (its stream synchronised). A check reads
 * only the zones listed in its own slot, so a zone table rebuilt meanwhile
 * cannot change what a check in flight reads. All of it under scan_lock, but
 * for the driver's launch of a check after a program's launch: the slot is
 * taken under the lock and the launch made without it (so threads launching
 * on their own streams do not wait for each other's checks), and its
 * outcome is then written into the slot's `state` with a compare-and-swap,
 * which fails harmlessly when the slot was given up meanwhile (a context
 * teardown) and taken again. Readers stop at a slot whose launch is still
 * being made. */
#define SLOTS 1024
#define SLOT_LAUNCHING 1u /* taken; its launch is being made */
#define SLOT_QUEUED 2u
#define SLOT_FAILED 3u /* the driver refused the launch: nothing to read */
#define SLOT_STATE(ticket, st) ((uint64_t)(ticket) << 2 | (st))
struct pending {
    uint64_t ticket; /* what the kernel writes into `done` */
    uint64_t state;  /* SLOT_STATE(ticket, SLOT_...), atomic */
    struct finder how;
    unsigned nz, nfill;
    struct zone z[ATL_RZ_SLOT_ZONES];
    struct atl_rz_fill f[ATL_RZ_SLOT_FILLS];                 /* bodies poisoned after the check */
    unsigned arg[ATL_RZ_SLOT_ZONES], off[ATL_RZ_SLOT_ZONES]; /* BY_LAUNCH */
    /* BY_FREE, one per zone (a batch of held frees has several): where the
     * allocation was made (the ledger has dropped the record) and the newest
     * launch before its free */
    int has_site;
    struct atl_stack site[ATL_RZ_SLOT_ZONES];
    uint64_t upto[ATL_RZ_SLOT_ZONES];
    /* BY_RELEASE: the entries leaving the quarantine, owned by the slot
     * until its verdict is read (their free sites are in the report) */
    struct qent *qe[ATL_RZ_SLOT_ZONES];
};
static struct atl_rz_slot *slots; /* mapped host memory */
static CUdeviceptr dslots;
static CUdeviceptr dmerge; /* a struct atl_rz_merge per slot, in device memory */
static struct pending pend[SLOTS];
static uint64_t pend_head, pend_tail; /* checks queued [tail, head) */

/* Who found zone i of p, for its report: p's finder with that zone's
 * parameter word (after a launch) or launch horizon (before a free). */
static struct finder zone_finder(const struct pending *p, unsigned i)
{
    struct finder how = p->how;
    how.arg = p->arg[i];
    how.off = p->off[i];
    if (p->has_site)
        how.upto = p->upto[i];
    how.q = p->qe[i];
    return how;
}

static void site_copy(struct atl_stack *to, const struct atl_stack *from)
{
    to->n = from->n;
    memcpy(to->pc, from->pc, (size_t)from->n * sizeof *from->pc);
}

/* The slot's quarantine entries are done with (their verdict read, or the
 * slot given up). */
static void pend_done(struct pending *p)
{
    /* a slot's entries are a prefix (q_release_batch_locked puts them at
     * 0 up; every other slot has none): the check after a launch, which
     * has none, costs one look and no call to free */
    for (unsigned i = 0; i < ATL_RZ_SLOT_ZONES && p->qe[i]; i++) {
        free(p->qe[i]);
        p->qe[i] = NULL;
    }
}

static void slot_process(uint64_t k)
{
    struct atl_rz_slot *sl = &slots[k % SLOTS];
    struct pending *p = &pend[k % SLOTS];
    __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
    /* the kernel writes `done` last: an acquire load of it orders the reads
     * of the record after it (a plain fence is not supported under TSan) */
    (void)__atomic_load_n(&sl->done, __ATOMIC_ACQUIRE);
    unsigned nbad = __atomic_load_n(&sl->nbad, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < nbad && i < ATL_RZ_RECS; i++) {
        struct atl_rz_result r;
        memcpy(&r, &sl->rec[i], sizeof r);
        if (r.zone >= p->nz)
            continue;
        struct finder how = zone_finder(p, r.zone);
        report(&p->z[r.zone], p->has_site ? &p->site[r.zone] : NULL, r.bad, r.first, r.last, &how);
    }
    if (nbad > ATL_RZ_RECS)
        atl_log(ATL_ERROR, "redzone: the check after launch#%llu found %u more zones, not listed",
                (unsigned long long)p->how.seq, nbad - ATL_RZ_RECS);
}

/* Reads the finished slots, in order; with `all` (after a context sync
 * made when no launch was being made), every queued one (a slot still
 * unfinished then never ran: dropped). Stops at a slot whose launch is
 * being made. */
static void slots_poll(int all)
{
    while (pend_tail < pend_head) {
        uint64_t k = pend_tail;
        struct pending *q = &pend[k % SLOTS];
        uint64_t st = __atomic_load_n(&q->state, __ATOMIC_ACQUIRE);
        if (st == SLOT_STATE(q->ticket, SLOT_LAUNCHING))
            break;
        if (st == SLOT_STATE(q->ticket, SLOT_QUEUED)) {
            if (__atomic_load_n(&slots[k % SLOTS].done, __ATOMIC_ACQUIRE) == q->ticket)
                slot_process(k);
            else if (!all)
                break;
        }
        pend_done(q);
        __atomic_store_n(&pend_tail, k + 1, __ATOMIC_RELAXED);
    }
}

static int pending_any(void)
{
    return __atomic_load_n(&pend_head, __ATOMIC_RELAXED) !=
           __atomic_load_n(&pend_tail, __ATOMIC_RELAXED);
}

/* The ring is full: waits for the oldest check (its stream; the context if
 * that fails, say the program destroyed the stream) and reads it. */
static void wait_oldest(void)
{
    struct pending *p = &pend[pend_tail % SLOTS];
    if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == SLOT_STATE(p->ticket, SLOT_LAUNCHING) &&
        launching_wait() != 0)
        return; /* still being launched: the caller checks another way */
    if (atl_own_result(atl_drv.cuStreamSynchronize(p->how.stream)) != CUDA_SUCCESS &&
        sync_for_scan() != 0) {
        pend_done(p);
        __atomic_store_n(&pend_tail, pend_tail + 1, __ATOMIC_RELAXED); /* give it up */
        return;
    }
    slots_poll(0);
    if (pend_head - pend_tail == SLOTS)
        slots_poll(1);
}

static int slots_ready(void)
{
    if (slots)
        return 0;
    void *p = NULL;
    CUdeviceptr d;
    if (atl_drv.cuMemAllocHost_v2(&p, SLOTS * sizeof *slots) != CUDA_SUCCESS)
        return -1;
    if (atl_drv.cuMemHostGetDevicePointer_v2(&d, p, 0) != CUDA_SUCCESS) {
        atl_drv.cuMemFreeHost(p);
        return -1;
    }
    memset(p, 0, SLOTS * sizeof *slots);
    slots = p;
    dslots = d;
    return 0;
}

/* The merge records, made at the first check long enough to want several
 * blocks (zeroed: see struct atl_rz_merge); 0 when they cannot be had (not
 * during a capture: an allocation and a memset are no calls to make then),
 * and every check is then one block. With scan_lock held. */
static int merge_tried;
static CUdeviceptr merge_ready(void)
{
    if (dmerge || merge_tried || atl_capture_any() || !atl_drv.cuMemAlloc_v2 ||
        !atl_drv.cuMemsetD8_v2)
        return dmerge;
    merge_tried = 1;
    CUdeviceptr m;
    size_t n = SLOTS * sizeof(struct atl_rz_merge);
    if (atl_drv.cuMemAlloc_v2(&m, n) != CUDA_SUCCESS)
        return 0;
    if (atl_own_result(atl_drv.cuMemsetD8_v2(m, 0, n)) != CUDA_SUCCESS) {
        atl_drv.cuMemFree_v2(m);
        return 0;
    }
    dmerge = m;
    return dmerge;
}

/* Launches the check kernel on `stream` (grid blocks), on sm_90 and up as a
 * programmatic dependent launch: the driver's enqueue costs less (on the
 * H200 about 0.6 us of the 3.4 us a tiny launch costs the host) and the
 * kernel waits for what precedes it itself (griddepcontrol.wait) before it
 * reads a zone. After a launch that is the launch's grid; before a free it
 * may be any operation, and an operation that is not a kernel (a copy, a
 * memset) never lets the check start early: the wait then returns at once.
 * A driver that refuses the attribute, where a plain launch then works, gets
 * plain launches from then on. */
#define CHECK_THREADS 256 /* a check's block */
static CUresult check_queue_launch(CUfunction fn, void **args, CUstream stream, unsigned grid)
{
    CUresult dep = CUDA_SUCCESS; /* what the driver said to a dependent launch */
    if (__atomic_load_n(&check_pdl, __ATOMIC_RELAXED)) {
        CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
        at.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig cfg = {.gridDimX = grid,
                              .gridDimY = 1,
                              .gridDimZ = 1,
                              .blockDimX = CHECK_THREADS,
                              .blockDimY = 1,
                              .blockDimZ = 1,
                              .hStream = stream,
                              .attrs = &at,
                              .numAttrs = 1};
        dep = atl_drv.cuLaunchKernelEx(&cfg, fn, args, NULL);
        if (dep == CUDA_SUCCESS)
            return dep;
    }
    CUresult r = atl_drv.cuLaunchKernel(fn, grid, 1, 1, CHECK_THREADS, 1, 1, 0, stream, args, NULL);
    if (dep != CUDA_SUCCESS && r == CUDA_SUCCESS &&
        __atomic_exchange_n(&check_pdl, 0, __ATOMIC_RELAXED)) {
        char nm[64];
        atl_log(ATL_INFO,
                "redzone: the driver refused a dependent launch of the check (%s): plain "
                "launches from now on",
                atl_error_name(dep, nm, sizeof nm));
    }
    return r;
}

/* 1 when the check kernel and its verdict ring are there (made now if not
 * yet tried). With scan_lock held. */
static int checks_ready_locked(void)
{
    /* loading a module and allocating page-locked memory are among the
     * calls a capture in the global mode forbids: not while one is on (a
     * launch onto a stream that is not capturing is fine) */
    if ((kernel_state == 0 || !slots) && atl_capture_any())
        return 0;
    if (kernel_state == 0)
        kernel_load();
    return kernel_state == 1 && check_fn && slots_ready() == 0;
}

/* A check with its slot taken, ready to be launched: what the kernel is
 * given. */
struct check_call {
    struct pending *q;
    CUfunction fn;
    struct atl_rz_list list;
    unsigned n, nfill, fill, grid;
    CUdeviceptr slot, merge;
    unsigned long long ticket;
};

/* Blocks for a check of `bytes`: one reads a few tails at once; a freed
 * allocation checked whole, or a body filled, gets a block per 64 KiB (up
 * to 256) when the blocks can merge their counts. */
static unsigned check_grid(size_t bytes)
{
    if (bytes <= ((size_t)64 << 10) || !merge_ready())
        return 1;
    size_t g = bytes / ((size_t)64 << 10) + 1;
    return g > 256 ? 256 : (unsigned)g;
}

/* The next slot for a check, its verdict cleared, into *k: 0, or -1 when
 * the caller must check another way. With scan_lock held. */
static int slot_next_locked(uint64_t *k)
{
    if (!checks_ready_locked())
        return -1;
    slots_poll(0);
    if (pend_head - pend_tail == SLOTS)
        wait_oldest();
    if (pend_head - pend_tail == SLOTS)
        return -1;
    *k = pend_head;
    struct atl_rz_slot *sl = &slots[*k % SLOTS];
    sl->done = 0;
    sl->nbad = 0;
    return 0;
}

/* Slot k, its pend entry filled, taken (its launch being made) and c made
 * ready for check_launch; c->list is the caller's. With scan_lock held. */
static void slot_taken_locked(uint64_t k, struct check_call *c, unsigned nz, unsigned nfill,
                              size_t bytes)
{
    struct pending *q = &pend[k % SLOTS];
    __atomic_store_n(&q->state, SLOT_STATE(k + 1, SLOT_LAUNCHING), __ATOMIC_RELAXED);
    __atomic_add_fetch(&launching, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&pend_head, k + 1, __ATOMIC_RELAXED);
    c->q = q;
    c->fn = check_fn;
    c->n = nz;
    c->nfill = nfill;
    c->fill = fill;
    c->grid = check_grid(bytes);
    c->slot = dslots + (k % SLOTS) * sizeof *slots;
    c->merge = dmerge ? dmerge + (k % SLOTS) * sizeof(struct atl_rz_merge) : 0;
    c->ticket = k + 1;
}

/* Takes a slot for the check of p's zones (and fills) and fills it: the
 * launch is the caller's (check_launch), with or without scan_lock. 0, or
 * -1 when the caller must check another way. With scan_lock held. */
static int check_take_locked(const struct pending *p, struct check_call *c)
{
    uint64_t k;
    if (slot_next_locked(&k) != 0)
        return -1;
    memset(&c->list, 0, sizeof c->list);
    size_t bytes = 0;
    for (unsigned i = 0; i < p->nz; i++) {
        c->list.z[i] = (struct atl_rz_zone){p->z[i].start, p->z[i].len, fill, 0};
        bytes += p->z[i].len;
    }
    for (unsigned i = 0; i < p->nfill; i++) {
        c->list.f[i] = p->f[i];
        bytes += p->f[i].len;
    }
    /* only what p holds: a launch's check has no call stack, and most
     * lists are short */
    struct pending *q = &pend[k % SLOTS];
    q->ticket = k + 1;
    q->how = p->how;
    q->nz = p->nz;
    q->nfill = 0; /* the fills are the kernel's; the report needs none */
    memcpy(q->z, p->z, p->nz * sizeof *p->z);
    memcpy(q->arg, p->arg, p->nz * sizeof *p->arg);
    memcpy(q->off, p->off, p->nz * sizeof *p->off);
    q->has_site = p->has_site;
    for (unsigned i = 0; p->has_site && i < p->nz; i++) {
        site_copy(&q->site[i], &p->site[i]);
        q->upto[i] = p->upto[i];
    }
    memcpy(q->qe, p->qe, sizeof q->qe);
    slot_taken_locked(k, c, p->nz, p->nfill, bytes);
    return 0;
}

/* Launches a taken check on `stream` and says so in its slot. */
static CUresult check_launch(struct check_call *c, CUstream stream)
{
    void *args[] = {&c->list, &c->n, &c->nfill, &c->fill, &c->slot, &c->ticket, &c->merge};
    CUresult r = check_queue_launch(c->fn, args, stream, c->grid);
    uint64_t want = SLOT_STATE(c->ticket, SLOT_LAUNCHING);
    if (r != CUDA_SUCCESS)
        memset(c->q->qe, 0, sizeof c->q->qe); /* the caller keeps its entries */
    __atomic_compare_exchange_n(
        &c->q->state, &want, SLOT_STATE(c->ticket, r == CUDA_SUCCESS ? SLOT_QUEUED : SLOT_FAILED),
        0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&launching, 1, __ATOMIC_RELEASE);
    return r;
}

/* Queues the check of p's zones (and fills) on `stream`. 0 when queued
 * (the slot owns p's quarantine entries), -1 when the caller must check
 * another way. With scan_lock held. */
static int check_queue_locked(const struct pending *p, CUstream stream)
{
    struct check_call c;
    if (check_take_locked(p, &c) != 0)
        return -1;
    return check_launch(&c, stream) == CUDA_SUCCESS ? 0 : -1;
}

/* The check before a free (of p's zones): queued (0), or where no kernel
 * can be queued, made now with copies after everything queued (-1: then
 * p's fills were not made). With scan_lock held. */
static int free_check_locked(const struct pending *p, CUstream stream)
{
    if (check_queue_locked(p, stream) == 0)
        return 0;
    if (sync_for_scan() != 0)
        return -1;
    slots_poll(1);
    for (unsigned i = 0; i < p->nz; i++) {
        unsigned bad;
        size_t first = 0, last = 0;
        __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
        if (zone_read(&p->z[i], &bad, &first, &last) == 0 && bad) {
            struct finder how = zone_finder(p, i);
            report(&p->z[i], p->has_site ? &p->site[i] : NULL, bad, first, last, &how);
        }
    }
    return -1;
}

/* The stream a free names, as the library's own calls (never the _ptsz
 * forms) must name it. */
static CUstream own_stream(const struct atl_free *f)
{
    return f->async ? atl_own_stream(f->stream, f->hook) : NULL;
}

/* ---- the quarantine ----------------------------------------------------------------
 * A kernel that writes through a pointer after its allocation was freed
 * (most often one still running on another stream: a tensor freed without
 * record_stream) corrupts whatever the pool hands that memory to next,
 * silently. A guarded allocation's free is therefore not passed to the
 * driver at once: the check queued before it also fills the freed bytes
 * with the poison, and the allocation waits in a FIFO, its whole span a
 * watched zone (so the full checks and, in launch mode, the check after a
 * launch whose parameter points at its base, read it too), until the
 * quarantine holds more than ATLAS_REDZONE_QUARANTINE_MB (or QUAR_MAX
 * entries): then the oldest leave, eight at a time (a check's zones), each batch checked
 * whole by one queued check on the legacy stream, then really freed. A
 * write found then is a write after free. Reads after free change nothing
 * and stay invisible.
 *
 * Stream order: the poison is queued on the free's stream. A batch leaves on
 * the legacy stream, which follows the legacy stream's own work and that of
 * blocking streams, not that of a non-blocking stream or a per-thread
 * default stream: an entry freed on one of those carries an event recorded
 * after its poison, which the legacy stream waits for first. The stream
 * itself may be gone by then; an event outlives it.
 *
 * What the program sees: a free that returns success at once (cuMemFree
 * also waits for the device first, as the driver's does, and an error of
 * the program's from that wait is answered by the driver's own free
 * instead); its pool or the device holding the memory a while longer. An
 * allocation that fails for memory releases the whole quarantine and is
 * retried (atl_redzone_release_held), so the quarantine never makes an
 * allocation fail that would succeed natively. A second free of a pointer
 * in the quarantine releases it first, and the driver answers that free as
 * it would have. Not quarantined: frees while a capture is active, managed
 * memory, allocations bigger than the bound, or when the check kernel
 * cannot be loaded. Everything under scan_lock. */
#define QUAR_MAX 16384
static struct qent **qring; /* entries oldest first: [q_tail, q_head) mod qcap */
static size_t qcap, q_head, q_tail, q_bytes;
/* events let go, to be recorded again in their context (an event belongs
 * to the context it was made in) */
static struct {
    CUevent e;
    CUcontext ctx;
} ev_free[64];
static unsigned nev_free;

static size_t q_count(void)
{
    return q_head - q_tail;
}

static CUevent event_get(CUcontext ctx)
{
    for (unsigned i = nev_free; i-- > 0;)
        if (ev_free[i].ctx == ctx) {
            CUevent e = ev_free[i].e;
            ev_free[i] = ev_free[--nev_free];
            return e;
        }
    CUevent e = NULL;
    if (!atl_drv.cuEventCreate ||
        atl_drv.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return NULL;
    return e;
}

static void event_put(CUevent e, CUcontext ctx)
{
    if (!e)
        return;
    if (nev_free < sizeof ev_free / sizeof ev_free[0]) {
        ev_free[nev_free].e = e;
        ev_free[nev_free++].ctx = ctx;
    } else if (atl_drv.cuEventDestroy_v2) {
        atl_drv.cuEventDestroy_v2(e);
    }
}

/* Really frees q's allocation (in its context, which is current). */
static void q_free_now(const struct qent *q)
{
    CUresult r = q->sync                  ? atl_drv.cuMemFree_v2(q->ptr)
                 : atl_drv.cuMemFreeAsync ? atl_drv.cuMemFreeAsync(q->ptr, NULL)
                                          : atl_drv.cuMemFree_v2(q->ptr);
    atl_own_result(r);
    static int said;
    char nm[64];
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED &&
        !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        atl_log(ATL_INFO, "redzone: the free of alloc#%llu leaving the quarantine failed (%s)",
                (unsigned long long)q->z.seq, atl_error_name(r, nm, sizeof nm));
}

/* Takes out the oldest entries of one context (up to a check's zones; with
 * `all` unset, only when the quarantine is over its bound), checks each
 * whole on the legacy stream and frees it. 0 when some left. */
static int q_release_batch_locked(int all)
{
    if (!q_count() || atl_capture_any())
        return -1;
    struct pending p;
    memset(&p.qe, 0, sizeof p.qe);
    p.how = (struct finder){.by = BY_RELEASE, .upto = atl_fault_last_launch(), .stream = NULL};
    p.nz = p.nfill = 0;
    p.has_site = 1;
    CUcontext ctx = qring[q_tail % qcap]->ctx;
    /* a batch, once the quarantine is over its bound, fills all its check's zones: one check
     * per eight frees in a steady loop, not one per free (on the fake: 36 checks per 32-free
     * step, 8 after; the H200's PyTorch steps paid 15-20% for the quarantine) */
    int over = all || q_bytes > qmax || q_count() > QUAR_MAX;
    while (over && q_count() && p.nz < ATL_RZ_SLOT_ZONES && qring[q_tail % qcap]->ctx == ctx) {
        struct qent *q = qring[q_tail++ % qcap];
        struct zone z;
        atl_addrmap_del(&q_at, q->z.base);
        q_bytes -= q->z.len;
        if (!zone_remove_kind(q->z.base, 1, &z))
            z = q->z;
        z.watched = 1; /* reported already: report() says nothing again */
        p.z[p.nz] = z;
        p.arg[p.nz] = p.off[p.nz] = 0;
        site_copy(&p.site[p.nz], &q->alloc_site);
        p.upto[p.nz] = p.how.upto;
        p.qe[p.nz++] = q;
    }
    CUcontext cur = NULL;
    int other = atl_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != ctx;
    int gone = other && atl_drv.cuCtxSetCurrent(ctx) != CUDA_SUCCESS;
    if (!gone) {
        for (unsigned i = 0; i < p.nz; i++)
            if (p.qe[i]->ev && atl_drv.cuStreamWaitEvent)
                atl_own_result(atl_drv.cuStreamWaitEvent(NULL, p.qe[i]->ev, 0));
        struct qent *mine[ATL_RZ_SLOT_ZONES];
        memcpy(mine, p.qe, sizeof mine);
        int queued = free_check_locked(&p, NULL) == 0;
        for (unsigned i = 0; i < p.nz; i++) {
            q_free_now(mine[i]);
            event_put(mine[i]->ev, mine[i]->ctx);
            mine[i]->ev = NULL;
            if (!queued)
                free(mine[i]); /* checked with copies: the slot does not own it */
        }
    } else {
        /* a context that is gone took its memory with it: nothing to free */
        for (unsigned i = 0; i < p.nz; i++)
            free(p.qe[i]);
    }
    if (other && !gone)
        atl_drv.cuCtxSetCurrent(cur);
    return 0;
}

/* Releases the oldest entries until the quarantine is within its bound. */
static void q_trim_locked(void)
{
    while ((q_bytes > qmax || q_count() > QUAR_MAX) && q_release_batch_locked(0) == 0)
        ;
}

/* Releases every entry. */
static void q_flush_locked(void)
{
    while (q_count() && q_release_batch_locked(1) == 0)
        ;
}

/* Adds a freed allocation, its bytes already poisoned (queued). */
static void q_add_locked(struct qent *q)
{
    if (q_count() == qcap) {
        size_t ncap = qcap ? qcap * 2 : 256;
        struct qent **n = malloc(ncap * sizeof *n);
        if (!n) {
            atl_log_once_oom("the red zones' quarantine");
            q_free_now(q);
            event_put(q->ev, q->ctx);
            free(q);
            return;
        }
        for (size_t i = 0; i < q_count(); i++)
            n[i] = qring[(q_tail + i) % qcap];
        free(qring);
        q_head -= q_tail;
        q_tail = 0;
        qring = n;
        qcap = ncap;
    }
    struct zone z = q->z;
    zone_add(&z);
    atl_addrmap_put(&q_at, q->z.base, (size_t)(uintptr_t)q);
    qring[q_head++ % qcap] = q;
    q_bytes += q->z.len;
    quarantined_total++;
    q_trim_locked();
}

/* The quarantine entry made for zone z (a live zone just removed) of free f:
 * its whole span, where it was made and freed; NULL when it does not go
 * into the quarantine. */
static struct qent *q_entry(const struct atl_free *f, const struct zone *z)
{
    if (!qmax || f->rec.kind == ATL_ALLOC_MANAGED || z->bytes + z->len > qmax ||
        z->bytes + z->len > UINT32_MAX)
        return NULL;
    struct qent *q = malloc(sizeof *q);
    if (!q)
        return NULL;
    q->z = *z;
    q->z.start = z->base;
    q->z.len = z->bytes + z->len;
    q->z.freed = 1;
    q->z.watched = 1;
    q->ptr = f->ptr;
    q->ctx = NULL;
    if (atl_drv.cuCtxGetCurrent)
        atl_drv.cuCtxGetCurrent(&q->ctx);
    q->ev = NULL;
    q->sync = !f->async;
    q->hook = f->hook;
    q->stream = own_stream(f);
    q->freed_upto = atl_fault_last_launch();
    site_copy(&q->alloc_site, &f->rec.site);
    atl_stack_capture_n(&q->free_site, (int)atl_cfg.stack_depth);
    return q;
}

/* The program frees ptr, which no live allocation holds: if the quarantine
 * has it, it leaves first, so that the driver answers this free as it would
 * have without us (a double free). */
static int q_refree_locked(CUdeviceptr ptr)
{
    size_t v;
    if (!atl_addrmap_get(&q_at, ptr, &v))
        return 0;
    /* the entry and everything older: the order of releases is kept */
    while (atl_addrmap_get(&q_at, ptr, &v) && q_release_batch_locked(1) == 0)
        ;
    return 1;
}

/* ---- frees held back ------------------------------------------------------------
 * A training step frees a few dozen tensors, and a check queued before each
 * free is one kernel launch each: on the H200 about as much host time as one
 * of the program's own small launches. Frees on the legacy default stream
 * (PyTorch's default stream, cudart's stream 0) of allocations up to
 * HELD_ALLOC_MAX are therefore held back, up to ATL_RZ_SLOT_ZONES of them and
 * HELD_BYTES_MAX in all, and released together: one check of all their
 * zones, queued on that stream, which also poisons their bytes, then the
 * allocations go into the quarantine (without one, the driver's frees in the
 * program's order). The memory returns to the pool later than the program
 * asked, never earlier, which stream order allows. The batch is released
 * when it is full, before every host sync (so that sync's verdicts include
 * it), before a capture begins, at every full check (teardown, exit), when
 * the program frees a held pointer again (the driver then answers what it
 * would have), and when an allocation fails for memory (released, the
 * context synchronised, the allocation retried once:
 * atl_redzone_release_held). Only the legacy stream: the program cannot
 * destroy it under a held free, and every thread names the same one (a
 * per-thread default stream is the calling thread's own). Nothing is held
 * while a capture is active: work on the legacy stream would then
 * invalidate it. A write after free in the short time a free is held (up to
 * seven more frees, or the next sync) is not seen: the poison comes after
 * it. Under scan_lock. */
#define HELD_ALLOC_MAX ((size_t)16 << 20)
#define HELD_BYTES_MAX ((size_t)64 << 20)
static struct {
    CUcontext ctx;   /* current when the frees were made */
    CUstream stream; /* as the program named it: NULL or CU_STREAM_LEGACY */
    size_t bytes;
    CUdeviceptr ptr[ATL_RZ_SLOT_ZONES];
    struct qent *q[ATL_RZ_SLOT_ZONES]; /* its quarantine entry, or NULL */
    struct pending p; /* the batch's check: p.nz frees, their zones, sites and launches */
} held;
static unsigned held_n; /* held.p.nz, for a look without the lock */
/* the held allocations' spans (base to the end of the zone), for a look
 * without the lock (atomic; a stale one costs an early release or misses
 * one, never a wrong answer) */
static uint64_t held_lo[ATL_RZ_SLOT_ZONES], held_hi[ATL_RZ_SLOT_ZONES];
static uint64_t held_frees, held_batches;

/* Queues the batch's check (and poison) and the driver's frees or the
 * quarantine; the verdicts come with the next poll, like any queued
 * check. */
static void held_release_locked(void)
{
    if (!held.p.nz || atl_capture_any())
        return;
    CUcontext cur = NULL;
    int other = atl_drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != held.ctx;
    int gone = other && atl_drv.cuCtxSetCurrent(held.ctx) != CUDA_SUCCESS;
    int poisoned = 0;
    if (!gone) {
        held.p.nfill = 0;
        for (unsigned i = 0; i < held.p.nz; i++)
            if (held.q[i])
                held.p.f[held.p.nfill++] =
                    (struct atl_rz_fill){held.q[i]->z.base, held.q[i]->z.bytes};
        poisoned = free_check_locked(&held.p, held.stream) == 0;
    }
    /* a context that is gone took its memory with it: nothing to free */
    for (unsigned i = 0; i < held.p.nz && !gone; i++) {
        if (held.q[i] && poisoned) {
            q_add_locked(held.q[i]);
            held.q[i] = NULL;
            continue;
        }
        CUresult r = atl_own_result(atl_drv.cuMemFreeAsync(held.ptr[i], held.stream));
        static int said;
        char nm[64];
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED &&
            !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            atl_log(ATL_INFO, "redzone: the held free of alloc#%llu failed (%s)",
                    (unsigned long long)held.p.z[i].seq, atl_error_name(r, nm, sizeof nm));
    }
    for (unsigned i = 0; i < held.p.nz; i++) {
        free(held.q[i]);
        held.q[i] = NULL;
    }
    held_batches++;
    held.p.nz = 0;
    held.p.nfill = 0;
    held.bytes = 0;
    __atomic_store_n(&held_n, 0, __ATOMIC_RELAXED);
    if (other && !gone)
        atl_drv.cuCtxSetCurrent(cur);
}

/* Holds f's free of the allocation with zone z back (1), or leaves it to the
 * caller (0). */
static int held_take_locked(const struct atl_free *f, const struct zone *z)
{
    if (!f->async || (atl_hook_flags[f->hook] & ATL_F_PT) ||
        (f->stream != NULL && f->stream != CU_STREAM_LEGACY) || z->bytes > HELD_ALLOC_MAX ||
        !atl_drv.cuMemFreeAsync || atl_capture_any())
        return 0;
    CUcontext cur = NULL;
    if (!checks_ready_locked() || atl_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur)
        return 0;
    if (held.p.nz &&
        (held.ctx != cur || held.stream != f->stream || held.p.nz == ATL_RZ_SLOT_ZONES ||
         held.bytes + z->bytes + z->len > HELD_BYTES_MAX))
        held_release_locked();
    if (held.p.nz == 0) {
        held.ctx = cur;
        held.stream = f->stream;
        held.bytes = 0;
        held.p.how =
            (struct finder){.by = BY_FREE, .where = atl_hook_names[f->hook], .stream = f->stream};
        held.p.has_site = 1;
        memset(held.p.qe, 0, sizeof held.p.qe);
    }
    unsigned i = held.p.nz;
    held.ptr[i] = f->ptr;
    held.q[i] = q_entry(f, z);
    held.p.z[i] = *z;
    __atomic_store_n(&held_lo[i], z->base, __ATOMIC_RELAXED);
    __atomic_store_n(&held_hi[i], z->start + z->len, __ATOMIC_RELAXED);
    site_copy(&held.p.site[i], &f->rec.site);
    held.p.upto[i] = atl_fault_last_launch();
    held.p.nz = i + 1;
    held.bytes += z->bytes + z->len;
    __atomic_store_n(&held_n, held.p.nz, __ATOMIC_RELAXED);
    held_frees++;
    return 1;
}

/* The program frees ptr, which no live allocation holds: if a held free
 * has it, the batch goes first, and if the quarantine has it, it leaves,
 * so that the driver answers this free as it would have without us (a
 * double free). */
static void held_refree(CUdeviceptr ptr)
{
    pthread_mutex_lock(&scan_lock);
    for (unsigned i = 0; i < held.p.nz; i++)
        if (held.ptr[i] == ptr) {
            held_release_locked();
            break;
        }
    q_refree_locked(ptr);
    pthread_mutex_unlock(&scan_lock);
}

static void held_release(void)
{
    if (!__atomic_load_n(&held_n, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&scan_lock);
    held_release_locked();
    pthread_mutex_unlock(&scan_lock);
}

/* Allocations being retried after failing for memory (hooks/kinds.h ATL_ALLOC_RETRY): while
 * there are any, frees are neither held nor quarantined but go straight to the driver, so
 * that other threads' frees cannot refill the quarantine between a release and the retry
 * (issue #48: four threads on a full device saw up to 30% of their allocations fail). */
static unsigned pressure;

/* Frees under way (from atl_redzone_free_pre to atl_redzone_free_post: removed from the
 * ledger and the zones, not yet with the driver, nor held, nor in the quarantine; perhaps
 * waiting for scan_lock or for the device), counted by epoch: a retry flips the epoch and
 * waits for the frees of the old one, 2 s at most, so that what they hold is given back
 * before it asks again. 1 when there were any. */
static unsigned free_busy[2], free_epoch;
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;

static int frees_drain(void)
{
    pthread_mutex_lock(&drain_lock);
    unsigned old = __atomic_fetch_xor(&free_epoch, 1, __ATOMIC_SEQ_CST) & 1;
    int any = __atomic_load_n(&free_busy[old], __ATOMIC_SEQ_CST) != 0;
    for (int i = 0; i < 10000 && __atomic_load_n(&free_busy[old], __ATOMIC_SEQ_CST); i++)
        nanosleep(&(struct timespec){0, 200000}, NULL);
    pthread_mutex_unlock(&drain_lock);
    return any;
}

int atl_redzone_pressure(int begin)
{
    if (!pad)
        return 0;
    if (begin)
        __atomic_add_fetch(&pressure, 1, __ATOMIC_SEQ_CST);
    else
        __atomic_sub_fetch(&pressure, 1, __ATOMIC_SEQ_CST);
    return 1;
}

/* An allocation that fails with its red zone even with nothing held: made without one (an
 * allocation of exactly the free memory succeeds natively), unguarded, said once. */
int atl_redzone_unpad(struct atl_alloc *a)
{
    if (a->padded <= a->bytes && !a->padded_height)
        return 0;
    a->padded = a->bytes;
    a->padded_height = 0;
    a->unpadded = 1; /* said and counted if the driver then makes it (atl_redzone_alloc_post) */
    return 1;
}

int atl_redzone_release_held(void)
{
    if (!pad)
        return 0;
    int draining = frees_drain();
    pthread_mutex_lock(&scan_lock);
    int any = held.p.nz || q_count() || draining;
    held_release_locked();
    q_flush_locked();
    /* nothing of the program's held: the checks' own device memory (the merge records, which
     * only let a check run on several blocks) is given back, for good */
    int mine = !any && dmerge;
    int ok = (any || mine) && held.p.nz == 0 && sync_for_scan() == 0;
    if (ok && mine) {
        slots_poll(1);
        if (!pending_any()) {
            atl_drv.cuMemFree_v2(dmerge);
            dmerge = 0;
            merge_tried = 1;
            atl_log(ATL_INFO,
                    "redzone: an allocation failed for memory: the checks' own %zu KiB of device "
                    "memory given back (each check runs on one block from now on)",
                    SLOTS * sizeof(struct atl_rz_merge) >> 10);
        } else {
            ok = 0;
        }
    }
    pthread_mutex_unlock(&scan_lock);
    return ok;
}

/* A context is being torn down, perhaps the one the kernels and the mapped
 * buffers live in: the driver would free them with it, and the next check
 * would write into freed memory. They are freed now, while valid, and made
 * again at the next check, in whatever context is current then (a
 * teardown of another context costs a reload). Checks still in flight
 * (the sync before failed) keep their memory: it is let go, not freed. */
static void kernels_forget_locked(void)
{
    int idle = pend_tail == pend_head;
    for (uint64_t k = pend_tail; k < pend_head; k++)
        pend_done(&pend[k % SLOTS]);
    __atomic_store_n(&pend_tail, pend_head, __ATOMIC_RELAXED);
    if (idle && slots && atl_drv.cuMemFreeHost)
        atl_drv.cuMemFreeHost(slots);
    if (idle && dmerge && atl_drv.cuMemFree_v2)
        atl_drv.cuMemFree_v2(dmerge);
    merge_tried = 0;
    if (idle && tab && atl_drv.cuMemFreeHost) {
        atl_drv.cuMemFreeHost(tab);
        atl_drv.cuMemFreeHost(res);
    }
    if (idle && kernel_mod && atl_drv.cuModuleUnload)
        atl_drv.cuModuleUnload(kernel_mod);
    slots = NULL;
    dmerge = 0;
    tab = NULL;
    res = NULL;
    captab = 0;
    snap_version = (uint64_t)-1;
    kernel_mod = NULL;
    scan_fn = check_fn = NULL;
    if (kernel_state == 1) /* a driver that refused the PTX refuses it again */
        kernel_state = 0;
    while (nev_free) /* events are the context's too */
        atl_drv.cuEventDestroy_v2(ev_free[--nev_free].e);
}

/* ---- full checks --------------------------------------------------------------------
 * In launch mode another thread's launch may have overrun a zone and not yet
 * queued its own check when a full check (at this thread's sync) reads the
 * zone: reported then, the overrun would be put down to no launch. While
 * such launches are in flight (`unchecked`, counted from before their
 * driver call until their check is queued), a full check that may defer
 * (how->defer) leaves a corrupted zone watched and unreported, and the
 * launches since the last clean check suspects, for the launch's own check
 * to find; a full check with no launch in flight (at the latest the one at
 * exit) reports what none found. */
static unsigned unchecked; /* atomic */

static int full_report(const struct zone *z, unsigned bad, size_t first, size_t last,
                       const struct finder *how, int defer, int *left)
{
    if (defer) {
        ++*left;
        return 0;
    }
    return report(z, NULL, bad, first, last, how);
}

/* ---- every zone --------------------------------------------------------------------
 * Every watched zone, freed ones included, after a context sync. The sync
 * is what makes a zone safe to include: its poison (a memset on the
 * allocation's stream, which the check's stream need not wait for) is
 * complete, as is every queued check, whose verdicts are read first.
 * `culprit`: name that launch (a launch whose reach could not be told).
 * Called with scan_lock held (it guards the mapped tables; the driver calls
 * made under it never call back into atlastrace). */
static int scan_locked(const struct finder *how, const struct atl_launch *culprit, const char *why)
{
    if (!pad)
        return 0;
    if (kernel_state == 0)
        kernel_load();
    int gpu = kernel_state == 1;
    held_release_locked(); /* their zones are checked with the rest */
    uint64_t upto = atl_fault_last_launch();
    if (sync_for_scan() != 0)
        return 0;
    slots_poll(1);
    if (snapshot_zones(gpu, how->freed_too) != 0) {
        if (!gpu)
            return 0;
        kernel_state = -1; /* no mapped memory: copies from now on */
        gpu = 0;
        if (snapshot_zones(0, how->freed_too) != 0)
            return 0;
    }
    struct finder f = *how;
    f.upto = upto;
    if (culprit) {
        f.by = BY_LAUNCH;
        f.seq = culprit->seq;
        f.func = (void *)culprit->func;
        memcpy(f.grid, culprit->grid, sizeof f.grid);
        memcpy(f.block, culprit->block, sizeof f.block);
        f.stream = culprit->stream;
        f.whole = why;
    }
    __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
    /* launches in flight other than the culprit (whose post this is) */
    int defer = how->defer && __atomic_load_n(&unchecked, __ATOMIC_ACQUIRE) > (culprit ? 1u : 0u);
    int found = 0, left = 0;
    if (nsnap == 0)
        goto clean;
    if (gpu) {
        unsigned n = (unsigned)ntab;
        void *args[] = {&dtab, &n, &dres};
        unsigned blocks = n < 1024 ? n : 1024;
        CUresult r = atl_drv.cuLaunchKernel(scan_fn, blocks, 1, 1, 128, 1, 1, 0, NULL, args, NULL);
        if (r != CUDA_SUCCESS) {
            /* e.g. another context is current than the one the kernel was
             * loaded into: check this time with copies */
            gpu = 0;
            goto copies;
        }
        if (atl_own_result(atl_drv.cuStreamSynchronize(NULL)) != CUDA_SUCCESS)
            return 0; /* a fault of the program's own: its next call reports it (latched) */
        /* the entries of one zone are consecutive: add them up */
        for (size_t i = 0; i < ntab;) {
            size_t z = tab_zone[i];
            unsigned bad = 0;
            size_t first = 0, last = 0;
            for (; i < ntab && tab_zone[i] == z; i++) {
                volatile struct atl_rz_result *g = &res[i];
                if (!g->bad)
                    continue;
                if (!bad)
                    first = tab_off[i] + g->first;
                last = tab_off[i] + g->last;
                bad += g->bad;
            }
            if (bad)
                found += full_report(&snap[z], bad, first, last, &f, defer, &left);
        }
    } else {
    copies:
        for (size_t i = 0; i < nsnap; i++) {
            unsigned bad;
            size_t first = 0, last = 0;
            if (zone_read(&snap[i], &bad, &first, &last) == 0 && bad)
                found += full_report(&snap[i], bad, first, last, &f, defer, &left);
        }
    }
    if (found || left)
        return found;
clean:
    if (upto > __atomic_load_n(&clean_upto, __ATOMIC_RELAXED))
        __atomic_store_n(&clean_upto, upto, __ATOMIC_RELEASE);
    if (how->freed_too && upto > __atomic_load_n(&clean_upto_freed, __ATOMIC_RELAXED))
        __atomic_store_n(&clean_upto_freed, upto, __ATOMIC_RELEASE);
    return 0;
}

static int scan_all(const char *where, int defer, int freed_too)
{
    if (!pad)
        return 0;
    struct finder how = {.by = BY_FULL, .where = where, .defer = defer, .freed_too = freed_too};
    pthread_mutex_lock(&scan_lock);
    int n = scan_locked(&how, NULL, NULL);
    pthread_mutex_unlock(&scan_lock);
    return n;
}

int atl_redzone_scan_all(const char *where)
{
    return scan_all(where, 0, 1);
}

/* ---- what a launch can reach ---------------------------------------------------------
 * The zones of the guarded allocations a launch's parameter words point
 * into (launch_words: every 8-byte-aligned word of every parameter, by-value
 * structs included), from the base up to the end of the red zone (a pointer
 * one past the end counts: kernels are given end pointers), freed ones in
 * the quarantine by their base. The cost grows with the parameter bytes,
 * never with the allocations live. Returns how many zones (each once; at
 * most one a word, so `out` holds nw), or -1 when it cannot tell (no
 * layout, more candidate words than kept): the caller then checks every
 * zone. A launch with more candidate words than fit on the stack
 * (REACH_STACK) is a wide one, a multi-tensor kernel: its checks, a queued
 * check per ATL_RZ_SLOT_ZONES zones, cost an enqueue each, and still less
 * than a full check would (the context synchronised, every zone read:
 * 123 us a launch on the H200's GPT-2 steps, where AdamW's foreach kernels
 * made 14 of them a step). */
#define REACH_STACK 32 /* 4 slots of ATL_RZ_SLOT_ZONES */
#define ATL_STR_(x) #x
#define ATL_STR(x) ATL_STR_(x)
struct reach {
    struct zone z;
    unsigned arg, off;
};

/* check_take_locked for the check after a launch, straight from its reach
 * list (nz zones of it): each zone is copied once, into its slot, and its
 * span into the kernel's list, with no struct pending made on the way (a
 * launch's check has no call stack, fills or quarantine entries). */
static int launch_take_locked(const struct finder *how, const struct reach *r, unsigned nz,
                              struct check_call *c)
{
    uint64_t k;
    if (slot_next_locked(&k) != 0)
        return -1;
    memset(&c->list, 0, sizeof c->list);
    struct pending *q = &pend[k % SLOTS];
    size_t bytes = 0;
    q->ticket = k + 1;
    q->how = *how;
    q->nz = nz;
    q->nfill = 0;
    q->has_site = 0;
    for (unsigned i = 0; i < nz; i++) {
        q->z[i] = r[i].z;
        q->arg[i] = r[i].arg;
        q->off[i] = r[i].off;
        c->list.z[i] = (struct atl_rz_zone){r[i].z.start, r[i].z.len, fill, 0};
        bytes += r[i].z.len;
    }
    memset(q->qe, 0, sizeof q->qe);
    slot_taken_locked(k, c, nz, 0, bytes);
    return 0;
}

static int reach_of(const struct lword *w, unsigned nw, unsigned flags, struct reach *out,
                    const char **why)
{
    if (flags & (WL_UNKNOWN | WL_NOPARAMS)) {
        /* no parameters: the kernel may still write through a pointer it
         * reads from device memory */
        *why = flags & WL_NOBUF      ? "its parameter buffer could not be read"
               : flags & WL_NOPARAMS ? "its kernel takes no parameters"
                                     : "the driver gave no parameter layout for its kernel";
        return -1;
    }
    if (flags & WL_TRUNC) {
        *why = "its parameters hold more than " ATL_STR(WORDS_MAX) " words that may point into "
                                                                   "guarded allocations";
        return -1;
    }
    int n = 0;
    pthread_mutex_lock(&zones_lock);
    for (unsigned k = 0; k < nw; k++) {
        const struct zone *z = zone_holding_locked(w[k].v);
        if (!z)
            continue;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++)
            seen = out[i].z.base == z->base;
        if (!seen)
            out[n++] = (struct reach){*z, w[k].arg, w[k].off};
    }
    pthread_mutex_unlock(&zones_lock);
    return n;
}

/* The launch's own check of the zones it reaches: queued right after it, on
 * its stream. No context sync, even for a zone made since the last check:
 * the zone was poisoned on its allocation's stream, and a launch that uses
 * the allocation is ordered after that in any correctly ordered program,
 * so the check (after the launch on the launch's stream) is too. The slots
 * are taken under scan_lock and the checks launched after it is let go:
 * the driver's enqueue is most of a check's cost, and threads launching on
 * their own streams would otherwise make theirs one at a time. The check
 * is queued before the program's launch call returns, so anything the
 * program orders after its launch (a sync, then a free) comes after the
 * check too. With no kernel: the launch's stream is synchronised and the
 * zones are copied. */
static void launch_check(const struct atl_launch *l, const struct reach *r, int n)
{
    struct finder how = {
        .by = BY_LAUNCH, .seq = l->seq, .func = (void *)l->func, .stream = l->stream};
    memcpy(how.grid, l->grid, sizeof how.grid);
    memcpy(how.block, l->block, sizeof how.block);
    struct check_call small[REACH_STACK / ATL_RZ_SLOT_ZONES], *calls = small;
    int ncalls = 0, queued = 1;
    if (n > REACH_STACK && !(calls = malloc((size_t)(n + ATL_RZ_SLOT_ZONES - 1) /
                                            ATL_RZ_SLOT_ZONES * sizeof *calls))) {
        atl_log_once_oom("a wide launch's red-zone checks");
        calls = small;
        queued = 0; /* checked with copies, below */
    }
    pthread_mutex_lock(&scan_lock);
    for (int i = 0; i < n && queued; i += ATL_RZ_SLOT_ZONES) {
        unsigned nz = n - i < ATL_RZ_SLOT_ZONES ? (unsigned)(n - i) : ATL_RZ_SLOT_ZONES;
        queued = launch_take_locked(&how, r + i, nz, &calls[ncalls]) == 0;
        ncalls += queued;
    }
    pthread_mutex_unlock(&scan_lock);
    for (int i = 0; i < ncalls; i++)
        if (check_launch(&calls[i], l->stream) != CUDA_SUCCESS)
            queued = 0;
    if (calls != small)
        free(calls);
    if (queued)
        return;
    /* not queued (no kernel, or its launch failed): every zone with copies;
     * a zone a queued slot reports too is reported once */
    if (atl_capture_any()) {
        __atomic_add_fetch(&skipped_capture, 1, __ATOMIC_RELAXED);
        return;
    }
    pthread_mutex_lock(&scan_lock);
    if (atl_own_result(atl_drv.cuStreamSynchronize(l->stream)) == CUDA_SUCCESS) {
        for (int i = 0; i < n; i++) {
            unsigned bad;
            size_t first = 0, last = 0;
            __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
            struct finder zhow = how;
            zhow.arg = r[i].arg;
            zhow.off = r[i].off;
            if (zone_read(&r[i].z, &bad, &first, &last) == 0 && bad)
                report(&r[i].z, NULL, bad, first, last, &zhow);
        }
    }
    pthread_mutex_unlock(&scan_lock);
}

/* ---- events ---------------------------------------------------------------------- */

unsigned atl_redzone_init(void)
{
    pad = (size_t)atl_cfg.redzone;
    fill = (unsigned char)atl_cfg.redzone_fill;
    mode = (int)atl_cfg.redzone_check;
    min_idx = atl_cfg.redzone_min_idx;
    qmax = (size_t)atl_cfg.redzone_quarantine_mb << 20;
    /* A quarantine moves every allocation to a new address (the freed ones
     * are not handed out again for a while), and the step trace compares
     * the pointers each step passes: with the trace on it has to be asked
     * for by name. */
    int qi = atl_config_find("ATLAS_REDZONE_QUARANTINE_MB");
    if (pad && qmax && (atl_cfg.trace || atl_cfg.trace_file || atl_cfg.chrome_trace) &&
        !(qi >= 0 && atl_cfg.set[qi])) {
        qmax = 0;
        char qname[64];
        atl_log(ATL_INFO,
                "redzone: no quarantine with the step trace on (it would give every step's "
                "buffers new addresses); %s sets one",
                atl_hint_name("ATLAS_REDZONE_QUARANTINE_MB", qname, sizeof qname));
    }
    active = pad > 0;
    if (active)
        atl_ledger_on = 1;
    if (pad)
        atl_ksel_init();
    if (pad && *atl_pools_routed())
        atl_log(ATL_INFO, "redzone: framework pools routed to one driver allocation per tensor: %s",
                atl_pools_routed());
    return atl_redzone_events();
}

unsigned atl_redzone_events(void)
{
    if (!active)
        return 0;
    unsigned on = ATL_ON_ALLOC | ATL_ON_CTX;
    /* Syncs: the queued checks' verdicts are read there in every mode.
     * Launches: launch mode checks after them; every mode keeps their
     * parameter words, which name the suspects of an overrun found later. */
    if (pad)
        on |= ATL_ON_CAPTURE | ATL_ON_SYNC | ATL_ON_LAUNCH;
    return on;
}

void atl_redzone_alloc_pre(struct atl_alloc *a)
{
    if (!pad || a->seq < min_idx || a->bytes == 0)
        return;
    if (a->kind == ATL_ALLOC_PITCH) {
        /* the pitch is only known afterwards, but it is at least the width:
         * this many extra rows make a tail of at least `pad` bytes */
        if (!a->width || !a->height)
            return;
        size_t rows = (pad + a->width - 1) / a->width;
        if (a->height + rows < a->height)
            return;
        a->padded_height = a->height + rows;
        return;
    }
    if (a->bytes + pad < a->bytes)
        return;
    a->padded = a->bytes + pad;
}

/* PyTorch's caching allocator serves the process (pools.c): its segments are guarded, not the
 * tensors inside them. Looked for at the first 64 guarded allocations (PyTorch loads
 * libc10_cuda at its import, before its first); said once (issue #45: a Triton kernel's write
 * past a tensor ended "0 overruns found", nothing said). */
static unsigned torch_looked;
static int torch_pool;

static void torch_pool_note(void)
{
    if (__atomic_load_n(&torch_looked, __ATOMIC_RELAXED) >= 64 ||
        __atomic_add_fetch(&torch_looked, 1, __ATOMIC_RELAXED) > 64 || !atl_pools_torch_caching())
        return;
    if (__atomic_exchange_n(&torch_pool, 1, __ATOMIC_RELAXED))
        return;
    char route[96];
    atl_log(ATL_WARN,
            "redzone: PyTorch's caching allocator serves this process: red zones guard its "
            "segments, not the tensors it places inside them, so a write past a tensor into its "
            "neighbour is not seen; %s gives each tensor a driver allocation and a zone of its "
            "own (allocation costs more, and torch.compile's CUDA graph trees then fail)",
            atl_hint_setting("ATLAS_REDZONE_POOLS", "route", route, sizeof route));
}

int atl_redzone_alloc_post(struct atl_alloc *a, CUresult r)
{
    if (!active || r != CUDA_SUCCESS || !a->dptr)
        return 0;
    if (!__atomic_load_n(&torch_pool, __ATOMIC_RELAXED))
        torch_pool_note();
    if (a->unpadded) {
        __atomic_add_fetch(&unpadded_total, 1, __ATOMIC_RELAXED);
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            atl_log(ATL_WARN,
                    "redzone: alloc#%llu (%zu bytes) fits in the device's memory only without "
                    "its red zone: made without one, unguarded (so is any other such; counted in "
                    "the summary)",
                    (unsigned long long)a->seq, a->bytes);
        return 0;
    }
    if (a->padded <= a->bytes && !a->padded_height)
        return 0;
    struct zone z = {.base = *a->dptr,
                     .bytes = a->bytes,
                     .len = a->padded - a->bytes,
                     .seq = a->seq,
                     .born = atl_fault_last_launch(),
                     .watched = 1};
    if (a->kind == ATL_ALLOC_PITCH) {
        if (!a->pitch)
            return 0;
        z.bytes = *a->pitch * a->height;
        z.len = *a->pitch * (a->padded_height - a->height);
    }
    z.start = z.base + z.bytes;
    CUresult pr;
    if (atl_capture_any() && (a->kind != ATL_ALLOC_ASYNC || a->cap)) {
        /* A memset now would be recorded into the program's graph (a
         * stream-ordered allocation on the capturing stream: a graph's
         * memory node), or, on the legacy stream, invalidate the capture of
         * a blocking stream (PyTorch's caching allocator grows a graph's
         * private pool with cudaMalloc during the capture) */
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            atl_log(ATL_INFO,
                    "redzone: alloc#%llu made while a stream capture is active is not guarded "
                    "(poisoning it would add a node to the program's graph or end its capture)",
                    (unsigned long long)a->seq);
        return 0;
    }
    if (a->kind == ATL_ALLOC_ASYNC) {
        pr = atl_drv.cuMemsetD8Async ? atl_drv.cuMemsetD8Async(z.start, fill, z.len, a->stream)
                                     : CUDA_ERROR_NOT_SUPPORTED;
    } else {
        pr = atl_drv.cuMemsetD8_v2 ? atl_own_result(atl_drv.cuMemsetD8_v2(z.start, fill, z.len))
                                   : CUDA_ERROR_NOT_SUPPORTED;
    }
    if (pr != CUDA_SUCCESS) {
        static int said;
        char nm[64];
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            atl_log(ATL_WARN,
                    "redzone: poisoning the red zone of alloc#%llu failed (%s): it is "
                    "not checked",
                    (unsigned long long)a->seq, atl_error_name(pr, nm, sizeof nm));
        return 0;
    }
    zone_add(&z);
    __atomic_add_fetch(&guarded_total, 1, __ATOMIC_RELAXED);
    atl_log(ATL_INFO, "redzone: alloc#%llu bytes=%zu ptr=0x%llx", (unsigned long long)z.seq,
            z.bytes, (unsigned long long)z.base);
    return 1;
}

/* The free of guarded allocation z (its zone just removed) goes into the
 * quarantine (with scan_lock held, let go during cuMemFree's wait): its zone is checked and its
 * bytes poisoned by one kernel queued on the free's stream (cuMemFree: the legacy stream, then the
 * device is waited for, as the driver's free does); 1 when it did (the
 * free is held), 0 when the caller checks and frees as without one. */
static int quarantine_free_locked(struct atl_free *f, const struct zone *z)
{
    struct qent *q = q_entry(f, z);
    if (!q)
        return 0;
    CUstream s = own_stream(f);
    struct pending p;
    p.how = (struct finder){.by = BY_FREE,
                            .where = atl_hook_names[f->hook],
                            .upto = atl_fault_last_launch(),
                            .stream = s};
    p.nz = 1;
    p.nfill = 1;
    p.has_site = 1;
    memset(p.qe, 0, sizeof p.qe);
    p.z[0] = *z;
    p.f[0] = (struct atl_rz_fill){z->base, z->bytes};
    p.arg[0] = p.off[0] = 0;
    site_copy(&p.site[0], &f->rec.site);
    p.upto[0] = p.how.upto;
    if (check_queue_locked(&p, s) != 0) {
        free(q);
        return -1; /* the caller checks with copies, as without a quarantine */
    }
    int ok = 1;
    if (!f->async) {
        /* the driver's cuMemFree waits for the device; so does this one, and
         * an error of the program's that the wait returns is left to the
         * driver's own free to answer. Without scan_lock: other threads'
         * checks and frees go on meanwhile (an allocation that fails for
         * memory meanwhile waits for this free: atl_redzone_release_held). */
        pthread_mutex_unlock(&scan_lock);
        ok = atl_drv.cuCtxSynchronize && atl_own_result(atl_drv.cuCtxSynchronize()) == CUDA_SUCCESS;
        pthread_mutex_lock(&scan_lock);
        slots_poll(0);
    } else if (s != NULL && s != CU_STREAM_LEGACY) {
        ok = (q->ev = event_get(q->ctx)) != NULL &&
             atl_own_result(atl_drv.cuEventRecord(q->ev, s)) == CUDA_SUCCESS;
    }
    if (!ok) {
        event_put(q->ev, q->ctx);
        free(q);
        return -2; /* checked (queued); the driver frees */
    }
    q_add_locked(q);
    f->held = 1;
    return 1;
}

void atl_redzone_free_pre(struct atl_free *f)
{
    if (pad) {
        unsigned e = __atomic_load_n(&free_epoch, __ATOMIC_SEQ_CST) & 1;
        __atomic_add_fetch(&free_busy[e], 1, __ATOMIC_SEQ_CST);
        f->drain = e + 1;
    }
    if (pad && !f->known && (__atomic_load_n(&held_n, __ATOMIC_RELAXED) || qmax))
        held_refree(f->ptr);
    if (!active || !f->known)
        return;
    struct zone z;
    if (!pad || !zone_remove(f->ptr, &z))
        return;
    /* The last moment the zone is readable: a check of it alone is queued
     * on the free's stream, before the real free, so it runs after the work
     * the free is ordered after and before the memory can be handed out
     * again (a pool reuses it only after the free, in stream order).
     * cuMemFreeAsync: the free's stream. cuMemFree: the legacy stream, which
     * runs after the work of every blocking stream; the driver completes the
     * work queued on the device before it releases memory with cuMemFree
     * (cuMemFree synchronises), so the check has run, and its verdict is
     * read, when the free returns (free_post). A kernel of a non-blocking
     * stream still writing the allocation then is the program's own use
     * after free, which the quarantine's poison catches. Checks queued
     * earlier that list this zone ran before it too: each was queued right
     * after a launch that used the allocation, which the free must follow.
     * No context sync, no copy. A zone already reported is not checked
     * again, but still goes into the quarantine. */
    if (f->async ? f->cap : atl_capture_any()) {
        /* a check now would become a node of the program's graph (or
         * invalidate its capture): this zone goes unchecked */
        __atomic_add_fetch(&skipped_capture, 1, __ATOMIC_RELAXED);
        return;
    }
    pthread_mutex_lock(&scan_lock);
    /* an allocation is being retried for memory: nothing held back now */
    int press = __atomic_load_n(&pressure, __ATOMIC_SEQ_CST) != 0;
    if (!press && held_take_locked(f, &z)) {
        f->held = 1; /* the hook returns success without the driver's free */
        pthread_mutex_unlock(&scan_lock);
        return;
    }
    int qr = !press && checks_ready_locked() ? quarantine_free_locked(f, &z) : 0;
    if (qr == 1 || qr == -2) {
        pthread_mutex_unlock(&scan_lock);
        return;
    }
    /* only the fields check_queue_locked reads (the site arrays are large) */
    struct pending p;
    p.how = (struct finder){.by = BY_FREE,
                            .where = atl_hook_names[f->hook],
                            .upto = atl_fault_last_launch(),
                            .stream = own_stream(f)};
    p.nz = 1;
    p.nfill = 0;
    p.has_site = 1;
    memset(p.qe, 0, sizeof p.qe);
    p.z[0] = z;
    p.arg[0] = p.off[0] = 0;
    site_copy(&p.site[0], &f->rec.site);
    p.upto[0] = p.how.upto;
    if (z.watched || qr == -1)
        free_check_locked(&p, p.how.stream);
    pthread_mutex_unlock(&scan_lock);
}

void atl_redzone_free_post(struct atl_free *f, CUresult r)
{
    if (f->drain) {
        __atomic_sub_fetch(&free_busy[f->drain - 1], 1, __ATOMIC_SEQ_CST);
        f->drain = 0;
    }
    if (!active || !f->ptr)
        return;
    if (pad && !f->async && !f->held && pending_any()) {
        /* cuMemFree waited for the device: the check before it is done */
        pthread_mutex_lock(&scan_lock);
        slots_poll(0);
        pthread_mutex_unlock(&scan_lock);
    }
}

/* A launch whose parameters point into a free held back: the batch is
 * released (its poison queued) before the launch is, so that a write after
 * that free by this launch lands in the poison; on the legacy stream the
 * poison runs first. */
static void held_reached(const struct atl_launch *l)
{
    struct lword w[WORDS_MAX];
    unsigned flags, n = launch_words(l, w, &flags), hit = 0;
    unsigned nh = __atomic_load_n(&held_n, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < nh && i < ATL_RZ_SLOT_ZONES && !hit; i++) {
        uint64_t lo = __atomic_load_n(&held_lo[i], __ATOMIC_RELAXED);
        uint64_t hi = __atomic_load_n(&held_hi[i], __ATOMIC_RELAXED);
        for (unsigned k = 0; k < n && !hit; k++)
            hit = w[k].v - lo < hi - lo;
    }
    if (hit)
        held_release();
}

void atl_redzone_launch_pre(const struct atl_launch *l)
{
    if (!pad)
        return;
    if (qmax && __atomic_load_n(&held_n, __ATOMIC_RELAXED))
        held_reached(l);
    if (mode == CHECK_LAUNCH)
        __atomic_add_fetch(&unchecked, 1, __ATOMIC_ACQ_REL);
}

static void launch_checks(const struct atl_launch *l, const struct lword *w, unsigned nw,
                          unsigned flags)
{
    struct reach small[REACH_STACK], *reach = small;
    const char *why = NULL; /* set by reach_of when it returns -1 */
    int n;
    if (nw > REACH_STACK && !(reach = malloc(nw * sizeof *reach))) {
        reach = small;
        n = -1;
        why = "no memory to list the allocations it reaches";
    } else {
        n = reach_of(w, nw, flags, reach, &why);
    }
    if (n > 0) {
        launch_check(l, reach, n);
    } else if (n < 0) {
        /* what it reaches cannot be told: check every zone, and wait */
        struct finder how = {.by = BY_FULL, .where = "launch", .defer = 1};
        pthread_mutex_lock(&scan_lock);
        scan_locked(&how, l, why);
        pthread_mutex_unlock(&scan_lock);
    }
    if (reach != small)
        free(reach);
}

void atl_redzone_launch_post(const struct atl_launch *l, CUresult r)
{
    if (!pad)
        return;
    struct lword w[WORDS_MAX];
    unsigned flags;
    unsigned nw = launch_words(l, w, &flags);
    int capturing = r == CUDA_SUCCESS && l->cap;
    /* a launch that failed, or went into a graph, did not run: the graph's
     * launch is the suspect */
    wl_put(l->seq, w, nw, flags | (r != CUDA_SUCCESS || capturing ? WL_NOTRUN : 0));
    if (mode != CHECK_LAUNCH)
        return;
    if (r == CUDA_SUCCESS && !capturing) {
        if (atl_ksel_match(l->rec)) {
            launch_checks(l, w, nw, flags);
        } else {
            uint64_t v[WORDS_MAX];
            for (unsigned i = 0; i < nw; i++)
                v[i] = w[i].v;
            zones_mark_unchecked(v, nw, l->seq);
        }
    }
    __atomic_sub_fetch(&unchecked, 1, __ATOMIC_ACQ_REL);
}

/* Launch mode: a graph's kernels are not seen one by one; check right after
 * the graph, so its overrun is not blamed on the next launch. */
void atl_redzone_graph_launch_post(const struct atl_graph_launch *g, CUresult r)
{
    if (!pad || mode != CHECK_LAUNCH || r != CUDA_SUCCESS || g->cap)
        return;
    scan_all(atl_hook_names[g->hook], 0, 0);
}

void atl_redzone_sync_pre(const struct atl_sync *s)
{
    (void)s;
    if (pad)
        held_release(); /* before the wait: the sync's verdicts include them */
}

void atl_redzone_capture_pre(const struct atl_capture *c)
{
    if (pad && c->begin)
        held_release(); /* afterwards the legacy stream takes no work */
}

void atl_redzone_sync_post(const struct atl_sync *s, CUresult r)
{
    if (!pad || r != CUDA_SUCCESS)
        return;
    if (mode != CHECK_FREE) {
        /* the backstop: every zone, for what no launch's check saw (a
         * pointer the kernel read from device memory) */
        scan_all(atl_hook_names[s->hook], mode == CHECK_LAUNCH, 0);
    } else if (pending_any()) {
        /* the program waited: the checks queued before are likely done */
        pthread_mutex_lock(&scan_lock);
        slots_poll(0);
        pthread_mutex_unlock(&scan_lock);
    }
}

void atl_redzone_teardown(const char *where)
{
    if (!pad)
        return;
    /* The last moment the device memory is readable. Afterwards the zones
     * are forgotten: their memory goes with the context, and a scan kernel
     * reading it would fault. (The ledger keeps the records: the program
     * never freed them, which is what the leak list says.) The quarantine
     * is checked and freed first. At exit the locks are waited for only so
     * long (atl_exit_lock). */
    if (atl_exit_lock(&scan_lock, "the red-zone check at exit") != 0)
        return;
    q_flush_locked();
    struct finder how = {.by = BY_FULL, .where = where, .freed_too = 1};
    scan_locked(&how, NULL, NULL);
    kernels_forget_locked();
    if (atl_exit_lock(&zones_lock, "the red-zone check at exit") == 0) {
        nzones = 0;
        atl_addrmap_clear(&zone_at);
        version++;
        pthread_mutex_unlock(&zones_lock);
    }
    pthread_mutex_unlock(&scan_lock);
}

/* The exit's last full check, on atl_exit_bounded's helper thread. */
static void *exit_scan(void *arg)
{
    CUcontext ctx = *(CUcontext *)arg;
    if (ctx && atl_drv.cuCtxSetCurrent)
        atl_drv.cuCtxSetCurrent(ctx);
    atl_redzone_teardown("exit");
    return NULL;
}

void atl_redzone_exit(void)
{
    if (!active)
        return;
    if (pad) {
        /* in the exiting thread's context (read without a lock: a real
         * driver's and the fake's cuCtxGetCurrent take none) */
        static CUcontext ctx;
        if (atl_drv.cuCtxGetCurrent && atl_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
            ctx = NULL;
        atl_exit_bounded(exit_scan, &ctx, "the red-zone check at exit (the driver did not answer)");
        if (skipped_capture)
            atl_log(ATL_INFO, "redzone: %llu check%s skipped while a stream capture was active",
                    (unsigned long long)skipped_capture, skipped_capture == 1 ? " was" : "s were");
        if (unpadded_total)
            atl_log(ATL_WARN,
                    "redzone: %llu allocation%s made without a red zone (it fit in the "
                    "device's memory only so): not guarded",
                    (unsigned long long)unpadded_total, unpadded_total == 1 ? "" : "s");
        char h1[32], h2[32];
        if (held_frees)
            atl_log(ATL_INFO,
                    "redzone: %s free%s on the legacy stream %s held back and checked in %s "
                    "batch%s",
                    atl_summary_number(held_frees, h1), held_frees == 1 ? "" : "s",
                    held_frees == 1 ? "was" : "were", atl_summary_number(held_batches, h2),
                    held_batches == 1 ? "" : "es");
        /* the findings sink's counts: what a suppression file silenced is said apart */
        uint64_t overruns = atl_findings_count(ATL_FINDING_OVERRUN),
                 after_free = atl_findings_count(ATL_FINDING_AFTER_FREE),
                 quiet = atl_findings_suppressed(ATL_FINDING_OVERRUN) +
                         atl_findings_suppressed(ATL_FINDING_AFTER_FREE);
        char freed[260] = "";
        if (quiet)
            snprintf(freed, sizeof freed, "; %llu suppressed", (unsigned long long)quiet);
        size_t used = strlen(freed);
        /* numbers as the summary line writes them (2,114), in one run alike */
        char n1[32], n2[32], n3[32];
        if (quarantined_total)
            snprintf(freed + used, sizeof freed - used,
                     "; %s write%s after free found in %s freed allocation%s kept poisoned",
                     atl_summary_number(after_free, n1), after_free == 1 ? "" : "s",
                     atl_summary_number(quarantined_total, n2),
                     quarantined_total == 1 ? "" : "s");
        atl_log(ATL_WARN, "redzone: %s overrun%s found in %s guarded allocation%s (%s check%s)%s%s",
                atl_summary_number(overruns, n1), overruns == 1 ? "" : "s",
                atl_summary_number(guarded_total, n2), guarded_total == 1 ? "" : "s",
                atl_summary_number(checks, n3), checks == 1 ? "" : "s", freed,
                __atomic_load_n(&torch_pool, __ATOMIC_RELAXED)
                    ? "; PyTorch's caching allocator: the tensors inside its segments not guarded"
                    : "");
    }
}

int atl_redzone_counts(uint64_t *found, uint64_t *guarded, uint64_t *freed_written,
                       uint64_t *freed_kept)
{
    /* the findings sink's: suppressed ones are not among them */
    *found = atl_findings_count(ATL_FINDING_OVERRUN);
    *guarded = __atomic_load_n(&guarded_total, __ATOMIC_RELAXED);
    *freed_written = atl_findings_count(ATL_FINDING_AFTER_FREE);
    *freed_kept = __atomic_load_n(&quarantined_total, __ATOMIC_RELAXED);
    return pad != 0;
}

int atl_redzone_poison(uint64_t lo, uint64_t hi)
{
    if (!pad)
        return 0;
    int n = 0;
    pthread_mutex_lock(&zones_lock);
    size_t cnt = nzones;
    struct zone *copy = cnt ? malloc(cnt * sizeof *copy) : NULL;
    if (copy)
        memcpy(copy, zones, cnt * sizeof *copy);
    pthread_mutex_unlock(&zones_lock);
    for (size_t i = 0; copy && i < cnt; i++) {
        if (copy[i].seq < lo || copy[i].seq > hi)
            continue;
        if (atl_drv.cuMemsetD8_v2(copy[i].start, fill, copy[i].len) == CUDA_SUCCESS) {
            zone_set_watched(copy[i].base, copy[i].seq, 1);
            pthread_mutex_lock(&scan_lock);
            atl_addrmap_del(&reported, copy[i].seq);
            pthread_mutex_unlock(&scan_lock);
            n++;
        }
    }
    free(copy);
    return n;
}
