/* The concatenate-and-cut loader of the 4D baselines (WLB-LLM's Plain-4D
 * and Fixed-4D): documents are concatenated in stream order and the stream
 * is cut into context windows of exactly `window` tokens; a document that
 * crosses a window boundary is split there, and each piece is a document of
 * its own (attention is masked per document, so the piece after the cut
 * attends only to itself, as in a concatenate-and-cut loader with document
 * masking). A global batch is nmicro consecutive windows, every one full, so
 * every method fed by this loader trains the same tokens per iteration.
 *
 * Plain-4D keeps the loader's windows as its micro-batches. Fixed-4D
 * (repack = k >= 1) pools k global batches and repacks their pieces into
 * k x nmicro windows of exactly `window` tokens: longest first into the
 * window of least predicted cost that has room; a piece that fits no window
 * whole fills the window with the most room and the rest goes on (a
 * fixed-length loader never leaves room, so it cuts again); the windows
 * are then sorted by cost and each batch gets a run of similar ones, so k
 * batches are balanced together (WLB-LLM's Table 2, "fixed-length greedy
 * over k global batches").
 *
 * Batches carry their packing in zs_batch.micro_of. Sources of pieces of
 * one document are its trace id. Depends on zs_batch, zs_batcher and the
 * packing cost of zs_pack.h. */
#ifndef ZS_CUTLOAD_H
#define ZS_CUTLOAD_H

#include <stdint.h>

#include "zs_batcher.h"
#include "zs_pack.h"

typedef struct zs_cutload_cfg {
    int32_t nmicro; /* windows per global batch */
    int32_t window; /* tokens per window */
    int repack;     /* 0: loader order (Plain-4D); k >= 1: fixed-length greedy over k batches */
    zs_pack_cost cost;
} zs_cutload_cfg;

/* The loader over src (borrowed). Cuts documents longer than a window like
 * any other. `owned` (may be NULL; typically what cfg->cost.arg points
 * into) is released with free() when the batcher is freed, or at once when
 * this call fails. */
int zs_batcher_cut_new(zs_doc_stream src, const zs_cutload_cfg *cfg, void *owned, zs_batcher **out,
                       zs_err *e);

/* Fixed-length greedy repacking of pieces len[0..n) into nwin windows of
 * `window` tokens with cutting (see above): writes the pieces it makes
 * (each a part of an input piece, in order) to out_len/out_src/out_win
 * (room for n + nwin entries) and returns how many, or a negative status.
 * The inputs' total must not exceed nwin x window. */
int32_t zs_pack_fixed_cut(const int32_t *len, const int64_t *src, int32_t n, int32_t nwin,
                          int32_t window, zs_pack_cost cost, int32_t *out_len, int64_t *out_src,
                          int32_t *out_win, zs_err *e);

#endif
