/*
 * The hang report. With ATLAS_HANG_SECONDS=S, a watchdog thread notices a
 * call that blocks the host (cuCtxSynchronize, cuStreamSynchronize,
 * cuEventSynchronize, a synchronous copy) and has not returned for S
 * seconds, and prints once per such wait, on that process: the call, the
 * thread, the steps finished and the ops enqueued since, the last of them,
 * and the launch count; then it pushes the step trace's JSON lines to the
 * file. In a job where one rank took another branch, every rank ends up
 * waiting in a collective; each one's report says where.
 *
 * Cost: none when off (one load and branch in the sync and copy entries,
 * which go through the engine anyway). When on, entering and leaving a
 * blocking call are two clock reads and a few stores to this thread's own
 * slot; launches are untouched. The watchdog starts with the first
 * blocking call (not at load: a process that never synchronises gets no
 * thread), wakes a few times per S, blocks every signal (the program's
 * handlers and sigwait loops see exactly the threads they saw before), and
 * calls nothing of the driver.
 */
#define _GNU_SOURCE /* dladdr */
#include "hang.h"

#include "config.h"
#include "fault.h"
#include "hint.h"
#include "log.h"
#include "services.h"
#include "thread.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t limit_ns;
static struct atl_hang_sources from; /* written at init, before the watch starts */

void atl_hang_sources(const struct atl_hang_sources *s)
{
    from = *s;
}

/* Each thread's wait is in its slot (src/thread.h: hang_since, hang_said),
 * written by its thread only, read by the watchdog: `since` is the wait's
 * start (0: not waiting); `said` the start of the wait last reported, so a
 * wait is reported once. A slot comes back when its thread ends, so threads
 * that come and go never use the watch up. */
#define HOOK_BITS                                                                                  \
    0xfffu /* the start's last 4 us hold the hook id (the clock is far past 4 us: never 0) */
_Static_assert(ATL_ID_COUNT <= HOOK_BITS, "hook ids fit in the low bits of a wait's start");
static pthread_once_t watch_once = PTHREAD_ONCE_INIT;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

unsigned atl_hang_init(void)
{
    if (!atl_cfg.hang_seconds)
        return 0;
    limit_ns = atl_cfg.hang_seconds * 1000000000ull;
    /* host syncs come to the engine always (src/blocking.c, src/faultrep.c);
     * synchronous device-to-host copies must leave the hooks' light path to
     * be seen before they block */
    return ATL_ON_SYNC | ATL_ON_COPY | ATL_ON_COPY_DTOH;
}

static void log_op_line(const char *text)
{
    atl_log(ATL_ERROR, "hang:   %s", text);
}

/* The launches the stuck call waits for: the flight recorder's suspects
 * (every launch since the last good sync, by kernel, rarest first, and the
 * newest ones), or their count when launches are not recorded. */
static void recent_launches(void)
{
    if (atl_fault_ring_on() && from.suspects) {
        from.suspects("hang");
        return;
    }
    char set[96];
    atl_log(ATL_ERROR, "hang: launches are not recorded (%s): no list of them",
            atl_hint_setting("ATLAS_LAUNCH_RING", "0", set, sizeof set));
}

static void report(int tid, int hook)
{
    uint64_t steps = 0, ops = 0;
    char who[48];
    if (tid == (int)getpid())
        snprintf(who, sizeof who, "the main thread");
    else
        snprintf(who, sizeof who, "thread %d", tid);
    /* said once, as soon as the limit passes: "more than S s" is exact */
    char name[96];
    atl_log(ATL_ERROR, "hang: %s has waited more than %llu s in %s (%s)", who,
            atl_cfg.hang_seconds, atl_hook_names[hook],
            atl_hint_name("ATLAS_HANG_SECONDS", name, sizeof name));
    if (from.progress && from.progress(&steps, &ops, 0, log_op_line)) {
        atl_log(ATL_ERROR,
                "hang: steps finished: %" PRIu64 "; the step under way (step %" PRIu64
                ") has enqueued %" PRIu64 " ops%s",
                steps, steps + 1, ops, ops ? "; the last of them:" : "");
        from.progress(&steps, &ops, 8, log_op_line);
        if (from.flush)
            from.flush(); /* the file already ends at the last finished step */
    }
    recent_launches();
}

static void *watch(void *arg)
{
    (void)arg;
    /* a few looks per limit, at most one a second: a report comes at most
     * a quarter of the limit (or a second) late */
    uint64_t period = limit_ns / 4 < 1000000000u ? limit_ns / 4 : 1000000000u;
    struct timespec ts = {(time_t)(period / 1000000000u), (long)(period % 1000000000u)};
    for (;;) {
        nanosleep(&ts, NULL);
        if (!__atomic_load_n(&atl_on, __ATOMIC_ACQUIRE))
            continue; /* the exit report is out (or never came): nothing more is said */
        uint64_t now = now_ns();
        unsigned n = atl_tslot_count();
        for (unsigned i = 0; i < n; i++) {
            struct atl_tslot *s = atl_tslot_at(i);
            uint64_t since = __atomic_load_n(&s->hang_since, __ATOMIC_ACQUIRE);
            if (!since || now - since < limit_ns ||
                __atomic_load_n(&s->hang_said, __ATOMIC_RELAXED) == since)
                continue;
            int hook = (int)(since & HOOK_BITS);
            __atomic_store_n(&s->hang_said, since, __ATOMIC_RELAXED);
            report(__atomic_load_n(&s->tid, __ATOMIC_RELAXED), hook);
        }
    }
    return NULL;
}

static void watch_start(void)
{
    /* the thread runs our code until the process ends: pin the library, in
     * case it came by dlopen (NVTX injection) and someone closes it */
    Dl_info self;
    if (dladdr((void *)watch_start, &self) && self.dli_fname)
        dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    pthread_t t;
    pthread_attr_t a;
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 * 1024);
    /* the thread inherits this mask: no signal of the program's lands on it */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&t, &a, watch, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
    if (rc)
        atl_log(ATL_WARN, "hang: cannot start the watchdog thread (%s); no hang report",
                strerror(rc));
}

void atl_hang_enter(int hook)
{
    struct atl_tslot *s = atl_tslot_mine();
    pthread_once(&watch_once, watch_start);
    if (!s) {
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            atl_log(ATL_WARN, "hang: no watch slot for a thread (out of memory, or more than "
                              "65,536 threads at once): its waits are not watched");
        return;
    }
    /* one word: a wait's start and its call are read together, never the
     * start of one wait with the name of the next */
    __atomic_store_n(&s->hang_since, (now_ns() & ~(uint64_t)HOOK_BITS) | (uint64_t)hook,
                     __ATOMIC_RELEASE);
}

void atl_hang_leave(void)
{
    if (atl_thr.slot > 0)
        __atomic_store_n(&atl_tslot_mine()->hang_since, 0, __ATOMIC_RELEASE);
}
