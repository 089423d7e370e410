/* Property tests of DCP on random batches: the partitioner
 * (planners/zs_dcp_part_internal.h) puts every data and compute block on a
 * part that exists, reports the km1 its placement has, gives the same
 * placement twice, and keeps every device's tokens within the memory cap of
 * a one-level partition; and the dcp planner's schedules pass the plan
 * validator (tokens, causal blocks, messages and what they carry,
 * deadlock, memory) under several option sets. */
#include <stdlib.h>
#include <string.h>

#include "zs_dcp_part_internal.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

static void check_partition(const zs_dcp_part_in *in, const zs_dcp_part_out *o)
{
    const zs_dcp_blocks *b = in->b;
    int parts = in->nodes * in->per_node;
    double *mem = calloc((size_t)parts, sizeof(double)), total = 0, big = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
    for (int32_t i = 0; i < b->ndata; i++) {
        CU_ASSERT(o->dpart[i] >= 0 && o->dpart[i] < parts);
        double t = b->dt1[i] - b->dt0[i];
        mem[o->dpart[i]] += t;
        total += t;
        big = t > big ? t : big;
    }
    for (int64_t c = 0; c < b->ncomp; c++)
        CU_ASSERT(o->cpart[c] >= 0 && o->cpart[c] < parts);
    double km1 = zs_dcp_km1(b, in->wkv, in->wq, o->dpart, o->cpart, parts);
    CU_ASSERT_DOUBLE_EQUAL(o->km1, km1, 1e-6 * (km1 + 1));
    if (in->nodes == 1) {
        double cap = (1 + in->eps_mem) * total / parts, split = total / parts + big;
        for (int p = 0; p < parts; p++)
            CU_ASSERT(mem[p] <= (cap > split ? cap : split) + 1e-9);
    }
    free(mem);
}

static void test_partition_random(void)
{
    uint64_t x = 4242;
    for (int trial = 0; trial < 200; trial++) {
        int32_t n = 1 + (int32_t)(zs_test_rng(&x) % 8), len[8];
        for (int32_t i = 0; i < n; i++)
            len[i] = 1 + (int32_t)(zs_test_rng(&x) % 6000);
        int32_t block = 16 + (int32_t)(zs_test_rng(&x) % 1000);
        zs_dcp_blocks b;
        zs_err e;
        ZS_ASSERT_OK(zs_dcp_blocks_build(len, n, block, &b, &e), &e);
        zs_dcp_part_in in = {&b,
                             1 + (double)(zs_test_rng(&x) % 4),
                             1 + (double)(zs_test_rng(&x) % 8),
                             1 + (int)(zs_test_rng(&x) % 4),
                             1 + (int)(zs_test_rng(&x) % 8),
                             (double)(zs_test_rng(&x) % 50) / 100,
                             (double)(zs_test_rng(&x) % 50) / 100,
                             1 + (double)(zs_test_rng(&x) % 16),
                             (int)(zs_test_rng(&x) % 9)};
        zs_dcp_part_out o, o2;
        ZS_ASSERT_OK(zs_dcp_partition(&in, &o, &e), &e);
        check_partition(&in, &o);
        ZS_ASSERT_OK(zs_dcp_partition(&in, &o2, &e), &e);
        CU_ASSERT(memcmp(o.dpart, o2.dpart, sizeof(int) * (size_t)b.ndata) == 0);
        CU_ASSERT(memcmp(o.cpart, o2.cpart, sizeof(int) * (size_t)b.ncomp) == 0);
        zs_dcp_part_free(&o);
        zs_dcp_part_free(&o2);
        zs_dcp_blocks_free(&b);
    }
}

static void test_planner_validates(void)
{
    static const char *const opts[] = {"",
                                       "block=1024,stages=2",
                                       "tp=2,block=256,passes=0",
                                       "comp_eps_pct=5,mem_eps_pct=5,inter_factor=1",
                                       "stages=8,inter_factor=16,comp_eps_pct=10",
                                       "tp=4,block=2048"};
    zs_test_random_plans r = {.method = "dcp",
                              .opts = opts,
                              .nopts = 6,
                              .trials = 24,
                              .maxlen = 12000,
                              .long_every = 0,
                              .long_len = 0,
                              .seed = 991};
    zs_test_plan_random(&r);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"partition_random", test_partition_random},
                                         {"planner_validates", test_planner_validates},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"prop_validate_dcp", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
