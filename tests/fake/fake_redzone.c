/*
 * The fake driver's twin of atlastrace's red-zone kernels (src/redzone_scan.cu).
 *
 * atlastrace loads its red-zone kernels as PTX text through cuModuleLoadData.
 * The fake cannot run PTX, so when it is handed that text (recognised by its
 * two .entry names) it loads these host functions in its place: the same
 * parameters, the same argument structs (src/redzone_gpu.h, which the .cu
 * includes too), the same answers. The engine's queued, stream-ordered path
 * thus runs in every test. FAKE_REFUSE_PTX=1 in the environment makes the
 * fake refuse the text as it refuses any other (CUDA_ERROR_INVALID_IMAGE), so
 * the engine's copy fallback stays tested too.
 */
#include "fakecuda.h"
#include "redzone_gpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_ulong zones_checked; /* by the queued check, over the process */
static atomic_ulong bytes_filled;  /* by the queued check's fills */

int fake_host_mapped(const void *p, size_t n); /* fake_core.c */

unsigned long fake_redzone_zones_checked(void)
{
    return atomic_load(&zones_checked);
}

unsigned long fake_redzone_bytes_filled(void)
{
    return atomic_load(&bytes_filled);
}

/* One zone's verdict, as both kernels compute it. */
static struct atl_rz_result verdict(const struct atl_rz_zone *z, unsigned idx)
{
    struct atl_rz_result r = {0, 0xffffffffu, 0, idx};
    const unsigned char *p = (const unsigned char *)(uintptr_t)z->ptr;
    for (unsigned long long i = 0; i < z->len; i++) {
        if (p[i] != (unsigned char)z->fill) {
            r.bad++;
            if ((unsigned)i < r.first)
                r.first = (unsigned)i;
            r.last = (unsigned)i;
        }
    }
    return r;
}

/* atl_redzone_scan(const atl_rz_zone *zones, unsigned n, atl_rz_result *out) */
static CUresult k_scan(const struct fake_launch *l, void **params)
{
    const struct atl_rz_zone *zones = (const void *)(uintptr_t) * (CUdeviceptr *)params[0];
    unsigned n = *(unsigned *)params[1];
    struct atl_rz_result *out = (void *)(uintptr_t) * (CUdeviceptr *)params[2];
    (void)l;
    for (unsigned z = 0; z < n; z++) {
        out[z] = verdict(&zones[z], 0);
        out[z].zone = 0; /* the kernel leaves it alone; the host does not read it */
    }
    return CUDA_SUCCESS;
}

/* atl_redzone_check_launch(const atl_rz_list list, unsigned n, unsigned nfill,
 *                          unsigned fill, atl_rz_slot *slot, unsigned long long ticket,
 *                          atl_rz_merge *merge): the lists by value; the zones are checked,
 *                          then the fills made; the grid (and merge) do not change the
 *                          answer */
static CUresult k_check(const struct fake_launch *l, void **params)
{
    const struct atl_rz_list *list = params[0];
    unsigned n = *(unsigned *)params[1];
    unsigned nfill = *(unsigned *)params[2];
    unsigned fill = *(unsigned *)params[3];
    struct atl_rz_slot *slot = (void *)(uintptr_t) * (CUdeviceptr *)params[4];
    unsigned long long ticket = *(unsigned long long *)params[5];
    unsigned nbad = 0;
    /* mapped memory freed meanwhile (with its context, say): a GPU faults */
    if (!fake_host_mapped(slot, sizeof *slot) || n > ATL_RZ_SLOT_ZONES ||
        nfill > ATL_RZ_SLOT_FILLS || (l->grid[0] > 1 && !*(CUdeviceptr *)params[6]))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned z = 0; z < n; z++) {
        struct atl_rz_result r = verdict(&list->z[z], z);
        if (r.bad && nbad < ATL_RZ_RECS)
            slot->rec[nbad] = r;
        nbad += r.bad != 0;
    }
    for (unsigned k = 0; k < nfill; k++)
        memset((void *)(uintptr_t)list->f[k].ptr, (int)(fill & 0xff), list->f[k].len);
    atomic_fetch_add(&zones_checked, n);
    for (unsigned k = 0; k < nfill; k++)
        atomic_fetch_add(&bytes_filled, list->f[k].len);
    /* as the kernel: nbad only when something is corrupted, `done` last */
    if (nbad)
        slot->nbad = nbad;
    __atomic_store_n(&slot->done, ticket, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

static const size_t scan_sizes[] = {8, 4, 8};
static const size_t check_sizes[] = {sizeof(struct atl_rz_list), 4, 4, 4, 8, 8, 8};
static const struct fake_kernel_def twin_kernels[] = {
    {ATL_RZ_SCAN_ENTRY, k_scan, 3, scan_sizes, NULL},
    {ATL_RZ_CHECK_ENTRY, k_check, 7, check_sizes, NULL},
};
static const struct fake_image twin = {FAKE_IMAGE_MAGIC, 2, twin_kernels};

const struct fake_image *fake_redzone_twin(const void *image)
{
    const char *s = image;
    /* a fake image starts with its magic; PTX text (and the entry list a
     * build without nvcc embeds) with a comment */
    if (!s || s[0] != '/' || s[1] != '/')
        return NULL;
    if (!strstr(s, ".entry " ATL_RZ_SCAN_ENTRY) || !strstr(s, ".entry " ATL_RZ_CHECK_ENTRY))
        return NULL;
    const char *refuse = getenv("FAKE_REFUSE_PTX");
    if (refuse && *refuse && strcmp(refuse, "0") != 0)
        return NULL;
    return &twin;
}
