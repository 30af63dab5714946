/*
 * Call statistics (ATLAS_STATS=1): the counters and their table.
 */
#include "stats.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>

uint64_t atl_stats_calls[ATL_ID_COUNT][ATL_PATH_COUNT];
static uint64_t resolved[ATL_ID_COUNT][ATL_PATH_COUNT];

void atl_note_resolved(int hook, int path)
{
    __atomic_fetch_add(&resolved[hook][path], 1, __ATOMIC_RELAXED);
}

uint64_t atl_stat_calls(int hook, int path)
{
    return __atomic_load_n(&atl_stats_calls[hook][path], __ATOMIC_RELAXED);
}

uint64_t atl_stat_resolved(int hook, int path)
{
    return __atomic_load_n(&resolved[hook][path], __ATOMIC_RELAXED);
}

static void stats_table(const char *tag)
{
    char line[320];
    uint64_t total = 0;
    snprintf(line, sizeof line,
             "%s: function                              calls     linked      dlsym        gpa  "
             "got:dlsym  got:gpa",
             tag);
    atl_log_line(line);
    for (int h = 0; h < ATL_ID_COUNT; h++) {
        uint64_t c[ATL_PATH_COUNT], sum = 0;
        for (int p = 0; p < ATL_PATH_COUNT; p++)
            sum += c[p] = atl_stat_calls(h, p);
        uint64_t rd = atl_stat_resolved(h, ATL_PATH_DLSYM), rg = atl_stat_resolved(h, ATL_PATH_GPA);
        if (sum == 0 && rd == 0 && rg == 0)
            continue;
        total += sum;
        snprintf(line, sizeof line, "%s: %-36s %10llu %10llu %10llu %10llu %10llu %8llu", tag,
                 atl_hook_names[h], (unsigned long long)sum, (unsigned long long)c[0],
                 (unsigned long long)c[1], (unsigned long long)c[2], (unsigned long long)rd,
                 (unsigned long long)rg);
        atl_log_line(line);
    }
    snprintf(line, sizeof line, "%s: total intercepted calls=%llu", tag, (unsigned long long)total);
    atl_log_line(line);
}

void atl_stats_report(int fd)
{
    (void)fd;
    stats_table("stats");
}

void atl_stats_snapshot(const char *label)
{
    char tag[80];
    /* only printable, space-free label text reaches the log */
    size_t n = 0;
    n += (size_t)snprintf(tag, sizeof tag, "snapshot[");
    for (const char *p = label ? label : ""; *p && n < 60; p++)
        tag[n++] = (*p > ' ' && *p < 127 && *p != ']') ? *p : '_';
    tag[n++] = ']';
    tag[n] = '\0';
    stats_table(tag);
}

/* ---- the library's own time (ATLAS_SELF_TIME=1) ---- */

int atl_selftime_on;
static uint64_t st_calls[ATL_ID_COUNT], st_lib[ATL_ID_COUNT], st_drv[ATL_ID_COUNT],
    st_max[ATL_ID_COUNT], st_start;

void atl_selftime_add(int hook, uint64_t t0, uint64_t t1, uint64_t t2)
{
    uint64_t now = atl_selftime_now();
    uint64_t lib = t1 ? (t1 - t0) + (now - t2) : now - t0, drv = t1 ? t2 - t1 : 0;
    __atomic_fetch_add(&st_calls[hook], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st_lib[hook], lib, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st_drv[hook], drv, __ATOMIC_RELAXED);
    uint64_t m = __atomic_load_n(&st_max[hook], __ATOMIC_RELAXED);
    while (lib > m && !__atomic_compare_exchange_n(&st_max[hook], &m, lib, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED))
        ;
    /* the first call's time stands for the start (no call before it was timed); a load first,
     * so that later calls do not all write one line of memory */
    uint64_t zero = 0;
    if (!__atomic_load_n(&st_start, __ATOMIC_RELAXED))
        __atomic_compare_exchange_n(&st_start, &zero, t0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static int by_lib(const void *a, const void *b)
{
    uint64_t x = st_lib[*(const int *)a], y = st_lib[*(const int *)b];
    return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

void atl_selftime_report(void)
{
    int order[ATL_ID_COUNT], n = 0;
    uint64_t calls = 0, lib = 0, drv = 0;
    for (int h = 0; h < ATL_ID_COUNT; h++) {
        if (!__atomic_load_n(&st_calls[h], __ATOMIC_RELAXED))
            continue;
        order[n++] = h;
        calls += st_calls[h], lib += st_lib[h], drv += st_drv[h];
    }
    if (!n) {
        atl_log_line("self-time: no call went through the library's hooks (no feature was on)");
        return;
    }
    qsort(order, (size_t)n, sizeof *order, by_lib);
    char line[320];
    uint64_t start = __atomic_load_n(&st_start, __ATOMIC_RELAXED);
    double wall = start ? (double)(atl_selftime_now() - start) / 1e6 : 0;
    snprintf(line, sizeof line,
             "self-time: the library's own time in %llu hooked calls: %.1f ms (the driver's %.1f "
             "ms apart) in %.1f ms since the first; by function, the most first:",
             (unsigned long long)calls, (double)lib / 1e6, (double)drv / 1e6, wall);
    atl_log_line(line);
    snprintf(line, sizeof line,
             "self-time: function                              calls   library ms   us a call   "
             "max us   driver ms");
    atl_log_line(line);
    for (int i = 0; i < n; i++) {
        int h = order[i];
        snprintf(line, sizeof line, "self-time: %-36s %10llu %12.2f %11.2f %8.0f %11.2f",
                 atl_hook_names[h], (unsigned long long)st_calls[h], (double)st_lib[h] / 1e6,
                 (double)st_lib[h] / 1e3 / (double)st_calls[h], (double)st_max[h] / 1e3,
                 (double)st_drv[h] / 1e6);
        atl_log_line(line);
    }
}
