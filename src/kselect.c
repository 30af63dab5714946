#include "kselect.h"

#include "config.h"
#include "kernels.h"

#include <pthread.h>
#include <regex.h>

static regex_t re;
static int on;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void compile(void)
{
    /* REG_NOSUB: a yes or no is all a launch needs; glibc's regexec may
     * be called from several threads on one compiled expression */
    if (atl_cfg.kernel && regcomp(&re, atl_cfg.kernel, REG_EXTENDED | REG_NOSUB) == 0)
        on = 1;
}

void atl_ksel_init(void)
{
    pthread_once(&once, compile);
}

int atl_ksel_on(void)
{
    return on;
}

int atl_ksel_match(struct atl_krec *r)
{
    if (!on)
        return 1;
    if (!r)
        return 0;
    int known = __atomic_load_n(&r->ksel, __ATOMIC_RELAXED);
    if (known)
        return known == 2;
    const char *mangled = atl_krec_mangled(r);
    if (!mangled)
        return 0;
    char shown[512];
    int yes =
        regexec(&re, atl_kernel_name_of(r, r->handle, shown, sizeof shown), 0, NULL, 0) == 0 ||
        regexec(&re, mangled, 0, NULL, 0) == 0;
    __atomic_store_n(&r->ksel, yes ? 2 : 1, __ATOMIC_RELAXED);
    return yes;
}
