/* The auto planner's search: see zs_auto_search_internal.h. */
#include "zs_auto_search_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct item {
    double w;
    int32_t d;
} item;

/* Most work first, ties by batch index. */
static int cmp_item(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return (x->d > y->d) - (x->d < y->d);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

typedef struct ws {
    const zs_auto_in *in;
    double *w;       /* per document: GPU-seconds per layer kept whole on one GPU */
    double *ring_t;  /* per document: seconds per layer per GPU on its node's ring, -1: not asked */
    double *suf;     /* the node being chosen: suf[i] = sum of w over its documents i .. n - 1 */
    item *order;     /* documents, most work first */
    int *node_of;    /* per document: its node, -1 when it spans nodes */
    int *span_first; /* per document: first node of its window (span documents) */
    int *span_m;     /* per document: nodes of its window, 0 when it does not span */
    double *base_att; /* per node: seconds per layer per GPU of span units' attention */
    double *base_lin; /* ... and of their linear modules */
    int64_t *basetok; /* per node: tokens per GPU of span units */
    double *nload;    /* per node: GPU-seconds assigned */
    int64_t *ntok;    /* per node: tokens assigned (without span units) */
    /* scratch for pricing one node, G or G / u entries */
    double *load, *lin, *locw, *ex, *hid, *ul;
    int64_t *tok, *ut, *ltok; /* ltok: tokens of local documents */
    int rmode; /* pricing with remapping: local documents placed on attention alone */
} ws;

static void ws_free(ws *W)
{
    free(W->w);
    free(W->ring_t);
    free(W->suf);
    free(W->order);
    free(W->node_of);
    free(W->span_first);
    free(W->span_m);
    free(W->base_att);
    free(W->base_lin);
    free(W->basetok);
    free(W->nload);
    free(W->ntok);
    free(W->load);
    free(W->lin);
    free(W->hid);
    free(W->locw);
    free(W->ex);
    free(W->ul);
    free(W->tok);
    free(W->ut);
    free(W->ltok);
}

static int ws_init(ws *W, const zs_auto_in *in, zs_err *e)
{
    size_t nd = (size_t)in->ndocs + 1, nn = (size_t)in->nodes, G = (size_t)in->G;
    memset(W, 0, sizeof *W);
    W->in = in;
    W->w = malloc(sizeof(double) * nd);
    W->ring_t = malloc(sizeof(double) * nd);
    W->suf = malloc(sizeof(double) * nd);
    W->order = malloc(sizeof(item) * nd);
    W->node_of = malloc(sizeof(int) * nd);
    W->span_first = calloc(nd, sizeof(int));
    W->span_m = calloc(nd, sizeof(int));
    W->base_att = calloc(nn, sizeof(double));
    W->base_lin = calloc(nn, sizeof(double));
    W->basetok = calloc(nn, sizeof(int64_t));
    W->nload = calloc(nn, sizeof(double));
    W->ntok = calloc(nn, sizeof(int64_t));
    W->load = malloc(sizeof(double) * G);
    W->lin = malloc(sizeof(double) * G);
    W->hid = malloc(sizeof(double) * G);
    W->locw = malloc(sizeof(double) * G);
    W->ex = malloc(sizeof(double) * G);
    W->ul = malloc(sizeof(double) * G);
    W->tok = malloc(sizeof(int64_t) * G);
    W->ut = malloc(sizeof(int64_t) * G);
    W->ltok = malloc(sizeof(int64_t) * G);
    if (!W->ltok || !W->w || !W->ring_t || !W->suf || !W->order || !W->node_of || !W->span_first ||
        !W->span_m || !W->base_att || !W->base_lin || !W->basetok || !W->nload || !W->ntok ||
        !W->load || !W->lin || !W->hid || !W->locw || !W->ex || !W->ul || !W->tok || !W->ut) {
        ws_free(W);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int32_t d = 0; d < in->ndocs; d++) {
        W->w[d] = in->attn_full[d] + (double)in->len[d] * in->lin_tok;
        W->order[d] = (item){W->w[d], d};
        W->node_of[d] = -1;
        W->ring_t[d] = -1;
    }
    qsort(W->order, (size_t)in->ndocs, sizeof(item), cmp_item);
    return ZS_OK;
}

/* Tokens per GPU of a document over a window of m nodes: zigzag chunks of
 * a cut into 2 x (m G) pieces, padded. */
static int64_t span_share(const zs_auto_in *in, int32_t len, int m)
{
    int64_t g = (int64_t)m * in->G;
    return 2 * (((int64_t)len + 2 * g - 1) / (2 * g));
}

static int doc_error(int32_t d, int32_t len, const char *fix, const char *what, zs_err *e)
{
    char w[64];
    snprintf(w, sizeof w, "document %d of the batch", d);
    return zs_err_set(e, ZS_EINPUT, w, fix, "%s (%d tokens)", what, len);
}

/* The window a document needs: 0 when it stays inside one node. */
static int span_width(ws *W, int32_t d, double avg, int *m_out, zs_err *e)
{
    const zs_auto_in *in = W->in;
    int32_t len = in->len[d];
    int64_t in_node = in->u > 1 ? ((int64_t)len + in->u - 1) / in->u : len;
    int m = 0;
    if (in_node > in->cap) { /* does not fit one node's layouts: smallest window that holds it */
        m = in->u > 1 ? 2 : 1;
        while (m <= in->nodes && span_share(in, len, m) > in->cap)
            m++;
    }
    double lim = avg * (in->span_frac > 0 ? in->span_frac : 1);
    if (in->span && in->nodes > 1 && lim > 0 && W->w[d] > lim) {
        double mw = ceil(W->w[d] / lim);
        int mm = mw < in->nodes ? (int)mw : in->nodes;
        if (mm > m)
            m = mm;
    }
    if (m > in->nodes || (m > 0 && span_share(in, len, m) > in->cap))
        return doc_error(d, len, "use more nodes, recomputation or a higher ZeRO stage",
                         "no window of nodes holds this document", e);
    if (m > 0 && !in->span && !(m == 1 && in->u == 1))
        return doc_error(d, len, "allow documents to span nodes (span=1)",
                         "this document does not fit one node's GPUs", e);
    *m_out = m;
    return ZS_OK;
}

/* Puts document d over the window of m consecutive nodes whose busiest
 * node is least loaded among those with room for its share; 0 when no
 * window has room. */
static int put_span(ws *W, int32_t d, int m)
{
    const zs_auto_in *in = W->in;
    int N = in->nodes, G = in->G, best = -1;
    int64_t share = span_share(in, in->len[d], m);
    double bestv = 0;
    for (int s0 = 0; s0 + m <= N; s0++) {
        double v = 0;
        int room = 1;
        for (int x = s0; x < s0 + m && room; x++) {
            v = W->nload[x] > v ? W->nload[x] : v;
            room = W->ntok[x] + (int64_t)G * (W->basetok[x] + share) <= (int64_t)G * in->cap;
        }
        if (room && (best < 0 || v < bestv)) {
            bestv = v;
            best = s0;
        }
    }
    if (best < 0)
        return 0;
    double ta = in->span_time(in->arg, d, m), tl = (double)share * in->lin_tok;
    for (int x = best; x < best + m; x++) {
        W->nload[x] += (ta + tl) * G;
        W->base_att[x] += ta;
        W->base_lin[x] += tl;
        W->basetok[x] += share;
    }
    W->span_first[d] = best;
    W->span_m[d] = m;
    return 1;
}

/* Node x has room for document d: its tokens, and its largest share (a
 * GPU's, or a Ulysses group's GPU's) beside the node's span shares. */
static int node_room(const ws *W, int x, int32_t len)
{
    const zs_auto_in *in = W->in;
    int64_t share = in->u > 1 ? ((int64_t)len + in->u - 1) / in->u : len;
    return W->ntok[x] + len <= (int64_t)in->G * (in->cap - W->basetok[x]) &&
           share <= in->cap - W->basetok[x];
}

/* A binary heap of nodes by (load, index): the least-loaded node first,
 * ties to the lower index, as a scan would find it. */
static int heap_less(const ws *W, int a, int b)
{
    return W->nload[a] < W->nload[b] || (W->nload[a] == W->nload[b] && a < b);
}

static void heap_down(const ws *W, int *h, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && heap_less(W, h[l], h[m]))
            m = l;
        if (r < n && heap_less(W, h[r], h[m]))
            m = r;
        if (m == i)
            return;
        int t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void heap_push(const ws *W, int *h, int *n, int x)
{
    int i = (*n)++;
    h[i] = x;
    while (i > 0 && heap_less(W, h[i], h[(i - 1) / 2])) {
        int p = (i - 1) / 2, t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

static int heap_pop(const ws *W, int *h, int *n)
{
    int x = h[0];
    h[0] = h[--*n];
    heap_down(W, h, *n, 0);
    return x;
}

static void heap_build(const ws *W, int *h, int *n)
{
    *n = W->in->nodes;
    for (int x = 0; x < *n; x++)
        h[x] = x;
    for (int i = *n / 2 - 1; i >= 0; i--)
        heap_down(W, h, *n, i);
}

/* The least-loaded node with room for document d (-1: none), through the
 * heap h (hn entries; aside: scratch of N). */
static int lpt_node(ws *W, int32_t d, int *h, int *hn, int *aside)
{
    int na = 0, best = -1;
    while (*hn > 0) {
        int x = heap_pop(W, h, hn);
        if (node_room(W, x, W->in->len[d])) {
            best = x;
            break;
        }
        aside[na++] = x;
    }
    if (best >= 0) {
        W->node_of[d] = best;
        W->nload[best] += W->w[d];
        W->ntok[best] += W->in->len[d];
        heap_push(W, h, hn, best);
    }
    for (int i = 0; i < na; i++)
        heap_push(W, h, hn, aside[i]);
    return best;
}

/* Hierarchical partition: span windows for the documents of most work,
 * then LPT over the nodes; a document no node has room for spans the
 * narrowest window that has. */
static int partition(ws *W, zs_err *e)
{
    const zs_auto_in *in = W->in;
    int N = in->nodes, rc = ZS_OK, hn = 0;
    double total = 0;
    for (int32_t d = 0; d < in->ndocs; d++)
        total += W->w[d];
    double avg = total / N;
    for (int32_t i = 0; i < in->ndocs; i++) {
        int32_t d = W->order[i].d;
        int m = 0;
        if ((rc = span_width(W, d, avg, &m, e)))
            return rc;
        while (m > 0 && m <= N && !put_span(W, d, m))
            m++;
        if (m > N)
            return doc_error(d, in->len[d], "use more nodes or a smaller batch",
                             "no window of nodes has room left for this document", e);
    }
    int *h = malloc(sizeof(int) * (size_t)N), *aside = malloc(sizeof(int) * (size_t)N);
    if (!h || !aside) {
        free(h);
        free(aside);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    heap_build(W, h, &hn);
    for (int32_t i = 0; i < in->ndocs && !rc; i++) {
        int32_t d = W->order[i].d;
        if (W->span_m[d] || lpt_node(W, d, h, &hn, aside) >= 0)
            continue;
        int m = in->u > 1 ? 2 : 1;
        while (in->span && m <= N && !put_span(W, d, m))
            m++;
        if (!in->span || m > N)
            rc = doc_error(d, in->len[d], "use more nodes or a smaller batch",
                           "no node has room left for this document", e);
        heap_build(W, h, &hn); /* the window's loads changed */
    }
    free(h);
    free(aside);
    return rc;
}

/* Seconds per layer per GPU of document d on its node's ring (the window
 * of one node), asked of the caller once per document. */
static double ring_time(ws *W, int32_t d)
{
    if (W->ring_t[d] < 0)
        W->ring_t[d] = W->in->span_time(W->in->arg, d, 1);
    return W->ring_t[d];
}

/* Predicted seconds per layer of GPU g as priced so far; when pricing
 * with remapping, its attention alone (its linear modules are the node's
 * mean, the same on every GPU). */
static double gpu_time(const ws *W, int g)
{
    double under = W->hid[g] < W->locw[g] ? W->hid[g] : W->locw[g];
    return W->load[g] + W->ex[g] - under + (W->rmode ? 0 : W->lin[g]);
}

/* What moving document d between GPUs moves of their times. */
static double doc_weight(const ws *W, int32_t d)
{
    return W->rmode ? W->in->attn_full[d] : W->w[d];
}

static void move_doc(ws *W, int32_t d, int from, int to)
{
    const zs_auto_in *in = W->in;
    double a = in->attn_full[d], l = (double)in->len[d] * in->lin_tok;
    W->load[from] -= a;
    W->locw[from] -= a;
    W->lin[from] -= l;
    W->tok[from] -= in->len[d];
    W->ltok[from] -= in->len[d];
    W->ltok[to] += in->len[d];
    W->load[to] += a;
    W->locw[to] += a;
    W->lin[to] += l;
    W->tok[to] += in->len[d];
}

/* LPT leaves GPUs apart by up to a document's work, which matters when a
 * GPU holds only a few: move one local document from the slowest GPU to
 * the fastest, or swap a pair, while that lowers the slower of the two
 * (at most G rounds; local documents it[k .. n), GPU in assign). */
static void improve(ws *W, const item *it, int n, int k, int *assign)
{
    const zs_auto_in *in = W->in;
    int G = in->G;
    for (int round = 0; round < G; round++) {
        int hi = 0, lo = 0;
        for (int g = 1; g < G; g++) {
            if (gpu_time(W, g) > gpu_time(W, hi))
                hi = g;
            if (gpu_time(W, g) < gpu_time(W, lo))
                lo = g;
        }
        double thi = gpu_time(W, hi), tlo = gpu_time(W, lo), best = thi * (1 - 1e-9);
        int bi = -1, bj = -1;
        for (int i = k; i < n && hi != lo; i++) {
            if (assign[i] != hi)
                continue;
            int32_t di = it[i].d;
            double wi = doc_weight(W, di);
            if (W->tok[lo] + in->len[di] <= in->cap && fmax(thi - wi, tlo + wi) < best) {
                best = fmax(thi - wi, tlo + wi);
                bi = i;
                bj = -1;
            }
            for (int j = k; j < n; j++) {
                if (assign[j] != lo || doc_weight(W, it[j].d) >= wi)
                    continue;
                int32_t dj = it[j].d;
                double wj = doc_weight(W, dj), v = fmax(thi - wi + wj, tlo + wi - wj);
                if (v < best && W->tok[lo] - in->len[dj] + in->len[di] <= in->cap &&
                    W->tok[hi] - in->len[di] + in->len[dj] <= in->cap) {
                    best = v;
                    bi = i;
                    bj = j;
                }
            }
        }
        if (bi < 0)
            return;
        move_doc(W, it[bi].d, hi, lo);
        assign[bi] = lo;
        if (bj >= 0) {
            move_doc(W, it[bj].d, lo, hi);
            assign[bj] = hi;
        }
    }
}

/* Raises the node's slowest GPU time (mk), attention (ma) and linear
 * modules (ml) so far to GPU g's. */
static void gpu_max(const ws *W, int g, double *mk, double *ma, double *ml)
{
    double under = W->hid[g] < W->locw[g] ? W->hid[g] : W->locw[g];
    double a = W->load[g] + W->ex[g] - under, t = a + (W->rmode ? 0 : W->lin[g]);
    *mk = t > *mk ? t : *mk;
    *ma = a > *ma ? a : *ma;
    *ml = W->lin[g] > *ml ? W->lin[g] : *ml;
}

/* The node as placed, priced with remapping: every GPU's linear modules
 * at the node's mean, plus moving the tokens between it and the node's
 * mean. HUGE_VAL when a GPU would send more tokens than its local
 * documents hold (only those move). */
static double remap_price(const ws *W)
{
    const zs_auto_in *in = W->in;
    int G = in->G;
    int64_t T = 0;
    double L = 0, mk = 0, ma = 0, ml = 0;
    for (int g = 0; g < G; g++) {
        T += W->tok[g];
        L += W->lin[g];
    }
    int64_t lo = T / G;
    for (int g = 0; g < G; g++) {
        if (W->tok[g] - lo > W->ltok[g])
            return HUGE_VAL;
        double under = W->hid[g] < W->locw[g] ? W->hid[g] : W->locw[g];
        double a = W->load[g] + W->ex[g] - under;
        double moved = fabs((double)W->tok[g] - (double)T / G);
        double l = L / G + (moved > 0.5 ? in->remap_time(in->arg, moved) : 0);
        mk = fmax(mk, a + l);
        ma = fmax(ma, a);
        ml = fmax(ml, l);
    }
    return in->moe ? ma + ml : mk;
}

/* Predicted seconds per layer of node x's slowest GPU when its k documents
 * of most work (it[0 .. k)) go head-parallel (ring = 0) or on the node's
 * ring (ring = 1) and the rest stay whole; the group (head; 0 on the ring)
 * or GPU (local) of each document into assign. HUGE_VAL when a GPU would
 * overflow. Documents go to the group or GPU of least load, or
 * (by_tokens, the fallback when that packing leaves no room) of fewest
 * tokens; with refine, the local documents are then moved or swapped
 * between GPUs (improve), for the chosen k only: it costs as much as the
 * rest of the search. A GPU's time only grows as documents are added to
 * it, and the slowest is at least the mean (the local documents' work,
 * W->suf[k], less what head units' all-to-alls can hide under it), so once
 * either bound reaches cut the candidate cannot win: a value >= cut is
 * returned at once (*early = 1 when the split part alone reached it).
 * cut = HUGE_VAL (and refine) prices exactly. */
static double price_node(ws *W, int x, const item *it, int n, int k, int ring, int by_tokens,
                         int remap, int refine, double cut, int *early, int *assign)
{
    const zs_auto_in *in = W->in;
    int G = in->G, u = in->u, ng = G / u;
    W->rmode = remap;
    for (int g = 0; g < G; g++) {
        W->load[g] = W->base_att[x]; /* attention; linear modules in lin */
        W->lin[g] = W->base_lin[x];
        W->tok[g] = W->basetok[x];
        W->ltok[g] = 0;
        W->locw[g] = W->ex[g] = W->hid[g] = 0;
    }
    for (int q = 0; q < ng; q++) {
        W->ul[q] = 0;
        W->ut[q] = 0;
    }
    if (ring) { /* every document cut over all the node's GPUs */
        double ta = 0, tl = 0;
        int64_t tt = 0;
        for (int i = 0; i < k; i++) {
            int32_t d = it[i].d;
            int64_t share = span_share(in, in->len[d], 1);
            ta += ring_time(W, d);
            tl += (double)share * in->lin_tok;
            tt += share;
            assign[i] = 0;
        }
        for (int g = 0; g < G; g++) {
            W->load[g] += ta;
            W->lin[g] += tl;
            W->tok[g] += tt;
        }
    }
    for (int i = 0; i < (ring ? 0 : k); i++) {
        int32_t d = it[i].d;
        int q = 0;
        for (int j = 1; j < ng; j++)
            if (by_tokens ? W->ut[j] < W->ut[q] : W->ul[j] < W->ul[q])
                q = j;
        W->ul[q] += in->attn_heads[d];
        W->ut[q] += in->len[d];
        assign[i] = q;
    }
    for (int q = 0; q < ng; q++) {
        if (W->ut[q] == 0)
            continue;
        int64_t shard = (W->ut[q] + u - 1) / u;
        double h, a = in->a2a(in->arg, (double)shard, &h);
        for (int j = 0; j < u; j++) {
            int g = q * u + j;
            W->load[g] += W->ul[q];
            W->lin[g] += (double)shard * in->lin_tok;
            W->tok[g] += shard;
            W->ex[g] = a;
            W->hid[g] = h;
        }
    }
    double mk = 0, ma = 0, ml = 0, sum = 0;
    *early = 0;
    for (int g = 0; g < G; g++) {
        if (W->tok[g] > in->cap)
            return HUGE_VAL;
        gpu_max(W, g, &mk, &ma, &ml);
        sum += gpu_time(W, g) - W->hid[g];
    }
    *early = (in->moe ? ma + ml : mk) >= cut;
    if (*early)
        return in->moe ? ma + ml : mk;
    /* A margin keeps rounding in the sums from dropping a candidate the
     * exact price would keep. */
    double mean = (sum + W->suf[k]) / G;
    if (cut < HUGE_VAL && mean > cut * (1 + 1e-9))
        return mean;
    for (int i = k; i < n; i++) {
        int32_t d = it[i].d;
        int best = -1;
        for (int g = 0; g < G; g++)
            if (W->tok[g] + in->len[d] <= in->cap &&
                (best < 0 || (by_tokens ? W->tok[g] < W->tok[best]
                              : remap   ? W->load[g] < W->load[best]
                                        : W->load[g] + W->lin[g] < W->load[best] + W->lin[best])))
                best = g;
        if (best < 0)
            return HUGE_VAL;
        W->load[best] += in->attn_full[d];
        W->lin[best] += (double)in->len[d] * in->lin_tok;
        W->locw[best] += in->attn_full[d];
        W->tok[best] += in->len[d];
        W->ltok[best] += in->len[d];
        assign[i] = best;
        if (cut == HUGE_VAL)
            continue;
        if (!in->moe && gpu_time(W, best) >= cut)
            return gpu_time(W, best);
        gpu_max(W, best, &mk, &ma, &ml);
        if (in->moe && ma + ml >= cut)
            return ma + ml;
    }
    if (refine)
        improve(W, it, n, k, assign);
    if (remap)
        return remap_price(W);
    mk = ma = ml = 0;
    for (int g = 0; g < G; g++)
        gpu_max(W, g, &mk, &ma, &ml);
    return in->moe ? ma + ml : mk;
}

/* The next candidate k after k: every k up to kmin + 16, then steps of a
 * quarter of k (and n itself), so a node of n documents costs
 * O((16 + 4 log n) n G). */
static int next_k(int k, int kmin, int n)
{
    if (k < kmin + 16 || n <= 24)
        return k + 1;
    int step = k / 4 > 1 ? k / 4 : 1;
    return k + step < n ? k + step : (k < n ? n : n + 1);
}

static int build_units(ws *W, const item *nd, const int *nstart, const int *assign, zs_auto_plan *p,
                       zs_err *e);

/* The candidates of a node: k from lo to hi on a layout (ring = 0:
 * head-parallel, 1: the node's ring). */
typedef struct cand {
    int ring, lo, hi;
} cand;

/* The candidates the mode allows a node of n documents whose kmin of most
 * work fit no GPU whole; 0 when there are none (kmin documents no layout
 * splits). */
static int candidates(const zs_auto_in *in, int n, int kmin, cand *c)
{
    int heads = in->u > 1, ring = in->G / in->u > 1, nc = 0;
    if (in->mode == ZS_AUTO_HEADS && heads)
        c[nc++] = (cand){0, n, n};
    else if (in->mode == ZS_AUTO_RING && ring)
        c[nc++] = (cand){1, n, n};
    else if (in->mode == ZS_AUTO_SEARCH) {
        if (heads)
            c[nc++] = (cand){0, kmin, n};
        if (ring)
            c[nc++] = (cand){1, kmin, n};
    }
    if (nc == 0) { /* local, or a forced layout this shape lacks: as few split as fit */
        if (heads)
            c[nc++] = (cand){0, kmin, kmin};
        if (ring && (kmin > 0 || !heads))
            c[nc++] = (cand){1, kmin, kmin};
    }
    if (nc == 0 && kmin == 0)
        c[nc++] = (cand){0, 0, 0};
    return nc;
}

/* Chooses k and the layout for every node; assign[] follows nd (the
 * nodes' documents). */
static int choose(ws *W, const item *nd, const int *nstart, int *assign, zs_auto_plan *p, zs_err *e)
{
    const zs_auto_in *in = W->in;
    int *tmp = malloc(sizeof(int) * ((size_t)in->ndocs + 1));
    if (!tmp)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    p->makespan = 0;
    p->makespan_local = p->makespan_heads = p->makespan_ring =
        in->mode == ZS_AUTO_SEARCH ? 0 : HUGE_VAL;
    for (int x = 0; x < in->nodes; x++) {
        const item *it = nd + nstart[x];
        int n = nstart[x + 1] - nstart[x], kmin = 0;
        for (int i = 0; i < n; i++)
            if (in->len[it[i].d] > in->cap - W->basetok[x])
                kmin = i + 1;
        W->suf[n] = 0;
        for (int i = n - 1; i >= 0; i--)
            W->suf[i] = W->suf[i + 1] + W->w[it[i].d];
        cand c[2];
        int nc = candidates(in, n, kmin, c);
        if (nc == 0) {
            free(tmp);
            return doc_error(it[kmin - 1].d, in->len[it[kmin - 1].d],
                             "use recomputation or a higher ZeRO stage",
                             "this document does not fit one GPU and its node has no layout that "
                             "splits it (one GPU per node, heads not split)",
                             e);
        }
        double best = HUGE_VAL, best0 = HUGE_VAL;
        int bestk = -1, bestring = 0, bestrm = 0, bytok = 0, early = 0, k0 = -1, ring0 = 0;
        for (; bytok < 2 && bestk < 0; bytok++)
            for (int rm = 0; rm <= (in->remap ? 1 : 0); rm++)
                for (int j = 0; j < nc; j++)
                    for (int k = c[j].lo; k <= c[j].hi; k = next_k(k, c[j].lo, n)) {
                        double t =
                            price_node(W, x, it, n, k, c[j].ring, bytok, rm, 0, best, &early, tmp);
                        /* On the ring every GPU carries all k documents:
                         * more of them cannot cost less. */
                        if (early && c[j].ring)
                            break;
                        /* Remapping must gain more than rounding. */
                        if (rm ? t < best * (1 - 1e-9) : t < best) {
                            best = t;
                            bestk = k;
                            bestring = c[j].ring;
                            bestrm = rm;
                        }
                        if (rm == 0 && t < best0) {
                            best0 = t;
                            k0 = k;
                            ring0 = c[j].ring;
                        }
                    }
        if (bestk < 0) {
            free(tmp);
            char w[64];
            snprintf(w, sizeof w, "node %d", x);
            return zs_err_set(e, ZS_EINPUT, w, "use more nodes, recomputation or a smaller batch",
                              "no layout of its %d documents fits its GPUs' memory", n);
        }
        if (in->mode == ZS_AUTO_SEARCH) { /* the uniform layouts, for the notes */
            double tl = HUGE_VAL, th = HUGE_VAL, tr = HUGE_VAL;
            for (int j = 0; j < nc; j++) {
                double t = price_node(W, x, it, n, kmin, c[j].ring, bytok - 1, 0, 0, HUGE_VAL,
                                      &early, tmp);
                tl = t < tl ? t : tl;
            }
            if (in->u > 1)
                th = price_node(W, x, it, n, n, 0, bytok - 1, 0, 0, HUGE_VAL, &early, tmp);
            if (in->G / in->u > 1)
                tr = price_node(W, x, it, n, n, 1, bytok - 1, 0, 0, HUGE_VAL, &early, tmp);
            p->makespan_local = tl > p->makespan_local ? tl : p->makespan_local;
            p->makespan_heads = th > p->makespan_heads ? th : p->makespan_heads;
            p->makespan_ring = tr > p->makespan_ring ? tr : p->makespan_ring;
        }
        double refined = price_node(W, x, it, n, bestk, bestring, bytok - 1, bestrm, 1, HUGE_VAL,
                                    &early, assign + nstart[x]);
        /* With remapping the moves can raise the remap's price or leave a
         * GPU sending more than its local documents: the placement
         * without them then. And it was chosen against the best layout
         * without remapping before that one's moves: refined, that may
         * be lower (then it is taken). */
        if (bestrm) {
            if (!(refined <= best))
                refined = price_node(W, x, it, n, bestk, bestring, bytok - 1, 1, 0, HUGE_VAL,
                                     &early, assign + nstart[x]);
            best = refined < best ? refined : best;
            double r0 =
                k0 < 0 ? HUGE_VAL
                       : price_node(W, x, it, n, k0, ring0, bytok - 1, 0, 1, HUGE_VAL, &early, tmp);
            if (r0 <= best) {
                bestrm = 0;
                bestk = k0;
                bestring = ring0;
                best = refined = price_node(W, x, it, n, k0, ring0, bytok - 1, 0, 1, HUGE_VAL,
                                            &early, assign + nstart[x]);
            }
        }
        best = refined < best ? refined : best;
        p->node_remap[x] = bestrm;
        p->remap_nodes += bestrm;
        p->node_time[x] = best;
        p->node_k[x] = bestk;
        p->node_ring[x] = bestring && bestk > 0;
        p->node_n[x] = n;
        p->makespan = best > p->makespan ? best : p->makespan;
    }
    free(tmp);
    return build_units(W, nd, nstart, assign, p, e);
}

/* qsort has no context argument: the workspace whose windows cmp_window
 * compares (set just before the sort; the search is single-threaded). */
static const ws *span_ws;

/* Span documents by window (first node, width), then batch index. */
static int cmp_window(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    const ws *W = span_ws;
    if (W->span_first[x] != W->span_first[y])
        return W->span_first[x] < W->span_first[y] ? -1 : 1;
    if (W->span_m[x] != W->span_m[y])
        return W->span_m[x] < W->span_m[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static int build_units(ws *W, const item *nd, const int *nstart, const int *assign, zs_auto_plan *p,
                       zs_err *e)
{
    const zs_auto_in *in = W->in;
    int G = in->G, u = in->u, ng = G / u, S = in->nodes * G;
    size_t cap_units = (size_t)in->ndocs + (size_t)in->nodes * (size_t)(ng + G + 1) + 1;
    p->unit = malloc(sizeof(zs_auto_unit) * cap_units);
    p->docs = malloc(sizeof(int32_t) * ((size_t)in->ndocs + 1));
    if (!p->unit || !p->docs)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int nu = 0, nd_out = 0, n1 = 0;
    int32_t *one = malloc(sizeof(int32_t) * ((size_t)in->ndocs + 1));
    if (!one)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    /* Span units: documents over the same window share one ring (one
     * launch per ring step over all of them, as usp's), by window then
     * batch order. Windows of one node (documents no GPU holds whole) are
     * the node's ring, below. */
    for (int32_t d = 0; d < in->ndocs; d++)
        if (W->span_m[d] > 1)
            p->docs[nd_out++] = d;
        else if (W->span_m[d] == 1)
            one[n1++] = d;
    span_ws = W;
    qsort(p->docs, (size_t)nd_out, sizeof(int32_t), cmp_window);
    qsort(one, (size_t)n1, sizeof(int32_t), cmp_window);
    for (int i = 0; i < nd_out; i++) {
        int32_t d = p->docs[i];
        int m = W->span_m[d], first = W->span_first[d] * G;
        zs_auto_unit *last = nu > 0 ? &p->unit[nu - 1] : NULL;
        if (last && last->first == first && last->r == m * G / u)
            last->n++;
        else
            p->unit[nu++] = (zs_auto_unit){ZS_AUTO_UNIT_SPAN, u, m * G / u, first, i, 1};
        p->nspan++;
        p->max_m = m > p->max_m ? m : p->max_m;
    }
    for (int x = 0, i1 = 0; x < in->nodes; x++) { /* ring units */
        int start = nd_out;
        for (; i1 < n1 && W->span_first[one[i1]] == x; i1++)
            p->docs[nd_out++] = one[i1];
        for (int i = 0; i < p->node_k[x] && p->node_ring[x]; i++)
            p->docs[nd_out++] = nd[nstart[x] + i].d;
        if (nd_out == start)
            continue;
        qsort(p->docs + start, (size_t)(nd_out - start), sizeof(int32_t), cmp_i32);
        p->unit[nu++] = (zs_auto_unit){ZS_AUTO_UNIT_RING, u, G / u, x * G, start, nd_out - start};
        p->ring_docs += nd_out - start;
    }
    free(one);
    for (int x = 0; x < in->nodes; x++) { /* head units */
        int n = nstart[x + 1] - nstart[x], k = p->node_k[x];
        for (int q = 0; q < ng && !p->node_ring[x]; q++) {
            int start = nd_out;
            for (int i = 0; i < k; i++)
                if (assign[nstart[x] + i] == q)
                    p->docs[nd_out++] = nd[nstart[x] + i].d;
            if (nd_out == start)
                continue;
            qsort(p->docs + start, (size_t)(nd_out - start), sizeof(int32_t), cmp_i32);
            p->unit[nu++] =
                (zs_auto_unit){ZS_AUTO_UNIT_HEADS, u, 1, x * G + q * u, start, nd_out - start};
        }
        p->heads_docs += p->node_ring[x] ? 0 : k;
        p->local_docs += n - k;
        if (n > 0 && k == n && p->node_ring[x])
            p->nodes_ring++;
        else if (n > 0 && k == n)
            p->nodes_heads++;
        else if (n > 0 && k == 0)
            p->nodes_local++;
        else if (n > 0)
            p->nodes_mixed++;
    }
    for (int sl = 0; sl < S; sl++) { /* local units */
        int x = sl / G, g = sl % G, start = nd_out;
        for (int i = p->node_k[x]; i < nstart[x + 1] - nstart[x]; i++)
            if (assign[nstart[x] + i] == g)
                p->docs[nd_out++] = nd[nstart[x] + i].d;
        if (nd_out == start)
            continue;
        qsort(p->docs + start, (size_t)(nd_out - start), sizeof(int32_t), cmp_i32);
        p->unit[nu++] = (zs_auto_unit){ZS_AUTO_UNIT_LOCAL, 1, 1, sl, start, nd_out - start};
    }
    p->nunits = nu;
    return ZS_OK;
}

void zs_auto_plan_free(zs_auto_plan *p)
{
    if (!p)
        return;
    free(p->unit);
    free(p->docs);
    free(p->node_time);
    free(p->node_k);
    free(p->node_n);
    free(p->node_ring);
    free(p->node_remap);
    free(p);
}

int zs_auto_search(const zs_auto_in *in, zs_auto_plan **out, zs_err *e)
{
    if (in->nodes < 1 || in->G < 1 || in->u < 1 || in->G % in->u != 0 || in->cap < 1 ||
        in->ndocs < 0 || (in->remap && !in->remap_time))
        return zs_err_set(e, ZS_EINVALID, "auto search", NULL,
                          "bad shape: %d nodes of %d slots, u=%d, capacity %ld", in->nodes, in->G,
                          in->u, in->cap);
    ws W;
    int rc = ws_init(&W, in, e);
    if (rc)
        return rc;
    zs_auto_plan *p = calloc(1, sizeof *p);
    item *nd = malloc(sizeof(item) * ((size_t)in->ndocs + 1));
    int *nstart = calloc((size_t)in->nodes + 1, sizeof(int));
    int *assign = malloc(sizeof(int) * ((size_t)in->ndocs + 1));
    if (p) {
        p->node_time = calloc((size_t)in->nodes, sizeof(double));
        p->node_k = calloc((size_t)in->nodes, sizeof(int));
        p->node_n = calloc((size_t)in->nodes, sizeof(int));
        p->node_ring = calloc((size_t)in->nodes, sizeof(int));
        p->node_remap = calloc((size_t)in->nodes, sizeof(int));
    }
    if (!p || !nd || !nstart || !assign || !p->node_time || !p->node_k || !p->node_n ||
        !p->node_ring || !p->node_remap) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    if ((rc = partition(&W, e)))
        goto out;
    /* The nodes' documents, most work first within each node. */
    for (int32_t d = 0; d < in->ndocs; d++)
        if (W.node_of[d] >= 0)
            nstart[W.node_of[d] + 1]++;
    for (int x = 0; x < in->nodes; x++)
        nstart[x + 1] += nstart[x];
    {
        int *fill = malloc(sizeof(int) * (size_t)in->nodes);
        if (!fill) {
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
            goto out;
        }
        for (int x = 0; x < in->nodes; x++)
            fill[x] = nstart[x];
        for (int32_t i = 0; i < in->ndocs; i++) {
            int32_t d = W.order[i].d;
            if (W.node_of[d] >= 0)
                nd[fill[W.node_of[d]]++] = W.order[i];
        }
        free(fill);
    }
    rc = choose(&W, nd, nstart, assign, p, e);
out:
    ws_free(&W);
    free(nd);
    free(nstart);
    free(assign);
    if (rc) {
        zs_auto_plan_free(p);
        return rc;
    }
    *out = p;
    return ZS_OK;
}
