/* bench/core/kern_bench.cu's kernels for the fake driver (tests/fake/fakecuda.h),
 * so the red-zone benchmark's programs and scripts run without a GPU. */
#include "../../tests/fake/fakecuda.h"

static CUresult nothing(const struct fake_launch *l, void **params)
{
    (void)l, (void)params;
    return CUDA_SUCCESS;
}

static const size_t args8_sizes[] = {8, 8, 8, 4, 4, 4, 8, 4};
static const struct fake_kernel_def defs[] = {
    {"empty", nothing, 0, NULL, NULL},
    {"args8", nothing, 8, args8_sizes, NULL},
};
__attribute__((visibility("default")))
const struct fake_image fake_image_of_module = {FAKE_IMAGE_MAGIC, 2, defs};
