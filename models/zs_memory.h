/* Memory per GPU: what a training step keeps on each device, so planners
 * can respect a token capacity instead of producing plans that would not
 * fit. Mixed-precision Adam: bf16 weights, a gradient buffer in fp32 or
 * bf16 (zs_grad_dtype), fp32 master weights plus two moments; ZeRO stages
 * shard the optimizer (1), gradients (2) and weights (3) over the
 * data-parallel group. Activations are per token per layer with flash
 * attention (no s^2 term); with FP8 the linear layers' saved inputs are
 * FP8. Depends on zs_model and zs_gpu. */
#ifndef ZS_MEMORY_H
#define ZS_MEMORY_H

#include "zs_gpu.h"
#include "zs_model.h"

typedef enum zs_recompute {
    ZS_RECOMPUTE_NONE = 0, /* keep every activation */
    ZS_RECOMPUTE_FULL = 1  /* keep only each layer's input, recompute the rest */
} zs_recompute;

/* The dtype of the gradient buffer the backward accumulates into.
 * fp32: Megatron-LM's main gradients with bf16 training
 * (--accumulate-allreduce-grads-in-fp32, forced on for bf16), DeepSpeed's
 * fp32 gradient accumulation; bf16: Megatron-Core's DDP with
 * grad_reduce_in_fp32 off, as NeMo's published configs run it
 * (optim.grad_sync_dtype: bf16 with a contiguous gradient buffer). */
typedef enum zs_grad_dtype { ZS_GRAD_FP32 = 0, ZS_GRAD_BF16 = 1 } zs_grad_dtype;

/* Bytes per gradient value: 4 or 2. */
double zs_grad_bytes(zs_grad_dtype g);
const char *zs_grad_dtype_name(zs_grad_dtype g);
/* "fp32" | "bf16"; ZS_EUSAGE naming the choices otherwise. */
int zs_grad_dtype_parse(const char *s, zs_grad_dtype *out, zs_err *e);

/* Which implementation runs ZeRO-3, for the copies it makes on the
 * compute stream (the step model and the iteration builder price them):
 * - PyTorch FSDP2 (torchtitan) all-gathers each layer into a buffer and
 *   copies it out into the unsharded parameters before the layer's forward
 *   and again before its backward (FSDPParamGroup.wait_for_unshard ->
 *   foreach_all_gather_copy_out);
 * - PyTorch FSDP1 (Composer, llm-foundry) gathers into its FlatParameter
 *   in place, but forward and backward see the original parameters as
 *   views of it ("False should be used during forward/backward
 *   computation", FlatParamHandle._use_unsharded_views), so autograd
 *   concatenates the views' gradients into the flat gradient after the
 *   layer's backward (torch.split's backward is a cat);
 * - Megatron-FSDP gathers into its parameter buffer and accumulates the
 *   gradients into its gradient buffer ("zero copy communication",
 *   megatron/core/distributed/fsdp/src/README.md): no copy. */
typedef enum zs_fsdp { ZS_FSDP2 = 0, ZS_FSDP1 = 1, ZS_FSDP_MEGATRON = 2 } zs_fsdp;
/* "fsdp2" | "fsdp1" | "megatron-fsdp" (the options' value list, in order) */
#define ZS_FSDP_VALUES "fsdp2|fsdp1|megatron-fsdp"
const char *zs_fsdp_name(zs_fsdp f);

typedef struct zs_mem_cfg {
    int tp, pp, dp; /* parallel degrees sharing the model's state */
    int zero_stage; /* 0..3 */
    zs_recompute recompute;
    double reserve_gib; /* kept free for workspace, fragmentation, NCCL buffers */
    zs_grad_dtype grad;
    /* 1: TransformerEngine FP8: each linear layer keeps its input for the
     * weight gradient as the FP8 copy its forward GEMM read */
    int fp8;
    /* LoRA's adapter rank (0: every weight trained). The base weights stay
     * on the GPU (bf16, sharded as the ZeRO stage says) but are frozen:
     * gradients and optimizer state only for the adapters
     * (zs_step_trained_params), whose forward keeps its rank-wide
     * intermediate (lora-in's gathered output) per token and layer. */
    int lora;
    /* ZeRO-3's implementation: not in the memory model; the iteration
     * builder's copies (zs_iter_spec.fsdp) */
    zs_fsdp fsdp;
} zs_mem_cfg;

/* tp=pp=dp=1, ZeRO-1, no recomputation, 4 GiB reserve, fp32 gradients,
 * bf16 activations, no LoRA. */
zs_mem_cfg zs_mem_cfg_default(void);

typedef struct zs_mem_breakdown {
    double weights, grads, optimizer; /* bytes per GPU */
    double act_per_token;             /* bytes per token held, all layers of the stage */
    double static_bytes;              /* weights + grads + optimizer */
    double capacity;                  /* usable device bytes (memory - reserve) */
    long max_tokens;                  /* tokens per GPU that fit (0 when nothing fits) */
} zs_mem_breakdown;

/* Bytes of activations one token keeps in one layer (tp-sharded); fp8 as
 * zs_mem_cfg's. */
double zs_mem_act_per_token_layer(const zs_model *m, int tp, zs_recompute rc, int fp8);

int zs_mem_breakdown_compute(const zs_model *m, const zs_gpu *g, const zs_mem_cfg *cfg,
                             zs_mem_breakdown *out, zs_err *e);

/* Tokens per GPU that fit under cfg (*cap >= 1), or ZS_EINPUT naming the
 * model when its weights and optimizer state alone do not fit one GPU;
 * `fix` is what the caller's method can change to make them fit. Every
 * planner sizes its buffers with it. */
int zs_mem_token_capacity(const zs_model *m, const zs_gpu *g, const zs_mem_cfg *cfg,
                          const char *fix, long *cap, zs_err *e);

#endif
