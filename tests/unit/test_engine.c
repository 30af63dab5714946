/* The engine's shared modules, called directly (no preload, no driver). */
#include "addrmap.h"
#include "capture.h"
#include "config.h"
#include "engine.h"
#include "fault.h"
#include "kernels.h"
#include "ledger.h"
#include "stack.h"
#include "summary.h"
#include "trace.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct atl_alloc_rec rec(uint64_t seq, CUdeviceptr p, size_t bytes, size_t padded)
{
    struct atl_alloc_rec r = {.seq = seq, .ptr = p, .bytes = bytes, .padded = padded};
    return r;
}

START_TEST(ledger_finds_interior_pointers)
{
    atl_ledger_reset();
    struct atl_alloc_rec a = rec(1, 0x10000, 4096, 4096 + 256), b = rec(2, 0x20000, 100, 100),
                         c = rec(3, 0x8000, 16, 16), out;
    ck_assert_int_eq(atl_ledger_add(&a), 0);
    ck_assert_int_eq(atl_ledger_add(&b), 0);
    ck_assert_int_eq(atl_ledger_add(&c), 0);
    ck_assert(atl_ledger_find(0x10000, &out) && out.seq == 1);
    ck_assert(atl_ledger_find(0x10fff, &out) && out.seq == 1);
    ck_assert(atl_ledger_find(0x10000 + 4096 + 255, &out) && out.seq == 1); /* in the red zone */
    ck_assert(!atl_ledger_find(0x10000 + 4096 + 256, &out));
    ck_assert(atl_ledger_find(0x20063, &out) && out.seq == 2);
    ck_assert(!atl_ledger_find(0x20064, &out));
    ck_assert(!atl_ledger_find(0x7fff, &out));
    ck_assert(atl_ledger_find(0x8000, &out) && out.seq == 3);
    size_t bytes;
    ck_assert_uint_eq(atl_ledger_count(&bytes), 3);
    ck_assert_uint_eq(bytes, 4096 + 100 + 16);
    struct atl_alloc_rec snap[8];
    ck_assert_uint_eq(atl_ledger_snapshot(snap, 8), 3);
    ck_assert(snap[0].ptr < snap[1].ptr && snap[1].ptr < snap[2].ptr);
    ck_assert(atl_ledger_remove(0x10000, &out) && out.bytes == 4096);
    ck_assert(!atl_ledger_remove(0x10000, &out)); /* double free: unknown now */
    ck_assert(!atl_ledger_remove(0x20001, &out)); /* interior pointer is not a base */
    ck_assert(!atl_ledger_find(0x10010, &out));
    ck_assert_uint_eq(atl_ledger_count(&bytes), 2);
    ck_assert_uint_eq(bytes, 116);
}
END_TEST

/* A cuMemCreate allocation is kept by handle; an address inside any of
 * its mappings names it (alloc#N+0xOFF), and unmapping forgets only the
 * mappings. */
START_TEST(ledger_vmm_handles_and_mappings)
{
    atl_ledger_reset();
    struct atl_alloc_rec dev = rec(1, 0x500000, 4096, 4096), out;
    struct atl_alloc_rec h = {.seq = 2, .bytes = 2 << 20, .kind = ATL_ALLOC_VMM, .handle = 0xabc};
    ck_assert_int_eq(atl_ledger_add(&dev), 0);
    ck_assert_int_eq(atl_ledger_add_handle(&h), 0);
    ck_assert_int_eq(atl_ledger_map(0x10000000, 2 << 20, 0xabc), 1);
    ck_assert_int_eq(atl_ledger_map(0x20000000, 2 << 20, 0xabc), 1);
    ck_assert_int_eq(atl_ledger_map(0x30000000, 2 << 20, 0xdef), 0); /* unknown handle */
    ck_assert(atl_ledger_find(0x10000000 + 0x1234, &out) && out.seq == 2 && out.ptr == 0x10000000);
    ck_assert(atl_ledger_find(0x20000000 + (2 << 20) - 1, &out) && out.seq == 2);
    ck_assert(!atl_ledger_find(0x20000000 + (2 << 20), &out));
    ck_assert(!atl_ledger_find(0x30000000, &out));
    size_t bytes;
    ck_assert_uint_eq(atl_ledger_count(&bytes), 2); /* mappings are not allocations */
    ck_assert_uint_eq(bytes, 4096 + (2 << 20));
    ck_assert_uint_eq(atl_ledger_vmm_bytes(), 2 << 20);
    struct atl_alloc_rec snap[8];
    ck_assert_uint_eq(atl_ledger_snapshot(snap, 8), 2);
    ck_assert(snap[0].seq == 1 && snap[1].seq == 2 && snap[1].kind == ATL_ALLOC_VMM);
    char where[64];
    ck_assert_str_eq(atl_ledger_where(&snap[1], where, sizeof where),
                     "through cuMemCreate (handle 0xabc)");
    ck_assert(!atl_ledger_remove(0x10000000, &out)); /* a free of a mapped address */
    /* an unmap of a range covering the device allocation leaves it alone */
    ck_assert_uint_eq(atl_ledger_unmap(0x400000, 0x10000000 - 0x400000 + (2 << 20)), 1);
    ck_assert(!atl_ledger_find(0x10000000, &out));
    ck_assert(atl_ledger_find(0x500000, &out) && out.seq == 1);
    ck_assert(atl_ledger_find(0x20000000, &out) && out.seq == 2);
    ck_assert(atl_ledger_remove_handle(0xabc, &out) && out.seq == 2);
    ck_assert(!atl_ledger_remove_handle(0xabc, &out));
    ck_assert_uint_eq(atl_ledger_count(&bytes), 1);
    ck_assert_uint_eq(atl_ledger_vmm_bytes(), 0);
    ck_assert_uint_eq(atl_ledger_unmap(0x20000000, 2 << 20), 1);
    ck_assert(!atl_ledger_find(0x20000000, &out));
}
END_TEST

START_TEST(ledger_numbers_in_order)
{
    atl_ledger_reset();
    ck_assert_uint_eq(atl_ledger_next_seq(), 1);
    ck_assert_uint_eq(atl_ledger_next_seq(), 2);
    ck_assert_uint_eq(atl_ledger_next_seq(), 3);
}
END_TEST

START_TEST(ledger_many)
{
    atl_ledger_reset();
    for (int i = 0; i < 10000; i++) {
        /* inserted out of address order */
        CUdeviceptr p = 0x100000 + (CUdeviceptr)((i * 7919) % 10000) * 0x1000;
        struct atl_alloc_rec r = rec((uint64_t)i + 1, p, 0x800, 0x800);
        ck_assert_int_eq(atl_ledger_add(&r), 0);
    }
    struct atl_alloc_rec out;
    for (int k = 0; k < 10000; k += 37) {
        CUdeviceptr p = 0x100000 + (CUdeviceptr)k * 0x1000;
        ck_assert(atl_ledger_find(p + 0x7ff, &out) && out.ptr == p);
        ck_assert(!atl_ledger_find(p + 0x800, &out));
    }
}
END_TEST

/* The ledger against a plain array, through random adds, removes (the
 * tree rebalances on both), re-adds of live addresses and interior lookups. */
START_TEST(ledger_matches_reference)
{
    enum { SLOTS = 2048, ROUNDS = 30000 };
    static struct atl_alloc_rec ref[SLOTS]; /* slot i: address 0x100000 + i * 0x1000 */
    static int live[SLOTS];
    memset(live, 0, sizeof live);
    atl_ledger_reset();
    unsigned long long x = 12345;
    size_t nref = 0, bytes_ref = 0;
    for (int r = 0; r < ROUNDS; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int i = (int)(x % SLOTS);
        CUdeviceptr p = 0x100000 + (CUdeviceptr)i * 0x1000;
        struct atl_alloc_rec out;
        switch ((x >> 20) % 4) {
        case 0:
        case 1: { /* add, or re-add over a live record: the new one wins */
            size_t b = 1 + (size_t)((x >> 32) % 0xfff);
            struct atl_alloc_rec a = rec((uint64_t)r + 1, p, b, b);
            ck_assert_int_eq(atl_ledger_add(&a), 0);
            if (live[i])
                bytes_ref -= ref[i].bytes;
            else
                nref++;
            ref[i] = a;
            live[i] = 1;
            bytes_ref += b;
            break;
        }
        case 2: /* remove */
            ck_assert_int_eq(atl_ledger_remove(p, &out), live[i]);
            if (live[i]) {
                ck_assert_uint_eq(out.seq, ref[i].seq);
                bytes_ref -= ref[i].bytes;
                nref--;
                live[i] = 0;
            }
            break;
        default: { /* an address inside, or just past, slot i */
            CUdeviceptr a = p + (x >> 40) % 0x1000;
            int in = live[i] && a - p < ref[i].bytes;
            ck_assert_int_eq(atl_ledger_find(a, &out), in);
            if (in)
                ck_assert_uint_eq(out.seq, ref[i].seq);
        }
        }
    }
    size_t bytes;
    ck_assert_uint_eq(atl_ledger_count(&bytes), nref);
    ck_assert_uint_eq(bytes, bytes_ref);
    struct atl_alloc_rec *snap = malloc(SLOTS * sizeof *snap);
    ck_assert_ptr_nonnull(snap);
    ck_assert_uint_eq(atl_ledger_snapshot(snap, SLOTS), nref);
    size_t k = 0;
    for (int i = 0; i < SLOTS; i++)
        if (live[i]) {
            ck_assert_uint_eq(snap[k].ptr, ref[i].ptr); /* address order, nothing lost */
            ck_assert_uint_eq(snap[k].seq, ref[i].seq);
            k++;
        }
    ck_assert_uint_eq(atl_ledger_snapshot(snap, 3), nref < 3 ? nref : 3); /* bounded */
    free(snap);
    atl_ledger_reset();
    ck_assert_uint_eq(atl_ledger_count(NULL), 0);
}
END_TEST

/* The address map against a plain array, through puts, overwrites and
 * deletes that shift probe chains back. */
START_TEST(addrmap_matches_reference)
{
    enum { KEYS = 2048 };
    static size_t val[KEYS];
    static int in[KEYS];
    memset(in, 0, sizeof in);
    struct atl_addrmap m = {0};
    unsigned long long x = 777;
    for (int r = 0; r < 50000; r++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int i = (int)(x % KEYS);
        uint64_t key = 0x7f0000000000ULL + (uint64_t)i * 256; /* aligned, as bases are */
        size_t v;
        if ((x >> 33) % 3) {
            ck_assert_int_eq(atl_addrmap_put(&m, key, (size_t)r), 0);
            val[i] = (size_t)r;
            in[i] = 1;
        } else {
            ck_assert_int_eq(atl_addrmap_del(&m, key), in[i]);
            in[i] = 0;
        }
        int j = (int)((x >> 45) % KEYS);
        ck_assert_int_eq(atl_addrmap_get(&m, 0x7f0000000000ULL + (uint64_t)j * 256, &v), in[j]);
        if (in[j])
            ck_assert_uint_eq(v, val[j]);
    }
    size_t n = 0;
    for (int i = 0; i < KEYS; i++)
        n += (size_t)in[i];
    ck_assert_uint_eq(m.n, n);
    ck_assert_int_eq(atl_addrmap_put(&m, 0, 1), -1); /* 0 is the empty key */
    atl_addrmap_clear(&m);
    ck_assert_uint_eq(m.n, 0);
}
END_TEST

START_TEST(kernel_names_from_lookups)
{
    char buf[128];
    int mod, lib;
    void *fn = (void *)0x1234, *kern = (void *)0x5678, *kfn = (void *)0x9abc;
    struct atl_lookup l1 = {
        .kind = ATL_LOOKUP_MODULE_FUNCTION, .owner = &mod, .name = "_Z5scalePffj", .result = fn};
    atl_kernels_note_lookup(&l1, CUDA_SUCCESS);
    ck_assert_str_eq(atl_kernel_mangled(fn), "_Z5scalePffj");
    /* demangled through __cxa_demangle: this test links no C++ runtime, so
     * the engine must have found libstdc++.so.6 by itself (gcc's machines
     * all have it) */
    ck_assert_str_eq(atl_kernel_name(fn, buf, sizeof buf), "scale(float*, float, unsigned int)");
    struct atl_lookup l2 = {
        .kind = ATL_LOOKUP_LIBRARY_KERNEL, .owner = &lib, .name = "axpy", .result = kern};
    atl_kernels_note_lookup(&l2, CUDA_SUCCESS);
    struct atl_lookup l3 = {.kind = ATL_LOOKUP_KERNEL_FUNCTION, .owner = kern, .result = kfn};
    atl_kernels_note_lookup(&l3, CUDA_SUCCESS);
    ck_assert_str_eq(atl_kernel_mangled(kfn), "axpy");
    /* a failed lookup records nothing */
    struct atl_lookup l4 = {.kind = ATL_LOOKUP_MODULE_FUNCTION,
                            .owner = &mod,
                            .name = "nope",
                            .result = (void *)0x4444};
    atl_kernels_note_lookup(&l4, CUDA_ERROR_NOT_FOUND);
    ck_assert_ptr_null(atl_kernel_mangled((void *)0x4444));
    ck_assert_str_eq(atl_kernel_name((void *)0x4444, buf, sizeof buf), "kernel@0x4444");
}
END_TEST

/* The step trace reads a launch's kernel from the record its event carries:
 * a handle the driver gave to another kernel (looked up under another name,
 * with no unload seen) is traced under the new name, not the one the
 * tracer saw first. */
START_TEST(renamed_handle_traced_under_its_new_name)
{
    char path[] = "/tmp/atlas-engine-rename-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char file[64];
    snprintf(file, sizeof file, "ATLAS_TRACE_FILE=%s", path);
    char *env[] = {"ATLAS_TRACE=1", "ATLAS_STEP=api", file, NULL};
    atl_config_parse(&atl_cfg, env, NULL, NULL);
    ck_assert_uint_ne(atl_trace_init(), 0);
    int mod;
    void *h = (void *)0x7a00;
    const char *names[2] = {"_Z7first_kv", "_Z8second_kv"};
    for (int i = 0; i < 2; i++) {
        struct atl_lookup lk = {
            .kind = ATL_LOOKUP_MODULE_FUNCTION, .owner = &mod, .name = names[i], .result = h};
        atl_kernels_note_lookup(&lk, CUDA_SUCCESS);
        struct atl_launch l = {.func = h, .grid = {1, 1, 1}, .block = {1, 1, 1}};
        l.rec = atl_krec_get(h);
        atl_trace_api_step_begin("s");
        atl_trace_launch(&l, CUDA_SUCCESS);
        atl_trace_api_step_end();
    }
    atl_trace_exit();
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char text[4096];
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    unlink(path);
    ck_assert_msg(strstr(text, "\"kernel\":\"_Z7first_kv\""), "%s", text);
    ck_assert_msg(strstr(text, "\"kernel\":\"_Z8second_kv\""), "%s", text);
}
END_TEST

START_TEST(demangles)
{
    ck_assert_str_eq(atl_demangle("_ZN2at6native13reduce_kernelILi512ELi1EEEvv"),
                     "void at::native::reduce_kernel<512, 1>()");
    ck_assert_str_eq(atl_demangle("plain_c_kernel"), "plain_c_kernel");
    ck_assert_str_eq(atl_demangle("_Znot valid"), "_Znot valid");
}
END_TEST

/* A thread stopped while holding a lock the exit reports need (here: it
 * never lets go). The exit waits for it once, ATL_EXIT_WAIT_MS counted from
 * its start, then skips; later locks do not wait again. Check runs each test
 * in a child process, so the exit started here ends nothing else. */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t taken;

static void *hold_forever(void *arg)
{
    pthread_mutex_lock(&held);
    pthread_barrier_wait(&taken);
    for (;;)
        pause();
    return arg;
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

START_TEST(exit_lock_gives_up)
{
    pthread_t t;
    pthread_barrier_init(&taken, NULL, 2);
    pthread_create(&t, NULL, hold_forever, NULL);
    pthread_barrier_wait(&taken);
    atl_engine_init();
    double t0 = seconds();
    atl_engine_exit();
    ck_assert_int_eq(atl_exiting(), 1);
    ck_assert_int_eq(atl_exit_lock(&held, "a test report"), -1);
    double waited = seconds() - t0;
    ck_assert_msg(waited > ATL_EXIT_WAIT_MS / 1000.0 * 0.9 &&
                      waited < ATL_EXIT_WAIT_MS / 1000.0 + 2,
                  "waited %.2f s", waited);
    t0 = seconds();
    ck_assert_int_eq(atl_exit_lock(&held, NULL), -1);
    ck_assert_msg(seconds() - t0 < 0.5, "waited again: %.2f s", seconds() - t0);
    /* a free lock is still taken */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    ck_assert_int_eq(atl_exit_lock(&m, NULL), 0);
    pthread_mutex_unlock(&m);
}
END_TEST

/* The re-entrancy guard is per thread (struct atl_thread): a thread inside
 * the library passes its own hooks through, never another thread's. */
static int other_entered;
static void *enter_other(void *arg)
{
    (void)arg;
    other_entered = atl_self_enter();
    if (other_entered)
        atl_leave();
    return NULL;
}

START_TEST(reentrancy_is_per_thread)
{
    ck_assert_int_eq(atl_self_enter(), 1);
    ck_assert_int_eq(atl_self_enter(), 0); /* re-entered: pass through */
    pthread_t t;
    pthread_create(&t, NULL, enter_other, NULL);
    pthread_join(t, NULL);
    ck_assert_int_eq(other_entered, 1);
    atl_leave();
    ck_assert_int_eq(atl_self_enter(), 1);
    atl_leave();
}
END_TEST

/* The one tracker of open captures (src/capture.c): what each feature asks. */
static int other_forbids;
static void *ask_other(void *arg)
{
    (void)arg;
    other_forbids = atl_capture_forbids_sync();
    return NULL;
}
static int forbids_on_another_thread(void)
{
    pthread_t t;
    pthread_create(&t, NULL, ask_other, NULL);
    pthread_join(t, NULL);
    return other_forbids;
}

START_TEST(captures_one_tracker)
{
    CUstream s1 = (CUstream)0x100, s2 = (CUstream)0x200;
    ck_assert(!atl_capture_any() && !atl_capture_forbids_sync());
    /* global mode: every thread's synchronisation is forbidden */
    atl_capture_begun(s1, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ck_assert(atl_capture_any() && atl_capture_forbids_sync() && forbids_on_another_thread());
    /* thread-local: only this thread's */
    atl_capture_begun(s2, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    atl_capture_ending(s1);
    ck_assert(atl_capture_any() && atl_capture_forbids_sync() && !forbids_on_another_thread());
    /* ending a stream that never captured changes nothing */
    atl_capture_ending((CUstream)0x300);
    ck_assert(atl_capture_any() && atl_capture_forbids_sync());
    atl_capture_ending(s2);
    ck_assert(!atl_capture_any() && !atl_capture_forbids_sync());
    /* relaxed: open (ops ask whether their stream captures), syncs allowed;
     * the legacy form (-1) and the NULL stream count as global */
    atl_capture_begun(s1, CU_STREAM_CAPTURE_MODE_RELAXED);
    ck_assert(atl_capture_any() && !atl_capture_forbids_sync());
    atl_capture_begun(NULL, -1);
    ck_assert(forbids_on_another_thread());
    atl_capture_ending(NULL);
    atl_capture_ending(s1);
    ck_assert(!atl_capture_any() && !atl_capture_forbids_sync());
    /* the launches that went into a capture, by number: its window, on its
     * stream only, from its begin to its end */
    uint64_t before = atl_ring_put(0, NULL, s1, 1, 1, 1, 1, 1, 1, 0);
    atl_capture_begun(s2, CU_STREAM_CAPTURE_MODE_GLOBAL);
    uint64_t in = atl_ring_put(0, NULL, s2, 1, 1, 1, 1, 1, 1, 0);
    atl_capture_ending(s2);
    uint64_t after = atl_ring_put(0, NULL, s2, 1, 1, 1, 1, 1, 1, 0);
    ck_assert(atl_capture_held(s2, in));
    ck_assert(!atl_capture_held(s1, in) && !atl_capture_held(s2, after));
    ck_assert(!atl_capture_held(s2, before) && !atl_capture_held(s1, before));
}
END_TEST

/* The summary line's numbers and words: thousands separators, and singular for 1. */
START_TEST(summary_reads_right)
{
    char num[32], line[512];
    ck_assert_str_eq(atl_summary_number(0, num), "0");
    ck_assert_str_eq(atl_summary_number(999, num), "999");
    ck_assert_str_eq(atl_summary_number(2114, num), "2,114");
    ck_assert_str_eq(atl_summary_number(1000000, num), "1,000,000");
    ck_assert_str_eq(atl_summary_number(18446744073709551615ULL, num),
                     "18,446,744,073,709,551,615");
    struct atl_summary s = {.redzone = 1,
                            .overruns = 1,
                            .guarded = 2114,
                            .launches_counted = 1,
                            .launches = 1,
                            .leaks = 1,
                            .trace = 1,
                            .steps = 40,
                            .differ = 3,
                            .copies = 17,
                            .sites_counted = 1,
                            .sites = 3,
                            .syncs = 1};
    atl_summary_format(&s, line, sizeof line);
    ck_assert_str_eq(line, "summary: 1 overrun in 2,114 guarded allocations, 0 faults in 1 launch, "
                           "0 leaks, 3 of 40 steps differ, 17 blocking copies from 3 sites, "
                           "1 host sync");
    s = (struct atl_summary){.redzone = 1,
                             .overruns = 2,
                             .guarded = 1,
                             .quarantine = 1,
                             .after_free = 1,
                             .faults = 1,
                             .debug_sync = 1,
                             .synced = 1,
                             .leaks = 1,
                             .leaked = 1,
                             .leaked_allocs = 1,
                             .leaked_bytes = 4096,
                             .races = 1,
                             .race_count = 1,
                             .trace = 1,
                             .steps = 1,
                             .differ = 1,
                             .copies = 1,
                             .sites_counted = 1,
                             .sites = 1,
                             .syncs = 2};
    atl_summary_format(&s, line, sizeof line);
    ck_assert_str_eq(line, "summary: 2 overruns in 1 guarded allocation, 1 write after free, "
                           "1 fault (1 synchronised), 1 leak (4,096 bytes), 1 race, 1 of 1 step "
                           "differs, 1 blocking copy from 1 site, 2 host syncs");
    /* leaks are call stacks (findings) and their allocations; suppressed findings apart, once
     * suppression files were read */
    s = (struct atl_summary){.leaks = 1,
                             .leaked = 2,
                             .leaked_allocs = 1002,
                             .leaked_bytes = 4100096,
                             .suppressions = 1,
                             .suppressed = 1};
    atl_summary_format(&s, line, sizeof line);
    ck_assert_str_eq(line, "summary: 0 faults, 2 leaks (1,002 allocations, 4,100,096 bytes), 0 "
                           "blocking copies, 0 host syncs, 1 finding suppressed");
    s = (struct atl_summary){.suppressions = 1};
    atl_summary_format(&s, line, sizeof line);
    ck_assert_str_eq(line, "summary: 0 faults, 0 blocking copies, 0 host syncs, 0 findings "
                           "suppressed");
    s = (struct atl_summary){.trace = 1};
    atl_summary_format(&s, line, sizeof line);
    ck_assert_str_eq(line, "summary: 0 faults, no step recorded, 0 blocking copies, 0 host syncs");
    atl_summary_format(NULL, line, sizeof line);
    ck_assert_str_eq(
        line, "summary: no CUDA driver call was made in this process, so nothing was watched");
    /* cut short, never past the buffer */
    char small[24];
    atl_summary_format(&s, small, sizeof small);
    ck_assert_uint_lt(strlen(small), sizeof small);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("shared");
    tcase_add_test(tc, ledger_finds_interior_pointers);
    tcase_add_test(tc, ledger_vmm_handles_and_mappings);
    tcase_add_test(tc, ledger_numbers_in_order);
    tcase_add_test(tc, ledger_many);
    tcase_add_test(tc, ledger_matches_reference);
    tcase_add_test(tc, addrmap_matches_reference);
    tcase_add_test(tc, kernel_names_from_lookups);
    tcase_add_test(tc, renamed_handle_traced_under_its_new_name);
    tcase_add_test(tc, demangles);
    tcase_add_test(tc, summary_reads_right);
    tcase_add_test(tc, reentrancy_is_per_thread);
    tcase_add_test(tc, exit_lock_gives_up);
    tcase_add_test(tc, captures_one_tracker);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
