/*
 * fake_ptds.c: the per-thread default stream twins and their legacy
 * functions, generated from ptds.def.
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

/* ------------------------------------------------------------------------ */
/* The per-thread default stream twins and their legacy functions: ptds.def  */
/* ------------------------------------------------------------------------ */

/* name: the exported function; impl: the body it shares with its twin */
#define FAKE_PT_FN(name, impl, params, args)                                                       \
    CUresult name params                                                                           \
    {                                                                                              \
        ENTER(name);                                                                               \
        return impl args;                                                                          \
    }
#define FAKE_PT(api, ver, sym, sfx, params, args)                                                  \
    FAKE_PT_FN(sym, sym##_impl, params, args)                                                      \
    FAKE_PT_FN(sym##_##sfx, sym##_impl, params, args)
#define FAKE_PT_TWIN(api, ver, sym, sfx, params, args)                                             \
    FAKE_PT_FN(sym##_##sfx, sym##_impl, params, args)
#include "ptds.def"
#undef FAKE_PT
#undef FAKE_PT_TWIN
