/* The `wlb-llm` planner: WLB-LLM (Wang et al., OSDI 2025) under 4D
 * parallelism. Its two levels:
 *   - pipeline level: variable-length packing into micro-batches balanced
 *     by predicted W_a + W_l, with outlier documents delayed in queues
 *     across iterations. The queues need state across batches, so they
 *     live in the packer (core/zs_wlb_pack.h, usable as the batcher); a
 *     batch it packed carries micro_of and is lowered as is. An unpacked
 *     batch is packed here by the same variable-length step (no queues,
 *     nothing can wait for a later batch: documents that fit no micro-batch
 *     within smax get extra micro-batches, and the notes say how many);
 *   - CP level: per-document sharding without padding, chosen per
 *     micro-batch against per-sequence sharding by predicted kernel latency
 *     (tile padding included), or forced with sharding=doc|seq.
 * Options: tp, cp, pp, window, micro (zs_plan4d.h); smax=N (default
 * min(2 x window, what the CP group's memory holds)); sharding=adaptive|
 * doc|seq. */
#include <stdlib.h>
#include <string.h>

#include "zs_plan4d.h"
#include "zs_wlb_pack.h"

static int plan(const zs_plan_ctx *ctx, const zs_batch *b, zs_schedule **out, zs_plan_report *rep,
                zs_err *e)
{
    zs__4d o;
    long smax;
    int rc = zs__4d_options(ctx, "wlb-llm", &o, e);
    if (rc)
        return rc;
    const char *sh = zs_opts_str(ctx->opts, "sharding", "adaptive");
    zs__shard mode = strcmp(sh, "adaptive") == 0 ? ZS__SHARD_ADAPTIVE
                     : strcmp(sh, "doc") == 0    ? ZS__SHARD_DOC
                     : strcmp(sh, "seq") == 0    ? ZS__SHARD_SEQ
                                                 : (zs__shard)-1;
    if ((int)mode < 0)
        return zs_err_set(e, ZS_EINPUT, "sharding", "use sharding=adaptive, doc or seq",
                          "unknown CP sharding '%s'", sh);
    int32_t *seq = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1));
    if (!seq)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int32_t n = o.micro > 0 ? o.micro * o.dims.dp : zs_pack_plain(b->len, b->ndocs, o.window, seq);
    int micro = o.micro > 0 ? o.micro : (n + o.dims.dp - 1) / o.dims.dp;
    int inflight = o.dims.pp < micro ? o.dims.pp : micro;
    long mem_cap = o.max_tokens / inflight * o.dims.cp;
    long def = 2L * o.window < mem_cap ? 2L * o.window : mem_cap;
    rc = zs_opts_int(ctx->opts, "smax", def, 1, INT32_MAX, &smax, e);
    if (rc || b->micro_of) {
        if (!rc) {
            zs_plan_report_note(rep, "packing from the batch (%d micro-batches)", b->nmicro);
            rc = zs__4d_lower(ctx, b, &o, b->micro_of, b->nmicro, mode, out, rep, e);
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
    zs__4d_doc_cost dc = {ctx, &o};
    zs_pack_cost cost = {zs__4d_doc_cost_fn, &dc};
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
        rc = zs__4d_lower(ctx, b, &o, seq, total, mode, out, rep, e);
    }
    free(seq);
    return rc;
}

const zs_planner_ops zs_planner_wlb = {
    "wlb-llm",
    "WLB-LLM: variable-length packing (outlier queues in its packer), per-document or "
    "per-sequence CP sharding chosen per micro-batch, 4D parallel",
    "tp=N, cp=N, pp=N (defaults: WLB-LLM's Table 1 when model, window and GPU count match, "
    "else tp=min(8, GPUs per node), cp=2, pp=4); window=N (default 131072); micro=N "
    "(default: as many as loader order needs): micro-batches per DP rank; smax=N (default "
    "min(2 x window, CP group memory)): longest micro-batch; sharding=adaptive|doc|seq "
    "(default adaptive)",
    plan};
