/*
 * atlas-trace: run a program under atlastrace.
 *
 *   atlas-trace [options] [--] program [args...]
 *
 * Each option becomes the ATLAS_* variable the library reads, the tool finds libatlastrace.so,
 * puts it in front of LD_PRELOAD and execs the program. It does not fork: the process the shell
 * waits for IS the program, so its exit status, or the signal that killed it, reaches the shell,
 * a job scheduler or torchrun unchanged, and signals sent to "atlas-trace" reach the program.
 * Except with --error-exitcode: the status is then atlas-trace's verdict over every process the
 * program started (a wrapper script's children included, however each one ended), so it runs
 * the program as a child, passes on the signals it is sent, and gives back the child's status,
 * or the signal that ended it, when nothing counted was found.
 *
 * Everything is checked before anything is set: a bad option changes nothing and runs nothing.
 * The options, their values' rules and --help are the library's one table of settings
 * (src/config.def, read through src/config.h): a value the tool accepts is one the library will
 * not ignore, and a setting given an option there is an option here with nothing else to write.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "findings.h"
#include "hint.h"

#ifndef ATLAS_VERSION
#define ATLAS_VERSION "unknown"
#endif

#define LIB_NAME "libatlastrace.so"

/* The tool's own failures, numbered as env(1), timeout(1) and the shells number them, so they
 * cannot be mistaken for a status the program chose. */
enum {
    EXIT_USAGE = 2,        /* a bad option or no program */
    EXIT_NO_LIBRARY = 125, /* libatlastrace.so not found */
    EXIT_CANNOT_RUN = 126, /* the program exists but cannot be executed */
    EXIT_NOT_FOUND = 127,  /* no such program */
};

static const char *prog = "atlas-trace";

/* ---- the options, made from the settings table ------------------------------------------ */

/* One option as getopt sees it: a long name and the letters that spell it too, and what it
 * sets. Two rows may share a long name (--trace is ATLAS_TRACE bare, ATLAS_STEP with a value);
 * an alias (config.def's ATL_CFG_ALIAS) spells a row's option another way (-o, --log-file) or,
 * with a fixed value, is a flag of its own. */
struct opt {
    const char *name;  /* without "--"; NULL: a letter only */
    char letters[4];   /* short spellings */
    int flag_row;      /* the row set when no value is given (a FLAG's 1, a bare value), or -1 */
    int value_row;     /* the row given the value, or -1 */
    const char *fixed; /* an alias's value for flag_row */
    const char *help;  /* an alias's own help, or NULL */
};

static struct opt *opts;
static size_t nopts;

static struct opt *opt_named(const char *name)
{
    for (size_t i = 0; i < nopts; i++)
        if (opts[i].name && name && strcmp(opts[i].name, name) == 0 && !opts[i].fixed)
            return &opts[i];
    return NULL;
}

static struct opt *opt_add(const char *name)
{
    struct opt *o = &opts[nopts++];
    memset(o, 0, sizeof *o);
    o->name = name;
    o->flag_row = o->value_row = -1;
    return o;
}

static void make_options(void)
{
    opts = calloc(atl_cfg_nvars + atl_cfg_naliases, sizeof *opts);
    if (!opts) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(EXIT_NO_LIBRARY);
    }
    for (size_t i = 0; i < atl_cfg_nvars; i++) {
        const struct atl_cfg_opt *co = &atl_cfg_vars[i].opt;
        if (!co->name)
            continue;
        struct opt *o = opt_named(co->name);
        if (!o)
            o = opt_add(co->name);
        if (co->kind == ATL_OPT_FLAG || co->bare)
            o->flag_row = (int)i;
        if (co->kind != ATL_OPT_FLAG)
            o->value_row = (int)i;
    }
    for (size_t i = 0; i < atl_cfg_naliases; i++) {
        const struct atl_cfg_alias *a = &atl_cfg_aliases[i];
        int row = atl_config_find(a->var);
        struct opt *o = row < 0 ? NULL : opt_named(atl_cfg_vars[row].opt.name);
        if (a->fixed || !o) { /* a flag of its own */
            o = opt_add(a->name);
            o->flag_row = row;
            o->fixed = a->fixed;
            o->help = a->help;
        } else if (a->name) { /* another long name of the row's option */
            struct opt *same = opt_add(a->name);
            same->flag_row = o->flag_row, same->value_row = o->value_row;
        }
        if (a->letter && strlen(o->letters) < sizeof o->letters - 1)
            o->letters[strlen(o->letters)] = (char)a->letter;
    }
}

/* The option's first long name: how messages name it ("--log", for -o as well). */
static const char *row_option(int row)
{
    static char name[80];
    snprintf(name, sizeof name, "--%s", atl_cfg_vars[row].opt.name);
    return name;
}

/* The option being parsed as it was typed ("--d2h", an older name, "-o"), for messages that
 * name it; NULL outside the parse. */
static char opt_typed[80];

static const char *typed_option(int row)
{
    return opt_typed[0] ? opt_typed : row_option(row);
}

/* The option word at argv[i] as typed, without its value. */
static void typed_word(const char *word, char *out, size_t len)
{
    snprintf(out, len, "%.*s", (int)strcspn(word, "="), word);
}

/* Do a and b spell one option (--log and --log-file)? */
static int same_option(const struct opt *a, const struct opt *b)
{
    return !a->fixed && !b->fixed && a->name && b->name && a->flag_row == b->flag_row &&
           a->value_row == b->value_row;
}

/* Is o a second spelling of an option listed before it (--help prints it on that line)? */
static int spells_another(const struct opt *o)
{
    for (const struct opt *p = opts; p < o; p++)
        if (same_option(p, o))
            return 1;
    return 0;
}

/* "-o, --log=FILE, --log-file=FILE": the letters, then every long name of the option. */
static void spelled(const struct opt *o, char *out, size_t len)
{
    const char *meta = o->value_row >= 0 ? atl_cfg_vars[o->value_row].opt.meta : NULL;
    int optional = o->value_row >= 0 && o->flag_row >= 0;
    size_t n = 0;
    out[0] = '\0';
    for (const char *l = o->letters; *l && n < len; l++)
        n += (size_t)snprintf(out + n, len - n, "-%c, ", *l);
    for (const struct opt *a = o; a < opts + nopts && n < len; a++)
        if (a == o || same_option(a, o))
            n += (size_t)snprintf(out + n, len - n, "%s--%s%s%s%s", a == o ? "" : ", ", a->name,
                                  !meta      ? ""
                                  : optional ? "[="
                                             : "=",
                                  meta ? meta : "", meta && optional ? "]" : "");
}

/* One option of --help: its spelling, then its help wrapped from column 24 to 79. */
static void help_entry(FILE *f, const char *spelling, const char *help, const char *more)
{
    enum { COL = 24, WIDTH = 79 };
    char text[1024];
    snprintf(text, sizeof text, "%s%s%s", help, more ? "; " : "", more ? more : "");
    int col = fprintf(f, "  %s", spelling);
    if (col > COL - 2) {
        fputc('\n', f);
        col = 0;
    }
    for (const char *p = text; *p;) {
        size_t w = strcspn(p, " ");
        if (col > COL && col + 1 + (int)w > WIDTH) {
            fputc('\n', f);
            col = 0;
        }
        if (col < COL)
            col += fprintf(f, "%*s", COL - col, "");
        else
            col += fprintf(f, " ");
        col += fprintf(f, "%.*s", (int)w, p);
        p += w;
        p += strspn(p, " ");
    }
    fputc('\n', f);
}

static const char *row_help(int row)
{
    const struct atl_cfg_var *v = &atl_cfg_vars[row];
    return v->opt.help ? v->opt.help : v->help;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: %s [options] [--] program [args...]\n"
            "Run a CUDA program with the atlastrace interposer (libatlastrace.so) preloaded.\n"
            "\n",
            prog);
    for (size_t i = 0; i < nopts; i++) {
        const struct opt *o = &opts[i];
        if (spells_another(o))
            continue;
        char sp[160];
        if (o->fixed) {
            snprintf(sp, sizeof sp, "%s%c%s%s%s", o->letters[0] ? "-" : "",
                     o->letters[0] ? o->letters[0] : ' ', o->letters[0] && o->name ? ", " : "",
                     o->name ? "--" : "", o->name ? o->name : "");
            help_entry(f, sp + (o->letters[0] ? 0 : 1), o->help ? o->help : row_help(o->flag_row),
                       NULL);
            continue;
        }
        spelled(o, sp, sizeof sp);
        int two = o->flag_row >= 0 && o->value_row >= 0 && o->flag_row != o->value_row;
        help_entry(f, sp,
                   row_help(two                 ? o->flag_row
                            : o->value_row >= 0 ? o->value_row
                                                : o->flag_row),
                   two ? row_help(o->value_row) : NULL);
    }
    help_entry(f, "-h, --help", "print this help and exit", NULL);
    help_entry(f, "-V, --version", "print the version and exit", NULL);
    fprintf(f, "\n"
               "In FILE, %%p is the process ID and %%r the rank (RANK, LOCAL_RANK,\n"
               "OMPI_COMM_WORLD_RANK or SLURM_PROCID): each process of a job writes its own file.\n"
               "ATLAS_LIB=PATH names the library to preload instead of searching for it.\n"
               "\n"
               "Exit status: the program's (128+N when signal N ended it), or N of\n"
               "--error-exitcode when something was reported; 2 for a bad option,\n"
               "125 when libatlastrace.so is not found, 126 when the program cannot be run,\n"
               "127 when it is not found.\n");
}

static _Noreturn void bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    /* the synopsis, not the whole help: the message stays on the screen */
    fprintf(stderr,
            "\nUsage: %s [options] [--] program [args...]\nRun '%s --help' for the options.\n",
            prog, prog);
    exit(EXIT_USAGE);
}

/* The option being parsed got its value as the next word ("--opt VALUE"), not "--opt=VALUE":
 * refusals then show it as typed, and a value that is the program is named as such. */
static int value_apart;

/* 1 when path names an executable regular file: given as an option's value in a word of its
 * own, it is most likely the program, taken for the value. */
static int looks_like_program(const char *path)
{
    struct stat st;
    return value_apart && stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

/* `--opt ./app` where ./app was meant as the program: refused, with how to write it. */
static _Noreturn void program_as_value(const char *opt, const char *value)
{
    char shown[72], msg[512];
    atl_config_show_value(value, shown, sizeof shown);
    snprintf(msg, sizeof msg,
             "%s %s: %s is a program, taken as the option's value; write %s=VALUE before the "
             "program",
             opt, shown, shown, opt);
    bad_usage("%s", msg);
}

/* Exits with "OPT=VALUE: REASON" (or "OPT VALUE: REASON", as it was typed) and the usage; the
 * value is shown as the library shows setting values (printable, bounded). */
static _Noreturn void refuse(const char *opt, const char *value, const char *reason)
{
    char shown[72], msg[640];
    atl_config_show_value(value, shown, sizeof shown);
    int n = snprintf(msg, sizeof msg, "%s%s%s: %s", opt, value_apart ? " " : "=", shown, reason);
    if (looks_like_program(value) && n > 0 && (size_t)n < sizeof msg)
        snprintf(msg + n, sizeof msg - (size_t)n,
                 " (%s is a program: the value goes with the option, %s=VALUE, before the "
                 "program)",
                 shown, opt);
    bad_usage("%s", msg);
}

/* What a value of row `row` is, for a refusal: "WHEN is one of free, sync or launch". */
static void value_is(int row, char *out, size_t len)
{
    const struct atl_cfg_var *v = &atl_cfg_vars[row];
    const char *meta = v->opt.meta;
    size_t n = 0;
    out[0] = '\0';
    if (v->type == ATL_CFG_UINT) {
        snprintf(out, len, "; %s is a number, decimal or 0x hex", meta);
    } else if (v->type == ATL_CFG_ENUM) {
        size_t k = 0;
        while (v->choices[k])
            k++;
        n = (size_t)snprintf(out, len, "; %s is %s", meta, k > 2 ? "one of " : "");
        for (size_t i = 0; i < k && n < len; i++)
            n += (size_t)snprintf(out + n, len - n, "%s%s", v->choices[i],
                                  i + 2 < k   ? ", "
                                  : i + 1 < k ? " or "
                                              : "");
    }
}

/* Refuses `value` for the option of row `row` when the library would ignore it as that setting
 * (the reason is the library's own: "out of range 0..1048576"), or when the option takes less
 * than the setting (config.def's vcheck). */
static void check_value(int row, const char *value)
{
    const struct atl_cfg_var *v = &atl_cfg_vars[row];
    const char *why = v->opt.vcheck ? v->opt.vcheck(value) : NULL;
    if (why)
        refuse(typed_option(row), value, why);
    if ((why = atl_config_check(row, value))) {
        char reason[384], is[200];
        value_is(row, is, sizeof is);
        snprintf(reason, sizeof reason, "%s%s", why, is);
        refuse(typed_option(row), value, reason);
    }
    /* a value anything may be (a kernel pattern, a name), given as its own word: not the
     * program the user meant to run */
    if (looks_like_program(value))
        program_as_value(typed_option(row), value);
}

/* An output file, made absolute now: the program may change directory before it writes.
 * Refused when it names a folder, or an executable file: `--json ./app lib.so` (the file
 * forgotten) would run lib.so and let the library truncate ./app. */
static char *output_path(const char *opt, const char *path)
{
    struct stat st;
    if (*path == '\0')
        bad_usage("%s needs a file name", opt);
    if (!strchr(path, '%') && stat(path, &st) == 0) {
        char msg[PATH_MAX + 256];
        if (S_ISDIR(st.st_mode))
            snprintf(msg, sizeof msg, "%s %s: a folder, not a file", opt, path);
        else if (S_ISREG(st.st_mode) && (st.st_mode & 0111))
            snprintf(msg, sizeof msg,
                     "%s %s: an executable file, which the report would overwrite (the program "
                     "comes after the file: %s=FILE program ...)",
                     opt, path, opt);
        else
            msg[0] = '\0';
        if (msg[0])
            bad_usage("%s", msg);
    }
    if (path[0] == '/')
        return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return strdup(path);
    char *abs;
    if (asprintf(&abs, "%s/%s", cwd, path) < 0)
        return strdup(path);
    return abs;
}

/* A file the library will read (--suppressions): readable now, as a misspelt name would
 * silence nothing; made absolute, as the program may change directory. Given again, the files
 * are joined with ':' after `prev` (the setting's own separator, so no name may hold one). */
static char *input_files(const char *opt, const char *path, const char *prev)
{
    char msg[PATH_MAX + 256];
    struct stat st;
    if (*path == '\0')
        bad_usage("%s needs a file name", opt);
    if (looks_like_program(path))
        program_as_value(opt, path);
    if (path[strcspn(path, ":,")]) {
        snprintf(msg, sizeof msg, "%s=%s: a file name with ':' or ',', which separate files", opt,
                 path);
        bad_usage("%s", msg);
    }
    /* non-blocking: a FIFO would hold the open until something writes to it */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(msg, sizeof msg, "%s=%s: %s", opt, path,
                 fd < 0                ? strerror(errno)
                 : S_ISDIR(st.st_mode) ? "a folder, not a file"
                                       : "not a regular file");
        bad_usage("%s", msg);
    }
    close(fd);
    char *abs = realpath(path, NULL), *all;
    if (!abs || asprintf(&all, "%s%s%s", prev ? prev : "", prev ? ":" : "", abs) < 0) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(EXIT_NO_LIBRARY);
    }
    free(abs);
    return all;
}

/* Do two absolute output names name one file: the same name, or one file already there? */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0)
        return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Where the library is, as an absolute path (a relative LD_PRELOAD entry would be looked up again
 * from whatever directory each child process starts in). In order: $ATLAS_LIB; next to this
 * executable (the build tree: build/atlas-trace beside build/libatlastrace.so); ../lib/ from it
 * (an installed prefix: bin/atlas-trace and lib/libatlastrace.so). */
static char *find_library(void)
{
    char buf[PATH_MAX], *abs;

    const char *env = getenv("ATLAS_LIB");
    if (env && *env) {
        abs = realpath(env, NULL);
        if (!abs || !is_file(abs)) {
            fprintf(stderr, "%s: ATLAS_LIB=%s: %s\n", prog, env,
                    abs ? "not a regular file" : strerror(errno));
            exit(EXIT_NO_LIBRARY);
        }
        return abs;
    }

    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) {
        fprintf(stderr, "%s: cannot find my own executable (/proc/self/exe): %s\n", prog,
                strerror(errno));
        exit(EXIT_NO_LIBRARY);
    }
    buf[n] = '\0';
    /* /proc/self/exe is canonical (links resolved), so cutting components is exact */
    char *slash = strrchr(buf, '/');
    *slash = '\0';
    char tried[2][PATH_MAX + 32];
    snprintf(tried[0], sizeof tried[0], "%s/" LIB_NAME, buf);
    slash = strrchr(buf, '/');
    if (slash) /* else the tool was /atlas-trace and the prefix is / */
        *slash = '\0';
    snprintf(tried[1], sizeof tried[1], "%s/lib/" LIB_NAME, buf);
    for (int i = 0; i < 2; i++)
        if (is_file(tried[i]) && (abs = realpath(tried[i], NULL)))
            return abs;
    fprintf(stderr, "%s: cannot find " LIB_NAME ": looked for %s and %s (set ATLAS_LIB=PATH)\n",
            prog, tried[0], tried[1]);
    exit(EXIT_NO_LIBRARY);
}

/* Does the LD_PRELOAD list `list` (entries separated by spaces or colons, as ld.so reads it)
 * already name `lib`? */
static int preload_has(const char *list, const char *lib)
{
    size_t len = strlen(lib);
    for (const char *p = list; *p;) {
        p += strspn(p, " :");
        size_t n = strcspn(p, " :");
        if (n == len && strncmp(p, lib, n) == 0)
            return 1;
        p += n;
    }
    return 0;
}

static void set(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0) {
        fprintf(stderr, "%s: cannot set %s: %s\n", prog, name, strerror(errno));
        exit(EXIT_NO_LIBRARY);
    }
}

/* The settings the options ask for (by row of the table), applied only once every option has
 * been checked. */
struct settings {
    const char **value; /* per row: the value to set, or NULL */
    int *given_at;      /* per row: the argv index of the option that gave it (0: none) */
};

#define OPT_BASE 256 /* getopt's value of option i is OPT_BASE + i */

/* The row option `o` sets, and the value: optarg, checked and (a file) made absolute, or the
 * value the option gives without one; `given` holds what earlier options set, per row. */
static int option_value(const struct opt *o, const char *arg, const char **value,
                        const char *const *given)
{
    if (!arg || o->value_row < 0) {
        const struct atl_cfg_opt *co = &atl_cfg_vars[o->flag_row].opt;
        *value = o->fixed ? o->fixed : co->kind == ATL_OPT_FLAG ? "1" : co->bare;
        return o->flag_row;
    }
    int row = o->value_row;
    if (atl_cfg_vars[row].opt.kind == ATL_OPT_FILE) {
        *value = output_path(typed_option(row), arg);
    } else if (atl_cfg_vars[row].opt.kind == ATL_OPT_INFILES) {
        *value = input_files(typed_option(row), arg, given[row]);
    } else {
        check_value(row, arg);
        *value = arg;
    }
    return row;
}

/* An option no row has: refused, with the nearest name when one is near (as the library names
 * a misspelt ATLAS_* variable). Ambiguous prefixes come here too. */
static _Noreturn void unknown_option(const char *word, const struct option *lo)
{
    char name[64], msg[256];
    const char *w = strncmp(word, "--", 2) == 0 ? word + 2 : word;
    size_t wl = strcspn(w, "=");
    snprintf(name, sizeof name, "%.*s", (int)(wl < sizeof name ? wl : sizeof name - 1), w);
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (const struct option *o = lo; o->name; o++) {
        size_t d = atl_edit_distance(name, o->name);
        /* a prefix of a name is near it too (an abbreviation, or an ambiguous one) */
        if (strncmp(o->name, name, strlen(name)) == 0 && d > 1)
            d = 1;
        if (d < bestd)
            bestd = d, best = o->name;
    }
    if (best && bestd <= 2 + strlen(name) / 6)
        snprintf(msg, sizeof msg, "unknown option --%s; did you mean --%s?", name, best);
    else
        snprintf(msg, sizeof msg, "unknown option %s", word);
    bad_usage("%s", msg);
}

/* Parses the options into s; word_var[i] gets the ATLAS_* variable the option in argv[i] sets
 * (for the hints' re-run commands, src/hint.h). */
static void parse_options(int argc, char **argv, struct settings *s, const char **word_var)
{
    struct option *lo = calloc(nopts + 3, sizeof *lo);
    char shorts[64] = "+:hV";
    if (!lo) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(EXIT_NO_LIBRARY);
    }
    size_t nlo = 0;
    for (size_t i = 0; i < nopts; i++) {
        const struct opt *o = &opts[i];
        int has = o->value_row < 0   ? no_argument
                  : o->flag_row >= 0 ? optional_argument
                                     : required_argument;
        if (o->name)
            lo[nlo++] = (struct option){o->name, has, NULL, OPT_BASE + (int)i};
        for (const char *l = o->letters; *l && strlen(shorts) + 3 < sizeof shorts; l++)
            strcat(strncat(shorts, l, 1), has == required_argument   ? ":"
                                          : has == optional_argument ? "::"
                                                                     : "");
    }
    lo[nlo++] = (struct option){"help", no_argument, NULL, 'h'};
    lo[nlo++] = (struct option){"version", no_argument, NULL, 'V'};

    opterr = 0; /* our own messages, each followed by the usage */
    /* "+": stop at the first argument that is not an option, which is the program; its own
     * options are left alone. */
    int c, first = optind, li = -1;
    for (; (c = getopt_long(argc, argv, shorts, lo, &li)) != -1; first = optind, li = -1) {
        /* a long option is taken only as written whole: getopt_long takes a unique prefix,
         * which an option added later could make mean another (scripts would break) */
        if (li >= 0 && strncmp(argv[first], "--", 2) == 0) {
            const char *w = argv[first] + 2;
            size_t wl = strcspn(w, "=");
            if (wl != strlen(lo[li].name) || strncmp(w, lo[li].name, wl) != 0) {
                char msg[256];
                snprintf(msg, sizeof msg,
                         "--%.*s: did you mean --%s? (options are taken only as written whole)",
                         (int)(wl < 64 ? wl : 64), w, lo[li].name);
                bad_usage("%s", msg);
            }
        }
        value_apart = optarg && first + 2 == optind && optarg == argv[first + 1];
        /* a short option grouped after another (-qo FILE) is named by its letter */
        if (strncmp(argv[first], "--", 2) == 0)
            typed_word(argv[first], opt_typed, sizeof opt_typed);
        else
            snprintf(opt_typed, sizeof opt_typed, "-%c", c > 0 && c < 128 ? c : '?');
        const struct opt *o = NULL;
        if (c >= OPT_BASE && c < OPT_BASE + (int)nopts)
            o = &opts[c - OPT_BASE];
        for (size_t i = 0; !o && c > 0 && c < 128 && i < nopts; i++)
            if (strchr(opts[i].letters, c))
                o = &opts[i];
        if (o) {
            const char *value;
            int row = option_value(o, optarg, &value, s->value);
            s->value[row] = value;
            s->given_at[row] = first;
            const char *implies = atl_cfg_vars[row].opt.implies;
            if (implies && atl_config_find(implies) >= 0)
                s->value[atl_config_find(implies)] = "1";
            for (int i = first; i < optind; i++)
                word_var[i] = atl_cfg_vars[row].name;
            continue;
        }
        switch (c) {
        case 'h':
            usage(stdout);
            exit(0);
        case 'V':
            printf("atlas-trace (atlastrace) %s\n", ATLAS_VERSION);
            exit(0);
        case ':':
            bad_usage("%s needs a value", argv[optind - 1]);
        default:
            /* getopt sets optopt to 0 for an unknown or ambiguous long option, to the option's
             * value for a long option given a value it does not take, to the letter for an
             * unknown short one */
            if (optopt >= OPT_BASE || (optopt && strncmp(argv[optind - 1], "--", 2) == 0 &&
                                       strchr(argv[optind - 1], '=')))
                bad_usage("%s: this option takes no value", argv[optind - 1]);
            if (optopt) {
                char letter[2] = {(char)optopt, '\0'};
                bad_usage("unknown option -%s", letter);
            }
            unknown_option(argv[optind - 1], lo);
        }
    }
    free(lo);
    opt_typed[0] = '\0';
    if (optind >= argc)
        bad_usage("%s", "no program to run");
    /* each report its own file: two in one would truncate each other, and the library could
     * only say the file is taken; named in the order they were given */
    for (size_t i = 0; i < atl_cfg_nvars; i++)
        for (size_t j = 0; j < atl_cfg_nvars; j++) {
            if (atl_cfg_vars[i].opt.kind != ATL_OPT_FILE ||
                atl_cfg_vars[j].opt.kind != ATL_OPT_FILE || i == j || !s->given_at[i] ||
                !s->given_at[j] || s->given_at[i] > s->given_at[j] ||
                (s->given_at[i] == s->given_at[j] && i > j) || !same_file(s->value[i], s->value[j]))
                continue;
            char msg[PATH_MAX + 128], first_opt[80];
            char second_opt[80];
            typed_word(argv[s->given_at[i]], first_opt, sizeof first_opt);
            typed_word(argv[s->given_at[j]], second_opt, sizeof second_opt);
            snprintf(msg, sizeof msg, "%s and %s name the same file, %s: each report needs its own",
                     first_opt, second_opt, s->value[i]);
            bad_usage("%s", msg);
        }
}

static void apply(const struct settings *s, const char *lib)
{
    for (size_t i = 0; i < atl_cfg_nvars; i++)
        if (s->value[i])
            set(atl_cfg_vars[i].name, s->value[i]);

    /* Ours first, so our dlsym and driver symbols win; whatever the user preloaded stays. */
    const char *old = getenv("LD_PRELOAD");
    if (old && *old && !preload_has(old, lib)) {
        char *both;
        if (asprintf(&both, "%s:%s", lib, old) < 0) {
            fprintf(stderr, "%s: out of memory\n", prog);
            exit(EXIT_NO_LIBRARY);
        }
        set("LD_PRELOAD", both);
        free(both);
    } else if (!old || !*old) {
        set("LD_PRELOAD", lib);
    }

    /* NVTX names one injection library; one the user chose is kept (then nvtx step marks cannot
     * reach us, which is worth a word when they were asked for). */
    const char *nvtx = getenv("NVTX_INJECTION64_PATH");
    const char *step = s->value[atl_config_find("ATLAS_STEP")], *range;
    if (!nvtx || !*nvtx)
        set("NVTX_INJECTION64_PATH", lib);
    else if (strcmp(nvtx, lib) != 0 && step && atl_step_mode(step, &range) == ATL_STEP_NVTX)
        fprintf(stderr,
                "%s: NVTX_INJECTION64_PATH=%s is kept, so NVTX ranges go there, not to "
                "atlastrace; --trace=%s will see no steps\n",
                prog, nvtx, step);
}

/* The ATLAS_* entries of the environment, copied (apply() may replace them). */
static char **atlas_entries(void)
{
    size_t n = 0, k = 0;
    for (char **e = environ; *e; e++)
        n += strncmp(*e, "ATLAS_", 6) == 0;
    char **out = calloc(n + 1, sizeof *out);
    for (char **e = environ; out && *e; e++)
        if (strncmp(*e, "ATLAS_", 6) == 0 && !(out[k++] = strdup(*e)))
            return NULL;
    return out;
}

/* Runs cmd: in this process (exec), with the front's record of how it was run. */
static _Noreturn void run_here(int argc, char **argv, const char **word_var, char **inherited,
                               char **cmd)
{
    /* what the library needs to print a re-run command as atlas-trace's (src/hint.h), with
     * this process's PID (the program's); without it, hints take the bare-preload form, which
     * also runs */
    char *front = atl_front_encode(argc, argv, optind, word_var, inherited, environ);
    if (front)
        set(ATL_FRONT_VAR, front);
    else
        unsetenv(ATL_FRONT_VAR);
    execvp(cmd[0], cmd);
    int err = errno;
    fprintf(stderr, "%s: cannot run %s: %s\n", prog, cmd[0], strerror(err));
    _exit(err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
}

/* --error-exitcode's value as it will reach the library (the option, or ATLAS_ERROR_EXITCODE
 * inherited), 0 when off. */
static int verdict_code(void)
{
    const char *v = getenv("ATLAS_ERROR_EXITCODE");
    char *end;
    errno = 0;
    unsigned long n = v && *v ? strtoul(v, &end, 10) : 0;
    return v && *v && !errno && !*end && n <= 255 ? (int)n : 0;
}

static pid_t child;

/* A signal sent to atlas-trace is the program's: passed on. */
static void pass_on(int sig)
{
    if (child > 0)
        kill(child, sig);
}

/* The findings the processes wrote to dir (one file each, a line a finding), counted by kind
 * into what ("1 overrun, 2 leaks"), the files removed, then dir. */
static unsigned long findings_in(const char *dir, char *what, size_t len, unsigned long *procs)
{
    unsigned long n[ATL_FINDING_KINDS + 1] = {0}, total = 0; /* the last: a line of no kind */
    *procs = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        char line[64];
        unsigned long here = 0;
        while (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            int k = 0;
            while (k < ATL_FINDING_KINDS && strcmp(line, atl_finding_kind_name(k)) != 0)
                k++;
            n[k]++, total++, here++;
        }
        if (f)
            fclose(f);
        else if (fd >= 0)
            close(fd);
        *procs += here != 0;
        unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    size_t used = 0;
    what[0] = '\0';
    for (int k = 0; k <= ATL_FINDING_KINDS; k++)
        if (n[k] && used < len)
            used += (size_t)snprintf(what + used, len - used, "%s%lu %s", used ? ", " : "", n[k],
                                     k < ATL_FINDING_KINDS ? atl_finding_words(k, n[k])
                                     : n[k] == 1          ? "finding"
                                                          : "findings");
    return total;
}

/* --error-exitcode=code: the program as a child; atlas-trace's status is the verdict over the
 * findings every traced process of the tree counted (src/findings.c writes them to a folder of
 * this run's, ATL_VERDICT_VAR), else the program's own. */
static int run_judged(int code, int argc, char **argv, const char **word_var, char **inherited,
                      char **cmd)
{
    const char *tmpdir = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/atlas-verdict-XXXXXX", tmpdir && *tmpdir == '/' ? tmpdir : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "%s: cannot make a folder for --error-exitcode's findings in %s (%s): the "
                        "status is the program's own verdict\n",
                prog, dir, strerror(errno));
        run_here(argc, argv, word_var, inherited, cmd);
    }
    set(ATL_VERDICT_VAR, dir);
    /* the terminal's signals reach the whole group, the program included: while it runs,
     * atlas-trace waits as a shell does; the others it is sent are passed on */
    struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = pass_on};
    sigemptyset(&ign.sa_mask);
    sigemptyset(&fwd.sa_mask);
    child = fork();
    if (child < 0) {
        fprintf(stderr, "%s: cannot fork (%s): the status is the program's own verdict\n", prog,
                strerror(errno));
        rmdir(dir);
        unsetenv(ATL_VERDICT_VAR);
        run_here(argc, argv, word_var, inherited, cmd);
    }
    if (child == 0)
        run_here(argc, argv, word_var, inherited, cmd);
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGQUIT, &ign, NULL);
    static const int passed[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT, SIGTSTP};
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++)
        sigaction(passed[i], &fwd, NULL);
    int st = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR)
        ;
    char what[256];
    unsigned long procs;
    unsigned long found = findings_in(dir, what, sizeof what, &procs);
    int own = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (found) {
        /* the program's own run already said it (its last line), when its status is the
         * verdict's: said here only where that was lost */
        if (own != code)
            fprintf(stderr, "%s: %s in %lu process%s of the run: exit status %d, not the "
                            "program's %s%d (--error-exitcode=%d)\n",
                    prog, what, procs, procs == 1 ? "" : "es", code,
                    WIFSIGNALED(st) ? "signal " : "", WIFSIGNALED(st) ? WTERMSIG(st) : own, code);
        return code;
    }
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(sig);
        return 128 + sig; /* a signal that does not end a process */
    }
    return own;
}

int main(int argc, char **argv)
{
    make_options();
    struct settings s = {calloc(atl_cfg_nvars, sizeof *s.value),
                         calloc(atl_cfg_nvars, sizeof *s.given_at)};
    const char **word_var = calloc((size_t)argc + 1, sizeof *word_var);
    char **inherited = atlas_entries();
    if (!word_var || !inherited || !s.value || !s.given_at) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return EXIT_NO_LIBRARY;
    }

    parse_options(argc, argv, &s, word_var);
    char *lib = find_library();
    apply(&s, lib);
    unsetenv(ATL_VERDICT_VAR); /* an outer atlas-trace's: this run judges its own */
    char **cmd = argv + optind;
    int code = verdict_code();
    if (code)
        return run_judged(code, argc, argv, word_var, inherited, cmd);
    run_here(argc, argv, word_var, inherited, cmd);
}
