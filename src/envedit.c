/*
 * Edits of `environ` at load time (envedit.h).
 *
 * Never in place: the array found at load may be the one the kernel laid
 * out on the stack, the C library's, or one a library loaded before us left
 * in read-only memory (writing it crashed the program). The first edit
 * copies the array into one the library owns, and `environ` points at that
 * from then on; later edits change the copy (grown when needed).
 */
#include "envedit.h"

#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

/* What the library made for `environ`: the entries and the array. A
 * program that calls setenv later gets a copy of the array from the C
 * library, and a program checked by a leak checker (LeakSanitizer) would
 * then be told of ours as leaks and exit with the checker's status: kept
 * here, they stay reachable. */
static void *kept[16];
static unsigned nkept;
static char **own;            /* the array the library made, while `environ` is it */
static size_t own_n, own_cap; /* its entries and room, the NULL included */

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

/* `environ` as an array of the library's with room for `more` entries;
 * NULL when out of memory (then unchanged). An array the library grew
 * before is freed once replaced; any other is left as it is. */
static char **own_environ(size_t more)
{
    if (own && environ == own && own_n + more + 1 <= own_cap)
        return own;
    size_t n = 0;
    while (environ && environ[n])
        n++;
    size_t cap = n + more + 8;
    char **a = malloc(cap * sizeof *a);
    if (!a)
        return NULL;
    if (n)
        memcpy(a, environ, n * sizeof *a);
    a[n] = NULL;
    if (own && environ == own)
        free(own);
    environ = own = a;
    own_n = n, own_cap = cap;
    return a;
}

static char *entry_of(const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    char *entry = malloc(n + 1 + v + 1);
    if (!entry)
        return NULL;
    memcpy(entry, name, n);
    entry[n] = '=';
    memcpy(entry + n + 1, value, v + 1);
    return entry;
}

/* Sets the entry; returns the string put in (NULL: out of memory). */
static char *env_put(const char *name, const char *value)
{
    char *entry = entry_of(name, value);
    char **a = entry ? own_environ(1) : NULL;
    if (!a) {
        free(entry);
        return NULL;
    }
    atl_env_keep(entry);
    char **slot = atl_env_slot(name);
    if (slot) {
        *slot = entry;
    } else {
        a[own_n++] = entry;
        a[own_n] = NULL;
    }
    return entry;
}

int atl_env_set(const char *name, const char *value)
{
    return env_put(name, value) ? 0 : -1;
}

int atl_env_unset(const char *name)
{
    if (!atl_env_slot(name))
        return 0;
    char **a = own_environ(0);
    if (!a)
        return -1;
    for (char **e = atl_env_slot(name); e && *e; e++)
        e[0] = e[1];
    own_n--;
    return 0;
}

/* ---- for this process only ---------------------------------------------------- */

/* What atl_env_route set: the entry put in, and the one it replaced (NULL:
 * the variable was unset). */
#define ROUTED 8
static struct {
    const char *name;
    const char *ours, *before;
} routed[ROUTED];
static unsigned nrouted;

int atl_env_route(const char *name, const char *value)
{
    char **slot = atl_env_slot(name);
    const char *before = slot ? *slot : NULL;
    if (nrouted == ROUTED)
        return -1;
    char *ours = env_put(name, value);
    if (!ours)
        return -1;
    routed[nrouted].name = name;
    routed[nrouted].ours = ours;
    routed[nrouted].before = before;
    nrouted++;
    return 0;
}

unsigned atl_env_routed(void)
{
    return nrouted;
}

/* The entry that replaces e in a child's environment: e itself, the one
 * atl_env_route replaced, or NULL (dropped). By value: bash and Python
 * pass copies of the strings. */
static const char *undone(const char *e)
{
    for (unsigned i = 0; i < nrouted; i++)
        if (strcmp(e, routed[i].ours) == 0)
            return routed[i].before;
    return e;
}

char *const *atl_env_undo(char *const *envp, char **out, size_t room)
{
    if (!nrouted || !envp)
        return envp;
    size_t n = 0, k = 0;
    while (envp[n])
        n++;
    if (n + 1 > room)
        return envp; /* more than the caller's stack holds: as it is */
    for (size_t i = 0; i < n; i++) {
        const char *e = undone(envp[i]);
        if (e)
            out[k++] = (char *)e;
    }
    out[k] = NULL;
    return out;
}

int atl_env_setting(const char *name, unsigned long long *num)
{
    const char *v = atl_env_get(name);
    int idx = atl_config_find(name);
    return v && idx >= 0 && atl_config_value(idx, v, num) == NULL;
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
