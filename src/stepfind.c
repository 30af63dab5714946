/*
 * A differing step as a finding (see stepfind.h).
 */
#include "stepfind.h"

#include <stdio.h>
#include <string.h>

void atl_diff_mark(const struct atl_diff_stats *st, struct atl_diff_mark *m)
{
    m->ntop = st->ntop;
    for (int i = 0; i < st->ntop; i++)
        m->n[i] = st->top[i].n;
}

uint64_t atl_diff_changed(const struct atl_diff_stats *st, const struct atl_diff_mark *m,
                          const char *step, size_t nops_a, size_t nops_b, char *kernel, size_t len)
{
    uint64_t h = atl_hash_bytes(0x51ef, step, strlen(step));
    h = atl_hash_mix(h, nops_a);
    h = atl_hash_mix(h, nops_b);
    kernel[0] = '\0';
    for (int i = 0; i < st->ntop; i++) {
        if (i < m->ntop && st->top[i].n == m->n[i])
            continue;
        const char *what = st->top[i].what;
        h = atl_hash_bytes(h, what, strlen(what));
        /* "add_pos arg1", "blob arg1+0x40": a kernel's parameter; "memset ptr": no kernel */
        const char *sp = strrchr(what, ' ');
        if (!kernel[0] && sp && strncmp(sp + 1, "arg", 3) == 0)
            snprintf(kernel, len, "%.*s", (int)(sp - what), what);
    }
    return h ? h : 1;
}
