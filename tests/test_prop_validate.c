/* Property tests of the plan validator: random batches planned by the
 * `local` planner always validate; deliberately broken copies (a dropped
 * token, a duplicated block, an unmatched send, a wrong byte count) are
 * always rejected with a message naming rank, op or document; a merged
 * transfer's carry list is checked (parts, both ends, delivery). */
#include <stdlib.h>

#include "zs_analytic.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"
#include "zs_validate.h"

extern const zs_planner_ops zs_planner_local;
extern const zs_planner_ops zs_planner_tecp;
extern const zs_planner_ops zs_planner_llamacp;

typedef zs_test_env env;

static void env_init(env *v, const char *model, int nodes)
{
    zs_test_env_init(v, model, nodes, NULL);
}

static zs_batch *random_batch(uint64_t seed, int ndocs, int maxlen)
{
    zs_batch *b = zs_batch_new(ndocs);
    uint64_t x = seed * 2654435761ULL + 1;
    for (int i = 0; i < ndocs; i++)
        zs_batch_push(b, 1 + (int32_t)(zs_test_rng(&x) % (uint64_t)maxlen), i);
    return b;
}

static zs_schedule *plan(env *v, const zs_batch *b)
{
    zs_schedule *s = NULL;
    zs_plan_report rep;
    zs_err e;
    ZS_ASSERT_OK(zs_plan_batch(&zs_planner_local, &v->ctx, b, 1, &s, &rep, &e), &e);
    return s;
}

static void expect_invalid(zs_schedule *s, const char *needle)
{
    zs_err e;
    zs_err_clear(&e);
    zs_validate_opts vo = {0, 0};
    int rc = zs_validate(s, &vo, &e);
    ZS_ASSERT_INT_EQ(rc, ZS_EINVALID);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s | %s", e.what, e.where);
    ZS_ASSERT_STR_CONTAINS(msg, needle);
}

static void test_local_hand_checked(void)
{
    env v;
    env_init(&v, "llama-550m", 1);
    zs_batch *b = zs_batch_from_lengths((int32_t[]){100, 4000, 30, 4000, 20}, 5);
    zs_schedule *s = plan(&v, b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_INT_EQ(s->nranks, 8);
    ZS_ASSERT_INT_EQ(s->dims.dp, 8);
    /* Longest first, ties by index: doc 1 -> rank 0, doc 3 -> rank 1, then
     * 100, 30, 20 to ranks 2, 3, 4. */
    int want[5] = {2, 0, 3, 1, 4};
    for (int64_t i = 0; i < s->npieces; i++)
        ZS_ASSERT_INT_EQ(s->pieces[i].rank, want[s->pieces[i].doc]);
    /* One attention forward op per busy rank per layer: 4000^2-ish blocks. */
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, v.cost, NULL, &r, &e), &e);
    ZS_ASSERT_INT_EQ(r->slowest_rank == 0 || r->slowest_rank == 1, 1);
    CU_ASSERT(r->ranks[7].idle > r->ranks[0].idle); /* rank 7 holds nothing */
    /* No attention communication: only the gradient all-reduce moves bytes. */
    CU_ASSERT(r->link_bytes[ZS_LINK_NIC] == 0);
    zs_result_free(r);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_random_plans_validate(void)
{
    env v;
    env_init(&v, "llama-550m", 2);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        zs_batch *b = random_batch(seed, 10 + (int)(seed * 7 % 60), 8000);
        zs_schedule *s = plan(&v, b);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        zs_batch_free(b);
        zs_schedule_free(s);
    }
    zs_cost_free(v.cost);
}

/* Runs a plan on the analytic backend (it must end), then frees it, its
 * batch and the environment's cost model. */
static void run_and_free(env *v, zs_schedule *s, zs_batch *b)
{
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, v->cost, NULL, &r, &e), &e);
    CU_ASSERT(r->iter_time > 0);
    zs_result_free(r);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v->cost);
}

/* te-cp and llama-cp under every CP token layout: random batches plan,
 * validate (coverage, matched transfers and collectives, no deadlock) and
 * run; the layouts move different bytes (ring and stripe shards differ
 * from zigzag's only by rounding, llama3 gathers instead). */
static void test_cp_layouts_validate(void)
{
    static const char *const layouts[] = {"zigzag", "ring", "stripe", "llama3"};
    static const zs_planner_ops *const planners[] = {&zs_planner_tecp, &zs_planner_llamacp};
    for (int pi = 0; pi < 2; pi++)
        for (int l = 0; l < 4; l++)
            for (uint64_t seed = 1; seed <= 4; seed++) {
                env v;
                env_init(&v, "llama-550m", 2);
                char o[64];
                snprintf(o, sizeof o, "cp=%d,tp=%d,layout=%s", seed % 2 ? 4 : 8, seed == 3 ? 2 : 1,
                         layouts[l]);
                zs_opts_parse(&v.opts, o, NULL);
                zs_batch *b = random_batch(seed + 100, 4 + (int)(seed * 5 % 30), 6000);
                zs_schedule *s = NULL;
                zs_plan_report rep;
                zs_err e;
                ZS_ASSERT_OK(zs_plan_batch(planners[pi], &v.ctx, b, 1, &s, &rep, &e), &e);
                CU_ASSERT_PTR_NOT_NULL_FATAL(s);
                char want[32];
                snprintf(want, sizeof want, "layout=%s", layouts[l]);
                if (l != (pi == 0 ? 0 : 3)) /* not the planner's default */
                    ZS_ASSERT_STR_CONTAINS(rep.notes, want);
                run_and_free(&v, s, b);
            }
}

static void test_tensor_parallel_validates(void)
{
    env v;
    env_init(&v, "llama-7b", 2);
    zs_opts_parse(&v.opts, "tp=4", NULL);
    v.ctx.mem.zero_stage = 1;
    zs_batch *b = random_batch(99, 20, 6000);
    zs_schedule *s = plan(&v, b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_INT_EQ(s->dims.tp, 4);
    /* Every TP rank runs the same number of ops as its group's rank 0. */
    ZS_ASSERT_INT_EQ(s->ranks[3].nops, s->ranks[0].nops);
    run_and_free(&v, s, b);
}

static void test_broken_copies_rejected(void)
{
    env v;
    env_init(&v, "llama-550m", 2);
    for (uint64_t seed = 1; seed <= 8; seed++) {
        zs_batch *b = random_batch(seed + 100, 30, 5000);
        uint64_t x = seed;

        /* A dropped token: one piece loses its last token. */
        zs_schedule *s = plan(&v, b);
        int64_t k = (int64_t)(zs_test_rng(&x) % (uint64_t)s->npieces);
        while (s->pieces[k].t1 - s->pieces[k].t0 < 2)
            k = (k + 1) % s->npieces;
        s->pieces[k].t1--;
        expect_invalid(s, "not placed");
        zs_schedule_free(s);

        /* A duplicated block: rank r computes one of its blocks again. */
        s = plan(&v, b);
        int r = (int)(zs_test_rng(&x) % 16), found = 0;
        for (int64_t i = 0; i < s->ranks[r].nops && !found; i++) {
            const zs_op *op = &s->ranks[r].ops[i];
            if (op->kind == ZS_OP_COMPUTE && op->u.compute.ck == ZS_CK_ATTN_FWD) {
                zs_attn_block blk = s->blocks[op->u.compute.block0];
                zs_sched_attn(s, r, 0, "dup", 0, &blk, 1, op->u.compute.heads, 0, NULL, 0);
                found = 1;
            }
        }
        if (found)
            expect_invalid(s, "computed");
        zs_schedule_free(s);

        /* An unmatched send. */
        s = plan(&v, b);
        zs_sched_send(s, 3, 1, "stray", 9, 424242, 1e6, NULL, 0);
        expect_invalid(s, "no matching receive");
        zs_schedule_free(s);

        /* A receive whose size differs from its send. */
        s = plan(&v, b);
        zs_sched_send(s, 2, 1, "x", 5, 777, 1e6, NULL, 0);
        zs_sched_recv(s, 5, 1, "x", 2, 777, 2e6, NULL, 0);
        expect_invalid(s, "bytes");
        zs_schedule_free(s);

        /* One communicator used from two streams of a rank. */
        s = plan(&v, b);
        int g2 = zs_schedule_group(s, (int[]){0, 1}, 2);
        zs_sched_coll(s, 0, 0, "x", g2, ZS_COLL_ALLREDUCE, 10, NULL, 0);
        zs_sched_coll(s, 0, 1, "x", g2, ZS_COLL_ALLREDUCE, 10, NULL, 0);
        zs_sched_coll(s, 1, 1, "x", g2, ZS_COLL_ALLREDUCE, 10, NULL, 0);
        zs_sched_coll(s, 1, 1, "x", g2, ZS_COLL_ALLREDUCE, 10, NULL, 0);
        expect_invalid(s, "two streams");
        zs_schedule_free(s);

        /* A collective one member skips. */
        s = plan(&v, b);
        int g = zs_schedule_group(s, (int[]){0, 1}, 2);
        zs_sched_coll(s, 0, 1, "lonely", g, ZS_COLL_ALLREDUCE, 10, NULL, 0);
        expect_invalid(s, "members");
        zs_schedule_free(s);
        zs_batch_free(b);
    }
    zs_cost_free(v.cost);
}

/* Two documents of 4 tokens on rank 0 (both layouts); rank 1 computes
 * both (forward and backward) after one transfer from rank 0 that carries
 * them: 100 bytes of document 0 and 200 of document 1 in one send of 300
 * (a merged ring step). `mode` corrupts it: 1 the parts add up to 250, 2
 * the receive names other parts than the send, 3 it carries document 0 only
 * (300 bytes) while document 1's attention waits for it, 4 document 0
 * twice. */
static zs_schedule *merged_pair(int mode)
{
    zs_schedule *s = zs_schedule_new(2);
    s->dims = (zs_layout_dims){1, 1, 1, 2};
    zs_schedule_set_docs(s, (int32_t[]){4, 4}, 2);
    for (int d = 0; d < 2; d++) {
        zs_schedule_add_piece(s, d, 0, 4, 0, ZS_LAYOUT_ATTN, 0);
        zs_schedule_add_piece(s, d, 0, 4, 0, ZS_LAYOUT_LINEAR, 0);
    }
    zs_carry c[2] = {{0, 100}, {1, mode == 1 ? 150 : 200}}, c3 = {0, 300},
             c4[2] = {{0, 100}, {0, 200}};
    int64_t c0 = zs_schedule_carry(s, mode == 3 ? &c3 : mode == 4 ? c4 : c, mode == 3 ? 1 : 2);
    zs_carry other[2] = {{0, 200}, {1, 100}};
    int64_t co = zs_schedule_carry(s, other, 2);
    int64_t x = zs_sched_send(s, 0, 1, "ring-kv", 1, 5, 300, NULL, 0);
    zs_sched_set_carry(s, 0, x, c0, mode == 3 ? 1 : 2);
    int64_t r = zs_sched_recv(s, 1, 1, "ring-kv", 0, 5, 300, NULL, 0);
    zs_sched_set_carry(s, 1, r, mode == 2 ? co : c0, mode == 3 ? 1 : 2);
    for (int bwd = 0; bwd < 2; bwd++)
        for (int d = 0; d < 2; d++) {
            zs_attn_block b = {d, 0, 4, 0, 4};
            zs_sched_attn(s, 1, 0, "ring-attn", bwd, &b, 1, 1, 1e-6, &r, 1);
        }
    return s;
}

static void test_merged_transfer_checked(void)
{
    zs_schedule *s = merged_pair(0);
    zs_err e;
    zs_validate_opts vo = {0, 0};
    ZS_ASSERT_OK(zs_validate(s, &vo, &e), &e);
    ZS_ASSERT_INT_EQ(s->ranks[1].ops[0].u.p2p.ncarry, 2);
    zs_schedule_free(s);
    static const char *why[] = {"", "add up to 250", "carries other documents", "do not carry it",
                                "document 0 twice"};
    for (int mode = 1; mode <= 4; mode++) {
        s = merged_pair(mode);
        ZS_ASSERT_OK(zs_schedule_check(s, &e), &e);
        expect_invalid(s, why[mode]);
        zs_schedule_free(s);
    }
}

static void test_too_long_document(void)
{
    env v;
    env_init(&v, "llama-7b", 1);
    zs_batch *b = zs_batch_from_lengths((int32_t[]){1000, 2000000}, 2);
    zs_schedule *s = NULL;
    zs_plan_report rep;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_plan_batch(&zs_planner_local, &v.ctx, b, 1, &s, &rep, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "document 1");
    ZS_ASSERT_STR_CONTAINS(e.fix, "split_long");
    zs_opts_parse(&v.opts, "split_long=1", NULL);
    v.ctx.mem.recompute = ZS_RECOMPUTE_FULL;
    v.ctx.mem.zero_stage = 3;
    zs_batch *b2 = zs_batch_from_lengths((int32_t[]){1000, 300000}, 2);
    ZS_ASSERT_OK(zs_plan_batch(&zs_planner_local, &v.ctx, b2, 1, &s, &rep, &e), &e);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "split_long");
    CU_ASSERT(s->ndocs > 2);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_batch_free(b2);
    zs_cost_free(v.cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"local_hand_checked", test_local_hand_checked},
        {"random_plans_validate", test_random_plans_validate},
        {"tensor_parallel_validates", test_tensor_parallel_validates},
        {"cp_layouts_validate", test_cp_layouts_validate},
        {"broken_copies_rejected", test_broken_copies_rejected},
        {"too_long_document", test_too_long_document},
        {"merged_transfer_checked", test_merged_transfer_checked},
        {NULL, NULL}};
    static const zs_test_suite suites[] = {{"validator", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
