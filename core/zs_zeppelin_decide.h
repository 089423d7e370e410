/* Zeppelin's per-batch decisions, shared by the planner and the planning-
 * time benchmark: the cost crossovers (for information and hier=0), the
 * hierarchical partition priced by predicted makespan, the remap plan and
 * whether it pays (predicted layer time with and without it), and which
 * inter-node transfers the routing layer routes (zs_zeppelin_predict.h).
 * Depends on the cost model, the memory model and the Zeppelin modules. */
#ifndef ZS_ZEPPELIN_DECIDE_H
#define ZS_ZEPPELIN_DECIDE_H

#include "zs_batch.h"
#include "zs_memory.h"
#include "zs_zeppelin_cost.h"
#include "zs_zeppelin_predict.h"

typedef struct zs_zep_opts {
    int tp, k;                /* k: NICs per routed transfer */
    int routing, remap, hier; /* the Fig. 11 switches (1: on) */
    double chunk;             /* routing chunk, bytes */
} zs_zep_opts;

typedef struct zs_zep_decision {
    zs_zep_thresholds th;
    zs_zep_pred pred;
    int64_t cap; /* tokens per GPU (memory model) */
    zs_zep_part *part;
    zs_zep_remap *remap; /* NULL: off (by option or because it does not pay) */
    zs_zep_route *route; /* k = 1 when routing is off */
    /* What the decisions predicted (seconds per layer). */
    int remap_considered; /* remap=1 and some token would move */
    double layer_remap_s, layer_plain_s;
    zs_zep_layer_pred with, without;
    zs_zep_route_decision rd;
} zs_zep_decision;

/* Decides for batch b; route_stream is the schedule stream the routing
 * layer relays on. *out is filled (free with zs_zep_decision_fini) or,
 * on failure, left empty. */
int zs_zep_decide(const zs_cost *cost, const zs_cluster *cl, zs_mem_cfg mc, const zs_zep_opts *o,
                  const zs_batch *b, int route_stream, zs_zep_decision *out, zs_err *e);
void zs_zep_decision_fini(zs_zep_decision *d);

#endif
