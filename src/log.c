#include "log.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int log_fd = 2;
static int log_level = ATL_WARN;

int atl_log_fd(void)
{
    return log_fd;
}

void atl_log_set_level(int level)
{
    log_level = level;
}

int atl_log_enabled(int level)
{
    return level <= log_level;
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
    memcpy(buf + n, msg, len);
    size_t total = (size_t)n + len;
    buf[total++] = '\n';
    const char *p = buf;
    while (total > 0) {
        ssize_t w = write(log_fd, p, total);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        total -= (size_t)w;
    }
}

void atl_log_line(const char *line)
{
    emit(line, strlen(line));
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

int atl_open_report_file(const char *pattern, char *expanded, size_t len, int append)
{
    atl_config_expand_path(pattern, expanded, len);
    return open(expanded,
                O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC) | O_NOFOLLOW | O_CLOEXEC, 0600);
}

int atl_log_open(const char *pattern)
{
    if (!pattern)
        return 0;
    char path[4096];
    /* appended to: the processes of one job may share a log */
    int fd = atl_open_report_file(pattern, path, sizeof path, 1);
    if (fd < 0) {
        int e = errno;
        atl_log(ATL_ERROR, "cannot open ATLAS_LOG file: %s; reporting on stderr", strerror(e));
        return -1;
    }
    log_fd = fd;
    return 0;
}
