/*
 * The red-zone checking kernel. Built to PTX at build time (mk/redzone.mk)
 * and embedded in libatlastrace.so; loaded lazily through the real driver.
 *
 * One pass over every live zone: block z takes zone z (grid-stride over
 * zones), its threads compare the zone's bytes with the fill byte, and
 * thread 0 writes the zone's count of wrong bytes and the first and last
 * wrong offset into `out`. `out` is page-locked host memory mapped into
 * the device, so the host reads the answer after one stream sync, with no
 * copy call at all. The zone table sits in the same kind of memory. No
 * atomics touch host memory (they need PCIe atomics, which not every
 * platform has): the shared-memory counters are per block, and the host
 * looks at every zone's result.
 */
struct atl_zone {
    unsigned long long ptr; /* first byte of the zone (base + bytes asked) */
    unsigned long long len;
    unsigned int fill;
    unsigned int pad_;
};

struct atl_zone_result {
    unsigned int bad;   /* bytes that differ from the fill */
    unsigned int first; /* offset of the first, from the zone start */
    unsigned int last;
    unsigned int pad_;
};

extern "C" __global__ void atl_redzone_scan(const atl_zone *zones, unsigned int n,
                                            atl_zone_result *out)
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
