/* The real-program matrix's C and CUDA C++ programs: their timing (tests/gpu/matrix/programs.py
 * says why it is done so). matrix_gpu_lock() first, before any CUDA call: from there on this
 * process alone uses the GPU (the lock file MATRIX_LOCK names; held until the process ends).
 * matrix_timed() warms up for at least WARM steps and 0.3 s, then prints "ms_per_step X", the
 * median of 5 blocks of at least PER steps and 0.1 s each. */
#ifndef MATRIX_TIMED_H
#define MATRIX_TIMED_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* The cores "0-3,8" names into set; 0 when spec is unset or empty. */
static int matrix_cpus(const char *spec, cpu_set_t *set)
{
    CPU_ZERO(set);
    if (!spec || !*spec)
        return 0;
    for (const char *p = spec; *p;) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        for (long c = lo; c <= hi && c >= 0 && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, set);
        p = *end == ',' ? end + 1 : end + (*end != '\0');
    }
    return 1;
}

/* From here on this process alone uses the GPU (MATRIX_LOCK; held until it ends), on the cores
 * MATRIX_CPUS names (every thread: the driver's too). */
static void matrix_gpu_lock(void)
{
    const char *lock = getenv("MATRIX_LOCK");
    int fd = lock ? open(lock, O_RDWR | O_CREAT, 0600) : -1;
    if (fd >= 0)
        flock(fd, LOCK_EX);
    cpu_set_t set;
    if (!matrix_cpus(getenv("MATRIX_CPUS"), &set))
        return;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            sched_setaffinity((pid_t)atoi(e->d_name), sizeof set, &set);
    if (d)
        closedir(d);
}

static double matrix_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int matrix_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void matrix_timed(void (*step)(void), int warm, int per)
{
    double t0 = matrix_now_ms();
    for (int n = 0; n < warm + 1 || matrix_now_ms() - t0 < 300; n++)
        step();
    double blocks[5];
    for (int k = 0; k < 5; k++) {
        int n = 0;
        t0 = matrix_now_ms();
        while (n < per || matrix_now_ms() - t0 < 100) {
            step();
            n++;
        }
        blocks[k] = (matrix_now_ms() - t0) / n;
    }
    qsort(blocks, 5, sizeof blocks[0], matrix_cmp);
    printf("ms_per_step %.4f\n", blocks[2]);
}

#endif
