/* The real-program matrix's C and CUDA C++ programs: their timed section. The first step runs
 * outside the lock (set-up); the warm-up and the timed steps hold the lock file MATRIX_LOCK
 * names (tests/gpu/matrix/programs.py says why). Prints "ms_per_step X", the median of 5
 * blocks of PER steps after WARM steps of warm-up. */
#ifndef MATRIX_TIMED_H
#define MATRIX_TIMED_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

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
    step();
    const char *lock = getenv("MATRIX_LOCK");
    int fd = lock ? open(lock, O_RDWR | O_CREAT, 0600) : -1;
    if (fd >= 0)
        flock(fd, LOCK_EX);
    for (int i = 0; i < warm; i++)
        step();
    double blocks[5];
    for (int k = 0; k < 5; k++) {
        double t0 = matrix_now_ms();
        for (int i = 0; i < per; i++)
            step();
        blocks[k] = (matrix_now_ms() - t0) / per;
    }
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
    qsort(blocks, 5, sizeof blocks[0], matrix_cmp);
    printf("ms_per_step %.4f\n", blocks[2]);
}

#endif
