#define _GNU_SOURCE /* secure_getenv */
#include "config.h"

#include "dsk.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The choices of every ENUM setting live here, with the table, so the
 * parser (and its fuzzer) links without the features. */
const char *const atl_log_level_names[] = {"error", "warn", "info", "debug", NULL};
const char *const atl_redzone_check_names[] = {"free", "sync", "launch", NULL};
const char *const atl_redzone_pools_names[] = {"auto", "route", "keep", NULL};
const char *const atl_error_on_names[] = {"findings", "diff", NULL};
/* ATLAS_RACES: off, on, on and listing the possible races too */
const char *const atl_races_names[] = {"0", "1", "all", NULL};
/* in the order of ATL_PTRS_* (src/tracediff.h) */
const char *const atl_diff_pointers_names[] = {"collapse", "all", "none", NULL};

int atl_config_find(const char *name)
{
    for (size_t i = 0; i < atl_cfg_nvars; i++)
        if (strcmp(atl_cfg_vars[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* The value as shown in a message: at most 60 printable characters, so an
 * environment value can never forge extra log lines. */
void atl_config_show_value(const char *v, char *out, size_t outsz)
{
    size_t n = 0;
    for (; *v && n + 4 < outsz; v++) {
        if (n >= 60) {
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        out[n++] = isprint((unsigned char)*v) ? *v : '?';
    }
    out[n] = '\0';
}

enum atl_step_mode atl_step_mode(const char *s, const char **name)
{
    static const char *const words[] = {"sync", "capture", "api"};
    *name = NULL;
    if (!s)
        return ATL_STEP_SYNC;
    for (int i = 0; i < 3; i++)
        if (strcasecmp(s, words[i]) == 0)
            return (enum atl_step_mode)i;
    if (strncasecmp(s, "nvtx:", 5) != 0 || !s[5] || strlen(s + 5) >= ATL_STEP_NAME_MAX)
        return ATL_STEP_BAD;
    *name = s + 5;
    return ATL_STEP_NVTX;
}

/* ATLAS_STEP: sync, capture, api or nvtx:NAME, the keywords in any case
 * (as ENUM choices are), so a bad value is reported even with tracing off. */
static const char *check_step(const char *s)
{
    const char *name;
    if (atl_step_mode(s, &name) != ATL_STEP_BAD)
        return NULL;
    if (strncasecmp(s, "nvtx:", 5) == 0 && s[5])
        return "range name too long";
    return "not sync, capture, api or nvtx:NAME";
}

/* ATLAS_DIFF_IGNORE: KERNEL or KERNEL:argN, comma-separated, at most
 * ATL_IGNORE_MAX entries. The first entry that cannot parse is named. */
static const char *check_ignore(const char *s)
{
    static __thread char why[128];
    char shown[72];
    int n = 0;
    for (const char *t = s;; t++) {
        size_t len = strcspn(t, ",");
        char entry[256];
        snprintf(entry, sizeof entry, "%.*s", (int)(len < sizeof entry ? len : sizeof entry - 1),
                 t);
        const char *c = strrchr(entry, ':');
        const char *bad = NULL;
        if (len == 0)
            bad = "an empty entry";
        else if (c && c[1] == '\0')
            bad = "not KERNEL or KERNEL:argN";
        /* a colon not followed by "arg" belongs to the name (ns::kernel) */
        else if (c && strncmp(c + 1, "arg", 3) == 0 &&
                 (c == entry || !c[4] || strspn(c + 4, "0123456789") != strlen(c + 4) ||
                  strlen(c + 4) > 4))
            bad = "not KERNEL or KERNEL:argN";
        if (bad && n == 0 && !t[len])
            return bad; /* the whole value: shown once, by the line that refuses it */
        if (bad) {
            atl_config_show_value(entry, shown, sizeof shown);
            snprintf(why, sizeof why, "entry %d '%s' is %s", n + 1, shown, bad);
            return why;
        }
        if (++n > ATL_IGNORE_MAX) {
            snprintf(why, sizeof why, "more than %d entries", ATL_IGNORE_MAX);
            return why;
        }
        t += len;
        if (!*t)
            return NULL;
    }
}

/* ATLAS_KERNEL: a POSIX extended regular expression (src/kselect.c compiles
 * it again, once, for use). */
/* What glibc's regcomp cannot build in bounded memory: it copies the expression under a
 * repetition once for each repeat it must spell out, and repetitions of repetitions multiply
 * (the settings fuzzer's 30 '+' in a row took 2 GB and were killed). A kernel-name filter needs
 * nothing near these bounds: at most 256 characters, and repetitions (outside bracket
 * expressions) whose factors multiply to at most 4,096: 2 for each of * + ?, n + 1 for {m,n}
 * ({m} and {m,}: m + 1). NULL, or why the pattern is refused. */
static const char *regex_too_costly(const char *s)
{
    if (strlen(s) > 256)
        return "longer than 256 characters";
    double product = 1;
    int bracket = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            continue;
        }
        if (bracket) {
            /* ']' first in the list (or after '^') is a member, not the end */
            if (*p == ']' && p[-1] != '[' && !(p[-1] == '^' && p[-2] == '['))
                bracket = 0;
            continue;
        }
        if (*p == '[') {
            bracket = 1;
        } else if (*p == '*' || *p == '+' || *p == '?') {
            product *= 2;
        } else if (*p == '{') {
            double most = 0;
            for (const char *q = p + 1; *q && *q != '}'; q++)
                if (*q >= '0' && *q <= '9') {
                    double n = strtod(q, NULL);
                    most = n > most ? n : most;
                    while (q[1] >= '0' && q[1] <= '9')
                        q++;
                }
            product *= most + 1;
        }
        if (product > 4096)
            return "repetitions that multiply past 4,096 copies";
    }
    return NULL;
}

static const char *check_regex(const char *s)
{
    static __thread char why[160];
    const char *costly = regex_too_costly(s);
    if (costly) {
        snprintf(why, sizeof why, "refused: %s, which glibc's regcomp may not build in bounded "
                                  "memory", costly);
        return why;
    }
    regex_t re;
    int rc = regcomp(&re, s, REG_EXTENDED | REG_NOSUB);
    if (rc == 0) {
        regfree(&re);
        return NULL;
    }
    char msg[96];
    regerror(rc, &re, msg, sizeof msg);
    snprintf(why, sizeof why, "not a POSIX extended regular expression (%s)", msg);
    return why;
}

/* ATLAS_DEBUG_SYNC_KERNELS: 0, 1 or a list of kernel names, by the one parser
 * libatlaslaunch reads it with too (src/dsk.h). */
static const char *check_dsk(const char *s)
{
    const char *why;
    return atl_dsk_parse(s, &why) == ATL_DSK_BAD ? why : NULL;
}

/* ---- what an option takes beyond its setting's rules (config.def's vcheck) ---- */

/* --d2h=N: the number of a copy, counted from 1 (0, no backtrace, is the setting's own: the
 * option without a value already counts). */
static const char *opt_count(const char *s)
{
    unsigned long long n = 1;
    /* a value the setting refuses is refused by the setting's reason */
    if (!atl_config_value(atl_config_find("ATLAS_D2H_TRACE"), s, &n) && n == 0)
        return "N is the number (1 or more) of the copy to backtrace";
    return NULL;
}

/* --debug-sync=KERNELS: a list of names (on and off are spelled --debug-sync and nothing). */
static const char *opt_kernel_list(const char *s)
{
    static __thread char why[256];
    const char *dsk_why;
    if (atl_dsk_parse(s, &dsk_why) == ATL_DSK_LIST)
        return NULL;
    /* the parser's reason for a character that is no name's repeats what a list is; said
     * once, with what a name holds */
    int odd = 0;
    for (const char *p = s; *p; p++)
        odd |= *p != ',' && !atl_dsk_name_char(*p);
    snprintf(why, sizeof why, "KERNELS is a comma-separated list of kernel names%s%s",
             odd       ? " (letters, digits, _ $ .)"
             : dsk_why ? ": "
                       : "",
             !odd && dsk_why ? dsk_why : "");
    return why;
}

/* --races=all: 1 is spelled --races, and 0 by leaving it out. */
static const char *opt_all(const char *s)
{
    return strcmp(s, "all") == 0 ? NULL : "the only value is all";
}

struct atl_config atl_cfg;

#define ATL_CFG_DEF_BOOL(d) .def = (d)
#define ATL_CFG_DEF_UINT(d) .def = (d)
#define ATL_CFG_DEF_ENUM(d) .def = (d)
#define ATL_CFG_DEF_STRING(d) .shown = (d)
#define NOOPT                                                                                      \
    {                                                                                              \
        0                                                                                          \
    }
#define OPT(lng, kind, meta, bare, implies, vcheck, help)                                          \
    {                                                                                              \
        lng, ATL_OPT_##kind, meta, bare, implies, vcheck, help                                     \
    }
const struct atl_cfg_var atl_cfg_vars[] = {
#define ATL_CFG(nm, fld, ty, mn, mx, df, ch, hp, ck, needs, option)                                \
    {.name = #nm,                                                                                  \
     .type = ATL_CFG_##ty,                                                                         \
     .min = mn,                                                                                    \
     .max = mx,                                                                                    \
     ATL_CFG_DEF_##ty(df),                                                                         \
     .choices = ch,                                                                                \
     .help = hp,                                                                                   \
     .offset = offsetof(struct atl_config, fld),                                                   \
     .check = ck,                                                                                  \
     .need = ATL_NEED_##needs,                                                                     \
     .opt = option},
#include "config.def"
#undef ATL_CFG
};
const size_t atl_cfg_nvars = sizeof(atl_cfg_vars) / sizeof(atl_cfg_vars[0]);

_Static_assert(sizeof(atl_cfg_vars) / sizeof(atl_cfg_vars[0]) <= sizeof(atl_cfg.set),
               "struct atl_config.set is too small for config.def");

const struct atl_cfg_alias atl_cfg_aliases[] = {
#define ATL_CFG(name, field, type, mn, mx, df, ch, hp, ck, needs, option)
#define ATL_CFG_ALIAS(name, lng, letter, fixed, help) {#name, lng, letter, fixed, help},
#include "config.def"
#undef ATL_CFG
#undef ATL_CFG_ALIAS
};
const size_t atl_cfg_naliases = sizeof(atl_cfg_aliases) / sizeof(atl_cfg_aliases[0]);
#undef OPT
#undef NOOPT

static void show_default(const struct atl_cfg_var *v, char *out, size_t outsz)
{
    switch (v->type) {
    case ATL_CFG_BOOL:
        snprintf(out, outsz, "%s", v->def ? "1" : "0");
        break;
    case ATL_CFG_UINT:
        snprintf(out, outsz, "%llu", v->def);
        break;
    case ATL_CFG_ENUM:
        snprintf(out, outsz, "%s", v->choices[v->def]);
        break;
    case ATL_CFG_STRING:
        snprintf(out, outsz, "%s", v->shown ? v->shown : "none");
        break;
    }
}

/* Returns NULL when `s` is a valid value for `v` (storing it in *num), else
 * the reason it is not. */
static const char *parse_value(const struct atl_cfg_var *v, const char *s, unsigned long long *num)
{
    if (*s == '\0')
        return "empty value";
    switch (v->type) {
    case ATL_CFG_BOOL: {
        static const char *const yes[] = {"1", "true", "yes", "on"};
        static const char *const no[] = {"0", "false", "no", "off"};
        for (int i = 0; i < 4; i++) {
            if (strcasecmp(s, yes[i]) == 0) {
                *num = 1;
                return NULL;
            }
            if (strcasecmp(s, no[i]) == 0) {
                *num = 0;
                return NULL;
            }
        }
        return "not a boolean (use 1/0, true/false, yes/no, on/off)";
    }
    case ATL_CFG_UINT: {
        const char *p = s;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '-')
            return "negative value";
        if (!isdigit((unsigned char)*p))
            return "not a number";
        /* decimal, or hex after 0x: base 0 would read "010" as octal 8 */
        int base = p[0] == '0' && (p[1] == 'x' || p[1] == 'X') ? 16 : 10;
        if (base == 16 && !isxdigit((unsigned char)p[2]))
            return "not a number";
        char *end;
        errno = 0;
        unsigned long long x = strtoull(p, &end, base);
        if (errno == ERANGE)
            return "number too large";
        if (errno || *end != '\0')
            return "not a number";
        if (x < v->min || x > v->max) {
            static __thread char why[96];
            snprintf(why, sizeof why, "out of range %llu..%llu", v->min, v->max);
            return why;
        }
        *num = x;
        return NULL;
    }
    case ATL_CFG_ENUM:
        for (unsigned long long i = 0; v->choices[i]; i++) {
            if (strcasecmp(s, v->choices[i]) == 0) {
                *num = i;
                return NULL;
            }
        }
        return "not one of the accepted values";
    case ATL_CFG_STRING:
        return v->check ? v->check(s) : NULL;
    }
    return "unknown setting type";
}

size_t atl_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return (size_t)-1;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void set_field(struct atl_config *out, const struct atl_cfg_var *v, unsigned long long num,
                      const char *str)
{
    char *base = (char *)out + v->offset;
    if (v->type == ATL_CFG_STRING)
        memcpy(base, &str, sizeof str);
    else
        memcpy(base, &num, sizeof num);
}

int atl_config_parse(struct atl_config *out, char *const *envp,
                     void (*warn)(void *ctx, const char *line), void *ctx)
{
    int problems = 0;
    char line[512], shown[72], def[64];

    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < atl_cfg_nvars; i++)
        set_field(out, &atl_cfg_vars[i], atl_cfg_vars[i].def, NULL);

    for (char *const *e = envp; e && *e; e++) {
        /* any case: ATLAS_redzone or atlas_redzone is a misspelling to name */
        if (strncasecmp(*e, "ATLAS_", 6) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        char name[64];
        size_t nl = (size_t)(eq - *e);
        if (nl >= sizeof name)
            nl = sizeof name - 1;
        memcpy(name, *e, nl);
        name[nl] = '\0';
        const char *val = eq + 1;

        int idx = atl_config_find(name);
        if (idx < 0) {
            const char *best = NULL;
            size_t bestd = (size_t)-1;
            char upper[64];
            for (size_t i = 0; i <= nl; i++)
                upper[i] = (char)toupper((unsigned char)name[i]);
            for (size_t i = 0; i < atl_cfg_nvars; i++) {
                size_t d = atl_edit_distance(upper, atl_cfg_vars[i].name);
                if (d < bestd) {
                    bestd = d;
                    best = atl_cfg_vars[i].name;
                }
            }
            atl_config_show_value(name, shown, sizeof shown);
            if (best && bestd == 0)
                snprintf(line, sizeof line,
                         "unknown setting %s; did you mean %s? (names are upper case)", shown,
                         best);
            else if (best && bestd <= 4)
                snprintf(line, sizeof line, "unknown setting %s; did you mean %s?", shown, best);
            else
                snprintf(line, sizeof line, "unknown setting %s; ignored", shown);
            warn(ctx, line);
            problems++;
            continue;
        }
        const struct atl_cfg_var *v = &atl_cfg_vars[idx];
        unsigned long long num = 0;
        const char *why = parse_value(v, val, &num);
        if (why) {
            atl_config_show_value(val, shown, sizeof shown);
            show_default(v, def, sizeof def);
            snprintf(line, sizeof line, "ignoring %s='%s': %s; using %s", v->name, shown, why, def);
            warn(ctx, line);
            problems++;
            continue;
        }
        set_field(out, v, num, val);
        out->set[idx] = 1;
    }
    return problems;
}

/* The rank %r names: the first of these that is set and a number. */
static const char *const rank_vars[] = {"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                        "SLURM_PROCID"};

static int rank_valid(const char *r)
{
    return r && *r && strspn(r, "0123456789") == strlen(r) && strlen(r) < 12;
}

static const char *rank_string(void)
{
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *r = secure_getenv(rank_vars[i]);
        if (rank_valid(r))
            return r;
    }
    return "0";
}

int atl_config_rank_problem(char *out, size_t outsz)
{
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *r = secure_getenv(rank_vars[i]);
        if (!r || !*r)
            continue;
        if (rank_valid(r))
            return 0;
        char shown[72];
        atl_config_show_value(r, shown, sizeof shown);
        snprintf(out, outsz, "ignoring %s='%s': not a rank (a number); %%r uses %s", rank_vars[i],
                 shown, rank_string());
        return 1;
    }
    return 0;
}

int atl_config_expand_path(const char *pattern, char *out, size_t outsz)
{
    size_t n = 0;
    if (outsz == 0)
        return -1;
    const char *p = pattern;
    for (; *p && n + 1 < outsz; p++) {
        char tmp[24];
        const char *ins = NULL;
        if (p[0] == '%' && p[1] == 'p') {
            snprintf(tmp, sizeof tmp, "%ld", (long)getpid());
            ins = tmp;
        } else if (p[0] == '%' && p[1] == 'r') {
            ins = rank_string();
        } else if (p[0] == '%' && p[1] == '%') {
            ins = "%";
        }
        if (ins) {
            p++;
            for (; *ins && n + 1 < outsz; ins++)
                out[n++] = *ins;
            if (*ins)
                break;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    /* a name cut short would be another file: the caller refuses it */
    return *p ? -1 : 0;
}

const char *atl_config_value(int idx, const char *value, unsigned long long *num)
{
    return parse_value(&atl_cfg_vars[idx], value, num);
}

const char *atl_config_env(int idx, char *const *envp, const char **value, unsigned long long *num)
{
    const struct atl_cfg_var *v = &atl_cfg_vars[idx];
    size_t n = strlen(v->name);
    *value = NULL;
    *num = v->def;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, v->name, n) == 0 && (*e)[n] == '=')
            *value = *e + n + 1;
    if (*value && !**value)
        *value = NULL;
    return *value ? parse_value(v, *value, num) : NULL;
}

const char *atl_config_check(int idx, const char *value)
{
    unsigned long long num;
    return atl_config_value(idx, value, &num);
}
