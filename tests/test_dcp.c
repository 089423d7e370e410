/* Tests of DCP (planners/zs_dcp_part_internal.h and the dcp planner) on
 * hand-checked small cases:
 *   - blocks: documents cut into data blocks of `block` tokens, causal
 *     compute blocks in (document, query, key) order, their work;
 *   - the km1 objective of a given placement;
 *   - the partitioner on one 400-token document in 4 blocks of 100 over two
 *     devices of one node (the heavy end of the causal triangle is
 *     rebalanced by moving the block that costs least) and over two nodes
 *     (the node level's wide tolerance leaves it);
 *   - the planner: documents of one block each land whole on their own
 *     GPU with nothing to fetch, a long one is spread and fetched, the plans
 *     pass the validator, and bad options are named. */
#include <stdlib.h>
#include <string.h>

#include "zs_dcp_part_internal.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

static void test_blocks(void)
{
    zs_err e;
    zs_dcp_blocks b;
    int32_t len[] = {1000, 300};
    ZS_ASSERT_OK(zs_dcp_blocks_build(len, 2, 512, &b, &e), &e);
    ZS_ASSERT_INT_EQ(b.ndata, 3);
    ZS_ASSERT_INT_EQ(b.dt1[0], 512);
    ZS_ASSERT_INT_EQ(b.dt0[1], 512);
    ZS_ASSERT_INT_EQ(b.dt1[1], 1000);
    ZS_ASSERT_INT_EQ(b.ddoc[2], 1);
    ZS_ASSERT_INT_EQ(b.dt1[2], 300);
    /* (0,0), (1,0), (1,1) of document 0, (2,2) of document 1 */
    ZS_ASSERT_INT_EQ(b.ncomp, 4);
    ZS_ASSERT_INT_EQ(b.cq[1], 1);
    ZS_ASSERT_INT_EQ(b.ck[1], 0);
    ZS_ASSERT_INT_EQ(b.cq[3], 2);
    CU_ASSERT_DOUBLE_EQUAL(zs_dcp_comp_work(&b, 0), 512.0 * 513 / 2, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(zs_dcp_comp_work(&b, 1), 488.0 * 512, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(zs_dcp_comp_work(&b, 2), 488.0 * 489 / 2, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(zs_dcp_comp_work(&b, 3), 300.0 * 301 / 2, 1e-9);
    /* Only the KV net of block 0 spans two parts (compute block (1,0) on
     * part 1 reads its keys): km1 = 512 tokens x wkv. */
    int dpart[] = {0, 1, 1}, cpart[] = {0, 1, 1, 1};
    CU_ASSERT_DOUBLE_EQUAL(zs_dcp_km1(&b, 1, 2, dpart, cpart, 2), 512, 1e-9);
    /* Moving (1,0) to part 0 instead: block 1's Q net spans both (2 x 488). */
    cpart[1] = 0;
    CU_ASSERT_DOUBLE_EQUAL(zs_dcp_km1(&b, 1, 2, dpart, cpart, 2), 976, 1e-9);
    zs_dcp_blocks_free(&b);
    /* a bad block size is refused, leaving nothing to free */
    ZS_ASSERT_INT_EQ(zs_dcp_blocks_build(len, 2, 0, &b, &e), ZS_EINVALID);
    zs_dcp_blocks_free(&b);
}

/* One document of 400 tokens in blocks of 100: compute blocks 0 (0,0),
 * 1 (1,0), 2 (1,1), 3 (2,0), 4 (2,1), 5 (2,2), 6 (3,0), 7 (3,1), 8 (3,2),
 * 9 (3,3); diagonal ones weigh 5050, the others 10000 (total 80200, mean
 * 40100 over two parts). Data blocks 0-1 go to part 0, 2-3 to part 1
 * (contiguous halves); compute blocks follow their queries: 20100 against
 * 60100. Two devices (eps 20%: cap max(48120, 40100 + 10000) = 50100): part
 * 1 is over; moving a block off it costs 200 (its Q net now spans both)
 * for the four reading keys of part 0, 300 for the others; the lowest id
 * among the cheapest, (2,0), goes and part 1 sits at 50100. Refinement
 * finds no positive move (part 1 is full, moving into part 0 gains
 * nothing). km1: keys of blocks 0 and 1 read on part 1 (100 + 100), block
 * 2's queries on part 0 (2 x 100). */
static void test_partition_devices(void)
{
    zs_err e;
    zs_dcp_blocks b;
    int32_t len[] = {400};
    ZS_ASSERT_OK(zs_dcp_blocks_build(len, 1, 100, &b, &e), &e);
    zs_dcp_part_in in = {&b, 1, 2, 1, 2, 0.2, 0.2, 5, 8};
    zs_dcp_part_out o;
    ZS_ASSERT_OK(zs_dcp_partition(&in, &o, &e), &e);
    int dp[] = {0, 0, 1, 1}, cp[] = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 4; i++)
        ZS_ASSERT_INT_EQ(o.dpart[i], dp[i]);
    for (int i = 0; i < 10; i++)
        ZS_ASSERT_INT_EQ(o.cpart[i], cp[i]);
    ZS_ASSERT_INT_EQ(o.moves, 1);
    CU_ASSERT_DOUBLE_EQUAL(o.km1, 400, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(o.comp_imb, 50100.0 / 40100.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(o.mem_imb, 1.0, 1e-9);
    zs_dcp_part_free(&o);
    /* Deterministic: the same input gives the same placement. */
    zs_dcp_part_out o2;
    ZS_ASSERT_OK(zs_dcp_partition(&in, &o, &e), &e);
    ZS_ASSERT_OK(zs_dcp_partition(&in, &o2, &e), &e);
    CU_ASSERT(memcmp(o.cpart, o2.cpart, sizeof(int) * 10) == 0);
    zs_dcp_part_free(&o);
    zs_dcp_part_free(&o2);
    zs_dcp_blocks_free(&b);
}

/* The same document over two nodes of one device: the node level tolerates
 * 20% x 5 (cap 80200), so 60100 on node 1 stays; refinement finds nothing
 * better (moving (2,0) to node 0 would cost block 2's Q net 200). km1: keys
 * of blocks 0 and 1 read on node 1. */
static void test_partition_nodes(void)
{
    zs_err e;
    zs_dcp_blocks b;
    int32_t len[] = {400};
    ZS_ASSERT_OK(zs_dcp_blocks_build(len, 1, 100, &b, &e), &e);
    zs_dcp_part_in in = {&b, 1, 2, 2, 1, 0.2, 0.2, 5, 8};
    zs_dcp_part_out o;
    ZS_ASSERT_OK(zs_dcp_partition(&in, &o, &e), &e);
    for (int i = 0; i < 10; i++)
        ZS_ASSERT_INT_EQ(o.cpart[i], i < 3 ? 0 : 1);
    ZS_ASSERT_INT_EQ(o.moves, 0);
    CU_ASSERT_DOUBLE_EQUAL(o.km1, 200, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(o.comp_imb, 60100.0 / 40100.0, 1e-9);
    zs_dcp_part_free(&o);
    in.nodes = 0;
    ZS_ASSERT_INT_EQ(zs_dcp_partition(&in, &o, &e), ZS_EINVALID);
    zs_dcp_blocks_free(&b);
}

static int plan(zs_test_env *v, const char *opts, const zs_batch *b, zs_schedule **s,
                zs_plan_report *rep, zs_err *e)
{
    zs_opts_init(&v->opts);
    if (opts && *opts)
        ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, e), e);
    *s = NULL;
    return zs_plan_batch(zs_planner_find("dcp"), &v->ctx, b, 1, s, rep, e);
}

/* One node of 8 GPUs. Eight documents of 500 tokens (one block each): the
 * contiguous split gives document i to GPU i with its one compute block, a
 * perfect balance, nothing fetched. Then a 16000-token document and three
 * short ones: it is spread over several GPUs and keys are fetched; both
 * plans pass the validator (zs_plan_batch). */
static void test_planner(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, NULL);
    int32_t len[] = {500, 500, 500, 500, 500, 500, 500, 500};
    zs_batch *b = zs_batch_from_lengths(len, 8);
    zs_plan_report rep;
    zs_schedule *s;
    zs_err e;
    ZS_ASSERT_OK(plan(&v, "", b, &s, &rep, &e), &e);
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *q = &s->pieces[i];
        ZS_ASSERT_INT_EQ(q->rank, q->doc);
        ZS_ASSERT_INT_EQ(q->t1 - q->t0, 500);
    }
    ZS_ASSERT_STR_CONTAINS(rep.notes, "0 query and 0 key tokens fetched");
    CU_ASSERT_DOUBLE_EQUAL(rep.attn_imbalance, 1.0, 1e-12);
    zs_schedule_free(s);
    zs_batch_free(b);
    int32_t len2[] = {16000, 3000, 2000, 1000};
    b = zs_batch_from_lengths(len2, 4);
    ZS_ASSERT_OK(plan(&v, "block=1024,stages=3", b, &s, &rep, &e), &e);
    int ranks = 0;
    for (int64_t i = 0; i < s->npieces; i++)
        if (s->pieces[i].doc == 0 && s->pieces[i].layout == ZS_LAYOUT_ATTN)
            ranks |= 1 << s->pieces[i].rank;
    CU_ASSERT(__builtin_popcount((unsigned)ranks) >= 4);
    CU_ASSERT(strstr(rep.notes, " 0 key tokens fetched") == NULL);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "3 executor stages");
    zs_schedule_free(s);
    ZS_ASSERT_INT_EQ(plan(&v, "block=8", b, &s, &rep, &e), ZS_EUSAGE);
    ZS_ASSERT_STR_CONTAINS(e.where, "block");
    ZS_ASSERT_INT_EQ(plan(&v, "stages=1", b, &s, &rep, &e), ZS_EUSAGE);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"blocks", test_blocks},
                                         {"partition_devices", test_partition_devices},
                                         {"partition_nodes", test_partition_nodes},
                                         {"planner", test_planner},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"dcp", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
