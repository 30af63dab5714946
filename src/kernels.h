/*
 * The one record per kernel handle (CUfunction or CUkernel: cuLaunchKernel
 * accepts either): its name, where it came from, its parameter layout, the
 * kernel audit's counters, debug sync's answer and the flight recorder's
 * kept arguments. Every feature that wants to know something about a
 * launch's kernel reads this record; a launch finds it once (the engine's
 * atl_launch_pre) and carries it in its event (struct atl_launch, rec).
 *
 * The records are reached through one open-addressed table of handles,
 * read without a lock: the launch path's light half probes it in assembly
 * (hooks/hooks.c), at the offsets asserted below, through atl_fl.ktab
 * (src/fault.h: the line every launch reads). Writers take one mutex.
 *
 * Lifetime. A module or library unload takes the records of its kernels out
 * of the table (and those of unknown owner: they may be its) and frees each
 * record once nothing can refer to it any more, so that a program that loads
 * and unloads modules for ever (Triton autotuning, torch.compile, NVRTC)
 * keeps its memory flat. Who may hold a record, and for how long:
 *   - a thread between atl_krec_pin and atl_krec_unpin: any record it found
 *     through the table (atl_krec_find, atl_krec_get, a launch event's rec)
 *     stays allocated until it unpins. The engine pins a launch from
 *     atl_launch_pre to the end of atl_launch_post (the event's rec, for
 *     every feature's pre and post); the flight recorder's cold path and
 *     its report, and the naming calls below, pin themselves. A pin is a
 *     store and a fence; pins nest;
 *   - a holder past that (a kept step, a report kept for later): takes a
 *     reference with atl_krec_hold while pinned, and gives it back with
 *     atl_krec_release; a record leaves memory only once every reference
 *     is back. The step trace's kept steps hold the records of their ops'
 *     views (atl_krec_of_view), so a step compared after its module was
 *     unloaded still reads its kernels;
 *   - what keeps records found while pinned without a reference of each,
 *     past the pin (the step trace's buffers, whose ops point to views
 *     until a step end takes them): keeps the pin generation of each thread
 *     that put one there (atl_krec_pin_gen) and answers the oldest one it
 *     keeps through the function given to atl_krec_set_holders, which
 *     counts as a pin;
 *   - the flight recorder's kept arguments are in the record itself (a
 *     report reads them pinned); the kernel audit's counters too: when a
 *     record goes they are kept by kernels.c (atl_kernels_each).
 * Everything a record owns is freed in one place (krec_free in kernels.c):
 * a field that points to memory of its own is freed there. The names are
 * interned: one copy per distinct name for the process, never freed.
 *
 * The table has no tombstones: a key taken out shifts the later keys of its
 * probe run back, so probes stay as short as in a table that never saw an
 * unload (a launch costs the same after any number of reloads). Tables are
 * replaced only to grow with the number of live kernels (the old ones stay
 * allocated, as a launch may still be probing one: they add up to twice the
 * largest).
 */
#ifndef ATL_KERNELS_H
#define ATL_KERNELS_H

#include <cuda.h>
#include <stdint.h>

#include "events.h"
#include "fault.h"  /* atl_fl.ktab, the table's root */
#include "thread.h" /* the pins, in the threads' slots */

#define ATL_KREC_ARGS 256 /* parameter bytes the flight recorder keeps */
struct atl_kfn;           /* the step model's view of a kernel (src/step.h) */
/* A parameter word (struct atl_krec's words): parameter `param`, `off`
 * bytes into it. */
struct atl_kword {
    uint32_t param, off;
};
struct atl_krec {
    void *handle;
    /* Set when the record is made, before it is published (never changed:
     * a lookup that renames a handle replaces its record). */
    void *owner;   /* CUmodule or CUlibrary, when known */
    int is_kernel; /* a CUkernel rather than a CUfunction */
    int exact;     /* the driver gave the layout (then nparams 0: no parameters); set with
                    * release once, read through atl_krec_exact */
    /* The driver refused the layout for a reason other than "no such
     * parameter" (a thread with no current context asked: cudart on a new
     * thread looks a CUkernel up before it makes its context current): asked
     * again at the next use, a few times (ATL_KREC_LAYOUT_TRIES). */
    int layout_retry;
    unsigned nparams;
    const uint32_t *off, *size; /* nparams each, any number */
    /* The words of those parameters that may hold a device pointer: every
     * 8-byte-aligned 8 bytes of a parameter of 8 bytes or more (by-value
     * structs included), in parameter order, `nwords` of them. Made with the
     * layout, so that red zones, which look at them at every launch
     * (src/redzone.c's launch_words), do not walk the layout each time; NULL
     * with no layout, or no memory for them (then found from off and size),
     * never for a layout that has none. */
    const struct atl_kword *words;
    unsigned nwords;
    /* Mangled, interned (valid for the process); NULL while the driver has
     * not named it. Read and set atomically (atl_krec_mangled). */
    const char *name;
    /* The kernel audit's counters (src/kaudit.c), added to atomically. */
    uint64_t launches, blocks;
    /* Debug sync's cached answer (src/faultrep.c): 0 not asked yet, 1 no, 2 yes. */
    int dsk;
    /* ATLAS_KERNEL's cached answer (src/kselect.c), the same way. */
    int ksel;
    /* The race detector's (src/races_kern.c): 1 once nothing of the kernel is left to watch (its
     * launches then skip the watch's look-up); read and set atomically. */
    int races_quiet;
    /* The race detector's view of the kernel (src/races_kern.c: its parameter words and what it
     * does through each, its launches' memos): made at the kernel's first launch under
     * ATLAS_RACES, read and changed under the detector's lock, freed with the record
     * (krec_free) through the function the detector gave atl_krec_set_races_free. */
    void *races;
    /* The flight recorder's (src/flight.c): the parameter bytes of the
     * kernel's first launch in the recorder's epoch (ring.h). */
    uint64_t args_epoch; /* the epoch the bytes are from (0: none) */
    uint64_t args_seq;   /* the launch number they are from (0: none) */
    int args_busy;       /* a thread is copying them */
    unsigned args_len;
    unsigned char args[ATL_KREC_ARGS];
    /* The step trace's view (atl_krec_view): `view` from the layout above,
     * `view_packed` for launches that pass a packed buffer when the driver
     * gives no layout. Made at the kernel's first traced launch, published
     * atomically, freed with the record (atl_krec_view_free). */
    struct atl_kfn *view, *view_packed;
};

/* The table. Offsets are byte offsets: the hash masked by `mask` (the
 * capacity - 1, times the entry size) is the entry's offset from e[0]. */
struct atl_ktab_ent {
    void *key;      /* the handle; NULL: empty */
    uint64_t epoch; /* the flight recorder's: atl_fl.epoch at its first launch since a good sync */
    struct atl_krec *rec; /* set before key is published */
    uint64_t spare;
};
#define ATL_KTAB_ENT 32
/* The hash: (f * MUL) >> SHIFT, masked. MUL is a sign-extended 32-bit
 * immediate (one imul in hooks.c's assembly); the bits kept, 29 and up of
 * the product, depend on the handle's bits 0 to 44 and spread handles that
 * are 16 bytes apart (kernels of one module, as the fake driver gives them)
 * dozens of slots apart. */
#define ATL_KTAB_MUL 0xffffffff9e3779b1ULL
#define ATL_KTAB_SHIFT 24
struct atl_ktab {
    uint64_t mask; /* (capacity - 1) * ATL_KTAB_ENT */
    uint64_t cap;
    uint64_t used; /* keys (under the writers' lock) */
    struct atl_ktab *older;
    struct atl_ktab_ent e[];
};
_Static_assert(sizeof(struct atl_ktab_ent) == ATL_KTAB_ENT, "hooks.c's assembly knows this");
_Static_assert(sizeof(struct atl_ktab) == 32, "hooks.c's assembly knows this");

/* The table entry of f, or NULL (f NULL finds an empty entry: not there). */
static inline struct atl_ktab_ent *atl_ktab_find(const struct atl_ktab *t, const void *f)
{
    uint64_t off = (((uint64_t)(uintptr_t)f * ATL_KTAB_MUL) >> ATL_KTAB_SHIFT) & t->mask;
    for (;;) {
        struct atl_ktab_ent *e = (struct atl_ktab_ent *)((char *)t->e + off);
        void *k = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
        if (k == f)
            return e;
        if (!k)
            return NULL;
        off = (off + ATL_KTAB_ENT) & t->mask;
    }
}

/* The record of h, without a lock and without asking the driver; NULL when
 * there is none (yet). The caller is pinned (atl_krec_pin). A writer may
 * move an entry while it is read: the key is read again after the record,
 * so an entry that became another key's is looked up again. */
static inline struct atl_krec *atl_krec_find(const void *h)
{
    if (!h)
        return NULL;
    for (;;) {
        struct atl_ktab_ent *e = atl_ktab_find(__atomic_load_n(&atl_fl.ktab, __ATOMIC_ACQUIRE), h);
        if (!e)
            return NULL;
        struct atl_krec *r = __atomic_load_n(&e->rec, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->key, __ATOMIC_ACQUIRE) == h)
            return r;
    }
}

/* Keeps the records this thread finds allocated until the matching unpin
 * (see Lifetime above). Pins nest. Inline: the engine pins every launch
 * through its slow path. The first pin of a thread takes its slot, and a
 * thread without one is counted apart (atl_krec_pin_slow). */
extern uint64_t atl_krec_gen ATL_HIDDEN;
void atl_krec_pin_slow(void) ATL_HIDDEN;
void atl_krec_unpin_slow(void) ATL_HIDDEN;
static inline void atl_krec_pin(void)
{
    if (atl_thr.krec_pins++)
        return;
    int i = atl_thr.slot;
    /* Sequentially consistent (an xchg on x86-64): the table is read after
     * the pin is visible to the freeing thread, which takes a record out of
     * the table before it reads the pins. */
    if (__builtin_expect(i > 0, 1))
        __atomic_store_n(&atl_tslot_at((unsigned)i - 1)->krec_pin,
                         __atomic_load_n(&atl_krec_gen, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
    else
        atl_krec_pin_slow();
}
static inline void atl_krec_unpin(void)
{
    if (atl_thr.krec_pins <= 0 || --atl_thr.krec_pins)
        return;
    int i = atl_thr.slot;
    if (__builtin_expect(i > 0, 1))
        __atomic_store_n(&atl_tslot_at((unsigned)i - 1)->krec_pin, 0, __ATOMIC_RELEASE);
    else
        atl_krec_unpin_slow();
}
/* This thread left the library by longjmp or cancellation: its pins go. */
void atl_krec_unpin_all(void);
/* The generation this pinned thread shows (what a holder without
 * references keeps in its place, above); 1, the oldest, for a thread
 * without a slot or not pinned, so that nothing found then is freed while it
 * is kept. */
static inline uint64_t atl_krec_pin_gen(void)
{
    int i = atl_thr.slot;
    uint64_t p =
        i > 0 ? __atomic_load_n(&atl_tslot_at((unsigned)i - 1)->krec_pin, __ATOMIC_RELAXED) : 0;
    return p ? p : 1;
}
/* The oldest pin generation of the holders without references (0: none),
 * read by the freeing thread after the threads' pins. One function. */
void atl_krec_set_holders(uint64_t (*low)(void));
/* The heap memory of the records that left the table and wait to be freed (held by a pin
 * or a reference): what the step trace counts against ATLAS_TRACE_MAX_MB. */
size_t atl_krec_waiting_bytes(void);

/* How a record's `races` view is freed (the race detector's, given once at its start). */
void atl_krec_set_races_free(void (*fn)(void *));

/* A reference to r beyond a pin (r found while pinned, or held already). */
void atl_krec_hold(struct atl_krec *r);
void atl_krec_release(struct atl_krec *r);

/* The record of h, made when there is none: named and its layout fetched
 * from the driver once, now (after a fault the driver stops answering).
 * NULL for a NULL handle, or out of memory. */
struct atl_krec *atl_krec_get(void *h);

/* The mangled name of r (r may be NULL: then NULL), asking the driver again
 * while it is unknown. The string stays valid for the life of the process. */
const char *atl_krec_mangled(struct atl_krec *r);

/* Records a successful lookup (cuModuleGetFunction, cuLibraryGetKernel,
 * cuKernelGetFunction): the handle's record, made now, while the driver
 * answers, with the name the program asked for. */
void atl_kernels_note_lookup(const struct atl_lookup *l, CUresult r);

/* The mangled name of a kernel handle, or NULL when unknown (its record,
 * made when it has none). */
const char *atl_kernel_mangled(void *handle);

/* The name for people: demangled, or "kernel@0x..." as a last resort.
 * Writes into buf and returns it. The _of form takes the record the caller
 * already holds (NULL: none; then handle is looked up). */
const char *atl_kernel_name(void *handle, char *buf, unsigned len);
const char *atl_kernel_name_of(struct atl_krec *r, void *handle, char *buf, unsigned len);

/* Calls fn for each record in the table, then once for each kernel whose
 * records are gone (unloaded, or replaced by a lookup under another name)
 * and counted launches: a record that holds only its handle, owner, name
 * and the counts of all of its kernel's gone records (by owner and name;
 * by handle when unnamed). Under the writers' lock: fn must not make or
 * forget records. */
void atl_kernels_each(void (*fn)(const struct atl_krec *k, void *ctx), void *ctx);

/* Forgets one handle: launches find no record and take the cold path, which
 * makes a fresh one. */
void atl_kernels_forget(void *handle);

/* What the records take (for tests and benchmarks): records made and not
 * yet freed, of which in the table and waiting to be freed (pinned or held),
 * the table's capacity, and the tables made. */
struct atl_kernels_census {
    uint64_t records, live, waiting, capacity, tables;
};
void atl_kernels_census(struct atl_kernels_census *c);

/* A module or library is gone: forgets the handles it owned (and those whose
 * owner is unknown: fetched by name from the driver, they may be its, and
 * asking again costs one call), so a new kernel the driver gives the same
 * address gets a record of its own (and each feature's view with it: no
 * feature keeps a cache keyed by handle). */
void atl_kernels_forget_owner(void *owner);

/* ---- the step trace's view ------------------------------------------------------ */

/* How the step recorder copies each parameter of a launch (the view's
 * `plan`): its bytes, then zeros up to the next parameter, so the padding
 * reads the same every step without zeroing the block first, and the common
 * cases (a pointer, a 4-byte scalar before an 8-aligned one) are one load
 * and one 8-byte store. Only for layouts whose offsets ascend from 0 (every
 * layout the driver gives, in practice); the view of any other has no plan,
 * and the recorder zeroes the block, then copies. */
enum { ATL_SLOT_8, ATL_SLOT_4_IN_8, ATL_SLOT_4, ATL_SLOT_OTHER };
struct atl_kslot {
    uint32_t off;
    uint16_t how; /* ATL_SLOT_*: the common cases need no size test */
    uint16_t pad;
    uint32_t size, span;
};

/* The kernel as the step model sees it (src/step.h): its name ("kernel@0x..."
 * while the driver has not named it), its layout and the recorder's copy
 * plan, made once per record and kept with it, so a traced launch finds it
 * in the record its event carries. `packed` (non-zero) asks for the view of
 * a launch through a packed buffer of that many bytes when the record has no
 * exact layout: one parameter covering the buffer (the first such launch's
 * size stays). r NULL (out of memory): a view named "kernel@?" without
 * parameters. Never NULL. */
const struct atl_kfn *atl_krec_view_make(struct atl_krec *r, size_t packed);
static inline const struct atl_kfn *atl_krec_view(struct atl_krec *r, size_t packed)
{
    const struct atl_kfn *v =
        r ? __atomic_load_n(packed ? &r->view_packed : &r->view, __ATOMIC_ACQUIRE) : NULL;
    return __builtin_expect(v != NULL, 1) ? v : atl_krec_view_make(r, packed);
}
/* Frees what the views of r own and clears them: for whoever frees r, once
 * nothing (a kept step of the trace) points to them any more. */
void atl_krec_view_free(struct atl_krec *r);
/* The record whose view k is (NULL: the view of no record), for a holder of
 * views: a kept step holds each of its kernels' records (Lifetime, above). k
 * must come from atl_krec_view. */
struct atl_krec *atl_krec_of_view(const struct atl_kfn *k);

/* The layout's retries, then the record stays without one. */
#define ATL_KREC_LAYOUT_TRIES 8
int atl_krec_layout_retry(struct atl_krec *r);

/* Whether r has the driver's layout (r->nparams, r->off, r->size valid):
 * one load once it has; a layout the driver refused is asked again here, at
 * most ATL_KREC_LAYOUT_TRIES times, so red zones' launch mode may call it
 * per launch. */
static inline int atl_krec_exact(struct atl_krec *r)
{
    if (__atomic_load_n(&r->exact, __ATOMIC_ACQUIRE))
        return 1;
    return __atomic_load_n(&r->layout_retry, __ATOMIC_RELAXED) ? atl_krec_layout_retry(r) : 0;
}

/* Asks the driver for the parameter layout of h: cuFuncGetParamInfo for a
 * CUfunction, cuKernelGetParamInfo for a CUkernel, index by index until the
 * driver says there are no more (at most max). *exact is 1 when the driver
 * answered. Returns the number of parameters. */
unsigned atl_param_layout(void *h, uint32_t *off, uint32_t *size, unsigned max, int *exact,
                          CUresult *why);

#endif
