/*
 * Output files and the log under hostile conditions: a FIFO or a file of
 * another user named as an output, a name too long, a full device, stderr a
 * broken pipe, a forked or exec'd child beside the trace file, control bytes
 * in kernel names, a Chrome trace that would grow without end. Each test
 * runs a target under the preload and checks that the program is unharmed
 * (status and output as native) and that what the user reads is whole and
 * says what happened, once.
 *
 * The settings that name a file come from ATL_FILE_VARS, as in
 * test_reliability.c ("VAR" or "VAR:OTHER=1,..."; mk/reliability.mk).
 */
#define _GNU_SOURCE
#include "../integration/run.h"
#include "file_vars.h"
#include "tracediff.h"
#include "tracejson.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define T(name) BUILD_DIR "/tests/" name

/* Lines of stderr and the log together that hold `needle`. */
static int said(const struct run_result *r, const char *needle)
{
    return count_lines(r->err, needle) + (r->log ? count_lines(r->log, needle) : 0);
}

/* ---- which files are opened --------------------------------------------------- */

static void expect_refused(const struct run_result *r, const char *native_out,
                           const struct file_var *v, const char *why)
{
    char want[160];
    snprintf(want, sizeof want, "cannot open %.63s file '", v->name);
    ck_assert_msg(r->status == 0, "%s: exit %d; stderr:\n%s", v->name, r->status, r->err);
    ck_assert_msg(strcmp(r->out, native_out) == 0, "%s: output changed:\n%s", v->name, r->out);
    ck_assert_msg(said(r, want) == 1 && said(r, why) == 1,
                  "%s: want one '%s...%s' line; stderr:\n%s\nlog:\n%s", v->name, want, why, r->err,
                  r->log ? r->log : "");
    if (strcmp(v->name, "ATLAS_LOG") == 0)
        ck_assert_int_eq(count_lines(r->err, "stats: total intercepted calls="), 1);
}

START_TEST(fifo_refused_without_blocking)
{
    struct file_var fv[8];
    int nv = file_vars(fv, 8);
    char *argv[] = {T("tp_linked"), NULL};
    struct run_result native;
    run_target(&native, argv, NULL, 0);
    /* a hang fails the run instead of the suite: the open once blocked */
    setenv("ATL_TEST_TIMEOUT", "20", 1);
    for (int i = 0; i < nv; i++) {
        for (int reader = 0; reader < 2; reader++) {
            char dir[] = "/tmp/atlas-out-XXXXXX";
            ck_assert_ptr_nonnull(mkdtemp(dir));
            char fifo[128];
            snprintf(fifo, sizeof fifo, "%s/fifo", dir);
            ck_assert_int_eq(mkfifo(fifo, 0600), 0);
            /* with a reader the open succeeds and the type check refuses */
            int rfd = reader ? open(fifo, O_RDONLY | O_NONBLOCK) : -1;
            struct run_result r;
            run_with_file(&r, &fv[i], fifo);
            if (rfd >= 0)
                close(rfd);
            unlink(fifo);
            rmdir(dir);
            expect_refused(&r, native.out, &fv[i], "not a regular file");
            run_free(&r);
        }
    }
    unsetenv("ATL_TEST_TIMEOUT");
    run_free(&native);
}
END_TEST

START_TEST(foreign_file_refused)
{
    if (geteuid() != 0) {
        /* only root can make a file owned by someone else */
        fprintf(stderr, "foreign_file_refused: not root; the case needs root and was not run\n");
        return;
    }
    struct file_var fv[8];
    int nv = file_vars(fv, 8);
    char *argv[] = {T("tp_linked"), NULL};
    struct run_result native;
    run_target(&native, argv, NULL, 0);
    for (int i = 0; i < nv; i++) {
        char dir[] = "/tmp/atlas-out-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char path[128];
        snprintf(path, sizeof path, "%s/theirs", dir);
        FILE *f = fopen(path, "w");
        fputs("precious\n", f);
        fclose(f);
        ck_assert_int_eq(chmod(path, 0666), 0);
        ck_assert_int_eq(chown(path, 65534, 65534), 0);
        struct run_result r;
        run_with_file(&r, &fv[i], path);
        size_t len;
        char *text = read_file_text(path, &len);
        unlink(path);
        rmdir(dir);
        ck_assert_msg(text && strcmp(text, "precious\n") == 0, "%s: the file was written: %s",
                      fv[i].name, text ? text : "(gone)");
        free(text);
        expect_refused(&r, native.out, &fv[i], "owned by uid 65534");
        run_free(&r);
    }
    run_free(&native);
}
END_TEST

/* A pattern whose expansion does not fit a path: never a shorter name. */
START_TEST(long_name_refused)
{
    struct file_var fv[8];
    int nv = file_vars(fv, 8);
    char *argv[] = {T("tp_linked"), NULL};
    struct run_result native;
    run_target(&native, argv, NULL, 0);
    for (int i = 0; i < nv; i++) {
        char dir[] = "/tmp/atlas-out-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        /* slashes repeat freely in a path; the name at the end is cut
         * inside its first 100 bytes when the whole is cut at 4,095 */
        char pattern[4200];
        int n = snprintf(pattern, sizeof pattern, "%s", dir);
        while (n < 4124 - 140)
            pattern[n++] = '/';
        for (int k = 0; k < 130; k++)
            pattern[n++] = 'a';
        snprintf(pattern + n, sizeof pattern - (size_t)n, "-%%p.log");
        struct run_result r;
        run_with_file(&r, &fv[i], pattern);
        char cmd[200];
        snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
        FILE *p = popen(cmd, "r");
        int files = -1;
        ck_assert_int_eq(fscanf(p, "%d", &files), 1);
        pclose(p);
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_msg(files == 0, "%s: a file with a shortened name was written", fv[i].name);
        expect_refused(&r, native.out, &fv[i], "the name is longer than 4095 bytes");
        run_free(&r);
    }
    run_free(&native);
}
END_TEST

/* ---- what is written ------------------------------------------------------------ */

START_TEST(write_error_said_once)
{
    struct file_var fv[8];
    int nv = file_vars(fv, 8);
    for (int i = 0; i < nv; i++) {
        struct run_result r;
        run_with_file(&r, &fv[i], "/dev/full");
        char want[200];
        snprintf(want, sizeof want,
                 "writing %.63s file '/dev/full' failed: No space left on device", fv[i].name);
        ck_assert_msg(r.status == 0, "%s: exit %d", fv[i].name, r.status);
        ck_assert_msg(said(&r, want) == 1, "%s: want one '%s' line; stderr:\n%s\nlog:\n%s",
                      fv[i].name, want, r.err, r.log);
        /* the log's lines go on, on stderr */
        if (strcmp(fv[i].name, "ATLAS_LOG") == 0)
            ck_assert_int_eq(count_lines(r.err, "stats: total intercepted calls="), 1);
        run_free(&r);
    }
}
END_TEST

/* Runs `argv` with the preload, stdout to a file, stderr into a pipe whose
 * reader is already gone. Returns the exit status (128+signal) and the
 * program's stdout in *out. */
static int run_broken_stderr(char *const argv[], const char *const env[], char **out)
{
    char path[] = "/tmp/atlas-out-XXXXXX";
    int o = mkstemp(path);
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    close(p[0]);
    pid_t pid = fork();
    if (pid == 0) {
        run_child_env(env, "");
        /* as a shell leaves it: SIGPIPE at its default, killing */
        signal(SIGPIPE, SIG_DFL);
        dup2(o, 1);
        dup2(p[1], 2);
        alarm(60);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    int st = 0;
    waitpid(pid, &st, 0);
    *out = read_file_text(path, NULL);
    close(o);
    unlink(path);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

START_TEST(broken_stderr_no_sigpipe)
{
    char *argv[] = {T("tp_linked"), NULL};
    /* the report at exit, and the same through ATLAS_LOG=/dev/stderr */
    const char *envs[2][3] = {{"ATLAS_STATS=1", NULL},
                              {"ATLAS_STATS=1", "ATLAS_LOG=/dev/stderr", NULL}};
    for (int k = 0; k < 2; k++) {
        char *out;
        int st = run_broken_stderr(argv, envs[k], &out);
        ck_assert_msg(st == 0, "run %d: exit %d (141: killed by SIGPIPE); stdout:\n%s", k, st, out);
        ck_assert_msg(strstr(out, "ok\n") != NULL, "run %d: no ok:\n%s", k, out);
        free(out);
    }
}
END_TEST

/* Every line of a JSON-lines trace whole (the header first, then kernel
 * declarations, ops and step ends), and (step, op) strictly rising:
 * a child's flush of an inherited buffer repeats or tears lines. Returns
 * the number of op lines. */
static int check_trace_lines(const char *text, const char *what)
{
    long long last_step = 0, last_op = -1;
    int lines = 0;
    /* each line is read from a copy: sscanf and strstr on the rest of the
     * text would scan all of it for every line (quadratic: a fast writer
     * under load made this check run past the test's timeout) */
    char one[4096];
    for (const char *l = text; *l;) {
        const char *end = strchr(l, '\n');
        ck_assert_msg(end != NULL, "%s: a torn last line: %.200s", what, l);
        size_t n = (size_t)(end - l) < sizeof one - 1 ? (size_t)(end - l) : sizeof one - 1;
        memcpy(one, l, n);
        one[n] = '\0';
        long long stp, op;
        if (l == text) { /* the header, first and once */
            ck_assert_msg(!strcmp(one, "{\"format\":\"atlastrace-steps\",\"version\":2}"),
                          "%s: no header: %.200s", what, one);
            l = end + 1;
            continue;
        }
        ck_assert_msg(
            (sscanf(one, "{\"step\":%lld,", &stp) == 1 || sscanf(one, "{\"s\":%lld,", &stp) == 1) &&
                end[-1] == '}',
            "%s: line %d is not one op: %.200s", what, lines + 1, one);
        if (strncmp(one, "{\"s\":", 5) == 0 && !strstr(one, ",\"o\":")) {
            /* a kernel's declaration, inside its step */
            ck_assert_msg(stp >= last_step && strstr(one, ",\"kernel\":"),
                          "%s: not a declaration: %.200s", what, one);
            l = end + 1;
            continue;
        }
        const char *e = strstr(one, ",\"end\":true,\"ops\":");
        if (e) { /* the step's closing line: all its ops came */
            ck_assert_msg(stp == last_step && atoll(e + 18) == last_op + 1,
                          "%s: step %lld closed after op %lld: %.200s", what, stp, last_op, one);
            l = end + 1;
            continue;
        }
        const char *o = strstr(one, ",\"o\":");
        ck_assert_msg(o && sscanf(o, ",\"o\":%lld", &op) == 1, "%s: no op", what);
        ck_assert_msg(stp > last_step || (stp == last_step && op == last_op + 1),
                      "%s: line %d out of order (step %lld op %lld after step %lld op %lld)", what,
                      lines + 1, stp, op, last_step, last_op);
        last_step = stp, last_op = op;
        lines++;
        l = end + 1;
    }
    return lines;
}

/* Runs rel_output `mode` `arg` under the preload with `setting` naming a
 * file in a fresh directory, plus `env` (at most 6). Returns the file's text
 * (its length in *len) and removes it: NULL when it was not written. */
static char *run_writing(struct run_result *r, const char *mode, const char *arg,
                         const char *setting, const char *const *env, size_t *len)
{
    char dir[] = "/tmp/atlas-out-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128], kv[200];
    snprintf(path, sizeof path, "%s/out", dir);
    snprintf(kv, sizeof kv, "%s=%s", setting, path);
    const char *all[8] = {kv};
    for (int i = 0; env && env[i] && i < 6; i++)
        all[i + 1] = env[i];
    char *argv[] = {T("rel_output"), (char *)mode, (char *)arg, NULL};
    run_target(r, argv, all, 1);
    char *text = read_file_text(path, len);
    unlink(path);
    rmdir(dir);
    ck_assert_msg(r->status == 0, "%s: exit %d; stderr:\n%s", mode, r->status, r->err);
    return text;
}

START_TEST(fork_keeps_trace_whole)
{
    /* LeakSanitizer in a child forked from a threaded process cannot see
     * the other thread's stack, and reports what only it held (as in
     * test_reliability's fork_in_hook): leaks are checked by the other tests */
    const char *env[] = {"ATLAS_TRACE=1", "ATLAS_DIFF_MAX=0",
                         "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=66", NULL};
    for (int round = 0; round < 3; round++) {
        struct run_result r;
        char *text = run_writing(&r, "fork", "40", "ATLAS_TRACE_FILE", env, NULL);
        ck_assert(text != NULL);
        ck_assert_int_gt(check_trace_lines(text, "fork"), 0);
        free(text);
        run_free(&r);
    }
}
END_TEST

static int count_step(void *ctx, struct atl_step *s)
{
    ++*(int *)ctx;
    atl_step_free(s);
    return 0;
}

/* A program killed mid-step: its trace is read up to its last whole step,
 * and what was cut off is said. atlastrace writes whole lines only (stdio
 * flushed its buffer wherever it was full, so before, nearly every killed
 * run left a torn line); a write the kernel cuts as the process dies can
 * still tear one, rarely, which the reader skips. */
START_TEST(killed_run_readable)
{
    const char *ms[] = {"40", "70", "100", "130"};
    int torn = 0;
    for (int k = 0; k < 4; k++) {
        char dir[] = "/tmp/atlas-out-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char path[128], kv[200];
        snprintf(path, sizeof path, "%s/out", dir);
        snprintf(kv, sizeof kv, "ATLAS_TRACE_FILE=%s", path);
        const char *env[] = {kv, "ATLAS_DIFF_MAX=0", NULL};
        char *argv[] = {T("rel_output"), "killed", (char *)ms[k], NULL};
        struct run_result r;
        run_target(&r, argv, env, 1);
        ck_assert_msg(r.status == 128 + 9, "not killed: status %d", r.status);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        char err[256];
        int steps = 0;
        int rc = atl_trace_read(f, count_step, &steps, err, sizeof err);
        fclose(f);
        unlink(path);
        rmdir(dir);
        ck_assert_msg(rc == 0 && steps > 0, "after %s ms: %s", ms[k], err);
        torn += strstr(err, "the last line is incomplete") != NULL;
        run_free(&r);
    }
    fprintf(stderr, "killed_run_readable: %d of 4 killed runs ended in a torn line\n", torn);
}
END_TEST

START_TEST(exec_child_keeps_parent_trace)
{
    const char *env[] = {"ATLAS_TRACE=1", NULL};
    struct run_result r;
    char *text = run_writing(&r, "exec", NULL, "ATLAS_TRACE_FILE", env, NULL);
    ck_assert(text != NULL);
    /* the parent's two steps of 20 launches, whole; the child refused */
    ck_assert_int_eq(check_trace_lines(text, "exec"), 40);
    ck_assert_int_eq(said(&r, "cannot open ATLAS_TRACE_FILE file"), 1);
    ck_assert_int_eq(said(&r, "another process is writing it (put %p in the name"), 1);
    free(text);
    run_free(&r);
}
END_TEST

/* Reports are lines: a kernel name with a newline or an escape sequence
 * never starts a line of its own or reaches the terminal raw. */
START_TEST(control_bytes_in_names_escaped)
{
    const char *env[] = {"ATLAS_LOG", "ATLAS_KERNEL_AUDIT=1", "ATLAS_TRACE=1", NULL};
    struct run_result r;
    char *text = run_writing(&r, "names", NULL, "ATLAS_TRACE_FILE", env, NULL);
    ck_assert_msg(count_lines(r.err, "bad?name?[31m") >= 1, "name not shown:\n%s", r.err);
    ck_assert_msg(count_lines(r.err, "") == count_lines(r.err, "atlas["), "stray lines:\n%s",
                  r.err);
    ck_assert_msg(strchr(r.err, '\x1b') == NULL, "a raw escape byte on stderr");
    ck_assert(text != NULL);
    ck_assert_int_eq(check_trace_lines(text, "names"), 2);
    free(text);
    run_free(&r);
}
END_TEST

START_TEST(alloc_failures_rate_limited)
{
    const char *env[] = {"ATLAS_LEAKS=1", NULL};
    char *argv[] = {T("rel_output"), "allocfail", "40", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d; stderr:\n%s", r.status, r.err);
    /* every failure has its line; the live list only the first three */
    ck_assert_int_eq(count_lines(r.log, "alloc failed: alloc#"), 40);
    ck_assert_int_eq(count_lines(r.log, "largest live: alloc#"), 3 * 5);
    ck_assert_int_eq(count_lines(r.log, "listed for the first 3 failures only"), 1);
    run_free(&r);
}
END_TEST

START_TEST(chrome_trace_capped)
{
    const char *env[] = {"ATLAS_CHROME_MAX_MB=1", NULL};
    size_t len = 0;
    struct run_result r;
    /* about 5.7 MB of events uncapped */
    char *text = run_writing(&r, "steps", "600", "ATLAS_CHROME_TRACE", env, &len);
    ck_assert(text != NULL);
    ck_assert_msg(len > 900000 && len < 1100000, "%zu bytes under a 1 MiB cap", len);
    ck_assert_int_eq(said(&r, "Chrome trace: ATLAS_CHROME_MAX_MB=1 reached at step"), 1);
    ck_assert_msg(len > 3 && strcmp(text + len - 3, "\n]\n") == 0, "the array is not closed");
    free(text);
    run_free(&r);
}
END_TEST

/* ATLAS_TRACE_FILE alone records, as ATLAS_CHROME_TRACE alone does. */
START_TEST(trace_file_alone_records)
{
    struct run_result r;
    char *text = run_writing(&r, "steps", "2", "ATLAS_TRACE_FILE", NULL, NULL);
    ck_assert(text != NULL);
    ck_assert_int_eq(check_trace_lines(text, "alone"), 100);
    free(text);
    run_free(&r);
}
END_TEST

/* A rank variable that is not a number is said once, however many names
 * use %r. */
START_TEST(bad_rank_said_once)
{
    char dir[] = "/tmp/atlas-out-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char t[160], c[160], cmd[200];
    snprintf(t, sizeof t, "ATLAS_TRACE_FILE=%s/t-%%r.jsonl", dir);
    snprintf(c, sizeof c, "ATLAS_CHROME_TRACE=%s/c-%%r.json", dir);
    const char *env[] = {t, c, "RANK=abc", NULL};
    char *argv[] = {T("rel_output"), "steps", "1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    char path[200];
    snprintf(path, sizeof path, "%s/t-0.jsonl", dir);
    int there = access(path, F_OK);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_int_eq(there, 0);
    ck_assert_int_eq(said(&r, "ignoring RANK='abc': not a rank (a number); %r uses 0"), 1);
    run_free(&r);
}
END_TEST

/* ATLAS_LOG is appended to: two runs, two reports in one file. */
START_TEST(log_appends)
{
    char dir[] = "/tmp/atlas-out-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/log", dir);
    struct file_var v = {.name = "ATLAS_LOG"};
    for (int k = 0; k < 2; k++) {
        struct run_result r;
        run_with_file(&r, &v, path);
        ck_assert_int_eq(r.status, 0);
        run_free(&r);
    }
    char *text = read_file_text(path, NULL);
    unlink(path);
    rmdir(dir);
    ck_assert_int_eq(count_lines(text, "stats: total intercepted calls="), 2);
    free(text);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("output");
    TCase *tc = tcase_create("files");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, fifo_refused_without_blocking);
    tcase_add_test(tc, foreign_file_refused);
    tcase_add_test(tc, long_name_refused);
    tcase_add_test(tc, write_error_said_once);
    tcase_add_test(tc, broken_stderr_no_sigpipe);
    tcase_add_test(tc, fork_keeps_trace_whole);
    tcase_add_test(tc, killed_run_readable);
    tcase_add_test(tc, exec_child_keeps_parent_trace);
    tcase_add_test(tc, control_bytes_in_names_escaped);
    tcase_add_test(tc, alloc_failures_rate_limited);
    tcase_add_test(tc, chrome_trace_capped);
    tcase_add_test(tc, trace_file_alone_records);
    tcase_add_test(tc, bad_rank_said_once);
    tcase_add_test(tc, log_appends);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
