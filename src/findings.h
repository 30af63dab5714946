/*
 * The findings sink: every finding a feature reports goes through here once,
 * before its lines are printed. Here it is matched against the suppression
 * files (ATLAS_SUPPRESSIONS), counted (ATLAS_ERROR_EXITCODE's verdict and the
 * run's summary read these counts, and no other), written to the findings
 * file (ATLAS_REPORT), and held to the print limit (ATLAS_PRINT_LIMIT); after
 * its lines, ATLAS_GEN_SUPPRESSIONS prints an entry that matches it.
 *
 *   struct atl_find f = {.kind = ATL_FINDING_LEAK, .message = line, ...};
 *   if (atl_find_open(&f)) {
 *       atl_log(ATL_WARN, "%s", line);   ... the rest of its lines
 *       atl_find_close(&f);
 *   }
 *
 * A fact: it calls no feature. docs/reports.md describes what a user sees.
 */
#ifndef ATL_FINDINGS_H
#define ATL_FINDINGS_H

#include "stack.h"

#include <stdint.h>

/* The folder atlas-trace --error-exitcode reads findings from (set by atlas-trace for the
 * whole process tree; internal): one file a process, one line a finding that counts. */
#define ATL_VERDICT_VAR "ATLASTRACE_VERDICT"

enum atl_finding {
    ATL_FINDING_OVERRUN,    /* a red zone found corrupted */
    ATL_FINDING_AFTER_FREE, /* a freed allocation kept poisoned, found written */
    ATL_FINDING_FAULT,      /* a sticky fault, or a launch debug sync found failing */
    ATL_FINDING_LEAK,       /* allocations never freed from one call stack (ATLAS_LEAKS) */
    ATL_FINDING_DIFF,       /* a step that differs (counts only with ATLAS_ERROR_ON=diff) */
    ATL_FINDING_RACE,       /* a race between streams (ATLAS_RACES) */
    ATL_FINDING_KINDS,
};

/* The kind as the findings file and suppression entries name it. */
const char *atl_finding_kind_name(enum atl_finding k);
/* n of them in words: "1 leak", "2 writes after free" (the words only). */
const char *atl_finding_words(enum atl_finding k, uint64_t n);

struct atl_find {
    enum atl_finding kind;
    const char *message;        /* the report's first line, as printed */
    const char *kernel;         /* as reports print it; NULL: none */
    const char *kernel_mangled; /* NULL: not known or not mangled */
    uint64_t launch;            /* launch number; 0: none */
    uint64_t alloc;             /* alloc#N; 0: none */
    uint64_t bytes;             /* with has_bytes */
    int has_bytes;
    uint64_t count;   /* allocations of a leak group; 0 means 1 */
    const char *step; /* a step's name; NULL: none */
    uint64_t step_no;
    const struct atl_stack *stack; /* allocation or call-site frames; NULL: none */
    /* a race's other access (its 1st): suppressions' frame lines match it too; NULL: none */
    const struct atl_stack *stack2;
    /* the feature does not print it and says so itself (no room left in its
     * own report; a step folded into a run of repeats): counted and written as
     * not printed, not counted as past the print limit */
    int no_print;
    /* set by atl_find_open: printed now (for atl_find_close); suppressed */
    int shown, suppressed;
};

/* Reads the settings (the engine's init, before the features'): the
 * suppression files, the findings file, the print limit. */
void atl_findings_init(void);

/* The finding f, once: 1 when its lines are to be printed now; 0 when it is
 * suppressed, not printed by its feature (no_print), or past the print limit (it is counted
 * and written all the same, unless suppressed: then counted as suppressed). */
int atl_find_open(struct atl_find *f);
/* After its lines: the suppression entry, with ATLAS_GEN_SUPPRESSIONS. */
void atl_find_close(const struct atl_find *f);

/* The unsuppressed findings of kind k so far (what ATLAS_ERROR_EXITCODE and
 * the summary count), and the suppressed ones. */
uint64_t atl_findings_count(enum atl_finding k);
uint64_t atl_findings_suppressed(enum atl_finding k);
/* Findings counted but not printed: past the print limit. */
uint64_t atl_findings_unprinted(void);

/* At exit, after the features' reports: what was not printed, what was
 * suppressed and by which entries; the findings file is closed. */
void atl_findings_exit(void);

/* ATLAS_ERROR_EXITCODE: says the verdict and ends the process with it when a finding counts;
 * `last` (or NULL) is written after the verdict, as the run's last line, whether or not (the
 * engine's, at exit; here, beside the counts it reads, so that src/self.c, a floor below the
 * findings, never calls up into them). */
void atl_exit_verdict(const char *last);

#endif
