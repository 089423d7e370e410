/* Zeppelin's hierarchical partitioning: see zs_zeppelin_part.h.
 *
 * Node level (Algorithm 1), documents longest first (ties: lower index):
 *   - inter-node when it exceeds a node's token capacity or its length is
 *     at least m_inter x slots_per_node (and see below); it takes n >= 2 of the least-loaded
 *     nodes that have room, all their slots in one ring, and its attention
 *     cost is charged evenly to them;
 *   - otherwise whole to the node with the least charged attention cost that
 *     still has room (LPT with a token cap).
 * GPU level (Algorithm 2), per node, the same with slots and m_intra: a
 * document longer than the freest slot's room, or at least 2 x m_intra
 * (so that even a 2-slot ring hides its transfer), becomes an intra-node
 * ring over g of the least-loaded slots that have room; the rest go whole
 * to the least-loaded slot with room.
 * When splitting is not forced by memory, the length criterion is not
 * enough: the crossover says a ring's transfers would be hidden, not that
 * splitting helps. SYSTEM.md: a sequence "should be split when splitting
 * shortens the makespan", so a document that fits is split only when,
 * placed whole, it would be the straggler: its attention cost exceeds the
 * mean load of a unit of its scope (node, or slot of its node), or added to
 * the least-loaded unit it exceeds that mean by more than the slack.
 * Ring sizes: the design says "the fewest that hold it"; we also split
 * wider when the document outweighs several units, but never so wide that
 * a slot's share drops below the crossover that keeps the ring hidden. */
#include "zs_zeppelin_part.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *zs_zep_class_name(int c)
{
    static const char *n[] = {"local", "intra-node", "inter-node", "global-ring"};
    return c >= 0 && c < 4 ? n[c] : "?";
}

int64_t zs_zep_ring_share(int32_t len, int g, int k)
{
    int64_t n = 2 * (int64_t)g, base = len / n, rem = len % n;
    int64_t c2 = n - 1 - k;
    return 2 * base + (k < rem) + (c2 < rem);
}

typedef struct ord {
    int32_t len, id;
} ord;

/* A document stays whole unless that would leave its least-loaded
 * candidate more than this factor above the mean load of its scope. */
#define ZS_ZEP_SPLIT_SLACK 1.05

static int cmp_len_desc(const void *a, const void *b)
{
    const ord *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

typedef struct unit {
    double load;
    int id;
} unit;

static int cmp_unit(const void *a, const void *b)
{
    const unit *x = a, *y = b;
    if (x->load != y->load)
        return x->load < y->load ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : (x > y);
}

void zs_zep_part_free(zs_zep_part *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nrings; i++) {
        free(p->rings[i].slots);
        free(p->rings[i].docs);
    }
    free(p->rings);
    free(p->cls);
    free(p->ring_of);
    free(p->slot_of);
    free(p->tokens);
    free(p->load);
    free(p);
}

typedef struct st {
    const zs_zep_part_in *in;
    zs_zep_part *p;
    int cap_rings;
    zs_err *e;
} st;

static int nomem(st *s)
{
    return zs_err_set(s->e, ZS_ENOMEM, NULL, NULL, "out of memory");
}

static int doc_err(st *s, int32_t d, const char *why)
{
    char w[64];
    snprintf(w, sizeof w, "document %d of the batch", d);
    return zs_err_set(s->e, ZS_EINPUT, w,
                      "use more GPUs, ZeRO-3 or recomputation (more tokens per GPU), or a "
                      "smaller batch",
                      "%s (%d tokens; capacity %lld tokens per GPU)", why, s->in->len[d],
                      (long long)s->in->cap);
}

/* Adds a ring over the given slots (copied, sorted) holding documents docs. */
static int add_ring(st *s, int cls, const int *slots, int g, const int32_t *docs, int nd)
{
    zs_zep_part *p = s->p;
    if (p->nrings == s->cap_rings) {
        int nc = s->cap_rings ? 2 * s->cap_rings : 16;
        zs_zep_ring *r = realloc(p->rings, sizeof *r * (size_t)nc);
        if (!r)
            return nomem(s);
        p->rings = r;
        s->cap_rings = nc;
    }
    zs_zep_ring *r = &p->rings[p->nrings];
    r->slots = malloc(sizeof(int) * (size_t)g);
    r->docs = malloc(sizeof(int32_t) * (size_t)(nd > 0 ? nd : 1));
    if (!r->slots || !r->docs) {
        free(r->slots);
        free(r->docs);
        return nomem(s);
    }
    memcpy(r->slots, slots, sizeof(int) * (size_t)g);
    qsort(r->slots, (size_t)g, sizeof(int), cmp_int);
    memcpy(r->docs, docs, sizeof(int32_t) * (size_t)nd);
    r->cls = cls;
    r->g = g;
    r->ndocs = nd;
    int idx = p->nrings++;
    double share = 0;
    for (int i = 0; i < nd; i++) {
        int32_t d = docs[i];
        p->cls[d] = (int8_t)cls;
        p->ring_of[d] = idx;
        p->count[cls]++;
        share += s->in->w[d] / g;
        for (int k = 0; k < g; k++)
            p->tokens[r->slots[k]] += zs_zep_ring_share(s->in->len[d], g, k);
    }
    for (int k = 0; k < g; k++)
        p->load[r->slots[k]] += share;
    return ZS_OK;
}

static void put_local(st *s, int32_t d, int slot)
{
    zs_zep_part *p = s->p;
    p->cls[d] = ZS_ZEP_LOCAL;
    p->slot_of[d] = slot;
    p->tokens[slot] += s->in->len[d];
    p->load[slot] += s->in->w[d];
    p->count[ZS_ZEP_LOCAL]++;
}

/* The least-loaded slot among slots [s0, s0+n) with room for len, or -1. */
static int lpt_slot(st *s, int s0, int n, int64_t len)
{
    int best = -1;
    for (int k = s0; k < s0 + n; k++)
        if (s->p->tokens[k] + len <= s->in->cap && (best < 0 || s->p->load[k] < s->p->load[best]))
            best = k;
    return best;
}

static int bounded(double x, int lo, int hi)
{
    if (!(x < hi))
        return hi;
    int v = (int)x;
    return v < lo ? lo : v;
}

/* A binary min-heap of node ids keyed by (load, id): the node-level LPT
 * picks the least-loaded node in O(log N). */
typedef struct heap {
    int *v, n;
    const double *load;
} heap;

static int h_less(const heap *h, int a, int b)
{
    return h->load[a] < h->load[b] || (h->load[a] == h->load[b] && a < b);
}

static void h_push(heap *h, int x)
{
    int i = h->n++;
    while (i > 0 && h_less(h, x, h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = x;
}

static int h_pop(heap *h)
{
    int top = h->v[0], x = h->v[--h->n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h_less(h, h->v[c + 1], h->v[c]))
            c++;
        if (!h_less(h, h->v[c], x))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0)
        h->v[i] = x;
    return top;
}

/* hier=0: one global ring for every document longer than m_intra (or than
 * a slot's capacity), LPT for the rest. */
static int place_flat(st *s, const ord *o)
{
    const zs_zep_part_in *in = s->in;
    int S = s->p->nslots, rc = ZS_OK;
    int32_t *docs = malloc(sizeof(int32_t) * (size_t)(in->ndocs > 0 ? in->ndocs : 1));
    int *slots = malloc(sizeof(int) * (size_t)S);
    if (!docs || !slots) {
        free(docs);
        free(slots);
        return nomem(s);
    }
    int nd = 0;
    for (int32_t i = 0; i < in->ndocs; i++)
        if (o[i].len > in->m_intra || o[i].len > in->cap)
            docs[nd++] = o[i].id;
    for (int k = 0; k < S; k++)
        slots[k] = k;
    if (nd > 0 && S > 1)
        rc = add_ring(s, ZS_ZEP_GLOBAL, slots, S, docs, nd);
    else
        nd = 0;
    for (int k = 0; k < S && !rc; k++)
        if (s->p->tokens[k] > in->cap)
            rc = doc_err(s, docs[nd - 1], "the global ring's share exceeds a GPU's memory");
    for (int32_t i = 0; i < in->ndocs && !rc; i++) {
        int32_t d = o[i].id;
        if (s->p->cls[d] >= 0)
            continue;
        int k = lpt_slot(s, 0, S, in->len[d]);
        if (k < 0)
            rc = doc_err(s, d, "no GPU has room left for this document");
        else
            put_local(s, d, k);
    }
    free(docs);
    free(slots);
    return rc;
}

/* Node level: inter-node rings now, other documents to a node (node_of). */
static int place_nodes(st *s, const ord *o, int *node_of, double *node_load, int64_t *node_tok,
                       unit *u, int *pick)
{
    const zs_zep_part_in *in = s->in;
    int N = in->nodes, G = in->slots_per_node;
    double total = 0;
    for (int32_t d = 0; d < in->ndocs; d++)
        total += in->w[d];
    double mean_node = total / N;
    heap hp = {NULL, 0, NULL};
    for (int32_t i = 0; i < in->ndocs; i++) {
        int32_t d = o[i].id, len = o[i].len;
        /* Split when it must (memory), when it outweighs a node (Algorithm
         * 1), or when keeping it whole would push even the least-loaded node
         * past the mean by more than the slack and a ring over two nodes
         * still gives every GPU m_inter tokens: then splitting shortens the
         * makespan without exposing the network (SYSTEM.md 5.1). */
        double min_node = node_load[0];
        for (int n = 1; n < N; n++)
            min_node = node_load[n] < min_node ? node_load[n] : min_node;
        int inter =
            N >= 2 &&
            (len > (int64_t)G * in->cap || (len >= in->m_inter * G && in->w[d] > mean_node) ||
             (len >= 2 * in->m_inter * G && in->w[d] + min_node > mean_node * ZS_ZEP_SPLIT_SLACK));
        if (!inter) {
            /* Inter-node documents are all longer than the others (both
             * criteria grow with length), so node loads change only by LPT
             * from here on: keep them in a heap. */
            if (!hp.v) {
                hp.v = malloc(sizeof(int) * (size_t)N * 2);
                if (!hp.v)
                    return nomem(s);
                hp.load = node_load;
                for (int n = 0; n < N; n++)
                    h_push(&hp, n);
            }
            int *full = hp.v + N, nfull = 0, best = -1;
            while (hp.n > 0) {
                int n = h_pop(&hp);
                if (node_tok[n] + len <= (int64_t)G * in->cap) {
                    best = n;
                    break;
                }
                full[nfull++] = n;
            }
            if (best >= 0) {
                node_of[d] = best;
                node_load[best] += in->w[d];
                node_tok[best] += len;
                h_push(&hp, best);
            }
            for (int j = 0; j < nfull; j++)
                h_push(&hp, full[j]);
            if (best < 0) {
                free(hp.v);
                return doc_err(s, d, "no node has room left for this document");
            }
            continue;
        }
        int nmax = bounded(floor(len / (in->m_inter * G)), 2, N);
        int best = -1, *bp = pick + G * N; /* second half of pick: the best set */
        double bestv = 0;
        for (int n = 2; n <= N; n++) {
            int64_t need = 2 * (((int64_t)len + 2LL * n * G - 1) / (2LL * n * G));
            int ne = 0;
            for (int nd = 0; nd < N; nd++) {
                int ok = 1;
                for (int k = nd * G; k < (nd + 1) * G && ok; k++)
                    ok = s->p->tokens[k] + need <= in->cap;
                if (ok && node_tok[nd] + len / n <= (int64_t)G * in->cap)
                    u[ne++] = (unit){node_load[nd], nd};
            }
            if (ne < n)
                continue;
            qsort(u, (size_t)ne, sizeof *u, cmp_unit);
            double v = in->w[d] / n + u[n - 1].load;
            if (best < 0 || v < bestv) {
                best = n;
                bestv = v;
                for (int j = 0; j < n; j++)
                    bp[j] = u[j].id;
            }
            if (v <= mean_node * (1 + 1e-9) || n >= nmax)
                break;
        }
        int done = 0;
        if (best > 0) {
            int n = best;
            qsort(bp, (size_t)n, sizeof(int), cmp_int);
            for (int j = 0; j < n; j++)
                for (int k = 0; k < G; k++)
                    pick[j * G + k] = bp[j] * G + k;
            int rc = add_ring(s, ZS_ZEP_INTER, pick, n * G, &d, 1);
            if (rc) {
                free(hp.v);
                return rc;
            }
            for (int j = 0; j < n; j++) {
                node_load[bp[j]] += in->w[d] / n;
                node_tok[bp[j]] = 0;
                for (int k = 0; k < G; k++)
                    node_tok[bp[j]] += s->p->tokens[bp[j] * G + k];
            }
            done = 1;
        }
        if (!done) {
            free(hp.v);
            return doc_err(s, d, "no set of nodes has room left for this document");
        }
    }
    free(hp.v);
    return ZS_OK;
}

/* GPU level inside one node: its documents (node_of == nd), longest first. */
static int place_gpus(st *s, const int32_t *docs, int32_t ndocs, int nd, const double *node_load,
                      unit *u, int *pick)
{
    const zs_zep_part_in *in = s->in;
    int G = in->slots_per_node, s0 = nd * G;
    double mean_slot = node_load[nd] / G;
    for (int32_t i = 0; i < ndocs; i++) {
        int32_t d = docs[i], len = in->len[d];
        int64_t maxfree = 0;
        for (int k = s0; k < s0 + G; k++)
            if (in->cap - s->p->tokens[k] > maxfree)
                maxfree = in->cap - s->p->tokens[k];
        double min_slot = s->p->load[s0];
        for (int k = s0 + 1; k < s0 + G; k++)
            min_slot = s->p->load[k] < min_slot ? s->p->load[k] : min_slot;
        int split =
            G >= 2 && (len > maxfree || (len >= 2 * in->m_intra &&
                                         in->w[d] + min_slot > mean_slot * ZS_ZEP_SPLIT_SLACK));
        if (!split) {
            int k = lpt_slot(s, s0, G, len);
            if (k < 0)
                return doc_err(s, d, "no GPU of its node has room left for this document");
            put_local(s, d, k);
            continue;
        }
        int gmax = bounded(floor(len / in->m_intra), 2, G);
        int best = -1;
        double bestv = 0;
        /* The smallest ring that keeps its slots at or below the node's mean
         * load; otherwise the one with the lowest resulting maximum. Rings
         * wider than len / m_intra only when memory needs them. */
        for (int g = 2; g <= G; g++) {
            int64_t need = 2 * (((int64_t)len + 2LL * g - 1) / (2LL * g));
            int ne = 0;
            for (int k = s0; k < s0 + G; k++)
                if (s->p->tokens[k] + need <= in->cap)
                    u[ne++] = (unit){s->p->load[k], k};
            if (ne < g)
                continue;
            qsort(u, (size_t)ne, sizeof *u, cmp_unit);
            double v = in->w[d] / g + u[g - 1].load;
            if (best < 0 || v < bestv) {
                best = g;
                bestv = v;
                for (int j = 0; j < g; j++)
                    pick[j] = u[j].id;
            }
            if (v <= mean_slot * (1 + 1e-9) || g >= gmax)
                break;
        }
        int done = 0;
        if (best > 0) {
            int rc = add_ring(s, ZS_ZEP_INTRA, pick, best, &d, 1);
            if (rc)
                return rc;
            done = 1;
        }
        if (!done)
            return doc_err(s, d, "no GPUs of its node have room left for this document");
    }
    return ZS_OK;
}

int zs_zep_partition(const zs_zep_part_in *in, zs_zep_part **out, zs_err *e)
{
    if (in->nodes < 1 || in->slots_per_node < 1 || in->cap < 1 || in->ndocs < 0)
        return zs_err_set(e, ZS_EINVALID, "zeppelin partitioning", NULL,
                          "bad cluster shape or capacity");
    int S = in->nodes * in->slots_per_node;
    size_t nd = (size_t)(in->ndocs > 0 ? in->ndocs : 1);
    zs_zep_part *p = calloc(1, sizeof *p);
    ord *o = malloc(sizeof(ord) * nd);
    int *node_of = malloc(sizeof(int) * nd);
    double *node_load = calloc((size_t)in->nodes, sizeof(double));
    int64_t *node_tok = calloc((size_t)in->nodes, sizeof(int64_t));
    int nu = S > in->nodes ? S : in->nodes;
    unit *u = malloc(sizeof(unit) * (size_t)nu);
    int *pick = malloc(sizeof(int) * (size_t)(S + in->nodes));
    st s = {in, p, 0, e};
    int rc = ZS_OK;
    if (p) {
        p->cls = malloc(nd);
        p->ring_of = malloc(sizeof(int32_t) * nd);
        p->slot_of = malloc(sizeof(int32_t) * nd);
        p->tokens = calloc((size_t)S, sizeof(int64_t));
        p->load = calloc((size_t)S, sizeof(double));
    }
    if (!p || !o || !node_of || !node_load || !node_tok || !u || !pick || !p->cls || !p->ring_of ||
        !p->slot_of || !p->tokens || !p->load) {
        rc = nomem(&s);
        goto out;
    }
    p->nslots = S;
    p->nodes = in->nodes;
    p->slots_per_node = in->slots_per_node;
    p->ndocs = in->ndocs;
    for (int32_t d = 0; d < in->ndocs; d++) {
        o[d] = (ord){in->len[d], d};
        p->cls[d] = -1;
        p->ring_of[d] = p->slot_of[d] = -1;
        node_of[d] = -1;
    }
    qsort(o, nd, sizeof *o, cmp_len_desc);
    if (!in->hier) {
        rc = place_flat(&s, o);
    } else {
        rc = place_nodes(&s, o, node_of, node_load, node_tok, u, pick);
        /* Each node's documents, longest first (counting sort keeps the order). */
        int32_t *off = rc ? NULL : calloc((size_t)in->nodes + 1, sizeof(int32_t));
        int32_t *lst = rc ? NULL : malloc(sizeof(int32_t) * nd);
        if (!rc && (!off || !lst))
            rc = nomem(&s);
        for (int32_t i = 0; i < in->ndocs && !rc; i++)
            if (node_of[o[i].id] >= 0)
                off[node_of[o[i].id] + 1]++;
        for (int n = 0; n < in->nodes && !rc; n++)
            off[n + 1] += off[n];
        for (int32_t i = 0; i < in->ndocs && !rc; i++) {
            int n = node_of[o[i].id];
            if (n >= 0)
                lst[off[n]++] = o[i].id;
        }
        for (int n = in->nodes; n > 0 && !rc; n--)
            off[n] = off[n - 1];
        if (!rc)
            off[0] = 0;
        for (int n = 0; n < in->nodes && !rc; n++)
            rc = place_gpus(&s, lst + off[n], off[n + 1] - off[n], n, node_load, u, pick);
        free(off);
        free(lst);
    }
out:
    free(o);
    free(node_of);
    free(node_load);
    free(node_tok);
    free(u);
    free(pick);
    if (rc) {
        zs_zep_part_free(p);
        return rc;
    }
    *out = p;
    return ZS_OK;
}
