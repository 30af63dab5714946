/*
 * The flight recorder (see flight.h, ring.h and docs/sync.md).
 *
 * Why: an asynchronous fault surfaces at the next synchronisation, often
 * hundreds of launches after the kernel that caused it; the last few
 * launches name the wrong kernel. Every launch since the last good sync is
 * a suspect, so the ring keeps thousands of compact records (64 bytes each)
 * and the report counts them by kernel, the rarest first: the culprit of a
 * real program is usually a kernel launched once or twice among many
 * launches of healthy ones.
 *
 * The arguments of the rare suspects come from the cold path: a kernel's
 * first launch in each of the recorder's epochs (a new one at a good sync,
 * spaced as ring.h says) goes through atl_ring_first, which copies its
 * parameter bytes into the kernel's record with the launch's number. A
 * kernel launched once since the last good sync (the rare suspect the
 * report is about) mostly has exactly that launch's bytes kept; a kernel
 * launched thousands of times pays the cold path once per epoch, never per
 * launch, and the launch path stays a table probe, one compare and the
 * ring stores.
 */
#include "flight.h"

#include "capture.h"
#include "driver.h"
#include "dsk.h"
#include "hint.h"
#include "kernels.h"
#include "ledger.h"
#include "log.h"
#include "ring.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the cold half of the launch path --------------------------------------- */

#define ARGS_MAX ATL_KREC_ARGS

/* Copies the launch's parameter bytes into the kernel's record: through the
 * driver's layout from kernelParams, or the packed `extra` buffer. One
 * writer at a time (a try-lock: a thread that finds another copying this
 * kernel's first launch of the epoch leaves it to it); a report reads the
 * bytes after the epoch they are from is published. */
static void args_keep(struct atl_krec *r, void **params, void **extra, uint64_t epoch, uint64_t seq)
{
    if (__atomic_load_n(&r->args_epoch, __ATOMIC_ACQUIRE) == epoch ||
        __atomic_exchange_n(&r->args_busy, 1, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&r->args_epoch, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&r->args_seq, 0, __ATOMIC_RELEASE);
    unsigned len = 0;
    if (params && r->nparams) {
        for (unsigned i = 0; i < r->nparams; i++) {
            if (!params[i] || r->off[i] >= ARGS_MAX)
                break;
            unsigned n = r->size[i] < ARGS_MAX - r->off[i] ? r->size[i] : ARGS_MAX - r->off[i];
            /* pointers and scalars without a call to memcpy: the cold path is
             * paid once per kernel and epoch (ring.h), about a launch in 1,024 */
            if (n == 8)
                memcpy(r->args + r->off[i], params[i], 8);
            else if (n == 4)
                memcpy(r->args + r->off[i], params[i], 4);
            else
                memcpy(r->args + r->off[i], params[i], n);
            if (r->off[i] + n > len)
                len = r->off[i] + n;
        }
    } else if (extra) {
        /* the light path has no event: the one reading of `extra` (events.h) */
        size_t size;
        const void *buf = atl_launch_packed(extra, &size);
        if (buf) {
            len = size < ARGS_MAX ? (unsigned)size : ARGS_MAX;
            memcpy(r->args, buf, len);
        }
    }
    r->args_len = len;
    if (len) {
        __atomic_store_n(&r->args_seq, seq, __ATOMIC_RELEASE);
        __atomic_store_n(&r->args_epoch, epoch, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&r->args_busy, 0, __ATOMIC_RELEASE);
}

/* The cold paths' budget (ring.h), in launches: each launch earns one,
 * each cold path costs ATL_FLIGHT_COLD_SPACING, and a good sync starts a new
 * epoch only while the budget is above zero. It starts full and holds at
 * most ATL_FLIGHT_COLD_BURST cold paths: a short program (or the first
 * thousands of launches of a long one) keeps the arguments of every first
 * launch after a good sync, and a long one pays at most one cold path per
 * ATL_FLIGHT_COLD_SPACING launches, whatever its syncs. Under marks_lock,
 * but for the count of cold paths. */
static int64_t budget = (int64_t)ATL_FLIGHT_COLD_SPACING * ATL_FLIGHT_COLD_BURST;
static uint64_t budget_launch, budget_colds, colds;

struct atl_krec *atl_ring_first(void *f, void **params, void **extra, uint64_t seq)
{
    __atomic_add_fetch(&colds, 1, __ATOMIC_RELAXED);
    atl_krec_pin();
    struct atl_krec *r = atl_krec_get(f);
    if (r) {
        uint64_t epoch = __atomic_load_n(&atl_fl.epoch, __ATOMIC_RELAXED);
        args_keep(r, params, extra, epoch, seq);
        /* the entry, to mark f seen in this epoch (taken out meanwhile: none;
         * the next launch comes here again) */
        struct atl_ktab_ent *e = atl_ktab_find(__atomic_load_n(&atl_fl.ktab, __ATOMIC_ACQUIRE), f);
        if (e)
            __atomic_store_n(&e->epoch, epoch, __ATOMIC_RELAXED);
    }                 /* else out of memory: recorded, not named; the next launch tries again */
    atl_krec_unpin(); /* the caller that uses r is pinned itself */
    return r;
}

/* ---- graphs ------------------------------------------------------------------------ */

/* The kernel nodes of the last GRAPHS executable graphs instantiated (the
 * oldest is replaced: a program that instantiates thousands of graphs keeps
 * the recent ones), read at instantiation: programs often destroy the graph
 * once it is instantiated, and after a fault the driver stops answering. */
#define GRAPHS 256
#define GRAPH_NODES 32
struct graph_node {
    void *func;
    unsigned grid[3], block[3];
};
struct graph_info {
    CUgraphExec exec;
    unsigned nodes, kernels; /* all nodes; kernel nodes (the first GRAPH_NODES kept) */
    struct graph_node k[GRAPH_NODES];
};
static struct graph_info *graphs[GRAPHS];
static unsigned graphs_next;
static pthread_mutex_t graphs_lock = PTHREAD_MUTEX_INITIALIZER;

void atl_flight_note_graph(CUgraphExec exec, CUgraph graph)
{
    size_t n = 0;
    if (!exec || !atl_drv.cuGraphGetNodes || !atl_drv.cuGraphNodeGetType ||
        !atl_drv.cuGraphKernelNodeGetParams_v2 ||
        atl_drv.cuGraphGetNodes(graph, NULL, &n) != CUDA_SUCCESS)
        return;
    CUgraphNode *nodes = calloc(n ? n : 1, sizeof *nodes);
    struct graph_info *gi = calloc(1, sizeof *gi);
    if (!nodes || !gi || atl_drv.cuGraphGetNodes(graph, nodes, &n) != CUDA_SUCCESS) {
        free(nodes), free(gi);
        return;
    }
    gi->exec = exec;
    gi->nodes = (unsigned)n;
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType t;
        CUDA_KERNEL_NODE_PARAMS_v2 p;
        if (atl_drv.cuGraphNodeGetType(nodes[i], &t) != CUDA_SUCCESS ||
            t != CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        memset(&p, 0, sizeof p);
        if (atl_drv.cuGraphKernelNodeGetParams_v2(nodes[i], &p) != CUDA_SUCCESS)
            continue;
        void *f = p.func ? (void *)p.func : (void *)p.kern;
        atl_kernel_mangled(f); /* named now, while the driver answers */
        if (gi->kernels < GRAPH_NODES)
            gi->k[gi->kernels] = (struct graph_node){
                f, {p.gridDimX, p.gridDimY, p.gridDimZ}, {p.blockDimX, p.blockDimY, p.blockDimZ}};
        gi->kernels++;
    }
    free(nodes);
    pthread_mutex_lock(&graphs_lock);
    unsigned slot = GRAPHS;
    for (unsigned i = 0; i < GRAPHS && slot == GRAPHS; i++)
        if (graphs[i] && graphs[i]->exec == exec)
            slot = i; /* the address of a destroyed exec, reused */
    if (slot == GRAPHS)
        slot = graphs_next++ % GRAPHS;
    struct graph_info *old = graphs[slot];
    graphs[slot] = gi;
    pthread_mutex_unlock(&graphs_lock);
    free(old);
}

#define GRAPH_NODES_SHOWN 16

int atl_flight_graph_nodes(const char *tag, CUgraphExec exec)
{
    pthread_mutex_lock(&graphs_lock);
    const struct graph_info *gi = NULL;
    for (unsigned i = 0; i < GRAPHS && !gi; i++)
        if (graphs[i] && graphs[i]->exec == exec)
            gi = graphs[i];
    if (!gi) {
        pthread_mutex_unlock(&graphs_lock);
        return 0;
    }
    atl_log(ATL_ERROR,
            "%s:     graph %p: %u kernel nodes (of %u nodes), from its instantiation:", tag,
            (void *)exec, gi->kernels, gi->nodes);
    for (unsigned i = 0; i < gi->kernels && i < GRAPH_NODES && i < GRAPH_NODES_SHOWN; i++) {
        char name[256];
        atl_kernel_name(gi->k[i].func, name, sizeof name);
        atl_log(ATL_ERROR, "%s:       node kernel=%s grid=(%u,%u,%u) block=(%u,%u,%u)", tag, name,
                gi->k[i].grid[0], gi->k[i].grid[1], gi->k[i].grid[2], gi->k[i].block[0],
                gi->k[i].block[1], gi->k[i].block[2]);
    }
    if (gi->kernels > GRAPH_NODES_SHOWN)
        atl_log(ATL_ERROR, "%s:       and %u more kernel nodes", tag,
                gi->kernels - GRAPH_NODES_SHOWN);
    pthread_mutex_unlock(&graphs_lock);
    return 1;
}

/* ---- good syncs ---------------------------------------------------------------- */

/* Launches numbered up to good_all completed without a fault (a context
 * synchronisation returned success after them); per stream, the same for
 * the last streams synchronised. A stream sync clears only its own stream:
 * a kernel on another stream may still be running, and fault later. */
#define MARKS 64
static uint64_t good_all;
static struct {
    CUstream stream;
    uint64_t upto;
} marks[MARKS];
static unsigned marks_next;
static pthread_mutex_t marks_lock = PTHREAD_MUTEX_INITIALIZER;

void atl_flight_good_sync(enum atl_sync_kind kind, CUstream stream, uint64_t upto)
{
    pthread_mutex_lock(&marks_lock);
    /* the launches made before the sync began pay: upto, not a second load
     * of the launch counter (a sync's cost is paid by every sync) */
    uint64_t now = upto > budget_launch ? upto : budget_launch;
    uint64_t c = __atomic_load_n(&colds, __ATOMIC_RELAXED);
    budget += (int64_t)(now - budget_launch) -
              (int64_t)ATL_FLIGHT_COLD_SPACING * (int64_t)(c - budget_colds);
    if (budget > (int64_t)ATL_FLIGHT_COLD_SPACING * ATL_FLIGHT_COLD_BURST)
        budget = (int64_t)ATL_FLIGHT_COLD_SPACING * ATL_FLIGHT_COLD_BURST;
    budget_launch = now, budget_colds = c;
    if (budget > 0)
        __atomic_add_fetch(&atl_fl.epoch, 1, __ATOMIC_RELAXED);
    if (kind == ATL_SYNC_CTX) {
        if (upto > good_all)
            __atomic_store_n(&good_all, upto, __ATOMIC_RELAXED);
    } else if (kind == ATL_SYNC_STREAM) {
        unsigned i = 0;
        while (i < MARKS && (marks[i].stream != stream || !marks[i].upto))
            i++;
        if (i == MARKS)
            i = marks_next++ % MARKS; /* the oldest-written: forgetting costs suspects, never one */
        marks[i].stream = stream;
        if (upto > marks[i].upto)
            marks[i].upto = upto;
    }
    pthread_mutex_unlock(&marks_lock);
}

static uint64_t stream_mark(CUstream s)
{
    for (unsigned i = 0; i < MARKS; i++)
        if (marks[i].upto && marks[i].stream == s)
            return marks[i].upto;
    return 0;
}

/* ---- the report ---------------------------------------------------------------------- */

struct group {
    void *obj; /* NULL: unused */
    int graph;
    uint64_t n, first, last;
    struct atl_ring_ent newest;
};

static struct group *group_of(struct group *g, size_t cap, void *obj, int graph)
{
    uint64_t h = ((uint64_t)(uintptr_t)obj * ATL_KTAB_MUL) >> 20;
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!g[i].obj || (g[i].obj == obj && g[i].graph == graph)) {
            g[i].obj = obj, g[i].graph = graph;
            return &g[i];
        }
}

static int by_rarity(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    if (!x->obj || !y->obj)
        return !x->obj - !y->obj; /* unused slots last */
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    return x->last < y->last ? 1 : x->last > y->last ? -1 : 0; /* newer first */
}

static const char *short_name(const struct group *g, char *buf, size_t len)
{
    if (g->graph) {
        snprintf(buf, len, "graph@%p", g->obj);
        return buf;
    }
    const char *m = atl_kernel_mangled(g->obj);
    if (!m) {
        snprintf(buf, len, "kernel@%p", g->obj);
        return buf;
    }
    size_t n;
    const char *id = atl_dsk_ident(m, &n);
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), id);
    return buf;
}

/* Appends to a line buffer, keeping it terminated when full. */
static void cat(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void cat(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    *used += n > 0 ? (size_t)n : 0;
    if (*used >= len)
        *used = len;
}

/* The kept arguments of a rare suspect's kernel (the report is pinned), and
 * which of its launches they are of: kept at the first launch of each
 * epoch (ring.h), they may be older than every suspect launch, and then are
 * not shown as theirs. */
static void print_args(const char *tag, const struct group *g)
{
    const struct atl_krec *r = atl_krec_find(g->obj);
    uint64_t seq = r ? __atomic_load_n(&r->args_seq, __ATOMIC_ACQUIRE) : 0;
    if (!seq || !r->args_len || __atomic_load_n(&r->args_busy, __ATOMIC_ACQUIRE) || seq > g->last)
        return;
    if (seq < g->first) {
        atl_log(ATL_ERROR,
                "%s:     args: not kept for these launches (the newest kept, of launch=%llu, are "
                "older: the flight recorder keeps a kernel's arguments at its first launch "
                "after a good sync, within a budget of one such copy per %u launches)",
                tag, (unsigned long long)seq, ATL_FLIGHT_COLD_SPACING);
        return;
    }
    char line[1024];
    size_t used = 0;
    unsigned n = r->nparams ? r->nparams : 1;
    for (unsigned i = 0; i < n; i++) {
        unsigned off = r->nparams ? r->off[i] : 0;
        unsigned size = r->nparams ? r->size[i] : r->args_len;
        if (off >= r->args_len)
            break;
        if (size > r->args_len - off)
            size = r->args_len - off;
        cat(line, sizeof line, &used, " p%u=", i);
        if (size == 8) {
            uint64_t v;
            memcpy(&v, r->args + off, 8);
            struct atl_alloc_rec a;
            if (atl_ledger_on && v && atl_ledger_find((CUdeviceptr)v, &a))
                cat(line, sizeof line, &used, "alloc#%llu+0x%llx(of %zu)",
                    (unsigned long long)a.seq, (unsigned long long)(v - a.ptr), a.bytes);
            else
                cat(line, sizeof line, &used, "0x%llx", (unsigned long long)v);
        } else if (size == 4) {
            uint32_t v;
            memcpy(&v, r->args + off, 4);
            cat(line, sizeof line, &used, "%u", v);
        } else {
            cat(line, sizeof line, &used, "0x");
            for (unsigned j = 0; j < size && j < 32; j++)
                cat(line, sizeof line, &used, "%02x", r->args[off + j]);
            if (size > 32)
                cat(line, sizeof line, &used, "...");
        }
    }
    char which[96];
    if (seq == g->first)
        snprintf(which, sizeof which, "its first launch since the last good sync");
    else
        snprintf(which, sizeof which, "launch=%llu, a later one of these", (unsigned long long)seq);
    char rz[40], lk[40];
    if (atl_ledger_on)
        atl_log(ATL_ERROR, "%s:     args (%s):%s", tag, which, line);
    else
        atl_log(ATL_ERROR,
                "%s:     args (%s):%s (pointers resolve to allocations with the ledger on: %s or "
                "%s)",
                tag, which, line, atl_hint_name("ATLAS_REDZONE", rz, sizeof rz),
                atl_hint_name("ATLAS_LEAKS", lk, sizeof lk));
}

#define RING_SHOWN 16 /* the newest launches, listed one by one */
#define RARE 3        /* launched at most this often: a rare suspect */
#define RARE_SHOWN 8
#define LIST_SHOWN 12

/* One launch, or (from < e->seq) the run of identical launches from..e->seq. */
static void print_launches(const char *tag, const struct atl_ring_ent *e, const char *lead,
                           uint64_t from)
{
    const char *via = atl_hook_names[e->hook & ~ATL_RING_GRAPH];
    char seq[48];
    if (from && from < e->seq)
        snprintf(seq, sizeof seq, "%llu..%llu", (unsigned long long)from,
                 (unsigned long long)e->seq);
    else
        snprintf(seq, sizeof seq, "%llu", (unsigned long long)e->seq);
    if (e->hook & ATL_RING_GRAPH) {
        atl_log(ATL_ERROR, "%s:%slaunch=%s graph=%p stream=%p via=%s", tag, lead, seq, e->obj,
                (void *)e->stream, via);
        return;
    }
    char name[256];
    atl_kernel_name(e->obj, name, sizeof name);
    atl_log(ATL_ERROR,
            "%s:%slaunch=%s kernel=%s grid=(%u,%u,%u) block=(%u,%u,%u) shmem=%u stream=%p via=%s",
            tag, lead, seq, name, e->grid[0], e->grid[1], e->grid[2], e->block[0], e->block[1],
            e->block[2], e->shmem, (void *)e->stream, via);
}

static void print_launch(const char *tag, const struct atl_ring_ent *e, const char *lead)
{
    print_launches(tag, e, lead, 0);
}

/* The suspects, counted by kernel and by stream (under marks_lock). */
struct tally {
    struct group *g, *st;
    size_t cap;
    uint64_t suspects, cleared, ncaptured;
};

static void tally_launch(const struct atl_ring_ent *e, void *ctx)
{
    struct tally *t = ctx;
    uint64_t s = e->seq;
    if (stream_mark(e->stream) >= s) {
        t->cleared++;
        return;
    }
    /* a launch into a capturing stream did not run: a graph launch runs it */
    if (!(e->hook & ATL_RING_GRAPH) && atl_capture_held(atl_own_stream(e->stream, e->hook), s)) {
        t->ncaptured++;
        return;
    }
    t->suspects++;
    struct group *k = group_of(t->g, t->cap, e->obj, !!(e->hook & ATL_RING_GRAPH));
    if (!k->n++)
        k->first = s;
    k->last = s;
    k->newest = *e;
    struct group *sg = group_of(t->st, t->cap, e->stream ? (void *)e->stream : (void *)-1, 0);
    sg->n++;
}

/* The newest launches, a line each, but a run of identical ones (the same
 * kernel, grid, block, shared memory, stream and entry point: a loop) in one
 * line with its count: sixteen launches of one kernel are one line. */
struct run_of {
    const char *tag;
    struct atl_ring_ent first, last;
    uint64_t n;
};

static int same_launch(const struct atl_ring_ent *a, const struct atl_ring_ent *b)
{
    return a->obj == b->obj && a->hook == b->hook && a->stream == b->stream &&
           a->shmem == b->shmem && !memcmp(a->grid, b->grid, sizeof a->grid) &&
           !memcmp(a->block, b->block, sizeof a->block);
}

static void run_flush(struct run_of *r)
{
    if (!r->n)
        return;
    if (r->n == 1) {
        print_launch(r->tag, &r->first, "   ");
    } else {
        char lead[48];
        snprintf(lead, sizeof lead, "   x%llu ", (unsigned long long)r->n);
        print_launches(r->tag, &r->last, lead, r->first.seq);
    }
    r->n = 0;
}

static void list_launch(const struct atl_ring_ent *e, void *ctx)
{
    struct run_of *r = ctx;
    if (r->n && !same_launch(&r->last, e))
        run_flush(r);
    if (!r->n++)
        r->first = *e;
    r->last = *e;
}

static void report_pinned(const char *tag);

void atl_flight_report(const char *tag)
{
    /* the suspects' records stay allocated while the report reads them */
    atl_krec_pin();
    report_pinned(tag);
    atl_krec_unpin();
}

static void report_pinned(const char *tag)
{
    uint64_t last = atl_fault_last_launch();
    if (!last) {
        char set[96], why[160] = "";
        if (!atl_fault_ring_on())
            snprintf(why, sizeof why, " (%s: launches are not recorded)",
                     atl_hint_setting("ATLAS_LAUNCH_RING", "0", set, sizeof set));
        atl_log(ATL_ERROR, "%s: no kernel launch was seen before it%s", tag, why);
        return;
    }
    uint64_t size = atl_fault_ring_slots();
    uint64_t base = __atomic_load_n(&good_all, __ATOMIC_RELAXED);

    /* count the suspects still in the ring (at most its size), by kernel and by stream */
    size_t cap = 64;
    while (cap < 2 * (last - base < size ? last - base : size))
        cap <<= 1;
    struct group *g = calloc(cap, sizeof *g), *st = calloc(cap, sizeof *st);
    struct tally t = {.g = g, .st = st, .cap = cap};
    uint64_t lost = 0;
    pthread_mutex_lock(&marks_lock); /* the stream marks */
    if (g && st)
        lost = atl_fault_launches_since(base, last, 0, tally_launch, &t);
    else /* out of memory: how many there were, not which */
        lost = last - base < size ? 0 : last - base - size;
    pthread_mutex_unlock(&marks_lock);
    uint64_t suspects = lost + t.suspects, cleared = t.cleared, ncaptured = t.ncaptured;
    char since[128];
    if (base)
        snprintf(since, sizeof since,
                 "since the last good sync (a context synchronisation after launch %llu)",
                 (unsigned long long)base);
    else
        snprintf(since, sizeof since,
                 "since the program started (no context synchronisation succeeded)");
    if (g && st) {
        qsort(g, cap, sizeof *g, by_rarity);
        qsort(st, cap, sizeof *st, by_rarity);
        char line[2048];
        size_t used = 0;
        unsigned kinds = 0;
        for (size_t i = 0; i < cap && g[i].obj; i++)
            kinds++;
        for (unsigned i = 0; i < kinds && i < LIST_SHOWN; i++) {
            char nb[128];
            cat(line, sizeof line, &used, "%s%s x%llu", i ? ", " : "",
                short_name(&g[i], nb, sizeof nb), (unsigned long long)g[i].n);
        }
        if (kinds > LIST_SHOWN)
            cat(line, sizeof line, &used, ", and %u more kernels", kinds - LIST_SHOWN);
        atl_log(ATL_ERROR, "%s: %llu suspect launches %s; by kernel, rarest first: %s", tag,
                (unsigned long long)suspects, since, kinds ? line : "(none in the history)");
        char set[96], ring[32];
        snprintf(ring, sizeof ring, "%llu", (unsigned long long)size * 4);
        if (lost)
            atl_log(ATL_ERROR,
                    "%s: the history wrapped: %llu older suspect launches were lost (not counted "
                    "above by kernel; %s keeps the newest %llu%s)",
                    tag, (unsigned long long)lost,
                    atl_hint_setting("ATLAS_LAUNCH_RING", ring, set, sizeof set),
                    (unsigned long long)size,
                    cleared ? "; stream syncs may have cleared some" : "");
        if (cleared)
            atl_log(ATL_ERROR,
                    "%s: %llu later launches are not suspects: their stream synchronised "
                    "successfully after them",
                    tag, (unsigned long long)cleared);
        if (ncaptured)
            atl_log(ATL_ERROR,
                    "%s: %llu launches into capturing streams are not suspects: they "
                    "did not run (graph launches run them)",
                    tag, (unsigned long long)ncaptured);
        used = 0;
        for (size_t i = 0; i < cap && st[i].obj; i++)
            cat(line, sizeof line, &used, "%s%p (%llu)", i ? ", " : "",
                st[i].obj == (void *)-1 ? NULL : st[i].obj, (unsigned long long)st[i].n);
        if (used)
            atl_log(ATL_ERROR, "%s: streams of the suspects (launches): %s", tag, line);
        /* the rare ones, one by one, with their arguments */
        unsigned shown = 0;
        for (unsigned i = 0; i < kinds && shown < RARE_SHOWN && g[i].n <= RARE; i++, shown++) {
            char lead[64];
            snprintf(lead, sizeof lead,
                     "   rare suspect x%llu, newest: ", (unsigned long long)g[i].n);
            print_launch(tag, &g[i].newest, lead);
            if (!g[i].graph)
                print_args(tag, &g[i]);
            else if (!atl_flight_graph_nodes(tag, g[i].obj))
                atl_log(ATL_ERROR,
                        "%s:     (its kernel nodes are unknown: instantiated before "
                        "atlastrace was loaded, or too long ago)",
                        tag);
        }
        /* graphs launched often are suspects too: a fault in one is inside its nodes */
        for (unsigned i = 0, n = 0; i < kinds && n < RARE_SHOWN; i++) {
            if (!g[i].graph || g[i].n <= RARE)
                continue;
            n++;
            char lead[64];
            snprintf(lead, sizeof lead,
                     "   graph suspect x%llu, newest: ", (unsigned long long)g[i].n);
            print_launch(tag, &g[i].newest, lead);
            atl_flight_graph_nodes(tag, g[i].obj);
        }
        /* the hint: debug sync on the rare kernels only */
        used = 0;
        unsigned named = 0;
        for (unsigned i = 0; i < kinds && named < RARE_SHOWN && g[i].n <= RARE; i++) {
            if (g[i].graph)
                continue;
            char nb[128];
            short_name(&g[i], nb, sizeof nb);
            if (!atl_kernel_mangled(g[i].obj))
                continue; /* no name to match */
            cat(line, sizeof line, &used, "%s%s", named++ ? "," : "", nb);
        }
        if (named) {
            char *cmd =
                atl_hint_command((struct atl_hint_set[]){{"ATLAS_DEBUG_SYNC_KERNELS", line}}, 1);
            char all[96];
            atl_hint_setting("ATLAS_DEBUG_SYNC_KERNELS", "1", all, sizeof all);
            atl_log(ATL_ERROR,
                    "%s: re-run with debug sync on the rare suspects only (near full speed; the "
                    "faulting launch is then named; %s syncs every launch): %s",
                    tag, all, cmd ? cmd : "(the command line could not be read)");
            free(cmd);
        } else if (kinds && g[0].graph) {
            /* only graphs are rare: any setting synchronises each graph launch as a whole */
            char *cmd =
                atl_hint_command((struct atl_hint_set[]){{"ATLAS_DEBUG_SYNC_KERNELS", "1"}}, 1);
            atl_log(ATL_ERROR,
                    "%s: re-run with debug sync (graph launches are synchronised as a whole, "
                    "then their kernel nodes listed): %s",
                    tag, cmd ? cmd : "(the command line could not be read)");
            free(cmd);
        }
    } else {
        atl_log(ATL_ERROR, "%s: %llu suspect launches %s", tag, (unsigned long long)suspects,
                since);
    }
    free(g);
    free(st);

    uint64_t shown = last < RING_SHOWN ? last : RING_SHOWN;
    atl_log(ATL_ERROR, "%s: the last %llu launches (all contexts, oldest first):", tag,
            (unsigned long long)shown);
    struct run_of run = {.tag = tag};
    atl_fault_launches_since(last - shown, last, 0, list_launch, &run);
    run_flush(&run);
}
