/*
 * The one tracker of open stream captures. The engine tells it of every
 * capture begun (successfully) and every end (before the driver ends it);
 * features ask it, instead of counting on their own:
 *   - red zones: no check is queued or synchronised while any capture is
 *     open (a check would become a graph node, or invalidate the capture);
 *   - step traces: while any capture is open, an op is captured by its
 *     event's `cap`, which the engine asks once (atl_capture_status);
 *   - debug sync: no synchronisation while a global-mode capture is open on
 *     any thread, or a thread-local one on this thread;
 *   - the flight recorder: a launch into a capturing stream did not run (a
 *     graph launch runs it), so it is no suspect of a fault (atl_capture_held).
 */
#ifndef ATL_CAPTURE_H
#define ATL_CAPTURE_H

#include <cuda.h>

/* A capture began on `stream` (mode: CUstreamCaptureMode, -1 for the legacy
 * one-argument form, which captures globally). */
void atl_capture_begun(CUstream stream, int mode);
/* The program is ending the capture of `stream`: it is over, whatever the
 * driver answers (an invalidated capture ends too; a stream that was not
 * capturing was never counted). */
void atl_capture_ending(CUstream stream);

/* Captures open on any thread, of any mode (one acquire load: cheap enough for
 * every op while none is open). */
int atl_capture_any(void);
/* The capture status of the stream an op names through `hook` (a per-thread entry point's 0 is
 * the thread's default stream: atl_own_stream): CU_STREAM_CAPTURE_STATUS_NONE at once while no
 * capture is open anywhere, else one cuStreamIsCapturing (NONE if that fails). The engine asks
 * once per op, into the op's event (`cap`); the features read the field. */
CUstreamCaptureStatus atl_capture_status(CUstream stream, int hook);
/* A capture forbids a synchronisation here: a global-mode one open on any
 * thread, or a thread-local one on this thread. */
int atl_capture_forbids_sync(void);
/* Launch number `launch` (src/fault.h) on `stream` went into a capture: it
 * lies within one of the last 64 capture windows of that stream (from the
 * launches before its begin to those before its end; open: up to now). */
int atl_capture_held(CUstream stream, uint64_t launch);

#endif
