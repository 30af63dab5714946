/*
 * The flight recorder's launch path: the ring of launches the fault latch
 * reports (every launch since the last good sync is a suspect), written
 * inline from the hooks' light path and from the engine's launch path.
 *
 * The light path must cost a few tens of instructions, take no lock and make
 * no call, so that the hook keeps the launch's arguments in their registers
 * and ends in a tail call: a probe of the kernel table (one multiply, one
 * compare when the first slot holds the handle), one compare of the kernel's
 * epoch, one atomic add for the launch number, a dozen stores. On x86-64 the
 * two grid launchers do it in assembly (hooks/hooks.c, the same steps);
 * elsewhere atl_ring_ready and atl_ring_put below. Anything else (a handle
 * the table lacks, the first launch of a kernel since the last good sync)
 * goes through atl_ring_first (cold, once per kernel and sync).
 */
#ifndef ATL_RING_H
#define ATL_RING_H

#include <cuda.h>
#include <stdint.h>

#define ATL_HIDDEN __attribute__((visibility("hidden")))

/* One launch: 64 bytes, one cache line (the ring is 64-byte aligned). */
#define ATL_RING_GRAPH 0x40000000 /* in hook: a graph launch; obj is its CUgraphExec */
struct atl_ring_ent {
    uint64_t seq; /* written last; 0 while being written */
    void *obj;    /* the CUfunction or CUkernel; the CUgraphExec of a graph launch */
    CUstream stream;
    unsigned grid[3], block[3], shmem;
    int hook; /* the entry point, | ATL_RING_GRAPH */
    uint64_t spare;
};
_Static_assert(sizeof(struct atl_ring_ent) == 64, "a ring slot is one cache line");
/* hooks.c's assembly writes the slot at these offsets */
_Static_assert(__builtin_offsetof(struct atl_ring_ent, stream) == 16, "slot layout");
_Static_assert(__builtin_offsetof(struct atl_ring_ent, grid) == 24, "slot layout");
_Static_assert(__builtin_offsetof(struct atl_ring_ent, block) == 36, "slot layout");
_Static_assert(__builtin_offsetof(struct atl_ring_ent, shmem) == 48, "slot layout");
_Static_assert(__builtin_offsetof(struct atl_ring_ent, hook) == 52, "slot layout");

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

/* Read on every launch, written rarely: one cache line of its own, apart
 * from the launch counter that every launch writes. */
struct atl_flight {
    struct atl_ring_ent *ring;
    uint64_t mask;         /* ring slots - 1 */
    struct atl_ktab *ktab; /* never NULL */
    uint64_t epoch;        /* + 1 at every host synchronisation that succeeds */
} __attribute__((aligned(64)));
extern struct atl_flight atl_fl ATL_HIDDEN;
_Static_assert(__builtin_offsetof(struct atl_flight, ring) == 0, "hooks.c's assembly knows this");
_Static_assert(__builtin_offsetof(struct atl_flight, mask) == 8, "hooks.c's assembly knows this");
_Static_assert(__builtin_offsetof(struct atl_flight, ktab) == 16, "hooks.c's assembly knows this");
_Static_assert(__builtin_offsetof(struct atl_flight, epoch) == 24, "hooks.c's assembly knows this");

/* The next launch number (from 1), alone on its cache line: every launch
 * adds to it, and sharing the line with data every launch reads (atl_on,
 * the driver table) made each launch of one thread evict the others'. */
struct atl_launch_counter {
    uint64_t next;
    char pad[56];
} __attribute__((aligned(64)));
extern struct atl_launch_counter atl_launch_seq ATL_HIDDEN;

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

/* Every field is stored and loaded atomically (relaxed: plain moves on
 * x86-64): two launches a ring apart may write one slot at once, and the
 * reader checks `seq` before and after copying, seqlock-style. A slot two
 * writers interleaved on can still mix their fields; that needs one launch
 * to stall while a whole ring of others complete, and costs a wrong line,
 * never a crash. */
#define ATL_RST(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)

/* Takes the next launch number and writes its slot; returns the number. */
static inline uint64_t atl_ring_put(int hook, void *obj, CUstream stream, unsigned gx, unsigned gy,
                                    unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                    unsigned shmem)
{
    uint64_t seq = __atomic_fetch_add(&atl_launch_seq.next, 1, __ATOMIC_RELAXED);
    struct atl_ring_ent *e = &atl_fl.ring[seq & atl_fl.mask];
    ATL_RST(e->seq, 0);
    ATL_RST(e->obj, obj);
    ATL_RST(e->stream, stream);
    ATL_RST(e->grid[0], gx);
    ATL_RST(e->grid[1], gy);
    ATL_RST(e->grid[2], gz);
    ATL_RST(e->block[0], bx);
    ATL_RST(e->block[1], by);
    ATL_RST(e->block[2], bz);
    ATL_RST(e->shmem, shmem);
    ATL_RST(e->hook, hook);
    __atomic_store_n(&e->seq, seq, __ATOMIC_RELEASE);
    return seq;
}

#endif
