#define _GNU_SOURCE
#include "stack.h"

#include "realdl.h"
#include "thread.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

/* This library's mapped range, found once: a dladdr per frame cost most of
 * an allocation's 4.5 us under the ledger. */
static uintptr_t self_lo, self_hi;

static int find_self(struct dl_phdr_info *info, size_t size, void *base)
{
    (void)size;
    if ((void *)info->dlpi_addr != base)
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    self_lo = lo;
    self_hi = hi;
    return 1;
}

static void self_find(void)
{
    Dl_info self;
    if (dladdr((void *)atl_stack_capture, &self))
        dl_iterate_phdr(find_self, self.dli_fbase);
}

/* Is `pc` inside this library? Our frames are never the answer a user wants.
 * The range is found once, by one thread (pthread_once: two threads racing
 * to write it was a data race ThreadSanitizer saw). */
static int ours(void *pc)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, self_find);
    return (uintptr_t)pc >= self_lo && (uintptr_t)pc < self_hi;
}

/* Frames of ours above the caller's: the hook, its slow path, the engine's
 * event and the feature (counted, so that `depth` frames of the caller's are
 * still asked for). */
#define OUR_FRAMES 8
#define UW_MAX (ATL_STACK_MAX + OUR_FRAMES)

/* One unwind: each frame's pc, and the CFA libgcc reports with it (that of
 * the frame below, whose return address pc is: stored at that CFA - 8 on
 * x86-64). */
struct uw {
    uintptr_t pc[UW_MAX], cfa[UW_MAX];
    int n, max;
};

static _Unwind_Reason_Code uw_step(struct _Unwind_Context *ctx, void *arg)
{
    struct uw *u = arg;
    if (u->n >= u->max)
        return _URC_END_OF_STACK;
    uintptr_t ip = _Unwind_GetIP(ctx);
    if (!ip)
        return _URC_END_OF_STACK;
    u->pc[u->n] = ip;
    u->cfa[u->n] = _Unwind_GetCFA(ctx);
    u->n++;
    return _URC_NO_REASON;
}

/* Unwinding costs about 2,400 instructions a frame (libgcc's unwinder: find
 * the frame's unwind table entry, run its CFI program), and a deep caller (a
 * Python interpreter under PyTorch) has dozens of frames: most of an
 * allocation's cost under the ledger. But a loop allocates from the same few
 * places at the same stack depth, step after step. So each unwind is kept,
 * with where each return address was found, and reused when every one of
 * those stack slots still holds the same return address: the same chain of
 * callers, read in a few loads. The slots lie between this frame and the top
 * of this thread's stack, so reading them is safe; entries are per thread (a
 * serial number, not the thread's address, which a new thread may reuse with
 * another stack).
 *
 * Many call chains meet at one stack address: a Python function calling
 * torch ops on many lines reaches the allocator at the same depth through
 * other return addresses (200 PyTorch GPT-2 steps had 132 chains). A list of
 * the chains of one address, compared in turn, fell off a cliff once it was
 * full (65 chains: every capture unwound, 14.5 k to 92.3 k instructions an
 * allocation and free). So a chain is found by key, not by search: chains
 * that meet at one address mostly keep their return addresses at the same
 * slots (the same functions' frames, of the same sizes, down to where they
 * part), so each stack address keeps the slot layouts seen there (struct
 * layout, a few), and a chain's key is its layout and the values its slots
 * hold now: read, hashed, looked up in one table. Any number of chains at an
 * address cost the same; CACHE_MAX chains are kept in all, a clock hand
 * choosing which one a new chain replaces. */
#define CACHE_BUCKETS 4096
#define CACHE_CHUNK 256
#define CACHE_MAX 4096    /* 1.7 MB at most, made as needed */
#define LAYOUT_BUCKETS 256 /* stack addresses (with thread and depth) */
#define LAYOUT_WAYS 4      /* slot layouts kept for each */
struct cached {
    uint64_t key; /* layout and values (chain_key) */
    uint64_t thread;
    uintptr_t sp;
    int n; /* frames kept (the caller's) */
    int depth;
    uint32_t next; /* the next entry of its bucket (an index + 1; 0: none) */
    void *pc[ATL_STACK_MAX];
    uintptr_t slot[ATL_STACK_MAX]; /* where pc[i] was read, as a return address */
};
/* Where the return addresses of a chain seen at (thread, sp, depth) lay. */
struct layout {
    uint64_t thread;
    uintptr_t sp;
    int depth, n;
    uint64_t hash; /* of n and the slots */
    uintptr_t slot[ATL_STACK_MAX];
};
static struct cached *chunks[CACHE_MAX / CACHE_CHUNK];
static uint32_t heads[CACHE_BUCKETS]; /* first entry of each bucket (index + 1; 0: empty) */
static struct layout *layouts;       /* LAYOUT_BUCKETS x LAYOUT_WAYS, made on first use */
static uint8_t layout_hand[LAYOUT_BUCKETS];
static uint32_t made, hand; /* entries made; the clock hand once all are */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_thread;
static uint64_t reused, unwound; /* under cache_mu */

static struct cached *entry(uint32_t id)
{
    return &chunks[(id - 1) / CACHE_CHUNK][(id - 1) % CACHE_CHUNK];
}

static uint64_t mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static unsigned layout_bucket(uint64_t thread, uintptr_t sp, int depth)
{
    uint64_t k = ((sp >> 4) ^ (thread << 40) ^ ((uint64_t)depth << 56)) * 0x9E3779B97F4A7C15ULL;
    return (unsigned)(k >> 54) & (LAYOUT_BUCKETS - 1);
}

static uint64_t layout_hash(int n, const uintptr_t *slot)
{
    uint64_t h = mix64(0x51a7, (uint64_t)n);
    for (int i = 0; i < n; i++)
        h = mix64(h, slot[i]);
    return h;
}

/* A chain's key: where it was seen, its layout, and the return addresses in its slots. */
static uint64_t chain_key(uint64_t thread, uintptr_t sp, int depth, uint64_t layout,
                          uint64_t values)
{
    return mix64(mix64(mix64(layout, values), thread), sp ^ ((uint64_t)depth << 58));
}

static int cache_get(const struct cached *c, uint64_t key, uint64_t th, uintptr_t sp, int depth,
                     struct atl_stack *s)
{
    if (c->key != key || c->thread != th || c->sp != sp || c->depth != depth)
        return 0;
    for (int i = 0; i < c->n; i++)
        if (*(volatile uintptr_t *)c->slot[i] != (uintptr_t)c->pc[i])
            return 0;
    s->n = c->n;
    memcpy(s->pc, c->pc, (size_t)c->n * sizeof *s->pc);
    return 1;
}

/* Under cache_mu: the cached chain of (th, sp, depth) whose slots hold it still, into s. */
static int cache_find(uint64_t th, uintptr_t sp, int depth, struct atl_stack *s)
{
    if (!layouts)
        return 0;
    const struct layout *l = &layouts[layout_bucket(th, sp, depth) * LAYOUT_WAYS];
    for (int w = 0; w < LAYOUT_WAYS; w++, l++) {
        if (!l->n || l->thread != th || l->sp != sp || l->depth != depth)
            continue;
        uint64_t v = 0;
        for (int i = 0; i < l->n; i++)
            v = mix64(v, *(volatile uintptr_t *)l->slot[i]);
        uint64_t key = chain_key(th, sp, depth, l->hash, v);
        for (uint32_t id = heads[key & (CACHE_BUCKETS - 1)]; id; id = entry(id)->next)
            if (cache_get(entry(id), key, th, sp, depth, s))
                return 1;
    }
    return 0;
}

/* Under cache_mu: c's layout among those of its stack address; a new one takes the place of
 * the address's oldest. */
static void layout_note(const struct cached *c, uint64_t lh)
{
    if (!layouts && !(layouts = calloc(LAYOUT_BUCKETS * LAYOUT_WAYS, sizeof *layouts)))
        return;
    unsigned b = layout_bucket(c->thread, c->sp, c->depth);
    struct layout *l = &layouts[b * LAYOUT_WAYS];
    for (int w = 0; w < LAYOUT_WAYS; w++)
        if (l[w].n == c->n && l[w].hash == lh && l[w].thread == c->thread && l[w].sp == c->sp &&
            l[w].depth == c->depth)
            return;
    struct layout *to = &l[layout_hand[b]++ % LAYOUT_WAYS];
    to->thread = c->thread, to->sp = c->sp, to->depth = c->depth, to->n = c->n, to->hash = lh;
    memcpy(to->slot, c->slot, (size_t)c->n * sizeof *c->slot);
}

/* Takes entry id out of its bucket's list. Under cache_mu. */
static void unlink_entry(uint32_t id)
{
    struct cached *c = entry(id);
    uint32_t *at = &heads[c->key & (CACHE_BUCKETS - 1)];
    while (*at && *at != id)
        at = &entry(*at)->next;
    if (*at)
        *at = c->next;
}

/* An entry for a new chain, out of any list: a new one while fewer than CACHE_MAX are made,
 * else the one under the clock hand; 0 when none can be had. Under cache_mu. */
static uint32_t entry_take(void)
{
    if (made < CACHE_MAX &&
        (chunks[made / CACHE_CHUNK] ||
         (chunks[made / CACHE_CHUNK] = calloc(CACHE_CHUNK, sizeof(struct cached)))))
        return ++made;
    if (!made)
        return 0;
    uint32_t id = hand++ % made + 1;
    unlink_entry(id);
    return id;
}

void atl_stack_capture_n(struct atl_stack *s, int depth)
{
    s->n = 0;
    if (depth <= 0)
        return;
    if (depth > ATL_STACK_MAX)
        depth = ATL_STACK_MAX;
    if (!atl_thr.stack_id)
        atl_thr.stack_id = __atomic_add_fetch(&next_thread, 1, __ATOMIC_RELAXED);
    volatile char here = 0;
    uintptr_t sp = (uintptr_t)&here;
    uint64_t th = atl_thr.stack_id;
    pthread_mutex_lock(&cache_mu);
    int hit = cache_find(th, sp, depth, s);
    if (hit)
        reused++;
    pthread_mutex_unlock(&cache_mu);
    if (hit)
        return;
    struct uw u = {.n = 0, .max = depth + OUR_FRAMES};
    _Unwind_Backtrace(uw_step, &u);
    int first = 0;
    while (first < u.n && ours((void *)u.pc[first]))
        first++;
    struct cached fresh = {.thread = th, .sp = sp, .depth = depth};
    uint64_t v = 0;
    for (int i = first; i < u.n && s->n < depth; i++) {
        s->pc[s->n] = (void *)u.pc[i];
        /* the slot holding pc[i]: 8 bytes below the CFA of the frame that
         * returns to it, which libgcc hands the callback together with pc[i]
         * (its context's CFA is the callee's, the frame just unwound) */
        fresh.pc[fresh.n] = (void *)u.pc[i];
        fresh.slot[fresh.n++] = u.cfa[i] - sizeof(uintptr_t);
        v = mix64(v, u.pc[i]);
        s->n++;
    }
    if (s->n > 0) {
        uint64_t lh = layout_hash(fresh.n, fresh.slot);
        fresh.key = chain_key(th, sp, depth, lh, v);
        pthread_mutex_lock(&cache_mu);
        uint32_t id = entry_take();
        if (id) {
            uint32_t *head = &heads[fresh.key & (CACHE_BUCKETS - 1)];
            fresh.next = *head;
            *entry(id) = fresh;
            *head = id;
            layout_note(&fresh, lh);
        }
        unwound++;
        pthread_mutex_unlock(&cache_mu);
    }
}

void atl_stack_cache_counts(uint64_t *hits, uint64_t *misses)
{
    pthread_mutex_lock(&cache_mu);
    *hits = reused;
    *misses = unwound;
    pthread_mutex_unlock(&cache_mu);
}

void atl_stack_capture(struct atl_stack *s)
{
    atl_stack_capture_n(s, ATL_STACK_MAX);
}

uint64_t atl_stack_hash(const struct atl_stack *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < s->n; i++) {
        h ^= (uint64_t)(uintptr_t)s->pc[i];
        h *= 1099511628211ULL;
    }
    return h;
}

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* The demangled name in a new malloc'd string (the caller frees it), NULL
 * when `name` is not a mangled one or cannot be demangled. */
char *atl_demangle_dup(const char *name)
{
    static demangle_fn fn;
    static int looked;
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        /* the C library's dlsym: a plain call would bind to our exported
         * one (hooks/resolve.c) */
        demangle_fn f = (demangle_fn)atl_dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (!f) {
            void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
            if (h)
                f = (demangle_fn)atl_dlsym(h, "__cxa_demangle");
        }
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    demangle_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (!f)
        return NULL;
    int status = 0;
    char *d = f(name, NULL, NULL, &status);
    if (status != 0 || !d) {
        free(d);
        return NULL;
    }
    return d;
}

const char *atl_demangle(const char *name)
{
    static __thread char *last;
    char *d = atl_demangle_dup(name);
    if (!d)
        return name;
    free(last);
    last = d;
    return d;
}

static const char *base_name(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : (path ? path : "?");
}

struct module_q {
    uintptr_t pc, base;
    char *path;
    size_t len;
    int found;
};

static char exe_path[4096];
static void exe_find(void)
{
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = '\0';
}

static int module_find(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct module_q *q = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || q->pc < lo || q->pc >= lo + ph->p_memsz)
            continue;
        q->base = info->dlpi_addr;
        q->found = 1;
        const char *name = info->dlpi_name;
        if (!name || !name[0]) { /* the main program: the loader names it "" */
            static pthread_once_t once = PTHREAD_ONCE_INIT;
            pthread_once(&once, exe_find);
            name = exe_path;
        }
        if (q->len)
            snprintf(q->path, q->len, "%s", name);
        return 1;
    }
    return 0;
}

static int first_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *c = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        c[0] = info->dlpi_adds, c[1] = info->dlpi_subs;
    return 1; /* the first object says it */
}

void atl_stack_loads(unsigned long long *adds, unsigned long long *subs)
{
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(first_counts, c);
    if (adds)
        *adds = c[0];
    if (subs)
        *subs = c[1];
}

int atl_stack_module(void *pc, char *path, size_t len, uintptr_t *base)
{
    struct module_q q = {.pc = (uintptr_t)pc, .path = path, .len = len};
    if (len)
        path[0] = '\0';
    dl_iterate_phdr(module_find, &q);
    if (q.found && base)
        *base = q.base;
    return q.found;
}

/* Libraries whose frames are plumbing between the user's code and the driver. */
int atl_stack_cuda_path(const char *path)
{
    static const char *const libs[] = {"libcuda.so",  "libcudart", "libcublas",   "libcudnn",
                                       "libnccl",     "libcufft",  "libcusparse", "libcurand",
                                       "libc10_cuda", "libnvrtc",  "libcusolver", NULL};
    const char *b = base_name(path);
    for (int i = 0; libs[i]; i++)
        if (strncmp(b, libs[i], strlen(libs[i])) == 0)
            return 1;
    return 0;
}

int atl_stack_cuda_lib(void *pc)
{
    char path[4096];
    return atl_stack_module(pc, path, sizeof path, NULL) && atl_stack_cuda_path(path);
}

int atl_stack_skipped(void *pc)
{
    return ours(pc) || atl_stack_cuda_lib(pc);
}
