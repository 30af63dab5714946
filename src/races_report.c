/*
 * Races between streams (ATLAS_RACES): the reports (src/races_internal.h says how the
 * detector is cut; docs/races.md).
 *
 * This file owns what is printed: how many races were printed or held back (RC_PEND a call,
 * RC_PRINT_MAX in all), a race's lines (its allocation, both sides, the missing edge and its
 * fix) written through the findings sink after the lock, the missing edge said last, and
 * the summary at exit.
 */
#include "races_internal.h"

#include "hint.h"
#include "log.h"
#include "summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Races printed, or held for printing by an op not yet closed (atomic: an op's report is made
 * after the lock, and gives back what the findings sink did not print); races this file had
 * no room to print (RC_PEND, RC_PRINT_MAX) */
static uint64_t printed, held;

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
                             .stack = p->site_x.n ? &p->site_x : NULL,
                             .stack2 = p->site_e.n ? &p->site_e : NULL};
}

struct rpend *atl_rrep_place(struct rop *op, int sure)
{
    int room = op->npend < RC_PEND && __atomic_load_n(&printed, __ATOMIC_RELAXED) < RC_PRINT_MAX;
    if (!room) {
        __atomic_add_fetch(&held, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    __atomic_add_fetch(&printed, 1, __ATOMIC_RELAXED); /* the place, taken now */
    struct rpend *p = &op->pend[op->npend++];
    memset(p, 0, sizeof *p);
    p->sure = sure;
    return p;
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
            snprintf(what, sizeof what, "kernel=%s parameter %u (%s) at +%llu", kn, a->param, mode,
                     (unsigned long long)a->anchor);
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

/* The missing edge printed last (atl_rrep_print), to tell the same again in a few words. */
static pthread_mutex_t edge_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_edge[1400];

/* After the lock: what the op found, through the findings sink, printed where it says so. */
void atl_rrep_print(struct rop *op)
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
                __atomic_sub_fetch(&printed, 1, __ATOMIC_RELAXED);
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
    if (atl_exit_lock(&atl_rc.mu, "the race summary") != 0)
        return;
    uint64_t watched, wseen, wunseen, wait_us;
    atl_rk_exit(&watched, &wseen, &wunseen, &wait_us);
    struct racc_counts c;
    atl_racc_counts(&c);
    uint64_t races = c.races, rd = c.races_distinct, poss = c.possible, pd = c.possible_distinct,
             acc = c.accesses, forgot = c.forgotten, dropped = c.dropped;
    unsigned streams = atl_rhb_streams();
    uint64_t unprinted = __atomic_load_n(&held, __ATOMIC_RELAXED);
    int dead = atl_rc.dead;
    pthread_mutex_unlock(&atl_rc.mu);
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
            atl_rc.mode > 1 ? "listed above" : lists, atl_summary_number(acc, n5),
            acc == 1 ? "" : "es", atl_summary_number(streams, n6), streams == 1 ? "" : "s",
            atl_summary_number(watched, n7), watched == 1 ? "" : "es",
            watched == 1 ? "its kernel's" : "their kernels'",
            dead ? " (stopped early: out of memory)" : "");
    if (watched)
        atl_log(ATL_INFO,
                "races: %s launch%s watched for what their kernels write: %s parameter%s "
                "seen writing, %s not in %d launches each (those stay \"may write\"); %llu ms "
                "spent waiting for their copies",
                atl_summary_number(watched, n1), watched == 1 ? "" : "es",
                atl_summary_number(wseen, n2), wseen == 1 ? "" : "s",
                atl_summary_number(wunseen, n3), RC_WATCH_TRIES,
                (unsigned long long)(wait_us / 1000));
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
