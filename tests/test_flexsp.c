/* Tests of FlexSP (planners/zs_flexsp_solve_internal.h and the flexsp
 * planner) on hand-checked small cases:
 *   - the smallest group a sequence fits, the bucketing DP (least padding
 *     to the bucket's longest; the same buckets as a full scan of every
 *     split on random lengths with ties) and the Sequence Blaster's cut (contiguous
 *     runs of least largest tokens);
 *   - the per-micro-batch planner: the multiset of group sizes and the
 *     assignment that minimise the slowest group under a toy cost, every
 *     group used, and the exhaustive search beating the greedy one where
 *     longest-first greedy is known to miss (3, 3, 2, 2, 2 on two GPUs);
 *   - the local search that replaces the enumeration on large clusters;
 *   - the whole solver: a batch over the cluster's capacity cut into two
 *     micro-batches, and an error naming a sequence no group holds;
 *   - the planner: whole documents on aligned power-of-two groups as
 *     contiguous shards, a pass of the plan validator, clear option errors. */
#include <stdlib.h>
#include <string.h>

#include "zs_flexsp_solve_internal.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

static void test_min_sp(void)
{
    ZS_ASSERT_INT_EQ(zs_flexsp_min_sp(100, 100, 1), 1);
    ZS_ASSERT_INT_EQ(zs_flexsp_min_sp(101, 100, 1), 2);
    ZS_ASSERT_INT_EQ(zs_flexsp_min_sp(300, 100, 1), 4); /* 3 GPUs' worth: the next power of two */
    ZS_ASSERT_INT_EQ(zs_flexsp_min_sp(50, 100, 2), 2);  /* min_sp */
}

/* Ascending 1, 2, 3, 10, 11 in two buckets: {1, 2, 3} to 3 and {10, 11}
 * to 11 pads 2 + 1 + 1 = 4 tokens (the alternatives pad 10 or more):
 * 27 + 4 = 31 padded tokens. */
static void test_bucket(void)
{
    int32_t len[] = {1, 2, 3, 10, 11}, bound[5];
    ZS_ASSERT_INT_EQ(zs_flexsp_bucket(len, 5, 2, bound), 31);
    int32_t want[] = {3, 3, 3, 11, 11};
    for (int i = 0; i < 5; i++)
        ZS_ASSERT_INT_EQ(bound[i], want[i]);
    /* As many buckets as lengths: no padding. */
    ZS_ASSERT_INT_EQ(zs_flexsp_bucket(len, 5, 5, bound), 27);
}

/* The bucketing DP against a plain O(B n^2) scan of every previous end
 * (first best on ties), on random ascending lengths with many ties: the
 * same padded tokens and the same bounds for every B. The planner's DP
 * skips most of that scan (the best previous end never decreases), which
 * must not change a single bucket. */
static int64_t bucket_full_scan(const int32_t *len, int n, int B, int32_t *bound)
{
    int64_t P[65], dp[65][65];
    int arg[65][65];
    P[0] = 0;
    for (int i = 1; i <= n; i++)
        P[i] = P[i - 1] + len[i - 1];
    for (int i = 0; i <= n; i++)
        dp[0][i] = i == 0 ? 0 : INT64_MAX;
    for (int k = 1; k <= B; k++)
        for (int i = 0; i <= n; i++) {
            dp[k][i] = INT64_MAX;
            for (int j = k - 1; j < i; j++) {
                if (dp[k - 1][j] == INT64_MAX)
                    continue;
                int64_t c = dp[k - 1][j] + (int64_t)len[i - 1] * (i - j) - (P[i] - P[j]);
                if (c < dp[k][i]) {
                    dp[k][i] = c;
                    arg[k][i] = j;
                }
            }
        }
    for (int k = B, i = n; k > 0; k--) {
        int j = arg[k][i];
        for (int m = j; m < i; m++)
            bound[m] = len[i - 1];
        i = j;
    }
    return P[n] + dp[B][n];
}

static void test_bucket_full_scan(void)
{
    uint64_t x = 12345;
    int32_t len[64], want[64], got[64];
    for (int trial = 0; trial < 400; trial++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        int n = 1 + (int)(x >> 33) % 64;
        int range = trial % 4 == 0 ? 3 : trial % 4 == 1 ? 10 : 1000; /* ties, then few */
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            len[i] = 1 + (int32_t)((x >> 33) % (uint64_t)range);
        }
        for (int i = 1; i < n; i++) /* ascending */
            for (int j = i; j > 0 && len[j - 1] > len[j]; j--) {
                int32_t t = len[j];
                len[j] = len[j - 1];
                len[j - 1] = t;
            }
        for (int B = 1; B <= n; B += 1 + n / 8) {
            int64_t w = bucket_full_scan(len, n, B, want);
            ZS_ASSERT_INT_EQ(zs_flexsp_bucket(len, n, B, got), w);
            for (int i = 0; i < n; i++)
                ZS_ASSERT_INT_EQ(got[i], want[i]);
        }
    }
}

/* Longest first 8, 6, 6, 4, 2, 2 (28 tokens) into two runs: {8, 6} and
 * {6, 4, 2, 2}, 14 tokens each. */
static void test_chunk(void)
{
    int32_t len[] = {8, 6, 6, 4, 2, 2};
    int cut[3];
    ZS_ASSERT_INT_EQ(zs_flexsp_chunk(len, 6, 2, cut), 0);
    ZS_ASSERT_INT_EQ(cut[0], 0);
    ZS_ASSERT_INT_EQ(cut[1], 2);
    ZS_ASSERT_INT_EQ(cut[2], 6);
}

/* A toy cost: attention len^2 / n, plus 50 per token on a group of more
 * than one GPU (its all-to-alls). */
static double toy_cost(void *arg, int32_t len, int n)
{
    (void)arg;
    return (double)len * len / n + (n > 1 ? 50.0 * len : 0);
}

static double linear_cost(void *arg, int32_t len, int n)
{
    (void)arg;
    (void)n;
    return len;
}

/* 4 GPUs holding 100 tokens each, sequences 100, 90, 90. {4}: 6550 +
 * 14000 = 20550; {2, 2}: 90 and 90 together 17100; {2, 1, 1}: 100 on the
 * pair (5000 + 5000) and each 90 alone (8100): 10000; {1, 1, 1, 1} leaves
 * a GPU without a sequence (the MILP's "every group used"). */
static void test_plan_micro(void)
{
    zs_flexsp_cfg cfg = {
        .nslots = 4, .min_sp = 1, .max_sp = 4, .cap = 100, .exact_max = 8, .cost = toy_cost};
    int32_t plen[] = {90, 100, 90};
    int ng, size[8], first[8], grp[3];
    double pred;
    ZS_ASSERT_INT_EQ(zs_flexsp_plan_micro(&cfg, plen, 3, &ng, size, first, grp, &pred), 1);
    ZS_ASSERT_INT_EQ(ng, 3);
    ZS_ASSERT_INT_EQ(size[0], 2);
    ZS_ASSERT_INT_EQ(size[1], 1);
    ZS_ASSERT_INT_EQ(size[2], 1);
    ZS_ASSERT_INT_EQ(first[1], 2);
    ZS_ASSERT_INT_EQ(first[2], 3);
    ZS_ASSERT_INT_EQ(grp[1], 0); /* the 100 on the pair */
    ZS_ASSERT_INT_EQ(grp[0], 1);
    ZS_ASSERT_INT_EQ(grp[2], 2);
    CU_ASSERT_DOUBLE_EQUAL(pred, 10000, 1e-9);
    /* One sequence of 90 on max_sp = 2 of 4 GPUs: no partition uses every
     * group, so groups may stay idle; alone on one GPU (8100) beats a pair
     * (4050 + 4500): {2, 1, 1} with it on the first single GPU. */
    cfg.max_sp = 2;
    ZS_ASSERT_INT_EQ(zs_flexsp_plan_micro(&cfg, plen, 1, &ng, size, first, grp, &pred), 1);
    ZS_ASSERT_INT_EQ(ng, 3);
    ZS_ASSERT_INT_EQ(grp[0], 1);
    CU_ASSERT_DOUBLE_EQUAL(pred, 8100, 1e-9);
    /* 150 tokens need two GPUs, and max_sp = 1 has none. */
    cfg.max_sp = 1;
    int32_t big[] = {150};
    ZS_ASSERT_INT_EQ(zs_flexsp_plan_micro(&cfg, big, 1, &ng, size, first, grp, &pred), 0);
}

/* Two single GPUs, linear cost, 30, 30, 20, 20, 20: longest first greedy
 * ends at 70 (30 + 20 + 20), the optimum is 60 ({30, 30}, {20, 20, 20}). */
static void test_exact_beats_greedy(void)
{
    zs_flexsp_cfg cfg = {
        .nslots = 2, .min_sp = 1, .max_sp = 1, .cap = 1000, .exact_max = 0, .cost = linear_cost};
    int32_t plen[] = {30, 30, 20, 20, 20};
    int ng, size[4], first[4], grp[5];
    double pred;
    ZS_ASSERT_INT_EQ(zs_flexsp_plan_micro(&cfg, plen, 5, &ng, size, first, grp, &pred), 1);
    CU_ASSERT_DOUBLE_EQUAL(pred, 70, 1e-9);
    cfg.exact_max = 8;
    ZS_ASSERT_INT_EQ(zs_flexsp_plan_micro(&cfg, plen, 5, &ng, size, first, grp, &pred), 1);
    CU_ASSERT_DOUBLE_EQUAL(pred, 60, 1e-9);
    ZS_ASSERT_INT_EQ(grp[0], grp[1]);
    ZS_ASSERT_INT_EQ(grp[2], grp[3]);
    ZS_ASSERT_INT_EQ(grp[3], grp[4]);
}

/* 128 GPUs with groups of one allowed: past what is enumerated, the local
 * search. 128 sequences of 50 tokens: one per GPU (2500 each) is best and
 * is one of its starting points; one sequence of 12800 tokens needs all
 * 128 GPUs (12800^2 / 128 + 50 x 12800). */
static void test_climb(void)
{
    zs_flexsp_cfg cfg = {
        .nslots = 128, .min_sp = 1, .max_sp = 128, .cap = 100, .exact_max = 8, .cost = toy_cost};
    int32_t plen[128];
    int ng, size[129], first[129], grp[128];
    double pred;
    for (int i = 0; i < 128; i++)
        plen[i] = 50;
    ZS_ASSERT_INT_EQ(zs_flexsp_plan_micro(&cfg, plen, 128, &ng, size, first, grp, &pred), 1);
    ZS_ASSERT_INT_EQ(ng, 128);
    CU_ASSERT_DOUBLE_EQUAL(pred, 2500, 1e-9);
    for (int i = 0; i < 128; i++)
        ZS_ASSERT_INT_EQ(grp[i], i);
    plen[0] = 12800;
    ZS_ASSERT_INT_EQ(zs_flexsp_plan_micro(&cfg, plen, 1, &ng, size, first, grp, &pred), 1);
    ZS_ASSERT_INT_EQ(ng, 1);
    ZS_ASSERT_INT_EQ(size[0], 128);
    CU_ASSERT_DOUBLE_EQUAL(pred, 1920000, 1e-9);
}

/* Two GPUs of 100 tokens, sequences 40, 150, 60, 100 (350 tokens): two
 * micro-batches at least; the cut of 150, 100, 60, 40 is {150} | {100, 60,
 * 40} (200 tokens each at most). Micro-batch 0: 150 needs both GPUs.
 * Micro-batch 1: one GPU each, 100 | 60 + 40 (10000), beats both as one
 * group (7600 + 50 x 200 = 17600). */
static void test_solve(void)
{
    zs_flexsp_cfg cfg = {
        .nslots = 2, .min_sp = 1, .max_sp = 2, .cap = 100, .exact_max = 8, .cost = toy_cost};
    int32_t len[] = {40, 150, 60, 100};
    zs_flexsp_plan p;
    zs_err e;
    ZS_ASSERT_OK(zs_flexsp_solve(len, 4, &cfg, &p, &e), &e);
    ZS_ASSERT_INT_EQ(p.nmicro, 2);
    ZS_ASSERT_INT_EQ(p.ngroups, 3);
    ZS_ASSERT_INT_EQ(p.micro_start[1], 1);
    ZS_ASSERT_INT_EQ(p.size[0], 2);
    ZS_ASSERT_INT_EQ(p.doc_start[1], 1);
    ZS_ASSERT_INT_EQ(p.docs[0], 1);
    CU_ASSERT_DOUBLE_EQUAL(p.pred[0], 18750, 1e-9);
    ZS_ASSERT_INT_EQ(p.size[1], 1);
    ZS_ASSERT_INT_EQ(p.first[2], 1);
    ZS_ASSERT_INT_EQ(p.doc_start[2], 2);
    ZS_ASSERT_INT_EQ(p.docs[1], 3);
    int32_t want[] = {0, 2}; /* batch order within a group */
    for (int i = 0; i < 2; i++)
        ZS_ASSERT_INT_EQ(p.docs[2 + i], want[i]);
    CU_ASSERT_DOUBLE_EQUAL(p.pred[1], 10000, 1e-9);
    zs_flexsp_plan_free(&p);
    int32_t big[] = {10, 500};
    ZS_ASSERT_INT_EQ(zs_flexsp_solve(big, 2, &cfg, &p, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "document 1");
}

static int plan(zs_test_env *v, const char *opts, const zs_batch *b, zs_schedule **s,
                zs_plan_report *rep, zs_err *e)
{
    zs_opts_init(&v->opts);
    if (opts && *opts)
        ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, e), e);
    *s = NULL;
    return zs_plan_batch(zs_planner_find("flexsp"), &v->ctx, b, 1, s, rep, e);
}

/* One node of 8 GPUs (llama-550m, 8 heads: groups up to 8): every
 * document's attention pieces are contiguous shards on one group of a
 * power-of-two size aligned to it, in one micro-batch, and the plan passes
 * the validator. */
static void test_planner(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, NULL);
    int32_t len[] = {60000, 3000, 3000, 2000, 9000, 500, 500, 12000};
    zs_batch *b = zs_batch_from_lengths(len, 8);
    zs_plan_report rep;
    zs_schedule *s;
    zs_err e;
    ZS_ASSERT_OK(plan(&v, "", b, &s, &rep, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int lo[8], hi[8], covered[8] = {0};
    for (int d = 0; d < 8; d++) {
        lo[d] = 1 << 20;
        hi[d] = -1;
    }
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *q = &s->pieces[i];
        if (q->layout != ZS_LAYOUT_ATTN)
            continue;
        covered[q->doc] += q->t1 - q->t0;
        lo[q->doc] = q->rank < lo[q->doc] ? q->rank : lo[q->doc];
        hi[q->doc] = q->rank > hi[q->doc] ? q->rank : hi[q->doc];
    }
    for (int d = 0; d < 8; d++) {
        ZS_ASSERT_INT_EQ(covered[d], len[d]);
        CU_ASSERT(hi[d] >= lo[d]);
    }
    ZS_ASSERT_STR_CONTAINS(rep.notes, "flexsp: tp=1");
    ZS_ASSERT_STR_CONTAINS(rep.notes, "1 micro-batches");
    zs_schedule_free(s);
    /* Groups of one allowed and no bucketing: still valid. */
    ZS_ASSERT_OK(plan(&v, "min_sp=1,buckets=0,exact=0", b, &s, &rep, &e), &e);
    zs_schedule_free(s);
    ZS_ASSERT_INT_EQ(plan(&v, "max_sp=3", b, &s, &rep, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.where, "max_sp");
    ZS_ASSERT_INT_EQ(plan(&v, "max_sp=16", b, &s, &rep, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.what, "heads");
    ZS_ASSERT_INT_EQ(plan(&v, "min_sp=4,max_sp=2", b, &s, &rep, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.where, "min_sp");
    /* The decision alone (`bench plan`): the solver without the lowering,
     * with the same option checks. */
    const zs_planner_ops *p = zs_planner_find("flexsp");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p->decide);
    int classes[ZS_PLAN_CLASSES] = {0};
    zs_opts_init(&v.opts);
    ZS_ASSERT_OK(p->decide(&v.ctx, b, classes, &e), &e);
    ZS_ASSERT_OK(zs_opts_parse(&v.opts, "max_sp=3", &e), &e);
    ZS_ASSERT_INT_EQ(p->decide(&v.ctx, b, classes, &e), ZS_EUSAGE);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"min_sp", test_min_sp},
                                         {"bucket", test_bucket},
                                         {"bucket_full_scan", test_bucket_full_scan},
                                         {"chunk", test_chunk},
                                         {"plan_micro", test_plan_micro},
                                         {"exact_beats_greedy", test_exact_beats_greedy},
                                         {"climb", test_climb},
                                         {"solve", test_solve},
                                         {"planner", test_planner},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"flexsp", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
