/* Settings: parsed once from the environment, strictly, against config.def. */
#ifndef ATL_CONFIG_H
#define ATL_CONFIG_H

#include <stddef.h>

enum atl_cfg_type { ATL_CFG_BOOL, ATL_CFG_UINT, ATL_CFG_ENUM, ATL_CFG_STRING };

/* What a setting does nothing without (config.def's `needs`; src/unused.c). */
enum atl_cfg_need {
    ATL_NEED_NONE,
    ATL_NEED_REDZONE,  /* red zones (ATLAS_REDZONE) */
    ATL_NEED_LEDGER,   /* the allocation ledger (ATLAS_REDZONE, ATLAS_LEAKS, ATLAS_TRACE, ATLAS_RACES) */
    ATL_NEED_TRACE,    /* a step trace that records (ATLAS_TRACE, _TRACE_FILE, _CHROME_TRACE) */
    ATL_NEED_CHROME,   /* the Chrome trace (ATLAS_CHROME_TRACE) */
    ATL_NEED_EXITCODE, /* the exit-status verdict (ATLAS_ERROR_EXITCODE) */
    ATL_NEED_KSELECT,  /* a feature ATLAS_KERNEL limits */
    ATL_NEED_COUNT,
};

/* atlas-trace's option for a setting (config.def's OPT). */
enum atl_opt_kind {
    ATL_OPT_NONE,  /* no option */
    ATL_OPT_FLAG,  /* --name: the setting is 1 */
    ATL_OPT_VALUE, /* --name=META, by the setting's rules */
    ATL_OPT_FILE,  /* --name=FILE: an output file, made absolute */
    /* --name=FILE: a file read, readable now, made absolute; repeated, joined with ':' */
    ATL_OPT_INFILES,
};

struct atl_cfg_opt {
    const char *name; /* without "--"; NULL: no option */
    enum atl_opt_kind kind;
    const char *meta;    /* what the value is called in --help ("BYTES") */
    const char *bare;    /* the value of --name without "=": the value is optional; or NULL */
    const char *implies; /* a setting the option also sets to 1, or NULL */
    /* what the option's value must be beyond the setting's rules: NULL when it may be, else
     * why not (said after the option and its value) */
    const char *(*vcheck)(const char *value);
    const char *help; /* NULL: the setting's */
};

/* Another spelling of a setting's option (config.def's ATL_CFG_ALIAS). */
struct atl_cfg_alias {
    const char *var;   /* the setting */
    const char *name;  /* a long option, or NULL */
    int letter;        /* a short option, or 0 */
    const char *fixed; /* a flag setting `var` to this; NULL: spells var's own option */
    const char *help;  /* NULL: as var's option */
};

extern const char *const atl_log_level_names[];
extern const char *const atl_redzone_check_names[];
extern const char *const atl_redzone_pools_names[];
extern const char *const atl_error_on_names[];
extern const char *const atl_diff_pointers_names[];
extern const char *const atl_races_names[];

/* Most ATLAS_DIFF_IGNORE entries (src/tracediff.h) and the longest
 * ATLAS_STEP=nvtx:NAME range name, checked when the settings are parsed. */
#define ATL_IGNORE_MAX 32
#define ATL_STEP_NAME_MAX 64

struct atl_config {
#define ATL_CFG_FIELD_BOOL(f) unsigned long long f;
#define ATL_CFG_FIELD_UINT(f) unsigned long long f;
#define ATL_CFG_FIELD_ENUM(f) unsigned long long f;
#define ATL_CFG_FIELD_STRING(f) const char *f;
#define ATL_CFG(name, field, type, min, max, def, choices, help, check, needs, option)             \
    ATL_CFG_FIELD_##type(field)
#include "config.def"
#undef ATL_CFG
    /* which settings were given (valid) in the environment */
    unsigned char set[64];
};

struct atl_cfg_var {
    const char *name;
    enum atl_cfg_type type;
    unsigned long long min, max, def;
    const char *const *choices;
    const char *help;
    size_t offset;
    const char *shown;                   /* a STRING: how an unset one is said (NULL: none) */
    const char *(*check)(const char *s); /* a STRING's syntax: NULL or why not */
    enum atl_cfg_need need;
    struct atl_cfg_opt opt;
};

extern const struct atl_cfg_var atl_cfg_vars[];
extern const size_t atl_cfg_nvars;
extern const struct atl_cfg_alias atl_cfg_aliases[];
extern const size_t atl_cfg_naliases;

/* ATLAS_STEP's modes, read by one rule (any case; nvtx:NAME with a name of 1 to
 * ATL_STEP_NAME_MAX - 1 bytes): the settings' check, atlas-trace and the step trace. */
enum atl_step_mode { ATL_STEP_SYNC, ATL_STEP_CAPTURE, ATL_STEP_API, ATL_STEP_NVTX, ATL_STEP_BAD };
/* The mode of `s` (NULL: the default, sync); *name gets an nvtx mode's range name. */
enum atl_step_mode atl_step_mode(const char *s, const char **name);

/* The settings in force. Written once by atl_config_load(), read-only after. */
extern struct atl_config atl_cfg;

/* Parses the settings from `envp` (a NULL-terminated environ-style array)
 * into `out`. Each problem is handed to `warn` as one finished line
 * (without the "atlas[PID]: " prefix or newline). Returns the number of
 * problems. Never fails: invalid or absent values take their defaults. */
int atl_config_parse(struct atl_config *out, char *const *envp,
                     void (*warn)(void *ctx, const char *line), void *ctx);

/* A value as it may appear in a message: at most 60 printable characters
 * (others become '?'), so environment text can never forge a log line. */
void atl_config_show_value(const char *v, char *out, size_t outsz);

/* Index of a setting by name, or -1. */
int atl_config_find(const char *name);

/* NULL when `value` is valid for setting number `idx`, else why not (the reason
 * the library's warning gives). atlas-trace checks its options with it, so the
 * tool and the library share one set of limits. */
const char *atl_config_check(int idx, const char *value);

/* atl_config_check, and the value (a BOOL or UINT's number, an ENUM's index)
 * in *num when valid. */
const char *atl_config_value(int idx, const char *value, unsigned long long *num);

/* Setting number `idx` as the environment `envp` gives it, by the table's rules, for a tool
 * that reads a few settings of its own (atlas-diff): NULL when it is unset or empty (*value
 * NULL, *num its default) or valid (*value its text, *num as atl_config_value gives it), else
 * why not (*value its text). */
const char *atl_config_env(int idx, char *const *envp, const char **value, unsigned long long *num);

/* Expands %p (PID), %r (rank from RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK or
 * SLURM_PROCID, "0" when none) and %% (a %) in a file name pattern. Returns
 * 0, or -1 when the name does not fit in `outsz` (out then holds the part
 * that did, never to be opened). */
int atl_config_expand_path(const char *pattern, char *out, size_t outsz);

/* When a rank variable %r would read is set but is not a number (so %r
 * falls back to the next one, or 0), writes one finished line saying so into
 * `out` and returns 1; else 0. */
int atl_config_rank_problem(char *out, size_t outsz);

/* The edit distance (insertions, deletions, substitutions) between two names of at most 63
 * characters; (size_t)-1 for longer ones. For "did you mean". */
size_t atl_edit_distance(const char *a, const char *b);

#endif
