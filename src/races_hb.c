/*
 * Races between streams (ATLAS_RACES): happens-before (src/races_internal.h says how the
 * detector is cut; docs/races.md).
 *
 * Happens-before is kept as vector clocks. Each stream has a clock of its
 * own, which moves on only when another party takes a snapshot of it (an
 * event record, a host synchronisation, the legacy stream's implicit wait),
 * and a vector of what it is ordered after (vc[t]: stream t's work up to clock vc[t]). An access
 * carries its stream and that stream's clock; a later access on stream u is
 * ordered after it when they share the stream, or when the clock is at most
 * u's vc entry or the host's (what host synchronisations have shown to be
 * done: the host then enqueued everything that follows, on any thread, so
 * the host's knowledge orders every later access; threads synchronising
 * among themselves are not seen, and this errs towards silence).
 *
 * This file owns the streams (their slots, clocks and vectors), what the host knows is done,
 * the events' clocks, the open captures and the host functions' wrappers, and handles the
 * events that order streams: synchronisations, captures, stream operations. The clocks an
 * access is checked against are read through src/races_internal.h's inline functions.
 */
#define _GNU_SOURCE /* syscall */
#include "races_internal.h"

#include "driver.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RC_MAX_STREAMS 4096                /* streams tracked; more are not checked (said once) */
#define RC_EVENT_VC_MAX ((size_t)64 << 20) /* events' clocks, bytes; past it: see ev_snap */
#define RC_LEGACY_KEY 1                    /* the legacy default stream's key (CU_STREAM_LEGACY) */

struct revent {
    int recorded; /* live (not in a capture) */
    int whole;    /* no clock kept (RC_EVENT_VC_MAX): a wait joins all `from` has done then */
    int from;
    uint64_t clock;
    struct vc vc;
    uint32_t site;
    uint64_t cap_id; /* recorded in that capture (0: none) */
};

struct hsrc {
    unsigned char kind;
    uint32_t site;
};

/* The streams' part every op reads (src/races_internal.h), and the rest, this file's own. */
struct atl_rhb atl_rhb;

static struct {
    unsigned nst, capst;
    unsigned *freeslot, nfree;
    struct hsrc *hsrc;
    struct rmap streams, events;
    size_t ev_vc_bytes; /* what the events' clocks hold */
    unsigned refused;   /* streams refused a slot (all taken) */
    struct rcap *caps;
    uint64_t capids;
    int said_streams, said_events;
} hb;

static int vc_fit(struct vc *v, unsigned n)
{
    if (n <= v->n)
        return 0;
    unsigned m = v->n ? v->n : 8;
    while (m < n)
        m *= 2;
    uint64_t *c = realloc(v->c, (size_t)m * sizeof *c);
    if (!c) {
        atl_rc_oom();
        return -1;
    }
    memset(c + v->n, 0, (size_t)(m - v->n) * sizeof *c);
    v->c = c, v->n = m;
    return 0;
}

static void vc_raise(struct vc *v, unsigned i, uint64_t x)
{
    if (x > vc_get(v, i) && vc_fit(v, i + 1) == 0)
        v->c[i] = x;
}

static void vc_join(struct vc *dst, const struct vc *src)
{
    for (unsigned i = 0; i < src->n; i++)
        if (src->c[i] > vc_get(dst, i))
            vc_raise(dst, i, src->c[i]);
}

/* ---- streams ------------------------------------------------------------------ */

static int grow_streams(void)
{
    unsigned cap = hb.capst ? hb.capst * 2 : 16;
    struct rstream *st = realloc(atl_rhb.st, cap * sizeof *st);
    if (!st)
        return -1;
    atl_rhb.st = st;
    struct hsrc *hs = realloc(hb.hsrc, cap * sizeof *hs);
    if (!hs)
        return -1;
    hb.hsrc = hs;
    unsigned *d = realloc(atl_rhb.dirtyl, cap * sizeof *d);
    if (!d)
        return -1;
    atl_rhb.dirtyl = d;
    unsigned *f = realloc(hb.freeslot, cap * sizeof *f);
    if (!f)
        return -1;
    hb.freeslot = f;
    memset(hb.hsrc + hb.capst, 0, (cap - hb.capst) * sizeof *hs);
    hb.capst = cap;
    return 0;
}

static unsigned reclaim_dead_threads(void);

static int slot_new(uintptr_t key, int kind)
{
    unsigned i;
    uint64_t birth = 1;
    struct vc keep = {NULL, 0};
    unsigned char listed = 0; /* still on the legacy stream's list of dirty streams */
    struct rstream old = {0};
    /* all slots taken: those of threads that ended (their per-thread default streams) are
     * given back first, looked for at most once in 256 refusals */
    if (!hb.nfree && hb.nst >= RC_MAX_STREAMS && hb.refused++ % 256 == 0)
        reclaim_dead_threads();
    if (hb.nfree) {
        i = hb.freeslot[--hb.nfree];
        old = atl_rhb.st[i];
        birth = atl_rhb.st[i].clock + 1; /* later than anything the old stream's accesses carry */
        listed = atl_rhb.st[i].dirty;
        keep = atl_rhb.st[i].vc;
        if (keep.c)
            memset(keep.c, 0, keep.n * sizeof *keep.c);
    } else {
        if (hb.nst >= RC_MAX_STREAMS) {
            if (!hb.said_streams++)
                atl_log(ATL_WARN,
                        "races: more than %d streams live at once: the accesses of the "
                        "streams past that are not checked",
                        RC_MAX_STREAMS);
            return -1;
        }
        if (hb.nst == hb.capst && grow_streams() != 0) {
            atl_rc_oom();
            return -1;
        }
        i = hb.nst++;
    }
    atl_rhb.st[i] = (struct rstream){.key = key,
                                     .kind = (unsigned char)kind,
                                     .live = 1,
                                     .clock = birth,
                                     .birth = birth,
                                     .dirty = listed,
                                     .vc = keep,
                                     .wait_from = -1,
                                     .old_key = old.key,
                                     .old_birth = old.birth,
                                     .old_tid = old.tid,
                                     .old_kind = old.kind};
    if (kind == RC_PTDS)
        atl_rhb.st[i].tid = (uint32_t)(key >> 2);
    hb.hsrc[i] = (struct hsrc){HS_NONE, 0};
    if (rmap_put(&hb.streams, key, (void *)(uintptr_t)(i + 1)) != 0) {
        atl_rc_oom();
        return -1;
    }
    return (int)i;
}

/* stream_slot's (src/races_internal.h) when its cache does not know the stream: the per-thread
 * default stream, or a stream first seen (not created through a hooked call), asked for its
 * flags. */
int atl_rhb_slot_slow(CUstream s, int hook)
{
    (void)hook;
    uintptr_t key = (uintptr_t)s;
    int kind = RC_BLOCKING;
    if (s == CU_STREAM_PER_THREAD || s == NULL) {
        /* the thread's id, not its pthread_t: a thread started after another
         * ended often gets the same pthread_t, never the same id (until they
         * wrap); handles are aligned, so an odd key is never one */
        key = ((uintptr_t)syscall(SYS_gettid) << 2) | 3;
        kind = RC_PTDS;
    }
    struct rslotc *c = &atl_rhb.slotc[(key >> 4) % RC_SLOTC];
    if (c->key == key)
        return c->slot;
    void *p;
    if (rmap_get(&hb.streams, key, &p)) {
        *c = (struct rslotc){key, (int)(uintptr_t)p - 1};
        return c->slot;
    }
    unsigned flags = 0;
    if (kind == RC_BLOCKING && atl_drv.cuStreamGetFlags &&
        atl_drv.cuStreamGetFlags(s, &flags) == CUDA_SUCCESS && (flags & CU_STREAM_NON_BLOCKING))
        kind = RC_NONBLOCKING;
    return slot_new(key, kind);
}

/* After a snapshot of stream t covers its clock, its later accesses carry
 * a new one, so that the snapshot does not cover them. */
static void tick(unsigned t)
{
    atl_rhb.st[t].clock++;
    atl_rhb.st[t].ver++;
}

/* Everything stream t has done so far (and what it is ordered after) into
 * dst; then its clock moves on. */
void atl_rhb_join_snap(struct vc *dst, unsigned t)
{
    vc_join(dst, &atl_rhb.st[t].vc);
    vc_raise(dst, t, atl_rhb.st[t].clock);
    tick(t);
}

/* ---- what the host knows is done -------------------------------------------- */

static void host_raise(unsigned i, uint64_t c, int kind, uint32_t site)
{
    if (c > vc_get(&atl_rhb.host, i)) {
        vc_raise(&atl_rhb.host, i, c);
        if (i < hb.capst)
            hb.hsrc[i] = (struct hsrc){(unsigned char)kind, site};
    }
}

static void host_learns_vc(const struct vc *v, int kind, uint32_t site)
{
    for (unsigned i = 0; i < v->n; i++)
        host_raise(i, v->c[i], kind, site);
}

void atl_rhb_host_learns_stream(unsigned t, int kind, uint32_t site)
{
    host_learns_vc(&atl_rhb.st[t].vc, kind, site);
    host_raise(t, atl_rhb.st[t].clock, kind, site);
    tick(t);
}

/* A stream gone (destroyed; a thread's default stream, its thread ended): the key may name
 * another stream next; its slot goes to the next stream made, its clock going on. */
static void slot_release(uintptr_t key)
{
    void *v = rmap_del(&hb.streams, (uint64_t)key);
    memset(atl_rhb.slotc, 0, sizeof atl_rhb.slotc);
    if (v) {
        unsigned t = (unsigned)(uintptr_t)v - 1;
        atl_rhb.st[t].live = 0;
        atl_rhb.st[t].cap = NULL;
        atl_rhb.st[t].clock++;
        hb.freeslot[hb.nfree++] = t;
    }
}

static void stream_gone(CUstream s)
{
    slot_release((uintptr_t)s);
}

/* The slots of per-thread default streams whose thread has ended (a signal 0 to it finds no
 * such thread): given back. A program that starts thousands of threads, each using its
 * default stream once, took a slot for each, and past RC_MAX_STREAMS no new stream was
 * checked (issue #48: a plain two-stream race missed after 4,094 threads). */
static unsigned reclaim_dead_threads(void)
{
    unsigned n = 0;
    pid_t pid = getpid();
    int saved = errno; /* the program's */
    for (unsigned t = 0; t < hb.nst; t++) {
        const struct rstream *s = &atl_rhb.st[t];
        if (!s->live || s->kind != RC_PTDS)
            continue;
        if (syscall(SYS_tgkill, pid, (pid_t)s->tid, 0) == 0 || errno != ESRCH)
            continue;
        slot_release(s->key);
        n++;
    }
    errno = saved;
    return n;
}

/* An event's clock, as of its record on stream u: a copy of u's vector clock (one entry per
 * stream slot). 20,000 live events beside 4,000 streams held 791 MB (issue #48): past
 * RC_EVENT_VC_MAX of them, an event keeps no copy (whole), and what waits for it, or syncs
 * on it, is ordered after all that its stream has done by then: more than the record
 * covered, so races hidden, never false ones. Said once. */
static void ev_snap(struct revent *ev, unsigned u)
{
    size_t had = (size_t)ev->vc.n * sizeof *ev->vc.c;
    size_t need =
        (size_t)(atl_rhb.st[u].vc.n > u + 1 ? atl_rhb.st[u].vc.n : u + 1) * sizeof *ev->vc.c;
    if (hb.ev_vc_bytes - had + need > RC_EVENT_VC_MAX) {
        if (!hb.said_events++)
            atl_log(ATL_INFO,
                    "races: the recorded events' clocks hold %zu MiB: events recorded from now "
                    "on order what waits for them after all their stream has done by the wait "
                    "(races behind such a wait may go unreported; none is made up)",
                    RC_EVENT_VC_MAX >> 20);
        free(ev->vc.c);
        ev->vc = (struct vc){NULL, 0};
        ev->whole = 1;
        hb.ev_vc_bytes -= had;
        tick(u); /* what follows the record is after it, as join_snap's tick says */
        return;
    }
    ev->whole = 0;
    if (ev->vc.c)
        memset(ev->vc.c, 0, ev->vc.n * sizeof *ev->vc.c);
    atl_rhb_join_snap(&ev->vc, u);
    hb.ev_vc_bytes = hb.ev_vc_bytes - had + (size_t)ev->vc.n * sizeof *ev->vc.c;
}

/* What an event orders a wait after, into dst: its clock, or (whole) all its stream has done
 * by now. */
static void ev_join(struct vc *dst, const struct revent *ev)
{
    if (!ev->whole) {
        vc_join(dst, &ev->vc);
        return;
    }
    if (ev->from >= 0 && (unsigned)ev->from < hb.nst)
        atl_rhb_join_snap(dst, (unsigned)ev->from);
}

/* The host learns an event's work done (a sync on it, a query that succeeded): its clock, or
 * (whole) all its stream has done by now. */
static void host_learns_event(const struct revent *ev, int kind, uint32_t site)
{
    if (ev->whole && ev->from >= 0)
        atl_rhb_host_learns_stream((unsigned)ev->from, kind, site);
    else
        host_learns_vc(&ev->vc, kind, site);
}

static inline struct revent *event_get(CUevent e, int make)
{
    void *p = NULL;
    if (rmap_get(&hb.events, (uint64_t)(uintptr_t)e, &p) || !make)
        return p;
    struct revent *ev = calloc(1, sizeof *ev);
    if (!ev || rmap_put(&hb.events, (uint64_t)(uintptr_t)e, ev) != 0) {
        free(ev);
        atl_rc_oom();
        return NULL;
    }
    ev->from = -1;
    return ev;
}

static int capture_active(uint64_t id)
{
    for (struct rcap *c = hb.caps; c; c = c->next)
        if (c->id == id)
            return 1;
    return 0;
}

static struct rcap *capture_of(uint64_t id)
{
    for (struct rcap *c = hb.caps; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

static void stream_desc(unsigned t, struct rsd *d)
{
    d->key = atl_rhb.st[t].key, d->kind = atl_rhb.st[t].kind, d->tid = atl_rhb.st[t].tid;
    d->gone = !atl_rhb.st[t].live;
}

void atl_rhb_describe(struct rpend *p, unsigned u)
{
    const struct racc *e = &p->e;
    stream_desc(e->stream, &p->se);
    if (e->clock < atl_rhb.st[e->stream].birth) {
        /* an access of the stream the slot held before (destroyed, or its thread ended): that
         * stream, not the one the slot holds now (which may be the 2nd's own: the fix would
         * tell it to wait for itself) */
        const struct rstream *t = &atl_rhb.st[e->stream];
        int prev = e->clock >= t->old_birth && t->old_birth;
        p->se.key = prev ? t->old_key : 0;
        p->se.kind = prev ? t->old_kind : RC_BLOCKING;
        p->se.tid = prev ? t->old_tid : 0;
        p->se.gone = 1;
    }
    stream_desc(u, &p->sx);
    p->host_knew = vc_get(&atl_rhb.host, e->stream);
    p->host_kind = hb.hsrc[e->stream].kind;
    atl_rsite_copy(hb.hsrc[e->stream].site, &p->site_host);
    p->wait_ev = atl_rhb.st[u].wait_ev;
    p->wait_from = atl_rhb.st[u].wait_from;
    p->wait_clock = atl_rhb.st[u].wait_clock;
    atl_rsite_copy(atl_rhb.st[u].wait_site, &p->site_wait);
    if (p->wait_from >= 0)
        stream_desc((unsigned)p->wait_from, &p->swf);
}

unsigned atl_rhb_streams(void)
{
    return hb.nst;
}

int atl_rhb_init(void)
{
    return slot_new(RC_LEGACY_KEY, RC_LEGACY);
}

void atl_races_sync(const struct atl_sync *s, CUresult r)
{
    if (r != CUDA_SUCCESS)
        return;
    struct rsite where;
    site_pre(&where, s->caller);
    if (lock() != 0)
        return;
    uint32_t site = atl_rsite_get(&where);
    if (s->kind == ATL_SYNC_CTX) {
        for (unsigned t = 0; t < hb.nst; t++) {
            host_raise(t, atl_rhb.st[t].clock, HS_CTX, site);
            tick(t);
        }
    } else if (s->kind == ATL_SYNC_STREAM) {
        int u = stream_slot(s->stream, s->hook);
        if (u >= 0)
            atl_rhb_host_learns_stream((unsigned)u, HS_STREAM, site);
    } else {
        struct revent *ev = event_get(s->event, 0);
        if (ev && ev->recorded)
            host_learns_event(ev, HS_EVENT, site);
    }
    pthread_mutex_unlock(&atl_rc.mu);
}

void atl_races_capture(const struct atl_capture *c, CUresult r)
{
    if (lock() != 0)
        return;
    int u = stream_slot(c->stream, c->hook);
    if (u < 0) {
        pthread_mutex_unlock(&atl_rc.mu);
        return;
    }
    if (c->begin) {
        struct rcap *cap = r == CUDA_SUCCESS ? calloc(1, sizeof *cap) : NULL;
        if (cap && (cap->g = atl_racc_graph_new()) != NULL) {
            cap->id = ++hb.capids;
            cap->next = hb.caps;
            hb.caps = cap;
            atl_rhb.st[u].cap = cap;
        } else {
            free(cap);
        }
    } else if (atl_rhb.st[u].cap) {
        /* the capture ends, whatever the driver answers: every stream in it leaves */
        struct rcap *cap = atl_rhb.st[u].cap;
        for (unsigned t = 0; t < hb.nst; t++)
            if (atl_rhb.st[t].cap == cap)
                atl_rhb.st[t].cap = NULL;
        for (struct rcap **pp = &hb.caps; *pp; pp = &(*pp)->next)
            if (*pp == cap) {
                *pp = cap->next;
                break;
            }
        if (r == CUDA_SUCCESS && c->graph)
            atl_racc_graph_keep(c->graph, cap->g);
        else
            atl_racc_graph_unref(cap->g);
        free(cap);
    }
    pthread_mutex_unlock(&atl_rc.mu);
}

/* ---- host functions and callbacks -------------------------------------------------- */

/* The program's function with what the host learns when it runs: the
 * stream's work up to it is done. */
struct rhostfn {
    CUhostFn fn;
    CUstreamCallback cb;
    void *data;
    struct vc vc;
    uint32_t site;
};

static void host_fn_learn(struct rhostfn *h, int kind)
{
    pthread_mutex_lock(&atl_rc.mu);
    if (!atl_rc.dead)
        host_learns_vc(&h->vc, kind, h->site);
    pthread_mutex_unlock(&atl_rc.mu);
}

static void CUDA_CB host_fn_run(void *p)
{
    struct rhostfn *h = p;
    host_fn_learn(h, HS_HOSTFN);
    CUhostFn fn = h->fn;
    void *data = h->data;
    free(h->vc.c);
    free(h);
    fn(data);
}

static void CUDA_CB host_cb_run(CUstream s, CUresult status, void *p)
{
    struct rhostfn *h = p;
    if (status == CUDA_SUCCESS)
        host_fn_learn(h, HS_CALLBACK);
    CUstreamCallback cb = h->cb;
    void *data = h->data;
    free(h->vc.c);
    free(h);
    cb(s, status, data);
}

void atl_races_stream_pre(struct atl_stream_op *s)
{
    if ((s->kind != ATL_SOP_HOST_FN || !s->fn) && (s->kind != ATL_SOP_CALLBACK || !s->cb))
        return;
    struct rsite where;
    site_pre(&where, s->caller);
    if (lock() != 0)
        return;
    int u = stream_slot(s->stream, s->hook);
    struct rhostfn *h = NULL;
    /* a captured host node runs at every replay: left alone */
    if (u >= 0 && !atl_rhb.st[u].cap && (h = calloc(1, sizeof *h)) != NULL) {
        touch((unsigned)u);
        h->fn = s->fn, h->cb = s->cb, h->data = s->data;
        h->site = atl_rsite_get(&where);
        atl_rhb_join_snap(&h->vc, (unsigned)u);
        if (atl_rc.dead) {
            free(h->vc.c);
            free(h);
            h = NULL;
        }
    }
    pthread_mutex_unlock(&atl_rc.mu);
    if (!h)
        return;
    if (s->kind == ATL_SOP_HOST_FN)
        s->fn = host_fn_run;
    else
        s->cb = host_cb_run;
    s->data = h;
}

void atl_races_stream_post(const struct atl_stream_op *s, CUresult r)
{
    if ((s->kind == ATL_SOP_HOST_FN && s->fn == host_fn_run) ||
        (s->kind == ATL_SOP_CALLBACK && s->cb == host_cb_run)) {
        if (r != CUDA_SUCCESS) { /* never called: ours to free */
            struct rhostfn *h = s->data;
            free(h->vc.c);
            free(h);
        }
        return;
    }
    if (s->kind == ATL_SOP_HOST_FN || s->kind == ATL_SOP_CALLBACK || r != CUDA_SUCCESS)
        return;
    struct rsite where = {.unwind = 1};
    if (s->kind == ATL_SOP_RECORD)
        site_pre(&where, s->caller); /* named in reports as where the event was recorded */
    if (lock() != 0)
        return;
    switch (s->kind) {
    case ATL_SOP_CREATE:
        if (s->pstream && *s->pstream) {
            /* a handle still known: its stream was destroyed through a path
             * not seen; this is another stream */
            stream_gone(*s->pstream);
            slot_new((uintptr_t)*s->pstream,
                     (s->flags & CU_STREAM_NON_BLOCKING) ? RC_NONBLOCKING : RC_BLOCKING);
        }
        break;
    case ATL_SOP_DESTROY:
        stream_gone(s->stream);
        break;
    case ATL_SOP_RECORD: {
        int u = stream_slot(s->stream, s->hook);
        struct revent *ev = u >= 0 ? event_get(s->event, 1) : NULL;
        if (!ev)
            break;
        if (atl_rhb.st[u].cap) { /* a node of the capture: a wait on it joins the capture */
            ev->cap_id = atl_rhb.st[u].cap->id;
            break;
        }
        touch((unsigned)u);
        ev->cap_id = 0;
        ev->recorded = 1;
        ev->from = u;
        ev->clock = atl_rhb.st[u].clock;
        ev->site = atl_rsite_get(&where);
        ev_snap(ev, (unsigned)u);
        break;
    }
    case ATL_SOP_WAIT: {
        int u = stream_slot(s->stream, s->hook);
        struct revent *ev = event_get(s->event, 0);
        if (u < 0)
            break;
        if (ev && ev->cap_id && !atl_rhb.st[u].cap && capture_active(ev->cap_id)) {
            atl_rhb.st[u].cap = capture_of(ev->cap_id); /* joins the capture */
            break;
        }
        if (atl_rhb.st[u].cap)
            break;
        touch((unsigned)u);
        atl_rhb.st[u].wait_ev = (uintptr_t)s->event;
        atl_rhb.st[u].wait_from = ev && ev->recorded ? ev->from : -1;
        atl_rhb.st[u].wait_clock = ev && ev->recorded ? ev->clock : 0;
        atl_rhb.st[u].wait_site = ev && ev->recorded ? ev->site : 0;
        if (ev && ev->recorded) /* a wait for an event never recorded waits for nothing */
            ev_join(&atl_rhb.st[u].vc, ev), atl_rhb.st[u].ver++;
        break;
    }
    case ATL_SOP_QUERY_STREAM: {
        int u = stream_slot(s->stream, s->hook);
        if (u >= 0 && !atl_rhb.st[u].cap)
            atl_rhb_host_learns_stream((unsigned)u, HS_QUERY, 0);
        break;
    }
    case ATL_SOP_QUERY_EVENT: {
        struct revent *ev = event_get(s->event, 0);
        if (ev && ev->recorded)
            host_learns_event(ev, HS_QUERY, 0);
        break;
    }
    case ATL_SOP_GRAPH_DESTROY:
        atl_racc_graph_drop(s->graph);
        break;
    case ATL_SOP_EXEC_DESTROY:
        atl_racc_exec_drop(s->exec);
        break;
    case ATL_SOP_EVENT_DESTROY: {
        struct revent *ev = rmap_del(&hb.events, (uint64_t)(uintptr_t)s->event);
        if (ev) {
            hb.ev_vc_bytes -= (size_t)ev->vc.n * sizeof *ev->vc.c;
            free(ev->vc.c);
            free(ev);
        }
        break;
    }
    default:
        break;
    }
    pthread_mutex_unlock(&atl_rc.mu);
}
