/*
 * The library's per-thread state, in one place: one struct, one
 * initial-exec TLS block (an access is one load from the thread pointer, no
 * __tls_get_addr call), its fields grouped by the module that owns each. A
 * module touches only its own fields; this header owns the layout.
 *
 * Initial-exec TLS comes out of the process's static TLS block, of which
 * glibc leaves only a small surplus for libraries loaded later with dlopen
 * (NVTX injection loads us so): the struct stays small (asserted in
 * src/thread.c). Large per-thread scratch (a message buffer, a hex dump)
 * stays where it is used, in dynamic TLS.
 *
 * What other threads must read about a thread (the hang watchdog: is it
 * waiting, since when; the kernel records' reclaimer: may it still hold a
 * record) is in the thread's slot instead (struct atl_tslot, global
 * memory): taken at the thread's first need, given back when the thread
 * ends, and then reused, so that a program that starts thousands of
 * short-lived threads needs as many slots as it has threads at once.
 */
#ifndef ATL_THREAD_H
#define ATL_THREAD_H

#include <stdint.h>

struct tbuf;

struct atl_thread {
    /* src/engine.c: the re-entrancy guard (atl_enter): > 0 while this thread
     * is inside the library, when hooks pass straight through */
    int depth;
    /* src/kernels.c: how deep this thread is in atl_krec_pin */
    int krec_pins;
    /* src/capture.c: the thread-local stream captures this thread opened */
    int captures_local;
    /* src/thread.c: this thread's slot, index + 1; 0: none yet; -1: none to be had */
    int slot;
    /* src/stack.c: this thread's number in the unwind cache (0: not yet given) */
    uint64_t stack_id;
    /* src/tracebuf.c: the thread's recording buffer, read on every traced launch */
    struct tbuf *trace_buf;
    /* src/races_kern.c: from a launch's pre to its post, the watch it opened (index + 1; 0:
     * none), whether an op of this thread is being enqueued (its pre to its post), and the
     * count of ops begun when it began */
    int races_watch, races_enq;
    uint64_t races_starts;
};

/* Zero for every new thread. */
extern __thread struct atl_thread atl_thr __attribute__((tls_model("initial-exec")))
__attribute__((visibility("hidden")));

/* A thread's slot. Each field is written by its thread (atomically) and
 * read by others; all are zero when the slot is handed out, and zeroed
 * again when the thread ends (a thread cancelled, or one that exits, leaves
 * nothing behind that says it still waits or still holds a record). */
struct atl_tslot {
    uint64_t krec_pin;   /* src/kernels.c: the generation pinned at; 0: none */
    uint64_t hang_since; /* src/hang.c: the wait's start and its hook; 0: not waiting */
    uint64_t hang_said;  /* src/hang.c: the start of the wait last reported */
    int tid;             /* the thread's id (gettid) */
    int taken;
};

/* The slots, in chunks that are never freed (a reader may hold a pointer
 * into one): the slots ever made are a list that only grows, up to the most
 * threads that held one at once. */
#define ATL_TSLOT_CHUNK 64
#define ATL_TSLOT_CHUNKS 1024
extern struct atl_tslot *atl_tslot_chunks[ATL_TSLOT_CHUNKS] __attribute__((visibility("hidden")));

/* The slots ever made (taken or free): atl_tslot_at(i) for i below it.
 * Slots are never freed, so a pointer stays valid; a free slot is all zero. */
unsigned atl_tslot_count(void);
static inline struct atl_tslot *atl_tslot_at(unsigned i)
{
    return &atl_tslot_chunks[i / ATL_TSLOT_CHUNK][i % ATL_TSLOT_CHUNK];
}

/* This thread's slot, taken at the first call; NULL when none can be had
 * (out of memory, or more than 65,536 threads at once): the caller then does
 * without (said by each caller). Not async-signal-safe the first time. */
struct atl_tslot *atl_tslot_take(void);
static inline struct atl_tslot *atl_tslot_mine(void)
{
    int i = atl_thr.slot;
    return __builtin_expect(i > 0, 1) ? atl_tslot_at((unsigned)i - 1) : atl_tslot_take();
}

#endif
