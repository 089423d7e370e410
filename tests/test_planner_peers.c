/* Tests of the peers' planners, flashcp and distca, and of DistCA's task
 * scheduler (planners/zs_distca_sched_internal.h), on hand-checked small cases:
 *   - the scheduler splits the innermost mirrored pairs of a document to
 *     balance two servers exactly, moves a whole item when it fits the
 *     need, prefers the cheaper transfer, and respects the tolerance;
 *   - distca's head-tail layout of one document over two servers and the
 *     K/V each server receives (no task moves: head-tail is balanced);
 *   - flashcp's Per-Doc chunks and K/V volumes (point to point: the
 *     causal prefix each rank needs, or every chunk it lacks; the default
 *     all-gather's buffer), and Whole-Doc for short documents (no K/V
 *     traffic at all).
 * Every plan also passes the plan validator (zs_plan_batch validates). */
#include <stdlib.h>
#include <string.h>

#include "zs_distca_sched_internal.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"

/* ---- the scheduler --------------------------------------------------------- */

static double pairs_of(const zs_ca_item *it)
{
    double p = 0;
    for (int32_t q = it->h0; q < it->h1; q++)
        p += q + 1;
    for (int32_t q = it->t0; q < it->t1; q++)
        p += q + 1;
    return p;
}

static double load_pairs(void *arg, const zs_ca_item *it)
{
    (void)arg;
    return pairs_of(it);
}

/* Transfer seconds: query tokens (plus a penalty per source for the test
 * that prefers one). */
static double comm_tokens(void *arg, const zs_ca_item *it, int dst)
{
    const double *pen = arg;
    (void)dst;
    return zs_ca_item_tokens(it) * (pen ? pen[it->doc] : 1.0);
}

static void test_sched_split(void)
{
    zs_err e;
    /* One document of 8 tokens on server 0: front [0, 4), back [4, 8),
     * 36 pairs. The mean is 18: the innermost 2 pairs ([2, 4) + [4, 6),
     * 3 + 4 + 5 + 6 = 18 pairs) move, [0, 2) + [6, 8) (1 + 2 + 7 + 8) stay. */
    int32_t n = 1, cap = 1;
    zs_ca_item *it = malloc(sizeof *it);
    it[0] = (zs_ca_item){0, 8, 0, 0, 0, 4, 4, 8};
    zs_ca_sched_in in = {2, 0.0, 1, load_pairs, comm_tokens, NULL};
    zs_ca_sched_out out;
    ZS_ASSERT_OK(zs_ca_schedule(&in, &it, &n, &cap, &out, &e), &e);
    ZS_ASSERT_INT_EQ(n, 2);
    ZS_ASSERT_INT_EQ(out.split, 1);
    ZS_ASSERT_INT_EQ(out.moved, 0);
    ZS_ASSERT_INT_EQ(it[0].server, 0);
    ZS_ASSERT_INT_EQ(it[0].h1, 2);
    ZS_ASSERT_INT_EQ(it[0].t0, 6);
    ZS_ASSERT_INT_EQ(it[1].server, 1);
    ZS_ASSERT_INT_EQ(it[1].h0, 2);
    ZS_ASSERT_INT_EQ(it[1].h1, 4);
    ZS_ASSERT_INT_EQ(it[1].t0, 4);
    ZS_ASSERT_INT_EQ(it[1].t1, 6);
    ZS_ASSERT_NEAR(pairs_of(&it[0]), 18, 0);
    ZS_ASSERT_NEAR(pairs_of(&it[1]), 18, 0);
    ZS_ASSERT_NEAR(out.imb_before, 2.0, 1e-12);
    ZS_ASSERT_NEAR(out.imb_after, 1.0, 1e-12);
    /* Block 4: 2 pairs round down to 0, nothing can move. */
    it[0] = (zs_ca_item){0, 8, 0, 0, 0, 4, 4, 8};
    n = 1;
    in.block = 4;
    ZS_ASSERT_OK(zs_ca_schedule(&in, &it, &n, &cap, &out, &e), &e);
    ZS_ASSERT_INT_EQ(n, 1);
    ZS_ASSERT_INT_EQ(it[0].server, 0);
    free(it);
}

static void test_sched_whole(void)
{
    zs_err e;
    /* Two documents of 4 tokens (10 pairs each) on server 0 of 2: the mean
     * is 10, one moves whole, the one cheaper to send (document 1). */
    int32_t n = 2, cap = 2;
    zs_ca_item *it = malloc(sizeof *it * 2);
    it[0] = (zs_ca_item){0, 4, 0, 0, 0, 2, 2, 4};
    it[1] = (zs_ca_item){1, 4, 0, 0, 0, 2, 2, 4};
    double pen[2] = {3.0, 1.0};
    zs_ca_sched_in in = {2, 0.1, 1, load_pairs, comm_tokens, pen};
    zs_ca_sched_out out;
    ZS_ASSERT_OK(zs_ca_schedule(&in, &it, &n, &cap, &out, &e), &e);
    ZS_ASSERT_INT_EQ(n, 2);
    ZS_ASSERT_INT_EQ(out.moved, 1);
    ZS_ASSERT_INT_EQ(it[0].server, 0);
    ZS_ASSERT_INT_EQ(it[1].server, 1);
    /* Within the tolerance nothing moves: 10 + 9 against 10 + 10 ... */
    it[0] = (zs_ca_item){0, 4, 0, 0, 0, 2, 2, 4};
    it[1] = (zs_ca_item){1, 4, 1, 1, 0, 2, 2, 4};
    it[1].h0 = 1; /* 9 pairs: 2 + 3 + 4 */
    in.tol = 0.1;
    ZS_ASSERT_OK(zs_ca_schedule(&in, &it, &n, &cap, &out, &e), &e);
    ZS_ASSERT_INT_EQ(out.moved + out.split, 0);
    /* ... and a server out of range is a bug. */
    it[1].server = 5;
    ZS_ASSERT_INT_EQ(zs_ca_schedule(&in, &it, &n, &cap, &out, &e), ZS_EINVALID);
    free(it);
}

/* ---- the planners ------------------------------------------------------------ */

static zs_schedule *plan(zs_test_env *v, const char *method, const char *opts, const zs_batch *b,
                         zs_plan_report *rep)
{
    zs_err e;
    zs_opts_init(&v->opts);
    if (opts && *opts)
        ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, &e), &e);
    zs_schedule *s = NULL;
    int rc = zs_plan_batch(zs_planner_find(method), &v->ctx, b, 1, &s, rep, &e);
    if (rc)
        fprintf(stderr, "%s: %s (%s)\n", method, e.what, e.where);
    ZS_ASSERT_OK(rc, &e);
    return s;
}

/* Bytes of the ops labelled `label` that rank r sends to peer (all repeats
 * counted once: the layer body's segment holds one). */
static double sent(const zs_schedule *s, int r, int peer, const char *label)
{
    double by = 0;
    const zs_rank_prog *p = &s->ranks[r];
    for (int64_t i = 0; i < p->nops; i++) {
        const zs_op *op = &p->ops[i];
        if (op->kind == ZS_OP_SEND && op->u.p2p.peer == peer &&
            !strcmp(s->labels[op->label], label) && !(op->flags & ZS_OPF_RECOMPUTE))
            by += op->u.p2p.bytes;
    }
    return by;
}

static int has_label(const zs_schedule *s, const char *label)
{
    for (int r = 0; r < s->nranks; r++)
        for (int64_t i = 0; i < s->ranks[r].nops; i++)
            if (!strcmp(s->labels[s->ranks[r].ops[i].label], label))
                return 1;
    return 0;
}

/* One document of 8192 tokens over two servers (tp=8 on 2 nodes of
 * cluster-a: 16 GPUs, 2 TP groups), one nano-batch. Server 0 holds
 * [0, 2048) + [6144, 8192), server 1 [2048, 6144): both do 2048 x 8193
 * pairs, so no task moves. Server 0's tasks need keys [0, 8192): the 4096
 * of server 1; server 1's need [0, 6144): server 0's 2048. llama-550m, 8 KV
 * heads of 128, tp 8: 1 head, 512 bytes of K and V per token. */
static void test_distca_layout(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 2, NULL);
    int32_t len[] = {8192};
    zs_batch *b = zs_batch_from_lengths(len, 1);
    zs_plan_report rep;
    zs_schedule *s = plan(&v, "distca", "tp=8,nano=1,tol_pct=0", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "0 moved whole, 0 split off");
    int found[2] = {0, 0};
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *p = &s->pieces[i];
        int srv = p->rank / 8;
        if (p->t0 == 0 || p->t0 == 6144)
            ZS_ASSERT_INT_EQ(srv, 0);
        else
            ZS_ASSERT_INT_EQ(srv, 1);
        found[p->layout]++;
    }
    ZS_ASSERT_INT_EQ(found[ZS_LAYOUT_ATTN], 4);
    ZS_ASSERT_INT_EQ(found[ZS_LAYOUT_LINEAR], 4);
    ZS_ASSERT_NEAR(sent(s, 8, 0, "ca-send-qkv"), 4096.0 * 512, 0);
    ZS_ASSERT_NEAR(sent(s, 0, 8, "ca-send-qkv"), 2048.0 * 512, 0);
    /* Backward: no dO (no task away from home), dK/dV back to the owners. */
    ZS_ASSERT_NEAR(sent(s, 0, 8, "ca-send-grad"), 4096.0 * 512, 0);
    ZS_ASSERT_NEAR(sent(s, 8, 0, "ca-send-grad"), 2048.0 * 512, 0);
    CU_ASSERT(!has_label(s, "ca-send-do"));
    zs_schedule_free(s);
    /* Ping-pong: two nano-batches, their own streams (with the TP stream:
     * compute, comm, tp, ca-ping, ca-pong). */
    int32_t len2[] = {8192, 4096, 4096};
    zs_batch *b2 = zs_batch_from_lengths(len2, 3);
    s = plan(&v, "distca", "tp=8", b2, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_INT_EQ(s->nstreams, 5);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "2 nano-batch(es) (ping-pong)");
    zs_schedule_free(s);
    zs_batch_free(b2);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* A skewed batch: the scheduler moves work off the server holding the long
 * document, and the plan still validates. */
static void test_distca_moves(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 2, NULL);
    int32_t len[] = {16384, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024,
                     1024,  1024, 1024, 1024, 1024, 1024, 1024, 1024};
    zs_batch *b = zs_batch_from_lengths(len, 17);
    zs_plan_report rep;
    zs_schedule *s = plan(&v, "distca", "tp=4,nano=1", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT(strstr(rep.notes, "0 moved whole, 0 split off") == NULL);
    CU_ASSERT(has_label(s, "ca-send-do")); /* moved tasks get dO in backward */
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* Per-Doc over cp=2: rank 0 holds chunks 0 and 3 of 2000 tokens, rank 1
 * chunks 1 and 2. Rank 0's tail chunk needs keys [0, 6000): chunks 1 and 2
 * from rank 1; rank 1's needs [0, 4000): chunk 0 from rank 0. With
 * kv=all rank 1 also gets chunk 3. llama-550m, tp 1: 4096 bytes of K and V
 * per token; the K/V go once forward and again in backward. */
static void test_flashcp_perdoc(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, NULL);
    int32_t len[] = {8000};
    zs_batch *b = zs_batch_from_lengths(len, 1);
    zs_plan_report rep;
    zs_schedule *s = plan(&v, "flashcp", "cp=2,whole=0,kv=aware", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "0 Whole-Doc and 1 Per-Doc");
    ZS_ASSERT_NEAR(sent(s, 1, 0, "cp-kv"), 2 * 4000.0 * 4096, 0);
    ZS_ASSERT_NEAR(sent(s, 0, 1, "cp-kv"), 2 * 2000.0 * 4096, 0);
    ZS_ASSERT_NEAR(sent(s, 0, 1, "cp-dkv"), 4000.0 * 4096, 0); /* their gradients back */
    ZS_ASSERT_NEAR(sent(s, 1, 0, "cp-dkv"), 2000.0 * 4096, 0);
    zs_schedule_free(s);
    s = plan(&v, "flashcp", "cp=2,whole=0,kv=all", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_NEAR(sent(s, 0, 1, "cp-kv"), 2 * 4000.0 * 4096, 0);
    zs_schedule_free(s);
    /* The default all-gathers each rank's 4000 Per-Doc tokens. */
    s = plan(&v, "flashcp", "cp=2,whole=0", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int found = 0;
    for (int64_t i = 0; i < s->ranks[0].nops; i++) {
        const zs_op *op = &s->ranks[0].ops[i];
        if (op->kind == ZS_OP_COLL && !strcmp(s->labels[op->label], "cp-kv-all-gather")) {
            ZS_ASSERT_NEAR(op->u.coll.bytes, 4000.0 * 4096, 0);
            found = 1;
        }
    }
    CU_ASSERT(found);
    CU_ASSERT(!has_label(s, "cp-kv"));
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* Eight documents of 512 tokens on a CP group of 8: each whole on its own
 * rank beats cutting them into 16 chunks of 32 tokens, and needs no K/V. */
static void test_flashcp_whole(void)
{
    zs_test_env v;
    zs_test_env_init(&v, "llama-550m", 1, NULL);
    int32_t len[] = {512, 512, 512, 512, 512, 512, 512, 512};
    zs_batch *b = zs_batch_from_lengths(len, 8);
    zs_plan_report rep;
    zs_schedule *s = plan(&v, "flashcp", "cp=8", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "8 Whole-Doc and 0 Per-Doc");
    CU_ASSERT(!has_label(s, "cp-kv"));
    int rank_of[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, used[8] = {0};
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *p = &s->pieces[i];
        ZS_ASSERT_INT_EQ(p->t1 - p->t0, 512);
        rank_of[p->doc] = p->rank;
    }
    for (int d = 0; d < 8; d++)
        used[rank_of[d]]++;
    for (int r = 0; r < 8; r++)
        ZS_ASSERT_INT_EQ(used[r], 1);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"sched_split", test_sched_split},
                                         {"sched_whole", test_sched_whole},
                                         {"distca_layout", test_distca_layout},
                                         {"distca_moves", test_distca_moves},
                                         {"flashcp_perdoc", test_flashcp_perdoc},
                                         {"flashcp_whole", test_flashcp_whole},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"peers", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
