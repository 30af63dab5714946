#include "hostmap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every mapping of the process, sorted by address (the kernel lists them
 * in order), each marked host or not. Misses are either unmapped values
 * (small integers, garbage) or mappings made since the last read; the
 * second kind is why a miss re-reads, and the first why it may do so only
 * every so often: a struct full of garbage would otherwise read the file
 * once per word. */
struct range {
    uint64_t lo, hi;
    int host;
};
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct range *ranges;
static size_t nranges, capranges;
static uint64_t read_at_ns; /* 0: never read */

#define REREAD_NS 50000000ull

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int atl_hostmap_parse_line(const char *line, uint64_t *lo, uint64_t *hi, int *host)
{
    char *end;
    unsigned long long a = strtoull(line, &end, 16);
    if (*end != '-')
        return 0;
    unsigned long long b = strtoull(end + 1, &end, 16);
    if (*end != ' ' || b <= a)
        return 0;
    const char *perms = end + 1;
    if (strlen(perms) < 4)
        return 0;
    /* the path, when there is one, is the sixth field */
    const char *p = perms;
    for (int field = 0; field < 4 && *p; field++) {
        p += strcspn(p, " ");
        p += strspn(p, " ");
    }
    /* No access: a reservation (the driver keeps the device's share of the
     * unified address space this way) or a guard page; the GPU driver's
     * device files: pinned host memory and mapped device memory, which a
     * kernel may be handed on purpose. Neither is stray host memory. */
    int none = perms[0] != 'r' && perms[1] != 'w' && perms[2] != 'x';
    *host = !none && strncmp(p, "/dev/nvidia", 11) != 0;
    *lo = a;
    *hi = b;
    return 1;
}

static void reread(void)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return;
    size_t n = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len && line[len - 1] != '\n') {
            /* a long path: the fields we need are at the start; drop the rest */
            int c;
            while ((c = getc(f)) != EOF && c != '\n')
                ;
        }
        struct range r;
        if (!atl_hostmap_parse_line(line, &r.lo, &r.hi, &r.host))
            continue;
        if (n == capranges) {
            size_t cap = capranges ? capranges * 2 : 256;
            struct range *g = realloc(ranges, cap * sizeof *g);
            if (!g)
                break;
            ranges = g;
            capranges = cap;
        }
        ranges[n++] = r;
    }
    fclose(f);
    nranges = n;
}

/* -1: in no range; else whether the range holding v is host memory */
static int lookup(uint64_t v)
{
    size_t lo = 0, hi = nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v < ranges[mid].lo)
            hi = mid;
        else if (v >= ranges[mid].hi)
            lo = mid + 1;
        else
            return ranges[mid].host;
    }
    return -1;
}

int atl_host_addr(uint64_t v)
{
    /* below the lowest address Linux maps, or outside user space */
    if (v < 0x10000 || v >= 0x800000000000ull)
        return 0;
    pthread_mutex_lock(&mu);
    int h = lookup(v);
    if (h < 0) {
        uint64_t t = now_ns();
        if (!read_at_ns || t - read_at_ns >= REREAD_NS) {
            reread();
            read_at_ns = t;
            h = lookup(v);
        }
    }
    pthread_mutex_unlock(&mu);
    return h > 0;
}
