/* One prefix, one line per event: "atlas[PID]: ...". Lines are written with
 * a single write(2), so lines from several threads never interleave. */
#ifndef ATL_LOG_H
#define ATL_LOG_H

#include <stddef.h>

enum atl_level { ATL_ERROR, ATL_WARN, ATL_INFO, ATL_DEBUG };

/* Sends reports to the file `pattern` names (%p, %r expanded), opened
 * O_NOFOLLOW|O_CLOEXEC and created 0600; NULL means stderr. Returns 0, or -1
 * (reports stay on stderr and the reason is logged there). */
int atl_log_open(const char *pattern);

/* Opens a report file the way every ATLAS_* file is opened: the name
 * expanded (%p, %r) into `expanded`, O_WRONLY|O_CREAT|O_NOFOLLOW|O_CLOEXEC,
 * created 0600, appended to or truncated. Returns the descriptor or -1
 * (errno set). */
int atl_open_report_file(const char *pattern, char *expanded, size_t len, int append);

void atl_log_set_level(int level);
int atl_log_enabled(int level);

/* printf-style; the format must be a literal of ours, never environment text. */
void atl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes a pre-formatted line (prefix added). */
void atl_log_line(const char *line);

/* The descriptor reports go to (for multi-line tables). */
int atl_log_fd(void);

#endif
