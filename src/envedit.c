#include "envedit.h"

#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

/* What the library made for `environ`: the entries and the last array it
 * grew. `environ` points at them, but a program that calls setenv later
 * gets a copy of the array from the C library, and a program checked by a
 * leak checker (LeakSanitizer) would then be told of ours as leaks and exit
 * with the checker's status: kept here, they stay reachable. */
static void *kept[16];
static unsigned nkept;
static char **grown_last;

void atl_env_keep(void *p)
{
    if (p && nkept < sizeof kept / sizeof kept[0])
        kept[nkept++] = p;
}

char **atl_env_slot(const char *name)
{
    size_t n = strlen(name);
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return e;
    return NULL;
}

const char *atl_env_get(const char *name)
{
    char **slot = atl_env_slot(name);
    return slot ? *slot + strlen(name) + 1 : NULL;
}

int atl_env_set(const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    char *entry = malloc(n + 1 + v + 1);
    if (!entry)
        return -1;
    memcpy(entry, name, n);
    entry[n] = '=';
    memcpy(entry + n + 1, value, v + 1);
    char **slot = atl_env_slot(name);
    if (slot) {
        atl_env_keep(entry);
        *slot = entry;
        return 0;
    }
    size_t count = 0;
    while (environ && environ[count])
        count++;
    /* the old array may be the one on the stack that the kernel laid out,
     * or the C library's: left as it is, never freed; one this function
     * grew before is freed once replaced */
    char **grown = malloc((count + 2) * sizeof *grown);
    if (!grown) {
        free(entry);
        return -1;
    }
    if (count)
        memcpy(grown, environ, count * sizeof *grown);
    grown[count] = entry;
    grown[count + 1] = NULL;
    atl_env_keep(entry);
    char **old = environ;
    environ = grown;
    if (old == grown_last)
        free(old);
    grown_last = grown;
    return 0;
}

int atl_env_setting(const char *name, unsigned long long *num)
{
    const char *v = atl_env_get(name);
    int idx = atl_config_find(name);
    return v && idx >= 0 && atl_config_value(idx, v, num) == NULL;
}

void atl_env_drop(char **slot)
{
    for (char **e = slot; *e; e++)
        e[0] = e[1];
}

int atl_env_is_lib(const char *name, size_t n, const struct stat *self, const char *self_base)
{
    char path[4096];
    if (n == 0 || n >= sizeof path)
        return 0;
    memcpy(path, name, n);
    path[n] = '\0';
    if (!strchr(path, '/'))
        return strcmp(path, self_base) == 0;
    struct stat st;
    return stat(path, &st) == 0 && st.st_dev == self->st_dev && st.st_ino == self->st_ino;
}
