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
    uint64_t handle; /* ATL_ALLOC_VMM(_MAP): the cuMemCreate handle */
    struct atl_stack site;
};

/* Set by features that need the allocation ledger (step diffs, red zones,
 * leak lists), in their init, before the engine's initialisation ends. */
extern int atl_ledger_on;

/* The next creation number (allocations are numbered before the driver is
 * asked, so a failed allocation also has a number). */
uint64_t atl_ledger_next_seq(void);

/* The number the next allocation will get (none is taken): allocations
 * numbered from it on are made after now. */
uint64_t atl_ledger_seq_peek(void);

/* Changes whenever an allocation (or mapping) is added or removed: what an
 * address resolved to stays true while it stays the same. */
uint64_t atl_ledger_generation(void);

/* Recently freed allocations, for reports that name one no longer live (the
 * step diff's "another buffer": was the buffer it replaces freed, and
 * where?). Kept only once a feature asks (atl_ledger_keep_freed, with the
 * stack depth of a free's site): the last ATL_LEDGER_FREED of them. */
#define ATL_LEDGER_FREED 1024
void atl_ledger_keep_freed(int depth);
/* The freed allocation alloc#seq, if still kept: its record and the stack of
 * its free; 1 when found. */
int atl_ledger_freed(uint64_t seq, struct atl_alloc_rec *out, struct atl_stack *where);

/* Adds a live allocation (copied). Returns 0, or -1 when out of memory. */
int atl_ledger_add(const struct atl_alloc_rec *r);

/* Removes the allocation starting at ptr; fills *out when found. 1 if it was
 * live, 0 if the ledger did not know it. */
int atl_ledger_remove(CUdeviceptr ptr, struct atl_alloc_rec *out);

/* The bytes from r->ptr that address lookups count as r's: what the
 * driver gave (padded, red zone included) or what was asked, whichever is
 * more, and at least one. */
static inline size_t atl_alloc_span(const struct atl_alloc_rec *r)
{
    size_t span = r->padded > r->bytes ? r->padded : r->bytes;
    return span ? span : 1;
}

/* The live allocation whose [ptr, ptr+atl_alloc_span) holds addr; 1 if
 * found. */
int atl_ledger_find(CUdeviceptr addr, struct atl_alloc_rec *out);

/* The same for a guarded allocation (one with a red zone), without copying
 * its record: its base and creation number; 1 if found. */
int atl_ledger_find_guarded(CUdeviceptr addr, CUdeviceptr *base, uint64_t *number);

/* The same for any allocation, without copying its record (the race
 * detector resolves every pointer a launch passes): its base, span
 * (atl_alloc_span) and creation number; 1 if found. */
int atl_ledger_find_base(CUdeviceptr addr, CUdeviceptr *base, size_t *span, uint64_t *number);

/* Number of live allocations (physical VMM allocations included, their
 * mappings not), and their requested bytes. */
size_t atl_ledger_count(size_t *bytes);

/* Bytes of the live physical VMM allocations (cuMemCreate). */
size_t atl_ledger_vmm_bytes(void);

/* Copies up to max live records into out: the allocations with an address
 * in address order, then the physical VMM allocations in handle order;
 * returns how many were copied. */
size_t atl_ledger_snapshot(struct atl_alloc_rec *out, size_t max);

/* ---- virtual memory management --------------------------------------------
 * A cuMemCreate allocation has a handle, not an address: it is kept by
 * handle. Each cuMemMap of it adds a mapping record (kind ATL_ALLOC_VMM_MAP,
 * a copy of the handle's record at the mapped address) that atl_ledger_find
 * answers with, so an address in the mapping is named after the physical
 * allocation. Mappings are not allocations: atl_ledger_remove, count and
 * snapshot leave them out. */

/* Adds a physical allocation keyed by r->handle. 0, or -1 out of memory. */
int atl_ledger_add_handle(const struct atl_alloc_rec *r);

/* Removes the physical allocation `handle`; fills *out; 1 if it was live. */
int atl_ledger_remove_handle(uint64_t handle, struct atl_alloc_rec *out);

/* Records that `handle` is mapped at [va, va+bytes): 1 when the handle is
 * on the ledger, 0 when not (nothing recorded), -1 out of memory. */
int atl_ledger_map(CUdeviceptr va, size_t bytes, uint64_t handle);

/* Forgets the mappings that start in [va, va+bytes); returns how many. */
size_t atl_ledger_unmap(CUdeviceptr va, size_t bytes);

/* Where a record lives, for reports: "at 0x..." or, for a physical VMM
 * allocation, "through cuMemCreate (handle 0x...)". */
const char *atl_ledger_where(const struct atl_alloc_rec *r, char *buf, size_t n);

/* Forgets everything (tests; a forked child). */
void atl_ledger_reset(void);

/* (The ledger's reports: src/leaks.h.) */

#endif
