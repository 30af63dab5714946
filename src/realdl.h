/*
 * The C library's own dlsym. This library exports a dlsym of its own
 * (hooks/resolve.c: it hands out our wrappers of driver functions) and
 * links with -Bsymbolic-functions, so a plain dlsym call from any file of
 * it binds to that wrapper, which can reach the engine's initialisation: the
 * library's own look-ups (the driver's functions, __cxa_demangle) go through
 * here instead.
 */
#ifndef ATL_REALDL_H
#define ATL_REALDL_H

/* A sanitizer runtime preloaded ahead of a sanitized build of us calls
 * dlsym while it initialises, before its shadow memory exists: the path from
 * our exported dlsym to the real one must carry no sanitizer
 * instrumentation. */
#define ATL_NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))

typedef void *(*atl_dlsym_fn)(void *, const char *);

/* The C library's dlsym (found once, with dlvsym; NULL when it cannot be
 * found). */
atl_dlsym_fn atl_real_dlsym(void) ATL_NO_SANITIZE;

/* dlsym(handle, name) through the C library's own: NULL when absent. */
void *atl_dlsym(void *handle, const char *name);

#endif
