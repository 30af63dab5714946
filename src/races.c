/*
 * Races between streams (ATLAS_RACES): see src/races.h and docs/races.md; how the detector's
 * files are cut, and what they share: src/races_internal.h.
 *
 * This file owns the setting, the one lock every part of the detector runs under and whether
 * checking stopped (out of memory); an op's opening (its call site's first step, the lock,
 * its stream); and the call sites: interned stacks, named by ids that reports turn back into
 * frames.
 */
#include "races_internal.h"

#include "config.h"
#include "kernels.h"
#include "log.h"

#include <stdlib.h>

#define RC_SITE_DEPTH 8    /* frames of a call site (the first outside CUDA's libraries) */
#define RC_MAX_SITES 16384 /* call sites kept; past it the oldest are forgotten ("?") */

/* A launch's caller and the site it names. */
#define RC_CALLERS 256
struct rcaller {
    void *pc;
    uint32_t site;
};

struct atl_rc atl_rc = {.mu = PTHREAD_MUTEX_INITIALIZER};

static struct {
    struct rmap sitemap;
    struct atl_stack *sites;
    uint64_t *site_hash; /* the stack hash of each slot of sites */
    uint32_t *site_gen;  /* each slot's generation: an id names (slot, generation) */
    unsigned nsites, capsites, site_next; /* site_next: the slot forgotten next, once full */
    int said_sites;
    struct rcaller callers[RC_CALLERS];
} rs;

void atl_rc_oom(void)
{
    if (!atl_rc.dead)
        atl_log_once_oom("the race detector (checking stopped)");
    atl_rc.dead = 1;
}

unsigned atl_races_init(void)
{
    atl_rc.mode = (int)atl_cfg.races;
    if (!atl_rc.mode)
        return 0;
    atl_ledger_on = 1; /* pointers are resolved to allocations */
    /* the demangler is looked up (dlsym), and the unwinder and stack.c set
     * up (dladdr), now, not first under the lock */
    free(atl_demangle_dup("_Z1fv"));
    struct atl_stack warm;
    atl_stack_capture_n(&warm, 1);
    if (atl_rhb_init() != 0) {
        atl_rc.dead = 1;
        return 0;
    }
    atl_krec_set_races_free(atl_rk_free); /* a kernel's view goes with its record */
    return ATL_ON_LAUNCH | ATL_ON_ALLOC | ATL_ON_COPY | ATL_ON_COPY_DTOH | ATL_ON_MEMSET |
           ATL_ON_SYNC | ATL_ON_CAPTURE | ATL_ON_STREAM;
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
    return ((rs.site_gen[slot] << RC_SITE_BITS) | slot) + 1;
}

static uint32_t site_intern(const struct atl_stack *s)
{
    if (!s->n)
        return 0;
    uint64_t h = atl_stack_hash(s);
    void *p;
    if (rmap_get(&rs.sitemap, h, &p))
        return (uint32_t)(uintptr_t)p;
    unsigned slot;
    if (rs.nsites < RC_MAX_SITES) {
        if (rs.nsites == rs.capsites) {
            unsigned cap = rs.capsites ? rs.capsites * 2 : 64;
            struct atl_stack *n = realloc(rs.sites, cap * sizeof *n);
            if (n)
                rs.sites = n;
            uint64_t *hs = n ? realloc(rs.site_hash, cap * sizeof *hs) : NULL;
            if (hs)
                rs.site_hash = hs;
            uint32_t *g = hs ? realloc(rs.site_gen, cap * sizeof *g) : NULL;
            if (!g)
                return 0;
            rs.site_gen = g;
            rs.capsites = cap;
        }
        slot = rs.nsites++;
        rs.site_gen[slot] = 0;
    } else {
        if (!rs.said_sites++)
            atl_log(ATL_INFO,
                    "races: more than %d call sites: the oldest are forgotten from now on (an "
                    "access made there long ago reads \"at ?\")",
                    RC_MAX_SITES);
        slot = rs.site_next;
        rs.site_next = (rs.site_next + 1) % RC_MAX_SITES;
        rmap_del(&rs.sitemap, rs.site_hash[slot]);
        rs.site_gen[slot] = (rs.site_gen[slot] + 1) & ((1u << (31 - RC_SITE_BITS)) - 1);
    }
    rs.sites[slot] = *s;
    rs.site_hash[slot] = h;
    uint32_t id = site_id(slot);
    if (rmap_put(&rs.sitemap, h, (void *)(uintptr_t)id) != 0)
        return 0;
    return id;
}

/* 1 when id still names the site it was given for (its slot not forgotten since). */
static int site_live(uint32_t id)
{
    unsigned slot = id ? (id - 1) & (RC_MAX_SITES - 1) : 0;
    return id && slot < rs.nsites && site_id(slot) == id;
}

void atl_rsite_copy(uint32_t id, struct atl_stack *out)
{
    unsigned slot = id ? (id - 1) & (RC_MAX_SITES - 1) : 0;
    if (id && slot < rs.nsites && site_id(slot) == id)
        *out = rs.sites[slot];
    else
        out->n = 0;
}
/* Whether a launch's caller is a frame a report skips (a CUDA library's,
 * as under PyTorch, or ours): then the call site is found by unwinding.
 * Found once per caller (dladdr) and kept in a table read without the lock,
 * one word an entry: the address shifted left, the answer in bit 0. */
#define RC_VERDICTS 1024
static uint64_t verdicts[RC_VERDICTS];

int atl_rsite_skipped(void *caller)
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
    struct rcaller *c = &rs.callers[((uintptr_t)caller >> 2) % RC_CALLERS];
    if (c->pc != caller || !site_live(c->site)) {
        struct atl_stack one = {.n = 1, .pc = {caller}};
        c->pc = caller;
        c->site = site_intern(&one);
    }
    return c->site;
}

/* Under the lock, when the op is checked: its caller's frame, or the stack unwound
 * (src/races_internal.h, struct rsite). */
uint32_t atl_rsite_get(const struct rsite *s)
{
    if (!s->unwind)
        return caller_site(s->caller);
    struct atl_stack stk;
    site_capture(&stk);
    return site_intern(&stk);
}

int atl_rc_op_open(struct rop *op, struct rpend *pend, int what, int hook, CUstream s, void *caller,
                   struct rsite *where)
{
    site_pre(where, caller);
    op_none(op);
    if (lock() != 0)
        return -1;
    if (atl_rk_nwp)
        atl_rk_poll(0);
    op->u = stream_slot(s, hook);
    op->what = what, op->hook = hook;
    op->n = 0;
    op->accp = op->acc;
    op->freed = NULL;
    op->pend = pend;
    return 0;
}
