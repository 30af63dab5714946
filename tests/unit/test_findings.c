/*
 * Suppression entries (src/suppress.c) and the findings file's lines (src/findjson.c), without
 * a process under the preload: parsing and its errors, matching by kind, kernel, step and
 * frames (fun:, src:, obj:, ...), entries written and read back, JSON that stays valid.
 */
#include "findjson.h"
#include "suppress.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char errors[4096];

static void err_line(void *ctx, const char *line)
{
    (void)ctx;
    strncat(errors, line, sizeof errors - strlen(errors) - 2);
    strcat(errors, "\n");
}

static struct atl_frame frame(const char *func, const char *mangled, const char *obj,
                              const char *file, int line)
{
    struct atl_frame f;
    memset(&f, 0, sizeof f);
    f.pc = (void *)0x1234;
    snprintf(f.func, sizeof f.func, "%s", func ? func : "");
    snprintf(f.mangled, sizeof f.mangled, "%s", mangled ? mangled : "");
    snprintf(f.obj, sizeof f.obj, "%s", obj ? obj : "");
    snprintf(f.file, sizeof f.file, "%s", file ? file : "");
    f.line = line;
    return f;
}

/* A stack: leak_here (app.c:12) <- helper (app.c:40) <- libc <- main (app.c:77) */
static struct atl_frame fr[4];
static struct atl_supp_subject subj;

static void setup(void)
{
    errors[0] = '\0';
    fr[0] = frame("leak_here", NULL, "/opt/app/bin/app", "/src/app.c", 12);
    fr[1] = frame("helper(float*)", "_Z6helperPf", "/opt/app/bin/app", "/src/app.c", 40);
    fr[2] = frame(NULL, NULL, "/lib/x86_64-linux-gnu/libc.so.6", NULL, 0);
    fr[3] = frame("main", NULL, "/opt/app/bin/app", "/src/app.c", 77);
    subj = (struct atl_supp_subject){.kind = "leak", .fr = fr, .nfr = 4};
}

static int matches(const char *text)
{
    struct atl_supp_set s;
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(atl_supp_parse(&s, text, "t.supp", err_line, NULL), 0);
    ck_assert_msg(s.n == 1, "%zu entries from\n%s\n%s", s.n, text, errors);
    int m = atl_supp_match(&s, &subj) != NULL;
    atl_supp_free(&s);
    return m;
}

START_TEST(frames_match_from_the_top)
{
    ck_assert(matches("{\n n\n atlas:leak\n}\n")); /* no frames: any stack */
    ck_assert(matches("{\n n\n atlas:leak\n fun:leak_here\n fun:helper*\n}\n"));
    ck_assert(matches("{\n n\n atlas:leak\n fun:leak_here\n fun:_Z6helperPf\n}\n"));
    ck_assert(!matches("{\n n\n atlas:leak\n fun:helper*\n}\n"));      /* not the first frame */
    ck_assert(matches("{\n n\n atlas:leak\n ...\n fun:helper*\n}\n")); /* ... skips frames */
    ck_assert(matches("{\n n\n atlas:leak\n ...\n fun:main\n}\n"));
    ck_assert(matches("{\n n\n atlas:leak\n fun:leak_here\n ...\n obj:libc.so*\n fun:main\n}\n"));
    ck_assert(!matches("{\n n\n atlas:leak\n fun:leak_here\n obj:libc.so*\n}\n"));
    ck_assert(matches("{\n n\n atlas:leak\n src:app.c:12\n src:/src/app.c:4*\n}\n"));
    ck_assert(!matches("{\n n\n atlas:leak\n src:app.c:13\n}\n"));
    ck_assert(!matches("{\n n\n atlas:leak\n ...\n fun:main\n fun:*\n}\n")); /* past the end */
    ck_assert(matches("{\n n\n atlas:*\n}\n"));
    ck_assert(!matches("{\n n\n atlas:overrun\n}\n"));
}
END_TEST

START_TEST(kernel_and_step)
{
    subj.kind = "step-diff";
    subj.kernel = "add_step(float*, int)";
    subj.kernel_mangled = "_Z8add_stepPfi";
    subj.step = "train";
    ck_assert(matches("{\n n\n atlas:step-diff\n kernel:add_step*\n}\n"));
    ck_assert(matches("{\n n\n atlas:step-diff\n kernel:_Z8add_step*\n step:tr*\n}\n"));
    ck_assert(!matches("{\n n\n atlas:step-diff\n kernel:other*\n}\n"));
    ck_assert(!matches("{\n n\n atlas:step-diff\n step:eval\n}\n"));
    subj.kernel = subj.kernel_mangled = NULL;
    ck_assert(!matches("{\n n\n atlas:step-diff\n kernel:*\n}\n")); /* no kernel: no match */
}
END_TEST

/* What --gen-suppressions prints reads back and matches what it was made from, whatever
 * glob characters the names hold; copied with the log's prefix, it still does. */
static char written[4096];

static void out_line(void *ctx, const char *text)
{
    const char *prefix = ctx;
    strncat(written, prefix, sizeof written - strlen(written) - 1);
    strncat(written, text, sizeof written - strlen(written) - 2);
    strcat(written, "\n");
}

START_TEST(written_entries_read_back)
{
    fr[0] = frame("operator[](int*) [clone .cold]", NULL, "/opt/app/bin/app", NULL, 0);
    subj.kind = "overrun";
    subj.kernel = "fill<float>(float*)";
    static const char *const prefixes[] = {"", "atlas[4242]: "};
    for (int i = 0; i < 2; i++) {
        written[0] = '\0';
        atl_supp_write(&subj, 8, out_line, (void *)prefixes[i]);
        ck_assert_msg(strstr(written, "fun:operator\\[\\](int\\*) \\[clone .cold\\]\n"), "%s",
                      written);
        ck_assert_msg(strstr(written, "kernel:fill<float>(float\\*)\n"), "%s", written);
        ck_assert_msg(strstr(written, "fun:_Z6helperPf\n"), "%s", written); /* mangled */
        ck_assert_msg(strstr(written, "obj:/lib/x86_64-linux-gnu/libc.so.6\n"), "%s", written);
        char end[64];
        snprintf(end, sizeof end, "fun:main\n%s}\n", prefixes[i]); /* stops at main */
        ck_assert_msg(strstr(written, end), "%s", written);
        ck_assert_msg(matches(written), "%s", written);
        /* and only that: another kernel, another first frame */
        subj.kernel = "fill<double>(double*)";
        ck_assert(!matches(written));
        subj.kernel = "fill<float>(float*)";
        fr[0] = frame("operator[](int*)", NULL, "/opt/app/bin/app", NULL, 0);
        ck_assert(!matches(written));
        fr[0] = frame("operator[](int*) [clone .cold]", NULL, "/opt/app/bin/app", NULL, 0);
    }
}
END_TEST

START_TEST(parse_errors_leave_the_entry_out)
{
    struct atl_supp_set s;
    memset(&s, 0, sizeof s);
    const char *text = "junk\n"
                       "{\n a\n atlas:leak\n fun:x\n}\n"
                       "{\n b\n notakind\n fun:y\n}\n"
                       "{\n c\n atlas:leak\n fnu:z\n}\n"
                       "{\n}\n"
                       "{\n d\n atlas:race\n";
    ck_assert_int_eq(atl_supp_parse(&s, text, "bad.supp", err_line, NULL), 5);
    ck_assert_int_eq((int)s.n, 1);
    ck_assert_str_eq(s.e[0].name, "a");
    ck_assert_str_eq(s.e[0].file, "bad.supp");
    ck_assert_int_eq(s.e[0].line, 2);
    ck_assert_msg(strstr(errors, "bad.supp' line 1: expected '{' to open an entry: 'junk'"), "%s",
                  errors);
    ck_assert_msg(strstr(errors, "line 9: the second line of an entry is atlas:KIND"), "%s",
                  errors);
    ck_assert_msg(strstr(errors, "line 15: not a line of an entry"), "%s", errors);
    ck_assert_msg(strstr(errors, "line 18: an entry needs a name and an atlas:KIND line"), "%s",
                  errors);
    ck_assert_msg(strstr(errors, "the file ends inside an entry"), "%s", errors);
    atl_supp_free(&s);
}
END_TEST

/* Hostile files (issue #48): "..." lines in a row are one; many "..." among frame lines that
 * match anything are decided in bounded time; two million bad lines print ten errors and a
 * count; entries past 10,000 are said once and left out. */
START_TEST(hostile_files_bounded)
{
    /* 23 "..." in a row, then a frame: one "...", one frame line */
    char text[4096] = "{\n n\n atlas:leak\n";
    for (int i = 0; i < 23; i++)
        strcat(text, " ...\n");
    strcat(text, " fun:main\n}\n");
    struct atl_supp_set s;
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(atl_supp_parse(&s, text, "dots.supp", err_line, NULL), 0);
    ck_assert_int_eq(s.e[0].nfr, 2);
    atl_supp_free(&s);
    ck_assert(matches(text));
    /* "..." and a frame line that matches any frame, alternating, on a 24-frame stack that the
     * entry cannot match (its last line names no frame): every split tried in turn took
     * minutes; here at most 24 x 25 glob matches */
    struct atl_frame deep[ATL_STACK_MAX];
    for (int i = 0; i < ATL_STACK_MAX; i++)
        deep[i] = frame("f", NULL, "/opt/app/bin/app", "/src/app.c", i + 1);
    strcpy(text, "{\n n\n atlas:leak\n");
    for (int i = 0; i < 11; i++)
        strcat(text, " ...\n fun:*\n");
    strcat(text, " ...\n fun:nowhere\n}\n");
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(atl_supp_parse(&s, text, "alt.supp", err_line, NULL), 0);
    struct atl_supp_subject x = {.kind = "leak", .fr = deep, .nfr = ATL_STACK_MAX};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 100; i++)
        ck_assert_ptr_null(atl_supp_match(&s, &x));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ck_assert_msg(ms < 2000, "100 matches took %.0f ms", ms);
    atl_supp_free(&s);

    /* a million bad lines: a million problems counted, ten said and one line of the rest */
    size_t nbad = 1000000;
    char *bad = malloc(nbad * 4 + 1);
    ck_assert_ptr_nonnull(bad);
    for (size_t i = 0; i < nbad; i++)
        memcpy(bad + i * 4, "xx\n\n", 4);
    bad[nbad * 4] = '\0';
    errors[0] = '\0';
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(atl_supp_parse(&s, bad, "bad.supp", err_line, NULL), (int)nbad);
    int said = 0;
    for (char *p = errors; (p = strstr(p, "expected '{'")); p++)
        said++;
    ck_assert_int_eq(said, 10);
    ck_assert_msg(strstr(errors, "suppressions file 'bad.supp': 999990 more problems not shown"),
                  "%s", errors);
    atl_supp_free(&s);
    free(bad);

    /* 10,001 entries: 10,000 kept, the rest said once */
    size_t nent = 10001, one = strlen("{\n n\n atlas:leak\n}\n");
    char *many = malloc(nent * one + 1);
    ck_assert_ptr_nonnull(many);
    for (size_t i = 0; i < nent; i++)
        memcpy(many + i * one, "{\n n\n atlas:leak\n}\n", one);
    many[nent * one] = '\0';
    errors[0] = '\0';
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(atl_supp_parse(&s, many, "many.supp", err_line, NULL), 1);
    ck_assert_int_eq((int)s.n, 10000);
    ck_assert_msg(strstr(errors, "more than 10,000 entries: this one and the rest of the file are "
                                 "not used"),
                  "%s", errors);
    atl_supp_free(&s);
    free(many);
}
END_TEST

/* A line of the findings file: one line, every key, names that are bytes (not UTF-8) escaped,
 * frames left out before the line is cut. */
START_TEST(json_lines_stay_valid)
{
    char buf[8192];
    struct atl_finding_rec r = {.tool = "atlastrace",
                                .pid = 7,
                                .id = 3,
                                .kind = "race",
                                .message = "race: \"quoted\" \\ caf\xe9\n",
                                .kernel = "k\x01",
                                .alloc = 9,
                                .bytes = 0,
                                .has_bytes = 1,
                                .fr = fr,
                                .nfr = 4,
                                .printed = 1};
    size_t n = atl_finding_json(&r, buf, sizeof buf);
    ck_assert_uint_eq(n, strlen(buf));
    ck_assert(buf[n - 1] == '\n' && !memchr(buf, '\n', n - 1));
    ck_assert_msg(strstr(buf, "\"message\":\"race: \\\"quoted\\\" \\\\ caf\\u00e9\\u000a\""), "%s",
                  buf);
    ck_assert_msg(strstr(buf, "\"kernel\":\"k\\u0001\""), "%s", buf);
    ck_assert_msg(strstr(buf, "\"launch\":null,\"alloc\":9,\"bytes\":0,\"count\":1"), "%s", buf);
    ck_assert_msg(strstr(buf, "\"line\":12}"), "%s", buf);
    ck_assert_msg(strstr(buf, "\"function\":null,\"mangled\":null,\"object\":\"/lib/"), "%s", buf);
    ck_assert_msg(strstr(buf, "\"suppressed\":false,\"suppression\":null,\"printed\":true}\n"),
                  "%s", buf);
    /* too small for the frames: fewer frames, still whole */
    char small[600];
    n = atl_finding_json(&r, small, sizeof small);
    ck_assert(n > 0 && small[n - 1] == '\n');
    ck_assert_msg(strstr(small, "\"printed\":true}\n"), "%s", small);
    ck_assert_msg(!strstr(small, "\"main\""), "%s", small);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("findings-unit");
    TCase *tc = tcase_create("suppressions");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, frames_match_from_the_top);
    tcase_add_test(tc, kernel_and_step);
    tcase_add_test(tc, written_entries_read_back);
    tcase_add_test(tc, parse_errors_leave_the_entry_out);
    tcase_add_test(tc, hostile_files_bounded);
    tcase_add_test(tc, json_lines_stay_valid);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
