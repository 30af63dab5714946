/*
 * NVTX ranges as steps (ATLAS_STEP=nvtx:NAME), part of the step trace. NVTX
 * loads the library named by NVTX_INJECTION64_PATH and calls its
 * InitializeInjectionNvtx2 (src/api.c, which initialises the library first)
 * with the table of its callbacks: the range pushes and pops come here, and
 * a range named NAME opens a step on its thread that its pop closes.
 *
 * NVTX_NO_IMPL: the header's types and callback ids only. Its inline
 * implementation (the one programs compile in) is not ours to carry: it
 * resolves its injection library with dlsym, which inside this library is
 * the exported dlsym of hooks/resolve.c.
 */
#define NVTX_NO_IMPL
#include "nvtx.h"

#include "config.h"
#include "hint.h"
#include "log.h"
#include "tracestep.h"

#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ATLAS_STEP=nvtx:NAME: NAME (on: ranges are steps). */
static int on;
static char step_name[ATL_STEP_NAME_MAX];

void atl_nvtx_init(const char *name)
{
    snprintf(step_name, sizeof step_name, "%s", name);
    on = 1;
}

/* Per thread: the NVTX push depth, and the depth at which our range began
 * (0: none), so a pop ends the step only when it closes our range. In
 * ordinary (dynamic) TLS, as the step ends' cold per-thread state is
 * (src/tracestep.c): only threads that push ranges touch it. */
static __thread struct {
    int depth, step_depth;
} nt;

/* For the exit hint when no range was ever named NAME: whether one was, and the first few
 * other names seen (a typo or a different spelling is then plain to see). */
#define NVTX_SEEN 8
static int nvtx_matched;
static char nvtx_seen[NVTX_SEEN][32];
static pthread_mutex_t nvtx_seen_mu = PTHREAD_MUTEX_INITIALIZER;

static void nvtx_note_name(const char *msg)
{
    pthread_mutex_lock(&nvtx_seen_mu);
    for (int i = 0; i < NVTX_SEEN; i++) {
        if (!nvtx_seen[i][0]) {
            /* only printable text reaches the log */
            size_t n = 0;
            for (; msg[n] && n + 1 < sizeof nvtx_seen[i]; n++)
                nvtx_seen[i][n] = msg[n] >= ' ' && msg[n] < 127 ? msg[n] : '?';
            nvtx_seen[i][n] = '\0';
            break;
        }
        if (strncmp(nvtx_seen[i], msg, sizeof nvtx_seen[i] - 1) == 0)
            break;
    }
    pthread_mutex_unlock(&nvtx_seen_mu);
}

static void nvtx_push(const char *msg)
{
    nt.depth++;
    if (!msg || !on)
        return;
    if (strcmp(msg, step_name) != 0) {
        if (!__atomic_load_n(&nvtx_matched, __ATOMIC_RELAXED))
            nvtx_note_name(msg);
    } else if (!nt.step_depth) {
        __atomic_store_n(&nvtx_matched, 1, __ATOMIC_RELAXED);
        nt.step_depth = nt.depth;
        atl_tstep_open(step_name);
    }
}

static int NVTX_API nvtx_push_a(const char *msg)
{
    nvtx_push(msg);
    return nt.depth - 1;
}

static int NVTX_API nvtx_push_ex(const nvtxEventAttributes_t *a)
{
    nvtx_push(a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : NULL);
    return nt.depth - 1;
}

static int NVTX_API nvtx_pop(void)
{
    if (nt.depth <= 0)
        return -1;
    if (nt.step_depth == nt.depth) {
        nt.step_depth = 0;
        atl_tstep_close();
    }
    return --nt.depth;
}

static int NVTX_API nvtx_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    (void)d;
    return nvtx_push_ex(a);
}

static int NVTX_API nvtx_domain_pop(nvtxDomainHandle_t d)
{
    (void)d;
    return nvtx_pop();
}

/* NVTX's injection entry (src/api.c, after initialising): fill the CORE
 * slots we care about. */
static int nvtx_injected;

int atl_nvtx_inject(const void *(*get_table)(uint32_t id))
{
    NvtxGetExportTableFunc_t get = get_table;
    nvtx_injected = 1;
    if (!get)
        return 0;
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || !cb->GetModuleFunctionTable)
        return 0;
    NvtxFunctionTable t = NULL;
    unsigned size = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &size) && t) {
        if (size > NVTX_CBID_CORE_RangePushA && t[NVTX_CBID_CORE_RangePushA])
            *t[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)nvtx_push_a;
        if (size > NVTX_CBID_CORE_RangePushEx && t[NVTX_CBID_CORE_RangePushEx])
            *t[NVTX_CBID_CORE_RangePushEx] = (NvtxFunctionPointer)nvtx_push_ex;
        if (size > NVTX_CBID_CORE_RangePop && t[NVTX_CBID_CORE_RangePop])
            *t[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)nvtx_pop;
    }
    t = NULL, size = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &size) && t) {
        if (size > NVTX_CBID_CORE2_DomainRangePushEx && t[NVTX_CBID_CORE2_DomainRangePushEx])
            *t[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)nvtx_domain_push_ex;
        if (size > NVTX_CBID_CORE2_DomainRangePop && t[NVTX_CBID_CORE2_DomainRangePop])
            *t[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)nvtx_domain_pop;
    }
    return 1;
}

/* Why nvtx mode found no step, as far as the library can tell: NVTX never loaded us (the
 * variable unset, or naming another library), or it did and no range had the name. */
void atl_nvtx_hint(void)
{
    char set[ATL_STEP_NAME_MAX + 48], value[ATL_STEP_NAME_MAX + 8];
    snprintf(value, sizeof value, "nvtx:%s", step_name);
    atl_hint_setting("ATLAS_STEP", value, set, sizeof set);
    if (!nvtx_injected) {
        const char *inj = getenv("NVTX_INJECTION64_PATH");
        char lib[4096];
        char *cmd = NULL;
        if (inj && *inj && !strstr(inj, "libatlastrace"))
            atl_log(ATL_WARN,
                    "step trace: %s but NVTX_INJECTION64_PATH names another library, so NVTX "
                    "ranges never reached atlastrace",
                    set);
        else if (inj && *inj)
            atl_log(ATL_WARN,
                    "step trace: %s but the program opened no NVTX range (NVTX never loaded "
                    "atlastrace, which NVTX_INJECTION64_PATH names)",
                    set);
        else if (atl_hint_library(lib, sizeof lib) == 0 &&
                 (cmd =
                      atl_hint_command((struct atl_hint_set[]){{"NVTX_INJECTION64_PATH", lib}}, 1)))
            atl_log(ATL_WARN,
                    "step trace: %s but NVTX never called atlastrace: re-run with "
                    "NVTX_INJECTION64_PATH naming it: %s",
                    set, cmd);
        else
            atl_log(ATL_WARN,
                    "step trace: %s but NVTX never called atlastrace: set NVTX_INJECTION64_PATH "
                    "to the absolute path of libatlastrace.so",
                    set);
        free(cmd);
        return;
    }
    if (__atomic_load_n(&nvtx_matched, __ATOMIC_RELAXED))
        return;
    char seen[NVTX_SEEN * 34 + 8] = "";
    size_t n = 0;
    pthread_mutex_lock(&nvtx_seen_mu);
    for (int i = 0; i < NVTX_SEEN && nvtx_seen[i][0]; i++)
        n += (size_t)snprintf(seen + n, sizeof seen - n, "%s'%s'", i ? ", " : "", nvtx_seen[i]);
    pthread_mutex_unlock(&nvtx_seen_mu);
    if (n)
        atl_log(ATL_WARN,
                "step trace: %s but the program opened no NVTX range named '%s'; the ranges it "
                "opened: %s",
                set, step_name, seen);
    else
        atl_log(ATL_WARN,
                "step trace: %s but the program opened no NVTX range named '%s' (no named range "
                "at all)",
                set, step_name);
}
