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
 */
#ifndef ATL_THREAD_H
#define ATL_THREAD_H

#include <stdint.h>

struct tbuf;

struct atl_thread {
    /* src/engine.c: the re-entrancy guard (atl_enter): > 0 while this thread
     * is inside the library, when hooks pass straight through */
    int depth;
    /* src/hang.c: this thread's watch slot, index + 1; 0: none yet; -1: none left */
    int hang_slot;
    /* src/capture.c: the thread-local stream captures this thread opened */
    int captures_local;
    /* src/stack.c: this thread's number in the unwind cache (0: not yet given) */
    uint64_t stack_id;
    /* src/tracebuf.c: the thread's recording buffer, read on every traced launch */
    struct tbuf *trace_buf;
};

/* Zero for every new thread. */
extern __thread struct atl_thread atl_thr __attribute__((tls_model("initial-exec")))
__attribute__((visibility("hidden")));

#endif
