/*
 * Step diffs. The question a person asks is "which host value did the graph
 * freeze?", so the report pairs up the ops of two steps first (an extra
 * memset in the middle must not make every later op look different), then
 * names each differing field of each pair.
 *
 * Alignment runs on "shape" hashes (kind, kernel name, parameter layout),
 * not on the values: an op whose argument changed is still the same op. The
 * common prefix and suffix are stripped in linear time and Myers' O(ND)
 * algorithm aligns the middle, with D capped so a pathological pair of
 * steps costs O(N * cap) instead of O(N^2); past the cap the rest is paired
 * by position. A million-op step diffs in tens of milliseconds this way.
 */
#include "tracediff.h"

#include "config.h"

#include "hostmap.h"
#include "stack.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
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

static const char *kind_name(int k)
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

/* ---- hashing ----------------------------------------------------------------- */

#define mix atl_hash_mix

static uint64_t str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

uint64_t atl_hash_bytes(uint64_t h, const void *bytes, size_t n)
{
    const uint8_t *p = bytes;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = mix(h, w);
    }
    uint64_t t = 0;
    if (n > i) /* p is NULL when n is 0 (a step without parameter bytes) */
        memcpy(&t, p + i, n - i);
    return mix(h, t ^ ((uint64_t)n << 56));
}

/* Shape: what makes two ops "the same op" for alignment. */
static uint64_t shape_hash(const struct atl_op *o, const struct atl_kfn **last, uint64_t *lasth)
{
    uint64_t h = mix(0x1234, o->kind);
    if (o->kind == ATL_OP_LAUNCH) {
        const struct atl_kfn *k = o->u.k.kfn;
        if (k != *last) {
            *last = k;
            *lasth = k ? mix(str_hash(k->mangled), k->nparams) : 0;
        }
        h = mix(h, *lasth);
    } else if (o->kind != ATL_OP_GRAPH) {
        h = mix(h, o->sub);
    }
    return h;
}

/* Everything a graph would freeze (the stream is not: a graph replays on
 * whatever stream it is launched into). */
/* A pointer resolved to alloc#N+OFF hashes as that name, not as its
 * address: two processes (two ranks, or two runs given to atlas-diff) place
 * the same allocation at different addresses. Within one process one name
 * is one address, so the live diff sees no change. */
/* `first` is the op's first annotation (or where it would be): the hashes
 * walk the ops and their annotations together, with no search per op. */
static uint64_t params_hash(uint64_t h, const struct atl_step *s, const struct atl_op *o,
                            size_t first)
{
    const struct atl_kfn *k = o->u.k.kfn;
    const uint8_t *p = atl_op_bytes(s, o);
    uint8_t tmp[4096];
    const uint32_t op = (uint32_t)(o - s->ops);
    if (first >= s->nann || s->ann[first].op != op || k->total == 0 || k->total > sizeof tmp)
        return atl_hash_bytes(h, p, k->total);
    memcpy(tmp, p, k->total);
    for (size_t i = first; i < s->nann && s->ann[i].op == op; i++) {
        const struct atl_ann *an = &s->ann[i];
        /* host memory keeps its value in the hash: two runs' differ, and
         * their diff then decides (equal across runs, compared within one) */
        if (an->at + 8 <= k->total && an->seq != ATL_ANN_HOST) {
            uint64_t v = mix(an->seq, an->off);
            memcpy(tmp + an->at, &v, 8);
        }
    }
    return atl_hash_bytes(h, tmp, k->total);
}

/* A memset's or copy's address: its allocation and offset where the ledger
 * knew it (the same buffer in two processes), else the address. */
static uint64_t addr_key(const struct atl_step *s, const struct atl_op *o, uint32_t at,
                         uint64_t raw, size_t first)
{
    const uint32_t op = (uint32_t)(o - s->ops);
    for (size_t i = first; i < s->nann && s->ann[i].op == op; i++)
        if (s->ann[i].at == at)
            return mix(s->ann[i].seq, s->ann[i].off);
    return raw;
}

static uint64_t full_hash(const struct atl_step *s, const struct atl_op *o, uint64_t shape,
                          size_t first)
{
    uint64_t h = mix(shape, o->shmem);
    h = mix(h,
            (uint64_t)o->cluster[0] | (uint64_t)o->cluster[1] << 8 | (uint64_t)o->cluster[2] << 16);
    switch (o->kind) {
    case ATL_OP_LAUNCH:
        for (int i = 0; i < 3; i++)
            h = mix(h, (uint64_t)o->u.k.grid[i] << 32 | o->u.k.block[i]);
        if (o->u.k.kfn)
            h = params_hash(h, s, o, first);
        break;
    case ATL_OP_MEMSET:
        h = mix(h, addr_key(s, o, ATL_ANN_DST, o->u.m.ptr, first));
        h = mix(mix(mix(h, o->u.m.count), o->u.m.pitch), o->u.m.height);
        break;
    case ATL_OP_COPY:
        h = mix(mix(h, addr_key(s, o, ATL_ANN_DST, o->u.c.dst, first)),
                addr_key(s, o, ATL_ANN_SRC, o->u.c.src, first));
        h = mix(mix(mix(h, o->u.c.w), o->u.c.h), o->u.c.d);
        break;
    default:
        h = mix(h, o->u.g.exec);
    }
    return h;
}

/* ---- ignore list ------------------------------------------------------------ */

/* ATLAS_DIFF_IGNORE is refused, with the reason, past this many entries */
_Static_assert(sizeof(((struct atl_ignore *)0)->e) / sizeof(((struct atl_ignore *)0)->e[0]) ==
                   ATL_IGNORE_MAX,
               "ATL_IGNORE_MAX (config.h) is the size of struct atl_ignore");

void atl_ignore_parse(struct atl_ignore *ig, const char *spec)
{
    memset(ig, 0, sizeof *ig);
    if (!spec || !*spec)
        return;
    ig->spec = strdup(spec);
    if (!ig->spec)
        return;
    char *save = NULL;
    for (char *t = strtok_r(ig->spec, ",", &save); t && ig->n < 32;
         t = strtok_r(NULL, ",", &save)) {
        int arg = -1;
        char *c = strrchr(t, ':');
        if (c && strncmp(c + 1, "arg", 3) == 0 && isdigit((unsigned char)c[4])) {
            arg = atoi(c + 4);
            *c = '\0';
        }
        ig->e[ig->n].kernel = t;
        ig->e[ig->n].arg = arg;
        ig->n++;
    }
}

void atl_ignore_free(struct atl_ignore *ig)
{
    free(ig->spec);
    memset(ig, 0, sizeof *ig);
}

/* The short name a person types: "scale" for "void scale<float>(float*, int)". */
static void base_name(const char *pretty, char *out, size_t len)
{
    const char *p = pretty;
    if (strncmp(p, "void ", 5) == 0)
        p += 5;
    /* "(anonymous namespace)::" is a scope, not the parameter list */
    size_t n = 0, o = 0;
    static const char anon[] = "(anonymous namespace)::";
    while (p[n] && o + 1 < len) {
        if (strncmp(p + n, anon, sizeof anon - 1) == 0) {
            n += sizeof anon - 1;
            continue;
        }
        if (p[n] == '(' || p[n] == '<')
            break;
        out[o++] = p[n++];
    }
    out[o] = '\0';
}

static int kernel_matches(const char *want, const struct atl_kfn *k)
{
    char base[256];
    if (!k)
        return 0;
    if (strcmp(want, k->mangled) == 0 || strcmp(want, k->pretty) == 0)
        return 1;
    base_name(k->pretty, base, sizeof base);
    return strcmp(want, base) == 0;
}

/* 1 when the whole kernel (arg == -2) or that argument is silenced. */
static int ignored(const struct atl_ignore *ig, const struct atl_kfn *k, int arg)
{
    if (!ig)
        return 0;
    for (int i = 0; i < ig->n; i++)
        if ((ig->e[i].arg == -1 || ig->e[i].arg == arg) && kernel_matches(ig->e[i].kernel, k))
            return 1;
    return 0;
}

/* ---- the report ------------------------------------------------------------- */

/* A report's lines are ranked before they are printed, so what a person
 * reads first is about host values: */
enum rank {
    RANK_VALUE,   /* scalars and sizes */
    RANK_LAUNCH,  /* grid, block, shared memory, cluster, parameter layout */
    RANK_OPS,     /* ops inserted or removed */
    RANK_PTR,     /* pointers (another buffer; moved within one, collapsed) */
    RANK_RESIDUE, /* uninitialised bytes of by-value parameters */
    NRANKS
};

/* Findings of one kind that are one line per step by default: how many,
 * and the names, each once ("add_pos arg0, ..."). */
struct collapsed {
    size_t n;
    char names[256];
};

struct report {
    const struct atl_diff_opts *o;
    struct atl_diff_stats *st;
    const struct atl_step *a, *b;
    size_t lines; /* differences found */
    /* the lines kept for printing: at most max_lines of each rank (no more
     * can be printed), in the order found */
    struct kept_line {
        char *text;
        int rank;
    } * kept;
    size_t nkept, capkept, per_rank[NRANKS];
    /* pointers moved within their allocations (ATLAS_DIFF_POINTERS), and
     * changed words of by-value parameters holding host-memory residue
     * (ATLAS_DIFF_RESIDUE): each collapsed into one line per step */
    struct collapsed moved, resid;
    size_t noted; /* lines about residue: printed, but no difference in a host value */
    char header[512];
    char header_noted[512]; /* when every line is about residue */
};

static void emit(struct report *r, enum rank rank, const char *text)
{
    r->lines++;
    r->noted += rank == RANK_RESIDUE;
    if (r->per_rank[rank] >= r->o->max_lines)
        return;
    char *t = strdup(text);
    if (!t || grow((void **)&r->kept, &r->capkept, r->nkept + 1, sizeof *r->kept)) {
        free(t);
        return;
    }
    r->per_rank[rank]++;
    r->kept[r->nkept++] = (struct kept_line){t, rank};
}

/* A finding that collapses by default, `what` ("add_pos arg0"), under its
 * setting's `mode` (ATL_PTRS_*): counted and named in `c` (collapse),
 * dropped (none), or left to the caller to report (all). Returns 1 when the
 * caller is not to report it itself. Used for:
 *  - a pointer that moved within its allocation (the same alloc#N, another
 *    offset): a caching allocator handing an intermediate another block of
 *    its segment does this every step;
 *  - a changed word of a by-value parameter that holds host-memory residue
 *    (holds_residue). */
static int collapse(struct collapsed *c, int mode, const char *what)
{
    if (mode == ATL_PTRS_ALL)
        return 0;
    if (mode == ATL_PTRS_NONE)
        return 1;
    if (!strstr(c->names, what)) {
        size_t l = strlen(c->names);
        if (l + strlen(what) + 8 < sizeof c->names)
            snprintf(c->names + l, sizeof c->names - l, "%s%s", l ? ", " : "", what);
        else if (!strstr(c->names, ", ..."))
            snprintf(c->names + l, sizeof c->names - l, ", ...");
    }
    c->n++;
    return 1;
}

/* Prints the header and the kept lines, rank by rank, at most max_lines,
 * then a count of the rest. */
static void report_print(struct report *r)
{
    if (r->moved.n) {
        char line[512];
        size_t n = r->moved.n;
        snprintf(line, sizeof line,
                 "  %zu pointer argument%s moved within %s allocation%s (allocator reuse): %s", n,
                 n == 1 ? "" : "s", n == 1 ? "its" : "their", n == 1 ? "" : "s", r->moved.names);
        emit(r, RANK_PTR, line);
    }
    if (r->resid.n) {
        char line[512];
        snprintf(line, sizeof line,
                 "  %zu changed word%s of by-value parameters that hold host addresses "
                 "(uninitialised bytes, most likely): %s",
                 r->resid.n, r->resid.n == 1 ? "" : "s", r->resid.names);
        emit(r, RANK_RESIDUE, line);
    }
    if (r->lines)
        r->o->line(r->o->ctx, r->lines == r->noted ? r->header_noted : r->header);
    size_t printed = 0;
    for (int k = 0; k < NRANKS; k++)
        for (size_t i = 0; i < r->nkept; i++)
            if (r->kept[i].rank == k && printed < r->o->max_lines) {
                r->o->line(r->o->ctx, r->kept[i].text);
                printed++;
            }
    for (size_t i = 0; i < r->nkept; i++)
        free(r->kept[i].text);
    free(r->kept);
    r->kept = NULL, r->nkept = 0;
    if (r->lines > printed) {
        char line[128];
        snprintf(line, sizeof line, "  ... %zu more differences not shown (%s=%u)",
                 r->lines - printed, r->o->max_name ? r->o->max_name : "ATLAS_DIFF_MAX",
                 r->o->max_lines);
        r->o->line(r->o->ctx, line);
    }
}

/* Counts a differing field of op o for the summary: "add_pos arg1",
 * "memset ptr", "copy width". */
static void count_top(struct report *r, const struct atl_op *o, const char *field)
{
    if (!r->st)
        return;
    char what[160], base[120];
    const struct atl_kfn *k = o->kind == ATL_OP_LAUNCH ? o->u.k.kfn : NULL;
    base_name(k ? k->pretty : kind_name(o->kind), base, sizeof base);
    snprintf(what, sizeof what, "%s %s", base, field);
    struct atl_diff_stats *st = r->st;
    for (int i = 0; i < st->ntop; i++)
        if (strcmp(st->top[i].what, what) == 0) {
            st->top[i].n++;
            return;
        }
    if (st->ntop < 64) {
        snprintf(st->top[st->ntop].what, sizeof st->top[0].what, "%s", what);
        st->top[st->ntop++].n = 1;
    }
}

/* A value of kernel parameter `what` changed from va to vb (by `delta`,
 * sign-extended) in step b: counted once per step for the frozen-value
 * summary, with the shape of its changes. */
static void note_frozen(struct report *r, const char *what, uint64_t va, uint64_t vb, int64_t delta)
{
    struct atl_diff_stats *st = r->st;
    if (!st)
        return;
    struct atl_frozen *f = NULL;
    for (int i = 0; i < st->nfrozen && !f; i++)
        if (strcmp(st->frozen[i].what, what) == 0)
            f = &st->frozen[i];
    if (!f) {
        if (st->nfrozen == 64)
            return; /* the summary names the first 64 */
        f = &st->frozen[st->nfrozen++];
        snprintf(f->what, sizeof f->what, "%s", what);
        f->n = 1, f->step = r->b->index, f->first = va, f->v[0] = va, f->v[1] = vb;
        f->last = vb, f->delta = delta, f->steady = 1, f->many = 0;
        return;
    }
    if (f->step == r->b->index)
        return;
    f->n++, f->step = r->b->index;
    if (delta != f->delta || va != f->last)
        f->steady = 0;
    if ((va != f->v[0] && va != f->v[1]) || (vb != f->v[0] && vb != f->v[1]))
        f->many = 1;
    f->last = vb;
}

static const char *op_label(const struct atl_op *o, char *buf, size_t len)
{
    if (o->kind == ATL_OP_LAUNCH)
        snprintf(buf, len, "%s [launch]", o->u.k.kfn ? o->u.k.kfn->pretty : "?");
    else
        snprintf(buf, len, "[%s]", kind_name(o->kind));
    return buf;
}

static void op_summary(const struct atl_step *s, const struct atl_op *o, char *buf, size_t len)
{
    switch (o->kind) {
    case ATL_OP_LAUNCH:
        snprintf(buf, len, "%s grid=(%u,%u,%u) block=(%u,%u,%u) shmem=%u",
                 o->u.k.kfn ? o->u.k.kfn->pretty : "?", o->u.k.grid[0], o->u.k.grid[1],
                 o->u.k.grid[2], o->u.k.block[0], o->u.k.block[1], o->u.k.block[2], o->shmem);
        break;
    case ATL_OP_MEMSET:
        snprintf(buf, len, "memset ptr=0x%" PRIx64 " value=0x%x elem=%u count=%" PRIu64, o->u.m.ptr,
                 o->shmem, o->sub, o->u.m.count);
        break;
    case ATL_OP_COPY:
        snprintf(buf, len, "copy %s dst=0x%" PRIx64 " src=0x%" PRIx64 " bytes=%" PRIu64,
                 atl_dir_name(o->sub), o->u.c.dst, o->u.c.src, o->u.c.w * o->u.c.h * o->u.c.d);
        break;
    default:
        snprintf(buf, len, "graph exec=0x%" PRIx64, o->u.g.exec);
    }
    (void)s;
}

static void field_u64(struct report *r, size_t idx, const struct atl_op *o, const char *field,
                      uint64_t a, uint64_t b, enum rank rank)
{
    if (a == b)
        return;
    char lab[256], line[640];
    snprintf(line, sizeof line,
             "  op %zu %s %s: 0x%" PRIx64 " -> 0x%" PRIx64 " (delta %+" PRId64 ")", idx,
             op_label(o, lab, sizeof lab), field, a, b, (int64_t)(b - a));
    emit(r, rank, line);
    count_top(r, o, field);
}

/* A size or a count, in decimal (`unit`: " bytes" or ""). */
static void field_num(struct report *r, size_t idx, const struct atl_op *o, const char *field,
                      uint64_t a, uint64_t b, const char *unit, enum rank rank)
{
    if (a == b)
        return;
    char lab[256], line[640];
    snprintf(line, sizeof line, "  op %zu %s %s: %" PRIu64 " -> %" PRIu64 "%s (delta %+" PRId64 ")",
             idx, op_label(o, lab, sizeof lab), field, a, b, unit, (int64_t)(b - a));
    emit(r, rank, line);
    count_top(r, o, field);
}

static void field_dim(struct report *r, size_t idx, const struct atl_op *o, const char *field,
                      const uint32_t *a, const uint32_t *b)
{
    if (a[0] == b[0] && a[1] == b[1] && a[2] == b[2])
        return;
    char lab[256], line[640];
    snprintf(line, sizeof line, "  op %zu %s %s: (%u,%u,%u) -> (%u,%u,%u)", idx,
             op_label(o, lab, sizeof lab), field, a[0], a[1], a[2], b[0], b[1], b[2]);
    emit(r, RANK_LAUNCH, line);
    count_top(r, o, field);
}

static void fmt_alloc(const struct atl_ann *an, char *buf, size_t len)
{
    if (an && an->seq == ATL_ANN_HOST)
        snprintf(buf, len, " (host memory)");
    else if (an)
        snprintf(buf, len, " alloc#%" PRIu64 "+0x%" PRIx64, an->seq, an->off);
    else
        buf[0] = '\0';
}

/* The n-byte word at `at` of ops ia and ib names one allocation and offset
 * in both steps (a pointer, in two processes). */
static int same_alloc(const struct report *r, size_t ia, size_t ib, uint32_t at, uint32_t n)
{
    if (n != 8)
        return 0;
    const struct atl_ann *xa = atl_step_ann(r->a, (uint32_t)ia, at);
    const struct atl_ann *xb = atl_step_ann(r->b, (uint32_t)ib, at);
    if (xa && xa->seq == ATL_ANN_HOST)
        return r->o->cross && xb && xb->seq == ATL_ANN_HOST;
    return xa && xb && xa->seq == xb->seq && xa->off == xb->off;
}

/* Uninitialised bytes. A struct passed by value is copied whole, including
 * the fields the launching code never set: whatever its stack held there.
 * PyTorch's TensorListMetadata and ReduceOp fill only their first entries,
 * and on the H200 the rest held stack, heap and library addresses and
 * counters of the Python interpreter, different every step. A kernel
 * cannot use the address of the launching thread's stack, so a by-value
 * parameter whose changed words include an address of host memory
 * (src/hostmap.h; not pinned memory, not a device allocation) is marked as
 * holding residue, for the rest of the run: its changed words that do not
 * name an allocation in both steps are reported as residue, collapsed by
 * default (ATLAS_DIFF_RESIDUE), and left out of the frozen-value summary.
 * Only the 8-byte words that changed are asked about, so a step costs
 * nothing more when the struct did not change. */
static int holds_residue(struct report *r, size_t ia, size_t ib, const struct atl_kfn *ka,
                         const struct atl_kfn *kb, unsigned i, const uint8_t *pa, const uint8_t *pb,
                         uint32_t sz, uint32_t off)
{
    if (i >= 64)
        return 0;
    uint64_t bit = 1ull << i;
    if ((__atomic_load_n(&ka->residue, __ATOMIC_RELAXED) |
         __atomic_load_n(&kb->residue, __ATOMIC_RELAXED)) &
        bit)
        return 1;
    if (!r->o->host_addr)
        return 0;
    for (uint32_t w = 0; w + 8 <= sz; w += 8) {
        uint64_t va, vb;
        memcpy(&va, pa + w, 8);
        memcpy(&vb, pb + w, 8);
        if (va == vb || atl_step_ann(r->a, (uint32_t)ia, off + w) ||
            atl_step_ann(r->b, (uint32_t)ib, off + w))
            continue;
        if (r->o->host_addr(va) || r->o->host_addr(vb)) {
            /* the records are shared and learned from: const only to the
             * rest of the diff */
            __atomic_fetch_or((uint64_t *)&ka->residue, bit, __ATOMIC_RELAXED);
            __atomic_fetch_or((uint64_t *)&kb->residue, bit, __ATOMIC_RELAXED);
            return 1;
        }
    }
    return 0;
}

static void diff_params(struct report *r, size_t ia, size_t ib, const struct atl_op *oa,
                        const struct atl_op *ob)
{
    const struct atl_kfn *ka = oa->u.k.kfn, *kb = ob->u.k.kfn;
    const uint8_t *pa = atl_op_bytes(r->a, oa), *pb = atl_op_bytes(r->b, ob);
    char lab[256], line[768];
    op_label(ob, lab, sizeof lab);
    if (ka->nparams != kb->nparams || ka->total != kb->total) {
        snprintf(line, sizeof line, "  op %zu %s parameter layout: %u params/%u bytes -> %u/%u", ib,
                 lab, ka->nparams, ka->total, kb->nparams, kb->total);
        emit(r, RANK_LAUNCH, line);
        return;
    }
    for (unsigned i = 0; i < kb->nparams; i++) {
        uint32_t off = kb->off[i], sz = kb->size[i];
        if (ka->off[i] != off || ka->size[i] != sz || off + sz > kb->total)
            continue;
        if (memcmp(pa + off, pb + off, sz) == 0 || ignored(r->o->ignore, kb, (int)i))
            continue;
        /* Values up to 8 bytes read as one little-endian integer; larger
         * by-value parameters are compared in 8-byte words so the report
         * points at the word that changed. The same alloc#N+OFF in two
         * processes is the same pointer: a parameter whose every differing
         * word is one counts as unchanged. */
        int counted = 0;
        int resid = sz > 8 && holds_residue(r, ia, ib, ka, kb, i, pa + off, pb + off, sz, off);
        for (uint32_t w = 0; w < sz; w += 8) {
            uint32_t n = sz - w < 8 ? sz - w : 8;
            uint64_t va = 0, vb = 0;
            memcpy(&va, pa + off + w, n);
            memcpy(&vb, pb + off + w, n);
            if (va == vb || same_alloc(r, ia, ib, off + w, n))
                continue;
            char field[32], where[48], aa[64] = "", ab[64] = "", what[160];
            snprintf(field, sizeof field, "arg%u", i);
            base_name(kb->pretty, what, 120);
            snprintf(what + strlen(what), sizeof what - strlen(what), " %s", field);
            const struct atl_ann *xa = NULL, *xb = NULL;
            if (n == 8) {
                xa = atl_step_ann(r->a, (uint32_t)ia, off + w);
                xb = atl_step_ann(r->b, (uint32_t)ib, off + w);
                /* host memory (ATL_ANN_HOST) is no allocation to move within */
                if (xa && xb && xa->seq == xb->seq && xa->seq != ATL_ANN_HOST &&
                    collapse(&r->moved, r->o->pointers, what))
                    continue;
            }
            /* a word naming an allocation in both steps stays a pointer */
            int junk = resid && !(xa && xb);
            if (junk && collapse(&r->resid, r->o->residue, what))
                continue;
            if (!counted++ && !junk)
                count_top(r, ob, field);
            const char *verdict = junk ? " (host-memory residue)" : "";
            if (sz > 8)
                snprintf(where, sizeof where, "+0x%x @0x%x (%u of %u bytes)", w, off + w, n, sz);
            else
                snprintf(where, sizeof where, " @0x%x (%u bytes)", off, sz);
            if (n == 8 && !junk) {
                /* Pointers: the same buffer at another offset (a position
                 * baked in, or allocator reuse); another buffer, a fresh
                 * allocation. */
                if (xa && xb && (xa->seq == ATL_ANN_HOST || xb->seq == ATL_ANN_HOST))
                    verdict = "";
                else if (xa && xb)
                    verdict =
                        xa->seq == xb->seq ? ": same buffer, another offset" : ": another buffer";
            }
            fmt_alloc(xa, aa, sizeof aa);
            fmt_alloc(xb, ab, sizeof ab);
            /* small values are sign-extended, so 0xffffffff -> 0 reads as +1 */
            int sh = 64 - 8 * (int)n;
            int64_t delta = n == 8 ? (int64_t)(vb - va)
                                   : ((int64_t)(vb << sh) >> sh) - ((int64_t)(va << sh) >> sh);
            if (!junk) {
                char fz[160];
                base_name(kb->pretty, fz, 120);
                size_t l = strlen(fz);
                if (sz > 8)
                    snprintf(fz + l, sizeof fz - l, " %s+0x%x", field, w);
                else
                    snprintf(fz + l, sizeof fz - l, " %s", field);
                note_frozen(r, fz, va, vb, delta);
            }
            snprintf(line, sizeof line,
                     "  op %zu %s arg%u%s: 0x%" PRIx64 "%s -> 0x%" PRIx64 "%s (delta %+" PRId64
                     ")%s",
                     ib, lab, i, where, va, aa, vb, ab, delta, verdict);
            emit(r, junk ? RANK_RESIDUE : xa || xb ? RANK_PTR : RANK_VALUE, line);
        }
    }
}

/* A memset's or copy's address (`at`: ATL_ANN_DST or ATL_ANN_SRC): by
 * allocation and offset where both steps know it, else by value; the raw
 * addresses are printed for people. `host`: the address is host memory,
 * which two processes never share (not compared across runs). */
static void field_addr(struct report *r, size_t ia, size_t ib, const char *field, uint32_t at,
                       uint64_t a, uint64_t b, int host)
{
    const struct atl_ann *xa = atl_step_ann(r->a, (uint32_t)ia, at);
    const struct atl_ann *xb = atl_step_ann(r->b, (uint32_t)ib, at);
    if (xa && xb ? xa->seq == xb->seq && xa->off == xb->off : a == b || (host && r->o->cross))
        return;
    const struct atl_op *o = &r->b->ops[ib];
    char lab[256], line[640], aa[64], ab[64];
    snprintf(line, sizeof line, "%s %s", kind_name(o->kind), field);
    if (xa && xb && xa->seq == xb->seq && collapse(&r->moved, r->o->pointers, line))
        return;
    fmt_alloc(xa, aa, sizeof aa);
    fmt_alloc(xb, ab, sizeof ab);
    snprintf(line, sizeof line, "  op %zu %s %s: 0x%" PRIx64 "%s -> 0x%" PRIx64 "%s%s", ib,
             op_label(o, lab, sizeof lab), field, a, aa, b, ab,
             xa && xb ? (xa->seq == xb->seq ? ": same buffer, another offset" : ": another buffer")
                      : "");
    emit(r, RANK_PTR, line);
    count_top(r, o, field);
}

static void diff_pair(struct report *r, size_t ia, size_t ib)
{
    const struct atl_op *oa = &r->a->ops[ia], *ob = &r->b->ops[ib];
    switch (ob->kind) {
    case ATL_OP_LAUNCH:
        if (ignored(r->o->ignore, ob->u.k.kfn, -1))
            return;
        field_dim(r, ib, ob, "grid", oa->u.k.grid, ob->u.k.grid);
        field_dim(r, ib, ob, "block", oa->u.k.block, ob->u.k.block);
        field_num(r, ib, ob, "shmem", oa->shmem, ob->shmem, " bytes", RANK_LAUNCH);
        {
            uint32_t ca[3] = {oa->cluster[0], oa->cluster[1], oa->cluster[2]};
            uint32_t cb[3] = {ob->cluster[0], ob->cluster[1], ob->cluster[2]};
            field_dim(r, ib, ob, "cluster", ca, cb);
        }
        diff_params(r, ia, ib, oa, ob);
        break;
    case ATL_OP_MEMSET:
        field_addr(r, ia, ib, "ptr", ATL_ANN_DST, oa->u.m.ptr, ob->u.m.ptr, 0);
        field_u64(r, ib, ob, "value", oa->shmem, ob->shmem, RANK_VALUE);
        field_num(r, ib, ob, "count", oa->u.m.count, ob->u.m.count, "", RANK_VALUE);
        field_num(r, ib, ob, "pitch", oa->u.m.pitch, ob->u.m.pitch, " bytes", RANK_VALUE);
        field_num(r, ib, ob, "height", oa->u.m.height, ob->u.m.height, "", RANK_VALUE);
        break;
    case ATL_OP_COPY:
        field_addr(r, ia, ib, "dst", ATL_ANN_DST, oa->u.c.dst, ob->u.c.dst,
                   ob->sub == ATL_DIR_DTOH || ob->sub == ATL_DIR_HTOH);
        field_addr(r, ia, ib, "src", ATL_ANN_SRC, oa->u.c.src, ob->u.c.src,
                   ob->sub == ATL_DIR_HTOD || ob->sub == ATL_DIR_HTOH);
        field_num(r, ib, ob, "width", oa->u.c.w, ob->u.c.w, " bytes", RANK_VALUE);
        field_num(r, ib, ob, "height", oa->u.c.h, ob->u.c.h, "", RANK_VALUE);
        field_num(r, ib, ob, "depth", oa->u.c.d, ob->u.c.d, "", RANK_VALUE);
        break;
    default:
        field_u64(r, ib, ob, "exec", oa->u.g.exec, ob->u.g.exec, RANK_PTR);
    }
}

/* `run` consecutive ops from idx, all of one shape, inserted or removed:
 * one line, so a step that grew by a thousand launches reads as such. */
static void insdel(struct report *r, const struct atl_step *s, size_t idx, size_t run, int inserted)
{
    const struct atl_op *o = &s->ops[idx];
    if (o->kind == ATL_OP_LAUNCH && ignored(r->o->ignore, o->u.k.kfn, -1))
        return;
    char sum[384], at[64], line[512];
    op_summary(s, o, sum, sizeof sum);
    if (run > 1)
        snprintf(at, sizeof at, "ops %zu..%zu (%zu of them)", idx, idx + run - 1, run);
    else
        snprintf(at, sizeof at, "op %zu", idx);
    if (inserted)
        snprintf(line, sizeof line, "  %s inserted: %s", at, sum);
    else
        snprintf(line, sizeof line, "  %s of the previous step removed: %s", at, sum);
    emit(r, RANK_OPS, line);
}

/* ---- alignment ----------------------------------------------------------------- */

enum { ED_PAIR, ED_DEL, ED_INS };
struct edit {
    uint8_t t;
    size_t i, j;
};

#define MYERS_MAX_D 1024

/* Aligns a[0..n) with b[0..m) (shape hashes); appends the edit script to
 * *ed. Returns 0, or -1 when the cap on D was hit (the caller pairs by
 * position). */
static int myers(const uint64_t *a, size_t n, const uint64_t *b, size_t m, struct edit **ed,
                 size_t *ned, size_t *cap)
{
    long max = (long)(n + m);
    if (max > MYERS_MAX_D)
        max = MYERS_MAX_D;
    long w = 2 * max + 3, off = max + 1;
    long *v = calloc((size_t)w, sizeof *v);
    long **trace = calloc((size_t)max + 1, sizeof *trace);
    int rc = -1;
    long dfound = -1;
    if (!v || !trace)
        goto out;
    for (long d = 0; d <= max && dfound < 0; d++) {
        trace[d] = malloc(sizeof(long) * (size_t)(2 * d + 3));
        if (!trace[d])
            goto out;
        memcpy(trace[d], v + off - d - 1, sizeof(long) * (size_t)(2 * d + 3));
        for (long k = -d; k <= d; k += 2) {
            long x;
            if (k == -d || (k != d && v[off + k - 1] < v[off + k + 1]))
                x = v[off + k + 1];
            else
                x = v[off + k - 1] + 1;
            long y = x - k;
            while (x < (long)n && y < (long)m && a[x] == b[y])
                x++, y++;
            v[off + k] = x;
            if (x >= (long)n && y >= (long)m) {
                dfound = d;
                break;
            }
        }
    }
    if (dfound < 0)
        goto out;
    /* Backtrack, collecting the script in reverse. */
    size_t start = *ned;
    long x = (long)n, y = (long)m;
    for (long d = dfound; d >= 0; d--) {
        const long *tv = trace[d]; /* V before step d, indices -d-1..d+1 */
#define TV(k) tv[(k) + d + 1]
        long k = x - y, pk, px, py;
        if (d == 0) {
            pk = 0, px = 0, py = 0;
        } else {
            if (k == -d || (k != d && TV(k - 1) < TV(k + 1)))
                pk = k + 1;
            else
                pk = k - 1;
            px = TV(pk);
            py = px - pk;
        }
#undef TV
        while (x > px && y > py) {
            if (grow((void **)ed, cap, *ned + 1, sizeof **ed))
                goto out;
            (*ed)[(*ned)++] = (struct edit){ED_PAIR, (size_t)x - 1, (size_t)y - 1};
            x--, y--;
        }
        if (d > 0) {
            if (grow((void **)ed, cap, *ned + 1, sizeof **ed))
                goto out;
            if (x == px)
                (*ed)[(*ned)++] = (struct edit){ED_INS, (size_t)px, (size_t)py};
            else
                (*ed)[(*ned)++] = (struct edit){ED_DEL, (size_t)px, (size_t)py};
        }
        x = px, y = py;
    }
    for (size_t i = start, j = *ned - 1; i < j && j != (size_t)-1; i++, j--) {
        struct edit t = (*ed)[i];
        (*ed)[i] = (*ed)[j];
        (*ed)[j] = t;
    }
    rc = 0;
out:
    if (trace)
        for (long d = 0; d <= max; d++)
            free(trace[d]);
    free(trace);
    free(v);
    return rc;
}

/* Fills the step's hash cache; -1 when out of memory. */
static int step_hashes(const struct atl_step *cs)
{
    struct atl_step *s = (struct atl_step *)cs; /* the hashes are a cache */
    if (s->shape && s->full)
        return 0;
    free(s->shape), free(s->full);
    s->shape = malloc(sizeof(uint64_t) * (s->nops + 1));
    s->full = malloc(sizeof(uint64_t) * (s->nops + 1));
    if (!s->shape || !s->full) {
        free(s->shape), free(s->full);
        s->shape = s->full = NULL;
        return -1;
    }
    const struct atl_kfn *last = NULL;
    uint64_t lasth = 0;
    size_t an = 0; /* the first annotation of op i (they are in op order) */
    for (size_t i = 0; i < s->nops; i++) {
        while (an < s->nann && s->ann[an].op < i)
            an++;
        s->shape[i] = shape_hash(&s->ops[i], &last, &lasth);
        s->full[i] = full_hash(s, &s->ops[i], s->shape[i], an);
    }
    return 0;
}

size_t atl_step_diff(const struct atl_step *a, const struct atl_step *b,
                     const struct atl_diff_opts *opts, struct atl_diff_stats *st)
{
    struct report r = {.o = opts, .st = st, .a = a, .b = b};
    char where[96] = "";
    if (opts->where && b->stream)
        snprintf(where, sizeof where, " (thread %s, stream 0x%" PRIx64 ")", b->thread, b->stream);
    else if (opts->where)
        snprintf(where, sizeof where, " (thread %s)", b->thread);
    snprintf(r.header, sizeof r.header,
             "step \"%s\"%s #%" PRIu64 " (step %" PRIu64 ") differs from #%" PRIu64
             ": %zu op%s (was %zu, %+ld)",
             b->name, where, b->nth, b->index, a->nth, b->nops, b->nops == 1 ? "" : "s", a->nops,
             (long)b->nops - (long)a->nops);
    snprintf(r.header_noted, sizeof r.header_noted,
             "step \"%s\"%s #%" PRIu64 " (step %" PRIu64 ") has the host values of #%" PRIu64
             "; only uninitialised bytes differ: %zu op%s",
             b->name, where, b->nth, b->index, a->nth, b->nops, b->nops == 1 ? "" : "s");
    if (st)
        st->compared++;

    size_t n = a->nops, m = b->nops;
    struct edit *ed = NULL;
    size_t ned = 0, cap = 0;
    if (step_hashes(a) || step_hashes(b)) {
        opts->line(opts->ctx, "step diff: out of memory; this step was not compared");
        goto done;
    }
    const uint64_t *sa = a->shape, *sb = b->shape, *fa = a->full, *fb = b->full;
    /* the common case, identical steps: one pass over the hashes */
    if (n == m && memcmp(fa, fb, n * sizeof *fa) == 0)
        goto done;
    size_t p = 0;
    while (p < n && p < m && sa[p] == sb[p])
        p++;
    size_t q = 0;
    while (q < n - p && q < m - p && sa[n - 1 - q] == sb[m - 1 - q])
        q++;
    size_t mn = n - p - q, mm = m - p - q;

    for (size_t i = 0; i < p; i++)
        if (fa[i] != fb[i])
            diff_pair(&r, i, i);
    if (mn || mm) {
        if (myers(sa + p, mn, sb + p, mm, &ed, &ned, &cap) != 0) {
            /* Too many insertions to align exactly: pair the ops that line up
             * by position and shape; everything else reads as one block
             * removed and one block inserted (runs group into single lines). */
            ned = 0;
            size_t k = mn < mm ? mn : mm;
            for (int pass = 0; pass < 3; pass++)
                for (size_t i = 0; i < (pass == 2 ? mm : mn); i++) {
                    int same = i < k && sa[p + i] == sb[p + i];
                    struct edit e = pass == 0   ? (struct edit){ED_PAIR, i, i}
                                    : pass == 1 ? (struct edit){ED_DEL, i, 0}
                                                : (struct edit){ED_INS, 0, i};
                    if ((pass == 0) != same || grow((void **)&ed, &cap, ned + 1, sizeof *ed))
                        continue;
                    ed[ned++] = e;
                }
        }
        for (size_t e = 0; e < ned; e++) {
            size_t i = ed[e].i + p, j = ed[e].j + p;
            if (ed[e].t == ED_PAIR) {
                if (fa[i] != fb[j])
                    diff_pair(&r, i, j);
            } else {
                int ins = ed[e].t == ED_INS;
                const uint64_t *sh = ins ? sb : sa;
                size_t at = ins ? j : i, run = 1;
                while (e + 1 < ned && ed[e + 1].t == ed[e].t &&
                       (ins ? ed[e + 1].j + p : ed[e + 1].i + p) == at + run &&
                       sh[at + run] == sh[at])
                    run++, e++;
                insdel(&r, ins ? b : a, at, run, ins);
            }
        }
    }
    for (size_t t = 0; t < q; t++)
        if (fa[n - q + t] != fb[m - q + t])
            diff_pair(&r, n - q + t, m - q + t);

done:
    report_print(&r);
    /* residue is printed, but the step holds no other host value */
    r.lines -= r.noted;
    if (r.lines == 0) {
        if (st)
            st->identical++;
        if (opts->replay) {
            char line[256];
            snprintf(line, sizeof line,
                     "%s #%" PRIu64 " is replay-safe: identical to #%" PRIu64 " (%zu ops)",
                     opts->replay, b->nth, a->nth, b->nops);
            opts->line(opts->ctx, line);
        }
    } else if (opts->replay) {
        char line[256];
        snprintf(line, sizeof line,
                 "%s #%" PRIu64 " is NOT replay-safe: it froze the %zu host value(s) above",
                 opts->replay, b->nth, r.lines);
        opts->line(opts->ctx, line);
    }
    free(ed);
    return r.lines;
}

static int top_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)((const char *)x + 160);
    uint64_t b = *(const uint64_t *)((const char *)y + 160);
    return a < b ? 1 : a > b ? -1 : 0;
}

static int frozen_cmp(const void *x, const void *y)
{
    const struct atl_frozen *a = x, *b = y;
    return a->n < b->n ? 1 : a->n > b->n ? -1 : strcmp(a->what, b->what);
}

/* One line per kernel parameter that changed: in how many steps, and how
 * ("pos increments every step" is one line, not twenty diffs). */
static void frozen_summary(const struct atl_diff_stats *st, void (*line)(void *, const char *),
                           void *ctx)
{
    if (!st->nfrozen)
        return;
    struct atl_frozen f[64];
    int n = st->nfrozen;
    memcpy(f, st->frozen, (size_t)n * sizeof *f);
    qsort(f, (size_t)n, sizeof *f, frozen_cmp);
    for (int i = 0; i < n && i < 16; i++) {
        char how[160], buf[400];
        if (f[i].n == 1)
            snprintf(how, sizeof how, "changed once, 0x%" PRIx64 " -> 0x%" PRIx64, f[i].v[0],
                     f[i].v[1]);
        else if (f[i].steady)
            snprintf(how, sizeof how, "%+" PRId64 " per step (0x%" PRIx64 " -> 0x%" PRIx64 ")",
                     f[i].delta, f[i].first, f[i].last);
        else if (!f[i].many)
            snprintf(how, sizeof how, "alternates between 2 values (0x%" PRIx64 ", 0x%" PRIx64 ")",
                     f[i].v[0], f[i].v[1]);
        else
            snprintf(how, sizeof how, "random (0x%" PRIx64 " first, 0x%" PRIx64 " last)",
                     f[i].first, f[i].last);
        snprintf(buf, sizeof buf,
                 "trace summary: frozen value: %.160s changed in %" PRIu64 " step%s: %.160s",
                 f[i].what, f[i].n, f[i].n == 1 ? "" : "s", how);
        line(ctx, buf);
    }
    if (n > 16) {
        char buf[96];
        snprintf(buf, sizeof buf, "trace summary: frozen value: %d more parameters changed",
                 n - 16);
        line(ctx, buf);
    }
}

void atl_diff_summary(const struct atl_diff_stats *st, void (*line)(void *, const char *),
                      void *ctx)
{
    char buf[1024];
    snprintf(buf, sizeof buf,
             "trace summary: steps=%" PRIu64 " compared=%" PRIu64 " identical=%" PRIu64
             " differing=%" PRIu64,
             st->steps, st->compared, st->identical, st->compared - st->identical);
    line(ctx, buf);
    frozen_summary(st, line, ctx);
    if (!st->ntop)
        return;
    struct atl_diff_stats tmp = *st;
    _Static_assert(
        offsetof(struct atl_diff_stats, top[0].n) - offsetof(struct atl_diff_stats, top[0]) == 160,
        "top_cmp reads n at 160");
    qsort(tmp.top, (size_t)tmp.ntop, sizeof tmp.top[0], top_cmp);
    size_t l = (size_t)snprintf(buf, sizeof buf, "trace summary: most often differing:");
    for (int i = 0; i < tmp.ntop && i < 8 && l < sizeof buf; i++)
        l += (size_t)snprintf(buf + l, sizeof buf - l, "%s %s (%" PRIu64 "x)", i ? "," : "",
                              tmp.top[i].what, tmp.top[i].n);
    line(ctx, buf);
}

/* ---- JSON lines --------------------------------------------------------------- */

/* The writer formats into a block and hands it to stdio whole: a million-op
 * step is 600 MB of text, and one fputc or fprintf per field made its step
 * end take seconds. Numbers and hex digits are formatted by hand. */
struct jw {
    FILE *f;
    size_t n;
    unsigned long flushes;
    char b[1 << 16];
};

/* Room for `need` more bytes (need <= sizeof b). */
static inline char *jw_room(struct jw *w, size_t need)
{
    if (w->n + need > sizeof w->b) {
        fwrite(w->b, 1, w->n, w->f);
        w->n = 0;
        w->flushes++;
    }
    return w->b + w->n;
}

static inline void jw_put(struct jw *w, const char *s, size_t len)
{
    memcpy(jw_room(w, len), s, len);
    w->n += len;
}

static void jw_cstr(struct jw *w, const char *s)
{
    jw_put(w, s, strlen(s));
}

/* a string literal: its length known at compile time */
#define jw_lit(w, s) jw_put(w, "" s, sizeof(s) - 1)

static void jw_u64(struct jw *w, uint64_t v)
{
    char tmp[20];
    size_t k = 0;
    do
        tmp[k++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    char *d = jw_room(w, k);
    for (size_t i = 0; i < k; i++)
        d[i] = tmp[k - 1 - i];
    w->n += k;
}

static const char hexdig[] = "0123456789abcdef";

/* "0x..." without the quotes, lowercase, no leading zeros (as %#x with 0 as 0x0) */
static void jw_x64(struct jw *w, uint64_t v)
{
    char tmp[16];
    size_t k = 0;
    do
        tmp[k++] = hexdig[v & 15];
    while ((v >>= 4) != 0);
    char *d = jw_room(w, k + 2);
    d[0] = '0', d[1] = 'x';
    for (size_t i = 0; i < k; i++)
        d[2 + i] = tmp[k - 1 - i];
    w->n += k + 2;
}

static void jw_str(struct jw *w, const char *s)
{
    *jw_room(w, 1) = '"';
    w->n++;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char *d = jw_room(w, 6);
        if (c == '"' || c == '\\') {
            d[0] = '\\', d[1] = (char)c;
            w->n += 2;
        } else if (c < 0x20) {
            memcpy(d, "\\u00", 4);
            d[4] = hexdig[c >> 4], d[5] = hexdig[c & 15];
            w->n += 6;
        } else {
            d[0] = (char)c;
            w->n++;
        }
    }
    *jw_room(w, 1) = '"';
    w->n++;
}

/* n bytes as hex digits, in chunks that fit the block */
static void jw_hex(struct jw *w, const uint8_t *p, size_t n)
{
    while (n) {
        size_t k = n < sizeof w->b / 4 ? n : sizeof w->b / 4;
        char *d = jw_room(w, 2 * k);
        for (size_t i = 0; i < k; i++) {
            d[2 * i] = hexdig[p[i] >> 4];
            d[2 * i + 1] = hexdig[p[i] & 15];
        }
        w->n += 2 * k, p += k, n -= k;
    }
}

static void jw_dim(struct jw *w, const char *key, const uint32_t d[3])
{
    jw_cstr(w, key);
    for (int i = 0; i < 3; i++) {
        if (i)
            jw_lit(w, ",");
        else
            jw_lit(w, "[");
        jw_u64(w, d[i]);
    }
    jw_lit(w, "]");
}

/* ,"key":"alloc#N+0xOFF" */
static void jw_ann(struct jw *w, const char *key, const struct atl_ann *an)
{
    jw_lit(w, ",\"");
    jw_cstr(w, key);
    jw_lit(w, "\":\"alloc#");
    jw_u64(w, an->seq);
    jw_lit(w, "+");
    jw_x64(w, an->off);
    jw_lit(w, "\"");
}

/* ,"key":"alloc#N+0xOFF" when the ledger named the address at (op, at). */
static void json_alloc(struct jw *w, const struct atl_step *s, size_t op, uint32_t at,
                       const char *key)
{
    const struct atl_ann *an = atl_step_ann(s, (uint32_t)op, at);
    if (an)
        jw_ann(w, key, an);
}

/* {"step":N,"name":"..." */
static void json_head(struct jw *w, const struct atl_step *s)
{
    jw_lit(w, "{\"step\":");
    jw_u64(w, s->index);
    jw_lit(w, ",\"name\":");
    jw_str(w, s->name);
}

/* Text that every op of a step repeats (its head, its kernel's quoted name):
 * formatted by `put` the first time, as it is written, then copied. n is 0
 * when it did not fit (formatted every time then). */
struct jw_cache {
    size_t n;
    char b[1024];
};

static void jw_cached(struct jw *w, struct jw_cache *c, int fresh,
                      void (*put)(struct jw *, const void *), const void *arg)
{
    if (!fresh && c->n) {
        jw_put(w, c->b, c->n);
        return;
    }
    jw_room(w, sizeof c->b); /* what fits is then written without a flush between */
    size_t start = w->n;
    unsigned long flushes = w->flushes;
    put(w, arg);
    c->n = w->flushes == flushes && w->n - start <= sizeof c->b ? w->n - start : 0;
    memcpy(c->b, w->b + start, c->n);
}

static void put_head(struct jw *w, const void *s)
{
    json_head(w, s);
}

static void put_kernel(struct jw *w, const void *k)
{
    jw_str(w, ((const struct atl_kfn *)k)->mangled);
}

void atl_step_write_json(const struct atl_step *s, FILE *f)
{
    struct jw *w = malloc(sizeof *w);
    if (!w)
        return;
    w->f = f, w->n = 0, w->flushes = 0;
    /* annotations are in (op, at) order: one pass alongside the ops */
    size_t an = 0;
    struct jw_cache head, kname;
    const struct atl_kfn *klast = NULL;
    for (size_t i = 0; i < s->nops; i++) {
        const struct atl_op *o = &s->ops[i];
        jw_cached(w, &head, i == 0, put_head, s);
        jw_lit(w, ",\"op\":");
        jw_u64(w, i);
        jw_lit(w, ",\"stream\":\"");
        jw_x64(w, o->stream);
        jw_lit(w, "\",\"kind\":\"");
        jw_cstr(w, kind_name(o->kind));
        jw_lit(w, "\"");
        while (an < s->nann && s->ann[an].op < i)
            an++;
        switch (o->kind) {
        case ATL_OP_LAUNCH: {
            const struct atl_kfn *k = o->u.k.kfn;
            jw_lit(w, ",\"kernel\":");
            jw_cached(w, &kname, k != klast, put_kernel, k);
            klast = k;
            jw_dim(w, ",\"grid\":", o->u.k.grid);
            jw_dim(w, ",\"block\":", o->u.k.block);
            jw_lit(w, ",\"shmem\":");
            jw_u64(w, o->shmem);
            uint32_t cl[3] = {o->cluster[0], o->cluster[1], o->cluster[2]};
            jw_dim(w, ",\"cluster\":", cl);
            if (k->exact)
                jw_lit(w, ",\"exact\":1,\"params\":[");
            else
                jw_lit(w, ",\"exact\":0,\"params\":[");
            const uint8_t *p = atl_op_bytes(s, o);
            for (unsigned j = 0; j < k->nparams; j++) {
                if (j)
                    jw_lit(w, ",");
                jw_lit(w, "{\"i\":");
                jw_u64(w, j);
                jw_lit(w, ",\"off\":");
                jw_u64(w, k->off[j]);
                jw_lit(w, ",\"size\":");
                jw_u64(w, k->size[j]);
                jw_lit(w, ",\"hex\":\"");
                uint32_t len = k->off[j] >= k->total ? 0 : k->total - k->off[j];
                jw_hex(w, p + k->off[j], k->size[j] < len ? k->size[j] : len);
                jw_lit(w, "\"");
                if (j < 64 && (__atomic_load_n(&k->residue, __ATOMIC_RELAXED) >> j & 1))
                    jw_lit(w, ",\"residue\":1");
                int named = 0; /* the first word names an allocation */
                for (uint32_t wd = 0; wd + 8 <= k->size[j]; wd += 8) {
                    uint32_t at = k->off[j] + wd;
                    const struct atl_ann *a = NULL;
                    /* this op's annotations start at `an` (a few: no search) */
                    for (size_t x = an; x < s->nann && s->ann[x].op == i && !a; x++)
                        if (s->ann[x].at == at)
                            a = &s->ann[x];
                    if (!a)
                        continue;
                    named |= wd == 0;
                    char key[24] = "alloc";
                    if (wd)
                        snprintf(key, sizeof key, "alloc%u", wd);
                    jw_ann(w, key, a);
                }
                /* a pointer parameter holding host memory (ATL_ANN_HOST) */
                if (k->size[j] == 8 && !named && k->off[j] + 8 <= k->total) {
                    uint64_t v;
                    memcpy(&v, p + k->off[j], 8);
                    if (atl_host_addr(v))
                        jw_lit(w, ",\"host\":1");
                }
                jw_lit(w, "}");
            }
            jw_lit(w, "]}\n");
            break;
        }
        case ATL_OP_MEMSET:
            jw_lit(w, ",\"ptr\":\"");
            jw_x64(w, o->u.m.ptr);
            jw_lit(w, "\",\"value\":");
            jw_u64(w, o->shmem);
            jw_lit(w, ",\"elem\":");
            jw_u64(w, o->sub);
            jw_lit(w, ",\"count\":");
            jw_u64(w, o->u.m.count);
            jw_lit(w, ",\"pitch\":");
            jw_u64(w, o->u.m.pitch);
            jw_lit(w, ",\"height\":");
            jw_u64(w, o->u.m.height);
            json_alloc(w, s, i, ATL_ANN_DST, "alloc");
            jw_lit(w, "}\n");
            break;
        case ATL_OP_COPY:
            jw_lit(w, ",\"dir\":\"");
            jw_cstr(w, atl_dir_name(o->sub));
            jw_lit(w, "\",\"dst\":\"");
            jw_x64(w, o->u.c.dst);
            jw_lit(w, "\",\"src\":\"");
            jw_x64(w, o->u.c.src);
            jw_lit(w, "\",\"bytes\":");
            jw_u64(w, o->u.c.w * o->u.c.h * o->u.c.d);
            jw_lit(w, ",\"width\":");
            jw_u64(w, o->u.c.w);
            jw_lit(w, ",\"height\":");
            jw_u64(w, o->u.c.h);
            jw_lit(w, ",\"depth\":");
            jw_u64(w, o->u.c.d);
            json_alloc(w, s, i, ATL_ANN_DST, "dstalloc");
            json_alloc(w, s, i, ATL_ANN_SRC, "srcalloc");
            jw_lit(w, "}\n");
            break;
        default:
            jw_lit(w, ",\"exec\":\"");
            jw_x64(w, o->u.g.exec);
            jw_lit(w, "\"}\n");
        }
    }
    json_head(w, s);
    jw_lit(w, ",\"thread\":");
    jw_str(w, s->thread);
    jw_lit(w, ",\"stream\":\"");
    jw_x64(w, s->stream);
    jw_lit(w, "\",\"end\":true,\"ops\":");
    jw_u64(w, s->nops);
    jw_lit(w, "}\n");
    fwrite(w->b, 1, w->n, f);
    free(w);
}

/* ---- reading JSON lines back ------------------------------------------------------ */

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

struct jp {
    const char *p;
    const char *err;
    char errbuf[64]; /* a message naming what was found (err points here) */
};

static inline void ws(struct jp *j)
{
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\r')
        j->p++;
}

static __attribute__((noinline)) int lit_fail(struct jp *j, char c);

/* The next character must be c (after white space). Inline: a launch line
 * has about a hundred of them. */
static inline int lit(struct jp *j, char c)
{
    if (__builtin_expect(*j->p == c, 1)) {
        j->p++;
        return 0;
    }
    ws(j);
    if (*j->p == c) {
        j->p++;
        return 0;
    }
    return lit_fail(j, c);
}

static int lit_fail(struct jp *j, char c)
{
    if (!j->err) {
        static __thread char msg[64];
        if (*j->p == '\0' || *j->p == '\n')
            snprintf(msg, sizeof msg, "expected '%c', the line ends (truncated?)", c);
        else
            snprintf(msg, sizeof msg, "expected '%c', found '%c'", c, *j->p);
        j->err = msg;
    }
    return -1;
}

/* Hex digit values (-1: not one), for the hand-written number parsers. */
static const signed char hexval[256] = {
    ['0'] = 0,  ['1'] = 1,  ['2'] = 2,  ['3'] = 3,  ['4'] = 4,  ['5'] = 5,  ['6'] = 6,  ['7'] = 7,
    ['8'] = 8,  ['9'] = 9,  ['a'] = 10, ['b'] = 11, ['c'] = 12, ['d'] = 13, ['e'] = 14, ['f'] = 15,
    ['A'] = 10, ['B'] = 11, ['C'] = 12, ['D'] = 13, ['E'] = 14, ['F'] = 15,
};
static inline int hexdigit(char c)
{
    return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'f') ? hexval[(unsigned char)c]
                                                                          : -1;
}

/* A string without escapes, in place: *start and *len (the quotes
 * excluded; j->p after the closing one). Returns 1, j->p unmoved, when the
 * string has an escape or does not end on its line: jstr then reads it. */
static const uint8_t str_stop[256] = {['"'] = 1, ['\\'] = 1, ['\0'] = 1, ['\n'] = 1};

static inline int jspan(struct jp *j, const char **start, size_t *len)
{
    if (lit(j, '"'))
        return -1;
    const char *q = j->p;
    while (!str_stop[(unsigned char)*q])
        q++;
    if (*q != '"') {
        j->p--; /* back to the quote */
        return 1;
    }
    *start = j->p, *len = (size_t)(q - j->p);
    j->p = q + 1;
    return 0;
}

static int jstr(struct jp *j, char *out, size_t len)
{
    const char *st;
    size_t n = 0;
    int sp = jspan(j, &st, &n);
    if (sp <= 0) { /* no escape (the writer's strings): copied at once, cut to len */
        if (sp == 0) {
            n = n < len ? n : len - 1;
            memcpy(out, st, n);
            out[n] = '\0';
        }
        return sp;
    }
    if (lit(j, '"'))
        return -1;
    n = 0;
    for (;;) {
        /* the plain run up to the next quote, escape or line end, at once */
        const char *q = j->p;
        while (!str_stop[(unsigned char)*q])
            q++;
        size_t run = (size_t)(q - j->p);
        if (run) {
            size_t take = n + run < len ? run : (n + 1 < len ? len - 1 - n : 0);
            memcpy(out + n, j->p, take);
            n += take;
            j->p = q;
        }
        char c = *j->p++;
        if (c == '"')
            break;
        if (c == '\0' || c == '\n') {
            j->err = "unterminated string (truncated?)";
            j->p--;
            return -1;
        }
        if (c == '\\') {
            c = *j->p++;
            switch (c) {
            case 'n':
                c = '\n';
                break;
            case 't':
                c = '\t';
                break;
            case 'r':
                c = '\r';
                break;
            case 'b':
                c = '\b';
                break;
            case 'f':
                c = '\f';
                break;
            case 'u': {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *j->p++;
                    if (!isxdigit((unsigned char)h)) {
                        j->err = "bad \\u escape";
                        return -1;
                    }
                    v = v * 16 +
                        (unsigned)(isdigit((unsigned char)h) ? h - '0' : (h | 32) - 'a' + 10);
                }
                c = v < 0x80 ? (char)v : '?';
                break;
            }
            case '"':
            case '\\':
            case '/':
                break;
            default:
                j->err = "bad escape in string";
                return -1;
            }
        }
        if (n + 1 < len)
            out[n++] = c;
    }
    out[n] = '\0';
    return 0;
}

/* A key: lowercase letters and digits as the writer writes them, read in
 * place with no call; anything else (an escape, white space) through jstr. */
static inline int jkey(struct jp *j, char *key, size_t len)
{
    const char *q = j->p + 1;
    size_t n = 0;
    if (*j->p == '"')
        while (n + 1 < len && ((q[n] >= 'a' && q[n] <= 'z') || (q[n] >= '0' && q[n] <= '9')))
            n++;
    if (n == 0 || q[n] != '"')
        return jstr(j, key, len);
    memcpy(key, q, n);
    key[n] = '\0';
    j->p = q + n + 1;
    return 0;
}

static int jnum(struct jp *j, uint64_t *v)
{
    ws(j);
    if (*j->p < '0' || *j->p > '9') {
        j->err = "expected a number";
        return -1;
    }
    uint64_t x = 0;
    for (; *j->p >= '0' && *j->p <= '9'; j->p++) {
        unsigned d = (unsigned)(*j->p - '0');
        if (x > (UINT64_MAX - d) / 10) {
            j->err = "number out of range";
            return -1;
        }
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

static int jhex(struct jp *j, uint64_t *v)
{
    /* what the writer writes, "0x" and 1 to 16 digits, at once; anything
     * else as strtoull reads it */
    const char *q = j->p;
    while (*q == ' ' || *q == '\t' || *q == '\r')
        q++;
    if (q[0] == '"' && q[1] == '0' && q[2] == 'x') {
        uint64_t x = 0;
        int nd = 0, d;
        for (q += 3; nd <= 16 && (d = hexdigit(*q)) >= 0; q++, nd++)
            x = x << 4 | (uint64_t)d;
        if (nd >= 1 && nd <= 16 && *q == '"') {
            *v = x;
            j->p = q + 1;
            return 0;
        }
    }
    char buf[40];
    if (jstr(j, buf, sizeof buf))
        return -1;
    char *end;
    errno = 0;
    *v = strtoull(buf, &end, 16);
    if (errno || end == buf || *end) {
        j->err = "expected a \"0x...\" value";
        return -1;
    }
    return 0;
}

static int jdim(struct jp *j, uint32_t d[3])
{
    if (lit(j, '['))
        return -1;
    for (int i = 0; i < 3; i++) {
        uint64_t v;
        if ((i && lit(j, ',')) || jnum(j, &v))
            return -1;
        d[i] = (uint32_t)v;
    }
    return lit(j, ']');
}

static int jbool(struct jp *j, int *v)
{
    ws(j);
    if (strncmp(j->p, "true", 4) == 0)
        *v = 1, j->p += 4;
    else if (strncmp(j->p, "false", 5) == 0)
        *v = 0, j->p += 5;
    else {
        j->err = "expected true or false";
        return -1;
    }
    return 0;
}

/* One parsed line. */
struct jline {
    uint64_t step, op, nops;
    int has_step, has_op, end;
    char name[64], kind[16], dir[16], thread[24];
    struct atl_op o;
    unsigned np;
    uint64_t residue; /* "residue":1 on parameter i: bit i */
    /* not cleared per line (a million lines would clear 5 GB): kernel is
     * empty until read, off and size are read up to np */
    char kernel[1024];
    uint32_t off[512], size[512];
    uint8_t *pbytes;    /* owned by the reader */
    size_t pcap, pused; /* pused: bytes written since the last clear */
};

/* "alloc#N+0xOFF"; -1 when it does not begin so. */
static int parse_alloc(const char *a, uint64_t *seq, uint64_t *off)
{
    if (memcmp(a, "alloc#", 6) != 0 || a[6] < '0' || a[6] > '9')
        return -1;
    uint64_t x = 0;
    for (a += 6; *a >= '0' && *a <= '9'; a++) {
        unsigned d = (unsigned)(*a - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    if (a[0] != '+' || a[1] != '0' || a[2] != 'x' || hexdigit(a[3]) < 0)
        return -1;
    *seq = x, x = 0;
    int d;
    for (a += 3; (d = hexdigit(*a)) >= 0; a++) {
        if (x >> 60)
            return -1;
        x = x << 4 | (uint64_t)d;
    }
    *off = x;
    return 0; /* text after the digits is ignored, as the sscanf this replaced did */
}

/* hlen hex digits into n bytes: exactly 2n digits. */
static int hexbytes(const char *h, size_t hlen, uint8_t *out, size_t n)
{
    if (hlen != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int hi = hexdigit(h[2 * i]), lo = hexdigit(h[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* key is "s": the first character decides most comparisons without a call */
#define KEY_IS(s) (key[0] == (s)[0] && strcmp(key, s) == 0)

static int jparams(struct jp *j, struct jline *L, struct atl_step *annstep, uint32_t opidx)
{
    /* 128 KiB: on the heap, once per thread. As TLS it made the library's
     * static TLS block too large for dlopen (NVTX injection loads us so). */
    enum { HEXMAX = 65536 * 2 + 8 };
    static __thread char *hex;
    if (!hex && !(hex = malloc(HEXMAX))) {
        j->err = "out of memory";
        return -1;
    }
    if (lit(j, '['))
        return -1;
    ws(j);
    if (*j->p == ']') {
        j->p++;
        return 0;
    }
    for (;;) {
        if (L->np >= 512) {
            j->err = "too many parameters";
            return -1;
        }
        uint64_t i = 0, off = 0, size = 0, resid = 0, host = 0;
        int got_hex = 0;
        const char *hx = NULL; /* the digits, in the line or (escaped) copied to hex */
        size_t hxlen = 0;
        /* "alloc" names the pointer in the parameter's first word, "allocW"
         * the one W bytes in (a larger by-value parameter) */
        enum { MAXA = 64 };
        struct {
            uint64_t w, seq, off;
        } al[MAXA];
        int nal = 0;
        if (lit(j, '{'))
            return -1;
        for (;;) {
            char key[16];
            if (jkey(j, key, sizeof key) || lit(j, ':'))
                return -1;
            if (KEY_IS("i")) {
                if (jnum(j, &i))
                    return -1;
            } else if (KEY_IS("off")) {
                if (jnum(j, &off))
                    return -1;
            } else if (KEY_IS("size")) {
                if (jnum(j, &size))
                    return -1;
            } else if (KEY_IS("hex")) {
                int sp = jspan(j, &hx, &hxlen);
                if (sp < 0 || (sp > 0 && jstr(j, hex, HEXMAX)))
                    return -1;
                if (sp > 0)
                    hx = hex, hxlen = strlen(hex);
                got_hex = 1;
            } else if (strcmp(key, "residue") == 0) {
                if (jnum(j, &resid))
                    return -1;
            } else if (strcmp(key, "host") == 0) {
                if (jnum(j, &host))
                    return -1;
            } else if (strncmp(key, "alloc", 5) == 0) {
                char alloc[64], *end;
                uint64_t w = key[5] ? strtoull(key + 5, &end, 10) : 0;
                if ((key[5] && (*end || w % 8)) || jstr(j, alloc, sizeof alloc)) {
                    j->err = "bad alloc field";
                    return -1;
                }
                if (nal < MAXA && parse_alloc(alloc, &al[nal].seq, &al[nal].off) == 0)
                    al[nal++].w = w;
            } else {
                j->err = "unknown parameter field";
                return -1;
            }
            ws(j);
            if (*j->p == ',') {
                j->p++;
                continue;
            }
            if (lit(j, '}'))
                return -1;
            break;
        }
        if (!got_hex || i != L->np || size > 65536 || off > 65536) {
            j->err = "bad parameter record";
            return -1;
        }
        if (off + size > L->pused)
            L->pused = off + size;
        if (off + size > L->pcap || !L->pbytes) {
            size_t nc = off + size + 256;
            uint8_t *nb = realloc(L->pbytes, nc);
            if (!nb) {
                j->err = "out of memory";
                return -1;
            }
            memset(nb + L->pcap, 0, nc - L->pcap);
            L->pbytes = nb, L->pcap = nc;
        }
        if (hexbytes(hx, hxlen, L->pbytes + off, size)) {
            j->err = "bad hex bytes in a parameter";
            return -1;
        }
        L->off[L->np] = (uint32_t)off, L->size[L->np] = (uint32_t)size;
        if (resid && L->np < 64)
            L->residue |= 1ull << L->np;
        for (int a = 0; a < nal; a++)
            if (al[a].w + 8 <= size && (a == 0 || al[a].w > al[a - 1].w))
                atl_step_annotate(annstep, opidx, (uint32_t)(off + al[a].w), al[a].seq, al[a].off);
        if (host && size == 8 && nal == 0)
            atl_step_annotate(annstep, opidx, (uint32_t)off, ATL_ANN_HOST, 0);
        L->np++;
        ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        return lit(j, ']');
    }
}

static int parse_line(struct jp *j, struct jline *L, struct atl_step *annstep, uint32_t opidx)
{
    uint64_t v;
    if (lit(j, '{'))
        return -1;
    for (;;) {
        char key[16];
        if (jkey(j, key, sizeof key) || lit(j, ':'))
            return -1;
        int rc = 0;
        if (KEY_IS("step"))
            rc = jnum(j, &L->step), L->has_step = 1;
        else if (KEY_IS("name"))
            rc = jstr(j, L->name, sizeof L->name);
        else if (KEY_IS("op"))
            rc = jnum(j, &L->op), L->has_op = 1;
        else if (KEY_IS("end"))
            rc = jbool(j, &L->end);
        else if (KEY_IS("ops"))
            rc = jnum(j, &L->nops);
        else if (KEY_IS("thread"))
            rc = jstr(j, L->thread, sizeof L->thread);
        else if (KEY_IS("stream"))
            rc = jhex(j, &L->o.stream);
        else if (KEY_IS("kind"))
            rc = jstr(j, L->kind, sizeof L->kind);
        else if (KEY_IS("kernel"))
            rc = jstr(j, L->kernel, sizeof L->kernel);
        else if (KEY_IS("grid"))
            rc = jdim(j, L->o.u.k.grid);
        else if (KEY_IS("block"))
            rc = jdim(j, L->o.u.k.block);
        else if (KEY_IS("cluster")) {
            uint32_t c[3];
            rc = jdim(j, c);
            for (int i = 0; i < 3; i++)
                L->o.cluster[i] = (uint8_t)c[i];
        } else if (KEY_IS("shmem") || KEY_IS("value")) {
            rc = jnum(j, &v);
            L->o.shmem = (uint32_t)v;
        } else if (KEY_IS("exact")) {
            rc = jnum(j, &v);
        } else if (KEY_IS("params"))
            rc = jparams(j, L, annstep, opidx);
        else if (KEY_IS("ptr"))
            rc = jhex(j, &L->o.u.m.ptr);
        else if (KEY_IS("elem")) {
            rc = jnum(j, &v);
            L->o.sub = (uint8_t)v;
        } else if (KEY_IS("count"))
            rc = jnum(j, &L->o.u.m.count);
        else if (KEY_IS("pitch"))
            rc = jnum(j, &L->o.u.m.pitch);
        else if (KEY_IS("height")) {
            rc = jnum(j, &v);
            L->o.u.m.height = v; /* memset */
            L->o.u.c.h = v;      /* copy: the same slot is not shared, see below */
        } else if (KEY_IS("dir"))
            rc = jstr(j, L->dir, sizeof L->dir);
        else if (KEY_IS("dst"))
            rc = jhex(j, &L->o.u.c.dst);
        else if (KEY_IS("src"))
            rc = jhex(j, &L->o.u.c.src);
        else if (KEY_IS("bytes"))
            rc = jnum(j, &v);
        else if (KEY_IS("width"))
            rc = jnum(j, &L->o.u.c.w);
        else if (KEY_IS("depth"))
            rc = jnum(j, &L->o.u.c.d);
        else if (KEY_IS("exec"))
            rc = jhex(j, &L->o.u.g.exec);
        else if (KEY_IS("alloc") || KEY_IS("dstalloc") || KEY_IS("srcalloc")) {
            /* a memset's or copy's address by allocation (written dst first) */
            char alloc[64];
            uint64_t seq, off;
            rc = jstr(j, alloc, sizeof alloc);
            if (!rc && parse_alloc(alloc, &seq, &off) == 0)
                atl_step_annotate(annstep, opidx, key[0] == 's' ? ATL_ANN_SRC : ATL_ANN_DST, seq,
                                  off);
        } else {
            /* named, so a newer writer's field is recognisable (key is at most 15 bytes; the
             * reader of the message strips control bytes) */
            snprintf(j->errbuf, sizeof j->errbuf, "unknown field \"%s\"", key);
            j->err = j->errbuf;
            return -1;
        }
        if (rc)
            return -1;
        ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (lit(j, '}'))
            return -1;
        ws(j);
        if (*j->p && *j->p != '\n') {
            j->err = "text after the record";
            return -1;
        }
        return 0;
    }
}

/* Lines come out of a block read with fread (1 MiB at a time), not a getc
 * per character: a million-op file is 600 MB. The fuzz build reads 61 bytes
 * at a time, so its small inputs cross blocks everywhere. */
#ifndef ATL_READ_BLOCK
#define ATL_READ_BLOCK ((size_t)1 << 20)
#endif
struct lines {
    FILE *f;
    char *buf;
    size_t cap, start, end; /* the unread bytes are buf[start, end) */
    int eof;
};

/* The next line of any length, its newline replaced by a NUL; NULL at end
 * of file or out of memory (*oom set). *complete is 0 when the file ended
 * without a newline. */
static char *read_line(struct lines *r, int *complete, int *oom)
{
    size_t scanned = r->start;
    *complete = 0;
    for (;;) {
        char *nl = r->end > scanned ? memchr(r->buf + scanned, '\n', r->end - scanned) : NULL;
        if (nl) {
            char *line = r->buf + r->start;
            *nl = '\0';
            r->start = (size_t)(nl - r->buf) + 1;
            *complete = 1;
            return line;
        }
        if (r->eof) {
            if (r->start == r->end)
                return NULL;
            if (r->end == r->cap) { /* room for the NUL */
                char *nb = realloc(r->buf, r->cap + 1);
                if (!nb) {
                    *oom = 1;
                    return NULL;
                }
                r->buf = nb, r->cap++;
            }
            char *line = r->buf + r->start;
            r->buf[r->end] = '\0';
            r->start = r->end;
            return line;
        }
        /* the line goes on past the block: move it to the front (or grow) and read more */
        size_t have = r->end - r->start;
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, have);
            r->start = 0, r->end = have;
        }
        if (r->end == r->cap) {
            size_t nc = r->cap ? r->cap * 2 : ATL_READ_BLOCK;
            char *nb = realloc(r->buf, nc);
            if (!nb) {
                *oom = 1;
                return NULL;
            }
            r->buf = nb, r->cap = nc;
        }
        scanned = r->end;
        size_t got = fread(r->buf + r->end, 1, r->cap - r->end, r->f);
        r->end += got;
        if (got == 0)
            r->eof = 1;
    }
}

int atl_trace_read(FILE *f, int (*fn)(void *ctx, struct atl_step *s), void *ctx, char *err,
                   size_t errlen)
{
    struct lines rd = {.f = f};
    size_t lineno = 0;
    int complete, rc = -1, open = 0, steps = 0, oom = 0;
    const struct atl_kfn *lastk = NULL; /* the kernel of the last launch read */
    struct atl_step cur;
    struct jline *L = calloc(1, sizeof *L);
    atl_step_init(&cur, "");
    if (errlen)
        err[0] = '\0';
    if (!L) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (;;) {
        char *line = read_line(&rd, &complete, &oom);
        if (!line && oom) {
            snprintf(err, errlen, "line %zu: out of memory", lineno + 1);
            goto out;
        }
        if (!line)
            break;
        lineno++;
        if (!complete && steps > 0) {
            /* the writer only writes whole lines, but the kernel may cut a
             * write when the process is killed: keep the whole steps */
            snprintf(err, errlen,
                     "line %zu: the last line is incomplete (the run was killed?); "
                     "skipped",
                     lineno);
            break;
        }
        struct jp j = {.p = line};
        ws(&j);
        if (!*j.p && complete)
            continue; /* blank line */
        memset(L, 0, offsetof(struct jline, kernel));
        L->kernel[0] = '\0';
        if (L->pused)
            memset(L->pbytes, 0, L->pused);
        L->pused = 0;
        if (parse_line(&j, L, &cur, (uint32_t)cur.nops) != 0) {
            snprintf(err, errlen, "line %zu: %s", lineno, j.err ? j.err : "not a trace record");
            goto out;
        }
        if (!complete) {
            snprintf(err, errlen, "line %zu: the file ends in the middle of a line (truncated?)",
                     lineno);
            goto out;
        }
        if (!L->has_step) {
            snprintf(err, errlen, "line %zu: record without a \"step\"", lineno);
            goto out;
        }
        if (!open) { /* cur is empty (annotations of this line aside) */
            snprintf(cur.name, sizeof cur.name, "%s", L->name);
            cur.index = L->step;
            open = 1;
        } else if (L->step != cur.index || strcmp(L->name, cur.name) != 0) {
            snprintf(err, errlen,
                     "line %zu: step %" PRIu64 " begins before step %" PRIu64 " ended (truncated?)",
                     lineno, L->step, cur.index);
            goto out;
        }
        if (L->end) {
            if (L->nops != cur.nops) {
                snprintf(err, errlen,
                         "line %zu: step %" PRIu64
                         " ends with %zu ops, its end record says %" PRIu64,
                         lineno, cur.index, cur.nops, L->nops);
                goto out;
            }
            steps++;
            /* the end record says whose step it was */
            snprintf(cur.thread, sizeof cur.thread, "%s", L->thread);
            cur.stream = L->o.stream;
            struct atl_step done = cur;
            atl_step_init(&cur, "");
            open = 0;
            if (fn(ctx, &done) != 0) {
                snprintf(err, errlen, "line %zu: out of memory", lineno);
                goto out;
            }
            continue;
        }
        if (!L->has_op) {
            snprintf(err, errlen, "line %zu: record without an \"op\" or an \"end\"", lineno);
            goto out;
        }
        if (L->op != cur.nops) {
            snprintf(err, errlen, "line %zu: op %" PRIu64 " out of order (expected op %zu)", lineno,
                     L->op, cur.nops);
            goto out;
        }
        if (!strcmp(L->kind, "launch")) {
            if (!L->kernel[0]) {
                snprintf(err, errlen, "line %zu: launch without a kernel", lineno);
                goto out;
            }
            L->o.kind = ATL_OP_LAUNCH;
            /* a run of launches of one kernel: the last one's record again */
            if (lastk && lastk->nparams == L->np && strcmp(lastk->mangled, L->kernel) == 0 &&
                (L->np == 0 || (memcmp(lastk->off, L->off, L->np * 4) == 0 &&
                                memcmp(lastk->size, L->size, L->np * 4) == 0)))
                L->o.u.k.kfn = lastk;
            else
                L->o.u.k.kfn = lastk = atl_kfn_intern(L->kernel, NULL, L->np, L->off, L->size);
            if (!L->o.u.k.kfn) {
                snprintf(err, errlen, "line %zu: out of memory", lineno);
                goto out;
            }
            /* learned by the recording process: kept for every later op
             * of the kernel (the record is shared) */
            if (L->residue)
                __atomic_fetch_or((uint64_t *)&L->o.u.k.kfn->residue, L->residue, __ATOMIC_RELAXED);
            L->o.u.k.bytes = (uintptr_t)L->pbytes;
        } else if (!strcmp(L->kind, "memset")) {
            L->o.kind = ATL_OP_MEMSET;
        } else if (!strcmp(L->kind, "copy")) {
            L->o.kind = ATL_OP_COPY;
            int d = atl_dir_parse(L->dir);
            L->o.sub = (uint8_t)(d < 0 ? ATL_DIR_OTHER : d);
        } else if (!strcmp(L->kind, "graph")) {
            L->o.kind = ATL_OP_GRAPH;
        } else {
            snprintf(err, errlen, "line %zu: unknown op kind \"%s\"", lineno, L->kind);
            goto out;
        }
        if (atl_step_push(&cur, &L->o) != 0) {
            snprintf(err, errlen, "line %zu: out of memory", lineno);
            goto out;
        }
    }
    if (open && steps > 0) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n,
                 "%sthe file ends inside step %" PRIu64
                 " (the run was killed?): its %zu ops skipped",
                 n ? "; " : "", cur.index, cur.nops);
    } else if (open) {
        snprintf(err, errlen, "line %zu: the file ends inside step %" PRIu64 " (truncated?)",
                 lineno, cur.index);
        goto out;
    }
    if (steps == 0) {
        if (lineno == 0)
            snprintf(err, errlen, "the file is empty (no steps)");
        else
            snprintf(err, errlen, "line %zu: no complete step in the file", lineno);
        goto out;
    }
    rc = 0;
out:
    atl_step_free(&cur);
    free(L->pbytes);
    free(L);
    free(rd.buf);
    return rc;
}
