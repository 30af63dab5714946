/*
 * The step trace's JSON lines: every key of both versions, and the scanning
 * its two readers share. One spelling for the writer (src/tracejson.c and
 * its primitives, src/jsonw.h), atlas-diff's full reader (src/tracejson.c)
 * and the fast pass of atlas-diff --ranks (tools/diff-ranks.c), which hashes
 * lines as written: a key spelled again in a second reader went stale
 * silently there, since --ranks parses a step in full whenever its hashes
 * disagree and so still answered right, only slower (tests/unit/
 * test_diffranks.c now fails instead). docs/trace.md ("JSON lines") says
 * what each field means to a reader of the file.
 *
 * "Per process" below: the value differs between two processes (ranks of
 * one job, or two runs) that enqueue the same op. --ranks leaves those
 * values out of a step's hash and clears the streams and raw addresses of a
 * step it parses in full; the step diff compares pointers by the allocation
 * their notes name.
 *
 * Keys are bare names (what a reader compares after the quotes);
 * ATL_TF_KEY(k) is the key as it stands before its value. String literals,
 * so that the writer's and the fast readers' fixed runs of text
 * ("{\"s\":" and the like) are still one literal, their length known at
 * compile time.
 */
#ifndef ATL_TRACEFORMAT_H
#define ATL_TRACEFORMAT_H

#include <stddef.h>
#include <string.h>

#define ATL_TF_KEY(k) "\"" k "\":"
/* The key as a reader's message names it: "k" */
#define ATL_TF_QUOTED(k) "\"" k "\""

/* ---- the header line (version 2): {"format":"atlastrace-steps","version":2} ---- */
#define ATL_TF_FORMAT "format"   /* the format's name (tracejson.h: ATL_TRACE_FORMAT) */
#define ATL_TF_VERSION "version" /* its version (ATL_TRACE_VERSION) */

/* ---- a step's end record, the same in both versions ------------------------------ */
/* {"step":N,"name":"...","thread":"main","stream":"0x..","end":true,"ops":K} */
/* per process: the step's number in its run (version 1: on every op line too) */
#define ATL_TF_STEP "step"
#define ATL_TF_NAME "name" /* the step's name (version 1: on every op line too) */
/* the thread that ended the step: "main", its pthread name or "#N" (alike
 * in the ranks of one script) */
#define ATL_TF_THREAD "thread"
/* per process: the step's stream handle (version 1: each op's too) */
#define ATL_TF_STREAM "stream"
#define ATL_TF_END "end" /* true: this line ends the step */
#define ATL_TF_OPS "ops" /* the step's op count (declarations not counted) */

/* ---- version 2: declarations and op lines, short keys ----------------------------- */
#define ATL_TF_V2_STEP "s"    /* per process: the step's number, as "step" */
#define ATL_TF_V2_OP "o"      /* the op's index in its step, from 0 */
#define ATL_TF_V2_STREAM "st" /* per process: the op's stream, written when it changes */
/* a kernel's id in its step, from 1: a declaration's (a line without "o"),
 * or the kernel a launch names */
#define ATL_TF_V2_KERNEL "k"
#define ATL_TF_V2_GRID "g"     /* grid [x,y,z], left out when 1,1,1 */
#define ATL_TF_V2_BLOCK "b"    /* block [x,y,z], left out when 1,1,1 */
#define ATL_TF_V2_SHMEM "sh"   /* dynamic shared memory, left out when 0 */
#define ATL_TF_V2_CLUSTER "cl" /* cluster [x,y,z], left out when not given */
/* the parameter block in hex; per process in the 8-byte words that "a"
 * names (pointers, and host addresses) */
#define ATL_TF_V2_PBYTES "p"
/* the pointer notes, [at,alloc,off] or [at] (a host address) in `at` order:
 * their allocation names compare across processes, the words they name not */
#define ATL_TF_V2_NOTES "a"

/* ---- a kernel (a version 2 declaration, or a version 1 launch line) --------------- */
#define ATL_TF_KERNEL "kernel" /* the mangled name */
#define ATL_TF_EXACT "exact"   /* 0 when the layout was not known */
/* the layout: version 2, [[off,size],...]; version 1, a record per
 * parameter with its bytes (below) */
#define ATL_TF_PARAMS "params"
/* parameters holding uninitialised bytes: version 2, [i,...]; version 1, 1
 * on the parameter's record */
#define ATL_TF_RESIDUE "residue"

/* ---- version 1's op lines: every field whole, long keys --------------------------- */
#define ATL_TF_OP "op"           /* the op's index in its step, from 0 */
#define ATL_TF_KIND "kind"       /* "launch" (version 1 only), "memset", "copy", "graph" */
#define ATL_TF_GRID "grid"       /* a launch's grid [x,y,z] */
#define ATL_TF_BLOCK "block"     /* its block [x,y,z] */
#define ATL_TF_CLUSTER "cluster" /* its cluster [x,y,z], 0,0,0 when not given */
#define ATL_TF_SHMEM "shmem"     /* its dynamic shared memory */
/* A parameter's record in "params": {"i":0,"off":0,"size":8,"hex":"...",...} */
#define ATL_TF_PARAM_INDEX "i"   /* its index, from 0 */
#define ATL_TF_PARAM_OFF "off"   /* its byte offset in the block */
#define ATL_TF_PARAM_SIZE "size" /* its size in bytes */
/* its bytes in hex; per process in the 8-byte words that its
 * "alloc"/"allocW" name (pointers) */
#define ATL_TF_PARAM_HEX "hex"
/* 1: the (8-byte) parameter held an address of the process's host memory
 * (its bytes are per process) */
#define ATL_TF_PARAM_HOST "host"
/* "alloc#N+0xOFF": the allocation a pointer names, compared across
 * processes. On a parameter's record "alloc" names its first word and
 * "allocW" the word W bytes in (a larger by-value parameter); on a memset,
 * its address. */
#define ATL_TF_ALLOC "alloc"
#define ATL_TF_DSTALLOC "dstalloc" /* a copy's destination, as "alloc" */
#define ATL_TF_SRCALLOC "srcalloc" /* a copy's source, as "alloc" */

/* ---- memsets, copies and graphs (both versions) ----------------------------------- */
#define ATL_TF_PTR "ptr"       /* per process: a memset's raw device address */
#define ATL_TF_VALUE "value"   /* a memset's value */
#define ATL_TF_ELEM "elem"     /* its element size: 1, 2 or 4 */
#define ATL_TF_COUNT "count"   /* elements (2D: a row's) */
#define ATL_TF_PITCH "pitch"   /* a 2D memset's row pitch; 0 in 1D */
#define ATL_TF_HEIGHT "height" /* a 2D memset's or a copy's rows */
#define ATL_TF_DIR "dir"       /* a copy's direction: HtoD, DtoH, DtoD, HtoH, other */
#define ATL_TF_DST "dst"       /* per process: a copy's raw destination address */
#define ATL_TF_SRC "src"       /* per process: a copy's raw source address */
#define ATL_TF_BYTES "bytes"   /* a copy's width x height x depth (read and ignored) */
#define ATL_TF_WIDTH "width"   /* a copy's row, in bytes */
#define ATL_TF_DEPTH "depth"   /* a copy's slices */
/* a copy's host ends that are pageable memory: 1 the destination, 2 the source (left out
 * when neither: pinned, or no host end) */
#define ATL_TF_PAGEABLE "pageable"
/* per process: a graph launch's executable graph handle (left out between
 * two runs or ranks; within one run a step that launches another graph is
 * told) */
#define ATL_TF_EXEC "exec"

/* ---- scanning a line as written ------------------------------------------------------ */

/* q (in a line that ends at e) goes on with the string literal s. How the
 * fast readers follow the writer's fixed layout without a key loop. */
#define ATL_TF_AT(q, e, s)                                                                         \
    ((size_t)((e) - (q)) >= sizeof(s) - 1 && memcmp((q), "" s, sizeof(s) - 1) == 0)

/* The same, q moved past s when it goes on with it: 1; else 0, q unmoved. */
#define ATL_TF_SKIP(q, e, s) (ATL_TF_AT(q, e, s) ? ((q) += sizeof(s) - 1, 1) : 0)

/* The key found at k (kl bytes, as atl_tf_next_key gives it) is the literal key. */
#define ATL_TF_IS(k, kl, key) ((kl) == sizeof(key) - 1 && memcmp((k), "" key, sizeof(key) - 1) == 0)

/* The closing quote of the JSON string that starts at p (after its opening
 * quote), or e: a quote after an odd run of backslashes is escaped. */
static inline const char *atl_tf_str_end(const char *p, const char *e)
{
    for (const char *s = p;;) {
        const char *q = memchr(s, '"', (size_t)(e - s));
        if (!q)
            return e;
        size_t bs = 0;
        while (q - bs > p && q[-1 - (ptrdiff_t)bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            return q;
        s = q + 1;
    }
}

/* The next "key": at or after s in a line that ends at e, string values
 * stepped over: its value's first byte, the key in *k (kl bytes, escapes
 * kept); NULL when none is left. */
static inline const char *atl_tf_next_key(const char *s, const char *e, const char **k, size_t *kl)
{
    while ((s = memchr(s, '"', (size_t)(e - s)))) {
        const char *ks = s + 1, *ke = atl_tf_str_end(ks, e);
        if (ke >= e)
            return NULL;
        if (ke + 1 < e && ke[1] == ':') {
            *k = ks, *kl = (size_t)(ke - ks);
            return ke + 2;
        }
        s = ke + 1; /* a string value */
    }
    return NULL;
}

#endif
