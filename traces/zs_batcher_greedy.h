/* The greedy batcher: cuts a trace into global batches, one per training
 * iteration, for every method that does not pack its own (the batcher
 * interface is base/zs_batcher.h). It keeps the stream's order. It fills
 * a batch up to the token budget (e.g. ranks x tokens_per_rank); a document that does not
 * fit the rest of the budget is carried, whole, to the start of the next
 * batch; documents longer than the window (at most the budget) are
 * truncated or split by the source (zs_trace_src.h). Deterministic: the
 * same source and seed give the same batches. Depends on zs_batcher and
 * zs_trace_src. */
#ifndef ZS_BATCHER_GREEDY_H
#define ZS_BATCHER_GREEDY_H

#include <stdint.h>

#include "zs_batcher.h"
#include "zs_trace_src.h"

typedef struct zs_batcher_cfg {
    int64_t budget;        /* tokens per global batch (>= 1) */
    int32_t window;        /* longest document kept whole; 0 or > budget: the budget */
    zs_long_policy policy; /* for documents above the window: TRUNCATE or SPLIT */
    int cycle;             /* 1: restart a finite source when it runs dry */
} zs_batcher_cfg;

/* The greedy batcher over src (borrowed: it must outlive the batcher).
 * It sets src's window to min(window, budget) with the policy (SPLIT when
 * KEEP is given). */
int zs_batcher_greedy_new(zs_trace_src *src, const zs_batcher_cfg *cfg, zs_batcher **out,
                          zs_err *e);

#endif
