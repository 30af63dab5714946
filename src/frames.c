/*
 * Frames as reports name them (see stack.h): symbolised at report time only, never on a
 * hook's path. The symbol from the dynamic loader (dladdr), the source line and the symbol
 * table's names through src/symbols.c (libdw), and the site a person looks for: the first frame
 * of the program's own. Apart from the capture (src/stack.c), which the step model links alone
 * (the fuzzers of atlas-diff's reader among them), for its demangler.
 */
#define _GNU_SOURCE
#include "stack.h"

#include "symbols.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char *base_name(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : (path ? path : "?");
}

void atl_frame_info(void *pc, struct atl_frame *f)
{
    memset(f, 0, sizeof *f);
    f->pc = pc;
    Dl_info it;
    if (!dladdr(pc, &it))
        return;
    snprintf(f->obj, sizeof f->obj, "%s", it.dli_fname ? it.dli_fname : "");
    const char *sym = it.dli_sname;
    char name[256] = "";
    /* the symbol table's name where the line is known: it names static
     * functions too, where dladdr names the nearest exported one */
    unsigned long off = 0;
    if (atl_sym_line(pc, f->file, sizeof f->file, &f->line, name, sizeof name) && name[0])
        sym = name, f->off = 0;
    else if (!sym && atl_sym_name(pc, name, sizeof name, &off))
        sym = name, f->off = off; /* not exported: the module's symbol table names it */
    else if (sym)
        f->off = (unsigned long)((char *)pc - (char *)it.dli_saddr);
    else
        f->off = (unsigned long)((char *)pc - (char *)it.dli_fbase);
    if (sym) {
        const char *d = atl_demangle(sym);
        snprintf(f->func, sizeof f->func, "%s", d);
        if (d != sym)
            snprintf(f->mangled, sizeof f->mangled, "%s", sym);
    }
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

/* What a frame is to a report looking for the user's own: CUDA's, or the user's. */
enum { FR_USER, FR_CUDA, FR_STUB };

/* Where libdw gave frame pc no name (name[0] == '\0'): dladdr's (exported symbols only),
 * else the module's own symbol table's (a static function, main, the CUDA runtime nvcc
 * linked into an executable). */
static void name_else(void *pc, char *name, size_t len)
{
    Dl_info it;
    if (!name[0] && dladdr(pc, &it) && it.dli_sname)
        snprintf(name, len, "%s", it.dli_sname);
    if (!name[0])
        atl_sym_name(pc, name, len, NULL);
}

/* Frame pc at report time: plumbing (a CUDA library), or CUDA's runtime linked into the
 * program itself, as nvcc links it by default (-cudart static): no library of its own to tell
 * it by, so the symbol table's names (libdw; dladdr's where that is all there is): CUDA 13's
 * libcudart_static.a names its API cuda* and its insides libcudart_static_<hash> (older ones
 * __cudart<N>), all without debug information; cuda_runtime.h's inline templates
 * (cudaMalloc<float>) and crt's helpers (__cudaLaunchKernel_helper) carry lines in the CUDA
 * headers. A kernel's launch stub nvcc generates (__device_stub_<kernel's mangled name>) is
 * FR_STUB, and *kernel gets the kernel's mangled name: the next frame out, the kernel's host
 * function poke(float*), is CUDA's too (the user's line is the <<<>>>'s, one further out). A
 * function of the program named cudaXyz and built without -g reads as the runtime: the report
 * then names its caller. */
static int frame_kind(void *pc, char *kernel, size_t klen)
{
    if (atl_stack_cuda_lib(pc))
        return FR_CUDA;
    char file[512] = "", name[256] = "";
    int line = 0;
    int has_line = atl_sym_line(pc, file, sizeof file, &line, name, sizeof name);
    name_else(pc, name, sizeof name);
    if (!name[0])
        return FR_USER;
    const char *d = atl_demangle(name);
    static const char *const stubs[] = {"__wrapper__device_stub_", "__device_stub_"};
    for (int i = 0; i < 2; i++)
        if (!strncmp(d, stubs[i], strlen(stubs[i]))) {
            const char *k = d + strlen(stubs[i]);
            snprintf(kernel, klen, "%.*s", (int)strcspn(k, "("), k);
            return FR_STUB;
        }
    if (!strncmp(d, "__cuda", 6))
        return FR_CUDA;
    if (has_line) {
        const char *b = base_name(file);
        return !strncmp(b, "cuda_runtime", 12) || strstr(file, "/crt/") ? FR_CUDA : FR_USER;
    }
    return !strncmp(d, "libcudart_static_", 17) || !strncmp(d, "__cudart", 8) ||
                   (!strncmp(d, "cuda", 4) && d[4] >= 'A' && d[4] <= 'Z')
               ? FR_CUDA
               : FR_USER;
}

/* The mangled name the symbol table gives frame pc ("" none): a kernel's host function. */
static void raw_name(void *pc, char *out, size_t len)
{
    char file[8];
    int line;
    out[0] = '\0';
    atl_sym_line(pc, file, sizeof file, &line, out, len);
    name_else(pc, out, len);
}

int atl_stack_site_index(const struct atl_stack *s)
{
    char kernel[256] = ""; /* the kernel whose launch stub was the frame before */
    for (int i = 0; i < s->n; i++) {
        char k[256] = "";
        int kind = frame_kind(s->pc[i], k, sizeof k);
        if (kind == FR_USER && kernel[0]) {
            char raw[256];
            raw_name(s->pc[i], raw, sizeof raw);
            if (!strcmp(raw, kernel))
                kind = FR_CUDA; /* the kernel's host function, between <<<>>> and its stub */
        }
        snprintf(kernel, sizeof kernel, "%s", kind == FR_STUB ? k : "");
        if (kind == FR_USER)
            return i;
    }
    return 0;
}

void atl_stack_site(const struct atl_stack *s, char *buf, size_t len)
{
    if (s->n)
        atl_frame_format(s->pc[atl_stack_site_index(s)], buf, len);
    else
        snprintf(buf, len, "?");
}
