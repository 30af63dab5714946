/*
 * Red zones inside framework pools (ATLAS_REDZONE with ATLAS_REDZONE_POOLS).
 *
 * A red zone sits after a driver allocation. PyTorch's caching allocator and JAX's BFC allocator
 * carve tensors out of large driver allocations, so a kernel that writes past a tensor lands in
 * the next tensor of the same segment and no red zone sees it. Both frameworks can instead take
 * each tensor from the driver's stream-ordered allocator, one driver allocation per tensor:
 *   PyTorch  PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF, its newer name)
 *            backend:cudaMallocAsync
 *   JAX      XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async (its `platform` allocator maps each buffer
 *            into 2 MiB cuMemCreate handles, where no red zone can sit)
 * Both read their variable when they initialise (PyTorch when libc10_cuda is loaded, at `import
 * torch`), long after this library is loaded and before any CUDA call it could see, so only a
 * load-time constructor can set them: the program, and every child that inherits the preload,
 * sees them from its first instruction.
 *
 * Which to route is decided here, once, with nothing known of what the program will do
 * (docs/redzone.md, "Which pools are routed"): PyTorch's cudaMallocAsync backend refuses the
 * caching allocator's pool API (checkpoint state, live-allocation checks, snapshots, memory
 * history, IPC handles), and CUDA graph trees (torch.compile with mode="reduce-overhead" or
 * "max-autotune") call it at every recording, before the first capture, where no setting of
 * PyTorch's avoids it. A program that runs natively must run under red zones, so PyTorch is
 * routed only when asked (route); JAX's allocator is routed by default (auto). What the user set
 * is kept: other PyTorch options stay (the backend is appended), and an explicit backend or
 * allocator is left alone. CuPy's pool is chosen in code (cupy.cuda.set_allocator(None)), which
 * no variable reaches.
 */
#define _GNU_SOURCE
#include "pools.h"

#include "envedit.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

/* ATLAS_REDZONE_POOLS's values, in atl_redzone_pools_names' order */
enum { POOLS_AUTO, POOLS_ROUTE, POOLS_KEEP };

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

static const char backend[] = "backend:cudaMallocAsync";
/* PyTorch's allocator variables: the older name first (versions differ in which they read) */
static const char *const names[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};

/* Whether PyTorch reads a backend from this value: its options are split at
 * commas and white space, each at colons, and an option whose first part is
 * "backend" with a value after it chooses one. */
static int chooses_backend(const char *v)
{
    while (v && *v) {
        size_t skip = strspn(v, ", \t\n\r\f\v");
        v += skip;
        size_t len = strcspn(v, ", \t\n\r\f\v");
        const char *colon = memchr(v, ':', len);
        if (colon && colon - v == 7 && strncmp(v, "backend", 7) == 0 &&
            strspn(colon, ":") < (size_t)(v + len - colon))
            return 1;
        v += len;
    }
    return 0;
}

char *atl_pools_torch_conf(const char *old)
{
    if (chooses_backend(old))
        return NULL;
    /* PyTorch's parser refuses an empty option: "a,,b" fails with
     * "Unrecognized CachingAllocator option", so the user's trailing
     * separators go before the backend is appended */
    size_t n = old ? strlen(old) : 0;
    while (n && strchr(", \t\n\r\f\v", old[n - 1]))
        n--;
    char *v = malloc(n + sizeof backend + 1);
    if (!v)
        return NULL;
    if (n)
        snprintf(v, n + sizeof backend + 1, "%.*s,%s", (int)n, old, backend);
    else
        snprintf(v, sizeof backend, "%s", backend);
    return v;
}

static void route_pytorch(void)
{
    const char *vals[2];
    int set = 0;
    for (int i = 0; i < 2; i++) {
        vals[i] = atl_env_get(names[i]);
        if (vals[i] && chooses_backend(vals[i]))
            return; /* the user chose a backend */
        set += vals[i] && *vals[i];
    }
    /* the backend goes into each variable the user set (PyTorch versions
     * differ in which of the two they read first), else the older name */
    for (int i = 0; i < 2; i++) {
        if (set ? !(vals[i] && *vals[i]) : i != 0)
            continue;
        char *value = atl_pools_torch_conf(vals[i]);
        if (!value)
            continue;
        if (atl_env_route(names[i], value) == 0) {
            char what[160];
            snprintf(what, sizeof what, "%s=%s%s", names[i], strcmp(value, backend) ? "...," : "",
                     backend);
            note(what);
        }
        free(value);
    }
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
    unsigned long long pad = 0, pools = POOLS_AUTO;
    if (getauxval(AT_SECURE) || !atl_env_setting("ATLAS_REDZONE", &pad) || pad == 0)
        return;
    atl_env_setting("ATLAS_REDZONE_POOLS", &pools);
    if (pools == POOLS_KEEP)
        return;
    if (pools == POOLS_ROUTE)
        route_pytorch();
    route_jax();
}

int atl_pools_torch_caching(void)
{
    /* loaded or not, asked of the loader by its name (PyTorch's file is libc10_cuda.so, its
     * soname too); RTLD_NOLOAD never loads it, and the handle it gives is given back */
    void *h = dlopen("libc10_cuda.so", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    dlclose(h);
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        if (v && strstr(v, backend))
            return 0;
    }
    return 1;
}
