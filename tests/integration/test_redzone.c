/*
 * Red zones and the allocation ledger, against the fake driver: the target
 * tests/targets/redzone_prog.c overruns its buffers on purpose, and each
 * test checks what a user reads in the report: which allocation, how many
 * bytes at which offsets, where it was allocated, which launch wrote it.
 * The fake loads a host twin of the red-zone kernels when it is given their
 * PTX (tests/fake/fake_redzone.c), so these tests run the queued checks;
 * FAKE_REFUSE_PTX=1 makes it refuse the PTX, for the copy fallback.
 * tests/gpu/redzone covers the kernels themselves on a real GPU.
 */
#include "run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG BUILD_DIR "/tests/redzone_prog"

/* Runs a scenario under the preload with ATLAS_REDZONE=256 plus `extra`. */
static void rz_run(struct run_result *r, const char *scenario, const char *arg,
                   const char *const extra[])
{
    const char *env[16] = {"ATLAS_REDZONE=256"};
    int n = 1;
    for (int i = 0; extra && extra[i] && n < 15; i++)
        env[n++] = extra[i];
    env[n] = NULL;
    char *argv[] = {PROG, (char *)scenario, (char *)arg, NULL};
    run_target(r, argv, env, 1);
    ck_assert_msg(r->status == 0, "%s exited %d; stderr:\n%s\nlog:\n%s", scenario, r->status,
                  r->err, r->log);
    ck_assert_msg(strstr(r->out, "ok\n") != NULL, "no ok from %s", scenario);
}

/* What the program printed under the preload (r) is what it prints without
 * it: the driver's answers reach it unchanged. */
static void same_out_as_plain(const struct run_result *r, const char *scenario)
{
    struct run_result plain;
    char *argv[] = {PROG, (char *)scenario, NULL};
    run_target(&plain, argv, NULL, 0);
    ck_assert_str_eq(r->out, plain.out);
    run_free(&plain);
}

/* The suspects listed in free/sync mode for the two_buffers() scenario:
 * of its 6 launches, the 3 whose first parameter points at alloc#2 (poke
 * once, fill twice), the rarest kernel first, the other 3 ruled out; then
 * the command that re-runs in launch mode on those two kernels. */
static void six_suspects(const char *log, const char *where)
{
    char want[200];
    snprintf(want, sizeof want,
             "redzone: alloc#2 found at %s: 3 of the 6 launches since the last clean check reach "
             "it (a parameter points into it; 3 ruled out), by kernel, rarest first:\n",
             where);
    HAS(log, want);
    HAS(log, "redzone:   x1, newest launch#4 kernel=poke grid=(2,1,1) block=(32,1,1) through "
             "arg0+0x0\n");
    HAS(log, "redzone:   x2, newest launch#6 kernel=fill grid=(1,1,1) block=(64,1,1) through "
             "arg0+0x0\n");
    ck_assert_int_eq(count_lines(log, "redzone:   x"), 2);
    ck_assert(strstr(log, "x1, newest launch#4") < strstr(log, "x2, newest launch#6"));
    HAS(log, "redzone: launch mode names the culprit (a check after each launch of these kernels "
             "names the one that wrote past the end); re-run with it: LD_PRELOAD=/");
    /* the settings in force (the runner's ATLAS_LOG among them), then launch mode on the
     * suspects' kernels (the hint suite pastes it: tests/integration/test_hints.sh) */
    HAS(log, "/libatlastrace.so ATLAS_LOG=");
    HAS(log, " ATLAS_REDZONE=256 ATLAS_REDZONE_CHECK=launch ATLAS_KERNEL='^(poke|fill)$' " PROG
             " over 1\n");
}

START_TEST(overrun_one_byte)
{
    struct run_result r;
    rz_run(&r, "over", "1", NULL);
    HAS(r.log, "redzone overrun: alloc#2 4096 bytes at 0x");
    HAS(r.log, ", allocated at rz_alloc (");
    HAS(r.log, ": 1 byte corrupted at +4096..+4096\n");
    six_suspects(r.log, "cuMemFree_v2");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    HAS(r.log, "redzone: 1 overrun found in 2 guarded allocations");
    /* the frees were checked by kernels queued before them, nothing was
     * copied back; the program's own sync, and each cuMemFree into the
     * quarantine waits for the device, as the driver's does */
    HAS(r.out, "context syncs: 3, copies back: 0\n");
    run_free(&r);
}
END_TEST

START_TEST(overrun_exactly_the_pad)
{
    struct run_result r;
    rz_run(&r, "over", "256", NULL);
    HAS(r.log, "alloc#2 4096 bytes at 0x");
    HAS(r.log, ": 256 bytes corrupted at +4096..+4351 (up to the end of the red zone");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    run_free(&r);
}
END_TEST

/* Past the pad: the whole zone is wrong, and the report says the write may
 * reach further than it can see. */
START_TEST(overrun_beyond_the_pad)
{
    struct run_result r;
    rz_run(&r, "over", "300", NULL);
    HAS(r.log, ": 256 bytes corrupted at +4096..+4351 (up to the end of the red zone: the write "
               "may reach further)");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    run_free(&r);
}
END_TEST

/* A documented limit: a write before the start of a buffer is not seen. */
START_TEST(underrun_not_caught)
{
    struct run_result r;
    rz_run(&r, "before", NULL, NULL);
    HASNT(r.log, "redzone overrun");
    HAS(r.log, "redzone: 0 overruns found in 1 guarded allocation");
    run_free(&r);
}
END_TEST

START_TEST(clean_program_no_report)
{
    /* (the program prints the fake's call counts, which count the
     * quarantine's waits in cuMemFree too) */
    static const char *const env[] = {"ATLAS_REDZONE_QUARANTINE_MB=0", NULL};
    struct run_result r, plain;
    rz_run(&r, "over", "0", env);
    HASNT(r.log, "redzone overrun");
    HAS(r.log, "redzone: 0 overruns found in 2 guarded allocations");
    /* the program sees exactly what it sees without us */
    char *argv[] = {PROG, "over", "0", NULL};
    run_target(&plain, argv, NULL, 0);
    ck_assert_str_eq(r.out, plain.out);
    ck_assert_str_eq(r.err, plain.err);
    run_free(&r);
    run_free(&plain);
}
END_TEST

/* Default mode: the check queued before each free is a dependent launch
 * too (on an sm_90 device), one per guarded free, and finds nothing in a
 * clean program. */
START_TEST(free_checks_are_dependent_launches)
{
    static const char *const env[] = {"RZ_COUNT_DEP=1", NULL};
    struct run_result r;
    rz_run(&r, "over", "0", env);
    HAS(r.out, "dependent launches: 2\n");
    HASNT(r.log, "redzone overrun");
    HAS(r.log, "redzone: 0 overruns found in 2 guarded allocations");
    run_free(&r);
}
END_TEST

START_TEST(bisect_min_idx)
{
    static const char *const all[] = {"ATLAS_LOG_LEVEL=info", NULL};
    static const char *const from3[] = {"ATLAS_LOG_LEVEL=info", "ATLAS_REDZONE_MIN_IDX=3", NULL};
    struct run_result r;
    rz_run(&r, "three", NULL, all);
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 2);
    HAS(r.log, "redzone overrun: alloc#1 4096 bytes");
    HAS(r.log, "redzone overrun: alloc#3 4096 bytes");
    ck_assert_int_eq(count_lines(r.log, "redzone: alloc#"), 3 + 2 /* suspects headers */);
    run_free(&r);
    rz_run(&r, "three", NULL, from3);
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    HAS(r.log, "redzone overrun: alloc#3 4096 bytes");
    HAS(r.log, "redzone: alloc#3 bytes=4096 ptr=0x");
    HASNT(r.log, "redzone: alloc#1 bytes=");
    HASNT(r.log, "redzone: alloc#2 bytes=");
    HAS(r.log, "redzone: 1 overrun found in 1 guarded allocation");
    run_free(&r);
}
END_TEST

START_TEST(trace_idx_backtrace)
{
    static const char *const env[] = {"ATLAS_REDZONE_TRACE_IDX=2", NULL};
    struct run_result r;
    rz_run(&r, "three", NULL, env);
    HAS(r.log, "redzone: alloc#2 bytes=4096 ptr=0x");
    HAS(r.log, " backtrace (ATLAS_REDZONE_TRACE_IDX):\n");
    HAS(r.log, "redzone:   #0 rz_alloc (");
    HAS(r.log, "redzone:   #1 main (");
    ck_assert_int_eq(count_lines(r.log, "backtrace"), 1);
    run_free(&r);
}
END_TEST

START_TEST(check_at_sync)
{
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=sync", "ATLAS_LOG_LEVEL=info", NULL};
    struct run_result r;
    rz_run(&r, "over", "1", env);
    HAS(r.log, "redzone overrun: alloc#2 4096 bytes");
    six_suspects(r.log, "cuCtxSynchronize");
    /* found once, not again at the free */
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    HASNT(r.log, "scan kernel unavailable");
    run_free(&r);
}
END_TEST

/* A driver that refuses the PTX: every check is made with copies, the
 * reports are the same, and that is said once. */
START_TEST(copy_fallback)
{
    static const char *const sync[] = {"ATLAS_REDZONE_CHECK=sync", "ATLAS_LOG_LEVEL=info",
                                       "FAKE_REFUSE_PTX=1", NULL};
    static const char *const dflt[] = {"FAKE_REFUSE_PTX=1", NULL};
    static const char *const launch[] = {"ATLAS_REDZONE_CHECK=launch", "FAKE_REFUSE_PTX=1", NULL};
    struct run_result r;
    rz_run(&r, "over", "1", sync);
    six_suspects(r.log, "cuCtxSynchronize");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
#if ATL_RZ_PTX_BUILT
#define RZ_NO_KERNEL "the driver refused its PTX: CUDA_ERROR_INVALID_IMAGE"
#else
#define RZ_NO_KERNEL "built without nvcc"
#endif
    ck_assert_int_eq(count_lines(r.log, "redzone: scan kernel unavailable (" RZ_NO_KERNEL
                                        "): checking each zone with a copy"),
                     1);
    run_free(&r);
    rz_run(&r, "over", "1", dflt);
    six_suspects(r.log, "cuMemFree_v2");
    run_free(&r);
    rz_run(&r, "over", "1", launch);
    HAS(r.log, "redzone: culprit: launch#4 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    HAS(r.log, "redzone: found by the check after launch#4 on stream 0x0, which reached alloc#2 "
               "through arg0+0x0\n");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    run_free(&r);
    rz_run(&r, "async", NULL, dflt);
    HAS(r.log, "2 bytes corrupted at +1000..+1001");
    HAS(r.log, "redzone: alloc#2 found at cuMemFreeAsync:");
    run_free(&r);
}
END_TEST

START_TEST(check_at_launch_names_culprit)
{
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=launch", "RZ_COUNT_DEP=1", NULL};
    struct run_result r;
    rz_run(&r, "over", "1", env);
    HAS(r.log, "redzone overrun: alloc#2 4096 bytes");
    HAS(r.log, "1 byte corrupted at +4096..+4096\natlas[");
    HAS(r.log, "redzone: culprit: launch#4 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    HAS(r.log, "redzone: found by the check after launch#4 on stream 0x0, which reached alloc#2 "
               "through arg0+0x0\n");
    ck_assert_int_eq(count_lines(r.log, "culprit:"), 1);
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    HASNT(r.log, "since the last clean check");
    HASNT(r.log, "scan kernel unavailable");
    /* an sm_90 device (the fake's default): each check is queued as a
     * dependent launch; five of the six launches have one (the last reaches
     * only the zone already reported), and so has each free (the check that
     * poisons the freed bytes for the quarantine) */
    HAS(r.out, "dependent launches: 7\n");
    run_free(&r);
}
END_TEST

/* Where a dependent launch is not to be had, the check after a launch is a
 * plain launch, and names the culprit all the same: a device under sm_90
 * (the sm_90 build of the kernels is not even loaded), and a driver that
 * refuses the attribute (said once, plain launches from then on). */
START_TEST(check_at_launch_without_dependent_launch)
{
    static const char *const older[] = {"ATLAS_REDZONE_CHECK=launch", "FAKE_CC_MAJOR=8",
                                        "RZ_COUNT_DEP=1", NULL};
    static const char *const refused[] = {"ATLAS_REDZONE_CHECK=launch", "RZ_REFUSE_EX=1",
                                          "ATLAS_LOG_LEVEL=info", "RZ_COUNT_DEP=1", NULL};
    struct run_result r;
    rz_run(&r, "over", "1", older);
    HAS(r.out, "dependent launches: 0\n");
    HAS(r.log, "redzone: culprit: launch#4 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    run_free(&r);
    rz_run(&r, "over", "1", refused);
    HAS(r.out, "dependent launches: 0\n");
    HAS(r.log, "redzone: the driver refused a dependent launch of the check "
               "(CUDA_ERROR_NOT_SUPPORTED): plain launches from now on\n");
    ck_assert_int_eq(count_lines(r.log, "refused a dependent launch"), 1);
    HAS(r.log, "redzone: culprit: launch#4 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    run_free(&r);
}
END_TEST

/* What a launch can reach: a pointer inside a by-value struct, a pointer to
 * the middle of an allocation, a pointer just past its end. Each overrun is
 * found by the check after the launch that wrote it, which names the
 * parameter word. */
START_TEST(check_at_launch_reach)
{
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=launch", NULL};
    struct run_result r;
    rz_run(&r, "reach", NULL, env);
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 3);
    const char *a = strstr(r.log, "redzone overrun: alloc#1 4096 bytes");
    const char *b = strstr(r.log, "redzone overrun: alloc#2 4096 bytes");
    const char *c = strstr(r.log, "redzone overrun: alloc#3 4096 bytes");
    ck_assert(a && b && c && a < b && b < c);
    HAS(a, "redzone: culprit: launch#1 kernel=spoke grid=(1,1,1) block=(1,1,1)\n");
    HAS(a, "redzone: found by the check after launch#1 on stream 0x0, which reached alloc#1 "
           "through arg0+0x8\n");
    HAS(b, "redzone: culprit: launch#2 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    HAS(b, "which reached alloc#2 through arg0+0x0\n");
    HAS(c, "redzone: culprit: launch#3 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    HAS(c, "which reached alloc#3 through arg0+0x0\n");
    HASNT(r.log, "full check");
    run_free(&r);
}
END_TEST

/* A launch that reaches 20 allocations gets three queued checks (8 zones a
 * slot); one that reaches 150 (a multi-tensor kernel's struct of pointers)
 * gets 19, with no full check; one whose parameters hold more than 256
 * candidate words gets a full check, and says why. */
START_TEST(check_at_launch_wide)
{
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=launch", NULL};
    struct run_result r;
    rz_run(&r, "wide", "20", env);
    HAS(r.log, "redzone overrun: alloc#20 4096 bytes");
    HAS(r.log, "redzone: culprit: launch#1 kernel=wpoke grid=(1,1,1) block=(1,1,1)\n");
    HAS(r.log, "redzone: found by the check after launch#1 on stream 0x0, which reached alloc#20 "
               "through arg0+0x98\n");
    run_free(&r);
    rz_run(&r, "wide", "150", env);
    HAS(r.log, "redzone overrun: alloc#150 4096 bytes");
    HAS(r.log, "redzone: culprit: launch#1 kernel=wpoke grid=(1,1,1) block=(1,1,1)\n");
    HAS(r.log, "redzone: found by the check after launch#1 on stream 0x0, which reached alloc#150 "
               "through arg0+0x4a8\n");
    HASNT(r.log, "full check");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    run_free(&r);
    rz_run(&r, "wide", "300", env);
    HAS(r.log, "redzone overrun: alloc#300 4096 bytes");
    HAS(r.log, "redzone: culprit: launch#1 kernel=wpoke grid=(1,1,1) block=(1,1,1)\n");
    HAS(r.log, "redzone: found by the full check after launch#1 on stream 0x0 (its parameters "
               "hold more than 256 words that may point into guarded allocations: every zone was "
               "checked)\n");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    run_free(&r);
}
END_TEST

/* A pointer held in device memory: no launch's parameters reach the
 * allocation, its launch check never sees it, and the full check at the
 * program's sync (the backstop) finds it and says so. */
START_TEST(check_at_launch_indirect)
{
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=launch", NULL};
    struct run_result r;
    rz_run(&r, "indirect", NULL, env);
    HAS(r.log, "redzone overrun: alloc#2 4096 bytes");
    HAS(r.log, "2 bytes corrupted at +4096..+4097\n");
    HAS(r.log, "redzone: alloc#2 found at cuCtxSynchronize: none of the 1 launches since the last "
               "clean check has a parameter that points into it (an address computed on the "
               "device, or held in device memory?); the newest:\n");
    HAS(r.log, "redzone:   launch#1 kernel=ipoke grid=(1,1,1) block=(32,1,1)\n");
    /* launch mode on every kernel already: no command to re-run */
    HASNT(r.log, "re-run");
    run_free(&r);
    /* the default mode: launch mode, whose full check at every sync narrows
     * it down (no kernel to limit it to) */
    rz_run(&r, "indirect", NULL, NULL);
    HAS(r.log, "redzone: launch mode narrows it down (its full check at every host sync leaves "
               "only the launches between two syncs); re-run with it: LD_PRELOAD=");
    HASNT(r.log, "ATLAS_KERNEL");
    HASNT(r.log, "culprit:");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    run_free(&r);
}
END_TEST

/* Two streams, never serialised: each verdict names its launch and its
 * stream, in the order the checks were queued. */
START_TEST(check_at_launch_two_streams)
{
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=launch", NULL};
    struct run_result r;
    rz_run(&r, "streams", NULL, env);
    void *s1, *s2;
    const char *line = strstr(r.out, "s1=");
    ck_assert(line && sscanf(line, "s1=%p s2=%p", &s1, &s2) == 2);
    char w1[160], w2[160];
    snprintf(w1, sizeof w1, "found by the check after launch#1 on stream %p, which reached alloc#1",
             s1);
    snprintf(w2, sizeof w2, "found by the check after launch#2 on stream %p, which reached alloc#2",
             s2);
    const char *a = strstr(r.log, w1), *b = strstr(r.log, w2);
    ck_assert_msg(a && b && a < b, "%s", r.log);
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 2);
    run_free(&r);
}
END_TEST

/* Four threads launching on their own streams, each syncing its stream
 * now and then (a full check, in launch mode, while the other threads'
 * launches are in flight): each overrun is found by the check after its own
 * launch, on its thread's stream, never put down to no launch by another
 * thread's full check; and every launch got its check. */
START_TEST(check_at_launch_threads)
{
    static const char *const every[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_REDZONE_RECHECK=1",
                                        NULL};
    static const char *const dflt[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_LOG_LEVEL=info", NULL};
    struct run_result r;
    for (int pass = 0; pass < 2; pass++) {
        rz_run(&r, "launch-threads", NULL, pass ? dflt : every);
        if (!pass) {
            HAS(r.out, "checks queued: 1200\n");
        } else {
            /* each thread's 300 launches are 9 launches of poke repeated: most are identical to
             * one checked before and go without a check (about 200 checks; the table is racy on
             * purpose, so not an exact count), the overruns are their own launches' */
            const char *q = strstr(r.out, "checks queued: ");
            unsigned long n = q ? strtoul(q + 15, NULL, 10) : 0;
            ck_assert_msg(n >= 36 && n <= 400, "%s", r.out);
            HAS(r.log, "launches identical to one checked before were not checked after");
        }
        ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 4);
        for (int t = 0; t < 4; t++) {
            char want[32], line[200];
            void *s;
            snprintf(want, sizeof want, "thread %d stream=", t);
            const char *at = strstr(r.out, want);
            ck_assert(at && sscanf(at + strlen(want), "%p", &s) == 1);
            snprintf(line, sizeof line, "on stream %p, which reached alloc#%d", s, 9 * t + 9);
            ck_assert_msg(strstr(r.log, line), "%s not in:\n%s", line, r.log);
            snprintf(line, sizeof line, "alloc#%d 4096 bytes at 0x", 9 * t + 9);
            HAS(r.log, line);
        }
        HAS(r.log, ": 1 byte corrupted at +4096..+4096\n");
        HAS(r.log, ": 4 bytes corrupted at +4096..+4099\n");
        ck_assert_int_eq(count_lines(r.log, "found by the check after launch#"), 4);
        ck_assert_int_eq(count_lines(r.log, "culprit: launch#"), 4);
        run_free(&r);
    }
}
END_TEST

/* Launch mode and a launch identical to one checked before (the same kernel, grid, block and
 * parameter bytes on the same allocations): checked again only at its 2nd, 4th, 8th, ... time.
 * Seven launches of dpoke, the seventh writing 4 bytes past its buffer because the length it
 * reads from device memory changed: found at the next sync, with the launches that reach the
 * buffer and why none is named; a new launch's overrun after it still has its culprit. With
 * ATLAS_REDZONE_RECHECK=1 every launch is checked and the seventh is named. */
START_TEST(check_at_launch_same_launch)
{
    static const char *const dflt[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_LOG_LEVEL=info", NULL};
    static const char *const every[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_REDZONE_RECHECK=1",
                                        NULL};
    struct run_result r;
    rz_run(&r, "same", NULL, dflt);
    HAS(r.out, "checks after dpoke: 3\n");
    HAS(r.log, "redzone overrun: alloc#1 4096 bytes");
    HAS(r.log, ": 4 bytes corrupted at +4096..+4099\n");
    HAS(r.log, "redzone: alloc#1 found at cuCtxSynchronize: 7 of the 7 launches since the last "
               "clean check reach it");
    HAS(r.log, "redzone:   x7, newest launch#7 kernel=dpoke grid=(1,1,1) block=(32,1,1) through "
               "arg0+0x0\n");
    HAS(r.log, "redzone: launches identical to one checked before reached alloc#1 without a "
               "check of their own, so launch mode cannot name the one that wrote it; "
               "ATLAS_REDZONE_RECHECK=1 checks every launch\n");
    HAS(r.log, "redzone: culprit: launch#8 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    ck_assert_int_eq(count_lines(r.log, "culprit:"), 1);
    HAS(r.log, "redzone: 4 launches identical to one checked before were not checked after");
    HAS(r.log, "redzone: 2 overruns found in 3 guarded allocations");
    run_free(&r);
    rz_run(&r, "same", NULL, every);
    HAS(r.out, "checks after dpoke: 7\n");
    HAS(r.log, "redzone: culprit: launch#7 kernel=dpoke grid=(1,1,1) block=(32,1,1)\n");
    HAS(r.log, "redzone: culprit: launch#8 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    HASNT(r.log, "identical");
    run_free(&r);
}
END_TEST

/* The cost of a launch's check does not grow with the allocations live:
 * the twin counts the zones each check reads. And a clean program with
 * thousands of live allocations reports nothing, in every mode. */
START_TEST(check_at_launch_flat_cost)
{
    /* every launch checked: the scenario launches one kernel on one buffer again and again */
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_REDZONE_RECHECK=1",
                                      NULL};
    struct run_result r;
    rz_run(&r, "many", "10", env);
    HAS(r.out, "zones checked per launch: 1\n");
    HAS(r.out, "dependent launches: 100\n");
    run_free(&r);
    rz_run(&r, "many", "5000", env);
    HAS(r.out, "zones checked per launch: 1\n");
    HASNT(r.log, "redzone overrun");
    HAS(r.log, "redzone: 0 overruns found in 5,000 guarded allocations");
    run_free(&r);
}
END_TEST

START_TEST(clean_with_many_live)
{
    static const char *const modes[][2] = {
        {"ATLAS_REDZONE_CHECK=free", NULL},
        {"ATLAS_REDZONE_CHECK=sync", NULL},
        {"ATLAS_REDZONE_CHECK=launch", NULL},
    };
    for (int i = 0; i < 3; i++) {
        struct run_result r;
        rz_run(&r, "many", "1500", modes[i]);
        HASNT(r.log, "redzone overrun");
        HASNT(r.log, "redzone: alloc#");
        HAS(r.log, "redzone: 0 overruns found in 1,500 guarded allocations");
        run_free(&r);
    }
}
END_TEST

/* Launch mode never checks into a capturing stream; the overrun the graph
 * replays is found right after the graph launch. */
START_TEST(check_at_launch_with_capture)
{
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=launch", NULL};
    struct run_result r;
    rz_run(&r, "capture", NULL, env);
    HAS(r.out, "captured ops: 1\n");
    HAS(r.log, "5 bytes corrupted at +4096..+4100");
    /* checked right after the graph launch, not blamed on a later launch */
    HAS(r.log, "redzone: alloc#1 found at cuGraphLaunch:");
    HASNT(r.log, "culprit:");
    run_free(&r);
}
END_TEST

/* The same on the per-thread default stream through the _ptsz twins and stream 0 (nvcc
 * --default-stream per-thread): the engine asks that stream's capture status once, for every
 * feature. Before, red zones asked the legacy stream's and took the captured launch for one
 * that ran: "1 of the 2 launches since the last clean check reach it", where it did not run
 * (the graph's launch is the suspect). */
START_TEST(check_at_launch_with_per_thread_capture)
{
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=launch", NULL};
    struct run_result r;
    rz_run(&r, "capture-pt", NULL, env);
    HAS(r.out, "captured ops: 1\n");
    HAS(r.log, "5 bytes corrupted at +4096..+4100");
    HAS(r.log, "redzone: alloc#1 found at cuGraphLaunch_ptsz: 0 of the 2 launches since the last "
               "clean check reach it (a parameter points into it; 1 ruled out; 1 more could not "
               "be ruled out)");
    HASNT(r.log, "culprit:");
    run_free(&r);
}
END_TEST

START_TEST(leaks_and_exit_scan)
{
    static const char *const env[] = {"ATLAS_LEAKS=1", NULL};
    struct run_result r;
    rz_run(&r, "leak", NULL, env);
    HAS(r.log, "redzone overrun: alloc#3 300 bytes");
    HAS(r.log, "4 bytes corrupted at +300..+303");
    HAS(r.log, "redzone: alloc#3 found at exit:");
    HAS(r.log, "leaks: 2 allocations never freed, 8492 bytes in total, from 2 call stacks (largest "
               "first):\n");
    const char *a = strstr(r.log, "leaks:   alloc#2 8192 bytes at 0x");
    const char *b = strstr(r.log, "leaks:   alloc#3 300 bytes at 0x");
    ck_assert(a && b && a < b);
    HAS(r.log, "8192 bytes at 0x");
    ck_assert_int_eq(count_lines(r.log, "leaks:   alloc#"), 2);
    ck_assert_int_eq(count_lines(r.log, "allocated at rz_alloc ("), 2 + 1);
    run_free(&r);
}
END_TEST

/* Leaks alone (no red zones): the ledger still runs. */
START_TEST(leaks_without_redzone)
{
    static const char *const env[] = {"ATLAS_REDZONE=0", "ATLAS_LEAKS=1", NULL};
    struct run_result r;
    rz_run(&r, "leak", NULL, env);
    HASNT(r.log, "redzone:");
    HASNT(r.log, "redzone overrun");
    HAS(r.log, "leaks: 2 allocations never freed, 8492 bytes in total");
    run_free(&r);
    /* the ledger's reports are a feature of their own: an allocation's
     * backtrace by number works with the leak list alone too */
    static const char *const traced[] = {"ATLAS_REDZONE=0", "ATLAS_LEAKS=1",
                                         "ATLAS_REDZONE_TRACE_IDX=1", NULL};
    rz_run(&r, "leak", NULL, traced);
    HAS(r.log, " backtrace (ATLAS_REDZONE_TRACE_IDX):\n");
    ck_assert_int_eq(count_lines(r.log, "backtrace"), 1);
    HAS(r.log, "leaks: 2 allocations never freed, 8492 bytes in total");
    run_free(&r);
}
END_TEST

/* Every allocation names its own site: two sites at the same stack depth,
 * alternating (the unwind cache must tell them apart by their return
 * addresses), then one leak from each; with the deepest and with a short
 * stack (ATLAS_STACK_DEPTH), and with none. */
START_TEST(allocation_sites_at_one_depth)
{
    /* (no quarantine: its frees take call stacks too) */
    static const char *const env[] = {"ATLAS_LEAKS=1", "ATLAS_LOG_LEVEL=info",
                                      "ATLAS_REDZONE_QUARANTINE_MB=0", NULL};
    struct run_result r;
    rz_run(&r, "sites", NULL, env);
    /* each leak line names its own site */
    static const char *const want[][2] = {
        {"leaks:   alloc#21 111 bytes", "site_one ("},
        {"leaks:   alloc#22 222 bytes", "site_two ("},
        {"leaks:   alloc#23 333 bytes", "site_one ("},
    };
    for (int i = 0; i < 3; i++) {
        const char *line = strstr(r.log, want[i][0]);
        ck_assert_msg(line, "no '%s' in\n%s", want[i][0], r.log);
        const char *site = strstr(line, want[i][1]);
        ck_assert_msg(site && site < strchr(line, '\n'), "%s: not at %s\n%s", want[i][0],
                      want[i][1], r.log);
    }
    /* each chain keeps its own cache entry: two chains through main's loop,
     * then three calls from three lines of main (5 unwinds); a cache that let
     * a chain evict another of its stack address unwound all 23 */
    HAS(r.log, "leaks: 23 call stacks taken, 5 of them unwound (the rest reused)");
    run_free(&r);
    static const char *const shallow[] = {"ATLAS_LEAKS=1", "ATLAS_STACK_DEPTH=1", NULL};
    rz_run(&r, "sites", NULL, shallow);
    /* one frame: site_one's two leaks have one call stack, one group (src/leaks.c) */
    ck_assert_int_eq(count_lines(r.log, "leaks:   2 allocations, 444 bytes (alloc#21 to alloc#23, "
                                        "111 to 333 bytes), allocated at site_one ("),
                     1);
    ck_assert_int_eq(count_lines(r.log, "allocated at site_one ("), 1);
    ck_assert_int_eq(count_lines(r.log, "allocated at site_two ("), 1);
    HAS(r.log, "leaks: 3 allocations never freed, 666 bytes in total, from 2 call stacks");
    run_free(&r);
    static const char *const none[] = {"ATLAS_LEAKS=1", "ATLAS_STACK_DEPTH=0", NULL};
    rz_run(&r, "sites", NULL, none);
    HAS(r.log, "leaks: 3 allocations never freed");
    HASNT(r.log, "allocated at site_");
    run_free(&r);
}
END_TEST

/* Forty call chains through one stack address, in turn, five rounds: each
 * is unwound once (eight ways an address, as the cache first had, unwound
 * all 200: a PyTorch step's chains meet at a few addresses). Eighty: each is
 * unwound once too (a list of at most 64 chains an address, as the cache had
 * next, unwound every capture past it), and each allocation is still named by
 * its own site. */
START_TEST(stack_cache_many_chains_at_one_address)
{
    static const char *const env[] = {"ATLAS_LEAKS=1", "ATLAS_LOG_LEVEL=info",
                                      "ATLAS_REDZONE_QUARANTINE_MB=0", NULL};
    struct run_result r;
    rz_run(&r, "chains", "40", env);
    HAS(r.log, "leaks: 200 call stacks taken, 40 of them unwound (the rest reused)");
    run_free(&r);
    rz_run(&r, "chains", "80", env);
    HAS(r.log, "leaks: 400 call stacks taken, 80 of them unwound (the rest reused)");
    run_free(&r);
    /* with the quarantine, each free takes a call stack too: one chain more */
    static const char *const quar[] = {"ATLAS_LEAKS=1", "ATLAS_LOG_LEVEL=info", NULL};
    rz_run(&r, "chains", "40", quar);
    HAS(r.log, "leaks: 400 call stacks taken, 41 of them unwound (the rest reused)");
    run_free(&r);
}
END_TEST

/* Status 4 at teardown is normal: no warning, no failed free, and the
 * allocation the program did free is not a leak. */
START_TEST(teardown_no_false_alarm)
{
    static const char *const env[] = {"ATLAS_LEAKS=1", NULL};
    struct run_result r;
    rz_run(&r, "teardown", NULL, env);
    HAS(r.out, "free after teardown: 4\n");
    HASNT(r.log, "free failed");
    HASNT(r.log, "unknown pointer");
    HASNT(r.log, "cannot check");
    HASNT(r.log, "redzone overrun");
    HAS(r.log, "leaks: 1 allocation never freed, 512 bytes in total");
    ck_assert_int_eq(count_lines(r.log, "atlas["), 3);
    run_free(&r);
}
END_TEST

/* A failure that is not out of memory is one info line, not a warning with
 * the memory figures and the largest live allocations. */
START_TEST(failed_alloc_not_oom_is_quiet)
{
    struct run_result r;
    rz_run(&r, "nonoom", NULL, NULL);
    same_out_as_plain(&r, "nonoom"); /* the driver's error, unchanged */
    HASNT(r.out, "without a context: 0\n");
    HASNT(r.log, "alloc failed");
    run_free(&r);
    const char *info[] = {"ATLAS_LOG_LEVEL=info", NULL};
    rz_run(&r, "nonoom", NULL, info);
    ck_assert_int_eq(count_lines(r.log, "alloc failed"), 1);
    HAS(r.log, "alloc failed: alloc#2 cuMemAllocAsync bytes=4096 status=CUDA_ERROR_INVALID_CONTEXT "
               "(not out of memory; the driver's error is returned unchanged)");
    run_free(&r);
}
END_TEST

START_TEST(failed_alloc_report)
{
    struct run_result r;
    rz_run(&r, "oom", NULL, NULL);
    /* the driver's error reaches the program unchanged */
    HAS(r.out, "big alloc: 2\n");
    same_out_as_plain(&r, "oom");
    HAS(r.log, "alloc failed: alloc#3 cuMemAlloc_v2 bytes=2097152 "
               "status=CUDA_ERROR_OUT_OF_MEMORY device free=");
    HAS(r.log, " total=1048576 live=2 ");
    const char *a = strstr(r.log, "largest live: alloc#2 65536 bytes at 0x");
    const char *b = strstr(r.log, "largest live: alloc#1 4096 bytes at 0x");
    ck_assert(a && b && a < b);
    run_free(&r);
}
END_TEST

/* PyTorch's caching allocator in the process (a library named libc10_cuda.so loaded), not
 * routed: one line says what its pool leaves unguarded and the option that covers it, and the
 * red zones' last line says it again; routed (backend:cudaMallocAsync), or no such library,
 * nothing is said (issue #45). */
START_TEST(torch_pool_note)
{
    struct run_result r;
    const char *lib = BUILD_DIR "/tests/torchfake/libc10_cuda.so";
    rz_run(&r, "torchpool", lib, NULL);
    ck_assert_int_eq(count_lines(r.log, "redzone: PyTorch's caching allocator serves this "
                                        "process: red zones guard its segments, not the tensors "
                                        "it places inside them"),
                     1);
    HAS(r.log, "ATLAS_REDZONE_POOLS=route gives each tensor a driver allocation and a zone of "
               "its own (allocation costs more, and torch.compile's CUDA graph trees then fail)");
    HAS(r.log, "; PyTorch's caching allocator: the tensors inside its segments not guarded\n");
    run_free(&r);
    static const char *const routed[] = {"PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync", NULL};
    rz_run(&r, "torchpool", lib, routed);
    HASNT(r.log, "caching allocator");
    run_free(&r);
    rz_run(&r, "torchpool", BUILD_DIR "/fake/libcuda.so.1", NULL);
    HASNT(r.log, "caching allocator");
    run_free(&r);
}
END_TEST

START_TEST(unknown_and_double_free)
{
    struct run_result r;
    rz_run(&r, "badfree", NULL, NULL);
    same_out_as_plain(&r, "badfree");
    HAS(r.out, "interior free: 1\nfree: 0\ndouble free: 1\nstray free: 1\n");
    /* a pointer inside a live allocation is named as such (it read "never allocated") */
    HAS(r.log, "free of a pointer inside alloc#1: 0x");
    HAS(r.log, " is +0x10 of it (4096 bytes at 0x");
    HAS(r.log, "), not its start; status=CUDA_ERROR_INVALID_VALUE (passed through; alloc#1 stays "
               "live)\n");
    HAS(r.log, "(alloc#1, already freed: a double free) status=CUDA_ERROR_INVALID_VALUE (passed "
               "through)");
    HAS(r.log, "free of unknown pointer: 0x12345600 (never allocated through a hooked call) "
               "status=CUDA_ERROR_INVALID_VALUE");
    run_free(&r);
}
END_TEST

START_TEST(stream_ordered)
{
    struct run_result r;
    rz_run(&r, "async", NULL, NULL);
    /* both poisoned on their stream, none through the legacy stream */
    HAS(r.out, "poisoned on the stream: 2, synchronously: 0\n");
    HAS(r.log, "redzone overrun: alloc#1 4096 bytes");
    HAS(r.log, "2 bytes corrupted at +4096..+4097");
    HAS(r.log, "redzone overrun: alloc#2 1000 bytes");
    HAS(r.log, "2 bytes corrupted at +1000..+1001");
    HAS(r.log, "redzone: alloc#2 found at cuMemFreeAsync:");
    /* checked on the stream before the free: no stall, no copy */
    HAS(r.out, "context syncs: 0, copies back: 0\n");
    run_free(&r);
}
END_TEST

/* PyTorch's shape: stream-ordered frees on the legacy stream are held back
 * and checked eight at a time (one check kernel per batch, not per free);
 * the rest of a batch goes before the program's sync, so the sync's
 * verdicts include it. A free on another stream goes through at once. The
 * overrun is named with its own allocation site though seven other frees
 * shared its check. (Without the quarantine, which would keep the frees
 * from the driver a while longer: legacy_stream_frees_quarantined.) */
START_TEST(legacy_stream_frees_held_in_batches)
{
    static const char *const env[] = {"ATLAS_LOG_LEVEL=info", "ATLAS_REDZONE_QUARANTINE_MB=0",
                                      NULL};
    struct run_result r;
    rz_run(&r, "held", NULL, env);
    HAS(r.out, "before the sync: frees 16, checks 2\n");
    HAS(r.out, "another stream's free: frees 17\n");
    HAS(r.out, "after the sync: frees 21, checks 4\n");
    HAS(r.out, "context syncs: 0, copies back: 0\n");
    HAS(r.log, "redzone overrun: alloc#6 4096 bytes at 0x");
    HAS(r.log, ", allocated at held_alloc (");
    HAS(r.log, ": 2 bytes corrupted at +4096..+4097\n");
    HAS(r.log, "redzone: alloc#6 found at cuMemFreeAsync: 1 of the 1 launches since the last clean "
               "check reach it");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 1);
    HAS(r.log, "redzone: 20 frees on the legacy stream were held back and checked in 3 batches");
    run_free(&r);
}
END_TEST

/* A loop that frees as much as it makes, past the quarantine's bound: the oldest leave eight
 * to a check, not one check per free (32 frees a step: 4 checks of the held frees and 4 of
 * those leaving; it was 36, and on the H200 the quarantine cost PyTorch's steps 15-20%). */
START_TEST(quarantine_leaves_in_batches)
{
    static const char *const env[] = {"ATLAS_REDZONE_QUARANTINE_MB=1", NULL};
    struct run_result r;
    rz_run(&r, "quarantine-loop", NULL, env);
    HAS(r.out, "checks per step: 8.0\n");
    HAS(r.log, "0 writes after free found in 6,400 freed allocations kept poisoned");
    run_free(&r);
}
END_TEST

/* Issue #45's first measure: how many births' zones lie in memory the quarantine released
 * poisoned (the poison a set of verified spans could skip). In the loop above, from the second
 * step on (the first step's 32 come before any release), at most all of them; none where no
 * free is kept (below: held_frees_from_threads). */
START_TEST(births_in_released_poison)
{
    static const char *const env[] = {"ATLAS_REDZONE_QUARANTINE_MB=1", "ATLAS_LOG_LEVEL=info",
                                      NULL};
    struct run_result r;
    rz_run(&r, "quarantine-loop", NULL, env);
    const char *l = strstr(r.log, "redzone: ");
    const char *k = strstr(r.log, " of 6,400 guarded allocations had their red zone in memory "
                                  "the quarantine had released poisoned");
    ck_assert_msg(k != NULL, "%s", r.log);
    while (l && strstr(l + 1, "redzone: ") && strstr(l + 1, "redzone: ") < k)
        l = strstr(l + 1, "redzone: ");
    long n = 0;
    for (const char *p = l + 9; p < k; p++)
        if (*p >= '0' && *p <= '9')
            n = n * 10 + (*p - '0');
    fprintf(stderr, "births in released poison: %ld of 6400\n", n);
    ck_assert_msg(n > 0 && n <= 6400 - 32, "%ld births of 6,400 in released poison", n);
    run_free(&r);
}
END_TEST

/* Four threads, 500 tensors each, freed on the legacy stream: every free
 * reaches the driver, and each thread's one overrun is found. */
START_TEST(held_frees_from_threads)
{
    static const char *const env[] = {"ATLAS_LOG_LEVEL=info", "ATLAS_REDZONE_QUARANTINE_MB=0",
                                      NULL};
    struct run_result r;
    rz_run(&r, "held-threads", NULL, env);
    HAS(r.out, "frees: 2000\n");
    ck_assert_int_eq(count_lines(r.log, "redzone overrun:"), 4);
    HAS(r.log, " 256 bytes at 0x");
    HAS(r.log, " 272 bytes at 0x");
    HAS(r.log, " 288 bytes at 0x");
    HAS(r.log, " 304 bytes at 0x");
    ck_assert_int_eq(count_lines(r.log, "found at cuMemFreeAsync"), 4);
    HAS(r.log, "redzone: 4 overruns found in 2,000 guarded allocations");
    HAS(r.log, "redzone: 0 of 2,000 guarded allocations had their red zone in memory the "
               "quarantine had released poisoned");
    HAS(r.log, "redzone: 2,000 frees on the legacy stream were held back and checked in 250 "
               "batches");
    run_free(&r);
}
END_TEST

/* Frees held back when the program exits without a sync: checked at exit. */
START_TEST(held_frees_checked_at_exit)
{
    struct run_result r;
    rz_run(&r, "held-exit", NULL, NULL);
    HAS(r.log, "redzone overrun: alloc#2 512 bytes at 0x");
    HAS(r.log, ": 3 bytes corrupted at +512..+514\n");
    HAS(r.log, "redzone: alloc#2 found at cuMemFreeAsync:");
    HAS(r.log, "redzone: 1 overrun found in 2 guarded allocations");
    run_free(&r);
}
END_TEST

/* A free held back never changes what the driver answers: a double free of
 * a held pointer fails as it would have, and an allocation that fails for
 * memory while frees are held is retried once they are released. */
START_TEST(held_frees_answer_as_native)
{
    struct run_result r;
    rz_run(&r, "held-refree", NULL, NULL);
    same_out_as_plain(&r, "held-refree");
    HAS(r.out, "double free: 1\n");
    run_free(&r);
    rz_run(&r, "held-oom", NULL, NULL);
    same_out_as_plain(&r, "held-oom");
    HAS(r.out, "second: 0\n");
    HAS(r.out, "too big: 2\n");
    run_free(&r);
}
END_TEST

/* Writes after free. A CUDA C program writes through a pointer it freed
 * with cuMemFree: the freed bytes were kept poisoned in the quarantine, and
 * the write is found when they leave it (here at exit), put down to the one
 * launch since the free whose parameters reach it (the launches before the
 * free are ruled out: cuMemFree waited for them), with the free's stack. In
 * launch mode the check after the launch names it at once. The program
 * sees what it sees natively. */
START_TEST(write_after_free)
{
    struct run_result r;
    rz_run(&r, "uaf", NULL, NULL);
    same_out_as_plain(&r, "uaf");
    HAS(r.log, "redzone: write after free: alloc#2 (freed at main (");
    HAS(r.log, ") written by poke (launch#3, the one launch since its free that reaches it): 8 "
               "bytes at +16..+23 of its 4096 bytes at 0x");
    HAS(r.log, "redzone:   allocated at rz_alloc (");
    HAS(r.log, "; freed by cuMemFree_v2 at:\n");
    HAS(r.log, "redzone:   #0 main (");
    HAS(r.log, "redzone: alloc#2 found when it left the quarantine: 1 of the 4 launches since the "
               "last clean check reach it (a parameter points into it; 3 ruled out)");
    HAS(r.log, "redzone:   x1, newest launch#3 kernel=poke grid=(2,1,1) block=(32,1,1) through "
               "arg0+0x0, after the free\n");
    HAS(r.log, "ATLAS_REDZONE_CHECK=launch ATLAS_KERNEL='^(poke)$' " PROG " uaf\n");
    HASNT(r.log, "redzone overrun");
    HAS(r.log, "redzone: 0 overruns found in 2 guarded allocations");
    HAS(r.log, "; 1 write after free found in 2 freed allocations kept poisoned\n");
    run_free(&r);
    static const char *const launch[] = {"ATLAS_REDZONE_CHECK=launch", NULL};
    rz_run(&r, "uaf", NULL, launch);
    HAS(r.log, ") written by poke (launch#3): 8 bytes at +16..+23 of its 4096 bytes at 0x");
    HAS(r.log, "redzone: found by the check after launch#3 on stream 0x0, which reached alloc#2 "
               "through arg0+0x0\n");
    ck_assert_int_eq(count_lines(r.log, "write after free:"), 1);
    run_free(&r);
    /* the check kernels' module is loaded at the first guarded allocation, so that no free
     * waits for the device to load it (issue #45: on the H100 that wait let another stream's
     * write after cudaFreeAsync land before the free's poison, in the default mode); without
     * red zones nothing is loaded */
    rz_run(&r, "early", NULL, NULL);
    HAS(r.out, "module loads after the allocation: 2\n");
    HAS(r.out, "module loads after the free: 2\n");
    run_free(&r);
    {
        struct run_result plain;
        char *argv[] = {PROG, "early", NULL};
        static const char *const none[] = {"ATLAS_LEAKS=1", NULL};
        run_target(&plain, argv, none, 1);
        HAS(plain.out, "module loads after the allocation: 1\n");
        run_free(&plain);
    }
    /* stream-ordered on the legacy stream, where frees are held back in
     * batches: a launch that reaches a held free releases its batch (the
     * poison) before it is made, so its write is seen all the same */
    rz_run(&r, "uaf-async", NULL, NULL);
    same_out_as_plain(&r, "uaf-async");
    HAS(r.log, ") written by poke (launch#3, the one launch since its free that reaches it): 8 "
               "bytes at +16..+23 of its 4096 bytes at 0x");
    HAS(r.log, "; freed by cuMemFreeAsync at:\n");
    run_free(&r);
    /* with the step trace on, no quarantine unless asked for by name: it
     * would give every step's buffers new addresses, which the trace
     * compares */
    static const char *const traced[] = {"ATLAS_TRACE=1", "ATLAS_LOG_LEVEL=info", NULL};
    rz_run(&r, "uaf", NULL, traced);
    HAS(r.log, "redzone: no quarantine with the step trace on (it would give every step's buffers "
               "new addresses); ATLAS_REDZONE_QUARANTINE_MB sets one\n");
    HASNT(r.log, "write after free");
    run_free(&r);
    static const char *const traced_q[] = {"ATLAS_TRACE=1", "ATLAS_REDZONE_QUARANTINE_MB=64", NULL};
    rz_run(&r, "uaf", NULL, traced_q);
    HAS(r.log, "redzone: write after free: alloc#2 ");
    run_free(&r);
    /* ATLAS_REDZONE_QUARANTINE_MB=0: no quarantine, nothing seen */
    static const char *const off[] = {"ATLAS_REDZONE_QUARANTINE_MB=0", NULL};
    rz_run(&r, "uaf", NULL, off);
    HASNT(r.log, "write after free");
    HASNT(r.log, "writes after free");
    run_free(&r);
}
END_TEST

/* The missing record_stream: a tensor made and freed on the legacy stream
 * while a kernel on another stream still writes it. The kernel (lateset,
 * launch#2) took its pointer before the free and writes after it; the one
 * launch that reaches the freed bytes and is not ordered before the free
 * (launch#1, on the free's stream, is) is named, and the free's site. */
START_TEST(write_after_free_other_stream)
{
    struct run_result r;
    rz_run(&r, "uaf-stream", NULL, NULL);
    same_out_as_plain(&r, "uaf-stream");
    HAS(r.log, "redzone: write after free: alloc#1 (freed at main (");
    HAS(r.log, ") written by lateset (launch#2, the one launch that reaches it): 16 bytes at "
               "+64..+79 of its 4096 bytes at 0x");
    HAS(r.log, "; freed by cuMemFreeAsync at:\n");
    HAS(r.log, "redzone:   x1, newest launch#2 kernel=lateset grid=(1,1,1) block=(32,1,1) through "
               "arg0+0x0\n");
    HAS(r.log, "ATLAS_KERNEL='^(lateset)$'");
    ck_assert_int_eq(count_lines(r.log, "write after free:"), 1);
    run_free(&r);
}
END_TEST

/* A clean program that makes and frees 3,000 allocations of many sizes,
 * synchronously and stream-ordered on two streams: nothing reported, the
 * program's output unchanged, every free through the quarantine. */
START_TEST(quarantine_clean_many)
{
    struct run_result r;
    rz_run(&r, "quar-many", NULL, NULL);
    same_out_as_plain(&r, "quar-many");
    HASNT(r.log, "redzone overrun");
    HASNT(r.log, "write after free");
    HASNT(r.log, "failed");
    HAS(r.log, "redzone: 0 overruns found in 3,000 guarded allocations");
    HAS(r.log, "; 0 writes after free found in 3,000 freed allocations kept poisoned\n");
    run_free(&r);
}
END_TEST

/* The quarantine's bound: of 100 buffers of 64 KiB made and freed in turn,
 * a 1 MiB quarantine keeps at most the newest 15 (64 KiB + the red zone
 * each); the oldest leave eight at a time when a 16th comes, so after the
 * 100th free 12 are held, and the oldest were given back to the driver. */
START_TEST(quarantine_bound)
{
    static const char *const env[] = {"ATLAS_REDZONE_QUARANTINE_MB=1", NULL};
    struct run_result r;
    rz_run(&r, "quar-bound", NULL, env);
    HAS(r.out, "still held: 12\nfirst given back: yes\nlast given back: no\n");
    HAS(r.log, "; 0 writes after free found in 100 freed allocations kept poisoned\n");
    run_free(&r);
    /* without it, every buffer goes back at its free */
    static const char *const off[] = {"ATLAS_REDZONE_QUARANTINE_MB=0", NULL};
    rz_run(&r, "quar-bound", NULL, off);
    HAS(r.out, "still held: 0\nfirst given back: yes\nlast given back: yes\n");
    run_free(&r);
}
END_TEST

/* A device of 1 MiB and a program that makes and frees 4 MiB of buffers,
 * one at a time: the 256 MiB quarantine cannot hold them on the device, and
 * an allocation that fails for memory releases it and is retried, so every
 * allocation that succeeds natively succeeds. */
START_TEST(quarantine_never_fails_an_allocation)
{
    struct run_result r;
    rz_run(&r, "quar-oom", NULL, NULL);
    HAS(r.out, "allocations that succeeded: 64 of 64\n");
    same_out_as_plain(&r, "quar-oom");
    HASNT(r.log, "alloc failed");
    run_free(&r);
}
END_TEST

/* A graph's private pool grows during the capture of a blocking stream
 * (PyTorch's caching allocator does so with cudaMalloc): the allocation is
 * not poisoned then (a memset on the legacy stream would invalidate the
 * capture), and the capture ends as it does natively. */
START_TEST(allocation_during_capture)
{
    static const char *const env[] = {"ATLAS_LOG_LEVEL=info", NULL};
    struct run_result r;
    rz_run(&r, "capture-alloc", NULL, env);
    same_out_as_plain(&r, "capture-alloc");
    HAS(r.out, "end capture: 0\n");
    HAS(r.log, "redzone: alloc#2 made while a stream capture is active is not guarded");
    HAS(r.log, "redzone: 0 overruns found in 1 guarded allocation");
    run_free(&r);
}
END_TEST

/* ATLAS_KERNEL: launch mode checks only after launches of the kernels it
 * matches (by name as printed, or mangled), compiled once; the overrun
 * another kernel makes is then found by the full check at the sync, with
 * the launches that reach it. A bad expression is refused, as any bad
 * setting is, and every kernel is checked. */
START_TEST(kernel_filter_in_launch_mode)
{
    /* "three": poke overruns alloc#1 and alloc#3, fill writes alloc#2 */
    static const char *const poke_only[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_KERNEL=^po", NULL};
    struct run_result r;
    rz_run(&r, "three", NULL, poke_only);
    HAS(r.log, "redzone: culprit: launch#1 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    HAS(r.log, "redzone: culprit: launch#3 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    run_free(&r);
    /* "over 1": fill (left out) reached alloc#2 before poke overran it, so
     * the check after poke cannot tell which wrote it: the launches that
     * reach it, and the command with both kernels */
    static const char *const env[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_KERNEL=^po",
                                      "RZ_COUNT_DEP=1", "ATLAS_REDZONE_QUARANTINE_MB=0", NULL};
    rz_run(&r, "over", "1", env);
    HASNT(r.log, "culprit:");
    HAS(r.log, "redzone: alloc#2 found by the check after launch#4 (launches of kernels "
               "ATLAS_KERNEL leaves out reached it too, unchecked): 2 of the 4 launches since the "
               "last clean check reach it");
    HAS(r.log, "ATLAS_KERNEL='^(poke|fill)$'");
    /* one check after poke and one before the free of alloc#1 (the reported
     * alloc#2 is not checked again): the five fills unchecked */
    HAS(r.out, "dependent launches: 2\n");
    run_free(&r);
    static const char *const both[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_KERNEL=^(poke|fill)$",
                                       NULL};
    rz_run(&r, "over", "1", both);
    HAS(r.log, "redzone: culprit: launch#4 kernel=poke grid=(2,1,1) block=(32,1,1)\n");
    run_free(&r);
    static const char *const fill_only[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_KERNEL=fill|other",
                                            NULL};
    rz_run(&r, "over", "1", fill_only);
    HASNT(r.log, "culprit:");
    HAS(r.log, "redzone: alloc#2 found by the check after launch#6 (launches of kernels "
               "ATLAS_KERNEL leaves out reached it too, unchecked): 3 of the 6 launches since the "
               "last clean check reach it");
    HAS(r.log, "redzone:   x1, newest launch#4 kernel=poke grid=(2,1,1) block=(32,1,1) through "
               "arg0+0x0\n");
    run_free(&r);
    static const char *const bad[] = {"ATLAS_REDZONE_CHECK=launch", "ATLAS_KERNEL=(poke", NULL};
    rz_run(&r, "over", "1", bad);
    HAS(r.log, "ignoring ATLAS_KERNEL='(poke': not a POSIX extended regular expression (");
    HAS(r.log, "; using every kernel\n");
    HAS(r.log, "redzone: culprit: launch#4 kernel=poke");
    run_free(&r);
}
END_TEST

/* A context reset frees the library's mapped buffers with it: they are let
 * go before, and made again in the next context (no write into freed
 * memory, which a GPU answers with a fault). */
START_TEST(context_reset)
{
    struct run_result r;
    rz_run(&r, "reset", NULL, NULL);
    HAS(r.out, "checked by the kernel after the reset: 1\n");
    HAS(r.log, "redzone overrun: alloc#2 4096 bytes");
    HAS(r.log, "redzone: alloc#2 found at cuMemFree_v2:");
    HASNT(r.log, "unavailable");
    run_free(&r);
}
END_TEST

START_TEST(pitch_allocation)
{
    struct run_result r;
    rz_run(&r, "pitch", NULL, NULL);
    HAS(r.out, "pitch: 512\n");
    HAS(r.log, "redzone overrun: alloc#1 5120 bytes at 0x");
    HAS(r.log, "1 byte corrupted at +5120..+5120");
    run_free(&r);
}
END_TEST

START_TEST(program_api)
{
    struct run_result r, plain;
    rz_run(&r, "api", NULL, NULL);
    HAS(r.out, "scan: 1\nscan again: 0\npoisoned: 1\nscan after poison: 0\n"
               "scan after second overrun: 1\n");
    HAS(r.log, "3 bytes corrupted at +4096..+4098");
    HAS(r.log, "1 byte corrupted at +4100..+4100");
    HAS(r.log, "found at atlas_redzone_scan:");
    /* without the preload the calls are no-ops */
    char *argv[] = {PROG, "api", NULL};
    run_target(&plain, argv, NULL, 0);
    HAS(plain.out, "scan: 0\nscan again: 0\npoisoned: 0\n");
    run_free(&r);
    run_free(&plain);
}
END_TEST

/* Off by default: nothing printed, no extra driver calls. */
START_TEST(off_by_default)
{
    static const char *const env[] = {"ATLAS_REDZONE=0", NULL};
    struct run_result r;
    rz_run(&r, "async", NULL, env);
    HAS(r.out, "poisoned on the stream: 0, synchronously: 0\n");
    ck_assert_str_eq(r.log, "");
    run_free(&r);
}
END_TEST

/* The frameworks' pool variables, as a bash script (bash has its own
 * getenv/setenv: the library must edit `environ` itself) and a Python
 * program started from it see them. */
static void pools_run(struct run_result *r, const char *const env[])
{
    char *argv[] = {
        "/bin/bash", "-c",
        "echo \"PT=${PYTORCH_CUDA_ALLOC_CONF-unset} PTN=${PYTORCH_ALLOC_CONF-unset} "
        "XLA=${XLA_PYTHON_CLIENT_ALLOCATOR-unset}\"; "
        "python3 -c 'import os; print(\"py\", os.environ.get(\"PYTORCH_CUDA_ALLOC_CONF\"))' "
        "2>/dev/null || echo py none",
        NULL};
    run_target(r, argv, env, 1);
    ck_assert_msg(r->status == 0, "bash exited %d: %s", r->status, r->err);
}

/* By default (auto) JAX is routed and PyTorch keeps its caching allocator:
 * routing PyTorch breaks CUDA graph trees (docs/redzone.md). With
 * ATLAS_REDZONE_POOLS=route both are. */
START_TEST(pools_routed_with_redzones)
{
    struct run_result r;
    const char *env[] = {
        "ATLAS_REDZONE=64",   "ATLAS_LOG_LEVEL=info",        "PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_ALLOC_CONF", "XLA_PYTHON_CLIENT_ALLOCATOR", NULL};
    pools_run(&r, env);
    HAS(r.out, "PT=unset PTN=unset XLA=cuda_async\n");
    HAS(r.out, "py None\n");
    run_free(&r);
    const char *route[] = {
        "ATLAS_REDZONE=64",   "ATLAS_REDZONE_POOLS=route",   "PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_ALLOC_CONF", "XLA_PYTHON_CLIENT_ALLOCATOR", NULL};
    pools_run(&r, route);
    HAS(r.out, "PT=backend:cudaMallocAsync PTN=unset XLA=cuda_async\n");
    HAS(r.out, "py backend:cudaMallocAsync\n");
    run_free(&r);
}
END_TEST

START_TEST(pools_keep_what_the_user_set)
{
    struct run_result r;
    /* other options stay, the backend is appended */
    const char *env1[] = {"ATLAS_REDZONE=64",
                          "ATLAS_REDZONE_POOLS=route",
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                          "PYTORCH_ALLOC_CONF",
                          "XLA_PYTHON_CLIENT_ALLOCATOR=bfc",
                          NULL};
    pools_run(&r, env1);
    HAS(r.out, "PT=expandable_segments:True,backend:cudaMallocAsync PTN=unset XLA=bfc\n");
    run_free(&r);
    /* an explicit backend is left alone, in either spelling */
    const char *env2[] = {"ATLAS_REDZONE=64",
                          "ATLAS_REDZONE_POOLS=route",
                          "PYTORCH_CUDA_ALLOC_CONF",
                          "PYTORCH_ALLOC_CONF=backend:native",
                          "XLA_PYTHON_CLIENT_ALLOCATOR",
                          NULL};
    pools_run(&r, env2);
    HAS(r.out, "PT=unset PTN=backend:native XLA=cuda_async\n");
    run_free(&r);
    /* the newer name, when it is the one the user set, takes the backend */
    const char *env3[] = {"ATLAS_REDZONE=64", "ATLAS_REDZONE_POOLS=route",
                          "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF=max_split_size_mb:64",
                          NULL};
    pools_run(&r, env3);
    HAS(r.out, "PT=unset PTN=max_split_size_mb:64,backend:cudaMallocAsync ");
    run_free(&r);
    /* PyTorch's parser refuses an empty option: the user's trailing comma
     * is not doubled, and a value of any length is routed */
    const char *env4[] = {"ATLAS_REDZONE=64", "ATLAS_REDZONE_POOLS=route",
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, ,",
                          "PYTORCH_ALLOC_CONF", NULL};
    pools_run(&r, env4);
    HAS(r.out, "PT=expandable_segments:True,backend:cudaMallocAsync PTN=unset ");
    run_free(&r);
    char longv[1600] = "PYTORCH_CUDA_ALLOC_CONF=";
    for (int i = 0; i < 60; i++) /* 1,320 bytes of options */
        strcat(longv, "max_split_size_mb:512,");
    strcat(longv, "expandable_segments:True");
    const char *env5[] = {"ATLAS_REDZONE=64", "ATLAS_REDZONE_POOLS=route", longv,
                          "PYTORCH_ALLOC_CONF", NULL};
    pools_run(&r, env5);
    HAS(r.out, "PT=max_split_size_mb:512,max_split_size_mb:512,");
    HAS(r.out, "max_split_size_mb:512,expandable_segments:True,backend:cudaMallocAsync PTN=unset ");
    run_free(&r);
}
END_TEST

START_TEST(pools_untouched_without_redzones_or_with_keep)
{
    const char *cases[][6] = {
        {"ATLAS_REDZONE", NULL},
        {"ATLAS_REDZONE=0", NULL},
        {"ATLAS_REDZONE=lots", NULL}, /* invalid: red zones stay off */
        {"ATLAS_REDZONE=64", "ATLAS_REDZONE_POOLS=Keep", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *env[8] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
                              "XLA_PYTHON_CLIENT_ALLOCATOR"};
        for (int k = 0; cases[i][k]; k++)
            env[3 + k] = cases[i][k];
        struct run_result r;
        pools_run(&r, env);
        HAS(r.out, "PT=unset PTN=unset XLA=unset\n");
        run_free(&r);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("redzone");
    TCase *tc = tcase_create("fake");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, overrun_one_byte);
    tcase_add_test(tc, overrun_exactly_the_pad);
    tcase_add_test(tc, overrun_beyond_the_pad);
    tcase_add_test(tc, underrun_not_caught);
    tcase_add_test(tc, clean_program_no_report);
    tcase_add_test(tc, free_checks_are_dependent_launches);
    tcase_add_test(tc, bisect_min_idx);
    tcase_add_test(tc, trace_idx_backtrace);
    tcase_add_test(tc, check_at_sync);
    tcase_add_test(tc, copy_fallback);
    tcase_add_test(tc, check_at_launch_names_culprit);
    tcase_add_test(tc, check_at_launch_without_dependent_launch);
    tcase_add_test(tc, check_at_launch_reach);
    tcase_add_test(tc, check_at_launch_wide);
    tcase_add_test(tc, check_at_launch_indirect);
    tcase_add_test(tc, check_at_launch_two_streams);
    tcase_add_test(tc, check_at_launch_threads);
    tcase_add_test(tc, check_at_launch_same_launch);
    tcase_add_test(tc, check_at_launch_flat_cost);
    tcase_add_test(tc, clean_with_many_live);
    tcase_add_test(tc, check_at_launch_with_capture);
    tcase_add_test(tc, check_at_launch_with_per_thread_capture);
    tcase_add_test(tc, leaks_and_exit_scan);
    tcase_add_test(tc, leaks_without_redzone);
    tcase_add_test(tc, allocation_sites_at_one_depth);
    tcase_add_test(tc, stack_cache_many_chains_at_one_address);
    tcase_add_test(tc, teardown_no_false_alarm);
    tcase_add_test(tc, failed_alloc_report);
    tcase_add_test(tc, failed_alloc_not_oom_is_quiet);
    tcase_add_test(tc, unknown_and_double_free);
    tcase_add_test(tc, torch_pool_note);
    tcase_add_test(tc, stream_ordered);
    tcase_add_test(tc, legacy_stream_frees_held_in_batches);
    tcase_add_test(tc, quarantine_leaves_in_batches);
    tcase_add_test(tc, births_in_released_poison);
    tcase_add_test(tc, held_frees_from_threads);
    tcase_add_test(tc, held_frees_checked_at_exit);
    tcase_add_test(tc, held_frees_answer_as_native);
    tcase_add_test(tc, write_after_free);
    tcase_add_test(tc, write_after_free_other_stream);
    tcase_add_test(tc, quarantine_clean_many);
    tcase_add_test(tc, quarantine_bound);
    tcase_add_test(tc, quarantine_never_fails_an_allocation);
    tcase_add_test(tc, allocation_during_capture);
    tcase_add_test(tc, kernel_filter_in_launch_mode);
    tcase_add_test(tc, context_reset);
    tcase_add_test(tc, pitch_allocation);
    tcase_add_test(tc, program_api);
    tcase_add_test(tc, off_by_default);
    tcase_add_test(tc, pools_routed_with_redzones);
    tcase_add_test(tc, pools_keep_what_the_user_set);
    tcase_add_test(tc, pools_untouched_without_redzones_or_with_keep);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
