/*
 * Races between streams (ATLAS_RACES, docs/races.md): two accesses to the
 * same device memory on two streams with nothing ordering them, one of them
 * certainly a write. Streams are ordered by what the driver sees: event
 * records and waits, host synchronisations (stream, event, context, the
 * blocking copies, successful queries), host functions and callbacks, the
 * legacy default stream's implicit ordering of blocking streams, a graph
 * launch as one unit on its stream. Accesses are the copies' and memsets'
 * exact byte ranges and the allocations a kernel's pointer parameters reach
 * (the ledger resolves them). Memory stays bounded: per allocation, the
 * accesses not yet ordered before everything that follows, at most 16.
 */
#ifndef ATL_RACES_H
#define ATL_RACES_H

#include "events.h"

/* The feature's init (src/engine.h): the event classes it needs, 0 when
 * ATLAS_RACES is off. */
unsigned atl_races_init(void);

/* Before a launch: the watch of what it writes, for the first launches of a kernel whose
 * parameters may write (src/races_watch.h); after it, atl_races_launch. */
void atl_races_launch_pre(const struct atl_launch *l);
void atl_races_launch(const struct atl_launch *l, CUresult r);
/* Every other op that may write device memory (copies, memsets) calls this with 1 and its
 * stream before the driver's call, and with 0 after it (also when it is left by longjmp): a
 * watch counts only when no other op was enqueued from its launch's start to its end, and
 * none on another stream until its result is read. */
void atl_races_enq(int begin, CUstream s, int hook);
/* Before a context is torn down: the watches' pinned memory and events, given back. */
void atl_races_teardown(void);
/* Before a graph launch: the watch of what its kernel nodes write (atl_races_launch_pre's). */
void atl_races_graph_launch_pre(const struct atl_graph_launch *g);
void atl_races_graph_launch(const struct atl_graph_launch *g, CUresult r);
void atl_races_graph_inst(const struct atl_graph_inst *g, CUresult r);
void atl_races_alloc(const struct atl_alloc *a, CUresult r);
/* Before the driver frees (the ledger has removed the record into f->rec):
 * a stream-ordered free is checked as a write of the whole allocation, and
 * the allocation's accesses are forgotten. */
void atl_races_free(const struct atl_free *f);
void atl_races_vmm(const struct atl_vmm *v, CUresult r);
void atl_races_copy(const struct atl_copy *c, CUresult r);
void atl_races_memset(const struct atl_memset *m, CUresult r);
void atl_races_sync(const struct atl_sync *s, CUresult r);
void atl_races_capture(const struct atl_capture *c, CUresult r);
/* A host function or callback is replaced by one that tells the detector
 * the host has seen the stream's work up to it, then calls the program's. */
void atl_races_stream_pre(struct atl_stream_op *s);
void atl_races_stream_post(const struct atl_stream_op *s, CUresult r);
/* The summary at exit. */
void atl_races_exit(void);

/* ---- what a kernel does with its parameters (src/races_params.c) ---- */
enum atl_races_param {
    ATL_RP_SCAN,     /* unknown, or passed by value: each 8-byte word that points into an
                      * allocation may write there */
    ATL_RP_SKIP,     /* an arithmetic scalar: never a pointer */
    ATL_RP_READ,     /* a pointer to const: reads */
    ATL_RP_MAYWRITE, /* a pointer to non-const: may write */
    ATL_RP_OPERANDS, /* TensorIterator's operand array: the first word is written, the others read
                      */
};
#define ATL_RACES_MAX_PARAMS 1024
/* Classes of the n parameters of the kernel whose demangled signature is
 * `sig` (NULL: unknown) into cls[0..n). Every class is ATL_RP_SCAN unless
 * the signature lists exactly n parameters. Returns the number it lists, -1
 * when it has no parameter list. */
int atl_races_param_classes(const char *sig, unsigned n, unsigned char *cls);

#endif
