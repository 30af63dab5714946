/*
 * Races between streams, against the fake driver: the table of seeded
 * cases (tests/targets/races_prog.c). Each raced version must be reported
 * with both sides and the missing edge; each fixed version must be silent.
 * The fake driver runs every op at once, so nothing here depends on timing:
 * the detector works from the order of the calls alone.
 */
#include "run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TARGET BUILD_DIR "/tests/races_prog"

static void run_case(struct run_result *r, const char *name, const char *variant,
                     const char *const env[])
{
    char *argv[] = {TARGET, (char *)name, (char *)variant, NULL};
    static const char *const on[] = {"ATLAS_RACES=1", NULL};
    run_target(r, argv, env ? env : on, 1);
    ck_assert_msg(r->status == 0, "%s %s %s exited %d; out:\n%s\nerr:\n%s\nlog:\n%s", TARGET, name,
                  variant, r->status, r->out, r->err, r->log);
    ck_assert_msg(strstr(r->out, "ok\n") != NULL, "no ok; out:\n%s", r->out);
}

/* The line of `text` that contains `needle` (up to its newline), or "". */
static char *line_of(const char *text, const char *needle)
{
    static char buf[2048];
    const char *p = strstr(text, needle);
    buf[0] = '\0';
    if (!p)
        return buf;
    while (p > text && p[-1] != '\n')
        p--;
    size_t n = strcspn(p, "\n");
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf - 1 ? n : sizeof buf - 1), p);
    return buf;
}

/* Every raced version: one race, one block of four lines, both sides named. */
static void assert_one_race(const struct run_result *r)
{
    ck_assert_msg(count_lines(r->log, "race: alloc#") == 1, "not one race block:\n%s", r->log);
    HAS(r->log, "race:   1st: ");
    HAS(r->log, "race:   2nd: ");
    HAS(r->log, "race:   missing edge: ");
    HAS(r->log, ". Fix: record an event on ");
    HAS(r->log, "races: 1 found (1 distinct)");
}

static void assert_silent(const struct run_result *r)
{
    HASNT(r->log, "race:");
    HAS(r->log, "races: 0 found (0 distinct), 0 possible (0 distinct");
}

/* Both versions of a case: the raced one reported with `first` and
 * `second` in its sides' lines and `edge` in its missing edge; the fixed
 * one silent. */
static void both(const char *name, const char *first, const char *second, const char *edge)
{
    struct run_result r;
    run_case(&r, name, "raced", NULL);
    assert_one_race(&r);
    HAS(line_of(r.log, "race:   1st: "), first);
    HAS(line_of(r.log, "race:   2nd: "), second);
    HAS(line_of(r.log, "race:   missing edge: "), edge);
    run_free(&r);
    run_case(&r, name, "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
}

/* The raced version's line tagged `tag` (its 1st, 2nd or missing edge) also
 * says `needle`. */
static void raced_line_has(const char *name, const char *tag, const char *needle)
{
    struct run_result r;
    run_case(&r, name, "raced", NULL);
    HAS(line_of(r.log, tag), needle);
    run_free(&r);
}

#define COPY_WRITES "cuMemcpyHtoDAsync_v2 writes +0..+4095, on stream 0x"
#define READS "kernel=consume(float const*, int) parameter 0 (reads) at +0, on stream 0x"

START_TEST(side_copy_read_without_wait)
{
    both("side_copy", COPY_WRITES, READS, "never waited for an event recorded on stream 0x");
    struct run_result r;
    run_case(&r, "side_copy", "raced", NULL);
    /* the block: allocation, its site; each side's call site */
    HAS(line_of(r.log, "race: alloc#"), "race: alloc#1 (4096 bytes at 0x");
    HAS(line_of(r.log, "race: alloc#"), ", allocated at setup (");
    HAS(line_of(r.log, "race: alloc#"), "written on one stream and read on another");
    HAS(line_of(r.log, "race:   1st: "), "(non-blocking), at upload (");
    HAS(line_of(r.log, "race:   2nd: "), "launch#1 kernel=consume(float const*, int)");
    HAS(line_of(r.log, "race:   2nd: "), "(non-blocking), at read_on (");
    HAS(line_of(r.log, "race:   missing edge: "), "the host did not synchronise with stream 0x");
    run_free(&r);
}
END_TEST

START_TEST(wait_on_the_wrong_event)
{
    both("wrong_event", COPY_WRITES, READS, "last waited for event 0x");
    /* the event it waited for was recorded on a third stream */
    raced_line_has("wrong_event", "race:   missing edge: ", ", not on stream 0x");
}
END_TEST

START_TEST(event_recorded_before_the_work)
{
    both("early_record", COPY_WRITES, READS, "before the 1st: the record must come after the 1st");
}
END_TEST

START_TEST(legacy_stream_orders_blocking_streams)
{
    /* fixed: the writer is a blocking stream, the legacy default stream
     * orders both ways without an event; raced: a non-blocking writer */
    struct run_result r;
    run_case(&r, "legacy", "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
    run_case(&r, "legacy", "raced", NULL);
    HAS(r.log, "races: 3 found (3 distinct)");
    HAS(r.log, "on the legacy default stream");
    HAS(r.log, "a non-blocking stream is not ordered by the legacy default stream");
    /* the legacy stream's read of the non-blocking stream's copy */
    HAS(r.log, "race:   2nd: launch#1 kernel=consume(float const*, int) parameter 0 (reads) at +0, "
               "on the legacy default stream");
    run_free(&r);
}
END_TEST

START_TEST(per_thread_default_streams_do_not_order_each_other)
{
    both("ptds", "on the per-thread default stream of thread ",
         "on the per-thread default stream of thread ",
         "the per-thread default streams of two threads do not order each other");
}
END_TEST

/* The H200's cudart: the reader thread's kernel was looked up before its context was current,
 * when the driver refuses its layout (CUDA_ERROR_INVALID_CONTEXT); asked again at the launch, its
 * pointer is checked (before, "0 found": no layout, no access) */
START_TEST(kernel_looked_up_before_the_context_is_current)
{
    both("ptds_lookup", "on the per-thread default stream of thread ",
         "on the per-thread default stream of thread ",
         "the per-thread default streams of two threads do not order each other");
}
END_TEST

START_TEST(graph_launch_is_one_unit_on_its_stream)
{
    both("graph",
         "cuGraphLaunch of a graph (its node cuMemsetD32Async writes +0..+4095, captured at ",
         READS, "never waited for an event recorded on stream 0x");
}
END_TEST

START_TEST(host_function_orders_the_host)
{
    /* raced: the host function was enqueued before the copy, so the host
     * learned of the stream's work only up to before it */
    both("host_fn", COPY_WRITES, READS, "the host last synchronised with stream 0x");
    raced_line_has("host_fn", "race:   missing edge: ", "through a host function at ");
}
END_TEST

START_TEST(stream_callback_orders_the_host)
{
    both("callback", COPY_WRITES, READS, "through a stream callback at ");
}
END_TEST

START_TEST(threads_joined_order_nothing_on_the_gpu)
{
    both("threads", COPY_WRITES, READS, "never waited for an event recorded on stream 0x");
}
END_TEST

START_TEST(operator_output_is_a_certain_write)
{
    both("operands",
         "kernel=void at::native::vectorized_elementwise_kernel<4, "
         "at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
         "at::native::FillFunctor<float>, std::array<char*, 1ul>) parameter 2 (the operator's "
         "output: writes) at +0",
         READS, "never waited");
}
END_TEST

START_TEST(may_write_is_counted_then_listed_with_all)
{
    struct run_result r;
    run_case(&r, "maywrite", "raced", NULL);
    HASNT(r.log, "race:");
    HAS(r.log, "races: 0 found (0 distinct), 1 possible (1 distinct: ");
    HAS(r.log, "ATLAS_RACES=all lists them");
    run_free(&r);
    static const char *const all[] = {"ATLAS_RACES=all", NULL};
    run_case(&r, "maywrite", "raced", all);
    ck_assert_int_eq(count_lines(r.log, "possible race: alloc#1 "), 1);
    HAS(r.log, "maybe written on one stream and read on another");
    HAS(r.log, "possible race:   1st: launch#1 kernel=peek(float*, int) parameter 0 (may "
               "write) at +0");
    HAS(r.log, "possible race:   2nd: launch#2 kernel=consume(float const*, int)");
    HAS(r.log, "possible race:   missing edge: ");
    HAS(r.log, "listed above");
    run_free(&r);
    run_case(&r, "maywrite", "fixed", all);
    HASNT(r.log, "race:");
    HAS(r.log, "races: 0 found (0 distinct), 0 possible (0 distinct");
    run_free(&r);
}
END_TEST

/* Issue #44: the writer is a kernel whose types say only "may write"; its first launches are
 * watched, and the change seen makes the race certain. */
#define PRODUCED "kernel=produce(float*, int) parameter 0 (writes: +6..+4095 from it changed at "

START_TEST(kernel_write_read_by_a_kernel)
{
    both("kernel_write", "launch#1 " PRODUCED "this launch) at +0, on stream 0x", READS,
         "never waited for an event recorded on stream 0x");
    struct run_result r;
    run_case(&r, "kernel_write", "raced", NULL);
    HAS(r.log, "; 1 launch watched for its kernel's writes");
    run_free(&r);
}
END_TEST

START_TEST(kernel_write_read_by_a_copy)
{
    both("kernel_copy", PRODUCED "this launch)",
         "cuMemcpyDtoHAsync_v2 reads +0..+4095, on stream 0x", "never waited");
}
END_TEST

START_TEST(extern_c_kernel_write)
{
    both("extern_c", "launch#1 kernel=kscale parameter 0 (writes: +2..+4095 from it changed at "
                     "this launch) at +0",
         "cuMemcpyDtoHAsync_v2 reads +0..+4095", "never waited");
}
END_TEST

START_TEST(write_seen_before_names_a_later_race)
{
    /* the first launch (then synchronised) is the one watched; the race is the second's */
    both("kernel_later", "launch#2 " PRODUCED "launch#1) at +0", READS, "never waited");
}
END_TEST

START_TEST(kernel_write_on_another_thread)
{
    both("kernel_threads", "launch#1 " PRODUCED "this launch)", READS, "never waited");
}
END_TEST

/* A GPU that is behind: the watch's result comes after the launch returned (the fake's events
 * answer "not ready" for 50 ms after their record). Read at a later call, it counts when
 * nothing was begun on another stream in between, and not otherwise. */
START_TEST(watch_result_read_later)
{
    static const char *const behind[] = {"ATLAS_RACES=1", "FAKE_EVENT_DELAY_MS=50",
                                         "ATLAS_LOG_LEVEL=info", NULL};
    struct run_result r;
    run_case(&r, "kernel_deferred", "raced", behind);
    assert_one_race(&r);
    HAS(line_of(r.log, "race:   1st: "), "launch#3 " PRODUCED "launch#1) at +0");
    HAS(r.log, "1 launch watched for what their kernels write: 1 parameter seen writing");
    run_free(&r);
    run_case(&r, "kernel_deferred", "fixed", behind);
    assert_silent(&r);
    run_free(&r);
    run_case(&r, "kernel_deferred_other", "raced", behind);
    HASNT(r.log, "race:");
    HAS(r.log, "races: 0 found (0 distinct), 1 possible (1 distinct");
    /* the reader on the other stream came before the result: it proves nothing */
    HAS(r.log, "1 launch watched for what their kernels write: 0 parameters seen writing");
    run_free(&r);
}
END_TEST

START_TEST(graph_kernel_write)
{
    both("kernel_graph",
         "cuGraphLaunch of a graph (its node kernel=produce(float*, int) parameter 0 (writes: "
         "+6..+4095 from it changed at a watched launch of the graph) at +0, captured at "
         "produce_on (",
         READS, "never waited");
    /* two nodes that may write one buffer: a change could be either's; nothing watched */
    struct run_result r;
    run_case(&r, "graph_two_writers", "raced", NULL);
    HASNT(r.log, "race:");
    HAS(r.log, "races: 0 found (0 distinct), 2 possible (1 distinct");
    HAS(r.log, "; 0 launches watched");
    run_free(&r);
}
END_TEST

START_TEST(disjoint_kernel_writes_are_no_race)
{
    struct run_result r;
    run_case(&r, "disjoint", "raced", NULL);
    HASNT(r.log, "race:");
    HAS(r.log, "races: 0 found (0 distinct), 1 possible (1 distinct");
    /* the first launch showed the write; the second is not watched again */
    HAS(r.log, "; 1 launch watched for its kernel's writes");
    run_free(&r);
    run_case(&r, "disjoint", "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
}
END_TEST

START_TEST(exact_ranges_of_copies)
{
    both("halves", "cuMemcpyHtoDAsync_v2 writes +0..+2047",
         "cuMemcpyHtoDAsync_v2 writes +2044..+4091", "never waited");
}
END_TEST

START_TEST(stream_ordered_free)
{
    struct run_result r;
    run_case(&r, "free_async", "raced", NULL);
    assert_one_race(&r);
    HAS(line_of(r.log, "race: alloc#"), "race: alloc#2 (4096 bytes at 0x");
    HAS(line_of(r.log, "race:   1st: "), "kernel=consume(float const*, int) parameter 0");
    HAS(line_of(r.log, "race:   2nd: "), "cuMemFreeAsync frees it, on stream 0x");
    run_free(&r);
    run_case(&r, "free_async", "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
}
END_TEST

START_TEST(query_and_event_sync_tell_the_host)
{
    both("query", COPY_WRITES, READS, "the host did not synchronise with stream 0x");
    both("event_sync", COPY_WRITES, READS, "through an event synchronisation at ");
}
END_TEST

START_TEST(blocking_copy_tells_the_host)
{
    both("blocking_copy", "cuMemcpyHtoDAsync_v2 writes +0..+4095, on stream 0x", READS,
         "the host did not synchronise with stream 0x");
}
END_TEST

START_TEST(device_copy_tells_the_host_nothing)
{
    both("dtod_copy", COPY_WRITES, READS, "the host did not synchronise with stream 0x");
}
END_TEST

START_TEST(packed_arguments)
{
    both("packed", COPY_WRITES, READS, "never waited");
}
END_TEST

START_TEST(destroyed_stream_slot_reused)
{
    both("reuse", "destroyed since), at upload (", READS, "never waited");
}
END_TEST

/* Issue #48, the detector's bounds. 5,000 threads each used their per-thread default stream
 * once: their slots come back, and a plain race after them is found (it was not: past 4,096
 * slots no new stream was checked). */
START_TEST(slots_of_ended_threads_come_back)
{
    struct run_result r;
    run_case(&r, "threads5000", "raced", NULL);
    assert_one_race(&r);
    HASNT(r.log, "more than 4096 streams");
    run_free(&r);
    run_case(&r, "threads5000", "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
}
END_TEST

/* The same race in a module loaded 200 times is one race (it was 200: the kernel's name was
 * copied at each load, and a race told by the copy). */
START_TEST(a_reloaded_kernel_is_the_same_kernel)
{
    struct run_result r;
    run_case(&r, "reload", "raced", NULL);
    ck_assert_int_eq(count_lines(r.log, "race: alloc#"), 1);
    HAS(r.log, "races: 200 found (1 distinct)");
    run_free(&r);
    run_case(&r, "reload", "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
}
END_TEST

/* 20,000 live events beside 2,000 streams: the events' clocks stop at 64 MiB (said once);
 * a wait on an event recorded past that still orders, and the race without it is found
 * (the run held 354 MB before; the bound keeps it near 110 MB, the streams' own clocks
 * included). */
START_TEST(events_clocks_bounded)
{
    static const char *const env[] = {"ATLAS_RACES=1", "ATLAS_LOG_LEVEL=info", NULL};
    struct run_result r;
    run_case(&r, "events", "raced", env);
    assert_one_race(&r);
    ck_assert_int_eq(count_lines(r.log, "races: the recorded events' clocks hold 64 MiB"), 1);
    run_free(&r);
    run_case(&r, "events", "fixed", env);
    assert_silent(&r);
    run_free(&r);
}
END_TEST

/* More call sites than are kept (16,384): the oldest are forgotten (said once), and two races
 * at two new sites are two, each named (past the bound every site was "?", and the two were
 * told as one). */
START_TEST(call_sites_past_the_bound)
{
    char *argv[] = {BUILD_DIR "/tests/races_sites", NULL};
    static const char *const env[] = {"ATLAS_RACES=1", "ATLAS_LOG_LEVEL=info", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.log);
    HAS(r.out, "ok\n");
    HAS(r.log, "races: 2 found (2 distinct)");
    ck_assert_int_eq(count_lines(r.log, "races: more than 16384 call sites: the oldest are "
                                        "forgotten from now on"),
                     1);
    ck_assert_int_eq(count_lines(r.log, "at launch_at (races_sites_gen.c:"), 2);
    HASNT(line_of(r.log, "race:   2nd: "), "at ?");
    run_free(&r);
}
END_TEST

/* 2,000 graphs live at once, then destroyed: the detector gives back what it kept of them
 * (2.1 MB stayed before; the maps' own room, about 0.5 MB, stays now). */
START_TEST(destroyed_graphs_forgotten)
{
    struct run_result r;
    run_case(&r, "graphs", "fixed", NULL);
    assert_silent(&r);
    const char *h = strstr(r.out, "graph_heap ");
    ck_assert_ptr_nonnull(h);
    unsigned long long before = 0, after = 0;
    ck_assert_int_eq(sscanf(h, "graph_heap %llu %llu", &before, &after), 2);
    ck_assert_msg(after < before + (1ULL << 20), "heap %llu before, %llu after", before, after);
    run_free(&r);
}
END_TEST

/* A suppressed race: the races line says so, as the summary does (it said "1 found" where
 * the summary said "0 races, 1 finding suppressed"; issue #46). */
START_TEST(suppressed_races_said_apart)
{
    char supp[] = "/tmp/atl-race-supp-XXXXXX";
    int fd = mkstemp(supp);
    ck_assert_int_ge(fd, 0);
    static const char entry[] = "{\n   <race at read_on>\n   atlas:race\n   kernel:_Z7consumePKfi\n"
                                "   fun:read_on\n}\n";
    ck_assert_int_eq(write(fd, entry, sizeof entry - 1), (ssize_t)(sizeof entry - 1));
    close(fd);
    char set[64];
    snprintf(set, sizeof set, "ATLAS_SUPPRESSIONS=%s", supp);
    const char *const env[] = {"ATLAS_RACES=1", set, NULL};
    struct run_result r;
    run_case(&r, "side_copy", "raced", env);
    HAS(r.log, "races: 1 found (1 distinct; 1 of them suppressed), ");
    HASNT(r.log, "race: alloc#");
    unlink(supp);
    run_free(&r);
}
END_TEST

/* The built-in entry: cuDNN's handle set-up (a memset on its own stream at createCuDNNHandle,
 * the race's 1st access) is left out and said so, in the races line and the summary's
 * suppressed line with the setting that shows it; ATLAS_DEFAULT_SUPPRESSIONS=0 reports it, as
 * does a program whose function of that name is the 2nd side (the entry matches either). */
START_TEST(builtin_suppression_cudnn_handle)
{
    struct run_result r;
    run_case(&r, "cudnn_handle", "raced", NULL);
    HAS(r.log, "races: 1 found (1 distinct; 1 of them suppressed), ");
    HASNT(r.log, "race: alloc#");
    HAS(r.log, "suppressed: 1 finding (1 race) (by the built-in entries, which "
               "ATLAS_DEFAULT_SUPPRESSIONS=0 leaves out)");
    run_free(&r);
    const char *const off[] = {"ATLAS_RACES=1", "ATLAS_DEFAULT_SUPPRESSIONS=0", NULL};
    run_case(&r, "cudnn_handle", "raced", off);
    assert_one_race(&r);
    HAS(line_of(r.log, "race:   1st: "), "cuMemsetD8Async writes +0..+4095");
    HAS(line_of(r.log, "race:   1st: "), "at createCuDNNHandle (");
    HAS(line_of(r.log, "race:   2nd: "), "kernel=produce(float*, int)");
    HASNT(r.log, "suppressed:");
    run_free(&r);
    run_case(&r, "cudnn_handle", "fixed", NULL);
    assert_silent(&r);
    HASNT(r.log, "suppressed:");
    run_free(&r);
    /* any other race is still reported, and a user's file is counted apart from them */
    run_case(&r, "side_copy", "raced", NULL);
    assert_one_race(&r);
    HASNT(r.log, "suppressed:");
    run_free(&r);
}
END_TEST

/* One missing wait behind four races (six buffers raced the same way): the edge is said in
 * full once, then named (issue #46: told four times in 16 lines). */
START_TEST(one_missing_edge_said_once)
{
    struct run_result r;
    run_case(&r, "six", "raced", NULL);
    ck_assert_int_eq(count_lines(r.log, "race:   missing edge: stream 0x"), 1);
    ck_assert_int_eq(count_lines(r.log, "race:   missing edge: the same as the race above's "
                                        "(between stream 0x"),
                     count_lines(r.log, "race: alloc#") - 1);
    ck_assert_int_eq(count_lines(r.log, ". Fix: record an event on "), 1);
    run_free(&r);
}
END_TEST

START_TEST(launched_by_a_runtime_library)
{
    /* the caller of cuLaunchKernel is a CUDA library's frame: the site is
     * found by unwinding, the program's function that called the library */
    both("runtime", COPY_WRITES, READS, "never waited");
    raced_line_has("runtime", "race:   2nd: ", ", at read_via_runtime (");
}
END_TEST

START_TEST(resolved_through_dlsym)
{
    both("dlsym", COPY_WRITES, READS, "never waited");
}
END_TEST

START_TEST(capture_fork_and_join)
{
    /* raced: the reader after the graph launch does not wait; the graph's
     * memset node (captured on the origin stream) is the 1st side. The
     * fixed reader's later copy races with nothing (t is the one stream). */
    struct run_result r;
    run_case(&r, "capture_fork", "raced", NULL);
    /* the reader against the memset node; the writer against the memset
     * node and against the kernel node captured on the forked stream */
    HAS(r.log, "races: 3 found (3 distinct)");
    HAS(r.log, "race:   1st: cuGraphLaunch of a graph (its node cuMemsetD32Async writes "
               "+0..+4095, captured at ");
    HAS(r.log, "race:   1st: cuGraphLaunch of a graph (its node kernel=consume(float const*, int) "
               "parameter 0 (reads) at +0, captured at read_on (");
    HAS(r.log, "race:   2nd: cuMemcpyHtoDAsync_v2 writes +0..+4095");
    run_free(&r);
    run_case(&r, "capture_fork", "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
}
END_TEST

/* Four threads, 2,048 live allocations, every launch on other words than its kernel's last
 * eight (the memos of what a kernel's words point into churn); two threads of three buffers,
 * every launch on words its kernel keeps: nothing false, and the one wait left out is the one
 * race. */
START_TEST(layers_at_scale)
{
    struct run_result r;
    run_case(&r, "layers", "fixed", NULL);
    assert_silent(&r);
    HAS(r.log, "accesses checked on 9 streams");
    run_free(&r);
    run_case(&r, "layers", "raced", NULL);
    assert_one_race(&r);
    HAS(r.log, "race:   1st: launch#");
    HAS(r.log, "race:   2nd: launch#");
    run_free(&r);
    /* the memos hit: the launch that races passes words its kernel keeps */
    run_case(&r, "layers_few", "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
    run_case(&r, "layers_few", "raced", NULL);
    assert_one_race(&r);
    run_free(&r);
}
END_TEST

START_TEST(threads_under_contention)
{
    struct run_result r;
    run_case(&r, "stress", "fixed", NULL);
    assert_silent(&r);
    HAS(r.log, "accesses checked on 9 streams");
    run_free(&r);
}
END_TEST

START_TEST(error_exitcode_counts_races)
{
    static const char *const env[] = {"ATLAS_RACES=1", "ATLAS_ERROR_EXITCODE=3", NULL};
    struct run_result r;
    char *argv[] = {TARGET, "side_copy", "raced", NULL};
    run_target(&r, argv, env, 1);
    ck_assert_int_eq(r.status, 3);
    HAS(r.log, "reported 1 race: exit status 3 (ATLAS_ERROR_EXITCODE=3)");
    run_free(&r);
    char *fixed[] = {TARGET, "side_copy", "fixed", NULL};
    run_target(&r, fixed, env, 1);
    ck_assert_int_eq(r.status, 0);
    run_free(&r);
}
END_TEST

/* One call with six races prints four (RC_PEND); all six are findings, in the findings
 * file and counted, and the exit says what was not printed, as the races' own room (not the
 * print limit). */
START_TEST(every_race_a_finding_printed_or_not)
{
    char path[] = "/tmp/atlas-races-six-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char rep[64];
    snprintf(rep, sizeof rep, "ATLAS_REPORT=%s", path);
    const char *env[] = {"ATLAS_RACES=1", rep, "ATLAS_ERROR_EXITCODE=3", NULL};
    struct run_result r;
    char *argv[] = {TARGET, "six", "raced", NULL};
    run_target(&r, argv, env, 1);
    ck_assert_int_eq(r.status, 3);
    ck_assert_int_eq(count_lines(r.log, "race: alloc#"), 4);
    HAS(r.log, "races: 6 found (6 distinct)");
    HAS(r.log, "races: 2 distinct ones not printed (at most 4 are printed for one call, 100 in "
               "all;");
    HAS(r.log, "reported 6 races: exit status 3");
    HASNT(r.log, "findings: 2 more not printed"); /* not the print limit's */
    char *json = read_file_text(path, NULL);
    ck_assert_ptr_nonnull(json);
    ck_assert_int_eq(count_lines(json, "\"kind\":\"race\""), 6);
    ck_assert_int_eq(count_lines(json, "\"printed\":true"), 4);
    ck_assert_int_eq(count_lines(json, "\"printed\":false"), 2);
    HAS(json, "\"kernel\":\"read6(float const*, float const*,");
    free(json);
    unlink(path);
    run_free(&r);
    run_case(&r, "six", "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
}
END_TEST

/* A race reported on one thread while another runs a library's constructor (which holds
 * the loader's lock) and calls CUDA: no hang (the program's alarm ends a hung run), both
 * races reported. */
START_TEST(report_while_a_constructor_runs)
{
    struct run_result r;
    run_case(&r, "loader", "raced", NULL);
    HAS(r.log, "races: 2 found (2 distinct)");
    ck_assert_int_eq(count_lines(r.log, "race: alloc#"), 2);
    run_free(&r);
    run_case(&r, "loader", "fixed", NULL);
    assert_silent(&r);
    run_free(&r);
}
END_TEST

START_TEST(off_by_default)
{
    static const char *const none[] = {NULL};
    struct run_result r;
    run_case(&r, "side_copy", "raced", none);
    HASNT(r.log, "race");
    run_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("races");
    TCase *tc = tcase_create("seeded");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, side_copy_read_without_wait);
    tcase_add_test(tc, every_race_a_finding_printed_or_not);
    tcase_add_test(tc, report_while_a_constructor_runs);
    tcase_add_test(tc, wait_on_the_wrong_event);
    tcase_add_test(tc, event_recorded_before_the_work);
    tcase_add_test(tc, legacy_stream_orders_blocking_streams);
    tcase_add_test(tc, per_thread_default_streams_do_not_order_each_other);
    tcase_add_test(tc, kernel_looked_up_before_the_context_is_current);
    tcase_add_test(tc, graph_launch_is_one_unit_on_its_stream);
    tcase_add_test(tc, host_function_orders_the_host);
    tcase_add_test(tc, stream_callback_orders_the_host);
    tcase_add_test(tc, threads_joined_order_nothing_on_the_gpu);
    tcase_add_test(tc, operator_output_is_a_certain_write);
    tcase_add_test(tc, may_write_is_counted_then_listed_with_all);
    tcase_add_test(tc, exact_ranges_of_copies);
    tcase_add_test(tc, kernel_write_read_by_a_kernel);
    tcase_add_test(tc, kernel_write_read_by_a_copy);
    tcase_add_test(tc, extern_c_kernel_write);
    tcase_add_test(tc, write_seen_before_names_a_later_race);
    tcase_add_test(tc, kernel_write_on_another_thread);
    tcase_add_test(tc, disjoint_kernel_writes_are_no_race);
    tcase_add_test(tc, graph_kernel_write);
    tcase_add_test(tc, watch_result_read_later);
    tcase_add_test(tc, stream_ordered_free);
    tcase_add_test(tc, query_and_event_sync_tell_the_host);
    tcase_add_test(tc, blocking_copy_tells_the_host);
    tcase_add_test(tc, device_copy_tells_the_host_nothing);
    tcase_add_test(tc, packed_arguments);
    tcase_add_test(tc, destroyed_stream_slot_reused);
    tcase_add_test(tc, slots_of_ended_threads_come_back);
    tcase_add_test(tc, a_reloaded_kernel_is_the_same_kernel);
    tcase_add_test(tc, events_clocks_bounded);
    tcase_add_test(tc, call_sites_past_the_bound);
    tcase_add_test(tc, destroyed_graphs_forgotten);
    tcase_add_test(tc, suppressed_races_said_apart);
    tcase_add_test(tc, builtin_suppression_cudnn_handle);
    tcase_add_test(tc, one_missing_edge_said_once);
    tcase_add_test(tc, launched_by_a_runtime_library);
    tcase_add_test(tc, resolved_through_dlsym);
    tcase_add_test(tc, capture_fork_and_join);
    tcase_add_test(tc, threads_under_contention);
    tcase_add_test(tc, layers_at_scale);
    tcase_add_test(tc, error_exitcode_counts_races);
    tcase_add_test(tc, off_by_default);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
