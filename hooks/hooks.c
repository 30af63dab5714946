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

/* Which bit of atl_on turns each light path on (hooks.def's LIGHT column). */
#define ATL_LIGHT_RING_BIT ATL_ON_LAUNCH_RING
#define ATL_LIGHT_DTOH_BIT ATL_ON_DTOH_COUNT

/* The common head of mid_ and named_: the hook's id and real function. */
#define ATL_HEAD(sym)                                                                              \
    const int id_ = ATL_ID_##sym;                                                                  \
    (void)id_;                                                                                     \
    __typeof__(&sym) real_ = ATL_REAL_OF(sym);

/* The RING light path's cold half, named_: a kernel the recorder's table
 * lacks, or its first launch in the recorder's epoch (ring.h). It records
 * the launch, keeps its arguments with its number, and calls the driver:
 * never back to mid_, which would come here again for a handle that cannot
 * be entered (NULL, out of memory). */
#define ATL_NAMED(sym, KIND, fname, attr)                                                          \
    static __attribute__((noinline, cold, attr)) CUresult named_##fname(ATL_K_##KIND##_P)          \
    {                                                                                              \
        ATL_HEAD(sym)                                                                              \
        if (!real_)                                                                                \
            return slow_##fname(ATL_K_##KIND##_A);                                                 \
        uint64_t seq_ = atl_light_record_##KIND(id_, ATL_K_##KIND##_A);                            \
        atl_light_first_##KIND(seq_, ATL_K_##KIND##_A);                                            \
        return real_(ATL_K_##KIND##_A);                                                            \
    }

/* mid_, the light path in C: steps(KIND, fname), statements that end in a
 * return, while the engine does not want the call; else the engine. */
#define ATL_MID_BODY(sym, KIND, fname, steps)                                                      \
    static __attribute__((noinline, noclone, used)) CUresult mid_##fname(ATL_K_##KIND##_P)         \
    {                                                                                              \
        ATL_HEAD(sym)                                                                              \
        unsigned on_ = __atomic_load_n(&atl_on, __ATOMIC_RELAXED);                                 \
        if (__builtin_expect(!(on_ & (ATL_K_##KIND##_BIT)) && real_, 1)) {                         \
            steps(KIND, fname)                                                                     \
        }                                                                                          \
        return slow_##fname(ATL_K_##KIND##_A);                                                     \
    }

/* RING in C: kinds.h's atl_light_* of the kind, then the driver. */
#define ATL_RING_STEPS(KIND, fname)                                                                \
    if (__builtin_expect(!atl_light_ready_##KIND(ATL_K_##KIND##_A), 0))                            \
        return named_##fname(ATL_K_##KIND##_A);                                                    \
    atl_light_record_##KIND(id_, ATL_K_##KIND##_A);                                                \
    return real_(ATL_K_##KIND##_A);
#define ATL_MID_RING_C(sym, KIND, fname)                                                           \
    ATL_NAMED(sym, KIND, fname, unused)                                                            \
    ATL_MID_BODY(sym, KIND, fname, ATL_RING_STEPS)

/* ATL_PICK(ATL_K_KIND_ASM_MID, dflt): the kind's own mid_ maker when it is
 * defined (as `~, maker`), else dflt. */
#define ATL_SECOND(a, b, ...) b
#define ATL_PICK(probe, dflt) ATL_SECOND(probe, dflt, ~)
#define ATL_MID_RING(sym, KIND, fname)                                                             \
    ATL_PICK(ATL_K_##KIND##_ASM_MID, ATL_MID_RING_C)(sym, KIND, fname)

/* DTOH: the copy, then its count (kinds.h's atl_light_dtoh). */
#define ATL_DTOH_STEPS(KIND, fname) return atl_light_dtoh(id_, real_, ATL_K_##KIND##_A);
#define ATL_MID_DTOH(sym, KIND, fname) ATL_MID_BODY(sym, KIND, fname, ATL_DTOH_STEPS)

/* Per entry point:
 *   fname  the entry (ATL_FAST below): atl_on says whether the engine wants
 *          the call (-> slow_) or, for a row with a light path, whether that
 *          is on (-> mid_); otherwise a tail call to the driver, with no
 *          stack frame;
 *   mid_   the light path (hooks.def's LIGHT column), then the driver;
 *   slow_  the engine's full path, cold; left by longjmp or cancellation (glibc runs
 *          the cleanup buffer pushed here) or by a C++ exception thrown through the
 *          driver call (a host function of the fake driver's, a callback: this file
 *          is built with -fexceptions, and live_'s cleanup runs as the exception
 *          passes), atl_unwound undoes what it began (engine.h), once (live_). A
 *          kind's PRE that answers the call itself leaves by ATL_SLOW_RETURN: the
 *          buffer must leave glibc's list before its frame goes (a held free once
 *          left it there, for a later longjmp to run from a dead frame). */
static inline void atl_unwound_once(void *live)
{
    if (*(int *)live) {
        *(int *)live = 0;
        atl_unwound(NULL);
    }
}
static inline void atl_unwound_scope(int *live)
{
    atl_unwound_once(live);
}
/* Not instrumented by AddressSanitizer: it puts a no-return hook before the landing pad's
 * _Unwind_Resume, which fails its own check when a cancelled thread's forced unwind passes
 * (seen: CHECK failed in asan_thread.cpp, a thread cancelled inside a hooked sync). What the
 * slow path calls is instrumented as before. */
#define ATL_SLOW_ATTRS __attribute__((noinline, noclone, cold, used, no_sanitize("address")))
#define ATL_SLOW_RETURN(value)                                                                     \
    do {                                                                                           \
        if (st0_)                                                                                  \
            atl_selftime_add(id_, st0_, st1_, st2_);                                               \
        _pthread_cleanup_pop(&unwound_, 0);                                                        \
        live_ = 0;                                                                                 \
        atl_leave();                                                                               \
        return (value);                                                                            \
    } while (0)
#define ATL_SLOW(sym, KIND, fname, path)                                                           \
    static ATL_SLOW_ATTRS CUresult slow_##fname(ATL_K_##KIND##_P)                                 \
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
        int live_ __attribute__((cleanup(atl_unwound_scope))) = 1;                                 \
        struct _pthread_cleanup_buffer unwound_;                                                   \
        _pthread_cleanup_push(&unwound_, atl_unwound_once, &live_);                                \
        /* ATLAS_SELF_TIME: the clock at the entry, around the real call (src/stats.h) */          \
        uint64_t st0_ = __builtin_expect(atl_selftime_on, 0) ? atl_selftime_now() : 0, st1_ = 0,   \
                 st2_ = 0;                                                                         \
        ATL_K_##KIND##_PRE if (st0_) st1_ = atl_selftime_now();                                    \
        CUresult r_ = real_(ATL_K_##KIND##_A);                                                     \
        if (st0_)                                                                                  \
            st2_ = atl_selftime_now();                                                             \
        ATL_K_##KIND##_POST ATL_SLOW_RETURN(r_);                                                   \
    }
#define ATL_ENTRY(sym, KIND, fname, path, storage)                                                 \
    ATL_SLOW(sym, KIND, fname, path)                                                               \
    ATL_FAST(sym, KIND, fname, storage)
#define ATL_ENTRY_LIGHT(sym, KIND, fname, path, storage, LIGHT)                                    \
    ATL_SLOW(sym, KIND, fname, path)                                                               \
    ATL_MID_##LIGHT(sym, KIND, fname)                                                              \
        ATL_FAST_LIGHT(sym, KIND, fname, storage, ATL_LIGHT_##LIGHT##_BIT)

#if defined(__x86_64__) && !defined(ATL_C_FAST)
/* On x86-64 the entry itself is six instructions of assembly (eight with a
 * light path), the same for every signature: in C, GCC reloads and stores back every argument
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
/* cuLaunchKernel and cuLaunchCooperativeKernel: the light path (ring.h) in
 * assembly, reached from the entry below once it has seen the driver's
 * function bound. In C, GCC saves six registers and copies the five stack
 * arguments back and forth around the tail call (25 of 68 instructions);
 * here only the scratch registers rax, r10 and r11 are used and nothing
 * moves. The steps are those of atl_ring_ready and atl_ring_put:
 *   the table entry at ((f * MUL) >> SHIFT) & mask, probing on past other keys
 *     (an empty key: not in the table, named_);
 *   its epoch against atl_fl.epoch (different: the first launch in the
 *     recorder's epoch, named_; an empty entry's epoch is 0, never current,
 *     so a NULL f ends there too);
 *   the launch number, the slot (seq zeroed first, stored last), the driver.
 * Arguments: rdi f, esi/edx/ecx gx/gy/gz, r8d/r9d bx/by, then on the stack
 * 8 bz, 16 shmem, 24 hStream. fault.h and kernels.h check the offsets. */
#define ATL_MID_GRID_ASM(sym, KIND, fname)                                                         \
    ATL_NAMED(sym, KIND, fname, used)                                                              \
    static __attribute__((naked, noinline, noclone, used)) CUresult mid_##fname(ATL_K_##KIND##_P)  \
    {                                                                                              \
        __asm__("movq atl_fl+16(%%rip), %%rax\n\t"                                                 \
                "imulq %2, %%rdi, %%r10\n\t"                                                       \
                "shrq %3, %%r10\n"                                                                 \
                "1:\n\t"                                                                           \
                "andq (%%rax), %%r10\n\t"                                                          \
                "cmpq %%rdi, 32(%%rax,%%r10)\n\t"                                                  \
                "jne 2f\n\t"                                                                       \
                "movq atl_fl+24(%%rip), %%r11\n\t"                                                 \
                "cmpq %%r11, 40(%%rax,%%r10)\n\t"                                                  \
                "jne named_" #fname "\n\t"                                                         \
                "movl $1, %%eax\n\t"                                                               \
                "lock xaddq %%rax, atl_launch_seq(%%rip)\n\t"                                      \
                "movq %%rax, %%r10\n\t"                                                            \
                "andq atl_fl+8(%%rip), %%r10\n\t"                                                  \
                "shlq $6, %%r10\n\t"                                                               \
                "addq atl_fl(%%rip), %%r10\n\t"                                                    \
                "movq $0, (%%r10)\n\t"                                                             \
                "movq %%rdi, 8(%%r10)\n\t"                                                         \
                "movq 24(%%rsp), %%r11\n\t"                                                        \
                "movq %%r11, 16(%%r10)\n\t"                                                        \
                "movl %%esi, 24(%%r10)\n\t"                                                        \
                "movl %%edx, 28(%%r10)\n\t"                                                        \
                "movl %%ecx, 32(%%r10)\n\t"                                                        \
                "movl %%r8d, 36(%%r10)\n\t"                                                        \
                "movl %%r9d, 40(%%r10)\n\t"                                                        \
                "movl 8(%%rsp), %%r11d\n\t"                                                        \
                "movl %%r11d, 44(%%r10)\n\t"                                                       \
                "movl 16(%%rsp), %%r11d\n\t"                                                       \
                "movl %%r11d, 48(%%r10)\n\t"                                                       \
                "movl %1, 52(%%r10)\n\t"                                                           \
                "movq %%rax, (%%r10)\n\t"                                                          \
                "jmpq *atl_real_ptr+%c0(%%rip)\n"                                                  \
                "2:\n\t"                                                                           \
                "cmpq $0, 32(%%rax,%%r10)\n\t"                                                     \
                "je named_" #fname "\n\t"                                                          \
                "addq $32, %%r10\n\t"                                                              \
                "jmp 1b" ::"i"(ATL_ID_##sym * sizeof(void *)),                                     \
                "i"(ATL_ID_##sym), "i"((int32_t)ATL_KTAB_MUL), "i"(ATL_KTAB_SHIFT));               \
    }
#define ATL_K_LAUNCH_ASM_MID ~, ATL_MID_GRID_ASM
#define ATL_K_LAUNCH_COOP_ASM_MID ~, ATL_MID_GRID_ASM

/* A row without a light path: the engine, or the driver. */
#define ATL_FAST(sym, KIND, fname, storage)                                                        \
    storage __attribute__((naked)) CUresult CUDAAPI fname(ATL_K_##KIND##_P)                        \
    {                                                                                              \
        __asm__(ATL_ENDBR "testl %1, atl_on(%%rip)\n\t"                                            \
                          "jnz slow_" #fname "\n\t"                                                \
                          "movq atl_real_ptr+%c0(%%rip), %%rax\n\t"                                \
                          "testq %%rax, %%rax\n\t"                                                 \
                          "jz slow_" #fname "\n\t"                                                 \
                          "jmp *%%rax" ::"i"(ATL_ID_##sym * sizeof(void *)),                       \
                "i"(ATL_K_##KIND##_BIT));                                                          \
    }
/* A row with a light path: the engine, the light path (mid_), or the driver. */
#define ATL_FAST_LIGHT(sym, KIND, fname, storage, lightbit)                                        \
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
                "i"(ATL_K_##KIND##_BIT), "i"(lightbit));                                           \
    }
#else
#define ATL_FAST(sym, KIND, fname, storage)                                                        \
    storage CUresult CUDAAPI fname(ATL_K_##KIND##_P)                                               \
    {                                                                                              \
        __typeof__(&sym) real_ = ATL_REAL_OF(sym);                                                 \
        unsigned on_ = __atomic_load_n(&atl_on, __ATOMIC_RELAXED);                                 \
        if (__builtin_expect(!(on_ & ATL_K_##KIND##_BIT) && real_, 1))                             \
            return real_(ATL_K_##KIND##_A);                                                        \
        return slow_##fname(ATL_K_##KIND##_A);                                                     \
    }
#define ATL_FAST_LIGHT(sym, KIND, fname, storage, lightbit)                                        \
    storage CUresult CUDAAPI fname(ATL_K_##KIND##_P)                                               \
    {                                                                                              \
        __typeof__(&sym) real_ = ATL_REAL_OF(sym);                                                 \
        unsigned on_ = __atomic_load_n(&atl_on, __ATOMIC_RELAXED);                                 \
        if (__builtin_expect(!(on_ & (ATL_K_##KIND##_BIT | (lightbit))) && real_, 1))              \
            return real_(ATL_K_##KIND##_A);                                                        \
        return mid_##fname(ATL_K_##KIND##_A);                                                      \
    }
#endif

#define ATL_EXPORTED __attribute__((visibility("default")))

#define ATL_HOOK(sym, KIND, FLAGS)                                                                 \
    ATL_ENTRY(sym, KIND, sym, ATL_PATH_LINKED, ATL_EXPORTED)                                       \
    ATL_ENTRY(sym, KIND, atl_dl_##sym, ATL_PATH_DLSYM, static)                                     \
    ATL_ENTRY(sym, KIND, atl_gpa_##sym, ATL_PATH_GPA, static)
#define ATL_HOOK_LIGHT(sym, KIND, FLAGS, LIGHT)                                                    \
    ATL_ENTRY_LIGHT(sym, KIND, sym, ATL_PATH_LINKED, ATL_EXPORTED, LIGHT)                          \
    ATL_ENTRY_LIGHT(sym, KIND, atl_dl_##sym, ATL_PATH_DLSYM, static, LIGHT)                        \
    ATL_ENTRY_LIGHT(sym, KIND, atl_gpa_##sym, ATL_PATH_GPA, static, LIGHT)
#include "hooks.def"
#undef ATL_HOOK
#undef ATL_HOOK_LIGHT

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
