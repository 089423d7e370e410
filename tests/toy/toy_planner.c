/* A toy method, for tests/test_extend.c: what adding a method takes. One
 * zs_planner_ops row (name, summary, options, plan) and a plan function
 * that places documents and lowers them through the iteration builder
 * (lower/zs_iteration.h), which writes everything but attention. Here
 * documents are dealt round-robin, whole (document d on data-parallel slot
 * d mod slots), so attention needs no transfers and the linear modules
 * keep their tokens where attention has them. */
#include <stdlib.h>

#include "toy.h"
#include "zs_iteration.h"

typedef struct toy {
    const zs_cost *cost;
    const zs_batch *batch;
    int nslots;
} toy;

/* The attention of one pass on every slot: one op over its documents. */
static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    toy *T = arg;
    zs_schedule *s = zs_iter_schedule(it);
    zs_attn_block *blk = malloc(sizeof *blk * (size_t)(T->batch->ndocs + 1));
    if (!blk)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int sl = 0; sl < T->nslots; sl++) {
        int n = 0;
        for (int d = sl; d < T->batch->ndocs; d += T->nslots)
            blk[n++] = (zs_attn_block){d, 0, T->batch->len[d], 0, T->batch->len[d]};
        int64_t op = zs_iter_entry(it, sl);
        if (n > 0) {
            double t = zs_cost_attn(T->cost, blk, n, zs_iter_heads(it), backward);
            op = zs_sched_attn(s, zs_iter_rank(it, stage, sl), ZS_STREAM_COMPUTE,
                               backward ? "toy-attn-bwd" : "toy-attn-fwd", backward, blk, n,
                               zs_iter_heads(it), t, &op, 1);
        }
        zs_iter_set_exit(it, sl, op);
    }
    free(blk);
    return zs_schedule_check(s, e);
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    int nslots = zs_cluster_gpus(ctx->cluster);
    toy T = {ctx->cost, batch, nslots};
    zs_schedule *s = zs_schedule_new(nslots);
    int64_t *lin = calloc((size_t)nslots, sizeof *lin);
    int rc = s && lin ? ZS_OK : zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    if (!rc) {
        zs_schedule_set_docs(s, batch->len, batch->ndocs);
        for (int d = 0; d < batch->ndocs; d++) {
            zs_schedule_add_piece(s, d, 0, batch->len[d], d % nslots, ZS_LAYOUT_ATTN, 0);
            zs_schedule_add_piece(s, d, 0, batch->len[d], d % nslots, ZS_LAYOUT_LINEAR, 0);
            lin[d % nslots] += batch->len[d];
        }
        zs_iter_spec spec = {{1, 1, 1, nslots},
                             1,
                             lin,
                             ctx->mem.recompute,
                             ctx->mem.zero_stage,
                             ctx->seed,
                             emit,
                             &T,
                             NULL,
                             0,
                             ctx->mem.fsdp};
        rc = zs_iter_build(s, ctx->cost, &spec, e);
    }
    free(lin);
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    zs_plan_report_note(rep, "toy: %d documents dealt round-robin", batch->ndocs);
    *out = s;
    return ZS_OK;
}

static const zs_opt_spec *const options[] = {NULL};

const zs_planner_ops zs_toy_planner = {.name = "toy-rr",
                                       .summary = "documents dealt round-robin, whole (a test)",
                                       .options = options,
                                       .plan = plan};
