/*
 * atlas-diff --ranks: N ranks' step traces, the odd rank out of each step.
 */
#ifndef ATL_DIFF_RANKS_H
#define ATL_DIFF_RANKS_H

#include "tracediff.h"

/* The files of the ranks: one pattern with %r (expanded by the rank numbers
 * present on disk), or n >= 2 files, rank i being the i-th. Prints through
 * o->line; returns the exit status: 0 all ranks agree, 1 a rank differs,
 * stopped early or has no file, 2 trouble (said on stderr through `fail`). */
int atl_diff_ranks(char *const *args, int n, const struct atl_diff_opts *o,
                   void (*fail)(const char *path, const char *why));

#endif
