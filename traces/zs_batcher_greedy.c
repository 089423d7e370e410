/* The greedy batcher: see zs_batcher_greedy.h. */
#include "zs_batcher_greedy.h"

#include <stdlib.h>

typedef struct greedy {
    zs_batcher base;
    zs_trace_src *src;
    int cycle;
    int has_carry; /* a document that did not fit the previous batch */
    int32_t carry_len;
    int64_t carry_id;
    int done;
} greedy;

/* One document from the source, restarting it when cycling. Returns 1 or 0. */
static int draw(greedy *g, int32_t *len, int64_t *id)
{
    if (zs_trace_src_next(g->src, len, id))
        return 1;
    if (!g->cycle || zs_trace_src_counts_get(g->src)->docs_out == 0)
        return 0;
    zs_trace_src_reset(g->src);
    g->base.counts.epochs++;
    return zs_trace_src_next(g->src, len, id);
}

static int greedy_next(zs_batcher *b, zs_batch **out, zs_err *e)
{
    greedy *g = (greedy *)b;
    *out = NULL;
    if (g->done && !g->has_carry)
        return ZS_OK;
    zs_batch *batch = zs_batch_new(64);
    if (!batch)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory building a batch");
    int rc = ZS_OK;
    if (g->has_carry) {
        rc = zs_batch_push(batch, g->carry_len, g->carry_id);
        g->has_carry = 0;
    }
    /* Fill until the budget is met exactly, the next document does not fit
     * (it is carried), or the source runs dry. */
    while (rc == ZS_OK && !g->done && batch->tokens < b->budget) {
        int32_t len;
        int64_t id;
        if (!draw(g, &len, &id)) {
            g->done = 1;
            break;
        }
        if (batch->tokens + len <= b->budget) {
            rc = zs_batch_push(batch, len, id);
        } else {
            g->has_carry = 1;
            g->carry_len = len;
            g->carry_id = id;
            b->counts.docs_carried++;
            b->counts.tokens_carried += len;
            break;
        }
    }
    if (rc) {
        zs_batch_free(batch);
        return zs_err_set(e, rc, NULL, NULL, "out of memory building a batch");
    }
    if (batch->ndocs == 0) {
        zs_batch_free(batch);
        return ZS_OK;
    }
    batch->index = (int32_t)b->counts.batches;
    b->counts.batches++;
    b->counts.docs += batch->ndocs;
    b->counts.tokens += batch->tokens;
    b->counts.budget_unused += b->budget - batch->tokens;
    *out = batch;
    return ZS_OK;
}

static void greedy_free(zs_batcher *b)
{
    free((greedy *)b);
}

static const zs_batcher_ops greedy_ops = {"greedy", greedy_next, greedy_free};

int zs_batcher_greedy_new(zs_trace_src *src, const zs_batcher_cfg *cfg, zs_batcher **out, zs_err *e)
{
    if (cfg->budget < 1 || cfg->budget > ZS_TRACE_MAX_LEN * (int64_t)1024)
        return zs_err_set(e, ZS_EINPUT, "--budget", "give a token budget >= 1 per global batch",
                          "bad token budget %lld", (long long)cfg->budget);
    greedy *g = calloc(1, sizeof *g);
    if (!g)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    g->base.ops = &greedy_ops;
    g->base.budget = cfg->budget;
    g->src = src;
    g->cycle = cfg->cycle;
    /* A document longer than the budget can never fit a batch, so the
     * window is at most the budget. */
    int64_t w = cfg->window > 0 && cfg->window < cfg->budget ? cfg->window : cfg->budget;
    if (w > ZS_TRACE_MAX_LEN)
        w = ZS_TRACE_MAX_LEN;
    int32_t cur = zs_trace_src_window(src);
    if (cur == 0 || cur > w)
        zs_trace_src_set_window(src, (int32_t)w,
                                cfg->policy == ZS_LONG_KEEP ? ZS_LONG_SPLIT : cfg->policy);
    *out = &g->base;
    return ZS_OK;
}
