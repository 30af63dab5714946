/*
 * Hints that run as printed: the command a report tells the user to run, and the settings it
 * names, in the user's own terms.
 *
 * A program run as `atlas-trace --leaks ./app x` is told to re-run
 *     atlas-trace --leaks --debug-sync=bad_kernel ./app x
 * and one run with a bare preload
 *     LD_PRELOAD=/abs/libatlastrace.so ATLAS_LEAKS=1 ATLAS_DEBUG_SYNC_KERNELS=bad_kernel ./app x
 * each pasteable into the shell the user ran it from (words quoted for sh where they need it).
 * A setting is named as the user gave it: `--redzone-check=launch` to someone who typed
 * options, `ATLAS_REDZONE_CHECK=launch` otherwise.
 *
 * atlas-trace tells the library its command line through ATLASTRACE_FRONT (made with
 * atl_front_encode below): its argv[0], each option's words with the setting the option sets,
 * the program's words, the ATLAS_* settings it inherited, and a fingerprint of every ATLAS_*
 * setting the program was started with. The variable is inherited by the processes the program
 * starts: one that runs with those same settings (a wrapper script's exec, torchrun's workers,
 * a subprocess) is re-run by re-running the whole atlas-trace command, which reaches it again;
 * one whose settings differ (a child started with settings of its own) gets the bare-preload
 * form of its own command line instead. A forked child without exec reports nothing (the
 * engine's rule), so it prints no hint.
 */
#ifndef ATL_HINT_H
#define ATL_HINT_H

#include <stddef.h>

/* A setting the re-run adds or replaces: an ATLAS_* variable, or another environment variable
 * (NVTX_INJECTION64_PATH), and its value. */
struct atl_hint_set {
    const char *var;
    const char *value;
};

/* The command that re-runs this program the way the user ran it, with `add[0..n)` in force
 * (each replacing what the user had set for that variable, option or environment). Through
 * atlas-trace: the atlas-trace command line, the settings added as its options (or, for those
 * with no option, as NAME=VALUE in front of it), the program's words as typed. From a bare
 * preload: LD_PRELOAD=<this library's absolute path, with any other preloads>, the ATLAS_*
 * settings in force, the added ones, then the program and its arguments as
 * /proc/self/cmdline gives them. A malloc'd string to free, or NULL (out of memory, or the
 * command line cannot be read whole): the caller then prints no command. */
char *atl_hint_command(const struct atl_hint_set *add, size_t n);

/* A setting as the user would type it into `out`: under atlas-trace the option that sets it
 * ("--redzone-check=launch", "--leaks"), unless the variable came from the environment, else
 * "NAME=VALUE". Returns out. */
const char *atl_hint_setting(const char *var, const char *value, char *out, size_t len);

/* A setting's name as the user would type it: "--redzone" or "ATLAS_REDZONE". Returns out. */
const char *atl_hint_name(const char *var, char *out, size_t len);

/* This library's file, as an absolute path, into out: 0, or -1 when it cannot be told. */
int atl_hint_library(char *out, size_t len);

/* 1 when this process was started by atlas-trace with the settings it still runs with (hints
 * then speak atlas-trace's options), else 0. */
int atl_hint_front(void);

/* 1 when this process runs under atlas-trace: ATLASTRACE_FRONT is set and well formed, with
 * this process's settings or others (a child started with settings of its own), else 0;
 * *pid: the process atlas-trace ran the program in (it execs, so the program's own PID), 0
 * when not said. Reads `environ` as atl_env_get does (src/envedit.h): for a constructor. */
int atl_front_pid(long *pid);

/* For atlas-trace: the value of ATLASTRACE_FRONT for `argv` (argc words), of which words
 * [1, prog) are atlas-trace's own (`word_var[i]` names the ATLAS_* variable the option in word
 * i sets, or NULL) and [prog, argc) the program's; `inherited` lists the ATLAS_* entries
 * (NAME=VALUE) of the environment atlas-trace was started with, `final` the environment the
 * program is started with. malloc'd, or NULL when out of memory. */
char *atl_front_encode(int argc, char *const *argv, int prog, const char *const *word_var,
                       char *const *inherited, char *const *final);

#define ATL_FRONT_VAR "ATLASTRACE_FRONT"

#endif
