/*
 * The builder: typed arguments packed into 8-byte slots, checked against the kernel's real
 * parameter layout, then one cuLaunchKernel.
 *
 * Packing rule, the whole reason this file exists: an argument of len bytes takes
 * ceil(len / 8) CONSECUTIVE slots (one if len is 0, so there is always something to point at)
 * and ONE entry of kernelParams, pointing at its first slot. Each argument remembers its own
 * first slot; nothing is ever found by an argument's position, so a 16-slot CUtensorMap cannot
 * shift the arguments after it. Earlier versions of this idea truncated by-value arguments to
 * 8 bytes, and indexed slots by argument position: both launch garbage without any error.
 */
#include "launch/internal.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const char *const arg_type_names[] = {
    [ATLAS_ARG_PTR] = "ptr", [ATLAS_ARG_U32] = "u32",      [ATLAS_ARG_I32] = "i32",
    [ATLAS_ARG_U64] = "u64", [ATLAS_ARG_I64] = "i64",      [ATLAS_ARG_F32] = "f32",
    [ATLAS_ARG_F64] = "f64", [ATLAS_ARG_STRUCT] = "bytes", [ATLAS_ARG_TENSORMAP] = "tensormap",
};

ATLAS_LAUNCH_API const char *atlas_arg_type_name(uint8_t type)
{
    if (type < sizeof(arg_type_names) / sizeof(arg_type_names[0]) && arg_type_names[type])
        return arg_type_names[type];
    return "?";
}

static void launch_start(struct atlas_launch *b, void *fn, int is_kernel)
{
    /* Only the header is reset: the slots and messages are written before they are read, and
     * clearing 2 KiB per launch would be most of the builder's cost. */
    b->fn = fn;
    b->is_kernel = (uint32_t)is_kernel;
    b->err = CUDA_SUCCESS;
    b->grid[0] = b->grid[1] = b->grid[2] = 1;
    b->block[0] = b->block[1] = b->block[2] = 1;
    b->shared_bytes = 0;
    b->nargs = 0;
    b->nslots = 0;
    b->msg[0] = '\0';
    if (!fn)
        launch_fail(b, CUDA_ERROR_INVALID_VALUE, "no kernel: %s was given NULL",
                    is_kernel ? "atlas_launch_init_kernel" : "atlas_launch_init");
}

ATLAS_LAUNCH_API void atlas_launch_init(struct atlas_launch *b, CUfunction fn)
{
    launch_start(b, (void *)fn, 0);
}

ATLAS_LAUNCH_API void atlas_launch_init_kernel(struct atlas_launch *b, CUkernel kernel)
{
    launch_start(b, (void *)kernel, 1);
}

ATLAS_LAUNCH_API void atlas_launch_grid(struct atlas_launch *b, uint32_t x, uint32_t y, uint32_t z)
{
    if (b->err)
        return;
    b->grid[0] = x;
    b->grid[1] = y;
    b->grid[2] = z;
}

ATLAS_LAUNCH_API void atlas_launch_block(struct atlas_launch *b, uint32_t x, uint32_t y, uint32_t z)
{
    if (b->err)
        return;
    b->block[0] = x;
    b->block[1] = y;
    b->block[2] = z;
}

ATLAS_LAUNCH_API void atlas_launch_shared(struct atlas_launch *b, uint32_t bytes)
{
    if (b->err)
        return;
    b->shared_bytes = bytes;
}

ATLAS_LAUNCH_API void atlas_launch_cover(struct atlas_launch *b, uint64_t n, uint32_t block)
{
    if (b->err)
        return;
    uint64_t blocks = atlas_div_ceil_u64(n, block);
    if (block == 0 || blocks > UINT32_MAX) {
        char name[64];
        launch_fail(b, CUDA_ERROR_INVALID_VALUE,
                    "cannot cover n=%llu items with block=%u: kernel=%s grid.x would be %llu",
                    (unsigned long long)n, block,
                    launch_kernel_name(b->fn, (int)b->is_kernel, name, sizeof(name)),
                    (unsigned long long)blocks);
        return;
    }
    atlas_launch_grid(b, (uint32_t)blocks, 1, 1);
    atlas_launch_block(b, block, 1, 1);
}

/* Why an argument could not be added, said once; always NULL. Kept out of line so that the
 * path that adds an argument stays a few instructions with no stack frame: at eight arguments
 * a launch calls it eight times, and the measured cost of the builder was mostly here. */
static __attribute__((noinline, cold)) uint64_t *arg_refuse(struct atlas_launch *b, uint8_t type,
                                                            size_t len)
{
    if (b->err)
        return NULL;
    char name[64];
    const char *kname = launch_kernel_name(b->fn, (int)b->is_kernel, name, sizeof(name));
    if (b->nargs >= ATLAS_LAUNCH_MAX_ARGS) {
        launch_fail(b, CUDA_ERROR_INVALID_VALUE,
                    "too many arguments: kernel=%s argument %u (%s) does not fit, capacity is "
                    "%d arguments (ATLAS_LAUNCH_MAX_ARGS)",
                    kname, b->nargs, atlas_arg_type_name(type), ATLAS_LAUNCH_MAX_ARGS);
        return NULL;
    }
    size_t need = len == 0 ? 1 : len / 8 + (len % 8 != 0);
    launch_fail(b, CUDA_ERROR_INVALID_VALUE,
                "argument bytes exceed capacity: kernel=%s argument %u (%s, %zu bytes) "
                "needs %zu slots of 8 bytes, %u of %d left (ATLAS_LAUNCH_MAX_SLOTS)",
                kname, b->nargs, atlas_arg_type_name(type), len, need,
                ATLAS_LAUNCH_MAX_SLOTS - b->nslots, ATLAS_LAUNCH_MAX_SLOTS);
    return NULL;
}

/* Record an argument and hand back its first slot, the tail already zeroed; NULL (and the
 * builder's error set) when it does not fit. Capacity is checked before anything is written:
 * a partial argument is never left behind. */
static inline __attribute__((always_inline)) uint64_t *arg_add(struct atlas_launch *b, uint8_t kind,
                                                               uint8_t type, size_t len)
{
    uint32_t n = b->nargs, s = b->nslots;
    /* len is bounded before it is rounded, so the rounding cannot overflow */
    if (__builtin_expect(b->err != CUDA_SUCCESS || n >= ATLAS_LAUNCH_MAX_ARGS ||
                             len > (size_t)(ATLAS_LAUNCH_MAX_SLOTS - s) * 8,
                         0))
        return arg_refuse(b, type, len);
    uint32_t need = len == 0 ? 1 : (uint32_t)((len + 7) / 8);
    b->args[n] = (struct atlas_launch_arg){
        .kind = kind, .type = type, .reserved = 0, .len = (uint32_t)len, .slot = s};
    b->nargs = n + 1;
    b->nslots = s + need;
    uint64_t *first = &b->slots[s];
    first[need - 1] = 0;
    return first;
}

/* Scalars go into the first bytes of their slot, as the driver will read them. */
#define ARG_SCALAR(fname, ctype, tag)                                                              \
    ATLAS_LAUNCH_API void fname(struct atlas_launch *b, ctype v)                                   \
    {                                                                                              \
        uint64_t *s = arg_add(b, ATLAS_ARG_BYTES, tag, sizeof(v));                                 \
        if (s)                                                                                     \
            memcpy(s, &v, sizeof(v));                                                              \
    }

ARG_SCALAR(atlas_arg_u32, uint32_t, ATLAS_ARG_U32)
ARG_SCALAR(atlas_arg_i32, int32_t, ATLAS_ARG_I32)
ARG_SCALAR(atlas_arg_u64, uint64_t, ATLAS_ARG_U64)
ARG_SCALAR(atlas_arg_i64, int64_t, ATLAS_ARG_I64)
ARG_SCALAR(atlas_arg_f32, float, ATLAS_ARG_F32)
ARG_SCALAR(atlas_arg_f64, double, ATLAS_ARG_F64)

ATLAS_LAUNCH_API void atlas_arg_ptr(struct atlas_launch *b, CUdeviceptr p)
{
    uint64_t *s = arg_add(b, ATLAS_ARG_BUFFER, ATLAS_ARG_PTR, sizeof(p));
    if (s)
        memcpy(s, &p, sizeof(p));
}

ATLAS_LAUNCH_API void atlas_arg_bytes(struct atlas_launch *b, const void *data, size_t len)
{
    if (b->err)
        return;
    if (!data && len) {
        char name[64];
        launch_fail(b, CUDA_ERROR_INVALID_VALUE,
                    "NULL data for a by-value argument: kernel=%s argument %u (bytes, %zu bytes)",
                    launch_kernel_name(b->fn, (int)b->is_kernel, name, sizeof(name)), b->nargs,
                    len);
        return;
    }
    uint64_t *s = arg_add(b, ATLAS_ARG_BYTES, ATLAS_ARG_STRUCT, len);
    if (s && len)
        memcpy(s, data, len);
}

ATLAS_LAUNCH_API void atlas_arg_tensormap(struct atlas_launch *b, const CUtensorMap *map)
{
    if (b->err)
        return;
    if (!map) {
        char name[64];
        launch_fail(b, CUDA_ERROR_INVALID_VALUE, "NULL CUtensorMap: kernel=%s argument %u",
                    launch_kernel_name(b->fn, (int)b->is_kernel, name, sizeof(name)), b->nargs);
        return;
    }
    _Static_assert(sizeof(CUtensorMap) == 128, "a CUtensorMap is 128 bytes");
    uint64_t *s = arg_add(b, ATLAS_ARG_BYTES, ATLAS_ARG_TENSORMAP, sizeof(*map));
    if (s)
        memcpy(s, map, sizeof(*map));
}

_Atomic int launch_unavailable_said;

static int layout_matches(const struct atlas_launch *b, const struct launch_layout *l)
{
    if (l->nparams != b->nargs)
        return 0;
    for (uint32_t i = 0; i < b->nargs; i++)
        if (l->sizes[i] != b->args[i].len)
            return 0;
    return 1;
}

/* Refuse a launch whose arguments differ from what the kernel takes. Returns 0 to launch. */
static int args_refused(struct atlas_launch *b)
{
    struct launch_layout scratch;
    const struct launch_layout *l = launch_layout_get(b->fn, (int)b->is_kernel, 0, &scratch);
    if (l->status == LAYOUT_KNOWN && layout_matches(b, l))
        return 0;
    if (l->status == LAYOUT_KNOWN && l != &scratch)
        l = launch_layout_get(b->fn, (int)b->is_kernel, 1, &scratch);

    char name[64];
    const char *kname = launch_kernel_name(b->fn, (int)b->is_kernel, name, sizeof(name));
    /* "No parameter 0" is also what a driver says about a handle it cannot describe; that is
     * no ground to refuse a launch that cuLaunchKernel itself would accept. */
    if (l->status != LAYOUT_KNOWN || (l->none_reported && b->nargs > 0)) {
        if (!atomic_exchange(&launch_unavailable_said, 1)) {
            char e[48];
            launch_log("argument check unavailable: kernel=%s driver=%s; launching unchecked "
                       "(said once)",
                       kname,
                       l->status == LAYOUT_KNOWN ? "no-parameter-info"
                                                 : launch_error_name(l->why, e, sizeof(e)));
        }
        return 0;
    }
    uint32_t common = b->nargs < l->nparams ? b->nargs : l->nparams;
    for (uint32_t i = 0; i < common; i++) {
        if (l->sizes[i] == b->args[i].len)
            continue;
        launch_fail(b, CUDA_ERROR_INVALID_VALUE,
                    "argument size mismatch: kernel=%s param=%u expected=%u given=%u (%s)%s", kname,
                    i, l->sizes[i], b->args[i].len, atlas_arg_type_name(b->args[i].type),
                    b->nargs != l->nparams ? "; the argument count differs too" : "");
        return 1;
    }
    if (b->nargs != l->nparams) {
        launch_fail(b, CUDA_ERROR_INVALID_VALUE,
                    "argument count mismatch: kernel=%s expected=%u given=%u", kname, l->nparams,
                    b->nargs);
        return 1;
    }
    return 0;
}

ATLAS_LAUNCH_API CUresult atlas_launch(struct atlas_launch *b, CUstream stream)
{
    if (b->err)
        return b->err;
    if (args_refused(b))
        return b->err;

    void *params[ATLAS_LAUNCH_MAX_ARGS];
    for (uint32_t i = 0; i < b->nargs; i++)
        params[i] = &b->slots[b->args[i].slot];

    /* The driver takes a CUkernel wherever it takes a CUfunction. */
    CUresult r = cuLaunchKernel((CUfunction)b->fn, b->grid[0], b->grid[1], b->grid[2], b->block[0],
                                b->block[1], b->block[2], b->shared_bytes, stream,
                                b->nargs ? params : NULL, NULL);
    if (__builtin_expect(r != CUDA_SUCCESS, 0)) {
        char name[64], e[48];
        launch_fail(b, r,
                    "cuLaunchKernel failed: kernel=%s grid=(%u,%u,%u) block=(%u,%u,%u) shared=%u "
                    "error=%s",
                    launch_kernel_name(b->fn, (int)b->is_kernel, name, sizeof(name)), b->grid[0],
                    b->grid[1], b->grid[2], b->block[0], b->block[1], b->block[2], b->shared_bytes,
                    launch_error_name(r, e, sizeof(e)));
        return r;
    }
    if (__builtin_expect(launch_debug_sync_enabled(), 0))
        return launch_debug_sync(b, stream);
    return CUDA_SUCCESS;
}

ATLAS_LAUNCH_API CUresult atlas_launch_status(const struct atlas_launch *b)
{
    return b->err;
}

ATLAS_LAUNCH_API const char *atlas_launch_error(const struct atlas_launch *b)
{
    return b->err ? b->msg : "";
}

ATLAS_LAUNCH_API uint32_t atlas_launch_arg_count(const struct atlas_launch *b)
{
    return b->nargs;
}

ATLAS_LAUNCH_API const struct atlas_launch_arg *atlas_launch_arg_at(const struct atlas_launch *b,
                                                                    uint32_t i)
{
    return i < b->nargs ? &b->args[i] : NULL;
}

ATLAS_LAUNCH_API const void *atlas_launch_arg_data(const struct atlas_launch *b, uint32_t i)
{
    return i < b->nargs ? (const void *)&b->slots[b->args[i].slot] : NULL;
}

ATLAS_LAUNCH_API uint32_t atlas_launch_slot_count(const struct atlas_launch *b)
{
    return b->nslots;
}

ATLAS_LAUNCH_API const uint64_t *atlas_launch_slots(const struct atlas_launch *b)
{
    return b->slots;
}

void launch_fail(struct atlas_launch *b, CUresult r, const char *fmt, ...)
{
    if (b->err)
        return;
    b->err = r;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->msg, sizeof(b->msg), fmt, ap);
    va_end(ap);
    launch_log("%s", b->msg);
}
