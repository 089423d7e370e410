/* Transformer model descriptions (LLaMA-style, dense or MoE) and the
 * figures derived from their shapes: parameter counts and FLOPs per token.
 * Loaded from a built-in preset name or a JSON file. Depends on zs_config. */
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
    int ffn;      /* SwiGLU inner size f (dense layers) */
    int vocab;
    int experts;    /* 0 for a dense model */
    int top_k;      /* experts per token (MoE) */
    int expert_ffn; /* inner size of one expert (MoE) */
    int dtype_bytes;
    int tied_embeddings;
} zs_model;

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
