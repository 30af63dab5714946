/*
 * What a kernel does with each parameter, as far as its demangled name says
 * (src/races.h, atl_races_param_classes). The name is all the driver gives:
 * `consume(float const*, int)` reads through its first parameter and passes
 * an int; `produce(float*, int)` may write; PyTorch's TensorIterator kernels
 * take their operands as one `std::array<char*, N>` (older releases:
 * `at::detail::Array<char*, N>`), the output first. A name without a
 * parameter list (an extern "C" kernel, Triton's) says nothing: every
 * parameter is scanned and may write.
 */
#include "races.h"

#include <string.h>

/* The parameter list of a demangled signature: the text between the '('
 * that matches the last ')' and that ')'. 0 when there is none. */
static int param_list(const char *sig, const char **lo, const char **hi)
{
    const char *end = strrchr(sig, ')');
    if (!end)
        return 0;
    int depth = 0;
    for (const char *p = end; p >= sig; p--) {
        if (*p == ')' || *p == '>' || *p == ']' || *p == '}')
            depth++;
        else if (*p == '(' || *p == '<' || *p == '[' || *p == '{')
            depth--;
        if (depth == 0) {
            if (*p != '(')
                return 0;
            *lo = p + 1, *hi = end;
            return 1;
        }
    }
    return 0;
}

/* t[0..n) without the spaces around it. */
static void trim(const char **t, size_t *n)
{
    while (*n && (**t == ' '))
        (*t)++, (*n)--;
    while (*n && (*t)[*n - 1] == ' ')
        (*n)--;
}

static int ends_with(const char *t, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(t + n - k, suffix, k) == 0;
}

static int equals(const char *t, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(t, word, n) == 0;
}

/* The types that can never hold a device address worth naming: an 8-byte
 * integer or double is a size, a seed or a scale, not a pointer (a word of
 * one that happens to fall into an allocation must not make a race). */
static int arithmetic(const char *t, size_t n)
{
    static const char *const names[] = {"bool",        "char",
                                        "signed char", "unsigned char",
                                        "short",       "unsigned short",
                                        "int",         "unsigned int",
                                        "long",        "unsigned long",
                                        "long long",   "unsigned long long",
                                        "__int128",    "unsigned __int128",
                                        "float",       "double",
                                        "long double", "wchar_t",
                                        "char16_t",    "char32_t",
                                        "__half",      "__nv_bfloat16",
                                        "c10::Half",   "c10::BFloat16",
                                        NULL};
    for (int i = 0; names[i]; i++)
        if (equals(t, n, names[i]))
            return 1;
    return 0;
}

/* One parameter's type. */
static unsigned char classify(const char *t, size_t n)
{
    trim(&t, &n);
    /* a restrict qualifier on the pointer itself says nothing of writing */
    static const char *const quals[] = {" __restrict__", " __restrict", " restrict"};
    for (int again = 1; again;) {
        again = 0;
        for (int i = 0; i < 3; i++)
            if (ends_with(t, n, quals[i])) {
                n -= strlen(quals[i]);
                trim(&t, &n);
                again = 1;
            }
    }
    if (arithmetic(t, n))
        return ATL_RP_SKIP;
    /* the TensorIterator operand array: outputs first */
    static const char *const ops[] = {"std::array<char*, ", "at::detail::Array<char*, "};
    for (int i = 0; i < 2; i++)
        if (n > strlen(ops[i]) && memcmp(t, ops[i], strlen(ops[i])) == 0)
            return ATL_RP_OPERANDS;
    /* T const* (and T const* const): reads through it */
    size_t m = n;
    if (ends_with(t, m, " const"))
        m -= 6;
    if (ends_with(t, m, "const*") ||
        (m > 6 && memcmp(t, "const ", 6) == 0 && t[m - 1] == '*' && memchr(t, '*', m) == t + m - 1))
        return ATL_RP_READ;
    if (m && t[m - 1] == '*')
        return ATL_RP_MAYWRITE;
    return ATL_RP_SCAN; /* a struct, a class, a lambda: its words are scanned */
}

int atl_races_param_classes(const char *sig, unsigned n, unsigned char *cls)
{
    for (unsigned i = 0; i < n; i++)
        cls[i] = ATL_RP_SCAN;
    const char *lo, *hi;
    if (!sig || !param_list(sig, &lo, &hi))
        return -1;
    /* split at the commas outside any brackets */
    unsigned k = 0;
    int depth = 0;
    const char *start = lo;
    int count = 0;
    unsigned char tmp[ATL_RACES_MAX_PARAMS];
    for (const char *p = lo; p <= hi; p++) {
        if (p < hi && (*p == '(' || *p == '<' || *p == '[' || *p == '{'))
            depth++;
        else if (p < hi && (*p == ')' || *p == '>' || *p == ']' || *p == '}'))
            depth--;
        if (p == hi || (*p == ',' && depth == 0)) {
            const char *t = start;
            size_t len = (size_t)(p - start);
            trim(&t, &len);
            if (p == hi && count == 0 && (len == 0 || equals(t, len, "void")))
                break; /* f() or f(void) */
            if (k < ATL_RACES_MAX_PARAMS)
                tmp[k++] = classify(t, len);
            count++;
            start = p + 1;
        }
    }
    /* the layout and the name must agree, or the name is not trusted */
    if ((unsigned)count != n || count > ATL_RACES_MAX_PARAMS)
        return count;
    memcpy(cls, tmp, n);
    return count;
}
