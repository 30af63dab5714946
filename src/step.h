/*
 * The step model: one recorded step (the ops it enqueued, in per-stream
 * order, their parameter bytes and the pointers the ledger resolved).
 *
 * It knows nothing of hooks or the driver: the live tracer (src/tracestep.c)
 * and the JSON-lines reader (src/tracejson.c) both build steps here, and the
 * diff (src/tracediff.c) compares them.
 */
#ifndef ATL_STEP_H
#define ATL_STEP_H

#include <stddef.h>
#include <stdint.h>

enum atl_op_kind { ATL_OP_LAUNCH = 1, ATL_OP_MEMSET, ATL_OP_COPY, ATL_OP_GRAPH };

/* A kernel as the diff sees it: its names and its parameter layout. Live,
 * one per kernel record (src/kernels.h: the record's view, made and freed
 * there); offline, one per name+layout (atl_kfn_intern). */
struct atl_kfn {
    const char *mangled; /* owned; never NULL ("kernel@0x..." when unknown) */
    const char *pretty;  /* demangled, owned; live, filled when first asked (atl_kfn_pretty) */
    const char *base;    /* the short name ("scale"), owned; filled when first asked by the
                          * diff (src/tracediff.c), or NULL */
    unsigned nparams;
    unsigned total;       /* bytes of the parameter block */
    int exact;            /* layout came from the driver (or the trace file) */
    const uint32_t *off;  /* nparams offsets */
    const uint32_t *size; /* nparams sizes */
    int gapless;          /* the parameters cover [0, total) without padding */
    const void *plan;     /* the live recorder's copy plan (struct atl_kslot[nparams],
                           * src/kernels.h), or NULL */
    /* The offsets of the pointer-sized words that may hold a pointer (see
     * atl_op_word_next), in parameter order: nwords of them, from
     * atl_kfn_words; NULL (out of memory, or a record made by hand): found
     * from off and size each time. */
    const uint32_t *words;
    unsigned nwords;
    /* bit i: by-value parameter i (i < 64) was seen holding host addresses
     * among its changing words: uninitialised bytes (learned by the diff,
     * never forgotten; written to the JSON lines as "residue") */
    uint64_t residue;
    /* the kernel's part of an op's shape (its mangled name, parameter count
     * and bytes, hashed): 0 until first asked (src/tracediff.c) */
    uint64_t shapeh;
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
    uint32_t flags; /* copy: ATL_COPY_*_PAGEABLE */
};
/* A copy's host end is pageable memory (the driver does not know the address): no stream
 * capture takes such a copy, so no graph freezes its host address. */
enum { ATL_COPY_DST_PAGEABLE = 1, ATL_COPY_SRC_PAGEABLE = 2 };
_Static_assert(sizeof(struct atl_op) == 64, "an op record is one cache line");

enum atl_dir { ATL_DIR_HTOD = 1, ATL_DIR_DTOH, ATL_DIR_DTOD, ATL_DIR_HTOH, ATL_DIR_OTHER };
const char *atl_dir_name(int dir);
/* "launch", "memset", "copy", "graph" */
const char *atl_op_kind_name(int kind);
int atl_dir_parse(const char *s);

/* A pointer resolved through the allocation ledger: an 8-byte parameter,
 * or an 8-byte word inside a larger one (PyTorch passes its tensors'
 * pointers in a by-value array). What the notes functions below give; a
 * step stores them as spans (the live tracer) or as a list of these (read
 * from a file). */
struct atl_ann {
    uint32_t op;
    uint32_t at;  /* byte offset of the word in the op's parameter block; memsets and
                   * copies: ATL_ANN_DST (the memset's pointer, the destination) or
                   * ATL_ANN_SRC */
    uint64_t seq; /* alloc#seq */
    uint64_t off;
};

/* An allocation that pointers of a step fell in when the ledger resolved
 * them: [lo, hi), alloc#seq. A million-op step's pointers name a few
 * allocations, so a step keeps these instead of a note per pointer (24
 * bytes each: 96 of an 8-parameter op's 216 bytes). */
struct atl_span {
    uint64_t lo, hi, seq;
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
    /* The pointer notes, in one of two forms (see atl_step_note):
     * - spans (the live tracer, resolve_pointers): the allocations that the
     *   step's pointer-sized words fell in, sorted by lo, disjoint. A word
     *   is noted when it is one resolve_pointers looks at and its value lies
     *   in a span: the ledger named exactly those, so nothing per pointer is
     *   kept;
     * - ann (a step read from a file, or built by a test): one note per
     *   word, sorted by (op, at). Used whenever there is one. */
    struct atl_ann *ann;
    size_t nann, capann;
    struct atl_span *spans;
    size_t nspans, capspans;
    /* per-op hashes, computed once on the first diff that needs them (a
     * cache: the step is compared against its predecessor and successor) */
    uint64_t *shape, *full;
    /* The live tracer, a step that later steps were written over (src/tracestep.c,
     * sparse_step): the hashes of its ops at places hidx (nh of them), those of the
     * last step written over it, for its diff with the next (NULL: none). */
    uint32_t *hidx;
    uint64_t *hshape, *hfull;
    size_t nh;
    /* The step's shape (atl_step_shape: its ops' kinds and kernels, not
     * their values), 0 until first asked. */
    uint64_t shapesum;
    /* The live tracer: the allocation ledger's next number when the step
     * ended (alloc#N with N >= seqmark were made after it), and its
     * generation when the step's pointers were resolved; 0 offline. */
    uint64_t seqmark, ledger_gen;
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
/* The note at (op, at): fills *out and returns 1, or returns 0 (no note). */
int atl_step_note(const struct atl_step *s, uint32_t op, uint32_t at, struct atl_ann *out);
/* The same, as a pointer: into the step's list, or (spans) to one of a few
 * slots of the calling thread, valid until its fourth next call. */
const struct atl_ann *atl_step_ann(const struct atl_step *s, uint32_t op, uint32_t at);

/* The notes of a step, op by op, in (op, at) order: one walk, no search
 * per op when the ops are visited in order.
 *     struct atl_notes it; atl_notes_init(&it, s);
 *     for each op i: atl_notes_op(&it, i); while (atl_notes_next(&it, &an)) ... */
struct atl_notes {
    const struct atl_step *s;
    uint32_t op;
    size_t ann;           /* ann: the next note */
    unsigned param, wd;   /* spans: the next word to look at */
    struct atl_span last; /* spans: the last one found (consecutive pointers share one) */
    /* atl_notes_at: the op's notes fetched a batch at a time */
    struct atl_ann batch[16];
    unsigned nbatch, xbatch;
    int more;
};
void atl_notes_init(struct atl_notes *it, const struct atl_step *s);
void atl_notes_op(struct atl_notes *it, uint32_t op);
int atl_notes_next(struct atl_notes *it, struct atl_ann *out);
/* Up to max of the op's next notes into out (one call per op where
 * atl_notes_next is one per note); returns how many. */
size_t atl_notes_get(struct atl_notes *it, struct atl_ann *out, size_t max);
/* The op's note at `at`, or NULL, for `at` asked in increasing order (a
 * writer going through the words of an op); not mixed with the two above. */
const struct atl_ann *atl_notes_at(struct atl_notes *it, uint32_t at);

/* The span holding v, or NULL (a binary search). */
const struct atl_span *atl_step_span(const struct atl_step *s, uint64_t v);
/* Adds the allocation [lo, hi) alloc#seq to the step's spans (any order;
 * atl_step_spans_done sorts them). Returns 0, -1 when out of memory. */
int atl_step_add_span(struct atl_step *s, uint64_t lo, uint64_t hi, uint64_t seq);
void atl_step_spans_done(struct atl_step *s);
/* The pointer-sized words of op o that may hold a pointer (what the ledger
 * is asked about, so what spans notes cover): 8-byte-aligned words of
 * parameters of 8 bytes or more, a memset's pointer, a copy's device
 * addresses; values below 64 KiB are no pointers. Walked from *param and
 * *wd (both 0 at first): returns 1 with the word's place in *at and value
 * in *v, 0 at the end. */
int atl_op_word_next(const struct atl_step *s, const struct atl_op *o, unsigned *param,
                     unsigned *wd, uint32_t *at, uint64_t *v);

/* k's words (above), malloc'd, into k->words and k->nwords; left NULL when
 * out of memory. */
void atl_kfn_words(struct atl_kfn *k);

/* k's name for people: k->pretty, demangled from k->mangled the first time
 * it is asked (on the asking thread; two threads that race keep one) and
 * kept with k. */
const char *atl_kfn_pretty(const struct atl_kfn *k);

/* A kernel record for offline use: interned by name and layout. */
const struct atl_kfn *atl_kfn_intern(const char *mangled, const char *pretty, unsigned n,
                                     const uint32_t *off, const uint32_t *size);

#endif
