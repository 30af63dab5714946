/*
 * A program for the hint tests (tests/integration/test_hints.sh): what src/hint.c would print in
 * this process, with the library's own code (linked from the engine's archive).
 *
 *   hint_probe command VAR VALUE [VAR VALUE...]  the re-run command with those settings added
 *   hint_probe setting VAR VALUE                 the setting as the user would type it
 * With HINT_PROBE_ENV=VAR,... set, whatever the arguments, it prints VAR=value (or "VAR unset")
 * of each, one a line: what a pasted command (which re-runs this program with the same
 * arguments) ran with.
 */
#define _GNU_SOURCE
#include "hint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int show_env(const char *list)
{
    char *copy = strdup(list), *save = NULL;
    for (char *v = strtok_r(copy, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
        const char *val = getenv(v);
        if (val)
            printf("%s=%s\n", v, val);
        else
            printf("%s unset\n", v);
    }
    free(copy);
    return 0;
}

int main(int argc, char **argv)
{
    const char *probe = getenv("HINT_PROBE_ENV");
    if (probe)
        return show_env(probe);
    if (argc >= 4 && strcmp(argv[1], "command") == 0 && argc % 2 == 0) {
        size_t n = (size_t)(argc - 2) / 2;
        struct atl_hint_set add[16];
        for (size_t i = 0; i < n && i < 16; i++)
            add[i].var = argv[2 + 2 * i], add[i].value = argv[3 + 2 * i];
        char *cmd = atl_hint_command(add, n < 16 ? n : 16);
        if (!cmd)
            return 1;
        printf("%s\n", cmd);
        free(cmd);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "setting") == 0) {
        char out[512];
        printf("%s\n", atl_hint_setting(argv[2], argv[3], out, sizeof out));
        return 0;
    }
    fprintf(stderr, "usage: hint_probe command VAR VALUE... | setting VAR VALUE\n");
    return 2;
}
