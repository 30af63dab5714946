/*
 * ATLAS_KERNEL: the kernels a setting limits a feature to, by a POSIX
 * extended regular expression matched against the kernel's name, compiled
 * once. Red zones' launch mode checks only after the launches it selects
 * (docs/redzone.md), and the step trace records only them (docs/trace.md).
 */
#ifndef ATL_KSELECT_H
#define ATL_KSELECT_H

struct atl_krec;

/* Compiles ATLAS_KERNEL (already checked by the settings' parser: a bad
 * expression was reported there and left unset). Idempotent. */
void atl_ksel_init(void);

/* 1 when ATLAS_KERNEL is set. */
int atl_ksel_on(void);

/* 1 when ATLAS_KERNEL is not set, or selects the kernel of record r: its
 * name as reports print it, or its mangled name, matches. A kernel whose
 * name the driver has not given is not selected (asked again next time).
 * The answer is kept in the record: one match per kernel. */
int atl_ksel_match(struct atl_krec *r);

#endif
