/* A module image in a shared object, for cuModuleLoad(path) and
 * cuLibraryLoadFromFile(path) against the fake driver. */
#include "fakecuda.h"

/* iota(uint32_t *out, uint32_t start, uint64_t n): out[i] = start + i */
static CUresult iota_kernel(const struct fake_launch *l, void **params)
{
    uint32_t *out = *(uint32_t **)params[0];
    uint32_t start = *(uint32_t *)params[1];
    uint64_t n = *(uint64_t *)params[2];
    for (uint64_t i = 0; i < n; i++)
        out[i] = start + (uint32_t)i;
    return CUDA_SUCCESS;
}

static const size_t iota_sizes[] = {sizeof(void *), sizeof(uint32_t), sizeof(uint64_t)};
static const struct fake_kernel_def kernels[] = {
    {"_Z4iotaPjjm", iota_kernel, 3, iota_sizes, NULL},
};

const struct fake_image fake_image_of_module = {FAKE_IMAGE_MAGIC, 1, kernels};
