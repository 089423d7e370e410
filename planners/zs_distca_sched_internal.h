/* DistCA's core-attention scheduler (Zhuang et al., arXiv 2510.18121,
 * section 4.2), reconstructed from the paper and its description of the
 * code: core-attention tasks (CA-tasks) are moved from attention servers
 * with more than the mean load to servers with less, so every server ends
 * within a tolerance of the mean.
 *
 * An item is the query tokens of one document that one GPU holds for its
 * linear modules, in head-tail form: a front range [h0, h1) and the mirrored
 * back range [t0, t1) (a whole document is [0, L/2) + [L/2, L)). Its task
 * is those queries against the document's causal prefix, so its work
 * depends only on where its queries sit. The greedy (paper, "Scheduling"):
 * target F = total / servers; deficit servers in order of need, largest
 * first; for each, while its need exceeds tol x F, every item on a surplus
 * server is a candidate worth dF = min(its load, the donor's surplus, the
 * need); the one with the most load moved per second of communication wins
 * (ties: first in list order); it moves whole, or a sub-item worth dF made
 * of the innermost mirrored token pairs of its head and tail (each pair of
 * mirrored tokens costs the same, L + 1 query-key pairs) moves and the rest
 * stays. Sub-items are whole blocks of `block` query tokens per side (the
 * attention kernel's tile; 1: token granularity), the most whose load stays
 * within dF (loads need not be proportional to pairs: small shards run
 * less efficiently), so a server never receives more than it lacks.
 *
 * Loads and communication are priced by the caller (the cost model), so
 * this module has no model of its own. Depends on zs_err only. */
#ifndef ZS_DISTCA_SCHED_INTERNAL_H
#define ZS_DISTCA_SCHED_INTERNAL_H

#include <stdint.h>

#include "zs_err.h"

typedef struct zs_ca_item {
    int32_t doc, len; /* document (index in the batch) and its length */
    int32_t home;     /* the server holding its tokens for the linear modules */
    int32_t server;   /* where its attention runs */
    int32_t h0, h1;   /* front query range (may be empty) */
    int32_t t0, t1;   /* back query range (may be empty) */
} zs_ca_item;

typedef struct zs_ca_sched_in {
    int nservers;
    double tol;    /* stop when a deficit server's need is at most tol x mean */
    int32_t block; /* sub-items hold multiples of block query tokens per side (>= 1) */
    /* Seconds of attention work of an item's task, and seconds of moving
     * the task (its queries and the keys/values it lacks) to server dst. */
    double (*load)(void *arg, const zs_ca_item *it);
    double (*comm)(void *arg, const zs_ca_item *it, int dst);
    void *arg;
} zs_ca_sched_in;

typedef struct zs_ca_sched_out {
    int32_t moved, split;         /* whole items moved, sub-items split off */
    double imb_before, imb_after; /* max / mean server load */
} zs_ca_sched_out;

/* Schedules the items in (*items)[0 .. *n) (server = home on entry, or any
 * placement): moves and splits them in place, appending sub-items (the
 * array grows; *cap is its capacity). Deterministic. */
int zs_ca_schedule(const zs_ca_sched_in *in, zs_ca_item **items, int32_t *n, int32_t *cap,
                   zs_ca_sched_out *out, zs_err *e);

/* Query tokens of an item. */
static inline int32_t zs_ca_item_tokens(const zs_ca_item *it)
{
    return (it->h1 - it->h0) + (it->t1 - it->t0);
}

/* The causal end of an item's keys: its task needs keys [0, end). */
static inline int32_t zs_ca_item_kv_end(const zs_ca_item *it)
{
    int32_t a = it->h1 > it->h0 ? it->h1 : 0, b = it->t1 > it->t0 ? it->t1 : 0;
    return a > b ? a : b;
}

#endif
