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
 * places at the same stack depth, step after step. So the last unwind from
 * each stack address is kept, with where each return address was found, and
 * reused when every one of those stack slots still holds the same return
 * address: the same chain of callers, read in a few loads. The slots lie
 * between this frame and the top of this thread's stack, so reading them is
 * safe; entries are per thread (a serial number, not the thread's address,
 * which a new thread may reuse with another stack). */
/* Several call chains can meet at one stack address: a Python function
 * calling two torch ops on two lines reaches the allocator at the same depth
 * through different return addresses. So the entries of one stack address
 * (and thread) share a bucket's list, which holds up to BUCKET_MAX chains:
 * eight ways an address, as this cache first had, let 200 PyTorch GPT-2
 * steps unwind 4,708 times where 132 chains were all they had (H200; this
 * cache: 132 unwinds of 149,471 stacks). Entries come in chunks, made as chains are seen;
 * once CACHE_MAX are made, a new chain takes the place of the bucket's last
 * when its bucket is full, else of the entry under a clock hand (the entries
 * of a thread that ended stay until then). */
#define CACHE_BUCKETS 1024
#define CACHE_CHUNK 256
#define CACHE_MAX 4096 /* 1.7 MB at most, made as needed */
#define BUCKET_MAX 64  /* chains one lookup may compare */
struct cached {
    uint64_t thread;
    uintptr_t sp;
    int n; /* frames kept (the caller's) */
    int depth;
    uint32_t next;   /* the next entry of its bucket (an index + 1; 0: none) */
    uint32_t bucket; /* its bucket */
    void *pc[ATL_STACK_MAX];
    uintptr_t slot[ATL_STACK_MAX]; /* where pc[i] was read, as a return address */
};
static struct cached *chunks[CACHE_MAX / CACHE_CHUNK];
static uint32_t heads[CACHE_BUCKETS]; /* first entry of each bucket (index + 1; 0: empty) */
static uint16_t lens[CACHE_BUCKETS];
static uint32_t made, hand; /* entries made; the clock hand once all are */
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_thread;
static uint64_t reused, unwound; /* under cache_mu */

static struct cached *entry(uint32_t id)
{
    return &chunks[(id - 1) / CACHE_CHUNK][(id - 1) % CACHE_CHUNK];
}

static unsigned bucket_of(uint64_t thread, uintptr_t sp, int depth)
{
    uint64_t k = ((sp >> 4) ^ (thread << 40) ^ ((uint64_t)depth << 56)) * 0x9E3779B97F4A7C15ULL;
    return (unsigned)(k >> 54) & (CACHE_BUCKETS - 1);
}

static int cache_get(const struct cached *c, uint64_t th, uintptr_t sp, int depth,
                     struct atl_stack *s)
{
    if (c->thread != th || c->sp != sp || c->depth != depth)
        return 0;
    for (int i = 0; i < c->n; i++)
        if (*(volatile uintptr_t *)c->slot[i] != (uintptr_t)c->pc[i])
            return 0;
    s->n = c->n;
    memcpy(s->pc, c->pc, (size_t)c->n * sizeof *s->pc);
    return 1;
}

/* Takes entry id out of its bucket's list. Under cache_mu. */
static void unlink_entry(uint32_t id)
{
    struct cached *c = entry(id);
    uint32_t *at = &heads[c->bucket];
    while (*at && *at != id)
        at = &entry(*at)->next;
    if (*at) {
        *at = c->next;
        lens[c->bucket]--;
    }
}

/* An entry for a new chain of bucket b, out of any list: a new one while
 * fewer than CACHE_MAX are made, else the bucket's last when it is full,
 * else the one under the clock hand; 0 when none can be had. Under
 * cache_mu. */
static uint32_t entry_take(unsigned b)
{
    uint32_t id;
    if (lens[b] >= BUCKET_MAX) {
        for (id = heads[b]; entry(id)->next; id = entry(id)->next)
            ;
    } else if (made < CACHE_MAX &&
               (chunks[made / CACHE_CHUNK] ||
                (chunks[made / CACHE_CHUNK] = calloc(CACHE_CHUNK, sizeof(struct cached))))) {
        return ++made;
    } else if (made) {
        id = hand++ % made + 1;
    } else {
        return 0;
    }
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
    unsigned b = bucket_of(atl_thr.stack_id, sp, depth);
    int hit = 0;
    pthread_mutex_lock(&cache_mu);
    for (uint32_t id = heads[b]; id && !hit; id = entry(id)->next)
        hit = cache_get(entry(id), atl_thr.stack_id, sp, depth, s);
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
    struct cached fresh = {.thread = atl_thr.stack_id, .sp = sp, .depth = depth, .bucket = b};
    for (int i = first; i < u.n && s->n < depth; i++) {
        s->pc[s->n] = (void *)u.pc[i];
        /* the slot holding pc[i]: 8 bytes below the CFA of the frame that
         * returns to it, which libgcc hands the callback together with pc[i]
         * (its context's CFA is the callee's, the frame just unwound) */
        fresh.pc[fresh.n] = (void *)u.pc[i];
        fresh.slot[fresh.n++] = u.cfa[i] - sizeof(uintptr_t);
        s->n++;
    }
    if (s->n > 0) {
        pthread_mutex_lock(&cache_mu);
        uint32_t id = entry_take(b);
        if (id) {
            fresh.next = heads[b];
            *entry(id) = fresh;
            heads[b] = id;
            lens[b]++;
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

/* Libraries whose frames are plumbing between the user's code and the driver. */
int atl_stack_cuda_lib(void *pc)
{
    static const char *const libs[] = {"libcuda.so",  "libcudart", "libcublas",   "libcudnn",
                                       "libnccl",     "libcufft",  "libcusparse", "libcurand",
                                       "libc10_cuda", "libnvrtc",  "libcusolver", NULL};
    Dl_info it;
    if (!dladdr(pc, &it) || !it.dli_fname)
        return 0;
    const char *b = base_name(it.dli_fname);
    for (int i = 0; libs[i]; i++)
        if (strncmp(b, libs[i], strlen(libs[i])) == 0)
            return 1;
    return 0;
}

int atl_stack_skipped(void *pc)
{
    return ours(pc) || atl_stack_cuda_lib(pc);
}
