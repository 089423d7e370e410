/* The `ulysses` planner: DeepSpeed-Ulysses sequence parallelism. Each CP
 * group's documents are packed into one sequence cut into cp contiguous
 * equal shards (the remainder tokens one each to the first ranks), which
 * every rank keeps for the linear modules. Attention turns the layout
 * around with all-to-alls over the group: Q, K and V go from "my tokens,
 * all heads" to "all tokens, heads/cp heads" (one all-to-all for the three,
 * DeepSpeed issues three of the same total size), every rank runs causal
 * attention over every whole document with its heads, and O goes back;
 * backward moves dO forward and dQ/dK/dV back the same way. The KV heads
 * are split too, so cp may not exceed the KV heads per GPU (an error
 * otherwise, naming the limit). Collective buffers are sized to the
 * group's largest shard (NCCL needs equal buffers). The attention pieces of
 * the plan are the sequence shards (where each token's Q/K/V is produced).
 * Options: cp=N (default 16, capped at the GPUs and KV heads), tp=N. */
#include <stdlib.h>

#include "zs_cpgroup.h"

static const zs_opt_spec opt_cp =
    ZS__CPB_OPT_CP("16, capped at the GPUs / tp and the KV heads per GPU",
                   "head-parallel degree, at most the KV heads per GPU");

typedef struct uly {
    zs_cpg c;
    int cp_stream;
    int64_t *shard; /* per slot: tokens of the packed sequence */
} uly;

static int64_t a2a(zs_schedule *s, int rank, int stream, const char *label, int grp, double bytes,
                   int64_t dep)
{
    int64_t d1[1] = {dep};
    return zs_sched_coll(s, rank, stream, label, grp, ZS_COLL_ALLTOALL, bytes, d1, dep >= 0);
}

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    uly *U = arg;
    const zs_cpg *c = &U->c;
    zs_schedule *s = zs_iter_schedule(it);
    const zs_model *m = &zs_iter_cost(it)->model;
    (void)micro;
    int maxdocs = 1;
    for (int g = 0; g < c->dp; g++)
        if (c->gstart[g + 1] - c->gstart[g] > maxdocs)
            maxdocs = c->gstart[g + 1] - c->gstart[g];
    zs_attn_block *blk = malloc(sizeof(zs_attn_block) * (size_t)maxdocs);
    int *ranks = malloc(sizeof(int) * (size_t)c->cp);
    int rc = ZS_OK;
    if (!blk || !ranks) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    int hq = zs_iter_heads(it), hkv = zs_iter_kv_heads(it), heads = hq / c->cp;
    double tok_q = (double)hq * m->head_dim * m->dtype_bytes;
    double tok_qkv = (double)(hq + 2 * hkv) * m->head_dim * m->dtype_bytes;
    for (int g = 0; g < c->dp; g++) {
        int n = 0;
        for (int i = c->gstart[g]; i < c->gstart[g + 1]; i++) {
            int d = c->gdocs[i];
            blk[n++] = (zs_attn_block){d, 0, s->doc_len[d], 0, s->doc_len[d]};
        }
        int64_t most = 0;
        for (int k = 0; k < c->cp; k++) {
            int sl = zs_cpg_slot(c, g, k);
            ranks[k] = zs_iter_rank(it, stage, sl);
            if (U->shard[sl] > most)
                most = U->shard[sl];
        }
        int grp = c->cp > 1 ? zs_schedule_group(s, ranks, c->cp) : -1;
        double t = n > 0 ? zs_cost_attn(zs_iter_cost(it), blk, n, heads, backward) : 0;
        for (int k = 0; k < c->cp; k++) {
            int sl = zs_cpg_slot(c, g, k);
            int64_t last = zs_iter_entry(it, sl);
            if (n == 0) {
                zs_iter_set_exit(it, sl, last);
                continue;
            }
            if (grp >= 0)
                last = a2a(s, ranks[k], U->cp_stream, backward ? "a2a-do" : "a2a-qkv", grp,
                           (double)most * (backward ? tok_q : tok_qkv), last);
            int64_t d1[1] = {last};
            last = zs_sched_attn(s, ranks[k], ZS_STREAM_COMPUTE,
                                 backward ? "uly-attn-bwd" : "uly-attn-fwd", backward, blk, n,
                                 heads, t, d1, 1);
            if (grp >= 0)
                last = a2a(s, ranks[k], U->cp_stream, backward ? "a2a-dqkv" : "a2a-o", grp,
                           (double)most * (backward ? tok_qkv : tok_q), last);
            zs_iter_set_exit(it, sl, last);
        }
    }
    rc = zs_schedule_check(s, e);
out:
    free(blk);
    free(ranks);
    return rc;
}

/* Cuts each group's packed sequence into cp contiguous shards. */
static int place(uly *U, zs_schedule *s, zs_err *e)
{
    const zs_cpg *c = &U->c;
    int rc = ZS_OK;
    for (int g = 0; g < c->dp && !rc; g++)
        rc = zs_cpg_place_packed(s, c, c->gdocs + c->gstart[g], c->gstart[g + 1] - c->gstart[g],
                                 c->cp, zs_cpg_slot(c, g, 0), 0, U->shard, e);
    return rc;
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    uly U = {0};
    /* The default CP degree also stays within the KV heads (an explicit cp
     * beyond them is an error below). */
    long tp;
    int rc = zs_plan_opt_tp(ctx, &zs_opt_tp, 0, &tp, e);
    if (rc)
        return rc;
    long def = ctx->model->kv_heads / tp > 1 ? ctx->model->kv_heads / tp : 1;
    rc = zs_cpg_init(ctx, batch, &opt_cp, def < 16 ? def : 16, zs_cpg_fp_even, &U.c, e);
    if (rc)
        return rc;
    zs_cpg *c = &U.c;
    const zs_model *m = ctx->model;
    zs_schedule *s = NULL;
    int hq = m->heads / c->tp, hkv = m->kv_heads / c->tp > 0 ? m->kv_heads / c->tp : 1;
    if (c->cp > hkv || hq % c->cp != 0 || hkv % c->cp != 0) {
        rc = zs_err_set(e, ZS_EINPUT, "cp",
                        "use a cp that divides the KV heads per GPU, or usp (Ulysses inside a "
                        "node x ring across nodes)",
                        "Ulysses splits heads over the CP group: cp=%d but %s has %d query and "
                        "%d KV heads per GPU with tp=%d (cp <= %d and dividing both)",
                        c->cp, m->name, hq, hkv, c->tp, hkv);
        goto out;
    }
    U.shard = calloc((size_t)c->nslots, sizeof(int64_t));
    if (!U.shard) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    if ((rc = zs_cpg_schedule(c, &s, &U.cp_stream, e)) || (rc = place(&U, s, e)))
        goto out;
    for (int sl = 0; sl < c->nslots; sl++)
        if (U.shard[sl] > c->cap) {
            rc = zs_cpg_overflow(c, sl / c->cp, U.shard[sl], e);
            goto out;
        }
    zs_cpg_note(c, rep,
                "ulysses: packed sequence cut into cp contiguous shards; all-to-all of Q/K/V "
                "(sequence to heads) and O (back) over the CP group, attention of whole "
                "documents with heads/cp heads per GPU; buffers sized to the largest shard");
    rc = zs_cpg_build(c, ctx, s, U.shard, emit, &U, e);
out:
    free(U.shard);
    return zs_cpg_finish(&U.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_cp, &zs_opt_tp, NULL};

const zs_planner_ops zs_planner_ulysses = {
    .name = "ulysses",
    .summary = "DeepSpeed-Ulysses: all-to-all from sequence to heads and back (cp <= KV heads)",
    .options = options,
    .plan = plan};
