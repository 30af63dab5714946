/*
 * The allocating half of bench/trace/trace_churn.c, in a library of its own with a large
 * symbol table (bench/trace/gen_syms.sh adds N exported functions that nothing calls), as a
 * framework's allocator sits in libtorch: every allocation and free the bench makes is called
 * from here, CHURN_VIA distinct functions deep, so the ledger's call stacks point into this
 * library, and a report that names them has a large module to search.
 *
 * CHURN_VIA functions of one frame size call the same chain: CHURN_VIA call chains meet at
 * one stack address (the stack cache's worst case, issue #43: one chain per Python line that
 * allocates).
 */
#include <cuda.h>

#define CHURN_VIA 100

/* noinline and a volatile depth: the chain stays CHURN_DEPTH real frames deep at -O2 */
static __attribute__((noinline)) CUresult deep_alloc(volatile int depth, CUdeviceptr *p, size_t n)
{
    if (depth > 0)
        return deep_alloc(depth - 1, p, n) + 0 * depth;
    return cuMemAlloc(p, n);
}

static __attribute__((noinline)) CUresult deep_free(volatile int depth, CUdeviceptr p)
{
    if (depth > 0)
        return deep_free(depth - 1, p) + 0 * depth;
    return cuMemFree(p);
}

#define CHURN_DEPTH 6

#define VIA(i)                                                                                     \
    __attribute__((noinline, visibility("default"))) CUresult churn_alloc_##i(CUdeviceptr *p,     \
                                                                               size_t n)           \
    {                                                                                              \
        CUresult r = deep_alloc(CHURN_DEPTH, p, n);                                                \
        __asm__ volatile("" ::: "memory");                                                         \
        return r;                                                                                  \
    }                                                                                              \
    __attribute__((noinline, visibility("default"))) CUresult churn_free_##i(CUdeviceptr p)       \
    {                                                                                              \
        CUresult r = deep_free(CHURN_DEPTH, p);                                                    \
        __asm__ volatile("" ::: "memory");                                                         \
        return r;                                                                                  \
    }
#define VIA10(t)                                                                                   \
    VIA(t##0) VIA(t##1) VIA(t##2) VIA(t##3) VIA(t##4) VIA(t##5) VIA(t##6) VIA(t##7) VIA(t##8)      \
        VIA(t##9)
VIA10() VIA10(1) VIA10(2) VIA10(3) VIA10(4) VIA10(5) VIA10(6) VIA10(7) VIA10(8) VIA10(9)

#define ENT(i) churn_alloc_##i,
#define ENT10(t) ENT(t##0) ENT(t##1) ENT(t##2) ENT(t##3) ENT(t##4) ENT(t##5) ENT(t##6) ENT(t##7) \
    ENT(t##8) ENT(t##9)
#define FENT(i) churn_free_##i,
#define FENT10(t) FENT(t##0) FENT(t##1) FENT(t##2) FENT(t##3) FENT(t##4) FENT(t##5) FENT(t##6) \
    FENT(t##7) FENT(t##8) FENT(t##9)

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
static const alloc_fn allocs[CHURN_VIA] = {ENT10() ENT10(1) ENT10(2) ENT10(3) ENT10(4) ENT10(5)
                                               ENT10(6) ENT10(7) ENT10(8) ENT10(9)};
static const free_fn frees[CHURN_VIA] = {FENT10() FENT10(1) FENT10(2) FENT10(3) FENT10(4)
                                             FENT10(5) FENT10(6) FENT10(7) FENT10(8) FENT10(9)};

/* An allocation of n bytes through chain `via` (any int: taken modulo CHURN_VIA). */
__attribute__((visibility("default"))) CUresult churn_alloc(int via, CUdeviceptr *p, size_t n)
{
    return allocs[(unsigned)via % CHURN_VIA](p, n);
}

__attribute__((visibility("default"))) CUresult churn_free(int via, CUdeviceptr p)
{
    return frees[(unsigned)via % CHURN_VIA](p);
}
