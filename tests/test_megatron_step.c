/* The Megatron step model (models/zs_megatron_step.h) on small configs
 * checked by hand: one GPU (pp = tp = cp = dp = 1) is the inventory's step
 * with its layer and head ops run once per micro-batch and the optimizer
 * and FP8 weight casts once; the 1F1B bubble for pp = 4, m = 8 at vp = 1 and vp = 2; the
 * breakdown adds up to the step; TP, CP and DP terms appear where they
 * should; the CP ring's exposed send recomputed by hand (a slow network);
 * the DP overlap; LoRA's adapter-only DP traffic; packed samples' attention
 * per document; NeMo's model-FLOPs formula
 * against its GPT-3 form; bad configs. */
#include <math.h>

#include "zs_megatron_step.h"
#include "zs_nccl.h"
#include "zs_test.h"

/* 8 layers, h 256, 8 heads of 32 (4 KV heads), ffn 512, vocab 1000. */
static zs_cost *small_cost_net(int nodes, double nic_gbps)
{
    const char *path = zs_test_write(
        "small.json", "{\"name\": \"small\", \"layers\": 8, \"hidden\": 256, \"heads\": 8,"
                      " \"kv_heads\": 4, \"head_dim\": 32, \"ffn\": 512, \"vocab\": 1000}");
    zs_model m;
    zs_cluster cl;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load(path, &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("dgx-h100", nodes, &cl, &e), &e);
    if (nic_gbps > 0)
        cl.nic_gbps = nic_gbps;
    zs_cost *c = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

static zs_cost *small_cost(int nodes)
{
    return small_cost_net(nodes, 0);
}

static zs_mstep_cfg cfg(int gpus, int gbs, int tp, int pp, int cp, int vp)
{
    zs_mstep_cfg g = {gpus,
                      gbs,
                      1,
                      2048,
                      tp,
                      pp,
                      cp,
                      vp,
                      ZS_PREC_BF16,
                      ZS_STEP_RC_NONE,
                      1,
                      0,
                      ZS_GRAD_FP32,
                      ZS_KERN_FUSED,
                      0,
                      NULL,
                      0,
                      0,
                      ZS_FSDP2,
                      0};
    return g;
}

static double sum_parts(const zs_mstep *s)
{
    return s->compute_s + s->tp_comm_s + s->cp_comm_s + s->pp_comm_s + s->pp_bubble_s +
           s->dp_comm_s + s->optim_s;
}

/* One GPU, 4 micro-batches: 4 x (the inventory's step less its optimizer)
 * + the optimizer. */
static void test_one_gpu_is_inventory(void)
{
    zs_cost *c = small_cost(1);
    zs_mstep_cfg g = cfg(1, 4, 1, 1, 1, 1);
    zs_mstep s;
    zs_err e;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s, &e), &e);
    zs_step_cfg sc = zs_step_cfg_default();
    sc.tokens = 2048;
    zs_step st;
    ZS_ASSERT_OK(zs_step_build(c, &sc, &st, &e), &e);
    double optim = zs_step_class_time(&st, ZS_OC_GNORM, ZS_PH_OPTIM) +
                   zs_step_class_time(&st, ZS_OC_OPTIM, ZS_PH_OPTIM);
    ZS_ASSERT_INT_EQ(s.dp, 1);
    ZS_ASSERT_INT_EQ(s.m, 4);
    ZS_ASSERT_REL(s.optim_s, optim, 1e-12);
    ZS_ASSERT_REL(s.step_s, 4 * (st.total_s - optim) + optim, 1e-12);
    ZS_ASSERT_NEAR(s.tp_comm_s + s.cp_comm_s + s.pp_comm_s + s.pp_bubble_s + s.dp_comm_s, 0, 0);
    ZS_ASSERT_REL(s.step_s, sum_parts(&s), 1e-12);
    /* tokens/s/GPU and model TFLOP/s/GPU follow from the step */
    ZS_ASSERT_REL(s.tokens_s_gpu, 4 * 2048 / s.step_s, 1e-12);
    ZS_ASSERT_REL(s.model_tflops_gpu, s.model_flops / s.step_s / 1e12, 1e-12);
    zs_step_free(&st);
    /* FP8: the weight casts run in the first micro-batch only */
    g.precision = sc.precision = ZS_PREC_FP8;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s, &e), &e);
    ZS_ASSERT_OK(zs_step_build(c, &sc, &st, &e), &e);
    double once = 0;
    for (int i = 0; i < st.nops; i++)
        if (st.ops[i].per_step)
            once += zs_step_op_total(&st, &st.ops[i]);
    CU_ASSERT(once > 0);
    ZS_ASSERT_REL(s.step_s, 4 * (st.total_s - optim - once) + once + optim, 1e-12);
    zs_step_free(&st);
    zs_cost_free(c);
}

/* pp = 4, 8 micro-batches (gbs 8 on 4 GPUs, dp 1): the bubble is 3
 * micro-batches of the stage at vp = 1 and 1.5 at vp = 2, the
 * micro-batch itself unchanged by vp. */
static void test_bubble(void)
{
    ZS_ASSERT_NEAR(zs_megatron_bubble(4, 1, 2.0), 6.0, 1e-15);
    ZS_ASSERT_NEAR(zs_megatron_bubble(4, 2, 2.0), 3.0, 1e-15);
    ZS_ASSERT_NEAR(zs_megatron_bubble(1, 1, 2.0), 0.0, 0);
    zs_cost *c = small_cost(1);
    zs_mstep s1, s2;
    zs_err e;
    zs_mstep_cfg g = cfg(4, 8, 1, 4, 1, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s1, &e), &e);
    g.vp = 2;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s2, &e), &e);
    ZS_ASSERT_INT_EQ(s1.m, 8);
    double mb = s1.mb_compute + s1.mb_tp_comm + s1.mb_cp_comm;
    ZS_ASSERT_REL(s1.pp_bubble_s, 3 * mb, 1e-12);
    ZS_ASSERT_REL(s2.pp_bubble_s, 1.5 * mb, 1e-12);
    ZS_ASSERT_REL(s1.compute_s, s2.compute_s, 1e-12);
    ZS_ASSERT_REL(s1.compute_s, 8 * s1.mb_compute, 1e-12);
    CU_ASSERT(s1.pp_comm_s > 0);
    /* non-interleaved: every micro-batch's send and receive is exposed */
    CU_ASSERT(s1.pp_comm_s > s2.pp_comm_s);
    ZS_ASSERT_REL(s1.step_s, sum_parts(&s1), 1e-12);
    ZS_ASSERT_REL(s2.step_s, sum_parts(&s2), 1e-12);
    CU_ASSERT(s2.step_s < s1.step_s);
    zs_cost_free(c);
}

/* TP adds collectives, CP halves each rank's attention work and adds the
 * ring, DP adds the optimizer's collectives (in full before overlap). */
static void test_parallel_terms(void)
{
    zs_cost *c = small_cost(1);
    zs_mstep a, t, p, d;
    zs_err e;
    zs_mstep_cfg g = cfg(1, 2, 1, 1, 1, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &a, &e), &e);
    g = cfg(2, 2, 2, 1, 1, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &t, &e), &e);
    CU_ASSERT(t.tp_comm_s > 0);
    CU_ASSERT(t.compute_s < a.compute_s);
    g = cfg(2, 2, 1, 1, 2, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &p, &e), &e);
    CU_ASSERT(p.cp_comm_s >= 0);
    CU_ASSERT(p.compute_s < a.compute_s);
    CU_ASSERT(p.dp_rs_s > 0); /* gradients reduced over the cp ranks too */
    g = cfg(2, 4, 1, 1, 1, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &d, &e), &e);
    ZS_ASSERT_INT_EQ(d.dp, 2);
    ZS_ASSERT_INT_EQ(d.m, 2);
    CU_ASSERT(d.dp_rs_s > 0 && d.dp_ag_s > 0);
    CU_ASSERT(d.optim_s < a.optim_s); /* the state is sharded over dp */
    ZS_ASSERT_REL(d.step_s, sum_parts(&d), 1e-12);
    zs_cost_free(c);
}

/* CP 2 on 2 GPUs of a node: per layer and direction, rank r's exposed ring
 * is max(0, send - step 0's attention) (one send: 2 ring steps), the
 * slowest rank counts; the optimizer's collectives hide under one
 * micro-batch unless longer. */
static void test_cp_ring_and_dp_overlap(void)
{
    /* tp 8 puts the CP peers on two nodes: the send crosses a network of
     * 10 Gb/s NICs (slow, so that it outlasts the attention) */
    zs_cost *c = small_cost_net(2, 10);
    zs_mstep s;
    zs_err e;
    zs_mstep_cfg g = cfg(16, 2, 8, 1, 2, 1);
    g.seq = 4096;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s, &e), &e);
    double best = -1, want = 0;
    for (int r = 0; r < 2; r++) {
        double tot = 0, exp = 0;
        for (int bwd = 0; bwd < 2; bwd++) {
            zs_attn_block b[4];
            double step[2];
            for (int j = 0; j < 2; j++) {
                int n = zs_zigzag_step_blocks(0, 4096, 2, r, j, b);
                step[j] = zs_cost_attn(c, b, n, 1, bwd);
                tot += step[j];
            }
            /* K and V of 2048 tokens x 1 KV head (4 over tp 8) x 32 x 2 bytes;
             * bwd with dK, dV; CP rank r is global rank 8 r */
            double send =
                zs_cost_p2p(c, 8 * r, 8 * (1 - r), 2048.0 * 2 * 1 * 32 * 2 * (bwd ? 2 : 1));
            double x = send > step[0] ? send - step[0] : 0;
            exp += x;
            tot += x;
        }
        if (tot > best)
            best = tot, want = exp;
    }
    CU_ASSERT(want > 0);
    ZS_ASSERT_REL(s.cp_comm_s, s.m * 8 * want, 1e-9);
    double dp = (s.dp_rs_s > s.mb_bwd ? s.dp_rs_s - s.mb_bwd : 0) +
                (s.dp_ag_s > s.mb_fwd ? s.dp_ag_s - s.mb_fwd : 0);
    ZS_ASSERT_REL(s.dp_comm_s + 1, dp + 1, 1e-12);
    ZS_ASSERT_REL(s.mb_fwd + s.mb_bwd, s.mb_compute + s.mb_tp_comm + s.mb_cp_comm, 1e-12);
    zs_cost_free(c);
}

/* Interference: with it on, the overlapped DP collectives cost the compute
 * ctas / (SMs - ctas) of their overlap, ctas the channels of the graph NCCL
 * runs them on; every other term is the same as with it off. */
static void test_interference(void)
{
    zs_cost *c = small_cost_net(2, 10);
    zs_mstep off, on;
    zs_err e;
    zs_mstep_cfg g = cfg(16, 2, 8, 1, 2, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &off, &e), &e);
    g.interference = 1;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &on, &e), &e);
    ZS_ASSERT_REL(off.interference_s + 1, 1, 1e-15);
    CU_ASSERT(on.interference_s > 0);
    ZS_ASSERT_REL(on.step_s, off.step_s + on.interference_s, 1e-12);
    ZS_ASSERT_REL(on.compute_s, off.compute_s, 1e-15);
    ZS_ASSERT_REL(on.dp_comm_s + 1, off.dp_comm_s + 1, 1e-15);
    /* by hand: the DP group is the two CP ranks of TP rank 0 (ranks 0, 8) */
    int ranks[2] = {0, 8}, sms = c->cluster.gpu.sms;
    double want = 0;
    zs_coll_kind k[2] = {ZS_COLL_REDUCESCATTER, ZS_COLL_ALLGATHER};
    double window[2] = {on.mb_bwd, on.mb_fwd}, t[2] = {on.dp_rs_s, on.dp_ag_s};
    /* the reduce-scatter moves fp32 gradients, the all-gather bf16 weights */
    double per[2] = {zs_model_params(&c->model) / 8 * 4 / 2,
                     zs_model_params(&c->model) / 8 * c->model.dtype_bytes / 2};
    for (int i = 0; i < 2; i++) {
        double pbytes = per[i];
        zs_nccl_choice ch;
        zs_nccl_topo tp;
        ZS_ASSERT_OK(
            zs_nccl_group_plan(&c->cluster, ranks, 2, k[i], pbytes, zs_cost_nccl(c), &ch, NULL, &e),
            &e);
        ZS_ASSERT_OK(zs_nccl_topo_group(&c->cluster, ranks, 2, &tp, &e), &e);
        int n = ch.algo == ZS_NCCL_TREE ? tp.tree.nch : tp.ring.nch;
        CU_ASSERT(n > 0 && n < sms);
        want += (t[i] < window[i] ? t[i] : window[i]) * n / (double)(sms - n);
    }
    /* and the backward's TP collectives that run under GEMMs, per
     * micro-batch: their hidden seconds at the channels of TP ranks 0-7 */
    zs_step_cfg sc = zs_step_cfg_default();
    sc.tokens = 2048 / 2; /* seq 2048 over cp 2 */
    sc.tp = 8;
    sc.dp = 2;
    zs_step st;
    ZS_ASSERT_OK(zs_step_build(c, &sc, &st, &e), &e);
    int tp[8] = {0, 1, 2, 3, 4, 5, 6, 7}, hidden = 0;
    for (int i = 0; i < st.nops; i++) {
        const zs_step_op *op = &st.ops[i];
        if (!(op->hidden > 0))
            continue;
        hidden++;
        int n = zs_nccl_group_ctas(&c->cluster, tp, 8, op->coll, op->coll_bytes, zs_cost_nccl(c));
        CU_ASSERT(n > 0 && n < sms);
        want += on.m * op->hidden * n / (double)(sms - n) * (op->per_layer ? 8 : 1);
    }
    CU_ASSERT(hidden >= 4);
    zs_step_free(&st);
    ZS_ASSERT_REL(on.interference_s, want, 1e-12);
    zs_cost_free(c);
}

/* FSDP (ZeRO-3) on 16 GPUs of 2 nodes behind 10 Gb/s NICs (so the
 * collectives outlast the compute), 2 micro-batches per rank: per
 * micro-batch the root's and the first layer's gathers are exposed, each
 * later layer's gather beyond the previous layer's forward, in the
 * backward each gather plus reduce-scatter beyond the layer's backward,
 * the last reduce-scatters whole; recomputed here from the collectives. */
static void test_fsdp(void)
{
    zs_cost *c = small_cost_net(2, 10);
    zs_mstep s, z1;
    zs_err e;
    zs_mstep_cfg g = cfg(16, 32, 1, 1, 1, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &z1, &e), &e);
    g.zero = 3;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s, &e), &e);
    ZS_ASSERT_INT_EQ(s.m, 2);
    int ranks[16];
    for (int i = 0; i < 16; i++)
        ranks[i] = i;
    const zs_model *m = &c->model;
    double lp = zs_model_params_per_layer(m), root = zs_model_params(m) - 8 * lp;
    CU_ASSERT(root > 0); /* embedding and LM head */
    double A = zs_cost_collective(c, ZS_COLL_ALLGATHER, ranks, 16, lp * 2 / 16);
    double R = zs_cost_collective(c, ZS_COLL_REDUCESCATTER, ranks, 16, lp * 4 / 16);
    double Ar = zs_cost_collective(c, ZS_COLL_ALLGATHER, ranks, 16, root * 2 / 16);
    double Rr = zs_cost_collective(c, ZS_COLL_REDUCESCATTER, ranks, 16, root * 4 / 16);
    double F = s.layer_fwd, B = s.layer_bwd;
    CU_ASSERT(A > F); /* the slow network exposes every gather */
    double fwd = Ar + A + 7 * (A - F);
    double bwd = 7 * fmax(0, A + R - B) + fmax(0, R - B) + R + Rr;
    ZS_ASSERT_REL(s.dp_comm_s, 2 * (fwd + bwd), 1e-12);
    ZS_ASSERT_REL(s.dp_ag_s, 2 * (Ar + 15 * A), 1e-12);
    ZS_ASSERT_REL(s.dp_rs_s, 2 * (8 * R + Rr), 1e-12);
    ZS_ASSERT_REL(s.step_s, sum_parts(&s), 1e-12);
    /* interference: the gather's CTAs under the forward; under the
     * backward the gather's, then the reduce-scatter's in what the layer
     * leaves (one communicator runs them one after the other), the last
     * reduce-scatter's alone */
    g.interference = 1;
    zs_mstep on;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &on, &e), &e);
    const zs_nccl_params *prm = zs_cost_nccl(c);
    int agc = zs_nccl_group_ctas(&c->cluster, ranks, 16, ZS_COLL_ALLGATHER, lp * 2 / 16, prm);
    int rsc = zs_nccl_group_ctas(&c->cluster, ranks, 16, ZS_COLL_REDUCESCATTER, lp * 4 / 16, prm);
    double sms = c->cluster.gpu.sms;
    CU_ASSERT(agc > 0 && rsc > 0);
    double slow = 7 * fmin(A, F) * agc / (sms - agc) + 7 * fmin(A, B) * agc / (sms - agc) +
                  7 * fmin(R, fmax(0, B - A)) * rsc / (sms - rsc) + fmin(R, B) * rsc / (sms - rsc);
    ZS_ASSERT_REL(on.interference_s, 2 * slow, 1e-12);
    g.interference = 0;
    /* the same compute plus FSDP2's copy-out of each gathered layer (bf16
     * weights read and written, forward and backward: 2 micro-batches x 8
     * layers x 2); gathering every layer twice per micro-batch costs more
     * than the distributed optimizer's one gather per step */
    const zs_gpu *gpu = &c->cluster.gpu;
    double copy = gpu->gemm.launch_us * 1e-6 + 4 * lp / (ZS_HBM_EFF * gpu->hbm_gbs * 1e9);
    ZS_ASSERT_REL(s.compute_s, z1.compute_s + 2 * 8 * 2 * copy, 1e-9);
    CU_ASSERT(s.dp_comm_s > z1.dp_comm_s);
    /* a bf16 gradient buffer halves the reduce-scatters */
    g.grad = ZS_GRAD_BF16;
    zs_mstep b;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &b, &e), &e);
    ZS_ASSERT_REL(b.dp_rs_s,
                  2 * (8 * zs_cost_collective(c, ZS_COLL_REDUCESCATTER, ranks, 16, lp * 2 / 16) +
                       zs_cost_collective(c, ZS_COLL_REDUCESCATTER, ranks, 16, root * 2 / 16)),
                  1e-12);
    CU_ASSERT(b.dp_comm_s < s.dp_comm_s);
    zs_cost_free(c);
}

/* LoRA: the distributed optimizer's collectives carry the adapters (8
 * layers x 32 x (256 + 512 QKV columns)), FSDP still gathers every weight
 * but reduce-scatters the adapters' gradients only, and the model FLOPs are
 * two thirds of NeMo's. */
static void test_lora(void)
{
    zs_cost *c = small_cost_net(2, 10);
    zs_mstep s, full;
    zs_err e;
    zs_mstep_cfg g = cfg(16, 32, 1, 1, 1, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &full, &e), &e);
    g.lora = 32;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s, &e), &e);
    int ranks[16];
    for (int i = 0; i < 16; i++)
        ranks[i] = i;
    double ad = 8 * 32.0 * (256 + 512);
    ZS_ASSERT_NEAR(8 * zs_step_lora_params_per_layer(&c->model, 32), ad, 0);
    ZS_ASSERT_REL(s.dp_rs_s, zs_cost_collective(c, ZS_COLL_REDUCESCATTER, ranks, 16, ad * 4 / 16),
                  1e-12);
    ZS_ASSERT_REL(s.dp_ag_s, zs_cost_collective(c, ZS_COLL_ALLGATHER, ranks, 16, ad * 2 / 16),
                  1e-12);
    ZS_ASSERT_REL(s.model_flops, full.model_flops * 2 / 3, 1e-12);
    CU_ASSERT(s.optim_s < full.optim_s);
    ZS_ASSERT_REL(s.step_s, sum_parts(&s) + s.interference_s, 1e-12);
    g.zero = 3;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s, &e), &e);
    double lp = zs_model_params_per_layer(&c->model);
    double root = zs_model_params(&c->model) - 8 * lp;
    double A = zs_cost_collective(c, ZS_COLL_ALLGATHER, ranks, 16, lp * 2 / 16);
    double Ar = zs_cost_collective(c, ZS_COLL_ALLGATHER, ranks, 16, root * 2 / 16);
    double R = zs_cost_collective(c, ZS_COLL_REDUCESCATTER, ranks, 16, ad / 8 * 4 / 16);
    ZS_ASSERT_REL(s.dp_ag_s, 2 * (Ar + 15 * A), 1e-12);
    ZS_ASSERT_REL(s.dp_rs_s, 2 * 8 * R, 1e-12);
    zs_cost_free(c);
}

/* Packed samples: one document per pack is the unpacked step exactly; short
 * documents make the step faster by their attention only, which is one
 * varlen launch per pack averaged over the packs (checked against the
 * kernel model), and NeMo's attention term counts sum(len^2) / sum(len)
 * tokens; under CP each document is zigzag-cut on its own. */
static void test_packed(void)
{
    zs_cost *c = small_cost(1);
    zs_mstep one, p1, pk;
    zs_err e;
    zs_mstep_cfg g = cfg(1, 4, 1, 1, 1, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &one, &e), &e);
    static const int32_t whole[] = {2048, 2048};
    g.docs = whole, g.ndocs = 2, g.npacks = 2;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &p1, &e), &e);
    ZS_ASSERT_REL(p1.step_s, one.step_s, 1e-12);
    ZS_ASSERT_REL(p1.model_flops, one.model_flops, 1e-12);
    /* two packs: 8 x 256, and 1024 + 512 + 512 */
    static const int32_t docs[] = {256, 256, 256, 256, 256, 256, 256, 256, 1024, 512, 512};
    g.docs = docs, g.ndocs = 11, g.npacks = 2;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &pk, &e), &e);
    zs_attn_block a[8], b[3];
    for (int i = 0; i < 8; i++)
        a[i] = (zs_attn_block){i, 0, 256, 0, 256};
    b[0] = (zs_attn_block){0, 0, 1024, 0, 1024};
    b[1] = (zs_attn_block){1, 0, 512, 0, 512};
    b[2] = (zs_attn_block){2, 0, 512, 0, 512};
    zs_attn_block w = {0, 0, 2048, 0, 2048};
    int heads = c->model.heads;
    double packed = 0, whole_s = 0;
    for (int bwd = 0; bwd < 2; bwd++) {
        packed += (zs_cost_attn(c, a, 8, heads, bwd) + zs_cost_attn(c, b, 3, heads, bwd)) / 2;
        whole_s += zs_cost_attn(c, &w, 1, heads, bwd);
    }
    CU_ASSERT(packed < whole_s);
    /* 4 micro-batches x 8 layers of attention saved, nothing else moves */
    ZS_ASSERT_REL(one.step_s - pk.step_s, 4 * 8 * (whole_s - packed), 1e-9);
    double s2 = 8 * 256.0 * 256 + 1024.0 * 1024 + 2 * 512.0 * 512;
    double L = 8, h = 256;
    ZS_ASSERT_REL(one.model_flops - pk.model_flops, 4 * 2048 * 12 * L * h * (2048 - s2 / 4096),
                  1e-9);
    /* Under CP (2 ranks) each document is cut into its own zigzag chunks:
     * one document per pack is the unpacked CP step exactly, short ones
     * are cheaper */
    zs_mstep cp1, cpw, cpk;
    g = cfg(2, 4, 1, 1, 2, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &cp1, &e), &e);
    g.docs = whole, g.ndocs = 2, g.npacks = 2;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &cpw, &e), &e);
    ZS_ASSERT_REL(cpw.step_s, cp1.step_s, 1e-12);
    g.docs = docs, g.ndocs = 11, g.npacks = 2;
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &cpk, &e), &e);
    CU_ASSERT(cpk.step_s < cp1.step_s);
    g.npacks = 12; /* fewer documents than packs */
    ZS_ASSERT_INT_EQ(zs_megatron_step(c, &g, &cpk, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "at least one document per pack");
    zs_cost_free(c);
}

/* NeMo's gpt3 formula: (24 gbs s h^2 + 4 gbs s^2 h) (3 layers) + 6 gbs s h V. */
static void test_model_flops(void)
{
    zs_model m;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("gpt3-5b", &m, &e), &e);
    double s = 2048, h = m.hidden, L = m.layers, V = m.vocab;
    double nemo = (24 * s * h * h + 4 * s * s * h) * 3 * L + 6 * s * h * V;
    ZS_ASSERT_REL(s * zs_megatron_model_flops_per_token(&m, 2048), nemo, 1e-12);
}

/* An uneven pipeline split (8 layers over 3 stages) prices the slowest
 * stage's ceil(8 / 3) = 3 layers; its bubble is 2 of its micro-batches. */
static void test_uneven_stages(void)
{
    ZS_ASSERT_NEAR(zs_megatron_stage_layers(126, 8), 16, 0);
    ZS_ASSERT_NEAR(zs_megatron_stage_layers(32, 4), 8, 0);
    ZS_ASSERT_NEAR(zs_megatron_stage_layers(8, 3), 3, 0);
    zs_cost *c = small_cost(1);
    zs_mstep s, s4;
    zs_err e;
    zs_mstep_cfg g = cfg(3, 6, 1, 3, 1, 1);
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s, &e), &e);
    g = cfg(4, 8, 1, 4, 1, 1); /* 2 layers a stage */
    ZS_ASSERT_OK(zs_megatron_step(c, &g, &s4, &e), &e);
    /* a micro-batch of the slowest stage: one layer more than at pp 4 */
    ZS_ASSERT_REL(s.mb_compute - s4.mb_compute, s4.layer_fwd + s4.layer_bwd, 1e-9);
    ZS_ASSERT_REL(s.pp_bubble_s, zs_megatron_bubble(3, 1, s.mb_compute + s.mb_tp_comm), 1e-9);
    zs_cost_free(c);
}

static void test_bad(void)
{
    zs_cost *c = small_cost(1);
    zs_mstep s;
    zs_err e;
    zs_mstep_cfg g = cfg(4, 8, 1, 4, 1, 3); /* 8 layers over 4 x 3 */
    ZS_ASSERT_INT_EQ(zs_megatron_step(c, &g, &s, &e), ZS_EINPUT);
    g = cfg(16, 16, 1, 1, 1, 1); /* one node has 8 GPUs */
    ZS_ASSERT_INT_EQ(zs_megatron_step(c, &g, &s, &e), ZS_EINPUT);
    g = cfg(1, 1, 1, 1, 1, 1);
    g.zero = 4;
    ZS_ASSERT_INT_EQ(zs_megatron_step(c, &g, &s, &e), ZS_EINPUT);
    zs_cost_free(c);
}

static const zs_test_case cases[] = {{"one_gpu_is_inventory", test_one_gpu_is_inventory},
                                     {"bubble", test_bubble},
                                     {"parallel_terms", test_parallel_terms},
                                     {"cp_ring_and_dp_overlap", test_cp_ring_and_dp_overlap},
                                     {"interference", test_interference},
                                     {"fsdp", test_fsdp},
                                     {"model_flops", test_model_flops},
                                     {"lora", test_lora},
                                     {"packed", test_packed},
                                     {"uneven_stages", test_uneven_stages},
                                     {"bad", test_bad},
                                     {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"megatron_step", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
