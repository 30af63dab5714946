/* Red zones inside framework pools: see src/pools.c. */
#ifndef ATL_POOLS_H
#define ATL_POOLS_H

/* What the load-time constructor set ("" when nothing), for the red zones'
 * info line. */
const char *atl_pools_routed(void);

/* The value a PyTorch allocator variable holding `old` (NULL: unset) takes
 * when routed: the user's options without trailing separators, a comma and
 * backend:cudaMallocAsync; NULL when `old` already chooses a backend (or out
 * of memory). The caller frees it. */
char *atl_pools_torch_conf(const char *old);

/* 1 when PyTorch's caching allocator serves this process: libc10_cuda is loaded and neither
 * of its variables chooses backend:cudaMallocAsync (the routing sets one). Asks the loader
 * (dlopen with RTLD_NOLOAD): for the first guarded allocations only, with no lock held. */
int atl_pools_torch_caching(void);

#endif
