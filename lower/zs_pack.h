/* Packing documents into the micro-batches of a global batch, for the 4D
 * (pipeline-parallel) methods: the loader-order packing of Plain-4D, the
 * fixed-length greedy repacking of Fixed-4D (inside one batch or over a
 * window of batches), and WLB-LLM's variable-length packer with multi-level
 * outlier queues (Wang et al., OSDI 2025, section 4).
 *
 * A micro-batch is one packed sequence for one context-parallel group.
 * Packing is priced by a caller-supplied cost per document (the predicted
 * forward latency W_a(s) + W_l(s); planners derive it from the cost model),
 * so this module stays free of the models. A packed batch carries its
 * micro-batch assignment in zs_batch.micro_of (documents ordered by
 * micro-batch) for the planner; the packer can stand in for the greedy
 * batcher through zs_batcher_wlb_new. Every sort breaks ties on the
 * document's position, so packing is deterministic. Depends on zs_batch,
 * zs_batcher (the document stream) and zs_err; it reads documents through
 * a zs_doc_stream, so it needs nothing from traces/. */
#ifndef ZS_PACK_H
#define ZS_PACK_H

#include <stdint.h>

#include "zs_batch.h"
#include "zs_batcher.h"
#include "zs_err.h"

#define ZS_WLB_MAX_QUEUES 8

/* Predicted cost of one document of len tokens (seconds or any unit). */
typedef struct zs_pack_cost {
    double (*fn)(void *arg, int32_t len);
    void *arg;
} zs_pack_cost;

/* A ready-made cost: coef[0] x len(len+1)/2 + coef[1] x len (causal
 * attention pairs plus linear work); arg points to double coef[2]. */
double zs_pack_cost_quadratic(void *arg, int32_t len);

/* Loader order (Plain-4D): documents fill micro-batch k in order until the
 * next one does not fit `window`, which starts micro-batch k+1 (a document
 * longer than the window gets one of its own). Fills micro_of[n] and
 * returns the number of micro-batches used. */
int32_t zs_pack_plain(const int32_t *len, int32_t n, int32_t window, int32_t *micro_of);

/* Fixed-length greedy repacking (Fixed-4D): longest first (ties: lower
 * index) into the micro-batch of least cost that still has room within
 * `window`; a document that fits none opens a new micro-batch. nmicro >= 1
 * micro-batches to start with; *nused gets the number used (>= nmicro). */
int zs_pack_fixed(const int32_t *len, int32_t n, int32_t window, int32_t nmicro, zs_pack_cost cost,
                  int32_t *micro_of, int32_t *nused, zs_err *e);

/* WLB-LLM's variable-length step: longest first into the least-loaded
 * micro-batch (by cost) when its tokens stay within smax, else into the
 * micro-batch with the fewest tokens when it fits there, else the document
 * is left out (micro_of = -1: carried to the next batch). Returns the
 * number left out (>= 0) or a negative status. */
int zs_pack_var(const int32_t *len, int32_t n, int32_t smax, int32_t nmicro, zs_pack_cost cost,
                int32_t *micro_of, zs_err *e);

/* Imbalance degree of a packing, as WLB-LLM defines it: the largest
 * micro-batch cost x nmicro / the total (1 = perfectly balanced).
 * Documents with micro_of < 0 are ignored. */
double zs_pack_imbalance(const int32_t *len, int32_t n, const int32_t *micro_of, int32_t nmicro,
                         zs_pack_cost cost);

/* Sets b->micro_of/nmicro from an assignment and reorders the documents by
 * micro-batch (stable: loader order inside a micro-batch). */
int zs_batch_set_micro(zs_batch *b, const int32_t *micro_of, int32_t nmicro, zs_err *e);

/* Fixed-length greedy repacking over a window of k global batches: their
 * documents are pooled and packed into k x nmicro micro-batches of at most
 * `window` tokens, the micro-batches are sorted by cost (ties: index) and
 * each output batch gets a run of consecutive ones, so a batch holds
 * micro-batches of similar cost. out[0..k) are new packed batches (index
 * of in[i] kept); documents may move between the k batches. */
int zs_pack_fixed_window(zs_batch *const *in, int k, int32_t window, int32_t nmicro,
                         zs_pack_cost cost, zs_batch **out, zs_err *e);

/* ---- WLB-LLM's packer, with state across iterations ---------------------- */

typedef struct zs_wlb_pack_cfg {
    int32_t nmicro; /* micro-batches per global batch (PP x DP in the paper) */
    int32_t window; /* context window: the loader brings nmicro x window tokens a batch */
    int32_t smax;   /* longest micro-batch in tokens; 0: 2 x window */
    int nqueues;    /* outlier queues, 0 .. ZS_WLB_MAX_QUEUES */
    /* Ascending; a document longer than threshold[q] and not longer than
     * threshold[q+1] waits in queue q. All 0: window / 2^(nqueues - q). */
    int32_t threshold[ZS_WLB_MAX_QUEUES];
    zs_pack_cost cost; /* fn NULL: zs_pack_cost_quadratic with coef {1, 0} */
    /* The regular document that crosses the end of the global batch: 1 cut
     * there (its rest opens the next batch: exactly nmicro x window tokens
     * a batch, as a concatenate-and-cut loader gives), 0 kept whole for the
     * next batch (a batch holds at most nmicro x window tokens). */
    int cut_end;
} zs_wlb_pack_cfg;

typedef struct zs_wlb_pack_stats {
    int64_t batches, docs, tokens;        /* emitted */
    int64_t delayed_docs, delayed_tokens; /* emitted after the batch they arrived in */
    double delay_token_iters;             /* sum over emitted tokens of iterations waited */
    double avg_delay_delayed;             /* delay_token_iters / delayed_tokens */
    double avg_delay_all;                 /* delay_token_iters / tokens */
    double imbalance_sum;                 /* sum over batches of zs_pack_imbalance */
    double pack_seconds, last_pack_seconds, max_pack_seconds; /* host time packing */
    int64_t waiting_docs, waiting_tokens;                     /* in queues or carried, now */
    int64_t flushed_docs; /* queued outliers released at the end of the source */
} zs_wlb_pack_stats;

typedef struct zs_wlb_packer zs_wlb_packer;

/* Checks cfg (thresholds ascending, below smax; nmicro, window >= 1). */
int zs_wlb_packer_new(const zs_wlb_pack_cfg *cfg, zs_wlb_packer **out, zs_err *e);
void zs_wlb_packer_free(zs_wlb_packer *p);

/* Packs n batches from src and drops them, then starts the statistics
 * afresh (queues and carried documents stay): the packer starts measuring
 * at steady state, its queues holding what a long run leaves in them. The
 * batches it then returns are numbered from 0. */
int zs_wlb_packer_warmup(zs_wlb_packer *p, const zs_doc_stream *src, int n, zs_err *e);

/* The next packed global batch (caller frees), drawing from src
 * (borrowed) until the pool holds nmicro x window tokens (see cut_end), or *out = NULL
 * when src is exhausted and nothing waits. A document longer than smax is
 * a ZS_EINPUT error naming it. */
int zs_wlb_packer_next(zs_wlb_packer *p, const zs_doc_stream *src, zs_batch **out, zs_err *e);
const zs_wlb_pack_stats *zs_wlb_packer_stats(const zs_wlb_packer *p);
const zs_wlb_pack_cfg *zs_wlb_packer_cfg(const zs_wlb_packer *p);

/* The packer as a batcher (zs_batcher.h) over src (borrowed); its budget
 * is nmicro x window. zs_batcher_wlb_packer gives the packer for its stats
 * (NULL for another batcher). */
int zs_batcher_wlb_new(zs_doc_stream src, const zs_wlb_pack_cfg *cfg, zs_batcher **out, zs_err *e);
/* The same, and the batcher owns `owned` (typically what cfg->cost.arg
 * points into): it is released with free() when the batcher is freed, or
 * at once when this call fails. */
int zs_batcher_wlb_new_owning(zs_doc_stream src, const zs_wlb_pack_cfg *cfg, void *owned,
                              zs_batcher **out, zs_err *e);
/* The packer as a batcher after zs_wlb_packer_warmup of `warmup` batches
 * (the batcher's counts start after it too). */
int zs_batcher_wlb_new_warm(zs_doc_stream src, const zs_wlb_pack_cfg *cfg, int warmup, void *owned,
                            zs_batcher **out, zs_err *e);
zs_wlb_packer *zs_batcher_wlb_packer(zs_batcher *b);

#endif
