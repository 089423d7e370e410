/* The `distca` planner: DistCA's core-attention disaggregation (Zhuang et
 * al., arXiv 2510.18121; paper and code read, docs/methods.md says what was
 * reconstructed from what). Attention without weights ("core attention")
 * is cut into tasks and run on attention servers other than the GPUs that
 * hold the tokens for the linear modules:
 *   - layout: TP groups of tp GPUs (DistCA's TP = 8, inside a node), every
 *     TP group a data-parallel slot and, time-shared, an attention server
 *     (the paper's in-place servers; no CP, no PP: the 3D setting);
 *   - ping-pong: the batch is split into two nano-batches of about equal
 *     tokens, balanced by attention cost (longest first to the cheaper one);
 *     the iteration builder runs the linear ops per nano-batch
 *     (zs_iter_build_nano) so one nano-batch's transfers overlap the other's
 *     compute;
 *   - linear layout per nano-batch: documents in batch order fill every
 *     slot to the same token count; a document that overflows a slot goes
 *     on on the next one, each slot's share of it in head-tail form (front
 *     tokens and the mirrored back tokens), as DistCA places them;
 *   - tasks: one per (document, slot) share; the greedy of
 *     planners/zs_distca_sched_internal.h moves and splits them so each server's
 *     causal query-key pairs (its fused launch's work) are within tol of
 *     the mean, preferring the most pairs per second of transfer (cost
 *     model p2p); the schedule prices each server's launch with the cost
 *     model;
 *   - transfers per layer and nano-batch, on a stream of their own per
 *     nano-batch: forward, each task's Q and the K/V of its causal prefix
 *     that its server lacks (deduplicated per document and server) go from
 *     their home slots to the server, O comes back; backward (the server
 *     keeps Q, K, V, O and the LSE: DistCA's mode without pipelining), dO
 *     goes to the server, dQ and dK/dV come back and are added at home.
 *     Recomputation reruns the forward dispatch.
 * Options: tp (default min(8, GPUs per node)), nano=1|2 (default 2:
 * ping-pong), tol_pct (default 10: the code's tolerance), block (default
 * 128: sub-items in whole FlashAttention tiles). */
#include <stdlib.h>
#include <string.h>

#include "zs_distca_sched_internal.h"
#include "zs_iteration.h"
#include "zs_planner.h"

static const zs_opt_spec opt_tp = {.key = "tp",
                                   .type = ZS_OPT_INT,
                                   .min = 1,
                                   .max = 64,
                                   .computed = "min(8, GPUs per node) (DistCA's TP = 8)",
                                   .help = "tensor-parallel degree; a TP group is one slot and "
                                           "one attention server"};
static const zs_opt_spec opt_nano = {.key = "nano",
                                     .type = ZS_OPT_INT,
                                     .min = 1,
                                     .max = 2,
                                     .def = 2,
                                     .help = "nano-batches (2: ping-pong overlap, 1: one stream)"};
static const zs_opt_spec opt_tol = {.key = "tol_pct",
                                    .type = ZS_OPT_INT,
                                    .min = 0,
                                    .max = 100,
                                    .def = 10,
                                    .help = "scheduler tolerance, % of the mean server load"};
static const zs_opt_spec opt_block = {.key = "block",
                                      .type = ZS_OPT_INT,
                                      .min = 1,
                                      .max = 65536,
                                      .def = 128,
                                      .help = "query tokens per side of a split task are "
                                              "multiples of this"};

#define NMAX 2

typedef struct dca {
    const zs_plan_ctx *ctx;
    const zs_batch *b;
    int tp, S, nano, heads;
    double bq, bkv; /* bytes per token per GPU: Q (or O, dO, dQ); K and V */
    /* Per nano-batch: the home chunks (the linear layout, doc by doc) and
     * the scheduled items. */
    zs_ca_item *home[NMAX], *items[NMAX];
    int32_t nhome[NMAX], nitems[NMAX], cap[NMAX];
    int32_t *first[NMAX]; /* per document: its first home chunk (-1: not in this nano) */
    int64_t *qtok[NMAX], *kvtok[NMAX]; /* [h * S + d]: tokens moved from home h to server d */
    zs_attn_block *blk[NMAX];
    int64_t *bk0[NMAX]; /* server d's blocks: blk[bk0[d] .. bk0[d+1]) */
    int64_t *tokens;    /* [k * S + slot]: linear tokens */
    int cur;            /* the nano-batch the scheduler prices */
    int stream[NMAX];
    int64_t *recv; /* scratch: per server, the dispatch receives [S] x S */
    int *nrecv;
} dca;

static int oom(zs_err *e)
{
    return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
}

static int item_blocks(const zs_ca_item *it, zs_attn_block *blk)
{
    int n = 0;
    if (it->h1 > it->h0)
        blk[n++] = (zs_attn_block){it->doc, it->h0, it->h1, 0, it->h1};
    if (it->t1 > it->t0)
        blk[n++] = (zs_attn_block){it->doc, it->t0, it->t1, 0, it->t1};
    return n;
}

/* A task's load in causal query-key pairs, the unit DistCA's scheduler
 * balances: a server runs all its tasks in one fused launch, large enough
 * to run at the kernel's saturated rate, where time follows the pairs (the
 * schedule then prices each server's launch with the cost model); a task's
 * own launch time would overprice small tasks, whose standalone launch is
 * latency-bound. */
static double load_fn(void *arg, const zs_ca_item *it)
{
    (void)arg;
    zs_attn_block blk[2];
    int n = item_blocks(it, blk);
    double p = 0;
    for (int i = 0; i < n; i++)
        p += (double)zs_attn_block_pairs(&blk[i]);
    return p;
}

/* Tokens of document doc's home chunks (nano-batch k) inside keys [0, end)
 * that are not at slot d. src gets a slot holding some of them (-1: none). */
static int64_t kv_remote(const dca *D, int k, int32_t doc, int d, int32_t end, int *src)
{
    int64_t n = 0;
    *src = -1;
    for (int32_t c = D->first[k][doc]; c >= 0 && c < D->nhome[k] && D->home[k][c].doc == doc; c++) {
        const zs_ca_item *h = &D->home[k][c];
        if (h->home == d)
            continue;
        int32_t a = h->h1 < end ? h->h1 : end, t = h->t1 < end ? h->t1 : end;
        int64_t m = (a > h->h0 ? a - h->h0 : 0) + (t > h->t0 ? t - h->t0 : 0);
        if (m > 0 && *src < 0)
            *src = h->home;
        n += m;
    }
    return n;
}

static int slot_rank(const dca *D, int slot)
{
    return slot * D->tp;
}

/* Seconds of moving a task to dst: its Q there and O back, and the keys and
 * values of its prefix that dst lacks. */
static double comm_fn(void *arg, const zs_ca_item *it, int dst)
{
    const dca *D = arg;
    int src;
    double kv = (double)kv_remote(D, D->cur, it->doc, dst, zs_ca_item_kv_end(it), &src) * D->bkv;
    double q = it->home != dst ? 2.0 * zs_ca_item_tokens(it) * D->bq : 0;
    if (q > 0)
        src = it->home;
    if (q + kv <= 0 || src < 0)
        return 0;
    return zs_cost_p2p(D->ctx->cost, slot_rank(D, src), slot_rank(D, dst), q + kv);
}

/* ---- layout ---------------------------------------------------------------------- */

typedef struct dcost {
    double c;
    int32_t d;
} dcost;

static int cmp_dcost(const void *a, const void *b)
{
    const dcost *x = a, *y = b;
    if (x->c != y->c)
        return x->c > y->c ? -1 : 1;
    return x->d < y->d ? -1 : (x->d > y->d);
}

/* Nano-batch of every document: most attention (causal pairs, DistCA's
 * FLOP balance of ping and pong) first to the lighter side while its
 * tokens stay within half the batch (else the other side). */
static int split_nano(const dca *D, int32_t *nano_of, zs_err *e)
{
    const zs_batch *b = D->b;
    if (D->nano == 1) {
        memset(nano_of, 0, sizeof(int32_t) * (size_t)b->ndocs);
        return ZS_OK;
    }
    dcost *o = malloc(sizeof(dcost) * (size_t)(b->ndocs + 1));
    if (!o)
        return oom(e);
    for (int32_t d = 0; d < b->ndocs; d++) {
        zs_attn_block blk = {d, 0, b->len[d], 0, b->len[d]};
        o[d] = (dcost){(double)zs_attn_block_pairs(&blk), d};
    }
    qsort(o, (size_t)b->ndocs, sizeof *o, cmp_dcost);
    double c[2] = {0, 0};
    int64_t tok[2] = {0, 0}, half = (b->tokens + 1) / 2;
    for (int32_t i = 0; i < b->ndocs; i++) {
        int32_t d = o[i].d;
        int k = c[1] < c[0];
        if (tok[k] + b->len[d] > half && tok[1 - k] + b->len[d] <= half)
            k = 1 - k;
        nano_of[d] = k;
        c[k] += o[i].c;
        tok[k] += b->len[d];
    }
    free(o);
    return ZS_OK;
}

/* The linear layout of nano-batch k: its documents in batch order fill the
 * slots to equal token counts, a document's share of a slot in head-tail
 * form. */
static int layout(dca *D, int k, const int32_t *nano_of, zs_err *e)
{
    const zs_batch *b = D->b;
    int S = D->S;
    int64_t T = 0;
    for (int32_t d = 0; d < b->ndocs; d++)
        if (nano_of[d] == k)
            T += b->len[d];
    int32_t cap = b->ndocs + S + 1;
    D->home[k] = malloc(sizeof(zs_ca_item) * (size_t)cap);
    D->first[k] = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1));
    if (!D->home[k] || !D->first[k])
        return oom(e);
    int slot = 0;
    int64_t room = T / S + (0 < T % S);
    int32_t n = 0;
    for (int32_t d = 0; d < b->ndocs; d++) {
        D->first[k][d] = -1;
        if (nano_of[d] != k)
            continue;
        D->first[k][d] = n;
        int32_t L = b->len[d], left = L, H = 0, Tl = 0;
        while (left > 0) {
            while (room == 0 && slot < S - 1) {
                slot++;
                room = T / S + (slot < T % S);
            }
            int32_t C = left < room || slot == S - 1 ? left : (int32_t)room;
            int32_t fh = C / 2, bt = C - fh;
            if (C == L) { /* whole on one slot: front half and back half */
                fh = L / 2;
                bt = L - fh;
            }
            zs_ca_item it = {d, L, slot, slot, H, H + fh, L - Tl - bt, L - Tl};
            D->home[k][n++] = it;
            H += fh;
            Tl += bt;
            left -= C;
            room -= C;
            D->tokens[(size_t)k * S + slot] += C;
        }
    }
    D->nhome[k] = n;
    D->cap[k] = n + 16;
    D->items[k] = malloc(sizeof(zs_ca_item) * (size_t)D->cap[k]);
    if (!D->items[k])
        return oom(e);
    memcpy(D->items[k], D->home[k], sizeof(zs_ca_item) * (size_t)n);
    D->nitems[k] = n;
    return ZS_OK;
}

/* Transfers of nano-batch k (tokens per home-server pair) and each
 * server's blocks, from the scheduled items. */
static int traffic(dca *D, int k, zs_err *e)
{
    int S = D->S;
    int32_t n = D->nitems[k];
    D->qtok[k] = calloc((size_t)S * S, sizeof(int64_t));
    D->kvtok[k] = calloc((size_t)S * S, sizeof(int64_t));
    D->blk[k] = malloc(sizeof(zs_attn_block) * (size_t)(2 * n + 1));
    D->bk0[k] = calloc((size_t)S + 1, sizeof(int64_t));
    int32_t *kend = malloc(sizeof(int32_t) * (size_t)S);
    if (!D->qtok[k] || !D->kvtok[k] || !D->blk[k] || !D->bk0[k] || !kend) {
        free(kend);
        return oom(e);
    }
    const zs_ca_item *it = D->items[k];
    for (int32_t i = 0; i < n; i++) {
        if (it[i].home != it[i].server)
            D->qtok[k][(size_t)it[i].home * S + it[i].server] += zs_ca_item_tokens(&it[i]);
        D->bk0[k][it[i].server + 1] += item_blocks(&it[i], (zs_attn_block[2]){{0}});
    }
    for (int d = 0; d < S; d++)
        D->bk0[k][d + 1] += D->bk0[k][d];
    int64_t *fill = calloc((size_t)S, sizeof(int64_t));
    if (!fill) {
        free(kend);
        return oom(e);
    }
    for (int32_t i = 0; i < n; i++) {
        int d = it[i].server;
        int m = item_blocks(&it[i], D->blk[k] + D->bk0[k][d] + fill[d]);
        fill[d] += m;
    }
    free(fill);
    /* K/V: per document and server, the prefix its tasks there need, from
     * every home slot that is not the server. */
    for (int32_t doc = 0; doc < D->b->ndocs; doc++) {
        if (D->first[k][doc] < 0)
            continue;
        for (int d = 0; d < S; d++)
            kend[d] = 0;
        for (int32_t i = 0; i < n; i++)
            if (it[i].doc == doc) {
                int32_t x = zs_ca_item_kv_end(&it[i]);
                kend[it[i].server] = x > kend[it[i].server] ? x : kend[it[i].server];
            }
        for (int d = 0; d < S; d++) {
            if (kend[d] == 0)
                continue;
            for (int32_t c = D->first[k][doc]; c < D->nhome[k] && D->home[k][c].doc == doc; c++) {
                const zs_ca_item *h = &D->home[k][c];
                if (h->home == d)
                    continue;
                int32_t a = h->h1 < kend[d] ? h->h1 : kend[d],
                        t = h->t1 < kend[d] ? h->t1 : kend[d];
                D->kvtok[k][(size_t)h->home * S + d] +=
                    (a > h->h0 ? a - h->h0 : 0) + (t > h->t0 ? t - h->t0 : 0);
            }
        }
    }
    free(kend);
    return ZS_OK;
}

/* ---- the emitter ------------------------------------------------------------------ */

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    dca *D = arg;
    zs_schedule *s = zs_iter_schedule(it);
    const zs_cost *cost = zs_iter_cost(it);
    int S = D->S;
    (void)micro;
    int64_t *ca = malloc(sizeof(int64_t) * (size_t)S * NMAX);
    if (!ca)
        return oom(e);
    int tag_in[NMAX], tag_out[NMAX];
    for (int k = 0; k < D->nano; k++) {
        tag_in[k] = zs_iter_tag(it);
        tag_out[k] = zs_iter_tag(it);
    }
    /* Dispatch: Q and K/V (forward) or dO (backward) to the servers. */
    for (int k = 0; k < D->nano; k++) {
        for (int d = 0; d < S; d++)
            D->nrecv[d] = 0;
        for (int h = 0; h < S; h++)
            for (int d = 0; d < S; d++) {
                if (h == d)
                    continue;
                double q = (double)D->qtok[k][(size_t)h * S + d] * D->bq;
                double kv = backward ? 0 : (double)D->kvtok[k][(size_t)h * S + d] * D->bkv;
                if (q + kv <= 0)
                    continue;
                int64_t dep[1] = {zs_iter_entry_nano(it, k, h)};
                int rh = zs_iter_rank(it, stage, h), rd = zs_iter_rank(it, stage, d);
                zs_sched_send(s, rh, D->stream[k], backward ? "ca-send-do" : "ca-send-qkv", rd,
                              tag_in[k], q + kv, dep, 1);
                D->recv[(size_t)d * S + D->nrecv[d]++] =
                    zs_sched_recv(s, rd, D->stream[k], backward ? "ca-recv-do" : "ca-recv-qkv", rh,
                                  tag_in[k], q + kv, NULL, 0);
            }
        /* Core attention on each server, once its inputs are in. */
        for (int d = 0; d < S; d++) {
            int64_t b0 = D->bk0[k][d], nb = D->bk0[k][d + 1] - b0;
            ca[k * S + d] = -1;
            if (nb == 0)
                continue;
            int nd = D->nrecv[d] + 1;
            int64_t *dep = malloc(sizeof(int64_t) * (size_t)nd);
            if (!dep) {
                free(ca);
                return oom(e);
            }
            dep[0] = zs_iter_entry_nano(it, k, d);
            memcpy(dep + 1, D->recv + (size_t)d * S, sizeof(int64_t) * (size_t)D->nrecv[d]);
            double t = zs_cost_attn(cost, D->blk[k] + b0, (int)nb, D->heads, backward);
            ca[k * S + d] = zs_sched_attn(s, zs_iter_rank(it, stage, d), ZS_STREAM_COMPUTE,
                                          backward ? "ca-attn-bwd" : "ca-attn-fwd", backward,
                                          D->blk[k] + b0, (int)nb, D->heads, t, dep, nd);
            free(dep);
        }
    }
    /* Return: O (forward) or dQ and dK/dV (backward) to the home slots. */
    for (int k = 0; k < D->nano; k++)
        for (int d = 0; d < S; d++)
            for (int h = 0; h < S; h++) {
                if (h == d || ca[k * S + d] < 0)
                    continue;
                double q = (double)D->qtok[k][(size_t)h * S + d] * D->bq;
                double kv = backward ? (double)D->kvtok[k][(size_t)h * S + d] * D->bkv : 0;
                if (q + kv <= 0)
                    continue;
                int64_t dep[1] = {ca[k * S + d]};
                int rh = zs_iter_rank(it, stage, h), rd = zs_iter_rank(it, stage, d);
                zs_sched_send(s, rd, D->stream[k], backward ? "ca-send-grad" : "ca-send-o", rh,
                              tag_out[k], q + kv, dep, 1);
                zs_sched_recv(s, rh, D->stream[k], backward ? "ca-recv-grad" : "ca-recv-o", rd,
                              tag_out[k], q + kv, NULL, 0);
            }
    /* At home: outputs put in place (forward) or gradients added
     * (backward), on the nano-batch's stream, so it follows every transfer
     * of that stream; the linear ops after attention wait for it. */
    for (int k = 0; k < D->nano; k++)
        for (int h = 0; h < S; h++) {
            double by = 0;
            for (int d = 0; d < S; d++) {
                if (d == h)
                    continue;
                by += (double)D->qtok[k][(size_t)h * S + d] * D->bq;
                if (backward)
                    by += 3.0 * (double)D->kvtok[k][(size_t)h * S + d] * D->bkv;
            }
            int64_t dep[2] = {zs_iter_entry_nano(it, k, h), ca[k * S + h]};
            int r = zs_iter_rank(it, stage, h);
            int64_t op = zs_sched_elementwise(
                s, r, D->stream[k], backward ? "ca-grad-add" : "ca-out-place", by,
                by > 0 ? zs_cost_elementwise(cost, by) : 0, dep, ca[k * S + h] >= 0 ? 2 : 1);
            zs_iter_set_exit_nano(it, k, h, op);
        }
    free(ca);
    return zs_schedule_check(s, e);
}

/* ---- planning -------------------------------------------------------------------- */

static void dca_free(dca *D)
{
    for (int k = 0; k < NMAX; k++) {
        free(D->home[k]);
        free(D->items[k]);
        free(D->first[k]);
        free(D->qtok[k]);
        free(D->kvtok[k]);
        free(D->blk[k]);
        free(D->bk0[k]);
    }
    free(D->tokens);
    free(D->recv);
    free(D->nrecv);
}

static int read_opts(const zs_plan_ctx *ctx, long *tp, long *nano, long *tol, long *block,
                     zs_err *e)
{
    int gpn = ctx->cluster->gpus_per_node;
    int rc = zs_plan_opt_tp(ctx, &opt_tp, gpn < 8 ? gpn : 8, tp, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_nano, nano, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_tol, tol, e);
    if (!rc)
        rc = zs_opt_int(ctx->opts, &opt_block, block, e);
    return rc;
}

/* The pieces: linear tokens at their home slots, attention queries at
 * their servers. */
static int place(dca *D, zs_schedule *s, zs_err *e)
{
    zs_schedule_set_docs(s, D->b->len, D->b->ndocs);
    for (int k = 0; k < D->nano; k++) {
        for (int32_t i = 0; i < D->nhome[k]; i++) {
            const zs_ca_item *h = &D->home[k][i];
            int r = slot_rank(D, h->home);
            if (h->h1 > h->h0)
                zs_schedule_add_piece(s, h->doc, h->h0, h->h1, r, ZS_LAYOUT_LINEAR, 0);
            if (h->t1 > h->t0)
                zs_schedule_add_piece(s, h->doc, h->t0, h->t1, r, ZS_LAYOUT_LINEAR, 0);
        }
        for (int32_t i = 0; i < D->nitems[k]; i++) {
            const zs_ca_item *it = &D->items[k][i];
            int r = slot_rank(D, it->server);
            if (it->h1 > it->h0)
                zs_schedule_add_piece(s, it->doc, it->h0, it->h1, r, ZS_LAYOUT_ATTN, 0);
            if (it->t1 > it->t0)
                zs_schedule_add_piece(s, it->doc, it->t0, it->t1, r, ZS_LAYOUT_ATTN, 0);
        }
    }
    return zs_schedule_check(s, e);
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *b, zs_schedule **out, zs_plan_report *rep,
                zs_err *e)
{
    long tp, nano, tol, block;
    int rc = read_opts(ctx, &tp, &nano, &tol, &block, e);
    if (rc)
        return rc;
    const zs_model *m = ctx->model;
    int nranks = zs_cluster_gpus(ctx->cluster), S = nranks / (int)tp;
    dca D;
    memset(&D, 0, sizeof D);
    D.ctx = ctx;
    D.b = b;
    D.tp = (int)tp;
    D.S = S;
    D.nano = (int)nano;
    D.heads = m->heads / D.tp;
    int kvh = m->kv_heads / D.tp > 0 ? m->kv_heads / D.tp : 1;
    D.bq = (double)D.heads * m->head_dim * m->dtype_bytes;
    D.bkv = 2.0 * kvh * m->head_dim * m->dtype_bytes;
    zs_mem_cfg mc = ctx->mem;
    mc.tp = D.tp;
    mc.pp = 1;
    mc.dp = S;
    zs_mem_breakdown mb;
    if ((rc = zs_mem_breakdown_compute(m, &ctx->cluster->gpu, &mc, &mb, e)))
        return rc;
    zs_schedule *s = zs_schedule_new(nranks);
    int32_t *nano_of = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1));
    int64_t *lin = calloc((size_t)S, sizeof(int64_t));
    D.tokens = calloc((size_t)S * NMAX, sizeof(int64_t));
    D.recv = malloc(sizeof(int64_t) * (size_t)S * S);
    D.nrecv = calloc((size_t)S, sizeof(int));
    zs_ca_sched_out so[NMAX];
    memset(so, 0, sizeof so);
    if (!s || !nano_of || !lin || !D.tokens || !D.recv || !D.nrecv) {
        rc = oom(e);
        goto out;
    }
    if ((rc = split_nano(&D, nano_of, e)))
        goto out;
    for (int k = 0; k < D.nano && !rc; k++) {
        if ((rc = layout(&D, k, nano_of, e)))
            break;
        D.cur = k;
        zs_ca_sched_in in = {S, tol / 100.0, (int32_t)block, load_fn, comm_fn, &D};
        if ((rc = zs_ca_schedule(&in, &D.items[k], &D.nitems[k], &D.cap[k], &so[k], e)) ||
            (rc = traffic(&D, k, e)))
            break;
    }
    if (rc)
        goto out;
    for (int sl = 0; sl < S; sl++) {
        for (int k = 0; k < D.nano; k++)
            lin[sl] += D.tokens[(size_t)k * S + sl];
        if (lin[sl] > mb.max_tokens) {
            char w[64];
            snprintf(w, sizeof w, "slot %d (rank %d)", sl, sl * D.tp);
            rc = zs_err_set(e, ZS_EINPUT, w, "use more GPUs, a smaller batch or recomputation",
                            "%lld tokens for the linear modules exceed the %ld that fit",
                            (long long)lin[sl], mb.max_tokens);
            goto out;
        }
    }
    for (int k = 0; k < D.nano && !rc; k++)
        if ((D.stream[k] = zs_schedule_add_stream(s, k ? "ca-pong" : "ca-ping")) < 0)
            rc = zs_schedule_check(s, e);
    if (rc || (rc = place(&D, s, e)))
        goto out;
    zs_iter_spec spec = {{D.tp, 1, 1, S}, 1,    lin, mc.recompute, mc.zero_stage,
                         ctx->seed,       emit, &D,  NULL,         0,
                         mc.fsdp};
    zs_iter_nano_spec ns = {D.nano, D.tokens};
    if ((rc = zs_iter_build_nano(s, ctx->cost, &spec, &ns, e)))
        goto out;
    double qb = 0, kvb = 0;
    for (int k = 0; k < D.nano; k++)
        for (size_t i = 0; i < (size_t)S * S; i++) {
            qb += (double)D.qtok[k][i] * D.bq * D.tp;
            kvb += (double)D.kvtok[k][i] * D.bkv * D.tp;
        }
    zs_plan_report_note(rep,
                        "distca: %d attention servers (TP groups of %d, in place), %d "
                        "nano-batch(es)%s, linear modules on equal token shares",
                        S, D.tp, D.nano, D.nano > 1 ? " (ping-pong)" : "");
    for (int k = 0; k < D.nano; k++)
        zs_plan_report_note(rep,
                            "nano-batch %d: %d tasks, %d moved whole, %d split off; predicted "
                            "core-attention imbalance %.3f -> %.3f (tol %ld%%, block %ld)",
                            k, D.nhome[k], so[k].moved, so[k].split, so[k].imb_before,
                            so[k].imb_after, tol, block);
    zs_plan_report_note(rep,
                        "per layer forward: %.1f MB of Q and %.1f MB of K/V sent to servers, "
                        "O back; backward dO out, dQ and dK/dV back",
                        qb / 1e6, kvb / 1e6);
out:
    dca_free(&D);
    free(nano_of);
    free(lin);
    if (rc) {
        zs_schedule_free(s);
        return rc;
    }
    *out = s;
    return ZS_OK;
}

static const zs_opt_spec *const options[] = {&opt_tp, &opt_nano, &opt_tol, &opt_block, NULL};

const zs_planner_ops zs_planner_distca = {
    .name = "distca",
    .summary = "DistCA (reconstructed): core attention disaggregated to in-place attention "
               "servers, tasks balanced by a greedy scheduler, ping-pong nano-batches",
    .options = options,
    .plan = plan};
