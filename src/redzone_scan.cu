/*
 * The red-zone checking kernels. Built to PTX at build time (mk/redzone.mk)
 * and embedded in libatlastrace.so; loaded lazily through the real driver.
 * Their argument structs are in redzone_gpu.h, shared with the engine and
 * with the fake driver's host twin of these kernels (tests/fake/
 * fake_redzone.c), which must answer exactly as they do.
 *
 * A range is read (or filled) 16 bytes at a time where it is aligned: a
 * freed allocation in the quarantine is checked whole, and byte loads held
 * a block to a small fraction of the memory's bandwidth.
 */
#include "redzone_gpu.h"

/* The bytes of [p, p+len) that differ from `fill`, over the threads
 * t = 0..nt-1 (each adds its share into bad/first/last; offsets from p). */
__device__ static void range_check(const unsigned char *p, unsigned long long len,
                                   unsigned char fill, unsigned long long t,
                                   unsigned long long nt, unsigned int &bad, unsigned int &first,
                                   unsigned int &last)
{
    unsigned long long head = (16 - ((unsigned long long)p & 15)) & 15;
    if (head > len)
        head = len;
    unsigned long long units = (len - head) / 16;
    unsigned int w = fill * 0x01010101u;
    const uint4 *v = (const uint4 *)(p + head);
    /* the bytes before the first aligned one, the aligned units, the rest */
    for (unsigned long long i = t; i < head; i += nt) {
        if (p[i] != fill) {
            bad++;
            first = min(first, (unsigned int)i);
            last = max(last, (unsigned int)i);
        }
    }
    for (unsigned long long u = t; u < units; u += nt) {
        uint4 x = v[u];
        if (x.x == w && x.y == w && x.z == w && x.w == w)
            continue;
        for (unsigned int b = 0; b < 16; b++) {
            unsigned long long i = head + u * 16 + b;
            if (p[i] != fill) {
                bad++;
                first = min(first, (unsigned int)i);
                last = max(last, (unsigned int)i);
            }
        }
    }
    for (unsigned long long i = head + units * 16 + t; i < len; i += nt) {
        if (p[i] != fill) {
            bad++;
            first = min(first, (unsigned int)i);
            last = max(last, (unsigned int)i);
        }
    }
}

/* Fills [p, p+len) with `fill` over the threads t = 0..nt-1. */
__device__ static void range_fill(unsigned char *p, unsigned long long len, unsigned char fill,
                                  unsigned long long t, unsigned long long nt)
{
    unsigned long long head = (16 - ((unsigned long long)p & 15)) & 15;
    if (head > len)
        head = len;
    unsigned long long units = (len - head) / 16;
    unsigned int w = fill * 0x01010101u;
    for (unsigned long long i = t; i < head; i += nt)
        p[i] = fill;
    uint4 *v = (uint4 *)(p + head);
    for (unsigned long long u = t; u < units; u += nt)
        v[u] = make_uint4(w, w, w, w);
    for (unsigned long long i = head + units * 16 + t; i < len; i += nt)
        p[i] = fill;
}

/* A warp's counts, combined into lane 0's. */
__device__ static void warp_sum(unsigned int &bad, unsigned int &first, unsigned int &last)
{
    for (int off = 16; off > 0; off >>= 1) {
        bad += __shfl_down_sync(0xffffffffu, bad, off);
        first = min(first, __shfl_down_sync(0xffffffffu, first, off));
        last = max(last, __shfl_down_sync(0xffffffffu, last, off));
    }
}

/*
 * The full check, one pass over every zone in a table: block z takes entry
 * z (grid-stride over entries), its threads compare the entry's bytes with
 * the fill byte, and thread 0 writes the entry's count of wrong bytes and
 * the first and last wrong offset into `out`. The host cuts a long zone into
 * several entries (a freed allocation in the quarantine) and adds their
 * answers up. `out` is page-locked host memory mapped into the device, so
 * the host reads the answer after one stream sync, with no copy call at
 * all. The zone table sits in the same kind of memory. No atomics touch
 * host memory (they need PCIe atomics, which not every platform has): the
 * shared-memory counters are per block, and the host looks at every entry.
 */
extern "C" __global__ void atl_redzone_scan(const atl_rz_zone *zones, unsigned int n,
                                            atl_rz_result *out)
{
    __shared__ unsigned int bad, first, last;
    for (unsigned int z = blockIdx.x; z < n; z += gridDim.x) {
        if (threadIdx.x == 0) {
            bad = 0;
            first = 0xffffffffu;
            last = 0;
        }
        __syncthreads();
        unsigned int b = 0, f = 0xffffffffu, l = 0;
        range_check((const unsigned char *)zones[z].ptr, zones[z].len,
                    (unsigned char)zones[z].fill, threadIdx.x, blockDim.x, b, f, l);
        warp_sum(b, f, l);
        if ((threadIdx.x & 31u) == 0 && b) {
            atomicAdd(&bad, b);
            atomicMin(&first, f);
            atomicMax(&last, l);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            out[z].bad = bad;
            out[z].first = first;
            out[z].last = last;
        }
        __syncthreads();
    }
}

/* The verdict of a check into its slot: nbad and the first ATL_RZ_RECS
 * corrupted zones only when there are any (then a system-wide fence), and
 * in every case, last, `done`. */
__device__ static void slot_write(atl_rz_slot *slot, unsigned long long ticket, unsigned int n,
                                  const unsigned int *bad, const unsigned int *first,
                                  const unsigned int *last)
{
    unsigned int nbad = 0;
    for (unsigned int z = 0; z < n; z++) {
        if (!bad[z])
            continue;
        if (nbad < ATL_RZ_RECS) {
            slot->rec[nbad].bad = bad[z];
            slot->rec[nbad].first = first[z];
            slot->rec[nbad].last = last[z];
            slot->rec[nbad].zone = z;
        }
        nbad++;
    }
    if (nbad) {
        slot->nbad = nbad;
        __threadfence_system();
    }
    *(volatile unsigned long long *)&slot->done = ticket;
}

/*
 * The queued check, queued on a stream (right after a launch, for the zones
 * the launch's parameters reach; right before a free, for the zone freed,
 * and then filling the freed body; when a freed allocation leaves the
 * quarantine, for all of it) and never waited for. `list` holds its zones
 * and fills, in its own slot. Every thread takes a share of every zone and
 * of every fill. One block writes its verdict into the slot, in mapped host
 * memory; with several blocks (the host asks for more when there are many
 * bytes) each adds its counts into `merge` in device memory and the last
 * block writes the slot. A clean check writes only `done`: no read across
 * the bus and no fence.
 */
extern "C" __global__ void atl_redzone_check_launch(const atl_rz_list list, unsigned int n,
                                                    unsigned int nfill, unsigned int fill,
                                                    atl_rz_slot *slot, unsigned long long ticket,
                                                    atl_rz_merge *merge)
{
#ifdef ATL_RZ_PDL
    /* Built for sm_90 and up (mk/redzone.mk), where the engine queues every
     * check as a programmatic dependent launch, whose enqueue costs the host
     * less than a plain launch's. The driver may then start this grid before
     * the kernel ahead of it in the stream has finished: this waits until
     * that grid has completed and its writes are visible, before any zone is
     * read. Behind an operation that is not a kernel (a copy before a free),
     * or queued without the attribute, it returns at once. */
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    __shared__ unsigned int bad[ATL_RZ_SLOT_ZONES], first[ATL_RZ_SLOT_ZONES],
        last[ATL_RZ_SLOT_ZONES];
    if (threadIdx.x < ATL_RZ_SLOT_ZONES) {
        bad[threadIdx.x] = 0;
        first[threadIdx.x] = 0xffffffffu;
        last[threadIdx.x] = 0;
    }
    __syncthreads();
    unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long nt = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned int z = 0; z < n && z < ATL_RZ_SLOT_ZONES; z++) {
        unsigned int b = 0, f = 0xffffffffu, l = 0;
        range_check((const unsigned char *)list.z[z].ptr, list.z[z].len,
                    (unsigned char)list.z[z].fill, t, nt, b, f, l);
        warp_sum(b, f, l);
        if ((threadIdx.x & 31u) == 0 && b) {
            atomicAdd(&bad[z], b);
            atomicMin(&first[z], f);
            atomicMax(&last[z], l);
        }
    }
    for (unsigned int k = 0; k < nfill && k < ATL_RZ_SLOT_FILLS; k++)
        range_fill((unsigned char *)list.f[k].ptr, list.f[k].len, (unsigned char)fill, t, nt);
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    if (gridDim.x == 1) {
        slot_write(slot, ticket, n, bad, first, last);
        return;
    }
    for (unsigned int z = 0; z < n && z < ATL_RZ_SLOT_ZONES; z++) {
        if (!bad[z])
            continue;
        atomicAdd(&merge->bad[z], bad[z]);
        atomicMax(&merge->nfirst[z], ~first[z]);
        atomicMax(&merge->last[z], last[z]);
    }
    __threadfence();
    if (atomicAdd(&merge->arrived, 1u) != gridDim.x - 1)
        return;
    __threadfence();
    unsigned int b[ATL_RZ_SLOT_ZONES], f[ATL_RZ_SLOT_ZONES], l[ATL_RZ_SLOT_ZONES];
    for (unsigned int z = 0; z < ATL_RZ_SLOT_ZONES; z++) {
        b[z] = atomicExch(&merge->bad[z], 0u);
        f[z] = ~atomicExch(&merge->nfirst[z], 0u);
        l[z] = atomicExch(&merge->last[z], 0u);
    }
    atomicExch(&merge->arrived, 0u);
    slot_write(slot, ticket, n, b, f, l);
}
