/* An analytic step-time model of one Megatron-LM / NeMo training step (not
 * a simulated schedule): the per-layer forward and backward of the op
 * inventory (zs_step: GEMMs, attention, memory-bound ops, FP8 casts,
 * recomputation and the tensor-parallel collectives with sequence
 * parallelism) on the layers of one pipeline stage, context parallelism as
 * TransformerEngine's ring (KV exchanged point to point with the next CP
 * rank, overlapped with each ring step's attention), the 1F1B pipeline
 * with its bubble ((pp-1)/vp micro-batches, interleaved when vp > 1) and
 * the activations sent between stages, data parallelism with the
 * distributed optimizer (gradient reduce-scatter and parameter all-gather
 * over dp x cp ranks priced by the NCCL model on Megatron's rank layout,
 * overlapped with one micro-batch's backward / forward), and the
 * once-per-step ops: embedding, LM head with cross-entropy and the
 * optimizer on the sharded state. With cfg.interference, the overlapped
 * DP collectives slow the compute under them: NCCL runs one CTA per
 * channel on SMs of the GPU (the channels of the graph of the algorithm
 * the NCCL model picks), which the compute kernels lose while both run. Every assumption and its
 * source is in docs/cost-model.md ("Megatron step model"). Depends on zs_step, zs_cost and
 * zs_model. */
#ifndef ZS_MEGATRON_STEP_H
#define ZS_MEGATRON_STEP_H

#include "zs_cost.h"
#include "zs_err.h"
#include "zs_step.h"

typedef struct zs_mstep_cfg {
    int gpus, gbs, mbs, seq; /* GPUs, global batch (sequences), micro-batch, tokens */
    int tp, pp, cp, vp;      /* tensor, pipeline, context parallel; virtual stages */
    zs_precision precision;
    zs_step_rc recompute;
    /* 0: replicated; 1: the distributed optimizer (ZeRO-1 over dp x cp);
     * 2: gradients sharded too (the same collectives); 3: FSDP (ZeRO-3):
     * each layer's weights all-gathered before its forward and again before
     * its backward, its gradients reduce-scattered after it */
    int zero;
    /* 1: compute slows while an overlapped NCCL collective holds SMs (one
     * CTA per channel of the algorithm it runs: compute keeps (SMs - CTAs)
     * / SMs of the GPU for as long as they overlap); 0: overlap is free */
    int interference;
    zs_grad_dtype grad;      /* the gradient buffer's dtype */
    zs_step_kernels kernels; /* the memory-bound ops' kernels (zs_step.h) */
    /* LoRA's adapter rank (0: every weight trained): the base weights
     * frozen (zs_step_cfg.lora); the DP collectives and the optimizer
     * carry the adapters only, FSDP still gathers every weight */
    int lora;
    /* Packed sequences (fine-tuning on short samples): NULL prices each
     * sequence as one causal document; else the document lengths of npacks
     * packed sequences, pack after pack, each pack's summing to seq.
     * Attention is causal inside each document only (one varlen launch per
     * pack, TransformerEngine's THD format), averaged over the packs, and
     * the model FLOPs' attention term counts the documents. Under CP each
     * document is cut into 2 cp zigzag chunks of its own (THD). */
    const int32_t *docs;
    int ndocs, npacks;
    zs_fsdp fsdp; /* zero 3: which implementation's copies (zs_memory.h) */
    /* 1: TP without sequence parallelism (all-reduces; norms, dropouts and
     * residual adds on every TP rank's whole sequence), as Megatron-LM ran
     * before it had it; 0: with it, the default */
    int no_sp;
} zs_mstep_cfg;

typedef struct zs_mstep {
    int dp, m; /* data-parallel degree; micro-batches per DP rank */
    /* One micro-batch on the slowest stage (its layers over all vp chunks,
     * plus the embedding and LM head it holds), seconds. */
    double mb_compute, mb_tp_comm, mb_cp_comm, mb_pp_comm;
    double mb_fwd, mb_bwd;       /* the micro-batch's forward and backward (every term) */
    double layer_fwd, layer_bwd; /* one layer of one micro-batch (every term) */
    /* The step's breakdown, seconds; step_s is their sum. */
    double compute_s;      /* m x mb_compute, plus the FP8 weight casts (once per step) */
    double tp_comm_s;      /* exposed TP collectives: m x mb_tp_comm */
    double cp_comm_s;      /* exposed CP ring exchange: m x mb_cp_comm */
    double pp_comm_s;      /* exposed stage-to-stage sends */
    double pp_bubble_s;    /* (pp-1)/vp micro-batches of the slowest stage */
    double dp_comm_s;      /* exposed gradient reduce-scatter and parameter all-gather */
    double interference_s; /* compute slowed by the overlapped DP collectives' CTAs */
    double optim_s;        /* gradient norm and Adam on this GPU's shard */
    double step_s;
    double dp_rs_s, dp_ag_s; /* the DP collectives' whole time per step (before overlap) */
    double model_flops;      /* NeMo's model FLOPs of the step (all GPUs); with LoRA two
                                thirds of them (forward and input gradients, no weight
                                gradients) */
    double tokens_s_gpu, model_tflops_gpu;
} zs_mstep;

/* The layers of the slowest pipeline stage: ceil(layers / pp). A split
 * that pp (x vp) does not divide, as NeMo's larger recipes run it (126
 * layers over 8 stages), puts the extra layers on some stages; the slowest
 * sets the pace. The optimizer and the DP collectives stay priced at the
 * average stage's share of the weights. */
double zs_megatron_stage_layers(int layers, int pp);

/* The 1F1B bubble: (pp-1)/vp micro-batches of mb seconds each. */
double zs_megatron_bubble(int pp, int vp, double mb);

/* NeMo's model FLOPs per token for a sequence of seq tokens (forward and
 * backward, no recomputation, full attention: nemo/utils/flops_formulas.py
 * gpt3 / llama2 / llama3 / nemotron): 3 x layers x the linear layers'
 * forward FLOPs + 12 layers hidden seq + 6 hidden vocab. */
double zs_megatron_model_flops_per_token(const zs_model *m, int seq);
/* The same over packed documents: the attention term with sum(len^2) /
 * sum(len) in place of seq (docs NULL or ndocs 0: seq). */
double zs_megatron_packed_flops_per_token(const zs_model *m, int seq, const int32_t *docs,
                                          int ndocs);

/* Predicts one step of cfg on the cost model's model and cluster (which
 * must have cfg->gpus GPUs). ZS_EINPUT with the reason for a configuration
 * the model cannot express. */
int zs_megatron_step(const zs_cost *c, const zs_mstep_cfg *cfg, zs_mstep *out, zs_err *e);

#endif
