/* Memory per GPU: see zs_memory.h. */
#include "zs_memory.h"

#include <string.h>

#include "zs_step.h"

zs_mem_cfg zs_mem_cfg_default(void)
{
    zs_mem_cfg c = {1, 1, 1, 1, ZS_RECOMPUTE_NONE, 4.0, ZS_GRAD_FP32, 0, 0, ZS_FSDP2};
    return c;
}

double zs_grad_bytes(zs_grad_dtype g)
{
    return g == ZS_GRAD_BF16 ? 2.0 : 4.0;
}

const char *zs_grad_dtype_name(zs_grad_dtype g)
{
    return g == ZS_GRAD_BF16 ? "bf16" : "fp32";
}

const char *zs_fsdp_name(zs_fsdp f)
{
    return f == ZS_FSDP1 ? "fsdp1" : f == ZS_FSDP_MEGATRON ? "megatron-fsdp" : "fsdp2";
}

int zs_grad_dtype_parse(const char *s, zs_grad_dtype *out, zs_err *e)
{
    if (s && !strcmp(s, "fp32"))
        *out = ZS_GRAD_FP32;
    else if (s && !strcmp(s, "bf16"))
        *out = ZS_GRAD_BF16;
    else
        return zs_err_set(e, ZS_EUSAGE, "--grad-dtype", "use fp32 or bf16",
                          "unknown gradient dtype '%s'", s ? s : "");
    return ZS_OK;
}

double zs_mem_act_per_token_layer(const zs_model *m, int tp, zs_recompute rc, int fp8)
{
    double b = m->dtype_bytes, h = m->hidden;
    if (rc == ZS_RECOMPUTE_FULL)
        return b * h / tp; /* the layer input, sharded by sequence parallelism */
    double ad = (double)m->heads * m->head_dim, kvd = (double)m->kv_heads * m->head_dim;
    double f = zs_model_is_moe(m) ? (double)m->top_k * m->expert_ffn : m->ffn;
    /* Saved for backward: two norm inputs, the residual, QKV input, Q/K/V,
     * attention output and O-proj input, MLP input, the MLP's inner
     * activations (SwiGLU: gate and up outputs and their product; GELU and
     * squared ReLU: the up output and the activation's, one fewer); the
     * log-sum-exp per head is negligible. With tensor + sequence
     * parallelism every term is sharded by tp. */
    double inner = zs_model_is_moe(m) || zs_model_mlp(m) == ZS_MLP_SWIGLU ? 3 : 2;
    double per = b * (5 * h + (ad + 2 * kvd) + 2 * ad + inner * f);
    /* TransformerEngine's Linear, LayerNormLinear and LayerNormMLP save the
     * FP8 copy of the input their forward GEMM read (one byte a value) for
     * the weight gradient: the QKV and MLP inputs (the norms' outputs), the
     * O projection's input and the down projection's (the activation's
     * output). Q/K/V and the attention output are flash attention's, and
     * the up projection's output feeds the activation's backward: bf16. */
    if (fp8)
        per -= (b - 1) * (2 * h + ad + f);
    return per / tp;
}

int zs_mem_breakdown_compute(const zs_model *m, const zs_gpu *g, const zs_mem_cfg *cfg,
                             zs_mem_breakdown *out, zs_err *e)
{
    if (cfg->tp < 1 || cfg->pp < 1 || cfg->dp < 1 || cfg->zero_stage < 0 || cfg->zero_stage > 3)
        return zs_err_set(e, ZS_EINPUT, "memory config",
                          "use tp, pp, dp >= 1 and a ZeRO stage of 0 to 3",
                          "bad memory configuration (tp=%d pp=%d dp=%d zero=%d)", cfg->tp, cfg->pp,
                          cfg->dp, cfg->zero_stage);
    double shards = (double)cfg->tp * cfg->pp;
    double params = zs_model_params(m) / shards;
    /* LoRA: every weight stored, only the adapters' take gradients and
     * Adam's state (fp32 master, two moments) */
    double trained = cfg->lora > 0 ? zs_step_trained_params(m, cfg->lora) / shards : params;
    double w = params * m->dtype_bytes, gr = trained * zs_grad_bytes(cfg->grad);
    double opt = trained * 12.0;
    if (cfg->zero_stage >= 1)
        opt /= cfg->dp;
    if (cfg->zero_stage >= 2)
        gr /= cfg->dp;
    if (cfg->zero_stage >= 3)
        w /= cfg->dp;
    zs_mem_breakdown b;
    b.weights = w;
    b.grads = gr;
    b.optimizer = opt;
    b.static_bytes = w + gr + opt;
    int layers = (m->layers + cfg->pp - 1) / cfg->pp;
    double act = zs_mem_act_per_token_layer(m, cfg->tp, cfg->recompute, cfg->fp8);
    /* LoRA's adapter keeps its GEMMs' inputs for their weight gradients:
     * lora-out's, lora-in's output gathered over TP (rank values a token),
     * and under TP lora-in's, the norm's output gathered by the adapter
     * itself (hidden values a token on every TP rank; with tp 1 it is the
     * tensor the QKV GEMM keeps). The frozen layers' inputs are counted as
     * full training keeps them (an upper bound). */
    if (cfg->lora > 0 && cfg->recompute != ZS_RECOMPUTE_FULL)
        act += ((double)cfg->lora + (cfg->tp > 1 ? m->hidden : 0)) * m->dtype_bytes;
    b.act_per_token = layers * act;
    b.capacity = (g->mem_gib - cfg->reserve_gib) * 1073741824.0;
    double free_bytes = b.capacity - b.static_bytes;
    b.max_tokens = free_bytes > 0 ? (long)(free_bytes / b.act_per_token) : 0;
    *out = b;
    return ZS_OK;
}

int zs_mem_token_capacity(const zs_model *m, const zs_gpu *g, const zs_mem_cfg *cfg,
                          const char *fix, long *cap, zs_err *e)
{
    zs_mem_breakdown mb = {0};
    int rc = zs_mem_breakdown_compute(m, g, cfg, &mb, e);
    if (rc)
        return rc;
    if (mb.max_tokens < 1)
        return zs_err_set(e, ZS_EINPUT, m->name, fix,
                          "the model's weights and optimizer state alone do not fit one GPU");
    *cap = mb.max_tokens;
    return ZS_OK;
}
