/*
 * Virtual memory management allocations on the ledger (cuMemCreate,
 * cuMemMap, ...): JAX, NCCL and PyTorch's expandable segments allocate this
 * way, and what they hold is most of what nvidia-smi shows.
 */
#ifndef ATL_VMM_H
#define ATL_VMM_H

#include "events.h"

void atl_vmm_ledger_pre(struct atl_vmm *v);
void atl_vmm_ledger_post(struct atl_vmm *v, CUresult r);

#endif
