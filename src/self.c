/*
 * The library's own state that every feature may ask about (src/services.h):
 * the hooks' gate, errors its own driver calls observed, the verdict of
 * ATLAS_ERROR_EXITCODE (on the findings sink's counts, src/findings.h), the
 * exit's deadline and bounded locks. It calls no
 * feature and nothing in src/engine.c, so a feature that uses it makes no
 * call back into the engine that called it.
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include "services.h"

#include "config.h"
#include "events.h"
#include "hint.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

unsigned atl_on = ATL_ON_ALL;

/* ---- errors the library's own calls observed ----------------------------- */

static CUresult own_error; /* latched for the program (atl_own_result) */

/* Errors about the call itself (its arguments, the context's state, a
 * capture), which the program's own call would not have seen; everything
 * else is what the work queued before reports (a kernel's fault). */
static int about_the_call(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS:
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_NOT_READY:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NOT_PERMITTED:
        return 1;
    default:
        return r >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
               r <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    }
}

CUresult atl_own_result(CUresult r)
{
    CUresult none = CUDA_SUCCESS;
    if (!about_the_call(r) &&
        __atomic_compare_exchange_n(&own_error, &none, r, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        /* the hooks that deliver it may be on their light path: take the
         * engine's until it is delivered (cheap, and only after an error) */
        __atomic_fetch_or(&atl_on, ATL_ON_SYNC | ATL_ON_COPY | ATL_ON_COPY_DTOH, __ATOMIC_ACQ_REL);
    return r;
}

CUresult atl_own_error_deliver(CUresult r)
{
    CUresult e = __atomic_load_n(&own_error, __ATOMIC_ACQUIRE);
    if (__builtin_expect(e == CUDA_SUCCESS, 1))
        return r;
    if (r == CUDA_SUCCESS || r == e)
        if (__atomic_compare_exchange_n(&own_error, &e, CUDA_SUCCESS, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return e;
    return r;
}

/* ---- exit ---------------------------------------------------------------------- */

static int exiting;
static struct timespec exit_deadline; /* CLOCK_REALTIME, as pthread_mutex_timedlock wants */

void atl_exit_begin(void)
{
    clock_gettime(CLOCK_REALTIME, &exit_deadline);
    exit_deadline.tv_sec += ATL_EXIT_WAIT_MS / 1000;
    exit_deadline.tv_nsec += (long)(ATL_EXIT_WAIT_MS % 1000) * 1000000L;
    if (exit_deadline.tv_nsec >= 1000000000L)
        exit_deadline.tv_sec++, exit_deadline.tv_nsec -= 1000000000L;
    __atomic_store_n(&exiting, 1, __ATOMIC_RELEASE);
}

int atl_exiting(void)
{
    return __atomic_load_n(&exiting, __ATOMIC_ACQUIRE);
}

int atl_exit_past_deadline(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec > exit_deadline.tv_sec ||
           (now.tv_sec == exit_deadline.tv_sec && now.tv_nsec >= exit_deadline.tv_nsec);
}

void atl_exit_skipped(const char *what)
{
    atl_log(ATL_WARN,
            "exit: %s skipped: another thread held its lock for more than %d ms (stopped inside "
            "atlastrace or the driver); the program is not affected",
            what, ATL_EXIT_WAIT_MS);
}

int atl_exit_bounded(void *(*fn)(void *), void *arg, const char *what)
{
    pthread_t t;
    if (!atl_exiting() || pthread_create(&t, NULL, fn, arg) != 0) {
        fn(arg);
        return 0;
    }
    int e;
    while ((e = pthread_timedjoin_np(t, NULL, &exit_deadline)) == EINTR)
        ;
    if (e == 0)
        return 0;
    pthread_detach(t);
    if (what)
        atl_exit_skipped(what);
    return -1;
}

int atl_exit_lock(pthread_mutex_t *m, const char *what)
{
    if (!atl_exiting())
        return pthread_mutex_lock(m) == 0 ? 0 : -1;
    if (pthread_mutex_trylock(m) == 0)
        return 0;
    int e;
    while ((e = pthread_mutex_timedlock(m, &exit_deadline)) == EINTR)
        ;
    if (e == 0)
        return 0;
    if (what)
        atl_exit_skipped(what);
    return -1;
}

void atl_exit_now(int status)
{
    for (;;)
        syscall(SYS_exit_group, status);
}
