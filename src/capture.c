#include "capture.h"

#include "driver.h"
#include "fault.h"
#include "thread.h"

#include <pthread.h>
#include <stdint.h>

/* Open captures by stream: a program captures into a few streams at once.
 * Past CAPS of them the extra ones are counted in `overflow` only (so "any"
 * stays right) and forbid synchronisation everywhere, to be safe. */
#define CAPS 64
static struct {
    CUstream stream; /* (CUstream)1 stands for the NULL stream */
    int mode;
    pthread_t thread;
} open_caps[CAPS];
static int nopen;    /* entries in open_caps, and the overflow: atl_capture_any */
static int nglobal;  /* of them, global-mode (or overflow) */
static int overflow; /* captures past CAPS */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* The windows of the last WINDOWS captures, in launch numbers: (from, to]
 * on `stream`, `to` UINT64_MAX while open (under mu). A program that
 * captures thousands of times keeps the recent ones. */
#define WINDOWS 64
static struct {
    CUstream stream;
    uint64_t from, to; /* to 0: an unused slot */
} windows[WINDOWS];
static unsigned windows_next;

static CUstream key(CUstream s)
{
    return s ? s : (CUstream)1;
}

void atl_capture_begun(CUstream stream, int mode)
{
    int global =
        mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    pthread_mutex_lock(&mu);
    unsigned w = windows_next++ % WINDOWS;
    windows[w].stream = stream, windows[w].from = atl_fault_last_launch();
    windows[w].to = UINT64_MAX;
    int i = 0;
    while (i < CAPS && open_caps[i].stream)
        i++;
    if (i < CAPS) {
        open_caps[i].stream = key(stream);
        open_caps[i].mode = mode;
        open_caps[i].thread = pthread_self();
        if (mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            atl_thr.captures_local++;
    } else {
        overflow++;
        global = 1;
    }
    __atomic_add_fetch(&nopen, 1, __ATOMIC_RELEASE);
    if (global)
        __atomic_add_fetch(&nglobal, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&mu);
}

void atl_capture_ending(CUstream stream)
{
    CUstream k = key(stream);
    pthread_mutex_lock(&mu);
    uint64_t now = atl_fault_last_launch();
    for (unsigned w = 0; w < WINDOWS; w++)
        if (windows[w].stream == stream && windows[w].to == UINT64_MAX)
            windows[w].to = now;
    int i = 0;
    while (i < CAPS && open_caps[i].stream != k)
        i++;
    if (i < CAPS) {
        int mode = open_caps[i].mode;
        open_caps[i].stream = NULL;
        __atomic_sub_fetch(&nopen, 1, __ATOMIC_RELEASE);
        if (mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) {
            if (pthread_equal(open_caps[i].thread, pthread_self()) && atl_thr.captures_local > 0)
                atl_thr.captures_local--;
        } else if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
            __atomic_sub_fetch(&nglobal, 1, __ATOMIC_RELEASE);
        }
    } else if (overflow > 0) {
        overflow--;
        __atomic_sub_fetch(&nopen, 1, __ATOMIC_RELEASE);
        __atomic_sub_fetch(&nglobal, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&mu);
}

int atl_capture_any(void)
{
    return __atomic_load_n(&nopen, __ATOMIC_ACQUIRE) > 0;
}

CUstreamCaptureStatus atl_capture_status(CUstream stream, int hook)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (__builtin_expect(!atl_capture_any(), 1) || !atl_drv.cuStreamIsCapturing)
        return st;
    if (atl_drv.cuStreamIsCapturing(atl_own_stream(stream, hook), &st) != CUDA_SUCCESS)
        return CU_STREAM_CAPTURE_STATUS_NONE;
    return st;
}

int atl_capture_forbids_sync(void)
{
    return __atomic_load_n(&nglobal, __ATOMIC_ACQUIRE) > 0 || atl_thr.captures_local > 0;
}

int atl_capture_held(CUstream stream, uint64_t launch)
{
    int held = 0;
    pthread_mutex_lock(&mu);
    for (unsigned w = 0; w < WINDOWS && !held; w++)
        held = windows[w].to && windows[w].stream == stream && launch > windows[w].from &&
               launch <= windows[w].to;
    pthread_mutex_unlock(&mu);
    return held;
}
