/*
 * Is a 64-bit value an address of this process's own host memory?
 *
 * The step diff asks it about the words of a by-value kernel parameter
 * that changed between two steps: a struct passed by value whose bytes
 * hold the addresses of the host stack, heap or libraries is carrying
 * uninitialised bytes (whatever the launching code's stack held), not
 * values the kernel reads. See docs/trace.md, "Uninitialised bytes".
 */
#ifndef ATL_HOSTMAP_H
#define ATL_HOSTMAP_H

#include <stdint.h>

/* 1: v lies in a mapping of this process that the host reads and the GPU
 * does not own: the stack, the heap, a library, an anonymous host mapping.
 * 0 otherwise, including mappings of the GPU driver's device files (pinned
 * host memory the kernel may legitimately be given), reservations with no
 * access (the driver's unified address space) and unmapped values.
 * Reads /proc/self/maps, cached; re-read on a miss at most every 50 ms.
 * Thread-safe; not for signal handlers. */
int atl_host_addr(uint64_t v);

/* Parses one line of /proc/PID/maps: 1 and the range and whether it
 * counts as host memory (see above), 0 for a line it cannot read. */
int atl_hostmap_parse_line(const char *line, uint64_t *lo, uint64_t *hi, int *host);

#endif
