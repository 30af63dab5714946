#define _GNU_SOURCE
#include "run.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

char *read_file_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    char chunk[65536];
    /* read to the end, not to a size taken first: a pipe or a growing file */
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got + 1 > cap) {
            cap = (n + got + 1) * 2;
            char *b = realloc(buf, cap);
            if (!b)
                break;
            buf = b;
        }
        memcpy(buf + n, chunk, got);
        n += got;
    }
    fclose(f);
    if (!buf)
        buf = calloc(1, 1);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static char *slurp(const char *path)
{
    char *t = read_file_text(path, NULL);
    return t ? t : strdup("");
}

static void env_apply(const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq) {
        unsetenv(kv);
        return;
    }
    char name[256];
    size_t n = (size_t)(eq - kv);
    if (n >= sizeof name)
        n = sizeof name - 1;
    memcpy(name, kv, n);
    name[n] = '\0';
    setenv(name, eq + 1, 1);
}

void run_child_env(const char *const env[], const char *log)
{
    char lib[4096];
    if (!realpath(BUILD_DIR "/libatlastrace.so", lib))
        _exit(126);
    char fake[4096];
    if (realpath(BUILD_DIR "/fake", fake))
        setenv("LD_LIBRARY_PATH", fake, 1);
    unsetenv("LD_PRELOAD");
    unsetenv("ATLAS_LOG");
    if (log) {
        /* A sanitized build of the library needs its sanitizer runtime
         * loaded ahead of it: ATL_TEST_PRELOAD_EXTRA names it. */
        const char *extra = getenv("ATL_TEST_PRELOAD_EXTRA");
        char pre[8192];
        snprintf(pre, sizeof pre, "%s%s%s", extra && *extra ? extra : "",
                 extra && *extra ? " " : "", lib);
        setenv("LD_PRELOAD", pre, 1);
        if (*log)
            setenv("ATLAS_LOG", log, 1);
    }
    for (const char *const *e = env; e && *e; e++)
        env_apply(*e);
}

void run_target(struct run_result *r, char *const argv[], const char *const env[], int preload)
{
    char dir[] = "/tmp/atlas-test-XXXXXX";
    char outp[128], errp[128], logp[128];
    memset(r, 0, sizeof *r);
    if (!mkdtemp(dir)) {
        r->status = -1;
        return;
    }
    snprintf(outp, sizeof outp, "%s/out", dir);
    snprintf(errp, sizeof errp, "%s/err", dir);
    snprintf(logp, sizeof logp, "%s/log", dir);

    pid_t pid = fork();
    if (pid == 0) {
        run_child_env(env, preload ? logp : NULL);
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int er = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(er, 2);
        /* A hung target (a deadlock) fails the test instead of hanging it:
         * the alarm survives execve. ATL_TEST_TIMEOUT seconds, default 600. */
        const char *to = getenv("ATL_TEST_TIMEOUT");
        alarm(to && atoi(to) > 0 ? (unsigned)atoi(to) : 600);
        execve(argv[0], argv, environ);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->out = slurp(outp);
    r->err = slurp(errp);
    r->log = slurp(logp);
    unlink(outp);
    unlink(errp);
    unlink(logp);
    rmdir(dir);
}

void run_free(struct run_result *r)
{
    free(r->out);
    free(r->err);
    free(r->log);
}

int stats_row(const char *log, const char *fn, struct stat_row *row)
{
    memset(row, 0, sizeof *row);
    char key[256];
    snprintf(key, sizeof key, " stats: %s ", fn);
    const char *p = strstr(log, key);
    if (!p)
        return 0;
    p += strlen(key);
    return sscanf(p, "%llu %llu %llu %llu %llu %llu", &row->calls, &row->linked, &row->dlsym,
                  &row->gpa, &row->got_dlsym, &row->got_gpa) == 6;
}

unsigned long long fake_count(const char *out, const char *fn)
{
    char key[256];
    snprintf(key, sizeof key, "fake: %s ", fn);
    for (const char *p = out; (p = strstr(p, key)); p++) {
        if (p == out || p[-1] == '\n')
            return strtoull(p + strlen(key), NULL, 10);
    }
    return 0;
}

int count_lines(const char *text, const char *needle)
{
    int n = 0;
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *tmp = strndup(line, len);
        if (strstr(tmp, needle))
            n++;
        free(tmp);
        if (!end)
            break;
        line = end + 1;
    }
    return n;
}
