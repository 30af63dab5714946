/*
 * ATLAS_DEBUG_SYNC_KERNELS, read the same way by libatlastrace (src/faultrep.c)
 * and libatlaslaunch (src/launch/debug.c): one parser, header-only because
 * libatlaslaunch links nothing of the engine and makes no heap calls.
 *
 *   unset, "", 0, false, no, off   off
 *   1, true, yes, on               synchronise after every launch
 *   name1,name2,...                only after launches of those kernels
 *
 * A name matches a kernel whose mangled name is exactly it, or whose
 * identifier is it: `bad_kernel` for `_Z10bad_kernelPf`, `_ZN2ns10bad_kernelEv`
 * or `_Z10bad_kernelIiEvPT_` (every overload and instance of that name). The
 * fault report's re-run hint prints these identifiers.
 */
#ifndef ATL_DSK_H
#define ATL_DSK_H

#include <stddef.h>
#include <string.h>
#include <strings.h>

enum atl_dsk { ATL_DSK_OFF, ATL_DSK_ALL, ATL_DSK_LIST, ATL_DSK_BAD };

static inline int atl_dsk_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '.';
}

/* What v asks for; for ATL_DSK_BAD, *why says what is wrong with it. */
static inline enum atl_dsk atl_dsk_parse(const char *v, const char **why)
{
    static const char *const on[] = {"1", "true", "yes", "on"};
    static const char *const off[] = {"0", "false", "no", "off"};
    *why = NULL;
    if (!v || !*v)
        return ATL_DSK_OFF;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, on[i]) == 0)
            return ATL_DSK_ALL;
        if (strcasecmp(v, off[i]) == 0)
            return ATL_DSK_OFF;
    }
    size_t len = 0;
    for (const char *p = v;; p++) {
        if (*p == ',' || !*p) {
            if (!len) {
                *why = "an empty kernel name in the list";
                return ATL_DSK_BAD;
            }
            if (!*p)
                return ATL_DSK_LIST;
            len = 0;
        } else if (!atl_dsk_name_char(*p)) {
            *why = "not 0, 1 or a comma-separated list of kernel names (letters, digits, _ $ .)";
            return ATL_DSK_BAD;
        } else {
            len++;
        }
    }
}

static inline size_t atl_dsk_digits(const char *p, size_t *n)
{
    size_t i = 0;
    *n = 0;
    while (p[i] >= '0' && p[i] <= '9' && *n < 4096)
        *n = *n * 10 + (size_t)(p[i++] - '0');
    return i;
}

/* The identifier of a kernel's mangled name: its last name component
 * (`bad_kernel` for `_ZN2ns10bad_kernelEv`), or the whole name when it is
 * not an Itanium-mangled function name (extern "C" kernels). */
static inline const char *atl_dsk_ident(const char *m, size_t *len)
{
    *len = strlen(m);
    if (strncmp(m, "_Z", 2) != 0)
        return m;
    const char *p = m + 2, *id = NULL;
    size_t idlen = 0, n;
    if (*p == 'L')
        p++; /* internal linkage */
    int nested = *p == 'N';
    if (nested)
        p++;
    while (nested && (*p == 'r' || *p == 'V' || *p == 'K'))
        p++;
    for (;;) {
        size_t d = atl_dsk_digits(p, &n);
        if (!d || n == 0 || strnlen(p + d, n) < n)
            break;
        id = p + d, idlen = n;
        p += d + n;
        if (!nested)
            break;
    }
    if (!id)
        return m;
    *len = idlen;
    return id;
}

/* The entries of the list (ATL_DSK_LIST value) that name the kernel of mangled name m, as a
 * mask (bit i: entry i; entries past 63 share bit 63); 0 when none does. */
static inline unsigned long long atl_dsk_matches(const char *list, const char *m)
{
    if (!list || !m)
        return 0;
    size_t mlen = strlen(m), idlen;
    const char *id = atl_dsk_ident(m, &idlen);
    unsigned long long mask = 0;
    for (unsigned i = 0; *list; i++) {
        const char *end = strchr(list, ',');
        size_t len = end ? (size_t)(end - list) : strlen(list);
        if ((len == mlen && strncmp(list, m, len) == 0) ||
            (len == idlen && strncmp(list, id, len) == 0))
            mask |= 1ULL << (i < 63 ? i : 63);
        list += len + (end ? 1 : 0);
    }
    return mask;
}

/* 1 when the kernel of mangled name m is in the list (ATL_DSK_LIST value). */
static inline int atl_dsk_match(const char *list, const char *m)
{
    return atl_dsk_matches(list, m) != 0;
}

#endif
