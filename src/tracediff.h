/*
 * Steps and step diffs: the model of one recorded step (the ops it enqueued,
 * in per-stream order), the diff of two steps, and the JSON-lines form.
 *
 * This module knows nothing of hooks or the driver: the live tracer
 * (src/trace.c) and the offline tool (tools/atlas-diff.c) both build steps
 * and hand them here, so both print the same report from the same code.
 */
#ifndef ATL_TRACEDIFF_H
#define ATL_TRACEDIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum atl_op_kind { ATL_OP_LAUNCH = 1, ATL_OP_MEMSET, ATL_OP_COPY, ATL_OP_GRAPH };

/* A kernel as the diff sees it: its names and its parameter layout. One per
 * CUfunction/CUkernel live (never freed), one per name+layout offline. */
struct atl_kfn {
    void *handle;
    const char *mangled; /* owned; never NULL ("kernel@0x..." when unknown) */
    const char *pretty;  /* demangled, owned */
    unsigned nparams;
    unsigned total;       /* bytes of the parameter block */
    int exact;            /* layout came from the driver (or the trace file) */
    const uint32_t *off;  /* nparams offsets */
    const uint32_t *size; /* nparams sizes */
    int gapless;          /* the parameters cover [0, total) without padding */
    const void *plan;     /* the live recorder's copy plan (trace.c), or NULL */
    unsigned long gen;    /* the live recorder: atl_unload_gen when last checked */
    /* bit i: by-value parameter i (i < 64) was seen holding host addresses
     * among its changing words: uninitialised bytes (learned by the diff,
     * never forgotten; written to the JSON lines as "residue") */
    uint64_t residue;
};

/* One op: 64 bytes, plus the kernel's parameter bytes kept elsewhere. The
 * union keeps the record at one cache line whatever the kind. */
struct atl_op {
    uint8_t kind;       /* enum atl_op_kind */
    uint8_t sub;        /* memset: element size; copy: direction (atl_dir) */
    uint8_t cluster[3]; /* launch: cluster dims (0 when not given) */
    uint8_t pad[3];
    uint64_t stream;
    union {
        struct {
            const struct atl_kfn *kfn;
            /* recording: a pointer to the bytes; in a step: their offset in
             * step->bytes (see atl_op_bytes) */
            uintptr_t bytes;
            uint32_t grid[3], block[3];
        } k;
        struct {
            uint64_t ptr, count, pitch, height;
        } m;
        struct {
            uint64_t dst, src, w, h, d; /* w bytes x h rows x d slices */
        } c;
        struct {
            uint64_t exec;
        } g;
    } u;
    uint32_t shmem; /* launch: dynamic shared memory; memset: value */
    uint32_t spare;
};
_Static_assert(sizeof(struct atl_op) == 64, "an op record is one cache line");

enum atl_dir { ATL_DIR_HTOD = 1, ATL_DIR_DTOH, ATL_DIR_DTOD, ATL_DIR_HTOH, ATL_DIR_OTHER };
const char *atl_dir_name(int dir);
int atl_dir_parse(const char *s);

/* A pointer resolved through the allocation ledger: an 8-byte parameter,
 * or an 8-byte word inside a larger one (PyTorch passes its tensors'
 * pointers in a by-value array). */
struct atl_ann {
    uint32_t op;
    uint32_t at;  /* byte offset of the word in the op's parameter block; memsets and
                   * copies: ATL_ANN_DST (the memset's pointer, the destination) or
                   * ATL_ANN_SRC */
    uint64_t seq; /* alloc#seq */
    uint64_t off;
};

/* One recorded step. ops and bytes are owned (malloc) and freed by
 * atl_step_free. */
struct atl_step {
    char name[64];
    /* Who the step belongs to (see docs/trace.md, "Steps and threads"): the
     * thread that ended it ("main", its pthread name, or "#N": the N-th
     * thread to trace) and the stream it is keyed by (the synchronised or
     * capturing stream, or the one stream of all its ops; 0: several). Steps
     * are compared only with steps of the same name, thread and stream. */
    char thread[24];
    uint64_t stream;
    uint64_t index; /* step number in the run (from 1) */
    uint64_t nth;   /* occurrence of this name, thread and stream (from 1) */
    struct atl_op *ops;
    size_t nops, capops;
    uint8_t *bytes;
    size_t nbytes, capbytes;
    struct atl_ann *ann; /* sorted by (op, param) */
    size_t nann, capann;
    /* per-op hashes, computed once on the first diff that needs them (a
     * cache: the step is compared against its predecessor and successor) */
    uint64_t *shape, *full;
};

enum { ATL_ANN_DST = 0, ATL_ANN_SRC = 8 };
/* The seq of a note that says "host memory", not an allocation: read from the
 * JSON lines ("host":1 on an 8-byte parameter the recording process found
 * holding an address of its own host memory). Two processes never share
 * host addresses, so two runs compare such parameters as equal (a cuBLASLt
 * kernel's host-side alpha pointer, on the H200); within one run they are
 * compared by value. */
#define ATL_ANN_HOST UINT64_MAX

/* Makes room for `need` elements of `elem` bytes in *p (capacity *cap, in
 * elements): doubling from *cap, or from `first` when empty. Returns 0, or
 * -1 (nothing changed) when out of memory. */
int atl_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first);

void atl_step_init(struct atl_step *s, const char *name);
/* Steps a and b are of one kind (name, thread and stream): the live tracer
 * and atlas-diff compare only such. Across two runs (`cross`) stream handles
 * are addresses of different processes, so the stream is not compared. */
int atl_step_same_key(const struct atl_step *a, const struct atl_step *b, int cross);
void atl_step_free(struct atl_step *s);
/* Appends an op, copying its parameter bytes into the step. Returns 0, -1
 * when out of memory. */
int atl_step_push(struct atl_step *s, const struct atl_op *op);
/* Annotations must be added in (op, at) order. */
int atl_step_annotate(struct atl_step *s, uint32_t op, uint32_t at, uint64_t seq, uint64_t off);
static inline const uint8_t *atl_op_bytes(const struct atl_step *s, const struct atl_op *op)
{
    return s->bytes + op->u.k.bytes;
}
const struct atl_ann *atl_step_ann(const struct atl_step *s, uint32_t op, uint32_t at);

/* What to stay quiet about: kernel[:argN],... */
struct atl_ignore {
    char *spec; /* owned copy */
    struct {
        const char *kernel;
        int arg; /* -1: the whole kernel */
    } e[32];
    int n;
};
void atl_ignore_parse(struct atl_ignore *ig, const char *spec);
void atl_ignore_free(struct atl_ignore *ig);

/* Counts kept across a run for the exit summary. */
struct atl_diff_stats {
    uint64_t steps, compared, identical;
    struct {
        char what[160]; /* "kernel arg1" */
        uint64_t n;
    } top[64];
    int ntop;
    /* The frozen-value summary: per kernel parameter (or 8-byte word of a
     * larger one) that ever differed, the steps it changed in and what its
     * changes looked like. */
    struct atl_frozen {
        char what[160];       /* "add_step arg1", "blob arg1+0x40" */
        uint64_t n;           /* steps it changed in */
        uint64_t step;        /* the last of them (one change counted per step) */
        uint64_t first, v[2]; /* its first value; the first two it took */
        uint64_t last;        /* its latest value */
        int64_t delta;        /* the change, while every change was the same */
        uint8_t steady;       /* every change was `delta` */
        uint8_t many;         /* it took more than two values */
    } frozen[64];
    int nfrozen;
};

/* ATLAS_DIFF_POINTERS and ATLAS_DIFF_RESIDUE, in their table order (src/config.def) */
enum { ATL_PTRS_COLLAPSE, ATL_PTRS_ALL, ATL_PTRS_NONE };

struct atl_diff_opts {
    unsigned max_lines;   /* lines per step, then a count of the rest */
    const char *max_name; /* what sets max_lines, for the "not shown" hint (NULL: ATLAS_DIFF_MAX) */
    const struct atl_ignore *ignore;
    const char *replay; /* capture mode: say replay-safe (non-NULL) */
    int where;          /* name the step's thread and stream in its header (more than one
                         * thread or stream has steps) */
    int cross;          /* a and b come from two processes: host addresses of copies are
                         * not compared (they never match) */
    int pointers;       /* pointers that moved within their allocation: ATL_PTRS_* */
    int residue;        /* words of by-value parameters holding host-memory residue
                         * (uninitialised bytes): ATL_PTRS_* (collapse, all, none) */
    /* 1 when a value is an address of the process's own host memory
     * (src/hostmap.h); NULL offline, where only the "residue" marks of the
     * JSON lines say it */
    int (*host_addr)(uint64_t v);
    void (*line)(void *ctx, const char *text);
    void *ctx;
};

/* Diffs step b against step a (the previous step of the same name) and
 * prints the report through opts->line. Returns the number of differences
 * found (0: identical, nothing printed unless opts->replay). */
size_t atl_step_diff(const struct atl_step *a, const struct atl_step *b,
                     const struct atl_diff_opts *opts, struct atl_diff_stats *st);

/* The exit summary lines. */
void atl_diff_summary(const struct atl_diff_stats *st, void (*line)(void *, const char *),
                      void *ctx);

/* The hashes the diff aligns ops by (and atlas-diff --ranks groups ranks by). */
static inline uint64_t atl_hash_mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}
uint64_t atl_hash_bytes(uint64_t h, const void *p, size_t n);

/* JSON lines: one op per line. */
void atl_step_write_json(const struct atl_step *s, FILE *f);

/* Reads a JSON-lines trace: calls fn for each complete step, in file order.
 * Returns 0, or -1 with a message "line N: why" in err. A file cut short
 * after at least one whole step (a run killed mid-step: a torn last line,
 * an unfinished last step) is read up to its last whole step: 0, and err
 * says what was skipped (empty when nothing was). */
int atl_trace_read(FILE *f, int (*fn)(void *ctx, struct atl_step *s), void *ctx, char *err,
                   size_t errlen);

/* A kernel record for offline use: interned by name and layout. */
const struct atl_kfn *atl_kfn_intern(const char *mangled, const char *pretty, unsigned n,
                                     const uint32_t *off, const uint32_t *size);

#endif
