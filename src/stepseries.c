/*
 * The steps of a run by kind and shape (see stepseries.h): the reference a
 * step is compared with, new shapes announced and folded, captures against
 * eager steps, and the shape counts of the summary.
 */
#include "stepseries.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table of shapes seen --------------------------------------------------- */

/* The key of a step's (kind, shape): its name, thread and stream with the shape. */
static uint64_t shape_key(const struct atl_step *s)
{
    uint64_t h = atl_hash_bytes(0x6b1d, s->name, strnlen(s->name, sizeof s->name));
    h = atl_hash_bytes(h, s->thread, strnlen(s->thread, sizeof s->thread));
    h = atl_hash_mix(atl_hash_mix(h, s->stream), atl_step_shape(s));
    return h ? h : 1;
}

/* The entry of key (NULL: not seen; `add` makes it). A run with more than
 * a million shapes stops counting new ones (they read as new each time). */
static struct atl_shape_count *shape_entry(struct atl_series *ser, uint64_t key, int add)
{
    if (add && (ser->n + 1) * 2 > ser->tabcap && ser->tabcap < (1u << 21)) {
        size_t nc = ser->tabcap ? ser->tabcap * 2 : 256;
        struct atl_shape_count *nt = calloc(nc, sizeof *nt);
        if (nt) {
            for (size_t i = 0; i < ser->tabcap; i++)
                if (ser->tab[i].key) {
                    size_t j = (size_t)ser->tab[i].key & (nc - 1);
                    while (nt[j].key)
                        j = (j + 1) & (nc - 1);
                    nt[j] = ser->tab[i];
                }
            free(ser->tab);
            ser->tab = nt, ser->tabcap = nc;
        }
    }
    if (!ser->tabcap)
        return NULL;
    size_t i = (size_t)key & (ser->tabcap - 1);
    while (ser->tab[i].key && ser->tab[i].key != key)
        i = (i + 1) & (ser->tabcap - 1);
    if (ser->tab[i].key == key)
        return &ser->tab[i];
    if (!add || (ser->n + 1) * 2 > ser->tabcap)
        return NULL;
    ser->tab[i].key = key;
    ser->n++;
    return &ser->tab[i];
}

/* A slot's steps not yet counted go into the table. */
static void count_slot(struct atl_series *ser, struct atl_shaped *sl)
{
    if (!sl->shape || !sl->steps || !sl->step.ops)
        return;
    struct atl_shape_count *c = shape_entry(ser, shape_key(&sl->step), 1);
    if (c) {
        c->steps += sl->steps;
        c->nops = sl->step.nops;
        /* a copy, cut to fit (a slot is counted at every step that takes it over) */
        size_t l = strnlen(sl->step.name, sizeof c->name - 1);
        memcpy(c->name, sl->step.name, l);
        c->name[l] = '\0';
    }
    sl->steps = 0;
}

/* ---- lines ----------------------------------------------------------------------- */

static void news_flush(struct atl_series *ser)
{
    if (!ser->news.n)
        return;
    if (ser->news.n == 1) {
        ser->line(ser->ctx, ser->news.one);
    } else {
        char line[400], ops[64];
        if (ser->news.lo == ser->news.hi)
            snprintf(ops, sizeof ops, "%zu op%s each", ser->news.lo, ser->news.lo == 1 ? "" : "s");
        else
            snprintf(ops, sizeof ops, "%zu to %zu ops", ser->news.lo, ser->news.hi);
        if (ser->news.names)
            snprintf(line, sizeof line,
                     "steps %" PRIu64 "-%" PRIu64 ": %" PRIu64
                     " steps of new shapes (of several kinds), %s; %zu shapes so far",
                     ser->news.first, ser->news.last, ser->news.n, ops, ser->n);
        else
            snprintf(line, sizeof line,
                     "steps %" PRIu64 "-%" PRIu64 " (\"%s\"): %" PRIu64
                     " steps of new shapes, %s; %zu shapes so far",
                     ser->news.first, ser->news.last, ser->news.name, ser->news.n, ops, ser->n);
        ser->line(ser->ctx, line);
    }
    ser->news.n = 0;
}

/* Every line a report prints goes through here: the new shapes held back
 * come first. */
static void series_line(void *ctx, const char *text)
{
    struct atl_series *ser = ctx;
    news_flush(ser);
    ser->line(ser->ctx, text);
}

void atl_series_opts(struct atl_series *ser, struct atl_diff_opts *o)
{
    o->line = series_line;
    o->ctx = ser;
}

/* " (thread T, stream 0x..)" when reports name them */
static void where_of(const struct atl_step *s, const struct atl_diff_opts *o, char *buf, size_t len)
{
    if (o->where && s->stream)
        snprintf(buf, len, " (thread %s, stream 0x%" PRIx64 ")", s->thread, s->stream);
    else if (o->where)
        snprintf(buf, len, " (thread %s)", s->thread);
    else
        buf[0] = '\0';
}

/* Step s of kind k has a shape k has not had: one line (held back, and
 * folded with the next ones while nothing else is printed). */
static void announce(struct atl_series *ser, struct atl_kind *k, const struct atl_step *s,
                     const struct atl_diff_opts *o)
{
    struct atl_shaped *last = atl_kind_recent(k);
    if (!last || !last->step.ops)
        return; /* the kind's first step: nothing to say */
    char where[96], delta[512];
    where_of(s, o, where, sizeof where);
    atl_shape_delta(&last->step, s, delta, sizeof delta);
    if (ser->news.n && (strcmp(ser->news.name, s->name) != 0))
        ser->news.names = 1;
    if (!ser->news.n++) {
        ser->news.first = s->index;
        ser->news.lo = ser->news.hi = s->nops;
        ser->news.names = 0;
        snprintf(ser->news.name, sizeof ser->news.name, "%s", s->name);
    }
    ser->news.last = s->index;
    if (s->nops < ser->news.lo)
        ser->news.lo = s->nops;
    if (s->nops > ser->news.hi)
        ser->news.hi = s->nops;
    atl_fmt(ser->news.one, sizeof ser->news.one,
            "step \"%s\"%s #%" PRIu64 " (step %" PRIu64 "): a new shape, %zu op%s (#%" PRIu64
            " had %zu: %s); %zu shapes so far",
            s->name, where, s->nth, s->index, s->nops, s->nops == 1 ? "" : "s", last->step.nth,
            last->step.nops, delta, ser->n);
}

/* ---- kinds -------------------------------------------------------------------------- */

void atl_series_init(struct atl_series *ser, struct atl_diff_stats *st,
                     void (*line)(void *, const char *), void *ctx)
{
    memset(ser, 0, sizeof *ser);
    ser->st = st, ser->line = line, ser->ctx = ctx;
}

void atl_series_free(struct atl_series *ser)
{
    for (int i = 0; i < ATL_SERIES_CAPTURES; i++) {
        atl_step_free(&ser->caps[i].step);
        atl_fold_free(&ser->caps[i].fold);
    }
    free(ser->tab);
    memset(ser, 0, sizeof *ser);
}

void atl_kind_init(struct atl_kind *k)
{
    memset(k, 0, sizeof *k);
    k->recent = -1;
}

void atl_kind_free(struct atl_kind *k)
{
    for (int i = 0; i < ATL_KIND_SHAPES; i++) {
        atl_step_free(&k->slot[i].step);
        atl_fold_free(&k->slot[i].fold);
    }
    atl_kind_init(k);
}

static struct atl_shaped *find_slot(struct atl_shaped *sl, int n, uint64_t shape)
{
    for (int i = 0; i < n; i++)
        if (sl[i].shape == shape)
            return &sl[i];
    return NULL;
}

/* A slot for a new shape: a free one, or the least recently used one (its
 * run printed, its steps counted, its step into *drop). */
static struct atl_shaped *take_slot(struct atl_series *ser, struct atl_shaped *sl, int n, int keep,
                                    const struct atl_diff_opts *o, struct atl_step *drop)
{
    struct atl_shaped *lru = NULL;
    for (int i = 0; i < n; i++) {
        if (!sl[i].shape)
            return &sl[i];
        if (i != keep && (!lru || sl[i].used < lru->used))
            lru = &sl[i];
    }
    atl_fold_flush(&lru->fold, o);
    count_slot(ser, lru);
    *drop = lru->step;
    atl_fold_free(&lru->fold);
    memset(lru, 0, sizeof *lru);
    return lru;
}

struct atl_shaped *atl_kind_shape(struct atl_kind *k, uint64_t shape)
{
    return find_slot(k->slot, ATL_KIND_SHAPES, shape);
}

void atl_series_same(struct atl_series *ser, struct atl_kind *k, struct atl_shaped *ref,
                     const struct atl_diff_opts *o)
{
    ref->steps++;
    ref->used = ++ser->clock;
    k->recent = (int)(ref - k->slot);
    atl_fold_idle(&ref->fold, o); /* identical steps past a run's period end it */
    atl_fold_settle(&ref->fold);
}

size_t atl_series_compare(struct atl_series *ser, struct atl_kind *k, const struct atl_step *s,
                          const struct atl_diff_opts *o, struct atl_shaped **ref)
{
    uint64_t shape = atl_step_shape(s);
    *ref = find_slot(k->slot, ATL_KIND_SHAPES, shape);
    if (*ref && (*ref)->step.ops) {
        /* warm-up holds reports back only in a kind whose work keeps changing shape: the
         * steps of a plain loop are reported from its second on */
        struct atl_diff_opts wo = *o;
        wo.warmup = o->warmup && k->shapes >= ATL_KIND_CHURN;
        return atl_step_compare(&(*ref)->step, s, &wo, ser->st, &(*ref)->fold);
    }
    /* a shape the kind had before (its slot since reused) is no news */
    int fresh = !*ref && !shape_entry(ser, shape_key(s), 0);
    shape_entry(ser, shape_key(s), 1);
    if (fresh && k->shapes < ATL_KIND_CHURN)
        k->shapes++;
    if (fresh)
        announce(ser, k, s, o);
    return 0;
}

size_t atl_series_compare_sparse(struct atl_series *ser, struct atl_kind *k, struct atl_shaped *ref,
                                 const struct atl_step *a, const struct atl_step *s,
                                 const struct atl_diff_opts *o)
{
    struct atl_diff_opts wo = *o; /* as atl_series_compare */
    wo.warmup = o->warmup && k->shapes >= ATL_KIND_CHURN;
    return atl_step_compare(a, s, &wo, ser->st, &ref->fold);
}

void atl_series_kept(struct atl_series *ser, struct atl_kind *k, struct atl_shaped *ref)
{
    ref->steps++;
    ref->used = ++ser->clock;
    k->recent = (int)(ref - k->slot);
}

void atl_series_keep(struct atl_series *ser, struct atl_kind *k, struct atl_shaped *ref,
                     struct atl_step *s, const struct atl_diff_opts *o, struct atl_step *drop)
{
    memset(drop, 0, sizeof *drop);
    if (ref) {
        *drop = ref->step;
    } else {
        ref = take_slot(ser, k->slot, ATL_KIND_SHAPES, k->recent, o, drop);
        ref->shape = atl_step_shape(s);
    }
    ref->step = *s;
    ref->steps++;
    ref->used = ++ser->clock;
    k->recent = (int)(ref - k->slot);
    memset(s, 0, sizeof *s);
}

/* ---- eager against captured -------------------------------------------------------- */

size_t atl_series_capture(struct atl_series *ser, struct atl_step *cap,
                          const struct atl_step *eager, const struct atl_diff_opts *o,
                          struct atl_step *drop)
{
    memset(drop, 0, sizeof *drop);
    uint64_t shape = atl_step_shape(cap);
    struct atl_shaped *sl = find_slot(ser->caps, ATL_SERIES_CAPTURES, shape);
    if (sl) {
        *drop = sl->step;
        atl_fold_flush(&sl->fold, o);
    } else {
        sl = take_slot(ser, ser->caps, ATL_SERIES_CAPTURES, -1, o, drop);
        sl->shape = shape;
    }
    sl->step = *cap;
    sl->nth = ++ser->ncaptures;
    sl->used = ++ser->clock;
    sl->checked = 0;
    memset(cap, 0, sizeof *cap);
    if (!eager)
        return 0;
    char head[512], when[48];
    snprintf(head, sizeof head,
             "capture #%" PRIu64 " (after step %" PRIu64 ") has the shape of step \"%s\" #%" PRIu64
             " (step %" PRIu64 ") and other values: %zu op%s",
             sl->nth, sl->step.index, eager->name, eager->nth, eager->index, eager->nops,
             eager->nops == 1 ? "" : "s");
    snprintf(when, sizeof when, "in step %" PRIu64, eager->index);
    struct atl_diff_opts co = *o;
    co.captured = when, co.header = head, co.replay = NULL, co.warmup = 0;
    sl->checked = eager->index;
    return atl_step_compare(&sl->step, eager, &co, NULL, &sl->fold);
}

size_t atl_series_eager(struct atl_series *ser, const struct atl_step *s, int same, uint64_t was,
                        const struct atl_diff_opts *o)
{
    if (!ser->ncaptures)
        return 0;
    struct atl_shaped *sl = find_slot(ser->caps, ATL_SERIES_CAPTURES, atl_step_shape(s));
    if (!sl || !sl->step.ops)
        return 0;
    sl->used = ++ser->clock;
    char head[512];
    snprintf(head, sizeof head,
             "step \"%s\" #%" PRIu64 " (step %" PRIu64 ") has the shape of capture #%" PRIu64
             " (after step %" PRIu64 ") and other values: %zu op%s",
             s->name, s->nth, s->index, sl->nth, sl->step.index, s->nops, s->nops == 1 ? "" : "s");
    if (same && sl->checked == was) {
        /* the step compared last time again: the same answer, a repeat folded */
        sl->checked = s->index;
        size_t n = atl_fold_again(&sl->fold, s->index);
        if (n && o->found) {
            struct atl_diff_found f = {.a = &sl->step, .b = s, .header = head, .n = n, .folded = 1};
            o->found(o->found_ctx, &f);
        }
        return n;
    }
    struct atl_diff_opts co = *o;
    co.captured = "now", co.header = head, co.replay = NULL, co.warmup = 0;
    sl->checked = s->index;
    return atl_step_compare(&sl->step, s, &co, NULL, &sl->fold);
}

/* ---- the end --------------------------------------------------------------------------- */

void atl_series_flush_kind(struct atl_series *ser, struct atl_kind *k,
                           const struct atl_diff_opts *o)
{
    for (int i = 0; i < ATL_KIND_SHAPES; i++) {
        atl_fold_flush(&k->slot[i].fold, o);
        count_slot(ser, &k->slot[i]);
    }
}

static int by_steps(const void *x, const void *y)
{
    const struct atl_shape_count *a = x, *b = y;
    return a->steps < b->steps ? 1 : a->steps > b->steps ? -1 : 0;
}

void atl_series_done(struct atl_series *ser, const struct atl_diff_opts *o)
{
    for (int i = 0; i < ATL_SERIES_CAPTURES; i++)
        atl_fold_flush(&ser->caps[i].fold, o);
    news_flush(ser);
    if (!ser->st)
        return;
    ser->st->shapes = ser->n;
    ser->st->per_shape[0] = '\0';
    if (ser->n < 2)
        return;
    /* the most common shapes by name, then how many more */
    struct atl_shape_count *all = malloc(ser->n * sizeof *all);
    if (!all)
        return;
    size_t n = 0;
    for (size_t i = 0; i < ser->tabcap; i++)
        if (ser->tab[i].key)
            all[n++] = ser->tab[i];
    qsort(all, n, sizeof *all, by_steps);
    char *p = ser->st->per_shape;
    size_t len = sizeof ser->st->per_shape, l = 0;
    size_t shown = 0;
    for (; shown < n && shown < 4 && all[shown].steps > 1 && l < len; shown++)
        l +=
            (size_t)snprintf(p + l, len - l, "%s%" PRIu64 " (\"%.40s\", %zu op%s)",
                             shown ? ", " : "", all[shown].steps, all[shown].name, all[shown].nops,
                             all[shown].nops == 1 ? "" : "s");
    if (shown < n && l < len) {
        uint64_t rest = 0;
        for (size_t i = shown; i < n; i++)
            rest += all[i].steps;
        snprintf(p + l, len - l, "%s%" PRIu64 " in %zu other shape%s", shown ? ", " : "", rest,
                 n - shown, n - shown == 1 ? "" : "s");
    }
    free(all);
}
