/* Batchers: the interface that cuts a stream of documents into global
 * batches, one per training iteration, and the document stream they read.
 *
 * A batcher is a struct of function pointers (next, free) plus shared
 * counters, so the greedy batcher over a trace (traces/zs_batcher_greedy.h)
 * and a method's own packer (WLB-LLM's outlier queues, lower/zs_pack.h)
 * are interchangeable: callers only call zs_batcher_next until it yields
 * NULL. The document stream is how a packer in lower/ reads documents
 * without depending on traces/. Depends on zs_batch and zs_err only. */
#ifndef ZS_BATCHER_H
#define ZS_BATCHER_H

#include <stdint.h>

#include "zs_batch.h"
#include "zs_err.h"

/* A stream of documents: next() yields one (1, with its length and its id in
 * the trace) or reports the end (0). Borrowed by whoever reads it. */
typedef struct zs_doc_stream {
    int (*next)(void *arg, int32_t *len, int64_t *id);
    void *arg;
} zs_doc_stream;

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

int zs_batcher_next(zs_batcher *b, zs_batch **out, zs_err *e);
/* Frees b (NULL is a no-op). */
void zs_batcher_free(zs_batcher *b);
const zs_batcher_counts *zs_batcher_counts_get(const zs_batcher *b);

#endif
