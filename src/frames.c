/*
 * Frames as reports name them (see stack.h): symbolised at report time only, never on a
 * hook's path. The symbol from the dynamic loader (dladdr), the source line and the symbol
 * table's names through src/symbols.c (libdw), and the site a person looks for: the first frame
 * of the program's own. Apart from the capture (src/stack.c), which the step model links alone
 * (the fuzzers of atlas-diff's reader among them), for its demangler.
 *
 * Each return address is named once and kept (struct named): naming one walks its module's
 * symbol tables (dladdr scans every exported symbol, libdw and the .symtab reader search
 * theirs), millions of instructions in a library of libtorch's size, and reports name the same
 * few addresses again and again (the sites of a caching allocator's blocks, step after step:
 * issue #43 measured 6.4 M instructions per line that named two sites, uncached). Kept until a
 * module is unloaded (an address may then lie in another one) or FC_MAX are kept.
 */
#define _GNU_SOURCE
#include "log.h"
#include "stack.h"

#include "symbols.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : (path ? path : "?");
}

/* What a frame is to a report looking for the user's own: CUDA's, or the user's. */
enum { FR_USER, FR_CUDA, FR_STUB };

/* Everything a report asks of one return address. */
struct named {
    struct atl_frame f;
    int kind;         /* FR_* */
    char kernel[256]; /* FR_STUB: the kernel's mangled name */
    char raw[256];    /* the mangled name the symbol table gives the frame ("" none) */
};

/* Frame pc at report time: plumbing (a CUDA library), or CUDA's runtime linked into the
 * program itself, as nvcc links it by default (-cudart static): no library of its own to tell
 * it by, so the symbol table's names (libdw; dladdr's where that is all there is): CUDA 13's
 * libcudart_static.a names its API cuda* and its insides libcudart_static_<hash> (older ones
 * __cudart<N>), all without debug information; cuda_runtime.h's inline templates
 * (cudaMalloc<float>) and crt's helpers (__cudaLaunchKernel_helper) carry lines in the CUDA
 * headers. A kernel's launch stub nvcc generates (__device_stub_<kernel's mangled name>) is
 * FR_STUB, and n->kernel gets the kernel's mangled name: the next frame out, the kernel's host
 * function poke(float*), is CUDA's too (the user's line is the <<<>>>'s, one further out). A
 * function of the program named cudaXyz and built without -g reads as the runtime: the report
 * then names its caller. `obj` is the frame's object, `name` its mangled name ("" none), `file`
 * its source file where the line is known ("" else). */
static int frame_kind(const char *obj, const char *name, const char *file, struct named *n)
{
    if (atl_stack_cuda_path(obj))
        return FR_CUDA;
    if (!name[0])
        return FR_USER;
    const char *d = atl_demangle(name);
    static const char *const stubs[] = {"__wrapper__device_stub_", "__device_stub_"};
    for (int i = 0; i < 2; i++)
        if (!strncmp(d, stubs[i], strlen(stubs[i]))) {
            const char *k = d + strlen(stubs[i]);
            snprintf(n->kernel, sizeof n->kernel, "%.*s", (int)strcspn(k, "("), k);
            return FR_STUB;
        }
    if (!strncmp(d, "__cuda", 6))
        return FR_CUDA;
    if (file[0])
        return atl_sym_cuda_header(file) ? FR_CUDA : FR_USER;
    return !strncmp(d, "libcudart_static_", 17) || !strncmp(d, "__cudart", 8) ||
                   (!strncmp(d, "cuda", 4) && d[4] >= 'A' && d[4] <= 'Z')
               ? FR_CUDA
               : FR_USER;
}

/* Names pc: the object it lies in (the loader's list), its source line (libdw) and function
 * (the object's own symbol table, sorted once), and dladdr only where neither names the
 * function (a file that cannot be read, ATLAS_SYMBOLS=0): dladdr reads every exported symbol of
 * the object at every call. 0 when no loaded object holds pc. */
static int name_frame(void *pc, struct named *n)
{
    memset(n, 0, sizeof *n);
    struct atl_frame *f = &n->f;
    f->pc = pc;
    uintptr_t base = 0;
    char obj[4096]; /* whole: f->obj may cut a long path's base name, which tells CUDA's */
    if (!atl_stack_module(pc, obj, sizeof obj, &base)) {
        n->kind = FR_USER;
        return 0;
    }
    size_t ol = strnlen(obj, sizeof f->obj - 1);
    memcpy(f->obj, obj, ol);
    f->obj[ol] = '\0';
    /* the mangled name, as the symbol table has it, and the offset from it */
    int has_line = atl_sym_line(pc, f->file, sizeof f->file, &f->line, n->raw, sizeof n->raw);
    if (!has_line)
        f->file[0] = '\0', f->line = 0;
    /* without a line, the name is said with the offset in it, which the table gives */
    unsigned long off = 0;
    int named_here = has_line ? n->raw[0] != '\0' : atl_sym_name(pc, n->raw, sizeof n->raw, &off);
    if (!named_here) {
        Dl_info it;
        n->raw[0] = '\0';
        if (dladdr(pc, &it) && it.dli_sname) {
            snprintf(n->raw, sizeof n->raw, "%s", it.dli_sname);
            off = (unsigned long)((char *)pc - (char *)it.dli_saddr);
        } else {
            off = (unsigned long)((uintptr_t)pc - base);
        }
    }
    n->kind = frame_kind(obj, n->raw, f->file, n);
    f->off = has_line ? 0 : off;
    if (n->raw[0]) {
        const char *d = atl_demangle(n->raw);
        snprintf(f->func, sizeof f->func, "%s", d);
        if (d != n->raw)
            snprintf(f->mangled, sizeof f->mangled, "%s", n->raw);
    }
    return 1;
}

/* ---- the frames named so far, by return address ---- */

#define FC_MAX 4096 /* kept at most (about 7 MB); past that, all are dropped and named again */
#define FC_SLOTS (2 * FC_MAX)
static pthread_mutex_t fc_mu = PTHREAD_MUTEX_INITIALIZER;
static struct named **fc_tab; /* open addressing by pc, FC_SLOTS */
static unsigned fc_n;
static unsigned long long fc_subs; /* the loader's unload count when they were named */
static uint64_t fc_named, fc_reused;  /* under fc_mu: for the tests */

/* How many objects the loader has unloaded, ever (glibc's dlpi_subs): an address named
 * before one was may lie in another object now. */
static unsigned long long unloads(void)
{
    unsigned long long subs;
    atl_stack_loads(NULL, &subs);
    return subs;
}

static void fc_drop(void)
{
    for (unsigned i = 0; fc_tab && i < FC_SLOTS; i++) {
        free(fc_tab[i]);
        fc_tab[i] = NULL;
    }
    fc_n = 0;
}

static unsigned fc_slot(void *pc)
{
    return (unsigned)(((uintptr_t)pc * 0x9E3779B97F4A7C15ULL) >> 40) & (FC_SLOTS - 1);
}

/* pc's names into *n: kept ones, else named now (outside the lock: naming takes the loader's,
 * and a thread that holds it while a constructor's CUDA call reports waits for ours) and
 * kept. */
static void named(void *pc, struct named *n)
{
    unsigned long long subs = unloads();
    pthread_mutex_lock(&fc_mu);
    if (subs != fc_subs) {
        fc_drop();
        fc_subs = subs;
    }
    for (unsigned i = fc_slot(pc); fc_tab && fc_tab[i]; i = (i + 1) & (FC_SLOTS - 1))
        if (fc_tab[i]->f.pc == pc) {
            *n = *fc_tab[i];
            fc_reused++;
            pthread_mutex_unlock(&fc_mu);
            return;
        }
    pthread_mutex_unlock(&fc_mu);
    /* an address no object holds (code made at run time, whose memory may hold other code
     * later) is not kept: the loader says so at once */
    if (!name_frame(pc, n))
        return;
    struct named *keep = malloc(sizeof *keep);
    if (!keep)
        return; /* named, not kept: the report is right, the next one pays again */
    *keep = *n;
    pthread_mutex_lock(&fc_mu);
    fc_named++;
    if (!fc_tab)
        fc_tab = calloc(FC_SLOTS, sizeof *fc_tab);
    if (fc_tab && subs == fc_subs) {
        if (fc_n >= FC_MAX)
            fc_drop();
        unsigned i = fc_slot(pc);
        while (fc_tab[i] && fc_tab[i]->f.pc != pc)
            i = (i + 1) & (FC_SLOTS - 1);
        if (!fc_tab[i]) {
            fc_tab[i] = keep, keep = NULL;
            fc_n++;
        }
    }
    pthread_mutex_unlock(&fc_mu);
    free(keep); /* another thread kept it first, or an unload came between */
}

void atl_frame_counts(uint64_t *named_now, uint64_t *reused)
{
    pthread_mutex_lock(&fc_mu);
    *named_now = fc_named;
    *reused = fc_reused;
    pthread_mutex_unlock(&fc_mu);
}

void atl_frame_info(void *pc, struct atl_frame *f)
{
    struct named n;
    named(pc, &n);
    *f = n.f;
}

void atl_frame_text(const struct atl_frame *f, char *buf, size_t len)
{
    if (f->line && f->file[0])
        snprintf(buf, len, "%s (%s:%d)", f->func[0] ? f->func : base_name(f->obj),
                 base_name(f->file), f->line);
    else if (f->func[0])
        snprintf(buf, len, "%s+0x%lx (%s)", f->func, f->off, base_name(f->obj));
    else if (f->obj[0])
        snprintf(buf, len, "%s+0x%lx", base_name(f->obj), f->off);
    else
        snprintf(buf, len, "%p", f->pc);
}

void atl_frame_format(void *pc, char *buf, size_t len)
{
    struct atl_frame f;
    atl_frame_info(pc, &f);
    atl_frame_text(&f, buf, len);
}

/* The site's index, and (f, when not NULL) its frame. */
static int site_of(const struct atl_stack *s, struct atl_frame *f)
{
    char kernel[256] = ""; /* the kernel whose launch stub was the frame before */
    struct named n;
    for (int i = 0; i < s->n; i++) {
        named(s->pc[i], &n);
        int kind = n.kind;
        if (kind == FR_USER && kernel[0] && !strcmp(n.raw, kernel))
            kind = FR_CUDA; /* the kernel's host function, between <<<>>> and its stub */
        snprintf(kernel, sizeof kernel, "%s", kind == FR_STUB ? n.kernel : "");
        if (kind == FR_USER) {
            if (f)
                *f = n.f;
            return i;
        }
    }
    if (f && s->n)
        atl_frame_info(s->pc[0], f);
    return 0;
}

int atl_stack_site_index(const struct atl_stack *s)
{
    return site_of(s, NULL);
}

void atl_stack_site(const struct atl_stack *s, char *buf, size_t len)
{
    struct atl_frame f;
    if (s->n) {
        site_of(s, &f);
        atl_frame_text(&f, buf, len);
    } else {
        snprintf(buf, len, "?");
    }
}

void atl_log_frames(int level, const char *tag, const struct atl_stack *s, int from, int max)
{
    if (!atl_log_wants(level))
        return;
    char fr[512];
    for (int i = from; i < s->n && i < from + max; i++) {
        atl_frame_format(s->pc[i], fr, sizeof fr);
        atl_log(level, "%s:   #%d %s", tag, i - from, fr);
    }
}
