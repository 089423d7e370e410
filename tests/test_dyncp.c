/* Tests of Megatron-Core Dynamic CP (planners/zs_dyncp_sched_internal.h and the dyn-cp
 * planner) on hand-checked small cases:
 *   - the group size a document needs (power of two, padded shares,
 *     min_cp) and the per-GPU share;
 *   - the dynamic scheduler's waves: a long document opens a group of 4,
 *     a short one packs into it while the group stays within max_seqlen
 *     and the work bound, the others wait for the next wave, whose free
 *     GPUs are filled by doubling groups (later groups moved up);
 *   - the static (dp_balanced) scheduler: packing in batch order and the
 *     move that makes the packs a multiple of DP;
 *   - the planner: pieces on the groups the scheduler chose, a pass of the
 *     plan validator, and clear errors for bad options and documents;
 *   - the report's tokens alive at once (what the memory model reads): the
 *     larger of a GPU's two micro-batches, not their sum. */
#include <stdlib.h>
#include <string.h>

#include "zs_dyncp_sched_internal.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

static void test_needed(void)
{
    ZS_ASSERT_INT_EQ(zs_dyncp_share(100, 1), 100);
    ZS_ASSERT_INT_EQ(zs_dyncp_share(300, 4), 76); /* 2 x ceil(300 / 8) */
    ZS_ASSERT_INT_EQ(zs_dyncp_needed(100, 100, 1, 4), 1);
    ZS_ASSERT_INT_EQ(zs_dyncp_needed(101, 100, 1, 4), 2);
    ZS_ASSERT_INT_EQ(zs_dyncp_needed(300, 100, 1, 4), 4); /* share 150 on 2 */
    /* 4094 / 2047 = 2 exactly, but the padded share on 2 is 2048. */
    ZS_ASSERT_INT_EQ(zs_dyncp_needed(4094, 2047, 1, 8), 4);
    ZS_ASSERT_INT_EQ(zs_dyncp_needed(50, 100, 2, 4), 2);  /* min_cp */
    ZS_ASSERT_INT_EQ(zs_dyncp_needed(500, 100, 1, 4), 0); /* more than 4 GPUs */
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

/* 4 GPUs, max_seqlen 100, documents 300, 100, 60, 50 (needs 4, 1, 1, 1).
 * Wave 1 (work bound 1.05 x 300 x 100 = 31500): 300 opens GPUs 0-3
 * (share 76, work 22500); 100 would make the share 102: it waits; 60 joins
 * (share 92, work 23400); 50 would make 106: it waits. Wave 2 (bound
 * 10500): 100 opens GPU 0 (work 10000), 50 gets GPU 1 (a new group keeps
 * the busiest GPU at 10000, joining would make 12500); GPUs 2-3 are free:
 * the first group doubles to GPUs 0-1 (the second moves to 2), then the
 * second doubles to 2-3. */
static void test_dynamic_waves(void)
{
    zs_err e;
    zs_dyncp_plan p;
    int32_t len[] = {300, 100, 60, 50};
    ZS_ASSERT_OK(zs_dyncp_dynamic(len, 4, 4, 100, 1, &p, &e), &e);
    ZS_ASSERT_INT_EQ(p.nwaves, 2);
    ZS_ASSERT_INT_EQ(p.ngroups, 3);
    ZS_ASSERT_INT_EQ(p.wave_start[1], 1);
    expect_group(&p, 0, 0, 4, (int32_t[]){0, 2}, 2);
    expect_group(&p, 1, 0, 2, (int32_t[]){1}, 1);
    expect_group(&p, 2, 2, 2, (int32_t[]){3}, 1);
    zs_dyncp_plan_free(&p);
    /* A document needing more GPUs than there are is an error naming it. */
    int32_t big[] = {10, 500};
    ZS_ASSERT_INT_EQ(zs_dyncp_dynamic(big, 2, 4, 100, 1, &p, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "document 1");
}

/* cp 2, dp 2, max_seqlen 8; lengths 8, 6, 6, 4, 2, 2 (shares on 2 GPUs:
 * 4, 4, 4, 2, 2, 2). Packs in order: {0, 1}, {2, 3, 4}, {5}; three packs
 * for two DP groups: the last pack holding several gives up its last
 * document, 4, as a fourth pack. Micro-batch 0: packs 0 and 1 on GPUs 0-1
 * and 2-3; micro-batch 1: packs {5} and {4}. */
static void test_static_packs(void)
{
    zs_err e;
    zs_dyncp_plan p;
    int32_t len[] = {8, 6, 6, 4, 2, 2};
    ZS_ASSERT_OK(zs_dyncp_static(len, 6, 2, 2, 8, &p, &e), &e);
    ZS_ASSERT_INT_EQ(p.nwaves, 2);
    ZS_ASSERT_INT_EQ(p.ngroups, 4);
    expect_group(&p, 0, 0, 2, (int32_t[]){0, 1}, 2);
    expect_group(&p, 1, 2, 2, (int32_t[]){2, 3}, 2);
    expect_group(&p, 2, 0, 2, (int32_t[]){5}, 1);
    expect_group(&p, 3, 2, 2, (int32_t[]){4}, 1);
    zs_dyncp_plan_free(&p);
    /* One document, two DP groups: the second stays empty. */
    ZS_ASSERT_OK(zs_dyncp_static(len, 1, 2, 2, 8, &p, &e), &e);
    ZS_ASSERT_INT_EQ(p.nwaves, 1);
    ZS_ASSERT_INT_EQ(p.ngroups, 1);
    zs_dyncp_plan_free(&p);
    ZS_ASSERT_INT_EQ(zs_dyncp_static(len, 6, 2, 2, 3, &p, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "document 0");
}

static int plan(zs_test_env *v, const char *opts, const zs_batch *b, zs_schedule **s,
                zs_plan_report *rep, zs_err *e)
{
    zs_opts_init(&v->opts);
    if (opts && *opts)
        ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, e), e);
    *s = NULL;
    return zs_plan_batch(zs_planner_find("dyn-cp"), &v->ctx, b, 1, s, rep, e);
}

/* One node of 8 GPUs, max_seqlen 4096, a 16000-token document and eight of
 * 3000. Wave 1: the long one needs 4 GPUs (share 4000) and runs as 8
 * zigzag chunks on a ring of 4; the first four short ones each open a GPU
 * of their own (a second one would exceed 4096 tokens there, a share of
 * the ring too), so they run whole; the other four wait for wave 2. The
 * plan validates. */
static void test_planner_groups(void)
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
    int ranks_of[9] = {0}, pieces_of[9] = {0};
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *q = &s->pieces[i];
        if (q->layout != ZS_LAYOUT_ATTN)
            continue;
        pieces_of[q->doc]++;
        ranks_of[q->doc] |= 1 << q->rank;
        ZS_ASSERT_INT_EQ(q->micro, q->doc <= 4 ? 0 : 1);
        if (q->doc > 0 && q->doc <= 4)
            ZS_ASSERT_INT_EQ(q->t1 - q->t0, 3000);
    }
    ZS_ASSERT_INT_EQ(pieces_of[0], 8);
    ZS_ASSERT_INT_EQ(__builtin_popcount((unsigned)ranks_of[0]), 4);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "largest 4 GPUs");
    ZS_ASSERT_STR_CONTAINS(rep.notes, "2 micro-batches");
    zs_schedule_free(s);
    /* The static baseline on cp=4 puts every document on a ring of 4: a
     * 3000-token document in 8 chunks of 375. */
    ZS_ASSERT_OK(plan(&v, "max_seqlen=4096,sched=static,cp=4", b, &s, &rep, &e), &e);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "sched=static");
    for (int64_t i = 0; i < s->npieces; i++)
        if (s->pieces[i].doc > 0)
            ZS_ASSERT_INT_EQ(s->pieces[i].t1 - s->pieces[i].t0, 375);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* The memory model's tokens alive at once (zs_plan_report max_live_*):
 * the plan of planner_groups runs two micro-batches one after the other
 * on every GPU, and a finished one's activations are freed, so a GPU
 * holds its larger micro-batch, not both. */
static void test_live_tokens(void)
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
    /* Micro-batch 0: the 16000-token ring on GPUs 0-3 (two chunks of
     * 2000 each), a 3000-token document whole on each of GPUs 4-7;
     * micro-batch 1: the other four on rings of 2 (1500 a GPU). */
    for (int r = 0; r < 8; r++) {
        int64_t t[2] = {0, 0};
        for (int64_t i = 0; i < s->npieces; i++)
            if (s->pieces[i].rank == r && s->pieces[i].layout == ZS_LAYOUT_LINEAR)
                t[s->pieces[i].micro] += s->pieces[i].t1 - s->pieces[i].t0;
        ZS_ASSERT_INT_EQ(t[0], r < 4 ? 4000 : 3000);
        ZS_ASSERT_INT_EQ(t[1], 1500);
    }
    /* The iteration: 4000 + 1500 on GPUs 0-3; alive at once: 4000. */
    ZS_ASSERT_INT_EQ(rep.max_attn_tokens, 5500);
    ZS_ASSERT_INT_EQ(rep.max_linear_tokens, 5500);
    ZS_ASSERT_INT_EQ(rep.max_live_attn_tokens, 4000);
    ZS_ASSERT_INT_EQ(rep.max_live_linear_tokens, 4000);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_planner_errors(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, NULL);
    int32_t len[] = {40000, 1000};
    zs_batch *b = zs_batch_from_lengths(len, 2);
    zs_plan_report rep;
    zs_schedule *s;
    zs_err e;
    ZS_ASSERT_INT_EQ(plan(&v, "max_seqlen=4096", b, &s, &rep, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "document 0");
    ZS_ASSERT_INT_EQ(plan(&v, "min_cp=3", b, &s, &rep, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.where, "min_cp");
    ZS_ASSERT_INT_EQ(plan(&v, "max_seqlen=999999999", b, &s, &rep, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.what, "more than one GPU holds");
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"needed", test_needed},
                                         {"dynamic_waves", test_dynamic_waves},
                                         {"static_packs", test_static_packs},
                                         {"planner_groups", test_planner_groups},
                                         {"live_tokens", test_live_tokens},
                                         {"planner_errors", test_planner_errors},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"dyncp", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
