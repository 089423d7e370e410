/* A length source: the one stream of documents every consumer reads,
 * whether the lengths come from a file or a generator, with the context
 * window applied on the way out.
 *
 * A spec names a generator (zs_lengen.h: a preset or family) or a file
 * (zs_trace_read.h). Documents longer than the window are kept whole,
 * truncated to the window (the rest is dropped and counted) or split into
 * window-sized pieces followed by the remainder (pieces keep the id of
 * their document). Files are finite; generators never run dry. Depends
 * on zs_trace, zs_trace_read and zs_lengen. */
#ifndef ZS_TRACE_SRC_H
#define ZS_TRACE_SRC_H

#include <stdint.h>

#include "zs_batcher.h"
#include "zs_lengen.h"
#include "zs_trace.h"
#include "zs_trace_read.h"

typedef enum zs_long_policy {
    ZS_LONG_KEEP = 0, /* no window: documents stay whole */
    ZS_LONG_TRUNCATE, /* cut at the window, the rest is dropped */
    ZS_LONG_SPLIT     /* window-sized pieces, then the remainder */
} zs_long_policy;

/* Parses "keep", "truncate" or "split" (ZS_EUSAGE otherwise). */
int zs_long_policy_parse(const char *s, zs_long_policy *out, zs_err *e);
const char *zs_long_policy_name(zs_long_policy p);

typedef struct zs_trace_src_cfg {
    zs_trace_read_cfg read; /* files: format, CSV column, max_docs */
    uint64_t seed;          /* generators */
    int32_t window;         /* 0: no window */
    zs_long_policy policy;  /* used when window > 0; KEEP means TRUNCATE there */
} zs_trace_src_cfg;

/* What the source has done so far (since open or reset). */
typedef struct zs_trace_src_counts {
    int64_t docs_in, tokens_in;   /* documents and tokens drawn */
    int64_t docs_out, tokens_out; /* documents (pieces) and tokens handed out */
    int64_t docs_truncated, tokens_dropped;
    int64_t docs_split, pieces; /* split documents and the pieces they became */
} zs_trace_src_counts;

typedef struct zs_trace_src zs_trace_src;

/* Opens spec: a generator when zs_lengen_is_spec(spec), else a file. A
 * name that is neither is a ZS_EINPUT error listing the presets. */
int zs_trace_src_open(const char *spec, const zs_trace_src_cfg *cfg, zs_trace_src **out, zs_err *e);
/* A source over an existing trace; takes ownership of t. */
zs_trace_src *zs_trace_src_from_trace(zs_trace *t);
void zs_trace_src_free(zs_trace_src *s);

/* Sets the window (0: none) and policy; used by batchers that cap
 * documents at their budget. Resets nothing. */
void zs_trace_src_set_window(zs_trace_src *s, int32_t window, zs_long_policy policy);
int32_t zs_trace_src_window(const zs_trace_src *s);

/* Next document: returns 1 and fills len (and id, the document's index in
 * the source, when not NULL), or 0 when a finite source is exhausted. */
int zs_trace_src_next(zs_trace_src *s, int32_t *len, int64_t *id);
/* The source as a document stream (base/zs_batcher.h) for packers that
 * live above traces/; s is borrowed and must outlive the stream. */
zs_doc_stream zs_trace_src_stream(zs_trace_src *s);
/* Starts again from the first document (same seed: same lengths). */
void zs_trace_src_reset(zs_trace_src *s);
/* Number of documents in a file source; -1 for a generator. */
int64_t zs_trace_src_size(const zs_trace_src *s);
const zs_trace_src_counts *zs_trace_src_counts_get(const zs_trace_src *s);
/* "path (lines)" or the generator's description. */
const char *zs_trace_src_describe(const zs_trace_src *s);
/* "none (documents kept whole)" or "131072 tokens, split: 3 documents into
 * 8 pieces" from the counts so far. */
void zs_trace_src_window_note(const zs_trace_src *s, char *buf, size_t n);

/* Draws documents into a new trace: n documents from the source (before
 * splitting; all pieces of the last one are kept), or, with n == 0, all
 * of a finite source. A generator with n == 0 is ZS_EUSAGE. */
int zs_trace_src_collect(zs_trace_src *s, int64_t n, zs_trace **out, zs_err *e);

#endif
