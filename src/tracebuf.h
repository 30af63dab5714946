/*
 * The step trace's per-thread buffers (src/tracebuf.c): where a thread's ops
 * go while its step is under way, and the ATLAS_TRACE_MAX_MB budget. The
 * bottom of the trace's stack but the Chrome trace (src/trace.c, src/nvtx.c,
 * src/tracestep.c, this, src/chrome.c: each file calls only those after it;
 * make layers-check): nothing outside the feature includes this.
 */
#ifndef ATL_TRACEBUF_H
#define ATL_TRACEBUF_H

#include "events.h"
#include "step.h"
#include "thread.h"

#include <stddef.h>
#include <stdint.h>

/* A thread's ops of the step being recorded: the same layout as a step
 * (ops[i].u.k.bytes is an offset into bytes), so the step end takes the
 * arrays over instead of copying them (harvest).
 *
 * Recorded against a reference (rops set): the thread's next step is
 * expected to repeat the last step of the kind its steps went to, kept by
 * the step ends (src/tracestep.c sets it). An op equal to the reference's op
 * at its place, record and parameter bytes, is counted and not kept: ops
 * holds the ops that differ (ndiff of them, op i at place ridx[i] of the
 * step, its bytes first in bytes), then a window of ops not yet compared
 * (up to nrec, their bytes from dbytes on), compared with the reference a
 * window at a time (two memcmps, atl_tbuf_flush). A step that repeats its
 * predecessor but for a few values then costs the trace one step-sized copy,
 * not two. The window's records name their bytes by their offsets in the
 * whole step (the reference's, when all before them matched), vgap past
 * where b holds them. In full mode (rops NULL) every op is kept, nrec ==
 * nops and vgap is 0. The reference's arrays stay as they are while a
 * buffer points to them: whoever frees or changes a kept step's arrays first
 * puts the buffers recording against them back in full mode
 * (atl_tbuf_materialize, under step_mu and the buffer's lock). */
struct tbuf {
    int busy; /* a spin lock: taken by its thread per op (uncontended, one
               * atomic exchange), by the step end once per step */
    struct tbuf *next;
    struct atl_op *ops;
    size_t nops, cap; /* nops: the ops of the step so far, kept or not */
    uint8_t *bytes;
    size_t nbytes, capbytes;   /* nbytes: of the kept ops */
    size_t nrec;               /* ops in ops[] (full mode: nops) */
    const struct atl_op *rops; /* the reference's ops (NULL: full mode), rnops of them */
    const uint8_t *rbytes;
    size_t rnops;
    size_t ndiff, dbytes, vgap; /* against a reference: see above */
    uint32_t *ridx; /* the places of the ops that differ, ridxcap of room (at least cap) */
    size_t ridxcap;
    /* steps its thread records whole before it tries a reference again: set when most of a
     * step's ops differed from it (written and read by its thread only) */
    unsigned sparse_skip;
    int oom;
    int free_; /* its thread exited: the next new thread takes it over */
    /* ATLAS_CHROME_TRACE only: host enqueue times, parallel to ops. Kept
     * out of the 64-byte record, which same_as compares byte for byte. */
    uint64_t *ts;
    size_t tscap;
    size_t held;  /* bytes of the arrays above (atomic: other threads sum it) */
    unsigned idx; /* "#N" in reports: the N-th buffer made (a reused one keeps its N) */
    int owner;    /* its thread has ended a step of its own (a sync, its own NVTX range):
                   * its ops go to its own steps only; until then they are lent to the
                   * steps other threads end (written under step_mu) */
    /* under step_mu, in step ends (step_count): its thread's last step end of
     * its own (atomic: the fast path below reads and writes it without the
     * lock), and since when ops it lent have been left (0: none) */
    uint64_t last_own, lent_since;
    int open; /* nvtx/api: its thread has a step open (never lends then) */
    /* The fast path of a step end (fast_step): the kind its thread's last
     * step went to (its index + 1; 0: none yet), and the steps it ended there
     * without step_mu, for the exit summary (written by its thread, read at
     * exit). */
    int fast_slot;
    uint64_t fast_steps;
    uint64_t fast_quiet; /* of them, those whose pageable copies' host ends moved */
    /* Under its lock: the stream of its first op, and whether a later op
     * named another (op_done). A step end then knows its ops share one
     * stream without reading every record: a million records are 64 MB. */
    uint64_t stream0;
    int multi;
    /* The oldest kernel-record pin its launches were recorded under (0: no
     * launch since it was last emptied): their ops point to the records'
     * views, and a record that leaves the table (a module unloaded before
     * the step ends) is not freed while this is below the generation it
     * left at (src/kernels.h, Lifetime). Written under its lock, read by the
     * freeing thread without it (atl_tstep_holders_low). */
    uint64_t krec_since;
};

/* Every thread's buffer: appended at the tail (a release store) by
 * atl_tbuf_new, never removed, so it is walked without a lock:
 *     for (struct tbuf *b = atl_tbuf_first(); b; b = atl_tbuf_next(b))
 * The list is src/tracebuf.c's (static); atl_tbuf_head is a read-only view
 * of its head: the same variable under a const name (an alias, no pointer
 * to follow), so a walk costs what it did when the head was shared. */
extern struct tbuf *const atl_tbuf_head __attribute__((visibility("hidden")));
static inline struct tbuf *atl_tbuf_first(void)
{
    return __atomic_load_n(&atl_tbuf_head, __ATOMIC_ACQUIRE);
}
static inline struct tbuf *atl_tbuf_next(const struct tbuf *b)
{
    return __atomic_load_n(&b->next, __ATOMIC_ACQUIRE);
}
/* The capture buffer: the ops captured into CUDA graphs in sync, nvtx and
 * api modes, from every thread (not in the list: no step takes them); a
 * capture's end takes them (atl_tstep_captured) to compare them with eager
 * steps of their shape. src/tracebuf.c's: an op is recorded into it by
 * naming it (enum atl_tbuf_into); the step ends and the capture's end reach
 * it through this. */
struct tbuf *atl_tbuf_capture(void);

static inline void atl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

static inline void atl_spin_lock(int *busy)
{
    while (__atomic_exchange_n(busy, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(busy, __ATOMIC_RELAXED))
            atl_cpu_relax();
}

static inline void atl_spin_unlock(int *busy)
{
    __atomic_store_n(busy, 0, __ATOMIC_RELEASE);
}

static inline void atl_tbuf_lock(struct tbuf *b)
{
    atl_spin_lock(&b->busy);
}

static inline void atl_tbuf_unlock(struct tbuf *b)
{
    atl_spin_unlock(&b->busy);
}

/* A program that never synchronises (ATLAS_STEP=sync) would grow one step
 * without bound: past this many ops on one thread (512 MiB of records) the
 * rest of the step is dropped, and the step end says so. */
#define ATL_TBUF_MAX_OPS (8u << 20)

/* At init: ATLAS_TRACE_MAX_MB in bytes. */
void atl_tbuf_init(size_t max_bytes);
/* The calling thread's buffer (made, or an exited thread's taken over, on
 * its first op: atl_tbuf_new); NULL when out of memory. */
struct tbuf *atl_tbuf_new(void);
static inline struct tbuf *atl_tbuf_get(void)
{
    struct tbuf *b = atl_thr.trace_buf;
    return __builtin_expect(b != NULL, 1) ? b : atl_tbuf_new();
}
/* atl_tbuf_lock for the step end; at exit it gives up at the exit's
 * deadline (the buffer's thread may be stopped while recording) and
 * returns -1. */
int atl_tbuf_lock_step(struct tbuf *b);
/* Under b's lock: b's arrays changed; the budget counts them anew. */
void atl_tbuf_held_note(struct tbuf *b);
/* Under the step ends' lock: what the trace keeps between steps, which the
 * budget counts with the buffers. */
void atl_tbuf_set_kept(size_t bytes);
/* Past ATLAS_TRACE_MAX_MB (the records of unloaded kernels count, which ops in the buffers
 * keep waiting): every thread's ops are dropped and the rest of their steps not recorded,
 * said once. For a module unload, which adds records to the wait without a buffer growing. */
void atl_tbuf_budget_check(void);
/* Steps recorded whole after one that mostly differed from its reference:
 * the memory is not saved then (the diff holds both), and comparing costs
 * (a caching allocator's loop, whose every op changes: 4% more
 * instructions a step). */
#define ATL_SPARSE_SKIP 16

/* Under b's lock, against a reference: the window compared, b's ops in
 * ops[] are then the ones that differ (nrec == ndiff). */
void atl_tbuf_compare(struct tbuf *b);
static inline void atl_tbuf_flush(struct tbuf *b)
{
    if (b->rops && b->nrec != b->ndiff)
        atl_tbuf_compare(b);
}
/* Under b's lock: b back in full mode, its ops so far written out whole
 * (the reference's where b matched them). Returns -1 when out of memory (b's
 * ops are dropped and b->oom set). Nothing to do in full mode. */
int atl_tbuf_materialize(struct tbuf *b);
/* Under b's lock, flushed: b's op i of the step so far, kept or the reference's. */
const struct atl_op *atl_tbuf_op(const struct tbuf *b, size_t i);
/* Under b's lock: b holds no ops (the step's are taken or dropped). */
static inline void atl_tbuf_empty(struct tbuf *b)
{
    __atomic_store_n(&b->nops, 0, __ATOMIC_RELAXED);
    b->nrec = 0, b->nbytes = 0;
    b->ndiff = 0, b->dbytes = 0, b->vgap = 0;
}
/* Which buffer an op is recorded into: the calling thread's, or the
 * capture buffer. */
enum atl_tbuf_into { ATL_TBUF_OWN, ATL_TBUF_CAPTURE };
/* Records an op without parameter bytes into buffer `into`. */
void atl_tbuf_record(enum atl_tbuf_into into, const struct atl_op *o);
/* Records a launch of kernel k (its view) into buffer `into`: the record
 * written in place, the parameter bytes gathered from l->params, or copied
 * from `packed` (k->total bytes), straight after the last op's. */
void atl_tbuf_record_launch(enum atl_tbuf_into into, const struct atl_launch *l,
                            const struct atl_kfn *k, const void *packed);

#endif
