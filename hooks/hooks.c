/*
 * The wrappers, generated from hooks.def and kinds.h.
 *
 * Each hooked symbol gets three entry points that differ only in the path
 * they count: the exported one (programs linked against libcuda), one handed
 * out by our dlsym, one handed out by cuGetProcAddress. Each forwards to the
 * real function of its own exact variant.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include "hooks.h"

#include "kinds.h"

void *atl_real_ptr[ATL_ID_COUNT];

#define ATL_REAL_OF(sym)                                                                           \
    ((__typeof__(&sym))__atomic_load_n(&atl_real_ptr[ATL_ID_##sym], __ATOMIC_ACQUIRE))

/* The idle path: one load of atl_on, one predictable branch, a tail call
 * (launch kinds: one more test, for the fault latch's light path).
 * Everything else lives in a separate cold function so the fast path needs
 * no stack frame. */
#define ATL_ENTRY(sym, KIND, fname, path, storage)                                                 \
    static __attribute__((noinline, cold)) CUresult slow_##fname(ATL_K_##KIND##_P)                 \
    {                                                                                              \
        const int id_ = ATL_ID_##sym;                                                              \
        __typeof__(&sym) real_ = ATL_REAL_OF(sym);                                                 \
        if (!real_) {                                                                              \
            atl_bind_driver();                                                                     \
            real_ = ATL_REAL_OF(sym);                                                              \
            if (!real_)                                                                            \
                return CUDA_ERROR_NOT_SUPPORTED;                                                   \
        }                                                                                          \
        if (!atl_enter(id_, path))                                                                 \
            return real_(ATL_K_##KIND##_A);                                                        \
        ATL_K_##KIND##_PRE CUresult r_ = real_(ATL_K_##KIND##_A);                                  \
        ATL_K_##KIND##_POST atl_leave();                                                           \
        return r_;                                                                                 \
    }                                                                                              \
    storage CUresult CUDAAPI fname(ATL_K_##KIND##_P)                                               \
    {                                                                                              \
        const int id_ = ATL_ID_##sym;                                                              \
        (void)id_;                                                                                 \
        __typeof__(&sym) real_ = ATL_REAL_OF(sym);                                                 \
        unsigned on_ = __atomic_load_n(&atl_on, __ATOMIC_RELAXED);                                 \
        if (__builtin_expect(!(on_ & (ATL_K_##KIND##_BIT)) && real_, 1)) {                         \
            ATL_K_##KIND##_LIGHT return real_(ATL_K_##KIND##_A);                                   \
        }                                                                                          \
        return slow_##fname(ATL_K_##KIND##_A);                                                     \
    }

#define ATL_EXPORTED __attribute__((visibility("default")))

#define ATL_HOOK(sym, KIND, FLAGS)                                                                 \
    ATL_ENTRY(sym, KIND, sym, ATL_PATH_LINKED, ATL_EXPORTED)                                       \
    ATL_ENTRY(sym, KIND, atl_dl_##sym, ATL_PATH_DLSYM, static)                                     \
    ATL_ENTRY(sym, KIND, atl_gpa_##sym, ATL_PATH_GPA, static)
#include "hooks.def"
#undef ATL_HOOK

void *const atl_wrappers[ATL_PATH_COUNT][ATL_ID_COUNT] = {
    {
#define ATL_HOOK(sym, KIND, FLAGS) (void *)sym,
#include "hooks.def"
#undef ATL_HOOK
    },
    {
#define ATL_HOOK(sym, KIND, FLAGS) (void *)atl_dl_##sym,
#include "hooks.def"
#undef ATL_HOOK
    },
    {
#define ATL_HOOK(sym, KIND, FLAGS) (void *)atl_gpa_##sym,
#include "hooks.def"
#undef ATL_HOOK
    },
};
