/* The Megatron step model: see zs_megatron_step.h; the assumptions and
 * their sources are in docs/cost-model.md ("Megatron step model"). */
#include "zs_megatron_step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_nccl.h"

double zs_megatron_stage_layers(int layers, int pp)
{
    return pp > 0 ? (double)((layers + pp - 1) / pp) : 0;
}

double zs_megatron_bubble(int pp, int vp, double mb)
{
    return pp > 1 && vp >= 1 ? (double)(pp - 1) / vp * mb : 0;
}

/* attn_len: the tokens each token attends over in NeMo's formula (seq for
 * one sequence, full attention: no causal halving) */
static double flops_per_token(const zs_model *m, double attn_len)
{
    return 3.0 * m->layers * zs_model_linear_flops_per_token(m) +
           12.0 * m->layers * m->hidden * attn_len + 6.0 * m->hidden * (double)m->vocab;
}

double zs_megatron_model_flops_per_token(const zs_model *m, int seq)
{
    return flops_per_token(m, seq);
}

double zs_megatron_packed_flops_per_token(const zs_model *m, int seq, const int32_t *docs,
                                          int ndocs)
{
    double s1 = 0, s2 = 0;
    for (int i = 0; docs && i < ndocs; i++)
        s1 += docs[i], s2 += (double)docs[i] * docs[i];
    return flops_per_token(m, s1 > 0 ? s2 / s1 : seq);
}

/* Megatron's rank order (tp fastest, then cp, dp, pp). */
static int rank_of(const zs_mstep_cfg *g, int dp, int t, int c, int d, int p)
{
    return t + g->tp * (c + g->cp * (d + dp * p));
}

/* One layer's attention on one packed sequence at CP rank r, ring step j,
 * averaged over the packs of g->docs: each pack one varlen launch of its
 * documents, each causal on its own and, under CP, cut into 2 cp zigzag
 * chunks of its own as TransformerEngine's THD format shards a packed
 * sequence (blocks of at most 256 per launch). */
static double packed_attn(const zs_cost *c, const zs_mstep_cfg *g, int heads, int backward, int r,
                          int j)
{
    zs_attn_block blk[256];
    double t = 0;
    int i = 0;
    for (int p = 0; p < g->npacks; p++) {
        int64_t used = 0;
        int n = 0;
        while (i < g->ndocs && used < g->seq) {
            int32_t len = g->docs[i];
            if (g->cp > 1)
                n += zs_zigzag_step_blocks(i, len, g->cp, r, j, blk + n);
            else
                blk[n++] = (zs_attn_block){i, 0, len, 0, len};
            i++;
            used += len;
            if (n > (int)(sizeof blk / sizeof blk[0]) - 4) {
                t += zs_cost_attn(c, blk, n, heads, backward);
                n = 0;
            }
        }
        t += n ? zs_cost_attn(c, blk, n, heads, backward) : 0;
    }
    return g->npacks > 0 ? t / g->npacks : 0;
}

/* One layer's attention on the mbs sequences of a micro-batch at CP rank
 * r, ring step j: launches of at most 64 sequences, each its zigzag
 * chunks' blocks for that step under CP. */
static double seq_attn(const zs_cost *c, const zs_mstep_cfg *g, int heads, int backward, int r,
                       int j)
{
    zs_attn_block blk[4 * 64];
    double t = 0;
    for (int d = 0; d < g->mbs; d += 64) {
        int n = 0;
        for (int k = d; k < g->mbs && k < d + 64; k++) {
            if (g->cp > 1)
                n += zs_zigzag_step_blocks(k, g->seq, g->cp, r, j, blk + n);
            else
                blk[n++] = (zs_attn_block){k, 0, g->seq, 0, g->seq};
        }
        t += n ? zs_cost_attn(c, blk, n, heads, backward) : 0;
    }
    return t;
}

/* One layer's attention on one micro-batch at CP rank r: the kernel time of
 * every ring step (mbs sequences per launch) and the exposed part of the
 * KV exchange with the next CP rank (fwd: K and V; bwd: K, V, dK, dV),
 * overlapped with that step's attention as TransformerEngine does. */
static void attn_rank(const zs_cost *c, const zs_mstep_cfg *g, int dp, int r, int backward,
                      double *kernel, double *exposed)
{
    const zs_model *m = &c->model;
    int heads = m->heads / g->tp;
    int kvh = m->kv_heads >= g->tp ? m->kv_heads / g->tp : 1;
    double local = (double)g->mbs * g->seq / g->cp;
    double bytes = local * 2.0 * kvh * m->head_dim * m->dtype_bytes * (backward ? 2 : 1);
    int src = rank_of(g, dp, 0, r, 0, 0), dst = rank_of(g, dp, 0, (r + 1) % g->cp, 0, 0);
    double comm = g->cp > 1 ? zs_cost_p2p(c, src, dst, bytes) : 0;
    *kernel = *exposed = 0;
    for (int j = 0; j < g->cp; j++) {
        double t = g->docs ? g->mbs * packed_attn(c, g, heads, backward, r, j)
                           : seq_attn(c, g, heads, backward, r, j);
        *kernel += t;
        /* the next step's KV travels while this step computes */
        if (j < g->cp - 1)
            *exposed += comm > t ? comm - t : 0;
    }
}

/* The slowest CP rank's attention of one layer, forward and backward. */
static void attn_layer(const zs_cost *c, const zs_mstep_cfg *g, int dp, double *fwd, double *bwd,
                       double *cp_fwd, double *cp_bwd)
{
    *fwd = *bwd = *cp_fwd = *cp_bwd = 0;
    double best = -1;
    for (int r = 0; r < g->cp; r++) {
        double kf, ef, kb, eb;
        attn_rank(c, g, dp, r, 0, &kf, &ef);
        attn_rank(c, g, dp, r, 1, &kb, &eb);
        if (kf + ef + kb + eb > best) {
            best = kf + ef + kb + eb;
            *fwd = kf, *bwd = kb, *cp_fwd = ef, *cp_bwd = eb;
        }
    }
}

static int check(const zs_cost *c, const zs_mstep_cfg *g, zs_err *e)
{
    const zs_model *m = &c->model;
    if (g->tp < 1 || g->pp < 1 || g->cp < 1 || g->vp < 1 || g->mbs < 1 || g->seq < 1 ||
        g->gpus < 1 || g->gbs < 1)
        return zs_err_set(e, ZS_EINPUT, "megatron step", "give positive degrees and sizes",
                          "a degree or size below 1");
    long long mp = (long long)g->tp * g->pp * g->cp;
    if (g->gpus % mp || g->gbs % (g->mbs * (g->gpus / mp)))
        return zs_err_set(e, ZS_EINPUT, "megatron step",
                          "give gpus divisible by tp pp cp and gbs by mbs dp",
                          "%d GPUs, gbs %d do not divide into tp %d pp %d cp %d mbs %d", g->gpus,
                          g->gbs, g->tp, g->pp, g->cp, g->mbs);
    if (m->layers < g->pp * g->vp)
        return zs_err_set(e, ZS_EINPUT, "megatron step",
                          "give pp x vp of at most the layers (a layer per chunk)",
                          "%d layers over pp %d x vp %d", m->layers, g->pp, g->vp);
    if (g->vp > 1 && g->pp < 2)
        return zs_err_set(e, ZS_EINPUT, "megatron step", "use vp 1 without pipeline parallelism",
                          "vp %d without pipeline parallelism", g->vp);
    if (g->seq % (2 * g->cp))
        return zs_err_set(e, ZS_EINPUT, "megatron step", "give seq divisible by 2 cp",
                          "seq %d does not split into 2 x cp %d chunks", g->seq, g->cp);
    if (g->docs && (g->npacks < 1 || g->ndocs < g->npacks))
        return zs_err_set(e, ZS_EINPUT, "megatron step", "give at least one document per pack",
                          "%d packed documents in %d packs", g->ndocs, g->npacks);
    if (zs_cluster_gpus(&c->cluster) < g->gpus)
        return zs_err_set(e, ZS_EINPUT, "megatron step", "give a cluster with enough nodes",
                          "%d GPUs but the cluster has %d", g->gpus, zs_cluster_gpus(&c->cluster));
    if (g->zero < 0 || g->zero > 3)
        return zs_err_set(e, ZS_EINPUT, "megatron step", "use a ZeRO stage of 0 to 3",
                          "ZeRO stage %d", g->zero);
    return ZS_OK;
}

/* The inventory's ops, summed per micro-batch of one stage. */
typedef struct sums {
    double layer_fwd, layer_bwd; /* non-attention compute (bwd: with recompute) */
    double layer_tp_fwd, layer_tp_bwd;
    double head_fwd, head_bwd; /* embedding / LM head / cross-entropy: the last stage's */
    double head_tp_fwd, head_tp_bwd;
    double layer_once; /* per layer, once per step: the FP8 weight casts */
    double optim;
} sums;

static int is_embedding(const zs_step_op *op)
{
    return op->cls == ZS_OC_EMBED || strstr(op->name, "embedding") != NULL;
}

static void sum_ops(const zs_step *s, int pp, sums *u)
{
    memset(u, 0, sizeof *u);
    for (int i = 0; i < s->nops; i++) {
        const zs_step_op *op = &s->ops[i];
        int fwd = op->phase == ZS_PH_FWD, comm = op->cls == ZS_OC_TPCOMM;
        if (op->phase == ZS_PH_OPTIM) {
            u->optim += op->seconds;
        } else if (op->per_step) {
            u->layer_once += zs_step_op_layer_s(op);
        } else if (op->per_layer) {
            if (op->cls == ZS_OC_ATTN)
                continue; /* priced per CP rank and micro-batch by attn_layer */
            *(comm ? (fwd ? &u->layer_tp_fwd : &u->layer_tp_bwd)
                   : (fwd ? &u->layer_fwd : &u->layer_bwd)) += zs_step_op_layer_s(op);
        } else {
            if (pp > 1 && is_embedding(op))
                continue; /* on the first stage; the last (LM head) is the slower */
            *(comm ? (fwd ? &u->head_tp_fwd : &u->head_tp_bwd)
                   : (fwd ? &u->head_fwd : &u->head_bwd)) += op->seconds - op->hidden;
        }
    }
}

/* The compute time lost while a collective of `ctas` CTAs overlaps it for
 * `overlap` seconds: the compute keeps (SMs - ctas) / SMs of the GPU. */
static double slowdown(const zs_cost *c, int ctas, double overlap)
{
    int sms = c->cluster.gpu.sms;
    if (ctas <= 0 || sms <= ctas || !(overlap > 0))
        return 0;
    return overlap * ctas / (double)(sms - ctas);
}

/* The compute slowed, per micro-batch of a stage, by the backward's TP
 * collectives that run under GEMMs (zs_step_op.hidden): their CTAs hold
 * SMs as the DP collectives' do (dp_comm_whole). -1: out of memory. */
static double tp_interference(const zs_cost *c, const zs_mstep_cfg *g, const zs_step *st)
{
    int *ranks = malloc(sizeof *ranks * (size_t)g->tp);
    if (!ranks)
        return -1;
    for (int i = 0; i < g->tp; i++)
        ranks[i] = i;
    double t = 0, L = zs_megatron_stage_layers(c->model.layers, g->pp);
    for (int i = 0; i < st->nops; i++) {
        const zs_step_op *op = &st->ops[i];
        if (!(op->hidden > 0))
            continue;
        int ctas = zs_nccl_group_ctas(&c->cluster, ranks, g->tp, op->coll, op->coll_bytes,
                                      zs_cost_nccl(c));
        t += slowdown(c, ctas, op->hidden) * (op->per_layer ? L : 1);
    }
    free(ranks);
    return t;
}

/* The DP collectives' group: the dp x cp ranks of TP rank 0 on stage 0. */
typedef struct dp_group {
    int n, *ranks;
} dp_group;

static int dp_group_new(const zs_mstep_cfg *g, int dp, dp_group *d, zs_err *e)
{
    d->n = dp * g->cp;
    d->ranks = malloc(sizeof *d->ranks * (size_t)d->n);
    if (!d->ranks)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0, k = 0; i < dp; i++)
        for (int r = 0; r < g->cp; r++)
            d->ranks[k++] = rank_of(g, dp, 0, r, i, 0);
    return ZS_OK;
}

/* A collective over the group on `bytes` of parameters or gradients (each
 * rank's shard is bytes / n): its time and the CTAs its kernel holds. */
static double dp_coll(const zs_cost *c, const dp_group *d, zs_coll_kind k, double bytes, int *ctas)
{
    double per = k == ZS_COLL_ALLREDUCE ? bytes : bytes / d->n;
    *ctas = zs_nccl_group_ctas(&c->cluster, d->ranks, d->n, k, per, zs_cost_nccl(c));
    return zs_cost_collective(c, k, d->ranks, d->n, per);
}

/* ZeRO 0-2: the gradient reduce-scatter (all-reduce when the state is
 * replicated) and the parameter all-gather, each overlapped with one
 * micro-batch's backward / forward (Megatron's overlap_grad_reduce /
 * overlap_param_gather). */
static void dp_comm_whole(const zs_cost *c, const zs_mstep_cfg *g, const dp_group *d, zs_mstep *o)
{
    const zs_model *m = &c->model;
    double params = zs_step_trained_params(m, g->lora) / ((double)g->tp * g->pp);
    double wbytes = params * m->dtype_bytes, gbytes = params * zs_grad_bytes(g->grad);
    int rs_ctas, ag_ctas = 0;
    if (g->zero >= 1) {
        o->dp_rs_s = dp_coll(c, d, ZS_COLL_REDUCESCATTER, gbytes, &rs_ctas);
        o->dp_ag_s = dp_coll(c, d, ZS_COLL_ALLGATHER, wbytes, &ag_ctas);
    } else {
        o->dp_rs_s = dp_coll(c, d, ZS_COLL_ALLREDUCE, gbytes, &rs_ctas);
    }
    o->dp_comm_s = fmax(0, o->dp_rs_s - o->mb_bwd) + fmax(0, o->dp_ag_s - o->mb_fwd);
    if (g->interference)
        o->interference_s = slowdown(c, rs_ctas, fmin(o->dp_rs_s, o->mb_bwd)) +
                            slowdown(c, ag_ctas, fmin(o->dp_ag_s, o->mb_fwd));
}

/* ZeRO-3 (FSDP, as PyTorch FSDP2 runs it in torchtitan): per micro-batch,
 * the weights outside the layers (embedding, final norm, LM head: the root
 * module) are gathered first and each layer's just before its forward
 * (the next layer's gather overlapping this layer's forward), gathered
 * again for its backward (except the last layer's, kept from the forward),
 * and its gradients reduce-scattered after its backward; in the backward a
 * layer's compute overlaps the next layer's gather and the previous one's
 * reduce-scatter, which share the network. The first layer's and the
 * root's gathers and the last reduce-scatters are exposed. Gathers move
 * the weights' dtype, reduce-scatters the gradients'. */
static void dp_comm_fsdp(const zs_cost *c, const zs_mstep_cfg *g, const dp_group *d, zs_mstep *o)
{
    const zs_model *m = &c->model;
    double L = zs_megatron_stage_layers(m->layers, g->pp), F = o->layer_fwd, B = o->layer_bwd;
    double lp = zs_model_params_per_layer(m) / g->tp;
    double root = fmax(0, zs_model_params(m) - m->layers * zs_model_params_per_layer(m)) / g->tp;
    /* LoRA: every weight gathered, the adapters' gradients reduced */
    double lg = zs_step_trained_params_per_layer(m, g->lora) / g->tp;
    double rootg = g->lora ? 0 : root;
    int agc, rsc = 0, c2;
    double A = dp_coll(c, d, ZS_COLL_ALLGATHER, lp * m->dtype_bytes, &agc);
    double R = dp_coll(c, d, ZS_COLL_REDUCESCATTER, lg * zs_grad_bytes(g->grad), &rsc);
    double Ar = dp_coll(c, d, ZS_COLL_ALLGATHER, root * m->dtype_bytes, &c2);
    double Rr =
        rootg > 0 ? dp_coll(c, d, ZS_COLL_REDUCESCATTER, rootg * zs_grad_bytes(g->grad), &c2) : 0;
    double fwd = Ar + A + (L - 1) * fmax(0, A - F);
    double bwd = (L - 1) * fmax(0, A + R - B) + fmax(0, R - B) + R + Rr;
    o->dp_comm_s = o->m * (fwd + bwd);
    o->dp_ag_s = o->m * (Ar + (2 * L - 1) * A);
    o->dp_rs_s = o->m * (L * R + Rr);
    /* In a layer's backward the next layer's gather and the previous one's
     * reduce-scatter run one after the other: FSDP2 posts them on two CUDA
     * streams but through one process group, one NCCL communicator, which
     * runs one collective at a time (pytorch/pytorch #177015, #186335), so
     * one kernel holds its CTAs at a time; the last reduce-scatter runs
     * alone. */
    if (g->interference)
        o->interference_s =
            o->m *
            (slowdown(c, agc, (L - 1) * fmin(A, F)) + slowdown(c, agc, (L - 1) * fmin(A, B)) +
             slowdown(c, rsc, (L - 1) * fmin(R, fmax(0, B - A))) + slowdown(c, rsc, fmin(R, B)));
}

/* Exposed DP communication over the dp x cp ranks. */
static int dp_comm(const zs_cost *c, const zs_mstep_cfg *g, zs_mstep *o, zs_err *e)
{
    dp_group d;
    if (o->dp * g->cp < 2)
        return ZS_OK;
    int rc = dp_group_new(g, o->dp, &d, e);
    if (rc)
        return rc;
    if (g->zero >= 3)
        dp_comm_fsdp(c, g, &d, o);
    else
        dp_comm_whole(c, g, &d, o);
    free(d.ranks);
    return ZS_OK;
}

int zs_megatron_step(const zs_cost *c, const zs_mstep_cfg *g, zs_mstep *o, zs_err *e)
{
    memset(o, 0, sizeof *o);
    int rc = check(c, g, e);
    if (rc)
        return rc;
    o->dp = g->gpus / (g->tp * g->pp * g->cp);
    o->m = g->gbs / (g->mbs * o->dp);
    zs_step_cfg sc = zs_step_cfg_default();
    sc.tokens = (int64_t)g->mbs * g->seq / g->cp;
    sc.tp = g->tp;
    sc.sp = !g->no_sp;
    sc.precision = g->precision;
    sc.recompute = g->recompute;
    sc.dp = g->zero >= 1 ? o->dp * g->cp : 1;
    sc.zero_stage = g->zero;
    sc.grad = g->grad;
    sc.kernels = g->kernels;
    sc.lora = g->lora;
    sc.fsdp = g->fsdp;
    zs_step st;
    if ((rc = zs_step_build(c, &sc, &st, e)))
        return rc;
    sums u;
    sum_ops(&st, g->pp, &u);
    double tp_slow = g->interference ? tp_interference(c, g, &st) : 0;
    zs_step_free(&st);
    if (tp_slow < 0)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    double af, ab, cf, cb;
    attn_layer(c, g, o->dp, &af, &ab, &cf, &cb);
    /* recomputation runs attention's forward again (selective, full; every
     * second layer's for selective-layer), with its ring exchange under CP */
    double rs = zs_step_rc_attn_share(g->recompute), arc = rs * af, crc = rs * cf;
    double L = zs_megatron_stage_layers(c->model.layers, g->pp);
    o->mb_compute = L * (u.layer_fwd + u.layer_bwd + af + ab + arc) + u.head_fwd + u.head_bwd;
    o->mb_tp_comm = L * (u.layer_tp_fwd + u.layer_tp_bwd) + u.head_tp_fwd + u.head_tp_bwd;
    o->mb_cp_comm = L * (cf + cb + crc);
    o->layer_fwd = u.layer_fwd + af + u.layer_tp_fwd + cf;
    o->layer_bwd = u.layer_bwd + ab + arc + u.layer_tp_bwd + cb + crc;
    o->mb_fwd = L * o->layer_fwd + u.head_fwd + u.head_tp_fwd;
    double mb = o->mb_compute + o->mb_tp_comm + o->mb_cp_comm;
    o->mb_bwd = mb - o->mb_fwd;
    if (g->pp > 1) {
        /* the activations (mbs x seq/cp tokens, scattered over tp with SP) */
        double bytes =
            (double)g->mbs * g->seq / g->cp / g->tp * c->model.hidden * c->model.dtype_bytes;
        int a = rank_of(g, o->dp, 0, 0, 0, 0), b = rank_of(g, o->dp, 0, 0, 0, 1);
        double p2p = zs_cost_p2p(c, a, b, bytes);
        o->mb_pp_comm = 2 * p2p;
        /* fill and drain cross pp-1 boundaries each way; in the steady state
         * the blocking send/recv pairs of non-interleaved 1F1B are exposed,
         * the interleaved schedule's are overlapped (overlap_p2p_comm) */
        o->pp_comm_s = 2.0 * (g->pp - 1) * p2p + (g->vp == 1 ? o->m * o->mb_pp_comm : 0);
    }
    /* the FP8 weight casts run in the first micro-batch only (zs_step_op.per_step) */
    o->compute_s = o->m * o->mb_compute + L * u.layer_once;
    o->tp_comm_s = o->m * o->mb_tp_comm;
    o->cp_comm_s = o->m * o->mb_cp_comm;
    o->pp_bubble_s = zs_megatron_bubble(g->pp, g->vp, mb);
    o->optim_s = u.optim / g->pp;
    if ((rc = dp_comm(c, g, o, e)))
        return rc;
    o->interference_s += o->m * tp_slow;
    o->step_s = o->compute_s + o->tp_comm_s + o->cp_comm_s + o->pp_comm_s + o->pp_bubble_s +
                o->dp_comm_s + o->interference_s + o->optim_s;
    double tokens = (double)g->gbs * g->seq;
    o->model_flops = tokens *
                     zs_megatron_packed_flops_per_token(&c->model, g->seq, g->docs, g->ndocs) *
                     (g->lora ? 2.0 / 3.0 : 1.0);
    if (!(o->step_s > 0) || !isfinite(o->step_s))
        return zs_err_set(e, ZS_ERUNTIME, "megatron step", NULL, "step time not positive");
    o->tokens_s_gpu = tokens / o->step_s / g->gpus;
    o->model_tflops_gpu = o->model_flops / o->step_s / g->gpus / 1e12;
    return ZS_OK;
}
