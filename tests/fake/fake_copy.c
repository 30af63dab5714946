/*
 * fake_copy.c: copies and memsets (the descriptors of fake_core.c, executed
 * now or recorded).
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

/* ------------------------------------------------------------------------ */
/* Copies and memsets                                                        */
/* ------------------------------------------------------------------------ */

static struct xfer_side side_host(const void *p)
{
    return (struct xfer_side){.type = CU_MEMORYTYPE_HOST, .host = p};
}

static struct xfer_side side_dev(CUdeviceptr p)
{
    return (struct xfer_side){.type = CU_MEMORYTYPE_DEVICE, .dev = p};
}

static struct xfer_side side_uni(CUdeviceptr p)
{
    return (struct xfer_side){.type = CU_MEMORYTYPE_UNIFIED, .dev = p};
}

static struct xfer_side side_arr(CUarray a, size_t off)
{
    return (struct xfer_side){.type = CU_MEMORYTYPE_ARRAY, .arr = a, .x = off, .linear = 1};
}

static struct xfer xfer_1d(struct xfer_side src, struct xfer_side dst, size_t n)
{
    return (struct xfer){.src = src, .dst = dst, .w = n, .h = 1, .d = 1};
}

static struct xfer xfer_2d(const CUDA_MEMCPY2D *p)
{
    struct xfer x = {.w = p->WidthInBytes, .h = p->Height, .d = 1};
    x.src =
        (struct xfer_side){p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes,
                           p->srcY,          0,          p->srcPitch,  0,           0};
    x.dst =
        (struct xfer_side){p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
                           p->dstY,          0,          p->dstPitch,  0,           0};
    return x;
}

#define XFER_3D(x, p)                                                                              \
    do {                                                                                           \
        (x).w = (p)->WidthInBytes;                                                                 \
        (x).h = (p)->Height;                                                                       \
        (x).d = (p)->Depth;                                                                        \
        (x).src = (struct xfer_side){                                                              \
            (p)->srcMemoryType, (p)->srcHost, (p)->srcDevice, (p)->srcArray,  (p)->srcXInBytes,    \
            (p)->srcY,          (p)->srcZ,    (p)->srcPitch,  (p)->srcHeight, 0};                  \
        (x).dst = (struct xfer_side){                                                              \
            (p)->dstMemoryType, (p)->dstHost, (p)->dstDevice, (p)->dstArray,  (p)->dstXInBytes,    \
            (p)->dstY,          (p)->dstZ,    (p)->dstPitch,  (p)->dstHeight, 0};                  \
    } while (0)

/* A synchronous copy waits for all earlier work, so a pending kernel fault
 * is reported by it (and nothing is copied). */
static CUresult copy_sync(const struct xfer *x)
{
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    TRY(xfer_check(x));
    TRY(ctx_sync(c));
    return xfer_exec(x);
}

CUresult stream_usable(CUstream s)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(s, &c, &st);
    UNLOCK();
    return r;
}

static CUresult copy_async(const struct xfer *x, CUstream s)
{
    TRY(stream_usable(s));
    TRY(xfer_check(x));
    struct op o = {.kind = OP_COPY, .x = *x};
    return stream_submit(s, &o, NULL);
}

static CUresult set_async(CUdeviceptr p, size_t pitch, unsigned value, unsigned esize, size_t w,
                          size_t h, CUstream s)
{
    TRY(stream_usable(s));
    struct op o = {
        .kind = OP_SET,
        .s = {.p = p, .pitch = h > 1 ? pitch : 0, .value = value, .esize = esize, .w = w, .h = h}};
    TRY(setop_check(&o.s));
    return stream_submit(s, &o, NULL);
}

static CUresult peer_check(CUcontext a, CUcontext b)
{
    struct fake_ctx *x;
    TRY(ctx_arg(a, &x));
    return ctx_arg(b, &x);
}

static CUresult batch_copy(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                           CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                           size_t *failIdx, CUstream s)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    TRY(stream_usable(s));
    if (!count || !dsts || !srcs || !sizes || (numAttrs && (!attrs || !attrsIdxs)))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        struct xfer x = xfer_1d(side_uni(srcs[i]), side_uni(dsts[i]), sizes[i]);
        CUresult r = copy_async(&x, s);
        if (r != CUDA_SUCCESS) {
            if (failIdx)
                *failIdx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult operand_side(const CUmemcpy3DOperand *o, size_t *esize, struct xfer_side *out)
{
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
        struct fake_array *a = array_get(o->op.array.array);
        if (!a)
            return CUDA_ERROR_INVALID_HANDLE;
        *esize = format_bytes(a->desc.Format) * a->desc.NumChannels;
        *out = (struct xfer_side){.type = CU_MEMORYTYPE_ARRAY,
                                  .arr = o->op.array.array,
                                  .x = o->op.array.offset.x, /* scaled by caller */
                                  .y = o->op.array.offset.y,
                                  .z = o->op.array.offset.z};
        return CUDA_SUCCESS;
    }
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
        return CUDA_ERROR_INVALID_VALUE;
    *out = (struct xfer_side){.type = CU_MEMORYTYPE_UNIFIED,
                              .dev = o->op.ptr.ptr,
                              .pitch = o->op.ptr.rowLength, /* elements, scaled by caller */
                              .height = o->op.ptr.layerHeight};
    return CUDA_SUCCESS;
}

/* Extents are in elements of the array when one side is an array, else in
 * bytes; rowLength/layerHeight 0 mean "packed". */
static CUresult batch3d_copy(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                             unsigned long long flags, CUstream s)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    TRY(stream_usable(s));
    if (!numOps || !opList || flags)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numOps; i++) {
        const CUDA_MEMCPY3D_BATCH_OP *op = &opList[i];
        size_t es = 1, es2 = 1;
        struct xfer x = {0};
        CUresult r = operand_side(&op->src, &es, &x.src);
        if (r == CUDA_SUCCESS)
            r = operand_side(&op->dst, &es2, &x.dst);
        if (r == CUDA_SUCCESS) {
            size_t e = es > 1 ? es : es2;
            struct xfer_side *sides[2] = {&x.src, &x.dst};
            for (int k = 0; k < 2; k++) {
                struct xfer_side *sd = sides[k];
                if (sd->type == CU_MEMORYTYPE_ARRAY) {
                    sd->x *= e;
                } else {
                    sd->pitch = (sd->pitch ? sd->pitch : op->extent.width) * e;
                    sd->height = sd->height ? sd->height : op->extent.height;
                }
            }
            x.w = op->extent.width * e;
            x.h = op->extent.height;
            x.d = op->extent.depth;
            if (!x.w || !x.h || !x.d)
                r = CUDA_ERROR_INVALID_VALUE;
            else
                r = copy_async(&x, s);
        }
        if (r != CUDA_SUCCESS) {
            if (failIdx)
                *failIdx = i;
            return r;
        }
    }
    return CUDA_SUCCESS;
}

CUresult cuMemcpy_impl(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    struct xfer x = xfer_1d(side_uni(src), side_uni(dst), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyAsync_impl(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    struct xfer x = xfer_1d(side_uni(src), side_uni(dst), ByteCount);
    return copy_async(&x, hStream);
}

CUresult cuMemcpyPeer_impl(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount)
{
    TRY(need_init());
    TRY(peer_check(dstContext, srcContext));
    struct xfer x = xfer_1d(side_dev(srcDevice), side_dev(dstDevice), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyPeerAsync_impl(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    TRY(need_init());
    TRY(peer_check(dstContext, srcContext));
    struct xfer x = xfer_1d(side_dev(srcDevice), side_dev(dstDevice), ByteCount);
    return copy_async(&x, hStream);
}

CUresult cuMemcpyHtoD_v2_impl(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    struct xfer x = xfer_1d(side_host(srcHost), side_dev(dstDevice), ByteCount);
    return copy_sync(&x);
}

/* A GPU that takes its time: FAKE_SYNC_SLEEP_MS=MS makes the FAKE_SYNC_SLEEP_AT-th call
 * (default the first) of cuStreamSynchronize or cuMemcpyDtoH_v2, counted together, wait MS
 * milliseconds before it returns, as a rank waiting on a collective does (the hang report's
 * tests). Outside the driver lock. */
void sync_sleep(void)
{
    static _Atomic unsigned long calls;
    const char *ms = getenv("FAKE_SYNC_SLEEP_MS"), *at = getenv("FAKE_SYNC_SLEEP_AT");
    unsigned long n = atomic_fetch_add(&calls, 1) + 1;
    if (!ms || n != (at ? strtoul(at, NULL, 10) : 1))
        return;
    unsigned long v = strtoul(ms, NULL, 10);
    struct timespec t = {(time_t)(v / 1000), (long)(v % 1000) * 1000000};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

CUresult cuMemcpyDtoH_v2_impl(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_host(dstHost), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    ENTER(cuMemcpyDtoH_v2);
    sync_sleep();
    return cuMemcpyDtoH_v2_impl(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoD_v2_impl(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_dev(dstDevice), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyHtoDAsync_v2_impl(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                   CUstream hStream)
{
    struct xfer x = xfer_1d(side_host(srcHost), side_dev(dstDevice), ByteCount);
    return copy_async(&x, hStream);
}

CUresult cuMemcpyDtoHAsync_v2_impl(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_host(dstHost), ByteCount);
    return copy_async(&x, hStream);
}

CUresult cuMemcpyDtoDAsync_v2_impl(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_dev(dstDevice), ByteCount);
    return copy_async(&x, hStream);
}

CUresult cuMemcpyDtoA_v2_impl(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                              size_t ByteCount)
{
    struct xfer x = xfer_1d(side_dev(srcDevice), side_arr(dstArray, dstOffset), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyAtoD_v2_impl(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                              size_t ByteCount)
{
    struct xfer x = xfer_1d(side_arr(srcArray, srcOffset), side_dev(dstDevice), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyHtoA_v2_impl(CUarray dstArray, size_t dstOffset, const void *srcHost,
                              size_t ByteCount)
{
    struct xfer x = xfer_1d(side_host(srcHost), side_arr(dstArray, dstOffset), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyAtoH_v2_impl(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
    struct xfer x = xfer_1d(side_arr(srcArray, srcOffset), side_host(dstHost), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyAtoA_v2_impl(CUarray dstArray, size_t dstOffset, CUarray srcArray,
                              size_t srcOffset, size_t ByteCount)
{
    struct xfer x =
        xfer_1d(side_arr(srcArray, srcOffset), side_arr(dstArray, dstOffset), ByteCount);
    return copy_sync(&x);
}

CUresult cuMemcpyHtoAAsync_v2_impl(CUarray dstArray, size_t dstOffset, const void *srcHost,
                                   size_t ByteCount, CUstream hStream)
{
    struct xfer x = xfer_1d(side_host(srcHost), side_arr(dstArray, dstOffset), ByteCount);
    return copy_async(&x, hStream);
}

CUresult cuMemcpyAtoHAsync_v2_impl(void *dstHost, CUarray srcArray, size_t srcOffset,
                                   size_t ByteCount, CUstream hStream)
{
    struct xfer x = xfer_1d(side_arr(srcArray, srcOffset), side_host(dstHost), ByteCount);
    return copy_async(&x, hStream);
}

CUresult cuMemcpy2D_v2_impl(const CUDA_MEMCPY2D *pCopy)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x = xfer_2d(pCopy);
    return copy_sync(&x);
}

CUresult cuMemcpy2DUnaligned_v2_impl(const CUDA_MEMCPY2D *pCopy)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x = xfer_2d(pCopy);
    return copy_sync(&x);
}

CUresult cuMemcpy2DAsync_v2_impl(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x = xfer_2d(pCopy);
    return copy_async(&x, hStream);
}

CUresult cuMemcpy3D_v2_impl(const CUDA_MEMCPY3D *pCopy)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x;
    XFER_3D(x, pCopy);
    return copy_sync(&x);
}

CUresult cuMemcpy3DAsync_v2_impl(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    struct xfer x;
    XFER_3D(x, pCopy);
    return copy_async(&x, hStream);
}

CUresult cuMemcpy3DPeer_impl(const CUDA_MEMCPY3D_PEER *pCopy)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    TRY(need_init());
    TRY(peer_check(pCopy->dstContext, pCopy->srcContext));
    struct xfer x;
    XFER_3D(x, pCopy);
    return copy_sync(&x);
}

CUresult cuMemcpy3DPeerAsync_impl(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
    if (!pCopy)
        return CUDA_ERROR_INVALID_VALUE;
    TRY(need_init());
    TRY(peer_check(pCopy->dstContext, pCopy->srcContext));
    struct xfer x;
    XFER_3D(x, pCopy);
    return copy_async(&x, hStream);
}

CUresult cuMemcpyBatchAsync_impl(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                 CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                 size_t *failIdx, CUstream hStream)
{
    return batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream);
}

CUresult cuMemcpyBatchAsync_v2_impl(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                    size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                    size_t numAttrs, CUstream hStream)
{
    return batch_copy(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream);
}

CUresult cuMemcpy3DBatchAsync_impl(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                                   unsigned long long flags, CUstream hStream)
{
    return batch3d_copy(numOps, opList, failIdx, flags, hStream);
}

CUresult cuMemcpy3DBatchAsync_v2_impl(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                      unsigned long long flags, CUstream hStream)
{
    return batch3d_copy(numOps, opList, NULL, flags, hStream);
}

CUresult cuMemsetD8_v2_impl(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return set_async(dstDevice, 0, uc, 1, N, 1, NULL);
}

CUresult cuMemsetD2D8_v2_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                              size_t Width, size_t Height)
{
    return set_async(dstDevice, dstPitch, uc, 1, Width, Height, NULL);
}

CUresult cuMemsetD8Async_impl(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    return set_async(dstDevice, 0, uc, 1, N, 1, hStream);
}

CUresult cuMemsetD2D8Async_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                size_t Width, size_t Height, CUstream hStream)
{
    return set_async(dstDevice, dstPitch, uc, 1, Width, Height, hStream);
}

CUresult cuMemsetD16_v2_impl(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return set_async(dstDevice, 0, us, 2, N, 1, NULL);
}

CUresult cuMemsetD2D16_v2_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                               size_t Width, size_t Height)
{
    return set_async(dstDevice, dstPitch, us, 2, Width, Height, NULL);
}

CUresult cuMemsetD16Async_impl(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
    return set_async(dstDevice, 0, us, 2, N, 1, hStream);
}

CUresult cuMemsetD2D16Async_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                 size_t Width, size_t Height, CUstream hStream)
{
    return set_async(dstDevice, dstPitch, us, 2, Width, Height, hStream);
}

CUresult cuMemsetD32_v2_impl(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return set_async(dstDevice, 0, ui, 4, N, 1, NULL);
}

CUresult cuMemsetD2D32_v2_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                               size_t Width, size_t Height)
{
    return set_async(dstDevice, dstPitch, ui, 4, Width, Height, NULL);
}

CUresult cuMemsetD32Async_impl(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    return set_async(dstDevice, 0, ui, 4, N, 1, hStream);
}

CUresult cuMemsetD2D32Async_impl(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                 size_t Width, size_t Height, CUstream hStream)
{
    return set_async(dstDevice, dstPitch, ui, 4, Width, Height, hStream);
}
