/* The settings that name an output file, for the reliability tests: the
 * list comes from ATL_FILE_VARS (mk/reliability.mk's REL_FILE_VARS),
 * space-separated "VAR" or "VAR:OTHER=1,OTHER2=x" (default "ATLAS_LOG"),
 * each with what else must be set for the file to be written. */
#ifndef ATL_TEST_FILE_VARS_H
#define ATL_TEST_FILE_VARS_H

#include "../integration/run.h"

struct file_var {
    char name[64];
    char extra[8][128];
    int nextra;
};

/* Fills up to `cap` entries; returns how many. */
int file_vars(struct file_var *fv, int cap);

/* Runs tp_linked with `v`=path, its companions and ATLAS_STATS=1. */
void run_with_file(struct run_result *r, const struct file_var *v, const char *path);

#endif
