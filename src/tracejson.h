/*
 * The step trace's file form: JSON lines, one op per line (docs/trace.md).
 */
#ifndef ATL_TRACEJSON_H
#define ATL_TRACEJSON_H

#include "step.h"

#include <stdio.h>

/* JSON lines: one op per line. */
void atl_step_write_json(const struct atl_step *s, FILE *f);

/* Reads a JSON-lines trace: calls fn for each complete step, in file order.
 * Returns 0, or -1 with a message "line N: why" in err. A file cut short
 * after at least one whole step (a run killed mid-step: a torn last line,
 * an unfinished last step) is read up to its last whole step: 0, and err
 * says what was skipped (empty when nothing was). */
int atl_trace_read(FILE *f, int (*fn)(void *ctx, struct atl_step *s), void *ctx, char *err,
                   size_t errlen);

#endif
