/* The `llama-cp` planner: Llama 3 style all-gather context parallelism.
 * Every document of a CP group is cut into 2*cp zigzag chunks (exact
 * sizes, the remainder tokens dealt one each to the first chunks, so no
 * padding is trained), CP rank i holding chunks i and 2cp-1-i for attention
 * and the linear modules. Before attention every rank all-gathers the K and
 * V of its group (not overlapped, as in Llama 3), then computes its local
 * queries against the whole gathered KV of each document in one kernel:
 * per query chunk [q0, q1) one causal block against keys [0, q1). Backward
 * gathers K and V again (keeping the gathered KV of every layer would cost
 * the whole group's KV per GPU per layer, which real systems do not hold)
 * and reduce-scatters dK and dV back to their owners. NCCL collectives need
 * equal buffers, so every member moves the largest shard of its group.
 * layout=zigzag|ring|stripe places the tokens otherwise and passes K/V
 * around a ring instead (zs_cplayout.h), for comparing CP token layouts.
 * Options: cp=N (default 16), tp=N (default 1), layout=llama3|zigzag|ring|
 * stripe (default llama3). */
#include <stdlib.h>

#include "zs_cpgroup.h"

static const zs_opt_spec opt_cp =
    ZS__CPB_OPT_CP("16, or all GPUs / tp when fewer",
                   "context-parallel degree, CP groups of consecutive GPUs and DP across them");

static const zs_opt_spec opt_layout = ZS__CPB_OPT_LAYOUT("llama3|zigzag|ring|stripe");

typedef struct llcp {
    zs_cpg c;
    zs_cpg_attn a;
} llcp;

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    llcp *L = arg;
    (void)micro;
    return zs_cpg_attn_emit(it, stage, &L->c, &L->a, backward, e);
}

static const char *const layout_notes[ZS_CPL_N] = {
    "llama-cp, layout=zigzag: per-document zigzag chunks (exact, no padding), one ring per CP "
    "group passing K/V (cp-1 transfers per layer forward, overlapped with attention)",
    "llama-cp, layout=ring: per-document contiguous chunks (exact, no padding), one ring per "
    "CP group passing K/V (causal: the last rank computes the most)",
    "llama-cp, layout=stripe: every document dealt token by token over the cp ranks (recorded "
    "as 4 runs per rank, exact), one ring per CP group passing K/V",
    "llama-cp: per-document zigzag chunks (exact, no padding), K/V all-gathered "
    "over the CP group before attention (not overlapped) and again in backward, "
    "dK/dV reduce-scattered; collective buffers sized to the group's largest shard"};

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    llcp L = {0};
    int rc = zs_cpg_init(ctx, batch, &opt_cp, 16, zs_cpg_fp_zigzag, &L.c, e);
    if (rc)
        return rc;
    zs_cpg *c = &L.c;
    zs_schedule *s = NULL;
    int64_t *shard = calloc((size_t)c->nslots, sizeof(int64_t)), pad = 0;
    if (!shard) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    L.a = (zs_cpg_attn){.chunking = ZS_RING_EXACT, .shard = shard};
    if ((rc = zs_cpg_layout(ctx->opts, &opt_layout, &L.a.layout, e)))
        goto out;
    if ((rc = zs_cpg_schedule(c, &s, &L.a.cp_stream, e)) ||
        (rc = zs_cpg_place(s, c, &L.a, shard, &pad, e)))
        goto out;
    zs_cpg_note(c, rep, layout_notes[L.a.layout]);
    rc = zs_cpg_build(c, ctx, s, shard, emit, &L, e);
out:
    free(shard);
    return zs_cpg_finish(&L.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_cp, &zs_opt_tp, &opt_layout, NULL};

const zs_planner_ops zs_planner_llamacp = {
    .name = "llama-cp",
    .summary = "Llama 3 all-gather context parallelism (per-document zigzag sharding)",
    .options = options,
    .plan = plan};
