/*
 * Signature classes of the hooked entry points (see hooks.def).
 *
 * For each KIND:
 *   ATL_K_KIND_P     the parameter list, with the names the other parts use
 *   ATL_K_KIND_A     the same names as an argument list
 *   ATL_K_KIND_BIT   the atl_on bit that sends the call to the engine
 *   ATL_K_KIND_PRE   statements run before the real call: build the event
 *                    `ev_`, tell the engine; may rewrite parameters (red
 *                    zones pad the size)
 *   ATL_K_KIND_POST  statements run after it, with the real result in `r_`
 * A row of hooks.def with a light path has its functions at the end.
 * In PRE and POST, `id_` is the hook's ATL_ID_*.
 */
#ifndef ATL_KINDS_H
#define ATL_KINDS_H

/* ---- resolvers (bodies are special, see hooks.c) ---- */
#define ATL_K_GPA1_P const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags
#define ATL_K_GPA1_A symbol, pfn, cudaVersion, flags
#define ATL_K_GPA1_BIT ATL_ON_RESOLVE
#define ATL_K_GPA1_PRE
#define ATL_K_GPA1_POST atl_gpa_swap(r_, pfn);

#define ATL_K_GPA2_P                                                                               \
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,                             \
        CUdriverProcAddressQueryResult *symbolStatus
#define ATL_K_GPA2_A symbol, pfn, cudaVersion, flags, symbolStatus
#define ATL_K_GPA2_BIT ATL_ON_RESOLVE
#define ATL_K_GPA2_PRE
#define ATL_K_GPA2_POST atl_gpa_swap(r_, pfn);

/* ---- launches ---- */
#define ATL_K_LAUNCH_P                                                                             \
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,              \
        unsigned int by, unsigned int bz, unsigned int shmem, CUstream hStream, void **kp,         \
        void **extra
#define ATL_K_LAUNCH_A f, gx, gy, gz, bx, by, bz, shmem, hStream, kp, extra
#define ATL_K_LAUNCH_BIT ATL_ON_LAUNCH
/* The event of a grid launch. Every field assigned, none left to a zeroing
 * initializer: GCC zeroes the whole event with `rep stos` first, a slow start
 * on every traced launch. */
static inline void atl_launch_event(struct atl_launch *ev, int hook, CUfunction f, unsigned gx,
                                    unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                    unsigned shmem, CUstream stream, void **kp, void **extra)
{
    ev->hook = hook, ev->func = f;
    ev->grid[0] = gx, ev->grid[1] = gy, ev->grid[2] = gz;
    ev->block[0] = bx, ev->block[1] = by, ev->block[2] = bz;
    ev->cluster[0] = ev->cluster[1] = ev->cluster[2] = 0;
    ev->shmem = shmem, ev->stream = stream, ev->params = kp, ev->extra = extra;
    ev->config = NULL, ev->seq = 0;
}
/* In slow_, whose return address is the caller of the hook's entry (the
 * entry jumps to it). */
#define ATL_LAUNCH_EVENT(kp_, extra_)                                                              \
    struct atl_launch ev_;                                                                         \
    atl_launch_event(&ev_, id_, f, gx, gy, gz, bx, by, bz, shmem, hStream, kp_, extra_);           \
    ev_.caller = __builtin_return_address(0);                                                      \
    atl_launch_pre(&ev_);
#define ATL_K_LAUNCH_PRE ATL_LAUNCH_EVENT(kp, extra)
#define ATL_K_LAUNCH_POST r_ = atl_launch_post(&ev_, r_);

#define ATL_K_LAUNCH_COOP_P                                                                        \
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,              \
        unsigned int by, unsigned int bz, unsigned int shmem, CUstream hStream, void **kp
#define ATL_K_LAUNCH_COOP_A f, gx, gy, gz, bx, by, bz, shmem, hStream, kp
#define ATL_K_LAUNCH_COOP_BIT ATL_ON_LAUNCH
#define ATL_K_LAUNCH_COOP_PRE ATL_LAUNCH_EVENT(kp, NULL)
#define ATL_K_LAUNCH_COOP_POST r_ = atl_launch_post(&ev_, r_);

#define ATL_K_LAUNCH_EX_P const CUlaunchConfig *config, CUfunction f, void **kp, void **extra
#define ATL_K_LAUNCH_EX_A config, f, kp, extra
#define ATL_K_LAUNCH_EX_BIT ATL_ON_LAUNCH
#define ATL_K_LAUNCH_EX_PRE                                                                        \
    struct atl_launch ev_ = {.hook = id_,                                                          \
                             .func = f,                                                            \
                             .params = kp,                                                         \
                             .extra = extra,                                                       \
                             .config = config,                                                     \
                             .caller = __builtin_return_address(0)};                               \
    atl_launch_from_config(&ev_);                                                                  \
    atl_launch_pre(&ev_);
#define ATL_K_LAUNCH_EX_POST r_ = atl_launch_post(&ev_, r_);

#define ATL_K_GRAPH_LAUNCH_P CUgraphExec hExec, CUstream hStream
#define ATL_K_GRAPH_LAUNCH_A hExec, hStream
#define ATL_K_GRAPH_LAUNCH_BIT ATL_ON_LAUNCH
#define ATL_K_GRAPH_LAUNCH_PRE                                                                     \
    struct atl_graph_launch ev_ = {                                                                \
        .hook = id_, .exec = hExec, .stream = hStream, .caller = __builtin_return_address(0)};     \
    atl_graph_launch_pre(&ev_);
#define ATL_K_GRAPH_LAUNCH_POST r_ = atl_graph_launch_post(&ev_, r_);

/* ---- graph instantiation (always seen: the flight recorder keeps each
 * executable graph's kernel nodes, read from the graph while it exists) ---- */
#define ATL_GRAPH_INST_PRE struct atl_graph_inst ev_ = {.hook = id_, .graph = hGraph};
#define ATL_GRAPH_INST_POST                                                                        \
    ev_.exec = (r_ == CUDA_SUCCESS && phGraphExec) ? *phGraphExec : NULL;                          \
    atl_graph_inst_post(&ev_, r_);
#define ATL_K_GRAPH_INST_LEGACY_P                                                                  \
    CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,           \
        size_t bufferSize
#define ATL_K_GRAPH_INST_LEGACY_A phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize
#define ATL_K_GRAPH_INST_LEGACY_BIT ATL_ON_CAPTURE
#define ATL_K_GRAPH_INST_LEGACY_PRE ATL_GRAPH_INST_PRE
#define ATL_K_GRAPH_INST_LEGACY_POST ATL_GRAPH_INST_POST
#define ATL_K_GRAPH_INST_FLAGS_P CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags
#define ATL_K_GRAPH_INST_FLAGS_A phGraphExec, hGraph, flags
#define ATL_K_GRAPH_INST_FLAGS_BIT ATL_ON_CAPTURE
#define ATL_K_GRAPH_INST_FLAGS_PRE ATL_GRAPH_INST_PRE
#define ATL_K_GRAPH_INST_FLAGS_POST ATL_GRAPH_INST_POST
#define ATL_K_GRAPH_INST_PARAMS_P                                                                  \
    CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *params
#define ATL_K_GRAPH_INST_PARAMS_A phGraphExec, hGraph, params
#define ATL_K_GRAPH_INST_PARAMS_BIT ATL_ON_CAPTURE
#define ATL_K_GRAPH_INST_PARAMS_PRE ATL_GRAPH_INST_PRE
#define ATL_K_GRAPH_INST_PARAMS_POST ATL_GRAPH_INST_POST

/* ---- capture ---- */
#define ATL_K_CAPTURE_BEGIN1_P CUstream hStream
#define ATL_K_CAPTURE_BEGIN1_A hStream
#define ATL_K_CAPTURE_BEGIN1_BIT ATL_ON_CAPTURE
#define ATL_K_CAPTURE_BEGIN1_PRE                                                                   \
    struct atl_capture ev_ = {.hook = id_, .stream = hStream, .mode = -1, .begin = 1};             \
    atl_capture_pre(&ev_);
#define ATL_K_CAPTURE_BEGIN1_POST atl_capture_post(&ev_, r_);

#define ATL_K_CAPTURE_BEGIN2_P CUstream hStream, CUstreamCaptureMode mode
#define ATL_K_CAPTURE_BEGIN2_A hStream, mode
#define ATL_K_CAPTURE_BEGIN2_BIT ATL_ON_CAPTURE
#define ATL_K_CAPTURE_BEGIN2_PRE                                                                   \
    struct atl_capture ev_ = {.hook = id_, .stream = hStream, .mode = (int)mode, .begin = 1};      \
    atl_capture_pre(&ev_);
#define ATL_K_CAPTURE_BEGIN2_POST atl_capture_post(&ev_, r_);

#define ATL_K_CAPTURE_TOGRAPH_P                                                                    \
    CUstream hStream, CUgraph hGraph, const CUgraphNode *deps, const CUgraphEdgeData *depData,     \
        size_t numDeps, CUstreamCaptureMode mode
#define ATL_K_CAPTURE_TOGRAPH_A hStream, hGraph, deps, depData, numDeps, mode
#define ATL_K_CAPTURE_TOGRAPH_BIT ATL_ON_CAPTURE
#define ATL_K_CAPTURE_TOGRAPH_PRE                                                                  \
    struct atl_capture ev_ = {                                                                     \
        .hook = id_, .stream = hStream, .mode = (int)mode, .graph = hGraph, .begin = 1};           \
    atl_capture_pre(&ev_);
#define ATL_K_CAPTURE_TOGRAPH_POST atl_capture_post(&ev_, r_);

#define ATL_K_CAPTURE_END_P CUstream hStream, CUgraph *phGraph
#define ATL_K_CAPTURE_END_A hStream, phGraph
#define ATL_K_CAPTURE_END_BIT ATL_ON_CAPTURE
#define ATL_K_CAPTURE_END_PRE                                                                      \
    struct atl_capture ev_ = {.hook = id_, .stream = hStream, .mode = -1};                         \
    atl_capture_pre(&ev_);
#define ATL_K_CAPTURE_END_POST                                                                     \
    ev_.graph = (r_ == CUDA_SUCCESS && phGraph) ? *phGraph : NULL;                                 \
    atl_capture_post(&ev_, r_);

/* ---- allocation ----
 * The engine (red zones) may ask the driver for more than the program did:
 * these return what goes to the driver in place of the program's size. */
static inline size_t atl_alloc_bytes(struct atl_alloc *ev)
{
    atl_alloc_pre(ev);
    return ev->padded;
}
static inline size_t atl_alloc_rows(struct atl_alloc *ev, size_t height)
{
    atl_alloc_pre(ev);
    return ev->padded_height ? ev->padded_height : height;
}
/* Red zones hold some frees back (src/redzone_quar.c): an allocation that fails for memory
 * meanwhile is retried as long as they release what they held (other threads' frees go
 * straight to the driver until it is done, so the quarantine cannot refill under it), then,
 * padded and still failing, once more without its red zone (UNPAD: the statement that
 * passes the program's own size again). The driver's answer is then the program's. */
#define ATL_ALLOC_RETRIES 16
#define ATL_HELD_RETRY(KIND, COUNT)                                                                \
    for (unsigned t_ = 0; t_ < ATL_ALLOC_RETRIES && r_ == CUDA_ERROR_OUT_OF_MEMORY &&              \
                          atl_alloc_release_held();                                                \
         t_++)                                                                                     \
        r_ = real_(ATL_K_##KIND##_A), COUNT;
#define ATL_ALLOC_RETRY(KIND, UNPAD)                                                               \
    if (r_ == CUDA_ERROR_OUT_OF_MEMORY && atl_alloc_pressure(1)) {                                 \
        ATL_HELD_RETRY(KIND, ev_.retries++)                                                        \
        if (r_ == CUDA_ERROR_OUT_OF_MEMORY && atl_alloc_unpad(&ev_)) {                             \
            UNPAD;                                                                                 \
            r_ = real_(ATL_K_##KIND##_A);                                                          \
        }                                                                                          \
        atl_alloc_pressure(0);                                                                     \
    }
#define ATL_K_ALLOC_P CUdeviceptr *dptr, size_t bytesize
#define ATL_K_ALLOC_A dptr, bytesize
#define ATL_K_ALLOC_BIT ATL_ON_ALLOC
#define ATL_K_ALLOC_PRE                                                                            \
    struct atl_alloc ev_ = {                                                                       \
        .hook = id_, .kind = ATL_ALLOC_DEVICE, .dptr = dptr, .bytes = bytesize};                   \
    bytesize = atl_alloc_bytes(&ev_);
#define ATL_K_ALLOC_POST                                                                           \
    ATL_ALLOC_RETRY(ALLOC, bytesize = ev_.padded) atl_alloc_post(&ev_, r_);

#define ATL_K_ALLOC_PITCH_P                                                                        \
    CUdeviceptr *dptr, size_t *pPitch, size_t width, size_t height, unsigned int elemSize
#define ATL_K_ALLOC_PITCH_A dptr, pPitch, width, height, elemSize
#define ATL_K_ALLOC_PITCH_BIT ATL_ON_ALLOC
#define ATL_K_ALLOC_PITCH_PRE                                                                      \
    struct atl_alloc ev_ = {.hook = id_,                                                           \
                            .kind = ATL_ALLOC_PITCH,                                               \
                            .dptr = dptr,                                                          \
                            .pitch = pPitch,                                                       \
                            .width = width,                                                        \
                            .height = height,                                                      \
                            .elem = elemSize,                                                      \
                            .bytes = width * height};                                              \
    height = atl_alloc_rows(&ev_, height);
#define ATL_K_ALLOC_PITCH_POST                                                                     \
    ATL_ALLOC_RETRY(ALLOC_PITCH, height = ev_.height) atl_alloc_post(&ev_, r_);

#define ATL_K_ALLOC_MANAGED_P CUdeviceptr *dptr, size_t bytesize, unsigned int mflags
#define ATL_K_ALLOC_MANAGED_A dptr, bytesize, mflags
#define ATL_K_ALLOC_MANAGED_BIT ATL_ON_ALLOC
#define ATL_K_ALLOC_MANAGED_PRE                                                                    \
    struct atl_alloc ev_ = {                                                                       \
        .hook = id_, .kind = ATL_ALLOC_MANAGED, .dptr = dptr, .bytes = bytesize};                  \
    bytesize = atl_alloc_bytes(&ev_);
#define ATL_K_ALLOC_MANAGED_POST                                                                   \
    ATL_ALLOC_RETRY(ALLOC_MANAGED, bytesize = ev_.padded) atl_alloc_post(&ev_, r_);

#define ATL_K_ALLOC_ASYNC_P CUdeviceptr *dptr, size_t bytesize, CUstream hStream
#define ATL_K_ALLOC_ASYNC_A dptr, bytesize, hStream
#define ATL_K_ALLOC_ASYNC_BIT ATL_ON_ALLOC
#define ATL_K_ALLOC_ASYNC_PRE                                                                      \
    struct atl_alloc ev_ = {                                                                       \
        .hook = id_, .kind = ATL_ALLOC_ASYNC, .dptr = dptr, .bytes = bytesize, .stream = hStream}; \
    bytesize = atl_alloc_bytes(&ev_);
#define ATL_K_ALLOC_ASYNC_POST                                                                     \
    ATL_ALLOC_RETRY(ALLOC_ASYNC, bytesize = ev_.padded) atl_alloc_post(&ev_, r_);

#define ATL_K_ALLOC_POOL_P CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream
#define ATL_K_ALLOC_POOL_A dptr, bytesize, pool, hStream
#define ATL_K_ALLOC_POOL_BIT ATL_ON_ALLOC
#define ATL_K_ALLOC_POOL_PRE                                                                       \
    struct atl_alloc ev_ = {.hook = id_,                                                           \
                            .kind = ATL_ALLOC_ASYNC,                                               \
                            .dptr = dptr,                                                          \
                            .bytes = bytesize,                                                     \
                            .stream = hStream,                                                     \
                            .pool = pool};                                                         \
    bytesize = atl_alloc_bytes(&ev_);
#define ATL_K_ALLOC_POOL_POST                                                                      \
    ATL_ALLOC_RETRY(ALLOC_POOL, bytesize = ev_.padded) atl_alloc_post(&ev_, r_);

#define ATL_K_FREE_P CUdeviceptr dptr
#define ATL_K_FREE_A dptr
#define ATL_K_FREE_BIT ATL_ON_ALLOC
#define ATL_K_FREE_PRE                                                                             \
    struct atl_free ev_ = {.hook = id_, .ptr = dptr};                                              \
    atl_free_pre(&ev_);                                                                            \
    if (ev_.held) { /* kept poisoned in the quarantine (src/redzone_quar.c) */                     \
        atl_free_post(&ev_, CUDA_SUCCESS);                                                         \
        ATL_SLOW_RETURN(CUDA_SUCCESS);                                                             \
    }
#define ATL_K_FREE_POST atl_free_post(&ev_, r_);

#define ATL_K_FREE_ASYNC_P CUdeviceptr dptr, CUstream hStream
#define ATL_K_FREE_ASYNC_A dptr, hStream
#define ATL_K_FREE_ASYNC_BIT ATL_ON_ALLOC
#define ATL_K_FREE_ASYNC_PRE                                                                       \
    struct atl_free ev_ = {.hook = id_,                                                            \
                           .ptr = dptr,                                                            \
                           .stream = hStream,                                                      \
                           .async = 1,                                                             \
                           .caller = __builtin_return_address(0)};                                 \
    atl_free_pre(&ev_);                                                                            \
    if (ev_.held) { /* released later, with a batch (src/redzone_quar.c) */                        \
        atl_free_post(&ev_, CUDA_SUCCESS);                                                         \
        ATL_SLOW_RETURN(CUDA_SUCCESS);                                                             \
    }
#define ATL_K_FREE_ASYNC_POST atl_free_post(&ev_, r_);

/* ---- virtual memory management (src/vmm.c); no light path ---- */
#define ATL_VMM_EVENT(...)                                                                         \
    struct atl_vmm ev_ = {.hook = id_, __VA_ARGS__};                                               \
    atl_vmm_pre(&ev_);
#define ATL_K_VMM_CREATE_P                                                                         \
    CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,            \
        unsigned long long flags
#define ATL_K_VMM_CREATE_A handle, size, prop, flags
#define ATL_K_VMM_CREATE_PRE                                                                       \
    ATL_VMM_EVENT(.op = ATL_VMM_CREATE, .handle_out = handle, .bytes = size)
#define ATL_K_VMM_RELEASE_P CUmemGenericAllocationHandle handle
#define ATL_K_VMM_RELEASE_A handle
#define ATL_K_VMM_RELEASE_PRE ATL_VMM_EVENT(.op = ATL_VMM_RELEASE, .handle = handle)
#define ATL_K_VMM_RESERVE_P                                                                        \
    CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags
#define ATL_K_VMM_RESERVE_A ptr, size, alignment, addr, flags
#define ATL_K_VMM_RESERVE_PRE ATL_VMM_EVENT(.op = ATL_VMM_RESERVE, .ptr_out = ptr, .bytes = size)
#define ATL_K_VMM_ADDR_FREE_P CUdeviceptr ptr, size_t size
#define ATL_K_VMM_ADDR_FREE_A ptr, size
#define ATL_K_VMM_ADDR_FREE_PRE ATL_VMM_EVENT(.op = ATL_VMM_ADDR_FREE, .ptr = ptr, .bytes = size)
#define ATL_K_VMM_MAP_P                                                                            \
    CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,              \
        unsigned long long flags
#define ATL_K_VMM_MAP_A ptr, size, offset, handle, flags
#define ATL_K_VMM_MAP_PRE                                                                          \
    ATL_VMM_EVENT(.op = ATL_VMM_MAP, .ptr = ptr, .bytes = size, .offset = offset, .handle = handle)
#define ATL_K_VMM_UNMAP_P CUdeviceptr ptr, size_t size
#define ATL_K_VMM_UNMAP_A ptr, size
#define ATL_K_VMM_UNMAP_PRE ATL_VMM_EVENT(.op = ATL_VMM_UNMAP, .ptr = ptr, .bytes = size)
/* the rest is the same for every VMM kind */
#define ATL_K_VMM_CREATE_BIT ATL_ON_ALLOC
#define ATL_K_VMM_RELEASE_BIT ATL_ON_ALLOC
#define ATL_K_VMM_RESERVE_BIT ATL_ON_ALLOC
#define ATL_K_VMM_ADDR_FREE_BIT ATL_ON_ALLOC
#define ATL_K_VMM_MAP_BIT ATL_ON_ALLOC
#define ATL_K_VMM_UNMAP_BIT ATL_ON_ALLOC
#define ATL_K_VMM_CREATE_POST                                                                      \
    if (r_ == CUDA_ERROR_OUT_OF_MEMORY && atl_alloc_pressure(1)) {                                 \
        ATL_HELD_RETRY(VMM_CREATE, (void)0)                                                        \
        atl_alloc_pressure(0);                                                                     \
    }                                                                                              \
    atl_vmm_post(&ev_, r_);
#define ATL_K_VMM_RELEASE_POST atl_vmm_post(&ev_, r_);
#define ATL_K_VMM_RESERVE_POST atl_vmm_post(&ev_, r_);
#define ATL_K_VMM_ADDR_FREE_POST atl_vmm_post(&ev_, r_);
#define ATL_K_VMM_MAP_POST atl_vmm_post(&ev_, r_);
#define ATL_K_VMM_UNMAP_POST atl_vmm_post(&ev_, r_);

/* ---- copies ---- */
#define ATL_COPY_EVENT(...)                                                                        \
    struct atl_copy ev_ = {.hook = id_, .caller = __builtin_return_address(0), __VA_ARGS__};       \
    atl_copy_pre(&ev_);
#define ATL_COPY_POST r_ = atl_copy_post(&ev_, r_);

#define ATL_K_CPY_GEN_P CUdeviceptr dst, CUdeviceptr src, size_t n
#define ATL_K_CPY_GEN_A dst, src, n
#define ATL_K_CPY_GEN_BIT ATL_ON_COPY
#define ATL_K_CPY_GEN_PRE                                                                          \
    ATL_COPY_EVENT(.kind = ATL_CPY_GENERIC, .dst = dst, .src = src, .bytes = n)
#define ATL_K_CPY_GEN_POST ATL_COPY_POST

#define ATL_K_CPY_GEN_A_P CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream
#define ATL_K_CPY_GEN_A_A dst, src, n, hStream
#define ATL_K_CPY_GEN_A_BIT ATL_ON_COPY
#define ATL_K_CPY_GEN_A_PRE                                                                        \
    ATL_COPY_EVENT(.kind = ATL_CPY_GENERIC, .async = 1, .dst = dst, .src = src, .bytes = n,        \
                   .stream = hStream)
#define ATL_K_CPY_GEN_A_POST ATL_COPY_POST

#define ATL_K_CPY_PEER_P CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n
#define ATL_K_CPY_PEER_A dst, dctx, src, sctx, n
#define ATL_K_CPY_PEER_BIT ATL_ON_COPY
#define ATL_K_CPY_PEER_PRE ATL_COPY_EVENT(.kind = ATL_CPY_PEER, .dst = dst, .src = src, .bytes = n)
#define ATL_K_CPY_PEER_POST ATL_COPY_POST

#define ATL_K_CPY_PEER_A_P                                                                         \
    CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream hStream
#define ATL_K_CPY_PEER_A_A dst, dctx, src, sctx, n, hStream
#define ATL_K_CPY_PEER_A_BIT ATL_ON_COPY
#define ATL_K_CPY_PEER_A_PRE                                                                       \
    ATL_COPY_EVENT(.kind = ATL_CPY_PEER, .async = 1, .dst = dst, .src = src, .bytes = n,           \
                   .stream = hStream)
#define ATL_K_CPY_PEER_A_POST ATL_COPY_POST

#define ATL_K_CPY_HTOD_P CUdeviceptr dst, const void *src, size_t n
#define ATL_K_CPY_HTOD_A dst, src, n
#define ATL_K_CPY_HTOD_BIT ATL_ON_COPY
#define ATL_K_CPY_HTOD_PRE                                                                         \
    ATL_COPY_EVENT(.kind = ATL_CPY_HTOD, .dst = dst, .host_src = src, .bytes = n)
#define ATL_K_CPY_HTOD_POST ATL_COPY_POST

#define ATL_K_CPY_HTOD_A_P CUdeviceptr dst, const void *src, size_t n, CUstream hStream
#define ATL_K_CPY_HTOD_A_A dst, src, n, hStream
#define ATL_K_CPY_HTOD_A_BIT ATL_ON_COPY
#define ATL_K_CPY_HTOD_A_PRE                                                                       \
    ATL_COPY_EVENT(.kind = ATL_CPY_HTOD, .async = 1, .dst = dst, .host_src = src, .bytes = n,      \
                   .stream = hStream)
#define ATL_K_CPY_HTOD_A_POST ATL_COPY_POST

#define ATL_K_CPY_DTOH_P void *dst, CUdeviceptr src, size_t n
#define ATL_K_CPY_DTOH_A dst, src, n
#define ATL_K_CPY_DTOH_BIT ATL_ON_COPY_DTOH
#define ATL_K_CPY_DTOH_PRE                                                                         \
    ATL_COPY_EVENT(.kind = ATL_CPY_DTOH, .host_dst = dst, .src = src, .bytes = n)
#define ATL_K_CPY_DTOH_POST ATL_COPY_POST

#define ATL_K_CPY_DTOH_A_P void *dst, CUdeviceptr src, size_t n, CUstream hStream
#define ATL_K_CPY_DTOH_A_A dst, src, n, hStream
#define ATL_K_CPY_DTOH_A_BIT ATL_ON_COPY
#define ATL_K_CPY_DTOH_A_PRE                                                                       \
    ATL_COPY_EVENT(.kind = ATL_CPY_DTOH, .async = 1, .host_dst = dst, .src = src, .bytes = n,      \
                   .stream = hStream)
#define ATL_K_CPY_DTOH_A_POST ATL_COPY_POST

#define ATL_K_CPY_DTOD_P CUdeviceptr dst, CUdeviceptr src, size_t n
#define ATL_K_CPY_DTOD_A dst, src, n
#define ATL_K_CPY_DTOD_BIT ATL_ON_COPY
#define ATL_K_CPY_DTOD_PRE ATL_COPY_EVENT(.kind = ATL_CPY_DTOD, .dst = dst, .src = src, .bytes = n)
#define ATL_K_CPY_DTOD_POST ATL_COPY_POST

#define ATL_K_CPY_DTOD_A_P CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream
#define ATL_K_CPY_DTOD_A_A dst, src, n, hStream
#define ATL_K_CPY_DTOD_A_BIT ATL_ON_COPY
#define ATL_K_CPY_DTOD_A_PRE                                                                       \
    ATL_COPY_EVENT(.kind = ATL_CPY_DTOD, .async = 1, .dst = dst, .src = src, .bytes = n,           \
                   .stream = hStream)
#define ATL_K_CPY_DTOD_A_POST ATL_COPY_POST

#define ATL_K_CPY_DTOA_P CUarray dstA, size_t dstOff, CUdeviceptr src, size_t n
#define ATL_K_CPY_DTOA_A dstA, dstOff, src, n
#define ATL_K_CPY_DTOA_BIT ATL_ON_COPY
#define ATL_K_CPY_DTOA_PRE                                                                         \
    ATL_COPY_EVENT(.kind = ATL_CPY_DTOA, .adst = dstA, .dst_off = dstOff, .src = src, .bytes = n)
#define ATL_K_CPY_DTOA_POST ATL_COPY_POST

#define ATL_K_CPY_ATOD_P CUdeviceptr dst, CUarray srcA, size_t srcOff, size_t n
#define ATL_K_CPY_ATOD_A dst, srcA, srcOff, n
#define ATL_K_CPY_ATOD_BIT ATL_ON_COPY
#define ATL_K_CPY_ATOD_PRE                                                                         \
    ATL_COPY_EVENT(.kind = ATL_CPY_ATOD, .dst = dst, .asrc = srcA, .src_off = srcOff, .bytes = n)
#define ATL_K_CPY_ATOD_POST ATL_COPY_POST

#define ATL_K_CPY_HTOA_P CUarray dstA, size_t dstOff, const void *src, size_t n
#define ATL_K_CPY_HTOA_A dstA, dstOff, src, n
#define ATL_K_CPY_HTOA_BIT ATL_ON_COPY
#define ATL_K_CPY_HTOA_PRE                                                                         \
    ATL_COPY_EVENT(.kind = ATL_CPY_HTOA, .adst = dstA, .dst_off = dstOff, .host_src = src,         \
                   .bytes = n)
#define ATL_K_CPY_HTOA_POST ATL_COPY_POST

#define ATL_K_CPY_HTOA_A_P CUarray dstA, size_t dstOff, const void *src, size_t n, CUstream hStream
#define ATL_K_CPY_HTOA_A_A dstA, dstOff, src, n, hStream
#define ATL_K_CPY_HTOA_A_BIT ATL_ON_COPY
#define ATL_K_CPY_HTOA_A_PRE                                                                       \
    ATL_COPY_EVENT(.kind = ATL_CPY_HTOA, .async = 1, .adst = dstA, .dst_off = dstOff,              \
                   .host_src = src, .bytes = n, .stream = hStream)
#define ATL_K_CPY_HTOA_A_POST ATL_COPY_POST

#define ATL_K_CPY_ATOH_P void *dst, CUarray srcA, size_t srcOff, size_t n
#define ATL_K_CPY_ATOH_A dst, srcA, srcOff, n
#define ATL_K_CPY_ATOH_BIT ATL_ON_COPY
#define ATL_K_CPY_ATOH_PRE                                                                         \
    ATL_COPY_EVENT(.kind = ATL_CPY_ATOH, .host_dst = dst, .asrc = srcA, .src_off = srcOff,         \
                   .bytes = n)
#define ATL_K_CPY_ATOH_POST ATL_COPY_POST

#define ATL_K_CPY_ATOH_A_P void *dst, CUarray srcA, size_t srcOff, size_t n, CUstream hStream
#define ATL_K_CPY_ATOH_A_A dst, srcA, srcOff, n, hStream
#define ATL_K_CPY_ATOH_A_BIT ATL_ON_COPY
#define ATL_K_CPY_ATOH_A_PRE                                                                       \
    ATL_COPY_EVENT(.kind = ATL_CPY_ATOH, .async = 1, .host_dst = dst, .asrc = srcA,                \
                   .src_off = srcOff, .bytes = n, .stream = hStream)
#define ATL_K_CPY_ATOH_A_POST ATL_COPY_POST

#define ATL_K_CPY_ATOA_P CUarray dstA, size_t dstOff, CUarray srcA, size_t srcOff, size_t n
#define ATL_K_CPY_ATOA_A dstA, dstOff, srcA, srcOff, n
#define ATL_K_CPY_ATOA_BIT ATL_ON_COPY
#define ATL_K_CPY_ATOA_PRE                                                                         \
    ATL_COPY_EVENT(.kind = ATL_CPY_ATOA, .adst = dstA, .dst_off = dstOff, .asrc = srcA,            \
                   .src_off = srcOff, .bytes = n)
#define ATL_K_CPY_ATOA_POST ATL_COPY_POST

#define ATL_K_CPY_2D_P const CUDA_MEMCPY2D *pCopy
#define ATL_K_CPY_2D_A pCopy
#define ATL_K_CPY_2D_BIT ATL_ON_COPY
#define ATL_K_CPY_2D_PRE ATL_COPY_EVENT(.kind = ATL_CPY_2D, .p2d = pCopy)
#define ATL_K_CPY_2D_POST ATL_COPY_POST

#define ATL_K_CPY_2D_A_P const CUDA_MEMCPY2D *pCopy, CUstream hStream
#define ATL_K_CPY_2D_A_A pCopy, hStream
#define ATL_K_CPY_2D_A_BIT ATL_ON_COPY
#define ATL_K_CPY_2D_A_PRE                                                                         \
    ATL_COPY_EVENT(.kind = ATL_CPY_2D, .async = 1, .p2d = pCopy, .stream = hStream)
#define ATL_K_CPY_2D_A_POST ATL_COPY_POST

#define ATL_K_CPY_3D_P const CUDA_MEMCPY3D *pCopy
#define ATL_K_CPY_3D_A pCopy
#define ATL_K_CPY_3D_BIT ATL_ON_COPY
#define ATL_K_CPY_3D_PRE ATL_COPY_EVENT(.kind = ATL_CPY_3D, .p3d = pCopy)
#define ATL_K_CPY_3D_POST ATL_COPY_POST

#define ATL_K_CPY_3D_A_P const CUDA_MEMCPY3D *pCopy, CUstream hStream
#define ATL_K_CPY_3D_A_A pCopy, hStream
#define ATL_K_CPY_3D_A_BIT ATL_ON_COPY
#define ATL_K_CPY_3D_A_PRE                                                                         \
    ATL_COPY_EVENT(.kind = ATL_CPY_3D, .async = 1, .p3d = pCopy, .stream = hStream)
#define ATL_K_CPY_3D_A_POST ATL_COPY_POST

#define ATL_K_CPY_3DP_P const CUDA_MEMCPY3D_PEER *pCopy
#define ATL_K_CPY_3DP_A pCopy
#define ATL_K_CPY_3DP_BIT ATL_ON_COPY
#define ATL_K_CPY_3DP_PRE ATL_COPY_EVENT(.kind = ATL_CPY_3D_PEER, .p3dp = pCopy)
#define ATL_K_CPY_3DP_POST ATL_COPY_POST

#define ATL_K_CPY_3DP_A_P const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream
#define ATL_K_CPY_3DP_A_A pCopy, hStream
#define ATL_K_CPY_3DP_A_BIT ATL_ON_COPY
#define ATL_K_CPY_3DP_A_PRE                                                                        \
    ATL_COPY_EVENT(.kind = ATL_CPY_3D_PEER, .async = 1, .p3dp = pCopy, .stream = hStream)
#define ATL_K_CPY_3DP_A_POST ATL_COPY_POST

#define ATL_K_CPY_BATCH_P                                                                          \
    CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,  \
        size_t *attrsIdxs, size_t numAttrs, CUstream hStream
#define ATL_K_CPY_BATCH_A dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream
#define ATL_K_CPY_BATCH_BIT ATL_ON_COPY
#define ATL_K_CPY_BATCH_PRE                                                                        \
    ATL_COPY_EVENT(.kind = ATL_CPY_BATCH, .async = 1, .count = count, .batch_dst = dsts,           \
                   .batch_src = srcs, .batch_sizes = sizes, .stream = hStream)
#define ATL_K_CPY_BATCH_POST ATL_COPY_POST

#define ATL_K_CPY_3DBATCH_P                                                                        \
    size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long bflags, CUstream hStream
#define ATL_K_CPY_3DBATCH_A numOps, opList, bflags, hStream
#define ATL_K_CPY_3DBATCH_BIT ATL_ON_COPY
#define ATL_K_CPY_3DBATCH_PRE                                                                      \
    ATL_COPY_EVENT(.kind = ATL_CPY_3D_BATCH, .async = 1, .count = numOps, .batch3d = opList,       \
                   .stream = hStream)
#define ATL_K_CPY_3DBATCH_POST ATL_COPY_POST

/* CUDA 12.8's batch copies, with failIdx (kept for programs built then) */
#define ATL_K_CPY_BATCH1_P                                                                         \
    CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs,  \
        size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream
#define ATL_K_CPY_BATCH1_A dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream
#define ATL_K_CPY_BATCH1_BIT ATL_ON_COPY
#define ATL_K_CPY_BATCH1_PRE ATL_K_CPY_BATCH_PRE
#define ATL_K_CPY_BATCH1_POST ATL_COPY_POST

#define ATL_K_CPY_3DBATCH1_P                                                                       \
    size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long bflags,     \
        CUstream hStream
#define ATL_K_CPY_3DBATCH1_A numOps, opList, failIdx, bflags, hStream
#define ATL_K_CPY_3DBATCH1_BIT ATL_ON_COPY
#define ATL_K_CPY_3DBATCH1_PRE ATL_K_CPY_3DBATCH_PRE
#define ATL_K_CPY_3DBATCH1_POST ATL_COPY_POST

/* ---- memsets ---- */
#define ATL_SET_EVENT(...)                                                                         \
    struct atl_memset ev_ = {.hook = id_, .caller = __builtin_return_address(0), __VA_ARGS__};     \
    atl_memset_pre(&ev_);
#define ATL_SET_POST r_ = atl_memset_post(&ev_, r_);

#define ATL_K_SET_D8_P CUdeviceptr dst, unsigned char v, size_t n
#define ATL_K_SET_D8_A dst, v, n
#define ATL_K_SET_D8_BIT ATL_ON_MEMSET
#define ATL_K_SET_D8_PRE ATL_SET_EVENT(.dst = dst, .value = v, .elem = 1, .count = n)
#define ATL_K_SET_D8_POST ATL_SET_POST
#define ATL_K_SET_D16_P CUdeviceptr dst, unsigned short v, size_t n
#define ATL_K_SET_D16_A dst, v, n
#define ATL_K_SET_D16_BIT ATL_ON_MEMSET
#define ATL_K_SET_D16_PRE ATL_SET_EVENT(.dst = dst, .value = v, .elem = 2, .count = n)
#define ATL_K_SET_D16_POST ATL_SET_POST
#define ATL_K_SET_D32_P CUdeviceptr dst, unsigned int v, size_t n
#define ATL_K_SET_D32_A dst, v, n
#define ATL_K_SET_D32_BIT ATL_ON_MEMSET
#define ATL_K_SET_D32_PRE ATL_SET_EVENT(.dst = dst, .value = v, .elem = 4, .count = n)
#define ATL_K_SET_D32_POST ATL_SET_POST

#define ATL_K_SET_D8_A_P CUdeviceptr dst, unsigned char v, size_t n, CUstream hStream
#define ATL_K_SET_D8_A_A dst, v, n, hStream
#define ATL_K_SET_D8_A_BIT ATL_ON_MEMSET
#define ATL_K_SET_D8_A_PRE                                                                         \
    ATL_SET_EVENT(.async = 1, .dst = dst, .value = v, .elem = 1, .count = n, .stream = hStream)
#define ATL_K_SET_D8_A_POST ATL_SET_POST
#define ATL_K_SET_D16_A_P CUdeviceptr dst, unsigned short v, size_t n, CUstream hStream
#define ATL_K_SET_D16_A_A dst, v, n, hStream
#define ATL_K_SET_D16_A_BIT ATL_ON_MEMSET
#define ATL_K_SET_D16_A_PRE                                                                        \
    ATL_SET_EVENT(.async = 1, .dst = dst, .value = v, .elem = 2, .count = n, .stream = hStream)
#define ATL_K_SET_D16_A_POST ATL_SET_POST
#define ATL_K_SET_D32_A_P CUdeviceptr dst, unsigned int v, size_t n, CUstream hStream
#define ATL_K_SET_D32_A_A dst, v, n, hStream
#define ATL_K_SET_D32_A_BIT ATL_ON_MEMSET
#define ATL_K_SET_D32_A_PRE                                                                        \
    ATL_SET_EVENT(.async = 1, .dst = dst, .value = v, .elem = 4, .count = n, .stream = hStream)
#define ATL_K_SET_D32_A_POST ATL_SET_POST

#define ATL_K_SET_2D8_P CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h
#define ATL_K_SET_2D8_A dst, pitch, v, w, h
#define ATL_K_SET_2D8_BIT ATL_ON_MEMSET
#define ATL_K_SET_2D8_PRE                                                                          \
    ATL_SET_EVENT(.dst = dst, .value = v, .elem = 1, .count = w, .pitch = pitch, .height = h)
#define ATL_K_SET_2D8_POST ATL_SET_POST
#define ATL_K_SET_2D16_P CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h
#define ATL_K_SET_2D16_A dst, pitch, v, w, h
#define ATL_K_SET_2D16_BIT ATL_ON_MEMSET
#define ATL_K_SET_2D16_PRE                                                                         \
    ATL_SET_EVENT(.dst = dst, .value = v, .elem = 2, .count = w, .pitch = pitch, .height = h)
#define ATL_K_SET_2D16_POST ATL_SET_POST
#define ATL_K_SET_2D32_P CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h
#define ATL_K_SET_2D32_A dst, pitch, v, w, h
#define ATL_K_SET_2D32_BIT ATL_ON_MEMSET
#define ATL_K_SET_2D32_PRE                                                                         \
    ATL_SET_EVENT(.dst = dst, .value = v, .elem = 4, .count = w, .pitch = pitch, .height = h)
#define ATL_K_SET_2D32_POST ATL_SET_POST

#define ATL_K_SET_2D8_A_P                                                                          \
    CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream hStream
#define ATL_K_SET_2D8_A_A dst, pitch, v, w, h, hStream
#define ATL_K_SET_2D8_A_BIT ATL_ON_MEMSET
#define ATL_K_SET_2D8_A_PRE                                                                        \
    ATL_SET_EVENT(.async = 1, .dst = dst, .value = v, .elem = 1, .count = w, .pitch = pitch,       \
                  .height = h, .stream = hStream)
#define ATL_K_SET_2D8_A_POST ATL_SET_POST
#define ATL_K_SET_2D16_A_P                                                                         \
    CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream hStream
#define ATL_K_SET_2D16_A_A dst, pitch, v, w, h, hStream
#define ATL_K_SET_2D16_A_BIT ATL_ON_MEMSET
#define ATL_K_SET_2D16_A_PRE                                                                       \
    ATL_SET_EVENT(.async = 1, .dst = dst, .value = v, .elem = 2, .count = w, .pitch = pitch,       \
                  .height = h, .stream = hStream)
#define ATL_K_SET_2D16_A_POST ATL_SET_POST
#define ATL_K_SET_2D32_A_P                                                                         \
    CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream hStream
#define ATL_K_SET_2D32_A_A dst, pitch, v, w, h, hStream
#define ATL_K_SET_2D32_A_BIT ATL_ON_MEMSET
#define ATL_K_SET_2D32_A_PRE                                                                       \
    ATL_SET_EVENT(.async = 1, .dst = dst, .value = v, .elem = 4, .count = w, .pitch = pitch,       \
                  .height = h, .stream = hStream)
#define ATL_K_SET_2D32_A_POST ATL_SET_POST

/* ---- host synchronisation ---- */
#define ATL_K_SYNC_CTX_P void
#define ATL_K_SYNC_CTX_A
#define ATL_K_SYNC_CTX_BIT ATL_ON_SYNC
#define ATL_K_SYNC_CTX_PRE                                                                         \
    struct atl_sync ev_ = {                                                                        \
        .hook = id_, .kind = ATL_SYNC_CTX, .caller = __builtin_return_address(0)};                 \
    atl_sync_pre(&ev_);
#define ATL_K_SYNC_CTX_POST r_ = atl_sync_post(&ev_, r_);

#define ATL_K_SYNC_CTX2_P CUcontext ctx
#define ATL_K_SYNC_CTX2_A ctx
#define ATL_K_SYNC_CTX2_BIT ATL_ON_SYNC
#define ATL_K_SYNC_CTX2_PRE                                                                        \
    struct atl_sync ev_ = {                                                                        \
        .hook = id_, .kind = ATL_SYNC_CTX, .ctx = ctx, .caller = __builtin_return_address(0)};     \
    atl_sync_pre(&ev_);
#define ATL_K_SYNC_CTX2_POST r_ = atl_sync_post(&ev_, r_);

#define ATL_K_SYNC_STREAM_P CUstream hStream
#define ATL_K_SYNC_STREAM_A hStream
#define ATL_K_SYNC_STREAM_BIT ATL_ON_SYNC
#define ATL_K_SYNC_STREAM_PRE                                                                      \
    struct atl_sync ev_ = {.hook = id_,                                                            \
                           .kind = ATL_SYNC_STREAM,                                                \
                           .stream = hStream,                                                      \
                           .caller = __builtin_return_address(0)};                                 \
    atl_sync_pre(&ev_);
#define ATL_K_SYNC_STREAM_POST r_ = atl_sync_post(&ev_, r_);

#define ATL_K_SYNC_EVENT_P CUevent hEvent
#define ATL_K_SYNC_EVENT_A hEvent
#define ATL_K_SYNC_EVENT_BIT ATL_ON_SYNC
#define ATL_K_SYNC_EVENT_PRE                                                                       \
    struct atl_sync ev_ = {.hook = id_,                                                            \
                           .kind = ATL_SYNC_EVENT,                                                 \
                           .event = hEvent,                                                        \
                           .caller = __builtin_return_address(0)};                                 \
    atl_sync_pre(&ev_);
#define ATL_K_SYNC_EVENT_POST r_ = atl_sync_post(&ev_, r_);

/* ---- stream ordering (ATL_ON_STREAM): records, waits, host functions,
 * queries, stream and event lifetime ---- */
#define ATL_SOP_EVENT(...)                                                                         \
    struct atl_stream_op ev_ = {.hook = id_, .caller = __builtin_return_address(0), __VA_ARGS__};  \
    atl_stream_pre(&ev_);
#define ATL_SOP_POST atl_stream_post(&ev_, r_);

#define ATL_K_STREAM_CREATE_P CUstream *phStream, unsigned int Flags
#define ATL_K_STREAM_CREATE_A phStream, Flags
#define ATL_K_STREAM_CREATE_BIT ATL_ON_STREAM
#define ATL_K_STREAM_CREATE_PRE                                                                    \
    ATL_SOP_EVENT(.kind = ATL_SOP_CREATE, .pstream = phStream, .flags = Flags)
#define ATL_K_STREAM_CREATE_POST ATL_SOP_POST

#define ATL_K_STREAM_CREATE_PRIO_P CUstream *phStream, unsigned int flags, int priority
#define ATL_K_STREAM_CREATE_PRIO_A phStream, flags, priority
#define ATL_K_STREAM_CREATE_PRIO_BIT ATL_ON_STREAM
#define ATL_K_STREAM_CREATE_PRIO_PRE                                                               \
    ATL_SOP_EVENT(.kind = ATL_SOP_CREATE, .pstream = phStream, .flags = flags, .priority = priority)
#define ATL_K_STREAM_CREATE_PRIO_POST ATL_SOP_POST

#define ATL_K_STREAM_DESTROY_P CUstream hStream
#define ATL_K_STREAM_DESTROY_A hStream
#define ATL_K_STREAM_DESTROY_BIT ATL_ON_STREAM
#define ATL_K_STREAM_DESTROY_PRE ATL_SOP_EVENT(.kind = ATL_SOP_DESTROY, .stream = hStream)
#define ATL_K_STREAM_DESTROY_POST ATL_SOP_POST

#define ATL_K_EVENT_RECORD_P CUevent hEvent, CUstream hStream
#define ATL_K_EVENT_RECORD_A hEvent, hStream
#define ATL_K_EVENT_RECORD_BIT ATL_ON_STREAM
#define ATL_K_EVENT_RECORD_PRE                                                                     \
    ATL_SOP_EVENT(.kind = ATL_SOP_RECORD, .event = hEvent, .stream = hStream)
#define ATL_K_EVENT_RECORD_POST ATL_SOP_POST

#define ATL_K_EVENT_RECORD_F_P CUevent hEvent, CUstream hStream, unsigned int flags
#define ATL_K_EVENT_RECORD_F_A hEvent, hStream, flags
#define ATL_K_EVENT_RECORD_F_BIT ATL_ON_STREAM
#define ATL_K_EVENT_RECORD_F_PRE                                                                   \
    ATL_SOP_EVENT(.kind = ATL_SOP_RECORD, .event = hEvent, .stream = hStream, .flags = flags)
#define ATL_K_EVENT_RECORD_F_POST ATL_SOP_POST

#define ATL_K_STREAM_WAIT_P CUstream hStream, CUevent hEvent, unsigned int Flags
#define ATL_K_STREAM_WAIT_A hStream, hEvent, Flags
#define ATL_K_STREAM_WAIT_BIT ATL_ON_STREAM
#define ATL_K_STREAM_WAIT_PRE                                                                      \
    ATL_SOP_EVENT(.kind = ATL_SOP_WAIT, .stream = hStream, .event = hEvent, .flags = Flags)
#define ATL_K_STREAM_WAIT_POST ATL_SOP_POST

/* The host function and callback may be replaced by the feature's own
 * (struct atl_stream_op): the driver gets what pre left in the event. */
#define ATL_K_HOST_FN_P CUstream hStream, CUhostFn fn, void *userData
#define ATL_K_HOST_FN_A hStream, fn, userData
#define ATL_K_HOST_FN_BIT ATL_ON_STREAM
#define ATL_K_HOST_FN_PRE                                                                          \
    ATL_SOP_EVENT(.kind = ATL_SOP_HOST_FN, .stream = hStream, .fn = fn, .data = userData)          \
    fn = ev_.fn;                                                                                   \
    userData = ev_.data;
#define ATL_K_HOST_FN_POST ATL_SOP_POST

#define ATL_K_STREAM_CB_P                                                                          \
    CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags
#define ATL_K_STREAM_CB_A hStream, callback, userData, flags
#define ATL_K_STREAM_CB_BIT ATL_ON_STREAM
#define ATL_K_STREAM_CB_PRE                                                                        \
    ATL_SOP_EVENT(.kind = ATL_SOP_CALLBACK, .stream = hStream, .cb = callback, .data = userData,   \
                  .flags = flags)                                                                  \
    callback = ev_.cb;                                                                             \
    userData = ev_.data;
#define ATL_K_STREAM_CB_POST ATL_SOP_POST

#define ATL_K_STREAM_QUERY_P CUstream hStream
#define ATL_K_STREAM_QUERY_A hStream
#define ATL_K_STREAM_QUERY_BIT ATL_ON_STREAM
#define ATL_K_STREAM_QUERY_PRE ATL_SOP_EVENT(.kind = ATL_SOP_QUERY_STREAM, .stream = hStream)
#define ATL_K_STREAM_QUERY_POST ATL_SOP_POST

#define ATL_K_EVENT_QUERY_P CUevent hEvent
#define ATL_K_EVENT_QUERY_A hEvent
#define ATL_K_EVENT_QUERY_BIT ATL_ON_STREAM
#define ATL_K_EVENT_QUERY_PRE ATL_SOP_EVENT(.kind = ATL_SOP_QUERY_EVENT, .event = hEvent)
#define ATL_K_EVENT_QUERY_POST ATL_SOP_POST

#define ATL_K_EVENT_DESTROY_P CUevent hEvent
#define ATL_K_EVENT_DESTROY_A hEvent
#define ATL_K_EVENT_DESTROY_BIT ATL_ON_STREAM
#define ATL_K_EVENT_DESTROY_PRE ATL_SOP_EVENT(.kind = ATL_SOP_EVENT_DESTROY, .event = hEvent)
#define ATL_K_EVENT_DESTROY_POST ATL_SOP_POST

#define ATL_K_GRAPH_DESTROY_P CUgraph hGraph
#define ATL_K_GRAPH_DESTROY_A hGraph
#define ATL_K_GRAPH_DESTROY_BIT ATL_ON_STREAM
#define ATL_K_GRAPH_DESTROY_PRE ATL_SOP_EVENT(.kind = ATL_SOP_GRAPH_DESTROY, .graph = hGraph)
#define ATL_K_GRAPH_DESTROY_POST ATL_SOP_POST

#define ATL_K_GRAPH_EXEC_DESTROY_P CUgraphExec hGraphExec
#define ATL_K_GRAPH_EXEC_DESTROY_A hGraphExec
#define ATL_K_GRAPH_EXEC_DESTROY_BIT ATL_ON_STREAM
#define ATL_K_GRAPH_EXEC_DESTROY_PRE                                                               \
    ATL_SOP_EVENT(.kind = ATL_SOP_EXEC_DESTROY, .exec = hGraphExec)
#define ATL_K_GRAPH_EXEC_DESTROY_POST ATL_SOP_POST

/* ---- lookups ---- */
#define ATL_K_GET_FUNCTION_P CUfunction *hfunc, CUmodule hmod, const char *name
#define ATL_K_GET_FUNCTION_A hfunc, hmod, name
#define ATL_K_GET_FUNCTION_BIT ATL_ON_LOOKUP
#define ATL_K_GET_FUNCTION_PRE
#define ATL_K_GET_FUNCTION_POST                                                                    \
    struct atl_lookup ev_ = {.hook = id_,                                                          \
                             .kind = ATL_LOOKUP_MODULE_FUNCTION,                                   \
                             .owner = hmod,                                                        \
                             .name = name,                                                         \
                             .result = (r_ == CUDA_SUCCESS && hfunc) ? (void *)*hfunc : NULL};     \
    atl_lookup_post(&ev_, r_);

#define ATL_K_GET_KERNEL_P CUkernel *pKernel, CUlibrary library, const char *name
#define ATL_K_GET_KERNEL_A pKernel, library, name
#define ATL_K_GET_KERNEL_BIT ATL_ON_LOOKUP
#define ATL_K_GET_KERNEL_PRE
#define ATL_K_GET_KERNEL_POST                                                                      \
    struct atl_lookup ev_ = {.hook = id_,                                                          \
                             .kind = ATL_LOOKUP_LIBRARY_KERNEL,                                    \
                             .owner = library,                                                     \
                             .name = name,                                                         \
                             .result = (r_ == CUDA_SUCCESS && pKernel) ? (void *)*pKernel : NULL}; \
    atl_lookup_post(&ev_, r_);

#define ATL_K_KERNEL_FUNC_P CUfunction *pFunc, CUkernel kernel
#define ATL_K_KERNEL_FUNC_A pFunc, kernel
#define ATL_K_KERNEL_FUNC_BIT ATL_ON_LOOKUP
#define ATL_K_KERNEL_FUNC_PRE
#define ATL_K_KERNEL_FUNC_POST                                                                     \
    struct atl_lookup ev_ = {.hook = id_,                                                          \
                             .kind = ATL_LOOKUP_KERNEL_FUNCTION,                                   \
                             .owner = kernel,                                                      \
                             .result = (r_ == CUDA_SUCCESS && pFunc) ? (void *)*pFunc : NULL};     \
    atl_lookup_post(&ev_, r_);

/* ---- modules and libraries ---- */
#define ATL_MOD_EVENT(...)                                                                         \
    struct atl_module ev_ = {.hook = id_, __VA_ARGS__};                                            \
    atl_module_pre(&ev_);

#define ATL_K_MOD_LOAD_P CUmodule *module, const char *fname
#define ATL_K_MOD_LOAD_A module, fname
#define ATL_K_MOD_LOAD_BIT ATL_ON_MODULE
#define ATL_K_MOD_LOAD_PRE ATL_MOD_EVENT(.file = fname)
#define ATL_K_MOD_LOAD_POST                                                                        \
    ev_.handle = (r_ == CUDA_SUCCESS && module) ? (void *)*module : NULL;                          \
    atl_module_post(&ev_, r_);

#define ATL_K_MOD_LOAD_DATA_P CUmodule *module, const void *image
#define ATL_K_MOD_LOAD_DATA_A module, image
#define ATL_K_MOD_LOAD_DATA_BIT ATL_ON_MODULE
#define ATL_K_MOD_LOAD_DATA_PRE ATL_MOD_EVENT(.file = NULL)
#define ATL_K_MOD_LOAD_DATA_POST ATL_K_MOD_LOAD_POST

#define ATL_K_MOD_LOAD_EX_P                                                                        \
    CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,           \
        void **optionValues
#define ATL_K_MOD_LOAD_EX_A module, image, numOptions, options, optionValues
#define ATL_K_MOD_LOAD_EX_BIT ATL_ON_MODULE
#define ATL_K_MOD_LOAD_EX_PRE ATL_MOD_EVENT(.file = NULL)
#define ATL_K_MOD_LOAD_EX_POST ATL_K_MOD_LOAD_POST

#define ATL_K_MOD_UNLOAD_P CUmodule hmod
#define ATL_K_MOD_UNLOAD_A hmod
#define ATL_K_MOD_UNLOAD_BIT ATL_ON_MODULE
#define ATL_K_MOD_UNLOAD_PRE ATL_MOD_EVENT(.unload = 1, .handle = hmod)
#define ATL_K_MOD_UNLOAD_POST atl_module_post(&ev_, r_);

#define ATL_K_LIB_LOAD_DATA_P                                                                      \
    CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,       \
        unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,   \
        unsigned int numLibraryOptions
#define ATL_K_LIB_LOAD_DATA_A                                                                      \
    library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,                    \
        libraryOptionValues, numLibraryOptions
#define ATL_K_LIB_LOAD_DATA_BIT ATL_ON_MODULE
#define ATL_K_LIB_LOAD_DATA_PRE ATL_MOD_EVENT(.library = 1)
#define ATL_K_LIB_LOAD_DATA_POST                                                                   \
    ev_.handle = (r_ == CUDA_SUCCESS && library) ? (void *)*library : NULL;                        \
    atl_module_post(&ev_, r_);

#define ATL_K_LIB_LOAD_FILE_P                                                                      \
    CUlibrary *library, const char *fileName, CUjit_option *jitOptions, void **jitOptionsValues,   \
        unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,   \
        unsigned int numLibraryOptions
#define ATL_K_LIB_LOAD_FILE_A                                                                      \
    library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,                \
        libraryOptionValues, numLibraryOptions
#define ATL_K_LIB_LOAD_FILE_BIT ATL_ON_MODULE
#define ATL_K_LIB_LOAD_FILE_PRE ATL_MOD_EVENT(.library = 1, .file = fileName)
#define ATL_K_LIB_LOAD_FILE_POST ATL_K_LIB_LOAD_DATA_POST

#define ATL_K_LIB_UNLOAD_P CUlibrary library
#define ATL_K_LIB_UNLOAD_A library
#define ATL_K_LIB_UNLOAD_BIT ATL_ON_MODULE
#define ATL_K_LIB_UNLOAD_PRE ATL_MOD_EVENT(.library = 1, .unload = 1, .handle = library)
#define ATL_K_LIB_UNLOAD_POST atl_module_post(&ev_, r_);

/* ---- context teardown ---- */
#define ATL_K_CTX_DESTROY_P CUcontext ctx
#define ATL_K_CTX_DESTROY_A ctx
#define ATL_K_CTX_DESTROY_BIT ATL_ON_CTX
#define ATL_K_CTX_DESTROY_PRE                                                                      \
    struct atl_ctx_teardown ev_ = {.hook = id_, .ctx = ctx};                                       \
    atl_ctx_teardown_pre(&ev_);
#define ATL_K_CTX_DESTROY_POST

#define ATL_K_PCTX_RELEASE_P CUdevice dev
#define ATL_K_PCTX_RELEASE_A dev
#define ATL_K_PCTX_RELEASE_BIT ATL_ON_CTX
#define ATL_K_PCTX_RELEASE_PRE                                                                     \
    struct atl_ctx_teardown ev_ = {.hook = id_, .dev = dev};                                       \
    atl_ctx_teardown_pre(&ev_);
#define ATL_K_PCTX_RELEASE_POST

/* ---- the light path ----
 * The rows ATL_HOOK_LIGHT(sym, KIND, FLAGS, LIGHT) of hooks.def have one:
 * while the engine does not want the call (the kind's BIT clear) and the
 * light path's bit of atl_on is set, hooks.c's mid_ runs it instead of the
 * engine, then calls the driver. These are functions, so that a debugger
 * steps into them, and static inline, so that the hook keeps the arguments
 * in their registers and ends in a tail call (the cost make cpu-bench
 * measures).
 *
 * RING (the flight recorder's ring of launches, src/ring.h), per KIND:
 *   atl_light_ready_KIND   1 when the launch can go to the ring at once;
 *                          0 sends it through hooks.c's cold named_, which
 *                          records it, then calls atl_light_first_KIND with
 *                          its number (a kernel the recorder's table lacks,
 *                          or its first launch in the recorder's epoch)
 *   atl_light_record_KIND  writes the launch's ring slot; its number
 * On x86-64, cuLaunchKernel and the cooperative launch take the same steps in
 * assembly (hooks.c, ATL_K_KIND_ASM_MID).
 *
 * DTOH: atl_light_dtoh below. */
static inline int atl_light_ready_LAUNCH(ATL_K_LAUNCH_P)
{
    return atl_ring_ready(f);
}
static inline void atl_light_first_LAUNCH(uint64_t seq, ATL_K_LAUNCH_P)
{
    atl_ring_first(f, kp, extra, seq);
}
static inline uint64_t atl_light_record_LAUNCH(int id, ATL_K_LAUNCH_P)
{
    return atl_ring_put(id, f, hStream, gx, gy, gz, bx, by, bz, shmem);
}

static inline int atl_light_ready_LAUNCH_COOP(ATL_K_LAUNCH_COOP_P)
{
    return atl_ring_ready(f);
}
static inline void atl_light_first_LAUNCH_COOP(uint64_t seq, ATL_K_LAUNCH_COOP_P)
{
    atl_ring_first(f, kp, NULL, seq);
}
static inline uint64_t atl_light_record_LAUNCH_COOP(int id, ATL_K_LAUNCH_COOP_P)
{
    return atl_ring_put(id, f, hStream, gx, gy, gz, bx, by, bz, shmem);
}

static inline int atl_light_ready_LAUNCH_EX(ATL_K_LAUNCH_EX_P)
{
    return atl_ring_ready(f);
}
static inline void atl_light_first_LAUNCH_EX(uint64_t seq, ATL_K_LAUNCH_EX_P)
{
    atl_ring_first(f, kp, extra, seq);
}
static inline uint64_t atl_light_record_LAUNCH_EX(int id, ATL_K_LAUNCH_EX_P)
{
    if (!config)
        return 0;
    return atl_ring_put(id, f, config->hStream, config->gridDimX, config->gridDimY,
                        config->gridDimZ, config->blockDimX, config->blockDimY, config->blockDimZ,
                        config->sharedMemBytes);
}

/* A graph launch names no kernel: its slot is recorded as it comes. */
static inline int atl_light_ready_GRAPH_LAUNCH(ATL_K_GRAPH_LAUNCH_P)
{
    return 1;
}
static inline void atl_light_first_GRAPH_LAUNCH(uint64_t seq, ATL_K_GRAPH_LAUNCH_P)
{
    (void)seq;
}
static inline uint64_t atl_light_record_GRAPH_LAUNCH(int id, ATL_K_GRAPH_LAUNCH_P)
{
    return atl_ring_put(id | ATL_RING_GRAPH, hExec, hStream, 0, 0, 0, 0, 0, 0, 0);
}

/* DTOH: a synchronous device-to-host copy always blocks: counted after the
 * real call, no event, no engine (the light path's bit is the blocking
 * feature's: it alone asks for it); a failure goes to the engine's latch. */
static inline CUresult atl_light_dtoh(int id, CUresult(CUDAAPI *real)(ATL_K_CPY_DTOH_P),
                                      ATL_K_CPY_DTOH_P)
{
    CUresult r = real(dst, src, n);
    if (__builtin_expect(r == CUDA_SUCCESS, 1))
        atl_blocking_dtoh_count(n);
    else
        atl_dtoh_failed(id, r);
    return r;
}

#endif
