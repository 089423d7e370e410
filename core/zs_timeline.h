/* The timeline writer: one Chrome trace event file (JSON, opened by
 * Perfetto and chrome://tracing) of a schedule run, the same format from
 * every backend (SimGrid, analytic, hardware), so `zepsim timeline compare`
 * reads one format.
 *
 * The file holds one "process" per node, one "thread" per GPU stream, a
 * complete event ("ph": "X") per op with its label, kind, rank, layer,
 * iteration and sizes in "args" (a transfer with a carry list adds the
 * documents it carries, "docs", and their bytes, "doc_bytes"), and a flow
 * ("ph": "s" / "f", one id per message) from each send to its receive when
 * both ends are written. Labels are escaped with zs_json_escape
 * (base/zs_json_esc.h). A path ending in ".gz" is written gzip-compressed
 * (Perfetto opens .json.gz). The file is written under a temporary name
 * and renamed on success (base/zs_afile.h): a failed run leaves nothing
 * behind.
 *
 * Backends call zs_timeline_op as ops complete, in any order; errors (a
 * full disk, out of memory) are sticky and reported by zs_timeline_close.
 * Depends on the schedule IR, zs_result, zs_afile and zlib. */
#ifndef ZS_TIMELINE_H
#define ZS_TIMELINE_H

#include <stdint.h>

#include "zs_err.h"
#include "zs_result.h"
#include "zs_schedule.h"

/* Above this many (uncompressed) bytes chrome://tracing gives up (it stops
 * at 256 MB) and Perfetto's UI slows down: callers warn and suggest
 * --timeline-ranks / --timeline-layers. */
#define ZS_TL_WARN_BYTES 200e6

typedef struct zs_tl_cfg {
    int rank0, rank1;   /* ranks written, inclusive; rank0 < 0: all */
    int layer0, layer1; /* layers written, inclusive; layer0 < 0: all (ops before
                         * any layer marker are layer -1, written only then) */
    int gpus_per_node;  /* ranks per Chrome "process" (a node), >= 1 */
    int measured;       /* measured times (hw): add each op's index and, for
                         * compute ops, its predicted duration to "args" */
} zs_tl_cfg;

/* All ranks, all layers, 8 GPUs per node, not measured. */
void zs_tl_cfg_init(zs_tl_cfg *c);

typedef struct zs_timeline zs_timeline;

/* Creates the file (under a temporary name) and writes the process and
 * thread names of the ranks written. s must outlive the writer. */
int zs_timeline_open(const char *path, const zs_schedule *s, const zs_tl_cfg *cfg,
                     zs_timeline **out, zs_err *e);

/* 1 when events of this rank are written (callers may skip work). */
int zs_timeline_rank_on(const zs_timeline *t, int rank);

/* Message numbers for zs_timeline_op: the k-th message of a (sender,
 * receiver, tag) channel is k (from 0) on both of its ends. */
#define ZS_TL_SEQ_NONE (-1) /* no flow for this op */
#define ZS_TL_SEQ_ORDER                                                                            \
    (-2) /* the writer numbers the channel's messages in call                                      \
          * order: for callers that write each rank's ops in                                       \
          * program order */

/* One op of `rank` (its index in the rank's stored ops, the iteration of its
 * segment) ran from t0 to t1 seconds. For a send or receive, seq numbers
 * the message on its channel (above) so the two ends get one flow. */
void zs_timeline_op(zs_timeline *t, int rank, int64_t op, int32_t iter, double t0, double t1,
                    int64_t seq);

/* Finishes the file and renames it onto the path; *bytes (may be NULL) is
 * the size of the JSON text (before compression). Frees t, also on error
 * (then nothing is left under the path or the temporary name). */
int zs_timeline_close(zs_timeline *t, double *bytes, zs_err *e);

/* Discards an unfinished timeline (no file is left); NULL is a no-op. */
void zs_timeline_free(zs_timeline *t);

/* Records a written timeline in a result: its size and, above
 * ZS_TL_WARN_BYTES, a note saying how to make it smaller. */
void zs_timeline_note(zs_result *r, const char *path, double bytes);

#endif
