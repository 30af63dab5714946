/*
 * A program for atlas-trace's tests: it reports what atlas-trace handed it.
 *
 *   front_env env [args...]   each argument, then LD_PRELOAD, NVTX_INJECTION64_PATH and every
 *                             ATLAS_* variable, one "NAME=value" (or "NAME unset") per line
 *   front_env exit N          exits with status N
 *   front_env signal N        kills itself with signal N
 *   front_env parent          says whether libatlastrace.so is mapped here, then execs itself as
 *                             "child", which says the same and shows LD_PRELOAD
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static void show(const char *name)
{
    const char *v = getenv(name);
    if (v)
        printf("%s=%s\n", name, v);
    else
        printf("%s unset\n", name);
}

/* Is the interposer loaded into this process, whatever the environment now says? */
static int atlas_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        found |= strstr(line, "/libatlastrace.so") != NULL;
    if (f)
        fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 100;
    const char *mode = argv[1];
    if (strcmp(mode, "env") == 0) {
        for (int i = 2; i < argc; i++)
            printf("arg[%d]=<%s>\n", i - 2, argv[i]);
        show("LD_PRELOAD");
        show("NVTX_INJECTION64_PATH");
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "ATLAS_", 6) == 0)
                printf("%s\n", *e);
        return 0;
    }
    if (strcmp(mode, "exit") == 0 && argc > 2)
        return atoi(argv[2]);
    if (strcmp(mode, "signal") == 0 && argc > 2) {
        fflush(stdout);
        raise(atoi(argv[2]));
        return 101;
    }
    if (strcmp(mode, "parent") == 0) {
        printf("parent loaded=%d\n", atlas_mapped());
        fflush(stdout);
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        perror("exec");
        return 102;
    }
    if (strcmp(mode, "child") == 0) {
        printf("child loaded=%d\n", atlas_mapped());
        show("LD_PRELOAD");
        show("NVTX_INJECTION64_PATH");
        return 0;
    }
    return 100;
}
