/*
 * The step trace's file form: JSON lines, one op per line (docs/trace.md,
 * "JSON lines"). Version 2 (written): a header line, each kernel declared
 * once per step with an id, ops naming it by id with short keys. Version 1
 * (read; the tests write it): every op line whole.
 */
#ifndef ATL_TRACEJSON_H
#define ATL_TRACEJSON_H

#include "step.h"

#include <stdio.h>

#define ATL_TRACE_FORMAT "atlastrace-steps"
#define ATL_TRACE_VERSION 2

/* The file's first line: {"format":"atlastrace-steps","version":2}. */
void atl_trace_write_header(FILE *f);
/* A step in version 2: its kernels' declarations, one line per op, its end
 * record. `host_addr` (NULL: none) is the recording process's answer to
 * "is v an address of my host memory?": an 8-byte parameter without an
 * allocation note that holds one is marked as host memory (ATL_ANN_HOST),
 * which two runs compare as equal. The writer itself knows nothing of the
 * live process (atlas-diff links it too). */
void atl_step_write_json(const struct atl_step *s, FILE *f, int (*host_addr)(uint64_t v));

/* Reads a JSON-lines trace of either version (lines of both may be mixed,
 * and a header may come anywhere between steps, as in files put end to
 * end): calls fn for each complete step, in file order. Returns 0, or -1
 * with a message "line N: why" in err. A file cut short after at least one
 * whole step (a run killed mid-step: a torn last line, an unfinished last
 * step) is read up to its last whole step: 0, and err says what was skipped
 * (empty when nothing was). */
int atl_trace_read(FILE *f, int (*fn)(void *ctx, struct atl_step *s), void *ctx, char *err,
                   size_t errlen);
/* The same, each step begun in arrays fresh(ctx, s) lends (a step the
 * reader's caller is done with, emptied): a file of many large steps is
 * read without the arrays of each allocated, grown and page-faulted anew. */
int atl_trace_read_reuse(FILE *f, int (*fn)(void *ctx, struct atl_step *s),
                         void (*fresh)(void *ctx, struct atl_step *s), void *ctx, char *err,
                         size_t errlen);

#endif
