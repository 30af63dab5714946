/*
 * Watching what a launch writes (ATLAS_RACES, docs/races.md "How a write is
 * known"): bytes of device memory copied to pinned host memory on the
 * launch's own stream right before the launch and right after it, and
 * compared once both copies are done. A byte that changed was written by the
 * launch, provided nothing else wrote there in between (src/races_kern.c makes
 * sure no other op of the program was enqueued in that window and that no
 * unordered op of another stream touches the bytes); a byte that did not
 * change proves nothing (a store of the value already there).
 *
 * Nothing here blocks for long: the copies are asynchronous, and the result
 * is asked for with a bounded wait. A watch whose launch never ends (a
 * kernel waiting for another process) is asked again later, or never.
 */
#ifndef ATL_RACES_WATCH_H
#define ATL_RACES_WATCH_H

#include <cuda.h>
#include <stdint.h>

#define ATL_WATCH_SLOTS 4              /* watches under way at once */
#define ATL_WATCH_REGIONS 8            /* regions of one watch */
#define ATL_WATCH_BYTES (1u << 20)     /* a watch's bytes in all (each copy) */
#define ATL_WATCH_REGION (256u << 10)  /* one region's bytes at most */

struct atl_wregion {
    uint64_t dptr; /* device address */
    uint32_t len;  /* bytes from it */
    /* out: the bytes that changed, [lo, hi) from dptr; lo == hi: none */
    uint32_t lo, hi;
};

struct atl_watch;

/* Copies the regions (at most ATL_WATCH_REGIONS, ATL_WATCH_BYTES in all; each
 * at most ATL_WATCH_REGION) on stream s, before the launch. NULL when no
 * watch can be had now (all slots busy, no pinned memory, a copy refused). */
struct atl_watch *atl_watch_begin(CUstream s, const struct atl_wregion *r, unsigned n);
/* After the launch: the same regions again, then an event. ok 0 (the launch
 * failed): nothing to compare, the slot is given back once the first copies
 * are done. Returns 0, or -1 (the watch is gone). */
int atl_watch_after(struct atl_watch *w, CUstream s, int ok);
/* Waits up to wait_us for the copies; 1: done, r[0..n) filled and the watch
 * given back; 0: still running; -1: failed (given back). */
int atl_watch_result(struct atl_watch *w, unsigned wait_us, struct atl_wregion *r, unsigned n);
/* A context is being torn down (the pinned memory and the events may go with it): every slot
 * not being begun is given up (the caller has forgotten the watches it holds), its memory and
 * event freed while the driver still can; the next watch makes new ones. */
void atl_watch_reset(void);
/* At exit: the pinned memory and events, given back (nothing may be under way). */
void atl_watch_exit(void);

#endif
