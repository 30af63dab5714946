/*
 * Preloaded after libatlastrace.so, so that its constructor runs before
 * ours (the loader runs preloaded libraries' constructors last-listed
 * first): leaves `environ` in read-only memory, as a library loaded before
 * atlastrace may (issue #28). The C library's own setenv copies such an
 * array before it adds to it; atlastrace's load-time edits must too.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern char **environ;

__attribute__((constructor)) static void environ_read_only(void)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = ((n + 1) * sizeof *environ + pg - 1) / pg * pg;
    char **a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        return;
    memcpy(a, environ, (n + 1) * sizeof *environ);
    if (mprotect(a, bytes, PROT_READ) == 0)
        environ = a;
}
