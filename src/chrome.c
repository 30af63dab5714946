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

/* JSON string body: quotes and backslashes escaped, control and non-ASCII
 * bytes replaced, so the file stays strict JSON whatever a name holds. */
static void put_str(const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fputc('\\', out), fputc(c, out);
        else if (c < 0x20 || c >= 0x7f)
            fputc('?', out);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* Microseconds with the nanoseconds kept: "123.456". */
static void put_us(const char *key, uint64_t ns)
{
    fprintf(out, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

static void put_meta(int tid, const char *what, const char *name)
{
    fprintf(out, "{\"ph\":\"M\",\"pid\":%ld,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":", pid,
            tid, what);
    put_str(name);
    fputs("}},\n", out);
}

static void put_sort(int tid, int index)
{
    fprintf(out,
            "{\"ph\":\"M\",\"pid\":%ld,\"tid\":%d,\"name\":\"thread_sort_index\","
            "\"args\":{\"sort_index\":%d}},\n",
            pid, tid, index);
}

int atl_chrome_open(const char *pattern)
{
    char path[4096];
    atl_config_expand_path(pattern, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        atl_log(ATL_WARN, "cannot write ATLAS_CHROME_TRACE file %s: %s; no Chrome trace", path,
                strerror(e));
        return -1;
    }
    out = f;
    pid = (long)getpid();
    char rank[32], name[96];
    atl_config_expand_path("%r", rank, sizeof rank);
    snprintf(name, sizeof name, "atlastrace rank %s pid %ld", rank, pid);
    fputs("[\n", out);
    put_meta(0, "process_name", name);
    put_meta(0, "thread_name", "steps");
    put_sort(0, 0);
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

static void put_ptr(uint64_t v, const struct atl_ann *an)
{
    if (an)
        fprintf(out, "\"alloc#%" PRIu64 "+0x%" PRIx64 "\"", an->seq, an->off);
    else
        fprintf(out, "\"0x%" PRIx64 "\"", v);
}

/* A parameter in hex: up to 8 bytes as one little-endian number (what the
 * kernel reads as a scalar or pointer), larger ones as their bytes. */
static void put_param(const uint8_t *p, uint32_t size)
{
    static const char hx[] = "0123456789abcdef";
    if (size <= 8) {
        uint64_t v = 0;
        memcpy(&v, p, size); /* little-endian hosts: x86-64, aarch64 */
        fprintf(out, "\"0x%" PRIx64 "\"", v);
        return;
    }
    fputs("\"bytes:", out);
    for (uint32_t b = 0; b < size && b < 256; b++)
        fputc(hx[p[b] >> 4], out), fputc(hx[p[b] & 15], out);
    fputs(size > 256 ? "...\"" : "\"", out);
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
    fprintf(out, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", cat);
    put_str(n);
    fprintf(out, ",\"pid\":%ld,\"tid\":%d", pid, tid);
    put_us("ts", ts);
    fprintf(out, ",\"dur\":0,\"args\":{\"step\":%" PRIu64 ",\"op\":%zu", s->index, i);
    switch (o->kind) {
    case ATL_OP_LAUNCH: {
        const struct atl_kfn *k = o->u.k.kfn;
        fprintf(out, ",\"grid\":\"%u,%u,%u\",\"block\":\"%u,%u,%u\",\"shmem\":%u,\"kernel\":",
                o->u.k.grid[0], o->u.k.grid[1], o->u.k.grid[2], o->u.k.block[0], o->u.k.block[1],
                o->u.k.block[2], o->shmem);
        put_str(k->mangled);
        fputs(",\"params\":[", out);
        const uint8_t *p = atl_op_bytes(s, o);
        for (unsigned j = 0; j < k->nparams; j++) {
            if (j)
                fputc(',', out);
            if (k->off[j] + k->size[j] > k->total) {
                fputs("null", out);
                continue;
            }
            const struct atl_ann *an = atl_step_ann(s, (uint32_t)i, j);
            if (an) {
                uint64_t v;
                memcpy(&v, p + k->off[j], 8);
                put_ptr(v, an);
            } else {
                put_param(p + k->off[j], k->size[j]);
            }
        }
        fputc(']', out);
        break;
    }
    case ATL_OP_MEMSET:
        fprintf(out, ",\"ptr\":\"0x%" PRIx64 "\",\"value\":\"0x%x\",\"elem\":%u,\"count\":%" PRIu64,
                o->u.m.ptr, o->shmem, o->sub, o->u.m.count);
        break;
    case ATL_OP_COPY:
        fprintf(out, ",\"dst\":\"0x%" PRIx64 "\",\"src\":\"0x%" PRIx64 "\",\"bytes\":%" PRIu64,
                o->u.c.dst, o->u.c.src, o->u.c.w * o->u.c.h * o->u.c.d);
        break;
    default:
        fprintf(out, ",\"exec\":\"0x%" PRIx64 "\"", o->u.g.exec);
    }
    fputs("}},\n", out);
}

void atl_chrome_step(const struct atl_step *s, const uint64_t *ts, uint64_t begin, uint64_t end)
{
    if (!out)
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
    for (size_t i = 0; i < s->nops; i++)
        put_op(s, i, ts && ts[i] ? ts[i] : begin);
    char name[96];
    snprintf(name, sizeof name, "%s #%" PRIu64, s->name, s->nth);
    fputs("{\"ph\":\"X\",\"cat\":\"step\",\"name\":", out);
    put_str(name);
    fprintf(out, ",\"pid\":%ld,\"tid\":0", pid);
    put_us("ts", begin);
    put_us("dur", end - begin);
    fprintf(out, ",\"args\":{\"step\":%" PRIu64 ",\"ops\":%zu}},\n", s->index, s->nops);
    fflush(out);
}

void atl_chrome_close(void)
{
    if (!out)
        return;
    /* the last element carries no comma: the array closes as strict JSON */
    fprintf(out,
            "{\"ph\":\"M\",\"pid\":%ld,\"tid\":0,\"name\":\"process_labels\","
            "\"args\":{\"labels\":\"atlastrace\"}}\n]\n",
            pid);
    fclose(out);
    out = NULL;
}
