/* Lists every ATLAS_* setting of the table the library was built with, one
 * a line: NAME TYPE MIN MAX (TYPE: bool, uint, enum, string), so the
 * bad-input test covers variables added after it was written. */
#include "config.h"

#include <stdio.h>

int main(void)
{
    static const char *const types[] = {"bool", "uint", "enum", "string"};
    for (size_t i = 0; i < atl_cfg_nvars; i++) {
        const struct atl_cfg_var *v = &atl_cfg_vars[i];
        printf("%s %s %llu %llu\n", v->name, types[v->type], v->min, v->max);
    }
    return 0;
}
