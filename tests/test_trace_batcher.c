/* The greedy batcher on hand-checked streams: carrying, splitting,
 * truncating, cycling and exhaustion. */
#include <stdlib.h>

#include "zs_batcher_greedy.h"
#include "zs_test.h"

static zs_trace_src *src_of(const int32_t *len, int n)
{
    zs_trace *t = zs_trace_new("hand");
    zs_err e;
    for (int i = 0; i < n; i++)
        zs_trace_push(t, len[i], &e);
    return zs_trace_src_from_trace(t);
}

/* Runs the batcher to the end (at most max batches) and prints batches as
 * "3 4|5 2|6" for one string comparison. */
static void run(zs_batcher *b, int max, char *out, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    zs_err e;
    for (int k = 0; k < max; k++) {
        zs_batch *bt;
        ZS_ASSERT_OK(zs_batcher_next(b, &bt, &e), &e);
        if (!bt)
            break;
        ZS_ASSERT_INT_EQ(bt->index, k);
        for (int i = 0; i < bt->ndocs && o + 16 < n; i++)
            o += (size_t)snprintf(out + o, n - o, "%s%d", i ? " " : (k ? "|" : ""), bt->len[i]);
        zs_batch_free(bt);
    }
}

static void test_carry(void)
{
    static const int32_t len[] = {3, 4, 5, 2, 6, 1, 1};
    zs_trace_src *s = src_of(len, 7);
    zs_batcher_cfg cfg = {8, 0, ZS_LONG_SPLIT, 0};
    zs_batcher *b;
    zs_err e;
    ZS_ASSERT_OK(zs_batcher_greedy_new(s, &cfg, &b, &e), &e);
    ZS_ASSERT_STR_CONTAINS(b->ops->name, "greedy");
    char got[256];
    run(b, 100, got, sizeof got);
    /* 3+4 leaves 1: the 5 is carried; 5+2 leaves 1: the 6 is carried; 6+1+1
     * meets the budget exactly. */
    ZS_ASSERT_STR_CONTAINS(got, "3 4|5 2|6 1 1");
    CU_ASSERT(strcmp(got, "3 4|5 2|6 1 1") == 0);
    const zs_batcher_counts *c = zs_batcher_counts_get(b);
    ZS_ASSERT_INT_EQ(c->batches, 3);
    ZS_ASSERT_INT_EQ(c->docs, 7);
    ZS_ASSERT_INT_EQ(c->tokens, 22);
    ZS_ASSERT_INT_EQ(c->docs_carried, 2);
    ZS_ASSERT_INT_EQ(c->tokens_carried, 11);
    ZS_ASSERT_INT_EQ(c->budget_unused, 2);
    /* exhausted: NULL again and again */
    zs_batch *bt = (zs_batch *)1;
    ZS_ASSERT_OK(zs_batcher_next(b, &bt, &e), &e);
    CU_ASSERT_PTR_NULL(bt);
    zs_batcher_free(b);
    zs_trace_src_free(s);
}

static void test_split_and_truncate(void)
{
    static const int32_t len[] = {20, 3};
    zs_trace_src *s = src_of(len, 2);
    zs_batcher_cfg cfg = {8, 0, ZS_LONG_SPLIT, 0};
    zs_batcher *b;
    zs_err e;
    ZS_ASSERT_OK(zs_batcher_greedy_new(s, &cfg, &b, &e), &e);
    char got[256];
    run(b, 100, got, sizeof got);
    /* the window defaults to the budget: 20 = 8 + 8 + 4, then 3 joins the 4 */
    CU_ASSERT(strcmp(got, "8|8|4 3") == 0);
    if (strcmp(got, "8|8|4 3"))
        fprintf(stderr, "got %s\n", got);
    ZS_ASSERT_INT_EQ(zs_trace_src_counts_get(s)->pieces, 3);
    zs_batcher_free(b);
    zs_trace_src_free(s);

    s = src_of(len, 2);
    cfg.policy = ZS_LONG_TRUNCATE;
    cfg.window = 6; /* below the budget */
    ZS_ASSERT_OK(zs_batcher_greedy_new(s, &cfg, &b, &e), &e);
    run(b, 100, got, sizeof got);
    CU_ASSERT(strcmp(got, "6|3") == 0);
    ZS_ASSERT_INT_EQ(zs_trace_src_counts_get(s)->tokens_dropped, 14);
    zs_batcher_free(b);
    zs_trace_src_free(s);
}

static void test_cycle_and_ids(void)
{
    static const int32_t len[] = {5, 3};
    zs_trace_src *s = src_of(len, 2);
    zs_batcher_cfg cfg = {10, 0, ZS_LONG_SPLIT, 1};
    zs_batcher *b;
    zs_err e;
    ZS_ASSERT_OK(zs_batcher_greedy_new(s, &cfg, &b, &e), &e);
    zs_batch *bt;
    ZS_ASSERT_OK(zs_batcher_next(b, &bt, &e), &e);
    /* 5 3 then the trace restarts: 5 is carried (5+3+5 > 10) */
    ZS_ASSERT_INT_EQ(bt->ndocs, 2);
    ZS_ASSERT_INT_EQ(bt->source[0], 0);
    ZS_ASSERT_INT_EQ(bt->source[1], 1);
    zs_batch_free(bt);
    ZS_ASSERT_OK(zs_batcher_next(b, &bt, &e), &e);
    ZS_ASSERT_INT_EQ(bt->tokens, 8);
    ZS_ASSERT_INT_EQ(bt->source[0], 0);
    zs_batch_free(bt);
    ZS_ASSERT_INT_EQ(zs_batcher_counts_get(b)->epochs, 2);
    zs_batcher_free(b);
    zs_trace_src_free(s);
}

static void test_bad_budget(void)
{
    static const int32_t len[] = {5};
    zs_trace_src *s = src_of(len, 1);
    zs_batcher_cfg cfg = {0, 0, ZS_LONG_SPLIT, 0};
    zs_batcher *b = NULL;
    zs_err e;
    ZS_ASSERT_INT_EQ(zs_batcher_greedy_new(s, &cfg, &b, &e), ZS_EINPUT);
    CU_ASSERT_PTR_NULL(b);
    zs_batcher_free(NULL);
    zs_trace_src_free(s);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"carry", test_carry},
                                         {"split_and_truncate", test_split_and_truncate},
                                         {"cycle_and_ids", test_cycle_and_ids},
                                         {"bad_budget", test_bad_budget},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"trace_batcher", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
