/* Transformer model descriptions (LLaMA-style, dense or MoE; GPT-style
 * GELU and Nemotron-style squared-ReLU MLPs) and the figures derived from
 * their shapes: parameter counts and FLOPs per token. Loaded from a
 * built-in preset name or a JSON file. Depends on zs_config. */
#ifndef ZS_MODEL_H
#define ZS_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "zs_config.h"
#include "zs_err.h"

typedef struct zs_model {
    char name[64];
    char source[256]; /* where the numbers come from (optional, free text) */
    int layers;
    int hidden;   /* h */
    int heads;    /* query heads a */
    int kv_heads; /* a_kv (GQA when < heads) */
    int head_dim; /* d */
    int ffn;      /* MLP inner size f (dense layers) */
    int vocab;
    int experts;    /* 0 for a dense model */
    int top_k;      /* experts per token (MoE) */
    int expert_ffn; /* inner size of one expert (MoE) */
    int dtype_bytes;
    int tied_embeddings;
    char mlp[16];      /* "swiglu" (default when empty), "gelu", "relu2" (squared ReLU) */
    char norm[16];     /* "rmsnorm" (default when empty), "layernorm" */
    char position[16]; /* "rope" (default when empty), "learned" (absolute embedding) */
    double dropout;    /* hidden dropout probability (0: none, the default) */
} zs_model;

/* The MLP's activation: a gated SwiGLU has two input matrices (gate, up),
 * GELU and squared ReLU one. */
typedef enum zs_mlp_kind { ZS_MLP_SWIGLU = 0, ZS_MLP_GELU, ZS_MLP_RELU2 } zs_mlp_kind;
zs_mlp_kind zs_model_mlp(const zs_model *m);
const char *zs_mlp_kind_name(zs_mlp_kind k);
/* 1 for LayerNorm, 0 for RMSNorm (the default). */
int zs_model_layernorm(const zs_model *m);
/* 1 for a learned absolute position embedding, 0 for RoPE (the default). */
int zs_model_learned_pos(const zs_model *m);

extern const zs_field zs_model_fields[];
extern const size_t zs_model_nfields;

/* Loads a preset (by name) or a JSON file (a path, or a name ending .json). */
int zs_model_load(const char *name_or_file, zs_model *out, zs_err *e);
/* Parses a model object out of a document (used for inline descriptions). */
int zs_model_from_json(const zs_json_doc *doc, const json_t *obj, const char *parent_key,
                       zs_model *out, zs_err *e);
/* Cross-field checks (head_dim * heads vs hidden is allowed to differ). */
int zs_model_check(const zs_model *m, const char *where, zs_err *e);

static inline int zs_model_is_moe(const zs_model *m)
{
    return m->experts > 0;
}

/* Parameters of one transformer layer (attention, MLP or experts, norms). */
double zs_model_params_per_layer(const zs_model *m);
/* All parameters: layers, embeddings (and output head unless tied), final norm. */
double zs_model_params(const zs_model *m);
/* Forward FLOPs per token per layer of the linear modules (QKV, O, MLP). */
double zs_model_linear_flops_per_token(const zs_model *m);
/* Forward attention FLOPs of one causal document of s tokens, one layer:
 * 4*a*d * s*(s+1)/2 (QK^T and PV over the lower triangle). */
double zs_model_attn_flops_causal(const zs_model *m, int64_t s);
/* Bytes of K and V for n tokens in one layer (what a ring step moves). */
double zs_model_kv_bytes(const zs_model *m, int64_t tokens);

void zs_model_print(FILE *f, const zs_model *m);

#endif
