/*
 * The one tracker of open stream captures. The engine tells it of every
 * capture begun (successfully) and every end (before the driver ends it);
 * features ask it, instead of counting on their own:
 *   - red zones: no check is queued or synchronised while any capture is
 *     open (a check would become a graph node, or invalidate the capture);
 *   - step traces: while any capture is open, each op asks the driver
 *     whether its stream captures;
 *   - debug sync: no synchronisation while a global-mode capture is open on
 *     any thread, or a thread-local one on this thread.
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
/* A capture forbids a synchronisation here: a global-mode one open on any
 * thread, or a thread-local one on this thread. */
int atl_capture_forbids_sync(void);

#endif
