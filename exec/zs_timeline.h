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

/* Timelines sized for people (issue 35 item 5): unless told which ranks
 * to write, a timeline whose every rank would take more than the limit
 * (64 MB of JSON, ZEPSIM_TIMELINE_MAX_MB; 16 nodes of llama-7b were 518 MB)
 * writes at most ZS_TL_AUTO_RANKS ranks, as many as fit: the rank with the
 * most compute in the plan (the likely straggler), the one with the least
 * (the one that waits most), rank 0, the last rank, then ranks evenly
 * spaced (0, n/8, 2n/8, ...). The choice depends on the schedule only, so
 * the measured and the simulated timelines of one plan keep the same ranks
 * and `zepsim timeline compare` still matches them. The estimate counts
 * each op's event (and a message's flow) at the layer limit. */
#define ZS_TL_LIMIT_DEFAULT 64e6
#define ZS_TL_AUTO_RANKS    8
/* Longest rank list ("0,5,17-20") a configuration holds, with its NUL. */
#define ZS_TL_RANKS_LEN 256
/* Largest rank a list may name. */
#define ZS_TL_MAX_RANK (1 << 24)
/* Room for the note of an automatic subset, with its NUL. */
#define ZS_TL_NOTE_LEN 512

/* The size limit of automatic timelines (bytes of JSON); the CLI sets it
 * from ZEPSIM_TIMELINE_MAX_MB. */
double zs_timeline_limit(void);
void zs_timeline_limit_set(double bytes);

typedef struct zs_tl_cfg {
    const char *ranks;  /* ranks written: NULL or "" automatic (above), "all", or a list of
                         * ranks and ranges "0,5,17-20" (zs_tl_ranks_check) */
    int layer0, layer1; /* layers written, inclusive; layer0 < 0: all (ops before
                         * any layer marker are layer -1, written only then) */
    int gpus_per_node;  /* ranks per Chrome "process" (a node), >= 1 */
    int measured;       /* measured times (hw): add each op's index and, for
                         * compute ops, its predicted duration to "args" */
} zs_tl_cfg;

/* Automatic ranks, all layers, 8 GPUs per node, not measured. */
void zs_tl_cfg_init(zs_tl_cfg *c);

/* Checks a rank selection: "", "all", or comma-separated ranks and ranges
 * A-B (A <= B) in [0, ZS_TL_MAX_RANK], shorter than ZS_TL_RANKS_LEN.
 * Errors are `code` naming `where`. */
int zs_tl_ranks_check(const char *spec, int code, const char *where, zs_err *e);

/* The ranks a timeline of s writes under c: on[r] = 1 for each (s->nranks
 * entries; a listed rank past the schedule's last is ignored). When an
 * automatic choice kept only some ranks, note (n bytes) says which, why
 * and how to get all; else note is "". Returns ZS_OK, or ZS_EUSAGE for a
 * bad list. */
int zs_tl_select(const zs_schedule *s, const zs_tl_cfg *c, uint8_t *on, char *note, size_t n,
                 zs_err *e);

/* The ranks of on[0..n) as a list ("0-3,8,17-20"; "" when none) in buf. */
void zs_tl_ranks_format(const uint8_t *on, int n, char *buf, size_t len);

typedef struct zs_timeline zs_timeline;

/* Creates the file (under a temporary name) and writes its header: which
 * ranks and layers it holds ("otherData", the format's metadata: ranks,
 * nranks, rank_choice all / given / automatic, layers, and the note of an
 * automatic subset) and the process and thread names of the ranks
 * written. s must outlive the writer. */
int zs_timeline_open(const char *path, const zs_schedule *s, const zs_tl_cfg *cfg,
                     zs_timeline **out, zs_err *e);

/* 1 when events of this rank are written (callers may skip work). */
int zs_timeline_rank_on(const zs_timeline *t, int rank);
/* Per rank of the schedule: 1 when written (valid while t is open). */
const uint8_t *zs_timeline_ranks(const zs_timeline *t);
/* The note of an automatic subset (zs_tl_select; "" when none). */
const char *zs_timeline_subset(const zs_timeline *t);

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

/* Records a written timeline in a result: its size, the note of an
 * automatic rank subset (r->timeline_subset; subset may be NULL) and,
 * above ZS_TL_WARN_BYTES, a note saying how to make it smaller. */
void zs_timeline_note(zs_result *r, const char *path, double bytes, const char *subset);

#endif
