/* JSON string escaping: see zs_json_esc.h. */
#include "zs_json_esc.h"

#include <stdio.h>

/* Length of the valid UTF-8 sequence starting at s (2 to 4), or 0. */
static int utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    int n;
    unsigned char lo = 0x80, hi = 0xbf; /* bounds of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* no overlong forms */
        if (c == 0xed)
            hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f; /* nothing above U+10FFFF */
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* Appends len bytes of p at position *o of buf (n bytes), counting always. */
static void put(char *buf, size_t n, size_t *o, const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++, (*o)++)
        if (*o + 1 < n)
            buf[*o] = p[i];
}

size_t zs_json_escape(char *buf, size_t n, const char *s)
{
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    put(buf, n, &o, "\"", 1);
    while (*p) {
        unsigned char c = *p;
        char esc[8];
        const char *short_esc = c == '"'    ? "\\\""
                                : c == '\\' ? "\\\\"
                                : c == '\n' ? "\\n"
                                : c == '\t' ? "\\t"
                                : c == '\r' ? "\\r"
                                : c == '\b' ? "\\b"
                                : c == '\f' ? "\\f"
                                            : NULL;
        if (short_esc) {
            put(buf, n, &o, short_esc, 2);
            p++;
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            put(buf, n, &o, esc, 6);
            p++;
        } else if (c < 0x80) {
            put(buf, n, &o, (const char *)p, 1);
            p++;
        } else {
            int len = utf8_len(p);
            if (len) {
                put(buf, n, &o, (const char *)p, (size_t)len);
                p += len;
            } else {
                put(buf, n, &o, "\\ufffd", 6);
                p++;
            }
        }
    }
    put(buf, n, &o, "\"", 1);
    if (n > 0)
        buf[o < n ? o : n - 1] = '\0';
    return o;
}
