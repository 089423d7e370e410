/* Schedule IR, dump/reload and the analytic backend on small hand-checked
 * schedules. */
#include <stdlib.h>

#include "zs_analytic.h"
#include "zs_cluster.h"
#include "zs_cost.h"
#include "zs_schedule.h"
#include "zs_test.h"
#include "zs_validate.h"

static zs_cost *cost_for(const char *cluster, int nodes)
{
    zs_model m;
    zs_cluster c;
    zs_err e;
    if (zs_model_load("llama-7b", &m, &e) || zs_cluster_load(cluster, nodes, &c, &e))
        return NULL;
    return zs_cost_analytic_new(&m, &c);
}

static void test_builder_basics(void)
{
    zs_schedule *s = zs_schedule_new(4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_INT_EQ(s->nstreams, 2);
    int g1 = zs_schedule_group(s, (int[]){2, 0, 1}, 3);
    int g2 = zs_schedule_group(s, (int[]){0, 1, 2}, 3);
    ZS_ASSERT_INT_EQ(g1, g2);
    ZS_ASSERT_INT_EQ(s->groups[g1].ranks[0], 0);
    int64_t a = zs_sched_gemm(s, 0, 0, "qkv", 10, 20, 30, 1e-3, NULL, 0);
    ZS_ASSERT_INT_EQ(a, 0);
    ZS_ASSERT_OK(zs_schedule_begin_segment(s, 0, 5), NULL);
    int64_t b = zs_sched_elementwise(s, 0, 0, "norm", 100, 2e-3, &a, 1);
    ZS_ASSERT_INT_EQ(b, 1);
    ZS_ASSERT_INT_EQ(s->ranks[0].nsegs, 2);
    ZS_ASSERT_INT_EQ(zs_schedule_unrolled_ops(s, 0), 1 + 5);
    ZS_ASSERT_INT_EQ(zs_schedule_label(s, "qkv"), 0);
    zs_err e;
    ZS_ASSERT_OK(zs_schedule_check(s, &e), &e);
    zs_schedule_free(s);
    zs_schedule_free(NULL);
}

/* Rank 0 computes 1 ms then sends 1 MB to rank 1 (same node); rank 1
 * receives, then computes 2 ms. */
static zs_schedule *two_rank(void)
{
    zs_schedule *s = zs_schedule_new(2);
    s->dims = (zs_layout_dims){1, 1, 1, 2};
    int64_t c0 = zs_sched_elementwise(s, 0, 0, "work", 1, 1e-3, NULL, 0);
    zs_sched_send(s, 0, 1, "xfer", 1, 7, 1e6, &c0, 1);
    int64_t r1 = zs_sched_recv(s, 1, 1, "xfer", 0, 7, 1e6, NULL, 0);
    zs_sched_elementwise(s, 1, 0, "work", 1, 2e-3, &r1, 1);
    return s;
}

static void test_analytic_two_ranks(void)
{
    zs_cost *c = cost_for("cluster-a", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    zs_schedule *s = two_rank();
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, c, NULL, &r, &e), &e);
    double xfer = 2e-6 + 1e6 / 200e9; /* NVLink latency + bytes / 200 GB/s */
    ZS_ASSERT_REL(r->iter_time, 1e-3 + xfer + 2e-3, 1e-9);
    ZS_ASSERT_INT_EQ(r->slowest_rank, 1);
    /* Rank 1 idles 1 ms waiting for the sender, then the transfer is exposed. */
    ZS_ASSERT_REL(r->ranks[1].idle, 1e-3, 1e-9);
    ZS_ASSERT_REL(r->ranks[1].exposed_comm, xfer, 1e-6);
    ZS_ASSERT_REL(r->ranks[1].compute, 2e-3, 1e-9);
    /* Rank 0: compute, the send, then idle until the iteration ends. */
    ZS_ASSERT_REL(r->ranks[0].compute + r->ranks[0].exposed_comm + r->ranks[0].idle, r->iter_time,
                  1e-9);
    ZS_ASSERT_REL(r->link_bytes[ZS_LINK_NVLINK], 2e6, 1e-12);
    ZS_ASSERT_INT_EQ(r->ops_executed, 4);
    zs_result_free(r);
    zs_schedule_free(s);
    zs_cost_free(c);
}

static void test_analytic_inter_node(void)
{
    zs_cost *c = cost_for("cluster-a", 2);
    zs_schedule *s = zs_schedule_new(16);
    zs_sched_send(s, 0, 1, "x", 8, 0, 64e6, NULL, 0);
    zs_sched_recv(s, 8, 1, "x", 0, 0, 64e6, NULL, 0);
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, c, NULL, &r, &e), &e);
    double lat, bw;
    zs_cluster_path(&c->cluster, 0, 8, &lat, &bw);
    ZS_ASSERT_REL(r->iter_time, lat + 64e6 / bw, 1e-9);
    ZS_ASSERT_REL(r->nic_bytes[0], 64e6, 1e-12); /* node 0 NIC 0 */
    ZS_ASSERT_REL(r->nic_bytes[4], 64e6, 1e-12); /* node 1 NIC 0 */
    zs_result_free(r);
    zs_schedule_free(s);
    zs_cost_free(c);
}

static void test_repeat_and_deps(void)
{
    zs_cost *c = cost_for("cluster-a", 1);
    zs_schedule *s = zs_schedule_new(1);
    /* 3 iterations of: compute 1 ms; comm-stream op 0 ms depending on it. */
    zs_schedule_begin_segment(s, 0, 3);
    int64_t a = zs_sched_elementwise(s, 0, 0, "a", 1, 1e-3, NULL, 0);
    zs_sched_elementwise(s, 0, 1, "b", 1, 0.5e-3, &a, 1);
    zs_schedule_begin_segment(s, 0, 1);
    int64_t b_idx = 1;
    zs_sched_elementwise(s, 0, 0, "c", 1, 1e-3, &b_idx, 1); /* waits for all 3 b's */
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, c, NULL, &r, &e), &e);
    /* a a a on compute (3 ms); the last b ends at 3.5 ms; c runs 3.5..4.5 ms. */
    ZS_ASSERT_REL(r->iter_time, 4.5e-3, 1e-9);
    ZS_ASSERT_INT_EQ(r->ops_executed, 7);
    zs_result_free(r);
    zs_schedule_free(s);
    zs_cost_free(c);
}

static void test_ring_no_deadlock(void)
{
    zs_cost *c = cost_for("cluster-a", 1);
    zs_schedule *s = zs_schedule_new(4);
    for (int r = 0; r < 4; r++) {
        zs_sched_send(s, r, 1, "ring", (r + 1) % 4, 3, 1e6, NULL, 0);
        zs_sched_recv(s, r, 1, "ring", (r + 3) % 4, 3, 1e6, NULL, 0);
    }
    zs_result *res = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, c, NULL, &res, &e), &e);
    ZS_ASSERT_REL(res->iter_time, 2e-6 + 1e6 / 200e9, 1e-9);
    zs_result_free(res);
    zs_validate_opts vo = {0, 0};
    s->heads = 1;
    /* No documents: placement and coverage are trivially satisfied. */
    ZS_ASSERT_OK(zs_validate(s, &vo, &e), &e);
    zs_schedule_free(s);
    zs_cost_free(c);
}

static void test_deadlock_detected(void)
{
    zs_cost *c = cost_for("cluster-a", 1);
    zs_schedule *s = zs_schedule_new(2);
    zs_sched_recv(s, 0, 1, "lonely", 1, 0, 10, NULL, 0);
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_analytic_run(s, c, NULL, &r, &e), ZS_EINVALID);
    ZS_ASSERT_STR_CONTAINS(e.what, "cannot finish");
    ZS_ASSERT_STR_CONTAINS(e.where, "r0 #0");
    /* Two ranks each receiving before sending on one stream: a cycle. */
    zs_schedule *s2 = zs_schedule_new(2);
    for (int k = 0; k < 2; k++) {
        int64_t rr = zs_sched_recv(s2, k, 1, "x", 1 - k, 0, 10, NULL, 0);
        zs_sched_elementwise(s2, k, 0, "w", 1, 1e-6, &rr, 1);
        zs_sched_send(s2, k, 1, "x", 1 - k, 0, 10, NULL, 0);
    }
    zs_analytic_opts dry;
    zs_analytic_opts_init(&dry);
    dry.dry = 1;
    ZS_ASSERT_INT_EQ(zs_analytic_run(s2, NULL, &dry, &r, &e), ZS_OK); /* grouped: fine */
    zs_result_free(r);
    zs_schedule *s3 = zs_schedule_new(2);
    for (int k = 0; k < 2; k++) {
        int64_t rr = zs_sched_recv(s3, k, 1, "x", 1 - k, 0, 10, NULL, 0);
        int64_t w = zs_sched_elementwise(s3, k, 0, "w", 1, 1e-6, &rr, 1);
        zs_sched_send(s3, k, 1, "x", 1 - k, 0, 10, &w, 1);
    }
    r = NULL;
    ZS_ASSERT_INT_EQ(zs_analytic_run(s3, NULL, &dry, &r, &e), ZS_EINVALID);
    /* The op named is the schedule's (the backend numbers ops by stream). */
    ZS_ASSERT_STR_CONTAINS(e.where, "r0 #1");
    zs_schedule_free(s);
    zs_schedule_free(s2);
    zs_schedule_free(s3);
    zs_cost_free(c);
}

static void test_collective(void)
{
    zs_cost *c = cost_for("cluster-a", 1);
    zs_schedule *s = zs_schedule_new(4);
    int g = zs_schedule_group(s, (int[]){0, 1, 2, 3}, 4);
    for (int r = 0; r < 4; r++) {
        /* Rank r arrives after r ms: the collective starts when the last does. */
        int64_t w = zs_sched_elementwise(s, r, 0, "w", 1, r * 1e-3, NULL, 0);
        zs_sched_coll(s, r, 1, "ar", g, ZS_COLL_ALLREDUCE, 8e6, &w, 1);
    }
    zs_result *res = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, c, NULL, &res, &e), &e);
    double t = zs_cost_collective(c, ZS_COLL_ALLREDUCE, (int[]){0, 1, 2, 3}, 4, 8e6);
    ZS_ASSERT_REL(res->iter_time, 3e-3 + t, 1e-9);
    ZS_ASSERT_REL(res->ranks[0].idle, 3e-3, 1e-9);
    zs_result_free(res);
    zs_schedule_free(s);
    zs_cost_free(c);
}

static void test_dump_roundtrip(void)
{
    zs_schedule *s = two_rank();
    zs_schedule_set_docs(s, (int32_t[]){5, 3}, 2);
    zs_schedule_add_piece(s, 0, 0, 5, 0, ZS_LAYOUT_ATTN, 0);
    zs_attn_block b[2] = {{0, 0, 5, 0, 5}, {1, 0, 3, 0, 3}};
    zs_sched_attn(s, 1, 0, "attn", 0, b, 2, 4, 1e-4, NULL, 0);
    int g = zs_schedule_group(s, (int[]){0, 1}, 2);
    zs_sched_coll(s, 0, 1, "ar", g, ZS_COLL_ALLREDUCE, 100, NULL, 0);
    zs_sched_coll(s, 1, 1, "ar", g, ZS_COLL_ALLREDUCE, 100, NULL, 0);
    zs_sched_marker(s, 0, ZS_MARK_LAYER, 3);
    /* The transfer carries 0.25 MB of document 0 and 0.75 MB of document 1. */
    zs_carry cl[2] = {{0, 2.5e5}, {1, 7.5e5}};
    int64_t c0 = zs_schedule_carry(s, cl, 2);
    ZS_ASSERT_OK(zs_sched_set_carry(s, 0, 1, c0, 2), NULL);
    ZS_ASSERT_OK(zs_sched_set_carry(s, 1, 0, c0, 2), NULL);
    snprintf(s->method, sizeof s->method, "hand \"made\"");
    zs_err e;
    char p1[1024], p2[1024];
    snprintf(p1, sizeof p1, "%s/rt1.json", zs_test_tmpdir());
    snprintf(p2, sizeof p2, "%s/rt2.json", zs_test_tmpdir());
    ZS_ASSERT_OK(zs_schedule_dump_file(s, p1, &e), &e);
    zs_schedule *t = NULL;
    ZS_ASSERT_OK(zs_schedule_load_file(p1, &t, &e), &e);
    ZS_ASSERT_OK(zs_schedule_dump_file(t, p2, &e), &e);
    char cmd[2200], out[256];
    snprintf(cmd, sizeof cmd, "cmp %s %s", p1, p2);
    ZS_ASSERT_INT_EQ(zs_test_run(cmd, out, sizeof out), 0);
    ZS_ASSERT_INT_EQ(t->nblocks, 2);
    ZS_ASSERT_INT_EQ(t->ranks[1].ops[2].u.compute.nblocks, 2);
    ZS_ASSERT_INT_EQ(t->ncarry, 2);
    ZS_ASSERT_INT_EQ(t->ranks[0].ops[1].u.p2p.ncarry, 2);
    CU_ASSERT_DOUBLE_EQUAL(t->carry[t->ranks[1].ops[0].u.p2p.carry0 + 1].bytes, 7.5e5, 0);
    /* A scaled copy (a routed slice): the same parts, a quarter of the bytes. */
    int64_t q = zs_schedule_carry_scaled(t, 0, 2, 2.5e5);
    ZS_ASSERT_INT_EQ(q, 2);
    CU_ASSERT_DOUBLE_EQUAL(t->carry[3].bytes, 1.875e5, 1e-9);
    ZS_ASSERT_INT_EQ(t->carry[3].doc, 1);
    zs_schedule_free(s);
    zs_schedule_free(t);
}

static void test_dump_bad_files(void)
{
    static const char *bad[] = {
        "{\"zepsim_schedule\": 1,",
        "[]",
        "{\"zepsim_schedule\": 2}",
        "{\"zepsim_schedule\": 1, \"nranks\": 0}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad-sched-%zu.json", i);
        const char *p = zs_test_write(name, bad[i]);
        zs_schedule *s = NULL;
        zs_err e;
        ZS_ASSERT_INT_EQ(zs_schedule_load_file(p, &s, &e), ZS_EINPUT);
        ZS_ASSERT_STR_CONTAINS(e.where, name);
        CU_ASSERT_PTR_NULL(s);
    }
}

/* A one-rank dump with one elementwise op of time t and size bytes,
 * repeated `repeat` times in a plan of `layers` layers and nranks ranks. */
static const char *tiny_dump(const char *name, int nranks, int layers, const char *repeat,
                             const char *t, const char *bytes)
{
    static char text[1 << 16];
    int n = snprintf(text, sizeof text,
                     "{\"zepsim_schedule\": 1, \"method\": \"m\", \"model\": \"llama-7b\", "
                     "\"cluster\": \"cluster-a\", \"cost\": \"c\",\n"
                     " \"dims\": {\"tp\": 1, \"cp\": 1, \"pp\": 1, \"dp\": 1},\n"
                     " \"nranks\": %d, \"layers\": %d, \"heads\": 1, \"micro_batches\": 1,\n"
                     " \"streams\": [\"compute\", \"comm\"], \"labels\": [\"x\"], \"groups\": [],"
                     " \"group_tags\": [], \"docs\": [], \"pieces\": [], \"blocks\": [],\n"
                     " \"ranks\": [{\"rank\": 0, \"segments\": [[0, 1, %s]], \"ops\": [{\"op\": "
                     "\"elementwise\", \"stream\": 0, \"label\": 0, \"t\": %s, \"bytes\": %s}]}",
                     nranks, layers, repeat, t, bytes);
    for (int r = 1; r < nranks; r++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      ",\n {\"rank\": %d, \"segments\": [], \"ops\": []}", r);
    snprintf(text + n, sizeof text - (size_t)n, "]}\n");
    return zs_test_write(name, text);
}

/* A plan file is bounded work: repeats up to the plan's layers, executed
 * ops and ranks up to the limits, times and sizes finite and in range.
 * Before, a repeat of 2^31 - 1 loaded (and ran for minutes) and an op
 * time of 1e308 gave an infinite iteration time. */
static void test_dump_limits(void)
{
    zs_schedule *s = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_schedule_load_file(tiny_dump("ok.json", 2, 32, "32", "0.001", "100"), &s, &e),
                 &e);
    ZS_ASSERT_INT_EQ(zs_schedule_total_unrolled(s), 32);
    zs_schedule_free(s);
    static const struct {
        int nranks, layers;
        const char *repeat, *t, *bytes, *what;
    } bad[] = {
        {1, 32, "2147483647", "0.001", "100", "repeat"},
        {1, 32, "33", "0.001", "100", "repeat"},
        {1, 32, "1", "1e308", "100", "t"},
        {1, 32, "1", "-0.5", "100", "t"},
        {1, 32, "1", "0.001", "1e300", "bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "limit-%zu.json", i);
        s = NULL;
        zs_err_clear(&e);
        int rc = zs_schedule_load_file(
            tiny_dump(name, bad[i].nranks, bad[i].layers, bad[i].repeat, bad[i].t, bad[i].bytes),
            &s, &e);
        if (rc != ZS_EINPUT)
            fprintf(stderr, "case %zu loaded\n", i);
        ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
        ZS_ASSERT_STR_CONTAINS(e.where, name);
        ZS_ASSERT_STR_CONTAINS(e.what, bad[i].what);
        CU_ASSERT_PTR_NULL(s);
        zs_schedule_free(s);
    }
    /* The limits are configurable: lowered, the same files are refused
     * with the name of the setting that raises them. */
    zs_plan_limits def = zs_plan_limits_get(), low = def;
    ZS_ASSERT_INT_EQ(def.ops, ZS_PLAN_MAX_OPS_DEFAULT);
    ZS_ASSERT_INT_EQ(def.ranks, ZS_PLAN_MAX_RANKS_DEFAULT);
    low.ops = 31;
    low.ranks = 1;
    zs_plan_limits_set(low);
    ZS_ASSERT_INT_EQ(zs_schedule_load_file(tiny_dump("ops.json", 1, 32, "32", "0", "0"), &s, &e),
                     ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "ZEPSIM_MAX_PLAN_OPS");
    ZS_ASSERT_INT_EQ(zs_schedule_load_file(tiny_dump("ranks.json", 2, 32, "1", "0", "0"), &s, &e),
                     ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "ZEPSIM_MAX_PLAN_RANKS");
    zs_plan_limits_set(def);
    CU_ASSERT_PTR_NULL(s);
}

/* Every figure a backend computes is finite or the run fails: two ops of
 * 1e308 s overflow the iteration time (built in memory, where nothing
 * checks the times at load). */
static void test_analytic_not_finite(void)
{
    zs_schedule *s = zs_schedule_new(1);
    zs_sched_elementwise(s, 0, 0, "a", 1, 1e308, NULL, 0);
    zs_sched_elementwise(s, 0, 0, "b", 1, 1e308, NULL, 0);
    zs_cost *c = cost_for("cluster-a", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    zs_result *r = NULL;
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_analytic_run(s, c, NULL, &r, &e);
    if (rc == ZS_OK)
        fprintf(stderr, "iteration time %g accepted\n", r->iter_time);
    ZS_ASSERT_INT_EQ(rc, ZS_EINVALID);
    ZS_ASSERT_STR_CONTAINS(e.what, "not finite");
    CU_ASSERT_PTR_NULL(r);
    zs_result_free(r);
    zs_cost_free(c);
    zs_schedule_free(s);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"builder_basics", test_builder_basics},
                                         {"analytic_two_ranks", test_analytic_two_ranks},
                                         {"analytic_inter_node", test_analytic_inter_node},
                                         {"repeat_and_deps", test_repeat_and_deps},
                                         {"ring_no_deadlock", test_ring_no_deadlock},
                                         {"deadlock_detected", test_deadlock_detected},
                                         {"collective", test_collective},
                                         {"dump_roundtrip", test_dump_roundtrip},
                                         {"dump_bad_files", test_dump_bad_files},
                                         {"dump_limits", test_dump_limits},
                                         {"analytic_not_finite", test_analytic_not_finite},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"schedule", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
