/* Model descriptions: see zs_model.h. */
#include "zs_model.h"

#include <stddef.h>
#include <string.h>

#include "zs_presets.h"

#define F(key, type, member, min, max, req, def, unit, help)                                       \
    {                                                                                              \
        key, type, offsetof(zs_model, member), sizeof(((zs_model *)0)->member), min, max, req,     \
            def, unit, help                                                                        \
    }

const zs_field zs_model_fields[] = {
    F("name", ZS_F_STRING, name, 0, 0, 1, 0, "", "model name"),
    F("source", ZS_F_STRING, source, 0, 0, 0, 0, "", "where the numbers come from"),
    F("layers", ZS_F_INT, layers, 1, 1024, 1, 0, "", "number of transformer layers"),
    F("hidden", ZS_F_INT, hidden, 64, 131072, 1, 0, "", "hidden size h"),
    F("heads", ZS_F_INT, heads, 1, 1024, 1, 0, "", "query heads"),
    F("kv_heads", ZS_F_INT, kv_heads, 1, 1024, 1, 0, "", "key/value heads (GQA)"),
    F("head_dim", ZS_F_INT, head_dim, 8, 1024, 1, 0, "", "head dimension d"),
    F("ffn", ZS_F_INT, ffn, 1, 1048576, 1, 0, "", "MLP inner size f"),
    F("vocab", ZS_F_INT, vocab, 1, 4194304, 1, 0, "", "vocabulary size"),
    F("experts", ZS_F_INT, experts, 0, 4096, 0, 0, "", "MoE experts per layer (0: dense)"),
    F("top_k", ZS_F_INT, top_k, 0, 64, 0, 0, "", "experts per token (MoE)"),
    F("expert_ffn", ZS_F_INT, expert_ffn, 0, 1048576, 0, 0, "", "inner size of one expert"),
    F("dtype_bytes", ZS_F_INT, dtype_bytes, 1, 8, 0, 2, "bytes", "bytes per element (bf16: 2)"),
    F("tied_embeddings", ZS_F_BOOL, tied_embeddings, 0, 1, 0, 0, "",
      "output head shares the embedding"),
    F("mlp", ZS_F_STRING, mlp, 0, 0, 0, 0, "",
      "MLP activation: swiglu (default), gelu, relu2 (squared ReLU)"),
    F("norm", ZS_F_STRING, norm, 0, 0, 0, 0, "", "normalisation: rmsnorm (default), layernorm"),
    F("position", ZS_F_STRING, position, 0, 0, 0, 0, "",
      "position encoding: rope (default), learned (absolute embedding)"),
    F("dropout", ZS_F_DOUBLE, dropout, 0, 0.99, 0, 0, "", "hidden dropout probability"),
};
#undef F
const size_t zs_model_nfields = sizeof zs_model_fields / sizeof zs_model_fields[0];

static const char *const mlp_names[] = {"swiglu", "gelu", "relu2"};

const char *zs_mlp_kind_name(zs_mlp_kind k)
{
    return k >= ZS_MLP_SWIGLU && k <= ZS_MLP_RELU2 ? mlp_names[k] : "?";
}

zs_mlp_kind zs_model_mlp(const zs_model *m)
{
    for (int k = 1; k <= ZS_MLP_RELU2; k++)
        if (strcmp(m->mlp, mlp_names[k]) == 0)
            return (zs_mlp_kind)k;
    return ZS_MLP_SWIGLU;
}

int zs_model_layernorm(const zs_model *m)
{
    return strcmp(m->norm, "layernorm") == 0;
}

int zs_model_learned_pos(const zs_model *m)
{
    return strcmp(m->position, "learned") == 0;
}

/* The string fields name one of their choices (or are empty: the default). */
static int check_choices(const zs_model *m, const char *where, zs_err *e)
{
    if (m->mlp[0] && strcmp(m->mlp, "swiglu") && strcmp(m->mlp, "gelu") && strcmp(m->mlp, "relu2"))
        return zs_err_set(e, ZS_EINPUT, where, "use mlp swiglu, gelu or relu2",
                          "model '%s': unknown mlp '%s'", m->name, m->mlp);
    if (m->norm[0] && strcmp(m->norm, "rmsnorm") && strcmp(m->norm, "layernorm"))
        return zs_err_set(e, ZS_EINPUT, where, "use norm rmsnorm or layernorm",
                          "model '%s': unknown norm '%s'", m->name, m->norm);
    if (m->position[0] && strcmp(m->position, "rope") && strcmp(m->position, "learned"))
        return zs_err_set(e, ZS_EINPUT, where, "use position rope or learned",
                          "model '%s': unknown position '%s'", m->name, m->position);
    return ZS_OK;
}

int zs_model_check(const zs_model *m, const char *where, zs_err *e)
{
    int rc = check_choices(m, where, e);
    if (rc)
        return rc;
    if (m->heads % m->kv_heads != 0)
        return zs_err_set(e, ZS_EINPUT, where, "kv_heads must divide heads (GQA groups)",
                          "model '%s': heads=%d is not a multiple of kv_heads=%d", m->name,
                          m->heads, m->kv_heads);
    if (m->experts > 0 && (m->top_k < 1 || m->top_k > m->experts || m->expert_ffn < 1))
        return zs_err_set(e, ZS_EINPUT, where,
                          "a MoE model needs 1 <= top_k <= experts and expert_ffn > 0",
                          "model '%s': inconsistent MoE fields (experts=%d top_k=%d expert_ffn=%d)",
                          m->name, m->experts, m->top_k, m->expert_ffn);
    if (m->experts == 0 && (m->top_k != 0 || m->expert_ffn != 0))
        return zs_err_set(e, ZS_EINPUT, where, "set experts > 0, or remove top_k and expert_ffn",
                          "model '%s': top_k/expert_ffn given for a dense model", m->name);
    return ZS_OK;
}

int zs_model_from_json(const zs_json_doc *doc, const json_t *obj, const char *parent_key,
                       zs_model *out, zs_err *e)
{
    zs_model m;
    int rc = zs_config_parse(doc, obj, parent_key, zs_model_fields, zs_model_nfields, NULL, &m, e);
    if (rc)
        return rc;
    if ((rc = zs_model_check(&m, doc->source, e)))
        return rc;
    *out = m;
    return ZS_OK;
}

int zs_model_load(const char *name_or_file, zs_model *out, zs_err *e)
{
    zs_json_doc *doc = NULL;
    int rc = zs_preset_open("model", name_or_file, &doc, e);
    if (rc == ZS_OK)
        rc = zs_model_from_json(doc, doc->root, NULL, out, e);
    zs_json_doc_free(doc);
    return rc;
}

double zs_model_params_per_layer(const zs_model *m)
{
    double h = m->hidden, ad = (double)m->heads * m->head_dim,
           kvd = (double)m->kv_heads * m->head_dim;
    double attn = h * (ad + 2 * kvd) + ad * h;
    double mats = zs_model_mlp(m) == ZS_MLP_SWIGLU ? 3.0 : 2.0; /* gate, up, down */
    double mlp = zs_model_is_moe(m) ? m->experts * 3.0 * h * m->expert_ffn + h * m->experts
                                    : mats * h * m->ffn;
    /* two norms: RMSNorm has a weight vector, LayerNorm a weight and a bias */
    return attn + mlp + (zs_model_layernorm(m) ? 4 : 2) * h;
}

double zs_model_params(const zs_model *m)
{
    double emb = (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
    return m->layers * zs_model_params_per_layer(m) + emb + m->hidden;
}

double zs_model_linear_flops_per_token(const zs_model *m)
{
    double h = m->hidden, ad = (double)m->heads * m->head_dim,
           kvd = (double)m->kv_heads * m->head_dim;
    double qkv = 2 * h * (ad + 2 * kvd), o = 2 * ad * h;
    double mats = zs_model_mlp(m) == ZS_MLP_SWIGLU ? 3.0 : 2.0;
    double mlp = zs_model_is_moe(m) ? m->top_k * 2 * 3.0 * h * m->expert_ffn + 2 * h * m->experts
                                    : 2 * mats * h * m->ffn;
    return qkv + o + mlp;
}

double zs_model_attn_flops_causal(const zs_model *m, int64_t s)
{
    return 4.0 * m->heads * m->head_dim * ((double)s * (double)(s + 1) / 2.0);
}

double zs_model_kv_bytes(const zs_model *m, int64_t tokens)
{
    return (double)tokens * 2.0 * m->kv_heads * m->head_dim * m->dtype_bytes;
}

void zs_model_print(FILE *f, const zs_model *m)
{
    zs_config_print(f, zs_model_fields, zs_model_nfields, m, 2);
}
