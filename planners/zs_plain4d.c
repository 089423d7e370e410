/* The `plain-4d` planner: WLB-LLM's baseline. Its loader (the batcher
 * hook, lower/zs_cutload.h) concatenates documents and cuts the stream into
 * context windows of exactly `window` tokens, splitting a document at a
 * window boundary; each window is one micro-batch, one packed sequence on a
 * CP group, sharded per sequence (2 CP zigzag chunks of the padded sequence,
 * regardless of document boundaries), under TP x CP x PP x DP with 1F1B
 * pipelining. A batch that arrives packed (zs_batch.micro_of) keeps its
 * packing; an unpacked one (a batch given directly, e.g. by a test) is
 * packed in loader order without cutting, since a planner cannot split the
 * documents of the batch it is given.
 * Options: tp, cp, pp, window, micro (see zs_plan4d.h); sharding=seq|doc|
 * adaptive (default seq: Plain-4D; doc and adaptive measure WLB-LLM's CP
 * techniques alone on plain packing, its breakdown); lora=R: LoRA
 * fine-tuning with frozen base weights (zs_iter_spec.lora), which
 * `validate --runs --simulate` prices NeMo's lora rows with. */
#include <stdlib.h>

#include "zs_cutload.h"
#include "zs_plan4d.h"
#include "zs_pack.h"

/* The values in the order of modes[] in plan(). */
static const zs_opt_spec opt_sharding = {.key = "sharding",
                                         .type = ZS_OPT_ENUM,
                                         .values = "seq|doc|adaptive",
                                         .def = 0,
                                         .help = "CP sharding: per-sequence (Plain-4D), "
                                                 "per-document, or per micro-batch the faster"};

static int plan(const zs_plan_ctx *ctx, const zs_batch *b, zs_schedule **out, zs_plan_report *rep,
                zs_err *e)
{
    zs_p4d o;
    int sh;
    int rc = zs_p4d_options_lora(ctx, "plain-4d", &o, e);
    if (!rc)
        rc = zs_opt_enum(ctx->opts, &opt_sharding, &sh, e);
    if (rc)
        return rc;
    static const zs_p4d_shard modes[] = {ZS__SHARD_SEQ, ZS__SHARD_DOC, ZS__SHARD_ADAPTIVE};
    if (b->micro_of) {
        zs_plan_report_note(rep, "concatenate-and-cut loader: %d windows of %d tokens", b->nmicro,
                            o.window);
        return zs_p4d_lower(ctx, b, &o, b->micro_of, b->nmicro, modes[sh], out, rep, e);
    }
    if ((rc = zs_p4d_check_window(b, o.window, e)))
        return rc;
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1));
    if (!seq)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int32_t n = zs_pack_plain(b->len, b->ndocs, o.window, seq);
    zs_plan_report_note(rep, "loader-order packing into %d sequences of at most %d tokens", n,
                        o.window);
    rc = zs_p4d_lower(ctx, b, &o, seq, n, modes[sh], out, rep, e);
    free(seq);
    return rc;
}

/* The concatenate-and-cut loader: nmicro full windows a batch. */
static int batcher(const zs_plan_ctx *ctx, zs_doc_stream docs, zs_batch_shape *shape,
                   zs_batcher **out, zs_err *e)
{
    (void)shape;
    zs_p4d o;
    int nmicro;
    int rc = zs_p4d_loader(ctx, "plain-4d", 1, &o, &nmicro, e);
    if (rc)
        return rc;
    zs_cutload_cfg cc = {nmicro, o.window, 0, {NULL, NULL}};
    return zs_batcher_cut_new(docs, &cc, NULL, out, e);
}

static const zs_opt_spec *const options[] = {ZS__4D_OPTIONS, &opt_sharding, &zs_p4d_opt_lora, NULL};

const zs_planner_ops zs_planner_plain4d = {
    .name = "plain-4d",
    .summary = "4D parallel (TP, CP, PP 1F1B, DP), concatenate-and-cut loader (full windows, "
               "documents split at window boundaries), per-sequence CP sharding",
    .options = options,
    .plan = plan,
    .batcher = batcher};
