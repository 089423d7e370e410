/* The `flexsp` planner: FlexSP (Wang et al., ASPLOS '25, arXiv 2412.01523;
 * PKU-DAIR/Hetu-Galvatron, branch flexsp), heterogeneity-adaptive sequence
 * parallelism, reconstructed (docs/methods.md says what is reconstructed
 * and what assumed).
 *
 * Per global batch, the solver of zs_flexsp_solve_internal.h cuts the
 * sequences into micro-batches (its Sequence Blaster) and, per
 * micro-batch, partitions all GPUs into sequence-parallel groups of
 * power-of-two sizes and assigns every sequence to one, minimising the
 * slowest group's predicted time. A group runs DeepSpeed-Ulysses over its
 * sequences, as the ulysses planner does on its fixed group: the group's
 * sequences packed into one cut into n contiguous shards (kept for the
 * linear modules), an all-to-all of Q/K/V from sequence to heads, attention
 * of whole sequences with heads/n heads, and O back (dO forward and dQ/dK/dV
 * back in backward); a group of one GPU runs local attention. Micro-batches
 * run one after the other with gradient accumulation; gradients are
 * reduced (ZeRO) over all GPUs after the last, as FlexSP does with ZeRO over
 * its whole data-parallel world.
 *
 * The solver prices a sequence of len tokens on a group of n GPUs as its
 * attention with heads/n heads (forward and backward, from the cost model's
 * attention kernel), plus its len/n tokens' linear modules and Ulysses
 * all-to-alls at per-token rates of the cost model (measured once per group
 * size on the group's own GPUs); FlexSP fits the same shape (quadratic plus
 * linear compute over n, all-to-all bytes over a per-size bandwidth).
 * Options: tp, min_sp, max_sp, buckets, exact (the option rows). */
#include <limits.h>
#include <stdlib.h>

#include "zs_cpgroup.h"
#include "zs_flexsp_solve_internal.h"

static const zs_opt_spec opt_min_sp = {
    .key = "min_sp",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = 1L << 20,
    .def = 2,
    .help = "the smallest SP group, a power of two (the released solver leaves out groups of one)"};
/* Its bound depends on the model's heads and the cluster: read_options()
 * checks it. */
static const zs_opt_spec opt_max_sp = {
    .key = "max_sp",
    .type = ZS_OPT_INT,
    .min = 1,
    .max = 1L << 20,
    .computed = "the largest power of two of at most GPUs / tp over which Ulysses can split the "
                "query and KV heads per GPU",
    .help = "the largest SP group, a power of two"};
static const zs_opt_spec opt_buckets = {
    .key = "buckets",
    .type = ZS_OPT_INT,
    .min = 0,
    .max = 1L << 20,
    .def = 16,
    .help = "sequence buckets the solver starts from (it adds more while padding is large; 0: "
            "price every sequence at its own length)"};
static const zs_opt_spec opt_exact = {
    .key = "exact",
    .type = ZS_OPT_INT,
    .min = 0,
    .max = 64,
    .def = 8,
    .help = "micro-batches of up to this many sequences get an exhaustive search of their "
            "assignment (others the greedy one)"};

/* The solver's cost model: per group size, the per-token seconds of the
 * linear modules and of the all-to-alls, and what attention needs. */
typedef struct fcost {
    const zs_cost *cost;
    int hq, recompute;
    double lin_rate;
    double a2a_rate[32]; /* by log2 of the group size */
} fcost;

typedef struct flexsp {
    zs_cpg c;
    int cp_stream;
    zs_flexsp_plan p;
    int64_t *shard; /* [micro * nslots + slot]: tokens of the packed sequence */
} flexsp;

static int log2i(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

static double seq_cost(void *arg, int32_t len, int n)
{
    const fcost *F = arg;
    zs_attn_block b = {0, 0, len, 0, len};
    int heads = F->hq / n > 0 ? F->hq / n : 1;
    double fwd = zs_cost_attn(F->cost, &b, 1, heads, 0),
           bwd = zs_cost_attn(F->cost, &b, 1, heads, 1);
    double attn = fwd * (1 + F->recompute) + bwd;
    return attn + (F->lin_rate + F->a2a_rate[log2i(n)]) * (double)len / n;
}

/* Per-token rates at one GPU's capacity (a full shard: large enough that
 * fixed launch and latency costs do not dominate, as FlexSP's linear model
 * has none): the linear ops of a layer (forward, backward and a recomputed
 * forward), and per group size the four Ulysses all-to-alls over the
 * group's first GPUs (groups are aligned to their size, so every group of a
 * size sees the same links; sizes past 1024 GPUs take the 1024 rate). */
static int rates(const zs_plan_ctx *ctx, const zs_cpg *c, int max_sp, fcost *F, zs_err *e)
{
    const zs_model *m = ctx->model;
    zs_iter_lin l;
    double T = (double)c->cap;
    int rc =
        zs_iter_linear_time(ctx->cost, c->tp, ctx->cluster->gpus_per_node / c->tp, T, 0, &l, e);
    if (rc)
        return rc;
    double fwd = l.fwd_entry + l.fwd_post;
    F->lin_rate = (fwd * (1 + F->recompute) + l.bwd_entry + l.bwd_post) / T;
    int hkv = m->kv_heads / c->tp > 0 ? m->kv_heads / c->tp : 1;
    double tok_q = (double)F->hq * m->head_dim * m->dtype_bytes;
    double tok_qkv = (double)(F->hq + 2 * hkv) * m->head_dim * m->dtype_bytes;
    int ranks[1 << 10];
    F->a2a_rate[0] = 0;
    for (int n = 2; n <= max_sp; n *= 2) {
        if (n > (1 << 10)) {
            F->a2a_rate[log2i(n)] = F->a2a_rate[10];
            continue;
        }
        for (int k = 0; k < n; k++)
            ranks[k] = zs_cpg_rank(c, k);
        double S = T;
        double a = zs_cost_collective(ctx->cost, ZS_COLL_ALLTOALL, ranks, n, S * tok_qkv) +
                   zs_cost_collective(ctx->cost, ZS_COLL_ALLTOALL, ranks, n, S * tok_q);
        /* Q/K/V and O forward (again when recomputed), dO and dQ/dK/dV
         * backward: per token of a GPU's shard. */
        F->a2a_rate[log2i(n)] = a * (2 + F->recompute) / S;
    }
    return ZS_OK;
}

static int64_t a2a(zs_schedule *s, int rank, int stream, const char *label, int grp, double bytes,
                   int64_t dep)
{
    int64_t d1[1] = {dep};
    return zs_sched_coll(s, rank, stream, label, grp, ZS_COLL_ALLTOALL, bytes, d1, dep >= 0);
}

/* One group's Ulysses attention pass (forward or backward) on its slots. */
static int group_attn(flexsp *F, zs_iter *it, int stage, int micro, int g, int backward,
                      zs_attn_block *blk, int *ranks)
{
    const zs_flexsp_plan *p = &F->p;
    zs_schedule *s = zs_iter_schedule(it);
    const zs_model *m = &zs_iter_cost(it)->model;
    int n = p->size[g], first = p->first[g], nd = 0;
    for (int i = p->doc_start[g]; i < p->doc_start[g + 1]; i++) {
        int d = p->docs[i];
        blk[nd++] = (zs_attn_block){d, 0, s->doc_len[d], 0, s->doc_len[d]};
    }
    int hq = zs_iter_heads(it), hkv = zs_iter_kv_heads(it), heads = hq / n;
    double tok_q = (double)hq * m->head_dim * m->dtype_bytes;
    double tok_qkv = (double)(hq + 2 * hkv) * m->head_dim * m->dtype_bytes;
    int64_t most = 0;
    for (int k = 0; k < n; k++) {
        ranks[k] = zs_iter_rank(it, stage, first + k);
        int64_t sh = F->shard[(size_t)micro * p->nslots + first + k];
        most = sh > most ? sh : most;
    }
    int grp = n > 1 ? zs_schedule_group(s, ranks, n) : -1;
    double t = nd > 0 ? zs_cost_attn(zs_iter_cost(it), blk, nd, heads, backward) : 0;
    for (int k = 0; k < n && nd > 0; k++) {
        int64_t last = zs_iter_entry(it, first + k);
        if (grp >= 0)
            last = a2a(s, ranks[k], F->cp_stream, backward ? "a2a-do" : "a2a-qkv", grp,
                       (double)most * (backward ? tok_q : tok_qkv), last);
        int64_t d1[1] = {last};
        last = zs_sched_attn(s, ranks[k], ZS_STREAM_COMPUTE,
                             backward ? "flexsp-attn-bwd" : "flexsp-attn-fwd", backward, blk, nd,
                             heads, t, d1, last >= 0);
        if (grp >= 0)
            last = a2a(s, ranks[k], F->cp_stream, backward ? "a2a-dqkv" : "a2a-o", grp,
                       (double)most * (backward ? tok_qkv : tok_q), last);
        zs_iter_set_exit(it, first + k, last);
    }
    return ZS_OK;
}

static int emit(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    flexsp *F = arg;
    const zs_flexsp_plan *p = &F->p;
    int maxdocs = 1;
    for (int g = 0; g < p->ngroups; g++)
        if (p->doc_start[g + 1] - p->doc_start[g] > maxdocs)
            maxdocs = p->doc_start[g + 1] - p->doc_start[g];
    zs_attn_block *blk = malloc(sizeof(zs_attn_block) * (size_t)maxdocs);
    int *ranks = malloc(sizeof(int) * (size_t)p->nslots);
    int rc = ZS_OK;
    if (!blk || !ranks) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    /* A GPU whose group has no sequence (fewer sequences than groups) has
     * no attention. */
    for (int sl = 0; sl < p->nslots; sl++)
        zs_iter_set_exit(it, sl, zs_iter_entry(it, sl));
    int g0 = micro < p->nmicro ? p->micro_start[micro] : 0;
    int g1 = micro < p->nmicro ? p->micro_start[micro + 1] : 0;
    for (int g = g0; g < g1 && rc == ZS_OK; g++)
        rc = group_attn(F, it, stage, micro, g, backward, blk, ranks);
    if (!rc)
        rc = zs_schedule_check(zs_iter_schedule(it), e);
out:
    free(blk);
    free(ranks);
    return rc;
}

/* Cuts each group's packed sequence (its documents in batch order) into
 * size contiguous shards, the remainder tokens one each to its first GPUs,
 * for attention and the linear modules alike. */
static int place(flexsp *F, zs_schedule *s, zs_err *e)
{
    const zs_flexsp_plan *p = &F->p;
    int rc = ZS_OK;
    for (int mb = 0; mb < p->nmicro && !rc; mb++)
        for (int g = p->micro_start[mb]; g < p->micro_start[mb + 1] && !rc; g++)
            rc = zs_cpg_place_packed(s, &F->c, p->docs + p->doc_start[g],
                                     p->doc_start[g + 1] - p->doc_start[g], p->size[g], p->first[g],
                                     mb, F->shard + (size_t)mb * p->nslots, e);
    return rc;
}

/* The layout (tp x all GPUs as one data-parallel world, pp = 1), the
 * memory model's token capacity and the batch. */
static int layout(const zs_plan_ctx *ctx, const zs_batch *b, zs_cpg *c, zs_err *e)
{
    long tp;
    int rc = zs_plan_opt_tp(ctx, &zs_opt_tp, 0, &tp, e);
    if (rc)
        return rc;
    c->tp = (int)tp;
    c->nranks = zs_cluster_gpus(ctx->cluster);
    c->nslots = c->nranks / c->tp;
    c->cp = 1;
    c->dp = c->nslots;
    c->mc = ctx->mem;
    c->mc.tp = c->tp;
    c->mc.pp = 1;
    c->mc.dp = c->nslots; /* ZeRO shards over every GPU of the world */
    long cap;
    if ((rc = zs_mem_token_capacity(ctx->model, &ctx->cluster->gpu, &c->mc,
                                    "use ZeRO sharding, recomputation, tensor parallelism or a "
                                    "larger GPU",
                                    &cap, e)))
        return rc;
    c->cap = cap;
    c->ndocs = b->ndocs;
    c->len = b->len;
    return ZS_OK;
}

static int pow2(long n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

/* The largest group Ulysses can use: a power of two of at most nslots
 * dividing the query and KV heads per GPU. */
static int heads_limit(int hq, int hkv, int nslots)
{
    int n = 1;
    while (2 * n <= nslots && hq % (2 * n) == 0 && hkv % (2 * n) == 0)
        n *= 2;
    return n;
}

static int read_options(const zs_plan_ctx *ctx, const zs_cpg *c, int hq, int hkv,
                        zs_flexsp_cfg *cfg, zs_err *e)
{
    long min_sp, max_sp, buckets, exact;
    int lim = heads_limit(hq, hkv, c->nslots), rc;
    if ((rc = zs_opt_int(ctx->opts, &opt_min_sp, &min_sp, e)) ||
        (rc = zs_opt_int_def(ctx->opts, &opt_max_sp, lim, &max_sp, e)) ||
        (rc = zs_opt_int(ctx->opts, &opt_buckets, &buckets, e)) ||
        (rc = zs_opt_int(ctx->opts, &opt_exact, &exact, e)))
        return rc;
    if (!pow2(max_sp) || max_sp > lim) {
        char fix[128];
        snprintf(fix, sizeof fix, "give a power of two of at most %d", lim);
        return zs_err_set(e, ZS_EUSAGE, opt_max_sp.key, fix,
                          "max_sp=%ld: Ulysses groups split %d query and %d KV heads per GPU "
                          "(tp=%d) over at most %d GPUs (a power of two dividing both, within "
                          "the %d GPUs / tp)",
                          max_sp, hq, hkv, c->tp, lim, c->nslots);
    }
    if (!pow2(min_sp) || min_sp > max_sp || c->nslots % min_sp != 0) {
        char fix[128];
        snprintf(fix, sizeof fix, "give a power of two of at most max_sp=%ld dividing %d", max_sp,
                 c->nslots);
        return zs_err_set(e, ZS_EUSAGE, opt_min_sp.key, fix,
                          "min_sp=%ld is not a power of two within max_sp that divides the %d "
                          "GPUs / tp",
                          min_sp, c->nslots);
    }
    cfg->nslots = c->nslots;
    cfg->min_sp = (int)min_sp;
    cfg->max_sp = (int)max_sp;
    cfg->cap = c->cap;
    cfg->buckets = (int)buckets;
    cfg->exact_max = (int)exact;
    return ZS_OK;
}

static void notes(const flexsp *F, const zs_flexsp_cfg *cfg, zs_plan_report *rep)
{
    const zs_flexsp_plan *p = &F->p;
    int hist[32] = {0}, nb = 0;
    double pred = 0;
    for (int g = 0; g < p->ngroups; g++)
        hist[log2i(p->size[g])]++;
    for (int m = 0; m < p->nmicro; m++) {
        pred += p->pred[m];
        nb = p->nbuckets[m] > nb ? p->nbuckets[m] : nb;
    }
    char h[256] = "";
    size_t at = 0;
    for (int b = 0; b < 32 && at < sizeof h; b++)
        if (hist[b])
            at += (size_t)snprintf(h + at, sizeof h - at, "%s%d x %d", at ? ", " : "", hist[b],
                                   1 << b);
    zs_plan_report_note(rep,
                        "flexsp: tp=%d, per micro-batch all %d GPUs / tp partitioned into "
                        "Ulysses SP groups of %d..%d GPUs (powers of two, aligned, largest "
                        "first); %ld tokens per GPU",
                        F->c.tp, cfg->nslots, cfg->min_sp, cfg->max_sp, F->c.cap);
    zs_plan_report_note(rep,
                        "%d micro-batches (Sequence Blaster: longest first, contiguous runs of "
                        "least largest tokens); groups (count x GPUs): %s; up to %d buckets; "
                        "predicted attention+linear+all-to-all per layer %.3g ms summed over "
                        "micro-batches",
                        p->nmicro, at ? h : "none", nb, pred * 1e3);
    zs_plan_report_note(rep,
                        "reconstructed: FlexSP's MILP (SCIP) replaced by %s with a greedy "
                        "(exhaustive up to exact=%d sequences) assignment; costs from zepsim's "
                        "cost model, not FlexSP's fitted one",
                        cfg->nslots / cfg->min_sp <= ZS_FLEXSP_ENUM_UNITS
                            ? "every multiset of group sizes"
                            : "a local search over multisets of group sizes (splits and merges)",
                        cfg->exact_max);
}

/* The batch's layout and the solver's plan into F (the per-batch decision,
 * what plan lowers and decide times alone). */
static int solve(const zs_plan_ctx *ctx, const zs_batch *batch, flexsp *F, fcost *fc,
                 zs_flexsp_cfg *cfg, zs_err *e)
{
    int rc = layout(ctx, batch, &F->c, e);
    if (rc)
        return rc;
    zs_cpg *c = &F->c;
    const zs_model *m = ctx->model;
    int hq = m->heads / c->tp, hkv = m->kv_heads / c->tp > 0 ? m->kv_heads / c->tp : 1;
    *fc = (fcost){.cost = ctx->cost, .hq = hq, .recompute = c->mc.recompute == ZS_RECOMPUTE_FULL};
    *cfg = (zs_flexsp_cfg){.cost = seq_cost, .cost_arg = fc};
    if ((rc = read_options(ctx, c, hq, hkv, cfg, e)) || (rc = rates(ctx, c, cfg->max_sp, fc, e)))
        return rc;
    return zs_flexsp_solve(c->len, c->ndocs, cfg, &F->p, e);
}

static int decide(const zs_plan_ctx *ctx, const zs_batch *batch, int *classes, zs_err *e)
{
    (void)classes;
    flexsp F = {0};
    fcost fc;
    zs_flexsp_cfg cfg;
    int rc = solve(ctx, batch, &F, &fc, &cfg, e);
    zs_flexsp_plan_free(&F.p);
    zs_cpg_free(&F.c);
    return rc;
}

static int plan(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e)
{
    flexsp F = {0};
    zs_schedule *s = NULL;
    fcost fc;
    zs_flexsp_cfg cfg;
    zs_cpg *c = &F.c;
    int rc = solve(ctx, batch, &F, &fc, &cfg, e);
    if (rc)
        goto out;
    if (F.p.nmicro > INT16_MAX) {
        rc = zs_err_set(e, ZS_EINPUT, "flexsp", "use a smaller batch or more GPUs",
                        "%d micro-batches, more than a plan holds (%d)", F.p.nmicro, INT16_MAX);
        goto out;
    }
    int nm = F.p.nmicro > 0 ? F.p.nmicro : 1;
    F.shard = calloc((size_t)nm * (size_t)c->nslots, sizeof(int64_t));
    if (!F.shard) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    if ((rc = zs_cpg_schedule(c, &s, &F.cp_stream, e)) || (rc = place(&F, s, e)))
        goto out;
    notes(&F, &cfg, rep);
    zs_iter_spec spec = {{c->tp, 1, 1, c->nslots},
                         nm,
                         F.shard,
                         c->mc.recompute,
                         c->mc.zero_stage,
                         ctx->seed,
                         emit,
                         &F,
                         NULL,
                         0,
                         c->mc.fsdp};
    rc = zs_iter_build(s, ctx->cost, &spec, e);
out:
    free(F.shard);
    zs_flexsp_plan_free(&F.p);
    return zs_cpg_finish(&F.c, s, rc, out);
}

static const zs_opt_spec *const options[] = {&opt_min_sp, &opt_max_sp, &opt_buckets,
                                             &opt_exact,  &zs_opt_tp,  NULL};

const zs_planner_ops zs_planner_flexsp = {
    .name = "flexsp",
    .summary = "FlexSP: per micro-batch, the GPUs partitioned into Ulysses SP groups of "
               "power-of-two sizes and sequences assigned to them by a solver (reconstructed)",
    .options = options,
    .plan = plan,
    .decide = decide};
