/* The settings table, parsed directly (no preload): every variable rejects
 * garbage with one clear line and keeps its default. */
#include "config.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char lines[16][512];
static int nlines;

static void collect(void *ctx, const char *line)
{
    (void)ctx;
    if (nlines < 16)
        snprintf(lines[nlines], sizeof lines[0], "%s", line);
    nlines++;
}

static int parse1(struct atl_config *c, const char *kv)
{
    char *env[] = {(char *)kv, NULL};
    nlines = 0;
    return atl_config_parse(c, env, collect, NULL);
}

static unsigned long long field_num(const struct atl_config *c, const struct atl_cfg_var *v)
{
    unsigned long long x;
    memcpy(&x, (const char *)c + v->offset, sizeof x);
    return x;
}

static void expect_rejected(const struct atl_cfg_var *v, const char *value, const char *why)
{
    char kv[256];
    struct atl_config c;
    snprintf(kv, sizeof kv, "%s=%s", v->name, value);
    ck_assert_int_eq(parse1(&c, kv), 1);
    ck_assert_int_eq(nlines, 1);
    char want[300];
    snprintf(want, sizeof want, "ignoring %s='%s': %s", v->name, value, why);
    ck_assert_msg(strncmp(lines[0], want, strlen(want)) == 0, "got '%s', want prefix '%s'",
                  lines[0], want);
    ck_assert_msg(strstr(lines[0], "; using ") != NULL, "no default named in '%s'", lines[0]);
    if (v->type != ATL_CFG_STRING)
        ck_assert_uint_eq(field_num(&c, v), v->def);
    ck_assert(!c.set[v - atl_cfg_vars]);
}

/* Every variable in the table: empty, and the garbage its type must refuse. */
START_TEST(every_variable_rejects_garbage)
{
    for (size_t i = 0; i < atl_cfg_nvars; i++) {
        const struct atl_cfg_var *v = &atl_cfg_vars[i];
        expect_rejected(v, "", "empty value");
        switch (v->type) {
        case ATL_CFG_BOOL:
            expect_rejected(v, "abc", "not a boolean");
            expect_rejected(v, "-5", "not a boolean");
            expect_rejected(v, "2", "not a boolean");
            break;
        case ATL_CFG_UINT: {
            expect_rejected(v, "abc", "not a number");
            expect_rejected(v, "-5", "negative value");
            expect_rejected(v, "12abc", "not a number");
            expect_rejected(v, "99999999999999999999", "number too large");
            if (v->max < ULLONG_MAX) {
                char big[32];
                snprintf(big, sizeof big, "%llu", v->max + 1);
                expect_rejected(v, big, "out of range");
            }
            break;
        }
        case ATL_CFG_ENUM:
            expect_rejected(v, "abc", "not one of the accepted values");
            expect_rejected(v, "-5", "not one of the accepted values");
            break;
        case ATL_CFG_STRING:
            break;
        }
    }
}
END_TEST

START_TEST(valid_values_accepted)
{
    struct atl_config c;
    ck_assert_int_eq(parse1(&c, "ATLAS_STATS=yes"), 0);
    ck_assert_uint_eq(c.stats, 1);
    ck_assert_int_eq(parse1(&c, "ATLAS_STATS=0"), 0);
    ck_assert_uint_eq(c.stats, 0);
    ck_assert_int_eq(parse1(&c, "ATLAS_LOG_LEVEL=debug"), 0);
    ck_assert_uint_eq(c.log_level, 3);
    ck_assert_int_eq(parse1(&c, "ATLAS_LOG=/tmp/x-%p"), 0);
    ck_assert_str_eq(c.log_path, "/tmp/x-%p");
    ck_assert_int_eq(nlines, 0);
}
END_TEST

START_TEST(defaults_without_environment)
{
    struct atl_config c;
    char *env[] = {"PATH=/bin", "HOME=/root", NULL};
    nlines = 0;
    ck_assert_int_eq(atl_config_parse(&c, env, collect, NULL), 0);
    for (size_t i = 0; i < atl_cfg_nvars; i++)
        if (atl_cfg_vars[i].type != ATL_CFG_STRING)
            ck_assert_uint_eq(field_num(&c, &atl_cfg_vars[i]), atl_cfg_vars[i].def);
    ck_assert_ptr_null(c.log_path);
}
END_TEST

START_TEST(unknown_names_suggest)
{
    struct atl_config c;
    ck_assert_int_eq(parse1(&c, "ATLAS_STAT=1"), 1);
    ck_assert_str_eq(lines[0], "unknown setting ATLAS_STAT; did you mean ATLAS_STATS?");
    ck_assert_int_eq(parse1(&c, "ATLAS_LOGLEVEL=info"), 1);
    ck_assert_str_eq(lines[0], "unknown setting ATLAS_LOGLEVEL; did you mean ATLAS_LOG_LEVEL?");
    ck_assert_int_eq(parse1(&c, "ATLAS_COMPLETELY_DIFFERENT=1"), 1);
    ck_assert_str_eq(lines[0], "unknown setting ATLAS_COMPLETELY_DIFFERENT; ignored");
}
END_TEST

/* An environment value can never forge a second line or run long. */
START_TEST(values_shown_safely)
{
    struct atl_config c;
    ck_assert_int_eq(parse1(&c, "ATLAS_STATS=a\nb%s%n"), 1);
    ck_assert_ptr_null(strchr(lines[0], '\n'));
    ck_assert_ptr_nonnull(strstr(lines[0], "'a?b%s%n'"));
    char kv[400] = "ATLAS_STATS=";
    memset(kv + 12, 'x', 300);
    kv[312] = '\0';
    ck_assert_int_eq(parse1(&c, kv), 1);
    ck_assert_ptr_nonnull(strstr(lines[0], "...'"));
    ck_assert_uint_lt(strlen(lines[0]), 200);
}
END_TEST

START_TEST(expand_pid_and_rank)
{
    char out[128], want[128];
    unsetenv("RANK");
    unsetenv("LOCAL_RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("SLURM_PROCID");
    atl_config_expand_path("/tmp/t-%p-%r.log", out, sizeof out);
    snprintf(want, sizeof want, "/tmp/t-%ld-0.log", (long)getpid());
    ck_assert_str_eq(out, want);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    atl_config_expand_path("r%r", out, sizeof out);
    ck_assert_str_eq(out, "r3");
    setenv("RANK", "1", 1);
    atl_config_expand_path("r%r", out, sizeof out);
    ck_assert_str_eq(out, "r1");
    unsetenv("RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    atl_config_expand_path("100%", out, sizeof out);
    ck_assert_str_eq(out, "100%");
}
END_TEST

/* Decimal, or hex after 0x, as the table says: never octal. */
START_TEST(numbers_decimal_or_hex)
{
    struct atl_config c;
    ck_assert_int_eq(parse1(&c, "ATLAS_REDZONE_TRACE_IDX=010"), 0);
    ck_assert_uint_eq(c.redzone_trace_idx, 10);
    ck_assert_int_eq(parse1(&c, "ATLAS_REDZONE_TRACE_IDX=09"), 0);
    ck_assert_uint_eq(c.redzone_trace_idx, 9);
    ck_assert_int_eq(parse1(&c, "ATLAS_REDZONE_FILL=0x5A"), 0);
    ck_assert_uint_eq(c.redzone_fill, 0x5A);
    ck_assert_int_eq(parse1(&c, "ATLAS_REDZONE_FILL=0XfF"), 0);
    ck_assert_uint_eq(c.redzone_fill, 0xff);
    const struct atl_cfg_var *v = &atl_cfg_vars[atl_config_find("ATLAS_REDZONE_FILL")];
    expect_rejected(v, "0x", "not a number");
    expect_rejected(v, "0x-1", "not a number");
    expect_rejected(v, "0b1", "not a number");
}
END_TEST

/* Wrong case: named, with the right spelling. */
START_TEST(wrong_case_suggests)
{
    struct atl_config c;
    ck_assert_int_eq(parse1(&c, "ATLAS_redzone=64"), 1);
    ck_assert_str_eq(lines[0], "unknown setting ATLAS_redzone; did you mean ATLAS_REDZONE? (names "
                               "are upper case)");
    ck_assert_int_eq(parse1(&c, "atlas_trace=1"), 1);
    ck_assert_str_eq(lines[0], "unknown setting atlas_trace; did you mean ATLAS_TRACE? (names are "
                               "upper case)");
    ck_assert_uint_eq(c.trace, 0);
    ck_assert_int_eq(parse1(&c, "Atlas_Stat=1"), 1);
    ck_assert_str_eq(lines[0], "unknown setting Atlas_Stat; did you mean ATLAS_STATS?");
}
END_TEST

/* ATLAS_STEP is checked with the other settings (so a bad one is said even
 * with tracing off), its keywords in any case like ENUM choices. */
START_TEST(step_checked)
{
    struct atl_config c;
    const char *ok[] = {"sync", "SYNC", "Capture", "api", "nvtx:step", "NVTX:Step"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char kv[64];
        snprintf(kv, sizeof kv, "ATLAS_STEP=%s", ok[i]);
        ck_assert_msg(parse1(&c, kv) == 0, "%s refused: %s", kv, lines[0]);
        ck_assert_str_eq(c.step, ok[i]);
    }
    const struct atl_cfg_var *v = &atl_cfg_vars[atl_config_find("ATLAS_STEP")];
    expect_rejected(v, "bogus", "not sync, capture, api or nvtx:NAME");
    expect_rejected(v, "nvtx:", "not sync, capture, api or nvtx:NAME");
    ck_assert_ptr_nonnull(strstr(lines[0], "; using sync"));
    char kv[160] = "nvtx:";
    memset(kv + 5, 'n', 70);
    kv[75] = '\0';
    char set[200];
    snprintf(set, sizeof set, "ATLAS_STEP=%s", kv);
    ck_assert_int_eq(parse1(&c, set), 1);
    ck_assert_ptr_nonnull(strstr(lines[0], "...': range name too long; using sync"));
}
END_TEST

/* ATLAS_KERNEL: a POSIX extended regular expression glibc can build in bounded memory. The
 * settings fuzzer's 30 '+' in a row took 2 GB in regcomp; a filter of kernel names needs no
 * repetitions that multiply past 4,096 copies, nor more than 256 characters. */
START_TEST(kernel_regex_bounded)
{
    struct atl_config c;
    const char *ok[] = {"gemm", "^(k1|k2)$", "softmax.*|elementwise_kernel<[0-9]+>",
                        "a{2,100}", "[*+?{]+x*", "a+b+c+d+e+f+g+h+i+j+k+", "x{1,63}y{1,63}", "\\+\\+\\+\\+\\+\\+\\+\\+\\+\\+"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char kv[300];
        snprintf(kv, sizeof kv, "ATLAS_KERNEL=%s", ok[i]);
        ck_assert_msg(parse1(&c, kv) == 0, "%s refused: %s", kv, lines[0]);
    }
    const struct atl_cfg_var *v = &atl_cfg_vars[atl_config_find("ATLAS_KERNEL")];
    expect_rejected(v, "a++++++++++++++++++++++++++++++b", "refused: repetitions that multiply");
    expect_rejected(v, "(((((((((((((a+)+)+)+)+)+)+)+)+)+)+)+)+)", "refused: repetitions that multiply");
    expect_rejected(v, "x{1,5000}", "refused: repetitions that multiply");
    expect_rejected(v, "((a{1,100}){1,100})", "refused: repetitions that multiply");
    char longer[300], kv[320];
    memset(longer, 'k', 257);
    longer[257] = '\0';
    snprintf(kv, sizeof kv, "ATLAS_KERNEL=%s", longer);
    ck_assert_int_eq(parse1(&c, kv), 1);
    ck_assert_msg(strstr(lines[0], "refused: longer than 256 characters") != NULL, "%s", lines[0]);
    expect_rejected(v, "(", "not a POSIX extended regular expression");
}
END_TEST

/* ATLAS_STEP's modes by one rule, the one the check above and the step trace use: keywords
 * in any case, an nvtx range name of 1 to ATL_STEP_NAME_MAX - 1 bytes. */
START_TEST(step_modes_one_rule)
{
    const char *name;
    ck_assert_int_eq(atl_step_mode(NULL, &name), ATL_STEP_SYNC);
    ck_assert_int_eq(atl_step_mode("SYNC", &name), ATL_STEP_SYNC);
    ck_assert_int_eq(atl_step_mode("Capture", &name), ATL_STEP_CAPTURE);
    ck_assert_int_eq(atl_step_mode("API", &name), ATL_STEP_API);
    ck_assert_int_eq(atl_step_mode("Nvtx:train step", &name), ATL_STEP_NVTX);
    ck_assert_str_eq(name, "train step");
    ck_assert_int_eq(atl_step_mode("nvtx:", &name), ATL_STEP_BAD);
    ck_assert_int_eq(atl_step_mode("syncs", &name), ATL_STEP_BAD);
    char mode[ATL_STEP_NAME_MAX + 8] = "nvtx:";
    memset(mode + 5, 'n', ATL_STEP_NAME_MAX - 1);
    mode[5 + ATL_STEP_NAME_MAX - 1] = '\0';
    ck_assert_int_eq(atl_step_mode(mode, &name), ATL_STEP_NVTX);
    strcat(mode, "n");
    ck_assert_int_eq(atl_step_mode(mode, &name), ATL_STEP_BAD);
    /* and the settings' check says the same */
    ck_assert_ptr_nonnull(atl_config_check(atl_config_find("ATLAS_STEP"), mode));
}
END_TEST

/* ATLAS_DIFF_IGNORE: the entry that cannot parse is named; more entries
 * than are kept is said, never dropped quietly. */
START_TEST(diff_ignore_checked)
{
    struct atl_config c;
    ck_assert_int_eq(parse1(&c, "ATLAS_DIFF_IGNORE=scale,axpy:arg2,void k<int>(int*):arg10"), 0);
    ck_assert_int_eq(parse1(&c, "ATLAS_DIFF_IGNORE=ns::kern,ns::kern:arg1"), 0);
    const struct atl_cfg_var *v = &atl_cfg_vars[atl_config_find("ATLAS_DIFF_IGNORE")];
    expect_rejected(v, "scale,axpy:argx", "entry 2 'axpy:argx' is not KERNEL or KERNEL:argN");
    expect_rejected(v, "scale,,axpy", "entry 2 '' is an empty entry");
    expect_rejected(v, "scale:arg1x,axpy", "entry 1 'scale:arg1x' is not KERNEL or KERNEL:argN");
    /* a value of one entry is that entry: shown once, not twice */
    expect_rejected(v, "scale:arg1x", "not KERNEL or KERNEL:argN; using none");
    expect_rejected(v, "scale:", "not KERNEL or KERNEL:argN; using none");
    expect_rejected(v, ":arg1", "not KERNEL or KERNEL:argN; using none");
    char many[400] = "";
    for (int i = 0; i < ATL_IGNORE_MAX; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%sk%d", i ? "," : "", i);
    char kv[450];
    snprintf(kv, sizeof kv, "ATLAS_DIFF_IGNORE=%s", many);
    ck_assert_int_eq(parse1(&c, kv), 0);
    strcat(kv, ",one_more");
    ck_assert_int_eq(parse1(&c, kv), 1);
    ck_assert_ptr_nonnull(strstr(lines[0], "...': more than 32 entries; using none"));
    ck_assert_ptr_null(c.diff_ignore);
}
END_TEST

START_TEST(expand_percent_and_overflow)
{
    char out[64];
    ck_assert_int_eq(atl_config_expand_path("a%%p-%%%%", out, sizeof out), 0);
    ck_assert_str_eq(out, "a%p-%%");
    /* a name that does not fit is refused, not cut */
    ck_assert_int_eq(atl_config_expand_path("0123456789", out, 10), -1);
    ck_assert_int_eq(atl_config_expand_path("012345678", out, 10), 0);
    ck_assert_int_eq(atl_config_expand_path("0123456%p", out, 10), -1);
}
END_TEST

/* A rank variable that is not a number is reported (the next one is used). */
START_TEST(rank_problem_named)
{
    char line[200], out[32];
    unsetenv("LOCAL_RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("SLURM_PROCID");
    setenv("RANK", "7", 1);
    ck_assert_int_eq(atl_config_rank_problem(line, sizeof line), 0);
    setenv("RANK", "abc\n", 1);
    ck_assert_int_eq(atl_config_rank_problem(line, sizeof line), 1);
    ck_assert_str_eq(line, "ignoring RANK='abc?': not a rank (a number); %r uses 0");
    setenv("LOCAL_RANK", "2", 1);
    ck_assert_int_eq(atl_config_rank_problem(line, sizeof line), 1);
    ck_assert_str_eq(line, "ignoring RANK='abc?': not a rank (a number); %r uses 2");
    atl_config_expand_path("%r", out, sizeof out);
    ck_assert_str_eq(out, "2");
    unsetenv("RANK");
    unsetenv("LOCAL_RANK");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, every_variable_rejects_garbage);
    tcase_add_test(tc, valid_values_accepted);
    tcase_add_test(tc, step_modes_one_rule);
    tcase_add_test(tc, defaults_without_environment);
    tcase_add_test(tc, unknown_names_suggest);
    tcase_add_test(tc, values_shown_safely);
    tcase_add_test(tc, expand_pid_and_rank);
    tcase_add_test(tc, numbers_decimal_or_hex);
    tcase_add_test(tc, wrong_case_suggests);
    tcase_add_test(tc, step_checked);
    tcase_add_test(tc, kernel_regex_bounded);
    tcase_add_test(tc, diff_ignore_checked);
    tcase_add_test(tc, expand_percent_and_overflow);
    tcase_add_test(tc, rank_problem_named);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
