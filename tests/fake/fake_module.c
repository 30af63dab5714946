/*
 * fake_module.c: modules, libraries, kernel names and parameter layouts.
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

/* ------------------------------------------------------------------------ */
/* Modules and libraries                                                     */
/* ------------------------------------------------------------------------ */

/* tests/fake/fake_redzone.c: the host twin of atlastrace's red-zone PTX, or NULL */
const struct fake_image *fake_redzone_twin(const void *image);

static CUresult module_load_image(CUmodule *module, const void *image)
{
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    const struct fake_image *twin = fake_redzone_twin(image);
    struct fake_mod *m;
    TRY(mod_create(twin ? twin : image, NULL, 0, &m));
    *module = (CUmodule)&m->as_module;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    ENTER(cuModuleLoad);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_mod *m;
    TRY(mod_load_named(fname, 0, &m));
    *module = (CUmodule)&m->as_module;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    ENTER(cuModuleLoadData);
    return module_load_image(module, image);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues)
{
    ENTER(cuModuleLoadDataEx);
    return module_load_image(module, image);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    ENTER(cuModuleLoadFatBinary);
    return module_load_image(module, fatCubin);
}

static CUresult mod_unload(const void *h, uint32_t magic)
{
    TRY(need_init());
    LOCK();
    struct fake_mod *m = handle_get(h, magic);
    if (m && magic == MAGIC_MODULE && m->is_library)
        m = NULL; /* a library's module goes with the library */
    if (m)
        mod_unregister_locked(m);
    UNLOCK();
    if (!m)
        return CUDA_ERROR_INVALID_HANDLE;
    mod_free(m);
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod)
{
    ENTER(cuModuleUnload);
    return mod_unload(hmod, MAGIC_MODULE);
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    ENTER(cuModuleGetFunction);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_mod *m = handle_get(hmod, MAGIC_MODULE);
    CUresult r = m ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; m && i < m->img->nkernels; i++)
        if (strcmp(m->fns[i].def->name, name) == 0) {
            *hfunc = (CUfunction)&m->fns[i].as_func;
            r = CUDA_SUCCESS;
            break;
        }
    UNLOCK();
    return r;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                           void **jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions)
{
    ENTER(cuLibraryLoadData);
    TRY(need_init());
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_mod *m;
    TRY(mod_create(code, NULL, 1, &m));
    *library = (CUlibrary)&m->as_library;
    return CUDA_SUCCESS;
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions)
{
    ENTER(cuLibraryLoadFromFile);
    TRY(need_init());
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_mod *m;
    TRY(mod_load_named(fileName, 1, &m));
    *library = (CUlibrary)&m->as_library;
    return CUDA_SUCCESS;
}

CUresult cuLibraryUnload(CUlibrary library)
{
    ENTER(cuLibraryUnload);
    return mod_unload(library, MAGIC_LIBRARY);
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    ENTER(cuLibraryGetKernel);
    TRY(need_init());
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_mod *m = handle_get(library, MAGIC_LIBRARY);
    CUresult r = m ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; m && i < m->img->nkernels; i++)
        if (strcmp(m->fns[i].def->name, name) == 0) {
            *pKernel = (CUkernel)&m->fns[i].as_kernel;
            r = CUDA_SUCCESS;
            break;
        }
    UNLOCK();
    return r;
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    ENTER(cuLibraryGetModule);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_mod *m = handle_get(library, MAGIC_LIBRARY);
    UNLOCK();
    if (!m)
        return CUDA_ERROR_INVALID_HANDLE;
    *pMod = (CUmodule)&m->as_module;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    ENTER(cuKernelGetFunction);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_fn *f = handle_get(kernel, MAGIC_KERNEL);
    UNLOCK();
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = (CUfunction)&f->as_func;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    ENTER(cuFuncGetModule);
    TRY(need_init());
    if (!hmod)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_fn *f = handle_get(hfunc, MAGIC_FUNC);
    UNLOCK();
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *hmod = (CUmodule)&f->mod->as_module;
    return CUDA_SUCCESS;
}

static CUresult fn_name(const char **name, const void *h, uint32_t magic)
{
    TRY(need_init());
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_fn *f = handle_get(h, magic);
    UNLOCK();
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->def->name;
    return CUDA_SUCCESS;
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    ENTER(cuFuncGetName);
    return fn_name(name, hfunc, MAGIC_FUNC);
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    ENTER(cuKernelGetName);
    return fn_name(name, hfunc, MAGIC_KERNEL);
}

static CUresult fn_param_info(const void *h, uint32_t magic, size_t idx, size_t *off, size_t *size)
{
    TRY(need_init());
    if (!off)
        return CUDA_ERROR_INVALID_VALUE;
    /* measured on the H200 (driver 13): a thread with no current context is
     * refused the layout, of a CUkernel too (cudart on a new thread looks a
     * kernel up before it makes the primary context current) */
    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    LOCK();
    struct fake_fn *f = handle_get(h, magic);
    UNLOCK();
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (idx >= f->def->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    *off = f->offsets[idx];
    if (size)
        *size = f->def->param_sizes[idx];
    return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                            size_t *paramSize)
{
    ENTER(cuFuncGetParamInfo);
    return fn_param_info(func, MAGIC_FUNC, paramIndex, paramOffset, paramSize);
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                              size_t *paramSize)
{
    ENTER(cuKernelGetParamInfo);
    return fn_param_info(kernel, MAGIC_KERNEL, paramIndex, paramOffset, paramSize);
}
