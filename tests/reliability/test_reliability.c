/*
 * Reliability of the preload against the fake driver: many threads at once,
 * fork with a thread inside a hook, the odd ways programs exit, garbage in
 * every setting, and the log file's safety. Each test runs a target program
 * under the preload and asserts what a user would check: the program's own
 * output and status are unchanged, the counts are exact, nothing is printed
 * twice, and no line says "error" unless something was wrong.
 *
 * Environment (so the make targets and later features can widen the runs):
 *   ATL_STRESS_THREADS  threads of the stress test (16)
 *   ATL_STRESS_ITERS    iterations per thread (100000)
 *   ATL_STRESS_ENV      extra settings for the stress run, space-separated
 *                       ("ATLAS_TRACE=1 ATLAS_REDZONE=256")
 *   ATL_FILE_VARS       settings that name an output file (see file_vars)
 */
#define _GNU_SOURCE
#include "../integration/run.h"
#include "file_vars.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T(name) BUILD_DIR "/tests/" name

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && *v ? atol(v) : def;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static unsigned long long calls_of(const char *log, const char *fn)
{
    struct stat_row row;
    stats_row(log, fn, &row);
    return row.calls;
}

/* Lines of the combined report (stderr + log) that mention an error. */
static int error_lines(const struct run_result *r)
{
    return count_lines(r->err, "error") + count_lines(r->log, "error");
}

/* ---- stress ---------------------------------------------------------------- */

static const char *const stress_fns[] = {"cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuLaunchKernel",
                                         "cuMemcpyDtoH_v2", "cuMemFree_v2"};

START_TEST(stress)
{
    long threads = env_long("ATL_STRESS_THREADS", 16), iters = env_long("ATL_STRESS_ITERS", 100000);
    char targ[32], iarg[32];
    snprintf(targ, sizeof targ, "%ld", threads);
    snprintf(iarg, sizeof iarg, "%ld", iters);
    char *argv[] = {T("rel_stress"), targ, iarg, NULL};

    const char *env[34] = {"ATLAS_STATS=1"};
    int n = 1;
    char *extra = strdup(getenv("ATL_STRESS_ENV") ? getenv("ATL_STRESS_ENV") : "");
    char *save = NULL;
    for (char *tok = strtok_r(extra, " ", &save); tok && n < 33; tok = strtok_r(NULL, " ", &save))
        env[n++] = tok;
    env[n] = NULL;

    struct run_result r;
    double t0 = now();
    run_target(&r, argv, env, 1);
    double dt = now() - t0;
    fprintf(stderr, "stress: %ld threads x %ld iterations%s%s: %.2f s\n", threads, iters,
            n > 1 ? " with " : "", getenv("ATL_STRESS_ENV") ? getenv("ATL_STRESS_ENV") : "", dt);
    ck_assert_msg(r.status == 0, "rel_stress exited %d; stderr:\n%.4000s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "ok\n"), "no ok; stdout:\n%s", r.out);
    unsigned long long want = (unsigned long long)threads * (unsigned long long)iters;
    for (size_t i = 0; i < sizeof stress_fns / sizeof stress_fns[0]; i++) {
        const char *fn = stress_fns[i];
        /* features call the driver on their own behalf (red zones poison
         * with memsets and, on the fake driver, scan with copies): those
         * reach the driver but are not the program's calls */
        if (n == 1)
            ck_assert_msg(fake_count(r.out, fn) == want, "%s: the driver saw %llu, want %llu", fn,
                          fake_count(r.out, fn), want);
        else
            ck_assert_msg(fake_count(r.out, fn) >= want, "%s: the driver saw %llu, want >= %llu",
                          fn, fake_count(r.out, fn), want);
        ck_assert_msg(calls_of(r.log, fn) == want, "%s: atlastrace counted %llu, want %llu", fn,
                      calls_of(r.log, fn), want);
    }
    ck_assert_int_eq(count_lines(r.log, "stats: total intercepted calls="), 1);
    ck_assert_msg(error_lines(&r) == 0, "error lines:\n%s\n%s", r.err, r.log);
    run_free(&r);
    free(extra);
}
END_TEST

/* ---- fork ------------------------------------------------------------------ */

START_TEST(fork_in_hook)
{
    char *argv[] = {T("rel_fork"), NULL};
    /* LeakSanitizer's exit-time check in a forked child waits for the
     * allocator lock, which the parent's spinning thread may have held at
     * the fork: the child then hangs in the sanitizer runtime, not in our
     * code (seen once in about ten ASan runs). Leaks are checked by every
     * other ASan test; not in this one's children. */
    const char *const env[] = {"ATLAS_STATS=1",
                               "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=66", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "rel_fork exited %d; stderr:\n%s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "ok\n"), "no ok; stdout:\n%s", r.out);
    /* the children share the log file: only the parent's table is there */
    ck_assert_int_eq(count_lines(r.log, "stats: total intercepted calls="), 1);
    ck_assert_int_eq(count_lines(r.log, "stats: cuLaunchKernel "), 1);
    /* and it counts the parent's launches exactly, none of the children's */
    ck_assert_uint_eq(calls_of(r.log, "cuLaunchKernel"), fake_count(r.out, "cuLaunchKernel"));
    ck_assert_uint_gt(calls_of(r.log, "cuLaunchKernel"), 0);
    ck_assert_int_eq(error_lines(&r), 0);
    run_free(&r);
}
END_TEST

/* ---- exit paths ------------------------------------------------------------ */

START_TEST(exit_leak)
{
    char *argv[] = {T("rel_exit"), "leak", NULL};
    const char *const env[] = {"ATLAS_STATS=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exited %d; stderr:\n%s", r.status, r.err);
    ck_assert_str_eq(r.out, "ok\n");
    ck_assert_int_eq(count_lines(r.log, "stats: total intercepted calls="), 1);
    ck_assert_uint_eq(calls_of(r.log, "cuMemAlloc_v2"), 1);
    ck_assert_uint_eq(calls_of(r.log, "cuLaunchKernel"), 1);
    ck_assert_int_eq(error_lines(&r), 0);
    run_free(&r);
}
END_TEST

START_TEST(exit_underscore)
{
    char *argv[] = {T("rel_exit"), "_exit", NULL};
    const char *const env[] = {"ATLAS_STATS=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 3, "exited %d; stderr:\n%s", r.status, r.err);
    /* _exit runs no handlers: no report, and nothing else either */
    ck_assert_str_eq(r.log, "");
    ck_assert_str_eq(r.err, "");
    run_free(&r);
}
END_TEST

START_TEST(exit_from_thread)
{
    char *argv[] = {T("rel_exit"), "thread", NULL};
    const char *const env[] = {"ATLAS_STATS=1", NULL};
    for (int rep = 0; rep < 10; rep++) {
        struct run_result r;
        run_target(&r, argv, env, 1);
        ck_assert_msg(r.status == 5, "run %d exited %d; stderr:\n%s", rep, r.status, r.err);
        ck_assert_str_eq(r.out, "ok\n");
        /* the report is whole (header, rows, total) or not there at all */
        int head = count_lines(r.log, "stats: function "),
            total = count_lines(r.log, "stats: total intercepted calls=");
        ck_assert_msg(head == total && total <= 1, "partial report:\n%s", r.log);
        ck_assert_msg(error_lines(&r) == 0, "error lines:\n%s\n%s", r.err, r.log);
        run_free(&r);
    }
}
END_TEST

/* ---- exit from a signal handler ---------------------------------------------- */

/* A SIGINT handler calls exit(3) while the main thread is inside a hook
 * (holding the step trace's or the red zones' lock, or in malloc): the exit
 * reports must not wait for what the interrupted code holds. 10 runs each;
 * a hang is killed after 20 s (status 142) and fails the test. */
START_TEST(exit_from_signal_handler)
{
    setenv("ATL_TEST_TIMEOUT", "20", 1);
    /* LeakSanitizer's exit-time check waits for the allocator lock, which
     * the interrupted code may hold (as in fork_in_hook): not here */
#define NO_LSAN "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=66"
    const char *const traced[] = {"ATLAS_TRACE=1", NO_LSAN, NULL};
    const char *const zones[] = {"ATLAS_REDZONE=64", "ATLAS_REDZONE_CHECK=sync", NO_LSAN, NULL};
    const char *const *envs[] = {traced, zones};
    char *what[] = {"trace", "redzone"};
    for (int i = 0; i < 2; i++)
        for (int rep = 0; rep < 10; rep++) {
            char *argv[] = {T("rel_harm"), "sigint", what[i], NULL};
            struct run_result r;
            run_target(&r, argv, envs[i], 1);
            ck_assert_msg(r.status == 3, "%s run %d: status %d (142: hung); stderr:\n%.2000s",
                          what[i], rep, r.status, r.err);
            ck_assert_msg(error_lines(&r) == 0, "error lines:\n%s\n%s", r.err, r.log);
            run_free(&r);
        }
    unsetenv("ATL_TEST_TIMEOUT");
}
END_TEST

/* The same with the exit arriving while the driver holds its own lock (the
 * fake holds it for good during a launch of the program's kernel by a second
 * thread; the thread that exits makes no driver call): the red-zone check at
 * exit calls the driver on a helper thread and gives up at the exit's
 * deadline, saying so; before, it waited for that lock forever. */
START_TEST(exit_while_the_driver_holds_its_lock)
{
    setenv("ATL_TEST_TIMEOUT", "20", 1);
    const char *const env[] = {"ATLAS_REDZONE=64",
                               "ATLAS_REDZONE_CHECK=sync",
                               "FAKE_LAUNCH_HOLD_MS=60000",
                               "FAKE_LAUNCH_HOLD_KERNEL=nop1",
                               NO_LSAN,
                               NULL};
    char *argv[] = {T("rel_harm"), "sigint", "redzone-bg", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 3, "status %d (142: hung); stderr:\n%.2000s", r.status, r.err);
    ck_assert_msg(strstr(r.log, "the red-zone check at exit (the driver did not answer) skipped"),
                  "%s", r.log);
    run_free(&r);
    unsetenv("ATL_TEST_TIMEOUT");
}
END_TEST

/* ---- the library itself dlopened and dlclosed -------------------------------- */

/* Threads that used the library exit after its dlclose: their per-thread
 * destructors must not point into unmapped code (-z nodelete). */
START_TEST(dlclose_then_thread_exit)
{
    char lib[4096];
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/libatlastrace.so", lib));
    char *argv[] = {T("rel_harm"), "dlclose", lib, NULL};
    const char *const plain[] = {NULL}, *const traced[] = {"ATLAS_TRACE=1", NULL};
    const char *const *envs[] = {plain, traced};
    for (int i = 0; i < 2; i++) {
        struct run_result r;
        run_target(&r, argv, envs[i], 0);
        ck_assert_msg(r.status == 0, "%s: exited %d; stderr:\n%s",
                      i ? "ATLAS_TRACE=1" : "no settings", r.status, r.err);
        ck_assert_str_eq(r.out, "ok\n");
        run_free(&r);
    }
}
END_TEST

/* ---- a module unloaded, and its kernel handle given to another kernel ------- */

/* Launches of `kernel` in a JSON-lines trace file (format version 2: the
 * kernel declared in each step with an id, its launches naming the id), and
 * of those, how many are of a declaration that holds `needle`. */
static int trace_lines(const char *path, const char *kernel, const char *needle, int *with)
{
    FILE *f = fopen(path, "r");
    char key[128], line[16384];
    int n = 0;
    long step = -1, id = 0, marked = 0;
    *with = 0;
    snprintf(key, sizeof key, "\"kernel\":\"%s\"", kernel);
    while (f && fgets(line, sizeof line, f)) {
        long s, k;
        if (sscanf(line, "{\"s\":%ld,", &s) != 1)
            continue;
        if (s != step)
            step = s, id = 0;
        const char *o = strstr(line, ",\"o\":"), *kp = strstr(line, ",\"k\":");
        if (!kp || sscanf(kp, ",\"k\":%ld", &k) != 1)
            continue;
        if (!o && strstr(line, key)) { /* the kernel's declaration in this step */
            id = k;
            marked = strstr(line, needle) != NULL;
        } else if (o && id && k == id) {
            n++;
            *with += (int)marked;
        }
    }
    if (f)
        fclose(f);
    return n;
}

START_TEST(unload_handle_reuse)
{
    char dir[] = "/tmp/atlas-rel-XXXXXX", path[128], kv[160];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/trace.json", dir);
    snprintf(kv, sizeof kv, "ATLAS_TRACE_FILE=%s", path);
    char *argv[] = {T("rel_harm"), "unload", "2000", NULL};
    const char *const env[] = {"ATLAS_TRACE=1", kv, NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    int wide63 = 0, narrow1 = 0;
    /* the wide kernel's 64th parameter at 504; a second parameter of the narrow one */
    int wide = trace_lines(path, "wide", ",[504,8]]", &wide63);
    int narrow = trace_lines(path, "narrow", "],[", &narrow1);
    unlink(path);
    rmdir(dir);
    ck_assert_msg(r.status == 0, "exited %d; stderr:\n%.2000s", r.status, r.err);
    /* the fake driver gave every narrow kernel the wide one's old handle */
    HAS(r.out, "reused 2000\nok\n");
    ck_assert_int_eq(wide, 2000);
    ck_assert_int_eq(wide63, 2000);
    ck_assert_int_eq(narrow, 2000);
    ck_assert_msg(narrow1 == 0, "%d narrow launches recorded with a second parameter", narrow1);
    run_free(&r);
}
END_TEST

/* ---- a one-shot kernel error the library's own sync observes first ---------- */

/* A kernel fails with an error that is reported once (not sticky); the
 * red-zone check's own sync or copy (at the free, the launch or the sync)
 * sees it first. The program's cuCtxSynchronize / cuMemcpyDtoH must still
 * return it, exactly as without the preload. */
START_TEST(oneshot_error_reaches_program)
{
    const char *how[] = {"sync", "dtoh"};
    const char *check[] = {"ATLAS_REDZONE_CHECK=free", "ATLAS_REDZONE_CHECK=sync",
                           "ATLAS_REDZONE_CHECK=launch"};
    for (int h = 0; h < 2; h++) {
        char *argv[] = {T("rel_harm"), "oneshot", (char *)how[h], NULL};
        struct run_result native;
        run_target(&native, argv, NULL, 0);
        ck_assert_int_eq(native.status, 0);
        ck_assert_str_eq(native.out, "status 999\nstatus 0\n");
        for (int c = 0; c < 3; c++) {
            const char *const env[] = {"ATLAS_REDZONE=64", check[c], NULL};
            struct run_result r;
            run_target(&r, argv, env, 1);
            ck_assert_msg(r.status == 0, "%s %s: exit %d", how[h], check[c], r.status);
            ck_assert_msg(strcmp(r.out, native.out) == 0, "%s %s: the program saw\n%swant\n%s",
                          how[h], check[c], r.out, native.out);
            run_free(&r);
        }
        run_free(&native);
    }
}
END_TEST

/* ---- the trace's memory is bounded ------------------------------------------- */

/* A program that never synchronises (it polls cuStreamQuery) launches
 * 300,000 kernels with 4 KiB of arguments: 1.2 GB of trace unbounded. Under
 * `ulimit -v 1000000` (about 977 MiB of address space) its own later
 * malloc(512 MiB) must still succeed, its peak RSS stays within 512 MiB +
 * ATLAS_TRACE_MAX_MB (256) + 64 MiB, and the limit is said once.
 * Sanitizer runtimes reserve terabytes of address space, so a sanitized run
 * goes without the ulimit and checks the rest. */
/* The library's load-time edits of `environ` (two variables added when
 * ATLAS_REDZONE routes the pools) stay reachable after the program's own
 * setenv copies the array: in the ASan build (make reliability-check) the
 * leak checker would otherwise end the program with its status. */
START_TEST(environ_edits_not_leaks)
{
    char *argv[] = {T("rel_harm"), "setenv", NULL};
    const char *const env[] = {"ATLAS_REDZONE=64", "ATLAS_REDZONE_POOLS=route", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exited %d; stderr:\n%s", r.status, r.err);
    ck_assert_str_eq(r.out, "backend:cudaMallocAsync\n");
    run_free(&r);
}
END_TEST

START_TEST(trace_memory_bounded)
{
    const char *extra = getenv("ATL_TEST_PRELOAD_EXTRA");
    int sanitized = extra && *extra;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%sexec %s poll 300000 512", sanitized ? "" : "ulimit -v 1000000 && ",
             T("rel_harm"));
    char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    const char *const env[] = {"ATLAS_TRACE=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d; stdout:\n%s\nstderr:\n%.2000s\nlog:\n%.2000s", r.status,
                  r.out, r.err, r.log);
    HAS(r.out, "ok 2\n");
    const char *hwm = strstr(r.out, "hwm_kb ");
    ck_assert_ptr_nonnull(hwm);
    long kb = atol(hwm + 7);
    if (!sanitized)
        ck_assert_msg(kb < (512 + 256 + 64) * 1024L, "peak RSS %ld KiB", kb);
    fprintf(stderr, "trace memory: peak RSS %ld KiB with a 512 MiB malloc of the program's\n", kb);
    ck_assert_int_eq(count_lines(r.log, "ATLAS_TRACE_MAX_MB=256 reached"), 1);
    run_free(&r);
}
END_TEST

/* ---- ATLAS_NO_CHILDREN with programs that keep their own environment -------- */

/* bash supplies its own getenv/setenv and builds its children's environment
 * from its own table, which it fills from `environ` after our constructor
 * ran; Python copies `environ` into os.environ. A child of either must see
 * neither the library in its maps nor in LD_PRELOAD. */
START_TEST(no_children_bash_python)
{
    const char *child = "grep -c libatlastrace /proc/self/maps; echo \"pre=[$LD_PRELOAD]\"";
    char py[512];
    snprintf(py, sizeof py, "import subprocess\nsubprocess.run(['/bin/bash', '-c', '%s'])\n",
             "grep -c libatlastrace /proc/self/maps; echo \"pre=[$LD_PRELOAD]\"");
    char *bash_argv[] = {"/bin/bash", "-c", (char *)child, NULL};
    char *py_argv[] = {"/usr/bin/python3", "-c", py, NULL};
    char **argvs[] = {bash_argv, py_argv};
    const char *const env[] = {"ATLAS_NO_CHILDREN=1", NULL};
    for (int i = 0; i < 2; i++) {
        if (access(argvs[i][0], X_OK) != 0) {
            fprintf(stderr, "no_children: no %s here: that case did not run\n", argvs[i][0]);
            continue;
        }
        struct run_result r;
        run_target(&r, argvs[i], env, 1);
        /* grep -c prints 0 (and exits 1) when no line matches */
        ck_assert_msg(strncmp(r.out, "0\npre=[", 7) == 0, "%s: the child kept the library:\n%s",
                      argvs[i][0], r.out);
        HASNT(r.out, "libatlastrace");
        run_free(&r);
    }
}
END_TEST

/* With red zones the library routes the framework pools through the
 * environment (src/pools.c; PyTorch's with ATLAS_REDZONE_POOLS=route, JAX's
 * by default); an untraced child must get the environment the user gave,
 * while the traced parent keeps the routing. */
START_TEST(no_children_undoes_the_pool_routing)
{
    const char *child = "/bin/bash -c 'echo \"child pt=[$PYTORCH_CUDA_ALLOC_CONF] "
                        "xla=[$XLA_PYTHON_CLIENT_ALLOCATOR]\"'";
    char sh[512], py[1024];
    snprintf(sh, sizeof sh, "echo \"parent pt=[$PYTORCH_CUDA_ALLOC_CONF]\"; %s; exec %s", child,
             child);
    snprintf(py, sizeof py,
             "import os, subprocess\n"
             "print('parent pt=[%%s]' %% os.environ.get('PYTORCH_CUDA_ALLOC_CONF', ''), "
             "flush=True)\n"
             "subprocess.run(['/bin/sh', '-c', %s])\n"
             "subprocess.run(['/bin/sh', '-c', %s], env=dict(os.environ))\n",
             "'echo \"child pt=[$PYTORCH_CUDA_ALLOC_CONF] xla=[$XLA_PYTHON_CLIENT_ALLOCATOR]\"'",
             "'echo \"child pt=[$PYTORCH_CUDA_ALLOC_CONF] xla=[$XLA_PYTHON_CLIENT_ALLOCATOR]\"'");
    char *bash_argv[] = {"/bin/bash", "-c", sh, NULL};
    char *py_argv[] = {"/usr/bin/python3", "-c", py, NULL};
    char **argvs[] = {bash_argv, py_argv};
    /* the user's own value, and none; in the sanitized build, Python's own
     * allocations left at its exit are not the library's */
    const char *const env_none[] = {"ATLAS_NO_CHILDREN=1",
                                    "ATLAS_REDZONE=64",
                                    "ATLAS_REDZONE_POOLS=route",
                                    "PYTORCH_CUDA_ALLOC_CONF",
                                    "XLA_PYTHON_CLIENT_ALLOCATOR",
                                    "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=66",
                                    NULL};
    const char *const env_own[] = {"ATLAS_NO_CHILDREN=1",
                                   "ATLAS_REDZONE=64",
                                   "ATLAS_REDZONE_POOLS=route",
                                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                                   "XLA_PYTHON_CLIENT_ALLOCATOR",
                                   "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:exitcode=66",
                                   NULL};
    const char *const *envs[] = {env_none, env_own};
    const char *want[] = {"parent pt=[backend:cudaMallocAsync]\n"
                          "child pt=[] xla=[]\nchild pt=[] xla=[]\n",
                          "parent pt=[expandable_segments:True,backend:cudaMallocAsync]\n"
                          "child pt=[expandable_segments:True] xla=[]\n"
                          "child pt=[expandable_segments:True] xla=[]\n"};
    for (int i = 0; i < 2; i++) {
        if (access(argvs[i][0], X_OK) != 0) {
            fprintf(stderr, "no_children: no %s here: that case did not run\n", argvs[i][0]);
            continue;
        }
        for (int e = 0; e < 2; e++) {
            struct run_result r;
            run_target(&r, argvs[i], envs[e], 1);
            ck_assert_msg(r.status == 0, "%s exited %d:\n%s", argvs[i][0], r.status, r.err);
            ck_assert_msg(strcmp(r.out, want[e]) == 0, "%s printed\n%swant\n%s", argvs[i][0], r.out,
                          want[e]);
            run_free(&r);
        }
    }
}
END_TEST

/* ---- issue #28: never harm the host program, round two ------------------------ */

static long field(const char *text, const char *name)
{
    const char *p = strstr(text, name);
    ck_assert_msg(p != NULL, "no '%s' in:\n%s", name, text);
    return atol(p + strlen(name));
}

static int sanitized(void)
{
    const char *extra = getenv("ATL_TEST_PRELOAD_EXTRA");
    return extra && *extra;
}

/* Module load/unload loops (JIT-heavy programs: Triton autotuning,
 * torch.compile, NVRTC): 40,000 cycles of load, look up, launch, unload
 * with no setting. Time linear: the last 5,000 cycles cost what cycles
 * 1,000-5,999 did (within 3x and 20 ms of CPU time; a table scanned at every
 * unload made them about 10x dearer), memory flat: the heap grows by less
 * than 256 KiB more than the native run's between the two (39 MB before).
 * CPU time of the program's own loop, not wall time: a loaded machine
 * slows both windows alike. */
START_TEST(reload_loop_linear_and_flat)
{
    char *argv[] = {T("rel_harm"), "reload", "40000", NULL};
    struct run_result nat, r;
    run_target(&nat, argv, NULL, 0);
    run_target(&r, argv, NULL, 1);
    ck_assert_msg(nat.status == 0 && r.status == 0, "exit %d / %d:\n%s", nat.status, r.status,
                  r.err);
    HAS(r.out, "ok\n");
    long first = field(r.out, "first_us "), last = field(r.out, "last_us ");
    long grew = field(r.out, "heap_last ") - field(r.out, "heap_first ");
    long native_grew = field(nat.out, "heap_last ") - field(nat.out, "heap_first ");
    fprintf(stderr,
            "reload loop: cycles 1,000-5,999 %ld us, last 5,000 %ld us (native %ld, %ld); heap "
            "+%ld bytes from cycle 6,000 to 40,000 (native +%ld)\n",
            first, last, field(nat.out, "first_us "), field(nat.out, "last_us "), grew,
            native_grew);
    ck_assert_msg(last <= 3 * first + 20000, "the last cycles cost %ld us against %ld", last,
                  first);
    if (!sanitized()) /* a sanitizer's allocator keeps freed memory in quarantine */
        ck_assert_msg(grew <= native_grew + 256 * 1024, "the heap grew by %ld bytes", grew);
    run_free(&nat);
    run_free(&r);
}
END_TEST

/* A SIGUSR1 handler siglongjmps out of a cuStreamSynchronize that blocks:
 * the thread is not left "inside atlastrace" (its later calls counted, the
 * exit reports printed) and the wait it left is not a hang. */
START_TEST(longjmp_out_of_a_hooked_sync)
{
    char *argv[] = {T("rel_harm"), "longjmp", NULL};
    const char *const env[] = {"ATLAS_STATS=1", "ATLAS_HANG_SECONDS=1", "FAKE_SYNC_SLEEP_MS=5000",
                               "FAKE_SYNC_SLEEP_AT=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.err);
    ck_assert_str_eq(r.out, "jumped out\nok\n");
    HASNT(r.log, "inside atlastrace");
    HASNT(r.log, " has waited ");
    ck_assert_uint_eq(calls_of(r.log, "cuLaunchKernel"), 10);
    ck_assert_uint_eq(calls_of(r.log, "cuStreamSynchronize"), 11);
    run_free(&r);
}
END_TEST

/* A thread cancelled while blocked in a watched sync no longer waits: no
 * hang is reported for it. */
START_TEST(cancelled_in_a_watched_sync)
{
    char *argv[] = {T("rel_harm"), "cancel", NULL};
    const char *const env[] = {"ATLAS_HANG_SECONDS=1", "FAKE_SYNC_SLEEP_MS=4000",
                               "FAKE_SYNC_SLEEP_AT=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.err);
    ck_assert_str_eq(r.out, "cancelled 1\nok\n");
    HASNT(r.log, " has waited ");
    run_free(&r);
}
END_TEST

/* 300 threads have synced and ended (50 at a time): the watchdog still
 * watches the next wait (it stopped after 256 threads had ever synced). */
START_TEST(hang_watch_after_300_threads)
{
    char *argv[] = {T("rel_harm"), "threads", "300", NULL};
    const char *const env[] = {"ATLAS_HANG_SECONDS=1", "FAKE_SYNC_SLEEP_MS=2600",
                               "FAKE_SYNC_SLEEP_AT=301", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.err);
    HAS(r.out, "ok\n");
    ck_assert_int_eq(count_lines(r.log, " has waited "), 1);
    HAS(r.log, "hang: the main thread has waited more than 1 s in cuStreamSynchronize");
    run_free(&r);
}
END_TEST

/* The program takes the library's descriptors: it closes 3-63 (or every
 * descriptor, then makes every number its data file), or stderr, and opens
 * its data file, which gets the number the library's log had. The file
 * holds the program's lines only; the report reaches the log or stderr. */
START_TEST(descriptors_taken_by_the_program)
{
    const char *how[] = {"log", "every", "stderr"};
    for (int i = 0; i < 3; i++) {
        char dir[] = "/tmp/atlas-rel-XXXXXX", data[128];
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(data, sizeof data, "%s/data", dir);
        char *argv[] = {T("rel_harm"), "fds", (char *)how[i], data, NULL};
        const char *const env_log[] = {"ATLAS_STATS=1", NULL};
        const char *const env_err[] = {"ATLAS_STATS=1", "ATLAS_LOG", NULL};
        struct run_result r;
        run_target(&r, argv, i == 2 ? env_err : env_log, 1);
        char *text = read_file_text(data, NULL);
        unlink(data);
        rmdir(dir);
        ck_assert_msg(r.status == 0, "%s: exit %d:\n%s", how[i], r.status, r.err);
        ck_assert_ptr_nonnull(text);
        ck_assert_msg(count_lines(text, "data ") == 100 && !strstr(text, "atlas"),
                      "%s: the program's file holds:\n%.3000s", how[i], text);
        free(text);
        ck_assert_int_eq(count_lines(i == 2 ? r.err : r.log, "stats: total intercepted calls="), 1);
        run_free(&r);
    }
}
END_TEST

/* The child of syscall(SYS_fork) runs no atfork handler: it must still not
 * print the parent's report (the log is shared: one table). */
START_TEST(raw_fork_child_reports_nothing)
{
    char *argv[] = {T("rel_harm"), "rawfork", NULL};
    const char *const env[] = {"ATLAS_STATS=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.err);
    ck_assert_str_eq(r.out, "child 0\nok\n");
    ck_assert_int_eq(count_lines(r.log, "stats: total intercepted calls="), 1);
    run_free(&r);
}
END_TEST

/* The kernel audit of a program that unloads its module before it exits
 * (issue #27): the launches counted in the records the unload dropped are
 * still in the report (launches=0 blocks=0 before). */
START_TEST(audit_counts_survive_unload)
{
    char *argv[] = {T("rel_harm"), "audit", NULL};
    const char *const env[] = {"ATLAS_KERNEL_AUDIT=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.err);
    HAS(r.log, "kernel-audit: resolved=yes launches=7 blocks=42 lookups=1 owner=module@");
    run_free(&r);
}
END_TEST

/* Steps of a kernel whose module is unloaded between them, or before the
 * step of its launch ends, under ATLAS_TRACE=1: each step is diffed with
 * the last, whose kernel is of a module gone. The kept step holds its
 * kernel's record and the buffer keeps the pin its op was recorded under
 * (src/kernels.h), so the diff reads a live view; before, the record (and
 * its view) was freed at the unload: a heap-use-after-free under ASan, and
 * the program's own allocations wrote over the view before the diff read
 * it. */
START_TEST(steps_diffed_across_unloads)
{
    char *argv[] = {T("rel_harm"), "unloaddiff", "200", NULL};
    const char *const env[] = {"ATLAS_TRACE=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d:\n%s\nlog:\n%.3000s", r.status, r.err, r.log);
    HAS(r.out, "ok\n");
    HAS(r.log, "op 0 narrow [launch] arg0 @0x0 (8 bytes): 0x0 -> 0x1 (delta +1)");
    HAS(r.log, "op 0 narrow [launch] arg0 @0x0 (8 bytes): 0x1 -> 0x4 (delta +3)");
    HAS(r.log, "(\"cuCtxSynchronize\"): narrow arg0 changes every step, 0x4 -> 0x9ab1 (197 steps)");
    HAS(r.log, "trace summary: steps=200 compared=199 identical=0 differing=199 shapes=1");
    run_free(&r);
}
END_TEST

/* Issue #48: the quarantine never makes an allocation fail that succeeds natively. Threads
 * allocate and free blocks that all fit on a 4 MiB device (4 of 1000 KiB, 16 of 250 KiB):
 * natively none fails; under red zones, with the quarantine at its default and at 64 MiB and
 * the launch-mode checks, none may either (up to 30% did: the one retry ran while other
 * threads' frees refilled the quarantine or were still on their way to it, and the checks'
 * own device memory took what a fourth block needed). Five runs of each: the failures came
 * in about one run of three. */
START_TEST(quarantine_fails_no_allocation)
{
    static const char *const shapes[][3] = {{"4", "2000", "1000"}, {"16", "1000", "250"}};
    static const char *const modes[][3] = {
        {NULL, NULL, NULL},
        {"ATLAS_REDZONE=64", NULL, NULL},
        {"ATLAS_REDZONE=64", "ATLAS_REDZONE_QUARANTINE_MB=64", NULL},
        {"ATLAS_REDZONE=64", "ATLAS_REDZONE_CHECK=launch", NULL},
    };
    for (size_t sh = 0; sh < 2; sh++)
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
            for (int round = 0; round < (m ? 5 : 1); round++) {
                char *argv[] = {T("rel_harm"), "oom", (char *)shapes[sh][0],
                                (char *)shapes[sh][1], (char *)shapes[sh][2], NULL};
                struct run_result r;
                run_target(&r, argv, modes[m][0] ? (const char *const *)modes[m] : NULL,
                           modes[m][0] != NULL);
                char want[64];
                snprintf(want, sizeof want, "failed 0 of %d\n",
                         atoi(shapes[sh][0]) * atoi(shapes[sh][1]));
                ck_assert_msg(r.status == 0 && strstr(r.out, want),
                              "%s threads x %s KiB, %s %s (round %d): exit %d, %s\nlog:\n%.2000s",
                              shapes[sh][0], shapes[sh][2], modes[m][0] ? modes[m][0] : "native",
                              modes[m][1] ? modes[m][1] : "", round, r.status, r.out, r.log);
                HASNT(r.log, "alloc failed");
                run_free(&r);
            }
}
END_TEST

/* ATLAS_TRACE_MAX_MB bounds a step of module loads and unloads with no sync: the records of
 * the unloaded kernels, which the step's ops keep waiting, count against it, and past it the
 * ops go with the pins that kept them (issue #48: 412 MB with the bound at 64; here 200,000
 * cycles under a bound of 16 MiB held 270 MB of heap before). */
START_TEST(trace_bound_holds_through_module_churn)
{
    char *argv[] = {T("rel_harm"), "reload", "200000", NULL};
    const char *const env[] = {"ATLAS_TRACE=1", "ATLAS_TRACE_MAX_MB=16", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.log);
    HAS(r.out, "ok\n");
    const char *h = strstr(r.out, "heap_last ");
    ck_assert_ptr_nonnull(h);
    long long heap = atoll(h + 10);
    ck_assert_msg(heap < (24LL << 20), "heap in use after 200,000 cycles: %lld bytes", heap);
    ck_assert_int_eq(count_lines(r.log, "step trace: ATLAS_TRACE_MAX_MB=16 reached"), 1);
    run_free(&r);
    /* through atlas-trace, the line names the option as typed there (issue #47: report lines
     * named the variable whatever the user typed); the sanitized builds have no atlas-trace */
    if (access(BUILD_DIR "/atlas-trace", X_OK) != 0)
        return;
    char *tool[] = {BUILD_DIR "/atlas-trace", "--trace", "--trace-max-mb=16", T("rel_harm"),
                    "reload", "20000", NULL};
    run_target(&r, tool, NULL, 0);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    ck_assert_int_eq(count_lines(r.err, "step trace: --trace-max-mb=16 reached"), 1);
    run_free(&r);
}
END_TEST

/* A C++ exception thrown through a hooked call leaves the thread traced (issue #48: the
 * re-entrancy depth stayed raised, and nothing more of the thread was seen: 1 launch of 13
 * counted, no sync). rel_throw is built where there is a C++ compiler. */
START_TEST(cxx_exception_through_a_hook)
{
    if (access(T("rel_throw"), X_OK) != 0) {
        fprintf(stderr, "cxx_exception_through_a_hook: no C++ compiler here (rel_throw not "
                        "built): not tested\n");
        return;
    }
    char *argv[] = {T("rel_throw"), NULL};
    const char *const env[] = {"ATLAS_STATS=1", "ATLAS_REDZONE=64", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    ck_assert_str_eq(r.out, "caught 3\nok\n");
    ck_assert_uint_eq(calls_of(r.log, "cuLaunchKernel"), 13);
    ck_assert_uint_eq(calls_of(r.log, "cuCtxSynchronize"), 1);
    run_free(&r);
}
END_TEST

/* Leaving a hook that answered a call itself (a free red zones hold) takes its cleanup off
 * glibc's list: a later longjmp out of a hooked sync ran it from the dead frame (SIGSEGV,
 * exit 139, issue #48). */
START_TEST(longjmp_after_a_held_free)
{
    char *argv[] = {T("rel_harm"), "longjmp", "free", NULL};
    const char *const env[] = {"ATLAS_STATS=1", "ATLAS_REDZONE=64", "FAKE_SYNC_SLEEP_MS=5000",
                               "FAKE_SYNC_SLEEP_AT=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.err);
    ck_assert_str_eq(r.out, "jumped out\nok\n");
    HASNT(r.log, "inside atlastrace");
    ck_assert_uint_eq(calls_of(r.log, "cuLaunchKernel"), 10);
    run_free(&r);
}
END_TEST

/* The library loaded with dlopen sees none of the program's driver calls: said once, at load
 * (it did nothing, silently: issue #48); preloaded, nothing is said. */
START_TEST(dlopen_of_the_library_is_said)
{
    char lib[4096];
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/libatlastrace.so", lib));
    char *argv[] = {T("rel_harm"), "dlopen", lib, NULL};
    const char *const env[] = {"ATLAS_STATS=1", NULL};
    struct run_result r;
    run_target(&r, argv, env, 0);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    HAS(r.out, "ok\n");
    ck_assert_int_eq(count_lines(r.err, "libatlastrace.so is loaded but the program's CUDA "
                                        "driver calls do not come to it (it was loaded with "
                                        "dlopen, or after libcuda): nothing is traced; load it "
                                        "first, with LD_PRELOAD (atlas-trace does)"),
                     1);
    run_free(&r);
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.err);
    HASNT(r.err, "is loaded but");
    HASNT(r.log, "is loaded but");
    ck_assert_uint_eq(calls_of(r.log, "cuLaunchKernel"), 1);
    run_free(&r);
}
END_TEST

/* An allocation of exactly the device's free memory succeeds natively; under red zones it is
 * made without its red zone, said once, counted in the summary. */
START_TEST(allocation_of_all_free_memory)
{
    char *argv[] = {T("rel_harm"), "oomexact", NULL};
    struct run_result r;
    run_target(&r, argv, NULL, 0);
    HAS(r.out, "status 0\n");
    run_free(&r);
    const char *const env[] = {"ATLAS_REDZONE=64", NULL};
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d\n%s", r.status, r.log);
    HAS(r.out, "status 0\n");
    HAS(r.log, "redzone: alloc#1 (4194304 bytes) fits in the device's memory only without its "
               "red zone: made without one, unguarded");
    HAS(r.log, "redzone: 1 allocation made without a red zone (it fit in the device's memory "
               "only so): not guarded\n");
    HASNT(r.log, "alloc failed");
    run_free(&r);
}
END_TEST

/* A library loaded before ours left `environ` read-only: the load-time
 * edits (red zones' pool routing, --no-children) build a new array. */
START_TEST(read_only_environ_at_load)
{
    char lib[4096], helper[4096], pre[9000];
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/libatlastrace.so", lib));
    ck_assert_ptr_nonnull(realpath(BUILD_DIR "/tests/ro_environ.so", helper));
    const char *extra = getenv("ATL_TEST_PRELOAD_EXTRA");
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s%s%s %s", extra && *extra ? extra : "",
             extra && *extra ? " " : "", lib, helper);
    char *argv[] = {T("rel_harm"), "setenv", NULL};
    const char *const env[] = {pre,
                               "ATLAS_REDZONE=64",
                               "ATLAS_REDZONE_POOLS=route",
                               "ATLAS_NO_CHILDREN=1",
                               "PYTORCH_CUDA_ALLOC_CONF",
                               NULL};
    struct run_result r;
    run_target(&r, argv, env, 1);
    ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.err);
    ck_assert_str_eq(r.out, "backend:cudaMallocAsync\n");
    run_free(&r);
}
END_TEST

/* ---- bad settings ---------------------------------------------------------- */

struct var {
    char name[64], type[16];
    unsigned long long min, max;
};

static int read_vars(struct var *v, int cap)
{
    FILE *p = popen(T("rel_cfgvars"), "r");
    ck_assert_ptr_nonnull(p);
    int n = 0;
    while (n < cap &&
           fscanf(p, "%63s %15s %llu %llu", v[n].name, v[n].type, &v[n].min, &v[n].max) == 4)
        n++;
    ck_assert_int_eq(pclose(p), 0);
    return n;
}

START_TEST(bad_settings)
{
    struct var vars[64];
    int nv = read_vars(vars, 64);
    ck_assert_int_ge(nv, 3);

    char *argv[] = {T("tp_linked"), NULL};
    struct run_result native;
    run_target(&native, argv, NULL, 0);
    ck_assert_int_eq(native.status, 0);

    int runs = 0;
    for (int i = 0; i < nv; i++) {
        const struct var *v = &vars[i];
        char vals[8][64];
        int nvals = 0;
        snprintf(vals[nvals++], 64, "%s", "");
        if (strcmp(v->type, "string") != 0) {
            snprintf(vals[nvals++], 64, "%s", "zz%s%n%x");
            snprintf(vals[nvals++], 64, "%s", "-1");
            snprintf(vals[nvals++], 64, "%s", "99999999999999999999999999");
            snprintf(vals[nvals++], 64, "%s", "1 trailing");
            if (strcmp(v->type, "uint") == 0 && v->max < ~0ULL)
                snprintf(vals[nvals++], 64, "%llu", v->max + 1);
            if (strcmp(v->type, "bool") == 0)
                snprintf(vals[nvals++], 64, "%s", "2");
            if (strcmp(v->type, "enum") == 0)
                snprintf(vals[nvals++], 64, "%s", "nosuchchoice");
        }
        for (int k = 0; k < nvals; k++) {
            char kv[160];
            snprintf(kv, sizeof kv, "%.63s=%.63s", v->name, vals[k]);
            /* ATLAS_LOG is the harness's own log file: setting it empty sends
             * the report to stderr, which is where we look for the line */
            const char *env[] = {kv, NULL};
            struct run_result r;
            run_target(&r, argv, env, 1);
            char want[256];
            snprintf(want, sizeof want, "ignoring %.63s='", v->name);
            int lines = count_lines(r.err, want) + count_lines(r.log, want);
            ck_assert_msg(r.status == 0, "%s: exit %d; stderr:\n%s", kv, r.status, r.err);
            ck_assert_msg(strcmp(r.out, native.out) == 0, "%s: the program's output changed:\n%s",
                          kv, r.out);
            ck_assert_msg(lines == 1, "%s: %d 'ignoring' lines; stderr:\n%s\nlog:\n%s", kv, lines,
                          r.err, r.log);
            ck_assert_msg(count_lines(r.err, "; using ") + count_lines(r.log, "; using ") == 1,
                          "%s: no '; using <default>'", kv);
            /* nothing but atlastrace's own lines on stderr */
            ck_assert_msg(count_lines(r.err, "") == count_lines(r.err, "atlas["),
                          "%s: stray stderr:\n%s", kv, r.err);
            run_free(&r);
            runs++;
        }
    }
    fprintf(stderr, "bad settings: %d variables, %d runs\n", nv, runs);
    run_free(&native);
}
END_TEST

/* ---- files named by settings ------------------------------------------------ */

START_TEST(file_symlink_refused)
{
    struct file_var fv[8];
    int nv = file_vars(fv, 8);
    char *argv[] = {T("tp_linked"), NULL};
    struct run_result native;
    run_target(&native, argv, NULL, 0);
    for (int i = 0; i < nv; i++) {
        char dir[] = "/tmp/atlas-rel-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char victim[128], link[128];
        snprintf(victim, sizeof victim, "%s/victim", dir);
        snprintf(link, sizeof link, "%s/link", dir);
        FILE *f = fopen(victim, "w");
        fputs("precious\n", f);
        fclose(f);
        ck_assert_int_eq(symlink(victim, link), 0);

        struct run_result r;
        run_with_file(&r, &fv[i], link);
        char buf[64] = "";
        f = fopen(victim, "r");
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        buf[got] = '\0';
        fclose(f);
        unlink(link);
        unlink(victim);
        rmdir(dir);

        ck_assert_msg(r.status == 0, "%s: exit %d", fv[i].name, r.status);
        ck_assert_msg(strcmp(r.out, native.out) == 0, "%s: output changed", fv[i].name);
        ck_assert_msg(strcmp(buf, "precious\n") == 0, "%s: wrote through the symlink: %s",
                      fv[i].name, buf);
        /* the line goes to the ATLAS_LOG file when it is not the one refused */
        ck_assert_msg(
            count_lines(r.err, fv[i].name) + (r.log ? count_lines(r.log, fv[i].name) : 0) == 1,
            "%s: want one line naming it:\n%s\nlog:\n%s", fv[i].name, r.err, r.log ? r.log : "");
        if (strcmp(fv[i].name, "ATLAS_LOG") == 0) {
            ck_assert_int_eq(count_lines(r.err, "cannot open ATLAS_LOG"), 1);
            /* the report went to stderr instead */
            ck_assert_int_eq(count_lines(r.err, "stats: total intercepted calls="), 1);
        }
        run_free(&r);
    }
    run_free(&native);
}
END_TEST

START_TEST(file_created_0600)
{
    struct file_var fv[8];
    int nv = file_vars(fv, 8);
    for (int i = 0; i < nv; i++) {
        char dir[] = "/tmp/atlas-rel-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char path[128];
        snprintf(path, sizeof path, "%s/new", dir);
        mode_t old = umask(0);
        struct run_result r;
        run_with_file(&r, &fv[i], path);
        umask(old);
        struct stat st;
        int there = stat(path, &st);
        unlink(path);
        rmdir(dir);
        ck_assert_int_eq(r.status, 0);
        ck_assert_msg(there == 0, "%s: no file was created", fv[i].name);
        ck_assert_msg((st.st_mode & 07777) == 0600, "%s: mode %o", fv[i].name, st.st_mode & 07777);
        ck_assert_msg(error_lines(&r) == 0, "%s: error lines:\n%s", fv[i].name, r.err);
        run_free(&r);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reliability");
    TCase *tc = tcase_create("stress");
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, stress);
    suite_add_tcase(s, tc);
    tc = tcase_create("process");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, fork_in_hook);
    tcase_add_test(tc, exit_leak);
    tcase_add_test(tc, exit_underscore);
    tcase_add_test(tc, exit_from_thread);
    tcase_add_test(tc, bad_settings);
    tcase_add_test(tc, file_symlink_refused);
    tcase_add_test(tc, file_created_0600);
    suite_add_tcase(s, tc);
    /* issue #13: programs the preload once hung, crashed or starved */
    tc = tcase_create("harm");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, exit_from_signal_handler);
    tcase_add_test(tc, exit_while_the_driver_holds_its_lock);
    tcase_add_test(tc, dlclose_then_thread_exit);
    tcase_add_test(tc, no_children_bash_python);
    tcase_add_test(tc, unload_handle_reuse);
    tcase_add_test(tc, oneshot_error_reaches_program);
    tcase_add_test(tc, environ_edits_not_leaks);
    tcase_add_test(tc, trace_memory_bounded);
    suite_add_tcase(s, tc);
    /* issue #28: round two */
    tc = tcase_create("harm2");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, no_children_undoes_the_pool_routing);
    tcase_add_test(tc, reload_loop_linear_and_flat);
    tcase_add_test(tc, longjmp_out_of_a_hooked_sync);
    tcase_add_test(tc, cancelled_in_a_watched_sync);
    tcase_add_test(tc, hang_watch_after_300_threads);
    tcase_add_test(tc, descriptors_taken_by_the_program);
    tcase_add_test(tc, raw_fork_child_reports_nothing);
    tcase_add_test(tc, read_only_environ_at_load);
    tcase_add_test(tc, audit_counts_survive_unload);
    tcase_add_test(tc, steps_diffed_across_unloads);
    suite_add_tcase(s, tc);
    /* issue #48: round three */
    tc = tcase_create("harm3");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, quarantine_fails_no_allocation);
    tcase_add_test(tc, allocation_of_all_free_memory);
    tcase_add_test(tc, trace_bound_holds_through_module_churn);
    tcase_add_test(tc, cxx_exception_through_a_hook);
    tcase_add_test(tc, longjmp_after_a_held_free);
    tcase_add_test(tc, dlopen_of_the_library_is_said);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
