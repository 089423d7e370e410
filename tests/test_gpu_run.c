/* GPU: a single-GPU schedule of local sequences (no communication) runs on
 * the hardware backend: two layers of attention forward and backward over
 * three documents, GEMMs and elementwise ops, on two streams with a
 * dependency. Checks the result's accounting (compute + exposed + idle =
 * iteration time), the op count, and that the timeline is valid JSON with
 * one event per op. Host copies (activation offloading) run as copies to
 * pinned host memory beside GEMMs and count as communication. Exits 77
 * (skip) without a GPU. */
#include <jansson.h>
#include <stdlib.h>

#include "zs_hw.h"
#include "zs_hw_prog.h"
#include "zs_planner.h"
#include "zs_test.h"

/* The "local" planner's schedule for one GPU: every document whole on the
 * one rank (Zeppelin's local class), all layers, forward and backward.
 * Also dumped to the test's scratch folder as local-plan.json, which
 * hw/scripts/device-check.sh runs again through `zepsim hw run`. */
static int local_plan(zs_schedule **out, const char *dump, zs_err *e)
{
    zs_model m;
    zs_cluster c;
    int rc = zs_model_load("llama-550m", &m, e);
    if (rc || (rc = zs_cluster_load("dgx-h100", 1, &c, e)))
        return rc;
    c.gpus_per_node = 1;
    c.nics_per_node = 1;
    zs_cost *cost = zs_cost_analytic_new(&m, &c);
    zs_opts o;
    zs_opts_init(&o);
    zs_plan_ctx ctx = {&m, &c, cost, zs_mem_cfg_default(), &o, 1};
    const int32_t lens[] = {8192, 4096, 2048, 1024, 512, 300};
    zs_batch *b = zs_batch_from_lengths(lens, 6);
    zs_plan_report rep;
    /* Plan validation is the planner tests' business (and the executor's
     * own preparation checks what it relies on). */
    rc = zs_plan_batch(zs_planner_find("local"), &ctx, b, 0, out, &rep, e);
    zs_batch_free(b);
    zs_cost_free(cost);
    if (rc || !dump)
        return rc;
    return zs_schedule_dump_file(*out, dump, e);
}

static void test_single_gpu_local_schedule(void)
{
    zs_schedule *s = zs_schedule_new(1);
    snprintf(s->model, sizeof s->model, "llama-7b");
    const int32_t len[] = {4096, 1000, 333};
    ZS_ASSERT_OK(zs_schedule_set_docs(s, len, 3), NULL);
    zs_attn_block docs[3] = {{0, 0, 4096, 0, 4096}, {1, 0, 1000, 0, 1000}, {2, 0, 333, 0, 333}};
    ZS_ASSERT_OK(zs_schedule_begin_segment(s, 0, 2), NULL);
    int64_t q = zs_sched_gemm(s, 0, 0, "qkv", 5429, 12288, 4096, 1e-4, NULL, 0);
    int64_t a = zs_sched_attn(s, 0, 0, "attn", 0, docs, 3, 32, 1e-4, &q, 1);
    int64_t o = zs_sched_gemm(s, 0, 0, "o", 5429, 4096, 4096, 1e-4, &a, 1);
    zs_sched_elementwise(s, 0, 1, "norm", 5429.0 * 4096 * 4, 1e-5, &o, 1);
    zs_sched_attn(s, 0, 0, "attn-bwd", 1, docs, 3, 32, 1e-4, &a, 1);
    zs_hw_run_cfg cfg = zs_hw_run_cfg_default();
    char path[512];
    snprintf(path, sizeof path, "%s/timeline.json", zs_test_tmpdir());
    cfg.exec.timeline = path;
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_hw_run(s, &cfg, &r, &e), &e);
    CU_ASSERT(r->iter_time > 0);
    ZS_ASSERT_INT_EQ(r->ranks[0].ops, 10);
    zs_rank_result *x = &r->ranks[0];
    ZS_ASSERT_REL(x->compute + x->exposed_comm + x->idle, r->iter_time, 1e-6);
    CU_ASSERT(x->compute > 0.5 * r->iter_time);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    CU_ASSERT_FATAL(doc != NULL);
    size_t i, nx = 0;
    json_t *ev;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, ev)
    {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        nx += ph && ph[0] == 'X';
    }
    ZS_ASSERT_INT_EQ(nx, 10);
    json_decref(doc);
    zs_result_free(r);
    zs_schedule_free(s);
}

/* Two layers, each a chain of GEMMs on the compute stream and, on the
 * offload stream, a 64 MiB d2h after the layer's first GEMM and its h2d
 * back: every op measured, the copies counted as communication at a rate
 * a PCIe or C2C link can give (wide bounds: the check is that they ran as
 * copies, not how fast this machine's link is). */
static void test_host_copies(void)
{
    zs_schedule *s = zs_schedule_new(1);
    snprintf(s->model, sizeof s->model, "llama-7b");
    int off = zs_schedule_add_stream(s, "offload");
    const double bytes = 64.0 * 1048576;
    ZS_ASSERT_OK(zs_schedule_begin_segment(s, 0, 2), NULL);
    int64_t g = zs_sched_gemm(s, 0, 0, "qkv", 4096, 12288, 4096, 1e-4, NULL, 0);
    int64_t d = zs_sched_host_copy(s, 0, off, "offload-d2h", 1, bytes, 1e-3, &g, 1);
    zs_sched_host_copy(s, 0, off, "offload-h2d", 0, bytes, 1e-3, &d, 1);
    g = zs_sched_gemm(s, 0, 0, "o", 4096, 4096, 4096, 1e-4, &g, 1);
    zs_sched_gemm(s, 0, 0, "mlp", 4096, 11008, 4096, 1e-4, &g, 1);
    zs_hw_run_cfg cfg = zs_hw_run_cfg_default();
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_hw_run(s, &cfg, &r, &e), &e);
    ZS_ASSERT_INT_EQ(r->ranks[0].ops, 10);
    zs_rank_result *x = &r->ranks[0];
    ZS_ASSERT_REL(x->compute + x->exposed_comm + x->idle, r->iter_time, 1e-6);
    CU_ASSERT(x->comm > 0);
    double gbs = 4 * bytes / x->comm / 1e9; /* 4 copies, one after another on their stream */
    printf("host copies: 4 x 64 MiB, %.3f ms as communication (%.1f GB/s), %.3f ms "
           "exposed, iteration %.3f ms\n",
           x->comm * 1e3, gbs, x->exposed_comm * 1e3, r->iter_time * 1e3);
    CU_ASSERT(gbs > 1 && gbs < 1000);
    ZS_ASSERT_STR_CONTAINS(r->notes, "pinned host buffer");
    zs_result_free(r);
    zs_schedule_free(s);
}

static void test_local_planner_schedule(void)
{
    zs_schedule *s = NULL;
    char path[512];
    zs_err e;
    snprintf(path, sizeof path, "%s/local-plan.json", zs_test_tmpdir());
    ZS_ASSERT_OK(local_plan(&s, path, &e), &e);
    zs_hw_run_cfg cfg = zs_hw_run_cfg_default();
    zs_result *r = NULL;
    ZS_ASSERT_OK(zs_hw_run(s, &cfg, &r, &e), &e);
    CU_ASSERT(r->iter_time > 0);
    ZS_ASSERT_INT_EQ(r->nranks, 1);
    ZS_ASSERT_INT_EQ(r->ranks[0].ops, zs_schedule_unrolled_ops(s, 0));
    CU_ASSERT(r->ranks[0].compute > 0.5 * r->iter_time);
    printf("local plan on one GPU: %.3f ms per iteration\n", r->iter_time * 1e3);
    zs_result_free(r);
    zs_schedule_free(s);
}

int main(int argc, char **argv)
{
    int n = 0;
    zs_err e;
    /* The plan itself needs no GPU: make sure it builds everywhere. */
    zs_schedule *s = NULL;
    zs_hw_prog *progs = NULL;
    zs_hw_needs nd;
    if (local_plan(&s, NULL, &e) != ZS_OK || zs_hw_progs_build(s, &progs, &nd, &e) != ZS_OK) {
        zs_err_print(stderr, &e);
        return 1;
    }
    printf("local plan: %lld unrolled ops on one GPU, executable as written\n",
           (long long)progs[0].n);
    zs_hw_progs_free(progs, s->nranks);
    zs_schedule_free(s);
    if (zs_hw_devices(&n, NULL, 0, &e) != ZS_OK) {
        printf("skipping GPU schedule test: %s\n", e.what);
        return 77;
    }
    static const zs_test_case cases[] = {
        {"single_gpu_local_schedule", test_single_gpu_local_schedule},
        {"local_planner_schedule", test_local_planner_schedule},
        {"host_copies", test_host_copies},
        {NULL, NULL}};
    static const zs_test_suite suites[] = {{"gpu_run", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
