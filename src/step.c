/*
 * The step model: one recorded step's ops, their parameter bytes and their
 * pointer notes, built by the live tracer (src/trace.c) and by the reader of
 * the JSON lines (src/tracejson.c) alike.
 */
#include "step.h"

#include "stack.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- steps ----------------------------------------------------------------- */

void atl_step_init(struct atl_step *s, const char *name)
{
    memset(s, 0, sizeof *s);
    /* not snprintf: a step ends at every synchronous copy */
    size_t n = name ? strnlen(name, sizeof s->name - 1) : 0;
    memcpy(s->name, name ? name : "", n);
}

int atl_step_same_key(const struct atl_step *a, const struct atl_step *b, int cross)
{
    return strcmp(a->name, b->name) == 0 && strcmp(a->thread, b->thread) == 0 &&
           (cross || a->stream == b->stream);
}

void atl_step_free(struct atl_step *s)
{
    free(s->ops);
    free(s->bytes);
    free(s->ann);
    free(s->shape);
    free(s->full);
    s->ops = NULL, s->bytes = NULL, s->ann = NULL, s->shape = NULL, s->full = NULL;
    s->nops = s->capops = s->nbytes = s->capbytes = s->nann = s->capann = 0;
}

int atl_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    return atl_grow(p, cap, need, elem, 64);
}

int atl_step_push(struct atl_step *s, const struct atl_op *op)
{
    free(s->shape), free(s->full); /* the hashes no longer cover every op */
    s->shape = s->full = NULL;
    if (grow((void **)&s->ops, &s->capops, s->nops + 1, sizeof *s->ops))
        return -1;
    struct atl_op *d = &s->ops[s->nops];
    *d = *op;
    if (op->kind == ATL_OP_LAUNCH) {
        unsigned n = op->u.k.kfn ? op->u.k.kfn->total : 0;
        if (grow((void **)&s->bytes, &s->capbytes, s->nbytes + n + 1, 1))
            return -1;
        if (n)
            memcpy(s->bytes + s->nbytes, (const void *)op->u.k.bytes, n);
        d->u.k.bytes = s->nbytes;
        s->nbytes += n;
    }
    s->nops++;
    return 0;
}

int atl_step_annotate(struct atl_step *s, uint32_t op, uint32_t at, uint64_t seq, uint64_t off)
{
    if (s->nann == s->capann && grow((void **)&s->ann, &s->capann, s->nann + 1, sizeof *s->ann))
        return -1;
    s->ann[s->nann++] = (struct atl_ann){.op = op, .at = at, .seq = seq, .off = off};
    return 0;
}

/* The first annotation at or after (op, at): they are appended in that
 * order, so a binary search works. */
static size_t ann_lower(const struct atl_step *s, uint32_t op, uint32_t at)
{
    size_t lo = 0, hi = s->nann;
    uint64_t key = (uint64_t)op << 32 | at;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint64_t k = (uint64_t)s->ann[mid].op << 32 | s->ann[mid].at;
        if (k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const struct atl_ann *atl_step_ann(const struct atl_step *s, uint32_t op, uint32_t at)
{
    size_t i = ann_lower(s, op, at);
    return i < s->nann && s->ann[i].op == op && s->ann[i].at == at ? &s->ann[i] : NULL;
}

const char *atl_dir_name(int dir)
{
    switch (dir) {
    case ATL_DIR_HTOD:
        return "HtoD";
    case ATL_DIR_DTOH:
        return "DtoH";
    case ATL_DIR_DTOD:
        return "DtoD";
    case ATL_DIR_HTOH:
        return "HtoH";
    default:
        return "other";
    }
}

int atl_dir_parse(const char *s)
{
    for (int d = ATL_DIR_HTOD; d <= ATL_DIR_OTHER; d++)
        if (strcmp(s, atl_dir_name(d)) == 0)
            return d;
    return -1;
}

const char *atl_op_kind_name(int k)
{
    switch (k) {
    case ATL_OP_LAUNCH:
        return "launch";
    case ATL_OP_MEMSET:
        return "memset";
    case ATL_OP_COPY:
        return "copy";
    case ATL_OP_GRAPH:
        return "graph";
    default:
        return "?";
    }
}

/* ---- kernels read from a file ------------------------------------------------ */

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct atl_kfn **interned;
static size_t ninterned, capinterned;

const struct atl_kfn *atl_kfn_intern(const char *mangled, const char *pretty, unsigned n,
                                     const uint32_t *off, const uint32_t *size)
{
    const struct atl_kfn *res = NULL;
    pthread_mutex_lock(&intern_lock);
    for (size_t i = 0; i < ninterned; i++) {
        struct atl_kfn *k = interned[i];
        if (k->nparams == n && strcmp(k->mangled, mangled) == 0 &&
            (n == 0 || (memcmp(k->off, off, n * 4) == 0 && memcmp(k->size, size, n * 4) == 0))) {
            res = k;
            goto out;
        }
    }
    if (grow((void **)&interned, &capinterned, ninterned + 1, sizeof *interned))
        goto out;
    struct atl_kfn *k = calloc(1, sizeof *k);
    uint32_t *o = calloc(n + 1, 4), *s = calloc(n + 1, 4);
    /* demangled only for a new kernel: a reader passes NULL for every line */
    char *mn = strdup(mangled), *pn = strdup(pretty ? pretty : atl_demangle(mangled));
    if (!k || !o || !s || !mn || !pn) {
        free(k), free(o), free(s), free(mn), free(pn);
        goto out;
    }
    unsigned total = 0;
    for (unsigned i = 0; i < n; i++) {
        o[i] = off[i], s[i] = size[i];
        if (off[i] + size[i] > total)
            total = off[i] + size[i];
    }
    *k = (struct atl_kfn){
        .mangled = mn, .pretty = pn, .nparams = n, .total = total, .exact = 1, .off = o, .size = s};
    interned[ninterned++] = k;
    res = k;
out:
    pthread_mutex_unlock(&intern_lock);
    return res;
}

/* ---- notes, for the file writers --------------------------------------------- */

int atl_step_note_next(const struct atl_step *s, uint32_t op, size_t *cur, struct atl_note *n)
{
    size_t i = *cur;
    while (i < s->nann && s->ann[i].op < op)
        i++;
    if (i >= s->nann || s->ann[i].op != op) {
        *cur = i;
        return 0;
    }
    *n = (struct atl_note){.at = s->ann[i].at, .seq = s->ann[i].seq, .off = s->ann[i].off};
    *cur = i + 1;
    return 1;
}
