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

/* Counts kept across a run for the exit summary. */
struct atl_diff_stats {
    uint64_t steps, compared, identical;
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
};

/* ATLAS_DIFF_POINTERS and ATLAS_DIFF_RESIDUE, in their table order (src/config.def) */
enum { ATL_PTRS_COLLAPSE, ATL_PTRS_ALL, ATL_PTRS_NONE };

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
    int pointers;              /* pointers that moved within their allocation: ATL_PTRS_* */
    int residue;               /* words of by-value parameters holding host-memory residue
                                * (uninitialised bytes): ATL_PTRS_* (collapse, all, none) */
    /* 1 when a value is an address of the process's own host memory
     * (src/hostmap.h); NULL offline, where only the "residue" marks of the
     * JSON lines say it */
    int (*host_addr)(uint64_t v);
    void (*line)(void *ctx, const char *text);
    void *ctx;
};

/* Diffs step b against step a (the previous step of the same name) and
 * prints the report through opts->line. Returns the number of differences
 * found (0: identical, nothing printed unless opts->replay). */
size_t atl_step_diff(const struct atl_step *a, const struct atl_step *b,
                     const struct atl_diff_opts *opts, struct atl_diff_stats *st);

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
