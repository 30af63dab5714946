/*
 * Step diffs: the diff of two steps (src/step.h) and the run's summary.
 *
 * This module knows nothing of hooks or the driver: the live tracer
 * (src/tracestep.c) and the offline tool (tools/atlas-diff.c) both hand it
 * steps, so both print the same report from the same code.
 */
#ifndef ATL_TRACEDIFF_H
#define ATL_TRACEDIFF_H

#include "step.h"

#include <stddef.h>
#include <stdint.h>

/* What to stay quiet about: kernel[:argN],... */
struct atl_ignore {
    char *spec; /* owned copy */
    struct {
        const char *kernel;
        int arg; /* -1: the whole kernel */
    } e[32];
    int n;
};
void atl_ignore_parse(struct atl_ignore *ig, const char *spec);
void atl_ignore_free(struct atl_ignore *ig);

/* snprintf for report text that may be cut at the buffer's end (a long
 * kernel name), on purpose: returns what was written, at most len - 1. */
__attribute__((format(printf, 3, 4))) size_t atl_fmt(char *buf, size_t len, const char *f, ...);

/* Counts kept across a run for the exit summary. */
struct atl_diff_stats {
    uint64_t steps, compared, identical;
    /* Differing steps of references not yet settled (struct atl_fold): warm-up, counted and
     * not printed; `quiet`: steps whose only changes were noted ones (pointers moved within
     * their allocations, uninitialised bytes), counted in `identical` too. */
    uint64_t warmup, quiet;
    /* lines formatted for printing; a report folded, held back or suppressed formats none
     * (its lines are counted) */
    uint64_t formatted;
    const char *warmup_how, *quiet_how; /* the summary's hint for each (NULL: the settings) */
    /* Two runs (atlas-diff A B): their files' names, said in the summary, and the steps read
     * from each; NULL: the steps of one run against each other. */
    const char *run_a, *run_b;
    uint64_t steps_a, steps_b;
    struct {
        char what[160]; /* "kernel arg1" */
        uint64_t n;
    } top[64];
    int ntop;
    /* The frozen-value summary: per kernel parameter (or 8-byte word of a
     * larger one) that ever differed, the steps it changed in and what its
     * changes looked like. */
    struct atl_frozen {
        char what[160];       /* "add_step arg1", "blob arg1+0x40" */
        uint64_t n;           /* steps it changed in */
        uint64_t step;        /* the last of them (one change counted per step) */
        uint64_t first, v[2]; /* its first value; the first two it took */
        uint64_t last;        /* its latest value */
        int64_t delta;        /* the change, while every change was the same */
        uint8_t steady;       /* every change was `delta` */
        uint8_t many;         /* it took more than two values */
    } frozen[64];
    int nfrozen;
    /* Steps are compared with the last step of their kind and shape (src/stepseries.h):
     * the distinct shapes seen, and a line of steps per shape, both filled by the series
     * before the summary (0 and empty: not said) */
    uint64_t shapes;
    char per_shape[480];
};

/* ATLAS_DIFF_POINTERS and ATLAS_DIFF_RESIDUE, in their table order (src/config.def) */
enum { ATL_PTRS_COLLAPSE, ATL_PTRS_ALL, ATL_PTRS_NONE };

/* A step found to differ, as a finding (src/findings.h: the live tracer's; atlas-diff
 * --report's). */
struct atl_diff_found {
    const struct atl_step *a, *b; /* b differs from a */
    const char *header;           /* its report's first line */
    const char *kernel;           /* the first kernel whose launch changed ("add_pos"), or NULL */
    const char *kernel_mangled;   /* its name as the module has it, or NULL */
    size_t n;                     /* the differences */
    int folded;                   /* a repeat folded into a run: said by the run's one line */
};

struct atl_diff_opts {
    unsigned max_lines;   /* lines per step, then a count of the rest */
    const char *max_name; /* what sets max_lines, for the "not shown" hint (NULL: ATLAS_DIFF_MAX) */
    const struct atl_ignore *ignore;
    const char *replay;        /* capture mode: say replay-safe (non-NULL) */
    int where;                 /* name the step's thread and stream in its header (more than one
                                * thread or stream has steps) */
    int cross;                 /* a and b come from two processes: host addresses of copies are
                                * not compared (they never match) */
    const char *run_a, *run_b; /* with cross, the names of a's run and b's (atlas-diff's two
                                * files), said in each step's header; or NULL */
    /* Warm-up (the live tracer, one file of atlas-diff): a report against a reference that
     * has not settled (struct atl_fold) is held back, and printed only if the next step of
     * its shape changes the same way (a run begins); otherwise counted in st->warmup. */
    int warmup;
    int pointers; /* pointers that moved within their allocation: ATL_PTRS_* */
    int residue;  /* words of by-value parameters holding host-memory residue
                   * (uninitialised bytes): ATL_PTRS_* (collapse, all, none) */
    /* 1 when a value is an address of the process's own host memory
     * (src/hostmap.h); NULL offline, where only the "residue" marks of the
     * JSON lines say it */
    int (*host_addr)(uint64_t v);
    /* The live tracer: what it knows of the two allocations behind "another
     * buffer" (`was` in step a, the reference, `now` in step b: their sites,
     * whether `was` was freed), appended to the line; NULL offline. */
    void (*explain)(const struct atl_ann *was, uint64_t va, const struct atl_ann *now, uint64_t vb,
                    const struct atl_step *a, char *buf, size_t len);
    /* The live tracer: 1 when both allocations behind "another buffer" are segments of PyTorch's
     * caching allocator (made from libc10_cuda), whose blocks it hands to tensors as it likes:
     * a pointer that moves from one segment to another is its reuse, collapsed as a move within
     * one segment is (ATLAS_DIFF_POINTERS); NULL offline, where the sites are not known. */
    int (*pooled)(const struct atl_ann *was, uint64_t va, const struct atl_ann *now, uint64_t vb);
    /* a is a stream capture and b an eager step of its shape (eager against
     * captured): values read "0x11 when captured, 0x12 <captured>; a replay
     * uses 0x11" (captured: "now", "in step 8"), and pointers are left out (a
     * graph has buffers of its own); `header` is the report's first line */
    const char *captured;
    const char *header;
    /* a step of another shape is not aligned op by op: one line says where
     * the shapes part (atlas-diff --ranks, whose ranks should run alike) */
    int shapes;
    void (*line)(void *ctx, const char *text);
    void *ctx;
    /* The live tracer's step recorded against its reference (src/tracestep.c): a and b hold
     * only the ops where the whole steps differ, pair for pair, at these places of them
     * (increasing; as many as b's ops), and the whole steps, of sparse_nops ops each, have
     * the same records and parameter bytes everywhere else, and one shape. The report is
     * the whole steps' (ops named by their places). NULL: a and b are whole. */
    const uint32_t *sparse;
    size_t sparse_nops;
    /* Each step found to differ, before its report is printed (NULL: none): 0 when the report
     * is not to be printed (a suppressed finding, or one past the print limit), and then nor
     * is the run of repeats it may begin. A folded repeat is handed over too (its answer is
     * not used). */
    int (*found)(void *ctx, const struct atl_diff_found *f);
    void *found_ctx;
};

/* Diffs step b against step a (the previous step of the same name) and
 * prints the report through opts->line. Returns the number of differences
 * found (0: identical, nothing printed unless opts->replay). */
size_t atl_step_diff(const struct atl_step *a, const struct atl_step *b,
                     const struct atl_diff_opts *opts, struct atl_diff_stats *st);

/* Repeats folded across steps: when step N differs from its reference as
 * step N-1 did from its own (the same fields, the same deltas; or the same
 * fields a third time in a row), its report is not printed but counted, and
 * the run is printed as one line when it ends ("steps 12-1000 ("loop"): scale
 * arg2 +1 per step (989 steps)"). One per reference (a kind and shape). */
#define ATL_FOLD_MAX 32 /* changes a step may have and still be folded */
struct atl_fold_chg {
    uint32_t op;
    uint8_t cls;             /* a value, another buffer, or no value (ops inserted, ...) */
    uint8_t steady, alt;     /* over the run: every delta the same; two values in turn */
    uint64_t key;            /* which field of op `op` */
    uint64_t v0, v1, va, vb; /* the run's first two values and the latest change */
    int64_t delta;
    char what[64]; /* "scale arg2", "memset ptr" */
};
struct atl_fold {
    uint64_t sig;            /* the last report's fields (0: none since the last identical step) */
    unsigned streak;         /* reports in a row with these fields */
    uint64_t first, last, n; /* the folded steps (indices) and how many */
    char label[128];         /* "\"loop\"", the kind as the report names it */
    int replay;              /* capture mode: none of them is replay-safe */
    int quiet;               /* the report before it was not printed: nor is the run */
    int captured;            /* against a capture: the same fields differ from it */
    unsigned nchg;
    struct atl_fold_chg *chg; /* ATL_FOLD_MAX, malloc'd on first use */
    /* Settled: a step of this shape repeated the reference's host values (only noted changes,
     * if any), or changed as the one before it did (a run). Until then (with opts->warmup)
     * the report that may begin a run is held here, its lines and its finding, and printed
     * when the run begins; dropped (st->warmup) when another report or an identical step
     * comes first. */
    int settled;
    struct atl_fold_held *held;
    /* A change every p-th step (a buffer passed for four steps in turn): the identical steps
     * since the last report (gap), and the run's period (steps from one report to the next; 0:
     * not known yet, 1 every step). Identical steps end a run only once more of them came
     * than its period (ATL_FOLD_GAP_MAX while it is not known). */
    uint64_t gap, period;
    /* the last report was printed and had too many changes to fold: the next one's lines are
     * formatted as it is walked (a kind whose reports all print is walked once a step) */
    int printed;
};
#define ATL_FOLD_GAP_MAX 16
/* atl_step_diff with folding (fold NULL: atl_step_diff). */
size_t atl_step_compare(const struct atl_step *a, const struct atl_step *b,
                        const struct atl_diff_opts *opts, struct atl_diff_stats *st,
                        struct atl_fold *fold);
/* The run being folded, as its one line (nothing when none), and a new one
 * begins (an identical step ends a run too). */
void atl_fold_flush(struct atl_fold *f, const struct atl_diff_opts *opts);
/* A step of f's shape identical to its reference: a run waits for its next change as long as
 * its period says, then ends (atl_fold_flush). */
void atl_fold_idle(struct atl_fold *f, const struct atl_diff_opts *opts);
/* Step `index` differs from its reference exactly as the last report said
 * (the same step again, compared with a capture): folded. Returns the
 * differences that report had (0: it had none). */
size_t atl_fold_again(struct atl_fold *f, uint64_t index);
void atl_fold_free(struct atl_fold *f);
/* A step of f's shape had the reference's host values: f's reference is settled (a report
 * held back is dropped as warm-up, counted in the stats it was held with). */
void atl_fold_settle(struct atl_fold *f);

/* A step's shape: the sequence of its ops' kinds and kernels (names and
 * parameter counts, not values), hashed once and kept in s->shapesum; never 0. */
uint64_t atl_step_shape(const struct atl_step *s);
/* Where the shapes of a and b part, for one line: "op 2 inserted: memset ...",
 * "ops 3..5 (3 of them) of the previous step removed: scale ...", "from op 7
 * on (12 ops against 9): ...". */
void atl_shape_delta(const struct atl_step *a, const struct atl_step *b, char *buf, size_t len);

/* The exit summary lines. */
void atl_diff_summary(const struct atl_diff_stats *st, void (*line)(void *, const char *),
                      void *ctx);

/* The hashes the diff aligns ops by (and atlas-diff --ranks groups ranks by). */
static inline uint64_t atl_hash_mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}
uint64_t atl_hash_bytes(uint64_t h, const void *p, size_t n);

#endif
