/*
 * The kernel audit. Look-ups are rare (start-up, lazy loading), so rows are
 * kept in a malloc'd array under a mutex, with the look-up site captured
 * each time. Launch counts live in the kernel's record (src/kernels.h),
 * which the launch event carries: two atomic adds a launch, no lock; the
 * records keep them when their module is unloaded (atl_kernels_each).
 */
#include "kaudit.h"

#include "config.h"
#include "driver.h"
#include "kernels.h"
#include "log.h"
#include "services.h"
#include "stack.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row {
    void *owner;
    char *name; /* mangled */
    void *handle;
    CUresult rc;
    unsigned lookups;
    struct atl_stack site; /* the first look-up's: formatted (symbolised) at the report only */
};

struct owner {
    void *handle;
    int library;
    char *file;
};

static int on;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct row *rows;
static size_t nrows, caprows;
static struct owner *owners;
static size_t nowners, capowners;

unsigned atl_kaudit_init(void)
{
    on = (int)atl_cfg.kernel_audit;
    return on ? (ATL_ON_LOOKUP | ATL_ON_MODULE | ATL_ON_LAUNCH) : 0;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, nc * elem);
    if (!p) {
        atl_log_once_oom("the kernel audit");
        return -1;
    }
    *arr = p;
    *cap = nc;
    return 0;
}

void atl_kaudit_module(const struct atl_module *m, CUresult r)
{
    if (!on || m->unload || r != CUDA_SUCCESS || !m->handle)
        return;
    pthread_mutex_lock(&lock);
    if (grow((void **)&owners, &capowners, nowners, sizeof *owners) == 0) {
        owners[nowners].handle = m->handle;
        owners[nowners].library = m->library;
        owners[nowners].file = m->file ? strdup(m->file) : NULL;
        nowners++;
    }
    pthread_mutex_unlock(&lock);
}

void atl_kaudit_lookup(const struct atl_lookup *l, CUresult r)
{
    if (!on)
        return;
    const char *name = l->name;
    void *owner = l->owner;
    if (l->kind == ATL_LOOKUP_KERNEL_FUNCTION) {
        if (r == CUDA_SUCCESS)
            return; /* the kernel's own row counts the launches of its functions */
        name = atl_kernel_mangled(l->owner);
    }
    struct atl_stack st;
    atl_stack_capture(&st);
    pthread_mutex_lock(&lock);
    struct row *w = NULL;
    for (size_t i = 0; i < nrows; i++)
        if (rows[i].owner == owner && (rows[i].rc == CUDA_SUCCESS) == (r == CUDA_SUCCESS) &&
            rows[i].name && name && strcmp(rows[i].name, name) == 0) {
            w = &rows[i];
            break;
        }
    if (!w && grow((void **)&rows, &caprows, nrows, sizeof *rows) == 0) {
        w = &rows[nrows++];
        memset(w, 0, sizeof *w);
        w->owner = owner;
        w->name = strdup(name ? name : "?");
        w->site = st;
    }
    if (w) {
        w->lookups++;
        w->rc = r;
        if (r == CUDA_SUCCESS)
            w->handle = l->result;
    }
    pthread_mutex_unlock(&lock);
}

void atl_kaudit_launch(const struct atl_launch *l)
{
    if (!on || !l->rec)
        return;
    uint64_t blocks = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
    __atomic_add_fetch(&l->rec->launches, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&l->rec->blocks, blocks, __ATOMIC_RELAXED);
}

/* ---- report ------------------------------------------------------------------ */

struct kentry {
    void *handle, *owner;
    const char *name;
    uint64_t launches, blocks;
};
struct kcollect {
    struct kentry *e;
    size_t n, cap;
};

static void collect(const struct atl_krec *k, void *ctx)
{
    struct kcollect *c = ctx;
    if (grow((void **)&c->e, &c->cap, c->n, sizeof *c->e) != 0)
        return;
    c->e[c->n++] = (struct kentry){k->handle, k->owner, __atomic_load_n(&k->name, __ATOMIC_ACQUIRE),
                                   __atomic_load_n(&k->launches, __ATOMIC_RELAXED),
                                   __atomic_load_n(&k->blocks, __ATOMIC_RELAXED)};
}

static void owner_label(void *h, char *buf, size_t len)
{
    for (size_t i = 0; i < nowners; i++)
        if (owners[i].handle == h) {
            const char *f = owners[i].file;
            const char *b = f ? strrchr(f, '/') : NULL;
            snprintf(buf, len, "%s@%p%s%s", owners[i].library ? "library" : "module", h,
                     f ? ":" : "", f ? (b ? b + 1 : f) : "");
            return;
        }
    snprintf(buf, len, "%p", h);
}

void atl_kaudit_report(void)
{
    if (!on)
        return;
    struct kcollect c = {0};
    atl_kernels_each(collect, &c);
    if (atl_exit_lock(&lock, "the kernel audit") != 0) {
        free(c.e);
        return;
    }
    size_t failed = 0;
    for (size_t i = 0; i < nrows; i++)
        failed += rows[i].rc != CUDA_SUCCESS;
    atl_log(ATL_ERROR, "kernel-audit: %zu kernel%s looked up, %zu look-up%s failed", nrows,
            nrows == 1 ? "" : "s", failed, failed == 1 ? "" : "s");
    for (size_t i = 0; i < nrows; i++) {
        const struct row *w = &rows[i];
        uint64_t launches = 0, blocks = 0;
        if (w->rc == CUDA_SUCCESS)
            for (size_t j = 0; j < c.n; j++) {
                const struct kentry *k = &c.e[j];
                /* by owner and name: a handle the driver reused after an
                 * unload is another kernel's (its gone records count here
                 * too, atl_kernels_each); by handle only when unnamed */
                if (k->name ? k->owner == w->owner && strcmp(k->name, w->name) == 0
                            : k->handle == w->handle)
                    launches += k->launches, blocks += k->blocks;
            }
        char own[300], ebuf[48], resolved[80], site[200];
        atl_stack_site(&w->site, site, sizeof site);
        owner_label(w->owner, own, sizeof own);
        if (w->rc == CUDA_SUCCESS)
            snprintf(resolved, sizeof resolved, "yes");
        else
            snprintf(resolved, sizeof resolved, "NO(%s)", atl_error_name(w->rc, ebuf, sizeof ebuf));
        atl_log(ATL_ERROR,
                "kernel-audit: resolved=%s launches=%llu blocks=%llu lookups=%u owner=%s "
                "looked_up_at=%s kernel=%s",
                resolved, (unsigned long long)launches, (unsigned long long)blocks, w->lookups, own,
                site, atl_demangle(w->name));
    }
    pthread_mutex_unlock(&lock);
    free(c.e);
}
