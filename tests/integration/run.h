/* Running a target program under the preload and reading what it and
 * atlastrace printed. */
#ifndef ATL_TEST_RUN_H
#define ATL_TEST_RUN_H

#include <stddef.h>

#ifndef BUILD_DIR
#define BUILD_DIR "build"
#endif

struct run_result {
    int status; /* exit status, or 128+signal */
    char *out;  /* the program's stdout */
    char *err;  /* its stderr */
    char *log;  /* the ATLAS_LOG file (when the run set one) */
};

/* Runs argv[0] (a path) with the environment of this process plus `env`
 * (NULL-terminated "K=V" strings; "K=" with an empty value sets it empty, a
 * bare "K" removes it). With `preload`, LD_PRELOAD is our library and
 * ATLAS_LOG a fresh file read back into ->log. LD_LIBRARY_PATH points at the
 * fake driver unless env says otherwise. */
void run_target(struct run_result *r, char *const argv[], const char *const env[], int preload);
void run_free(struct run_result *r);

/* In a forked child about to exec a target: the environment run_target
 * gives it. `log` NULL: no preload; "" the preload without ATLAS_LOG (its
 * reports on stderr); else the preload and ATLAS_LOG=log. */
void run_child_env(const char *const env[], const char *log);

/* A file's whole text, NUL-terminated (its length in *len when not NULL),
 * or NULL when it cannot be opened. */
char *read_file_text(const char *path, size_t *len);

/* One row of atlastrace's stats table. */
struct stat_row {
    unsigned long long calls, linked, dlsym, gpa, got_dlsym, got_gpa;
};
/* Finds the row of `fn` in a log; returns 0 and zeroes *row if absent. */
int stats_row(const char *log, const char *fn, struct stat_row *row);

/* The fake driver's own count of `fn` from a target's stdout (0 if absent). */
unsigned long long fake_count(const char *out, const char *fn);

/* Check assertions on a program's output or log (for test files that
 * include check.h). */
#define HAS(text, needle)                                                                          \
    ck_assert_msg(strstr((text), (needle)) != NULL, "missing '%s' in:\n%s", (needle), (text))
#define HASNT(text, needle)                                                                        \
    ck_assert_msg(strstr((text), (needle)) == NULL, "unexpected '%s' in:\n%s", (needle), (text))

/* Number of lines in `text` containing `needle`. */
int count_lines(const char *text, const char *needle);

#endif
