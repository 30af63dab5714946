#define _GNU_SOURCE
#include "stack.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This library's mapped range, found once: a dladdr per frame cost most of
 * an allocation's 4.5 us under the ledger. */
static uintptr_t self_lo, self_hi;
static int self_known;

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

/* Is `pc` inside this library? Our frames are never the answer a user wants. */
static int ours(void *pc)
{
    if (!__atomic_load_n(&self_known, __ATOMIC_ACQUIRE)) {
        Dl_info self;
        if (dladdr((void *)atl_stack_capture, &self))
            dl_iterate_phdr(find_self, self.dli_fbase);
        __atomic_store_n(&self_known, 1, __ATOMIC_RELEASE);
    }
    return (uintptr_t)pc >= self_lo && (uintptr_t)pc < self_hi;
}

void atl_stack_capture(struct atl_stack *s)
{
    void *pcs[ATL_STACK_MAX + 16];
    int n = backtrace(pcs, ATL_STACK_MAX + 16);
    int first = 0;
    while (first < n && ours(pcs[first]))
        first++;
    s->n = 0;
    for (int i = first; i < n && s->n < ATL_STACK_MAX; i++)
        s->pc[s->n++] = pcs[i];
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
        demangle_fn f = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (!f) {
            void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
            if (h)
                f = (demangle_fn)dlsym(h, "__cxa_demangle");
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

void atl_frame_format(void *pc, char *buf, size_t len)
{
    Dl_info it;
    if (!dladdr(pc, &it)) {
        snprintf(buf, len, "%p", pc);
        return;
    }
    if (it.dli_sname)
        snprintf(buf, len, "%s+0x%lx (%s)", atl_demangle(it.dli_sname),
                 (unsigned long)((char *)pc - (char *)it.dli_saddr), base_name(it.dli_fname));
    else
        snprintf(buf, len, "%s+0x%lx", base_name(it.dli_fname),
                 (unsigned long)((char *)pc - (char *)it.dli_fbase));
}

/* Libraries whose frames are plumbing between the user's code and the driver. */
static int plumbing(void *pc)
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

void atl_stack_site(const struct atl_stack *s, char *buf, size_t len)
{
    for (int i = 0; i < s->n; i++) {
        if (!plumbing(s->pc[i])) {
            atl_frame_format(s->pc[i], buf, len);
            return;
        }
    }
    if (s->n)
        atl_frame_format(s->pc[0], buf, len);
    else
        snprintf(buf, len, "?");
}

int atl_stack_site_index(const struct atl_stack *s)
{
    for (int i = 0; i < s->n; i++)
        if (!plumbing(s->pc[i]))
            return i;
    return 0;
}
