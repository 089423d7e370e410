/* The plan validator: proves a schedule does what every method must do,
 * whatever the method. Checked:
 *   - every token of every document is placed exactly once for attention
 *     and once for the linear modules (the plan's pieces);
 *   - attention blocks cover exactly the causal triangle of each document,
 *     forward and backward, in every pipeline stage: each (q, k <= q) pair
 *     is computed exactly heads x layers-of-the-stage times (counting query
 *     heads, so TP and head-parallel methods are checked the same way), and
 *     no block lies wholly above the diagonal;
 *   - every send has a matching receive with the same byte count (the k-th
 *     send from a to b with tag t against the k-th such receive) and the
 *     same carry list;
 *   - a transfer's carry list (the documents a merged transfer moves) names
 *     each document once and its parts add up to the transfer's bytes, and
 *     attention that waits for transfers with carry lists (directly or
 *     through a zero-time join) on keys its rank does not hold (the plan's
 *     attention pieces) computes only documents they carry: each
 *     document's data arrives before its use;
 *   - every member of a group runs the same sequence of collectives on it,
 *     and nobody else uses it;
 *   - the schedule can run to completion (no cycle through messages);
 *   - per-GPU tokens fit the memory model's capacity (when given).
 * A violation is a ZS_EINVALID error naming the rank, op and document.
 * Depends on the schedule IR and the analytic backend (dry run). */
#ifndef ZS_VALIDATE_H
#define ZS_VALIDATE_H

#include "zs_schedule.h"

typedef struct zs_validate_opts {
    long max_tokens_per_rank; /* 0: no memory check */
    int skip_dry_run;         /* 1: skip the deadlock check (for speed) */
} zs_validate_opts;

int zs_validate(const zs_schedule *s, const zs_validate_opts *o, zs_err *e);

/* Pipeline stage of a rank and the number of layers that stage holds. */
int zs_rank_stage(const zs_schedule *s, int rank);
int zs_stage_layers(const zs_schedule *s, int stage);

#endif
