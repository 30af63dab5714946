/*
 * 2D and 3D copy descriptors (CUDA_MEMCPY2D, CUDA_MEMCPY3D,
 * CUDA_MEMCPY3D_PEER), decoded once: the engine decodes the descriptor of a
 * copy event (atl_copy_post, before any feature sees the event) into
 * `struct atl_copy`'s `geom`, and features read these fields instead of the
 * driver's structs.
 */
#ifndef ATL_COPY_H
#define ATL_COPY_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Which way the bytes go, by the memory types the descriptor names: HOST is
 * host memory, DEVICE device memory; ARRAY or UNIFIED on either end is
 * OTHER (an array, or a unified address whose kind only the driver knows). */
enum atl_copy_way {
    ATL_WAY_OTHER,
    ATL_WAY_HTOD,
    ATL_WAY_DTOH,
    ATL_WAY_DTOD,
    ATL_WAY_HTOH,
};

/* One end of a copy, as the descriptor gives it. */
struct atl_copy_end {
    CUmemorytype type; /* CU_MEMORYTYPE_HOST, _DEVICE, _ARRAY or _UNIFIED */
    const void *host;  /* HOST */
    CUdeviceptr dev;   /* DEVICE and UNIFIED */
    CUarray array;     /* ARRAY */
    /* host for HOST, else dev: the one address the reports print */
    uint64_t addr;
    size_t x;      /* start: bytes into the row */
    size_t y, z;   /* start: row, slice (z: 3D only) */
    size_t pitch;  /* bytes per row of linear memory */
    size_t height; /* rows per slice of linear memory (3D only) */
    CUcontext ctx; /* 3D peer only */
};

struct atl_copy_geom {
    int set; /* 1 when a descriptor was given and decoded */
    enum atl_copy_way way;
    struct atl_copy_end dst, src;
    size_t width;  /* bytes per row */
    size_t height; /* rows */
    size_t depth;  /* slices; 1 for 2D */
    size_t bytes;  /* width * height * depth */
};

/* What memory an address is, as the driver tells it (cuPointerGetAttribute's memory type):
 * device (device, array or managed), pinned host, or pageable host (an address the driver
 * does not know, which on the host means pageable; the fake driver agrees); unknown when the
 * driver has no such call. One driver call: not for a hook's light path. */
enum atl_mem { ATL_MEM_UNKNOWN, ATL_MEM_DEVICE, ATL_MEM_PINNED, ATL_MEM_PAGEABLE };
enum atl_mem atl_mem_type(CUdeviceptr p);
struct atl_copy;
/* The type of c's host end `host`: what the engine asked already (c->host_mem), else
 * atl_mem_type. */
enum atl_mem atl_copy_host_mem(const struct atl_copy *c, const void *host);

/* Each fills *g from its descriptor; p NULL leaves g->set 0 (the driver
 * refuses such a copy). */
void atl_copy_decode_2d(struct atl_copy_geom *g, const CUDA_MEMCPY2D *p);
void atl_copy_decode_3d(struct atl_copy_geom *g, const CUDA_MEMCPY3D *p);
void atl_copy_decode_3d_peer(struct atl_copy_geom *g, const CUDA_MEMCPY3D_PEER *p);

#endif
