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
 *
 * The feature's files (src/redzone_internal.h says what they share): this
 * one, the settings, the zone set, what each launch's parameters point at
 * and the events of allocations, launches, syncs and captures;
 * src/redzone_check.c the checks; src/redzone_quar.c the frees (held back,
 * the quarantine); src/redzone_report.c the reports and the exit's summary.
 */
#define _GNU_SOURCE
#include "redzone.h"

#include "addrmap.h"
#include "capture.h"
#include "config.h"
#include "driver.h"
#include "fault.h"
#include "hint.h"
#include "kernels.h"
#include "kselect.h"
#include "ledger.h"
#include "log.h"
#include "pools.h"
#include "redzone_internal.h"
#include "services.h"
#include "tracediff.h" /* atl_hash_mix, atl_hash_bytes */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct atl_rz_opts opt;
const struct atl_rz_opts *const atl_rz_opt = &opt;

static uint64_t guarded_total;
static uint64_t unpadded_total; /* allocations made without their red zone (no memory for it) */

/* ---- the zone set -----------------------------------------------------------
 * The zones (struct zone, src/redzone_internal.h) by allocation base; the
 * copy into the full check's table is redone only when `version` moved.
 * `lo` and `hi` bound every zone's allocation (never shrunk): a parameter
 * word outside them is no pointer to a guarded allocation, without a
 * lookup. */
static pthread_mutex_t zones_lock = PTHREAD_MUTEX_INITIALIZER;
static struct zone *zones;
static size_t nzones, capzones;
static struct atl_addrmap zone_at; /* base -> index in zones */
static uint64_t version;
static uint64_t zones_lo = UINT64_MAX, zones_hi; /* read without the lock */
void atl_rz_zone_add(const struct zone *z)
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

/* O(1): the last zone moves into the hole. */
int atl_rz_zone_remove(CUdeviceptr base, int freed, struct zone *out)
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

/* Its base may be another allocation's by now: seq's zone only. */
void atl_rz_zone_set_watched(CUdeviceptr base, uint64_t seq, int watched)
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
 * still that allocation's: atl_rz_zone_remove moves zones about, and numbers are
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
             zones[i].seq == s)) {
            zones[i].unchecked = seq;
            zones[i].why |= UNCHECKED_KERNEL;
        }
    }
    pthread_mutex_unlock(&zones_lock);
}

/* Launch mode, the zones a launch reaches (r: reach_of's copies): with `why` (UNCHECKED_*),
 * the launch has no check of its own and they are marked as zones_mark_unchecked does;
 * without, the launch's check covers them: each copy keeps the unchecked launch only where
 * one came after the zone's last launch check (else 0: the check's finding is this launch's),
 * and the zone's last check is now this one. */
static void zones_mark(struct reach *r, int n, uint64_t seq, unsigned why)
{
    pthread_mutex_lock(&zones_lock);
    for (int k = 0; k < n; k++) {
        size_t i;
        if (!atl_addrmap_get(&zone_at, r[k].z.base, &i) || zones[i].seq != r[k].z.seq) {
            r[k].z.unchecked = 0, r[k].z.why = 0; /* gone or replaced: not this zone's marks */
            continue;
        }
        struct zone *z = &zones[i];
        if (why) {
            z->unchecked = seq;
            z->why |= why;
            continue;
        }
        int since = z->unchecked > z->checked;
        r[k].z.unchecked = since ? z->unchecked : 0;
        r[k].z.why = since ? z->why : 0;
        z->checked = seq;
        z->why = 0;
    }
    pthread_mutex_unlock(&zones_lock);
}

/* Launch mode: a launch identical to one checked before (the same kernel, grid, block, shared
 * memory and parameter bytes, and the same allocations behind its pointers, none of them
 * freed) writes where that one did, unless what it writes depends on device memory (indices,
 * sizes read by the kernel). Its check is what makes launch mode cost about twice a tiny
 * kernel's time (one more kernel on the stream per launch), so such a launch is checked again
 * only at its 2nd, 4th, 8th, ... time (the first launch's check has been queued, not read:
 * an overrun it finds is still reported as that launch's); the others mark the zones they
 * reach, and a later check that finds them written lists those launches as suspects.
 * ATLAS_REDZONE_RECHECK=1 checks every launch. A table of recent launches, one slot per
 * key's hash, racy on purpose: two threads that miss each other's store check once more. */
#define SAME_SLOTS 4096
static struct {
    uint64_t key, n;
} same_memo[SAME_SLOTS];
static uint64_t same_total; /* launches left unchecked so (atomic) */

/* The launch's key, 0 when it must be checked anyway (a freed allocation, bytes not read). */
static uint64_t launch_key(const struct atl_launch *l, const struct reach *r, int n)
{
    const struct atl_krec *rec = l->rec;
    uint64_t h = atl_hash_mix(0x5a3e, (uintptr_t)l->func);
    for (int k = 0; k < 3; k++) {
        h = atl_hash_mix(h, (uint64_t)l->grid[k] << 32 | l->block[k]);
        h = atl_hash_mix(h, l->cluster[k]);
    }
    h = atl_hash_mix(h, l->shmem);
    if (l->params) {
        for (unsigned i = 0; i < rec->nparams; i++) {
            if (!l->params[i])
                return 0;
            h = atl_hash_bytes(h, l->params[i], rec->size[i]);
        }
    } else if (l->packed) {
        h = atl_hash_bytes(h, l->packed, l->packed_size);
    } else {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (r[i].z.freed)
            return 0; /* a write after free to look for: every time */
        h = atl_hash_mix(atl_hash_mix(h, r[i].z.base), r[i].z.seq);
    }
    return h | 1;
}

/* 1: leave this launch unchecked (an identical one was checked, and this is not its 2nd,
 * 4th, 8th, ... time). */
static int same_launch(const struct atl_launch *l, const struct reach *r, int n)
{
    uint64_t key = opt.recheck ? 0 : launch_key(l, r, n);
    if (!key)
        return 0;
    size_t i = (key >> 20) & (SAME_SLOTS - 1);
    if (__atomic_load_n(&same_memo[i].key, __ATOMIC_RELAXED) != key) {
        __atomic_store_n(&same_memo[i].n, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&same_memo[i].key, key, __ATOMIC_RELAXED);
        return 0;
    }
    uint64_t k = __atomic_add_fetch(&same_memo[i].n, 1, __ATOMIC_RELAXED);
    if ((k & (k - 1)) == 0)
        return 0;
    __atomic_add_fetch(&same_total, 1, __ATOMIC_RELAXED);
    return 1;
}

int atl_rz_zones_copy(int same, int freed, size_t chunk, struct zone **buf, size_t *cap, size_t *n,
                      size_t *entries, uint64_t *ver)
{
    pthread_mutex_lock(&zones_lock);
    if (same && version == *ver) {
        pthread_mutex_unlock(&zones_lock);
        return 1;
    }
    if (nzones > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < nzones)
            c *= 2;
        struct zone *b = realloc(*buf, c * sizeof *b);
        if (!b) {
            pthread_mutex_unlock(&zones_lock);
            atl_log_once_oom("the red-zone scan");
            return -1;
        }
        *buf = b;
        *cap = c;
    }
    size_t k = 0, e = 0;
    for (size_t i = 0; i < nzones; i++)
        if (zones[i].watched && (freed || !zones[i].freed)) {
            (*buf)[k++] = zones[i];
            e += zones[i].len ? (zones[i].len + chunk - 1) / chunk : 1;
        }
    *n = k;
    *entries = e;
    *ver = version;
    pthread_mutex_unlock(&zones_lock);
    return 0;
}

void atl_rz_zones_forget(void)
{
    if (atl_exit_lock(&zones_lock, "the red-zone check at exit") == 0) {
        nzones = 0;
        atl_addrmap_clear(&zone_at);
        version++;
        pthread_mutex_unlock(&zones_lock);
    }
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

int atl_rz_words_reach(uint64_t seq, uint64_t lo, uint64_t hi, unsigned *arg, unsigned *off)
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
#define ATL_STR_(x) #x
#define ATL_STR(x) ATL_STR_(x)
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

/* ---- events ---------------------------------------------------------------------- */

unsigned atl_redzone_init(void)
{
    opt.pad = (size_t)atl_cfg.redzone;
    opt.fill = (unsigned char)atl_cfg.redzone_fill;
    opt.mode = (int)atl_cfg.redzone_check;
    opt.min_idx = atl_cfg.redzone_min_idx;
    opt.qmax = (size_t)atl_cfg.redzone_quarantine_mb << 20;
    opt.recheck = (int)atl_cfg.redzone_recheck;
    /* A quarantine moves every allocation to a new address (the freed ones
     * are not handed out again for a while), and the step trace compares
     * the pointers each step passes: with the trace on it has to be asked
     * for by name. */
    int qi = atl_config_find("ATLAS_REDZONE_QUARANTINE_MB");
    if (opt.pad && opt.qmax && (atl_cfg.trace || atl_cfg.trace_file || atl_cfg.chrome_trace) &&
        !(qi >= 0 && atl_cfg.set[qi])) {
        opt.qmax = 0;
        char qname[64];
        atl_log(ATL_INFO,
                "redzone: no quarantine with the step trace on (it would give every step's "
                "buffers new addresses); %s sets one",
                atl_hint_name("ATLAS_REDZONE_QUARANTINE_MB", qname, sizeof qname));
    }
    opt.active = opt.pad > 0;
    if (opt.active)
        atl_ledger_on = 1;
    if (opt.pad)
        atl_ksel_init();
    if (opt.pad && *atl_pools_routed())
        atl_log(ATL_INFO, "redzone: framework pools routed to one driver allocation per tensor: %s",
                atl_pools_routed());
    return atl_redzone_events();
}

unsigned atl_redzone_events(void)
{
    if (!opt.active)
        return 0;
    unsigned on = ATL_ON_ALLOC | ATL_ON_CTX;
    /* Syncs: the queued checks' verdicts are read there in every mode.
     * Launches: launch mode checks after them; every mode keeps their
     * parameter words, which name the suspects of an overrun found later. */
    if (opt.pad)
        on |= ATL_ON_CAPTURE | ATL_ON_SYNC | ATL_ON_LAUNCH;
    return on;
}

void atl_redzone_alloc_pre(struct atl_alloc *a)
{
    if (!opt.pad || a->seq < opt.min_idx || a->bytes == 0)
        return;
    if (a->kind == ATL_ALLOC_PITCH) {
        /* the pitch is only known afterwards, but it is at least the width:
         * this many extra rows make a tail of at least `pad` bytes */
        if (!a->width || !a->height)
            return;
        size_t rows = (opt.pad + a->width - 1) / a->width;
        if (a->height + rows < a->height)
            return;
        a->padded_height = a->height + rows;
        return;
    }
    if (a->bytes + opt.pad < a->bytes)
        return;
    a->padded = a->bytes + opt.pad;
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
    if (!opt.active || r != CUDA_SUCCESS || !a->dptr)
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
        pr = atl_drv.cuMemsetD8Async ? atl_drv.cuMemsetD8Async(z.start, opt.fill, z.len, a->stream)
                                     : CUDA_ERROR_NOT_SUPPORTED;
    } else {
        pr = atl_drv.cuMemsetD8_v2 ? atl_own_result(atl_drv.cuMemsetD8_v2(z.start, opt.fill, z.len))
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
    atl_rz_rel_birth(z.base, z.start, z.start + z.len);
    atl_rz_zone_add(&z);
    __atomic_add_fetch(&guarded_total, 1, __ATOMIC_RELAXED);
    atl_log(ATL_INFO, "redzone: alloc#%llu bytes=%zu ptr=0x%llx", (unsigned long long)z.seq,
            z.bytes, (unsigned long long)z.base);
    atl_rz_checks_early();
    return 1;
}

/* A launch whose parameters point into a free held back: the batch is
 * released (its poison queued) before the launch is, so that a write after
 * that free by this launch lands in the poison; on the legacy stream the
 * poison runs first. */
static void held_reached(const struct atl_launch *l)
{
    struct lword w[WORDS_MAX];
    unsigned flags, n = launch_words(l, w, &flags);
    atl_rz_held_reached(w, n);
}

/* Launches in flight in launch mode: see atl_rz_launches_unchecked. */
static unsigned unchecked; /* atomic */

unsigned atl_rz_launches_unchecked(void)
{
    return __atomic_load_n(&unchecked, __ATOMIC_ACQUIRE);
}

void atl_redzone_launch_pre(const struct atl_launch *l)
{
    if (!opt.pad)
        return;
    if (opt.qmax && __atomic_load_n(atl_rz_held_n, __ATOMIC_RELAXED))
        held_reached(l);
    if (opt.mode == CHECK_LAUNCH)
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
    if (n > 0 && same_launch(l, reach, n)) {
        zones_mark(reach, n, l->seq, UNCHECKED_SAME);
    } else if (n > 0) {
        zones_mark(reach, n, l->seq, 0);
        atl_rz_launch_check(l, reach, n);
    } else if (n < 0) {
        /* what it reaches cannot be told: check every zone, and wait */
        atl_rz_scan_whole(l, why);
    }
    if (reach != small)
        free(reach);
}

void atl_redzone_launch_post(const struct atl_launch *l, CUresult r)
{
    if (!opt.pad)
        return;
    struct lword w[WORDS_MAX];
    unsigned flags;
    unsigned nw = launch_words(l, w, &flags);
    int capturing = r == CUDA_SUCCESS && l->cap;
    /* a launch that failed, or went into a graph, did not run: the graph's
     * launch is the suspect */
    wl_put(l->seq, w, nw, flags | (r != CUDA_SUCCESS || capturing ? WL_NOTRUN : 0));
    if (opt.mode != CHECK_LAUNCH)
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
    if (!opt.pad || opt.mode != CHECK_LAUNCH || r != CUDA_SUCCESS || g->cap)
        return;
    atl_rz_scan_all(atl_hook_names[g->hook], 0, 0);
}

void atl_redzone_sync_pre(const struct atl_sync *s)
{
    (void)s;
    if (opt.pad)
        atl_rz_held_release(); /* before the wait: the sync's verdicts include them */
}

void atl_redzone_capture_pre(const struct atl_capture *c)
{
    if (opt.pad && c->begin)
        atl_rz_held_release(); /* afterwards the legacy stream takes no work */
}

void atl_redzone_sync_post(const struct atl_sync *s, CUresult r)
{
    if (!opt.pad || r != CUDA_SUCCESS)
        return;
    if (opt.mode != CHECK_FREE) {
        /* the backstop: every zone, for what no launch's check saw (a
         * pointer the kernel read from device memory) */
        atl_rz_scan_all(atl_hook_names[s->hook], opt.mode == CHECK_LAUNCH, 0);
    } else {
        /* the program waited: the checks queued before are likely done */
        atl_rz_poll();
    }
}

int atl_redzone_poison(uint64_t lo, uint64_t hi)
{
    if (!opt.pad)
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
        if (atl_drv.cuMemsetD8_v2(copy[i].start, opt.fill, copy[i].len) == CUDA_SUCCESS) {
            atl_rz_zone_set_watched(copy[i].base, copy[i].seq, 1);
            atl_rz_lock();
            atl_rz_report_rearm(copy[i].seq);
            atl_rz_unlock();
            n++;
        }
    }
    free(copy);
    return n;
}

void atl_rz_zone_counts(struct atl_rz_counts *c)
{
    c->guarded = __atomic_load_n(&guarded_total, __ATOMIC_RELAXED);
    c->unpadded = __atomic_load_n(&unpadded_total, __ATOMIC_RELAXED);
    c->torch_pool = __atomic_load_n(&torch_pool, __ATOMIC_RELAXED);
    c->same = __atomic_load_n(&same_total, __ATOMIC_RELAXED);
}
