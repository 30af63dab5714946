#define _GNU_SOURCE /* fopencookie, memrchr */
#include "log.h"

#include "config.h"
#include "hint.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Where reports go: stderr, the ATLAS_LOG file, or -1 (nowhere: stderr is a
 * broken pipe, or gone). Changed atomically.
 *
 * A program may close descriptors it did not open (a daemon's closefrom, a
 * loop over 3..63) and its next open gets the lowest free number: the
 * library's log or trace file then becomes the program's data file, and
 * reports land in it. So every descriptor the library writes is its own copy
 * at a number programs rarely reach (fd_high), and is checked, before each
 * write, to still be the file the library opened (its device and inode); when
 * it is not, the number is the program's now: never written, never closed,
 * and the file is opened again by its name (stderr, which has no name, is
 * taken again from descriptor 2 while that is still the same stream). */
static int log_fd = 2;
static int err_fd = 2; /* our copy of the program's stderr as it was at start */
struct fid {
    dev_t dev;
    ino_t ino;
    int known;
};
static struct fid log_id, err_id;
static int log_level = ATL_WARN;
static char log_path[4096]; /* the ATLAS_LOG file, expanded */
static pthread_mutex_t recover_lock = PTHREAD_MUTEX_INITIALIZER;

static int fid_of(int fd, struct fid *id)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return -1;
    *id = (struct fid){st.st_dev, st.st_ino, 1};
    return 0;
}

/* fd is still the file id names (or nothing is known of it). */
static int fid_same(int fd, const struct fid *id)
{
    struct stat st;
    return !id->known ||
           (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino);
}

/* A copy of fd at a number programs rarely reach (half the descriptor limit,
 * at most 512: programs take the lowest free ones), close-on-exec; -1 when
 * none. */
static int fd_high(int fd)
{
    struct rlimit rl;
    long lo = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                  ? (long)rl.rlim_cur / 2
                  : 512;
    if (lo > 512)
        lo = 512;
    int h = lo > 10 ? fcntl(fd, F_DUPFD_CLOEXEC, (int)lo) : -1;
    return h >= 0 ? h : fcntl(fd, F_DUPFD_CLOEXEC, 10);
}

/* fd, moved high (fd itself closed), or fd where it is when it cannot be. */
static int move_high(int fd)
{
    int h = fd_high(fd);
    if (h < 0)
        return fd;
    close(fd);
    return h;
}

static void emit(const char *msg, size_t len);
static int reopen_append(const char *path);

/* The log's descriptor was closed or reused by the program (fd): the file
 * again by its name, else our stderr, else nowhere. -1 when another thread
 * is at it (this line is dropped). */
static int log_recover(int fd)
{
    if (pthread_mutex_trylock(&recover_lock) != 0)
        return -1;
    int now = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
    if (now != fd) {
        pthread_mutex_unlock(&recover_lock);
        return now;
    }
    int was_err = fd == __atomic_load_n(&err_fd, __ATOMIC_RELAXED);
    int nfd = -1;
    if (!was_err && log_path[0]) {
        nfd = reopen_append(log_path);
        if (nfd >= 0 && fid_of(nfd, &log_id) != 0) {
            close(nfd);
            nfd = -1;
        }
    }
    if (nfd < 0) {
        int e = __atomic_load_n(&err_fd, __ATOMIC_RELAXED);
        if (!was_err && fid_same(e, &err_id)) {
            nfd = e;
        } else if (fid_same(2, &err_id) && err_id.known) {
            nfd = fd_high(2);
            if (nfd >= 0)
                __atomic_store_n(&err_fd, nfd, __ATOMIC_RELAXED);
        }
    }
    __atomic_store_n(&log_fd, nfd, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&recover_lock);
    if (nfd >= 0) {
        char note[600];
        int n = snprintf(note, sizeof note,
                         "the program closed or reused the descriptor atlastrace reported on; "
                         "reporting on %s%.400s%s from here",
                         nfd == __atomic_load_n(&err_fd, __ATOMIC_RELAXED) ? "stderr" : "'",
                         nfd == __atomic_load_n(&err_fd, __ATOMIC_RELAXED) ? "" : log_path,
                         nfd == __atomic_load_n(&err_fd, __ATOMIC_RELAXED) ? "" : "'");
        emit(note, n > 0 ? (size_t)n : 0);
    }
    return nfd;
}

/* The log's descriptor, checked to be the file the library opened. */
static int log_target(void)
{
    int fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
    if (fd < 0)
        return fd;
    const struct fid *id = fd == __atomic_load_n(&err_fd, __ATOMIC_RELAXED) ? &err_id : &log_id;
    return fid_same(fd, id) ? fd : log_recover(fd);
}

int atl_log_fd(void)
{
    return log_target();
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

/* A line longer than this is cut, and says so (a re-run command with the program's long
 * arguments stays whole: issue #48 found one cut at 900 bytes, its options dropped). */
#define LINE_MAX_BYTES 65536

static void emit(const char *msg, size_t len)
{
    char small[1024], *buf = small;
    char cut[64] = "";
    if (len > LINE_MAX_BYTES) {
        snprintf(cut, sizeof cut, " [line cut: %zu more bytes]", len - LINE_MAX_BYTES);
        len = LINE_MAX_BYTES;
    }
    size_t need = 32 + len + strlen(cut) + 1;
    if (need > sizeof small && !(buf = malloc(need))) {
        buf = small; /* no memory: the line as far as it fits, and that it was cut */
        snprintf(cut, sizeof cut, " [line cut: %zu more bytes]", len - 900);
        len = 900;
    }
    int n = snprintf(buf, 32, "atlas[%ld]: ", (long)getpid());
    if (n < 0 || n >= 32) {
        if (buf != small)
            free(buf);
        return;
    }
    /* one report, one line: a control byte in a kernel name or a path must
     * not start a line of its own without the prefix */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)msg[i];
        buf[(size_t)n + i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    size_t total = (size_t)n + len;
    memcpy(buf + total, cut, strlen(cut));
    total += strlen(cut);
    buf[total++] = '\n';
    int fd = log_target();
    int e = fd < 0 ? 0 : atl_write_all(fd, buf, total);
    if (buf != small)
        free(buf);
    if (fd < 0 || !e)
        return;
    int efd = __atomic_load_n(&err_fd, __ATOMIC_RELAXED);
    if (fd != efd) {
        /* the ATLAS_LOG file failed (full disk, EIO, a reader gone): say so
         * once on stderr and report there from now on. The old descriptor
         * stays open: another thread may be writing to it right now, and a
         * number closed under it could be the program's next file. */
        if (__atomic_compare_exchange_n(&log_fd, &fd, efd, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            char note[600];
            snprintf(note, sizeof note,
                     "writing ATLAS_LOG file '%.400s' failed: %s; reporting on "
                     "stderr from here",
                     log_path, strerror(e));
            emit(note, strlen(note));
        }
        if (__atomic_load_n(&log_fd, __ATOMIC_ACQUIRE) == efd)
            emit(msg, len);
    } else if (e == EPIPE) {
        /* stderr itself is a broken pipe: nowhere left to report */
        __atomic_store_n(&log_fd, -1, __ATOMIC_RELAXED);
    }
}

/* msg's first len bytes of a line of whole bytes (no memory for all of it): said cut. */
static void emit_cut(const char *msg, size_t len, size_t whole)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s [line cut: %zu more bytes]", (int)len, msg, whole - len);
    emit(buf, strlen(buf));
}

void atl_log_line(const char *line)
{
    emit(line, strlen(line));
}

int atl_log_wants(int level)
{
    return level <= log_level;
}

void atl_log(int level, const char *fmt, ...)
{
    if (level > log_level)
        return;
    char msg[900], *big = NULL;
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* longer: formatted again whole (emit cuts past LINE_MAX_BYTES, and says so) */
    if (n >= (int)sizeof msg && (big = malloc((size_t)n + 1)) != NULL)
        vsnprintf(big, (size_t)n + 1, fmt, again);
    va_end(again);
    if (n < 0)
        return;
    if (big)
        emit(big, (size_t)n);
    else if ((size_t)n < sizeof msg)
        emit(msg, (size_t)n);
    else
        emit_cut(msg, sizeof msg - 1, (size_t)n);
    free(big);
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

/* Opens the expanded path as atl_open_report_file says; NULL and the fd,
 * else the reason (in why) and -1. With a setting, a file that another
 * setting writes already is refused, and the file becomes setting's; a file
 * opened again (NULL) is the one it was. */
static const char *open_checked(const char *setting, const char *path, int append, int *out,
                                char *why, size_t whylen)
{
    const char *bad = NULL;
    int fd = -1;
    /* The stream the user gave as stderr (ATLAS_LOG=/dev/stderr, a pipe or
     * terminal behind it): written through our own copy of descriptor 2,
     * never reopened (a pipe reopened would not block, a file would be
     * truncated under the program's own stderr). */
    struct stat st, err;
    if (stat(path, &st) == 0 && fstat(2, &err) == 0 && st.st_dev == err.st_dev &&
        st.st_ino == err.st_ino) {
        fd = fd_high(2);
        if (fd >= 0) {
            *out = fd;
            return NULL;
        }
    }
    /* O_NONBLOCK: a FIFO must never block the program at its first CUDA
     * call (with no reader the open fails with ENXIO, with one it is
     * refused below). Never O_TRUNC here: nothing is cut before the checks. */
    fd = open(path,
              O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (append ? O_APPEND : 0),
              0600);
    if (fd < 0) {
        int e = errno;
        return e == ELOOP   ? "a symbolic link (refused)"
               : e == ENXIO ? "a FIFO or device with no reader, not a regular file"
                            : strerror(e);
    }
    if (fstat(fd, &st) != 0)
        bad = strerror(errno);
    else
        bad = refusal(&st, why, whylen);
    const char *other =
        !bad && setting && S_ISREG(st.st_mode) ? opened_file(&st, setting, 0) : NULL;
    if (other) {
        char name[64];
        snprintf(why, whylen, "%s writes it already (each report needs a file of its own)",
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
    if (setting && S_ISREG(st.st_mode))
        opened_file(&st, setting, 1);
    *out = move_high(fd); /* the lock and the open file go with the copy */
    return NULL;
refused:
    if (fd >= 0)
        close(fd);
    return bad;
}

/* A file opened before, by its expanded name, to append to again (the
 * program took its descriptor): the same checks, nothing said. */
static int reopen_append(const char *path)
{
    char why[160];
    int fd = -1;
    return open_checked(NULL, path, 1, &fd, why, sizeof why) ? -1 : fd;
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
    } else {
        bad = open_checked(setting, path, append, &fd, why, sizeof why);
    }
    if (!bad)
        return fd;
    char name[64];
    atl_log(ATL_WARN, "cannot open %s file '%s': %s; %s", atl_hint_name(setting, name, sizeof name),
            path, bad, fallback);
    return -1;
}

int atl_log_open(const char *pattern)
{
    /* stderr first: the fallback of a log file that fails, and the log
     * without one */
    int e = fid_of(2, &err_id) == 0 ? fd_high(2) : -1;
    if (e >= 0)
        __atomic_store_n(&err_fd, e, __ATOMIC_RELAXED);
    __atomic_store_n(&log_fd, e >= 0 ? e : 2, __ATOMIC_RELEASE);
    if (!pattern)
        return 0;
    /* appended to: the processes of one job may share a log (one write(2)
     * per line keeps their lines whole) */
    int fd = atl_open_report_file("ATLAS_LOG", pattern, 1, "reporting on stderr", log_path,
                                  sizeof log_path);
    if (fd < 0 || fid_of(fd, &log_id) != 0) {
        log_path[0] = '\0';
        return -1;
    }
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
    struct fid id; /* the file opened: the fd is checked to still be it */
    pid_t owner;
    int failed;
    const char *setting, *fallback;
    char *tail; /* the unfinished last line */
    size_t ntail, cap;
    char path[4096];
};

/* The stream's descriptor is still its file; when the program took the
 * number, the file again by its name (appended to, locked again). */
static int stream_check(struct report_stream *rs)
{
    if (fid_same(rs->fd, &rs->id))
        return 0;
    int fd = reopen_append(rs->path);
    struct fid id;
    if (fd >= 0 && (flock(fd, LOCK_EX | LOCK_NB) != 0 || fid_of(fd, &id) != 0 ||
                    id.dev != rs->id.dev || id.ino != rs->id.ino)) {
        close(fd); /* another file by now, or another process writes it */
        fd = -1;
    }
    if (fd < 0)
        return -1;
    rs->fd = fd; /* the old number is the program's: left alone */
    return 0;
}

static int stream_put(struct report_stream *rs, const char *p, size_t n)
{
    int e = stream_check(rs) == 0 ? atl_write_all(rs->fd, p, n) : EBADF;
    if (e && !rs->failed) {
        rs->failed = 1;
        atl_log(ATL_WARN, "writing %s file '%s' failed: %s; %s from here", rs->setting, rs->path,
                e == EBADF ? "the program closed or reused its descriptor" : strerror(e),
                rs->fallback);
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
        if (fid_same(rs->fd, &rs->id)) /* else the number is the program's */
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
    fid_of(rs->fd, &rs->id);
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
