/* Property tests of Megatron-Core Dynamic CP on random batches: the
 * scheduler's plans (planners/zs_dyncp_sched_internal.h) place every document exactly
 * once; every dynamic wave covers all GPUs with disjoint power-of-two
 * groups of consecutive GPUs whose packed shares fit max_seqlen; every
 * static wave runs packs on the fixed CP groups; and the dyn-cp planner's
 * schedules pass the plan validator (tokens, causal blocks, messages,
 * deadlock, memory) on both schedulers. */
#include <stdlib.h>

#include "zs_dyncp_sched_internal.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

static void check_plan(const zs_dyncp_plan *p, const int32_t *len, int32_t n, long max_seqlen,
                       int dynamic, int cp)
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
            CU_ASSERT(p->doc_start[g + 1] > p->doc_start[g]);
            for (int i = p->doc_start[g]; i < p->doc_start[g + 1]; i++) {
                seen[p->docs[i]]++;
                pack += zs_dyncp_share(len[p->docs[i]], p->size[g]);
            }
            CU_ASSERT(pack <= max_seqlen);
            CU_ASSERT(p->first[g] >= 0 && p->first[g] + p->size[g] <= p->nslots);
            if (dynamic) {
                CU_ASSERT((p->size[g] & (p->size[g] - 1)) == 0 || p->size[g] == p->nslots);
            } else {
                CU_ASSERT(p->size[g] == cp && p->first[g] % cp == 0);
            }
            for (int k = 0; k < p->size[g]; k++) {
                CU_ASSERT(owner[p->first[g] + k] < 0);
                owner[p->first[g] + k] = g;
            }
        }
        if (dynamic)
            for (int sl = 0; sl < p->nslots; sl++)
                CU_ASSERT(owner[sl] >= 0);
    }
    for (int32_t d = 0; d < n; d++)
        ZS_ASSERT_INT_EQ(seen[d], 1);
    free(seen);
    free(owner);
}

static void test_sched_random(void)
{
    uint64_t x = 12345;
    for (int trial = 0; trial < 400; trial++) {
        int nslots = 1 << (int)(zs_test_rng(&x) % 6); /* 1 .. 32 */
        long max_seqlen = 64 + (long)(zs_test_rng(&x) % 4000);
        int32_t n = 1 + (int32_t)(zs_test_rng(&x) % 60), len[60];
        /* Lengths up to what the whole group holds (some need every GPU). */
        long top = max_seqlen * nslots - 2 * nslots;
        for (int32_t i = 0; i < n; i++)
            len[i] = 1 + (int32_t)(zs_test_rng(&x) % (uint64_t)(top > 1 ? top : 1));
        int min_cp = 1 << (int)(zs_test_rng(&x) % 2);
        if (min_cp > nslots)
            min_cp = 1;
        zs_dyncp_plan p;
        zs_err e;
        ZS_ASSERT_OK(zs_dyncp_dynamic(len, n, nslots, max_seqlen, min_cp, &p, &e), &e);
        check_plan(&p, len, n, max_seqlen, 1, 0);
        zs_dyncp_plan_free(&p);
        int cp = nslots >= 2 ? nslots / 2 : 1, dp = nslots / cp;
        for (int32_t i = 0; i < n; i++)
            if (zs_dyncp_share(len[i], cp) > max_seqlen)
                len[i] = (int32_t)(cp * (max_seqlen - 2) > 0 ? cp * (max_seqlen - 2) : 1);
        ZS_ASSERT_OK(zs_dyncp_static(len, n, cp, dp, max_seqlen, &p, &e), &e);
        check_plan(&p, len, n, max_seqlen, 0, cp);
        zs_dyncp_plan_free(&p);
    }
}

static void test_planner_validates(void)
{
    static const char *const opts[] = {
        "max_seqlen=8192",   "max_seqlen=3000,min_cp=2", "", "sched=static,cp=4,max_seqlen=8192",
        "sched=static,cp=8", "tp=2,max_seqlen=6000"};
    zs_test_random_plans r = {.method = "dyn-cp",
                              .opts = opts,
                              .nopts = 6,
                              .trials = 24,
                              .maxlen = 12000,
                              .long_every = 0,
                              .long_len = 0,
                              .seed = 777};
    zs_test_plan_random(&r);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"sched_random", test_sched_random},
                                         {"planner_validates", test_planner_validates},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"prop_validate_dyncp", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
