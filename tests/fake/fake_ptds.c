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
/* a twin: its 0 is the calling thread's per-thread stream (fake_pt_call) */
#define FAKE_PT_FN_PT(name, impl, params, args)                                                    \
    CUresult name params                                                                           \
    {                                                                                              \
        ENTER(name);                                                                               \
        int was_ = fake_pt_call;                                                                   \
        fake_pt_call = 1;                                                                          \
        CUresult r_ = impl args;                                                                   \
        fake_pt_call = was_;                                                                       \
        return r_;                                                                                 \
    }
#define FAKE_PT(api, ver, sym, sfx, params, args)                                                  \
    FAKE_PT_FN(sym, sym##_impl, params, args)                                                      \
    FAKE_PT_FN_PT(sym##_##sfx, sym##_impl, params, args)
#define FAKE_PT_TWIN(api, ver, sym, sfx, params, args)                                             \
    FAKE_PT_FN_PT(sym##_##sfx, sym##_impl, params, args)
#include "ptds.def"
#undef FAKE_PT
#undef FAKE_PT_TWIN
