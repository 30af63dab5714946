#define _GNU_SOURCE
#include "file_vars.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int file_vars(struct file_var *fv, int cap)
{
    const char *spec = getenv("ATL_FILE_VARS");
    char *copy = strdup(spec && *spec ? spec : "ATLAS_LOG"), *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(copy, " ", &save); tok && n < cap; tok = strtok_r(NULL, " ", &save)) {
        struct file_var *v = &fv[n++];
        memset(v, 0, sizeof *v);
        char *colon = strchr(tok, ':');
        if (colon)
            *colon = '\0';
        snprintf(v->name, sizeof v->name, "%s", tok);
        char *save2 = NULL;
        for (char *e = colon ? strtok_r(colon + 1, ",", &save2) : NULL; e && v->nextra < 8;
             e = strtok_r(NULL, ",", &save2))
            snprintf(v->extra[v->nextra++], sizeof v->extra[0], "%s", e);
    }
    free(copy);
    return n;
}

void run_with_file(struct run_result *r, const struct file_var *v, const char *path)
{
    /* room for a name longer than PATH_MAX: the tests of too-long names */
    char kv[8192];
    const char *env[12];
    int n = 0;
    snprintf(kv, sizeof kv, "%s=%s", v->name, path);
    env[n++] = kv;
    env[n++] = "ATLAS_STATS=1";
    for (int i = 0; i < v->nextra; i++)
        env[n++] = v->extra[i];
    env[n] = NULL;
    char *argv[] = {BUILD_DIR "/tests/tp_linked", NULL};
    run_target(r, argv, env, 1);
}
