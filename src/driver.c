#include "driver.h"

#include "hookid.h"

#include <stdio.h>

struct atl_driver atl_drv;

void atl_driver_bind(void *handle, void *(*sym)(void *, const char *))
{
    struct atl_driver d = {0};
#define ATL_DRV(ret, name, params) *(void **)&d.name = sym(handle, #name);
#include "driver.def"
#undef ATL_DRV
    atl_drv = d;
}

const char *atl_error_name(CUresult r, char *buf, unsigned len)
{
    const char *s = NULL;
    if (atl_drv.cuGetErrorName && atl_drv.cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    snprintf(buf, len, "CUresult %d", (int)r);
    return buf;
}

CUstream atl_own_stream(CUstream s, int hook)
{
    return s == NULL && (atl_hook_flags[hook] & ATL_F_PT) ? CU_STREAM_PER_THREAD : s;
}
