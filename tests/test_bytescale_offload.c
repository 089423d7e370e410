/* Tests of ByteScale's selective activation offloading
 * (planners/zs_bytescale_offload_internal.h, bytescale offload=on) on
 * hand-checked cases:
 *   - host copies in the IR: a copy beside a compute op takes no share of
 *     the GPU and counts as communication (analytic backend);
 *   - the capacity and ratio formulas against numbers worked by hand;
 *   - the planner: eight 150,000-token documents on one node of 8 A800s
 *     with max_seqlen=100000 take 2 GPUs each without offloading and one
 *     each with it; the copies' bytes and times are the hand-computed
 *     ones, and zeroing them leaves the iteration time unchanged (hidden);
 *   - the schedules pass the validator on random batches with offload=on;
 *   - a GPU without a host copy rate is a clear error, and so is a
 *     schedule with host copies for Chakra. */
#include <stdlib.h>
#include <string.h>

#include "zs_analytic.h"
#include "zs_bytescale_offload_internal.h"
#include "zs_chakra.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

/* Rank 0 of 8: a 1 s compute op on the compute stream and a 1 s host copy on
 * a stream of its own, both at time 0. */
static void test_copy_takes_no_sms(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, NULL);
    zs_schedule *s = zs_schedule_new(8);
    int cs = zs_schedule_add_stream(s, "offload");
    CU_ASSERT(cs >= 2);
    CU_ASSERT(zs_sched_elementwise(s, 0, ZS_STREAM_COMPUTE, "x", 1e9, 1.0, NULL, 0) >= 0);
    CU_ASSERT(zs_sched_host_copy(s, 0, cs, "offload-d2h", 1, 25.1e9, 1.0, NULL, 0) >= 0);
    CU_ASSERT(zs_schedule_has_host_copies(s));
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, v.cost, NULL, &r, &e), &e);
    ZS_ASSERT_REL(r->iter_time, 1.0, 1e-12);
    ZS_ASSERT_REL(r->ranks[0].compute, 1.0, 1e-12); /* the copy is not compute */
    ZS_ASSERT_REL(r->ranks[0].comm, 1.0, 1e-12);    /* it is communication */
    zs_result_free(r);
    /* Chakra has no node type for it. */
    if (zs_chakra_available()) {
        ZS_ASSERT_INT_EQ(zs_chakra_write(s, &v.m, ZS_TEST_TMP, "off", &e), ZS_EINPUT);
        ZS_ASSERT_STR_CONTAINS(e.what, "host copies");
    }
    zs_schedule_free(s);
    zs_cost_free(v.cost);
}

/* llama-7b, full recomputation: a = 2 x 4096 bytes per token and layer,
 * L = 32. With max_seqlen 100000 the budget is F = 100000 a L; s tokens
 * fit with r >= (L - F / (a s)) / (L - 2). */
static void test_formulas(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-7b", 1, NULL);
    zs_mem_cfg mc = v.ctx.mem;
    mc.recompute = ZS_RECOMPUTE_FULL;
    mc.dp = 8;
    zs_bs_offload o;
    zs_err e;
    ZS_ASSERT_OK(zs_bs_offload_init(&o, v.cost, &mc, 1, 100000, &e), &e);
    ZS_ASSERT_REL(o.act_layer, 8192.0, 1e-12);
    ZS_ASSERT_REL(o.free_bytes, 100000.0 * 8192 * 32, 1e-12);
    ZS_ASSERT_REL(o.host_bps, 25.1e9, 1e-12); /* a800-80g's host_gbs */
    CU_ASSERT(zs_bs_offload_min_ratio(&o, 100000) == 0);
    /* (32 - 32 x 100000 / 150000) / 30 = 0.355556 */
    ZS_ASSERT_REL(zs_bs_offload_min_ratio(&o, 150000), (32 - 32.0 / 1.5) / 30, 1e-12);
    /* Everything offloaded: 2 layers' worth stay, 16 x the tokens. */
    ZS_ASSERT_INT_EQ(zs_bs_offload_capacity(&o, 1), 1600000);
    ZS_ASSERT_INT_EQ(zs_bs_offload_capacity(&o, 0), 100000);
    CU_ASSERT(zs_bs_offload_min_ratio(&o, 1600001) > 1);
    /* At 25.1 GB/s a layer input (8 KiB a token) copies ~6x faster than
     * the layer computes: everything may go. On a 1 GB/s link the copies
     * of a longer document hide more (quadratic attention). */
    double t1, t2;
    ZS_ASSERT_REL(zs_bs_offload_max_ratio(&o, 8000, 1, &t1), 1, 0);
    ZS_ASSERT_REL(25.1e9 * t1 / (8192.0 * 8000), 6, 0.25);
    o.host_bps = 1e9;
    double r1 = zs_bs_offload_max_ratio(&o, 8000, 1, &t1);
    double r2 = zs_bs_offload_max_ratio(&o, 64000, 1, &t2);
    CU_ASSERT(t1 > 0 && t2 > 8 * t1);
    ZS_ASSERT_REL(r1, 1e9 * t1 / (8192.0 * 8000), 1e-12);
    ZS_ASSERT_REL(r2, 1e9 * t2 / (8192.0 * 64000), 1e-12);
    CU_ASSERT(r1 < r2 && r2 < 1);
    o.host_bps = 25.1e9;
    double r;
    ZS_ASSERT_INT_EQ(zs_bs_offload_needed(&o, 150000, 8, &r), 1);
    ZS_ASSERT_REL(r, (32 - 32.0 / 1.5) / 30, 1e-12);
    ZS_ASSERT_INT_EQ(zs_bs_offload_needed(&o, 90000, 8, &r), 1);
    CU_ASSERT(r == 0);
    zs_bs_offload_free(&o);
    /* A GPU without the figure. */
    zs_cost *c = v.cost;
    double keep = c->cluster.gpu.host_gbs;
    c->cluster.gpu.host_gbs = 0;
    ZS_ASSERT_INT_EQ(zs_bs_offload_init(&o, v.cost, &mc, 1, 100000, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "host_gbs");
    c->cluster.gpu.host_gbs = keep;
    zs_cost_free(v.cost);
}

static int plan(zs_test_env *v, const char *opts, const zs_batch *b, zs_schedule **s,
                zs_plan_report *rep, zs_err *e)
{
    zs_opts_init(&v->opts);
    ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, e), e);
    *s = NULL;
    return zs_plan_batch(zs_planner_find("bytescale"), &v->ctx, b, 1, s, rep, e);
}

/* GPUs each document's attention pieces are on. */
static void ranks_per_doc(const zs_schedule *s, int *n, int ndocs)
{
    unsigned mask[16] = {0};
    for (int64_t i = 0; i < s->npieces; i++)
        if (s->pieces[i].layout == ZS_LAYOUT_ATTN)
            mask[s->pieces[i].doc] |= 1u << s->pieces[i].rank;
    for (int d = 0; d < ndocs; d++)
        n[d] = __builtin_popcount(mask[d]);
}

static double run(const zs_test_env *v, const zs_schedule *s)
{
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, v->cost, NULL, &r, &e), &e);
    double t = r ? r->iter_time : -1;
    zs_result_free(r);
    return t;
}

static void test_planner(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-7b", 1, NULL);
    v.ctx.mem.recompute = ZS_RECOMPUTE_FULL;
    int32_t len[8];
    for (int d = 0; d < 8; d++)
        len[d] = 150000;
    zs_batch *b = zs_batch_from_lengths(len, 8);
    zs_plan_report rep;
    zs_schedule *s;
    zs_err e;
    int n[8];
    /* Without: 75,000 tokens per GPU on rings of 2. */
    ZS_ASSERT_OK(plan(&v, "max_seqlen=100000", b, &s, &rep, &e), &e);
    ranks_per_doc(s, n, 8);
    for (int d = 0; d < 8; d++)
        ZS_ASSERT_INT_EQ(n[d], 2);
    CU_ASSERT(!zs_schedule_has_host_copies(s));
    zs_schedule_free(s);
    /* With: each on one GPU, r = 0.355556 of its activations offloaded. */
    ZS_ASSERT_OK(plan(&v, "max_seqlen=100000,offload=on", b, &s, &rep, &e), &e);
    ranks_per_doc(s, n, 8);
    for (int d = 0; d < 8; d++)
        ZS_ASSERT_INT_EQ(n[d], 1);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "8 micro-batch groups offload");
    /* 150000 (32 - 30 r) / 32 = 100000: what max_seqlen allows, no more. */
    ZS_ASSERT_INT_EQ(rep.max_resident_tokens, 100000);
    ZS_ASSERT_INT_EQ(rep.max_live_attn_tokens, 150000);
    double bytes = (32 - 32.0 / 1.5) / 30 * 8192 * 150000; /* 436,906,667 */
    double t = bytes / 25.1e9;                             /* 17.41 ms */
    for (int r = 0; r < 8; r++) {
        int d2h = 0, h2d = 0;
        for (int64_t i = 0; i < s->ranks[r].nops; i++) {
            zs_op *op = &s->ranks[r].ops[i];
            if (op->kind != ZS_OP_COMPUTE || !zs_ck_is_host_copy(op->u.compute.ck))
                continue;
            CU_ASSERT(op->stream != ZS_STREAM_COMPUTE);
            ZS_ASSERT_REL(op->u.compute.bytes, bytes, 1e-12);
            ZS_ASSERT_REL(op->duration, t, 1e-12);
            d2h += op->u.compute.ck == ZS_CK_D2H;
            h2d += op->u.compute.ck == ZS_CK_H2D;
        }
        /* One each in the layer's segment (repeated for the 32 layers). */
        ZS_ASSERT_INT_EQ(d2h, 1);
        ZS_ASSERT_INT_EQ(h2d, 1);
    }
    /* Hidden: the same iteration with copies that take no time. */
    double with = run(&v, s);
    for (int r = 0; r < 8; r++)
        for (int64_t i = 0; i < s->ranks[r].nops; i++)
            if (s->ranks[r].ops[i].kind == ZS_OP_COMPUTE &&
                zs_ck_is_host_copy(s->ranks[r].ops[i].u.compute.ck))
                s->ranks[r].ops[i].duration = 0;
    double without = run(&v, s);
    printf("\n  offloaded: %.3f ms, copies free: %.3f ms\n", with * 1e3, without * 1e3);
    ZS_ASSERT_REL(with, without, 1e-9);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* Copies too slow to hide: the document keeps its 2 GPUs. */
static void test_slow_link(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-7b", 1, NULL);
    v.ctx.mem.recompute = ZS_RECOMPUTE_FULL;
    v.cost->cluster.gpu.host_gbs = 0.001;
    int32_t len[8] = {150000, 150000, 150000, 150000, 150000, 150000, 150000, 150000};
    zs_batch *b = zs_batch_from_lengths(len, 8);
    zs_plan_report rep;
    zs_schedule *s;
    zs_err e;
    int n[8];
    ZS_ASSERT_OK(plan(&v, "max_seqlen=100000,offload=on", b, &s, &rep, &e), &e);
    ranks_per_doc(s, n, 8);
    ZS_ASSERT_INT_EQ(n[0], 2);
    CU_ASSERT(!zs_schedule_has_host_copies(s));
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_validates(void)
{
    static const char *const opts[] = {"max_seqlen=3000,offload=on", "max_seqlen=6000,offload=on",
                                       "max_cp=16,max_seqlen=4000,offload=on",
                                       "tp=2,max_seqlen=5000,offload=on"};
    zs_test_random_plans r = {.method = "bytescale",
                              .opts = opts,
                              .nopts = 4,
                              .trials = 24,
                              .maxlen = 12000,
                              .long_every = 3,
                              .long_len = 40000,
                              .seed = 3131};
    zs_test_plan_random(&r);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"copy_takes_no_sms", test_copy_takes_no_sms},
                                         {"formulas", test_formulas},
                                         {"planner", test_planner},
                                         {"slow_link", test_slow_link},
                                         {"validates", test_validates},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"bytescale_offload", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
