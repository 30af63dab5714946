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
#include "diff-runs.h"
#include "findjson.h"
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

/* Reads one trace file, a step at a time into fn (diff-runs.h's atl_read_fn): a
 * directory, anything else that is not a regular file (but "-", the standard input)
 * or a file that cannot be opened is refused with why; a line past the reader's
 * bound ends the read (src/tracejson.c). */
static int read_trace(const char *path, int (*fn)(void *, struct atl_step *),
                      void (*fresh)(void *, struct atl_step *), void *ctx, char *why, size_t whylen)
{
    struct stat st;
    why[0] = '\0';
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
            snprintf(why, whylen, "%s", bad);
            if (fd >= 0)
                close(fd);
            return -1;
        }
    }
    int rc = atl_trace_read_reuse(f, fn, fresh, ctx, why, whylen);
    int read_err = ferror(f) ? errno : 0;
    if (f != stdin)
        fclose(f);
    if (read_err) {
        snprintf(why, whylen, "%s", strerror(read_err));
        return -1;
    }
    return rc; /* 0: why, if set, says what was left out */
}

/* --report=FILE: each differing step, and each step of one file only, as a finding: one JSON
 * line each (src/findjson.h, docs/findings.schema.json, as the library's ATLAS_REPORT writes a
 * differing step). Held until the diff is through: trouble (exit status 2) replaces the report,
 * and then the file holds nothing. */
static struct {
    const char *files[2];
    uint64_t id;
    char *text;
    size_t n, cap;
    int oom;
} found;

static void found_add(const char *message, const char *step, uint64_t nth, const char *kernel,
                      const char *mangled, int printed)
{
    char line[8192];
    struct atl_finding_rec rec = {.tool = "atlas-diff",
                                  .id = ++found.id,
                                  .kind = "step-diff",
                                  .message = message,
                                  .kernel = kernel,
                                  .kernel_mangled = mangled,
                                  .step = step,
                                  .step_no = nth,
                                  .files = {found.files[0], found.files[1]},
                                  .printed = printed};
    size_t n = atl_finding_json(&rec, line, sizeof line);
    if (found.n + n > found.cap) {
        size_t cap = found.cap ? found.cap * 2 : 65536;
        while (cap < found.n + n)
            cap *= 2;
        char *t = realloc(found.text, cap);
        if (!t) {
            found.oom = 1;
            return;
        }
        found.text = t, found.cap = cap;
    }
    memcpy(found.text + found.n, line, n);
    found.n += n;
}

/* A differing step (struct atl_diff_opts' found): every report is printed, a folded repeat
 * in its run's line. */
static int step_found(void *ctx, const struct atl_diff_found *d)
{
    (void)ctx;
    found_add(d->header, d->b->name, d->b->nth, d->kernel, d->kernel_mangled, !d->folded);
    return 1;
}

/* A step only one file has, from its line (tools/diff-runs.c): 'step "NAME" #N is only in F',
 * or 'steps "NAME" #N-#M (...) are only in F' for several of one shape. */
static void only_in(const char *text)
{
    int one = strncmp(text, "step \"", 6) == 0, many = strncmp(text, "steps \"", 7) == 0;
    if ((!one || !strstr(text, " is only in ")) && (!many || !strstr(text, " are only in ")))
        return;
    const char *name = text + (one ? 6 : 7), *q = strchr(name, '"');
    char step[64];
    if (!q || q[1] != ' ' || q[2] != '#')
        return;
    snprintf(step, sizeof step, "%.*s", (int)(q - name), name);
    found_add(text, step, strtoull(q + 3, NULL, 10), NULL, NULL, 1);
}

static void out_line(void *ctx, const char *text)
{
    if (ctx)
        only_in(text);
    put_clean(stdout, text);
    putc('\n', stdout);
}

/* clang-format off: one line of the usage per line here */
#define SYNOPSIS                                                                                   \
    "Usage: atlas-diff [--diff-max N] [--diff-ignore kernel[:argN],...] [--diff-pointers MODE]\n"  \
    "                  [--diff-residue MODE] [--diff-warmup] [--report FILE] A.jsonl [B.jsonl]\n" \
    "       atlas-diff [--diff-max N] [--diff-ignore ...] [--diff-pointers MODE]\n"                \
    "                  [--diff-residue MODE] --ranks 'trace.%%r.jsonl' | FILE...\n"
/* clang-format on */

static void usage(void)
{
    printf(SYNOPSIS
           "Compare step traces written by atlastrace (ATLAS_TRACE_FILE, atlas-trace\n"
           "--trace-file).\n"
           "\n"
           "  one file:  each step against the previous step of the same name\n"
           "  two files: the n-th step named X in A against the n-th named X in B\n"
           "  --ranks:   N ranks of one job (a pattern whose %%r is each rank's number,\n"
           "             or files in rank order): for each step where they do not all\n"
           "             agree, the ranks that differ from the rest and how, and the\n"
           "             ranks whose file ends early (hung or killed)\n"
           "  -         read a file from standard input\n"
           "\n"
           "The options are atlas-trace's for the same settings (each sets what its\n"
           "ATLAS_DIFF_* variable does); their first names, --max, --ignore, --pointers,\n"
           "--residue and --warmup, are still taken.\n"
           "\n"
           "  --diff-max N, --diff-max=N\n"
           "                          difference lines printed per step, then a count of\n"
           "                          the rest (default: $ATLAS_DIFF_MAX, else %u)\n"
           "  --diff-ignore LIST, --diff-ignore=LIST\n"
           "                          expected differences to stay quiet about:\n"
           "                          kernel[:argN],... (default: $ATLAS_DIFF_IGNORE)\n"
           "  --diff-pointers MODE, --diff-pointers=MODE\n"
           "                          pointers that moved within their allocation: collapse\n"
           "                          (one line per step, the default), all or none\n"
           "                          (default: $ATLAS_DIFF_POINTERS)\n"
           "  --diff-residue MODE, --diff-residue=MODE\n"
           "                          changed words of by-value parameters that the\n"
           "                          recording process found holding host addresses\n"
           "                          (uninitialised bytes): collapse (the default), all\n"
           "                          or none (default: $ATLAS_DIFF_RESIDUE)\n"
           "  --diff-warmup           one file: print the warm-up steps' differences too\n"
           "                          (a shape not yet repeated with the same host values\n"
           "                          nor changed the same way twice; default: counted;\n"
           "                          $ATLAS_DIFF_WARMUP=1 is the same)\n"
           "  --report FILE, --report=FILE\n"
           "                          write each differing step, and each step of one file\n"
           "                          only, to FILE as a JSON line (docs/findings.schema.json)\n"
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

/* --diff-max's value (typed as `opt`), by the rules and limits of ATLAS_DIFF_MAX
 * (src/config.def), which sets the same thing for the live report. */
static unsigned parse_max(const char *opt, const char *v)
{
    unsigned long long n = 0;
    const char *why = atl_config_value(atl_config_find("ATLAS_DIFF_MAX"), v, &n);
    if (why) {
        char fmt[160];
        snprintf(fmt, sizeof fmt, "%s %%s: %s (N is a number of lines, as for ATLAS_DIFF_MAX)",
                 opt, why);
        bad_usage(fmt, v);
    }
    /* the value as the library reads it (decimal or 0x hex: 010 is ten, 09 is nine) */
    return (unsigned)n;
}

/* --ignore's list, refused by the rules the library refuses ATLAS_DIFF_IGNORE with: an entry
 * that does not parse would otherwise quietly ignore nothing. */
static const char *parse_ignore(const char *what, const char *v)
{
    const char *why = atl_config_check(atl_config_find("ATLAS_DIFF_IGNORE"), v);
    if (why) {
        char fmt[320];
        snprintf(fmt, sizeof fmt,
                 "%s %%s: %s (a list of kernel or kernel:argN, as for "
                 "ATLAS_DIFF_IGNORE)",
                 what, why);
        bad_usage(fmt, v);
    }
    return v;
}

/* --pointers' or --residue's value, by the rules of setting `name`: its index. */
static int parse_mode(const char *name, const char *v, const char *what)
{
    unsigned long long i = 0;
    const char *why = atl_config_value(atl_config_find(name), v, &i);
    if (why) {
        char fmt[160];
        snprintf(fmt, sizeof fmt, "%s %%s: %s (collapse, all or none)", what, why);
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

extern char **environ;

/* The option the settings table gives variable `var` ("--diff-max" for ATLAS_DIFF_MAX), as
 * atlas-trace takes it: one name in both tools. atlas-diff's first names (--max, --ignore,
 * --pointers, --residue, --warmup) are still taken. */
static const char *table_option(const char *var, char *buf, size_t len)
{
    int i = atl_config_find(var);
    snprintf(buf, len, "--%s", i >= 0 && atl_cfg_vars[i].opt.name ? atl_cfg_vars[i].opt.name : var);
    return buf;
}

/* `opt` (the table's name) or `old` (the older one): the value, as option_value gives it, and
 * the name as typed in *typed. */
static const char *either_value(int argc, char **argv, int *i, const char *opt, const char *old,
                                const char **typed)
{
    const char *v = option_value(argc, argv, i, opt);
    if (v) {
        *typed = opt;
        return v;
    }
    v = option_value(argc, argv, i, old);
    if (v)
        *typed = old;
    return v;
}

/* ATLAS_DIFF_<name>, read through the settings module by the library's rules; a bad value
 * stops here, as a bad option does (the library would say it and use the default: a run
 * offline can be asked again). Its text into *text, its number returned. */
static unsigned long long setting(const char *name, const char **text, const char *is)
{
    unsigned long long num;
    const char *why = atl_config_env(atl_config_find(name), environ, text, &num);
    if (why) {
        char fmt[400];
        snprintf(fmt, sizeof fmt, "%s=%%s: %s%s", name, why, is);
        bad_usage(fmt, *text);
    }
    return num;
}

int main(int argc, char **argv)
{
    const char *ign, *text, *typed = NULL;
    char o_max[40], o_ign[40], o_ptr[40], o_res[40], o_warm[40];
    table_option("ATLAS_DIFF_MAX", o_max, sizeof o_max);
    table_option("ATLAS_DIFF_IGNORE", o_ign, sizeof o_ign);
    table_option("ATLAS_DIFF_POINTERS", o_ptr, sizeof o_ptr);
    table_option("ATLAS_DIFF_RESIDUE", o_res, sizeof o_res);
    table_option("ATLAS_DIFF_WARMUP", o_warm, sizeof o_warm);
    unsigned max = (unsigned)setting("ATLAS_DIFF_MAX", &text, " (a number of lines)");
    /* what set the lines per step, for the "not shown" line */
    const char *max_name = text ? "ATLAS_DIFF_MAX" : o_max;
    setting("ATLAS_DIFF_IGNORE", &ign, " (a list of kernel or kernel:argN)");
    int pointers = (int)setting("ATLAS_DIFF_POINTERS", &text, " (collapse, all or none)");
    int residue = (int)setting("ATLAS_DIFF_RESIDUE", &text, " (collapse, all or none)");
    int warmup = (int)setting("ATLAS_DIFF_WARMUP", &text, " (0 or 1)");
    /* at most argc names: --ranks takes any number */
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int nf = 0, options_end = 0, ranks = 0;
    const char *report = NULL;
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
        } else if ((v = either_value(argc, argv, &i, o_max, "--max", &typed))) {
            max = parse_max(typed, v);
            max_name = typed;
        } else if ((v = either_value(argc, argv, &i, o_ign, "--ignore", &typed))) {
            ign = parse_ignore(typed, v);
        } else if ((v = either_value(argc, argv, &i, o_ptr, "--pointers", &typed))) {
            pointers = parse_mode("ATLAS_DIFF_POINTERS", v, typed);
        } else if ((v = either_value(argc, argv, &i, o_res, "--residue", &typed))) {
            residue = parse_mode("ATLAS_DIFF_RESIDUE", v, typed);
        } else if (!strcmp(a, o_warm) || !strcmp(a, "--warmup")) {
            warmup = 1;
        } else if ((v = option_value(argc, argv, &i, "--report"))) {
            if (!*v)
                bad_usage("%s", "--report needs a file name");
            report = v;
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
    if (nf == 0) {
        free(files); /* bad_usage exits: the list would read as a leak */
        bad_usage("%s", "no trace file given");
    }
    if (ranks && report) {
        free(files);
        bad_usage("%s", "--report is not written with --ranks (one file or two)");
    }
    for (int i = 0; report && i < nf; i++)
        if (strcmp(report, files[i]) == 0) {
            free(files);
            bad_usage("--report %s: a trace file compared, which the report would overwrite",
                      report);
        }
    if (ranks) {
        struct atl_ignore rig;
        atl_ignore_parse(&rig, ign);
        struct atl_diff_opts ro = {.max_lines = max,
                                   .max_name = max_name,
                                   .ignore = &rig,
                                   .line = out_line,
                                   .cross = 1, /* ranks are other processes */
                                   /* ranks run alike: a step of another shape is said so */
                                   .shapes = 1,
                                   .pointers = pointers,
                                   .residue = residue};
        int rc = atl_diff_ranks((char *const *)files, nf, &ro, fail);
        atl_ignore_free(&rig);
        free(files);
        return rc;
    }
    struct atl_ignore ig;
    atl_ignore_parse(&ig, ign);
    struct atl_diff_opts o = {
        .max_lines = max, .max_name = max_name, .ignore = &ig, .line = out_line};
    o.cross = nf == 2; /* host addresses of two processes never match */
    o.pointers = pointers;
    o.residue = residue;
    o.warmup = nf == 1 && !warmup; /* one run: its warm-up steps held back, as live */
    FILE *rf = NULL;
    if (report) {
        /* opened first: a file that cannot be written is said before any work */
        if (!(rf = fopen(report, "w"))) {
            fail(report, strerror(errno));
            atl_ignore_free(&ig);
            free(files);
            return 2;
        }
        found.files[0] = files[0], found.files[1] = nf == 2 ? files[1] : NULL;
        o.found = step_found;
        o.ctx = &found; /* out_line reads the lines of steps of one file only */
    }
    int rc = atl_diff_runs(files[0], nf == 2 ? files[1] : NULL, read_trace, &o, fail);
    if (rf) {
        if (found.oom) {
            fail(report, "out of memory: the findings are not written");
            rc = 2;
        }
        if (rc != 2 && found.n)
            fwrite(found.text, 1, found.n, rf);
        if (fclose(rf) != 0 && rc != 2) {
            fail(report, strerror(errno)); /* a findings file cut short is trouble */
            rc = 2;
        }
        free(found.text);
    }
    atl_ignore_free(&ig);
    free(files);
    return rc;
}