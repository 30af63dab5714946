/*
 * Chrome trace / Perfetto export of the step trace (ATLAS_CHROME_TRACE,
 * docs/chrome.md): each step a slice on a "steps" track, each op an event
 * on its stream's track at its host enqueue time. src/tracebuf.c records the
 * times, src/tracestep.c calls in here at every step end.
 */
#ifndef ATL_CHROME_H
#define ATL_CHROME_H

#include "tracediff.h"

#include <stdint.h>
#include <time.h>

/* Set by atl_chrome_open when the file is open; never changes after init. */
extern int atl_chrome_on;

/* CLOCK_MONOTONIC in ns (about 20 ns through the vDSO). */
static inline uint64_t atl_chrome_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Opens the file named by `pattern` (%p, %r expanded) and writes the header.
 * Returns 0, or -1 after one warning line (the export stays off). */
int atl_chrome_open(const char *pattern);

/* Writes one step: its slice and one event per op. ts[i] is op i's host
 * enqueue time (ns; NULL or 0: unknown, the step's start is used); begin is
 * when the step opened, end when it closed. The kernel names of the ops
 * must be demangled already (k->pretty). Flushed before returning, so a
 * crash loses at most the step in progress. */
void atl_chrome_step(const struct atl_step *s, const uint64_t *ts, uint64_t begin, uint64_t end);

/* Closes the JSON array; later steps are not written. */
void atl_chrome_close(void);

#endif
