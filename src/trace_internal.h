/*
 * The step trace's parts, shared by its files (nothing outside the feature
 * includes this):
 *   src/trace.c      events and lifecycle: what each event records, the step
 *                    boundaries of sync and capture modes, init and exit
 *   src/tracebuf.c   per-thread buffers and the memory budget: where a
 *                    thread's ops go while its step is under way
 *   src/tracestep.c  steps and step ends: harvesting the buffers, ordering,
 *                    pointer names, the diff with the previous step of a kind,
 *                    the JSON lines and the Chrome trace
 *   src/nvtx.c       NVTX ranges as steps (ATLAS_STEP=nvtx:NAME)
 */
#ifndef ATL_TRACE_INTERNAL_H
#define ATL_TRACE_INTERNAL_H

#include "events.h"
#include "step.h"
#include "thread.h"

#include <stddef.h>
#include <stdint.h>

/* ---- src/trace.c --------------------------------------------------------------- */

/* ATLAS_STEP: what ends a step. */
enum atl_trace_mode { ATL_MODE_SYNC, ATL_MODE_CAPTURE, ATL_MODE_NVTX, ATL_MODE_API };
extern enum atl_trace_mode atl_trace_mode; /* set once, at init */
/* Threads with a step open (nvtx and api modes; sync mode: always 1), so
 * that the ops of threads without one are recorded meanwhile (lent to the
 * step that ends next). 0 after the exit summary. */
extern int atl_trace_recording;
/* The exit summary is out: later markers are ignored. */
extern int atl_trace_done;

/* The step tracer's cold per-thread state: about 130 bytes that only a
 * thread ending or naming steps touches, in ordinary (dynamic) TLS. What
 * every traced launch reads (its buffer) is in the library's one per-thread
 * struct (src/thread.h, initial-exec TLS): that block is taken from every
 * thread of the program, traced or not, out of the small surplus glibc
 * keeps for libraries loaded later (NVTX injection dlopens us), so it holds
 * only the hot fields. Defined in src/trace.c (the one __thread of the
 * feature: tests/harness/test_layers.sh). */
struct atl_trace_tls {
    /* the thread's name, asked again every 256th step end (src/tracestep.c) */
    char label[24];
    unsigned label_age;
    /* NVTX and api steps: this thread's open step, whether one is open and
     * when it began (the Chrome export) */
    char step[64];
    int in_step;
    uint64_t begin_ns;
    /* NVTX: the push depth, and the depth at which our range began (0: none) */
    int nvtx_depth, nvtx_step_depth;
};
extern __thread struct atl_trace_tls atl_trace_tt;

/* ---- src/tracebuf.c: per-thread buffers ----------------------------------------- */

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

/* Every thread's buffer: appended at the tail (a release store), never
 * removed, so it is walked without a lock. */
extern struct tbuf *atl_tbuf_list;
/* The ops captured into CUDA graphs in sync, nvtx and api modes, from every
 * thread (not in the list: no step takes them); a capture's end takes them
 * (atl_tstep_captured) to compare them with eager steps of their shape. */
extern struct tbuf atl_tbuf_capture;

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
/* Records an op without parameter bytes into buffer `into` (NULL: the
 * calling thread's). */
void atl_tbuf_record(struct tbuf *into, const struct atl_op *o);
/* Records a launch of kernel k (its view) into `into` (NULL: the calling
 * thread's buffer): the record written in place, the parameter bytes
 * gathered from l->params, or copied from `packed` (k->total bytes),
 * straight after the last op's. */
void atl_tbuf_record_launch(struct tbuf *into, const struct atl_launch *l, const struct atl_kfn *k,
                            const void *packed);

/* ---- src/tracestep.c: steps and step ends --------------------------------------- */

/* What a step end takes from the threads' buffers (see docs/trace.md, "Steps
 * and threads"). */
enum atl_take {
    ATL_TAKE_NONE,   /* drop every thread's ops (a capture begins) */
    ATL_TAKE_STREAM, /* the ender's ops, and the lent ops on the step's stream */
    ATL_TAKE_LENT,   /* the ender's ops, and every lent op */
    ATL_TAKE_ALL,    /* every op of every thread (capture mode, the exit) */
};

/* At init (after the mode is known): the ignore list, the JSON lines and
 * the Chrome trace. */
void atl_tstep_init(void);
/* Ends a step on the calling thread (its buffer `me`, NULL when it has
 * none): takes what `take` says, keys the step by the thread and `stream`
 * (0: the one stream of its ops, if they share one) and compares it with the
 * previous step of its kind. `begin` is the Chrome export's start of the
 * step. */
void atl_tstep_end(const char *name, struct tbuf *me, enum atl_take take, uint64_t stream,
                   uint64_t begin);
/* Drops every thread's ops (a capture begins: nothing before it is part of
 * it). */
void atl_tstep_drop(void);
/* Sync, nvtx and api modes: the last open stream capture ended; its ops
 * (atl_tbuf_capture) are compared with the latest eager step of their shape,
 * and kept for the eager steps to come (eager against captured). */
void atl_tstep_captured(void);
/* NVTX and api steps: the calling thread opens a step named `name` (one
 * already open ends first), or closes its open step. */
void atl_tstep_open(const char *name);
void atl_tstep_close(void);
/* At exit, once the last step has ended: `hints` (the mode's reasons for
 * finding no step), the summary, and the files closed. */
void atl_tstep_exit(void (*hints)(void));

#endif
