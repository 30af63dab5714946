/*
 * The launch history: every launch gets a number (atl_launch_seq, from 1)
 * and a slot in a lock-free ring, and the first sticky error any hooked call
 * returns is latched once. This module owns the three; everything that asks
 * about recent launches (the fault report's suspects, red zones' suspects,
 * debug sync's "launches so far") asks the one query below, "the launches
 * since number N".
 *
 * The launch path must cost a few tens of instructions, take no lock and make
 * no call, so that the hook keeps the launch's arguments in their registers
 * and ends in a tail call: one atomic add for the number, a dozen stores for
 * the slot (atl_ring_put). On x86-64 the two grid launchers do it in assembly
 * (hooks/hooks.c, the same steps, at the offsets asserted here). Which
 * kernel a launch ran, and its arguments, is the flight recorder's
 * (src/ring.h, src/flight.c).
 */
#ifndef ATL_FAULT_H
#define ATL_FAULT_H

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

/* Read on every launch, written rarely: one cache line of its own, apart
 * from the launch counter that every launch writes. The ring and its mask
 * are this module's; the kernel table is the kernel records' (src/kernels.h)
 * and its epoch the flight recorder's (src/ring.h), on the same line because
 * the launch path reads all four. */
struct atl_ktab;
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

/* Sizes the ring from ATLAS_LAUNCH_RING (0: off; 1: the default size; else
 * rounded up to a power of two, 64 to 4M). Before it, and when off, launches
 * still go to a ring of 64 (the engine's launch path under debug sync). */
void atl_fault_init(unsigned long long ring);

/* 1 when launches are recorded (ATLAS_LAUNCH_RING is not 0). */
int atl_fault_ring_on(void);

/* How many launches the ring holds (a power of two). */
uint64_t atl_fault_ring_slots(void);

/* The launch number of the newest launch made so far (0: none): the "N" of
 * a later query (a sync's starting point; a check's "launches before me"). */
uint64_t atl_fault_last_launch(void);

/* The query: the launches numbered since + 1 to upto, oldest first, each
 * copied out of the ring (without a lock) and handed to fn; with `newest`
 * non-zero, only the newest `newest` of them. A launch whose slot the ring
 * has reused is skipped (as is one being rewritten while it is read).
 * Returns how many launches of since + 1 to upto are older than the ring
 * holds (lost: it wrapped), whatever `newest` is. */
uint64_t atl_fault_launches_since(uint64_t since, uint64_t upto, uint64_t newest,
                                  void (*fn)(const struct atl_ring_ent *e, void *ctx), void *ctx);

/* The sticky-fault latch. A sticky error (700, 719, ...) loses the context:
 * every later call fails with it too. */
int atl_fault_is_sticky(CUresult r);
/* 1 for the first sticky error the library sees (its report names the
 * suspects), 0 for any other result and for every later one. */
int atl_fault_latch(CUresult r);

#endif
