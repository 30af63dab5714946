/*
 * The step trace's file form, JSON lines: the writer of the live tracer
 * (ATLAS_TRACE_FILE) and the reader of atlas-diff. One op per line, a step's
 * end on its own line; docs/trace.md gives the fields, src/traceformat.h
 * spells their keys (tools/diff-ranks.c reads them too). Version 2 is written
 * (a header, each kernel declared once per step, short keys); version 1,
 * every op line whole, is read too (the tests write it, through jsonw.h).
 */
#include "tracejson.h"

#include "jsonw.h"
#include "traceformat.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON lines --------------------------------------------------------------- */

/* (the writer's block and primitives: jsonw.h) */

/* ---- version 2: the compact form ---------------------------------------------------- */

/* Two hex digits per byte value: one 2-byte copy a byte of parameters. */
static const char hex2[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
                           "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
                           "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
                           "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
                           "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
                           "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
                           "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
                           "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

/* n bytes as hex digits, a table look-up per byte */
static void jw_hex2(struct jw *w, const uint8_t *p, size_t n)
{
    while (n) {
        size_t k = n < sizeof w->b / 4 ? n : sizeof w->b / 4;
        char *d = jw_room(w, 2 * k);
        for (size_t i = 0; i < k; i++)
            memcpy(d + 2 * i, hex2 + 2 * p[i], 2);
        w->n += 2 * k, p += k, n -= k;
    }
}

/* ,"key":[x,y,z] unless all three are `dflt` */
static void jw_dim_if(struct jw *w, const char *key, const uint32_t d[3], uint32_t dflt)
{
    if (d[0] != dflt || d[1] != dflt || d[2] != dflt)
        jw_dim(w, key, d);
}

void atl_trace_write_header(FILE *f)
{
    fprintf(f, "{" ATL_TF_KEY(ATL_TF_FORMAT) "\"%s\"," ATL_TF_KEY(ATL_TF_VERSION) "%d}\n",
            ATL_TRACE_FORMAT, ATL_TRACE_VERSION);
}

/* The kernels a step has declared, by record: the id each op names. Open
 * addressing on the record's address; ids count from 1 in order of first use
 * in the step, so two steps (or two ranks) that launch the same kernels in
 * the same order write the same lines. */
struct kids {
    const struct atl_kfn **k;
    uint32_t *id;
    size_t cap, n;
};

static size_t kid_slot(const struct kids *t, const struct atl_kfn *k)
{
    size_t h = (size_t)(((uintptr_t)k >> 4) * 0x9e3779b97f4a7c15ull) & (t->cap - 1);
    while (t->k[h] && t->k[h] != k)
        h = (h + 1) & (t->cap - 1);
    return h;
}

/* The id of k in this step, 0 when new (then it is given the next one, in
 * *fresh), or UINT32_MAX when out of memory. */
static uint32_t kid_get(struct kids *t, const struct atl_kfn *k, uint32_t *fresh)
{
    if (2 * (t->n + 1) > t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 64;
        const struct atl_kfn **nk = calloc(nc, sizeof *nk);
        uint32_t *ni = calloc(nc, sizeof *ni);
        if (!nk || !ni) {
            free(nk), free(ni);
            return UINT32_MAX;
        }
        struct kids old = *t;
        t->k = nk, t->id = ni, t->cap = nc;
        for (size_t i = 0; i < old.cap; i++)
            if (old.k[i]) {
                size_t h = kid_slot(t, old.k[i]);
                t->k[h] = old.k[i], t->id[h] = old.id[i];
            }
        free(old.k), free(old.id);
    }
    size_t h = kid_slot(t, k);
    if (t->k[h])
        return t->id[h];
    t->k[h] = k;
    t->id[h] = *fresh = (uint32_t)++t->n;
    return 0;
}

/* {"s":N,"k":ID,"kernel":"...","exact":E,"params":[[off,size],...],"residue":[i,...]} */
static void jw_decl(struct jw *w, uint64_t step, uint32_t id, const struct atl_kfn *k)
{
    jw_lit(w, "{" ATL_TF_KEY(ATL_TF_V2_STEP));
    jw_u64(w, step);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_V2_KERNEL));
    jw_u64(w, id);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_KERNEL));
    jw_str(w, k->mangled);
    if (k->exact)
        jw_lit(w, "," ATL_TF_KEY(ATL_TF_EXACT) "1," ATL_TF_KEY(ATL_TF_PARAMS) "[");
    else
        jw_lit(w, "," ATL_TF_KEY(ATL_TF_EXACT) "0," ATL_TF_KEY(ATL_TF_PARAMS) "[");
    for (unsigned j = 0; j < k->nparams; j++) {
        jw_put(w, j ? ",[" : "[", j ? 2 : 1);
        jw_u64(w, k->off[j]);
        jw_lit(w, ",");
        jw_u64(w, k->size[j]);
        jw_lit(w, "]");
    }
    jw_lit(w, "]");
    uint64_t res = __atomic_load_n(&k->residue, __ATOMIC_RELAXED);
    unsigned marked = 0;
    for (unsigned j = 0; j < k->nparams && j < 64; j++)
        if (res >> j & 1) {
            if (marked++)
                jw_lit(w, ",");
            else
                jw_lit(w, "," ATL_TF_KEY(ATL_TF_RESIDUE) "[");
            jw_u64(w, j);
        }
    if (marked)
        jw_lit(w, "]");
    jw_lit(w, "}\n");
}

/* the opening of a note: of the list too when it is the first */
static inline void jw_note_open(struct jw *w, int any)
{
    if (any)
        jw_lit(w, ",[");
    else
        jw_lit(w, "," ATL_TF_KEY(ATL_TF_V2_NOTES) "[[");
}

/* ,"a":[[at,seq,off],[at],...]: an op's notes in `at` order, [at] alone for
 * host memory. For a launch (k and host_addr given), an 8-byte parameter
 * without a note that holds an address of this process's host memory is
 * marked so too. */
static void jw_notes(struct jw *w, struct atl_notes *it, size_t op, const struct atl_kfn *k,
                     const uint8_t *p, int (*host_addr)(uint64_t))
{
    struct atl_ann x;
    atl_notes_op(it, (uint32_t)op);
    int more = atl_notes_next(it, &x), any = 0;
    int64_t last = -1; /* the last `at` written: the list stays in order */
    unsigned j = 0;
    for (;;) {
        for (; host_addr && j < k->nparams && (!more || k->off[j] <= x.at); j++) {
            uint64_t v;
            if (k->size[j] != 8 || k->off[j] + 8 > k->total || (int64_t)k->off[j] <= last ||
                (more && k->off[j] == x.at))
                continue;
            memcpy(&v, p + k->off[j], 8);
            if (host_addr(v)) {
                jw_note_open(w, any);
                jw_u64(w, k->off[j]);
                jw_lit(w, "]");
                any = 1, last = k->off[j];
            }
        }
        if (!more)
            break;
        jw_note_open(w, any);
        jw_u64(w, x.at);
        if (x.seq != ATL_ANN_HOST) {
            jw_lit(w, ",");
            jw_u64(w, x.seq);
            jw_lit(w, ",");
            jw_u64(w, x.off);
        }
        jw_lit(w, "]");
        any = 1, last = x.at;
        more = atl_notes_next(it, &x);
    }
    if (any)
        jw_lit(w, "]");
}

void atl_step_write_json(const struct atl_step *s, FILE *f, int (*host_addr)(uint64_t v))
{
    struct jw *w = malloc(sizeof *w);
    if (!w)
        return;
    w->f = f, w->n = 0, w->flushes = 0;
    struct kids ids = {0};
    struct atl_notes it;
    atl_notes_init(&it, s);
    const struct atl_kfn *klast = NULL;
    uint32_t idlast = 0;
    uint64_t stream = 0;
    size_t i;
    for (i = 0; i < s->nops; i++) {
        const struct atl_op *o = &s->ops[i];
        const struct atl_kfn *k = o->kind == ATL_OP_LAUNCH ? o->u.k.kfn : NULL;
        if (k && k != klast) { /* a run of one kernel's launches asks once */
            uint32_t fresh = 0, id = kid_get(&ids, k, &fresh);
            if (id == UINT32_MAX)
                break; /* out of memory: the step is cut, its end record says where */
            if (!id)
                jw_decl(w, s->index, id = fresh, k);
            klast = k, idlast = id;
        }
        jw_lit(w, "{" ATL_TF_KEY(ATL_TF_V2_STEP));
        jw_u64(w, s->index);
        jw_lit(w, "," ATL_TF_KEY(ATL_TF_V2_OP));
        jw_u64(w, i);
        if (i == 0 || o->stream != stream) {
            jw_lit(w, "," ATL_TF_KEY(ATL_TF_V2_STREAM) "\"");
            jw_x64(w, o->stream);
            jw_lit(w, "\"");
            stream = o->stream;
        }
        switch (o->kind) {
        case ATL_OP_LAUNCH: {
            jw_lit(w, "," ATL_TF_KEY(ATL_TF_V2_KERNEL));
            jw_u64(w, idlast);
            jw_dim_if(w, "," ATL_TF_KEY(ATL_TF_V2_GRID), o->u.k.grid, 1);
            jw_dim_if(w, "," ATL_TF_KEY(ATL_TF_V2_BLOCK), o->u.k.block, 1);
            if (o->shmem) {
                jw_lit(w, "," ATL_TF_KEY(ATL_TF_V2_SHMEM));
                jw_u64(w, o->shmem);
            }
            uint32_t cl[3] = {o->cluster[0], o->cluster[1], o->cluster[2]};
            jw_dim_if(w, "," ATL_TF_KEY(ATL_TF_V2_CLUSTER), cl, 0);
            const uint8_t *p = atl_op_bytes(s, o);
            jw_lit(w, "," ATL_TF_KEY(ATL_TF_V2_PBYTES) "\"");
            jw_hex2(w, p, k->total);
            jw_lit(w, "\"");
            jw_notes(w, &it, i, k, p, host_addr);
            jw_lit(w, "}\n");
            break;
        }
        case ATL_OP_MEMSET:
        case ATL_OP_COPY:
            if (o->kind == ATL_OP_MEMSET) {
                jw_lit(w, "," ATL_TF_KEY(ATL_TF_KIND) "\"memset\"");
                jw_memset_fields(w, o);
            } else {
                jw_lit(w, "," ATL_TF_KEY(ATL_TF_KIND) "\"copy\"");
                jw_copy_fields(w, o);
            }
            jw_notes(w, &it, i, NULL, NULL, NULL);
            jw_lit(w, "}\n");
            break;
        default:
            jw_lit(w, "," ATL_TF_KEY(ATL_TF_KIND) "\"graph\"," ATL_TF_KEY(ATL_TF_EXEC) "\"");
            jw_x64(w, o->u.g.exec);
            jw_lit(w, "\"}\n");
        }
    }
    jw_end(w, s, i);
    free(ids.k), free(ids.id);
    free(w);
}

/* ---- reading JSON lines back ------------------------------------------------------ */

struct jp {
    const char *p;
    const char *err;
    char errbuf[64]; /* a message naming what was found (err points here) */
};

static inline void ws(struct jp *j)
{
    while (__builtin_expect((unsigned char)*j->p <= ' ', 0) &&
           (*j->p == ' ' || *j->p == '\t' || *j->p == '\r'))
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

/* Hex digit values plus one (0: not a digit), for the hand-written number
 * parsers: one load a digit, no range tests. */
static const uint8_t hexv1[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};
static inline int hexdigit(char c)
{
    return hexv1[(unsigned char)c] - 1;
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
                /* the writer's rule (jsonesc.h): \u0000..\u00ff is the byte;
                 * a code point above, which the project never writes, reads as '?' */
                c = v <= 0xff ? (char)v : '?';
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
        /* UINT64_MAX is 1844674407370955161 * 10 + 5 */
        if (__builtin_expect(x >= 1844674407370955161ull, 0) &&
            (x > 1844674407370955161ull || d > 5)) {
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
/* A pointer note of a version-2 line: [at,seq,off], or [at] (host). */
struct lnote {
    uint32_t at;
    int host;
    uint64_t seq, off;
};

struct jline {
    uint64_t step, op, nops;
    int has_step, has_op, end, has_name;
    /* version 2: "s" (v2), "k", "st", "params", the header's "format" */
    int v2, has_k, has_st, has_params, has_fmt;
    uint64_t kid, version;
    int has_p;
    size_t pn, nnotes; /* pn: bytes "p" decoded into pbytes */
    char name[64], kind[16], dir[16], thread[24], format[32];
    struct atl_op o;
    unsigned np;
    uint64_t residue; /* "residue":1 on parameter i (v2: "residue":[i,...]): bit i */
    /* not cleared per line (a million lines would clear 5 GB): kernel is
     * empty until read, off and size are read up to np */
    char kernel[1024];
    uint32_t off[512], size[512];
    uint8_t *pbytes;     /* owned by the reader */
    size_t pcap, pused;  /* pused: bytes written since the last clear */
    struct lnote *notes; /* "a", owned */
    size_t capnotes;
    struct atl_step *annstep; /* version 1: where "params" put their notes, as op opidx */
    uint32_t opidx;
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

/* Two hex digits (as they lie in memory, a 16-bit load) to their byte, or
 * 0x100 when either is not a digit: one look-up a byte of parameters. Built
 * on first use (128 KiB: only readers pay for it). */
static uint16_t *hexpair;
static pthread_once_t hexpair_once = PTHREAD_ONCE_INIT;

static void hexpair_init(void)
{
    uint16_t *t = malloc(65536 * sizeof *t);
    if (!t)
        return;
    for (unsigned i = 0; i < 65536; i++) {
        unsigned char c[2];
        uint16_t v = (uint16_t)i;
        memcpy(c, &v, 2); /* the first digit at the lower address, whatever the byte order */
        unsigned hi = hexv1[c[0]], lo = hexv1[c[1]];
        t[i] = hi && lo ? (uint16_t)((hi - 1) << 4 | (lo - 1)) : 0x100;
    }
    hexpair = t;
}

/* hlen hex digits into n bytes: exactly 2n digits. */
static int hexbytes(const char *h, size_t hlen, uint8_t *out, size_t n)
{
    if (hlen != 2 * n)
        return -1;
    pthread_once(&hexpair_once, hexpair_init);
    const uint16_t *t = hexpair;
    unsigned bad = 0; /* tested once, after the loop: no branch a byte */
    if (!t) {         /* out of memory for the table: a digit at a time */
        for (size_t i = 0; i < n; i++) {
            unsigned hi = hexv1[(unsigned char)h[2 * i]], lo = hexv1[(unsigned char)h[2 * i + 1]];
            bad |= (hi == 0) | (lo == 0);
            out[i] = (uint8_t)((hi - 1) << 4 | (lo - 1));
        }
        return bad ? -1 : 0;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t two;
        memcpy(&two, h + 2 * i, 2);
        unsigned v = t[two];
        bad |= v;
        out[i] = (uint8_t)v;
    }
    return bad & 0x100 ? -1 : 0;
}

/* key is "s": the first character decides most comparisons without a call */
#define KEY_IS(s) (key[0] == (s)[0] && strcmp(key, s) == 0)

/* A JSON array: item() reads each element (after white space). */
static int jlist(struct jp *j, int (*item)(struct jp *, struct jline *), struct jline *L)
{
    if (lit(j, '['))
        return -1;
    ws(j);
    if (*j->p == ']') {
        j->p++;
        return 0;
    }
    for (;;) {
        if (item(j, L))
            return -1;
        ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        return lit(j, ']');
    }
}

/* An element of version 1's "params": {"i":N,"off":O,"size":S,"hex":"...",...};
 * its pointer notes go to L->annstep as op L->opidx. */
static int jparam(struct jp *j, struct jline *L)
{
    /* 128 KiB: on the heap, once per thread. As TLS it made the library's
     * static TLS block too large for dlopen (NVTX injection loads us so). */
    enum { HEXMAX = 65536 * 2 + 8 };
    static __thread char *hex;
    if (!hex && !(hex = malloc(HEXMAX))) {
        j->err = "out of memory";
        return -1;
    }
    struct atl_step *annstep = L->annstep;
    uint32_t opidx = L->opidx;
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
    enum { MAXA = 64, AL = sizeof ATL_TF_ALLOC - 1 };
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
        if (KEY_IS(ATL_TF_PARAM_INDEX)) {
            if (jnum(j, &i))
                return -1;
        } else if (KEY_IS(ATL_TF_PARAM_OFF)) {
            if (jnum(j, &off))
                return -1;
        } else if (KEY_IS(ATL_TF_PARAM_SIZE)) {
            if (jnum(j, &size))
                return -1;
        } else if (KEY_IS(ATL_TF_PARAM_HEX)) {
            int sp = jspan(j, &hx, &hxlen);
            if (sp < 0 || (sp > 0 && jstr(j, hex, HEXMAX)))
                return -1;
            if (sp > 0)
                hx = hex, hxlen = strlen(hex);
            got_hex = 1;
        } else if (strcmp(key, ATL_TF_RESIDUE) == 0) {
            if (jnum(j, &resid))
                return -1;
        } else if (strcmp(key, ATL_TF_PARAM_HOST) == 0) {
            if (jnum(j, &host))
                return -1;
        } else if (strncmp(key, ATL_TF_ALLOC, AL) == 0) {
            char alloc[64], *end;
            uint64_t w = key[AL] ? strtoull(key + AL, &end, 10) : 0;
            if ((key[AL] && (*end || w % 8)) || jstr(j, alloc, sizeof alloc)) {
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
    return 0;
}

/* An element of version 2's "params": [off,size], the layout of a declared kernel. */
static int jpair(struct jp *j, struct jline *L)
{
    uint64_t off, size;
    if (L->np >= 512) {
        j->err = "too many parameters";
        return -1;
    }
    if (lit(j, '[') || jnum(j, &off) || lit(j, ',') || jnum(j, &size) || lit(j, ']'))
        return -1;
    if (off > 65536 || size > 65536) {
        j->err = "bad parameter layout";
        return -1;
    }
    L->off[L->np] = (uint32_t)off, L->size[L->np] = (uint32_t)size;
    L->np++;
    return 0;
}

/* Version 2's "p": hex digits decoded into L->pbytes as they are scanned
 * (one pass over the longest field of a launch line). */
static int jphex(struct jp *j, struct jline *L)
{
    if (lit(j, '"'))
        return -1;
    const unsigned char *q = (const unsigned char *)j->p;
    size_t n = 0;
    for (;; n++, q += 2) {
        if (n == L->pcap) {
            size_t nc = L->pcap ? 2 * L->pcap : 256;
            uint8_t *nb = nc <= 65536 ? realloc(L->pbytes, nc) : NULL;
            if (!nb) {
                j->err = nc > 65536 ? ATL_TF_QUOTED(ATL_TF_V2_PBYTES) " holds more than 64 KiB"
                                    : "out of memory";
                return -1;
            }
            memset(nb + L->pcap, 0, nc - L->pcap);
            L->pbytes = nb, L->pcap = nc;
        }
        unsigned hi = hexv1[q[0]], lo;
        if (!hi)
            break;
        if (!(lo = hexv1[q[1]])) {
            j->err = "bad hex bytes in " ATL_TF_QUOTED(ATL_TF_V2_PBYTES);
            return -1;
        }
        L->pbytes[n] = (uint8_t)((hi - 1) << 4 | (lo - 1));
    }
    if (*q != '"') {
        j->err = "bad hex bytes in " ATL_TF_QUOTED(ATL_TF_V2_PBYTES);
        return -1;
    }
    if (n > L->pused)
        L->pused = n;
    j->p = (const char *)q + 1;
    L->pn = n, L->has_p = 1;
    return 0;
}

/* An element of a declaration's "residue": a parameter's index. */
static int residue_bit(struct jp *j, struct jline *L)
{
    uint64_t i;
    if (jnum(j, &i))
        return -1;
    if (i < 64)
        L->residue |= 1ull << i;
    return 0;
}

/* An element of version 2's "a": [at,seq,off], or [at] (host memory), in
 * `at` order. */
static int jnote(struct jp *j, struct jline *L)
{
    uint64_t at;
    if (lit(j, '[') || jnum(j, &at))
        return -1;
    if (L->nnotes == L->capnotes &&
        atl_grow((void **)&L->notes, &L->capnotes, L->nnotes + 1, sizeof *L->notes, 16)) {
        j->err = "out of memory";
        return -1;
    }
    struct lnote *n = &L->notes[L->nnotes];
    *n = (struct lnote){.at = (uint32_t)at, .host = 1};
    ws(j);
    if (*j->p == ',') {
        j->p++;
        if (jnum(j, &n->seq) || lit(j, ',') || jnum(j, &n->off))
            return -1;
        n->host = 0;
    }
    if (lit(j, ']'))
        return -1;
    if (at > 65536 || (L->nnotes && at <= L->notes[L->nnotes - 1].at) ||
        (!n->host && n->seq == ATL_ANN_HOST)) {
        j->err = "bad pointer note (" ATL_TF_QUOTED(ATL_TF_V2_NOTES) ": [at,alloc,off] in order)";
        return -1;
    }
    L->nnotes++;
    return 0;
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
        /* version 2's keys first: they are most lines' */
        if (KEY_IS(ATL_TF_V2_STEP))
            rc = jnum(j, &L->step), L->has_step = 1, L->v2 = 1;
        else if (KEY_IS(ATL_TF_V2_OP))
            rc = jnum(j, &L->op), L->has_op = 1;
        else if (KEY_IS(ATL_TF_V2_KERNEL))
            rc = jnum(j, &L->kid), L->has_k = 1;
        else if (KEY_IS(ATL_TF_V2_STREAM))
            rc = jhex(j, &L->o.stream), L->has_st = 1;
        else if (KEY_IS(ATL_TF_V2_PBYTES))
            rc = jphex(j, L);
        else if (KEY_IS(ATL_TF_V2_NOTES))
            rc = jlist(j, jnote, L);
        else if (KEY_IS(ATL_TF_V2_GRID))
            rc = jdim(j, L->o.u.k.grid);
        else if (KEY_IS(ATL_TF_V2_BLOCK))
            rc = jdim(j, L->o.u.k.block);
        else if (KEY_IS(ATL_TF_V2_SHMEM)) {
            rc = jnum(j, &v);
            L->o.shmem = (uint32_t)v;
        } else if (KEY_IS(ATL_TF_V2_CLUSTER)) {
            uint32_t c[3];
            rc = jdim(j, c);
            for (int i = 0; i < 3; i++)
                L->o.cluster[i] = (uint8_t)c[i];
        } else if (KEY_IS(ATL_TF_RESIDUE))
            rc = jlist(j, residue_bit, L);
        else if (KEY_IS(ATL_TF_FORMAT))
            rc = jstr(j, L->format, sizeof L->format), L->has_fmt = 1;
        else if (KEY_IS(ATL_TF_VERSION))
            rc = jnum(j, &L->version);
        else if (KEY_IS(ATL_TF_STEP))
            rc = jnum(j, &L->step), L->has_step = 1;
        else if (KEY_IS(ATL_TF_NAME))
            rc = jstr(j, L->name, sizeof L->name), L->has_name = 1;
        else if (KEY_IS(ATL_TF_OP))
            rc = jnum(j, &L->op), L->has_op = 1;
        else if (KEY_IS(ATL_TF_END))
            rc = jbool(j, &L->end);
        else if (KEY_IS(ATL_TF_OPS))
            rc = jnum(j, &L->nops);
        else if (KEY_IS(ATL_TF_THREAD))
            rc = jstr(j, L->thread, sizeof L->thread);
        else if (KEY_IS(ATL_TF_STREAM))
            rc = jhex(j, &L->o.stream);
        else if (KEY_IS(ATL_TF_KIND))
            rc = jstr(j, L->kind, sizeof L->kind);
        else if (KEY_IS(ATL_TF_KERNEL))
            rc = jstr(j, L->kernel, sizeof L->kernel);
        else if (KEY_IS(ATL_TF_GRID))
            rc = jdim(j, L->o.u.k.grid);
        else if (KEY_IS(ATL_TF_BLOCK))
            rc = jdim(j, L->o.u.k.block);
        else if (KEY_IS(ATL_TF_CLUSTER)) {
            uint32_t c[3];
            rc = jdim(j, c);
            for (int i = 0; i < 3; i++)
                L->o.cluster[i] = (uint8_t)c[i];
        } else if (KEY_IS(ATL_TF_SHMEM) || KEY_IS(ATL_TF_VALUE)) {
            rc = jnum(j, &v);
            L->o.shmem = (uint32_t)v;
        } else if (KEY_IS(ATL_TF_EXACT)) {
            rc = jnum(j, &v);
        } else if (KEY_IS(ATL_TF_PARAMS)) {
            /* version 1: [{"i":0,...},...]; version 2 (a declaration): [[off,size],...] */
            const char *q = j->p;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q == '[')
                for (q++; *q == ' ' || *q == '\t'; q++)
                    ;
            L->annstep = annstep, L->opidx = opidx;
            rc = jlist(j, *q == '[' ? jpair : jparam, L);
            L->has_params = 1;
        } else if (KEY_IS(ATL_TF_PTR))
            rc = jhex(j, &L->o.u.m.ptr);
        else if (KEY_IS(ATL_TF_ELEM)) {
            rc = jnum(j, &v);
            L->o.sub = (uint8_t)v;
        } else if (KEY_IS(ATL_TF_COUNT))
            rc = jnum(j, &L->o.u.m.count);
        else if (KEY_IS(ATL_TF_PITCH))
            rc = jnum(j, &L->o.u.m.pitch);
        else if (KEY_IS(ATL_TF_HEIGHT)) {
            rc = jnum(j, &v);
            L->o.u.m.height = v; /* memset */
            L->o.u.c.h = v;      /* copy: the same slot is not shared, see below */
        } else if (KEY_IS(ATL_TF_DIR))
            rc = jstr(j, L->dir, sizeof L->dir);
        else if (KEY_IS(ATL_TF_DST))
            rc = jhex(j, &L->o.u.c.dst);
        else if (KEY_IS(ATL_TF_SRC))
            rc = jhex(j, &L->o.u.c.src);
        else if (KEY_IS(ATL_TF_BYTES))
            rc = jnum(j, &v);
        else if (KEY_IS(ATL_TF_WIDTH))
            rc = jnum(j, &L->o.u.c.w);
        else if (KEY_IS(ATL_TF_DEPTH))
            rc = jnum(j, &L->o.u.c.d);
        else if (KEY_IS(ATL_TF_PAGEABLE)) {
            rc = jnum(j, &v);
            L->o.flags = (uint32_t)v & (ATL_COPY_DST_PAGEABLE | ATL_COPY_SRC_PAGEABLE);
        } else if (KEY_IS(ATL_TF_EXEC))
            rc = jhex(j, &L->o.u.g.exec);
        else if (KEY_IS(ATL_TF_ALLOC) || KEY_IS(ATL_TF_DSTALLOC) || KEY_IS(ATL_TF_SRCALLOC)) {
            /* a memset's or copy's address by allocation (written dst first) */
            char alloc[64];
            uint64_t seq, off;
            rc = jstr(j, alloc, sizeof alloc);
            if (!rc && parse_alloc(alloc, &seq, &off) == 0)
                atl_step_annotate(annstep, opidx,
                                  KEY_IS(ATL_TF_SRCALLOC) ? ATL_ANN_SRC : ATL_ANN_DST, seq, off);
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

/* The longest line read: ATLAS_TRACE_FILE's longest (a launch with the
 * driver's 32,764 bytes of parameters, in hex, and their notes) is under
 * 1 MiB; more is not a trace (atlas-diff - < /dev/zero read until killed). */
#define ATL_READ_LINE_MAX ((size_t)64 << 20)

/* The next line, its newline replaced by a NUL; NULL at end of file, out of
 * memory (*oom set) or past ATL_READ_LINE_MAX (*oom set to 2). *complete is
 * 0 when the file ended without a newline. */
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
            if (r->cap >= ATL_READ_LINE_MAX) {
                *oom = 2;
                return NULL;
            }
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

/* k is the kernel L names (name and layout). */
static int same_kernel(const struct atl_kfn *k, const struct jline *L)
{
    return k->nparams == L->np && strcmp(k->mangled, L->kernel) == 0 &&
           (L->np == 0 ||
            (memcmp(k->off, L->off, L->np * 4) == 0 && memcmp(k->size, L->size, L->np * 4) == 0));
}

/* A version-2 declaration: {"s":N,"k":ID,"kernel":...,"params":[...]}. Ids
 * count from 1 in the step; the previous step's kernel of the same id is
 * checked first (a loop's steps declare the same kernels in the same order),
 * so the interned table is searched once per kernel, not once per step.
 * NULL, or why not. */
static const char *declare(struct jline *L, const struct atl_kfn ***decl, size_t *ndecl,
                           size_t *cap, const struct atl_kfn **prev, size_t nprev)
{
    if (!L->kernel[0] || !L->has_params)
        return "a kernel's declaration without its " ATL_TF_QUOTED(
            ATL_TF_KERNEL) " or " ATL_TF_QUOTED(ATL_TF_PARAMS);
    if (L->kid != *ndecl + 1)
        return "kernel ids are declared in order from 1 in each step";
    if (atl_grow((void **)decl, cap, *ndecl + 1, sizeof **decl, 16))
        return "out of memory";
    const struct atl_kfn *k = NULL;
    if (*ndecl < nprev && same_kernel(prev[*ndecl], L))
        k = prev[*ndecl];
    else if (!(k = atl_kfn_intern(L->kernel, NULL, L->np, L->off, L->size)))
        return "out of memory";
    /* learned by the recording process: kept for every later op of the kernel */
    if (L->residue)
        __atomic_fetch_or((uint64_t *)&k->residue, L->residue, __ATOMIC_RELAXED);
    (*decl)[(*ndecl)++] = k;
    return NULL;
}

/* memset, copy, graph (either version): L->o's kind. 0 when unknown. */
static int kind_other(struct jline *L)
{
    if (!strcmp(L->kind, "memset")) {
        L->o.kind = ATL_OP_MEMSET;
    } else if (!strcmp(L->kind, "copy")) {
        L->o.kind = ATL_OP_COPY;
        int d = atl_dir_parse(L->dir);
        L->o.sub = (uint8_t)(d < 0 ? ATL_DIR_OTHER : d);
    } else if (!strcmp(L->kind, "graph")) {
        L->o.kind = ATL_OP_GRAPH;
    } else {
        return 0;
    }
    return 1;
}

/* A version-2 op line into L->o, its notes into cur. NULL, or why not. */
static const char *op_v2(struct jline *L, const struct atl_kfn **decl, size_t ndecl,
                         struct atl_step *cur)
{
    uint32_t lim = 0; /* notes: at + 8 <= lim, or the two of a memset or copy */
    if (L->has_k) {
        if (L->kid < 1 || L->kid > ndecl)
            return "a launch of a kernel id not declared in this step";
        const struct atl_kfn *k = decl[L->kid - 1];
        L->o.kind = ATL_OP_LAUNCH;
        L->o.u.k.kfn = k;
        for (int i = 0; i < 3; i++) { /* left out when 1 */
            if (!L->o.u.k.grid[i])
                L->o.u.k.grid[i] = 1;
            if (!L->o.u.k.block[i])
                L->o.u.k.block[i] = 1;
        }
        if (!L->has_p)
            return "a launch without its parameter bytes (" ATL_TF_QUOTED(ATL_TF_V2_PBYTES) ")";
        if (L->pn != k->total)
            return ATL_TF_QUOTED(
                ATL_TF_V2_PBYTES) " is not the kernel's parameter bytes (its length)";
        L->o.u.k.bytes = (uintptr_t)L->pbytes;
        lim = k->total;
    } else if (!kind_other(L)) {
        return L->kind[0] ? "unknown op kind"
                          : "an op without a kernel (" ATL_TF_QUOTED(
                                ATL_TF_V2_KERNEL) ") or a " ATL_TF_QUOTED(ATL_TF_KIND);
    }
    for (size_t i = 0; i < L->nnotes; i++) {
        const struct lnote *n = &L->notes[i];
        int ok = L->o.kind == ATL_OP_LAUNCH   ? n->at + 8 <= lim
                 : L->o.kind == ATL_OP_MEMSET ? n->at == ATL_ANN_DST
                 : L->o.kind == ATL_OP_COPY   ? n->at == ATL_ANN_DST || n->at == ATL_ANN_SRC
                                              : 0;
        if (!ok)
            return "a pointer note (" ATL_TF_QUOTED(
                ATL_TF_V2_NOTES) ") outside the op's parameters";
        if (atl_step_annotate(cur, (uint32_t)cur->nops, n->at, n->host ? ATL_ANN_HOST : n->seq,
                              n->host ? 0 : n->off))
            return "out of memory";
    }
    return NULL;
}

/* ---- version 2's launch lines, as the writer writes them -------------------------- */

/* Most lines of a large trace are launches in the writer's own form: fixed
 * key order, no white space. They are read here without the key loop; any
 * other line (or one with a surprise) goes through parse_line, which reads
 * any order and says what is wrong. */

/* q is followed by s (within the line, which ends at e): q moved past it */
#define FAST_LIT(q, s) ATL_TF_SKIP(q, e, s)

/* Up to 19 decimal digits (no overflow possible); 0 when there are none or more. */
static inline int fast_num(const char **qp, uint64_t *v)
{
    const char *q = *qp;
    uint64_t x = 0;
    int n = 0;
    for (; (unsigned)(*q - '0') < 10; q++, n++)
        x = x * 10 + (uint64_t)(*q - '0');
    if (n == 0 || n > 19)
        return 0;
    *v = x, *qp = q;
    return 1;
}

static inline int fast_dim(const char **qp, uint32_t d[3])
{
    const char *q = *qp;
    uint64_t v[3];
    if (*q++ != '[' || !fast_num(&q, &v[0]) || *q++ != ',' || !fast_num(&q, &v[1]) || *q++ != ',' ||
        !fast_num(&q, &v[2]) || *q++ != ']')
        return 0;
    for (int i = 0; i < 3; i++)
        d[i] = (uint32_t)v[i];
    *qp = q;
    return 1;
}

/* 1 and L filled as parse_line would (L cleared before); 0: not in the
 * writer's form, L to be cleared again and the line read by parse_line. The
 * line ends at e (a NUL there). */
static int fast_launch(const char *q, const char *e, struct jline *L)
{
    if (!FAST_LIT(q, "{" ATL_TF_KEY(ATL_TF_V2_STEP)) || !fast_num(&q, &L->step) ||
        !FAST_LIT(q, "," ATL_TF_KEY(ATL_TF_V2_OP)) || !fast_num(&q, &L->op))
        return 0;
    L->has_step = L->v2 = L->has_op = 1;
    if (FAST_LIT(q, "," ATL_TF_KEY(ATL_TF_V2_STREAM) "\"0x")) {
        uint64_t x = 0;
        int n = 0, d;
        for (; n <= 16 && (d = hexv1[(unsigned char)*q]) != 0; q++, n++)
            x = x << 4 | (uint64_t)(d - 1);
        if (n == 0 || n > 16 || *q++ != '"')
            return 0;
        L->o.stream = x, L->has_st = 1;
    }
    if (!FAST_LIT(q, "," ATL_TF_KEY(ATL_TF_V2_KERNEL)) || !fast_num(&q, &L->kid))
        return 0;
    L->has_k = 1;
    if (FAST_LIT(q, "," ATL_TF_KEY(ATL_TF_V2_GRID)) && !fast_dim(&q, L->o.u.k.grid))
        return 0;
    if (FAST_LIT(q, "," ATL_TF_KEY(ATL_TF_V2_BLOCK)) && !fast_dim(&q, L->o.u.k.block))
        return 0;
    if (FAST_LIT(q, "," ATL_TF_KEY(ATL_TF_V2_SHMEM))) {
        uint64_t v;
        if (!fast_num(&q, &v) || v > UINT32_MAX)
            return 0;
        L->o.shmem = (uint32_t)v;
    }
    if (FAST_LIT(q, "," ATL_TF_KEY(ATL_TF_V2_CLUSTER))) {
        uint32_t c[3];
        if (!fast_dim(&q, c) || (c[0] | c[1] | c[2]) > 255)
            return 0;
        for (int i = 0; i < 3; i++)
            L->o.cluster[i] = (uint8_t)c[i];
    }
    if (!FAST_LIT(q, "," ATL_TF_KEY(ATL_TF_V2_PBYTES) "\""))
        return 0;
    const char *pe = memchr(q, '"', (size_t)(e - q));
    if (!pe || (pe - q) % 2 || pe - q > 2 * 65536)
        return 0;
    size_t n = (size_t)(pe - q) / 2;
    if (n > L->pcap) {
        uint8_t *nb = realloc(L->pbytes, n + 256);
        if (!nb)
            return 0;
        memset(nb + L->pcap, 0, n + 256 - L->pcap);
        L->pbytes = nb, L->pcap = n + 256;
    }
    if (hexbytes(q, 2 * n, L->pbytes, n))
        return 0;
    if (n > L->pused)
        L->pused = n;
    L->pn = n, L->has_p = 1;
    q = pe + 1;
    if (FAST_LIT(q, "," ATL_TF_KEY(ATL_TF_V2_NOTES) "[")) {
        for (;;) {
            uint64_t at, seq = 0, off = 0;
            if (*q++ != '[' || !fast_num(&q, &at))
                return 0;
            int host = *q != ',';
            if (!host && (*q++ != ',' || !fast_num(&q, &seq) || *q++ != ',' || !fast_num(&q, &off)))
                return 0;
            if (*q++ != ']' || at > 65536 || (L->nnotes && at <= L->notes[L->nnotes - 1].at) ||
                (!host && seq == ATL_ANN_HOST))
                return 0;
            if (L->nnotes == L->capnotes &&
                atl_grow((void **)&L->notes, &L->capnotes, L->nnotes + 1, sizeof *L->notes, 16))
                return 0;
            L->notes[L->nnotes++] =
                (struct lnote){.at = (uint32_t)at, .host = host, .seq = seq, .off = off};
            if (*q == ',') {
                q++;
                continue;
            }
            if (*q++ != ']')
                return 0;
            break;
        }
    }
    return q[0] == '}' && (q[1] == '\0' || (q[1] == '\r' && q[2] == '\0'));
}

int atl_trace_read(FILE *f, int (*fn)(void *ctx, struct atl_step *s), void *ctx, char *err,
                   size_t errlen)
{
    return atl_trace_read_reuse(f, fn, NULL, ctx, err, errlen);
}

/* One reading of a trace file (atl_trace_read_reuse): the lines, the step
 * being read, and what version 2 carries from line to line. */
struct reader {
    struct lines rd;
    size_t lineno;
    int steps; /* steps read whole */
    int open;  /* a step is being read: cur */
    int named; /* cur's name is known (version 2: from its end) */
    struct atl_step cur;
    struct jline *L;             /* the line being read */
    const struct atl_kfn *lastk; /* version 1: the kernel of the last launch read */
    /* version 2: the kernels the open step declared (id - 1), the last
     * step's, and the stream of the op before */
    const struct atl_kfn **decl, **prevdecl;
    size_t ndecl, capdecl, nprevdecl, capprev;
    uint64_t stream;
    int (*fn)(void *ctx, struct atl_step *s);
    void (*fresh)(void *ctx, struct atl_step *s);
    void *ctx;
    char *err;
    size_t errlen;
};

/* "line N: " and the message, as the reader's error; -1. */
static int __attribute__((format(printf, 2, 3))) bad(struct reader *r, const char *fmt, ...)
{
    int n = snprintf(r->err, r->errlen, "line %zu: ", r->lineno);
    if (n >= 0 && (size_t)n < r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The header: what follows is in this version. */
static int rd_header(struct reader *r)
{
    const struct jline *L = r->L;
    if (strcmp(L->format, ATL_TRACE_FORMAT) != 0)
        return bad(r, "not an atlastrace step trace (format \"%s\")", L->format);
    if (L->version < 1 || L->version > ATL_TRACE_VERSION)
        return bad(r,
                   "format version %" PRIu64
                   ": this reader reads versions 1 to %d (a newer atlastrace wrote it?)",
                   L->version, ATL_TRACE_VERSION);
    if (r->open)
        return bad(r, "a header inside step %" PRIu64, r->cur.index);
    return 0;
}

/* The step a record names: it opens one, or must be the open one. */
static int rd_step(struct reader *r)
{
    const struct jline *L = r->L;
    struct atl_step *cur = &r->cur;
    if (!L->has_step)
        return bad(r, "record without a " ATL_TF_QUOTED(ATL_TF_STEP) " (or " ATL_TF_QUOTED(
                          ATL_TF_V2_STEP) ")");
    if (!r->open) { /* cur is empty (annotations of this line aside) */
        snprintf(cur->name, sizeof cur->name, "%s", L->name);
        r->named = L->has_name;
        cur->index = L->step;
        r->open = 1;
        r->ndecl = 0;
    } else if (L->step != cur->index || (L->has_name && r->named && strcmp(L->name, cur->name))) {
        return bad(r, "step %" PRIu64 " begins before step %" PRIu64 " ended (truncated?)", L->step,
                   cur->index);
    } else if (L->has_name && !r->named) { /* version 2: the name comes with the end */
        snprintf(cur->name, sizeof cur->name, "%s", L->name);
        r->named = 1;
    }
    return 0;
}

/* A step's end: the step goes to the caller. */
static int rd_end(struct reader *r)
{
    const struct jline *L = r->L;
    struct atl_step *cur = &r->cur;
    if (L->nops != cur->nops)
        return bad(r, "step %" PRIu64 " ends with %zu ops, its end record says %" PRIu64,
                   cur->index, cur->nops, L->nops);
    r->steps++;
    /* the end record says whose step it was */
    snprintf(cur->thread, sizeof cur->thread, "%s", L->thread);
    cur->stream = L->o.stream;
    struct atl_step done = *cur;
    atl_step_init(cur, "");
    r->open = 0;
    /* this step's kernels are the next one's likely ones */
    const struct atl_kfn **t = r->prevdecl;
    r->prevdecl = r->decl, r->nprevdecl = r->ndecl;
    r->decl = t, r->ndecl = 0;
    size_t tc = r->capprev;
    r->capprev = r->capdecl, r->capdecl = tc;
    if (r->fn(r->ctx, &done) != 0)
        return bad(r, "out of memory");
    if (r->fresh) /* after fn: it may hand back a step done with */
        r->fresh(r->ctx, cur);
    return 0;
}

/* A version 1 launch: its kernel by name and layout, shared by a run of
 * launches of one kernel. */
static int rd_v1_launch(struct reader *r)
{
    struct jline *L = r->L;
    if (!L->kernel[0])
        return bad(r, "launch without a kernel");
    L->o.kind = ATL_OP_LAUNCH;
    /* a run of launches of one kernel: the last one's record again */
    if (r->lastk && same_kernel(r->lastk, L))
        L->o.u.k.kfn = r->lastk;
    else
        L->o.u.k.kfn = r->lastk = atl_kfn_intern(L->kernel, NULL, L->np, L->off, L->size);
    if (!L->o.u.k.kfn)
        return bad(r, "out of memory");
    /* learned by the recording process: kept for every later op of the
     * kernel (the record is shared) */
    if (L->residue)
        __atomic_fetch_or((uint64_t *)&L->o.u.k.kfn->residue, L->residue, __ATOMIC_RELAXED);
    /* a layout given without the bytes (a declaration's "params" on an op line) */
    if (L->o.u.k.kfn->total && (!L->pbytes || L->pused < L->o.u.k.kfn->total))
        return bad(r, "a launch without its parameter bytes");
    L->o.u.k.bytes = (uintptr_t)L->pbytes;
    return 0;
}

/* An op of the open step, in order. */
static int rd_op(struct reader *r)
{
    struct jline *L = r->L;
    struct atl_step *cur = &r->cur;
    if (!L->has_op)
        return bad(
            r, "record without an " ATL_TF_QUOTED(ATL_TF_OP) " or an " ATL_TF_QUOTED(ATL_TF_END));
    if (L->op != cur->nops)
        return bad(r, "op %" PRIu64 " out of order (expected op %zu)", L->op, cur->nops);
    if (L->v2) {
        /* the stream is written when it changes from the op before */
        if (L->has_st)
            r->stream = L->o.stream;
        else if (cur->nops == 0)
            return bad(r,
                       "the step's first op has no stream (" ATL_TF_QUOTED(ATL_TF_V2_STREAM) ")");
        else
            L->o.stream = r->stream;
        const char *why = op_v2(L, r->decl, r->ndecl, cur);
        if (why)
            return bad(r, "%s", why);
    } else if (!strcmp(L->kind, "launch")) {
        if (rd_v1_launch(r) != 0)
            return -1;
    } else if (!kind_other(L)) {
        return bad(r, "unknown op kind \"%s\"", L->kind);
    }
    if (atl_step_push(cur, &L->o) != 0)
        return bad(r, "out of memory");
    return 0;
}

/* One parsed record. */
static int rd_record(struct reader *r)
{
    struct jline *L = r->L;
    if (L->has_fmt)
        return rd_header(r);
    if (rd_step(r) != 0)
        return -1;
    if (L->end)
        return rd_end(r);
    if (L->v2 && !L->has_op) { /* a kernel's declaration */
        const char *why = declare(L, &r->decl, &r->ndecl, &r->capdecl, r->prevdecl, r->nprevdecl);
        return why ? bad(r, "%s", why) : 0;
    }
    return rd_op(r);
}

/* The next line read and handed to rd_record: 1 when one was, 0 at the end
 * of the file (or of its whole lines), -1 on an error. */
static int rd_line(struct reader *r)
{
    int complete, oom = 0;
    char *line = read_line(&r->rd, &complete, &oom);
    if (!line && oom) {
        r->lineno++;
        return oom == 2 ? bad(r, "longer than %zu MiB: not a trace file", ATL_READ_LINE_MAX >> 20)
                        : bad(r, "out of memory");
    }
    if (!line)
        return 0;
    r->lineno++;
    if (!complete && r->steps > 0) {
        /* the writer only writes whole lines, but the kernel may cut a write
         * when the process is killed: keep the whole steps */
        bad(r, "the last line is incomplete (the run was killed?); skipped");
        return 0;
    }
    struct jp j = {.p = line};
    ws(&j);
    if (!*j.p && complete)
        return 1; /* blank line */
    struct jline *L = r->L;
    memset(L, 0, offsetof(struct jline, kernel));
    L->kernel[0] = '\0';
    if (L->pused)
        memset(L->pbytes, 0, L->pused);
    L->pused = 0;
    /* the line's NUL: where its newline was, or (a last line without one) the end */
    if (!fast_launch(j.p, r->rd.buf + r->rd.start - (complete ? 1 : 0), L) &&
        (memset(L, 0, offsetof(struct jline, kernel)),
         parse_line(&j, L, &r->cur, (uint32_t)r->cur.nops) != 0))
        return bad(r, "%s", j.err ? j.err : "not a trace record");
    if (!complete)
        return bad(r, "the file ends in the middle of a line (truncated?)");
    return rd_record(r) == 0 ? 1 : -1;
}

/* After the last line: a step left open, or none at all. */
static int rd_finish(struct reader *r)
{
    if (r->open && r->steps > 0) {
        size_t n = strlen(r->err);
        snprintf(r->err + n, r->errlen - n,
                 "%sthe file ends inside step %" PRIu64
                 " (the run was killed?): its %zu ops skipped",
                 n ? "; " : "", r->cur.index, r->cur.nops);
    } else if (r->open) {
        return bad(r, "the file ends inside step %" PRIu64 " (truncated?)", r->cur.index);
    }
    if (r->steps == 0) {
        if (r->lineno == 0)
            snprintf(r->err, r->errlen, "the file is empty (no steps)");
        else
            bad(r, "no complete step in the file");
        return -1;
    }
    return 0;
}

int atl_trace_read_reuse(FILE *f, int (*fn)(void *ctx, struct atl_step *s),
                         void (*fresh)(void *ctx, struct atl_step *s), void *ctx, char *err,
                         size_t errlen)
{
    struct reader r = {
        .rd = {.f = f}, .fn = fn, .fresh = fresh, .ctx = ctx, .err = err, .errlen = errlen};
    int rc;
    r.L = calloc(1, sizeof *r.L);
    atl_step_init(&r.cur, "");
    if (errlen)
        err[0] = '\0';
    if (!r.L) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (fresh)
        fresh(ctx, &r.cur);
    while ((rc = rd_line(&r)) > 0)
        ;
    if (rc == 0)
        rc = rd_finish(&r);
    atl_step_free(&r.cur);
    free(r.L->pbytes);
    free(r.L->notes);
    free(r.L);
    free(r.rd.buf);
    free(r.decl);
    free(r.prevdecl);
    return rc;
}
