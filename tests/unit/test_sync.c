/* Copy classification, directly through the engine API (no preload), with a
 * mock cuPointerGetAttribute: which copies block the host, which are hidden
 * syncs, and which are neither. Covers what the fake-driver tests do not
 * reach (peer copies, 2D/3D async, failed copies). */
#include "blocking.h"
#include "driver.h"
#include "dsk.h"
#include "engine.h"
#include "fault.h"
#include "flight.h"
#include "kernels.h"
#include "ring.h"
#include "step.h"
#include "thread.h"

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* device memory, pinned host memory, and everything else pageable */
#define DEV 0x10000000u
#define PINNED 0x30000000u
#define PAGEABLE 0x50000000u

static CUresult mock_attr(void *data, CUpointer_attribute a, CUdeviceptr p)
{
    if (a != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        return CUDA_ERROR_INVALID_VALUE;
    if (p >= DEV && p < DEV + 0x1000000u) {
        *(unsigned *)data = CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    }
    if (p >= PINNED && p < PINNED + 0x1000000u) {
        *(unsigned *)data = CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE; /* what the driver says of pageable memory */
}

static uint64_t c(enum atl_blocking_counter k)
{
    return atl_blocking_counter(k);
}

static void copy(struct atl_copy *cp, CUresult r)
{
    atl_copy_post(cp, r);
}

START_TEST(peer_and_generic)
{
    atl_drv.cuPointerGetAttribute = mock_attr;
    uint64_t peer = c(ATL_SC_PEER), pg = c(ATL_SC_ASYNC_D2H_PAGEABLE), mc = c(ATL_SC_MEMCPY),
             h2d = c(ATL_SC_ASYNC_H2D_PAGEABLE);
    struct atl_copy p1 = {.kind = ATL_CPY_PEER, .dst = DEV + 64, .src = DEV, .bytes = 8};
    copy(&p1, CUDA_SUCCESS); /* device to device: nothing */
    struct atl_copy p2 = {.kind = ATL_CPY_PEER, .dst = PAGEABLE, .src = DEV, .bytes = 8};
    copy(&p2, CUDA_SUCCESS); /* synchronous, device to host: blocking */
    struct atl_copy p3 = {
        .kind = ATL_CPY_PEER, .async = 1, .dst = PAGEABLE, .src = DEV, .bytes = 8};
    copy(&p3, CUDA_SUCCESS); /* async into pageable: blocking and hidden */
    struct atl_copy g1 = {
        .kind = ATL_CPY_GENERIC, .async = 1, .dst = DEV, .src = PINNED, .bytes = 8};
    copy(&g1, CUDA_SUCCESS); /* pinned upload: nothing */
    struct atl_copy g2 = {
        .kind = ATL_CPY_GENERIC, .async = 1, .dst = DEV, .src = PAGEABLE, .bytes = 8};
    copy(&g2, CUDA_SUCCESS); /* pageable upload: hidden */
    struct atl_copy g3 = {.kind = ATL_CPY_GENERIC, .dst = PINNED, .src = DEV, .bytes = 8};
    copy(&g3, CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(c(ATL_SC_PEER) - peer, 1);
    ck_assert_uint_eq(c(ATL_SC_ASYNC_D2H_PAGEABLE) - pg, 1);
    ck_assert_uint_eq(c(ATL_SC_ASYNC_H2D_PAGEABLE) - h2d, 1);
    ck_assert_uint_eq(c(ATL_SC_MEMCPY) - mc, 0); /* the failed copy is not counted */
}
END_TEST

START_TEST(two_and_three_d)
{
    atl_drv.cuPointerGetAttribute = mock_attr;
    uint64_t pg = c(ATL_SC_ASYNC_D2H_PAGEABLE), h2d = c(ATL_SC_ASYNC_H2D_PAGEABLE),
             d3 = c(ATL_SC_3D), peer = c(ATL_SC_PEER);
    CUDA_MEMCPY2D a = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                       .srcDevice = DEV,
                       .dstMemoryType = CU_MEMORYTYPE_HOST,
                       .dstHost = (void *)(uintptr_t)PINNED,
                       .WidthInBytes = 16,
                       .Height = 4};
    struct atl_copy c1 = {.kind = ATL_CPY_2D, .async = 1, .p2d = &a};
    copy(&c1, CUDA_SUCCESS); /* async into pinned: nothing */
    a.dstHost = (void *)(uintptr_t)PAGEABLE;
    copy(&c1, CUDA_SUCCESS); /* async into pageable: counted */
    CUDA_MEMCPY2D b = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                       .srcHost = (void *)(uintptr_t)PAGEABLE,
                       .dstMemoryType = CU_MEMORYTYPE_ARRAY,
                       .WidthInBytes = 16,
                       .Height = 4};
    struct atl_copy c2 = {.kind = ATL_CPY_2D, .async = 1, .p2d = &b};
    copy(&c2, CUDA_SUCCESS); /* pageable upload into an array: hidden */
    CUDA_MEMCPY3D d = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
                       .dstMemoryType = CU_MEMORYTYPE_UNIFIED,
                       .dstDevice = PINNED,
                       .WidthInBytes = 4,
                       .Height = 2,
                       .Depth = 2};
    struct atl_copy c3 = {.kind = ATL_CPY_3D, .p3d = &d};
    copy(&c3, CUDA_SUCCESS); /* synchronous array to host: blocking */
    CUDA_MEMCPY3D_PEER e = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                            .srcDevice = DEV,
                            .dstMemoryType = CU_MEMORYTYPE_HOST,
                            .dstHost = (void *)(uintptr_t)PINNED,
                            .WidthInBytes = 4,
                            .Height = 1,
                            .Depth = 1};
    struct atl_copy c4 = {.kind = ATL_CPY_3D_PEER, .p3dp = &e};
    copy(&c4, CUDA_SUCCESS);
    ck_assert_uint_eq(c(ATL_SC_ASYNC_D2H_PAGEABLE) - pg, 1);
    ck_assert_uint_eq(c(ATL_SC_ASYNC_H2D_PAGEABLE) - h2d, 1);
    ck_assert_uint_eq(c(ATL_SC_3D) - d3, 1);
    ck_assert_uint_eq(c(ATL_SC_PEER) - peer, 1);
}
END_TEST

/* The engine's one gate (engine.h): a feature whose init answered 0 gets no
 * events, and gets them again once it answers otherwise. */
START_TEST(a_feature_that_is_off_gets_no_events)
{
    atl_drv.cuPointerGetAttribute = mock_attr;
    struct atl_copy s = {
        .kind = ATL_CPY_DTOH, .host_dst = (void *)(uintptr_t)PAGEABLE, .src = DEV, .bytes = 8};
    uint64_t before = c(ATL_SC_DTOH);
    atl_engine_enable(ATL_FEAT_BLOCKING, 0);
    copy(&s, CUDA_SUCCESS);
    ck_assert_uint_eq(c(ATL_SC_DTOH) - before, 0);
    atl_engine_enable(ATL_FEAT_BLOCKING, ATL_ON_COPY);
    copy(&s, CUDA_SUCCESS);
    ck_assert_uint_eq(c(ATL_SC_DTOH) - before, 1);
}
END_TEST

/* The mock, counting its calls: a test that a copy does not query must be
 * able to see a query. */
static unsigned queries;
static CUresult counting_attr(void *data, CUpointer_attribute a, CUdeviceptr p)
{
    queries++;
    return mock_attr(data, a, p);
}

START_TEST(device_to_device_never_queries)
{
    atl_drv.cuPointerGetAttribute = counting_attr;
    queries = 0;
    uint64_t before = atl_blocking_d2h();
    struct atl_copy d = {.kind = ATL_CPY_DTOD, .dst = DEV, .src = DEV + 8, .bytes = 8};
    copy(&d, CUDA_SUCCESS);
    struct atl_copy s = {
        .kind = ATL_CPY_DTOH, .host_dst = (void *)(uintptr_t)PAGEABLE, .src = DEV, .bytes = 8};
    copy(&s, CUDA_SUCCESS); /* synchronous: blocking without asking */
    ck_assert_uint_eq(atl_blocking_d2h() - before, 1);
    ck_assert_uint_eq(queries, 0);
    /* and the counter does count: an async copy from device to a host
     * address asks whether the host side is pinned */
    struct atl_copy a = {.kind = ATL_CPY_DTOH,
                         .async = 1,
                         .host_dst = (void *)(uintptr_t)PAGEABLE,
                         .src = DEV,
                         .bytes = 8};
    copy(&a, CUDA_SUCCESS);
    ck_assert_uint_gt(queries, 0);
}
END_TEST

/* ---- ATLAS_DEBUG_SYNC_KERNELS, the one parser (src/dsk.h) ---------------------- */

START_TEST(dsk_values)
{
    const char *why;
    ck_assert_int_eq(atl_dsk_parse(NULL, &why), ATL_DSK_OFF);
    ck_assert_int_eq(atl_dsk_parse("off", &why), ATL_DSK_OFF);
    ck_assert_int_eq(atl_dsk_parse("YES", &why), ATL_DSK_ALL);
    ck_assert_int_eq(atl_dsk_parse("bad_kernel,_Z4goodPf", &why), ATL_DSK_LIST);
    ck_assert_int_eq(atl_dsk_parse("a,,b", &why), ATL_DSK_BAD);
    ck_assert_str_eq(why, "an empty kernel name in the list");
    ck_assert_int_eq(atl_dsk_parse("a b", &why), ATL_DSK_BAD);
    ck_assert_int_eq(atl_dsk_parse("a,", &why), ATL_DSK_BAD);
}
END_TEST

START_TEST(dsk_names)
{
    size_t n;
    const char *id = atl_dsk_ident("_Z10bad_kernelPfl", &n);
    ck_assert_int_eq((int)n, 10);
    ck_assert_int_eq(strncmp(id, "bad_kernel", n), 0);
    id = atl_dsk_ident("_ZN2ns5inner10bad_kernelEv", &n);
    ck_assert_int_eq(strncmp(id, "bad_kernel", n), 0);
    ck_assert_int_eq((int)n, 10);
    id = atl_dsk_ident("_Z10bad_kernelIiEvPT_", &n);
    ck_assert_int_eq(strncmp(id, "bad_kernel", n), 0);
    id = atl_dsk_ident("extern_c_kernel", &n);
    ck_assert_int_eq((int)n, 15);
    id = atl_dsk_ident("_Z99short", &n); /* a length past the end: the whole name */
    ck_assert_int_eq((int)n, 9);
    ck_assert(atl_dsk_match("x,bad_kernel", "_ZN2ns10bad_kernelEv"));
    ck_assert(atl_dsk_match("_Z10bad_kernelPfl", "_Z10bad_kernelPfl"));
    ck_assert(!atl_dsk_match("bad", "_Z10bad_kernelPfl"));
    ck_assert(!atl_dsk_match("bad_kernel_2", "_Z10bad_kernelPfl"));
}
END_TEST

/* ---- the flight recorder's kernel table (ring.h, flight.c) ------------------- */

/* Handles 16 bytes apart, as a driver's array of function objects gives them:
 * 5,000 of them make the table grow several times. */
static char handles[5000][16];

START_TEST(kernel_table_grows_forgets_and_probes_past_forgotten_keys)
{
    for (int i = 0; i < 5000; i++)
        atl_krec_get(handles[i]);
    for (int i = 0; i < 5000; i++) {
        ck_assert_ptr_nonnull(atl_ktab_find(atl_fl.ktab, handles[i]));
        ck_assert(!atl_ring_ready(handles[i])); /* no launch yet in this epoch */
    }
    atl_ring_first(handles[7], NULL, NULL, 1);
    ck_assert(atl_ring_ready(handles[7]));
    for (int i = 0; i < ATL_FLIGHT_COLD_SPACING; i++) /* launches that pay for its cold path */
        atl_ring_put(0, handles[7], NULL, 1, 1, 1, 1, 1, 1, 0);
    atl_flight_good_sync(ATL_SYNC_CTX, NULL, atl_fault_last_launch());
    ck_assert(!atl_ring_ready(handles[7])); /* a new epoch: the first launch again */
    for (int i = 0; i < 5000; i += 2)
        atl_kernels_forget(handles[i]);
    for (int i = 0; i < 5000; i++) {
        if (i % 2)
            ck_assert_ptr_nonnull(atl_ktab_find(atl_fl.ktab, handles[i]));
        else
            ck_assert_ptr_null(atl_ktab_find(atl_fl.ktab, handles[i]));
    }
    ck_assert(!atl_ring_ready(NULL));
}
END_TEST

/* A handle looked up again under another name (the driver reused it for a
 * kernel of another module, no unload seen): a record of its own, named
 * and described afresh, instead of the old kernel's layout under the new
 * name; the old record stays readable for whoever holds it. */
static unsigned stub_params;
static CUresult stub_paraminfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    if (i >= stub_params)
        return CUDA_ERROR_INVALID_VALUE;
    *off = i * 8;
    *size = 8;
    return CUDA_SUCCESS;
}

START_TEST(a_renamed_handle_gets_a_fresh_record)
{
    static char mod, h[16];
    struct atl_kernels_census c0, c;
    atl_kernels_census(&c0);
    atl_krec_pin(); /* the old record is read after it is replaced */
    atl_drv.cuFuncGetParamInfo = stub_paraminfo;
    stub_params = 3;
    struct atl_lookup l = {
        .kind = ATL_LOOKUP_MODULE_FUNCTION, .name = "_Z4widev", .owner = &mod, .result = h};
    atl_kernels_note_lookup(&l, CUDA_SUCCESS);
    struct atl_krec *wide = atl_krec_find(h);
    ck_assert_ptr_nonnull(wide);
    ck_assert_uint_eq(wide->nparams, 3);
    atl_kernels_note_lookup(&l, CUDA_SUCCESS); /* the same kernel again: the same record */
    ck_assert_ptr_eq(atl_krec_find(h), wide);
    stub_params = 1;
    l.name = "_Z6narrowv";
    atl_kernels_note_lookup(&l, CUDA_SUCCESS);
    struct atl_krec *narrow = atl_krec_find(h);
    ck_assert_ptr_nonnull(narrow);
    ck_assert_ptr_ne(narrow, wide);
    ck_assert(narrow->exact);
    ck_assert_uint_eq(narrow->nparams, 1);
    ck_assert_str_eq(atl_kernel_mangled(h), "_Z6narrowv");
    ck_assert_str_eq(atl_krec_mangled(wide), "_Z4widev");
    atl_kernels_census(&c);
    ck_assert_uint_eq(c.waiting, c0.waiting + 1); /* pinned: not freed */
    atl_krec_unpin();
    static char none;
    atl_kernels_forget(&none); /* any writer's call frees what nobody can reach */
    atl_kernels_census(&c);
    ck_assert_uint_eq(c.waiting, 0);
    ck_assert_uint_eq(c.records, c0.records + 1);
    atl_drv.cuFuncGetParamInfo = NULL;
}
END_TEST

/* The recorder's epoch (ring.h): a good sync starts a new one only while
 * the cold paths have a budget, so that syncs after every launch cannot
 * send every launch down the cold path: once the burst is spent, at most
 * one launch in ATL_FLIGHT_COLD_SPACING (1,024) takes it (every one did
 * before), and new epochs still start. */
START_TEST(the_cold_paths_keep_to_their_budget)
{
    static char k[4][16], drain[200][16];
    for (int i = 0; i < 200; i++) /* first launches: the burst spent */
        atl_ring_first(drain[i], NULL, NULL, atl_ring_put(0, drain[i], NULL, 1, 1, 1, 1, 1, 1, 0));
    atl_flight_good_sync(ATL_SYNC_CTX, NULL, atl_fault_last_launch());
    unsigned cold = 0;
    const unsigned n = 1000000;
    for (unsigned i = 0; i < n; i++) {
        void *f = k[i % 4];
        uint64_t seq = atl_ring_put(0, f, NULL, 1, 1, 1, 1, 1, 1, 0);
        if (!atl_ring_ready(f)) { /* the light path's test: the cold path */
            cold++;
            atl_ring_first(f, NULL, NULL, seq);
        }
        atl_flight_good_sync(i % 2 ? ATL_SYNC_STREAM : ATL_SYNC_CTX, NULL, atl_fault_last_launch());
    }
    ck_assert_uint_le(cold, n / ATL_FLIGHT_COLD_SPACING + 4);
    ck_assert_uint_ge(cold, 100); /* epochs still start */
}
END_TEST

/* ---- the kernel records' lifetime (kernels.h) ------------------------------------ */

/* The probe run of a key: how many entries past its home it sits. */
static unsigned probe_distance(const void *h)
{
    const struct atl_ktab *t = atl_fl.ktab;
    uint64_t home = (((uint64_t)(uintptr_t)h * ATL_KTAB_MUL) >> ATL_KTAB_SHIFT) & t->mask;
    struct atl_ktab_ent *e = atl_ktab_find(t, h);
    ck_assert_ptr_nonnull(e);
    uint64_t at = (uint64_t)((char *)e - (char *)t->e);
    return (unsigned)(((at - home) & t->mask) / ATL_KTAB_ENT);
}

/* A program that loads a module, looks a kernel up, launches it and unloads
 * it, 20,000 times, beside 256 kernels of a module it keeps: records are
 * freed (none waits), the table neither grows nor fills with forgotten keys
 * (the kept kernels sit as close to their home entries as before), and a
 * launch finds them as at the start. */
START_TEST(reload_cycles_keep_records_and_table_flat)
{
    static char kept_mod, mods[2], keep[256][16], fresh[64][16];
    struct atl_lookup l = {
        .kind = ATL_LOOKUP_MODULE_FUNCTION, .name = "_Z4keepv", .owner = &kept_mod};
    for (int i = 0; i < 256; i++) {
        l.result = keep[i];
        atl_kernels_note_lookup(&l, CUDA_SUCCESS);
    }
    unsigned before = 0;
    for (int i = 0; i < 256; i++)
        before += probe_distance(keep[i]);
    struct atl_kernels_census c0, c;
    atl_kernels_forget_owner(&mods[0]); /* earlier tests' records of unknown owner go now */
    atl_kernels_census(&c0);
    l.name = "_Z5freshv";
    for (int n = 0; n < 20000; n++) {
        /* a driver gives new modules new addresses, and kernels at a few */
        l.owner = &mods[n % 2], l.result = fresh[n % 64];
        atl_kernels_note_lookup(&l, CUDA_SUCCESS);
        atl_ring_first(l.result, NULL, NULL, atl_ring_put(0, l.result, NULL, 1, 1, 1, 1, 1, 1, 0));
        atl_kernels_forget_owner(l.owner);
    }
    atl_kernels_census(&c);
    ck_assert_uint_eq(c.records, c0.records);
    ck_assert_uint_eq(c.waiting, 0);
    ck_assert_uint_eq(c.live, c0.live);
    ck_assert_uint_eq(c.capacity, c0.capacity);
    ck_assert_uint_eq(c.tables, c0.tables);
    unsigned after = 0;
    for (int i = 0; i < 256; i++)
        after += probe_distance(keep[i]);
    ck_assert_uint_le(after, before);
    for (int i = 0; i < 256; i++)
        ck_assert_ptr_nonnull(atl_krec_find(keep[i]));
}
END_TEST

/* A thread that found a record (pinned) keeps it readable while an unload
 * on another thread takes it out of the table; it is freed at the first
 * writer's call after the pin goes. A reference (atl_krec_hold) keeps it
 * past the pin, until released. */
static pthread_barrier_t pin_bar;
static struct atl_krec *pinned_rec;
static void *pinning_thread(void *h)
{
    atl_krec_pin();
    pinned_rec = atl_krec_find(h);
    pthread_barrier_wait(&pin_bar); /* found */
    pthread_barrier_wait(&pin_bar); /* unloaded meanwhile */
    ck_assert_str_eq(atl_krec_mangled(pinned_rec), "_Z6pinnedv");
    atl_krec_unpin();
    return NULL;
}

START_TEST(a_pinned_or_held_record_outlives_its_unload)
{
    static char mod, h[16], other[16];
    struct atl_lookup l = {
        .kind = ATL_LOOKUP_MODULE_FUNCTION, .name = "_Z6pinnedv", .owner = &mod, .result = h};
    struct atl_kernels_census c0, c;
    atl_kernels_census(&c0);
    atl_kernels_note_lookup(&l, CUDA_SUCCESS);
    pthread_barrier_init(&pin_bar, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, pinning_thread, h);
    pthread_barrier_wait(&pin_bar);
    atl_kernels_forget_owner(&mod);
    atl_kernels_census(&c);
    ck_assert_uint_eq(c.live, c0.live);
    ck_assert_uint_eq(c.waiting, c0.waiting + 1);
    pthread_barrier_wait(&pin_bar);
    pthread_join(t, NULL);
    atl_kernels_forget(other);
    atl_kernels_census(&c);
    ck_assert_uint_eq(c.waiting, 0);
    ck_assert_uint_eq(c.records, c0.records);

    /* held: survives the pin's end until released */
    atl_kernels_note_lookup(&l, CUDA_SUCCESS);
    atl_krec_pin();
    struct atl_krec *r = atl_krec_find(h);
    atl_krec_hold(r);
    atl_krec_unpin();
    atl_kernels_forget_owner(&mod);
    atl_kernels_census(&c);
    ck_assert_uint_eq(c.waiting, 1);
    ck_assert_str_eq(atl_krec_mangled(r), "_Z6pinnedv");
    atl_krec_release(r); /* the last reference of a gone record frees it */
    atl_kernels_census(&c);
    ck_assert_uint_eq(c.waiting, 0);
    ck_assert_uint_eq(c.records, c0.records);
}
END_TEST

/* What keeps records past a pin without a reference of each (the step
 * trace's buffers: atl_krec_set_holders) counts as a pin: a record that
 * left at a later generation than the holder's oldest pin waits, and is
 * freed at the first writer's call once the holder shows none. A view
 * names its record (atl_krec_of_view), which a kept step holds. */
static uint64_t holder_pin;
static uint64_t holder_low(void)
{
    return holder_pin;
}

START_TEST(a_holder_without_references_keeps_what_it_found)
{
    static char mod, h[16], other[16];
    struct atl_lookup l = {
        .kind = ATL_LOOKUP_MODULE_FUNCTION, .name = "_Z4heldv", .owner = &mod, .result = h};
    struct atl_kernels_census c0, c;
    atl_kernels_census(&c0);
    atl_kernels_note_lookup(&l, CUDA_SUCCESS);
    atl_krec_set_holders(holder_low);
    atl_krec_pin();
    struct atl_krec *r = atl_krec_find(h);
    const struct atl_kfn *v = atl_krec_view(r, 0);
    ck_assert_ptr_eq(atl_krec_of_view(v), r);
    holder_pin = atl_krec_pin_gen(); /* as a buffer keeps an op of v */
    atl_krec_unpin();
    atl_kernels_forget_owner(&mod);
    atl_kernels_forget(other); /* a writer's call: frees what nobody keeps */
    atl_kernels_census(&c);
    ck_assert_uint_eq(c.waiting, c0.waiting + 1);
    ck_assert_str_eq(v->mangled, "_Z4heldv");
    holder_pin = 0; /* the buffer's ops went */
    atl_kernels_forget(other);
    atl_kernels_census(&c);
    ck_assert_uint_eq(c.waiting, c0.waiting);
    ck_assert_uint_eq(c.records, c0.records);
    atl_krec_set_holders(NULL);
}
END_TEST

/* The kernel audit's counts survive the unload of their module (issue #27:
 * they were read from records dropped at unload): the gone records' counts,
 * by owner and name, are in atl_kernels_each. */
struct audit_sum {
    uint64_t launches, blocks;
    int entries;
};
static void audit_sum(const struct atl_krec *k, void *ctx)
{
    struct audit_sum *s = ctx;
    if (k->name && strcmp(k->name, "_Z6countv") == 0)
        s->launches += k->launches, s->blocks += k->blocks, s->entries++;
}

START_TEST(gone_records_keep_their_audit_counts)
{
    static char mod, h[16];
    struct atl_lookup l = {
        .kind = ATL_LOOKUP_MODULE_FUNCTION, .name = "_Z6countv", .owner = &mod, .result = h};
    for (int cycle = 0; cycle < 3; cycle++) {
        atl_kernels_note_lookup(&l, CUDA_SUCCESS);
        struct atl_krec *r = atl_krec_find(h);
        r->launches += 7, r->blocks += 42;
        atl_kernels_forget_owner(&mod);
    }
    struct audit_sum s = {0};
    atl_kernels_each(audit_sum, &s);
    ck_assert_int_eq(s.entries, 1); /* one per owner and name, however many reloads */
    ck_assert_uint_eq(s.launches, 21);
    ck_assert_uint_eq(s.blocks, 126);
}
END_TEST

START_TEST(a_module_unload_forgets_its_kernels)
{
    static char mod_a, mod_b, fa[2][16], fb[16], fc[16];
    struct atl_lookup l = {.kind = ATL_LOOKUP_MODULE_FUNCTION, .name = "_Z2kav", .owner = &mod_a};
    for (int i = 0; i < 2; i++) {
        l.result = fa[i];
        atl_kernels_note_lookup(&l, CUDA_SUCCESS);
        atl_krec_get(fa[i]);
    }
    l.owner = &mod_b, l.result = fb, l.name = "_Z2kbv";
    atl_kernels_note_lookup(&l, CUDA_SUCCESS);
    atl_krec_get(fb);
    /* a kernel of unknown owner may be any module's: it goes too, as in the registry */
    l.owner = NULL, l.result = fc, l.name = "_Z2kcv";
    atl_kernels_note_lookup(&l, CUDA_SUCCESS);
    atl_krec_get(fc);
    atl_kernels_forget_owner(&mod_a);
    ck_assert_ptr_null(atl_ktab_find(atl_fl.ktab, fa[0]));
    ck_assert_ptr_null(atl_ktab_find(atl_fl.ktab, fa[1]));
    ck_assert_ptr_nonnull(atl_ktab_find(atl_fl.ktab, fb));
    ck_assert_ptr_null(atl_ktab_find(atl_fl.ktab, fc));
}
END_TEST

/* ---- the launch history (fault.h): the launches since number N ------------------ */

struct seen {
    uint64_t seq[128];
    void *obj[128];
    unsigned n;
};

static void note(const struct atl_ring_ent *e, void *ctx)
{
    struct seen *s = ctx;
    if (s->n < 128)
        s->seq[s->n] = e->seq, s->obj[s->n] = e->obj;
    s->n++;
}

START_TEST(the_history_answers_the_launches_since_n)
{
    /* no atl_fault_init: the ring before it, 64 slots */
    ck_assert_uint_eq(atl_fault_ring_slots(), 64);
    uint64_t base = atl_fault_last_launch();
    for (uintptr_t i = 1; i <= 10; i++)
        atl_ring_put(ATL_ID_cuLaunchKernel, (void *)i, NULL, 1, 1, 1, 1, 1, 1, 0);
    ck_assert_uint_eq(atl_fault_last_launch(), base + 10);

    struct seen s = {0};
    ck_assert_uint_eq(atl_fault_launches_since(base + 3, base + 10, 0, note, &s), 0);
    ck_assert_uint_eq(s.n, 7); /* 4 to 10, oldest first */
    for (unsigned i = 0; i < 7; i++) {
        ck_assert_uint_eq(s.seq[i], base + 4 + i);
        ck_assert_ptr_eq(s.obj[i], (void *)(uintptr_t)(4 + i));
    }
    memset(&s, 0, sizeof s);
    atl_fault_launches_since(base, base + 10, 2, note, &s); /* the newest two */
    ck_assert_uint_eq(s.n, 2);
    ck_assert_uint_eq(s.seq[0], base + 9);
    ck_assert_uint_eq(s.seq[1], base + 10);
    memset(&s, 0, sizeof s);
    ck_assert_uint_eq(atl_fault_launches_since(base + 10, base + 10, 0, note, &s), 0);
    ck_assert_uint_eq(s.n, 0);

    /* 100 more: the ring wraps, the oldest 110 - 64 of the window are lost */
    for (uintptr_t i = 11; i <= 110; i++)
        atl_ring_put(ATL_ID_cuLaunchKernel, (void *)i, NULL, 1, 1, 1, 1, 1, 1, 0);
    memset(&s, 0, sizeof s);
    ck_assert_uint_eq(atl_fault_launches_since(base, base + 110, 0, note, &s), 110 - 64);
    ck_assert_uint_eq(s.n, 64);
    ck_assert_uint_eq(s.seq[0], base + 110 - 63);
    ck_assert_uint_eq(s.seq[63], base + 110);
    /* a window inside what the ring holds loses nothing */
    memset(&s, 0, sizeof s);
    ck_assert_uint_eq(atl_fault_launches_since(base + 100, base + 110, 0, note, &s), 0);
    ck_assert_uint_eq(s.n, 10);
}
END_TEST

START_TEST(the_latch_takes_the_first_sticky_error_once)
{
    ck_assert(!atl_fault_is_sticky(CUDA_ERROR_INVALID_VALUE));
    ck_assert(atl_fault_is_sticky(CUDA_ERROR_ILLEGAL_ADDRESS));
    ck_assert_int_eq(atl_fault_latch(CUDA_SUCCESS), 0);
    ck_assert_int_eq(atl_fault_latch(CUDA_ERROR_INVALID_VALUE), 0);
    ck_assert_int_eq(atl_fault_latch(CUDA_ERROR_ILLEGAL_ADDRESS), 1);
    ck_assert_int_eq(atl_fault_latch(CUDA_ERROR_ILLEGAL_ADDRESS), 0);
    ck_assert_int_eq(atl_fault_latch(CUDA_ERROR_LAUNCH_FAILED), 0);
}
END_TEST

int main(void)
{
    /* the copies below go through the engine, which hands them to the
     * feature it was told is on (its init is not run: no settings here) */
    atl_engine_enable(ATL_FEAT_BLOCKING, ATL_ON_COPY);
    Suite *s = suite_create("sync-unit");
    TCase *tc = tcase_create("classify");
    tcase_add_test(tc, peer_and_generic);
    tcase_add_test(tc, two_and_three_d);
    tcase_add_test(tc, device_to_device_never_queries);
    tcase_add_test(tc, a_feature_that_is_off_gets_no_events);
    suite_add_tcase(s, tc);
    tc = tcase_create("flight");
    tcase_add_test(tc, dsk_values);
    tcase_add_test(tc, dsk_names);
    tcase_add_test(tc, kernel_table_grows_forgets_and_probes_past_forgotten_keys);
    tcase_add_test(tc, a_module_unload_forgets_its_kernels);
    tcase_add_test(tc, a_renamed_handle_gets_a_fresh_record);
    tcase_add_test(tc, the_cold_paths_keep_to_their_budget);
    tcase_add_test(tc, reload_cycles_keep_records_and_table_flat);
    tcase_add_test(tc, a_pinned_or_held_record_outlives_its_unload);
    tcase_add_test(tc, a_holder_without_references_keeps_what_it_found);
    tcase_add_test(tc, gone_records_keep_their_audit_counts);
    tcase_add_test(tc, the_history_answers_the_launches_since_n);
    tcase_add_test(tc, the_latch_takes_the_first_sticky_error_once);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
