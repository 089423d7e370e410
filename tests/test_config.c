/* Config parsing and derived figures: every preset loads, malformed
 * descriptions are rejected with file:line:col or the key, and the derived
 * figures match hand computations. */
#include <stdlib.h>

#include "zs_cluster.h"
#include "zs_memory.h"
#include "zs_model.h"
#include "zs_presets.h"
#include "zs_test.h"

static void test_every_preset_loads(void)
{
    static const char *kinds[] = {"model", "gpu", "cluster"};
    char name[128];
    zs_err e;
    int n = 0;
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; zs_preset_name(kinds[k], i, name, sizeof name); i++, n++) {
            int rc;
            if (k == 0) {
                zs_model m;
                rc = zs_model_load(name, &m, &e);
            } else if (k == 1) {
                zs_gpu g;
                rc = zs_gpu_load(name, &g, &e);
            } else {
                zs_cluster c;
                rc = zs_cluster_load(name, 0, &c, &e);
            }
            ZS_ASSERT_OK(rc, &e);
        }
    }
    /* 8 models, 4 GPUs, 4 clusters ship today; fewer means one went missing. */
    CU_ASSERT(n >= 16);
}

static void test_llama7b_params(void)
{
    zs_model m;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_REL(zs_model_params(&m), 6.74e9, 0.01);
}

static void test_llama7b_flops_per_token(void)
{
    zs_model m;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    /* QKV 2*4096*(4096+2*4096) + O 2*4096*4096 + MLP 2*3*4096*11008 */
    double expect = 100663296.0 + 33554432.0 + 270532608.0;
    ZS_ASSERT_NEAR(zs_model_linear_flops_per_token(&m), expect, 0.5);
    /* Causal attention, 4K document: 4*32*128 * 4096*4097/2 */
    ZS_ASSERT_NEAR(zs_model_attn_flops_causal(&m, 4096), 16384.0 * 4096.0 * 4097.0 / 2.0, 1.0);
    /* K and V of one token: 2 * 32 heads * 128 * 2 bytes */
    ZS_ASSERT_NEAR(zs_model_kv_bytes(&m, 1), 16384.0, 0);
}

static void test_gqa_and_moe(void)
{
    zs_model m;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama3-8b", &m, &e), &e);
    ZS_ASSERT_REL(zs_model_params(&m), 8.03e9, 0.01);
    ZS_ASSERT_OK(zs_model_load("moe-8x550m", &m, &e), &e);
    CU_ASSERT(zs_model_is_moe(&m));
    /* top-2 of 8 experts: MLP FLOPs twice the dense base's, plus the router. */
    zs_model dense;
    ZS_ASSERT_OK(zs_model_load("llama-550m", &dense, &e), &e);
    double h = m.hidden;
    double attn = zs_model_linear_flops_per_token(&dense) - 6.0 * h * dense.ffn;
    ZS_ASSERT_NEAR(zs_model_linear_flops_per_token(&m),
                   attn + 2 * 6.0 * h * m.expert_ffn + 2 * h * m.experts, 1.0);
}

static void test_cluster_a_nic_map(void)
{
    zs_cluster c;
    zs_err e;
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 2, &c, &e), &e);
    ZS_ASSERT_INT_EQ(zs_cluster_gpus(&c), 16);
    ZS_ASSERT_INT_EQ(c.nodes * c.nics_per_node, 8);
    ZS_ASSERT_INT_EQ(zs_cluster_gpus_per_nic(&c), 2);
    ZS_ASSERT_INT_EQ(zs_cluster_nic_of(&c, 0), 0);
    ZS_ASSERT_INT_EQ(zs_cluster_nic_of(&c, 1), 0);
    ZS_ASSERT_INT_EQ(zs_cluster_nic_of(&c, 7), 3);
    ZS_ASSERT_INT_EQ(zs_cluster_nic_of(&c, 9), 0);
    ZS_ASSERT_INT_EQ(zs_cluster_node_of(&c, 9), 1);
    /* 200 Gb/s NIC = 25 GB/s bottleneck between nodes. */
    double lat, bw;
    zs_cluster_path(&c, 0, 8, &lat, &bw);
    ZS_ASSERT_REL(bw, 25e9, 1e-9);
    /* The paper's sanity check: a 52 MB KV shard over one 200 Gb/s NIC ~ 2.1 ms. */
    double bytes = 4096.0 * 2 * 3200 * 2;
    ZS_ASSERT_REL(lat + bytes / bw, 2.1e-3, 0.05);
}

static void test_memory_model(void)
{
    zs_model m;
    zs_gpu g;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_gpu_load("a800-80g", &g, &e), &e);
    zs_mem_cfg cfg = zs_mem_cfg_default();
    cfg.dp = 128;
    cfg.zero_stage = 1;
    zs_mem_breakdown b;
    ZS_ASSERT_OK(zs_mem_breakdown_compute(&m, &g, &cfg, &b, &e), &e);
    double p = zs_model_params(&m);
    ZS_ASSERT_REL(b.weights, 2 * p, 1e-12);
    ZS_ASSERT_REL(b.grads, 4 * p, 1e-12);
    ZS_ASSERT_REL(b.optimizer, 12 * p / 128, 1e-12);
    CU_ASSERT(b.max_tokens > 4096);
    /* Full recomputation keeps only the layer input: many more tokens fit. */
    cfg.recompute = ZS_RECOMPUTE_FULL;
    zs_mem_breakdown b2;
    ZS_ASSERT_OK(zs_mem_breakdown_compute(&m, &g, &cfg, &b2, &e), &e);
    CU_ASSERT(b2.max_tokens > 5 * b.max_tokens);
    /* With full recomputation only the layer input stays, sharded by
     * sequence parallelism: h x 2 bytes / tp per token per layer. */
    cfg.tp = 4;
    ZS_ASSERT_OK(zs_mem_breakdown_compute(&m, &g, &cfg, &b2, &e), &e);
    ZS_ASSERT_REL(b2.act_per_token, 32.0 * 4096 * 2 / 4, 1e-12);
    cfg.tp = 1;
    /* ZeRO-3 over 128 ranks shards everything. */
    cfg.zero_stage = 3;
    ZS_ASSERT_OK(zs_mem_breakdown_compute(&m, &g, &cfg, &b2, &e), &e);
    ZS_ASSERT_REL(b2.static_bytes, 18 * p / 128, 1e-12);
    /* Without recomputation, per token and layer: 5h + QKV + 2 x attention
     * width + the MLP's inner activations, 2 bytes each. LLaMA-7B (SwiGLU,
     * h 4096, 32 heads of 128, ffn 11008): 3 x ffn; a GELU model (FFN 4h):
     * 2 x ffn. */
    ZS_ASSERT_REL(zs_mem_act_per_token_layer(&m, 1, ZS_RECOMPUTE_NONE, 0),
                  2.0 * (5 * 4096 + 3 * 4096 + 2 * 4096 + 3 * 11008), 1e-12);
    /* FP8 (TransformerEngine): the QKV, MLP, O-proj and down-proj inputs
     * are kept as their FP8 copies, one byte each: 2h + 4096 + ffn bytes
     * fewer. */
    ZS_ASSERT_REL(zs_mem_act_per_token_layer(&m, 1, ZS_RECOMPUTE_NONE, 1),
                  2.0 * (5 * 4096 + 3 * 4096 + 2 * 4096 + 3 * 11008) - (3 * 4096 + 11008.0), 1e-12);
    /* Full recomputation keeps the bf16 layer input either way. */
    ZS_ASSERT_REL(zs_mem_act_per_token_layer(&m, 4, ZS_RECOMPUTE_FULL, 1), 2.0 * 4096 / 4, 1e-12);
    /* A bf16 gradient buffer: 2 bytes a parameter, more tokens fit. */
    cfg = zs_mem_cfg_default();
    cfg.dp = 128;
    cfg.grad = ZS_GRAD_BF16;
    ZS_ASSERT_OK(zs_mem_breakdown_compute(&m, &g, &cfg, &b2, &e), &e);
    ZS_ASSERT_REL(b2.grads, 2 * p, 1e-12);
    ZS_ASSERT_REL(b2.static_bytes, b.static_bytes - 2 * p, 1e-12);
    CU_ASSERT(b2.max_tokens > b.max_tokens);
    zs_grad_dtype gd;
    ZS_ASSERT_OK(zs_grad_dtype_parse("bf16", &gd, &e), &e);
    CU_ASSERT_EQUAL(gd, ZS_GRAD_BF16);
    CU_ASSERT_EQUAL(zs_grad_dtype_parse("fp16", &gd, &e), ZS_EUSAGE);
    zs_model gelu;
    ZS_ASSERT_OK(zs_model_load("gpt3-20b", &gelu, &e), &e);
    double h = gelu.hidden, ad = (double)gelu.heads * gelu.head_dim;
    double kvd = (double)gelu.kv_heads * gelu.head_dim;
    ZS_ASSERT_REL(zs_mem_act_per_token_layer(&gelu, 2, ZS_RECOMPUTE_NONE, 0),
                  2.0 * (5 * h + ad + 2 * kvd + 2 * ad + 2.0 * gelu.ffn) / 2, 1e-12);
}

/* Each malformed text must fail with ZS_EINPUT and a location: either
 * line:col (syntax and located keys) or the key's name. */
static const struct {
    const char *kind, *text, *expect;
} bad[] = {
    {"model", "", ":1:"},
    {"model", "{", ":1:"},
    {"model", "{\"name\": \"x\",\n \"layers\": 32,,}", ":2:"},
    {"model", "[1, 2]", "expected a JSON object"},
    {"model", "{\"name\": \"x\"}", "missing key 'layers'"},
    {"model",
     "{\"name\": \"x\", \"layers\": 32, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 32,\n"
     " \"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000, \"layrs\": 3}",
     ":2:"},
    {"model",
     "{\"name\": \"x\", \"layers\": \"32\", \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 32, "
     "\"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000}",
     "key 'layers'"},
    {"model",
     "{\"name\": \"x\", \"layers\": 32.5, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 32, "
     "\"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000}",
     "must be an integer"},
    {"model",
     "{\"name\": \"x\", \"layers\": 0, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 32, "
     "\"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000}",
     "out of range"},
    {"model",
     "{\"name\": \"x\", \"layers\": 32, \"hidden\": -1, \"heads\": 32, \"kv_heads\": 32, "
     "\"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000}",
     "key 'hidden'"},
    {"model",
     "{\"name\": \"x\", \"layers\": 32, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 5, "
     "\"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000}",
     "kv_heads"},
    {"model",
     "{\"name\": \"x\", \"layers\": 32, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 32, "
     "\"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000, \"experts\": 8}",
     "MoE"},
    {"model",
     "{\"name\": \"\", \"layers\": 32, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 32, "
     "\"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000}",
     "key 'name'"},
    {"model",
     "{\"name\": 7, \"layers\": 32, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 32, "
     "\"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000}",
     "must be a string"},
    {"model",
     "{\"name\": \"x\", \"name\": \"y\", \"layers\": 32, \"hidden\": 4096, \"heads\": 32, "
     "\"kv_heads\": 32, \"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000}",
     "duplicate"},
    {"model",
     "{\"name\": \"x\", \"layers\": 32, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 32, "
     "\"head_dim\": 128, \"ffn\": 11008, \"vocab\": 32000, \"tied_embeddings\": 1}",
     "must be a boolean"},
    {"gpu", "{\"name\": \"g\", \"peak_tflops\": 989, \"hbm_gbs\": 3350, \"mem_gib\": 80}",
     "missing key 'nvlink_gbs'"},
    {"gpu",
     "{\"name\": \"g\", \"peak_tflops\": 1e400, \"hbm_gbs\": 3350, \"mem_gib\": 80, "
     "\"nvlink_gbs\": 1}",
     ":1:"},
    {"gpu",
     "{\"name\": \"g\", \"peak_tflops\": -5, \"hbm_gbs\": 3350, \"mem_gib\": 80, "
     "\"nvlink_gbs\": 1}",
     "peak_tflops"},
    {"cluster",
     "{\"name\": \"c\", \"gpu\": \"h100-sxm\", \"gpus_per_node\": 8, \"nics_per_node\": 3, "
     "\"nic_gbps\": 200, \"pcie_gbs\": 26}",
     "nics_per_node"},
    {"cluster",
     "{\"name\": \"c\", \"gpu\": \"no-such-gpu\", \"gpus_per_node\": 8, \"nics_per_node\": 4, "
     "\"nic_gbps\": 200, \"pcie_gbs\": 26}",
     "unknown gpu"},
    {"cluster",
     "{\"name\": \"c\",\n \"gpu\": {\"name\": \"g\", \"peak_tflops\": 1, \"hbm_gbs\": 1, "
     "\"mem_gib\": 1, \"nvlink_gbs\": 1, \"tflops\": 2},\n \"gpus_per_node\": 8, "
     "\"nics_per_node\": 4, \"nic_gbps\": 200, \"pcie_gbs\": 26}",
     "unknown key 'tflops'"},
    {"cluster",
     "{\"name\": \"c\", \"gpus_per_node\": 8, \"nics_per_node\": 4, \"nic_gbps\": 200, "
     "\"pcie_gbs\": 26}",
     "missing key 'gpu'"},
    {"cluster",
     "{\"name\": \"c\", \"gpu\": \"h100-sxm\", \"gpus_per_node\": 8, \"nics_per_node\": 4, "
     "\"nic_gbps\": 200, \"pcie_gbs\": 26, \"oversubscription\": 0.5}",
     "oversubscription"},
};

static void test_malformed(void)
{
    char name[64];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(name, sizeof name, "bad-%s-%02zu.json", bad[i].kind, i);
        const char *path = zs_test_write(name, bad[i].text);
        zs_err e;
        zs_err_clear(&e);
        int rc;
        if (strcmp(bad[i].kind, "model") == 0) {
            zs_model m;
            rc = zs_model_load(path, &m, &e);
        } else if (strcmp(bad[i].kind, "gpu") == 0) {
            zs_gpu g;
            rc = zs_gpu_load(path, &g, &e);
        } else {
            zs_cluster c;
            rc = zs_cluster_load(path, 0, &c, &e);
        }
        ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
        ZS_ASSERT_INT_EQ(zs_err_exit_code(rc), 2);
        char msg[2048];
        snprintf(msg, sizeof msg, "%s | %s | %s", e.what, e.where, e.fix);
        ZS_ASSERT_STR_CONTAINS(msg, bad[i].expect);
        ZS_ASSERT_STR_CONTAINS(msg, name);
    }
    CU_ASSERT(sizeof bad / sizeof bad[0] >= 20);
}

static void test_unknown_preset_lists_names(void)
{
    zs_model m;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_model_load("llama-8b", &m, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "llama-7b");
    ZS_ASSERT_INT_EQ(zs_model_load("/nonexistent/model.json", &m, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "/nonexistent/model.json");
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"every_preset_loads", test_every_preset_loads},
        {"llama7b_params", test_llama7b_params},
        {"llama7b_flops_per_token", test_llama7b_flops_per_token},
        {"gqa_and_moe", test_gqa_and_moe},
        {"cluster_a_nic_map", test_cluster_a_nic_map},
        {"memory_model", test_memory_model},
        {"malformed", test_malformed},
        {"unknown_preset_lists_names", test_unknown_preset_lists_names},
        {NULL, NULL}};
    static const zs_test_suite suites[] = {{"config", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
