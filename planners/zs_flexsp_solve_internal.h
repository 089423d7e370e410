/* FlexSP's solver (ASPLOS '25, arXiv 2412.01523; PKU-DAIR/Hetu-Galvatron,
 * branch flexsp, galvatron/flexsp_solver), reconstructed without a MILP
 * solver: which micro-batches a global batch is cut into, and per
 * micro-batch which sequence-parallel (Ulysses) groups of which sizes
 * partition the GPUs and which sequences each group runs.
 *
 * The three parts, as in the released solver:
 *   - Sequence Blaster: sequences longest first (ties: batch order) are cut
 *     into m contiguous runs minimising the largest run's tokens (a linear
 *     partition, solved exactly by dynamic programming); m starts at
 *     ceil(tokens / cluster capacity) and grows until every run holds fewer
 *     tokens than the cluster does and every run's planner problem is
 *     feasible.
 *   - Bucketing: a run's lengths are grouped into B buckets minimising the
 *     padding to each bucket's longest length (exact DP over the sorted
 *     lengths); B starts at `buckets` and grows until the padded tokens are
 *     at most half way between the run's tokens and the cluster's capacity.
 *     The planner prices and fits a sequence at its bucket's bound.
 *   - Parallelism planner: minimise the largest group time, where a group
 *     of n GPUs costs the sum over its sequences of cost(len, n), subject to
 *     each sequence in one group, a group's tokens / n within one GPU's
 *     capacity, group sizes powers of two in [min_sp, max_sp] summing to the
 *     GPUs, and every group used. The released solver hands this MILP to
 *     SCIP; here every multiset of group sizes is enumerated exactly (up
 *     to 64 x min_sp GPUs; beyond, a local search splits and merges groups
 *     from the best single-size partition) and the assignment for each is
 *     searched exhaustively (branch and bound) when it is small and by the
 *     greedy "longest sequence to the group that finishes it first"
 *     otherwise (an approximation of SCIP's optimum, which itself stops at
 *     a time limit). Groups are laid out largest first on consecutive GPUs, so
 *     each is aligned to its size (groups of up to a node's GPUs stay in a
 *     node).
 *
 * Pure algorithm on lengths and a cost callback (the planner supplies the
 * cost model); depends on zs_err only. */
#ifndef ZS_FLEXSP_SOLVE_INTERNAL_H
#define ZS_FLEXSP_SOLVE_INTERNAL_H

#include <stdint.h>

#include "zs_err.h"

/* Multisets of group sizes are all enumerated up to this many GPUs / min_sp
 * (1,827 multisets at 64; 27,337 at 128 and 1.1e9 at 1024): beyond, a
 * local search keeps a planning step within milliseconds. */
#define ZS_FLEXSP_ENUM_UNITS 64

/* The predicted seconds of one sequence of len tokens on a group of n
 * GPUs (additive over a group's sequences, as FlexSP's cost model is). */
typedef double (*zs_flexsp_cost_fn)(void *arg, int32_t len, int n);

typedef struct zs_flexsp_cfg {
    int nslots;    /* GPUs (TP groups) to partition */
    int min_sp;    /* smallest group, a power of two */
    int max_sp;    /* largest group, a power of two <= nslots */
    long cap;      /* tokens one GPU holds */
    int buckets;   /* first bucket count tried; 0: no bucketing */
    int exact_max; /* search assignments exhaustively up to this many sequences */
    zs_flexsp_cost_fn cost;
    void *cost_arg;
} zs_flexsp_cfg;

/* A plan: micro-batches of groups, each group a block of consecutive
 * slots running some documents. */
typedef struct zs_flexsp_plan {
    int nslots;
    int nmicro, ngroups;
    int *micro_start; /* groups of micro-batch m: [micro_start[m], micro_start[m + 1]) */
    int *first;       /* per group: its first slot */
    int *size;        /* per group: its slots */
    int *doc_start;   /* per group: its documents docs[doc_start[g] .. doc_start[g + 1]) */
    int32_t *docs;    /* document indices, each exactly once */
    double *pred;     /* per micro-batch: the predicted largest group time */
    int *nbuckets;    /* per micro-batch: buckets used (0: none) */
} zs_flexsp_plan;

/* The smallest power of two n >= min_sp with len <= n x cap. */
int zs_flexsp_min_sp(int32_t len, long cap, int min_sp);

/* Bucket bounds: for len[0 .. n) sorted ascending, bound[i] is the bound of
 * the bucket holding i with B buckets minimising sum(bound - len). Returns
 * the padded tokens sum(bound), or -1 when out of memory. */
int64_t zs_flexsp_bucket(const int32_t *len, int n, int B, int32_t *bound);

/* The Sequence Blaster's cut: len[0 .. n) (longest first) into m
 * contiguous runs minimising the largest run's tokens; run r is
 * [cut[r], cut[r + 1]) (cut has m + 1 entries). 0, or -1 when out of
 * memory. Ties: the earliest cut. */
int zs_flexsp_chunk(const int32_t *len, int n, int m, int *cut);

/* The planner for one micro-batch of documents docs[0 .. n) (indices into
 * len): fills groups[] (count *ngroups; size, first) and grp[i], the group
 * of docs[i], and *pred. Returns 1 when feasible, 0 when not, -1 when out
 * of memory. plen[i]: the planning length of docs[i] (its bucket bound). */
int zs_flexsp_plan_micro(const zs_flexsp_cfg *cfg, const int32_t *plen, int n, int *ngroups,
                         int *size, int *first, int *grp, double *pred);

/* The whole global batch. ZS_EINPUT naming the document when one needs a
 * group larger than max_sp. */
int zs_flexsp_solve(const int32_t *len, int32_t ndocs, const zs_flexsp_cfg *cfg,
                    zs_flexsp_plan *out, zs_err *e);

void zs_flexsp_plan_free(zs_flexsp_plan *p);

#endif
