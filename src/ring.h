/*
 * The flight recorder's launch path: before a launch goes to the launch
 * history's ring (src/fault.h, atl_ring_put), the recorder's kernel table
 * is probed, so that its kernel is named and its arguments kept while the
 * driver still answers. Written inline from the hooks' light path and from
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

#include "fault.h" /* the ring itself, atl_fl */

/* The kernel table: every kernel handle the recorder knows (named when it
 * was looked up through us, or at its first launch), open-addressed, read
 * without a lock. Offsets are byte offsets: the hash masked by `mask` (the
 * capacity - 1, times the entry size) is the entry's offset from e[0]. */
struct atl_krec;
struct atl_ktab_ent {
    void *key;            /* the handle; NULL: empty; ATL_KTAB_GONE: forgotten */
    uint64_t epoch;       /* atl_fl.epoch at its first launch since a good sync */
    struct atl_krec *rec; /* flight.c: its name, parameter layout, last arguments */
    uint64_t spare;
};
#define ATL_KTAB_ENT 32
/* The hash: (f * MUL) >> SHIFT, masked. MUL is a sign-extended 32-bit
 * immediate (one imul in hooks.c's assembly); the bits kept, 29 and up of
 * the product, depend on the handle's bits 0 to 44 and spread handles that
 * are 16 bytes apart (kernels of one module, as the fake driver gives them)
 * dozens of slots apart. */
#define ATL_KTAB_MUL 0xffffffff9e3779b1ULL
#define ATL_KTAB_SHIFT 24
#define ATL_KTAB_GONE ((void *)1)
struct atl_ktab {
    uint64_t mask; /* (capacity - 1) * ATL_KTAB_ENT */
    uint64_t cap;
    uint64_t used; /* keys and forgotten keys (under the writers' lock) */
    struct atl_ktab *older;
    struct atl_ktab_ent e[];
};
_Static_assert(sizeof(struct atl_ktab_ent) == ATL_KTAB_ENT, "hooks.c's assembly knows this");
_Static_assert(sizeof(struct atl_ktab) == 32, "hooks.c's assembly knows this");

/* The table entry of f, or NULL (f NULL finds an empty entry: not ready). */
static inline struct atl_ktab_ent *atl_ktab_find(const struct atl_ktab *t, const void *f)
{
    uint64_t off = (((uint64_t)(uintptr_t)f * ATL_KTAB_MUL) >> ATL_KTAB_SHIFT) & t->mask;
    for (;;) {
        struct atl_ktab_ent *e = (struct atl_ktab_ent *)((char *)t->e + off);
        void *k = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
        if (k == f)
            return e;
        if (!k)
            return NULL;
        off = (off + ATL_KTAB_ENT) & t->mask;
    }
}

/* 1 when a launch of f can be recorded right away: the recorder knows f, and
 * this is not f's first launch since the last good sync. */
static inline int atl_ring_ready(const void *f)
{
    const struct atl_ktab_ent *e =
        atl_ktab_find(__atomic_load_n(&atl_fl.ktab, __ATOMIC_ACQUIRE), f);
    return e && f &&
           __atomic_load_n(&e->epoch, __ATOMIC_RELAXED) ==
               __atomic_load_n(&atl_fl.epoch, __ATOMIC_RELAXED);
}

/* The cold half: names f while the driver still answers (after a fault it
 * stops answering cuFuncGetName, seen on the H200), enters it in the table,
 * keeps this launch's parameter bytes (its first since the last good sync)
 * and marks it seen in this epoch. params/extra as cuLaunchKernel takes them. */
void atl_ring_first(void *f, void **params, void **extra) ATL_HIDDEN
    __attribute__((cold, noinline));

#endif
