/*
 * The JSON-lines writer's block and its primitives: the step trace's file
 * form (src/tracejson.c) writes through these, and so does the tests'
 * writer of version 1 (tests/unit/test_trace.c), which the library does
 * not ship.
 */
#ifndef ATL_JSONW_H
#define ATL_JSONW_H

#include "jsonesc.h"
#include "step.h"
#include "traceformat.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

static inline void jw_cstr(struct jw *w, const char *s)
{
    jw_put(w, s, strlen(s));
}

/* a string literal: its length known at compile time */
#define jw_lit(w, s) jw_put(w, "" s, sizeof(s) - 1)

/* "00" to "99": numbers are written two digits a step (a launch line of
 * version 2 has about twenty numbers, most of them small) */
static const char dig2[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                           "34353637383940414243444546474849505152535455565758596061626364656667"
                           "6869707172737475767778798081828384858687888990919293949596979899";

static inline void jw_u64(struct jw *w, uint64_t v)
{
    char *d = jw_room(w, 20);
    if (v < 10) {
        d[0] = (char)('0' + v);
        w->n++;
        return;
    }
    if (v < 100) {
        memcpy(d, dig2 + 2 * v, 2);
        w->n += 2;
        return;
    }
    /* formatted backwards from tmp + 20, then 20 bytes copied (a fixed size: no call) */
    char tmp[40], *e = tmp + 20, *p = e;
    while (v >= 100) {
        p -= 2;
        memcpy(p, dig2 + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) {
        p -= 2;
        memcpy(p, dig2 + 2 * v, 2);
    } else {
        *--p = (char)('0' + v);
    }
    memcpy(d, p, 20);
    w->n += (size_t)(e - p);
}

static const char hexdig[] = "0123456789abcdef";

/* "0x..." without the quotes, lowercase, no leading zeros (as %#x with 0 as 0x0) */
static inline void jw_x64(struct jw *w, uint64_t v)
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

static inline void jw_str(struct jw *w, const char *s)
{
    *jw_room(w, 1) = '"';
    w->n++;
    for (; *s; s++)
        w->n += atl_json_esc(jw_room(w, 6), (unsigned char)*s);
    *jw_room(w, 1) = '"';
    w->n++;
}

static inline void jw_dim(struct jw *w, const char *key, const uint32_t d[3])
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

/* ,"ptr":"0x..","value":v,"elem":e,"count":n,"pitch":p,"height":h (both versions) */
static inline void jw_memset_fields(struct jw *w, const struct atl_op *o)
{
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_PTR) "\"");
    jw_x64(w, o->u.m.ptr);
    jw_lit(w, "\"," ATL_TF_KEY(ATL_TF_VALUE));
    jw_u64(w, o->shmem);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_ELEM));
    jw_u64(w, o->sub);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_COUNT));
    jw_u64(w, o->u.m.count);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_PITCH));
    jw_u64(w, o->u.m.pitch);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_HEIGHT));
    jw_u64(w, o->u.m.height);
}

/* ,"dir":"..","dst":"0x..","src":"0x..","bytes":n,"width":w,"height":h,"depth":d[,"pageable":p] */
static inline void jw_copy_fields(struct jw *w, const struct atl_op *o)
{
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_DIR) "\"");
    jw_cstr(w, atl_dir_name(o->sub));
    jw_lit(w, "\"," ATL_TF_KEY(ATL_TF_DST) "\"");
    jw_x64(w, o->u.c.dst);
    jw_lit(w, "\"," ATL_TF_KEY(ATL_TF_SRC) "\"");
    jw_x64(w, o->u.c.src);
    jw_lit(w, "\"," ATL_TF_KEY(ATL_TF_BYTES));
    jw_u64(w, o->u.c.w * o->u.c.h * o->u.c.d);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_WIDTH));
    jw_u64(w, o->u.c.w);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_HEIGHT));
    jw_u64(w, o->u.c.h);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_DEPTH));
    jw_u64(w, o->u.c.d);
    if (o->flags & (ATL_COPY_DST_PAGEABLE | ATL_COPY_SRC_PAGEABLE)) {
        jw_lit(w, "," ATL_TF_KEY(ATL_TF_PAGEABLE));
        jw_u64(w, o->flags & (ATL_COPY_DST_PAGEABLE | ATL_COPY_SRC_PAGEABLE));
    }
}

/* {"step":N,"name":"..." */
static inline void json_head(struct jw *w, const struct atl_step *s)
{
    jw_lit(w, "{" ATL_TF_KEY(ATL_TF_STEP));
    jw_u64(w, s->index);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_NAME));
    jw_str(w, s->name);
}

/* The step's end record (the same in both versions), and what is left of
 * the block to the file. */
static inline void jw_end(struct jw *w, const struct atl_step *s, size_t nops)
{
    json_head(w, s);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_THREAD));
    jw_str(w, s->thread);
    jw_lit(w, "," ATL_TF_KEY(ATL_TF_STREAM) "\"");
    jw_x64(w, s->stream);
    jw_lit(w, "\"," ATL_TF_KEY(ATL_TF_END) "true," ATL_TF_KEY(ATL_TF_OPS));
    jw_u64(w, nops);
    jw_lit(w, "}\n");
    fwrite(w->b, 1, w->n, w->f);
}

#endif
