/* Property tests of FlexSP on random batches: the solver's plans
 * (planners/zs_flexsp_solve_internal.h) place every document exactly once;
 * every micro-batch partitions all GPUs into disjoint aligned groups of
 * power-of-two sizes within [min_sp, max_sp], each holding its documents
 * within one GPU's capacity per member and no document on a group smaller
 * than it needs (also on 128 and 256 GPUs, where a local search replaces
 * the enumeration of group sizes); micro-batches hold at most the
 * cluster's capacity; the
 * exhaustive assignment never predicts worse than the greedy one; and the
 * flexsp planner's schedules pass the plan validator (tokens, causal
 * blocks, messages, deadlock, memory). */
#include <stdlib.h>

#include "zs_flexsp_solve_internal.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

static double toy_cost(void *arg, int32_t len, int n)
{
    (void)arg;
    return (double)len * len / n + (n > 1 ? 30.0 * len * (n > 8 ? 4 : 1) : 0);
}

static void check_plan(const zs_flexsp_plan *p, const int32_t *len, int32_t n,
                       const zs_flexsp_cfg *cfg)
{
    int *seen = calloc((size_t)n + 1, sizeof(int));
    int *owner = malloc(sizeof(int) * (size_t)p->nslots);
    CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(owner);
    for (int m = 0; m < p->nmicro; m++) {
        int64_t micro_tokens = 0;
        for (int sl = 0; sl < p->nslots; sl++)
            owner[sl] = -1;
        for (int g = p->micro_start[m]; g < p->micro_start[m + 1]; g++) {
            int s = p->size[g];
            int64_t tok = 0;
            CU_ASSERT(s >= cfg->min_sp && s <= cfg->max_sp && (s & (s - 1)) == 0);
            CU_ASSERT(p->first[g] % s == 0 && p->first[g] + s <= p->nslots);
            for (int i = p->doc_start[g]; i < p->doc_start[g + 1]; i++) {
                int32_t d = p->docs[i];
                seen[d]++;
                tok += len[d];
                CU_ASSERT(zs_flexsp_min_sp(len[d], cfg->cap, cfg->min_sp) <= s);
            }
            CU_ASSERT(tok <= (int64_t)cfg->cap * s);
            micro_tokens += tok;
            for (int k = 0; k < s; k++) {
                CU_ASSERT(owner[p->first[g] + k] < 0);
                owner[p->first[g] + k] = g;
            }
        }
        CU_ASSERT(micro_tokens <= (int64_t)cfg->cap * p->nslots);
        for (int sl = 0; sl < p->nslots; sl++)
            CU_ASSERT(owner[sl] >= 0);
    }
    for (int32_t d = 0; d < n; d++)
        ZS_ASSERT_INT_EQ(seen[d], 1);
    free(seen);
    free(owner);
}

static void test_solve_random(void)
{
    uint64_t x = 4242;
    for (int trial = 0; trial < 300; trial++) {
        /* 1 .. 16 GPUs, and every tenth trial 128 or 256 with groups of
         * one: past what is enumerated, the local search. */
        int nslots = trial % 10 == 9 ? 128 << (trial / 10 % 2) : 1 << (int)(zs_test_rng(&x) % 5);
        int min_sp = 1 << (int)(zs_test_rng(&x) % 2);
        if (min_sp > nslots || nslots >= 128)
            min_sp = 1;
        zs_flexsp_cfg cfg = {.nslots = nslots,
                             .min_sp = min_sp,
                             .max_sp = nslots,
                             .cap = 64 + (long)(zs_test_rng(&x) % 2000),
                             .buckets = (int)(zs_test_rng(&x) % 3) * 4,
                             .exact_max = (int)(zs_test_rng(&x) % 2) * 6,
                             .cost = toy_cost};
        int32_t n = 1 + (int32_t)(zs_test_rng(&x) % 40), len[40];
        long top = cfg.cap * nslots;
        for (int32_t i = 0; i < n; i++)
            len[i] = 1 + (int32_t)(zs_test_rng(&x) % (uint64_t)(i % 3 ? top / 8 + 1 : top));
        zs_flexsp_plan p;
        zs_err e;
        ZS_ASSERT_OK(zs_flexsp_solve(len, n, &cfg, &p, &e), &e);
        check_plan(&p, len, n, &cfg);
        zs_flexsp_plan_free(&p);
    }
}

/* On micro-batches small enough for the exhaustive search, it predicts no
 * worse than the greedy assignment on the same multisets. */
static void test_exact_no_worse(void)
{
    uint64_t x = 99;
    for (int trial = 0; trial < 200; trial++) {
        int nslots = 1 << (int)(zs_test_rng(&x) % 4);
        zs_flexsp_cfg cfg = {.nslots = nslots,
                             .min_sp = 1,
                             .max_sp = nslots,
                             .cap = 7000, /* every micro-batch fits one GPU */
                             .exact_max = 0,
                             .cost = toy_cost};
        int n = 1 + (int)(zs_test_rng(&x) % 7), ng, size[16], first[16], grp[8];
        int32_t plen[8];
        for (int i = 0; i < n; i++)
            plen[i] = 1 + (int32_t)(zs_test_rng(&x) % 900);
        double greedy, exact;
        ZS_ASSERT_INT_EQ(zs_flexsp_plan_micro(&cfg, plen, n, &ng, size, first, grp, &greedy), 1);
        cfg.exact_max = 8;
        ZS_ASSERT_INT_EQ(zs_flexsp_plan_micro(&cfg, plen, n, &ng, size, first, grp, &exact), 1);
        CU_ASSERT(exact <= greedy * (1 + 1e-12));
    }
}

static void test_planner_validates(void)
{
    static const char *const opts[] = {"",     "min_sp=1",          "buckets=0,exact=0",
                                       "tp=2", "min_sp=4,max_sp=8", "max_sp=4"};
    zs_test_random_plans r = {.method = "flexsp",
                              .opts = opts,
                              .nopts = 6,
                              .trials = 24,
                              .maxlen = 12000,
                              .long_every = 5,
                              .long_len = 200000,
                              .seed = 777};
    zs_test_plan_random(&r);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"solve_random", test_solve_random},
                                         {"exact_no_worse", test_exact_no_worse},
                                         {"planner_validates", test_planner_validates},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"prop_validate_flexsp", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
