/* Streaming reader of Chrome-trace timelines (the files of core/
 * zs_timeline.h, Perfetto's JSON format): hands the elements of the event
 * array to a callback one at a time, so a timeline of any size is read in
 * memory bounded by one event, not by the file (`zepsim timeline compare`
 * on two 518 MB timelines held 12.7 GB when it parsed them whole).
 *
 * The input is read in blocks through zlib, so gzip-compressed files
 * (".json.gz", as zepsim writes on request) and plain ones read alike, and
 * "-" is standard input. The top level is scanned by hand: a bare event
 * array, or an object whose "traceEvents" member is one (its other members
 * are read and checked, then dropped). Each element is cut out of the
 * stream by its brackets and parsed on its own by jansson, so every event
 * is checked as strictly as a whole document was (duplicate keys
 * included), and a syntax error names the file, line and column. Depends
 * on jansson, zlib and zs_err. */
#ifndef ZS_TLREAD_INTERNAL_H
#define ZS_TLREAD_INTERNAL_H

#include <stddef.h>

#include <jansson.h>

#include "zs_err.h"

/* The largest single JSON value (one event, or one other top-level
 * member) read: 16 MiB. A file may be of any length. */
#define ZS_TLREAD_MAX_VALUE ((size_t)16 << 20)

/* Called with element i (from 0) of the event array, in file order; ev is
 * borrowed for the call. Returns ZS_OK to go on, or an error (e filled),
 * which stops the reading and is returned. */
typedef int (*zs_tlread_fn)(void *arg, const char *path, size_t i, json_t *ev, zs_err *e);

/* Reads path to its end, calling fn for each event. ZS_EINPUT for a file
 * that cannot be opened, is not JSON (path:line:column), is not a trace
 * (no event array) or holds a NUL byte; ZS_EIO on a read error; ZS_ENOMEM;
 * or fn's error. */
int zs_tlread_file(const char *path, zs_tlread_fn fn, void *arg, zs_err *e);

#endif
