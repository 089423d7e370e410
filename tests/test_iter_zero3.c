/* ZeRO-3 in the simulated schedules, as FSDP2 runs it and the step model
 * prices it (zs_megatron_step.c, dp_comm_fsdp). Hand-checked on
 * llama-550m (24 layers) at dp 2, two micro-batches: per micro-batch the
 * root module's gather, each layer's gather before its forward (24) and
 * again before its backward but for the last layer (23), a copy-out of
 * each gather on the compute stream, each layer's gradients
 * reduce-scattered (24) and the root's once; no gather after the
 * optimizer; every ZeRO collective on the comm stream (one communicator
 * runs them in turn); each layer's gather of the next one held by a join
 * after the previous layer. ZeRO-1 reduce-scatters each layer's, the LM
 * head's and the embedding's gradients once, ZeRO-0 all-reduces them.
 * FSDP1 and Megatron-FSDP (zs_iter_spec.fsdp) copy differently. */
#include <string.h>

#include "zs_analytic.h"
#include "zs_iteration.h"
#include "zs_test.h"
#include "zs_test_env.h"

enum { LAYERS = 24, MICRO = 2 };

static zs_cost *cost_new(void)
{
    zs_model m;
    zs_cluster c;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-550m", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 1, &c, &e), &e);
    return zs_cost_analytic_new(&m, &c);
}

/* tp 1 x dp 2, two micro-batches of 256 linear tokens a slot. */
static zs_schedule *build_as(zs_cost *cost, int zero, zs_fsdp fsdp)
{
    zs_schedule *s = zs_schedule_new(2);
    int32_t len[1] = {256};
    int64_t lin[4] = {256, 256, 256, 256};
    zs_schedule_set_docs(s, len, 1);
    zs_iter_spec spec = {
        {1, 1, 1, 2}, MICRO, lin, ZS_RECOMPUTE_NONE, zero, 1, zs_test_emit_local, NULL,
        NULL,         0,     fsdp};
    zs_err e;
    int rc = zs_iter_build(s, cost, &spec, &e);
    ZS_ASSERT_OK(rc, &e);
    return s;
}

static zs_schedule *build(zs_cost *cost, int zero)
{
    return build_as(cost, zero, ZS_FSDP2);
}

/* Rank 0's ops named `label` once the segments are repeated, the first
 * one in *first; every one of them on `stream` (-1: any). */
static int count(const zs_schedule *s, const char *label, int stream, const zs_op **first)
{
    const zs_rank_prog *p = &s->ranks[0];
    int n = 0;
    for (int32_t g = 0; g < p->nsegs; g++)
        for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++)
            if (!strcmp(s->labels[p->ops[i].label], label)) {
                if (!n && first)
                    *first = &p->ops[i];
                CU_ASSERT(stream < 0 || p->ops[i].stream == stream);
                n += p->segs[g].repeat;
            }
    return n;
}

static void test_collectives(void)
{
    zs_cost *cost = cost_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    const zs_model *m = &cost->model;
    CU_ASSERT_EQUAL_FATAL(m->layers, LAYERS);
    zs_schedule *s = build(cost, 3);
    double lp = zs_model_params_per_layer(m), root = zs_model_params(m) - LAYERS * lp;
    const zs_op *op = NULL;
    ZS_ASSERT_INT_EQ(count(s, "zero3-ag-root", ZS_STREAM_COMM, &op), MICRO);
    ZS_ASSERT_NEAR(op->u.coll.bytes, root * m->dtype_bytes / 2, 0);
    ZS_ASSERT_INT_EQ(count(s, "zero3-ag", ZS_STREAM_COMM, &op), MICRO * LAYERS);
    ZS_ASSERT_NEAR(op->u.coll.bytes, lp * m->dtype_bytes / 2, 0);
    ZS_ASSERT_INT_EQ(count(s, "zero3-ag-bwd", ZS_STREAM_COMM, NULL), MICRO * (LAYERS - 1));
    ZS_ASSERT_INT_EQ(count(s, "fsdp-copy-out", ZS_STREAM_COMPUTE, &op),
                     MICRO * (1 + LAYERS + LAYERS - 1));
    ZS_ASSERT_NEAR(op->u.compute.bytes, 2 * root * m->dtype_bytes, 0);
    ZS_ASSERT_INT_EQ(count(s, "grad-reduce-scatter", ZS_STREAM_COMM, &op), MICRO * LAYERS);
    ZS_ASSERT_NEAR(op->u.coll.bytes, lp * m->dtype_bytes / 2, 0);
    ZS_ASSERT_INT_EQ(count(s, "grad-reduce-scatter-root", ZS_STREAM_COMM, NULL), MICRO);
    ZS_ASSERT_INT_EQ(count(s, "zero-param-all-gather", -1, NULL), 0);
    ZS_ASSERT_INT_EQ(count(s, "optimizer", -1, &op), 1);
    ZS_ASSERT_NEAR(op->u.compute.bytes, zs_model_params(m) / 2 * 32.0, 1e-3);
    /* ZeRO-1: one reduce-scatter per layer, the LM head's and the
     * embedding's, after the last micro-batch, the gather after the
     * optimizer; ZeRO-0 all-reduces instead and gathers nothing */
    zs_schedule *z1 = build(cost, 1), *z0 = build(cost, 0);
    ZS_ASSERT_INT_EQ(count(z1, "zero3-ag", -1, NULL), 0);
    ZS_ASSERT_INT_EQ(count(z1, "fsdp-copy-out", -1, NULL), 0);
    ZS_ASSERT_INT_EQ(count(z1, "grad-reduce-scatter", ZS_STREAM_COMM, NULL), LAYERS);
    ZS_ASSERT_INT_EQ(count(z1, "grad-reduce-scatter-root", ZS_STREAM_COMM, NULL),
                     m->tied_embeddings ? 1 : 2);
    ZS_ASSERT_INT_EQ(count(z1, "grad-all-reduce", -1, NULL), 0);
    ZS_ASSERT_INT_EQ(count(z1, "zero-param-all-gather", -1, NULL), 1);
    ZS_ASSERT_INT_EQ(count(z0, "grad-all-reduce", ZS_STREAM_COMM, &op), LAYERS);
    ZS_ASSERT_NEAR(op->u.coll.bytes, lp * m->dtype_bytes, 0);
    ZS_ASSERT_INT_EQ(count(z0, "grad-all-reduce-root", ZS_STREAM_COMM, NULL),
                     m->tied_embeddings ? 1 : 2);
    ZS_ASSERT_INT_EQ(count(z0, "zero-param-all-gather", -1, NULL), 0);
    zs_schedule_free(s);
    zs_schedule_free(z1);
    zs_schedule_free(z0);
    zs_cost_free(cost);
}

/* In the repeated layer segment the gather of the next layer waits for a
 * join on the compute stream (after the previous layer), and the layer's
 * last op is the copy-out, which waits for that gather. */
static void test_prefetch_one_ahead(void)
{
    zs_cost *cost = cost_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    zs_schedule *s = build(cost, 3);
    const zs_rank_prog *p = &s->ranks[0];
    int seen = 0;
    for (int32_t g = 0; g < p->nsegs; g++) {
        const zs_segment *sg = &p->segs[g];
        if (sg->repeat != LAYERS - 1)
            continue;
        int64_t join = -1, ag = -1, last = -1;
        for (int64_t i = sg->op0; i < sg->op0 + sg->nops; i++) {
            const zs_op *op = &p->ops[i];
            const char *l = s->labels[op->label];
            if (!strcmp(l, "zero3-prefetch"))
                join = i;
            else if (!strncmp(l, "zero3-ag", 8)) {
                ag = i;
                CU_ASSERT(join >= 0 && op->ndeps == 1 && p->deps[op->dep0] == join);
            }
            if (op->stream == ZS_STREAM_COMPUTE && op->kind != ZS_OP_MARKER)
                last = i;
        }
        CU_ASSERT_FATAL(join >= 0 && ag >= 0 && last >= 0);
        CU_ASSERT_EQUAL(p->ops[join].duration, 0);
        const zs_op *cp = &p->ops[last];
        CU_ASSERT_STRING_EQUAL(s->labels[cp->label], "fsdp-copy-out");
        int waits = 0;
        for (int d = 0; d < cp->ndeps; d++)
            waits += p->deps[cp->dep0 + d] == ag;
        ZS_ASSERT_INT_EQ(waits, 1);
        seen++;
    }
    /* forward and backward of each micro-batch */
    ZS_ASSERT_INT_EQ(seen, 2 * MICRO);
    zs_schedule_free(s);
    zs_cost_free(cost);
}

/* FSDP1 gathers in place (each wait takes no time) and concatenates a
 * layer's gradients before its reduce-scatter, which waits for it (24
 * layers and the root, per micro-batch, 2 bytes read and written per
 * parameter); Megatron-FSDP copies nothing. */
static void test_implementations(void)
{
    zs_cost *cost = cost_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    const zs_model *m = &cost->model;
    double lp = zs_model_params_per_layer(m);
    int waits = MICRO * (1 + LAYERS + LAYERS - 1);
    zs_schedule *f1 = build_as(cost, 3, ZS_FSDP1), *mg = build_as(cost, 3, ZS_FSDP_MEGATRON);
    const zs_op *op = NULL;
    ZS_ASSERT_INT_EQ(count(f1, "fsdp-copy-out", -1, NULL), 0);
    ZS_ASSERT_INT_EQ(count(f1, "fsdp-wait", ZS_STREAM_COMPUTE, &op), waits);
    CU_ASSERT_EQUAL(op->duration, 0);
    ZS_ASSERT_INT_EQ(count(f1, "fsdp1-grad-cat", ZS_STREAM_COMPUTE, &op), MICRO * (LAYERS + 1));
    ZS_ASSERT_NEAR(op->u.compute.bytes, 2 * lp * m->dtype_bytes, 0);
    CU_ASSERT(op->duration > 0);
    ZS_ASSERT_INT_EQ(count(f1, "grad-reduce-scatter", ZS_STREAM_COMM, NULL), MICRO * LAYERS);
    /* each layer's reduce-scatter waits for the concatenation before it */
    const zs_rank_prog *p = &f1->ranks[0];
    int64_t cat = -1;
    int checked = 0;
    for (int64_t i = 0; i < p->nops; i++) {
        const char *l = f1->labels[p->ops[i].label];
        if (!strcmp(l, "fsdp1-grad-cat"))
            cat = i;
        else if (!strcmp(l, "grad-reduce-scatter")) {
            CU_ASSERT(cat >= 0 && p->ops[i].ndeps >= 1 && p->deps[p->ops[i].dep0] == cat);
            checked++;
        }
    }
    CU_ASSERT(checked > 0);
    ZS_ASSERT_INT_EQ(count(mg, "fsdp-copy-out", -1, NULL), 0);
    ZS_ASSERT_INT_EQ(count(mg, "fsdp1-grad-cat", -1, NULL), 0);
    ZS_ASSERT_INT_EQ(count(mg, "fsdp-wait", ZS_STREAM_COMPUTE, NULL), waits);
    /* below ZeRO-3 the implementation changes nothing */
    zs_schedule *z1 = build_as(cost, 1, ZS_FSDP1);
    ZS_ASSERT_INT_EQ(count(z1, "fsdp1-grad-cat", -1, NULL), 0);
    ZS_ASSERT_INT_EQ(count(z1, "fsdp-wait", -1, NULL), 0);
    zs_schedule_free(f1);
    zs_schedule_free(mg);
    zs_schedule_free(z1);
    zs_cost_free(cost);
}

/* The analytic executor runs it; ZeRO-3 moves more bytes than ZeRO-1 and
 * copies each gathered layer out, so its step is not shorter. */
static void test_runs(void)
{
    zs_cost *cost = cost_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    double t[2];
    for (int k = 0; k < 2; k++) {
        zs_schedule *s = build(cost, k ? 3 : 1);
        zs_result *r = NULL;
        zs_err e;
        ZS_ASSERT_OK(zs_analytic_run(s, cost, NULL, &r, &e), &e);
        t[k] = r->iter_time;
        zs_result_free(r);
        zs_schedule_free(s);
    }
    CU_ASSERT(t[0] > 0 && t[1] >= t[0]);
    zs_cost_free(cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"collectives", test_collectives},
                                         {"prefetch_one_ahead", test_prefetch_one_ahead},
                                         {"implementations", test_implementations},
                                         {"runs", test_runs},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"zero3", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
