/* Tests of the context-parallel baselines (te-cp, llama-cp, hybrid-dp,
 * ulysses, usp): hand-checked placements, bytes per rank per layer and
 * attention FLOPs per rank on small cases; property tests over random
 * batches (the validator passes, attention FLOPs add up to the documents'
 * causal FLOPs, ring / all-gather / all-to-all bytes follow the formulas of
 * docs/methods.md); bad combinations are clear errors; every schedule runs
 * to the end on the analytic backend. */
#include <stdlib.h>

#include "zs_analytic.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"
#include "zs_validate.h"

typedef zs_test_env env;

static void env_init(env *v, const char *model, int nodes)
{
    zs_test_env_init(v, model, nodes, NULL);
}

static void env_opts(env *v, const char *spec)
{
    zs_err e;
    zs_opts_init(&v->opts);
    ZS_ASSERT_OK(zs_opts_parse(&v->opts, spec, &e), &e);
}

static zs_batch *random_batch(uint64_t seed, int ndocs, int maxlen)
{
    zs_batch *b = zs_batch_new(ndocs);
    uint64_t x = seed * 2654435761ULL + 1;
    for (int i = 0; i < ndocs; i++) {
        /* Long-tailed: mostly short documents, a few long ones. */
        uint64_t r = zs_test_rng(&x);
        int32_t len = 1 + (int32_t)(r % 2000);
        if (r % 7 == 0)
            len = 1 + (int32_t)(zs_test_rng(&x) % (uint64_t)maxlen);
        zs_batch_push(b, len, i);
    }
    return b;
}

static zs_schedule *plan_ok(env *v, const char *method, const zs_batch *b, zs_plan_report *rep)
{
    const zs_planner_ops *p = zs_planner_find(method);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    zs_schedule *s = NULL;
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_plan_batch(p, &v->ctx, b, 1, &s, rep, &e);
    if (rc)
        fprintf(stderr, "%s: ", method);
    ZS_ASSERT_OK(rc, &e);
    return s;
}

/* ---- measurements on a schedule ---------------------------------------------- */

/* Attention forward pairs x heads of a rank (no recomputation), one pass
 * over all layers; FLOPs are 4 x head_dim times this. */
static double rank_attn_pairs(const zs_schedule *s, int r)
{
    return zs_schedule_attn_work(s, r);
}

static double rank_attn_flops(const zs_schedule *s, const zs_model *m, int r)
{
    return rank_attn_pairs(s, r) * 4.0 * m->head_dim;
}

/* Bytes a rank sends (p2p) or puts into collectives whose label starts
 * with prefix, in one pass over the layers (repeat counted), split into the
 * forward and the backward phase by the phase markers. */
typedef struct bytes_fb {
    double fwd, bwd;
} bytes_fb;

static bytes_fb rank_bytes(const zs_schedule *s, int r, int kind, const char *prefix)
{
    const zs_rank_prog *p = &s->ranks[r];
    bytes_fb out = {0, 0};
    int phase = ZS_PHASE_FORWARD;
    for (int32_t g = 0; g < p->nsegs; g++)
        for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
            const zs_op *op = &p->ops[i];
            if (op->kind == ZS_OP_MARKER && op->u.marker.mk == ZS_MARK_PHASE)
                phase = op->u.marker.value;
            if (op->kind != kind || (op->flags & ZS_OPF_RECOMPUTE) ||
                strncmp(s->labels[op->label], prefix, strlen(prefix)) != 0)
                continue;
            double b =
                (kind == ZS_OP_COLL ? op->u.coll.bytes : op->u.p2p.bytes) * p->segs[g].repeat;
            if (phase == ZS_PHASE_BACKWARD)
                out.bwd += b;
            else
                out.fwd += b;
        }
    return out;
}

/* Sum over ranks of attention FLOPs equals the documents' causal FLOPs
 * times the layers (query heads counted once). */
static void check_total_flops(const zs_schedule *s, const zs_model *m, const zs_batch *b)
{
    double sum = 0, want = 0;
    for (int r = 0; r < s->nranks; r++)
        sum += rank_attn_flops(s, m, r);
    for (int d = 0; d < b->ndocs; d++)
        want += zs_model_attn_flops_causal(m, b->len[d]) * m->layers;
    ZS_ASSERT_REL(sum, want, 1e-9);
}

/* Forward GEMM FLOPs of the transformer layers over every rank (segment
 * repeats counted; no backward, recomputation or LM head) against the
 * model's linear FLOPs per token x tokens x layers, padding aside: the MLP
 * the model has
 * (a GELU model's one up GEMM, not SwiGLU's gate and up). */
static void check_linear_flops(const zs_schedule *s, const zs_model *m, const zs_batch *b)
{
    double sum = 0, want = 0;
    for (int r = 0; r < s->nranks; r++) {
        const zs_rank_prog *p = &s->ranks[r];
        for (int32_t g = 0; g < p->nsegs; g++)
            for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
                const zs_op *op = &p->ops[i];
                const char *l = s->labels[op->label];
                if (op->kind != ZS_OP_COMPUTE || op->u.compute.ck != ZS_CK_GEMM ||
                    (op->flags & ZS_OPF_RECOMPUTE) || strstr(l, "grad") || strstr(l, "lm-head"))
                    continue;
                sum += 2 * op->u.compute.m * op->u.compute.n * op->u.compute.k * p->segs[g].repeat;
            }
    }
    for (int d = 0; d < b->ndocs; d++)
        want += zs_model_linear_flops_per_token(m) * b->len[d] * m->layers;
    /* Methods that pad compute a few tokens more (under 1% here); the MLP
     * of another kind would be 20-30% off. */
    CU_ASSERT(sum >= want * (1 - 1e-9) && sum <= want * 1.01);
}

static void run_analytic(env *v, const zs_schedule *s)
{
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, v->cost, NULL, &r, &e), &e);
    CU_ASSERT(r->iter_time > 0);
    zs_result_free(r);
}

/* Sets the memory reserve so that one GPU holds about `tokens` tokens;
 * returns the capacity the planners will see. */
static long set_capacity(env *v, long tokens)
{
    zs_mem_cfg mc = v->ctx.mem;
    mc.reserve_gib = 0;
    mc.dp = zs_cluster_gpus(&v->c);
    zs_mem_breakdown mb;
    zs_err e;
    ZS_ASSERT_OK(zs_mem_breakdown_compute(&v->m, &v->c.gpu, &mc, &mb, &e), &e);
    double spare = mb.capacity - mb.static_bytes - (double)tokens * mb.act_per_token;
    v->ctx.mem.reserve_gib = spare / (1024.0 * 1024 * 1024) - 1e-6;
    mc = v->ctx.mem;
    mc.dp = zs_cluster_gpus(&v->c);
    ZS_ASSERT_OK(zs_mem_breakdown_compute(&v->m, &v->c.gpu, &mc, &mb, &e), &e);
    return mb.max_tokens;
}

/* Pieces of a rank for a document in one layout, as "t0-t1,t0-t1". */
static void rank_doc_ranges(const zs_schedule *s, int r, int doc, int layout, char *buf, size_t n)
{
    buf[0] = 0;
    for (int64_t i = 0; i < s->npieces; i++) {
        const zs_piece *p = &s->pieces[i];
        if (p->rank == r && p->doc == doc && p->layout == layout) {
            size_t l = strlen(buf);
            snprintf(buf + l, n - l, "%s%d-%d", l ? "," : "", p->t0, p->t1);
        }
    }
}

static void expect_ranges(const zs_schedule *s, int r, int doc, const char *want)
{
    char got[256];
    for (int layout = 0; layout < 2; layout++) {
        rank_doc_ranges(s, r, doc, layout, got, sizeof got);
        if (strcmp(got, want) != 0)
            fprintf(stderr, "rank %d doc %d layout %d: got \"%s\", want \"%s\"\n", r, doc, layout,
                    got, want);
        CU_ASSERT_STRING_EQUAL(got, want);
    }
}

/* The hand-checked batch: 1000, 4000, 3000 tokens on one node of 8 GPUs
 * with cp=4. The DP split takes 4000 (doc 1) to group 0 (ranks 0-3), then
 * 3000 (doc 2) and 1000 (doc 0) to group 1 (ranks 4-7). */
static const int32_t hand_len[3] = {1000, 4000, 3000};

/* llama-550m: 8 heads, 8 KV heads, head_dim 128, 24 layers, bf16. */
#define KV_TOK   (2.0 * 8 * 128 * 2) /* bytes of K and V per token per layer */
#define Q_TOK    (8.0 * 128 * 2)
#define FLOPS(p) ((double)(p)*4 * 128 * 24) /* pairs x heads -> FLOPs, all layers */

static void test_tecp_hand_checked(void)
{
    env v;
    env_init(&v, "llama-550m", 1);
    env_opts(&v, "cp=4");
    zs_batch *b = zs_batch_from_lengths(hand_len, 3);
    zs_plan_report rep;
    zs_schedule *s = plan_ok(&v, "te-cp", b, &rep);
    ZS_ASSERT_INT_EQ(s->dims.cp, 4);
    ZS_ASSERT_INT_EQ(s->dims.dp, 2);
    /* Zigzag: 2cp = 8 chunks; rank k holds chunks k and 7-k. */
    expect_ranges(s, 0, 1, "0-500,3500-4000");
    expect_ranges(s, 3, 1, "1500-2000,2000-2500");
    expect_ranges(s, 4, 0, "0-125,875-1000");
    expect_ranges(s, 4, 2, "0-375,2625-3000");
    expect_ranges(s, 6, 2, "750-1125,1875-2250");
    expect_ranges(s, 0, 0, "");
    for (int r = 0; r < 8; r++) {
        ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, r, ZS_LAYOUT_ATTN), 1000);
        /* Every rank sends its 1000-token KV shard cp-1 = 3 times per layer
         * forward; backward 3 KV steps and 4 dK/dV steps. */
        bytes_fb by = rank_bytes(s, r, ZS_OP_SEND, "ring");
        ZS_ASSERT_REL(by.fwd / 24, 3 * 1000 * KV_TOK, 1e-12);
        ZS_ASSERT_REL(by.bwd / 24, 7 * 1000 * KV_TOK, 1e-12);
    }
    /* Rank k of a ring over one document of 8 chunks of cs tokens computes
     * (k + 7-k) cs^2 + cs(cs+1) pairs per head: 2,000,500 for cs = 500;
     * group 1: 7*125^2 + 125*126 + 7*375^2 + 375*376 = 1,250,500. */
    ZS_ASSERT_REL(rank_attn_flops(s, &v.m, 0), FLOPS(2000500.0 * 8), 1e-12);
    ZS_ASSERT_REL(rank_attn_flops(s, &v.m, 3), FLOPS(2000500.0 * 8), 1e-12);
    ZS_ASSERT_REL(rank_attn_flops(s, &v.m, 5), FLOPS(1250500.0 * 8), 1e-12);
    check_total_flops(s, &v.m, b);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "cp=4");
    run_analytic(&v, s);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_tecp_padding(void)
{
    env v;
    env_init(&v, "llama-550m", 1);
    env_opts(&v, "cp=8");
    /* 100 tokens over 16 chunks: padded to 112, chunks of 7; the last real
     * token is in chunk 14 (98-100), chunk 15 is all padding. */
    zs_batch *b = zs_batch_from_lengths((int32_t[]){100}, 1);
    zs_plan_report rep;
    zs_schedule *s = plan_ok(&v, "te-cp", b, &rep);
    expect_ranges(s, 0, 0, "0-7");
    expect_ranges(s, 1, 0, "7-14,98-100");
    expect_ranges(s, 7, 0, "49-56,56-63");
    /* Padded shards move: 14 tokens per rank per step. */
    bytes_fb by = rank_bytes(s, 0, ZS_OP_SEND, "ring");
    ZS_ASSERT_REL(by.fwd / 24, 7 * 14 * KV_TOK, 1e-12);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "padding: 12 tokens");
    check_total_flops(s, &v.m, b);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_llamacp_hand_checked(void)
{
    env v;
    env_init(&v, "llama-550m", 1);
    env_opts(&v, "cp=4");
    zs_batch *b = zs_batch_from_lengths(hand_len, 3);
    zs_plan_report rep;
    zs_schedule *s = plan_ok(&v, "llama-cp", b, &rep);
    expect_ranges(s, 0, 1, "0-500,3500-4000");
    expect_ranges(s, 5, 0, "125-250,750-875");
    expect_ranges(s, 5, 2, "375-750,2250-2625");
    for (int r = 0; r < 8; r++) {
        ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, r, ZS_LAYOUT_LINEAR), 1000);
        /* One all-gather of the rank's 1000-token KV per layer forward;
         * backward gathers again and reduce-scatters dK/dV. */
        bytes_fb ag = rank_bytes(s, r, ZS_OP_COLL, "cp-kv-all-gather");
        bytes_fb rs = rank_bytes(s, r, ZS_OP_COLL, "cp-dkv-reduce-scatter");
        ZS_ASSERT_REL(ag.fwd / 24, 1000 * KV_TOK, 1e-12);
        ZS_ASSERT_REL(ag.bwd / 24, 1000 * KV_TOK, 1e-12);
        ZS_ASSERT_REL(rs.bwd / 24, 1000 * KV_TOK, 1e-12);
        ZS_ASSERT_NEAR(rank_bytes(s, r, ZS_OP_SEND, "").fwd, 0, 0);
    }
    /* Query chunk c against keys [0, end of c): c cs^2 + cs(cs+1)/2 pairs;
     * the same totals as the ring. */
    ZS_ASSERT_REL(rank_attn_flops(s, &v.m, 1), FLOPS(2000500.0 * 8), 1e-12);
    ZS_ASSERT_REL(rank_attn_flops(s, &v.m, 7), FLOPS(1250500.0 * 8), 1e-12);
    check_total_flops(s, &v.m, b);
    run_analytic(&v, s);
    zs_schedule_free(s);
    zs_batch_free(b);

    /* Exact chunks: 1003 tokens over 8 chunks are 126,126,126,125,...; the
     * all-gather buffer is the largest shard (rank 0: 126 + 125). */
    env_opts(&v, "cp=4");
    b = zs_batch_from_lengths((int32_t[]){1003}, 1);
    s = plan_ok(&v, "llama-cp", b, &rep);
    expect_ranges(s, 0, 0, "0-126,878-1003");
    expect_ranges(s, 3, 0, "378-503,503-628");
    ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, 3, ZS_LAYOUT_ATTN), 250);
    ZS_ASSERT_REL(rank_bytes(s, 3, ZS_OP_COLL, "cp-kv-all-gather").fwd / 24, 251 * KV_TOK, 1e-12);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_hybriddp_hand_checked(void)
{
    env v;
    env_init(&v, "llama-550m", 1);
    long cap = set_capacity(&v, 2500);
    CU_ASSERT(cap >= 2000 && cap < 3000);
    /* whole_max = the capacity: every document that fits stays whole (the
     * default is the GPU's share of the batch; checked below). */
    char whole[64];
    snprintf(whole, sizeof whole, "cp=4,whole_max=%ld", cap);
    env_opts(&v, whole);
    zs_batch *b = zs_batch_from_lengths(hand_len, 3);
    zs_plan_report rep;
    zs_schedule *s = plan_ok(&v, "hybrid-dp", b, &rep);
    /* 4000 tokens exceed one GPU: ring of 2 (2 x 2000 <= cap) on ranks 0-1
     * (4 chunks of 1000); 3000 likewise on ranks 4-5 (chunks of 750); 1000
     * fits one GPU and goes whole to the least-loaded rank, 6. */
    expect_ranges(s, 0, 1, "0-1000,3000-4000");
    expect_ranges(s, 1, 1, "1000-2000,2000-3000");
    expect_ranges(s, 4, 2, "0-750,2250-3000");
    expect_ranges(s, 6, 0, "0-1000");
    ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, 2, ZS_LAYOUT_ATTN), 0);
    ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, 7, ZS_LAYOUT_LINEAR), 0);
    bytes_fb by = rank_bytes(s, 0, ZS_OP_SEND, "ring");
    ZS_ASSERT_REL(by.fwd / 24, 1 * 2000 * KV_TOK, 1e-12);
    ZS_ASSERT_REL(by.bwd / 24, 3 * 2000 * KV_TOK, 1e-12);
    ZS_ASSERT_REL(rank_bytes(s, 5, ZS_OP_SEND, "ring").fwd / 24, 1500 * KV_TOK, 1e-12);
    ZS_ASSERT_NEAR(rank_bytes(s, 6, ZS_OP_SEND, "").fwd, 0, 0);
    /* Ring of 2, chunks of 1000: 3*1000^2 + 1000*1001 = 4,001,000 pairs;
     * rank 6: the whole triangle of 1000 tokens, 500,500. */
    ZS_ASSERT_REL(rank_attn_flops(s, &v.m, 0), FLOPS(4001000.0 * 8), 1e-12);
    ZS_ASSERT_REL(rank_attn_flops(s, &v.m, 6), FLOPS(500500.0 * 8), 1e-12);
    ZS_ASSERT_NEAR(rank_attn_flops(s, &v.m, 3), 0, 0);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "1 documents local, 2 on 2 rings");
    check_total_flops(s, &v.m, b);
    run_analytic(&v, s);
    zs_schedule_free(s);

    /* whole_max lowers the threshold: 4000 needs a ring of 4 (shares of
     * 1000 <= 1500), 3000 a ring of 2 (1500), 1000 stays whole. */
    env_opts(&v, "cp=4,whole_max=1500");
    s = plan_ok(&v, "hybrid-dp", b, &rep);
    expect_ranges(s, 3, 1, "1500-2000,2000-2500");
    expect_ranges(s, 5, 2, "750-1500,1500-2250");
    expect_ranges(s, 6, 0, "0-1000");
    ZS_ASSERT_REL(rank_bytes(s, 0, ZS_OP_SEND, "ring").fwd / 24, 3 * 1000 * KV_TOK, 1e-12);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "up to 1500 tokens kept whole");
    zs_schedule_free(s);

    /* The default threshold is each GPU's share of the batch: 8000 tokens
     * over 8 GPUs keeps documents of up to 1000 tokens whole. */
    env_opts(&v, "cp=4");
    s = plan_ok(&v, "hybrid-dp", b, &rep);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "up to 1000 tokens kept whole");
    zs_schedule_free(s);
    zs_batch_free(b);

    /* Short documents only: pure data parallelism balanced by FLOPs (LPT),
     * no attention traffic at all. */
    b = zs_batch_from_lengths((int32_t[]){2000, 1000, 1000, 1000, 1000, 500, 500}, 7);
    env_opts(&v, whole);
    s = plan_ok(&v, "hybrid-dp", b, &rep);
    for (int r = 0; r < 8; r++)
        ZS_ASSERT_NEAR(rank_bytes(s, r, ZS_OP_SEND, "ring").fwd, 0, 0);
    /* DP split by tokens, longest first, ties to the lower group: group 0
     * gets docs 0 (2000), 3 (1000), 5 (500); group 1 docs 1, 2, 4, 6.
     * Inside group 0 they go by FLOPs to ranks 0, 1, 2. */
    expect_ranges(s, 0, 0, "0-2000");
    expect_ranges(s, 1, 3, "0-1000");
    expect_ranges(s, 2, 5, "0-500");
    expect_ranges(s, 4, 1, "0-1000");
    expect_ranges(s, 7, 6, "0-500");
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_ulysses_hand_checked(void)
{
    env v;
    env_init(&v, "llama-550m", 1);
    env_opts(&v, "cp=4");
    zs_batch *b = zs_batch_from_lengths(hand_len, 3);
    zs_plan_report rep;
    zs_schedule *s = plan_ok(&v, "ulysses", b, &rep);
    /* Packed contiguous shards of 1000: group 1 packs doc 0 then doc 2. */
    expect_ranges(s, 1, 1, "1000-2000");
    expect_ranges(s, 4, 0, "0-1000");
    expect_ranges(s, 5, 2, "0-1000");
    expect_ranges(s, 7, 2, "2000-3000");
    for (int r = 0; r < 8; r++) {
        /* Q,K,V out (24 heads x 128 x 2 B per token) and O back (8 heads)
         * forward; dO out and dQ,dK,dV back in backward. */
        bytes_fb by = rank_bytes(s, r, ZS_OP_COLL, "a2a");
        ZS_ASSERT_REL(by.fwd / 24, 1000 * (3 * Q_TOK + Q_TOK), 1e-12);
        ZS_ASSERT_REL(by.bwd / 24, 1000 * (3 * Q_TOK + Q_TOK), 1e-12);
    }
    /* Every rank: whole documents with 8/4 = 2 heads. */
    ZS_ASSERT_REL(rank_attn_flops(s, &v.m, 2), FLOPS(8002000.0 * 2), 1e-12);
    ZS_ASSERT_REL(rank_attn_flops(s, &v.m, 6), FLOPS((500500.0 + 4501500.0) * 2), 1e-12);
    check_total_flops(s, &v.m, b);
    run_analytic(&v, s);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static void test_usp_hand_checked(void)
{
    env v;
    env_init(&v, "llama-550m", 1);
    env_opts(&v, "cp=4,ulysses=2");
    zs_batch *b = zs_batch_from_lengths(hand_len, 3);
    zs_plan_report rep;
    zs_schedule *s = plan_ok(&v, "usp", b, &rep);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "ulysses=2 x ring=2");
    /* Ring of 2 over Ulysses groups {0,1} and {2,3}: doc 1 in 4 chunks of
     * 1000; group 0 holds chunks 0 and 3, each halved between ranks 0, 1. */
    expect_ranges(s, 0, 1, "0-500,3000-3500");
    expect_ranges(s, 1, 1, "500-1000,3500-4000");
    expect_ranges(s, 3, 1, "1500-2000,2500-3000");
    for (int r = 0; r < 4; r++) {
        /* Ring j moves the 2000-token shard with 8/2 = 4 KV heads, 1 step. */
        bytes_fb ring = rank_bytes(s, r, ZS_OP_SEND, "usp-ring");
        ZS_ASSERT_REL(ring.fwd / 24, 2000 * KV_TOK / 2, 1e-12);
        ZS_ASSERT_REL(ring.bwd / 24, 3 * 2000 * KV_TOK / 2, 1e-12);
        bytes_fb a = rank_bytes(s, r, ZS_OP_COLL, "usp-a2a");
        ZS_ASSERT_REL(a.fwd / 24, 1000 * 4 * Q_TOK, 1e-12);
        /* Ring of 2, chunks of 1000, 4 heads: 4,001,000 x 4. */
        ZS_ASSERT_REL(rank_attn_flops(s, &v.m, r), FLOPS(4001000.0 * 4), 1e-12);
    }
    check_total_flops(s, &v.m, b);
    run_analytic(&v, s);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* ---- properties over random batches ---------------------------------------------- */

static const char *const methods[] = {"te-cp", "llama-cp", "hybrid-dp", "ulysses", "usp", NULL};

/* Documents of the CP group of rank r (any piece on a rank of the group). */
static int group_docs(const zs_schedule *s, int r, int *mark)
{
    int cpn = s->dims.cp * s->dims.tp, g = r / cpn, n = 0;
    memset(mark, 0, sizeof(int) * (size_t)s->ndocs);
    for (int64_t i = 0; i < s->npieces; i++)
        if (s->pieces[i].rank / cpn == g && !mark[s->pieces[i].doc]) {
            mark[s->pieces[i].doc] = 1;
            n++;
        }
    return n;
}

static int64_t pad2(int32_t len, int g)
{
    return 2 * (((int64_t)len + 2 * g - 1) / (2 * g));
}

/* The communication formulas of docs/methods.md, per rank per layer. */
static void check_bytes(const char *method, const zs_schedule *s, const zs_model *m,
                        const zs_plan_report *rep)
{
    int cp = s->dims.cp, L = m->layers;
    int *mark = calloc((size_t)s->ndocs, sizeof(int));
    double kvt = KV_TOK, tq = Q_TOK;
    int u = 1;
    const char *us = strstr(rep->notes, "ulysses=");
    if (us)
        u = atoi(us + 8);
    for (int r = 0; r < s->nranks; r++) {
        if (!group_docs(s, r, mark))
            continue;
        int first = r - r % cp;
        if (!strcmp(method, "te-cp")) {
            double shard = 0;
            for (int d = 0; d < s->ndocs; d++)
                shard += mark[d] ? (double)pad2(s->doc_len[d], cp) : 0;
            bytes_fb by = rank_bytes(s, r, ZS_OP_SEND, "ring");
            ZS_ASSERT_REL(by.fwd / L, (cp - 1) * shard * kvt, 1e-9);
            ZS_ASSERT_REL(by.bwd / L, (2 * cp - 1) * shard * kvt, 1e-9);
        } else if (!strcmp(method, "llama-cp") || !strcmp(method, "ulysses")) {
            int64_t most = 0;
            for (int k = first; k < first + cp; k++)
                if (zs_test_piece_tokens(s, k, ZS_LAYOUT_LINEAR) > most)
                    most = zs_test_piece_tokens(s, k, ZS_LAYOUT_LINEAR);
            if (!strcmp(method, "llama-cp")) {
                bytes_fb ag = rank_bytes(s, r, ZS_OP_COLL, "cp-kv-all-gather");
                ZS_ASSERT_REL(ag.fwd / L, most * kvt, 1e-9);
                ZS_ASSERT_REL(ag.bwd / L, most * kvt, 1e-9);
            } else {
                bytes_fb a = rank_bytes(s, r, ZS_OP_COLL, "a2a");
                ZS_ASSERT_REL(a.fwd / L, most * 4 * tq, 1e-9);
            }
        } else if (!strcmp(method, "usp")) {
            int rr = cp / u;
            double shard = 0, lin = 0;
            for (int d = 0; d < s->ndocs; d++)
                if (mark[d]) {
                    shard += (double)pad2(s->doc_len[d], rr);
                    lin += (double)pad2(s->doc_len[d], cp);
                }
            bytes_fb ring = rank_bytes(s, r, ZS_OP_SEND, "usp-ring");
            ZS_ASSERT_REL(ring.fwd / L, (rr - 1) * shard * kvt / u, 1e-9);
            bytes_fb a = rank_bytes(s, r, ZS_OP_COLL, "usp-a2a");
            ZS_ASSERT_REL(a.fwd / L, u > 1 ? lin * 4 * tq : 0, 1e-9);
        }
    }
    free(mark);
}

static void test_random_batches(void)
{
    env v;
    env_init(&v, "llama-550m", 2);
    static const char *const opts[] = {"cp=4", "cp=8", "cp=16", "cp=16,ulysses=4", "cp=2", NULL};
    for (int mi = 0; methods[mi]; mi++)
        for (uint64_t seed = 1; seed <= 10; seed++) {
            const char *o = opts[seed % 5];
            if (strstr(o, "ulysses") && strcmp(methods[mi], "usp") != 0)
                o = "cp=16";
            if (!strcmp(methods[mi], "ulysses") && !strcmp(o, "cp=16"))
                o = "cp=8"; /* 8 KV heads */
            env_opts(&v, o);
            zs_batch *b = random_batch(seed, 8 + (int)(seed * 5 % 40), 100000);
            zs_plan_report rep;
            zs_schedule *s = plan_ok(&v, methods[mi], b, &rep);
            check_total_flops(s, &v.m, b);
            check_bytes(methods[mi], s, &v.m, &rep);
            CU_ASSERT(rep.attn_imbalance >= 1.0);
            if (seed == 1)
                run_analytic(&v, s);
            zs_schedule_free(s);
            zs_batch_free(b);
        }
    zs_cost_free(v.cost);
}

/* Hybrid DP invariants: documents that fit one GPU stay whole on one GPU,
 * longer ones are on power-of-two rings, no GPU exceeds its capacity. */
static void test_hybriddp_properties(void)
{
    env v;
    env_init(&v, "llama-550m", 2);
    long cap = set_capacity(&v, 6000);
    int rings = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        char o[64];
        snprintf(o, sizeof o, "cp=%d,whole_max=%ld", seed % 2 ? 8 : 16, cap);
        env_opts(&v, o);
        zs_batch *b = random_batch(seed + 50, 6 + (int)(seed % 10), 40000);
        zs_plan_report rep;
        zs_schedule *s = plan_ok(&v, "hybrid-dp", b, &rep);
        check_total_flops(s, &v.m, b);
        for (int d = 0; d < b->ndocs; d++) {
            int holders = 0, last = -1;
            for (int64_t i = 0; i < s->npieces; i++)
                if (s->pieces[i].doc == d && s->pieces[i].layout == ZS_LAYOUT_ATTN &&
                    s->pieces[i].rank != last) {
                    last = s->pieces[i].rank;
                    holders++;
                }
            if (b->len[d] <= cap) {
                ZS_ASSERT_INT_EQ(holders, 1);
            } else {
                CU_ASSERT(holders >= 2 && (holders & (holders - 1)) == 0);
                rings++;
            }
        }
        for (int r = 0; r < s->nranks; r++)
            CU_ASSERT(zs_test_piece_tokens(s, r, ZS_LAYOUT_ATTN) <= cap);
        zs_schedule_free(s);
        zs_batch_free(b);
    }
    CU_ASSERT(rings > 5); /* the batches do exercise the ring path */
    zs_cost_free(v.cost);
}

/* Same inputs, same schedule, byte for byte. */
static void test_deterministic(void)
{
    env v;
    env_init(&v, "llama-550m", 2);
    zs_batch *b = random_batch(7, 30, 50000);
    for (int mi = 0; methods[mi]; mi++) {
        char *buf[2] = {NULL, NULL};
        size_t len[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            env_opts(&v, "cp=8");
            zs_plan_report rep;
            zs_schedule *s = plan_ok(&v, methods[mi], b, &rep);
            FILE *f = open_memstream(&buf[k], &len[k]);
            zs_err e;
            ZS_ASSERT_OK(zs_schedule_dump(s, f, &e), &e);
            fclose(f);
            zs_schedule_free(s);
        }
        ZS_ASSERT_INT_EQ(len[0], len[1]);
        CU_ASSERT(len[0] == len[1] && memcmp(buf[0], buf[1], len[0]) == 0);
        free(buf[0]);
        free(buf[1]);
    }
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* Tensor parallelism and recomputation combine with every baseline. */
static void test_tp_and_recompute(void)
{
    env v;
    env_init(&v, "llama-3b", 2);
    v.ctx.mem.recompute = ZS_RECOMPUTE_FULL;
    zs_batch *b = random_batch(11, 20, 60000);
    for (int mi = 0; methods[mi]; mi++) {
        env_opts(&v, "tp=2,cp=4");
        zs_plan_report rep;
        zs_schedule *s = plan_ok(&v, methods[mi], b, &rep);
        ZS_ASSERT_INT_EQ(s->dims.tp, 2);
        ZS_ASSERT_INT_EQ(s->dims.dp, 2);
        check_total_flops(s, &v.m, b);
        check_linear_flops(s, &v.m, b);
        run_analytic(&v, s);
        zs_schedule_free(s);
    }
    zs_batch_free(b);
    zs_cost_free(v.cost);
    /* A GELU model (FFN 4h, one up GEMM). */
    env_init(&v, "gpt-dcp-bench", 2);
    b = random_batch(12, 20, 30000);
    for (int mi = 0; methods[mi]; mi++) {
        env_opts(&v, "tp=2,cp=4");
        zs_plan_report rep;
        zs_schedule *s = plan_ok(&v, methods[mi], b, &rep);
        check_linear_flops(s, &v.m, b);
        run_analytic(&v, s);
        zs_schedule_free(s);
    }
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* Sum over a rank's ops labelled `lab` (segment repeats counted) of what
 * `what` picks: 0 count, 1 duration, 2 collective bytes. */
static double label_sum(const zs_schedule *s, int r, const char *lab, int what)
{
    const zs_rank_prog *p = &s->ranks[r];
    double sum = 0;
    for (int32_t g = 0; g < p->nsegs; g++)
        for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
            const zs_op *op = &p->ops[i];
            if (strcmp(s->labels[op->label], lab) != 0)
                continue;
            double x = what == 0 ? 1 : what == 1 ? op->duration : op->u.coll.bytes;
            sum += x * p->segs[g].repeat;
        }
    return sum;
}

/* FP8 (zs_cost_set_fp8) on one DGX-H100 node, te-cp tp=2 x cp=4, no
 * recomputation: the layers' linear GEMMs on the FP8 curve (the LM head
 * stays bf16), one cast before each (forward: activation and weight;
 * backward: the output gradient), one amax update per layer, the
 * sequence-parallel gathers in FP8 (half the bf16 bytes), and a shorter
 * iteration; with current scaling (2) an amax pass instead, a little
 * slower. Without it nothing of the kind. An A800 has no FP8. */
static void test_fp8(void)
{
    env v;
    zs_err e;
    ZS_ASSERT_OK(zs_model_load("llama-3b", &v.m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("dgx-h100", 1, &v.c, &e), &e);
    v.cost = zs_cost_analytic_new(&v.m, &v.c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v.cost);
    zs_opts_init(&v.opts);
    v.ctx = (zs_plan_ctx){&v.m, &v.c, v.cost, zs_mem_cfg_default(), &v.opts, 1};
    v.ctx.mem.recompute = ZS_RECOMPUTE_NONE;
    zs_batch *b = random_batch(5, 12, 20000);
    double t[3], ag[3];
    for (int f8 = 0; f8 < 3; f8++) {
        ZS_ASSERT_OK(zs_cost_set_fp8(v.cost, f8, &e), &e);
        env_opts(&v, "tp=2,cp=4");
        zs_plan_report rep;
        zs_schedule *s = plan_ok(&v, "te-cp", b, &rep);
        double L = v.m.layers;
        /* delayed scaling's history update, or current scaling's amax pass,
         * scale kernel and (for a gathered tensor) TP amax all-reduce
         * before each cast */
        ZS_ASSERT_NEAR(label_sum(s, 0, "amax-scale", 0), f8 == 1 ? L : 0, 1e-9);
        ZS_ASSERT_NEAR(label_sum(s, 0, "amax-qkv", 0), f8 == 2 ? L : 0, 1e-9);
        ZS_ASSERT_NEAR(label_sum(s, 0, "scale-qkv", 0), f8 == 2 ? L : 0, 1e-9);
        ZS_ASSERT_NEAR(label_sum(s, 0, "tp-ar-amax-qkv", 0), f8 == 2 ? L : 0, 1e-9);
        ZS_ASSERT_NEAR(label_sum(s, 0, "tp-ar-amax-o-proj", 0), 0, 1e-9);
        ZS_ASSERT_NEAR(label_sum(s, 0, "tp-ar-amax-do-proj", 0), f8 == 2 ? L : 0, 1e-9);
        ZS_ASSERT_NEAR(label_sum(s, 0, "amax-dqkv", 0), f8 == 2 ? L : 0, 1e-9);
        ZS_ASSERT_NEAR(label_sum(s, 0, "cast-qkv", 0), f8 ? L : 0, 1e-9);
        ZS_ASSERT_NEAR(label_sum(s, 0, "cast-mlp-down", 0), f8 ? L : 0, 1e-9);
        ZS_ASSERT_NEAR(label_sum(s, 0, "cast-dqkv", 0), f8 ? L : 0, 1e-9);
        ag[f8] = label_sum(s, 0, "tp-ag-attn", 2);
        /* every qkv GEMM priced on the curve of its precision */
        const zs_rank_prog *p = &s->ranks[0];
        for (int64_t i = 0; i < p->nops; i++) {
            const zs_op *op = &p->ops[i];
            const char *l = s->labels[op->label];
            if (strcmp(l, "qkv") && strcmp(l, "lm-head"))
                continue;
            int in8 = f8 && !strcmp(l, "qkv");
            double m = op->u.compute.m, n = op->u.compute.n, k = op->u.compute.k;
            double want =
                in8 ? zs_cost_gemm_fp8(v.cost, m, n, k, 0) : zs_cost_gemm(v.cost, m, n, k);
            ZS_ASSERT_REL(op->duration, want, 1e-12);
        }
        zs_result *r = NULL;
        ZS_ASSERT_OK(zs_analytic_run(s, v.cost, NULL, &r, &e), &e);
        t[f8] = r->iter_time;
        zs_result_free(r);
        zs_schedule_free(s);
    }
    ZS_ASSERT_REL(ag[1], ag[0] / v.m.dtype_bytes, 1e-12);
    ZS_ASSERT_REL(ag[2], ag[1], 1e-12);
    CU_ASSERT(t[1] < t[0]);
    CU_ASSERT(t[1] < t[2] && t[2] < t[0]);
    zs_batch_free(b);
    zs_cost_free(v.cost);
    env_init(&v, "llama-3b", 1); /* cluster-a: A800 */
    ZS_ASSERT_INT_EQ(zs_cost_set_fp8(v.cost, 1, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.what, "no FP8 tensor cores");
    CU_ASSERT(!v.cost->fp8);
    zs_cost_free(v.cost);
}

/* ---- errors --------------------------------------------------------------------- */

static void expect_error(env *v, const char *method, const char *opts, const zs_batch *b,
                         const char *where, const char *what)
{
    env_opts(v, opts);
    zs_schedule *s = NULL;
    zs_plan_report rep;
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_plan_batch(zs_planner_find(method), &v->ctx, b, 1, &s, &rep, &e);
    ZS_ASSERT_INT_EQ(rc, ZS_EINPUT);
    CU_ASSERT_PTR_NULL(s);
    ZS_ASSERT_STR_CONTAINS(e.where, where);
    ZS_ASSERT_STR_CONTAINS(e.what, what);
    CU_ASSERT(e.fix[0] != 0);
}

static void test_errors(void)
{
    env v;
    env_init(&v, "llama3-8b", 2);
    zs_batch *b = zs_batch_from_lengths((int32_t[]){1000, 2000}, 2);
    for (int mi = 0; methods[mi]; mi++)
        expect_error(&v, methods[mi], "cp=3", b, "cp", "does not divide");
    /* llama3-8b has 8 KV heads. */
    expect_error(&v, "ulysses", "cp=16", b, "cp", "8 KV heads");
    expect_error(&v, "usp", "cp=16,ulysses=16", b, "ulysses", "8 KV heads");
    expect_error(&v, "usp", "cp=8,ulysses=3", b, "ulysses", "does not divide");
    zs_batch_free(b);
    /* A document longer than a CP group can hold. */
    b = zs_batch_from_lengths((int32_t[]){1000, 2000000}, 2);
    for (int mi = 0; methods[mi]; mi++)
        expect_error(&v, methods[mi], "cp=8", b, "document 1", "tokens");
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case hand[] = {{"tecp_hand_checked", test_tecp_hand_checked},
                                        {"tecp_padding", test_tecp_padding},
                                        {"llamacp_hand_checked", test_llamacp_hand_checked},
                                        {"hybriddp_hand_checked", test_hybriddp_hand_checked},
                                        {"ulysses_hand_checked", test_ulysses_hand_checked},
                                        {"usp_hand_checked", test_usp_hand_checked},
                                        {NULL, NULL}};
    static const zs_test_case props[] = {{"random_batches", test_random_batches},
                                         {"hybriddp_properties", test_hybriddp_properties},
                                         {"deterministic", test_deterministic},
                                         {"tp_and_recompute", test_tp_and_recompute},
                                         {"fp8", test_fp8},
                                         {"errors", test_errors},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {
        {"hand-checked", hand}, {"properties", props}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
