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

int main(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, every_variable_rejects_garbage);
    tcase_add_test(tc, valid_values_accepted);
    tcase_add_test(tc, defaults_without_environment);
    tcase_add_test(tc, unknown_names_suggest);
    tcase_add_test(tc, values_shown_safely);
    tcase_add_test(tc, expand_pid_and_rank);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
