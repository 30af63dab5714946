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

#endif
