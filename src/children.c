/*
 * ATLAS_NO_CHILDREN=1 (atlas-trace --no-children): trace this process, not the processes it
 * starts. LD_PRELOAD is inherited through exec, so a training script that runs nvidia-smi, a
 * compiler or a data-loader helper would otherwise load the interposer into each of them, and each
 * would write its own reports into the same log.
 *
 * This runs as a load-time constructor, not in the engine's lazy init: the engine starts at the
 * first CUDA call, and a program may exec children before that (Python's os.environ is even copied
 * before main, so a later unsetenv would not reach subprocess). Here our library is already mapped
 * (ld.so read LD_PRELOAD before any constructor), so removing it from the environment changes only
 * what exec'd children inherit. Cost in every process: one scan of the environment; the rest only
 * when asked.
 */
#define _GNU_SOURCE
#include "envedit.h"
#include "realdl.h"

#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;
static int untraced_children;
static void children_resolve(void);

/* The environment is read and edited in `environ` itself (src/envedit.h says why: bash). */

__attribute__((constructor)) static void children_strip_preload(void)
{
    unsigned long long on = 0;
    /* A set-uid program reads no settings (as init_body), and its ld.so ignored us anyway. */
    if (!atl_env_setting("ATLAS_NO_CHILDREN", &on) || !on || getauxval(AT_SECURE))
        return;

    Dl_info info;
    struct stat self;
    if (!dladdr((void *)children_strip_preload, &info) || !info.dli_fname ||
        stat(info.dli_fname, &self) != 0)
        return;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;

    const char *pre = atl_env_get("LD_PRELOAD");
    if (pre) {
        /* the other entries, in order, ':'-joined (ld.so splits on spaces and colons alike);
         * never freed: `environ` points at it from now on */
        char *kept = malloc(strlen(pre) + 1);
        if (kept) {
            size_t k = 0;
            for (const char *p = pre; *p;) {
                p += strspn(p, " :");
                size_t n = strcspn(p, " :");
                if (n && !atl_env_is_lib(p, n, &self, base)) {
                    if (k)
                        kept[k++] = ':';
                    memcpy(kept + k, p, n);
                    k += n;
                }
                p += n;
            }
            kept[k] = '\0';
            if (k)
                atl_env_set("LD_PRELOAD", kept);
            else
                atl_env_unset("LD_PRELOAD");
            free(kept);
        }
    }

    const char *nvtx = atl_env_get("NVTX_INJECTION64_PATH");
    if (nvtx && atl_env_is_lib(nvtx, strlen(nvtx), &self, base))
        atl_env_unset("NVTX_INJECTION64_PATH");
    untraced_children = 1;
    children_resolve();
}

/* ---- what this process alone was given ---------------------------------------------- */

/* The red zones' pool routing (src/pools.c) is for this process: a child that is not traced
 * gets the allocator the user chose, not one picked for red zones it does not have. The
 * variables stay in `environ` (the frameworks of this process read them late: PyTorch when it
 * loads, JAX from Python's copy of the environment) and are undone in each child's environment
 * at exec, in the exec functions below, which take the place of the C library's. Not reached:
 * children of system() and popen(), which the C library starts through its own internal calls
 * (docs/reliability.md). Outside ATLAS_NO_CHILDREN=1, or with nothing routed, each forwards its
 * arguments as they are. */
/* The C library's function `name` (the one after us), found once. In a vfork child too: dlsym
 * takes the loader's lock, which the child shares with the parent's other threads; found in
 * the constructor already when children are untraced. */
static void *next_fn(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = atl_dlsym(RTLD_NEXT, name);
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}

/* The most entries a child's environment is rewritten with, on the stack (a vfork child must
 * not allocate); a larger one goes as it is. */
#define ENV_MAX 8192

static size_t env_count(char *const *envp)
{
    size_t n = 0;
    while (envp && envp[n] && n <= ENV_MAX)
        n++;
    return n;
}

/* envp as the child gets it: a local array `name` of the caller's. */
#define CHILD_ENV(name, envp)                                                                      \
    size_t name##_n = untraced_children && atl_env_routed() ? env_count(envp) + 1 : 1;             \
    char *name##_v[name##_n <= ENV_MAX ? name##_n : 1];                                            \
    char *const *name = untraced_children && name##_n > 1                                          \
                            ? atl_env_undo(envp, name##_v, name##_n <= ENV_MAX ? name##_n : 0)     \
                            : (envp)

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
static void *p_execve, *p_execvpe, *p_fexecve, *p_execveat, *p_spawn, *p_spawnp;

/* With children untraced, the C library's exec functions are found at load, not later in a
 * vfork child. */
static void children_resolve(void)
{
    next_fn(&p_execve, "execve");
    next_fn(&p_execvpe, "execvpe");
    next_fn(&p_fexecve, "fexecve");
    next_fn(&p_execveat, "execveat");
    next_fn(&p_spawn, "posix_spawn");
    next_fn(&p_spawnp, "posix_spawnp");
}

#define EXPORTED __attribute__((visibility("default")))

EXPORTED int execve(const char *path, char *const argv[], char *const envp[])
{
    execve_fn f = (execve_fn)next_fn(&p_execve, "execve");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    CHILD_ENV(env, envp);
    return f(path, argv, env);
}

EXPORTED int execvpe(const char *file, char *const argv[], char *const envp[])
{
    execve_fn f = (execve_fn)next_fn(&p_execvpe, "execvpe");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    CHILD_ENV(env, envp);
    return f(file, argv, env);
}

EXPORTED int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

EXPORTED int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

/* execl, execlp, execle: the arguments gathered on the stack (as the C library does), then the
 * vector form. */
#define ARGS_FROM(first, ap, argv, rest)                                                           \
    size_t argc_ = 1;                                                                              \
    va_start(ap, first);                                                                           \
    while (va_arg(ap, char *))                                                                     \
        argc_++;                                                                                   \
    va_end(ap);                                                                                    \
    char *argv[argc_ + 1];                                                                         \
    argv[0] = (char *)(first);                                                                     \
    va_start(ap, first);                                                                           \
    for (size_t i_ = 1; i_ <= argc_; i_++)                                                         \
        argv[i_] = va_arg(ap, char *);                                                             \
    rest;                                                                                          \
    va_end(ap)

EXPORTED int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGS_FROM(arg, ap, argv, (void)0);
    return execve(path, argv, environ);
}

EXPORTED int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    ARGS_FROM(arg, ap, argv, (void)0);
    return execvpe(file, argv, environ);
}

EXPORTED int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    char *const *envp;
    ARGS_FROM(arg, ap, argv, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}

EXPORTED int fexecve(int fd, char *const argv[], char *const envp[])
{
    int (*f)(int, char *const[], char *const[]) =
        (int (*)(int, char *const[], char *const[]))next_fn(&p_fexecve, "fexecve");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    CHILD_ENV(env, envp);
    return f(fd, argv, env);
}

EXPORTED int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                      int flags)
{
    int (*f)(int, const char *, char *const[], char *const[], int) =
        (int (*)(int, const char *, char *const[], char *const[], int))next_fn(&p_execveat,
                                                                               "execveat");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    CHILD_ENV(env, envp);
    return f(dirfd, path, argv, env, flags);
}

typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

EXPORTED int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                         const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    spawn_fn f = (spawn_fn)next_fn(&p_spawn, "posix_spawn");
    if (!f)
        return ENOSYS;
    CHILD_ENV(env, envp);
    return f(pid, path, fa, attr, argv, env);
}

EXPORTED int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    spawn_fn f = (spawn_fn)next_fn(&p_spawnp, "posix_spawnp");
    if (!f)
        return ENOSYS;
    CHILD_ENV(env, envp);
    return f(pid, file, fa, attr, argv, env);
}
