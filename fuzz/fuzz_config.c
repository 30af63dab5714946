/*
 * libFuzzer harness for the settings parser (src/config.c).
 *
 * The input is an environment: one "NAME=value" entry per line (bytes are
 * taken as they come, NULs included, so odd values reach the parser). Besides
 * "does not crash" (ASan, UBSan), it checks what the parser promises:
 *   - every warning is one line of printable length, never empty;
 *   - every number, boolean and choice in the result is within its range,
 *     and a string is either unset or non-empty;
 *   - the file-name expansion (%p, %r) of any value stays within its buffer.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES 64

static void check_line(void *ctx, const char *line)
{
    size_t n = strlen(line);
    (void)ctx;
    if (n == 0 || memchr(line, '\n', n))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';

    char *envp[MAX_ENTRIES + 1];
    int n = 0;
    for (char *p = buf; n < MAX_ENTRIES && p < buf + size;) {
        char *nl = memchr(p, '\n', (size_t)(buf + size - p));
        if (nl)
            *nl = '\0';
        envp[n++] = p;
        if (!nl)
            break;
        p = nl + 1;
    }
    envp[n] = NULL;

    struct atl_config cfg;
    atl_config_parse(&cfg, envp, check_line, NULL);

    for (size_t i = 0; i < atl_cfg_nvars; i++) {
        const struct atl_cfg_var *v = &atl_cfg_vars[i];
        const char *field = (const char *)&cfg + v->offset;
        if (v->type == ATL_CFG_STRING) {
            const char *s;
            memcpy(&s, field, sizeof s);
            if (s && !*s)
                abort();
            continue;
        }
        unsigned long long x;
        memcpy(&x, field, sizeof x);
        if (x < v->min || x > v->max)
            abort();
    }

    char out[64];
    for (int i = 0; i < n; i++) {
        atl_config_expand_path(envp[i], out, sizeof out);
        if (strlen(out) >= sizeof out)
            abort();
    }
    free(buf);
    return 0;
}
