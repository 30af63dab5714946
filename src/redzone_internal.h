/*
 * Red zones' parts, shared by their files (nothing outside the feature
 * includes this). Each file owns its state, `static`; the others reach it
 * through the functions below:
 *   src/redzone.c         the settings, the zone set (a compact table of the
 *                         zones beside the ledger, and the hold cache), what
 *                         each launch's parameters point at (the launch words
 *                         and their log), the note on PyTorch's pool, and the
 *                         events of allocations, launches, syncs and captures
 *   src/redzone_check.c   the check kernels, the queued checks' ring of
 *                         verdicts, the full check of every zone (and
 *                         teardown's), the check after a launch
 *   src/redzone_quar.c    the frees: held back, kept poisoned in the
 *                         quarantine, or checked and passed on; what an
 *                         allocation that fails for memory releases
 *   src/redzone_report.c  the reports of an overrun and of a write after
 *                         free, their suspects and hints; the exit's summary
 * Locks: scan_lock (redzone_check.c: atl_rz_lock) guards the checks, the
 * quarantine, the frees held back and the reported set; zones_lock
 * (redzone.c) the zone set, taken inside scan_lock, never the other way.
 */
#ifndef ATL_REDZONE_INTERNAL_H
#define ATL_REDZONE_INTERNAL_H

#include "events.h"
#include "redzone_gpu.h"
#include "stack.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- the settings (src/redzone.c) -------------------------------------------- */

enum { CHECK_FREE, CHECK_SYNC, CHECK_LAUNCH };

struct atl_rz_opts {
    size_t pad; /* ATLAS_REDZONE; 0: no red zones */
    unsigned char fill;
    int mode;   /* ATLAS_REDZONE_CHECK: CHECK_* */
    int active; /* red zones on (the ledger's reports are src/leaks.c's) */
    uint64_t min_idx;
    size_t qmax; /* ATLAS_REDZONE_QUARANTINE_MB in bytes; 0: no quarantine */
    int recheck; /* ATLAS_REDZONE_RECHECK: launch mode checks launches identical to one checked */
};
/* Written once, by atl_redzone_init, before any event; read-only to the
 * other files through this view (the checks read the fill at every launch
 * in launch mode: no call on the way). */
extern const struct atl_rz_opts *const atl_rz_opt;

/* ---- the zone set (src/redzone.c) -----------------------------------------------
 * The ledger holds full records (call stacks and all); a scan needs only
 * (start, length), so the zones keep their own compact array. A freed
 * allocation in the quarantine stays there as a zone of its own bytes and
 * tail (`freed`), checked like any other. */
struct zone {
    CUdeviceptr base, start; /* allocation base; first byte checked */
    size_t bytes, len;       /* what the program asked for; bytes checked */
    uint64_t seq;
    uint64_t born; /* the newest launch when it was made: no older launch reaches it */
    int watched;   /* poisoned and not yet reported */
    int freed;     /* in the quarantine: start == base, len = bytes + red zone */
    /* launch mode: the newest launch that reached it and had no check of its own (its kernel
     * left out by ATLAS_KERNEL, or the launch identical to one checked before), so a later
     * check cannot tell which launch wrote it; `why`: UNCHECKED_*. In the copy a launch's check
     * takes (reach_of), 0 unless that launch came after the zone's last launch check. */
    uint64_t unchecked;
    uint64_t checked; /* the newest launch whose own check covers it (launch mode) */
    unsigned why;
};
enum { UNCHECKED_KERNEL = 1, UNCHECKED_SAME = 2 };

void atl_rz_zone_add(const struct zone *z);
/* Removes the zone of `base` (when `freed` matches); 1 and *out when found. */
int atl_rz_zone_remove(CUdeviceptr base, int freed, struct zone *out);
/* Sets the watch of allocation seq's zone (if still there). */
void atl_rz_zone_set_watched(CUdeviceptr base, uint64_t seq, int watched);
/* Copies the watched zones (with `freed`, the quarantine's too) into *buf
 * (grown as needed; *cap its room), *n of them, and *entries the entries
 * of the check's table they make (a zone of len bytes: one per `chunk`
 * bytes, at least one), and sets *ver to the zone set's version; with
 * `same`, returns 1 without copying when the set is still at *ver. -1 when
 * out of memory. One hold of zones_lock. */
int atl_rz_zones_copy(int same, int freed, size_t chunk, struct zone **buf, size_t *cap, size_t *n,
                      size_t *entries, uint64_t *ver);
/* Teardown: every zone forgotten (their memory goes with the context). */
void atl_rz_zones_forget(void);

/* ---- what each launch's parameters point at (src/redzone.c) ---------------------- */

/* A candidate pointer word of a launch: its value, parameter and offset. */
struct lword {
    uint64_t v;
    uint32_t arg, off;
};
/* Whether launch `seq` has a parameter word in [lo, hi): 1 (and which, in
 * *arg and *off), 0 (none: ruled out, or it did not run), -1 (not known). */
int atl_rz_words_reach(uint64_t seq, uint64_t lo, uint64_t hi, unsigned *arg, unsigned *off);
/* Launch mode: launches counted from before their driver call until their
 * check is queued (the full checks defer while any is). */
unsigned atl_rz_launches_unchecked(void);

/* ---- who found it (every file) ------------------------------------------------- */

enum { BY_LAUNCH, BY_FREE, BY_FULL, BY_RELEASE };
struct qent;
struct finder {
    int by;
    const char *where; /* BY_FREE, BY_FULL: the entry point (or "exit") */
    uint64_t upto;     /* BY_FREE, BY_FULL, BY_RELEASE: the newest launch made before the check */
    int defer;         /* a full check in launch mode before exit: see full_report */
    /* BY_LAUNCH: the launch, its stream, and the parameter word that reached the zone */
    uint64_t seq;
    void *func;
    unsigned grid[3], block[3];
    CUstream stream;
    unsigned arg, off;
    const char *whole; /* BY_LAUNCH: a full check, and why (what the launch reaches is not known) */
    const struct qent *q; /* a freed allocation's quarantine entry, when the check had it */
    /* BY_FULL: the quarantine's zones too (teardown, exit, atlas_redzone_scan:
     * a full check at every host sync would read all of it each time) */
    int freed_too;
};

/* A queued check of a few zones: what the kernel reads and fills, and what
 * the report needs of each zone. */
struct pending {
    uint64_t ticket; /* what the kernel writes into `done` */
    uint64_t state;  /* SLOT_STATE(ticket, SLOT_...), atomic */
    struct finder how;
    unsigned nz, nfill;
    struct zone z[ATL_RZ_SLOT_ZONES];
    struct atl_rz_fill f[ATL_RZ_SLOT_FILLS];                 /* bodies poisoned after the check */
    unsigned arg[ATL_RZ_SLOT_ZONES], off[ATL_RZ_SLOT_ZONES]; /* BY_LAUNCH */
    /* BY_FREE, one per zone (a batch of held frees has several): where the
     * allocation was made (the ledger has dropped the record) and the newest
     * launch before its free */
    int has_site;
    struct atl_stack site[ATL_RZ_SLOT_ZONES];
    uint64_t upto[ATL_RZ_SLOT_ZONES];
    /* BY_RELEASE: the entries leaving the quarantine, owned by the slot
     * until its verdict is read (their free sites are in the report) */
    struct qent *qe[ATL_RZ_SLOT_ZONES];
};

static inline void atl_rz_site_copy(struct atl_stack *to, const struct atl_stack *from)
{
    to->n = from->n;
    memcpy(to->pc, from->pc, (size_t)from->n * sizeof *from->pc);
}

/* ---- the checks (src/redzone_check.c) -------------------------------------------- */

/* scan_lock: the checks, the quarantine, the frees held back, the reports. */
void atl_rz_lock(void);
void atl_rz_unlock(void);
/* 1 when the check kernel and its verdict ring are there (made now if not
 * yet tried). With scan_lock held. */
int atl_rz_checks_ready_locked(void);
/* The same, tried once, at the first guarded allocation (takes scan_lock). */
void atl_rz_checks_early(void);
/* Queues the check of p's zones (and fills) on `stream`. 0 when queued
 * (the slot owns p's quarantine entries), -1 when the caller must check
 * another way. With scan_lock held. */
int atl_rz_check_queue_locked(const struct pending *p, CUstream stream);
/* The check before a free (of p's zones): queued (0), or where no kernel
 * can be queued, made now with copies after everything queued (-1: then
 * p's fills were not made). With scan_lock held. */
int atl_rz_free_check_locked(const struct pending *p, CUstream stream);
/* Reads the finished queued checks, in order; with `all` (after a context
 * sync), every queued one. With scan_lock held. */
void atl_rz_poll_locked(int all);
/* The same, without `all`, when any check is queued; takes scan_lock. */
void atl_rz_poll(void);
/* The device is readable now (a context sync)? 0 when it is. */
int atl_rz_sync_for_scan(void);
/* A check skipped for a stream capture, counted. */
void atl_rz_check_skipped(void);
/* The checks' own device memory (the merge records): whether it is held,
 * and, after a context sync, given back for good (1; 0 while checks are
 * still queued). With scan_lock held. */
int atl_rz_merge_held_locked(void);
int atl_rz_merge_give_back_locked(void);
/* A full check of every watched zone (with `freed_too`, the quarantine's);
 * the number of newly corrupted zones. */
int atl_rz_scan_all(const char *where, int defer, int freed_too);
/* Launch mode, a launch whose reach cannot be told (`why`): every zone is
 * checked, after a context sync, and launch l named. */
void atl_rz_scan_whole(const struct atl_launch *l, const char *why);
/* The launch after which a zone's suspects are looked for: the newest
 * launch made before the last clean full check (with `freed`, of one that
 * read the quarantine too). */
uint64_t atl_rz_clean_upto(int freed);

/* The zones a launch reaches, with the parameter word that reaches each. A
 * launch with more than REACH_STACK of them is a wide one. */
#define REACH_STACK 32 /* 4 slots of ATL_RZ_SLOT_ZONES */
struct reach {
    struct zone z;
    unsigned arg, off;
};
/* The launch's own check of the n zones it reaches, queued right after it. */
void atl_rz_launch_check(const struct atl_launch *l, const struct reach *r, int n);

/* ---- the frees (src/redzone_quar.c) ------------------------------------------------- */

/* A freed guarded allocation kept poisoned before its real free: its zone
 * (all of it now), where it was made and freed, and how to free it. */
struct qent {
    struct zone z;
    CUdeviceptr ptr;
    CUcontext ctx;
    CUevent ev;      /* recorded on the free's stream after the poison; NULL: the legacy stream */
    int sync;        /* freed with cuMemFree: released with it */
    int hook;        /* the program's free */
    CUstream stream; /* the free's stream, as the library names it */
    uint64_t freed_upto; /* the newest launch when it was freed */
    struct atl_stack alloc_site, free_site;
};
/* The quarantine's entry of allocation seq at base, or NULL. With scan_lock
 * held. */
const struct qent *atl_rz_quar_find(CUdeviceptr base, uint64_t seq);
/* How many frees are held back now, for the launch path's look without the
 * lock (written under scan_lock by src/redzone_quar.c; a stale one costs an
 * early release or misses one, never a wrong answer). */
extern const unsigned *const atl_rz_held_n;
/* A launch with these candidate words: the held frees are released first
 * when a word points into one. */
void atl_rz_held_reached(const struct lword *w, unsigned n);
/* The frees held back: their check (and poison) queued, then the driver's
 * frees or the quarantine. With scan_lock held. */
void atl_rz_held_release_locked(void);
/* The same, taking scan_lock, when any is held. */
void atl_rz_held_release(void);
/* Every entry of the quarantine released. With scan_lock held. */
void atl_rz_quar_flush_locked(void);
/* The events kept for reuse destroyed (a context goes). With scan_lock held. */
void atl_rz_quar_forget_events(void);

/* Memory the quarantine released poisoned (issue #45's first measure, before any birth skips
 * its poison): spans [lo, hi) of released allocations, whole, that no allocation has taken
 * since. atl_rz_rel_add: a span released (its check queued before its free). atl_rz_rel_birth:
 * a guarded allocation [base, end) is made, its zone [zone, end): 1 when the zone lay wholly in
 * released memory; the allocation's span leaves the set either way. Counted for the exit's
 * info line; an upper bound (the driver may have handed the pages back meanwhile). */
void atl_rz_rel_add(uint64_t lo, uint64_t hi);
int atl_rz_rel_birth(uint64_t base, uint64_t zone, uint64_t end);

/* ---- reports (src/redzone_report.c) -------------------------------------------------- */

/* One report per corrupted zone (called with scan_lock held); afterwards
 * the zone is no longer watched. 1 when reported, 0 when it was already. */
int atl_rz_report(const struct zone *z, const struct atl_stack *known_site, unsigned bad,
                  size_t first, size_t last, const struct finder *how);
/* Allocation seq may be reported again (re-poisoned). With scan_lock held. */
void atl_rz_report_rearm(uint64_t seq);

/* The counts the summaries print, each part filled by the file that keeps it. */
struct atl_rz_counts {
    uint64_t guarded, unpadded; /* src/redzone.c */
    int torch_pool;             /* src/redzone.c: PyTorch's caching allocator serves the process */
    uint64_t checks, skipped;   /* src/redzone_check.c: checks made, skipped for a capture */
    uint64_t same;              /* src/redzone.c: launches identical to one checked, not checked */
    uint64_t quarantined, held_frees, held_batches; /* src/redzone_quar.c */
    /* src/redzone_quar.c: births asked, births whose zone lay in released poison, spans
     * refused (the set was full) */
    uint64_t births, births_in_poison, rel_full;
};
void atl_rz_zone_counts(struct atl_rz_counts *c);
void atl_rz_check_counts(struct atl_rz_counts *c);
void atl_rz_quar_counts(struct atl_rz_counts *c);

#endif
