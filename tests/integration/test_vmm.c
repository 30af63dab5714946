/*
 * VMM allocations (cuMemCreate, cuMemMap, ...) on the ledger, against the
 * fake driver: tests/targets/vmm_prog.c allocates the way JAX, NCCL and
 * PyTorch's expandable segments do, and each test checks what the leak
 * list, the failed-allocation report and the red-zone notes say about it.
 */
#include "run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG BUILD_DIR "/tests/vmm_prog"

static void vmm_run(struct run_result *r, const char *scenario, const char *path,
                    const char *const env[])
{
    char *argv[] = {PROG, (char *)scenario, (char *)path, NULL};
    run_target(r, argv, env, 1);
    ck_assert_msg(r->status == 0, "%s exited %d; stderr:\n%s\nlog:\n%s", scenario, r->status,
                  r->err, r->log);
    if (strcmp(scenario, "fault") != 0)
        HAS(r->out, "ok\n");
}

static const char *const leaks_env[] = {"ATLAS_LEAKS=1", "ATLAS_STATS=1", NULL};

/* Create, reserve, map twice, write through one mapping, read through the
 * other, unmap, release: nothing leaks, and the program's bytes moved. */
START_TEST(mapped_and_released_is_no_leak)
{
    struct run_result r;
    vmm_run(&r, "clean", NULL, leaks_env);
    HAS(r.out, "read back: through a mapped range\n");
    HAS(r.log, "leaks: none: every driver allocation was freed");
    struct stat_row row;
    ck_assert(stats_row(r.log, "cuMemCreate", &row));
    ck_assert_uint_eq(row.calls, 2);
    ck_assert(stats_row(r.log, "cuMemMap", &row));
    ck_assert_uint_eq(row.calls, 4);
    run_free(&r);
}
END_TEST

static void leak_listed(const char *log)
{
    HAS(log, "leaks: 1 allocation never freed, 4194304 bytes in total");
    HAS(log, "leaks:   alloc#2 4194304 bytes through cuMemCreate (handle 0x");
    HAS(log, "), allocated at vmm_create (");
    HASNT(log, "leaks:   alloc#1 ");
}

START_TEST(unreleased_handle_is_a_leak)
{
    struct run_result r;
    vmm_run(&r, "leak", NULL, leaks_env);
    leak_listed(r.log);
    run_free(&r);
}
END_TEST

/* Resolved as cudart does, through cuGetProcAddress: the same books. */
START_TEST(resolved_through_cuGetProcAddress)
{
    struct run_result r;
    vmm_run(&r, "leak", "gpa", leaks_env);
    leak_listed(r.log);
    struct stat_row row;
    ck_assert(stats_row(r.log, "cuMemCreate", &row));
    ck_assert_uint_eq(row.gpa, 2);
    ck_assert_uint_eq(row.got_gpa, 1);
    ck_assert(stats_row(r.log, "cuMemMap", &row));
    ck_assert_uint_eq(row.gpa, 1);
    ck_assert(stats_row(r.log, "cuMemRelease", &row));
    ck_assert_uint_eq(row.gpa, 1);
    run_free(&r);
}
END_TEST

/* A cuMemCreate out of memory: the warning counts the bytes held through
 * cuMemCreate and lists them among the largest; the error is passed on. */
START_TEST(oom_report_counts_vmm_bytes)
{
    struct run_result r;
    vmm_run(&r, "oom", NULL, leaks_env);
    HAS(r.out, "cuMemCreate -> 2\n");
    HAS(r.log, "alloc failed: alloc#3 cuMemCreate bytes=2097152 status=CUDA_ERROR_OUT_OF_MEMORY");
    HAS(r.log, " live=2 (67112960 bytes, 67108864 through cuMemCreate)");
    HAS(r.log,
        "alloc failed:   largest live: alloc#1 67108864 bytes through cuMemCreate (handle 0x");
    HAS(r.log, "alloc failed:   largest live: alloc#2 4096 bytes at 0x");
    HAS(r.log, "leaks: none");
    run_free(&r);
}
END_TEST

START_TEST(redzone_says_once_vmm_is_unguarded)
{
    static const char *const env[] = {"ATLAS_REDZONE=64", "ATLAS_LOG_LEVEL=info", NULL};
    struct run_result r;
    vmm_run(&r, "clean", NULL, env);
    HAS(r.out, "read back: through a mapped range\n");
    HAS(r.log, "redzone: 2097152 bytes through cuMemCreate carry no red zone (alloc#1");
    ck_assert_int_eq(count_lines(r.log, "carry no red zone"), 1);
    HAS(r.log, "redzone: 0 overruns found in 0 guarded allocations");
    run_free(&r);
}
END_TEST

/* A pointer into a mapping is named after the physical allocation in the
 * fault report (alloc#N+0xOFF), as cuMemAlloc pointers are. */
START_TEST(pointer_into_a_mapping_is_named)
{
    struct run_result r;
    vmm_run(&r, "fault", NULL, leaks_env);
    HAS(r.out, "sync returned 700\n");
    HAS(r.log, "fault:     args (its first launch since the last good sync): p0=alloc#1+0x40(of "
               "2097152)\n");
    run_free(&r);
}
END_TEST

/* Without any feature on, the calls reach the driver untouched. */
START_TEST(passes_through_when_idle)
{
    struct run_result r;
    vmm_run(&r, "clean", NULL, NULL);
    HAS(r.out, "read back: through a mapped range\n");
    HASNT(r.log, "leaks");
    run_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vmm");
    TCase *tc = tcase_create("vmm");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, mapped_and_released_is_no_leak);
    tcase_add_test(tc, unreleased_handle_is_a_leak);
    tcase_add_test(tc, resolved_through_cuGetProcAddress);
    tcase_add_test(tc, oom_report_counts_vmm_bytes);
    tcase_add_test(tc, redzone_says_once_vmm_is_unguarded);
    tcase_add_test(tc, pointer_into_a_mapping_is_named);
    tcase_add_test(tc, passes_through_when_idle);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
