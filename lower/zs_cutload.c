/* The concatenate-and-cut loader: see zs_cutload.h. */
#include "zs_cutload.h"

#include <stdlib.h>
#include <string.h>

#include "zs_sort.h"

static double cost_of(zs_pack_cost c, int32_t len)
{
    if (!c.fn) {
        static double unit[2] = {1, 0};
        return zs_pack_cost_quadratic(unit, len);
    }
    return c.fn(c.arg, len);
}

int32_t zs_pack_fixed_cut(const int32_t *len, const int64_t *src, int32_t n, int32_t nwin,
                          int32_t window, zs_pack_cost cost, int32_t *out_len, int64_t *out_src,
                          int32_t *out_win, zs_err *e)
{
    if (nwin < 1 || window < 1)
        return zs_err_set(e, ZS_EINPUT, "fixed-length packing", "use at least one window",
                          "%d windows of %d tokens", nwin, window);
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++)
        total += len[i];
    if (total > (int64_t)nwin * window)
        return zs_err_set(e, ZS_EINVALID, "fixed-length packing", NULL,
                          "%lld tokens do not fit %d windows of %d", (long long)total, nwin,
                          window);
    int32_t *o = zs_order_longest_first(len, n);
    double *load = calloc((size_t)nwin, sizeof(double));
    int64_t *room = malloc(sizeof(int64_t) * (size_t)nwin);
    if (!o || !load || !room) {
        free(o);
        free(load);
        free(room);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int32_t w = 0; w < nwin; w++)
        room[w] = window;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t d = o[i], left = len[d];
        while (left > 0) {
            int32_t best = -1, most = 0;
            for (int32_t w = 0; w < nwin; w++) {
                if (room[w] >= left && (best < 0 || load[w] < load[best]))
                    best = w;
                if (room[w] > room[most])
                    most = w;
            }
            /* No window holds it whole: fill the roomiest one, go on with the
             * rest (the totals fit, so this ends). */
            int32_t take = best >= 0 ? left : (int32_t)room[most];
            int32_t w = best >= 0 ? best : most;
            out_len[m] = take;
            out_src[m] = src ? src[d] : -1;
            out_win[m++] = w;
            room[w] -= take;
            load[w] += cost_of(cost, take);
            left -= take;
        }
    }
    free(o);
    free(load);
    free(room);
    return m;
}

/* ---- the loader ------------------------------------------------------------- */

typedef struct piece {
    int32_t len;
    int64_t src;
} piece;

typedef struct cutload {
    zs_batcher base;
    zs_doc_stream src;
    zs_cutload_cfg cfg;
    void *owned;
    int has_carry, exhausted;
    int32_t carry_len;
    int64_t carry_id;
    zs_batch **ready; /* repacked batches not yet handed out: ready[head .. n) */
    int nready, head;
} cutload;

/* The next nmicro windows of the stream as pieces, window by window: pieces
 * get their window in *win (relative to win0). Returns the windows used
 * (0 when the stream is dry). */
static int cut_windows(cutload *c, int32_t win0, piece **pv, int32_t **wv, int32_t *np,
                       int32_t *cap, zs_err *e)
{
    int used = 0;
    for (int w = 0; w < c->cfg.nmicro; w++) {
        int64_t fill = 0;
        while (fill < c->cfg.window) {
            if (!c->has_carry) {
                if (c->exhausted || !c->src.next(c->src.arg, &c->carry_len, &c->carry_id)) {
                    c->exhausted = 1;
                    break;
                }
                if (c->carry_len < 1)
                    continue;
                c->has_carry = 1;
            }
            int32_t take = c->carry_len;
            if (take > c->cfg.window - fill)
                take = (int32_t)(c->cfg.window - fill);
            if (*np == *cap) {
                int32_t nc = *cap ? *cap * 2 : 256;
                piece *p = realloc(*pv, sizeof(piece) * (size_t)nc);
                if (p)
                    *pv = p;
                int32_t *q = p ? realloc(*wv, sizeof(int32_t) * (size_t)nc) : NULL;
                if (!p || !q)
                    return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
                *wv = q;
                *cap = nc;
            }
            (*pv)[*np] = (piece){take, c->carry_id};
            (*wv)[(*np)++] = win0 + w;
            fill += take;
            c->carry_len -= take;
            if (c->carry_len == 0)
                c->has_carry = 0;
        }
        if (fill == 0)
            break;
        used++;
        if (fill < c->cfg.window)
            break; /* the stream ran dry inside this window */
    }
    return used;
}

static int make_batch(cutload *c, const piece *p, const int32_t *win, int32_t n, int32_t win0,
                      int32_t nwin, zs_batch **out, zs_err *e)
{
    zs_batch *b = zs_batch_new(n + 1);
    int32_t *mo = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int rc = b && mo ? ZS_OK : zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int32_t k = 0;
    for (int32_t i = 0; i < n && !rc; i++)
        if (win[i] >= win0 && win[i] < win0 + nwin) {
            if (zs_batch_push(b, p[i].len, p[i].src))
                rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
            mo[k++] = win[i] - win0;
        }
    if (!rc)
        rc = zs_batch_set_micro(b, mo, nwin, e);
    free(mo);
    if (rc) {
        zs_batch_free(b);
        return rc;
    }
    *out = b;
    return ZS_OK;
}

typedef struct wcost {
    double cost;
    int32_t idx;
} wcost;

static int cmp_wcost(const void *a, const void *b)
{
    const wcost *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/* Fixed-4D: k loader batches pooled, repacked with cuts, handed out as k
 * batches of similar windows. */
static int repack(cutload *c, const piece *p, int32_t n, int32_t nwin, zs_err *e)
{
    int k = c->cfg.repack, rc = ZS_OK;
    int32_t *len = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int64_t *src = malloc(sizeof(int64_t) * (size_t)(n + 1));
    piece *q = malloc(sizeof(piece) * (size_t)(n + nwin + 1));
    int32_t *ql = malloc(sizeof(int32_t) * (size_t)(n + nwin + 1));
    int64_t *qs = malloc(sizeof(int64_t) * (size_t)(n + nwin + 1));
    int32_t *qw = malloc(sizeof(int32_t) * (size_t)(n + nwin + 1));
    wcost *wc = calloc((size_t)nwin, sizeof *wc);
    int32_t *rank = malloc(sizeof(int32_t) * (size_t)nwin);
    c->ready = calloc((size_t)k, sizeof(zs_batch *));
    c->nready = c->head = 0;
    if (!len || !src || !q || !ql || !qs || !qw || !wc || !rank || !c->ready) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int32_t i = 0; i < n; i++) {
        len[i] = p[i].len;
        src[i] = p[i].src;
    }
    int32_t m = zs_pack_fixed_cut(len, src, n, nwin, c->cfg.window, c->cfg.cost, ql, qs, qw, e);
    if (m < 0) {
        rc = m;
        goto out;
    }
    for (int32_t w = 0; w < nwin; w++)
        wc[w].idx = w;
    for (int32_t i = 0; i < m; i++) {
        q[i] = (piece){ql[i], qs[i]};
        wc[qw[i]].cost += cost_of(c->cfg.cost, ql[i]);
    }
    qsort(wc, (size_t)nwin, sizeof *wc, cmp_wcost);
    for (int32_t r = 0; r < nwin; r++)
        rank[wc[r].idx] = r;
    for (int32_t i = 0; i < m; i++)
        qw[i] = rank[qw[i]];
    /* Batch i takes the sorted windows [i*nwin/k, (i+1)*nwin/k). */
    for (int i = 0; i < k && !rc; i++) {
        int32_t lo = (int32_t)((int64_t)i * nwin / k), hi = (int32_t)((int64_t)(i + 1) * nwin / k);
        if (hi > lo && !(rc = make_batch(c, q, qw, m, lo, hi - lo, &c->ready[c->nready], e)))
            c->nready++;
    }
out:
    free(len);
    free(src);
    free(q);
    free(ql);
    free(qs);
    free(qw);
    free(wc);
    free(rank);
    return rc;
}

static void drop_ready(cutload *c)
{
    for (int i = c->head; i < c->nready; i++)
        zs_batch_free(c->ready[i]);
    free(c->ready);
    c->ready = NULL;
    c->nready = c->head = 0;
}

static int cut_next(zs_batcher *bb, zs_batch **out, zs_err *e)
{
    cutload *c = (cutload *)bb;
    *out = NULL;
    if (c->head == c->nready) {
        drop_ready(c);
        int k = c->cfg.repack > 0 ? c->cfg.repack : 1;
        piece *p = NULL;
        int32_t *w = NULL, n = 0, cap = 0, nwin = 0;
        int rc = ZS_OK;
        for (int i = 0; i < k && !rc; i++) {
            int used = cut_windows(c, nwin, &p, &w, &n, &cap, e);
            if (used < 0)
                rc = used;
            else
                nwin += used;
            if (used < c->cfg.nmicro)
                break;
        }
        if (!rc && nwin > 0) {
            if (c->cfg.repack > 0) {
                rc = repack(c, p, n, nwin, e);
            } else {
                c->ready = calloc(1, sizeof(zs_batch *));
                rc = c->ready ? make_batch(c, p, w, n, 0, nwin, &c->ready[0], e)
                              : zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
                c->nready = rc ? 0 : 1;
            }
        }
        free(p);
        free(w);
        if (rc) {
            drop_ready(c);
            return rc;
        }
        if (c->nready == 0)
            return ZS_OK;
    }
    zs_batch *b = c->ready[c->head];
    c->ready[c->head++] = NULL;
    b->index = (int32_t)bb->counts.batches;
    bb->counts.batches++;
    bb->counts.docs += b->ndocs;
    bb->counts.tokens += b->tokens;
    bb->counts.budget_unused += bb->budget > b->tokens ? bb->budget - b->tokens : 0;
    *out = b;
    return ZS_OK;
}

static void cut_free(zs_batcher *bb)
{
    cutload *c = (cutload *)bb;
    drop_ready(c);
    free(c->owned);
    free(c);
}

static const zs_batcher_ops cut_ops = {"concatenate-and-cut", cut_next, cut_free};

int zs_batcher_cut_new(zs_doc_stream src, const zs_cutload_cfg *cfg, void *owned, zs_batcher **out,
                       zs_err *e)
{
    if (cfg->nmicro < 1 || cfg->window < 1 || cfg->repack < 0 || cfg->repack > 1024) {
        free(owned);
        return zs_err_set(e, ZS_EINPUT, "concatenate-and-cut loader",
                          "use nmicro >= 1, window >= 1 and a repack window of 0 to 1024",
                          "nmicro=%d, window=%d, repack=%d", cfg->nmicro, cfg->window, cfg->repack);
    }
    cutload *c = calloc(1, sizeof *c);
    if (!c) {
        free(owned);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    c->base.ops = &cut_ops;
    c->base.budget = (int64_t)cfg->nmicro * cfg->window;
    c->src = src;
    c->cfg = *cfg;
    c->owned = owned;
    *out = &c->base;
    return ZS_OK;
}
