/*
 * The hang report (ATLAS_HANG_SECONDS): a rank waiting for ever in a
 * collective says where it waits, without a debugger.
 */
#ifndef ATL_HANG_H
#define ATL_HANG_H

#include "events.h"

/* Set once by atl_hang_init when ATLAS_HANG_SECONDS > 0. */
extern int atl_hang_on;

/* Reads the setting; returns the atl_on bits the watch needs (0 when off). */
unsigned atl_hang_init(void);

/* Around a call that blocks the host (a sync, a synchronous copy): cheap
 * stores in this thread's slot, no lock. */
void atl_hang_enter(int hook);
void atl_hang_leave(void);

#endif
