/*
 * fake_mem.c: allocation and free, virtual memory management, host memory,
 * pointer attributes, arrays.
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

static CUresult alloc_dev(struct fake_ctx *c, CUdeviceptr *dptr, size_t n, enum alloc_kind k)
{
    uintptr_t p;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    TRY(mem_alloc(c, &p, n, k));
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

static CUresult alloc_host(struct fake_ctx *c, void **pp, size_t n)
{
    uintptr_t p;
    if (!pp)
        return CUDA_ERROR_INVALID_VALUE;
    TRY(mem_alloc(c, &p, n, AK_HOST));
    *pp = (void *)p;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    ENTER(cuMemAlloc_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    return alloc_dev(c, dptr, bytesize, AK_DEVICE);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    ENTER(cuMemAllocPitch_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pPitch || !WidthInBytes || !Height ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = (WidthInBytes + 511) & ~(size_t)511;
    if (Height > SIZE_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    TRY(alloc_dev(c, dptr, pitch * Height, AK_DEVICE));
    *pPitch = pitch;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    ENTER(cuMemAllocManaged);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_dev(c, dptr, bytesize, AK_MANAGED);
}

/* Stream-ordered allocation: the stream's work runs at once, so the
 * allocation is usable at once; a capturing stream is not modelled for it. */
static CUresult mem_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    UNLOCK();
    TRY(r);
    return alloc_dev(c, dptr, bytesize, AK_DEVICE);
}

CUresult cuMemAllocAsync_impl(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return mem_alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocFromPoolAsync_impl(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return mem_alloc_async(dptr, bytesize, hStream);
}

#define KINDS_DEVICE ((1u << AK_DEVICE) | (1u << AK_MANAGED))

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    ENTER(cuMemFree_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!dptr)
        return CUDA_SUCCESS;
    return mem_free(dptr, KINDS_DEVICE);
}

static CUresult mem_free_async(CUdeviceptr dptr, CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    UNLOCK();
    TRY(r);
    return mem_free(dptr, KINDS_DEVICE);
}

CUresult cuMemFreeAsync_impl(CUdeviceptr dptr, CUstream hStream)
{
    return mem_free_async(dptr, hStream);
}

/* ------------------------------------------------------------------------ */
/* Virtual memory management (cuMemCreate, cuMemMap, ...)                    */
/* ------------------------------------------------------------------------ */

/* A physical allocation is a memfd of its size; a reservation is
 * inaccessible address space; cuMemMap maps the memfd over part of a
 * reservation, so what the program writes through the mapped address lands
 * in the handle's memory and is seen through every other mapping of it, as
 * on the device. Each mapping is also an AK_VMM allocation record, so copies
 * and kernels accept its addresses. */
#define VMM_GRANULARITY ((size_t)2 << 20)

struct fake_vmm {
    struct hdr h;
    int fd;
    size_t size;
    int maps;     /* live mappings */
    int released; /* cuMemRelease'd: gone with its last mapping */
};

struct vmm_range {
    uintptr_t base;
    size_t size;
    struct fake_vmm *v; /* mappings only */
};
static struct vmm_range *g_reserved, *g_mapped;
static size_t g_nreserved, g_nmapped;

static int range_push(struct vmm_range **arr, size_t *n, struct vmm_range r)
{
    struct vmm_range *na = realloc(*arr, (*n + 1) * sizeof *na);
    if (!na)
        return -1;
    *arr = na;
    na[(*n)++] = r;
    return 0;
}

static void vmm_destroy_locked(struct fake_vmm *v)
{
    handle_remove(&v->h);
    g_used_mem -= v->size;
    close(v->fd);
    free(v);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    ENTER(cuMemGetAllocationGranularity);
    TRY(need_init());
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = VMM_GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    ENTER(cuMemCreate);
    TRY(need_init());
    if (!handle || !prop || flags || !size || size % VMM_GRANULARITY ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev_check(prop->location.id) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    struct fake_vmm *v = calloc(1, sizeof *v);
    if (!v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    v->h = (struct hdr){MAGIC_VMM, v};
    v->size = size;
    v->fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
    if (v->fd < 0 || ftruncate(v->fd, (off_t)size) != 0) {
        if (v->fd >= 0)
            close(v->fd);
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    LOCK();
    if (size > g_total_mem - g_used_mem || handle_add(&v->h) != 0) {
        UNLOCK();
        close(v->fd);
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g_used_mem += size;
    UNLOCK();
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)&v->h;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    ENTER(cuMemRelease);
    TRY(need_init());
    LOCK();
    struct fake_vmm *v = handle_get((void *)(uintptr_t)handle, MAGIC_VMM);
    if (!v || v->released) {
        UNLOCK();
        return CUDA_ERROR_INVALID_VALUE;
    }
    v->released = 1;
    if (!v->maps)
        vmm_destroy_locked(v);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    ENTER(cuMemAddressReserve);
    TRY(need_init());
    if (!ptr || !size || size % VMM_GRANULARITY || (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment > VMM_GRANULARITY ? alignment : VMM_GRANULARITY;
    /* `addr` is a hint: the fake takes whatever the kernel gives */
    char *raw =
        mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1);
    if (base > (uintptr_t)raw)
        munmap(raw, base - (uintptr_t)raw);
    if ((uintptr_t)raw + size + align > base + size)
        munmap((void *)(base + size), (uintptr_t)raw + size + align - (base + size));
    LOCK();
    int bad = range_push(&g_reserved, &g_nreserved, (struct vmm_range){base, size, NULL});
    UNLOCK();
    if (bad) {
        munmap((void *)base, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = base;
    return CUDA_SUCCESS;
}

static int overlaps(const struct vmm_range *r, uintptr_t p, size_t n)
{
    return p < r->base + r->size && r->base < p + n;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    ENTER(cuMemAddressFree);
    TRY(need_init());
    LOCK();
    for (size_t i = 0; i < g_nreserved; i++) {
        if (g_reserved[i].base != ptr || g_reserved[i].size != size)
            continue;
        for (size_t m = 0; m < g_nmapped; m++)
            if (overlaps(&g_mapped[m], ptr, size)) { /* still mapped: unmap first */
                UNLOCK();
                return CUDA_ERROR_INVALID_VALUE;
            }
        g_reserved[i] = g_reserved[--g_nreserved];
        UNLOCK();
        munmap((void *)(uintptr_t)ptr, size);
        return CUDA_SUCCESS;
    }
    UNLOCK();
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    ENTER(cuMemMap);
    TRY(need_init());
    if (!ptr || !size || flags || ptr % VMM_GRANULARITY || size % VMM_GRANULARITY ||
        offset % VMM_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_vmm *v = handle_get((void *)(uintptr_t)handle, MAGIC_VMM);
    int inside = 0;
    for (size_t i = 0; i < g_nreserved; i++)
        inside |=
            ptr >= g_reserved[i].base && ptr + size <= g_reserved[i].base + g_reserved[i].size;
    for (size_t m = 0; m < g_nmapped; m++)
        if (overlaps(&g_mapped[m], ptr, size))
            inside = 0; /* mapped already */
    if (!v || v->released || offset > v->size || size > v->size - offset || !inside) {
        UNLOCK();
        return v && !v->released ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    }
    if (mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, v->fd,
             (off_t)offset) == MAP_FAILED) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (range_push(&g_mapped, &g_nmapped, (struct vmm_range){ptr, size, v}) != 0 ||
        alloc_add_locked(ptr, size, 0, AK_VMM, NULL) != 0) {
        UNLOCK();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    v->maps++;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    ENTER(cuMemUnmap);
    TRY(need_init());
    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    int found = 0;
    LOCK();
    for (size_t m = 0; m < g_nmapped;) {
        struct vmm_range r = g_mapped[m];
        if (r.base < ptr || r.base + r.size > ptr + size) {
            m++;
            continue;
        }
        found = 1;
        /* back to reserved, inaccessible address space */
        mmap((void *)r.base, r.size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        size_t i;
        if (atl_addrmap_get(&g_byb, r.base, &i))
            alloc_remove_locked(&g_allocs[i]);
        g_mapped[m] = g_mapped[--g_nmapped];
        if (--r.v->maps == 0 && r.v->released)
            vmm_destroy_locked(r.v);
    }
    UNLOCK();
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Every mapping is readable and writable from the start; this only checks
 * its arguments. */
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    ENTER(cuMemSetAccess);
    TRY(need_init());
    if (!ptr || !size || !desc || !count)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    ENTER(cuMemGetInfo_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    *total = g_total_mem;
    *free_bytes = g_total_mem > g_used_mem ? g_total_mem - g_used_mem : 0;
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    ENTER(cuMemGetAddressRange_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    LOCK();
    struct alloc *a = alloc_find_locked(dptr);
    int ok = a && (a->kind == AK_DEVICE || a->kind == AK_MANAGED);
    if (ok) {
        if (pbase)
            *pbase = a->base;
        if (psize)
            *psize = a->size;
    }
    UNLOCK();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    ENTER(cuMemAllocHost_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    return alloc_host(c, pp, bytesize);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    ENTER(cuMemHostAlloc);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_host(c, pp, bytesize);
}

CUresult cuMemFreeHost(void *p)
{
    ENTER(cuMemFreeHost);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    return mem_free((uintptr_t)p, 1u << AK_HOST);
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    ENTER(cuMemHostRegister_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!p || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t b = (uintptr_t)p;
    LOCK();
    for (size_t i = 0; i < g_nallocs; i++) {
        struct alloc *a = &g_allocs[i];
        if (b < a->base + a->size && a->base < b + bytesize) {
            CUresult r = a->kind == AK_REGISTERED ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                                                  : CUDA_ERROR_INVALID_VALUE;
            UNLOCK();
            return r;
        }
    }
    int bad = alloc_add_locked(b, bytesize, 0, AK_REGISTERED, c);
    UNLOCK();
    return bad ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
    ENTER(cuMemHostUnregister);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return mem_free((uintptr_t)p, 1u << AK_REGISTERED) == CUDA_SUCCESS
               ? CUDA_SUCCESS
               : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    ENTER(cuMemHostGetDevicePointer_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pdptr || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct alloc *a = alloc_find_locked((uintptr_t)p);
    int ok = a && (a->kind == AK_HOST || a->kind == AK_REGISTERED);
    UNLOCK();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* One attribute of a known allocation a (NULL: pageable host memory). */
static CUresult ptr_attr_locked(const struct alloc *a, CUdeviceptr ptr, CUpointer_attribute attr,
                                void *data)
{
    unsigned mt = 0;
    if (a)
        mt = a->kind == AK_DEVICE || a->kind == AK_MANAGED || a->kind == AK_VMM
                 ? CU_MEMORYTYPE_DEVICE
                 : CU_MEMORYTYPE_HOST;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = a ? (CUcontext)a->ctx : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = mt;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = a ? ptr : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *(void **)data =
            a && a->kind != AK_DEVICE && a->kind != AK_VMM ? (void *)(uintptr_t)ptr : NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned *)data = a && a->kind == AK_MANAGED;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = a ? 0 : -2;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = a ? (unsigned long long)a->base : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = a ? a->base : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = a ? a->size : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned *)data = a != NULL;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(unsigned *)data = 1;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    ENTER(cuPointerGetAttribute);
    TRY(need_init());
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct alloc *a = alloc_find_locked(ptr);
    /* the real driver knows nothing of pageable host memory */
    CUresult r = a ? ptr_attr_locked(a, ptr, attribute, data) : CUDA_ERROR_INVALID_VALUE;
    UNLOCK();
    return r;
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                void **data, CUdeviceptr ptr)
{
    ENTER(cuPointerGetAttributes);
    TRY(need_init());
    if (!attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct alloc *a = alloc_find_locked(ptr);
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < numAttributes && r == CUDA_SUCCESS; i++)
        r = ptr_attr_locked(a, ptr, attributes[i], data[i]);
    UNLOCK();
    return r;
}

/* Arrays: host-backed, rows packed (pitch = width * element size). */
static CUresult array_create(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    if (!pHandle || !d)
        return CUDA_ERROR_INVALID_VALUE;
    size_t fb = format_bytes(d->Format);
    if (!fb || !d->Width || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_array *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->h = (struct hdr){MAGIC_ARRAY, a};
    a->desc = *d;
    a->row_bytes = d->Width * fb * d->NumChannels;
    a->height = d->Height ? d->Height : 1;
    a->depth = d->Depth ? d->Depth : 1;
    a->data = calloc(a->row_bytes * a->height * a->depth, 1);
    LOCK();
    int bad = !a->data || handle_add(&a->h);
    UNLOCK();
    if (bad) {
        free(a->data);
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pHandle = (CUarray)a;
    return CUDA_SUCCESS;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    ENTER(cuArrayCreate_v2);
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = pAllocateArray->Width,
                                 .Height = pAllocateArray->Height,
                                 .Depth = 0,
                                 .Format = pAllocateArray->Format,
                                 .NumChannels = pAllocateArray->NumChannels};
    return array_create(pHandle, &d);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    ENTER(cuArray3DCreate_v2);
    return array_create(pHandle, pAllocateArray);
}

CUresult cuArrayDestroy(CUarray hArray)
{
    ENTER(cuArrayDestroy);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    LOCK();
    struct fake_array *a = handle_get(hArray, MAGIC_ARRAY);
    if (a)
        handle_remove(&a->h);
    UNLOCK();
    if (!a)
        return CUDA_ERROR_INVALID_HANDLE;
    free(a->data);
    free(a);
    return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    ENTER(cuArrayGetDescriptor_v2);
    struct fake_ctx *c;
    TRY(ctx_enter(&c));
    struct fake_array *a = array_get(hArray);
    if (!a)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    pArrayDescriptor->Width = a->desc.Width;
    pArrayDescriptor->Height = a->desc.Height;
    pArrayDescriptor->Format = a->desc.Format;
    pArrayDescriptor->NumChannels = a->desc.NumChannels;
    return CUDA_SUCCESS;
}
