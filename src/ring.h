/*
 * The fault latch's ring of recent launches, written inline from the hooks'
 * light path (every launch, by default) and from the engine's launch path.
 *
 * The light path must cost a few tens of instructions and make no call, so
 * that the hook keeps the launch's arguments in their registers and ends in
 * a tail call: one atomic add for the launch number, a hash and a compare in
 * this thread's cache of named kernels, a dozen stores. A kernel handle the
 * cache does not know goes through atl_ring_name first (cold, once per
 * kernel and thread).
 */
#ifndef ATL_RING_H
#define ATL_RING_H

#include <cuda.h>
#include <stdint.h>

#define ATL_HIDDEN __attribute__((visibility("hidden")))

#define ATL_RING 64
struct atl_ring_ent {
    uint64_t seq; /* written last; 0 while empty */
    void *func;   /* NULL: a graph launch */
    void *exec;
    CUstream stream;
    unsigned grid[3], block[3], shmem;
    int hook;
};
extern struct atl_ring_ent atl_ring[ATL_RING] ATL_HIDDEN;

/* Launch numbers, process-wide, from 1. */
extern uint64_t atl_launch_seq ATL_HIDDEN;

/* Kernels this thread has already made sure the registry can name. After a
 * fault the driver stops answering cuFuncGetName (seen on the H200), so the
 * first launch of each handle names it while the driver still answers. A
 * direct-mapped per-thread cache on the heap, behind one initial-exec TLS
 * pointer (see sync.c for why not in TLS itself). */
#define ATL_NAMED 256
extern __thread void **atl_named ATL_HIDDEN __attribute__((tls_model("initial-exec")));

static inline unsigned atl_named_slot(const void *func)
{
    uintptr_t x = (uintptr_t)func;
    return (unsigned)((x >> 4) ^ (x >> 12)) & (ATL_NAMED - 1);
}

/* 1 when this thread has named func already (NULL needs no name). */
static inline int atl_ring_known(const void *func)
{
    void **n = atl_named;
    return !func || (n && n[atl_named_slot(func)] == func);
}

/* Names func in the kernel registry while the driver answers, and enters it
 * in this thread's cache. */
void atl_ring_name(void *func) ATL_HIDDEN __attribute__((cold, noinline));

/* A module or library was unloaded: every thread's cache is emptied, since
 * its handles may come back as other kernels. */
void atl_ring_forget_all(void) ATL_HIDDEN;

/* Every field is stored and loaded atomically (relaxed: plain moves on
 * x86-64): two launches ATL_RING apart may write one slot at once, and the
 * reader checks `seq` before and after copying, seqlock-style. A slot two
 * writers interleaved on can still mix their fields; that needs one launch
 * to stall while ATL_RING others complete, and costs a wrong line, never a
 * crash. */
#define ATL_RST(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)

/* Takes the next launch number and writes its slot; returns the number. */
static inline uint64_t atl_ring_put(int hook, void *func, void *exec, CUstream stream, unsigned gx,
                                    unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                    unsigned shmem)
{
    uint64_t seq = __atomic_add_fetch(&atl_launch_seq, 1, __ATOMIC_RELAXED);
    struct atl_ring_ent *e = &atl_ring[seq & (ATL_RING - 1)];
    ATL_RST(e->seq, 0);
    ATL_RST(e->func, func);
    ATL_RST(e->exec, exec);
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
