/*
 * Step traces under the preload, against the fake driver: for each scenario
 * of tests/targets/trace_steps.c, the report names exactly the host values
 * that changed between steps, and nothing else; each step-boundary mode
 * finds the steps; the JSON lines read back with atlas-diff (build/atlas-diff), which
 * exits like diff(1).
 */
#include "run.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T(name) BUILD_DIR "/tests/" name
#define TOOL BUILD_DIR "/atlas-diff"

/* Runs the target on scenario `sc` with ATLAS_TRACE=1 plus `extra`. */
static void trace_run(struct run_result *r, const char *sc, const char *steps,
                      const char *const extra[])
{
    const char *env[16] = {"ATLAS_TRACE=1"};
    int n = 1;
    for (int i = 0; extra && extra[i] && n < 15; i++)
        env[n++] = extra[i];
    env[n] = NULL;
    char *argv[] = {T("trace_steps"), (char *)sc, (char *)steps, NULL};
    run_target(r, argv, env, 1);
    ck_assert_msg(r->status == 0, "trace_steps %s exited %d\nstderr:\n%s\nlog:\n%s", sc, r->status,
                  r->err, r->log);
    ck_assert_msg(strstr(r->out, "ok\n"), "no ok from %s", sc);
}

/* NVTX_INJECTION64_PATH=<this build's libatlastrace.so>, in buf. */
static const char *nvtx_injection(char *buf, size_t len)
{
    char lib[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/libatlastrace.so", lib));
    snprintf(buf, len, "NVTX_INJECTION64_PATH=%s", lib);
    return buf;
}

/* Report lines that name one field of one op. */
static int op_lines(const char *log)
{
    return count_lines(log, ":   op ");
}

/* Step 2 differs from step 1 in one scalar and is reported; step 3 differs
 * from step 2 exactly so (the same field, the same delta): folded into one
 * line, printed when the run ends. The "most often differing" line would
 * only repeat the frozen value's. */
/* A change every fourth step (a buffer passed for four steps in turn) is one run, folded by
 * its period (issue #46: 200 lines over 400 steps, one report for each change). */
START_TEST(periodic_change_folded)
{
    struct run_result r;
    trace_run(&r, "period4", "400", NULL);
    ck_assert_int_eq(count_lines(r.log, "pair arg0 another buffer every 4 steps (97 steps)"), 1);
    ck_assert_int_eq(count_lines(r.log, "differs from #"), 2);
    ck_assert_msg(count_lines(r.log, "atlas[") <= 8, "%d lines:\n%s", count_lines(r.log, "atlas["),
                  r.log);
    run_free(&r);
    /* every step, as before: one run */
    trace_run(&r, "swap", "40", NULL);
    HAS(r.log, "steps 3-40 (\"cuStreamSynchronize\"): pair arg0 another buffer each step (38 "
               "steps)");
    run_free(&r);
}
END_TEST

START_TEST(scalar_parameter)
{
    struct run_result r;
    trace_run(&r, "scalar", "3", NULL);
    ck_assert_int_eq(
        count_lines(
            r.log,
            "op 1 add_step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x64 -> 0x65 (delta +1)"),
        1);
    ck_assert_int_eq(count_lines(r.log, "step 3 (\"cuStreamSynchronize\"): add_step arg1 +1 per "
                                        "step, 0x65 -> 0x66 (1 step)"),
                     1);
    ck_assert_int_eq(op_lines(r.log), 1);
    ck_assert_int_eq(
        count_lines(r.log, "trace summary: steps=3 compared=2 identical=0 differing=2 shapes=1"),
        1);
    ck_assert_int_eq(
        count_lines(r.log, "trace summary: frozen value: add_step arg1 changed in 2 steps: +1 per "
                           "step (0x64 -> 0x66)"),
        1);
    ck_assert_int_eq(count_lines(r.log, "most often differing"), 0);
    ck_assert_int_eq(count_lines(r.log, "atlas["), 5);
    run_free(&r);
}
END_TEST

/* The issue's loop: 1,000 steps, one scalar changing by one each step: the
 * first change, one line for the other 998, and the summary. Printed 2,001
 * lines before (two a step). */
START_TEST(thousand_steps_one_scalar)
{
    struct run_result r;
    trace_run(&r, "scalar", "1000", NULL);
    ck_assert_int_eq(count_lines(r.log, "steps 3-1000 (\"cuStreamSynchronize\"): add_step arg1 +1 "
                                        "per step, 0x65 -> 0x44b (998 steps)"),
                     1);
    ck_assert_msg(count_lines(r.log, "atlas[") <= 5, "%s", r.log);
    ck_assert_int_eq(count_lines(r.log, "atlas["), 5);
    run_free(&r);
}
END_TEST

/* Done when (issue #30): ten warm-up syncs of different work (each a shape
 * of its own), then thirty steps that differ in one scalar: the new shapes
 * in one line, the change and its repeats in one line (the kind is in
 * warm-up, so step 12's report waits for step 13, which changes the same
 * way: a run from step 12), the summary. Each warm-up step was compared with
 * the one before (ten reports) before. */
START_TEST(warmup_then_loop)
{
    struct run_result r;
    trace_run(&r, "warmup", "40", NULL);
    ck_assert_int_eq(count_lines(r.log, "steps 2-11 (\"cuStreamSynchronize\"): 10 steps of new "
                                        "shapes, 3 to 11 ops; 11 shapes so far"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "steps 12-40 (\"cuStreamSynchronize\"): add_step arg1 +1 "
                                        "per step, 0x6e -> 0x8b (29 steps)"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "trace summary: steps=40 compared=29 identical=0 "
                                        "differing=29 shapes=11"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "trace summary: steps per shape: 30 "
                                        "(\"cuStreamSynchronize\", 3 ops), 10 in 10 other shapes"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "frozen value: add_step arg1 changed in 29 steps"), 1);
    ck_assert_int_eq(op_lines(r.log), 0);
    ck_assert_msg(count_lines(r.log, "atlas[") <= 20, "%s", r.log);
    ck_assert_int_eq(count_lines(r.log, "atlas["), 5);
    run_free(&r);
    /* ATLAS_DIFF_WARMUP=1: step 12's report is printed, then its repeats in one line */
    const char *all[] = {"ATLAS_DIFF_WARMUP=1", NULL};
    trace_run(&r, "warmup", "40", all);
    ck_assert_int_eq(count_lines(r.log, "step \"cuStreamSynchronize\" #12 (step 12) differs from "
                                        "#11: 3 ops (was 3, +0)"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "op 1 add_step(float*, int) [launch] arg1 @0x8 (4 bytes): "
                                        "0x6e -> 0x6f (delta +1)"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "steps 13-40 (\"cuStreamSynchronize\"): add_step arg1 +1 "
                                        "per step, 0x6f -> 0x8b (28 steps)"),
                     1);
    run_free(&r);
}
END_TEST

/* A host buffer read back into, one of two in turn: pageable ones (no capture takes such a
 * copy) are collapsed and the steps counted identical; a pinned one that moves is a host
 * value a graph would freeze, reported; ATLAS_DIFF_POINTERS=all prints the pageable ones. */
START_TEST(pageable_host_buffers_collapsed)
{
    struct run_result r;
    trace_run(&r, "hostbufs", "10", NULL);
    /* the pinned buffer changes at steps 5 and 9: two reports, each naming the pageable move
     * beside it in one line */
    ck_assert_msg(count_lines(r.log, "differs from") == 2, "%s", r.log);
    ck_assert_msg(count_lines(r.log, "  op 2 [copy] dst: ") == 2, "%s", r.log);
    ck_assert_msg(count_lines(r.log, "  op 1 [copy] dst: ") == 0, "%s", r.log);
    ck_assert_msg(count_lines(r.log, "  1 host buffer of pageable copies moved (no stream capture "
                                     "takes a pageable copy): copy dst") == 2,
                  "%s", r.log);
    ck_assert_msg(count_lines(r.log, "trace summary: 7 steps counted identical") == 1, "%s", r.log);
    run_free(&r);
    const char *all[] = {"ATLAS_DIFF_POINTERS=all", NULL};
    trace_run(&r, "hostbufs", "10", all);
    ck_assert_msg(count_lines(r.log, "  op 1 [copy] dst: ") >= 5, "%s", r.log);
    run_free(&r);
}
END_TEST

/* Warm-up (a kind of three shapes or more) that never settles: reports that change other
 * values each time are held back and counted, not printed; the loop after it, once its
 * steps repeat, reports its change. */
START_TEST(warmup_held_then_settled)
{
    struct run_result r;
    trace_run(&r, "autotune", "30", NULL);
    ck_assert_msg(count_lines(r.log, "differing steps of warm-up not printed") == 1, "%s", r.log);
    ck_assert_msg(count_lines(r.log, "differs from") == 1, "%s", r.log);
    ck_assert_msg(count_lines(r.log, "arg1 @0x8 (4 bytes): 0x7 -> 0x8 (delta +1)") == 1, "%s",
                  r.log);
    run_free(&r);
}
END_TEST

/* The step tracer takes each kernel's layout from the record its launch
 * carries (src/kernels.h), which asked the driver once, at the lookup: a
 * traced run asks the driver for layouts no more often than an untraced one
 * (twice as often before: the tracer asked again). */
static unsigned long paraminfo_calls(const char *trace)
{
    const char *env[] = {"TS_PARAMINFO=1", trace, NULL};
    char *argv[] = {T("trace_steps"), "scalar", "3", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "trace_steps exited %d\n%s", r.status, r.err);
    const char *p = strstr(r.out, "param-info calls=");
    ck_assert_ptr_nonnull(p);
    unsigned long n = strtoul(p + strlen("param-info calls="), NULL, 10);
    run_free(&r);
    return n;
}

START_TEST(layout_asked_once_per_kernel)
{
    unsigned long plain = paraminfo_calls("ATLAS_TRACE=0");
    unsigned long traced = paraminfo_calls("ATLAS_TRACE=1");
    ck_assert_uint_gt(plain, 0);
    ck_assert_uint_eq(traced, plain);
}
END_TEST

START_TEST(pointer_parameters)
{
    struct run_result r;
    const char *all[] = {"ATLAS_DIFF_POINTERS=all", NULL};
    trace_run(&r, "ptr", "3", all);
    /* arg0: a fresh allocation every step (the old one stays: the ledger
     * says where the new one was made, and that the old one is still
     * allocated); arg1: the same buffer, 16 bytes on. Step 3 changes as
     * step 2 did: folded. */
    ck_assert_int_eq(count_lines(r.log, "arg0 @0x0 (8 bytes)"), 1);
    ck_assert_int_eq(count_lines(r.log, "(delta +16): same buffer, another offset"), 1);
    ck_assert_int_eq(count_lines(r.log, "): another buffer: alloc#3 (1024 bytes, made after step 1 "
                                        "at "),
                     1);
    ck_assert_int_eq(count_lines(r.log, "; alloc#2 still allocated"), 1);
    ck_assert_int_eq(count_lines(r.log, "arg1 @0x8 (8 bytes): 0x"), 1);
    ck_assert_int_eq(count_lines(r.log,
                                 "step 3 (\"cuStreamSynchronize\"): pair arg0 another buffer "
                                 "each step, pair arg1 +16 per step"),
                     1);
    ck_assert_int_eq(op_lines(r.log), 2);
    run_free(&r);
    /* by default a pointer that moved within its allocation is one line a step */
    trace_run(&r, "ptr", "3", NULL);
    ck_assert_int_eq(count_lines(r.log, "): another buffer"), 1);
    ck_assert_int_eq(
        count_lines(
            r.log,
            ":   1 pointer argument moved within its allocation (allocator reuse): pair arg1"),
        1);
    ck_assert_int_eq(count_lines(r.log,
                                 "step 3 (\"cuStreamSynchronize\"): pair arg0 another buffer "
                                 "each step, pointers moved within their allocations: "
                                 "pair arg1 (1 step)"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "same buffer, another offset"), 0);
    run_free(&r);
    /* none: not reported; the fresh buffer still is */
    const char *none[] = {"ATLAS_DIFF_POINTERS=none", NULL};
    trace_run(&r, "ptr", "3", none);
    ck_assert_int_eq(count_lines(r.log, "): another buffer"), 1);
    ck_assert_int_eq(count_lines(r.log, "allocator reuse"), 0);
    ck_assert_int_eq(op_lines(r.log), 1);
    run_free(&r);
    /* the ledger unchanged since the step before: the op that differs is
     * resolved again, its new pointer named */
    trace_run(&r, "swap", "2", NULL);
    ck_assert_int_eq(count_lines(r.log, "alloc#2+0x0 -> 0x"), 1);
    ck_assert_int_eq(count_lines(r.log, " alloc#3+0x0 (delta +"), 1);
    ck_assert_int_eq(count_lines(r.log, "): another buffer: alloc#3 (256 bytes, made by the end of "
                                        "step 1 at "),
                     1);
    ck_assert_int_eq(count_lines(r.log, "; alloc#2 still allocated"), 1);
    run_free(&r);
    /* churn: each step a buffer is made and the one before freed; the new
     * one replaces it, and the ledger says where the old one was freed */
    trace_run(&r, "churn", "3", NULL);
    ck_assert_int_eq(count_lines(r.log, "): another buffer: alloc#3 (1024 bytes, made after step 1 "
                                        "at "),
                     1);
    ck_assert_int_eq(count_lines(r.log, ") replaces alloc#2 (1024 bytes), freed at "), 1);
    run_free(&r);
}
END_TEST

/* A pointer that moves from one segment of PyTorch's caching allocator to another (two
 * allocations made from libc10_cuda) is the allocator's reuse, as a move within one segment is:
 * collapsed, and the steps counted identical (the DDP step of issue #43, where the allocator
 * handed a tensor a block of another 2 MiB segment). The same segments made by any other
 * library are another buffer, reported; ATLAS_DIFF_POINTERS=all reports them too. */
START_TEST(caching_allocator_segments)
{
    struct run_result r;
    char c10[PATH_MAX + 16], other[PATH_MAX + 16], path[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/tests/c10/libc10_cuda.so", path));
    snprintf(c10, sizeof c10, "TS_SEGLIB=%s", path);
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/tests/libsegs.so", path));
    snprintf(other, sizeof other, "TS_SEGLIB=%s", path);

    const char *pytorch[] = {c10, NULL};
    trace_run(&r, "segments", "8", pytorch);
    ck_assert_msg(count_lines(r.log, "differs from") == 0, "%s", r.log);
    ck_assert_int_eq(count_lines(r.log, "trace summary: steps=8 compared=7 identical=7 "
                                        "differing=0"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "trace summary: 7 steps counted identical: only pointers "
                                        "that moved within their allocations or between a "
                                        "caching allocator's segments"),
                     1);
    run_free(&r);

    const char *all[] = {c10, "ATLAS_DIFF_POINTERS=all", NULL};
    trace_run(&r, "segments", "8", all);
    ck_assert_msg(count_lines(r.log, "[launch] arg0 @0x0 (8 bytes): 0x") == 1, "%s", r.log);
    ck_assert_int_eq(count_lines(r.log, "[memset] ptr: 0x"), 1);
    ck_assert_int_eq(count_lines(r.log, "another buffer"), 2 + 1);
    run_free(&r);

    const char *elsewhere[] = {other, NULL};
    trace_run(&r, "segments", "8", elsewhere);
    ck_assert_msg(count_lines(r.log, "differs from #1") == 1, "%s", r.log);
    ck_assert_int_eq(count_lines(r.log, ": another buffer: alloc#3 (2097152 bytes"), 2);
    ck_assert_int_eq(count_lines(r.log, "caching allocator"), 0);
    run_free(&r);
}
END_TEST

/* XLA's autotuner: one extern "C" name in two modules, with 16 bytes of parameters in one and
 * 304 in the other. The second is another kernel, so its first step is a new shape, not a step
 * whose launch changed its parameter layout and shared memory. */
START_TEST(same_name_other_layout_is_a_new_shape)
{
    struct run_result r;
    trace_run(&r, "variants", "8", NULL);
    ck_assert_msg(count_lines(r.log, "differs") == 0, "%s", r.log);
    ck_assert_int_eq(count_lines(r.log, "parameter layout"), 0);
    ck_assert_msg(count_lines(r.log, "trace summary: steps=8 compared=6 identical=6 differing=0 "
                                     "shapes=2") == 1,
                  "%s", r.log);
    run_free(&r);
}
END_TEST

/* ATLAS_SELF_TIME=1: a table at exit of the library's own time in each hooked function that
 * came through the engine, the driver's apart: 5 steps of 3 launches and a sync each. */
static int selftime_row(const char *log, const char *fn, unsigned long long *calls, double *lib)
{
    char want[96];
    snprintf(want, sizeof want, "self-time: %s ", fn);
    const char *at = strstr(log, want);
    double per, mx, drv;
    return at &&
           sscanf(at + strlen(want), "%llu %lf %lf %lf %lf", calls, lib, &per, &mx, &drv) == 5;
}

START_TEST(self_time_table)
{
    struct run_result r;
    const char *env[] = {"ATLAS_SELF_TIME=1", NULL};
    trace_run(&r, "scalar", "5", env);
    unsigned long long calls = 0;
    double lib = -1;
    ck_assert_msg(selftime_row(r.log, "cuLaunchKernel", &calls, &lib), "%s", r.log);
    ck_assert_int_eq(calls, 15);
    ck_assert(lib >= 0);
    ck_assert_msg(selftime_row(r.log, "cuStreamSynchronize", &calls, &lib), "%s", r.log);
    ck_assert_int_eq(calls, 5);
    ck_assert_int_eq(count_lines(r.log, "self-time: the library's own time in "), 1);
    run_free(&r);
    trace_run(&r, "scalar", "5", NULL);
    ck_assert_int_eq(count_lines(r.log, "self-time"), 0);
    run_free(&r);
}
END_TEST

START_TEST(grid_change)
{
    struct run_result r;
    trace_run(&r, "grid", "3", NULL);
    ck_assert_int_eq(count_lines(r.log, "[launch] grid: (2,1,1) -> (4,1,1)"), 1);
    ck_assert_int_eq(count_lines(r.log, "[launch] grid: (4,1,1) -> (8,1,1)"), 1);
    ck_assert_int_eq(op_lines(r.log), 2);
    run_free(&r);
}
END_TEST

/* Kernels without parameters are recorded too, even when no op before them
 * had a parameter byte (the thread's byte buffer does not exist yet). */
START_TEST(kernels_without_parameters)
{
    struct run_result r;
    trace_run(&r, "noparams", "3", NULL);
    ck_assert_int_eq(count_lines(r.log, "none() [launch] grid: (2,1,1) -> (4,1,1)"), 1);
    ck_assert_int_eq(count_lines(r.log, "none() [launch] grid: (4,1,1) -> (8,1,1)"), 1);
    ck_assert_int_eq(op_lines(r.log), 2);
    HAS(r.log, "steps=3 compared=2 identical=0 differing=2");
    run_free(&r);
}
END_TEST

/* Step 2 has one extra memset in the middle: a shape of its own, said in
 * one line with where it parts from the step before; step 3 drops it again
 * and is compared with step 1, the last step of its shape: identical. */
START_TEST(inserted_op_only)
{
    struct run_result r;
    trace_run(&r, "insert", "3", NULL);
    ck_assert_int_eq(count_lines(r.log, "step \"cuStreamSynchronize\" #2 (step 2): a new shape, 6 "
                                        "ops (#1 had 5: op 2 inserted: memset ptr="),
                     1);
    ck_assert_int_eq(count_lines(r.log, "differs"), 0);
    ck_assert_int_eq(op_lines(r.log), 0);
    ck_assert_int_eq(
        count_lines(r.log, "trace summary: steps=3 compared=1 identical=1 differing=0 shapes=2"),
        1);
    ck_assert_int_eq(count_lines(r.log, "trace summary: steps per shape: 2 "
                                        "(\"cuStreamSynchronize\", 5 ops), 1 in 1 other shape"),
                     1);
    run_free(&r);
}
END_TEST

START_TEST(big_by_value_parameter)
{
    struct run_result r;
    trace_run(&r, "blob", "2", NULL);
    ck_assert_int_eq(
        count_lines(r.log, "op 0 blob(float*, blob) [launch] arg1+0x40 @0x48 (8 of 128 bytes): "
                           "0x1111111111111111 -> 0x1111111111111112 (delta +1)"),
        1);
    ck_assert_int_eq(op_lines(r.log), 1);
    run_free(&r);
}
END_TEST

/* Synchronous device-to-device copies (1D and 2D) end no step in sync mode: the host does not
 * wait for them (src/events.h's host_waits, decided once by the engine). Before, each ended
 * one: 9 steps of three shapes where the program has 3 of one. */
START_TEST(device_copies_end_no_step)
{
    struct run_result r;
    trace_run(&r, "devcopies", "3", NULL);
    ck_assert_msg(count_lines(r.log, "trace summary: steps=3 compared=2 identical=2 "
                                     "differing=0 shapes=1") == 1,
                  "%s", r.log);
    run_free(&r);
}
END_TEST

/* A capture on the per-thread default stream through the _ptsz twins and stream 0 (nvcc
 * --default-stream per-thread): its launch is captured, so ATLAS_STEP=capture records the
 * capture as a step. Before, the trace asked the legacy stream's status and took the launch
 * for an eager one: steps=0. (redzone_prog's scenario; test_redzone.c checks red zones on it.) */
START_TEST(per_thread_capture_is_a_capture)
{
    struct run_result r;
    const char *env[] = {"ATLAS_TRACE=1", "ATLAS_STEP=capture", NULL};
    char *argv[] = {T("redzone_prog"), "capture-pt", NULL};
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s\n%s", r.status, r.err, r.log);
    ck_assert_msg(strstr(r.out, "captured ops: 1\n"), "%s", r.out);
    ck_assert_msg(count_lines(r.log, "trace summary: steps=1 compared=0") == 1, "%s", r.log);
    run_free(&r);
}
END_TEST

/* The uninitialised tail of a by-value struct (a stack address and a
 * counter, different every step) is not a host value: one collapsed line
 * per step, none with ATLAS_DIFF_RESIDUE=none, a line each with =all. */
START_TEST(uninitialised_struct_bytes)
{
    struct run_result r;
    trace_run(&r, "residue", "3", NULL);
    /* by default no host value differs: nothing printed, the steps counted identical */
    ck_assert_msg(!strstr(r.log, "differs") && !strstr(r.log, "uninitialised bytes, most likely"),
                  "%s", r.log);
    ck_assert_int_eq(count_lines(r.log, "trace summary: steps=3 compared=2 identical=2 "
                                        "differing=0"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "trace summary: 2 steps counted identical: only pointers "
                                        "that moved within their allocations or between a "
                                        "caching allocator's segments (allocator reuse), "
                                        "host buffers of pageable copies or uninitialised "
                                        "bytes of by-value parameters changed"),
                     1);
    ck_assert_int_eq(op_lines(r.log), 0);
    ck_assert_msg(!strstr(r.log, "frozen value"), "%s", r.log);
    run_free(&r);
    const char *none[] = {"ATLAS_DIFF_RESIDUE=none", NULL};
    trace_run(&r, "residue", "3", none);
    ck_assert_msg(!strstr(r.log, "differs"), "%s", r.log);
    run_free(&r);
    const char *all[] = {"ATLAS_DIFF_RESIDUE=all", NULL};
    trace_run(&r, "residue", "3", all);
    ck_assert_int_eq(count_lines(r.log, "(host-memory residue)"), 2);
    ck_assert_int_eq(count_lines(r.log, "step 3 (\"cuStreamSynchronize\"): blob arg1+0x40 +8 per "
                                        "step, "),
                     1);
    run_free(&r);
}
END_TEST

START_TEST(packed_extra_buffer)
{
    struct run_result r;
    trace_run(&r, "extra", "2", NULL);
    ck_assert_int_eq(count_lines(r.log, "arg1 @0x8 (4 bytes): 0x28 -> 0x29 (delta +1)"), 1);
    ck_assert_int_eq(op_lines(r.log), 1);
    run_free(&r);
}
END_TEST

START_TEST(layout_unknown_said_once)
{
    struct run_result r;
    trace_run(&r, "noinfo", "3", NULL);
    ck_assert_int_eq(
        count_lines(
            r.log,
            "step trace: kernel=add_step(float*, int): the driver gives no parameter layout"),
        1);
    ck_assert_int_eq(op_lines(r.log), 0);
    run_free(&r);
}
END_TEST

START_TEST(nvtx_without_injection_says_so)
{
    struct run_result r;
    const char *env[] = {"ATLAS_STEP=nvtx:step", "NVTX_INJECTION64_PATH", NULL};
    trace_run(&r, "nvtx", "2", env);
    /* the command to run instead names the library (test_hints.sh pastes it) */
    ck_assert_int_eq(count_lines(r.log, "NVTX never called atlastrace: re-run with "
                                        "NVTX_INJECTION64_PATH naming it: LD_PRELOAD="),
                     1);
    char inj[PATH_MAX + 32];
    HAS(r.log, nvtx_injection(inj, sizeof inj));
    run_free(&r);
}
END_TEST

START_TEST(identical_steps_silent)
{
    struct run_result r;
    trace_run(&r, "same", "4", NULL);
    ck_assert_int_eq(count_lines(r.log, "differs"), 0);
    ck_assert_int_eq(op_lines(r.log), 0);
    ck_assert_int_eq(
        count_lines(r.log, "trace summary: steps=4 compared=3 identical=3 differing=0"), 1);
    run_free(&r);
}
END_TEST

START_TEST(threads_ordered_per_stream)
{
    struct run_result r;
    /* four threads, four streams, interleaved differently each step; one
     * argument of one launch changes in step 3 (and back in step 4) */
    trace_run(&r, "threads", "4", NULL);
    ck_assert_int_eq(
        count_lines(r.log,
                    "op 107 add_step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x7d7 -> 0x7d8"),
        1);
    ck_assert_int_eq(
        count_lines(r.log,
                    "op 107 add_step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x7d8 -> 0x7d7"),
        1);
    ck_assert_int_eq(op_lines(r.log), 2);
    ck_assert_int_eq(count_lines(r.log, "200 ops (was 200, +0)"), 2);
    run_free(&r);
}
END_TEST

/* Four threads, each with its own stream and buffer, 50 identical steps
 * each, synchronising their own stream or the context: every thread's
 * steps are its own, so nothing differs (one global step, ended by any
 * thread's sync, reported dozens of interleavings). */
START_TEST(threads_own_steps_silent)
{
    struct run_result r;
    trace_run(&r, "tsteps", "0", NULL);
    ck_assert_int_eq(count_lines(r.log, "differs"), 0);
    ck_assert_int_eq(count_lines(r.log, "steps=200 compared=196 identical=196 differing=0"), 1);
    run_free(&r);
    trace_run(&r, "tsteps-ctx", "0", NULL);
    ck_assert_int_eq(count_lines(r.log, "differs"), 0);
    ck_assert_int_eq(count_lines(r.log, "steps=200 compared=196 identical=196 differing=0"), 1);
    run_free(&r);
}
END_TEST

/* The same four threads synchronising the context, run many times: a thread
 * ending its step on the fast path (no step_mu) stored a step count newer
 * than the one another thread's step end had read, the unsigned difference
 * wrapped to "stale", and the syncing thread's ops were lent to another
 * thread's step (about 1 run in 50-100 on 2 cores: one step missing, or a
 * step that differs). The race is timing-dependent: 300 runs find the old
 * code with a probability above 99% and cannot fail the fixed one. */
START_TEST(threads_own_steps_every_run)
{
    for (int i = 0; i < 300; i++) {
        struct run_result r;
        trace_run(&r, "tsteps-ctx", "0", NULL);
        ck_assert_msg(count_lines(r.log, "differs") == 0 &&
                          count_lines(r.log, "steps=200 compared=196 identical=196 differing=0") ==
                              1,
                      "run %d of 300:\n%s", i + 1, r.log);
        run_free(&r);
    }
}
END_TEST

/* The one thread whose scalar changes is named: its pthread name, or its
 * number when it has none, and its stream. */
START_TEST(thread_named_in_report)
{
    struct run_result r;
    trace_run(&r, "tsteps-change", "0", NULL);
    ck_assert_int_eq(count_lines(r.log, "step \"cuStreamSynchronize\" (thread worker-2, stream 0x"),
                     2);
    ck_assert_int_eq(count_lines(r.log, "#21 (step "), 1);
    ck_assert_int_eq(count_lines(r.log, "arg1 @0x8 (4 bytes): 0x7d0 -> 0x7d1 (delta +1)"), 1);
    ck_assert_int_eq(op_lines(r.log), 2);
    run_free(&r);
    trace_run(&r, "tsteps-ctx-change", "0", NULL);
    ck_assert_int_eq(count_lines(r.log, "step \"cuCtxSynchronize\" (thread #"), 2);
    ck_assert_int_eq(op_lines(r.log), 2);
    run_free(&r);
}
END_TEST

/* PyTorch's shape: forward from the main thread, backward from a helper
 * thread on the same stream, optimizer from the main thread. The step the
 * main thread ends (its sync, or its NVTX range) holds the backward ops. */
START_TEST(helper_thread_ops_in_step)
{
    struct run_result r;
    trace_run(&r, "autograd", "3", NULL);
    ck_assert_int_eq(count_lines(r.log, "differs from #1: 5 ops (was 5, +0)"), 1);
    ck_assert_int_eq(count_lines(r.log, "arg1 @0x8 (4 bytes): 0xc8 -> 0xc9 (delta +1)"), 1);
    ck_assert_int_eq(count_lines(r.log, ": add_step arg1 +1 per step, 0xc9 -> 0xca (1 step)"), 1);
    ck_assert_int_eq(op_lines(r.log), 1);
    run_free(&r);
    trace_run(&r, "autograd-same", "5", NULL);
    ck_assert_int_eq(count_lines(r.log, "steps=5 compared=4 identical=4 differing=0"), 1);
    run_free(&r);
    /* on the default stream, named NULL by the launches and CU_STREAM_LEGACY
     * by the sync */
    trace_run(&r, "autograd-legacy", "3", NULL);
    ck_assert_int_eq(count_lines(r.log, "differs from #1: 5 ops (was 5, +0)"), 1);
    ck_assert_int_eq(op_lines(r.log), 1);
    run_free(&r);

    char inj[PATH_MAX + 32];
    const char *env[] = {"ATLAS_STEP=nvtx:step", nvtx_injection(inj, sizeof inj), NULL};
    trace_run(&r, "autograd", "3", env);
    ck_assert_int_eq(count_lines(r.log, "step \"step\" #2 (step 2) differs from #1: 5 ops (was 5"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "arg1 @0x8 (4 bytes): 0xc8 -> 0xc9 (delta +1)"), 1);
    ck_assert_int_eq(count_lines(r.log, "step 3 (\"step\"): add_step arg1 +1 per step"), 1);
    ck_assert_int_eq(op_lines(r.log), 1);
    run_free(&r);
    trace_run(&r, "autograd-same", "4", env);
    ck_assert_int_eq(count_lines(r.log, "steps=4 compared=3 identical=3 differing=0"), 1);
    run_free(&r);
}
END_TEST

/* Captured once, replayed every step: the captured launches were not
 * executed where they were enqueued, so the first step holds the graph
 * launch only, like every later one. */
START_TEST(captured_ops_not_in_eager_step)
{
    struct run_result r;
    trace_run(&r, "replay", "10", NULL);
    ck_assert_int_eq(count_lines(r.log, "differs"), 0);
    ck_assert_int_eq(count_lines(r.log, "steps=10 compared=9 identical=9 differing=0"), 1);
    run_free(&r);
}
END_TEST

/* Sizes read in decimal bytes, and the summary names the op kind. */
/* Eager against captured: a graph captured with the scalar 17 baked in,
 * then eager steps of the same ops passing 100, 101, ...: each eager step is
 * compared with the capture, which names that scalar and nothing else (the
 * first comparison in full, the rest in one line). Captured after three
 * eager steps: the capture is compared with the latest of them. */
START_TEST(eager_against_captured)
{
    struct run_result r;
    trace_run(&r, "captured", "5", NULL);
    ck_assert_int_eq(count_lines(r.log, "step \"cuStreamSynchronize\" #2 (step 2) has the shape of "
                                        "capture #1 (after step 0) and other values: 3 ops"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "op 1 add_step(float*, int) [launch] arg1 @0x8 (4 bytes): "
                                        "0x11 when captured, 0x64 now (delta +83); a replay uses "
                                        "0x11"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "when captured"), 1);
    ck_assert_int_eq(count_lines(r.log, "steps 3-6 (\"cuStreamSynchronize\", against the capture): "
                                        "add_step arg1 differs from the capture (4 steps)"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "capture"), 3);
    run_free(&r);
    trace_run(&r, "captured-late", "6", NULL);
    ck_assert_int_eq(count_lines(r.log,
                                 "capture #1 (after step 3) has the shape of step "
                                 "\"cuStreamSynchronize\" #3 (step 3) and other values: 3 ops"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "arg1 @0x8 (4 bytes): 0x11 when captured, 0x66 in step 3 "
                                        "(delta +85); a replay uses 0x11"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "steps 5-7 (\"cuStreamSynchronize\", against the capture): "
                                        "add_step arg1 differs from the capture (3 steps)"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "when captured"), 1);
    run_free(&r);
    /* a capture mode of its own: the captures are the steps, nothing else */
    const char *env[] = {"ATLAS_STEP=capture", NULL};
    trace_run(&r, "captured", "5", env);
    ck_assert_int_eq(count_lines(r.log, "when captured"), 0);
    run_free(&r);
}
END_TEST

START_TEST(sizes_in_decimal)
{
    struct run_result r;
    trace_run(&r, "copy-grow", "3", NULL);
    ck_assert_int_eq(count_lines(r.log, "op 0 [copy] width: 1024 -> 2048 bytes (delta +1024)"), 1);
    ck_assert_int_eq(count_lines(r.log, "most often differing: copy width (2x)"), 1);
    ck_assert_int_eq(op_lines(r.log), 2);
    run_free(&r);
}
END_TEST

START_TEST(diff_max)
{
    struct run_result r;
    const char *env[] = {"ATLAS_DIFF_MAX=3", NULL};
    trace_run(&r, "eight", "2", env);
    ck_assert_int_eq(op_lines(r.log), 3);
    ck_assert_int_eq(count_lines(r.log, "... 5 more differences not shown (ATLAS_DIFF_MAX=3)"), 1);
    run_free(&r);
}
END_TEST

START_TEST(diff_ignore)
{
    struct run_result r;
    const char *env[] = {"ATLAS_DIFF_IGNORE=add_step:arg1", NULL};
    trace_run(&r, "scalar", "3", env);
    ck_assert_int_eq(op_lines(r.log), 0);
    ck_assert_int_eq(count_lines(r.log, "identical=2"), 1);
    run_free(&r);
    const char *env2[] = {"ATLAS_DIFF_IGNORE=eight:arg3,eight:arg5", NULL};
    trace_run(&r, "eight", "2", env2);
    ck_assert_int_eq(op_lines(r.log), 6);
    ck_assert_int_eq(count_lines(r.log, "arg3 @"), 0);
    ck_assert_int_eq(count_lines(r.log, "arg5 @"), 0);
    run_free(&r);
}
END_TEST

/* ATLAS_KERNEL limits the step trace to the kernels it matches: "scalar" launches fill, add_step
 * (its argument changes every step), fill. */
START_TEST(kernel_filter)
{
    struct run_result r;
    const char *fill_only[] = {"ATLAS_KERNEL=^fill", NULL};
    trace_run(&r, "scalar", "3", fill_only);
    ck_assert_int_eq(count_lines(r.log, "trace summary: steps=3 compared=2 identical=2"), 1);
    ck_assert_int_eq(count_lines(r.log, "add_step"), 0);
    run_free(&r);
    const char *add_only[] = {"ATLAS_KERNEL=add_step", NULL};
    trace_run(&r, "scalar", "3", add_only);
    ck_assert_int_eq(count_lines(r.log, "differs from #1: 1 op (was 1, +0)"), 1);
    /* step 3 differs as step 2 did: folded into one line (src/stepseries.c) */
    ck_assert_int_eq(count_lines(r.log, "op 0 add_step(float*, int) [launch] arg1"), 1);
    ck_assert_int_eq(
        count_lines(r.log, "step 3 (\"cuStreamSynchronize\"): add_step arg1 +1 per step"), 1);
    ck_assert_int_eq(count_lines(r.log, "identical=0 differing=2"), 1);
    run_free(&r);
}
END_TEST

START_TEST(capture_mode)
{
    struct run_result r;
    const char *env[] = {"ATLAS_STEP=capture", NULL};
    trace_run(&r, "capture", "3", env);
    ck_assert_int_eq(count_lines(r.log, "capture #2 is replay-safe: identical to #1 (3 ops)"), 1);
    ck_assert_int_eq(count_lines(r.log, "capture #3 is replay-safe: identical to #2 (3 ops)"), 1);
    ck_assert_int_eq(op_lines(r.log), 0);
    run_free(&r);
    trace_run(&r, "capture-changing", "2", env);
    ck_assert_int_eq(count_lines(r.log, "step \"capture\" #2"), 1);
    ck_assert_int_eq(count_lines(r.log, "arg1 @0x8 (4 bytes): 0x64 -> 0x65 (delta +1)"), 1);
    ck_assert_int_eq(
        count_lines(r.log, "capture #2 is NOT replay-safe: it froze the 1 host value(s) above"), 1);
    run_free(&r);
    /* a refused end on a stream that was not capturing ends nothing: the
     * tracker of open captures (src/capture.c) is the one count */
    trace_run(&r, "capture-stray-end", "3", env);
    ck_assert_int_eq(count_lines(r.log, "capture #2 is replay-safe: identical to #1 (3 ops)"), 1);
    ck_assert_int_eq(count_lines(r.log, "capture #3 is replay-safe: identical to #2 (3 ops)"), 1);
    run_free(&r);
}
END_TEST

START_TEST(api_mode)
{
    struct run_result r;
    const char *env[] = {"ATLAS_STEP=api", NULL};
    trace_run(&r, "api", "3", env);
    /* three ops inside each step; the launch after atlas_step_end is not in it */
    ck_assert_int_eq(
        count_lines(r.log, "step \"train\" #2 (step 2) differs from #1: 3 ops (was 3, +0)"), 1);
    ck_assert_int_eq(count_lines(r.log, "arg1 @0x8 (4 bytes): 0x64 -> 0x65"), 1);
    ck_assert_int_eq(count_lines(r.log, "step 3 (\"train\"): add_step arg1 +1 per step, 0x65 -> "
                                        "0x66 (1 step)"),
                     1);
    ck_assert_int_eq(op_lines(r.log), 1);
    run_free(&r);
    /* the markers do nothing without the preload */
    char *argv[] = {T("trace_steps"), "api", "2", NULL};
    run_target(&r, argv, NULL, 0);
    ck_assert_int_eq(r.status, 0);
    run_free(&r);
}
END_TEST

START_TEST(nvtx_mode)
{
    char inj[PATH_MAX + 32];
    const char *env[] = {"ATLAS_STEP=nvtx:step", nvtx_injection(inj, sizeof inj), NULL};
    struct run_result r;
    trace_run(&r, "nvtx", "3", env);
    /* ranges named "step" only: the enclosing "other" range and the launch
     * between the two pops are not part of the step */
    ck_assert_int_eq(
        count_lines(r.log, "step \"step\" #2 (step 2) differs from #1: 3 ops (was 3, +0)"), 1);
    ck_assert_int_eq(count_lines(r.log, "arg1 @0x8 (4 bytes): 0x64 -> 0x65"), 1);
    ck_assert_int_eq(count_lines(r.log, "step 3 (\"step\"): add_step arg1 +1 per step"), 1);
    ck_assert_int_eq(op_lines(r.log), 1);
    ck_assert_int_eq(count_lines(r.log, "steps=3 compared=2"), 1);
    run_free(&r);
}
END_TEST

START_TEST(off_by_default)
{
    char *argv[] = {T("trace_steps"), "scalar", "3", NULL};
    struct run_result r;
    run_target(&r, argv, NULL, 1);
    ck_assert_int_eq(r.status, 0);
    ck_assert_int_eq(count_lines(r.log, "step"), 0);
    run_free(&r);
}
END_TEST

/* ---- JSON lines and the offline tool ---- */

static char tmpdir[64];

static void tmp_setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/atlas-trace-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Records scenario sc into tmpdir/name (through %p, which must expand). */
static void record_to(const char *sc, const char *steps, const char *name, char *path, size_t len)
{
    char setting[256];
    snprintf(setting, sizeof setting, "ATLAS_TRACE_FILE=%s/%s.%%p.jsonl", tmpdir, name);
    const char *env[] = {setting, NULL};
    struct run_result r;
    trace_run(&r, sc, steps, env);
    run_free(&r);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s/%s.*.jsonl", tmpdir, name);
    FILE *ls = popen(cmd, "r");
    ck_assert_ptr_nonnull(fgets(path, (int)len, ls));
    pclose(ls);
    path[strcspn(path, "\n")] = '\0';
    ck_assert_msg(strstr(path, ".%p.") == NULL, "%%p not expanded: %s", path);
}

static void tool(struct run_result *r, const char *a, const char *b)
{
    char *argv[] = {TOOL, (char *)a, (char *)b, NULL};
    run_target(r, argv, NULL, 0);
}

START_TEST(json_lines_and_tool)
{
    char diffp[512], samep[512];
    record_to("scalar", "3", "scalar", diffp, sizeof diffp);
    record_to("same", "3", "same", samep, sizeof samep);

    /* the header, then JSON objects: a kernel's declaration, an op, a step end */
    FILE *f = fopen(diffp, "r");
    char line[4096];
    int ops = 0, ends = 0, decls = 0, named = 0;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "{\"format\":\"atlastrace-steps\",\"version\":2}\n");
    while (fgets(line, sizeof line, f)) {
        ck_assert_msg((strncmp(line, "{\"s\":", 5) == 0 || strncmp(line, "{\"step\":", 8) == 0) &&
                          strstr(line, "}\n"),
                      "%s", line);
        ops += strstr(line, "\"o\":") != NULL;
        ends += strstr(line, "\"end\":true") != NULL;
        if (strstr(line, "\"kernel\":\"_Z8add_stepPfi\"")) {
            ck_assert_msg(strstr(line, "\"params\":[[0,8],[8,4]]"), "%s", line);
            decls++;
        }
        /* a launch: its parameter bytes, its pointer named by allocation */
        named += strstr(line, ",\"p\":\"") && strstr(line, "\"a\":[[0,1,0]]");
    }
    fclose(f);
    ck_assert_int_eq(decls, 3); /* once in each step */
    ck_assert_int_ge(named, 3);
    ck_assert_int_eq(ops, 9);
    ck_assert_int_eq(ends, 3);

    struct run_result r;
    /* one file: the steps of one run, as the live report */
    tool(&r, diffp, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_int_eq(
        count_lines(
            r.out,
            "op 1 add_step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x64 -> 0x65 (delta +1)"),
        1);
    ck_assert_int_eq(count_lines(r.out, "compared=2 identical=0"), 1);
    run_free(&r);
    tool(&r, samep, NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_int_eq(count_lines(r.out, "compared=2 identical=2"), 1);
    run_free(&r);
    /* two files: a run against itself is identical */
    tool(&r, diffp, diffp);
    ck_assert_int_eq(r.status, 0);
    run_free(&r);
    /* two runs whose steps have other shapes ("same" enqueues a memset where
     * "scalar" enqueues a second fill): not compared value by value; one line
     * says where the shapes part, and the steps after it alike in one line */
    tool(&r, samep, diffp);
    ck_assert_int_eq(r.status, 1);
    ck_assert_int_eq(count_lines(r.out, "0x7 -> 0x64"), 0);
    {
        /* each step's file named (samep is A, diffp is B) */
        char head[2048];
        snprintf(head, sizeof head,
                 "step \"cuStreamSynchronize\" #1 of %s (step 1) differs from #1 of %s (step 1): "
                 "3 ops (3 in %s, +0)",
                 diffp, samep, samep);
        ck_assert_int_eq(count_lines(r.out, head), 1);
    }
    ck_assert_int_eq(count_lines(r.out, "  from op 2 on (1 ops against 1): fill(float*) "
                                        "grid=(1,1,1) block=(32,1,1) shmem=0"),
                     1);
    ck_assert_int_eq(count_lines(r.out, "steps 2-3 (\"cuStreamSynchronize\"): another shape, from "
                                        "op 2 on (1 ops against 1) (2 steps)"),
                     1);
    ck_assert_int_eq(count_lines(r.out, ""), 4);
    run_free(&r);
    /* two runs of one shape whose values differ: the first copy's width */
    char grow[512];
    record_to("copy-grow", "3", "copy-grow", grow, sizeof grow);
    record_to("copies", "3", "copies", samep, sizeof samep);
    tool(&r, samep, grow);
    ck_assert_int_eq(r.status, 1);
    ck_assert_int_eq(count_lines(r.out, "op 0 [copy] width: 1024 -> 2048 bytes (delta +1024)"), 1);
    ck_assert_int_eq(count_lines(r.out, "op 0 [copy] width: 1024 -> 4096 bytes (delta +3072)"), 1);
    ck_assert_int_eq(count_lines(r.out, "is only in"), 0);
    run_free(&r);
}
END_TEST

/* The JSON lines carry what the recording process learned about the
 * uninitialised bytes of a by-value struct, so atlas-diff reads them as
 * residue too, in one run and across two runs (whose stack addresses
 * differ): no host value differs, exit 0. */
START_TEST(residue_in_json_lines)
{
    char a[512], b[512];
    record_to("residue", "3", "residue-a", a, sizeof a);
    record_to("residue", "3", "residue-b", b, sizeof b);
    FILE *f = fopen(a, "r");
    char line[4096];
    int marked = 0;
    while (fgets(line, sizeof line, f)) /* on the kernel's declaration in the step */
        marked += strstr(line, "\"kernel\":") && strstr(line, ",[8,128]],\"residue\":[1]}");
    fclose(f);
    ck_assert_int_eq(marked, 2); /* learned at the end of step 2, so from step 2 on */
    struct run_result r;
    tool(&r, a, NULL);
    ck_assert_msg(r.status == 0, "%s", r.out);
    ck_assert_int_eq(count_lines(r.out, "trace summary: 2 steps counted identical: only "
                                        "pointers that moved within their allocations"),
                     1);
    ck_assert_msg(!strstr(r.out, "differs from"), "%s", r.out);
    ck_assert_int_eq(count_lines(r.out, "  op "), 0);
    run_free(&r);
    /* --residue=all lists them, as ATLAS_DIFF_RESIDUE=all does live */
    char *argv_all[] = {TOOL, "--residue=all", a, NULL};
    run_target(&r, argv_all, NULL, 0);
    ck_assert_msg(count_lines(r.out, "(host-memory residue)") == 2, "%s", r.out);
    run_free(&r);
    tool(&r, a, b);
    ck_assert_msg(r.status == 0, "%s", r.out);
    run_free(&r);
}
END_TEST

/* Two runs of one program place its buffers (and the host's) at other
 * addresses: memsets and copies compare by allocation and offset, host
 * addresses not at all across runs, so atlas-diff finds the runs equal. */
START_TEST(two_runs_compare_equal)
{
    char a[512], b[512], c[512], d[512];
    record_to("same", "3", "same-a", a, sizeof a);
    record_to("same", "3", "same-b", b, sizeof b);
    record_to("copies", "3", "copies-a", c, sizeof c);
    record_to("copies", "3", "copies-b", d, sizeof d);
    struct run_result r;
    tool(&r, a, b);
    ck_assert_msg(r.status == 0, "%s", r.out);
    run_free(&r);
    tool(&r, c, d);
    ck_assert_msg(r.status == 0, "%s", r.out);
    run_free(&r);
    /* the memset's and copies' allocations are in the file */
    FILE *f = fopen(c, "r");
    char line[4096];
    int memset_alloc = 0, copy_alloc = 0;
    while (fgets(line, sizeof line, f)) {
        memset_alloc += strstr(line, "\"kind\":\"memset\"") && strstr(line, "\"a\":[[0,1,3072]]");
        copy_alloc +=
            strstr(line, "\"dir\":\"DtoD\"") && strstr(line, "\"a\":[[0,1,2048],[8,1,0]]");
    }
    fclose(f);
    ck_assert_int_eq(memset_alloc, 3);
    ck_assert_int_eq(copy_alloc, 3);
}
END_TEST

/* A graph launched in two processes has a handle of each: two runs and two ranks that launch
 * the same graph agree (they differed on "exec" before); within one run, another graph launched
 * in the same place is still said. */
START_TEST(two_runs_of_a_graph)
{
    char a[512], b[512], c[512], cmd[2048];
    record_to("replay", "3", "graph-a", a, sizeof a);
    snprintf(b, sizeof b, "%s/graph-b.jsonl", tmpdir);
    snprintf(c, sizeof c, "%s/graph-c.jsonl", tmpdir);
    snprintf(cmd, sizeof cmd, "sed 's/\"exec\":\"0x[0-9a-f]*\"/\"exec\":\"0x1234000\"/' %s >%s", a,
             b);
    ck_assert_int_eq(system(cmd), 0);
    /* one run whose second step launched another graph */
    snprintf(cmd, sizeof cmd,
             "sed '/^{\"s\":2,/s/\"exec\":\"0x[0-9a-f]*\"/\"exec\":\"0x1234000\"/' %s >%s", a, c);
    ck_assert_int_eq(system(cmd), 0);
    struct run_result r;
    tool(&r, a, b);
    ck_assert_msg(r.status == 0, "%s", r.out);
    run_free(&r);
    char *argv[] = {TOOL, "--ranks", a, b, NULL};
    run_target(&r, argv, NULL, 0);
    ck_assert_msg(r.status == 0, "%s", r.out);
    run_free(&r);
    tool(&r, c, NULL);
    ck_assert_msg(r.status == 1, "%s", r.out);
    HAS(r.out, "exec: 0x");
    run_free(&r);
}
END_TEST

/* Two runs of different lengths: steps are matched by kind and occurrence
 * (through a table, not a search of every step), and the extra ones are
 * named, whichever file has them. */
/* atlas-diff reads a run as the live report does: the warm-up's new shapes
 * in one line, the change, its repeats in one line, the same summary. */
START_TEST(tool_reads_as_live)
{
    char path[512];
    record_to("warmup", "40", "warmup", path, sizeof path);
    struct run_result r;
    tool(&r, path, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_int_eq(count_lines(r.out, "steps 2-11 (\"cuStreamSynchronize\"): 10 steps of new "
                                        "shapes, 3 to 11 ops; 11 shapes so far"),
                     1);
    ck_assert_int_eq(count_lines(r.out, "steps 12-40 (\"cuStreamSynchronize\"): add_step arg1 +1 "
                                        "per step, 0x6e -> 0x8b (29 steps)"),
                     1);
    ck_assert_int_eq(count_lines(r.out, "trace summary: steps=40 compared=29 identical=0 "
                                        "differing=29 shapes=11"),
                     1);
    ck_assert_int_eq(count_lines(r.out, ""), 5);
    run_free(&r);
    /* --warmup: as ATLAS_DIFF_WARMUP=1 live, step 12's report and then its repeats */
    char *argv[] = {TOOL, "--warmup", path, NULL};
    run_target(&r, argv, NULL, 0);
    ck_assert_msg(count_lines(r.out, "0x6e -> 0x6f (delta +1)") == 1, "%s", r.out);
    ck_assert_msg(count_lines(r.out, "steps 13-40 (\"cuStreamSynchronize\"): add_step arg1 +1 "
                                     "per step, 0x6f -> 0x8b (28 steps)") == 1,
                  "%s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(two_runs_extra_steps_named)
{
    char a[512], b[512];
    record_to("same", "5", "long-a", a, sizeof a);
    record_to("same", "3", "short-b", b, sizeof b);
    struct run_result r;
    tool(&r, a, b);
    ck_assert_msg(r.status == 1, "%s", r.out);
    /* one line for the kind and shape */
    ck_assert_int_eq(count_lines(r.out, "only in"), 1);
    HAS(r.out, "steps \"cuStreamSynchronize\" #4-#5 (2 of one shape, 3 ops) are only in ");
    HAS(r.out, "long-a");
    HASNT(r.out, "differs");
    run_free(&r);
    tool(&r, b, a);
    ck_assert_msg(r.status == 1, "%s", r.out);
    ck_assert_int_eq(count_lines(r.out, "only in"), 1);
    HASNT(r.out, "differs");
    run_free(&r);
}
END_TEST

/* Two runs that differ: each line says which file each step is from, the summary counts each
 * file's steps apart, and a value that differs between the runs is said as such (not as a
 * value that "changed once" from step to step). B is A with add_step's argument changed in
 * steps 1 and 3. */
START_TEST(two_runs_named)
{
    char a[512], b[512];
    record_to("scalar", "3", "runs-a", a, sizeof a);
    snprintf(b, sizeof b, "%s/runs-b.jsonl", tmpdir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "sed 's/000064000000\"/000074000000\"/; s/000066000000\"/000077000000\"/' %s >%s", a,
             b);
    ck_assert_int_eq(system(cmd), 0);
    struct run_result r;
    char *argv[] = {TOOL, a, b, NULL};
    run_target(&r, argv, NULL, 0);
    ck_assert_msg(r.status == 1, "%s", r.out);
    char want[2048];
    snprintf(want, sizeof want,
             "step \"cuStreamSynchronize\" #1 of %s (step 1) differs from #1 of %s (step 1): 3 ops "
             "(3 in %s, +0)",
             b, a, a);
    HAS(r.out, want);
    snprintf(want, sizeof want,
             "trace summary: steps=3 in %s, 3 in %s; compared=3 identical=1 differing=2", a, b);
    HAS(r.out, want);
    snprintf(want, sizeof want,
             "trace summary: run-to-run value: add_step arg1 differs between the runs in 2 steps: "
             "first 0x64 in %s, 0x74 in %s; last 0x77 in %s",
             a, b, b);
    HAS(r.out, want);
    HASNT(r.out, "changed once");
    HASNT(r.out, "frozen value");
    run_free(&r);

    /* one step apart: the singular, and each file's own count */
    char c[512];
    record_to("scalar", "4", "runs-c", c, sizeof c);
    snprintf(cmd, sizeof cmd, "sed 's/000064000000\"/000074000000\"/' %s >%s", a, b);
    ck_assert_int_eq(system(cmd), 0);
    char *argv2[] = {TOOL, b, c, NULL};
    run_target(&r, argv2, NULL, 0);
    snprintf(want, sizeof want, "trace summary: steps=3 in %s, 4 in %s; compared=3", b, c);
    HAS(r.out, want);
    snprintf(want, sizeof want,
             "trace summary: run-to-run value: add_step arg1 differs between the runs in 1 step: "
             "0x74 in %s, 0x64 in %s",
             b, c);
    HAS(r.out, want);
    snprintf(want, sizeof want, "step \"cuStreamSynchronize\" #4 is only in %s", c);
    HAS(r.out, want);
    run_free(&r);
}
END_TEST

/* Ops do not pile up where no step takes them: a thread that synchronised
 * once and then left that to others lends its ops again after a few
 * thousand step ends, and lent ops that no step claims are dropped. */
/* What the trace holds per op, at its peak (the process's peak RSS, less
 * what it had before the first step): each op of these 200,000-op steps is
 * a 64-byte record and 16 parameter bytes (two pointers), 80 bytes
 * recorded, and every step differs from its predecessor in its last op, so
 * each is resolved (its pointers named by allocation) and diffed. The bar
 * (issue #30): at most 1.5x the record, 120 bytes an op. Each step is
 * recorded against the one kept (only the op that differs is kept, and
 * written over it at the step end): one copy, 87 bytes an op. Two copies
 * (the step kept and the next one recorded whole) took 167; three (a spare
 * pair of arrays kept besides) 247; a note per pointer (24 bytes each, in
 * two steps) 376. Sanitizers inflate RSS: a sanitized run checks the
 * rest. */
START_TEST(memory_per_op)
{
    struct run_result r;
    trace_run(&r, "many", "6", NULL);
    const char *g = strstr(r.out, "peak RSS grew ");
    ck_assert_ptr_nonnull(g);
    long kb = atol(g + 14), ops = 200000;
    const char *extra = getenv("ATL_TEST_PRELOAD_EXTRA");
    fprintf(stderr, "trace memory: %ld bytes an op (80 recorded: %.2fx, at most 1.5x)\n",
            kb * 1024 / ops, kb * 1024.0 / ops / 80);
    if (!(extra && *extra))
        ck_assert_msg(kb * 1024 <= 120 * ops,
                      "peak RSS grew %ld KiB: %ld bytes an op, more than 1.5x the 80 recorded", kb,
                      kb * 1024 / ops);
    /* every step differed (one pointer moved within its allocation), so each was resolved,
     * and each then counted identical: allocator reuse is no host value */
    ck_assert_int_eq(count_lines(r.log, "differs from"), 0);
    ck_assert_int_eq(count_lines(r.log, "trace summary: 5 steps counted identical"), 1);
    run_free(&r);
}
END_TEST

/* Steps of two shapes in turn (every other one begins with a memset): a step
 * recorded against the step kept, of the other shape, differs from it from
 * its first op on, and is recorded whole from there; each is compared with
 * the last of its own shape. */
START_TEST(shapes_in_turn_recorded_whole)
{
    struct run_result r;
    trace_run(&r, "shift", "12", NULL);
    HAS(r.log,
        "step \"cuStreamSynchronize\" #5 (step 5) differs from #3: 20000 ops (was 20000, +0)");
    HAS(r.log,
        "  op 5000 add_step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x0 -> 0x1 (delta +1)");
    HAS(r.log,
        "step \"cuStreamSynchronize\" #6 (step 6) differs from #4: 20001 ops (was 20001, +0)");
    HAS(r.log,
        "  op 5001 add_step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x0 -> 0x1 (delta +1)");
    HAS(r.log,
        "  op 5000 add_step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x1 -> 0x2 (delta +1)");
    ck_assert_int_eq(op_lines(r.log), 4);
    HAS(r.log, "trace summary: steps=12 compared=10 identical=6 differing=4 shapes=2");
    run_free(&r);
}
END_TEST

/* Two threads of one name on one stream (one kind of step) in turn: one of
 * them has half its step recorded against the step kept when the other's
 * step end replaces it, and records the rest whole (the half written out
 * first). Every op is in one step, and each step reads against the other
 * thread's. */
START_TEST(kind_shared_by_two_threads)
{
    struct run_result r;
    char path[512];
    trace_run(&r, "twins", "6", NULL);
    HAS(r.log, "trace summary: steps=12 compared=9 identical=0 differing=9 shapes=3");
    HAS(r.log, "add_step arg1 +1 per step, 0x3 -> 0xb, add_step arg1 +1 per step, 0x3 -> 0xb, "
               "add_step grid changes every step, add_step arg1 +1 per step, 0x3 -> 0xb (8 "
               "steps)");
    run_free(&r);
    record_to("twins", "6", "twins", path, sizeof path);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    long ops = 0, steps = 0;
    while (fgets(line, sizeof line, f)) {
        static const char key[] = "\"end\":true,\"ops\":";
        const char *o = strstr(line, key);
        if (o)
            ops += atol(o + sizeof key - 1), steps++;
    }
    fclose(f);
    ck_assert_int_eq(steps, 12);
    ck_assert_int_eq(ops, 12 * 3000);
}
END_TEST

START_TEST(stale_ops_do_not_pile_up)
{
    char path[512];
    record_to("stale", "0", "stale", path, sizeof path);
    FILE *f = fopen(path, "r");
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "\"name\":\"cuCtxSynchronize\"") && strstr(line, "\"end\":true")) {
            found++;
            ck_assert_msg(strstr(line, "\"ops\":10}"), "%s", line);
        }
    fclose(f);
    ck_assert_int_eq(found, 1);
}
END_TEST

/* Workers launch while the main thread ends steps under them: every op is
 * in exactly one step, none lost, none twice. */
START_TEST(steps_end_under_concurrent_launches)
{
    char path[512];
    record_to("race", "1", "race", path, sizeof path);
    FILE *f = fopen(path, "r");
    char line[4096];
    long ops = 0, ends = 0, declared = 0;
    while (fgets(line, sizeof line, f)) {
        ops += strstr(line, "\"k\":") && strstr(line, "\"o\":"); /* a launch */
        const char *e = strstr(line, "\"end\":true,\"ops\":");
        if (e) {
            ends++;
            declared += atol(e + strlen("\"end\":true,\"ops\":"));
        }
    }
    fclose(f);
    ck_assert_int_eq(ops, 4 * 2000);
    ck_assert_int_eq(declared, ops);
    ck_assert_int_ge(ends, 1);
}
END_TEST

START_TEST(tool_rejects_bad_input)
{
    char diffp[512], path[600];
    record_to("scalar", "3", "scalar", diffp, sizeof diffp);
    struct run_result r;
    /* truncated in the middle of a line */
    snprintf(path, sizeof path, "%s/cut.jsonl", tmpdir);
    FILE *in = fopen(diffp, "r"), *o = fopen(path, "w");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, in);
    buf[n] = '\0';
    /* 40 bytes into the line after the first step's end record */
    const char *end1 = strstr(buf, "\"end\":true");
    const char *nl = end1 ? strchr(end1, '\n') : NULL;
    ck_assert_msg(nl && (size_t)(nl + 1 + 40 - buf) < n, "no whole step in the first %zu bytes", n);
    fwrite(buf, 1, (size_t)(nl + 1 + 40 - buf), o);
    fclose(in), fclose(o);
    tool(&r, path, NULL);
    /* after a whole step: read up to it (a killed run), the cut said */
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strstr(r.err, "cut.jsonl: line ") && strstr(r.err, "the run was killed?"), "%s",
                  r.err);
    run_free(&r);
    /* garbage */
    snprintf(path, sizeof path, "%s/garbage.jsonl", tmpdir);
    o = fopen(path, "w");
    fputs("{\"step\":1,\"name\":\"x\",\"op\":0,\"kind\":\"launch\",\"kernel\":\"k\",\"grid\":[1,1]}"
          "\n",
          o);
    fclose(o);
    tool(&r, path, NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "garbage.jsonl: line 1: expected ','"), "%s", r.err);
    run_free(&r);
    /* empty */
    snprintf(path, sizeof path, "%s/empty.jsonl", tmpdir);
    o = fopen(path, "w");
    fclose(o);
    tool(&r, path, NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "empty.jsonl: the file is empty"), "%s", r.err);
    run_free(&r);
    /* missing */
    tool(&r, "/nonexistent/x.jsonl", NULL);
    ck_assert_int_eq(r.status, 2);
    run_free(&r);
    /* two files, read side by side: the first one's error alone, as when read in turn; then
     * the second one's when the first is good */
    tool(&r, path, "/nonexistent/y.jsonl");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "empty.jsonl: the file is empty") && !strstr(r.err, "nonexistent"),
                  "%s", r.err);
    run_free(&r);
    snprintf(path, sizeof path, "%s/garbage.jsonl", tmpdir);
    tool(&r, "/nonexistent/y.jsonl", path);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "y.jsonl: No such file") && !strstr(r.err, "garbage"), "%s", r.err);
    run_free(&r);
}
END_TEST

/* Writes `text` to tmpdir/name and runs atlas-diff on it. */
static void tool_on(struct run_result *r, const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *o = fopen(path, "w");
    ck_assert_ptr_nonnull(o);
    fputs(text, o);
    fclose(o);
    tool(r, path, NULL);
    ck_assert_int_eq(r->status, 2);
}

/* A malformed file is described as it is: the unknown field by name, a missing "op" as missing,
 * a directory as a directory; and no control byte of the file reaches the terminal. */
START_TEST(tool_names_what_is_wrong)
{
    struct run_result r;
    tool_on(&r, "field.jsonl", "{\"step\":0,\"name\":\"s\",\"colour\":1}\n");
    HAS(r.err, "field.jsonl: line 1: unknown field \"colour\"");
    run_free(&r);

    tool_on(&r, "noop.jsonl", "{\"step\":0,\"name\":\"s\",\"kind\":\"launch\"}\n");
    HAS(r.err, "noop.jsonl: line 1: record without an \"op\" or an \"end\"");
    HASNT(r.err, "expected op 0");
    run_free(&r);

    tool_on(&r, "ctl.jsonl",
            "{\"step\":0,\"name\":\"s\",\"op\":0,\"kind\":\"x\\u001b[2J\\u0007\"}\n");
    HAS(r.err, "unknown op kind \"x?[2J?\"");
    for (const char *p = r.err; *p; p++)
        ck_assert_msg(*p == '\n' || (unsigned char)*p >= ' ', "control byte 0x%02x in:\n%s", *p,
                      r.err);
    run_free(&r);

    /* a layout without the bytes (found by fuzz-check: a NULL copy before) */
    tool_on(&r, "nobytes.jsonl",
            "{\"step\":1,\"name\":\"s\",\"op\":0,\"stream\":\"0x1\",\"kind\":\"launch\","
            "\"kernel\":\"_Z4fillPff\",\"exact\":1,\"params\":[[0,8]]}\n");
    HAS(r.err, "nobytes.jsonl: line 1: a launch without its parameter bytes");
    run_free(&r);

    tool(&r, tmpdir, NULL);
    ck_assert_int_eq(r.status, 2);
    HAS(r.err, ": is a directory");
    run_free(&r);
}
END_TEST

/* Runs atlas-diff with `args` (NULL-terminated). */
static void tool_args(struct run_result *r, const char *const *args)
{
    char *argv[16] = {TOOL};
    int n = 1;
    for (; *args && n < 15; args++)
        argv[n++] = (char *)*args;
    argv[n] = NULL;
    run_target(r, argv, NULL, 0);
}

/* The command line as its peers have it: --help on stdout, --version, every refusal says what
 * was wrong before the usage and exits 2, and --max=N is --max N. */
START_TEST(tool_command_line)
{
    struct run_result r;
    const char *help[] = {"--help", NULL};
    tool_args(&r, help);
    ck_assert_int_eq(r.status, 0);
    HAS(r.out, "Usage: atlas-diff [--diff-max N]");
    HAS(r.out, "--diff-max N, --diff-max=N");
    /* atlas-trace's names for the same settings, and the first names still taken */
    HAS(r.out, "their first names, --max, --ignore, --pointers,\n--residue and --warmup, are still "
               "taken.");
    ck_assert_str_eq(r.err, "");
    run_free(&r);

    const char *version[] = {"--version", NULL};
    tool_args(&r, version);
    ck_assert_int_eq(r.status, 0);
    HAS(r.out, "atlas-diff (atlastrace) ");
    run_free(&r);

    static const struct {
        const char *args[5], *says;
    } bad[] = {
        {{"--bogus", "a.jsonl"}, "atlas-diff: unknown option --bogus\n"},
        {{"--max", "abc", "a.jsonl"}, "atlas-diff: --max abc: not a number"},
        {{"--diff-max", "abc", "a.jsonl"}, "atlas-diff: --diff-max abc: not a number"},
        {{"--max", "-3", "a.jsonl"}, "atlas-diff: --max -3: negative value"},
        {{"--max=-3", "a.jsonl"}, "atlas-diff: --max -3: negative value"},
        {{"--max=2000000", "a.jsonl"}, "--max 2000000: out of range 0..1000000"},
        {{"a", "b", "c"}, "atlas-diff: c: a third file (atlas-diff compares one or two)"},
        {{"--max"}, "atlas-diff: --max needs a value"},
        {{NULL}, "atlas-diff: no trace file given"},
        /* --ignore by ATLAS_DIFF_IGNORE's rules: an entry that cannot match is refused */
        {{"--ignore=add_pos:argX", "a.jsonl"},
         "atlas-diff: --ignore add_pos:argX: not KERNEL or KERNEL:argN"},
        {{"--ignore", "scale,,axpy", "a.jsonl"}, "--ignore scale,,axpy: entry 2 '' is an empty"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tool_args(&r, bad[i].args);
        ck_assert_msg(r.status == 2, "%s: exit %d", bad[i].says, r.status);
        ck_assert_msg(strstr(r.err, bad[i].says), "no '%s' in:\n%s", bad[i].says, r.err);
        ck_assert_msg(strstr(r.err, bad[i].says) < strstr(r.err, "Usage: atlas-diff"),
                      "no usage after the message:\n%s", r.err);
        run_free(&r);
    }

    /* --max=N and --max N alike, and the hint names the option that limits the lines */
    char path[512];
    record_to("eight", "2", "eight", path, sizeof path);
    const char *eq[] = {"--max=3", path, NULL}, *sp[] = {"--max", "3", path, NULL};
    struct run_result r2;
    tool_args(&r, eq);
    tool_args(&r2, sp);
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.out, r2.out);
    ck_assert_int_eq(count_lines(r.out, "... 5 more differences not shown (--max=3)"), 1);
    run_free(&r);
    run_free(&r2);

    /* numbers as the library reads them, decimal or 0x hex: 09 is nine, 010 ten, 0x3 three */
    static const char *const same[][2] = {{"09", "9"}, {"010", "10"}, {"0x3", "3"}, {"07", "7"}};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        const char *a[] = {"--max", same[i][0], path, NULL},
                   *b[] = {"--max", same[i][1], path, NULL};
        tool_args(&r, a);
        tool_args(&r2, b);
        ck_assert_msg(r.status == 1 && r2.status == 1, "--max %s: exit %d", same[i][0], r.status);
        /* the line that names the option names it as given */
        ck_assert_msg(count_lines(r.out, "differs from") == count_lines(r2.out, "differs from") &&
                          count_lines(r.out, "op ") == count_lines(r2.out, "op "),
                      "--max %s is not --max %s:\n%s\n---\n%s", same[i][0], same[i][1], r.out,
                      r2.out);
        run_free(&r);
        run_free(&r2);
    }

    /* ATLAS_DIFF_IGNORE is read by the same rules */
    char *argv[] = {TOOL, path, NULL};
    static const char *const bad_env[] = {"ATLAS_DIFF_IGNORE=add_pos:argX", NULL};
    run_target(&r, argv, bad_env, 0);
    ck_assert_int_eq(r.status, 2);
    HAS(r.err, "atlas-diff: ATLAS_DIFF_IGNORE=add_pos:argX: not KERNEL or KERNEL:argN");
    run_free(&r);

    /* and ATLAS_DIFF_MAX, through the settings module, as the live report reads it; --max over it
     */
    static const char *const max_env[] = {"ATLAS_DIFF_MAX=3", NULL};
    run_target(&r, argv, max_env, 0);
    ck_assert_int_eq(r.status, 1);
    ck_assert_int_eq(count_lines(r.out, "... 5 more differences not shown (ATLAS_DIFF_MAX=3)"), 1);
    run_free(&r);
    char *argv_max[] = {TOOL, "--max=4", path, NULL};
    run_target(&r, argv_max, max_env, 0);
    ck_assert_int_eq(count_lines(r.out, "... 4 more differences not shown (--max=4)"), 1);
    run_free(&r);
    /* one more, said in the singular */
    char *argv_one[] = {TOOL, "--max=7", path, NULL};
    run_target(&r, argv_one, NULL, 0);
    ck_assert_int_eq(count_lines(r.out, "... 1 more difference not shown (--max=7)"), 1);
    run_free(&r);
    static const char *const bad_max[] = {"ATLAS_DIFF_MAX=lots", NULL};
    run_target(&r, argv, bad_max, 0);
    ck_assert_int_eq(r.status, 2);
    HAS(r.err, "atlas-diff: ATLAS_DIFF_MAX=lots: not a number");
    run_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("steps");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, scalar_parameter);
    tcase_add_test(tc, periodic_change_folded);
    tcase_add_test(tc, thousand_steps_one_scalar);
    tcase_add_test(tc, warmup_then_loop);
    tcase_add_test(tc, warmup_held_then_settled);
    tcase_add_test(tc, pageable_host_buffers_collapsed);
    tcase_add_test(tc, layout_asked_once_per_kernel);
    tcase_add_test(tc, pointer_parameters);
    tcase_add_test(tc, caching_allocator_segments);
    tcase_add_test(tc, same_name_other_layout_is_a_new_shape);
    tcase_add_test(tc, self_time_table);
    tcase_add_test(tc, grid_change);
    tcase_add_test(tc, kernels_without_parameters);
    tcase_add_test(tc, inserted_op_only);
    tcase_add_test(tc, big_by_value_parameter);
    tcase_add_test(tc, uninitialised_struct_bytes);
    tcase_add_test(tc, device_copies_end_no_step);
    tcase_add_test(tc, per_thread_capture_is_a_capture);
    tcase_add_test(tc, packed_extra_buffer);
    tcase_add_test(tc, identical_steps_silent);
    tcase_add_test(tc, layout_unknown_said_once);
    tcase_add_test(tc, nvtx_without_injection_says_so);
    tcase_add_test(tc, threads_ordered_per_stream);
    tcase_add_test(tc, threads_own_steps_silent);
    tcase_add_test(tc, threads_own_steps_every_run);
    tcase_add_test(tc, thread_named_in_report);
    tcase_add_test(tc, helper_thread_ops_in_step);
    tcase_add_test(tc, captured_ops_not_in_eager_step);
    tcase_add_test(tc, eager_against_captured);
    tcase_add_test(tc, sizes_in_decimal);
    tcase_add_test(tc, diff_max);
    tcase_add_test(tc, diff_ignore);
    tcase_add_test(tc, kernel_filter);
    tcase_add_test(tc, capture_mode);
    tcase_add_test(tc, api_mode);
    tcase_add_test(tc, nvtx_mode);
    tcase_add_test(tc, off_by_default);
    suite_add_tcase(s, tc);
    TCase *tj = tcase_create("json");
    tcase_set_timeout(tj, 60);
    tcase_add_checked_fixture(tj, tmp_setup, tmp_teardown);
    tcase_add_test(tj, json_lines_and_tool);
    tcase_add_test(tj, tool_rejects_bad_input);
    tcase_add_test(tj, tool_names_what_is_wrong);
    tcase_add_test(tj, tool_command_line);
    tcase_add_test(tj, steps_end_under_concurrent_launches);
    tcase_add_test(tj, two_runs_compare_equal);
    tcase_add_test(tj, two_runs_of_a_graph);
    tcase_add_test(tj, two_runs_extra_steps_named);
    tcase_add_test(tj, tool_reads_as_live);
    tcase_add_test(tj, two_runs_named);
    tcase_add_test(tj, residue_in_json_lines);
    tcase_add_test(tj, stale_ops_do_not_pile_up);
    tcase_add_test(tj, memory_per_op);
    tcase_add_test(tj, shapes_in_turn_recorded_whole);
    tcase_add_test(tj, kind_shared_by_two_threads);
    suite_add_tcase(s, tj);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
