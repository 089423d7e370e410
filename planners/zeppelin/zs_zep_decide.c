/* Zeppelin's per-batch decisions: see zs_zep_decide.h. */
#include "zs_zep_decide.h"

#include <stdlib.h>
#include <string.h>

void zs_zep_decision_fini(zs_zep_decision *d)
{
    zs_zep_part_free(d->part);
    zs_remap_free(d->remap);
    zs_route_free(d->route);
    zs_zep_pred_memo_free(d->pred.memo);
    memset(d, 0, sizeof *d);
}

typedef struct dctx {
    const zs_cost *cost;
    const zs_cluster *cl;
    const zs_zep_opts *o;
    const zs_batch *b;
    zs_zep_decision *d;
    double *w;
    double *w_attn; /* per document: its attention whole on one slot (any pricing) */
    int32_t *order; /* the documents longest first, for every partition */
} dctx;

/* The partition, priced with k NICs per inter-node hop (1: one NIC) and,
 * without remapping, the linear modules' cost of the tokens held. */
static int partition(dctx *x, int k, zs_remap_kind remap, zs_zep_part **out, zs_err *e)
{
    zs_zep_decision *d = x->d;
    zs_zep_pred pp = d->pred, pg;
    pp.k = k;
    /* Remapping across nodes: attention alone everywhere; inside nodes:
     * nodes on attention plus the linear modules of the tokens they hold,
     * GPUs on attention alone (the node's tokens are spread evenly over its
     * GPUs afterwards). */
    pp.lin_tok = remap == ZS_ZEP_REMAP_ACROSS ? 0 : d->lin_tok;
    pg = pp;
    pg.lin_tok = 0;
    /* zs_zep_pred_member_hook(&pp, len, 1), from the shared attention part. */
    for (int32_t i = 0; i < x->b->ndocs; i++)
        x->w[i] = x->w_attn[i] + pp.lin_tok * (double)x->b->len[i];
    zs_zep_part_in pin = {x->cl->nodes,
                          d->pred.slots_per_node,
                          d->cap,
                          d->th.m_intra,
                          x->o->hier,
                          x->b->ndocs,
                          x->b->len,
                          x->w,
                          zs_zep_pred_member_hook,
                          zs_zep_pred_span_hook,
                          &pp,
                          x->cl->nics_per_node,
                          remap == ZS_ZEP_REMAP_NODES ? x->w_attn : NULL,
                          remap == ZS_ZEP_REMAP_NODES ? &pg : NULL,
                          x->order};
    return zs_zep_partition(&pin, out, e);
}

static int remap_plan(dctx *x, const zs_zep_part *part, zs_remap_kind remap, zs_remap **out,
                      zs_err *e)
{
    const zs_model *m = &x->cost->model;
    const zs_zep_decision *d = x->d;
    /* Pair costs: seconds per token of the forward remap (Q, K, V in). */
    double per_tok = (d->th.heads + 2.0 * d->th.kv_heads) * m->head_dim * m->dtype_bytes;
    double ci = per_tok / zs_cluster_link_bw(x->cl, ZS_LINK_NVLINK);
    double cx = per_tok / zs_cluster_link_bw(x->cl, ZS_LINK_NIC);
    int rc =
        remap == ZS_ZEP_REMAP_NODES
            ? zs_remap_plan_nodes(part->tokens, d->pred.nslots, d->pred.slots_per_node, ci, out, e)
            : zs_remap_plan(part->tokens, d->pred.nslots, d->pred.slots_per_node, ci, cx, out, e);
    if (!rc && (*out)->nflows == 0) {
        zs_remap_free(*out);
        *out = NULL;
    }
    return rc;
}

/* Predicted layer of a partition and remap plan with routing as decided
 * (when on) and with routing off. */
static int weigh(dctx *x, const zs_zep_part *part, const zs_remap *rm, double *routed,
                 double *direct, zs_route_decision *rd, zs_err *e)
{
    zs_zep_decision *d = x->d;
    int rc = ZS_OK;
    zs_zep_layer_pred lp;
    *routed = -1;
    if (d->pred.k > 1) {
        zs_route_enable(d->route, 1);
        rc = zs_zep_pred_routing(&d->pred, part, rm, x->b->len, d->route, rd, e);
        if (!rc && rd->hops_routed + rd->flows_routed > 0) {
            rc = zs_zep_pred_layer(&d->pred, part, rm, x->b->len, d->route, &lp, e);
            *routed = lp.layer_s;
        }
    }
    zs_route_enable(d->route, 0);
    if (!rc)
        rc = zs_zep_pred_layer(&d->pred, part, rm, x->b->len, d->route, &lp, e);
    *direct = lp.layer_s;
    return rc;
}

/* Weighs one (pricing, remapping) plan; keeps it in *d when it is faster
 * than the best so far. */
static int candidate(dctx *x, int k, zs_remap_kind remap, zs_err *e)
{
    zs_zep_decision *d = x->d;
    zs_zep_part *part = NULL;
    zs_remap *rm = NULL;
    zs_route_decision rd = {0};
    double routed, direct;
    int rc = partition(x, k, remap, &part, e);
    if (!rc && remap)
        rc = remap_plan(x, part, remap, &rm, e);
    if (!rc && remap && !rm) { /* nothing to move: the plan without remapping covers it */
        zs_zep_part_free(part);
        return ZS_OK;
    }
    if (!rc)
        rc = weigh(x, part, rm, &routed, &direct, &rd, e);
    if (rc) {
        zs_zep_part_free(part);
        zs_remap_free(rm);
        return rc;
    }
    int best = -1;
    double best_t = d->chosen >= 0 ? d->cand[d->chosen].layer_s : 0;
    for (int r = 0; r < 2; r++) {
        double t = r ? routed : direct;
        if (t < 0 || d->ncand >= ZS_ZEP_MAX_CANDIDATES)
            continue;
        d->cand[d->ncand] = (zs_zep_candidate){remap, k > 1, r, t};
        if ((d->chosen < 0 && best < 0) || t < best_t) {
            best = d->ncand;
            best_t = t;
        }
        d->ncand++;
    }
    if (best < 0) {
        zs_zep_part_free(part);
        zs_remap_free(rm);
        return ZS_OK;
    }
    zs_zep_part_free(d->part);
    zs_remap_free(d->remap);
    d->part = part;
    d->remap = rm;
    d->chosen = best;
    d->rd = rd;
    return ZS_OK;
}

int zs_zep_decide(const zs_cost *cost, const zs_cluster *cl, zs_mem_cfg mc, const zs_zep_opts *o,
                  const zs_batch *b, int route_stream, zs_zep_decision *out, zs_err *e)
{
    const zs_model *m = &cost->model;
    int tp = o->tp, G = cl->gpus_per_node / tp, S = cl->nodes * G;
    zs_zep_decision d;
    memset(&d, 0, sizeof d);
    d.chosen = -1;
    mc.tp = tp;
    mc.pp = 1;
    mc.dp = S;
    long cap;
    int rc = zs_mem_token_capacity(
        m, &cl->gpu, &mc, "use more GPUs for ZeRO sharding, recomputation, or a larger GPU", &cap,
        e);
    if (rc)
        return rc;
    d.cap = cap;
    int k = o->routing ? o->k : 1;
    if ((rc = zs_crossover_solve(cost, tp, k, o->chunk, &d.th, e)))
        return rc;
    d.pred = (zs_zep_pred){cost,
                           tp,
                           d.th.heads,
                           d.th.kv_heads,
                           G,
                           S,
                           k,
                           o->chunk,
                           mc.recompute == ZS_RECOMPUTE_FULL ? 2 : 1,
                           zs_zep_pred_memo_new(),
                           0};
    size_t nd = (size_t)(b->ndocs > 0 ? b->ndocs : 1);
    dctx x = {cost,
              cl,
              o,
              b,
              &d,
              malloc(sizeof(double) * nd),
              malloc(sizeof(double) * nd),
              malloc(sizeof(int32_t) * nd)};
    d.route = zs_route_new(cl, tp, k, o->chunk, route_stream);
    if (!x.w || !x.w_attn || !x.order || !d.route || !d.pred.memo) {
        free(x.w);
        free(x.w_attn);
        free(x.order);
        zs_zep_decision_fini(&d);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    rc = zs_zep_pred_lin_tok(&d.pred, (double)b->tokens / S, &d.lin_tok, e);
    /* Every plan weighed partitions the same documents in the same order
     * with the same attention cost per whole document: both once. */
    if (!rc)
        rc = zs_zep_part_order(b->len, b->ndocs, x.order, e);
    for (int32_t i = 0; i < b->ndocs && !rc; i++)
        x.w_attn[i] = zs_zep_pred_member(&d.pred, b->len[i], 1);
    /* The plans weighed, simplest first: no remapping (remap=0|1), then
     * remapping across nodes and inside nodes only (remap=1|always);
     * inter-node rings priced through one NIC, then routed (routing=1). */
    for (int pk = 0; pk < (k > 1 ? 2 : 1) && !rc; pk++)
        for (int rm = o->remap == 2 ? ZS_ZEP_REMAP_ACROSS : ZS_ZEP_REMAP_NONE;
             rm <= (o->remap ? ZS_ZEP_REMAP_NODES : ZS_ZEP_REMAP_NONE) && !rc; rm++)
            rc = candidate(&x, pk ? k : 1, (zs_remap_kind)rm, e);
    if (!rc && !d.part)
        rc = candidate(&x, 1, ZS_ZEP_REMAP_NONE, e); /* remap=always with nothing to move */
    free(x.w);
    free(x.w_attn);
    free(x.order);
    if (!rc) {
        /* Leave the routing layer as the chosen plan has it. */
        zs_zep_candidate c = d.cand[d.chosen];
        zs_route_enable(d.route, c.routing);
        if (c.routing)
            rc = zs_zep_pred_routing(&d.pred, d.part, d.remap, b->len, d.route, &d.rd, e);
    }
    if (rc) {
        zs_zep_decision_fini(&d);
        return rc;
    }
    *out = d;
    return ZS_OK;
}
