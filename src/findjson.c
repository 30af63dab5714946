/*
 * A finding as one JSON line (see findjson.h). Every key is written in every
 * line, null where it does not apply, so a consumer never guesses whether a
 * key was left out or lost.
 */
#include "findjson.h"
#include "jsonesc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct out {
    char *b;
    size_t n, len;
    int over; /* did not fit */
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->over || o->n + n + 2 > o->len) { /* room kept for "\n\0" */
        o->over = 1;
        return;
    }
    memcpy(o->b + o->n, s, n);
    o->n += n;
}

static void lit(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

/* A JSON string, by the project's one rule for its bytes (jsonesc.h). */
static void str(struct out *o, const char *s)
{
    if (!s) {
        lit(o, "null");
        return;
    }
    lit(o, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[6];
        put(o, e, atl_json_esc(e, *p));
    }
    lit(o, "\"");
}

static void num(struct out *o, uint64_t v, int present)
{
    char t[24];
    if (!present) {
        lit(o, "null");
        return;
    }
    snprintf(t, sizeof t, "%" PRIu64, v);
    lit(o, t);
}

static void key(struct out *o, const char *k)
{
    lit(o, ",\"");
    lit(o, k);
    lit(o, "\":");
}

static void frames(struct out *o, const struct atl_frame *fr, int n)
{
    lit(o, "[");
    for (int i = 0; i < n; i++) {
        const struct atl_frame *f = &fr[i];
        char pc[24];
        snprintf(pc, sizeof pc, "0x%" PRIxPTR, (uintptr_t)f->pc);
        lit(o, i ? ",{\"pc\":" : "{\"pc\":");
        str(o, pc);
        key(o, "function");
        str(o, f->func[0] ? f->func : NULL);
        key(o, "mangled");
        str(o, f->mangled[0] ? f->mangled : NULL);
        key(o, "object");
        str(o, f->obj[0] ? f->obj : NULL);
        key(o, "offset");
        num(o, f->off, f->func[0] || f->obj[0]);
        key(o, "file");
        str(o, f->line ? f->file : NULL);
        key(o, "line");
        num(o, (uint64_t)f->line, f->line > 0);
        lit(o, "}");
    }
    lit(o, "]");
}

static void write_rec(struct out *o, const struct atl_finding_rec *r, int nfr)
{
    lit(o, "{\"schema\":\"" ATL_FINDINGS_SCHEMA "\"");
    key(o, "version");
    num(o, ATL_FINDINGS_VERSION, 1);
    key(o, "tool");
    str(o, r->tool);
    key(o, "pid");
    num(o, (uint64_t)r->pid, r->pid > 0);
    key(o, "id");
    num(o, r->id, 1);
    key(o, "kind");
    str(o, r->kind);
    key(o, "message");
    str(o, r->message);
    key(o, "kernel");
    str(o, r->kernel);
    key(o, "kernel_mangled");
    str(o, r->kernel_mangled);
    key(o, "launch");
    num(o, r->launch, r->launch != 0);
    key(o, "alloc");
    num(o, r->alloc, r->alloc != 0);
    key(o, "bytes");
    num(o, r->bytes, r->has_bytes);
    key(o, "count");
    num(o, r->count ? r->count : 1, 1);
    key(o, "step");
    if (r->step) {
        lit(o, "{\"name\":");
        str(o, r->step);
        key(o, "number");
        num(o, r->step_no, 1);
        lit(o, "}");
    } else {
        lit(o, "null");
    }
    key(o, "files");
    if (r->files[0]) {
        lit(o, "[");
        str(o, r->files[0]);
        if (r->files[1]) {
            lit(o, ",");
            str(o, r->files[1]);
        }
        lit(o, "]");
    } else {
        lit(o, "null");
    }
    key(o, "frames");
    frames(o, r->fr, nfr);
    key(o, "suppressed");
    lit(o, r->suppressed ? "true" : "false");
    key(o, "suppression");
    str(o, r->suppressed ? r->suppression : NULL);
    key(o, "printed");
    lit(o, r->printed ? "true" : "false");
    lit(o, "}");
}

size_t atl_finding_json(const struct atl_finding_rec *r, char *buf, size_t len)
{
    if (len < 2)
        return 0;
    for (int nfr = r->fr ? r->nfr : 0;; nfr--) {
        struct out o = {buf, 0, len, 0};
        write_rec(&o, r, nfr);
        if (!o.over || nfr <= 0) {
            if (o.over) /* not even without frames: the message is cut instead */
                o.n = 0;
            buf[o.n++] = '\n';
            buf[o.n] = '\0';
            return o.n;
        }
    }
}
