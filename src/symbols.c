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

#include "config.h"
#include "hint.h"
#include "log.h"
#include "realdl.h"
#include "services.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the part of libdwfl.h used (elfutils, libdw.so.1's public ABI) ---- */
typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;
typedef struct Dwfl_Line Dwfl_Line;
typedef uint64_t Dwarf_Addr;
typedef uint64_t Dwarf_Word;
typedef struct Dwarf_Files Dwarf_Files;
/* libdw.h's Dwarf_Die and Dwarf_Attribute: filled in by libdw, their layout public */
typedef struct {
    void *addr;
    void *cu;
    void *abbrev;
    long padding;
} Dwarf_Die;
typedef struct {
    unsigned int code, form;
    unsigned char *valp;
    void *cu;
} Dwarf_Attribute;
#define DW_TAG_INLINED_SUBROUTINE 0x1d
#define DW_AT_CALL_FILE 0x58
#define DW_AT_CALL_LINE 0x59
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
    int (*module_build_id)(Dwfl_Module *, const unsigned char **, Dwarf_Addr *);
    /* the inlined calls around an address (optional: without them, a line in a CUDA
     * header's inlined helper is not given) */
    Dwarf_Die *(*module_addrdie)(Dwfl_Module *, Dwarf_Addr, Dwarf_Addr *);
    int (*getscopes)(Dwarf_Die *, Dwarf_Addr, Dwarf_Die **);
    int (*tag)(Dwarf_Die *);
    Dwarf_Attribute *(*attr)(Dwarf_Die *, unsigned int, Dwarf_Attribute *);
    int (*formudata)(Dwarf_Attribute *, Dwarf_Word *);
    int (*getsrcfiles)(Dwarf_Die *, Dwarf_Files **, size_t *);
    const char *(*filesrc)(Dwarf_Files *, size_t, Dwarf_Word *, Dwarf_Word *);
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
static int state;    /* 0 untried, 1 ready, -1 unavailable or disabled */
static int disabled; /* ATLAS_SYMBOLS=0: no look-up of ours either */
static Dwfl *dwfl;

void atl_sym_disable(void)
{
    pthread_mutex_lock(&sym_lock);
    if (state == 0)
        state = -1;
    __atomic_store_n(&disabled, 1, __ATOMIC_RELAXED);
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
    GET(module_build_id, "dwfl_module_build_id");
    GET(module_addrdie, "dwfl_module_addrdie");
    GET(getscopes, "dwarf_getscopes");
    GET(tag, "dwarf_tag");
    GET(attr, "dwarf_attr");
    GET(formudata, "dwarf_formudata");
    GET(getsrcfiles, "dwarf_getsrcfiles");
    GET(filesrc, "dwarf_filesrc");
#undef GET
    return f->begin && f->end && f->report_begin_add && f->report_end && f->report_elf &&
                   f->addrmodule && f->module_getsrc && f->lineinfo &&
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

/* The GNU build ID among the notes at p (left bytes): 1 and *id, *idlen, or 0. */
static int notes_build_id(const unsigned char *p, size_t left, const unsigned char **id,
                          size_t *idlen)
{
    while (left >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
        size_t name = (n->n_namesz + 3) & ~(size_t)3, desc = (n->n_descsz + 3) & ~(size_t)3;
        size_t whole = sizeof *n + name + desc;
        if (whole > left || name > left || desc > left)
            return 0;
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
            memcmp(p + sizeof *n, "GNU", 4) == 0) {
            *id = p + sizeof *n + name;
            *idlen = n->n_descsz;
            return 1;
        }
        p += whole;
        left -= whole;
    }
    return 0;
}

static void note_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) * ph, struct mapped *m)
{
    notes_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, &m->id,
                   &m->idlen);
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

struct elfsyms;
static struct elfsyms *elf_load(const struct mapped *m);
static int sym_in(const struct elfsyms *e, const struct mapped *m, char *func, size_t funcsz,
                  unsigned long *off);

static int external_line(const struct mapped *m, char *file, size_t filesz, int *line,
                         char *func, size_t funcsz);
static int file_unchanged(const struct mapped *m);
static int lines_to_ask(const struct elfsyms *e);
static void lines_failed(struct elfsyms *e);

int atl_sym_cuda_header(const char *file)
{
    const char *b = strrchr(file, '/');
    b = b ? b + 1 : file;
    return !strncmp(b, "cuda_runtime", 12) || strstr(file, "/crt/") != NULL;
}

/* pc's line is in a CUDA header's helper (file, *line): the site that helper was inlined at,
 * the innermost not in such a header, from the inlined-subroutine scopes around pc (libdw's
 * DWARF reader; its call_file and call_line). Left as it is where libdw has no such functions
 * or the scopes say nothing better. Under sym_lock. */
static void inlined_at(Dwfl_Module *mod, Dwarf_Addr pc, char *file, size_t filesz, int *line)
{
    if (!dw.module_addrdie || !dw.getscopes || !dw.tag || !dw.attr || !dw.formudata ||
        !dw.getsrcfiles || !dw.filesrc)
        return;
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dw.module_addrdie(mod, pc, &bias);
    Dwarf_Die *scopes = NULL;
    int n = cu ? dw.getscopes(cu, pc - bias, &scopes) : -1;
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (n > 0 && dw.getsrcfiles(cu, &files, &nfiles) == 0) {
        for (int i = 0; i < n; i++) {
            if (dw.tag(&scopes[i]) != DW_TAG_INLINED_SUBROUTINE)
                continue;
            Dwarf_Attribute a;
            Dwarf_Word fi = 0, ln = 0;
            if (!dw.attr(&scopes[i], DW_AT_CALL_FILE, &a) || dw.formudata(&a, &fi) != 0 ||
                !dw.attr(&scopes[i], DW_AT_CALL_LINE, &a) || dw.formudata(&a, &ln) != 0 ||
                fi >= nfiles || ln == 0 || ln > INT32_MAX)
                break; /* the chain is cut: keep what there is */
            const char *src = dw.filesrc(files, (size_t)fi, NULL, NULL);
            if (!src || !*src)
                break;
            snprintf(file, filesz, "%s", src);
            *line = (int)ln;
            if (!atl_sym_cuda_header(src))
                break;
        }
    }
    free(scopes);
}

int atl_sym_line(void *pc, char *file, size_t filesz, int *line, char *func, size_t funcsz)
{
    if (!pc || __atomic_load_n(&disabled, __ATOMIC_RELAXED))
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
    if (state < 0) {
        /* no libdw: the function from the symbol table here, the line from an addr2line
         * program, outside the lock, where the file has lines to give */
        struct elfsyms *e = disabled ? NULL : elf_load(&m);
        if (e && funcsz)
            sym_in(e, &m, func, funcsz, NULL);
        int ask = lines_to_ask(e);
        pthread_mutex_unlock(&sym_lock);
        int r = ask ? external_line(&m, file, filesz, line, func, funcsz) : 0;
        if (r < 0 && atl_exit_lock(&sym_lock, NULL) == 0) {
            lines_failed(e); /* entries are never freed */
            pthread_mutex_unlock(&sym_lock);
        }
        return r > 0;
    }
    /* libdw maps the file: not one that changed since it was first read (one cut short in
     * place would raise SIGBUS in the program as libdw reads it); its frames keep their names */
    Dwfl_Module *mod = file_unchanged(&m) ? module_of(&m) : NULL;
    Dwfl_Line *l = mod ? dw.module_getsrc(mod, m.pc) : NULL;
    int ln = 0;
    const char *src = l ? dw.lineinfo(l, NULL, &ln, NULL, NULL, NULL) : NULL;
    /* the function's name from the module's symbol table, sorted once (libdw's
     * dwfl_module_addrname searches it from the start at every call: 3.6 M instructions a
     * frame in a library of 10,000 symbols) */
    if (funcsz)
        sym_in(elf_load(&m), &m, func, funcsz, NULL);
    if (src && *src && ln > 0) {
        snprintf(file, filesz, "%s", src);
        *line = ln;
        ok = 1;
        if (atl_sym_cuda_header(src))
            inlined_at(mod, m.pc, file, filesz, line);
    }
    pthread_mutex_unlock(&sym_lock);
    return ok;
}

/* ---- names from a module's own symbol table, libdw or not ------------------------------
 * dladdr knows only the exported symbols: a frame in an executable linked without
 * -rdynamic (main, and CUDA's runtime linked into it by nvcc) has no name from it, and a
 * report could neither name it nor tell the runtime's frames from the program's. So the
 * module's file is read (once, into memory of ours; only when a report formats such a frame): its
 * .symtab (or .dynsym where stripped), its functions sorted by address once. A file whose
 * build ID differs from the one mapped is not used, as for lines. Under sym_lock. */
struct elfsyms {
    struct elfsyms *next;
    char path[4096];
    int usable;
    int has_lines;  /* the file has a .debug_line section: source lines to be had */
    struct stat st; /* the file when it was read: libdw maps it, and one that changed since is
                     * not handed to libdw again (a file cut short under a mapping: SIGBUS) */
    int a2l_failed; /* the external symbolizer failed on it once: not asked again */
    const ElfW(Sym) * sym; /* read from the file (read_at), ours */
    const char *str;
    size_t strsz;
    uint32_t *byaddr; /* the functions' indices in sym, by address */
    size_t n;
};
static struct elfsyms *elfs;

static const ElfW(Sym) * by_addr_base;
static int addr_cmp(const void *x, const void *y)
{
    ElfW(Addr) a = by_addr_base[*(const uint32_t *)x].st_value;
    ElfW(Addr) b = by_addr_base[*(const uint32_t *)y].st_value;
    return a < b ? -1 : a > b;
}

/* The build ID note of the file's section headers' notes equals m's (or m has none). */
/* len bytes of fd at off, in memory of the caller's (free it): NULL when they are not all
 * there or past max. The file is read, never mapped: a file cut short while a mapping of it
 * is read raises SIGBUS in the program (issue #48: a library truncated on disk after the first
 * report read it killed the next one). */
static void *read_at(int fd, uint64_t off, uint64_t len, uint64_t size, uint64_t max)
{
    if (off > size || len > size - off || len > max)
        return NULL;
    unsigned char *b = malloc(len ? (size_t)len : 1);
    for (size_t got = 0; b && got < len;) {
        ssize_t n = pread(fd, b + got, (size_t)len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(b);
            return NULL;
        }
        got += (size_t)n;
    }
    return b;
}

/* The build ID note of the file's section headers' notes equals m's (or m has none). */
static int file_id_matches(int fd, uint64_t size, const ElfW(Shdr) * sh, unsigned nsh,
                           const struct mapped *m)
{
    if (!m->id)
        return 1;
    for (unsigned i = 0; i < nsh; i++) {
        if (sh[i].sh_type != SHT_NOTE)
            continue;
        unsigned char *notes = read_at(fd, sh[i].sh_offset, sh[i].sh_size, size, 1 << 16);
        const unsigned char *id;
        size_t idlen;
        int has = notes && notes_build_id(notes, sh[i].sh_size, &id, &idlen);
        int same = has && idlen == m->idlen && !memcmp(id, m->id, idlen);
        free(notes);
        if (has)
            return same;
    }
    return 0; /* the mapped module has an ID and the file none */
}

static struct elfsyms *elf_load(const struct mapped *m)
{
    for (struct elfsyms *e = elfs; e; e = e->next)
        if (!strcmp(e->path, m->path))
            return e->usable ? e : NULL;
    struct elfsyms *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    snprintf(e->path, sizeof e->path, "%s", m->path);
    e->next = elfs, elfs = e;
    /* non-blocking: a FIFO put where the file was must not hang a report */
    int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return NULL;
    uint64_t size = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    e->st = st;
    ElfW(Ehdr) *eh = read_at(fd, 0, sizeof *eh, size, sizeof *eh);
    int ok = eh && !memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
             eh->e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
             eh->e_shentsize == sizeof(ElfW(Shdr));
    ElfW(Shdr) *sh = ok ? read_at(fd, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof *sh, size,
                                  (uint64_t)65536 * sizeof *sh)
                        : NULL;
    ok = ok && sh && file_id_matches(fd, size, sh, eh->e_shnum, m);
    /* whether it carries source lines (what an external symbolizer can give) */
    if (ok && eh->e_shstrndx < eh->e_shnum) {
        const ElfW(Shdr) *names = &sh[eh->e_shstrndx];
        char *tab = read_at(fd, names->sh_offset, names->sh_size, size, 16u << 20);
        for (unsigned i = 0; tab && i < eh->e_shnum && !e->has_lines; i++)
            e->has_lines = sh[i].sh_name < names->sh_size &&
                           !strncmp(tab + sh[i].sh_name, ".debug_line",
                                    names->sh_size - sh[i].sh_name);
        free(tab);
    }
    const ElfW(Shdr) *tab = NULL;
    for (unsigned i = 0; ok && i < eh->e_shnum; i++)
        if (sh[i].sh_type == SHT_SYMTAB || (sh[i].sh_type == SHT_DYNSYM && !tab))
            tab = &sh[i];
    if (ok && tab && tab->sh_entsize == sizeof(ElfW(Sym)) && tab->sh_link < eh->e_shnum) {
        /* a symbol table of 10 million symbols, names of 1 GiB: past that, not read */
        ElfW(Sym) *sym = read_at(fd, tab->sh_offset, tab->sh_size, size,
                                 (uint64_t)10000000 * sizeof *sym);
        char *str = read_at(fd, sh[tab->sh_link].sh_offset, sh[tab->sh_link].sh_size, size,
                            1u << 30);
        size_t nsym = sym && str ? tab->sh_size / sizeof(ElfW(Sym)) : 0;
        e->sym = sym, e->str = str, e->strsz = sh[tab->sh_link].sh_size;
        e->byaddr = nsym && nsym < UINT32_MAX ? malloc(nsym * sizeof *e->byaddr) : NULL;
        for (size_t i = 0; e->byaddr && i < nsym; i++)
            if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC && sym[i].st_shndx != SHN_UNDEF &&
                sym[i].st_size && sym[i].st_name < e->strsz)
                e->byaddr[e->n++] = (uint32_t)i;
        if (e->n) {
            by_addr_base = e->sym;
            qsort(e->byaddr, e->n, sizeof *e->byaddr, addr_cmp);
            e->usable = 1;
        }
    }
    close(fd);
    free(eh);
    free(sh);
    if (e->usable)
        return e; /* the names are ours: the file may change now */
    free((void *)e->sym);
    free((void *)e->str);
    free(e->byaddr);
    e->sym = NULL, e->str = NULL, e->byaddr = NULL;
    return NULL;
}

/* m's file is the one read the first time (elf_load), by its inode, size and time: libdw may
 * read it (mapped) again. Under sym_lock. */
static int file_unchanged(const struct mapped *m)
{
    elf_load(m); /* the first time: what the file is now */
    struct stat now;
    for (struct elfsyms *e = elfs; e; e = e->next)
        if (!strcmp(e->path, m->path))
            return stat(m->path, &now) == 0 && now.st_ino == e->st.st_ino &&
                   now.st_dev == e->st.st_dev && now.st_size == e->st.st_size &&
                   now.st_mtim.tv_sec == e->st.st_mtim.tv_sec &&
                   now.st_mtim.tv_nsec == e->st.st_mtim.tv_nsec;
    return 0;
}

/* e (NULL: none) has source lines an external symbolizer may give, and it has not failed on
 * it. Under sym_lock. */
static int lines_to_ask(const struct elfsyms *e)
{
    return e && e->has_lines && !e->a2l_failed;
}

static void lines_failed(struct elfsyms *e)
{
    e->a2l_failed = 1;
}

/* The function of e holding m's pc, into func (and its offset from the return address, off
 * not NULL): 1, or 0 when e (NULL: none) has none there. Under sym_lock. */
static int sym_in(const struct elfsyms *e, const struct mapped *m, char *func, size_t funcsz,
                  unsigned long *off)
{
    int ok = 0;
    ElfW(Addr) v = (ElfW(Addr))(m->pc - m->bias);
    size_t lo = 0, hi = e ? e->n : 0;
    while (lo < hi) { /* the last function starting at or before v */
        size_t mid = lo + (hi - lo) / 2;
        if (e->sym[e->byaddr[mid]].st_value <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* functions may nest (aliases, local labels): the nearest few that start before v */
    for (size_t k = lo; e && k > 0 && lo - k < 8 && !ok; k--) {
        const ElfW(Sym) *y = &e->sym[e->byaddr[k - 1]];
        if (v - y->st_value < y->st_size) {
            const char *nm = e->str + y->st_name;
            snprintf(func, funcsz, "%.*s", (int)strnlen(nm, e->strsz - y->st_name), nm);
            if (off)
                *off = (unsigned long)(v + 1 - y->st_value); /* from the return address */
            ok = func[0] != '\0';
        }
    }
    return ok;
}

int atl_sym_name(void *pc, char *func, size_t funcsz, unsigned long *off)
{
    /* ATLAS_SYMBOLS=0 (set once, at start): no walk of the loaded objects either */
    if (!pc || !funcsz || __atomic_load_n(&disabled, __ATOMIC_RELAXED))
        return 0;
    struct mapped m = {.pc = (uintptr_t)pc - 1};
    dl_iterate_phdr(find_mapped, &m);
    if (!m.found || atl_exit_lock(&sym_lock, NULL) != 0)
        return 0;
    int ok = disabled ? 0 : sym_in(elf_load(&m), &m, func, funcsz, off);
    pthread_mutex_unlock(&sym_lock);
    return ok;
}

/* ---- source lines without libdw: an addr2line program ----------------------------------
 * Where libdw is missing (many GPU images: the CUDA toolkit brings binutils, not elfutils),
 * a frame whose file has a .debug_line section gets its line from an addr2line program, as
 * the sanitizers ask llvm-symbolizer: ATLAS_SYMBOLIZER, else addr2line or llvm-addr2line on
 * PATH. Run at report time only, outside every lock of ours, once for each frame (frames.c
 * keeps the answer), in a minimal environment (PATH and LC_ALL=C: no LD_PRELOAD, so not
 * traced), stdin from /dev/null, its output read for at most SYMBOLIZER_MS; one that fails or
 * runs out of time is killed, and not asked about that file again. No program at all: said
 * once, with what to install. */
#define SYMBOLIZER_MS 5000

static pthread_once_t a2l_once = PTHREAD_ONCE_INIT;
static char a2l_path[4096];

/* name (no '/': looked up on PATH) into out, executable; 0 when not found. */
static int on_path(const char *name, char *out, size_t len)
{
    if (strchr(name, '/')) {
        snprintf(out, len, "%s", name);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, len, "%.*s/%s", (int)n, p, name);
        if (n && access(out, X_OK) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    out[0] = '\0';
    return 0;
}

static void a2l_find(void)
{
    const char *want = atl_cfg.symbolizer;
    char set[4200];
    if (want && *want) {
        if (!on_path(want, a2l_path, sizeof a2l_path))
            atl_log(ATL_WARN, "source lines: %s is no program to run: reports name functions "
                              "and offsets",
                    atl_hint_setting("ATLAS_SYMBOLIZER", want, set, sizeof set));
        return;
    }
    if (!on_path("addr2line", a2l_path, sizeof a2l_path) &&
        !on_path("llvm-addr2line", a2l_path, sizeof a2l_path))
        atl_log(ATL_WARN,
                "source lines: libdw (elfutils) is not installed and no addr2line program was "
                "found on PATH: reports name functions and offsets, not files and lines; install "
                "one (Debian and Ubuntu: apt-get install libdw1, or binutils), or name an "
                "addr2line program with %s",
                atl_hint_name("ATLAS_SYMBOLIZER", set, sizeof set));
}

/* The line of m's pc from the symbolizer: 1 found, 0 none there, -1 the program failed (not
 * to be asked about this file again). */
static int external_line(const struct mapped *m, char *file, size_t filesz, int *line,
                         char *func, size_t funcsz)
{
    pthread_once(&a2l_once, a2l_find);
    if (!a2l_path[0])
        return 0;
    char addr[32], env_path[4200];
    snprintf(addr, sizeof addr, "0x%lx", (unsigned long)(m->pc - m->bias));
    const char *pathv = getenv("PATH");
    snprintf(env_path, sizeof env_path, "PATH=%s", pathv ? pathv : "/usr/bin:/bin");
    char *argv[] = {a2l_path, "-f", "-i", "-e", (char *)m->path, addr, NULL};
    char *envp[] = {env_path, "LC_ALL=C", NULL};
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, a2l_path, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        return -1;
    }
    char buf[8192];
    size_t got = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int done = 0, late = 0;
    while (!done && got < sizeof buf - 1) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (ms >= SYMBOLIZER_MS) {
            late = 1;
            break;
        }
        struct pollfd p = {.fd = out[0], .events = POLLIN};
        int r = poll(&p, 1, (int)(SYMBOLIZER_MS - ms));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            late = r == 0;
            break;
        }
        ssize_t n = read(out[0], buf + got, sizeof buf - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            done = 1;
        else
            got += (size_t)n;
    }
    close(out[0]);
    if (late)
        kill(pid, SIGKILL);
    int st = 0;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
        ;
    /* a program that reaps every child (or ignores SIGCHLD) took its status: its output says */
    if (late || (w == pid && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)))
        return -1;
    buf[got] = '\0';
    /* pairs of lines (-i: pc's own, then each function it was inlined into, outwards): the
     * function ("??" unknown), "FILE:LINE" ("??:0", "??:?" unknown) maybe followed by
     * " (discriminator N)". The line: the innermost not in a CUDA header's inlined helper
     * (the first where all are); the function: the outermost, the one pc lies in. */
    char *p = buf, *fn_last = NULL;
    int found = 0, pairs = 0;
    while (*p) {
        char *fn = p, *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        char *loc = nl + 1, *end = strchr(loc, '\n');
        if (!end)
            break;
        *end = '\0';
        p = end + 1;
        pairs++;
        fn_last = fn;
        if (found == 2)
            continue;
        loc[strcspn(loc, " ")] = '\0';
        char *colon = strrchr(loc, ':');
        if (!colon || colon == loc || !strncmp(loc, "??", 2))
            continue;
        *colon = '\0';
        long ln = strtol(colon + 1, NULL, 10);
        if (ln <= 0 || ln > INT32_MAX)
            continue;
        if (found && atl_sym_cuda_header(loc))
            continue;
        snprintf(file, filesz, "%s", loc);
        *line = (int)ln;
        found = atl_sym_cuda_header(loc) ? 1 : 2;
    }
    if (!pairs)
        return -1;
    if (funcsz && !func[0] && fn_last && strcmp(fn_last, "??") != 0)
        snprintf(func, funcsz, "%s", fn_last);
    return found > 0;
}
