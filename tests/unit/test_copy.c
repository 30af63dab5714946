/* 2D and 3D copy descriptors, decoded once (src/copy.h): every field of every
 * descriptor form, each given a value of its own so that a field read from the
 * wrong place fails, and the engine's decoding before the features. */
#include "copy.h"
#include "engine.h"

#include <check.h>
#include <stdint.h>

#define HOST_A ((void *)(uintptr_t)0x7000100)
#define HOST_B ((void *)(uintptr_t)0x7000200)
#define ARR_A ((CUarray)(uintptr_t)0xA000100)
#define CTX_A ((CUcontext)(uintptr_t)0xC000100)
#define CTX_B ((CUcontext)(uintptr_t)0xC000200)

struct want_end {
    CUmemorytype type;
    const void *host;
    CUdeviceptr dev;
    CUarray array;
    uint64_t addr;
    size_t x, y, z, pitch, height;
    CUcontext ctx;
};

static void check_end(const char *which, const struct atl_copy_end *e, struct want_end w)
{
    ck_assert_msg(e->type == w.type, "%s type %d", which, (int)e->type);
    ck_assert_msg(e->host == w.host, "%s host", which);
    ck_assert_msg(e->dev == w.dev, "%s dev %llx", which, (unsigned long long)e->dev);
    ck_assert_msg(e->array == w.array, "%s array", which);
    ck_assert_msg(e->addr == w.addr, "%s addr %llx", which, (unsigned long long)e->addr);
    ck_assert_msg(e->x == w.x, "%s x %zu", which, e->x);
    ck_assert_msg(e->y == w.y, "%s y %zu", which, e->y);
    ck_assert_msg(e->z == w.z, "%s z %zu", which, e->z);
    ck_assert_msg(e->pitch == w.pitch, "%s pitch %zu", which, e->pitch);
    ck_assert_msg(e->height == w.height, "%s height %zu", which, e->height);
    ck_assert_msg(e->ctx == w.ctx, "%s ctx", which);
}

static void check_shape(const struct atl_copy_geom *g, enum atl_copy_way way, size_t w, size_t h,
                        size_t d)
{
    ck_assert_int_eq(g->set, 1);
    ck_assert_int_eq(g->way, way);
    ck_assert_uint_eq(g->width, w);
    ck_assert_uint_eq(g->height, h);
    ck_assert_uint_eq(g->depth, d);
    ck_assert_uint_eq(g->bytes, w * h * d);
}

static CUDA_MEMCPY2D two_d(CUmemorytype src, CUmemorytype dst)
{
    CUDA_MEMCPY2D p = {.srcXInBytes = 1,
                       .srcY = 2,
                       .srcMemoryType = src,
                       .srcHost = HOST_A,
                       .srcDevice = 0xD000100,
                       .srcArray = ARR_A,
                       .srcPitch = 512,
                       .dstXInBytes = 3,
                       .dstY = 4,
                       .dstMemoryType = dst,
                       .dstHost = HOST_B,
                       .dstDevice = 0xD000200,
                       .dstArray = (CUarray)(uintptr_t)0xA000200,
                       .dstPitch = 1024,
                       .WidthInBytes = 48,
                       .Height = 5};
    return p;
}

/* The address an end prints: the host pointer for host memory, else the
 * device pointer field. */
static uint64_t addr(CUmemorytype t, const void *host, CUdeviceptr dev)
{
    return t == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)host : dev;
}

START_TEST(two_d_every_memory_type_pair)
{
    static const struct {
        CUmemorytype src, dst;
        enum atl_copy_way way;
    } cases[] = {
        {CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE, ATL_WAY_HTOD},
        {CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST, ATL_WAY_DTOH},
        {CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_DEVICE, ATL_WAY_DTOD},
        {CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_HOST, ATL_WAY_HTOH},
        {CU_MEMORYTYPE_ARRAY, CU_MEMORYTYPE_HOST, ATL_WAY_OTHER},
        {CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_ARRAY, ATL_WAY_OTHER},
        {CU_MEMORYTYPE_UNIFIED, CU_MEMORYTYPE_DEVICE, ATL_WAY_OTHER},
        {CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_UNIFIED, ATL_WAY_OTHER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CUDA_MEMCPY2D p = two_d(cases[i].src, cases[i].dst);
        struct atl_copy_geom g;
        atl_copy_decode_2d(&g, &p);
        check_shape(&g, cases[i].way, 48, 5, 1);
        check_end("src", &g.src,
                  (struct want_end){p.srcMemoryType, HOST_A, 0xD000100, ARR_A,
                                    addr(p.srcMemoryType, HOST_A, 0xD000100), 1, 2, 0, 512, 0,
                                    NULL});
        check_end("dst", &g.dst,
                  (struct want_end){p.dstMemoryType, HOST_B, 0xD000200, p.dstArray,
                                    addr(p.dstMemoryType, HOST_B, 0xD000200), 3, 4, 0, 1024, 0,
                                    NULL});
    }
}
END_TEST

START_TEST(three_d_slices)
{
    CUDA_MEMCPY3D p = {.srcXInBytes = 1,
                       .srcY = 2,
                       .srcZ = 3,
                       .srcMemoryType = CU_MEMORYTYPE_ARRAY,
                       .srcArray = ARR_A,
                       .srcPitch = 256,
                       .srcHeight = 7,
                       .dstXInBytes = 4,
                       .dstY = 5,
                       .dstZ = 6,
                       .dstMemoryType = CU_MEMORYTYPE_HOST,
                       .dstHost = HOST_B,
                       .dstDevice = 0xD000200,
                       .dstPitch = 768,
                       .dstHeight = 9,
                       .WidthInBytes = 40,
                       .Height = 6,
                       .Depth = 3};
    struct atl_copy_geom g;
    atl_copy_decode_3d(&g, &p);
    check_shape(&g, ATL_WAY_OTHER, 40, 6, 3);
    check_end("src", &g.src,
              (struct want_end){CU_MEMORYTYPE_ARRAY, NULL, 0, ARR_A, 0, 1, 2, 3, 256, 7, NULL});
    check_end("dst", &g.dst,
              (struct want_end){CU_MEMORYTYPE_HOST, HOST_B, 0xD000200, NULL,
                                (uint64_t)(uintptr_t)HOST_B, 4, 5, 6, 768, 9, NULL});
    /* device to device, unified, and host to device */
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE, p.srcDevice = 0xD000100;
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    atl_copy_decode_3d(&g, &p);
    check_shape(&g, ATL_WAY_DTOD, 40, 6, 3);
    ck_assert_uint_eq(g.src.addr, 0xD000100);
    ck_assert_uint_eq(g.dst.addr, 0xD000200);
    p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    atl_copy_decode_3d(&g, &p);
    check_shape(&g, ATL_WAY_OTHER, 40, 6, 3);
    ck_assert_uint_eq(g.dst.addr, 0xD000200);
    p.srcMemoryType = CU_MEMORYTYPE_HOST, p.srcHost = HOST_A;
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    atl_copy_decode_3d(&g, &p);
    check_shape(&g, ATL_WAY_HTOD, 40, 6, 3);
    ck_assert_uint_eq(g.src.addr, (uint64_t)(uintptr_t)HOST_A);
}
END_TEST

START_TEST(three_d_peer_contexts)
{
    CUDA_MEMCPY3D_PEER p = {.srcXInBytes = 1,
                            .srcY = 2,
                            .srcZ = 3,
                            .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                            .srcHost = HOST_A,
                            .srcDevice = 0xD000100,
                            .srcContext = CTX_A,
                            .srcPitch = 128,
                            .srcHeight = 11,
                            .dstXInBytes = 4,
                            .dstY = 5,
                            .dstZ = 6,
                            .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                            .dstDevice = 0xD000200,
                            .dstContext = CTX_B,
                            .dstPitch = 384,
                            .dstHeight = 13,
                            .WidthInBytes = 24,
                            .Height = 2,
                            .Depth = 4};
    struct atl_copy_geom g;
    atl_copy_decode_3d_peer(&g, &p);
    check_shape(&g, ATL_WAY_DTOD, 24, 2, 4);
    check_end("src", &g.src,
              (struct want_end){CU_MEMORYTYPE_DEVICE, HOST_A, 0xD000100, NULL, 0xD000100, 1, 2, 3,
                                128, 11, CTX_A});
    check_end("dst", &g.dst,
              (struct want_end){CU_MEMORYTYPE_DEVICE, NULL, 0xD000200, NULL, 0xD000200, 4, 5, 6,
                                384, 13, CTX_B});
    p.dstMemoryType = CU_MEMORYTYPE_HOST, p.dstHost = HOST_B;
    atl_copy_decode_3d_peer(&g, &p);
    check_shape(&g, ATL_WAY_DTOH, 24, 2, 4);
    ck_assert_uint_eq(g.dst.addr, (uint64_t)(uintptr_t)HOST_B);
}
END_TEST

START_TEST(no_descriptor_is_not_set)
{
    struct atl_copy_geom g = {.set = 1, .bytes = 99};
    atl_copy_decode_2d(&g, NULL);
    ck_assert_int_eq(g.set, 0);
    ck_assert_uint_eq(g.bytes, 0);
    g.set = 1;
    atl_copy_decode_3d(&g, NULL);
    ck_assert_int_eq(g.set, 0);
    g.set = 1;
    atl_copy_decode_3d_peer(&g, NULL);
    ck_assert_int_eq(g.set, 0);
}
END_TEST

/* The engine decodes the event's descriptor itself, before any feature: a
 * feature reads geom, never the program's struct. */
START_TEST(the_engine_decodes_the_event)
{
    CUDA_MEMCPY2D p2 = two_d(CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST);
    struct atl_copy c2 = {.kind = ATL_CPY_2D, .async = 1, .p2d = &p2};
    atl_copy_post(&c2, CUDA_SUCCESS);
    check_shape(&c2.geom, ATL_WAY_DTOH, 48, 5, 1);
    ck_assert_uint_eq(c2.geom.dst.addr, (uint64_t)(uintptr_t)HOST_B);
    CUDA_MEMCPY3D p3 = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = HOST_A,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = 0xD000200,
                        .WidthInBytes = 8,
                        .Height = 2,
                        .Depth = 2};
    struct atl_copy c3 = {.kind = ATL_CPY_3D, .async = 1, .p3d = &p3};
    atl_copy_post(&c3, CUDA_SUCCESS);
    check_shape(&c3.geom, ATL_WAY_HTOD, 8, 2, 2);
    CUDA_MEMCPY3D_PEER pp = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                             .srcDevice = 0xD000100,
                             .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                             .dstDevice = 0xD000200,
                             .WidthInBytes = 4,
                             .Height = 1,
                             .Depth = 1};
    struct atl_copy cp = {.kind = ATL_CPY_3D_PEER, .async = 1, .p3dp = &pp};
    atl_copy_post(&cp, CUDA_SUCCESS);
    check_shape(&cp.geom, ATL_WAY_DTOD, 4, 1, 1);
    ck_assert_ptr_eq(cp.geom.src.ctx, NULL);
    /* a 1D copy has no descriptor */
    struct atl_copy c1 = {.kind = ATL_CPY_DTOD, .async = 1, .dst = 0xD000200, .src = 0xD000100};
    atl_copy_post(&c1, CUDA_SUCCESS);
    ck_assert_int_eq(c1.geom.set, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("copy-unit");
    TCase *tc = tcase_create("decode");
    tcase_add_test(tc, two_d_every_memory_type_pair);
    tcase_add_test(tc, three_d_slices);
    tcase_add_test(tc, three_d_peer_contexts);
    tcase_add_test(tc, no_descriptor_is_not_set);
    tcase_add_test(tc, the_engine_decodes_the_event);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
