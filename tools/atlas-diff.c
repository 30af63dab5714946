/*
 * atlas-diff: the live step diff of atlastrace, offline, on the JSON lines
 * ATLAS_TRACE_FILE writes.
 *
 *   atlas-diff A.jsonl           each step against the previous step of its
 *                                name, as the live report does
 *   atlas-diff A.jsonl B.jsonl   run A against run B: the n-th step named X
 *                                in A against the n-th step named X in B
 *
 * The report comes from the same diff module (src/tracediff.c) as the live
 * one. Exit status as diff(1): 0 no differences, 1 differences, 2 trouble
 * (unreadable, truncated or corrupt input, with the line number).
 */
#include "tracediff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct run {
    struct atl_step *steps;
    size_t n, cap;
};

static int keep_step(void *ctx, struct atl_step *s)
{
    struct run *r = ctx;
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 16;
        struct atl_step *ns = realloc(r->steps, nc * sizeof *ns);
        if (!ns)
            return -1;
        r->steps = ns, r->cap = nc;
    }
    /* occurrence of this name in this run */
    s->nth = 1;
    for (size_t i = r->n; i-- > 0;)
        if (strcmp(r->steps[i].name, s->name) == 0) {
            s->nth = r->steps[i].nth + 1;
            break;
        }
    r->steps[r->n++] = *s;
    return 0;
}

static int load(const char *path, struct run *r)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    char err[256];
    if (!f) {
        fprintf(stderr, "atlas-diff: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = atl_trace_read(f, keep_step, r, err, sizeof err);
    if (f != stdin)
        fclose(f);
    if (rc != 0) {
        fprintf(stderr, "atlas-diff: %s: %s\n", path, err);
        return -1;
    }
    if (err[0]) /* read up to its last whole step: say what was left out */
        fprintf(stderr, "atlas-diff: %s: %s\n", path, err);
    return 0;
}

static void run_free(struct run *r)
{
    for (size_t i = 0; i < r->n; i++)
        atl_step_free(&r->steps[i]);
    free(r->steps);
    r->steps = NULL, r->n = r->cap = 0;
}

static void out_line(void *ctx, const char *text)
{
    (void)ctx;
    printf("%s\n", text);
}

static void usage(void)
{
    fprintf(stderr, "usage: atlas-diff [--max N] [--ignore kernel[:argN],...] A.jsonl [B.jsonl]\n"
                    "  one file: each step against the previous step of the same name\n"
                    "  two files: the n-th step named X in A against the n-th named X in B\n"
                    "  exit status: 0 identical, 1 differences found, 2 trouble\n");
}

int main(int argc, char **argv)
{
    unsigned max = 20;
    const char *ign = getenv("ATLAS_DIFF_IGNORE");
    const char *files[2];
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc) {
            char *end;
            unsigned long v = strtoul(argv[++i], &end, 10);
            if (*end || end == argv[i]) {
                usage();
                return 2;
            }
            max = (unsigned)v;
        } else if (!strcmp(argv[i], "--ignore") && i + 1 < argc) {
            ign = argv[++i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage();
            return 0;
        } else if (nf < 2 && (argv[i][0] != '-' || !strcmp(argv[i], "-"))) {
            files[nf++] = argv[i];
        } else {
            usage();
            return 2;
        }
    }
    if (nf == 0) {
        usage();
        return 2;
    }
    struct run a = {0}, b = {0};
    if (load(files[0], &a) || (nf == 2 && load(files[1], &b))) {
        run_free(&a);
        run_free(&b);
        return 2;
    }

    struct atl_ignore ig;
    atl_ignore_parse(&ig, ign);
    struct atl_diff_stats st;
    memset(&st, 0, sizeof st);
    struct atl_diff_opts o = {.max_lines = max, .ignore = &ig, .line = out_line};
    size_t found = 0;
    char line[256];
    if (nf == 1) {
        st.steps = a.n;
        for (size_t i = 0; i < a.n; i++)
            for (size_t j = i; j-- > 0;)
                if (strcmp(a.steps[j].name, a.steps[i].name) == 0) {
                    found += atl_step_diff(&a.steps[j], &a.steps[i], &o, &st) != 0;
                    break;
                }
    } else {
        st.steps = a.n + b.n;
        for (size_t j = 0; j < b.n; j++) {
            const struct atl_step *sb = &b.steps[j], *sa = NULL;
            for (size_t i = 0; i < a.n && !sa; i++)
                if (a.steps[i].nth == sb->nth && strcmp(a.steps[i].name, sb->name) == 0)
                    sa = &a.steps[i];
            if (!sa) {
                snprintf(line, sizeof line, "step \"%s\" #%llu is only in %s", sb->name,
                         (unsigned long long)sb->nth, files[1]);
                out_line(NULL, line);
                found++;
                continue;
            }
            found += atl_step_diff(sa, sb, &o, &st) != 0;
        }
        for (size_t i = 0; i < a.n; i++) {
            int seen = 0;
            for (size_t j = 0; j < b.n && !seen; j++)
                seen =
                    b.steps[j].nth == a.steps[i].nth && !strcmp(b.steps[j].name, a.steps[i].name);
            if (!seen) {
                snprintf(line, sizeof line, "step \"%s\" #%llu is only in %s", a.steps[i].name,
                         (unsigned long long)a.steps[i].nth, files[0]);
                out_line(NULL, line);
                found++;
            }
        }
    }
    atl_diff_summary(&st, out_line, NULL);
    run_free(&a);
    run_free(&b);
    atl_ignore_free(&ig);
    return found ? 1 : 0;
}
