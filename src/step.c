/*
 * The step model: one recorded step's ops, their parameter bytes and their
 * pointer notes, built by the live tracer (src/tracestep.c) and by the reader of
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
    free(s->spans);
    free(s->shape);
    free(s->full);
    free(s->hidx), free(s->hshape), free(s->hfull);
    s->hidx = NULL, s->hshape = s->hfull = NULL, s->nh = 0;
    s->ops = NULL, s->bytes = NULL, s->ann = NULL, s->spans = NULL, s->shape = NULL, s->full = NULL;
    s->nops = s->capops = s->nbytes = s->capbytes = s->nann = s->capann = 0;
    s->nspans = s->capspans = 0;
    s->shapesum = 0;
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
    s->shapesum = 0;
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

/* ---- notes held as spans ------------------------------------------------------ */

/* Parameter j of k holds words that may be pointers: 8 bytes or more, starting 8-aligned,
 * inside the parameter block. Its words are those at off, off + 8, ... up to its end. */
static inline int param_has_words(const struct atl_kfn *k, unsigned j)
{
    uint32_t off = k->off[j], size = k->size[j];
    return size >= 8 && off + size <= k->total && off % 8 == 0;
}

int atl_op_word_next(const struct atl_step *s, const struct atl_op *o, unsigned *param,
                     unsigned *wd, uint32_t *at, uint64_t *v)
{
    switch (o->kind) {
    case ATL_OP_MEMSET:
        if (*param == 0) {
            *param = 1;
            *at = ATL_ANN_DST, *v = o->u.m.ptr;
            if (*v >= 65536)
                return 1;
        }
        return 0;
    case ATL_OP_COPY:
        /* the device side(s) of the copy */
        if (*param == 0) {
            *param = 1;
            *at = ATL_ANN_DST, *v = o->u.c.dst;
            if (o->sub != ATL_DIR_DTOH && o->sub != ATL_DIR_HTOH && *v >= 65536)
                return 1;
        }
        if (*param == 1) {
            *param = 2;
            *at = ATL_ANN_SRC, *v = o->u.c.src;
            if (o->sub != ATL_DIR_HTOD && o->sub != ATL_DIR_HTOH && *v >= 65536)
                return 1;
        }
        return 0;
    case ATL_OP_LAUNCH:
        break;
    default:
        return 0;
    }
    const struct atl_kfn *k = o->u.k.kfn;
    if (!k)
        return 0;
    const uint8_t *p = atl_op_bytes(s, o);
    if (k->words) { /* *wd counts the words */
        while (*wd < k->nwords) {
            *at = k->words[(*wd)++];
            memcpy(v, p + *at, 8);
            if (*v >= 65536)
                return 1;
        }
        return 0;
    }
    for (; *param < k->nparams; (*param)++, *wd = 0) {
        uint32_t off = k->off[*param], size = k->size[*param];
        if (!param_has_words(k, *param))
            continue;
        while (*wd + 8 <= size) {
            *at = off + *wd;
            *wd += 8;
            memcpy(v, p + *at, 8);
            if (*v >= 65536)
                return 1;
        }
    }
    return 0;
}

const struct atl_span *atl_step_span(const struct atl_step *s, uint64_t v)
{
    size_t lo = 0, hi = s->nspans;
    while (lo < hi) { /* the first span whose hi is above v */
        size_t mid = (lo + hi) / 2;
        if (s->spans[mid].hi <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nspans && s->spans[lo].lo <= v ? &s->spans[lo] : NULL;
}

int atl_step_add_span(struct atl_step *s, uint64_t lo, uint64_t hi, uint64_t seq)
{
    if (s->nspans == s->capspans &&
        grow((void **)&s->spans, &s->capspans, s->nspans + 1, sizeof *s->spans))
        return -1;
    s->spans[s->nspans++] = (struct atl_span){.lo = lo, .hi = hi, .seq = seq};
    return 0;
}

static int span_cmp(const void *a, const void *b)
{
    const struct atl_span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void atl_step_spans_done(struct atl_step *s)
{
    if (s->nspans < 2)
        return;
    qsort(s->spans, s->nspans, sizeof *s->spans, span_cmp);
    /* one allocation may have been added twice; live allocations do not
     * overlap, so anything else overlapping (a zero-byte one given one
     * byte) is cut back to keep the search exact */
    size_t n = 1;
    for (size_t i = 1; i < s->nspans; i++) {
        struct atl_span *p = &s->spans[n - 1];
        if (s->spans[i].lo == p->lo && s->spans[i].seq == p->seq) {
            if (s->spans[i].hi > p->hi)
                p->hi = s->spans[i].hi;
            continue;
        }
        if (p->hi > s->spans[i].lo)
            p->hi = s->spans[i].lo;
        s->spans[n++] = s->spans[i];
    }
    s->nspans = n;
}

/* The note of word (at, v) of an op, from the spans. */
static inline int span_note(const struct atl_step *s, struct atl_span *last, uint32_t op,
                            uint32_t at, uint64_t v, struct atl_ann *out)
{
    if (!(v >= last->lo && v < last->hi)) {
        const struct atl_span *sp = atl_step_span(s, v);
        if (!sp)
            return 0;
        *last = *sp;
    }
    *out = (struct atl_ann){.op = op, .at = at, .seq = last->seq, .off = v - last->lo};
    return 1;
}

/* ---- the notes, whichever way they are held ---------------------------------- */

int atl_step_note(const struct atl_step *s, uint32_t op, uint32_t at, struct atl_ann *out)
{
    if (s->nann) {
        size_t i = ann_lower(s, op, at);
        if (i < s->nann && s->ann[i].op == op && s->ann[i].at == at) {
            *out = s->ann[i];
            return 1;
        }
        return 0;
    }
    if (!s->nspans || op >= s->nops)
        return 0;
    const struct atl_op *o = &s->ops[op];
    struct atl_span last = {.lo = 1, .hi = 0};
    uint64_t v;
    if (o->kind == ATL_OP_LAUNCH) {
        /* a word atl_op_word_next yields: 8-aligned, inside a parameter of 8 bytes or more that
         * starts 8-aligned, holding 65536 or more; found by the parameters, not by walking the
         * words up to `at` (a diff asks for each changed word of a 3.5 KiB by-value struct,
         * PyTorch's multi_tensor_apply_kernel: the walk made the GPT-2 step's diff quadratic) */
        const struct atl_kfn *k = o->u.k.kfn;
        if (!k || at % 8)
            return 0;
        for (unsigned j = 0; j < k->nparams; j++) {
            uint32_t off = k->off[j], size = k->size[j];
            if (!param_has_words(k, j) || at < off || at + 8 > off + size)
                continue;
            memcpy(&v, atl_op_bytes(s, o) + at, 8);
            return v >= 65536 && span_note(s, &last, op, at, v, out);
        }
        return 0;
    }
    /* a memset's or copy's words, up to `at` */
    unsigned param = 0, wd = 0;
    uint32_t w;
    while (atl_op_word_next(s, o, &param, &wd, &w, &v))
        if (w == at)
            return span_note(s, &last, op, at, v, out);
    return 0;
}

const struct atl_ann *atl_step_ann(const struct atl_step *s, uint32_t op, uint32_t at)
{
    if (s->nann) {
        size_t i = ann_lower(s, op, at);
        return i < s->nann && s->ann[i].op == op && s->ann[i].at == at ? &s->ann[i] : NULL;
    }
    static __thread struct atl_ann slot[4];
    static __thread unsigned next;
    struct atl_ann *a = &slot[next++ % 4];
    return atl_step_note(s, op, at, a) ? a : NULL;
}

void atl_notes_init(struct atl_notes *it, const struct atl_step *s)
{
    memset(it, 0, sizeof *it);
    it->s = s;
    it->last.lo = 1; /* empty */
}

void atl_notes_op(struct atl_notes *it, uint32_t op)
{
    const struct atl_step *s = it->s;
    if (s->nann) {
        /* in op order: a few steps forward; else a search */
        if (it->op > op || (it->ann < s->nann && s->ann[it->ann].op + 64 < op))
            it->ann = ann_lower(s, op, 0);
        while (it->ann < s->nann && s->ann[it->ann].op < op)
            it->ann++;
    }
    it->op = op, it->param = 0, it->wd = 0;
    it->nbatch = it->xbatch = 0, it->more = 1;
}

size_t atl_notes_get(struct atl_notes *it, struct atl_ann *out, size_t max)
{
    const struct atl_step *s = it->s;
    size_t n = 0;
    if (s->nann) {
        while (n < max && it->ann < s->nann && s->ann[it->ann].op == it->op)
            out[n++] = s->ann[it->ann++];
        return n;
    }
    if (!s->nspans || it->op >= s->nops)
        return 0;
    const struct atl_op *o = &s->ops[it->op];
    uint32_t at;
    uint64_t v;
    if (o->kind != ATL_OP_LAUNCH || !o->u.k.kfn) {
        while (n < max && atl_op_word_next(s, o, &it->param, &it->wd, &at, &v))
            n += span_note(s, &it->last, it->op, at, v, &out[n]);
        return n;
    }
    /* atl_op_word_next's walk of a launch, inline: the hashes of a
     * million-op step run it for every op */
    const struct atl_kfn *k = o->u.k.kfn;
    const uint8_t *p = atl_op_bytes(s, o);
    if (k->words) {
        unsigned wd = it->wd;
        struct atl_span last = it->last;
        for (; wd < k->nwords && n < max; wd++) {
            at = k->words[wd];
            memcpy(&v, p + at, 8);
            if (v >= 65536)
                n += span_note(s, &last, it->op, at, v, &out[n]);
        }
        it->wd = wd, it->last = last;
        return n;
    }
    /* in locals: stores through `out` would otherwise make the compiler
     * reload the iterator every word */
    unsigned param = it->param, wd = it->wd;
    struct atl_span last = it->last;
    for (; param < k->nparams; param++, wd = 0) {
        uint32_t off = k->off[param], size = k->size[param];
        if (!param_has_words(k, param))
            continue;
        for (; wd + 8 <= size && n < max; wd += 8) {
            memcpy(&v, p + off + wd, 8);
            if (v >= 65536)
                n += span_note(s, &last, it->op, off + wd, v, &out[n]);
        }
        if (n == max)
            break;
    }
    it->param = param, it->wd = wd, it->last = last;
    return n;
}

int atl_notes_next(struct atl_notes *it, struct atl_ann *out)
{
    return atl_notes_get(it, out, 1) == 1;
}

const struct atl_ann *atl_notes_at(struct atl_notes *it, uint32_t at)
{
    for (;;) {
        while (it->xbatch < it->nbatch && it->batch[it->xbatch].at < at)
            it->xbatch++;
        if (it->xbatch < it->nbatch)
            return it->batch[it->xbatch].at == at ? &it->batch[it->xbatch] : NULL;
        if (!it->more)
            return NULL;
        const size_t cap = sizeof it->batch / sizeof it->batch[0];
        it->nbatch = (unsigned)atl_notes_get(it, it->batch, cap);
        it->xbatch = 0;
        it->more = it->nbatch == cap;
    }
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

void atl_kfn_words(struct atl_kfn *k)
{
    unsigned n = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t *w = pass ? malloc((n + 1) * sizeof *w) : NULL;
        if (pass && !w)
            return;
        n = 0;
        for (unsigned j = 0; j < k->nparams; j++) {
            uint32_t off = k->off[j], size = k->size[j];
            if (!param_has_words(k, j))
                continue;
            for (uint32_t wd = 0; wd + 8 <= size; wd += 8, n++)
                if (w)
                    w[n] = off + wd;
        }
        if (pass)
            k->words = w, k->nwords = n;
    }
}

const char *atl_kfn_pretty(const struct atl_kfn *ck)
{
    struct atl_kfn *k = (struct atl_kfn *)ck; /* pretty is filled lazily */
    const char *have = __atomic_load_n(&k->pretty, __ATOMIC_ACQUIRE);
    if (have)
        return have;
    /* steps end on any thread, and threads exit: nothing kept per thread */
    char *p = atl_demangle_dup(k->mangled);
    if (!p)
        p = strdup(k->mangled);
    const char *mine = p ? p : k->mangled;
    if (__atomic_compare_exchange_n(&k->pretty, &have, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return mine;
    if (p)
        free(p);
    return have;
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
    /* demangled only for a new kernel: a reader passes NULL for every line.
     * Into a string of its own: atlas-diff reads on threads that exit, which
     * would leave atl_demangle's per-thread buffer behind. */
    char *mn = strdup(mangled), *pn = pretty ? strdup(pretty) : atl_demangle_dup(mangled);
    if (!pn && !pretty)
        pn = strdup(mangled);
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
    atl_kfn_words(k);
    interned[ninterned++] = k;
    res = k;
out:
    pthread_mutex_unlock(&intern_lock);
    return res;
}
