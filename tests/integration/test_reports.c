/*
 * Reports a person and a CI job read (issue #31, docs/reports.md): stacks named by file and
 * line, leaks grouped by call stack, the print limit and the folding of repeated step
 * differences, suppression files and --gen-suppressions, the findings file (validated against
 * docs/findings.schema.json, one line for each finding on stderr), atlas-diff --report, and
 * make demo's length. Against the fake driver, through atlas-trace where the user would.
 */
#define _GNU_SOURCE
#include "run.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T(name) BUILD_DIR "/tests/" name
#define TOOL BUILD_DIR "/atlas-trace"
#define DIFF BUILD_DIR "/atlas-diff"
#define RZ T("redzone_prog")
#define SYNC T("sync_target")
#define SCHEMA "docs/findings.schema.json"
#define VALIDATOR "tests/harness/validate_findings.py"

static char tmp[PATH_MAX];

static void setup(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/atlas-reports-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    ck_assert_int_eq(system(cmd), 0);
}

/* atlas-trace with `args` (NULL-terminated), its reports on stderr. */
static void tool(struct run_result *r, const char *const *args, const char *const *env)
{
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)TOOL;
    for (; *args && n < 63; args++)
        argv[n++] = (char *)*args;
    argv[n] = NULL;
    run_target(r, argv, env, 0);
}

/* The number of the line of `file` holding `marker`. */
static int source_line(const char *file, const char *marker)
{
    char *t = read_file_text(file, NULL);
    ck_assert_ptr_nonnull(t);
    char *m = strstr(t, marker);
    ck_assert_ptr_nonnull(m);
    int line = 1;
    for (char *p = t; p < m; p++)
        line += *p == '\n';
    free(t);
    return line;
}

static void copy_file(const char *from, const char *to)
{
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* ---- file:line ------------------------------------------------------------------------- */

/* A -g build names its frames by file and line (the program's own and a library's), and the
 * site is the program's call, not CUDA's runtime linked into it nor a kernel's launch stub; a
 * stripped library keeps the symbol+offset form; ATLAS_SYMBOLS=0 asks for that form. */
START_TEST(frames_name_file_and_line)
{
    int own = source_line("tests/targets/sym_prog.c", "OWN_ALLOC_LINE");
    int lib = source_line("tests/targets/sym_lib.c", "SYM_ALLOC_LINE");
    char copy[PATH_MAX + 32], want[128];
    snprintf(copy, sizeof copy, "%s/libsym.so", tmp);
    copy_file(T("libsym.so"), copy);
    char *argv[] = {T("sym_prog"), copy, "keep", NULL};
    static const char *const env[] = {"ATLAS_LEAKS=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    snprintf(want, sizeof want, "allocated at own_alloc (sym_prog.c:%d)\n", own);
    HAS(r.log, want);
    snprintf(want, sizeof want, "allocated at sym_alloc (sym_lib.c:%d)\n", lib);
    HAS(r.log, want);
    /* through CUDA's runtime linked into the program (nvcc's default): the program's caller */
    snprintf(want, sizeof want, "allocated at rt_alloc (sym_prog.c:%d)\n",
             source_line("tests/targets/sym_prog.c", "RT_ALLOC_LINE"));
    HAS(r.log, want);
    /* through a kernel's launch stub and host function: the launch's line */
    snprintf(want, sizeof want, "allocated at launch_alloc (sym_prog.c:%d)\n",
             source_line("tests/targets/sym_prog.c", "LAUNCH_ALLOC_LINE"));
    HAS(r.log, want);
    /* through a CUDA header's helper inlined into the program's function: the line it was
     * inlined at, not the header's */
    snprintf(want, sizeof want, "allocated at inl_alloc (sym_prog.c:%d)\n",
             source_line("tests/targets/sym_prog.c", "INL_ALLOC_LINE"));
    HAS(r.log, want);
    HASNT(r.log, "libcudart_static_");
    HASNT(r.log, "cuda_runtime_sym.h");
    run_free(&r);

    snprintf(copy, sizeof copy, "%s/libsym_stripped.so", tmp);
    copy_file(T("libsym_stripped.so"), copy);
    argv[1] = copy;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    HAS(r.log, "allocated at sym_alloc+0x");
    HAS(r.log, " (libsym_stripped.so)\n");
    HASNT(r.log, "sym_lib.c");
    snprintf(want, sizeof want, "allocated at own_alloc (sym_prog.c:%d)\n", own);
    HAS(r.log, want);
    run_free(&r);

    static const char *const off[] = {"ATLAS_LEAKS=1", "ATLAS_SYMBOLS=0", NULL};
    argv[1] = T("libsym.so");
    run_target(&r, argv, off, 1);
    HAS(r.log, "allocated at own_alloc+0x");
    HAS(r.log, "allocated at rt_alloc+0x"); /* told by dladdr's names (-rdynamic) */
    HAS(r.log, "allocated at launch_alloc+0x");
    HASNT(r.log, ".c:");
    run_free(&r);
}
END_TEST

/* Without libdw (a libdw.so.1 that is no libdw first on the library path, as a GPU image that
 * has binutils but not elfutils), file:line from an addr2line program: the one on PATH, or
 * ATLAS_SYMBOLIZER's; none at all, or one that fails: the symbol+offset form, and one line that
 * says what to install; one that hangs is stopped, the run goes on. */
#define NODW "LD_LIBRARY_PATH=" BUILD_DIR "/tests/nodw:" BUILD_DIR "/fake"

START_TEST(frames_name_lines_without_libdw)
{
    int own = source_line("tests/targets/sym_prog.c", "OWN_ALLOC_LINE");
    int lib = source_line("tests/targets/sym_lib.c", "SYM_ALLOC_LINE");
    char want[128];
    char *argv[] = {T("sym_prog"), T("libsym.so"), "keep", NULL};
    static const char *const env[] = {"ATLAS_LEAKS=1", NODW, NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    snprintf(want, sizeof want, "allocated at own_alloc (sym_prog.c:%d)\n", own);
    HAS(r.log, want);
    snprintf(want, sizeof want, "allocated at sym_alloc (sym_lib.c:%d)\n", lib);
    HAS(r.log, want);
    snprintf(want, sizeof want, "allocated at launch_alloc (sym_prog.c:%d)\n",
             source_line("tests/targets/sym_prog.c", "LAUNCH_ALLOC_LINE"));
    HAS(r.log, want);
    snprintf(want, sizeof want, "allocated at inl_alloc (sym_prog.c:%d)\n",
             source_line("tests/targets/sym_prog.c", "INL_ALLOC_LINE"));
    HAS(r.log, want);
    HASNT(r.log, "cuda_runtime_sym.h");
    HASNT(r.log, "source lines:");
    run_free(&r);

    /* ATLAS_SYMBOLIZER names no program: said, and the symbol+offset form */
    static const char *const bad[] = {"ATLAS_LEAKS=1", NODW, "ATLAS_SYMBOLIZER=/nonexistent/a2l",
                                      NULL};
    run_target(&r, argv, bad, 1);
    ck_assert_int_eq(r.status, 0);
    HAS(r.log, "source lines: ATLAS_SYMBOLIZER=/nonexistent/a2l is no program to run: reports "
               "name functions and offsets\n");
    HAS(r.log, "allocated at own_alloc+0x");
    HASNT(r.log, "sym_prog.c:");
    run_free(&r);

    /* none on PATH: what to install, once */
    static const char *const none[] = {"ATLAS_LEAKS=1", NODW, "PATH=/nonexistent", NULL};
    run_target(&r, argv, none, 1);
    ck_assert_int_eq(r.status, 0);
    ck_assert_int_eq(count_lines(r.log, "source lines: libdw (elfutils) is not installed and no "
                                        "addr2line program was found on PATH"),
                     1);
    HAS(r.log, "apt-get install libdw1, or binutils");
    HAS(r.log, "allocated at own_alloc+0x");
    run_free(&r);

    /* one that hangs: stopped after its time, asked once for each file, the run whole */
    char hang[PATH_MAX + 32], set[PATH_MAX + 64];
    snprintf(hang, sizeof hang, "%s/hang-a2l.sh", tmp);
    write_file(hang, "#!/bin/sh\nexec sleep 60\n");
    chmod(hang, 0755);
    snprintf(set, sizeof set, "ATLAS_SYMBOLIZER=%s", hang);
    const char *const slow[] = {"ATLAS_LEAKS=1", NODW, set, NULL};
    time_t t0 = time(NULL);
    run_target(&r, argv, slow, 1);
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(time(NULL) - t0 < 30, "a hanging symbolizer held the run %ld s",
                  (long)(time(NULL) - t0));
    HAS(r.log, "allocated at own_alloc+0x");
    HAS(r.log, "allocated at sym_alloc+0x");
    run_free(&r);
}
END_TEST

/* The library's file replaced by garbage, cut short, or removed while the program runs: the
 * report neither crashes nor hangs, names the library's frame as the loader knows it, and the
 * program's own frame still by its line. */
static const char *const bad_files[] = {"garbage", "truncated", "missing"};

START_TEST(frames_survive_bad_files)
{
    char copy[PATH_MAX + 32], want[128], done[64];
    snprintf(copy, sizeof copy, "%s/libsym-%s.so", tmp, bad_files[_i]);
    copy_file(T("libsym.so"), copy);
    char *argv[] = {T("sym_prog"), copy, (char *)bad_files[_i], NULL};
    static const char *const env[] = {"ATLAS_LEAKS=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "%s: exit %d\n%s\n%s", bad_files[_i], r.status, r.err, r.log);
    snprintf(done, sizeof done, "%s: done\n", bad_files[_i]);
    HAS(r.out, done);
    HAS(r.log, "allocated at sym_alloc+0x");
    HASNT(r.log, "sym_lib.c");
    snprintf(want, sizeof want, "allocated at own_alloc (sym_prog.c:%d)\n",
             source_line("tests/targets/sym_prog.c", "OWN_ALLOC_LINE"));
    HAS(r.log, want);
    run_free(&r);
}
END_TEST

/* The library's file cut short in place after a report named one of its frames (issue #48:
 * the next report died of SIGBUS inside libdw, 3 runs of 3): the second report names its
 * frame from what was read the first time, and the run ends well. */
START_TEST(frames_survive_a_file_cut_in_place)
{
    char copy[PATH_MAX + 32];
    snprintf(copy, sizeof copy, "%s/libsym-cut.so", tmp);
    copy_file(T("libsym.so"), copy);
    char *argv[] = {T("sym_prog"), copy, "cut-in-place", NULL};
    static const char *const env[] = {"ATLAS_REDZONE=64", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s\n%s", r.status, r.err, r.log);
    HAS(r.out, "cut-in-place: done\n");
    char want[128];
    snprintf(want, sizeof want, "allocated at sym_alloc (sym_lib.c:%d)",
             source_line("tests/targets/sym_lib.c", "SYM_ALLOC_LINE"));
    HAS(r.log, want);
    HAS(r.log, "allocated at sym_alloc2");
    run_free(&r);
}
END_TEST

/* ---- grouping, limits, folding ------------------------------------------------------------ */

/* 1,000 leaks from one call stack are one group: counts, bytes, the range of numbers. */
START_TEST(leaks_grouped_by_call_stack)
{
    char *argv[] = {RZ, "leakmany", "1000", NULL};
    static const char *const env[] = {"ATLAS_LEAKS=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_int_eq(r.status, 0);
    HAS(r.log, "leaks: 1000 allocations never freed, 4096000 bytes in total, from 1 call stack "
               "(largest first):\n");
    HAS(r.log, "leaks:   1000 allocations, 4096000 bytes (alloc#1 to alloc#1000, 4096 bytes "
               "each), allocated at site_one (redzone_prog.c:");
    ck_assert_int_eq(count_lines(r.log, "leaks:   "), 1);
    HASNT(r.log, "more");
    run_free(&r);
}
END_TEST

/* --print-limit: the first N findings in full, the rest counted, the count said; the exit
 * status counts them all. */
START_TEST(print_limit)
{
    const char *args[] = {
        "--redzone=64", "--print-limit=1", "--error-exitcode=9", RZ, "three", NULL};
    struct run_result r;
    tool(&r, args, NULL);
    ck_assert_msg(r.status == 9, "exit %d\n%s", r.status, r.err);
    ck_assert_int_eq(count_lines(r.err, "redzone overrun: "), 1);
    HAS(r.err, "findings: 1 more not printed, past the first 1 (counted all the same; "
               "--print-limit=0 prints all)\n");
    HAS(r.err, "reported 2 overruns: exit status 9");
    run_free(&r);
    args[1] = "--print-limit=0";
    tool(&r, args, NULL);
    ck_assert_int_eq(count_lines(r.err, "redzone overrun: "), 2);
    HASNT(r.err, "not printed");
    run_free(&r);
}
END_TEST

static void validate(const char *report);

/* A step whose difference repeats the one before (the same parameter changed by the same
 * delta) is folded into one line (src/tracediff.c); each is a finding all the same: counted by
 * --error-exitcode, written to the findings file as not printed, not counted as past the
 * print limit. A suppression of the first silences the run's line too. */
START_TEST(repeated_differences_folded)
{
    char rep[PATH_MAX + 32], ropt[PATH_MAX + 64];
    snprintf(rep, sizeof rep, "%s/steps.jsonl", tmp);
    snprintf(ropt, sizeof ropt, "--report=%s", rep);
    const char *args[] = {
        "--trace", "--error-exitcode=5", "--error-on=diff", ropt, T("trace_steps"), "scalar", "4",
        NULL};
    struct run_result r;
    tool(&r, args, NULL);
    ck_assert_msg(r.status == 5, "exit %d\n%s", r.status, r.err);
    ck_assert_int_eq(count_lines(r.err, "differs from"), 1);
    HAS(r.err, "steps 3-4 (\"cuStreamSynchronize\"): add_step arg1 +1 per step, 0x65 -> 0x67 "
               "(2 steps)\n");
    HAS(r.err, "reported 3 differing steps: exit status 5");
    HASNT(r.err, "not printed");
    validate(rep);
    char *text = read_file_text(rep, NULL);
    ck_assert_int_eq(count_lines(text, "\"kind\":\"step-diff\""), 3);
    ck_assert_int_eq(count_lines(text, "\"printed\":true"), 1);
    ck_assert_int_eq(count_lines(text, "\"kernel\":\"add_step\""), 3);
    free(text);
    run_free(&r);

    char file[PATH_MAX + 32], opt[PATH_MAX + 64];
    snprintf(file, sizeof file, "%s/steps.supp", tmp);
    write_file(file, "{\n the counter\n atlas:step-diff\n kernel:add_step\n}\n");
    snprintf(opt, sizeof opt, "--suppressions=%s", file);
    const char *quiet[] = {
        "--trace", "--error-exitcode=5", "--error-on=diff", opt, T("trace_steps"), "scalar", "4",
        NULL};
    tool(&r, quiet, NULL);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    HASNT(r.err, "differs from");
    HASNT(r.err, "steps 3-4");
    HAS(r.err, "suppressed: 3 findings (3 differing steps) (entries read: 1)\n");
    HAS(r.err, ", 0 of 4 steps differ, ");
    HAS(r.err, ", 3 findings suppressed\n");
    run_free(&r);
}
END_TEST

/* A fault report lists the newest launches with a run of identical ones folded. */
START_TEST(fault_launches_folded)
{
    const char *args[] = {SYNC, "fault", NULL};
    struct run_result r;
    tool(&r, args, NULL);
    HAS(r.err, "fault:   x10 launch=291..300 kernel=axpy_good(float*) grid=(4,2,1) ");
    HAS(r.err, "fault:   launch=301 kernel=oob_write(float*) ");
    HAS(r.err, "fault:   x5 launch=302..306 kernel=axpy_good(float*) ");
    ck_assert_int_eq(count_lines(r.err, "fault:   x"), 2);
    run_free(&r);
}
END_TEST

/* ---- suppressions --------------------------------------------------------------------------- */

/* An entry silences exactly what it matches: not printed, not counted by --error-exitcode,
 * counted as suppressed; the others stay. */
START_TEST(suppressions_silence_exactly)
{
    char file[PATH_MAX + 32], opt[PATH_MAX + 64];
    snprintf(file, sizeof file, "%s/two.supp", tmp);
    write_file(file, "# site_two's leak is known\n"
                     "{\n"
                     "   site two\n"
                     "   atlas:leak\n"
                     "   ...\n"
                     "   fun:site_two\n"
                     "}\n");
    snprintf(opt, sizeof opt, "--suppressions=%s", file);
    const char *args[] = {"--leaks", opt, "--error-exitcode=7", RZ, "sites", NULL};
    struct run_result r;
    tool(&r, args, NULL);
    ck_assert_msg(r.status == 7, "exit %d\n%s", r.status, r.err);
    HASNT(r.err, "site_two (");
    ck_assert_int_eq(count_lines(r.err, "allocated at site_one ("), 2);
    HAS(r.err, "leaks: 2 allocations never freed, 444 bytes in total, from 2 call stacks (largest "
               "first); 1 more suppressed:\n");
    HAS(r.err, "suppressed: 1 finding (1 leak) (entries read: 1)\n");
    HAS(r.err, "reported 2 leaks: exit status 7");
    run_free(&r);

    /* by the source line, in a second file (the option repeated) */
    char file2[PATH_MAX + 32], opt2[PATH_MAX + 64], entry[256];
    snprintf(file2, sizeof file2, "%s/one.supp", tmp);
    snprintf(entry, sizeof entry,
             "{\n  site one by its line\n  atlas:leak\n  src:redzone_prog.c:%d\n}\n",
             source_line("tests/targets/redzone_prog.c", "SITE_ONE_ALLOC"));
    write_file(file2, entry);
    snprintf(opt2, sizeof opt2, "--suppressions=%s", file2);
    const char *both[] = {"--leaks", opt, opt2, "--error-exitcode=7", RZ, "sites", NULL};
    tool(&r, both, NULL);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    HAS(r.err, "leaks: none but suppressed ones (3 allocations never freed)\n");
    HAS(r.err, "suppressed: 3 findings (3 leaks) (entries read: 2)\n");
    HASNT(r.err, "reported");
    run_free(&r);

    /* ATLAS_SUPPRESSIONS, comma-separated, read by a bare preload too */
    char setting[2 * PATH_MAX + 64];
    snprintf(setting, sizeof setting, "ATLAS_SUPPRESSIONS=%s,%s", file, file2);
    const char *env[] = {setting, "ATLAS_LEAKS=1", NULL};
    char *argv[] = {RZ, "sites", NULL};
    run_target(&r, argv, env, 1);
    HAS(r.log, "leaks: none but suppressed ones (3 allocations never freed)\n");
    run_free(&r);
}
END_TEST

/* A kernel name pattern: debug sync's failing launch of oob_write, silenced by kernel:oob_*,
 * not by kernel:other*. */
START_TEST(suppressions_by_kernel)
{
    char file[PATH_MAX + 32], opt[PATH_MAX + 64];
    snprintf(file, sizeof file, "%s/k.supp", tmp);
    write_file(file, "{\n oob\n atlas:fault\n kernel:oob_*\n}\n");
    snprintf(opt, sizeof opt, "--suppressions=%s", file);
    const char *args[] = {"--debug-sync", opt, "--error-exitcode=6", SYNC, "fault", NULL};
    struct run_result r;
    tool(&r, args, NULL);
    ck_assert_msg(r.status != 6, "exit %d\n%s", r.status, r.err);
    HASNT(r.err, "debug-sync: launch failed");
    HAS(r.err, "suppressed: 1 finding (1 fault)");
    run_free(&r);
    write_file(file, "{\n other\n atlas:fault\n kernel:other*\n}\n");
    tool(&r, args, NULL);
    ck_assert_msg(r.status == 6, "exit %d\n%s", r.status, r.err);
    HAS(r.err, "debug-sync: launch failed: kernel=oob_write");
    HAS(r.err, "suppressed: 0 findings (entries read: 1)");
    run_free(&r);
}
END_TEST

/* A line that is not part of an entry is said (file and line) and its entry left out; the
 * other entries work. */
START_TEST(suppressions_file_errors)
{
    char file[PATH_MAX + 32], opt[PATH_MAX + 64];
    snprintf(file, sizeof file, "%s/bad.supp", tmp);
    write_file(file, "{\n broken\n atlas:leak\n fnu:site_two\n}\n{\n good\n atlas:leak\n "
                     "fun:site_two\n}\n");
    snprintf(opt, sizeof opt, "--suppressions=%s", file);
    const char *args[] = {"--leaks", opt, RZ, "sites", NULL};
    struct run_result r;
    tool(&r, args, NULL);
    HAS(r.err, "bad.supp' line 4: not a line of an entry (kernel:, step:, fun:, src:, obj:, ... "
               "or }): 'fnu:site_two'; the entry is not used\n");
    HASNT(r.err, "site_two (");
    HAS(r.err, "suppressed: 1 finding (1 leak) (entries read: 1)\n");
    run_free(&r);

    /* a FIFO where the file was: refused, not waited on (it hung the program at its first
     * CUDA call); atlas-trace refuses it before the run */
    char fifo[PATH_MAX + 32], set[PATH_MAX + 64];
    snprintf(fifo, sizeof fifo, "%s/fifo.supp", tmp);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    snprintf(set, sizeof set, "ATLAS_SUPPRESSIONS=%s", fifo);
    char *argv[] = {RZ, "sites", NULL};
    const char *const env[] = {"ATLAS_LEAKS=1", set, NULL};
    time_t t0 = time(NULL);
    run_target(&r, argv, env, 1);
    ck_assert_msg(time(NULL) - t0 < 20, "a FIFO as the suppressions file held the program");
    ck_assert_int_eq(r.status, 0);
    HAS(r.log, "fifo.supp': not a regular file; its entries are not used\n");
    run_free(&r);
    snprintf(opt, sizeof opt, "--suppressions=%s", fifo);
    const char *fargs[] = {"--leaks", opt, RZ, "sites", NULL};
    tool(&r, fargs, NULL);
    ck_assert_int_eq(r.status, 2);
    HAS(r.err, "fifo.supp: not a regular file\n");
    run_free(&r);
    unlink(fifo);
}
END_TEST

/* --gen-suppressions: the entry printed after a finding, pasted into a file as it is (log
 * prefixes and all), silences that finding on the next run and leaves the others. */
static char *entry_after(const char *err, const char *finding)
{
    const char *p = strstr(err, finding);
    ck_assert_msg(p, "no '%s' in\n%s", finding, err);
    const char *open = strstr(p, ": {\n"), *close = open ? strstr(open, ": }\n") : NULL;
    ck_assert_msg(open && close, "no entry after '%s' in\n%s", finding, err);
    while (open > err && open[-1] != '\n')
        open--;
    return strndup(open, (size_t)(close + 4 - open));
}

START_TEST(gen_suppressions_round_trip)
{
    char file[PATH_MAX + 32], opt[PATH_MAX + 64];
    snprintf(file, sizeof file, "%s/gen.supp", tmp);
    snprintf(opt, sizeof opt, "--suppressions=%s", file);
    struct run_result r;

    /* a leak: site_two's goes, site_one's two stay */
    const char *gen[] = {"--leaks", "--gen-suppressions", RZ, "sites", NULL};
    tool(&r, gen, NULL);
    char *e = entry_after(r.err, "allocated at site_two (");
    HAS(e, "   atlas:leak\n");
    HAS(e, "   fun:site_two\n");
    write_file(file, e);
    free(e);
    run_free(&r);
    const char *again[] = {"--leaks", opt, RZ, "sites", NULL};
    tool(&r, again, NULL);
    HASNT(r.err, "site_two (");
    ck_assert_int_eq(count_lines(r.err, "allocated at site_one ("), 2);
    HAS(r.err, "suppressed: 1 finding (1 leak)");
    run_free(&r);

    /* an overrun: it goes, the leaks of the same call stacks stay (another kind) */
    const char *gen2[] = {"--redzone=64", "--leaks", "--gen-suppressions", RZ, "leak", NULL};
    tool(&r, gen2, NULL);
    e = entry_after(r.err, "redzone overrun: alloc#3");
    HAS(e, "   atlas:overrun\n");
    write_file(file, e);
    free(e);
    run_free(&r);
    const char *again2[] = {"--redzone=64", "--leaks", opt, "--error-exitcode=4", RZ, "leak", NULL};
    tool(&r, again2, NULL);
    ck_assert_msg(r.status == 4, "exit %d\n%s", r.status, r.err);
    HASNT(r.err, "redzone overrun");
    ck_assert_int_eq(count_lines(r.err, "leaks:   alloc#"), 2);
    HAS(r.err, "redzone: 0 overruns found in 3 guarded allocations (3 checks); 1 suppressed");
    HAS(r.err, "reported 2 leaks: exit status 4");
    run_free(&r);
}
END_TEST

/* ---- the findings file -------------------------------------------------------------------- */

static void validate(const char *report)
{
    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "python3 " VALIDATOR " " SCHEMA " '%s' >&2", report);
    ck_assert_msg(system(cmd) == 0, "%s does not validate against " SCHEMA, report);
}

/* A JSON string's value at `key` in one line, unescaped (\" \\ \uXXXX below 0x80). */
static int json_str(const char *line, const char *key, char *out, size_t len)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":\"", key);
    const char *p = strstr(line, k);
    if (!p)
        return 0;
    size_t n = 0;
    for (p += strlen(k); *p && *p != '"' && n + 1 < len; p++) {
        if (*p == '\\' && p[1] == 'u') {
            out[n++] = (char)strtol((char[]){p[4], p[5], 0}, NULL, 16);
            p += 5;
        } else {
            if (*p == '\\')
                p++;
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return 1;
}

/* Headlines of findings on stderr, as the features print them. */
static int headlines(const char *err)
{
    static const char *const heads[] = {"]: redzone overrun: ",
                                        "]: redzone: write after free: ",
                                        "]: leaks:   ",
                                        "]: fault: error=",
                                        "]: debug-sync: launch failed",
                                        "]: race: alloc#",
                                        "]: step \""};
    int n = 0;
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        n += count_lines(err, heads[i]);
    return n;
}

/* Every line validates; the printed ones are stderr's findings one for one (each message is a
 * line there, and there are as many); returns the lines not suppressed, by kind in *kinds. */
static int matches_stderr(const char *report, const char *err, char *kinds, size_t klen)
{
    char *text = read_file_text(report, NULL);
    ck_assert_msg(text, "no findings file %s", report);
    if (*text) /* (a run without findings leaves it empty, which the validator refuses) */
        validate(report);
    int printed = 0, counted = 0;
    kinds[0] = '\0';
    for (char *l = text, *nl; l && *l; l = nl ? nl + 1 : NULL) {
        nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        char msg[2048], kind[64], want[2100];
        ck_assert(json_str(l, "message", msg, sizeof msg));
        ck_assert(json_str(l, "kind", kind, sizeof kind));
        if (!strstr(l, "\"suppressed\":true")) {
            counted++;
            strncat(kinds, kind, klen - strlen(kinds) - 2);
            strcat(kinds, " ");
        }
        if (strstr(l, "\"printed\":true")) {
            printed++;
            snprintf(want, sizeof want, "]: %s\n", msg);
            ck_assert_msg(strstr(err, want), "finding not on stderr: %s\n%s", msg, err);
        }
    }
    ck_assert_msg(printed == headlines(err), "%d printed findings in %s, %d on stderr:\n%s",
                  printed, report, headlines(err), err);
    free(text);
    return counted;
}

struct report_case {
    const char *name;
    const char *args[8];
    const char *kinds;    /* the kinds of the unsuppressed findings, in order */
    const char *reported; /* --error-exitcode's line, or NULL when it must not come */
};

static const struct report_case cases[] = {
    {"redzone-leaks",
     {"--redzone=64", "--leaks", RZ, "leak"},
     "overrun leak leak ",
     "reported 1 overrun, 2 leaks: exit status 3"},
    {"after-free",
     {"--redzone=64", RZ, "uaf"},
     "write-after-free ",
     "reported 1 write after free: exit status 3"},
    {"debug-sync", {"--debug-sync", SYNC, "fault"}, "fault ", "reported 1 fault: exit status 3"},
    {"sticky-fault", {SYNC, "suspects"}, "fault ", "reported 1 fault: exit status 3"},
    {"steps",
     {"--trace", "--error-on=diff", T("trace_steps"), "scalar", "4"},
     "step-diff step-diff step-diff ",
     "reported 3 differing steps: exit status 3"},
    {"race",
     {"--races", T("races_prog"), "side_copy", "raced"},
     "race ",
     "reported 1 race: exit status 3"},
    {"clean", {"--redzone=64", "--leaks", RZ, "over", "0"}, "", NULL},
};

START_TEST(report_matches_stderr)
{
    const struct report_case *c = &cases[_i];
    char file[PATH_MAX + 32], opt[PATH_MAX + 64], kinds[256];
    snprintf(file, sizeof file, "%s/%s.jsonl", tmp, c->name);
    snprintf(opt, sizeof opt, "--report=%s", file);
    const char *args[16] = {opt, "--error-exitcode=3"};
    int n = 2;
    for (int i = 0; c->args[i]; i++)
        args[n++] = c->args[i];
    args[n] = NULL;
    struct run_result r;
    tool(&r, args, NULL);
    int counted = matches_stderr(file, r.err, kinds, sizeof kinds);
    ck_assert_msg(!strcmp(kinds, c->kinds), "%s: kinds '%s', not '%s'\n%s", c->name, kinds,
                  c->kinds, r.err);
    if (c->reported) {
        HAS(r.err, c->reported);
        ck_assert_int_eq(r.status, 3);
    } else {
        HASNT(r.err, "reported");
        ck_assert_int_eq(counted, 0);
    }
    run_free(&r);
}
END_TEST

/* Suppressed findings are in the file, marked with their entry; --error-exitcode counts the
 * others only. */
START_TEST(report_marks_suppressed)
{
    char file[PATH_MAX + 32], supp[PATH_MAX + 32], opt[PATH_MAX + 64], sopt[PATH_MAX + 64];
    char kinds[256];
    snprintf(file, sizeof file, "%s/s.jsonl", tmp);
    snprintf(supp, sizeof supp, "%s/s.supp", tmp);
    write_file(supp, "{\n the small one\n atlas:leak\n}\n");
    snprintf(opt, sizeof opt, "--report=%s", file);
    snprintf(sopt, sizeof sopt, "--suppressions=%s", supp);
    const char *args[] = {opt,    sopt, "--redzone=64", "--leaks", "--error-exitcode=3", RZ,
                          "leak", NULL};
    struct run_result r;
    tool(&r, args, NULL);
    ck_assert_int_eq(matches_stderr(file, r.err, kinds, sizeof kinds), 1);
    ck_assert_str_eq(kinds, "overrun ");
    HAS(r.err, "reported 1 overrun: exit status 3");
    char *text = read_file_text(file, NULL);
    ck_assert_int_eq(count_lines(text, "\"suppressed\":true,\"suppression\":\"the small one\""), 2);
    /* frames with their file and line */
    HAS(text, "\"function\":\"rz_alloc\"");
    HAS(text, "redzone_prog.c\",\"line\":");
    free(text);
    run_free(&r);
}
END_TEST

/* atlas-diff --report: each differing step, and each step of one file only, a line of the same
 * schema, one for each on the diff's output. */
START_TEST(atlas_diff_report)
{
    char a[PATH_MAX + 32], b[PATH_MAX + 32], rep[PATH_MAX + 32], o1[PATH_MAX + 64];
    snprintf(a, sizeof a, "%s/a.jsonl", tmp);
    snprintf(b, sizeof b, "%s/b.jsonl", tmp);
    snprintf(rep, sizeof rep, "%s/diff.jsonl", tmp);
    struct run_result r;
    snprintf(o1, sizeof o1, "--json=%s", a);
    const char *ra[] = {o1, T("trace_steps"), "scalar", "3", NULL};
    tool(&r, ra, NULL);
    run_free(&r);
    snprintf(o1, sizeof o1, "--json=%s", b);
    const char *rb[] = {o1, T("trace_steps"), "scalar", "4", NULL};
    tool(&r, rb, NULL);
    run_free(&r);

    char ropt[PATH_MAX + 64];
    snprintf(ropt, sizeof ropt, "--report=%s", rep);
    char *one[] = {DIFF, ropt, a, NULL};
    run_target(&r, one, NULL, 0);
    ck_assert_int_eq(r.status, 1);
    validate(rep);
    char *text = read_file_text(rep, NULL);
    /* step 3's difference repeats step 2's: folded into one line, a finding all the same */
    ck_assert_int_eq(count_lines(text, "\"tool\":\"atlas-diff\""), 2);
    ck_assert_int_eq(count_lines(r.out, "differs from"), 1);
    ck_assert_int_eq(count_lines(r.out, "step 3 (\"cuStreamSynchronize\"): add_step arg1"), 1);
    ck_assert_int_eq(count_lines(text, "\"printed\":false"), 1);
    ck_assert_int_eq(count_lines(text, "\"kind\":\"step-diff\",\"message\":\"step \\\""
                                       "cuStreamSynchronize\\\" #"),
                     2);
    HAS(text, "\"kernel\":\"add_step\"");
    free(text);
    run_free(&r);

    char *two[] = {DIFF, "--report", rep, a, b, NULL};
    run_target(&r, two, NULL, 0);
    ck_assert_int_eq(r.status, 1);
    validate(rep);
    text = read_file_text(rep, NULL);
    /* b's 4th step is only in b */
    ck_assert_int_eq(count_lines(r.out, "is only in"), 1);
    HAS(text, "is only in");
    ck_assert_int_eq(count_lines(text, "\"printed\":true"),
                     count_lines(r.out, "differs from") + count_lines(r.out, "is only in"));
    free(text);
    run_free(&r);

    char *ranks[] = {DIFF, ropt, "--ranks", a, b, NULL};
    run_target(&r, ranks, NULL, 0);
    ck_assert_int_eq(r.status, 2);
    HAS(r.err, "--report is not written with --ranks");
    run_free(&r);
}
END_TEST

/* ---- the options, and the summary line ----------------------------------------------------- */

/* The findings' options are rows of the settings table (src/config.def): atlas-trace takes
 * them by its rules, refuses what the library could not use before anything runs (exit 2), and
 * --help lists them. --suppressions may be repeated: the files, absolute, in ATLAS_SUPPRESSIONS. */
START_TEST(findings_options_from_the_table)
{
    struct run_result r;
    const char *help[] = {"--help", NULL};
    tool(&r, help, NULL);
    ck_assert_int_eq(r.status, 0);
    HAS(r.out, "--print-limit=N");
    HAS(r.out, "--suppressions=FILE");
    HAS(r.out, "--gen-suppressions");
    HAS(r.out, "--report=FILE");
    HAS(r.out, "--symbols=0|1");
    run_free(&r);

    char a[PATH_MAX + 32], b[PATH_MAX + 32], oa[PATH_MAX + 64], ob[PATH_MAX + 64];
    snprintf(a, sizeof a, "%s/a.supp", tmp);
    snprintf(b, sizeof b, "%s/b.supp", tmp);
    write_file(a, "");
    write_file(b, "");
    snprintf(oa, sizeof oa, "--suppressions=%s", a);
    snprintf(ob, sizeof ob, "--suppressions=%s", b);
    const char *two[] = {oa, ob, "--print-limit=7", "--gen-suppressions", "/usr/bin/env", NULL};
    tool(&r, two, NULL);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    char want[3 * PATH_MAX];
    snprintf(want, sizeof want, "\nATLAS_SUPPRESSIONS=%s:%s\n", a, b);
    HAS(r.out, want);
    HAS(r.out, "\nATLAS_PRINT_LIMIT=7\n");
    HAS(r.out, "\nATLAS_GEN_SUPPRESSIONS=1\n");
    run_free(&r);

    static const struct {
        const char *arg, *says;
    } refused[] = {
        {"--suppressions=/nonexistent/x.supp", "--suppressions=/nonexistent/x.supp: No such file"},
        {"--suppressions=/tmp", "--suppressions=/tmp: a folder, not a file"},
        {"--suppressions=a:b", "--suppressions=a:b: a file name with ':' or ','"},
        {"--print-limit=many", "--print-limit=many: "},
        {"--print-limit=-1", "--print-limit=-1: "},
        {"--report=/tmp", "--report /tmp: a folder, not a file"},
        {"--symbols=2", "--symbols=2: "},
        {"--gen-suppressions=1", "--gen-suppressions=1: this option takes no value"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const char *args[] = {refused[i].arg, "/bin/true", NULL};
        tool(&r, args, NULL);
        ck_assert_msg(r.status == 2, "%s: exit %d\n%s", refused[i].arg, r.status, r.err);
        HAS(r.err, refused[i].says);
        HASNT(r.err, "summary: "); /* nothing ran */
        run_free(&r);
    }
    /* one file for two reports */
    char same[PATH_MAX + 32], o1[PATH_MAX + 64], o2[PATH_MAX + 64];
    snprintf(same, sizeof same, "%s/both.jsonl", tmp);
    snprintf(o1, sizeof o1, "--report=%s", same);
    snprintf(o2, sizeof o2, "--json=%s", same);
    const char *clash[] = {o1, o2, "/bin/true", NULL};
    tool(&r, clash, NULL);
    ck_assert_int_eq(r.status, 2);
    HAS(r.err, "name the same file");
    run_free(&r);
}
END_TEST

/* The last line of `text`, its newline included (every line of a report ends with one). */
static const char *last_line(const char *text)
{
    size_t len = strlen(text);
    ck_assert_msg(len > 1 && text[len - 1] == '\n', "no whole last line in:\n%s", text);
    const char *last = text + len - 1;
    while (last > text && last[-1] != '\n')
        last--;
    return last;
}

/* The summary line stays the run's last line with the findings options on, after the verdict,
 * the suppression entries and the suppressed count; it counts the findings not suppressed and
 * says the suppressed ones apart. */
START_TEST(summary_last_suppressed_apart)
{
    char supp[PATH_MAX + 32], sopt[PATH_MAX + 64], rep[PATH_MAX + 32], ropt[PATH_MAX + 64];
    snprintf(supp, sizeof supp, "%s/leaks.supp", tmp);
    write_file(supp, "{\n leaks are known\n atlas:leak\n}\n");
    snprintf(sopt, sizeof sopt, "--suppressions=%s", supp);
    snprintf(rep, sizeof rep, "%s/last.jsonl", tmp);
    snprintf(ropt, sizeof ropt, "--report=%s", rep);
    const char *args[] = {"--redzone=64",       "--leaks", sopt,   ropt, "--gen-suppressions",
                          "--error-exitcode=3", RZ,        "leak", NULL};
    struct run_result r;
    tool(&r, args, NULL);
    ck_assert_msg(r.status == 3, "exit %d\n%s", r.status, r.err);
    HAS(r.err, "reported 1 overrun: exit status 3");
    const char *last = last_line(r.err);
    ck_assert_msg(strstr(last, "]: summary: 1 overrun in 3 guarded allocations, ") &&
                      strstr(last, ", 0 leaks, ") && strstr(last, ", 2 findings suppressed\n"),
                  "not the summary, last:\n%s", r.err);
    run_free(&r);
}
END_TEST

/* ---- make demo ---------------------------------------------------------------------------- */

/* make demo's run, with mk/demo.mk's DEMO_OPTS as make passes them: at most 15 atlas lines,
 * the allocation named by file and line, the blocking copies in one line, the summary last. */
START_TEST(demo_is_short)
{
    char *mk = read_file_text("mk/demo.mk", NULL);
    ck_assert_ptr_nonnull(mk);
    char *opts = strstr(mk, "\nDEMO_OPTS := ");
    ck_assert_msg(opts, "no DEMO_OPTS in mk/demo.mk");
    opts += strlen("\nDEMO_OPTS := ");
    opts[strcspn(opts, "\n")] = '\0';
    const char *args[16];
    int n = 0;
    for (char *save = NULL, *w = strtok_r(opts, " ", &save); w && n < 12;
         w = strtok_r(NULL, " ", &save))
        args[n++] = w;
    args[n++] = BUILD_DIR "/examples/demo_steps";
    args[n++] = T("front_demo_kernels.so");
    args[n] = NULL;
    struct run_result r;
    tool(&r, args, NULL);
    ck_assert_int_eq(r.status, 0);
    int lines = count_lines(r.err, "atlas[");
    fprintf(stderr, "demo: %d atlas lines\n", lines);
    ck_assert_msg(lines <= 15, "%d atlas lines:\n%s", lines, r.err);
    HAS(r.err, "allocated at main (demo_steps.c:");
    HAS(r.err, "redzone: culprit: launch#9 kernel=fill");
    HAS(r.err, "trace summary: frozen value: add_pos arg1 changed in 2 steps");
    HAS(r.err, "d2h-summary: 4 blocking device-to-host copies (16 bytes), 0 hidden syncs");
    ck_assert_int_eq(count_lines(r.err, "d2h-summary"), 1);
    ck_assert_msg(strstr(last_line(r.err), "]: summary: "), "the summary is not last:\n%s", r.err);
    run_free(&r);
    free(mk);
}
END_TEST

/* The default red-zone mode says what launch mode does (names the culprit), and counts in
 * words that agree with their number. */
START_TEST(redzone_hint_and_plurals)
{
    const char *args[] = {"--redzone=64", RZ, "over", NULL};
    struct run_result r;
    tool(&r, args, NULL);
    HAS(r.err, "redzone: launch mode names the culprit (a check after each launch of these "
               "kernels names the one that wrote past the end); re-run with it: ");
    HAS(r.err, ": 1 byte corrupted at +4096..+4096\n");
    HAS(r.err, "redzone: 1 overrun found in 2 guarded allocations (4 checks)");
    run_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reports");
    TCase *tc = tcase_create("reports");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, frames_name_file_and_line);
    tcase_add_test(tc, frames_name_lines_without_libdw);
    tcase_add_test(tc, frames_survive_a_file_cut_in_place);
    tcase_add_loop_test(tc, frames_survive_bad_files, 0, 3);
    tcase_add_test(tc, leaks_grouped_by_call_stack);
    tcase_add_test(tc, print_limit);
    tcase_add_test(tc, repeated_differences_folded);
    tcase_add_test(tc, fault_launches_folded);
    tcase_add_test(tc, suppressions_silence_exactly);
    tcase_add_test(tc, suppressions_by_kernel);
    tcase_add_test(tc, suppressions_file_errors);
    tcase_add_test(tc, gen_suppressions_round_trip);
    tcase_add_loop_test(tc, report_matches_stderr, 0, sizeof cases / sizeof cases[0]);
    tcase_add_test(tc, report_marks_suppressed);
    tcase_add_test(tc, atlas_diff_report);
    tcase_add_test(tc, findings_options_from_the_table);
    tcase_add_test(tc, summary_last_suppressed_apart);
    tcase_add_test(tc, demo_is_short);
    tcase_add_test(tc, redzone_hint_and_plurals);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
