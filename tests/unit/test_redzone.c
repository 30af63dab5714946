/*
 * The red-zone engine's GPU-scan path, driven through the engine's event
 * API with a stub driver (no preload, no GPU). The stub runs the scan
 * kernel's contract on the host (src/redzone_scan.cu: per zone, the count of
 * bytes that differ from the fill and the first and last such offset), so
 * this covers everything around the kernel: padding, poisoning, the mapped
 * zone table, reading results, reports and culprits. The kernel itself is
 * covered on a real GPU by tests/gpu/redzone.
 */
#include "config.h"
#include "driver.h"
#include "engine.h"
#include "flight.h"
#include "kernels.h"
#include "log.h"
#include "pools.h"
#include "redzone.h"
#include "redzone_gpu.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the stub driver ---- */
static int launches, syncs, loads;

static CUresult s_load(CUmodule *m, const void *image)
{
    loads++;
    ck_assert(strstr((const char *)image, ".entry atl_redzone_scan") != NULL);
    *m = (CUmodule)0x1;
    return CUDA_SUCCESS;
}
static int async_on = 1; /* the module has the launch-mode kernel */
static CUresult s_getfn(CUfunction *f, CUmodule m, const char *name)
{
    if (strcmp(name, "atl_redzone_scan") == 0)
        *f = (CUfunction)0x2;
    else if (strcmp(name, "atl_redzone_check_launch") == 0 && async_on)
        *f = (CUfunction)0x3;
    else
        return CUDA_ERROR_NOT_FOUND;
    return CUDA_SUCCESS;
}
static CUresult s_hostalloc(void **p, size_t n)
{
    *p = malloc(n);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult s_hostfree(void *p)
{
    free(p);
    return CUDA_SUCCESS;
}
static CUresult s_devptr(CUdeviceptr *d, void *p, unsigned flags)
{
    *d = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

/* The kernels' contract, on the host: the structs they share with the engine
 * (src/redzone_gpu.h), so this stub cannot drift from them either. */
static int checks_queued, checks_run_late;
static CUstream stream_of_check;
/* A queued check sees the zones as they are when it is queued (on a GPU
 * it runs right after the launch before it), but its verdict becomes
 * visible only at the next sync (it is never waited for). */
static struct {
    struct atl_rz_slot verdict;
    struct atl_rz_slot *slot;
} queued[2048];
static int nqueued;

static void run_check(const struct atl_rz_zone *z, unsigned n, struct atl_rz_slot *slot,
                      unsigned long long seq)
{
    unsigned nbad = 0;
    for (unsigned i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)z[i].ptr;
        struct atl_rz_result o = {0, 0xffffffffu, 0, i};
        for (unsigned long long b = 0; b < z[i].len; b++)
            if (p[b] != (unsigned char)z[i].fill) {
                o.bad++;
                if (b < o.first)
                    o.first = (unsigned)b;
                o.last = (unsigned)b;
            }
        if (o.bad && nbad < ATL_RZ_RECS)
            slot->rec[nbad] = o;
        nbad += o.bad != 0;
    }
    slot->nbad = nbad;
    slot->done = seq;
}

static void run_queued(void)
{
    for (int i = 0; i < nqueued; i++)
        *queued[i].slot = queued[i].verdict;
    checks_run_late += nqueued;
    nqueued = 0;
}

static CUresult s_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned sh, CUstream s, void **kp, void **extra)
{
    unsigned n = *(unsigned *)kp[1];
    if (f == (CUfunction)0x3) {
        /* the queued check: its zone list by value (struct atl_rz_list) */
        const struct atl_rz_zone *z = ((const struct atl_rz_list *)kp[0])->z;
        ck_assert_uint_eq(gx, 1);
        ck_assert_int_lt(nqueued, 2048);
        checks_queued++;
        stream_of_check = s;
        memset(&queued[nqueued].verdict, 0, sizeof queued[nqueued].verdict);
        /* (list, n, nfill, fill, slot, ticket, merge): no fills here */
        ck_assert_uint_eq(*(unsigned *)kp[2], 0);
        run_check(z, n, &queued[nqueued].verdict, *(unsigned long long *)kp[5]);
        queued[nqueued].slot = (struct atl_rz_slot *)*(CUdeviceptr *)kp[4];
        nqueued++;
        return CUDA_SUCCESS;
    }
    ck_assert_ptr_eq(f, (CUfunction)0x2);
    const struct atl_rz_zone *z = (const struct atl_rz_zone *)*(CUdeviceptr *)kp[0];
    struct atl_rz_result *out = (struct atl_rz_result *)*(CUdeviceptr *)kp[2];
    ck_assert_uint_ge(gx, 1);
    launches++;
    for (unsigned i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)z[i].ptr;
        out[i] = (struct atl_rz_result){0, 0xffffffffu, 0, 0};
        for (unsigned long long b = 0; b < z[i].len; b++)
            if (p[b] != (unsigned char)z[i].fill) {
                out[i].bad++;
                if (b < out[i].first)
                    out[i].first = (unsigned)b;
                out[i].last = (unsigned)b;
            }
    }
    return CUDA_SUCCESS;
}
static CUresult s_sync(void)
{
    syncs++;
    run_queued();
    return CUDA_SUCCESS;
}
static CUresult s_ssync(CUstream s)
{
    syncs++;
    run_queued();
    return CUDA_SUCCESS;
}
static CUresult s_memset(CUdeviceptr p, unsigned char v, size_t n)
{
    memset((void *)p, v, n);
    return CUDA_SUCCESS;
}
static CUresult s_name(const char **name, CUfunction f)
{
    *name = "_Z8bad_kernPci";
    return CUDA_SUCCESS;
}

static char logpath[64];

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void setup(int mode)
{
    memset(&atl_drv, 0, sizeof atl_drv);
    atl_drv.cuModuleLoadData = s_load;
    atl_drv.cuModuleGetFunction = s_getfn;
    atl_drv.cuMemAllocHost_v2 = s_hostalloc;
    atl_drv.cuMemFreeHost = s_hostfree;
    atl_drv.cuMemHostGetDevicePointer_v2 = s_devptr;
    atl_drv.cuLaunchKernel = s_launch;
    atl_drv.cuCtxSynchronize = s_sync;
    atl_drv.cuStreamSynchronize = s_ssync;
    atl_drv.cuMemsetD8_v2 = s_memset;
    atl_drv.cuFuncGetName = s_name;
    atl_cfg.redzone = 256;
    atl_cfg.redzone_fill = 0xA5;
    atl_cfg.redzone_check = mode;
    atl_engine_enable(ATL_FEAT_REDZONE, atl_redzone_init());
    snprintf(logpath, sizeof logpath, "/tmp/atlas-rzunit-%d.log", (int)getpid());
    unlink(logpath);
    atl_log_open(logpath);
    launches = syncs = loads = 0;
    checks_queued = checks_run_late = nqueued = 0;
}

static char *read_log(void)
{
    static char buf[16384];
    FILE *f = fopen(logpath, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

/* One cuMemAlloc_v2 through the engine; the "driver" is malloc, or hands
 * out `at` when given. */
static CUdeviceptr alloc_at(size_t bytes, void *at)
{
    CUdeviceptr p = 0;
    struct atl_alloc a = {
        .hook = ATL_ID_cuMemAlloc_v2, .kind = ATL_ALLOC_DEVICE, .dptr = &p, .bytes = bytes};
    atl_alloc_pre(&a);
    ck_assert_uint_eq(a.padded, bytes + 256);
    p = (CUdeviceptr)(at ? memset(at, 0, a.padded) : calloc(1, a.padded));
    atl_alloc_post(&a, CUDA_SUCCESS);
    const unsigned char *tail = (const unsigned char *)p + bytes;
    for (int i = 0; i < 256; i++)
        ck_assert_uint_eq(tail[i], 0xA5);
    ck_assert_uint_eq(((unsigned char *)p)[bytes - 1], 0);
    return p;
}

static CUdeviceptr alloc(size_t bytes)
{
    return alloc_at(bytes, NULL);
}

/* One cuMemFree_v2 through the engine; the memory itself is kept (the
 * caller may hand it out again). */
static void free_dev(CUdeviceptr p)
{
    struct atl_free f = {.hook = ATL_ID_cuMemFree_v2, .ptr = p};
    atl_free_pre(&f);
    atl_free_post(&f, CUDA_SUCCESS);
}

/* A launch's events as the engine makes them: pre before the driver's call,
 * post after it. */
static void launch_events(struct atl_launch *l)
{
    atl_redzone_launch_pre(l);
    atl_redzone_launch_post(l, CUDA_SUCCESS);
}

START_TEST(gpu_scan_finds_overrun)
{
    setup(0);
    CUdeviceptr a = alloc(1000), b = alloc(4096), c = alloc(64);
    memset((char *)b + 4096, 0, 12); /* 12 bytes past the end of b */
    ck_assert_int_eq(atl_redzone_scan_all("test"), 1);
    ck_assert_int_eq(loads, 1);
    ck_assert_int_eq(launches, 1);
    const char *log = read_log();
    ck_assert_msg(strstr(log, " bytes at 0x") && strstr(log, "4096 bytes at 0x"), "%s", log);
    ck_assert_msg(strstr(log, ": 12 bytes corrupted at +4096..+4107\n"), "%s", log);
    ck_assert_msg(!strstr(log, "scan kernel unavailable"), "%s", log);
    /* reported once: the next scan is clean, and costs one launch */
    ck_assert_int_eq(atl_redzone_scan_all("test"), 0);
    ck_assert_int_eq(launches, 2);
    /* re-armed, found again */
    ck_assert_int_eq(atl_redzone_poison(1, 1000), 3);
    memset((char *)a + 1000, 1, 1);
    memset((char *)c + 64 + 255, 1, 1);
    ck_assert_int_eq(atl_redzone_scan_all("test"), 2);
    log = read_log();
    ck_assert_msg(strstr(log, "1000 bytes at 0x") &&
                      strstr(log, "1 byte corrupted at +1000..+1000"),
                  "%s", log);
    ck_assert_msg(strstr(log, "1 byte corrupted at +319..+319"), "%s", log);
}
END_TEST

START_TEST(launch_mode_names_culprit)
{
    async_on = 0; /* a module without the launch-mode kernel: scan and wait */
    setup(2);
    CUdeviceptr a = alloc(2048);
    struct atl_launch l = {.hook = ATL_ID_cuLaunchKernel,
                           .func = (CUfunction)0x77,
                           .grid = {3, 1, 1},
                           .block = {128, 1, 1},
                           .seq = 41};
    launch_events(&l);
    int before = launches;
    memset((char *)a + 2048, 0, 5);
    l.seq = 42;
    launch_events(&l);
    ck_assert_int_eq(launches, before + 1);
    const char *log = read_log();
    ck_assert_msg(strstr(log, "5 bytes corrupted at +2048..+2052\n"), "%s", log);
    ck_assert_msg(strstr(log,
                         "redzone: culprit: launch#42 kernel=bad_kern(char*, int) grid=(3,1,1) "
                         "block=(128,1,1)\n"),
                  "%s", log);
    ck_assert_msg(!strstr(log, "launch#41"), "%s", log);
    /* no layout for the kernel: a full check, said so */
    ck_assert_msg(strstr(log, "redzone: found by the full check after launch#42 on stream 0x0 (the "
                              "driver gave no parameter layout for its kernel: every zone was "
                              "checked)\n"),
                  "%s", log);
}
END_TEST

/* 0: bad_kern(char *p, int n); else wide(int p0, ..., char *p<wide-1>) */
static unsigned wide;

static CUresult s_paraminfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    unsigned n = wide ? wide : 2, ptr = wide ? wide - 1 : 0;
    if (i >= n)
        return CUDA_ERROR_INVALID_VALUE;
    /* the ints 4 bytes apart, each pointer 8-aligned */
    *off = wide ? (i < ptr ? i * 4 : (ptr * 4 + 7) / 8 * 8) : i * 8;
    *size = i == ptr ? 8 : 4;
    return CUDA_SUCCESS;
}

/* Launch mode, queued checks: only the zones a launch's parameters reach
 * are checked, on the launch's own stream, with no sync of any kind (not
 * even for zones made since the last check); the verdicts are read at the
 * program's next sync and name the launch, its stream and the parameter. */
START_TEST(launch_mode_queued)
{
    async_on = 1;
    setup(2);
    atl_drv.cuFuncGetParamInfo = s_paraminfo;
    CUfunction k = (CUfunction)0x77;
    CUdeviceptr a = alloc(512), b = alloc(512);
    alloc(64); /* reached by no launch */
    CUstream s1 = (CUstream)0x51, s2 = (CUstream)0x52;
    int n = 64;
    CUdeviceptr arg0 = a;
    void *params[] = {&arg0, &n};
    struct atl_launch l = {.hook = ATL_ID_cuLaunchKernel,
                           .func = k,
                           .grid = {8, 1, 1},
                           .block = {64, 1, 1},
                           .stream = s1,
                           .params = params,
                           .rec = atl_krec_get(k),
                           .seq = 1};
    memset((char *)a + 512, 0, 3); /* launch 1 writes 3 bytes past a */
    launch_events(&l);
    ck_assert_int_eq(checks_queued, 1);
    ck_assert_ptr_eq(stream_of_check, s1);
    /* launch 2, on another stream, is given a pointer one past the end of b
     * and writes 7 bytes there */
    memset((char *)b + 512, 0, 7);
    arg0 = b + 512;
    l.seq = 2;
    l.stream = s2;
    l.grid[0] = 9;
    launch_events(&l);
    ck_assert_int_eq(checks_queued, 2);
    ck_assert_ptr_eq(stream_of_check, s2);
    ck_assert_int_eq(syncs, 0);    /* never waited */
    ck_assert_int_eq(launches, 0); /* no full scan either */
    ck_assert_msg(!strstr(read_log(), "redzone overrun"), "%s", read_log());
    /* the program synchronises: the verdicts are read, in order */
    struct atl_sync sy = {.hook = ATL_ID_cuCtxSynchronize, .kind = ATL_SYNC_CTX};
    atl_redzone_sync_post(&sy, CUDA_SUCCESS);
    const char *log = read_log();
    ck_assert_msg(strstr(log, "7 bytes corrupted at +512..+518\n"), "%s", log);
    ck_assert_msg(strstr(log, "redzone: culprit: launch#2 kernel=bad_kern(char*, int) grid=(9,1,1) "
                              "block=(64,1,1)\n"),
                  "%s", log);
    ck_assert_msg(strstr(log, "redzone: found by the check after launch#2 on stream 0x52, which "
                              "reached alloc#2 through arg0+0x0\n"),
                  "%s", log);
    ck_assert_int_eq(count_of(log, "redzone overrun"), 2);
    /* in the order the checks were queued, each naming its launch and stream */
    const char *first = strstr(log, "found by the check after launch#1 on stream 0x51, which "
                                    "reached alloc#1 through arg0+0x0\n");
    const char *second = strstr(log, "found by the check after launch#2 on stream 0x52");
    ck_assert_msg(first && second && first < second, "%s", log);
    const char *three = strstr(log, "3 bytes corrupted at +512..+514\n");
    ck_assert_msg(three && three < first, "%s", log);
}
END_TEST

#define WIDE 100

/* A one-block launch of k on stream 0x51 with these parameters. */
static struct atl_launch small_launch(CUfunction k, void **params)
{
    return (struct atl_launch){.hook = ATL_ID_cuLaunchKernel,
                               .func = k,
                               .grid = {1, 1, 1},
                               .block = {64, 1, 1},
                               .stream = (CUstream)0x51,
                               .params = params,
                               .rec = atl_krec_get(k)};
}

/* l, with alloc#1's red zone broken, queues one check (no full scan), whose verdict at the
 * next sync names launch#1 on stream 0x51 and how it reached alloc#1 (`through`). */
static void found_after_launch(struct atl_launch *l, const char *through)
{
    launch_events(l);
    ck_assert_int_eq(checks_queued, 1);
    ck_assert_int_eq(launches, 0); /* no full scan */
    struct atl_sync sy = {.hook = ATL_ID_cuCtxSynchronize, .kind = ATL_SYNC_CTX};
    atl_redzone_sync_post(&sy, CUDA_SUCCESS);
    const char *log = read_log();
    char want[160];
    snprintf(want, sizeof want,
             "redzone: found by the check after launch#1 on stream 0x51, which reached alloc#1 "
             "through %s\n",
             through);
    ck_assert_msg(strstr(log, want), "%s", log);
}

/* A kernel of more parameters than the flight recorder used to describe
 * (64): its record holds the whole layout, so the launch's check reaches
 * the zone through its last parameter, queued, instead of checking every
 * zone and waiting. */
START_TEST(launch_mode_wide_layout)
{
    async_on = 1;
    setup(2);
    wide = WIDE;
    atl_drv.cuFuncGetParamInfo = s_paraminfo;
    CUfunction k = (CUfunction)0x99;
    struct atl_krec *rec = atl_krec_get(k);
    ck_assert_ptr_nonnull(rec);
    ck_assert(rec->exact);
    ck_assert_uint_eq(rec->nparams, WIDE);
    CUdeviceptr a = alloc(512);
    int ints[WIDE - 1] = {0};
    void *params[WIDE];
    for (int i = 0; i < WIDE - 1; i++)
        params[i] = &ints[i];
    params[WIDE - 1] = &a;
    struct atl_launch l = small_launch(k, params);
    l.rec = rec, l.seq = 1;
    memset((char *)a + 512, 0, 2);
    found_after_launch(&l, "arg99+0x0");
}
END_TEST

/* An int at 0, a 20-byte struct at 4 (its 8-byte-aligned words 4 and 12
 * bytes in), a pointer at 24. */
static CUresult s_paraminfo_odd(CUfunction f, size_t i, size_t *off, size_t *size)
{
    static const size_t o[] = {0, 4, 24}, sz[] = {4, 20, 8};
    if (i >= 3)
        return CUDA_ERROR_INVALID_VALUE;
    *off = o[i];
    *size = sz[i];
    return CUDA_SUCCESS;
}

/* The record lists the layout's pointer-sized words once (8-byte-aligned in
 * the parameter block, inside structs too), and a launch's check reaches a
 * zone through them, named by parameter and offset as before. */
START_TEST(launch_mode_record_words)
{
    async_on = 1;
    setup(2);
    atl_drv.cuFuncGetParamInfo = s_paraminfo_odd;
    CUfunction k = (CUfunction)0x98;
    struct atl_krec *rec = atl_krec_get(k);
    ck_assert_ptr_nonnull(rec);
    ck_assert(rec->exact);
    ck_assert_ptr_nonnull(rec->words);
    ck_assert_uint_eq(rec->nwords, 3);
    ck_assert_uint_eq(rec->words[0].param, 1);
    ck_assert_uint_eq(rec->words[0].off, 4);
    ck_assert_uint_eq(rec->words[1].param, 1);
    ck_assert_uint_eq(rec->words[1].off, 12);
    ck_assert_uint_eq(rec->words[2].param, 2);
    ck_assert_uint_eq(rec->words[2].off, 0);
    CUdeviceptr a = alloc(512);
    int n = 7;
    unsigned char st[20] = {0};
    memcpy(st + 12, &a, sizeof a);
    CUdeviceptr none = 0;
    void *params[] = {&n, st, &none};
    struct atl_launch l = small_launch(k, params);
    l.seq = 1;
    memset((char *)a + 512, 0, 2);
    found_after_launch(&l, "arg1+0xc");
}
END_TEST

/* What a launch reaches is looked up through a cache of earlier answers;
 * the allocations behind them come and go. A zone that moved in the table
 * (a free moved another into its place), and a freed allocation's address
 * handed out again, with another zone in its old place in the table: each
 * launch's check reads the zone of the allocation its pointer is in now. */
START_TEST(launch_mode_reach_after_frees)
{
    async_on = 1;
    setup(2);
    atl_drv.cuFuncGetParamInfo = s_paraminfo;
    CUfunction k = (CUfunction)0x77;
    CUdeviceptr a = alloc(512), b = alloc(512); /* alloc#1, #2 */
    int n = 64;
    CUdeviceptr arg0 = b + 100;
    void *params[] = {&arg0, &n};
    struct atl_launch l = small_launch(k, params);
    l.seq = 1;
    launch_events(&l); /* b looked up, clean */
    free_dev(a);       /* b's zone moves into a's place */
    free((void *)a);
    CUdeviceptr c = alloc(512); /* alloc#3 */
    memset((char *)b + 512, 0, 4);
    l.seq = 2;
    launch_events(&l);
    /* d, reached by a launch, freed; e takes d's place in the table and f
     * d's address */
    char *mem = calloc(1, 512 + 256);
    CUdeviceptr d = alloc_at(512, mem); /* alloc#4 */
    arg0 = d;
    l.seq = 3;
    launch_events(&l);
    free_dev(d);
    CUdeviceptr e = alloc(512);         /* alloc#5 */
    CUdeviceptr f = alloc_at(512, mem); /* alloc#6 */
    ck_assert_uint_eq(f, d);
    memset((char *)f + 512, 0, 6);
    l.seq = 4;
    launch_events(&l);
    ck_assert_int_eq(checks_queued, 6); /* one after each launch, one before each free */
    ck_assert_int_eq(launches, 0);      /* every launch's zones known: no full scan */
    struct atl_sync sy = {.hook = ATL_ID_cuCtxSynchronize, .kind = ATL_SYNC_CTX};
    atl_redzone_sync_post(&sy, CUDA_SUCCESS);
    const char *log = read_log();
    ck_assert_int_eq(count_of(log, "redzone overrun"), 2);
    ck_assert_msg(strstr(log, "redzone overrun: alloc#2 512 bytes"), "%s", log);
    ck_assert_msg(strstr(log, "redzone: found by the check after launch#2 on stream 0x51, which "
                              "reached alloc#2 through arg0+0x0\n"),
                  "%s", log);
    ck_assert_msg(strstr(log, "redzone overrun: alloc#6 512 bytes"), "%s", log);
    ck_assert_msg(strstr(log, "redzone: found by the check after launch#4 on stream 0x51, which "
                              "reached alloc#6 through arg0+0x0\n"),
                  "%s", log);
    (void)c;
    (void)e;
}
END_TEST

/* Another thread's launch overran a zone and has not queued its check yet
 * (between its pre and post events) when this thread syncs: the full check
 * leaves the zone to that launch's check, which names it; with no launch in
 * flight a full check reports what no launch's check found. */
START_TEST(launch_mode_full_check_defers_to_launch_in_flight)
{
    async_on = 1;
    setup(2);
    atl_drv.cuFuncGetParamInfo = s_paraminfo;
    CUfunction k = (CUfunction)0x77;
    CUdeviceptr a = alloc(512), b = alloc(512); /* alloc#1, #2 */
    int n = 64;
    void *params[] = {&a, &n};
    struct atl_launch l = small_launch(k, params);
    l.seq = 7;
    struct atl_sync sy = {.hook = ATL_ID_cuStreamSynchronize, .kind = ATL_SYNC_STREAM};
    atl_redzone_launch_pre(&l);
    memset((char *)a + 512, 0, 2);            /* launch#7's kernel overruns a */
    atl_redzone_sync_post(&sy, CUDA_SUCCESS); /* another thread's sync */
    const char *log = read_log();
    ck_assert_msg(!strstr(log, "redzone overrun"), "%s", log);
    atl_redzone_launch_post(&l, CUDA_SUCCESS);
    atl_redzone_sync_post(&sy, CUDA_SUCCESS);
    log = read_log();
    ck_assert_int_eq(count_of(log, "redzone overrun"), 1);
    ck_assert_msg(strstr(log, "redzone: found by the check after launch#7 on stream 0x51, which "
                              "reached alloc#1 through arg0+0x0\n"),
                  "%s", log);
    /* b, which no launch reaches, overrun: found by the next full check */
    memset((char *)b + 512, 0, 3);
    atl_redzone_sync_post(&sy, CUDA_SUCCESS);
    log = read_log();
    ck_assert_int_eq(count_of(log, "redzone overrun"), 2);
    ck_assert_msg(strstr(log, "redzone: alloc#2 found at cuStreamSynchronize: "), "%s", log);
}
END_TEST

/* The ring of verdicts fills only when the program never synchronises: the
 * oldest check is then waited for (its stream), and not before. */
START_TEST(launch_mode_ring_full)
{
    async_on = 1;
    atl_cfg.redzone_recheck = 1; /* every launch is checked, though all are the same */
    setup(2);
    atl_drv.cuFuncGetParamInfo = s_paraminfo;
    CUfunction k = (CUfunction)0x77;
    CUdeviceptr a = alloc(512);
    int n = 64;
    void *params[] = {&a, &n};
    struct atl_launch l = small_launch(k, params);
    int i = 0;
    for (; syncs == 0 && i < 2000; i++) {
        l.seq = (uint64_t)i + 1;
        launch_events(&l);
    }
    /* the 1025th check found the ring (1024 slots) full */
    ck_assert_int_eq(i, 1025);
    ck_assert_int_eq(syncs, 1);
    ck_assert_int_eq(checks_queued, 1025);
    ck_assert_msg(!strstr(read_log(), "redzone overrun"), "%s", read_log());
}
END_TEST

/* Launch mode: 2,000 launches of one kernel with the same parameters on the same allocation:
 * checked at the 1st, 2nd, 4th, ... 1024th (11 checks), and one that differs (another value of
 * n) checked at once; with ATLAS_REDZONE_RECHECK=1, every one (launch_mode_ring_full). */
START_TEST(launch_mode_same_launch_checked_again_at_powers_of_two)
{
    async_on = 1;
    setup(2);
    atl_drv.cuFuncGetParamInfo = s_paraminfo;
    CUfunction k = (CUfunction)0x77;
    CUdeviceptr a = alloc(512);
    int n = 64;
    void *params[] = {&a, &n};
    struct atl_launch l = small_launch(k, params);
    for (int i = 0; i < 2000; i++) {
        l.seq = (uint64_t)i + 1;
        launch_events(&l);
    }
    ck_assert_int_eq(syncs, 0);
    ck_assert_int_eq(checks_queued, 11);
    n = 65;
    l.seq = 2001;
    launch_events(&l);
    ck_assert_int_eq(checks_queued, 12);
    ck_assert_msg(!strstr(read_log(), "redzone overrun"), "%s", read_log());
}
END_TEST

/* The value PyTorch's allocator variable takes when ATLAS_REDZONE_POOLS=route
 * routes it, as PyTorch's parser will read it: an empty option ("a,,b") is
 * refused there ("Unrecognized CachingAllocator option"), so the user's
 * trailing separators are not kept in front of the backend; a value of any
 * length is routed; a backend the user chose, spelled any way PyTorch reads
 * it, is left alone. */
static void conf_is(const char *old, const char *want)
{
    char *got = atl_pools_torch_conf(old);
    if (!want) {
        ck_assert_msg(got == NULL, "'%s' became '%s'", old ? old : "(unset)", got);
        return;
    }
    ck_assert_msg(got && strcmp(got, want) == 0, "'%s' became '%s', not '%s'",
                  old ? old : "(unset)", got ? got : "(nothing)", want);
    free(got);
}

START_TEST(pools_torch_conf_merge)
{
    conf_is(NULL, "backend:cudaMallocAsync");
    conf_is("", "backend:cudaMallocAsync");
    conf_is(" , ,", "backend:cudaMallocAsync");
    conf_is("expandable_segments:True", "expandable_segments:True,backend:cudaMallocAsync");
    conf_is("expandable_segments:True,", "expandable_segments:True,backend:cudaMallocAsync");
    conf_is("max_split_size_mb:64, \t", "max_split_size_mb:64,backend:cudaMallocAsync");
    conf_is("roundup_power2_divisions:[256:1,>:4]",
            "roundup_power2_divisions:[256:1,>:4],backend:cudaMallocAsync");
    conf_is("backend:native", NULL);
    conf_is("expandable_segments:True, backend:cudaMallocAsync", NULL);
    conf_is("backend::native", NULL);
    /* "backend" without a value chooses nothing (PyTorch reads no backend) */
    conf_is("xbackend:native", "xbackend:native,backend:cudaMallocAsync");
    /* 5,000 bytes: routed, whole */
    char big[6000] = "";
    for (int i = 0; i < 250; i++)
        strcat(big, "max_split_size_mb:51,");
    size_t n = strlen(big);
    char *got = atl_pools_torch_conf(big);
    ck_assert_ptr_nonnull(got);
    ck_assert_int_eq(strncmp(got, big, n - 1), 0);
    ck_assert_str_eq(got + n - 1, ",backend:cudaMallocAsync");
    free(got);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("redzone-unit");
    TCase *tc = tcase_create("gpu-path");
    tcase_add_test(tc, gpu_scan_finds_overrun);
    tcase_add_test(tc, launch_mode_names_culprit);
    tcase_add_test(tc, launch_mode_queued);
    tcase_add_test(tc, launch_mode_ring_full);
    tcase_add_test(tc, launch_mode_same_launch_checked_again_at_powers_of_two);
    tcase_add_test(tc, launch_mode_wide_layout);
    tcase_add_test(tc, launch_mode_record_words);
    tcase_add_test(tc, launch_mode_reach_after_frees);
    tcase_add_test(tc, launch_mode_full_check_defers_to_launch_in_flight);
    suite_add_tcase(s, tc);
    TCase *pools = tcase_create("pools");
    tcase_add_test(pools, pools_torch_conf_merge);
    suite_add_tcase(s, pools);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    unlink(logpath);
    return failed ? 1 : 0;
}
