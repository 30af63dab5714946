/* libFuzzer harness for the trace-file reader (src/tracediff.c), the parser
 * atlas-diff runs on files it did not write: any input must give steps or a
 * "line N: ..." error, never a crash, a leak or undefined behaviour. Each
 * pair of consecutive steps read is diffed too, so the report code sees
 * arbitrary layouts, annotations and op mixes. */
#include "tracediff.h"
#include "tracejson.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct ctx {
    struct atl_step prev;
    int have;
};

static void sink(void *c, const char *text)
{
    (void)c;
    (void)text;
}

static int take(void *vc, struct atl_step *s)
{
    struct ctx *c = vc;
    if (c->have) {
        struct atl_diff_opts o = {.max_lines = 5, .line = sink};
        struct atl_diff_stats st;
        memset(&st, 0, sizeof st);
        atl_step_diff(&c->prev, s, &o, &st);
        atl_diff_summary(&st, sink, NULL);
        atl_step_free(&c->prev);
    }
    c->prev = *s;
    c->have = 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    struct ctx c = {.have = 0};
    char err[256];
    atl_trace_read(f, take, &c, err, sizeof err);
    fclose(f);
    if (c.have)
        atl_step_free(&c.prev);
    return 0;
}
