/*
 * Reports never wait for the loader while they hold a lock of their own.
 *
 * Naming a frame asks the dynamic loader (dladdr; dlopen and dlsym the first
 * time libdw is needed), and the loader's lock is held by a thread running a
 * library's constructor (dlopen), which may call CUDA and so report a finding
 * itself. A report that asked the loader under the findings sink's lock, or
 * under the source-line reader's, would wait for that thread while it waits
 * for the report: a hang. Here dladdr and dlopen are this program's own
 * (the engine is linked in statically), and play the loader's part: the
 * first call blocks until another thread has gone through the same sink or
 * reader, or gives up after a few seconds and says so.
 */
#define _GNU_SOURCE
#include "config.h"
#include "findings.h"
#include "symbols.h"

#include <check.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The loader's part: 1 while a test arms it; the other thread's work; its end. */
static int armed;
static void *(*other_work)(void *);
static int other_done;

/* Runs other_work on another thread, waiting for it at most 5 s: 1 when it
 * got through (nothing of ours was held), 0 when it waited for us. */
static int other_gets_through(void)
{
    pthread_t t;
    __atomic_store_n(&other_done, 0, __ATOMIC_RELAXED);
    ck_assert_int_eq(pthread_create(&t, NULL, other_work, NULL), 0);
    for (int i = 0; i < 500 && !__atomic_load_n(&other_done, __ATOMIC_ACQUIRE); i++)
        usleep(10 * 1000);
    int through = __atomic_load_n(&other_done, __ATOMIC_ACQUIRE);
    pthread_detach(t); /* if it waits, it ends once the lock is let go */
    return through;
}

static int through_dladdr = -1, through_dlopen = -1;

int dladdr(const void *addr, Dl_info *info)
{
    (void)addr;
    memset(info, 0, sizeof *info);
    if (__atomic_exchange_n(&armed, 0, __ATOMIC_ACQ_REL))
        through_dladdr = other_gets_through();
    return 0; /* unknown: the frame keeps its address */
}

/* The loader's list, which naming a frame walks (the object it lies in; whether one was
 * unloaded since the frames named so far were): armed apart (armed_list), since the source-line
 * reader walks it before it opens libdw; then the real walk. */
static int armed_list;
typedef int (*phdr_cb)(struct dl_phdr_info *, size_t, void *);
int dl_iterate_phdr(phdr_cb cb, void *data)
{
    static int (*real)(phdr_cb, void *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "dl_iterate_phdr");
    if (__atomic_exchange_n(&armed_list, 0, __ATOMIC_ACQ_REL))
        through_dladdr = other_gets_through();
    return real ? real(cb, data) : 0;
}

void *dlopen(const char *file, int mode)
{
    (void)file, (void)mode;
    if (__atomic_exchange_n(&armed, 0, __ATOMIC_ACQ_REL))
        through_dlopen = other_gets_through();
    return NULL; /* no libdw: reports keep symbol+offset */
}

static void *other_finding(void *arg)
{
    (void)arg;
    struct atl_find f = {.kind = ATL_FINDING_DIFF, .message = "step differs"};
    atl_find_open(&f);
    __atomic_store_n(&other_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* A finding with a stack, its frames looked up for the findings file and
 * --gen-suppressions, while another thread's finding goes through. */
START_TEST(findings_sink_asks_the_loader_unlocked)
{
    atl_cfg.gen_suppressions = 1;
    atl_findings_init();
    struct atl_stack st = {.n = 1, .pc = {(void *)other_gets_through}};
    struct atl_find f = {.kind = ATL_FINDING_LEAK, .message = "leak", .stack = &st};
    other_work = other_finding;
    __atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&armed_list, 1, __ATOMIC_RELEASE);
    atl_find_open(&f);
    ck_assert_msg(through_dladdr == 1,
                  "a finding's frames were looked up under the sink's lock (another thread's "
                  "finding waited for it)");
    /* named once and kept, the frames are named again from what was kept: the loader is
     * still asked whether an object was unloaded since */
    through_dladdr = -1;
    __atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&armed_list, 1, __ATOMIC_RELEASE);
    atl_find_close(&f); /* the suppression entry after its lines */
    ck_assert_msg(through_dladdr == 1, "--gen-suppressions' frames were looked up under the "
                                       "sink's lock");
}
END_TEST

static void *other_line(void *arg)
{
    (void)arg;
    char file[256], func[256];
    int line;
    atl_sym_line((void *)other_gets_through, file, sizeof file, &line, func, sizeof func);
    __atomic_store_n(&other_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* The first source line asked for opens libdw (dlopen): not under the
 * reader's lock, which another thread's report takes. */
START_TEST(libdw_opened_unlocked)
{
    char file[256], func[256];
    int line;
    other_work = other_line;
    __atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
    /* no libdw here (this dlopen finds none): the line from binutils' addr2line */
    ck_assert_int_eq(
        atl_sym_line((void *)other_gets_through, file, sizeof file, &line, func, sizeof func), 1);
    ck_assert_msg(strstr(file, "test_report_locks.c") != NULL, "file %s", file);
    ck_assert_msg(through_dlopen == 1,
                  "libdw was opened under the source-line reader's lock (another thread's "
                  "look-up waited for it)");
}
END_TEST

/* A function the loader cannot name (static, in an executable linked without -rdynamic;
 * this program's dladdr knows nothing and its dlopen finds no libdw): the module's own
 * symbol table names it, and the offset in it, as a report of a program built by nvcc
 * without libdw installed needs to tell main from CUDA's runtime linked in. */
static __attribute__((noinline)) int unexported_helper(int x)
{
    return x * 3 + 1;
}

START_TEST(symbol_table_names_what_the_loader_cannot)
{
    char func[256] = "";
    unsigned long off = 0;
    ck_assert_int_eq(unexported_helper(1), 4);
    ck_assert_int_eq(atl_sym_name((char *)unexported_helper + 4, func, sizeof func, &off), 1);
    ck_assert_str_eq(func, "unexported_helper");
    ck_assert_uint_eq(off, 4);
    /* an address in no module */
    ck_assert_int_eq(atl_sym_name((void *)16, func, sizeof func, &off), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report locks");
    TCase *tc = tcase_create("loader");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, findings_sink_asks_the_loader_unlocked);
    tcase_add_test(tc, libdw_opened_unlocked);
    tcase_add_test(tc, symbol_table_names_what_the_loader_cannot);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
