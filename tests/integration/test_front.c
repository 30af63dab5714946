/*
 * atlas-trace, as a user drives it: each option reaches the program as the ATLAS_* variable the
 * library reads, the program's arguments and exit status come through untouched, bad options
 * stop before anything runs, the library is found wherever the tool is installed, and
 * --no-children keeps the library out of the processes the program starts.
 */
#define _GNU_SOURCE
#include "run.h"

#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOOL BUILD_DIR "/atlas-trace"
#define TARGET BUILD_DIR "/tests/front_env"

static char lib[PATH_MAX];    /* the build tree's library, absolute */
static char target[PATH_MAX]; /* front_env, absolute */

/* Runs atlas-trace with `args` (NULL-terminated) and the extra environment `env`. */
static void run_tool(struct run_result *r, const char *tool, const char *const *args,
                     const char *const *env)
{
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)tool;
    for (; *args && n < 63; args++)
        argv[n++] = (char *)*args;
    argv[n] = NULL;
    run_target(r, argv, env, 0);
}

/* Does `text` hold `line` as a whole line? */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

#define ck_line(text, ...)                                                                         \
    do {                                                                                           \
        char want_[PATH_MAX * 2];                                                                  \
        snprintf(want_, sizeof want_, __VA_ARGS__);                                                \
        ck_assert_msg(has_line(text, want_), "no line '%s' in:\n%s", want_, text);                 \
    } while (0)

/* How often `needle` occurs in `text`. */
static int occurrences(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* The summary line a program that made no driver call ends with, run through atlas-trace. */
#define NO_CALL "summary: no CUDA driver call was made in this process, so nothing was watched"

/* `text` with its "atlas[PID]: " prefixes taken out, into out. */
static void unprefixed(const char *text, char *out, size_t len)
{
    size_t n = 0;
    for (const char *p = text; *p && n + 1 < len;) {
        const char *end = strchr(p, ']');
        if (strncmp(p, "atlas[", 6) == 0 && end && strncmp(end, "]: ", 3) == 0)
            p = end + 3;
        size_t l = strcspn(p, "\n");
        if (p[l] == '\n')
            l++;
        if (n + l >= len)
            l = len - n - 1;
        memcpy(out + n, p, l);
        n += l;
        p += l;
    }
    out[n] = '\0';
}

/* The last line of `text` ("atlas[PID]: " taken out), into out. */
static const char *last_line(const char *text, char *out, size_t len)
{
    size_t n = strlen(text);
    while (n && text[n - 1] == '\n')
        n--;
    const char *start = text + n;
    while (start > text && start[-1] != '\n')
        start--;
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)(text + n - start), start);
    unprefixed(line, out, len);
    return out;
}

static void run_ok(struct run_result *r, const char *const *args, const char *const *env)
{
    run_tool(r, TOOL, args, env);
    ck_assert_msg(r->status == 0, "atlas-trace exited %d; stderr:\n%s", r->status, r->err);
}

START_TEST(each_option_sets_its_variable)
{
    /* the library writes its summary line there (front_env makes no driver call, and says so) */
    char dir[] = "/tmp/atlas-front-log-XXXXXX", log[PATH_MAX], rm[PATH_MAX + 16];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(log, sizeof log, "--log=%s/atlas-%%p-%%r.log", dir);
    const char *args[] = {"--trace=capture",
                          "--redzone=256",
                          "--redzone-check=launch",
                          "--d2h=5",
                          "--debug-sync",
                          "--leaks",
                          "--races=all",
                          "--audit",
                          "--stats",
                          log,
                          target,
                          "env",
                          NULL};
    struct run_result r;
    run_ok(&r, args, NULL);
    ck_line(r.out, "ATLAS_TRACE=1");
    ck_line(r.out, "ATLAS_STEP=capture");
    ck_line(r.out, "ATLAS_REDZONE=256");
    ck_line(r.out, "ATLAS_REDZONE_CHECK=launch");
    ck_line(r.out, "ATLAS_D2H_TRACE=5");
    ck_line(r.out, "ATLAS_DEBUG_SYNC_KERNELS=1");
    ck_line(r.out, "ATLAS_LEAKS=1");
    ck_line(r.out, "ATLAS_RACES=all");
    ck_line(r.out, "ATLAS_KERNEL_AUDIT=1");
    ck_line(r.out, "ATLAS_STATS=1");
    ck_line(r.out, "ATLAS_LOG=%s/atlas-%%p-%%r.log", dir); /* the library expands %p, %r */
    ck_line(r.out, "LD_PRELOAD=%s", lib);
    ck_line(r.out, "NVTX_INJECTION64_PATH=%s", lib);
    ck_assert_int_eq(count_lines(r.out, "ATLAS_"), 11);
    run_free(&r);
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(rm), 0);
}
END_TEST

/* The settings that had no option before (issue #31): each is an option of the same name, by
 * the same rules (src/config.def). */
START_TEST(every_setting_has_an_option)
{
    static const char *const set[][2] = {
        {"--log-level=info", "ATLAS_LOG_LEVEL=info"},
        {"--hang-seconds=30", "ATLAS_HANG_SECONDS=30"},
        {"--launch-ring=128", "ATLAS_LAUNCH_RING=128"},
        {"--redzone-fill=7", "ATLAS_REDZONE_FILL=7"},
        {"--redzone-min-idx=3", "ATLAS_REDZONE_MIN_IDX=3"},
        {"--redzone-trace-idx=2", "ATLAS_REDZONE_TRACE_IDX=2"},
        {"--redzone-pools=keep", "ATLAS_REDZONE_POOLS=keep"},
        {"--redzone-quarantine-mb=16", "ATLAS_REDZONE_QUARANTINE_MB=16"},
        {"--kernel=^(k1|k2)$", "ATLAS_KERNEL=^(k1|k2)$"},
        {"--stack-depth=8", "ATLAS_STACK_DEPTH=8"},
        {"--diff-max=5", "ATLAS_DIFF_MAX=5"},
        {"--diff-ignore=k1:arg1,k2", "ATLAS_DIFF_IGNORE=k1:arg1,k2"},
        {"--diff-pointers=all", "ATLAS_DIFF_POINTERS=all"},
        {"--diff-residue=none", "ATLAS_DIFF_RESIDUE=none"},
        {"--trace-max-mb=64", "ATLAS_TRACE_MAX_MB=64"},
        {"--chrome-max-mb=8", "ATLAS_CHROME_MAX_MB=8"},
    };
    enum { N = sizeof set / sizeof set[0] };
    const char *args[N + 3];
    for (int i = 0; i < N; i++)
        args[i] = set[i][0];
    args[N] = target, args[N + 1] = "env", args[N + 2] = NULL;
    struct run_result r;
    run_ok(&r, args, NULL);
    for (int i = 0; i < N; i++)
        ck_line(r.out, "%s", set[i][1]);
    ck_assert_int_eq(count_lines(r.out, "ATLAS_"), N);
    run_free(&r);

    /* -q: only findings and the summary line, as --log-level=error; the last one given wins */
    const char *quiet[] = {"-q", target, "env", NULL};
    run_ok(&r, quiet, NULL);
    ck_line(r.out, "ATLAS_LOG_LEVEL=error");
    run_free(&r);
    const char *louder[] = {"--quiet", "--log-level=debug", target, "env", NULL};
    run_ok(&r, louder, NULL);
    ck_line(r.out, "ATLAS_LOG_LEVEL=debug");
    run_free(&r);
}
END_TEST

/* -q through a run with findings: the overrun and the leak are said, the features' own summaries
 * and notes are not. */
START_TEST(quiet_says_findings)
{
    const char *args[] = {"-q", "--redzone=64", "--leaks", BUILD_DIR "/tests/redzone_prog", "leak",
                          NULL};
    struct run_result r;
    run_tool(&r, TOOL, args, NULL);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    HAS(r.err, "leaks: 2 allocations never freed");
    HAS(r.err, "leaks:   alloc#");
    HAS(r.err, "redzone overrun: alloc#");
    HASNT(r.err, "overruns found in");
    run_free(&r);

    /* a step diff is a finding; the step trace's own summary is not */
    const char *trace[] = {"-q", "--trace", BUILD_DIR "/tests/trace_steps", "scalar", "3", NULL};
    run_tool(&r, TOOL, trace, NULL);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    HAS(r.err, "differs from #1");
    HASNT(r.err, "trace summary:");
    run_free(&r);
}
END_TEST

START_TEST(no_options_set_only_the_preload)
{
    const char *args[] = {target, "env", NULL};
    struct run_result r;
    run_ok(&r, args, NULL);
    ck_assert_int_eq(count_lines(r.out, "ATLAS_"), 0);
    ck_line(r.out, "LD_PRELOAD=%s", lib);
    ck_line(r.out, "NVTX_INJECTION64_PATH=%s", lib);
    /* front_env makes no driver call: said, and nothing else */
    char err[512];
    unprefixed(r.err, err, sizeof err);
    ck_assert_str_eq(err, NO_CALL "\n");
    run_free(&r);
}
END_TEST

/* One summary line ends every run through atlas-trace, options or not (issue #31): what was on
 * and what it found, in counts with thousands separators and plurals right. */
static const struct {
    const char *args[8], *summary;
    int status;
} summaries[] = {
    {{BUILD_DIR "/examples/demo_steps", BUILD_DIR "/tests/front_demo_kernels.so", 0},
     "summary: 0 faults in 9 launches, 4 blocking copies, 5 host syncs",
     0},
    {{"--trace", BUILD_DIR "/tests/trace_steps", "scalar", "3", 0},
     "summary: 0 faults in 9 launches, 2 of 3 steps differ, 0 blocking copies, 4 host syncs",
     0},
    {{"--redzone=64", BUILD_DIR "/tests/redzone_prog", "over", 0},
     "summary: 1 overrun in 2 guarded allocations, 0 writes after free, 0 faults in 6 launches, 0 "
     "blocking copies, 1 host sync",
     0},
    {{"--leaks", BUILD_DIR "/tests/redzone_prog", "leak", 0},
     "summary: 0 faults in 1 launch, 2 leaks (8,492 bytes), 0 blocking copies, 0 host syncs",
     0},
    {{"--races", BUILD_DIR "/tests/races_prog", "side_copy", "raced", 0},
     "summary: 0 faults in 1 launch, 1 race, 0 blocking copies, 1 host sync",
     0},
    {{"--d2h", BUILD_DIR "/tests/sync_target", "copies", 0},
     "summary: 0 faults in 0 launches, 13 blocking copies from 6 sites, 4 host syncs",
     0},
    {{"--debug-sync", BUILD_DIR "/tests/sync_target", "suspects", 0},
     "summary: 1 fault in 351 launches (351 synchronised), 0 blocking copies, 2 host syncs",
     0},
    {{BUILD_DIR "/tests/sync_target", "fault", 0},
     "summary: 1 fault in 306 launches, 0 blocking copies, 2 host syncs",
     0},
    /* after the verdict's line, which replaced the status */
    {{"--redzone=64", "--error-exitcode=3", BUILD_DIR "/tests/redzone_prog", "over", 0},
     "summary: 1 overrun in 2 guarded allocations, 0 writes after free, 0 faults in 6 launches, 0 "
     "blocking copies, 1 host sync",
     3},
    /* at every log level */
    {{"-q", "--trace", BUILD_DIR "/tests/trace_steps", "same", "2", 0},
     "summary: 0 faults in 4 launches, 0 of 2 steps differ, 0 blocking copies, 3 host syncs",
     0},
    {{"--trace", BUILD_DIR "/tests/trace_steps", "scalar", "2", 0},
     "summary: 0 faults in 6 launches, 1 of 2 steps differs, 0 blocking copies, 3 host syncs",
     0},
};

START_TEST(summary_line_ends_the_run)
{
    struct run_result r;
    run_tool(&r, TOOL, summaries[_i].args, NULL);
    ck_assert_msg(r.status == summaries[_i].status, "%s: exit %d\n%s", summaries[_i].args[0],
                  r.status, r.err);
    char last[4096];
    ck_assert_msg(strcmp(last_line(r.err, last, sizeof last), summaries[_i].summary) == 0,
                  "the last line is '%s', not '%s':\n%s", last, summaries[_i].summary, r.err);
    ck_assert_int_eq(occurrences(r.err, "]: summary: "), 1);
    if (summaries[_i].status == 3)
        HAS(r.err, "reported 1 overrun: exit status 3 (--error-exitcode=3)\natlas[");
    run_free(&r);
}
END_TEST

/* The step trace's summary names its settings as the user typed the run: under atlas-trace
 * the warm-up line says --diff-warmup, and pasting it prints the held-back reports. */
START_TEST(trace_summary_hints_in_the_users_terms)
{
    const char *plain[] = {"--trace", BUILD_DIR "/tests/trace_steps", "autotune", "30", NULL};
    struct run_result r;
    run_tool(&r, TOOL, plain, NULL);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    HAS(r.err, "6 differing steps of warm-up not printed");
    HAS(r.err, "; --diff-warmup prints them)\n");
    ck_assert_int_eq(occurrences(r.err, "differs from"), 1);
    run_free(&r);
    const char *pasted[] = {
        "--trace", "--diff-warmup", BUILD_DIR "/tests/trace_steps", "autotune", "30", NULL};
    run_tool(&r, TOOL, pasted, NULL);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    ck_assert_int_eq(occurrences(r.err, "differs from"), 7);
    HASNT(r.err, "warm-up not printed");
    run_free(&r);
}
END_TEST

/* A bare preload says nothing of its own: it may be loaded into every process of a job. */
START_TEST(bare_preload_has_no_summary)
{
    char *argv[] = {BUILD_DIR "/examples/demo_steps", BUILD_DIR "/tests/front_demo_kernels.so",
                    NULL};
    const char *none[] = {"LD_PRELOAD=" BUILD_DIR "/libatlastrace.so", NULL};
    struct run_result r;
    run_target(&r, argv, none, 0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    run_free(&r);
    const char *redzone[] = {"LD_PRELOAD=" BUILD_DIR "/libatlastrace.so", "ATLAS_REDZONE=64", NULL};
    run_target(&r, argv, redzone, 0);
    HAS(r.err, "redzone overrun");
    HASNT(r.err, "]: summary: "); /* the run's line; d2h-summary is the blocking copies' */
    run_free(&r);
}
END_TEST

/* A child of the program has a summary of its own when it is traced and uses the driver. (The
 * shell itself ends with _exit when it is dash, which runs no exit path, so it has none; when it
 * is bash it says it made no driver call.) */
START_TEST(children_get_their_own_summary)
{
    const char *args[] = {"sh", "-c", BUILD_DIR "/tests/sync_target copies >/dev/null; true", NULL};
    struct run_result r;
    run_tool(&r, TOOL, args, NULL);
    ck_assert_int_eq(r.status, 0);
    const char *child = "]: summary: 0 faults in 0 launches, 13 blocking copies, 4 host syncs\n";
    ck_assert_int_eq(occurrences(r.err, child), 1);
    ck_assert_int_le(occurrences(r.err, "]: " NO_CALL "\n"), 1);
    ck_assert_int_eq(occurrences(r.err, "]: summary: "), 1 + occurrences(r.err, "]: " NO_CALL));
    run_free(&r);

    /* untraced, it has none */
    const char *alone[] = {"--no-children", "sh", "-c",
                           BUILD_DIR "/tests/sync_target copies >/dev/null; true", NULL};
    run_tool(&r, TOOL, alone, NULL);
    ck_assert_int_eq(occurrences(r.err, child), 0);
    run_free(&r);
}
END_TEST

START_TEST(outputs_imply_trace_and_become_absolute)
{
    char cwd[PATH_MAX];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    const char *args[] = {
        "--json=out/t-%r.jsonl", "--chrome=/tmp/c.json", "--log=x.log", target, "env", NULL};
    struct run_result r;
    run_ok(&r, args, NULL);
    ck_line(r.out, "ATLAS_TRACE=1");
    ck_line(r.out, "ATLAS_TRACE_FILE=%s/out/t-%%r.jsonl", cwd);
    ck_line(r.out, "ATLAS_CHROME_TRACE=/tmp/c.json");
    ck_line(r.out, "ATLAS_LOG=%s/x.log", cwd);
    ck_assert_int_eq(count_lines(r.out, "ATLAS_STEP"), 0);
    run_free(&r);
    unlink("x.log"); /* the summary line went there */
}
END_TEST

START_TEST(value_defaults_and_modes)
{
    const char *args[] = {"--trace", "--d2h", "--races", target, "env", NULL};
    struct run_result r;
    run_ok(&r, args, NULL);
    ck_line(r.out, "ATLAS_TRACE=1");
    ck_line(r.out, "ATLAS_D2H_TRACE=1");
    ck_line(r.out, "ATLAS_RACES=1");
    ck_assert_int_eq(count_lines(r.out, "ATLAS_STEP"), 0);
    run_free(&r);

    /* numbers as the library reads them: 08 is eight, not a bad octal */
    const char *d2h8[] = {"--d2h=08", target, "env", NULL};
    run_ok(&r, d2h8, NULL);
    ck_line(r.out, "ATLAS_D2H_TRACE=08");
    run_free(&r);

    /* debug sync limited to the kernels the fault report names */
    const char *dsk[] = {"--debug-sync=bad_kernel,other", target, "env", NULL};
    run_ok(&r, dsk, NULL);
    ck_line(r.out, "ATLAS_DEBUG_SYNC_KERNELS=bad_kernel,other");
    run_free(&r);

    /* the step modes by the library's one rule: any case (ATLAS_STEP=SYNC was taken, and
     * --trace=SYNC refused) */
    static const char *const modes[] = {"sync", "capture", "api",      "nvtx:train step",
                                        "SYNC", "Capture", "NVTX:step"};
    for (int i = 0; i < 7; i++) {
        char opt[64];
        snprintf(opt, sizeof opt, "--trace=%s", modes[i]);
        const char *a2[] = {opt, "--redzone=0x100", target, "env", NULL};
        run_ok(&r, a2, NULL);
        ck_line(r.out, "ATLAS_STEP=%s", modes[i]);
        ck_line(r.out, "ATLAS_REDZONE=0x100");
        run_free(&r);
    }
}
END_TEST

/* The program's arguments arrive byte for byte, its own options included. */
START_TEST(arguments_pass_through)
{
    const char *args[] = {"--stats",   "--", target,  "env", "a b", "",
                          "--trace=x", "*",  "$HOME", "'\"", NULL};
    struct run_result r;
    run_ok(&r, args, NULL);
    ck_line(r.out, "arg[0]=<a b>");
    ck_line(r.out, "arg[1]=<>");
    ck_line(r.out, "arg[2]=<--trace=x>");
    ck_line(r.out, "arg[3]=<*>");
    ck_line(r.out, "arg[4]=<$HOME>");
    ck_line(r.out, "arg[5]=<'\">");
    ck_line(r.out, "ATLAS_STATS=1");
    ck_assert_int_eq(count_lines(r.out, "ATLAS_TRACE"), 0);
    run_free(&r);
}
END_TEST

static const struct {
    const char *opt, *says;
} bad[] = {
    {"--redzone=abc", "--redzone=abc"},
    {"--redzone=-1", "--redzone=-1"},
    {"--redzone=12k", "--redzone=12k"},
    {"--redzone-check=never", "free, sync or launch"},
    {"--trace=bogus", "sync, capture, api or nvtx:NAME"},
    {"--trace=nvtx:", "nvtx:NAME"},
    {"--d2h=0", "--d2h=0"},
    {"--d2h=x", "--d2h=x"},
    {"--log=", "--log needs a file name"},
    {"--bogus", "option --bogus"},
    {"-x", "unknown option -x"},
    {"--stats=1", "--stats=1: this option takes no value"},
        {"--redzon=64", "unknown option --redzon; did you mean --redzone?"},
    {"--frobnicate", "unknown option --frobnicate\n"}, /* nothing near it */
    /* the library's own limits (src/config.def), which it would otherwise apply silently */
    {"--redzone=99999999", "--redzone=99999999: out of range 0..1048576; BYTES is a number"},
    {"--redzone=0x100001", "out of range 0..1048576"},
    {"--error-exitcode=256", "--error-exitcode=256: out of range 0..255; N is a number"},
    {"--error-exitcode=-1", "--error-exitcode=-1: negative value"},
    {"--error-exitcode=x", "--error-exitcode=x: not a number"},
    {"--error-on=leaks", "--error-on=leaks: not one of the accepted values; "},
    {"--races=1", "--races=1: the only value is all"},
    /* the settings given options by issue #31, by their rows' limits */
    {"--stack-depth=25", "--stack-depth=25: out of range 0..24; "},
    {"--log-level=loud", "LEVEL is one of error, warn, info or debug"},
    {"--kernel=(", "--kernel=(: not a POSIX extended regular expression"},
    {"--diff-ignore=a:argX", "--diff-ignore=a:argX: not KERNEL or KERNEL:argN"},
    {"--hang-seconds=86401", "--hang-seconds=86401: out of range 0..86400; "},
    {"-q=1", "unknown option -="},
    {"--quiet=1", "--quiet=1: this option takes no value"},
    /* a kernel list: names only (on and off are spelled --debug-sync and nothing) */
    {"--debug-sync=,", "--debug-sync=,: KERNELS is a comma-separated list of kernel names"},
    {"--debug-sync=yes", "--debug-sync=yes: KERNELS is a comma-separated list"},
    {"--debug-sync=a!", "--debug-sync=a!: KERNELS is a comma-separated list of kernel names "
                        "(letters, digits, _ $ .)\n"},
};

START_TEST(bad_option_is_usage_error)
{
    const char *args[] = {bad[_i].opt, target, "env", NULL};
    struct run_result r;
    run_tool(&r, TOOL, args, NULL);
    ck_assert_msg(r.status == 2, "%s: exit %d", bad[_i].opt, r.status);
    ck_assert_msg(strstr(r.err, bad[_i].says), "%s: stderr lacks '%s':\n%s", bad[_i].opt,
                  bad[_i].says, r.err);
    ck_assert_msg(strstr(r.err, "Usage: atlas-trace"), "%s: no usage:\n%s", bad[_i].opt, r.err);
    /* said once: the argument, and what a value must be */
    ck_assert_msg(occurrences(r.err, bad[_i].opt) <= 1 && occurrences(r.err, bad[_i].says) == 1,
                  "%s: said twice:\n%s", bad[_i].opt, r.err);
    ck_assert_msg(strcmp(r.out, "") == 0, "%s: the program ran:\n%s", bad[_i].opt, r.out);
    run_free(&r);
}
END_TEST

START_TEST(missing_value_or_program_is_usage_error)
{
    const char *no_prog[] = {"--stats", NULL};
    const char *no_value[] = {"--json", NULL};
    struct run_result r;
    run_tool(&r, TOOL, no_prog, NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "no program to run"));
    ck_assert_ptr_nonnull(strstr(r.err, "Usage: atlas-trace"));
    run_free(&r);
    run_tool(&r, TOOL, no_value, NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--json needs a value"));
    run_free(&r);
    const char *no_log[] = {"-o", NULL};
    run_tool(&r, TOOL, no_log, NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "-o needs a value"));
    run_free(&r);
}
END_TEST

/* The library's limits reach atlas-trace: the largest red zone the library takes is taken. */
START_TEST(limits_are_the_librarys)
{
    const char *args[] = {
        "--redzone=1048576", "--error-exitcode=255", "--error-on=diff", target, "env", NULL};
    struct run_result r;
    run_ok(&r, args, NULL);
    ck_line(r.out, "ATLAS_REDZONE=1048576");
    ck_line(r.out, "ATLAS_ERROR_EXITCODE=255");
    ck_line(r.out, "ATLAS_ERROR_ON=diff");
    run_free(&r);

    const char *short_log[] = {"-o", "/tmp/a.log", target, "env", NULL};
    run_ok(&r, short_log, NULL);
    ck_line(r.out, "ATLAS_LOG=/tmp/a.log");
    run_free(&r);
    unlink("/tmp/a.log");

    /* valgrind's and compute-sanitizer's spelling of it */
    const char *log_file[] = {"--log-file=/tmp/b.log", target, "env", NULL};
    run_ok(&r, log_file, NULL);
    ck_line(r.out, "ATLAS_LOG=/tmp/b.log");
    run_free(&r);
    unlink("/tmp/b.log");
}
END_TEST

#define REDZONE_PROG BUILD_DIR "/tests/redzone_prog"

/* --error-exitcode: a run that reported something exits with N, whether the program returned
 * from main, called exit() or _exit() (which skips every exit path: atlas-trace counts the
 * findings its processes wrote as they came), and its buffered output still arrives; a clean
 * run keeps the program's status. */
static const struct {
    const char *how, *overrun;
    int status;
} verdicts[] = {
    {"return", "1", 9}, {"exit", "1", 9}, {"_exit", "1", 9},
    {"return", "0", 3}, {"exit", "0", 3}, {"_exit", "0", 3},
};

START_TEST(error_exitcode_replaces_the_status)
{
    const char *args[] = {"--redzone=64",       "--error-exitcode=9", REDZONE_PROG, "over",
                          verdicts[_i].overrun, verdicts[_i].how,     "3",          NULL};
    struct run_result r;
    run_tool(&r, TOOL, args, NULL);
    ck_assert_msg(r.status == verdicts[_i].status, "%s, overrun %s: exit %d, not %d\n%s",
                  verdicts[_i].how, verdicts[_i].overrun, r.status, verdicts[_i].status, r.err);
    if (strcmp(verdicts[_i].how, "_exit") != 0)
        ck_line(r.out, "ending by %s(3)", verdicts[_i].how);
    if (verdicts[_i].status == 9 && strcmp(verdicts[_i].how, "_exit") == 0)
        /* no exit path: atlas-trace says it, the program's own status beside it */
        HAS(r.err, "atlas-trace: 1 overrun in 1 process of the run: exit status 9, not the "
                   "program's 3 (--error-exitcode=9)\n");
    else if (verdicts[_i].status == 9)
        HAS(r.err, "reported 1 overrun: exit status 9 (--error-exitcode=9)");
    else
        HASNT(r.err, "exit status 9");
    /* the summary line, also after _exit */
    HAS(r.err, "summary: ");
    run_free(&r);
}
END_TEST

/* CI runs ./tests, a script: the status is atlas-trace's verdict over every process it ran,
 * though the script drops its children's, and no other process's folder is left behind. */
START_TEST(error_exitcode_through_a_wrapper_script)
{
    const char *script = "/tmp/atlas-front-wrapper.sh";
    FILE *f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "#!/bin/sh\n\"$@\"\n\"$@\"\nexit 0\n");
    fclose(f);
    chmod(script, 0755);
    const char *args[] = {"--redzone=64", "--error-exitcode=9", script, REDZONE_PROG,
                          "over",         "1",                  "_exit", "0",
                          NULL};
    struct run_result r;
    run_tool(&r, TOOL, args, NULL);
    ck_assert_msg(r.status == 9, "a wrapper script: exit %d\n%s", r.status, r.err);
    HAS(r.err, "atlas-trace: 2 overruns in 2 processes of the run: exit status 9, not the "
               "program's 0 (--error-exitcode=9)\n");
    run_free(&r);
    /* nothing found: the script's own status */
    const char *clean[] = {"--redzone=64", "--error-exitcode=9", script, REDZONE_PROG,
                           "over",         "0",                  "return", "5",
                           NULL};
    run_tool(&r, TOOL, clean, NULL);
    ck_assert_msg(r.status == 0, "a clean wrapper: exit %d\n%s", r.status, r.err);
    HASNT(r.err, "atlas-trace:");
    run_free(&r);
    unlink(script);
}
END_TEST

/* With --error-exitcode the program runs as atlas-trace's child: a signal that ends it ends
 * atlas-trace the same way, and one sent to atlas-trace reaches it. */
START_TEST(error_exitcode_keeps_signals)
{
    const char *self[] = {"--error-exitcode=9", "/bin/sh", "-c", "kill -TERM $$", NULL};
    struct run_result r;
    run_tool(&r, TOOL, self, NULL);
    ck_assert_msg(r.status == 128 + SIGTERM, "the program killed itself: status %d\n%s",
                  r.status, r.err);
    run_free(&r);
    /* SIGTERM sent to atlas-trace (the program's parent now) ends the program */
    const char *sent[] = {"--error-exitcode=9", "/bin/sh", "-c", "kill -TERM $PPID; exec sleep 30",
                          NULL};
    time_t t0 = time(NULL);
    run_tool(&r, TOOL, sent, NULL);
    ck_assert_msg(r.status == 128 + SIGTERM, "SIGTERM to atlas-trace: status %d\n%s", r.status,
                  r.err);
    ck_assert_msg(time(NULL) - t0 < 20, "SIGTERM to atlas-trace did not reach the program");
    run_free(&r);
}
END_TEST

/* Without the option, the status is the program's even when something was reported. */
START_TEST(without_error_exitcode_the_status_is_the_programs)
{
    const char *args[] = {"--redzone=64", REDZONE_PROG, "over", "1", "return", "3", NULL};
    struct run_result r;
    run_tool(&r, TOOL, args, NULL);
    ck_assert_int_eq(r.status, 3);
    HAS(r.err, "redzone overrun");
    run_free(&r);

    /* 0, the default, is off, as valgrind's --error-exitcode=0 */
    const char *off[] = {
        "--redzone=64", "--error-exitcode=0", REDZONE_PROG, "over", "1", "return", "3", NULL};
    run_tool(&r, TOOL, off, NULL);
    ck_assert_int_eq(r.status, 3);
    HASNT(r.err, "ATLAS_ERROR_EXITCODE");
    run_free(&r);
}
END_TEST

/* Leaks count under --leaks, a fault counts, a differing step only with --error-on=diff. */
START_TEST(error_exitcode_kinds)
{
    struct run_result r;
    const char *leak[] = {"--leaks", "--error-exitcode=7", REDZONE_PROG, "leak", NULL};
    run_tool(&r, TOOL, leak, NULL);
    ck_assert_msg(r.status == 7, "leak: exit %d\n%s", r.status, r.err);
    HAS(r.err, "reported 2 leaks: exit status 7");
    run_free(&r);

    const char *no_leak_check[] = {"--error-exitcode=7", REDZONE_PROG, "leak", NULL};
    run_tool(&r, TOOL, no_leak_check, NULL);
    ck_assert_msg(r.status == 0, "leak without --leaks: exit %d\n%s", r.status, r.err);
    run_free(&r);

    const char *fault[] = {"--error-exitcode=6", BUILD_DIR "/tests/sync_target", "fault", NULL};
    run_tool(&r, TOOL, fault, NULL);
    ck_assert_msg(r.status == 6, "fault: exit %d\n%s", r.status, r.err);
    HAS(r.err, "reported 1 fault: exit status 6");
    run_free(&r);

    const char *diff[] = {"--trace",
                          "--error-exitcode=5",
                          "--error-on=diff",
                          BUILD_DIR "/tests/trace_steps",
                          "scalar",
                          "3",
                          NULL};
    run_tool(&r, TOOL, diff, NULL);
    ck_assert_msg(r.status == 5, "diff: exit %d\n%s", r.status, r.err);
    HAS(r.err, "reported 2 differing steps: exit status 5");
    run_free(&r);

    const char *diff_not_asked[] = {
        "--trace", "--error-exitcode=5", BUILD_DIR "/tests/trace_steps", "scalar", "3", NULL};
    run_tool(&r, TOOL, diff_not_asked, NULL);
    ck_assert_msg(r.status == 0, "diff not asked: exit %d\n%s", r.status, r.err);
    run_free(&r);

    const char *same[] = {"--trace",
                          "--error-exitcode=5",
                          "--error-on=diff",
                          BUILD_DIR "/tests/trace_steps",
                          "same",
                          "3",
                          NULL};
    run_tool(&r, TOOL, same, NULL);
    ck_assert_msg(r.status == 0, "identical steps: exit %d\n%s", r.status, r.err);
    run_free(&r);
}
END_TEST

/* The NVTX hint says what happened: no range had the name, and which ones the program opened;
 * api mode without atlas_step_begin says so. */
START_TEST(step_mode_hints_are_true)
{
    struct run_result r;
    const char *nvtx[] = {"--trace=nvtx:train", BUILD_DIR "/tests/trace_steps", "nvtx", "2", NULL};
    run_ok(&r, nvtx, NULL);
    HAS(r.err, "the program opened no NVTX range named 'train'; the ranges it opened: 'other', "
               "'step'");
    HASNT(r.err, "set NVTX_INJECTION64_PATH");
    run_free(&r);

    const char *api[] = {"--trace=api", BUILD_DIR "/tests/trace_steps", "scalar", "2", NULL};
    run_ok(&r, api, NULL);
    /* said as the option the user typed, not the variable it became */
    HAS(r.err, "step trace: --trace=api but the program never called atlas_step_begin");
    run_free(&r);

    const char *api_used[] = {"--trace=api", BUILD_DIR "/tests/trace_steps", "api", "2", NULL};
    run_ok(&r, api_used, NULL);
    HASNT(r.err, "never called atlas_step_begin");
    run_free(&r);
}
END_TEST

START_TEST(help_and_version)
{
    const char *help[] = {"--help", target, "exit", "7", NULL};
    struct run_result r;
    run_tool(&r, TOOL, help, NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "Usage: atlas-trace [options] [--] program [args...]"));
    ck_assert_ptr_nonnull(strstr(r.out, "--redzone-check=WHEN"));
    ck_assert_ptr_nonnull(strstr(r.out, "--no-children"));
    ck_assert_str_eq(r.err, "");
    run_free(&r);

    char version[64] = "", want[128];
    FILE *f = fopen("VERSION", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(version, sizeof version, f));
    fclose(f);
    version[strcspn(version, "\n")] = '\0';
    snprintf(want, sizeof want, "atlas-trace (atlastrace) %s\n", version);
    const char *ver[] = {"-V", NULL};
    run_tool(&r, TOOL, ver, NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, want);
    run_free(&r);
}
END_TEST

START_TEST(exit_status_is_the_programs)
{
    static const char *const codes[] = {"0", "3", "42", "255"};
    for (int i = 0; i < 4; i++) {
        const char *args[] = {"--stats", target, "exit", codes[i], NULL};
        struct run_result r;
        run_tool(&r, TOOL, args, NULL);
        ck_assert_int_eq(r.status, atoi(codes[i]));
        run_free(&r);
    }
}
END_TEST

/* atlas-trace execs rather than forks: the process the caller waits for dies of the program's
 * signal itself, so a shell reports 143 and a scheduler sees the real cause. */
START_TEST(signal_reaches_the_caller)
{
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", 1);
        dup2(devnull, 1);
        execl(TOOL, TOOL, "--trace", target, "signal", "15", (char *)NULL);
        _exit(99);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFSIGNALED(st), "not killed by a signal: status 0x%x", st);
    ck_assert_int_eq(WTERMSIG(st), SIGTERM);

    /* and through a shell, the number a user sees */
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd, "exec 2>/dev/null; %s %s signal 15; exit $?", TOOL, target);
    st = system(cmd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 143);
}
END_TEST

START_TEST(program_not_found_or_not_runnable)
{
    struct run_result r;
    const char *missing[] = {"/nonexistent/prog", NULL};
    run_tool(&r, TOOL, missing, NULL);
    ck_assert_int_eq(r.status, 127);
    ck_assert_ptr_nonnull(strstr(r.err, "cannot run /nonexistent/prog"));
    run_free(&r);

    const char *unknown[] = {"atlas-no-such-command-xyz", NULL};
    run_tool(&r, TOOL, unknown, NULL);
    ck_assert_int_eq(r.status, 127);
    run_free(&r);

    char path[] = "/tmp/atlas-front-noexec-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    chmod(path, 0644);
    const char *noexec[] = {path, NULL};
    run_tool(&r, TOOL, noexec, NULL);
    ck_assert_int_eq(r.status, 126);
    run_free(&r);
    unlink(path);
}
END_TEST

static void copy_file(const char *from, const char *to, int mode)
{
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod %o '%s'", from, to, mode, to);
    ck_assert_int_eq(system(cmd), 0);
}

/* The installed layout (bin/atlas-trace, lib/libatlastrace.so), a library next to the tool,
 * and ATLAS_LIB over both. */
START_TEST(library_search)
{
    char dir[] = "/tmp/atlas-front-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char bin[PATH_MAX], libdir[PATH_MAX], tool[PATH_MAX], inlib[PATH_MAX], nextto[PATH_MAX];
    snprintf(bin, sizeof bin, "%s/bin", dir);
    snprintf(libdir, sizeof libdir, "%s/lib", dir);
    snprintf(tool, sizeof tool, "%s/atlas-trace", bin);
    snprintf(inlib, sizeof inlib, "%s/libatlastrace.so", libdir);
    snprintf(nextto, sizeof nextto, "%s/libatlastrace.so", bin);
    mkdir(bin, 0755);
    mkdir(libdir, 0755);
    copy_file(TOOL, tool, 0755);

    const char *args[] = {target, "env", NULL};
    struct run_result r;

    /* nowhere: a clear message, the paths tried, and 125 */
    run_tool(&r, tool, args, NULL);
    ck_assert_int_eq(r.status, 125);
    ck_assert_ptr_nonnull(strstr(r.err, "cannot find libatlastrace.so"));
    ck_assert_ptr_nonnull(strstr(r.err, inlib));
    ck_assert_str_eq(r.out, "");
    run_free(&r);

    /* PREFIX/bin + PREFIX/lib */
    copy_file(lib, inlib, 0755);
    run_tool(&r, tool, args, NULL);
    ck_assert_int_eq(r.status, 0);
    ck_line(r.out, "LD_PRELOAD=%s", inlib);
    ck_line(r.out, "NVTX_INJECTION64_PATH=%s", inlib);
    run_free(&r);

    /* next to the tool wins */
    copy_file(lib, nextto, 0755);
    run_tool(&r, tool, args, NULL);
    ck_line(r.out, "LD_PRELOAD=%s", nextto);
    run_free(&r);

    /* ATLAS_LIB wins, made absolute */
    const char *env[] = {"ATLAS_LIB=" BUILD_DIR "/libatlastrace.so", NULL};
    run_tool(&r, tool, args, env);
    ck_assert_int_eq(r.status, 0);
    ck_line(r.out, "LD_PRELOAD=%s", lib);
    run_free(&r);

    const char *badenv[] = {"ATLAS_LIB=/nonexistent/libatlastrace.so", NULL};
    run_tool(&r, tool, args, badenv);
    ck_assert_int_eq(r.status, 125);
    ck_assert_ptr_nonnull(strstr(r.err, "ATLAS_LIB=/nonexistent/libatlastrace.so"));
    run_free(&r);

    /* a symlink to the build tree's tool (~/bin/atlas-trace -> build/atlas-trace) finds the
     * build tree's library */
    char link[PATH_MAX], real_tool[PATH_MAX];
    snprintf(link, sizeof link, "%s/link", dir);
    mkdir(link, 0755);
    snprintf(link, sizeof link, "%s/link/atlas-trace", dir);
    ck_assert_ptr_nonnull(realpath(TOOL, real_tool));
    ck_assert_int_eq(symlink(real_tool, link), 0);
    run_tool(&r, link, args, NULL);
    ck_assert_int_eq(r.status, 0);
    ck_line(r.out, "LD_PRELOAD=%s", lib);
    run_free(&r);

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(existing_preload_and_nvtx_are_kept)
{
    char other[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/fake/libcuda.so.1", other));
    char pre[PATH_MAX + 32], want[PATH_MAX * 3];
    const char *args[] = {target, "env", NULL};
    struct run_result r;

    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", other);
    const char *env1[] = {pre, NULL};
    run_ok(&r, args, env1);
    ck_line(r.out, "LD_PRELOAD=%s:%s", lib, other);
    run_free(&r);

    /* ld.so's space-separated form is kept as it was */
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s %s", other, other);
    run_ok(&r, args, env1);
    ck_line(r.out, "LD_PRELOAD=%s:%s %s", lib, other, other);
    run_free(&r);

    /* already ours: not added twice */
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s:%s", other, lib);
    run_ok(&r, args, env1);
    snprintf(want, sizeof want, "LD_PRELOAD=%s:%s", other, lib);
    ck_line(r.out, "%s", want);
    run_free(&r);

    /* the user's NVTX injection library stays; asking for NVTX steps says what that means */
    const char *env2[] = {"NVTX_INJECTION64_PATH=/opt/other/libnvtx-tool.so", NULL};
    run_ok(&r, args, env2);
    ck_line(r.out, "NVTX_INJECTION64_PATH=/opt/other/libnvtx-tool.so");
    char err[512];
    unprefixed(r.err, err, sizeof err);
    ck_assert_str_eq(err, NO_CALL "\n");
    run_free(&r);
    const char *nvtx_args[] = {"--trace=nvtx:step", target, "env", NULL};
    run_ok(&r, nvtx_args, env2);
    ck_line(r.out, "NVTX_INJECTION64_PATH=/opt/other/libnvtx-tool.so");
    ck_assert_ptr_nonnull(
        strstr(r.err, "NVTX_INJECTION64_PATH=/opt/other/libnvtx-tool.so is kept"));
    run_free(&r);
}
END_TEST

/* front_env parent execs itself as a child: where is the library loaded? */
START_TEST(children_traced_by_default)
{
    const char *args[] = {target, "parent", NULL};
    struct run_result r;
    run_ok(&r, args, NULL);
    ck_line(r.out, "parent loaded=1");
    ck_line(r.out, "child loaded=1");
    ck_line(r.out, "LD_PRELOAD=%s", lib);
    run_free(&r);
}
END_TEST

START_TEST(no_children)
{
    const char *args[] = {"--no-children", target, "parent", NULL};
    struct run_result r;
    run_ok(&r, args, NULL);
    ck_line(r.out, "parent loaded=1");
    ck_line(r.out, "child loaded=0");
    ck_line(r.out, "LD_PRELOAD unset");
    ck_line(r.out, "NVTX_INJECTION64_PATH unset");
    run_free(&r);

    /* the user's own preload still reaches the child */
    char other[PATH_MAX], pre[PATH_MAX + 32];
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/fake/libcuda.so.1", other));
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", other);
    const char *env[] = {pre, NULL};
    run_ok(&r, args, env);
    ck_line(r.out, "child loaded=0");
    ck_line(r.out, "LD_PRELOAD=%s", other);
    run_free(&r);
}
END_TEST

/* Python copies the environment into os.environ before any script line runs, so only a removal
 * at load time reaches subprocess: this is why --no-children is a constructor. */
START_TEST(no_children_python_subprocess)
{
    const char *script = "import subprocess\n"
                         "r = subprocess.run(['sh', '-c', 'echo \"$LD_PRELOAD\"'],\n"
                         "                   capture_output=True, text=True)\n"
                         "print('child LD_PRELOAD=' + r.stdout.strip())\n";
    const char *with[] = {"python3", "-c", script, NULL};
    const char *without[] = {"--no-children", "python3", "-c", script, NULL};
    struct run_result r;
    run_tool(&r, TOOL, with, NULL);
    if (r.status == 127) {
        fprintf(stderr, "test_front: no python3 on PATH: the Python subprocess case did not run\n");
        run_free(&r);
        return;
    }
    ck_assert_msg(r.status == 0, "python3 exited %d:\n%s", r.status, r.err);
    ck_line(r.out, "child LD_PRELOAD=%s", lib);
    run_free(&r);
    run_tool(&r, TOOL, without, NULL);
    ck_assert_msg(r.status == 0, "python3 exited %d:\n%s", r.status, r.err);
    ck_line(r.out, "child LD_PRELOAD=");
    run_free(&r);
}
END_TEST

/* Without the tool: a relative LD_PRELOAD path and the variable set by hand. */
START_TEST(no_children_without_the_tool)
{
    char *argv[] = {target, "parent", NULL};
    const char *env[] = {"LD_PRELOAD=" BUILD_DIR "/libatlastrace.so", "ATLAS_NO_CHILDREN=yes",
                         NULL};
    struct run_result r;
    run_target(&r, argv, env, 0);
    ck_assert_int_eq(r.status, 0);
    ck_line(r.out, "parent loaded=1");
    ck_line(r.out, "child loaded=0");
    ck_line(r.out, "LD_PRELOAD unset");
    run_free(&r);
}
END_TEST

/* The demo program on the fake driver, through the tool: right answers, and every launch and
 * blocking copy it makes counted by the library the tool preloaded. */
START_TEST(demo_runs_on_the_fake_driver)
{
    const char *args[] = {"--stats", BUILD_DIR "/examples/demo_steps",
                          BUILD_DIR "/tests/front_demo_kernels.so", NULL};
    struct run_result r;
    run_ok(&r, args, NULL);
    ck_line(r.out, "demo: step 3: y[0] = 5");
    ck_line(r.out, "demo: ok");
    struct stat_row row;
    ck_assert_msg(stats_row(r.err, "cuLaunchKernel", &row), "no stats:\n%s", r.err);
    ck_assert_uint_eq(row.calls, 4 * 2 + 1);
    ck_assert_uint_eq(row.linked, 4 * 2 + 1);
    stats_row(r.err, "cuMemcpyDtoH_v2", &row);
    ck_assert_uint_eq(row.calls, 4);
    run_free(&r);
}
END_TEST

/* Output files the tool can tell are wrong are refused before anything runs: an executable
 * (`--json ./app lib.so`, the file forgotten, would run lib.so and let the library truncate
 * ./app), a folder, one file for two reports; and a range name longer than the library takes.
 * Set by hand, the library names the report that already writes the file. */
START_TEST(output_files_checked)
{
    char dir[] = "/tmp/atlas-front-out-XXXXXX", app[PATH_MAX], same[PATH_MAX];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(app, sizeof app, "%s/app", dir);
    snprintf(same, sizeof same, "%s/same", dir);
    char cp[2 * PATH_MAX];
    snprintf(cp, sizeof cp, "cp %s %s", target, app);
    ck_assert_int_eq(system(cp), 0);
    struct stat before, after;
    ck_assert_int_eq(stat(app, &before), 0);

    char json_eq_same[PATH_MAX + 16], chrome_eq_same[PATH_MAX + 16], json_dir[PATH_MAX + 16];
    snprintf(json_eq_same, sizeof json_eq_same, "--json=%s", same);
    snprintf(chrome_eq_same, sizeof chrome_eq_same, "--chrome=%s", same);
    snprintf(json_dir, sizeof json_dir, "--json=%s", dir);
    char long_mode[128] = "--trace=nvtx:";
    memset(long_mode + strlen(long_mode), 'n', 70);
    const struct {
        const char *args[6], *says;
    } cases[] = {
        {{"--json", app, BUILD_DIR "/tests/front_demo_kernels.so", NULL},
         ": an executable file, which the report would overwrite"},
        {{"-o", app, target, "env", NULL}, ": an executable file"},
        {{json_eq_same, chrome_eq_same, target, "env", NULL},
         "--json and --chrome name the same file"},
        {{json_eq_same, "-o", same, target, "env", NULL}, "--json and -o name the same file"},
        {{json_dir, target, "env", NULL}, ": a folder, not a file"},
        {{long_mode, target, "env", NULL}, "range name too long\n"},
        /* an option spelt by a prefix of its name: refused, named whole */
        {{"--lea", target, "env", NULL},
         "--lea: did you mean --leaks? (options are taken only as written whole)"},
        {{"--trac", target, "env", NULL}, "unknown option --trac; did you mean --trace?"},
        /* ambiguous (--redzone, --redzone-check, ...): the nearest */
        {{"--red", target, "env", NULL}, "unknown option --red; did you mean --redzone?"},
        /* the program taken as an option's value (issue #46): said as typed, with the way */
        {{"--error-exitcode", app, NULL}, " is a program: the value goes with the option, "
                                          "--error-exitcode=VALUE, before the program)"},
        {{"--kernel", app, target, "env", NULL}, " is a program, taken as the option's value; "
                                                 "write --kernel=VALUE before the program"},
    };
    struct run_result r;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_tool(&r, TOOL, cases[i].args, NULL);
        ck_assert_msg(r.status == 2, "%s: exit %d\n%s", cases[i].says, r.status, r.err);
        HAS(r.err, cases[i].says);
        ck_assert_str_eq(r.out, "");
        run_free(&r);
    }
    ck_assert_int_eq(stat(app, &after), 0);
    ck_assert_int_eq(after.st_size, before.st_size);

    /* set by hand: the library says which report has the file, not "another process" */
    char tv[PATH_MAX + 32], cv[PATH_MAX + 32];
    snprintf(tv, sizeof tv, "ATLAS_TRACE_FILE=%s", same);
    snprintf(cv, sizeof cv, "ATLAS_CHROME_TRACE=%s", same);
    const char *env[] = {tv, cv, NULL};
    char *argv[] = {BUILD_DIR "/examples/demo_steps", BUILD_DIR "/tests/front_demo_kernels.so",
                    NULL};
    run_target(&r, argv, env, 1);
    ck_assert_int_eq(r.status, 0);
    HAS(r.log, "cannot open ATLAS_CHROME_TRACE file '");
    HAS(r.log, "': ATLAS_TRACE_FILE writes it already (each report needs a file of its own); no "
               "Chrome trace");
    HASNT(r.log, "another process");
    run_free(&r);
    unlink(same);
    unlink(app);
    rmdir(dir);
}
END_TEST

int main(void)
{
    /* what the tests' own environment holds must not leak into what they assert */
    unsetenv("ATLAS_LIB");
    unsetenv("NVTX_INJECTION64_PATH");
    unsetenv("LD_PRELOAD");
    for (char **e = environ; *e;) {
        if (strncmp(*e, "ATLAS_", 6) == 0) {
            char name[256];
            size_t n = strcspn(*e, "=");
            snprintf(name, sizeof name, "%.*s", (int)n, *e);
            unsetenv(name);
        } else {
            e++;
        }
    }
    if (!realpath(BUILD_DIR "/libatlastrace.so", lib) || !realpath(TARGET, target)) {
        fprintf(stderr, "test_front: build " BUILD_DIR "/libatlastrace.so and " TARGET " first\n");
        return 1;
    }

    Suite *s = suite_create("atlas-trace");
    TCase *tc = tcase_create("front");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, each_option_sets_its_variable);
    tcase_add_test(tc, every_setting_has_an_option);
    tcase_add_test(tc, quiet_says_findings);
    tcase_add_test(tc, trace_summary_hints_in_the_users_terms);
    tcase_add_test(tc, no_options_set_only_the_preload);
    tcase_add_loop_test(tc, summary_line_ends_the_run, 0,
                        (int)(sizeof summaries / sizeof summaries[0]));
    tcase_add_test(tc, bare_preload_has_no_summary);
    tcase_add_test(tc, children_get_their_own_summary);
    tcase_add_test(tc, outputs_imply_trace_and_become_absolute);
    tcase_add_test(tc, value_defaults_and_modes);
    tcase_add_test(tc, arguments_pass_through);
    tcase_add_loop_test(tc, bad_option_is_usage_error, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, missing_value_or_program_is_usage_error);
    tcase_add_test(tc, limits_are_the_librarys);
    tcase_add_loop_test(tc, error_exitcode_replaces_the_status, 0,
                        (int)(sizeof verdicts / sizeof verdicts[0]));
    tcase_add_test(tc, error_exitcode_through_a_wrapper_script);
    tcase_add_test(tc, error_exitcode_keeps_signals);
    tcase_add_test(tc, without_error_exitcode_the_status_is_the_programs);
    tcase_add_test(tc, error_exitcode_kinds);
    tcase_add_test(tc, step_mode_hints_are_true);
    tcase_add_test(tc, help_and_version);
    tcase_add_test(tc, exit_status_is_the_programs);
    tcase_add_test(tc, signal_reaches_the_caller);
    tcase_add_test(tc, program_not_found_or_not_runnable);
    tcase_add_test(tc, library_search);
    tcase_add_test(tc, existing_preload_and_nvtx_are_kept);
    tcase_add_test(tc, children_traced_by_default);
    tcase_add_test(tc, no_children);
    tcase_add_test(tc, no_children_without_the_tool);
    tcase_add_test(tc, no_children_python_subprocess);
    tcase_add_test(tc, demo_runs_on_the_fake_driver);
    tcase_add_test(tc, output_files_checked);
    suite_add_tcase(s, tc);

    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
