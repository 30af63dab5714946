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

/* Whether frame pc lies in one of the CUDA libraries (libcudart, libcublas, ...: the
 * dynamic loader's file name says it). */
int atl_stack_cuda_lib(void *pc);
/* The same for an object's path (as atl_stack_module gives it). */
int atl_stack_cuda_path(const char *path);

/* The loaded object pc lies in: 1, its path in path (len bytes; the program's own for the main
 * program) and its load bias in *base (base NULL: not asked); 0 when none holds it. A walk of
 * the loader's list (dl_iterate_phdr), never of a symbol table, unlike dladdr, which reads every
 * exported symbol of the object (2.6 M instructions in one of 100,000). */
int atl_stack_module(void *pc, char *path, size_t len, uintptr_t *base);

/* The loader's counts of objects loaded and unloaded, ever (glibc's dlpi_adds and dlpi_subs; 0
 * where the loader gives none): what was looked up in its list before may have moved when
 * either changed. Reads the list's first entry only. */
void atl_stack_loads(unsigned long long *adds, unsigned long long *subs);

/* Whether a report skips frame pc: one of ours, or one of the CUDA libraries'.
 * The race detector names a launch by its caller when that is neither,
 * without unwinding. */
int atl_stack_skipped(void *pc);

/* ---- report time only (src/frames.c) ---- */

/* What a report says of one frame. Symbolised only when reported: the
 * symbol from the dynamic loader (dladdr), and where the object carries debug
 * information, the source line through src/symbols.h. */
struct atl_frame {
    void *pc;
    char func[256];    /* demangled; "" unknown */
    char mangled[256]; /* as the symbol table has it, when that differs; else "" */
    char obj[256];     /* the object's path; "" unknown */
    char file[256];    /* the source file's path; "" unknown */
    int line;          /* its line; 0 unknown */
    unsigned long off; /* from func's start, else from the object's base */
};
void atl_frame_info(void *pc, struct atl_frame *f);

/* How many return addresses were named (each once, and kept until an object is unloaded), and
 * how many namings reused a kept one: for the tests. */
void atl_frame_counts(uint64_t *named, uint64_t *reused);

/* One frame as "func (file.c:137)" where the source line is known, else as
 * "symbol+0xoff (libfoo.so)", demangled where possible. */
void atl_frame_format(void *pc, char *buf, size_t len);
/* The same from a frame already looked up. */
void atl_frame_text(const struct atl_frame *f, char *buf, size_t len);
/* A call stack logged at `level` (src/log.h), a line a frame ("TAG:   #N frame"), frames
 * from..from+max-1 of s, numbered from 0 (src/frames.c: the log, the floor below, never calls
 * up into the frames). */
void atl_log_frames(int level, const char *tag, const struct atl_stack *s, int from, int max);

/* The site a person looks for: the first frame outside the CUDA libraries
 * (libcuda, libcudart, libcublas, ...) and outside CUDA's runtime linked into
 * the program (nvcc's default, -cudart static), formatted as above. */
void atl_stack_site(const struct atl_stack *s, char *buf, size_t len);

/* Index of that frame in s (0 when every frame is plumbing). Both read the
 * symbol table: at report time only. */
int atl_stack_site_index(const struct atl_stack *s);

/* ---- the demangler (src/stack.c) ---- */

/* Demangles a C++ (or CUDA kernel) name through the C++ runtime's
 * __cxa_demangle when the process has one; returns `name` itself otherwise.
 * The result is valid until the next call on this thread. */
const char *atl_demangle(const char *name);
/* The same in a new malloc'd string that the caller frees (NULL: not a mangled
 * name): for a thread that may exit, which would leave atl_demangle's last
 * result behind. */
char *atl_demangle_dup(const char *name);

#endif
