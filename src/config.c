#define _GNU_SOURCE /* secure_getenv */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The choices of every ENUM setting live here, with the table, so the
 * parser (and its fuzzer) links without the features. */
const char *const atl_log_level_names[] = {"error", "warn", "info", "debug", NULL};
const char *const atl_redzone_check_names[] = {"free", "sync", "launch", NULL};
const char *const atl_redzone_pools_names[] = {"route", "keep", NULL};
const char *const atl_error_on_names[] = {"findings", "diff", NULL};
/* in the order of ATL_PTRS_* (src/tracediff.h) */
const char *const atl_diff_pointers_names[] = {"collapse", "all", "none", NULL};

struct atl_config atl_cfg;

const struct atl_cfg_var atl_cfg_vars[] = {
#define ATL_CFG(name, field, type, mn, mx, df, ch, hp)                                             \
    {#name, ATL_CFG_##type, mn, mx, df, ch, hp, offsetof(struct atl_config, field)},
#include "config.def"
#undef ATL_CFG
};
const size_t atl_cfg_nvars = sizeof(atl_cfg_vars) / sizeof(atl_cfg_vars[0]);

_Static_assert(sizeof(atl_cfg_vars) / sizeof(atl_cfg_vars[0]) <= sizeof(atl_cfg.set),
               "struct atl_config.set is too small for config.def");

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
        snprintf(out, outsz, "%s", "none");
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
        char *end;
        errno = 0;
        unsigned long long x = strtoull(p, &end, 0);
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
        return NULL;
    }
    return "unknown setting type";
}

static size_t edit_distance(const char *a, const char *b)
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
        if (strncmp(*e, "ATLAS_", 6) != 0)
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
            for (size_t i = 0; i < atl_cfg_nvars; i++) {
                size_t d = edit_distance(name, atl_cfg_vars[i].name);
                if (d < bestd) {
                    bestd = d;
                    best = atl_cfg_vars[i].name;
                }
            }
            atl_config_show_value(name, shown, sizeof shown);
            if (best && bestd <= 4)
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

static const char *rank_string(void)
{
    static const char *const vars[] = {"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *r = secure_getenv(vars[i]);
        if (r && *r && strspn(r, "0123456789") == strlen(r) && strlen(r) < 12)
            return r;
    }
    return "0";
}

void atl_config_expand_path(const char *pattern, char *out, size_t outsz)
{
    size_t n = 0;
    if (outsz == 0)
        return;
    for (const char *p = pattern; *p && n + 1 < outsz; p++) {
        char tmp[24];
        const char *ins = NULL;
        if (p[0] == '%' && p[1] == 'p') {
            snprintf(tmp, sizeof tmp, "%ld", (long)getpid());
            ins = tmp;
        } else if (p[0] == '%' && p[1] == 'r') {
            ins = rank_string();
        }
        if (ins) {
            p++;
            for (; *ins && n + 1 < outsz; ins++)
                out[n++] = *ins;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
}

const char *atl_config_value(int idx, const char *value, unsigned long long *num)
{
    return parse_value(&atl_cfg_vars[idx], value, num);
}

const char *atl_config_check(int idx, const char *value)
{
    unsigned long long num;
    return atl_config_value(idx, value, &num);
}
