/* 2D and 3D copy descriptors, decoded once (copy.h). */
#include "copy.h"

#include "driver.h"
#include "events.h"

#include <string.h>

static struct atl_copy_end end(CUmemorytype type, const void *host, CUdeviceptr dev, CUarray array,
                               size_t x, size_t y)
{
    struct atl_copy_end e = {
        .type = type, .host = host, .dev = dev, .array = array, .x = x, .y = y};
    e.addr = type == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)host : dev;
    return e;
}

static void finish(struct atl_copy_geom *g, size_t width, size_t height, size_t depth)
{
    g->set = 1;
    g->width = width, g->height = height, g->depth = depth;
    g->bytes = width * height * depth;
    CUmemorytype s = g->src.type, d = g->dst.type;
    int hs = s == CU_MEMORYTYPE_HOST, hd = d == CU_MEMORYTYPE_HOST;
    if (s == CU_MEMORYTYPE_ARRAY || d == CU_MEMORYTYPE_ARRAY || s == CU_MEMORYTYPE_UNIFIED ||
        d == CU_MEMORYTYPE_UNIFIED)
        g->way = ATL_WAY_OTHER;
    else
        g->way = hs && !hd   ? ATL_WAY_HTOD
                 : !hs && hd ? ATL_WAY_DTOH
                 : hs        ? ATL_WAY_HTOH
                             : ATL_WAY_DTOD;
}

/* The fields all three descriptors name alike, for end `s` (src or dst). */
#define END(p, s)                                                                                  \
    end((p)->s##MemoryType, (p)->s##Host, (p)->s##Device, (p)->s##Array, (p)->s##XInBytes,         \
        (p)->s##Y)

void atl_copy_decode_2d(struct atl_copy_geom *g, const CUDA_MEMCPY2D *p)
{
    memset(g, 0, sizeof *g);
    if (!p)
        return;
    g->dst = END(p, dst), g->src = END(p, src);
    g->dst.pitch = p->dstPitch, g->src.pitch = p->srcPitch;
    finish(g, p->WidthInBytes, p->Height, 1);
}

/* 3D and 3D peer: the 2D fields, and each end's slice and slice height. */
#define DECODE_3D(g, p)                                                                            \
    do {                                                                                           \
        (g)->dst = END(p, dst), (g)->src = END(p, src);                                            \
        (g)->dst.z = (p)->dstZ, (g)->src.z = (p)->srcZ;                                            \
        (g)->dst.pitch = (p)->dstPitch, (g)->src.pitch = (p)->srcPitch;                            \
        (g)->dst.height = (p)->dstHeight, (g)->src.height = (p)->srcHeight;                        \
    } while (0)

void atl_copy_decode_3d(struct atl_copy_geom *g, const CUDA_MEMCPY3D *p)
{
    memset(g, 0, sizeof *g);
    if (!p)
        return;
    DECODE_3D(g, p);
    finish(g, p->WidthInBytes, p->Height, p->Depth);
}

void atl_copy_decode_3d_peer(struct atl_copy_geom *g, const CUDA_MEMCPY3D_PEER *p)
{
    memset(g, 0, sizeof *g);
    if (!p)
        return;
    DECODE_3D(g, p);
    g->dst.ctx = p->dstContext, g->src.ctx = p->srcContext;
    finish(g, p->WidthInBytes, p->Height, p->Depth);
}

enum atl_mem atl_mem_type(CUdeviceptr p)
{
    if (!atl_drv.cuPointerGetAttribute)
        return ATL_MEM_UNKNOWN;
    unsigned t = 0;
    if (atl_drv.cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS)
        return ATL_MEM_PAGEABLE;
    if (t == CU_MEMORYTYPE_HOST)
        return ATL_MEM_PINNED;
    return ATL_MEM_DEVICE;
}

enum atl_mem atl_copy_host_mem(const struct atl_copy *c, const void *host)
{
    return c->host_mem ? (enum atl_mem)c->host_mem : atl_mem_type((CUdeviceptr)(uintptr_t)host);
}
