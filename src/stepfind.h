/*
 * A differing step as a finding (src/findings.h, src/findjson.h): which
 * kernel's parameters changed in it, and what makes two steps' differences
 * the same (the same parameters changed, the same op counts), read from the
 * diff's run counts (struct atl_diff_stats) before and after one diff. The
 * live step trace (src/tracestep.c) and atlas-diff --report share it.
 */
#ifndef ATL_STEPFIND_H
#define ATL_STEPFIND_H

#include "tracediff.h"

#include <stddef.h>
#include <stdint.h>

struct atl_diff_mark {
    int ntop;
    uint64_t n[64];
};

/* The counts before a diff. */
void atl_diff_mark(const struct atl_diff_stats *st, struct atl_diff_mark *m);

/* After the diff of a (nops_a ops) and b (nops_b ops): the first kernel
 * whose parameter changed since m into kernel ("" when none: only copies,
 * memsets or the op list changed), and a key that two steps share when the
 * same things changed in them (never 0). */
uint64_t atl_diff_changed(const struct atl_diff_stats *st, const struct atl_diff_mark *m,
                          const char *step, size_t nops_a, size_t nops_b, char *kernel, size_t len);

#endif
