/* CPU reference kernels of the hardware backend (hw/zs_hw_ref.c): hand
 * computed cases, an independent naive attention, finite differences for
 * the backward, and the ring-attention property: splitting a document into
 * zigzag chunks, attending block by block and merging by log-sum-exp gives
 * the unsplit attention (forward and backward). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "zs_hw_ref.h"
#include "zs_test.h"

/* Deterministic uniform values in [-1, 1) (xorshift64*). */
static uint64_t rng_state;
static float rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t x = rng_state * 0x2545F4914F6CDD1Dull;
    return (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static float *rnd_vec(int64_t n)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = rnd();
    return v;
}

static void test_bf16(void)
{
    ZS_ASSERT_INT_EQ(zs_bf16_from_float(1.0f), 0x3f80);
    ZS_ASSERT_INT_EQ(zs_bf16_from_float(-2.0f), 0xc000);
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to even (1.0). */
    ZS_ASSERT_INT_EQ(zs_bf16_from_float(1.0f + 1.0f / 256), 0x3f80);
    /* 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up. */
    ZS_ASSERT_INT_EQ(zs_bf16_from_float(1.0f + 3.0f / 256), 0x3f82);
    ZS_ASSERT_NEAR(zs_bf16_to_float(0x3fc0), 1.5, 0);
    CU_ASSERT(isnan(zs_bf16_to_float(zs_bf16_from_float(NAN))));
    CU_ASSERT(isinf(zs_bf16_to_float(zs_bf16_from_float(INFINITY))));
}

static void test_gemm_hand(void)
{
    const float a[] = {1, 2, 3, 4, 5, 6};    /* 2 x 3 */
    const float b[] = {7, 8, 9, 10, 11, 12}; /* 3 x 2 */
    float c[4];
    zs_ref_gemm(2, 2, 3, a, b, c);
    ZS_ASSERT_NEAR(c[0], 58, 0);  /* 1*7 + 2*9 + 3*11 */
    ZS_ASSERT_NEAR(c[1], 64, 0);  /* 1*8 + 2*10 + 3*12 */
    ZS_ASSERT_NEAR(c[2], 139, 0); /* 4*7 + 5*9 + 6*11 */
    ZS_ASSERT_NEAR(c[3], 154, 0);
}

static void test_elementwise_hand(void)
{
    const float x[] = {3, 4}, w[] = {1, 2};
    float y[2];
    /* rms = sqrt((9 + 16) / 2) = 3.5355339 */
    zs_ref_rmsnorm(1, 2, x, w, 0, y);
    ZS_ASSERT_NEAR(y[0], 3 / 3.5355339, 1e-6);
    ZS_ASSERT_NEAR(y[1], 2 * 4 / 3.5355339, 1e-6);
    const float g[] = {0, 1, -1}, u[] = {5, 2, 2};
    float s[3];
    zs_ref_swiglu(3, g, u, s);
    ZS_ASSERT_NEAR(s[0], 0, 0);
    ZS_ASSERT_NEAR(s[1], 2 * 0.7310585786, 1e-6);  /* sigmoid(1) = 0.7310586 */
    ZS_ASSERT_NEAR(s[2], -2 * 0.2689414214, 1e-6); /* -1 * sigmoid(-1) * 2 */
    zs_ref_residual(2, x, w, y);
    ZS_ASSERT_NEAR(y[0], 4, 0);
    ZS_ASSERT_NEAR(y[1], 6, 0);
}

/* One query, two keys, head_dim 1: softmax by hand. */
static void test_attn_hand(void)
{
    zs_attn_dims d = {1, 1, 1};
    const float q[] = {1}, k[] = {0, 1}, v[] = {1, 3};
    float o, lse;
    zs_err e;
    /* Query at position 1 sees keys at 0 and 1: p = (1, e) / (1 + e). */
    zs_hw_block b = {0, 0, 1, 2, 1, 0};
    ZS_ASSERT_OK(zs_ref_attn_fwd(&b, 1, &d, 1.0f, q, k, v, &o, &lse, &e), &e);
    ZS_ASSERT_NEAR(o, (1 + 3 * M_E) / (1 + M_E), 1e-6);
    ZS_ASSERT_NEAR(lse, log(1 + M_E), 1e-6);
    /* Query at position 0 sees only key 0. */
    b.q_pos = 0;
    ZS_ASSERT_OK(zs_ref_attn_fwd(&b, 1, &d, 1.0f, q, k, v, &o, &lse, &e), &e);
    ZS_ASSERT_NEAR(o, 1, 1e-7);
    ZS_ASSERT_NEAR(lse, 0, 1e-7);
    /* Keys start after the query: nothing visible, O = 0 and LSE = -inf. */
    b.k_pos = 1;
    ZS_ASSERT_OK(zs_ref_attn_fwd(&b, 1, &d, 1.0f, q, k, v, &o, &lse, &e), &e);
    ZS_ASSERT_NEAR(o, 0, 0);
    CU_ASSERT(isinf(lse) && lse < 0);
}

/* An independent naive causal attention: the full score matrix with the
 * mask, softmax per row, then P V. */
static void naive_attn(int s, const zs_attn_dims *d, float scale, const float *q, const float *k,
                       const float *v, float *o, float *lse)
{
    int hd = d->head_dim, g = d->heads / d->kv_heads;
    double *p = malloc(sizeof(double) * (size_t)s * s);
    for (int h = 0; h < d->heads; h++) {
        for (int i = 0; i < s; i++)
            for (int j = 0; j < s; j++) {
                double acc = 0;
                for (int c = 0; c < hd; c++)
                    acc += (double)q[(i * d->heads + h) * hd + c] *
                           k[(j * d->kv_heads + h / g) * hd + c];
                p[i * s + j] = j <= i ? acc * scale : -INFINITY;
            }
        for (int i = 0; i < s; i++) {
            double m = -INFINITY, sum = 0;
            for (int j = 0; j <= i; j++)
                m = fmax(m, p[i * s + j]);
            for (int j = 0; j <= i; j++)
                sum += exp(p[i * s + j] - m);
            lse[i * d->heads + h] = (float)(m + log(sum));
            for (int c = 0; c < hd; c++) {
                double acc = 0;
                for (int j = 0; j <= i; j++)
                    acc += exp(p[i * s + j] - m) / sum * v[(j * d->kv_heads + h / g) * hd + c];
                o[(i * d->heads + h) * hd + c] = (float)acc;
            }
        }
    }
    free(p);
}

static void test_attn_matches_naive(void)
{
    rng_state = 42;
    zs_attn_dims d = {4, 2, 8}; /* GQA: two query heads per KV head */
    int s = 37;
    float *q = rnd_vec(s * 4 * 8), *k = rnd_vec(s * 2 * 8), *v = rnd_vec(s * 2 * 8);
    float *o = calloc(s * 4 * 8, sizeof(float)), *lse = calloc(s * 4, sizeof(float));
    float *no = calloc(s * 4 * 8, sizeof(float)), *nl = calloc(s * 4, sizeof(float));
    zs_hw_block b = {0, 0, s, s, 0, 0};
    zs_err e;
    float scale = 1.0f / sqrtf(8);
    ZS_ASSERT_OK(zs_ref_attn_fwd(&b, 1, &d, scale, q, k, v, o, lse, &e), &e);
    naive_attn(s, &d, scale, q, k, v, no, nl);
    CU_ASSERT(zs_rel_err(o, no, s * 4 * 8, 1e-6) <= 1e-5);
    CU_ASSERT(zs_rel_err(lse, nl, s * 4, 1e-6) <= 1e-5);
    free(q), free(k), free(v), free(o), free(lse), free(no), free(nl);
}

/* Zigzag split of a document of s tokens over a ring of g ranks: 2g chunks
 * cut at `cut`, rank r holds chunks r and 2g-1-r. Every (q chunk, kv chunk)
 * pair with kv chunk <= q chunk is one block (the chunks above the diagonal
 * see nothing); a rank visits the kv chunks in ring order (its own first,
 * then those arriving from its neighbours) and merges each partial result by
 * LSE. The merged output must equal the unsplit attention, and the block
 * backward (with the merged statistics, gradients summed over blocks) must
 * equal the unsplit backward. */
static void check_zigzag(int s, int g, const int *cut, const zs_attn_dims *d, uint64_t seed)
{
    rng_state = seed;
    int hd = d->head_dim, H = d->heads, KH = d->kv_heads, nc = 2 * g;
    int64_t nq = (int64_t)s * H * hd, nk = (int64_t)s * KH * hd;
    float *q = rnd_vec(nq), *k = rnd_vec(nk), *v = rnd_vec(nk), *dout = rnd_vec(nq);
    float scale = 1.0f / sqrtf((float)hd);
    zs_err e;

    /* Unsplit reference. */
    float *o = calloc(nq, 4), *lse = calloc(s * H, 4);
    float *dq = calloc(nq, 4), *dk = calloc(nk, 4), *dv = calloc(nk, 4);
    zs_hw_block whole = {0, 0, s, s, 0, 0};
    ZS_ASSERT_OK(zs_ref_attn_fwd(&whole, 1, d, scale, q, k, v, o, lse, &e), &e);
    ZS_ASSERT_OK(zs_ref_attn_bwd(&whole, 1, d, scale, q, k, v, o, lse, dout, dq, dk, dv, &e), &e);

    /* Ring: merged results per q chunk. */
    float *mo = calloc(nq, 4), *ml = malloc(sizeof(float) * s * H);
    float *po = calloc(nq, 4), *pl = malloc(sizeof(float) * s * H);
    for (int i = 0; i < s * H; i++)
        ml[i] = -INFINITY;
    zs_hw_block *blocks = malloc(sizeof *blocks * nc * nc);
    int nb = 0;
    for (int r = 0; r < g; r++) {
        int mine[2] = {r, nc - 1 - r};
        for (int step = 0; step < g; step++) {
            int src = (r - step + g) % g; /* the rank whose KV arrives at this step */
            int theirs[2] = {src, nc - 1 - src};
            for (int a = 0; a < 2; a++)
                for (int c = 0; c < 2; c++) {
                    int qc = mine[a], kc = theirs[c];
                    if (kc > qc)
                        continue; /* entirely above the diagonal */
                    zs_hw_block b = {cut[qc], cut[kc], cut[qc + 1] - cut[qc], cut[kc + 1] - cut[kc],
                                     cut[qc], cut[kc]};
                    blocks[nb++] = b;
                    ZS_ASSERT_OK(zs_ref_attn_fwd(&b, 1, d, scale, q, k, v, po, pl, &e), &e);
                    int64_t r0 = b.q_off * H, rows = b.nq;
                    zs_ref_attn_merge(rows, H, hd, mo + r0 * hd, ml + r0, po + r0 * hd, pl + r0,
                                      mo + r0 * hd, ml + r0);
                }
        }
    }
    /* Every (q, k) pair with k <= q is covered once: the chunk pairs form
     * the lower triangle of the 2g x 2g chunk grid. */
    ZS_ASSERT_INT_EQ(nb, nc * (nc + 1) / 2);
    double eo = zs_rel_err(mo, o, nq, 1e-6), el = zs_rel_err(ml, lse, s * H, 1e-6);
    if (!(eo <= 1e-5 && el <= 1e-5))
        fprintf(stderr, "zigzag s=%d g=%d: output error %g, lse error %g\n", s, g, eo, el);
    CU_ASSERT(eo <= 1e-5);
    CU_ASSERT(el <= 1e-5);

    float *bq = calloc(nq, 4), *bk = calloc(nk, 4), *bv = calloc(nk, 4);
    ZS_ASSERT_OK(zs_ref_attn_bwd(blocks, nb, d, scale, q, k, v, mo, ml, dout, bq, bk, bv, &e), &e);
    CU_ASSERT(zs_rel_err(bq, dq, nq, 1e-6) <= 1e-4);
    CU_ASSERT(zs_rel_err(bk, dk, nk, 1e-6) <= 1e-4);
    CU_ASSERT(zs_rel_err(bv, dv, nk, 1e-6) <= 1e-4);

    free(q), free(k), free(v), free(dout), free(o), free(lse), free(dq), free(dk), free(dv);
    free(mo), free(ml), free(po), free(pl), free(blocks), free(bq), free(bk), free(bv);
}

static void test_zigzag_ring_equals_unsplit(void)
{
    zs_attn_dims d = {2, 1, 8};
    const int even[] = {0, 10, 20, 30, 40}; /* s = 40, g = 2: equal chunks */
    check_zigzag(40, 2, even, &d, 7);
    const int uneven[] = {0, 3, 11, 12, 20, 26, 33}; /* s = 33, g = 3: uneven cuts */
    zs_attn_dims d4 = {4, 4, 4};
    check_zigzag(33, 3, uneven, &d4, 11);
}

/* Finite differences of L = sum(O * W) with respect to Q, K and V. */
static void test_attn_bwd_finite_differences(void)
{
    rng_state = 5;
    zs_attn_dims d = {2, 1, 4};
    int s = 6;
    int64_t nq = s * 2 * 4, nk = s * 1 * 4;
    float *q = rnd_vec(nq), *k = rnd_vec(nk), *v = rnd_vec(nk), *w = rnd_vec(nq);
    float *o = calloc(nq, 4), *lse = calloc(s * 2, 4);
    float *dq = calloc(nq, 4), *dk = calloc(nk, 4), *dv = calloc(nk, 4);
    zs_hw_block b = {0, 0, s, s, 0, 0};
    float scale = 0.7f;
    zs_err e;
    ZS_ASSERT_OK(zs_ref_attn_fwd(&b, 1, &d, scale, q, k, v, o, lse, &e), &e);
    ZS_ASSERT_OK(zs_ref_attn_bwd(&b, 1, &d, scale, q, k, v, o, lse, w, dq, dk, dv, &e), &e);
    float *tensors[3] = {q, k, v}, *grads[3] = {dq, dk, dv};
    int64_t sizes[3] = {nq, nk, nk};
    for (int t = 0; t < 3; t++) {
        double maxg = 1e-3, maxerr = 0;
        for (int64_t i = 0; i < sizes[t]; i++) {
            double loss[2];
            float keep = tensors[t][i];
            for (int sgn = 0; sgn < 2; sgn++) {
                tensors[t][i] = keep + (sgn ? -1e-2f : 1e-2f);
                ZS_ASSERT_OK(zs_ref_attn_fwd(&b, 1, &d, scale, q, k, v, o, lse, &e), &e);
                loss[sgn] = 0;
                for (int64_t x = 0; x < nq; x++)
                    loss[sgn] += (double)o[x] * w[x];
            }
            tensors[t][i] = keep;
            double num = (loss[0] - loss[1]) / 2e-2;
            maxg = fmax(maxg, fabs(num));
            maxerr = fmax(maxerr, fabs(num - grads[t][i]));
        }
        if (maxerr > 2e-3 * maxg)
            fprintf(stderr, "tensor %d: finite-difference error %g (max gradient %g)\n", t, maxerr,
                    maxg);
        CU_ASSERT(maxerr <= 2e-3 * maxg);
    }
    free(q), free(k), free(v), free(w), free(o), free(lse), free(dq), free(dk), free(dv);
}

static void test_merge_identity_and_symmetry(void)
{
    const float oa[] = {1, 2}, ob[] = {3, 5};
    const float la[] = {0.5f}, lb[] = {-INFINITY};
    float o[2], l[1];
    /* A partial with LSE -inf contributes nothing. */
    zs_ref_attn_merge(1, 1, 2, oa, la, ob, lb, o, l);
    ZS_ASSERT_NEAR(o[0], 1, 1e-7);
    ZS_ASSERT_NEAR(o[1], 2, 1e-7);
    ZS_ASSERT_NEAR(l[0], 0.5, 1e-7);
    /* Equal LSEs average the outputs and add log 2. */
    const float lc[] = {0.5f};
    zs_ref_attn_merge(1, 1, 2, oa, la, ob, lc, o, l);
    ZS_ASSERT_NEAR(o[0], 2, 1e-6);
    ZS_ASSERT_NEAR(o[1], 3.5, 1e-6);
    ZS_ASSERT_NEAR(l[0], 0.5 + log(2.0), 1e-6);
    /* Both empty: O = 0, LSE = -inf, never NaN. */
    zs_ref_attn_merge(1, 1, 2, oa, lb, ob, lb, o, l);
    CU_ASSERT(o[0] == 0 && o[1] == 0 && isinf(l[0]));
}

static void test_blocks_check(void)
{
    zs_attn_dims d = {4, 3, 8};
    zs_hw_block b = {0, 0, 4, 4, 0, 0};
    zs_err e;
    CU_ASSERT(zs_hw_blocks_check(&b, 1, &d, 4, 4, &e) == ZS_EINPUT); /* 3 does not divide 4 */
    d.kv_heads = 2;
    ZS_ASSERT_OK(zs_hw_blocks_check(&b, 1, &d, 4, 4, &e), &e);
    b.k_off = 1;
    CU_ASSERT(zs_hw_blocks_check(&b, 1, &d, 4, 4, &e) == ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "block 0");
}

static void test_rel_err(void)
{
    const float a[] = {1, 2, -INFINITY}, b[] = {1, 2.02f, -INFINITY}, c[] = {NAN, 2, 0};
    ZS_ASSERT_NEAR(zs_rel_err(a, b, 3, 0), 0.02 / 2.02, 1e-6);
    CU_ASSERT(isnan(zs_rel_err(c, b, 3, 0)));
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"bf16", test_bf16},
        {"gemm_hand", test_gemm_hand},
        {"elementwise_hand", test_elementwise_hand},
        {"attn_hand", test_attn_hand},
        {"attn_matches_naive", test_attn_matches_naive},
        {"zigzag_ring_equals_unsplit", test_zigzag_ring_equals_unsplit},
        {"attn_bwd_finite_differences", test_attn_bwd_finite_differences},
        {"merge_identity_and_symmetry", test_merge_identity_and_symmetry},
        {"blocks_check", test_blocks_check},
        {"rel_err", test_rel_err},
        {NULL, NULL}};
    static const zs_test_suite suites[] = {{"hw_ref", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
