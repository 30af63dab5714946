/*
 * Synthetic rank files for atlas-diff --ranks (its tests and make
 * ranks-bench): what ATLAS_TRACE_FILE writes for N ranks of one
 * data-parallel job, each step a run of kernel launches with an all-reduce
 * in the middle. Each rank has its own addresses and stream handles, as
 * separate processes do; pointers carry the same allocation names on every
 * rank, as the ledger gives them. Written in version 2 of the format (a
 * header, kernels declared once per step), as the library writes it.
 *
 *   gen_ranks DIR RANKS STEPS OPS [what...]
 *     insert:R:S:OP  rank R runs one more all-reduce at op OP of step S
 *     size:R:S       rank R's all-reduce of step S has another size
 *     stop:R:S       rank R's file ends after step S (hung or killed)
 *     cut:R:S        as stop, and half a line of step S+1 (killed while writing)
 *     extra:R:S      rank R runs one more step, named "extra", after step S
 * Writes DIR/trace.R.jsonl for R = 0..RANKS-1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { INSERT, SIZE, STOP, CUT, EXTRA };
struct what {
    int kind;
    long r, s, op;
};

static char *hex8(char *p, uint64_t v)
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++, v >>= 8) {
        *p++ = hx[(v >> 4) & 15];
        *p++ = hx[v & 15];
    }
    return p;
}

/* The kernels a step has declared (version 2 of the format: a kernel's name
 * and layout once per step, launches name it by id). */
struct decls {
    const char *k[8];
    int n;
};

/* One launch of a kernel taking (buffer, count) as op `op` of step `step`:
 * the kernel's declaration first when the step has not declared it. The
 * stream is written on the step's first op (it never changes here). */
static int launch(char *out, struct decls *d, long step, long op, uint64_t stream,
                  const char *kernel, unsigned grid, uint64_t base, unsigned alloc, uint64_t count)
{
    char hp[17], hc[17];
    *hex8(hp, base + 256u * alloc) = '\0';
    *hex8(hc, count) = '\0';
    int id = 0, n = 0;
    while (id < d->n && strcmp(d->k[id], kernel))
        id++;
    if (id == d->n) {
        d->k[d->n++] = kernel;
        n += sprintf(
            out, "{\"s\":%ld,\"k\":%d,\"kernel\":\"%s\",\"exact\":1,\"params\":[[0,8],[8,8]]}\n",
            step, id + 1, kernel);
    }
    n += sprintf(out + n, "{\"s\":%ld,\"o\":%ld", step, op);
    if (op == 0)
        n += sprintf(out + n, ",\"st\":\"0x%" PRIx64 "\"", stream);
    return n +
           sprintf(out + n,
                   ",\"k\":%d,\"g\":[%u,1,1],\"b\":[256,1,1],\"p\":\"%s%s\",\"a\":[[0,%u,0]]}\n",
                   id + 1, grid, hp, hc, alloc);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: gen_ranks DIR RANKS STEPS OPS [insert:R:S:OP|size:R:S|stop:R:S|"
                        "cut:R:S]...\n");
        return 2;
    }
    const char *dir = argv[1];
    long nr = atol(argv[2]), ns = atol(argv[3]), no = atol(argv[4]);
    struct what w[16];
    int nw = 0;
    for (int i = 5; i < argc && nw < 16; i++) {
        char k[16];
        long a = 0, b = 0, c = 0;
        if (sscanf(argv[i], "%15[a-z]:%ld:%ld:%ld", k, &a, &b, &c) < 3) {
            fprintf(stderr, "gen_ranks: bad %s\n", argv[i]);
            return 2;
        }
        w[nw++] = (struct what){!strcmp(k, "insert") ? INSERT
                                : !strcmp(k, "size") ? SIZE
                                : !strcmp(k, "stop") ? STOP
                                : !strcmp(k, "cut")  ? CUT
                                                     : EXTRA,
                                a, b, c};
    }
    static const char *const kern[] = {"_Z6linearPfS_", "_Z4geluPf", "_Z7softmaxPf",
                                       "_Z9layernormPf"};
    static const char ar[] = "ncclDevKernel_AllReduce_Sum_f32";
    char *line = malloc(2048);
    for (long r = 0; r < nr; r++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/trace.%ld.jsonl", dir, r);
        FILE *f = fopen(path, "w");
        if (!f || !line) {
            perror(path);
            return 1;
        }
        setvbuf(f, NULL, _IOFBF, 1 << 20);
        fputs("{\"format\":\"atlastrace-steps\",\"version\":2}\n", f);
        uint64_t base = 0x7f0000000000ULL + (uint64_t)r * 0x100000000ULL; /* per process */
        uint64_t stream = 0x5500000 + (uint64_t)r * 0x1000;
        long stop = -1, cut = 0, shift = 0; /* shift: extra steps so far */
        for (int i = 0; i < nw; i++)
            if ((w[i].kind == STOP || w[i].kind == CUT) && w[i].r == r)
                stop = w[i].s, cut = w[i].kind == CUT;
        for (long s = 1; s <= ns; s++) {
            if (stop >= 0 && s > stop) {
                if (cut) {
                    struct decls d = {.n = 0};
                    int n = launch(line, &d, s + shift, 0, stream, kern[0], 64, base, 1, 4096);
                    fwrite(line, 1, (size_t)n / 2, f);
                }
                break;
            }
            long op = 0, at = s + shift; /* the step's number in this rank's run */
            struct decls d = {.n = 0};
            for (long i = 0; i < no; i++) {
                int n;
                for (int k = 0; k < nw; k++)
                    if (w[k].kind == INSERT && w[k].r == r && w[k].s == s && w[k].op == op) {
                        n = launch(line, &d, at, op++, stream, ar, 32, base, 9, 1 << 20);
                        fwrite(line, 1, (size_t)n, f);
                    }
                if (i == no / 2) { /* the step's all-reduce of the gradients */
                    uint64_t count = 1 << 20;
                    for (int k = 0; k < nw; k++)
                        if (w[k].kind == SIZE && w[k].r == r && w[k].s == s)
                            count = 1 << 19;
                    n = launch(line, &d, at, op++, stream, ar, 32, base, 9, count);
                } else {
                    n = launch(line, &d, at, op++, stream, kern[i & 3], 64 + (unsigned)(i & 7),
                               base, 1 + (unsigned)(i & 7), 4096 + (uint64_t)i);
                }
                fwrite(line, 1, (size_t)n, f);
            }
            fprintf(f, "{\"step\":%ld,\"name\":\"step\",\"end\":true,\"ops\":%ld}\n", at, op);
            for (int k = 0; k < nw; k++)
                if (w[k].kind == EXTRA && w[k].r == r && w[k].s == s) {
                    shift++;
                    struct decls dx = {.n = 0};
                    int n = launch(line, &dx, s + shift, 0, stream, kern[0], 1, base, 1, 1);
                    fwrite(line, 1, (size_t)n, f);
                    fprintf(f, "{\"step\":%ld,\"name\":\"extra\",\"end\":true,\"ops\":1}\n",
                            s + shift);
                }
        }
        if (fclose(f)) {
            perror(path);
            return 1;
        }
    }
    free(line);
    return 0;
}
