/* libFuzzer harness for the trace-file reader (src/tracediff.c), the parser
 * atlas-diff runs on files it did not write: any input must give steps or a
 * "line N: ..." error, never a crash, a leak or undefined behaviour. The
 * steps read are compared too, so the report code sees arbitrary layouts,
 * annotations and op mixes. */
#include "stepseries.h"
#include "tracediff.h"
#include "tracejson.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The steps go through what atlas-diff runs them through: each compared
 * with the last of its shape (repeats folded, new shapes announced), and
 * with the one before as --ranks does (another shape said in one line). */
struct ctx {
    struct atl_series ser;
    struct atl_diff_stats st;
    struct atl_kind k;
};

static void sink(void *c, const char *text)
{
    (void)c;
    (void)text;
}

static int take(void *vc, struct atl_step *s)
{
    struct ctx *c = vc;
    struct atl_diff_opts o = {.max_lines = 5, .line = sink};
    struct atl_shaped *recent = atl_kind_recent(&c->k);
    if (recent) {
        struct atl_diff_opts ro = {.max_lines = 5, .line = sink, .shapes = 1, .cross = 1};
        atl_step_diff(&recent->step, s, &ro, NULL);
    }
    atl_series_opts(&c->ser, &o);
    struct atl_shaped *ref;
    atl_series_compare(&c->ser, &c->k, s, &o, &ref);
    struct atl_step drop;
    atl_series_keep(&c->ser, &c->k, ref, s, &o, &drop);
    atl_step_free(&drop);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    static struct ctx c;
    memset(&c.st, 0, sizeof c.st);
    atl_series_init(&c.ser, &c.st, sink, NULL);
    atl_kind_init(&c.k);
    char err[256];
    atl_trace_read(f, take, &c, err, sizeof err);
    fclose(f);
    struct atl_diff_opts o = {.max_lines = 5, .line = sink};
    atl_series_opts(&c.ser, &o);
    atl_series_flush_kind(&c.ser, &c.k, &o);
    atl_series_done(&c.ser, &o);
    atl_diff_summary(&c.st, sink, NULL);
    atl_kind_free(&c.k);
    atl_series_free(&c.ser);
    return 0;
}
