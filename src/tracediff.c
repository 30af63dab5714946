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

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fmt atl_fmt

/* out = a sep b, cut to fit, as snprintf's "%s%s%s" would: without printf, for the names a
 * step's diff makes for every change it folds. */
static void cat3(char *out, size_t len, const char *a, const char *sep, const char *b)
{
    size_t o = 0;
    for (const char *part[3] = {a, sep, b}, **p = part; p < part + 3; p++)
        for (const char *c = *p; *c && o + 1 < len; c++)
            out[o++] = *c;
    if (len)
        out[o] = '\0';
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    return atl_grow(p, cap, need, elem, 64);
}

size_t atl_fmt(char *buf, size_t len, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, len, f, ap);
    va_end(ap);
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
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

/* A kernel's part of an op's shape: its mangled name and parameter layout
 * (count, and the block's bytes: an extern "C" name says nothing of its
 * parameters, and XLA's autotuner compiles one fusion name in several
 * modules, 16 bytes of parameters in one and 304 in another: another kernel,
 * so a new shape, not a launch that changed), hashed once per kernel record
 * (the diff of a step with 55 kernels in turn hashed a name per op). */
static uint64_t kfn_shape(const struct atl_kfn *k)
{
    if (!k)
        return 0;
    uint64_t h = __atomic_load_n(&k->shapeh, __ATOMIC_RELAXED);
    if (!h) {
        h = mix(mix(str_hash(k->mangled), k->nparams), k->total) | 1;
        /* the record is shared and this is a cache: const only to the diff */
        __atomic_store_n(&((struct atl_kfn *)k)->shapeh, h, __ATOMIC_RELAXED);
    }
    return h;
}

/* Shape: what makes two ops "the same op" for alignment. */
static uint64_t shape_hash(const struct atl_op *o)
{
    uint64_t h = mix(0x1234, o->kind);
    if (o->kind == ATL_OP_LAUNCH)
        h = mix(h, kfn_shape(o->u.k.kfn));
    else if (o->kind != ATL_OP_GRAPH)
        h = mix(h, o->sub);
    return h;
}

uint64_t atl_step_shape(const struct atl_step *cs)
{
    struct atl_step *s = (struct atl_step *)cs; /* a cache */
    if (s->shapesum)
        return s->shapesum;
    uint64_t h = mix(0x5ba9e, s->nops);
    if (s->shape) {
        for (size_t i = 0; i < s->nops; i++)
            h = mix(h, s->shape[i]);
    } else {
        /* a run of one kernel's launches hashes its kernel once */
        const struct atl_kfn *last = NULL;
        uint64_t lasth = 0;
        for (size_t i = 0; i < s->nops; i++) {
            const struct atl_op *o = &s->ops[i];
            if (o->kind == ATL_OP_LAUNCH && o->u.k.kfn == last) {
                h = mix(h, lasth);
                continue;
            }
            uint64_t x = shape_hash(o);
            if (o->kind == ATL_OP_LAUNCH)
                last = o->u.k.kfn, lasth = x;
            h = mix(h, x);
        }
    }
    s->shapesum = h ? h : 1;
    return s->shapesum;
}

/* Everything a graph would freeze (the stream is not: a graph replays on
 * whatever stream it is launched into). */
/* A pointer resolved to alloc#N+OFF hashes as that name, not as its
 * address: two processes (two ranks, or two runs given to atlas-diff) place
 * the same allocation at different addresses. Within one process one name
 * is one address, so the live diff sees no change. */
/* `it` walks the step's notes alongside the ops (no search per op). */
static uint64_t params_hash(uint64_t h, const struct atl_step *s, const struct atl_op *o,
                            struct atl_notes *it)
{
    const struct atl_kfn *k = o->u.k.kfn;
    const uint8_t *p = atl_op_bytes(s, o);
    uint8_t tmp[4096];
    int copied = 0;
    struct atl_ann an[16];
    if (k->total == 0 || k->total > sizeof tmp)
        return atl_hash_bytes(h, p, k->total);
    size_t n;
    do {
        n = atl_notes_get(it, an, 16);
        for (size_t i = 0; i < n; i++) {
            /* host memory keeps its value in the hash: two runs' differ, and
             * their diff then decides (equal across runs, compared within one) */
            if (an[i].at + 8 <= k->total && an[i].seq != ATL_ANN_HOST) {
                if (!copied++)
                    memcpy(tmp, p, k->total);
                uint64_t v = mix(an[i].seq, an[i].off);
                memcpy(tmp + an[i].at, &v, 8);
            }
        }
    } while (n == 16); /* fewer: that was the last */
    return atl_hash_bytes(h, copied ? tmp : p, k->total);
}

/* A memset's or copy's addresses: their allocation and offset where the
 * ledger knew them (the same buffer in two processes), else the address
 * (*dst and *src hold it on entry). The first note of each counts. */
static void addr_keys(struct atl_notes *it, uint64_t *dst, uint64_t *src)
{
    struct atl_ann an;
    int got = 0;
    while (atl_notes_next(it, &an))
        if (an.at == ATL_ANN_DST && !(got & 1))
            *dst = mix(an.seq, an.off), got |= 1;
        else if (an.at == ATL_ANN_SRC && !(got & 2))
            *src = mix(an.seq, an.off), got |= 2;
}

static uint64_t full_hash(const struct atl_step *s, const struct atl_op *o, uint64_t shape,
                          struct atl_notes *it)
{
    uint64_t h = mix(shape, o->shmem);
    h = mix(h,
            (uint64_t)o->cluster[0] | (uint64_t)o->cluster[1] << 8 | (uint64_t)o->cluster[2] << 16);
    uint64_t dst, src = 0;
    switch (o->kind) {
    case ATL_OP_LAUNCH:
        for (int i = 0; i < 3; i++)
            h = mix(h, (uint64_t)o->u.k.grid[i] << 32 | o->u.k.block[i]);
        if (o->u.k.kfn)
            h = params_hash(h, s, o, it);
        break;
    case ATL_OP_MEMSET:
        dst = o->u.m.ptr;
        addr_keys(it, &dst, &src); /* a memset has no source */
        h = mix(h, dst);
        h = mix(mix(mix(h, o->u.m.count), o->u.m.pitch), o->u.m.height);
        break;
    case ATL_OP_COPY:
        dst = o->u.c.dst, src = o->u.c.src;
        addr_keys(it, &dst, &src);
        h = mix(mix(h, dst), src);
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
        if (p[n] == '(' && strncmp(p + n, anon, sizeof anon - 1) == 0) {
            n += sizeof anon - 1;
            continue;
        }
        if (p[n] == '(' || p[n] == '<')
            break;
        out[o++] = p[n++];
    }
    out[o] = '\0';
}

/* base_name of k's demangled name, made once per kernel (a step's diff names a kernel for
 * every op whose parameters changed): published as atl_kfn_pretty publishes the name. */
static const char *kfn_base(const struct atl_kfn *ck)
{
    struct atl_kfn *k = (struct atl_kfn *)ck; /* base is filled lazily */
    const char *have = __atomic_load_n(&k->base, __ATOMIC_ACQUIRE);
    if (have)
        return have;
    char b[120];
    base_name(atl_kfn_pretty(k), b, sizeof b);
    char *mine = strdup(b);
    if (!mine)
        return "?";
    if (__atomic_compare_exchange_n(&k->base, &have, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return mine;
    free(mine);
    return have;
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
    size_t last, lastlen; /* the name added last, at names + last (lastlen 0: none) */
};

struct report {
    const struct atl_diff_opts *o;
    struct atl_diff_stats *st;
    const struct atl_step *a, *b;
    size_t na, nb; /* the steps' ops (a and b hold fewer with opts' sparse) */
    size_t lines; /* differences found */
    /* the lines kept for printing: at most max_lines of each rank (no more
     * can be printed), in the order found */
    struct kept_line {
        char *text;
        int rank;
        /* "another buffer": what the live tracer knows of the two allocations (explain),
         * asked only for a line that is printed, when it is (the ledger's look-ups and the
         * call stacks' names cost far more than the line) */
        int why;
        struct atl_ann was, now;
        uint64_t va, vb;
    } * kept;
    size_t nkept, capkept, per_rank[NRANKS];
    /* pointers moved within their allocations (ATLAS_DIFF_POINTERS), and
     * changed words of by-value parameters holding host-memory residue
     * (ATLAS_DIFF_RESIDUE): each collapsed into one line per step */
    struct collapsed moved, resid;
    /* host ends of pageable copies that moved (ATLAS_DIFF_POINTERS): no capture takes such a
     * copy, so no graph would freeze the address; collapsed as `moved` is */
    struct collapsed hostmoved;
    /* pointers that moved from one segment of PyTorch's caching allocator to another
     * (opts->pooled): the allocator's reuse too, collapsed as `moved` is */
    struct collapsed segmoved;
    size_t noted; /* lines about residue: printed, but no difference in a host value */
    /* lines are formatted and kept (else only counted): set for the pass whose report is
     * printed (atl_step_compare walks a step twice when it prints it) */
    int texts;
    /* two runs' headers name both files (three names of up to 120 bytes):
     * room for the longest, so a header is never cut */
    char header[1024];
    char header_noted[1024]; /* when every line is about residue */
    char where[96];          /* " (thread T, stream S)" with opts' where, else "" */
    int headed;              /* header, header_noted and where made (report_heads) */
    /* what changed, field by field: folding compares two reports by these */
    struct atl_fold_chg chg[ATL_FOLD_MAX];
    unsigned nchg;
    int chg_over; /* more changes than fit: this report is not folded */
};

/* Op i of r's steps as the report names it: its place in the whole step (opts' sparse). */
static size_t place(const struct report *r, size_t i)
{
    return r->o->sparse ? r->o->sparse[i] : i;
}

/* The op of r's b at place `at` of the whole step, or NULL (not held: opts' sparse). */
static const struct atl_op *op_at(const struct report *r, size_t at)
{
    if (!r->o->sparse)
        return at < r->b->nops ? &r->b->ops[at] : NULL;
    size_t lo = 0, hi = r->b->nops;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->o->sparse[mid] < at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->b->nops && r->o->sparse[lo] == at ? &r->b->ops[lo] : NULL;
}

/* A change's class, for folding: a value (its delta counts), a pointer into
 * another buffer (a fresh allocation each step: its delta says nothing), or a
 * line without values (ops inserted, a collapsed line). */
enum { CHG_VALUE, CHG_BUFFER, CHG_TEXT, CHG_OPAQUE /* values without a delta: dims */ };

static void chg_add(struct report *r, size_t op, uint64_t key, int cls, const char *what,
                    uint64_t va, uint64_t vb, int64_t delta)
{
    if (r->nchg == ATL_FOLD_MAX) {
        r->chg_over = 1;
        return;
    }
    struct atl_fold_chg *c = &r->chg[r->nchg++];
    *c = (struct atl_fold_chg){.op = (uint32_t)op,
                               .cls = (uint8_t)cls,
                               .key = key,
                               .v0 = va,
                               .v1 = vb,
                               .va = va,
                               .vb = vb,
                               .delta = delta};
    size_t l = strnlen(what, sizeof c->what - 1);
    memcpy(c->what, what, l);
    c->what[l] = '\0';
}

/* A change as a person reads it: "A -> B (delta +1)", or against a capture
 * "A when captured, B now (delta +1); a replay uses A". */
static void change_text(const struct report *r, char *buf, size_t len, const char *a, const char *b,
                        const char *delta)
{
    if (r->o->captured)
        fmt(buf, len, "%s when captured, %s %s%s; a replay uses %s", a, b, r->o->captured, delta,
            a);
    else
        fmt(buf, len, "%s -> %s%s", a, b, delta);
}

/* A line of this rank would be kept for printing (at most max_lines of each rank can be
 * printed): a caller formats a line only then, and counts it with skip() otherwise. */
static int keeps(const struct report *r, enum rank rank)
{
    return r->texts && r->per_rank[rank] < r->o->max_lines;
}

/* A difference found whose line is not kept: counted, never formatted. */
static void skip(struct report *r, enum rank rank)
{
    r->lines++;
    r->noted += rank == RANK_RESIDUE;
}

/* A difference found, and its line kept if it can be printed. `was` (value va, in the
 * reference step) and `now` (vb, in this one): a line about another buffer, whose
 * explanation is appended when it is printed (NULL: none). */
static void emit_why(struct report *r, enum rank rank, const char *text, const struct atl_ann *was,
                     uint64_t va, const struct atl_ann *now, uint64_t vb)
{
    skip(r, rank);
    if (!keeps(r, rank))
        return;
    char *t = strdup(text);
    if (!t || grow((void **)&r->kept, &r->capkept, r->nkept + 1, sizeof *r->kept)) {
        free(t);
        return;
    }
    r->per_rank[rank]++;
    if (r->st)
        r->st->formatted++;
    struct kept_line *k = &r->kept[r->nkept++];
    *k = (struct kept_line){.text = t, .rank = rank};
    if (was && now) {
        k->why = 1;
        k->was = *was, k->now = *now, k->va = va, k->vb = vb;
    }
}

static void emit(struct report *r, enum rank rank, const char *text)
{
    emit_why(r, rank, text, NULL, 0, NULL, 0);
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
    /* the name added last first: a step's moved pointers come kernel by kernel (a strstr of
     * the whole list for each of them was a tenth of an optimizer step's diff) */
    int again = c->lastlen && strncmp(c->names + c->last, what, c->lastlen) == 0 &&
                what[c->lastlen] == '\0';
    if (!again && !strstr(c->names, what)) {
        size_t l = strlen(c->names), wl = strlen(what);
        if (l + wl + 8 < sizeof c->names) {
            cat3(c->names + l, sizeof c->names - l, l ? ", " : "", "", what);
            c->last = l + (l ? 2 : 0), c->lastlen = wl;
        } else if (!strstr(c->names, ", ..."))
            snprintf(c->names + l, sizeof c->names - l, ", ...");
    }
    c->n++;
    return 1;
}

/* A pointer that moved from one segment of PyTorch's caching allocator to another (two
 * allocations, neither host memory, both the allocator's: opts->pooled). Not against a
 * capture, whose pointers are left out anyway. */
static int seg_moved(const struct report *r, const struct atl_ann *xa, uint64_t va,
                     const struct atl_ann *xb, uint64_t vb)
{
    return r->o->pooled && !r->o->cross && xa && xb && xa->seq != xb->seq &&
           xa->seq != ATL_ANN_HOST && xb->seq != ATL_ANN_HOST && r->o->pooled(xa, va, xb, vb);
}

/* One collapsed line of a report: printed at `rank` (formatted from `f` only where it is
 * kept), counted as noted (no host value a graph would freeze differently) when `noted`, and
 * folded across steps as the text "FOLD: names". */
static void __attribute__((format(printf, 6, 7)))
collapsed_line(struct report *r, enum rank rank, const char *fold, const struct collapsed *c,
               int noted, const char *f, ...)
{
    char line[512] = "", what[300];
    if (keeps(r, rank)) {
        va_list ap;
        va_start(ap, f);
        vsnprintf(line, sizeof line, f, ap);
        va_end(ap);
    }
    emit(r, rank, line);
    r->noted += (size_t)noted;
    cat3(what, sizeof what, fold, ": ", c->names);
    chg_add(r, 0, str_hash(what), CHG_TEXT, what, 0, 0, 0);
}

/* The report's headers, made when first needed: by a report that prints, is handed over as
 * a finding, or begins a run (most steps' reports fold into the run before them and need
 * none). */
static void report_heads(struct report *r)
{
    if (r->headed)
        return;
    r->headed = 1;
    const struct atl_diff_opts *opts = r->o;
    const struct atl_step *a = r->a, *b = r->b;
    const size_t na = r->na, nb = r->nb;
    r->where[0] = '\0';
    if (opts->where && b->stream)
        snprintf(r->where, sizeof r->where, " (thread %s, stream 0x%" PRIx64 ")", b->thread,
                 b->stream);
    else if (opts->where)
        snprintf(r->where, sizeof r->where, " (thread %s)", b->thread);
    if (opts->run_a && opts->run_b) {
        /* two runs: which file each step is from, and its place there (cut at the end when
         * the names are long: atl_fmt, which the sanitizer builds' -O1 does not warn of) */
        atl_fmt(r->header, sizeof r->header,
                "step \"%s\"%s #%" PRIu64 " of %.120s (step %" PRIu64 ") differs from #%" PRIu64
                " of %.120s (step %" PRIu64 "): %zu op%s (%zu in %.120s, %+ld)",
                b->name, r->where, b->nth, opts->run_b, b->index, a->nth, opts->run_a, a->index, nb,
                nb == 1 ? "" : "s", na, opts->run_a, (long)nb - (long)na);
        snprintf(r->header_noted, sizeof r->header_noted,
                 "step \"%s\"%s #%" PRIu64 " of %.120s (step %" PRIu64
                 ") has the host values of #%" PRIu64 " of %.120s (step %" PRIu64
                 "); only uninitialised bytes differ: %zu op%s",
                 b->name, r->where, b->nth, opts->run_b, b->index, a->nth, opts->run_a, a->index,
                 nb, nb == 1 ? "" : "s");
    } else {
        snprintf(r->header, sizeof r->header,
                 "step \"%s\"%s #%" PRIu64 " (step %" PRIu64 ") differs from #%" PRIu64
                 ": %zu op%s (was %zu, %+ld)",
                 b->name, r->where, b->nth, b->index, a->nth, nb, nb == 1 ? "" : "s", na,
                 (long)nb - (long)na);
        snprintf(r->header_noted, sizeof r->header_noted,
                 "step \"%s\"%s #%" PRIu64 " (step %" PRIu64 ") has the host values of #%" PRIu64
                 "; only uninitialised bytes differ: %zu op%s",
                 b->name, r->where, b->nth, b->index, a->nth, nb, nb == 1 ? "" : "s");
    }
    if (opts->header) {
        snprintf(r->header, sizeof r->header, "%s", opts->header);
        snprintf(r->header_noted, sizeof r->header_noted, "%s", opts->header);
    }
}

/* Prints the header and the kept lines, rank by rank, at most max_lines,
 * then a count of the rest. */
static void report_close(struct report *r)
{
    size_t n;
    if ((n = r->moved.n))
        collapsed_line(
            r, RANK_PTR, "pointers moved within their allocations", &r->moved, 1,
            "  %zu pointer argument%s moved within %s allocation%s (allocator reuse): %s", n,
            n == 1 ? "" : "s", n == 1 ? "its" : "their", n == 1 ? "" : "s", r->moved.names);
    if ((n = r->segmoved.n))
        collapsed_line(r, RANK_PTR, "pointers moved between segments", &r->segmoved, 1,
                       "  %zu pointer argument%s moved to another segment of PyTorch's caching "
                       "allocator (allocator reuse): %s",
                       n, n == 1 ? "" : "s", r->segmoved.names);
    if ((n = r->hostmoved.n))
        collapsed_line(r, RANK_PTR, "host buffers of pageable copies moved", &r->hostmoved, 1,
                       "  %zu host buffer%s of pageable copies moved (no stream capture takes a "
                       "pageable copy): %s",
                       n, n == 1 ? "" : "s", r->hostmoved.names);
    if ((n = r->resid.n))
        collapsed_line(r, RANK_RESIDUE, "uninitialised bytes", &r->resid, 0,
                       "  %zu changed word%s of by-value parameters that hold host addresses "
                       "(uninitialised bytes, most likely): %s",
                       n, n == 1 ? "" : "s", r->resid.names);
}

static void report_discard(struct report *r)
{
    for (size_t i = 0; i < r->nkept; i++)
        free(r->kept[i].text);
    free(r->kept);
    r->kept = NULL, r->nkept = 0;
}

static void report_print(struct report *r)
{
    if (r->lines) {
        report_heads(r);
        r->o->line(r->o->ctx, r->lines == r->noted ? r->header_noted : r->header);
    }
    size_t printed = 0;
    for (int k = 0; k < NRANKS; k++)
        for (size_t i = 0; i < r->nkept; i++)
            if (r->kept[i].rank == k && printed < r->o->max_lines) {
                const struct kept_line *kl = &r->kept[i];
                char why[512] = "";
                if (kl->why && r->o->explain)
                    r->o->explain(&kl->was, kl->va, &kl->now, kl->vb, r->a, why, sizeof why);
                if (why[0]) {
                    char line[1300];
                    fmt(line, sizeof line, "%s: %s", kl->text, why);
                    r->o->line(r->o->ctx, line);
                } else {
                    r->o->line(r->o->ctx, kl->text);
                }
                printed++;
            }
    report_discard(r);
    if (r->lines > printed) {
        char line[128];
        snprintf(line, sizeof line, "  ... %zu more difference%s not shown (%s=%u)",
                 r->lines - printed, r->lines - printed == 1 ? "" : "s",
                 r->o->max_name ? r->o->max_name : "ATLAS_DIFF_MAX", r->o->max_lines);
        r->o->line(r->o->ctx, line);
    }
}

/* "add_pos arg1", "memset ptr": a field of op o as the summaries name it */
static void what_of(const struct atl_op *o, const char *field, char *what, size_t len)
{
    const struct atl_kfn *k = o->kind == ATL_OP_LAUNCH ? o->u.k.kfn : NULL;
    cat3(what, len, k ? kfn_base(k) : atl_op_kind_name(o->kind), " ", field);
}

/* Counts a differing field for the summary by its name ("add_pos arg1", "memset ptr",
 * "copy width"). */
static void count_what(struct report *r, const char *what)
{
    struct atl_diff_stats *st = r->st;
    if (!st)
        return;
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

/* The same for field of op o. */
static void count_top(struct report *r, const struct atl_op *o, const char *field)
{
    if (!r->st)
        return;
    char what[160];
    what_of(o, field, what, sizeof what);
    count_what(r, what);
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
        snprintf(buf, len, "[%s]", atl_op_kind_name(o->kind));
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

/* A changed field of op idx: its line (formatted only when it is kept: `a`, `b` and `delta` are
 * the values as printed, made by the caller only then), its count for the summary and its
 * change for folding. */
static void field_line(struct report *r, size_t idx, const struct atl_op *o, const char *field,
                       const char *a, const char *b, const char *delta, enum rank rank, int cls,
                       uint64_t va, uint64_t vb)
{
    if (keeps(r, rank)) {
        char lab[256], line[768], ch[320];
        change_text(r, ch, sizeof ch, a, b, delta);
        fmt(line, sizeof line, "  op %zu %s %s: %s", place(r, idx), op_label(o, lab, sizeof lab),
            field, ch);
        emit(r, rank, line);
    } else {
        skip(r, rank);
    }
    char what[160];
    what_of(o, field, what, sizeof what);
    count_what(r, what);
    chg_add(r, place(r, idx), str_hash(field), cls, what, va, vb, (int64_t)(vb - va));
}

static void field_u64(struct report *r, size_t idx, const struct atl_op *o, const char *field,
                      uint64_t a, uint64_t b, enum rank rank)
{
    if (a == b)
        return;
    char ta[24] = "", tb[24] = "", d[40] = "";
    if (keeps(r, rank)) {
        snprintf(ta, sizeof ta, "0x%" PRIx64, a);
        snprintf(tb, sizeof tb, "0x%" PRIx64, b);
        snprintf(d, sizeof d, " (delta %+" PRId64 ")", (int64_t)(b - a));
    }
    field_line(r, idx, o, field, ta, tb, d, rank, CHG_VALUE, a, b);
}

/* A size or a count, in decimal (`unit`: " bytes" or ""). */
static void field_num(struct report *r, size_t idx, const struct atl_op *o, const char *field,
                      uint64_t a, uint64_t b, const char *unit, enum rank rank)
{
    if (a == b)
        return;
    char ta[40] = "", tb[40] = "", d[40] = "";
    if (keeps(r, rank)) {
        snprintf(ta, sizeof ta, "%" PRIu64, a);
        snprintf(tb, sizeof tb, "%" PRIu64 "%s", b, unit);
        snprintf(d, sizeof d, " (delta %+" PRId64 ")", (int64_t)(b - a));
    }
    field_line(r, idx, o, field, ta, tb, d, rank, CHG_VALUE, a, b);
}

static void field_dim(struct report *r, size_t idx, const struct atl_op *o, const char *field,
                      const uint32_t *a, const uint32_t *b)
{
    if (a[0] == b[0] && a[1] == b[1] && a[2] == b[2])
        return;
    char ta[48] = "", tb[48] = "";
    if (keeps(r, RANK_LAUNCH)) {
        snprintf(ta, sizeof ta, "(%u,%u,%u)", a[0], a[1], a[2]);
        snprintf(tb, sizeof tb, "(%u,%u,%u)", b[0], b[1], b[2]);
    }
    /* one number for folding: the same dims are the same number */
    uint64_t va = mix(mix(a[0], a[1]), a[2]), vb = mix(mix(b[0], b[1]), b[2]);
    field_line(r, idx, o, field, ta, tb, "", RANK_LAUNCH, CHG_OPAQUE, va, vb);
}

/* The note at (op, at) of s, in *buf; NULL when there is none. */
static const struct atl_ann *note_at(const struct atl_step *s, size_t op, uint32_t at,
                                     struct atl_ann *buf)
{
    return atl_step_note(s, (uint32_t)op, at, buf) ? buf : NULL;
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

/* A word whose notes in the two steps are xa and xb (NULL: none; no word of under 8 bytes
 * has one) names one allocation and offset in both (a pointer, in two processes). */
static int same_alloc(const struct report *r, const struct atl_ann *xa, const struct atl_ann *xb)
{
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
        struct atl_ann n;
        if (va == vb || atl_step_note(r->a, (uint32_t)ia, off + w, &n) ||
            atl_step_note(r->b, (uint32_t)ib, off + w, &n))
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

/* "scale arg3" into out: what the summaries call a kernel's parameter, made without printf
 * (a step whose pointers all moved names thousands). */
static void arg_name(char *out, size_t len, const char *kbase, unsigned i)
{
    char num[16];
    size_t d = sizeof num;
    do
        num[--d] = (char)('0' + i % 10);
    while ((i /= 10) && d > 0);
    size_t kb = strlen(kbase);
    size_t tail = sizeof num - d;
    if (kb + 4 + tail >= len) /* kbase is cut first (not with this file's sizes) */
        kb = len > 5 + tail ? len - 5 - tail : 0;
    memcpy(out, kbase, kb);
    memcpy(out + kb, " arg", 4);
    memcpy(out + kb + 4, num + d, tail);
    out[kb + 4 + tail] = '\0';
}

/* The 32 bytes at x and y are equal (fixed-size loads, no call). */
static inline int words_equal4(const uint8_t *x, const uint8_t *y)
{
    uint64_t a[4], b[4];
    memcpy(a, x, sizeof a);
    memcpy(b, y, sizeof b);
    return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0;
}

/* Appends "+0xW" (the word's offset in its parameter, as "%s+0x%x" would) to the name in out,
 * without printf: an optimizer's by-value struct changes words in every step. */
static void word_suffix(char *out, size_t len, uint32_t w)
{
    char hex[12];
    size_t d = sizeof hex;
    do
        hex[--d] = "0123456789abcdef"[w & 15];
    while ((w >>= 4) && d > 0);
    size_t l = strlen(out), tail = sizeof hex - d;
    if (l + 3 + tail >= len)
        return; /* not with this file's sizes */
    memcpy(out + l, "+0x", 3);
    memcpy(out + l + 3, hex + d, tail);
    out[l + 3 + tail] = '\0';
}

static void diff_params(struct report *r, size_t ia, size_t ib, const struct atl_op *oa,
                        const struct atl_op *ob)
{
    const struct atl_kfn *ka = oa->u.k.kfn, *kb = ob->u.k.kfn;
    const uint8_t *pa = atl_op_bytes(r->a, oa), *pb = atl_op_bytes(r->b, ob);
    char lab[256] = "", line[768];
    if (ka->nparams != kb->nparams || ka->total != kb->total) {
        op_label(ob, lab, sizeof lab);
        snprintf(line, sizeof line, "  op %zu %s parameter layout: %u params/%u bytes -> %u/%u",
                 place(r, ib), lab, ka->nparams, ka->total, kb->nparams, kb->total);
        emit(r, RANK_LAUNCH, line);
        char what[160];
        what_of(ob, "parameter layout", what, sizeof what);
        chg_add(r, place(r, ib), str_hash(line), CHG_TEXT, what, 0, 0, 0);
        return;
    }
    /* the kernel's short name ("scale"), once for all of the op's changed words */
    const char *kbase = NULL;
    for (unsigned i = 0; i < kb->nparams; i++) {
        uint32_t off = kb->off[i], sz = kb->size[i];
        if (ka->off[i] != off || ka->size[i] != sz || off + sz > kb->total)
            continue;
        if (memcmp(pa + off, pb + off, sz) == 0 || ignored(r->o->ignore, kb, (int)i))
            continue;
        if (!kbase)
            kbase = kfn_base(kb);
        /* Values up to 8 bytes read as one little-endian integer; larger
         * by-value parameters are compared in 8-byte words so the report
         * points at the word that changed. The same alloc#N+OFF in two
         * processes is the same pointer: a parameter whose every differing
         * word is one counts as unchanged. */
        int counted = 0;
        int resid = sz > 8 && holds_residue(r, ia, ib, ka, kb, i, pa + off, pb + off, sz, off);
        for (uint32_t w = 0; w < sz; w += 8) {
            /* a large struct's equal words four at a time (an optimizer's changes few of 440) */
            while (w + 32 <= sz && words_equal4(pa + off + w, pb + off + w))
                w += 32;
            if (w >= sz)
                break;
            uint32_t n = sz - w < 8 ? sz - w : 8;
            uint64_t va = 0, vb = 0;
            if (n == 8) { /* a whole word: a load each, not a call (a 3.5 KiB struct has 440) */
                memcpy(&va, pa + off + w, 8);
                memcpy(&vb, pb + off + w, 8);
            } else {
                memcpy(&va, pa + off + w, n);
                memcpy(&vb, pb + off + w, n);
            }
            if (va == vb)
                continue;
            const struct atl_ann *xa = NULL, *xb = NULL;
            struct atl_ann na, nb;
            if (n == 8) {
                xa = note_at(r->a, ia, off + w, &na);
                xb = note_at(r->b, ib, off + w, &nb);
            }
            if (same_alloc(r, xa, xb))
                continue;
            char what[160];
            arg_name(what, sizeof what, kbase, i);
            if (n == 8) {
                /* host memory (ATL_ANN_HOST) is no allocation to move within */
                if (xa && xb && xa->seq == xb->seq && xa->seq != ATL_ANN_HOST &&
                    collapse(&r->moved, r->o->pointers, what))
                    continue;
                if (seg_moved(r, xa, va, xb, vb) && collapse(&r->segmoved, r->o->pointers, what))
                    continue;
            }
            /* against a capture, pointers are not host values: a graph has
             * buffers of its own (PyTorch's graph pool), eager steps others */
            if (r->o->captured &&
                ((xa && xa->seq != ATL_ANN_HOST) || (xb && xb->seq != ATL_ANN_HOST)))
                continue;
            /* a word naming an allocation in both steps stays a pointer */
            int junk = resid && !(xa && xb);
            if (junk && collapse(&r->resid, r->o->residue, what))
                continue;
            if (!counted++ && !junk)
                count_what(r, what);
            /* small values are sign-extended, so 0xffffffff -> 0 reads as +1 */
            int sh = 64 - 8 * (int)n;
            int64_t delta = n == 8 ? (int64_t)(vb - va)
                                   : ((int64_t)(vb << sh) >> sh) - ((int64_t)(va << sh) >> sh);
            char fz[160];
            memcpy(fz, what, sizeof fz);
            if (sz > 8)
                word_suffix(fz, sizeof fz, w);
            if (!junk)
                note_frozen(r, fz, va, vb, delta);
            int another = xa && xb && xa->seq != xb->seq && xa->seq != ATL_ANN_HOST &&
                          xb->seq != ATL_ANN_HOST && !junk;
            chg_add(r, place(r, ib), mix(mix(0xa79, i), w), another ? CHG_BUFFER : CHG_VALUE, fz,
                    va, vb, delta);
            /* the line itself only where it can be printed: a step whose pointers all moved
             * (a caching allocator's) has thousands of these, and prints ATLAS_DIFF_MAX */
            enum rank rank = junk ? RANK_RESIDUE : xa || xb ? RANK_PTR : RANK_VALUE;
            if (!keeps(r, rank)) {
                skip(r, rank);
                continue;
            }
            const char *verdict = junk ? " (host-memory residue)" : "";
            char where[48];
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
            char aa[64], ab[64], ta[96], tb[96], d[40], ch[320];
            fmt_alloc(xa, aa, sizeof aa);
            fmt_alloc(xb, ab, sizeof ab);
            snprintf(ta, sizeof ta, "0x%" PRIx64 "%s", va, aa);
            snprintf(tb, sizeof tb, "0x%" PRIx64 "%s", vb, ab);
            snprintf(d, sizeof d, " (delta %+" PRId64 ")", delta);
            change_text(r, ch, sizeof ch, ta, tb, d);
            if (!lab[0])
                op_label(ob, lab, sizeof lab);
            fmt(line, sizeof line, "  op %zu %s arg%u%s: %s%s", place(r, ib), lab, i, where, ch,
                verdict);
            int why = another && r->o->explain && !r->o->cross;
            emit_why(r, rank, line, why ? xa : NULL, va, why ? xb : NULL, vb);
        }
    }
}

/* A memset's or copy's address (`at`: ATL_ANN_DST or ATL_ANN_SRC): by
 * allocation and offset where both steps know it, else by value; the raw
 * addresses are printed for people. `host`: the address is host memory,
 * which two processes never share (not compared across runs). */
static void field_addr(struct report *r, size_t ia, size_t ib, const char *field, uint32_t at,
                       uint64_t a, uint64_t b, int host, int pageable)
{
    struct atl_ann na, nb;
    const struct atl_ann *xa = note_at(r->a, ia, at, &na), *xb = note_at(r->b, ib, at, &nb);
    /* Within one process an address is compared as it is: a buffer freed
     * and made again at the same address (allocator churn: NCCL's set-up
     * memsets) is another alloc#N but the same pointer to a graph. Across
     * two processes, by allocation where both name one. */
    if (!r->o->cross ? a == b
        : xa && xb   ? xa->seq == xb->seq && xa->off == xb->off
                     : a == b || host)
        return;
    if (r->o->captured) /* a graph has buffers of its own */
        return;
    const struct atl_op *o = &r->b->ops[ib];
    char lab[256], line[1024], aa[64], ab[64], what[160];
    cat3(what, sizeof what, atl_op_kind_name(o->kind), " ", field);
    if (xa && xb && xa->seq == xb->seq && collapse(&r->moved, r->o->pointers, what))
        return;
    if (host && pageable && collapse(&r->hostmoved, r->o->pointers, what))
        return;
    if (seg_moved(r, xa, a, xb, b) && collapse(&r->segmoved, r->o->pointers, what))
        return;
    int another = xa && xb && xa->seq != xb->seq;
    count_top(r, o, field);
    chg_add(r, place(r, ib), str_hash(field), another ? CHG_BUFFER : CHG_VALUE, what, a, b,
            (int64_t)(b - a));
    if (!keeps(r, RANK_PTR)) {
        skip(r, RANK_PTR);
        return;
    }
    fmt_alloc(xa, aa, sizeof aa);
    fmt_alloc(xb, ab, sizeof ab);
    fmt(line, sizeof line, "  op %zu %s %s: 0x%" PRIx64 "%s -> 0x%" PRIx64 "%s%s", place(r, ib),
        op_label(o, lab, sizeof lab), field, a, aa, b, ab,
        xa && xb ? (xa->seq == xb->seq ? ": same buffer, another offset" : ": another buffer")
                 : "");
    int why = another && r->o->explain && !r->o->cross;
    emit_why(r, RANK_PTR, line, why ? xa : NULL, a, why ? xb : NULL, b);
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
        field_addr(r, ia, ib, "ptr", ATL_ANN_DST, oa->u.m.ptr, ob->u.m.ptr, 0, 0);
        field_u64(r, ib, ob, "value", oa->shmem, ob->shmem, RANK_VALUE);
        field_num(r, ib, ob, "count", oa->u.m.count, ob->u.m.count, "", RANK_VALUE);
        field_num(r, ib, ob, "pitch", oa->u.m.pitch, ob->u.m.pitch, " bytes", RANK_VALUE);
        field_num(r, ib, ob, "height", oa->u.m.height, ob->u.m.height, "", RANK_VALUE);
        break;
    case ATL_OP_COPY:
        field_addr(r, ia, ib, "dst", ATL_ANN_DST, oa->u.c.dst, ob->u.c.dst,
                   ob->sub == ATL_DIR_DTOH || ob->sub == ATL_DIR_HTOH,
                   oa->flags & ob->flags & ATL_COPY_DST_PAGEABLE);
        field_addr(r, ia, ib, "src", ATL_ANN_SRC, oa->u.c.src, ob->u.c.src,
                   ob->sub == ATL_DIR_HTOD || ob->sub == ATL_DIR_HTOH,
                   oa->flags & ob->flags & ATL_COPY_SRC_PAGEABLE);
        field_num(r, ib, ob, "width", oa->u.c.w, ob->u.c.w, " bytes", RANK_VALUE);
        field_num(r, ib, ob, "height", oa->u.c.h, ob->u.c.h, "", RANK_VALUE);
        field_num(r, ib, ob, "depth", oa->u.c.d, ob->u.c.d, "", RANK_VALUE);
        break;
    default:
        /* an executable graph's handle is an address of its process: two runs or ranks
         * launch the same graph under other handles */
        if (!r->o->cross)
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
        snprintf(at, sizeof at, "ops %zu..%zu (%zu of them)", place(r, idx),
                 place(r, idx) + run - 1, run);
    else
        snprintf(at, sizeof at, "op %zu", place(r, idx));
    if (inserted)
        snprintf(line, sizeof line, "  %s inserted: %s", at, sum);
    else
        snprintf(line, sizeof line, "  %s of the previous step removed: %s", at, sum);
    emit(r, RANK_OPS, line);
    chg_add(r, place(r, idx), str_hash(line), CHG_TEXT, line + 2, 0, 0, 0);
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
/* The shape hashes of every op, and (`full`) the full hashes: kept with the
 * step, which is compared again with its successor. */
static int step_hashes(const struct atl_step *cs, int full)
{
    struct atl_step *s = (struct atl_step *)cs; /* the hashes are a cache */
    if (s->shape && (s->full || !full))
        return 0;
    if (!s->shape && !(s->shape = malloc(sizeof(uint64_t) * (s->nops + 1))))
        return -1;
    if (!full) {
        for (size_t i = 0; i < s->nops; i++)
            s->shape[i] = shape_hash(&s->ops[i]);
        return 0;
    }
    if (!(s->full = malloc(sizeof(uint64_t) * (s->nops + 1))))
        return -1;
    struct atl_notes it;
    atl_notes_init(&it, s);
    for (size_t i = 0; i < s->nops; i++) {
        atl_notes_op(&it, (uint32_t)i);
        s->shape[i] = shape_hash(&s->ops[i]);
        s->full[i] = full_hash(s, &s->ops[i], s->shape[i], &it);
    }
    return 0;
}

/*
 * Two steps of one process whose pointers named the same allocations (the
 * same spans) give two words with one value one note: ops whose hashed
 * fields and parameter bytes are equal byte for byte then hash equal, so
 * they need no hash. A million-op step that differs from its predecessor in
 * a few ops is decided by comparing its records, and only the few are
 * hashed (the full hash of every op of both steps was most of such a step
 * end). Steps read from files (notes per word) and steps whose allocations
 * changed are hashed whole, as before.
 */
static int raw_comparable(const struct atl_step *a, const struct atl_step *b)
{
    return a->nann == 0 && b->nann == 0 && a->nspans == b->nspans &&
           (a->nspans == 0 || memcmp(a->spans, b->spans, a->nspans * sizeof *a->spans) == 0);
}

/* Ops i of a and j of b are equal in every field full_hash reads (the
 * stream aside: see there), the parameter bytes included. */
/* Launches x and y of one kernel record have the same kind, cluster, shared memory, grid and
 * block (all of the record but the stream and the parameter bytes). */
static int launch_head_equal(const struct atl_op *x, const struct atl_op *y)
{
    _Static_assert(offsetof(struct atl_op, stream) == 8 && offsetof(struct atl_op, u) == 16,
                   "the record's layout, as compared below");
    return memcmp(x, y, 8) == 0 && x->shmem == y->shmem &&
           memcmp(x->u.k.grid, y->u.k.grid, sizeof x->u.k.grid) == 0 &&
           memcmp(x->u.k.block, y->u.k.block, sizeof x->u.k.block) == 0;
}

static int raw_equal(const struct atl_step *a, size_t i, const struct atl_step *b, size_t j)
{
    const struct atl_op *x = &a->ops[i], *y = &b->ops[j];
    if (x->kind != ATL_OP_LAUNCH)
        return memcmp(x, y, 8) == 0 && x->shmem == y->shmem &&
               memcmp(&x->u, &y->u, sizeof x->u) == 0;
    const struct atl_kfn *k = x->u.k.kfn;
    return k == y->u.k.kfn && launch_head_equal(x, y) &&
           /* no parameter bytes: the step may hold none at all (NULL) */
           (!k || !k->total || memcmp(atl_op_bytes(a, x), atl_op_bytes(b, y), k->total) == 0);
}

/* Ops x and y have one shape (shape_hash, without hashing). */
static int same_shape(const struct atl_op *x, const struct atl_op *y)
{
    if (x->kind != y->kind)
        return 0;
    if (x->kind == ATL_OP_LAUNCH) {
        const struct atl_kfn *ka = x->u.k.kfn, *kb = y->u.k.kfn;
        return ka == kb ||
               (ka && kb && ka->nparams == kb->nparams && strcmp(ka->mangled, kb->mangled) == 0);
    }
    return x->kind == ATL_OP_GRAPH || x->sub == y->sub;
}

/* One op's full hash, when the step has no array of them. */
static uint64_t op_full_hash(const struct atl_step *s, size_t i)
{
    struct atl_notes it;
    atl_notes_init(&it, s);
    atl_notes_op(&it, (uint32_t)i);
    return full_hash(s, &s->ops[i], shape_hash(&s->ops[i]), &it);
}

/* Raw: ops [i, i + n) of a and of b are the same records (their streams and
 * byte offsets included) over the same parameter bytes: one memcmp each
 * for a run of them, where pair_differs would look op by op. */
static int run_identical(const struct atl_step *a, const struct atl_step *b, size_t i, size_t n)
{
    if (memcmp(&a->ops[i], &b->ops[i], n * sizeof *a->ops) != 0)
        return 0;
    /* the records are equal, so are their offsets: the run's bytes lie in
     * [lo, hi) of both steps (with others', when ordering by stream
     * interleaved them: that only asks for more to be equal) */
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t x = i; x < i + n; x++) {
        const struct atl_op *o = &a->ops[x];
        if (o->kind != ATL_OP_LAUNCH || !o->u.k.kfn)
            continue;
        if (o->u.k.bytes < lo)
            lo = o->u.k.bytes;
        if (o->u.k.bytes + o->u.k.kfn->total > hi)
            hi = o->u.k.bytes + o->u.k.kfn->total;
    }
    return hi <= lo || memcmp(a->bytes + lo, b->bytes + lo, hi - lo) == 0;
}

/* Ops i of a and j of b (paired) differ: by the full hashes, or (raw) by
 * their bytes first. */
/* Launches i of a and j of b of one kernel record whose bytes differ: 1 when each word that
 * differs points into the same allocation at the same offset in both steps (what
 * op_full_hash hashes alike), 0 when one does not, -1 when not two such launches (ask the
 * hashes). Word by word, only the words that differ: a launch of PyTorch's
 * multi_tensor_apply_kernel carries a 3.5 KiB struct of pointers whose learning rate changes
 * every step, and hashing it whole by allocation names cost more than the rest of the step. */
static int launch_named_equal(const struct atl_step *a, size_t i, const struct atl_step *b,
                              size_t j)
{
    const struct atl_op *x = &a->ops[i], *y = &b->ops[j];
    const struct atl_kfn *k = x->u.k.kfn;
    if (x->kind != ATL_OP_LAUNCH || y->kind != ATL_OP_LAUNCH || !k || k != y->u.k.kfn)
        return -1;
    if (!launch_head_equal(x, y))
        return 0;
    const uint8_t *pa = atl_op_bytes(a, x), *pb = atl_op_bytes(b, y);
    for (uint32_t w = 0; w < k->total; w += 8) {
        while (w + 32 <= k->total && words_equal4(pa + w, pb + w))
            w += 32;
        if (w >= k->total)
            break;
        uint32_t n = k->total - w < 8 ? k->total - w : 8;
        uint64_t va, vb;
        if (n == 8) {
            memcpy(&va, pa + w, 8);
            memcpy(&vb, pb + w, 8);
            if (va == vb)
                continue;
        } else if (memcmp(pa + w, pb + w, n) == 0) {
            continue;
        }
        struct atl_ann na, nb;
        if (n < 8 || !atl_step_note(a, (uint32_t)i, w, &na) ||
            !atl_step_note(b, (uint32_t)j, w, &nb) || na.seq == ATL_ANN_HOST || na.seq != nb.seq ||
            na.off != nb.off)
            return 0;
    }
    return 1;
}

static int pair_differs(const struct atl_step *a, size_t i, const struct atl_step *b, size_t j,
                        int raw)
{
    if (!raw)
        return a->full[i] != b->full[j];
    if (raw_equal(a, i, b, j))
        return 0;
    int same = launch_named_equal(a, i, b, j);
    if (same >= 0)
        return !same;
    return op_full_hash(a, i) != op_full_hash(b, j);
}

/* ---- folding repeats -------------------------------------------------------------- */

static void held_free(struct atl_fold *f, int dropped);

static uint64_t report_sig(const struct report *r)
{
    uint64_t h = mix(mix(0xf01d, r->na), r->nb);
    for (unsigned i = 0; i < r->nchg; i++)
        h = mix(mix(mix(h, r->chg[i].op), r->chg[i].key), r->chg[i].cls);
    return h ? h : 1;
}

/* r continues f's run: the same fields as the report before, each value
 * changed by the same delta as there; or the same fields a third time in a
 * row (a value that alternates, or changes every step: a value that changed
 * once and back prints both reports). */
static int fold_fits(const struct atl_fold *f, const struct report *r, uint64_t sig)
{
    if (!f->chg || f->sig != sig || f->nchg != r->nchg)
        return 0;
    /* at the run's period (every step, until a period is seen) */
    if (f->gap + 1 != (f->period ? f->period : 1))
        return 0;
    /* against a capture: the same fields differ from it again */
    if (f->streak >= 2 || r->o->captured)
        return 1;
    for (unsigned i = 0; i < r->nchg; i++)
        if ((r->chg[i].cls == CHG_VALUE && r->chg[i].delta != f->chg[i].delta) ||
            r->chg[i].cls == CHG_OPAQUE)
            return 0;
    return 1;
}

static void fold_extend(struct atl_fold *f, const struct report *r)
{
    f->gap = 0;
    if (!f->n++)
        f->first = r->b->index;
    f->last = r->b->index;
    for (unsigned i = 0; i < r->nchg; i++) {
        struct atl_fold_chg *c = &f->chg[i];
        const struct atl_fold_chg *x = &r->chg[i];
        if (f->n == 1)
            c->va = x->va, c->steady = 1, c->alt = 1;
        c->steady &= x->delta == c->delta;
        c->alt &= (x->va == c->v0 || x->va == c->v1) && (x->vb == c->v0 || x->vb == c->v1);
        c->vb = x->vb;
    }
}

/* f takes r's changes: the report printed before a run it may begin. */
static void fold_set(struct atl_fold *f, const struct report *r, uint64_t sig, unsigned streak,
                     const char *where)
{
    if (!f->chg && !(f->chg = malloc(ATL_FOLD_MAX * sizeof *f->chg)))
        return;
    f->sig = sig, f->streak = streak, f->n = 0;
    f->nchg = r->nchg;
    memcpy(f->chg, r->chg, r->nchg * sizeof *r->chg);
    f->replay = r->o->replay != NULL;
    f->captured = r->o->captured != NULL;
    /* where is " (thread T, stream S)": one pair of parentheses with the name */
    size_t wl = strlen(where);
    fmt(f->label, sizeof f->label, "\"%s\"%s%.*s%s", r->b->name, wl > 3 ? ", " : "",
        wl > 3 ? (int)wl - 3 : 0, wl > 3 ? where + 2 : "",
        r->o->captured ? ", against the capture" : "");
}

void atl_fold_flush(struct atl_fold *f, const struct atl_diff_opts *o)
{
    if (f->n && f->chg && !f->quiet) {
        char line[1200], range[64], period[40];
        size_t l;
        /* a run of every step says it three ways; one of every p-th step, one way */
        snprintf(period, sizeof period, "every %" PRIu64 " steps", f->period);
        const char *each = f->period > 1 ? period : "each step";
        const char *every = f->period > 1 ? period : "every step";
        const char *per = f->period > 1 ? period : "per step";
        if (f->n == 1)
            snprintf(range, sizeof range, "step %" PRIu64, f->first);
        else
            snprintf(range, sizeof range, "steps %" PRIu64 "-%" PRIu64, f->first, f->last);
        l = (size_t)snprintf(line, sizeof line, "%s (%s):", range, f->label);
        for (unsigned i = 0; i < f->nchg && l < sizeof line; i++) {
            const struct atl_fold_chg *c = &f->chg[i];
            if (i == 4) {
                l += (size_t)snprintf(line + l, sizeof line - l, " and %u more,", f->nchg - 4);
                break;
            }
            const char *sep = i + 1 < f->nchg ? "," : "";
            if (f->captured || c->cls == CHG_TEXT)
                l += (size_t)snprintf(line + l, sizeof line - l, " %s%s", c->what, sep);
            else if (c->cls == CHG_BUFFER)
                l += (size_t)snprintf(line + l, sizeof line - l, " %s another buffer %s%s",
                                      c->what, each, sep);
            else if (c->cls == CHG_VALUE && c->steady)
                l += (size_t)snprintf(line + l, sizeof line - l,
                                      " %s %+" PRId64 " %s, 0x%" PRIx64 " -> 0x%" PRIx64 "%s",
                                      c->what, c->delta, per, c->va, c->vb, sep);
            else if (c->cls == CHG_VALUE && c->alt)
                l += (size_t)snprintf(line + l, sizeof line - l,
                                      " %s alternates between 0x%" PRIx64 " and 0x%" PRIx64 "%s",
                                      c->what, c->v0, c->v1, sep);
            else if (c->cls == CHG_VALUE)
                l += (size_t)snprintf(line + l, sizeof line - l,
                                      " %s changes %s, 0x%" PRIx64 " -> 0x%" PRIx64 "%s",
                                      c->what, every, c->va, c->vb, sep);
            else
                l += (size_t)snprintf(line + l, sizeof line - l, " %s changes %s%s", c->what,
                                      every, sep);
        }
        if (l < sizeof line && line[l - 1] == ',')
            line[--l] = '\0';
        if (l < sizeof line && f->captured)
            l += fmt(line + l, sizeof line - l, " differ%s from the capture",
                     f->nchg == 1 ? "s" : "");
        if (l < sizeof line)
            snprintf(line + l, sizeof line - l, " (%" PRIu64 " %s%s)", f->n,
                     f->replay   ? (f->n == 1 ? "capture" : "captures")
                     : f->n == 1 ? "step"
                                 : "steps",
                     f->replay ? ", NOT replay-safe" : "");
        o->line(o->ctx, line);
    }
    held_free(f, 1); /* a report held back that began no run: warm-up */
    f->n = 0, f->sig = 0, f->streak = 0, f->quiet = 0, f->gap = 0, f->period = 0;
}

void atl_fold_idle(struct atl_fold *f, const struct atl_diff_opts *o)
{
    if (f->sig && ++f->gap < (f->period ? f->period : ATL_FOLD_GAP_MAX))
        return; /* its next change may yet come at its period */
    atl_fold_flush(f, o);
}

size_t atl_fold_again(struct atl_fold *f, uint64_t index)
{
    if (!f->sig || !f->chg)
        return 0;
    if (!f->n++)
        f->first = index;
    f->last = index;
    for (unsigned i = 0; i < f->nchg; i++) {
        struct atl_fold_chg *c = &f->chg[i];
        if (f->n == 1)
            c->va = c->v0, c->steady = 1, c->alt = 1;
        c->vb = c->v1;
    }
    return f->nchg;
}

void atl_fold_free(struct atl_fold *f)
{
    held_free(f, 0);
    free(f->chg);
    memset(f, 0, sizeof *f);
}

/* ---- shapes ---------------------------------------------------------------------- */

void atl_shape_delta(const struct atl_step *a, const struct atl_step *b, char *buf, size_t len)
{
    size_t n = a->nops, m = b->nops, p = 0, q = 0;
    buf[0] = '\0';
    if (step_hashes(a, 0) || step_hashes(b, 0)) {
        snprintf(buf, len, "%zu op%s against %zu", m, m == 1 ? "" : "s", n);
        return;
    }
    const uint64_t *sa = a->shape, *sb = b->shape;
    while (p < n && p < m && sa[p] == sb[p])
        p++;
    while (q < n - p && q < m - p && sa[n - 1 - q] == sb[m - 1 - q])
        q++;
    size_t mn = n - p - q, mm = m - p - q;
    char sum[384];
    if (!mn != !mm) { /* one run inserted, or one removed */
        const struct atl_step *s = mm ? b : a;
        size_t run = mm ? mm : mn;
        /* worded as the diff's own line for it (insdel) */
        const char *what = mm ? "inserted" : "of the previous step removed";
        op_summary(s, &s->ops[p], sum, sizeof sum);
        if (run == 1)
            fmt(buf, len, "op %zu %s: %s", p, what, sum);
        else
            fmt(buf, len, "ops %zu..%zu (%zu of them) %s: %s", p, p + run - 1, run, what, sum);
    } else if (mn && mm) {
        op_summary(b, &b->ops[p], sum, sizeof sum);
        fmt(buf, len, "from op %zu on (%zu ops against %zu): %s", p, mm, mn, sum);
    } else {
        snprintf(buf, len, "the same ops");
    }
}

/* The report r as a finding (kernel: room for its kernel's name). Its kernel is the first
 * one whose parameters or launch changed. */
static struct atl_diff_found found_of(const struct report *r, int folded, char *kernel, size_t klen)
{
    report_heads((struct report *)r); /* made lazily: const to the rest */
    struct atl_diff_found f = {.a = r->a,
                               .b = r->b,
                               .header = r->lines == r->noted ? r->header_noted : r->header,
                               .n = r->lines - r->noted,
                               .folded = folded};
    for (unsigned i = 0; i < r->nchg && !f.kernel; i++) {
        const struct atl_op *o = r->chg[i].cls == CHG_TEXT ? NULL : op_at(r, r->chg[i].op);
        if (o && o->kind == ATL_OP_LAUNCH && o->u.k.kfn) {
            base_name(o->u.k.kfn->pretty ? o->u.k.kfn->pretty : o->u.k.kfn->mangled, kernel, klen);
            f.kernel = kernel;
            f.kernel_mangled = o->u.k.kfn->mangled;
        }
    }
    return f;
}

/* r through opts->found: 1 when its lines are to be printed. */
static int tell_found(const struct report *r, int folded)
{
    if (!r->o->found)
        return 1;
    char kernel[160] = "";
    struct atl_diff_found f = found_of(r, folded, kernel, sizeof kernel);
    return r->o->found(r->o->found_ctx, &f);
}

/* ---- warm-up: reports held back until their reference settles -------------------------- */

struct atl_fold_held {
    size_t ndiff; /* its differences */
    char header[1024], kernel[160], mangled[512];
    int has_kernel;
    char step[64]; /* the differing step's name and occurrence (the finding's) */
    uint64_t nth, index;
    struct atl_diff_stats *st; /* where dropping it is counted */
};

static void held_free(struct atl_fold *f, int dropped)
{
    struct atl_fold_held *h = f->held;
    if (!h)
        return;
    if (dropped && h->st)
        h->st->warmup++;
    free(h);
    f->held = NULL;
}

/* f holds r back (its finding: its lines are not needed, see held_release); when it cannot,
 * r is counted as warm-up. r's kept lines are gone either way. */
static void held_take(struct atl_fold *f, struct report *r, struct atl_diff_stats *st)
{
    held_free(f, 1);
    struct atl_fold_held *h = calloc(1, sizeof *h);
    if (!h) {
        if (st)
            st->warmup++;
        report_discard(r);
        return;
    }
    char kernel[160] = "";
    struct atl_diff_found fd = found_of(r, 0, kernel, sizeof kernel);
    snprintf(h->header, sizeof h->header, "%s", fd.header);
    if (fd.kernel) {
        h->has_kernel = 1;
        snprintf(h->kernel, sizeof h->kernel, "%s", fd.kernel);
        snprintf(h->mangled, sizeof h->mangled, "%s", fd.kernel_mangled ? fd.kernel_mangled : "");
    }
    snprintf(h->step, sizeof h->step, "%s", r->b->name);
    h->nth = r->b->nth;
    h->index = r->b->index;
    h->ndiff = fd.n;
    h->st = st;
    report_discard(r);
    f->held = h;
}

/* The next step of f's shape changed as the held report's did: a run began in warm-up. The
 * held step is its first, said by the run's one line like the rest; its finding is handed
 * over as the report that begins the run is (one not to be printed silences the run). */
static void held_release(struct atl_fold *f, const struct atl_diff_opts *o)
{
    struct atl_fold_held *h = f->held;
    if (!h)
        return;
    int print = 1;
    if (o->found) {
        struct atl_step b;
        memset(&b, 0, sizeof b);
        snprintf(b.name, sizeof b.name, "%s", h->step);
        b.nth = h->nth;
        b.index = h->index;
        struct atl_diff_found fd = {.b = &b,
                                    .header = h->header,
                                    .kernel = h->has_kernel ? h->kernel : NULL,
                                    .kernel_mangled =
                                        h->has_kernel && h->mangled[0] ? h->mangled : NULL,
                                    .n = h->ndiff};
        print = o->found(o->found_ctx, &fd);
    }
    if (!print)
        f->quiet = 1;
    atl_fold_again(f, h->index);
    held_free(f, 0);
}

void atl_fold_settle(struct atl_fold *f)
{
    held_free(f, 1);
    f->settled = 1;
}

/* Walks steps a and b of r, pair by pair, into r's lines (formatted only where r->texts) and
 * changes. */
static void walk(struct report *r)
{
    const struct atl_step *a = r->a, *b = r->b;
    const struct atl_diff_opts *opts = r->o;
    size_t n = a->nops, m = b->nops;
    struct edit *ed = NULL;
    size_t ned = 0, cap = 0;
    const int raw = raw_comparable(a, b);
    size_t p = 0;
    if (opts->shapes && atl_step_shape(a) != atl_step_shape(b)) {
        /* steps that should run alike ran other ops: where, in one line */
        char d[512], line[640];
        atl_shape_delta(a, b, d, sizeof d);
        snprintf(line, sizeof line, "  %s", d);
        emit(r, RANK_OPS, line);
        /* folded as where the shapes part, without the op's values */
        char what[96];
        fmt(what, sizeof what, "another shape, %.*s", (int)strcspn(d, ":"), d);
        chg_add(r, 0, str_hash(what), CHG_TEXT, what, 0, 0, 0);
        goto done;
    }
    if (raw) {
        /* The common prefix, its pairs reported as it is found: runs of
         * identical records need neither a shape nor a hash, and when it
         * covers both steps (the same ops, some values changed) no array
         * of hashes is made at all. */
        enum { RUN = 256 };
        const size_t lim = n < m ? n : m;
        while (p < lim) {
            if (p % RUN == 0 && p + RUN <= lim && run_identical(a, b, p, RUN)) {
                p += RUN;
                continue;
            }
            if (!same_shape(&a->ops[p], &b->ops[p]))
                break;
            if (pair_differs(a, p, b, p, raw))
                diff_pair(r, p, p);
            p++;
        }
        if (p == n && p == m)
            goto done;
    }
    if (step_hashes(a, !raw) || step_hashes(b, !raw)) {
        opts->line(opts->ctx, "step diff: out of memory; this step was not compared");
        goto done;
    }
    const uint64_t *sa = a->shape, *sb = b->shape;
    /* the common case, identical steps: one pass over the hashes */
    if (!raw && n == m && memcmp(a->full, b->full, n * sizeof *a->full) == 0)
        goto done;
    if (!raw) {
        while (p < n && p < m && sa[p] == sb[p])
            p++;
        for (size_t i = 0; i < p; i++)
            if (pair_differs(a, i, b, i, raw))
                diff_pair(r, i, i);
    }
    size_t q = 0;
    while (q < n - p && q < m - p && sa[n - 1 - q] == sb[m - 1 - q])
        q++;
    size_t mn = n - p - q, mm = m - p - q;

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
                if (pair_differs(a, i, b, j, raw))
                    diff_pair(r, i, j);
            } else {
                int ins = ed[e].t == ED_INS;
                const uint64_t *sh = ins ? sb : sa;
                size_t at = ins ? j : i, run = 1;
                while (e + 1 < ned && ed[e + 1].t == ed[e].t &&
                       (ins ? ed[e + 1].j + p : ed[e + 1].i + p) == at + run &&
                       sh[at + run] == sh[at])
                    run++, e++;
                insdel(r, ins ? b : a, at, run, ins);
            }
        }
    }
    for (size_t t = 0; t < q; t++)
        if (pair_differs(a, n - q + t, b, m - q + t, raw))
            diff_pair(r, n - q + t, m - q + t);

done:
    free(ed);
    report_close(r);
}

/* Prints r. A report walked without its lines' texts (the first pass of a step whose report
 * may yet be folded, held back or suppressed: most are) is walked again, formatting the lines
 * it can print; lines no report prints are never formatted. */
static void print_lines(struct report *r)
{
    if (r->texts || !r->lines) {
        report_print(r);
        return;
    }
    struct report *t = malloc(sizeof *t);
    if (!t) {
        report_print(r); /* the header and the count of lines, without them */
        return;
    }
    *t = (struct report){.o = r->o, .a = r->a, .b = r->b, .na = r->na, .nb = r->nb, .texts = 1};
    walk(t);
    if (r->st)
        r->st->formatted += t->nkept;
    report_print(t);
    free(t);
}

size_t atl_step_diff(const struct atl_step *a, const struct atl_step *b,
                     const struct atl_diff_opts *opts, struct atl_diff_stats *st)
{
    return atl_step_compare(a, b, opts, st, NULL);
}

size_t atl_step_compare(const struct atl_step *a, const struct atl_step *b,
                        const struct atl_diff_opts *opts, struct atl_diff_stats *st,
                        struct atl_fold *fold)
{
    struct report r = {.o = opts,
                       .st = st,
                       .a = a,
                       .b = b,
                       .na = opts->sparse ? opts->sparse_nops : a->nops,
                       .nb = opts->sparse ? opts->sparse_nops : b->nops,
                       .texts = fold == NULL || fold->printed};
    const size_t nb = r.nb;
    if (st)
        st->compared++;

    walk(&r);
    if (r.lines && r.lines == r.noted && opts->residue != ATL_PTRS_ALL) {
        /* only pointers that moved within their allocations (allocator reuse) and words of
         * uninitialised bytes changed, each collapsed: the reference's host values, said in
         * the summary's count (ATLAS_DIFF_POINTERS=all, ATLAS_DIFF_RESIDUE=all print them) */
        report_discard(&r);
        r.lines = r.noted = 0;
        if (st)
            st->quiet++;
    }
    int begun = 0;
    if (fold)
        fold->printed = 0; /* until a report that cannot fold is */
    if (fold && r.lines && !r.chg_over) {
        uint64_t sig = report_sig(&r);
        if (fold_fits(fold, &r, sig)) {
            /* as the step before: counted, printed with the run (and the report that began
             * it, if it was held back as warm-up: the run settles its reference) */
            held_release(fold, opts);
            fold->settled = 1;
            fold_extend(fold, &r);
            report_discard(&r);
            r.lines -= r.noted;
            if (st && r.lines == 0)
                st->identical++;
            if (r.lines)
                tell_found(&r, 1);
            return r.lines;
        }
        uint64_t was = fold->sig, gap = fold->gap;
        unsigned streak = fold->streak;
        atl_fold_flush(fold, opts);
        report_heads(&r);
        fold_set(fold, &r, sig, was == sig ? streak + 1 : 1, r.where);
        /* the same fields again after `gap` identical steps: the run's period */
        fold->period = was == sig ? gap + 1 : 0;
        begun = 1;
    } else if (fold) {
        atl_fold_flush(fold, opts); /* identical, or too much to fold: a run ends */
    }
    if (fold && r.lines == 0)
        atl_fold_settle(fold); /* the reference's host values again */
    if (fold && opts->warmup && !fold->settled && r.lines > r.noted) {
        /* warm-up: held back (printed if the next step of the shape begins a run with it) */
        if (begun) {
            held_take(fold, &r, st); /* (or counted and dropped when it cannot be) */
        } else {
            if (st)
                st->warmup++;
            report_discard(&r);
        }
        return r.lines - r.noted;
    }
    /* residue is printed, but the step holds no other host value */
    if (r.lines > r.noted && !tell_found(&r, 0)) {
        /* not printed (suppressed, past the print limit): nor is the run it may begin */
        if (begun)
            fold->quiet = 1;
        report_discard(&r);
        return r.lines - r.noted;
    }
    print_lines(&r);
    if (fold && r.lines && r.chg_over)
        fold->printed = 1;
    r.lines -= r.noted;
    if (r.lines == 0) {
        if (st)
            st->identical++;
        if (opts->replay) {
            char line[256];
            snprintf(line, sizeof line,
                     "%s #%" PRIu64 " is replay-safe: identical to #%" PRIu64 " (%zu op%s)",
                     opts->replay, b->nth, a->nth, nb, nb == 1 ? "" : "s");
            opts->line(opts->ctx, line);
        }
    } else if (opts->replay) {
        char line[256];
        snprintf(line, sizeof line,
                 "%s #%" PRIu64 " is NOT replay-safe: it froze the %zu host value(s) above",
                 opts->replay, b->nth, r.lines);
        opts->line(opts->ctx, line);
    }
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
        char how[400], buf[800];
        if (st->run_a && st->run_b) {
            /* two runs: each change is one run against the other, not a step against the last */
            if (f[i].n == 1)
                snprintf(how, sizeof how, "0x%" PRIx64 " in %.100s, 0x%" PRIx64 " in %.100s",
                         f[i].v[0], st->run_a, f[i].v[1], st->run_b);
            else
                snprintf(how, sizeof how,
                         "first 0x%" PRIx64 " in %.100s, 0x%" PRIx64 " in %.100s; last 0x%" PRIx64
                         " in %.100s",
                         f[i].v[0], st->run_a, f[i].v[1], st->run_b, f[i].last, st->run_b);
            snprintf(buf, sizeof buf,
                     "trace summary: run-to-run value: %.160s differs between the runs in %" PRIu64
                     " step%s: %s",
                     f[i].what, f[i].n, f[i].n == 1 ? "" : "s", how);
            line(ctx, buf);
            continue;
        }
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
        snprintf(buf, sizeof buf, "trace summary: frozen value: %d more parameter%s changed",
                 n - 16, n - 16 == 1 ? "" : "s");
        line(ctx, buf);
    }
}

void atl_diff_summary(const struct atl_diff_stats *st, void (*line)(void *, const char *),
                      void *ctx)
{
    char buf[1024];
    size_t l;
    if (st->run_a && st->run_b)
        /* each run's steps on their own: a step of one is compared with its match in the other */
        l = atl_fmt(buf, sizeof buf,
                    "trace summary: steps=%" PRIu64 " in %.200s, %" PRIu64
                    " in %.200s; compared=%" PRIu64 " identical=%" PRIu64 " differing=%" PRIu64,
                    st->steps_a, st->run_a, st->steps_b, st->run_b, st->compared, st->identical,
                    st->compared - st->identical);
    else
        l = atl_fmt(buf, sizeof buf,
                    "trace summary: steps=%" PRIu64 " compared=%" PRIu64 " identical=%" PRIu64
                    " differing=%" PRIu64,
                    st->steps, st->compared, st->identical, st->compared - st->identical);
    if (st->shapes)
        atl_fmt(buf + l, sizeof buf - l, " shapes=%" PRIu64, st->shapes);
    line(ctx, buf);
    if (st->warmup) {
        fmt(buf, sizeof buf,
            "trace summary: %" PRIu64 " differing step%s of warm-up not printed (a shape that had "
            "not yet repeated with the same host values nor changed the same way twice; %s "
            "prints them)",
            st->warmup, st->warmup == 1 ? "" : "s",
            st->warmup_how ? st->warmup_how : "ATLAS_DIFF_WARMUP=1");
        line(ctx, buf);
    }
    if (st->quiet) {
        fmt(buf, sizeof buf,
            "trace summary: %" PRIu64 " step%s counted identical: only pointers that moved "
            "within their allocations or between a caching allocator's segments (allocator "
            "reuse), host buffers of pageable copies or "
            "uninitialised bytes of by-value parameters changed (%s lists them)",
            st->quiet, st->quiet == 1 ? "" : "s",
            st->quiet_how ? st->quiet_how : "ATLAS_DIFF_POINTERS=all ATLAS_DIFF_RESIDUE=all");
        line(ctx, buf);
    }
    if (st->per_shape[0]) {
        fmt(buf, sizeof buf, "trace summary: steps per shape: %s", st->per_shape);
        line(ctx, buf);
    }
    frozen_summary(st, line, ctx);
    if (!st->ntop)
        return;
    /* said already when every field of it is a frozen value the lines above name */
    int news = 0;
    for (int i = 0; i < st->ntop && !news; i++) {
        int named = 0;
        for (int f = 0; f < st->nfrozen && f < 16 && !named; f++)
            named =
                st->frozen[f].n == st->top[i].n && strcmp(st->frozen[f].what, st->top[i].what) == 0;
        news = !named;
    }
    if (!news && st->nfrozen <= 16)
        return;
    struct atl_diff_stats tmp = *st;
    _Static_assert(
        offsetof(struct atl_diff_stats, top[0].n) - offsetof(struct atl_diff_stats, top[0]) == 160,
        "top_cmp reads n at 160");
    qsort(tmp.top, (size_t)tmp.ntop, sizeof tmp.top[0], top_cmp);
    l = (size_t)snprintf(buf, sizeof buf, "trace summary: most often differing:");
    for (int i = 0; i < tmp.ntop && i < 8 && l < sizeof buf; i++)
        l += (size_t)snprintf(buf + l, sizeof buf - l, "%s %s (%" PRIu64 "x)", i ? "," : "",
                              tmp.top[i].what, tmp.top[i].n);
    line(ctx, buf);
}
