/* The schedule builder's first failure (core/zs_schedule.c): what each
 * misuse records (code, rank, op, label, message), that later appends do
 * nothing, that a copied rank program goes through the same checks, and
 * that emitters (the iteration builder, rings, Zeppelin's routing layer)
 * report what really failed rather than "out of memory". */
#include <math.h>
#include <stdlib.h>

#include "zs_iteration.h"
#include "zs_ring.h"
#include "zs_test_env.h"
#include "zs_test.h"
#include "zs_route.h"
#include "zs_schedule_internal.h"

/* The failure a schedule reports, as a caller sees it. */
static zs_err checked(const zs_schedule *s)
{
    zs_err e;
    zs_err_clear(&e);
    zs_schedule_check(s, &e);
    return e;
}

static void test_first_failure_sticks(void)
{
    zs_schedule *s = zs_schedule_new(4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_INT_EQ(zs_sched_gemm(s, 0, 0, "qkv", 1, 2, 3, 1e-6, NULL, 0), 0);
    ZS_ASSERT_INT_EQ(zs_sched_send(s, 1, 1, "xfer", 9, 0, 100, NULL, 0), ZS_EINVALID);
    ZS_ASSERT_INT_EQ(s->error.code, ZS_EINVALID);
    ZS_ASSERT_INT_EQ(s->error.rank, 1);
    ZS_ASSERT_INT_EQ(s->error.op, 0);
    CU_ASSERT_STRING_EQUAL(s->error.label, "xfer");
    /* Valid calls after it append nothing and return the first code; a
     * second misuse does not replace the first. */
    ZS_ASSERT_INT_EQ(zs_sched_elementwise(s, 0, 0, "norm", 1, 1e-6, NULL, 0), ZS_EINVALID);
    ZS_ASSERT_INT_EQ(zs_schedule_group(s, (int[]){0, 1}, 2), ZS_EINVALID);
    ZS_ASSERT_INT_EQ(zs_sched_gemm(s, 0, 7, "late", 1, 1, 1, 0, NULL, 0), ZS_EINVALID);
    ZS_ASSERT_INT_EQ(s->ranks[0].nops, 1);
    ZS_ASSERT_INT_EQ(s->ngroups, 0);
    zs_err e = checked(s);
    ZS_ASSERT_INT_EQ(e.code, ZS_EINVALID);
    CU_ASSERT_STRING_EQUAL(e.what, "send to peer 9: not a rank of this 4-rank schedule");
    CU_ASSERT_STRING_EQUAL(e.where, "schedule builder: rank 1, op 0 \"xfer\"");
    ZS_ASSERT_STR_CONTAINS(e.fix, "planner bug");
    zs_schedule_free(s);
}

/* One misuse on a fresh 4-rank schedule that holds one op on rank 0 and
 * one group {0, 1}. */
typedef struct misuse {
    const char *name;
    int kind;
    const char *what;  /* expected in the message */
    const char *where; /* expected in the location */
} misuse;

static void apply(zs_schedule *s, int kind)
{
    int64_t fwd = 7;
    zs_attn_block blk = {0, 0, 4, 0, 4};
    switch (kind) {
    case 0:
        zs_sched_gemm(s, 7, 0, "qkv", 1, 1, 1, 0, NULL, 0);
        break;
    case 1:
        zs_sched_elementwise(s, 0, 5, "norm", 1, 0, NULL, 0);
        break;
    case 2:
        zs_sched_elementwise(s, 0, 0, "norm", 1, 0, &fwd, 1);
        break;
    case 3:
        zs_sched_send(s, 2, 1, "kv", 2, 0, 10, NULL, 0);
        break;
    case 4:
        zs_sched_recv(s, 0, 1, "kv", 1, 0, NAN, NULL, 0);
        break;
    case 5:
        zs_sched_gemm(s, 0, 0, "mlp", 1, 1, 1, -1, NULL, 0);
        break;
    case 6:
        zs_sched_coll(s, 1, 1, "grad", 3, ZS_COLL_ALLREDUCE, 10, NULL, 0);
        break;
    case 7:
        zs_schedule_group(s, (int[]){0, 0}, 2);
        break;
    case 8:
        zs_schedule_group(s, (int[]){0, 9}, 2);
        break;
    case 9:
        zs__sched_attn_ref(s, 0, 0, "attn", 0, 5, 2, 1, 0, NULL, 0);
        break;
    case 10:
        zs_schedule_begin_segment(s, 3, 0);
        break;
    case 11:
        for (int i = 0; i < ZS_MAX_STREAMS - 1; i++)
            zs_schedule_add_stream(s, "extra");
        break;
    case 12:
        zs_schedule_add_piece(s, 3, 0, 4, 0, ZS_LAYOUT_ATTN, 0);
        break;
    case 13:
        zs_sched_attn(s, 1, 0, "attn", 0, &blk, 1, 0, 0, NULL, 0);
        break;
    case 14:
        zs_sched_coll(s, 0, 1, "grad", 0, ZS_COLL_ALLREDUCE, INFINITY, NULL, 0);
        break;
    }
}

static void test_failure_messages(void)
{
    static const misuse cases[] = {
        {"rank", 0, "gemm on rank 7: not a rank of this 4-rank schedule", "rank 7 \"qkv\""},
        {"stream", 1, "elementwise on stream 5: the schedule has 2 streams",
         "rank 0, op 1 \"norm\""},
        {"later op", 2, "elementwise depends on op 7, not an earlier op of rank 0 (1 ops so far)",
         "op 1"},
        {"self", 3, "send to peer 2: a rank cannot message itself", "rank 2, op 0 \"kv\""},
        {"nan", 4, "receive from peer 1: nan bytes (finite, >= 0)", "rank 0, op 1 \"kv\""},
        {"duration", 5, "gemm with duration -1 s (finite, >= 0)", "\"mlp\""},
        {"group", 6, "collective on group 3: the schedule has 1 groups", "rank 1, op 0 \"grad\""},
        {"twice", 7, "rank 0 twice in a group", "schedule builder"},
        {"member", 8, "group member 9 is not a rank of this 4-rank schedule", "schedule builder"},
        {"pool", 9, "attention over blocks [5, 7) of a pool of 0", "\"attn\""},
        {"repeat", 10, "segment repeated 0 times (at least once)", "rank 3"},
        {"streams", 11, "no room for stream \"extra\": a schedule has at most 8 streams",
         "schedule builder"},
        {"piece", 12, "piece of document 3: the plan has 0 documents", "schedule builder"},
        {"heads", 13, "attention with 0 heads (1 to 32767)", "rank 1, op 0 \"attn\""},
        {"inf", 14, "all-reduce over inf bytes", "\"grad\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zs_schedule *s = zs_schedule_new(4);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        zs_sched_gemm(s, 0, 0, "qkv", 1, 1, 1, 0, NULL, 0);
        zs_schedule_group(s, (int[]){0, 1}, 2);
        zs_err ok;
        ZS_ASSERT_OK(zs_schedule_check(s, &ok), &ok);
        apply(s, cases[i].kind);
        zs_err e = checked(s);
        if (e.code != ZS_EINVALID)
            fprintf(stderr, "case %s\n", cases[i].name);
        ZS_ASSERT_INT_EQ(e.code, ZS_EINVALID);
        ZS_ASSERT_STR_CONTAINS(e.what, cases[i].what);
        ZS_ASSERT_STR_CONTAINS(e.where, cases[i].where);
        CU_ASSERT(strstr(e.what, "memory") == NULL);
        zs_schedule_free(s);
    }
}

static int same_op(const zs_op *a, const zs_op *b, int peer_shift, int group)
{
    zs_op x = *a;
    if (x.kind == ZS_OP_SEND || x.kind == ZS_OP_RECV)
        x.u.p2p.peer += peer_shift;
    if (x.kind == ZS_OP_COLL)
        x.u.coll.group = group;
    return x.kind == b->kind && x.stream == b->stream && x.label == b->label &&
           x.flags == b->flags && x.ndeps == b->ndeps && x.dep0 == b->dep0 &&
           x.duration == b->duration && memcmp(&x.u, &b->u, sizeof x.u) == 0;
}

static void test_copy_rank(void)
{
    zs_schedule *s = zs_schedule_new(4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int32_t len[1] = {8};
    zs_attn_block blk = {0, 0, 8, 0, 8};
    zs_schedule_set_docs(s, len, 1);
    int g02 = zs_schedule_group(s, (int[]){0, 2}, 2);
    int g13 = zs_schedule_group(s, (int[]){1, 3}, 2);
    zs_sched_marker(s, 0, ZS_MARK_PHASE, ZS_PHASE_FORWARD);
    int64_t a = zs_sched_gemm(s, 0, 0, "qkv", 8, 16, 32, 1e-6, NULL, 0);
    zs_schedule_begin_segment(s, 0, 3);
    int64_t at = zs_sched_attn(s, 0, 0, "attn", 0, &blk, 1, 4, 2e-6, &a, 1);
    int64_t sd = zs_sched_send(s, 0, 1, "kv", 2, 5, 64, &at, 1);
    zs_sched_recv(s, 0, 1, "kv", 2, 5, 64, NULL, 0);
    int64_t cd[2] = {at, sd};
    zs_sched_coll(s, 0, 1, "grad", g02, ZS_COLL_ALLREDUCE, 128, cd, 2);
    zs_schedule_flag_ops(s, 0, at, ZS_OPF_RECOMPUTE);
    zs_schedule_begin_segment(s, 0, 1);
    zs_sched_elementwise(s, 0, 0, "optimizer", 256, 3e-6, NULL, 0);
    zs_err e;
    ZS_ASSERT_OK(zs_schedule_check(s, &e), &e);
    int map[2] = {g13, g13};
    ZS_ASSERT_OK(zs_schedule_copy_rank(s, 0, 1, 1, map, 2), NULL);
    const zs_rank_prog *p = &s->ranks[0], *q = &s->ranks[1];
    ZS_ASSERT_INT_EQ(q->nops, p->nops);
    ZS_ASSERT_INT_EQ(q->ndeps, p->ndeps);
    ZS_ASSERT_INT_EQ(q->nsegs, p->nsegs);
    /* Allocated to size, as large as the original. */
    ZS_ASSERT_INT_EQ(q->ops_cap, p->nops);
    for (int32_t g = 0; g < p->nsegs && g < q->nsegs; g++) {
        ZS_ASSERT_INT_EQ(q->segs[g].op0, p->segs[g].op0);
        ZS_ASSERT_INT_EQ(q->segs[g].nops, p->segs[g].nops);
        ZS_ASSERT_INT_EQ(q->segs[g].repeat, p->segs[g].repeat);
    }
    for (int64_t i = 0; i < p->nops && i < q->nops; i++)
        CU_ASSERT(same_op(&p->ops[i], &q->ops[i], 1, g13));
    CU_ASSERT(memcmp(p->deps, q->deps, sizeof(int32_t) * (size_t)p->ndeps) == 0);
    ZS_ASSERT_INT_EQ(q->ops[at].flags, ZS_OPF_RECOMPUTE);
    /* A copy onto a rank that has a program is refused. */
    ZS_ASSERT_INT_EQ(zs_schedule_copy_rank(s, 0, 1, 1, map, 2), ZS_EINVALID);
    e = checked(s);
    ZS_ASSERT_STR_CONTAINS(e.what, "copy of rank 0 to rank 1, which already has a program");
    zs_schedule_free(s);

    /* A copy whose shifted peer leaves the schedule names the op. */
    s = zs_schedule_new(4);
    zs_sched_gemm(s, 0, 0, "qkv", 1, 1, 1, 0, NULL, 0);
    zs_sched_send(s, 0, 1, "kv", 2, 0, 64, NULL, 0);
    ZS_ASSERT_INT_EQ(zs_schedule_copy_rank(s, 0, 3, 3, NULL, 0), ZS_EINVALID);
    e = checked(s);
    CU_ASSERT_STRING_EQUAL(e.what, "send to peer 5: not a rank of this 4-rank schedule");
    CU_ASSERT_STRING_EQUAL(e.where, "schedule builder: rank 3, op 1 \"kv\"");
    zs_schedule_free(s);
}

/* ---- emitters ------------------------------------------------------------ */

static zs_cost *cost_new(int nodes)
{
    zs_model m;
    zs_cluster c;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-550m", &m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", nodes, &c, &e), &e);
    return zs_cost_analytic_new(&m, &c);
}

typedef struct bad {
    int mode; /* 0: a send to a rank that does not exist; 1: a ring on a missing stream */
    int slots[2], docs[1];
} bad;

/* Local attention per slot, and one misuse on the first forward. Mode 0
 * does not check its appends: the iteration builder still reports them. */
static int emit_bad(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e)
{
    bad *b = arg;
    zs_schedule *s = zs_iter_schedule(it);
    (void)micro;
    if (b->mode == 1) {
        zs_ring_spec rs = {2, b->slots, 1,    b->docs, ZS_RING_EXACT,
                           9, "ring",   NULL, NULL,    ZS_CPL_ZIGZAG};
        int64_t dep[2] = {zs_iter_entry(it, 0), zs_iter_entry(it, 1)};
        int rc = zs_ring_emit(it, stage, &rs, backward, dep, e);
        for (int k = 0; k < 2 && !rc; k++)
            zs_iter_set_exit(it, k, dep[k]);
        return rc;
    }
    for (int sl = 0; sl < 2; sl++) {
        zs_attn_block blk = {0, 0, s->doc_len[0], 0, s->doc_len[0]};
        int64_t dep[1] = {zs_iter_entry(it, sl)};
        int64_t op = zs_sched_attn(s, zs_iter_rank(it, stage, sl), ZS_STREAM_COMPUTE, "attn",
                                   backward, &blk, 1, zs_iter_heads(it), 1e-6, dep, 1);
        zs_iter_set_exit(it, sl, op);
    }
    if (!backward)
        zs_sched_send(s, zs_iter_rank(it, stage, 0), ZS_STREAM_COMM, "bad-xfer", 99, 1, 64, NULL,
                      0);
    return ZS_OK;
}

static int build_bad(zs_cost *cost, int mode, zs_err *e)
{
    zs_schedule *s = zs_schedule_new(2);
    int32_t len[1] = {64};
    int64_t lin[2] = {32, 32};
    bad b = {mode, {0, 1}, {0}};
    zs_schedule_set_docs(s, len, 1);
    zs_iter_spec spec = {{1, 2, 1, 1}, 1,    lin, ZS_RECOMPUTE_NONE, 1, 1, emit_bad,
                         &b,           NULL, 0,   ZS_FSDP2};
    int rc = zs_iter_build(s, cost, &spec, e);
    zs_schedule_free(s);
    return rc;
}

static void test_emitters_report_what_failed(void)
{
    zs_cost *cost = cost_new(1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    zs_err e;
    ZS_ASSERT_INT_EQ(build_bad(cost, 0, &e), ZS_EINVALID);
    CU_ASSERT_STRING_EQUAL(e.what, "send to peer 99: not a rank of this 2-rank schedule");
    ZS_ASSERT_STR_CONTAINS(e.where, "schedule builder: rank 0, op ");
    ZS_ASSERT_STR_CONTAINS(e.where, "\"bad-xfer\"");
    ZS_ASSERT_INT_EQ(build_bad(cost, 1, &e), ZS_EINVALID);
    CU_ASSERT_STRING_EQUAL(e.what, "send on stream 9: the schedule has 2 streams");
    ZS_ASSERT_STR_CONTAINS(e.where, "\"ring-kv\"");
    zs_cost_free(cost);

    /* Zeppelin's routing layer on a bare schedule: a stream that is not there. */
    zs_cluster c;
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", 2, &c, &e), &e);
    zs_route *r = zs_route_new(&c, 1, 4, 1 << 20, ZS_STREAM_COMM);
    zs_schedule *s = zs_schedule_new(16);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int64_t so, ro;
    zs_xfer x = {7, 8, 4, 1, 1e6, NULL, 0, -1, 0, 0};
    ZS_ASSERT_INT_EQ(zs_route_emit(r, s, &x, 2, &so, &ro, &e), ZS_EINVALID);
    ZS_ASSERT_STR_CONTAINS(e.what, "on stream 4: the schedule has 2 streams");
    ZS_ASSERT_STR_CONTAINS(e.where, "rank 7, op 0");
    zs_schedule_free(s);
    zs_route_free(r);
}

/* Tensor parallelism copies each TP group leader's program through the
 * builder: the copy matches the leader op for op, peers shifted. */
static void test_tp_copies(void)
{
    zs_cost *cost = cost_new(1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cost);
    zs_schedule *s = zs_schedule_new(8);
    int32_t len[1] = {64};
    int64_t lin[2] = {64, 64};
    zs_schedule_set_docs(s, len, 1);
    /* tp=2, pp=2, dp=2: pipeline sends and DP groups move with the TP rank. */
    zs_iter_spec spec = {{2, 1, 2, 2}, 2,    lin, ZS_RECOMPUTE_FULL, 1, 1, zs_test_emit_local,
                         NULL,         NULL, 0,   ZS_FSDP2};
    int64_t lin2[4] = {64, 64, 32, 32};
    spec.linear_tokens = lin2;
    zs_err e;
    ZS_ASSERT_OK(zs_iter_build(s, cost, &spec, &e), &e);
    for (int r0 = 0; r0 < 8; r0 += 2) {
        const zs_rank_prog *p = &s->ranks[r0], *q = &s->ranks[r0 + 1];
        ZS_ASSERT_INT_EQ(q->nops, p->nops);
        ZS_ASSERT_INT_EQ(q->nsegs, p->nsegs);
        int sends = 0;
        for (int64_t i = 0; i < p->nops && i < q->nops; i++) {
            const zs_op *a = &p->ops[i], *b = &q->ops[i];
            ZS_ASSERT_INT_EQ(a->kind, b->kind);
            ZS_ASSERT_INT_EQ(a->label, b->label);
            if (a->kind == ZS_OP_SEND) {
                ZS_ASSERT_INT_EQ(b->u.p2p.peer, a->u.p2p.peer + 1);
                sends++;
            }
            if (a->kind == ZS_OP_COLL) {
                const zs_group *ga = &s->groups[a->u.coll.group];
                const zs_group *gb = &s->groups[b->u.coll.group];
                int tp = ga->n == 2 && ga->ranks[0] == r0 && ga->ranks[1] == r0 + 1;
                ZS_ASSERT_INT_EQ(gb->ranks[0], tp ? r0 : ga->ranks[0] + 1);
            }
        }
        CU_ASSERT(sends > 0);
    }
    zs_schedule_free(s);
    zs_cost_free(cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {
        {"first_failure_sticks", test_first_failure_sticks},
        {"failure_messages", test_failure_messages},
        {"copy_rank", test_copy_rank},
        {"emitters_report_what_failed", test_emitters_report_what_failed},
        {"tp_copies", test_tp_copies},
        {NULL, NULL}};
    static const zs_test_suite suites[] = {{"sched_errors", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
