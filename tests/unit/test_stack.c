/*
 * Frames' names at the scale of a real program (issue #43): a return address is named once,
 * and reports name it again from what was kept, with the same text. (The unwind cache's hit
 * rate with many call chains at one stack address is make check's trace-churn-check, under
 * the preload: linked in statically, every frame of this program would be the library's own.)
 */
#define _GNU_SOURCE
#include "stack.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) int named_helper(int x)
{
    return x * 7 + 1;
}

START_TEST(a_frame_is_named_once)
{
    ck_assert_int_eq(named_helper(1), 8);
    void *pc = (char *)named_helper + 4;
    char a[512], b[512];
    uint64_t n0, r0, n1, r1, n2, r2;
    atl_frame_counts(&n0, &r0);
    atl_frame_format(pc, a, sizeof a);
    atl_frame_counts(&n1, &r1);
    ck_assert_uint_eq(n1 - n0, 1);
    for (int i = 0; i < 100; i++) {
        atl_frame_format(pc, b, sizeof b);
        ck_assert_str_eq(b, a);
    }
    atl_frame_counts(&n2, &r2);
    ck_assert_uint_eq(n2 - n1, 0);
    ck_assert_uint_eq(r2 - r1, 100);
    ck_assert_msg(strstr(a, "named_helper") != NULL, "named as %s", a);
    /* an address no object holds is said as such, and not kept */
    atl_frame_format((void *)16, b, sizeof b);
    atl_frame_format((void *)16, b, sizeof b);
    ck_assert_str_eq(b, "0x10");
    atl_frame_counts(&n1, &r1);
    ck_assert_uint_eq(r1 - r2, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stack");
    TCase *tc = tcase_create("names");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_frame_is_named_once);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
