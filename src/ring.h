/*
 * The flight recorder's launch path: before a launch goes to the launch
 * history's ring (src/fault.h, atl_ring_put), the kernel table
 * (src/kernels.h) is probed, so that its kernel is named and its arguments
 * kept while the driver still answers. Written inline from the hooks' light path and from
 * the engine's launch path.
 *
 * The light path must cost a few tens of instructions, take no lock and make
 * no call: a probe of the kernel table (one multiply, one compare when the
 * first slot holds the handle), one compare of the kernel's epoch, then
 * atl_ring_put. On x86-64 the two grid launchers do it in assembly
 * (hooks/hooks.c, the same steps); elsewhere atl_ring_ready below and
 * atl_ring_put. Anything else (a handle the table lacks, the first launch of
 * a kernel in the recorder's epoch) goes through atl_ring_first (cold, once
 * per kernel and epoch).
 *
 * The epoch (atl_fl.epoch): a new one starts at a host synchronisation that
 * succeeds, so that a kernel's kept arguments are those of its first launch
 * since a good sync; but only while the cold paths have a budget: each
 * launch earns a 1/ATL_FLIGHT_COLD_SPACING-th of one, each cold path spends
 * one, and the budget holds at most ATL_FLIGHT_COLD_BURST. A program that
 * synchronises after every few launches would otherwise send every launch
 * down the cold path (its lookup and argument copy cost ten times the light
 * path); this way the cold paths are at most one launch in
 * ATL_FLIGHT_COLD_SPACING over a run, whatever the pattern of syncs, and
 * more only in a burst of at most ATL_FLIGHT_COLD_BURST (a short program
 * keeps the arguments of every first launch after a good sync). A kernel
 * launched rarely (the suspect a fault report is about) still has the
 * arguments of each of its launches kept, since its launches are each the
 * first of their epoch. The report says which launch the kept bytes are of.
 */
#ifndef ATL_RING_H
#define ATL_RING_H

#include <cuda.h>
#include <stdint.h>

#include "fault.h"   /* the ring itself, atl_fl */
#include "kernels.h" /* the kernel table and its records */

#define ATL_FLIGHT_COLD_SPACING 1024
#define ATL_FLIGHT_COLD_BURST 64

/* The table entry of f when a launch of f can be recorded right away: the
 * table knows f, and this is not f's first launch in the recorder's epoch;
 * else NULL. */
static inline struct atl_ktab_ent *atl_ring_ready_ent(const void *f)
{
    struct atl_ktab_ent *e = atl_ktab_find(__atomic_load_n(&atl_fl.ktab, __ATOMIC_ACQUIRE), f);
    return e && f &&
                   __atomic_load_n(&e->epoch, __ATOMIC_RELAXED) ==
                       __atomic_load_n(&atl_fl.epoch, __ATOMIC_RELAXED)
               ? e
               : NULL;
}

/* The record of f when a launch of f can be recorded right away (one probe:
 * the engine's launch path), else NULL. The caller is pinned. */
static inline struct atl_krec *atl_ring_ready_rec(const void *f)
{
    for (;;) {
        struct atl_ktab_ent *e = atl_ring_ready_ent(f);
        if (!e)
            return NULL;
        struct atl_krec *r = __atomic_load_n(&e->rec, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->key, __ATOMIC_ACQUIRE) == f)
            return r; /* else a writer moved another key there: again */
    }
}

/* 1 when a launch of f can be recorded right away (the light path's test). */
static inline int atl_ring_ready(const void *f)
{
    return atl_ring_ready_ent(f) != NULL;
}

/* The cold half: names f while the driver still answers (after a fault it
 * stops answering cuFuncGetName, seen on the H200), enters it in the table,
 * keeps the parameter bytes of this launch (number seq, its first in the
 * epoch) and marks it seen in this epoch. params/extra as cuLaunchKernel
 * takes them. Returns f's record (NULL: f is NULL, or out of memory), which
 * stays valid while the caller is pinned (src/kernels.h). */
struct atl_krec *atl_ring_first(void *f, void **params, void **extra, uint64_t seq) ATL_HIDDEN
    __attribute__((cold, noinline));

#endif
