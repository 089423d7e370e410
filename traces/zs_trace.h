/* A trace: a finite list of document lengths in tokens, in order, with the
 * name of where it came from. File readers (zs_trace_read.h) and the
 * generators (zs_lengen.h, through zs_trace_src.h) produce traces; the
 * statistics (zs_trace_stats.h) and the writer here consume them. A
 * million lengths is 4 MB, so traces are simply materialised arrays.
 * Depends on zs_err only. */
#ifndef ZS_TRACE_H
#define ZS_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "zs_err.h"

/* The longest document a trace may hold. Lengths are int32 throughout the
 * core; anything longer is certainly a corrupt file, not a document. */
#define ZS_TRACE_MAX_LEN INT32_MAX

typedef struct zs_trace {
    int64_t n;
    int32_t *len;     /* n lengths, each in [1, ZS_TRACE_MAX_LEN] */
    int64_t cap;      /* allocated room (internal) */
    char source[512]; /* file path or generator spec */
} zs_trace;

/* An empty trace; NULL when out of memory. source may be NULL. */
zs_trace *zs_trace_new(const char *source);
void zs_trace_free(zs_trace *t);
/* Makes room for cap lengths in total; ZS_ENOMEM on failure. */
int zs_trace_reserve(zs_trace *t, int64_t cap, zs_err *e);
/* Appends one length (not validated: readers check their input). */
int zs_trace_push(zs_trace *t, int32_t len, zs_err *e);
/* Sum of all lengths. */
int64_t zs_trace_tokens(const zs_trace *t);

/* On-disk formats. AUTO: by extension (.lengths .len .txt: lines; .csv;
 * .json), else by content (see zs_trace_read.h). */
typedef enum zs_trace_format {
    ZS_TRACE_FMT_AUTO = 0,
    ZS_TRACE_FMT_LINES, /* one integer per line, '#' starts a comment */
    ZS_TRACE_FMT_CSV,   /* a length column in comma-separated values */
    ZS_TRACE_FMT_JSON   /* an array of integers (or {"lengths": [...]}) */
} zs_trace_format;

/* Parses "auto", "lines", "csv" or "json" (ZS_EUSAGE otherwise). */
int zs_trace_format_parse(const char *s, zs_trace_format *out, zs_err *e);
const char *zs_trace_format_name(zs_trace_format f);
/* The format a file name's extension implies; AUTO when it implies none. */
zs_trace_format zs_trace_format_from_path(const char *path);

/* Writes t so that the reader accepts it back unchanged: LINES (also for
 * AUTO) with comment lines first, CSV with a "length" header, or a JSON
 * array. comment (may be NULL, may hold several lines) is written as '#'
 * lines in LINES format only. ZS_EIO when the stream fails. */
int zs_trace_write(const zs_trace *t, FILE *f, zs_trace_format fmt, const char *comment, zs_err *e);

#endif
