/* Tests of the 4D packers (lower/zs_pack.h): hand-checked cases of
 * loader-order packing, fixed-length greedy repacking (in one batch and
 * over a window of batches), WLB-LLM's variable-length step and its
 * stateful packer with outlier queues (delays counted by hand), and, on
 * the WLB-LLM 128K trace when it is present, the imbalance degree of
 * plain packing (concatenate-and-cut) and fixed-length greedy repacking
 * over 1 to 8 batches against WLB-LLM's packing with 0 to 3 outlier queues
 * at steady state (WLB-LLM's Table 2). The packing time per batch is
 * printed, never asserted. Also the concatenate-and-cut loader and
 * fixed-length repacking with cuts (lower/zs_cutload.h), by hand. */
#include <stdlib.h>

#include "zs_batcher_greedy.h"
#include "zs_cutload.h"
#include "zs_model.h"
#include "zs_test.h"
#include "zs_trace_read.h"
#include "zs_pack.h"

static double unit_coef[2] = {1, 0};
static const zs_pack_cost unit_cost = {zs_pack_cost_quadratic, unit_coef};

static void test_plain(void)
{
    int32_t len[] = {60, 50, 30, 100, 20}, mo[5];
    ZS_ASSERT_INT_EQ(zs_pack_plain(len, 5, 100, mo), 4);
    int32_t want[] = {0, 1, 1, 2, 3};
    for (int i = 0; i < 5; i++)
        ZS_ASSERT_INT_EQ(mo[i], want[i]);
    /* A document longer than the window gets a micro-batch of its own. */
    int32_t len2[] = {10, 150, 10};
    ZS_ASSERT_INT_EQ(zs_pack_plain(len2, 3, 100, mo), 3);
    ZS_ASSERT_INT_EQ(mo[2], 2);
}

static void test_fixed(void)
{
    zs_err e;
    int32_t len[] = {50, 50, 40, 30, 20, 10}, mo[6], used;
    /* Costs s(s+1)/2: 50,50 -> 0,1; 40 -> 0 (tie: lower); 30 -> 1;
     * 20 -> 1 (1740 < 2095, 100 tokens fit); 10 -> 1 is full, so 0. */
    ZS_ASSERT_OK(zs_pack_fixed(len, 6, 100, 2, unit_cost, mo, &used, &e), &e);
    ZS_ASSERT_INT_EQ(used, 2);
    int32_t want[] = {0, 1, 0, 1, 1, 0};
    for (int i = 0; i < 6; i++)
        ZS_ASSERT_INT_EQ(mo[i], want[i]);
    /* A document that fits no micro-batch opens one. */
    int32_t len2[] = {80, 50};
    ZS_ASSERT_OK(zs_pack_fixed(len2, 2, 100, 1, unit_cost, mo, &used, &e), &e);
    ZS_ASSERT_INT_EQ(used, 2);
    ZS_ASSERT_INT_EQ(mo[1], 1);
}

static void test_var(void)
{
    zs_err e;
    /* Longest first: 40 -> 0; 30 -> 1; 25 -> 1 (least cost, 55 <= 70);
     * 20 -> 1 is least but 75 > 70, so the shortest, 0; 10 -> 1. */
    int32_t len[] = {10, 40, 30, 20, 25}, mo[5];
    ZS_ASSERT_INT_EQ(zs_pack_var(len, 5, 70, 2, unit_cost, mo, &e), 0);
    int32_t want[] = {1, 0, 1, 0, 1};
    for (int i = 0; i < 5; i++)
        ZS_ASSERT_INT_EQ(mo[i], want[i]);
    /* Costs: 820 + 210 = 1030 and 465 + 325 + 55 = 845. */
    ZS_ASSERT_NEAR(zs_pack_imbalance(len, 5, mo, 2, unit_cost), 2 * 1030.0 / 1875.0, 1e-12);
    /* Neither the least-loaded nor the shortest has room: left out. */
    int32_t len2[] = {40, 45, 30};
    ZS_ASSERT_INT_EQ(zs_pack_var(len2, 3, 50, 2, unit_cost, mo, &e), 1);
    ZS_ASSERT_INT_EQ(mo[0], 1);
    ZS_ASSERT_INT_EQ(mo[1], 0);
    ZS_ASSERT_INT_EQ(mo[2], -1);
}

static void test_fixed_window(void)
{
    zs_err e;
    zs_batch *in[2] = {zs_batch_from_lengths((int32_t[]){90, 10, 50, 50}, 4),
                       zs_batch_from_lengths((int32_t[]){20, 20, 20, 20, 20}, 5)};
    in[1]->index = 1;
    zs_batch *out[2] = {NULL, NULL};
    /* 4 micro-batches of 100, longest first into the least cost with room:
     * 90 -> 0, 50 -> 1, 50 -> 2, the five 20s -> 3 (840 < 1275 until it is
     * full at 100), 10 -> 1 (3 is full; 1 and 2 tie at 1275: lower index).
     * Costs: {90} 4095, {50,10} 1330, {50} 1275, {20x5} 1050: batch 0 gets
     * the two costliest, batch 1 the two cheapest. */
    ZS_ASSERT_OK(zs_pack_fixed_window(in, 2, 100, 2, unit_cost, out, &e), &e);
    ZS_ASSERT_INT_EQ(out[0]->ndocs, 3);
    ZS_ASSERT_INT_EQ(out[0]->nmicro, 2);
    int32_t want0[] = {90, 10, 50}, wmo0[] = {0, 1, 1};
    for (int i = 0; i < 3; i++) {
        ZS_ASSERT_INT_EQ(out[0]->len[i], want0[i]);
        ZS_ASSERT_INT_EQ(out[0]->micro_of[i], wmo0[i]);
    }
    ZS_ASSERT_INT_EQ(out[1]->ndocs, 6);
    ZS_ASSERT_INT_EQ(out[1]->len[0], 50);
    ZS_ASSERT_INT_EQ(out[1]->micro_of[0], 0);
    ZS_ASSERT_INT_EQ(out[1]->micro_of[5], 1);
    ZS_ASSERT_INT_EQ(out[1]->index, 1);
    ZS_ASSERT_INT_EQ(out[0]->tokens + out[1]->tokens, 300);
    for (int i = 0; i < 2; i++) {
        zs_batch_free(in[i]);
        zs_batch_free(out[i]);
    }
}

static zs_trace_src *src_of(const int32_t *len, int n)
{
    zs_trace *t = zs_trace_new("test");
    for (int i = 0; i < n; i++)
        zs_trace_push(t, len[i], NULL);
    return zs_trace_src_from_trace(t);
}

static void test_packer_queues(void)
{
    zs_err e;
    /* nmicro 2, window 100 (the loader's batch: 200 tokens), one queue for
     * documents above 60 tokens, the document crossing a batch's end cut
     * there. */
    int32_t len[] = {70, 50, 50, 50, 50, 80, 40, 40, 40, 40, 40};
    zs_trace_src *src = src_of(len, 11);
    zs_doc_stream ds = zs_trace_src_stream(src);
    zs_wlb_pack_cfg cfg = {2, 100, 200, 1, {60}, unit_cost, 1};
    zs_wlb_packer *p = NULL;
    ZS_ASSERT_OK(zs_wlb_packer_new(&cfg, &p, &e), &e);
    zs_batch *b = NULL;
    /* Batch 0: 70 waits (one outlier cannot be spread over 2 micro-batches). */
    ZS_ASSERT_OK(zs_wlb_packer_next(p, &ds, &b, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    ZS_ASSERT_INT_EQ(b->ndocs, 4);
    ZS_ASSERT_INT_EQ(b->tokens, 200);
    ZS_ASSERT_INT_EQ(b->micro_of[0], 0);
    ZS_ASSERT_INT_EQ(b->micro_of[3], 1);
    ZS_ASSERT_INT_EQ(zs_wlb_packer_stats(p)->waiting_docs, 1);
    zs_batch_free(b);
    /* Batch 1: 80 joins the queue, which releases both outliers into the
     * batch (150 tokens fit its 200); they count towards it, so a 40 and
     * 10 tokens of the next 40 fill it: the global batch is exactly the
     * loader's, the 40 is cut at its end and its other 30 tokens open the
     * next batch. 80 -> 0, 70 -> 1, then by least cost 40 -> 1 (2485 <
     * 3240), 10 -> 0 (3240 < 3305): 90 and 110 tokens. */
    ZS_ASSERT_OK(zs_wlb_packer_next(p, &ds, &b, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    ZS_ASSERT_INT_EQ(b->ndocs, 4);
    ZS_ASSERT_INT_EQ(b->tokens, 200);
    int64_t tok[2] = {0, 0};
    for (int i = 0; i < b->ndocs; i++) {
        tok[b->micro_of[i]] += b->len[i];
        if (b->len[i] > 60)
            ZS_ASSERT_INT_EQ(b->micro_of[i], b->len[i] == 80 ? 0 : 1);
    }
    ZS_ASSERT_INT_EQ(tok[0], 90);
    ZS_ASSERT_INT_EQ(tok[1], 110);
    /* 70 of its 200 tokens waited one iteration. */
    ZS_ASSERT_NEAR(b->wait_iters, 70.0 / 200.0, 1e-12);
    const zs_wlb_pack_stats *st = zs_wlb_packer_stats(p);
    ZS_ASSERT_INT_EQ(st->delayed_docs, 1);
    ZS_ASSERT_INT_EQ(st->delayed_tokens, 70);
    ZS_ASSERT_NEAR(st->avg_delay_delayed, 1.0, 1e-12);
    ZS_ASSERT_NEAR(st->avg_delay_all, 70.0 / 400.0, 1e-12);
    zs_batch_free(b);
    /* Batch 2: the cut 40's other 30 tokens and the last three 40s, none
     * delayed (the source ends short of a full batch). */
    ZS_ASSERT_OK(zs_wlb_packer_next(p, &ds, &b, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    ZS_ASSERT_INT_EQ(b->ndocs, 4);
    ZS_ASSERT_INT_EQ(b->tokens, 150);
    int n30 = 0;
    for (int i = 0; i < b->ndocs; i++)
        n30 += b->len[i] == 30;
    ZS_ASSERT_INT_EQ(n30, 1);
    ZS_ASSERT_NEAR(st->avg_delay_all, 70.0 / 550.0, 1e-12);
    zs_batch_free(b);
    ZS_ASSERT_OK(zs_wlb_packer_next(p, &ds, &b, &e), &e);
    CU_ASSERT_PTR_NULL(b);
    zs_wlb_packer_free(p);
    zs_trace_src_free(src);
}

/* cut_end = 0: the document crossing a batch's end waits whole for the
 * next batch. Batch 0: 50 x 4 (the 70 queues). Batch 1: the outliers 80
 * and 70 released (150), a 40 (190); the next 40 would cross 200, so it
 * opens batch 2: the four 40s (160). */
static void test_packer_whole(void)
{
    zs_err e;
    int32_t len[] = {70, 50, 50, 50, 50, 80, 40, 40, 40, 40, 40};
    zs_trace_src *src = src_of(len, 11);
    zs_doc_stream ds = zs_trace_src_stream(src);
    zs_wlb_pack_cfg cfg = {2, 100, 200, 1, {60}, unit_cost, 0};
    zs_wlb_packer *p = NULL;
    ZS_ASSERT_OK(zs_wlb_packer_new(&cfg, &p, &e), &e);
    int64_t want_tok[] = {200, 190, 160};
    int want_docs[] = {4, 3, 4};
    for (int k = 0; k < 3; k++) {
        zs_batch *b = NULL;
        ZS_ASSERT_OK(zs_wlb_packer_next(p, &ds, &b, &e), &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        ZS_ASSERT_INT_EQ(b->tokens, want_tok[k]);
        ZS_ASSERT_INT_EQ(b->ndocs, want_docs[k]);
        for (int i = 0; i < b->ndocs; i++)
            CU_ASSERT(b->len[i] == 40 || b->len[i] == 50 || b->len[i] == 70 || b->len[i] == 80);
        zs_batch_free(b);
    }
    /* The 40 that waited was drawn for batch 2: nothing counts as delayed
     * but the 70. */
    ZS_ASSERT_INT_EQ(zs_wlb_packer_stats(p)->delayed_tokens, 70);
    zs_batch *b = NULL;
    ZS_ASSERT_OK(zs_wlb_packer_next(p, &ds, &b, &e), &e);
    CU_ASSERT_PTR_NULL(b);
    zs_wlb_packer_free(p);
    zs_trace_src_free(src);
}

static void test_packer_errors(void)
{
    zs_err e;
    zs_wlb_packer *p = NULL;
    zs_wlb_pack_cfg bad = {2, 100, 200, 2, {80, 60}, unit_cost, 0};
    ZS_ASSERT_INT_EQ(zs_wlb_packer_new(&bad, &p, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.fix, "ascending");
    zs_wlb_pack_cfg cfg = {2, 100, 150, 0, {0}, unit_cost, 0};
    ZS_ASSERT_OK(zs_wlb_packer_new(&cfg, &p, &e), &e);
    zs_trace_src *src = src_of((int32_t[]){20, 170}, 2);
    zs_doc_stream ds = zs_trace_src_stream(src);
    zs_batch *b = NULL;
    ZS_ASSERT_INT_EQ(zs_wlb_packer_next(p, &ds, &b, &e), ZS_EINPUT);
    ZS_ASSERT_STR_CONTAINS(e.where, "document 1");
    CU_ASSERT_PTR_NULL(b);
    zs_wlb_packer_free(p);
    zs_wlb_packer_free(NULL);
    zs_trace_src_free(src);
}

/* Warm-up: the first batch is packed and dropped, the queues keep what it
 * left, the statistics and the numbering start afresh. */
static void test_packer_warmup(void)
{
    zs_err e;
    int32_t len[] = {70, 50, 50, 50, 50, 80, 40, 40, 40, 40, 40};
    zs_trace_src *src = src_of(len, 11);
    zs_doc_stream ds = zs_trace_src_stream(src);
    zs_wlb_pack_cfg cfg = {2, 100, 200, 1, {60}, unit_cost, 1};
    zs_wlb_packer *p = NULL;
    ZS_ASSERT_OK(zs_wlb_packer_new(&cfg, &p, &e), &e);
    ZS_ASSERT_OK(zs_wlb_packer_warmup(p, &ds, 1, &e), &e);
    const zs_wlb_pack_stats *st = zs_wlb_packer_stats(p);
    ZS_ASSERT_INT_EQ(st->batches, 0);
    ZS_ASSERT_INT_EQ(st->waiting_docs, 1); /* the 70 waits in its queue */
    zs_batch *b = NULL;
    ZS_ASSERT_OK(zs_wlb_packer_next(p, &ds, &b, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    ZS_ASSERT_INT_EQ(b->index, 0);
    ZS_ASSERT_INT_EQ(b->tokens, 200);
    ZS_ASSERT_INT_EQ(st->batches, 1);
    ZS_ASSERT_INT_EQ(st->delayed_tokens, 70);
    ZS_ASSERT_NEAR(st->avg_delay_all, 70.0 / 200.0, 1e-12);
    zs_batch_free(b);
    zs_wlb_packer_free(p);
    zs_trace_src_free(src);
}

/* The concatenate-and-cut loader, by hand: documents 5, 3, 9, 2, 7 into
 * batches of two windows of 6 tokens. */
static void test_cut_loader(void)
{
    zs_err e;
    int32_t len[] = {5, 3, 9, 2, 7};
    zs_trace_src *src = src_of(len, 5);
    zs_cutload_cfg cfg = {2, 6, 0, {NULL, NULL}};
    zs_batcher *bt = NULL;
    ZS_ASSERT_OK(zs_batcher_cut_new(zs_trace_src_stream(src), &cfg, NULL, &bt, &e), &e);
    /* Windows [5, 1 | 2, 4], [5, 1 | 1, 5], [2]: every window full until the
     * stream runs dry; a cut piece keeps its document's trace id. */
    static const int32_t want_len[3][4] = {{5, 1, 2, 4}, {5, 1, 1, 5}, {2}};
    static const int32_t want_mo[3][4] = {{0, 0, 1, 1}, {0, 0, 1, 1}, {0}};
    static const int64_t want_src[3][4] = {{0, 1, 1, 2}, {2, 3, 3, 4}, {4}};
    static const int want_n[3] = {4, 4, 1}, want_micro[3] = {2, 2, 1};
    for (int k = 0; k < 3; k++) {
        zs_batch *b = NULL;
        ZS_ASSERT_OK(zs_batcher_next(bt, &b, &e), &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        ZS_ASSERT_INT_EQ(b->ndocs, want_n[k]);
        ZS_ASSERT_INT_EQ(b->nmicro, want_micro[k]);
        ZS_ASSERT_INT_EQ(b->index, k);
        for (int i = 0; i < b->ndocs; i++) {
            ZS_ASSERT_INT_EQ(b->len[i], want_len[k][i]);
            ZS_ASSERT_INT_EQ(b->micro_of[i], want_mo[k][i]);
            ZS_ASSERT_INT_EQ(b->source[i], want_src[k][i]);
        }
        zs_batch_free(b);
    }
    zs_batch *b = NULL;
    ZS_ASSERT_OK(zs_batcher_next(bt, &b, &e), &e);
    CU_ASSERT_PTR_NULL(b);
    ZS_ASSERT_INT_EQ(zs_batcher_counts_get(bt)->tokens, 26);
    zs_batcher_free(bt);
    zs_trace_src_free(src);
}

/* Fixed-length greedy repacking with cuts, by hand (cost s(s+1)/2): 5 ->
 * window 0; 4 -> window 1; 3 fits neither (room 1 and 2): 2 fill window 1,
 * the last 1 goes to window 0. */
static void test_fixed_cut(void)
{
    zs_err e;
    int32_t len[] = {3, 5, 4}, ol[6], ow[6];
    int64_t src[] = {10, 11, 12}, os[6];
    int32_t m = zs_pack_fixed_cut(len, src, 3, 2, 6, unit_cost, ol, os, ow, &e);
    ZS_ASSERT_INT_EQ(m, 4);
    static const int32_t wl[] = {5, 4, 2, 1}, ww[] = {0, 1, 1, 0};
    static const int64_t wsrc[] = {11, 12, 10, 10};
    for (int i = 0; i < 4; i++) {
        ZS_ASSERT_INT_EQ(ol[i], wl[i]);
        ZS_ASSERT_INT_EQ(ow[i], ww[i]);
        ZS_ASSERT_INT_EQ(os[i], wsrc[i]);
    }
    /* More tokens than the windows hold is a bug of the caller. */
    int32_t big[] = {7, 6};
    ZS_ASSERT_INT_EQ(zs_pack_fixed_cut(big, NULL, 2, 2, 6, unit_cost, ol, os, ow, &e), ZS_EINVALID);
    /* The loader with repack=1: the first batch's pieces 5, 1, 2, 4 become
     * [5, 1] (cost 16) and [4, 2] (cost 13), the costlier window first. */
    int32_t tr[] = {5, 3, 9, 2, 7};
    zs_trace_src *ts = src_of(tr, 5);
    zs_cutload_cfg cfg = {2, 6, 1, unit_cost};
    zs_batcher *bt = NULL;
    ZS_ASSERT_OK(zs_batcher_cut_new(zs_trace_src_stream(ts), &cfg, NULL, &bt, &e), &e);
    zs_batch *b = NULL;
    ZS_ASSERT_OK(zs_batcher_next(bt, &b, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    ZS_ASSERT_INT_EQ(b->nmicro, 2);
    ZS_ASSERT_INT_EQ(b->ndocs, 4);
    static const int32_t bl[] = {5, 1, 4, 2}, bm[] = {0, 0, 1, 1};
    for (int i = 0; i < 4; i++) {
        ZS_ASSERT_INT_EQ(b->len[i], bl[i]);
        ZS_ASSERT_INT_EQ(b->micro_of[i], bm[i]);
    }
    zs_batch_free(b);
    zs_batcher_free(bt);
    zs_trace_src_free(ts);
    /* Bad shapes are errors, and the owned block is released. */
    zs_cutload_cfg bad = {0, 6, 0, {NULL, NULL}};
    ZS_ASSERT_INT_EQ(zs_batcher_cut_new(zs_trace_src_stream(ts), &bad, malloc(8), &bt, &e),
                     ZS_EINPUT);
}

/* The batcher interface: same batches as the packer, counters filled. */
static void test_as_batcher(void)
{
    zs_err e;
    int32_t len[] = {70, 50, 50, 50, 50, 80, 40, 40, 40, 40, 40};
    zs_trace_src *src = src_of(len, 11);
    zs_wlb_pack_cfg cfg = {2, 100, 200, 1, {60}, unit_cost, 0};
    zs_batcher *bt = NULL;
    ZS_ASSERT_OK(zs_batcher_wlb_new(zs_trace_src_stream(src), &cfg, &bt, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(zs_batcher_wlb_packer(bt));
    zs_batch *b = NULL;
    int n = 0;
    int64_t tokens = 0;
    while (zs_batcher_next(bt, &b, &e) == ZS_OK && b) {
        tokens += b->tokens;
        n++;
        zs_batch_free(b);
    }
    ZS_ASSERT_INT_EQ(n, 3);
    ZS_ASSERT_INT_EQ(tokens, 550);
    ZS_ASSERT_INT_EQ(zs_batcher_counts_get(bt)->tokens, 550);
    zs_batcher_free(bt);
    zs_trace_src_free(src);
}

/* The paper's measure on its own corpus: 128K window, 4 micro-batches. The
 * cost per document is the 7B model's forward FLOPs (attention pairs x
 * 4 a d plus linear FLOPs per token), so balance is judged by work. */
static void test_trace_imbalance(void)
{
    const char *path = zs_test_shared("traces/wlb-meta-128k.lengths");
    if (!path)
        return;
    zs_err e;
    zs_model m;
    ZS_ASSERT_OK(zs_model_load("llama-7b", &m, &e), &e);
    double coef[2] = {4.0 * m.heads * m.head_dim, zs_model_linear_flops_per_token(&m)};
    zs_pack_cost cost = {zs_pack_cost_quadratic, coef};
    zs_trace *t = NULL;
    ZS_ASSERT_OK(zs_trace_read_file(path, NULL, &t, &e), &e);
    const int nmicro = 4, window = 131072, nbatches = 200;

    /* Plain-4D: the concatenate-and-cut loader, four full windows a batch. */
    zs_trace_src *src = zs_trace_src_from_trace(t);
    zs_doc_stream ds = zs_trace_src_stream(src);
    zs_batch *b = NULL;
    double plain = 0, fixed[4] = {0, 0, 0, 0};
    static const int kwin[4] = {1, 2, 4, 8};
    for (int r = 0; r < 5; r++) {
        zs_trace_src_reset(src);
        zs_cutload_cfg cc = {nmicro, window, r == 0 ? 0 : kwin[r - 1], cost};
        zs_batcher *bt = NULL;
        ZS_ASSERT_OK(zs_batcher_cut_new(ds, &cc, NULL, &bt, &e), &e);
        double sum = 0;
        int nb = 0;
        while (nb < nbatches && zs_batcher_next(bt, &b, &e) == ZS_OK && b) {
            ZS_ASSERT_INT_EQ(b->tokens, (int64_t)nmicro * window);
            sum += zs_pack_imbalance(b->len, b->ndocs, b->micro_of, b->nmicro, cost);
            nb++;
            zs_batch_free(b);
        }
        zs_batcher_free(bt);
        if (r == 0)
            plain = sum / nb;
        else
            fixed[r - 1] = sum / nb;
    }
    printf(
        "\n  fixed-length greedy over 1 / 2 / 4 / 8 batches: imbalance %.3f / %.3f / %.3f / %.3f",
        fixed[0], fixed[1], fixed[2], fixed[3]);
    double wlb[4];
    for (int q = 0; q <= 3; q++) {
        zs_trace_src_reset(src);
        zs_wlb_pack_cfg cfg = {nmicro, window, 0, q, {0}, cost, 0};
        zs_wlb_packer *p = NULL;
        ZS_ASSERT_OK(zs_wlb_packer_new(&cfg, &p, &e), &e);
        ZS_ASSERT_OK(zs_wlb_packer_warmup(p, &ds, 32, &e), &e);
        for (int i = 0; i < nbatches; i++) {
            ZS_ASSERT_OK(zs_wlb_packer_next(p, &ds, &b, &e), &e);
            if (!b)
                break;
            zs_batch_free(b);
        }
        const zs_wlb_pack_stats *st = zs_wlb_packer_stats(p);
        wlb[q] = st->imbalance_sum / (double)st->batches;
        printf("\n  wlb-llm, %d queue(s): imbalance %.3f over %lld batches, delayed tokens wait "
               "%.2f iterations (%.2f over all tokens), packing %.3f ms per batch (max %.3f ms)",
               q, wlb[q], (long long)st->batches, st->avg_delay_delayed, st->avg_delay_all,
               1e3 * st->pack_seconds / (double)st->batches, 1e3 * st->max_pack_seconds);
        zs_wlb_packer_free(p);
    }
    printf("\n  plain packing (concatenate-and-cut): imbalance %.3f over %d batches\n", plain,
           nbatches);
    CU_ASSERT(plain > 1.2);
    CU_ASSERT(fixed[3] < fixed[0]);
    CU_ASSERT(fixed[0] <= plain);
    CU_ASSERT(wlb[2] <= 1.1);
    CU_ASSERT(wlb[2] < wlb[0]);
    zs_trace_src_free(src);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"plain", test_plain},
                                         {"fixed", test_fixed},
                                         {"var", test_var},
                                         {"fixed_window", test_fixed_window},
                                         {"packer_queues", test_packer_queues},
                                         {"packer_whole", test_packer_whole},
                                         {"packer_errors", test_packer_errors},
                                         {"packer_warmup", test_packer_warmup},
                                         {"cut_loader", test_cut_loader},
                                         {"fixed_cut", test_fixed_cut},
                                         {"as_batcher", test_as_batcher},
                                         {"trace_imbalance", test_trace_imbalance},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"wlb_pack", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
