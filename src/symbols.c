/*
 * Source lines for report frames (see symbols.h): elfutils' libdwfl, the
 * part of libdw that maps a process's addresses to its modules' DWARF.
 *
 * libdw is opened with dlopen by name ("libdw.so.1", the Debian and Ubuntu
 * package libdw1) the first time a report formats a frame, and its few
 * functions are declared here: the build needs no elfutils header, a machine
 * without libdw keeps the symbol+offset form, and a process that never
 * reports never maps it (it brings libelf, zlib, bzip2, lzma and zstd along).
 *
 * Each module (an object a frame's address lies in) is reported to libdwfl
 * on first use from what the dynamic loader says (dl_iterate_phdr: its path
 * as loaded and its load bias), never from a search: no debuginfod (a
 * network fetch could hang the exit), no debug-file paths. A file whose build
 * ID differs from the one mapped in memory (rebuilt or replaced since the
 * program started) is not read: its lines would be another program's.
 */
#define _GNU_SOURCE
#include "symbols.h"

#include "realdl.h"
#include "services.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- the part of libdwfl.h used (elfutils, libdw.so.1's public ABI) ---- */
typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;
typedef struct Dwfl_Line Dwfl_Line;
typedef uint64_t Dwarf_Addr;
typedef uint64_t Dwarf_Word;
typedef struct {
    int (*find_elf)(Dwfl_Module *, void **, const char *, Dwarf_Addr, char **, void **);
    int (*find_debuginfo)(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *,
                          const char *, uint32_t, char **);
    int (*section_address)(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *, uint32_t,
                           const void *, Dwarf_Addr *);
    char **debuginfo_path;
} Dwfl_Callbacks;

struct dwfns {
    Dwfl *(*begin)(const Dwfl_Callbacks *);
    void (*end)(Dwfl *);
    void (*report_begin_add)(Dwfl *);
    int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *),
                      void *);
    Dwfl_Module *(*report_elf)(Dwfl *, const char *, const char *, int, Dwarf_Addr, _Bool);
    Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
    Dwfl_Line *(*module_getsrc)(Dwfl_Module *, Dwarf_Addr);
    const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *, Dwarf_Word *);
    const char *(*module_addrname)(Dwfl_Module *, Dwarf_Addr);
    int (*module_build_id)(Dwfl_Module *, const unsigned char **, Dwarf_Addr *);
};
static struct dwfns dw;

/* No separate debug files: only what the module's own file carries (libdwfl
 * reads the main file's sections before it asks this). */
static int no_debuginfo(Dwfl_Module *m, void **u, const char *mod, Dwarf_Addr base,
                        const char *file, const char *link, uint32_t crc, char **out)
{
    (void)m, (void)u, (void)mod, (void)base, (void)file, (void)link, (void)crc, (void)out;
    return -1;
}

/* Every module is reported with its file (dwfl_report_elf), so none is looked for. */
static int no_elf(Dwfl_Module *m, void **u, const char *mod, Dwarf_Addr base, char **file,
                  void **elf)
{
    (void)m, (void)u, (void)mod, (void)base, (void)file, (void)elf;
    return -1;
}

static const Dwfl_Callbacks callbacks = {.find_elf = no_elf, .find_debuginfo = no_debuginfo};

static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static int state; /* 0 untried, 1 ready, -1 unavailable or disabled */
static Dwfl *dwfl;

void atl_sym_disable(void)
{
    pthread_mutex_lock(&sym_lock);
    if (state == 0)
        state = -1;
    pthread_mutex_unlock(&sym_lock);
}

/* libdw's functions into *f: 0, or -1 when it is not there (or older than
 * elfutils 0.122, 2006: then kept loaded, unused). Not under sym_lock: dlopen
 * and dlsym take the loader's lock, which a thread running a library's
 * constructor holds while its CUDA call may report and so wait for sym_lock. */
static int open_libdw(struct dwfns *f)
{
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
#define GET(field, name) *(void **)&f->field = atl_dlsym(h, name)
    GET(begin, "dwfl_begin");
    GET(end, "dwfl_end");
    GET(report_begin_add, "dwfl_report_begin_add");
    GET(report_end, "dwfl_report_end");
    GET(report_elf, "dwfl_report_elf");
    GET(addrmodule, "dwfl_addrmodule");
    GET(module_getsrc, "dwfl_module_getsrc");
    GET(lineinfo, "dwfl_lineinfo");
    GET(module_addrname, "dwfl_module_addrname");
    GET(module_build_id, "dwfl_module_build_id");
#undef GET
    return f->begin && f->end && f->report_begin_add && f->report_end && f->report_elf &&
                   f->addrmodule && f->module_getsrc && f->lineinfo && f->module_addrname &&
                   f->module_build_id
               ? 0
               : -1;
}

/* The module the loader mapped pc in: its path, load bias and build ID
 * (from its PT_NOTE, in memory). */
struct mapped {
    uintptr_t pc, bias;
    char path[4096];
    const unsigned char *id;
    size_t idlen;
    int found;
};

static void note_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) * ph, struct mapped *m)
{
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    size_t left = ph->p_memsz;
    while (left >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
        size_t name = (n->n_namesz + 3) & ~(size_t)3, desc = (n->n_descsz + 3) & ~(size_t)3;
        size_t whole = sizeof *n + name + desc;
        if (whole > left || name > left || desc > left)
            return;
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
            memcmp(p + sizeof *n, "GNU", 4) == 0) {
            m->id = p + sizeof *n + name;
            m->idlen = n->n_descsz;
            return;
        }
        p += whole;
        left -= whole;
    }
}

static int find_mapped(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct mapped *m = arg;
    int inside = 0;
    for (int i = 0; i < info->dlpi_phnum && !inside; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        inside = ph->p_type == PT_LOAD && m->pc >= lo && m->pc < lo + ph->p_memsz;
    }
    if (!inside)
        return 0;
    m->bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && !m->id; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE)
            note_build_id(info, &info->dlpi_phdr[i], m);
    if (info->dlpi_name && info->dlpi_name[0]) {
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    } else {
        /* the main program: the loader names it "" */
        ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        m->path[n > 0 ? n : 0] = '\0';
    }
    m->found = m->path[0] != '\0' && strcmp(m->path, "linux-vdso.so.1") != 0;
    return 1;
}

/* The module of m in libdwfl, reported now if it is not yet; NULL when its
 * file cannot be read or is not the one mapped. */
static Dwfl_Module *module_of(const struct mapped *m)
{
    Dwfl_Module *mod = dw.addrmodule(dwfl, m->pc);
    if (!mod) {
        dw.report_begin_add(dwfl);
        mod = dw.report_elf(dwfl, m->path, m->path, -1, m->bias, 1);
        dw.report_end(dwfl, NULL, NULL);
        if (!mod)
            return NULL;
        if (dw.addrmodule(dwfl, m->pc) != mod)
            return NULL; /* the file's segments do not cover pc: not the mapped file */
    }
    const unsigned char *bits = NULL;
    Dwarf_Addr vaddr;
    int len = dw.module_build_id(mod, &bits, &vaddr);
    if (m->id && (len != (int)m->idlen || !bits || memcmp(bits, m->id, m->idlen) != 0))
        return NULL;
    return mod;
}

int atl_sym_line(void *pc, char *file, size_t filesz, int *line, char *func, size_t funcsz)
{
    if (!pc || __atomic_load_n(&state, __ATOMIC_RELAXED) < 0)
        return 0;
    struct mapped m = {.pc = (uintptr_t)pc - 1}; /* the call, not the return address */
    dl_iterate_phdr(find_mapped, &m);
    if (!m.found)
        return 0;
    struct dwfns f;
    int opened = __atomic_load_n(&state, __ATOMIC_ACQUIRE) == 0 ? open_libdw(&f) : 1;
    if (atl_exit_lock(&sym_lock, NULL) != 0)
        return 0;
    int ok = 0;
    if (state == 0 && opened == 0) {
        dw = f;
        dwfl = dw.begin(&callbacks);
        __atomic_store_n(&state, dwfl ? 1 : -1, __ATOMIC_RELEASE);
    } else if (state == 0) {
        __atomic_store_n(&state, -1, __ATOMIC_RELEASE);
    }
    Dwfl_Module *mod = state > 0 ? module_of(&m) : NULL;
    Dwfl_Line *l = mod ? dw.module_getsrc(mod, m.pc) : NULL;
    int ln = 0;
    const char *src = l ? dw.lineinfo(l, NULL, &ln, NULL, NULL, NULL) : NULL;
    const char *name = mod ? dw.module_addrname(mod, m.pc) : NULL;
    if (name && funcsz)
        snprintf(func, funcsz, "%s", name);
    if (src && *src && ln > 0) {
        snprintf(file, filesz, "%s", src);
        *line = ln;
        ok = 1;
    }
    pthread_mutex_unlock(&sym_lock);
    return ok;
}
