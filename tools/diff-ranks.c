/*
 * atlas-diff --ranks: which rank did something different.
 *
 * N ranks of one SPMD job should enqueue the same ops step after step; the
 * one that takes another branch (one more all-reduce, another size) makes
 * every other rank wait for ever in a collective. This reads the ranks'
 * ATLAS_TRACE_FILE files side by side, aligns their steps by name and
 * occurrence (the n-th step named X on each rank), and for each step where
 * the ranks do not all agree names the minority and what it did.
 *
 * Scale (64 ranks x 10,000 steps x 100 ops is 64 million lines): the files
 * are read once, in lockstep, a step of each rank at a time, and each step
 * is reduced to one hash of its lines as written, leaving out what differs
 * between processes for the same op (the step number, stream handles, raw
 * device addresses of memsets and copies, and the bytes of pointers that
 * carry an allocation name, whose name is hashed instead). Only when the
 * hashes of a step disagree are the steps of the minority and of one rank
 * of the majority parsed in full (atl_trace_read, src/tracejson.c) and
 * diffed (atl_step_diff, src/tracediff.c: kernels, launch geometry and
 * argument bytes, pointers by allocation identity). Memory stays at one
 * step per rank in flight. The keys, and which of them are per process,
 * are src/traceformat.h's, as the writer spells them.
 */
#define _GNU_SOURCE
#include "diff-ranks.h"
#include "traceformat.h"
#include "tracejson.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the fast pass: one hash per step and rank ---------------------------------- */

#define mix atl_hash_mix

static uint64_t span_hash(uint64_t h, const char *p, size_t n)
{
    size_t i = 0;
    /* four lanes: the multiplies of one line's words do not wait on each other */
    if (n >= 32) {
        uint64_t l[4] = {h, h ^ 1, h ^ 2, h ^ 3};
        for (; i + 32 <= n; i += 32)
            for (int k = 0; k < 4; k++) {
                uint64_t w;
                memcpy(&w, p + i + 8 * k, 8);
                l[k] = mix(l[k], w);
            }
        h = mix(mix(mix(l[0], l[1]), l[2]), l[3]);
    }
    return atl_hash_bytes(h, p + i, n - i);
}

/* A parameter's "hex" (hs..he): its bytes, less the 8-byte words the same
 * parameter record names as "alloc"/"allocW" (pointers: their names follow
 * in the record and are hashed as text). */
static uint64_t hex_hash(uint64_t h, const char *hs, const char *he, const char *e)
{
    const char *end = memchr(he, '}', (size_t)(e - he));
    if (!end)
        end = e;
    size_t at = 0, n = (size_t)(he - hs);
    static const char key[] = "\"" ATL_TF_ALLOC; /* "alloc or "allocW */
    const size_t kl = sizeof key - 1;
    for (const char *a = he; (a = memmem(a, (size_t)(end - a), key, kl)); a += kl) {
        size_t w = 0;
        for (const char *d = a + kl; d < end && isdigit((unsigned char)*d) && w <= n; d++)
            w = w * 10 + (size_t)(*d - '0');
        if (w > n / 2 || 2 * w < at || 2 * w + 16 > n) /* not a word of this hex */
            continue;
        h = span_hash(h, hs + at, 2 * w - at);
        at = 2 * w + 16;
    }
    return span_hash(h, hs + at, n - at);
}

/* Version 2: a launch's "p" (hs..he), less the 8-byte words its "a" notes
 * name ([at,alloc,off] or [at] for host memory, later in the line): the
 * notes themselves are hashed as text. */
static uint64_t phex_hash(uint64_t h, const char *hs, const char *he, const char *e)
{
    static const char key[] = ATL_TF_KEY(ATL_TF_V2_NOTES) "[";
    size_t at = 0, n = (size_t)(he - hs);
    const char *a = memmem(he, (size_t)(e - he), key, sizeof key - 1);
    for (const char *q = a ? a + sizeof key - 1 : e; q < e && *q == '[';) {
        size_t w = 0;
        for (q++; q < e && isdigit((unsigned char)*q) && w <= n; q++)
            w = w * 10 + (size_t)(*q - '0');
        if (w <= n / 2 && 2 * w >= at && 2 * w + 16 <= n) { /* a word of this block */
            h = span_hash(h, hs + at, 2 * w - at);
            at = 2 * w + 16;
        }
        const char *close = memchr(q, ']', (size_t)(e - q));
        if (!close)
            break;
        q = close + 1;
        if (q < e && *q == ',')
            q++;
    }
    return span_hash(h, hs + at, n - at);
}

/* One op line, as ATLAS_TRACE_FILE writes it (either version), without what
 * differs between two processes that enqueue the same op. */
static uint64_t line_hash(const char *p, size_t n)
{
    const char *e = p + n, *seg = p, *s = p, *k, *v;
    size_t kl;
    uint64_t h = 0x5eed;
    while ((v = atl_tf_next_key(s, e, &k, &kl))) {
        int skip = 0;
        if (ATL_TF_IS(k, kl, ATL_TF_STEP) || ATL_TF_IS(k, kl, ATL_TF_V2_STEP))
            skip = 1;
        else if (ATL_TF_IS(k, kl, ATL_TF_STREAM) || ATL_TF_IS(k, kl, ATL_TF_V2_STREAM) ||
                 ATL_TF_IS(k, kl, ATL_TF_PTR) || ATL_TF_IS(k, kl, ATL_TF_DST) ||
                 ATL_TF_IS(k, kl, ATL_TF_SRC))
            skip = 2;
        else if (ATL_TF_IS(k, kl, ATL_TF_PARAM_HEX))
            skip = 3;
        else if (ATL_TF_IS(k, kl, ATL_TF_V2_PBYTES))
            skip = 4;
        if (!skip) {
            s = v;
            continue;
        }
        h = span_hash(h, seg, (size_t)(v - seg));
        const char *ve = v;
        if (skip == 1) {
            while (ve < e && isdigit((unsigned char)*ve))
                ve++;
        } else if (ve < e && *ve == '"') {
            ve = atl_tf_str_end(v + 1, e);
            if (skip == 3)
                h = hex_hash(h, v + 1, ve, e);
            else if (skip == 4)
                h = phex_hash(h, v + 1, ve, e);
            if (ve < e)
                ve++;
        }
        seg = s = ve;
    }
    return span_hash(h, seg, (size_t)(e - seg));
}

/* ---- reading a rank's file a step at a time ------------------------------------- */

/* A rank's file, mapped: lines are read in place (no copy out of the page
 * cache, which cost as much as the rest of the work), and the lines of the
 * previous step stay where they are for the comparison below. */
struct rd {
    const char *map;
    size_t size;
    uint64_t off; /* of the next line */
};

/* The next line (without its newline); NULL at the end. *complete is 0 for a
 * last line without a newline. */
static const char *next_line(struct rd *r, size_t *len, int *complete)
{
    if (r->off >= r->size)
        return NULL;
    const char *line = r->map + r->off;
    const char *nl = memchr(line, '\n', r->size - r->off);
    *complete = nl != NULL;
    *len = nl ? (size_t)(nl - line) : r->size - r->off;
    r->off += *len + (nl != NULL);
    return line;
}

/* The lines of a rank's previous step, to skip hashing the same line again:
 * a training loop's steps are byte for byte the same but for their number,
 * and memcmp is much cheaper than the hash. */
struct seen_line {
    const char *rest; /* the line after its step number, in the mapping */
    size_t len;
    uint64_t h;
};

struct line_cache {
    struct seen_line *l;
    size_t n, cap;
};

struct name_count {
    char name[64];
    uint64_t n;
};

struct rank {
    long id;
    char *path;
    struct rd rd;
    uint64_t lineno, steps, last_index;
    int done, cut; /* cut: the file ends inside a step (killed while writing it) */
    uint64_t cut_index;
    struct name_count *names;
    size_t nnames, capnames;
    /* the step just read */
    char name[64]; /* as written (JSON escapes kept), cut to 63 bytes */
    const char *rawname;
    size_t rawlen;
    uint64_t index, hash, off, len, nops, nth;
    struct line_cache prev, cur;
    /* steps the other ranks have and this one does not, past its end */
    uint64_t lacks, lacks_order;
};

/* The step number and name at the head of a line ({"step":N,"name":"..."),
 * or the step number alone (version 2's {"s":N,...}: *name NULL), where the
 * line goes on after the number (*after), and whether it is the step's end
 * record (with its op count). 1: the file's header (version 2), no record;
 * -1 when the line is not laid out as ATLAS_TRACE_FILE writes it. */
static int line_head(const char *p, size_t n, uint64_t *step, const char **name, size_t *namelen,
                     const char **after, int *end, uint64_t *nops)
{
    const char *e = p + n;
    if (ATL_TF_SKIP(p, e, "{" ATL_TF_KEY(ATL_TF_FORMAT)))
        return 1;
    int v2 = ATL_TF_SKIP(p, e, "{" ATL_TF_KEY(ATL_TF_V2_STEP));
    if (!v2 && !ATL_TF_SKIP(p, e, "{" ATL_TF_KEY(ATL_TF_STEP)))
        return -1;
    if (p >= e || !isdigit((unsigned char)*p))
        return -1;
    uint64_t v = 0;
    for (; p < e && isdigit((unsigned char)*p); p++)
        v = v * 10 + (uint64_t)(*p - '0');
    *step = v;
    *after = p;
    *end = 0;
    if (v2) { /* an op or a kernel's declaration */
        *name = NULL, *namelen = 0;
        return 0;
    }
    if (!ATL_TF_SKIP(p, e, "," ATL_TF_KEY(ATL_TF_NAME) "\""))
        return -1;
    const char *ne = atl_tf_str_end(p, e);
    if (ne >= e)
        return -1;
    *name = p, *namelen = (size_t)(ne - p);
    p = ne + 1;
    /* an end record names the step's thread and stream first: the stream is
     * an address of its process, and a rank's steps are its main thread's */
    static const char *const skip[] = {"," ATL_TF_KEY(ATL_TF_THREAD) "\"",
                                       "," ATL_TF_KEY(ATL_TF_STREAM) "\""};
    for (int k = 0; k < 2; k++) {
        size_t sl = strlen(skip[k]);
        if ((size_t)(e - p) > sl && !memcmp(p, skip[k], sl)) {
            const char *q = atl_tf_str_end(p + sl, e);
            if (q >= e)
                return -1;
            p = q + 1;
        }
    }
    /* (strictly longer: the count follows) */
    static const char endrec[] = "," ATL_TF_KEY(ATL_TF_END) "true," ATL_TF_KEY(ATL_TF_OPS);
    if ((size_t)(e - p) > sizeof endrec - 1 && !memcmp(p, endrec, sizeof endrec - 1)) {
        *end = 1;
        p += sizeof endrec - 1;
        *nops = strtoull(p, NULL, 10);
    } else if (!ATL_TF_SKIP(p, e, "," ATL_TF_KEY(ATL_TF_OP))) {
        return -1;
    }
    return 0;
}

static uint64_t name_nth(struct rank *r, const char *name)
{
    for (size_t i = 0; i < r->nnames; i++)
        if (!strcmp(r->names[i].name, name))
            return ++r->names[i].n;
    if (atl_grow((void **)&r->names, &r->capnames, r->nnames + 1, sizeof *r->names, 8))
        return 0;
    struct name_count *c = &r->names[r->nnames++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->n = 1;
    return 1;
}

/* Reads the next step's head, hash and place in the file. 1: a step; 0: the
 * file ended (r->cut when inside a step); -1: trouble, said in err. */
static int read_step(struct rank *r, char *err, size_t errlen)
{
    uint64_t h = 0, count = 0;
    size_t nline = 0; /* lines of the step so far (the cache's index) */
    int open = 0;
    for (;;) {
        size_t len;
        int complete;
        uint64_t at = r->rd.off;
        const char *line = next_line(&r->rd, &len, &complete);
        if (!line || !complete) { /* a last line without its newline: cut while written */
            if (open || line) {
                r->cut = 1;
                r->cut_index = open ? r->index : r->last_index + 1;
            }
            return 0;
        }
        r->lineno++;
        if (len == 0)
            continue;
        uint64_t step, nops = 0;
        const char *name, *rest;
        size_t nl;
        int end;
        int head = line_head(line, len, &step, &name, &nl, &rest, &end, &nops);
        if (head < 0) {
            snprintf(err, errlen,
                     "line %" PRIu64 ": not a step record as ATLAS_TRACE_FILE writes it "
                     "({" ATL_TF_KEY(ATL_TF_STEP) "N," ATL_TF_KEY(
                         ATL_TF_NAME) "...} or "
                                      "{" ATL_TF_KEY(ATL_TF_V2_STEP) "N,...})",
                     r->lineno);
            return -1;
        }
        if (head > 0) { /* the header (version 2): before any step */
            if (open) {
                snprintf(err, errlen, "line %" PRIu64 ": a header inside step %" PRIu64, r->lineno,
                         r->index);
                return -1;
            }
            continue;
        }
        if (!open) {
            open = 1;
            r->index = step, r->off = at;
            r->rawname = NULL; /* version 2: from the end record */
            r->cur.n = 0;
        } else if (step != r->index ||
                   (name && r->rawname && (nl != r->rawlen || memcmp(name, r->rawname, nl)))) {
            snprintf(err, errlen,
                     "line %" PRIu64 ": step %" PRIu64 " begins before step %" PRIu64 " ended",
                     r->lineno, step, r->index);
            return -1;
        }
        if (name && !r->rawname) {
            r->rawname = name, r->rawlen = nl; /* in the mapping, whole */
            size_t keep = nl < sizeof r->name ? nl : sizeof r->name - 1;
            memcpy(r->name, name, keep);
            r->name[keep] = '\0';
        }
        if (end) {
            if (nops != count) {
                snprintf(err, errlen,
                         "line %" PRIu64 ": step %" PRIu64 " ends with %" PRIu64
                         " ops, its end record says %" PRIu64,
                         r->lineno, step, count, nops);
                return -1;
            }
            r->hash = mix(h, count);
            r->nops = count;
            r->len = r->rd.off - r->off;
            r->nth = name_nth(r, r->name);
            r->steps++;
            r->last_index = step;
            struct line_cache t = r->prev;
            r->prev = r->cur;
            r->cur = t;
            r->cur.n = 0;
            return 1;
        }
        /* the line after its step number */
        size_t rl = len - (size_t)(rest - line);
        uint64_t lh;
        struct line_cache *pv = &r->prev, *cu = &r->cur;
        if (nline < pv->n && pv->l[nline].len == rl && !memcmp(pv->l[nline].rest, rest, rl))
            lh = pv->l[nline].h;
        else
            lh = line_hash(line, len);
        if (cu->n < cu->cap || !atl_grow((void **)&cu->l, &cu->cap, cu->n + 1, sizeof *cu->l, 256))
            cu->l[cu->n++] = (struct seen_line){rest, rl, lh};
        nline = cu->n;
        h = mix(h, lh);
        /* a kernel's declaration (version 2, {"s":N,"k":...}) is hashed, not counted */
        count += name || !ATL_TF_AT(rest, rest + rl, "," ATL_TF_KEY(ATL_TF_V2_KERNEL));
    }
}

/* ---- steps of all ranks, by (name, occurrence) ------------------------------------ */

struct slot {
    uint64_t hash, off, len, index, nops;
    int has;
};

struct bucket {
    struct bucket *next;
    char name[64];
    uint64_t nth, order; /* order: the lowest step number among the ranks that have it */
    int have;
    struct slot s[];
};

#define NHEADS 4096

struct finding {
    uint64_t order, seq;
    char *text;
};

/* Findings kept, the first by step (a max-heap on order, then arrival, so
 * that the latest can go when a newer one comes earlier): a job whose ranks
 * differ at every step, or a pattern that matches one stray file numbered
 * far past the others, must not hold one finding per step or per rank
 * number in memory. The rest are counted. */
#define FINDINGS_KEPT 1000

struct job {
    struct rank *r;
    int n, ndone;
    struct bucket *heads[NHEADS];
    size_t pending;
    struct finding *found;         /* the heap: at most FINDINGS_KEPT */
    size_t nfound, capfound, nall; /* kept; all found */
    uint64_t aligned, differing;
    const struct atl_diff_opts *o;
    int trouble;
};

static size_t key_slot(const char *name, uint64_t nth)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
    return (size_t)(mix(h, nth) & (NHEADS - 1));
}

/* "0-2,4,6-7": the ranks whose `mark` is set, by rank number. */
static void rank_list(const struct job *j, const int *mark, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < j->n && n + 1 < len;) {
        if (!mark[i]) {
            i++;
            continue;
        }
        int k = i;
        while (k + 1 < j->n && mark[k + 1] && j->r[k + 1].id == j->r[k].id + 1)
            k++;
        if (k == i)
            n += (size_t)snprintf(out + n, len - n, "%s%ld", n ? "," : "", j->r[i].id);
        else
            n += (size_t)snprintf(out + n, len - n, "%s%ld-%ld", n ? "," : "", j->r[i].id,
                                  j->r[k].id);
        if (n >= len)
            n = len - 1;
        i = k + 1;
    }
}

static int count_marked(const int *mark, int n)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += mark[i] != 0;
    return c;
}

static int later(const struct finding *a, const struct finding *b)
{
    return a->order != b->order ? a->order > b->order : a->seq > b->seq;
}

static void heap_down(struct finding *h, size_t n, size_t i)
{
    for (;;) {
        size_t m = i, l = 2 * i + 1, r = l + 1;
        if (l < n && later(&h[l], &h[m]))
            m = l;
        if (r < n && later(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        struct finding t = h[i];
        h[i] = h[m], h[m] = t;
        i = m;
    }
}

static void add_finding(struct job *j, uint64_t order, char *text)
{
    if (!text) {
        j->trouble = 1;
        return;
    }
    struct finding f = {order, j->nall++, text};
    if (j->nfound == FINDINGS_KEPT) { /* full: it replaces the latest kept, if earlier */
        if (!later(&j->found[0], &f)) {
            free(text);
            return;
        }
        free(j->found[0].text);
        j->found[0] = f;
        heap_down(j->found, j->nfound, 0);
        return;
    }
    if (atl_grow((void **)&j->found, &j->capfound, j->nfound + 1, sizeof *j->found, 64)) {
        free(text);
        j->trouble = 1;
        return;
    }
    size_t i = j->nfound++;
    for (; i > 0 && later(&f, &j->found[(i - 1) / 2]); i = (i - 1) / 2)
        j->found[i] = j->found[(i - 1) / 2];
    j->found[i] = f;
}

/* The diff's lines for one step, gathered into one text. */
struct capture {
    char *text;
    size_t len, cap;
    int lines; /* op lines, the diff's own header left out */
    int seen_header;
    int oom;
};

static void cap_append(struct capture *c, const char *s)
{
    size_t n = strlen(s);
    if (atl_grow((void **)&c->text, &c->cap, c->len + n + 2, 1, 256)) {
        c->oom = 1;
        return;
    }
    memcpy(c->text + c->len, s, n);
    c->len += n;
    c->text[c->len] = '\0';
}

static void cap_line(void *ctx, const char *text)
{
    struct capture *c = ctx;
    if (!c->seen_header) { /* "step ... differs from #N": ours replaces it */
        c->seen_header = 1;
        return;
    }
    /* the diff speaks of a step and its predecessor; here b is the minority
     * and a the majority's step */
    char buf[1024];
    const char *was = strstr(text, " of the previous step removed:");
    if (was) {
        snprintf(buf, sizeof buf, "%.*s missing:%s", (int)(was - text), text,
                 was + strlen(" of the previous step removed:"));
        text = buf;
    }
    if (c->lines++)
        cap_append(c, "\n");
    cap_append(c, text);
}

struct one_step {
    struct atl_step s;
    int got;
};

static int keep_one(void *ctx, struct atl_step *s)
{
    struct one_step *o = ctx;
    if (o->got) {
        atl_step_free(s);
        return 0;
    }
    o->s = *s;
    o->got = 1;
    return 0;
}

/* A step of rank r parsed in full, from its place in the file; what
 * differs between processes for the same op (streams, raw addresses of
 * memsets and copies) cleared, as the fast pass leaves it out. */
static int load_step(struct job *j, int r, const struct slot *sl, struct atl_step *out)
{
    struct rank *rk = &j->r[r];
    char *buf = malloc(sl->len + 1), err[256] = "out of memory";
    struct one_step one = {.got = 0};
    int rc = -1;
    if (buf) {
        memcpy(buf, rk->rd.map + sl->off, sl->len);
        FILE *f = fmemopen(buf, sl->len, "r");
        rc = f ? atl_trace_read(f, keep_one, &one, err, sizeof err) : -1;
        if (f)
            fclose(f);
    }
    free(buf);
    if (rc || !one.got) {
        if (one.got)
            atl_step_free(&one.s);
        fprintf(stderr, "atlas-diff: %s: the step at byte %" PRIu64 " cannot be read back: %s\n",
                rk->path, sl->off, err);
        return -1;
    }
    for (size_t i = 0; i < one.s.nops; i++) {
        struct atl_op *op = &one.s.ops[i];
        op->stream = 0;
        if (op->kind == ATL_OP_MEMSET)
            op->u.m.ptr = 0;
        else if (op->kind == ATL_OP_COPY)
            op->u.c.dst = op->u.c.src = 0;
    }
    *out = one.s;
    return 0;
}

static int by_hash(const void *x, const void *y, void *ctx)
{
    const struct bucket *b = ctx;
    int i = *(const int *)x, k = *(const int *)y;
    if (b->s[i].hash != b->s[k].hash)
        return b->s[i].hash < b->s[k].hash ? -1 : 1;
    return i - k;
}

/* Names the minority of one step whose ranks do not all agree. */
static void resolve(struct job *j, struct bucket *b)
{
    int n = j->n;
    int *present = calloc((size_t)n, sizeof *present), *idx = malloc((size_t)n * sizeof *idx);
    int *ref = calloc((size_t)n, sizeof *ref), *grp = calloc((size_t)n, sizeof *grp);
    char *la = malloc(4096), *lb = malloc(4096), *head = malloc(8192);
    if (!present || !idx || !ref || !grp || !la || !lb || !head) {
        j->trouble = 1;
        goto out;
    }
    int np = 0;
    for (int i = 0; i < n; i++)
        if (b->s[i].has)
            present[i] = 1, idx[np++] = i;
    j->aligned++;
    int differs = 0;
    /* a rank without the step: past the end of its file (it stopped, said
     * once per rank), or within it (it skipped the step, or the others ran
     * one more: said here) */
    int nskip = 0;
    for (int i = 0; i < n; i++) {
        ref[i] = 0;
        if (present[i])
            continue;
        if (j->r[i].last_index < b->order) {
            if (!j->r[i].lacks++)
                j->r[i].lacks_order = b->order;
        } else {
            ref[i] = 1, nskip++;
        }
    }
    if (nskip) {
        rank_list(j, present, la, 4096);
        rank_list(j, ref, lb, 4096);
        if (np <= nskip)
            snprintf(head, 8192, "step \"%s\" #%" PRIu64 " is only in rank%s %s (not in rank%s %s)",
                     b->name, b->nth, np == 1 ? "" : "s", la, nskip == 1 ? "" : "s", lb);
        else
            snprintf(head, 8192,
                     "step \"%s\" #%" PRIu64 " is missing in rank%s %s (rank%s %s have it)",
                     b->name, b->nth, nskip == 1 ? "" : "s", lb, np == 1 ? "" : "s", la);
        add_finding(j, b->order, strdup(head));
        differs = 1;
    }
    /* groups of equal hashes; the largest is the reference (a tie: the one
     * with the lowest rank) */
    qsort_r(idx, (size_t)np, sizeof *idx, by_hash, b);
    int best = 0, bestn = 0;
    for (int g = 0; g < np;) {
        int e = g;
        while (e < np && b->s[idx[e]].hash == b->s[idx[g]].hash)
            e++;
        if (e - g > bestn || (e - g == bestn && idx[g] < idx[best]))
            best = g, bestn = e - g;
        g = e;
    }
    if (bestn == np)
        goto done;
    memset(ref, 0, (size_t)n * sizeof *ref);
    for (int i = 0; i < np; i++)
        ref[idx[i]] = b->s[idx[i]].hash == b->s[idx[best]].hash;
    int r0 = idx[best];
    struct atl_step sa;
    if (load_step(j, r0, &b->s[r0], &sa)) {
        j->trouble = 1;
        goto done;
    }
    for (int g = 0; g < np;) {
        int e = g;
        while (e < np && b->s[idx[e]].hash == b->s[idx[g]].hash)
            e++;
        if (b->s[idx[g]].hash == b->s[r0].hash) {
            g = e;
            continue;
        }
        memset(grp, 0, (size_t)n * sizeof *grp);
        for (int k = g; k < e; k++)
            grp[idx[k]] = 1;
        int r1 = idx[g];
        struct atl_step sb;
        if (load_step(j, r1, &b->s[r1], &sb)) {
            j->trouble = 1;
            g = e;
            continue;
        }
        struct capture c = {0};
        struct atl_diff_opts o = *j->o;
        o.line = cap_line, o.ctx = &c, o.replay = NULL;
        size_t lines = atl_step_diff(&sa, &sb, &o, NULL);
        if (lines && !c.oom) {
            rank_list(j, grp, la, 4096);
            rank_list(j, ref, lb, 4096);
            int many = e - g > 1;
            char ops[96] = "";
            if (sa.nops != sb.nops)
                snprintf(ops, sizeof ops, " (%zu ops against %zu)", sb.nops, sa.nops);
            snprintf(head, 8192,
                     "step \"%s\" #%" PRIu64 ": rank%s %s differ%s from rank%s %s%s:", b->name,
                     b->nth, many ? "s" : "", la, many ? "" : "s",
                     count_marked(ref, n) == 1 ? "" : "s", lb, ops);
            /* one difference reads on one line, as the rank's verdict */
            size_t hl = strlen(head), tl = c.len;
            char *text = malloc(hl + tl + 3);
            if (text) {
                const char *body = c.text ? c.text : "";
                if (c.lines == 1) {
                    while (*body == ' ')
                        body++;
                    sprintf(text, "%s %s", head, body);
                } else {
                    sprintf(text, "%s\n%s", head, body);
                }
            }
            add_finding(j, b->order, text);
            differs = 1;
        } else if (c.oom) {
            j->trouble = 1;
        }
        free(c.text);
        atl_step_free(&sb);
        g = e;
    }
    atl_step_free(&sa);
done:
    j->differing += differs;
out:
    free(present), free(idx), free(ref), free(grp), free(la), free(lb), free(head);
}

static int complete(const struct job *j, const struct bucket *b)
{
    if (b->have + j->ndone < j->n)
        return 0;
    for (int i = 0; i < j->n; i++)
        if (!b->s[i].has && !j->r[i].done)
            return 0;
    return 1;
}

static void resolve_ready(struct job *j, struct bucket **pp)
{
    while (*pp) {
        struct bucket *b = *pp;
        if (complete(j, b)) {
            *pp = b->next;
            resolve(j, b);
            free(b);
            j->pending--;
        } else {
            pp = &b->next;
        }
    }
}

static int add_step(struct job *j, int r)
{
    struct rank *rk = &j->r[r];
    size_t h = key_slot(rk->name, rk->nth);
    struct bucket *b = j->heads[h];
    while (b && (b->nth != rk->nth || strcmp(b->name, rk->name)))
        b = b->next;
    if (!b) {
        b = calloc(1, sizeof *b + (size_t)j->n * sizeof b->s[0]);
        if (!b)
            return -1;
        memcpy(b->name, rk->name, sizeof b->name);
        b->nth = rk->nth;
        b->order = rk->index;
        b->next = j->heads[h];
        j->heads[h] = b;
        j->pending++;
    }
    b->s[r] = (struct slot){rk->hash, rk->off, rk->len, rk->index, rk->nops, 1};
    b->have++;
    if (rk->index < b->order)
        b->order = rk->index;
    if (complete(j, b))
        resolve_ready(j, &j->heads[h]);
    return 0;
}

/* ---- the ranks' files ----------------------------------------------------------- */

static int by_id(const void *x, const void *y)
{
    const struct rank *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Glob-quotes s into out. */
static size_t glob_quote(const char *s, size_t n, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strchr("*?[]\\", s[i]))
            out[k++] = '\\';
        out[k++] = s[i];
    }
    return k;
}

/* A pattern with %r: every file whose %r is a rank number, by rank. */
static int expand(const char *pat, struct rank **out, int *nout,
                  void (*fail)(const char *, const char *))
{
    const char *pr = strstr(pat, "%r");
    size_t pl = (size_t)(pr - pat), sl = strlen(pr + 2);
    char *g = malloc(2 * strlen(pat) + 16);
    if (!g)
        return -1;
    size_t k = glob_quote(pat, pl, g);
    memcpy(g + k, "[0-9]*", 6);
    k += 6;
    k += glob_quote(pr + 2, sl, g + k);
    g[k] = '\0';
    glob_t gl;
    int rc = glob(g, 0, NULL, &gl);
    free(g);
    if (rc != 0 && rc != GLOB_NOMATCH) {
        fail(pat, "cannot list the files of the pattern");
        return -1;
    }
    struct rank *r = calloc(rc == 0 ? gl.gl_pathc : 1, sizeof *r);
    int n = 0;
    for (size_t i = 0; r && rc == 0 && i < gl.gl_pathc; i++) {
        const char *p = gl.gl_pathv[i];
        size_t len = strlen(p);
        if (len < pl + sl + 1 || memcmp(p, pat, pl) || memcmp(p + len - sl, pr + 2, sl))
            continue;
        size_t dl = len - pl - sl;
        if (dl > 9 || strspn(p + pl, "0123456789") != dl)
            continue; /* trace.1.x.jsonl is not a rank's */
        r[n].id = strtol(p + pl, NULL, 10);
        r[n].path = strdup(p);
        n++;
    }
    if (rc == 0)
        globfree(&gl);
    if (!r)
        return -1;
    qsort(r, (size_t)n, sizeof *r, by_id);
    *out = r, *nout = n;
    return 0;
}

/* A file that shrinks while mapped (a job rewriting it) would kill us with
 * SIGBUS at the first page past its new end: said as trouble instead. */
static void on_sigbus(int sig)
{
    static const char msg[] = "atlas-diff: a rank file shrank while it was read\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(2);
}

static int map_file(struct rank *rk, void (*fail)(const char *, const char *))
{
    if (!rk->path) {
        fail("?", "out of memory");
        return -1;
    }
    /* O_NONBLOCK: a FIFO named as a rank file opens at once (and is
     * refused below) instead of waiting for ever for a writer */
    int fd = open(rk->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fail(rk->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        fail(rk->path, "not a regular file");
        close(fd);
        return -1;
    }
    rk->rd.size = (size_t)st.st_size;
    if (rk->rd.size) {
        void *m = mmap(NULL, rk->rd.size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            fail(rk->path, strerror(errno));
            rk->rd.size = 0;
            close(fd);
            return -1;
        }
        madvise(m, rk->rd.size, MADV_SEQUENTIAL);
        rk->rd.map = m;
    }
    close(fd);
    return 0;
}

static int by_order(const void *x, const void *y)
{
    const struct finding *a = x, *b = y;
    if (a->order != b->order)
        return a->order < b->order ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int atl_diff_ranks(char *const *args, int nargs, const struct atl_diff_opts *o,
                   void (*fail)(const char *path, const char *why))
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return 2;
    j->o = o;
    int status = 2;
    signal(SIGBUS, on_sigbus);
    const char *pattern = nargs == 1 && strstr(args[0], "%r") ? args[0] : NULL;
    if (pattern) {
        if (expand(pattern, &j->r, &j->n, fail))
            goto out;
        if (j->n < 2) {
            char why[96];
            snprintf(why, sizeof why,
                     "%d rank file%s match%s the pattern; --ranks compares two or more", j->n,
                     j->n == 1 ? "" : "s", j->n == 1 ? "es" : "");
            fail(pattern, why);
            goto out;
        }
    } else {
        if (nargs < 2) {
            fail(nargs ? args[0] : "--ranks",
                 "--ranks takes a pattern with %r (trace.%r.jsonl) or two files or more");
            goto out;
        }
        j->r = calloc((size_t)nargs, sizeof *j->r);
        if (!j->r)
            goto out;
        for (int i = 0; i < nargs; i++)
            j->r[i].id = i, j->r[i].path = strdup(args[i]);
        j->n = nargs;
    }
    for (int i = 0; i < j->n; i++)
        if (map_file(&j->r[i], fail))
            goto out;
    /* ranks the pattern skips: their process never opened its file; one
     * finding for each run of them (a stray trace.100000000.jsonl beside
     * trace.1.jsonl is one line, not a hundred million) */
    if (pattern)
        for (int i = 0; i + 1 < j->n; i++) {
            long from = j->r[i].id + 1, to = j->r[i + 1].id - 1;
            if (from > to)
                continue;
            char *t = malloc(256);
            if (t && from == to)
                snprintf(t, 256,
                         "rank %ld has no file: it never started tracing (or the file was "
                         "removed)",
                         from);
            else if (t)
                snprintf(t, 256,
                         "ranks %ld-%ld have no file: they never started tracing (or their "
                         "files were removed)",
                         from, to);
            add_finding(j, 0, t);
        }
    /* lockstep: a step of each rank in turn, so the steps in flight stay few */
    for (int live = j->n; live > 0;) {
        for (int i = 0; i < j->n; i++) {
            struct rank *rk = &j->r[i];
            if (rk->done)
                continue;
            char err[256];
            int rc = read_step(rk, err, sizeof err);
            if (rc < 0) {
                fail(rk->path, err);
                goto out;
            }
            if (rc == 1) {
                if (add_step(j, i)) {
                    fail(rk->path, "out of memory");
                    goto out;
                }
                continue;
            }
            rk->done = 1, j->ndone++, live--;
            for (size_t h = 0; h < NHEADS && j->pending; h++)
                resolve_ready(j, &j->heads[h]);
        }
    }
    for (int i = 0; i < j->n; i++) {
        struct rank *rk = &j->r[i];
        if (!rk->lacks && !rk->cut)
            continue;
        char *t = malloc(256), cut[96] = "";
        if (rk->cut)
            snprintf(cut, sizeof cut, "; its file ends inside step %" PRIu64, rk->cut_index);
        if (t && rk->steps)
            snprintf(t, 256, "rank %ld stopped after step %" PRIu64 ": hung or killed%s", rk->id,
                     rk->last_index, cut);
        else if (t)
            snprintf(t, 256, "rank %ld stopped before its first step ended: hung or killed%s",
                     rk->id, cut);
        add_finding(j, rk->lacks ? rk->lacks_order : rk->last_index + 1, t);
    }
    if (j->trouble)
        goto out;
    if (j->nfound) /* qsort's array must not be NULL, even empty */
        qsort(j->found, j->nfound, sizeof *j->found, by_order);
    for (size_t i = 0; i < j->nfound; i++)
        for (char *line = j->found[i].text, *nl; line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            o->line(o->ctx, line);
        }
    if (j->nall > j->nfound) {
        char more[160];
        snprintf(more, sizeof more, "... and %zu later findings (the first %d by step are listed)",
                 j->nall - j->nfound, FINDINGS_KEPT);
        o->line(o->ctx, more);
    }
    char sum[256];
    snprintf(sum, sizeof sum,
             "ranks summary: %d ranks (%ld..%ld), %" PRIu64 " steps aligned, %" PRIu64
             " where ranks differ, %zu finding%s",
             j->n, j->r[0].id, j->r[j->n - 1].id, j->aligned, j->differing, j->nall,
             j->nall == 1 ? "" : "s");
    o->line(o->ctx, sum);
    status = j->nall ? 1 : 0;
out:
    for (size_t h = 0; h < NHEADS; h++)
        while (j->heads[h]) {
            struct bucket *b = j->heads[h];
            j->heads[h] = b->next;
            free(b);
        }
    for (int i = 0; i < j->n; i++) {
        if (j->r[i].rd.size)
            munmap((void *)j->r[i].rd.map, j->r[i].rd.size);
        free(j->r[i].path);
        free(j->r[i].names);
        free(j->r[i].prev.l), free(j->r[i].cur.l);
    }
    for (size_t i = 0; i < j->nfound; i++)
        free(j->found[i].text);
    free(j->found);
    free(j->r);
    free(j);
    return status;
}
