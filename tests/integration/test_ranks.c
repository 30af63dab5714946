/*
 * Many ranks (docs/ranks.md), on the fake driver:
 *  - atlas-diff --ranks on synthetic rank files (bench/ranks/gen_ranks.c):
 *    a rank that inserts an op, one whose collective has another size, one
 *    whose file stops early, each named; identical ranks exit 0; 64 ranks;
 *  - two real processes (tests/targets/ranks.c) under the preload, one
 *    taking another branch, one killed while it waits: the file of the
 *    killed one ends at its last finished step and --ranks says so;
 *  - ATLAS_HANG_SECONDS: a sync that blocks past the limit is reported
 *    once, with the call, the step and its ops.
 */
#include "run.h"

#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define T(name) BUILD_DIR "/tests/" name
#define TOOL BUILD_DIR "/atlas-diff"
#define GEN BUILD_DIR "/bench/gen_ranks"

static char tmpdir[64];
static char pattern[128]; /* tmpdir/trace.%r.jsonl */

static void tmp_setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/atlas-ranks-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(pattern, sizeof pattern, "%s/trace.%%r.jsonl", tmpdir);
}

static void tmp_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* gen_ranks tmpdir RANKS STEPS OPS what... (NULL-terminated) */
static void gen(const char *ranks, const char *steps, const char *ops, ...)
{
    char *argv[16] = {GEN, tmpdir, (char *)ranks, (char *)steps, (char *)ops};
    int n = 5;
    va_list ap;
    va_start(ap, ops);
    for (char *w; n < 15 && (w = va_arg(ap, char *));)
        argv[n++] = w;
    va_end(ap);
    argv[n] = NULL;
    struct run_result r;
    run_target(&r, argv, NULL, 0);
    ck_assert_msg(r.status == 0, "gen_ranks exited %d: %s", r.status, r.err);
    run_free(&r);
}

/* atlas-diff --ranks on the pattern (or on `files`, when given), which must exit `want`. */
static void diff_ranks(struct run_result *r, char *const files[], int want)
{
    char *argv[80] = {TOOL, "--ranks"};
    int n = 2;
    if (!files)
        argv[n++] = pattern;
    for (int i = 0; files && files[i] && n < 79; i++)
        argv[n++] = files[i];
    argv[n] = NULL;
    run_target(r, argv, NULL, 0);
    ck_assert_msg(r->status == want, "atlas-diff --ranks exited %d, not %d\n%s%s", r->status, want,
                  r->out, r->err);
}

/* The line of `text` that contains `needle`, by number (1-based; 0: none). */
static int line_of(const char *text, const char *needle)
{
    const char *at = strstr(text, needle);
    if (!at)
        return 0;
    int n = 1;
    for (const char *p = text; p < at; p++)
        n += *p == '\n';
    return n;
}

START_TEST(odd_ranks_named)
{
    gen("8", "20", "100", "insert:3:12:40", "size:6:5", "stop:5:11", NULL);
    struct run_result r;
    diff_ranks(&r, NULL, 1);
    const char *size =
        "step \"step\" #5: rank 6 differs from ranks 0-5,7: op 50 "
        "ncclDevKernel_AllReduce_Sum_f32 [launch] arg1 @0x8 (8 bytes): 0x100000 -> 0x80000";
    const char *ins = "step \"step\" #12: rank 3 differs from ranks 0-2,4,6-7 (101 ops against "
                      "100): op 40 inserted: ncclDevKernel_AllReduce_Sum_f32 grid=(32,1,1) "
                      "block=(256,1,1)";
    const char *stop = "rank 5 stopped after step 11: hung or killed\n";
    HAS(r.out, size);
    HAS(r.out, ins);
    HAS(r.out, stop);
    /* the first step where ranks part is printed first; nothing else differs */
    ck_assert_int_eq(line_of(r.out, size), 1);
    ck_assert_int_lt(line_of(r.out, ins), line_of(r.out, stop));
    ck_assert_int_eq(count_lines(r.out, "differs from"), 2);
    HAS(r.out, "ranks summary: 8 ranks (0..7), 20 steps aligned, 2 where ranks differ, 3 findings");
    run_free(&r);
}
END_TEST

START_TEST(identical_ranks_agree)
{
    /* each rank has its own addresses and streams: pointers compare by
     * allocation, streams not at all */
    gen("8", "30", "50", NULL);
    struct run_result r;
    diff_ranks(&r, NULL, 0);
    ck_assert_str_eq(r.out, "ranks summary: 8 ranks (0..7), 30 steps aligned, 0 where ranks "
                            "differ, 0 findings\n");
    run_free(&r);
}
END_TEST

START_TEST(sixty_four_ranks)
{
    gen("64", "40", "100", "insert:17:33:7", NULL);
    struct run_result r;
    diff_ranks(&r, NULL, 1);
    HAS(r.out, "step \"step\" #33: rank 17 differs from ranks 0-16,18-63 (101 ops against 100): "
               "op 7 inserted: ncclDevKernel_AllReduce_Sum_f32");
    ck_assert_int_eq(count_lines(r.out, "differs from"), 1);
    run_free(&r);
    /* and all 64 the same */
    gen("64", "40", "100", NULL);
    diff_ranks(&r, NULL, 0);
    run_free(&r);
}
END_TEST

START_TEST(killed_while_writing)
{
    /* half a line of step 8 at the end: the file of a rank killed while its
     * step end was writing */
    gen("4", "10", "20", "cut:2:7", NULL);
    struct run_result r;
    diff_ranks(&r, NULL, 1);
    HAS(r.out, "rank 2 stopped after step 7: hung or killed; its file ends inside step 8\n");
    ck_assert_int_eq(count_lines(r.out, "differs from"), 0);
    run_free(&r);
}
END_TEST

/* Steps are aligned by name and occurrence: a step of another name on a
 * few ranks is said as such, and the "step" steps around it still pair. */
START_TEST(extra_step_on_some_ranks)
{
    gen("4", "10", "20", "extra:2:4", NULL);
    struct run_result r;
    diff_ranks(&r, NULL, 1);
    ck_assert_str_eq(r.out, "step \"extra\" #1 is only in rank 2 (not in ranks 0-1,3)\n"
                            "ranks summary: 4 ranks (0..3), 11 steps aligned, 1 where ranks "
                            "differ, 1 finding\n");
    run_free(&r);
    gen("4", "10", "20", "extra:0:4", "extra:1:4", "extra:3:4", NULL);
    diff_ranks(&r, NULL, 1);
    HAS(r.out, "step \"extra\" #1 is missing in rank 2 (ranks 0-1,3 have it)\n");
    ck_assert_int_eq(count_lines(r.out, "step \""), 1);
    run_free(&r);
}
END_TEST

/* Hand-written files: a step name longer than the 63 bytes kept for the
 * report, and a memset whose address differs between the ranks (raw
 * addresses are not compared) while its count differs on rank 1. */
START_TEST(long_names_and_memsets)
{
    static const char name[] =
        "a_step_name_longer_than_the_sixty_three_bytes_that_the_report_keeps";
    for (int rank = 0; rank < 2; rank++) {
        char path[160];
        snprintf(path, sizeof path, "%s/trace.%d.jsonl", tmpdir, rank);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f,
                "{\"step\":1,\"name\":\"%s\",\"op\":0,\"stream\":\"0x%x\",\"kind\":"
                "\"memset\",\"ptr\":\"0x%x\",\"value\":0,\"elem\":4,\"count\":%d,"
                "\"pitch\":0,\"height\":0}\n"
                "{\"step\":1,\"name\":\"%s\",\"end\":true,\"ops\":1}\n",
                name, 0x100 + rank, 0x7000 + 0x100 * rank, rank ? 32 : 64, name);
        fclose(f);
    }
    struct run_result r;
    diff_ranks(&r, NULL, 1);
    ck_assert_str_eq(r.out,
                     "step \"a_step_name_longer_than_the_sixty_three_bytes_that_the_report_k\" "
                     "#1: rank 1 differs from rank 0: op 0 [memset] count: 64 -> 32 "
                     "(delta -32)\n"
                     "ranks summary: 2 ranks (0..1), 1 steps aligned, 1 where ranks differ, "
                     "1 finding\n");
    run_free(&r);
}
END_TEST

START_TEST(files_in_rank_order)
{
    gen("3", "5", "10", "size:0:2", NULL);
    char f[3][160];
    char *files[4];
    /* given as rank 0 = trace.2, rank 1 = trace.0, rank 2 = trace.1 */
    for (int i = 0; i < 3; i++) {
        snprintf(f[i], sizeof f[i], "%s/trace.%d.jsonl", tmpdir, (i + 2) % 3);
        files[i] = f[i];
    }
    files[3] = NULL;
    struct run_result r;
    diff_ranks(&r, files, 1);
    HAS(r.out, "step \"step\" #2: rank 1 differs from ranks 0,2: op 5");
    run_free(&r);
}
END_TEST

START_TEST(missing_rank_file)
{
    gen("4", "3", "5", NULL);
    char path[160];
    snprintf(path, sizeof path, "%s/trace.2.jsonl", tmpdir);
    ck_assert_int_eq(unlink(path), 0);
    struct run_result r;
    diff_ranks(&r, NULL, 1);
    HAS(r.out, "rank 2 has no file: it never started tracing");
    HAS(r.out, "ranks summary: 3 ranks (0..3)");
    run_free(&r);
}
END_TEST

START_TEST(refusals)
{
    struct run_result r;
    gen("1", "3", "5", NULL);
    diff_ranks(&r, NULL, 2);
    HAS(r.err, "1 rank file matches the pattern; --ranks compares two or more");
    run_free(&r);
    char *one[] = {pattern + 0, NULL};
    char single[160];
    snprintf(single, sizeof single, "%s/trace.0.jsonl", tmpdir);
    one[0] = single;
    diff_ranks(&r, one, 2);
    HAS(r.err, "--ranks takes a pattern with %r (trace.%r.jsonl) or two files or more");
    run_free(&r);
    /* a file that is not a trace: said with its line, exit 2 */
    gen("2", "3", "5", NULL);
    snprintf(single, sizeof single, "%s/trace.1.jsonl", tmpdir);
    FILE *f = fopen(single, "w");
    fputs("hello\n", f);
    fclose(f);
    diff_ranks(&r, NULL, 2);
    HAS(r.err, "trace.1.jsonl: line 1: not a step record as ATLAS_TRACE_FILE writes it");
    run_free(&r);
}
END_TEST

/* ---- hostile input (issue #28) ---------------------------------------------------- */

/* A command under `ulimit -v` (about 1 GB) and `timeout`: what was read for
 * ever, or allocated per missing rank, ends, and is said. */
static void bounded(struct run_result *r, const char *cmd)
{
    char sh[2048];
    snprintf(sh, sizeof sh, "ulimit -v 1000000; exec timeout 60 %s", cmd);
    char *argv[] = {"/bin/sh", "-c", sh, NULL};
    run_target(r, argv, NULL, 0);
}

/* One stray high-numbered file beside the ranks: the ranks between are one
 * finding, a range (one finding per missing rank took 18 GB in 60 s). */
START_TEST(stray_rank_file_one_range)
{
    gen("2", "3", "5", NULL);
    char from[160], to[160], cmd[512];
    snprintf(from, sizeof from, "%s/trace.1.jsonl", tmpdir);
    snprintf(to, sizeof to, "%s/trace.100000000.jsonl", tmpdir);
    ck_assert_int_eq(link(from, to), 0);
    snprintf(cmd, sizeof cmd, "%s --ranks '%s'", TOOL, pattern);
    struct run_result r;
    bounded(&r, cmd);
    ck_assert_msg(r.status == 1, "exit %d\n%s%s", r.status, r.out, r.err);
    ck_assert_str_eq(r.out, "ranks 2-99999999 have no file: they never started tracing (or "
                            "their files were removed)\n"
                            "ranks summary: 3 ranks (0..100000000), 3 steps aligned, 0 where "
                            "ranks differ, 1 finding\n");
    run_free(&r);
}
END_TEST

/* Findings are kept up to 1,000, the first by step, and the rest counted:
 * 1,500 ranks, every other one missing. */
START_TEST(findings_capped)
{
    gen("1", "3", "5", NULL);
    char from[160], to[160], cmd[512];
    snprintf(from, sizeof from, "%s/trace.0.jsonl", tmpdir);
    for (int i = 2; i <= 3000; i += 2) {
        snprintf(to, sizeof to, "%s/trace.%d.jsonl", tmpdir, i);
        ck_assert_int_eq(link(from, to), 0);
    }
    snprintf(cmd, sizeof cmd, "%s --ranks '%s'", TOOL, pattern);
    struct run_result r;
    bounded(&r, cmd);
    ck_assert_msg(r.status == 1, "exit %d\n%.2000s", r.status, r.err);
    ck_assert_int_eq(count_lines(r.out, " has no file"), 1000);
    HAS(r.out, "rank 1 has no file");
    HAS(r.out, "\n... and 500 later findings (the first 1000 by step are listed)\n");
    HAS(r.out, "ranks summary: 1501 ranks (0..3000), 3 steps aligned, 0 where ranks differ, "
               "1500 findings\n");
    run_free(&r);
}
END_TEST

/* What is not a regular file is refused at once: /dev/zero (read until the
 * kernel killed atlas-diff), a FIFO as a rank file or a run (the open
 * blocked for ever); a line past 64 MiB on the standard input ends the
 * read. */
START_TEST(not_a_trace_file_refused)
{
    gen("2", "3", "5", NULL);
    char fifo[160], zero_cmd[512], fifo_cmd[512], two_cmd[512], in_cmd[512];
    snprintf(fifo, sizeof fifo, "%s/trace.2.jsonl", tmpdir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    snprintf(zero_cmd, sizeof zero_cmd, "%s /dev/zero %s/trace.0.jsonl", TOOL, tmpdir);
    snprintf(fifo_cmd, sizeof fifo_cmd, "%s --ranks '%s'", TOOL, pattern);
    snprintf(two_cmd, sizeof two_cmd, "%s %s/trace.0.jsonl %s", TOOL, tmpdir, fifo);
    snprintf(in_cmd, sizeof in_cmd, "%s - %s/trace.0.jsonl < /dev/zero", TOOL, tmpdir);
    const char *cmds[] = {zero_cmd, fifo_cmd, two_cmd, in_cmd};
    const char *said[] = {"/dev/zero: not a regular file", "trace.2.jsonl: not a regular file",
                          "trace.2.jsonl: not a regular file",
                          "-: line 1: longer than 64 MiB: not a trace file"};
    for (int i = 0; i < 4; i++) {
        struct run_result r;
        bounded(&r, cmds[i]);
        ck_assert_msg(r.status == 2, "%s: exit %d\n%s", cmds[i], r.status, r.err);
        HAS(r.err, said[i]);
        run_free(&r);
    }
}
END_TEST

/* No finding at all: nothing sorted (qsort of a NULL array is undefined
 * behaviour), in atlas-diff built with UndefinedBehaviorSanitizer. */
START_TEST(no_findings_clean_under_ubsan)
{
    gen("3", "4", "6", NULL);
    char *argv[] = {BUILD_DIR "/tests/atlas-diff-ubsan", "--ranks", pattern, NULL};
    const char *const env[] = {"UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=66",
                               NULL};
    struct run_result r;
    run_target(&r, argv, env, 0);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    HASNT(r.err, "runtime error");
    run_free(&r);
}
END_TEST

/* ---- real processes under the preload -------------------------------------------- */

static void run_rank(const char *how, int rank, const char *const more[])
{
    char setting[256], rk[16];
    snprintf(setting, sizeof setting, "ATLAS_TRACE_FILE=%s", pattern);
    snprintf(rk, sizeof rk, "RANK=%d", rank);
    const char *env[8] = {"ATLAS_TRACE=1", setting, rk};
    for (int i = 0; more && more[i] && i < 4; i++)
        env[3 + i] = more[i];
    char *argv[] = {T("ranks"), (char *)how, NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "ranks exited %d\n%s", r.status, r.err);
    run_free(&r);
}

START_TEST(two_processes_one_branches)
{
    run_rank("diverge", 0, NULL);
    run_rank("diverge", 1, NULL);
    struct run_result r;
    diff_ranks(&r, NULL, 1);
    ck_assert_str_eq(r.out, "step \"cuStreamSynchronize\" #2: rank 1 differs from rank 0 (3 ops "
                            "against 2): op 1 inserted: scale(float*, int) grid=(1,1,1) "
                            "block=(32,1,1) shmem=0\n"
                            "ranks summary: 2 ranks (0..1), 4 steps aligned, 1 where ranks "
                            "differ, 1 finding\n");
    run_free(&r);
    run_rank("same", 1, NULL);
    diff_ranks(&r, NULL, 0);
    run_free(&r);
}
END_TEST

/* SIGTERM (what torchrun and Slurm send) to a rank waiting for ever: its
 * file holds every step that ended, whole, with no handler of ours. */
START_TEST(killed_rank_file_complete)
{
    run_rank("same", 0, NULL);
    char setting[256], lib[4096], fake[4096], path[256];
    snprintf(setting, sizeof setting, "ATLAS_TRACE_FILE=%s", pattern);
    snprintf(path, sizeof path, "%s/trace.1.jsonl", tmpdir);
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/libatlastrace.so", lib));
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/fake", fake));
    pid_t pid = fork();
    if (pid == 0) {
        putenv(setting);
        setenv("ATLAS_TRACE", "1", 1);
        setenv("RANK", "1", 1);
        setenv("LD_PRELOAD", lib, 1);
        setenv("LD_LIBRARY_PATH", fake, 1);
        setenv("ATLAS_LOG", "/dev/null", 1);
        execl(T("ranks"), T("ranks"), "hang", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_gt(pid, 0);
    int ends = 0;
    for (int tries = 0; tries < 1000 && ends < 2; tries++) { /* up to 10 s */
        usleep(10000);
        FILE *f = fopen(path, "r");
        char line[4096];
        for (ends = 0; f && fgets(line, sizeof line, f);)
            ends += strstr(line, "\"end\":true") != NULL;
        if (f)
            fclose(f);
    }
    ck_assert_int_eq(ends, 2);
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    struct run_result r;
    diff_ranks(&r, NULL, 1);
    ck_assert_str_eq(r.out, "rank 1 stopped after step 2: hung or killed\n"
                            "ranks summary: 2 ranks (0..1), 4 steps aligned, 0 where ranks "
                            "differ, 1 finding\n");
    run_free(&r);
}
END_TEST

/* ---- the hang report ------------------------------------------------------------------ */

static void hang_run(struct run_result *r, const char *seconds, const char *sleep_ms)
{
    char s[64], ms[64];
    snprintf(s, sizeof s, "ATLAS_HANG_SECONDS=%s", seconds ? seconds : "");
    snprintf(ms, sizeof ms, "FAKE_SYNC_SLEEP_MS=%s", sleep_ms);
    const char *env[] = {"ATLAS_TRACE=1", s, ms, "FAKE_SYNC_SLEEP_AT=2", NULL};
    char *argv[] = {T("ranks"), "same", NULL};
    run_target(r, argv, seconds ? env : env + 1, 1);
    ck_assert_msg(r->status == 0, "ranks exited %d\n%s", r->status, r->err);
}

START_TEST(hang_reported_once)
{
    struct run_result r;
    /* the second cuStreamSynchronize waits 2.6 s against a limit of 1 */
    hang_run(&r, "1", "2600");
    ck_assert_int_eq(count_lines(r.log, " has waited "), 1);
    HAS(r.log, "hang: the main thread has waited more than 1 s in cuStreamSynchronize "
               "(ATLAS_HANG_SECONDS)");
    HAS(r.log, "hang: steps finished: 1; the step under way (step 2) has enqueued 2 ops; "
               "the last of them:");
    HAS(r.log, "hang:   op 0: fill(float*) grid=(1,1,1) block=(32,1,1)");
    HAS(r.log, "hang:   op 1: add_step(float*, int) grid=(4,1,1) block=(32,1,1)");
    /* the flight recorder's suspects: the launches the stuck sync waits for */
    HAS(r.log, "hang: 2 suspect launches since the program started");
    HAS(r.log, "hang:   rare suspect x1, newest: launch=4 kernel=add_step(float*, int) grid=(4,1,1)");
    HAS(r.out, "ok rank=0");
    run_free(&r);
}
END_TEST

/* loss.item(): a synchronous copy to the host waits like a sync. Without
 * ATLAS_TRACE, which would take such copies off the hooks' light path by
 * itself: the watch must, to see them before they block. */
START_TEST(hang_in_blocking_copy)
{
    /* launches not recorded: their count only */
    const char *env[] = {"ATLAS_HANG_SECONDS=1", "FAKE_SYNC_SLEEP_MS=2600", "FAKE_SYNC_SLEEP_AT=2",
                         "ATLAS_LAUNCH_RING=0", NULL};
    char *argv[] = {T("ranks"), "loss", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "ranks exited %d\n%s", r.status, r.err);
    ck_assert_int_eq(count_lines(r.log, " has waited "), 1);
    HAS(r.log, "hang: the main thread has waited more than 1 s in cuMemcpyDtoH_v2 "
               "(ATLAS_HANG_SECONDS)");
    HAS(r.log, "hang: launches are not recorded (ATLAS_LAUNCH_RING=0): no list of them");
    HASNT(r.log, "steps finished"); /* no step trace: no steps */
    run_free(&r);
}
END_TEST

START_TEST(no_hang_report_below_limit_or_off)
{
    struct run_result r;
    hang_run(&r, "3", "1200");
    HASNT(r.log, "hang:");
    run_free(&r);
    hang_run(&r, NULL, "1200");
    HASNT(r.log, "hang:");
    run_free(&r);
    hang_run(&r, "-1", "10");
    HAS(r.log, "ignoring ATLAS_HANG_SECONDS='-1'");
    run_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ranks");
    TCase *tc = tcase_create("ranks");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, odd_ranks_named);
    tcase_add_test(tc, identical_ranks_agree);
    tcase_add_test(tc, sixty_four_ranks);
    tcase_add_test(tc, killed_while_writing);
    tcase_add_test(tc, extra_step_on_some_ranks);
    tcase_add_test(tc, long_names_and_memsets);
    tcase_add_test(tc, files_in_rank_order);
    tcase_add_test(tc, missing_rank_file);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, stray_rank_file_one_range);
    tcase_add_test(tc, findings_capped);
    tcase_add_test(tc, not_a_trace_file_refused);
    tcase_add_test(tc, no_findings_clean_under_ubsan);
    tcase_add_test(tc, two_processes_one_branches);
    tcase_add_test(tc, killed_rank_file_complete);
    tcase_add_test(tc, hang_reported_once);
    tcase_add_test(tc, hang_in_blocking_copy);
    tcase_add_test(tc, no_hang_report_below_limit_or_off);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
