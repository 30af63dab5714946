/*
 * ATLAS_NO_CHILDREN=1 (atlas-trace --no-children): trace this process, not the processes it
 * starts. LD_PRELOAD is inherited through exec, so a training script that runs nvidia-smi, a
 * compiler or a data-loader helper would otherwise load the interposer into each of them, and each
 * would write its own reports into the same log.
 *
 * This runs as a load-time constructor, not in the engine's lazy init: the engine starts at the
 * first CUDA call, and a program may exec children before that (Python's os.environ is even copied
 * before main, so a later unsetenv would not reach subprocess). Here our library is already mapped
 * (ld.so read LD_PRELOAD before any constructor), so removing it from the environment changes only
 * what exec'd children inherit. Cost in every process: one scan of the environment; the rest only
 * when asked.
 */
#define _GNU_SOURCE
#include "envedit.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>

/* The environment is read and edited in `environ` itself (src/envedit.h says why: bash). */

__attribute__((constructor)) static void children_strip_preload(void)
{
    unsigned long long on = 0;
    /* A set-uid program reads no settings (as init_body), and its ld.so ignored us anyway. */
    if (!atl_env_setting("ATLAS_NO_CHILDREN", &on) || !on || getauxval(AT_SECURE))
        return;

    Dl_info info;
    struct stat self;
    if (!dladdr((void *)children_strip_preload, &info) || !info.dli_fname ||
        stat(info.dli_fname, &self) != 0)
        return;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;

    char **slot = atl_env_slot("LD_PRELOAD");
    if (slot) {
        const char *pre = *slot + sizeof "LD_PRELOAD=" - 1;
        /* "LD_PRELOAD=" and the other entries, in order, ':'-joined (ld.so splits on spaces and
         * colons alike). Never freed: `environ` points at it from now on. */
        size_t head = sizeof "LD_PRELOAD=" - 1;
        char *kept = malloc(head + strlen(pre) + 1);
        if (kept) {
            memcpy(kept, *slot, head);
            size_t k = head;
            for (const char *p = pre; *p;) {
                p += strspn(p, " :");
                size_t n = strcspn(p, " :");
                if (n && !atl_env_is_lib(p, n, &self, base)) {
                    if (k > head)
                        kept[k++] = ':';
                    memcpy(kept + k, p, n);
                    k += n;
                }
                p += n;
            }
            kept[k] = '\0';
            if (k > head) {
                atl_env_keep(kept);
                *slot = kept;
            } else {
                atl_env_drop(slot);
                free(kept);
            }
        }
    }

    char **nvtx = atl_env_slot("NVTX_INJECTION64_PATH");
    if (nvtx) {
        const char *v = strchr(*nvtx, '=') + 1;
        if (atl_env_is_lib(v, strlen(v), &self, base))
            atl_env_drop(nvtx);
    }
}
