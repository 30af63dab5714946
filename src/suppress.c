/*
 * Suppression entries: parsed, matched, written (see suppress.h).
 */
#define _GNU_SOURCE
#include "suppress.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void supp_clear(struct atl_supp *e)
{
    free(e->name);
    free(e->kind);
    free(e->kernel);
    free(e->step);
    for (int i = 0; i < e->nfr; i++)
        free(e->fr[i].pat);
    memset(e, 0, sizeof *e);
}

void atl_supp_free(struct atl_supp_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        supp_clear(&s->e[i]);
    for (size_t i = 0; i < s->nfiles; i++)
        free(s->files[i]);
    free(s->e);
    free(s->files);
    memset(s, 0, sizeof *s);
}

/* The log's "atlas[PID]: " prefix, when the line starts with one: its length. */
static size_t log_prefix(const char *p, size_t n)
{
    if (n < 9 || strncmp(p, "atlas[", 6) != 0)
        return 0;
    size_t i = 6;
    while (i < n && isdigit((unsigned char)p[i]))
        i++;
    if (i == 6 || i + 2 > n || p[i] != ']' || p[i + 1] != ':')
        return 0;
    return i + 2;
}

struct parser {
    struct atl_supp_set *s;
    const char *file;
    void (*err)(void *, const char *);
    void *ctx;
    int problems;
};

/* The problems of a file said in full; the rest are counted, in one line at its end (two
 * million bad lines printed two million errors over 17 s). */
#define SAID_PROBLEMS 10

static void problem(struct parser *p, int line, const char *why, const char *text)
{
    char msg[512];
    snprintf(msg, sizeof msg, "suppressions file '%.200s' line %d: %s%s%.80s%s", p->file, line, why,
             text ? ": '" : "", text ? text : "", text ? "'" : "");
    if (p->err && p->problems < SAID_PROBLEMS)
        p->err(p->ctx, msg);
    p->problems++;
}

static int keep(struct parser *p, struct atl_supp *e)
{
    struct atl_supp_set *s = p->s;
    if (s->n == ATL_SUPP_MAX)
        return 1;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct atl_supp *n = realloc(s->e, cap * sizeof *n);
        if (!n)
            return -1;
        s->e = n, s->cap = cap;
    }
    s->e[s->n++] = *e;
    memset(e, 0, sizeof *e);
    return 0;
}

int atl_supp_parse(struct atl_supp_set *s, const char *text, const char *file,
                   void (*err)(void *ctx, const char *line), void *ctx)
{
    struct parser p = {s, NULL, err, ctx, 0};
    char **files = realloc(s->files, (s->nfiles + 1) * sizeof *files);
    if (!files)
        return -1;
    s->files = files;
    if (!(s->files[s->nfiles] = strdup(file ? file : "?")))
        return -1;
    p.file = s->files[s->nfiles++];

    /* 0 outside an entry, 1 its name next, 2 its kind next, 3 its body, 4 a bad one's rest */
    int state = 0, lineno = 0;
    struct atl_supp e;
    memset(&e, 0, sizeof e);
    for (const char *l = text; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t n = end ? (size_t)(end - l) : strlen(l);
        const char *next = end ? end + 1 : NULL;
        lineno++;
        size_t pre = log_prefix(l, n);
        l += pre, n -= pre;
        while (n && isspace((unsigned char)*l))
            l++, n--;
        while (n && isspace((unsigned char)l[n - 1]))
            n--;
        char line[1024];
        int too_long = n >= sizeof line;
        snprintf(line, sizeof line, "%.*s", (int)(too_long ? sizeof line - 1 : n), l);
        l = next;
        if (!n || (line[0] == '#' && state != 1))
            continue;
        if (state == 0) {
            if (strcmp(line, "{") != 0) {
                problem(&p, lineno, "expected '{' to open an entry", line);
                continue;
            }
            memset(&e, 0, sizeof e);
            e.file = p.file, e.line = lineno;
            state = 1;
            continue;
        }
        if (!strcmp(line, "}")) {
            int kept = state == 3 ? keep(&p, &e) : 0;
            if (state == 1 || state == 2)
                problem(&p, lineno, "an entry needs a name and an atlas:KIND line", NULL);
            else if (kept < 0)
                return -1;
            supp_clear(&e);
            state = 0;
            if (kept > 0) {
                /* memory bounded by what is kept: 16 MiB of one-line entries made 618 MB */
                problem(&p, lineno, "more than " ATL_SUPP_MAX_TEXT " entries: this one and the "
                                    "rest of the file are not used", NULL);
                break;
            }
            continue;
        }
        if (state == 4)
            continue;
        if (too_long) {
            problem(&p, lineno, "line too long (1023 characters at most)", line);
            state = 4;
            continue;
        }
        if (state == 1) {
            if (!(e.name = strdup(line)))
                return -1;
            state = 2;
            continue;
        }
        if (state == 2) {
            if (strncmp(line, "atlas:", 6) != 0 || !line[6]) {
                problem(&p, lineno, "the second line of an entry is atlas:KIND", line);
                state = 4;
                continue;
            }
            if (!(e.kind = strdup(line + 6)))
                return -1;
            state = 3;
            continue;
        }
        char **into = NULL;
        char type = 0;
        const char *pat = NULL;
        if (!strncmp(line, "kernel:", 7))
            into = &e.kernel, pat = line + 7;
        else if (!strncmp(line, "step:", 5))
            into = &e.step, pat = line + 5;
        else if (!strncmp(line, "fun:", 4))
            type = 'f', pat = line + 4;
        else if (!strncmp(line, "src:", 4))
            type = 's', pat = line + 4;
        else if (!strncmp(line, "obj:", 4))
            type = 'o', pat = line + 4;
        else if (!strcmp(line, "..."))
            type = '.', pat = "";
        if (!pat) {
            problem(&p, lineno,
                    "not a line of an entry (kernel:, step:, fun:, src:, obj:, ... or })", line);
            state = 4;
            continue;
        }
        if (into) {
            free(*into);
            if (!(*into = strdup(pat)))
                return -1;
            continue;
        }
        if (type == '.' && e.nfr && e.fr[e.nfr - 1].type == '.')
            continue; /* "..." twice in a row is "..." once */
        if (e.nfr == ATL_SUPP_FRAMES) {
            problem(&p, lineno, "more than 24 frame lines", line);
            state = 4;
            continue;
        }
        if (!(e.fr[e.nfr].pat = strdup(pat)))
            return -1;
        e.fr[e.nfr++].type = type;
    }
    if (state != 0 && s->n < ATL_SUPP_MAX)
        problem(&p, lineno, "the file ends inside an entry (no closing '}')", NULL);
    supp_clear(&e);
    if (p.problems > SAID_PROBLEMS && p.err) {
        char msg[300];
        snprintf(msg, sizeof msg, "suppressions file '%.200s': %d more problems not shown",
                 p.file, p.problems - SAID_PROBLEMS);
        p.err(p.ctx, msg);
    }
    return p.problems;
}

static int glob(const char *pat, const char *s)
{
    return s && *s && fnmatch(pat, s, 0) == 0;
}

static const char *base_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static int frame_matches(char type, const char *pat, const struct atl_frame *f)
{
    switch (type) {
    case 'f':
        return glob(pat, f->func) || glob(pat, f->mangled);
    case 'o':
        return glob(pat, f->obj) || glob(pat, base_of(f->obj));
    case 's': {
        if (!f->line || !f->file[0])
            return 0;
        char a[300], b[300];
        snprintf(a, sizeof a, "%s:%d", base_of(f->file), f->line);
        snprintf(b, sizeof b, "%s:%d", f->file, f->line);
        return glob(pat, a) || glob(pat, b);
    }
    default:
        return 0;
    }
}

/* The entry's frame lines match the stack from its first frame (the stack may go on past
 * them). Each (line, frame) pair is decided once, from the last line up: at most 24 x 25 glob
 * matches, whatever the lines ("..." tried every split in turn: 12 lines of it took 10.9 s a
 * finding, 23 never ended). ok[pi][fi]: lines pi.. match the stack from frame fi. */
static int frames_match(const struct atl_supp *e, const struct atl_frame *fr, int nfr)
{
    if (nfr > ATL_STACK_MAX)
        nfr = ATL_STACK_MAX;
    unsigned char ok[ATL_SUPP_FRAMES + 1][ATL_STACK_MAX + 1];
    for (int fi = 0; fi <= nfr; fi++)
        ok[e->nfr][fi] = 1;
    for (int pi = e->nfr - 1; pi >= 0; pi--) {
        if (e->fr[pi].type == '.') {
            ok[pi][nfr] = ok[pi + 1][nfr]; /* "..." is 0 frames or more */
            for (int fi = nfr - 1; fi >= 0; fi--)
                ok[pi][fi] = ok[pi + 1][fi] || ok[pi][fi + 1];
        } else {
            ok[pi][nfr] = 0;
            for (int fi = nfr - 1; fi >= 0; fi--)
                ok[pi][fi] = ok[pi + 1][fi + 1] &&
                             frame_matches(e->fr[pi].type, e->fr[pi].pat, &fr[fi]);
        }
    }
    return ok[0][0];
}

struct atl_supp *atl_supp_match(const struct atl_supp_set *s, const struct atl_supp_subject *x)
{
    for (size_t i = 0; s && i < s->n; i++) {
        struct atl_supp *e = &s->e[i];
        if (!glob(e->kind, x->kind))
            continue;
        if (e->kernel && !glob(e->kernel, x->kernel) && !glob(e->kernel, x->kernel_mangled))
            continue;
        if (e->step && !glob(e->step, x->step))
            continue;
        if (!frames_match(e, x->fr, x->nfr))
            continue;
        return e;
    }
    return NULL;
}

/* s with the glob's special characters escaped, so it matches itself only. */
static void escaped(char *out, size_t len, const char *s)
{
    size_t k = 0;
    for (; *s && k + 2 < len; s++) {
        if (strchr("*?[]\\", *s))
            out[k++] = '\\';
        out[k++] = *s;
    }
    out[k] = '\0';
}

void atl_supp_write(const struct atl_supp_subject *x, int maxfr,
                    void (*line)(void *ctx, const char *text), void *ctx)
{
    char buf[1100], esc[1024], site[600] = "";
    if (x->nfr)
        atl_frame_text(&x->fr[0], site, sizeof site);
    line(ctx, "{");
    snprintf(buf, sizeof buf, "   <%s%s%s>", x->kind, site[0] ? " at " : "", site);
    line(ctx, buf);
    snprintf(buf, sizeof buf, "   atlas:%s", x->kind);
    line(ctx, buf);
    if (x->kernel && *x->kernel) {
        escaped(esc, sizeof esc,
                x->kernel_mangled && *x->kernel_mangled ? x->kernel_mangled : x->kernel);
        snprintf(buf, sizeof buf, "   kernel:%s", esc);
        line(ctx, buf);
    }
    if (x->step && *x->step) {
        escaped(esc, sizeof esc, x->step);
        snprintf(buf, sizeof buf, "   step:%s", esc);
        line(ctx, buf);
    }
    for (int i = 0; i < x->nfr && i < maxfr; i++) {
        const struct atl_frame *f = &x->fr[i];
        /* the mangled name: a demangled C++ name holds glob characters ("operator[]") */
        if (f->mangled[0] || f->func[0]) {
            escaped(esc, sizeof esc, f->mangled[0] ? f->mangled : f->func);
            snprintf(buf, sizeof buf, "   fun:%s", esc);
        } else if (f->obj[0]) {
            escaped(esc, sizeof esc, f->obj);
            snprintf(buf, sizeof buf, "   obj:%s", esc);
        } else {
            snprintf(buf, sizeof buf, "   ...");
        }
        line(ctx, buf);
        if (!strcmp(f->func, "main"))
            break; /* the C runtime's frames below main say nothing of the finding */
    }
    line(ctx, "}");
}
