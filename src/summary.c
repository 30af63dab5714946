/*
 * The summary line (src/summary.h): who prints one, and how it reads.
 */
#include "summary.h"

#include "hint.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Read at load, before the program can change its environment: under atlas-trace, and the PID
 * atlas-trace ran the program in. One scan of `environ` in every process the library is loaded
 * into. */
static int under_front;
static long front_pid;

__attribute__((constructor)) static void summary_load(void)
{
    under_front = atl_front_pid(&front_pid);
}

int atl_summary_wanted(int initialised)
{
    return under_front && (initialised || (front_pid && front_pid == (long)getpid()));
}

const char *atl_summary_number(uint64_t n, char *out)
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n), o = 0;
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
    return out;
}

struct line {
    char *p;
    size_t len, used;
};

static void add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct line *l, const char *fmt, ...)
{
    if (l->used >= l->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->p + l->used, l->len - l->used, fmt, ap);
    va_end(ap);
    l->used = n < 0 ? l->len : l->used + (size_t)n;
}

/* ", " before each part but the first. */
static void part(struct line *l, int *first)
{
    if (!*first)
        add(l, ", ");
    *first = 0;
}

/* "1 overrun", "2,114 guarded allocations". */
static void count(struct line *l, uint64_t n, const char *one, const char *many)
{
    char num[32];
    add(l, "%s %s", atl_summary_number(n, num), n == 1 ? one : many);
}

void atl_summary_format(const struct atl_summary *s, char *out, size_t len)
{
    struct line l = {out, len, 0};
    int first = 1;
    out[0] = '\0';
    add(&l, "summary: ");
    if (!s) {
        add(&l, "no CUDA driver call was made in this process, so nothing was watched");
        return;
    }
    if (s->redzone) {
        part(&l, &first);
        count(&l, s->overruns, "overrun", "overruns");
        add(&l, " in ");
        count(&l, s->guarded, "guarded allocation", "guarded allocations");
        if (s->quarantine) {
            part(&l, &first);
            count(&l, s->after_free, "write after free", "writes after free");
        }
    }
    part(&l, &first);
    count(&l, s->faults, "fault", "faults");
    if (s->launches_counted) {
        add(&l, " in ");
        count(&l, s->launches, "launch", "launches");
    }
    if (s->debug_sync) {
        char num[32];
        add(&l, " (%s synchronised)", atl_summary_number(s->synced, num));
    }
    if (s->leaks) {
        char num[32];
        part(&l, &first);
        count(&l, s->leaked, "leak", "leaks");
        if (s->leaked && s->leaked_allocs != s->leaked) {
            char bytes[32];
            add(&l, " (%s allocations, %s bytes)", atl_summary_number(s->leaked_allocs, num),
                atl_summary_number(s->leaked_bytes, bytes));
        } else if (s->leaked) {
            add(&l, " (%s bytes)", atl_summary_number(s->leaked_bytes, num));
        }
    }
    if (s->races) {
        part(&l, &first);
        count(&l, s->race_count, "race", "races");
    }
    if (s->trace) {
        char num[32];
        part(&l, &first);
        if (!s->steps) {
            add(&l, "no step recorded");
        } else {
            add(&l, "%s of ", atl_summary_number(s->differ, num));
            count(&l, s->steps, "step", "steps");
            add(&l, " %s", s->differ == 1 ? "differs" : "differ");
        }
    }
    part(&l, &first);
    count(&l, s->copies, "blocking copy", "blocking copies");
    if (s->sites_counted) {
        add(&l, " from ");
        count(&l, s->sites, "site", "sites");
    }
    part(&l, &first);
    count(&l, s->syncs, "host sync", "host syncs");
    if (s->suppressions) {
        part(&l, &first);
        count(&l, s->suppressed, "finding suppressed", "findings suppressed");
    }
}
