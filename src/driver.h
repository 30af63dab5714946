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

/* The stream a program's call through hook named, as a call of ours (always the plain entry
 * point, never the _ptsz one) must name it: a per-thread entry point's 0 is this thread's
 * default stream, not the legacy stream our 0 would be. */
CUstream atl_own_stream(CUstream s, int hook);

#endif
