#define _GNU_SOURCE /* fopencookie, memrchr */
#include "log.h"

#include "config.h"
#include "hint.h"
#include "stack.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Where reports go: stderr, the ATLAS_LOG file, or -1 (nowhere: stderr is a
 * broken pipe). Changed once at most after load, atomically. */
static int log_fd = 2;
static int log_level = ATL_WARN;
static char log_path[4096]; /* the ATLAS_LOG file, expanded */

int atl_log_fd(void)
{
    return __atomic_load_n(&log_fd, __ATOMIC_RELAXED);
}

void atl_log_set_level(int level)
{
    log_level = level;
}

ssize_t atl_write_nosigpipe(int fd, const void *p, size_t n)
{
    /* A write to a pipe whose reader is gone raises SIGPIPE in the writing
     * thread, which kills a program that never asked for our output. Block
     * it around our write, and take back the one our write raised (one that
     * was already pending is the program's and stays). */
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    ssize_t w = write(fd, p, n);
    int e = errno;
    if (w < 0 && e == EPIPE && !was_pending) {
        const struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return w;
}

int atl_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = atl_write_nosigpipe(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno;
        if (w == 0)
            return EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void emit(const char *msg, size_t len)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf - 1, "atlas[%ld]: ", (long)getpid());
    if (n < 0)
        return;
    size_t room = sizeof buf - 1 - (size_t)n;
    if (len > room)
        len = room;
    /* one report, one line: a control byte in a kernel name or a path must
     * not start a line of its own without the prefix */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)msg[i];
        buf[(size_t)n + i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    size_t total = (size_t)n + len;
    buf[total++] = '\n';
    int fd = atl_log_fd();
    if (fd < 0)
        return;
    int e = atl_write_all(fd, buf, total);
    if (!e)
        return;
    if (fd != 2) {
        /* the ATLAS_LOG file failed (full disk, EIO, a reader gone): say so
         * once on stderr and report there from now on. The old descriptor
         * stays open: another thread may be writing to it right now, and a
         * number closed under it could be the program's next file. */
        if (__atomic_compare_exchange_n(&log_fd, &fd, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            char note[600];
            snprintf(note, sizeof note,
                     "writing ATLAS_LOG file '%.400s' failed: %s; reporting on "
                     "stderr from here",
                     log_path, strerror(e));
            emit(note, strlen(note));
        }
        if (atl_log_fd() == 2)
            emit(msg, len);
    } else if (e == EPIPE) {
        /* stderr itself is a broken pipe: nowhere left to report */
        __atomic_store_n(&log_fd, -1, __ATOMIC_RELAXED);
    }
}

void atl_log_line(const char *line)
{
    emit(line, strlen(line));
}

void atl_log_frames(int level, const char *tag, const struct atl_stack *s, int from, int max)
{
    if (level > log_level)
        return;
    char fr[512];
    for (int i = from; i < s->n && i < from + max; i++) {
        atl_frame_format(s->pc[i], fr, sizeof fr);
        atl_log(level, "%s:   #%d %s", tag, i - from, fr);
    }
}

void atl_log(int level, const char *fmt, ...)
{
    if (level > log_level)
        return;
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    emit(msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}

/* Why the opened file `fd` (whose status is `st`) must not be written, or
 * NULL. */
static const char *refusal(const struct stat *st, char *why, size_t len)
{
    if (S_ISREG(st->st_mode)) {
        /* "created 0600" only covers new files: a file someone else made
         * (even mode 0666) may be read by them or be a trap for root */
        if (st->st_uid != geteuid()) {
            snprintf(why, len, "owned by uid %u, not by this user (uid %u)", (unsigned)st->st_uid,
                     (unsigned)geteuid());
            return why;
        }
        return NULL;
    }
    /* terminals and /dev/null-like devices neither block nor keep output */
    if (S_ISCHR(st->st_mode))
        return NULL;
    const char *kind = S_ISFIFO(st->st_mode)   ? "a FIFO"
                       : S_ISDIR(st->st_mode)  ? "a directory"
                       : S_ISSOCK(st->st_mode) ? "a socket"
                       : S_ISBLK(st->st_mode)  ? "a block device"
                                               : "not a file";
    snprintf(why, len, "%s, not a regular file", kind);
    return why;
}

static void rank_check_once(void)
{
    static int done;
    char line[200];
    if (!__atomic_exchange_n(&done, 1, __ATOMIC_RELAXED) &&
        atl_config_rank_problem(line, sizeof line))
        atl_log_line(line);
}

/* The report files this process writes, by file: a second setting naming one of them is
 * refused as such (two reports in one file would cut each other up, and the lock alone would
 * blame "another process"). */
static struct {
    dev_t dev;
    ino_t ino;
    const char *setting;
} opened[4];
static pthread_mutex_t opened_mu = PTHREAD_MUTEX_INITIALIZER;

/* The setting that already writes st's file, or NULL; else, when `add`, it becomes setting's. */
static const char *opened_file(const struct stat *st, const char *setting, int add)
{
    const char *other = NULL;
    pthread_mutex_lock(&opened_mu);
    size_t i = 0;
    for (; i < sizeof opened / sizeof opened[0] && opened[i].setting && !other; i++)
        if (opened[i].dev == st->st_dev && opened[i].ino == st->st_ino &&
            strcmp(opened[i].setting, setting) != 0)
            other = opened[i].setting;
    if (!other && add && i < sizeof opened / sizeof opened[0])
        opened[i].dev = st->st_dev, opened[i].ino = st->st_ino, opened[i].setting = setting;
    pthread_mutex_unlock(&opened_mu);
    return other;
}

int atl_open_report_file(const char *setting, const char *pattern, int append, const char *fallback,
                         char *path, size_t len)
{
    char why[160];
    const char *bad = NULL;
    int fd = -1;
    if (strstr(pattern, "%r"))
        rank_check_once();
    if (atl_config_expand_path(pattern, path, len) < 0) {
        atl_config_show_value(path, why, 72);
        snprintf(path, len, "%s", why);
        snprintf(why, sizeof why, "the name is longer than %zu bytes once expanded", len - 1);
        bad = why;
        goto refused;
    }
    /* The stream the user gave as stderr (ATLAS_LOG=/dev/stderr, a pipe or
     * terminal behind it): written through our own copy of descriptor 2,
     * never reopened (a pipe reopened would not block, a file would be
     * truncated under the program's own stderr). */
    struct stat st, err;
    if (stat(path, &st) == 0 && fstat(2, &err) == 0 && st.st_dev == err.st_dev &&
        st.st_ino == err.st_ino) {
        fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (fd >= 0)
            return fd;
    }
    /* O_NONBLOCK: a FIFO must never block the program at its first CUDA
     * call (with no reader the open fails with ENXIO, with one it is
     * refused below). Never O_TRUNC here: nothing is cut before the checks. */
    fd = open(path,
              O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (append ? O_APPEND : 0),
              0600);
    if (fd < 0) {
        int e = errno;
        bad = e == ELOOP   ? "a symbolic link (refused)"
              : e == ENXIO ? "a FIFO or device with no reader, not a regular file"
                           : strerror(e);
        goto refused;
    }
    if (fstat(fd, &st) != 0)
        bad = strerror(errno);
    else
        bad = refusal(&st, why, sizeof why);
    const char *other = !bad && S_ISREG(st.st_mode) ? opened_file(&st, setting, 0) : NULL;
    if (other) {
        char name[64];
        snprintf(why, sizeof why, "%s writes it already (each report needs a file of its own)",
                 atl_hint_name(other, name, sizeof name));
        bad = why;
    }
    if (bad)
        goto refused;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (!append && S_ISREG(st.st_mode)) {
        /* Rewritten files (a JSON trace, a Chrome trace) hold a lock while
         * written: a second process of the run that names the same file
         * (an exec'd child without %p) must not truncate the first one's. */
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            bad = "another process is writing it (put %p in the name: one file per process)";
            goto refused;
        }
        if (ftruncate(fd, 0) != 0) {
            bad = strerror(errno);
            goto refused;
        }
    }
    if (S_ISREG(st.st_mode))
        opened_file(&st, setting, 1);
    return fd;
refused:
    if (fd >= 0)
        close(fd);
    char name[64];
    atl_log(ATL_WARN, "cannot open %s file '%s': %s; %s", atl_hint_name(setting, name, sizeof name),
            path, bad, fallback);
    return -1;
}

int atl_log_open(const char *pattern)
{
    if (!pattern)
        return 0;
    /* appended to: the processes of one job may share a log (one write(2)
     * per line keeps their lines whole) */
    int fd = atl_open_report_file("ATLAS_LOG", pattern, 1, "reporting on stderr", log_path,
                                  sizeof log_path);
    if (fd < 0)
        return -1;
    __atomic_store_n(&log_fd, fd, __ATOMIC_RELEASE);
    return 0;
}

/* ---- report files written through stdio ---------------------------------------- */

/* A stdio stream over a report file that writes whole lines only (a program
 * killed mid-step leaves no torn last line), drops what a forked child
 * inherited in its buffer (flushed at the child's exit it would corrupt the
 * parent's file), never raises SIGPIPE, and says once when writing fails. */
struct report_stream {
    int fd;
    pid_t owner;
    int failed;
    const char *setting, *fallback;
    char *tail; /* the unfinished last line */
    size_t ntail, cap;
    char path[4096];
};

static int stream_put(struct report_stream *rs, const char *p, size_t n)
{
    int e = atl_write_all(rs->fd, p, n);
    if (e && !rs->failed) {
        rs->failed = 1;
        atl_log(ATL_WARN, "writing %s file '%s' failed: %s; %s from here", rs->setting, rs->path,
                strerror(e), rs->fallback);
    }
    return e;
}

static int keep_tail(struct report_stream *rs, const char *p, size_t n)
{
    if (rs->ntail + n > rs->cap) {
        size_t cap = rs->cap ? rs->cap : 4096;
        while (cap < rs->ntail + n)
            cap *= 2;
        char *t = realloc(rs->tail, cap);
        if (!t)
            return -1;
        rs->tail = t;
        rs->cap = cap;
    }
    memcpy(rs->tail + rs->ntail, p, n);
    rs->ntail += n;
    return 0;
}

static ssize_t stream_write(void *cookie, const char *buf, size_t n)
{
    struct report_stream *rs = cookie;
    if (rs->failed || getpid() != rs->owner)
        return (ssize_t)n; /* dropped: failed before, or a forked child's copy */
    const char *nl = memrchr(buf, '\n', n);
    size_t whole = nl ? (size_t)(nl - buf) + 1 : 0;
    if (whole && rs->ntail) {
        if (keep_tail(rs, buf, whole) == 0) {
            stream_put(rs, rs->tail, rs->ntail);
        } else {
            stream_put(rs, rs->tail, rs->ntail); /* out of memory: in two writes */
            stream_put(rs, buf, whole);
        }
        rs->ntail = 0;
    } else if (whole) {
        stream_put(rs, buf, whole);
    }
    if (whole < n && keep_tail(rs, buf + whole, n - whole) != 0)
        stream_put(rs, buf + whole, n - whole);
    return (ssize_t)n;
}

static int stream_close(void *cookie)
{
    struct report_stream *rs = cookie;
    if (getpid() == rs->owner) {
        if (rs->ntail && !rs->failed)
            stream_put(rs, rs->tail, rs->ntail);
        close(rs->fd);
    }
    free(rs->tail);
    free(rs);
    return 0;
}

FILE *atl_report_stream(const char *setting, const char *pattern, const char *fallback)
{
    struct report_stream *rs = calloc(1, sizeof *rs);
    if (!rs) {
        atl_log(ATL_WARN, "cannot open %s file: out of memory; %s", setting, fallback);
        return NULL;
    }
    rs->fd = atl_open_report_file(setting, pattern, 0, fallback, rs->path, sizeof rs->path);
    if (rs->fd < 0) {
        free(rs);
        return NULL;
    }
    rs->owner = getpid();
    rs->setting = setting;
    rs->fallback = fallback;
    cookie_io_functions_t io = {.write = stream_write, .close = stream_close};
    FILE *f = fopencookie(rs, "w", io);
    if (!f) {
        close(rs->fd);
        free(rs);
        atl_log(ATL_WARN, "cannot open %s file: out of memory; %s", setting, fallback);
        return NULL;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    return f;
}

void atl_log_once_oom(const char *what)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        atl_log(ATL_ERROR,
                "out of memory in %s: atlastrace's reports are incomplete from here on "
                "(the program is not affected)",
                what);
}
