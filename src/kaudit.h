/*
 * ATLAS_KERNEL_AUDIT=1: a table at exit of every kernel looked up (module or
 * library, demangled name, resolved or not, where it was looked up, launch
 * count, blocks launched). Optional kernels fall back silently when their
 * look-up fails; this makes the failure visible.
 */
#ifndef ATL_KAUDIT_H
#define ATL_KAUDIT_H

#include "events.h"

/* Reads ATLAS_KERNEL_AUDIT; returns the event classes it needs, 0 when off. */
unsigned atl_kaudit_init(void);

void atl_kaudit_lookup(const struct atl_lookup *l, CUresult r);
void atl_kaudit_module(const struct atl_module *m, CUresult r);
/* Counts the launch in its kernel's record (the event's rec): two atomic adds. */
void atl_kaudit_launch(const struct atl_launch *l);
void atl_kaudit_report(void);

#endif
