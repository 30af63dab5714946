/*
 * atlas-diff --ranks's fast pass (tools/diff-ranks.c) on lines the library's
 * writer has just written: two processes that enqueue the same ops (other
 * step numbers, stream handles, device and host addresses, the same
 * allocations) must hash each step alike, and any other difference must
 * not. Both sides spell their keys through src/traceformat.h; a key the
 * writer renamed and the fast pass did not would leave a per-process value
 * in the hash, and nothing else would notice: --ranks parses a step in full
 * whenever its hashes disagree, so its answers stay right, only slower.
 *
 * The tool's file is included whole: its hashing is static, and the test
 * asserts on the hash itself (no output of the tool shows it).
 */
#include "../../tools/diff-ranks.c"

#include <check.h>

/* What differs between two processes running the same script. */
struct proc {
    uint64_t index;  /* the step's number in the run */
    uint64_t stream; /* stream handles (the second is stream + 0x40) */
    uint64_t dev;    /* where the allocations lie */
    uint64_t host;   /* a host buffer (a by-value parameter holding its address) */
};

/* One thing changed besides, which the hash must see. */
enum twist {
    SAME,
    GRID,       /* a launch's geometry */
    SCALAR,     /* an int argument */
    ALLOC_NAME, /* a pointer into another allocation */
    ALLOC_OFF,  /* a pointer elsewhere in the same allocation */
    BYVAL_WORD, /* a plain word of a by-value struct */
    MEMSET_VAL, /* a memset's value */
    COPY_SIZE,  /* a copy's width */
    NTWISTS
};

/* A host address of this (imaginary) process: the writer marks an 8-byte
 * parameter holding one with [at], and the fast pass leaves its bytes out. */
static int host_of(uint64_t v)
{
    return v >> 36 == 0x7ff;
}

/* (float*, int, void* host, struct {int n; float* p; long k;}) */
static const struct atl_kfn *kernel(void)
{
    static const uint32_t off[] = {0, 8, 16, 24}, size[] = {8, 4, 8, 24};
    return atl_kfn_intern("_Z3runPfiPv5Block", "run(float*, int, void*, Block)", 4, off, size);
}

static void launch(struct atl_step *s, const struct proc *p, enum twist t, uint64_t stream)
{
    uint8_t b[48] = {0};
    uint64_t ptr = p->dev + 0x1000 + (t == ALLOC_OFF ? 0x10 : 0), in_struct = p->dev + 0x2000;
    uint64_t k = t == BYVAL_WORD ? 8 : 7;
    int n = t == SCALAR ? 5 : 4, in = 3;
    memcpy(b, &ptr, 8);
    memcpy(b + 8, &n, 4);
    memcpy(b + 16, &p->host, 8);
    memcpy(b + 24, &in, 4);
    memcpy(b + 32, &in_struct, 8);
    memcpy(b + 40, &k, 8);
    struct atl_op o = {.kind = ATL_OP_LAUNCH, .stream = stream};
    o.u.k.kfn = kernel();
    o.u.k.bytes = (uintptr_t)b;
    o.u.k.grid[0] = t == GRID ? 9 : 8, o.u.k.grid[1] = o.u.k.grid[2] = 1;
    o.u.k.block[0] = 256, o.u.k.block[1] = o.u.k.block[2] = 1;
    ck_assert_int_eq(atl_step_push(s, &o), 0);
    uint32_t op = (uint32_t)s->nops - 1;
    ck_assert_int_eq(
        atl_step_annotate(s, op, 0, t == ALLOC_NAME ? 4 : 2, t == ALLOC_OFF ? 0x10 : 0), 0);
    ck_assert_int_eq(atl_step_annotate(s, op, 32, 3, 0), 0); /* the struct's pointer */
}

/* The step of one process: launches on two streams (the stream written
 * again where it changes), a memset and a copy between its allocations. */
static void build(struct atl_step *s, const struct proc *p, enum twist t)
{
    atl_step_init(s, "train_step");
    s->index = p->index;
    s->stream = p->stream;
    snprintf(s->thread, sizeof s->thread, "main");
    launch(s, p, t, p->stream);
    launch(s, p, t, p->stream + 0x40);
    struct atl_op m = {.kind = ATL_OP_MEMSET, .sub = 4, .stream = p->stream};
    m.u.m.ptr = p->dev + 0x3000, m.u.m.count = 64;
    m.shmem = t == MEMSET_VAL ? 1 : 0;
    ck_assert_int_eq(atl_step_push(s, &m), 0);
    ck_assert_int_eq(atl_step_annotate(s, 2, ATL_ANN_DST, 5, 0), 0);
    struct atl_op c = {.kind = ATL_OP_COPY, .sub = ATL_DIR_DTOD, .stream = p->stream};
    c.u.c.dst = p->dev + 0x4000, c.u.c.src = p->dev + 0x5000;
    c.u.c.w = t == COPY_SIZE ? 512 : 256, c.u.c.h = c.u.c.d = 1;
    ck_assert_int_eq(atl_step_push(s, &c), 0);
    ck_assert_int_eq(atl_step_annotate(s, 3, ATL_ANN_DST, 6, 0), 0);
    ck_assert_int_eq(atl_step_annotate(s, 3, ATL_ANN_SRC, 7, 0x80), 0);
}

static void no_fail(const char *path, const char *why)
{
    ck_abort_msg("%s: %s", path, why);
}

/* A new empty file, opened for writing; its name in path. */
static FILE *new_file(char path[28])
{
    snprintf(path, 28, "/tmp/atlas-diffranks-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    return f;
}

/* The hash of the first step of the file at path (removed after), as the
 * fast pass reads it. */
static uint64_t file_hash(const char *path, uint64_t *nops)
{
    struct rank r = {.path = strdup(path)};
    ck_assert_int_eq(map_file(&r, no_fail), 0);
    char err[256] = "";
    ck_assert_msg(read_step(&r, err, sizeof err) == 1, "%s", err);
    uint64_t h = r.hash;
    *nops = r.nops;
    munmap((void *)r.rd.map, r.rd.size);
    free(r.prev.l), free(r.cur.l), free(r.names), free(r.path);
    unlink(path);
    return h;
}

/* The file the writer makes of one process's step, read back by the fast
 * pass: the step's hash. */
static uint64_t written_hash(const struct proc *p, enum twist t, uint64_t *nops)
{
    char path[28];
    FILE *f = new_file(path);
    struct atl_step s;
    build(&s, p, t);
    atl_trace_write_header(f);
    atl_step_write_json(&s, f, host_of);
    ck_assert_int_eq(fclose(f), 0);
    atl_step_free(&s);
    return file_hash(path, nops);
}

static const struct proc rank0 = {3, 0x55d0a2c0, 0x7f3a00000000ull, 0x7ffd10001000ull};
static const struct proc rank1 = {7, 0x5601b7a0, 0x7f9c40000000ull, 0x7ffe20002000ull};

START_TEST(per_process_values_left_out)
{
    uint64_t n0, n1;
    uint64_t h0 = written_hash(&rank0, SAME, &n0), h1 = written_hash(&rank1, SAME, &n1);
    ck_assert_uint_eq(n0, 4);
    ck_assert_uint_eq(n1, 4);
    ck_assert_msg(h0 == h1,
                  "the same ops in two processes hash apart: a per-process value is hashed (a key "
                  "the writer spells otherwise than the fast pass?)");
}
END_TEST

/* The control: what is the same op's in both processes is hashed. */
START_TEST(everything_else_hashed)
{
    uint64_t n, h = written_hash(&rank0, SAME, &n);
    for (int t = SAME + 1; t < NTWISTS; t++)
        ck_assert_msg(written_hash(&rank1, (enum twist)t, &n) != h,
                      "twist %d: not seen by the hash", t);
}
END_TEST

/* Version 1 (no header, every op line whole; written by hand, as files of
 * older atlastrace are): step numbers, streams, raw addresses and the words
 * of parameters named by "alloc"/"allocW" left out. */
static uint64_t v1_hash(int rank, int twist)
{
    char path[28];
    FILE *f = new_file(path);
    unsigned step = rank ? 12 : 4, stream = rank ? 0x9a0 : 0x3c0;
    unsigned long long dev = rank ? 0x7f9c40001000ull : 0x7f3a00001000ull;
    fprintf(f,
            "{\"step\":%u,\"name\":\"s\",\"op\":0,\"stream\":\"0x%x\",\"kind\":\"launch\","
            "\"kernel\":\"_Z1kPfS_\",\"grid\":[1,1,1],\"block\":[32,1,1],\"shmem\":0,"
            "\"cluster\":[0,0,0],\"exact\":1,\"params\":[{\"i\":0,\"off\":0,\"size\":8,"
            "\"hex\":\"%016llx\",\"alloc\":\"alloc#2+0x0\"},{\"i\":1,\"off\":8,\"size\":16,"
            "\"hex\":\"%016llx%016llx\",\"alloc8\":\"alloc#3+0x0\"}]}\n"
            "{\"step\":%u,\"name\":\"s\",\"op\":1,\"stream\":\"0x%x\",\"kind\":\"memset\","
            "\"ptr\":\"0x%llx\",\"value\":0,\"elem\":4,\"count\":64,\"pitch\":0,\"height\":0,"
            "\"alloc\":\"alloc#2+0x0\"}\n"
            "{\"step\":%u,\"name\":\"s\",\"op\":2,\"stream\":\"0x%x\",\"kind\":\"copy\","
            "\"dir\":\"DtoD\",\"dst\":\"0x%llx\",\"src\":\"0x%llx\",\"bytes\":8,\"width\":8,"
            "\"height\":1,\"depth\":1,\"dstalloc\":\"alloc#2+0x0\",\"srcalloc\":\"alloc#3+0x0\"}\n"
            "{\"step\":%u,\"name\":\"s\",\"thread\":\"main\",\"stream\":\"0x%x\",\"end\":true,"
            "\"ops\":3}\n",
            step, stream, dev, twist ? 0x11ull : 0x10ull, dev + 0x100, step, stream, dev, step,
            stream, dev, dev + 0x100, step, stream);
    ck_assert_int_eq(fclose(f), 0);
    uint64_t nops;
    return file_hash(path, &nops);
}

START_TEST(version_1_per_process_values_left_out)
{
    ck_assert_uint_eq(v1_hash(0, 0), v1_hash(1, 0));
    ck_assert_uint_ne(v1_hash(0, 0), v1_hash(1, 1)); /* the by-value word before the pointer */
}
END_TEST

/* The line scanner of src/traceformat.h: escaped quotes, and keys found
 * past string values that look like keys. */
START_TEST(scanner_steps_over_strings)
{
    static const char s1[] = "ab\\\"c\\\\\"x";
    ck_assert_ptr_eq(atl_tf_str_end(s1, s1 + sizeof s1 - 1), s1 + 7);
    static const char s2[] = "ab\\\"";
    ck_assert_ptr_eq(atl_tf_str_end(s2, s2 + sizeof s2 - 1), s2 + sizeof s2 - 1);
    static const char line[] = "{\"name\":\"x\\\":\\\"y\",\"st\":\"0x1\"}";
    const char *e = line + sizeof line - 1, *k, *v;
    size_t kl;
    v = atl_tf_next_key(line, e, &k, &kl);
    ck_assert_ptr_nonnull(v);
    ck_assert(ATL_TF_IS(k, kl, ATL_TF_NAME));
    v = atl_tf_next_key(v, e, &k, &kl);
    ck_assert_ptr_nonnull(v);
    ck_assert(ATL_TF_IS(k, kl, ATL_TF_V2_STREAM));
    ck_assert_str_eq(v, "\"0x1\"}");
    ck_assert_ptr_null(atl_tf_next_key(v, e, &k, &kl));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("diff-ranks");
    TCase *tc = tcase_create("fast pass");
    tcase_add_test(tc, per_process_values_left_out);
    tcase_add_test(tc, everything_else_hashed);
    tcase_add_test(tc, version_1_per_process_values_left_out);
    tcase_add_test(tc, scanner_steps_over_strings);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
