/* Remapping between attention and the linear modules (Zeppelin's remapping
 * layer; auto uses it too): the attention layout leaves slot r with t_r
 * tokens; the linear modules want T/R each. The plan is a min-cost
 * transportation problem from surplus slots to deficit slots with a
 * two-level cost (a token moved inside a node costs c_intra, across nodes
 * c_inter > c_intra). For that cost matrix the greedy "match inside each
 * node first, then across nodes" is optimal: every node must export (or
 * import) exactly its net surplus, which fixes the inter-node volume at its
 * minimum, and everything else moves inside nodes. Which slots get the
 * T mod R extra tokens: those with the largest attention share (ties: lower
 * slot), so fewer tokens move. Depends on zs_err only. */
#ifndef ZS_REMAP_H
#define ZS_REMAP_H

#include <stdint.h>

#include "zs_err.h"

typedef struct zs_remap_flow {
    int32_t from, to; /* slots: attention holder -> linear holder */
    int64_t tokens;
} zs_remap_flow;

typedef struct zs_remap {
    int nslots;
    int64_t *target; /* per slot: tokens for the linear modules */
    int nflows;
    zs_remap_flow *flows; /* grouped by `from` in slot order, then by `to` */
    int64_t intra_tokens, inter_tokens;
    double cost; /* sum of tokens x pair cost */
} zs_remap;

/* attn[r]: tokens slot r holds for attention. Slots are node-major with
 * slots_per_node per node. *out is new (free with zs_remap_free). */
int zs_remap_plan(const int64_t *attn, int nslots, int slots_per_node, double c_intra,
                  double c_inter, zs_remap **out, zs_err *e);
/* The same inside each node only: every slot's target is its node's
 * tokens over the node's slots, so no token crosses nodes (the plan for a
 * partition that balanced nodes on attention plus linear modules). */
int zs_remap_plan_nodes(const int64_t *attn, int nslots, int slots_per_node, double c_intra,
                        zs_remap **out, zs_err *e);
void zs_remap_free(zs_remap *m);

#endif
