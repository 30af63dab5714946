/*
 * fake_core.c: the call counters, the driver lock, handles, and the model
 * every area shares: contexts, allocations, modules and kernels, arrays,
 * copy descriptors, graph ops and stream submission.
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

/* ------------------------------------------------------------------------ */
/* Exported symbols: call counts, fail_next, deinitialisation                */
/* ------------------------------------------------------------------------ */

static const char *const sym_names[SYM_COUNT] = {
#define X(s) #s,
    FAKE_SYMBOLS(X)
#undef X
#define FAKE_PT(api, ver, sym, sfx, params, args) #sym, #sym "_" #sfx,
#include "ptds.def"
#undef FAKE_PT
};

static atomic_ulong sym_calls[SYM_COUNT];
static atomic_int sym_fail[SYM_COUNT];
static atomic_int sym_checked[SYM_COUNT];
static atomic_int g_deinit;

static int sym_index(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < SYM_COUNT; i++)
        if (strcmp(sym_names[i], name) == 0)
            return i;
    return -1;
}

/* A mistyped ENTER() would count calls under the wrong name, which a test
 * would then trust; check the name against __func__ once per symbol. */
static void sym_check_name(int idx, const char *func)
{
    if (strcmp(sym_names[idx], func) != 0) {
        fprintf(stderr, "fakecuda: ENTER(%s) inside %s\n", sym_names[idx], func);
        abort();
    }
    atomic_store(&sym_checked[idx], 1);
}

CUresult sym_enter(int idx, const char *func)
{
    if (__builtin_expect(!atomic_load_explicit(&sym_checked[idx], memory_order_relaxed), 0))
        sym_check_name(idx, func);
    atomic_fetch_add_explicit(&sym_calls[idx], 1, memory_order_relaxed);
    if (__builtin_expect(atomic_load_explicit(&sym_fail[idx], memory_order_relaxed) != 0, 0)) {
        int err = atomic_exchange(&sym_fail[idx], 0);
        if (err)
            return (CUresult)err;
    }
    if (__builtin_expect(atomic_load_explicit(&g_deinit, memory_order_relaxed), 0))
        return CUDA_ERROR_DEINITIALIZED;
    return CUDA_SUCCESS;
}

int fake_fail_next(const char *symbol, CUresult err)
{
    int i = sym_index(symbol);
    if (i < 0)
        return -1;
    atomic_store(&sym_fail[i], (int)err);
    return 0;
}

unsigned long fake_calls(const char *symbol)
{
    int i = sym_index(symbol);
    return i < 0 ? 0 : atomic_load(&sym_calls[i]);
}

void fake_reset_counts(void)
{
    for (int i = 0; i < SYM_COUNT; i++)
        atomic_store(&sym_calls[i], 0);
}

void fake_set_deinitialized(int on)
{
    atomic_store(&g_deinit, on != 0);
}

/* ------------------------------------------------------------------------ */
/* Global state: one lock around every table; never held while a kernel runs */
/* ------------------------------------------------------------------------ */

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
int g_initialized;
size_t g_total_mem = (size_t)80 << 30;
size_t g_used_mem;

void fake_set_total_mem(size_t bytes)
{
    LOCK();
    g_total_mem = bytes;
    UNLOCK();
}

struct hdr **g_handles;
size_t g_nhandles, g_caphandles;

int handle_add(struct hdr *h)
{
    if (g_nhandles == g_caphandles) {
        size_t ncap = g_caphandles ? 2 * g_caphandles : 64;
        struct hdr **n = realloc(g_handles, ncap * sizeof *n);
        if (!n)
            return -1;
        g_handles = n;
        g_caphandles = ncap;
    }
    g_handles[g_nhandles++] = h;
    return 0;
}

void handle_remove(struct hdr *h)
{
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i] == h) {
            g_handles[i] = g_handles[--g_nhandles];
            return;
        }
}

/* The object behind handle p if it is live and of kind magic, else NULL. */
void *handle_get(const void *p, uint32_t magic)
{
    if (!p)
        return NULL;
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i] == p)
            return g_handles[i]->magic == magic ? g_handles[i]->owner : NULL;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                  */
/* ------------------------------------------------------------------------ */

struct fake_ctx g_primary = {.h = {MAGIC_CTX, &g_primary}, .primary = 1};

__thread struct fake_ctx *tls_ctx[CTX_STACK_MAX];
__thread int tls_depth;

struct fake_ctx *ctx_current(void)
{
    return tls_depth > 0 ? tls_ctx[tls_depth - 1] : NULL;
}

int err_is_sticky(CUresult e)
{
    switch (e) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
        return 1;
    default:
        return 0;
    }
}

/* Caller holds g_lock. Checks init and that ctx is usable. */
CUresult ctx_check_locked(struct fake_ctx *ctx)
{
    if (!g_initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx || !ctx->alive)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx->sticky)
        return ctx->sticky;
    return CUDA_SUCCESS;
}

/* The calling thread's current context, usable, or the error a real driver
 * gives: not initialised, no context, or the context's sticky fault. */
CUresult ctx_enter(struct fake_ctx **out)
{
    struct fake_ctx *ctx = ctx_current();
    LOCK();
    CUresult r = ctx_check_locked(ctx);
    UNLOCK();
    *out = ctx;
    return r;
}

/* A synchronising call: report the pending fault once, and keep the
 * context-destroying ones. */
CUresult ctx_sync_locked(struct fake_ctx *ctx)
{
    if (ctx->sticky)
        return ctx->sticky;
    CUresult r = ctx->pending;
    ctx->pending = CUDA_SUCCESS;
    if (err_is_sticky(r))
        ctx->sticky = r;
    return r;
}

CUresult ctx_sync(struct fake_ctx *ctx)
{
    LOCK();
    CUresult r = ctx_sync_locked(ctx);
    UNLOCK();
    return r;
}

void ctx_fault(struct fake_ctx *ctx, CUresult err)
{
    LOCK();
    if (!ctx->pending && !ctx->sticky)
        ctx->pending = err;
    UNLOCK();
}

/* ------------------------------------------------------------------------ */
/* Allocations (device, managed, pinned host, registered host)               */
/* ------------------------------------------------------------------------ */

struct alloc *g_allocs;
size_t g_nallocs, g_capallocs;

/* Exact base -> slot in g_allocs, so cuMemFree and most lookups are O(1)
 * with a million allocations live (the allocation benchmark measures the
 * preload's cost, not ours). */
struct atl_addrmap g_byb;
/* Every allocation ever made lies in [g_lo, g_hi) (never shrunk): a host
 * pointer a copy is given is answered "none" without a walk over all of
 * them (a program under red zones keeps thousands of freed allocations in
 * its quarantine). */
static uintptr_t g_lo = UINTPTR_MAX, g_hi;

static int holds(const struct alloc *a, uintptr_t p)
{
    return p >= a->base && (p - a->base < a->size || (a->size == 0 && p == a->base));
}

/* The allocation holding p. Our allocations start on ALLOC_ALIGN, so the
 * bases of the 64 aligned addresses at or below p are tried through the hash
 * first (a red-zone check reads just past a small allocation, with a
 * million others live); then every record, newest first. */
struct alloc *alloc_find_locked(uintptr_t p)
{
    /* the allocation found last (the red-zone checks' verdict ring, deep in
     * one page-locked allocation, is looked up at every check) */
    static size_t last;
    if (p < g_lo || p > g_hi)
        return NULL;
    if (last < g_nallocs && holds(&g_allocs[last], p))
        return &g_allocs[last];
    uintptr_t b = p & ~(uintptr_t)(ALLOC_ALIGN - 1);
    for (int k = 0; k < 64 && b; k++, b -= ALLOC_ALIGN) {
        size_t i;
        if (atl_addrmap_get(&g_byb, b, &i)) {
            struct alloc *a = &g_allocs[i];
            if (holds(a, p))
                return a;
            break; /* allocations do not overlap: nothing lower holds p */
        }
    }
    for (size_t i = g_nallocs; i-- > 0;) {
        struct alloc *a = &g_allocs[i];
        if (p >= a->base && (p - a->base < a->size || (a->size == 0 && p == a->base))) {
            last = i;
            return a;
        }
    }
    return NULL;
}

/* Is [p, p+n) inside one allocation the device can reach? */
static int dev_range_ok_locked(uintptr_t p, size_t n)
{
    struct alloc *a = alloc_find_locked(p);
    return a && n <= a->size - (p - a->base);
}

static int dev_range_ok(uintptr_t p, size_t n)
{
    LOCK();
    int ok = dev_range_ok_locked(p, n);
    UNLOCK();
    return ok;
}

int alloc_add_locked(uintptr_t base, size_t size, size_t charged, enum alloc_kind kind,
                     struct fake_ctx *ctx)
{
    if (g_nallocs == g_capallocs) {
        size_t ncap = g_capallocs ? 2 * g_capallocs : 256;
        struct alloc *n = realloc(g_allocs, ncap * sizeof *n);
        if (!n)
            return -1;
        g_allocs = n;
        g_capallocs = ncap;
    }
    if (atl_addrmap_put(&g_byb, base, g_nallocs) != 0)
        return -1;
    if (base < g_lo)
        g_lo = base;
    if (base + size > g_hi)
        g_hi = base + size;
    g_allocs[g_nallocs++] = (struct alloc){base, size, charged, kind, ctx};
    g_used_mem += charged;
    return 0;
}

void alloc_remove_locked(struct alloc *a)
{
    g_used_mem -= a->charged;
    if (a->kind != AK_REGISTERED && a->kind != AK_VMM)
        free((void *)a->base);
    atl_addrmap_del(&g_byb, a->base);
    size_t last = --g_nallocs;
    if (a != &g_allocs[last]) { /* the last record moves into a's slot */
        atl_addrmap_put(&g_byb, g_allocs[last].base, (size_t)(a - g_allocs)); /* overwrites */
        *a = g_allocs[last];
    }
}

CUresult mem_alloc(struct fake_ctx *ctx, uintptr_t *out, size_t size, enum alloc_kind kind)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t rounded = (size + ALLOC_ALIGN - 1) & ~(size_t)(ALLOC_ALIGN - 1);
    if (rounded < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t charged = kind == AK_HOST ? 0 : rounded;
    LOCK();
    if (charged > g_total_mem - g_used_mem) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_used_mem += charged; /* reserve, so racing threads cannot overshoot */
    UNLOCK();
    void *p = NULL;
    if (posix_memalign(&p, ALLOC_ALIGN, rounded + ALLOC_SLACK) != 0) {
        LOCK();
        g_used_mem -= charged;
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(p, 0, rounded + ALLOC_SLACK);
    LOCK();
    g_used_mem -= charged;
    int bad = alloc_add_locked((uintptr_t)p, size, charged, kind, ctx);
    UNLOCK();
    if (bad) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = (uintptr_t)p;
    return CUDA_SUCCESS;
}

/* Free an allocation by its exact base; kinds says which kinds qualify. */
CUresult mem_free(uintptr_t p, unsigned kinds)
{
    LOCK();
    size_t i;
    if (atl_addrmap_get(&g_byb, p, &i)) {
        struct alloc *a = &g_allocs[i];
        if (kinds & (1u << a->kind)) {
            alloc_remove_locked(a);
            UNLOCK();
            return CUDA_SUCCESS;
        }
    }
    UNLOCK();
    return CUDA_ERROR_INVALID_VALUE;
}

/* A context's memory goes with it (cuCtxDestroy, last primary release,
 * primary reset), as on the real driver. */
void ctx_free_allocs_locked(struct fake_ctx *ctx)
{
    for (size_t i = 0; i < g_nallocs;) {
        if (g_allocs[i].ctx == ctx && g_allocs[i].kind != AK_REGISTERED &&
            g_allocs[i].kind != AK_VMM) /* VMM memory outlives contexts */
            alloc_remove_locked(&g_allocs[i]);
        else
            i++;
    }
}

/* For the red-zone twin (fake_redzone.c): 1 when [p, p + n) lies in live
 * page-locked host memory, which a real GPU could reach through its mapping;
 * else the twin faults as the GPU would. */
int fake_host_mapped(const void *p, size_t n)
{
    LOCK();
    const struct alloc *a = alloc_find_locked((uintptr_t)p);
    int ok = a && (a->kind == AK_HOST || a->kind == AK_REGISTERED) && n &&
             holds(a, (uintptr_t)p + n - 1);
    UNLOCK();
    return ok;
}

size_t fake_live_allocations(void)
{
    size_t n = 0;
    LOCK();
    for (size_t i = 0; i < g_nallocs; i++)
        if (g_allocs[i].kind == AK_DEVICE || g_allocs[i].kind == AK_MANAGED)
            n++;
    UNLOCK();
    return n;
}

/* ------------------------------------------------------------------------ */
/* Modules, libraries, functions, kernels                                    */
/* ------------------------------------------------------------------------ */

static struct named_image *g_named;

static int image_ok(const struct fake_image *img)
{
    if (!img || img->magic != FAKE_IMAGE_MAGIC || (img->nkernels && !img->kernels))
        return 0;
    for (unsigned i = 0; i < img->nkernels; i++) {
        const struct fake_kernel_def *k = &img->kernels[i];
        if (!k->name || !k->fn || (k->nparams && !k->param_sizes))
            return 0;
    }
    return 1;
}

CUresult fake_register_image(const char *name, const struct fake_image *img)
{
    if (!name || !image_ok(img))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    for (struct named_image *n = g_named; n; n = n->next)
        if (strcmp(n->name, name) == 0) {
            n->img = img;
            UNLOCK();
            return CUDA_SUCCESS;
        }
    struct named_image *n = calloc(1, sizeof *n);
    char *copy = strdup(name);
    if (!n || !copy) {
        free(n);
        free(copy);
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n->name = copy;
    n->img = img;
    n->next = g_named;
    g_named = n;
    UNLOCK();
    return CUDA_SUCCESS;
}

static size_t param_align(size_t size)
{
    size_t a = 1;
    while (a < size && a < 8)
        a <<= 1;
    return a;
}

/* The kernel handles of the last module unloaded, kept for the next module
 * with as many kernels: its kernels get the old addresses, as a real driver
 * may hand them out, and interposers' per-handle caches must cope. (malloc
 * often reuses the memory anyway; a sanitizer's allocator does not.) */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_fn *spare_fns;
static unsigned spare_n;

static void fns_put(struct fake_fn *fns, unsigned n)
{
    pthread_mutex_lock(&spare_lock);
    free(spare_fns);
    spare_fns = fns, spare_n = n;
    pthread_mutex_unlock(&spare_lock);
}

static struct fake_fn *fns_get(unsigned n)
{
    struct fake_fn *f = NULL;
    pthread_mutex_lock(&spare_lock);
    if (spare_fns && spare_n == n) {
        f = spare_fns, spare_fns = NULL;
        memset(f, 0, n * sizeof *f);
    }
    pthread_mutex_unlock(&spare_lock);
    return f ? f : calloc(n, sizeof *f);
}

void mod_free(struct fake_mod *m)
{
    if (!m)
        return;
    if (m->fns) {
        for (unsigned i = 0; i < m->img->nkernels; i++)
            free(m->fns[i].offsets);
        fns_put(m->fns, m->img->nkernels ? m->img->nkernels : 1);
    }
    if (m->dl)
        dlclose(m->dl);
    free(m);
}

/* Build a module from an image; registers its handles. */
CUresult mod_create(const struct fake_image *img, void *dl, int is_library, struct fake_mod **out)
{
    if (!image_ok(img))
        return CUDA_ERROR_INVALID_IMAGE;
    struct fake_mod *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->as_module = (struct hdr){MAGIC_MODULE, m};
    m->as_library = (struct hdr){MAGIC_LIBRARY, m};
    m->is_library = is_library;
    m->img = img;
    m->fns = fns_get(img->nkernels ? img->nkernels : 1);
    if (!m->fns) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (unsigned i = 0; i < img->nkernels; i++) {
        struct fake_fn *f = &m->fns[i];
        const struct fake_kernel_def *k = &img->kernels[i];
        f->as_func = (struct hdr){MAGIC_FUNC, f};
        f->as_kernel = (struct hdr){MAGIC_KERNEL, f};
        f->def = k;
        f->mod = m;
        f->offsets = calloc(k->nparams ? k->nparams : 1, sizeof *f->offsets);
        if (!f->offsets) {
            mod_free(m);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        size_t off = 0;
        for (unsigned p = 0; p < k->nparams; p++) {
            size_t al = k->param_aligns && k->param_aligns[p] ? k->param_aligns[p]
                                                              : param_align(k->param_sizes[p]);
            off = (off + al - 1) / al * al;
            f->offsets[p] = off;
            off += k->param_sizes[p];
        }
        f->argbytes = off;
    }
    m->dl = dl;
    LOCK();
    int bad = handle_add(is_library ? &m->as_library : &m->as_module);
    if (is_library)
        bad |= handle_add(&m->as_module);
    for (unsigned i = 0; i < img->nkernels && !bad; i++) {
        bad |= handle_add(&m->fns[i].as_func);
        if (is_library)
            bad |= handle_add(&m->fns[i].as_kernel);
    }
    UNLOCK();
    if (bad)
        return CUDA_ERROR_OUT_OF_MEMORY; /* leaks the partial module: tool OOM only */
    *out = m;
    return CUDA_SUCCESS;
}

void mod_unregister_locked(struct fake_mod *m)
{
    handle_remove(&m->as_module);
    handle_remove(&m->as_library);
    for (unsigned i = 0; i < m->img->nkernels; i++) {
        handle_remove(&m->fns[i].as_func);
        handle_remove(&m->fns[i].as_kernel);
    }
}

/* cuModuleLoad / cuLibraryLoadFromFile: a registered name, else a shared
 * object exporting fake_image_of_module. */
CUresult mod_load_named(const char *name, int is_library, struct fake_mod **out)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    const struct fake_image *img = NULL;
    LOCK();
    for (struct named_image *n = g_named; n; n = n->next)
        if (strcmp(n->name, name) == 0)
            img = n->img;
    UNLOCK();
    if (img)
        return mod_create(img, NULL, is_library, out);
    FILE *probe = fopen(name, "rb");
    if (!probe)
        return CUDA_ERROR_FILE_NOT_FOUND;
    fclose(probe);
    void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return CUDA_ERROR_INVALID_IMAGE;
    img = dlsym(dl, "fake_image_of_module");
    CUresult r = img ? mod_create(img, dl, is_library, out) : CUDA_ERROR_INVALID_IMAGE;
    if (r != CUDA_SUCCESS)
        dlclose(dl);
    return r;
}

/* A CUfunction or a CUkernel (cuLaunchKernel accepts either). */
struct fake_fn *fn_from_handle_locked(const void *h)
{
    struct fake_fn *f = handle_get(h, MAGIC_FUNC);
    return f ? f : handle_get(h, MAGIC_KERNEL);
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */
/* ------------------------------------------------------------------------ */

size_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

struct fake_array *array_get(CUarray a)
{
    LOCK();
    struct fake_array *r = handle_get(a, MAGIC_ARRAY);
    UNLOCK();
    return r;
}

/* ------------------------------------------------------------------------ */
/* Copies and memsets: one descriptor each, executed now or recorded          */
/* ------------------------------------------------------------------------ */

/* Resolve one side to base address, row pitch and slice height; check that
 * device memory ranges lie inside an allocation and array ranges inside the
 * array, as the real driver does (CUDA_ERROR_INVALID_VALUE otherwise). */
static CUresult xfer_side_resolve(const struct xfer_side *s, size_t w, size_t h, size_t d,
                                  unsigned char **base, size_t *pitch, size_t *height)
{
    size_t p = s->pitch, hh = s->height;
    if (s->type == CU_MEMORYTYPE_ARRAY) {
        struct fake_array *a = array_get(s->arr);
        if (!a)
            return CUDA_ERROR_INVALID_HANDLE;
        if (s->linear) {
            size_t all = a->row_bytes * a->height * a->depth;
            if (s->x > all || w > all - s->x || h != 1 || d != 1)
                return CUDA_ERROR_INVALID_VALUE;
            *base = a->data + s->x;
            *pitch = w;
            *height = 1;
            return CUDA_SUCCESS;
        }
        if (s->x + w > a->row_bytes || s->y + h > a->height || s->z + d > a->depth)
            return CUDA_ERROR_INVALID_VALUE;
        *base = a->data;
        *pitch = a->row_bytes;
        *height = a->height;
        return CUDA_SUCCESS;
    }
    if (p == 0)
        p = w;
    if (hh == 0)
        hh = h;
    if ((h > 1 || d > 1) && p < w)
        return CUDA_ERROR_INVALID_VALUE;
    if (d > 1 && hh < h)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t b;
    switch (s->type) {
    case CU_MEMORYTYPE_HOST:
        b = (uintptr_t)s->host;
        break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        b = (uintptr_t)s->dev;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!b && w && h && d)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->type == CU_MEMORYTYPE_DEVICE && w && h && d) {
        uintptr_t first = b + (s->z * hh + s->y) * p + s->x;
        uintptr_t last = b + ((s->z + d - 1) * hh + s->y + h - 1) * p + s->x + w;
        if (!dev_range_ok(first, last - first))
            return CUDA_ERROR_INVALID_VALUE;
    }
    *base = (unsigned char *)b;
    *pitch = p;
    *height = hh;
    return CUDA_SUCCESS;
}

CUresult xfer_check(const struct xfer *x)
{
    unsigned char *b;
    size_t p, hh;
    TRY(xfer_side_resolve(&x->src, x->w, x->h, x->d, &b, &p, &hh));
    TRY(xfer_side_resolve(&x->dst, x->w, x->h, x->d, &b, &p, &hh));
    return CUDA_SUCCESS;
}

CUresult xfer_exec(const struct xfer *x)
{
    unsigned char *sb, *db;
    size_t sp, sh, dp, dh;
    TRY(xfer_side_resolve(&x->src, x->w, x->h, x->d, &sb, &sp, &sh));
    TRY(xfer_side_resolve(&x->dst, x->w, x->h, x->d, &db, &dp, &dh));
    if (x->w == 0)
        return CUDA_SUCCESS; /* a zero-byte copy may name no memory at all */
    for (size_t z = 0; z < x->d; z++)
        for (size_t y = 0; y < x->h; y++) {
            const unsigned char *s =
                sb + ((x->src.z + z) * sh + x->src.y + y) * sp + (x->src.linear ? 0 : x->src.x);
            unsigned char *dd =
                db + ((x->dst.z + z) * dh + x->dst.y + y) * dp + (x->dst.linear ? 0 : x->dst.x);
            memmove(dd, s, x->w);
        }
    return CUDA_SUCCESS;
}

CUresult setop_check(const struct setop *s)
{
    if (s->p % s->esize)
        return CUDA_ERROR_INVALID_VALUE;
    if (!s->w || !s->h)
        return CUDA_SUCCESS;
    size_t row = s->w * s->esize;
    if (s->h > 1 && s->pitch < row)
        return CUDA_ERROR_INVALID_VALUE;
    size_t span = (s->h - 1) * s->pitch + row;
    return dev_range_ok(s->p, span) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static void setop_exec(const struct setop *s)
{
    if (s->w == 0)
        return; /* a zero-element memset may name no memory at all */
    for (size_t y = 0; y < s->h; y++) {
        unsigned char *row = (unsigned char *)(uintptr_t)s->p + y * s->pitch;
        if (s->esize == 1) {
            memset(row, (int)(s->value & 0xff), s->w);
        } else if (s->esize == 2) {
            uint16_t v = (uint16_t)s->value;
            for (size_t i = 0; i < s->w; i++)
                memcpy(row + 2 * i, &v, 2);
        } else {
            uint32_t v = s->value;
            for (size_t i = 0; i < s->w; i++)
                memcpy(row + 4 * i, &v, 4);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Graph ops, graphs, streams, events                                        */
/* ------------------------------------------------------------------------ */

uint64_t g_capture_ids;

struct op *op_clone(const struct op *o)
{
    struct op *n = malloc(sizeof *n);
    if (!n)
        return NULL;
    *n = *o;
    if (o->kind == OP_KERNEL) {
        n->args = malloc(o->fn->argbytes ? o->fn->argbytes : 1);
        if (!n->args) {
            free(n);
            return NULL;
        }
        memcpy(n->args, o->args, o->fn->argbytes);
    }
    return n;
}

void op_free(struct op *o)
{
    if (o) {
        free(o->args);
        free(o);
    }
}

CUresult graph_append_locked(struct fake_graph *g, const struct op *o)
{
    if (g->nops == g->capops) {
        size_t ncap = g->capops ? 2 * g->capops : 16;
        struct op **n = realloc(g->ops, ncap * sizeof *n);
        if (!n)
            return CUDA_ERROR_OUT_OF_MEMORY;
        g->ops = n;
        g->capops = ncap;
    }
    struct op *c = op_clone(o);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->ops[g->nops++] = c;
    return CUDA_SUCCESS;
}

void graph_free(struct fake_graph *g)
{
    for (size_t i = 0; i < g->nops; i++)
        op_free(g->ops[i]);
    free(g->ops);
    free(g);
}

size_t fake_graph_num_ops(CUgraph hg)
{
    LOCK();
    struct fake_graph *g = handle_get(hg, MAGIC_GRAPH);
    size_t n = g ? g->nops : (size_t)-1;
    UNLOCK();
    return n;
}

static int is_special_stream(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

__thread int fake_pt_call;
/* this thread's per-thread stream object, once a capture began on it (fake_internal.h) */
static __thread struct fake_stream *pt_stream;

int fake_is_pt_stream(CUstream s)
{
    return s == CU_STREAM_PER_THREAD || (s == NULL && fake_pt_call);
}

/* The thread's per-thread stream object in ctx; made when `make` (caller holds g_lock). */
static struct fake_stream *pt_stream_locked(struct fake_ctx *ctx, int make)
{
    if (pt_stream && pt_stream->ctx == ctx && handle_get(pt_stream, MAGIC_STREAM) == pt_stream)
        return pt_stream;
    if (!make)
        return NULL;
    struct fake_stream *s = fake_stream_new_locked(ctx, 0, 0);
    return s ? (pt_stream = s) : NULL;
}

struct fake_stream *fake_pt_stream_make_locked(struct fake_ctx *ctx)
{
    return pt_stream_locked(ctx, 1);
}

/* The context and stream object for a stream argument (NULL stream object
 * for the default streams, but a per-thread stream that captured:
 * fake_internal.h). Caller holds g_lock. */
CUresult stream_resolve_locked(CUstream s, struct fake_ctx **ctx, struct fake_stream **st)
{
    if (!g_initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (is_special_stream(s)) {
        *ctx = ctx_current();
        *st = *ctx && fake_is_pt_stream(s) ? pt_stream_locked(*ctx, 0) : NULL;
    } else {
        *st = handle_get(s, MAGIC_STREAM);
        if (!*st)
            return CUDA_ERROR_INVALID_HANDLE;
        *ctx = (*st)->ctx;
    }
    return ctx_check_locked(*ctx);
}

CUresult op_run(struct fake_ctx *ctx, const struct op *o, const void *src_args)
{
    switch (o->kind) {
    case OP_KERNEL: {
        const struct fake_kernel_def *k = o->fn->def;
        void *ptrs[k->nparams ? k->nparams : 1];
        for (unsigned i = 0; i < k->nparams; i++)
            ptrs[i] = (unsigned char *)src_args + o->fn->offsets[i];
        struct fake_launch l = o->launch;
        l.ctx = (CUcontext)ctx;
        CUresult r = k->fn(&l, ptrs);
        if (r != CUDA_SUCCESS)
            ctx_fault(ctx, r);
        return CUDA_SUCCESS;
    }
    case OP_COPY:
        return xfer_exec(&o->x);
    case OP_SET:
        setop_exec(&o->s);
        return CUDA_SUCCESS;
    case OP_HOST:
        o->hfn(o->hdata);
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_UNKNOWN;
}

/* Enqueue one operation on a stream: recorded if the stream captures, else
 * run now. A context with a fault pending runs nothing more (the GPU would
 * not), but the enqueue itself still succeeds, as an async call does.
 * For kernels, params points at the caller's argument pointers. */
/* A driver busy inside its own lock: FAKE_LAUNCH_HOLD_MS=MS makes every
 * enqueue of the kernel FAKE_LAUNCH_HOLD_KERNEL (a name; default any) hold
 * the driver lock MS milliseconds (the exit tests: a signal handler that
 * calls exit() interrupts a launch that holds it). */
static void launch_hold(const struct op *o)
{
    static long ms = -1;
    static const char *only;
    if (ms < 0) {
        const char *v = getenv("FAKE_LAUNCH_HOLD_MS");
        only = getenv("FAKE_LAUNCH_HOLD_KERNEL");
        ms = v ? strtol(v, NULL, 10) : 0;
    }
    if (ms <= 0 || o->kind != OP_KERNEL ||
        (only && (!o->fn || !o->fn->def || strcmp(o->fn->def->name, only) != 0)))
        return;
    struct timespec t = {(time_t)(ms / 1000), (ms % 1000) * 1000000L};
    nanosleep(&t, NULL); /* a signal may cut it short, as it may a real call */
}

CUresult stream_submit(CUstream s, struct op *o, void **params)
{
    struct fake_ctx *ctx;
    struct fake_stream *st;
    LOCK();
    launch_hold(o);
    CUresult r = stream_resolve_locked(s, &ctx, &st);
    if (r == CUDA_SUCCESS && !st && s != CU_STREAM_PER_THREAD && ctx->ncapturing > 0 &&
        ctx_invalidate_blocking_captures_locked(ctx))
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (r != CUDA_SUCCESS) {
        UNLOCK();
        return r;
    }
    if (st && st->cap) {
        if (st->cap->invalidated) {
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else if (o->kind == OP_KERNEL) {
            /* freeze the argument bytes now: that is what a graph does */
            unsigned char stackbuf[256];
            size_t n = o->fn->argbytes;
            unsigned char *buf = n <= sizeof stackbuf ? stackbuf : malloc(n);
            if (!buf) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                memset(buf, 0, n);
                for (unsigned i = 0; i < o->fn->def->nparams; i++)
                    memcpy(buf + o->fn->offsets[i], params[i], o->fn->def->param_sizes[i]);
                o->args = buf;
                r = graph_append_locked(st->cap->graph, o);
                o->args = NULL;
                if (buf != stackbuf)
                    free(buf);
            }
        } else {
            r = graph_append_locked(st->cap->graph, o);
        }
        UNLOCK();
        return r;
    }
    int dead = ctx->pending != CUDA_SUCCESS && err_is_sticky(ctx->pending);
    UNLOCK();
    if (dead)
        return CUDA_SUCCESS;
    if (o->kind == OP_KERNEL) {
        const struct fake_kernel_def *k = o->fn->def;
        struct fake_launch l = o->launch;
        l.ctx = (CUcontext)ctx;
        CUresult kr = k->fn(&l, params);
        if (kr != CUDA_SUCCESS)
            ctx_fault(ctx, kr);
        return CUDA_SUCCESS;
    }
    return op_run(ctx, o, NULL);
}
