/* Shared between the generated wrappers and symbol resolution. */
#ifndef ATL_HOOKS_H
#define ATL_HOOKS_H

#include <cuda.h>
#include <pthread.h> /* struct _pthread_cleanup_buffer, for the slow path */

#include "blocking.h" /* the DTOH light path's count */
#include "engine.h"
#include "ring.h"
#include "stats.h" /* ATLAS_SELF_TIME's clock, for the slow path */

/* The real driver function of each hook (NULL until bound, or when the
 * driver lacks that symbol). */
extern void *atl_real_ptr[ATL_ID_COUNT];

/* Our three entry points of each hook, by path. */
extern void *const atl_wrappers[ATL_PATH_COUNT][ATL_ID_COUNT];

/* Opens the driver and fills atl_real_ptr, once. Returns 1 when bound. */
int atl_bind_driver(void);

/* After a successful cuGetProcAddress: replaces the returned real function
 * by our wrapper of exactly that variant, when we hook it. */
void atl_gpa_swap(CUresult r, void **pfn);

#endif
