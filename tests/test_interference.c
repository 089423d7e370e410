/* Compute-communication interference in the analytic backend
 * (zs_exec_opts.interference): tiny schedules whose end times are worked
 * out by hand. On cluster-a (A100: 108 SMs; one 200 Gb/s NIC per two
 * GPUs) a send of 1 GB from GPU 0 to GPU 8 (the next node) holds 2 CTAs on
 * each end: NCCL's channels per network peer are max(1 NIC, ceil(25 GB/s /
 * 14 GB/s)) = 2, and 1 GB in parts of at most 128 KiB uses both. Under it
 * a compute op runs at 106/108 of its rate. With interference off nothing
 * changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_analytic.h"
#include "zs_nccl.h"
#include "zs_test.h"

static zs_cost *cost_a(zs_cluster *cl)
{
    zs_model m;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 2, cl, &e), &e);
    zs_cost *c = zs_cost_analytic_new(&m, cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

/* GPU 0 computes for `dur` s on stream 0 while sending 1 GB to each of
 * the GPUs in to[] (n of them) on stream 1; they receive it. */
static zs_result *run(const zs_cost *c, int on, double dur, const int *to, int n)
{
    zs_schedule *s = zs_schedule_new(16);
    zs_sched_elementwise(s, 0, 0, "mlp", 1e6, dur, NULL, 0);
    for (int i = 0; i < n; i++) {
        zs_sched_send(s, 0, 1, "x", to[i], i, 1e9, NULL, 0);
        zs_sched_recv(s, to[i], 1, "x", 0, i, 1e9, NULL, 0);
    }
    zs_analytic_opts o;
    zs_analytic_opts_init(&o);
    o.exec.interference = on;
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, c, &o, &r, &e), &e);
    zs_schedule_free(s);
    return r;
}

static void test_p2p_ctas(void)
{
    zs_cluster cl;
    zs_cost *c = cost_a(&cl);
    ZS_ASSERT_INT_EQ(zs_nccl_p2p_ctas(&cl, 0, 8, 1e9), 2);
    ZS_ASSERT_INT_EQ(zs_nccl_p2p_ctas(&cl, 0, 8, 100e3), 1); /* one part of <= 128 KiB */
    ZS_ASSERT_INT_EQ(zs_nccl_p2p_ctas(&cl, 0, 8, 0), 1);
    ZS_ASSERT_INT_EQ(zs_nccl_p2p_ctas(&cl, 0, 0, 1e9), 0);
    /* Inside a node: 8 MiB fits one part of 32 x 512 KiB; 64 MiB takes 4. */
    ZS_ASSERT_INT_EQ(zs_nccl_p2p_ctas(&cl, 0, 1, 8 << 20), 1);
    ZS_ASSERT_INT_EQ(zs_nccl_p2p_ctas(&cl, 0, 1, 64 << 20), 4);
    zs_cost_free(c);
}

/* One send overlapping one compute op: the transfer (6 us + 1 GB / 25
 * GB/s = T) ends first; the compute did T x 106/108 of its work by then
 * and the rest at full rate, so it ends at dur + T x 2/108. */
static void test_one_send(void)
{
    zs_cluster cl;
    zs_cost *c = cost_a(&cl);
    int to = 8;
    double T = 6e-6 + 1e9 / 25e9, dur = 0.1;
    zs_result *off = run(c, 0, dur, &to, 1);
    ZS_ASSERT_NEAR(off->ranks[0].end, dur, 1e-12);
    CU_ASSERT_PTR_NULL(off->interference);
    zs_result *on = run(c, 1, dur, &to, 1);
    ZS_ASSERT_REL(on->ranks[8].end, T, 1e-12); /* the transfer is not slowed */
    ZS_ASSERT_REL(on->ranks[0].end, dur + T * 2 / 108, 1e-12);
    CU_ASSERT_PTR_NOT_NULL_FATAL(on->interference);
    ZS_ASSERT_REL(on->interference[0], T * 2 / 108, 1e-9);
    ZS_ASSERT_NEAR(on->interference[8], 0, 1e-15); /* GPU 8 computes nothing */
    ZS_ASSERT_REL(on->ranks[0].compute, dur + T * 2 / 108, 1e-12);
    zs_result_free(off);
    zs_result_free(on);
    /* A compute op that ends first runs at 106/108 throughout. */
    on = run(c, 1, 0.01, &to, 1);
    ZS_ASSERT_REL(on->ranks[0].end, T, 1e-12); /* the send's end */
    ZS_ASSERT_REL(on->interference[0], 0.01 * 108 / 106 - 0.01, 1e-9);
    zs_result_free(on);
    zs_cost_free(c);
}

/* Inside a node, in a schedule across nodes: NCCL's communicator spans
 * nodes, so the send takes the network's 2 channels per peer too. */
static void test_send_in_node(void)
{
    zs_cluster cl;
    zs_cost *c = cost_a(&cl);
    int to = 1;
    double T = zs_cost_p2p(c, 0, 1, 1e9);
    zs_result *on = run(c, 1, 0.1, &to, 1);
    ZS_ASSERT_REL(on->ranks[1].end, T, 1e-12);
    ZS_ASSERT_REL(on->ranks[0].end, 0.1 + T * 2 / 108, 1e-12);
    zs_result_free(on);
    zs_cost_free(c);
}

/* Two sends at once add their CTAs (4 of 108) while both run; they share
 * GPU 0's NIC and end together at T2 (GPU 8's end). */
static void test_two_sends(void)
{
    zs_cluster cl;
    zs_cost *c = cost_a(&cl);
    int to[2] = {8, 9};
    double dur = 0.2;
    zs_result *on = run(c, 1, dur, to, 2);
    double T2 = on->ranks[8].end;
    CU_ASSERT(T2 > 0.079 && T2 < 0.081);
    ZS_ASSERT_REL(on->ranks[0].end, dur + T2 * 4 / 108, 1e-12);
    zs_result_free(on);
    zs_cost_free(c);
}

/* A collective holds the channels of the algorithm NCCL picks: an
 * all-reduce of 256 MB over node 0 (T seconds, k CTAs) under a compute op
 * of 1 s ends it at 1 + T x k / 108. */
static void test_collective(void)
{
    zs_cluster cl;
    zs_cost *c = cost_a(&cl);
    int g8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double B = 256e6;
    int k = zs_nccl_group_ctas(&cl, g8, 8, ZS_COLL_ALLREDUCE, B, zs_cost_nccl(c));
    CU_ASSERT(k > 0 && k < 64);
    double T = zs_cost_collective(c, ZS_COLL_ALLREDUCE, g8, 8, B);
    zs_schedule *s = zs_schedule_new(8);
    int g = zs_schedule_group(s, g8, 8);
    zs_sched_elementwise(s, 0, 0, "mlp", 1e6, 1.0, NULL, 0);
    for (int r = 0; r < 8; r++)
        zs_sched_coll(s, r, 1, "ar", g, ZS_COLL_ALLREDUCE, B, NULL, 0);
    zs_analytic_opts o;
    zs_analytic_opts_init(&o);
    o.exec.interference = 1;
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, c, &o, &r, &e), &e);
    ZS_ASSERT_REL(r->ranks[1].end, T, 1e-12);
    ZS_ASSERT_REL(r->ranks[0].end, 1.0 + T * k / 108, 1e-12);
    zs_result_free(r);
    zs_schedule_free(s);
    zs_cost_free(c);
}

/* Only the analytic backend models it: the SimGrid backend is refused
 * with a usage error (exit 2) that says what to use instead. */
static void test_cli(void)
{
    char cmd[1024], out[8192];
    snprintf(cmd, sizeof cmd, "%s simulate --nodes 2 --method te-cp --interference on",
             zs_test_zepsim());
    ZS_ASSERT_INT_EQ(zs_test_run(cmd, out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--backend analytic"));
    snprintf(cmd, sizeof cmd,
             "%s simulate --nodes 2 --method te-cp --backend analytic --interference on "
             "--ranks --format csv",
             zs_test_zepsim());
    ZS_ASSERT_INT_EQ(zs_test_run(cmd, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "interference on"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "interference_ms")); /* the per-rank column */
}

static const zs_test_case cases[] = {{"p2p_ctas", test_p2p_ctas},
                                     {"one_send", test_one_send},
                                     {"send_in_node", test_send_in_node},
                                     {"two_sends", test_two_sends},
                                     {"collective", test_collective},
                                     {"cli", test_cli},
                                     {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"interference", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
