/*
 * atlas-diff on one run or two: the live tracer's rule, offline, reading one
 * step of each file at a time (tools/diff-runs.c).
 */
#ifndef ATL_DIFF_RUNS_H
#define ATL_DIFF_RUNS_H

#include "tracediff.h"

#include <stddef.h>

/* Reads the trace file `path`, handing each step to fn(ctx, step) (the
 * step is fn's), each begun in the arrays fresh(ctx, step) lends
 * (atl_trace_read_reuse); returns 0, or -1 with why set. A file read up to
 * its last whole step returns 0 with why saying what was left out. */
typedef int (*atl_read_fn)(const char *path, int (*fn)(void *ctx, struct atl_step *s),
                           void (*fresh)(void *ctx, struct atl_step *s), void *ctx, char *why,
                           size_t whylen);

/* One file (b NULL): each step against the last step of its kind and shape,
 * as the live report. Two: the n-th step of each kind (name and thread) in a
 * against the n-th in b, one line when their shapes differ; steps only one
 * run has are named, by kind and shape. Each file is read on a thread of its own, a
 * step at a time; the report is printed through o->line once both were
 * read, trouble through fail (a's alone when a cannot be read). Returns the
 * exit status: 0 no differences, 1 differences, 2 trouble. */
int atl_diff_runs(const char *a, const char *b, atl_read_fn read, const struct atl_diff_opts *o,
                  void (*fail)(const char *path, const char *why));

#endif
