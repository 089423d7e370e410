/* Memory per GPU: what a training step keeps on each device, so planners
 * can respect a token capacity instead of producing plans that would not
 * fit. Mixed-precision Adam: bf16 weights, fp32 gradient accumulation,
 * fp32 master weights plus two moments; ZeRO stages shard the optimizer
 * (1), gradients (2) and weights (3) over the data-parallel group.
 * Activations are per token per layer with flash attention (no s^2 term).
 * Depends on zs_model and zs_gpu. */
#ifndef ZS_MEMORY_H
#define ZS_MEMORY_H

#include "zs_gpu.h"
#include "zs_model.h"

typedef enum zs_recompute {
    ZS_RECOMPUTE_NONE = 0, /* keep every activation */
    ZS_RECOMPUTE_FULL = 1  /* keep only each layer's input, recompute the rest */
} zs_recompute;

typedef struct zs_mem_cfg {
    int tp, pp, dp; /* parallel degrees sharing the model's state */
    int zero_stage; /* 0..3 */
    zs_recompute recompute;
    double reserve_gib; /* kept free for workspace, fragmentation, NCCL buffers */
} zs_mem_cfg;

/* tp=pp=dp=1, ZeRO-1, no recomputation, 4 GiB reserve. */
zs_mem_cfg zs_mem_cfg_default(void);

typedef struct zs_mem_breakdown {
    double weights, grads, optimizer; /* bytes per GPU */
    double act_per_token;             /* bytes per token held, all layers of the stage */
    double static_bytes;              /* weights + grads + optimizer */
    double capacity;                  /* usable device bytes (memory - reserve) */
    long max_tokens;                  /* tokens per GPU that fit (0 when nothing fits) */
} zs_mem_breakdown;

/* Bytes of activations one token keeps in one layer (tp-sharded). */
double zs_mem_act_per_token_layer(const zs_model *m, int tp, zs_recompute rc);

int zs_mem_breakdown_compute(const zs_model *m, const zs_gpu *g, const zs_mem_cfg *cfg,
                             zs_mem_breakdown *out, zs_err *e);

/* Tokens per GPU that fit under cfg (*cap >= 1), or ZS_EINPUT naming the
 * model when its weights and optimizer state alone do not fit one GPU;
 * `fix` is what the caller's method can change to make them fit. Every
 * planner sizes its buffers with it. */
int zs_mem_token_capacity(const zs_model *m, const zs_gpu *g, const zs_mem_cfg *cfg,
                          const char *fix, long *cap, zs_err *e);

#endif
