/* CP token layouts (models/zs_cplayout.h) and their pricing
 * (zs_cplayout_price.h): hand-checked block counts on cp = 2, exact causal
 * coverage on random lengths, and the pricing's structure (the contiguous
 * ring's imbalance, llama3's collectives, the ideal), and ring-flash-attention's
 * contiguous llama3. */
#include <stdlib.h>

#include "zs_cost.h"
#include "zs_cplayout.h"
#include "zs_cplayout_price.h"
#include "zs_test.h"

static int64_t pairs(const zs_attn_block *b, int n)
{
    int64_t p = 0;
    for (int i = 0; i < n; i++)
        p += zs_attn_block_pairs(&b[i]);
    return p;
}

/* cp = 2, 8 tokens: the real blocks of member k in step j, by hand.
 * zigzag (chunks {0,3} and {1,2} of 4): 3, 3 blocks in step 0 (two
 * diagonal, one full), 2, 2 in step 1 (the KV chunk below both queries, or
 * the late query chunk against both). ring (chunks {0}, {1}): 1, 1, then
 * member 0 skips step 1 entirely (its KV is later) and member 1 computes
 * one full block. stripe (runs {0,2,4,6} and {1,3,5,7} of 8): 10 (4
 * diagonal + 6 below) for both in step 0; in step 1 member 0 sees 6 runs
 * below its own, member 1 all 10. */
static void test_cp2_hand_checked(void)
{
    static const int want[3][2][2] = {{{3, 3}, {2, 2}}, {{1, 1}, {0, 1}}, {{10, 10}, {6, 10}}};
    static const zs_cp_layout ls[3] = {ZS_CPL_ZIGZAG, ZS_CPL_RING, ZS_CPL_STRIPE};
    zs_attn_block real[ZS_CPL_MAXBLK], cost[ZS_CPL_MAXBLK];
    for (int l = 0; l < 3; l++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++) {
                int nr, nc;
                zs_cpl_step_blocks(ls[l], 0, 8, 2, 0, k, j, real, &nr, cost, &nc);
                ZS_ASSERT_INT_EQ(nr, want[l][j][k]);
            }
    /* Stripe is priced token by token: member 0 in step 1 runs its 4
     * tokens against member 1's 4 shifted by one (6 pairs), member 1 in
     * step 1 a causal 4 x 4 (10 pairs). */
    int nr, nc;
    zs_cpl_step_blocks(ZS_CPL_STRIPE, 0, 8, 2, 0, 0, 1, real, &nr, cost, &nc);
    ZS_ASSERT_INT_EQ(nc, 1);
    ZS_ASSERT_INT_EQ(pairs(cost, nc), 6);
    zs_cpl_step_blocks(ZS_CPL_STRIPE, 0, 8, 2, 0, 1, 1, real, &nr, cost, &nc);
    ZS_ASSERT_INT_EQ(pairs(cost, nc), 10);
    /* llama3: member 0's chunks 0 and 3 against keys up to their ends. */
    zs_cpl_gather_blocks(0, 8, 2, 0, 0, real, &nr, cost, &nc);
    ZS_ASSERT_INT_EQ(nr, 2);
    ZS_ASSERT_INT_EQ(real[1].q0, 6);
    ZS_ASSERT_INT_EQ(real[1].k1, 8);
    ZS_ASSERT_INT_EQ(pairs(real, nr), 3 + 2 * 6 + 3);
}

/* Every layout computes each causal pair exactly once over all members
 * and steps, in the real geometry and (exact cutting) the priced one. */
static void test_exact_coverage(void)
{
    uint64_t x = 7;
    zs_attn_block real[ZS_CPL_MAXBLK], cost[ZS_CPL_MAXBLK];
    for (int it = 0; it < 200; it++) {
        int g = 1 + (int)(zs_test_rng(&x) % 8);
        int32_t len = 2 * g + (int32_t)(zs_test_rng(&x) % 3000);
        int64_t all = (int64_t)len * (len + 1) / 2;
        for (int l = 0; l < ZS_CPL_N; l++) {
            int64_t pr = 0, pc = 0, held = 0;
            for (int k = 0; k < g; k++) {
                int nr, nc;
                held += zs_cpl_member_tokens((zs_cp_layout)l, len, g, 0, k);
                if (!zs_cpl_is_ring((zs_cp_layout)l)) {
                    zs_cpl_gather_blocks(0, len, g, 0, k, real, &nr, cost, &nc);
                    pr += pairs(real, nr), pc += pairs(cost, nc);
                    continue;
                }
                for (int j = 0; j < g; j++) {
                    zs_cpl_step_blocks((zs_cp_layout)l, 0, len, g, 0, k, j, real, &nr, cost, &nc);
                    for (int i = 0; i < nr; i++) /* none above the diagonal */
                        CU_ASSERT(real[i].k0 < real[i].q1);
                    pr += pairs(real, nr), pc += pairs(cost, nc);
                }
            }
            ZS_ASSERT_INT_EQ(pr, all);
            ZS_ASSERT_INT_EQ(pc, all);
            ZS_ASSERT_INT_EQ(held, len);
        }
    }
}

/* Padding (TE): zigzag pads to 2g chunks, ring to g, stripe token-level. */
static void test_padding(void)
{
    ZS_ASSERT_INT_EQ(zs_cpl_member_tokens(ZS_CPL_ZIGZAG, 10, 4, 1, 3), 4);
    ZS_ASSERT_INT_EQ(zs_cpl_member_tokens(ZS_CPL_RING, 10, 4, 1, 3), 3);
    ZS_ASSERT_INT_EQ(zs_cpl_member_tokens(ZS_CPL_STRIPE, 10, 4, 1, 3), 3);
    ZS_ASSERT_INT_EQ(zs_cpl_member_tokens(ZS_CPL_STRIPE, 10, 4, 0, 3), 2);
    zs_cp_layout l;
    zs_err e;
    ZS_ASSERT_OK(zs_cpl_parse("stripe", "--layout", &l, &e), &e);
    ZS_ASSERT_INT_EQ(l, ZS_CPL_STRIPE);
    ZS_ASSERT_INT_EQ(zs_cpl_parse("striped", "--layout", &l, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.fix, "zigzag");
}

static zs_cost *cost_new(const char *cluster)
{
    zs_model m;
    zs_cluster cl;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama3-8b", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load(cluster, 1, &cl, &e), &e);
    zs_cost *c = zs_cost_analytic_new(&m, &cl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

static zs_cpl_price price(const zs_cost *c, zs_cp_layout l, int32_t len, int g, int backward)
{
    zs_cpl_pass p = {l, &len, 1, g, 1, 0, 32, 8, backward, ZS_CPL_IMPL_FUSED};
    zs_cpl_price o;
    zs_err e;
    ZS_ASSERT_OK(zs_cpl_price_pass(c, &p, &o, &e), &e);
    return o;
}

/* The structure of the prices, not their values: the contiguous ring's
 * last member computes (2g-1)/g of the mean, so the ring takes ~(2g-1)/g
 * of zigzag's time on a long document; llama3 has no accumulator passes
 * and pays its collectives in full; nothing beats its ideal by much. */
static void test_price_structure(void)
{
    zs_cost *c = cost_new("cluster-b");
    for (int b = 0; b < 2; b++) {
        zs_cpl_price z = price(c, ZS_CPL_ZIGZAG, 65536, 8, b),
                     r = price(c, ZS_CPL_RING, 65536, 8, b);
        zs_cpl_price s = price(c, ZS_CPL_STRIPE, 65536, 8, b),
                     l = price(c, ZS_CPL_LLAMA3, 65536, 8, b);
        CU_ASSERT(r.compute / r.compute_mean > 1.7 && r.compute / r.compute_mean < 15.0 / 8);
        ZS_ASSERT_INT_EQ(r.busiest, 7);
        CU_ASSERT(z.compute / z.compute_mean < 1.01);
        CU_ASSERT(s.compute / s.compute_mean < 1.01);
        CU_ASSERT(r.time / z.time > 1.6 && r.time / z.time < 2.0);
        CU_ASSERT(l.merge == 0 && z.merge > 0);
        CU_ASSERT(l.time >= l.compute + l.comm - 1e-12);
        for (int i = 0; i < 4; i++) {
            const zs_cpl_price *o = i == 0 ? &z : i == 1 ? &r : i == 2 ? &s : &l;
            CU_ASSERT(o->time >= o->compute);
            CU_ASSERT(o->ideal / o->time < 1.1);
            CU_ASSERT(o->kv_bytes == 8192.0 * 2 * 8 * 128 * 2);
        }
        ZS_ASSERT_INT_EQ(z.flops == r.flops && r.flops == s.flops, 1);
    }
    /* A ring member's own chain holds its kernels and accumulator passes. */
    zs_cpl_price t = price(c, ZS_CPL_ZIGZAG, 512, 8, 1);
    CU_ASSERT(t.time >= t.compute + t.merge - 1e-12 && t.comm > 0);
    int32_t lens[2] = {4096, 10};
    zs_cpl_pass bad = {ZS_CPL_RING, lens, 2, 8, 1, 0, 32, 8, 0, ZS_CPL_IMPL_FUSED};
    zs_cpl_price o;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_cpl_price_pass(c, &bad, &o, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.what, "10 tokens");
    /* Mixed lengths: a short document beside a long one adds its own
     * small blocks and is priced, not averaged away. */
    lens[1] = 512;
    zs_cpl_pass mix = {ZS_CPL_ZIGZAG, lens, 2, 8, 1, 0, 32, 8, 0, ZS_CPL_IMPL_FUSED};
    ZS_ASSERT_OK(zs_cpl_price_pass(c, &mix, &o, &e), &e);
    zs_cpl_price one = price(c, ZS_CPL_ZIGZAG, 4096, 8, 0);
    CU_ASSERT(o.time > one.time && o.flops > one.flops);
    zs_cost_free(c);
}

/* A cost model that prices only the memory-bound kernels, each at its
 * HBM bytes (attention and transfers free): a pass's time is then the
 * busiest member's extra bytes. */
static double zero_attn(const zs_cost *c, const zs_attn_block *b, int n, int h, int bwd)
{
    (void)c, (void)b, (void)n, (void)h, (void)bwd;
    return 0;
}
static double zero_gemm(const zs_cost *c, double m, double n, double k, double bytes)
{
    (void)c, (void)m, (void)n, (void)k, (void)bytes;
    return 0;
}
static double bytes_only(const zs_cost *c, double bytes)
{
    (void)c;
    return bytes;
}
static double zero_p2p(const zs_cost *c, int a, int b, double bytes)
{
    (void)c, (void)a, (void)b, (void)bytes;
    return 0;
}
static double zero_coll(const zs_cost *c, zs_coll_kind k, const int *r, int n, double bytes)
{
    (void)c, (void)k, (void)r, (void)n, (void)bytes;
    return 0;
}
static const zs_cost_ops count_ops = {"bytes",  zero_attn, zero_gemm, bytes_only,
                                      zero_p2p, zero_coll, NULL};

static double extra_bytes(const zs_cost *c, zs_cp_layout l, const int32_t *lens, int docs,
                          int backward, zs_cpl_impl impl)
{
    zs_cost bc = *c;
    bc.ops = &count_ops;
    zs_cpl_pass p = {l, lens, docs, 2, 1, 0, 32, 8, backward, impl};
    zs_cpl_price o;
    zs_err e;
    ZS_ASSERT_OK(zs_cpl_price_pass(&bc, &p, &o, &e), &e);
    CU_ASSERT(o.merge == o.time);
    return o.merge;
}

/* ring-flash-attention's ops by hand, cp = 2, llama3-8b (32 heads, 8 KV
 * heads, d = 128: 4096 output, 1024 K elements, 32 lse values a token),
 * bf16, one document of 1024 tokens (512 a member). Forward, every member:
 * out = block_out.to(fp32) after step 0 and out.to(bf16) at the end, 512 x
 * 4096 x 6 = 12582912 bytes each. ring: member 1 corrects 512 tokens in
 * step 1: the fused output kernel 512 x (4096 x 10 + 32 x 8) = 21102592,
 * the lse's three 512 x 32 x (12 + 8 + 12) = 524288: 46792704 (member 0
 * skips step 1). stripe: member 0's step 1 is the slice out[:, 1:] of 511
 * tokens: 511 x (40960 + 256) + 511 x 1024 + its copy back 511 x (4096 +
 * 32) x 8 = 38459904, with the casts 63625728. zigzag: the busiest is
 * member 1 (a full update, as ring's member 1; member 0's slice is the
 * late chunk of 256 tokens). Eager, ring: the correction's ops each read
 * and write their own: 512 x 4096 x (6 + 12 + 8 + 12) + 512 x 32 x (12 +
 * 8 + 4) + the lse's 524288 = 80609280, 105775104 with the casts. Varlen
 * zigzag (two documents of 512, chunks of 128): member 0 gathers q1 (256 x
 * 4096 x 4 = 4194304) and, in step 1, out[half_index1] and its lse (256 x
 * 4128 x 8 = 8454144) before the correction (256 tokens: 10813440) and
 * scatters them back after: 57081856 with the casts. Backward, ring,
 * member 1: the fp32 casts of dq, dk, dv (512 x (4096 + 2 x 1024) x 6 =
 * 18874368) after step 0, dq += 512 x 4096 x 10 and dk, dv sums 2 x 512 x
 * 1024 x 10 in step 1, the casts back 18874368: 69206016. The generic
 * model (fused): 512 x 4096 x 10 per member in step 1 = 20971520. */
static void test_rfa_bytes_hand_checked(void)
{
    zs_cost *c = cost_new("cluster-b");
    int32_t one = 1024, two[2] = {512, 512};
    const zs_cpl_impl rfa = ZS_CPL_IMPL_RFA;
    CU_ASSERT_DOUBLE_EQUAL(extra_bytes(c, ZS_CPL_RING, &one, 1, 0, rfa), 46792704.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(extra_bytes(c, ZS_CPL_STRIPE, &one, 1, 0, rfa), 63625728.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(extra_bytes(c, ZS_CPL_ZIGZAG, &one, 1, 0, rfa), 46792704.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(extra_bytes(c, ZS_CPL_RING, &one, 1, 0, ZS_CPL_IMPL_RFA_EAGER),
                           105775104.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(extra_bytes(c, ZS_CPL_ZIGZAG, two, 2, 0, rfa), 57081856.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(extra_bytes(c, ZS_CPL_RING, &one, 1, 1, rfa), 69206016.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(extra_bytes(c, ZS_CPL_RING, &one, 1, 0, ZS_CPL_IMPL_FUSED), 20971520.0,
                           0.5);
    /* llama3 runs nothing around its kernel in the generic model. Under
     * ring-flash-attention (two head groups of 4 KV heads; 512 tokens a
     * member), backward, per group: the .contiguous() copy of the local
     * K and V heads (2 x 2 x 512 x 4 x 256 = 2097152), the gathered dK/dV
     * buffer zeroed (2 x 1024 x 4 x 256 = 2097152) and dK, dV copied into
     * place (2097152): 12582912 for the two. */
    CU_ASSERT_DOUBLE_EQUAL(extra_bytes(c, ZS_CPL_LLAMA3, &one, 1, 1, ZS_CPL_IMPL_FUSED), 0.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(extra_bytes(c, ZS_CPL_LLAMA3, &one, 1, 1, rfa), 12582912.0, 0.5);
    /* The names parse back; a bad one names the values. */
    zs_cpl_impl i;
    zs_err e;
    for (int k = 0; k <= ZS_CPL_IMPL_RFA_EAGER; k++) {
        ZS_ASSERT_OK(zs_cpl_impl_parse(zs_cpl_impl_name((zs_cpl_impl)k), "--impl", &i, &e), &e);
        ZS_ASSERT_INT_EQ(i, k);
    }
    ZS_ASSERT_INT_EQ(zs_cpl_impl_parse("te", "--impl", &i, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.fix, "ring-flash-attn");
    zs_cost_free(c);
}

/* The default implementation prices as before --impl existed (the values
 * of `cost attention --cluster cluster-b --model llama3-8b --len 65536 --cp
 * 8 --layout all`, forward and backward, at the commit before it), and
 * ring-flash-attention only adds work. */
static void test_fused_unchanged(void)
{
    static const double before[2][3] = {{13.9096821998707, 24.8622515395073, 14.0574564594388},
                                        {37.1955, 66.2919, 37.5153}};
    static const zs_cp_layout ls[3] = {ZS_CPL_ZIGZAG, ZS_CPL_RING, ZS_CPL_STRIPE};
    zs_cost *c = cost_new("cluster-b");
    for (int b = 0; b < 2; b++)
        for (int l = 0; l < 3; l++) {
            zs_cpl_price o = price(c, ls[l], 65536, 8, b);
            CU_ASSERT_DOUBLE_EQUAL(o.time * 1e3, before[b][l], b ? 5e-5 : 1e-9);
            int32_t len = 65536;
            zs_cpl_pass p = {ls[l], &len, 1, 8, 1, 0, 32, 8, b, ZS_CPL_IMPL_RFA};
            zs_cpl_price r;
            zs_err e;
            ZS_ASSERT_OK(zs_cpl_price_pass(c, &p, &r, &e), &e);
            CU_ASSERT(r.time > o.time && r.compute == o.compute && r.ideal == o.ideal);
        }
    zs_cost_free(c);
}

/* ring-flash-attention's llama3: the pack's contiguous placement by hand
 * (documents of 6 and 10 tokens over 4 members: member 1 holds the end of
 * the first and the start of the second), and the pricing's structure: a
 * long document's last member computes ~(2g-1)/g of the mean; with one
 * head group (4 KV heads) nothing overlaps, so the forward is the copy,
 * the gathers and the busiest kernel end to end; with two the second
 * group's gathers hide under the first group's kernel. */
static void test_rfa_llama3(void)
{
    int32_t lens[2] = {6, 10};
    zs_attn_block b[2];
    ZS_ASSERT_INT_EQ(zs_cpl_pack_blocks(lens, 2, 4, 0, b), 1);
    CU_ASSERT(b[0].doc == 0 && b[0].q0 == 0 && b[0].q1 == 4 && b[0].k0 == 0 && b[0].k1 == 4);
    ZS_ASSERT_INT_EQ(zs_cpl_pack_blocks(lens, 2, 4, 1, b), 2);
    CU_ASSERT(b[0].doc == 0 && b[0].q0 == 4 && b[0].q1 == 6 && b[0].k1 == 6);
    CU_ASSERT(b[1].doc == 1 && b[1].q0 == 0 && b[1].q1 == 2 && b[1].k1 == 2);
    ZS_ASSERT_INT_EQ(zs_cpl_pack_blocks(lens, 2, 4, 3, b), 1);
    CU_ASSERT(b[0].doc == 1 && b[0].q0 == 6 && b[0].q1 == 10 && b[0].k0 == 0 && b[0].k1 == 10);
    zs_cost *c = cost_new("cluster-b");
    int32_t len = 65536;
    zs_cpl_price o[2];
    zs_err e;
    for (int i = 0; i < 2; i++) {
        zs_cpl_pass p = {ZS_CPL_LLAMA3, &len, 1, 8, 1, 0, 32, 4 * (i + 1), 0, ZS_CPL_IMPL_RFA};
        ZS_ASSERT_OK(zs_cpl_price_pass(c, &p, &o[i], &e), &e);
        ZS_ASSERT_INT_EQ(o[i].busiest, 7);
        CU_ASSERT(o[i].compute / o[i].compute_mean > 1.7 &&
                  o[i].compute / o[i].compute_mean < 15.0 / 8 + 1e-9);
        CU_ASSERT(o[i].comm > 0 && o[i].merge > 0);
    }
    ZS_ASSERT_REL(o[0].time, o[0].merge + o[0].comm + o[0].compute, 1e-12);
    CU_ASSERT(o[1].time < o[1].merge + o[1].comm + o[1].compute);
    CU_ASSERT(o[1].time > o[1].compute);
    zs_cost_free(c);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"cp2_hand_checked", test_cp2_hand_checked},
                                         {"exact_coverage", test_exact_coverage},
                                         {"padding", test_padding},
                                         {"price_structure", test_price_structure},
                                         {"rfa_bytes_hand_checked", test_rfa_bytes_hand_checked},
                                         {"fused_unchanged", test_fused_unchanged},
                                         {"rfa_llama3", test_rfa_llama3},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"cplayout", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
