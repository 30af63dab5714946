/*
 * The red-zone checking kernels. Built to PTX at build time (mk/redzone.mk)
 * and embedded in libatlastrace.so; loaded lazily through the real driver.
 * Their argument structs are in redzone_gpu.h, shared with the engine and
 * with the fake driver's host twin of these kernels (tests/fake/
 * fake_redzone.c), which must answer exactly as they do.
 *
 * The full check, one pass over every live zone: block z takes zone z (grid-stride over
 * zones), its threads compare the zone's bytes with the fill byte, and
 * thread 0 writes the zone's count of wrong bytes and the first and last
 * wrong offset into `out`. `out` is page-locked host memory mapped into
 * the device, so the host reads the answer after one stream sync, with no
 * copy call at all. The zone table sits in the same kind of memory. No
 * atomics touch host memory (they need PCIe atomics, which not every
 * platform has): the shared-memory counters are per block, and the host
 * looks at every zone's result.
 */
#include "redzone_gpu.h"

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
        const unsigned char *p = (const unsigned char *)zones[z].ptr;
        unsigned long long len = zones[z].len;
        unsigned char fill = (unsigned char)zones[z].fill;
        for (unsigned long long i = threadIdx.x; i < len; i += blockDim.x) {
            if (p[i] != fill) {
                atomicAdd(&bad, 1u);
                atomicMin(&first, (unsigned int)i);
                atomicMax(&last, (unsigned int)i);
            }
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

/*
 * The queued check: one block, queued on a stream (right after a launch,
 * for the zones the launch's parameters reach; right before a free, for the
 * zone freed) and never waited for. `zones` is the list in its own slot.
 * It writes a compact verdict into the slot, in mapped host memory: how
 * many zones are corrupted and the first four of them; `done` is written
 * last (after a system-wide fence), so the host reads a slot only once it
 * is complete. A warp takes a zone at a time, its lanes stride over the
 * bytes and the counts are combined with shuffles: no block-wide barrier
 * per zone. The zone list comes by value, in the kernel's parameters, and
 * a clean check writes only `done`: no read across the bus and no fence.
 */
extern "C" __global__ void atl_redzone_check_launch(const atl_rz_list zones, unsigned int n,
                                                    atl_rz_slot *slot, unsigned long long ticket)
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
    __shared__ unsigned int nbad;
    __shared__ atl_rz_result rec[ATL_RZ_RECS];
    if (threadIdx.x == 0)
        nbad = 0;
    __syncthreads();
    unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (unsigned int z = warp; z < n; z += nwarps) {
        const unsigned char *p = (const unsigned char *)zones.z[z].ptr;
        unsigned long long len = zones.z[z].len;
        unsigned char fill = (unsigned char)zones.z[z].fill;
        unsigned int bad = 0, first = 0xffffffffu, last = 0;
        for (unsigned long long i = lane; i < len; i += 32) {
            if (p[i] != fill) {
                bad++;
                if ((unsigned int)i < first)
                    first = (unsigned int)i;
                last = (unsigned int)i;
            }
        }
        for (int off = 16; off > 0; off >>= 1) {
            bad += __shfl_down_sync(0xffffffffu, bad, off);
            first = min(first, __shfl_down_sync(0xffffffffu, first, off));
            last = max(last, __shfl_down_sync(0xffffffffu, last, off));
        }
        if (lane == 0 && bad) {
            unsigned int k = atomicAdd(&nbad, 1u);
            if (k < ATL_RZ_RECS) {
                rec[k].bad = bad;
                rec[k].first = first;
                rec[k].last = last;
                rec[k].zone = z;
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (nbad) {
            slot->nbad = nbad;
            for (unsigned int k = 0; k < ATL_RZ_RECS && k < nbad; k++)
                slot->rec[k] = rec[k];
            __threadfence_system();
        }
        *(volatile unsigned long long *)&slot->done = ticket;
    }
}
