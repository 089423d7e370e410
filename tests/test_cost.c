/* The analytical cost model: exact causal pair counts, tile counting,
 * hand-computed FLOPs of a LLaMA-7B layer, zigzag blocks covering a
 * document's triangle, transfers and ring collectives against hand
 * formulas; the unfused attention (Megatron before FlashAttention) by
 * hand. The attention kernel model itself is tested in test_kernel.c. */
#include <math.h>
#include <stdlib.h>

#include "zs_calib.h"
#include "zs_cost.h"
#include "zs_test.h"

static int64_t brute_pairs(const zs_attn_block *b)
{
    int64_t n = 0;
    for (int q = b->q0; q < b->q1; q++)
        for (int k = b->k0; k < b->k1; k++)
            n += k <= q;
    return n;
}

static void test_block_pairs_hand(void)
{
    zs_attn_block full = {0, 10, 20, 0, 5}, diag = {0, 0, 4, 0, 4}, above = {0, 0, 4, 4, 8};
    zs_attn_block part = {0, 2, 5, 0, 10}, empty = {0, 5, 5, 0, 3};
    ZS_ASSERT_INT_EQ(zs_attn_block_pairs(&full), 50);
    ZS_ASSERT_INT_EQ(zs_attn_block_pairs(&diag), 10);
    ZS_ASSERT_INT_EQ(zs_attn_block_pairs(&above), 0);
    ZS_ASSERT_INT_EQ(zs_attn_block_pairs(&part), 3 + 4 + 5);
    ZS_ASSERT_INT_EQ(zs_attn_block_pairs(&empty), 0);
    /* 64-bit: a 1M-token causal document has ~5.5e11 pairs. */
    zs_attn_block big = {0, 0, 1 << 20, 0, 1 << 20};
    ZS_ASSERT_INT_EQ(zs_attn_block_pairs(&big), (int64_t)(1 << 20) * ((1 << 20) + 1) / 2);
}

/* A kernel with 128 x 128 tiles (only the structure matters here). */
static const zs_attn_kernel k128 = {
    "k128", "test", 128, 128, 1, 0, {1, 0, 0, 0, 0, 1, 0}, {1, 0, 0, 0, 0, 1, 0}, 0};

static void test_block_pairs_property(void)
{
    srand(12345);
    for (int i = 0; i < 2000; i++) {
        zs_attn_block b;
        b.doc = 0;
        b.q0 = rand() % 300;
        b.q1 = b.q0 + rand() % 200;
        b.k0 = rand() % 300;
        b.k1 = b.k0 + rand() % 200;
        int64_t want = brute_pairs(&b), got = zs_attn_block_pairs(&b);
        if (want != got) {
            fprintf(stderr, "block q[%d,%d) k[%d,%d)\n", b.q0, b.q1, b.k0, b.k1);
            ZS_ASSERT_INT_EQ(got, want);
            return;
        }
        /* Tile padding only ever adds work. */
        CU_ASSERT(zs_attn_kernel_tile_pairs(&k128, &b, 1) >= got);
    }
}

static void test_tile_padding_hand(void)
{
    /* A 4096-token causal document: 32 query tiles, tile j computes j+1 key
     * tiles of 128 x 128: 528 tiles. */
    zs_attn_block d = {0, 0, 4096, 0, 4096};
    ZS_ASSERT_INT_EQ(zs_attn_kernel_tile_pairs(&k128, &d, 1), 528LL * 128 * 128);
    /* Below one tile the work is flat: 16 and 128 tokens cost one tile. */
    zs_attn_block s16 = {0, 0, 16, 0, 16}, s128 = {0, 0, 128, 0, 128};
    ZS_ASSERT_INT_EQ(zs_attn_kernel_tile_pairs(&k128, &s16, 1), 128 * 128);
    ZS_ASSERT_INT_EQ(zs_attn_kernel_tile_pairs(&k128, &s128, 1), 128 * 128);
    /* A full 100 x 300 block: one query tile, three key tiles. */
    zs_attn_block f = {0, 1000, 1100, 0, 300};
    ZS_ASSERT_INT_EQ(zs_attn_kernel_tile_pairs(&k128, &f, 1), 128 * 384);
    /* 128 x 64 tiles (FlashAttention-2, d=128): the same 4096-token
     * document computes the same pairs (the diagonal falls on tile edges);
     * 16 tokens now cost half a 128 x 128 tile, 128 tokens a whole one. */
    zs_attn_kernel k64 = k128;
    k64.tile_k = 64;
    ZS_ASSERT_INT_EQ(zs_attn_kernel_tile_pairs(&k64, &d, 1), 528LL * 128 * 128);
    ZS_ASSERT_INT_EQ(zs_attn_kernel_tile_pairs(&k64, &s16, 1), 128 * 64);
    ZS_ASSERT_INT_EQ(zs_attn_kernel_tile_pairs(&k64, &s128, 1), 128 * 128);
}

/* LLaMA-7B (h=4096, a=32, d=128, f=11008), one layer, 4096 tokens of one
 * document, forward: QKV 2*t*h*3h, O 2*t*h*h, MLP 2*t*3*h*f, attention
 * 4*a*d*s(s+1)/2. */
static void test_llama7b_layer_flops(void)
{
    zs_model m;
    zs_cluster cl;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("dgx-h100", 1, &cl, &e), &e);
    const double t = 4096, h = 4096;
    double qkv = 2 * t * h * 12288, o = 2 * t * h * 4096, mlp = 2 * t * 3 * h * 11008;
    ZS_ASSERT_NEAR(qkv, 412316860416.0, 0);
    ZS_ASSERT_NEAR(o, 137438953472.0, 0);
    ZS_ASSERT_NEAR(mlp, 1108101562368.0, 0);
    ZS_ASSERT_NEAR(zs_model_linear_flops_per_token(&m) * t, qkv + o + mlp, 1.0);
    zs_attn_block doc = {0, 0, 4096, 0, 4096};
    double attn = 4.0 * 32 * 128 * (double)zs_attn_block_pairs(&doc);
    ZS_ASSERT_NEAR(attn, 137472507904.0, 0);
    ZS_ASSERT_NEAR(zs_model_attn_flops_causal(&m, 4096), attn, 1.0);

    /* The cost model prices exactly these FLOPs: at the assumed GEMM curve
     * the QKV time is launch + FLOPs / (ceiling x efficiency(4096)). */
    zs_cost *c = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    const zs_gemm_curve *g = &cl.gpu.gemm;
    double want =
        g->launch_us * 1e-6 + qkv / (g->tflops * 1e12) * (1 + pow(g->half_dim / 4096.0, g->p));
    ZS_ASSERT_REL(zs_cost_gemm(c, t, 12288, h), want, 1e-12);
    /* Backward attention: its own curve, 2.5x the forward FLOPs at its own
     * rate (the preset's FlashAttention-2 on H100: 329.1 vs 350.6 TFLOP/s),
     * so a little more than 2.5x the forward time. */
    double fwd = zs_cost_attn(c, &doc, 1, 32, 0), bwd = zs_cost_attn(c, &doc, 1, 32, 1);
    CU_ASSERT(bwd > 2.5 * fwd && bwd < 3.0 * fwd);
    printf("llama-7b layer @4K on H100 (analytic): qkv %.3f ms, attn fwd %.3f ms, bwd %.3f ms\n",
           zs_cost_gemm(c, t, 12288, h) * 1e3, fwd * 1e3, bwd * 1e3);
    ZS_ASSERT_STR_CONTAINS(c->desc, "analytic (h100-sxm kernel curves: attention fa2");
    zs_cost_free(c);
    zs_cost_free(NULL);
}

/* Zigzag CP: a document of s tokens cut into 2g chunks, rank i holds
 * chunks i and 2g-1-i; each ring step pairs a rank's query chunks with
 * one rank's KV chunks. All blocks together must cover s(s+1)/2 pairs. */
static void test_zigzag_blocks_cover_triangle(void)
{
    static const int lens[] = {1, 7, 128, 1000, 4097, 65536, 131071};
    static const int groups[] = {1, 2, 3, 4, 8};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
            int s = lens[li], g = groups[gi], nc = 2 * g;
            int bounds[17];
            for (int c = 0; c <= nc; c++)
                bounds[c] = (int)((int64_t)s * c / nc);
            int64_t sum = 0;
            for (int r = 0; r < g; r++) {
                int mine[2] = {r, nc - 1 - r};
                for (int step = 0; step < g; step++) {
                    int src = (r - step + g) % g; /* KV shard held at this step */
                    int theirs[2] = {src, nc - 1 - src};
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++) {
                            zs_attn_block blk = {0, bounds[mine[a]], bounds[mine[a] + 1],
                                                 bounds[theirs[b]], bounds[theirs[b] + 1]};
                            sum += zs_attn_block_pairs(&blk);
                        }
                }
            }
            int64_t want = (int64_t)s * (s + 1) / 2;
            if (sum != want)
                fprintf(stderr, "s=%d g=%d\n", s, g);
            ZS_ASSERT_INT_EQ(sum, want);
        }
    }
}

static void test_p2p_and_collectives(void)
{
    zs_model m;
    zs_cluster a, h;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 2, &a, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("dgx-h100", 2, &h, &e), &e);
    zs_cost *ca = zs_cost_analytic_new(&m, &a), *ch = zs_cost_analytic_new(&m, &h);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ca);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ch);
    /* 64 MB across nodes on cluster-a: PCIe 0.5 us x2, NIC 2 us x2, one
     * leaf hop 1 us; bottleneck the 200 Gb/s NIC. */
    double lat, bw;
    zs_cluster_path(&a, 0, 8, &lat, &bw);
    ZS_ASSERT_NEAR(lat, 6e-6, 1e-12);
    ZS_ASSERT_REL(zs_cost_p2p(ca, 0, 8, 64e6), 6e-6 + 64e6 / 25e9, 0.01);
    ZS_ASSERT_NEAR(zs_cost_p2p(ca, 3, 3, 64e6), 0, 0);
    /* Inside a node: NVLink, 2 us + bytes / 200 GB/s on the A800. */
    ZS_ASSERT_REL(zs_cost_p2p(ca, 0, 1, 64e6), 2e-6 + 64e6 / 200e9, 1e-9);

    /* Collectives are NCCL's (models/zs_nccl.h, hand checks in
     * tests/test_nccl.c), here with NCCL's own figures. The 8 GPUs of a
     * DGX-H100 node, 16 MB per rank (128 MB gathered): ring/Simple, 8.4 +
     * 7 x 3.4 us and 12 x 30 GB/s bus (x 8/7 algorithm). */
    int node[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double B = 16e6;
    ZS_ASSERT_REL(zs_cost_collective(ch, ZS_COLL_ALLGATHER, node, 8, B),
                  (8.4 + 7 * 3.4) * 1e-6 + 8 * B / (360e9 * 8 / 7), 1e-9);
    /* Reduce-scatter adds its last, local step: B read twice and written
     * once at HBM speed (3350 GB/s / 3). */
    ZS_ASSERT_REL(zs_cost_collective(ch, ZS_COLL_REDUCESCATTER, node, 8, B),
                  (8.4 + 7 * 3.4) * 1e-6 + 8 * B / (360e9 * 8 / 7) + B / (3350e9 / 3), 1e-9);
    /* All-reduce: NVLS (25 us, 476 GB/s bus x 8/14). */
    ZS_ASSERT_REL(zs_cost_collective(ch, ZS_COLL_ALLREDUCE, node, 8, B),
                  25e-6 + B / (476e9 * 8 / 14), 1e-9);
    /* All-to-all: grouped sends, one step (8.4 + 3.4 us), 7 x B/8 over the
     * GPU's 18 x 20.6 GB/s of NVLink. */
    ZS_ASSERT_REL(zs_cost_collective(ch, ZS_COLL_ALLTOALL, node, 8, B),
                  11.8e-6 + 7.0 / 8 * B / 370.8e9, 1e-9);
    /* All 16 GPUs of two cluster-a nodes: NCCL's rings run over the 4 NICs
     * of each node (4 channels x 24 GB/s, PCIe Gen4), x 16/15; latency 8.4
     * + 14 x 3.4 us inside + 14 us for the network step. */
    int all[16];
    for (int i = 0; i < 16; i++)
        all[i] = i;
    ZS_ASSERT_REL(zs_cost_collective(ca, ZS_COLL_ALLGATHER, all, 16, B),
                  (8.4 + 14 * 3.4 + 14) * 1e-6 + 16 * B / (96e9 * 16 / 15), 1e-9);
    /* GPUs 0 and 1 of each node share NIC 0: one 24 GB/s channel. */
    int shared[4] = {0, 1, 8, 9};
    ZS_ASSERT_REL(zs_cost_collective(ca, ZS_COLL_ALLGATHER, shared, 4, B),
                  (8.4 + 2 * 3.4 + 14) * 1e-6 + 4 * B / (24e9 * 4 / 3), 1e-9);
    /* One GPU per node (GPUs 0 and 8): one step across the network. */
    int pair[2] = {0, 8};
    ZS_ASSERT_REL(zs_cost_collective(ca, ZS_COLL_ALLGATHER, pair, 2, B),
                  (8.4 + 14) * 1e-6 + 2 * B / (24e9 * 2), 1e-9);
    ZS_ASSERT_NEAR(zs_cost_collective(ca, ZS_COLL_ALLREDUCE, pair, 1, B), 0, 0);
    CU_ASSERT_STRING_EQUAL(zs_coll_kind_name(ZS_COLL_ALLTOALL), "all-to-all");
    CU_ASSERT_STRING_EQUAL(zs_coll_kind_name(99), "?");
    zs_cost_free(ca);
    zs_cost_free(ch);
}

/* Monotone in work, flat below one tile, and short blocks are padded. */
static void test_attention_shape_effects(void)
{
    zs_model m;
    zs_cluster cl;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("dgx-h100", 1, &cl, &e), &e);
    zs_cost *c = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    /* FlashAttention-2's 64-key tiles: 16 and 64 tokens cost the same. */
    zs_attn_block d16 = {0, 0, 16, 0, 16}, d64 = {0, 0, 64, 0, 64};
    ZS_ASSERT_NEAR(zs_cost_attn(c, &d16, 1, 32, 0), zs_cost_attn(c, &d64, 1, 32, 0), 0);
    double prev = 0;
    for (int s = 128; s <= 65536; s *= 2) {
        zs_attn_block d = {0, 0, s, 0, s};
        double t = zs_cost_attn(c, &d, 1, 32, 0);
        CU_ASSERT(t > prev);
        prev = t;
    }
    /* More documents in one launch cost more, and never less than one. */
    zs_attn_block many[8];
    for (int i = 0; i < 8; i++)
        many[i] = (zs_attn_block){i, 0, 100, 0, 100};
    CU_ASSERT(zs_cost_attn(c, many, 8, 32, 0) > zs_cost_attn(c, many, 1, 32, 0));
    ZS_ASSERT_NEAR(zs_cost_attn(c, many, 0, 32, 0), 0, 0);
    zs_cost_free(c);
}

/* Megatron's attention before FlashAttention (--attn-kernel unfused), by
 * hand: one causal block of 2048 tokens over 12 heads of 128 (GPT-3 175B
 * at tp 8, dropout 0.1) on an A100 is its batched GEMMs on the GEMM curve
 * plus the score matrix's passes at the memory-bound rate: forward two
 * GEMMs, softmax 2 x 2 bytes and dropout 2 x 2 + 1 bytes per score;
 * backward four GEMMs, dropout 2 x 2 + 1 and softmax 3 x 2 bytes. The whole
 * square is computed (the mask is the softmax's), so a causal block costs
 * what a full one does; without dropout the dropout passes go. Every GPU
 * offers it, and an unknown kernel's error names it. */
static void test_unfused_attention(void)
{
    zs_model m;
    zs_cluster cl;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("gpt3-175b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("dgx-a100", 1, &cl, &e), &e);
    ZS_ASSERT_OK(zs_gpu_select_kernel(&cl.gpu, "unfused", &e), &e);
    ZS_ASSERT_OK(zs_gpu_select_kernel(&cl.gpu, "unfused", &e), &e); /* twice: one entry */
    zs_cost *c = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT(zs_cost_attn_kernel(c)->unfused);
    double H = 12, s = 2048, d = 128, E = H * s * s, qk = H * 2 * s * d * 2, sc = E * 2;
    double g_s = zs_cost_gemm_io(c, H * s, s, d, qk + sc); /* QK^T, dO V^T */
    double g_o = zs_cost_gemm_io(c, H * s, d, s, sc + qk); /* P V, dS K, and the transposes */
    double fwd = g_s + g_o + zs_cost_elementwise(c, E * (4 + 5));
    double bwd = g_s + 3 * g_o + zs_cost_elementwise(c, E * (6 + 5));
    zs_attn_block causal = {0, 0, 2048, 0, 2048};
    zs_attn_work w;
    ZS_ASSERT_REL(zs_cost_attn_work(c, &causal, 1, 12, 0, &w), fwd, 1e-12);
    ZS_ASSERT_REL(zs_cost_attn(c, &causal, 1, 12, 1), bwd, 1e-12);
    ZS_ASSERT_REL(w.flops_exact, 4.0 * (2048.0 * 2049 / 2) * d * H, 1e-9);
    CU_ASSERT(fwd > 2 * (g_s + g_o)); /* the score passes dominate at d = 128 */
    zs_cost_free(c);
    m.dropout = 0;
    c = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    ZS_ASSERT_REL(zs_cost_attn(c, &causal, 1, 12, 0), g_s + g_o + zs_cost_elementwise(c, E * 4),
                  1e-12);
    zs_cost_free(c);
    const char *gpus[] = {"h100-sxm", "b200", "a100-40g", "h200"};
    for (int i = 0; i < 4; i++) {
        zs_gpu g;
        ZS_ASSERT_OK(zs_gpu_load(gpus[i], &g, &e), &e);
        ZS_ASSERT_OK(zs_gpu_select_kernel(&g, "unfused", &e), &e);
        CU_ASSERT(zs_gpu_attn_kernel(&g)->unfused);
    }
    ZS_ASSERT_INT_EQ(zs_gpu_select_kernel(&cl.gpu, "fa9", &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "unfused");
}

static const zs_test_case cases[] = {
    {"block_pairs_hand", test_block_pairs_hand},
    {"block_pairs_property", test_block_pairs_property},
    {"tile_padding_hand", test_tile_padding_hand},
    {"llama7b_layer_flops", test_llama7b_layer_flops},
    {"zigzag_blocks_cover_triangle", test_zigzag_blocks_cover_triangle},
    {"p2p_and_collectives", test_p2p_and_collectives},
    {"attention_shape_effects", test_attention_shape_effects},
    {"unfused_attention", test_unfused_attention},
    {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"cost", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
