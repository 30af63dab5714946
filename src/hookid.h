/* Identifiers of the intercepted driver entry points, generated from
 * hooks/hooks.def so the engine can name them without the preload. */
#ifndef ATL_HOOKID_H
#define ATL_HOOKID_H

enum atl_hook_id {
#define ATL_HOOK(sym, kind, flags) ATL_ID_##sym,
#include "../hooks/hooks.def"
#undef ATL_HOOK
    ATL_ID_COUNT
};

/* How a program reached a wrapper: each hook has one entry point per path,
 * so the statistics say which resolution mechanism a program depends on. */
enum atl_path { ATL_PATH_LINKED, ATL_PATH_DLSYM, ATL_PATH_GPA, ATL_PATH_COUNT };

#define ATL_F_PT 1 /* per-thread default stream variant (_ptsz/_ptds) */

extern const char *const atl_hook_names[ATL_ID_COUNT];
extern const unsigned char atl_hook_flags[ATL_ID_COUNT];

#endif
