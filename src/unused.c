/*
 * Settings that do nothing (src/unused.h). Which setting belongs to which feature is its row's
 * `needs` in the settings table (src/config.def); here, per feature, when it is off, by the
 * code that reads the settings: red zones read theirs only with ATLAS_REDZONE (the allocation
 * trace also with the ledger of ATLAS_LEAKS), the step trace only when it records
 * (ATLAS_TRACE, ATLAS_TRACE_FILE or ATLAS_CHROME_TRACE), the exit status only with
 * ATLAS_ERROR_EXITCODE.
 */
#include "unused.h"

#include "config.h"
#include "envedit.h"
#include "hint.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

static int given(const char *var)
{
    int i = atl_config_find(var);
    return i >= 0 && atl_cfg.set[i];
}

/* A feature and the settings that do nothing while it is off: the rows that need it, or one
 * setting. */
struct rule {
    int off;
    const char *needs; /* what turns it on, as the line says it (variables, " or " between) */
    const char *why;
    enum atl_cfg_need need; /* the settings: the rows that need this, */
    const char *one;        /* or this one (need: ATL_NEED_NONE) */
};

static int in_rule(const struct rule *r, size_t i)
{
    return r->one ? strcmp(atl_cfg_vars[i].name, r->one) == 0 : atl_cfg_vars[i].need == r->need;
}

static void say(const struct rule *r)
{
    char line[1024], one[160];
    size_t used = 0;
    int n = 0, total = 0;
    for (size_t i = 0; i < atl_cfg_nvars; i++)
        total += in_rule(r, i) && given(atl_cfg_vars[i].name);
    if (!r->off || !total)
        return;
    line[0] = '\0';
    for (size_t i = 0; i < atl_cfg_nvars; i++) {
        const char *var = atl_cfg_vars[i].name;
        if (!in_rule(r, i) || !given(var))
            continue;
        const char *v = atl_env_get(var);
        char shown[72];
        atl_config_show_value(v ? v : "", shown, sizeof shown);
        atl_hint_setting(var, shown, one, sizeof one);
        n++;
        used += (size_t)snprintf(line + used, used < sizeof line ? sizeof line - used : 0, "%s%s",
                                 n == 1       ? ""
                                 : n == total ? " and "
                                              : ", ",
                                 one);
        if (used >= sizeof line)
            used = sizeof line - 1;
    }
    /* the prerequisites, each in the user's terms */
    char needs[256], name[64];
    size_t nu = 0;
    needs[0] = '\0';
    for (const char *p = r->needs; *p;) {
        size_t len = strcspn(p, " ");
        char var[64];
        snprintf(var, sizeof var, "%.*s", (int)len, p);
        /* a list's comma stays after the name it follows */
        int comma = len && var[strlen(var) - 1] == ',';
        if (comma)
            var[strlen(var) - 1] = '\0';
        /* NAME, or NAME=VALUE for a setting that needs that value */
        char *eq = strchr(var, '=');
        if (eq)
            *eq++ = '\0';
        const char *shown = strncmp(var, "ATLAS_", 6) != 0 ? var
                            : eq ? atl_hint_setting(var, eq, name, sizeof name)
                                 : atl_hint_name(var, name, sizeof name);
        nu += (size_t)snprintf(needs + nu, nu < sizeof needs ? sizeof needs - nu : 0, "%s%s%s",
                               nu ? " " : "", shown, comma ? "," : "");
        if (nu >= sizeof needs)
            nu = sizeof needs - 1;
        p += len;
        p += strspn(p, " ");
    }
    atl_log(ATL_WARN, "%s %s nothing without %s (%s)", line, total == 1 ? "does" : "do", needs,
            r->why);
}

void atl_unused_settings(void)
{
    int tracing = atl_cfg.trace || atl_cfg.trace_file || atl_cfg.chrome_trace;
    const struct rule rules[] = {
        {!atl_cfg.redzone, "ATLAS_REDZONE", "red zones are off", ATL_NEED_REDZONE, NULL},
        /* the step trace names pointers by allocation and the race detector resolves them:
         * both keep the ledger, and its call stacks (the trace's "made at", "freed at") */
        {!atl_cfg.redzone && !atl_cfg.leaks && !tracing && !atl_cfg.races,
         "ATLAS_REDZONE, ATLAS_LEAKS, ATLAS_TRACE or ATLAS_RACES", "no allocation is on the ledger",
         ATL_NEED_LEDGER, NULL},
        {!tracing, "ATLAS_TRACE", "steps are not recorded", ATL_NEED_TRACE, NULL},
        {!atl_cfg.chrome_trace, "ATLAS_CHROME_TRACE", "no Chrome trace is written", ATL_NEED_CHROME,
         NULL},
        {!atl_cfg.error_exitcode, "ATLAS_ERROR_EXITCODE", "the exit status is the program's",
         ATL_NEED_EXITCODE, NULL},
        /* the kernels it limits are those the step trace records and those red zones'
         * launch mode checks after */
        {!tracing && !(atl_cfg.redzone && atl_cfg.redzone_check == 2),
         "ATLAS_TRACE or ATLAS_REDZONE_CHECK=launch", "it limits the step trace and launch mode",
         ATL_NEED_KSELECT, NULL},
        /* diff counts differing steps, which only a recorded trace has */
        {atl_cfg.error_exitcode && atl_cfg.error_on == 1 && !tracing, "ATLAS_TRACE",
         "no step is recorded, so none can differ", ATL_NEED_NONE, "ATLAS_ERROR_ON"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        say(&rules[i]);
}
