/* Red zones inside framework pools: see src/pools.c. */
#ifndef ATL_POOLS_H
#define ATL_POOLS_H

/* What the load-time constructor set ("" when nothing), for the red zones'
 * info line. */
const char *atl_pools_routed(void);

#endif
