/*
 * What the race detector reads from a kernel's demangled name
 * (src/races_params.c): which parameters only read, which may write, which
 * are PyTorch's operand arrays, which are never pointers.
 */
#include "races.h"

#include <check.h>
#include <string.h>

static int classes(const char *sig, unsigned n, unsigned char *cls)
{
    memset(cls, 0xee, 16);
    return atl_races_param_classes(sig, n, cls);
}

START_TEST(pointers_const_and_not)
{
    unsigned char c[16];
    ck_assert_int_eq(classes("consume(float const*, int)", 2, c), 2);
    ck_assert_int_eq(c[0], ATL_RP_READ);
    ck_assert_int_eq(c[1], ATL_RP_SKIP);
    ck_assert_int_eq(classes("scale(float*, float const*, float, unsigned long)", 4, c), 4);
    ck_assert_int_eq(c[0], ATL_RP_MAYWRITE);
    ck_assert_int_eq(c[1], ATL_RP_READ);
    ck_assert_int_eq(c[2], ATL_RP_SKIP);
    ck_assert_int_eq(c[3], ATL_RP_SKIP);
    /* a const pointer to non-const data may still write; a pointer to const
     * pointers only reads the table */
    ck_assert_int_eq(classes("k(float* const, char const* const*, const double*)", 3, c), 3);
    ck_assert_int_eq(c[0], ATL_RP_MAYWRITE);
    ck_assert_int_eq(c[1], ATL_RP_READ);
    ck_assert_int_eq(c[2], ATL_RP_READ);
    ck_assert_int_eq(classes("k(float* __restrict__, float const* __restrict__)", 2, c), 2);
    ck_assert_int_eq(c[0], ATL_RP_MAYWRITE);
    ck_assert_int_eq(c[1], ATL_RP_READ);
}
END_TEST

START_TEST(operand_arrays_and_structs)
{
    unsigned char c[16];
    ck_assert_int_eq(classes("void at::native::vectorized_elementwise_kernel<4, "
                             "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, "
                             "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
                             3, c),
                     3);
    ck_assert_int_eq(c[0], ATL_RP_SKIP);
    ck_assert_int_eq(c[1], ATL_RP_SCAN);
    ck_assert_int_eq(c[2], ATL_RP_OPERANDS);
    ck_assert_int_eq(classes("void at::native::unrolled_elementwise_kernel<F, "
                             "at::detail::Array<char*, 2>, C>(int, F, at::detail::Array<char*, 2>, "
                             "C)",
                             4, c),
                     4);
    ck_assert_int_eq(c[2], ATL_RP_OPERANDS);
    /* a lambda and a function pointer keep their commas to themselves */
    ck_assert_int_eq(classes("void k<{lambda(int, float)#1}>(long, {lambda(int, float)#1}, "
                             "void (*)(int, int))",
                             3, c),
                     3);
    ck_assert_int_eq(c[0], ATL_RP_SKIP);
    ck_assert_int_eq(c[1], ATL_RP_SCAN);
    ck_assert_int_eq(c[2], ATL_RP_SCAN);
}
END_TEST

START_TEST(untrusted_names_scan_everything)
{
    unsigned char c[16];
    /* an extern "C" name, a count that disagrees with the layout, nothing */
    ck_assert_int_eq(classes("add_kernel", 3, c), -1);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(c[i], ATL_RP_SCAN);
    ck_assert_int_eq(classes("consume(float const*, int)", 3, c), 2);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(c[i], ATL_RP_SCAN);
    ck_assert_int_eq(classes(NULL, 2, c), -1);
    ck_assert_int_eq(c[0], ATL_RP_SCAN);
    ck_assert_int_eq(classes("k()", 0, c), 0);
    ck_assert_int_eq(classes("k(void)", 0, c), 0);
    ck_assert_int_eq(c[0], 0xee); /* nothing written for no parameters */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("races_params");
    TCase *tc = tcase_create("params");
    tcase_add_test(tc, pointers_const_and_not);
    tcase_add_test(tc, operand_arrays_and_structs);
    tcase_add_test(tc, untrusted_names_scan_everything);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
