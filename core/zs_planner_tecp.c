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
 * GPUs, zs_zeppelin_route.h): the "routing only" step of Zeppelin's
 * ablation (Fig. 11), which starts from TE CP.
 * Options: cp=N (default 16), tp=N (default 1), routing=0|1 (default 0). */
#include <stdlib.h>

#include "zs_cpbase.h"
#include "zs_ring.h"
#include "zs_zeppelin_cost.h"
#include "zs_zeppelin_route.h"

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

typedef struct tecp {
    zs__cpb c;
    int cp_stream;
    int *slots;          /* nslots, identity: group g's ring is slots[g*cp .. (g+1)*cp) */
    zs_zep_route *route; /* routing=1, else NULL */
} tecp;

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    tecp *T = arg;
    const zs__cpb *c = &T->c;
    (void)micro;
    int64_t *dep = malloc(sizeof(int64_t) * (size_t)c->cp);
    if (!dep)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int rc = ZS_OK;
    if (T->route)
        zs_zep_route_phase(T->route); /* NIC balance per pass */
    for (int g = 0; g < c->dp && rc == ZS_OK; g++) {
        int n = c->gstart[g + 1] - c->gstart[g];
        const int32_t *docs = c->gdocs + c->gstart[g];
        for (int k = 0; k < c->cp; k++)
            dep[k] = zs_iter_entry(it, zs__cpb_slot(c, g, k));
        if (n > 0 && c->cp == 1) {
            rc = zs__cpb_local_attn(it, stage, zs__cpb_slot(c, g, 0), docs, n, 0, backward, &dep[0],
                                    e);
        } else if (n > 0) {
            zs_ring_spec rs = {c->cp,       T->slots + g * c->cp, n,      docs,
                               ZS_RING_PAD, T->cp_stream,         "ring", NULL,
                               NULL};
            if (T->route) {
                rs.xfer = zs_zep_route_xfer;
                rs.xfer_arg = T->route;
            }
            rc = zs_ring_emit(it, stage, &rs, backward, dep, e);
        }
        for (int k = 0; k < c->cp && rc == ZS_OK; k++)
            zs_iter_set_exit(it, zs__cpb_slot(c, g, k), dep[k]);
    }
    free(dep);
    return rc ? rc : zs_schedule_check(zs_iter_schedule(it), e);
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    tecp T = {0};
    int rc = zs__cpb_init(ctx, batch, &opt_cp, 16, zs__cpb_fp_zigzag, &T.c, e);
    if (rc)
        return rc;
    zs__cpb *c = &T.c;
    zs_schedule *s = NULL;
    int64_t *lin = calloc((size_t)c->nslots, sizeof(int64_t));
    T.slots = malloc(sizeof(int) * (size_t)c->nslots);
    if (!lin || !T.slots) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    if ((rc = zs__cpb_schedule(c, &s, &T.cp_stream, e)))
        goto out;
    int routing = 0;
    if ((rc = zs_opt_bool(ctx->opts, &opt_routing, &routing, e)))
        goto out;
    int k = zs_zep_default_k(ctx->cluster, c->tp);
    if (routing && k > 1) {
        int rs = zs_schedule_add_stream(s, "route");
        int ss = zs_schedule_add_stream(s, "route-send");
        int js = zs_schedule_add_stream(s, "route-join");
        if ((rc = zs_schedule_check(s, e)))
            goto out;
        T.route = zs_zep_route_new(ctx->cluster, c->tp, k, zs_zep_default_chunk(ctx->cluster), rs);
        if (!T.route) {
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
            goto out;
        }
        zs_zep_route_set_streams(T.route, ss, js);
    }
    int64_t pad = 0;
    for (int sl = 0; sl < c->nslots; sl++)
        T.slots[sl] = sl;
    for (int g = 0; g < c->dp && !rc; g++)
        for (int i = c->gstart[g]; i < c->gstart[g + 1] && !rc; i++) {
            int d = c->gdocs[i];
            int64_t share = zs__cpb_fp_zigzag(c->len[d], c->cp);
            pad += share * c->cp - c->len[d];
            for (int k = 0; k < c->cp && !rc; k++) {
                int sl = zs__cpb_slot(c, g, k);
                int chunks[2] = {k, 2 * c->cp - 1 - k};
                for (int h = 0; h < 2 && !rc; h++) {
                    int32_t t0, t1;
                    zs_ring_chunk(c->len[d], c->cp, ZS_RING_PAD, chunks[h], &t0, &t1);
                    rc = zs__cpb_piece(s, c, d, t0, t1, sl, e);
                }
                /* Padded tokens run through every layer too. */
                lin[sl] += share;
            }
        }
    if (rc)
        goto out;
    zs__cpb_note(c, rep,
                 "te-cp: every document in 2*cp zigzag chunks padded to a multiple of 2*cp, "
                 "one ring per CP group over all its documents, cp-1 KV transfers per layer "
                 "forward overlapped with attention, default GPU-NIC path");
    zs_plan_report_note(rep, "padding: %lld tokens computed and moved but not trained",
                        (long long)pad);
    if (T.route)
        zs_plan_report_note(rep,
                            "routing on: every inter-node ring transfer split over %d NICs "
                            "through proxy GPUs (Zeppelin's routing layer)",
                            k);
    else if (routing)
        zs_plan_report_note(rep, "routing on but one NIC per transfer: nothing to spread over");
    rc = zs__cpb_build(c, ctx, s, lin, emit, &T, e);
out:
    free(lin);
    free(T.slots);
    zs_zep_route_free(T.route);
    return zs__cpb_finish(&T.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_cp, &zs_opt_tp, &opt_routing, NULL};

const zs_planner_ops zs_planner_tecp = {
    .name = "te-cp",
    .summary = "TransformerEngine ring context parallelism (zigzag, packed batch per CP group)",
    .options = options,
    .plan = plan};
