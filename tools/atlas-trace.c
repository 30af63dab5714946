/*
 * atlas-trace: run a program under atlastrace.
 *
 *   atlas-trace [options] [--] program [args...]
 *
 * Each option becomes the ATLAS_* variable the library reads, the tool finds libatlastrace.so,
 * puts it in front of LD_PRELOAD and execs the program. It does not fork: the process the shell
 * waits for IS the program, so its exit status, or the signal that killed it, reaches the shell,
 * a job scheduler or torchrun unchanged, and signals sent to "atlas-trace" reach the program.
 *
 * Everything is checked before anything is set: a bad option changes nothing and runs nothing.
 * Values are checked by the library's own parser against its one table of settings
 * (src/config.def), so a value the tool accepts is one the library will not ignore.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "dsk.h"
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

/* Without --d2h=N: the backtrace of the first blocking copy, which names the code that started
 * the stalls; the running count is reported whatever N is. */
#define D2H_DEFAULT "1"

static const char *prog = "atlas-trace";

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: %s [options] [--] program [args...]\n"
            "Run a CUDA program with the atlastrace interposer (libatlastrace.so) preloaded.\n"
            "\n"
            "  --trace[=MODE]        record each step's GPU work and diff consecutive steps;\n"
            "                        MODE says where a step ends: sync, capture, api, nvtx:NAME\n"
            "  --json=FILE           write the step trace as JSON lines to FILE (implies --trace)\n"
            "  --chrome=FILE         write a Chrome/Perfetto trace to FILE (implies --trace)\n"
            "  --redzone=BYTES       pad each allocation with a BYTES guard band, report overruns\n"
            "  --redzone-check=WHEN  when guard bands are checked: free, sync or launch\n"
            "  --d2h[=N]             count blocking device-to-host copies; backtrace of the Nth\n"
            "                        (default %s)\n"
            "  --debug-sync[=KERNELS] synchronize after every launch (or only after launches of\n"
            "                        the comma-separated KERNELS), to name a faulting kernel\n"
            "  --leaks               report device allocations still live at exit\n"
            "  --races[=all]         report races between streams: accesses to the same memory\n"
            "                        on two streams, nothing ordering them, one a write;\n"
            "                        all: also those where a side only may write\n"
            "  --audit               report every kernel looked up, found or missing\n"
            "  --stats               print each intercepted function's call count at exit\n"
            "  --error-exitcode=N    exit with status N (1-255) when anything was reported:\n"
            "                        an overrun, a fault, leaks under --leaks, a race under\n"
            "                        --races (0: off)\n"
            "  --error-on=WHAT       findings (the default) or diff: also a differing step\n"
            "  -o, --log=FILE        write atlastrace's reports to FILE instead of stderr\n"
            "  --no-children         leave child processes of the program untraced\n"
            "  -h, --help            print this help and exit\n"
            "  -V, --version         print the version and exit\n"
            "\n"
            "In FILE, %%p is the process ID and %%r the rank (RANK, LOCAL_RANK,\n"
            "OMPI_COMM_WORLD_RANK or SLURM_PROCID): each process of a job writes its own file.\n"
            "ATLAS_LIB=PATH names the library to preload instead of searching for it.\n"
            "\n"
            "Exit status: the program's (128+N when signal N ended it), or N of\n"
            "--error-exitcode when something was reported; 2 for a bad option,\n"
            "125 when libatlastrace.so is not found, 126 when the program cannot be run,\n"
            "127 when it is not found.\n",
            prog, D2H_DEFAULT);
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

/* Exits with "OPT=VALUE: REASON" and the usage; the value is shown as the library shows
 * setting values (printable, bounded). */
static _Noreturn void refuse(const char *opt, const char *value, const char *reason)
{
    char shown[72], msg[512];
    atl_config_show_value(value, shown, sizeof shown);
    snprintf(msg, sizeof msg, "%s=%s: %s", opt, shown, reason);
    bad_usage("%s", msg);
}

/* Refuses `value` for option `opt` when the library would ignore it as setting `var`: the
 * reason is the library's own ("out of range 0..1048576"), from the one table both read.
 * Returns the value as the library reads it (a number, an enum's index). */
static unsigned long long check_setting(const char *opt, const char *var, const char *value,
                                        const char *what)
{
    int idx = atl_config_find(var);
    unsigned long long num = 0;
    const char *why = idx < 0 ? "unknown setting" : atl_config_value(idx, value, &num);
    if (why) {
        char reason[384];
        snprintf(reason, sizeof reason, "%s for %s; %s", why, var, what);
        refuse(opt, value, reason);
    }
    return num;
}

static int valid_step_mode(const char *m)
{
    static const char *const modes[] = {"sync", "capture", "api"};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(m, modes[i]) == 0)
            return 1;
    return strncmp(m, "nvtx:", 5) == 0 && m[5] != '\0';
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

enum {
    OPT_TRACE = 256,
    OPT_JSON,
    OPT_CHROME,
    OPT_REDZONE,
    OPT_REDZONE_CHECK,
    OPT_D2H,
    OPT_DEBUG_SYNC,
    OPT_LEAKS,
    OPT_RACES,
    OPT_AUDIT,
    OPT_STATS,
    OPT_LOG,
    OPT_NO_CHILDREN,
    OPT_ERROR_EXITCODE,
    OPT_ERROR_ON,
};

static const struct option long_opts[] = {
    {"trace", optional_argument, NULL, OPT_TRACE},
    {"json", required_argument, NULL, OPT_JSON},
    {"chrome", required_argument, NULL, OPT_CHROME},
    {"redzone", required_argument, NULL, OPT_REDZONE},
    {"redzone-check", required_argument, NULL, OPT_REDZONE_CHECK},
    {"d2h", optional_argument, NULL, OPT_D2H},
    {"debug-sync", optional_argument, NULL, OPT_DEBUG_SYNC},
    {"leaks", no_argument, NULL, OPT_LEAKS},
    {"races", optional_argument, NULL, OPT_RACES},
    {"audit", no_argument, NULL, OPT_AUDIT},
    {"stats", no_argument, NULL, OPT_STATS},
    {"log", required_argument, NULL, OPT_LOG},
    {"error-exitcode", required_argument, NULL, OPT_ERROR_EXITCODE},
    {"error-on", required_argument, NULL, OPT_ERROR_ON},
    {"no-children", no_argument, NULL, OPT_NO_CHILDREN},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* The settings the options ask for, applied only once every option has been checked. */
struct settings {
    int trace, leaks, audit, stats, no_children;
    const char *debug_sync; /* "1", or a list of kernel names */
    const char *step, *redzone, *redzone_check, *d2h, *error_exitcode, *error_on, *races;
    char *json, *chrome, *log;
};

/* Parses the options into s; word_var[i] gets the ATLAS_* variable the option in argv[i] sets
 * (for the hints' re-run commands, src/hint.h). */
static void parse_options(int argc, char **argv, struct settings *s, const char **word_var)
{
    int c, first = optind;
    const char *var = NULL;

    opterr = 0; /* our own messages, each followed by the usage */
    /* "+": stop at the first argument that is not an option, which is the program; its own
     * options are left alone. */
    for (; (c = getopt_long(argc, argv, "+:hVo:", long_opts, NULL)) != -1; first = optind) {
        switch (c) {
        case OPT_TRACE:
            var = optarg ? "ATLAS_STEP" : "ATLAS_TRACE";
            s->trace = 1;
            if (optarg) {
                if (!valid_step_mode(optarg))
                    bad_usage("--trace=%s: the step mode is one of sync, capture, api or nvtx:NAME",
                              optarg);
                /* and the library's limits (a range name's length) */
                check_setting("--trace", "ATLAS_STEP", optarg, "MODE is where a step ends");
                s->step = optarg;
            }
            break;
        case OPT_JSON:
            var = "ATLAS_TRACE_FILE";
            s->trace = 1;
            free(s->json);
            s->json = output_path("--json", optarg);
            break;
        case OPT_CHROME:
            var = "ATLAS_CHROME_TRACE";
            s->trace = 1;
            free(s->chrome);
            s->chrome = output_path("--chrome", optarg);
            break;
        case 'o':
        case OPT_LOG:
            var = "ATLAS_LOG";
            free(s->log);
            s->log = output_path("--log", optarg);
            break;
        case OPT_REDZONE:
            var = "ATLAS_REDZONE";
            check_setting("--redzone", "ATLAS_REDZONE", optarg,
                          "BYTES is a number of bytes, decimal or 0x hex");
            s->redzone = optarg;
            break;
        case OPT_REDZONE_CHECK:
            var = "ATLAS_REDZONE_CHECK";
            check_setting("--redzone-check", "ATLAS_REDZONE_CHECK", optarg,
                          "WHEN is one of free, sync or launch");
            s->redzone_check = optarg;
            break;
        case OPT_D2H:
            var = "ATLAS_D2H_TRACE";
            /* by the library's reading of the number: 010 is ten, 08 is eight */
            if (optarg && check_setting("--d2h", "ATLAS_D2H_TRACE", optarg,
                                        "N is the number of the copy to backtrace") == 0)
                refuse("--d2h", optarg, "N is the number (1 or more) of the copy to backtrace");
            s->d2h = optarg ? optarg : D2H_DEFAULT;
            break;
        case OPT_ERROR_EXITCODE:
            var = "ATLAS_ERROR_EXITCODE";
            check_setting("--error-exitcode", "ATLAS_ERROR_EXITCODE", optarg,
                          "N is an exit status");
            s->error_exitcode = optarg;
            break;
        case OPT_ERROR_ON:
            var = "ATLAS_ERROR_ON";
            check_setting("--error-on", "ATLAS_ERROR_ON", optarg, "WHAT is findings or diff");
            s->error_on = optarg;
            break;
        case OPT_DEBUG_SYNC: {
            const char *why;
            var = "ATLAS_DEBUG_SYNC_KERNELS";
            if (optarg && atl_dsk_parse(optarg, &why) != ATL_DSK_LIST) {
                /* the parser's reason for a character that is no name's repeats what a list
                 * is; said once, with what a name holds */
                int odd = 0;
                for (const char *p = optarg; *p; p++)
                    odd |= *p != ',' && !atl_dsk_name_char(*p);
                char reason[256];
                snprintf(reason, sizeof reason,
                         "KERNELS is a comma-separated list of kernel names%s%s",
                         odd   ? " (letters, digits, _ $ .)"
                         : why ? ": "
                               : "",
                         !odd && why ? why : "");
                refuse("--debug-sync", optarg, reason);
            }
            s->debug_sync = optarg ? optarg : "1";
            break;
        }
        case OPT_LEAKS:
            var = "ATLAS_LEAKS";
            s->leaks = 1;
            break;
        case OPT_RACES:
            if (optarg && strcmp(optarg, "all") != 0)
                refuse("--races", optarg, "the only value is all");
            s->races = optarg ? "all" : "1";
            break;
        case OPT_AUDIT:
            var = "ATLAS_KERNEL_AUDIT";
            s->audit = 1;
            break;
        case OPT_STATS:
            var = "ATLAS_STATS";
            s->stats = 1;
            break;
        case OPT_NO_CHILDREN:
            var = "ATLAS_NO_CHILDREN";
            s->no_children = 1;
            break;
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
            if (optopt >= OPT_TRACE || (optopt && strncmp(argv[optind - 1], "--", 2) == 0 &&
                                        strchr(argv[optind - 1], '=')))
                bad_usage("%s: this option takes no value", argv[optind - 1]);
            if (optopt) {
                char letter[2] = {(char)optopt, '\0'};
                bad_usage("unknown option -%s", letter);
            }
            bad_usage("unknown or ambiguous option %s", argv[optind - 1]);
        }
        for (int i = first; i < optind; i++)
            word_var[i] = var;
    }
    if (optind >= argc)
        bad_usage("%s", "no program to run");
    /* each report its own file: two in one would truncate each other, and the library could
     * only say the file is taken */
    const struct {
        const char *opt, *path;
    } out[] = {{"--json", s->json}, {"--chrome", s->chrome}, {"--log", s->log}};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (out[i].path && out[j].path && same_file(out[i].path, out[j].path)) {
                char msg[PATH_MAX + 128];
                snprintf(msg, sizeof msg,
                         "%s and %s name the same file, %s: each report needs its own", out[i].opt,
                         out[j].opt, out[i].path);
                bad_usage("%s", msg);
            }
}

static void apply(const struct settings *s, const char *lib)
{
    if (s->trace)
        set("ATLAS_TRACE", "1");
    if (s->step)
        set("ATLAS_STEP", s->step);
    if (s->json)
        set("ATLAS_TRACE_FILE", s->json);
    if (s->chrome)
        set("ATLAS_CHROME_TRACE", s->chrome);
    if (s->redzone)
        set("ATLAS_REDZONE", s->redzone);
    if (s->redzone_check)
        set("ATLAS_REDZONE_CHECK", s->redzone_check);
    if (s->d2h)
        set("ATLAS_D2H_TRACE", s->d2h);
    if (s->debug_sync)
        set("ATLAS_DEBUG_SYNC_KERNELS", s->debug_sync);
    if (s->leaks)
        set("ATLAS_LEAKS", "1");
    if (s->races)
        set("ATLAS_RACES", s->races);
    if (s->audit)
        set("ATLAS_KERNEL_AUDIT", "1");
    if (s->stats)
        set("ATLAS_STATS", "1");
    if (s->log)
        set("ATLAS_LOG", s->log);
    if (s->error_exitcode)
        set("ATLAS_ERROR_EXITCODE", s->error_exitcode);
    if (s->error_on)
        set("ATLAS_ERROR_ON", s->error_on);
    if (s->no_children)
        set("ATLAS_NO_CHILDREN", "1");

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
    if (!nvtx || !*nvtx)
        set("NVTX_INJECTION64_PATH", lib);
    else if (strcmp(nvtx, lib) != 0 && s->step && strncmp(s->step, "nvtx:", 5) == 0)
        fprintf(stderr,
                "%s: NVTX_INJECTION64_PATH=%s is kept, so NVTX ranges go there, not to "
                "atlastrace; --trace=%s will see no steps\n",
                prog, nvtx, s->step);
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

int main(int argc, char **argv)
{
    struct settings s = {0};
    const char **word_var = calloc((size_t)argc + 1, sizeof *word_var);
    char **inherited = atlas_entries();
    if (!word_var || !inherited) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return EXIT_NO_LIBRARY;
    }

    parse_options(argc, argv, &s, word_var);
    char *lib = find_library();
    apply(&s, lib);
    /* what the library needs to print a re-run command as atlas-trace's (src/hint.h); without
     * it, hints take the bare-preload form, which also runs */
    char *front = atl_front_encode(argc, argv, optind, word_var, inherited, environ);
    if (front)
        set(ATL_FRONT_VAR, front);
    else
        unsetenv(ATL_FRONT_VAR);

    char **cmd = argv + optind;
    execvp(cmd[0], cmd);
    int err = errno;
    fprintf(stderr, "%s: cannot run %s: %s\n", prog, cmd[0], strerror(err));
    return err == ENOENT || err == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}
