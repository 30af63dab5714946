/*
 * Suppression files (docs/reports.md): entries that match findings by kind,
 * kernel name, step name and frames, valgrind's format with atlastrace's
 * kinds. Parsing, matching and writing an entry; no I/O of its own, so the
 * library, atlas-diff and the unit tests share it.
 *
 *   {
 *      a name for the entry
 *      atlas:leak                  kind, a glob: overrun, write-after-free,
 *                                  leak, fault, race, step-diff (or atlas:*)
 *      kernel:fill*                optional: the kernel (name or mangled)
 *      step:train*                 optional: the step's name
 *      fun:rz_alloc                frames, from the first outside the CUDA
 *      src:redzone_prog.c:12*      libraries: fun: a function (name or
 *      obj:*libfoo.so              mangled), src: file:line (base name or
 *      ...                         path), obj: the object's path, ... any
 *   }                              number of frames (0 or more)
 *
 * Frame lines match the stack from its first frame; the stack may go on
 * past the last line. Patterns are fnmatch(3) globs. A line may start with
 * the log's "atlas[PID]: " prefix, so a --gen-suppressions entry copied from
 * a report works as it is.
 */
#ifndef ATL_SUPPRESS_H
#define ATL_SUPPRESS_H

#include "stack.h"

#include <stddef.h>
#include <stdint.h>

#define ATL_SUPP_FRAMES 24
/* entries a set keeps; past it, said once and the rest of that file left out */
#define ATL_SUPP_MAX 10000
#define ATL_SUPP_MAX_TEXT "10,000"

struct atl_supp {
    char *name;
    char *kind, *kernel, *step; /* globs; kernel and step NULL when not given */
    struct {
        char type; /* 'f' fun:, 's' src:, 'o' obj:, '.' ... */
        char *pat;
    } fr[ATL_SUPP_FRAMES];
    int nfr;
    const char *file; /* where it was read (owned by the set) */
    int line;         /* of its opening brace */
    uint64_t used;    /* findings it matched */
};

struct atl_supp_set {
    struct atl_supp *e;
    size_t n, cap;
    char **files;
    size_t nfiles;
};

/* What an entry is matched against. */
struct atl_supp_subject {
    const char *kind;
    const char *kernel, *kernel_mangled; /* NULL: none */
    const char *step;                    /* NULL: none */
    const struct atl_frame *fr;
    int nfr;
};

/* Adds the entries of `text` (a file's contents, `file` its name for
 * messages) to s. Each problem is handed to `err` as one finished line; the
 * entry at fault is left out, the rest are kept. Returns the number of
 * problems (-1 out of memory). */
int atl_supp_parse(struct atl_supp_set *s, const char *text, const char *file,
                   void (*err)(void *ctx, const char *line), void *ctx);
void atl_supp_free(struct atl_supp_set *s);

/* The first entry matching x, or NULL. */
struct atl_supp *atl_supp_match(const struct atl_supp_set *s, const struct atl_supp_subject *x);

/* An entry that matches x, a line at a time through `line` (without
 * newlines), at most `maxfr` frame lines. */
void atl_supp_write(const struct atl_supp_subject *x, int maxfr,
                    void (*line)(void *ctx, const char *text), void *ctx);

#endif
