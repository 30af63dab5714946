/*
 * atlas/launch.h: a typed, exact and checked CUDA kernel-launch builder.
 *
 * cuLaunchKernel takes `void **kernelParams` and trusts it: two swapped arguments, a u32 where
 * the kernel takes a u64, or a CUtensorMap cut short, and the kernel reads garbage without a word.
 * This builder records every argument with its type and exact byte length, packs the bytes so
 * that nothing is truncated or shifted, compares the list with the kernel's real parameter
 * layout, and only then launches.
 *
 *     struct atlas_launch b;
 *     atlas_launch_init(&b, saxpy);
 *     atlas_launch_grid(&b, atlas_div_ceil(n, 256), 1, 1);
 *     atlas_launch_block(&b, 256, 1, 1);
 *     atlas_arg_ptr(&b, y);
 *     atlas_arg_ptr(&b, x);
 *     atlas_arg_f32(&b, alpha);
 *     atlas_arg_u32(&b, n);
 *     CUresult r = atlas_launch(&b, stream);
 *     if (r != CUDA_SUCCESS)
 *         fprintf(stderr, "saxpy: %s\n", atlas_launch_error(&b));
 *
 * Errors are sticky. The first error is kept in the builder; every later call on it does nothing;
 * atlas_launch() returns that error without launching. So a call site needs one check, at the
 * end. Errors found by the builder itself (too many arguments, an argument size the kernel does
 * not take, a NULL pointer given for bytes) are CUDA_ERROR_INVALID_VALUE; errors of the driver
 * are returned as the driver gave them. Either way atlas_launch_error() gives one line that
 * says what went wrong, naming the kernel, and the same line is printed once on stderr,
 * prefixed `atlas[PID]: launch: `.
 *
 * Nothing on the build or launch path allocates: the builder is a plain struct with fixed
 * inline capacity (ATLAS_LAUNCH_MAX_ARGS arguments in ATLAS_LAUNCH_MAX_SLOTS 8-byte slots). Past
 * that capacity the builder fails with an error; it never truncates. A builder holds no pointers
 * into itself, so it may be copied, and it may be launched again (the same arguments again).
 * One builder is for one thread at a time; different builders need no locking.
 *
 * Link: the application links the driver itself (-lcuda); libatlaslaunch leaves the driver
 * symbols undefined. `pkg-config --cflags --libs atlaslaunch` gives both.
 *
 * Environment, read once per process:
 *   ATLAS_DEBUG_SYNC_KERNELS=1  synchronise the context after every launch, so an asynchronous
 *                               fault is reported by the launch that caused it (kernel, grid,
 *                               block, shared memory, and a host backtrace on stderr) instead of
 *                               by some later, unrelated call. Diagnostic only: it serialises
 *                               the GPU. Launches into a capturing stream are not synchronised.
 */
#ifndef ATLAS_LAUNCH_H
#define ATLAS_LAUNCH_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ATLAS_LAUNCH_API __attribute__((visibility("default")))
#else
#define ATLAS_LAUNCH_API
#endif

/* Inline capacity of one builder. 32 arguments cover every kernel we have met; 128 slots are
 * 1 KiB of argument bytes: seven CUtensorMaps and the scalars around them. */
#define ATLAS_LAUNCH_MAX_ARGS 32
#define ATLAS_LAUNCH_MAX_SLOTS 128
#define ATLAS_LAUNCH_MSG_LEN 256

/* How a backend must pass an argument: a device address (a buffer) or a run of bytes copied by
 * value. CUDA does not care; a backend that binds buffers and bytes differently does. */
enum atlas_arg_kind {
    ATLAS_ARG_BUFFER = 1,
    ATLAS_ARG_BYTES = 2,
};

/* What the caller said the argument was; used in messages and for read-back. */
enum atlas_arg_type {
    ATLAS_ARG_PTR = 1, /* CUdeviceptr: kind BUFFER, 8 bytes */
    ATLAS_ARG_U32,
    ATLAS_ARG_I32,
    ATLAS_ARG_U64,
    ATLAS_ARG_I64,
    ATLAS_ARG_F32,
    ATLAS_ARG_F64,
    ATLAS_ARG_STRUCT,    /* atlas_arg_bytes: any by-value struct */
    ATLAS_ARG_TENSORMAP, /* a 128-byte CUtensorMap by value */
};

/* One recorded argument. Its bytes start at slot `slot` of the builder's storage and run for
 * `len` bytes, over ceil(len / 8) consecutive slots (one slot if len is 0). The unused tail of
 * the last slot is zero, so two launches with equal arguments have equal storage. */
struct atlas_launch_arg {
    uint8_t kind; /* enum atlas_arg_kind */
    uint8_t type; /* enum atlas_arg_type */
    uint16_t reserved;
    uint32_t len;  /* exact byte length: 8 for ptr, 4 for u32, 128 for a tensormap, ... */
    uint32_t slot; /* first 8-byte slot */
};

/* The builder. Treat the fields as private; read them through the functions below. */
struct atlas_launch {
    void *fn;           /* CUfunction or CUkernel, see is_kernel */
    uint32_t is_kernel; /* 1: fn is a CUkernel (atlas_launch_init_kernel) */
    CUresult err;       /* first error, sticky; CUDA_SUCCESS while all is well */
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_bytes;
    uint32_t nargs;
    uint32_t nslots;
    struct atlas_launch_arg args[ATLAS_LAUNCH_MAX_ARGS];
    uint64_t slots[ATLAS_LAUNCH_MAX_SLOTS];
    char msg[ATLAS_LAUNCH_MSG_LEN];
};

/* ---- Starting a launch ---------------------------------------------------------------- */

/* Start a launch of a CUfunction (cuModuleGetFunction, cuKernelGetFunction,
 * cudaGetFuncBySymbol). Grid and block default to 1x1x1, shared memory to 0, no arguments.
 * A NULL function is an error, reported by atlas_launch(). */
ATLAS_LAUNCH_API void atlas_launch_init(struct atlas_launch *b, CUfunction fn);

/* Start a launch of a context-independent CUkernel (cuLibraryGetKernel, cudaGetKernel). */
ATLAS_LAUNCH_API void atlas_launch_init_kernel(struct atlas_launch *b, CUkernel kernel);

/* ---- Shape ------------------------------------------------------------------------------ */

ATLAS_LAUNCH_API void atlas_launch_grid(struct atlas_launch *b, uint32_t x, uint32_t y, uint32_t z);
ATLAS_LAUNCH_API void atlas_launch_block(struct atlas_launch *b, uint32_t x, uint32_t y,
                                         uint32_t z);
/* Dynamic shared memory in bytes (the third <<< >>> argument). */
ATLAS_LAUNCH_API void atlas_launch_shared(struct atlas_launch *b, uint32_t bytes);
/* One-dimensional shorthand: enough blocks of `block` threads to cover n items. */
ATLAS_LAUNCH_API void atlas_launch_cover(struct atlas_launch *b, uint64_t n, uint32_t block);

/* ---- Arguments, in the kernel's parameter order ----------------------------------------- */

ATLAS_LAUNCH_API void atlas_arg_ptr(struct atlas_launch *b, CUdeviceptr p);
ATLAS_LAUNCH_API void atlas_arg_u32(struct atlas_launch *b, uint32_t v);
ATLAS_LAUNCH_API void atlas_arg_i32(struct atlas_launch *b, int32_t v);
ATLAS_LAUNCH_API void atlas_arg_u64(struct atlas_launch *b, uint64_t v);
ATLAS_LAUNCH_API void atlas_arg_i64(struct atlas_launch *b, int64_t v);
ATLAS_LAUNCH_API void atlas_arg_f32(struct atlas_launch *b, float v);
ATLAS_LAUNCH_API void atlas_arg_f64(struct atlas_launch *b, double v);

/* A by-value argument of len bytes, copied now (the caller's object may die afterwards).
 * It takes ceil(len / 8) consecutive slots and one kernel parameter. len 0 is allowed and
 * still takes one slot. For a struct, atlas_arg_struct(&b, s) passes &s and sizeof s. */
ATLAS_LAUNCH_API void atlas_arg_bytes(struct atlas_launch *b, const void *data, size_t len);
#define atlas_arg_struct(b, s) atlas_arg_bytes((b), &(s), sizeof(s))

/* A CUtensorMap (cuTensorMapEncodeTiled) by value, all 128 bytes, for a kernel parameter
 * declared `const __grid_constant__ CUtensorMap`. */
ATLAS_LAUNCH_API void atlas_arg_tensormap(struct atlas_launch *b, const CUtensorMap *map);

/* ---- Launching ---------------------------------------------------------------------------- */

/* Check the arguments against the kernel's parameter layout, then cuLaunchKernel on stream.
 *
 * The layout comes from cuFuncGetParamInfo / cuKernelGetParamInfo (driver 12.4 and later) and is
 * cached per function. If the number of arguments or any argument's byte length differs from
 * the kernel's, nothing is launched and CUDA_ERROR_INVALID_VALUE is returned, with a message
 * such as
 *     argument size mismatch: kernel=saxpy param=2 expected=4 given=8 (f64)
 * If the driver cannot report the layout, that is said once on stderr and the launch goes
 * ahead unchecked.
 *
 * Returns the builder's sticky error if there is one, else what cuLaunchKernel returned (or,
 * under ATLAS_DEBUG_SYNC_KERNELS=1, the error of the synchronisation after it). */
ATLAS_LAUNCH_API CUresult atlas_launch(struct atlas_launch *b, CUstream stream);

/* ---- Errors ------------------------------------------------------------------------------- */

/* The builder's sticky error, CUDA_SUCCESS if none. */
ATLAS_LAUNCH_API CUresult atlas_launch_status(const struct atlas_launch *b);
/* One line describing the sticky error; "" if there is none. Valid while b lives. */
ATLAS_LAUNCH_API const char *atlas_launch_error(const struct atlas_launch *b);

/* ---- Reading the typed list back ------------------------------------------------------------ */

ATLAS_LAUNCH_API uint32_t atlas_launch_arg_count(const struct atlas_launch *b);
/* The i-th recorded argument, or NULL if i >= atlas_launch_arg_count(b). */
ATLAS_LAUNCH_API const struct atlas_launch_arg *atlas_launch_arg_at(const struct atlas_launch *b,
                                                                    uint32_t i);
/* The i-th argument's bytes (len of them, see atlas_launch_arg_at), or NULL. */
ATLAS_LAUNCH_API const void *atlas_launch_arg_data(const struct atlas_launch *b, uint32_t i);
/* The packed storage: atlas_launch_slot_count(b) slots of 8 bytes. */
ATLAS_LAUNCH_API uint32_t atlas_launch_slot_count(const struct atlas_launch *b);
ATLAS_LAUNCH_API const uint64_t *atlas_launch_slots(const struct atlas_launch *b);
/* "ptr", "u32", ..., "bytes", "tensormap"; "?" for an unknown value. */
ATLAS_LAUNCH_API const char *atlas_arg_type_name(uint8_t type);

/* ---- Small helpers launch code always needs ------------------------------------------------- */

/* a / b rounded up; 0 when b is 0 (a grid of 0 is then refused by the driver rather than the
 * program dying on a division). Does not overflow for any a. */
static inline uint32_t atlas_div_ceil(uint32_t a, uint32_t b)
{
    return b ? a / b + (a % b != 0) : 0;
}

static inline uint64_t atlas_div_ceil_u64(uint64_t a, uint64_t b)
{
    return b ? a / b + (a % b != 0) : 0;
}

/* a rounded up to a multiple of b (b need not be a power of two); 0 when b is 0. */
static inline uint64_t atlas_round_up(uint64_t a, uint64_t b)
{
    return atlas_div_ceil_u64(a, b) * b;
}

/* Is x a non-zero power of two (for alignments and swizzle widths)? */
static inline int atlas_is_pow2(uint64_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

#ifdef __cplusplus
}
#endif

#endif /* ATLAS_LAUNCH_H */
