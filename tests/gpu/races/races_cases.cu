// Seeded races and correct multi-stream programs in CUDA C, for make races-gpu-check
// (tests/gpu/races/run_races.sh). Each seeded case runs raced or fixed:
//
//   races_cases CASE raced|fixed
//     side_copy     a copy on a side stream, read by a kernel on another without a wait
//     wrong_event   the reader waits for an event of a third stream
//     early_record  the event is recorded before the copy it should cover
//     legacy        the legacy default stream reads a stream's copy: safe for a blocking
//                   stream (fixed), a race for a non-blocking one (raced)
//     ptds          two threads, each on its per-thread default stream (the binary built
//                   with --default-stream per-thread): safe only through an event
//     graph         a captured memset launched as a graph, read on another stream
//     host_fn       the host waits for a host function before launching the reader; raced:
//                   the function was enqueued before the copy
//   races_cases CASE            correct programs, of the kinds CUDA's samples teach:
//     overlap       copies and kernels overlapped on 4 streams, each on its chunk of one array
//     many          16 streams, each with a buffer of its own, many rounds
//     priorities    a high-priority stream consuming a low-priority producer's output, by events
//     timing        events recorded only to time a stream's work
//
// Prints "ok" at the end; checks every call.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            printf("FAIL %s: %s\n", #call, cudaGetErrorString(e_));                                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define N (1 << 20)

__global__ void consume(const float *x, float *sum, int n)
{
    float s = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        s += x[i];
    atomicAdd(sum, s);
}

__global__ void incr(float *x, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] += 1.0f;
}

/* writes every element (the first one too: no element keeps its value) */
__global__ void produce(float *x, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] = 0.5f * i + 3.0f;
}

/* a name without types: every parameter may write, as far as the name says */
extern "C" __global__ void kscale(float *x, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] = x[i] * 2.0f + 1.0f;
}

/* reads through a pointer to non-const; writes only its own sum */
__global__ void peek(float *x, float *s, int n)
{
    float t = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        t += x[i];
    atomicAdd(s, t);
}

static float *d, *h, *sum;
static int raced;

static cudaStream_t stream(unsigned flags)
{
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, flags));
    return s;
}

static cudaEvent_t event(void)
{
    cudaEvent_t e;
    CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
}

__attribute__((noinline)) void upload(cudaStream_t s)
{
    CHECK(cudaMemcpyAsync(d, h, N * sizeof(float), cudaMemcpyHostToDevice, s));
}

__attribute__((noinline)) void read_on(cudaStream_t s)
{
    consume<<<64, 256, 0, s>>>(d, sum, N);
    CHECK(cudaGetLastError());
}

__attribute__((noinline)) void produce_on(cudaStream_t s)
{
    produce<<<64, 256, 0, s>>>(d, N);
    CHECK(cudaGetLastError());
}

__attribute__((noinline)) void download(cudaStream_t s)
{
    CHECK(cudaMemcpyAsync(h, d, N * sizeof(float), cudaMemcpyDeviceToHost, s));
}

static void handoff(cudaStream_t a, cudaStream_t b)
{
    if (raced)
        return;
    cudaEvent_t e = event();
    CHECK(cudaEventRecord(e, a));
    CHECK(cudaStreamWaitEvent(b, e, 0));
}

static void side_copy(void)
{
    cudaStream_t a = stream(cudaStreamNonBlocking), b = stream(cudaStreamNonBlocking);
    upload(a);
    handoff(a, b);
    read_on(b);
}

static void wrong_event(void)
{
    cudaStream_t a = stream(cudaStreamNonBlocking), b = stream(cudaStreamNonBlocking),
                 c = stream(cudaStreamNonBlocking);
    cudaEvent_t ea = event(), ec = event();
    upload(a);
    CHECK(cudaEventRecord(ea, a));
    CHECK(cudaEventRecord(ec, c));
    CHECK(cudaStreamWaitEvent(b, raced ? ec : ea, 0));
    read_on(b);
}

static void early_record(void)
{
    cudaStream_t a = stream(cudaStreamNonBlocking), b = stream(cudaStreamNonBlocking);
    cudaEvent_t e = event();
    if (raced)
        CHECK(cudaEventRecord(e, a));
    upload(a);
    if (!raced)
        CHECK(cudaEventRecord(e, a));
    CHECK(cudaStreamWaitEvent(b, e, 0));
    read_on(b);
}

static void legacy(void)
{
    cudaStream_t a = stream(raced ? cudaStreamNonBlocking : cudaStreamDefault);
    upload(a);
    read_on(0); /* the legacy default stream (this binary is not per-thread) */
}

static cudaEvent_t pt_event;
static void *pt_writer(void *)
{
    upload(0); /* this thread's own default stream */
    if (!raced)
        CHECK(cudaEventRecord(pt_event, 0));
    return NULL;
}
static void *pt_reader(void *)
{
    if (!raced)
        CHECK(cudaStreamWaitEvent(0, pt_event, 0));
    read_on(0);
    return NULL;
}

static void ptds(void)
{
#ifndef RACES_PTDS
    printf("FAIL ptds: this binary was not built with --default-stream per-thread\n");
    exit(1);
#endif
    pt_event = event();
    pthread_t t;
    pthread_create(&t, NULL, pt_writer, NULL);
    pthread_join(t, NULL); /* orders the threads, not their streams */
    pthread_create(&t, NULL, pt_reader, NULL);
    pthread_join(t, NULL);
}

static void graph(void)
{
    cudaStream_t cap = stream(cudaStreamNonBlocking), a = stream(cudaStreamNonBlocking),
                 b = stream(cudaStreamNonBlocking);
    cudaGraph_t g;
    cudaGraphExec_t x;
    CHECK(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemsetAsync(d, 0, N * sizeof(float), cap));
    CHECK(cudaStreamEndCapture(cap, &g));
    CHECK(cudaGraphInstantiate(&x, g, 0));
    CHECK(cudaGraphLaunch(x, a));
    handoff(a, b);
    read_on(b);
}

/* Issue #44: a kernel's write (float *, no const), read on another stream */
static void kw_copy(void)
{
    cudaStream_t a = stream(cudaStreamNonBlocking), b = stream(cudaStreamNonBlocking);
    produce_on(a);
    handoff(a, b);
    download(b);
}

static void kw_kernel(void)
{
    cudaStream_t a = stream(cudaStreamNonBlocking), b = stream(cudaStreamNonBlocking);
    produce_on(a);
    handoff(a, b);
    read_on(b);
}

static void kw_legacy(void)
{
    cudaStream_t a = stream(raced ? cudaStreamNonBlocking : cudaStreamDefault);
    produce_on(a);
    read_on(0);
}

static void kw_early(void)
{
    cudaStream_t a = stream(cudaStreamNonBlocking), b = stream(cudaStreamNonBlocking);
    cudaEvent_t e = event();
    if (raced)
        CHECK(cudaEventRecord(e, a));
    produce_on(a);
    if (!raced)
        CHECK(cudaEventRecord(e, a));
    CHECK(cudaStreamWaitEvent(b, e, 0));
    download(b);
}

static void kw_extern(void)
{
    cudaStream_t a = stream(cudaStreamNonBlocking), b = stream(cudaStreamNonBlocking);
    kscale<<<64, 256, 0, a>>>(d, N);
    CHECK(cudaGetLastError());
    handoff(a, b);
    download(b);
}

/* a kernel captured into a graph, never launched outside it */
static void kw_graph(void)
{
    cudaStream_t cap = stream(cudaStreamNonBlocking), a = stream(cudaStreamNonBlocking),
                 b = stream(cudaStreamNonBlocking);
    cudaGraph_t g;
    cudaGraphExec_t x;
    CHECK(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal));
    produce_on(cap);
    CHECK(cudaStreamEndCapture(cap, &g));
    CHECK(cudaGraphInstantiate(&x, g, 0));
    CHECK(cudaGraphLaunch(x, a));
    handoff(a, b);
    download(b);
}

static cudaStream_t kt_a, kt_b;
static cudaEvent_t kt_e;
static void *kt_writer(void *)
{
    produce_on(kt_a);
    CHECK(cudaEventRecord(kt_e, kt_a));
    return NULL;
}
static void *kt_reader(void *)
{
    if (!raced)
        CHECK(cudaStreamWaitEvent(kt_b, kt_e, 0));
    read_on(kt_b);
    return NULL;
}

static void kw_threads(void)
{
    kt_a = stream(cudaStreamNonBlocking), kt_b = stream(cudaStreamNonBlocking);
    kt_e = event();
    pthread_t t;
    pthread_create(&t, NULL, kt_writer, NULL);
    pthread_join(t, NULL); /* orders the threads, not their streams */
    pthread_create(&t, NULL, kt_reader, NULL);
    pthread_join(t, NULL);
}

/* simpleHyperQ's shape: kernels on 4 streams writing disjoint parts of one allocation, and
 * kernels on 4 streams reading one buffer through a pointer to non-const: no race */
static void kw_disjoint(void)
{
    const int ns = 4, chunk = N / ns;
    cudaStream_t s[ns];
    for (int i = 0; i < ns; i++)
        s[i] = stream(cudaStreamNonBlocking);
    for (int rep = 0; rep < 5; rep++)
        for (int i = 0; i < ns; i++)
            produce<<<16, 256, 0, s[i]>>>(d + i * chunk, chunk);
    CHECK(cudaDeviceSynchronize());
}

static void kw_shared_read(void)
{
    const int ns = 4;
    cudaStream_t s[ns];
    float *sums;
    CHECK(cudaMalloc(&sums, ns * 64 * sizeof(float)));
    CHECK(cudaMemset(sums, 0, ns * 64 * sizeof(float)));
    /* cudaMemset may return before it is done, and the legacy stream does not order the
     * non-blocking ones: without this the memset races with the kernels (the detector said
     * so on the H100) */
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < ns; i++)
        s[i] = stream(cudaStreamNonBlocking);
    for (int rep = 0; rep < 5; rep++)
        for (int i = 0; i < ns; i++)
            peek<<<16, 256, 0, s[i]>>>(d, sums + i * 64, N);
    CHECK(cudaDeviceSynchronize());
}

static volatile int flag;
static void CUDART_CB set_flag(void *p)
{
    *(volatile int *)p = 1;
}

static void host_fn(void)
{
    cudaStream_t a = stream(cudaStreamNonBlocking), b = stream(cudaStreamNonBlocking);
    if (raced)
        CHECK(cudaLaunchHostFunc(a, set_flag, (void *)&flag));
    upload(a);
    if (!raced)
        CHECK(cudaLaunchHostFunc(a, set_flag, (void *)&flag));
    while (!flag)
        ;
    read_on(b);
}

/* simpleStreams / the programming guide's overlap: each stream copies its chunk in,
 * increments it, copies it out; the kernel is given the chunk's address */
static void overlap(void)
{
    const int ns = 4, chunk = N / ns;
    cudaStream_t s[ns];
    for (int i = 0; i < ns; i++)
        s[i] = stream(cudaStreamDefault);
    for (int rep = 0; rep < 10; rep++) {
        for (int i = 0; i < ns; i++) {
            CHECK(cudaMemcpyAsync(d + i * chunk, h + i * chunk, chunk * sizeof(float),
                                  cudaMemcpyHostToDevice, s[i]));
            incr<<<32, 256, 0, s[i]>>>(d + i * chunk, chunk);
            CHECK(cudaMemcpyAsync(h + i * chunk, d + i * chunk, chunk * sizeof(float),
                                  cudaMemcpyDeviceToHost, s[i]));
        }
        CHECK(cudaDeviceSynchronize());
    }
}

static void many(void)
{
    const int ns = 16;
    cudaStream_t s[ns];
    float *buf[ns];
    for (int i = 0; i < ns; i++) {
        s[i] = stream(cudaStreamNonBlocking);
        CHECK(cudaMalloc(&buf[i], 1 << 16));
    }
    for (int rep = 0; rep < 50; rep++)
        for (int i = 0; i < ns; i++) {
            CHECK(cudaMemsetAsync(buf[i], 0, 1 << 16, s[i]));
            incr<<<8, 128, 0, s[i]>>>(buf[i], (1 << 16) / 4);
        }
    for (int i = 0; i < ns; i++)
        CHECK(cudaStreamSynchronize(s[i]));
}

static void priorities(void)
{
    int lo, hi;
    CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    cudaStream_t prod, cons;
    CHECK(cudaStreamCreateWithPriority(&prod, cudaStreamNonBlocking, lo));
    CHECK(cudaStreamCreateWithPriority(&cons, cudaStreamNonBlocking, hi));
    cudaEvent_t made = event(), used = event();
    for (int rep = 0; rep < 20; rep++) {
        if (rep)
            CHECK(cudaStreamWaitEvent(prod, used, 0)); /* the buffer is free again */
        upload(prod);
        CHECK(cudaEventRecord(made, prod));
        CHECK(cudaStreamWaitEvent(cons, made, 0));
        read_on(cons);
        CHECK(cudaEventRecord(used, cons));
    }
    CHECK(cudaDeviceSynchronize());
}

static void timing(void)
{
    cudaStream_t s = stream(cudaStreamNonBlocking);
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    for (int rep = 0; rep < 5; rep++) {
        CHECK(cudaEventRecord(start, s));
        upload(s);
        incr<<<64, 256, 0, s>>>(d, N);
        read_on(s);
        CHECK(cudaEventRecord(stop, s));
        CHECK(cudaEventSynchronize(stop));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
    }
}

static const struct {
    const char *name;
    void (*run)(void);
    int seeded;
} cases[] = {
    {"side_copy", side_copy, 1},   {"wrong_event", wrong_event, 1}, {"early_record", early_record, 1},
    {"legacy", legacy, 1},         {"ptds", ptds, 1},               {"graph", graph, 1},
    {"host_fn", host_fn, 1},       {"overlap", overlap, 0},         {"many", many, 0},
    {"priorities", priorities, 0}, {"timing", timing, 0},
    {"kw_copy", kw_copy, 1},       {"kw_kernel", kw_kernel, 1},     {"kw_legacy", kw_legacy, 1},
    {"kw_early", kw_early, 1},     {"kw_extern", kw_extern, 1},     {"kw_threads", kw_threads, 1},
    {"kw_disjoint", kw_disjoint, 0}, {"kw_shared_read", kw_shared_read, 0},
    {"kw_graph", kw_graph, 1},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: races_cases CASE [raced|fixed]\n");
        return 2;
    }
    raced = argc > 2 && strcmp(argv[2], "raced") == 0;
    CHECK(cudaMalloc(&d, N * sizeof(float)));
    CHECK(cudaMalloc(&sum, sizeof(float)));
    CHECK(cudaMallocHost(&h, N * sizeof(float)));
    for (int i = 0; i < N; i++)
        h[i] = 1.0f;
    CHECK(cudaDeviceSynchronize());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(cases[i].name, argv[1]) != 0)
            continue;
        cases[i].run();
        CHECK(cudaDeviceSynchronize());
        printf("ok\n");
        return 0;
    }
    fprintf(stderr, "races_cases: no case '%s'\n", argv[1]);
    return 2;
}
