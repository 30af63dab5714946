/*
 * fake_graph.c: graphs, instantiation, graph launch.
 * Part of the fake CUDA driver: see fake_internal.h.
 */
#define _GNU_SOURCE
#include "fake_internal.h"

/* ------------------------------------------------------------------------ */
/* Graphs: a graph is its recorded ops in order; an exec is a frozen copy    */
/* ------------------------------------------------------------------------ */

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    ENTER(cuGraphCreate);
    TRY(need_init());
    if (!phGraph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_graph *g = graph_new_locked();
    UNLOCK();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = (CUgraph)g;
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
    ENTER(cuGraphDestroy);
    TRY(need_init());
    LOCK();
    struct fake_graph *g = handle_get(hGraph, MAGIC_GRAPH);
    if (g)
        handle_remove(&g->h);
    UNLOCK();
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    graph_free(g);
    return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    ENTER(cuGraphGetNodes);
    TRY(need_init());
    if (!numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct fake_graph *g = handle_get(hGraph, MAGIC_GRAPH);
    if (g && !nodes) {
        *numNodes = g->nops;
    } else if (g) {
        size_t n = *numNodes < g->nops ? *numNodes : g->nops;
        for (size_t i = 0; i < n; i++)
            nodes[i] = (CUgraphNode)g->ops[i];
        for (size_t i = n; i < *numNodes; i++)
            nodes[i] = NULL;
        *numNodes = n;
    }
    UNLOCK();
    return g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A node is one of the graph's ops (as cuGraphGetNodes hands them out). */
CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    ENTER(cuGraphNodeGetType);
    TRY(need_init());
    const struct op *o = (const struct op *)hNode;
    if (!o || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = o->kind == OP_KERNEL ? CU_GRAPH_NODE_TYPE_KERNEL
            : o->kind == OP_COPY ? CU_GRAPH_NODE_TYPE_MEMCPY
            : o->kind == OP_HOST ? CU_GRAPH_NODE_TYPE_HOST
                                 : CU_GRAPH_NODE_TYPE_MEMSET;
    return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    ENTER(cuGraphKernelNodeGetParams_v2);
    TRY(need_init());
    const struct op *o = (const struct op *)hNode;
    if (!o || !p || o->kind != OP_KERNEL)
        return CUDA_ERROR_INVALID_VALUE;
    memset(p, 0, sizeof *p);
    p->func = (CUfunction)&o->fn->as_func;
    p->gridDimX = o->launch.grid[0], p->gridDimY = o->launch.grid[1];
    p->gridDimZ = o->launch.grid[2];
    p->blockDimX = o->launch.block[0], p->blockDimY = o->launch.block[1];
    p->blockDimZ = o->launch.block[2];
    p->sharedMemBytes = o->launch.shmem;
    return CUDA_SUCCESS;
}

static CUresult graph_instantiate(CUgraphExec *phGraphExec, CUgraph hGraph)
{
    TRY(need_init());
    if (!phGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_exec *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->h = (struct hdr){MAGIC_EXEC, x};
    LOCK();
    struct fake_graph *g = handle_get(hGraph, MAGIC_GRAPH);
    CUresult r = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (g && g->nops) {
        x->ops = calloc(g->nops, sizeof *x->ops);
        for (size_t i = 0; x->ops && i < g->nops; i++) {
            x->ops[i] = op_clone(g->ops[i]);
            if (!x->ops[i])
                break;
            x->nops++;
        }
        if (x->nops != g->nops)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS && handle_add(&x->h))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    UNLOCK();
    if (r != CUDA_SUCCESS) {
        for (size_t i = 0; i < x->nops; i++)
            op_free(x->ops[i]);
        free(x->ops);
        free(x);
        return r;
    }
    *phGraphExec = (CUgraphExec)x;
    return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                            char *logBuffer, size_t bufferSize)
{
    ENTER(cuGraphInstantiate);
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    return graph_instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                               char *logBuffer, size_t bufferSize)
{
    ENTER(cuGraphInstantiate_v2);
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    return graph_instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags)
{
    ENTER(cuGraphInstantiateWithFlags);
    return graph_instantiate(phGraphExec, hGraph);
}

static CUresult graph_instantiate_params(CUgraphExec *phGraphExec, CUgraph hGraph,
                                         CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = graph_instantiate(phGraphExec, hGraph);
    p->hErrNode_out = NULL;
    p->result_out =
        r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

CUresult cuGraphInstantiateWithParams_impl(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return graph_instantiate_params(phGraphExec, hGraph, instantiateParams);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    ENTER(cuGraphExecDestroy);
    TRY(need_init());
    LOCK();
    struct fake_exec *x = handle_get(hGraphExec, MAGIC_EXEC);
    if (x)
        handle_remove(&x->h);
    UNLOCK();
    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < x->nops; i++)
        op_free(x->ops[i]);
    free(x->ops);
    free(x);
    return CUDA_SUCCESS;
}

/* Replay: the ops run in recorded order with the argument bytes frozen at
 * capture. A copy or memset whose memory has gone since capture faults the
 * context the way a GPU would (an illegal address, reported at the next
 * sync), rather than touching freed memory. */
static CUresult graph_launch(CUgraphExec hGraphExec, CUstream hStream)
{
    struct fake_ctx *c;
    struct fake_stream *st;
    LOCK();
    CUresult r = stream_resolve_locked(hStream, &c, &st);
    struct fake_exec *x = handle_get(hGraphExec, MAGIC_EXEC);
    if (r == CUDA_SUCCESS && !x)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && st && st->cap) {
        /* launched into a capture: becomes part of the captured graph */
        for (size_t i = 0; i < x->nops && r == CUDA_SUCCESS; i++)
            r = graph_append_locked(st->cap->graph, x->ops[i]);
        UNLOCK();
        return r;
    }
    UNLOCK();
    TRY(r);
    for (size_t i = 0; i < x->nops; i++) {
        const struct op *o = x->ops[i];
        LOCK();
        int dead = c->pending != CUDA_SUCCESS && err_is_sticky(c->pending);
        UNLOCK();
        if (dead)
            break;
        if (o->kind == OP_COPY && xfer_check(&o->x) != CUDA_SUCCESS)
            ctx_fault(c, CUDA_ERROR_ILLEGAL_ADDRESS);
        else if (o->kind == OP_SET && setop_check(&o->s) != CUDA_SUCCESS)
            ctx_fault(c, CUDA_ERROR_ILLEGAL_ADDRESS);
        else
            op_run(c, o, o->args);
    }
    return CUDA_SUCCESS;
}

CUresult cuGraphLaunch_impl(CUgraphExec hGraphExec, CUstream hStream)
{
    return graph_launch(hGraphExec, hStream);
}
