/* Properties of sources, statistics and the batcher over many generated
 * streams (specs x seeds x budgets x windows x policies):
 * - the batches, concatenated, are exactly the source's stream (same
 *   lengths, same ids, same order): nothing lost, duplicated or reordered;
 * - every batch fits its budget, and is closed only when full or when the
 *   next document does not fit;
 * - window handling conserves tokens (split) or accounts for every dropped
 *   token (truncate);
 * - statistics are ordered: quantiles non-decreasing, shares non-increasing
 *   in the threshold, attention share >= token share >= document share. */
#include <stdlib.h>

#include "zs_batcher_greedy.h"
#include "zs_test.h"
#include "zs_trace_stats.h"

static const char *specs[] = {"wlb-meta-128k",   "prolong64k",
                              "github",          "uniform:1-3000",
                              "lognormal:9,1.5", "mix:arxiv=0.5,stackexchange=0.5"};

static void check_batches(const char *spec, uint64_t seed, int64_t budget, int32_t window,
                          zs_long_policy pol, int *failures)
{
    zs_err e;
    zs_trace_src_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.seed = seed;
    zs_trace_src *s, *ref;
    ZS_ASSERT_OK(zs_trace_src_open(spec, &cfg, &s, &e), &e);
    ZS_ASSERT_OK(zs_trace_src_open(spec, &cfg, &ref, &e), &e);
    zs_batcher_cfg bc = {budget, window, pol, 0};
    zs_batcher *b;
    ZS_ASSERT_OK(zs_batcher_greedy_new(s, &bc, &b, &e), &e);
    /* the reference replays the same window on its own */
    zs_trace_src_set_window(ref, zs_trace_src_window(s), pol);
    int64_t prev_tokens = -1, tokens = 0, docs = 0;
    int bad = 0;
    for (int k = 0; k < 20 && !bad; k++) {
        zs_batch *bt;
        ZS_ASSERT_OK(zs_batcher_next(b, &bt, &e), &e);
        if (!bt) {
            bad = 1;
            break;
        }
        bad |= bt->ndocs < 1 || bt->tokens > budget;
        if (prev_tokens >= 0)
            bad |= !(prev_tokens == budget || prev_tokens + bt->len[0] > budget);
        for (int i = 0; i < bt->ndocs; i++) {
            int32_t len;
            int64_t id;
            bad |= !zs_trace_src_next(ref, &len, &id) || len != bt->len[i] || id != bt->source[i] ||
                   len < 1 || len > zs_trace_src_window(s);
        }
        prev_tokens = bt->tokens;
        tokens += bt->tokens;
        docs += bt->ndocs;
        zs_batch_free(bt);
    }
    const zs_batcher_counts *c = zs_batcher_counts_get(b);
    bad |= c->tokens != tokens || c->docs != docs || c->batches != 20;
    const zs_trace_src_counts *sc = zs_trace_src_counts_get(s);
    /* the source is ahead of the batches by the carried document, if any */
    int64_t in_flight = sc->tokens_out - tokens;
    bad |= in_flight < 0 || in_flight > budget;
    if (pol == ZS_LONG_TRUNCATE)
        bad |= sc->tokens_in != sc->tokens_out + sc->tokens_dropped;
    else
        bad |= sc->tokens_dropped != 0;
    if (bad) {
        fprintf(stderr, "batcher property failed: %s seed %llu budget %lld window %d %s\n", spec,
                (unsigned long long)seed, (long long)budget, window, zs_long_policy_name(pol));
        (*failures)++;
    }
    zs_batcher_free(b);
    zs_trace_src_free(s);
    zs_trace_src_free(ref);
}

static void test_batcher_properties(void)
{
    static const int64_t budgets[] = {4096, 65536, 131072, 1 << 20};
    static const int32_t windows[] = {0, 2048, 32768};
    int failures = 0, runs = 0;
    for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++)
        for (uint64_t seed = 1; seed <= 3; seed++)
            for (int bi = 0; bi < 4; bi++)
                for (int wi = 0; wi < 3; wi++)
                    for (int p = ZS_LONG_TRUNCATE; p <= ZS_LONG_SPLIT; p++, runs++)
                        check_batches(specs[si], seed, budgets[bi], windows[wi], (zs_long_policy)p,
                                      &failures);
    ZS_ASSERT_INT_EQ(failures, 0);
    CU_ASSERT(runs == 432);
}

static void test_window_conserves_tokens(void)
{
    for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
        zs_err e;
        zs_trace_src_cfg cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.seed = 11;
        cfg.window = 3000;
        cfg.policy = ZS_LONG_SPLIT;
        zs_trace_src *s;
        ZS_ASSERT_OK(zs_trace_src_open(specs[si], &cfg, &s, &e), &e);
        zs_trace *t;
        ZS_ASSERT_OK(zs_trace_src_collect(s, 5000, &t, &e), &e);
        const zs_trace_src_counts *c = zs_trace_src_counts_get(s);
        ZS_ASSERT_INT_EQ(c->docs_in, 5000);
        ZS_ASSERT_INT_EQ(zs_trace_tokens(t), c->tokens_in);
        ZS_ASSERT_INT_EQ(t->n, c->docs_out);
        int ok = 1;
        for (int64_t i = 0; i < t->n; i++)
            ok &= t->len[i] >= 1 && t->len[i] <= 3000;
        CU_ASSERT(ok);
        zs_trace_free(t);
        zs_trace_src_free(s);
    }
}

static void test_stats_properties(void)
{
    static const int64_t th[] = {256, 1024, 4096, 8192, 32768, 65536, 131072, 262144};
    int bad = 0;
    for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++)
        for (uint64_t seed = 1; seed <= 5; seed++) {
            zs_err e;
            zs_trace_src_cfg cfg;
            memset(&cfg, 0, sizeof cfg);
            cfg.seed = seed;
            zs_trace_src *s;
            ZS_ASSERT_OK(zs_trace_src_open(specs[si], &cfg, &s, &e), &e);
            zs_trace *t;
            ZS_ASSERT_OK(zs_trace_src_collect(s, 1 + (int64_t)seed * 997, &t, &e), &e);
            zs_trace_stats st;
            ZS_ASSERT_OK(zs_trace_stats_compute(t->len, t->n, th, 8, &st, &e), &e);
            bad |= !(st.min <= st.p10 && st.p10 <= st.median && st.median <= st.p90 &&
                     st.p90 <= st.p95 && st.p95 <= st.p99 && st.p99 <= st.p999 &&
                     st.p999 <= st.max && st.mean >= st.min && st.mean <= st.max);
            bad |= st.tokens != zs_trace_tokens(t) || st.n != t->n;
            for (int k = 0; k < 8; k++) {
                const zs_trace_tail *a = &st.tail[k];
                bad |=
                    a->attn_share < a->token_share - 1e-12 || a->token_share < a->doc_share - 1e-12;
                if (k)
                    bad |= a->docs > st.tail[k - 1].docs ||
                           a->token_share > st.tail[k - 1].token_share ||
                           a->attn_share > st.tail[k - 1].attn_share;
            }
            if (bad)
                fprintf(stderr, "stats property failed: %s seed %llu\n", specs[si],
                        (unsigned long long)seed);
            zs_trace_free(t);
            zs_trace_src_free(s);
        }
    CU_ASSERT(!bad);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"batcher_properties", test_batcher_properties},
                                         {"window_conserves_tokens", test_window_conserves_tokens},
                                         {"stats_properties", test_stats_properties},
                                         {NULL, NULL}};
    static const zs_test_suite suites[] = {{"prop_trace", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
