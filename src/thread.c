/*
 * The per-thread state's one definition (src/thread.h), and the threads'
 * slots.
 */
#define _GNU_SOURCE /* gettid through syscall */
#include "thread.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What it costs every thread of the program in static TLS, even one that
 * never calls the driver. */
_Static_assert(sizeof(struct atl_thread) <= 64, "the per-thread state stays one cache line");

__thread struct atl_thread atl_thr __attribute__((tls_model("initial-exec")));

/* ---- slots ------------------------------------------------------------------------ */

#define CHUNK ATL_TSLOT_CHUNK
#define CHUNKS ATL_TSLOT_CHUNKS
struct atl_tslot *atl_tslot_chunks[CHUNKS];
static unsigned nslots; /* made: atl_tslot_chunks[0 .. nslots / CHUNK] */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

unsigned atl_tslot_count(void)
{
    return __atomic_load_n(&nslots, __ATOMIC_ACQUIRE);
}

/* The thread ends (its key's destructor, after its cancellation handlers):
 * what it left in its slot goes, and the slot is free for the next thread. */
static void slot_give_back(void *p)
{
    struct atl_tslot *s = p;
    __atomic_store_n(&s->hang_since, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&s->hang_said, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->krec_pin, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&s->tid, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->taken, 0, __ATOMIC_RELEASE);
}

static void key_make(void)
{
    if (pthread_key_create(&exit_key, slot_give_back) != 0)
        exit_key = (pthread_key_t)-1;
}

/* A free slot taken (made when none is free), or -1. */
static int slot_take(void)
{
    for (;;) {
        unsigned n = atl_tslot_count();
        for (unsigned i = 0; i < n; i++) {
            struct atl_tslot *s = atl_tslot_at(i);
            int zero = 0;
            if (!__atomic_load_n(&s->taken, __ATOMIC_RELAXED) &&
                __atomic_compare_exchange_n(&s->taken, &zero, 1, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED))
                return (int)i;
        }
        pthread_mutex_lock(&grow_lock);
        int grew = 0;
        if (atl_tslot_count() == n && n / CHUNK < CHUNKS) {
            struct atl_tslot *c = calloc(CHUNK, sizeof *c);
            if (c) {
                atl_tslot_chunks[n / CHUNK] = c;
                __atomic_store_n(&nslots, n + CHUNK, __ATOMIC_RELEASE);
                grew = 1;
            }
        } else if (atl_tslot_count() != n) {
            grew = 1; /* another thread made some: look again */
        }
        pthread_mutex_unlock(&grow_lock);
        if (!grew)
            return -1;
    }
}

struct atl_tslot *atl_tslot_take(void)
{
    int i = atl_thr.slot;
    if (i > 0)
        return atl_tslot_at((unsigned)i - 1);
    if (i < 0)
        return NULL;
    pthread_once(&key_once, key_make);
    /* without a key the slot would never come back: better none */
    int k = exit_key != (pthread_key_t)-1 ? slot_take() : -1;
    if (k < 0) {
        atl_thr.slot = -1;
        return NULL;
    }
    struct atl_tslot *s = atl_tslot_at((unsigned)k);
    if (pthread_setspecific(exit_key, s) != 0) {
        slot_give_back(s);
        atl_thr.slot = -1;
        return NULL;
    }
    __atomic_store_n(&s->tid, (int)syscall(SYS_gettid), __ATOMIC_RELAXED);
    atl_thr.slot = k + 1;
    return s;
}
