/* The `zeppelin` planner (Chen et al., EuroSys 2026; SYSTEM.md 5.1): cost
 * crossovers from the cost model (zs_zeppelin_cost.h), hierarchical
 * partitioning (zs_zeppelin_part.h), the attention engine
 * (zs_zeppelin_engine.h), the routing layer (zs_zeppelin_route.h) and the
 * remapping layer (zs_zeppelin_remap.h). Every GPU is a data-parallel slot
 * (TP groups with tp > 1); attention is planned per document.
 * Options: tp=N (default 1); routing=0|1, remap=0|1, hier=0|1 (default 1:
 * the Fig. 11 ablation switches); k=N NICs per routed transfer and
 * chunk_kib=N routing chunk (defaults from the bandwidths). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_iteration.h"
#include "zs_planner.h"
#include "zs_zeppelin_cost.h"
#include "zs_zeppelin_engine.h"

static const zs_opt_spec opt_routing = {
    .key = "routing", .type = ZS_OPT_BOOL, .max = 1, .def = 1, .help = "the routing layer"};
static const zs_opt_spec opt_remap = {
    .key = "remap", .type = ZS_OPT_BOOL, .max = 1, .def = 1, .help = "the remapping layer"};
static const zs_opt_spec opt_hier = {.key = "hier",
                                     .type = ZS_OPT_BOOL,
                                     .max = 1,
                                     .def = 1,
                                     .help = "hierarchical partitioning (0: one global ring for "
                                             "every document longer than m_intra)"};
static const zs_opt_spec opt_k = {.key = "k",
                                  .type = ZS_OPT_INT,
                                  .min = 1,
                                  .max = ZS_ZEP_MAX_K,
                                  .computed = "NICs one GPU's NVLink can feed, at most the node's",
                                  .help = "NICs per routed transfer"};
static const zs_opt_spec opt_chunk_kib = {.key = "chunk_kib",
                                          .type = ZS_OPT_INT,
                                          .min = 4,
                                          .max = 1L << 22,
                                          .computed = "10x the bytes a NIC moves in one latency",
                                          .help = "routing chunk in KiB"};

typedef struct zopts {
    long tp, k, chunk_kib;
    int routing, remap, hier;
} zopts;

static int read_opts(const zs_plan_ctx *ctx, zopts *o, zs_err *e)
{
    long defk = 0, defc = 0;
    int rc = zs_plan_opt_tp(ctx, &zs_opt_tp, 0, &o->tp, e);
    if (!rc)
        rc = zs_opt_bool(ctx->opts, &opt_routing, &o->routing, e);
    if (!rc)
        rc = zs_opt_bool(ctx->opts, &opt_remap, &o->remap, e);
    if (!rc)
        rc = zs_opt_bool(ctx->opts, &opt_hier, &o->hier, e);
    if (rc)
        return rc;
    const zs_cluster *cl = ctx->cluster;
    defk = zs_zep_default_k(cl, (int)o->tp);
    defc = (long)(zs_zep_default_chunk(cl) / 1024);
    rc = zs_opt_int_def(ctx->opts, &opt_k, defk, &o->k, e);
    if (!rc)
        rc = zs_opt_int_def(ctx->opts, &opt_chunk_kib, defc, &o->chunk_kib, e);
    return rc;
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    zopts o;
    int rc = read_opts(ctx, &o, e);
    if (rc)
        return rc;
    const zs_cluster *cl = ctx->cluster;
    int tp = (int)o.tp, G = cl->gpus_per_node / tp, S = cl->nodes * G;
    int nranks = zs_cluster_gpus(cl);
    zs_mem_cfg mc = ctx->mem;
    mc.tp = tp;
    mc.pp = 1;
    mc.dp = S;
    zs_mem_breakdown mb;
    if ((rc = zs_mem_breakdown_compute(ctx->model, &cl->gpu, &mc, &mb, e)))
        return rc;
    if (mb.max_tokens < 1)
        return zs_err_set(e, ZS_EINPUT, ctx->model->name,
                          "use more GPUs for ZeRO sharding, recomputation, or a larger GPU",
                          "the model's weights and optimizer state alone do not fit one GPU");
    int k = o.routing ? (int)o.k : 1;
    double chunk = (double)o.chunk_kib * 1024;
    zs_zep_thresholds th;
    if ((rc = zs_zep_thresholds_compute(ctx->cost, tp, k, chunk, &th, e)))
        return rc;

    double *w = malloc(sizeof(double) * (size_t)batch->ndocs);
    zs_zep_part *part = NULL;
    zs_zep_remap *rm = NULL;
    zs_zep_route *route = NULL;
    zs_schedule *s = NULL;
    int64_t *lin = NULL;
    zs_zep_engine en = {0};
    if (!w) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int32_t d = 0; d < batch->ndocs; d++) {
        zs_attn_block b = {d, 0, batch->len[d], 0, batch->len[d]};
        w[d] = zs_cost_attn(ctx->cost, &b, 1, th.heads, 0);
    }
    zs_zep_part_in pin = {
        cl->nodes, G, mb.max_tokens, th.m_intra, th.m_inter, o.hier, batch->ndocs, batch->len, w};
    if ((rc = zs_zep_partition(&pin, &part, e)))
        goto out;
    if (o.remap) {
        /* Pair costs: seconds per token of the forward remap (Q, K, V in). */
        double per_tok =
            (th.heads + 2.0 * th.kv_heads) * ctx->model->head_dim * ctx->model->dtype_bytes;
        double ci = per_tok / zs_cluster_link_bw(cl, ZS_LINK_NVLINK);
        double cx = per_tok / zs_cluster_link_bw(cl, ZS_LINK_NIC);
        if ((rc = zs_zep_remap_plan(part->tokens, S, G, ci, cx, &rm, e)))
            goto out;
    }
    s = zs_schedule_new(nranks);
    lin = malloc(sizeof(int64_t) * (size_t)S);
    if (!s || !lin) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    int intra_stream = zs_schedule_add_stream(s, "zep-intra");
    int inter_stream = zs_schedule_add_stream(s, "comm-inter");
    int route_stream = zs_schedule_add_stream(s, "route");
    zs_schedule_set_docs(s, batch->len, batch->ndocs);
    if ((rc = zs_schedule_check(s, e)))
        goto out;
    route = zs_zep_route_new(cl, tp, k, chunk, route_stream);
    if (!route) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    en = (zs_zep_engine){part, rm, route, intra_stream, inter_stream, batch->len, NULL, NULL};
    zs_layout_dims dims = {tp, 1, 1, S};
    if ((rc = zs_zep_engine_init(&en, e)))
        goto out;
    if ((rc = zs_zep_engine_pieces(&en, s, &dims, e)))
        goto out;
    for (int sl = 0; sl < S; sl++)
        lin[sl] = rm ? rm->target[sl] : part->tokens[sl];
    zs_iter_spec spec = {dims, 1, lin, mc.recompute, mc.zero_stage, ctx->seed, zs_zep_engine_emit,
                         &en};
    if ((rc = zs_iter_build(s, ctx->cost, &spec, e)))
        goto out;
    long routed, direct;
    zs_zep_route_counts(route, &routed, &direct);
    zs_plan_report_note(rep,
                        "zeppelin: m_intra=%.0f m_inter=%.0f tokens/GPU (cost-model crossovers; "
                        "%.0f with routing over %d NICs); capacity %ld tokens/GPU",
                        th.m_intra, th.m_inter, th.m_inter_routed, k, mb.max_tokens);
    zs_plan_report_note(
        rep, "documents: %d local, %d intra-node, %d inter-node, %d global-ring; %d rings",
        part->count[ZS_ZEP_LOCAL], part->count[ZS_ZEP_INTRA], part->count[ZS_ZEP_INTER],
        part->count[ZS_ZEP_GLOBAL], part->nrings);
    zs_plan_report_note(rep, "routing %s (k=%d, chunk %ld KiB): %ld transfers routed, %ld direct",
                        o.routing ? "on" : "off", k, o.chunk_kib, routed, direct);
    if (rm)
        zs_plan_report_note(rep,
                            "remap on: %lld tokens move inside nodes, %lld across nodes "
                            "(all-to-all-v as grouped send/recv)",
                            (long long)rm->intra_tokens, (long long)rm->inter_tokens);
    else
        zs_plan_report_note(rep, "remap off: linear modules on the attention layout");
    if (!o.hier)
        zs_plan_report_note(rep, "hier off: documents longer than m_intra share one global ring");
out:
    zs_zep_engine_fini(&en);
    zs_zep_route_free(route);
    zs_zep_remap_free(rm);
    zs_zep_part_free(part);
    free(w);
    free(lin);
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

static const zs_opt_spec *const options[] = {&zs_opt_tp, &opt_routing,   &opt_remap, &opt_hier,
                                             &opt_k,     &opt_chunk_kib, NULL};

const zs_planner_ops zs_planner_zeppelin = {
    .name = "zeppelin",
    .summary =
        "hierarchical partitioning, attention engine, NIC routing and token remapping (Zeppelin)",
    .options = options,
    .plan = plan};
