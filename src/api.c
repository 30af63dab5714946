/*
 * Every atlas_* function libatlastrace.so exports: the program API of
 * include/atlas/trace.h, which resolves these by name with dlsym, so a
 * program runs unchanged without the preload. Each is a thin wrapper over
 * the feature's own function; the features keep their internals.
 */
#define ATLAS_TRACE_LIBRARY
#include "atlas/trace.h"

#include "blocking.h"
#include "engine.h"
#include "nvtx.h"
#include "redzone.h"
#include "stats.h"
#include "trace.h"

#define ATL_API __attribute__((visibility("default")))

/* ---- red zones (ATLAS_REDZONE) ---- */

ATL_API int atlas_redzone_scan_impl(void)
{
    if (!atl_self_enter())
        return 0;
    int n = atl_redzone_scan_all("atlas_redzone_scan");
    atl_leave();
    return n;
}

ATL_API int atlas_redzone_poison_impl(unsigned long long lo, unsigned long long hi)
{
    if (!atl_self_enter())
        return 0;
    int n = atl_redzone_poison(lo, hi);
    atl_leave();
    return n;
}

/* ---- step markers (ATLAS_TRACE=1 ATLAS_STEP=api) ---- */

ATL_API void atlas_step_begin_impl(const char *name)
{
    atl_engine_init();
    atl_trace_api_step_begin(name);
}

ATL_API void atlas_step_end_impl(void)
{
    atl_engine_init();
    atl_trace_api_step_end();
}

/* ---- NVTX ranges (ATLAS_STEP=nvtx:NAME) ---- */

/* Called by the program's NVTX library at its first NVTX call when
 * NVTX_INJECTION64_PATH names us (not an atlas_* function, but exported for
 * the same reason: someone outside resolves it by name). `get` is NVTX's
 * NvtxGetExportTableFunc_t (src/nvtx.c, the one file that includes NVTX's
 * header); here it is only passed on, once the library is initialised. */
ATL_API int InitializeInjectionNvtx2(const void *(*get)(uint32_t id))
{
    atl_engine_init();
    return atl_nvtx_inject(get);
}

/* ---- counters and statistics ---- */

/* For scripts (ctypes) and tests: one counter by name, or the blocking
 * total for "blocking_d2h"; -1 for an unknown name. */
ATL_API long long atlas_sync_count(const char *name)
{
    return atl_blocking_count_named(name);
}

ATL_API void atlas_stats_snapshot(const char *label)
{
    /* a report the program asks for: also after the exit report */
    atl_hold();
    atl_stats_snapshot(label);
    atl_leave();
}
