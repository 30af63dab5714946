/*
 * Chrome trace / Perfetto export (ATLAS_CHROME_TRACE). The file is a JSON
 * array in the Trace Event Format, one event per line, written at each step
 * end and flushed. The array form is chosen over {"traceEvents":[...]}
 * because its closing bracket is optional for readers (chrome://tracing,
 * Perfetto): a program killed mid-run still leaves a file that opens, with
 * every step up to the last one that ended.
 *
 * Tracks: tid 0 is "steps" (one complete event per step); each stream gets
 * tid 1, 2, ... in the order it first appears, named "stream 0x...". Ops are
 * complete events of duration 0 at their host enqueue time: atlastrace sees
 * when the host enqueued an op, not when the GPU ran it.
 *
 * Everything here runs at the step end, under the tracer's step lock.
 */
#include "chrome.h"

#include "config.h"
#include "hint.h"
#include "jsonesc.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int atl_chrome_on;

static FILE *out;
static long pid;
static uint64_t last_end; /* steps on one track must not overlap */

#define MAX_TRACKS 256
static uint64_t tracks[MAX_TRACKS]; /* stream handle of tid i+1 */
static int ntracks;

/* Events are formatted by hand into one buffer and written with one fwrite
 * per 64 KiB: printf-style formatting of every field cost about 3 us per op
 * at the step end, this about a tenth of that. Under the tracer's step lock,
 * so one buffer serves. */
static char ob[1 << 16];
static size_t on;

/* Bytes handed to the file so far, and whether ATLAS_CHROME_MAX_MB stopped
 * the events (a run killed after a second once left 63 MB). */
static uint64_t written;
static int full;

static void ob_flush(void)
{
    if (on)
        fwrite(ob, 1, on, out);
    written += on;
    on = 0;
}

static int over_cap(void)
{
    return atl_cfg.chrome_max_mb && written + on >= (atl_cfg.chrome_max_mb << 20);
}

/* Room for n more bytes (n well under the buffer size). */
static inline void need(size_t n)
{
    if (on + n > sizeof ob)
        ob_flush();
}

static inline void lit(const char *s)
{
    size_t n = strlen(s);
    need(n);
    memcpy(ob + on, s, n);
    on += n;
}

static void dec(uint64_t v)
{
    char t[24];
    int n = 0;
    do
        t[n++] = (char)('0' + v % 10);
    while (v /= 10);
    need((size_t)n);
    while (n)
        ob[on++] = t[--n];
}

static void hex(uint64_t v)
{
    static const char hx[] = "0123456789abcdef";
    char t[16];
    int n = 0;
    do
        t[n++] = hx[v & 15];
    while (v >>= 4);
    need((size_t)n + 2);
    ob[on++] = '0', ob[on++] = 'x';
    while (n)
        ob[on++] = t[--n];
}

/* A JSON string, by the project's one rule for its bytes (jsonesc.h). */
static void put_str(const char *s)
{
    size_t n = strlen(s);
    need(n + 2);
    ob[on++] = '"';
    /* names rarely need escaping: copy them whole when they do not */
    size_t i = 0;
    while (i < n && atl_json_plain((unsigned char)s[i]))
        i++;
    if (i == n && n + 2 < sizeof ob) {
        memcpy(ob + on, s, n);
        on += n;
    } else {
        for (; *s; s++) {
            need(6);
            on += atl_json_esc(ob + on, (unsigned char)*s);
        }
    }
    need(1);
    ob[on++] = '"';
}

/* ,"key":microseconds with the nanoseconds kept: 123.456 */
static void put_us(const char *key, uint64_t ns)
{
    lit(",\"");
    lit(key);
    lit("\":");
    dec(ns / 1000);
    need(4);
    unsigned f = (unsigned)(ns % 1000);
    ob[on++] = '.', ob[on++] = (char)('0' + f / 100), ob[on++] = (char)('0' + f / 10 % 10);
    ob[on++] = (char)('0' + f % 10);
}

static void put_meta(int tid, const char *what, const char *name)
{
    lit("{\"ph\":\"M\",\"pid\":");
    dec((uint64_t)pid);
    lit(",\"tid\":");
    dec((uint64_t)tid);
    lit(",\"name\":\"");
    lit(what);
    lit("\",\"args\":{\"name\":");
    put_str(name);
    lit("}},\n");
}

static void put_sort(int tid, int index)
{
    lit("{\"ph\":\"M\",\"pid\":");
    dec((uint64_t)pid);
    lit(",\"tid\":");
    dec((uint64_t)tid);
    lit(",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
    dec((uint64_t)index);
    lit("}},\n");
}

int atl_chrome_open(const char *pattern)
{
    FILE *f = atl_report_stream("ATLAS_CHROME_TRACE", pattern, "no Chrome trace");
    if (!f)
        return -1;
    out = f;
    pid = (long)getpid();
    char rank[32], name[96];
    atl_config_expand_path("%r", rank, sizeof rank);
    snprintf(name, sizeof name, "atlastrace rank %s pid %ld", rank, pid);
    lit("[\n");
    put_meta(0, "process_name", name);
    put_meta(0, "thread_name", "steps");
    put_sort(0, 0);
    ob_flush();
    fflush(out);
    atl_chrome_on = 1;
    return 0;
}

/* The track of a stream; a new one is named on first sight. Programs with
 * more streams than tracks share the last one (named so). */
static int track_of(uint64_t stream)
{
    for (int i = 0; i < ntracks; i++)
        if (tracks[i] == stream)
            return i + 1;
    if (ntracks == MAX_TRACKS)
        return MAX_TRACKS;
    tracks[ntracks++] = stream;
    char name[64];
    if (ntracks == MAX_TRACKS)
        snprintf(name, sizeof name, "stream 0x%" PRIx64 " and later streams", stream);
    else if (stream == 0)
        snprintf(name, sizeof name, "stream 0x0 (default)");
    else
        snprintf(name, sizeof name, "stream 0x%" PRIx64, stream);
    put_meta(ntracks, "thread_name", name);
    put_sort(ntracks, ntracks);
    return ntracks;
}

/* A parameter in hex: up to 8 bytes as one little-endian number (what the
 * kernel reads as a scalar or pointer), larger ones as their bytes (the
 * first 256). */
static void put_param(const uint8_t *p, uint32_t size)
{
    static const char hx[] = "0123456789abcdef";
    if (size <= 8) {
        uint64_t v = 0;
        memcpy(&v, p, size); /* little-endian hosts: x86-64, aarch64 */
        lit("\"");
        hex(v);
        lit("\"");
        return;
    }
    lit("\"bytes:");
    uint32_t n = size < 256 ? size : 256;
    need(2 * n);
    for (uint32_t b = 0; b < n; b++)
        ob[on++] = hx[p[b] >> 4], ob[on++] = hx[p[b] & 15];
    lit(size > 256 ? "...\"" : "\"");
}

static void put_op(const struct atl_step *s, size_t i, uint64_t ts)
{
    const struct atl_op *o = &s->ops[i];
    int tid = track_of(o->stream); /* before the event: may name the track */
    char name[32];
    const char *n = name, *cat = "launch";
    switch (o->kind) {
    case ATL_OP_LAUNCH:
        n = o->u.k.kfn->pretty ? o->u.k.kfn->pretty : o->u.k.kfn->mangled;
        break;
    case ATL_OP_MEMSET:
        n = "memset", cat = "memset";
        break;
    case ATL_OP_COPY:
        snprintf(name, sizeof name, "copy %s", atl_dir_name(o->sub));
        cat = "copy";
        break;
    default:
        n = "graph launch", cat = "graph";
    }
    lit("{\"ph\":\"X\",\"cat\":\"");
    lit(cat);
    lit("\",\"name\":");
    put_str(n);
    lit(",\"pid\":");
    dec((uint64_t)pid);
    lit(",\"tid\":");
    dec((uint64_t)tid);
    put_us("ts", ts);
    lit(",\"dur\":0,\"args\":{\"step\":");
    dec(s->index);
    lit(",\"op\":");
    dec(i);
    switch (o->kind) {
    case ATL_OP_LAUNCH: {
        const struct atl_kfn *k = o->u.k.kfn;
        for (int d = 0; d < 2; d++) {
            const uint32_t *v = d ? o->u.k.block : o->u.k.grid;
            lit(d ? "\",\"block\":\"" : ",\"grid\":\"");
            dec(v[0]), lit(","), dec(v[1]), lit(","), dec(v[2]);
        }
        lit("\",\"shmem\":");
        dec(o->shmem);
        lit(",\"kernel\":");
        put_str(k->mangled);
        lit(",\"params\":[");
        const uint8_t *p = atl_op_bytes(s, o);
        for (unsigned j = 0; j < k->nparams; j++) {
            if (j)
                lit(",");
            if (k->off[j] + k->size[j] > k->total) {
                lit("null");
                continue;
            }
            struct atl_ann an;
            if (k->size[j] == 8 && atl_step_note(s, (uint32_t)i, k->off[j], &an)) {
                /* a pointer into a live allocation, by its name */
                lit("\"alloc#");
                dec(an.seq);
                lit("+");
                hex(an.off);
                lit("\"");
            } else {
                put_param(p + k->off[j], k->size[j]);
            }
        }
        lit("]");
        break;
    }
    case ATL_OP_MEMSET:
        lit(",\"ptr\":\""), hex(o->u.m.ptr);
        lit("\",\"value\":\""), hex(o->shmem);
        lit("\",\"elem\":"), dec(o->sub);
        lit(",\"count\":"), dec(o->u.m.count);
        break;
    case ATL_OP_COPY:
        lit(",\"dst\":\""), hex(o->u.c.dst);
        lit("\",\"src\":\""), hex(o->u.c.src);
        lit("\",\"bytes\":"), dec(o->u.c.w * o->u.c.h * o->u.c.d);
        break;
    default:
        lit(",\"exec\":\""), hex(o->u.g.exec), lit("\"");
    }
    lit("}},\n");
}

void atl_chrome_step(const struct atl_step *s, const uint64_t *ts, uint64_t begin, uint64_t end)
{
    if (!out || full)
        return;
    /* the slice holds its ops: an op timed just before the boundary that
     * opened the step still belongs to it */
    for (size_t i = 0; ts && i < s->nops; i++) {
        if (ts[i] && ts[i] < begin)
            begin = ts[i];
        if (ts[i] > end)
            end = ts[i];
    }
    if (begin < last_end)
        begin = last_end;
    if (end < begin)
        end = begin;
    last_end = end;
    size_t i = 0;
    for (; i < s->nops && !over_cap(); i++)
        put_op(s, i, ts && ts[i] ? ts[i] : begin);
    if (i < s->nops || over_cap()) {
        /* this step's slice still closes the file's last events, so it
         * stays a trace that opens; later steps are not added */
        full = 1;
        char set[96], mb[32];
        snprintf(mb, sizeof mb, "%llu", atl_cfg.chrome_max_mb);
        atl_log(ATL_WARN,
                "Chrome trace: %s reached at step %" PRIu64 " (%zu of its %zu ops written); no "
                "more events",
                atl_hint_setting("ATLAS_CHROME_MAX_MB", mb, set, sizeof set), s->index, i,
                s->nops);
    }
    char name[96];
    snprintf(name, sizeof name, "%s #%" PRIu64, s->name, s->nth);
    lit("{\"ph\":\"X\",\"cat\":\"step\",\"name\":");
    put_str(name);
    lit(",\"pid\":");
    dec((uint64_t)pid);
    lit(",\"tid\":0");
    put_us("ts", begin);
    put_us("dur", end - begin);
    lit(",\"args\":{\"step\":");
    dec(s->index);
    lit(",\"ops\":");
    dec(s->nops);
    lit("}},\n");
    ob_flush();
    fflush(out);
}

void atl_chrome_close(void)
{
    if (!out)
        return;
    /* the last element carries no comma: the array closes as strict JSON */
    lit("{\"ph\":\"M\",\"pid\":");
    dec((uint64_t)pid);
    lit(",\"tid\":0,\"name\":\"process_labels\",\"args\":{\"labels\":"
        "\"atlastrace\"}}\n]\n");
    ob_flush();
    fclose(out);
    out = NULL;
}
