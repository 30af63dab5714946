/*
 * The steps of a run by kind and shape: which step a step is compared with.
 *
 * A step is compared with the last step of its kind (name, thread, stream)
 * and its shape (the sequence of its ops' kinds and kernels, not their
 * values: atl_step_shape), not with whatever step came before it: XLA's
 * autotuning and a framework's set-up each synchronise after work of their
 * own, and comparing each with the one before was thousands of lines of
 * noise (a 20-step Flax loop: 3,096). A step of a new shape is not diffed:
 * one line says so, and consecutive ones are folded into one line. Repeats
 * are folded too (src/tracediff.h, struct atl_fold). The summary counts the
 * shapes and the steps of each.
 *
 * Stream captures in sync, nvtx and api modes are kept by shape as well, and
 * an eager step of a capture's shape is compared with it (eager against
 * captured: the values a replay would use where the eager code uses others).
 *
 * The live tracer (src/tracestep.c) and atlas-diff share this; it knows
 * nothing of the live process.
 */
#ifndef ATL_STEPSERIES_H
#define ATL_STEPSERIES_H

#include "step.h"
#include "tracediff.h"

#include <stddef.h>
#include <stdint.h>

/* Shapes a kind keeps the last step of: a kind whose steady state cycles
 * through more shapes than this sees the least recently used one as new
 * again (and says so once more). */
#define ATL_KIND_SHAPES 8
/* Captures kept for eager steps to be compared with. */
#define ATL_SERIES_CAPTURES 4

/* The last step of one shape of a kind (or one capture). */
struct atl_shaped {
    uint64_t shape;       /* 0: unused */
    uint64_t used;        /* the series' clock when last matched */
    uint64_t steps;       /* steps of this shape not yet added to the series' table */
    uint64_t checked;     /* captures: the eager step last compared with it */
    uint64_t nth;         /* captures: "capture #N" */
    struct atl_step step; /* the last of them */
    struct atl_fold fold; /* its repeats being folded */
};

/* One kind of step: up to ATL_KIND_SHAPES shapes. Zero-initialised, with
 * recent -1 (atl_kind_init). */
struct atl_kind {
    struct atl_shaped slot[ATL_KIND_SHAPES];
    int recent; /* the slot of the kind's latest step, -1: none */
    /* shapes the kind has had (counted to ATL_KIND_CHURN): a kind with that many is in
     * warm-up (autotuning, compilation, set-up: its work keeps changing), and a step of a
     * shape not yet settled is held back (struct atl_diff_opts' warmup) */
    unsigned shapes;
};
#define ATL_KIND_CHURN 3

struct atl_series {
    struct atl_diff_stats *st;
    void (*line)(void *ctx, const char *text); /* where reports go */
    void *ctx;
    uint64_t clock;
    /* new shapes announced since the last line printed, folded into one */
    struct {
        uint64_t first, last, n;
        size_t lo, hi; /* ops */
        char name[64];
        int names;     /* more than one kind */
        char one[640]; /* the line when there is one */
    } news;
    /* every (kind, shape) seen, for "is it new" once its slot is reused, and
     * steps per shape in the summary: open addressing on key */
    struct atl_shape_count {
        uint64_t key, steps;
        size_t nops;
        char name[40];
    } * tab;
    size_t tabcap, n;
    /* captures (sync, nvtx and api modes) */
    struct atl_shaped caps[ATL_SERIES_CAPTURES];
    uint64_t ncaptures;
};

void atl_series_init(struct atl_series *ser, struct atl_diff_stats *st,
                     void (*line)(void *, const char *), void *ctx);
void atl_series_free(struct atl_series *ser);
void atl_kind_init(struct atl_kind *k);
/* Frees the kind's kept steps (into drop-free form: the caller recycles none). */
void atl_kind_free(struct atl_kind *k);

static inline struct atl_shaped *atl_kind_recent(struct atl_kind *k)
{
    return k->recent >= 0 ? &k->slot[k->recent] : NULL;
}

/* The slot of k holding the last step of shape `shape`, or NULL. */
struct atl_shaped *atl_kind_shape(struct atl_kind *k, uint64_t shape);

/* What a report printed through the series needs: opts whose line goes
 * through the series (new shapes held back are said first). */
void atl_series_opts(struct atl_series *ser, struct atl_diff_opts *o);

/* Step s of kind k is identical to the last step of its shape (slot ref):
 * counted; a folded run of that shape ends there. */
void atl_series_same(struct atl_series *ser, struct atl_kind *k, struct atl_shaped *ref,
                     const struct atl_diff_opts *o);

/* Step s of kind k (not byte-identical to the kind's latest step): compared
 * with the last step of its shape, repeats folded, or announced as a new
 * shape. *ref: the slot of its shape (NULL: new to the kind). Returns the
 * differences found (0: identical, or a new shape). */
size_t atl_series_compare(struct atl_series *ser, struct atl_kind *k, const struct atl_step *s,
                          const struct atl_diff_opts *o, struct atl_shaped **ref);

/* atl_series_compare for a step of the shape of ref's step (of kind k) recorded against it:
 * `a` and `s` hold the places where they differ (struct atl_diff_opts' sparse). */
size_t atl_series_compare_sparse(struct atl_series *ser, struct atl_kind *k, struct atl_shaped *ref,
                                 const struct atl_step *a, const struct atl_step *s,
                                 const struct atl_diff_opts *o);
/* The step compared by atl_series_compare_sparse was written over ref's step, which it now
 * is: counted as atl_series_keep counts a step kept. */
void atl_series_kept(struct atl_series *ser, struct atl_kind *k, struct atl_shaped *ref);

/* s becomes the last step of its shape in k (in ref, or a new slot). *drop
 * gets the step no longer kept (the one s replaces, or the least recently
 * used shape's when k is full; empty when none) for the caller to free or
 * recycle. */
void atl_series_keep(struct atl_series *ser, struct atl_kind *k, struct atl_shaped *ref,
                     struct atl_step *s, const struct atl_diff_opts *o, struct atl_step *drop);

/* Eager against captured. A capture ended: `cap` is compared with
 * `eager`, the latest eager step of its shape (NULL: none), and kept (taken
 * over; *drop gets a capture let go). An eager step s, after its own
 * comparison: compared with the kept capture of its shape, if any (`same`:
 * s is byte-identical to the step it was compared with, whose index was
 * `was`: the answer is the one given then). Return the differences. */
size_t atl_series_capture(struct atl_series *ser, struct atl_step *cap,
                          const struct atl_step *eager, const struct atl_diff_opts *o,
                          struct atl_step *drop);
size_t atl_series_eager(struct atl_series *ser, const struct atl_step *s, int same, uint64_t was,
                        const struct atl_diff_opts *o);

/* At the end: what k holds back (folded runs), then (atl_series_done) the
 * new shapes held back and the shape counts into the stats. */
void atl_series_flush_kind(struct atl_series *ser, struct atl_kind *k,
                           const struct atl_diff_opts *o);
void atl_series_done(struct atl_series *ser, const struct atl_diff_opts *o);

#endif
