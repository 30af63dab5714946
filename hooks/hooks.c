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

/* Three functions per entry point:
 *   fname  the entry (ATL_FAST below): atl_on says whether the engine wants
 *          the call (-> slow_) or the kind's light path is on (-> mid_);
 *          otherwise a tail call to the driver, with no stack frame;
 *   mid_   the light path (ATL_K_KIND_LIGHT: the launch ring, the DtoH
 *          count), written inline, then the driver;
 *   slow_  the engine's full path, cold. */
#define ATL_ENTRY(sym, KIND, fname, path, storage)                                                 \
    static __attribute__((noinline, noclone, cold, used)) CUresult slow_##fname(ATL_K_##KIND##_P)  \
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
    static CUresult mid_##fname(ATL_K_##KIND##_P);                                                 \
    /* the light path's cold half: records the launch itself (never back to                     \
     * mid_, which would come here again for a handle that cannot be named) */                    \
    static __attribute__((noinline, cold, unused)) CUresult named_##fname(ATL_K_##KIND##_P)        \
    {                                                                                              \
        const int id_ = ATL_ID_##sym;                                                              \
        (void)id_;                                                                                 \
        __typeof__(&sym) real_ = ATL_REAL_OF(sym);                                                 \
        if (!real_)                                                                                \
            return slow_##fname(ATL_K_##KIND##_A);                                                 \
        ATL_K_##KIND##_NAMED ATL_K_##KIND##_RECORD return real_(ATL_K_##KIND##_A);                 \
    }                                                                                              \
    static __attribute__((noinline, noclone, used)) CUresult mid_##fname(ATL_K_##KIND##_P)         \
    {                                                                                              \
        const int id_ = ATL_ID_##sym;                                                              \
        (void)id_;                                                                                 \
        __typeof__(&sym) real_ = ATL_REAL_OF(sym);                                                 \
        unsigned on_ = __atomic_load_n(&atl_on, __ATOMIC_RELAXED);                                 \
        if (__builtin_expect(!(on_ & (ATL_K_##KIND##_BIT)) && real_, 1)) {                         \
            ATL_K_##KIND##_LIGHT(named_##fname) return real_(ATL_K_##KIND##_A);                    \
        }                                                                                          \
        return slow_##fname(ATL_K_##KIND##_A);                                                     \
    }                                                                                              \
    ATL_FAST(sym, KIND, fname, storage)

#if defined(__x86_64__) && !defined(ATL_C_FAST)
/* On x86-64 the entry itself is eight instructions of assembly, the same
 * for every signature: in C, GCC reloads and stores back every argument
 * passed on the stack before a tail call (cuLaunchKernel has five), which
 * cost 40 instructions a launch. The function is naked: no frame, only the
 * scratch registers rax and r10 (no hooked function is variadic), and the
 * operands are constants (the hook's offset in atl_real_ptr, the kind's
 * atl_on bits). A call the engine wants goes straight to slow_. slow_ and
 * mid_ are named in the assembly, hence `used, noclone` on them and -fno-lto
 * for this file (mk/core.mk). Elsewhere, or with ATL_C_FAST, the entry is C. */
#ifdef __CET__
#define ATL_ENDBR "endbr64\n\t"
#else
#define ATL_ENDBR
#endif
#define ATL_FAST(sym, KIND, fname, storage)                                                        \
    storage __attribute__((naked)) CUresult CUDAAPI fname(ATL_K_##KIND##_P)                        \
    {                                                                                              \
        __asm__(ATL_ENDBR "movl atl_on(%%rip), %%r10d\n\t"                                         \
                          "testl %1, %%r10d\n\t"                                                   \
                          "jnz slow_" #fname "\n\t"                                                \
                          "movq atl_real_ptr+%c0(%%rip), %%rax\n\t"                                \
                          "testq %%rax, %%rax\n\t"                                                 \
                          "jz slow_" #fname "\n\t"                                                 \
                          "testl %2, %%r10d\n\t"                                                   \
                          "jnz mid_" #fname "\n\t"                                                 \
                          "jmp *%%rax" ::"i"(ATL_ID_##sym * sizeof(void *)),                       \
                "i"(ATL_K_##KIND##_BIT), "i"(ATL_K_##KIND##_LIGHTBIT));                            \
    }
#else
#define ATL_FAST(sym, KIND, fname, storage)                                                        \
    storage CUresult CUDAAPI fname(ATL_K_##KIND##_P)                                               \
    {                                                                                              \
        __typeof__(&sym) real_ = ATL_REAL_OF(sym);                                                 \
        unsigned on_ = __atomic_load_n(&atl_on, __ATOMIC_RELAXED);                                 \
        if (__builtin_expect(!(on_ & (ATL_K_##KIND##_BIT | ATL_K_##KIND##_LIGHTBIT)) && real_, 1)) \
            return real_(ATL_K_##KIND##_A);                                                        \
        return mid_##fname(ATL_K_##KIND##_A);                                                      \
    }
#endif

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
