/* Zeppelin's per-batch decisions, shared by the planner and the planning-
 * time benchmark: the cost crossovers (for information and hier=0), the
 * hierarchical partition priced by predicted makespan, the remap plan, and
 * which inter-node transfers the routing layer routes
 * (zs_zep_predict.h). Remapping and routing pay on some batches and
 * not on others, and the best partition depends on them, so the decisions
 * weigh a few complete plans (with and without remapping, inter-node rings
 * priced routed or not, routing as decided or off) by their predicted
 * layer time and keep the fastest.
 * Depends on the cost model, the memory model and the Zeppelin modules. */
#ifndef ZS_ZEP_DECIDE_H
#define ZS_ZEP_DECIDE_H

#include "zs_batch.h"
#include "zs_memory.h"
#include "zs_crossover.h"
#include "zs_zep_predict.h"

typedef struct zs_zep_opts {
    int tp, k;                /* k: NICs per routed transfer */
    int routing, remap, hier; /* the Fig. 11 switches (1: on) */
    double chunk;             /* routing chunk, bytes */
} zs_zep_opts;

/* How a weighed plan remaps tokens between attention and the linear
 * modules (not the remap option, whose 2 means "always"). */
typedef enum zs_remap_kind {
    ZS_ZEP_REMAP_NONE = 0,   /* partition on attention plus linear modules */
    ZS_ZEP_REMAP_ACROSS = 1, /* partition on attention; even tokens over all GPUs */
    ZS_ZEP_REMAP_NODES = 2   /* nodes on attention plus linear, GPUs on attention; even
                              * tokens over each node's GPUs */
} zs_remap_kind;

/* One plan the decisions weighed: a partition (balancing attention for
 * remapping, attention plus the linear modules without it; inter-node
 * rings priced routed or through one NIC), the remap plan or none, routing
 * as decided or off; and its predicted layer time. */
typedef struct zs_zep_candidate {
    zs_remap_kind remap;
    int routed_pricing, routing;
    double layer_s;
} zs_zep_candidate;

#define ZS_ZEP_MAX_CANDIDATES 12

typedef struct zs_zep_decision {
    zs_crossover th;
    zs_zep_pred pred;
    int64_t cap; /* tokens per GPU (memory model) */
    zs_zep_part *part;
    zs_remap *remap; /* NULL: off (by option or because it does not pay) */
    zs_route *route; /* k = 1 when routing is off */
    zs_route_decision rd;
    /* The plans weighed and the one taken (the lowest predicted layer time;
     * ties keep the earlier, simpler one). */
    zs_zep_candidate cand[ZS_ZEP_MAX_CANDIDATES];
    int ncand, chosen;
    double lin_tok; /* linear seconds per token per layer at the mean share */
} zs_zep_decision;

/* Decides for batch b; route_stream is the schedule stream the routing
 * layer relays on. *out is filled (free with zs_zep_decision_fini) or,
 * on failure, left empty. */
int zs_zep_decide(const zs_cost *cost, const zs_cluster *cl, zs_mem_cfg mc, const zs_zep_opts *o,
                  const zs_batch *b, int route_stream, zs_zep_decision *out, zs_err *e);
void zs_zep_decision_fini(zs_zep_decision *d);

#endif
