/*
 * The allocation ledger: every live driver allocation, numbered in creation
 * order. Features ask it which allocation an address falls in (step diffs
 * name pointers as alloc#N+0xOFF), which allocations are live (red-zone
 * scans, leak lists) and what was freed.
 */
#ifndef ATL_LEDGER_H
#define ATL_LEDGER_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "stack.h"

struct atl_alloc_rec {
    uint64_t seq;    /* creation order, from 1 */
    CUdeviceptr ptr; /* what the program got */
    size_t bytes;    /* what the program asked for */
    size_t padded;   /* what the driver gave (bytes + red zone) */
    int kind;        /* enum atl_alloc_kind */
    int hook;        /* the entry point that made it */
    CUstream stream; /* stream-ordered allocations */
    int guarded;     /* has a poisoned red zone */
    struct atl_stack site;
};

/* The next creation number (allocations are numbered before the driver is
 * asked, so a failed allocation also has a number). */
uint64_t atl_ledger_next_seq(void);

/* Adds a live allocation (copied). Returns 0, or -1 when out of memory. */
int atl_ledger_add(const struct atl_alloc_rec *r);

/* Removes the allocation starting at ptr; fills *out when found. 1 if it was
 * live, 0 if the ledger did not know it. */
int atl_ledger_remove(CUdeviceptr ptr, struct atl_alloc_rec *out);

/* The live allocation whose [ptr, ptr+padded) holds addr; 1 if found. */
int atl_ledger_find(CUdeviceptr addr, struct atl_alloc_rec *out);

/* Number of live allocations, and their requested bytes. */
size_t atl_ledger_count(size_t *bytes);

/* Copies up to max live records into out, in address order; returns how
 * many were copied. */
size_t atl_ledger_snapshot(struct atl_alloc_rec *out, size_t max);

/* Forgets everything (tests; a forked child). */
void atl_ledger_reset(void);

#endif
