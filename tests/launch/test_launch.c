/*
 * Unit tests of libatlaslaunch against mock driver functions defined here: the library's
 * undefined cu* symbols resolve to these, so no GPU and no libcuda are needed. The mock
 * cuLaunchKernel copies each parameter's bytes the way the real driver does (parameter i is
 * sizes[i] bytes read from kernelParams[i]), so the tests assert what a kernel would receive.
 */
#include "atlas/launch.h"
#include "launch/internal.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the mock driver ------------------------------------------------------------------- */

#define MOCK_MAX_PARAMS 40
#define MOCK_PARAM_BYTES 1024

static struct {
    /* the kernel's layout, as the param-info queries report it */
    uint32_t nparams;
    size_t sizes[MOCK_MAX_PARAMS];
    CUresult info_result; /* CUDA_SUCCESS: answer; anything else: return it */
    int func_info_calls, kernel_info_calls;
    /* what cuLaunchKernel received */
    int launches;
    CUfunction f;
    unsigned grid[3], block[3], shared;
    CUstream stream;
    void *kernel_params[MOCK_MAX_PARAMS]; /* the pointers, copied: the array is the caller's */
    int had_params;
    void **extra;
    unsigned char got[MOCK_MAX_PARAMS][MOCK_PARAM_BYTES];
    CUresult launch_result;
    /* synchronisation */
    int syncs;
    CUresult sync_result;
    CUstreamCaptureStatus capture;
} mock;

static void mock_layout(uint32_t n, const size_t *sizes)
{
    mock.nparams = n;
    for (uint32_t i = 0; i < n; i++)
        mock.sizes[i] = sizes[i];
}

static CUresult mock_param_info(size_t i, size_t *offset, size_t *size)
{
    if (mock.info_result != CUDA_SUCCESS)
        return mock.info_result;
    if (i >= mock.nparams)
        return CUDA_ERROR_INVALID_VALUE;
    size_t off = 0;
    for (size_t k = 0; k < i; k++)
        off += mock.sizes[k];
    *offset = off;
    if (size)
        *size = mock.sizes[i];
    return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *offset, size_t *size)
{
    mock.func_info_calls++;
    return mock_param_info(i, offset, size);
}

CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *offset, size_t *size)
{
    mock.kernel_info_calls++;
    return mock_param_info(i, offset, size);
}

CUresult cuFuncGetName(const char **name, CUfunction f)
{
    *name = "mock_kernel";
    return CUDA_SUCCESS;
}

CUresult cuKernelGetName(const char **name, CUkernel k)
{
    *name = "mock_cukernel";
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream stream,
                        void **kernelParams, void **extra)
{
    mock.launches++;
    mock.f = f;
    mock.grid[0] = gx, mock.grid[1] = gy, mock.grid[2] = gz;
    mock.block[0] = bx, mock.block[1] = by, mock.block[2] = bz;
    mock.shared = shared;
    mock.stream = stream;
    mock.had_params = kernelParams != NULL;
    for (uint32_t i = 0; i < mock.nparams && kernelParams; i++)
        mock.kernel_params[i] = kernelParams[i];
    mock.extra = extra;
    for (uint32_t i = 0; i < mock.nparams && kernelParams; i++)
        memcpy(mock.got[i], kernelParams[i], mock.sizes[i]);
    return mock.launch_result;
}

CUresult cuCtxSynchronize(void)
{
    mock.syncs++;
    return mock.sync_result;
}

CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
    *status = mock.capture;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char **name)
{
    switch (r) {
    case CUDA_SUCCESS:
        *name = "CUDA_SUCCESS";
        return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE:
        *name = "CUDA_ERROR_INVALID_VALUE";
        return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED:
        *name = "CUDA_ERROR_NOT_SUPPORTED";
        return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_HANDLE:
        *name = "CUDA_ERROR_INVALID_HANDLE";
        return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
        *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
        return CUDA_SUCCESS;
    default:
        *name = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
    *s = r == CUDA_ERROR_ILLEGAL_ADDRESS ? "an illegal memory access was encountered" : "mock";
    return CUDA_SUCCESS;
}

/* Distinct fake handles per test, so a cached layout never leaks from one test to another even
 * when Check runs the tests in one process (CK_FORK=no). */
static uintptr_t next_handle = 0x10000;
static CUfunction fake_function(void)
{
    next_handle += 0x100;
    return (CUfunction)next_handle;
}

static CUkernel fake_kernel(void)
{
    next_handle += 0x100;
    return (CUkernel)next_handle;
}

static void setup(void)
{
    memset(&mock, 0, sizeof(mock));
    unsetenv("ATLAS_DEBUG_SYNC_KERNELS");
    launch_reset_for_tests();
}

/* ---- stderr capture -------------------------------------------------------------------- */

static int saved_stderr = -1;
static char stderr_path[64];

static void stderr_begin(void)
{
    snprintf(stderr_path, sizeof(stderr_path), "/tmp/atlas-launch-test-XXXXXX");
    int fd = mkstemp(stderr_path);
    ck_assert_int_ge(fd, 0);
    saved_stderr = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* Everything written to stderr since stderr_begin, NUL-terminated, in a static buffer. */
static const char *stderr_end(void)
{
    static char text[16384];
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    int fd = open(stderr_path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
    text[n > 0 ? n : 0] = '\0';
    if (fd >= 0)
        close(fd);
    unlink(stderr_path);
    return text;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ---- the original runtime's tests, restated -------------------------------------------- */

START_TEST(launch_reaches_driver_once_with_the_recorded_arguments)
{
    CUfunction fn = fake_function();
    mock_layout(3, (size_t[]){8, 4, 4});
    struct atlas_launch b;
    atlas_launch_init(&b, fn);
    atlas_launch_grid(&b, 4, 1, 1);
    atlas_launch_block(&b, 256, 1, 1);
    atlas_launch_shared(&b, 96);
    atlas_arg_ptr(&b, 0x1000);
    atlas_arg_u32(&b, 42);
    atlas_arg_f32(&b, 1.5f);
    ck_assert_int_eq(atlas_launch(&b, (CUstream)0x77), CUDA_SUCCESS);

    ck_assert_int_eq(mock.launches, 1);
    ck_assert_ptr_eq(mock.f, fn);
    ck_assert_uint_eq(mock.grid[0], 4);
    ck_assert_uint_eq(mock.grid[1], 1);
    ck_assert_uint_eq(mock.grid[2], 1);
    ck_assert_uint_eq(mock.block[0], 256);
    ck_assert_uint_eq(mock.block[1], 1);
    ck_assert_uint_eq(mock.block[2], 1);
    ck_assert_uint_eq(mock.shared, 96);
    ck_assert_ptr_eq(mock.stream, (CUstream)0x77);
    ck_assert_ptr_null(mock.extra);

    CUdeviceptr p;
    uint32_t u;
    float f;
    memcpy(&p, mock.got[0], 8);
    memcpy(&u, mock.got[1], 4);
    memcpy(&f, mock.got[2], 4);
    ck_assert_uint_eq(p, 0x1000);
    ck_assert_uint_eq(u, 42);
    ck_assert(f == 1.5f);
    ck_assert_str_eq(atlas_launch_error(&b), "");
}
END_TEST

START_TEST(a_128_byte_arg_is_not_truncated)
{
    unsigned char map[128];
    for (int i = 0; i < 128; i++)
        map[i] = (unsigned char)(i * 7 % 251);
    mock_layout(3, (size_t[]){8, 128, 4});
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_ptr(&b, 0xDEADBEEF);
    atlas_arg_bytes(&b, map, sizeof(map));
    atlas_arg_u32(&b, 42);

    /* one parameter entry per argument, not per slot; the map takes slots 1..16 */
    ck_assert_uint_eq(atlas_launch_arg_count(&b), 3);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 0)->slot, 0);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 1)->slot, 1);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 2)->slot, 17);
    ck_assert_uint_eq(atlas_launch_slot_count(&b), 18);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 0)->kind, ATLAS_ARG_BUFFER);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 1)->kind, ATLAS_ARG_BYTES);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 2)->kind, ATLAS_ARG_BYTES);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 0)->len, 8);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 1)->len, 128);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 2)->len, 4);

    const uint64_t *slots = atlas_launch_slots(&b);
    ck_assert_uint_eq(slots[0], 0xDEADBEEF);
    /* every byte readable contiguously from the map's first slot, as the kernel will read it */
    ck_assert_mem_eq(&slots[1], map, 128);
    ck_assert_mem_eq(atlas_launch_arg_data(&b, 1), map, 128);
    ck_assert_uint_eq((uint32_t)slots[17], 42);
    ck_assert_uint_eq(slots[17] >> 32, 0);

    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(mock.launches, 1);
    ck_assert_mem_eq(mock.got[1], map, 128);
    uint32_t after;
    memcpy(&after, mock.got[2], 4);
    ck_assert_uint_eq(after, 42);
    /* the driver's view: parameters start at slots 0, 1 and 17 of one packed array */
    ck_assert_ptr_eq(mock.kernel_params[0], &b.slots[0]);
    ck_assert_ptr_eq(mock.kernel_params[1], &b.slots[1]);
    ck_assert_ptr_eq(mock.kernel_params[2], &b.slots[17]);
}
END_TEST

START_TEST(a_tensormap_arg_does_not_shift_the_args_around_it)
{
    CUtensorMap map;
    memset(&map, 0xAB, sizeof(map));
    mock_layout(3, (size_t[]){8, 128, 4});
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_ptr(&b, 0x1000);
    atlas_arg_tensormap(&b, &map);
    atlas_arg_u32(&b, 7);

    ck_assert_uint_eq(atlas_launch_arg_count(&b), 3);
    ck_assert_uint_eq(atlas_launch_slot_count(&b), 1 + 16 + 1);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 0)->slot, 0);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 1)->slot, 1);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 1)->len, 128);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 1)->type, ATLAS_ARG_TENSORMAP);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 2)->slot, 17);
    ck_assert_uint_eq((uint32_t)atlas_launch_slots(&b)[17], 7);

    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    CUdeviceptr p;
    uint32_t u;
    memcpy(&p, mock.got[0], 8);
    memcpy(&u, mock.got[2], 4);
    ck_assert_uint_eq(p, 0x1000);
    ck_assert_mem_eq(mock.got[1], &map, 128);
    ck_assert_uint_eq(u, 7);
}
END_TEST

START_TEST(an_empty_byte_arg_still_gets_one_slot)
{
    unsigned char nine = 9, unused = 0;
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_bytes(&b, &unused, 0);
    atlas_arg_bytes(&b, &nine, 1);
    atlas_arg_bytes(&b, NULL, 0); /* no data, no length: still an argument, still a slot */

    ck_assert_uint_eq(atlas_launch_arg_count(&b), 3);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 0)->slot, 0);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 0)->len, 0);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 1)->slot, 1);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 2)->slot, 2);
    ck_assert_uint_eq(atlas_launch_slot_count(&b), 3);
    ck_assert_uint_eq(atlas_launch_slots(&b)[1], 9);

    mock_layout(3, (size_t[]){0, 1, 0});
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_ptr_eq(mock.kernel_params[0], &b.slots[0]);
    ck_assert_ptr_eq(mock.kernel_params[1], &b.slots[1]);
    ck_assert_uint_eq(mock.got[1][0], 9);
}
END_TEST

START_TEST(div_ceil_rounds_up)
{
    ck_assert_uint_eq(atlas_div_ceil(10, 3), 4);
    ck_assert_uint_eq(atlas_div_ceil(9, 3), 3);
    ck_assert_uint_eq(atlas_div_ceil(1, 256), 1);
    ck_assert_uint_eq(atlas_div_ceil(256, 256), 1);
    ck_assert_uint_eq(atlas_div_ceil(257, 256), 2);
    ck_assert_uint_eq(atlas_div_ceil(0, 256), 0);
    ck_assert_uint_eq(atlas_div_ceil(UINT32_MAX, 2), 0x80000000u); /* no overflow */
    ck_assert_uint_eq(atlas_div_ceil(5, 0), 0);
    ck_assert_uint_eq(atlas_div_ceil_u64(UINT64_MAX, 1ull << 32), 1ull << 32);
    ck_assert_uint_eq(atlas_round_up(100, 48), 144);
    ck_assert_uint_eq(atlas_round_up(96, 48), 96);
    ck_assert(atlas_is_pow2(128));
    ck_assert(!atlas_is_pow2(96));
    ck_assert(!atlas_is_pow2(0));
}
END_TEST

/* ---- checking against the kernel's real layout ----------------------------------------- */

/* One wrong argument of each type at parameter 1, between two right ones. */
struct mismatch_case {
    uint8_t type;
    size_t kernel_size;
    const char *message;
};

static const struct mismatch_case mismatch_cases[] = {
    {ATLAS_ARG_PTR, 4,
     "argument size mismatch: kernel=mock_kernel param=1 expected=4 given=8 (ptr)"},
    {ATLAS_ARG_U32, 8,
     "argument size mismatch: kernel=mock_kernel param=1 expected=8 given=4 (u32)"},
    {ATLAS_ARG_I32, 8,
     "argument size mismatch: kernel=mock_kernel param=1 expected=8 given=4 (i32)"},
    {ATLAS_ARG_U64, 4,
     "argument size mismatch: kernel=mock_kernel param=1 expected=4 given=8 (u64)"},
    {ATLAS_ARG_I64, 4,
     "argument size mismatch: kernel=mock_kernel param=1 expected=4 given=8 (i64)"},
    {ATLAS_ARG_F32, 8,
     "argument size mismatch: kernel=mock_kernel param=1 expected=8 given=4 (f32)"},
    {ATLAS_ARG_F64, 4,
     "argument size mismatch: kernel=mock_kernel param=1 expected=4 given=8 (f64)"},
    {ATLAS_ARG_STRUCT, 16,
     "argument size mismatch: kernel=mock_kernel param=1 expected=16 given=12 (bytes)"},
    {ATLAS_ARG_TENSORMAP, 64,
     "argument size mismatch: kernel=mock_kernel param=1 expected=64 given=128 (tensormap)"},
};

static void add_one(struct atlas_launch *b, uint8_t type)
{
    static const unsigned char twelve[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    CUtensorMap map;
    memset(&map, 0x5A, sizeof(map));
    switch (type) {
    case ATLAS_ARG_PTR:
        atlas_arg_ptr(b, 0x2000);
        break;
    case ATLAS_ARG_U32:
        atlas_arg_u32(b, 1);
        break;
    case ATLAS_ARG_I32:
        atlas_arg_i32(b, -1);
        break;
    case ATLAS_ARG_U64:
        atlas_arg_u64(b, 1);
        break;
    case ATLAS_ARG_I64:
        atlas_arg_i64(b, -1);
        break;
    case ATLAS_ARG_F32:
        atlas_arg_f32(b, 1.0f);
        break;
    case ATLAS_ARG_F64:
        atlas_arg_f64(b, 1.0);
        break;
    case ATLAS_ARG_STRUCT:
        atlas_arg_bytes(b, twelve, sizeof(twelve));
        break;
    case ATLAS_ARG_TENSORMAP:
        atlas_arg_tensormap(b, &map);
        break;
    }
}

START_TEST(every_size_mismatch_is_refused_with_its_message)
{
    const struct mismatch_case *c = &mismatch_cases[_i];
    mock_layout(3, (size_t[]){8, c->kernel_size, 4});
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_ptr(&b, 0x1000);
    add_one(&b, c->type);
    atlas_arg_u32(&b, 3);

    stderr_begin();
    CUresult r = atlas_launch(&b, NULL);
    const char *err = stderr_end();

    ck_assert_int_eq(r, CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(mock.launches, 0);
    ck_assert_str_eq(atlas_launch_error(&b), c->message);
    ck_assert_int_eq(atlas_launch_status(&b), CUDA_ERROR_INVALID_VALUE);
    /* printed once, with the prefix */
    char line[400];
    snprintf(line, sizeof(line), "atlas[%d]: launch: %s\n", (int)getpid(), c->message);
    ck_assert_str_eq(err, line);
}
END_TEST

START_TEST(every_matching_type_is_accepted)
{
    const struct mismatch_case *c = &mismatch_cases[_i];
    size_t given = c->type == ATLAS_ARG_STRUCT      ? 12
                   : c->type == ATLAS_ARG_TENSORMAP ? 128
                   : c->kernel_size == 4            ? 8
                                                    : 4;
    mock_layout(3, (size_t[]){8, given, 4});
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_ptr(&b, 0x1000);
    add_one(&b, c->type);
    atlas_arg_u32(&b, 3);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(mock.launches, 1);
    ck_assert_uint_eq(atlas_launch_arg_at(&b, 1)->type, c->type);
    ck_assert_str_ne(atlas_arg_type_name(c->type), "?");
}
END_TEST

START_TEST(scalars_arrive_with_their_exact_bits)
{
    mock_layout(6, (size_t[]){4, 4, 8, 8, 4, 8});
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_u32(&b, 0xFFFFFFFFu);
    atlas_arg_i32(&b, -5);
    atlas_arg_u64(&b, 0x0123456789ABCDEFull);
    atlas_arg_i64(&b, -(1ll << 40));
    atlas_arg_f32(&b, -0.25f);
    atlas_arg_f64(&b, 3.0e300);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);

    uint32_t u;
    int32_t i;
    uint64_t ul;
    int64_t il;
    float f;
    double d;
    memcpy(&u, mock.got[0], 4);
    memcpy(&i, mock.got[1], 4);
    memcpy(&ul, mock.got[2], 8);
    memcpy(&il, mock.got[3], 8);
    memcpy(&f, mock.got[4], 4);
    memcpy(&d, mock.got[5], 8);
    ck_assert_uint_eq(u, 0xFFFFFFFFu);
    ck_assert_int_eq(i, -5);
    ck_assert_uint_eq(ul, 0x0123456789ABCDEFull);
    ck_assert_int_eq(il, -(1ll << 40));
    ck_assert(f == -0.25f);
    ck_assert(d == 3.0e300);
    /* a 4-byte argument leaves the rest of its slot zero: equal arguments, equal storage */
    ck_assert_uint_eq(atlas_launch_slots(&b)[1], 0xFFFFFFFBull);
}
END_TEST

START_TEST(a_wrong_argument_count_is_refused)
{
    mock_layout(3, (size_t[]){8, 4, 4});
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_ptr(&b, 0x1000);
    atlas_arg_u32(&b, 1);
    stderr_begin();
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_ERROR_INVALID_VALUE);
    stderr_end();
    ck_assert_str_eq(atlas_launch_error(&b),
                     "argument count mismatch: kernel=mock_kernel expected=3 given=2");

    atlas_launch_init(&b, fake_function());
    atlas_arg_ptr(&b, 0x1000);
    atlas_arg_u32(&b, 1);
    atlas_arg_u32(&b, 2);
    atlas_arg_u32(&b, 3);
    stderr_begin();
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_ERROR_INVALID_VALUE);
    stderr_end();
    ck_assert_str_eq(atlas_launch_error(&b),
                     "argument count mismatch: kernel=mock_kernel expected=3 given=4");
    ck_assert_int_eq(mock.launches, 0);
}
END_TEST

START_TEST(a_missing_argument_is_named_where_the_lists_diverge)
{
    /* (ptr, u64, u32) called as (ptr, u32): the size at param 1 is the first sign */
    mock_layout(3, (size_t[]){8, 8, 4});
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_ptr(&b, 0x1000);
    atlas_arg_u32(&b, 1);
    stderr_begin();
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_ERROR_INVALID_VALUE);
    stderr_end();
    ck_assert_str_eq(atlas_launch_error(&b),
                     "argument size mismatch: kernel=mock_kernel param=1 expected=8 given=4 "
                     "(u32); the argument count differs too");
}
END_TEST

START_TEST(a_cukernel_is_checked_and_launched_as_itself)
{
    CUkernel k = fake_kernel();
    mock_layout(2, (size_t[]){8, 4});
    struct atlas_launch b;
    atlas_launch_init_kernel(&b, k);
    atlas_arg_ptr(&b, 0x1000);
    atlas_arg_u32(&b, 5);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_ptr_eq(mock.f, (CUfunction)k);
    ck_assert_int_eq(mock.kernel_info_calls, 3); /* two parameters, then "no parameter 2" */
    ck_assert_int_eq(mock.func_info_calls, 0);

    atlas_launch_init_kernel(&b, k);
    atlas_arg_ptr(&b, 0x1000);
    atlas_arg_u64(&b, 5);
    stderr_begin();
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_ERROR_INVALID_VALUE);
    stderr_end();
    ck_assert_str_eq(atlas_launch_error(&b), "argument size mismatch: kernel=mock_cukernel "
                                             "param=1 expected=4 given=8 (u64)");
    ck_assert_int_eq(mock.launches, 1);
}
END_TEST

START_TEST(the_layout_is_queried_once_per_function)
{
    mock_layout(2, (size_t[]){8, 4});
    CUfunction f1 = fake_function(), f2 = fake_function();
    struct atlas_launch b;
    for (int n = 0; n < 3; n++) {
        atlas_launch_init(&b, f1);
        atlas_arg_ptr(&b, 0x1000);
        atlas_arg_u32(&b, (uint32_t)n);
        ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    }
    ck_assert_int_eq(mock.func_info_calls, 3);
    atlas_launch_init(&b, f2);
    atlas_arg_ptr(&b, 0x1000);
    atlas_arg_u32(&b, 9);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(mock.func_info_calls, 6);
    ck_assert_int_eq(mock.launches, 4);
}
END_TEST

START_TEST(a_stale_cached_layout_is_reread_before_refusing)
{
    /* A module unloaded and another loaded can reuse a handle's address. */
    CUfunction f = fake_function();
    mock_layout(1, (size_t[]){8});
    struct atlas_launch b;
    atlas_launch_init(&b, f);
    atlas_arg_u64(&b, 1);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);

    mock_layout(1, (size_t[]){4});
    atlas_launch_init(&b, f);
    atlas_arg_u32(&b, 1);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(mock.launches, 2);
}
END_TEST

START_TEST(an_unavailable_check_is_said_once_and_launches)
{
    mock.info_result = CUDA_ERROR_NOT_SUPPORTED;
    mock_layout(2, (size_t[]){8, 4});
    struct atlas_launch b;
    stderr_begin();
    for (int n = 0; n < 2; n++) {
        atlas_launch_init(&b, fake_function());
        atlas_arg_ptr(&b, 0x1000);
        atlas_arg_u32(&b, 1);
        ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    }
    const char *err = stderr_end();
    ck_assert_int_eq(mock.launches, 2);
    ck_assert_int_eq(count_of(err, "argument check unavailable"), 1);
    ck_assert_ptr_nonnull(strstr(err, "kernel=mock_kernel driver=CUDA_ERROR_NOT_SUPPORTED"));
    ck_assert_int_eq(count_of(err, "\n"), 1);
}
END_TEST

START_TEST(a_kernel_without_reported_parameters_is_not_refused)
{
    /* "no parameter 0" is all a driver says about a handle it cannot describe */
    mock_layout(0, NULL);
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert(!mock.had_params);

    atlas_launch_init(&b, fake_function());
    atlas_arg_u32(&b, 1);
    stderr_begin();
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    const char *err = stderr_end();
    ck_assert_int_eq(count_of(err, "argument check unavailable"), 1);
    ck_assert_int_eq(mock.launches, 2);
}
END_TEST

/* ---- capacity, stickiness, errors ------------------------------------------------------- */

START_TEST(too_many_arguments_is_an_error_not_a_truncation)
{
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    for (uint32_t i = 0; i < ATLAS_LAUNCH_MAX_ARGS; i++)
        atlas_arg_u32(&b, i);
    ck_assert_int_eq(atlas_launch_status(&b), CUDA_SUCCESS);
    stderr_begin();
    atlas_arg_u32(&b, 99);
    atlas_arg_u32(&b, 100);
    const char *err = stderr_end();
    ck_assert_int_eq(atlas_launch_status(&b), CUDA_ERROR_INVALID_VALUE);
    ck_assert_str_eq(atlas_launch_error(&b),
                     "too many arguments: kernel=mock_kernel argument 32 (u32) does not fit, "
                     "capacity is 32 arguments (ATLAS_LAUNCH_MAX_ARGS)");
    ck_assert_int_eq(count_of(err, "too many arguments"), 1);
    ck_assert_uint_eq(atlas_launch_arg_count(&b), ATLAS_LAUNCH_MAX_ARGS);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(mock.launches, 0);
    ck_assert_int_eq(mock.func_info_calls, 0);
}
END_TEST

START_TEST(too_many_argument_bytes_is_an_error_not_a_truncation)
{
    static unsigned char big[ATLAS_LAUNCH_MAX_SLOTS * 8 + 1];
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_bytes(&b, big, ATLAS_LAUNCH_MAX_SLOTS * 8 - 8);
    ck_assert_int_eq(atlas_launch_status(&b), CUDA_SUCCESS);
    ck_assert_uint_eq(atlas_launch_slot_count(&b), ATLAS_LAUNCH_MAX_SLOTS - 1);
    stderr_begin();
    atlas_arg_bytes(&b, big, 9); /* needs 2 slots, 1 left */
    stderr_end();
    ck_assert_int_eq(atlas_launch_status(&b), CUDA_ERROR_INVALID_VALUE);
    ck_assert_str_eq(atlas_launch_error(&b),
                     "argument bytes exceed capacity: kernel=mock_kernel argument 1 (bytes, 9 "
                     "bytes) needs 2 slots of 8 bytes, 1 of 128 left (ATLAS_LAUNCH_MAX_SLOTS)");
    /* nothing half-added */
    ck_assert_uint_eq(atlas_launch_arg_count(&b), 1);
    ck_assert_uint_eq(atlas_launch_slot_count(&b), ATLAS_LAUNCH_MAX_SLOTS - 1);

    atlas_launch_init(&b, fake_function());
    stderr_begin();
    atlas_arg_bytes(&b, big, sizeof(big));
    stderr_end();
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_ptr_nonnull(strstr(atlas_launch_error(&b), "argument bytes exceed capacity"));
    ck_assert_int_eq(mock.launches, 0);
}
END_TEST

START_TEST(the_first_error_sticks_and_later_calls_do_nothing)
{
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    stderr_begin();
    atlas_arg_bytes(&b, NULL, 16);
    atlas_launch_grid(&b, 7, 7, 7);
    atlas_arg_u32(&b, 1);
    atlas_arg_tensormap(&b, NULL);
    CUresult r = atlas_launch(&b, NULL);
    const char *err = stderr_end();
    ck_assert_int_eq(r, CUDA_ERROR_INVALID_VALUE);
    ck_assert_str_eq(atlas_launch_error(&b), "NULL data for a by-value argument: "
                                             "kernel=mock_kernel argument 0 (bytes, 16 bytes)");
    ck_assert_int_eq(count_of(err, "\n"), 1);
    ck_assert_uint_eq(b.grid[0], 1);
    ck_assert_uint_eq(atlas_launch_arg_count(&b), 0);
    ck_assert_int_eq(mock.launches, 0);
}
END_TEST

START_TEST(a_null_function_is_refused)
{
    struct atlas_launch b;
    stderr_begin();
    atlas_launch_init(&b, NULL);
    atlas_arg_u32(&b, 1);
    CUresult r = atlas_launch(&b, NULL);
    stderr_end();
    ck_assert_int_eq(r, CUDA_ERROR_INVALID_VALUE);
    ck_assert_str_eq(atlas_launch_error(&b), "no kernel: atlas_launch_init was given NULL");
    ck_assert_int_eq(mock.launches, 0);
}
END_TEST

START_TEST(a_driver_error_is_returned_as_given)
{
    mock_layout(1, (size_t[]){4});
    mock.launch_result = CUDA_ERROR_INVALID_HANDLE;
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_launch_grid(&b, 2, 3, 4);
    atlas_arg_u32(&b, 1);
    stderr_begin();
    CUresult r = atlas_launch(&b, NULL);
    stderr_end();
    ck_assert_int_eq(r, CUDA_ERROR_INVALID_HANDLE);
    ck_assert_str_eq(atlas_launch_error(&b),
                     "cuLaunchKernel failed: kernel=mock_kernel grid=(2,3,4) block=(1,1,1) "
                     "shared=0 error=CUDA_ERROR_INVALID_HANDLE");
}
END_TEST

START_TEST(a_builder_can_be_copied_and_launched_again)
{
    mock_layout(2, (size_t[]){8, 4});
    struct atlas_launch a, b;
    atlas_launch_init(&a, fake_function());
    atlas_arg_ptr(&a, 0xABC0);
    atlas_arg_u32(&a, 77);
    b = a;
    memset(&a, 0xEE, sizeof(a)); /* the copy must not point into the original */
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(mock.launches, 2);
    ck_assert_ptr_eq(mock.kernel_params[1], &b.slots[1]);
    uint32_t u;
    memcpy(&u, mock.got[1], 4);
    ck_assert_uint_eq(u, 77);
}
END_TEST

START_TEST(read_back_is_bounded)
{
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_arg_u64(&b, 0x1122334455667788ull);
    ck_assert_ptr_null(atlas_launch_arg_at(&b, 1));
    ck_assert_ptr_null(atlas_launch_arg_data(&b, 1));
    uint64_t v;
    memcpy(&v, atlas_launch_arg_data(&b, 0), 8);
    ck_assert_uint_eq(v, 0x1122334455667788ull);
    ck_assert_str_eq(atlas_arg_type_name(ATLAS_ARG_U64), "u64");
    ck_assert_str_eq(atlas_arg_type_name(200), "?");
    ck_assert_str_eq(atlas_arg_type_name(0), "?");
}
END_TEST

START_TEST(cover_sizes_a_one_dimensional_grid)
{
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_launch_cover(&b, 1000, 256);
    ck_assert_uint_eq(b.grid[0], 4);
    ck_assert_uint_eq(b.block[0], 256);
    stderr_begin();
    atlas_launch_cover(&b, 1ull << 50, 32);
    stderr_end();
    ck_assert_int_eq(atlas_launch_status(&b), CUDA_ERROR_INVALID_VALUE);
    ck_assert_ptr_nonnull(strstr(atlas_launch_error(&b), "cannot cover n=1125899906842624"));
}
END_TEST

/* ---- ATLAS_DEBUG_SYNC_KERNELS ----------------------------------------------------------- */

static void debug_sync_env(const char *value)
{
    setenv("ATLAS_DEBUG_SYNC_KERNELS", value, 1);
    launch_reset_for_tests();
}

START_TEST(debug_sync_is_off_by_default)
{
    mock_layout(0, NULL);
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(mock.syncs, 0);
}
END_TEST

START_TEST(debug_sync_turns_an_async_fault_into_an_error_naming_the_launch)
{
    stderr_begin();
    debug_sync_env("1");
    mock_layout(1, (size_t[]){8});
    mock.sync_result = CUDA_ERROR_ILLEGAL_ADDRESS;
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    atlas_launch_grid(&b, 4, 1, 1);
    atlas_launch_block(&b, 256, 1, 1);
    atlas_launch_shared(&b, 128);
    atlas_arg_ptr(&b, 0x1000);
    CUresult r = atlas_launch(&b, NULL);
    const char *err = stderr_end();
    ck_assert_int_eq(r, CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(mock.launches, 1);
    ck_assert_int_eq(mock.syncs, 1);
    ck_assert_str_eq(atlas_launch_error(&b),
                     "asynchronous fault right after launch: kernel=mock_kernel grid=(4,1,1) "
                     "block=(256,1,1) shared=128 error=CUDA_ERROR_ILLEGAL_ADDRESS: an illegal "
                     "memory access was encountered (ATLAS_DEBUG_SYNC_KERNELS=1; host backtrace "
                     "on stderr)");
    ck_assert_ptr_nonnull(strstr(err, "backtrace of the launch"));
    /* the backtrace includes this test function's caller chain (test binary frames) */
    ck_assert_ptr_nonnull(strstr(err, "test_launch"));
}
END_TEST

START_TEST(debug_sync_passes_a_clean_launch)
{
    debug_sync_env("1");
    mock_layout(0, NULL);
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(mock.syncs, 2);
}
END_TEST

START_TEST(debug_sync_leaves_a_capturing_stream_alone)
{
    debug_sync_env("1");
    mock_layout(0, NULL);
    mock.capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    mock.sync_result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    stderr_begin();
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    const char *err = stderr_end();
    ck_assert_int_eq(mock.syncs, 0);
    ck_assert_int_eq(count_of(err, "capturing"), 1);
}
END_TEST

START_TEST(a_bad_debug_sync_value_is_reported_and_ignored)
{
    stderr_begin();
    debug_sync_env("mock_kernel;rm");
    mock_layout(0, NULL);
    struct atlas_launch b;
    atlas_launch_init(&b, fake_function());
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    const char *err = stderr_end();
    char line[300];
    snprintf(line, sizeof(line),
             "atlas[%d]: launch: invalid setting ATLAS_DEBUG_SYNC_KERNELS=mock_kernel;rm: not 0, 1 "
             "or a comma-separated list of kernel names (letters, digits, _ $ .); using 0\n",
             (int)getpid());
    ck_assert_str_eq(err, line);
    ck_assert_int_eq(mock.syncs, 0);
}
END_TEST

/* issue #14: libatlastrace took "yes" for on and libatlaslaunch refused it; one parser now */
START_TEST(debug_sync_accepts_what_libatlastrace_accepts)
{
    const char *on[] = {"yes", "true", "On"};
    for (int i = 0; i < 3; i++) {
        debug_sync_env(on[i]);
        mock_layout(0, NULL);
        mock.syncs = 0;
        struct atlas_launch b;
        atlas_launch_init(&b, fake_function());
        ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
        ck_assert_int_eq(mock.syncs, 1);
    }
}
END_TEST

START_TEST(debug_sync_with_a_list_syncs_only_the_kernels_named)
{
    mock_layout(0, NULL);
    struct atlas_launch b;
    debug_sync_env("other_kernel,mock_kernel");
    atlas_launch_init(&b, fake_function());
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(mock.syncs, 1);
    debug_sync_env("other_kernel");
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(atlas_launch(&b, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(mock.syncs, 1);
}
END_TEST

static Suite *launch_suite(void)
{
    Suite *s = suite_create("atlaslaunch");
    TCase *t = tcase_create("original");
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_add_test(t, launch_reaches_driver_once_with_the_recorded_arguments);
    tcase_add_test(t, a_128_byte_arg_is_not_truncated);
    tcase_add_test(t, a_tensormap_arg_does_not_shift_the_args_around_it);
    tcase_add_test(t, an_empty_byte_arg_still_gets_one_slot);
    tcase_add_test(t, div_ceil_rounds_up);
    suite_add_tcase(s, t);

    t = tcase_create("check");
    tcase_add_checked_fixture(t, setup, NULL);
    int ncases = (int)(sizeof(mismatch_cases) / sizeof(mismatch_cases[0]));
    tcase_add_loop_test(t, every_size_mismatch_is_refused_with_its_message, 0, ncases);
    tcase_add_loop_test(t, every_matching_type_is_accepted, 0, ncases);
    tcase_add_test(t, scalars_arrive_with_their_exact_bits);
    tcase_add_test(t, a_wrong_argument_count_is_refused);
    tcase_add_test(t, a_missing_argument_is_named_where_the_lists_diverge);
    tcase_add_test(t, a_cukernel_is_checked_and_launched_as_itself);
    tcase_add_test(t, the_layout_is_queried_once_per_function);
    tcase_add_test(t, a_stale_cached_layout_is_reread_before_refusing);
    tcase_add_test(t, an_unavailable_check_is_said_once_and_launches);
    tcase_add_test(t, a_kernel_without_reported_parameters_is_not_refused);
    suite_add_tcase(s, t);

    t = tcase_create("errors");
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_add_test(t, too_many_arguments_is_an_error_not_a_truncation);
    tcase_add_test(t, too_many_argument_bytes_is_an_error_not_a_truncation);
    tcase_add_test(t, the_first_error_sticks_and_later_calls_do_nothing);
    tcase_add_test(t, a_null_function_is_refused);
    tcase_add_test(t, a_driver_error_is_returned_as_given);
    tcase_add_test(t, a_builder_can_be_copied_and_launched_again);
    tcase_add_test(t, read_back_is_bounded);
    tcase_add_test(t, cover_sizes_a_one_dimensional_grid);
    suite_add_tcase(s, t);

    t = tcase_create("debug_sync");
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_add_test(t, debug_sync_is_off_by_default);
    tcase_add_test(t, debug_sync_turns_an_async_fault_into_an_error_naming_the_launch);
    tcase_add_test(t, debug_sync_passes_a_clean_launch);
    tcase_add_test(t, debug_sync_leaves_a_capturing_stream_alone);
    tcase_add_test(t, a_bad_debug_sync_value_is_reported_and_ignored);
    tcase_add_test(t, debug_sync_accepts_what_libatlastrace_accepts);
    tcase_add_test(t, debug_sync_with_a_list_syncs_only_the_kernels_named);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(launch_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
