/* Packing into micro-batches: see zs_pack.h.
 *
 * WLB-LLM's packer per iteration (zs_wlb_packer_next):
 *   1. the pool starts with the documents carried from the last iteration
 *      and the outliers of every queue that holds at least nmicro of them
 *      (nmicro released, first in, first out, so every micro-batch can take
 *      one: outliers are delayed until they can be spread, never stacked);
 *   2. documents are drawn from the source until the pool holds nmicro x
 *      window tokens, the loader's global batch (the document crossing its
 *      end is cut there, or waits for the next batch); an outlier (longer than threshold[0]) goes
 * to its queue, which releases into the pool as soon as it holds nmicro and they fit; released
 * outliers count towards the batch, so the global batch is the baselines';
 *   3. the pool and the released outliers are packed by zs_pack_var (cap
 *      smax); what does not fit is carried to the next iteration.
 * Delays are counted per token in iterations between the batch a document
 * was drawn for and the batch that carries it. */
#include "zs_pack.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zs_sort.h"

double zs_pack_cost_quadratic(void *arg, int32_t len)
{
    const double *c = arg;
    return c[0] * (double)len * ((double)len + 1) / 2 + c[1] * (double)len;
}

static double cost_of(zs_pack_cost c, int32_t len)
{
    if (!c.fn) {
        static double unit[2] = {1, 0};
        return zs_pack_cost_quadratic(unit, len);
    }
    return c.fn(c.arg, len);
}

int32_t zs_pack_plain(const int32_t *len, int32_t n, int32_t window, int32_t *micro_of)
{
    int32_t k = -1;
    int64_t used = 0;
    for (int32_t i = 0; i < n; i++) {
        if (k < 0 || used + len[i] > window) {
            k++;
            used = 0;
        }
        micro_of[i] = k;
        used += len[i];
    }
    return k + 1;
}

int zs_pack_fixed(const int32_t *len, int32_t n, int32_t window, int32_t nmicro, zs_pack_cost cost,
                  int32_t *micro_of, int32_t *nused, zs_err *e)
{
    if (nmicro < 1 || window < 1)
        return zs_err_set(e, ZS_EINPUT, "fixed-length packing", "use at least one micro-batch",
                          "nmicro=%d, window=%d", nmicro, window);
    /* At most n extra micro-batches can be opened. */
    int32_t cap = nmicro + n;
    int32_t *o = zs_order_longest_first(len, n);
    double *load = calloc((size_t)cap, sizeof(double));
    int64_t *tok = calloc((size_t)cap, sizeof(int64_t));
    if (!o || !load || !tok) {
        free(o);
        free(load);
        free(tok);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    int32_t m = nmicro;
    for (int32_t i = 0; i < n; i++) {
        int32_t d = o[i], best = -1;
        for (int32_t k = 0; k < m; k++)
            if (tok[k] + len[d] <= window && (best < 0 || load[k] < load[best]))
                best = k;
        if (best < 0)
            best = m++;
        micro_of[d] = best;
        tok[best] += len[d];
        load[best] += cost_of(cost, len[d]);
    }
    *nused = m;
    free(o);
    free(load);
    free(tok);
    return ZS_OK;
}

int zs_pack_var(const int32_t *len, int32_t n, int32_t smax, int32_t nmicro, zs_pack_cost cost,
                int32_t *micro_of, zs_err *e)
{
    if (nmicro < 1 || smax < 1)
        return zs_err_set(e, ZS_EINPUT, "variable-length packing", "use at least one micro-batch",
                          "nmicro=%d, smax=%d", nmicro, smax);
    int32_t *o = zs_order_longest_first(len, n);
    double *load = calloc((size_t)nmicro, sizeof(double));
    int64_t *tok = calloc((size_t)nmicro, sizeof(int64_t));
    if (!o || !load || !tok) {
        free(o);
        free(load);
        free(tok);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    int left = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t d = o[i], least = 0, shortest = 0;
        for (int32_t k = 1; k < nmicro; k++) {
            if (load[k] < load[least])
                least = k;
            if (tok[k] < tok[shortest])
                shortest = k;
        }
        int32_t k = tok[least] + len[d] <= smax      ? least
                    : tok[shortest] + len[d] <= smax ? shortest
                                                     : -1;
        micro_of[d] = k;
        if (k < 0) {
            left++;
            continue;
        }
        tok[k] += len[d];
        load[k] += cost_of(cost, len[d]);
    }
    free(o);
    free(load);
    free(tok);
    return left;
}

double zs_pack_imbalance(const int32_t *len, int32_t n, const int32_t *micro_of, int32_t nmicro,
                         zs_pack_cost cost)
{
    double *w = calloc((size_t)(nmicro > 0 ? nmicro : 1), sizeof(double));
    if (!w)
        return 0;
    double total = 0, mx = 0;
    for (int32_t i = 0; i < n; i++)
        if (micro_of[i] >= 0 && micro_of[i] < nmicro) {
            double c = cost_of(cost, len[i]);
            w[micro_of[i]] += c;
            total += c;
        }
    for (int32_t k = 0; k < nmicro; k++)
        if (w[k] > mx)
            mx = w[k];
    free(w);
    return total > 0 ? mx * nmicro / total : 1.0;
}

int zs_batch_set_micro(zs_batch *b, const int32_t *micro_of, int32_t nmicro, zs_err *e)
{
    int32_t n = b->ndocs;
    int32_t *len = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    int64_t *src = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    int32_t *mo = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (!len || !src || !mo) {
        free(len);
        free(src);
        free(mo);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    int32_t j = 0;
    for (int32_t k = 0; k < nmicro; k++)
        for (int32_t i = 0; i < n; i++)
            if (micro_of[i] == k) {
                len[j] = b->len[i];
                src[j] = b->source[i];
                mo[j++] = k;
            }
    if (j != n) {
        free(len);
        free(src);
        free(mo);
        return zs_err_set(e, ZS_EINVALID, "micro-batch assignment", NULL,
                          "%d of %d documents have no micro-batch in [0, %d)", n - j, n, nmicro);
    }
    memcpy(b->len, len, sizeof(int32_t) * (size_t)n);
    memcpy(b->source, src, sizeof(int64_t) * (size_t)n);
    free(len);
    free(src);
    free(b->micro_of);
    b->micro_of = mo;
    b->nmicro = nmicro;
    return ZS_OK;
}

typedef struct bin {
    double cost;
    int32_t idx;
} bin;

static int cmp_bin(const void *a, const void *b)
{
    const bin *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

int zs_pack_fixed_window(zs_batch *const *in, int k, int32_t window, int32_t nmicro,
                         zs_pack_cost cost, zs_batch **out, zs_err *e)
{
    if (k < 1)
        return zs_err_set(e, ZS_EINPUT, "repack window", "use a window of at least one batch",
                          "window of %d batches", k);
    int64_t n64 = 0;
    for (int i = 0; i < k; i++)
        n64 += in[i]->ndocs;
    int32_t n = (int32_t)n64;
    int32_t *len = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int64_t *src = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int32_t *mo = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int32_t *rank = NULL;
    bin *bins = NULL;
    zs_batch **res = calloc((size_t)k, sizeof *res);
    int rc = ZS_OK;
    if (!len || !src || !mo || !res) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    n = 0;
    for (int i = 0; i < k; i++)
        for (int32_t d = 0; d < in[i]->ndocs; d++) {
            len[n] = in[i]->len[d];
            src[n++] = in[i]->source[d];
        }
    int32_t used;
    if ((rc = zs_pack_fixed(len, n, window, nmicro * k, cost, mo, &used, e)))
        goto out;
    bins = calloc((size_t)used, sizeof *bins);
    rank = malloc(sizeof(int32_t) * (size_t)used);
    if (!bins || !rank) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    for (int32_t b = 0; b < used; b++)
        bins[b].idx = b;
    for (int32_t d = 0; d < n; d++)
        bins[mo[d]].cost += cost_of(cost, len[d]);
    qsort(bins, (size_t)used, sizeof *bins, cmp_bin);
    for (int32_t r = 0; r < used; r++)
        rank[bins[r].idx] = r;
    /* Output batch i takes the sorted micro-batches [i*used/k, (i+1)*used/k). */
    for (int i = 0; i < k && rc == ZS_OK; i++) {
        int32_t lo = (int32_t)((int64_t)i * used / k), hi = (int32_t)((int64_t)(i + 1) * used / k);
        zs_batch *b = zs_batch_new(64);
        int32_t *m = NULL;
        if (!b) {
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
            break;
        }
        res[i] = b;
        b->index = in[i]->index;
        for (int32_t d = 0; d < n && rc == ZS_OK; d++)
            if (rank[mo[d]] >= lo && rank[mo[d]] < hi && zs_batch_push(b, len[d], src[d]))
                rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        if (rc == ZS_OK && !(m = malloc(sizeof(int32_t) * (size_t)(b->ndocs + 1))))
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        int32_t j = 0;
        for (int32_t d = 0; d < n && rc == ZS_OK; d++)
            if (rank[mo[d]] >= lo && rank[mo[d]] < hi)
                m[j++] = rank[mo[d]] - lo;
        if (rc == ZS_OK)
            rc = zs_batch_set_micro(b, m, hi - lo, e);
        free(m);
    }
out:
    if (rc == ZS_OK)
        for (int i = 0; i < k; i++)
            out[i] = res[i];
    else if (res)
        for (int i = 0; i < k; i++)
            zs_batch_free(res[i]);
    free(res);
    free(len);
    free(src);
    free(mo);
    free(bins);
    free(rank);
    return rc;
}

/* ---- the stateful packer ---------------------------------------------------- */

typedef struct wdoc {
    int32_t len;
    int64_t source;
    int64_t arrival; /* batch it was drawn for */
} wdoc;

typedef struct dvec {
    wdoc *v;
    int64_t n, cap, head; /* head: first live element (queues pop from the front) */
} dvec;

static int dvec_push(dvec *d, wdoc x)
{
    if (d->n == d->cap) {
        if (d->head > 0) {
            memmove(d->v, d->v + d->head, sizeof(wdoc) * (size_t)(d->n - d->head));
            d->n -= d->head;
            d->head = 0;
        }
        if (d->n == d->cap) {
            int64_t nc = d->cap ? d->cap * 2 : 64;
            wdoc *v = realloc(d->v, sizeof(wdoc) * (size_t)nc);
            if (!v)
                return ZS_ENOMEM;
            d->v = v;
            d->cap = nc;
        }
    }
    d->v[d->n++] = x;
    return ZS_OK;
}

static int64_t dvec_size(const dvec *d)
{
    return d->n - d->head;
}

struct zs_wlb_packer {
    zs_wlb_pack_cfg cfg;
    dvec queue[ZS_WLB_MAX_QUEUES];
    dvec carry;
    wdoc rest;           /* len > 0: the part of a document the last batch cut off */
    int64_t iter, iter0; /* iter0: the first batch counted (after a warm-up) */
    int exhausted;
    zs_wlb_pack_stats st;
};

int zs_wlb_packer_new(const zs_wlb_pack_cfg *cfg, zs_wlb_packer **out, zs_err *e)
{
    if (cfg->nmicro < 1 || cfg->window < 1)
        return zs_err_set(e, ZS_EINPUT, "wlb packer", "use nmicro >= 1 and window >= 1",
                          "nmicro=%d, window=%d", cfg->nmicro, cfg->window);
    if (cfg->nqueues < 0 || cfg->nqueues > ZS_WLB_MAX_QUEUES)
        return zs_err_set(e, ZS_EINPUT, "wlb packer: queues", "use 0 to 8 outlier queues",
                          "%d outlier queues", cfg->nqueues);
    zs_wlb_packer *p = calloc(1, sizeof *p);
    if (!p)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    p->cfg = *cfg;
    if (p->cfg.smax <= 0)
        p->cfg.smax = p->cfg.window > INT32_MAX / 2 ? INT32_MAX : 2 * p->cfg.window;
    int given = 0;
    for (int q = 0; q < cfg->nqueues; q++)
        given |= cfg->threshold[q] != 0;
    for (int q = 0; q < cfg->nqueues && !given; q++)
        p->cfg.threshold[q] = cfg->window >> (cfg->nqueues - q);
    for (int q = 0; q < p->cfg.nqueues; q++)
        if (p->cfg.threshold[q] < 1 || p->cfg.threshold[q] >= p->cfg.smax ||
            (q > 0 && p->cfg.threshold[q] <= p->cfg.threshold[q - 1])) {
            int32_t th = p->cfg.threshold[q], smax = p->cfg.smax;
            free(p);
            return zs_err_set(e, ZS_EINPUT, "wlb packer: thresholds",
                              "give ascending thresholds between 1 and smax",
                              "outlier threshold %d is %d (smax %d)", q, th, smax);
        }
    *out = p;
    return ZS_OK;
}

void zs_wlb_packer_free(zs_wlb_packer *p)
{
    if (!p)
        return;
    for (int q = 0; q < ZS_WLB_MAX_QUEUES; q++)
        free(p->queue[q].v);
    free(p->carry.v);
    free(p);
}

const zs_wlb_pack_stats *zs_wlb_packer_stats(const zs_wlb_packer *p)
{
    return &p->st;
}

const zs_wlb_pack_cfg *zs_wlb_packer_cfg(const zs_wlb_packer *p)
{
    return &p->cfg;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The queue of an outlier, or -1 for a regular document. */
static int queue_of(const zs_wlb_pack_cfg *c, int32_t len)
{
    int q = -1;
    for (int i = 0; i < c->nqueues; i++)
        if (len > c->threshold[i])
            q = i;
    return q;
}

/* Moves nmicro documents of queue Q (first in, first out) into the pool. */
static int release(dvec *Q, int64_t take, dvec *pool, int64_t *pool_tok)
{
    int rc = ZS_OK;
    for (int64_t i = 0; i < take && rc == ZS_OK; i++) {
        *pool_tok += Q->v[Q->head].len;
        rc = dvec_push(pool, Q->v[Q->head++]);
    }
    return rc;
}

/* The first nmicro documents of queue Q, in tokens. */
static int64_t release_tokens(const dvec *Q, int64_t take)
{
    int64_t t = 0;
    for (int64_t i = 0; i < take; i++)
        t += Q->v[Q->head + i].len;
    return t;
}

/* The next document of the stream: the part the last batch cut off, then
 * the source's. Returns 0 at the end of the source. */
static int draw(zs_wlb_packer *p, const zs_doc_stream *src, int32_t *len, int64_t *id)
{
    if (p->rest.len > 0) {
        *len = p->rest.len;
        *id = p->rest.source;
        p->rest.len = 0;
        return 1;
    }
    return src->next(src->arg, len, id);
}

/* The pool of the next batch, a global batch of nmicro x window tokens as
 * the loader gives Plain-4D (WLB-LLM holds the global batch fixed):
 * carried documents first, then every queue that can give each
 * micro-batch one outlier, then fresh documents until the batch is full.
 * An outlier goes to its queue, which releases at once when its nmicro fit
 * in what is left of the batch, else at the start of the next one;
 * released outliers count towards the batch. The regular document that
 * crosses the batch's end is cut there (cut_end: exactly nmicro x window
 * tokens, as a concatenate-and-cut loader gives) or waits whole for the
 * next batch (before, the pool took it whole: 4.8% more tokens per
 * iteration than the baselines at 7B-128K). At the end of the source,
 * everything left. */
static int gather(zs_wlb_packer *p, const zs_doc_stream *src, dvec *pool, zs_err *e)
{
    const zs_wlb_pack_cfg *c = &p->cfg;
    int64_t budget = (int64_t)c->nmicro * c->window;
    int rc = ZS_OK;
    int64_t pool_tok = 0;
    for (int64_t i = p->carry.head; i < p->carry.n && rc == ZS_OK; i++) {
        rc = dvec_push(pool, p->carry.v[i]);
        pool_tok += p->carry.v[i].len;
    }
    p->carry.n = p->carry.head = 0;
    for (int q = 0; q < c->nqueues && rc == ZS_OK; q++)
        if (dvec_size(&p->queue[q]) >= c->nmicro)
            rc = release(&p->queue[q], c->nmicro, pool, &pool_tok);
    while (rc == ZS_OK && pool_tok < budget && !p->exhausted) {
        int32_t len;
        int64_t id;
        if (!draw(p, src, &len, &id)) {
            p->exhausted = 1;
            break;
        }
        if (len > c->smax) {
            char w[96];
            snprintf(w, sizeof w, "document %lld of the trace", (long long)id);
            return zs_err_set(e, ZS_EINPUT, w,
                              "raise smax or cut documents at the window (--long split)",
                              "a document of %d tokens is longer than smax=%d", len, c->smax);
        }
        wdoc d = {len, id, p->iter};
        int q = queue_of(c, len);
        if (q < 0) {
            if (pool_tok + len > budget) {
                if (!c->cut_end) {
                    p->rest = (wdoc){len, id, p->iter + 1};
                    break;
                }
                d.len = (int32_t)(budget - pool_tok);
                p->rest = (wdoc){len - d.len, id, p->iter + 1};
            }
            rc = dvec_push(pool, d);
            pool_tok += d.len;
        } else if ((rc = dvec_push(&p->queue[q], d)) == ZS_OK &&
                   dvec_size(&p->queue[q]) >= c->nmicro &&
                   pool_tok + release_tokens(&p->queue[q], c->nmicro) <= budget) {
            rc = release(&p->queue[q], c->nmicro, pool, &pool_tok);
        }
    }
    int at_end = p->exhausted && pool->n == 0;
    for (int q = 0; q < c->nqueues && rc == ZS_OK && at_end; q++) {
        int64_t take = dvec_size(&p->queue[q]);
        p->st.flushed_docs += take;
        rc = release(&p->queue[q], take, pool, &pool_tok);
    }
    return rc ? zs_err_set(e, rc, NULL, NULL, "out of memory") : ZS_OK;
}

/* The statistics after a batch b is packed. */
static void count_batch(zs_wlb_packer *p, const zs_batch *b)
{
    const zs_wlb_pack_cfg *c = &p->cfg;
    p->st.imbalance_sum += zs_pack_imbalance(b->len, b->ndocs, b->micro_of, c->nmicro, c->cost);
    p->st.batches++;
    p->st.docs += b->ndocs;
    p->st.tokens += b->tokens;
    p->st.avg_delay_delayed =
        p->st.delayed_tokens ? p->st.delay_token_iters / (double)p->st.delayed_tokens : 0;
    p->st.avg_delay_all = p->st.tokens ? p->st.delay_token_iters / (double)p->st.tokens : 0;
    p->st.waiting_docs = dvec_size(&p->carry);
    p->st.waiting_tokens = 0;
    for (int64_t i = p->carry.head; i < p->carry.n; i++)
        p->st.waiting_tokens += p->carry.v[i].len;
    for (int q = 0; q < c->nqueues; q++) {
        p->st.waiting_docs += dvec_size(&p->queue[q]);
        for (int64_t i = p->queue[q].head; i < p->queue[q].n; i++)
            p->st.waiting_tokens += p->queue[q].v[i].len;
    }
}

int zs_wlb_packer_next(zs_wlb_packer *p, const zs_doc_stream *src, zs_batch **out, zs_err *e)
{
    double t0 = now_s();
    const zs_wlb_pack_cfg *c = &p->cfg;
    dvec pool = {0};
    *out = NULL;
    int rc = gather(p, src, &pool, e);
    if (rc == ZS_OK && pool.n == 0) {
        free(pool.v);
        return ZS_OK; /* nothing left anywhere */
    }
    /* Pack; what does not fit waits for the next batch. */
    int32_t n = (int32_t)pool.n;
    int32_t *len = calloc((size_t)(n + 1), sizeof(int32_t)); /* zeroed: gcc -O3 */
    int32_t *mo = malloc(sizeof(int32_t) * (size_t)(n + 1));
    int32_t *mo2 = malloc(sizeof(int32_t) * (size_t)(n + 1));
    zs_batch *b = zs_batch_new(n + 1);
    if (rc == ZS_OK && (!len || !mo || !mo2 || !b))
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    if (rc == ZS_OK) {
        for (int32_t i = 0; i < n; i++)
            len[i] = pool.v[i].len;
        int left = zs_pack_var(len, n, c->smax, c->nmicro, c->cost, mo, e);
        if (left < 0)
            rc = left;
    }
    int32_t j = 0;
    double waited = 0;
    for (int32_t i = 0; i < n && rc == ZS_OK; i++) {
        if (mo[i] < 0) {
            rc = dvec_push(&p->carry, pool.v[i]);
            continue;
        }
        if (zs_batch_push(b, len[i], pool.v[i].source))
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        mo2[j++] = mo[i];
        int64_t delay = p->iter - pool.v[i].arrival;
        if (delay > 0) {
            p->st.delayed_docs++;
            p->st.delayed_tokens += len[i];
            p->st.delay_token_iters += (double)delay * len[i];
            waited += (double)delay * len[i];
        }
    }
    if (rc == ZS_OK)
        rc = zs_batch_set_micro(b, mo2, c->nmicro, e);
    if (rc == ZS_OK) {
        b->wait_iters = b->tokens > 0 ? waited / (double)b->tokens : 0;
        b->index = (int32_t)(p->iter - p->iter0);
        count_batch(p, b);
        p->iter++;
        *out = b;
        b = NULL;
    }
    zs_batch_free(b);
    free(len);
    free(mo);
    free(mo2);
    free(pool.v);
    double dt = now_s() - t0;
    p->st.pack_seconds += dt;
    p->st.last_pack_seconds = dt;
    if (dt > p->st.max_pack_seconds)
        p->st.max_pack_seconds = dt;
    return rc;
}

int zs_wlb_packer_warmup(zs_wlb_packer *p, const zs_doc_stream *src, int n, zs_err *e)
{
    for (int i = 0; i < n; i++) {
        zs_batch *b = NULL;
        int rc = zs_wlb_packer_next(p, src, &b, e);
        if (rc)
            return rc;
        if (!b)
            break;
        zs_batch_free(b);
    }
    int64_t wd = p->st.waiting_docs, wt = p->st.waiting_tokens;
    memset(&p->st, 0, sizeof p->st);
    p->st.waiting_docs = wd;
    p->st.waiting_tokens = wt;
    p->iter0 = p->iter;
    return ZS_OK;
}

/* ---- as a batcher ----------------------------------------------------------- */

typedef struct wlb_batcher {
    zs_batcher base;
    zs_doc_stream src;
    zs_wlb_packer *p;
    void *owned;
} wlb_batcher;

static int wlb_next(zs_batcher *bb, zs_batch **out, zs_err *e)
{
    wlb_batcher *w = (wlb_batcher *)bb;
    int rc = zs_wlb_packer_next(w->p, &w->src, out, e);
    if (rc || !*out)
        return rc;
    bb->counts.batches++;
    bb->counts.docs += (*out)->ndocs;
    bb->counts.tokens += (*out)->tokens;
    bb->counts.budget_unused += bb->budget > (*out)->tokens ? bb->budget - (*out)->tokens : 0;
    bb->counts.docs_carried += dvec_size(&w->p->carry);
    for (int64_t i = w->p->carry.head; i < w->p->carry.n; i++)
        bb->counts.tokens_carried += w->p->carry.v[i].len;
    return ZS_OK;
}

static void wlb_free(zs_batcher *bb)
{
    wlb_batcher *w = (wlb_batcher *)bb;
    zs_wlb_packer_free(w->p);
    free(w->owned);
    free(w);
}

static const zs_batcher_ops wlb_ops = {"wlb-llm", wlb_next, wlb_free};

int zs_batcher_wlb_new_owning(zs_doc_stream src, const zs_wlb_pack_cfg *cfg, void *owned,
                              zs_batcher **out, zs_err *e)
{
    wlb_batcher *w = calloc(1, sizeof *w);
    if (!w) {
        free(owned);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    int rc = zs_wlb_packer_new(cfg, &w->p, e);
    if (rc) {
        free(owned);
        free(w);
        return rc;
    }
    w->base.ops = &wlb_ops;
    w->base.budget = (int64_t)cfg->nmicro * cfg->window;
    w->src = src;
    w->owned = owned;
    *out = &w->base;
    return ZS_OK;
}

int zs_batcher_wlb_new_warm(zs_doc_stream src, const zs_wlb_pack_cfg *cfg, int warmup, void *owned,
                            zs_batcher **out, zs_err *e)
{
    zs_batcher *b = NULL;
    int rc = zs_batcher_wlb_new_owning(src, cfg, owned, &b, e);
    if (rc)
        return rc;
    wlb_batcher *w = (wlb_batcher *)b;
    if ((rc = zs_wlb_packer_warmup(w->p, &w->src, warmup, e))) {
        zs_batcher_free(b);
        return rc;
    }
    *out = b;
    return ZS_OK;
}

int zs_batcher_wlb_new(zs_doc_stream src, const zs_wlb_pack_cfg *cfg, zs_batcher **out, zs_err *e)
{
    return zs_batcher_wlb_new_owning(src, cfg, NULL, out, e);
}

zs_wlb_packer *zs_batcher_wlb_packer(zs_batcher *b)
{
    return b && b->ops == &wlb_ops ? ((wlb_batcher *)b)->p : NULL;
}
