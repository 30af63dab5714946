/*
 * examples/demo_steps.c's kernels for the fake driver: the same names and parameters as its PTX,
 * as host functions (see tests/fake/fakecuda.h). Loaded with
 * `demo_steps build/tests/front_demo_kernels.so`.
 */
#include "../fake/fakecuda.h"

#include <string.h>

static unsigned threads(const struct fake_launch *l)
{
    return l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] * l->block[1] * l->block[2];
}

static float *fptr(void *param)
{
    CUdeviceptr p;
    memcpy(&p, param, sizeof p);
    return (float *)(uintptr_t)p;
}

static CUresult scale(const struct fake_launch *l, void **params)
{
    float *y = fptr(params[0]), *x = fptr(params[1]), a = *(float *)params[2];
    unsigned n = *(unsigned *)params[3];
    for (unsigned i = 0; i < threads(l) && i < n; i++)
        y[i] = a * x[i];
    return CUDA_SUCCESS;
}

static CUresult add_pos(const struct fake_launch *l, void **params)
{
    float *y = fptr(params[0]);
    unsigned pos = *(unsigned *)params[1], n = *(unsigned *)params[2];
    for (unsigned i = 0; i < threads(l) && i < n; i++)
        y[i] += (float)pos;
    return CUDA_SUCCESS;
}

/* Writes wherever it is told: the fake keeps slack past every allocation for such kernels. */
static CUresult fill(const struct fake_launch *l, void **params)
{
    float *p = fptr(params[0]), v = *(float *)params[1];
    unsigned n = *(unsigned *)params[2];
    for (unsigned i = 0; i < threads(l) && i < n; i++)
        p[i] = v;
    return CUDA_SUCCESS;
}

static const size_t scale_sizes[] = {8, 8, 4, 4};
static const size_t three_sizes[] = {8, 4, 4};
static const struct fake_kernel_def kernels[] = {
    {"scale", scale, 4, scale_sizes, NULL},
    {"add_pos", add_pos, 3, three_sizes, NULL},
    {"fill", fill, 3, three_sizes, NULL},
};

__attribute__((visibility("default")))
const struct fake_image fake_image_of_module = {FAKE_IMAGE_MAGIC, 3, kernels};
