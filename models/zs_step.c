/* The op inventory of one training step: see zs_step.h. Byte counts follow
 * the kernels Megatron-LM (megatron/core) and TransformerEngine run; each
 * is derived in docs/cost-model.md ("The step inventory"). */
#include "zs_step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Arithmetic per element of the memory-bound ops (reported, never used in
 * a time: these ops are priced by their bytes) [assumed]. */
#define FL_NORM  5.0  /* square, sum, rsqrt share, scale, weight */
#define FL_ROPE  3.0  /* two multiplies and an add */
#define FL_ACT   6.0  /* SiLU (exp, add, divide, multiply) times the up projection */
#define FL_RESID 1.0  /* the add (2 with dropout) */
#define FL_CAST  2.0  /* scale and convert (amax folded in) */
#define FL_XENT  5.0  /* max, subtract, exp, sum, divide */
#define FL_ADAM  12.0 /* two moments, bias corrections, update, weight decay */
#define FP32     4.0  /* bytes of an fp32 value */

static const char *const prec_names[] = {"bf16", "fp8", "fp8-cs"};
static const char *const rc_names[] = {"none", "selective", "full", "selective-op",
                                       "selective-layer"};
static const char *const kern_names[] = {"fused", "eager", "eager-fused-norm"};
static const char *const phase_names[] = {"fwd", "bwd", "recompute", "optim"};
static const char *const class_names[] = {
    "gemm",    "attention", "norm",    "rope",          "activation", "residual",  "fp8-cast",
    "tp-comm", "embedding", "lm-head", "cross-entropy", "grad-norm",  "optimizer", "copy"};

const char *zs_precision_name(zs_precision p)
{
    return p >= ZS_PREC_BF16 && p <= ZS_PREC_FP8_CS ? prec_names[p] : "?";
}
int zs_precision_fp8(zs_precision p)
{
    return p == ZS_PREC_FP8 || p == ZS_PREC_FP8_CS;
}
const char *zs_step_rc_name(zs_step_rc r)
{
    return r >= ZS_STEP_RC_NONE && r < ZS_STEP_RC_N ? rc_names[r] : "?";
}
const char *zs_step_kernels_name(zs_step_kernels k)
{
    return k >= ZS_KERN_FUSED && k < ZS_KERN_N ? kern_names[k] : "?";
}
const char *zs_step_phase_name(zs_step_phase p)
{
    return p >= ZS_PH_FWD && p < ZS_PH_N ? phase_names[p] : "?";
}
const char *zs_op_class_name(zs_op_class c)
{
    return c >= ZS_OC_GEMM && c < ZS_OC_N ? class_names[c] : "?";
}

int zs_precision_parse(const char *s, zs_precision *out, zs_err *e)
{
    for (int i = 0; i <= ZS_PREC_FP8_CS; i++)
        if (s && strcmp(s, prec_names[i]) == 0) {
            *out = (zs_precision)i;
            return ZS_OK;
        }
    return zs_err_set(e, ZS_EUSAGE, "--precision",
                      "use bf16, fp8 (delayed scaling) or fp8-cs (current scaling)",
                      "unknown precision '%s'", s ? s : "(none)");
}

int zs_step_rc_parse(const char *s, zs_step_rc *out, zs_err *e)
{
    for (int i = 0; i < ZS_STEP_RC_N; i++)
        if (s && strcmp(s, rc_names[i]) == 0) {
            *out = (zs_step_rc)i;
            return ZS_OK;
        }
    return zs_err_set(e, ZS_EUSAGE, "--recompute",
                      "use none, selective, full, selective-op or selective-layer",
                      "unknown recomputation '%s'", s ? s : "(none)");
}

int zs_step_kernels_parse(const char *s, zs_step_kernels *out, zs_err *e)
{
    for (int i = 0; i < ZS_KERN_N; i++)
        if (s && strcmp(s, kern_names[i]) == 0) {
            *out = (zs_step_kernels)i;
            return ZS_OK;
        }
    return zs_err_set(e, ZS_EUSAGE, "--kernels", "use fused, eager or eager-fused-norm",
                      "unknown kernels '%s'", s ? s : "(none)");
}

int zs_step_lora_rank_ok(const zs_model *m, int rank, int tp)
{
    return rank >= 0 && rank <= m->hidden && tp > 0 && rank % tp == 0;
}

double zs_step_lora_params_per_layer(const zs_model *m, int rank)
{
    return rank > 0
               ? (double)rank * (m->hidden + (double)(m->heads + 2 * m->kv_heads) * m->head_dim)
               : 0;
}

double zs_step_trained_params(const zs_model *m, int rank)
{
    return rank > 0 ? m->layers * zs_step_lora_params_per_layer(m, rank) : zs_model_params(m);
}

double zs_step_trained_params_per_layer(const zs_model *m, int rank)
{
    return rank > 0 ? zs_step_lora_params_per_layer(m, rank) : zs_model_params_per_layer(m);
}

zs_step_cfg zs_step_cfg_default(void)
{
    zs_step_cfg c = {
        0, 1, 1, ZS_PREC_BF16, ZS_STEP_RC_NONE, 1, 1, ZS_GRAD_FP32, ZS_KERN_FUSED, 0, ZS_FSDP2};
    return c;
}

/* ---- building ------------------------------------------------------------------ */

typedef struct ctx {
    const zs_cost *c;
    const zs_model *m;
    const zs_step_cfg *cfg;
    zs_step *s;
    double bw;         /* achievable HBM bytes/s */
    double launch;     /* seconds per memory-bound kernel */
    int *ranks;        /* 0..tp-1 */
    int fp8, oom;      /* FP8 GEMMs; an allocation failed */
    int cs;            /* FP8 current scaling: an amax pass before each cast */
    int eager, enorm;  /* PyTorch eager kernels; its RMSNorm eager too */
    int frozen;        /* LoRA: base weights frozen (no weight gradients) */
    double r;          /* LoRA adapters' rank */
    double share;      /* the layer share of the ops pushed now */
    double T, Ts, b;   /* tokens, tokens of the residual stream on this rank, bytes per value */
    double gb;         /* bytes per value of the gradient buffer */
    double h, qkv, ad; /* hidden; QKV columns and attention width on this rank */
    double f, up;      /* MLP inner size on this rank, fc1 columns (2f for SwiGLU) */
    double V;          /* vocabulary on this rank */
} ctx;

static zs_step_op *push(ctx *x, const char *name, zs_op_class cls, zs_step_phase ph, int per_layer)
{
    zs_step *s = x->s;
    if (s->nops == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        zs_step_op *p = realloc(s->ops, sizeof *p * (size_t)cap);
        if (!p) {
            x->oom = 1;
            return NULL;
        }
        s->ops = p;
        s->cap = cap;
    }
    zs_step_op *op = &s->ops[s->nops++];
    memset(op, 0, sizeof *op);
    snprintf(op->name, sizeof op->name, "%s", name);
    op->cls = cls;
    op->phase = ph;
    op->per_layer = per_layer;
    op->layer_share = per_layer ? x->share : 1;
    return op;
}

static zs_step_op *mem_op(ctx *x, const char *name, zs_op_class cls, zs_step_phase ph,
                          int per_layer, double bytes, double flops)
{
    zs_step_op *op = push(x, name, cls, ph, per_layer);
    if (!op)
        return NULL;
    op->bytes = bytes;
    op->flops = flops;
    op->seconds = bytes > 0 ? x->launch + bytes / x->bw : 0;
    return op;
}

/* TransformerEngine's FP8 cast-transpose of vals values: the bytes of
 * zs_fp8_cast_bytes at its own rate (ZS_FP8_CT_EFF). */
static zs_step_op *ct_op(ctx *x, const char *name, zs_step_phase ph, double vals)
{
    zs_step_op *op =
        mem_op(x, name, ZS_OC_FP8, ph, 1, zs_fp8_cast_bytes(vals, x->b), vals * FL_CAST);
    if (op)
        op->seconds = zs_fp8_cast_time(&x->c->cluster.gpu, op->bytes);
    return op;
}

/* A GEMM of m x k by k x n. in8: its inputs are FP8 (an FP8 GEMM); wgrad:
 * its output accumulates into the main gradient (Megatron's
 * gradient_accumulation_fusion: read and write it, fp32 or bf16). */
static zs_step_op *gemm_op(ctx *x, const char *name, zs_op_class cls, zs_step_phase ph,
                           int per_layer, double m, double n, double k, int in8, int wgrad)
{
    zs_step_op *op = push(x, name, cls, ph, per_layer);
    if (!op)
        return NULL;
    op->m = m, op->n = n, op->k = k;
    op->flops = 2 * m * n * k;
    op->bytes = (m * k + k * n) * (in8 ? 1 : x->b) + m * n * (wgrad ? 2 * x->gb : x->b);
    /* Both on the one GEMM price (zs_gemm_time), bounded by these bytes. */
    op->seconds = in8 ? zs_cost_gemm_fp8(x->c, m, n, k, op->bytes)
                      : zs_cost_gemm_io(x->c, m, n, k, op->bytes);
    return op;
}

/* NULL: no op (tp 1, or out of memory). */
static zs_step_op *coll_op(ctx *x, const char *name, zs_step_phase ph, int per_layer,
                           zs_coll_kind kind, double bytes, int times)
{
    if (x->cfg->tp <= 1)
        return NULL;
    zs_step_op *op = push(x, name, ZS_OC_TPCOMM, ph, per_layer);
    if (!op)
        return NULL;
    op->bytes = bytes * times;
    op->coll = kind;
    op->coll_bytes = bytes;
    op->seconds = times * zs_cost_collective(x->c, kind, x->ranks, x->cfg->tp, bytes);
    return op;
}

/* Collective op (NULL: none) runs under a GEMM of gemm_s seconds (issued
 * asynchronously before it, waited for after it): only what outlasts the
 * GEMM costs the step. */
static void hide_under(zs_step_op *op, double gemm_s)
{
    if (op)
        op->hidden = fmin(op->seconds, gemm_s);
}

static double secs(const zs_step_op *op)
{
    return op ? op->seconds : 0;
}

/* FP8 current scaling (TransformerEngine's Float8CurrentScaling quantizer,
 * transformer_engine/pytorch/csrc/extensions/cast.cpp at v2.2): before a
 * cast, nvte_compute_amax reads the whole bf16 tensor (the scale must be
 * known before the first value is converted, so the amax cannot ride in
 * the cast kernel as delayed scaling's does), nvte_compute_scale_from_amax
 * turns it into the scale (one small kernel), and where the FP8 tensor is
 * then gathered over TP (sequence parallelism: a column-parallel layer's
 * input, a row-parallel layer's output gradient; with_amax_reduction in
 * module/linear.py, layernorm_linear.py, layernorm_mlp.py) the amax is
 * all-reduced over the TP group first so every rank uses one scale.
 * tensor: what is cast ("qkv", "w-qkv", "dqkv": the ops are "amax-qkv"...,
 * beside its "cast-qkv"); vals: its values; per_step: a weight's (cast once
 * per step, with its cast). */
static void cs_scale(ctx *x, const char *tensor, zs_step_phase ph, double vals, int gathered,
                     int per_step)
{
    if (!x->cs)
        return;
    char n[40];
    snprintf(n, sizeof n, "amax-%s", tensor);
    zs_step_op *op = mem_op(x, n, ZS_OC_FP8, ph, 1, vals * x->b, vals);
    if (op)
        op->per_step = per_step;
    if (gathered && x->cfg->sp) {
        snprintf(n, sizeof n, "ar-amax-%s", tensor);
        op = coll_op(x, n, ph, 1, ZS_COLL_ALLREDUCE, FP32, 1);
        if (op)
            op->per_step = per_step;
    }
    snprintf(n, sizeof n, "scale-%s", tensor);
    op = mem_op(x, n, ZS_OC_FP8, ph, 1, 2 * FP32, 1);
    if (op)
        op->per_step = per_step;
}

/* FP8 casts of a GEMM's inputs in the forward: the activation (act values)
 * and the weight (w values), each read in bf16 and written in FP8 twice
 * (row-wise and transposed, for the backward's GEMMs: TE's cast-transpose,
 * ct_op). With frozen weights only the dgrad runs, which needs the
 * weight's transpose but not the activation's (that one feeds the wgrad):
 * the activation is written once, by a plain cast at the streaming rate.
 * The weight is cast in the step's first micro-batch only and kept for the
 * others and for recomputation: TransformerEngine's Linear caches
 * its FP8 weight and transpose when told is_first_microbatch, which
 * Megatron-Core's TE wrappers pass (megatron/core/extensions/
 * transformer_engine.py, TELinear.forward, unless
 * disable_parameter_transpose_cache) [S]. */
static void fp8_fwd_casts(ctx *x, const char *name, zs_step_phase ph, double act, double w, int col)
{
    if (!x->fp8)
        return;
    char n[32];
    snprintf(n, sizeof n, "cast-%s", name);
    /* a column-parallel input is cast on its sequence shard, then gathered */
    cs_scale(x, name, ph, act, col, 0);
    if (x->frozen)
        mem_op(x, n, ZS_OC_FP8, ph, 1, act * (x->b + 1), act * FL_CAST);
    else
        ct_op(x, n, ph, act);
    if (ph == ZS_PH_RECOMPUTE)
        return;
    snprintf(n, sizeof n, "w-%s", name);
    cs_scale(x, n, ph, w, 0, 1);
    snprintf(n, sizeof n, "cast-w-%s", name);
    zs_step_op *op = ct_op(x, n, ph, w);
    if (op)
        op->per_step = 1;
}

/* The backward's cast of a GEMM's output gradient (g values), with its
 * transpose (for the wgrad: none with frozen weights). */
static void fp8_bwd_cast(ctx *x, const char *name, double g, int row)
{
    if (!x->fp8)
        return;
    char n[32];
    snprintf(n, sizeof n, "d%s", name);
    cs_scale(x, n, ZS_PH_BWD, g, row, 0);
    snprintf(n, sizeof n, "cast-d%s", name);
    if (x->frozen)
        mem_op(x, n, ZS_OC_FP8, ZS_PH_BWD, 1, g * (x->b + 1), g * FL_CAST);
    else
        ct_op(x, n, ZS_PH_BWD, g);
}

/* Sequence parallelism gathers the residual stream before a column-parallel
 * GEMM (FP8 values when the GEMM is FP8: TransformerEngine casts first). */
static void tp_gather(ctx *x, const char *name, zs_step_phase ph, int per_layer, int in8)
{
    if (x->cfg->sp)
        coll_op(x, name, ph, per_layer, ZS_COLL_ALLGATHER, x->Ts * x->h * (in8 ? 1 : x->b), 1);
}

/* After a row-parallel GEMM: reduce-scatter with SP, all-reduce without. */
static void tp_reduce(ctx *x, const char *name, zs_step_phase ph, int per_layer)
{
    if (x->cfg->sp)
        coll_op(x, name, ph, per_layer, ZS_COLL_REDUCESCATTER, x->Ts * x->h * x->b, 1);
    else
        coll_op(x, name, ph, per_layer, ZS_COLL_ALLREDUCE, x->T * x->h * x->b, 1);
}

static double norm_flops(const ctx *x)
{
    return (zs_model_layernorm(x->m) ? 1.6 : 1.0) * FL_NORM * x->Ts * x->h;
}

/* ---- bytes per element of the memory-bound ops ---------------------------------
 *
 * Fused: one kernel reads its inputs and writes its outputs once. Eager:
 * one kernel per PyTorch op of torchtitan's Llama (torchtitan/models/
 * llama/model.py and models/norms.py, April 2024), and in the backward
 * one per autograd node (PyTorch's derivatives.yaml); docs/cost-model.md
 * ("Eager kernels") derives each count. b is the activations' bytes. */

/* RMSNorm, forward: fused reads x and writes y. Eager: x.float() (b + 4),
 * pow(2) (8), mean (4), x * rsqrt (8), type_as (4 + b), * weight (2b). */
static double norm_fwd_b(const ctx *x)
{
    return x->enorm ? 28 + 4 * x->b : 2 * x->b;
}

/* RMSNorm, backward: fused reads x and dy and writes dx. Eager: the
 * weight's product and its gradient's product and sum (6b), type_as's
 * (4 + b), the rsqrt product's two gradients (24), mean's expand (4),
 * pow's (20), the two paths' sum (12), float()'s (4 + b). */
static double norm_bwd_b(const ctx *x)
{
    return x->enorm ? 68 + 8 * x->b : 3 * x->b;
}

/* RoPE per element of q and k, forward and backward alike: fused reads and
 * writes once; eager upcasts (b + 4), multiplies in complex fp32 (8) and
 * casts back (4 + b). */
static double rope_b(const ctx *x)
{
    return x->eager ? 16 + 2 * x->b : 2 * x->b;
}

/* The MLP activation per element of the inner size (gated: SwiGLU).
 * Fused SwiGLU reads gate and up and writes the product; eager runs SiLU
 * (2b) and the product (3b) apart. */
static double act_fwd_b(const ctx *x, int gated)
{
    return gated ? (x->eager ? 5 : 3) * x->b : 2 * x->b;
}

/* Backward: fused reads gate, up and the gradient and writes two
 * gradients; eager runs the product's two gradients (3b each) and SiLU's
 * (3b). Ungated: reads the input and the gradient, writes one. */
static double act_bwd_b(const ctx *x, int gated)
{
    return gated ? (x->eager ? 9 : 5) * x->b : 3 * x->b;
}

/* Cross-entropy per logit. Fused: Megatron's vocab-parallel kernels on fp32
 * logits. Eager: the logits' .float() (b + 4) and log_softmax (8); backward
 * nll_loss's zero-filled gradient (4), log_softmax's (12), float()'s (4 +
 * b). */
static double xent_fwd_b(const ctx *x)
{
    return x->eager ? 12 + x->b : ZS_XENT_FWD_BYTES;
}

static double xent_bwd_b(const ctx *x)
{
    return x->eager ? 20 + x->b : ZS_XENT_BWD_BYTES;
}

static double resid_bytes(const ctx *x)
{
    /* read the branch and the residual, write the sum; dropout writes (forward)
     * or reads (backward) a one-byte mask */
    return x->Ts * x->h * (3 * x->b + (x->m->dropout > 0 ? 1 : 0));
}

static void attn_core(ctx *x, zs_step_phase ph, int backward)
{
    zs_attn_block blk = {0, 0, (int32_t)x->cfg->tokens, 0, (int32_t)x->cfg->tokens};
    zs_attn_work w;
    int heads = x->m->heads / x->cfg->tp;
    double s = zs_cost_attn_work(x->c, &blk, 1, heads, backward, &w);
    zs_step_op *op = push(x, backward ? "attn-core-bwd" : "attn-core", ZS_OC_ATTN, ph, 1);
    if (!op)
        return;
    op->flops = w.flops_exact;
    op->bytes = w.bytes;
    op->seconds = s;
}

/* RoPE on the queries and keys (none with learned positions). */
static void rope(ctx *x, zs_step_phase ph, const char *name)
{
    if (zs_model_learned_pos(x->m))
        return;
    double qk = x->T * (x->m->heads + x->m->kv_heads) * x->m->head_dim / x->cfg->tp;
    mem_op(x, name, ZS_OC_ROPE, ph, 1, rope_b(x) * qk, FL_ROPE * qk);
}

/* Eager GQA: repeat_kv's expand + reshape copies K and V to every query
 * head (read the KV heads, write the query heads' width); its backward
 * sums them back. Fused kernels take the KV heads as they are. */
static void repeat_kv(ctx *x, zs_step_phase ph, const char *name)
{
    const zs_model *m = x->m;
    if (!x->eager || m->kv_heads >= m->heads)
        return;
    double kv = x->T * (m->heads + m->kv_heads) * m->head_dim / x->cfg->tp;
    mem_op(x, name, ZS_OC_COPY, ph, 1, 2 * kv * x->b, 0);
}

/* ZeRO-3's copies of a layer's weights or gradients on the compute stream
 * (zs_fsdp), each reading and writing the layer's parameters once: FSDP2
 * copies the all-gathered layer out of its gather buffer before the
 * forward and again before the backward (torchtitan reshards after the
 * forward); FSDP1 concatenates the views' gradients into the flat
 * gradient after the backward; Megatron-FSDP copies nothing. */
static void fsdp_copy(ctx *x, zs_step_phase ph, zs_fsdp impl, const char *name)
{
    if (x->cfg->zero_stage < 3 || x->cfg->fsdp != impl)
        return;
    /* FSDP1's gradients: the trained ones (LoRA: the adapters') */
    double p = (impl == ZS_FSDP1 ? zs_step_trained_params_per_layer(x->m, x->cfg->lora)
                                 : zs_model_params_per_layer(x->m)) /
               x->cfg->tp;
    mem_op(x, name, ZS_OC_COPY, ph, 1, 2 * p * x->b, 0);
}

/* LoRA's adapter on the QKV projection, as NeMo's ParallelLinearAdapter
 * runs it (nemo/collections/nlp/modules/common/megatron/adapters/
 * parallel_adapters.py): the norm's output, gathered first under sequence
 * parallelism; linear_in (hidden to rank, column-parallel, its output
 * gathered) and linear_out (rank to this rank's QKV columns, its input
 * replicated) in bf16; the output scaled by alpha / rank and added to the
 * projection's. Neither linear runs sequence-parallel itself, so the
 * backward all-reduces their input gradients over TP. */
static void lora_fwd(ctx *x, zs_step_phase ph)
{
    if (!x->frozen)
        return;
    double T = x->T, r = x->r, tp = x->cfg->tp, out = T * x->qkv;
    tp_gather(x, "ag-lora-input", ph, 1, 0);
    gemm_op(x, "lora-in", ZS_OC_GEMM, ph, 1, T, r / tp, x->h, 0, 0);
    coll_op(x, "ag-lora-in", ph, 1, ZS_COLL_ALLGATHER, T * r / tp * x->b, 1);
    gemm_op(x, "lora-out", ZS_OC_GEMM, ph, 1, T, x->qkv, r, 0, 0);
    mem_op(x, "lora-scale", ZS_OC_RESID, ph, 1, 2 * out * x->b, out);
    mem_op(x, "lora-add", ZS_OC_RESID, ph, 1, 3 * out * x->b, out);
}

/* The adapter's backward, last op first; its input gradient is added to
 * the one of the QKV projection. */
static void lora_bwd(ctx *x)
{
    if (!x->frozen)
        return;
    double T = x->T, h = x->h, r = x->r, tp = x->cfg->tp, out = T * x->qkv;
    zs_step_phase ph = ZS_PH_BWD;
    mem_op(x, "lora-scale-bwd", ZS_OC_RESID, ph, 1, 2 * out * x->b, out);
    gemm_op(x, "lora-out-dgrad", ZS_OC_GEMM, ph, 1, T, r, x->qkv, 0, 0);
    gemm_op(x, "lora-out-wgrad", ZS_OC_GEMM, ph, 1, x->qkv, r, T, 0, 1);
    coll_op(x, "ar-dlora-out", ph, 1, ZS_COLL_ALLREDUCE, T * r * x->b, 1);
    gemm_op(x, "lora-in-dgrad", ZS_OC_GEMM, ph, 1, T, h, r / tp, 0, 0);
    double wgrad = secs(gemm_op(x, "lora-in-wgrad", ZS_OC_GEMM, ph, 1, r / tp, h, T, 0, 1));
    hide_under(coll_op(x, "ar-dlora-in", ph, 1, ZS_COLL_ALLREDUCE, T * h * x->b, 1), wgrad);
    if (x->cfg->sp)
        coll_op(x, "rs-dlora-input", ph, 1, ZS_COLL_REDUCESCATTER, x->Ts * h * x->b, 1);
    mem_op(x, "lora-grad-add", ZS_OC_RESID, ph, 1, 3 * x->Ts * h * x->b, x->Ts * h);
}

/* The attention half of a layer's forward (ph: forward or recompute). */
static void layer_fwd_attn(ctx *x, zs_step_phase ph)
{
    double T = x->T, h = x->h;
    mem_op(x, "norm-attn", ZS_OC_NORM, ph, 1, norm_fwd_b(x) * x->Ts * h, norm_flops(x));
    fp8_fwd_casts(x, "qkv", ph, x->Ts * h, h * x->qkv, 1);
    tp_gather(x, "ag-qkv", ph, 1, x->fp8);
    gemm_op(x, "qkv", ZS_OC_GEMM, ph, 1, T, x->qkv, h, x->fp8, 0);
    lora_fwd(x, ph);
    rope(x, ph, "rope");
    repeat_kv(x, ph, "repeat-kv");
    attn_core(x, ph, 0);
    fp8_fwd_casts(x, "out-proj", ph, T * x->ad, x->ad * h, 0);
    gemm_op(x, "out-proj", ZS_OC_GEMM, ph, 1, T, h, x->ad, x->fp8, 0);
    tp_reduce(x, x->cfg->sp ? "rs-out-proj" : "ar-out-proj", ph, 1);
    mem_op(x, "residual-attn", ZS_OC_RESID, ph, 1, resid_bytes(x), FL_RESID * x->Ts * h);
}

/* The MLP half of a layer's forward. */
static void layer_fwd_mlp(ctx *x, zs_step_phase ph)
{
    double T = x->T, h = x->h, f = x->f;
    int gated = zs_model_mlp(x->m) == ZS_MLP_SWIGLU;
    mem_op(x, "norm-mlp", ZS_OC_NORM, ph, 1, norm_fwd_b(x) * x->Ts * h, norm_flops(x));
    fp8_fwd_casts(x, "mlp-fc1", ph, x->Ts * h, h * x->up, 1);
    tp_gather(x, "ag-mlp-fc1", ph, 1, x->fp8);
    gemm_op(x, "mlp-fc1", ZS_OC_GEMM, ph, 1, T, x->up, h, x->fp8, 0);
    /* SwiGLU reads gate and up and writes their product; GELU and squared
     * ReLU read one and write one */
    mem_op(x, "activation", ZS_OC_ACT, ph, 1, act_fwd_b(x, gated) * T * f, FL_ACT * T * f);
    fp8_fwd_casts(x, "mlp-fc2", ph, T * f, f * h, 0);
    gemm_op(x, "mlp-fc2", ZS_OC_GEMM, ph, 1, T, h, f, x->fp8, 0);
    tp_reduce(x, x->cfg->sp ? "rs-mlp-fc2" : "ar-mlp-fc2", ph, 1);
    mem_op(x, "residual-mlp", ZS_OC_RESID, ph, 1, resid_bytes(x), FL_RESID * x->Ts * h);
    if (x->fp8 && !x->cs) /* delayed scaling: the amax histories and scales of the layer's
                             4 GEMMs' 3 tensors (input, weight, output gradient), read and
                             written */
        mem_op(x, "amax-scale", ZS_OC_FP8, ph, 1, zs_fp8_amax_bytes(), 4 * 3 * ZS_FP8_AMAX_HIST);
}

/* torchtitan's selective-op recomputation: in the backward the layer's
 * forward runs again up to the MLP's product, its policy returning the
 * saved outputs of attention and of the odd-numbered matmuls (wq, wv, w1,
 * w2) and recomputing the others (wk, wo, w3) and every memory-bound op. */
static void layer_recompute_op(ctx *x)
{
    const zs_model *m = x->m;
    double T = x->T, h = x->h, f = x->f;
    zs_step_phase ph = ZS_PH_RECOMPUTE;
    int gated = zs_model_mlp(m) == ZS_MLP_SWIGLU;
    mem_op(x, "norm-attn", ZS_OC_NORM, ph, 1, norm_fwd_b(x) * x->Ts * h, norm_flops(x));
    gemm_op(x, "k-proj", ZS_OC_GEMM, ph, 1, T, (double)m->kv_heads * m->head_dim / x->cfg->tp, h, 0,
            0);
    rope(x, ph, "rope");
    repeat_kv(x, ph, "repeat-kv");
    gemm_op(x, "out-proj", ZS_OC_GEMM, ph, 1, T, h, x->ad, 0, 0);
    mem_op(x, "residual-attn", ZS_OC_RESID, ph, 1, resid_bytes(x), FL_RESID * x->Ts * h);
    mem_op(x, "norm-mlp", ZS_OC_NORM, ph, 1, norm_fwd_b(x) * x->Ts * h, norm_flops(x));
    if (gated)
        gemm_op(x, "mlp-up", ZS_OC_GEMM, ph, 1, T, f, h, 0, 0);
    mem_op(x, "activation", ZS_OC_ACT, ph, 1, act_fwd_b(x, gated) * T * f, FL_ACT * T * f);
}

/* A linear layer's backward: the output gradient's cast, the gradient of the
 * input (dgrad: m x n by n x k) and of the weight (wgrad). col: a
 * column-parallel GEMM (its input gradient is reduce-scattered / all-reduced,
 * and SP gathers its input again for the wgrad); row: row-parallel (SP
 * gathers its output gradient). A column-parallel layer's two collectives
 * are asynchronous (TransformerEngine's Linear / LayerNormLinear /
 * LayerNormMLP and Megatron's own column-parallel layer: the input's
 * gather is issued before the dgrad GEMM and waited for after it, the
 * dgrad's reduce-scatter or all-reduce issued before the wgrad GEMM and
 * waited for after it): they cost only what outlasts their GEMM. The
 * row-parallel layer's gather of the output gradient comes first and is
 * waited for. cls, per_layer: the GEMMs' op class, once per layer or per
 * step (the LM head); in8: FP8 GEMMs, their output gradient cast first. */
static void linear_bwd_of(ctx *x, const char *name, zs_op_class cls, int per_layer, int in8,
                          double m, double n, double k, int col)
{
    char a[32], d[32], w[32];
    if (!col && x->cfg->sp) {
        snprintf(a, sizeof a, "ag-d%s", name);
        coll_op(x, a, ZS_PH_BWD, per_layer, ZS_COLL_ALLGATHER, x->Ts * x->h * x->b, 1);
    }
    if (in8)
        fp8_bwd_cast(x, name, m * n, !col);
    snprintf(d, sizeof d, "%s-dgrad", name);
    snprintf(w, sizeof w, "%s-wgrad", name);
    double dgrad = secs(gemm_op(x, d, cls, ZS_PH_BWD, per_layer, m, k, n, in8, 0));
    if (x->frozen) { /* no wgrad: nothing to gather its input for, nothing to hide under */
        snprintf(a, sizeof a, "%s-d%s", x->cfg->sp ? "rs" : "ar", name);
        if (col)
            tp_reduce(x, a, ZS_PH_BWD, per_layer);
        return;
    }
    double wgrad = secs(gemm_op(x, w, cls, ZS_PH_BWD, per_layer, n, k, m, in8, 1));
    if (col && x->cfg->sp) {
        snprintf(a, sizeof a, "ag-%s-input", name);
        hide_under(coll_op(x, a, ZS_PH_BWD, per_layer, ZS_COLL_ALLGATHER,
                           x->Ts * x->h * (in8 ? 1 : x->b), 1),
                   dgrad);
        snprintf(a, sizeof a, "rs-d%s", name);
        hide_under(
            coll_op(x, a, ZS_PH_BWD, per_layer, ZS_COLL_REDUCESCATTER, x->Ts * x->h * x->b, 1),
            wgrad);
    } else if (col) {
        snprintf(a, sizeof a, "ar-d%s", name);
        hide_under(coll_op(x, a, ZS_PH_BWD, per_layer, ZS_COLL_ALLREDUCE, x->T * x->h * x->b, 1),
                   wgrad);
    }
}

/* A layer's linear GEMM: once per layer, in FP8 with --precision fp8. */
static void linear_bwd(ctx *x, const char *name, double m, double n, double k, int col)
{
    linear_bwd_of(x, name, ZS_OC_GEMM, 1, x->fp8, m, n, k, col);
}

/* A layer's backward, last op first. */
static void layer_bwd(ctx *x)
{
    double T = x->T, h = x->h, f = x->f;
    int gated = zs_model_mlp(x->m) == ZS_MLP_SWIGLU;
    /* the residual stream's gradient: the branch's added to the skip's */
    mem_op(x, "residual-mlp-bwd", ZS_OC_RESID, ZS_PH_BWD, 1, resid_bytes(x), FL_RESID * x->Ts * h);
    linear_bwd(x, "mlp-fc2", T, h, f, 0);
    /* SwiGLU reads gate, up and the gradient and writes two gradients;
     * GELU and squared ReLU read the input and the gradient, write one */
    mem_op(x, "activation-bwd", ZS_OC_ACT, ZS_PH_BWD, 1, act_bwd_b(x, gated) * T * f,
           2 * FL_ACT * T * f);
    linear_bwd(x, "mlp-fc1", T, x->up, h, 1);
    /* norm backward: read the input and the gradient, write the gradient */
    mem_op(x, "norm-mlp-bwd", ZS_OC_NORM, ZS_PH_BWD, 1, norm_bwd_b(x) * x->Ts * h,
           2 * norm_flops(x));
    mem_op(x, "residual-attn-bwd", ZS_OC_RESID, ZS_PH_BWD, 1, resid_bytes(x), FL_RESID * x->Ts * h);
    linear_bwd(x, "out-proj", T, h, x->ad, 0);
    attn_core(x, ZS_PH_BWD, 1);
    repeat_kv(x, ZS_PH_BWD, "repeat-kv-bwd");
    rope(x, ZS_PH_BWD, "rope-bwd");
    lora_bwd(x);
    linear_bwd(x, "qkv", T, x->qkv, h, 1);
    mem_op(x, "norm-attn-bwd", ZS_OC_NORM, ZS_PH_BWD, 1, norm_bwd_b(x) * x->Ts * h,
           2 * norm_flops(x));
}

/* The embedding, the final norm, the LM head and cross-entropy, forward
 * and backward. The LM head stays in bf16 (Megatron's output layer is not
 * a TransformerEngine module). */
static void head_ops(ctx *x)
{
    double T = x->T, Ts = x->Ts, h = x->h, b = x->b, V = x->V, logits = T * V;
    double drop = x->m->dropout > 0 ? Ts * h * (2 * b + 1) : 0; /* embedding dropout */
    double pos = zs_model_learned_pos(x->m) ? T * h * b : 0;    /* + position embedding */
    /* look up T rows (this rank's vocabulary shard; the others masked) */
    mem_op(x, "embedding", ZS_OC_EMBED, ZS_PH_FWD, 0, 2 * T * h * b + pos + drop, T * h);
    tp_reduce(x, x->cfg->sp ? "rs-embedding" : "ar-embedding", ZS_PH_FWD, 0);
    mem_op(x, "final-norm", ZS_OC_NORM, ZS_PH_FWD, 0, norm_fwd_b(x) * Ts * h, norm_flops(x));
    tp_gather(x, "ag-lm-head", ZS_PH_FWD, 0, 0);
    gemm_op(x, "lm-head", ZS_OC_HEAD, ZS_PH_FWD, 0, T, V, h, 0, 0);
    /* vocab_parallel_cross_entropy on logits.float() (ZS_XENT_FWD_BYTES);
     * three all-reduces of T fp32 values */
    mem_op(x, "cross-entropy", ZS_OC_XENT, ZS_PH_FWD, 0, xent_fwd_b(x) * logits, FL_XENT * logits);
    coll_op(x, "ar-cross-entropy", ZS_PH_FWD, 0, ZS_COLL_ALLREDUCE, T * FP32, 3);
    mem_op(x, "cross-entropy-bwd", ZS_OC_XENT, ZS_PH_BWD, 0, xent_bwd_b(x) * logits, 2 * logits);
    /* Megatron's output layer is column-parallel, its backward collectives
     * overlapped as TransformerEngine's layers' are; in bf16 */
    linear_bwd_of(x, "lm-head", ZS_OC_HEAD, 0, 0, T, V, h, 1);
    mem_op(x, "final-norm-bwd", ZS_OC_NORM, ZS_PH_BWD, 0, norm_bwd_b(x) * Ts * h,
           2 * norm_flops(x));
    if (x->frozen) /* no gradient for the embedding */
        return;
    tp_gather(x, "ag-dembedding", ZS_PH_BWD, 0, 0);
    /* scatter-add of the gradient rows into the main gradient; eager
     * PyTorch's embedding_dense_backward first zero-fills a dense gradient
     * of the whole table */
    double dense = x->eager ? V * h * b : 0;
    mem_op(x, "embedding-bwd", ZS_OC_EMBED, ZS_PH_BWD, 0, T * h * (b + 2 * x->gb) + pos + dense,
           T * h);
}

/* Gradient norm, Adam and the gradient buffer's reset over this GPU's share
 * of the trained parameters (params / tp, / dp for the sharded state). */
static void optim_ops(ctx *x)
{
    const zs_model *m = x->m;
    double p = zs_step_trained_params(m, x->cfg->lora) / x->cfg->tp;
    int z = x->cfg->zero_stage, dp = x->cfg->dp;
    double shard = z >= 1 ? p / dp : p, grads = z >= 2 ? p / dp : p;
    /* a bf16 gradient buffer: the optimizer reads its shard as fp32 main
     * gradients (Megatron's distributed optimizer copies it in) */
    if (x->gb < FP32)
        mem_op(x, "grad-cast", ZS_OC_OPTIM, ZS_PH_OPTIM, 0, shard * (x->gb + FP32), shard);
    /* multi-tensor L2 norm of the fp32 gradients */
    mem_op(x, "grad-norm", ZS_OC_GNORM, ZS_PH_OPTIM, 0, shard * FP32, 2 * shard);
    /* fused Adam on fp32 state: read gradient, master weight, m, v (16),
     * write master, m, v (12); copy the master to the bf16 weight (4 + 2) */
    mem_op(x, "adam", ZS_OC_OPTIM, ZS_PH_OPTIM, 0, shard * (7 * FP32 + FP32 + x->b),
           FL_ADAM * shard);
    mem_op(x, "grad-zero", ZS_OC_OPTIM, ZS_PH_OPTIM, 0, grads * x->gb, 0);
}

static int check_cfg(const zs_cost *c, const zs_step_cfg *cfg, zs_err *e)
{
    const zs_model *m = &c->model;
    const zs_gpu *g = &c->cluster.gpu;
    int tp = cfg->tp;
    if (zs_model_is_moe(m))
        return zs_err_set(e, ZS_EINPUT, m->name, "use a dense model",
                          "the step inventory covers dense models only ('%s' has %d experts)",
                          m->name, m->experts);
    if (cfg->tokens < 1 || cfg->tokens > 2147483647)
        return zs_err_set(e, ZS_EUSAGE, "--len", "give 1 to 2^31-1 tokens",
                          "%lld tokens out of range", (long long)cfg->tokens);
    if (tp < 1 || m->heads % tp || (m->kv_heads % tp && tp % m->kv_heads) || m->ffn % tp)
        return zs_err_set(e, ZS_EUSAGE, "--tp", "use a TP degree that divides the heads and ffn",
                          "tp=%d does not divide %d heads / %d KV heads / ffn %d of '%s'", tp,
                          m->heads, m->kv_heads, m->ffn, m->name);
    if (tp > zs_cluster_gpus(&c->cluster))
        return zs_err_set(e, ZS_EUSAGE, "--tp", "use at most the cluster's GPUs",
                          "tp=%d but the cluster has %d GPUs", tp, zs_cluster_gpus(&c->cluster));
    if (cfg->sp && tp > 1 && cfg->tokens % tp)
        return zs_err_set(e, ZS_EUSAGE, "--len", "give a length divisible by --tp (or --sp off)",
                          "sequence parallelism splits %lld tokens over tp=%d",
                          (long long)cfg->tokens, tp);
    if (!zs_step_lora_rank_ok(m, cfg->lora, tp))
        return zs_err_set(e, ZS_EUSAGE, "--lora",
                          "give a rank from 1 to the hidden size that --tp divides (0: no LoRA)",
                          "LoRA rank %d with hidden %d and tp=%d", cfg->lora, m->hidden, tp);
    if (cfg->dp < 1 || cfg->zero_stage < 0 || cfg->zero_stage > 3)
        return zs_err_set(e, ZS_EUSAGE, "--zero", "use --dp >= 1 and --zero 0 to 3",
                          "dp=%d zero=%d", cfg->dp, cfg->zero_stage);
    if (cfg->kernels != ZS_KERN_FUSED &&
        (zs_model_layernorm(m) || zs_model_learned_pos(m) || zs_precision_fp8(cfg->precision)))
        return zs_err_set(e, ZS_EUSAGE, "--kernels", "use --kernels fused for this model",
                          "eager kernels are torchtitan's Llama (RMSNorm, RoPE) in bf16; '%s'%s",
                          m->name,
                          zs_precision_fp8(cfg->precision) ? " in fp8 is not modelled"
                                                           : " has LayerNorm or learned positions");
    if (zs_precision_fp8(cfg->precision))
        return zs_gpu_check_fp8(g, e);
    return ZS_OK;
}

static void ctx_init(ctx *x, const zs_cost *c, const zs_step_cfg *cfg, zs_step *out)
{
    const zs_model *m = &c->model;
    const zs_gpu *g = &c->cluster.gpu;
    double tp = cfg->tp;
    memset(x, 0, sizeof *x);
    x->c = c, x->m = m, x->cfg = cfg, x->s = out;
    x->bw = ZS_HBM_EFF * g->hbm_gbs * 1e9;
    x->launch = g->gemm.launch_us * 1e-6;
    x->fp8 = zs_precision_fp8(cfg->precision);
    x->cs = cfg->precision == ZS_PREC_FP8_CS;
    x->eager = cfg->kernels != ZS_KERN_FUSED;
    x->enorm = cfg->kernels == ZS_KERN_EAGER;
    x->frozen = cfg->lora > 0;
    x->r = cfg->lora;
    x->share = 1;
    x->gb = zs_grad_bytes(cfg->grad);
    x->T = (double)cfg->tokens;
    x->Ts = cfg->sp ? x->T / tp : x->T;
    x->b = m->dtype_bytes;
    x->h = m->hidden;
    x->qkv = (double)(m->heads + 2 * m->kv_heads) * m->head_dim / tp;
    x->ad = (double)m->heads * m->head_dim / tp;
    x->f = m->ffn / tp;
    x->up = zs_model_mlp(m) == ZS_MLP_SWIGLU ? 2 * x->f : x->f;
    x->V = m->vocab / tp;
}

int zs_step_build(const zs_cost *c, const zs_step_cfg *cfg, zs_step *out, zs_err *e)
{
    memset(out, 0, sizeof *out);
    int rc = check_cfg(c, cfg, e);
    if (rc)
        return rc;
    out->cfg = *cfg;
    out->layers = c->model.layers;
    ctx x;
    ctx_init(&x, c, cfg, out);
    x.ranks = malloc(sizeof *x.ranks * (size_t)cfg->tp);
    if (!x.ranks)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int i = 0; i < cfg->tp; i++)
        x.ranks[i] = i;
    fsdp_copy(&x, ZS_PH_FWD, ZS_FSDP2, "fsdp-copy-out");
    layer_fwd_attn(&x, ZS_PH_FWD);
    layer_fwd_mlp(&x, ZS_PH_FWD);
    fsdp_copy(&x, ZS_PH_BWD, ZS_FSDP2, "fsdp-copy-out-bwd");
    if (cfg->recompute == ZS_STEP_RC_FULL || cfg->recompute == ZS_STEP_RC_LAYER) {
        x.share = zs_step_rc_attn_share(cfg->recompute);
        layer_fwd_attn(&x, ZS_PH_RECOMPUTE);
        layer_fwd_mlp(&x, ZS_PH_RECOMPUTE);
        x.share = 1;
    } else if (cfg->recompute == ZS_STEP_RC_SELECTIVE) {
        attn_core(&x, ZS_PH_RECOMPUTE, 0);
    } else if (cfg->recompute == ZS_STEP_RC_OP) {
        layer_recompute_op(&x);
    }
    layer_bwd(&x);
    fsdp_copy(&x, ZS_PH_BWD, ZS_FSDP1, "fsdp1-grad-cat");
    head_ops(&x);
    optim_ops(&x);
    free(x.ranks);
    if (x.oom) {
        zs_step_free(out);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int i = 0; i < out->nops; i++)
        out->total_s += zs_step_op_total(out, &out->ops[i]);
    return ZS_OK;
}

void zs_step_free(zs_step *s)
{
    free(s->ops);
    s->ops = NULL;
    s->nops = s->cap = 0;
}

double zs_step_op_total(const zs_step *s, const zs_step_op *op)
{
    return op->per_layer ? zs_step_op_layer_s(op) * s->layers : op->seconds - op->hidden;
}

double zs_step_op_layer_s(const zs_step_op *op)
{
    return (op->seconds - op->hidden) * op->layer_share;
}

double zs_step_rc_attn_share(zs_step_rc r)
{
    return r == ZS_STEP_RC_LAYER ? 0.5 : r == ZS_STEP_RC_SELECTIVE || r == ZS_STEP_RC_FULL ? 1 : 0;
}

double zs_step_class_time(const zs_step *s, zs_op_class c, int phase)
{
    double t = 0;
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].cls == c && (phase < 0 || (int)s->ops[i].phase == phase))
            t += zs_step_op_total(s, &s->ops[i]);
    return t;
}

int zs_step_layer_time(const zs_cost *c, const zs_step_cfg *cfg, zs_step_layer *out, zs_err *e)
{
    memset(out, 0, sizeof *out);
    zs_step s;
    int rc = zs_step_build(c, cfg, &s, e);
    if (rc)
        return rc;
    for (int i = 0; i < s.nops; i++) {
        const zs_step_op *op = &s.ops[i];
        if (!op->per_layer || op->per_step) /* FP8 weight casts: once per step, not here */
            continue;
        if (op->phase == ZS_PH_RECOMPUTE) {
            out->recompute += op->seconds * op->layer_share;
            continue;
        }
        int bwd = op->phase == ZS_PH_BWD;
        if (op->cls == ZS_OC_ATTN)
            *(bwd ? &out->attn_bwd : &out->attn_fwd) += op->seconds;
        else if (op->cls == ZS_OC_TPCOMM)
            *(bwd ? &out->comm_bwd : &out->comm_fwd) += op->seconds - op->hidden;
        else
            *(bwd ? &out->bwd : &out->fwd) += op->seconds;
    }
    zs_step_free(&s);
    return ZS_OK;
}
