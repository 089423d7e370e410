/* The `plain-4d` planner: WLB-LLM's baseline. Documents are packed into
 * context-window micro-batches in loader order (zs_pack_plain), each
 * micro-batch is one packed sequence on a CP group, sharded per sequence
 * (2 CP zigzag chunks of the padded sequence, regardless of document
 * boundaries), under TP x CP x PP x DP with 1F1B pipelining. A batch that
 * arrives packed (zs_batch.micro_of) keeps its packing.
 * Options: tp, cp, pp, window, micro (see zs_plan4d.h). */
#include <stdlib.h>

#include "zs_plan4d.h"
#include "zs_wlb_pack.h"

static int plan(const zs_plan_ctx *ctx, const zs_batch *b, zs_schedule **out, zs_plan_report *rep,
                zs_err *e)
{
    zs__4d o;
    int rc = zs__4d_options(ctx, "plain-4d", &o, e);
    if (rc)
        return rc;
    if (b->micro_of)
        return zs__4d_lower(ctx, b, &o, b->micro_of, b->nmicro, ZS__SHARD_SEQ, out, rep, e);
    if ((rc = zs__4d_check_window(b, o.window, e)))
        return rc;
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1));
    if (!seq)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int32_t n = zs_pack_plain(b->len, b->ndocs, o.window, seq);
    zs_plan_report_note(rep, "loader-order packing into %d sequences of at most %d tokens", n,
                        o.window);
    rc = zs__4d_lower(ctx, b, &o, seq, n, ZS__SHARD_SEQ, out, rep, e);
    free(seq);
    return rc;
}

static int batcher(const zs_plan_ctx *ctx, zs_doc_stream docs, zs_batch_shape *shape,
                   zs_batcher **out, zs_err *e)
{
    (void)docs;
    (void)out;
    return zs__4d_shape(ctx, "plain-4d", shape, e);
}

static const zs_opt_spec *const options[] = {ZS__4D_OPTIONS, NULL};

const zs_planner_ops zs_planner_plain4d = {
    .name = "plain-4d",
    .summary = "4D parallel (TP, CP, PP 1F1B, DP), loader-order packing, per-sequence CP sharding",
    .options = options,
    .plan = plan,
    .batcher = batcher};
