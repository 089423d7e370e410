/* The `flashcp` planner: a reconstruction of FlashCP (Wang et al., arXiv
 * 2606.08476). Only the paper's abstract is public; docs/methods.md lists
 * what it says and what is assumed here. From the abstract: documents are
 * sharded either whole on one CP rank ("Whole-Doc", no key/value traffic)
 * or per document ("Per-Doc", WLB-LLM's: 2 cp zigzag chunks, rank i holding
 * chunks i and 2cp-1-i), a heuristic searches the mix, and "sharding-aware"
 * communication sends each rank only the keys and values it lacks.
 *
 * Assumed (the reconstruction): the layout and batch split of the other CP
 * baselines (lower/zs_cpgroup.h: tp x cp x dp, documents to DP groups
 * longest first); in each CP group the k longest documents go Per-Doc and
 * the rest Whole-Doc, placed longest first on the rank of least predicted
 * time within the memory cap; k is searched over every value (0 to all)
 * and the plan of least predicted step time is kept, the step time of a
 * rank being its attention (forward + backward, cost model) plus its linear
 * modules plus the key/value transfers its Whole-Doc attention cannot hide;
 * "sharding-aware" communication moves only the K/V of Per-Doc documents
 * (Whole-Doc ones need none, where llama-cp gathers every document's): by
 * default one all-gather over the CP group of the Per-Doc chunks (NCCL's
 * ring crosses a node boundary once per shard), issued when attention
 * starts; kv=aware sends instead, point to point, only the chunks each
 * rank's causal prefix needs (rank i: chunks 0 .. 2cp-2-i but its own),
 * kv=all every chunk it lacks. The rank computes what it holds first
 * (Whole-Doc documents, its own chunks), the remote blocks once the K/V
 * are in; backward gathers (sends) the K/V again, as llama-cp, and
 * reduce-scatters (returns) dK/dV to the owners, which add them.
 * Options: cp (default 16, at most the TP groups), tp, whole=0|1 (default
 * 1; 0: Per-Doc only), kv=gather|aware|all (default gather). */
#include <stdlib.h>
#include <string.h>

#include "zs_cpgroup.h"
#include "zs_ring.h"
#include "zs_sort.h"

static const zs_opt_spec opt_cp =
    ZS__CPB_OPT_CP("16, or all GPUs / tp when fewer",
                   "context-parallel degree, CP groups of consecutive GPUs and DP across them");
static const zs_opt_spec opt_whole = {.key = "whole",
                                      .type = ZS_OPT_BOOL,
                                      .max = 1,
                                      .def = 1,
                                      .help = "Whole-Doc sharding allowed (0: Per-Doc only)"};
/* The values in the order of enum kvmode. */
static const zs_opt_spec opt_kv = {.key = "kv",
                                   .type = ZS_OPT_ENUM,
                                   .values = "gather|aware|all",
                                   .def = 0,
                                   .help = "K/V of Per-Doc documents: all-gather over the CP "
                                           "group, point-to-point sends of the causal prefix "
                                           "each rank needs, or of every chunk it lacks"};
enum kvmode { KV_GATHER = 0, KV_AWARE = 1, KV_ALL = 2 };

typedef struct fcp {
    zs_cpg c;
    const zs_plan_ctx *ctx;
    int whole, kvmode, heads, cp_stream;
    int64_t *pmax;    /* per group: the most Per-Doc tokens of one rank (kv=gather) */
    int32_t *wrank;   /* per document: its rank in the group (Whole-Doc), -1: Per-Doc */
    int64_t *kv;      /* [slot * cp + peer]: K/V tokens slot sends to peer (its group) */
    int64_t *tokens;  /* per slot */
    int npdoc, nwdoc; /* documents per mode */
    double kv_bytes;  /* per layer forward, whole batch */
} fcp;

static int oom(zs_err *e)
{
    return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
}

/* Chunk ranges of a Per-Doc document for rank i: head chunk i, tail chunk
 * 2cp-1-i. */
static void chunks(int32_t len, int cp, int i, int32_t *a0, int32_t *a1, int32_t *b0, int32_t *b1)
{
    zs_ring_chunk(len, cp, ZS_RING_EXACT, i, a0, a1);
    zs_ring_chunk(len, cp, ZS_RING_EXACT, 2 * cp - 1 - i, b0, b1);
}

/* K/V tokens of a Per-Doc document that rank i needs from rank r. */
static int64_t kv_need(int32_t len, int cp, int i, int r, int aware)
{
    if (r == i)
        return 0;
    int32_t a0, a1, b0, b1, t0, t1;
    chunks(len, cp, r, &a0, &a1, &b0, &b1);
    if (!aware)
        return (int64_t)(a1 - a0) + (b1 - b0);
    /* Rank i's tail chunk needs keys [0, start of chunk 2cp-1-i). */
    zs_ring_chunk(len, cp, ZS_RING_EXACT, 2 * cp - 1 - i, &t0, &t1);
    int64_t n = 0;
    n += a1 <= t0 ? a1 - a0 : (a0 < t0 ? t0 - a0 : 0);
    n += b1 <= t0 ? b1 - b0 : (b0 < t0 ? t0 - b0 : 0);
    return n;
}

/* Blocks of rank i for one document: local keys (lo) or remote (hi). */
static int doc_blocks(int32_t d, int32_t len, int cp, int i, int remote, zs_attn_block *blk)
{
    int32_t a0, a1, b0, b1;
    chunks(len, cp, i, &a0, &a1, &b0, &b1);
    int n = 0;
#define ADD(q0, q1, k0, k1)                                                                        \
    do {                                                                                           \
        if ((q1) > (q0) && (k1) > (k0))                                                            \
            blk[n++] = (zs_attn_block){d, q0, q1, k0, k1};                                         \
    } while (0)
    if (!remote) {
        ADD(a0, a1, a0, a1);
        ADD(b0, b1, b0, b1);
        ADD(b0, b1, a0, a1);
    } else {
        ADD(a0, a1, 0, a0);
        ADD(b0, b1, 0, a0);
        ADD(b0, b1, a1, b0);
    }
#undef ADD
    return n;
}

/* ---- the search ------------------------------------------------------------------- */

typedef struct gsearch {
    const fcp *F;
    int g, cp;
    int32_t n, *docs;    /* the group's documents, longest first */
    double *wcost;       /* per document: attention fwd + bwd whole, at the saturated rate */
    double *pcost;       /* [i * cp + r]: the same of rank r's Per-Doc share */
    int64_t *ptok;       /* [i * cp + r]: Per-Doc tokens of rank r */
    int64_t *pkv;        /* [i * cp + r]: Per-Doc K/V tokens rank r receives from its node */
    int nn;              /* nodes the group spans */
    int *node;           /* per rank of the group: its node (0 .. nn-1) */
    int *nics;           /* per node: NICs the group's ranks there use */
    int64_t *pin, *pout; /* [i * nn + node]: Per-Doc K/V tokens into / out of a node */
    double lin_tok;      /* seconds of linear modules per token (fwd + bwd) */
    double t_nv, t_nic;  /* seconds per K/V token over NVLink and over one NIC */
    double t_gather;     /* seconds of the group's all-gather per K/V token of a rank */
    /* scratch */
    double *attn;
    int64_t *tok, *kvin, *nin, *nout;
    int32_t *place;
    zs_attn_block *blk; /* one rank's blocks: 3 per document */
} gsearch;

/* Seconds of rank r's attention (forward + backward) under the plan whose
 * first k documents are Per-Doc, priced by the cost model as the emitter
 * launches it: what the rank holds (local) and, once the K/V are in, the
 * rest (remote). */
static void rank_attn(gsearch *G, int32_t k, int r, double *local, double *remote)
{
    const fcp *F = G->F;
    const zs_cost *cost = F->ctx->cost;
    for (int rem = 0; rem < 2; rem++) {
        int n = 0;
        for (int32_t i = 0; i < G->n; i++) {
            int32_t d = G->docs[i], L = F->c.len[d];
            if (i < k)
                n += doc_blocks(d, L, G->cp, r, rem, G->blk + n);
            else if (!rem && G->place[i] == r)
                G->blk[n++] = (zs_attn_block){d, 0, L, 0, L};
        }
        double t = n ? zs_cost_attn(cost, G->blk, n, F->heads, 0) +
                           zs_cost_attn(cost, G->blk, n, F->heads, 1)
                     : 0;
        *(rem ? remote : local) = t;
    }
}

/* Predicted step time of the plan "first k documents Per-Doc"; place[i]
 * gets the rank of Whole-Doc document i (-1 Per-Doc), longest first to the
 * rank of least predicted time (attention at the saturated rate: a
 * document joins a launch of many). -1 when they do not fit. The plan is
 * then priced rank by rank as launched (rank_attn), plus the linear
 * modules and what of the K/V exchange its local attention cannot hide. */
static double evaluate(gsearch *G, int32_t k)
{
    const fcp *F = G->F;
    int cp = G->cp;
    const int32_t *len = F->c.len;
    for (int r = 0; r < cp; r++) {
        G->attn[r] = 0;
        G->tok[r] = G->kvin[r] = 0;
    }
    for (int x = 0; x < G->nn; x++)
        G->nin[x] = G->nout[x] = 0;
    for (int32_t i = 0; i < k; i++) {
        G->place[i] = -1;
        for (int r = 0; r < cp; r++) {
            G->tok[r] += G->ptok[(size_t)i * cp + r];
            G->attn[r] += G->pcost[(size_t)i * cp + r];
            G->kvin[r] += G->pkv[(size_t)i * cp + r];
        }
        for (int x = 0; x < G->nn; x++) {
            G->nin[x] += G->pin[(size_t)i * G->nn + x];
            G->nout[x] += G->pout[(size_t)i * G->nn + x];
        }
    }
    /* The all-gather's buffer: the largest Per-Doc share of a rank. */
    int64_t pmax = 0;
    for (int r = 0; r < cp; r++)
        pmax = G->tok[r] > pmax ? G->tok[r] : pmax;
    for (int32_t i = k; i < G->n; i++) {
        int32_t L = len[G->docs[i]];
        int best = -1;
        double bt = 0;
        for (int r = 0; r < cp; r++) {
            if (G->tok[r] + L > F->c.cap)
                continue;
            double t = G->attn[r] + G->lin_tok * (double)G->tok[r];
            if (best < 0 || t < bt) {
                best = r;
                bt = t;
            }
        }
        if (best < 0)
            return -1;
        G->place[i] = best;
        G->tok[best] += L;
        G->attn[best] += G->wcost[i];
    }
    double worst = 0;
    for (int r = 0; r < cp; r++) {
        double local = 0, remote = 0;
        rank_attn(G, k, r, &local, &remote);
        /* The exchange: NVLink inside the node; across nodes, the node's
         * NICs carry all its ranks' traffic. Forward, the backward resend
         * and dK/dV back: three times the volume. */
        double comm;
        if (F->kvmode == KV_GATHER) {
            comm = 3.0 * G->t_gather * (double)pmax;
        } else {
            int x = G->node[r];
            int64_t cross = G->nin[x] > G->nout[x] ? G->nin[x] : G->nout[x];
            double nv = G->t_nv * (double)G->kvin[r], nic = G->t_nic * (double)cross / G->nics[x];
            comm = 3.0 * (nv > nic ? nv : nic);
        }
        comm -= local;
        double t = local + remote + G->lin_tok * (double)G->tok[r] + (comm > 0 ? comm : 0);
        worst = t > worst ? t : worst;
    }
    return worst;
}

static void gsearch_free(gsearch *G)
{
    free(G->docs);
    free(G->wcost);
    free(G->pcost);
    free(G->ptok);
    free(G->pkv);
    free(G->attn);
    free(G->blk);
    free(G->tok);
    free(G->kvin);
    free(G->node);
    free(G->nics);
    free(G->nin);
    free(G->nout);
    free(G->pin);
    free(G->pout);
    free(G->place);
}

/* The group's documents longest first, and the scratch of the search. */
static int gsearch_init(gsearch *G, fcp *F, int g, zs_err *e)
{
    const zs_cpg *c = &F->c;
    int cp = c->cp;
    memset(G, 0, sizeof *G);
    G->F = F;
    G->g = g;
    G->cp = cp;
    G->n = c->gstart[g + 1] - c->gstart[g];
    size_t n = (size_t)G->n, ncp = n * (size_t)cp;
    int32_t *lens = calloc(n + 1, sizeof(int32_t));
    G->docs = malloc(sizeof(int32_t) * (n + 1));
    G->wcost = malloc(sizeof(double) * (n + 1));
    G->pcost = malloc(sizeof(double) * (ncp + 1));
    G->ptok = malloc(sizeof(int64_t) * (ncp + 1));
    G->pkv = malloc(sizeof(int64_t) * (ncp + 1));
    G->pin = calloc(ncp + 1, sizeof(int64_t));
    G->pout = calloc(ncp + 1, sizeof(int64_t));
    G->attn = malloc(sizeof(double) * (size_t)cp);
    G->blk = malloc(sizeof(zs_attn_block) * (3 * n + 1));
    G->tok = malloc(sizeof(int64_t) * (size_t)cp);
    G->kvin = malloc(sizeof(int64_t) * (size_t)cp);
    G->node = malloc(sizeof(int) * (size_t)cp);
    G->nics = calloc((size_t)cp, sizeof(int));
    G->nin = malloc(sizeof(int64_t) * (size_t)cp);
    G->nout = malloc(sizeof(int64_t) * (size_t)cp);
    G->place = malloc(sizeof(int32_t) * (n + 1));
    int32_t *o = NULL;
    if (lens)
        for (int32_t i = 0; i < G->n; i++)
            lens[i] = c->len[c->gdocs[c->gstart[g] + i]];
    if (!lens || !G->docs || !G->wcost || !G->pcost || !G->ptok || !G->pkv || !G->pin || !G->pout ||
        !G->attn || !G->blk || !G->tok || !G->kvin || !G->node || !G->nics || !G->nin || !G->nout ||
        !G->place || !(o = zs_order_longest_first(lens, G->n))) {
        free(lens);
        gsearch_free(G);
        return oom(e);
    }
    for (int32_t i = 0; i < G->n; i++)
        G->docs[i] = c->gdocs[c->gstart[g] + o[i]];
    free(lens);
    free(o);
    return ZS_OK;
}

/* The group's nodes and the NICs it uses on each (GPUs reach their NIC by
 * affinity); seconds per token of the linear modules and per K/V token on
 * each kind of path, from the cost model. */
static void gsearch_paths(gsearch *G)
{
    const fcp *F = G->F;
    const zs_cpg *c = &F->c;
    const zs_plan_ctx *ctx = F->ctx;
    const zs_model *m = ctx->model;
    const zs_cluster *cl = ctx->cluster;
    int cp = c->cp, g = G->g;
    /* Per token at the size a rank runs (its share of the group's tokens):
     * every document of a rank goes through the same GEMMs. */
    double T = (double)c->gtokens[g] / cp > 1 ? (double)c->gtokens[g] / cp : 1;
    G->lin_tok =
        3.0 *
        zs_cost_gemm(ctx->cost, T, zs_model_linear_flops_per_token(m) / (2.0 * m->hidden) / c->tp,
                     m->hidden) /
        T;
    int r0 = zs_cpg_rank(c, zs_cpg_slot(c, g, 0)), far = -1, near = -1;
    int nic_seen[64][8];
    memset(nic_seen, 0, sizeof nic_seen);
    for (int r = 0; r < cp; r++) {
        int rk = zs_cpg_rank(c, zs_cpg_slot(c, g, r));
        int x = zs_cluster_node_of(cl, rk) - zs_cluster_node_of(cl, r0);
        G->node[r] = x < 64 ? x : 63;
        G->nn = G->node[r] + 1 > G->nn ? G->node[r] + 1 : G->nn;
        int nic = zs_cluster_nic_of(cl, rk) % 8;
        if (!nic_seen[G->node[r]][nic]++)
            G->nics[G->node[r]]++;
        if (x != 0 && far < 0)
            far = rk;
        if (x == 0 && rk != r0 && near < 0)
            near = rk;
    }
    double kvb = zs_cpg_kv_bytes(m, c->tp, 1 << 20);
    G->t_nv = near >= 0 ? zs_cost_p2p(ctx->cost, r0, near, kvb) / (1 << 20) : 0;
    G->t_nic = far >= 0 ? zs_cost_p2p(ctx->cost, r0, far, kvb) / (1 << 20) : 0;
    int granks[1024];
    int ng = cp < 1024 ? cp : 1024;
    for (int r = 0; r < ng; r++)
        granks[r] = zs_cpg_rank(c, zs_cpg_slot(c, g, r));
    G->t_gather = zs_cost_collective(ctx->cost, ZS_COLL_ALLGATHER, granks, ng, kvb) / (1 << 20);
}

/* The cost model's saturated attention rate: seconds (forward + backward)
 * per causal query-key pair of a launch large enough to fill the GPU. */
static double pair_seconds(const zs_cost *cost, int heads)
{
    zs_attn_block b = {0, 0, 32768, 0, 32768};
    double p = (double)zs_attn_block_pairs(&b);
    return (zs_cost_attn(cost, &b, 1, heads, 0) + zs_cost_attn(cost, &b, 1, heads, 1)) / p;
}

static double blocks_pairs(const zs_attn_block *b, int n)
{
    double p = 0;
    for (int i = 0; i < n; i++)
        p += (double)zs_attn_block_pairs(&b[i]);
    return p;
}

/* Per document: its attention whole, and per rank its Per-Doc attention,
 * tokens and the K/V it receives (inside its node, or across nodes). */
static void gsearch_docs(gsearch *G)
{
    const fcp *F = G->F;
    int cp = G->cp, nn = G->nn;
    double tp = pair_seconds(F->ctx->cost, F->heads);
    zs_attn_block blk[6];
    for (int32_t i = 0; i < G->n; i++) {
        int32_t d = G->docs[i], L = F->c.len[d];
        zs_attn_block w = {d, 0, L, 0, L};
        G->wcost[i] = tp * (double)zs_attn_block_pairs(&w);
        for (int r = 0; r < cp; r++) {
            int32_t a0, a1, b0, b1;
            size_t ir = (size_t)i * cp + r;
            chunks(L, cp, r, &a0, &a1, &b0, &b1);
            G->ptok[ir] = (a1 - a0) + (b1 - b0);
            G->pkv[ir] = 0;
            for (int q = 0; q < cp; q++) {
                int64_t t = kv_need(L, cp, r, q, F->kvmode == KV_AWARE);
                if (G->node[q] == G->node[r]) {
                    G->pkv[ir] += t;
                } else {
                    G->pin[(size_t)i * nn + G->node[r]] += t;
                    G->pout[(size_t)i * nn + G->node[q]] += t;
                }
            }
            int nb = doc_blocks(d, L, cp, r, 0, blk);
            nb += doc_blocks(d, L, cp, r, 1, blk + nb);
            G->pcost[ir] = tp * blocks_pairs(blk, nb);
        }
    }
}

/* The k the search tries after k: every one up to 32, then steps of an
 * eighth (the plan is priced launch by launch, so the search stays near
 * n log n evaluations), and n last. */
static int32_t next_k(int32_t k, int32_t n)
{
    if (k >= n)
        return n + 1;
    int32_t nk = k < 32 ? k + 1 : k + k / 8;
    return nk < n ? nk : n;
}

/* The search of one CP group: k from all Whole-Doc to all Per-Doc (only
 * all Per-Doc with whole=0); the least predicted step time wins, ties to
 * fewer Per-Doc documents. */
static int search_group(fcp *F, int g, zs_err *e)
{
    const zs_cpg *c = &F->c;
    if (c->gstart[g + 1] == c->gstart[g])
        return ZS_OK;
    gsearch G;
    int rc = gsearch_init(&G, F, g, e);
    if (rc)
        return rc;
    int32_t *best_place = malloc(sizeof(int32_t) * (size_t)(G.n + 1));
    if (!best_place) {
        gsearch_free(&G);
        return oom(e);
    }
    gsearch_paths(&G);
    gsearch_docs(&G);
    int32_t best_k = -1;
    double best = 0;
    for (int32_t k = F->whole ? 0 : G.n; k <= G.n; k = next_k(k, G.n)) {
        double t = evaluate(&G, k);
        if (t >= 0 && (best_k < 0 || t < best)) {
            best = t;
            best_k = k;
            memcpy(best_place, G.place, sizeof(int32_t) * (size_t)G.n);
        }
    }
    if (best_k < 0)
        rc = zs_cpg_overflow(c, g, c->gtokens[g] / c->cp + 1, e);
    for (int32_t i = 0; i < G.n && !rc; i++) {
        F->wrank[G.docs[i]] = best_place[i];
        if (best_place[i] < 0)
            F->npdoc++;
        else
            F->nwdoc++;
    }
    free(best_place);
    gsearch_free(&G);
    return rc;
}

/* ---- the emitter ------------------------------------------------------------------ */

/* All blocks of slot k of group g: local (remote = 0) or remote. */
static int slot_blocks(const fcp *F, int g, int k, int remote, zs_attn_block *blk)
{
    const zs_cpg *c = &F->c;
    int n = 0;
    for (int i = c->gstart[g]; i < c->gstart[g + 1]; i++) {
        int32_t d = c->gdocs[i], L = c->len[d];
        if (F->wrank[d] >= 0) {
            if (!remote && F->wrank[d] == k)
                blk[n++] = (zs_attn_block){d, 0, L, 0, L};
        } else {
            n += doc_blocks(d, L, c->cp, k, remote, blk + n);
        }
    }
    return n;
}

/* Scratch of the emitter, per CP group. */
typedef struct escratch {
    zs_attn_block *blk;
    int64_t *recv; /* [k * (cp + 1) ..]: what rank k's remote blocks wait for */
    int64_t *last; /* per rank: its last op */
    int *nrecv, *ranks;
    int grp;   /* the group's communicator (kv=gather), -1 none */
    double gb; /* the all-gather's buffer */
} escratch;

/* K/V of the Per-Doc documents to the ranks that need them: the
 * all-gather, or point-to-point sends. */
static void exchange(const fcp *F, zs_iter *it, int stage, int g, escratch *x, int tag)
{
    const zs_cpg *c = &F->c;
    zs_schedule *s = zs_iter_schedule(it);
    int cp = c->cp;
    double kvb1 = zs_cpg_kv_bytes(&zs_iter_cost(it)->model, c->tp, 1);
    for (int k = 0; k < cp; k++) {
        x->nrecv[k] = 0;
        x->ranks[k] = zs_iter_rank(it, stage, zs_cpg_slot(c, g, k));
    }
    x->grp = F->kvmode == KV_GATHER && F->pmax[g] > 0 ? zs_schedule_group(s, x->ranks, cp) : -1;
    x->gb = x->grp >= 0 ? kvb1 * (double)F->pmax[g] : 0;
    for (int k = 0; k < cp && x->grp >= 0; k++) {
        int64_t dep[1] = {zs_iter_entry(it, zs_cpg_slot(c, g, k))};
        x->recv[(size_t)k * (cp + 1) + x->nrecv[k]++] =
            zs_sched_coll(s, x->ranks[k], F->cp_stream, "cp-kv-all-gather", x->grp,
                          ZS_COLL_ALLGATHER, x->gb, dep, 1);
    }
    for (int k = 0; k < cp && F->kvmode != KV_GATHER; k++)
        for (int q = 0; q < cp; q++) {
            int64_t n = F->kv[(size_t)zs_cpg_slot(c, g, k) * cp + q];
            if (n == 0)
                continue;
            int64_t dep[1] = {zs_iter_entry(it, zs_cpg_slot(c, g, k))};
            zs_sched_send(s, x->ranks[k], F->cp_stream, "cp-kv", x->ranks[q], tag, kvb1 * (double)n,
                          dep, 1);
            x->recv[(size_t)q * (cp + 1) + x->nrecv[q]++] = zs_sched_recv(
                s, x->ranks[q], F->cp_stream, "cp-kv", x->ranks[k], tag, kvb1 * (double)n, NULL, 0);
        }
}

/* What a rank holds first, the remote blocks once the K/V are in. */
static void compute(const fcp *F, zs_iter *it, int stage, int g, escratch *x, int backward)
{
    const zs_cpg *c = &F->c;
    zs_schedule *s = zs_iter_schedule(it);
    const zs_cost *cost = zs_iter_cost(it);
    int cp = c->cp;
    for (int k = 0; k < cp; k++) {
        int sl = zs_cpg_slot(c, g, k), r = x->ranks[k];
        x->last[k] = zs_iter_entry(it, sl);
        int n = slot_blocks(F, g, k, 0, x->blk);
        if (n > 0) {
            int64_t dep[1] = {x->last[k]};
            x->last[k] = zs_sched_attn(s, r, ZS_STREAM_COMPUTE, backward ? "attn-bwd" : "attn-fwd",
                                       backward, x->blk, n, F->heads,
                                       zs_cost_attn(cost, x->blk, n, F->heads, backward), dep, 1);
        }
        n = slot_blocks(F, g, k, 1, x->blk);
        if (n == 0 && x->nrecv[k] == 0)
            continue;
        int64_t *dep = x->recv + (size_t)k * (cp + 1);
        dep[x->nrecv[k]] = x->last[k];
        if (n > 0)
            x->last[k] = zs_sched_attn(
                s, r, ZS_STREAM_COMPUTE, backward ? "cp-attn-bwd" : "cp-attn-fwd", backward, x->blk,
                n, F->heads, zs_cost_attn(cost, x->blk, n, F->heads, backward), dep,
                x->nrecv[k] + 1);
        else /* keys that arrive unused (kv=all) still arrive first */
            x->last[k] = zs_sched_elementwise(s, r, ZS_STREAM_COMPUTE, "cp-kv-wait", 0, 0, dep,
                                              x->nrecv[k] + 1);
    }
}

/* Backward: dK/dV back to the owners (reduce-scatter, or sends and an
 * add at the owner). */
static void return_grads(const fcp *F, zs_iter *it, int g, escratch *x, int tag)
{
    const zs_cpg *c = &F->c;
    zs_schedule *s = zs_iter_schedule(it);
    const zs_cost *cost = zs_iter_cost(it);
    int cp = c->cp;
    double kvb1 = zs_cpg_kv_bytes(&cost->model, c->tp, 1);
    if (x->grp >= 0) {
        for (int k = 0; k < cp; k++) {
            int64_t dep[1] = {x->last[k]};
            x->last[k] = zs_sched_coll(s, x->ranks[k], F->cp_stream, "cp-dkv-reduce-scatter",
                                       x->grp, ZS_COLL_REDUCESCATTER, x->gb, dep, 1);
        }
        return;
    }
    for (int k = 0; k < cp; k++)
        x->nrecv[k] = 0;
    for (int k = 0; k < cp; k++)
        for (int q = 0; q < cp; q++) {
            int64_t n = F->kv[(size_t)zs_cpg_slot(c, g, k) * cp + q];
            if (n == 0)
                continue;
            int64_t dep[1] = {x->last[q]};
            zs_sched_send(s, x->ranks[q], F->cp_stream, "cp-dkv", x->ranks[k], tag,
                          kvb1 * (double)n, dep, 1);
            x->recv[(size_t)k * (cp + 1) + x->nrecv[k]++] =
                zs_sched_recv(s, x->ranks[k], F->cp_stream, "cp-dkv", x->ranks[q], tag,
                              kvb1 * (double)n, NULL, 0);
        }
    /* The owner adds them to its own (read two, write one). */
    for (int k = 0; k < cp; k++) {
        if (x->nrecv[k] == 0)
            continue;
        int sl = zs_cpg_slot(c, g, k);
        double by = 0;
        for (int q = 0; q < cp; q++)
            by += 3.0 * kvb1 * (double)F->kv[(size_t)sl * cp + q];
        int64_t *dep = x->recv + (size_t)k * (cp + 1);
        dep[x->nrecv[k]] = x->last[k];
        x->last[k] = zs_sched_elementwise(s, x->ranks[k], ZS_STREAM_COMPUTE, "cp-dkv-add", by,
                                          zs_cost_elementwise(cost, by), dep, x->nrecv[k] + 1);
    }
}

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    fcp *F = arg;
    const zs_cpg *c = &F->c;
    int cp = c->cp;
    (void)micro;
    int maxdocs = 1;
    for (int g = 0; g < c->dp; g++)
        if (c->gstart[g + 1] - c->gstart[g] > maxdocs)
            maxdocs = c->gstart[g + 1] - c->gstart[g];
    escratch x;
    x.blk = malloc(sizeof(zs_attn_block) * (size_t)maxdocs * 3);
    x.recv = malloc(sizeof(int64_t) * (size_t)cp * (cp + 1));
    x.last = malloc(sizeof(int64_t) * (size_t)cp);
    x.nrecv = calloc((size_t)cp, sizeof(int));
    x.ranks = malloc(sizeof(int) * (size_t)cp);
    int rc = ZS_OK;
    if (!x.blk || !x.recv || !x.last || !x.nrecv || !x.ranks)
        rc = oom(e);
    int tag = zs_iter_tag(it), tag_back = backward ? zs_iter_tag(it) : 0;
    for (int g = 0; g < c->dp && !rc; g++) {
        exchange(F, it, stage, g, &x, tag);
        compute(F, it, stage, g, &x, backward);
        if (backward)
            return_grads(F, it, g, &x, tag_back);
        for (int k = 0; k < cp; k++)
            zs_iter_set_exit(it, zs_cpg_slot(c, g, k), x.last[k]);
    }
    free(x.blk);
    free(x.recv);
    free(x.last);
    free(x.nrecv);
    free(x.ranks);
    return rc ? rc : zs_schedule_check(zs_iter_schedule(it), e);
}

/* ---- planning -------------------------------------------------------------------- */

static int plan(const zs_plan_ctx *ctx, const zs_batch *b, zs_schedule **out, zs_plan_report *rep,
                zs_err *e)
{
    fcp F;
    memset(&F, 0, sizeof F);
    F.ctx = ctx;
    int rc = zs_cpg_init(ctx, b, &opt_cp, 16, zs_cpg_fp_even, &F.c, e);
    if (!rc)
        rc = zs_opt_bool(ctx->opts, &opt_whole, &F.whole, e);
    if (!rc)
        rc = zs_opt_enum(ctx->opts, &opt_kv, &F.kvmode, e);
    if (rc) {
        zs_cpg_free(&F.c);
        return rc;
    }
    zs_cpg *c = &F.c;
    int cp = c->cp;
    F.heads = ctx->model->heads / c->tp;
    zs_schedule *s = NULL;
    F.wrank = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1));
    F.kv = calloc((size_t)c->nslots * cp, sizeof(int64_t));
    F.tokens = calloc((size_t)c->nslots, sizeof(int64_t));
    F.pmax = calloc((size_t)c->dp, sizeof(int64_t));
    if (!F.wrank || !F.kv || !F.tokens || !F.pmax) {
        rc = oom(e);
        goto out;
    }
    for (int g = 0; g < c->dp && !rc; g++)
        rc = search_group(&F, g, e);
    if (rc || (rc = zs_cpg_schedule(c, &s, &F.cp_stream, e)))
        goto out;
    for (int g = 0; g < c->dp && !rc; g++)
        for (int i = c->gstart[g]; i < c->gstart[g + 1] && !rc; i++) {
            int32_t d = c->gdocs[i], L = c->len[d];
            if (F.wrank[d] >= 0) {
                int sl = zs_cpg_slot(c, g, F.wrank[d]);
                F.tokens[sl] += L;
                rc = zs_cpg_piece(s, c, d, 0, L, sl, e);
                continue;
            }
            for (int k = 0; k < cp && !rc; k++) {
                int sl = zs_cpg_slot(c, g, k);
                int32_t a0, a1, b0, b1;
                chunks(L, cp, k, &a0, &a1, &b0, &b1);
                F.tokens[sl] += (a1 - a0) + (b1 - b0);
                rc = zs_cpg_piece(s, c, d, a0, a1, sl, e);
                if (!rc)
                    rc = zs_cpg_piece(s, c, d, b0, b1, sl, e);
                /* What rank k sends to each peer: the chunks the peer needs. */
                for (int q = 0; q < cp && F.kvmode != KV_GATHER; q++) {
                    int64_t n = kv_need(L, cp, q, k, F.kvmode == KV_AWARE);
                    F.kv[(size_t)sl * cp + q] += n;
                    F.kv_bytes += zs_cpg_kv_bytes(ctx->model, 1, n);
                }
            }
        }
    if (rc)
        goto out;
    /* The all-gather's buffer: the group's largest Per-Doc share (NCCL
     * collectives move equal buffers). */
    for (int g = 0; g < c->dp && F.kvmode == KV_GATHER; g++) {
        for (int k = 0; k < cp; k++) {
            int64_t t = 0;
            for (int i = c->gstart[g]; i < c->gstart[g + 1]; i++) {
                int32_t d = c->gdocs[i], a0, a1, b0, b1;
                if (F.wrank[d] >= 0)
                    continue;
                chunks(c->len[d], cp, k, &a0, &a1, &b0, &b1);
                t += (a1 - a0) + (b1 - b0);
            }
            F.pmax[g] = t > F.pmax[g] ? t : F.pmax[g];
        }
        F.kv_bytes += zs_cpg_kv_bytes(ctx->model, 1, F.pmax[g]) * (cp - 1) * cp;
    }
    zs_cpg_note(c, rep,
                "flashcp (reconstructed from the abstract): Whole-Doc or Per-Doc per document, "
                "searched per CP group by predicted step time");
    zs_plan_report_note(rep,
                        "%d Whole-Doc and %d Per-Doc documents; K/V of the Per-Doc ones %s: "
                        "%.1f MB per layer forward, again in backward, dK/dV back",
                        F.nwdoc, F.npdoc,
                        F.kvmode == KV_GATHER  ? "all-gathered over the CP group"
                        : F.kvmode == KV_AWARE ? "sent to the ranks whose causal prefix needs them"
                                               : "sent to every rank that lacks them",
                        F.kv_bytes / 1e6);
    rc = zs_cpg_build(c, ctx, s, F.tokens, emit, &F, e);
out:
    free(F.wrank);
    free(F.kv);
    free(F.tokens);
    free(F.pmax);
    return zs_cpg_finish(&F.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_cp, &zs_opt_tp, &opt_whole, &opt_kv, NULL};

const zs_planner_ops zs_planner_flashcp = {
    .name = "flashcp",
    .summary = "FlashCP (reconstructed from its abstract): Whole-Doc / Per-Doc sharding mix "
               "searched per CP group, K/V of Per-Doc documents only",
    .options = options,
    .plan = plan};
