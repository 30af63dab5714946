/*
 * The launch history (fault.h): launch numbers, the ring, the one query, the
 * sticky-fault latch. Calls nothing but the log: the flight recorder, red
 * zones and debug sync build on it.
 */
#include "fault.h"

#include "kernels.h" /* the empty kernel table atl_fl starts with */
#include "log.h"

#include <stdlib.h>
#include <string.h>

/* Before atl_fault_init (and with the ring off, for the engine's launch
 * path under debug sync): a small ring, so a put never needs a test. */
#define RING_MIN 64
#define RING_DEFAULT 4096
#define RING_MAX (1u << 22)
static struct atl_ring_ent ring_small[RING_MIN] __attribute__((aligned(64)));
/* The kernel table (src/ring.h) before its first kernel: a header and one
 * empty entry, so a probe ends at once (and a launch takes the cold path,
 * which makes the first real table). */
static struct atl_ktab_ent ktab_empty[2];
_Static_assert(sizeof(struct atl_ktab) == sizeof(struct atl_ktab_ent), "header, then e[0]");

struct atl_flight atl_fl = {
    .ring = ring_small, .mask = RING_MIN - 1, .ktab = (struct atl_ktab *)ktab_empty, .epoch = 1};
struct atl_launch_counter atl_launch_seq = {.next = 1};

static int ring_on = 1;

void atl_fault_init(unsigned long long ring)
{
    if (ring == 0) {
        ring_on = 0;
        return;
    }
    if (ring == 1) /* the setting was a boolean once: 1 means on, the default size */
        ring = RING_DEFAULT;
    unsigned long long n = RING_MIN;
    while (n < ring && n < RING_MAX)
        n <<= 1;
    void *p = NULL;
    if (posix_memalign(&p, 64, n * sizeof(struct atl_ring_ent)) != 0) {
        atl_log_once_oom("the launch ring (keeping 64 launches)");
        return;
    }
    memset(p, 0, n * sizeof(struct atl_ring_ent));
    /* Init runs before the hooks' light path is switched on; still, the
     * larger ring goes in before its mask, so a launch that read one with
     * the other stays inside the ring it writes. */
    __atomic_store_n(&atl_fl.ring, (struct atl_ring_ent *)p, __ATOMIC_RELEASE);
    __atomic_store_n(&atl_fl.mask, n - 1, __ATOMIC_RELEASE);
}

int atl_fault_ring_on(void)
{
    return ring_on;
}

uint64_t atl_fault_ring_slots(void)
{
    return __atomic_load_n(&atl_fl.mask, __ATOMIC_ACQUIRE) + 1;
}

uint64_t atl_fault_last_launch(void)
{
    return __atomic_load_n(&atl_launch_seq.next, __ATOMIC_ACQUIRE) - 1;
}

#define RLD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* Copies launch s out of the ring; 0 when its slot holds another by now. */
static int ring_get(uint64_t s, struct atl_ring_ent *dst)
{
    struct atl_ring_ent *src = &atl_fl.ring[s & atl_fl.mask];
    if (__atomic_load_n(&src->seq, __ATOMIC_ACQUIRE) != s)
        return 0;
    dst->obj = RLD(src->obj);
    dst->stream = RLD(src->stream);
    for (int i = 0; i < 3; i++) {
        dst->grid[i] = RLD(src->grid[i]);
        dst->block[i] = RLD(src->block[i]);
    }
    dst->shmem = RLD(src->shmem);
    dst->hook = RLD(src->hook);
    dst->seq = s;
    return __atomic_load_n(&src->seq, __ATOMIC_ACQUIRE) == s;
}

uint64_t atl_fault_launches_since(uint64_t since, uint64_t upto, uint64_t newest,
                                  void (*fn)(const struct atl_ring_ent *e, void *ctx), void *ctx)
{
    if (upto <= since)
        return 0;
    uint64_t size = atl_fault_ring_slots();
    uint64_t kept_from = upto >= size ? upto - size + 1 : 1;
    uint64_t lost = kept_from > since + 1 ? kept_from - (since + 1) : 0;
    uint64_t start = since + 1 + lost;
    if (newest && upto - start + 1 > newest)
        start = upto - newest + 1;
    for (uint64_t s = start; s <= upto; s++) {
        struct atl_ring_ent e;
        if (ring_get(s, &e))
            fn(&e, ctx);
    }
    return lost;
}

int atl_fault_is_sticky(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
        return 1;
    default:
        return 0;
    }
}

static int latched;

int atl_fault_latch(CUresult r)
{
    if (__builtin_expect(!atl_fault_is_sticky(r), 1))
        return 0;
    return !__atomic_exchange_n(&latched, 1, __ATOMIC_ACQ_REL);
}
