/* Shared setup of the context-parallel baselines: see zs_cpgroup.h. */
#include "zs_cpgroup.h"

#include <stdlib.h>
#include <string.h>

#include "zs_sort.h"

int64_t zs_cpg_fp_zigzag(int32_t len, int cp)
{
    int64_t chunk = ((int64_t)len + 2 * cp - 1) / (2 * cp);
    return 2 * chunk;
}

int64_t zs_cpg_fp_even(int32_t len, int cp)
{
    return ((int64_t)len + cp - 1) / cp;
}

double zs_cpg_kv_bytes(const zs_model *m, int tp, int64_t tokens)
{
    int kv = m->kv_heads / tp > 0 ? m->kv_heads / tp : 1;
    return (double)tokens * 2.0 * kv * m->head_dim * m->dtype_bytes;
}

void zs_cpg_free(zs_cpg *c)
{
    if (!c)
        return;
    free(c->gdocs);
    free(c->gstart);
    free(c->gtokens);
    memset(c, 0, sizeof *c);
}

int zs_cpg_overflow(const zs_cpg *c, int g, int64_t tokens, zs_err *e)
{
    char w[64];
    snprintf(w, sizeof w, "CP group %d", g);
    return zs_err_set(e, ZS_EINPUT, w,
                      "use a larger cp, recomputation, a higher ZeRO stage or a smaller batch",
                      "a GPU would hold %lld tokens (padding included) but only %ld fit",
                      (long long)tokens, c->cap);
}

static int layout(const zs_plan_ctx *ctx, const zs_opt_spec *cp_row, long cp_default, zs_cpg *c,
                  zs_err *e)
{
    long tp, cp;
    int rc = zs_plan_opt_tp(ctx, &zs_opt_tp, 0, &tp, e);
    if (rc)
        return rc;
    int nranks = zs_cluster_gpus(ctx->cluster);
    int nslots = nranks / (int)tp;
    long def = cp_default < nslots ? cp_default : nslots;
    if ((rc = zs_opt_int_def(ctx->opts, cp_row, def, &cp, e)))
        return rc;
    if (nslots % cp != 0)
        return zs_err_set(
            e, ZS_EINPUT, "cp", "use a CP degree that divides the number of TP groups (GPUs / tp)",
            "cp=%ld does not divide the %d TP groups of %d GPUs (tp=%ld)", cp, nslots, nranks, tp);
    c->tp = (int)tp;
    c->cp = (int)cp;
    c->nslots = nslots;
    c->dp = nslots / (int)cp;
    c->nranks = nranks;
    return ZS_OK;
}

int zs_cpg_init(const zs_plan_ctx *ctx, const zs_batch *b, const zs_opt_spec *cp_row,
                long cp_default, zs_cpg_footprint_fn fp, zs_cpg *out, zs_err *e)
{
    zs_cpg c;
    memset(&c, 0, sizeof c);
    int rc = layout(ctx, cp_row, cp_default, &c, e);
    if (rc)
        return rc;
    c.mc = ctx->mem;
    c.mc.tp = c.tp;
    c.mc.pp = 1;
    c.mc.dp = c.nslots; /* CP ranks hold weight replicas too: ZeRO shards over dp x cp */
    long cap;
    if ((rc = zs_mem_token_capacity(ctx->model, &ctx->cluster->gpu, &c.mc,
                                    "use ZeRO sharding, recomputation, tensor parallelism or a "
                                    "larger GPU",
                                    &cap, e)))
        return rc;
    c.cap = cap;
    c.ndocs = b->ndocs;
    c.len = b->len;
    for (int32_t d = 0; d < b->ndocs; d++)
        if (fp(b->len[d], c.cp) > c.cap) {
            char w[64];
            snprintf(w, sizeof w, "document %d of the batch", d);
            return zs_err_set(e, ZS_EINPUT, w,
                              "use a larger cp, recomputation, a higher ZeRO stage or a "
                              "shorter context",
                              "document of %d tokens needs %lld tokens per GPU over a CP group "
                              "of %d GPUs, but one GPU holds %ld",
                              b->len[d], (long long)fp(b->len[d], c.cp), c.cp, c.cap);
        }
    int32_t *order = zs_order_longest_first(b->len, b->ndocs);
    int *group_of = malloc(sizeof(int) * (size_t)b->ndocs);
    int64_t *foot = calloc((size_t)c.dp, sizeof(int64_t));
    c.gdocs = malloc(sizeof(int32_t) * (size_t)b->ndocs);
    c.gstart = calloc((size_t)c.dp + 1, sizeof(int));
    c.gtokens = calloc((size_t)c.dp, sizeof(int64_t));
    if (!order || !group_of || !foot || !c.gdocs || !c.gstart || !c.gtokens) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int32_t i = 0; i < b->ndocs; i++) {
        int32_t d = order[i];
        int64_t f = fp(b->len[d], c.cp);
        int best = -1;
        for (int g = 0; g < c.dp; g++)
            if (foot[g] + f <= c.cap && (best < 0 || c.gtokens[g] < c.gtokens[best]))
                best = g;
        if (best < 0) {
            char w[64];
            snprintf(w, sizeof w, "document %d of the batch", d);
            rc = zs_err_set(e, ZS_EINPUT, w, "use more GPUs, a larger cp or a smaller batch",
                            "no CP group has room left for this document (%d tokens; %ld tokens "
                            "per GPU, %d GPUs per group)",
                            b->len[d], c.cap, c.cp);
            goto out;
        }
        group_of[d] = best;
        foot[best] += f;
        c.gtokens[best] += b->len[d];
        c.gstart[best + 1]++;
    }
    for (int g = 0; g < c.dp; g++)
        c.gstart[g + 1] += c.gstart[g];
    /* Each group keeps its documents in batch order (the packed order). */
    for (int g = 0; g < c.dp; g++)
        foot[g] = c.gstart[g];
    for (int32_t d = 0; d < b->ndocs; d++)
        c.gdocs[foot[group_of[d]]++] = d;
out:
    free(order);
    free(group_of);
    free(foot);
    if (rc) {
        zs_cpg_free(&c);
        return rc;
    }
    *out = c;
    return ZS_OK;
}

void zs_cpg_note(const zs_cpg *c, zs_plan_report *rep, const char *method_layout)
{
    zs_plan_report_note(rep,
                        "layout tp=%d x cp=%d x dp=%d (CP groups of %d consecutive GPUs, inside "
                        "nodes first); %s",
                        c->tp, c->cp, c->dp, c->cp * c->tp, method_layout);
    zs_plan_report_note(rep,
                        "batch split over the %d DP groups longest first to the group with the "
                        "fewest tokens; capacity %ld tokens per GPU",
                        c->dp, c->cap);
}

int zs_cpg_build(const zs_cpg *c, const zs_plan_ctx *ctx, zs_schedule *s, const int64_t *lin,
                 int (*emit)(void *, zs_iter *, int, int, int, zs_err *), void *arg, zs_err *e)
{
    zs_iter_spec spec = {{c->tp, c->cp, 1, c->dp},
                         1,
                         lin,
                         c->mc.recompute,
                         c->mc.zero_stage,
                         ctx->seed,
                         emit,
                         arg,
                         NULL,
                         0,
                         c->mc.fsdp};
    return zs_iter_build(s, ctx->cost, &spec, e);
}

int zs_cpg_finish(zs_cpg *c, zs_schedule *s, int rc, zs_schedule **out)
{
    zs_cpg_free(c);
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

int zs_cpg_schedule(const zs_cpg *c, zs_schedule **out, int *cp_stream, zs_err *e)
{
    zs_schedule *s = zs_schedule_new(c->nranks);
    if (!s)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    zs_schedule_set_docs(s, c->len, c->ndocs);
    int stream = zs_schedule_add_stream(s, "cp");
    int rc = zs_schedule_check(s, e);
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *cp_stream = stream;
    *out = s;
    return ZS_OK;
}

int zs_cpg_piece(zs_schedule *s, const zs_cpg *c, int32_t doc, int32_t t0, int32_t t1, int slot,
                 zs_err *e)
{
    if (t1 <= t0)
        return ZS_OK;
    int rank = zs_cpg_rank(c, slot);
    zs_schedule_add_piece(s, doc, t0, t1, rank, ZS_LAYOUT_ATTN, 0);
    zs_schedule_add_piece(s, doc, t0, t1, rank, ZS_LAYOUT_LINEAR, 0);
    return zs_schedule_check(s, e);
}

int zs_cpg_place_packed(zs_schedule *s, const zs_cpg *c, const int32_t *docs, int n, int shards,
                        int first, int micro, int64_t *slot_tokens, zs_err *e)
{
    int64_t T = 0, pos = 0;
    for (int i = 0; i < n; i++)
        T += c->len[docs[i]];
    int64_t base = T / shards, rem = T % shards, end = base + (rem > 0);
    int k = 0, rc = ZS_OK;
    for (int i = 0; i < n && !rc; i++) {
        int32_t d = docs[i];
        int64_t d0 = pos, d1 = pos + c->len[d];
        while (pos < d1 && !rc) {
            while (pos >= end) { /* next shard */
                k++;
                end += base + (k < rem);
            }
            int64_t stop = d1 < end ? d1 : end;
            int rank = zs_cpg_rank(c, first + k);
            zs_schedule_add_piece(s, d, (int32_t)(pos - d0), (int32_t)(stop - d0), rank,
                                  ZS_LAYOUT_ATTN, micro);
            zs_schedule_add_piece(s, d, (int32_t)(pos - d0), (int32_t)(stop - d0), rank,
                                  ZS_LAYOUT_LINEAR, micro);
            slot_tokens[first + k] += stop - pos;
            pos = stop;
            rc = zs_schedule_check(s, e);
        }
    }
    return rc;
}

int zs_cpg_local_attn(zs_iter *it, int stage, int slot, const int32_t *docs, int n, int heads,
                      int backward, int64_t *dep, zs_err *e)
{
    if (n < 1)
        return ZS_OK;
    zs_schedule *s = zs_iter_schedule(it);
    zs_attn_block *blk = malloc(sizeof(zs_attn_block) * (size_t)n);
    if (!blk)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0; i < n; i++)
        blk[i] = (zs_attn_block){docs[i], 0, s->doc_len[docs[i]], 0, s->doc_len[docs[i]]};
    if (heads <= 0)
        heads = zs_iter_heads(it);
    double t = zs_cost_attn(zs_iter_cost(it), blk, n, heads, backward);
    int64_t deps[1] = {*dep};
    *dep = zs_sched_attn(s, zs_iter_rank(it, stage, slot), ZS_STREAM_COMPUTE,
                         backward ? "attn-bwd" : "attn-fwd", backward, blk, n, heads, t, deps,
                         deps[0] >= 0);
    free(blk);
    return ZS_OK;
}
