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
 * a kernel since the last good sync) goes through atl_ring_first (cold, once
 * per kernel and sync).
 */
#ifndef ATL_RING_H
#define ATL_RING_H

#include <cuda.h>
#include <stdint.h>

#include "fault.h"   /* the ring itself, atl_fl */
#include "kernels.h" /* the kernel table and its records */

/* The table entry of f when a launch of f can be recorded right away: the
 * table knows f, and this is not f's first launch since the last good
 * sync; else NULL. */
static inline struct atl_ktab_ent *atl_ring_ready_ent(const void *f)
{
    struct atl_ktab_ent *e = atl_ktab_find(__atomic_load_n(&atl_fl.ktab, __ATOMIC_ACQUIRE), f);
    return e && f &&
                   __atomic_load_n(&e->epoch, __ATOMIC_RELAXED) ==
                       __atomic_load_n(&atl_fl.epoch, __ATOMIC_RELAXED)
               ? e
               : NULL;
}

/* 1 when a launch of f can be recorded right away (the light path's test). */
static inline int atl_ring_ready(const void *f)
{
    return atl_ring_ready_ent(f) != NULL;
}

/* The cold half: names f while the driver still answers (after a fault it
 * stops answering cuFuncGetName, seen on the H200), enters it in the table,
 * keeps this launch's parameter bytes (its first since the last good sync)
 * and marks it seen in this epoch. params/extra as cuLaunchKernel takes them.
 * Returns f's record (NULL: f is NULL, or out of memory). */
struct atl_krec *atl_ring_first(void *f, void **params, void **extra) ATL_HIDDEN
    __attribute__((cold, noinline));

#endif
