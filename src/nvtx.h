/*
 * NVTX ranges as steps (ATLAS_STEP=nvtx:NAME): the step trace's NVTX part
 * (src/nvtx.c).
 */
#ifndef ATL_NVTX_H
#define ATL_NVTX_H

#include <stdint.h>

/* At the trace's init, in nvtx mode: ranges named `name` are steps. */
void atl_nvtx_init(const char *name);

/* NVTX_INJECTION64_PATH names us: the program's NVTX library calls
 * InitializeInjectionNvtx2 (src/api.c) at its first use, which initialises
 * the library and hands `get_table` (NVTX's NvtxGetExportTableFunc_t) here:
 * the range callbacks are installed. Returns 1 when the ranges now come to
 * the tracer. */
int atl_nvtx_inject(const void *(*get_table)(uint32_t id));

/* At exit, in nvtx mode: why no step was found, as far as the library can
 * tell (NVTX never loaded us, or no range had the name). */
void atl_nvtx_hint(void);

#endif
