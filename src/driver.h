/*
 * Driver functions the engine calls on its own behalf (names, parameter
 * layouts, pointer attributes, capture state; the real copy, memset and sync
 * of features that poison, scan or synchronise). Always the real driver's
 * functions, never our wrappers, so nothing the engine does is counted as
 * the program's. Bound together with the hooks; NULL when the driver lacks
 * one (every caller checks) or in unit tests, which may set their own.
 */
#ifndef ATL_DRIVER_H
#define ATL_DRIVER_H

#include <cuda.h>

struct atl_driver {
#define ATL_DRV(ret, name, params) ret(*name) params;
#include "driver.def"
#undef ATL_DRV
};

extern struct atl_driver atl_drv;

/* Fills atl_drv from `handle` through `sym` (the real dlsym). */
void atl_driver_bind(void *handle, void *(*sym)(void *, const char *));

/* "CUDA_ERROR_ILLEGAL_ADDRESS" or "CUresult 700" when the driver cannot say. */
const char *atl_error_name(CUresult r, char *buf, unsigned len);

#endif
