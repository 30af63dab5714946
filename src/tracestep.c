/*
 * The step trace's steps and step ends (see tracestep.h). A step end
 * takes the ops of the threads' buffers (harvest), orders them by stream,
 * names their pointers through the ledger, compares the step with the
 * previous one of its kind (name, thread, stream) and writes the JSON lines
 * and the Chrome trace. A step byte-identical to the previous one of its
 * kind costs two memcmps (same_as), or, when the thread owns its ops and
 * nothing else is written, no process-wide lock at all (fast_step).
 *
 * A thread whose step came whole from its own buffer records its next step
 * against the step kept (tracebuf.h): only the ops that differ are
 * kept, and the step end (sparse_step) compares those with the same places
 * of the kept step and writes them over it, so the trace holds one copy of a
 * step that repeats its predecessor but for a few values, not two.
 */
#define _GNU_SOURCE /* pthread_getname_np, program_invocation_short_name */
#include "tracestep.h"

#include "chrome.h"
#include "config.h"
#include "findings.h"
#include "hint.h"
#include "hostmap.h"
#include "kernels.h"
#include "ledger.h"
#include "log.h"
#include "services.h"
#include "stepseries.h"
#include "thread.h"
#include "tracebuf.h"
#include "tracediff.h"
#include "tracejson.h"

#include <errno.h> /* program_invocation_short_name */
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ATLAS_STEP=capture: steps are stream captures (atl_tstep_init). */
static int captures;
/* Threads with a step open (nvtx and api modes), and the step the caller
 * keeps open (sync mode: always 1; capture mode: while a capture step is
 * open), so that the ops of threads without one are recorded meanwhile (lent
 * to the step that ends next). 0 after the exit summary. */
static int recording;
/* The exit summary is out: later markers are ignored. */
static int exited;
/* tracestep.h's read-only views of them */
extern const int atl_tstep_recording_v __attribute__((alias("recording")));
extern const int atl_tstep_done_v __attribute__((alias("exited")));

/* The thread's cold per-thread state: about 100 bytes that only a thread
 * ending or naming steps touches, in ordinary (dynamic) TLS. What every
 * traced launch reads (its buffer) is in the library's one per-thread struct
 * (src/thread.h, initial-exec TLS): that block is taken from every thread of
 * the program, traced or not, out of the small surplus glibc keeps for
 * libraries loaded later (NVTX injection dlopens us), so it holds only the
 * hot fields. One of the feature's two __thread structs (the other is NVTX's
 * depths, src/nvtx.c; tests/harness/test_layers.sh). */
static __thread struct {
    /* the thread's name, asked again every 256th step end (thread_label) */
    char label[24];
    unsigned label_age;
    /* NVTX and api steps: this thread's open step, whether one is open and
     * when it began (the Chrome export; sync mode: when its last step ended) */
    char step[64];
    int in_step;
    uint64_t begin_ns;
} tt;

static struct atl_ignore ignore_list;
static FILE *json;

static pthread_mutex_t step_mu = PTHREAD_MUTEX_INITIALIZER;
/* ATLAS_CHROME_TRACE: the enqueue times of the step being finished, in the
 * order of its ops, and when it began (under step_mu) */
static uint64_t *step_ts;
static size_t step_tscap;
static uint64_t step_count;
static struct atl_diff_stats stats;

/* Each kind of step (name, thread, stream) and the last step of each of its
 * shapes (src/stepseries.h): what the next step of the kind and shape is
 * compared with. At most MAX_NAMES kinds of ATL_KIND_SHAPES shapes keep a
 * step each. */
#define MAX_NAMES 256
static struct {
    int busy; /* a spin lock over nth and the kind's steps: taken after step_mu by a step
               * end, or alone by fast_step */
    uint64_t nth;
    char name[64], thread[24];
    uint64_t stream;
    struct atl_kind k;
} names[MAX_NAMES];
static struct atl_series series; /* under step_mu */
static int nnames;
static int where;   /* more than one thread or stream has steps: reports name them */
static int nowners; /* threads that have ended a step of their own (ever) */

static void log_line_cb(void *ctx, const char *text)
{
    (void)ctx;
    atl_log_line(text);
}

/* ---- differing steps as findings (src/findings.h) ----------------------------------- */

/* Under step_mu: the findings of the comparison being made, and the steps that differ only
 * as suppressed findings (not counted as differing by the summary line). */
static struct {
    unsigned found, suppressed;
} tally;
static uint64_t quiet_steps;

/* The differing step last printed, for the suppression entry after its lines
 * (ATLAS_GEN_SUPPRESSIONS), said by diff_told once they are. */
static struct {
    struct atl_find f;
    char kernel[160], mangled[512], step[64];
    int open;
} told;

/* A step found to differ (struct atl_diff_opts' found): through the findings sink, which says
 * whether its report is printed. A folded repeat is said by its run's line: never on its own. */
static int diff_found(void *ctx, const struct atl_diff_found *d)
{
    (void)ctx;
    struct atl_find f = {.kind = ATL_FINDING_DIFF,
                         .message = d->header,
                         .kernel = d->kernel,
                         .kernel_mangled = d->kernel_mangled,
                         .step = d->b->name,
                         .step_no = d->b->nth,
                         .no_print = d->folded};
    int print = atl_find_open(&f);
    tally.found++;
    tally.suppressed += f.suppressed;
    if (print && atl_cfg.gen_suppressions) {
        snprintf(told.kernel, sizeof told.kernel, "%s", d->kernel ? d->kernel : "");
        snprintf(told.mangled, sizeof told.mangled, "%s",
                 d->kernel_mangled ? d->kernel_mangled : "");
        snprintf(told.step, sizeof told.step, "%s", d->b->name);
        told.f = f;
        told.f.kernel = d->kernel ? told.kernel : NULL;
        told.f.kernel_mangled = d->kernel_mangled ? told.mangled : NULL;
        told.f.step = told.step;
        told.f.message = NULL;
        told.open = 1;
    }
    return print;
}

static void diff_told(void)
{
    if (told.open)
        atl_find_close(&told.f);
    told.open = 0;
}

/* The exit summary's lines: the step trace's own summary, said at warn (ATLAS_LOG_LEVEL=error,
 * atlas-trace -q, keeps the diffs, which are findings, and drops it) */
static void summary_line_cb(void *ctx, const char *text)
{
    (void)ctx;
    atl_log(ATL_WARN, "%s", text);
}

/* "another buffer", explained from the ledger: the buffer used now (its size
 * and site, and whether it was made after the reference step `a` ended),
 * and the one used before: still allocated (a pointer that really moved),
 * or freed (allocator churn: it replaces it), and where. */
static void explain(const struct atl_ann *was, uint64_t va, const struct atl_ann *now, uint64_t vb,
                    const struct atl_step *a, char *buf, size_t len)
{
    struct atl_alloc_rec r;
    struct atl_stack st;
    char site[256];
    size_t l = 0;
    buf[0] = '\0';
    if (atl_ledger_find((CUdeviceptr)(vb - now->off), &r) && r.seq == now->seq) {
        atl_stack_site(&r.site, site, sizeof site);
        l += atl_fmt(buf + l, len - l,
                     "alloc#%" PRIu64 " (%zu bytes, made %s step %" PRIu64 "%s%s)", now->seq,
                     r.bytes, a->seqmark && now->seq >= a->seqmark ? "after" : "by the end of",
                     a->index, site[0] ? " at " : "", site);
    }
    if (atl_ledger_find((CUdeviceptr)(va - was->off), &r) && r.seq == was->seq) {
        atl_fmt(buf + l, len - l, "%salloc#%" PRIu64 " still allocated", l ? "; " : "", was->seq);
    } else if (atl_ledger_freed(was->seq, &r, &st)) {
        atl_stack_site(&st, site, sizeof site);
        atl_fmt(buf + l, len - l, "%sreplaces alloc#%" PRIu64 " (%zu bytes), freed%s%s",
                l ? " " : "", was->seq, r.bytes, site[0] ? " at " : "", site);
    } else {
        atl_fmt(buf + l, len - l, "%salloc#%" PRIu64 " freed", l ? "; " : "", was->seq);
    }
}

/* Under step_mu and b's lock: a step with nothing yet takes b's arrays as
 * they are; b gets arrays back at the end of the step (give_back). */
static void take_over(struct atl_step *s, struct tbuf *b)
{
    s->ops = b->ops, s->nops = b->nrec, s->capops = b->cap;
    s->bytes = b->bytes, s->nbytes = b->nbytes, s->capbytes = b->capbytes;
    b->ops = NULL, b->cap = 0, b->bytes = NULL, b->capbytes = 0;
    atl_tbuf_held_note(b);
}

/* Under step_mu, at the end of a step end: the arrays of a step no longer
 * needed go back to the buffer of the thread ending it, if a step took that
 * buffer's arrays (so a steady loop allocates nothing per step), and are
 * freed otherwise. The trace then holds two step-sized copies (the step
 * being recorded and the last of its kind and shape), not three (a spare
 * pair of arrays was kept for whichever buffer came next); one, when the
 * thread records its next step against the step kept (record_against: the
 * arrays are freed instead). */
static void give_back(struct tbuf *me, struct atl_step *s)
{
    if (me && (s->ops || s->bytes) && atl_tbuf_lock_step(me) == 0) {
        if (!me->ops && !me->nops)
            me->ops = s->ops, me->cap = s->capops, s->ops = NULL;
        if (!me->bytes && !me->nbytes)
            me->bytes = s->bytes, me->capbytes = s->capbytes, s->bytes = NULL;
        atl_tbuf_held_note(me);
        atl_tbuf_unlock(me);
    }
    atl_step_free(s);
}

/* ---- the kernel records the steps' ops point to (src/kernels.h, Lifetime) ---- */

/* An op of a launch points to its kernel's view, which its record owns; a
 * module unloaded between two steps frees the record once nothing holds it.
 * Ops in the threads' buffers keep the pin of the threads that recorded them
 * (tbuf's krec_since); a step end takes that over (step_since) while it
 * works on their ops, until the step it keeps holds a reference to each of
 * its kernels' records, given back when the step goes. Written under step_mu,
 * read by the freeing thread (holders_low). */
static uint64_t step_since;

/* Under step_mu and b's lock, as a step end takes b's ops (or drops them):
 * their pin passes to the step end, and b keeps its own while ops remain. */
static void since_taken(struct tbuf *b)
{
    uint64_t v = b->krec_since;
    if (v && (!step_since || v < step_since))
        __atomic_store_n(&step_since, v, __ATOMIC_RELAXED);
    /* release: a freeing thread that reads 0 here reads step_since after it */
    if (!b->nops)
        __atomic_store_n(&b->krec_since, 0, __ATOMIC_RELEASE);
}

/* Under step_mu, at the end of a step end: its ops are kept (held) or gone. */
static void since_done(void)
{
    __atomic_store_n(&step_since, 0, __ATOMIC_RELEASE);
}

/* The oldest pin the buffers and the step end keep (0: none): for the
 * kernel records' freeing thread, which reads it after the threads' pins.
 * The buffers first, then the step end's: a step end that takes a buffer's
 * ops writes its own before it clears the buffer's. */
static uint64_t holders_low(void)
{
    uint64_t low = UINT64_MAX;
    for (struct tbuf *b = atl_tbuf_first(); b; b = atl_tbuf_next(b)) {
        uint64_t v = __atomic_load_n(&b->krec_since, __ATOMIC_ACQUIRE);
        if (v && v < low)
            low = v;
    }
    uint64_t v = __atomic_load_n(&atl_tbuf_capture()->krec_since, __ATOMIC_ACQUIRE);
    if (v && v < low)
        low = v;
    v = __atomic_load_n(&step_since, __ATOMIC_ACQUIRE);
    if (v && v < low)
        low = v;
    return low == UINT64_MAX ? 0 : low;
}

/* A kept step's references to its kernels' records: taken (hold) when it is
 * kept, given back when it goes; the same walk both times, so the same
 * records. Each kernel once for most steps: a small table of the views met
 * (a step of a few hundred ops names a few dozen kernels). */
static void hold_kernels(const struct atl_step *st, int hold)
{
    const struct atl_kfn *met[64] = {NULL};
    for (size_t i = 0; i < st->nops; i++) {
        if (st->ops[i].kind != ATL_OP_LAUNCH)
            continue;
        const struct atl_kfn *k = st->ops[i].u.k.kfn;
        size_t h = (size_t)(((uintptr_t)k * 0x9e3779b97f4a7c15ULL) >> 58);
        if (met[h] == k)
            continue;
        met[h] = k;
        if (hold)
            atl_krec_hold(atl_krec_of_view(k));
        else
            atl_krec_release(atl_krec_of_view(k));
    }
}

static size_t step_held(const struct atl_step *s)
{
    return s->capops * sizeof *s->ops + s->capbytes + s->capspans * sizeof *s->spans;
}

/* Under step_mu, at a step end: what the trace keeps between steps. */
static void kept_note(void)
{
    size_t n = step_tscap * sizeof *step_ts;
    for (int i = 0; i < nnames; i++)
        for (int j = 0; j < ATL_KIND_SHAPES; j++)
            n += step_held(&names[i].k.slot[j].step);
    for (int j = 0; j < ATL_SERIES_CAPTURES; j++)
        n += step_held(&series.caps[j].step);
    atl_tbuf_set_kept(n);
}

/* Under step_mu and the kind's lock, at the end of a step end: the kind's lock released, the
 * kept steps counted against the budget, and the step end's pin on the kernel records given
 * up. */
static void kind_done(int slot)
{
    atl_spin_unlock(&names[slot].busy);
    kept_note();
    since_done();
}

/* Under step_mu and b's lock: b's ops after those already in s, their byte
 * offsets moved by the bytes already there. Returns -1 when out of memory. */
static int append(struct atl_step *s, const struct tbuf *b)
{
    size_t need = s->nops + b->nops, needb = s->nbytes + b->nbytes;
    if (atl_grow((void **)&s->ops, &s->capops, need, sizeof *s->ops, 4096) ||
        atl_grow((void **)&s->bytes, &s->capbytes, needb, 1, 65536))
        return -1;
    memcpy(s->ops + s->nops, b->ops, b->nops * sizeof *b->ops);
    if (b->nbytes)
        memcpy(s->bytes + s->nbytes, b->bytes, b->nbytes);
    for (size_t i = s->nops; i < need; i++)
        if (s->ops[i].kind == ATL_OP_LAUNCH)
            s->ops[i].u.k.bytes += s->nbytes;
    s->nops = need, s->nbytes = needb;
    return 0;
}

/* Under step_mu and b's lock: b's ops on `stream` move to the end of s (with
 * their Chrome times), the others stay in b, packed to its front in their
 * order. Returns -1 when out of memory (b is then left as it was). */
static int take_stream(struct atl_step *s, struct tbuf *b, uint64_t stream)
{
    size_t n = 0, nb = 0;
    for (size_t i = 0; i < b->nops; i++)
        if (b->ops[i].stream == stream) {
            n++;
            nb += b->ops[i].kind == ATL_OP_LAUNCH ? b->ops[i].u.k.kfn->total : 0;
        }
    if (n == 0)
        return 0;
    if (atl_grow((void **)&s->ops, &s->capops, s->nops + n, sizeof *s->ops, 4096) ||
        atl_grow((void **)&s->bytes, &s->capbytes, s->nbytes + nb, 1, 65536) ||
        (atl_chrome_on && b->ts &&
         atl_grow((void **)&step_ts, &step_tscap, s->nops + n, sizeof *step_ts, 4096)))
        return -1;
    size_t keep = 0, keepb = 0;
    for (size_t i = 0; i < b->nops; i++) {
        struct atl_op o = b->ops[i];
        size_t len = o.kind == ATL_OP_LAUNCH ? o.u.k.kfn->total : 0;
        const uint8_t *from = len ? b->bytes + o.u.k.bytes : NULL;
        if (o.stream == stream) {
            if (atl_chrome_on && b->ts)
                step_ts[s->nops] = b->ts[i];
            if (len) {
                memcpy(s->bytes + s->nbytes, from, len);
                o.u.k.bytes = s->nbytes;
                s->nbytes += len;
            }
            s->ops[s->nops++] = o;
        } else {
            if (len) {
                memmove(b->bytes + keepb, from, len); /* keepb <= the offset: moves down */
                o.u.k.bytes = keepb;
                keepb += len;
            }
            if (atl_chrome_on && b->ts)
                b->ts[keep] = b->ts[i];
            b->ops[keep++] = o;
        }
    }
    __atomic_store_n(&b->nops, keep, __ATOMIC_RELAXED);
    b->nrec = keep, b->nbytes = keepb;
    return 0;
}

/* Ops must not pile up where no step will take them: a thread that ended
 * no step of its own during this many step ends lends its ops again (it
 * synchronised once, then left that to others), and lent ops that no step
 * took for this long (on a stream only other streams' syncs follow) are
 * dropped. */
#define STALE_STEPS 4096

/* Whether a thread whose last step end of its own was `last_own` has gone
 * stale by step `now`. The fast path (fast_step) writes last_own without
 * step_mu, from a step count read after the caller's: last_own may be ahead
 * of `now`, and an unsigned difference would wrap to "stale" and lend a
 * syncing thread's ops to another thread's step. */
static inline int stale_owner(uint64_t now, uint64_t last_own)
{
    return now > last_own && now - last_own > STALE_STEPS;
}

/* Under step_mu: the step being harvested came whole from one buffer whose
 * ops share one stream (harvest), and that buffer. */
static int harvest_one_stream;
static struct tbuf *harvest_first;

/* Under step_mu: moves the ops that `take` says into s (NULL: drops them);
 * a buffer taken whole is reset for the next step. `me` is the buffer of the
 * thread ending the step (NULL: none). */
static void harvest(struct atl_step *s, struct tbuf *me, enum atl_take take, uint64_t stream)
{
    /* fast_step counts its steps without step_mu: read once, atomically */
    const uint64_t steps_now = __atomic_load_n(&step_count, __ATOMIC_RELAXED);
    harvest_one_stream = 0;
    harvest_first = NULL;
    /* entries are only ever appended (release), so the list can be walked
     * without its lock */
    for (struct tbuf *b = atl_tbuf_first(); b; b = atl_tbuf_next(b)) {
        if (b != me && !__atomic_load_n(&b->open, __ATOMIC_RELAXED) &&
            stale_owner(steps_now, __atomic_load_n(&b->last_own, __ATOMIC_RELAXED)))
            __atomic_store_n(&b->owner, 0, __ATOMIC_RELAXED);
        int lent = !__atomic_load_n(&b->owner, __ATOMIC_RELAXED);
        int whole = b == me || take == ATL_TAKE_ALL || take == ATL_TAKE_NONE ||
                    (lent && take == ATL_TAKE_LENT);
        if (!whole && !(lent && take == ATL_TAKE_STREAM))
            continue; /* another thread's own steps */
        if (atl_tbuf_lock_step(b) != 0) {
            atl_exit_skipped("the ops of a thread still recording");
            continue;
        }
        /* ops recorded against a reference are written out whole to be taken (dropped ones
         * need not be) */
        if (s && b->rops && atl_tbuf_materialize(b) != 0)
            atl_log_once_oom("the step trace");
        if (!whole) {
            harvest_one_stream = 0; /* ops of another buffer join: order_by_stream looks */
            if (s && take_stream(s, b, stream) != 0)
                atl_log_once_oom("the step trace");
            if (!b->nops)
                b->lent_since = 0;
            else if (!b->lent_since)
                b->lent_since = steps_now + 1;
            else if (steps_now + 1 - b->lent_since > STALE_STEPS) {
                atl_tbuf_empty(b);
                b->oom = 0, b->lent_since = 0;
            }
            since_taken(b);
            atl_tbuf_unlock(b);
            continue;
        }
        b->lent_since = 0;
        if (s && b->nops) {
            size_t first = s->nops;
            if (atl_chrome_on && b->ts) {
                /* the times first: take_over hands b's arrays away */
                if (!atl_grow((void **)&step_ts, &step_tscap, first + b->nops, sizeof *step_ts,
                              4096))
                    memcpy(step_ts + first, b->ts, b->nops * sizeof *step_ts);
            }
            harvest_one_stream = first == 0 && !b->multi;
            harvest_first = first == 0 ? b : NULL;
            if (first == 0 && !s->ops && !s->bytes)
                take_over(s, b);
            else if (append(s, b) != 0)
                atl_log_once_oom("the step trace");
        }
        if (b->oom == 1 && s)
            atl_log(ATL_WARN,
                    "step trace: out of memory while recording; the step ending now "
                    "(step %" PRIu64 ") is incomplete",
                    steps_now + 1);
        else if (b->oom == 2 && s)
            atl_log(ATL_WARN,
                    "step trace: more than %u ops on one thread in one step; the rest of "
                    "the step ending now (step %" PRIu64 ") was not recorded",
                    ATL_TBUF_MAX_OPS, steps_now + 1);
        atl_tbuf_empty(b);
        b->oom = 0;
        since_taken(b);
        atl_tbuf_unlock(b);
    }
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Orders the ops per stream: streams by handle (stable from step to step
 * whatever thread enqueued first), and within a stream the order of the
 * threads' buffers (a stable counting sort). */
static void order_streams(struct atl_step *s);

static void order_by_stream(struct atl_step *s)
{
    if (harvest_one_stream)
        return;
    for (size_t i = 1; i < s->nops; i++)
        if (s->ops[i].stream != s->ops[0].stream) {
            order_streams(s);
            return;
        }
    /* one stream (the common case): nothing to reorder */
}

/* order_by_stream's work when there are several streams: out of line, so
 * that a one-stream step does not pay for zeroing its counters. */
static __attribute__((noinline)) void order_streams(struct atl_step *s)
{
    enum { MAXS = 256 };
    uint64_t str[MAXS];
    size_t cnt[MAXS + 1] = {0}, ns = 0;
    uint16_t *rank = malloc(s->nops * sizeof *rank);
    struct atl_op *out = malloc(s->nops * sizeof *out);
    if (!rank || !out) {
        free(rank), free(out);
        return; /* left in thread order */
    }
    for (size_t i = 0; i < s->nops; i++) {
        size_t r = 0;
        while (r < ns && str[r] != s->ops[i].stream)
            r++;
        if (r == ns && ns < MAXS)
            str[ns++] = s->ops[i].stream;
        if (r == MAXS)
            r = MAXS - 1; /* a program with more streams: the rest share a bucket */
        rank[i] = (uint16_t)r;
    }
    uint64_t sorted[MAXS];
    memcpy(sorted, str, ns * sizeof *str);
    qsort(sorted, ns, sizeof *sorted, u64_cmp);
    uint16_t map[MAXS];
    for (size_t r = 0; r < ns; r++)
        for (size_t t = 0; t < ns; t++)
            if (sorted[t] == str[r])
                map[r] = (uint16_t)t;
    for (size_t i = 0; i < s->nops; i++) {
        rank[i] = rank[i] < ns ? map[rank[i]] : rank[i];
        cnt[rank[i] + 1]++;
    }
    for (size_t r = 1; r <= MAXS; r++)
        cnt[r] += cnt[r - 1];
    /* the Chrome export's times follow their ops (ts NULL: not kept) */
    uint64_t *ts = atl_chrome_on && step_tscap >= s->nops ? malloc(s->nops * sizeof *ts) : NULL;
    for (size_t i = 0; i < s->nops; i++) {
        size_t d = cnt[rank[i]]++;
        out[d] = s->ops[i];
        if (ts)
            ts[d] = step_ts[i];
    }
    if (ts) {
        memcpy(step_ts, ts, s->nops * sizeof *ts);
        free(ts);
    } else if (atl_chrome_on && step_tscap >= s->nops) {
        memset(step_ts, 0, s->nops * sizeof *step_ts); /* times lost with the order */
    }
    free(s->ops);
    s->ops = out;
    s->capops = s->nops;
    free(rank);
}

/* The allocations found, the latest RECENT of them, and values the ledger
 * holds no allocation for, MISS slots by value: the words looked at repeat
 * from op to op (the same buffers; a by-value struct's bytes, which are no
 * pointers), and each ledger look-up takes its lock and walks its tree. A
 * GPT-2-like step (161 ops with a 252-byte struct each, make cpu-bench's
 * gpt2) spent 60% of its traced time here. */
enum { RES_SEEN = 64, RES_RECENT = 16, RES_MISS = 512 };
struct resolver {
    /* the last allocation found: consecutive pointers mostly fall in one */
    uint64_t lo, hi;
    /* allocations already added, by seq: a step's pointers alternate among
     * a few, each added once (a repeat past these is merged by spans_done) */
    uint64_t seen[RES_SEEN];
    struct {
        uint64_t lo, hi;
    } recent[RES_RECENT];
    unsigned nrecent, rnext;
    uint64_t miss[RES_MISS];
    uint64_t mmask; /* the miss slots in use, less one: a step's ops times 8, a power of two */
    int oom;
};

/* A resolver for a step of `nops` ops: a small step (CuPy's, a few ops a sync) clears a few
 * miss slots, not 4 KiB of them at every step end. */
static void resolver_init(struct resolver *rs, size_t nops)
{
    rs->lo = rs->hi = 0;
    memset(rs->seen, 0xff, sizeof rs->seen);
    rs->nrecent = rs->rnext = 0;
    size_t slots = 8;
    while (slots < RES_MISS && slots < 8 * nops)
        slots *= 2;
    rs->mmask = slots - 1;
    memset(rs->miss, 0, slots * sizeof *rs->miss); /* 0 is below 64 KiB: never looked up */
    rs->oom = 0;
}

/* One word v: the allocation it falls in, added to s's spans once. -1: out of memory. */
static inline __attribute__((always_inline)) int resolve_word(struct resolver *rs,
                                                              struct atl_step *s, uint64_t v)
{
    if (v >= rs->lo && v < rs->hi)
        return 0;
    unsigned r = 0;
    while (r < rs->nrecent && !(v >= rs->recent[r].lo && v < rs->recent[r].hi))
        r++;
    if (r < rs->nrecent) {
        rs->lo = rs->recent[r].lo, rs->hi = rs->recent[r].hi;
        return 0;
    }
    uint64_t *m = &rs->miss[atl_hash_mix(0, v) & rs->mmask];
    if (*m == v)
        return 0;
    struct atl_alloc_rec rec;
    if (!atl_ledger_find((CUdeviceptr)v, &rec)) {
        *m = v;
        return 0;
    }
    rs->lo = rec.ptr, rs->hi = rec.ptr + atl_alloc_span(&rec);
    rs->recent[rs->rnext].lo = rs->lo, rs->recent[rs->rnext].hi = rs->hi;
    rs->rnext = (rs->rnext + 1) % RES_RECENT;
    rs->nrecent += rs->nrecent < RES_RECENT;
    if (rs->seen[rec.seq % RES_SEEN] == rec.seq)
        return 0;
    rs->seen[rec.seq % RES_SEEN] = rec.seq;
    if (atl_step_add_span(s, rs->lo, rs->hi, rec.seq)) {
        if (!rs->oom++)
            atl_log_once_oom("the step trace's pointer names");
        return -1;
    }
    return 0;
}

/* resolve_op's work past the words of a launch that fall in the last allocation found (the
 * first `wd` of them). */
static __attribute__((noinline)) void resolve_words(struct resolver *rs, struct atl_step *s,
                                                    const struct atl_step *from,
                                                    const struct atl_op *o, unsigned wd)
{
    const struct atl_kfn *k = o->kind == ATL_OP_LAUNCH ? o->u.k.kfn : NULL;
    if (k && k->words) {
        /* the record's word list read here, not a call per word (PyTorch's
         * multi_tensor_apply_kernel passes 440 words a launch): the words
         * atl_op_word_next yields, in its order */
        const uint8_t *p = atl_op_bytes(from, o);
        for (; wd < k->nwords; wd++) {
            uint64_t v;
            memcpy(&v, p + k->words[wd], 8);
            if (v >= 65536 && resolve_word(rs, s, v))
                return;
        }
        return;
    }
    unsigned param = 0;
    uint32_t at;
    uint64_t v;
    while (atl_op_word_next(from, o, &param, &wd, &at, &v))
        if (resolve_word(rs, s, v))
            return;
}

/* The allocations op o's words (its bytes in step `from`) fall in, added to s's spans. */
static inline void resolve_op(struct resolver *rs, struct atl_step *s, const struct atl_step *from,
                              const struct atl_op *o)
{
    unsigned wd = 0;
    const struct atl_kfn *k = o->kind == ATL_OP_LAUNCH ? o->u.k.kfn : NULL;
    if (k && k->words) {
        /* the common case inline: the words of a launch whose pointers
         * all fall in the last allocation found */
        const uint8_t *p = atl_op_bytes(from, o);
        const uint64_t lo = rs->lo, len = rs->hi - rs->lo; /* one compare for "in [lo, hi)" */
        for (; wd < k->nwords; wd++) {
            uint64_t v;
            memcpy(&v, p + k->words[wd], 8);
            if (v - lo >= len && v >= 65536)
                break;
        }
        if (wd == k->nwords)
            return;
    }
    resolve_words(rs, s, from, o, wd);
}

/* Names 8-byte parameters, and the 8-byte words of larger ones (PyTorch
 * passes tensor pointers in a by-value array), that point into a live
 * allocation, so the diff can tell "the same buffer at another offset" from
 * "another buffer", and two processes' pointers can be compared by name.
 * What is kept is the allocations found (the step's spans), not a note per
 * pointer: the words looked at are the same every time (atl_op_word_next),
 * so a word is named exactly when its value lies in one of them. */
/* `like`, when given, is a step of the same ops whose pointers were resolved
 * while the ledger was as it is now (its generation): its spans hold for
 * every op whose record and bytes are like's, so only the other ops are
 * looked at. A step that differs in a scalar from the last of its shape (a
 * loop with a learning-rate schedule: every step) is resolved op by op no
 * more. */
static void resolve_pointers(struct atl_step *s, const struct atl_step *like)
{
    struct resolver rs;
    resolver_init(&rs, s->nops);
    s->nspans = 0;
    s->ledger_gen = atl_ledger_generation();
    if (like &&
        (like->nops != s->nops || like->ledger_gen != s->ledger_gen ||
         atl_grow((void **)&s->spans, &s->capspans, like->nspans + 1, sizeof *s->spans, 16)))
        like = NULL;
    if (like && like->nspans) {
        memcpy(s->spans, like->spans, like->nspans * sizeof *s->spans);
        s->nspans = like->nspans;
    }
    for (size_t i = 0; i < s->nops; i++) {
        const struct atl_op *o = &s->ops[i];
        const struct atl_kfn *k = o->kind == ATL_OP_LAUNCH ? o->u.k.kfn : NULL;
        if (like && memcmp(o, &like->ops[i], sizeof *o) == 0 &&
            (!k || !k->total ||
             memcmp(atl_op_bytes(s, o), atl_op_bytes(like, &like->ops[i]), k->total) == 0))
            continue; /* its words fell where like's did */
        resolve_op(&rs, s, s, o);
    }
    atl_step_spans_done(s);
}

/* resolve_pointers for a step recorded against `ref` (sparse_step): d holds
 * the ops that differ from ref's, at places idx of the step, which has
 * ref->nops ops; d gets the step's spans. While the ledger is as it was when
 * ref's pointers were resolved, ref's spans hold for the rest. */
static void resolve_sparse(struct atl_step *d, const struct atl_step *ref, const uint32_t *idx)
{
    struct resolver rs;
    resolver_init(&rs, ref->nops);
    d->nspans = 0;
    d->ledger_gen = atl_ledger_generation();
    if (ref->ledger_gen == d->ledger_gen &&
        !atl_grow((void **)&d->spans, &d->capspans, ref->nspans + 1, sizeof *d->spans, 16)) {
        if (ref->nspans)
            memcpy(d->spans, ref->spans, ref->nspans * sizeof *d->spans);
        d->nspans = ref->nspans;
        for (size_t j = 0; j < d->nops; j++)
            resolve_op(&rs, d, d, &d->ops[j]);
    } else {
        for (size_t i = 0, j = 0; i < ref->nops; i++) {
            if (j < d->nops && idx[j] == i)
                resolve_op(&rs, d, d, &d->ops[j++]);
            else
                resolve_op(&rs, d, ref, &ref->ops[i]);
        }
    }
    atl_step_spans_done(d);
}

/* Kernel names for people, before a report needs them. */
static void name_ops(const struct atl_step *st)
{
    const struct atl_kfn *last = NULL;
    for (size_t i = 0; i < st->nops; i++) {
        const struct atl_kfn *k = st->ops[i].u.k.kfn;
        if (st->ops[i].kind == ATL_OP_LAUNCH && k != last) {
            last = k;
            atl_kfn_pretty(k);
        }
    }
}

/* The same ops and the same bytes as the previous step of the name (streams
 * included, so this is stricter than the diff). */
static int same_as(const struct atl_step *a, const struct atl_step *b)
{
    return a->ops && a->nops == b->nops && a->nbytes == b->nbytes &&
           memcmp(a->ops, b->ops, a->nops * sizeof *a->ops) == 0 &&
           (a->nbytes == 0 || memcmp(a->bytes, b->bytes, a->nbytes) == 0);
}

/* Under step_mu: the step's slice and ops into the Chrome trace. Pointers
 * must be resolved and kernel names demangled first. */
static void chrome_write(struct atl_step *s, uint64_t begin, uint64_t end)
{
    name_ops(s);
    atl_chrome_step(s, step_tscap >= s->nops ? step_ts : NULL, begin, end);
}

/* The thread's name in reports: "main", the name it was given
 * (pthread_setname_np), or "#N" (its buffer's number) when it has none of
 * its own (a new thread inherits the program's name). */
static void thread_label_now(const struct tbuf *me, char *out, size_t len)
{
    char nm[16] = "";
    if ((pid_t)syscall(SYS_gettid) == getpid()) {
        snprintf(out, len, "main");
        return;
    }
    if (pthread_getname_np(pthread_self(), nm, sizeof nm) == 0 && nm[0] &&
        strncmp(nm, program_invocation_short_name, sizeof nm - 1) != 0) {
        size_t n = 0;
        for (; nm[n] && n + 1 < len; n++) /* only printable text reaches the log */
            out[n] = nm[n] > ' ' && nm[n] < 127 && nm[n] != '"' && nm[n] != '\\' ? nm[n] : '_';
        out[n] = '\0';
        return;
    }
    snprintf(out, len, "#%u", me ? me->idx : 0);
}

/* thread_label_now costs three system calls, too many for a step end per
 * synchronous copy: it is asked again every 256th step of the thread only
 * (a thread names itself when it starts, if at all). */

static void thread_label(const struct tbuf *me, char out[sizeof tt.label])
{
    if (!tt.label[0] || tt.label_age++ % 256 == 0)
        thread_label_now(me, tt.label, sizeof tt.label);
    memcpy(out, tt.label, sizeof tt.label);
}

/* Ops a and b (n of each) are one but for the host ends of pageable copies, and those are
 * collapsed (ATLAS_DIFF_POINTERS, not `all`): a step the diff would count identical, as
 * quiet, with no line. CuPy's float() of a sum copies into a new host buffer every step; its
 * small steps (too few ops to be recorded against a reference) took the whole diff for it.
 * fast_step then copies b's records over a's (they differ in those host ends only), so the
 * next step is compared with this one, as the slow path's would be. */
static int host_moved_only(const struct atl_op *a, const struct atl_op *b, size_t n)
{
    if (atl_cfg.diff_pointers == ATL_PTRS_ALL)
        return 0;
    int moved = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&a[i], &b[i], sizeof *a) == 0)
            continue;
        if (a[i].kind != ATL_OP_COPY || b[i].kind != ATL_OP_COPY || a[i].flags != b[i].flags ||
            !(a[i].flags & (ATL_COPY_DST_PAGEABLE | ATL_COPY_SRC_PAGEABLE)))
            return 0;
        struct atl_op x = b[i];
        if (x.flags & ATL_COPY_DST_PAGEABLE)
            x.u.c.dst = a[i].u.c.dst;
        if (x.flags & ATL_COPY_SRC_PAGEABLE)
            x.u.c.src = a[i].u.c.src;
        if (memcmp(&a[i], &x, sizeof x) != 0)
            return 0;
        moved = 1;
    }
    return moved;
}

/* The step end of a thread whose step is byte-identical to the previous one
 * of its kind, without step_mu: a server's threads each syncing their own
 * stream, or a loop of synchronous copies (a step end each), must not queue
 * on one process-wide lock to learn that nothing changed. Taken only when
 * the slow path would do nothing else: the thread owns its ops and its last
 * step found its kind (fast_slot), no other thread has ops to lend or ops
 * left stale (harvest would move them), and
 * no JSON lines or Chrome trace are written (they keep the steps' order).
 * Then the thread's buffer is compared with the kind's previous step under
 * that kind's lock and, if identical, emptied in place. Returns 1 when the
 * step end is done. */
/* Some thread's buffer records against step st (record_against, which sets a buffer's rops
 * only under the kind's lock: the caller holds it), so st's records may not be written. */
static int lent_out(const struct atl_step *st)
{
    for (struct tbuf *b = atl_tbuf_first(); b; b = atl_tbuf_next(b))
        if (__atomic_load_n(&b->rops, __ATOMIC_RELAXED) == st->ops)
            return 1;
    return 0;
}

static int fast_step(const char *name, struct tbuf *me, enum atl_take take, uint64_t stream)
{
    if (!me || !me->fast_slot || __atomic_load_n(&json, __ATOMIC_RELAXED) || atl_chrome_on ||
        captures || (take != ATL_TAKE_LENT && take != ATL_TAKE_STREAM) ||
        atl_exiting() || !__atomic_load_n(&me->owner, __ATOMIC_RELAXED) ||
        __atomic_load_n(&series.ncaptures, __ATOMIC_RELAXED)) /* eager against captured */
        return 0;
    uint64_t now = __atomic_load_n(&step_count, __ATOMIC_RELAXED);
    for (struct tbuf *b = atl_tbuf_first(); b; b = atl_tbuf_next(b))
        if (b != me && __atomic_load_n(&b->nops, __ATOMIC_RELAXED) &&
            (!__atomic_load_n(&b->owner, __ATOMIC_RELAXED) ||
             stale_owner(now, __atomic_load_n(&b->last_own, __ATOMIC_RELAXED))))
            return 0;
    char label[sizeof tt.label];
    thread_label(me, label);
    const int slot = me->fast_slot - 1;
    int done = 0, quiet = 0;
    atl_spin_lock(&names[slot].busy);
    /* the kind's latest step, unless a folded run of its shape waits to be
     * printed (the slow path ends it) */
    struct atl_shaped *recent = atl_kind_recent(&names[slot].k);
    struct atl_step *prev = recent && !recent->fold.sig ? &recent->step : NULL;
    atl_tbuf_lock(me);
    atl_tbuf_flush(me); /* (against a reference: the ops not yet compared) */
    if (me->nops == 0 && !me->oom) {
        done = 1; /* nothing recorded, nothing lent: no step (as the slow path decides) */
    } else if (me->rops && !me->oom && prev && prev->ops == me->rops && prev->nops == me->nops &&
               !me->multi && strncmp(names[slot].name, name, sizeof names[slot].name - 1) == 0 &&
               strcmp(names[slot].thread, label) == 0) {
        /* recorded against prev: identical when every op matched it */
        done =
            me->nrec == 0 && names[slot].stream == (take == ATL_TAKE_STREAM ? stream : me->stream0);
    } else if (!me->rops && !me->oom && prev && prev->ops && prev->nops == me->nops &&
               prev->nbytes == me->nbytes &&
               strncmp(names[slot].name, name, sizeof names[slot].name - 1) == 0 &&
               strcmp(names[slot].thread, label) == 0) {
        /* the key's stream: the synchronised one, or the one stream of the ops */
        uint64_t st = take == ATL_TAKE_STREAM ? stream : me->ops[0].stream;
        size_t i = me->multi ? 0 : me->nops;
        while (i < me->nops && me->ops[i].stream == me->ops[0].stream)
            i++;
        int q = 0;
        done = i == me->nops && names[slot].stream == st &&
               (memcmp(prev->ops, me->ops, me->nops * sizeof *me->ops) == 0 ||
                ((q = host_moved_only(prev->ops, me->ops, me->nops)) && !lent_out(prev))) &&
               (me->nbytes == 0 || memcmp(prev->bytes, me->bytes, me->nbytes) == 0);
        quiet = done && q;
        if (quiet) { /* the reference takes the host ends: it is the kind's latest step */
            memcpy(prev->ops, me->ops, me->nops * sizeof *me->ops);
            free(prev->full); /* its ops' hashes held the old ends (the shapes stay) */
            prev->full = NULL;
        }
    }
    if (done && me->nops) {
        atl_tbuf_empty(me);
        /* the same views as prev's ops, whose records prev holds */
        __atomic_store_n(&me->krec_since, 0, __ATOMIC_RELAXED);
        prev->index = __atomic_add_fetch(&step_count, 1, __ATOMIC_RELAXED);
        prev->nth = ++names[slot].nth;
        recent->steps++;
        recent->fold.settled = 1; /* (nothing is held: no run waits, fold.sig is 0) */
        __atomic_store_n(&me->fast_steps, me->fast_steps + 1, __ATOMIC_RELAXED);
        if (quiet)
            __atomic_store_n(&me->fast_quiet, me->fast_quiet + 1, __ATOMIC_RELAXED);
    }
    atl_tbuf_unlock(me);
    atl_spin_unlock(&names[slot].busy);
    if (done)
        __atomic_store_n(&me->last_own, now, __ATOMIC_RELAXED);
    return done;
}

/* PyTorch's caching allocator (libc10_cuda) hands tensors blocks of its segments, which it makes
 * with cudaMalloc: an allocation with a frame of that library on its stack is one. The
 * library's code is found by the loader's list alone (dl_iterate_phdr, never dlopen or dladdr,
 * which take the lock a library's constructor runs under, and step_mu is held here), and looked
 * for again only after the loader has loaded something. */
struct c10_code {
    unsigned long long adds; /* the loader's load count when looked for (~0: never) */
    uintptr_t lo, hi;        /* its executable segment's addresses; lo == hi: not loaded */
};
static struct c10_code c10 = {.adds = ~0ULL};

static int find_c10(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct c10_code *c = arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libc10_cuda.so", 14) != 0)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            c->lo = info->dlpi_addr + ph->p_vaddr;
            c->hi = c->lo + ph->p_memsz;
            return 1;
        }
    }
    (void)size;
    return 0;
}

/* Under step_mu: whether libc10_cuda is loaded, its code's range in c10. */
static int c10_loaded(void)
{
    if (c10.lo != c10.hi)
        return 1; /* PyTorch's libraries stay */
    unsigned long long adds;
    atl_stack_loads(&adds, NULL);
    if (adds != c10.adds) {
        c10.adds = adds;
        dl_iterate_phdr(find_c10, &c10);
    }
    return c10.lo != c10.hi;
}

/* Under step_mu: 1 when alloc#x->seq (v lies in it) is one of the caching allocator's segments.
 * Each allocation is asked once and the answer kept by its number, which no other allocation
 * takes: a step whose pointers all moved asks for thousands. */
#define SEG_MEMO 4096
static struct {
    uint64_t seq;
    int segment;
} seg_memo[SEG_MEMO];

static int segment_of(const struct atl_ann *x, uint64_t v)
{
    unsigned i = (unsigned)(x->seq * 0x9E3779B97F4A7C15ULL >> 52) & (SEG_MEMO - 1);
    if (seg_memo[i].seq == x->seq && x->seq)
        return seg_memo[i].segment;
    struct atl_alloc_rec r;
    int found = (atl_ledger_find((CUdeviceptr)(v - x->off), &r) && r.seq == x->seq) ||
                atl_ledger_freed(x->seq, &r, NULL);
    int seg = 0;
    for (int k = 0; found && k < r.site.n && !seg; k++)
        seg = (uintptr_t)r.site.pc[k] >= c10.lo && (uintptr_t)r.site.pc[k] < c10.hi;
    if (found)
        seg_memo[i].seq = x->seq, seg_memo[i].segment = seg;
    return seg;
}

static int pooled(const struct atl_ann *was, uint64_t va, const struct atl_ann *now, uint64_t vb)
{
    return segment_of(now, vb) && segment_of(was, va);
}

/* Under step_mu: the diff's options for a step end. */
static void step_opts(struct atl_diff_opts *o)
{
    *o = (struct atl_diff_opts){
        .max_lines = (unsigned)atl_cfg.diff_max,
        .ignore = &ignore_list,
        .replay = captures ? "capture" : NULL,
        .where = where,
        /* capture mode reports each capture's replay-safety: no warm-up there */
        .warmup = !atl_cfg.diff_warmup && !captures,
        .pointers = (int)atl_cfg.diff_pointers,
        .residue = (int)atl_cfg.diff_residue,
        .host_addr = atl_host_addr,
        .explain = explain,
        .pooled = c10_loaded() ? pooled : NULL,
        .found = diff_found,
    };
    atl_series_opts(&series, o);
}

/* ---- steps recorded against the step kept (trace_internal.h) ------------------------ */

/* Under step_mu: kept step st's arrays are about to be freed or written over, so the buffers
 * recording against them (but `except`) record in full from here, their ops so far written
 * out. Returns -1 when one could not be (its thread stopped while recording, at exit): the
 * arrays must then stay. */
static int detach(const struct atl_step *st, const struct tbuf *except)
{
    int rc = 0;
    if (!st->ops)
        return 0;
    for (struct tbuf *b = atl_tbuf_first(); b; b = atl_tbuf_next(b)) {
        /* set only under step_mu (held), cleared under the buffer's lock: read again there */
        if (b == except || __atomic_load_n(&b->rops, __ATOMIC_RELAXED) != st->ops)
            continue;
        if (atl_tbuf_lock_step(b) != 0) {
            rc = -1;
            continue;
        }
        if (b->rops == st->ops && atl_tbuf_materialize(b) != 0)
            atl_log_once_oom("the step trace");
        atl_tbuf_unlock(b);
    }
    return rc;
}

/* Steps of fewer ops are recorded whole, as before: what recording against a step saves is
 * memory, which a small step hardly takes, and comparing it a window at a time (a call per
 * step end) costs a step of one synchronous copy (make cpu-bench's dtoh) 3% more
 * instructions. */
#define SPARSE_MIN_OPS 64

/* Under step_mu and the kind's lock, at the end of a step end: whether the thread's next step
 * is to be recorded against ref, the kind's latest step. Only a step taken whole from the
 * thread's own buffer, on one stream, is (its order is the order the thread enqueues in), and
 * not for the Chrome trace (its times follow the ops) nor in capture mode. */
static int sparse_ok(struct tbuf *me, enum atl_take take, int slot, const struct atl_step *ref)
{
    if (!(me && !atl_chrome_on && !captures &&
          (take == ATL_TAKE_LENT || take == ATL_TAKE_STREAM) && slot < MAX_NAMES - 1 &&
          harvest_one_stream && harvest_first == me && !atl_exiting() && ref->ops &&
          ref->nops >= SPARSE_MIN_OPS && ref->nops <= UINT32_MAX))
        return 0;
    if (me->sparse_skip) { /* (ATL_SPARSE_SKIP) */
        me->sparse_skip--;
        return 0;
    }
    return 1;
}

/* Under step_mu and the kind's lock, sparse_ok: me records its next step against ref; the
 * arrays it recorded its last one in, if it has them still, go (their pages are what
 * recording against ref saves). */
static void record_against(struct tbuf *me, const struct atl_step *ref)
{
    if (atl_tbuf_lock_step(me) != 0)
        return;
    if (me->nops == 0 && !me->rops) {
        free(me->ops), free(me->bytes), free(me->ridx);
        me->ops = NULL, me->bytes = NULL, me->ridx = NULL;
        me->cap = me->capbytes = me->ridxcap = 0;
        me->rbytes = ref->bytes, me->rnops = ref->nops;
        __atomic_store_n(&me->rops, ref->ops, __ATOMIC_RELAXED);
        atl_tbuf_held_note(me);
    }
    atl_tbuf_unlock(me);
}

/* Under step_mu: the step ending on thread me, recorded against the kind's latest step
 * (me->rops), ended without writing it out whole: the ops that differ (me's) are compared
 * with the same places of the kept step, as the whole steps would be (struct atl_diff_opts'
 * sparse: the same lines), and written over it, which becomes this step. Taken when the step
 * is me's ops alone, all of them places of the kept step with its kernels (its shape, so its
 * diff pairs op with op), and nothing else is to be had from the buffers (no other thread
 * lends ops). Returns 0 when not taken: nothing changed, the caller goes the whole way. */
static __attribute__((noinline)) int sparse_step(const char *name, struct tbuf *me,
                                                 enum atl_take take, uint64_t stream)
{
    if (!me || !__atomic_load_n(&me->rops, __ATOMIC_RELAXED) || atl_chrome_on ||
        captures || (take != ATL_TAKE_LENT && take != ATL_TAKE_STREAM) ||
        atl_exiting())
        return 0;
    const uint64_t now = __atomic_load_n(&step_count, __ATOMIC_RELAXED);
    for (struct tbuf *b = atl_tbuf_first(); b; b = atl_tbuf_next(b))
        if (b != me && __atomic_load_n(&b->nops, __ATOMIC_RELAXED) &&
            (!__atomic_load_n(&b->owner, __ATOMIC_RELAXED) ||
             stale_owner(now, __atomic_load_n(&b->last_own, __ATOMIC_RELAXED))))
            return 0; /* harvest would take them */
    char label[sizeof tt.label];
    thread_label(me, label);
    if (atl_tbuf_lock_step(me) != 0)
        return 0;
    atl_tbuf_flush(me);
    const uint64_t st = take == ATL_TAKE_STREAM ? stream : me->stream0;
    int slot = 0;
    while (slot < nnames && !(strncmp(names[slot].name, name, sizeof names[slot].name - 1) == 0 &&
                              strcmp(names[slot].thread, label) == 0 && names[slot].stream == st))
        slot++;
    struct atl_shaped *recent =
        slot < nnames && slot < MAX_NAMES - 1 ? atl_kind_recent(&names[slot].k) : NULL;
    struct atl_step *R = recent ? &recent->step : NULL;
    int ok = R && R->ops && R->ops == me->rops && R->nops == me->nops && me->nops && !me->oom &&
             !me->multi;
    for (size_t j = 0; ok && j < me->nrec; j++) {
        const struct atl_op *x = &me->ops[j], *y = &R->ops[me->ridx[j]];
        ok = me->ridx[j] < R->nops && x->kind == y->kind &&
             (x->kind == ATL_OP_LAUNCH  ? x->u.k.kfn == y->u.k.kfn
              : x->kind == ATL_OP_GRAPH ? 1
                                        : x->sub == y->sub);
    }
    if (!ok) {
        atl_tbuf_unlock(me);
        return 0;
    }
    /* the ops that differ, taken (given back at the end); me stays against R */
    struct atl_step d;
    atl_step_init(&d, name);
    d.ops = me->ops, d.nops = me->nrec, d.capops = me->cap;
    d.bytes = me->bytes, d.nbytes = me->nbytes, d.capbytes = me->capbytes;
    uint32_t *idx = me->ridx;
    size_t idxcap = me->ridxcap;
    me->ops = NULL, me->bytes = NULL, me->ridx = NULL;
    me->cap = me->capbytes = me->ridxcap = 0;
    atl_tbuf_empty(me);
    me->lent_since = 0;
    since_taken(me);
    atl_tbuf_held_note(me);
    atl_tbuf_unlock(me);

    atl_spin_lock(&names[slot].busy);
    struct atl_kind *kind = &names[slot].k;
    d.index = __atomic_add_fetch(&step_count, 1, __ATOMIC_RELAXED);
    stats.steps++;
    memcpy(d.thread, label, sizeof d.thread);
    d.stream = st;
    d.nth = ++names[slot].nth;
    d.seqmark = atl_ledger_seq_peek();
    me->fast_slot = slot + 1;
    struct atl_diff_opts o;
    step_opts(&o);
    if (d.nops == 0) {
        /* identical: as same_as finds (R stays the reference) */
        if (json) {
            struct atl_step v = *R;
            v.index = d.index, v.nth = d.nth, v.seqmark = d.seqmark;
            v.spans = NULL, v.nspans = v.capspans = 0, v.shape = v.full = NULL;
            if (R->ledger_gen == atl_ledger_generation())
                v.spans = R->spans, v.nspans = R->nspans;
            else
                resolve_pointers(&v, NULL);
            atl_step_write_json(&v, json, atl_host_addr);
            fflush(json);
            if (v.spans != R->spans)
                free(v.spans);
        }
        uint64_t wasidx = R->index;
        R->index = d.index, R->nth = d.nth;
        stats.compared++, stats.identical++;
        atl_series_same(&series, kind, recent, &o);
        atl_series_eager(&series, R, 1, wasidx, &o);
        diff_told();
    } else {
        if (2 * d.nops > R->nops)
            me->sparse_skip = ATL_SPARSE_SKIP; /* most of it differed */
        if (atl_ledger_on)
            resolve_sparse(&d, R, idx);
        name_ops(&d);
        d.shapesum = atl_step_shape(R);
        /* the same places of R, for the diff: their records (the bytes stay R's), and
         * their hashes where R has them (a step whose every op changes, a caching
         * allocator's, would hash both sides each step) */
        struct atl_step a = *R;
        a.ops = malloc(d.nops * sizeof *a.ops);
        a.nops = a.capops = d.nops;
        a.shape = a.full = NULL, a.ann = NULL, a.nann = a.capann = 0;
        a.hidx = NULL, a.hshape = a.hfull = NULL, a.nh = 0;
        a.spans = R->spans, a.nspans = R->nspans, a.capspans = 0;
        if (!a.ops) {
            /* no room to compare: what was recorded is still written over R */
            atl_log_once_oom("the step trace");
        } else {
            for (size_t j = 0; j < d.nops; j++)
                a.ops[j] = R->ops[idx[j]];
            if (R->full && R->shape && (a.shape = malloc(d.nops * sizeof *a.shape)) &&
                (a.full = malloc(d.nops * sizeof *a.full))) {
                for (size_t j = 0; j < d.nops; j++)
                    a.shape[j] = R->shape[idx[j]], a.full[j] = R->full[idx[j]];
            } else if (R->hidx && R->nh == d.nops &&
                       memcmp(R->hidx, idx, d.nops * sizeof *idx) == 0) {
                free(a.shape);
                a.shape = R->hshape, a.full = R->hfull; /* taken: R's go with this diff */
                R->hshape = R->hfull = NULL;
            } else {
                free(a.shape);
                a.shape = NULL;
            }
            o.sparse = idx, o.sparse_nops = R->nops;
            tally.found = tally.suppressed = 0;
            atl_series_compare_sparse(&series, kind, recent, &a, &d, &o);
            diff_told();
            if (tally.found && tally.found == tally.suppressed)
                quiet_steps++; /* it differs, but as suppressed findings only */
            o.sparse = NULL, o.sparse_nops = 0;
        }
        free(a.ops), free(a.shape), free(a.full);
        /* R becomes this step: the ops that differ written over it (the other buffers
         * recording against R first record in full), its notes this step's */
        detach(R, me);
        for (size_t j = 0; j < d.nops; j++) {
            struct atl_op x = d.ops[j];
            struct atl_op *y = &R->ops[idx[j]];
            if (x.kind == ATL_OP_LAUNCH) {
                if (x.u.k.kfn && x.u.k.kfn->total)
                    memcpy(R->bytes + y->u.k.bytes, d.bytes + x.u.k.bytes, x.u.k.kfn->total);
                x.u.k.bytes = y->u.k.bytes;
            }
            *y = x;
        }
        free(R->full); /* the shapes stay */
        R->full = NULL;
        /* the hashes of the places written over, for the next step's diff (computed
         * under this step's notes, which R takes below) */
        free(R->hidx), free(R->hshape), free(R->hfull);
        R->hidx = NULL, R->hshape = R->hfull = NULL, R->nh = 0;
        if (atl_ledger_on && d.shape && d.full && (R->hidx = malloc(d.nops * sizeof *idx))) {
            memcpy(R->hidx, idx, d.nops * sizeof *idx);
            R->hshape = d.shape, R->hfull = d.full, R->nh = d.nops;
            d.shape = d.full = NULL;
        }
        R->index = d.index, R->nth = d.nth, R->seqmark = d.seqmark;
        if (atl_ledger_on) {
            free(R->spans);
            R->spans = d.spans, R->nspans = d.nspans, R->capspans = d.capspans;
            R->ledger_gen = d.ledger_gen;
            d.spans = NULL, d.nspans = d.capspans = 0;
        }
        atl_series_eager(&series, R, 0, 0, &o);
        diff_told();
        if (json) {
            atl_step_write_json(R, json, atl_host_addr);
            fflush(json);
        }
        atl_series_kept(&series, kind, recent);
    }
    free(d.shape), free(d.full), free(d.spans), free(d.ann);
    d.shape = d.full = NULL, d.spans = NULL, d.ann = NULL;
    /* the arrays back to the buffer for its next step's differing ops; or, when most of
     * this one differed, its next steps recorded whole (ATL_SPARSE_SKIP) */
    if (atl_tbuf_lock_step(me) == 0) {
        if (me->sparse_skip && me->rops == R->ops && !me->nops) {
            atl_tbuf_materialize(me);     /* (nothing to write out) */
            if (!me->ops && !me->bytes) { /* the step's size: room for the next */
                me->ops = d.ops, me->cap = d.capops, d.ops = NULL;
                me->bytes = d.bytes, me->capbytes = d.capbytes, d.bytes = NULL;
                atl_tbuf_held_note(me);
            }
        } else if (!me->ops && !me->bytes && !me->ridx && me->rops == R->ops &&
                   idxcap >= d.capops) {
            /* (ridx grows with ops: never short of it) */
            me->ops = d.ops, me->cap = d.capops, d.ops = NULL;
            me->bytes = d.bytes, me->capbytes = d.capbytes, d.bytes = NULL;
            me->ridx = idx, me->ridxcap = idxcap, idx = NULL;
            atl_tbuf_held_note(me);
        }
        atl_tbuf_unlock(me);
    }
    free(d.ops), free(d.bytes), free(idx);
    kind_done(slot);
    return 1;
}

/* Under step_mu: the thread of buffer b owns its ops from now on (they go to its own steps
 * only, not lent to other threads' steps), as of the current step. */
static void own_ops(struct tbuf *b)
{
    if (!__atomic_exchange_n(&b->owner, 1, __ATOMIC_RELAXED))
        where |= ++nowners > 1;
    __atomic_store_n(&b->last_own, __atomic_load_n(&step_count, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
}

/* Under step_mu: the harvested step s, ordered, gets its number and its key but for its name:
 * the thread's label and the stream (the one synchronised; else the one stream of its ops, 0
 * when they are on several). */
static void step_key(struct atl_step *s, const struct tbuf *me, enum atl_take take,
                     uint64_t stream)
{
    s->index = __atomic_add_fetch(&step_count, 1, __ATOMIC_RELAXED); /* read by the hang report */
    stats.steps++;
    _Static_assert(sizeof s->thread == sizeof tt.label, "a label fills the step's");
    thread_label(me, s->thread);
    s->stream = stream;
    if (take != ATL_TAKE_STREAM && !captures) {
        s->stream = s->ops[0].stream; /* ordered by stream: one stream iff first == last */
        if (s->ops[s->nops - 1].stream != s->stream)
            s->stream = 0;
    }
}

/* Under step_mu: the slot of s's kind (name, thread, stream), made at the kind's first step. */
static int kind_slot(const struct atl_step *s)
{
    int slot = 0;
    while (slot < nnames &&
           !(strcmp(names[slot].name, s->name) == 0 && strcmp(names[slot].thread, s->thread) == 0 &&
             names[slot].stream == s->stream))
        slot++;
    if (slot < nnames)
        return slot;
    if (nnames == MAX_NAMES)
        return MAX_NAMES - 1; /* more kinds of step than that: the last slot is shared */
    slot = nnames++;
    snprintf(names[slot].name, sizeof names[slot].name, "%s", s->name);
    memcpy(names[slot].thread, s->thread, sizeof names[slot].thread);
    names[slot].stream = s->stream;
    atl_kind_init(&names[slot].k);
    if (nnames > 1 && (strcmp(names[0].thread, s->thread) != 0 || names[0].stream != s->stream))
        where = 1;
    return slot;
}

/* Under step_mu: step s into the JSON lines and the Chrome trace (its pointers resolved). */
static void write_out(struct atl_step *s, uint64_t begin, uint64_t end)
{
    if (json) {
        atl_step_write_json(s, json, atl_host_addr);
        fflush(json);
    }
    if (atl_chrome_on)
        chrome_write(s, begin, end);
}

/* Under step_mu and the kind's lock, at the end of a step end: the arrays of `gone`, a step no
 * longer needed, are freed and the thread's next step is recorded against `kept`, the kind's
 * latest (sparse_ok); or they go back to the thread's buffer (give_back). */
static void next_arrays(struct tbuf *me, enum atl_take take, int slot, struct atl_step *gone,
                        const struct atl_step *kept)
{
    if (sparse_ok(me, take, slot, kept)) {
        /* the next step against this one: no arrays for it to fill */
        atl_step_free(gone);
        record_against(me, kept);
    } else {
        give_back(me, gone);
    }
}

/* Under step_mu and the kind's lock: the steady state of a replayable loop, step s
 * byte-identical to the kind's latest step (recent's). Two memcmps decided it, and that step
 * (already hashed and resolved) stays as the reference, renumbered as s, so an identical step
 * costs no hashing, no ledger look-ups and no allocation beyond the merge. */
static void end_same(struct atl_step *s, struct tbuf *me, enum atl_take take, int slot,
                     struct atl_shaped *recent, struct atl_diff_opts *o, uint64_t begin,
                     uint64_t end)
{
    struct atl_step *prev = &recent->step;
    if (json || atl_chrome_on)
        resolve_pointers(s, prev);
    write_out(s, begin, end);
    uint64_t was = prev->nth, wasidx = prev->index;
    prev->index = s->index, prev->nth = s->nth;
    next_arrays(me, take, slot, s, prev);
    stats.compared++, stats.identical++;
    atl_series_same(&series, &names[slot].k, recent, o);
    if (o->replay) {
        char line[160];
        snprintf(line, sizeof line,
                 "%s #%" PRIu64 " is replay-safe: identical to #%" PRIu64 " (%zu ops)", o->replay,
                 prev->nth, was, prev->nops);
        atl_log_line(line);
    }
    atl_series_eager(&series, prev, 1, wasidx, o);
    diff_told();
}

/* Under step_mu and the kind's lock: step s, not identical to the kind's latest, compared
 * with the last step of its kind and shape (the step series), and with the captures of its
 * shape (eager against captured). Returns the step it was compared with (NULL: none). */
static struct atl_shaped *compare(struct atl_step *s, struct atl_kind *kind,
                                  struct atl_diff_opts *o)
{
    if (atl_ledger_on) {
        struct atl_shaped *like = atl_kind_shape(kind, atl_step_shape(s));
        resolve_pointers(s, like && like->step.ops ? &like->step : NULL);
    }
    /* the kept steps' kernels were named when they ended (here: a step is
     * kept only below); a million-op step is not walked twice for it */
    name_ops(s);
    /* the diff first: what it learns about the kernels (parameters holding
     * uninitialised bytes) goes into this step's JSON lines already */
    struct atl_shaped *ref;
    tally.found = tally.suppressed = 0;
    atl_series_compare(&series, kind, s, o, &ref);
    diff_told();
    if (tally.found && tally.found == tally.suppressed)
        quiet_steps++; /* it differs, but as suppressed findings only */
    atl_series_eager(&series, s, 0, 0, o);
    diff_told();
    return ref;
}

/* Under step_mu and the kind's lock: step s, compared (ref: what with), kept as the latest of
 * its kind and shape; the step it replaces goes, with its references to its kernels' records
 * (the buffers recording against it first record in full). */
static void keep(struct atl_step *s, struct tbuf *me, enum atl_take take, int slot,
                 struct atl_shaped *ref, struct atl_diff_opts *o)
{
    struct atl_kind *kind = &names[slot].k;
    struct atl_step drop;
    hold_kernels(s, 1);
    atl_series_keep(&series, kind, ref, s, o, &drop);
    if (detach(&drop, NULL) != 0)
        memset(&drop, 0, sizeof drop); /* a buffer may still read them (at exit): they stay */
    hold_kernels(&drop, 0);
    next_arrays(me, take, slot, &drop, &atl_kind_recent(kind)->step);
}

void atl_tstep_end(const char *name, struct tbuf *me, enum atl_take take, uint64_t stream,
                   uint64_t begin)
{
    struct atl_step s;
    uint64_t end = atl_chrome_on ? atl_chrome_now() : 0;
    if (!begin)
        begin = end; /* the thread's first step: when it began is not known */
    if (fast_step(name, me, take, stream))
        return;
    if (atl_exit_lock(&step_mu, "the step trace's last step") != 0)
        return;
    atl_step_init(&s, name);
    /* before the harvest: its own ops are taken whole */
    if (me)
        own_ops(me);
    if (sparse_step(name, me, take, stream)) {
        pthread_mutex_unlock(&step_mu);
        return;
    }
    /* (harvest writes out whole what was recorded against a reference) */
    harvest(&s, me, take, stream);
    if (s.nops == 0) {
        atl_step_free(&s);
        since_done();
        pthread_mutex_unlock(&step_mu);
        return;
    }
    order_by_stream(&s);
    step_key(&s, me, take, stream);
    const int slot = kind_slot(&s);
    /* the kind's lock (fast_step reads its latest step without step_mu) */
    atl_spin_lock(&names[slot].busy);
    s.nth = ++names[slot].nth;
    s.seqmark = atl_ledger_seq_peek();
    struct atl_shaped *recent = atl_kind_recent(&names[slot].k);
    /* this thread's next step end may take the fast path to this kind (not
     * to the last slot, which kinds past MAX_NAMES share) */
    if (me)
        me->fast_slot = slot < MAX_NAMES - 1 ? slot + 1 : 0;
    struct atl_diff_opts o;
    step_opts(&o);
    if (recent && same_as(&recent->step, &s)) {
        end_same(&s, me, take, slot, recent, &o, begin, end);
    } else {
        struct atl_shaped *ref = compare(&s, &names[slot].k, &o);
        write_out(&s, begin, end);
        keep(&s, me, take, slot, ref, &o);
    }
    kind_done(slot);
    pthread_mutex_unlock(&step_mu);
}

int atl_tstep_progress(uint64_t *steps, uint64_t *ops, unsigned max, void (*line)(const char *))
{
    *steps = __atomic_load_n(&step_count, __ATOMIC_RELAXED);
    *ops = 0;
    /* each buffer's own lock, held by its thread for one op at a time: the
     * launch path gains no lock, and a thread stuck in a sync holds none */
    for (struct tbuf *b = atl_tbuf_first(); b; b = atl_tbuf_next(b)) {
        atl_tbuf_lock(b);
        atl_tbuf_flush(b);
        *ops += b->nops;
        for (size_t i = b->nops > max ? b->nops - max : 0; i < b->nops; i++) {
            const struct atl_op *o = atl_tbuf_op(b, i);
            char text[512];
            if (o->kind == ATL_OP_LAUNCH)
                snprintf(text, sizeof text,
                         "op %zu: %s grid=(%u,%u,%u) block=(%u,%u,%u) stream=0x%" PRIx64, i,
                         atl_kfn_pretty(o->u.k.kfn), o->u.k.grid[0], o->u.k.grid[1], o->u.k.grid[2],
                         o->u.k.block[0], o->u.k.block[1], o->u.k.block[2], o->stream);
            else
                snprintf(text, sizeof text, "op %zu: %s stream=0x%" PRIx64, i,
                         o->kind == ATL_OP_MEMSET ? "memset"
                         : o->kind == ATL_OP_COPY ? "copy"
                                                  : "graph",
                         o->stream);
            line(text);
        }
        atl_tbuf_unlock(b);
    }
    return 1;
}

void atl_tstep_flush(void)
{
    if (pthread_mutex_trylock(&step_mu) != 0)
        return;
    if (json)
        fflush(json);
    pthread_mutex_unlock(&step_mu);
}

/* NVTX and api steps are the calling thread's: its open range (or
 * atlas_step_begin), its name and when it began (tt), counted in
 * recording while open. */

void atl_tstep_open(const char *name)
{
    if (__atomic_load_n(&exited, __ATOMIC_ACQUIRE))
        return;
    /* api: a begin inside a step ends that step first */
    if (tt.in_step)
        atl_tstep_close();
    struct tbuf *b = atl_tbuf_get();
    if (b) {
        /* whatever this thread enqueued outside its steps is not part of one */
        pthread_mutex_lock(&step_mu);
        own_ops(b);
        __atomic_store_n(&b->open, 1, __ATOMIC_RELAXED);
        atl_tbuf_lock(b);
        atl_tbuf_empty(b);
        b->oom = 0;
        __atomic_store_n(&b->krec_since, 0, __ATOMIC_RELAXED); /* its ops are gone */
        atl_tbuf_unlock(b);
        pthread_mutex_unlock(&step_mu);
    }
    tt.begin_ns = atl_chrome_on ? atl_chrome_now() : 0;
    snprintf(tt.step, sizeof tt.step, "%s", name && *name ? name : "step");
    tt.in_step = 1;
    __atomic_add_fetch(&recording, 1, __ATOMIC_ACQ_REL);
}

void atl_tstep_close(void)
{
    if (__atomic_load_n(&exited, __ATOMIC_ACQUIRE) || !tt.in_step)
        return;
    tt.in_step = 0;
    atl_tstep_end(tt.step, atl_thr.trace_buf, ATL_TAKE_LENT, 0, tt.begin_ns);
    if (atl_thr.trace_buf)
        __atomic_store_n(&atl_thr.trace_buf->open, 0, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&recording, 1, __ATOMIC_ACQ_REL);
}

void atl_tstep_recording_add(int n)
{
    __atomic_add_fetch(&recording, n, __ATOMIC_ACQ_REL);
}

void atl_tstep_sync(const char *name, enum atl_take take, uint64_t stream)
{
    atl_tstep_end(name, atl_tbuf_get(), take, stream, tt.begin_ns);
    if (atl_chrome_on)
        tt.begin_ns = atl_chrome_now(); /* the thread's next step opens here */
}

void atl_tstep_captured(void)
{
    if (atl_exit_lock(&step_mu, "the step trace's capture") != 0)
        return;
    struct atl_step s;
    atl_step_init(&s, "capture");
    struct tbuf *b = atl_tbuf_capture();
    atl_tbuf_lock(b);
    /* the buffer's arrays, as they are; it starts afresh at the next capture */
    s.ops = b->ops, s.nops = b->nops, s.capops = b->cap;
    s.bytes = b->bytes, s.nbytes = b->nbytes, s.capbytes = b->capbytes;
    b->ops = NULL, b->cap = 0, b->bytes = NULL, b->capbytes = 0;
    atl_tbuf_empty(b);
    b->oom = 0;
    since_taken(b);
    atl_tbuf_held_note(b);
    atl_tbuf_unlock(b);
    if (!s.nops) {
        atl_step_free(&s);
        since_done();
        pthread_mutex_unlock(&step_mu);
        return;
    }
    harvest_one_stream = 0;
    order_by_stream(&s);
    s.index = __atomic_load_n(&step_count, __ATOMIC_RELAXED); /* the step it came after */
    s.stream = s.ops[0].stream;
    thread_label(atl_thr.trace_buf, s.thread);
    s.seqmark = atl_ledger_seq_peek();
    if (atl_ledger_on)
        resolve_pointers(&s, NULL);
    name_ops(&s);
    /* the latest eager step of its shape, of any kind */
    const uint64_t shape = atl_step_shape(&s);
    const struct atl_step *eager = NULL;
    int held = -1;
    for (int i = 0; i < nnames; i++) {
        atl_spin_lock(&names[i].busy);
        for (int j = 0; j < ATL_KIND_SHAPES; j++) {
            const struct atl_shaped *sl = &names[i].k.slot[j];
            if (sl->shape == shape && sl->step.ops && (!eager || sl->step.index > eager->index))
                eager = &sl->step, held = i;
        }
        atl_spin_unlock(&names[i].busy);
    }
    struct atl_diff_opts o = {
        .max_lines = (unsigned)atl_cfg.diff_max,
        .ignore = &ignore_list,
        .where = where,
        .pointers = (int)atl_cfg.diff_pointers,
        .residue = (int)atl_cfg.diff_residue,
        .host_addr = atl_host_addr,
        .found = diff_found,
    };
    atl_series_opts(&series, &o);
    struct atl_step drop;
    /* the eager step's kind stays locked while it is read (fast_step renumbers it) */
    if (held >= 0)
        atl_spin_lock(&names[held].busy);
    hold_kernels(&s, 1);
    atl_series_capture(&series, &s, eager, &o, &drop);
    diff_told();
    if (held >= 0)
        atl_spin_unlock(&names[held].busy);
    hold_kernels(&drop, 0);
    atl_step_free(&drop);
    kept_note();
    since_done();
    pthread_mutex_unlock(&step_mu);
}

/* Under step_mu (a capture begins): every thread's ops go. */
void atl_tstep_drop(void)
{
    pthread_mutex_lock(&step_mu);
    harvest(NULL, NULL, ATL_TAKE_NONE, 0);
    since_done();
    pthread_mutex_unlock(&step_mu);
}

void atl_tstep_init(int capture_steps)
{
    captures = capture_steps;
    atl_series_init(&series, &stats, log_line_cb, NULL);
    atl_krec_set_holders(holders_low);
    /* "another buffer" says whether the buffer it replaces was freed, and where */
    atl_ledger_keep_freed((int)atl_cfg.stack_depth);
    atl_ignore_parse(&ignore_list, atl_cfg.diff_ignore);
    if (atl_cfg.trace_file)
        json = atl_report_stream("ATLAS_TRACE_FILE", atl_cfg.trace_file, "no JSON lines");
    if (json)
        atl_trace_write_header(json); /* the format and its version, once */
    if (atl_cfg.chrome_trace && atl_chrome_open(atl_cfg.chrome_trace) == 0)
        tt.begin_ns =
            atl_chrome_now(); /* the initialising thread's; others' start at 0 */
}

void atl_tstep_counts(uint64_t *steps, uint64_t *differ)
{
    *steps = stats.steps;
    *differ = stats.compared - stats.identical - quiet_steps;
}

void atl_tstep_exit(void (*hints)(void))
{
    __atomic_store_n(&exited, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&recording, 0, __ATOMIC_RELEASE);
    if (atl_exit_lock(&step_mu, "the trace summary") != 0)
        return;
    hints();
    /* the steps fast_step ended (identical ones) */
    for (struct tbuf *b = atl_tbuf_first(); b; b = atl_tbuf_next(b)) {
        uint64_t f = __atomic_load_n(&b->fast_steps, __ATOMIC_RELAXED);
        stats.steps += f, stats.compared += f, stats.identical += f;
        stats.quiet += __atomic_load_n(&b->fast_quiet, __ATOMIC_RELAXED);
        __atomic_store_n(&b->fast_steps, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&b->fast_quiet, 0, __ATOMIC_RELAXED);
    }
    /* what was held back: folded runs, new shapes; then the shape counts */
    struct atl_diff_opts o = {.line = log_line_cb};
    atl_series_opts(&series, &o);
    for (int i = 0; i < nnames; i++)
        atl_series_flush_kind(&series, &names[i].k, &o);
    atl_series_done(&series, &o);
    /* the summary's hints as the user would type them (--diff-warmup under atlas-trace) */
    char warm[64], ptrs[64], res[64], quiet[140];
    stats.warmup_how = atl_hint_setting("ATLAS_DIFF_WARMUP", "1", warm, sizeof warm);
    snprintf(quiet, sizeof quiet, "%s %s",
             atl_hint_setting("ATLAS_DIFF_POINTERS", "all", ptrs, sizeof ptrs),
             atl_hint_setting("ATLAS_DIFF_RESIDUE", "all", res, sizeof res));
    stats.quiet_how = quiet;
    atl_diff_summary(&stats, summary_line_cb, NULL);
    if (json) {
        fclose(json);
        __atomic_store_n(&json, NULL, __ATOMIC_RELAXED); /* fast_step reads it without step_mu */
    }
    atl_chrome_close();
    pthread_mutex_unlock(&step_mu);
}
