/* JSON string escaping: the one function every hand-written JSON output
 * (timelines, where building a jansson tree per event would cost too much)
 * uses, so labels with quotes, control characters or broken UTF-8 always
 * give valid JSON. libc only. */
#ifndef ZS_JSON_ESC_H
#define ZS_JSON_ESC_H

#include <stddef.h>

/* Writes s as a JSON string, quotes included, into buf of n bytes: '"' and
 * '\\' escaped, control characters as \n, \t, ... or \u00XX, bytes that are
 * not valid UTF-8 as \ufffd (the replacement character); valid UTF-8 is
 * copied. Returns the length the whole text needs (without the NUL); like
 * snprintf, the text is cut (and NUL-terminated when n > 0) when n is too
 * small. s NULL is the empty string. */
size_t zs_json_escape(char *buf, size_t n, const char *s);

#endif
