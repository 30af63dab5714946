/*
 * The one rule for a byte inside a JSON string, for every JSON the project
 * writes (the step trace's file, the findings' lines, the Chrome trace) and
 * the one it reads back (src/tracejson.c).
 *
 * A name is bytes, not always UTF-8 (a kernel's, a file's, a thread's), and
 * every file must stay strict JSON whatever it holds. So the quote and the
 * backslash are escaped, and every byte under 0x20 or from 0x7f up is written
 * as \u00XX: the byte as the code point of the same value (Latin-1). Files
 * stay ASCII, and the reader maps \u0000..\u00ff back to the byte, so any
 * name reads back exactly as it was written. (A UTF-8 name is then shown by
 * other JSON readers as its bytes' Latin-1 letters: the price of exactness.)
 */
#ifndef ATL_JSONESC_H
#define ATL_JSONESC_H

#include <stddef.h>

/* The byte c as it goes inside a JSON string, into d (room for 6 bytes);
 * returns how many bytes were written: 1, 2 or 6. */
static inline size_t atl_json_esc(char *d, unsigned char c)
{
    static const char hx[] = "0123456789abcdef";
    if (c == '"' || c == '\\') {
        d[0] = '\\', d[1] = (char)c;
        return 2;
    }
    if (c < 0x20 || c >= 0x7f) {
        d[0] = '\\', d[1] = 'u', d[2] = '0', d[3] = '0';
        d[4] = hx[c >> 4], d[5] = hx[c & 15];
        return 6;
    }
    d[0] = (char)c;
    return 1;
}

/* May c go into a JSON string as itself? */
static inline int atl_json_plain(unsigned char c)
{
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

#endif
