/* Tests of the ByteScale reconstruction (planners/zs_bytescale_sched_internal.h and
 * the bytescale planner) on hand-checked small cases:
 *   - data-aware sharding: the fewest slots whose padded shares fit, any
 *     count (not a power of two), and 0 past max_cp;
 *   - the balance scheduler: a long document on the least-loaded block,
 *     short ones on the least-loaded slot, packed into its open micro-batch
 *     while it fits, GPUs running different numbers of micro-batches;
 *   - the widening of a document whose share exceeds the mean work;
 *   - the planner: pieces on the groups the scheduler chose, a pass of the
 *     plan validator, and clear errors for bad options and documents. */
#include <stdlib.h>
#include <string.h>

#include "zs_bytescale_sched_internal.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

static void test_needed(void)
{
    ZS_ASSERT_INT_EQ(zs_bytescale_needed(100, 100, 4), 1);
    ZS_ASSERT_INT_EQ(zs_bytescale_needed(101, 100, 4), 2); /* share 2 x ceil(101 / 4) = 52 */
    ZS_ASSERT_INT_EQ(zs_bytescale_needed(300, 100, 4), 3); /* 3, not a power of two */
    ZS_ASSERT_INT_EQ(zs_bytescale_needed(301, 100, 8), 4);
    /* ceil(197 / 99) = 2, but the padded share on 2 is 100: 3 slots. */
    ZS_ASSERT_INT_EQ(zs_bytescale_needed(197, 99, 8), 3);
    ZS_ASSERT_INT_EQ(zs_bytescale_needed(500, 100, 4), 0);
}

static void expect_group(const zs_dyncp_plan *p, int g, int first, int size, const int32_t *docs,
                         int n)
{
    ZS_ASSERT_INT_EQ(p->first[g], first);
    ZS_ASSERT_INT_EQ(p->size[g], size);
    ZS_ASSERT_INT_EQ(p->doc_start[g + 1] - p->doc_start[g], n);
    for (int i = 0; i < n; i++)
        ZS_ASSERT_INT_EQ(p->docs[p->doc_start[g] + i], docs[i]);
}

/* 4 slots, cap 100, work = tokens (mean 137.5): 300 needs 3 slots (share
 * 100, work 100 each) on slots 0-2 in micro-batch 0; 100 goes to the idle
 * slot 3 (micro-batch 0); 60, 50, 40 go to slots 0, 1, 2 (all at 100,
 * lowest first, then the next lowest), each in its micro-batch 1. Slot 3
 * runs one micro-batch, slots 0-2 two. */
static void test_balance(void)
{
    zs_err e;
    zs_dyncp_plan p;
    int32_t len[] = {300, 100, 60, 50, 40};
    zs_bytescale_work w = {1, 0};
    ZS_ASSERT_OK(zs_bytescale_schedule(len, 5, 4, 100, 4, w, &p, &e), &e);
    ZS_ASSERT_INT_EQ(p.nwaves, 2);
    ZS_ASSERT_INT_EQ(p.ngroups, 5);
    ZS_ASSERT_INT_EQ(p.wave_start[1], 2);
    expect_group(&p, 0, 0, 3, (int32_t[]){0}, 1);
    expect_group(&p, 1, 3, 1, (int32_t[]){1}, 1);
    expect_group(&p, 2, 0, 1, (int32_t[]){2}, 1);
    expect_group(&p, 3, 1, 1, (int32_t[]){3}, 1);
    expect_group(&p, 4, 2, 1, (int32_t[]){4}, 1);
    zs_dyncp_plan_free(&p);
}

/* 2 slots, cap 100, work = tokens: 50 to slot 0, 40 to slot 1, 30 to
 * slot 1 (40 < 50; its micro-batch holds 70), 20 to slot 0 (70): one
 * micro-batch, two packs. */
static void test_packing(void)
{
    zs_err e;
    zs_dyncp_plan p;
    int32_t len[] = {50, 40, 30, 20};
    zs_bytescale_work w = {1, 0};
    ZS_ASSERT_OK(zs_bytescale_schedule(len, 4, 2, 100, 2, w, &p, &e), &e);
    ZS_ASSERT_INT_EQ(p.nwaves, 1);
    expect_group(&p, 0, 0, 1, (int32_t[]){0, 3}, 2);
    expect_group(&p, 1, 1, 1, (int32_t[]){1, 2}, 2);
    zs_dyncp_plan_free(&p);
}

/* Attention work only (len^2): 100 (10000) and three of 10 (100 each),
 * mean 10300 / 4 = 2575. The 100-token document fits one slot but 10000,
 * 5000 and 3333 per slot exceed the mean: it takes all 4 (2500); the short
 * ones then run alone on slots 0, 1, 2 in micro-batch 1. With max_cp 2 it
 * stops at 2 slots. */
static void test_widening(void)
{
    zs_err e;
    zs_dyncp_plan p;
    int32_t len[] = {100, 10, 10, 10};
    zs_bytescale_work w = {0, 1};
    ZS_ASSERT_OK(zs_bytescale_schedule(len, 4, 4, 1000, 4, w, &p, &e), &e);
    ZS_ASSERT_INT_EQ(p.nwaves, 2);
    expect_group(&p, 0, 0, 4, (int32_t[]){0}, 1);
    expect_group(&p, 1, 0, 1, (int32_t[]){1}, 1);
    expect_group(&p, 3, 2, 1, (int32_t[]){3}, 1);
    zs_dyncp_plan_free(&p);
    ZS_ASSERT_OK(zs_bytescale_schedule(len, 4, 4, 1000, 2, w, &p, &e), &e);
    expect_group(&p, 0, 0, 2, (int32_t[]){0}, 1);
    zs_dyncp_plan_free(&p);
    ZS_ASSERT_INT_EQ(zs_bytescale_schedule(len, 4, 4, 40, 2, w, &p, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "document 0");
}

static int plan(zs_test_env *v, const char *opts, const zs_batch *b, zs_schedule **s,
                zs_plan_report *rep, zs_err *e)
{
    zs_opts_init(&v->opts);
    if (opts && *opts)
        ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, e), e);
    *s = NULL;
    return zs_plan_batch(zs_planner_find("bytescale"), &v->ctx, b, 1, s, rep, e);
}

/* One node of 8 GPUs, max_seqlen 4096, a 16000-token document and eight of
 * 3000: the long one needs at least 4 GPUs (share 4000) and runs as zigzag
 * chunks on a ring; every short one runs whole on one GPU. The plan
 * validates (zs_plan_batch runs the validator). */
static void test_planner(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, NULL);
    int32_t len[] = {16000, 3000, 3000, 3000, 3000, 3000, 3000, 3000, 3000};
    zs_batch *b = zs_batch_from_lengths(len, 9);
    zs_plan_report rep;
    zs_schedule *s;
    zs_err e;
    ZS_ASSERT_OK(plan(&v, "max_seqlen=4096", b, &s, &rep, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int ranks_of[9] = {0};
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *q = &s->pieces[i];
        if (q->layout != ZS_LAYOUT_ATTN)
            continue;
        ranks_of[q->doc] |= 1 << q->rank;
        if (q->doc > 0)
            ZS_ASSERT_INT_EQ(q->t1 - q->t0, 3000);
    }
    CU_ASSERT(__builtin_popcount((unsigned)ranks_of[0]) >= 4);
    for (int d = 1; d < 9; d++)
        ZS_ASSERT_INT_EQ(__builtin_popcount((unsigned)ranks_of[d]), 1);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "no activation offloading");
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_planner_errors(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, NULL);
    int32_t len[] = {16000, 1000};
    zs_batch *b = zs_batch_from_lengths(len, 2);
    zs_plan_report rep;
    zs_schedule *s;
    zs_err e;
    ZS_ASSERT_INT_EQ(plan(&v, "max_seqlen=4096,max_cp=2", b, &s, &rep, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "document 0");
    ZS_ASSERT_INT_EQ(plan(&v, "max_cp=3", b, &s, &rep, &e), ZS_EINPUT);
    ZS_ASSERT_INT_EQ(plan(&v, "max_seqlen=999999999", b, &s, &rep, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.what, "more than one GPU holds");
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"needed", test_needed},
                                         {"balance", test_balance},
                                         {"packing", test_packing},
                                         {"widening", test_widening},
                                         {"planner", test_planner},
                                         {"planner_errors", test_planner_errors},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"bytescale", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
