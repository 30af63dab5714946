#define _GNU_SOURCE /* secure_getenv */
/*
 * Diagnostics: the log line, driver error names, and ATLAS_DEBUG_SYNC_KERNELS.
 */
#include "launch/internal.h"

#include "dsk.h"

#include <execinfo.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void launch_log(const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof(line), "atlas[%d]: launch: ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    /* The log is best effort: a closed stderr must not become the program's problem. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

const char *launch_error_name(CUresult r, char *buf, size_t len)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
        return name;
    snprintf(buf, len, "CUresult=%d", (int)r);
    return buf;
}

/* Parsed once, by the parser libatlastrace uses too (src/dsk.h): off, on for every launch, or a
 * list of kernel names; anything else is reported and off. A per-launch getenv would cost more
 * than the rest of the launch path together. */
static pthread_once_t debug_sync_once = PTHREAD_ONCE_INIT;
static int debug_sync_on;
static const char *debug_sync_list; /* the environment's string, for ATL_DSK_LIST */
/* 0 until the setting is read, then 1 + debug_sync_on: the launch path is one relaxed load */
static _Atomic int debug_sync_state;

static void debug_sync_read_env(void)
{
    const char *v = secure_getenv("ATLAS_DEBUG_SYNC_KERNELS"), *why;
    enum atl_dsk d = atl_dsk_parse(v, &why);
    debug_sync_on = d == ATL_DSK_ALL || d == ATL_DSK_LIST;
    debug_sync_list = d == ATL_DSK_LIST ? v : NULL;
    if (d == ATL_DSK_BAD)
        launch_log("invalid setting ATLAS_DEBUG_SYNC_KERNELS=%.60s: %s; using 0", v, why);
}

int launch_debug_sync_enabled(void)
{
    int state = atomic_load_explicit(&debug_sync_state, memory_order_acquire);
    if (__builtin_expect(state == 0, 0)) {
        pthread_once(&debug_sync_once, debug_sync_read_env);
        state = 1 + debug_sync_on;
        atomic_store_explicit(&debug_sync_state, state, memory_order_release);
    }
    return state - 1;
}

static _Atomic int capture_said;

CUresult launch_debug_sync(struct atlas_launch *b, CUstream stream)
{
    /* Synchronising while a stream captures would invalidate the capture (the program's graph,
     * not ours to break), so a captured launch is left alone. */
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult q = cuStreamIsCapturing(stream, &cs);
    if ((q == CUDA_SUCCESS && cs != CU_STREAM_CAPTURE_STATUS_NONE) ||
        q == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) {
        if (!atomic_exchange(&capture_said, 1))
            launch_log("ATLAS_DEBUG_SYNC_KERNELS: not synchronising launches into a capturing "
                       "stream (said once)");
        return CUDA_SUCCESS;
    }
    /* Name the kernel before synchronising: once a fault has destroyed the
     * context, the driver no longer answers cuFuncGetName (seen on the H200). */
    char name[64], e[48];
    const char *kname = launch_kernel_name(b->fn, (int)b->is_kernel, name, sizeof(name));
    if (debug_sync_list && !atl_dsk_match(debug_sync_list, kname))
        return CUDA_SUCCESS; /* not one of the kernels asked for */
    CUresult r = cuCtxSynchronize();
    if (r == CUDA_SUCCESS)
        return CUDA_SUCCESS;

    const char *desc = NULL;
    if (cuGetErrorString(r, &desc) != CUDA_SUCCESS || !desc)
        desc = "";
    launch_fail(b, r,
                "asynchronous fault right after launch: kernel=%s grid=(%u,%u,%u) "
                "block=(%u,%u,%u) shared=%u error=%s: %s (ATLAS_DEBUG_SYNC_KERNELS=1; host "
                "backtrace on stderr)",
                kname, b->grid[0], b->grid[1], b->grid[2], b->block[0], b->block[1], b->block[2],
                b->shared_bytes, launch_error_name(r, e, sizeof(e)), desc);
    void *frames[64];
    int n = backtrace(frames, 64);
    launch_log("backtrace of the launch (%d frames):", n);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    return r;
}

static void debug_sync_already_read(void) {}

void launch_reset_for_tests(void)
{
    launch_layout_reset_for_tests();
    pthread_once(&debug_sync_once, debug_sync_already_read);
    debug_sync_read_env();
    atomic_store(&debug_sync_state, 1 + debug_sync_on);
    atomic_store(&capture_said, 0);
    atomic_store(&launch_unavailable_said, 0);
}
