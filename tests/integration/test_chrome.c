/*
 * The Chrome trace / Perfetto export (ATLAS_CHROME_TRACE) and the two-rank
 * comparison, under the preload against the fake driver:
 *  - the file is strict JSON (checked by the small validator below, so the
 *    test needs no Python), holds one slice per step, one event per op the
 *    target enqueued, on a named track per stream, with the kernel names and
 *    arguments a person looks for, each op inside its step's slice;
 *  - every event is a line of its own ending in ",", so a file cut short by
 *    a crash repairs by dropping its last partial line; a run killed with
 *    SIGKILL keeps every step that ended;
 *  - two ranks of one program write trace-0/trace-1 through %r, and
 *    atlas-diff names the step and op where rank 1 took another branch.
 */
#include "run.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define T(name) BUILD_DIR "/tests/" name
#define TOOL BUILD_DIR "/atlas-diff"

/* ---- a strict JSON validator (RFC 8259) ---------------------------------- */

static const char *ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static const char *value(const char *p, int depth);

static const char *string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (;;) {
        unsigned char c = (unsigned char)*p++;
        if (c == '"')
            return p;
        if (c < 0x20)
            return NULL; /* includes the end of the text */
        if (c == '\\') {
            c = (unsigned char)*p++;
            if (c == 'u') {
                for (int i = 0; i < 4; i++, p++)
                    if (!strchr("0123456789abcdefABCDEF", *p) || !*p)
                        return NULL;
            } else if (!strchr("\"\\/bfnrt", c) || !c) {
                return NULL;
            }
        }
    }
}

static const char *number(const char *p)
{
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return NULL;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9'))
            return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

static const char *members(const char *p, char close, int depth)
{
    p = ws(p + 1);
    if (*p == close)
        return p + 1;
    for (;;) {
        if (close == '}') {
            p = string(ws(p));
            if (!p || *(p = ws(p)) != ':')
                return NULL;
            p++;
        }
        p = value(p, depth + 1);
        if (!p)
            return NULL;
        p = ws(p);
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
    }
}

static const char *value(const char *p, int depth)
{
    if (depth > 64)
        return NULL;
    p = ws(p);
    switch (*p) {
    case '{':
        return members(p, '}', depth);
    case '[':
        return members(p, ']', depth);
    case '"':
        return string(p);
    case 't':
        return strncmp(p, "true", 4) ? NULL : p + 4;
    case 'f':
        return strncmp(p, "false", 5) ? NULL : p + 5;
    case 'n':
        return strncmp(p, "null", 4) ? NULL : p + 4;
    default:
        return number(p);
    }
}

static int json_valid(const char *text)
{
    const char *end = value(text, 0);
    return end && *ws(end) == '\0';
}

START_TEST(validator_is_strict)
{
    ck_assert(json_valid("[{\"a\":[1,-2.5e3,true,null,\"x\\n\"]}]"));
    ck_assert(!json_valid("[{\"a\":1},]"));
    ck_assert(!json_valid("[{\"a\":1}"));
    ck_assert(!json_valid("{\"a\":01}"));
    ck_assert(!json_valid("{\"a\":1.}"));
    ck_assert(!json_valid("{a:1}"));
    ck_assert(!json_valid("[\"tab\there\"]"));
    ck_assert(!json_valid("[1] 2"));
}
END_TEST

/* ---- helpers ------------------------------------------------------------- */

static char tmpdir[64];

static void tmp_setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/atlas-chrome-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* The one file matching tmpdir/glob. */
static void find_one(const char *glob, char *path, size_t len)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s/%s", tmpdir, glob);
    FILE *ls = popen(cmd, "r");
    ck_assert_ptr_nonnull(fgets(path, (int)len, ls));
    char extra[256];
    ck_assert_msg(fgets(extra, sizeof extra, ls) == NULL, "more than one %s", glob);
    pclose(ls);
    path[strcspn(path, "\n")] = '\0';
}

/* Runs trace_steps scenario `sc` with ATLAS_CHROME_TRACE only (it implies
 * the recording) and returns the trace's text. */
static char *chrome_run(struct run_result *r, const char *sc, const char *steps)
{
    char setting[256];
    snprintf(setting, sizeof setting, "ATLAS_CHROME_TRACE=%s/c-%%p-%%r.json", tmpdir);
    const char *env[] = {setting, "RANK=3", "ATLAS_TRACE", NULL};
    char *argv[] = {T("trace_steps"), (char *)sc, (char *)steps, NULL};
    run_target(r, argv, env, 1);
    ck_assert_msg(r->status == 0, "trace_steps %s exited %d\n%s\n%s", sc, r->status, r->err,
                  r->log);
    char path[512];
    find_one("c-*-3.json", path, sizeof path);
    ck_assert_msg(strstr(path, "%") == NULL, "not expanded: %s", path);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    char *text = slurp(path);
    ck_assert_msg(json_valid(text), "not valid JSON:\n%s", text);
    return text;
}

/* Calls fn for each line of text (without its newline). */
#define EACH_LINE(text, line)                                                                      \
    for (char *line = strtok_r(text, "\n", &save_); line; line = strtok_r(NULL, "\n", &save_))

static long num_after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    ck_assert_msg(p != NULL, "no %s in %s", key, line);
    return atol(p + strlen(key));
}

/* A time in microseconds with three decimals, read exactly, in ns. */
static long long ns_after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    ck_assert_msg(p != NULL, "no %s in %s", key, line);
    long long us = 0;
    unsigned frac = 0;
    ck_assert_msg(sscanf(p + strlen(key), "%lld.%3u", &us, &frac) == 2, "%s", line);
    return us * 1000 + frac;
}

/* ---- the export ---------------------------------------------------------- */

START_TEST(steps_and_ops)
{
    struct run_result r;
    char *text = chrome_run(&r, "scalar", "3");
    /* ATLAS_CHROME_TRACE alone records: the live diff ran too */
    ck_assert_int_eq(count_lines(r.log, "trace summary: steps=3 compared=2"), 1);
    ck_assert_int_eq(count_lines(text, "\"name\":\"process_name\",\"args\":{\"name\":\"atlastrace "
                                       "rank 3 pid "),
                     1);
    ck_assert_int_eq(count_lines(text, "\"tid\":0,\"name\":\"thread_name\",\"args\":{\"name\":"
                                       "\"steps\"}"),
                     1);
    ck_assert_int_eq(count_lines(text, "\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":"
                                       "\"stream 0x"),
                     1);
    /* 3 steps of fill, add_step, fill */
    ck_assert_int_eq(count_lines(text, "\"ph\":\"X\",\"cat\":\"step\""), 3);
    ck_assert_int_eq(count_lines(text, "\"ph\":\"X\",\"cat\":\"launch\""), 9);
    ck_assert_int_eq(count_lines(text, "\"ph\":\"X\""), 12);
    ck_assert_int_eq(count_lines(text, "\"name\":\"fill(float*)\",\"pid\""), 6);
    ck_assert_int_eq(count_lines(text, "\"name\":\"add_step(float*, int)\",\"pid\""), 3);
    /* arguments: the buffer by allocation, the int in hex, per step */
    for (int i = 0; i < 3; i++) {
        char want[128];
        snprintf(
            want, sizeof want,
            "\"grid\":\"4,1,1\",\"block\":\"32,1,1\",\"shmem\":0,\"kernel\":\"_Z8add_stepPfi\","
            "\"params\":[\"alloc#1+0x0\",\"0x%x\"]",
            100 + i);
        ck_assert_msg(count_lines(text, want) == 1, "no %s in\n%s", want, text);
    }
    ck_assert_int_eq(count_lines(text, "\"name\":\"cuStreamSynchronize #1\""), 1);
    ck_assert_int_eq(count_lines(text, "\"name\":\"cuStreamSynchronize #3\""), 1);

    /* each op sits inside its step's slice, on the stream's track; steps
     * do not overlap */
    long long beg[4] = {0}, end[4] = {0};
    char *copy = strdup(text), *save_ = NULL;
    EACH_LINE(copy, line)
    {
        if (strstr(line, "\"cat\":\"step\"")) {
            int s = (int)num_after(line, "\"args\":{\"step\":");
            ck_assert(s >= 1 && s <= 3);
            ck_assert(strstr(line, "\"tid\":0,"));
            beg[s] = ns_after(line, "\"ts\":");
            end[s] = beg[s] + ns_after(line, "\"dur\":");
        }
    }
    free(copy);
    for (int s = 2; s <= 3; s++)
        ck_assert_msg(beg[s] >= end[s - 1], "step %d overlaps step %d", s, s - 1);
    copy = strdup(text), save_ = NULL;
    int checked = 0;
    EACH_LINE(copy, line)
    {
        if (strstr(line, "\"cat\":\"launch\"")) {
            int s = (int)num_after(line, "\"args\":{\"step\":");
            long long ts = ns_after(line, "\"ts\":");
            ck_assert(strstr(line, "\"tid\":1,") && strstr(line, "\"dur\":0,"));
            ck_assert_msg(ts >= beg[s] && ts <= end[s], "op at %lld outside step %d [%lld, %lld]",
                          ts, s, beg[s], end[s]);
            checked++;
        }
    }
    free(copy);
    ck_assert_int_eq(checked, 9);
    free(text);
    run_free(&r);
}
END_TEST

START_TEST(one_track_per_stream)
{
    /* four threads, each with its own stream, 50 launches each per step */
    struct run_result r;
    char *text = chrome_run(&r, "threads", "2");
    ck_assert_int_eq(count_lines(text, "\"cat\":\"step\""), 2);
    ck_assert_int_eq(count_lines(text, "\"cat\":\"launch\""), 400);
    ck_assert_int_eq(count_lines(text, "\"name\":\"thread_name\",\"args\":{\"name\":\"stream 0x"),
                     4);
    for (int t = 1; t <= 4; t++) {
        char want[64];
        snprintf(want, sizeof want, "\"tid\":%d,\"ts\"", t);
        ck_assert_int_eq(count_lines(text, want), 100);
    }
    free(text);
    run_free(&r);
}
END_TEST

START_TEST(memsets_named)
{
    struct run_result r;
    char *text = chrome_run(&r, "same", "2");
    ck_assert_int_eq(count_lines(text, "\"ph\":\"X\",\"cat\":\"memset\",\"name\":\"memset\""), 2);
    ck_assert_int_eq(count_lines(text, "\"value\":\"0x0\",\"elem\":4,\"count\":64"), 2);
    ck_assert_int_eq(count_lines(text, "\"cat\":\"launch\""), 4);
    free(text);
    run_free(&r);
}
END_TEST

/* The repair recipe of docs/chrome.md for a file cut short: between "[" and
 * the closing element, every line is one whole event followed by ",". */
START_TEST(one_event_per_line)
{
    struct run_result r;
    char *text = chrome_run(&r, "scalar", "2");
    char *save_ = NULL;
    int n = 0, last = 0;
    EACH_LINE(text, line)
    {
        n++;
        size_t len = strlen(line);
        if (n == 1) {
            ck_assert_str_eq(line, "[");
            continue;
        }
        if (strcmp(line, "]") == 0) {
            last = 1;
            continue;
        }
        ck_assert_msg(!last, "a line after the closing bracket");
        if (line[len - 1] == ',')
            line[len - 1] = '\0';
        ck_assert_msg(json_valid(line) && line[0] == '{', "not one event: %s", line);
    }
    ck_assert(last);
    free(text);
    run_free(&r);
}
END_TEST

START_TEST(unwritable_file_said_once)
{
    const char *env[] = {"ATLAS_CHROME_TRACE=/nonexistent-dir/c.json", NULL};
    char *argv[] = {T("trace_steps"), "scalar", "3", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_int_eq(r.status, 0);
    ck_assert_int_eq(count_lines(r.log, "cannot open ATLAS_CHROME_TRACE file "
                                        "'/nonexistent-dir/c.json': No such file or directory; "
                                        "no Chrome trace"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "trace summary: steps=3"), 1);
    run_free(&r);
}
END_TEST

/* Killed mid-run: the file holds the steps that ended, each event whole;
 * it is not closed, and the repair of docs/chrome.md makes it strict JSON. */
START_TEST(killed_run_keeps_ended_steps)
{
    char path[512], setting[600], lib[4096], fake[4096];
    snprintf(path, sizeof path, "%s/killed.json", tmpdir);
    snprintf(setting, sizeof setting, "ATLAS_CHROME_TRACE=%s", path);
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/libatlastrace.so", lib));
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/fake", fake));
    pid_t pid = fork();
    if (pid == 0) {
        putenv(setting);
        setenv("LD_PRELOAD", lib, 1);
        setenv("LD_LIBRARY_PATH", fake, 1);
        setenv("ATLAS_LOG", "/dev/null", 1);
        execl(T("ranks"), T("ranks"), "hang", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_gt(pid, 0);
    char *text = NULL;
    for (int tries = 0; tries < 1000; tries++) { /* up to 10 s for two step ends */
        struct stat st;
        if (stat(path, &st) == 0) {
            free(text);
            text = slurp(path);
            if (count_lines(text, "\"cat\":\"step\"") == 2)
                break;
        }
        usleep(10000);
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    free(text);
    text = slurp(path);
    ck_assert_int_eq(count_lines(text, "\"cat\":\"step\""), 2);
    ck_assert_int_eq(count_lines(text, "\"cat\":\"launch\""), 4); /* not the third step's */
    ck_assert(!json_valid(text));
    size_t n = strlen(text);
    ck_assert(n > 3 && strcmp(text + n - 3, "},\n") == 0);
    text[n - 2] = ']'; /* the repair: the last comma becomes the closing bracket */
    text[n - 1] = '\0';
    ck_assert_msg(json_valid(text), "repaired file is not JSON:\n%s", text);
    free(text);
}
END_TEST

/* ---- two ranks ----------------------------------------------------------- */

static void run_rank(const char *how, int rank)
{
    char setting[256], rk[16];
    snprintf(setting, sizeof setting, "ATLAS_TRACE_FILE=%s/trace-%%r.jsonl", tmpdir);
    snprintf(rk, sizeof rk, "RANK=%d", rank);
    const char *env[] = {"ATLAS_TRACE=1", setting, rk, NULL};
    char *argv[] = {T("ranks"), (char *)how, NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "ranks exited %d\n%s", r.status, r.err);
    char want[32];
    snprintf(want, sizeof want, "ok rank=%d", rank);
    ck_assert(strstr(r.out, want));
    run_free(&r);
}

static void diff_ranks(struct run_result *r)
{
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/trace-0.jsonl", tmpdir);
    snprintf(b, sizeof b, "%s/trace-1.jsonl", tmpdir);
    struct stat st;
    ck_assert_msg(stat(a, &st) == 0 && stat(b, &st) == 0, "no trace-0/trace-1 in %s", tmpdir);
    char *argv[] = {TOOL, a, b, NULL};
    run_target(r, argv, NULL, 0);
}

START_TEST(ranks_diverge)
{
    run_rank("diverge", 0);
    run_rank("diverge", 1);
    struct run_result r;
    diff_ranks(&r);
    ck_assert_msg(r.status == 1, "atlas-diff exited %d\n%s%s", r.status, r.out, r.err);
    /* the second step, and only it; the op rank 1 added */
    ck_assert_int_eq(count_lines(r.out, "differs from"), 1);
    /* each side named by its file: rank 1's step against rank 0's */
    char head[1400];
    snprintf(head, sizeof head,
             "step \"cuStreamSynchronize\" #2 of %s/trace-1.jsonl (step 2) differs from #2 of "
             "%s/trace-0.jsonl (step 2): 3 ops",
             tmpdir, tmpdir);
    ck_assert_int_eq(count_lines(r.out, head), 1);
    ck_assert_int_eq(
        count_lines(r.out, "op 1 inserted: scale(float*, int) grid=(1,1,1) block=(32,1,1)"), 1);
    ck_assert_int_eq(count_lines(r.out, "compared=4 identical=3 differing=1"), 1);
    run_free(&r);
}
END_TEST

START_TEST(ranks_same)
{
    /* the same program logic on two ranks: different processes, different
     * addresses for the same allocations, the same ops */
    run_rank("same", 0);
    run_rank("same", 1);
    struct run_result r;
    diff_ranks(&r);
    ck_assert_msg(r.status == 0, "atlas-diff exited %d\n%s%s", r.status, r.out, r.err);
    ck_assert_int_eq(count_lines(r.out, "compared=4 identical=4"), 1);
    run_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("chrome");
    TCase *tc = tcase_create("chrome");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, validator_is_strict);
    tcase_add_test(tc, steps_and_ops);
    tcase_add_test(tc, one_track_per_stream);
    tcase_add_test(tc, memsets_named);
    tcase_add_test(tc, one_event_per_line);
    tcase_add_test(tc, unwritable_file_said_once);
    tcase_add_test(tc, killed_run_keeps_ended_steps);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("ranks");
    tcase_set_timeout(tr, 60);
    tcase_add_checked_fixture(tr, tmp_setup, tmp_teardown);
    tcase_add_test(tr, ranks_diverge);
    tcase_add_test(tr, ranks_same);
    suite_add_tcase(s, tr);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
