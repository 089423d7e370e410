/* Zeppelin's predictions for its per-batch decisions: what a placement, a
 * routed transfer or the remapping layer costs, in seconds of one layer
 * (its attention forward, the recomputed forward when recomputation is on,
 * and its backward), priced through the cost model:
 *   - a ring member's compute (each step's blocks as the cost model prices
 *     them, small kernels included) and a ring's span (steps paced by the
 *     slower of compute and the KV transfer, NVLink inside a node, one NIC
 *     or k NICs through the routing layer across nodes, shared with the
 *     other inter-node rings of the node), for the partitioner;
 *   - the routing decision (two passes over one attention pass's inter-node
 *     transfers: all direct first, then each routed only where that lowers
 *     the busy time of the links it touches and the span of its ring);
 *   - the layer time with and without remapping (linear modules from the
 *     iteration builder's own ops, attention per GPU as the larger of its
 *     compute and its rings' spans, the remap transfers and the coupling
 *     they add), from which the planner decides whether remapping pays.
 * Approximations (said in the planner notes): contention is a fair share of
 * a link between the transfers that use it in the pass; GPUs start a layer
 * together. Depends on the cost model, the iteration builder's linear-time
 * prediction, the partition, the remap plan and the routing layer. */
#ifndef ZS_ZEP_PREDICT_H
#define ZS_ZEP_PREDICT_H

#include "zs_zep_part.h"
#include "zs_remap.h"
#include "zs_route.h"

/* A ring's per-step figures by (document length, ring size), kept so that
 * the decisions price each ring once (the cost model's attention is the
 * expensive call). Opaque; zs_zep_pred_memo_new / _free. */
typedef struct zs_zep_memo zs_zep_memo;
zs_zep_memo *zs_zep_pred_memo_new(void);
void zs_zep_pred_memo_free(zs_zep_memo *m);

typedef struct zs_zep_pred {
    const zs_cost *cost;
    int tp, heads, kv_heads;
    int slots_per_node, nslots;
    int k;             /* NICs per routed transfer (1: routing off) */
    double chunk;      /* routing chunk, bytes */
    int fwd_passes;    /* attention forwards per layer: 2 with full recomputation */
    zs_zep_memo *memo; /* NULL: price every time */
    double lin_tok;    /* the partition hooks add this per token held (the linear
                        * modules' seconds per token of a layer; 0: attention only) */
} zs_zep_pred;

/* One layer's attention compute (seconds) of member k of a ring of g over
 * a document of len tokens (g = 1: the whole document on one GPU). */
double zs_zep_pred_member(const zs_zep_pred *p, int32_t len, int g);
/* One layer's span of that ring: over `nodes` nodes (1: NVLink only), its
 * inter-node hops sharing each node's NICs with `sharing` rings (itself
 * included); routed over k NICs when p->k > 1. */
double zs_zep_pred_span(const zs_zep_pred *p, int32_t len, int g, int nodes, int sharing);

/* The partitioner's pricing hooks (zs_zep_part_in) over a zs_zep_pred:
 * member and span, plus lin_tok per token of the member's share. */
double zs_zep_pred_member_hook(void *arg, int32_t len, int g);
double zs_zep_pred_span_hook(void *arg, int32_t len, int g, int nodes, int sharing);

/* Routing decision for one attention pass of the partition (and the remap
 * plan, NULL when off): sets the routing layer's direct pairs. Reports the
 * transfer groups (ring hops and remap flows across nodes) routed and
 * direct, and the predicted busy time (seconds per layer) of the busiest
 * NIC link with everything direct and with the decision. */
typedef struct zs_route_decision {
    int hops_routed, hops_direct, flows_routed, flows_direct;
    double nic_direct_s, nic_decided_s;
    double span_direct_s, span_decided_s; /* longest inter-node ring span */
} zs_route_decision;
int zs_zep_pred_routing(const zs_zep_pred *p, const zs_zep_part *part, const zs_remap *rm,
                        const int32_t *len, zs_route *route, zs_route_decision *out, zs_err *e);

/* Predicted seconds of one iteration's layers (layers x one layer), with
 * the remap plan rm (NULL: linear modules on the attention layout) and the
 * routing layer's current decisions. */
/* The linear modules' seconds per token of one layer (forward passes and
 * backward) at `tokens` per slot, from the iteration builder's ops. */
int zs_zep_pred_lin_tok(const zs_zep_pred *p, double tokens, double *out, zs_err *e);

typedef struct zs_zep_layer_pred {
    double layer_s;  /* one layer: forward passes and backward, slowest GPU */
    double attn_s;   /* slowest GPU's attention (compute or ring span), one layer */
    double linear_s; /* slowest GPU's linear ops, one layer */
} zs_zep_layer_pred;
int zs_zep_pred_layer(const zs_zep_pred *p, const zs_zep_part *part, const zs_remap *rm,
                      const int32_t *len, const zs_route *route, zs_zep_layer_pred *out, zs_err *e);

#endif
