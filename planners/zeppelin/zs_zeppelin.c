/* The `zeppelin` planner (Chen et al., EuroSys 2026; SYSTEM.md 5.1): cost
 * crossovers from the cost model (zs_crossover.h), hierarchical
 * partitioning (zs_zep_part.h), the attention engine
 * (zs_zep_engine_internal.h), the routing layer (zs_route.h) and the
 * remapping layer (zs_remap.h). Every GPU is a data-parallel slot
 * (TP groups with tp > 1); attention is planned per document.
 * Options: tp=N (default 1); routing=0|1, remap=0|1|always, hier=0|1
 * (default 1: the Fig. 11 ablation switches; remap=1 remaps when it is
 * predicted to pay); k=N NICs per routed transfer and chunk_kib=N routing
 * chunk (defaults from the bandwidths); xfer=ring|merged|per-doc (default
 * ring: the ring steps of rings over the same GPUs in the same order that
 * share a source, a destination and a step are one transfer of their
 * summed bytes; merged: those of any rings; per-doc: one per document's
 * ring step). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_iteration.h"
#include "zs_planner.h"
#include "zs_zep_decide.h"
#include "zs_zep_engine_internal.h"

static const zs_opt_spec opt_routing = {
    .key = "routing", .type = ZS_OPT_BOOL, .max = 1, .def = 1, .help = "the routing layer"};
static const zs_opt_spec opt_remap = {.key = "remap",
                                      .type = ZS_OPT_ENUM,
                                      .values = "1|0|always", /* the default first */
                                      .help = "the remapping layer (1: when it is predicted to "
                                              "pay for the batch; always: on every batch)"};
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

static const zs_opt_spec opt_xfer = {.key = "xfer",
                                     .type = ZS_OPT_ENUM,
                                     .values = "ring|merged|per-doc", /* the default first */
                                     .help = "ring transfers: one per peer per step for the "
                                             "documents of rings over the same GPUs in the same "
                                             "order (one ring, as TE CP posts a packed batch), "
                                             "merged across every ring sharing a source, "
                                             "destination and step, or one per document's ring "
                                             "step"};

typedef struct zopts {
    long tp, k, chunk_kib;
    int routing, remap, hier, xfer;
} zopts;

static int read_opts(const zs_plan_ctx *ctx, zopts *o, zs_err *e)
{
    long defk = 0, defc = 0;
    int rc = zs_plan_opt_tp(ctx, &zs_opt_tp, 0, &o->tp, e);
    if (!rc)
        rc = zs_opt_bool(ctx->opts, &opt_routing, &o->routing, e);
    if (!rc)
        rc = zs_opt_enum(ctx->opts, &opt_remap, &o->remap, e);
    if (!rc) /* values 1|0|always: on when it pays, off, always */
        o->remap = o->remap == 0 ? 1 : o->remap == 1 ? 0 : 2;
    if (!rc)
        rc = zs_opt_bool(ctx->opts, &opt_hier, &o->hier, e);
    if (!rc)
        rc = zs_opt_enum(ctx->opts, &opt_xfer, &o->xfer, e); /* ZS_ZEP_XFER_* */
    if (rc)
        return rc;
    const zs_cluster *cl = ctx->cluster;
    defk = zs_route_default_k(cl, (int)o->tp);
    defc = (long)(zs_route_default_chunk(cl) / 1024);
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
    zs_schedule *s = zs_schedule_new(nranks);
    int64_t *lin = malloc(sizeof(int64_t) * (size_t)S);
    zs_zep_engine en = {0};
    zs_zep_decision d = {0};
    if (!s || !lin) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    int intra_stream = zs_schedule_add_stream(s, "zep-intra");
    int inter_stream = zs_schedule_add_stream(s, "comm-inter");
    int route_stream = zs_schedule_add_stream(s, "route");
    int send_stream = zs_schedule_add_stream(s, "route-send");
    int join_stream = zs_schedule_add_stream(s, "route-join");
    int remap_stream = zs_schedule_add_stream(s, "remap");
    zs_schedule_set_docs(s, batch->len, batch->ndocs);
    if ((rc = zs_schedule_check(s, e)))
        goto out;
    zs_zep_opts zo = {tp, (int)o.k, o.routing, o.remap, o.hier, (double)o.chunk_kib * 1024};
    zs_mem_cfg mc = ctx->mem;
    if ((rc = zs_zep_decide(ctx->cost, cl, mc, &zo, batch, route_stream, &d, e)))
        goto out;
    zs_route_set_streams(d.route, send_stream, join_stream);
    en.part = d.part;
    en.remap = d.remap;
    en.route = d.route;
    en.intra_stream = intra_stream;
    en.inter_stream = inter_stream;
    en.remap_stream = remap_stream;
    en.len = batch->len;
    en.cost = ctx->cost;
    en.tp = tp;
    en.xfer = o.xfer;
    zs_layout_dims dims = {tp, 1, 1, S};
    if ((rc = zs_zep_engine_init(&en, e)) || (rc = zs_zep_engine_pieces(&en, s, &dims, e)))
        goto out;
    for (int sl = 0; sl < S; sl++)
        lin[sl] = d.remap ? d.remap->target[sl] : d.part->tokens[sl];
    zs_iter_spec spec = {dims,
                         1,
                         lin,
                         mc.recompute,
                         mc.zero_stage,
                         ctx->seed,
                         zs_zep_engine_emit,
                         &en,
                         d.remap ? en.moved : NULL,
                         0,
                         mc.fsdp};
    if ((rc = zs_iter_build(s, ctx->cost, &spec, e)))
        goto out;
    const zs_zep_part *part = d.part;
    zs_plan_report_note(rep,
                        "zeppelin: capacity %ld tokens/GPU; m_intra=%.0f m_inter=%.0f tokens/GPU "
                        "(crossovers, for information; %.0f routed over %d NICs)",
                        (long)d.cap, d.th.m_intra, d.th.m_inter, d.th.m_inter_routed, zo.k);
    zs_plan_report_note(rep,
                        "documents: %d local, %d intra-node, %d inter-node, %d global-ring; "
                        "predicted attention makespan %.1f ms/layer",
                        part->count[ZS_ZEP_LOCAL], part->count[ZS_ZEP_INTRA],
                        part->count[ZS_ZEP_INTER], part->count[ZS_ZEP_GLOBAL],
                        part->makespan * 1e3);
    /* The plans weighed: [plain|remap|remap-n (inside nodes)][-r: inter-node
     * rings priced routed]
     * [+rt: routing as decided], predicted ms per layer. */
    char w[768] = "";
    size_t wn = 0;
    for (int i = 0; i < d.ncand && wn < sizeof w; i++) {
        const zs_zep_candidate *c = &d.cand[i];
        int n = snprintf(w + wn, sizeof w - wn, "%s%s%s%s %.1f%s", i ? ", " : "",
                         c->remap == ZS_ZEP_REMAP_NODES    ? "remap-n"
                         : c->remap == ZS_ZEP_REMAP_ACROSS ? "remap"
                                                           : "plain",
                         c->routed_pricing ? "-r" : "", c->routing ? "+rt" : "", c->layer_s * 1e3,
                         i == d.chosen ? "*" : "");
        wn += n > 0 ? (size_t)n : 0;
    }
    zs_plan_report_note(rep, "plans weighed (ms/layer predicted, * taken): %s", w);
    const zs_zep_candidate *ch = &d.cand[d.chosen];
    if (!o.routing)
        zs_plan_report_note(rep, "routing off");
    else if (!ch->routing)
        zs_plan_report_note(rep, "routing off for this batch: no routed transfer lowers the "
                                 "predicted layer time");
    else
        zs_plan_report_note(rep,
                            "routing (k=%d): %d/%d ring hops, %d/%d remap flows routed; "
                            "busiest NIC %.1f -> %.1f ms/layer",
                            zo.k, d.rd.hops_routed, d.rd.hops_routed + d.rd.hops_direct,
                            d.rd.flows_routed, d.rd.flows_routed + d.rd.flows_direct,
                            d.rd.nic_direct_s * 1e3, d.rd.nic_decided_s * 1e3);
    if (d.remap)
        zs_plan_report_note(rep, "remap on: %lld tokens move inside nodes, %lld across",
                            (long long)d.remap->intra_tokens, (long long)d.remap->inter_tokens);
    else if (o.remap)
        zs_plan_report_note(rep, "remap off for this batch: it does not lower the predicted "
                                 "layer time");
    else
        zs_plan_report_note(rep, "remap off");
    if (!o.hier)
        zs_plan_report_note(rep, "hier off: documents longer than m_intra share one global ring");
out:
    zs_zep_engine_fini(&en);
    zs_zep_decision_fini(&d);
    free(lin);
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

static const zs_opt_spec *const options[] = {&zs_opt_tp, &opt_routing,   &opt_remap, &opt_hier,
                                             &opt_k,     &opt_chunk_kib, &opt_xfer,  NULL};

/* The decisions of plan (crossovers, partition, remap plan, routing)
 * without the engine's lowering. */
static int decide(const zs_plan_ctx *ctx, const zs_batch *batch, int *classes, zs_err *e)
{
    zopts o;
    int rc = read_opts(ctx, &o, e);
    if (rc)
        return rc;
    zs_zep_opts zo = {(int)o.tp, (int)o.k, o.routing, o.remap, o.hier, (double)o.chunk_kib * 1024};
    zs_zep_decision d = {0};
    if ((rc = zs_zep_decide(ctx->cost, ctx->cluster, ctx->mem, &zo, batch, 0, &d, e)))
        return rc;
    for (int c = 0; c < ZS_PLAN_CLASSES; c++)
        classes[c] = d.part->count[c];
    zs_zep_decision_fini(&d);
    return ZS_OK;
}

const zs_planner_ops zs_planner_zeppelin = {
    .name = "zeppelin",
    .summary =
        "hierarchical partitioning, attention engine, NIC routing and token remapping (Zeppelin)",
    .options = options,
    .plan = plan,
    .decide = decide};
