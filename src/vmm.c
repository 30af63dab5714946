/*
 * VMM allocations on the ledger. A physical allocation (cuMemCreate) is an
 * allocation like cuMemAlloc's, with its size and call stack, kept by handle:
 * the leak list names the handles never released, and the report of a
 * failed allocation counts their bytes. Each cuMemMap records where the
 * allocation is, so a pointer into the mapping is named alloc#N+0xOFF.
 *
 * No red zone: the program asks for granularity-sized handles (2 MiB) and
 * places tensors inside them itself, so there is no end of an allocation to
 * guard. Red zones say so once.
 */
#include "vmm.h"

#include "config.h"
#include "ledger.h"
#include "log.h"
#include "stack.h"

void atl_vmm_ledger_pre(struct atl_vmm *v)
{
    if (v->op == ATL_VMM_CREATE)
        v->seq = atl_ledger_next_seq();
    else if (v->op == ATL_VMM_RELEASE)
        /* off the ledger before the call: once released, the driver may hand
         * the same handle value to another thread's cuMemCreate */
        v->known = atl_ledger_remove_handle(v->handle, &v->rec);
}

static void created(const struct atl_vmm *v)
{
    struct atl_alloc_rec rec = {
        .seq = v->seq,
        .bytes = v->bytes,
        .padded = v->bytes,
        .kind = ATL_ALLOC_VMM,
        .hook = v->hook,
        .handle = *v->handle_out,
    };
    atl_stack_capture(&rec.site);
    if (atl_ledger_add_handle(&rec) != 0)
        atl_log_once_oom("the allocation ledger");
    static int said;
    if (atl_cfg.redzone && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        atl_log(ATL_INFO,
                "redzone: %zu bytes through cuMemCreate carry no red zone (alloc#%llu: the "
                "program places its data inside the handles it maps; said once)",
                v->bytes, (unsigned long long)v->seq);
}

void atl_vmm_ledger_post(struct atl_vmm *v, CUresult r)
{
    switch (v->op) {
    case ATL_VMM_CREATE:
        /* (a failure is the ledger's report's: src/leaks.c, from the engine) */
        if (r == CUDA_SUCCESS && v->handle_out)
            created(v);
        break;
    case ATL_VMM_RELEASE:
        if (v->known && r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
            atl_ledger_add_handle(&v->rec); /* still the program's */
        break;
    case ATL_VMM_MAP:
        if (r == CUDA_SUCCESS && atl_ledger_map(v->ptr, v->bytes, v->handle) < 0)
            atl_log_once_oom("the allocation ledger");
        break;
    case ATL_VMM_UNMAP:
    case ATL_VMM_ADDR_FREE: /* mappings go first; forget any we still hold */
        if (r == CUDA_SUCCESS)
            atl_ledger_unmap(v->ptr, v->bytes);
        break;
    case ATL_VMM_RESERVE: /* an address range, no memory: nothing to keep */
        break;
    }
}
