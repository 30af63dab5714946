/*
 * Red zones inside framework pools (ATLAS_REDZONE with ATLAS_REDZONE_POOLS=route, the default).
 *
 * A red zone sits after a driver allocation. PyTorch's caching allocator and JAX's BFC allocator
 * carve tensors out of large driver allocations, so a kernel that writes past a tensor lands in
 * the next tensor of the same segment and no red zone sees it. Both frameworks can instead take
 * each tensor from the driver's stream-ordered allocator, one driver allocation per tensor:
 *   PyTorch  PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF, its newer name)
 *            backend:cudaMallocAsync
 *   JAX      XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async (its `platform` allocator maps each buffer
 *            into 2 MiB cuMemCreate handles, where no red zone can sit)
 * Both read their variable when they initialise CUDA, long after this library is loaded, so a
 * load-time constructor can set them: the program, and every child that inherits the preload,
 * sees them from its first instruction. What the user set is kept: other PyTorch options stay
 * (the backend is appended), and an explicit backend or allocator is left alone. CuPy's pool is
 * chosen in code (cupy.cuda.set_allocator(None)), which no variable reaches: docs/redzone.md.
 */
#define _GNU_SOURCE
#include "pools.h"

#include "envedit.h"

#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

/* ATLAS_REDZONE_POOLS's values, in atl_redzone_pools_names' order */
enum { POOLS_ROUTE, POOLS_KEEP };

static char routed[256];

const char *atl_pools_routed(void)
{
    return routed;
}

static void note(const char *what)
{
    size_t k = strlen(routed);
    snprintf(routed + k, sizeof routed - k, "%s%s", k ? "; " : "", what);
}

static void route_pytorch(void)
{
    static const char backend[] = "backend:cudaMallocAsync";
    const char *names[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};
    const char *name = names[0], *old = NULL;
    for (int i = 0; i < 2; i++) {
        const char *v = atl_env_get(names[i]);
        if (v && strstr(v, "backend:"))
            return; /* the user chose a backend */
        if (v && *v && !old) {
            name = names[i];
            old = v;
        }
    }
    char value[1024];
    int n = old ? snprintf(value, sizeof value, "%s,%s", old, backend)
                : snprintf(value, sizeof value, "%s", backend);
    if (n < 0 || (size_t)n >= sizeof value || atl_env_route(name, value) != 0)
        return;
    char what[160];
    snprintf(what, sizeof what, "%s=%s%s", name, old ? "...," : "", backend);
    note(what);
}

static void route_jax(void)
{
    if (atl_env_get("XLA_PYTHON_CLIENT_ALLOCATOR") ||
        atl_env_route("XLA_PYTHON_CLIENT_ALLOCATOR", "cuda_async") != 0)
        return;
    note("XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async");
}

__attribute__((constructor)) static void pools_route(void)
{
    /* a set-uid program reads no settings */
    unsigned long long pad = 0, pools = 0;
    if (getauxval(AT_SECURE) || !atl_env_setting("ATLAS_REDZONE", &pad) || pad == 0)
        return;
    if (atl_env_setting("ATLAS_REDZONE_POOLS", &pools) && pools == POOLS_KEEP)
        return;
    route_pytorch();
    route_jax();
}
