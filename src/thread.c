/*
 * The per-thread state's one definition (src/thread.h).
 */
#include "thread.h"

/* What it costs every thread of the program in static TLS, even one that
 * never calls the driver. */
_Static_assert(sizeof(struct atl_thread) <= 64, "the per-thread state stays one cache line");

__thread struct atl_thread atl_thr __attribute__((tls_model("initial-exec")));
