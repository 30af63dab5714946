/*
 * Reading and editing the process environment at load time, in `environ`
 * itself. Never through getenv/setenv/unsetenv: a program may define those
 * (bash does, over a variable table it fills from `environ` only after our
 * constructors ran, and then hands to its children), so the library's calls
 * would reach the program's versions and leave `environ`, which exec'd
 * children and the program itself read, as it was. For constructors, before
 * the program has threads; not thread-safe.
 */
#ifndef ATL_ENVEDIT_H
#define ATL_ENVEDIT_H

#include <stddef.h>

struct stat;

/* The entry "NAME=..." of `environ`, or NULL. */
char **atl_env_slot(const char *name);

/* The value of NAME, or NULL. */
const char *atl_env_get(const char *name);

/* Sets NAME=value. Never written in place: the first edit points `environ`
 * at a copy of the array that the library owns (the one found may be in
 * read-only memory), and later edits change that copy. The strings made are
 * never freed: `environ` points at them. 0, or -1 when out of memory (the
 * environment is then unchanged). */
int atl_env_set(const char *name, const char *value);

/* Takes NAME out of `environ` (in the library's copy, as above). 0, or -1
 * out of memory. */
int atl_env_unset(const char *name);

/* atl_env_set for this process only: what it replaces is remembered, so
 * that a child the library does not trace (ATLAS_NO_CHILDREN=1) gets the
 * variable as the user gave it (atl_env_undo). At most 8 variables. */
int atl_env_route(const char *name, const char *value);
/* How many variables atl_env_route set. */
unsigned atl_env_routed(void);
/* A child's environment: envp with each variable atl_env_route set (and
 * that still has the value it set) as the user gave it, written into out
 * (room entries, the NULL included); envp itself when nothing is to undo or
 * it does not fit. No allocation: safe in a vfork child. */
char *const *atl_env_undo(char *const *envp, char **out, size_t room);

/* Setting NAME as found in `environ`, read by the settings table's own rules
 * (src/config.def): 1 and *num (a BOOL or UINT's number, an ENUM's index)
 * when it is set and valid, else 0. For load-time constructors, which run
 * before the engine reads its settings (and then says what is wrong). */
int atl_env_setting(const char *name, unsigned long long *num);

/* Keeps p (a string or array the library put into `environ`) reachable
 * from the library's own data, so that a leak checker in the program does
 * not count it as lost once the program's setenv copies the array. */
void atl_env_keep(void *p);

/* Is the LD_PRELOAD entry `name` (n bytes) the library `self` (its stat) of file name
 * `self_base`? By identity of the file, since the entry may be a different spelling of the same
 * path; a bare name is searched for by ld.so, so it is compared by name. */
int atl_env_is_lib(const char *name, size_t n, const struct stat *self, const char *self_base);

#endif
