/* Zeppelin's per-batch decisions: see zs_zeppelin_decide.h. */
#include "zs_zeppelin_decide.h"

#include <stdlib.h>
#include <string.h>

void zs_zep_decision_fini(zs_zep_decision *d)
{
    zs_zep_part_free(d->part);
    zs_zep_remap_free(d->remap);
    zs_zep_route_free(d->route);
    zs_zep_pred_memo_free(d->pred.memo);
    memset(d, 0, sizeof *d);
}

int zs_zep_decide(const zs_cost *cost, const zs_cluster *cl, zs_mem_cfg mc, const zs_zep_opts *o,
                  const zs_batch *b, int route_stream, zs_zep_decision *out, zs_err *e)
{
    const zs_model *m = &cost->model;
    int tp = o->tp, G = cl->gpus_per_node / tp, S = cl->nodes * G;
    zs_zep_decision d;
    memset(&d, 0, sizeof d);
    mc.tp = tp;
    mc.pp = 1;
    mc.dp = S;
    zs_mem_breakdown mb;
    int rc = zs_mem_breakdown_compute(m, &cl->gpu, &mc, &mb, e);
    if (rc)
        return rc;
    if (mb.max_tokens < 1)
        return zs_err_set(e, ZS_EINPUT, m->name,
                          "use more GPUs for ZeRO sharding, recomputation, or a larger GPU",
                          "the model's weights and optimizer state alone do not fit one GPU");
    d.cap = mb.max_tokens;
    int k = o->routing ? o->k : 1;
    if ((rc = zs_zep_thresholds_compute(cost, tp, k, o->chunk, &d.th, e)))
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
                           zs_zep_pred_memo_new()};
    double *w = malloc(sizeof(double) * (size_t)(b->ndocs > 0 ? b->ndocs : 1));
    d.route = zs_zep_route_new(cl, tp, k, o->chunk, route_stream);
    if (!w || !d.route || !d.pred.memo) {
        free(w);
        zs_zep_decision_fini(&d);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int32_t i = 0; i < b->ndocs; i++)
        w[i] = zs_zep_pred_member(&d.pred, b->len[i], 1);
    zs_zep_part_in pin = {
        cl->nodes, G, mb.max_tokens,           d.th.m_intra,          o->hier, b->ndocs,
        b->len,    w, zs_zep_pred_member_hook, zs_zep_pred_span_hook, &d.pred};
    rc = zs_zep_partition(&pin, &d.part, e);
    free(w);
    if (!rc && o->remap) {
        /* Pair costs: seconds per token of the forward remap (Q, K, V in). */
        double per_tok = (d.th.heads + 2.0 * d.th.kv_heads) * m->head_dim * m->dtype_bytes;
        double ci = per_tok / zs_cluster_link_bw(cl, ZS_LINK_NVLINK);
        double cx = per_tok / zs_cluster_link_bw(cl, ZS_LINK_NIC);
        rc = zs_zep_remap_plan(d.part->tokens, S, G, ci, cx, &d.remap, e);
        if (!rc && d.remap->nflows == 0) {
            zs_zep_remap_free(d.remap);
            d.remap = NULL;
        }
    }
    if (!rc && k > 1)
        rc = zs_zep_pred_routing(&d.pred, d.part, d.remap, b->len, d.route, &d.rd, e);
    if (!rc && d.remap) {
        /* Remapping pays when the predicted layer is shorter with it, the
         * transfers and the coupling it adds included. */
        d.remap_considered = 1;
        rc = zs_zep_pred_layer(&d.pred, d.part, d.remap, b->len, d.route, &d.with, e);
        if (!rc)
            rc = zs_zep_pred_layer(&d.pred, d.part, NULL, b->len, d.route, &d.without, e);
        d.layer_remap_s = d.with.layer_s;
        d.layer_plain_s = d.without.layer_s;
        if (!rc && !(d.with.layer_s < d.without.layer_s)) {
            zs_zep_remap_free(d.remap);
            d.remap = NULL;
        }
    }
    if (rc) {
        zs_zep_decision_fini(&d);
        return rc;
    }
    *out = d;
    return ZS_OK;
}
