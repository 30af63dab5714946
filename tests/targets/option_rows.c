/*
 * A program for tests/integration/test_option_docs.sh: atlas-trace's options as the settings
 * table makes them (src/config.def, linked from the engine's archive), one a line:
 *   OPTION VAR      "--redzone ATLAS_REDZONE", "-o ATLAS_LOG", "--quiet ATLAS_LOG_LEVEL"
 * then every setting of the table: "setting VAR".
 */
#include "config.h"

#include <stdio.h>

int main(void)
{
    for (size_t i = 0; i < atl_cfg_nvars; i++)
        if (atl_cfg_vars[i].opt.name)
            printf("--%s %s\n", atl_cfg_vars[i].opt.name, atl_cfg_vars[i].name);
    for (size_t i = 0; i < atl_cfg_naliases; i++) {
        if (atl_cfg_aliases[i].name)
            printf("--%s %s\n", atl_cfg_aliases[i].name, atl_cfg_aliases[i].var);
        if (atl_cfg_aliases[i].letter)
            printf("-%c %s\n", atl_cfg_aliases[i].letter, atl_cfg_aliases[i].var);
    }
    for (size_t i = 0; i < atl_cfg_nvars; i++)
        printf("setting %s\n", atl_cfg_vars[i].name);
    return 0;
}
