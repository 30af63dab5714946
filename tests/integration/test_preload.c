/*
 * The interposer under real resolution paths, against the fake driver:
 * (a) linked, (b) dlopen+dlsym, (c) cuGetProcAddress_v2 with flags 0 and
 * per-thread-default-stream, asking for cuGetProcAddress itself, (d) eight
 * threads at once. Each run asserts exact counts: for every hooked symbol,
 * atlastrace counted exactly the calls the driver received, on the path the
 * program used, and the numbers the workload is known to make.
 */
#include "run.h"

#include "../targets/gpa_resolve.h"
#include "../targets/workload.h"

#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T(name) BUILD_DIR "/tests/" name

static const char *const hook_names[] = {
#define ATL_HOOK(sym, kind, flags) #sym,
#include "../../hooks/hooks.def"
#undef ATL_HOOK
};
#define NHOOKS (sizeof hook_names / sizeof hook_names[0])

enum { LINKED, DLSYM, GPA };

/* Every call the driver saw went through exactly one of our wrappers, and
 * each on `path` (resolvers excepted: a program fetches the first one with
 * dlsym). */
static void assert_complete(const struct run_result *r, int path)
{
    int seen = 0;
    for (size_t i = 0; i < NHOOKS; i++) {
        const char *fn = hook_names[i];
        struct stat_row row;
        stats_row(r->log, fn, &row);
        unsigned long long driver = fake_count(r->out, fn);
        ck_assert_msg(row.calls == driver, "%s: atlastrace counted %llu calls, the driver saw %llu",
                      fn, row.calls, driver);
        if (strncmp(fn, "cuGetProcAddress", 16) == 0)
            continue;
        unsigned long long on_path = path == LINKED  ? row.linked
                                     : path == DLSYM ? row.dlsym
                                                     : row.gpa;
        ck_assert_msg(on_path == row.calls, "%s: %llu of %llu calls on the expected path", fn,
                      on_path, row.calls);
        seen += driver > 0;
    }
    ck_assert_int_ge(seen, 8);
}

static unsigned long long calls_of(const struct run_result *r, const char *fn)
{
    struct stat_row row;
    stats_row(r->log, fn, &row);
    return row.calls;
}

static void run_ok(struct run_result *r, char *const argv[], const char *const env[])
{
    run_target(r, argv, env, 1);
    ck_assert_msg(r->status == 0, "%s exited %d; stderr:\n%s\nlog:\n%s", argv[0], r->status, r->err,
                  r->log);
    ck_assert_msg(strstr(r->out, "ok\n") != NULL, "no ok from %s", argv[0]);
}

static const char *const stats_env[] = {"ATLAS_STATS=1", NULL};

START_TEST(linked)
{
    char *argv[] = {T("tp_linked"), NULL};
    struct run_result r;
    run_ok(&r, argv, stats_env);
    assert_complete(&r, LINKED);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel"), WL_LAUNCHES + 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemAlloc_v2"), 3);
    ck_assert_uint_eq(calls_of(&r, "cuMemFree_v2"), 2);
    ck_assert_uint_eq(calls_of(&r, "cuMemcpyHtoD_v2"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemcpyDtoH_v2"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemsetD32Async"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuStreamSynchronize"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuCtxSynchronize"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuModuleGetFunction"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuModuleLoadData"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel_ptsz"), 0);
    run_free(&r);
}
END_TEST

START_TEST(linked_per_thread)
{
    char *argv[] = {T("tp_linked_ptds"), NULL};
    struct run_result r;
    run_ok(&r, argv, stats_env);
    assert_complete(&r, LINKED);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel_ptsz"), WL_LAUNCHES + 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemcpyHtoD_v2_ptds"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemcpyDtoH_v2_ptds"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemsetD32Async_ptsz"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuStreamSynchronize_ptsz"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel"), 0);
    ck_assert_uint_eq(calls_of(&r, "cuMemcpyHtoD_v2"), 0);
    run_free(&r);
}
END_TEST

START_TEST(dlsym_path)
{
    char *argv[] = {T("tp_dlsym"), NULL};
    struct run_result r;
    run_ok(&r, argv, stats_env);
    assert_complete(&r, DLSYM);
    struct stat_row row;
    ck_assert(stats_row(r.log, "cuLaunchKernel", &row));
    ck_assert_uint_eq(row.dlsym, WL_LAUNCHES + 1);
    ck_assert_uint_eq(row.got_dlsym, 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemAlloc_v2"), 3);
    ck_assert_uint_eq(calls_of(&r, "cuCtxSynchronize"), 1);
    run_free(&r);
}
END_TEST

START_TEST(gpa_default)
{
    char *argv[] = {T("tp_gpa"), "default", NULL};
    struct run_result r;
    run_ok(&r, argv, stats_env);
    assert_complete(&r, GPA);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel"), WL_LAUNCHES + 1);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel_ptsz"), 0);
    ck_assert_uint_eq(calls_of(&r, "cuMemAlloc_v2"), 3);
    ck_assert_uint_eq(calls_of(&r, "cuMemcpyHtoD_v2"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuCtxSynchronize"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuCtxSynchronize_v2"), 0);
    /* the resolver itself came from dlsym, once per name asked */
    struct stat_row row;
    ck_assert(stats_row(r.log, "cuGetProcAddress_v2", &row));
    ck_assert_uint_eq(row.dlsym, GPA_CALLS);
    ck_assert_uint_eq(row.got_dlsym, 1);
    run_free(&r);
}
END_TEST

START_TEST(gpa_per_thread)
{
    char *argv[] = {T("tp_gpa"), "ptds", NULL};
    struct run_result r;
    run_ok(&r, argv, stats_env);
    assert_complete(&r, GPA);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel_ptsz"), WL_LAUNCHES + 1);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel"), 0);
    ck_assert_uint_eq(calls_of(&r, "cuMemcpyHtoD_v2_ptds"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemcpyDtoH_v2_ptds"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemsetD32Async_ptsz"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuStreamSynchronize_ptsz"), 1);
    ck_assert_uint_eq(calls_of(&r, "cuMemAlloc_v2"), 3);
    run_free(&r);
}
END_TEST

START_TEST(gpa_self)
{
    char *argv[] = {T("tp_gpa"), "ptds", "self", NULL};
    struct run_result r;
    run_ok(&r, argv, stats_env);
    assert_complete(&r, GPA);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel_ptsz"), WL_LAUNCHES + 1);
    /* one call through dlsym fetched the resolver; the others (GPA_CALLS)
     * went through the resolver it returned, which must have been ours */
    struct stat_row row;
    ck_assert(stats_row(r.log, "cuGetProcAddress_v2", &row));
    ck_assert_uint_eq(row.dlsym, 1);
    ck_assert_uint_eq(row.gpa, GPA_CALLS);
    ck_assert_uint_eq(row.got_gpa, 1);
    run_free(&r);
}
END_TEST

START_TEST(eight_threads)
{
    char *argv[] = {T("tp_threads"), NULL};
    struct run_result r;
    run_ok(&r, argv, stats_env);
    assert_complete(&r, GPA);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel"), 4 * WL_LAUNCHES);
    ck_assert_uint_eq(calls_of(&r, "cuLaunchKernel_ptsz"), 4 * WL_LAUNCHES);
    ck_assert_uint_eq(calls_of(&r, "cuMemAlloc_v2"), 16);
    ck_assert_uint_eq(calls_of(&r, "cuMemFree_v2"), 16);
    run_free(&r);
}
END_TEST

/* Every hooked symbol, called once through dlsym: each wrapper reached the
 * driver's function of its own exact variant (the driver counts each symbol
 * separately), was counted once, and returned the driver's own answer (the
 * output, which prints every return code, is the same without us). */
START_TEST(every_hook_forwards_to_its_own_variant)
{
    char *argv[] = {T("tp_every"), NULL};
    struct run_result with, without;
    run_target(&with, argv, stats_env, 1);
    run_target(&without, argv, NULL, 0);
    ck_assert_int_eq(with.status, 0);
    ck_assert_int_eq(without.status, 0);
    ck_assert_str_eq(with.out, without.out);
    for (size_t i = 0; i < NHOOKS; i++) {
        const char *fn = hook_names[i];
        struct stat_row row;
        stats_row(with.log, fn, &row);
        unsigned long long driver = fake_count(with.out, fn);
        /* the setup calls cuCtxSetCurrent and friends, which are not hooked */
        ck_assert_msg(driver == 1, "%s: the driver saw %llu calls, want 1", fn, driver);
        ck_assert_msg(row.calls == 1 && row.dlsym == 1, "%s: counted %llu (dlsym %llu), want 1", fn,
                      row.calls, row.dlsym);
    }
    run_free(&with);
    run_free(&without);
}
END_TEST

/* NVTX loads its injection library with dlopen, and so does the in-process
 * A/B benchmark: our static TLS must fit what glibc keeps for that. */
START_TEST(loads_with_dlopen)
{
    void *h = dlopen(BUILD_DIR "/libatlastrace.so", RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
}
END_TEST

/* The program's own output is byte-identical with and without the preload. */
START_TEST(output_unchanged)
{
    static const char *const progs[][3] = {
        {"tp_linked", NULL}, {"tp_linked_ptds", NULL}, {"tp_dlsym", NULL},
        {"tp_gpa", "ptds"},  {"tp_threads", NULL},
    };
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/tests/%s", BUILD_DIR, progs[i][0]);
        char *argv[] = {path, (char *)progs[i][1], NULL};
        struct run_result with, without;
        run_target(&with, argv, stats_env, 1);
        run_target(&without, argv, NULL, 0);
        ck_assert_int_eq(with.status, 0);
        ck_assert_int_eq(without.status, 0);
        ck_assert_str_eq(with.out, without.out);
        ck_assert_str_eq(with.err, without.err);
        run_free(&with);
        run_free(&without);
    }
}
END_TEST

/* With no setting on, nothing of ours is printed. */
START_TEST(silent_by_default)
{
    char *argv[] = {T("tp_gpa"), "ptds", "self", NULL};
    struct run_result r;
    run_ok(&r, argv, NULL);
    ck_assert_str_eq(r.log, "");
    ck_assert_str_eq(r.err, "");
    run_free(&r);
}
END_TEST

/* A program that never touches CUDA: nothing of ours, same exit status,
 * even with settings (valid and bogus) in the environment. */
START_TEST(non_cuda_program)
{
    char *argv[] = {"/bin/ls", "/", NULL};
    char *argv_missing[] = {"/bin/ls", "/no/such/dir", NULL};
    static const char *const env[] = {"ATLAS_STATS=1", "ATLAS_BOGUS=1", NULL};
    struct run_result with, without;
    run_target(&with, argv, env, 1);
    run_target(&without, argv, NULL, 0);
    ck_assert_int_eq(with.status, without.status);
    ck_assert_str_eq(with.out, without.out);
    ck_assert_str_eq(with.err, "");
    ck_assert_str_eq(with.log, "");
    run_free(&with);
    run_free(&without);
    run_target(&with, argv_missing, env, 1);
    run_target(&without, argv_missing, NULL, 0);
    ck_assert_int_ne(with.status, 0);
    ck_assert_int_eq(with.status, without.status);
    ck_assert_str_eq(with.err, without.err);
    run_free(&with);
    run_free(&without);
}
END_TEST

/* No libcuda.so.1 on the machine: the program sees exactly what it would
 * without us. */
START_TEST(no_driver)
{
    char *argv[] = {T("tp_dlsym"), NULL};
    static const char *const env[] = {"LD_LIBRARY_PATH=/nonexistent", "ATLAS_STATS=1", NULL};
    struct run_result with, without;
    run_target(&with, argv, env, 1);
    run_target(&without, argv, env, 0);
    ck_assert_int_eq(with.status, 1);
    ck_assert_int_eq(with.status, without.status);
    ck_assert_str_eq(with.out, without.out);
    ck_assert_str_eq(with.err, without.err);
    ck_assert_str_eq(with.log, "");
    run_free(&with);
    run_free(&without);
}
END_TEST

/* Bad settings: one clear line each, the default used, the program runs on. */
START_TEST(bad_settings)
{
    char *argv[] = {T("tp_gpa"), "ptds", NULL};
    static const char *const env[] = {"ATLAS_STATS=abc", "ATLAS_LOG_LEVEL=loud", "ATLAS_STTS=1",
                                      NULL};
    struct run_result r, plain;
    run_ok(&r, argv, env);
    run_target(&plain, argv, NULL, 0);
    ck_assert_str_eq(r.out, plain.out);
    ck_assert_int_eq(count_lines(r.log, "ignoring ATLAS_STATS='abc': not a boolean"), 1);
    ck_assert_int_eq(count_lines(r.log, "; using 0"), 1);
    ck_assert_int_eq(
        count_lines(r.log,
                    "ignoring ATLAS_LOG_LEVEL='loud': not one of the accepted values; using warn"),
        1);
    ck_assert_int_eq(count_lines(r.log, "unknown setting ATLAS_STTS; did you mean ATLAS_STATS?"),
                     1);
    /* the default (no stats) was used */
    ck_assert_int_eq(count_lines(r.log, "stats:"), 0);
    ck_assert_int_eq(count_lines(r.log, "atlas["), 3);
    run_free(&r);
    run_free(&plain);
}
END_TEST

/* ATLAS_LOG with %p names a file per process; reports land there. In a
 * directory of this run's own, so a file left by another run (or a run in
 * parallel) can neither pass nor fail the test. */
START_TEST(log_file_pid)
{
    char dir[] = "/tmp/atlas-logtest-XXXXXX";
    ck_assert(mkdtemp(dir) != NULL);
    char setting[128];
    snprintf(setting, sizeof setting, "ATLAS_LOG=%s/log-%%p.log", dir);
    char *argv[] = {T("tp_linked"), NULL};
    const char *env[] = {"ATLAS_STATS=1", setting, NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    /* exactly one file, named after a PID that is not ours */
    DIR *d = opendir(dir);
    ck_assert(d != NULL);
    char name[512] = "";
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        files++;
        snprintf(name, sizeof name, "%s/%s", dir, e->d_name);
        long pid = 0;
        char tail[8] = "";
        ck_assert_msg(sscanf(e->d_name, "log-%ld%7s", &pid, tail) == 2 && !strcmp(tail, ".log") &&
                          pid > 0 && pid != (long)getpid(),
                      "unexpected file %s", e->d_name);
    }
    closedir(d);
    ck_assert_int_eq(files, 1);
    FILE *f = fopen(name, "r");
    ck_assert(f != NULL);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, f))
        rows += strstr(line, " stats: cuLaunchKernel ") != NULL;
    fclose(f);
    unlink(name);
    rmdir(dir);
    ck_assert_int_eq(rows, 1);
    run_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("preload");
    TCase *tc = tcase_create("paths");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, linked);
    tcase_add_test(tc, linked_per_thread);
    tcase_add_test(tc, dlsym_path);
    tcase_add_test(tc, gpa_default);
    tcase_add_test(tc, gpa_per_thread);
    tcase_add_test(tc, gpa_self);
    tcase_add_test(tc, eight_threads);
    tcase_add_test(tc, every_hook_forwards_to_its_own_variant);
    tcase_add_test(tc, loads_with_dlopen);
    tcase_add_test(tc, output_unchanged);
    tcase_add_test(tc, silent_by_default);
    tcase_add_test(tc, non_cuda_program);
    tcase_add_test(tc, no_driver);
    tcase_add_test(tc, bad_settings);
    tcase_add_test(tc, log_file_pid);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
