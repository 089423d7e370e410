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
 * Options: cp=N (default 16), tp=N (default 1). */
#include <stdlib.h>

#include "zs_cpbase.h"
#include "zs_ring.h"

static const zs_opt_spec opt_cp =
    ZS__CPB_OPT_CP("16, or all GPUs / tp when fewer",
                   "context-parallel degree, CP groups of consecutive GPUs and DP across them");

typedef struct llcp {
    zs__cpb c;
    int cp_stream;
    int64_t *shard; /* per slot: tokens held */
} llcp;

/* The blocks of slot k: each of its query chunks against the document's
 * keys up to the chunk's end. */
static int blocks_of(const llcp *L, const zs_schedule *s, int g, int k, zs_attn_block *blk)
{
    const zs__cpb *c = &L->c;
    int n = 0;
    for (int i = c->gstart[g]; i < c->gstart[g + 1]; i++) {
        int d = c->gdocs[i];
        int chunks[2] = {k, 2 * c->cp - 1 - k};
        for (int h = 0; h < 2; h++) {
            int32_t t0, t1;
            zs_ring_chunk(s->doc_len[d], c->cp, ZS_RING_EXACT, chunks[h], &t0, &t1);
            if (t1 > t0)
                blk[n++] = (zs_attn_block){d, t0, t1, 0, t1};
        }
    }
    return n;
}

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    llcp *L = arg;
    const zs__cpb *c = &L->c;
    zs_schedule *s = zs_iter_schedule(it);
    const zs_model *m = &zs_iter_cost(it)->model;
    (void)micro;
    int maxdocs = 1;
    for (int g = 0; g < c->dp; g++)
        if (c->gstart[g + 1] - c->gstart[g] > maxdocs)
            maxdocs = c->gstart[g + 1] - c->gstart[g];
    zs_attn_block *blk = malloc(sizeof(zs_attn_block) * (size_t)maxdocs * 2);
    int *ranks = malloc(sizeof(int) * (size_t)c->cp);
    int rc = ZS_OK;
    if (!blk || !ranks) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    int heads = zs_iter_heads(it);
    for (int g = 0; g < c->dp; g++) {
        int64_t most = 0;
        for (int k = 0; k < c->cp; k++) {
            int sl = zs__cpb_slot(c, g, k);
            ranks[k] = zs_iter_rank(it, stage, sl);
            if (L->shard[sl] > most)
                most = L->shard[sl];
        }
        int grp = c->cp > 1 ? zs_schedule_group(s, ranks, c->cp) : -1;
        double kvb = zs__cpb_kv_bytes(m, c->tp, most);
        for (int k = 0; k < c->cp; k++) {
            int sl = zs__cpb_slot(c, g, k);
            int64_t last = zs_iter_entry(it, sl);
            int n = blocks_of(L, s, g, k, blk);
            if (c->gstart[g + 1] == c->gstart[g]) {
                zs_iter_set_exit(it, sl, last);
                continue;
            }
            /* Every member joins the collectives, even one whose chunks of
             * tiny documents are empty. */
            int64_t d1[1] = {last};
            if (grp >= 0) {
                last = zs_sched_coll(s, ranks[k], L->cp_stream, "cp-kv-all-gather", grp,
                                     ZS_COLL_ALLGATHER, kvb, d1, 1);
                d1[0] = last;
            }
            if (n > 0) {
                double t = zs_cost_attn(zs_iter_cost(it), blk, n, heads, backward);
                last = zs_sched_attn(s, ranks[k], ZS_STREAM_COMPUTE,
                                     backward ? "cp-attn-bwd" : "cp-attn-fwd", backward, blk, n,
                                     heads, t, d1, 1);
                d1[0] = last;
            }
            if (backward && grp >= 0)
                last = zs_sched_coll(s, ranks[k], L->cp_stream, "cp-dkv-reduce-scatter", grp,
                                     ZS_COLL_REDUCESCATTER, kvb, d1, 1);
            zs_iter_set_exit(it, sl, last);
        }
    }
    rc = zs_schedule_check(s, e);
out:
    free(blk);
    free(ranks);
    return rc;
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    llcp L = {0};
    int rc = zs__cpb_init(ctx, batch, &opt_cp, 16, zs__cpb_fp_zigzag, &L.c, e);
    if (rc)
        return rc;
    zs__cpb *c = &L.c;
    zs_schedule *s = NULL;
    L.shard = calloc((size_t)c->nslots, sizeof(int64_t));
    if (!L.shard) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    if ((rc = zs__cpb_schedule(c, &s, &L.cp_stream, e)))
        goto out;
    for (int g = 0; g < c->dp && !rc; g++)
        for (int i = c->gstart[g]; i < c->gstart[g + 1] && !rc; i++) {
            int d = c->gdocs[i];
            for (int k = 0; k < c->cp && !rc; k++) {
                int sl = zs__cpb_slot(c, g, k);
                int chunks[2] = {k, 2 * c->cp - 1 - k};
                for (int h = 0; h < 2 && !rc; h++) {
                    int32_t t0, t1;
                    zs_ring_chunk(c->len[d], c->cp, ZS_RING_EXACT, chunks[h], &t0, &t1);
                    rc = zs__cpb_piece(s, c, d, t0, t1, sl, e);
                    L.shard[sl] += t1 - t0;
                }
            }
        }
    if (rc)
        goto out;
    zs__cpb_note(c, rep,
                 "llama-cp: per-document zigzag chunks (exact, no padding), K/V all-gathered "
                 "over the CP group before attention (not overlapped) and again in backward, "
                 "dK/dV reduce-scattered; collective buffers sized to the group's largest shard");
    rc = zs__cpb_build(c, ctx, s, L.shard, emit, &L, e);
out:
    free(L.shard);
    return zs__cpb_finish(&L.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_cp, &zs_opt_tp, NULL};

const zs_planner_ops zs_planner_llamacp = {
    .name = "llama-cp",
    .summary = "Llama 3 all-gather context parallelism (per-document zigzag sharding)",
    .options = options,
    .plan = plan};
