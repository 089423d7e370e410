/* Batchers: cut a length stream into global batches, one per training
 * iteration. Iterating N batches is how experiments consume a trace.
 *
 * A batcher is a struct of function pointers (next, free) plus shared
 * counters, so WLB-LLM's packer with its outlier queues can replace the
 * greedy batcher here without the callers changing: they only call
 * zs_batcher_next until it yields NULL.
 *
 * The greedy batcher keeps the stream's order. It fills a batch up to the
 * token budget (e.g. ranks x tokens_per_rank); a document that does not
 * fit the rest of the budget is carried, whole, to the start of the next
 * batch; documents longer than the window (at most the budget) are
 * truncated or split by the source (zs_trace_src.h). Deterministic: the
 * same source and seed give the same batches. Depends on zs_batch and
 * zs_trace_src. */
#ifndef ZS_BATCHER_H
#define ZS_BATCHER_H

#include <stdint.h>

#include "zs_batch.h"
#include "zs_trace_src.h"

/* What a batcher has done so far. */
typedef struct zs_batcher_counts {
    int64_t batches, docs, tokens; /* emitted */
    int64_t budget_unused;         /* sum of (budget - tokens) over emitted batches */
    int64_t docs_carried;          /* documents moved to the next batch (did not fit) */
    int64_t tokens_carried;
    int64_t epochs; /* times a finite source was restarted (cycle) */
} zs_batcher_counts;

typedef struct zs_batcher zs_batcher;

typedef struct zs_batcher_ops {
    const char *name;
    /* The next batch into *out (caller frees with zs_batch_free), or *out =
     * NULL when the stream is exhausted. */
    int (*next)(zs_batcher *b, zs_batch **out, zs_err *e);
    void (*free)(zs_batcher *b);
} zs_batcher_ops;

/* Implementations embed this as their first member. */
struct zs_batcher {
    const zs_batcher_ops *ops;
    int64_t budget;
    zs_batcher_counts counts;
};

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

int zs_batcher_next(zs_batcher *b, zs_batch **out, zs_err *e);
void zs_batcher_free(zs_batcher *b);
const zs_batcher_counts *zs_batcher_counts_get(const zs_batcher *b);

#endif
