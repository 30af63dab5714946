/* Target (d): 8 threads start at once; each resolves the driver through
 * cuGetProcAddress_v2 (the first of them triggers our initialisation while
 * the others race it) and runs the workload. */
#include "gpa_resolve.h"

#include <pthread.h>
#include <stdio.h>

#define THREADS 8

static pthread_barrier_t start;

static void *worker(void *arg)
{
    int tag = (int)(long)arg;
    struct wl_api api;
    CUfunction f;
    pthread_barrier_wait(&start);
    cuuint64_t flags =
        (tag & 1) ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    if (gpa_resolve(&api, flags, tag & 2) || wl_setup(&api, &f) || wl_run(&api, f, tag, 0))
        return (void *)1;
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        void *rv;
        pthread_join(t[i], &rv);
        bad |= rv != NULL;
    }
    if (bad)
        return 1;
    wl_print_fake_counts();
    printf("ok\n");
    return 0;
}
