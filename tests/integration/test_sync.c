/*
 * Syncs, copies and faults, against the fake driver: the program
 * (tests/targets/sync_target.c) knows exactly how many copies of each kind it
 * made, which kernel faulted, and which look-up failed; the report must say
 * the same.
 */
#include "run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TARGET BUILD_DIR "/tests/sync_target"

static void run_mode(struct run_result *r, const char *mode, const char *const env[])
{
    char *argv[] = {TARGET, (char *)mode, NULL};
    run_target(r, argv, env, 1);
    ck_assert_msg(r->status == 0, "%s %s exited %d; out:\n%s\nlog:\n%s", TARGET, mode, r->status,
                  r->out, r->log);
    ck_assert_msg(strstr(r->out, "ok\n") != NULL, "no ok; out:\n%s", r->out);
}

/* The line after the line that contains `needle`. */
static const char *next_line(const char *text, const char *needle)
{
    const char *p = strstr(text, needle);
    if (!p)
        return "";
    p = strchr(p, '\n');
    return p ? p + 1 : "";
}

START_TEST(each_kind_counted_exactly)
{
    static const char *const env[] = {"ATLAS_D2H_TRACE=4", NULL};
    struct run_result r;
    run_mode(&r, "copies", env);
    /* 3 cuMemcpyDtoH, 2 cuMemcpy device->pageable, one 2D, one 3D (unified
     * addressing), 6 async into pageable memory; the async ones into pinned
     * memory, the host-to-device and device-to-device copies not at all */
    HAS(r.log, "d2h-summary: blocking_d2h=13 bytes=440 dtoh=3 memcpy=2 peer=0 2d=1 3d=1 "
               "async_d2h_pageable=6\n");
    HAS(r.log, "hidden_syncs=8 ");
    HAS(r.log, "d2h_pageable=6 h2d_pageable=2 h2d_pageable_bytes=256\n");
    HAS(r.log, "d2h-summary: host_syncs=4 stream=2 ctx=1 event=1\n");
    /* the program reads the same counts through the API */
    HAS(r.out, "api blocking_d2h=13 hidden_h2d=2 stream_syncs=2\n");
    run_free(&r);
}
END_TEST

/* Traced, an async copy's host end is asked about once for the blocking
 * count and the step trace's pageable mark together: 20 copies, 20 queries
 * [40 when each asked]; counting alone asks as often. */
START_TEST(host_end_asked_once)
{
    static const char *const traced[] = {"ATLAS_TRACE=1", NULL};
    struct run_result r;
    run_mode(&r, "hostcopies", traced);
    HAS(r.out, "pointer queries: 20\n");
    run_free(&r);
    static const char *const counting[] = {"ATLAS_D2H_TRACE=1", NULL};
    run_mode(&r, "hostcopies", counting);
    HAS(r.out, "pointer queries: 20\n");
    run_free(&r);
}
END_TEST

START_TEST(nth_backtrace_and_sites)
{
    static const char *const env[] = {"ATLAS_D2H_TRACE=4", NULL};
    struct run_result r;
    run_mode(&r, "copies", env);
    /* the 4th blocking copy is the first generic cuMemcpy: its caller named */
    HAS(r.log, "d2h-trace: blocking device-to-host copy #4 kind=memcpy bytes=32 backtrace:\n");
    const char *frame = next_line(r.log, "copy #4 kind=memcpy");
    ck_assert_msg(
        strncmp(strstr(frame, "#0") ? strstr(frame, "#0") : "", "#0 copy_generic_d2h (", 21) == 0,
        "first frame of the backtrace is not the caller: %s", frame);
    ck_assert_int_eq(count_lines(r.log, "backtrace:"), 1);
    /* sites, most frequent first; pageable ones say so */
    HAS(r.log, "d2h-summary: site=1 count=5 bytes=80 kinds=async-d2h-pageable=5 (pageable: "
               "hidden sync) at copy_async_pageable (");
    HAS(r.log, "d2h-summary: site=2 count=3 bytes=192 kinds=dtoh=3 at copy_dtoh (");
    HAS(r.log, "kinds=memcpy=2 at copy_generic_d2h (");
    HAS(r.log, "kinds=async-h2d-pageable=1 (pageable: hidden sync) at upload_async (");
    HAS(r.log, "kinds=ctx-sync=1 at mode_copies (");
    /* async copies into pinned memory do not block: never a site */
    ck_assert_msg(!strstr(r.log, "copy_async_pinned"), "pinned copies reported:\n%s", r.log);
    run_free(&r);
}
END_TEST

START_TEST(counting_without_trace_is_silent)
{
    static const char *const env[] = {"ATLAS_D2H_TRACE", NULL};
    struct run_result r;
    run_mode(&r, "copies", env);
    HAS(r.out, "api blocking_d2h=13 hidden_h2d=2 stream_syncs=2\n");
    ck_assert_msg(!strstr(r.log, "d2h-"), "report without ATLAS_D2H_TRACE:\n%s", r.log);
    run_free(&r);
}
END_TEST

START_TEST(running_count)
{
    static const char *const env[] = {"ATLAS_D2H_TRACE=0", NULL};
    struct run_result r;
    run_mode(&r, "many", env);
    HAS(r.log, "d2h-trace: 10000 blocking device-to-host copies so far\n");
    HAS(r.log, "d2h-trace: 20000 blocking device-to-host copies so far\n");
    ck_assert_int_eq(count_lines(r.log, "so far"), 2);
    ck_assert_int_eq(count_lines(r.log, "backtrace:"), 0); /* 0: no backtrace */
    HAS(r.log, "d2h-summary: blocking_d2h=25000 bytes=1600000 dtoh=25000 ");
    HAS(r.log, "d2h-summary: site=1 count=25000 bytes=1600000 kinds=dtoh=25000 at copy_dtoh (");
    run_free(&r);
}
END_TEST

START_TEST(latch_once_with_recent_launches)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS", NULL};
    struct run_result r;
    run_mode(&r, "fault", env);
    /* the program sees the driver's errors unchanged */
    HAS(r.out, "sync returned 700\ndtoh returned 700\nstream sync returned 700\n");
    ck_assert_msg(!strstr(r.out, "launch "), "a launch failed without debug sync:\n%s", r.out);
    /* reported once, by the first call that saw it */
    ck_assert_int_eq(count_lines(r.log, "fault: error="), 1);
    HAS(r.log, "fault: error=CUDA_ERROR_ILLEGAL_ADDRESS code=700 first_seen_by=cuCtxSynchronize "
               "site=mode_fault (");
    /* the culprit is among the recent launches, with its shape */
    HAS(r.log, "fault:   launch=301 kernel=oob_write(float*) grid=(4,2,1) block=(128,1,1) "
               "shmem=512 stream=(nil) via=cuLaunchKernel\n");
    /* the newest 16, a run of identical launches on one line: 291..300, 301, 302..306 */
    HAS(r.log, "fault:   x10 launch=291..300 kernel=axpy_good(float*) ");
    HAS(r.log, "fault:   x5 launch=302..306 kernel=axpy_good(float*) ");
    ck_assert_int_eq(count_lines(r.log, "launch=") - count_lines(r.log, "suspect x"), 3);
    ck_assert_int_eq(count_lines(r.log, "debug-sync"), 0);
    run_free(&r);
}
END_TEST

/* The first call to see the fault is a synchronous cuMemcpyDtoH, which the
 * hooks count on their light path: latched there, once, and passed back. */
START_TEST(latch_first_seen_by_a_copy)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS", "ATLAS_D2H_TRACE", NULL};
    struct run_result r;
    run_mode(&r, "fault_dtoh", env);
    HAS(r.out, "dtoh returned 700\nsync returned 700\nstream sync returned 700\n");
    ck_assert_int_eq(count_lines(r.log, "fault: error="), 1);
    HAS(r.log, "fault: error=CUDA_ERROR_ILLEGAL_ADDRESS code=700 first_seen_by=cuMemcpyDtoH_v2 ");
    HAS(r.log, "fault:   launch=301 kernel=oob_write(float*) ");
    run_free(&r);
}
END_TEST

/* ATLAS_LAUNCH_RING=0: launches stay on the idle path; the fault is still
 * reported once, without the launches before it. */
START_TEST(latch_without_ring)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS", "ATLAS_LAUNCH_RING=0", NULL};
    struct run_result r;
    run_mode(&r, "fault", env);
    HAS(r.out, "sync returned 700\ndtoh returned 700\nstream sync returned 700\n");
    ck_assert_int_eq(count_lines(r.log, "fault: error="), 1);
    ck_assert_int_eq(count_lines(r.log, "fault:   launch="), 0);
    HAS(r.log, "no kernel launch was seen before it (ATLAS_LAUNCH_RING=0: launches are not "
               "recorded)");
    run_free(&r);
}
END_TEST

START_TEST(debug_sync_names_the_culprit)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS=1", NULL};
    struct run_result r;
    run_mode(&r, "fault", env);
    /* the launch itself returns the fault: the 300 before it were good */
    HAS(r.out, "launch 300 returned 700\n");
    ck_assert_int_eq(count_lines(r.log, "debug-sync: launch failed"), 1);
    HAS(r.log, "debug-sync: launch failed: kernel=oob_write(float*) grid=(4,2,1) block=(128,1,1) "
               "shmem=512 stream=(nil) launch=301 via=cuLaunchKernel "
               "error=CUDA_ERROR_ILLEGAL_ADDRESS code=700: ");
    HAS(next_line(r.log, "debug-sync: launch failed"), "debug-sync:   #0 mode_fault (");
    /* the later failing calls are not reported again */
    ck_assert_int_eq(count_lines(r.log, "fault: error="), 0);
    HAS(r.out, "sync returned 700\n");
    run_free(&r);
}
END_TEST

/* The flight recorder: the culprit 300 launches before the sync is named
 * first, with no setting, among the launches since the last good sync. */
START_TEST(suspects_name_the_rare_kernel_first)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS", "ATLAS_LEAKS=1", NULL};
    struct run_result r;
    run_mode(&r, "suspects", env);
    HAS(r.out, "stream syncs seen by the driver=0\nsync returned 700\n");
    ck_assert_int_eq(count_lines(r.log, "fault: error="), 1);
    /* the 50 launches before the good sync are not suspects */
    HAS(r.log, "fault: 601 suspect launches since the last good sync (a context synchronisation "
               "after launch 50); by kernel, rarest first: oob_write x1, axpy_good x600\n");
    HAS(r.log, "fault: streams of the suspects (launches): (nil) (601)\n");
    HAS(r.log, "fault:   rare suspect x1, newest: launch=351 kernel=oob_write(float*) "
               "grid=(4,2,1) block=(128,1,1) shmem=0 stream=(nil) via=cuLaunchKernel\n");
    /* its argument, resolved in the ledger */
    HAS(r.log, "fault:     args (its first launch since the last good sync): p0=alloc#1+0x40(of "
               "4096)\n");
    HAS(r.log, "re-run with debug sync on the rare suspects only");
    HAS(r.log, "ATLAS_DEBUG_SYNC_KERNELS=oob_write " TARGET " suspects\n");
    ck_assert_msg(!strstr(r.log, "wrapped"), "no suspect was lost:\n%s", r.log);
    /* the newest launches, as before: sixteen launches of one kernel, one line */
    HAS(r.log, "fault: the last 16 launches (all contexts, oldest first):\n");
    ck_assert_int_eq(count_lines(r.log, "fault:   x16 launch=636..651 kernel=axpy_good(float*) "
                                        "grid=(4,2,1) block=(128,1,1) shmem=0 stream=(nil) "
                                        "via=cuLaunchKernel"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "launch=6"), 1);
    run_free(&r);
}
END_TEST

/* A ring smaller than the suspects: the loss is counted, not hidden. */
START_TEST(suspects_lost_to_a_small_ring_are_counted)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS", "ATLAS_LAUNCH_RING=200", NULL};
    struct run_result r;
    run_mode(&r, "suspects", env);
    /* 200 rounds up to 256: the newest 256 of 601 */
    HAS(r.log, "fault: 601 suspect launches since the last good sync (a context synchronisation "
               "after launch 50); by kernel, rarest first: axpy_good x256\n");
    HAS(r.log, "fault: the history wrapped: 345 older suspect launches were lost (not counted "
               "above by kernel; ATLAS_LAUNCH_RING=1024 keeps the newest 256)\n");
    run_free(&r);
}
END_TEST

/* The hint's setting: only launches of the kernels named synchronise, and
 * the faulting launch is named by its own launch. */
START_TEST(debug_sync_of_named_kernels_only)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS=oob_write", NULL};
    struct run_result r;
    run_mode(&r, "suspects", env);
    HAS(r.out, "launch 351 returned 700\nstream syncs seen by the driver=1\n");
    HAS(r.log,
        "debug-sync: launch failed: kernel=oob_write(float*) grid=(4,2,1) block=(128,1,1) "
        "shmem=0 stream=(nil) launch=351 via=cuLaunchKernel error=CUDA_ERROR_ILLEGAL_ADDRESS");
    run_free(&r);
}
END_TEST

/* A fault inside a captured graph: the report lists the graph's kernel
 * nodes, read at instantiation (the graph itself is destroyed by then). */
START_TEST(a_graph_suspect_lists_its_kernel_nodes)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS", NULL};
    struct run_result r;
    run_mode(&r, "graph", env);
    HAS(r.out, "graph launch returned 0\nsync returned 700\n");
    HAS(r.log, "fault: 41 suspect launches since the program started (no context synchronisation "
               "succeeded); by kernel, rarest first: graph@");
    HAS(r.log, " x1, axpy_good x40\n");
    /* the captured launches did not run: the graph launch did */
    HAS(r.log, "fault: 4 launches into capturing streams are not suspects: they did not run (graph "
               "launches run them)\n");
    HAS(r.log, "kernel nodes (of 4 nodes), from its instantiation:\n");
    HAS(r.log, "fault:       node kernel=axpy_good(float*) grid=(2,1,1) block=(64,1,1)\n");
    HAS(r.log, "fault:       node kernel=oob_write(float*) grid=(2,1,1) block=(256,1,1)\n");
    HAS(r.log, "fault:       node kernel=axpy_good(float*) grid=(2,1,1) block=(512,1,1)\n");
    /* only the graph is rare: the hint synchronises graph launches */
    HAS(r.log, "then their kernel nodes listed): LD_PRELOAD=");
    HAS(r.log, " ATLAS_DEBUG_SYNC_KERNELS=1 " TARGET " graph\n");
    run_free(&r);
}
END_TEST

/* Debug sync synchronises a graph launch as a whole and says so. */
START_TEST(debug_sync_of_a_graph_names_its_nodes)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS=1", NULL};
    struct run_result r;
    run_mode(&r, "graph", env);
    HAS(r.out, "graph launch returned 700\n");
    HAS(r.log, "debug-sync: graph launch failed: graph=");
    HAS(r.log, "Graph launches are synchronised as a whole: the fault is inside one of its kernel "
               "nodes\n");
    HAS(r.log, "debug-sync:       node kernel=oob_write(float*) grid=(2,1,1) block=(256,1,1)\n");
    ck_assert_int_eq(count_lines(r.log, "fault: error="), 0);
    run_free(&r);
}
END_TEST

START_TEST(a_bad_debug_sync_value_is_reported_once)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS=oob write", NULL};
    struct run_result r;
    run_mode(&r, "suspects", env);
    HAS(r.out, "stream syncs seen by the driver=0\n");
    ck_assert_int_eq(count_lines(r.log, "ignoring ATLAS_DEBUG_SYNC_KERNELS='oob write': not 0, 1 "
                                        "or a comma-separated list of kernel names"),
                     1);
    run_free(&r);
}
END_TEST

START_TEST(debug_sync_never_inside_a_capture)
{
    static const char *const env[] = {"ATLAS_DEBUG_SYNC_KERNELS=1", NULL};
    struct run_result r;
    run_mode(&r, "capture", env);
    /* the capture survives (a sync would have invalidated it), and only the
     * launch after it was synchronised */
    HAS(r.out, "graph ops=3\n");
    HAS(r.out, "stream syncs seen by the driver=1\n");
    run_free(&r);
}
END_TEST

START_TEST(kernel_audit_table)
{
    static const char *const env[] = {"ATLAS_KERNEL_AUDIT=1", NULL};
    struct run_result r;
    run_mode(&r, "audit", env);
    HAS(r.out, "optional lookup returned 500\n");
    HAS(r.log, "kernel-audit: 3 kernels looked up, 1 look-up failed\n");
    HAS(r.log, "kernel-audit: resolved=yes launches=7 blocks=42 lookups=2 owner=module@");
    HAS(r.log, "kernel-audit: resolved=yes launches=0 blocks=0 lookups=1 owner=module@");
    HAS(r.log, "kernel-audit: resolved=NO(CUDA_ERROR_NOT_FOUND) launches=0 blocks=0 lookups=1 "
               "owner=module@");
    /* where each look-up was made: the optional one from mode_audit */
    HAS(r.log, "lookups=1 owner=module@");
    ck_assert_int_eq(count_lines(r.log, "looked_up_at=setup ("), 2);
    HAS(next_line(r.log, "kernel=oob_write(float*)"), "looked_up_at=mode_audit (");
    HAS(r.log, " kernel=optional_fast_path(float*)\n");
    HAS(r.log, " kernel=axpy_good(float*)\n");
    run_free(&r);
}
END_TEST

START_TEST(no_audit_without_setting)
{
    static const char *const env[] = {"ATLAS_KERNEL_AUDIT", NULL};
    struct run_result r;
    run_mode(&r, "audit", env);
    ck_assert_msg(!strstr(r.log, "kernel-audit"), "audit without the setting:\n%s", r.log);
    run_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sync");
    TCase *tc = tcase_create("sync");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, each_kind_counted_exactly);
    tcase_add_test(tc, nth_backtrace_and_sites);
    tcase_add_test(tc, host_end_asked_once);
    tcase_add_test(tc, counting_without_trace_is_silent);
    tcase_add_test(tc, running_count);
    tcase_add_test(tc, latch_once_with_recent_launches);
    tcase_add_test(tc, latch_without_ring);
    tcase_add_test(tc, latch_first_seen_by_a_copy);
    tcase_add_test(tc, debug_sync_names_the_culprit);
    tcase_add_test(tc, debug_sync_never_inside_a_capture);
    tcase_add_test(tc, suspects_name_the_rare_kernel_first);
    tcase_add_test(tc, suspects_lost_to_a_small_ring_are_counted);
    tcase_add_test(tc, debug_sync_of_named_kernels_only);
    tcase_add_test(tc, a_bad_debug_sync_value_is_reported_once);
    tcase_add_test(tc, a_graph_suspect_lists_its_kernel_nodes);
    tcase_add_test(tc, debug_sync_of_a_graph_names_its_nodes);
    tcase_add_test(tc, kernel_audit_table);
    tcase_add_test(tc, no_audit_without_setting);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
