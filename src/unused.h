/*
 * Settings that do nothing: a setting whose feature is off (ATLAS_REDZONE_CHECK without
 * ATLAS_REDZONE, ATLAS_CHROME_MAX_MB without ATLAS_CHROME_TRACE, ATLAS_ERROR_ON without
 * ATLAS_ERROR_EXITCODE) is said once at start, in the user's terms (src/hint.h): a user who
 * typed --redzone-check=launch and saw no overrun would otherwise believe the program clean.
 */
#ifndef ATL_UNUSED_H
#define ATL_UNUSED_H

/* One line per feature that is off while settings of it were given: "S1 and S2 do nothing
 * without X (why)". Reads atl_cfg and the environment; call once, after atl_config_parse. */
void atl_unused_settings(void);

#endif
