/* Host call stacks: captured cheaply, symbolised only when reported. */
#ifndef ATL_STACK_H
#define ATL_STACK_H

#include <stddef.h>
#include <stdint.h>

#define ATL_STACK_MAX 24

struct atl_stack {
    int n;
    void *pc[ATL_STACK_MAX];
};

/* Captures the caller's stack, without the frames inside libatlastrace. */
void atl_stack_capture(struct atl_stack *s);

/* The same, at most `depth` frames (0: none, s->n = 0). Each frame costs an
 * unwind step (about 2,400 instructions through libgcc's unwinder), so the
 * allocation ledger takes ATLAS_STACK_DEPTH frames, not ATL_STACK_MAX. */
void atl_stack_capture_n(struct atl_stack *s, int depth);

/* How many captures reused a cached unwind, and how many unwound (and were
 * cached): for the exit report and the tests. */
void atl_stack_cache_counts(uint64_t *hits, uint64_t *misses);

/* A hash of the frames, for grouping reports by stack. */
uint64_t atl_stack_hash(const struct atl_stack *s);

/* One frame as "symbol+0xoff (libfoo.so)", demangled where possible. */
void atl_frame_format(void *pc, char *buf, size_t len);

/* The site a person looks for: the first frame outside the CUDA libraries
 * (libcuda, libcudart, libcublas, ...), formatted as above. */
void atl_stack_site(const struct atl_stack *s, char *buf, size_t len);

/* Whether a report skips frame pc: one of ours, or one of the CUDA libraries'.
 * The race detector names a launch by its caller when that is neither,
 * without unwinding. */
int atl_stack_skipped(void *pc);

/* Index of that frame in s (0 when every frame is plumbing). */
int atl_stack_site_index(const struct atl_stack *s);

/* Demangles a C++ (or CUDA kernel) name through the C++ runtime's
 * __cxa_demangle when the process has one; returns `name` itself otherwise.
 * The result is valid until the next call on this thread. */
const char *atl_demangle(const char *name);
/* The same in a new malloc'd string that the caller frees (NULL: not a mangled
 * name): for a thread that may exit, which would leave atl_demangle's last
 * result behind. */
char *atl_demangle_dup(const char *name);

#endif
