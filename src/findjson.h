/*
 * One finding as one line of JSON: the findings file of ATLAS_REPORT and of
 * atlas-diff --report. Its schema is docs/findings.schema.json (version
 * ATL_FINDINGS_VERSION), described in docs/reports.md. Pure formatting: the
 * library's findings sink (src/findings.c) and atlas-diff both write through
 * it.
 */
#ifndef ATL_FINDJSON_H
#define ATL_FINDJSON_H

#include "stack.h"

#include <stddef.h>
#include <stdint.h>

#define ATL_FINDINGS_SCHEMA "atlastrace-findings"
#define ATL_FINDINGS_VERSION 1

struct atl_finding_rec {
    const char *tool;    /* "atlastrace" (the preload) or "atlas-diff" */
    long pid;            /* the process that found it; 0: none (atlas-diff) */
    uint64_t id;         /* 1, 2, ... in the order found */
    const char *kind;    /* overrun, write-after-free, leak, fault, race, step-diff */
    const char *message; /* the report's first line, as printed (without the log's prefix) */
    const char *kernel, *kernel_mangled; /* NULL: none */
    uint64_t launch;                     /* launch number; 0: none */
    uint64_t alloc;                      /* alloc#N; 0: none */
    uint64_t bytes;                      /* bytes concerned; 0 with has_bytes 0: none */
    int has_bytes;
    uint64_t count;       /* allocations (a leak group), else 1 */
    const char *step;     /* the step's name; NULL: none */
    uint64_t step_no;     /* its number among steps of that name */
    const char *files[2]; /* atlas-diff: the trace files compared (NULL: none) */
    const struct atl_frame *fr;
    int nfr;
    int suppressed;
    const char *suppression; /* the matching entry's name */
    int printed;             /* printed in full on the report (else counted only) */
};

/* The line, newline included, into buf (truncated frames first when it does
 * not fit: it stays valid JSON). Returns its length. */
size_t atl_finding_json(const struct atl_finding_rec *r, char *buf, size_t len);

#endif
