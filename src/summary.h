/*
 * The summary line: the last line of every run through atlas-trace, options or not, saying
 * what was watched and what was found, as valgrind's and compute-sanitizer's ERROR SUMMARY
 * does:
 *     atlas[PID]: summary: 1 overrun in 2,114 guarded allocations, 0 faults in 9,001 launches,
 *                 0 leaks, 3 of 40 steps differ, 17 blocking copies from 3 sites, 40 host syncs
 * Without it a run that found nothing looked exactly like one where the library was not loaded.
 *
 * Who prints one: a process that runs under atlas-trace (ATLASTRACE_FRONT, src/hint.h) and
 * either made a CUDA driver call (the library initialised in it: a child of the program that
 * is traced and uses the GPU gets its own) or is the program atlas-trace started (its PID,
 * which atlas-trace keeps by exec'ing), which then says it made none. A bare preload stays
 * silent: it may be loaded into every process of a job. The engine gathers the counts from the
 * features at exit (src/engine.c); this module only knows who prints and how the line reads.
 */
#ifndef ATL_SUMMARY_H
#define ATL_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

struct atl_summary {
    int redzone; /* red zones were on: */
    uint64_t overruns, guarded, after_free;
    int quarantine; /* freed allocations were kept poisoned: after_free counts */
    uint64_t faults;
    int launches_counted; /* the launch history numbered the launches (ATLAS_LAUNCH_RING) */
    uint64_t launches;
    int debug_sync; /* debug sync was on: */
    uint64_t synced;
    int leaks;                            /* ATLAS_LEAKS: */
    uint64_t leaked;                      /* call stacks (each a finding) */
    uint64_t leaked_allocs, leaked_bytes; /* allocations never freed, their bytes */
    int races;                            /* ATLAS_RACES: */
    uint64_t race_count;
    int trace; /* the step trace recorded: */
    uint64_t steps, differ;
    uint64_t copies;   /* blocking device-to-host copies, counted always */
    int sites_counted; /* ATLAS_D2H_TRACE: their call sites */
    uint64_t sites;
    uint64_t syncs; /* host synchronisations, counted always */
    /* suppression files were read (ATLAS_SUPPRESSIONS): the findings they matched, left out
     * of the counts above and said apart */
    int suppressions;
    uint64_t suppressed;
};

/* 1 when this process ends with a summary line; `initialised`: it made a CUDA driver call. */
int atl_summary_wanted(int initialised);

/* The line, without the "atlas[PID]: " prefix, into out: "summary: ..." of what s holds, or,
 * for a process that made no driver call (s NULL), that it made none. */
void atl_summary_format(const struct atl_summary *s, char *out, size_t len);

/* n with thousands separators ("2,114") into out (at least 27 bytes); returns out. */
const char *atl_summary_number(uint64_t n, char *out);

#endif
