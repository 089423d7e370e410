/* The op inventory of one training step on one GPU: every op of a
 * transformer layer's forward and backward (the linear layers' GEMMs, core
 * attention, norms, RoPE, the MLP activation, residual / bias-dropout-add,
 * the tensor-parallel collectives, FP8 casts and amax), the embedding, the
 * LM head with cross-entropy over the vocabulary, the gradient norm and the
 * Adam step, each with its FLOPs, HBM bytes and predicted seconds. GEMMs
 * and attention are priced by the cost model (zs_cost.h; FP8 GEMMs on the
 * same GEMM curve at the GPU's FP8 rate), memory-bound ops by bytes /
 * (HBM bandwidth x ZS_HBM_EFF), collectives by the cost model's NCCL
 * model over ranks 0..tp-1 of its cluster. Tensor parallelism divides the
 * ops as Megatron-LM does (heads, MLP columns and the vocabulary over tp;
 * with sequence parallelism the residual stream over tp too).
 *
 * A planner asks zs_step_layer_time for a layer's non-attention compute at
 * t tokens. docs/cost-model.md ("The step inventory") has every byte count
 * and constant with its source. Depends on zs_cost, zs_model, zs_gpu. */
#ifndef ZS_STEP_H
#define ZS_STEP_H

#include <stdint.h>

#include "zs_cost.h"
#include "zs_err.h"
#include "zs_memory.h"

/* The achievable fraction of HBM bandwidth memory-bound ops run at is
 * ZS_HBM_EFF (zs_kernel.h, with its source): GEMMs are bounded by it too. */

/* bf16; FP8 with TransformerEngine's delayed scaling (NeMo's default
 * fp8_recipe "delayed": each tensor's scale from an amax history the
 * cast kernels update); FP8 with current scaling (Float8CurrentScaling,
 * NeMo's "tensorwise", Megatron-Bridge's FP8-CS recipes: each tensor's
 * scale from its own amax, computed before its cast). */
typedef enum zs_precision { ZS_PREC_BF16 = 0, ZS_PREC_FP8, ZS_PREC_FP8_CS } zs_precision;
/* zs_cost_set_fp8's `on` and the study option `precision` (bf16|fp8|fp8-cs)
 * take these values as they are. */
_Static_assert(ZS_PREC_BF16 == 0 && ZS_PREC_FP8 == 1 && ZS_PREC_FP8_CS == 2,
               "zs_precision's values are zs_cost_set_fp8's and the precision option's");
/* Whether p runs the linear GEMMs in FP8 (either scaling). */
int zs_precision_fp8(zs_precision p);
/* Activation recomputation: none, Megatron's selective (core attention
 * recomputed in the backward), full (the layer's whole forward), and
 * torchtitan's two selective modes (torchtitan/parallelisms/
 * parallelize_llama.py, April 2024): selective-op saves the outputs of
 * the layer's odd-numbered matmuls (wq, wv, w1, w2) and of attention and
 * recomputes every other forward op; selective-layer recomputes the whole
 * forward of every second layer (its default selective_ac_option "2"). */
typedef enum zs_step_rc {
    ZS_STEP_RC_NONE = 0,
    ZS_STEP_RC_SELECTIVE,
    ZS_STEP_RC_FULL,
    ZS_STEP_RC_OP,
    ZS_STEP_RC_LAYER,
    ZS_STEP_RC_N
} zs_step_rc;
/* Which kernels run the memory-bound ops: fused as Megatron-Core with
 * TransformerEngine runs them (one kernel per norm, RoPE, activation),
 * or PyTorch eager as torchtitan's Llama runs them with torch.compile off
 * (one kernel per PyTorch op: RMSNorm's upcast, square, mean, scale and
 * downcast; RoPE in complex fp32; SiLU and the gate's product apart;
 * GQA's repeat_kv copies), with its RMSNorm eager too or in its fused
 * Triton kernel (norm_type fused_rmsnorm). */
typedef enum zs_step_kernels {
    ZS_KERN_FUSED = 0,
    ZS_KERN_EAGER,
    ZS_KERN_EAGER_FUSED_NORM,
    ZS_KERN_N
} zs_step_kernels;
typedef enum zs_step_phase {
    ZS_PH_FWD = 0,
    ZS_PH_BWD,
    ZS_PH_RECOMPUTE, /* forward ops run again in the backward */
    ZS_PH_OPTIM,     /* gradient norm and optimizer step */
    ZS_PH_N
} zs_step_phase;
/* Op classes (the rows of the summary and of the comparison with
 * measurements). */
typedef enum zs_op_class {
    ZS_OC_GEMM = 0, /* the layer's linear layers (QKV, output projection, MLP) */
    ZS_OC_ATTN,     /* core attention */
    ZS_OC_NORM,     /* RMSNorm / LayerNorm */
    ZS_OC_ROPE,
    ZS_OC_ACT,   /* the MLP activation (SwiGLU, GELU, squared ReLU) */
    ZS_OC_RESID, /* residual add / bias-dropout-add */
    ZS_OC_FP8,   /* FP8 casts (with transposes) and the amax / scale update */
    ZS_OC_TPCOMM,
    ZS_OC_EMBED,
    ZS_OC_HEAD, /* the LM head's GEMMs */
    ZS_OC_XENT, /* cross-entropy over the vocabulary */
    ZS_OC_GNORM,
    ZS_OC_OPTIM,
    ZS_OC_COPY, /* framework copies: GQA's repeat_kv, FSDP's (zs_fsdp) */
    ZS_OC_N
} zs_op_class;

const char *zs_precision_name(zs_precision p);
const char *zs_step_rc_name(zs_step_rc r);
const char *zs_step_phase_name(zs_step_phase p);
const char *zs_op_class_name(zs_op_class c);
const char *zs_step_kernels_name(zs_step_kernels k);
/* "bf16" | "fp8"; "none" | "selective" | "full" | "selective-op" |
 * "selective-layer"; "fused" | "eager" | "eager-fused-norm". ZS_EUSAGE
 * naming the choices otherwise. */
int zs_precision_parse(const char *s, zs_precision *out, zs_err *e);
int zs_step_rc_parse(const char *s, zs_step_rc *out, zs_err *e);
int zs_step_kernels_parse(const char *s, zs_step_kernels *out, zs_err *e);

/* Megatron's vocab-parallel cross-entropy on fp32 logits, HBM bytes per
 * logit: forward the cast (2 read, 4 written), max (4), subtract (4 + 4),
 * exp (4 + 4), sum (4) and divide (4 + 4); backward softmax times the loss
 * gradient (4 + 4) and the cast back to bf16 (4 + 2)
 * (megatron/core/tensor_parallel/cross_entropy.py). */
#define ZS_XENT_FWD_BYTES 38.0
#define ZS_XENT_BWD_BYTES 14.0

typedef struct zs_step_cfg {
    int64_t tokens; /* tokens of the micro-batch on this GPU (one causal sequence), before TP */
    int tp;         /* tensor-parallel degree: ranks 0..tp-1 of the cost model's cluster */
    int sp;         /* 1: sequence parallelism with TP (Megatron's default), 0: all-reduces */
    zs_precision precision;
    zs_step_rc recompute;
    int dp;             /* data-parallel degree the optimizer state is sharded over */
    int zero_stage;     /* 0: replicated; 1: optimizer state sharded over dp, 2: + gradients,
                           3: + weights */
    zs_grad_dtype grad; /* the gradient buffer the weight-gradient GEMMs accumulate into */
    zs_step_kernels kernels;
    /* LoRA fine-tuning, the adapters' rank (0: every weight trained). The
     * base weights are frozen: no weight-gradient GEMMs, gradients,
     * optimizer state or gradient reduction for them (the embedding and
     * the LM head included), and the backward skips what only the weight
     * gradients need (sequence parallelism's gathers of the GEMM inputs,
     * FP8's transposes). Rank-lora adapters sit on the QKV projection of
     * every layer: NeMo 1.x's default target (examples/nlp/language_modeling/
     * tuning/conf/megatron_gpt_finetuning_config.yaml, peft.lora_tuning:
     * target_modules ['attention_qkv'], adapter_dim 32, dropout 0) [S]. */
    int lora;
    /* ZeRO-3's implementation (zs_memory.h): FSDP2's copy-out before each
     * layer's forward and backward, FSDP1's gradient concatenation after
     * its backward, or Megatron-FSDP's none */
    zs_fsdp fsdp;
} zs_step_cfg;

/* Whether rank is a LoRA rank the model can take under tp: 0 (no LoRA) or
 * 1 to the hidden size, a multiple of tp (the adapter's linear_in is
 * column-parallel). */
int zs_step_lora_rank_ok(const zs_model *m, int rank, int tp);
/* Parameters a LoRA layer trains: the QKV adapter's two matrices, hidden x
 * rank in and rank x the QKV columns out. */
double zs_step_lora_params_per_layer(const zs_model *m, int rank);
/* Parameters that take gradients: every one of the model's, or with LoRA
 * (rank > 0) the adapters of every layer. */
double zs_step_trained_params(const zs_model *m, int rank);
/* One layer's trained parameters: with LoRA (rank > 0) its adapters', else
 * all its weights. */
double zs_step_trained_params_per_layer(const zs_model *m, int rank);

/* tokens 0 (to be set), tp 1, sp on, bf16, no recomputation, dp 1, ZeRO-1,
 * fp32 gradients, fused kernels, every weight trained. */
zs_step_cfg zs_step_cfg_default(void);

typedef struct zs_step_op {
    char name[32];
    zs_op_class cls;
    zs_step_phase phase;
    int per_layer; /* 1: once per layer (x layers in the step), 0: once per step */
    /* the share of the layers that run it (1; 0.5 for selective-layer's
     * recomputation, every second layer) */
    double layer_share;
    double m, n, k; /* GEMM shape (m x k by k x n); 0 for other ops */
    double flops;   /* per instance (memory-bound ops: arithmetic, not used in the time) */
    double bytes;   /* HBM bytes per instance (collectives: each rank's buffer) */
    double seconds; /* per instance */
    /* of them, the seconds that run under a GEMM and cost the step nothing
     * (the backward's asynchronous TP collectives); the step counts
     * seconds - hidden */
    double hidden;
    /* 1: once per training step, not per micro-batch: a layer's FP8 weight
     * cast, which TransformerEngine caches for the step's later micro-batches
     * and for recomputation (Megatron-Core passes is_first_microbatch) */
    int per_step;
    zs_coll_kind coll; /* TP collectives: the kind ... */
    double coll_bytes; /* ... and each rank's buffer, as zs_cost_collective takes it */
} zs_step_op;

typedef struct zs_step {
    zs_step_cfg cfg;
    int layers;
    int nops, cap;
    zs_step_op *ops;
    double total_s; /* the step: layer ops x layers plus the once-per-step ops */
} zs_step;

/* Builds the inventory for the cost model's model and GPU. ZS_EINPUT for a
 * configuration the inventory cannot price (FP8 on a GPU without FP8 tensor
 * cores, a TP degree that does not divide the heads, a MoE model...), with
 * what to change. Free with zs_step_free. */
int zs_step_build(const zs_cost *c, const zs_step_cfg *cfg, zs_step *out, zs_err *e);
void zs_step_free(zs_step *s);
/* Seconds an op takes over the step (x layers x its share for a layer op). */
double zs_step_op_total(const zs_step *s, const zs_step_op *op);
/* Seconds a layer op costs one layer on average: (seconds - hidden) x its
 * layer share. */
double zs_step_op_layer_s(const zs_step_op *op);
/* The share of the layers whose core attention runs again in the backward
 * under recomputation r (1: selective, full; 0.5: selective-layer; 0:
 * none, selective-op, which saves attention's output). */
double zs_step_rc_attn_share(zs_step_rc r);
/* Step seconds of one class (phase < 0: every phase). */
double zs_step_class_time(const zs_step *s, zs_op_class c, int phase);

/* One layer at cfg->tokens, in seconds, for planners. */
typedef struct zs_step_layer {
    double fwd, bwd;           /* non-attention compute: GEMMs, memory-bound ops, FP8 casts */
    double attn_fwd, attn_bwd; /* core attention */
    double comm_fwd, comm_bwd; /* tensor-parallel collectives (0 at tp = 1) */
    double recompute;          /* forward ops run again in the backward, every kind */
} zs_step_layer;

int zs_step_layer_time(const zs_cost *c, const zs_step_cfg *cfg, zs_step_layer *out, zs_err *e);

#endif
