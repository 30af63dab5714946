/*
 * What the features need of the library's lifecycle, and nothing of the
 * engine's fan-out: the hooks' gate (read-only here), errors the library's
 * own driver calls observed, and the exit
 * report's bounded locks. Implemented in src/self.c, which calls no feature
 * and nothing in src/engine.c: a feature includes this and src/events.h,
 * never src/engine.h, so the engine calls the features and no call goes back.
 */
#ifndef ATL_SERVICES_H
#define ATL_SERVICES_H

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

/* The hooks' gate: the ATL_ON_* classes (src/events.h) the engine wants to
 * see. All bits set until initialisation decides, so the first call of any
 * hook takes the slow path and initialises. Zero after the exit report, in a
 * forked child, and when nothing is enabled. Only the engine writes it
 * (atl_own_result widens it). */
extern unsigned atl_on;

/* The result of a driver call the library makes on its own behalf (a red-zone
 * sync or copy). A synchronising call reports the program's pending kernel
 * error once, and the library's call must not swallow it: such an error is
 * latched and returned by the program's next synchronising call or
 * synchronous copy that would otherwise succeed. Returns r. */
CUresult atl_own_result(CUresult r);

/* Findings (what ATLAS_ERROR_EXITCODE counts) go through the findings sink,
 * src/findings.h. */

/* Locks for the exit reports. The exit may come from a signal handler on a
 * thread stopped while holding a lock, or while another thread is stopped in
 * a driver call holding one: the reports never wait for such a lock longer
 * than ATL_EXIT_WAIT_MS, counted once from the start of the exit, and the
 * report that needs it is skipped and named (`what`) in one line. Returns 0
 * when locked, -1 when skipped. Outside the exit it is pthread_mutex_lock. */
#define ATL_EXIT_WAIT_MS 2000
int atl_exit_lock(pthread_mutex_t *m, const char *what);
/* At exit, runs fn(arg) on a helper thread and waits for it until the exit's
 * deadline: for driver calls, which may wait for a lock of the driver's own
 * that the exiting thread holds (a signal handler that calls exit() may have
 * interrupted a launch on the light path, which marks nothing). Then says
 * `what` was skipped and returns -1 (the helper stays blocked; the process is
 * ending). Outside the exit, or when no thread can be made, calls fn(arg). */
int atl_exit_bounded(void *(*fn)(void *), void *arg, const char *what);
/* 1 while the exit reports run: code shared with normal operation takes its
 * locks through atl_exit_lock then. */
int atl_exiting(void);
/* The exit's deadline has passed (spin locks poll it). */
int atl_exit_past_deadline(void);
/* Says once per report that it was skipped at exit, and why. */
void atl_exit_skipped(const char *what);

/* ---- the engine's side (src/engine.c only) ---- */

/* The program's synchronising call returned r: an error atl_own_result
 * latched replaces a success; the same error returned by the driver itself
 * (sticky) clears it. */
CUresult atl_own_error_deliver(CUresult r);
/* The exit reports start: the deadline of atl_exit_lock is set from now. */
void atl_exit_begin(void);

/* Ends the process now with status (the exit_group system call, as _exit does): what the
 * library's own exits call, since the library's _exit (engine.c) is the program's. */
__attribute__((noreturn)) void atl_exit_now(int status);

#endif
