/* ByteScale's data-aware sharding and balance scheduler (Ge et al.,
 * "ByteScale: Efficient Scaling of LLM Training with a 2048K Context
 * Length on More Than 12,000 GPUs", arXiv 2502.21231), reconstructed from
 * the paper's description (docs/methods.md says what is reconstructed and
 * what assumed): which documents each GPU runs in which micro-batch, alone
 * or on which CP group.
 *
 * Data-aware sharding: a document of len tokens runs on the fewest
 * consecutive slots n (any n, not a power of two) whose padded per-slot
 * share (zs_dyncp_share: zigzag chunks padded to a multiple of 2n) fits
 * cap tokens; a document that fits one slot runs there alone (pure DP, no
 * CP communication). More than max_cp slots is an error. A document
 * whose work per slot would still exceed the batch's mean work per slot
 * takes more slots, up to max_cp, until it does not (assumed: no
 * scheduler can balance below one document's share, and the paper's
 * batches hold enough documents that this rarely binds; in small batches
 * it is what keeps one long document from idling every other GPU).
 *
 * Balance scheduler: documents longest first (ties: batch order). Each
 * slot keeps its estimated work (lin_w * tokens + attn_w * len^2 shares,
 * the ranks of a group splitting a document's work evenly) and its own
 * count of micro-batches. A document of n > 1 slots goes to the block of
 * n consecutive slots with the lowest largest work (ties: fewest
 * micro-batches, then lowest first slot) and runs in micro-batch
 * max(count) of the block, which every slot of the block then counts. A
 * document of one slot goes to the slot with the least work (ties: lowest
 * slot), packed into that slot's open local micro-batch while it holds at
 * most cap tokens, else into a new one. Slots thus run different numbers
 * of micro-batches (the paper's point: a GPU holding a long document runs
 * fewer of them), meeting only at the gradient reduction.
 *
 * The plan reuses zs_dyncp_plan (planners/zs_dyncp_sched_internal.h):
 * micro-batch m is wave m; a wave's groups need not cover every slot.
 * Pure algorithm on lengths; depends on zs_err only. */
#ifndef ZS_BYTESCALE_SCHED_INTERNAL_H
#define ZS_BYTESCALE_SCHED_INTERNAL_H

#include "zs_dyncp_sched_internal.h"

/* The work estimate of a document of len tokens: lin_w * len + attn_w *
 * len^2 (the planner derives both from the model's FLOPs). */
typedef struct zs_bytescale_work {
    double lin_w, attn_w;
} zs_bytescale_work;

/* The slots a document needs: the smallest n >= 1 with
 * zs_dyncp_share(len, n) <= cap, or 0 when that n exceeds max_n. */
int zs_bytescale_needed(int32_t len, long cap, int max_n);

/* The schedule of ndocs documents over nslots slots, CP groups of at most
 * max_cp slots. ZS_EINPUT naming the document when one needs more. */
int zs_bytescale_schedule(const int32_t *len, int32_t ndocs, int nslots, long cap, int max_cp,
                          zs_bytescale_work w, zs_dyncp_plan *out, zs_err *e);
/* The same with the slots each document needs given (need[d] in [1,
 * max_cp], or 0: an error naming it), for a planner whose capacity is not
 * one cap for all (ByteScale's offloading); NULL: zs_bytescale_needed. A
 * document of one slot longer than cap runs alone in its micro-batch. */
int zs_bytescale_schedule_need(const int32_t *len, int32_t ndocs, int nslots, long cap, int max_cp,
                               zs_bytescale_work w, const int *need, zs_dyncp_plan *out, zs_err *e);

#endif
