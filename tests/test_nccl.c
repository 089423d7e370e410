/* NCCL's collective model: names and NCCL_ALGO/NCCL_PROTO masks, the
 * topology figures and graphs on the presets, NCCL's own estimate and
 * choice on hand-checked cases (2 GPUs: ring; 8 GPUs of an NVSwitch-SHARP
 * node: NVLS for all-reduce; 2 nodes: tree for small all-reduces, ring or
 * NVLS-tree for large ones), the per-step latency growth with the ranks and
 * nodes, fit round trips, and nccl-tests logs of multi-node runs. Every
 * expected figure below is worked out by hand from NCCL 2.29.2's tables
 * (docs/cost-model.md), not read back from the code. */
#include <stdlib.h>

#include "zs_cost_model.h"
#include "zs_calib.h"
#include "zs_nccl.h"
#include "zs_test.h"

static zs_cluster cluster(const char *name, int nodes)
{
    zs_cluster c;
    zs_err e;
    memset(&c, 0, sizeof c);
    ZS_ASSERT_OK(zs_cluster_load(name, nodes, &c, &e), &e);
    return c;
}

static zs_nccl_topo topo(const zs_cluster *c, int nodes, int ppn)
{
    zs_nccl_topo t;
    zs_err e;
    memset(&t, 0, sizeof t);
    ZS_ASSERT_OK(zs_nccl_topo_init(c, nodes, ppn, 0, &t, &e), &e);
    return t;
}

static zs_nccl_choice choose(const zs_nccl_topo *t, zs_coll_kind k, double bytes, unsigned am)
{
    zs_nccl_choice c;
    zs_err e;
    memset(&c, 0, sizeof c);
    ZS_ASSERT_OK(zs_nccl_choose(t, k, bytes, am, 0, NULL, &c, &e), &e);
    return c;
}

static void test_names_and_masks(void)
{
    zs_err e;
    unsigned m = 0;
    CU_ASSERT_STRING_EQUAL(zs_nccl_algo_name(ZS_NCCL_NVLS_TREE), "nvls-tree");
    CU_ASSERT_STRING_EQUAL(zs_nccl_proto_name(ZS_NCCL_LL128), "LL128");
    ZS_ASSERT_OK(zs_nccl_algo_mask_parse("Ring,NVLSTree", &m, &e), &e);
    ZS_ASSERT_INT_EQ(m, (1u << ZS_NCCL_RING) | (1u << ZS_NCCL_NVLS_TREE));
    ZS_ASSERT_OK(zs_nccl_algo_mask_parse("CollnetDirect", &m, &e), &e);
    ZS_ASSERT_INT_EQ(m, 1u << ZS_NCCL_COLLNET_DIRECT);
    ZS_ASSERT_OK(zs_nccl_proto_mask_parse("^LL128", &m, &e), &e);
    ZS_ASSERT_INT_EQ(m, (1u << ZS_NCCL_LL) | (1u << ZS_NCCL_SIMPLE));
    char buf[64];
    zs_nccl_mask_str(m, 0, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "LL,Simple");
    zs_nccl_mask_str(ZS_NCCL_ALL_ALGOS, 1, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "");
    ZS_ASSERT_INT_EQ(zs_nccl_algo_mask_parse("ring,warp", &m, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "warp");
    ZS_ASSERT_INT_EQ(zs_nccl_proto_mask_parse("^LL,LL128,Simple", &m, &e), ZS_EINPUT);
    ZS_ASSERT_INT_EQ(zs_nccl_algo_mask_parse("", &m, &e), ZS_EINPUT);
    ZS_ASSERT_INT_EQ(zs_nccl_param_parse("nvlink_eff"), ZS_NP_NVL_EFF);
    ZS_ASSERT_INT_EQ(zs_nccl_param_parse("bogus"), -1);
}

/* H200 node: 18 NVLinks x 20.6 GB/s = 370.8; the ring search stops at
 * 6 x 60 and duplicates to 12 x 30 (NCCL logs 360 for H100); NVLS on 8
 * GPUs: 9 shares per GPU -> 40 GB/s, the other side raised to 60. */
static void test_topology(void)
{
    zs_cluster c = cluster("cluster-c", 2);
    zs_nccl_topo t = topo(&c, 1, 8);
    ZS_ASSERT_REL(t.nvl_bw, 370.8, 1e-9);
    ZS_ASSERT_REL(t.pci_bw, 48, 1e-9);
    ZS_ASSERT_REL(t.net_bw, 50, 1e-9);
    ZS_ASSERT_INT_EQ(t.ring.nch, 12);
    ZS_ASSERT_REL(t.ring.bw_intra, 30, 1e-9);
    ZS_ASSERT_INT_EQ(t.nvls_g.nch, 8);
    ZS_ASSERT_REL(t.nvls_g.bw_intra, 40, 1e-9);
    ZS_ASSERT_REL(t.nvls_g.bw_inter, 60, 1e-9);
    /* Two nodes: 8 rail NICs at min(PCIe Gen5 48, NIC 50) = 48 each, 8
     * channels (8 x 48 >= 370.8), no duplication below 50 GB/s on sm90. */
    zs_nccl_topo m = topo(&c, 2, 8);
    ZS_ASSERT_INT_EQ(m.ring.nch, 8);
    ZS_ASSERT_REL(m.ring.bw_inter, 48, 1e-9);
    /* A800: 8 NVLinks x 20 = 160 -> 4 x 40, duplicated to 8 x 20. */
    zs_cluster a = cluster("cluster-a", 2);
    zs_nccl_topo ta = topo(&a, 1, 8);
    ZS_ASSERT_REL(ta.nvl_bw, 160, 1e-9);
    ZS_ASSERT_INT_EQ(ta.ring.nch, 8);
    ZS_ASSERT_REL(ta.ring.bw_intra, 20, 1e-9);
    ZS_ASSERT_INT_EQ(ta.nvls_g.nch, 0); /* no NVLink SHARP on cluster-a */
    /* Groups: the nodes, ranks per node and NICs of the members. */
    zs_err e;
    zs_nccl_topo g;
    int r2[2] = {0, 8}, r4[4] = {0, 1, 8, 9};
    ZS_ASSERT_OK(zs_nccl_topo_group(&c, r2, 2, &g, &e), &e);
    ZS_ASSERT_INT_EQ(g.nnodes, 2);
    ZS_ASSERT_INT_EQ(g.ppn, 1);
    ZS_ASSERT_INT_EQ(g.nics, 1);
    ZS_ASSERT_OK(zs_nccl_topo_group(&a, r4, 4, &g, &e), &e);
    ZS_ASSERT_INT_EQ(g.ppn, 2);
    ZS_ASSERT_INT_EQ(g.nics, 1); /* GPUs 0 and 1 share cluster-a's first NIC */
    ZS_ASSERT_INT_EQ(zs_nccl_topo_init(&c, 1, 9, 0, &g, &e), ZS_EINPUT);
}

/* 2 GPUs: ring. Ring/Simple all-reduce on 2 H200s: latency 8.4 + 2 x 3.4
 * = 15.2 us, bus bandwidth 360, algorithm bandwidth 360 x 2/2. */
static void test_choice_two_gpus(void)
{
    zs_cluster c = cluster("cluster-c", 1);
    zs_nccl_topo t = topo(&c, 1, 2);
    double S = 1 << 30;
    ZS_ASSERT_REL(zs_nccl_model_us(&t, ZS_COLL_ALLREDUCE, S, ZS_NCCL_RING, ZS_NCCL_SIMPLE),
                  15.2 + S / (1000 * 360.0), 1e-9);
    /* all-gather: 8.4 + 3.4, algorithm bandwidth 360 x 2/1 */
    ZS_ASSERT_REL(zs_nccl_model_us(&t, ZS_COLL_ALLGATHER, S, ZS_NCCL_RING, ZS_NCCL_SIMPLE),
                  11.8 + S / (1000 * 720.0), 1e-9);
    /* NVLS on 2 GPUs: 2 x min(60 x .85 x 1/2 x 2, 60) = 102 bus -> 102 alg. */
    ZS_ASSERT_REL(zs_nccl_model_us(&t, ZS_COLL_ALLREDUCE, S, ZS_NCCL_NVLS, ZS_NCCL_SIMPLE),
                  25 + S / (1000 * 102.0), 1e-9);
    for (int k = 0; k < 3; k++)
        for (double b = 8 << 20; b <= 8e9; b *= 8) {
            zs_nccl_choice ch = choose(&t, (zs_coll_kind)k, b, 0);
            ZS_ASSERT_INT_EQ(ch.algo, ZS_NCCL_RING);
            ZS_ASSERT_INT_EQ(ch.proto, ZS_NCCL_SIMPLE);
        }
    /* Small messages: ring/LL (6.6 + 2 x 0.6 us, bus bandwidth min(141, 180)). */
    zs_nccl_choice ch = choose(&t, ZS_COLL_ALLREDUCE, 4096, 0);
    ZS_ASSERT_INT_EQ(ch.algo, ZS_NCCL_RING);
    ZS_ASSERT_INT_EQ(ch.proto, ZS_NCCL_LL);
    ZS_ASSERT_REL(ch.nccl_us, 7.8 + 4096 / (1000 * 141.0), 1e-9);
}

/* 8 GPUs of an NVSwitch node with NVLink SHARP: NVLS for all-reduce from
 * a few MB (8 x min(40 x .85 x 7/8 x 2, 60) = 476 bus, x 8/14 = 272 alg,
 * 25 us) against ring/Simple (56 us, 360 x 8/14 = 205.7); all-gather and
 * reduce-scatter stay on the ring (NVLS: 8 x 40 x .85 x 7/8 x 7/8 = 208,
 * no ratio, against 360 x 8/7). Without SHARP: ring. */
static void test_choice_nvls(void)
{
    zs_cluster c = cluster("cluster-c", 1);
    zs_nccl_topo t = topo(&c, 1, 8);
    double S = 1 << 30;
    ZS_ASSERT_REL(zs_nccl_model_us(&t, ZS_COLL_ALLREDUCE, S, ZS_NCCL_NVLS, ZS_NCCL_SIMPLE),
                  25 + S / (1000 * 476.0 * 8 / 14), 1e-6);
    ZS_ASSERT_REL(zs_nccl_model_us(&t, ZS_COLL_ALLREDUCE, S, ZS_NCCL_RING, ZS_NCCL_SIMPLE),
                  56 + S / (1000 * 360.0 * 8 / 14), 1e-6);
    ZS_ASSERT_REL(zs_nccl_model_us(&t, ZS_COLL_ALLGATHER, S, ZS_NCCL_NVLS, ZS_NCCL_SIMPLE),
                  25 + S / (1000 * 208.25), 1e-6);
    for (double b = 8 << 20; b <= 8e9; b *= 4) {
        ZS_ASSERT_INT_EQ(choose(&t, ZS_COLL_ALLREDUCE, b, 0).algo, ZS_NCCL_NVLS);
        ZS_ASSERT_INT_EQ(choose(&t, ZS_COLL_ALLGATHER, b, 0).algo, ZS_NCCL_RING);
        ZS_ASSERT_INT_EQ(choose(&t, ZS_COLL_REDUCESCATTER, b, 0).algo, ZS_NCCL_RING);
    }
    /* 4 GPUs: NVLS 4 x min(60 x .85 x 3/4 x 2, 60) = 240 bus loses to the ring's 360. */
    zs_nccl_topo t4 = topo(&c, 1, 4);
    ZS_ASSERT_INT_EQ(choose(&t4, ZS_COLL_ALLREDUCE, S, 0).algo, ZS_NCCL_RING);
    c.nvls = 0;
    zs_nccl_topo t0 = topo(&c, 1, 8);
    ZS_ASSERT_INT_EQ(choose(&t0, ZS_COLL_ALLREDUCE, S, 0).algo, ZS_NCCL_RING);
    CU_ASSERT(zs_nccl_model_us(&t0, ZS_COLL_ALLREDUCE, S, ZS_NCCL_NVLS, ZS_NCCL_SIMPLE) < 0);
}

/* Two nodes of 8 A800s (4 x 200 Gb/s NICs, no NVLS): a 64 KB all-reduce
 * runs on the tree (LL: 6.8 + 2(7 x 0.6 + 5.0) = 25.2 us; bus bandwidth
 * min(.92 x 4 x 30, 4 x 23.6) / 3.8 = 24.84, x .5, x .6 tree correction
 * at 64 KB) rather than the ring (LL: 6.6 + 28 x max(.6, 1.0) + 2 x 2.7 =
 * 40 us); a 1 GB one on the ring (Simple: 4 x 24 = 96 bus x 16/30). */
static void test_choice_two_nodes(void)
{
    zs_cluster a = cluster("cluster-a", 2);
    zs_nccl_topo t = topo(&a, 2, 8);
    double s = 65536, S = 1 << 30;
    ZS_ASSERT_REL(zs_nccl_model_us(&t, ZS_COLL_ALLREDUCE, s, ZS_NCCL_TREE, ZS_NCCL_LL),
                  25.2 + s / (1000 * 94.4 / 3.8 * 0.5 * 0.6), 1e-6);
    ZS_ASSERT_REL(zs_nccl_model_us(&t, ZS_COLL_ALLREDUCE, s, ZS_NCCL_RING, ZS_NCCL_LL),
                  40.0 + s / (1000 * 39.0 * 16 / 30), 1e-6);
    zs_nccl_choice small = choose(&t, ZS_COLL_ALLREDUCE, s, 0);
    ZS_ASSERT_INT_EQ(small.algo, ZS_NCCL_TREE);
    ZS_ASSERT_INT_EQ(small.proto, ZS_NCCL_LL);
    zs_nccl_choice big = choose(&t, ZS_COLL_ALLREDUCE, S, 0);
    ZS_ASSERT_INT_EQ(big.algo, ZS_NCCL_RING);
    ZS_ASSERT_INT_EQ(big.proto, ZS_NCCL_SIMPLE);
    /* Ring/Simple across nodes: 8.4 + 28 x max(3.4, 3 x 1.0) + 2 x 14, x 1.4
     * (the plateau above 64 B per channel and rank). */
    ZS_ASSERT_REL(big.nccl_us, (8.4 + 28 * 3.4 + 2 * 14) * 1.4 + S / (1000 * 96.0 * 16 / 30), 1e-6);
    /* H200 nodes with NVLS: the tree for small sizes, NVLS-tree for large
     * ones; with NCCL_ALGO=ring,tree the ring takes the large ones. */
    zs_cluster c = cluster("cluster-c", 2);
    zs_nccl_topo h = topo(&c, 2, 8);
    ZS_ASSERT_INT_EQ(choose(&h, ZS_COLL_ALLREDUCE, s, 0).algo, ZS_NCCL_TREE);
    ZS_ASSERT_INT_EQ(choose(&h, ZS_COLL_ALLREDUCE, S, 0).algo, ZS_NCCL_NVLS_TREE);
    unsigned rt = (1u << ZS_NCCL_RING) | (1u << ZS_NCCL_TREE);
    ZS_ASSERT_INT_EQ(choose(&h, ZS_COLL_ALLREDUCE, S, rt).algo, ZS_NCCL_RING);
    ZS_ASSERT_INT_EQ(choose(&h, ZS_COLL_ALLGATHER, S, 0).algo, ZS_NCCL_RING);
    /* One GPU per node: PAT for all-gather (8 + 2.8 x 2 us) only when asked
     * against the ring; NVLS impossible. */
    zs_nccl_topo p = topo(&c, 2, 1);
    CU_ASSERT(zs_nccl_model_us(&p, ZS_COLL_ALLGATHER, S, ZS_NCCL_PAT, ZS_NCCL_SIMPLE) > 0);
    CU_ASSERT(zs_nccl_model_us(&p, ZS_COLL_ALLREDUCE, S, ZS_NCCL_PAT, ZS_NCCL_SIMPLE) < 0);
    ZS_ASSERT_INT_EQ(choose(&p, ZS_COLL_ALLGATHER, S, 1u << ZS_NCCL_PAT).algo, ZS_NCCL_PAT);
    zs_err e;
    zs_nccl_choice ch;
    ZS_ASSERT_INT_EQ(zs_nccl_choose(&p, ZS_COLL_ALLREDUCE, S, 1u << ZS_NCCL_NVLS, 0, NULL, &ch, &e),
                     ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "NCCL_ALGO");
}

/* NCCL's per-channel caps are in the units of its estimates, so a fitted
 * link efficiency scales them as it scales the bandwidths they cap. Two
 * H200 nodes (8 channels): NVLS-tree's NVLink side is 40 x 0.85 x 7/8 x 2
 * = 59.5 GB/s per channel, its network side 2 x 48 = 96, NCCL's cap 57.7
 * binds; with nvlink_eff 1.05 the NVLink side (62.5) still limits and the
 * cap becomes 60.585. A network efficiency does not move it; on 4 nodes
 * (cap 45.5, network side 48) the network's scale does. The tree across
 * nodes (cap 8 x 41.4 on 2 nodes, below 0.92 x 8 x 48) scales with the
 * network's (algBw half the bus bandwidth). */
static void test_cap_scaling(void)
{
    zs_cluster c = cluster("cluster-c", 4);
    zs_nccl_topo t2 = topo(&c, 2, 8), t4 = topo(&c, 4, 8);
    zs_nccl_params p;
    zs_nccl_params_default(&p);
    zs_err e;
    zs_nccl_choice ch;
    double S = 1 << 30;
    double ratio = 16.0 / 30.0; /* algBw = busBw x n / nsteps, 2(n-1) steps */
    ZS_ASSERT_OK(
        zs_nccl_eval(&t2, ZS_COLL_ALLREDUCE, S, ZS_NCCL_NVLS_TREE, ZS_NCCL_SIMPLE, &p, &ch, &e),
        &e);
    ZS_ASSERT_REL(ch.data_s, S / (8 * 57.7 * ratio * 1e9), 1e-9);
    p.v[ZS_NP_NVL_EFF] = 1.05;
    ZS_ASSERT_OK(
        zs_nccl_eval(&t2, ZS_COLL_ALLREDUCE, S, ZS_NCCL_NVLS_TREE, ZS_NCCL_SIMPLE, &p, &ch, &e),
        &e);
    ZS_ASSERT_REL(ch.data_s, S / (8 * 57.7 * 1.05 * ratio * 1e9), 1e-9);
    p.v[ZS_NP_NVL_EFF] = 1.0;
    p.v[ZS_NP_NET_EFF] = 0.9;
    ZS_ASSERT_OK(
        zs_nccl_eval(&t2, ZS_COLL_ALLREDUCE, S, ZS_NCCL_NVLS_TREE, ZS_NCCL_SIMPLE, &p, &ch, &e),
        &e);
    ZS_ASSERT_REL(ch.data_s, S / (8 * 57.7 * ratio * 1e9), 1e-9);
    ZS_ASSERT_OK(
        zs_nccl_eval(&t4, ZS_COLL_ALLREDUCE, S, ZS_NCCL_NVLS_TREE, ZS_NCCL_SIMPLE, &p, &ch, &e),
        &e);
    ZS_ASSERT_REL(ch.data_s, S / (8 * 45.5 * 0.9 * (32.0 / 62) * 1e9), 1e-9);
    ZS_ASSERT_OK(zs_nccl_eval(&t2, ZS_COLL_ALLREDUCE, S, ZS_NCCL_TREE, ZS_NCCL_SIMPLE, &p, &ch, &e),
                 &e);
    ZS_ASSERT_REL(ch.data_s, S / (8 * 41.4 * 0.9 * 0.5 * 1e9), 1e-9);
}

/* The ring's latency grows with its steps: 3.4 us (ring/Simple over
 * NVLink) per step, 2(n-1) steps for all-reduce and n-1 for all-gather;
 * across nodes the network steps cost 14 us. A fitted latency scale
 * multiplies all of it. */
static void test_latency_growth(void)
{
    zs_cluster c = cluster("cluster-c", 4);
    zs_nccl_params p;
    zs_nccl_params_default(&p);
    zs_err e;
    zs_nccl_choice ch;
    for (int n = 2; n <= 8; n++) {
        zs_nccl_topo t = topo(&c, 1, n);
        ZS_ASSERT_OK(
            zs_nccl_eval(&t, ZS_COLL_ALLREDUCE, 1e6, ZS_NCCL_RING, ZS_NCCL_SIMPLE, &p, &ch, &e),
            &e);
        ZS_ASSERT_REL(ch.lat_s, (8.4 + 2 * (n - 1) * 3.4) * 1e-6, 1e-9);
        ZS_ASSERT_OK(
            zs_nccl_eval(&t, ZS_COLL_ALLGATHER, 1e6, ZS_NCCL_RING, ZS_NCCL_LL, &p, &ch, &e), &e);
        ZS_ASSERT_REL(ch.lat_s, (6.6 + (n - 1) * 0.6) * 1e-6, 1e-9);
    }
    double prev = 0;
    for (int nodes = 1; nodes <= 4; nodes++) {
        zs_nccl_topo t = topo(&c, nodes, 8);
        ZS_ASSERT_OK(
            zs_nccl_eval(&t, ZS_COLL_ALLGATHER, 1e6, ZS_NCCL_RING, ZS_NCCL_SIMPLE, &p, &ch, &e),
            &e);
        int n = 8 * nodes, inter = nodes - 1;
        double intra = 3.4; /* max(3.4, 3 x 1.0 us network overhead) across nodes */
        ZS_ASSERT_REL(ch.lat_s, (8.4 + (n - 1 - inter) * intra + inter * 14.0) * 1e-6, 1e-9);
        CU_ASSERT(ch.lat_s > prev);
        prev = ch.lat_s;
    }
    p.v[ZS_NP_INTRA_LAT] = 0.5;
    zs_nccl_topo t = topo(&c, 1, 8);
    ZS_ASSERT_OK(
        zs_nccl_eval(&t, ZS_COLL_ALLREDUCE, 1e6, ZS_NCCL_RING, ZS_NCCL_SIMPLE, &p, &ch, &e), &e);
    ZS_ASSERT_REL(ch.lat_s, 0.5 * (8.4 + 14 * 3.4) * 1e-6, 1e-9);
    /* All-to-all: one step; more bytes, more time; finite. */
    zs_nccl_choice a1, a2;
    ZS_ASSERT_OK(zs_nccl_choose(&t, ZS_COLL_ALLTOALL, 1e6, 0, 0, NULL, &a1, &e), &e);
    ZS_ASSERT_OK(zs_nccl_choose(&t, ZS_COLL_ALLTOALL, 1e8, 0, 0, NULL, &a2, &e), &e);
    ZS_ASSERT_INT_EQ(a1.algo, ZS_NCCL_P2P);
    CU_ASSERT(a2.seconds > a1.seconds && isfinite(a2.seconds));
}

/* Fit round trip on NCCL's model alone: observations drawn from known
 * parameters on one node (2 and 4 GPUs) and on two nodes recover them,
 * the network's own latency scale and size ramp included (the single-node
 * runs pin the intra-node ones); without the single-node runs on two GPU
 * counts one node count leaves the network latency at NCCL's value. */
static void test_fit_round_trip(void)
{
    zs_cluster c = cluster("cluster-c", 2);
    zs_nccl_params truth;
    zs_nccl_params_default(&truth);
    truth.v[ZS_NP_NVL_EFF] = 1.02;
    truth.v[ZS_NP_NET_EFF] = 0.9;
    truth.v[ZS_NP_INTRA_LAT] = 0.6;
    truth.v[ZS_NP_RAMP_HALF] = 8e6;
    truth.v[ZS_NP_RAMP_POW] = 0.9;
    truth.v[ZS_NP_RED_FRAC] = 0.25;
    truth.v[ZS_NP_NET_LAT] = 0.7;
    truth.v[ZS_NP_NET_RAMP_HALF] = 3e6;
    truth.v[ZS_NP_NET_RAMP_POW] = 0.6;
    truth.fitted[ZS_NP_NET_RAMP_HALF] = 1; /* the model reads it */
    zs_nccl_obs obs[128];
    size_t n = 0;
    static const int shapes[3][2] = {{1, 2}, {1, 4}, {2, 8}};
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 3; k++)
            for (double b = 8 << 10; b <= 4e9; b *= 4) {
                zs_nccl_topo t = topo(&c, shapes[s][0], shapes[s][1]);
                zs_nccl_obs *o = &obs[n++];
                memset(o, 0, sizeof *o);
                o->kind = (zs_coll_kind)k;
                o->nodes = shapes[s][0];
                o->ppn = shapes[s][1];
                /* the two-node all-reduces as NCCL_ALGO=ring runs them */
                o->algo_mask = s == 2 && k == 2 ? 1u << ZS_NCCL_RING : 0;
                o->nbytes = b;
                zs_nccl_choice ch = choose(&t, o->kind, b, o->algo_mask);
                zs_err e;
                ZS_ASSERT_OK(zs_nccl_choose(&t, o->kind, b, o->algo_mask, 0, &truth, &ch, &e), &e);
                o->seconds = ch.seconds;
            }
    zs_nccl_params fit;
    zs_err e;
    ZS_ASSERT_OK(zs_nccl_fit(&c, obs, n, &fit, &e), &e);
    static const int want[] = {ZS_NP_NVL_EFF,   ZS_NP_NET_EFF,       ZS_NP_INTRA_LAT,
                               ZS_NP_RAMP_HALF, ZS_NP_RAMP_POW,      ZS_NP_RED_FRAC,
                               ZS_NP_NET_LAT,   ZS_NP_NET_RAMP_HALF, ZS_NP_NET_RAMP_POW};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CU_ASSERT(fit.fitted[want[i]]);
        ZS_ASSERT_REL(fit.v[want[i]], truth.v[want[i]], 1e-3);
    }
    for (size_t i = 0; i < n; i++) {
        ZS_ASSERT_REL(obs[i].predicted, obs[i].seconds, 1e-4);
        if (obs[i].nodes == 2 && obs[i].kind == ZS_COLL_ALLREDUCE)
            ZS_ASSERT_INT_EQ(obs[i].algo, ZS_NCCL_RING);
    }
    /* The two-node runs alone: one node count, no single-node latency. */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (obs[i].nodes == 2)
            obs[m++] = obs[i];
    ZS_ASSERT_OK(zs_nccl_fit(&c, obs, m, &fit, &e), &e);
    CU_ASSERT(!fit.fitted[ZS_NP_NET_LAT] && !fit.fitted[ZS_NP_NET_RAMP_HALF]);
    ZS_ASSERT_REL(fit.v[ZS_NP_NET_LAT], 1.0, 0);
    /* An observation that does not fit the cluster is an input error. */
    obs[0].ppn = 16;
    ZS_ASSERT_INT_EQ(zs_nccl_fit(&c, obs, n, &fit, &e), ZS_EINPUT);
}

/* A multi-node nccl-tests log (2 hosts x 8 GPUs, NCCL_ALGO on the command
 * line, NCCL INFO lines, -c 0 so #wrong is N/A). */
static const char two_nodes[] =
    "$ mpirun -np 16 -x NCCL_ALGO=Ring ./build/all_reduce_perf -b 8M -e 16M -f 2 -g 1 -c 0\n"
    "# nThread 1 nGpus 1 minBytes 8388608 maxBytes 16777216 step: 2(factor)\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  100 on node-a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  101 on node-a device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#  Rank  2 Group  0 Pid  102 on node-a device  2 [0x3a] NVIDIA H100 80GB HBM3\n"
    "#  Rank  3 Group  0 Pid  103 on node-a device  3 [0x5d] NVIDIA H100 80GB HBM3\n"
    "#  Rank  4 Group  0 Pid  104 on node-a device  4 [0x9a] NVIDIA H100 80GB HBM3\n"
    "#  Rank  5 Group  0 Pid  105 on node-a device  5 [0xab] NVIDIA H100 80GB HBM3\n"
    "#  Rank  6 Group  0 Pid  106 on node-a device  6 [0xba] NVIDIA H100 80GB HBM3\n"
    "#  Rank  7 Group  0 Pid  107 on node-a device  7 [0xdb] NVIDIA H100 80GB HBM3\n"
    "#  Rank  8 Group  0 Pid  200 on node-b device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  9 Group  0 Pid  201 on node-b device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#  Rank 10 Group  0 Pid  202 on node-b device  2 [0x3a] NVIDIA H100 80GB HBM3\n"
    "#  Rank 11 Group  0 Pid  203 on node-b device  3 [0x5d] NVIDIA H100 80GB HBM3\n"
    "#  Rank 12 Group  0 Pid  204 on node-b device  4 [0x9a] NVIDIA H100 80GB HBM3\n"
    "#  Rank 13 Group  0 Pid  205 on node-b device  5 [0xab] NVIDIA H100 80GB HBM3\n"
    "#  Rank 14 Group  0 Pid  206 on node-b device  6 [0xba] NVIDIA H100 80GB HBM3\n"
    "#  Rank 15 Group  0 Pid  207 on node-b device  7 [0xdb] NVIDIA H100 80GB HBM3\n"
    "node-a:100:100 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
    "#\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "     8388608       4194304      half     sum      -1    120.0   69.91  131.07    N/A    "
    "110.0   76.26  142.99    N/A\n"
    "    16777216       8388608      half     sum      -1    200.0   83.89  157.29    N/A    "
    "190.0   88.30  165.57    N/A\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 144.23\n";

static void test_multinode_log(void)
{
    zs_meas_set s;
    zs_meas_set_init(&s);
    zs_err e;
    const char *p = zs_test_write("two-nodes.txt", two_nodes);
    ZS_ASSERT_OK(zs_meas_read(&s, p, &e), &e);
    ZS_ASSERT_INT_EQ(s.n, 2);
    CU_ASSERT_STRING_EQUAL(s.v[0].op, "all-reduce");
    ZS_ASSERT_INT_EQ(s.v[0].gpus, 16);
    ZS_ASSERT_INT_EQ(s.v[0].nodes, 2);
    ZS_ASSERT_INT_EQ(s.v[0].algo_mask, 1u << ZS_NCCL_RING);
    ZS_ASSERT_INT_EQ(s.v[0].proto_mask, 0);
    ZS_ASSERT_NEAR(s.v[1].seconds, 200e-6, 1e-15);
    ZS_ASSERT_STR_CONTAINS(s.gpu, "H100");
    /* The in-place column on request. */
    zs_meas_set_clear(&s);
    s.nccl_inplace = 1;
    ZS_ASSERT_OK(zs_meas_read(&s, p, &e), &e);
    ZS_ASSERT_NEAR(s.v[1].seconds, 190e-6, 1e-15);
    /* --nccl-algo that contradicts the log; one that agrees is fine. */
    zs_meas_set_clear(&s);
    s.nccl_algo_mask = 1u << ZS_NCCL_TREE;
    ZS_ASSERT_INT_EQ(zs_meas_read(&s, p, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "--nccl-algo");
    ZS_ASSERT_INT_EQ(s.n, 0);
    s.nccl_algo_mask = 1u << ZS_NCCL_RING;
    ZS_ASSERT_OK(zs_meas_read(&s, p, &e), &e);
    /* A log that does not say takes the option. */
    char *quiet = strdup(two_nodes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(quiet);
    memcpy(strstr(quiet, "NCCL_ALGO=Ring"), "NCCL_XXXX=Ring", 14);
    memcpy(strstr(quiet, "NCCL_ALGO set"), "NCCL_XXXX set", 13);
    zs_meas_set_clear(&s);
    s.nccl_proto_mask = 1u << ZS_NCCL_SIMPLE;
    ZS_ASSERT_OK(zs_meas_read(&s, zs_test_write("quiet.txt", quiet), &e), &e);
    ZS_ASSERT_INT_EQ(s.v[0].algo_mask, 0);
    ZS_ASSERT_INT_EQ(s.v[0].proto_mask, 1u << ZS_NCCL_SIMPLE);
    /* 15 ranks on 2 hosts: not the same number per node. */
    char *odd = strdup(two_nodes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(odd);
    char *r15 = strstr(odd, "#  Rank 15");
    memset(r15, ' ', (size_t)(strchr(r15, '\n') - r15));
    zs_meas_set_clear(&s);
    ZS_ASSERT_INT_EQ(zs_meas_read(&s, zs_test_write("odd.txt", odd), &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "15 ranks on 2 hosts");
    /* A bad NCCL_ALGO value names the file. */
    char *bad = strdup(two_nodes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    memcpy(strstr(bad, "NCCL_ALGO=Ring"), "NCCL_ALGO=Warp", 14);
    ZS_ASSERT_INT_EQ(zs_meas_read(&s, zs_test_write("badalgo.txt", bad), &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "badalgo.txt");
    free(quiet);
    free(odd);
    free(bad);
    zs_meas_set_clear(&s);
}

/* Every shape published nccl-tests logs come in (models/zs_nccl_log.c):
 * the shared multi-node samples as published, then variants of the
 * synthetic two-node log with launcher prefixes, the pre-2.10 layout,
 * concatenated runs and hostnames of any form. */
static void expect_log(const char *name, const char *text, int points, const char *op, int gpus,
                       int nodes)
{
    zs_meas_set s;
    zs_meas_set_init(&s);
    zs_err e;
    ZS_ASSERT_OK(zs_meas_read(&s, zs_test_write(name, text), &e), &e);
    ZS_ASSERT_INT_EQ(s.n, points);
    if (s.n) {
        CU_ASSERT_STRING_EQUAL(s.v[s.n - 1].op, op);
        ZS_ASSERT_INT_EQ(s.v[s.n - 1].gpus, gpus);
        ZS_ASSERT_INT_EQ(s.v[s.n - 1].nodes, nodes);
    }
    zs_meas_set_clear(&s);
}

/* text with `prefix` before every line (and, with mid != NULL, inside the
 * Rank lines after " on "). Caller frees. */
static char *prefixed(const char *text, const char *prefix, const char *mid)
{
    size_t n = strlen(text), pl = strlen(prefix), ml = mid ? strlen(mid) : 0;
    char *out = malloc(n * 2 + 64 * (pl + ml) + 1024);
    char *o = out;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        memcpy(o, prefix, pl), o += pl;
        const char *on = mid ? strstr(p, " on ") : NULL;
        if (on && on < p + len) {
            size_t head = (size_t)(on - p) + 4;
            memcpy(o, p, head), o += head;
            memcpy(o, mid, ml), o += ml;
            memcpy(o, p + head, len - head), o += len - head;
        } else {
            memcpy(o, p, len), o += len;
        }
        p += len;
    }
    *o = '\0';
    return out;
}

static void test_log_shapes(void)
{
    static const struct {
        const char *rel;
        int points, gpus, nodes;
    } shared[] = {
        {"reference/multinode/A100-2x8-16x100-all_reduce-ocihpcoke.txt", 31, 16, 2},
        {"reference/multinode/H100-1x8-8x400-all_reduce-nccltests290.txt", 6, 8, 1},
        {"reference/multinode/H100-2x8-8x400-all_reduce-nccltests309a.txt", 32, 16, 2},
        {"reference/multinode/H200-2x8-8x400-all_reduce-nebiusrunai.txt", 5, 16, 2},
        {"reference/multinode/echo-a100-azure/nccl_1.log", 0, 1, 1}, /* one GPU: no point */
        {"reference/multinode/echo-a100-azure/nccl_2.log", 28, 2, 1},
        {"reference/multinode/echo-a100-azure/nccl_4.log", 28, 4, 1},
        {"reference/multinode/echo-a100-azure/nccl_8.log", 28, 8, 1},
        {"reference/multinode/echo-a100-azure/nccl_16.log", 25, 16, 2},
    };
    zs_err e;
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
        const char *p = zs_test_shared(shared[i].rel);
        if (!p)
            continue; /* zs_test_shared said it is absent */
        zs_meas_set s;
        zs_meas_set_init(&s);
        int rc = zs_meas_read(&s, p, &e);
        if (rc)
            fprintf(stderr, "%s: %s: %s\n", shared[i].rel, e.where, e.what);
        ZS_ASSERT_OK(rc, &e);
        ZS_ASSERT_INT_EQ(s.n, shared[i].points);
        for (size_t k = 0; k < s.n; k++) {
            CU_ASSERT_STRING_EQUAL(s.v[k].op, "all-reduce");
            ZS_ASSERT_INT_EQ(s.v[k].gpus, shared[i].gpus);
            ZS_ASSERT_INT_EQ(s.v[k].nodes, shared[i].nodes);
        }
        zs_meas_set_clear(&s);
    }
    /* mpirun --tag-output, srun --label, pdsh, and a tag inside a line */
    char *t = prefixed(two_nodes, "[1,0]<stdout>:", NULL);
    expect_log("tagged.txt", t, 2, "all-reduce", 16, 2);
    free(t);
    t = prefixed(two_nodes, "  0: ", NULL);
    expect_log("label.txt", t, 2, "all-reduce", 16, 2);
    free(t);
    t = prefixed(two_nodes, "login-07.cluster.example.org: ", NULL);
    expect_log("pdsh.txt", t, 2, "all-reduce", 16, 2);
    free(t);
    t = prefixed(two_nodes, "[1,0]<stdout>:", "[1,12]<stdout>:");
    expect_log("midtag.txt", t, 2, "all-reduce", 16, 2);
    free(t);
    /* Hostnames of any form: long FQDNs differing only at the end, IPs. */
    char *h = strdup(two_nodes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    char *long_names = malloc(strlen(h) * 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(long_names);
    long_names[0] = '\0';
    for (char *line = strtok(h, "\n"); line; line = strtok(NULL, "\n")) {
        char *on = strstr(line, " on node-");
        if (on) {
            char host = on[9];
            on[4] = '\0';
            strcat(long_names, line);
            strcat(long_names,
                   "gpu-worker-pool-a100-zone-b.region-1.internal.compute.example.com.");
            strcat(long_names, host == 'a' ? "node-0001" : "node-0002");
            strcat(long_names, on + 10);
        } else {
            strcat(long_names, line);
        }
        strcat(long_names, "\n");
    }
    expect_log("fqdn.txt", long_names, 2, "all-reduce", 16, 2);
    free(long_names);
    free(h);
    /* The pre-2.10 layout: no root, an error column of maximum errors,
     * judged by the run's "Out of bounds values" line. */
    static const char old[] =
        "# nThread 1 nGpus 4 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20\n"
        "#   Rank  0 Pid  1 on node-000000 device  0 [0x00] A100-SXM4-40GB\n"
        "#   Rank  1 Pid  1 on node-000000 device  1 [0x00] A100-SXM4-40GB\n"
        "#   Rank  2 Pid  1 on node-000000 device  2 [0x00] A100-SXM4-40GB\n"
        "#   Rank  3 Pid  1 on node-000000 device  3 [0x00] A100-SXM4-40GB\n"
        "#       size         count      type   redop     time   algbw   busbw  error     time "
        "  algbw   busbw  error\n"
        "     8388608       2097152     float     sum    128.5   65.30   97.95  2e-07    126.7 "
        "  66.20   99.30  2e-07\n"
        "    16777216       4194304     float     sum    187.0   89.72  134.57  2e-07    187.4 "
        "  89.54  134.32  2e-07\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 116.5\n";
    expect_log("old.log", old, 2, "all-reduce", 4, 1);
    zs_meas_set s;
    zs_meas_set_init(&s);
    ZS_ASSERT_OK(zs_meas_read(&s, zs_test_write("old.log", old), &e), &e);
    CU_ASSERT_STRING_EQUAL(s.gpu, "A100-SXM4-40GB");
    zs_meas_set_clear(&s);
    char *failed = strdup(old);
    CU_ASSERT_PTR_NOT_NULL_FATAL(failed);
    memcpy(strstr(failed, ": 0 OK"), ": 3 FA", 6);
    ZS_ASSERT_INT_EQ(zs_meas_read(&s, zs_test_write("failed.log", failed), &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "3 out-of-bounds");
    ZS_ASSERT_STR_CONTAINS(e.where, "failed.log:");
    free(failed);
    /* Old all-gather rows leave redop blank: 11 columns. */
    static const char old_ag[] =
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor)\n"
        "#   Rank  0 Pid  1 on n0 device  0 [0x00] A100-SXM4-40GB\n"
        "#   Rank  1 Pid  1 on n0 device  1 [0x00] A100-SXM4-40GB\n"
        "#       size         count      type   redop     time   algbw   busbw  error     time "
        "  algbw   busbw  error\n"
        "     8388608       1048576     float    128.5   65.30   32.6  0e+00    126.7 "
        "  66.20   33.1  0e+00\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 32.8\n";
    expect_log("old_ag.log", old_ag, 1, "all-gather", 2, 1);
    /* Several runs in one file, each with its own collective and ranks. */
    size_t cat_n = strlen(two_nodes) + strlen(old) + strlen(old_ag) + 64;
    char *cat = malloc(cat_n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cat);
    snprintf(cat, cat_n, "%s%s$ ./all_gather_perf -g 2\n%s", two_nodes, old, old_ag);
    zs_meas_set_init(&s);
    ZS_ASSERT_OK(zs_meas_read(&s, zs_test_write("runs.txt", cat), &e), &e);
    ZS_ASSERT_INT_EQ(s.n, 5);
    ZS_ASSERT_INT_EQ(s.v[0].gpus, 16);
    ZS_ASSERT_INT_EQ(s.v[2].gpus, 4);
    ZS_ASSERT_INT_EQ(s.v[2].nodes, 1);
    CU_ASSERT_STRING_EQUAL(s.v[4].op, "all-gather");
    zs_meas_set_clear(&s);
    /* ... and a run cut short in the middle of them is named. */
    memcpy(strstr(strstr(cat, "node-000000"), "Avg bus"), "Avg xus", 7);
    ZS_ASSERT_INT_EQ(zs_meas_read(&s, zs_test_write("cut.txt", cat), &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "truncated");
    ZS_ASSERT_STR_CONTAINS(e.where, "cut.txt:");
    free(cat);
    zs_meas_set_clear(&s);
}

/* The synthetic two-node log through the calibration: fitted with the
 * one-node reference data on the H100 cluster, its points are explained by
 * the ring (NCCL_ALGO=Ring) and priced with the network's efficiency. */
static void test_multinode_fit(void)
{
    zs_meas_set s;
    zs_meas_set_init(&s);
    zs_err e;
    ZS_ASSERT_OK(zs_meas_read(&s, zs_test_write("two-nodes.txt", two_nodes), &e), &e);
    zs_cluster c = cluster("dgx-h100", 2);
    zs_fit_opts fo = {NULL, NULL, NULL, &c};
    zs_calib *cal = NULL;
    ZS_ASSERT_OK(zs_calib_fit(&s, &fo, &cal, &e), &e);
    const zs_nccl_params *p = zs_calib_nccl(cal);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT(p->fitted[ZS_NP_NET_EFF]);
    CU_ASSERT(!p->fitted[ZS_NP_NVL_EFF]);
    zs_model m;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    zs_cost *cc = zs_cost_calibrated_new(&m, &c, cal);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cc);
    double pred;
    zs_nccl_choice ch;
    ZS_ASSERT_OK(zs_calib_predict(cc, cal, &s.v[1], NULL, &pred, &ch, &e), &e);
    ZS_ASSERT_INT_EQ(ch.algo, ZS_NCCL_RING);
    /* Two points, one free parameter (fewer points than the ramp needs). */
    ZS_ASSERT_REL(pred, s.v[1].seconds, 0.25);
    /* The fitted network reaches the NIC links: a 2-node ring on DGX H100
     * has 16 channels at 24 GB/s (8 at NCCL's 48 GB/s Gen5 PCIe figure,
     * duplicated) over 8 NICs, 48 GB/s a NIC, times net_eff; latency half
     * of NCCL's 14 us network step on each end. */
    double lat, bw;
    CU_ASSERT_FATAL(zs_calib_link(cal, ZS_LINK_NIC, &lat, &bw));
    ZS_ASSERT_REL(bw, 48e9 * p->v[ZS_NP_NET_EFF], 1e-9);
    ZS_ASSERT_REL(lat, 7e-6, 1e-9);
    /* A cluster with those figures applied keeps NCCL's view at the line
     * rate: net_eff scales it once, not on top of the achieved rate. */
    zs_cluster applied = c;
    zs_calib_apply_links(cal, &applied);
    ZS_ASSERT_REL(applied.nic_gbps, bw * 8 / 1e9, 1e-12);
    zs_nccl_topo line = topo(&c, 2, 8), seen = topo(&applied, 2, 8);
    ZS_ASSERT_REL(seen.net_bw, line.net_bw, 0);
    ZS_ASSERT_INT_EQ(seen.ring.nch, line.ring.nch);
    /* The one builder every command uses puts the same figures into the
     * cluster the backends run on, and prices as the calibrated model. */
    zs_cluster run_on = c;
    zs_cost *built = NULL;
    ZS_ASSERT_OK(zs_cost_build(&m, &run_on, cal, &built, &e), &e);
    ZS_ASSERT_REL(run_on.nic_gbps, applied.nic_gbps, 0);
    ZS_ASSERT_REL(run_on.nic_latency_us, applied.nic_latency_us, 0);
    CU_ASSERT_STRING_EQUAL(built->ops->name, zs_cost_model_for(cal)->name);
    CU_ASSERT_STRING_EQUAL(built->ops->name, "calibrated");
    ZS_ASSERT_REL(zs_cost_p2p(built, 0, 8, 1e8), zs_cost_p2p(cc, 0, 8, 1e8), 0);
    zs_cost_free(built);
    zs_cluster plain = c;
    ZS_ASSERT_OK(zs_cost_build(&m, &plain, NULL, &built, &e), &e);
    CU_ASSERT_STRING_EQUAL(built->ops->name, "analytic");
    ZS_ASSERT_REL(plain.nic_gbps, c.nic_gbps, 0); /* untouched without a calibration */
    zs_cost_free(built);
    /* The same log on a cluster with 4 GPUs per node does not fit. */
    zs_cluster small = c;
    small.gpus_per_node = 4;
    small.nics_per_node = 4;
    zs_calib *bad = NULL;
    fo.cluster = &small;
    ZS_ASSERT_INT_EQ(zs_calib_fit(&s, &fo, &bad, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "8 GPUs per node");
    zs_cost_free(cc);
    zs_calib_free(cal);
    zs_meas_set_clear(&s);
}

/* Bytes over links per algorithm: a single-node ring sends the bus bytes
 * over NVLink; across 2 nodes a node's rings leave it with the bus bytes
 * and each GPU forwards 7/8 of them inside; NVLS sends the buffer to the
 * switch once; all-to-all its pairs' parts. */
static void test_traffic(void)
{
    zs_cluster c = cluster("cluster-c", 2);
    zs_nccl_traffic x;
    double S = 1 << 30;
    zs_nccl_topo t1 = topo(&c, 1, 8), t2 = topo(&c, 2, 8);
    zs_nccl_traffic_of(&t1, ZS_COLL_ALLREDUCE, S, ZS_NCCL_RING, &x);
    ZS_ASSERT_REL(x.gpu_intra, 2.0 * 7 / 8 * S, 1e-12);
    ZS_ASSERT_NEAR(x.node_net, 0, 0);
    zs_nccl_traffic_of(&t1, ZS_COLL_ALLREDUCE, S, ZS_NCCL_NVLS, &x);
    ZS_ASSERT_REL(x.gpu_intra, S, 1e-12);
    zs_nccl_traffic_of(&t2, ZS_COLL_ALLGATHER, S, ZS_NCCL_RING, &x);
    ZS_ASSERT_REL(x.node_net, 15.0 / 16 * S, 1e-12);
    ZS_ASSERT_REL(x.gpu_intra, 15.0 / 16 * S * 7 / 8, 1e-12);
    zs_nccl_traffic_of(&t2, ZS_COLL_ALLREDUCE, S, ZS_NCCL_NVLS_TREE, &x);
    ZS_ASSERT_REL(x.node_net, S, 1e-12);
    /* S is 16 ranks' buffers: each sends S/256 to each peer. */
    zs_nccl_traffic_of(&t2, ZS_COLL_ALLTOALL, S, ZS_NCCL_P2P, &x);
    ZS_ASSERT_REL(x.gpu_intra, S * 7 / 256, 1e-12);
    ZS_ASSERT_REL(x.node_net, S * 8 * 8 / 256, 1e-12);
    /* A plan's group: ranks 0-7 and 8-15 of two nodes, per-rank bytes. */
    int r16[16];
    for (int i = 0; i < 16; i++)
        r16[i] = 15 - i; /* any order */
    zs_nccl_choice ch;
    zs_err e;
    ZS_ASSERT_OK(zs_nccl_group_plan(&c, r16, 16, ZS_COLL_ALLGATHER, S / 16, NULL, &ch, &x, &e), &e);
    ZS_ASSERT_INT_EQ(ch.algo, ZS_NCCL_RING);
    ZS_ASSERT_REL(ch.nccl_us,
                  zs_nccl_model_us(&t2, ZS_COLL_ALLGATHER, S, ZS_NCCL_RING, ZS_NCCL_SIMPLE), 1e-12);
    ZS_ASSERT_REL(x.node_net, 15.0 / 16 * S, 1e-12);
    zs_nccl_topo t0 = topo(&c, 1, 1);
    zs_nccl_traffic_of(&t0, ZS_COLL_ALLREDUCE, S, ZS_NCCL_RING, &x);
    ZS_ASSERT_NEAR(x.gpu_intra + x.node_net, 0, 0);
}

/* zs_nccl_group_plan and zs_nccl_group_ctas keep their answers (a memo):
 * a repeated question gets the first answer, and a changed question (the
 * cluster changed in place, other parameters, another cluster at the same
 * address) a fresh one, the same as on a first call. */
static void test_group_memo(void)
{
    zs_cluster c = cluster("cluster-a", 2);
    int r[16];
    for (int i = 0; i < 16; i++)
        r[i] = i;
    double B = 64 << 20;
    zs_nccl_choice a, b;
    zs_nccl_traffic ta, tb;
    zs_err e;
    ZS_ASSERT_OK(zs_nccl_group_plan(&c, r, 16, ZS_COLL_ALLREDUCE, B, NULL, &a, &ta, &e), &e);
    int ctas = zs_nccl_group_ctas(&c, r, 16, ZS_COLL_ALLREDUCE, B, NULL);
    CU_ASSERT(ctas > 0);
    ZS_ASSERT_OK(zs_nccl_group_plan(&c, r, 16, ZS_COLL_ALLREDUCE, B, NULL, &b, &tb, &e), &e);
    CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
    CU_ASSERT(memcmp(&ta, &tb, sizeof ta) == 0);
    ZS_ASSERT_INT_EQ(zs_nccl_group_ctas(&c, r, 16, ZS_COLL_ALLREDUCE, B, NULL), ctas);
    /* The same cluster, its NICs four times slower, in place. */
    zs_cluster slow = c;
    slow.nic_gbps /= 4;
    c.nic_gbps /= 4;
    ZS_ASSERT_OK(zs_nccl_group_plan(&c, r, 16, ZS_COLL_ALLREDUCE, B, NULL, &b, NULL, &e), &e);
    CU_ASSERT(b.seconds > a.seconds);
    zs_nccl_choice fresh;
    int r2[16];
    for (int i = 0; i < 16; i++)
        r2[i] = r[i];
    ZS_ASSERT_OK(zs_nccl_group_plan(&slow, r2, 16, ZS_COLL_ALLREDUCE, B, NULL, &fresh, NULL, &e),
                 &e);
    CU_ASSERT(memcmp(&b, &fresh, sizeof b) == 0);
    /* Other parameters: half the network efficiency. */
    zs_nccl_params p;
    zs_nccl_params_default(&p);
    p.v[ZS_NP_NET_EFF] *= 0.5;
    ZS_ASSERT_OK(zs_nccl_group_plan(&c, r, 16, ZS_COLL_ALLREDUCE, B, &p, &b, NULL, &e), &e);
    CU_ASSERT(b.seconds > fresh.seconds);
    /* Failures are answered each time: 16 ranks on one GPU's node. */
    for (int i = 0; i < 16; i++)
        r2[i] = 0;
    CU_ASSERT(zs_nccl_group_plan(&c, r2, 16, ZS_COLL_ALLREDUCE, B, NULL, &b, NULL, &e) != ZS_OK);
    CU_ASSERT(zs_nccl_group_plan(&c, r2, 16, ZS_COLL_ALLREDUCE, B, NULL, &b, NULL, &e) != ZS_OK);
}

static const zs_test_case cases[] = {{"names_and_masks", test_names_and_masks},
                                     {"topology", test_topology},
                                     {"choice_two_gpus", test_choice_two_gpus},
                                     {"choice_nvls", test_choice_nvls},
                                     {"choice_two_nodes", test_choice_two_nodes},
                                     {"cap_scaling", test_cap_scaling},
                                     {"latency_growth", test_latency_growth},
                                     {"fit_round_trip", test_fit_round_trip},
                                     {"multinode_log", test_multinode_log},
                                     {"log_shapes", test_log_shapes},
                                     {"multinode_fit", test_multinode_fit},
                                     {"traffic", test_traffic},
                                     {"group_memo", test_group_memo},
                                     {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"nccl", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
