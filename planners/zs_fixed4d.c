/* The `fixed-4d` planner: WLB-LLM's second baseline. Its loader is
 * Plain-4D's concatenate-and-cut loader (full windows, the same tokens per
 * iteration) followed by fixed-length greedy repacking: the pieces of
 * repack_window global batches are repacked into windows of exactly
 * `window` tokens, longest first into the window with the least predicted
 * work that has room, cutting a piece that fits no window whole
 * (lower/zs_cutload.h); one static CP sharding is used for the whole batch:
 * per-sequence or per-document, whichever the cost model predicts faster in
 * total.
 *
 * The batcher hook does the repacking (k > 1 needs several batches), so the
 * planner keeps the packing a batch carries (zs_batch.micro_of). An
 * unpacked batch (given directly, e.g. by a test) is repacked inside it
 * without cutting (zs_pack_fixed); repack_window > 1 on an unpacked batch
 * is an error that says so. Options: tp, cp, pp, window, micro
 * (zs_plan4d.h), repack_window. */
#include <stdlib.h>

#include "zs_cutload.h"
#include "zs_plan4d.h"
#include "zs_pack.h"

static const zs_opt_spec opt_repack_window = {
    .key = "repack_window",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = 1024,
    .def = 1,
    .help = "batches repacked together (> 1 needs a batch packed by zs_pack_fixed_window)"};

static int plan(const zs_plan_ctx *ctx, const zs_batch *b, zs_schedule **out, zs_plan_report *rep,
                zs_err *e)
{
    zs_p4d o;
    long rw;
    int rc = zs_p4d_options(ctx, "fixed-4d", &o, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_repack_window, &rw, e);
    if (rc)
        return rc;
    if (b->micro_of) {
        zs_plan_report_note(rep,
                            "fixed-length greedy repacking over %ld batch(es) by the loader: %d "
                            "windows of %d tokens",
                            rw, b->nmicro, o.window);
        return zs_p4d_lower(ctx, b, &o, b->micro_of, b->nmicro, ZS__SHARD_STATIC, out, rep, e);
    }
    if (rw > 1)
        return zs_err_set(e, ZS_EINPUT, "repack_window",
                          "repack at the batcher with zs_pack_fixed_window, or use repack_window=1",
                          "the planner sees one batch; repacking over %ld batches needs the "
                          "batches packed before planning",
                          rw);
    if ((rc = zs_p4d_check_window(b, o.window, e)))
        return rc;
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1));
    if (!seq)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    /* As many micro-batches as loader order needs (like for like with
     * plain-4d), or micro x dp when given. */
    int32_t n = o.micro > 0 ? o.micro * o.dims.dp : zs_pack_plain(b->len, b->ndocs, o.window, seq);
    zs_p4d_doc_cost dc = {ctx, &o};
    zs_pack_cost cost = {zs_p4d_doc_cost_fn, &dc};
    int32_t used = n;
    rc = zs_pack_fixed(b->len, b->ndocs, o.window, n, cost, seq, &used, e);
    if (!rc) {
        zs_plan_report_note(rep,
                            "fixed-length greedy repacking into %d sequences of at most %d "
                            "tokens",
                            used, o.window);
        if (used > n)
            zs_plan_report_note(rep, "%d more sequences than the %d planned were needed", used - n,
                                n);
        rc = zs_p4d_lower(ctx, b, &o, seq, used, ZS__SHARD_STATIC, out, rep, e);
    }
    free(seq);
    return rc;
}

/* The packing cost needs the options it was read with for as long as the
 * loader lives, so the loader owns them. */
typedef struct pack_cost {
    zs_p4d o;
    zs_p4d_doc_cost dc;
} pack_cost;

/* The concatenate-and-cut loader with fixed-length greedy repacking over
 * repack_window batches. */
static int batcher(const zs_plan_ctx *ctx, zs_doc_stream docs, zs_batch_shape *shape,
                   zs_batcher **out, zs_err *e)
{
    (void)shape;
    pack_cost *pc = calloc(1, sizeof *pc);
    if (!pc)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int nmicro;
    long rw;
    int rc = zs_p4d_loader(ctx, "fixed-4d", 0, &pc->o, &nmicro, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_repack_window, &rw, e);
    if (rc) {
        free(pc);
        return rc;
    }
    pc->dc = (zs_p4d_doc_cost){ctx, &pc->o};
    zs_cutload_cfg cc = {nmicro, pc->o.window, (int)rw, {zs_p4d_doc_cost_fn, &pc->dc}};
    return zs_batcher_cut_new(docs, &cc, pc, out, e);
}

static const zs_opt_spec *const options[] = {ZS__4D_OPTIONS, &opt_repack_window, NULL};

const zs_planner_ops zs_planner_fixed4d = {
    .name = "fixed-4d",
    .summary = "4D parallel, concatenate-and-cut loader with fixed-length greedy repacking, one "
               "static CP sharding (the faster)",
    .options = options,
    .plan = plan,
    .batcher = batcher};
