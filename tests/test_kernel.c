/* The attention kernel model (models/zs_kernel.c): hand-computed launches
 * (tiles, CTAs, per-sequence and per-launch costs, the longest-CTA floor,
 * the HBM floor with GQA, the head-dimension share), variable-length
 * launches, zigzag context-parallel shards, the presets against the
 * published curves they were fitted to (reference tables below: figure
 * read-outs, for comparison only), and the H100 reference CSV targets
 * (>= 1K tokens within 10%, shorter within 25%) when ../shared is there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_calib.h"
#include "zs_cost.h"
#include "zs_test.h"
#include "zs_kernel_internal.h"

/* One tile (4 x 128 x 128 x 128 FLOPs) per microsecond on one slot. */
static zs_attn_kernel hand_kernel(void)
{
    zs_attn_kernel k = {"hand",
                        "test",
                        128,
                        128,
                        1,
                        0,
                        {8.388608, 0.5, 2, 10, 0, 1, 0},
                        {8.388608, 0.5, 2, 10, 0, 1, 0},
                        0};
    return k;
}

static double run(const zs_attn_kernel *k, int bwd, const zs_attn_block *b, int n, int heads,
                  int kv, int d, int sms, double hbm, zs_attn_work *w)
{
    zs_attn_shape sh = {heads, kv, d, sms, hbm, 2};
    return zs_attn_kernel_time(k, bwd, b, n, &sh, w);
}

static void test_hand_launch(void)
{
    zs_attn_kernel k = hand_kernel();
    zs_attn_work w;
    /* 256 tokens, one head, one slot: query tile 0 computes 1 key tile,
     * tile 1 two: 3 tiles (3 us), 2 CTAs (1 us), 1 sequence (2 us), plus
     * the 10 us launch. */
    zs_attn_block d256 = {0, 0, 256, 0, 256};
    ZS_ASSERT_NEAR(run(&k, 0, &d256, 1, 1, 1, 128, 1, 0, &w), 16e-6, 1e-12);
    ZS_ASSERT_INT_EQ(w.tiles, 3);
    ZS_ASSERT_INT_EQ(w.ctas, 2);
    ZS_ASSERT_NEAR(w.flops_exact, 4.0 * 128 * 256 * 257 / 2, 1e-3);
    /* Two heads: twice the work. */
    ZS_ASSERT_NEAR(run(&k, 0, &d256, 1, 2, 2, 128, 1, 0, NULL), 22e-6, 1e-12);
    /* Two heads on 4 slots at the same (whole-GPU) rate: a tile takes 4 us
     * on one slot. The work spread over the slots takes 6 x 1 + 2 x (2 x
     * 0.5 + 2) / 4 = 7.5 us, but one CTA (cta 0.5 + sequence 2 + 2 tiles of
     * 4 us) takes 10.5 us: the launch cannot fill the GPU and the longest
     * CTA sets the time. */
    ZS_ASSERT_NEAR(run(&k, 0, &d256, 1, 2, 2, 128, 4, 0, &w), 20.5e-6, 1e-12);
    ZS_ASSERT_NEAR(w.t_longest_cta, 10.5e-6, 1e-12);
    /* Backward: 2.5x the tile FLOPs at the backward rate; CTAs are key
     * tiles (2). One slot: 3 x 2.5 + 2 x 0.5 + 2 = 10.5 us. */
    ZS_ASSERT_NEAR(run(&k, 1, &d256, 1, 1, 1, 128, 1, 0, &w), 20.5e-6, 1e-12);
    ZS_ASSERT_INT_EQ(w.ctas, 2);
    /* Head dimension: with dfix 0.25 a d=64 tile (and a CTA's own work)
     * takes 0.25 + 0.75/2 of a d=128 one: (3 + 1) x 0.625 + 2 = 4.5 us. */
    k.dfix = 0.25;
    ZS_ASSERT_NEAR(run(&k, 0, &d256, 1, 1, 1, 64, 1, 0, NULL), 14.5e-6, 1e-12);
    k.dfix = 0;
    /* A size effect halves the tile rate at W = half. */
    k.fwd.half = 3 * 4.0 * 128 * 128 * 128;
    ZS_ASSERT_NEAR(run(&k, 0, &d256, 1, 1, 1, 128, 1, 0, NULL), 19e-6, 1e-12);
    /* A floor above the launch's work (6 tiles) holds the slowdown at its
     * value there: 1 + 3/6, tiles 4.5 us. A floor below it changes nothing. */
    k.fwd.half_floor = 6 * 4.0 * 128 * 128 * 128;
    ZS_ASSERT_NEAR(run(&k, 0, &d256, 1, 1, 1, 128, 1, 0, NULL), 17.5e-6, 1e-12);
    k.fwd.half_floor = 1 * 4.0 * 128 * 128 * 128;
    ZS_ASSERT_NEAR(run(&k, 0, &d256, 1, 1, 1, 128, 1, 0, NULL), 19e-6, 1e-12);
    k.fwd.half_floor = 0;
    /* Nothing to do costs nothing, not even the launch. */
    ZS_ASSERT_NEAR(run(&k, 0, &d256, 0, 1, 1, 128, 1, 0, NULL), 0, 0);
    zs_attn_block above = {0, 0, 100, 200, 300};
    ZS_ASSERT_NEAR(run(&k, 0, &above, 1, 1, 1, 128, 1, 0, NULL), 0, 0);
}

static void test_memory_floor_gqa(void)
{
    zs_attn_kernel k = hand_kernel();
    k.fwd.tflops = 1e5; /* compute ~ free: the HBM floor binds */
    k.fwd.cta_us = k.fwd.seq_us = 0;
    zs_attn_block d = {0, 0, 256, 0, 256};
    zs_attn_work w;
    /* 2 query heads read Q and write O (2 x 2 x 256 x 128 x 2 B), one KV
     * head's K and V are read once (2 x 256 x 128 x 2 B): 393,216 B at
     * 1 GB/s. */
    ZS_ASSERT_NEAR(run(&k, 0, &d, 1, 2, 1, 128, 1, 1e9, &w), 10e-6 + 393216e-9, 1e-12);
    ZS_ASSERT_NEAR(w.bytes, 393216, 0);
    /* Without GQA (2 KV heads) K and V are read twice. */
    ZS_ASSERT_NEAR(run(&k, 0, &d, 1, 2, 2, 128, 1, 1e9, &w), 10e-6 + 524288e-9, 1e-12);
}

/* The closed-form tile count agrees with the tile-by-tile walk on random
 * blocks (causal, full, partly above the diagonal, tiny, long), for tile
 * shapes where it applies and where the walk is used. */
static void test_tile_count_closed_form(void)
{
    static const int shapes[][2] = {{128, 64}, {128, 128}, {256, 64}, {64, 64}, {128, 96}};
    uint64_t x = 42;
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        zs_attn_kernel k = hand_kernel();
        k.tile_q = shapes[sh][0];
        k.tile_k = shapes[sh][1];
        int bad = 0;
        for (int i = 0; i < 20000 && !bad; i++) {
            zs_attn_block b;
            b.doc = 0;
            b.q0 = (int32_t)(zs_test_rng(&x) % 5000);
            b.q1 = b.q0 + (int32_t)(zs_test_rng(&x) % (i % 2 ? 300 : 9000));
            b.k0 = (int32_t)(zs_test_rng(&x) % 6000);
            b.k1 = b.k0 + (int32_t)(zs_test_rng(&x) % (i % 3 ? 400 : 9000));
            if (!zs__attn_walk_agrees(&k, &b)) {
                fprintf(stderr, "tiles %dx%d: block q[%d,%d) k[%d,%d)\n", k.tile_q, k.tile_k, b.q0,
                        b.q1, b.k0, b.k1);
                bad = 1;
            }
        }
        CU_ASSERT(!bad);
    }
    /* A million-token document: O(1), and the count by hand (7813 query
     * tiles of 128, the last one padded; 128 x 64 tiles). */
    zs_attn_kernel k = hand_kernel();
    k.tile_k = 64;
    zs_attn_block big = {0, 0, 1000000, 0, 1000000};
    int64_t full = 7812, want = 2 * full * (full + 1) / 2 + (1000000 + 63) / 64;
    ZS_ASSERT_INT_EQ(zs_attn_kernel_tile_pairs(&k, &big, 1), want * 128 * 64);
}

/* A varlen launch costs the sum of its documents' padded tiles, CTAs and
 * per-sequence costs plus one launch: short documents are not free. */
static void test_varlen(void)
{
    zs_attn_kernel k = hand_kernel();
    zs_attn_block v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (zs_attn_block){i, 0, 16, 0, 16};
    /* One slot: 16-token documents each pay a whole tile (1), a CTA (0.5)
     * and a sequence (2): 64 x 3.5 us + 10 us. */
    ZS_ASSERT_NEAR(run(&k, 0, v, 64, 1, 1, 128, 1, 0, NULL), 10e-6 + 64 * 3.5e-6, 1e-12);
    /* ... exactly what 128-token documents pay. */
    for (int i = 0; i < 64; i++)
        v[i].q1 = v[i].k1 = 128;
    ZS_ASSERT_NEAR(run(&k, 0, v, 64, 1, 1, 128, 1, 0, NULL), 10e-6 + 64 * 3.5e-6, 1e-12);
    /* 64 documents of 128 tokens cost far more than one of 8192 tokens
     * does per token: per token, short documents are dear. */
    zs_attn_block big = {0, 0, 8192, 0, 8192};
    double t_short = run(&k, 0, v, 64, 1, 1, 128, 1, 0, NULL);
    double t_long = run(&k, 0, &big, 1, 1, 1, 128, 1, 0, NULL);
    ZS_ASSERT_NEAR(t_long, 10e-6 + (2080 + 64 * 0.5 + 2) * 1e-6, 1e-12);
    CU_ASSERT(t_short < t_long); /* less work */
    CU_ASSERT(t_short / (64 * 128.0 * 129 / 2) >
              t_long / (8192.0 * 8193 / 2)); /* dearer per pair */
}

/* Zigzag shards cover the triangle exactly once; each rank's blocks are
 * its two chunks against the KV chunks of the step. */
static void test_zigzag_shards(void)
{
    static const int lens[] = {17, 1000, 4096, 100003};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int g = 1; g <= 8; g *= 2) {
            int64_t pairs = 0;
            for (int r = 0; r < g; r++)
                for (int j = 0; j < g; j++) {
                    zs_attn_block b[4];
                    int n = zs_zigzag_step_blocks(0, lens[li], g, r, j, b);
                    CU_ASSERT(n >= 0 && n <= 4);
                    for (int i = 0; i < n; i++)
                        pairs += zs_attn_block_pairs(&b[i]);
                }
            ZS_ASSERT_INT_EQ(pairs, (int64_t)lens[li] * (lens[li] + 1) / 2);
        }
    /* g = 2, 8 tokens: chunks of 2; rank 0 holds chunks 0 and 3. In step 0
     * it computes chunk 0 x 0, 3 x 0 and 3 x 3; in step 1 (rank 1's KV,
     * chunks 1 and 2) chunk 3 x 1 and 3 x 2. */
    zs_attn_block b[4];
    ZS_ASSERT_INT_EQ(zs_zigzag_step_blocks(0, 8, 2, 0, 0, b), 3);
    ZS_ASSERT_INT_EQ(b[0].q0, 0);
    ZS_ASSERT_INT_EQ(b[0].k1, 2);
    ZS_ASSERT_INT_EQ(b[2].q0, 6);
    ZS_ASSERT_INT_EQ(b[2].k0, 6);
    ZS_ASSERT_INT_EQ(zs_zigzag_step_blocks(0, 8, 2, 0, 1, b), 2);
    ZS_ASSERT_INT_EQ(b[0].k0, 2);
    ZS_ASSERT_INT_EQ(b[1].k0, 4);
}

/* A document's attention falls with CP much less than cp-fold when it is
 * short (tiles, CTAs and launches stay) and nearly cp-fold when it is
 * long; TP divides the heads. */
static void test_cp_tp_scaling(void)
{
    zs_model m;
    zs_cluster cl;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 1, &cl, &e), &e);
    zs_cost *c = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    static const int lens[] = {1024, 4096, 131072};
    double prev = 0;
    for (size_t i = 0; i < 3; i++) {
        double whole = zs_cost_attn_zigzag(c, lens[i], 1, 0, 32, 0, 0);
        double worst = 0;
        for (int r = 0; r < 8; r++) {
            double t = zs_cost_attn_zigzag(c, lens[i], 8, r, 32, 0, 0);
            worst = t > worst ? t : worst;
        }
        double speedup = whole / worst;
        printf("    llama-7b on a800 fa2, %6d tokens over cp=8: %.2fx\n", lens[i], speedup);
        CU_ASSERT(speedup > prev);
        prev = speedup;
    }
    CU_ASSERT(prev > 7.5 && prev < 8.0); /* long: nearly 8-fold */
    zs_attn_block d = {0, 0, 1024, 0, 1024};
    CU_ASSERT(zs_cost_attn_zigzag(c, 1024, 8, 0, 32, 0, 0) > zs_cost_attn(c, &d, 1, 32, 0) / 4);
    /* TP: a long document with 32 / 4 heads takes about a quarter. */
    zs_attn_block l = {0, 0, 65536, 0, 65536};
    ZS_ASSERT_REL(zs_cost_attn(c, &l, 1, 8, 0) * 4, zs_cost_attn(c, &l, 1, 32, 0), 0.01);
    zs_cost_free(c);
}

/* ---- the presets against what they were fitted to --------------------------
 * FA3 paper (Shah et al. 2024, arXiv 2407.08608) Figs. 5-6 on H100 SXM5,
 * bf16, head dim 128, batch x seqlen = 16K tokens, 16 heads, TFLOP/s by the
 * FlashAttention convention; values read off the figures (third-party
 * transcriptions, /work/notes/attention-kernels.md). Reference data for
 * comparison only. */
static const int fig_len[6] = {512, 1024, 2048, 4096, 8192, 16384};
static const struct {
    const char *kernel;
    int bwd, causal;
    double tflops[6];
} fig[] = {
    {"fa2", 0, 1, {191, 260, 298, 319, 333, 335}},
    {"fa2", 1, 0, {214, 260, 291, 310, 318, 322}},
    {"fa3", 0, 1, {292, 423, 521, 579, 602, 616}},
    {"fa3", 1, 0, {316, 424, 501, 542, 559, 561}},
    {"cudnn", 0, 1, {315, 410, 484, 518, 529, 539}},
    {"cudnn", 1, 0, {305, 408, 465, 499, 518, 516}},
};

static double predict_fig(const zs_gpu *g, int bwd, int causal, int len, int heads, int d)
{
    int batch = 16384 / len;
    zs_attn_block *b = malloc(sizeof *b * (size_t)batch);
    for (int i = 0; i < batch; i++)
        b[i] =
            causal ? (zs_attn_block){i, 0, len, 0, len} : (zs_attn_block){i, len, 2 * len, 0, len};
    zs_attn_shape sh = {heads, heads, d, g->sms, g->hbm_gbs * 1e9, 2};
    double t = zs_attn_kernel_time(zs_gpu_attn_kernel(g), bwd, b, batch, &sh, NULL);
    free(b);
    double flops = 4.0 * len * len * d * heads * batch * (causal ? 0.5 : 1) * (bwd ? 2.5 : 1);
    return flops / t / 1e12;
}

/* The A100 presets' fa-triton kernel against the "FlashAttention Triton"
 * bars of the FA2 README's A100 80GB forward + backward benchmark (causal;
 * 16K tokens per launch, 2048 wide; read off the figure). Fitted to the
 * head dimension 128 bars (two factors on fa2's structure): within 5%
 * there. dfix came from the two 16K bars alone, so the head dimension 64
 * bars below 16K are held out: within 5% from 4K, 18% short of them
 * below (the kernel is faster on short sequences at d = 64 than the
 * structure says). */
static void a100_triton_reproduces_readme(void)
{
    static const double hd128[6] = {50, 61, 68, 74, 78, 80}, hd64[6] = {59, 75, 79, 76, 79, 80};
    zs_err e;
    zs_gpu a;
    ZS_ASSERT_OK(zs_gpu_load("a100-80g", &a, &e), &e);
    ZS_ASSERT_OK(zs_gpu_select_kernel(&a, "fa-triton", &e), &e);
    for (int d = 0; d < 2; d++) {
        const double *want = d ? hd64 : hd128;
        int heads = d ? 32 : 16, dim = d ? 64 : 128;
        for (int j = 0; j < 6; j++) {
            double f = predict_fig(&a, 0, 1, fig_len[j], heads, dim);
            double b = predict_fig(&a, 1, 1, fig_len[j], heads, dim);
            double fb = 3.5 / (1 / f + 2.5 / b);
            double err = (fb - want[j]) / want[j];
            printf("    a100 fa-triton fwd+bwd causal d=%d %5d: %.0f vs %.0f TFLOP/s (%+.1f%%)\n",
                   dim, fig_len[j], fb, want[j], 100 * err);
            CU_ASSERT(fabs(err) < (d && fig_len[j] < 4096 ? 0.20 : 0.05));
        }
    }
}

static void test_presets_reproduce_published(void)
{
    zs_err e;
    for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++) {
        zs_gpu g;
        ZS_ASSERT_OK(zs_gpu_load("h100-sxm", &g, &e), &e);
        ZS_ASSERT_OK(zs_gpu_select_kernel(&g, fig[i].kernel, &e), &e);
        double worst = 0;
        for (int j = 0; j < 6; j++) {
            double p = predict_fig(&g, fig[i].bwd, fig[i].causal, fig_len[j], 16, 128);
            double err = fabs(p - fig[i].tflops[j]) / fig[i].tflops[j];
            worst = err > worst ? err : worst;
        }
        printf("    h100 %s %s: worst error %.1f%% over 512-16K\n", fig[i].kernel,
               fig[i].bwd ? "bwd" : "fwd", 100 * worst);
        CU_ASSERT(worst < 0.05);
    }
    /* A100, FA2 paper Fig. 4(c): forward + backward, causal, head dim 64,
     * 32 heads, same sweep; values read off the figure (a third party's
     * redraw script). The a800-80g preset was not fitted to these: its
     * curves are H100's scaled by the papers' best-case rates. */
    static const double a100_fb[6] = {88, 119, 140, 156, 165, 171};
    zs_gpu a;
    ZS_ASSERT_OK(zs_gpu_load("a800-80g", &a, &e), &e);
    double worst = 0;
    for (int j = 0; j < 6; j++) {
        double f = predict_fig(&a, 0, 1, fig_len[j], 32, 64);
        double b = predict_fig(&a, 1, 1, fig_len[j], 32, 64);
        double fb = 3.5 / (1 / f + 2.5 / b);
        double err = (fb - a100_fb[j]) / a100_fb[j];
        printf("    a800 fa2 fwd+bwd causal d=64 %5d: %.0f vs %.0f TFLOP/s (%+.1f%%)\n", fig_len[j],
               fb, a100_fb[j], 100 * err);
        worst = fabs(err) > worst ? fabs(err) : worst;
    }
    CU_ASSERT(worst < 0.10);
    a100_triton_reproduces_readme();
}

/* The h100-sxm preset's "te" kernel against the shared CSV: >= 1K tokens
 * within 10%, shorter within 25% (each point: a varlen launch of
 * tested_total_seqlen / seq_len documents, latency per document). */
static void test_reference_csv_targets(void)
{
    const char *path = zs_test_shared("reference/h100-kernels/attention-latency-vs-seqlen.csv");
    if (!path)
        return;
    zs_meas_set s;
    zs_meas_set_init(&s);
    zs_err e;
    ZS_ASSERT_OK(zs_meas_read(&s, path, &e), &e);
    zs_model m;
    zs_cluster cl;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("dgx-h100", 1, &cl, &e), &e);
    ZS_ASSERT_OK(zs_gpu_select_kernel(&cl.gpu, "te", &e), &e);
    zs_cost *c = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    int checked = 0;
    for (size_t i = 0; i < s.n; i++) {
        double pred;
        ZS_ASSERT_OK(zs_calib_predict(c, NULL, &s.v[i], NULL, &pred, NULL, &e), &e);
        double err = (pred - s.v[i].seconds) / s.v[i].seconds;
        printf("    te %6d tokens x %4d docs: %9.4f ms vs %9.4f ms (%+.1f%%)\n", s.v[i].seq_len,
               s.v[i].docs, pred * 1e3, s.v[i].seconds * 1e3, 100 * err);
        CU_ASSERT(fabs(err) <= (s.v[i].seq_len >= 1024 ? 0.10 : 0.25));
        checked++;
    }
    ZS_ASSERT_INT_EQ(checked, 12);
    zs_cost_free(c);
    zs_meas_set_clear(&s);
}

/* The FP8 GEMM curve of the H100-class presets against its sources
 * (docs/cost-model.md, "GEMM"): its size effect was fitted (launch fixed at
 * the GEMM curve's) to tilelang's FP8 e4m3 GEMM on H800 SXM, M = N = 8192,
 * K = 256-16384 (xwhzz/tilelang b2acfc37 benchmark/matmul_fp8/README.md,
 * latencies in ms), at the fit's own rate 1591.3 TFLOP/s with rms 0.61% and
 * max 1.24%; the preset's rate (1391.3) is the one at which that curve gives
 * the 1278.215 TFLOP/s cuBLASLt measured at 8192 x 8192 x 4096 on H100
 * (triton-lang/triton#5461).
 * DeepGEMM's H800 table (held out, deepseek-ai/DeepGEMM a6d97a1 README) is
 * printed, not asserted. A description without its own FP8 shape takes the
 * GEMM curve's. */
static double fp8_rate(const zs_gemm_curve *c, double m, double n, double k)
{
    return 2 * m * n * k / zs_gemm_time(c, m, n, k, 0, 0) / 1e12;
}

static void test_fp8_curve_reproduces_sources(void)
{
    static const double tl_k[7] = {256, 512, 1024, 2048, 4096, 8192, 16384};
    static const double tl_ms[7] = {0.060352, 0.080096, 0.121696, 0.204672,
                                    0.374816, 0.729664, 1.427264};
    static const double dg[6][4] = {{4096, 2112, 7168, 1058}, {4096, 24576, 1536, 990},
                                    {4096, 32768, 512, 590},  {4096, 7168, 16384, 1358},
                                    {4096, 4096, 7168, 1304}, {4096, 7168, 2048, 1025}};
    static const char *const gpus[3] = {"h100-sxm", "h800", "h200"};
    zs_err e;
    for (int gi = 0; gi < 3; gi++) {
        zs_gpu g;
        ZS_ASSERT_OK(zs_gpu_load(gpus[gi], &g, &e), &e);
        zs_gemm_curve c = zs_gpu_fp8_curve(&g);
        ZS_ASSERT_NEAR(c.launch_us, g.gemm.launch_us, 0);
        /* the cuBLASLt point the rate was scaled to */
        ZS_ASSERT_REL(fp8_rate(&c, 8192, 8192, 4096), 1278.215, 1e-4);
        /* the size effect at the fit's own rate reproduces tilelang's sweep */
        zs_gemm_curve fit = c;
        fit.tflops = 1591.3;
        double ss = 0, worst = 0;
        for (int i = 0; i < 7; i++) {
            double meas = 2.0 * 8192 * 8192 * tl_k[i] / (tl_ms[i] * 1e-3) / 1e12;
            double err = fp8_rate(&fit, 8192, 8192, tl_k[i]) / meas - 1;
            if (gi == 0)
                printf("    fp8 tilelang 8192x8192x%-5.0f: %6.1f vs %6.1f TFLOP/s (%+.2f%%)\n",
                       tl_k[i], fp8_rate(&fit, 8192, 8192, tl_k[i]), meas, 100 * err);
            ss += err * err;
            worst = fabs(err) > worst ? fabs(err) : worst;
        }
        CU_ASSERT(sqrt(ss / 7) <= 0.0062);
        CU_ASSERT(worst <= 0.0125);
        for (int i = 0; gi == 0 && i < 6; i++)
            printf("    fp8 held out, DeepGEMM %.0fx%.0fx%.0f: curve %6.1f vs %4.0f TFLOP/s\n",
                   dg[i][0], dg[i][1], dg[i][2], fp8_rate(&c, dg[i][0], dg[i][1], dg[i][2]),
                   dg[i][3]);
    }
    /* no FP8 shape in the description: the GEMM curve's */
    zs_gpu u;
    ZS_ASSERT_OK(zs_gpu_load(zs_test_write("fp8-gpu.json",
                                           "{\"name\": \"x\", \"peak_tflops\": 989, \"hbm_gbs\": "
                                           "3350, \"mem_gib\": 80, \"nvlink_gbs\": 450, "
                                           "\"fp8_tflops\": 1500}"),
                             &u, &e),
                 &e);
    zs_gemm_curve c = zs_gpu_fp8_curve(&u);
    ZS_ASSERT_NEAR(c.tflops, 1500, 0);
    ZS_ASSERT_NEAR(c.half_dim, u.gemm.half_dim, 0);
    ZS_ASSERT_NEAR(c.p, u.gemm.p, 0);
}

/* The b200 preset and the dgx-b200 cluster against their sources
 * (docs/cost-model.md, "GPUs"): the DGX B200 / HGX B200 datasheet values,
 * 148 SMs and compute capability 10.0 (a device query, pytorch/ao#4002), 8 x
 * 400 Gb/s ConnectX-7 per node (DGX B200 user guide). */
static void test_b200_datasheet(void)
{
    zs_err e;
    zs_gpu g;
    ZS_ASSERT_OK(zs_gpu_load("b200", &g, &e), &e);
    ZS_ASSERT_NEAR(g.peak_tflops, 2250, 0);
    ZS_ASSERT_NEAR(g.hbm_gbs, 8000, 0);
    ZS_ASSERT_REL(g.mem_gib, 180e9 / (1024.0 * 1024 * 1024), 1e-3); /* 1440 GB / 8 */
    ZS_ASSERT_NEAR(g.nvlink_gbs, 900, 0);                           /* 1.8 TB/s both ways */
    ZS_ASSERT_INT_EQ(g.nvlinks, 18);
    ZS_ASSERT_INT_EQ(g.sms, 148);
    ZS_ASSERT_NEAR(g.cc, 10.0, 0);
    CU_ASSERT_STRING_EQUAL(g.attn_kernel, "cudnn");     /* what TE runs on sm100 */
    CU_ASSERT(g.fp8_tflops > 0 && g.fp8_tflops < 4500); /* below the dense FP8 peak */
    ZS_ASSERT_OK(zs_gpu_check_fp8(&g, &e), &e);
    ZS_ASSERT_OK(zs_gpu_check_host(&g, "--opt offload", &e), &e);
    zs_cluster cl;
    ZS_ASSERT_OK(zs_cluster_load("dgx-b200", 2, &cl, &e), &e);
    CU_ASSERT_STRING_EQUAL(cl.gpu.name, "b200");
    ZS_ASSERT_INT_EQ(cl.gpus_per_node, 8);
    ZS_ASSERT_INT_EQ(cl.nics_per_node, 8);
    ZS_ASSERT_NEAR(cl.nic_gbps, 400, 0);
    ZS_ASSERT_INT_EQ(cl.nvls, 1);
}

/* Relative errors of a GEMM curve over a zepsim-measurements file of GEMMs;
 * with bw > 0, of zs_gemm_time's price (the curve bounded by in_b-byte
 * inputs and a bf16 output at bw bytes/s). */
static void gemm_curve_errors(const zs_gemm_curve *c, const char *file, double in_b, double bw,
                              int *n, double *rms, double *worst)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", ZS_SOURCE_DIR, file);
    zs_meas_set s;
    zs_meas_set_init(&s);
    zs_err e;
    ZS_ASSERT_OK(zs_meas_read(&s, path, &e), &e);
    double ss = 0;
    *worst = 0;
    *n = 0;
    for (size_t i = 0; i < s.n; i++) {
        const zs_meas *m = &s.v[i];
        double b = bw > 0 ? zs_gemm_bytes(m->m, m->n, m->k, in_b, 2) : 0;
        double err = zs_gemm_time(c, m->m, m->n, m->k, b, bw) / m->seconds - 1;
        ss += err * err;
        *worst = fabs(err) > *worst ? fabs(err) : *worst;
        (*n)++;
    }
    *rms = *n ? sqrt(ss / *n) : 0;
    zs_meas_set_clear(&s);
}

/* The b200 GEMM curves were fitted with `zepsim calib fit`'s curve fit to
 * every entry of XLA's measured sm_100 (B200) table (openxla/xla 71feeddf
 * matmul_interpolator_data.h, batch folded into m; tests/data/): bf16 375
 * points, rms 9.05%, max 36.3%; FP8 e4m3 375 points with the launch held
 * at the bf16 curve's, rms 9.56%, max 28.8%. The presets' rounded values
 * must still give those figures. */
static void test_b200_gemm_curves_reproduce_xla(void)
{
    zs_err e;
    zs_gpu g;
    ZS_ASSERT_OK(zs_gpu_load("b200", &g, &e), &e);
    int n;
    double rms, worst;
    gemm_curve_errors(&g.gemm, "xla-b200-gemm-bf16.json", 2, 0, &n, &rms, &worst);
    printf("    b200 bf16 GEMM vs XLA sm_100: %d points, rms %.2f%%, max %.2f%%\n", n, 100 * rms,
           100 * worst);
    ZS_ASSERT_INT_EQ(n, 375);
    CU_ASSERT(rms <= 0.0906);
    CU_ASSERT(worst <= 0.3630);
    zs_gemm_curve f = zs_gpu_fp8_curve(&g);
    ZS_ASSERT_NEAR(f.launch_us, g.gemm.launch_us, 0);
    gemm_curve_errors(&f, "xla-b200-gemm-fp8.json", 1, 0, &n, &rms, &worst);
    printf("    b200 FP8 GEMM vs XLA sm_100: %d points, rms %.2f%%, max %.2f%%\n", n, 100 * rms,
           100 * worst);
    ZS_ASSERT_INT_EQ(n, 375);
    CU_ASSERT(rms <= 0.0957);
    CU_ASSERT(worst <= 0.2880);
    /* The HBM bound of zs_gemm_time binds on some of these shapes (the
     * smallest, and 256-wide ones with a large output: 70 bf16 and 125 FP8
     * entries, by up to 7.9% and 10.1%); what the model prices is no
     * further from the table than the curve: bf16 rms 9.10%, max 34.6%;
     * FP8 rms 9.28%, max 28.8%. */
    double bw = ZS_HBM_EFF * g.hbm_gbs * 1e9;
    gemm_curve_errors(&g.gemm, "xla-b200-gemm-bf16.json", 2, bw, &n, &rms, &worst);
    printf("    b200 bf16 GEMM with the HBM bound: rms %.2f%%, max %.2f%%\n", 100 * rms,
           100 * worst);
    CU_ASSERT(rms <= 0.0911);
    CU_ASSERT(worst <= 0.3630);
    gemm_curve_errors(&f, "xla-b200-gemm-fp8.json", 1, bw, &n, &rms, &worst);
    printf("    b200 FP8 GEMM with the HBM bound: rms %.2f%%, max %.2f%%\n", 100 * rms,
           100 * worst);
    CU_ASSERT(rms <= 0.0957);
    CU_ASSERT(worst <= 0.2880);
}

/* Below the data (docs/cost-model.md, "GEMM"): the h100-sxm curve was
 * fitted on dimensions of 256 and up. A 4096 x 8 x 4096 bf16 GEMM (a
 * rank-8 LoRA adapter) moves (4096 x 4096 + 4096 x 8) x 2 + 4096 x 8 x 2 =
 * 33,685,504 bytes: at 0.84 x 3350 GB/s that is 11.971 us, plus the 6.268 us
 * launch, 18.239 us (by hand). Its curve, size term held at 256, says
 * 6.268 + 268.4 MFLOP / 808 TFLOP/s x 1.427 = 6.742 us, less: the GEMM is
 * priced at its HBM time. The old extrapolation gave 138.8 us, slower
 * than the same GEMM 256 wide (21.4 us). Above the floor nothing moves: a
 * 4096^3 GEMM is priced by the curve's own expression, to the bit. */
static void test_gemm_below_the_data(void)
{
    zs_err e;
    zs_gpu g;
    ZS_ASSERT_OK(zs_gpu_load("h100-sxm", &g, &e), &e);
    const zs_gemm_curve *c = &g.gemm;
    ZS_ASSERT_NEAR(c->dim_floor, 256, 0);
    ZS_ASSERT_NEAR(g.fp8_dim_floor, 256, 0);
    const double bw = ZS_HBM_EFF * g.hbm_gbs * 1e9;
    double b8 = zs_gemm_bytes(4096, 8, 4096, 2, 2);
    ZS_ASSERT_NEAR(b8, 33685504.0, 0);
    double t8 = zs_gemm_time(c, 4096, 8, 4096, b8, bw);
    ZS_ASSERT_REL(t8, 18.239e-6, 0.01);
    double t256 = zs_gemm_time(c, 4096, 256, 4096, zs_gemm_bytes(4096, 256, 4096, 2, 2), bw);
    CU_ASSERT(t8 < t256);
    ZS_ASSERT_REL(t256, 21.4e-6, 0.01);
    /* the curve alone holds its size term at the floor: 6.742 us */
    ZS_ASSERT_REL(zs_gemm_time(c, 4096, 8, 4096, 0, 0), 6.742e-6, 0.01);
    /* without the floor (dim_floor 0), the old extrapolation */
    zs_gemm_curve old = *c;
    old.dim_floor = 0;
    ZS_ASSERT_REL(zs_gemm_time(&old, 4096, 8, 4096, 0, 0), 138.8e-6, 0.01);
    /* above the floor: the curve's expression, bit for bit, through the
     * one function and through the analytic cost model */
    const double N = 4096;
    double want = c->launch_us * 1e-6 +
                  2.0 * N * N * N / (c->tflops * 1e12) * (1 + pow(c->half_dim / N, c->p));
    ZS_ASSERT_NEAR(zs_gemm_time(c, N, N, N, zs_gemm_bytes(N, N, N, 2, 2), bw), want, 0);
    zs_model m;
    zs_cluster cl;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("dgx-h100", 1, &cl, &e), &e);
    zs_cost *cost = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    ZS_ASSERT_NEAR(zs_cost_gemm(cost, N, N, N), want, 0);
    ZS_ASSERT_REL(zs_cost_gemm(cost, 4096, 8, 4096), 18.239e-6, 0.01);
    /* FP8: one-byte inputs, bf16 output: 16,941,056 bytes, 12.288 us */
    ZS_ASSERT_REL(zs_cost_gemm_fp8(cost, 4096, 8, 4096, 0), 12.288e-6, 0.01);
    zs_gemm_curve f8 = zs_gpu_fp8_curve(&g);
    double w8 = f8.launch_us * 1e-6 +
                2.0 * N * N * N / (f8.tflops * 1e12) * (1 + pow(f8.half_dim / N, f8.p));
    ZS_ASSERT_NEAR(zs_cost_gemm_fp8(cost, N, N, N, 0), w8, 0);
    zs_cost_free(cost);
    printf("    h100 bf16 4096x8x4096: %.3f us (HBM), 4096x256x4096: %.3f us, extrapolated "
           "curve: %.1f us\n",
           t8 * 1e6, t256 * 1e6, zs_gemm_time(&old, 4096, 8, 4096, 0, 0) * 1e6);
    /* a description without the fields: the default floor, the FP8 curve
     * the GEMM curve's; "dim_floor": 0 asks for the extrapolation */
    const char *gpu = "{\"name\": \"x\", \"peak_tflops\": 989, \"hbm_gbs\": 3350, \"mem_gib\": 80,"
                      " \"nvlink_gbs\": 450, \"fp8_tflops\": 1500, \"compute_capability\": 9.0,"
                      " \"attn_kernels\": [{\"name\": \"k\", \"source\": \"s\", \"fwd\": "
                      "{\"tflops\": 300}, \"bwd\": {\"tflops\": 300}}],"
                      " \"gemm\": {\"tflops\": 800, \"half_dim\": 166.3, \"p\": 2, "
                      "\"source\": \"s\"%s}}";
    char text[1024];
    snprintf(text, sizeof text, gpu, "");
    zs_gpu u;
    ZS_ASSERT_OK(zs_gpu_load(zs_test_write("floor-gpu.json", text), &u, &e), &e);
    ZS_ASSERT_NEAR(u.gemm.dim_floor, ZS_GEMM_DIM_FLOOR, 0);
    ZS_ASSERT_NEAR(zs_gpu_fp8_curve(&u).dim_floor, ZS_GEMM_DIM_FLOOR, 0);
    snprintf(text, sizeof text, gpu, ", \"dim_floor\": 0");
    ZS_ASSERT_OK(zs_gpu_load(zs_test_write("floor0-gpu.json", text), &u, &e), &e);
    ZS_ASSERT_NEAR(u.gemm.dim_floor, 0, 0);
    ZS_ASSERT_NEAR(zs_gpu_fp8_curve(&u).dim_floor, 0, 0);
}

/* b200's fa2 kernel is assumed: the h100-sxm fa2 kernel (the one that
 * reproduces NeMo's H100 runs) run 2250/989 times faster, its per-CTA cost
 * kept in units of a CTA's tile time. It must give the FA3 paper's H100 FA2
 * figures (above) scaled by the peaks within 2.5 points of the h100
 * kernel's own worst error on them. An assumption checked for its
 * arithmetic, not a B200 measurement (FA2 itself runs far slower there). */
static void test_b200_fa2_is_scaled_h100(void)
{
    zs_err e;
    zs_gpu b, h;
    ZS_ASSERT_OK(zs_gpu_load("b200", &b, &e), &e);
    ZS_ASSERT_OK(zs_gpu_load("h100-sxm", &h, &e), &e);
    ZS_ASSERT_OK(zs_gpu_select_kernel(&b, "fa2", &e), &e);
    ZS_ASSERT_OK(zs_gpu_select_kernel(&h, "fa2", &e), &e);
    const zs_attn_kernel *kb = zs_gpu_attn_kernel(&b), *kh = zs_gpu_attn_kernel(&h);
    ZS_ASSERT_INT_EQ(kb->tile_q, kh->tile_q);
    ZS_ASSERT_INT_EQ(kb->tile_k, kh->tile_k);
    ZS_ASSERT_NEAR(kb->dfix, kh->dfix, 0);
    const double s = b.peak_tflops / h.peak_tflops;
    ZS_ASSERT_REL(kb->fwd.tflops, kh->fwd.tflops * s, 1e-3);
    ZS_ASSERT_REL(kb->bwd.tflops, kh->bwd.tflops * s, 1e-3);
    for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++) {
        if (strcmp(fig[i].kernel, "fa2") != 0)
            continue;
        double worst = 0, worst_h = 0;
        for (int j = 0; j < 6; j++) {
            double p = predict_fig(&b, fig[i].bwd, fig[i].causal, fig_len[j], 16, 128);
            double want = fig[i].tflops[j] * s;
            worst = fmax(worst, fabs(p - want) / want);
            p = predict_fig(&h, fig[i].bwd, fig[i].causal, fig_len[j], 16, 128);
            worst_h = fmax(worst_h, fabs(p - fig[i].tflops[j]) / fig[i].tflops[j]);
        }
        printf("    b200 fa2 %s vs H100 figures x %.3f: worst error %.1f%% (h100: %.1f%%)\n",
               fig[i].bwd ? "bwd" : "fwd", s, 100 * worst, 100 * worst_h);
        CU_ASSERT(worst < worst_h + 0.025);
    }
}

/* b200's cudnn kernel, its default, was fitted with `zepsim calib fit
 * --gpu b200 --attn-kernel cudnn` to cuDNN 9.10.2's measured B200 forward
 * and backward times (NVIDIA/cudnn-frontend 87a1bcd, 128 query / 8 KV
 * heads, d 128, causal, 512-128K tokens; tests/data/): rms 3.2% / 5.9%,
 * max 5.6% / 9.7%. The preset's rounded values must still give them. */
static void test_b200_cudnn_reproduces_measured(void)
{
    zs_err e;
    zs_gpu g;
    ZS_ASSERT_OK(zs_gpu_load("b200", &g, &e), &e);
    CU_ASSERT_STRING_EQUAL(zs_gpu_attn_kernel(&g)->name, "cudnn");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/cudnn-b200-sdpa-bf16.json", ZS_SOURCE_DIR);
    zs_meas_set ms;
    zs_meas_set_init(&ms);
    ZS_ASSERT_OK(zs_meas_read(&ms, path, &e), &e);
    double ss[2] = {0, 0}, worst[2] = {0, 0};
    int n[2] = {0, 0};
    for (size_t i = 0; i < ms.n; i++) {
        const zs_meas *m = &ms.v[i];
        int bwd = !strcmp(m->op, "attn_bwd"), docs = m->docs > 0 ? m->docs : 1;
        zs_attn_block *blk = malloc(sizeof *blk * (size_t)docs);
        for (int d = 0; d < docs; d++)
            blk[d] = (zs_attn_block){d, 0, m->seq_len, 0, m->seq_len};
        zs_attn_shape sh = {m->heads, m->kv_heads, m->head_dim, g.sms, g.hbm_gbs * 1e9, 2};
        double t = zs_attn_kernel_time(zs_gpu_attn_kernel(&g), bwd, blk, docs, &sh, NULL) / docs;
        free(blk);
        double err = t / m->seconds - 1;
        ss[bwd] += err * err;
        worst[bwd] = fmax(worst[bwd], fabs(err));
        n[bwd]++;
    }
    zs_meas_set_clear(&ms);
    for (int d = 0; d < 2; d++) {
        double rms = sqrt(ss[d] / n[d]);
        printf("    b200 cudnn %s vs cuDNN 9.10.2 on B200: %d points, rms %.2f%%, max %.2f%%\n",
               d ? "bwd" : "fwd", n[d], 100 * rms, 100 * worst[d]);
        ZS_ASSERT_INT_EQ(n[d], 10);
        CU_ASSERT(rms <= (d ? 0.060 : 0.033));
        CU_ASSERT(worst[d] <= (d ? 0.098 : 0.057));
    }
}

static const zs_test_case cases[] = {
    {"hand_launch", test_hand_launch},
    {"memory_floor_gqa", test_memory_floor_gqa},
    {"tile_count_closed_form", test_tile_count_closed_form},
    {"varlen", test_varlen},
    {"zigzag_shards", test_zigzag_shards},
    {"cp_tp_scaling", test_cp_tp_scaling},
    {"presets_reproduce_published", test_presets_reproduce_published},
    {"reference_csv_targets", test_reference_csv_targets},
    {"fp8_curve_reproduces_sources", test_fp8_curve_reproduces_sources},
    {"b200_datasheet", test_b200_datasheet},
    {"b200_gemm_curves_reproduce_xla", test_b200_gemm_curves_reproduce_xla},
    {"gemm_below_the_data", test_gemm_below_the_data},
    {"b200_fa2_is_scaled_h100", test_b200_fa2_is_scaled_h100},
    {"b200_cudnn_reproduces_measured", test_b200_cudnn_reproduces_measured},
    {NULL, NULL}};

int main(int argc, char **argv)
{
    static const zs_test_suite suites[] = {{"kernel", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
