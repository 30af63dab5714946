/*
 * Stack frames named by file and line (src/symbols.c): a program built with debug
 * information that leaks one allocation made in its own code, one made in a shared library
 * it loads (argv[1], sym_lib.c built as the test chooses) and one made through a stand-in of
 * CUDA's runtime linked into it without debug information (sym_rt.c), one through a helper of
 * a CUDA header inlined into its function (cuda_runtime_sym.h), one through a kernel's
 * launch stub (the same), then, per argv[2], leaves
 * that library's file as it is ("keep"), overwrites it with bytes that are no ELF file
 * ("garbage"), with its first 2 KiB only ("truncated"), or removes it ("missing") before the
 * leak report reads it. The mapped copy stays: the program itself is unaffected. Or
 * ("cut-in-place"): an overrun report names a frame of the library (ATLAS_REDZONE), its file is
 * cut short in place, past its loaded segments (the program's code stays, its symbol table and
 * debug information go), and a second report names a frame of it that none named before.
 */
#include "../fake/fakecuda.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) CUdeviceptr own_alloc(size_t n)
{
    CUdeviceptr p = 0;
    cuMemAlloc(&p, n); /* OWN_ALLOC_LINE */
    __asm__ volatile("" ::: "memory");
    return p;
}

#include "cuda_runtime_sym.h" /* cudaFakeMalloc (sym_rt.c), and an inline helper */

__attribute__((noinline)) CUdeviceptr rt_alloc(size_t n)
{
    CUdeviceptr p = cudaFakeMalloc(n); /* RT_ALLOC_LINE */
    __asm__ volatile("" ::: "memory");
    return p;
}

/* CUDA's header's helper inlined here: the line this function calls it at */
__attribute__((noinline)) CUdeviceptr inl_alloc(size_t n)
{
    CUdeviceptr p = cudaFakeMallocT(n); /* INL_ALLOC_LINE */
    __asm__ volatile("" ::: "memory");
    return p;
}

/* A kernel's host function as nvcc makes it, poke(float*) (with the program's line
 * information), calling its launch stub; the user's line is the launch's, one frame out. */
CUdeviceptr _Z23__device_stub__Z4pokePfPf(size_t n); /* sym_rt.c */
CUdeviceptr _Z4pokePf(size_t n);

__attribute__((noinline)) CUdeviceptr _Z4pokePf(size_t n)
{
    CUdeviceptr p = _Z23__device_stub__Z4pokePfPf(n);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) CUdeviceptr launch_alloc(size_t n)
{
    CUdeviceptr p = _Z4pokePf(n); /* LAUNCH_ALLOC_LINE */
    __asm__ volatile("" ::: "memory");
    return p;
}

/* The end of path's last loaded segment in the file: what the loader mapped of it. */
static off_t loaded_end(const char *path)
{
    int fd = open(path, O_RDONLY);
    ElfW(Ehdr) eh;
    off_t end = 0;
    if (fd >= 0 && pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh)
        for (int i = 0; i < eh.e_phnum; i++) {
            ElfW(Phdr) ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (size_t)i * sizeof ph)) !=
                (ssize_t)sizeof ph)
                break;
            if (ph.p_type == PT_LOAD && (off_t)(ph.p_offset + ph.p_filesz) > end)
                end = (off_t)(ph.p_offset + ph.p_filesz);
        }
    if (fd >= 0)
        close(fd);
    return end;
}

/* An overrun of an allocation made through alloc, found at its free (ATLAS_REDZONE). */
static void overrun(CUdeviceptr (*alloc)(size_t))
{
    CUdeviceptr p = alloc(100);
    ((volatile char *)p)[100] = 1; /* device memory is host memory on the fake driver */
    cuMemFree(p);
}

/* Replaces path with n bytes of `bytes` (NULL: garbage), by a new file renamed over it. */
static int replace_file(const char *path, const char *bytes, size_t n)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    char junk[2048];
    memset(junk, 0x5a, sizeof junk);
    if (!bytes)
        bytes = junk, n = sizeof junk;
    int ok = write(fd, bytes, n) == (ssize_t)n;
    close(fd);
    return ok ? rename(tmp, path) : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: sym_prog LIB keep|garbage|truncated|missing|cut-in-place\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx))
        return 1;
    void *lib = dlopen(argv[1], RTLD_NOW);
    CUdeviceptr (*sym_alloc)(size_t) = lib ? (CUdeviceptr(*)(size_t))dlsym(lib, "sym_alloc") : NULL;
    if (!sym_alloc) {
        fprintf(stderr, "sym_prog: %s\n", dlerror());
        return 1;
    }
    if (!strcmp(argv[2], "cut-in-place")) {
        CUdeviceptr (*sym_alloc2)(size_t) = (CUdeviceptr(*)(size_t))dlsym(lib, "sym_alloc2");
        off_t end = loaded_end(argv[1]);
        overrun(sym_alloc);
        int rc = end > 0 && sym_alloc2 ? truncate(argv[1], end) : -1;
        overrun(sym_alloc2);
        printf("cut-in-place: %s\n", rc == 0 ? "done" : "failed");
        return rc == 0 ? 0 : 1;
    }
    own_alloc(111);
    sym_alloc(222);
    rt_alloc(333);
    launch_alloc(444);
    inl_alloc(555);
    const char *how = argv[2];
    int rc = 0;
    if (!strcmp(how, "garbage")) {
        rc = replace_file(argv[1], NULL, 0);
    } else if (!strcmp(how, "truncated")) {
        char head[2048];
        FILE *f = fopen(argv[1], "rb");
        size_t n = f ? fread(head, 1, sizeof head, f) : 0;
        if (f)
            fclose(f);
        rc = n ? replace_file(argv[1], head, n) : -1;
    } else if (!strcmp(how, "missing")) {
        rc = unlink(argv[1]);
    }
    printf("%s: %s\n", how, rc == 0 ? "done" : "failed");
    return rc == 0 ? 0 : 1;
}
