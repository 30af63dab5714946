/*
 * atlas-diff on one run or two (diff-runs.h).
 *
 * Each file is read on a thread of its own and handed over a step at a
 * time: two 1M-op files were read whole first (455 MB of steps, and as much
 * time in page faults as in parsing), now each side holds the step being
 * parsed, the one handed over, and the steps kept for comparison.
 *
 * One run: each step is compared with the last step of its kind (name,
 * thread, stream) and shape, as live (src/stepseries.h). Two runs (as
 * --ranks): the n-th step of each kind (name and thread: stream handles are
 * addresses of each process) in A is compared with the n-th in B, and when
 * their shapes differ one line says where they part (a rank that took
 * another branch), not a diff op by op. Steps are paired as they come; a
 * step whose partner has not come yet waits, so two runs that ran alike hold
 * one step of each at a time. Steps left without a partner are named at the
 * end, one line per kind and shape.
 */
#include "diff-runs.h"

#include "stepseries.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define mix atl_hash_mix

/* ---- a file, a step at a time ------------------------------------------------------ */

/* Steps are handed over in batches (a thread woken per step cost more than
 * reading a small one: 40,000 one-op steps took 0.8 s of system time), of at
 * most QSTEPS steps and QOPS ops (a large step goes alone). */
#define QSTEPS 64
#define QOPS ((size_t)1 << 16)

struct chan {
    const char *path;
    atl_read_fn read;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct atl_step q[QSTEPS]; /* handed over, not yet taken */
    unsigned qhead, qn;
    size_t qops;
    int rwait, cwait; /* the reader waits for room, the comparison for steps */
    int done, stop;
    /* The arrays of steps the comparison is done with, for the reader's
     * next steps: a step's arrays allocated, grown and faulted in (zeroed by
     * the kernel) cost as much as parsing it. The pipe is the steps handed
     * over and not yet done with (a step waiting for its partner included);
     * a reference the comparison keeps leaves it. Once the pipe holds QOPS
     * ops, the reader begins its next step only in a spare's arrays, or when
     * the comparison waits for it: two runs of large steps are read in about
     * one step's memory for each. */
    struct atl_step spare[2];
    int nspare;
    size_t pipesteps, pipeops;
    int rc;
    char why[256];
};

static int chan_put(void *ctx, struct atl_step *s)
{
    struct chan *c = ctx;
    pthread_mutex_lock(&c->mu);
    while ((c->qn == QSTEPS || (c->qn && c->qops + s->nops > QOPS)) && !c->stop) {
        c->rwait = 1;
        pthread_cond_wait(&c->cv, &c->mu);
    }
    int stop = c->stop;
    if (!stop) {
        c->q[(c->qhead + c->qn++) % QSTEPS] = *s;
        c->qops += s->nops;
        c->pipesteps++, c->pipeops += s->nops;
        /* the comparison is woken for a batch, not for each step */
        if (c->cwait && (c->qn >= QSTEPS / 2 || c->qops >= QOPS / 2)) {
            c->cwait = 0;
            pthread_cond_broadcast(&c->cv);
        }
    }
    pthread_mutex_unlock(&c->mu);
    if (stop)
        atl_step_free(s);
    return stop ? -1 : 0;
}

/* The reader begins a step: in a spare's arrays, if there is one (and once
 * the pipe is full, only then). */
static void chan_fresh(void *ctx, struct atl_step *s)
{
    struct chan *c = ctx;
    pthread_mutex_lock(&c->mu);
    while (c->pipesteps && c->pipeops >= QOPS && !c->nspare && !c->cwait && !c->stop) {
        c->rwait = 1;
        if (c->cwait) { /* what is there is all it gets */
            c->cwait = 0;
            pthread_cond_broadcast(&c->cv);
        }
        pthread_cond_wait(&c->cv, &c->mu);
    }
    if (c->nspare)
        *s = c->spare[--c->nspare];
    pthread_mutex_unlock(&c->mu);
}

/* Under c->mu: the pipe lost a step of n ops; a reader waiting for room goes on. */
static void pipe_out(struct chan *c, size_t n)
{
    c->pipesteps--, c->pipeops -= n;
    if (c->rwait) {
        c->rwait = 0;
        pthread_cond_broadcast(&c->cv);
    }
}

/* The comparison keeps step s of c: it leaves the pipe. */
static void chan_keep(struct chan *c, const struct atl_step *s)
{
    pthread_mutex_lock(&c->mu);
    pipe_out(c, s->nops);
    pthread_mutex_unlock(&c->mu);
}

/* A step the comparison is done with (`inpipe`: one of the pipe, not one it
 * kept): freed, its arrays kept for the reader. */
static void chan_recycle(struct chan *c, struct atl_step *s, int inpipe)
{
    size_t n = s->nops;
    struct atl_step keep;
    atl_step_init(&keep, "");
    keep.ops = s->ops, keep.capops = s->capops;
    keep.bytes = s->bytes, keep.capbytes = s->capbytes;
    keep.ann = s->ann, keep.capann = s->capann;
    s->ops = NULL, s->bytes = NULL, s->ann = NULL;
    atl_step_free(s);
    pthread_mutex_lock(&c->mu);
    int kept = c->nspare < 2 && !c->stop && keep.ops;
    if (kept)
        c->spare[c->nspare++] = keep;
    if (inpipe)
        pipe_out(c, n);
    else if (kept && c->rwait) {
        c->rwait = 0;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (!kept)
        atl_step_free(&keep);
}

static void *chan_main(void *arg)
{
    struct chan *c = arg;
    int rc = c->read(c->path, chan_put, chan_fresh, c, c->why, sizeof c->why);
    pthread_mutex_lock(&c->mu);
    c->rc = rc;
    c->done = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void chan_open(struct chan *c, const char *path, atl_read_fn read)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->path = path, c->read = read;
    if (pthread_create(&c->th, NULL, chan_main, c) == 0) {
        c->started = 1;
    } else {
        c->rc = -1, c->done = 1;
        snprintf(c->why, sizeof c->why, "cannot start a thread to read it");
    }
}

/* The next step (1), or 0 at the end of the file or when reading failed. */
static int chan_get(struct chan *c, struct atl_step *s)
{
    pthread_mutex_lock(&c->mu);
    while (!c->qn && !c->done) {
        c->cwait = 1;
        if (c->rwait) { /* a reader that waits for room has none to make */
            c->rwait = 0;
            pthread_cond_broadcast(&c->cv);
        }
        pthread_cond_wait(&c->cv, &c->mu);
    }
    int got = c->qn != 0;
    if (got) {
        *s = c->q[c->qhead];
        c->qhead = (c->qhead + 1) % QSTEPS;
        c->qn--;
        c->qops -= s->nops;
        if (c->rwait && c->qn <= QSTEPS / 2) {
            c->rwait = 0;
            pthread_cond_broadcast(&c->cv);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return got;
}

/* Failed: reading ended with an error (the file's reader is done). */
static int chan_failed(struct chan *c)
{
    pthread_mutex_lock(&c->mu);
    int failed = c->done && c->rc != 0;
    pthread_mutex_unlock(&c->mu);
    return failed;
}

/* Stops the reader (at its next step) and waits for it. */
static void chan_close(struct chan *c)
{
    pthread_mutex_lock(&c->mu);
    int was_done = c->done;
    c->stop = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (c->started)
        pthread_join(c->th, NULL);
    if (!was_done)
        c->rc = 0, c->why[0] = '\0'; /* stopped by us: not the file's trouble */
    while (c->qn) {
        atl_step_free(&c->q[c->qhead]);
        c->qhead = (c->qhead + 1) % QSTEPS, c->qn--;
    }
    while (c->nspare)
        atl_step_free(&c->spare[--c->nspare]);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
}

/* ---- the report, held until both files were read -------------------------------- */

struct out {
    char *p;
    size_t n, cap;
    int oom;
};

static void out_add(void *ctx, const char *text)
{
    struct out *o = ctx;
    size_t l = strlen(text) + 1;
    if (atl_grow((void **)&o->p, &o->cap, o->n + l, 1, 4096)) {
        o->oom = 1;
        return;
    }
    memcpy(o->p + o->n, text, l);
    o->n += l;
}

/* ---- a map of 64-bit keys (never 0), linear probing ---------------------------------- */

struct map {
    struct ent {
        uint64_t key;
        void *v;
    } * e;
    size_t cap, n;
};

static uint64_t nz(uint64_t k)
{
    return k ? k : 1;
}

/* The entry of key, NULL when absent (add: made, v NULL; NULL out of memory). */
static struct ent *map_at(struct map *m, uint64_t key, int add)
{
    if (add && (m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? 2 * m->cap : 64;
        struct ent *ne = calloc(nc, sizeof *ne);
        if (!ne)
            return NULL;
        for (size_t i = 0; i < m->cap; i++)
            if (m->e[i].key) {
                size_t j = (size_t)m->e[i].key & (nc - 1);
                while (ne[j].key)
                    j = (j + 1) & (nc - 1);
                ne[j] = m->e[i];
            }
        free(m->e);
        m->e = ne, m->cap = nc;
    }
    if (!m->cap)
        return NULL;
    size_t i = (size_t)key & (m->cap - 1);
    while (m->e[i].key && m->e[i].key != key)
        i = (i + 1) & (m->cap - 1);
    if (m->e[i].key == key)
        return &m->e[i];
    if (!add)
        return NULL;
    m->e[i].key = key, m->e[i].v = NULL;
    m->n++;
    return &m->e[i];
}

/* Removes entry e (backward shift: no tombstones). */
static void map_del(struct map *m, struct ent *e)
{
    size_t i = (size_t)(e - m->e), j = i;
    for (;;) {
        m->e[i].key = 0, m->e[i].v = NULL;
        for (;;) {
            j = (j + 1) & (m->cap - 1);
            if (!m->e[j].key) {
                m->n--;
                return;
            }
            size_t k = (size_t)m->e[j].key & (m->cap - 1);
            if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
                continue; /* its home is between: it stays */
            break;
        }
        m->e[i] = m->e[j];
        i = j;
    }
}

/* A count kept in a map entry: the new value. */
static uint64_t map_count(struct map *m, uint64_t key)
{
    struct ent *e = map_at(m, key, 1);
    if (!e)
        return 1;
    e->v = (void *)((uintptr_t)e->v + 1);
    return (uint64_t)(uintptr_t)e->v;
}

static uint64_t str_key(uint64_t h, const char *s, size_t max)
{
    return atl_hash_bytes(h, s, strnlen(s, max));
}

/* name and thread: a kind across two runs */
static uint64_t kind_key(const struct atl_step *s)
{
    return str_key(str_key(0x4b1d, s->name, sizeof s->name), s->thread, sizeof s->thread);
}

/* ---- one run ---------------------------------------------------------------------------- */

struct kind {
    char name[64], thread[24];
    uint64_t stream, nth;
    struct atl_kind k;
};

static int one_run(struct chan *ca, const struct atl_diff_opts *base, struct atl_diff_stats *st,
                   struct out *out)
{
    struct atl_series ser;
    atl_series_init(&ser, st, out_add, out);
    struct map kinds = {0};
    size_t found = 0;
    int where = base->where, trouble = 0;
    char thread0[24] = "";
    uint64_t stream0 = 0;
    struct atl_step s;
    while (chan_get(ca, &s)) {
        st->steps++;
        if (st->steps == 1)
            memcpy(thread0, s.thread, sizeof thread0), stream0 = s.stream;
        else if (strcmp(thread0, s.thread) != 0 || stream0 != s.stream)
            where = 1; /* more than one thread or stream: reports name them */
        uint64_t key = nz(mix(kind_key(&s), s.stream));
        struct ent *e = map_at(&kinds, key, 1);
        struct kind *k = e ? e->v : NULL;
        if (e && !k && (k = calloc(1, sizeof *k))) {
            e->v = k;
            memcpy(k->name, s.name, sizeof k->name);
            memcpy(k->thread, s.thread, sizeof k->thread);
            k->stream = s.stream;
            atl_kind_init(&k->k);
        }
        if (!k) {
            atl_step_free(&s);
            trouble = 1;
            break;
        }
        s.nth = ++k->nth;
        struct atl_diff_opts o = *base;
        o.where = where;
        atl_series_opts(&ser, &o);
        struct atl_shaped *ref;
        found += atl_series_compare(&ser, &k->k, &s, &o, &ref) != 0;
        struct atl_step drop;
        atl_series_keep(&ser, &k->k, ref, &s, &o, &drop);
        chan_keep(ca, &k->k.slot[k->k.recent].step);
        chan_recycle(ca, &drop, 0);
    }
    struct atl_diff_opts o = *base;
    o.where = where;
    atl_series_opts(&ser, &o);
    for (size_t i = 0; i < kinds.cap; i++)
        if (kinds.e[i].v)
            atl_series_flush_kind(&ser, &((struct kind *)kinds.e[i].v)->k, &o);
    atl_series_done(&ser, &o);
    for (size_t i = 0; i < kinds.cap; i++)
        if (kinds.e[i].v) {
            atl_kind_free(&((struct kind *)kinds.e[i].v)->k);
            free(kinds.e[i].v);
        }
    free(kinds.e);
    atl_series_free(&ser);
    return trouble ? -1 : found != 0;
}

/* ---- two runs --------------------------------------------------------------------------- */

/* A step waiting for its partner from the other run. */
struct wait {
    int side;
    uint64_t group; /* kind and shape: steps only one run has are named by it */
    struct atl_step s;
};

struct two {
    const char *path[2];
    struct map kinds[2]; /* name, thread: occurrences (each side's #N) */
    struct map waiting;  /* name, thread, occurrence: a struct wait */
    struct map folds;    /* name, thread, shape: a struct atl_fold */
    size_t found;
    int trouble;
};

static void two_step(struct two *t, struct chan *c, int side, struct atl_step *s,
                     struct atl_diff_opts *o, struct atl_diff_stats *st)
{
    st->steps++;
    if (side)
        st->steps_b++;
    else
        st->steps_a++;
    uint64_t kk = nz(kind_key(s));
    s->nth = map_count(&t->kinds[side], kk);
    uint64_t group = nz(mix(kk, atl_step_shape(s)));
    struct ent *e = map_at(&t->waiting, nz(mix(kk, s->nth)), 1);
    if (!e) {
        t->trouble = 1;
        atl_step_free(s);
        return;
    }
    struct wait *w = e->v;
    if (!w) { /* the first of the pair: it waits */
        if (!(w = malloc(sizeof *w))) {
            map_del(&t->waiting, e);
            t->trouble = 1;
            atl_step_free(s);
            return;
        }
        *w = (struct wait){.side = side, .group = group, .s = *s};
        e->v = w; /* still in the pipe: its partner comes next, in a run like this one */
        return;
    }
    map_del(&t->waiting, e);
    struct atl_step *a = side ? &w->s : s, *b = side ? s : &w->s;
    struct ent *fe = map_at(&t->folds, group, 1);
    if (fe && !fe->v)
        fe->v = calloc(1, sizeof(struct atl_fold));
    t->found += atl_step_compare(a, b, o, st, fe ? fe->v : NULL) != 0;
    chan_recycle(&c[!side], &w->s, 1);
    chan_recycle(&c[side], s, 1);
    free(w);
}

struct only {
    int side;
    uint64_t group, first, last, index, n;
    size_t nops;
    char name[64];
};

static int by_index(const void *x, const void *y)
{
    const struct only *a = x, *b = y;
    return a->side != b->side ? a->side - b->side : a->index < b->index ? -1 : a->index > b->index;
}

/* The steps left without a partner: one line per run, kind and shape. */
static void two_leftovers(struct two *t, struct out *out)
{
    struct only *g = calloc(t->waiting.n + 1, sizeof *g);
    size_t ng = 0;
    if (!g) {
        t->trouble = 1;
        return;
    }
    for (size_t i = 0; i < t->waiting.cap; i++) {
        struct wait *w = t->waiting.e[i].v;
        if (!w)
            continue;
        size_t j = 0;
        while (j < ng && !(g[j].side == w->side && g[j].group == w->group))
            j++;
        if (j == ng) {
            g[ng++] = (struct only){.side = w->side,
                                    .group = w->group,
                                    .first = w->s.nth,
                                    .last = w->s.nth,
                                    .index = w->s.index,
                                    .nops = w->s.nops};
            memcpy(g[j].name, w->s.name, sizeof g[j].name);
        }
        g[j].n++;
        if (w->s.nth < g[j].first)
            g[j].first = w->s.nth;
        if (w->s.nth > g[j].last)
            g[j].last = w->s.nth;
        if (w->s.index < g[j].index)
            g[j].index = w->s.index;
        atl_step_free(&w->s);
        free(w);
        t->waiting.e[i].v = NULL;
    }
    qsort(g, ng, sizeof *g, by_index);
    for (size_t j = 0; j < ng; j++) {
        char line[512];
        if (g[j].n == 1)
            atl_fmt(line, sizeof line, "step \"%s\" #%" PRIu64 " is only in %s", g[j].name,
                    g[j].first, t->path[g[j].side]);
        else
            atl_fmt(line, sizeof line,
                    "steps \"%s\" #%" PRIu64 "-#%" PRIu64 " (%" PRIu64
                    " of one shape, %zu ops) are only in %s",
                    g[j].name, g[j].first, g[j].last, g[j].n, g[j].nops, t->path[g[j].side]);
        out_add(out, line);
        t->found++;
    }
    free(g);
}

static int two_runs(struct chan *c, const char *pa, const char *pb,
                    const struct atl_diff_opts *base, struct atl_diff_stats *st, struct out *out)
{
    struct two t = {.path = {pa, pb}};
    struct atl_diff_opts o = *base;
    o.line = out_add, o.ctx = out;
    o.shapes = 1; /* the n-th steps of a kind in two runs have one shape, or one line says not */
    /* which file is which, in each step's header and the summary */
    o.run_a = st->run_a = pa;
    o.run_b = st->run_b = pb;
    char thread0[24] = "";
    uint64_t stream0 = 0;
    int have[2] = {1, 1};
    struct atl_step s;
    /* a step of each in turn: two runs that ran alike pair at once */
    while ((have[0] || have[1]) && !t.trouble) {
        for (int side = 0; side < 2; side++) {
            if (!have[side] || !(have[side] = chan_get(&c[side], &s)))
                continue;
            if (side == 0 && !st->steps)
                memcpy(thread0, s.thread, sizeof thread0), stream0 = s.stream;
            else if (side == 0 && (strcmp(thread0, s.thread) != 0 || stream0 != s.stream))
                o.where = 1;
            two_step(&t, c, side, &s, &o, st);
        }
        if (chan_failed(&c[0]) || chan_failed(&c[1]))
            break;
    }
    two_leftovers(&t, out);
    for (size_t i = 0; i < t.folds.cap; i++)
        if (t.folds.e[i].v) {
            atl_fold_flush(t.folds.e[i].v, &o);
            atl_fold_free(t.folds.e[i].v);
            free(t.folds.e[i].v);
        }
    for (int side = 0; side < 2; side++)
        free(t.kinds[side].e);
    free(t.waiting.e), free(t.folds.e);
    return t.trouble ? -1 : t.found != 0;
}

int atl_diff_runs(const char *a, const char *b, atl_read_fn read, const struct atl_diff_opts *o,
                  void (*fail)(const char *path, const char *why))
{
    struct chan c[2];
    struct out out = {0};
    struct atl_diff_stats st;
    memset(&st, 0, sizeof st);
    st.warmup_how = "atlas-diff --warmup";
    st.quiet_how = "atlas-diff --pointers=all --residue=all";
    chan_open(&c[0], a, read);
    if (b)
        chan_open(&c[1], b, read);
    int rc = b ? two_runs(c, a, b, o, &st, &out) : one_run(&c[0], o, &st, &out);
    /* the summary goes with the report; trouble replaces both */
    struct atl_diff_opts so = *o;
    so.line = out_add, so.ctx = &out;
    atl_diff_summary(&st, so.line, so.ctx);
    chan_close(&c[0]);
    if (b)
        chan_close(&c[1]);
    int status = rc < 0 || out.oom ? 2 : rc;
    if (rc < 0 || out.oom)
        fail(a, "out of memory");
    for (int i = 0; i < (b ? 2 : 1) && status != 2; i++) {
        if (c[i].rc != 0) {
            fail(c[i].path, c[i].why);
            status = 2;
        } else if (c[i].why[0]) { /* read up to its last whole step: what was left out */
            fail(c[i].path, c[i].why);
        }
    }
    if (status != 2)
        for (size_t p = 0; p < out.n; p += strlen(out.p + p) + 1)
            o->line(o->ctx, out.p + p);
    free(out.p);
    return status;
}
