/*
 * The feature "fault": the sticky-fault report, debug sync, and the flight
 * recorder they report from (src/flight.c, src/ring.h). See faultrep.h.
 */
#include "faultrep.h"

#include "capture.h"
#include "config.h"
#include "driver.h"
#include "dsk.h"
#include "findings.h"
#include "flight.h"
#include "hint.h"
#include "kernels.h"
#include "log.h"
#include "services.h"
#include "stack.h"

#include <stdlib.h>
#include <string.h>

static enum atl_dsk debug_sync;     /* ATLAS_DEBUG_SYNC_KERNELS */
static const char *dsk_list;        /* its list of names (ATL_DSK_LIST) */
static unsigned long long dsk_seen; /* the list's entries that named a launched kernel */

/* Reads the settings and starts the launch history; the events it needs:
 * copies and syncs for the latch and the good syncs; launches for the ring
 * of recent launches (the hooks' light path; measured: see docs/sync.md);
 * lookups, so the ring can name kernels after a fault, when the driver no
 * longer answers cuFuncGetName (seen on the H200); graph instantiations
 * (the capture class), for a graph's kernel nodes; captures, so debug sync
 * never synchronises inside one; module unloads, so their kernels' records
 * are forgotten. */
unsigned atl_faultrep_init(void)
{
    /* a bad value was said, and left unset, by the settings' parser (the same one: src/dsk.h) */
    const char *why;
    debug_sync = atl_dsk_parse(atl_cfg.debug_sync_kernels, &why);
    atl_fault_init(atl_cfg.launch_ring);
    if (debug_sync == ATL_DSK_LIST) {
        /* a copy: the environment's string may be changed by the program */
        dsk_list = strdup(atl_cfg.debug_sync_kernels);
        if (!dsk_list)
            dsk_list = atl_cfg.debug_sync_kernels;
    }
    unsigned on = ATL_ON_COPY | ATL_ON_SYNC | ATL_ON_LOOKUP | ATL_ON_CAPTURE | ATL_ON_MODULE;
    /* The flight recorder's ring is written from the hooks' light path (a
     * table probe, a launch number and one ring slot, no engine slow path):
     * +39 instructions a launch against the fake driver at any number of
     * kernels (make cpu-bench), where the engine's slow path cost +293 and
     * 60 ns (1.7-2.4% of a 3.5 us launch) measured in-process on the H200.
     * ATLAS_LAUNCH_RING=0 gives even that back; the latch then still reports
     * the first sticky error, without the launches before it. A list of
     * kernels to debug-sync takes every launch through the engine, which
     * matches the kernel by its record, which the launch event carries. */
    if (debug_sync)
        on |= ATL_ON_LAUNCH;
    else if (atl_fault_ring_on())
        on |= ATL_ON_LAUNCH_RING; /* hooks' light path, not the engine */
    return on;
}

/* ---- the fault latch ---------------------------------------------------------------- */

static void error_text(CUresult r, const char **name, const char **text, char *buf, unsigned len)
{
    *name = atl_error_name(r, buf, len);
    *text = NULL;
    if (!atl_drv.cuGetErrorString || atl_drv.cuGetErrorString(r, text) != CUDA_SUCCESS || !*text)
        *text = "(no description)";
}

void atl_faultrep_check(int hook, CUresult r)
{
    if (__builtin_expect(!atl_fault_latch(r), 1))
        return; /* not sticky, or reported once: later calls fail for the same reason */
    char buf[48];
    const char *name, *text;
    error_text(r, &name, &text, buf, sizeof buf);
    struct atl_stack st;
    atl_stack_capture(&st);
    char site[400];
    atl_stack_site(&st, site, sizeof site);
    char all[96], head[1200];
    snprintf(head, sizeof head,
             "fault: error=%s code=%d first_seen_by=%s site=%s: %s. The context is lost; the "
             "fault happened in an earlier launch (%s names it); later failures are not repeated",
             name, (int)r, atl_hook_names[hook], site, text,
             atl_hint_setting("ATLAS_DEBUG_SYNC_KERNELS", "1", all, sizeof all));
    struct atl_find f = {.kind = ATL_FINDING_FAULT, .message = head, .stack = &st};
    if (!atl_find_open(&f))
        return;
    atl_log(ATL_ERROR, "%s", head);
    atl_log_frames(ATL_ERROR, "fault", &st, 0, 8);
    atl_flight_report("fault");
    atl_find_close(&f);
}

/* ---- debug sync --------------------------------------------------------------------- */

static int debug_reported;
static uint64_t debug_synced; /* launches debug sync synchronised after (the summary line) */

/* Synchronises the launch's stream. Success marks the launches so far as
 * good; the first failure latches (this report says it all) and gives its
 * error's name and text, which stay NULL otherwise (reported once). */
static CUresult debug_sync_stream(int hook, CUstream stream, uint64_t *upto_out, const char **ename,
                                  const char **text, char *buf, unsigned len)
{
    *ename = NULL;
    uint64_t upto = atl_fault_last_launch();
    if (upto_out)
        *upto_out = upto;
    CUresult r = atl_drv.cuStreamSynchronize(atl_own_stream(stream, hook));
    __atomic_add_fetch(&debug_synced, 1, __ATOMIC_RELAXED);
    if (r == CUDA_SUCCESS) {
        atl_flight_good_sync(ATL_SYNC_STREAM, stream, upto);
        return r;
    }
    if (__atomic_exchange_n(&debug_reported, 1, __ATOMIC_ACQ_REL))
        return r;
    atl_fault_latch(r); /* a sticky one: this report says it all */
    error_text(r, ename, text, buf, len);
    return r;
}

/* With a list of kernel names: 1 when launches of l's kernel synchronise.
 * The answer is kept in the kernel's record (the event carries it), once
 * the kernel has a name to match. */
static int debug_sync_wanted(const struct atl_launch *l)
{
    struct atl_krec *r = l->rec;
    int kept = r ? __atomic_load_n(&r->dsk, __ATOMIC_RELAXED) : 0;
    if (kept)
        return kept == 2;
    const char *m = r ? atl_krec_mangled(r) : NULL;
    unsigned long long which = atl_dsk_matches(dsk_list, m);
    if (m)
        __atomic_store_n(&r->dsk, which ? 2 : 1, __ATOMIC_RELAXED);
    __atomic_fetch_or(&dsk_seen, which, __ATOMIC_RELAXED);
    return which != 0;
}

/* A name of the list that no launched kernel had: debug sync did nothing for it (a misspelt
 * name, or a kernel that never ran), which would otherwise read as "it did not fault". */
void atl_faultrep_exit(void)
{
    if (debug_sync != ATL_DSK_LIST)
        return;
    unsigned long long seen = __atomic_load_n(&dsk_seen, __ATOMIC_RELAXED);
    char names[512], set[600];
    size_t used = 0;
    unsigned total = 0, n = 0, i = 0;
    for (int pass = 0; pass < 2; pass++, i = 0) {
        names[0] = '\0';
        for (const char *p = dsk_list; *p; i++) {
            size_t len = strcspn(p, ",");
            if (!(seen & (1ULL << (i < 63 ? i : 63)))) {
                if (!pass)
                    total++;
                else if (used < sizeof names) {
                    const char *sep = !n ? "" : n + 1 == total ? " or " : ", ";
                    used += (size_t)snprintf(names + used, sizeof names - used, "%s%.*s", sep,
                                             (int)len, p);
                    n++;
                }
            }
            p += len + (p[len] == ',');
        }
    }
    if (!total)
        return;
    char shown[520];
    atl_config_show_value(names, shown, sizeof shown);
    atl_log(ATL_WARN,
            "debug-sync: %s: no kernel named %s was launched (outside graphs), so no launch was "
            "synchronised for %s",
            atl_hint_setting("ATLAS_DEBUG_SYNC_KERNELS", dsk_list, set, sizeof set), shown,
            total == 1 ? "it" : "them");
}

/* Costs a name look-up and a cuStreamSynchronize per launch (and, while a capture is open,
 * the engine's one cuStreamIsCapturing): the GPU runs one kernel at a time, which is the
 * point. */
static CUresult debug_sync_after(const struct atl_launch *l)
{
    /* the list first: a launch into a capture still shows its kernel was named */
    if (debug_sync == ATL_DSK_LIST && !debug_sync_wanted(l))
        return CUDA_SUCCESS;
    /* the launch went into a capture (the engine asked its stream once: l->cap) */
    if (atl_capture_forbids_sync() || l->cap || !atl_drv.cuStreamSynchronize)
        return CUDA_SUCCESS;
    /* name it now: after a fault the driver stops answering cuFuncGetName */
    char name[256];
    atl_kernel_name_of(l->rec, l->func, name, sizeof name);
    char buf[48];
    const char *ename, *text;
    CUresult r = debug_sync_stream(l->hook, l->stream, NULL, &ename, &text, buf, sizeof buf);
    if (!ename)
        return r;
    char head[1200];
    snprintf(head, sizeof head,
             "debug-sync: launch failed: kernel=%s grid=(%u,%u,%u) block=(%u,%u,%u) shmem=%u "
             "stream=%p launch=%llu via=%s error=%s code=%d: %s",
             name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
             l->shmem, (void *)l->stream, (unsigned long long)l->seq, atl_hook_names[l->hook],
             ename, (int)r, text);
    struct atl_stack stk;
    atl_stack_capture(&stk);
    struct atl_find f = {.kind = ATL_FINDING_FAULT,
                         .message = head,
                         .kernel = name,
                         .kernel_mangled = l->rec ? atl_krec_mangled(l->rec) : NULL,
                         .launch = l->seq,
                         .stack = &stk};
    if (atl_find_open(&f)) {
        atl_log(ATL_ERROR, "%s", head);
        atl_log_frames(ATL_ERROR, "debug-sync", &stk, 0, 12);
        atl_find_close(&f);
    }
    return r;
}

/* Debug sync of a graph launch: the graph is synchronised as a whole, so a
 * fault is inside one of its kernel nodes, which the report lists. With a
 * list of kernel names, every graph launch is synchronised too: a kernel
 * named may be one of its nodes, and graph launches are few. */
CUresult atl_faultrep_graph_launch_post(const struct atl_graph_launch *g, CUresult r)
{
    if (r != CUDA_SUCCESS || !debug_sync || atl_capture_forbids_sync() ||
        !atl_drv.cuStreamSynchronize)
        return r;
    char buf[48];
    const char *ename, *text;
    uint64_t upto;
    r = debug_sync_stream(g->hook, g->stream, &upto, &ename, &text, buf, sizeof buf);
    if (!ename)
        return r;
    char head[1200];
    snprintf(head, sizeof head,
             "debug-sync: graph launch failed: graph=%p stream=%p launch=%llu via=%s error=%s "
             "code=%d: %s. Graph launches are synchronised as a whole: the fault is inside one of "
             "its kernel nodes",
             (void *)g->exec, (void *)g->stream, (unsigned long long)upto, atl_hook_names[g->hook],
             ename, (int)r, text);
    struct atl_stack stk;
    atl_stack_capture(&stk);
    struct atl_find f = {.kind = ATL_FINDING_FAULT, .message = head, .launch = upto, .stack = &stk};
    if (!atl_find_open(&f))
        return r;
    atl_log(ATL_ERROR, "%s", head);
    if (!atl_flight_graph_nodes("debug-sync", g->exec))
        atl_log(ATL_ERROR, "debug-sync:     (its kernel nodes are unknown: instantiated before "
                           "atlastrace was loaded)");
    atl_log_frames(ATL_ERROR, "debug-sync", &stk, 0, 12);
    atl_find_close(&f);
    return r;
}

int atl_faultrep_synced(uint64_t *n)
{
    *n = __atomic_load_n(&debug_synced, __ATOMIC_RELAXED);
    return debug_sync != ATL_DSK_OFF;
}

CUresult atl_faultrep_launch_post(const struct atl_launch *l)
{
    return debug_sync ? debug_sync_after(l) : CUDA_SUCCESS;
}

/* ---- the flight recorder's events ---------------------------------------------------- */

void atl_faultrep_graph_inst_post(const struct atl_graph_inst *g, CUresult r)
{
    if (r == CUDA_SUCCESS)
        atl_flight_note_graph(g->exec, g->graph);
}

void atl_faultrep_sync_post(const struct atl_sync *s, CUresult r)
{
    if (r == CUDA_SUCCESS)
        atl_flight_good_sync(s->kind, s->stream, s->launches_before);
}
