/* Tests of the 4D planners plain-4d, fixed-4d and wlb-llm: a hand-checked
 * case (8 ranks: cp=2, pp=2, dp=2; 3 documents) with exact token placement,
 * ring bytes per rank per layer and attention FLOPs per rank; per-document
 * chunking without padding; property tests over random batches (the
 * validator passes, attention FLOPs equal the sum over documents, ring
 * bytes match the formula); a batch packed upstream keeps its packing;
 * clear errors for bad options and documents; every schedule runs through
 * the analytic backend; the report's tokens alive at once under 1F1B (pp
 * consecutive micro-batches on the first stage) and without pipelining. */
#include <stdlib.h>
#include <string.h>

#include "zs_analytic.h"
#include "zs_iteration.h"
#include "zs_planner.h"
#include "zs_test.h"
#include "zs_test_env.h"
#include "zs_validate.h"
#include "zs_pack.h"
#include "zs_plan4d.h"
#include "zs_trace_src.h"

typedef zs_test_env env;

static void env_init(env *v, const char *model, int nodes, const char *opts)
{
    zs_test_env_init(v, model, nodes, opts);
}

static void env_opts(env *v, const char *opts)
{
    zs_err e;
    zs_opts_init(&v->opts);
    ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, &e), &e);
}

static zs_schedule *plan(env *v, const char *method, const zs_batch *b, zs_plan_report *rep)
{
    zs_schedule *s = NULL;
    zs_err e;
    const zs_planner_ops *p = zs_planner_find(method);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    ZS_ASSERT_OK(zs_plan_batch(p, &v->ctx, b, 1, &s, rep, &e), &e);
    return s;
}

/* Attention pairs x heads over forward ops (recomputation excluded), with
 * segment repeats: FLOPs / (4 x head_dim). */
static double attn_pairs_heads(const zs_schedule *s, int r)
{
    return zs_schedule_attn_work(s, r);
}

/* Bytes a rank sends on the CP ring over the iteration. */
static double ring_bytes(const zs_schedule *s, int r)
{
    const zs_rank_prog *p = &s->ranks[r];
    double by = 0;
    for (int32_t g = 0; g < p->nsegs; g++)
        for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++) {
            const zs_op *op = &p->ops[i];
            if (op->kind == ZS_OP_SEND && strncmp(s->labels[op->label], "cp-", 3) == 0)
                by += op->u.p2p.bytes * p->segs[g].repeat;
        }
    return by;
}

static int has_piece(const zs_schedule *s, int rank, int doc, int t0, int t1)
{
    for (int64_t i = 0; i < s->npieces; i++)
        if (s->pieces[i].rank == rank && s->pieces[i].doc == doc && s->pieces[i].t0 == t0 &&
            s->pieces[i].t1 == t1 && s->pieces[i].layout == ZS_LAYOUT_ATTN)
            return 1;
    return 0;
}

static void run_analytic(env *v, const zs_schedule *s)
{
    zs_result *r = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_analytic_run(s, v->cost, NULL, &r, &e), &e);
    CU_ASSERT(r->iter_time > 0);
    zs_result_free(r);
}

/* Plain-4d, 8 GPUs as cp=2 x pp=2 x dp=2, window 100, documents 60, 30, 50:
 * loader order makes sequences {60, 30} (DP rank 0) and {50} (DP rank 1).
 * Per-sequence sharding of {60, 30}: 90 tokens padded to 92, chunks of 23:
 * slot 0 holds [0,23) and [69,92) = doc 0 [0,23), doc 1 [9,30); slot 1
 * holds [23,69) = doc 0 [23,60), doc 1 [0,9). Of {50}: chunks of 13, slot
 * 0 [0,13) + [39,50), slot 1 [13,39). Ranks of stage 0: slots 0,1 -> 0,1
 * and 2,3 -> 4,5. Causal pairs: slot 0: 276 + 420, slot 1: 1554 + 45;
 * second sequence 91 + 495 and 689. */
static void test_plain_hand_checked(void)
{
    env v;
    env_init(&v, "llama-550m", 1, "tp=1,cp=2,pp=2,window=100");
    zs_batch *b = zs_batch_from_lengths((int32_t[]){60, 30, 50}, 3);
    zs_plan_report rep;
    zs_schedule *s = plan(&v, "plain-4d", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_INT_EQ(s->dims.cp, 2);
    ZS_ASSERT_INT_EQ(s->dims.pp, 2);
    ZS_ASSERT_INT_EQ(s->dims.dp, 2);
    ZS_ASSERT_INT_EQ(s->micro_batches, 1);
    CU_ASSERT(has_piece(s, 0, 0, 0, 23));
    CU_ASSERT(has_piece(s, 0, 1, 9, 30));
    CU_ASSERT(has_piece(s, 1, 0, 23, 46));
    CU_ASSERT(has_piece(s, 1, 0, 46, 60));
    CU_ASSERT(has_piece(s, 1, 1, 0, 9));
    CU_ASSERT(has_piece(s, 4, 2, 0, 13));
    CU_ASSERT(has_piece(s, 4, 2, 39, 50));
    CU_ASSERT(has_piece(s, 5, 2, 13, 26));
    CU_ASSERT(has_piece(s, 5, 2, 26, 39));
    ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, 0, ZS_LAYOUT_LINEAR), 44);
    ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, 1, ZS_LAYOUT_LINEAR), 46);
    ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, 4, ZS_LAYOUT_LINEAR), 24);
    ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, 5, ZS_LAYOUT_LINEAR), 26);
    /* Attention FLOPs per rank = pairs x 4 x heads x head_dim x layers of
     * the stage (stage 0: ranks 0,1,4,5; stage 1: 2,3,6,7; 12 layers each). */
    double pairs[8] = {696, 1599, 696, 1599, 586, 689, 586, 689};
    for (int r = 0; r < 8; r++)
        ZS_ASSERT_NEAR(attn_pairs_heads(s, r), pairs[r] * v.m.heads * zs_stage_layers(s, r / 2 % 2),
                       1e-6);
    /* Ring bytes per rank per layer: forward one KV step, backward one KV
     * step and two dK/dV steps, each moving the padded shard (2 chunks) of
     * K and V: 46 (or 26) tokens x 2 x kv_heads x head_dim x 2 bytes. */
    double tok_b = 2.0 * v.m.kv_heads * v.m.head_dim * v.m.dtype_bytes;
    for (int r = 0; r < 8; r++) {
        double want = 4 * (r < 4 ? 46 : 26) * tok_b;
        ZS_ASSERT_NEAR(ring_bytes(s, r) / zs_stage_layers(s, r / 2 % 2), want, 1e-6);
    }
    ZS_ASSERT_STR_CONTAINS(rep.notes, "per-document in 0 of 2");
    run_analytic(&v, s);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* Per-document chunks without padding: 10 tokens over 4 chunks are
 * 3, 3, 2, 2 (the remainder to the first chunks); slot 0 holds chunks 0
 * and 3, slot 1 chunks 1 and 2. Bytes follow the real shard sizes. */
static void test_wlb_per_document(void)
{
    env v;
    env_init(&v, "llama-550m", 1, "tp=1,cp=2,pp=2,window=100,sharding=doc,micro=1");
    zs_batch *b = zs_batch_from_lengths((int32_t[]){10, 7}, 2);
    zs_plan_report rep;
    zs_schedule *s = plan(&v, "wlb-llm", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    /* Two micro-batches (micro=1 x dp=2): 10 -> DP rank 0, 7 -> DP rank 1. */
    CU_ASSERT(has_piece(s, 0, 0, 0, 3));
    CU_ASSERT(has_piece(s, 0, 0, 8, 10));
    CU_ASSERT(has_piece(s, 1, 0, 3, 6));
    CU_ASSERT(has_piece(s, 1, 0, 6, 8));
    /* 7 tokens: 2, 2, 2, 1. */
    CU_ASSERT(has_piece(s, 4, 1, 0, 2));
    CU_ASSERT(has_piece(s, 4, 1, 6, 7));
    CU_ASSERT(has_piece(s, 5, 1, 2, 4));
    CU_ASSERT(has_piece(s, 5, 1, 4, 6));
    double tok_b = 2.0 * v.m.kv_heads * v.m.head_dim * v.m.dtype_bytes;
    /* Slot 0 sends its own 5 tokens forward, 5 + 5 + 5 backward (its KV,
     * then the dK/dV of its shard and of slot 1's, both 5). For 7 tokens:
     * slot 0 holds 3, slot 1 holds 4: 3 + (3 + 3 + 4). */
    ZS_ASSERT_NEAR(ring_bytes(s, 0) / zs_stage_layers(s, 0), 20 * tok_b, 1e-6);
    ZS_ASSERT_NEAR(ring_bytes(s, 4) / zs_stage_layers(s, 0), 13 * tok_b, 1e-6);
    ZS_ASSERT_NEAR(ring_bytes(s, 5) / zs_stage_layers(s, 0), 15 * tok_b, 1e-6);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "per-document in 2 of 2");
    run_analytic(&v, s);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

static zs_batch *random_batch(uint64_t seed, int ndocs, int maxlen)
{
    zs_batch *b = zs_batch_new(ndocs);
    uint64_t x = seed * 2654435761ULL + 1;
    for (int i = 0; i < ndocs; i++) {
        /* Mostly short documents, a few long ones. */
        uint64_t r = zs_test_rng(&x);
        int32_t len = r % 8 == 0 ? 1 + (int32_t)(zs_test_rng(&x) % (uint64_t)maxlen)
                                 : 1 + (int32_t)(zs_test_rng(&x) % (uint64_t)(maxlen / 16));
        zs_batch_push(b, len, i);
    }
    return b;
}

static void test_random_batches(void)
{
    env v;
    env_init(&v, "llama-550m", 2, "");
    const char *methods[] = {"plain-4d", "fixed-4d", "wlb-llm"};
    for (uint64_t seed = 1; seed <= 6; seed++) {
        zs_batch *b = random_batch(seed, 20 + (int)(seed * 7 % 30), 16384);
        double want = 0;
        for (int d = 0; d < b->ndocs; d++)
            want += (double)b->len[d] * (b->len[d] + 1) / 2;
        for (int mi = 0; mi < 3; mi++) {
            /* pp=1 here: see pipelined_micro_batches. */
            const char *opts = seed % 2 ? "tp=2,cp=2,pp=1,window=16384"
                                        : "tp=1,cp=4,pp=1,window=16384,sharding=doc";
            if (mi < 2 && seed % 2 == 0)
                opts = "tp=1,cp=4,pp=1,window=16384";
            env_opts(&v, opts);
            zs_plan_report rep;
            zs_schedule *s = plan(&v, methods[mi], b, &rep);
            CU_ASSERT_PTR_NOT_NULL_FATAL(s);
            double got = 0, bytes = 0;
            for (int r = 0; r < s->nranks; r++) {
                got += attn_pairs_heads(s, r);
                bytes += ring_bytes(s, r);
            }
            /* Every causal pair once per head per layer. */
            ZS_ASSERT_REL(got, want * v.m.heads * v.m.layers, 1e-12);
            /* Per-document sharding moves each token's K and V (g - 1)
             * times forward and (2g - 1) times backward, per layer. */
            if (mi == 2 && seed % 2 == 0) {
                int g = s->dims.cp;
                double tok_b = 2.0 * v.m.kv_heads * v.m.head_dim * v.m.dtype_bytes;
                ZS_ASSERT_REL(bytes, (double)b->tokens * (3 * g - 2) * tok_b * v.m.layers, 1e-12);
            }
            run_analytic(&v, s);
            zs_schedule_free(s);
        }
        zs_batch_free(b);
    }
    zs_cost_free(v.cost);
}

/* A batch packed upstream (fixed-length repacking over two batches, or
 * WLB-LLM's packer) keeps its micro-batches. */
static void test_packed_batch(void)
{
    env v;
    env_init(&v, "llama-550m", 1, "tp=2,cp=2,pp=1,window=4096,repack_window=2");
    zs_err e;
    zs_batch *in[2] = {random_batch(7, 12, 4096), random_batch(8, 12, 4096)};
    zs_batch *out[2];
    ZS_ASSERT_OK(zs_pack_fixed_window(in, 2, 4096, 2, (zs_pack_cost){NULL, NULL}, out, &e), &e);
    for (int i = 0; i < 2; i++) {
        zs_plan_report rep;
        env_opts(&v, "tp=2,cp=2,pp=1,window=4096,repack_window=2");
        zs_schedule *s = plan(&v, "fixed-4d", out[i], &rep);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        ZS_ASSERT_STR_CONTAINS(rep.notes, "fixed-length greedy repacking over 2 batch(es)");
        for (int64_t p = 0; p < s->npieces; p++)
            ZS_ASSERT_INT_EQ(s->pieces[p].micro,
                             out[i]->micro_of[s->pieces[p].doc] % s->micro_batches);
        zs_schedule_free(s);
    }
    /* Unpacked, repack_window > 1 is an error that says where it belongs. */
    env_opts(&v, "tp=2,cp=2,pp=1,window=4096,repack_window=2");
    zs_schedule *s = NULL;
    zs_plan_report rep;
    ZS_ASSERT_INT_EQ(zs_plan_batch(zs_planner_find("fixed-4d"), &v.ctx, in[0], 1, &s, &rep, &e),
                     ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "zs_pack_fixed_window");
    for (int i = 0; i < 2; i++) {
        zs_batch_free(in[i]);
        zs_batch_free(out[i]);
    }
    zs_cost_free(v.cost);
}

static void expect_error_code(env *v, const char *method, const char *opts, const zs_batch *b,
                              const char *needle, int code)
{
    env_opts(v, opts);
    zs_schedule *s = NULL;
    zs_plan_report rep;
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_plan_batch(zs_planner_find(method), &v->ctx, b, 1, &s, &rep, &e);
    ZS_ASSERT_INT_EQ(rc, code);
    CU_ASSERT_PTR_NULL(s);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s | %s | %s", e.what, e.where, e.fix);
    ZS_ASSERT_STR_CONTAINS(msg, needle);
}

static void expect_error(env *v, const char *method, const char *opts, const zs_batch *b,
                         const char *needle)
{
    expect_error_code(v, method, opts, b, needle, ZS_EINPUT);
}

static void test_errors(void)
{
    env v;
    env_init(&v, "llama-550m", 1, "");
    zs_batch *b = zs_batch_from_lengths((int32_t[]){100, 5000, 30}, 3);
    expect_error(&v, "plain-4d", "tp=1,cp=2,pp=2,window=4096", b, "document 1");
    expect_error(&v, "fixed-4d", "tp=1,cp=3,pp=2", b, "divide");
    expect_error_code(&v, "wlb-llm", "tp=1,cp=2,pp=2,sharding=zigzag", b, "sharding", ZS_EUSAGE);
    expect_error(&v, "wlb-llm", "tp=1,cp=2,pp=2,window=4096,smax=4096", b, "smax");
    expect_error(&v, "plain-4d", "tp=1,cp=2,pp=2,window=5000,micro=1", b, "micro");
    expect_error_code(&v, "plain-4d", "tp=1,cp=2,pp=2,bogus=1", b, "bogus", ZS_EUSAGE);
    zs_batch_free(b);
    /* A micro-batch larger than the CP group's memory names it. */
    zs_batch *big = zs_batch_from_lengths((int32_t[]){2000000}, 1);
    expect_error(&v, "plain-4d", "tp=1,cp=2,pp=2,window=4000000", big, "micro-batch 0");
    zs_batch_free(big);
    zs_cost_free(v.cost);
}

/* The tokens of each global batch a method's batcher brings, sorted by
 * length, into len (up to cap) and *n; returns the batch count. */
static int batcher_pieces(env *v, const char *method, const char *opts, const int32_t *docs,
                          int ndocs, int32_t (*len)[64], int *n, int64_t *tokens)
{
    zs_err e;
    zs_trace *t = zs_trace_new("test");
    for (int i = 0; i < ndocs; i++)
        zs_trace_push(t, docs[i], NULL);
    zs_trace_src *src = zs_trace_src_from_trace(t);
    env_opts(v, opts);
    zs_batch_shape shape = {0};
    zs_batcher *bt = NULL;
    const zs_planner_ops *p = zs_planner_find(method);
    ZS_ASSERT_OK(p->batcher(&v->ctx, zs_trace_src_stream(src), &shape, &bt, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bt);
    int nb = 0;
    zs_batch *b = NULL;
    while (zs_batcher_next(bt, &b, &e) == ZS_OK && b && nb < 8) {
        n[nb] = b->ndocs < 64 ? b->ndocs : 64;
        tokens[nb] = b->tokens;
        for (int i = 0; i < n[nb]; i++)
            len[nb][i] = b->len[i];
        for (int i = 1; i < n[nb]; i++) /* insertion sort */
            for (int j = i; j > 0 && len[nb][j] < len[nb][j - 1]; j--) {
                int32_t x = len[nb][j];
                len[nb][j] = len[nb][j - 1];
                len[nb][j - 1] = x;
            }
        zs_batch_free(b);
        nb++;
    }
    zs_batcher_free(bt);
    zs_trace_src_free(src);
    return nb;
}

/* With loader=cut WLB-LLM packs the pieces the baselines' concatenate-and-
 * cut loader makes: without outlier queues its global batches hold exactly Plain-4D's pieces.
 * Window 100, 8 GPUs as cp=2 x pp=2 x dp=2: 4 windows a batch. The stream
 * cut every 100 tokens: 30 20 50 | 100 | 100 | 20 40 40 || 20 10 70 | 20 80
 * | 30 70 (150 -> 50 + 100, 120 -> 100 + 20, 60 -> 40 + 20, 90 -> 70 + 20). */
static void test_same_pieces_as_plain(void)
{
    env v;
    env_init(&v, "llama-550m", 1, "");
    static const int32_t docs[] = {30, 20, 150, 120, 40, 60, 10, 90, 80, 30, 70};
    int32_t lp[8][64], lw[8][64];
    int np[8], nw[8];
    int64_t tp[8], tw[8];
    int bp = batcher_pieces(&v, "plain-4d", "tp=1,cp=2,pp=2,window=100", docs, 11, lp, np, tp);
    int bw = batcher_pieces(&v, "wlb-llm", "tp=1,cp=2,pp=2,window=100,queues=0,warmup=0,loader=cut",
                            docs, 11, lw, nw, tw);
    ZS_ASSERT_INT_EQ(bp, 2);
    ZS_ASSERT_INT_EQ(bw, bp);
    for (int k = 0; k < bp && k < bw; k++) {
        ZS_ASSERT_INT_EQ(tw[k], tp[k]);
        ZS_ASSERT_INT_EQ(nw[k], np[k]);
        for (int i = 0; i < np[k] && i < nw[k]; i++)
            ZS_ASSERT_INT_EQ(lw[k][i], lp[k][i]);
    }
    ZS_ASSERT_INT_EQ(tp[0], 400);
    ZS_ASSERT_INT_EQ(np[0], 8);
    ZS_ASSERT_INT_EQ(lw[0][7], 100);
    ZS_ASSERT_INT_EQ(lw[0][6], 100);
    ZS_ASSERT_INT_EQ(lw[0][5], 50);
    ZS_ASSERT_INT_EQ(tp[1], 300);
    ZS_ASSERT_INT_EQ(np[1], 7);
    /* loader=whole (the default): documents whole but for those longer than
     * the window (150 -> 100 + 50, 120 -> 100 + 20), a batch at most 400
     * tokens, the one crossing its end waits: 30 20 100 50 100 20 40 (360)
     * || 60 10 90 80 30 70 (340). */
    bw = batcher_pieces(&v, "wlb-llm", "tp=1,cp=2,pp=2,window=100,queues=0,warmup=0", docs, 11, lw,
                        nw, tw);
    ZS_ASSERT_INT_EQ(bw, 2);
    ZS_ASSERT_INT_EQ(tw[0], 360);
    ZS_ASSERT_INT_EQ(nw[0], 7);
    ZS_ASSERT_INT_EQ(lw[0][4], 50);
    ZS_ASSERT_INT_EQ(lw[0][6], 100);
    ZS_ASSERT_INT_EQ(tw[1], 340);
    ZS_ASSERT_INT_EQ(nw[1], 6);
    zs_cost_free(v.cost);
}

/* Sends of a rank whose label is `lab` (segment repeats counted). */
static int count_sends(const zs_schedule *s, int r, const char *lab)
{
    const zs_rank_prog *p = &s->ranks[r];
    int n = 0;
    for (int32_t g = 0; g < p->nsegs; g++)
        for (int64_t i = p->segs[g].op0; i < p->segs[g].op0 + p->segs[g].nops; i++)
            if (p->ops[i].kind == ZS_OP_SEND && strcmp(s->labels[p->ops[i].label], lab) == 0)
                n += p->segs[g].repeat;
    return n;
}

/* Interleaved 1F1B (vp): 8 GPUs as tp=1 cp=2 pp=2 dp=2, 24 layers, 2
 * micro-batches of equal documents per DP rank, vp=2: stage 0 holds
 * virtual stages 0 and 2, stage 1 holds 1 and 3. Stage 0 sends
 * activations 0 -> 1 and 2 -> 3 (4 a rank) and gradients 2 -> 1 (2);
 * stage 1 sends activations 1 -> 2 (2) and gradients 3 -> 2 and 1 -> 0
 * (4). The plan validates, runs, and with 4 micro-batches its bubble is
 * smaller than plain 1F1B's (same work, shorter iteration). Bad shapes
 * are errors. */
static void test_interleaved(void)
{
    env v;
    env_init(&v, "llama-550m", 1, "");
    zs_batch *b = zs_batch_from_lengths((int32_t[]){100, 100, 100, 100}, 4);
    env_opts(&v, "tp=1,cp=2,pp=2,vp=2,window=100,micro=2");
    zs_plan_report rep;
    zs_schedule *s = plan(&v, "plain-4d", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    int r0 = zs_slot_rank(&s->dims, 0, 0), r1 = zs_slot_rank(&s->dims, 1, 0);
    ZS_ASSERT_INT_EQ(count_sends(s, r0, "pp-send-act"), 4);
    ZS_ASSERT_INT_EQ(count_sends(s, r0, "pp-send-grad"), 2);
    ZS_ASSERT_INT_EQ(count_sends(s, r1, "pp-send-act"), 2);
    ZS_ASSERT_INT_EQ(count_sends(s, r1, "pp-send-grad"), 4);
    ZS_ASSERT_STR_CONTAINS(rep.notes, "interleaved 1F1B: 2 model chunks per stage of 6 layers");
    zs_err e;
    ZS_ASSERT_OK(zs_validate(s, NULL, &e), &e);
    run_analytic(&v, s);
    zs_schedule_free(s);
    zs_batch_free(b);
    /* 4 micro-batches of 100 per DP rank: vp=2 shortens the iteration. */
    b = zs_batch_from_lengths((int32_t[]){100, 100, 100, 100, 100, 100, 100, 100}, 8);
    double t[2];
    for (int k = 0; k < 2; k++) {
        env_opts(&v, k ? "tp=1,cp=2,pp=2,vp=2,window=100,micro=4"
                       : "tp=1,cp=2,pp=2,window=100,micro=4");
        s = plan(&v, "plain-4d", b, &rep);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        zs_result *r = NULL;
        ZS_ASSERT_OK(zs_analytic_run(s, v.cost, NULL, &r, &e), &e);
        t[k] = r->iter_time;
        zs_result_free(r);
        zs_schedule_free(s);
    }
    CU_ASSERT(t[1] < t[0]);
    printf("\n  plain-4d pp=2, 4 micro-batches: vp=1 %.3f ms, vp=2 %.3f ms\n", t[0] * 1e3,
           t[1] * 1e3);
    /* Model chunks in flight on the first stage, by hand: 1F1B holds
     * min(pp, micro) micro-batches; interleaved, Megatron's warm-up
     * (pp-1) x 2 + (vp-1) x pp forwards plus one, at most micro x vp. */
    ZS_ASSERT_INT_EQ(zs_p4d_inflight_chunks(4, 1, 8), 4);
    ZS_ASSERT_INT_EQ(zs_p4d_inflight_chunks(4, 1, 2), 2);
    ZS_ASSERT_INT_EQ(zs_p4d_inflight_chunks(4, 2, 8), 11);
    ZS_ASSERT_INT_EQ(zs_p4d_inflight_chunks(8, 12, 16), 103);
    ZS_ASSERT_INT_EQ(zs_p4d_inflight_chunks(4, 2, 4), 8);
    /* vp without pipelining, micro-batches not a multiple of pp, layers
     * not a multiple of pp x vp. */
    const char *bad[] = {"tp=1,cp=2,pp=1,vp=2,window=100,micro=4",
                         "tp=1,cp=2,pp=2,vp=2,window=100,micro=3",
                         "tp=1,cp=1,pp=2,vp=5,window=100,micro=4"};
    zs_batch *b6 = zs_batch_from_lengths((int32_t[]){100, 100, 100, 100, 100, 100}, 6);
    for (int k = 0; k < 3; k++) {
        env_opts(&v, bad[k]);
        s = NULL;
        ZS_ASSERT_INT_EQ(
            zs_plan_batch(zs_planner_find("plain-4d"), &v.ctx, k == 1 ? b6 : b, 0, &s, &rep, &e),
            ZS_EINPUT);
        ZS_ASSERT_STR_CONTAINS(e.where, "vp");
        CU_ASSERT_PTR_NULL(s);
    }
    zs_batch_free(b6);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* Table 1 defaults: LLaMA-7B at 128K on 64 GPUs is (8, 2, 4, 1). Planned
 * without validation: see pipelined_micro_batches. */
static void test_table1_defaults(void)
{
    env v;
    env_init(&v, "llama-7b", 8, "");
    v.ctx.mem.recompute = ZS_RECOMPUTE_FULL;
    zs_batch *b = random_batch(3, 40, 131072);
    zs_plan_report rep;
    zs_schedule *s = NULL;
    zs_err e;
    ZS_ASSERT_OK(zs_plan_batch(zs_planner_find("wlb-llm"), &v.ctx, b, 0, &s, &rep, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_INT_EQ(s->dims.tp, 8);
    ZS_ASSERT_INT_EQ(s->dims.cp, 2);
    ZS_ASSERT_INT_EQ(s->dims.pp, 4);
    ZS_ASSERT_INT_EQ(s->dims.dp, 1);
    printf("\n  wlb-llm 7B/64 GPUs: %s\n", rep.notes);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* PP > 1 with several micro-batches: 1F1B interleaves pipeline sends and
 * receives of different micro-batches; the schedule must validate (no
 * deadlock) and run. */
static void test_pipelined_micro_batches(void)
{
    env v;
    env_init(&v, "llama-550m", 1, "tp=1,cp=2,pp=2,window=100");
    zs_batch *b = zs_batch_from_lengths((int32_t[]){60, 60, 60, 60}, 4);
    const char *methods[] = {"plain-4d", "fixed-4d", "wlb-llm"};
    for (int mi = 0; mi < 3; mi++) {
        env_opts(&v, "tp=1,cp=2,pp=2,window=100");
        zs_plan_report rep;
        zs_schedule *s = plan(&v, methods[mi], b, &rep);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        ZS_ASSERT_INT_EQ(s->micro_batches, 2);
        run_analytic(&v, s);
        zs_schedule_free(s);
    }
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

/* The memory model's tokens alive at once under 1F1B (zs_plan_report
 * max_live_*): plain-4d, cp=2 x pp=2 x dp=2, window 100, micro=3,
 * documents 100, 40, 100 (no two fit one window: a sequence each, DP rank
 * 0's micro-batches 0-2) and the same for DP rank 1. A slot holds half of
 * each: 50, 20, 50 tokens on rank 0 (stage 0). The iteration adds them,
 * 120; stage 0 keeps pp = 2 consecutive micro-batches alive: 50 + 20 =
 * 70 (not the two largest, 100: 1F1B frees micro-batch 0 before micro-batch
 * 2's forward). */
static void test_live_tokens_1f1b(void)
{
    env v;
    env_init(&v, "llama-550m", 1, "tp=1,cp=2,pp=2,window=100,micro=3");
    zs_batch *b = zs_batch_from_lengths((int32_t[]){100, 40, 100, 100, 40, 100}, 6);
    zs_plan_report rep;
    zs_schedule *s = plan(&v, "plain-4d", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_INT_EQ(s->micro_batches, 3);
    ZS_ASSERT_INT_EQ(zs_test_piece_tokens(s, 0, ZS_LAYOUT_LINEAR), 120);
    ZS_ASSERT_INT_EQ(rep.max_attn_tokens, 120);
    ZS_ASSERT_INT_EQ(rep.max_linear_tokens, 120);
    ZS_ASSERT_INT_EQ(rep.max_live_attn_tokens, 70);
    ZS_ASSERT_INT_EQ(rep.max_live_linear_tokens, 70);
    zs_schedule_free(s);
    /* Without pipelining (pp=1, cp=2 x dp=4) the micro-batches run one at
     * a time: the largest one, 50. */
    env_opts(&v, "tp=1,cp=2,pp=1,window=100,micro=3");
    s = plan(&v, "plain-4d", b, &rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    ZS_ASSERT_INT_EQ(s->micro_batches, 3);
    ZS_ASSERT_INT_EQ(rep.max_attn_tokens, 120);
    ZS_ASSERT_INT_EQ(rep.max_live_attn_tokens, 50);
    ZS_ASSERT_INT_EQ(rep.max_live_linear_tokens, 50);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_cost_free(v.cost);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"plain_hand_checked", test_plain_hand_checked},
                                         {"same_pieces_as_plain", test_same_pieces_as_plain},
                                         {"interleaved", test_interleaved},
                                         {"wlb_per_document", test_wlb_per_document},
                                         {"random_batches", test_random_batches},
                                         {"packed_batch", test_packed_batch},
                                         {"errors", test_errors},
                                         {"table1_defaults", test_table1_defaults},
                                         {"pipelined_micro_batches", test_pipelined_micro_batches},
                                         {"live_tokens_1f1b", test_live_tokens_1f1b},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"planner_wlb", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
