/* Trace readers: document lengths from a file in one of three formats.
 *
 *   lines  one integer per line; '#' starts a comment (whole line or after
 *          the value); blank lines are allowed (.lengths, .len, .txt)
 *   csv    comma-separated, optional header row, double-quoted fields; the
 *          length column is chosen by name or 1-based number (.csv)
 *   json   an array of integers, or an object {"lengths": [...]} (.json)
 *
 * The format comes from cfg->format, else the extension, else the content
 * ('[' or '{' first: json; a ',' in the first data line: csv; else lines).
 * Every bad value is a ZS_EINPUT error naming file:line:col and how to fix
 * it: an empty file, a non-integer, a fraction, a zero or negative length,
 * a length above ZS_TRACE_MAX_LEN, trailing text, truncated JSON, a missing
 * or unknown column. Nothing is skipped silently. Depends on zs_trace and
 * jansson. */
#ifndef ZS_TRACE_READ_H
#define ZS_TRACE_READ_H

#include <stddef.h>

#include "zs_trace.h"

typedef struct zs_trace_read_cfg {
    zs_trace_format format; /* ZS_TRACE_FMT_AUTO: by extension, then content */
    const char *column;     /* csv: header name or 1-based number; NULL: the only
                               column, or one named length/len/tokens/... */
    int64_t max_docs;       /* 0: read everything; else stop after this many */
} zs_trace_read_cfg;

/* Reads path ("-" reads stdin) into a new trace (*out, caller frees). cfg
 * may be NULL (all defaults). A missing file is ZS_EINPUT. */
int zs_trace_read_file(const char *path, const zs_trace_read_cfg *cfg, zs_trace **out, zs_err *e);

/* The same on text already in memory; name is used in messages. */
int zs_trace_read_text(const char *name, const char *text, size_t n, const zs_trace_read_cfg *cfg,
                       zs_trace **out, zs_err *e);

#endif
