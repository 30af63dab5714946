/*
 * Call statistics (ATLAS_STATS=1): the counters and their table.
 */
#include "stats.h"

#include "log.h"

#include <stdio.h>

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
