/*
 * Red zones' reports (src/redzone.c says what the feature finds): an
 * overrun or a write after free found by a check (src/redzone_check.c),
 * once per allocation, through the findings sink; the launches that could
 * have made it (the suspects) when no launch's own check found it; the
 * re-run hints; and the exit's summary.
 */
#define _GNU_SOURCE
#include "redzone.h"

#include "addrmap.h"
#include "driver.h"
#include "fault.h"
#include "findings.h"
#include "hint.h"
#include "kernels.h"
#include "kselect.h"
#include "ledger.h"
#include "log.h"
#include "redzone_internal.h"
#include "services.h"
#include "summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- recent launches ----------------------------------------------------------
 * Outside a launch's own check an overrun is found later than it happened;
 * the launches since the last clean full check are the suspects. They are
 * the launch history's answer (src/fault.h: the launches since number N),
 * whose ring every launch writes anyway; the launch words' log rules out
 * those that could not have reached the damaged allocation. */
#define SUSPECTS 16

/* The launch after which zone z's suspects are looked for. */
static uint64_t clean_from(const struct zone *z)
{
    return atl_rz_clean_upto(z->freed);
}

static void launch_line(const char *lead, uint64_t seq, void *func, const unsigned g[3],
                        const unsigned b[3], const char *tail)
{
    char name[256];
    atl_kernel_name(func, name, sizeof name);
    atl_log(ATL_ERROR, "redzone: %slaunch#%llu kernel=%s grid=(%u,%u,%u) block=(%u,%u,%u)%s", lead,
            (unsigned long long)seq, name, g[0], g[1], g[2], b[0], b[1], b[2], tail);
}

/* ---- reports ------------------------------------------------------------------ */
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
    int r = atl_rz_words_reach(e->seq, t->lo, t->hi, &arg, &off);
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

static void sus_freed(struct sus_tally *t, const struct qent *q)
{
    t->freed = 1;
    t->freed_upto = q->freed_upto;
    t->free_sync = q->sync;
    t->free_stream = q->stream;
}

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
    snprintf(size, sizeof size, "%zu", atl_rz_opt->pad);
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
    if (atl_rz_opt->mode == CHECK_LAUNCH && !atl_ksel_on())
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
        if (atl_rz_opt->mode != CHECK_LAUNCH)
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

/* atlas_redzone_poison() re-arms a zone reported. */
int atl_rz_report(const struct zone *z, const struct atl_stack *known_site, unsigned bad,
                  size_t first, size_t last, const struct finder *how)
{
    size_t was;
    if (atl_addrmap_get(&reported, z->seq, &was))
        return 0;
    atl_addrmap_put(&reported, z->seq, 1);
    /* outside a launch's own check: the launches that reach it */
    struct sus_tally *t = NULL;
    uint64_t lost = 0;
    const struct qent *q = !z->freed ? NULL : how->q ? how->q : atl_rz_quar_find(z->base, z->seq);
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
            /* launches without a check of their own reached it too (kernels ATLAS_KERNEL
             * leaves out, or launches identical to one checked): the launches that reach
             * it, not a culprit */
            char lead[512], kvar[64], rvar[64], why[300] = "";
            struct finder h = *how;
            h.upto = how->seq;
            if (z->why & UNCHECKED_KERNEL)
                snprintf(why, sizeof why, "launches of kernels %s leaves out",
                         atl_hint_name("ATLAS_KERNEL", kvar, sizeof kvar));
            if (z->why & UNCHECKED_SAME)
                snprintf(why + strlen(why), sizeof why - strlen(why),
                         "%slaunches identical to one checked before (%s checks every launch)",
                         *why ? ", and " : "",
                         atl_hint_setting("ATLAS_REDZONE_RECHECK", "1", rvar, sizeof rvar));
            snprintf(lead, sizeof lead,
                     "redzone: alloc#%llu found by the check after launch#%llu (%s reached it "
                     "too, unchecked)",
                     (unsigned long long)z->seq, (unsigned long long)how->seq,
                     *why ? why : "launches without a check of their own");
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
            if ((z->why & UNCHECKED_SAME) && z->unchecked > z->checked) {
                char rvar[64];
                atl_log(ATL_ERROR,
                        "redzone: launches identical to one checked before reached alloc#%llu "
                        "without a check of their own, so launch mode cannot name the one that "
                        "wrote it; %s checks every launch",
                        (unsigned long long)z->seq,
                        atl_hint_setting("ATLAS_REDZONE_RECHECK", "1", rvar, sizeof rvar));
            }
        }
        atl_find_close(&f);
    }
    free(t);
    atl_rz_zone_set_watched(z->base, z->seq, 0);
    return 1;
}

void atl_rz_report_rearm(uint64_t seq)
{
    atl_addrmap_del(&reported, seq);
}

/* ---- the exit's summary --------------------------------------------------------- */

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
    if (!atl_rz_opt->active)
        return;
    if (atl_rz_opt->pad) {
        /* in the exiting thread's context (read without a lock: a real
         * driver's and the fake's cuCtxGetCurrent take none) */
        static CUcontext ctx;
        if (atl_drv.cuCtxGetCurrent && atl_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
            ctx = NULL;
        atl_exit_bounded(exit_scan, &ctx, "the red-zone check at exit (the driver did not answer)");
        /* each file's counts, after the last check */
        struct atl_rz_counts c;
        atl_rz_zone_counts(&c);
        atl_rz_check_counts(&c);
        atl_rz_quar_counts(&c);
        if (c.skipped)
            atl_log(ATL_INFO, "redzone: %llu check%s skipped while a stream capture was active",
                    (unsigned long long)c.skipped, c.skipped == 1 ? " was" : "s were");
        char h1[32], h2[32];
        if (c.same) {
            char rvar[64];
            atl_log(ATL_INFO,
                    "redzone: %s launch%s identical to one checked before %s not checked after "
                    "(checked again at the 2nd, 4th, 8th, ... time; %s checks every launch)",
                    atl_summary_number(c.same, h1), c.same == 1 ? "" : "es",
                    c.same == 1 ? "was" : "were",
                    atl_hint_setting("ATLAS_REDZONE_RECHECK", "1", rvar, sizeof rvar));
        }
        if (c.unpadded)
            atl_log(ATL_WARN,
                    "redzone: %llu allocation%s made without a red zone (it fit in the "
                    "device's memory only so): not guarded",
                    (unsigned long long)c.unpadded, c.unpadded == 1 ? "" : "s");
        if (c.births)
            atl_log(ATL_INFO,
                    "redzone: %s of %s guarded allocation%s had %s red zone in memory the "
                    "quarantine had released poisoned (a birth's poison that a set of verified "
                    "spans could skip, at most)%s",
                    atl_summary_number(c.births_in_poison, h1), atl_summary_number(c.births, h2),
                    c.births == 1 ? "" : "s", c.births == 1 ? "its" : "their",
                    c.rel_full ? "; the set was full, some spans not kept" : "");
        if (c.held_frees)
            atl_log(ATL_INFO,
                    "redzone: %s free%s on the legacy stream %s held back and checked in %s "
                    "batch%s",
                    atl_summary_number(c.held_frees, h1), c.held_frees == 1 ? "" : "s",
                    c.held_frees == 1 ? "was" : "were", atl_summary_number(c.held_batches, h2),
                    c.held_batches == 1 ? "" : "es");
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
        if (c.quarantined)
            snprintf(freed + used, sizeof freed - used,
                     "; %s write%s after free found in %s freed allocation%s kept poisoned",
                     atl_summary_number(after_free, n1), after_free == 1 ? "" : "s",
                     atl_summary_number(c.quarantined, n2), c.quarantined == 1 ? "" : "s");
        atl_log(ATL_WARN, "redzone: %s overrun%s found in %s guarded allocation%s (%s check%s)%s%s",
                atl_summary_number(overruns, n1), overruns == 1 ? "" : "s",
                atl_summary_number(c.guarded, n2), c.guarded == 1 ? "" : "s",
                atl_summary_number(c.checks, n3), c.checks == 1 ? "" : "s", freed,
                c.torch_pool
                    ? "; PyTorch's caching allocator: the tensors inside its segments not guarded"
                    : "");
    }
}

int atl_redzone_counts(uint64_t *found, uint64_t *guarded, uint64_t *freed_written,
                       uint64_t *freed_kept)
{
    /* the findings sink's: suppressed ones are not among them */
    *found = atl_findings_count(ATL_FINDING_OVERRUN);
    struct atl_rz_counts c;
    atl_rz_zone_counts(&c);
    atl_rz_quar_counts(&c);
    *guarded = c.guarded;
    *freed_written = atl_findings_count(ATL_FINDING_AFTER_FREE);
    *freed_kept = c.quarantined;
    return atl_rz_opt->pad != 0;
}
