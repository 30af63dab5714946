/*
 * Step traces. A CUDA graph bakes the grid, block, shared memory and
 * argument bytes of every launch at capture time, so a region is replayable
 * only if two executions of it enqueue byte-identical ops. This module
 * records the ops of each step and hands consecutive steps of one name to
 * the diff (tracediff.c), which names the host values that changed.
 *
 * Cost when on (per op, on the enqueueing thread): one lock-free probe of
 * the kernel-layout cache, one uncontended lock of the thread's own buffer,
 * a 64-byte record written in place and the parameter bytes gathered after
 * the last op's. Buffers grow by doubling and are handed over whole at the
 * step end (a step takes a thread's arrays, the thread gets spare ones), so
 * there is no allocation per op and, in a steady loop, none per step.
 * Everything heavier (merging threads, ordering by stream, resolving
 * pointers through the ledger, the diff, JSON) runs at the step end.
 */
#define _GNU_SOURCE /* pthread_getname_np, program_invocation_short_name */
#include "trace.h"

#include "capture.h"
#include "chrome.h"
#include "config.h"
#include "driver.h"
#include "hint.h"
#include "hostmap.h"
#include "kernels.h"
#include "ledger.h"
#include "log.h"
#include "services.h"
#include "stack.h"
#include "thread.h"
#include "tracediff.h"
#include "tracejson.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

int atl_trace_on;

enum step_mode { MODE_SYNC, MODE_CAPTURE, MODE_NVTX, MODE_API };
static enum step_mode mode;
static char nvtx_name[ATL_STEP_NAME_MAX];
static struct atl_ignore ignore_list;
static FILE *json;

/* ---- per-thread state ---------------------------------------------------------
 * What every traced launch reads (the thread's buffer, the layout cache's
 * last answer) is in the library's one per-thread struct (src/thread.h,
 * initial-exec TLS). The rest, about 130 bytes that only a thread ending or
 * naming steps touches, is this one struct in ordinary (dynamic) TLS: the
 * initial-exec block is taken from every thread of the program, traced or
 * not, out of the small surplus glibc keeps for libraries loaded later
 * (NVTX injection dlopens us), so it holds only the hot fields. */
static __thread struct {
    /* thread_label: the thread's name, asked again every 256th step end */
    char label[24];
    unsigned label_age;
    /* NVTX and api steps: this thread's open step, whether one is open and
     * when it began (the Chrome export) */
    char step[64];
    int in_step;
    uint64_t begin_ns;
    /* NVTX: the push depth, and the depth at which our range began (0: none) */
    int nvtx_depth, nvtx_step_depth;
} tt;

/* ---- kernel layouts: a lock-free read cache, filled once per handle ---------- */

#define KC_SIZE 65536 /* power of two; programs have thousands of kernels, not more */
static struct atl_kfn *kcache[KC_SIZE];
static pthread_mutex_t kc_mu = PTHREAD_MUTEX_INITIALIZER;
static struct atl_kfn kfn_overflow = {.mangled = "kernel@?", .pretty = "kernel@?"};

/* A layout forgotten because a module unload gave its handle to another
 * kernel: its slot stays taken (lock-free readers probe past it) until a new
 * layout reuses it. The old layout goes to `retired` (under kc_mu) until no
 * recorded step points to it (reclaim_retired, at a step end). */
static struct atl_kfn kfn_gone = {.handle = (void *)UINTPTR_MAX, .mangled = "", .pretty = ""};
static struct atl_kfn **retired;
static size_t nretired, capretired;

static size_t kc_slot(uintptr_t h)
{
    uint64_t x = h;
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ULL;
    return (size_t)(x >> 40) & (KC_SIZE - 1);
}

static struct atl_kfn *kc_find(uintptr_t key)
{
    for (size_t i = kc_slot(key), n = 0; n < KC_SIZE; i = (i + 1) & (KC_SIZE - 1), n++) {
        struct atl_kfn *k = __atomic_load_n(&kcache[i], __ATOMIC_ACQUIRE);
        if (!k)
            return NULL;
        if ((uintptr_t)k->handle == key)
            return k;
    }
    return NULL;
}

/* How the recorder copies each parameter: its bytes, then zeros up to the
 * next parameter, so the padding reads the same every step without zeroing
 * the block first, and the common cases (a pointer, a 4-byte scalar before
 * an 8-aligned one) are one load and one 8-byte store. Only for layouts
 * whose offsets ascend from 0 (every layout the driver gives, in practice);
 * others zero the block, then copy. */
enum { SLOT_8, SLOT_4_IN_8, SLOT_4, SLOT_OTHER };
struct slot {
    uint32_t off;
    uint16_t how; /* SLOT_*: the common cases need no size test */
    uint16_t pad;
    uint32_t size, span;
};

static struct slot *plan_make(const uint32_t *off, const uint32_t *size, unsigned n, unsigned total)
{
    if (n == 0)
        return NULL;
    for (unsigned i = 0; i < n; i++)
        if (off[i] % 4 || (i + 1 < n && off[i + 1] < off[i] + size[i]) || (i == 0 && off[0] != 0))
            return NULL;
    struct slot *p = calloc(n, sizeof *p);
    if (!p)
        return NULL;
    for (unsigned i = 0; i < n; i++) {
        uint32_t end = i + 1 < n ? off[i + 1] : total;
        uint32_t sz = size[i], span = end - off[i];
        uint16_t how = SLOT_OTHER;
        if (sz == 8 && span == 8 && off[i] % 8 == 0)
            how = SLOT_8;
        else if (sz == 4 && span == 8)
            how = SLOT_4_IN_8;
        else if (sz == 4 && span == 4)
            how = SLOT_4;
        p[i] = (struct slot){.off = off[i], .how = how, .size = sz, .span = span};
    }
    return p;
}

/* The layout of h: the packed buffer's one blob (extra_size), else the one
 * the launch's kernel record (rec, when the event carries one) took from the
 * driver, else the driver's, into off and size. */
static unsigned layout_of(void *h, const struct atl_krec *rec, size_t extra_size,
                          const uint32_t **off, const uint32_t **size, int *exact)
{
    static uint32_t o[4096], s[4096]; /* under kc_mu */
    *off = o, *size = s, *exact = 0;
    if (extra_size) { /* no layout from the driver: the packed buffer, one blob */
        o[0] = 0, s[0] = (uint32_t)extra_size;
        return 1;
    }
    if (rec) {
        *off = rec->off, *size = rec->size, *exact = rec->exact;
        return rec->nparams;
    }
    return atl_param_layout(h, o, s, 4096, exact);
}

static struct atl_kfn *kfn_make(void *h, const struct atl_krec *rec, uintptr_t key,
                                size_t extra_size)
{
    const uint32_t *off, *size;
    int exact;
    unsigned n = layout_of(h, rec, extra_size, &off, &size, &exact);
    /* The name for people is demangled later, on the thread that reports
     * (see name_for_people): demangling here would run on whichever thread
     * launched first, and its per-thread buffer would go with that thread. */
    char buf[1024];
    const char *mangled = atl_kernel_mangled(h);
    if (!mangled)
        mangled = atl_kernel_name(h, buf, sizeof buf); /* "kernel@0x..." */
    struct atl_kfn *k = calloc(1, sizeof *k);
    uint32_t *o = calloc(n + 1, 4), *s = calloc(n + 1, 4);
    char *m = strdup(mangled);
    if (!k || !o || !s || !m) {
        free(k), free(o), free(s), free(m);
        atl_log_once_oom("the step trace");
        return &kfn_overflow;
    }
    unsigned total = 0;
    for (unsigned i = 0; i < n; i++) {
        o[i] = off[i], s[i] = size[i];
        if (off[i] + size[i] > total)
            total = off[i] + size[i];
    }
    unsigned covered = 0;
    for (unsigned i = 0; i < n; i++)
        covered += s[i];
    *k = (struct atl_kfn){.handle = (void *)key,
                          .gen = __atomic_load_n(&atl_unload_gen, __ATOMIC_ACQUIRE),
                          .mangled = m,
                          .pretty = NULL,
                          .nparams = n,
                          .total = total,
                          .exact = exact || extra_size,
                          .off = o,
                          .size = s,
                          .gapless = covered == total,
                          .plan = plan_make(o, s, n, total)};
    atl_kfn_words(k);
    return k;
}

/* Fills k->pretty once (under kc_mu). At exit kc_mu may be held by a thread
 * stopped in a driver call (a layout query): the mangled name then does. */
static const char *name_for_people(const struct atl_kfn *ck)
{
    struct atl_kfn *k = (struct atl_kfn *)ck; /* pretty is filled lazily */
    if (atl_exit_lock(&kc_mu, NULL) != 0) {
        const char *p = __atomic_load_n(&k->pretty, __ATOMIC_ACQUIRE);
        return p ? p : k->mangled;
    }
    if (!k->pretty) {
        /* steps end on any thread, and threads exit: nothing kept per thread */
        char *p = atl_demangle_dup(k->mangled);
        if (!p)
            p = strdup(k->mangled);
        k->pretty = p ? p : k->mangled;
    }
    pthread_mutex_unlock(&kc_mu);
    return k->pretty;
}

/* Under kc_mu: k (made before the latest module unload) still describes the
 * kernel now at its handle? The same parameter layout and the same name. */
static int kfn_still(struct atl_kfn *k, void *h, const struct atl_krec *rec, size_t extra_size)
{
    if (!extra_size) {
        const uint32_t *off, *size;
        int exact;
        unsigned n = layout_of(h, rec, 0, &off, &size, &exact);
        if (n != k->nparams || exact != k->exact ||
            (n && (memcmp(off, k->off, n * 4) != 0 || memcmp(size, k->size, n * 4) != 0)))
            return 0;
    }
    char buf[1024];
    const char *m = atl_kernel_mangled(h);
    if (!m)
        m = atl_kernel_name(h, buf, sizeof buf);
    return strcmp(m, k->mangled) == 0;
}

/* key: the handle, or handle|1 for the layout taken from an `extra` buffer
 * when the driver cannot give one. The thread's last one is remembered with
 * the unload count it was checked at (atl_thr.trace_last_*). */
static const struct atl_kfn *kfn_for(void *h, const struct atl_krec *rec, size_t extra_size)
{
    uintptr_t key = (uintptr_t)h | (extra_size ? 1 : 0);
    unsigned long gen = __atomic_load_n(&atl_unload_gen, __ATOMIC_ACQUIRE);
    if (key == atl_thr.trace_last_key && atl_thr.trace_last_kfn &&
        atl_thr.trace_last_gen == gen) /* a loop launching one kernel */
        return atl_thr.trace_last_kfn;
    struct atl_kfn *k = kc_find(key);
    if (__builtin_expect(k != NULL && __atomic_load_n(&k->gen, __ATOMIC_ACQUIRE) == gen, 1)) {
        atl_thr.trace_last_key = key, atl_thr.trace_last_kfn = k, atl_thr.trace_last_gen = gen;
        return k;
    }
    pthread_mutex_lock(&kc_mu);
    k = kc_find(key);
    /* A module was unloaded since k was made: the driver may have given its
     * handle to another kernel, whose parameters must not be read with k's
     * layout (64 pointers read from a 1-entry array crashed the program). */
    if (k && k != &kfn_overflow && k->gen != gen) {
        if (kfn_still(k, h, rec, extra_size)) {
            __atomic_store_n(&k->gen, gen, __ATOMIC_RELEASE);
        } else {
            for (size_t i = kc_slot(key);; i = (i + 1) & (KC_SIZE - 1))
                if (__atomic_load_n(&kcache[i], __ATOMIC_RELAXED) == k) {
                    __atomic_store_n(&kcache[i], &kfn_gone, __ATOMIC_RELEASE);
                    break;
                }
            /* out of memory for the list: the layout is kept for good */
            if (atl_grow((void **)&retired, &capretired, nretired + 1, sizeof *retired, 16) == 0)
                retired[nretired] = k, __atomic_store_n(&nretired, nretired + 1, __ATOMIC_RELEASE);
            k = NULL;
        }
    }
    if (!k) {
        k = kfn_make(h, rec, key, extra_size);
        size_t i = kc_slot(key), tries = 0;
        for (struct atl_kfn *e; (e = __atomic_load_n(&kcache[i], __ATOMIC_RELAXED)) &&
                                e != &kfn_gone && tries++ < KC_SIZE / 2;)
            i = (i + 1) & (KC_SIZE - 1);
        if (k != &kfn_overflow && tries < KC_SIZE / 2)
            __atomic_store_n(&kcache[i], k, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&kc_mu);
    if (k != &kfn_overflow)
        atl_thr.trace_last_key = key, atl_thr.trace_last_kfn = k, atl_thr.trace_last_gen = gen;
    return k;
}

/* ---- per-thread buffers ---------------------------------------------------- */

/* A thread's ops of the step being recorded: the same layout as a step
 * (ops[i].u.k.bytes is an offset into bytes), so the step end takes the
 * arrays over instead of copying them (harvest). */
struct tbuf {
    int busy; /* a spin lock: taken by its thread per op (uncontended, one
               * atomic exchange), by the step end once per step */
    struct tbuf *next;
    struct atl_op *ops;
    size_t nops, cap;
    uint8_t *bytes;
    size_t nbytes, capbytes;
    int oom;
    int free_; /* its thread exited: the next new thread takes it over */
    /* ATLAS_CHROME_TRACE only: host enqueue times, parallel to ops. Kept
     * out of the 64-byte record, which same_as compares byte for byte. */
    uint64_t *ts;
    size_t tscap;
    size_t held;  /* bytes of the arrays above (atomic: other threads sum it) */
    unsigned idx; /* "#N" in reports: the N-th buffer made (a reused one keeps its N) */
    int owner;    /* its thread has ended a step of its own (a sync, its own NVTX range):
                   * its ops go to its own steps only; until then they are lent to the
                   * steps other threads end (written under step_mu) */
    /* under step_mu, in step ends (step_count): its thread's last step end of
     * its own (atomic: the fast path below reads and writes it without the
     * lock), and since when ops it lent have been left (0: none) */
    uint64_t last_own, lent_since;
    int open; /* nvtx/api: its thread has a step open (never lends then) */
    /* The fast path of a step end (fast_step): the kind its thread's last
     * step went to (its index + 1; 0: none yet), and the steps it ended there
     * without step_mu, for the exit summary (written by its thread, read at
     * exit). */
    int fast_slot;
    uint64_t fast_steps;
    /* Under its lock: the stream of its first op, and whether a later op
     * named another (op_done). A step end then knows its ops share one
     * stream without reading every record: a million records are 64 MB. */
    uint64_t stream0;
    int multi;
};

static struct tbuf *threads; /* list head; entries live for the process */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

static inline void spin_lock(int *busy)
{
    while (__atomic_exchange_n(busy, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(busy, __ATOMIC_RELAXED))
            cpu_relax();
}

static inline void spin_unlock(int *busy)
{
    __atomic_store_n(busy, 0, __ATOMIC_RELEASE);
}

static inline void buf_lock(struct tbuf *b)
{
    spin_lock(&b->busy);
}

static inline void buf_unlock(struct tbuf *b)
{
    spin_unlock(&b->busy);
}

/* buf_lock for the step end; at exit it gives up at the exit's deadline (the
 * buffer's thread may be stopped while recording) and returns -1. */
static int buf_lock_step(struct tbuf *b)
{
    if (!atl_exiting()) {
        buf_lock(b);
        return 0;
    }
    for (unsigned n = 1;; n++) {
        if (!__atomic_exchange_n(&b->busy, 1, __ATOMIC_ACQUIRE))
            return 0;
        if (n % 1024 == 0 && atl_exit_past_deadline())
            return -1;
        cpu_relax();
    }
}
static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;

/* Programs that start a thread per step (or per request) must not grow the
 * list without bound: an exited thread's buffer, with whatever ops it still
 * holds for the current step, passes to the next new thread. */
static void tbuf_release(void *p)
{
    /* what its thread left unsynchronised goes to whichever step ends next */
    __atomic_store_n(&((struct tbuf *)p)->owner, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&((struct tbuf *)p)->free_, 1, __ATOMIC_RELEASE);
}

static struct tbuf *tbuf_get(void)
{
    struct tbuf *b = atl_thr.trace_buf;
    if (__builtin_expect(b != NULL, 1))
        return b;
    for (b = __atomic_load_n(&threads, __ATOMIC_ACQUIRE); b;
         b = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE)) {
        int one = 1;
        if (__atomic_compare_exchange_n(&b->free_, &one, 0, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            __atomic_store_n(&b->owner, 0, __ATOMIC_RELAXED); /* a new thread: not yet */
            atl_thr.trace_buf = b;
            pthread_setspecific(exit_key, b);
            return b;
        }
    }
    b = calloc(1, sizeof *b);
    if (!b) {
        atl_log_once_oom("the step trace");
        return NULL;
    }
    pthread_mutex_lock(&threads_mu);
    /* appended at the tail: step merges walk threads in the order they
     * first enqueued, which keeps merged steps stable from step to step */
    static unsigned nmade;
    b->idx = ++nmade;
    struct tbuf **pp = &threads;
    while (*pp)
        pp = &(*pp)->next;
    __atomic_store_n(pp, b, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&threads_mu);
    atl_thr.trace_buf = b;
    pthread_setspecific(exit_key, b);
    return b;
}

/* A program that never synchronises (ATLAS_STEP=sync) would grow one step
 * without bound: past this many ops on one thread (512 MiB of records) the
 * rest of the step is dropped, and the step end says so. */
#define MAX_OPS_PER_THREAD (8u << 20)

/* ATLAS_TRACE_MAX_MB: the memory the trace may hold. Counted when a buffer
 * grows (rare: they double), so recording an op costs nothing more: every
 * thread's buffers, plus what the last step end kept (the previous step of
 * each name and the spare arrays; `kept`, written under step_mu). */
static size_t max_bytes;
static size_t kept;

static void held_note(struct tbuf *b)
{
    __atomic_store_n(&b->held, b->cap * sizeof *b->ops + b->capbytes + b->tscap * sizeof *b->ts,
                     __ATOMIC_RELAXED);
}

/* What atl_grow would add to an array of `cap` elements to hold `need`. */
static size_t grow_adds(size_t cap, size_t need, size_t elem, size_t first)
{
    if (need <= cap)
        return 0;
    size_t n = cap ? cap : first;
    while (n < need)
        n *= 2;
    return (n - cap) * elem;
}

/* Would `more` bytes take the trace past ATLAS_TRACE_MAX_MB? Says so once. */
static int over_budget(struct tbuf *b, size_t more)
{
    size_t sum = more + __atomic_load_n(&kept, __ATOMIC_RELAXED);
    for (struct tbuf *t = __atomic_load_n(&threads, __ATOMIC_ACQUIRE); t;
         t = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE))
        sum += __atomic_load_n(&t->held, __ATOMIC_RELAXED);
    if (sum <= max_bytes)
        return 0;
    b->oom = 3;
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        atl_log(ATL_WARN,
                "step trace: ATLAS_TRACE_MAX_MB=%llu reached: the rest of this step is not "
                "recorded, nor of any later step that needs more (the program is not affected)",
                atl_cfg.trace_max_mb);
    return 1;
}

/* Under the buffer's lock: room for one more op, and for its Chrome time
 * when the export is on. NULL (and b->oom set) when there is none. */
static __attribute__((noinline)) struct atl_op *op_grow(struct tbuf *b)
{
    if (b->nops >= MAX_OPS_PER_THREAD) {
        b->oom = 2;
        return NULL;
    }
    if (b->oom == 3)
        return NULL;
    size_t more = grow_adds(b->cap, b->nops + 1, sizeof *b->ops, 4096);
    if (atl_chrome_on)
        more += grow_adds(b->tscap, b->cap + more / sizeof *b->ops, sizeof *b->ts, 4096);
    if (more && over_budget(b, more))
        return NULL;
    if (atl_grow((void **)&b->ops, &b->cap, b->nops + 1, sizeof *b->ops, 4096) ||
        (atl_chrome_on && atl_grow((void **)&b->ts, &b->tscap, b->cap, sizeof *b->ts, 4096)))
        goto oom;
    held_note(b);
    return &b->ops[b->nops];
oom:
    held_note(b);
    if (!b->oom)
        b->oom = 1;
    return NULL;
}

static inline struct atl_op *op_take(struct tbuf *b)
{
    if (__builtin_expect(b->nops < b->cap && (!atl_chrome_on || b->nops < b->tscap), 1))
        return &b->ops[b->nops];
    return op_grow(b);
}

/* Under the buffer's lock: room for n parameter bytes at b->nbytes (not
 * aligned: every read and write of them goes through memcpy); NULL (and
 * b->oom set) when out of memory. */
static __attribute__((noinline)) uint8_t *bytes_grow(struct tbuf *b, size_t n)
{
    if (b->oom == 3 || over_budget(b, grow_adds(b->capbytes, b->nbytes + n, 1, 65536)))
        return NULL;
    if (atl_grow((void **)&b->bytes, &b->capbytes, b->nbytes + n, 1, 65536)) {
        if (!b->oom)
            b->oom = 1;
        return NULL;
    }
    held_note(b);
    return b->bytes + b->nbytes;
}

static inline uint8_t *bytes_take(struct tbuf *b, size_t n)
{
    if (__builtin_expect(b->nbytes + n <= b->capbytes, 1))
        return b->bytes + b->nbytes;
    return bytes_grow(b, n);
}

static int recording;

/* The op is complete: count it (and its bytes), stamp its Chrome time. */
static inline void op_done(struct tbuf *b, uint64_t now, size_t nbytes)
{
    if (atl_chrome_on)
        b->ts[b->nops] = now;
    const uint64_t st = b->ops[b->nops].stream; /* just written: in cache */
    if (b->nops == 0)
        b->stream0 = st, b->multi = 0;
    else
        b->multi |= st != b->stream0;
    /* a store other threads may read (fast_step): atomic, still one plain store on x86 */
    __atomic_store_n(&b->nops, b->nops + 1, __ATOMIC_RELAXED);
    b->nbytes += nbytes; /* packed: 64 bytes an op plus exactly its parameter bytes */
}

/* This thread's buffer, locked (NULL: out of memory), and the Chrome
 * export's enqueue time: one vDSO clock read (about 20 ns), taken only when
 * the export is on. */
static inline struct tbuf *rec_begin(uint64_t *now)
{
    *now = atl_chrome_on ? atl_chrome_now() : 0;
    struct tbuf *b = tbuf_get();
    if (b)
        buf_lock(b);
    return b;
}

/* An op without parameter bytes. */
static void record(const struct atl_op *o)
{
    uint64_t now;
    struct tbuf *b = rec_begin(&now);
    if (!b)
        return;
    struct atl_op *d = op_take(b);
    if (d) {
        *d = *o;
        op_done(b, now, 0);
    }
    buf_unlock(b);
}

/* A launch, into b (locked by the caller; unlocked here): the record is
 * written in place, the parameter bytes gathered from params (or copied from
 * a packed buffer) straight after the last. */
static void record_launch(struct tbuf *b, uint64_t now, const struct atl_launch *l,
                          const struct atl_kfn *k, const void *packed)
{
    struct atl_op *d = op_take(b);
    const unsigned total = k->total;
    /* a kernel without parameters takes no bytes (and the buffer may have
     * none yet: bytes_take would answer NULL without being out of memory) */
    uint8_t *p = d && total ? bytes_take(b, total) : NULL;
    if (!d || (total && !p))
        goto out;
    memset(d, 0, sizeof *d);
    d->kind = ATL_OP_LAUNCH;
    d->stream = (uint64_t)(uintptr_t)l->stream;
    for (int i = 0; i < 3; i++) {
        d->u.k.grid[i] = l->grid[i];
        d->u.k.block[i] = l->block[i];
    }
    if (__builtin_expect(l->cluster[0] | l->cluster[1] | l->cluster[2], 0))
        for (int i = 0; i < 3; i++)
            d->cluster[i] = (uint8_t)(l->cluster[i] > 255 ? 255 : l->cluster[i]);
    d->shmem = l->shmem;
    d->u.k.kfn = k;
    d->u.k.bytes = b->nbytes;
    const void *const *params = (const void *const *)l->params;
    if (!total) {
        /* nothing to copy */
    } else if (packed) {
        memcpy(p, packed, total);
    } else if (params && k->plan) {
        const struct slot *plan = k->plan;
        const unsigned n = k->nparams;
        for (unsigned i = 0; i < n; i++) {
            const struct slot *e = &plan[i];
            const void *src = params[i];
            uint8_t *dst = p + e->off;
            if (__builtin_expect(src == NULL, 0)) {
                memset(dst, 0, e->span);
                continue;
            }
            switch (e->how) {
            case SLOT_8:
                memcpy(dst, src, 8);
                break;
            case SLOT_4_IN_8: {
                uint32_t v32;
                memcpy(&v32, src, 4);
                uint64_t v = v32; /* the value, then four zero bytes (little-endian) */
                memcpy(dst, &v, 8);
                break;
            }
            case SLOT_4:
                memcpy(dst, src, 4);
                break;
            default:
                memcpy(dst, src, e->size);
                memset(dst + e->size, 0, e->span - e->size);
            }
        }
    } else if (params) {
        /* padding between parameters must read the same every step */
        if (!k->gapless)
            memset(p, 0, total);
        /* locals: the stores below may alias k as far as the compiler knows */
        const unsigned n = k->nparams;
        const uint32_t *off = k->off, *size = k->size;
        for (unsigned i = 0; i < n; i++) {
            const void *src = params[i];
            uint8_t *dst = p + off[i];
            const uint32_t sz = size[i];
            /* scalars and pointers: inline copies, no call */
            if (__builtin_expect(sz == 8 && src != NULL, 1))
                memcpy(dst, src, 8);
            else if (sz == 4 && src)
                memcpy(dst, src, 4);
            else if (src)
                memcpy(dst, src, sz);
            else
                memset(dst, 0, sz);
        }
    } else {
        memset(p, 0, total);
    }
    op_done(b, now, total);
out:
    buf_unlock(b);
}

/* ---- steps --------------------------------------------------------------------- */

static pthread_mutex_t step_mu = PTHREAD_MUTEX_INITIALIZER;
/* ATLAS_CHROME_TRACE: the enqueue times of the step being finished, in the
 * order of its ops, and when it began (under step_mu) */
static uint64_t *step_ts;
static size_t step_tscap;
static uint64_t step_count;
static struct atl_diff_stats stats;

/* The previous step of each kind (name, thread, stream): what the next one
 * of its kind is compared with. */
#define MAX_NAMES 256
static struct {
    int busy; /* a spin lock over nth and prev: taken after step_mu by a step end, or
               * alone by fast_step */
    uint64_t nth;
    struct atl_step prev; /* its name, thread and stream are the kind's */
} names[MAX_NAMES];
static int nnames;
static int where;   /* more than one thread or stream has steps: reports name them */
static int nowners; /* threads that have ended a step of their own (ever) */

static void log_line_cb(void *ctx, const char *text)
{
    (void)ctx;
    atl_log_line(text);
}

/* Under step_mu: the arrays of a step no longer needed, kept for the next
 * thread buffer whose arrays a step takes over (so a steady loop allocates
 * nothing per step). */
static struct {
    struct atl_op *ops;
    size_t capops;
    uint8_t *bytes;
    size_t capbytes;
} spare;

static void spare_put(struct atl_step *s)
{
    if (!spare.ops || s->capops > spare.capops) {
        free(spare.ops);
        spare.ops = s->ops, spare.capops = s->capops;
        s->ops = NULL;
    }
    if (!spare.bytes || s->capbytes > spare.capbytes) {
        free(spare.bytes);
        spare.bytes = s->bytes, spare.capbytes = s->capbytes;
        s->bytes = NULL;
    }
    atl_step_free(s);
}

/* Under step_mu and b's lock: a step with nothing yet takes b's arrays as
 * they are, and b gets the spare ones. */
static void take_over(struct atl_step *s, struct tbuf *b)
{
    s->ops = b->ops, s->nops = b->nops, s->capops = b->cap;
    s->bytes = b->bytes, s->nbytes = b->nbytes, s->capbytes = b->capbytes;
    b->ops = spare.ops, b->cap = spare.capops;
    b->bytes = spare.bytes, b->capbytes = spare.capbytes;
    spare.ops = NULL, spare.capops = 0, spare.bytes = NULL, spare.capbytes = 0;
    held_note(b);
}

/* Under step_mu, at a step end: what the trace keeps between steps. */
static void kept_note(void)
{
    size_t n = spare.capops * sizeof *spare.ops + spare.capbytes + step_tscap * sizeof *step_ts;
    for (int i = 0; i < nnames; i++)
        n += names[i].prev.capops * sizeof *names[i].prev.ops + names[i].prev.capbytes +
             names[i].prev.capspans * sizeof *names[i].prev.spans;
    __atomic_store_n(&kept, n, __ATOMIC_RELAXED);
}

/* Under step_mu and b's lock: b's ops after those already in s, their byte
 * offsets moved by the bytes already there. Returns -1 when out of memory. */
static int append(struct atl_step *s, const struct tbuf *b)
{
    size_t need = s->nops + b->nops, needb = s->nbytes + b->nbytes;
    if (atl_grow((void **)&s->ops, &s->capops, need, sizeof *s->ops, 4096) ||
        atl_grow((void **)&s->bytes, &s->capbytes, needb, 1, 65536))
        return -1;
    memcpy(s->ops + s->nops, b->ops, b->nops * sizeof *b->ops);
    if (b->nbytes)
        memcpy(s->bytes + s->nbytes, b->bytes, b->nbytes);
    for (size_t i = s->nops; i < need; i++)
        if (s->ops[i].kind == ATL_OP_LAUNCH)
            s->ops[i].u.k.bytes += s->nbytes;
    s->nops = need, s->nbytes = needb;
    return 0;
}

/* Under step_mu and b's lock: b's ops on `stream` move to the end of s (with
 * their Chrome times), the others stay in b, packed to its front in their
 * order. Returns -1 when out of memory (b is then left as it was). */
static int take_stream(struct atl_step *s, struct tbuf *b, uint64_t stream)
{
    size_t n = 0, nb = 0;
    for (size_t i = 0; i < b->nops; i++)
        if (b->ops[i].stream == stream) {
            n++;
            nb += b->ops[i].kind == ATL_OP_LAUNCH ? b->ops[i].u.k.kfn->total : 0;
        }
    if (n == 0)
        return 0;
    if (atl_grow((void **)&s->ops, &s->capops, s->nops + n, sizeof *s->ops, 4096) ||
        atl_grow((void **)&s->bytes, &s->capbytes, s->nbytes + nb, 1, 65536) ||
        (atl_chrome_on && b->ts &&
         atl_grow((void **)&step_ts, &step_tscap, s->nops + n, sizeof *step_ts, 4096)))
        return -1;
    size_t keep = 0, keepb = 0;
    for (size_t i = 0; i < b->nops; i++) {
        struct atl_op o = b->ops[i];
        size_t len = o.kind == ATL_OP_LAUNCH ? o.u.k.kfn->total : 0;
        const uint8_t *from = len ? b->bytes + o.u.k.bytes : NULL;
        if (o.stream == stream) {
            if (atl_chrome_on && b->ts)
                step_ts[s->nops] = b->ts[i];
            if (len) {
                memcpy(s->bytes + s->nbytes, from, len);
                o.u.k.bytes = s->nbytes;
                s->nbytes += len;
            }
            s->ops[s->nops++] = o;
        } else {
            if (len) {
                memmove(b->bytes + keepb, from, len); /* keepb <= the offset: moves down */
                o.u.k.bytes = keepb;
                keepb += len;
            }
            if (atl_chrome_on && b->ts)
                b->ts[keep] = b->ts[i];
            b->ops[keep++] = o;
        }
    }
    __atomic_store_n(&b->nops, keep, __ATOMIC_RELAXED);
    b->nbytes = keepb;
    return 0;
}

/* What a step end takes from the threads' buffers (see docs/trace.md, "Steps
 * and threads"). */
enum take {
    TAKE_NONE,   /* drop every thread's ops (a capture begins) */
    TAKE_STREAM, /* the ender's ops, and the lent ops on the step's stream */
    TAKE_LENT,   /* the ender's ops, and every lent op */
    TAKE_ALL,    /* every op of every thread (capture mode, the exit) */
};

/* Ops must not pile up where no step will take them: a thread that ended
 * no step of its own during this many step ends lends its ops again (it
 * synchronised once, then left that to others), and lent ops that no step
 * took for this long (on a stream only other streams' syncs follow) are
 * dropped. */
#define STALE_STEPS 4096

/* Whether a thread whose last step end of its own was `last_own` has gone
 * stale by step `now`. The fast path (fast_step) writes last_own without
 * step_mu, from a step count read after the caller's: last_own may be ahead
 * of `now`, and an unsigned difference would wrap to "stale" and lend a
 * syncing thread's ops to another thread's step. */
static inline int stale_owner(uint64_t now, uint64_t last_own)
{
    return now > last_own && now - last_own > STALE_STEPS;
}

/* Under step_mu: the step being harvested came whole from one buffer whose
 * ops share one stream (harvest). */
static int harvest_one_stream;

/* Under step_mu: moves the ops that `take` says into s (NULL: drops them);
 * a buffer taken whole is reset for the next step. `me` is the buffer of the
 * thread ending the step (NULL: none). */
static void harvest(struct atl_step *s, struct tbuf *me, enum take take, uint64_t stream)
{
    /* fast_step counts its steps without step_mu: read once, atomically */
    const uint64_t steps_now = __atomic_load_n(&step_count, __ATOMIC_RELAXED);
    harvest_one_stream = 0;
    /* entries are only ever appended (release), so the list can be walked
     * without its lock */
    for (struct tbuf *b = __atomic_load_n(&threads, __ATOMIC_ACQUIRE); b;
         b = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE)) {
        if (b != me && !__atomic_load_n(&b->open, __ATOMIC_RELAXED) &&
            stale_owner(steps_now, __atomic_load_n(&b->last_own, __ATOMIC_RELAXED)))
            __atomic_store_n(&b->owner, 0, __ATOMIC_RELAXED);
        int lent = !__atomic_load_n(&b->owner, __ATOMIC_RELAXED);
        int whole = b == me || take == TAKE_ALL || take == TAKE_NONE || (lent && take == TAKE_LENT);
        if (!whole && !(lent && take == TAKE_STREAM))
            continue; /* another thread's own steps */
        if (buf_lock_step(b) != 0) {
            atl_exit_skipped("the ops of a thread still recording");
            continue;
        }
        if (!whole) {
            harvest_one_stream = 0; /* ops of another buffer join: order_by_stream looks */
            if (s && take_stream(s, b, stream) != 0)
                atl_log_once_oom("the step trace");
            if (!b->nops)
                b->lent_since = 0;
            else if (!b->lent_since)
                b->lent_since = steps_now + 1;
            else if (steps_now + 1 - b->lent_since > STALE_STEPS) {
                __atomic_store_n(&b->nops, 0, __ATOMIC_RELAXED);
                b->nbytes = 0, b->oom = 0, b->lent_since = 0;
            }
            buf_unlock(b);
            continue;
        }
        b->lent_since = 0;
        if (s && b->nops) {
            size_t first = s->nops;
            if (atl_chrome_on && b->ts) {
                /* the times first: take_over hands b's arrays away */
                if (!atl_grow((void **)&step_ts, &step_tscap, first + b->nops, sizeof *step_ts,
                              4096))
                    memcpy(step_ts + first, b->ts, b->nops * sizeof *step_ts);
            }
            harvest_one_stream = first == 0 && !b->multi;
            if (first == 0 && !s->ops && !s->bytes)
                take_over(s, b);
            else if (append(s, b) != 0)
                atl_log_once_oom("the step trace");
        }
        if (b->oom == 1 && s)
            atl_log(ATL_WARN,
                    "step trace: out of memory while recording; the step ending now "
                    "(step %" PRIu64 ") is incomplete",
                    steps_now + 1);
        else if (b->oom == 2 && s)
            atl_log(ATL_WARN,
                    "step trace: more than %u ops on one thread in one step; the rest of "
                    "the step ending now (step %" PRIu64 ") was not recorded",
                    MAX_OPS_PER_THREAD, steps_now + 1);
        __atomic_store_n(&b->nops, 0, __ATOMIC_RELAXED);
        b->nbytes = 0, b->oom = 0;
        buf_unlock(b);
    }
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Orders the ops per stream: streams by handle (stable from step to step
 * whatever thread enqueued first), and within a stream the order of the
 * threads' buffers (a stable counting sort). */
static void order_streams(struct atl_step *s);

static void order_by_stream(struct atl_step *s)
{
    if (harvest_one_stream)
        return;
    for (size_t i = 1; i < s->nops; i++)
        if (s->ops[i].stream != s->ops[0].stream) {
            order_streams(s);
            return;
        }
    /* one stream (the common case): nothing to reorder */
}

/* order_by_stream's work when there are several streams: out of line, so
 * that a one-stream step does not pay for zeroing its counters. */
static __attribute__((noinline)) void order_streams(struct atl_step *s)
{
    enum { MAXS = 256 };
    uint64_t str[MAXS];
    size_t cnt[MAXS + 1] = {0}, ns = 0;
    uint16_t *rank = malloc(s->nops * sizeof *rank);
    struct atl_op *out = malloc(s->nops * sizeof *out);
    if (!rank || !out) {
        free(rank), free(out);
        return; /* left in thread order */
    }
    for (size_t i = 0; i < s->nops; i++) {
        size_t r = 0;
        while (r < ns && str[r] != s->ops[i].stream)
            r++;
        if (r == ns && ns < MAXS)
            str[ns++] = s->ops[i].stream;
        if (r == MAXS)
            r = MAXS - 1; /* a program with more streams: the rest share a bucket */
        rank[i] = (uint16_t)r;
    }
    uint64_t sorted[MAXS];
    memcpy(sorted, str, ns * sizeof *str);
    qsort(sorted, ns, sizeof *sorted, u64_cmp);
    uint16_t map[MAXS];
    for (size_t r = 0; r < ns; r++)
        for (size_t t = 0; t < ns; t++)
            if (sorted[t] == str[r])
                map[r] = (uint16_t)t;
    for (size_t i = 0; i < s->nops; i++) {
        rank[i] = rank[i] < ns ? map[rank[i]] : rank[i];
        cnt[rank[i] + 1]++;
    }
    for (size_t r = 1; r <= MAXS; r++)
        cnt[r] += cnt[r - 1];
    /* the Chrome export's times follow their ops (ts NULL: not kept) */
    uint64_t *ts = atl_chrome_on && step_tscap >= s->nops ? malloc(s->nops * sizeof *ts) : NULL;
    for (size_t i = 0; i < s->nops; i++) {
        size_t d = cnt[rank[i]]++;
        out[d] = s->ops[i];
        if (ts)
            ts[d] = step_ts[i];
    }
    if (ts) {
        memcpy(step_ts, ts, s->nops * sizeof *ts);
        free(ts);
    } else if (atl_chrome_on && step_tscap >= s->nops) {
        memset(step_ts, 0, s->nops * sizeof *step_ts); /* times lost with the order */
    }
    free(s->ops);
    s->ops = out;
    s->capops = s->nops;
    free(rank);
}

/* Names 8-byte parameters, and the 8-byte words of larger ones (PyTorch
 * passes tensor pointers in a by-value array), that point into a live
 * allocation, so the diff can tell "the same buffer at another offset" from
 * "another buffer", and two processes' pointers can be compared by name.
 * What is kept is the allocations found (the step's spans), not a note per
 * pointer: the words looked at are the same every time (atl_op_word_next),
 * so a word is named exactly when its value lies in one of them. */
static void resolve_pointers(struct atl_step *s)
{
    /* the last allocation found: consecutive pointers mostly fall in one */
    uint64_t lo = 0, hi = 0;
    /* allocations already added, by seq: a step's pointers alternate among
     * a few, each added once (a repeat past these is merged by spans_done) */
    enum { SEEN = 64 };
    uint64_t seen[SEEN];
    memset(seen, 0xff, sizeof seen);
    s->nspans = 0;
    for (size_t i = 0; i < s->nops; i++) {
        const struct atl_op *o = &s->ops[i];
        unsigned param = 0, wd = 0;
        uint32_t at;
        uint64_t v;
        const struct atl_kfn *k = o->kind == ATL_OP_LAUNCH ? o->u.k.kfn : NULL;
        if (k && k->words) {
            /* the common case inline: the words of a launch whose pointers
             * all fall in the last allocation found */
            const uint8_t *p = atl_op_bytes(s, o);
            const uint64_t len = hi - lo; /* one compare for "in [lo, hi)" */
            for (; wd < k->nwords; wd++) {
                memcpy(&v, p + k->words[wd], 8);
                if (v - lo >= len && v >= 65536)
                    break;
            }
            if (wd == k->nwords)
                continue;
        }
        while (atl_op_word_next(s, o, &param, &wd, &at, &v)) {
            if (v >= lo && v < hi)
                continue;
            struct atl_alloc_rec rec;
            if (!atl_ledger_find((CUdeviceptr)v, &rec))
                continue;
            lo = rec.ptr, hi = rec.ptr + atl_alloc_span(&rec);
            if (seen[rec.seq % SEEN] == rec.seq)
                continue;
            seen[rec.seq % SEEN] = rec.seq;
            if (atl_step_add_span(s, lo, hi, rec.seq)) {
                atl_log_once_oom("the step trace's pointer names");
                break;
            }
        }
    }
    atl_step_spans_done(s);
}

/* Kernel names for people, before a report needs them. */
static void name_ops(const struct atl_step *st)
{
    const struct atl_kfn *last = NULL;
    for (size_t i = 0; i < st->nops; i++) {
        const struct atl_kfn *k = st->ops[i].u.k.kfn;
        if (st->ops[i].kind == ATL_OP_LAUNCH && k != last) {
            last = k;
            if (!__atomic_load_n(&k->pretty, __ATOMIC_ACQUIRE))
                name_for_people(k);
        }
    }
}

/* The same ops and the same bytes as the previous step of the name (streams
 * included, so this is stricter than the diff). */
static int same_as(const struct atl_step *a, const struct atl_step *b)
{
    return a->ops && a->nops == b->nops && a->nbytes == b->nbytes &&
           memcmp(a->ops, b->ops, a->nops * sizeof *a->ops) == 0 &&
           (a->nbytes == 0 || memcmp(a->bytes, b->bytes, a->nbytes) == 0);
}

/* Under step_mu: the step's slice and ops into the Chrome trace. Pointers
 * must be resolved and kernel names demangled first. */
static void chrome_write(struct atl_step *s, uint64_t begin, uint64_t end)
{
    name_ops(s);
    atl_chrome_step(s, step_tscap >= s->nops ? step_ts : NULL, begin, end);
}

static int ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

/* Under step_mu, at the end of a step end whose harvest began after the
 * first `upto` layouts were retired: those no kept step points to any more
 * are freed. (A retired layout is used only by ops recorded before it was
 * retired, under their buffer's lock; the harvest took them all, so they are
 * in the kept steps or gone.) Only when layouts were retired since the last
 * try, so a steady loop pays nothing; those still in use then wait for the
 * next retirement. */
static size_t reclaim_tried; /* under step_mu: retired layouts the last try kept (atomic:
                              * fast_step reads it) */

static void reclaim_retired(size_t upto)
{
    if (upto <= reclaim_tried)
        return;
    pthread_mutex_lock(&kc_mu);
    uintptr_t *cand = malloc(upto * sizeof *cand);
    unsigned char *used = calloc(upto, 1);
    if (cand && used) {
        for (size_t i = 0; i < upto; i++)
            cand[i] = (uintptr_t)retired[i];
        qsort(cand, upto, sizeof *cand, ptr_cmp);
        for (int n = 0; n < nnames; n++) {
            const struct atl_step *p = &names[n].prev;
            for (size_t i = 0; i < p->nops; i++) {
                if (p->ops[i].kind != ATL_OP_LAUNCH)
                    continue;
                uintptr_t k = (uintptr_t)p->ops[i].u.k.kfn;
                uintptr_t *hit = bsearch(&k, cand, upto, sizeof *cand, ptr_cmp);
                if (hit)
                    used[hit - cand] = 1;
            }
        }
        size_t keep = 0, kept_old = 0;
        for (size_t i = 0; i < nretired; i++) {
            struct atl_kfn *k = retired[i];
            uintptr_t key = (uintptr_t)k, *c = NULL;
            if (i < upto)
                c = bsearch(&key, cand, upto, sizeof *cand, ptr_cmp);
            if (c && !used[c - cand]) {
                if (k->pretty != k->mangled)
                    free((void *)k->pretty);
                free((void *)k->mangled);
                free((void *)k->off), free((void *)k->size), free((void *)k->plan);
                free((void *)k->words), free(k);
            } else {
                retired[keep++] = k;
                kept_old += i < upto;
            }
        }
        __atomic_store_n(&nretired, keep, __ATOMIC_RELEASE);
        __atomic_store_n(&reclaim_tried, kept_old, __ATOMIC_RELAXED);
    }
    free(cand), free(used);
    pthread_mutex_unlock(&kc_mu);
}

/* The thread's name in reports: "main", the name it was given
 * (pthread_setname_np), or "#N" (its buffer's number) when it has none of
 * its own (a new thread inherits the program's name). */
static void thread_label_now(const struct tbuf *me, char *out, size_t len)
{
    char nm[16] = "";
    if ((pid_t)syscall(SYS_gettid) == getpid()) {
        snprintf(out, len, "main");
        return;
    }
    if (pthread_getname_np(pthread_self(), nm, sizeof nm) == 0 && nm[0] &&
        strncmp(nm, program_invocation_short_name, sizeof nm - 1) != 0) {
        size_t n = 0;
        for (; nm[n] && n + 1 < len; n++) /* only printable text reaches the log */
            out[n] = nm[n] > ' ' && nm[n] < 127 && nm[n] != '"' && nm[n] != '\\' ? nm[n] : '_';
        out[n] = '\0';
        return;
    }
    snprintf(out, len, "#%u", me ? me->idx : 0);
}

/* thread_label_now costs three system calls, too many for a step end per
 * synchronous copy: it is asked again every 256th step of the thread only
 * (a thread names itself when it starts, if at all). */

static void thread_label(const struct tbuf *me, char out[sizeof tt.label])
{
    if (!tt.label[0] || tt.label_age++ % 256 == 0)
        thread_label_now(me, tt.label, sizeof tt.label);
    memcpy(out, tt.label, sizeof tt.label);
}

/* The step end of a thread whose step is byte-identical to the previous one
 * of its kind, without step_mu: a server's threads each syncing their own
 * stream, or a loop of synchronous copies (a step end each), must not queue
 * on one process-wide lock to learn that nothing changed. Taken only when
 * the slow path would do nothing else: the thread owns its ops and its last
 * step found its kind (fast_slot), no other thread has ops to lend or ops
 * left stale (harvest would move them), no layout waits to be reclaimed, and
 * no JSON lines or Chrome trace are written (they keep the steps' order).
 * Then the thread's buffer is compared with the kind's previous step under
 * that kind's lock and, if identical, emptied in place. Returns 1 when the
 * step end is done. */
static int fast_step(const char *name, struct tbuf *me, enum take take, uint64_t stream)
{
    if (!me || !me->fast_slot || __atomic_load_n(&json, __ATOMIC_RELAXED) || atl_chrome_on ||
        mode == MODE_CAPTURE || (take != TAKE_LENT && take != TAKE_STREAM) || atl_exiting() ||
        !__atomic_load_n(&me->owner, __ATOMIC_RELAXED) ||
        __atomic_load_n(&nretired, __ATOMIC_ACQUIRE) >
            __atomic_load_n(&reclaim_tried, __ATOMIC_RELAXED))
        return 0;
    uint64_t now = __atomic_load_n(&step_count, __ATOMIC_RELAXED);
    for (struct tbuf *b = __atomic_load_n(&threads, __ATOMIC_ACQUIRE); b;
         b = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE))
        if (b != me && __atomic_load_n(&b->nops, __ATOMIC_RELAXED) &&
            (!__atomic_load_n(&b->owner, __ATOMIC_RELAXED) ||
             stale_owner(now, __atomic_load_n(&b->last_own, __ATOMIC_RELAXED))))
            return 0;
    char label[sizeof tt.label];
    thread_label(me, label);
    const int slot = me->fast_slot - 1;
    struct atl_step *prev = &names[slot].prev;
    int done = 0;
    spin_lock(&names[slot].busy);
    buf_lock(me);
    if (me->nops == 0 && !me->oom) {
        done = 1; /* nothing recorded, nothing lent: no step (as the slow path decides) */
    } else if (!me->oom && prev->ops && prev->nops == me->nops && prev->nbytes == me->nbytes &&
               strncmp(prev->name, name, sizeof prev->name - 1) == 0 &&
               strcmp(prev->thread, label) == 0) {
        /* the key's stream: the synchronised one, or the one stream of the ops */
        uint64_t st = take == TAKE_STREAM ? stream : me->ops[0].stream;
        size_t i = me->multi ? 0 : me->nops;
        while (i < me->nops && me->ops[i].stream == me->ops[0].stream)
            i++;
        done = i == me->nops && prev->stream == st &&
               memcmp(prev->ops, me->ops, me->nops * sizeof *me->ops) == 0 &&
               (me->nbytes == 0 || memcmp(prev->bytes, me->bytes, me->nbytes) == 0);
        if (done) {
            __atomic_store_n(&me->nops, 0, __ATOMIC_RELAXED);
            me->nbytes = 0;
            prev->index = __atomic_add_fetch(&step_count, 1, __ATOMIC_RELAXED);
            prev->nth = ++names[slot].nth;
            __atomic_store_n(&me->fast_steps, me->fast_steps + 1, __ATOMIC_RELAXED);
        }
    }
    buf_unlock(me);
    spin_unlock(&names[slot].busy);
    if (done)
        __atomic_store_n(&me->last_own, now, __ATOMIC_RELAXED);
    return done;
}

/* Ends a step on the calling thread (its buffer `me`, NULL when it has
 * none): takes what `take` says (harvest), keys the step by the thread and
 * `stream` (0: the one stream of its ops, if they share one) and compares it
 * with the previous step of its kind. `begin` is the Chrome export's start
 * of the step. */
static void step_finish(const char *name, struct tbuf *me, enum take take, uint64_t stream,
                        uint64_t begin)
{
    struct atl_step s;
    uint64_t end = atl_chrome_on ? atl_chrome_now() : 0;
    if (!begin)
        begin = end; /* the thread's first step: when it began is not known */
    if (fast_step(name, me, take, stream))
        return;
    if (atl_exit_lock(&step_mu, "the step trace's last step") != 0)
        return;
    /* before the harvest: see reclaim_retired. Written under kc_mu, read
     * here without it (an atomic load: a step end per synchronous copy must
     * not take a second lock for a count that rarely changes) */
    size_t retired_before = __atomic_load_n(&nretired, __ATOMIC_ACQUIRE);
    atl_step_init(&s, name);
    /* before the harvest: its own ops are taken whole */
    if (me && !__atomic_exchange_n(&me->owner, 1, __ATOMIC_RELAXED))
        where |= ++nowners > 1;
    if (me)
        __atomic_store_n(&me->last_own, __atomic_load_n(&step_count, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
    harvest(&s, me, take, stream);
    if (s.nops == 0) {
        atl_step_free(&s);
        reclaim_retired(retired_before);
        pthread_mutex_unlock(&step_mu);
        return;
    }
    order_by_stream(&s);
    s.index = __atomic_add_fetch(&step_count, 1, __ATOMIC_RELAXED); /* read by the hang report */
    stats.steps++;
    _Static_assert(sizeof s.thread == sizeof tt.label, "a label fills the step's");
    thread_label(me, s.thread);
    s.stream = stream;
    if (take != TAKE_STREAM && mode != MODE_CAPTURE) {
        s.stream = s.ops[0].stream; /* ordered by stream: one stream iff first == last */
        if (s.ops[s.nops - 1].stream != s.stream)
            s.stream = 0;
    }
    int slot = 0;
    while (slot < nnames && !atl_step_same_key(&names[slot].prev, &s, 0))
        slot++;
    if (slot == nnames) {
        if (nnames == MAX_NAMES) {
            slot = MAX_NAMES - 1; /* more kinds of step than that: the last slot is shared */
        } else {
            struct atl_step *k = &names[nnames++].prev;
            snprintf(k->name, sizeof k->name, "%s", s.name);
            memcpy(k->thread, s.thread, sizeof k->thread);
            k->stream = s.stream;
            if (nnames > 1 &&
                (strcmp(names[0].prev.thread, s.thread) != 0 || names[0].prev.stream != s.stream))
                where = 1;
        }
    }
    /* the kind's lock (fast_step reads its previous step without step_mu);
     * released at every return below */
    spin_lock(&names[slot].busy);
    s.nth = ++names[slot].nth;
    struct atl_step *prev = &names[slot].prev;
    /* this thread's next step end may take the fast path to this kind (not
     * to the last slot, which kinds past MAX_NAMES share) */
    if (me)
        me->fast_slot = slot < MAX_NAMES - 1 ? slot + 1 : 0;
    struct atl_diff_opts o = {
        .max_lines = (unsigned)atl_cfg.diff_max,
        .ignore = &ignore_list,
        .replay = mode == MODE_CAPTURE ? "capture" : NULL,
        .where = where,
        .pointers = (int)atl_cfg.diff_pointers,
        .residue = (int)atl_cfg.diff_residue,
        .host_addr = atl_host_addr,
        .line = log_line_cb,
    };
    /* The steady state of a replayable loop: byte-identical to the previous
     * step. Two memcmps decide it, and the previous step (already hashed and
     * resolved) stays as the reference, so an identical step costs no
     * hashing, no ledger look-ups and no allocation beyond the merge. */
    if (same_as(prev, &s)) {
        if (json || atl_chrome_on)
            resolve_pointers(&s);
        if (json) {
            atl_step_write_json(&s, json);
            fflush(json);
        }
        if (atl_chrome_on)
            chrome_write(&s, begin, end);
        uint64_t was = prev->nth;
        prev->index = s.index, prev->nth = s.nth;
        spare_put(&s);
        stats.compared++, stats.identical++;
        if (o.replay) {
            char line[160];
            snprintf(line, sizeof line,
                     "%s #%" PRIu64 " is replay-safe: identical to #%" PRIu64 " (%zu ops)",
                     o.replay, prev->nth, was, prev->nops);
            atl_log_line(line);
        }
        spin_unlock(&names[slot].busy);
        kept_note();
        reclaim_retired(retired_before);
        pthread_mutex_unlock(&step_mu);
        return;
    }
    if (atl_ledger_on)
        resolve_pointers(&s);
    /* prev's kernels were named when it ended (here: a step becomes prev
     * only below); a million-op step is not walked twice for it */
    name_ops(&s);
    /* the diff first: what it learns about the kernels (parameters holding
     * uninitialised bytes) goes into this step's JSON lines already */
    if (prev->ops && atl_step_diff(prev, &s, &o, &stats))
        atl_note_finding(ATL_FINDING_DIFF, 1);
    if (json) {
        atl_step_write_json(&s, json);
        fflush(json);
    }
    if (atl_chrome_on)
        chrome_write(&s, begin, end);
    spare_put(prev);
    *prev = s;
    spin_unlock(&names[slot].busy);
    kept_note();
    reclaim_retired(retired_before);
    pthread_mutex_unlock(&step_mu);
}

static int trace_done; /* the exit summary is out: later markers are ignored */

int atl_trace_progress(uint64_t *steps, uint64_t *ops, unsigned max, void (*line)(const char *))
{
    if (!atl_trace_on)
        return 0;
    *steps = __atomic_load_n(&step_count, __ATOMIC_RELAXED);
    *ops = 0;
    /* each buffer's own lock, held by its thread for one op at a time: the
     * launch path gains no lock, and a thread stuck in a sync holds none */
    for (struct tbuf *b = __atomic_load_n(&threads, __ATOMIC_ACQUIRE); b;
         b = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE)) {
        buf_lock(b);
        *ops += b->nops;
        for (size_t i = b->nops > max ? b->nops - max : 0; i < b->nops; i++) {
            const struct atl_op *o = &b->ops[i];
            char text[512];
            if (o->kind == ATL_OP_LAUNCH)
                snprintf(text, sizeof text,
                         "op %zu: %s grid=(%u,%u,%u) block=(%u,%u,%u) stream=0x%" PRIx64, i,
                         name_for_people(o->u.k.kfn), o->u.k.grid[0], o->u.k.grid[1],
                         o->u.k.grid[2], o->u.k.block[0], o->u.k.block[1], o->u.k.block[2],
                         o->stream);
            else
                snprintf(text, sizeof text, "op %zu: %s stream=0x%" PRIx64, i,
                         o->kind == ATL_OP_MEMSET ? "memset"
                         : o->kind == ATL_OP_COPY ? "copy"
                                                  : "graph",
                         o->stream);
            line(text);
        }
        buf_unlock(b);
    }
    return 1;
}

void atl_trace_flush(void)
{
    if (!atl_trace_on || pthread_mutex_trylock(&step_mu) != 0)
        return;
    if (json)
        fflush(json);
    pthread_mutex_unlock(&step_mu);
}

/* NVTX and api steps are the calling thread's: its open range (or
 * atlas_step_begin), its name and when it began. `recording` counts the
 * threads with a step open, so that the ops of threads without one are
 * recorded meanwhile (lent to the step that ends next; see harvest). */

void atl_trace_step_begin(const char *name)
{
    if (!atl_trace_on || __atomic_load_n(&trace_done, __ATOMIC_ACQUIRE))
        return;
    /* api: a begin inside a step ends that step first */
    if (tt.in_step)
        atl_trace_step_end();
    struct tbuf *b = tbuf_get();
    if (b) {
        /* whatever this thread enqueued outside its steps is not part of one */
        pthread_mutex_lock(&step_mu);
        if (!__atomic_exchange_n(&b->owner, 1, __ATOMIC_RELAXED))
            where |= ++nowners > 1;
        __atomic_store_n(&b->last_own, __atomic_load_n(&step_count, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&b->open, 1, __ATOMIC_RELAXED);
        buf_lock(b);
        __atomic_store_n(&b->nops, 0, __ATOMIC_RELAXED);
        b->nbytes = 0, b->oom = 0;
        buf_unlock(b);
        pthread_mutex_unlock(&step_mu);
    }
    tt.begin_ns = atl_chrome_on ? atl_chrome_now() : 0;
    snprintf(tt.step, sizeof tt.step, "%s", name && *name ? name : "step");
    tt.in_step = 1;
    __atomic_add_fetch(&recording, 1, __ATOMIC_ACQ_REL);
}

void atl_trace_step_end(void)
{
    if (!atl_trace_on || __atomic_load_n(&trace_done, __ATOMIC_ACQUIRE) || !tt.in_step)
        return;
    tt.in_step = 0;
    step_finish(tt.step, atl_thr.trace_buf, TAKE_LENT, 0, tt.begin_ns);
    if (atl_thr.trace_buf)
        __atomic_store_n(&atl_thr.trace_buf->open, 0, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&recording, 1, __ATOMIC_ACQ_REL);
}

/* ---- events ----------------------------------------------------------------------- */

static inline int rec_now(void)
{
    return __atomic_load_n(&recording, __ATOMIC_RELAXED) > 0;
}

/* Stream captures in progress (any mode): while there are, each op asks the
 * driver whether its stream captures. A captured op is not executed where
 * it is enqueued: it belongs to the capture step only (ATLAS_STEP=capture),
 * and the eager step records the graph's launch instead. */
static int skip_op(uint64_t stream)
{
    if (__builtin_expect(!atl_capture_any(), 1))
        return 0;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!atl_drv.cuStreamIsCapturing ||
        atl_drv.cuStreamIsCapturing((CUstream)(uintptr_t)stream, &st) != CUDA_SUCCESS)
        st = CU_STREAM_CAPTURE_STATUS_NONE;
    return (st == CU_STREAM_CAPTURE_STATUS_ACTIVE) != (mode == MODE_CAPTURE);
}

static void warn_inexact(const struct atl_kfn *k)
{
    /* said once per kernel: the layout cache entry is never reused */
    static struct atl_kfn *said[64];
    static int nsaid;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nsaid; i++)
        if (said[i] == k)
            goto out;
    if (nsaid < 64)
        said[nsaid++] = (struct atl_kfn *)k;
    atl_log(ATL_WARN,
            "step trace: kernel=%s: the driver gives no parameter layout "
            "(cuFuncGetParamInfo/cuKernelGetParamInfo) and the launch passes no packed buffer; "
            "its arguments are not recorded, only its grid, block and shared memory",
            name_for_people(k));
out:
    pthread_mutex_unlock(&mu);
}

void atl_trace_launch(const struct atl_launch *l, CUresult r)
{
    if (r != CUDA_SUCCESS || !rec_now() || skip_op((uint64_t)(uintptr_t)l->stream))
        return;
    const void *packed = NULL;
    size_t packed_size = 0;
    for (size_t i = 0; l->extra && l->extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
        if (l->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            packed = l->extra[i + 1];
        else if (l->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && l->extra[i + 1])
            packed_size = *(const size_t *)l->extra[i + 1];
    }
    /* The layout is looked up with this thread's buffer locked, so a layout
     * that a module unload retires is, if used at all, in a buffer that the
     * next step end harvests (reclaim_retired relies on it). */
    uint64_t now;
    struct tbuf *b = rec_begin(&now);
    if (!b)
        return;
    const struct atl_kfn *k = kfn_for(l->func, l->rec, 0);
    if (!k->exact && packed && packed_size)
        k = kfn_for(l->func, l->rec, packed_size);
    else if (!k->exact && l->params)
        warn_inexact(k);
    if (packed && packed_size < k->total)
        packed = NULL; /* a short buffer: do not read past it */
    record_launch(b, now, l, k, packed);
}

void atl_trace_graph_launch(const struct atl_graph_launch *g, CUresult r)
{
    if (r != CUDA_SUCCESS || !rec_now() || skip_op((uint64_t)(uintptr_t)g->stream))
        return;
    struct atl_op o = {.kind = ATL_OP_GRAPH, .stream = (uint64_t)(uintptr_t)g->stream};
    o.u.g.exec = (uint64_t)(uintptr_t)g->exec;
    record(&o);
}

void atl_trace_memset(const struct atl_memset *m, CUresult r)
{
    if (r == CUDA_SUCCESS && rec_now() && !skip_op((uint64_t)(uintptr_t)m->stream)) {
        struct atl_op o = {.kind = ATL_OP_MEMSET,
                           .sub = (uint8_t)m->elem,
                           .stream = (uint64_t)(uintptr_t)m->stream,
                           .shmem = m->value};
        o.u.m.ptr = m->dst, o.u.m.count = m->count, o.u.m.pitch = m->pitch;
        o.u.m.height = m->height;
        record(&o);
    }
    /* a synchronous memset is not a host synchronisation point: the driver
     * may return before it completes */
}

static uint8_t copy_dir(enum atl_copy_way w)
{
    switch (w) {
    case ATL_WAY_HTOD:
        return ATL_DIR_HTOD;
    case ATL_WAY_DTOH:
        return ATL_DIR_DTOH;
    case ATL_WAY_DTOD:
        return ATL_DIR_DTOD;
    case ATL_WAY_HTOH:
        return ATL_DIR_HTOH;
    default:
        return ATL_DIR_OTHER;
    }
}

static void copy_op(const struct atl_copy *c, struct atl_op *o)
{
    o->kind = ATL_OP_COPY;
    o->stream = (uint64_t)(uintptr_t)c->stream;
    o->u.c.w = c->bytes, o->u.c.h = 1, o->u.c.d = 1;
    switch (c->kind) {
    case ATL_CPY_HTOD:
        o->sub = ATL_DIR_HTOD;
        o->u.c.dst = c->dst, o->u.c.src = (uint64_t)(uintptr_t)c->host_src;
        break;
    case ATL_CPY_DTOH:
        o->sub = ATL_DIR_DTOH;
        o->u.c.dst = (uint64_t)(uintptr_t)c->host_dst, o->u.c.src = c->src;
        break;
    case ATL_CPY_DTOD:
    case ATL_CPY_PEER:
        o->sub = ATL_DIR_DTOD;
        o->u.c.dst = c->dst, o->u.c.src = c->src;
        break;
    case ATL_CPY_2D:
    case ATL_CPY_3D:
    case ATL_CPY_3D_PEER:
        /* 3D copies are OTHER whatever their ends; a 3D peer copy is
         * device to device and prints the device pointers */
        o->sub = c->kind == ATL_CPY_3D_PEER ? ATL_DIR_DTOD : ATL_DIR_OTHER;
        if (c->geom.set) {
            const struct atl_copy_geom *g = &c->geom;
            int peer = c->kind == ATL_CPY_3D_PEER;
            o->u.c.dst = peer ? g->dst.dev : g->dst.addr;
            o->u.c.src = peer ? g->src.dev : g->src.addr;
            o->u.c.w = g->width, o->u.c.h = g->height, o->u.c.d = g->depth;
            if (c->kind == ATL_CPY_2D)
                o->sub = copy_dir(g->way);
        }
        break;
    case ATL_CPY_BATCH:
    case ATL_CPY_3D_BATCH:
        o->sub = ATL_DIR_OTHER;
        o->u.c.w = c->count; /* the number of copies in the batch */
        if (c->kind == ATL_CPY_BATCH && c->count && c->batch_dst && c->batch_src) {
            o->u.c.dst = c->batch_dst[0], o->u.c.src = c->batch_src[0];
        }
        break;
    case ATL_CPY_GENERIC:
        o->sub = ATL_DIR_OTHER;
        o->u.c.dst = c->dst, o->u.c.src = c->src;
        break;
    default: /* arrays */
        o->sub = ATL_DIR_OTHER;
        o->u.c.dst = c->adst ? (uint64_t)(uintptr_t)c->adst + c->dst_off : c->dst;
        o->u.c.src = c->asrc ? (uint64_t)(uintptr_t)c->asrc + c->src_off : c->src;
        if (c->host_dst)
            o->u.c.dst = (uint64_t)(uintptr_t)c->host_dst;
        if (c->host_src)
            o->u.c.src = (uint64_t)(uintptr_t)c->host_src;
    }
}

static void sync_step(const char *name, enum take take, uint64_t stream);

void atl_trace_copy(const struct atl_copy *c, CUresult r)
{
    if (r == CUDA_SUCCESS && rec_now() && !skip_op((uint64_t)(uintptr_t)c->stream)) {
        struct atl_op o = {0};
        copy_op(c, &o);
        record(&o);
    }
    /* A synchronous copy to the host (or any synchronous copy through
     * unified addressing) returns only when the GPU is done with the work
     * before it: the host has synchronised. Host-to-device copies from
     * pageable memory may return early, so they are not step ends. */
    if (mode == MODE_SYNC && !c->async &&
        (c->kind == ATL_CPY_DTOH || c->kind == ATL_CPY_ATOH || c->kind == ATL_CPY_GENERIC ||
         c->kind == ATL_CPY_DTOD || c->kind == ATL_CPY_2D || c->kind == ATL_CPY_3D))
        sync_step(atl_hook_names[c->hook], TAKE_LENT, 0);
}

/* Sync mode: the calling thread's host synchronisation ends its step. */
static void sync_step(const char *name, enum take take, uint64_t stream)
{
    if (!atl_trace_on || __atomic_load_n(&trace_done, __ATOMIC_ACQUIRE))
        return;
    step_finish(name, tbuf_get(), take, stream, tt.begin_ns);
    if (atl_chrome_on)
        tt.begin_ns = atl_chrome_now(); /* the thread's next step opens here */
}

void atl_trace_sync(const struct atl_sync *s, CUresult r)
{
    (void)r;
    if (mode != MODE_SYNC)
        return;
    /* a stream's sync waits for that stream only: the lent ops of other
     * streams wait for their own. The legacy default stream (NULL, or
     * CU_STREAM_LEGACY: the runtime may name it either way when it launches
     * and when it synchronises) waits for every blocking stream: all. */
    if (s->kind == ATL_SYNC_STREAM && s->stream != NULL && s->stream != CU_STREAM_LEGACY)
        sync_step(atl_hook_names[s->hook], TAKE_STREAM, (uint64_t)(uintptr_t)s->stream);
    else
        sync_step(atl_hook_names[s->hook], TAKE_LENT, 0);
}

/* Captures on several streams at once (one region forked into others)
 * make one step: it begins with the first capture and ends with the last,
 * and is keyed by the stream the first one began on. */
static int captures_open, captured_any; /* captured_any: for the exit's "no capture" line */
static uint64_t cap_stream, cap_begin_ns;

static void capture_step_end(void)
{
    step_finish("capture", tbuf_get(), TAKE_ALL, cap_stream, cap_begin_ns);
    __atomic_sub_fetch(&recording, 1, __ATOMIC_ACQ_REL);
}

void atl_trace_capture_pre(const struct atl_capture *c)
{
    if (c->begin)
        return;
    /* ops enqueued from now on are not in this capture: the engine has
     * already closed it in src/capture.c */
    if (mode == MODE_CAPTURE && __atomic_load_n(&captures_open, __ATOMIC_ACQUIRE) > 0 &&
        __atomic_sub_fetch(&captures_open, 1, __ATOMIC_ACQ_REL) == 0 &&
        !__atomic_load_n(&trace_done, __ATOMIC_ACQUIRE))
        capture_step_end();
}

void atl_trace_capture_post(const struct atl_capture *c, CUresult r)
{
    if (!c->begin || r != CUDA_SUCCESS)
        return;
    __atomic_store_n(&captured_any, 1, __ATOMIC_RELAXED);
    if (mode == MODE_CAPTURE && __atomic_fetch_add(&captures_open, 1, __ATOMIC_ACQ_REL) == 0 &&
        !__atomic_load_n(&trace_done, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&step_mu);
        harvest(NULL, NULL, TAKE_NONE, 0); /* nothing before the capture is part of it */
        cap_stream = (uint64_t)(uintptr_t)c->stream;
        pthread_mutex_unlock(&step_mu);
        cap_begin_ns = atl_chrome_on ? atl_chrome_now() : 0;
        __atomic_add_fetch(&recording, 1, __ATOMIC_ACQ_REL);
    }
}

/* ---- NVTX: ranges named ATLAS_STEP=nvtx:NAME are steps ---------------------------- */

/* Per thread (tt): the NVTX push depth, and the depth at which our range
 * began (0: none), so a pop ends the step only when it closes our range. */

/* For the exit hint when no range was ever named NAME: whether one was, and the first few
 * other names seen (a typo or a different spelling is then plain to see). */
#define NVTX_SEEN 8
static int nvtx_matched;
static char nvtx_seen[NVTX_SEEN][32];
static pthread_mutex_t nvtx_seen_mu = PTHREAD_MUTEX_INITIALIZER;

static void nvtx_note_name(const char *msg)
{
    pthread_mutex_lock(&nvtx_seen_mu);
    for (int i = 0; i < NVTX_SEEN; i++) {
        if (!nvtx_seen[i][0]) {
            /* only printable text reaches the log */
            size_t n = 0;
            for (; msg[n] && n + 1 < sizeof nvtx_seen[i]; n++)
                nvtx_seen[i][n] = msg[n] >= ' ' && msg[n] < 127 ? msg[n] : '?';
            nvtx_seen[i][n] = '\0';
            break;
        }
        if (strncmp(nvtx_seen[i], msg, sizeof nvtx_seen[i] - 1) == 0)
            break;
    }
    pthread_mutex_unlock(&nvtx_seen_mu);
}

static void nvtx_push(const char *msg)
{
    tt.nvtx_depth++;
    if (!msg || mode != MODE_NVTX)
        return;
    if (strcmp(msg, nvtx_name) != 0) {
        if (!__atomic_load_n(&nvtx_matched, __ATOMIC_RELAXED))
            nvtx_note_name(msg);
    } else if (!tt.nvtx_step_depth) {
        __atomic_store_n(&nvtx_matched, 1, __ATOMIC_RELAXED);
        tt.nvtx_step_depth = tt.nvtx_depth;
        atl_trace_step_begin(nvtx_name);
    }
}

static int NVTX_API nvtx_push_a(const char *msg)
{
    nvtx_push(msg);
    return tt.nvtx_depth - 1;
}

static int NVTX_API nvtx_push_ex(const nvtxEventAttributes_t *a)
{
    nvtx_push(a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : NULL);
    return tt.nvtx_depth - 1;
}

static int NVTX_API nvtx_pop(void)
{
    if (tt.nvtx_depth <= 0)
        return -1;
    if (tt.nvtx_step_depth == tt.nvtx_depth) {
        tt.nvtx_step_depth = 0;
        atl_trace_step_end();
    }
    return --tt.nvtx_depth;
}

static int NVTX_API nvtx_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    (void)d;
    return nvtx_push_ex(a);
}

static int NVTX_API nvtx_domain_pop(nvtxDomainHandle_t d)
{
    (void)d;
    return nvtx_pop();
}

/* NVTX's injection entry (src/api.c, after initialising): fill the CORE
 * slots we care about. */
static int nvtx_injected;

int atl_trace_nvtx_inject(NvtxGetExportTableFunc_t get)
{
    nvtx_injected = 1;
    if (!get)
        return 0;
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || !cb->GetModuleFunctionTable)
        return 0;
    NvtxFunctionTable t = NULL;
    unsigned size = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &size) && t) {
        if (size > NVTX_CBID_CORE_RangePushA && t[NVTX_CBID_CORE_RangePushA])
            *t[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)nvtx_push_a;
        if (size > NVTX_CBID_CORE_RangePushEx && t[NVTX_CBID_CORE_RangePushEx])
            *t[NVTX_CBID_CORE_RangePushEx] = (NvtxFunctionPointer)nvtx_push_ex;
        if (size > NVTX_CBID_CORE_RangePop && t[NVTX_CBID_CORE_RangePop])
            *t[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)nvtx_pop;
    }
    t = NULL, size = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &size) && t) {
        if (size > NVTX_CBID_CORE2_DomainRangePushEx && t[NVTX_CBID_CORE2_DomainRangePushEx])
            *t[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)nvtx_domain_push_ex;
        if (size > NVTX_CBID_CORE2_DomainRangePop && t[NVTX_CBID_CORE2_DomainRangePop])
            *t[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)nvtx_domain_pop;
    }
    return 1;
}

/* ---- the step API of include/atlas/trace.h ------------------------------------------ */

static int api_begun; /* atlas_step_begin was called: else the exit says why there are no steps */

void atl_trace_api_step_begin(const char *name)
{
    __atomic_store_n(&api_begun, 1, __ATOMIC_RELAXED);
    if (mode == MODE_API)
        atl_trace_step_begin(name);
}

void atl_trace_api_step_end(void)
{
    if (mode == MODE_API)
        atl_trace_step_end();
}

/* ---- lifecycle --------------------------------------------------------------------- */

unsigned atl_trace_init(void)
{
    /* ATLAS_CHROME_TRACE or ATLAS_TRACE_FILE alone records too (as
     * atlas-trace --chrome does): a file setting never does nothing */
    if (!atl_cfg.trace && !atl_cfg.chrome_trace && !atl_cfg.trace_file)
        return 0;
    /* the syntax was checked (and a bad value reported) with the settings */
    const char *st = atl_cfg.step ? atl_cfg.step : "sync";
    if (strcasecmp(st, "capture") == 0) {
        mode = MODE_CAPTURE;
    } else if (strcasecmp(st, "api") == 0) {
        mode = MODE_API;
    } else if (strncasecmp(st, "nvtx:", 5) == 0) {
        mode = MODE_NVTX;
        snprintf(nvtx_name, sizeof nvtx_name, "%s", st + 5);
    } else {
        mode = MODE_SYNC;
    }
    atl_ignore_parse(&ignore_list, atl_cfg.diff_ignore);
    pthread_key_create(&exit_key, tbuf_release);
    if (atl_cfg.trace_file)
        json = atl_report_stream("ATLAS_TRACE_FILE", atl_cfg.trace_file, "no JSON lines");
    if (json)
        atl_trace_write_header(json); /* the format and its version, once */
    if (atl_cfg.chrome_trace && atl_chrome_open(atl_cfg.chrome_trace) == 0)
        tt.begin_ns = atl_chrome_now(); /* the initialising thread's; others' start at 0 */
    max_bytes = (size_t)atl_cfg.trace_max_mb << 20;
    atl_ledger_on = 1; /* pointer parameters are named alloc#N+0xOFF */
    atl_trace_on = 1;
    recording = mode == MODE_SYNC;
    return ATL_ON_LAUNCH | ATL_ON_COPY | ATL_ON_COPY_DTOH | ATL_ON_MEMSET | ATL_ON_SYNC |
           ATL_ON_CAPTURE | ATL_ON_LOOKUP | ATL_ON_ALLOC;
}

/* Why nvtx mode found no step, as far as the library can tell: NVTX never loaded us (the
 * variable unset, or naming another library), or it did and no range had the name. */
static void nvtx_hint(void)
{
    char set[ATL_STEP_NAME_MAX + 48], value[ATL_STEP_NAME_MAX + 8];
    snprintf(value, sizeof value, "nvtx:%s", nvtx_name);
    atl_hint_setting("ATLAS_STEP", value, set, sizeof set);
    if (!nvtx_injected) {
        const char *inj = getenv("NVTX_INJECTION64_PATH");
        char lib[4096];
        char *cmd = NULL;
        if (inj && *inj && !strstr(inj, "libatlastrace"))
            atl_log(ATL_WARN,
                    "step trace: %s but NVTX_INJECTION64_PATH names another library, so NVTX "
                    "ranges never reached atlastrace",
                    set);
        else if (inj && *inj)
            atl_log(ATL_WARN,
                    "step trace: %s but the program opened no NVTX range (NVTX never loaded "
                    "atlastrace, which NVTX_INJECTION64_PATH names)",
                    set);
        else if (atl_hint_library(lib, sizeof lib) == 0 &&
                 (cmd =
                      atl_hint_command((struct atl_hint_set[]){{"NVTX_INJECTION64_PATH", lib}}, 1)))
            atl_log(ATL_WARN,
                    "step trace: %s but NVTX never called atlastrace: re-run with "
                    "NVTX_INJECTION64_PATH naming it: %s",
                    set, cmd);
        else
            atl_log(ATL_WARN,
                    "step trace: %s but NVTX never called atlastrace: set NVTX_INJECTION64_PATH "
                    "to the absolute path of libatlastrace.so",
                    set);
        free(cmd);
        return;
    }
    if (__atomic_load_n(&nvtx_matched, __ATOMIC_RELAXED))
        return;
    char seen[NVTX_SEEN * 34 + 8] = "";
    size_t n = 0;
    pthread_mutex_lock(&nvtx_seen_mu);
    for (int i = 0; i < NVTX_SEEN && nvtx_seen[i][0]; i++)
        n += (size_t)snprintf(seen + n, sizeof seen - n, "%s'%s'", i ? ", " : "", nvtx_seen[i]);
    pthread_mutex_unlock(&nvtx_seen_mu);
    if (n)
        atl_log(ATL_WARN,
                "step trace: %s but the program opened no NVTX range named '%s'; the ranges it "
                "opened: %s",
                set, nvtx_name, seen);
    else
        atl_log(ATL_WARN,
                "step trace: %s but the program opened no NVTX range named '%s' (no named range "
                "at all)",
                set, nvtx_name);
}

void atl_trace_exit(void)
{
    if (!atl_trace_on)
        return;
    /* the work enqueued after the last boundary is a step of its own in sync
     * mode (a program that ends without a final sync); an open api/nvtx step
     * is closed the same way */
    if (mode == MODE_SYNC)
        sync_step("exit", TAKE_ALL, 0);
    else if (mode == MODE_CAPTURE && __atomic_exchange_n(&captures_open, 0, __ATOMIC_ACQ_REL) > 0)
        capture_step_end();
    else
        atl_trace_step_end();
    __atomic_store_n(&trace_done, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&recording, 0, __ATOMIC_RELEASE);
    if (atl_exit_lock(&step_mu, "the trace summary") != 0)
        return;
    if (mode == MODE_NVTX)
        nvtx_hint();
    char set[64];
    if (mode == MODE_API && !__atomic_load_n(&api_begun, __ATOMIC_RELAXED))
        atl_log(ATL_WARN,
                "step trace: %s but the program never called atlas_step_begin "
                "(include/atlas/trace.h): no steps were recorded",
                atl_hint_setting("ATLAS_STEP", "api", set, sizeof set));
    if (mode == MODE_CAPTURE && !__atomic_load_n(&captured_any, __ATOMIC_RELAXED))
        atl_log(ATL_WARN,
                "step trace: %s but the program captured no graph (no stream capture began): "
                "no steps were recorded",
                atl_hint_setting("ATLAS_STEP", "capture", set, sizeof set));
    /* the steps fast_step ended (identical ones) */
    for (struct tbuf *b = __atomic_load_n(&threads, __ATOMIC_ACQUIRE); b;
         b = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE)) {
        uint64_t f = __atomic_load_n(&b->fast_steps, __ATOMIC_RELAXED);
        stats.steps += f, stats.compared += f, stats.identical += f;
        __atomic_store_n(&b->fast_steps, 0, __ATOMIC_RELAXED);
    }
    atl_diff_summary(&stats, log_line_cb, NULL);
    if (json) {
        fclose(json);
        __atomic_store_n(&json, NULL, __ATOMIC_RELAXED); /* fast_step reads it without step_mu */
    }
    atl_chrome_close();
    pthread_mutex_unlock(&step_mu);
}
