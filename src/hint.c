/*
 * Hints that run as printed (src/hint.h). Everything here runs when a report is written, never
 * on a hooked call: it reads the environment and /proc as it needs them and allocates freely.
 *
 * Why: the fault report's re-run command was `ATLAS_DEBUG_SYNC_KERNELS=k ./app`; pasted, it has
 * no preload and prints nothing, and a user of atlas-trace was told of variables instead of the
 * options they typed.
 */
#define _GNU_SOURCE
#include "hint.h"

#include "config.h"
#include "envedit.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* The row of the settings table whose atlas-trace option sets `var` (src/config.def), or
 * NULL when it has none. (tests/integration/test_hints.sh checks each spelling against what
 * atlas-trace sets.) */
static const struct atl_cfg_var *option_of(const char *var)
{
    int i = atl_config_find(var);
    return i >= 0 && atl_cfg_vars[i].opt.name ? &atl_cfg_vars[i] : NULL;
}

/* ---- growing strings ------------------------------------------------------------------- */

struct buf {
    char *p;
    size_t used, cap;
    int oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->used + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->used + n + 1 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->used, s, n);
    b->used += n;
    b->p[b->used] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* ---- quoting for sh -------------------------------------------------------------------- */

static int plain_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("_./,:=+@%-", c));
}

/* `w` as sh reads it back: as is when every byte is plain, else in single quotes. `command`:
 * the word stands where sh expects a command, where a '=' would make it an assignment. */
static void quoted(struct buf *b, const char *w, size_t n, int command)
{
    int plain = n > 0;
    for (size_t i = 0; i < n && plain; i++)
        plain = plain_char(w[i]) && !(command && w[i] == '=');
    if (plain) {
        put(b, w, n);
        return;
    }
    put(b, "'", 1);
    for (size_t i = 0; i < n; i++) {
        if (w[i] == '\'')
            put(b, "'\\''", 4);
        else
            put(b, w + i, 1);
    }
    put(b, "'", 1);
}

/* One more word of the command. */
static void word(struct buf *b, const char *w, size_t n, int command)
{
    if (b->used)
        put(b, " ", 1);
    quoted(b, w, n, command);
}

/* NAME=VALUE as an assignment sh reads back: the name as is, the value quoted as needed. */
static void assignment(struct buf *b, const char *name, size_t nlen, const char *value, size_t vlen)
{
    if (b->used)
        put(b, " ", 1);
    put(b, name, nlen);
    put(b, "=", 1);
    if (vlen)
        quoted(b, value, vlen, 0);
}

static int valid_name(const char *s, size_t n)
{
    if (!n || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    return 1;
}

static void entry(struct buf *b, const char *e, size_t n)
{
    const char *eq = memchr(e, '=', n);
    if (eq && valid_name(e, (size_t)(eq - e)))
        assignment(b, e, (size_t)(eq - e), eq + 1, n - (size_t)(eq - e) - 1);
}

/* ---- the settings' fingerprint --------------------------------------------------------- */

/* Every ATLAS_* entry of env, in any order: a child that runs with other settings than the
 * program atlas-trace started has another fingerprint. */
static uint64_t fingerprint(char *const *env)
{
    uint64_t sum = 0;
    for (char *const *e = env; e && *e; e++) {
        if (strncmp(*e, "ATLAS_", 6) != 0)
            continue;
        uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
        for (const unsigned char *p = (const unsigned char *)*e; *p; p++)
            h = (h ^ *p) * 0x100000001b3ULL;
        sum += h;
    }
    return sum;
}

/* ---- ATLASTRACE_FRONT ------------------------------------------------------------------ */
/*
 *   "1;" FINGERPRINT (16 hex digits) ";" RECORD...
 *   RECORD: a tag and its fields, each field LENGTH ":" BYTES (any bytes but NUL):
 *     e NAME=VALUE    an ATLAS_* entry atlas-trace inherited
 *     a WORD          atlas-trace's argv[0]
 *     o VAR WORD      a word of an option, and the variable it sets (empty: none, as "--")
 *     p WORD          a word of the program's command line
 *     i PID           the process atlas-trace runs the program in (it execs: its own PID)
 */

static void field(struct buf *b, const char *s, size_t n)
{
    char len[24];
    snprintf(len, sizeof len, "%zu:", n);
    puts_(b, len);
    put(b, s, n);
}

char *atl_front_encode(int argc, char *const *argv, int prog, const char *const *word_var,
                       char *const *inherited, char *const *final)
{
    struct buf b = {0};
    char head[40];
    snprintf(head, sizeof head, "1;%016" PRIx64 ";", fingerprint(final));
    puts_(&b, head);
    char pid[24];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    put(&b, "i", 1);
    field(&b, pid, strlen(pid));
    for (char *const *e = inherited; e && *e; e++) {
        if (strncmp(*e, "ATLAS_", 6) != 0)
            continue;
        put(&b, "e", 1);
        field(&b, *e, strlen(*e));
    }
    put(&b, "a", 1);
    field(&b, argv[0], strlen(argv[0]));
    for (int i = 1; i < argc; i++) {
        const char *v = i < prog && word_var[i] ? word_var[i] : "";
        put(&b, i < prog ? "o" : "p", 1);
        if (i < prog)
            field(&b, v, strlen(v));
        field(&b, argv[i], strlen(argv[i]));
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

struct span {
    const char *p;
    size_t n;
};

struct word {
    char tag;
    struct span var, text;
};

struct front {
    struct word *w;
    size_t n;
};

static int read_field(const char **s, struct span *out)
{
    char *end;
    if (**s < '0' || **s > '9')
        return -1;
    unsigned long long n = strtoull(*s, &end, 10);
    if (*end != ':' || strnlen(end + 1, n) < n)
        return -1;
    out->p = end + 1, out->n = (size_t)n;
    *s = end + 1 + n;
    return 0;
}

/* The front's record of this process, when atlas-trace started it with the settings it still
 * has; 0 and f->w to free, or -1. */
/* The front's records (after "1;FINGERPRINT;"), into f; 0 and f->w to free, or -1. */
static int front_records(const char *v, struct front *f)
{
    f->w = NULL, f->n = 0;
    size_t cap = 0;
    int argv0 = 0;
    for (const char *s = v + 19; *s;) {
        if (f->n == cap) {
            cap = cap ? cap * 2 : 32;
            struct word *w = realloc(f->w, cap * sizeof *w);
            if (!w)
                goto bad;
            f->w = w;
        }
        struct word *w = &f->w[f->n];
        memset(w, 0, sizeof *w);
        w->tag = *s++;
        if (!strchr("eaopi", w->tag) || (w->tag == 'o' && read_field(&s, &w->var)) ||
            read_field(&s, &w->text))
            goto bad;
        argv0 += w->tag == 'a';
        f->n++;
    }
    if (argv0 == 1)
        return 0;
bad:
    free(f->w);
    f->w = NULL;
    return -1;
}

/* ATLASTRACE_FRONT's value when its header is well formed, else NULL. */
static const char *front_value(void)
{
    const char *v = atl_env_get(ATL_FRONT_VAR);
    if (!v || strncmp(v, "1;", 2) != 0 || strlen(v) < 20 || v[18] != ';')
        return NULL;
    return v;
}

/* The front's record of this process, when atlas-trace started it with the settings it still
 * has; 0 and f->w to free, or -1. */
static int front_read(struct front *f)
{
    f->w = NULL, f->n = 0;
    const char *v = front_value();
    if (!v)
        return -1;
    char *end;
    uint64_t fp = strtoull(v + 2, &end, 16);
    if (end != v + 18 || fp != fingerprint(environ))
        return -1;
    return front_records(v, f);
}

int atl_front_pid(long *pid)
{
    struct front f;
    const char *v = front_value();
    *pid = 0;
    if (!v || front_records(v, &f) != 0)
        return 0;
    for (size_t i = 0; i < f.n; i++)
        if (f.w[i].tag == 'i' && f.w[i].text.n && f.w[i].text.n < 20)
            *pid = strtol(f.w[i].text.p, NULL, 10);
    free(f.w);
    return 1;
}

int atl_hint_front(void)
{
    struct front f;
    if (front_read(&f) != 0)
        return 0;
    free(f.w);
    return 1;
}

static int span_is(struct span s, const char *str)
{
    return s.n == strlen(str) && memcmp(s.p, str, s.n) == 0;
}

/* Is `var` among the settings added? */
static int added(const struct atl_hint_set *add, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(add[i].var) == len && memcmp(add[i].var, name, len) == 0)
            return 1;
    return 0;
}

/* The option that gives `var` the value `value`, into out: the bare option when that is the
 * value it gives ("--trace", "--debug-sync"), else "--name=value"; NULL when there is none, or
 * the option does not take that value (--races=0 is spelled by leaving --races out). */
static const char *option_text(const char *var, const char *value, char *out, size_t len)
{
    const struct atl_cfg_var *v = option_of(var);
    if (!v)
        return NULL;
    const struct atl_cfg_opt *o = &v->opt;
    if ((o->kind == ATL_OPT_FLAG && strcmp(value, "1") == 0) ||
        (o->bare && strcmp(value, o->bare) == 0))
        snprintf(out, len, "--%s", o->name);
    else if (o->kind == ATL_OPT_INFILES && value[strcspn(value, ":,")])
        return NULL; /* several files: each is an option of its own, as the user gave them */
    else if (o->kind != ATL_OPT_FLAG && !(o->vcheck && o->vcheck(value)))
        snprintf(out, len, "--%s=%s", o->name, value);
    else
        return NULL;
    return out;
}

/* Through atlas-trace: NAME=VALUE for what has no option, then atlas-trace with its options
 * (those setting an added variable left out), the added options, and the program. */
static void front_command(struct buf *b, const struct front *f, const struct atl_hint_set *add,
                          size_t n)
{
    char opt[4096];
    for (size_t i = 0; i < f->n; i++) {
        const struct word *w = &f->w[i];
        const char *eq = memchr(w->text.p, '=', w->text.n);
        if (w->tag == 'e' && eq && !added(add, n, w->text.p, (size_t)(eq - w->text.p)))
            entry(b, w->text.p, w->text.n);
    }
    for (size_t i = 0; i < n; i++)
        if (!option_text(add[i].var, add[i].value, opt, sizeof opt))
            assignment(b, add[i].var, strlen(add[i].var), add[i].value, strlen(add[i].value));
    int dashdash = 0;
    for (size_t i = 0; i < f->n; i++) {
        const struct word *w = &f->w[i];
        if (w->tag == 'a')
            word(b, w->text.p, w->text.n, 1);
        else if (w->tag == 'o' && span_is(w->text, "--") && !w->var.n)
            dashdash = 1;
        else if (w->tag == 'o' && !added(add, n, w->var.p, w->var.n))
            word(b, w->text.p, w->text.n, 0);
    }
    for (size_t i = 0; i < n; i++)
        if (option_text(add[i].var, add[i].value, opt, sizeof opt))
            word(b, opt, strlen(opt), 0);
    if (dashdash)
        word(b, "--", 2, 0);
    for (size_t i = 0; i < f->n; i++)
        if (f->w[i].tag == 'p')
            word(b, f->w[i].text.p, f->w[i].text.n, 0);
}

/* This library's file, absolute: the loader's name for it when that is absolute, else the
 * kernel's (/proc/self/maps), since a relative LD_PRELOAD entry means nothing once the
 * program has changed directory. */
static int self_path(char *out, size_t len)
{
    Dl_info di;
    if (dladdr((void *)self_path, &di) && di.dli_fname && di.dli_fname[0] == '/') {
        snprintf(out, len, "%s", di.dli_fname);
        return 0;
    }
    FILE *m = fopen("/proc/self/maps", "re");
    if (!m)
        return -1;
    char line[4096 + 128];
    uintptr_t at = (uintptr_t)self_path;
    int found = -1;
    while (found && fgets(line, sizeof line, m)) {
        uintptr_t lo, hi;
        char *path = strchr(line, '/');
        if (!path || sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) != 2 || at < lo || at >= hi)
            continue;
        path[strcspn(path, "\n")] = '\0';
        snprintf(out, len, "%s", path);
        found = 0;
    }
    fclose(m);
    return found;
}

int atl_hint_library(char *out, size_t len)
{
    return self_path(out, len);
}

/* LD_PRELOAD as it stands, with this library's entry made absolute (put first when it is not
 * there: ATLAS_NO_CHILDREN took it out). */
static void preload(struct buf *b, const char *self)
{
    struct stat st;
    int have_st = stat(self, &st) == 0;
    const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
    struct buf v = {0};
    int ours = 0;
    const char *pre = atl_env_get("LD_PRELOAD");
    for (const char *p = pre ? pre : ""; *p;) {
        p += strspn(p, " :");
        size_t n = strcspn(p, " :");
        if (!n)
            break;
        int me = have_st && atl_env_is_lib(p, n, &st, base);
        if (!(me && ours)) { /* ours named twice: once is enough */
            if (v.used)
                put(&v, ":", 1);
            if (me)
                puts_(&v, self);
            else
                put(&v, p, n);
        }
        ours |= me;
        p += n;
    }
    if (!ours) {
        struct buf w = {0};
        puts_(&w, self);
        if (v.used)
            put(&w, ":", 1);
        if (v.used)
            put(&w, v.p, v.used);
        free(v.p);
        v = w;
    }
    if (v.oom) {
        b->oom = 1;
    } else {
        assignment(b, "LD_PRELOAD", 10, v.p, v.used);
    }
    free(v.p);
}

/* /proc/self/cmdline, whole; NULL when it cannot be read or does not end in NUL (the program
 * rewrote its argv: no longer what was run). */
static char *cmdline(size_t *len)
{
    FILE *f = fopen("/proc/self/cmdline", "re");
    if (!f)
        return NULL;
    struct buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        put(&b, chunk, n);
    fclose(f);
    if (b.oom || !b.used || b.p[b.used - 1] != '\0') {
        free(b.p);
        return NULL;
    }
    *len = b.used;
    return b.p;
}

static int bare_command(struct buf *b, const struct atl_hint_set *add, size_t n)
{
    char self[4096];
    size_t len;
    char *cmd = cmdline(&len);
    if (!cmd || self_path(self, sizeof self) != 0) {
        free(cmd);
        return -1;
    }
    preload(b, self);
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        int ours = strncmp(*e, "ATLAS_", 6) == 0 || strncmp(*e, "NVTX_INJECTION64_PATH=", 22) == 0;
        if (ours && eq && !added(add, n, *e, (size_t)(eq - *e)))
            entry(b, *e, strlen(*e));
    }
    for (size_t i = 0; i < n; i++)
        assignment(b, add[i].var, strlen(add[i].var), add[i].value, strlen(add[i].value));
    for (size_t i = 0; i < len; i += strlen(cmd + i) + 1)
        word(b, cmd + i, strlen(cmd + i), i == 0);
    free(cmd);
    return 0;
}

char *atl_hint_command(const struct atl_hint_set *add, size_t n)
{
    struct buf b = {0};
    struct front f;
    int rc = 0;
    if (front_read(&f) == 0) {
        front_command(&b, &f, add, n);
        free(f.w);
    } else {
        rc = bare_command(&b, add, n);
    }
    if (rc || b.oom || !b.p) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* How the front gave `var`: 'o' by an option, 'e' from the environment, 0 neither. */
static char given_by(const struct front *f, const char *var)
{
    char how = 0;
    size_t len = strlen(var);
    for (size_t i = 0; i < f->n; i++) {
        const struct word *w = &f->w[i];
        if (w->tag == 'o' && span_is(w->var, var))
            return 'o';
        if (w->tag == 'e' && w->text.n > len && memcmp(w->text.p, var, len) == 0 &&
            w->text.p[len] == '=')
            how = 'e';
    }
    return how;
}

/* Option spelling applies under atlas-trace, for a setting it has an option for, unless the
 * user set that variable in the environment. */
static int speak_option(const char *var)
{
    struct front f;
    if (!option_of(var) || front_read(&f) != 0)
        return 0;
    char how = given_by(&f, var);
    free(f.w);
    return how != 'e';
}

const char *atl_hint_setting(const char *var, const char *value, char *out, size_t len)
{
    if (!speak_option(var) || !option_text(var, value, out, len))
        snprintf(out, len, "%s=%s", var, value);
    return out;
}

const char *atl_hint_name(const char *var, char *out, size_t len)
{
    if (!speak_option(var))
        snprintf(out, len, "%s", var);
    else
        snprintf(out, len, "--%s", option_of(var)->opt.name);
    return out;
}
