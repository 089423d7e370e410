/* The `local` planner: data parallelism without context parallelism. Each
 * document goes whole to the slot with the least predicted work (longest
 * first, ties to the lower slot), so attention needs no communication; it
 * is the reference point "no communication in attention". A document longer
 * than one GPU's token capacity is an error naming it, unless split_long=1,
 * which cuts such documents into independent capacity-sized documents
 * (attention does not cross the cuts, as a data loader that splits long
 * documents would do; the plan's notes say how many were cut).
 * Options: tp=N (tensor-parallel degree, default 1), split_long=0|1. */
#include <stdlib.h>
#include <string.h>

#include "zs_iteration.h"
#include "zs_planner.h"
#include "zs_sort.h"

static const zs_opt_spec opt_split_long = {
    .key = "split_long",
    .type = ZS_OPT_BOOL,
    .max = 1,
    .def = 0,
    .help = "cut documents longer than one GPU's capacity into independent documents"};

typedef struct local {
    const zs_cost *cost;
    int nslots, ndocs;
    int32_t *len;
    int *slot_of; /* per document */
} local;

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    local *L = arg;
    zs_schedule *s = zs_iter_schedule(it);
    zs_attn_block *blk = malloc(sizeof(zs_attn_block) * (size_t)(L->ndocs > 0 ? L->ndocs : 1));
    if (!blk)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int heads = zs_iter_heads(it);
    for (int sl = 0; sl < L->nslots; sl++) {
        int n = 0;
        for (int d = 0; d < L->ndocs; d++)
            if (L->slot_of[d] == sl)
                blk[n++] = (zs_attn_block){d, 0, L->len[d], 0, L->len[d]};
        int rank = zs_iter_rank(it, stage, sl);
        int64_t dep[1] = {zs_iter_entry(it, sl)};
        int64_t op = dep[0];
        if (n > 0) {
            double t = zs_cost_attn(L->cost, blk, n, heads, backward);
            op = zs_sched_attn(s, rank, ZS_STREAM_COMPUTE, backward ? "attn-bwd" : "attn-fwd",
                               backward, blk, n, heads, t, dep, 1);
        }
        zs_iter_set_exit(it, sl, op);
    }
    free(blk);
    return zs_schedule_check(s, e);
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    long tp;
    int split;
    int rc = zs_plan_opt_tp(ctx, &zs_opt_tp, 0, &tp, e);
    if (!rc)
        rc = zs_opt_bool(ctx->opts, &opt_split_long, &split, e);
    if (rc)
        return rc;
    int nranks = zs_cluster_gpus(ctx->cluster);
    int nslots = nranks / (int)tp;
    zs_mem_cfg mc = ctx->mem;
    mc.tp = (int)tp;
    mc.pp = 1;
    mc.dp = nslots;
    long capl;
    if ((rc = zs_mem_token_capacity(
             ctx->model, &ctx->cluster->gpu, &mc,
             "use more GPUs for ZeRO sharding, recomputation, or a larger GPU", &capl, e)))
        return rc;
    /* Documents, split at the capacity when asked. */
    int64_t cap = capl;
    local L = {ctx->cost, nslots, 0, NULL, NULL};
    int64_t ndocs = 0;
    for (int32_t d = 0; d < batch->ndocs; d++) {
        if (batch->len[d] > cap && !split) {
            char w[64];
            snprintf(w, sizeof w, "document %d of the batch", d);
            return zs_err_set(e, ZS_EINPUT, w,
                              "use a context-parallel method, or --opt split_long=1",
                              "document of %d tokens exceeds one GPU's capacity of %lld tokens",
                              batch->len[d], (long long)cap);
        }
        ndocs += (batch->len[d] + cap - 1) / cap;
    }
    L.len = malloc(sizeof(int32_t) * (size_t)ndocs);
    L.slot_of = malloc(sizeof(int) * (size_t)ndocs);
    int32_t *order = NULL; /* documents, longest first */
    double *load = calloc((size_t)nslots, sizeof(double));
    int64_t *tok = calloc((size_t)nslots, sizeof(int64_t));
    zs_schedule *s = zs_schedule_new(nranks);
    if (!L.len || !L.slot_of || !load || !tok || !s) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    int cuts = 0;
    for (int32_t d = 0; d < batch->ndocs; d++)
        for (int32_t off = 0; off < batch->len[d]; off += (int32_t)cap) {
            int32_t l = batch->len[d] - off < cap ? batch->len[d] - off : (int32_t)cap;
            L.len[L.ndocs++] = l;
            cuts += off > 0;
        }
    if (cuts)
        zs_plan_report_note(rep,
                            "split_long: %d cuts made long documents into independent "
                            "documents of at most %lld tokens",
                            cuts, (long long)cap);
    if (!(order = zs_order_longest_first(L.len, L.ndocs))) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    int heads = ctx->model->heads / (int)tp;
    double lin_per_tok = zs_model_linear_flops_per_token(ctx->model);
    for (int i = 0; i < L.ndocs; i++) {
        int d = order[i];
        zs_attn_block b = {d, 0, L.len[d], 0, L.len[d]};
        double w = zs_cost_attn(ctx->cost, &b, 1, heads, 0) +
                   zs_cost_gemm(ctx->cost, L.len[d], lin_per_tok / (2.0 * ctx->model->hidden),
                                ctx->model->hidden) /
                       (double)tp;
        int best = -1;
        for (int sl = 0; sl < nslots; sl++)
            if (tok[sl] + L.len[d] <= cap && (best < 0 || load[sl] < load[best]))
                best = sl;
        if (best < 0) {
            char w2[64];
            snprintf(w2, sizeof w2, "document %d", d);
            rc = zs_err_set(e, ZS_EINPUT, w2, "use more GPUs or a smaller batch",
                            "no GPU has room left for this document (%d tokens; capacity %lld "
                            "tokens per GPU)",
                            L.len[d], (long long)cap);
            goto out;
        }
        L.slot_of[d] = best;
        load[best] += w;
        tok[best] += L.len[d];
    }
    zs_schedule_set_docs(s, L.len, L.ndocs);
    for (int d = 0; d < L.ndocs; d++) {
        int rank = L.slot_of[d] * (int)tp;
        zs_schedule_add_piece(s, d, 0, L.len[d], rank, ZS_LAYOUT_ATTN, 0);
        zs_schedule_add_piece(s, d, 0, L.len[d], rank, ZS_LAYOUT_LINEAR, 0);
    }
    if ((rc = zs_schedule_check(s, e)))
        goto out;
    zs_iter_spec spec = {.dims = {(int)tp, 1, 1, nslots},
                         .micro_batches = 1,
                         .linear_tokens = tok,
                         .recompute = mc.recompute,
                         .zero_stage = mc.zero_stage,
                         .seed = ctx->seed,
                         .emit_attn = emit,
                         .arg = &L,
                         .fsdp = mc.fsdp};
    rc = zs_iter_build(s, ctx->cost, &spec, e);
out:
    free(L.len);
    free(L.slot_of);
    free(order);
    free(load);
    free(tok);
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

static const zs_opt_spec *const options[] = {&zs_opt_tp, &opt_split_long, NULL};

const zs_planner_ops zs_planner_local = {
    .name = "local",
    .summary = "every document whole on the least-loaded GPU (DP only, no CP)",
    .options = options,
    .plan = plan};
