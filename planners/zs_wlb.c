/* The `wlb-llm` planner: WLB-LLM (Wang et al., OSDI 2025) under 4D
 * parallelism. Its two levels:
 *   - pipeline level: variable-length packing into micro-batches balanced
 *     by predicted W_a + W_l, with outlier documents delayed in queues
 *     across iterations, from a global batch of at most PP x DP windows;
 *     loader=cut gives it the pieces the baselines' concatenate-and-cut
 *     loader makes, exactly PP x DP windows (their tokens and masks). The
 *     queues need state across batches, so they live in the packer
 *     (lower/zs_pack.h, usable as the batcher); a batch it packed carries
 *     micro_of and is lowered as is. An unpacked batch is packed here by
 *     the same variable-length step (no queues, nothing can wait for a
 *     later batch: documents that fit no micro-batch within smax get extra
 *     micro-batches, and the notes say how many);
 *   - CP level: per-document sharding without padding, chosen per
 *     micro-batch against per-sequence sharding by predicted kernel latency
 *     (tile padding included), or forced with sharding=doc|seq.
 * Options: tp, cp, pp, window, micro (zs_plan4d.h); smax=N (default
 * min(2 x window, what the CP group's memory holds)); sharding=adaptive|
 * doc|seq; queues=N outlier queues (default 2, the paper's; 0 is the
 * packer without delays, DistCA's "WLB-ideal"); loader=whole|cut (default
 * whole, as every other method's batcher; cut to compare with plain-4d and
 * fixed-4d at equal training math); warmup=N batches packed
 * and dropped before the first one planned (default 32), so a run measures
 * the queues at steady state: from empty queues no outlier trains until a
 * queue holds one document per micro-batch, and a short run would train
 * only the cheap documents. Its batcher hook is the packer, so `simulate`,
 * `compare`, `plan` and the runner all plan the batches the packer makes. */
#include <stdlib.h>
#include <string.h>

#include "zs_plan4d.h"
#include "zs_pack.h"

static const zs_opt_spec opt_smax = {.key = "smax",
                                     .type = ZS_OPT_INT,
                                     .min = 1,
                                     .max = INT32_MAX,
                                     .computed = "min(2 x window, CP group memory)",
                                     .help = "longest micro-batch in tokens"};
static const zs_opt_spec opt_queues = {.key = "queues",
                                       .type = ZS_OPT_INT,
                                       .min = 0,
                                       .max = ZS_WLB_MAX_QUEUES,
                                       .def = 2,
                                       .help = "outlier queues of the packer (0: no delays)"};
static const zs_opt_spec opt_warmup = {.key = "warmup",
                                       .type = ZS_OPT_INT,
                                       .min = 0,
                                       .max = 100000,
                                       .def = 32,
                                       .help = "batches packed and dropped before the first "
                                               "(queues at steady state)"};
static const zs_opt_spec opt_loader = {
    .key = "loader",
    .type = ZS_OPT_ENUM,
    .values = "whole|cut",
    .def = 0,
    .help = "documents whole as the trace gives them (cut only above the window; a batch holds "
            "at most PP x DP windows), or the 4D baselines' concatenate-and-cut pieces "
            "(Plain-4D's tokens and masks; exactly PP x DP windows a batch)"};
/* The values in the order of modes[] in plan(). */
static const zs_opt_spec opt_sharding = {.key = "sharding",
                                         .type = ZS_OPT_ENUM,
                                         .values = "adaptive|doc|seq",
                                         .def = 0,
                                         .help = "CP sharding: per micro-batch the faster, or "
                                                 "always per-document or per-sequence"};

static int plan(const zs_plan_ctx *ctx, const zs_batch *b, zs_schedule **out, zs_plan_report *rep,
                zs_err *e)
{
    zs_p4d o;
    long smax;
    int rc = zs_p4d_options(ctx, "wlb-llm", &o, e);
    if (rc)
        return rc;
    int sh, cut;
    long queues, warmup;
    if ((rc = zs_opt_enum(ctx->opts, &opt_sharding, &sh, e)) ||
        (rc = zs_opt_int(ctx->opts, &opt_queues, &queues, e)) ||
        (rc = zs_opt_int(ctx->opts, &opt_warmup, &warmup, e)) ||
        (rc = zs_opt_enum(ctx->opts, &opt_loader, &cut, e)))
        return rc;
    static const zs_p4d_shard modes[] = {ZS__SHARD_ADAPTIVE, ZS__SHARD_DOC, ZS__SHARD_SEQ};
    zs_p4d_shard mode = modes[sh];
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1));
    if (!seq)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int32_t n = o.micro > 0 ? o.micro * o.dims.dp : zs_pack_plain(b->len, b->ndocs, o.window, seq);
    int micro = o.micro > 0 ? o.micro : (n + o.dims.dp - 1) / o.dims.dp;
    int inflight = o.dims.pp < micro ? o.dims.pp : micro;
    long mem_cap = o.max_tokens / inflight * o.dims.cp;
    long def = 2L * o.window < mem_cap ? 2L * o.window : mem_cap;
    rc = zs_opt_int_def(ctx->opts, &opt_smax, def, &smax, e);
    if (rc || b->micro_of) {
        if (!rc) {
            zs_plan_report_note(rep,
                                "packer with %ld outlier queue(s) after %ld warm-up batches, %s: "
                                "%d micro-batches; tokens waited %.2f iterations on average",
                                queues, warmup,
                                cut ? "the 4D baselines' concatenate-and-cut pieces (loader=cut)"
                                    : "documents whole (loader=whole)",
                                b->nmicro, b->wait_iters);
            rc = zs_p4d_lower(ctx, b, &o, b->micro_of, b->nmicro, mode, out, rep, e);
        }
        free(seq);
        return rc;
    }
    for (int32_t d = 0; d < b->ndocs; d++)
        if (b->len[d] > smax) {
            char w[64];
            snprintf(w, sizeof w, "document %d of the batch", d);
            free(seq);
            return zs_err_set(e, ZS_EINPUT, w,
                              "raise smax (memory permitting), use more CP, or cut documents at "
                              "the window (--long split)",
                              "a document of %d tokens is longer than smax=%ld", b->len[d], smax);
        }
    zs_p4d_doc_cost dc = {ctx, &o};
    zs_pack_cost cost = {zs_p4d_doc_cost_fn, &dc};
    int left = zs_pack_var(b->len, b->ndocs, (int32_t)smax, n, cost, seq, e);
    int32_t total = n;
    if (left > 0) {
        /* Nothing can wait for a later batch here: the rest gets extra
         * sequences, in order, up to smax each. */
        int32_t *idx = malloc(sizeof(int32_t) * (size_t)left), *len = NULL, *mo = NULL;
        len = malloc(sizeof(int32_t) * (size_t)left);
        mo = malloc(sizeof(int32_t) * (size_t)left);
        if (!idx || !len || !mo)
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        int k = 0;
        for (int32_t d = 0; d < b->ndocs && !rc; d++)
            if (seq[d] < 0) {
                idx[k] = d;
                len[k++] = b->len[d];
            }
        if (!rc) {
            int32_t extra = zs_pack_plain(len, left, (int32_t)smax, mo);
            for (int i = 0; i < left; i++)
                seq[idx[i]] = n + mo[i];
            total += extra;
            zs_plan_report_note(rep,
                                "%d documents fit no micro-batch within smax=%ld: %d extra "
                                "micro-batches (the packer would carry them to the next batch)",
                                left, smax, extra);
        }
        free(idx);
        free(len);
        free(mo);
    } else if (left < 0)
        rc = left;
    if (!rc) {
        zs_plan_report_note(rep,
                            "variable-length packing into %d micro-batches of at most %ld tokens "
                            "(no outlier queues inside one batch)",
                            n, smax);
        rc = zs_p4d_lower(ctx, b, &o, seq, total, mode, out, rep, e);
    }
    free(seq);
    return rc;
}

/* The packer's cost per document needs the options it was read with for
 * as long as the packer lives, so the packer owns them, and the stream
 * that cuts documents (longer than the window, or with loader=cut at the
 * window boundaries of the token stream, as the baselines' loader does). */
typedef struct pack_cost {
    zs_p4d o;
    zs_p4d_doc_cost dc;
    zs_doc_stream src;
    int32_t rem; /* tokens of the document being cut still to hand out */
    int64_t pos; /* tokens of the stream handed out so far */
    int cut;     /* loader=cut: cut at every window boundary of the stream */
    int64_t id;
} pack_cost;

/* A document longer than the context window reaches the packer as pieces
 * of at most a window (the packer then never sees one longer than its
 * smax). With loader=cut it gets the pieces the baselines' concatenate-
 * and-cut loader makes (lower/zs_cutload.h): the token stream is cut every
 * `window` tokens and a document crossing a cut is split there, so
 * WLB-LLM, Plain-4D and Fixed-4D train the same tokens under the same
 * attention masks and differ only in how they arrange them, as a speedup
 * at equal training math requires (whole documents: 24% more attention
 * work per token than the baselines' pieces on wlb-meta-128k at 128K). */
static int cut_next(void *arg, int32_t *len, int64_t *id)
{
    pack_cost *pc = arg;
    if (pc->rem == 0) {
        if (!pc->src.next(pc->src.arg, &pc->rem, &pc->id))
            return 0;
        if (pc->rem < 1) {
            *len = pc->rem;
            *id = pc->id;
            pc->rem = 0;
            return 1;
        }
    }
    int32_t room = pc->cut ? pc->o.window - (int32_t)(pc->pos % pc->o.window) : pc->o.window;
    *len = pc->rem < room ? pc->rem : room;
    *id = pc->id;
    pc->rem -= *len;
    pc->pos += *len;
    return 1;
}

/* WLB-LLM's loader: nmicro windows a batch (zs_p4d_loader) through its
 * packer with two outlier queues. */
static int batcher(const zs_plan_ctx *ctx, zs_doc_stream docs, zs_batch_shape *shape,
                   zs_batcher **out, zs_err *e)
{
    (void)shape;
    pack_cost *pc = calloc(1, sizeof *pc);
    if (!pc)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int nmicro;
    long queues, warmup;
    int rc = zs_p4d_loader(ctx, "wlb-llm", 0, &pc->o, &nmicro, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_queues, &queues, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_warmup, &warmup, e);
    if (!rc)
        rc = zs_opt_enum(ctx->opts, &opt_loader, &pc->cut, e);
    if (rc) {
        free(pc);
        return rc;
    }
    pc->dc = (zs_p4d_doc_cost){ctx, &pc->o};
    zs_wlb_pack_cfg wc;
    memset(&wc, 0, sizeof wc);
    wc.nmicro = nmicro;
    wc.window = pc->o.window;
    wc.nqueues = (int)queues;
    wc.cut_end = pc->cut;
    wc.cost = (zs_pack_cost){zs_p4d_doc_cost_fn, &pc->dc};
    pc->src = docs;
    zs_doc_stream cut = {cut_next, pc};
    return zs_batcher_wlb_new_warm(cut, &wc, (int)warmup, pc, out, e);
}

static const zs_opt_spec *const options[] = {
    ZS__4D_OPTIONS, &opt_smax, &opt_sharding, &opt_queues, &opt_warmup, &opt_loader, NULL};

const zs_planner_ops zs_planner_wlb = {
    .name = "wlb-llm",
    .summary = "WLB-LLM: variable-length packing (outlier queues in its packer), per-document "
               "or per-sequence CP sharding chosen per micro-batch, 4D parallel",
    .options = options,
    .plan = plan,
    .batcher = batcher};
