/* One prefix, one line per event: "atlas[PID]: ...". Lines are written with
 * a single write(2), so lines from several threads never interleave; control
 * bytes in a line are shown as '?', so no text can start a line of its own. */
#ifndef ATL_LOG_H
#define ATL_LOG_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

enum atl_level { ATL_ERROR, ATL_WARN, ATL_INFO, ATL_DEBUG };

/* Sends reports to the file `pattern` names (opened as below, appended to);
 * NULL means stderr. Returns 0, or -1 (reports stay on stderr and the reason
 * is logged there). When writing to the file later fails, that is said once
 * on stderr and reports continue there. */
int atl_log_open(const char *pattern);

/* Opens the file an ATLAS_* setting names, the one way every report file is
 * opened: the name expanded (%p, %r, %%) into `path` (refused when it does
 * not fit), the stream given as stderr reused as is, otherwise opened
 * O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC and created 0600; anything but a regular
 * file or a character device (terminal, /dev/null) refused, and a regular
 * file owned by another user. Unless `append`, the file is locked and then
 * truncated, and one another process holds locked is refused. On failure one
 * line "cannot open SETTING file 'PATH': WHY; FALLBACK" and -1. */
int atl_open_report_file(const char *setting, const char *pattern, int append, const char *fallback,
                         char *path, size_t len);

/* The same, truncated, as a stdio stream that writes whole lines only,
 * drops what a forked child inherited, never raises SIGPIPE and says once
 * "writing SETTING file 'PATH' failed: WHY; FALLBACK from here". NULL when
 * the file cannot be opened (said). */
FILE *atl_report_stream(const char *setting, const char *pattern, const char *fallback);

/* write(2) that never raises SIGPIPE in the program: EPIPE is returned. */
ssize_t atl_write_nosigpipe(int fd, const void *p, size_t n);

/* Writes all of `n` bytes (EINTR retried); 0 or the errno that stopped it. */
int atl_write_all(int fd, const void *p, size_t n);

void atl_log_set_level(int level);
/* Would a line at `level` be written? */
int atl_log_wants(int level);

/* printf-style; the format must be a literal of ours, never environment text. */
void atl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes a pre-formatted line (prefix added). */
void atl_log_line(const char *line);

/* The descriptor reports go to (for multi-line tables). */
int atl_log_fd(void);

/* Says once that the tool ran out of memory (the program is unaffected). */
void atl_log_once_oom(const char *what);

#endif
