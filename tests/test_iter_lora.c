/* LoRA in the simulated schedules (zs_iter_spec.lora, plain-4d's
 * lora=R): the iteration builder writes the same ops as the step model's
 * lora_fwd / lora_bwd (models/zs_step.c). Hand-checked on llama-550m
 * (24 x 1024, 8 heads of 128, SwiGLU) at tp 2, dp 2, one micro-batch:
 * per layer the base GEMMs keep their input gradients but lose their
 * weight gradients, the adapter's four backward GEMMs appear, the DP
 * gradient reduce-scatter carries the adapters' bytes (rank 8 x (1024 +
 * 3 x 1024) = 32768 parameters a layer, / tp 2, x 2 bytes = 32768 bytes,
 * half of them a rank's)
 * and the optimizer their shard; with FP8 the frozen layers' casts drop
 * their transposes, the weights' keep them; the memory model keeps every
 * weight but gradients and Adam's state for the adapters only; plain-4d
 * reads lora=R (1F1B and interleaved, with full recomputation) and
 * refuses a rank tp does not divide. */
#include <string.h>

#include "zs_iteration.h"
#include "zs_memory.h"
#include "zs_step.h"
#include "zs_test.h"
#include "zs_test_env.h"

static zs_cost *cost_on(const char *cluster)
{
    zs_model m;
    zs_cluster c;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-550m", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load(cluster, 1, &c, &e), &e);
    return zs_cost_analytic_new(&m, &c);
}

static zs_cost *cost_new(void)
{
    return cost_on("cluster-a");
}

/* tp 2 x dp 2, one micro-batch of 256 linear tokens a slot, no
 * recomputation, ZeRO-1; moved: a moved token per slot (refused with
 * LoRA). */
static int build(zs_cost *cost, int lora, int moved, zs_schedule **out, zs_err *e)
{
    zs_schedule *s = zs_schedule_new(4);
    int32_t len[1] = {256};
    int64_t lin[2] = {256, 256}, mv[2] = {1, 1};
    zs_schedule_set_docs(s, len, 1);
    zs_iter_spec spec = {
        {2, 1, 1, 2},      1,    lin,     ZS_RECOMPUTE_NONE, 1, 1, zs_test_emit_local, NULL,
        moved ? mv : NULL, lora, ZS_FSDP2};
    int rc = zs_iter_build(s, cost, &spec, e);
    if (rc || !out)
        zs_schedule_free(s);
    else
        *out = s;
    return rc;
}

/* Rank 0's ops named `label` (the layer body is stored once: per layer),
 * and the first one's op in *first. */
static int count(const zs_schedule *s, const char *label, const zs_op **first)
{
    const zs_rank_prog *p = &s->ranks[0];
    int n = 0;
    for (int64_t i = 0; i < p->nops; i++)
        if (!strcmp(s->labels[p->ops[i].label], label)) {
            if (!n && first)
                *first = &p->ops[i];
            n++;
        }
    return n;
}

/* Rank 0's GEMMs whose label ends in sfx ("" : all). */
static int gemms(const zs_schedule *s, const char *sfx)
{
    const zs_rank_prog *p = &s->ranks[0];
    size_t k = strlen(sfx);
    int n = 0;
    for (int64_t i = 0; i < p->nops; i++) {
        const zs_op *op = &p->ops[i];
        const char *l = s->labels[op->label];
        size_t ln = strlen(l);
        if (op->kind == ZS_OP_COMPUTE && op->u.compute.ck == ZS_CK_GEMM && ln >= k &&
            !strcmp(l + ln - k, sfx))
            n++;
    }
    return n;
}

static void test_ops(void)
{
    zs_cost *cost = cost_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    zs_schedule *base = NULL, *lora = NULL;
    zs_err e;
    ZS_ASSERT_OK(build(cost, 0, 0, &base, &e), &e);
    ZS_ASSERT_OK(build(cost, 8, 0, &lora, &e), &e);
    /* Every weight trained: QKV, O, gate-up, down and the LM head, each an
     * input- and a weight-gradient GEMM; no adapter. */
    ZS_ASSERT_INT_EQ(gemms(base, "-wgrad"), 5);
    ZS_ASSERT_INT_EQ(gemms(base, "-dgrad"), 5);
    ZS_ASSERT_INT_EQ(gemms(base, ""), 15);
    ZS_ASSERT_INT_EQ(count(base, "lora-in", NULL), 0);
    ZS_ASSERT_INT_EQ(count(base, "embedding-bwd", NULL), 1);
    /* LoRA: the same five input gradients, the adapter's two weight
     * gradients only, its forward GEMMs after QKV and its two input
     * gradients: 15 - 5 + 2 + 4 = 16 GEMMs; no embedding gradient. */
    ZS_ASSERT_INT_EQ(gemms(lora, "-wgrad"), 2);
    ZS_ASSERT_INT_EQ(gemms(lora, "-dgrad"), 7);
    ZS_ASSERT_INT_EQ(gemms(lora, ""), 16);
    ZS_ASSERT_INT_EQ(count(lora, "embedding-bwd", NULL), 0);
    ZS_ASSERT_INT_EQ(count(lora, "tp-ag-dembedding", NULL), 0);
    const zs_op *in = NULL, *out = NULL;
    ZS_ASSERT_INT_EQ(count(lora, "lora-in", &in), 1);
    ZS_ASSERT_INT_EQ(count(lora, "lora-out", &out), 1);
    /* lora-in: 256 tokens x rank / tp = 4 columns x hidden 1024;
     * lora-out: rank 8 to this GPU's QKV columns, 3 x 1024 / 2 */
    ZS_ASSERT_NEAR(in->u.compute.m, 256, 0);
    ZS_ASSERT_NEAR(in->u.compute.n, 4, 0);
    ZS_ASSERT_NEAR(in->u.compute.k, 1024, 0);
    ZS_ASSERT_NEAR(out->u.compute.n, 1536, 0);
    ZS_ASSERT_NEAR(out->u.compute.k, 8, 0);
    /* its TP collectives: the input's and lora-in's gathers forward, the
     * input gradients' all-reduces and reduce-scatter backward */
    const char *tp_ops[] = {"tp-ag-lora-input", "tp-ag-lora-in", "tp-ar-dlora-out",
                            "tp-ar-dlora-in", "tp-rs-dlora-input"};
    for (size_t i = 0; i < sizeof tp_ops / sizeof tp_ops[0]; i++)
        ZS_ASSERT_INT_EQ(count(lora, tp_ops[i], NULL), 1);
    zs_schedule_free(base);
    zs_schedule_free(lora);
    zs_cost_free(cost);
}

/* The DP gradient all-reduce and the optimizer over the adapters. */
static void test_dp_bytes(void)
{
    zs_cost *cost = cost_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    const zs_model *m = &cost->model;
    zs_schedule *base = NULL, *lora = NULL;
    zs_err e;
    ZS_ASSERT_OK(build(cost, 0, 0, &base, &e), &e);
    ZS_ASSERT_OK(build(cost, 8, 0, &lora, &e), &e);
    const zs_op *ar = NULL, *opt = NULL, *ag = NULL;
    /* ZeRO-1 reduce-scatters: each rank's half of the layer's gradients */
    ZS_ASSERT_INT_EQ(count(base, "grad-reduce-scatter", &ar), 1);
    ZS_ASSERT_NEAR(ar->u.coll.bytes, zs_model_params_per_layer(m) / 2 * m->dtype_bytes / 2, 0);
    ZS_ASSERT_INT_EQ(count(base, "grad-reduce-scatter-root", NULL), 2); /* embedding, LM head */
    ZS_ASSERT_INT_EQ(count(lora, "grad-reduce-scatter", &ar), 1);
    ZS_ASSERT_NEAR(zs_step_lora_params_per_layer(m, 8), 32768, 0);
    ZS_ASSERT_NEAR(ar->u.coll.bytes, 32768 / 2, 0);
    ZS_ASSERT_INT_EQ(count(lora, "grad-reduce-scatter-root", NULL), 0);
    /* Adam (32 bytes a parameter) on the DP shard: 24 layers x 32768 / tp
     * 2 / dp 2; the ZeRO-1 gather returns that shard in bf16 */
    ZS_ASSERT_INT_EQ(count(lora, "optimizer", &opt), 1);
    ZS_ASSERT_NEAR(opt->u.compute.bytes, 24 * 32768 / 4 * 32.0, 0);
    ZS_ASSERT_INT_EQ(count(lora, "zero-param-all-gather", &ag), 1);
    ZS_ASSERT_NEAR(ag->u.coll.bytes, 24 * 32768 / 4 * 2.0, 0);
    zs_schedule_free(base);
    zs_schedule_free(lora);
    zs_cost_free(cost);
}

/* FP8 (H100): with frozen weights the activations and output gradients
 * are cast without a transpose (read bf16, write FP8 once: 3 bytes a
 * value), the weights still with it, as in the step model. */
static void test_fp8_casts(void)
{
    zs_cost *cost = cost_on("dgx-h100");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    zs_err e;
    ZS_ASSERT_OK(zs_cost_set_fp8(cost, 1, &e), &e);
    zs_schedule *base = NULL, *lora = NULL;
    ZS_ASSERT_OK(build(cost, 0, 0, &base, &e), &e);
    ZS_ASSERT_OK(build(cost, 8, 0, &lora, &e), &e);
    double g = 256 * 1536.0, w = 1024 * 1536.0; /* QKV's output gradient, its weight */
    const zs_op *op = NULL;
    ZS_ASSERT_INT_EQ(count(base, "cast-dqkv", &op), 1);
    ZS_ASSERT_NEAR(op->u.compute.bytes, zs_fp8_cast_bytes(g, 2), 0);
    ZS_ASSERT_INT_EQ(count(lora, "cast-dqkv", &op), 1);
    ZS_ASSERT_NEAR(op->u.compute.bytes, 3 * g, 0);
    ZS_ASSERT_INT_EQ(count(lora, "cast-w-qkv", &op), 1);
    ZS_ASSERT_NEAR(op->u.compute.bytes, zs_fp8_cast_bytes(w, 2), 0);
    /* the adapter stays in bf16 */
    ZS_ASSERT_INT_EQ(count(lora, "cast-lora-in", NULL), 0);
    zs_schedule_free(base);
    zs_schedule_free(lora);
    zs_cost_free(cost);
}

/* A rank tp does not divide, a negative one or one above the hidden size
 * is bad input; LoRA with moved tokens is refused. */
static void test_bad_rank(void)
{
    zs_cost *cost = cost_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    zs_err e;
    ZS_ASSERT_INT_EQ(build(cost, 3, 0, NULL, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "LoRA rank 3 with hidden 1024 and tp=2");
    ZS_ASSERT_INT_EQ(build(cost, -2, 0, NULL, &e), ZS_EINPUT);
    ZS_ASSERT_INT_EQ(build(cost, 2048, 0, NULL, &e), ZS_EINPUT);
    ZS_ASSERT_INT_EQ(build(cost, 8, 1, NULL, &e), ZS_EINVALID);
    ZS_ASSERT_STR_CONTAINS(e.what, "LoRA and moved tokens");
    zs_cost_free(cost);
}

/* Weights stay, gradients and Adam's 12 bytes a parameter shrink to the
 * adapters', and the adapter keeps rank + hidden values a token a layer
 * under TP (on a model this small more than the state saves: fewer
 * tokens fit, so the check is on the bytes). */
static void test_memory(void)
{
    zs_model m;
    zs_gpu g;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-550m", &m, &e), &e);
    ZS_ASSERT_OK(zs_gpu_load("a800-80g", &g, &e), &e);
    zs_mem_cfg c = zs_mem_cfg_default();
    c.tp = 2;
    c.dp = 2;
    zs_mem_breakdown full, lora;
    ZS_ASSERT_OK(zs_mem_breakdown_compute(&m, &g, &c, &full, &e), &e);
    c.lora = 8;
    ZS_ASSERT_OK(zs_mem_breakdown_compute(&m, &g, &c, &lora, &e), &e);
    double trained = 24 * 32768 / 2.0;
    ZS_ASSERT_NEAR(lora.weights, full.weights, 0);
    ZS_ASSERT_NEAR(lora.grads, trained * 4, 0);
    ZS_ASSERT_NEAR(lora.optimizer, trained * 12 / 2, 0);
    ZS_ASSERT_NEAR(lora.act_per_token - full.act_per_token, 24 * (8 + 1024) * 2.0, 1e-6);
    ZS_ASSERT_NEAR(full.static_bytes - lora.static_bytes,
                   (full.grads - lora.grads) + (full.optimizer - lora.optimizer), 1e-3);
}

/* plain-4d's lora=R: planned and validated, noted; a rank tp does not
 * divide is a usage error (exit 2). */
static void test_plain4d(void)
{
    const zs_planner_ops *p = zs_planner_find("plain-4d");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    zs_batch *b = zs_batch_from_lengths((int32_t[]){3000, 1096, 4096}, 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, "tp=2,cp=2,pp=2,window=4096,micro=2,lora=8");
    zs_schedule *s = NULL;
    zs_plan_report rep;
    zs_err e;
    ZS_ASSERT_OK(zs_plan_batch(p, &v.ctx, b, 1, &s, &rep, &e), &e);
    ZS_ASSERT_INT_EQ(rep.lora, 8);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "LoRA: rank-8 adapters on QKV");
    CU_ASSERT(count(s, "lora-in-wgrad", NULL) > 0);
    CU_ASSERT(count(s, "qkv-wgrad", NULL) == 0);
    zs_schedule_free(s);
    zs_cost_free(v.cost);
    /* interleaved 1F1B with full recomputation: the recomputed forward
     * runs the adapter too */
    zs_test_env_init(&v, "llama-550m", 1, "tp=2,cp=2,pp=2,vp=2,window=4096,micro=2,lora=8");
    v.ctx.mem.recompute = ZS_RECOMPUTE_FULL;
    ZS_ASSERT_OK(zs_plan_batch(p, &v.ctx, b, 1, &s, &rep, &e), &e);
    CU_ASSERT(count(s, "recompute-lora-in", NULL) > 0);
    zs_schedule_free(s);
    zs_cost_free(v.cost);
    zs_test_env_init(&v, "llama-550m", 1, "tp=2,cp=2,pp=2,window=4096,micro=2,lora=5");
    ZS_ASSERT_INT_EQ(zs_plan_batch(p, &v.ctx, b, 1, &s, &rep, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.what, "LoRA rank 5 with tp=2");
    ZS_ASSERT_INT_EQ(zs_err_exit_code(ZS_EUSAGE), 2);
    zs_cost_free(v.cost);
    zs_batch_free(b);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"ops", test_ops},
                                         {"dp_bytes", test_dp_bytes},
                                         {"fp8_casts", test_fp8_casts},
                                         {"bad_rank", test_bad_rank},
                                         {"memory", test_memory},
                                         {"plain4d", test_plain4d},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"iter_lora", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
