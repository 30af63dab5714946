/* The real-program matrix's C and CUDA C++ programs: their timing (tests/gpu/matrix/programs.py
 * says why it is done so, and what the files of MATRIX_TURNS are). matrix_gpu_lock() first,
 * before any CUDA call: from there on this process alone uses the GPU (the lock file MATRIX_LOCK
 * names) until its warm-up ends. matrix_timed() warms up for at least WARM steps and 0.3 s, then
 * times MATRIX_BLOCKS blocks (5 unless set) of at least PER steps and 0.1 s each, each in its
 * turn among the MATRIX_N processes of its group, after one step untimed; prints
 * "ms_per_step X", their median, and "block_ms X Y ...", each block's. */
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
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
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
static int matrix_lock_fd = -1;

static void matrix_gpu_lock(void)
{
    const char *lock = getenv("MATRIX_LOCK");
    int fd = lock ? open(lock, O_RDWR | O_CREAT, 0600) : -1;
    if (fd >= 0)
        flock(fd, LOCK_EX);
    matrix_lock_fd = fd;
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

/* ---- turns (programs.py's Turns, the same files) ---- */
static const char *matrix_turns;
static int matrix_n = 1, matrix_i;

static void matrix_path(char *buf, size_t len, const char *name, int k)
{
    if (k >= 0)
        snprintf(buf, len, "%s/%s.%d", matrix_turns, name, k);
    else
        snprintf(buf, len, "%s/%s", matrix_turns, name);
}

static int matrix_exists(const char *name, int k)
{
    char p[4096];
    struct stat st;
    matrix_path(p, sizeof p, name, k);
    return stat(p, &st) == 0;
}

static long matrix_turn(void)
{
    char p[4096], buf[32] = "";
    matrix_path(p, sizeof p, "turn", -1);
    FILE *f = fopen(p, "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            buf[0] = '\0';
        fclose(f);
    }
    return atol(buf);
}

/* the turn from t to t + 1, unless another process moved it meanwhile */
static void matrix_advance(long t)
{
    char lk[4096], p[4096], tmp[4200];
    matrix_path(lk, sizeof lk, "turn.lock", -1);
    int fd = open(lk, O_RDWR | O_CREAT, 0600);
    if (fd >= 0)
        flock(fd, LOCK_EX);
    if (matrix_turn() == t) {
        matrix_path(p, sizeof p, "turn", -1);
        snprintf(tmp, sizeof tmp, "%s.%d", p, (int)getpid());
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "%ld\n", t + 1);
            fclose(f);
            rename(tmp, p);
        }
    }
    if (fd >= 0)
        close(fd);
}

static void matrix_sleep_ms(double ms)
{
    struct timespec t = {(time_t)(ms / 1e3), (long)((ms - (long)(ms / 1e3) * 1e3) * 1e6)};
    nanosleep(&t, NULL);
}

static double matrix_now_ms(void);

/* warmed up: the GPU lock goes, and the group's turns begin when all are warm */
static void matrix_ready(void)
{
    if (matrix_lock_fd >= 0) {
        flock(matrix_lock_fd, LOCK_UN);
        close(matrix_lock_fd);
        matrix_lock_fd = -1;
    }
    matrix_turns = getenv("MATRIX_TURNS");
    if (!matrix_turns || !*matrix_turns) {
        matrix_turns = NULL;
        return;
    }
    matrix_n = atoi(getenv("MATRIX_N") ? getenv("MATRIX_N") : "1");
    matrix_i = atoi(getenv("MATRIX_I") ? getenv("MATRIX_I") : "0");
    char p[4096];
    matrix_path(p, sizeof p, "ready", matrix_i);
    FILE *f = fopen(p, "w");
    if (f)
        fclose(f);
    double until = matrix_now_ms() + 1e3 * atof(getenv("MATRIX_READY_WAIT") ? getenv("MATRIX_READY_WAIT") : "240");
    while (matrix_now_ms() < until) {
        int k = 0;
        while (k < matrix_n && (matrix_exists("ready", k) || matrix_exists("dead", k)))
            k++;
        if (k == matrix_n)
            return;
        matrix_sleep_ms(10);
    }
}

static void matrix_wait(long slot)
{
    for (;;) {
        long t = matrix_turn();
        if (t >= slot)
            return;
        if (matrix_exists("dead", (int)(t % matrix_n)))
            matrix_advance(t); /* a process that ended early: its turns pass */
        else
            matrix_sleep_ms(0.5);
    }
}

static void matrix_timed(void (*step)(void), int warm, int per)
{
    double t0 = matrix_now_ms();
    for (int n = 0; n < warm + 1 || matrix_now_ms() - t0 < 300; n++)
        step();
    matrix_ready();
    int nb = getenv("MATRIX_BLOCKS") ? atoi(getenv("MATRIX_BLOCKS")) : 5;
    if (nb < 1 || nb > 1000)
        nb = 5;
    double *blocks = (double *)calloc((size_t)nb, sizeof *blocks),
           *sorted = (double *)calloc((size_t)nb, sizeof *sorted);
    if (!blocks || !sorted)
        exit(1);
    for (int k = 0; k < nb; k++) {
        long slot = (long)k * matrix_n + matrix_i;
        if (matrix_turns) {
            matrix_wait(slot);
            /* the order turns were taken in, for the runner's own test (tests/harness) */
            const char *tl = getenv("MATRIX_TURNS_LOG");
            FILE *f = tl && *tl ? fopen(tl, "a") : NULL;
            if (f) {
                fprintf(f, "%s %ld %d\n", matrix_turns, slot, matrix_i);
                fclose(f);
            }
        }
        step(); /* untimed: the GPU was another process's */
        int n = 0;
        t0 = matrix_now_ms();
        while (n < per || matrix_now_ms() - t0 < 100) {
            step();
            n++;
        }
        blocks[k] = sorted[k] = (matrix_now_ms() - t0) / n;
        if (matrix_turns)
            matrix_advance(slot);
    }
    qsort(sorted, (size_t)nb, sizeof sorted[0], matrix_cmp);
    printf("ms_per_step %.4f\nblock_ms", nb % 2 ? sorted[nb / 2] : (sorted[nb / 2 - 1] + sorted[nb / 2]) / 2);
    for (int k = 0; k < nb; k++)
        printf(" %.4f", blocks[k]);
    printf("\n");
    fflush(stdout);
    free(blocks);
    free(sorted);
}

#endif
