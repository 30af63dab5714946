/*
 * Private to libatlaslaunch: the parameter-layout cache, the debug-sync switch and the log.
 * Nothing here is exported from the shared library; the unit tests link the static archive
 * and may call the *_for_tests functions.
 */
#ifndef ATLAS_LAUNCH_INTERNAL_H
#define ATLAS_LAUNCH_INTERNAL_H

#include "atlas/launch.h"

#include <stdint.h>

enum launch_layout_status {
    LAYOUT_KNOWN = 1,   /* nparams and sizes[] are the driver's answer */
    LAYOUT_UNKNOWN = 2, /* the driver could not say; why holds its error */
};

/* A kernel's parameter list as the driver reports it. Sizes past ATLAS_LAUNCH_MAX_ARGS are
 * not kept: a builder cannot hold that many arguments, so the count alone refuses it. */
struct launch_layout {
    uint32_t status;
    uint32_t nparams;
    CUresult why;
    /* The driver answered CUDA_ERROR_INVALID_VALUE for parameter 0: either the kernel takes
     * no parameters or the driver does not know this handle. Not enough to refuse a launch. */
    uint32_t none_reported;
    uint32_t sizes[ATLAS_LAUNCH_MAX_ARGS];
};

/* The layout of fn, from the cache or freshly from the driver. Never allocates; scratch is
 * used (and returned) when the cache cannot take the entry, or when fresh is set: a cached
 * answer that disagrees with the caller is re-read once before the caller is refused, in case
 * the handle's module was unloaded and the address reused. */
const struct launch_layout *launch_layout_get(void *fn, int is_kernel, int fresh,
                                              struct launch_layout *scratch);

/* The kernel's name for messages: the driver's (mangled) name, else its handle in hex
 * written into buf. */
const char *launch_kernel_name(void *fn, int is_kernel, char *buf, size_t len);

/* ATLAS_DEBUG_SYNC_KERNELS, read once per process. */
int launch_debug_sync_enabled(void);

/* Synchronise after a successful launch and turn an asynchronous fault into b's error. */
CUresult launch_debug_sync(struct atlas_launch *b, CUstream stream);

/* One line on stderr: `atlas[PID]: launch: ` then the formatted text; one write(2) per line
 * so that lines of different threads do not interleave. */
void launch_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record b's sticky error (the first one only) and print it once. */
void launch_fail(struct atlas_launch *b, CUresult r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The driver's name for r ("CUDA_ERROR_ILLEGAL_ADDRESS"), or "CUresult=N". */
const char *launch_error_name(CUresult r, char *buf, size_t len);

/* Set once "argument check unavailable" has been said. */
extern _Atomic int launch_unavailable_said;

/* Tests only: forget cached layouts, "said once" marks and the environment, so each test
 * starts as a fresh process would. Not safe while other threads launch. */
void launch_reset_for_tests(void);
void launch_layout_reset_for_tests(void);

#endif
