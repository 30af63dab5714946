/*
 * The hang report (ATLAS_HANG_SECONDS): a rank waiting for ever in a
 * collective says where it waits, without a debugger.
 */
#ifndef ATL_HANG_H
#define ATL_HANG_H

#include "events.h"

/* Reads the setting; returns the atl_on bits the watch needs (0 when off). */
unsigned atl_hang_init(void);

/* What the report shows of other features' state, handed over by the
 * engine at init (a feature calls no other feature); NULL where that
 * feature is off. */
struct atl_hang_sources {
    /* the step trace (src/trace.h): steps finished, ops since, the last few */
    int (*progress)(uint64_t *steps, uint64_t *ops, unsigned max, void (*line)(const char *));
    /* the step trace: its JSON lines pushed to the file */
    void (*flush)(void);
    /* the flight recorder (src/flight.h): the suspect launches */
    void (*suspects)(const char *tag);
};
void atl_hang_sources(const struct atl_hang_sources *s);

/* Around a call that blocks the host (a sync, a synchronous copy): cheap
 * stores in this thread's slot, no lock. */
void atl_hang_enter(int hook);
void atl_hang_leave(void);

#endif
