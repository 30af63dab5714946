/*
 * The step diff, driven directly (no preload, no driver): what a person
 * reads in the report for each kind of change, that the JSON lines read back
 * into the same steps, and that a million-op step diffs fast enough to run
 * at every step end.
 */
#include "hostmap.h"
#include "jsonw.h"
#include "tracediff.h"
#include "tracejson.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The report lines of one diff, joined. */
static char out[1 << 16];
static int nlines;

static void collect(void *ctx, const char *text)
{
    (void)ctx;
    size_t l = strlen(out);
    snprintf(out + l, sizeof out - l, "%s\n", text);
    nlines++;
}

static int pointers = ATL_PTRS_ALL; /* ATLAS_DIFF_POINTERS for diff() */

static size_t diff(const struct atl_step *a, const struct atl_step *b, unsigned max,
                   const struct atl_ignore *ig)
{
    out[0] = '\0';
    nlines = 0;
    struct atl_diff_opts o = {
        .max_lines = max, .ignore = ig, .pointers = pointers, .line = collect};
    return atl_step_diff(a, b, &o, NULL);
}

static const struct atl_kfn *kfn_ptr_int(void)
{
    static const uint32_t off[] = {0, 8}, size[] = {8, 4};
    return atl_kfn_intern("_Z4stepPfi", "step(float*, int)", 2, off, size);
}

static void push_launch(struct atl_step *s, const struct atl_kfn *k, uint64_t ptr, int v,
                        unsigned grid)
{
    uint8_t bytes[16] = {0};
    memcpy(bytes, &ptr, 8);
    memcpy(bytes + 8, &v, 4);
    struct atl_op o = {.kind = ATL_OP_LAUNCH, .stream = 0x10};
    o.u.k.kfn = k;
    o.u.k.bytes = (uintptr_t)bytes;
    o.u.k.grid[0] = grid, o.u.k.grid[1] = o.u.k.grid[2] = 1;
    o.u.k.block[0] = 128, o.u.k.block[1] = o.u.k.block[2] = 1;
    ck_assert_int_eq(atl_step_push(s, &o), 0);
}

static void push_memset(struct atl_step *s, uint64_t ptr)
{
    struct atl_op o = {.kind = ATL_OP_MEMSET, .sub = 4, .stream = 0x10};
    o.u.m.ptr = ptr, o.u.m.count = 64;
    ck_assert_int_eq(atl_step_push(s, &o), 0);
}

START_TEST(identical_steps_print_nothing)
{
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    for (int i = 0; i < 10; i++) {
        push_launch(&a, kfn_ptr_int(), 0x1000, i, 4);
        push_launch(&b, kfn_ptr_int(), 0x1000, i, 4);
    }
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 0);
    ck_assert_int_eq(nlines, 0);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

START_TEST(scalar_change_names_the_argument)
{
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    a.nth = 1, b.nth = 2;
    push_launch(&a, kfn_ptr_int(), 0x1000, 41, 4);
    push_launch(&b, kfn_ptr_int(), 0x1000, 42, 4);
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 1);
    ck_assert_msg(
        strstr(out, "op 0 step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x29 -> 0x2a (delta +1)"),
        "%s", out);
    ck_assert_msg(strstr(out, "step \"s\" #2"), "%s", out);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

START_TEST(negative_delta_of_small_value)
{
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    push_launch(&a, kfn_ptr_int(), 0x1000, 0, 4);
    push_launch(&b, kfn_ptr_int(), 0x1000, -1, 4);
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 1);
    ck_assert_msg(strstr(out, "0x0 -> 0xffffffff (delta -1)"), "%s", out);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

START_TEST(pointer_resolution_reads_differently)
{
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    push_launch(&a, kfn_ptr_int(), 0x10000, 1, 4);
    push_launch(&a, kfn_ptr_int(), 0x20000, 1, 4);
    push_launch(&b, kfn_ptr_int(), 0x10040, 1, 4); /* same buffer, +0x40 */
    push_launch(&b, kfn_ptr_int(), 0x90000, 1, 4); /* another buffer */
    atl_step_annotate(&a, 0, 0, 3, 0);
    atl_step_annotate(&a, 1, 0, 4, 0);
    atl_step_annotate(&b, 0, 0, 3, 0x40);
    atl_step_annotate(&b, 1, 0, 9, 0);
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 2);
    ck_assert_msg(strstr(out, "arg0 @0x0 (8 bytes): 0x10000 alloc#3+0x0 -> 0x10040 alloc#3+0x40 "
                              "(delta +64): same buffer, another offset"),
                  "%s", out);
    ck_assert_msg(
        strstr(out, "0x20000 alloc#4+0x0 -> 0x90000 alloc#9+0x0 (delta +458752): another buffer"),
        "%s", out);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

/* Host values first: a scalar that changed in a later op is printed before
 * a pointer of an earlier one; a pointer that moved within its allocation
 * is collapsed by default, or not reported (none). */
START_TEST(findings_ranked_and_collapsed)
{
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    push_launch(&a, kfn_ptr_int(), 0x10000, 1, 4);
    push_launch(&a, kfn_ptr_int(), 0x20000, 1, 4);
    push_launch(&a, kfn_ptr_int(), 0x30000, 5, 4);
    push_memset(&a, 0x20000);
    push_launch(&b, kfn_ptr_int(), 0x10040, 1, 4); /* same buffer, +0x40 */
    push_launch(&b, kfn_ptr_int(), 0x90000, 1, 4); /* another buffer */
    push_launch(&b, kfn_ptr_int(), 0x30000, 6, 8); /* scalar and grid */
    push_memset(&b, 0x20010);                      /* same buffer, +0x10 */
    atl_step_annotate(&a, 0, 0, 3, 0);
    atl_step_annotate(&a, 1, 0, 4, 0);
    atl_step_annotate(&a, 3, ATL_ANN_DST, 4, 0);
    atl_step_annotate(&b, 0, 0, 3, 0x40);
    atl_step_annotate(&b, 1, 0, 9, 0);
    atl_step_annotate(&b, 3, ATL_ANN_DST, 4, 0x10);
    pointers = ATL_PTRS_COLLAPSE;
    /* three host values; the collapsed line is printed but is no host value (allocator reuse) */
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 3);
    const char *scalar =
        strstr(out, "op 2 step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x5 -> 0x6");
    const char *grid = strstr(out, "op 2 step(float*, int) [launch] grid: (4,1,1) -> (8,1,1)");
    const char *other = strstr(out, "op 1 step(float*, int) [launch] arg0 @0x0 (8 bytes): 0x20000 "
                                    "alloc#4+0x0 -> 0x90000 alloc#9+0x0 (delta +458752): another "
                                    "buffer");
    const char *moved = strstr(out, "  2 pointer arguments moved within their allocations "
                                    "(allocator reuse): step arg0, memset ptr\n");
    ck_assert_msg(scalar && grid && other && moved, "%s", out);
    ck_assert_msg(scalar < grid && grid < other && other < moved, "%s", out);
    ck_assert_int_eq(nlines, 5); /* the header and four */
    /* ATLAS_DIFF_MAX counts the ranked lines: the scalar is the one shown */
    ck_assert_uint_eq(diff(&a, &b, 1, NULL), 3);
    ck_assert_msg(strstr(out, "arg1 @0x8 (4 bytes): 0x5 -> 0x6") &&
                      strstr(out, "... 3 more differences not shown"),
                  "%s", out);
    pointers = ATL_PTRS_NONE;
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 3);
    ck_assert_msg(!strstr(out, "allocator reuse") && !strstr(out, "alloc#3"), "%s", out);
    pointers = ATL_PTRS_ALL;
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 5);
    ck_assert_msg(strstr(out, "memset] ptr: 0x20000 alloc#4+0x0 -> 0x20010 alloc#4+0x10: same "
                              "buffer, another offset"),
                  "%s", out);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

/* The frozen-value summary: one line per parameter that changed, with the
 * shape of its changes. */
START_TEST(frozen_value_summary)
{
    struct atl_diff_stats st;
    memset(&st, 0, sizeof st);
    struct atl_diff_opts o = {.max_lines = 20, .line = collect};
    static const uint32_t off[] = {0, 4, 8}, size[] = {4, 4, 4};
    const struct atl_kfn *k = atl_kfn_intern("_Z3tri", "tri(int, int, int)", 3, off, size);
    struct atl_step s[6];
    for (int i = 0; i < 6; i++) {
        /* arg0: 100 + i; arg1: 1, 2, 1, 2, ...; arg2: no pattern */
        static const int noise[] = {5, 90, 7, 3000, 12, 8};
        int v[3] = {100 + i, 1 + i % 2, noise[i]};
        atl_step_init(&s[i], "s");
        s[i].index = (uint64_t)i + 1;
        struct atl_op op = {.kind = ATL_OP_LAUNCH};
        op.u.k.kfn = k;
        op.u.k.bytes = (uintptr_t)v;
        ck_assert_int_eq(atl_step_push(&s[i], &op), 0);
        ck_assert_int_eq(atl_step_push(&s[i], &op), 0); /* twice a step: counted once */
        if (i)
            atl_step_diff(&s[i - 1], &s[i], &o, &st);
    }
    out[0] = '\0';
    atl_diff_summary(&st, collect, NULL);
    ck_assert_msg(
        strstr(out, "frozen value: tri arg0 changed in 5 steps: +1 per step (0x64 -> 0x69)"), "%s",
        out);
    ck_assert_msg(strstr(out, "frozen value: tri arg1 changed in 5 steps: alternates between 2 "
                              "values (0x1, 0x2)"),
                  "%s", out);
    ck_assert_msg(strstr(out, "frozen value: tri arg2 changed in 5 steps: random (0x5 first, 0x8 "
                              "last)"),
                  "%s", out);
    for (int i = 0; i < 6; i++)
        atl_step_free(&s[i]);
}
END_TEST

START_TEST(grid_change)
{
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    push_launch(&a, kfn_ptr_int(), 0x1000, 1, 4);
    push_launch(&b, kfn_ptr_int(), 0x1000, 1, 8);
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 1);
    ck_assert_msg(strstr(out, "grid: (4,1,1) -> (8,1,1)"), "%s", out);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

START_TEST(insert_in_the_middle_reports_only_it)
{
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    for (int i = 0; i < 1000; i++) {
        if (i == 500)
            push_memset(&b, 0x5000);
        push_launch(&a, kfn_ptr_int(), 0x1000, i, 4);
        push_launch(&b, kfn_ptr_int(), 0x1000, i, 4);
    }
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 1);
    ck_assert_msg(strstr(out, "op 500 inserted: memset ptr=0x5000"), "%s", out);
    ck_assert_msg(strstr(out, "1001 ops (was 1000, +1)"), "%s", out);
    ck_assert_int_eq(nlines, 2); /* the header and the insertion */
    /* and the other way round */
    ck_assert_uint_eq(diff(&b, &a, 20, NULL), 1);
    ck_assert_msg(strstr(out, "op 500 of the previous step removed"), "%s", out);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

START_TEST(big_by_value_parameter_one_byte)
{
    static const uint32_t off[] = {0, 8}, size[] = {8, 128};
    const struct atl_kfn *k = atl_kfn_intern("_Z4blobPf4Blob", "blob(float*, Blob)", 2, off, size);
    uint8_t pa[136], pb[136];
    memset(pa, 0x22, sizeof pa);
    memcpy(pb, pa, sizeof pb);
    pb[8 + 67] = 0x23; /* byte 67 of the struct: in its 9th word (+0x40) */
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    struct atl_op o = {.kind = ATL_OP_LAUNCH};
    o.u.k.kfn = k;
    o.u.k.bytes = (uintptr_t)pa;
    atl_step_push(&a, &o);
    o.u.k.bytes = (uintptr_t)pb;
    atl_step_push(&b, &o);
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 1);
    ck_assert_msg(
        strstr(out, "arg1+0x40 @0x48 (8 of 128 bytes): 0x2222222222222222 -> 0x2222222223222222"),
        "%s", out);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

START_TEST(diff_max_and_ignore)
{
    static const uint32_t off[] = {0, 4, 8, 12, 16, 20, 24, 28}, size[] = {4, 4, 4, 4, 4, 4, 4, 4};
    const struct atl_kfn *k = atl_kfn_intern(
        "_Z5eightiiiiiiii", "eight(int, int, int, int, int, int, int, int)", 8, off, size);
    int va[8], vb[8];
    for (int i = 0; i < 8; i++)
        va[i] = i, vb[i] = i + 100;
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    struct atl_op o = {.kind = ATL_OP_LAUNCH};
    o.u.k.kfn = k;
    o.u.k.bytes = (uintptr_t)va;
    atl_step_push(&a, &o);
    o.u.k.bytes = (uintptr_t)vb;
    atl_step_push(&b, &o);
    ck_assert_uint_eq(diff(&a, &b, 3, NULL), 8);
    ck_assert_int_eq(nlines, 1 + 3 + 1);
    ck_assert_msg(strstr(out, "... 5 more differences not shown (ATLAS_DIFF_MAX=3)"), "%s", out);

    struct atl_ignore ig;
    atl_ignore_parse(&ig, "eight:arg0,eight:arg7,other");
    ck_assert_uint_eq(diff(&a, &b, 20, &ig), 6);
    ck_assert_ptr_null(strstr(out, "arg0 "));
    ck_assert_ptr_null(strstr(out, "arg7 "));
    ck_assert_ptr_nonnull(strstr(out, "arg6 "));
    atl_ignore_free(&ig);
    atl_ignore_parse(&ig, "_Z5eightiiiiiiii"); /* the mangled name, whole kernel */
    ck_assert_uint_eq(diff(&a, &b, 20, &ig), 0);
    ck_assert_int_eq(nlines, 0);
    atl_ignore_free(&ig);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

static struct atl_step got[4];
static int ngot;
static int keep(void *ctx, struct atl_step *s)
{
    (void)ctx;
    if (ngot < 4)
        got[ngot++] = *s;
    else
        atl_step_free(s);
    return 0;
}

/* Reads the steps written to f (and closes it) into got[]: `want` of them. */
static void read_back(FILE *f, int want)
{
    rewind(f);
    char err[256] = "";
    ngot = 0;
    ck_assert_msg(atl_trace_read(f, keep, NULL, err, sizeof err) == 0, "%s", err);
    fclose(f);
    ck_assert_int_eq(ngot, want);
}

/* Writes s as JSON lines and reads them back into got[0]. */
static void write_read(const struct atl_step *s)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    atl_step_write_json(s, f, atl_host_addr);
    read_back(f, 1);
}

START_TEST(json_lines_round_trip)
{
    struct atl_step a;
    /* quotes, backslashes, a control byte, UTF-8 (é), a lone Latin-1 byte and DEL: every
     * byte reads back as written (src/jsonesc.h) */
    atl_step_init(&a, "we\"ird\\name\x01" "caf\xc3\xa9 \xe9\x7f");
    a.index = 7;
    static const uint32_t off[] = {0, 8}, size[] = {8, 4};
    const struct atl_kfn *k = atl_kfn_intern("_Z1qPfi\"x\xff", NULL, 2, off, size);
    push_launch(&a, kfn_ptr_int(), 0x1000, 5, 4);
    push_launch(&a, k, 0x2000, 6, 2);
    push_memset(&a, 0x3000);
    struct atl_op c = {.kind = ATL_OP_COPY, .sub = ATL_DIR_DTOH};
    c.u.c.dst = 0x4000, c.u.c.src = 0x5000, c.u.c.w = 64, c.u.c.h = 2, c.u.c.d = 1;
    atl_step_push(&a, &c);
    struct atl_op g = {.kind = ATL_OP_GRAPH};
    g.u.g.exec = 0xabc;
    atl_step_push(&a, &g);
    atl_step_annotate(&a, 0, 0, 12, 0x10);

    write_read(&a);
    ck_assert_str_eq(got[0].name, "we\"ird\\name\x01" "caf\xc3\xa9 \xe9\x7f");
    ck_assert_uint_eq(got[0].index, 7);
    ck_assert_uint_eq(got[0].nops, 5);
    ck_assert_str_eq(got[0].ops[1].u.k.kfn->mangled, "_Z1qPfi\"x\xff");
    const struct atl_ann *an = atl_step_ann(&got[0], 0, 0);
    ck_assert_ptr_nonnull(an);
    ck_assert_uint_eq(an->seq, 12);
    ck_assert_uint_eq(an->off, 0x10);
    /* what was written is what was read: the diff finds nothing */
    ck_assert_uint_eq(diff(&a, &got[0], 20, NULL), 0);
    ck_assert_uint_eq(got[0].ops[3].u.c.w, 64);
    ck_assert_uint_eq(got[0].ops[3].u.c.h, 2);
    ck_assert_uint_eq(got[0].ops[4].u.g.exec, 0xabc);
    atl_step_free(&got[0]);
    atl_step_free(&a);
}
END_TEST

/* The JSON lines of s, in buf (NUL-terminated). */
static void json_text(const struct atl_step *s, char *buf, size_t len)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    atl_step_write_json(s, f, atl_host_addr);
    rewind(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* A kernel with two pointers and a by-value array of three words (PyTorch's
 * tensor lists), then a scalar: pointer-sized words at 0, 8, 16, 24, 32. */
static const struct atl_kfn *kfn_lists(void)
{
    static const uint32_t off[] = {0, 8, 16, 40}, size[] = {8, 8, 24, 4};
    return atl_kfn_intern("_Z5listsPfS_3arri", "lists(float*, float*, arr, int)", 4, off, size);
}

/* A one-block launch of k with these parameter bytes. */
static void push_one_block(struct atl_step *s, const struct atl_kfn *k, const uint8_t *bytes)
{
    struct atl_op o = {.kind = ATL_OP_LAUNCH, .stream = 0x10};
    o.u.k.kfn = k;
    o.u.k.bytes = (uintptr_t)bytes;
    o.u.k.grid[0] = o.u.k.grid[1] = o.u.k.grid[2] = 1;
    o.u.k.block[0] = o.u.k.block[1] = o.u.k.block[2] = 1;
    ck_assert_int_eq(atl_step_push(s, &o), 0);
}

static void push_lists(struct atl_step *s, const uint64_t w[5], int v)
{
    uint8_t bytes[44] = {0};
    memcpy(bytes, w, 40);
    memcpy(bytes + 40, &v, 4);
    push_one_block(s, kfn_lists(), bytes);
}

/* One step, its notes held both ways: as spans (what the live tracer keeps:
 * the allocations only) and as a list (read from a file). Both name the
 * same words, iterate alike, write the same JSON lines and diff alike. */
static void two_forms(struct atl_step *sp, struct atl_step *li, int v)
{
    atl_step_init(sp, "s"), atl_step_init(li, "s");
    /* allocations: #3 [0x100000, 0x110000), #7 [0x200000, 0x200100) */
    const uint64_t w0[5] = {0x100000, 0x200010, 0x10fff8, 0x300000, 0x8000};
    const uint64_t w1[5] = {0x200000, 0x1000, 0x200100, 0x100040, 0x100000};
    for (int pass = 0; pass < 2; pass++) {
        struct atl_step *s = pass ? li : sp;
        push_lists(s, w0, v);
        push_lists(s, w1, 2);
        push_memset(s, 0x100080);
        /* HtoD: src is host memory, never asked about, even inside a span */
        struct atl_op c = {.kind = ATL_OP_COPY, .sub = ATL_DIR_HTOD, .stream = 0x10};
        c.u.c.dst = 0x2000f0, c.u.c.src = 0x100000, c.u.c.w = 16, c.u.c.h = c.u.c.d = 1;
        ck_assert_int_eq(atl_step_push(s, &c), 0);
    }
    /* given out of order and twice, as a resolve may meet them */
    ck_assert_int_eq(atl_step_add_span(sp, 0x200000, 0x200100, 7), 0);
    ck_assert_int_eq(atl_step_add_span(sp, 0x100000, 0x110000, 3), 0);
    ck_assert_int_eq(atl_step_add_span(sp, 0x200000, 0x200100, 7), 0);
    atl_step_spans_done(sp);
    ck_assert_uint_eq(sp->nspans, 2);
    atl_step_annotate(li, 0, 0, 3, 0);
    atl_step_annotate(li, 0, 8, 7, 0x10);
    atl_step_annotate(li, 0, 16, 3, 0xfff8);
    atl_step_annotate(li, 1, 0, 7, 0);
    atl_step_annotate(li, 1, 24, 3, 0x40);
    atl_step_annotate(li, 1, 32, 3, 0);
    atl_step_annotate(li, 2, ATL_ANN_DST, 3, 0x80);
    atl_step_annotate(li, 3, ATL_ANN_DST, 7, 0xf0);
}

START_TEST(notes_as_spans_or_a_list)
{
    struct atl_step sp, li;
    two_forms(&sp, &li, 1);
    ck_assert_uint_eq(sp.nann, 0);
    /* word by word */
    for (uint32_t op = 0; op < 4; op++)
        for (uint32_t at = 0; at < 48; at += 8) {
            struct atl_ann x, y;
            int hx = atl_step_note(&sp, op, at, &x), hy = atl_step_note(&li, op, at, &y);
            ck_assert_msg(hx == hy, "op %u at %u: spans %d, list %d", op, at, hx, hy);
            if (hx) {
                ck_assert_uint_eq(x.seq, y.seq);
                ck_assert_uint_eq(x.off, y.off);
            }
            const struct atl_ann *p = atl_step_ann(&sp, op, at);
            ck_assert_int_eq(p != NULL, hx);
        }
    /* in one walk */
    struct atl_notes it, jt;
    atl_notes_init(&it, &sp), atl_notes_init(&jt, &li);
    size_t n = 0;
    for (uint32_t op = 0; op < 4; op++) {
        atl_notes_op(&it, op), atl_notes_op(&jt, op);
        struct atl_ann x, y;
        for (;;) {
            int hx = atl_notes_next(&it, &x), hy = atl_notes_next(&jt, &y);
            ck_assert_int_eq(hx, hy);
            if (!hx)
                break;
            ck_assert_uint_eq(x.at, y.at);
            ck_assert_uint_eq(x.seq, y.seq);
            ck_assert_uint_eq(x.off, y.off);
            n++;
        }
    }
    ck_assert_uint_eq(n, li.nann);
    /* the same JSON lines, which read back equal to the step */
    static char ja[8192], jb[8192];
    json_text(&sp, ja, sizeof ja), json_text(&li, jb, sizeof jb);
    ck_assert_str_eq(ja, jb);
    ck_assert_msg(strstr(ja, "\"a\":[[0,3,0]"), "%s", ja); /* op 0 arg0: alloc#3+0 */
    write_read(&sp);
    ck_assert_uint_eq(diff(&sp, &got[0], 20, NULL), 0);
    atl_step_free(&got[0]);
    /* and the same report against a step whose scalar changed */
    struct atl_step sp2, li2;
    two_forms(&sp2, &li2, 5);
    ck_assert_uint_eq(diff(&sp, &sp2, 20, NULL), 1);
    static char rs[sizeof out];
    memcpy(rs, out, sizeof out);
    ck_assert_uint_eq(diff(&li, &li2, 20, NULL), 1);
    ck_assert_str_eq(rs, out);
    ck_assert_msg(strstr(out, "arg3 @0x28 (4 bytes): 0x1 -> 0x5"), "%s", out);
    atl_step_free(&sp), atl_step_free(&li), atl_step_free(&sp2), atl_step_free(&li2);
}
END_TEST

/* Two live steps whose pointers named the same allocations are compared by
 * their bytes, runs of identical ops at a time. Where the allocations differ
 * the bytes are hashed; a memset's address freed and allocated again at the
 * same address (allocator churn: NCCL's set-up memsets fresh buffers at
 * every sync) is the same pointer within one process, and another buffer
 * only between two processes, which compare by allocation. */
START_TEST(bytes_compared_only_under_the_same_allocations)
{
    struct atl_step a, b, c;
    atl_step_init(&a, "s"), atl_step_init(&b, "s"), atl_step_init(&c, "s");
    const size_t n = 1000; /* runs of 256, and a tail */
    for (size_t i = 0; i < n; i++) {
        push_launch(&a, kfn_ptr_int(), 0x100000 + 16 * (i % 8), (int)i, 1);
        push_launch(&b, kfn_ptr_int(), 0x100000 + 16 * (i % 8), (int)i + (i == 300 || i == 990), 1);
        push_launch(&c, kfn_ptr_int(), 0x100000 + 16 * (i % 8), (int)i, 1);
    }
    push_memset(&a, 0x100080), push_memset(&b, 0x100080), push_memset(&c, 0x100080);
    atl_step_add_span(&a, 0x100000, 0x101000, 4), atl_step_spans_done(&a);
    atl_step_add_span(&b, 0x100000, 0x101000, 4), atl_step_spans_done(&b);
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 2);
    ck_assert_msg(strstr(out, "op 300 ") && strstr(out, "op 990 "), "%s", out);
    /* the same bytes, but the allocation is another one now */
    atl_step_add_span(&c, 0x100000, 0x101000, 9), atl_step_spans_done(&c);
    ck_assert_uint_eq(diff(&a, &c, 20, NULL), 0);
    ck_assert_int_eq(nlines, 0);
    out[0] = '\0', nlines = 0;
    struct atl_diff_opts o = {.max_lines = 20, .pointers = pointers, .line = collect, .cross = 1};
    ck_assert_uint_eq(atl_step_diff(&a, &c, &o, NULL), 1);
    ck_assert_msg(strstr(out, "op 1000 [memset] ptr: 0x100080 alloc#4+0x80 -> 0x100080 "
                              "alloc#9+0x80: another buffer"),
                  "%s", out);
    atl_step_free(&a), atl_step_free(&b), atl_step_free(&c);
}
END_TEST

/* The writer copies what every op repeats (the step's head, the kernel's
 * quoted name) from its first formatting: across block flushes, with names
 * too long to keep (formatted each time), and kernels alternating. */
START_TEST(json_writer_repeated_text)
{
    /* 1020 characters (the reader keeps 1023), 10 of them quotes: 1032 bytes
     * quoted and escaped, more than the writer keeps to copy */
    static char longname[1021];
    memset(longname, 'x', sizeof longname - 1);
    memcpy(longname, "_Z4long", 7);
    for (int i = 0; i < 10; i++)
        longname[100 + 50 * i] = '"';
    static const uint32_t off[] = {0, 8}, size[] = {8, 4};
    const struct atl_kfn *kl = atl_kfn_intern(longname, NULL, 2, off, size);
    struct atl_step a;
    atl_step_init(&a, "a step name long enough to matter");
    a.index = 3;
    for (int i = 0; i < 6000; i++) /* about 6 MB: flushes inside and between ops */
        push_launch(&a, i % 3 == 2 ? kfn_ptr_int() : kl, 0x1000 + (uint64_t)i, i, 1);
    write_read(&a);
    ck_assert_uint_eq(got[0].nops, 6000);
    ck_assert_str_eq(got[0].name, a.name);
    for (int i = 0; i < 6000; i++)
        ck_assert_str_eq(got[0].ops[i].u.k.kfn->mangled, a.ops[i].u.k.kfn->mangled);
    ck_assert_uint_eq(diff(&a, &got[0], 20, NULL), 0);
    atl_step_free(&got[0]);
    atl_step_free(&a);
}
END_TEST

static int read_text(const char *text, char *err, size_t len)
{
    FILE *f = tmpfile();
    fputs(text, f);
    rewind(f);
    ngot = 0;
    int rc = atl_trace_read(f, keep, NULL, err, len);
    fclose(f);
    for (int i = 0; i < ngot; i++)
        atl_step_free(&got[i]);
    return rc;
}

/* PyTorch's elementwise kernels: (int n, functor, std::array<char*, 3>),
 * the tensors' pointers in a by-value array. */
static const struct atl_kfn *kfn_int_array3(void)
{
    static const uint32_t off[] = {0, 8}, size[] = {4, 24};
    return atl_kfn_intern("_Z3ewiSt5arrayIPcLm3EE", NULL, 2, off, size);
}

static void push_array3(struct atl_step *s, uint64_t base)
{
    uint8_t bytes[32] = {0};
    int n = 4096;
    uint64_t p[3] = {base + 0x4000, base + 0x4000, base};
    memcpy(bytes, &n, 4);
    memcpy(bytes + 8, p, 24);
    push_one_block(s, kfn_int_array3(), bytes);
}

START_TEST(pointers_inside_a_by_value_array)
{
    /* two ranks: the same allocations at other addresses */
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    push_array3(&a, 0x7efb47e00000);
    push_array3(&b, 0x7f5d4be00000);
    for (uint32_t w = 0; w < 24; w += 8) {
        atl_step_annotate(&a, 0, 8 + w, 2, w < 16 ? 0x4000 : 0);
        atl_step_annotate(&b, 0, 8 + w, 2, w < 16 ? 0x4000 : 0);
    }
    ck_assert_uint_eq(diff(&a, &b, 20, NULL), 0);
    ck_assert_str_eq(out, "");

    /* the JSON lines keep every word's name: still no difference read back */
    write_read(&b);
    for (uint32_t w = 0; w < 24; w += 8)
        ck_assert_ptr_nonnull(atl_step_ann(&got[0], 0, 8 + w));
    ck_assert_uint_eq(diff(&a, &got[0], 20, NULL), 0);
    atl_step_free(&got[0]);

    /* the last word names another allocation: that word, and only it */
    struct atl_step c;
    atl_step_init(&c, "s");
    push_array3(&c, 0x7f5d4be00000);
    for (uint32_t w = 0; w < 24; w += 8)
        atl_step_annotate(&c, 0, 8 + w, w < 16 ? 2 : 5, w < 16 ? 0x4000 : 0);
    ck_assert_uint_eq(diff(&a, &c, 20, NULL), 1);
    ck_assert_msg(strstr(out, "arg1+0x10 @0x18 (8 of 24 bytes): 0x7efb47e00000 alloc#2+0x0 -> "
                              "0x7f5d4be00000 alloc#5+0x0"),
                  "%s", out);
    ck_assert_msg(strstr(out, "another buffer"), "%s", out);
    ck_assert_int_eq(nlines, 2); /* the step header and that word */
    atl_step_free(&a), atl_step_free(&b), atl_step_free(&c);
}
END_TEST

/* Uninitialised bytes: a PyTorch-like by-value struct (8-byte pointer,
 * then a 56-byte metadata block whose tail the launching code never set).
 * Values with 0x7ff0 in their top bits stand for addresses of host memory. */
static int fake_host(uint64_t v)
{
    return (v >> 36) == 0x7ff;
}

static const struct atl_kfn *kfn_meta(const char *mangled)
{
    static const uint32_t off[] = {0, 8}, size[] = {8, 64};
    return atl_kfn_intern(mangled, "meta(float*, Meta)", 2, off, size);
}

/* word 2 of the struct: a counter; word 5: a stack address (when `stack`) */
static void push_meta(struct atl_step *s, const struct atl_kfn *k, uint64_t counter, uint64_t stack)
{
    uint8_t bytes[72] = {0};
    uint64_t p = 0x100000;
    memcpy(bytes, &p, 8);
    memcpy(bytes + 8 + 16, &counter, 8);
    memcpy(bytes + 8 + 40, &stack, 8);
    struct atl_op o = {.kind = ATL_OP_LAUNCH, .stream = 0x10};
    o.u.k.kfn = k;
    o.u.k.bytes = (uintptr_t)bytes;
    o.u.k.grid[0] = o.u.k.grid[1] = o.u.k.grid[2] = 1;
    o.u.k.block[0] = o.u.k.block[1] = o.u.k.block[2] = 1;
    ck_assert_int_eq(atl_step_push(s, &o), 0);
}

/* Steps a and b, one launch of k each: (counter, stack) then (counter2, stack2). */
static void meta_steps(struct atl_step *a, struct atl_step *b, const struct atl_kfn *k,
                       uint64_t counter, uint64_t stack, uint64_t counter2, uint64_t stack2)
{
    atl_step_init(a, "s"), atl_step_init(b, "s");
    push_meta(a, k, counter, stack);
    push_meta(b, k, counter2, stack2);
}

static size_t diff_residue(const struct atl_step *a, const struct atl_step *b, int mode,
                           int (*host)(uint64_t), struct atl_diff_stats *st)
{
    out[0] = '\0';
    nlines = 0;
    struct atl_diff_opts o = {.max_lines = 20,
                              .pointers = ATL_PTRS_ALL,
                              .residue = mode,
                              .host_addr = host,
                              .line = collect};
    return atl_step_diff(a, b, &o, st);
}

START_TEST(residue_of_uninitialised_struct_collapsed)
{
    const struct atl_kfn *k = kfn_meta("_Z4metaPf4Meta");
    struct atl_step s[3];
    for (int i = 0; i < 3; i++) {
        atl_step_init(&s[i], "s");
        s[i].index = s[i].nth = (uint64_t)i + 1;
    }
    push_meta(&s[0], k, 0x10, 0x7ff000001000);
    push_meta(&s[1], k, 0x14, 0x7ff000002000); /* both words change */
    push_meta(&s[2], k, 0x18, 0x7ff000002000); /* only the counter changes */
    struct atl_diff_stats st;
    memset(&st, 0, sizeof st);
    /* no host value differs: 0 differences, nothing printed, counted identical (and quiet:
     * the summary says how many such steps there were) */
    ck_assert_uint_eq(diff_residue(&s[0], &s[1], ATL_PTRS_COLLAPSE, fake_host, &st), 0);
    ck_assert_msg(!strstr(out, "  op "), "a residue word reported as a value:\n%s", out);
    ck_assert_int_eq(nlines, 0);
    ck_assert_uint_eq(st.quiet, 1);
    /* learned for the rest of the run: the counter alone is residue too,
     * even with no host-address check at all (as offline) */
    ck_assert_uint_eq(diff_residue(&s[1], &s[2], ATL_PTRS_COLLAPSE, NULL, &st), 0);
    ck_assert_int_eq(nlines, 0);
    ck_assert_uint_eq(st.quiet, 2);
    /* the summary counts them and says how to list them */
    out[0] = '\0';
    atl_diff_summary(&st, collect, NULL);
    ck_assert_msg(strstr(out, "trace summary: 2 steps counted identical: only pointers that "
                              "moved within their allocations or between a caching allocator's "
                              "segments (allocator reuse), host buffers of "
                              "pageable copies or uninitialised bytes of by-value parameters "
                              "changed (ATLAS_DIFF_POINTERS=all ATLAS_DIFF_RESIDUE=all lists "
                              "them)"),
                  "%s", out);
    /* not in the frozen-value summary */
    out[0] = '\0';
    atl_diff_summary(&st, collect, NULL);
    ck_assert_msg(!strstr(out, "meta arg1"), "%s", out);
    /* all: a line each, marked, ranked after everything else */
    ck_assert_uint_eq(st.identical, 2);
    ck_assert_uint_eq(diff_residue(&s[0], &s[1], ATL_PTRS_ALL, fake_host, NULL), 0);
    ck_assert_msg(strstr(out, "arg1+0x10 @0x18 (8 of 64 bytes): 0x10 -> 0x14 (delta +4) "
                              "(host-memory residue)"),
                  "%s", out);
    /* with a real change beside it, the step differs by that one value */
    struct atl_step t;
    atl_step_init(&t, "s");
    t.index = t.nth = 4;
    push_meta(&t, k, 0x1c, 0x7ff000002000);
    push_launch(&t, kfn_ptr_int(), 0x1000, 5, 4);
    push_launch(&s[2], kfn_ptr_int(), 0x1000, 6, 4);
    ck_assert_uint_eq(diff_residue(&s[2], &t, ATL_PTRS_COLLAPSE, fake_host, NULL), 1);
    ck_assert_msg(strstr(out, "arg1 @0x8 (4 bytes): 0x6 -> 0x5 (delta -1)"), "%s", out);
    ck_assert_msg(strstr(out, "  1 changed word of by-value"), "%s", out);
    atl_step_free(&t);
    /* none: not reported, not counted */
    ck_assert_uint_eq(diff_residue(&s[0], &s[1], ATL_PTRS_NONE, fake_host, NULL), 0);
    ck_assert_int_eq(nlines, 0);
    for (int i = 0; i < 3; i++)
        atl_step_free(&s[i]);
}
END_TEST

/* PyTorch's kernels live in anonymous namespaces: the short name skips the
 * scope, not the name ("at::native::multi_tensor_apply_kernel arg0", which
 * read "at::native:: arg0") */
START_TEST(short_name_through_anonymous_namespace)
{
    static const uint32_t off[] = {0}, size[] = {4};
    const struct atl_kfn *k = atl_kfn_intern(
        "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelEi",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
        "namespace)::TensorListMetadata<2> >(int)",
        1, off, size);
    struct atl_diff_stats st;
    memset(&st, 0, sizeof st);
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    int va = 1, vb = 2;
    struct atl_op o = {.kind = ATL_OP_LAUNCH};
    o.u.k.kfn = k;
    o.u.k.bytes = (uintptr_t)&va;
    atl_step_push(&a, &o);
    o.u.k.bytes = (uintptr_t)&vb;
    atl_step_push(&b, &o);
    ck_assert_uint_eq(diff_residue(&a, &b, ATL_PTRS_COLLAPSE, NULL, &st), 1);
    out[0] = '\0';
    atl_diff_summary(&st, collect, NULL);
    ck_assert_msg(strstr(out, "frozen value: at::native::multi_tensor_apply_kernel arg0 changed"),
                  "%s", out);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

START_TEST(residue_needs_a_host_address)
{
    /* the same struct whose changing word holds no host address: a value */
    const struct atl_kfn *k = kfn_meta("_Z5meta2Pf4Meta");
    struct atl_step a, b;
    meta_steps(&a, &b, k, 0x10, 0x1234, 0x14, 0x1234);
    ck_assert_uint_eq(diff_residue(&a, &b, ATL_PTRS_COLLAPSE, fake_host, NULL), 1);
    ck_assert_msg(strstr(out, "arg1+0x10 @0x18 (8 of 64 bytes): 0x10 -> 0x14 (delta +4)\n"), "%s",
                  out);
    ck_assert_uint_eq(k->residue, 0);
    /* a host address passed as a parameter of its own (8 bytes) is a
     * finding, not residue: only structs carry uninitialised tails */
    struct atl_step c, d;
    atl_step_init(&c, "s"), atl_step_init(&d, "s");
    push_launch(&c, kfn_ptr_int(), 0x7ff000001000, 1, 4);
    push_launch(&d, kfn_ptr_int(), 0x7ff000002000, 1, 4);
    ck_assert_uint_eq(diff_residue(&c, &d, ATL_PTRS_COLLAPSE, fake_host, NULL), 1);
    ck_assert_msg(strstr(out, "arg0 @0x0 (8 bytes): 0x7ff000001000 -> 0x7ff000002000"), "%s", out);
    atl_step_free(&a), atl_step_free(&b), atl_step_free(&c), atl_step_free(&d);
}
END_TEST

/* Reads one step from JSON-lines text into *into. */
static int read_step(const char *text, struct atl_step *into)
{
    FILE *f = tmpfile();
    fputs(text, f);
    rewind(f);
    char err[256] = "";
    ngot = 0;
    int rc = atl_trace_read(f, keep, NULL, err, sizeof err);
    fclose(f);
    ck_assert_msg(rc == 0 && ngot == 1, "%s", err);
    *into = got[0];
    return rc;
}

/* A step of every op kind, with pointer notes on launches, memsets and
 * copies and a host-memory mark. */
static void every_kind(struct atl_step *a)
{
    atl_step_init(a, "mixed");
    a->index = 4;
    snprintf(a->thread, sizeof a->thread, "main");
    static const uint32_t off[] = {0, 8}, size[] = {8, 4};
    const struct atl_kfn *k = atl_kfn_intern("_Z1qPfi", NULL, 2, off, size);
    push_launch(a, kfn_ptr_int(), 0x1000, 5, 4);
    push_launch(a, k, 0x2000, 6, 2);
    push_launch(a, kfn_ptr_int(), 0x1000, 7, 1);
    push_memset(a, 0x3000);
    struct atl_op c = {.kind = ATL_OP_COPY, .sub = ATL_DIR_DTOD, .stream = 0x20};
    c.u.c.dst = 0x4000, c.u.c.src = 0x5000, c.u.c.w = 64, c.u.c.h = 2, c.u.c.d = 1;
    atl_step_push(a, &c);
    struct atl_op g = {.kind = ATL_OP_GRAPH, .stream = 0x20};
    g.u.g.exec = 0xabc;
    atl_step_push(a, &g);
    atl_step_annotate(a, 0, 0, 12, 0x10);
    atl_step_annotate(a, 1, 0, ATL_ANN_HOST, 0);
    atl_step_annotate(a, 3, ATL_ANN_DST, 2, 0x400);
    atl_step_annotate(a, 4, ATL_ANN_DST, 3, 0);
    atl_step_annotate(a, 4, ATL_ANN_SRC, 4, 0x80);
}

/* got[0] is a, op for op, note for note. */
static void same_as_read(const struct atl_step *a, const struct atl_step *r)
{
    ck_assert_str_eq(r->name, a->name);
    ck_assert_str_eq(r->thread, a->thread);
    ck_assert_uint_eq(r->index, a->index);
    ck_assert_uint_eq(r->nops, a->nops);
    for (size_t i = 0; i < a->nops; i++) {
        const struct atl_op *x = &a->ops[i], *y = &r->ops[i];
        ck_assert_uint_eq(x->kind, y->kind);
        ck_assert_uint_eq(x->stream, y->stream);
        if (x->kind == ATL_OP_LAUNCH) {
            ck_assert_str_eq(x->u.k.kfn->mangled, y->u.k.kfn->mangled);
            ck_assert_int_eq(memcmp(x->u.k.grid, y->u.k.grid, sizeof x->u.k.grid), 0);
            ck_assert_int_eq(memcmp(x->u.k.block, y->u.k.block, sizeof x->u.k.block), 0);
            ck_assert_int_eq(memcmp(atl_op_bytes(a, x), atl_op_bytes(r, y), x->u.k.kfn->total), 0);
        }
    }
    struct atl_notes ia, ir;
    atl_notes_init(&ia, a);
    atl_notes_init(&ir, r);
    for (uint32_t i = 0; i < a->nops; i++) {
        struct atl_ann na, nr;
        int ma, mr;
        atl_notes_op(&ia, i);
        atl_notes_op(&ir, i);
        while ((ma = atl_notes_next(&ia, &na)) & (mr = atl_notes_next(&ir, &nr))) {
            ck_assert_uint_eq(na.at, nr.at);
            ck_assert_uint_eq(na.seq, nr.seq);
            ck_assert_uint_eq(na.off, nr.off);
        }
        ck_assert_msg(ma == mr, "op %u: notes differ in number", i);
    }
    ck_assert_uint_eq(diff(a, r, 20, NULL), 0);
}

/* ---- version 1 of the JSON lines, written ------------------------------------------
 * Files written before version 2 (no header, every op line whole) are still
 * read; the library writes only version 2, so the tests write version 1
 * here, with the library's writer primitives (src/jsonw.h). */

/* n bytes as hex digits, in chunks that fit the block */
static void jw_hex(struct jw *w, const uint8_t *p, size_t n)
{
    while (n) {
        size_t k = n < sizeof w->b / 4 ? n : sizeof w->b / 4;
        char *d = jw_room(w, 2 * k);
        for (size_t i = 0; i < k; i++) {
            d[2 * i] = hexdig[p[i] >> 4];
            d[2 * i + 1] = hexdig[p[i] & 15];
        }
        w->n += 2 * k, p += k, n -= k;
    }
}

/* ,"key":"alloc#N+0xOFF" */
static void jw_ann(struct jw *w, const char *key, const struct atl_ann *an)
{
    jw_lit(w, ",\"");
    jw_cstr(w, key);
    jw_lit(w, "\":\"alloc#");
    jw_u64(w, an->seq);
    jw_lit(w, "+");
    jw_x64(w, an->off);
    jw_lit(w, "\"");
}

/* ,"key":"alloc#N+0xOFF" when the ledger named the address at (op, at). */
static void json_alloc(struct jw *w, const struct atl_step *s, size_t op, uint32_t at,
                       const char *key)
{
    const struct atl_ann *an = atl_step_ann(s, (uint32_t)op, at);
    if (an)
        jw_ann(w, key, an);
}

/* Text that every op of a step repeats (its head, its kernel's quoted name):
 * formatted by `put` the first time, as it is written, then copied. n is 0
 * when it did not fit (formatted every time then). */
struct jw_cache {
    size_t n;
    char b[1024];
};

static void jw_cached(struct jw *w, struct jw_cache *c, int fresh,
                      void (*put)(struct jw *, const void *), const void *arg)
{
    if (!fresh && c->n) {
        jw_put(w, c->b, c->n);
        return;
    }
    jw_room(w, sizeof c->b); /* what fits is then written without a flush between */
    size_t start = w->n;
    unsigned long flushes = w->flushes;
    put(w, arg);
    c->n = w->flushes == flushes && w->n - start <= sizeof c->b ? w->n - start : 0;
    memcpy(c->b, w->b + start, c->n);
}

static void put_head(struct jw *w, const void *s)
{
    json_head(w, s);
}

static void put_kernel(struct jw *w, const void *k)
{
    jw_str(w, ((const struct atl_kfn *)k)->mangled);
}

static void atl_step_write_json_v1(const struct atl_step *s, FILE *f, int (*host_addr)(uint64_t v))
{
    struct jw *w = malloc(sizeof *w);
    if (!w)
        return;
    w->f = f, w->n = 0, w->flushes = 0;
    /* the notes, walked alongside the ops */
    struct atl_notes it;
    atl_notes_init(&it, s);
    struct jw_cache head, kname;
    const struct atl_kfn *klast = NULL;
    for (size_t i = 0; i < s->nops; i++) {
        const struct atl_op *o = &s->ops[i];
        jw_cached(w, &head, i == 0, put_head, s);
        jw_lit(w, ",\"op\":");
        jw_u64(w, i);
        jw_lit(w, ",\"stream\":\"");
        jw_x64(w, o->stream);
        jw_lit(w, "\",\"kind\":\"");
        jw_cstr(w, atl_op_kind_name(o->kind));
        jw_lit(w, "\"");
        atl_notes_op(&it, (uint32_t)i);
        switch (o->kind) {
        case ATL_OP_LAUNCH: {
            const struct atl_kfn *k = o->u.k.kfn;
            jw_lit(w, ",\"kernel\":");
            jw_cached(w, &kname, k != klast, put_kernel, k);
            klast = k;
            jw_dim(w, ",\"grid\":", o->u.k.grid);
            jw_dim(w, ",\"block\":", o->u.k.block);
            jw_lit(w, ",\"shmem\":");
            jw_u64(w, o->shmem);
            uint32_t cl[3] = {o->cluster[0], o->cluster[1], o->cluster[2]};
            jw_dim(w, ",\"cluster\":", cl);
            if (k->exact)
                jw_lit(w, ",\"exact\":1,\"params\":[");
            else
                jw_lit(w, ",\"exact\":0,\"params\":[");
            const uint8_t *p = atl_op_bytes(s, o);
            int ordered = 1;
            for (unsigned j = 1; j < k->nparams; j++)
                ordered &= k->off[j] > k->off[j - 1];
            for (unsigned j = 0; j < k->nparams; j++) {
                if (j)
                    jw_lit(w, ",");
                jw_lit(w, "{\"i\":");
                jw_u64(w, j);
                jw_lit(w, ",\"off\":");
                jw_u64(w, k->off[j]);
                jw_lit(w, ",\"size\":");
                jw_u64(w, k->size[j]);
                jw_lit(w, ",\"hex\":\"");
                uint32_t len = k->off[j] >= k->total ? 0 : k->total - k->off[j];
                jw_hex(w, p + k->off[j], k->size[j] < len ? k->size[j] : len);
                jw_lit(w, "\"");
                if (j < 64 && (__atomic_load_n(&k->residue, __ATOMIC_RELAXED) >> j & 1))
                    jw_lit(w, ",\"residue\":1");
                int named = 0; /* the first word names an allocation */
                for (uint32_t wd = 0; wd + 8 <= k->size[j]; wd += 8) {
                    uint32_t at = k->off[j] + wd;
                    /* the notes come in `at` order (a layout out of
                     * offset order asks for each word) */
                    const struct atl_ann *a =
                        ordered ? atl_notes_at(&it, at) : atl_step_ann(s, (uint32_t)i, at);
                    if (!a)
                        continue;
                    named |= wd == 0;
                    char key[24] = "alloc";
                    if (wd)
                        snprintf(key, sizeof key, "alloc%u", wd);
                    jw_ann(w, key, a);
                }
                /* a pointer parameter holding host memory (ATL_ANN_HOST) */
                if (host_addr && k->size[j] == 8 && !named && k->off[j] + 8 <= k->total) {
                    uint64_t v;
                    memcpy(&v, p + k->off[j], 8);
                    if (host_addr(v))
                        jw_lit(w, ",\"host\":1");
                }
                jw_lit(w, "}");
            }
            jw_lit(w, "]}\n");
            break;
        }
        case ATL_OP_MEMSET:
            jw_memset_fields(w, o);
            json_alloc(w, s, i, ATL_ANN_DST, "alloc");
            jw_lit(w, "}\n");
            break;
        case ATL_OP_COPY:
            jw_copy_fields(w, o);
            json_alloc(w, s, i, ATL_ANN_DST, "dstalloc");
            json_alloc(w, s, i, ATL_ANN_SRC, "srcalloc");
            jw_lit(w, "}\n");
            break;
        default:
            jw_lit(w, ",\"exec\":\"");
            jw_x64(w, o->u.g.exec);
            jw_lit(w, "\"}\n");
        }
    }
    jw_end(w, s, s->nops);
    free(w);
}

/* Files written before version 2 (no header, every op line whole) read as
 * they did, into what version 2 reads; both in one file (put end to end)
 * read too. */
START_TEST(json_v1_and_v2_read_alike)
{
    struct atl_step a;
    every_kind(&a);
    for (int v = 1; v <= 2; v++) {
        FILE *f = tmpfile();
        ck_assert_ptr_nonnull(f);
        if (v == 2)
            atl_trace_write_header(f);
        (v == 1 ? atl_step_write_json_v1 : atl_step_write_json)(&a, f, atl_host_addr);
        read_back(f, 1);
        same_as_read(&a, &got[0]);
        atl_step_free(&got[0]);
    }
    FILE *f = tmpfile();
    atl_step_write_json_v1(&a, f, atl_host_addr);
    atl_trace_write_header(f);
    atl_step_write_json(&a, f, atl_host_addr);
    atl_step_write_json_v1(&a, f, atl_host_addr);
    read_back(f, 3);
    for (int i = 0; i < 3; i++) {
        same_as_read(&a, &got[i]);
        atl_step_free(&got[i]);
    }
    atl_step_free(&a);
}
END_TEST

/* Version 2 is the compact form: an 8-parameter launch with four pointer
 * notes (cpu_bench's args8) takes under 2/5 of version 1's bytes, the
 * kernel's name and layout once per step. */
START_TEST(json_v2_is_compact)
{
    static const uint32_t off[] = {0, 8, 16, 24, 32, 36, 40, 48}, size[] = {8, 8, 8, 8, 4, 4, 4, 8};
    const struct atl_kfn *k = atl_kfn_intern("_Z4nop8PfS_S_S_jjfm", NULL, 8, off, size);
    struct atl_step a;
    atl_step_init(&a, "cuCtxSynchronize");
    a.index = 12345;
    for (int i = 0; i < 1000; i++) {
        uint8_t bytes[56];
        for (int w = 0; w < 4; w++) {
            uint64_t p = 0x7f3272f1c100ull + 0x100u * (unsigned)w;
            memcpy(bytes + 8 * w, &p, 8);
        }
        uint32_t u[3] = {1024, 64 + (uint32_t)(i & 1), 0x3fc00000};
        uint64_t n = 42;
        memcpy(bytes + 32, u, 12), memset(bytes + 44, 0, 4), memcpy(bytes + 48, &n, 8);
        struct atl_op o = {.kind = ATL_OP_LAUNCH, .stream = 0x7f3272000000};
        o.u.k.kfn = k, o.u.k.bytes = (uintptr_t)bytes;
        o.u.k.grid[0] = 4096, o.u.k.grid[1] = o.u.k.grid[2] = 1;
        o.u.k.block[0] = 256, o.u.k.block[1] = o.u.k.block[2] = 1;
        ck_assert_int_eq(atl_step_push(&a, &o), 0);
        for (uint32_t w = 0; w < 4; w++)
            atl_step_annotate(&a, (uint32_t)i, 8 * w, 123, 0x100u * w);
    }
    long len[3];
    char *text = NULL;
    for (int v = 1; v <= 2; v++) {
        FILE *f = tmpfile();
        (v == 1 ? atl_step_write_json_v1 : atl_step_write_json)(&a, f, atl_host_addr);
        if (v == 2) { /* a second step declares its kernel again: steps stand alone */
            a.index++;
            atl_step_write_json(&a, f, atl_host_addr);
            a.index--;
        }
        len[v] = ftell(f);
        if (v == 2) {
            text = malloc((size_t)len[v] + 1);
            rewind(f);
            text[fread(text, 1, (size_t)len[v], f)] = '\0';
        }
        fclose(f);
    }
    long per_op1 = len[1] / 1000, per_op2 = len[2] / 2000;
    fprintf(stderr, "json_v2_is_compact: %ld bytes an op in version 1, %ld in version 2\n", per_op1,
            per_op2);
    ck_assert_msg(per_op2 * 5 < per_op1 * 2 && per_op2 < 240, "%ld against %ld bytes an op",
                  per_op2, per_op1);
    int decls = 0;
    for (const char *t = text; (t = strstr(t, "\"kernel\":\"_Z4nop8PfS_S_S_jjfm\"")); t++)
        decls++;
    ck_assert_int_eq(decls, 2);
    free(text);
    atl_step_free(&a);
}
END_TEST

/* What the version-2 reader refuses, by line, and what it accepts written
 * otherwise than its writer does (keys in another order, white space: the
 * slow path, which must read what the fast one does). */
START_TEST(json_v2_reader_checks)
{
    char err[256];
    const char *decl =
        "{\"s\":1,\"k\":1,\"kernel\":\"_Z1kPfi\",\"exact\":1,\"params\":[[0,8],[8,4]]}\n";
    const char *end =
        "{\"step\":1,\"name\":\"s\",\"thread\":\"main\",\"stream\":\"0x10\",\"end\":true,"
        "\"ops\":1}\n";
    char text[1024];
    static const struct {
        const char *head, *op, *want;
    } bad[] = {
        {"{\"format\":\"atlastrace-steps\",\"version\":3}\n", NULL, "line 1: format version 3"},
        {"{\"format\":\"chrome\",\"version\":2}\n", NULL, "line 1: not an atlastrace step trace"},
        {"", "{\"s\":1,\"o\":0,\"st\":\"0x10\",\"k\":2,\"p\":\"000100000000000005000000\"}\n",
         "line 2: a launch of a kernel id not declared in this step"},
        {"", "{\"s\":1,\"o\":0,\"k\":1,\"p\":\"000100000000000005000000\"}\n",
         "line 2: the step's first op has no stream"},
        {"", "{\"s\":1,\"o\":0,\"st\":\"0x10\",\"k\":1,\"p\":\"0001000000000000050000\"}\n",
         "line 2: \"p\" is not the kernel's parameter bytes"},
        {"", "{\"s\":1,\"o\":0,\"st\":\"0x10\",\"k\":1,\"p\":\"00010000000000000500000x\"}\n",
         "line 2: bad hex bytes in \"p\""},
        {"",
         "{\"s\":1,\"o\":0,\"st\":\"0x10\",\"k\":1,\"p\":\"000100000000000005000000\",\"a\":[[8,1,"
         "0]]}\n",
         "line 2: a pointer note (\"a\") outside the op's parameters"},
        {"",
         "{\"s\":1,\"o\":0,\"st\":\"0x10\",\"k\":1,\"p\":\"000100000000000005000000\",\"a\":[[0,1,"
         "0],[0,2,0]]}\n",
         "line 2: bad pointer note"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(text, sizeof text, "%s%s%s%s", bad[i].head, bad[i].op ? decl : "",
                 bad[i].op ? bad[i].op : "", bad[i].op ? end : "");
        ck_assert_int_eq(read_text(text, err, sizeof err), -1);
        ck_assert_msg(strstr(err, bad[i].want), "case %zu: %s", i, err);
    }
    /* declarations in order from 1 */
    snprintf(text, sizeof text, "%s", "{\"s\":1,\"k\":2,\"kernel\":\"_Z1kPfi\",\"params\":[]}\n");
    ck_assert_int_eq(read_text(text, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 1: kernel ids are declared in order"), "%s", err);

    /* the writer's form and another order with white space read alike */
    const char *fast = "{\"s\":1,\"o\":0,\"st\":\"0x10\",\"k\":1,\"g\":[4,1,1],\"sh\":16,"
                       "\"p\":\"00010000000000000500000000000000\",\"a\":[[0,3,16],[8]]}\n";
    const char *slow = "{ \"a\": [[0, 3, 16], [8]], \"p\": \"00010000000000000500000000000000\","
                       " \"k\": 1, \"sh\": 16, \"g\": [4, 1, 1], \"st\": \"0x10\", \"o\": 0,"
                       " \"s\": 1 }\n";
    const char *decl16 =
        "{\"s\":1,\"k\":1,\"kernel\":\"_Z1kPfi\",\"exact\":1,\"params\":[[0,8],[8,8]]}\n";
    struct atl_step r[2];
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof text, "{\"format\":\"atlastrace-steps\",\"version\":2}\n%s%s%s",
                 decl16, i ? slow : fast, end);
        read_step(text, &r[i]);
        ck_assert_uint_eq(r[i].ops[0].u.k.grid[0], 4);
        ck_assert_uint_eq(r[i].ops[0].u.k.block[0], 1); /* left out: 1 */
        ck_assert_uint_eq(r[i].ops[0].shmem, 16);
        ck_assert_uint_eq(r[i].ops[0].stream, 0x10);
        const struct atl_ann *an = atl_step_ann(&r[i], 0, 0), *host = atl_step_ann(&r[i], 0, 8);
        ck_assert_ptr_nonnull(an);
        ck_assert_uint_eq(an->seq, 3);
        ck_assert_uint_eq(an->off, 16);
        ck_assert_ptr_nonnull(host);
        ck_assert_uint_eq(host->seq, ATL_ANN_HOST);
    }
    same_as_read(&r[0], &r[1]);
    atl_step_free(&r[0]), atl_step_free(&r[1]);
}
END_TEST

START_TEST(residue_mark_survives_the_json_lines)
{
    /* the recording process learned it; atlas-diff reads it from the file */
    const struct atl_kfn *k = kfn_meta("_Z5meta3Pf4Meta");
    struct atl_step a, b;
    meta_steps(&a, &b, k, 0x10, 0x7ff000001000, 0x14, 0x7ff000002000);
    ck_assert_uint_eq(diff_residue(&a, &b, ATL_PTRS_COLLAPSE, fake_host, NULL), 0);
    ck_assert_uint_eq(k->residue, 2); /* parameter 1 */
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    atl_step_write_json(&b, f, atl_host_addr);
    rewind(f);
    char text[8192];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    /* on the kernel's declaration: parameter 1 */
    ck_assert_msg(strstr(text, "\"params\":[[0,8],[8,64]],\"residue\":[1]}"), "%s", text);
    /* read back under another name, so the record is a fresh one */
    char *at = strstr(text, "_Z5meta3");
    ck_assert_ptr_nonnull(at);
    at[6] = '4';
    struct atl_step back;
    read_step(text, &back);
    ck_assert_uint_eq(back.ops[0].u.k.kfn->residue, 2);
    atl_step_free(&back);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

/* What counts as host memory: the stack, the heap and host mappings; not
 * the driver's device files (pinned memory a kernel may be given), not a
 * reservation without access, not an unmapped value. */
START_TEST(host_addresses_from_the_maps)
{
    int local = 0;
    void *heap = malloc(64);
    ck_assert_int_eq(atl_host_addr((uint64_t)(uintptr_t)&local), 1);
    ck_assert_int_eq(atl_host_addr((uint64_t)(uintptr_t)heap), 1);
    ck_assert_int_eq(atl_host_addr((uint64_t)(uintptr_t)&atl_host_addr), 1);
    ck_assert_int_eq(atl_host_addr(0x1234), 0);
    ck_assert_int_eq(atl_host_addr(0x3835383732363034ull), 0); /* text, not an address */
    void *none = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(none, MAP_FAILED);
    usleep(60000); /* past the re-read interval: the new mapping is seen */
    ck_assert_int_eq(atl_host_addr((uint64_t)(uintptr_t)none + 4096), 0);
    void *rw = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(rw, MAP_FAILED);
    usleep(60000);
    ck_assert_int_eq(atl_host_addr((uint64_t)(uintptr_t)rw + 4096), 1);
    munmap(none, 1 << 20), munmap(rw, 1 << 20);
    free(heap);

    uint64_t lo, hi;
    int host;
    ck_assert_int_eq(atl_hostmap_parse_line("7fe37a600000-7fe37a800000 rw-s 00000000 00:06 142     "
                                            "                   /dev/nvidiactl\n",
                                            &lo, &hi, &host),
                     1);
    ck_assert_uint_eq(lo, 0x7fe37a600000ull);
    ck_assert_uint_eq(hi, 0x7fe37a800000ull);
    ck_assert_int_eq(host, 0);
    ck_assert_int_eq(atl_hostmap_parse_line("7fe358000000-7fe37a000000 ---p 00000000 00:00 0 \n",
                                            &lo, &hi, &host),
                     1);
    ck_assert_int_eq(host, 0);
    ck_assert_int_eq(atl_hostmap_parse_line("22b03000-33aaa000 rw-p 00000000 00:00 0       "
                                            "                           [heap]\n",
                                            &lo, &hi, &host),
                     1);
    ck_assert_int_eq(host, 1);
    ck_assert_int_eq(atl_hostmap_parse_line("garbage\n", &lo, &hi, &host), 0);
}
END_TEST

/* A pointer parameter holding an address of the recording process's host
 * memory (a cuBLASLt kernel's alpha pointer on the H200) is marked in the
 * JSON lines; two runs, whose stacks differ, compare it as equal; one run
 * compares it by value. */

START_TEST(host_pointer_parameter_across_runs)
{
    int on_stack[2];
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    push_launch(&a, kfn_ptr_int(), (uint64_t)(uintptr_t)&on_stack[0], 1, 4);
    push_launch(&b, kfn_ptr_int(), (uint64_t)(uintptr_t)&on_stack[1], 1, 4);
    char ta[8192], tb[8192];
    for (int k = 0; k < 2; k++) {
        FILE *f = tmpfile();
        atl_step_write_json(k ? &b : &a, f, atl_host_addr);
        rewind(f);
        size_t n = fread(k ? tb : ta, 1, sizeof ta - 1, f);
        (k ? tb : ta)[n] = '\0';
        fclose(f);
    }
    /* the note [at] alone: host memory at byte 0 */
    ck_assert_msg(strstr(ta, "\"a\":[[0]]}"), "%s", ta);
    struct atl_step ra, rb;
    read_step(ta, &ra);
    read_step(tb, &rb);
    const struct atl_ann *an = atl_step_ann(&ra, 0, 0);
    ck_assert_ptr_nonnull(an);
    ck_assert_uint_eq(an->seq, ATL_ANN_HOST);
    out[0] = '\0';
    nlines = 0;
    struct atl_diff_opts o = {.max_lines = 20, .cross = 1, .line = collect};
    ck_assert_uint_eq(atl_step_diff(&ra, &rb, &o, NULL), 0);
    o.cross = 0;
    ck_assert_uint_eq(atl_step_diff(&ra, &rb, &o, NULL), 1);
    ck_assert_msg(strstr(out, " (host memory) -> 0x") && !strstr(out, "alloc#"), "%s", out);
    atl_step_free(&ra), atl_step_free(&rb), atl_step_free(&a), atl_step_free(&b);
}
END_TEST

START_TEST(corrupt_input_says_which_line)
{
    char err[256];
    const char *ok = "{\"step\":1,\"name\":\"s\",\"op\":0,\"stream\":\"0x0\",\"kind\":\"memset\","
                     "\"ptr\":\"0x10\","
                     "\"value\":0,\"elem\":4,\"count\":1,\"pitch\":0,\"height\":0}\n"
                     "{\"step\":1,\"name\":\"s\",\"end\":true,\"ops\":1}\n";
    ck_assert_int_eq(read_text(ok, err, sizeof err), 0);
    ck_assert_int_eq(read_text("", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "empty"), "%s", err);
    ck_assert_int_eq(read_text("not json\n", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 1:"), "%s", err);
    char cut[400];
    snprintf(cut, sizeof cut, "%.*s", 60, ok); /* cut inside the first line */
    ck_assert_int_eq(read_text(cut, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 1:"), "%s", err);
    /* only the op line: the step never ends */
    snprintf(cut, sizeof cut, "%.*s", (int)(strchr(ok, '\n') - ok + 1), ok);
    ck_assert_int_eq(read_text(cut, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 1: the file ends inside step 1"), "%s", err);
}
END_TEST

/* A run killed mid-step: its whole steps are read, and what was cut off is
 * said (a torn last line, an unfinished last step). */
START_TEST(killed_run_read_to_last_whole_step)
{
    char err[256], text[800];
    const char *step1 = "{\"step\":1,\"name\":\"s\",\"op\":0,\"stream\":\"0x0\",\"kind\":"
                        "\"memset\",\"ptr\":\"0x10\",\"value\":0,\"elem\":4,\"count\":1,"
                        "\"pitch\":0,\"height\":0}\n"
                        "{\"step\":1,\"name\":\"s\",\"end\":true,\"ops\":1}\n";
    const char *op2 = "{\"step\":2,\"name\":\"s\",\"op\":0,\"stream\":\"0x0\",\"kind\":"
                      "\"memset\",\"ptr\":\"0x10\",\"value\":0,\"elem\":4,\"count\":1,"
                      "\"pitch\":0,\"height\":0}\n";
    /* step 2 open, its first line whole */
    snprintf(text, sizeof text, "%s%s", step1, op2);
    ck_assert_int_eq(read_text(text, err, sizeof err), 0);
    ck_assert_str_eq(err, "the file ends inside step 2 (the run was killed?): its 1 ops skipped");
    /* and with a torn line after it */
    snprintf(text, sizeof text, "%s%s%.40s", step1, op2, op2);
    ck_assert_int_eq(read_text(text, err, sizeof err), 0);
    ck_assert_str_eq(err, "line 4: the last line is incomplete (the run was killed?); skipped; "
                          "the file ends inside step 2 (the run was killed?): its 1 ops skipped");
    /* a whole file says nothing */
    ck_assert_int_eq(read_text(step1, err, sizeof err), 0);
    ck_assert_str_eq(err, "");
}
END_TEST

/* The block reader and the hand-written field parsers (tracediff.c): lines
 * that cross the 1 MiB blocks or are longer than one, strings with escapes
 * (the writer writes none, a person may), values in the spellings strtoull
 * took, numbers past 64 bits. */
/* Reads text, which must hold one step, into got[0]. */
static void read_one(const char *text)
{
    char err[256] = "";
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    rewind(f);
    ngot = 0;
    ck_assert_msg(atl_trace_read(f, keep, NULL, err, sizeof err) == 0, "%s", err);
    fclose(f);
    ck_assert_int_eq(ngot, 1);
}

START_TEST(reader_edge_cases)
{
    char err[256];
    const char *launch =
        "{\"step\":1,\"name\":\"s\",\"op\":%d,\"stream\":\"0x10\",\"kind\":"
        "\"launch\",\"kernel\":\"_Z4stepPfi\",\"grid\":[1,1,1],\"block\":[1,1,1],"
        "\"shmem\":0,\"cluster\":[0,0,0],\"exact\":1,\"params\":[{\"i\":0,\"off\":0,"
        "\"size\":8,\"hex\":\"0010000000000000\",\"alloc\":\"alloc#3+0x10\"},"
        "{\"i\":1,\"off\":8,\"size\":4,\"hex\":\"%s\"}]}\n";
    /* 5000 ops, about 1.5 MB: lines cross the first block's end */
    size_t cap = 6000 * 400, n = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    for (int i = 0; i < 5000; i++)
        n += (size_t)snprintf(text + n, cap - n, launch, i, i == 4999 ? "07000000" : "05000000");
    n += (size_t)snprintf(text + n, cap - n,
                          "{\"step\":1,\"name\":\"s\",\"end\":true,\"ops\":5000}\n");
    read_one(text);
    ck_assert_uint_eq(got[0].nops, 5000);
    int v;
    memcpy(&v, atl_op_bytes(&got[0], &got[0].ops[4999]) + 8, 4);
    ck_assert_int_eq(v, 7);
    const struct atl_ann *an = atl_step_ann(&got[0], 4998, 0);
    ck_assert_ptr_nonnull(an);
    ck_assert_uint_eq(an->seq, 3);
    ck_assert_uint_eq(an->off, 0x10);
    atl_step_free(&got[0]);

    /* one line longer than a block (2 MB of blank between two fields), escaped hex digits,
     * a stream written without "0x" (strtoull's spelling) */
    n = 0;
    cap = (3u << 20) + 1024;
    free(text);
    text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    n += (size_t)snprintf(text + n, cap - n, "{\"step\":1,\"name\":\"s\",");
    memset(text + n, ' ', 2u << 20);
    n += 2u << 20;
    snprintf(text + n, cap - n,
             "\"op\":0,\"stream\":\"1f\",\"kind\":\"launch\",\"kernel\":\"k\\u0031\","
             "\"grid\":[1,1,1],\"block\":[1,1,1],\"shmem\":0,\"cluster\":[0,0,0],\"exact\":1,"
             "\"params\":[{\"i\":0,\"off\":0,\"size\":2,\"hex\":\"\\u0030a0b\"}]}\n"
             "{\"step\":1,\"name\":\"s\",\"end\":true,\"ops\":1}\n");
    read_one(text);
    ck_assert_uint_eq(got[0].ops[0].stream, 0x1f);
    ck_assert_str_eq(got[0].ops[0].u.k.kfn->mangled, "k1");
    ck_assert_uint_eq(atl_op_bytes(&got[0], &got[0].ops[0])[0], 0x0a);
    ck_assert_uint_eq(atl_op_bytes(&got[0], &got[0].ops[0])[1], 0x0b);
    atl_step_free(&got[0]);
    free(text);

    /* a number past 64 bits, hex digits of the wrong count, a bad hex digit */
    ck_assert_int_eq(read_text("{\"step\":18446744073709551616,\"name\":\"s\",\"end\":true,"
                               "\"ops\":0}\n",
                               err, sizeof err),
                     -1);
    ck_assert_msg(strstr(err, "line 1: number out of range"), "%s", err);
    const char *bad =
        "{\"step\":1,\"name\":\"s\",\"op\":0,\"stream\":\"0x10\",\"kind\":\"launch\","
        "\"kernel\":\"k\",\"params\":[{\"i\":0,\"off\":0,\"size\":2,\"hex\":\"%s\"}]}\n";
    const char *hexes[] = {"0a0", "0a0b0c", "0g0b", "0x0b"};
    for (int i = 0; i < 4; i++) {
        char line[400];
        snprintf(line, sizeof line, bad, hexes[i]);
        ck_assert_int_eq(read_text(line, err, sizeof err), -1);
        ck_assert_msg(strstr(err, "line 1: bad hex bytes"), "%s: %s", hexes[i], err);
    }
    /* the largest value, and a stream of 17 digits (out of range) */
    ck_assert_int_eq(read_text("{\"step\":18446744073709551615,\"name\":\"s\",\"stream\":"
                               "\"0xffffffffffffffff\",\"end\":true,\"ops\":0}\n",
                               err, sizeof err),
                     0);
    ck_assert_int_eq(read_text("{\"step\":1,\"name\":\"s\",\"stream\":\"0x10000000000000000\","
                               "\"end\":true,\"ops\":0}\n",
                               err, sizeof err),
                     -1);
    ck_assert_msg(strstr(err, "expected a \"0x...\" value"), "%s", err);
}
END_TEST

/* The bar: two steps of a million ops each diff in under half a second. The
 * assertion is looser (2 s) so a loaded CI machine does not flake; the
 * figure is printed. */
START_TEST(million_ops_diff_fast)
{
    enum { N = 1000000 };
    struct atl_step a, b;
    atl_step_init(&a, "big"), atl_step_init(&b, "big");
    for (int i = 0; i < N; i++) {
        if (i == N / 3)
            push_memset(&b, 0x7000);
        push_launch(&a, kfn_ptr_int(), 0x1000, i, 4);
        push_launch(&b, kfn_ptr_int(), 0x1000, i == N / 2 ? -i : i, 4);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t n = diff(&a, &b, 20, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("test_trace: diff of two %d-op steps: %.3f s\n", N, s);
    ck_assert_uint_eq(n, 2); /* the memset and the changed argument, nothing else */
    ck_assert_msg(strstr(out, "inserted: memset"), "%s", out);
    ck_assert_msg(strstr(out, "op 500001 step(float*, int) [launch] arg1"), "%s", out);
    ck_assert_msg(s < 2.0, "diff took %.3f s", s);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

/* The live tracer's steps recorded against their reference (src/tracestep.c): the diff is
 * handed only the places where they differ (struct atl_diff_opts' sparse) and reads as the
 * diff of the whole steps: the same lines, ops named by their places, the whole steps' op
 * counts, the same print limit; with the same allocations (records and bytes compared) and
 * with other ones (hashed). */
static void sparse_case(int spans_differ, unsigned max)
{
    enum { N = 600 };
    static const uint32_t at[] = {3, 150, 151, 599};
    const size_t k = sizeof at / sizeof *at;
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    a.nth = 4, b.nth = 5, a.index = 9, b.index = 10;
    for (size_t i = 0; i < N; i++) {
        const int v = (int)i + 7 * (i == 3) - (i == 151);
        push_launch(&a, kfn_ptr_int(), 0x100000 + 16 * (i % 8), (int)i, 4);
        push_launch(&b, kfn_ptr_int(), i == 150 ? 0x300040 : 0x100000 + 16 * (i % 8), v,
                    i == 599 ? 8 : 4);
    }
    atl_step_add_span(&a, 0x100000, 0x101000, 4), atl_step_add_span(&a, 0x300000, 0x301000, 6);
    atl_step_add_span(&b, 0x100000, 0x101000, 4);
    atl_step_add_span(&b, 0x300000, 0x301000, spans_differ ? 8 : 6);
    atl_step_spans_done(&a), atl_step_spans_done(&b);

    ck_assert_uint_eq(diff(&a, &b, max, NULL), 4);
    char whole[sizeof out];
    memcpy(whole, out, sizeof out);
    int wlines = nlines;

    /* the same places of each, their bytes left where they are */
    struct atl_step sa = a, sb = b;
    sa.ops = malloc(k * sizeof *sa.ops), sb.ops = malloc(k * sizeof *sb.ops);
    ck_assert_ptr_nonnull(sa.ops);
    ck_assert_ptr_nonnull(sb.ops);
    for (size_t j = 0; j < k; j++)
        sa.ops[j] = a.ops[at[j]], sb.ops[j] = b.ops[at[j]];
    sa.nops = sa.capops = sb.nops = sb.capops = k;
    sa.shape = sa.full = sb.shape = sb.full = NULL;
    out[0] = '\0';
    nlines = 0;
    struct atl_diff_opts o = {
        .max_lines = max, .pointers = pointers, .line = collect, .sparse = at, .sparse_nops = N};
    ck_assert_uint_eq(atl_step_diff(&sa, &sb, &o, NULL), 4);
    ck_assert_str_eq(out, whole);
    ck_assert_int_eq(nlines, wlines);
    ck_assert_msg(strstr(out, ": 600 ops (was 600, +0)"), "%s", out);
    if (max > 4)
        ck_assert_msg(strstr(out, "op 3 ") && strstr(out, "op 150 ") && strstr(out, "op 151 ") &&
                          strstr(out, "op 599 step(float*, int) [launch] grid"),
                      "%s", out);
    free(sa.ops), free(sa.shape), free(sa.full);
    free(sb.ops), free(sb.shape), free(sb.full);
    atl_step_free(&a), atl_step_free(&b);
}

START_TEST(sparse_diff_reads_as_whole)
{
    sparse_case(0, 20);
    sparse_case(1, 20);
    sparse_case(0, 1);
}
END_TEST

/* Lines are formatted only for a report that prints (#43): a run of steps that fold into the
 * report before them counts its differences without formatting one line, and what the run
 * prints at its end says them all. A kind whose every report prints (more changes than a
 * report folds) formats each step's lines once. */
/* Steps 1..n of `ops` launches, every op's int one more each step, compared in turn under one
 * fold; st->formatted after each comparison in after[]. */
static void fold_run(struct atl_diff_stats *st, int n, int ops, uint64_t *after)
{
    struct atl_fold fold;
    memset(&fold, 0, sizeof fold);
    struct atl_diff_opts o = {.max_lines = 20, .line = collect};
    const struct atl_kfn *k = kfn_ptr_int();
    struct atl_step s[12];
    ck_assert_int_le(n, 12);
    for (int i = 0; i < n; i++) {
        atl_step_init(&s[i], "loop");
        s[i].index = (uint64_t)i + 1;
        for (int j = 0; j < ops; j++)
            push_launch(&s[i], k, 0x7000, 10 * j + i, 1);
        if (i)
            atl_step_compare(&s[i - 1], &s[i], &o, st, &fold);
        after[i] = st->formatted;
    }
    atl_fold_flush(&fold, &o);
    atl_fold_free(&fold);
    for (int i = 0; i < n; i++)
        atl_step_free(&s[i]);
}

START_TEST(folded_steps_format_no_line)
{
    struct atl_diff_stats st;
    memset(&st, 0, sizeof st);
    uint64_t after[12];
    out[0] = '\0';
    nlines = 0;
    /* 8 changes a step: the first report prints its 8 lines, the 9 steps after it fold */
    fold_run(&st, 11, 8, after);
    ck_assert_uint_eq(after[1], 8);
    ck_assert_uint_eq(after[10], 8);
    ck_assert_msg(strstr(out, "steps 3-11 (\"loop\"): step arg1 +1 per step"), "%.2000s", out);
    ck_assert_msg(strstr(out, "op 7 step(float*, int) [launch] arg1 @0x8 (4 bytes): 0x46 -> 0x47"),
                  "%.2000s", out);
    /* 40 changes, more than a report folds: each step prints 20 lines, formatted once */
    memset(&st, 0, sizeof st);
    out[0] = '\0';
    fold_run(&st, 6, 40, after);
    ck_assert_uint_eq(after[1], 20);
    ck_assert_uint_eq(after[5], 20 * 5);
    ck_assert_msg(strstr(out, "op 19 step(float*, int) [launch] arg1 @0x8 (4 bytes): 0xbe -> 0xbf"),
                  "%.2000s", out);
    ck_assert_msg(strstr(out, "op 20 step(float*, int)") == NULL, "%.2000s", out);
}
END_TEST

/* Far more insertions than the alignment explores: still bounded, still a report. */
START_TEST(many_insertions_fall_back)
{
    struct atl_step a, b;
    atl_step_init(&a, "s"), atl_step_init(&b, "s");
    for (int i = 0; i < 3000; i++) {
        push_launch(&a, kfn_ptr_int(), 0x1000, i, 4);
        push_memset(&b, (uint64_t)i);
        push_launch(&b, kfn_ptr_int(), 0x1000, i, 4);
    }
    size_t n = diff(&a, &b, 5, NULL);
    ck_assert_uint_ge(n, 3000);
    ck_assert_msg(strstr(out, "more differences not shown"), "%s", out);
    atl_step_free(&a), atl_step_free(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("diff");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, identical_steps_print_nothing);
    tcase_add_test(tc, sparse_diff_reads_as_whole);
    tcase_add_test(tc, scalar_change_names_the_argument);
    tcase_add_test(tc, negative_delta_of_small_value);
    tcase_add_test(tc, pointer_resolution_reads_differently);
    tcase_add_test(tc, pointers_inside_a_by_value_array);
    tcase_add_test(tc, findings_ranked_and_collapsed);
    tcase_add_test(tc, frozen_value_summary);
    tcase_add_test(tc, grid_change);
    tcase_add_test(tc, insert_in_the_middle_reports_only_it);
    tcase_add_test(tc, big_by_value_parameter_one_byte);
    tcase_add_test(tc, diff_max_and_ignore);
    tcase_add_test(tc, json_lines_round_trip);
    tcase_add_test(tc, notes_as_spans_or_a_list);
    tcase_add_test(tc, bytes_compared_only_under_the_same_allocations);
    tcase_add_test(tc, host_addresses_from_the_maps);
    tcase_add_test(tc, short_name_through_anonymous_namespace);
    tcase_add_test(tc, residue_of_uninitialised_struct_collapsed);
    tcase_add_test(tc, residue_needs_a_host_address);
    tcase_add_test(tc, residue_mark_survives_the_json_lines);
    tcase_add_test(tc, host_pointer_parameter_across_runs);
    tcase_add_test(tc, json_writer_repeated_text);
    tcase_add_test(tc, json_v1_and_v2_read_alike);
    tcase_add_test(tc, json_v2_is_compact);
    tcase_add_test(tc, json_v2_reader_checks);
    tcase_add_test(tc, corrupt_input_says_which_line);
    tcase_add_test(tc, killed_run_read_to_last_whole_step);
    tcase_add_test(tc, reader_edge_cases);
    tcase_add_test(tc, million_ops_diff_fast);
    tcase_add_test(tc, many_insertions_fall_back);
    tcase_add_test(tc, folded_steps_format_no_line);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
