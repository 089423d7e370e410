/* Property tests of the ByteScale reconstruction on random batches: the
 * scheduler's plans (planners/zs_bytescale_sched_internal.h) place every
 * document exactly once; in every micro-batch the groups are disjoint
 * blocks of consecutive GPUs of at most max_cp, a group of one packs at
 * most cap tokens and a ring holds one document whose padded share fits
 * cap; and the bytescale planner's schedules pass the plan validator
 * (tokens, causal blocks, messages, deadlock, memory). */
#include <stdlib.h>

#include "zs_bytescale_sched_internal.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

static void check_plan(const zs_dyncp_plan *p, const int32_t *len, int32_t n, long cap, int max_cp)
{
    int *seen = calloc((size_t)n + 1, sizeof(int));
    int *owner = malloc(sizeof(int) * (size_t)p->nslots);
    CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(owner);
    for (int w = 0; w < p->nwaves; w++) {
        for (int sl = 0; sl < p->nslots; sl++)
            owner[sl] = -1;
        for (int g = p->wave_start[w]; g < p->wave_start[w + 1]; g++) {
            int64_t pack = 0;
            int nd = p->doc_start[g + 1] - p->doc_start[g];
            CU_ASSERT(nd > 0);
            CU_ASSERT(p->size[g] == 1 || nd == 1);
            for (int i = p->doc_start[g]; i < p->doc_start[g + 1]; i++) {
                seen[p->docs[i]]++;
                pack += zs_dyncp_share(len[p->docs[i]], p->size[g]);
            }
            CU_ASSERT(pack <= cap);
            CU_ASSERT(p->size[g] >= 1 && p->size[g] <= max_cp);
            CU_ASSERT(p->first[g] >= 0 && p->first[g] + p->size[g] <= p->nslots);
            for (int k = 0; k < p->size[g]; k++) {
                CU_ASSERT(owner[p->first[g] + k] < 0);
                owner[p->first[g] + k] = g;
            }
        }
    }
    for (int32_t d = 0; d < n; d++)
        ZS_ASSERT_INT_EQ(seen[d], 1);
    free(seen);
    free(owner);
}

static void test_sched_random(void)
{
    uint64_t x = 4242;
    for (int trial = 0; trial < 400; trial++) {
        int nslots = 1 + (int)(zs_test_rng(&x) % 24);
        int max_cp = 1 + (int)(zs_test_rng(&x) % (uint64_t)nslots);
        long cap = 64 + (long)(zs_test_rng(&x) % 4000);
        int32_t n = 1 + (int32_t)(zs_test_rng(&x) % 60), len[60];
        /* Lengths up to what max_cp GPUs hold (some need all of them). */
        long top = cap * max_cp - 2 * max_cp;
        for (int32_t i = 0; i < n; i++)
            len[i] = 1 + (int32_t)(zs_test_rng(&x) % (uint64_t)(top > 1 ? top : 1));
        zs_bytescale_work w = {(double)(zs_test_rng(&x) % 100), (double)(zs_test_rng(&x) % 3)};
        zs_dyncp_plan p;
        zs_err e;
        ZS_ASSERT_OK(zs_bytescale_schedule(len, n, nslots, cap, max_cp, w, &p, &e), &e);
        check_plan(&p, len, n, cap, max_cp);
        zs_dyncp_plan_free(&p);
    }
}

static void test_planner_validates(void)
{
    static const char *const opts[] = {"max_seqlen=8192", "max_seqlen=3000", "",
                                       "max_cp=4,max_seqlen=6000", "tp=2,max_seqlen=6000"};
    zs_test_random_plans r = {.method = "bytescale",
                              .opts = opts,
                              .nopts = 5,
                              .trials = 20,
                              .maxlen = 12000,
                              .long_every = 0,
                              .long_len = 0,
                              .seed = 778};
    zs_test_plan_random(&r);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"sched_random", test_sched_random},
                                         {"planner_validates", test_planner_validates},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"prop_validate_bytescale", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
