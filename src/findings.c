/*
 * The findings sink (see findings.h): suppressions, counts, the findings
 * file, the print limit and --gen-suppressions, in one place for every
 * feature.
 */
#define _GNU_SOURCE
#include "findings.h"

#include "config.h"
#include "findjson.h"
#include "hint.h"
#include "log.h"
#include "services.h"
#include "suppress.h"
#include "symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const kind_names[ATL_FINDING_KINDS] = {
    [ATL_FINDING_OVERRUN] = "overrun", [ATL_FINDING_AFTER_FREE] = "write-after-free",
    [ATL_FINDING_FAULT] = "fault",     [ATL_FINDING_LEAK] = "leak",
    [ATL_FINDING_DIFF] = "step-diff",  [ATL_FINDING_RACE] = "race",
};

const char *atl_finding_kind_name(enum atl_finding k)
{
    return (unsigned)k < ATL_FINDING_KINDS ? kind_names[k] : "?";
}

const char *atl_finding_words(enum atl_finding k, uint64_t n)
{
    static const char *const words[ATL_FINDING_KINDS][2] = {
        [ATL_FINDING_OVERRUN] = {"overruns", "overrun"},
        [ATL_FINDING_AFTER_FREE] = {"writes after free", "write after free"},
        [ATL_FINDING_FAULT] = {"faults", "fault"},
        [ATL_FINDING_LEAK] = {"leaks", "leak"},
        [ATL_FINDING_DIFF] = {"differing steps", "differing step"},
        [ATL_FINDING_RACE] = {"races", "race"}};
    return (unsigned)k < ATL_FINDING_KINDS ? words[k][n == 1] : "?";
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct atl_supp_set supp;
static int supp_frames; /* an entry has frame lines: findings' frames are looked up */
static size_t user_files; /* suppression files the user gave (the built-in entries are not one) */
static size_t builtin_n;  /* the built-in entries: the first of supp.e */
static int builtin_frames; /* one of them has frame lines (they are races') */

/* The built-in entries (ATLAS_DEFAULT_SUPPRESSIONS=0 leaves them out, as valgrind's
 * --default-suppressions=no): findings inside NVIDIA's libraries that the program cannot fix and
 * that are not its bugs, each listed in docs/reports.md with what was seen. Matched as the
 * user's are; counted as suppressed in the summary. */
static const char builtin_supp[] =
    "{\n"
    "   cuDNN's handle set-up: cudnnCreate clears its workspace with a memset on a stream of its "
    "own that nothing orders with the program's streams\n"
    "   atlas:race\n"
    "   fun:*createCuDNNHandle*\n"
    "}\n";
static FILE *report;    /* ATLAS_REPORT */
static int want_frames; /* set at init: frames are looked up (entries need them, or the file) */
static uint64_t counts[ATL_FINDING_KINDS], suppressed[ATL_FINDING_KINDS];
static uint64_t next_id, printed, unprinted;

static void warn_line(void *ctx, const char *line)
{
    (void)ctx;
    atl_log(ATL_ERROR, "%s; the entry is not used", line);
}

/*
 * atlas-trace --error-exitcode: the folder (ATL_VERDICT_VAR, read at load, before the program
 * can change its environment) where every process of the tree atlas-trace ran writes each
 * finding that counts for the verdict, one line as it comes, to a file of its own (its PID).
 * atlas-trace reads them once the program has ended, however each process ended: _exit, a
 * signal, a wrapper script that returns 0 whatever its children did.
 */
static char verdict_dir[512];
static int verdict_fd = -1;
static pid_t verdict_pid;

__attribute__((constructor)) static void verdict_load(void)
{
    const char *d = getenv(ATL_VERDICT_VAR);
    if (d && d[0] == '/' && strlen(d) < sizeof verdict_dir)
        memcpy(verdict_dir, d, strlen(d) + 1);
}

/* A finding of kind k was counted. Under the sink's lock, or not at all (the exit path). */
static void verdict_note(enum atl_finding k)
{
    if (!verdict_dir[0] || !atl_cfg.error_exitcode || (k == ATL_FINDING_DIFF && atl_cfg.error_on != 1))
        return;
    pid_t me = getpid();
    if (verdict_fd < 0 || verdict_pid != me) { /* a forked child writes a file of its own */
        char path[600];
        snprintf(path, sizeof path, "%s/%ld", verdict_dir, (long)me);
        verdict_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        verdict_pid = me;
    }
    if (verdict_fd < 0) {
        static int told;
        if (!told++)
            atl_log(ATL_ERROR, "cannot open atlas-trace's verdict file in %s (%s): its exit "
                               "status may not count this process's findings",
                    verdict_dir, strerror(errno));
        return;
    }
    char line[32];
    int n = snprintf(line, sizeof line, "%s\n", kind_names[k]);
    static int told;
    if (n > 0 && atl_write_all(verdict_fd, line, (size_t)n) != 0 && !told++)
        atl_log(ATL_ERROR, "cannot write to atlas-trace's verdict file in %s (%s): its exit "
                           "status may not count this process's findings",
                verdict_dir, strerror(errno));
}

/* A suppression file's text (at most 16 MiB), or NULL with errno set. Opened non-blocking and
 * read only when it is a regular file: a FIFO put where the file was hung the program at its
 * first CUDA call (EINVAL says "not a regular file"). */
static char *read_text(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *t = malloc(cap);
    while (t) {
        if (n + 1 == cap) {
            char *g = cap < (16u << 20) ? realloc(t, cap * 2) : NULL;
            if (!g) {
                free(t);
                t = NULL;
                errno = cap < (16u << 20) ? ENOMEM : EFBIG;
                break;
            }
            t = g, cap *= 2;
        }
        size_t got = fread(t + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (t && ferror(f)) {
        free(t);
        t = NULL;
        errno = EIO;
    }
    fclose(f);
    if (t)
        t[n] = '\0';
    return t;
}

static void load_suppressions(const char *list)
{
    char *copy = strdup(list);
    for (char *save = NULL, *p = copy ? strtok_r(copy, ":,", &save) : NULL; p;
         p = strtok_r(NULL, ":,", &save)) {
        char shown[80];
        atl_config_show_value(p, shown, sizeof shown);
        char *text = read_text(p);
        if (!text) {
            atl_log(ATL_ERROR, "cannot read suppressions file '%s': %s; its entries are not used",
                    shown, errno == EINVAL ? "not a regular file" : strerror(errno));
            continue;
        }
        size_t before = supp.n;
        if (atl_supp_parse(&supp, text, p, warn_line, NULL) < 0)
            atl_log_once_oom("the suppressions");
        atl_log(ATL_INFO, "suppressions: %zu entries read from '%s'", supp.n - before, shown);
        free(text);
    }
    free(copy);
}

void atl_findings_init(void)
{
    if (!atl_cfg.symbols)
        atl_sym_disable();
    if (atl_cfg.default_suppressions &&
        atl_supp_parse(&supp, builtin_supp, "built-in", warn_line, NULL) < 0)
        atl_log_once_oom("the suppressions");
    size_t builtin_files = supp.nfiles;
    builtin_n = supp.n;
    if (atl_cfg.suppressions)
        load_suppressions(atl_cfg.suppressions);
    user_files = supp.nfiles - builtin_files;
    /* the built-in entries are all races': other findings' frames are not looked up for them */
    for (size_t i = builtin_n; i < supp.n; i++)
        supp_frames |= supp.e[i].nfr > 0;
    for (size_t i = 0; i < builtin_n; i++)
        builtin_frames |= supp.e[i].nfr > 0;
    if (atl_cfg.report)
        report = atl_report_stream("ATLAS_REPORT", atl_cfg.report, "findings are not written");
    want_frames = supp_frames || report || atl_cfg.gen_suppressions;
}

/* The frames a finding is told by: from the first outside the CUDA
 * libraries, as the report's "allocated at", into a new array (*out; NULL
 * when none or out of memory). Looked up before the sink's lock, never under
 * it: naming a frame takes the loader's lock (dladdr, libdw), which a thread
 * running a library's constructor holds while its CUDA call may report a
 * finding here. */
static int look_up(const struct atl_stack *st, struct atl_frame **out)
{
    *out = NULL;
    if (!st || !st->n)
        return 0;
    struct atl_frame *fr = malloc(ATL_STACK_MAX * sizeof *fr);
    if (!fr) {
        atl_log_once_oom("a finding's frames");
        return 0;
    }
    int n = 0;
    for (int i = atl_stack_site_index(st); i < st->n && n < ATL_STACK_MAX; i++)
        atl_frame_info(st->pc[i], &fr[n++]);
    *out = fr;
    return n;
}

static struct atl_supp_subject subject(const struct atl_find *f, const struct atl_frame *frames,
                                       int nfr)
{
    return (struct atl_supp_subject){.kind = kind_names[f->kind],
                                     .kernel = f->kernel,
                                     .kernel_mangled = f->kernel_mangled,
                                     .step = f->step,
                                     .fr = frames,
                                     .nfr = nfr};
}

static void write_report(const struct atl_find *f, uint64_t id, const struct atl_frame *frames,
                         int nfr, const struct atl_supp *by, int shown)
{
    static char line[65536];
    struct atl_finding_rec r = {.tool = "atlastrace",
                                .pid = (long)getpid(),
                                .id = id,
                                .kind = kind_names[f->kind],
                                .message = f->message,
                                .kernel = f->kernel,
                                .kernel_mangled = f->kernel_mangled,
                                .launch = f->launch,
                                .alloc = f->alloc,
                                .bytes = f->bytes,
                                .has_bytes = f->has_bytes,
                                .count = f->count,
                                .step = f->step,
                                .step_no = f->step_no,
                                .fr = frames,
                                .nfr = nfr,
                                .suppressed = by != NULL,
                                .suppression = by ? by->name : NULL,
                                .printed = shown};
    size_t n = atl_finding_json(&r, line, sizeof line);
    fwrite(line, 1, n, report);
    fflush(report); /* a line a finding: a crash later keeps what was found */
}

int atl_find_open(struct atl_find *f)
{
    f->shown = f->suppressed = 0;
    if ((unsigned)f->kind >= ATL_FINDING_KINDS)
        return 0;
    struct atl_frame *frames, *frames2 = NULL;
    int race_frames = builtin_frames && f->kind == ATL_FINDING_RACE;
    int nfr = want_frames || race_frames ? look_up(f->stack, &frames) : (frames = NULL, 0);
    int nfr2 = (supp_frames || race_frames) && f->stack2 ? look_up(f->stack2, &frames2) : 0;
    if (atl_exit_lock(&lock, NULL) != 0) {
        /* another thread stopped inside the sink at exit: counted, printed */
        __atomic_add_fetch(&counts[f->kind], 1, __ATOMIC_RELAXED);
        verdict_note(f->kind);
        free(frames);
        free(frames2);
        return f->shown = 1;
    }
    struct atl_supp_subject x = subject(f, frames, nfr);
    struct atl_supp *by = supp.n ? atl_supp_match(&supp, &x) : NULL;
    if (!by && frames2) {
        struct atl_supp_subject x2 = subject(f, frames2, nfr2);
        by = atl_supp_match(&supp, &x2);
    }
    uint64_t id = ++next_id;
    if (by) {
        f->suppressed = 1;
        by->used++;
        __atomic_add_fetch(&suppressed[f->kind], 1, __ATOMIC_RELAXED);
    } else {
        __atomic_add_fetch(&counts[f->kind], 1, __ATOMIC_RELAXED);
        verdict_note(f->kind);
        if (f->no_print)
            ; /* past the feature's own room: it says how many */
        else if (atl_cfg.print_limit && printed >= atl_cfg.print_limit)
            __atomic_add_fetch(&unprinted, 1, __ATOMIC_RELAXED);
        else
            f->shown = 1, printed++;
    }
    if (report)
        write_report(f, id, frames, nfr, by, f->shown);
    pthread_mutex_unlock(&lock);
    free(frames);
    free(frames2);
    return f->shown;
}

static void gen_line(void *ctx, const char *text)
{
    (void)ctx;
    atl_log_line(text);
}

void atl_find_close(const struct atl_find *f)
{
    if (!f->shown || !atl_cfg.gen_suppressions)
        return;
    struct atl_frame *frames;
    int nfr = look_up(f->stack, &frames);
    if (atl_exit_lock(&lock, NULL) == 0) {
        struct atl_supp_subject x = subject(f, frames, nfr);
        atl_supp_write(&x, 8, gen_line, NULL);
        pthread_mutex_unlock(&lock);
    }
    free(frames);
}

uint64_t atl_findings_count(enum atl_finding k)
{
    return (unsigned)k < ATL_FINDING_KINDS ? __atomic_load_n(&counts[k], __ATOMIC_RELAXED) : 0;
}

uint64_t atl_findings_suppressed(enum atl_finding k)
{
    return (unsigned)k < ATL_FINDING_KINDS ? __atomic_load_n(&suppressed[k], __ATOMIC_RELAXED) : 0;
}

uint64_t atl_findings_unprinted(void)
{
    return __atomic_load_n(&unprinted, __ATOMIC_RELAXED);
}

void atl_findings_exit(void)
{
    if (atl_exit_lock(&lock, "the findings' closing lines") != 0)
        return;
    char set[64];
    if (unprinted)
        atl_log(ATL_WARN,
                "findings: %llu more not printed, past the first %llu (counted all the same; %s "
                "prints all)",
                (unsigned long long)unprinted, (unsigned long long)atl_cfg.print_limit,
                atl_hint_setting("ATLAS_PRINT_LIMIT", "0", set, sizeof set));
    uint64_t total = 0;
    for (int k = 0; k < ATL_FINDING_KINDS; k++)
        total += suppressed[k];
    /* once files were given, always; for the built-in entries alone, when they left one out */
    if (user_files || total) {
        char by[700];
        size_t used = 0;
        by[0] = '\0';
        for (int k = 0; k < ATL_FINDING_KINDS; k++)
            if (suppressed[k] && used < sizeof by)
                used += (size_t)snprintf(by + used, sizeof by - used, "%s%llu %s", used ? ", " : "",
                                         (unsigned long long)suppressed[k],
                                         atl_finding_words((enum atl_finding)k, suppressed[k]));
        uint64_t builtin = 0;
        for (size_t i = 0; i < builtin_n; i++)
            builtin += supp.e[i].used;
        char how[160] = "", off[64];
        atl_hint_setting("ATLAS_DEFAULT_SUPPRESSIONS", "0", off, sizeof off);
        if (builtin)
            snprintf(how, sizeof how, "; %llu by the built-in entries, which %s leaves out",
                     (unsigned long long)builtin, off);
        if (user_files)
            atl_log(ATL_WARN, "suppressed: %llu finding%s%s%s%s (entries read: %zu%s)",
                    (unsigned long long)total, total == 1 ? "" : "s", used ? " (" : "", by,
                    used ? ")" : "", supp.n - builtin_n, how);
        else
            atl_log(ATL_WARN, "suppressed: %llu finding%s%s%s%s (by the built-in entries, which "
                    "%s leaves out)",
                    (unsigned long long)total, total == 1 ? "" : "s", used ? " (" : "", by,
                    used ? ")" : "", off);
        for (size_t i = 0; i < supp.n; i++)
            if (supp.e[i].used)
                atl_log(ATL_INFO, "suppressed: %llu by '%.200s' (%s:%d)",
                        (unsigned long long)supp.e[i].used, supp.e[i].name, supp.e[i].file,
                        supp.e[i].line);
    }
    if (report) {
        fclose(report);
        report = NULL;
    }
    pthread_mutex_unlock(&lock);
}

/* ATLAS_ERROR_EXITCODE: the verdict replaces the program's exit status. It runs in the
 * destructor, the last of the exit path the library sees: after the program's own atexit
 * handlers and destructors (the main program's run before a preloaded library's), so they all
 * ran; stdio is flushed here because _exit skips the flush exit() would do next. A program that
 * ends with _exit() or a signal runs no exit path: its status stays its own. `last` (the
 * summary line, or NULL) is written after the verdict's line, the last of the run. */
void atl_exit_verdict(const char *last)
{
    char list[160];
    size_t n = 0;
    list[0] = '\0';
    for (int k = 0; k < ATL_FINDING_KINDS && atl_cfg.error_exitcode; k++) {
        /* the findings sink's counts: suppressed findings are not among them */
        uint64_t c = atl_findings_count((enum atl_finding)k);
        if (!c || (k == ATL_FINDING_DIFF && atl_cfg.error_on != 1))
            continue;
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%llu %s", n ? ", " : "",
                              (unsigned long long)c, atl_finding_words((enum atl_finding)k, c));
        if (n >= sizeof list)
            n = sizeof list - 1;
    }
    if (n) {
        char code[24], set[64];
        snprintf(code, sizeof code, "%llu", atl_cfg.error_exitcode);
        atl_log(ATL_ERROR, "reported %s: exit status %llu (%s)", list, atl_cfg.error_exitcode,
                atl_hint_setting("ATLAS_ERROR_EXITCODE", code, set, sizeof set));
    }
    if (last)
        atl_log_line(last);
    if (!n)
        return;
    fflush(NULL);
    atl_exit_now((int)atl_cfg.error_exitcode);
}
