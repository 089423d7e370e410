/* The `te-cp` planner: TransformerEngine / Megatron-LM context parallelism
 * with ring point-to-point exchange. Each CP group gets its share of the
 * batch as one packed sequence; every document is cut into 2*cp zigzag
 * chunks (padded to a multiple of 2*cp, as TE's THD format requires), CP
 * rank i holding chunks i and 2cp-1-i of every document, for attention and
 * for the linear modules alike. Attention is one ring over the whole group:
 * cp steps, each one attention op over the blocks of all documents, while
 * the rank's KV shard (all documents together) moves on to the next rank,
 * overlapped with the step's compute (cp-1 transfers forward; backward the
 * KV and the dK/dV travel together). Transfers take the default path, i.e.
 * the static GPU-NIC affinity. Short documents therefore pay the same ring
 * traffic as long ones: the behaviour Zeppelin is measured against.
 * With routing=1 the ring's inter-node transfers go through Zeppelin's
 * routing layer instead (each split over the node's NICs through proxy
 * GPUs, zs_route.h): the "routing only" step of Zeppelin's
 * ablation (Fig. 11), which starts from TE CP.
 * layout=ring|stripe|llama3 places the tokens otherwise (zs_cplayout.h;
 * llama3 all-gathers K and V instead of a ring), for comparing CP token
 * layouts on the same batches; the default zigzag is TE's own.
 * Options: cp=N (default 16), tp=N (default 1), layout=zigzag|ring|stripe|
 * llama3 (default zigzag), routing=0|1 (default 0). */
#include <stdlib.h>

#include "zs_cpgroup.h"
#include "zs_crossover.h"
#include "zs_route.h"

static const zs_opt_spec opt_cp =
    ZS__CPB_OPT_CP("16, or all GPUs / tp when fewer",
                   "context-parallel degree, CP groups of consecutive GPUs and DP across them");

static const zs_opt_spec opt_routing = {
    .key = "routing",
    .type = ZS_OPT_BOOL,
    .max = 1,
    .def = 0,
    .help = "route the rings' inter-node transfers over the node's NICs (Zeppelin's routing "
            "layer: the ablation's 'routing only')"};

static const zs_opt_spec opt_layout = ZS__CPB_OPT_LAYOUT("zigzag|ring|stripe|llama3");

typedef struct tecp {
    zs_cpg c;
    zs_cpg_attn a;
    zs_route *route; /* routing=1, else NULL */
} tecp;

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    tecp *T = arg;
    (void)micro;
    if (T->route)
        zs_route_phase(T->route); /* NIC balance per pass */
    return zs_cpg_attn_emit(it, stage, &T->c, &T->a, backward, e);
}

static const char *const layout_notes[ZS_CPL_N] = {
    "te-cp: every document in 2*cp zigzag chunks padded to a multiple of 2*cp, "
    "one ring per CP group over all its documents, cp-1 KV transfers per layer "
    "forward overlapped with attention, default GPU-NIC path",
    "te-cp, layout=ring: every document in cp contiguous chunks padded to a multiple of cp, "
    "one ring per CP group (causal: the last rank computes the most), cp-1 KV transfers per "
    "layer forward overlapped with attention, default GPU-NIC path",
    "te-cp, layout=stripe: every document dealt token by token over the cp ranks (recorded as "
    "4 runs per rank), padded to a multiple of cp, one ring per CP group, cp-1 KV transfers "
    "per layer forward overlapped with attention, default GPU-NIC path",
    "te-cp, layout=llama3: every document in 2*cp zigzag chunks padded to a multiple of 2*cp, "
    "K/V all-gathered over the CP group before attention (not overlapped) and again in "
    "backward, dK/dV reduce-scattered"};

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    tecp T = {0};
    int rc = zs_cpg_init(ctx, batch, &opt_cp, 16, zs_cpg_fp_zigzag, &T.c, e);
    if (rc)
        return rc;
    zs_cpg *c = &T.c;
    zs_schedule *s = NULL;
    int64_t *lin = calloc((size_t)c->nslots, sizeof(int64_t));
    if (!lin) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    int routing = 0;
    T.a = (zs_cpg_attn){.chunking = ZS_RING_PAD, .shard = lin};
    if ((rc = zs_cpg_layout(ctx->opts, &opt_layout, &T.a.layout, e)) ||
        (rc = zs_opt_bool(ctx->opts, &opt_routing, &routing, e)))
        goto out;
    if ((rc = zs_cpg_schedule(c, &s, &T.a.cp_stream, e)))
        goto out;
    int k = zs_route_default_k(ctx->cluster, c->tp);
    if (routing && k > 1 && zs_cpl_is_ring(T.a.layout)) {
        int rs = zs_schedule_add_stream(s, "route");
        int ss = zs_schedule_add_stream(s, "route-send");
        int js = zs_schedule_add_stream(s, "route-join");
        if ((rc = zs_schedule_check(s, e)))
            goto out;
        T.route = zs_route_new(ctx->cluster, c->tp, k, zs_route_default_chunk(ctx->cluster), rs);
        if (!T.route) {
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
            goto out;
        }
        zs_route_set_streams(T.route, ss, js);
        T.a.xfer = zs_route_xfer;
        T.a.xfer_arg = T.route;
    }
    int64_t pad = 0;
    if ((rc = zs_cpg_place(s, c, &T.a, lin, &pad, e)))
        goto out;
    zs_cpg_note(c, rep, layout_notes[T.a.layout]);
    zs_plan_report_note(rep, "padding: %lld tokens computed and moved but not trained",
                        (long long)pad);
    if (T.route)
        zs_plan_report_note(rep,
                            "routing on: every inter-node ring transfer split over %d NICs "
                            "through proxy GPUs (Zeppelin's routing layer)",
                            k);
    else if (routing && !zs_cpl_is_ring(T.a.layout))
        zs_plan_report_note(rep, "routing on but layout=llama3 has no ring: nothing to route");
    else if (routing)
        zs_plan_report_note(rep, "routing on but one NIC per transfer: nothing to spread over");
    rc = zs_cpg_build(c, ctx, s, lin, emit, &T, e);
out:
    free(lin);
    zs_route_free(T.route);
    return zs_cpg_finish(&T.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_cp, &zs_opt_tp, &opt_layout, &opt_routing, NULL};

const zs_planner_ops zs_planner_tecp = {
    .name = "te-cp",
    .summary = "TransformerEngine ring context parallelism (zigzag, packed batch per CP group)",
    .options = options,
    .plan = plan};
