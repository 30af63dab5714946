/*
 * Source lines of code addresses, for reports: elfutils' libdw, loaded with
 * dlopen the first time a report asks (never at load, never on a hook's
 * path), from the debug information the mapped file itself carries. Without
 * libdw, or without debug information, or when the file on disk is not the
 * one mapped (its build ID differs), the answer is "unknown" and reports keep
 * the symbol+offset form. Why libdw and not another reader: docs/reports.md.
 */
#ifndef ATL_SYMBOLS_H
#define ATL_SYMBOLS_H

#include <stddef.h>

/* The source file and line of the call that return address `pc` returns from
 * (the line of pc - 1): 1 when found, else 0 with neither written. `func` gets
 * the function the symbol table names there (it names static functions too)
 * whenever it does, line or not; it is left as it was when not. Thread-safe;
 * at exit it waits for another thread's look-up only until the exit's
 * deadline. */
int atl_sym_line(void *pc, char *file, size_t filesz, int *line, char *func, size_t funcsz);

/* 1 when file (a source path from the debug information) is one of CUDA's headers whose
 * helpers are inlined into the caller's code (cuda_runtime.h's templates, crt/'s): a line
 * there is not the user's. atl_sym_line gives, for a pc in such a helper inlined into a
 * function, the line of the call site it was inlined at, the innermost not in such a header. */
int atl_sym_cuda_header(const char *file);

/* The function return address `pc` lies in, from its module's own symbol table (which
 * names what dladdr cannot: a static function, main in an executable linked without
 * -rdynamic), and pc's offset in it (off NULL: not asked); 0 when unknown. With or without
 * libdw. */
int atl_sym_name(void *pc, char *func, size_t funcsz, unsigned long *off);

/* ATLAS_SYMBOLS=0 (tests, and a user who wants the old form): no look-ups. */
void atl_sym_disable(void);

#endif
