/* The `dcp` planner: DCP, dynamic context parallelism with blockwise
 * placement of data and computation (Jiang et al., SOSP '25, arXiv
 * 2510.10620; github chenyu-jiang/dcp), reconstructed (docs/methods.md
 * says what is reconstructed and what assumed).
 *
 * Per global batch, every document is cut into blocks of `block` tokens;
 * data blocks (the Q, K, V and O of their tokens) and compute blocks (a
 * query block against a key block, causal) are placed on the TP groups
 * ("slots") of all GPUs by the hypergraph partitioner of
 * zs_dcp_part_internal.h (nodes first, then the devices of each node),
 * which balances memory and compute and minimises the bytes moved. A slot
 * runs the linear modules on the tokens of its data blocks.
 *
 * Attention, per layer and direction, as DCP's executor runs it in stages
 * (DCP_N_STAGES, default 4): stage 0 computes the slot's blocks whose data
 * are all local; the remote blocks are cut into stages 1.. of equal work in
 * block order; the inputs a stage lacks (Q and K/V forward; Q, O, dO, the
 * softmax statistics and K/V backward) are fetched from their owners while
 * the previous stage computes (the fetch of stage s starts once the rank's
 * stage s-2 is done, so one stage of fetches is in flight), each input once
 * per slot. After the last stage the partial outputs (O and its statistics
 * forward; dQ and dK/dV backward) go back to the owners, which merge them
 * with an elementwise op. Options: block, mem_eps_pct, comp_eps_pct,
 * inter_factor, stages, passes, tp. */
#include <stdlib.h>
#include <string.h>

#include "zs_dcp_part_internal.h"
#include "zs_iteration.h"
#include "zs_planner.h"

static const zs_opt_spec opt_block = {
    .key = "block",
    .type = ZS_OPT_INT,
    .min = 16,
    .max = 1L << 20,
    .def = 512,
    .help = "DCP's --dcp-block-size: tokens per data block (its best configurations: 512 at "
            "16K, 1024 at 32-64K, 2048 at 128K)"};
static const zs_opt_spec opt_mem_eps = {
    .key = "mem_eps_pct",
    .type = ZS_OPT_INT,
    .min = 0,
    .max = 1000,
    .def = 20,
    .help = "DCP's --dcp-mem-imbalance-epsilon in %: tokens per slot at most (1 + eps) x mean"};
static const zs_opt_spec opt_comp_eps = {
    .key = "comp_eps_pct",
    .type = ZS_OPT_INT,
    .min = 0,
    .max = 1000,
    .def = 20,
    .help = "DCP's --dcp-comp-imbalance-epsilon in %: attention work per slot of a node at most "
            "(1 + eps) x mean"};
static const zs_opt_spec opt_inter = {
    .key = "inter_factor",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = 1000,
    .def = 5,
    .help = "DCP's --dcp-inter-node-comp-imbalance-factor: the node level tolerates comp_eps x "
            "this"};
static const zs_opt_spec opt_stages = {
    .key = "stages",
    .type = ZS_OPT_INT,
    .min = 2,
    .max = 16,
    .def = 4,
    .help = "DCP_N_STAGES: executor stages per attention pass (stage 0 local, fetches of the "
            "next stage overlap the current one)"};
static const zs_opt_spec opt_passes = {
    .key = "passes",
    .type = ZS_OPT_INT,
    .min = 0,
    .max = 64,
    .def = 8,
    .help = "refinement passes per level of the partitioner (ours; 0: initial placement and "
            "rebalancing only)"};

/* One transfer's share of one document: fetched inputs (st >= 1) or
 * returned partial outputs (st = -1). */
typedef struct xent {
    int st, src, dst;
    int32_t doc;
    int64_t qtok, kvtok;
} xent;

typedef struct dcp {
    int tp, S, nst;
    zs_dcp_blocks b;
    zs_dcp_part_out po;
    int stream;
    double bq, bkv, blse; /* bytes per token on a GPU: Q (or O, dO, dQ), K+V, lse */
    int64_t *cord;        /* compute blocks by (slot, stage, id) */
    int64_t *cst0;        /* [slot * nst + st]: first index in cord; S * nst + 1 entries */
    xent *fx, *rx;        /* fetches by (st, dst, src, doc), returns by (src, dst, doc) */
    int64_t nfx, nrx;
    zs_attn_block *blk; /* scratch: one stage's blocks */
    int64_t *dep;       /* scratch */
    int64_t *f0;        /* [st * S + dst]: first fetch entry of (st, dst); nst * S + 1 */
    int64_t *rop;       /* per fetch entry: its group's receive op */
    int64_t *last;      /* per slot: its last attention op so far */
} dcp;

static int oom(zs_err *e)
{
    return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
}

static int cmp_xent(const void *a, const void *b)
{
    const xent *x = a, *y = b;
    if (x->st != y->st)
        return x->st < y->st ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->doc > y->doc) - (x->doc < y->doc);
}

/* Sorts entries and merges those of one (st, dst, src, doc). */
static int64_t merge_xent(xent *x, int64_t n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_xent);
    int64_t u = 0;
    for (int64_t i = 0; i < n; i++) {
        if (u > 0 && cmp_xent(&x[u - 1], &x[i]) == 0) {
            x[u - 1].qtok += x[i].qtok;
            x[u - 1].kvtok += x[i].kvtok;
        } else {
            x[u++] = x[i];
        }
    }
    return u;
}

/* Orders every slot's compute blocks into stages: 0 holds those whose data
 * are all on the slot, 1 .. nst-1 the others in block order, cut where
 * their cumulative work crosses equal shares. */
static int stage_blocks(dcp *D, zs_err *e)
{
    const zs_dcp_blocks *b = &D->b;
    const int *dp = D->po.dpart, *cp = D->po.cpart;
    int S = D->S, nst = D->nst;
    int *stage = malloc(sizeof(int) * (size_t)(b->ncomp > 0 ? b->ncomp : 1));
    double *rw = calloc((size_t)S, sizeof(double)), *cum = calloc((size_t)S, sizeof(double));
    int64_t *cnt = calloc((size_t)S * nst + 1, sizeof(int64_t));
    D->cord = malloc(sizeof(int64_t) * (size_t)(b->ncomp > 0 ? b->ncomp : 1));
    D->cst0 = calloc((size_t)S * nst + 1, sizeof(int64_t));
    int rc = stage && rw && cum && cnt && D->cord && D->cst0 ? ZS_OK : oom(e);
    for (int64_t c = 0; c < b->ncomp && !rc; c++)
        if (dp[b->cq[c]] != cp[c] || dp[b->ck[c]] != cp[c])
            rw[cp[c]] += zs_dcp_comp_work(b, c);
    for (int64_t c = 0; c < b->ncomp && !rc; c++) {
        int sl = cp[c];
        stage[c] = 0;
        if (dp[b->cq[c]] != sl || dp[b->ck[c]] != sl) {
            double w = zs_dcp_comp_work(b, c);
            stage[c] = 1 + (int)((cum[sl] + w / 2) * (nst - 1) / rw[sl]);
            stage[c] = stage[c] > nst - 1 ? nst - 1 : stage[c];
            cum[sl] += w;
        }
        cnt[(size_t)sl * nst + stage[c] + 1]++;
    }
    for (int i = 0; i < S * nst && !rc; i++)
        D->cst0[i + 1] = D->cst0[i] + cnt[i + 1];
    for (int i = 0; i < S * nst && !rc; i++)
        cnt[i] = D->cst0[i];
    for (int64_t c = 0; c < b->ncomp && !rc; c++)
        D->cord[cnt[(size_t)cp[c] * nst + stage[c]]++] = c;
    free(stage);
    free(rw);
    free(cum);
    free(cnt);
    return rc;
}

/* The fetches (each slot gets every remote input once, in the first stage
 * that needs it) and the returns (one partial output per remote query
 * block and slot; backward also per remote key block). */
static int traffic(dcp *D, zs_err *e)
{
    const zs_dcp_blocks *b = &D->b;
    const int *dp = D->po.dpart;
    int64_t cap = 4 * (int64_t)b->ndata + 16, nf = 0, nr = 0;
    int64_t *seen = malloc(sizeof(int64_t) * (size_t)(b->ndata > 0 ? b->ndata * 2 : 1));
    D->fx = malloc(sizeof(xent) * (size_t)cap);
    D->rx = malloc(sizeof(xent) * (size_t)cap);
    if (!seen || !D->fx || !D->rx) {
        free(seen);
        return oom(e);
    }
    /* seen[2d + j]: the slot (+1) that last fetched data block d as its
     * queries (j = 0) or its keys (j = 1); each fetch has its return. */
    memset(seen, 0, sizeof(int64_t) * (size_t)b->ndata * 2);
    for (int sl = 0; sl < D->S; sl++)
        for (int st = 1; st < D->nst; st++)
            for (int64_t i = D->cst0[sl * D->nst + st]; i < D->cst0[sl * D->nst + st + 1]; i++) {
                int64_t c = D->cord[i];
                int32_t q = b->cq[c], k = b->ck[c], doc = b->ddoc[q];
                int64_t tq = b->dt1[q] - b->dt0[q], tk = b->dt1[k] - b->dt0[k];
                if (nf + 2 > cap || nr + 2 > cap) {
                    cap *= 2;
                    xent *f = realloc(D->fx, sizeof(xent) * (size_t)cap);
                    if (f)
                        D->fx = f;
                    xent *r = f ? realloc(D->rx, sizeof(xent) * (size_t)cap) : NULL;
                    if (!r) {
                        free(seen);
                        return oom(e);
                    }
                    D->rx = r;
                }
                if (dp[q] != sl && seen[2 * q] != sl + 1) {
                    seen[2 * q] = sl + 1;
                    D->fx[nf++] = (xent){st, dp[q], sl, doc, tq, 0};
                    D->rx[nr++] = (xent){-1, sl, dp[q], doc, tq, 0};
                }
                if (dp[k] != sl && seen[2 * k + 1] != sl + 1) {
                    seen[2 * k + 1] = sl + 1;
                    D->fx[nf++] = (xent){st, dp[k], sl, doc, 0, tk};
                    D->rx[nr++] = (xent){-1, sl, dp[k], doc, 0, tk};
                }
            }
    free(seen);
    D->nfx = merge_xent(D->fx, nf);
    D->nrx = merge_xent(D->rx, nr);
    return ZS_OK;
}

/* ---- lowering ------------------------------------------------------------------ */

/* Bytes an entry moves: fetched inputs (Q; backward Q, O, dO and the
 * statistics; K/V) or returned partial outputs (O and the statistics;
 * backward dQ and dK/dV). */
static double xent_bytes(const dcp *D, const xent *x, int backward)
{
    if (x->st >= 1)
        return (double)x->qtok * (backward ? 3 * D->bq + D->blse : D->bq) +
               (double)x->kvtok * D->bkv;
    return (double)x->qtok * (backward ? D->bq : D->bq + D->blse) +
           (backward ? (double)x->kvtok * D->bkv : 0);
}

/* Appends entries [i0, i1) (one source, one destination) as one transfer
 * carrying their documents; *rop: the receive (-1 when nothing moves). */
static int xfer_group(dcp *D, zs_iter *it, int stage, const xent *x, int64_t n, int tag,
                      int backward, int64_t *rop, zs_err *e)
{
    zs_schedule *s = zs_iter_schedule(it);
    zs_carry *c = malloc(sizeof(zs_carry) * (size_t)n);
    if (!c)
        return oom(e);
    int nc = 0;
    double bytes = 0;
    for (int64_t i = 0; i < n; i++) {
        double by = xent_bytes(D, &x[i], backward);
        if (by > 0)
            c[nc++] = (zs_carry){x[i].doc, by};
        bytes += by;
    }
    *rop = -1;
    if (nc > 0) {
        int64_t src_dep = D->last[x->src], sop;
        int64_t c0 = zs_schedule_carry(s, c, nc);
        const char *label = x->st >= 1 ? (backward ? "dcp-fetch-bwd" : "dcp-fetch-fwd")
                                       : (backward ? "dcp-return-grad" : "dcp-return-o");
        zs_xfer xf = {zs_iter_rank(it, stage, x->src),
                      zs_iter_rank(it, stage, x->dst),
                      D->stream,
                      tag,
                      bytes,
                      &src_dep,
                      1,
                      D->last[x->dst],
                      c0,
                      nc};
        zs_sched_xfer(s, &xf, label, &sop, rop);
    }
    free(c);
    return ZS_OK;
}

/* The fetches of stage st, one transfer per (source, destination). */
static int emit_fetch(dcp *D, zs_iter *it, int stage, int st, int tag, int backward, zs_err *e)
{
    int64_t a = D->f0[(size_t)st * D->S], z = D->f0[(size_t)(st + 1) * D->S];
    for (int64_t i = a; i < z;) {
        int64_t j = i;
        while (j < z && D->fx[j].dst == D->fx[i].dst && D->fx[j].src == D->fx[i].src)
            j++;
        int64_t r;
        int rc = xfer_group(D, it, stage, D->fx + i, j - i, tag, backward, &r, e);
        if (rc)
            return rc;
        for (int64_t k = i; k < j; k++)
            D->rop[k] = r;
        i = j;
    }
    return ZS_OK;
}

/* Slot sl's attention of stage st: its blocks (a run of key blocks of one
 * query block merged into one), after every fetch into the slot so far. */
static void emit_attn(dcp *D, zs_iter *it, int stage, int sl, int st, int backward)
{
    const zs_dcp_blocks *b = &D->b;
    int64_t a = D->cst0[sl * D->nst + st], z = D->cst0[sl * D->nst + st + 1];
    if (z == a)
        return;
    int n = 0;
    for (int64_t i = a; i < z; i++) {
        int64_t c = D->cord[i];
        int32_t q = b->cq[c], k = b->ck[c];
        zs_attn_block *p = n > 0 ? &D->blk[n - 1] : NULL;
        if (p && p->doc == b->ddoc[q] && p->q0 == b->dt0[q] && p->k1 == b->dt0[k]) {
            p->k1 = b->dt1[k];
            continue;
        }
        D->blk[n++] = (zs_attn_block){b->ddoc[q], b->dt0[q], b->dt1[q], b->dt0[k], b->dt1[k]};
    }
    int nd = 0;
    D->dep[nd++] = D->last[sl];
    for (int s2 = 1; s2 <= st; s2++)
        for (int64_t i = D->f0[(size_t)s2 * D->S + sl]; i < D->f0[(size_t)s2 * D->S + sl + 1]; i++)
            if (D->rop[i] >= 0 && (nd == 0 || D->dep[nd - 1] != D->rop[i]))
                D->dep[nd++] = D->rop[i];
    int heads = zs_iter_heads(it);
    double t = zs_cost_attn(zs_iter_cost(it), D->blk, n, heads, backward);
    D->last[sl] = zs_sched_attn(zs_iter_schedule(it), zs_iter_rank(it, stage, sl),
                                ZS_STREAM_COMPUTE, backward ? "dcp-attn-bwd" : "dcp-attn-fwd",
                                backward, D->blk, n, heads, t, D->dep, nd);
}

/* Partial outputs back to their owners, who merge them. */
static int emit_returns(dcp *D, zs_iter *it, int stage, int tag, int backward, zs_err *e)
{
    zs_schedule *s = zs_iter_schedule(it);
    int64_t i = 0;
    for (int sl = 0; sl < D->S; sl++) {
        int nd = 0;
        double by = 0;
        D->dep[nd++] = D->last[sl];
        while (i < D->nrx && D->rx[i].dst == sl) {
            int64_t j = i, r;
            while (j < D->nrx && D->rx[j].dst == sl && D->rx[j].src == D->rx[i].src)
                by += xent_bytes(D, &D->rx[j++], backward);
            int rc = xfer_group(D, it, stage, D->rx + i, j - i, tag, backward, &r, e);
            if (rc)
                return rc;
            if (r >= 0)
                D->dep[nd++] = r;
            i = j;
        }
        int64_t exit = D->last[sl];
        if (nd > 1)
            exit = zs_sched_elementwise(s, zs_iter_rank(it, stage, sl), ZS_STREAM_COMPUTE,
                                        backward ? "dcp-grad-add" : "dcp-out-merge", 2 * by,
                                        zs_cost_elementwise(zs_iter_cost(it), 2 * by), D->dep, nd);
        zs_iter_set_exit(it, sl, exit);
    }
    return ZS_OK;
}

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    dcp *D = arg;
    (void)micro;
    int tag[16 + 1], rc = ZS_OK;
    for (int st = 1; st < D->nst; st++)
        tag[st] = zs_iter_tag(it);
    int rtag = zs_iter_tag(it);
    for (int sl = 0; sl < D->S; sl++)
        D->last[sl] = zs_iter_entry(it, sl);
    for (int64_t i = 0; i < D->nfx; i++)
        D->rop[i] = -1;
    /* Stage st's compute runs while stage st+1's inputs arrive. */
    for (int st = 0; st < D->nst && !rc; st++) {
        if (st + 1 < D->nst)
            rc = emit_fetch(D, it, stage, st + 1, tag[st + 1], backward, e);
        for (int sl = 0; sl < D->S && !rc; sl++)
            emit_attn(D, it, stage, sl, st, backward);
    }
    if (!rc)
        rc = emit_returns(D, it, stage, rtag, backward, e);
    return rc ? rc : zs_schedule_check(zs_iter_schedule(it), e);
}

/* ---- planning ------------------------------------------------------------------ */

static void dcp_free(dcp *D)
{
    zs_dcp_blocks_free(&D->b);
    zs_dcp_part_free(&D->po);
    free(D->cord);
    free(D->cst0);
    free(D->fx);
    free(D->rx);
    free(D->blk);
    free(D->dep);
    free(D->f0);
    free(D->rop);
    free(D->last);
}

/* Fetch offsets per (stage, destination) and the emitter's scratch. */
static int scratch(dcp *D, zs_err *e)
{
    int64_t most = 1;
    for (int i = 0; i < D->S * D->nst; i++)
        most = D->cst0[i + 1] - D->cst0[i] > most ? D->cst0[i + 1] - D->cst0[i] : most;
    D->blk = malloc(sizeof(zs_attn_block) * (size_t)most);
    D->dep = malloc(sizeof(int64_t) * ((size_t)D->S * D->nst + 2));
    D->f0 = calloc((size_t)D->S * D->nst + 1, sizeof(int64_t));
    D->rop = malloc(sizeof(int64_t) * (size_t)(D->nfx > 0 ? D->nfx : 1));
    D->last = malloc(sizeof(int64_t) * (size_t)D->S);
    if (!D->blk || !D->dep || !D->f0 || !D->rop || !D->last)
        return oom(e);
    for (int64_t i = 0; i < D->nfx; i++)
        D->f0[(size_t)D->fx[i].st * D->S + D->fx[i].dst + 1]++;
    for (int i = 0; i < D->S * D->nst; i++)
        D->f0[i + 1] += D->f0[i];
    return ZS_OK;
}

/* Pieces (a slot's consecutive data blocks of a document merged) and the
 * linear tokens per slot, checked against what fits. */
static int place(dcp *D, zs_schedule *s, int64_t *lin, long max_tokens, zs_err *e)
{
    const zs_dcp_blocks *b = &D->b;
    for (int32_t i = 0; i < b->ndata;) {
        int32_t j = i + 1, sl = D->po.dpart[i];
        while (j < b->ndata && b->ddoc[j] == b->ddoc[i] && D->po.dpart[j] == sl)
            j++;
        int rank = sl * D->tp;
        zs_schedule_add_piece(s, b->ddoc[i], b->dt0[i], b->dt1[j - 1], rank, ZS_LAYOUT_ATTN, 0);
        zs_schedule_add_piece(s, b->ddoc[i], b->dt0[i], b->dt1[j - 1], rank, ZS_LAYOUT_LINEAR, 0);
        lin[sl] += b->dt1[j - 1] - b->dt0[i];
        i = j;
    }
    for (int sl = 0; sl < D->S; sl++)
        if (lin[sl] > max_tokens) {
            char w[64];
            snprintf(w, sizeof w, "slot %d (rank %d)", sl, sl * D->tp);
            return zs_err_set(e, ZS_EINPUT, w,
                              "use more GPUs, a smaller batch, recomputation or a lower "
                              "mem_eps_pct",
                              "%lld tokens for the linear modules exceed the %ld that fit",
                              (long long)lin[sl], max_tokens);
        }
    return zs_schedule_check(s, e);
}

typedef struct dcp_opts {
    long tp, block, mem_eps, comp_eps, inter, stages, passes;
} dcp_opts;

static int read_opts(const zs_plan_ctx *ctx, dcp_opts *o, zs_err *e)
{
    int rc = zs_plan_opt_tp(ctx, &zs_opt_tp, 1, &o->tp, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_block, &o->block, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_mem_eps, &o->mem_eps, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_comp_eps, &o->comp_eps, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_inter, &o->inter, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_stages, &o->stages, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_passes, &o->passes, e);
    return rc;
}

static void notes(const dcp *D, const dcp_opts *o, int nodes, zs_plan_report *rep)
{
    double fq = 0, fkv = 0, moved = 0;
    for (int64_t i = 0; i < D->nfx; i++) {
        fq += (double)D->fx[i].qtok;
        fkv += (double)D->fx[i].kvtok;
    }
    moved = (fq * D->bq + fkv * D->bkv) * D->tp;
    zs_plan_report_note(rep,
                        "dcp: %d slots (TP groups of %ld) on %d nodes; %d data blocks of %ld "
                        "tokens, %lld compute blocks; hypergraph placement nodes first (compute "
                        "eps %ld%% x %ld), then devices (eps %ld%%, memory eps %ld%%)",
                        D->S, o->tp, nodes, D->b.ndata, o->block, (long long)D->b.ncomp,
                        o->comp_eps, o->inter, o->comp_eps, o->mem_eps);
    zs_plan_report_note(rep,
                        "placement: compute imbalance %.3f, memory imbalance %.3f, km1 %.1f MB "
                        "per layer, %d moves; %ld executor stages",
                        D->po.comp_imb, D->po.mem_imb, D->po.km1 * D->tp / 1e6, D->po.moves,
                        o->stages);
    zs_plan_report_note(rep,
                        "per layer forward: %.0f query and %.0f key tokens fetched (%.1f MB), "
                        "partial outputs returned and merged at their owners",
                        fq, fkv, moved / 1e6);
}

/* Blocks, placement, stages and traffic of one batch. */
static int decide(dcp *D, const zs_plan_ctx *ctx, const zs_batch *batch, const dcp_opts *o,
                  zs_err *e)
{
    const zs_model *m = ctx->model;
    int gpn = ctx->cluster->gpus_per_node, kvh = m->kv_heads / (int)o->tp;
    D->tp = (int)o->tp;
    D->S = zs_cluster_gpus(ctx->cluster) / D->tp;
    D->nst = (int)o->stages;
    D->bq = (double)(m->heads / D->tp) * m->head_dim * m->dtype_bytes;
    D->bkv = 2.0 * (kvh > 0 ? kvh : 1) * m->head_dim * m->dtype_bytes;
    D->blse = (double)(m->heads / D->tp) * 4; /* fp32 log-sum-exp per query and head */
    int rc = zs_dcp_blocks_build(batch->len, batch->ndocs, (int32_t)o->block, &D->b, e);
    if (rc)
        return rc;
    /* The nets weigh what a part that lacks the block moves: K/V, or Q
     * out and O back. */
    zs_dcp_part_in in = {&D->b,
                         D->bkv,
                         2 * D->bq,
                         ctx->cluster->nodes,
                         gpn / D->tp,
                         o->mem_eps / 100.0,
                         o->comp_eps / 100.0,
                         (double)o->inter,
                         (int)o->passes};
    if ((rc = zs_dcp_partition(&in, &D->po, e)) || (rc = stage_blocks(D, e)) ||
        (rc = traffic(D, e)))
        return rc;
    return scratch(D, e);
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    dcp_opts o;
    int rc = read_opts(ctx, &o, e);
    if (rc)
        return rc;
    dcp D;
    memset(&D, 0, sizeof D);
    zs_mem_cfg mc = ctx->mem;
    mc.tp = (int)o.tp;
    mc.pp = 1;
    mc.dp = zs_cluster_gpus(ctx->cluster) / (int)o.tp;
    zs_mem_breakdown mb;
    if ((rc = zs_mem_breakdown_compute(ctx->model, &ctx->cluster->gpu, &mc, &mb, e)))
        return rc;
    zs_schedule *s = NULL;
    int64_t *lin = NULL;
    if ((rc = decide(&D, ctx, batch, &o, e)))
        goto out;
    s = zs_schedule_new(zs_cluster_gpus(ctx->cluster));
    lin = calloc((size_t)D.S, sizeof(int64_t));
    if (!s || !lin) {
        rc = oom(e);
        goto out;
    }
    zs_schedule_set_docs(s, batch->len, batch->ndocs);
    D.stream = zs_schedule_add_stream(s, "dcp");
    if ((rc = zs_schedule_check(s, e)) || (rc = place(&D, s, lin, mb.max_tokens, e)))
        goto out;
    zs_iter_spec spec = {{D.tp, 1, 1, D.S},
                         1,
                         lin,
                         mc.recompute,
                         mc.zero_stage,
                         ctx->seed,
                         emit,
                         &D,
                         NULL,
                         0,
                         mc.fsdp};
    if ((rc = zs_iter_build(s, ctx->cost, &spec, e)))
        goto out;
    int64_t most = 0;
    for (int sl = 0; sl < D.S; sl++)
        most = lin[sl] > most ? lin[sl] : most;
    rep->attn_imbalance = D.po.comp_imb;
    rep->linear_imbalance = D.po.mem_imb;
    rep->max_attn_tokens = rep->max_linear_tokens = most;
    rep->max_live_attn_tokens = rep->max_live_linear_tokens = most; /* one micro-batch */
    notes(&D, &o, ctx->cluster->nodes, rep);
out:
    dcp_free(&D);
    free(lin);
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

/* The decisions alone (the planner's decide hook, `zepsim bench plan`):
 * blocks, placement, stages and traffic, without the schedule; what DCP's
 * data loader computes per batch ahead of training. DCP has no document
 * classes. */
static int decide_only(const zs_plan_ctx *ctx, const zs_batch *batch, int *classes, zs_err *e)
{
    (void)classes;
    dcp_opts o;
    int rc = read_opts(ctx, &o, e);
    if (rc)
        return rc;
    dcp D;
    memset(&D, 0, sizeof D);
    rc = decide(&D, ctx, batch, &o, e);
    dcp_free(&D);
    return rc;
}

static const zs_opt_spec *const options[] = {&opt_block,  &opt_mem_eps, &opt_comp_eps, &opt_inter,
                                             &opt_stages, &opt_passes,  &zs_opt_tp,    NULL};

const zs_planner_ops zs_planner_dcp = {
    .name = "dcp",
    .summary = "DCP (reconstructed): documents cut into blocks, data and compute blocks placed "
               "per batch by hypergraph partitioning (nodes, then devices), staged fetches",
    .options = options,
    .plan = plan,
    .decide = decide_only};
