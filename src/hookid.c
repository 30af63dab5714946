#include "hookid.h"

const char *const atl_hook_names[ATL_ID_COUNT] = {
#define ATL_HOOK(sym, kind, flags) #sym,
#include "../hooks/hooks.def"
#undef ATL_HOOK
};

const unsigned char atl_hook_flags[ATL_ID_COUNT] = {
#define ATL_HOOK(sym, kind, flags) flags,
#include "../hooks/hooks.def"
#undef ATL_HOOK
};
