/*
 * atlas-diff: the live step diff of atlastrace, offline, on the JSON lines
 * ATLAS_TRACE_FILE writes.
 *
 *   atlas-diff A.jsonl           each step against the previous step of its
 *                                name, as the live report does
 *   atlas-diff A.jsonl B.jsonl   run A against run B: the n-th step named X
 *                                in A against the n-th step named X in B
 *   atlas-diff --ranks 'trace.%r.jsonl'   (or --ranks FILE...) N ranks of
 *                                one job: for each step where they do not
 *                                all agree, the odd rank out (diff-ranks.c)
 *
 * The report comes from the same diff module (src/tracediff.c) as the live
 * one. Exit status as diff(1): 0 no differences, 1 differences, 2 trouble
 * (unreadable, truncated or corrupt input, with the line number).
 */
#include "config.h"
#include "diff-ranks.h"
#include "tracediff.h"
#include "tracejson.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef ATLAS_VERSION
#define ATLAS_VERSION "unknown"
#endif

/* Lines per step before "... more differences not shown": ATLAS_DIFF_MAX's default, from the
 * table the library reads. */
static unsigned default_max(void)
{
    return (unsigned)atl_cfg_vars[atl_config_find("ATLAS_DIFF_MAX")].def;
}

/* Steps by kind, in an open-addressing table of step indices (+1; 0 is
 * empty): a kind is (name, thread, stream), or across two runs (name,
 * thread, occurrence), whose streams are two processes' handles. Matching a
 * step is then one probe, not a search of every step read: a trace of
 * 100,000 steps (a step ends at every synchronous copy) took quadratic time. */
struct kinds {
    size_t *slot;
    size_t cap; /* a power of two, or 0 */
    size_t used;
};

static uint64_t kind_hash(const struct atl_step *s, int cross)
{
    uint64_t h = atl_hash_bytes(0x5eed, s->name, strlen(s->name));
    h = atl_hash_bytes(h, s->thread, strlen(s->thread));
    return atl_hash_mix(h, cross ? s->nth : s->stream);
}

static int same_kind(const struct atl_step *a, const struct atl_step *b, int cross)
{
    return atl_step_same_key(a, b, cross) && (!cross || a->nth == b->nth);
}

/* The slot of s's kind among steps[] (holding 0 when none is there yet). */
static size_t *kind_slot(const struct kinds *t, const struct atl_step *steps,
                         const struct atl_step *s, int cross)
{
    size_t i = (size_t)kind_hash(s, cross) & (t->cap - 1);
    while (t->slot[i] && !same_kind(&steps[t->slot[i] - 1], s, cross))
        i = (i + 1) & (t->cap - 1);
    return &t->slot[i];
}

/* Makes room for one more kind (rehashing steps[] at their slots). */
static int kinds_room(struct kinds *t, const struct atl_step *steps, int cross)
{
    if ((t->used + 1) * 2 <= t->cap)
        return 0;
    struct kinds n = {calloc(t->cap ? t->cap * 2 : 64, sizeof(size_t)), t->cap ? t->cap * 2 : 64,
                      t->used};
    if (!n.slot)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i])
            *kind_slot(&n, steps, &steps[t->slot[i] - 1], cross) = t->slot[i];
    free(t->slot);
    *t = n;
    return 0;
}

struct run {
    struct atl_step *steps;
    size_t *prev; /* index + 1 of the previous step of each step's kind, 0: none */
    size_t n, cap;
    struct kinds last; /* each kind's latest step */
};

static int keep_step(void *ctx, struct atl_step *s)
{
    struct run *r = ctx;
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 16;
        struct atl_step *ns = realloc(r->steps, nc * sizeof *ns);
        if (!ns)
            return -1;
        r->steps = ns;
        size_t *np = realloc(r->prev, nc * sizeof *np);
        if (!np)
            return -1;
        r->prev = np, r->cap = nc;
    }
    if (kinds_room(&r->last, r->steps, 0))
        return -1;
    /* occurrence of this name (and thread and stream) in this run */
    size_t *slot = kind_slot(&r->last, r->steps, s, 0);
    s->nth = *slot ? r->steps[*slot - 1].nth + 1 : 1;
    r->prev[r->n] = *slot;
    r->last.used += !*slot;
    *slot = r->n + 1;
    r->steps[r->n++] = *s;
    return 0;
}

/* Text from a trace file or the command line, printed with control bytes shown as '?': a file
 * name or a kernel name can never move the cursor, clear the screen or forge a line. */
static void put_clean(FILE *f, const char *s)
{
    for (; *s; s++)
        putc((unsigned char)*s < ' ' || *s == 0x7f ? '?' : *s, f);
}

static void fail(const char *path, const char *why)
{
    fputs("atlas-diff: ", stderr);
    put_clean(stderr, path);
    fputs(": ", stderr);
    put_clean(stderr, why);
    putc('\n', stderr);
}

/* One file's reading: what it found, and the line to print about it (an error, or what a
 * file cut short left out), printed by the caller in the order of the files. */
struct load {
    const char *path;
    struct run *r;
    int rc;
    char why[256]; /* empty: nothing to say */
};

static void *load_run(void *arg)
{
    struct load *l = arg;
    const char *path = l->path;
    struct stat st;
    l->rc = -1;
    l->why[0] = '\0';
    FILE *f = stdin;
    if (strcmp(path, "-") != 0) {
        /* a regular file only: /dev/zero would be read for ever, and a FIFO
         * would block the open (O_NONBLOCK: it opens, and is refused) */
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        const char *bad = fd < 0 || fstat(fd, &st) != 0 ? strerror(errno)
                          : S_ISDIR(st.st_mode)         ? "is a directory, not a trace file"
                          : !S_ISREG(st.st_mode)
                              ? "not a regular file (a trace on a pipe: give - and the pipe as "
                                "the standard input)"
                              : NULL;
        if (!bad && (fcntl(fd, F_SETFL, 0) != 0 || !(f = fdopen(fd, "r"))))
            bad = strerror(errno);
        if (bad) {
            snprintf(l->why, sizeof l->why, "%s", bad);
            if (fd >= 0)
                close(fd);
            return NULL;
        }
    }
    int rc = atl_trace_read(f, keep_step, l->r, l->why, sizeof l->why);
    int read_err = ferror(f) ? errno : 0;
    if (f != stdin)
        fclose(f);
    if (read_err)
        snprintf(l->why, sizeof l->why, "%s", strerror(read_err));
    else if (rc == 0)
        l->rc = 0; /* why, if set, says what was left out */
    return NULL;
}

/* Says what load_run found; -1 when the file could not be read. */
static int load_report(const struct load *l)
{
    if (l->rc != 0) {
        fail(l->path, l->why);
        return -1;
    }
    if (l->why[0]) /* read up to its last whole step: say what was left out */
        fprintf(stderr, "atlas-diff: %s: %s\n", l->path, l->why);
    return 0;
}

/* Reads A, and B when given: B on a thread of its own meanwhile (two files of a million ops
 * are two seconds of parsing each), unless one of them is the standard input. Reports as
 * reading them in turn would: A's error alone when A cannot be read. */
static int load_both(const char *pa, struct run *a, const char *pb, struct run *b)
{
    struct load la = {.path = pa, .r = a}, lb = {.path = pb, .r = b};
    pthread_t t;
    int threaded = pb && strcmp(pa, "-") != 0 && strcmp(pb, "-") != 0 &&
                   pthread_create(&t, NULL, load_run, &lb) == 0;
    load_run(&la);
    if (threaded)
        pthread_join(t, NULL);
    if (load_report(&la) != 0)
        return -1;
    if (!pb)
        return 0;
    if (!threaded)
        load_run(&lb);
    return load_report(&lb);
}

static void run_free(struct run *r)
{
    for (size_t i = 0; i < r->n; i++)
        atl_step_free(&r->steps[i]);
    free(r->steps);
    free(r->prev);
    free(r->last.slot);
    memset(r, 0, sizeof *r);
}

/* t: r's steps by (name, thread, occurrence), the first step of each. */
static int index_kinds(struct kinds *t, const struct run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (kinds_room(t, r->steps, 1))
            return -1;
        size_t *slot = kind_slot(t, r->steps, &r->steps[i], 1);
        if (!*slot) {
            *slot = i + 1;
            t->used++;
        }
    }
    return 0;
}

static void out_line(void *ctx, const char *text)
{
    (void)ctx;
    put_clean(stdout, text);
    putc('\n', stdout);
}

/* clang-format off: one line of the usage per line here */
#define SYNOPSIS                                                                                   \
    "Usage: atlas-diff [--max N] [--ignore kernel[:argN],...] [--pointers MODE] [--residue "       \
    "MODE]\n"                                                                                      \
    "                  A.jsonl [B.jsonl]\n"                                                        \
    "       atlas-diff [--max N] [--ignore ...] [--pointers MODE] [--residue MODE]\n"              \
    "                  --ranks 'trace.%%r.jsonl' | FILE...\n"
/* clang-format on */

static void usage(void)
{
    printf(SYNOPSIS
           "Compare step traces written by atlastrace (ATLAS_TRACE_FILE, atlas-trace --json).\n"
           "\n"
           "  one file:  each step against the previous step of the same name\n"
           "  two files: the n-th step named X in A against the n-th named X in B\n"
           "  --ranks:   N ranks of one job (a pattern whose %%r is each rank's number,\n"
           "             or files in rank order): for each step where they do not all\n"
           "             agree, the ranks that differ from the rest and how, and the\n"
           "             ranks whose file ends early (hung or killed)\n"
           "  -         read a file from standard input\n"
           "\n"
           "  --max N, --max=N        difference lines printed per step (default %u, at most\n"
           "                          ATLAS_DIFF_MAX's limit), then a count of the rest\n"
           "  --ignore LIST, --ignore=LIST\n"
           "                          expected differences to stay quiet about:\n"
           "                          kernel[:argN],... (default: $ATLAS_DIFF_IGNORE)\n"
           "  --pointers MODE, --pointers=MODE\n"
           "                          pointers that moved within their allocation: collapse\n"
           "                          (one line per step, the default), all or none\n"
           "                          (default: $ATLAS_DIFF_POINTERS)\n"
           "  --residue MODE, --residue=MODE\n"
           "                          changed words of by-value parameters that the\n"
           "                          recording process found holding host addresses\n"
           "                          (uninitialised bytes): collapse (the default), all\n"
           "                          or none (default: $ATLAS_DIFF_RESIDUE)\n"
           "  -h, --help              print this help and exit\n"
           "  -V, --version           print the version and exit\n"
           "\n"
           "Exit status: 0 identical, 1 differences found, 2 trouble (a bad option, an\n"
           "unreadable, truncated or corrupt file).\n",
           default_max());
}

/* A refusal: what was wrong (fmt with one %s, the argument at fault), then the synopsis, not
 * the whole help, so the message stays on the screen; exit 2. */
static _Noreturn void bad_usage(const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg);
    fputs("atlas-diff: ", stderr);
    put_clean(stderr, msg);
    fprintf(stderr, "\n" SYNOPSIS "Run 'atlas-diff --help' for the options.\n");
    exit(2);
}

/* --max's value, by the rules and limits of ATLAS_DIFF_MAX (src/config.def), which sets the
 * same thing for the live report. */
static unsigned parse_max(const char *v)
{
    int idx = atl_config_find("ATLAS_DIFF_MAX");
    const char *why = atl_config_check(idx, v);
    if (why) {
        char fmt[160];
        snprintf(fmt, sizeof fmt, "--max %%s: %s (N is a number of lines, as for ATLAS_DIFF_MAX)",
                 why);
        bad_usage(fmt, v);
    }
    return (unsigned)strtoull(v, NULL, 0);
}

/* --pointers' or --residue's value (or the setting's, `name`), by the rules of that
 * setting: its index. */
static int parse_mode(const char *name, const char *v, const char *what)
{
    unsigned long long i = 0;
    const char *why = atl_config_value(atl_config_find(name), v, &i);
    if (why) {
        char fmt[160];
        snprintf(fmt, sizeof fmt, "%s%%s: %s (collapse, all or none)", what, why);
        bad_usage(fmt, v);
    }
    return (int)i;
}

/* "--max=N" or "--max N": the value, advancing *i past it; NULL when argv[*i] is not `opt`. */
static const char *option_value(int argc, char **argv, int *i, const char *opt)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*i], opt, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 >= argc)
        bad_usage("%s needs a value", opt);
    return argv[++*i];
}

int main(int argc, char **argv)
{
    unsigned max = default_max();
    const char *ign = getenv("ATLAS_DIFF_IGNORE");
    const char *pv = getenv("ATLAS_DIFF_POINTERS");
    int pointers = pv && *pv ? parse_mode("ATLAS_DIFF_POINTERS", pv, "ATLAS_DIFF_POINTERS=")
                             : ATL_PTRS_COLLAPSE;
    const char *rv = getenv("ATLAS_DIFF_RESIDUE");
    int residue =
        rv && *rv ? parse_mode("ATLAS_DIFF_RESIDUE", rv, "ATLAS_DIFF_RESIDUE=") : ATL_PTRS_COLLAPSE;
    /* at most argc names: --ranks takes any number */
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int nf = 0, options_end = 0, ranks = 0;
    if (!files)
        return 2;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        ranks |= !strcmp(argv[i], "--ranks"); /* anywhere: then any number of files */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (options_end || a[0] != '-' || !strcmp(a, "-")) {
            if (nf == 2 && !ranks)
                bad_usage("%s: a third file (atlas-diff compares one or two)", a);
            files[nf++] = a;
        } else if (!strcmp(a, "--")) {
            options_end = 1;
        } else if (!strcmp(a, "--ranks")) {
            ranks = 1; /* found by the scan above */
        } else if ((v = option_value(argc, argv, &i, "--max"))) {
            max = parse_max(v);
        } else if ((v = option_value(argc, argv, &i, "--ignore"))) {
            ign = v;
        } else if ((v = option_value(argc, argv, &i, "--pointers"))) {
            pointers = parse_mode("ATLAS_DIFF_POINTERS", v, "--pointers ");
        } else if ((v = option_value(argc, argv, &i, "--residue"))) {
            residue = parse_mode("ATLAS_DIFF_RESIDUE", v, "--residue ");
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            free(files);
            return 0;
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("atlas-diff (atlastrace) %s\n", ATLAS_VERSION);
            free(files);
            return 0;
        } else {
            bad_usage("unknown option %s", a);
        }
    }
    if (nf == 0)
        bad_usage("%s", "no trace file given");
    if (ranks) {
        struct atl_ignore rig;
        atl_ignore_parse(&rig, ign);
        struct atl_diff_opts ro = {.max_lines = max,
                                   .max_name = "--max",
                                   .ignore = &rig,
                                   .line = out_line,
                                   .cross = 1, /* ranks are other processes */
                                   .pointers = pointers,
                                   .residue = residue};
        int rc = atl_diff_ranks((char *const *)files, nf, &ro, fail);
        atl_ignore_free(&rig);
        free(files);
        return rc;
    }
    struct run a = {0}, b = {0};
    if (load_both(files[0], &a, nf == 2 ? files[1] : NULL, &b)) {
        run_free(&a);
        run_free(&b);
        free(files);
        return 2;
    }

    struct atl_ignore ig;
    atl_ignore_parse(&ig, ign);
    struct atl_diff_stats st;
    memset(&st, 0, sizeof st);
    struct atl_diff_opts o = {
        .max_lines = max, .max_name = "--max", .ignore = &ig, .line = out_line};
    o.cross = nf == 2; /* host addresses of two processes never match */
    o.pointers = pointers;
    o.residue = residue;
    /* the steps' thread and stream are named when there is more than one */
    for (size_t i = 1; i < a.n && !o.where; i++)
        o.where = strcmp(a.steps[i].thread, a.steps[0].thread) != 0 ||
                  a.steps[i].stream != a.steps[0].stream;
    size_t found = 0;
    char line[256];
    if (nf == 1) {
        st.steps = a.n;
        for (size_t i = 0; i < a.n; i++)
            if (a.prev[i])
                found += atl_step_diff(&a.steps[a.prev[i] - 1], &a.steps[i], &o, &st) != 0;
    } else {
        st.steps = a.n + b.n;
        /* each run's steps by (name, thread, occurrence): the first of each */
        struct kinds ka = {0}, kb = {0};
        if (index_kinds(&ka, &a) || index_kinds(&kb, &b)) {
            fprintf(stderr, "atlas-diff: out of memory\n");
            free(ka.slot), free(kb.slot);
            run_free(&a), run_free(&b), atl_ignore_free(&ig), free(files);
            return 2;
        }
        for (size_t j = 0; j < b.n; j++) {
            const struct atl_step *sb = &b.steps[j];
            size_t ia = a.n ? *kind_slot(&ka, a.steps, sb, 1) : 0;
            if (!ia) {
                snprintf(line, sizeof line, "step \"%s\" #%llu is only in %s", sb->name,
                         (unsigned long long)sb->nth, files[1]);
                out_line(NULL, line);
                found++;
                continue;
            }
            found += atl_step_diff(&a.steps[ia - 1], sb, &o, &st) != 0;
        }
        for (size_t i = 0; i < a.n; i++) {
            if (!b.n || !*kind_slot(&kb, b.steps, &a.steps[i], 1)) {
                snprintf(line, sizeof line, "step \"%s\" #%llu is only in %s", a.steps[i].name,
                         (unsigned long long)a.steps[i].nth, files[0]);
                out_line(NULL, line);
                found++;
            }
        }
        free(ka.slot);
        free(kb.slot);
    }
    atl_diff_summary(&st, out_line, NULL);
    run_free(&a);
    run_free(&b);
    atl_ignore_free(&ig);
    free(files);
    return found ? 1 : 0;
}
