/* Zeppelin's hierarchical partitioning: see zs_zep_part.h.
 *
 * SYSTEM.md 5.1: a sequence must be split when it exceeds the memory of one
 * GPU (resp. node), and should be split when splitting shortens the
 * makespan. Both levels follow that rule with predicted costs:
 *   - a unit's (node's, slot's) predicted time is the larger of its compute
 *     load and the longest span of the rings it belongs to (the attention
 *     engine fills a ring's waits with the unit's other work);
 *   - the scope's target is the larger of its current predicted makespan
 *     and its mean load over all documents (a lower bound of any placement);
 *   - documents go longest first (ties: lower index). A document placed
 *     whole on the least-loaded unit that has room stays whole when that
 *     keeps the unit within the target. Otherwise every split is priced (a
 *     ring over the n least-loaded units with room: their loads plus a
 *     member's share, and the ring's span) and the document takes the
 *     option with the lowest predicted makespan of the scope, whole when
 *     no split is strictly lower; a tie prefers the smaller ring.
 * Node level (Algorithm 1): inter-node rings take every slot of their
 * nodes; a document that stays on a node is placed inside it later. Its
 * floor inside a node (the best of its local and intra-node options) counts
 * in the whole option. GPU level (Algorithm 2): per node, the same with the
 * node's slots and intra-node rings. Rings are in slot order (slot k holds
 * zigzag chunks k and 2g-1-k). */
#include "zs_zep_part.h"

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

/* a below b by more than rounding: a ring is taken over a whole document,
 * or searched for, only when it is predicted faster, not when the two tie
 * up to the sums' rounding (equal documents would split at random). */
static int clearly_below(double a, double b)
{
    return isinf(b) ? a < b : a < b - 1e-9 * fabs(b);
}

/* fmax for the finite costs here: inlined (libm's fmax is a call, and the
 * partitioning takes a maximum per candidate per document). */
static inline double dmax(double a, double b)
{
    return a > b ? a : b;
}

/* Sorts a few units by (load, id): inside a node there are at most
 * ZS_ZEP_MAX_SLOTS_PER_NODE, where qsort's setup costs more than the sort. */
static void sort_units(unit *u, int n)
{
    for (int i = 1; i < n; i++) {
        unit x = u[i];
        int j = i - 1;
        for (; j >= 0 && cmp_unit(&x, &u[j]) < 0; j--)
            u[j + 1] = u[j];
        u[j + 1] = x;
    }
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
    free(p->span);
    free(p);
}

typedef struct st {
    const zs_zep_part_in *in;
    zs_zep_part *p;
    int cap_rings;
    zs_err *e;
} st;

static double gpu_w(const st *s, int32_t d);

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

/* Adds a ring over the given slots (copied, sorted; for an inter-node ring
 * each node's slots then start at slot rot x slots per NIC, so its hops
 * across nodes leave and enter through NIC rot) holding documents docs;
 * each slot is charged `share` and the ring's `span`. */
static int add_ring(st *s, int cls, const int *slots, int g, const int32_t *docs, int nd,
                    double share, double span, int rot)
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
    int G = s->in->slots_per_node, nics = s->in->nics_per_node > 1 ? s->in->nics_per_node : 1;
    int off = nics <= G ? (rot % nics) * (G / nics) : 0;
    if (cls == ZS_ZEP_INTER && off > 0 && g % G == 0) {
        int tmp[ZS_ZEP_MAX_SLOTS_PER_NODE];
        for (int n0 = 0; n0 < g && G <= ZS_ZEP_MAX_SLOTS_PER_NODE; n0 += G) {
            for (int j = 0; j < G; j++)
                tmp[j] = r->slots[n0 + (j + off) % G];
            memcpy(r->slots + n0, tmp, sizeof(int) * (size_t)G);
        }
    }
    memcpy(r->docs, docs, sizeof(int32_t) * (size_t)nd);
    r->cls = cls;
    r->g = g;
    r->ndocs = nd;
    int idx = p->nrings++;
    for (int i = 0; i < nd; i++) {
        int32_t d = docs[i];
        p->cls[d] = (int8_t)cls;
        p->ring_of[d] = idx;
        p->count[cls]++;
        for (int k = 0; k < g; k++)
            p->tokens[r->slots[k]] += zs_zep_ring_share(s->in->len[d], g, k);
    }
    for (int k = 0; k < g; k++) {
        p->load[r->slots[k]] += share;
        if (span > p->span[r->slots[k]])
            p->span[r->slots[k]] = span;
    }
    return ZS_OK;
}

static void put_local(st *s, int32_t d, int slot)
{
    zs_zep_part *p = s->p;
    p->cls[d] = ZS_ZEP_LOCAL;
    p->slot_of[d] = slot;
    p->tokens[slot] += s->in->len[d];
    p->load[slot] += s->in->hier ? gpu_w(s, d) : s->in->w[d];
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

/* Ring sizes tried: powers of two, and the whole scope. A ring gives each
 * member an equal share, so it fits best on units of equal load; sizes that
 * halve each other keep the units' loads in a few equal groups (as a buddy
 * allocator keeps blocks), where any size would leave a ring of 5 next to
 * 3 idle GPUs that the next document cannot fill evenly. */
static int next_size(int x, int max)
{
    int n = 2 * x;
    return n > max && x < max ? max : n;
}

static double member(const st *s, int32_t len, int g)
{
    return s->in->member(s->in->price_arg, len, g);
}

static double span(const st *s, int32_t len, int g, int nodes, int sharing)
{
    return s->in->span(s->in->price_arg, len, g, nodes, sharing);
}

/* The GPU level's pricing (zs_zep_part_in.w_gpu, price_arg_gpu). */
static void *gpu_arg(const st *s)
{
    return s->in->w_gpu ? s->in->price_arg_gpu : s->in->price_arg;
}

static double gpu_w(const st *s, int32_t d)
{
    return s->in->w_gpu ? s->in->w_gpu[d] : s->in->w[d];
}

static double gmember(const st *s, int32_t len, int g)
{
    return s->in->member(gpu_arg(s), len, g);
}

static double gspan(const st *s, int32_t len, int g, int nodes, int sharing)
{
    return s->in->span(gpu_arg(s), len, g, nodes, sharing);
}

/* With GPU-level pricing, the inter-node rings placed by the node level
 * charge their slots in that pricing: slot loads and spans recomputed. */
static int reprice_slots(st *s)
{
    zs_zep_part *p = s->p;
    if (!s->in->w_gpu)
        return ZS_OK;
    int G = s->in->slots_per_node;
    int *through = calloc((size_t)s->in->nodes, sizeof(int));
    if (!through)
        return nomem(s);
    for (int k = 0; k < p->nslots; k++)
        p->load[k] = p->span[k] = 0;
    for (int i = 0; i < p->nrings; i++) {
        const zs_zep_ring *r = &p->rings[i];
        for (int k = 0; k < r->g; k += G)
            through[r->slots[k] / G]++;
    }
    for (int i = 0; i < p->nrings; i++) {
        const zs_zep_ring *r = &p->rings[i];
        int nodes = r->g / G > 1 ? r->g / G : 1, sharing = 1;
        for (int k = 0; k < r->g; k += G)
            sharing = through[r->slots[k] / G] > sharing ? through[r->slots[k] / G] : sharing;
        for (int j = 0; j < r->ndocs; j++) {
            int32_t len = s->in->len[r->docs[j]];
            double m = gmember(s, len, r->g), sp = gspan(s, len, r->g, nodes, sharing);
            for (int k = 0; k < r->g; k++) {
                p->load[r->slots[k]] += m;
                p->span[r->slots[k]] = dmax(p->span[r->slots[k]], sp);
            }
        }
    }
    free(through);
    return ZS_OK;
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
    double share = 0, sp = 0;
    for (int32_t i = 0; i < in->ndocs; i++)
        if (o[i].len > in->m_intra || o[i].len > in->cap) {
            docs[nd++] = o[i].id;
            share += member(s, o[i].len, S);
            sp += span(s, o[i].len, S, in->nodes, 1);
        }
    for (int k = 0; k < S; k++)
        slots[k] = k;
    if (nd > 0 && S > 1)
        rc = add_ring(s, ZS_ZEP_GLOBAL, slots, S, docs, nd, share, sp, 0);
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

/* Node-level state. */
typedef struct nodes {
    double *load; /* compute charged to the node's slots, summed */
    double *span; /* longest span of the inter-node rings on the node */
    int *rings;   /* inter-node rings on the node */
    int64_t *tok; /* tokens on the node */
    double cur;   /* predicted makespan so far: max over nodes of time() */
} nodes;

static double node_time(const nodes *n, int i, int G)
{
    return dmax(n->load[i] / G, n->span[i]);
}

/* The best a document placed whole on a node can do inside it: local, or a
 * ring over g of its slots (g <= G), whichever finishes first. */
static double floor_in_node(const st *s, int32_t len, int G)
{
    double best = member(s, len, 1);
    for (int g = 2; g <= G; g = next_size(g, G)) {
        double v = dmax(member(s, len, g), span(s, len, g, 1, 1));
        if (v < best)
            best = v;
    }
    return best;
}

/* Nodes in order of (load, id), kept by moving a node right when its load
 * grows (loads only grow): the node level's LPT and split candidates read
 * it without sorting. */
typedef struct norder {
    int *v, n;
    const double *load;
} norder;

static int no_less(const norder *o, int a, int b)
{
    return o->load[a] < o->load[b] || (o->load[a] == o->load[b] && a < b);
}

/* The node at index i grew: binary search its new place to the right and
 * shift the ones in between (indices below i do not move). */
static void no_grew(norder *o, int i)
{
    int x = o->v[i], lo = i + 1, hi = o->n; /* new index in [i, hi) */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (no_less(o, o->v[mid], x))
            lo = mid + 1;
        else
            hi = mid;
    }
    int to = lo - 1;
    memmove(o->v + i, o->v + i + 1, sizeof(int) * (size_t)(to - i));
    o->v[to] = x;
}

/* Node level: inter-node rings now, other documents to a node (node_of). */
static int place_nodes(st *s, const ord *o, int *node_of, nodes *ns, int *pick, double total)
{
    const zs_zep_part_in *in = s->in;
    int N = in->nodes, G = in->slots_per_node;
    /* The lower bound moves: rings charge more than the whole document
     * (their overheads), so it is the load charged so far plus what is
     * left, over every slot. */
    double charged = 0, left = total;
    norder no = {malloc(sizeof(int) * (size_t)N), N, ns->load};
    int *idx = malloc(sizeof(int) * (size_t)N * 2); /* order indices of pick, best_set */
    if (!no.v || !idx) {
        free(no.v);
        free(idx);
        return nomem(s);
    }
    for (int n = 0; n < N; n++)
        no.v[n] = n;              /* all loads 0: id order */
    int *best_set = pick + G * N; /* second half of pick: the chosen nodes */
    int *best_idx = idx + N;
    int rc = ZS_OK;
    for (int32_t i = 0; i < in->ndocs && !rc; i++) {
        int32_t d = o[i].id, len = o[i].len;
        double w = in->w[d], target = dmax(ns->cur, (charged + left) / ((double)N * G));
        left -= w;
        /* Whole: the least-loaded node with room (LPT). */
        int n0 = -1, j0 = -1;
        for (int j = 0; j < N && n0 < 0; j++)
            if (ns->tok[no.v[j]] + len <= (int64_t)G * in->cap) {
                n0 = no.v[j];
                j0 = j;
            }
        double v_whole = HUGE_VAL;
        if (n0 >= 0) {
            v_whole = dmax(target, dmax((ns->load[n0] + w) / G, ns->span[n0]));
            if (w > target)
                v_whole = dmax(v_whole, floor_in_node(s, len, G));
        }
        int best_n = 0;
        double best_v = v_whole;
        /* Split over the n least-loaded nodes that have room for a slot's
         * share on every slot. */
        for (int n = 2; n <= N && clearly_below(target, v_whole); n = next_size(n, N)) {
            int64_t need = 2 * (((int64_t)len + 2LL * n * G - 1) / (2LL * n * G));
            int got = 0, sharing = 1; /* rings crossing the busiest node, this one included */
            double worst = 0, spans = 0;
            for (int j = 0; j < N && got < n; j++) {
                int nd = no.v[j], ok = 1;
                for (int k = nd * G; k < (nd + 1) * G && ok; k++)
                    ok = s->p->tokens[k] + need <= in->cap;
                if (!ok)
                    continue;
                idx[got] = j;
                pick[got++] = nd;
                sharing = ns->rings[nd] + 1 > sharing ? ns->rings[nd] + 1 : sharing;
                spans = dmax(spans, ns->span[nd]);
                worst = dmax(worst, ns->load[nd] / G);
            }
            if (got < n)
                break;
            double m = member(s, len, n * G);
            double v = dmax(dmax(target, worst + m), dmax(span(s, len, n * G, n, sharing), spans));
            if (clearly_below(v, best_v)) {
                best_v = v;
                best_n = n;
                memcpy(best_set, pick, sizeof(int) * (size_t)n);
                memcpy(best_idx, idx, sizeof(int) * (size_t)n);
            }
        }
        if (best_n == 0) {
            if (n0 < 0) {
                rc = doc_err(s, d, "no node has room left for this document");
                break;
            }
            node_of[d] = n0;
            ns->load[n0] += w;
            charged += w;
            ns->tok[n0] += len;
            no_grew(&no, j0);
            ns->cur = dmax(ns->cur, node_time(ns, n0, G));
            continue;
        }
        int n = best_n, g = n * G;
        qsort(best_set, (size_t)n, sizeof(int), cmp_int);
        int sharing = 1;
        for (int j = 0; j < n; j++)
            sharing = ns->rings[best_set[j]] + 1 > sharing ? ns->rings[best_set[j]] + 1 : sharing;
        double m = member(s, len, g), sp = span(s, len, g, n, sharing);
        for (int j = 0; j < n; j++)
            for (int k = 0; k < G; k++)
                pick[j * G + k] = best_set[j] * G + k;
        if ((rc = add_ring(s, ZS_ZEP_INTER, pick, g, &d, 1, m, sp, sharing - 1)))
            break;
        charged += n * G * m;
        for (int j = 0; j < n; j++) {
            int nd = best_set[j];
            ns->load[nd] += G * m;
            ns->span[nd] = dmax(ns->span[nd], sp);
            ns->rings[nd]++;
            ns->tok[nd] = 0;
            for (int k = 0; k < G; k++)
                ns->tok[nd] += s->p->tokens[nd * G + k];
            ns->cur = dmax(ns->cur, node_time(ns, nd, G));
        }
        /* Their order indices ascend (picked left to right): move them
         * right to left, each among the still sorted ones on its right. */
        for (int j = n - 1; j >= 0; j--)
            no_grew(&no, best_idx[j]);
    }
    free(no.v);
    free(idx);
    return rc;
}

/* GPU level inside one node: its documents (node_of == nd), longest first. */
static int place_gpus(st *s, const int32_t *docs, int32_t ndocs, int nd, unit *u, int *pick)
{
    const zs_zep_part_in *in = s->in;
    zs_zep_part *p = s->p;
    int G = in->slots_per_node, s0 = nd * G;
    double charged = 0, left = 0, cur = 0;
    for (int k = s0; k < s0 + G; k++) {
        charged += p->load[k];
        cur = dmax(cur, dmax(p->load[k], p->span[k]));
    }
    for (int32_t i = 0; i < ndocs; i++)
        left += gpu_w(s, docs[i]);
    for (int32_t i = 0; i < ndocs; i++) {
        int32_t d = docs[i], len = in->len[d];
        double w = gpu_w(s, d), target = dmax(cur, (charged + left) / G);
        left -= w;
        int k0 = lpt_slot(s, s0, G, len);
        double v_loc = k0 >= 0 ? dmax(target, dmax(p->load[k0] + w, p->span[k0])) : HUGE_VAL;
        int best_g = 1;
        double best_v = v_loc;
        if (G >= 2 && clearly_below(target, v_loc)) {
            for (int k = 0; k < G; k++)
                u[k] = (unit){p->load[s0 + k], s0 + k};
            sort_units(u, G);
            for (int g = 2; g <= G; g = next_size(g, G)) {
                int64_t need = 2 * (((int64_t)len + 2LL * g - 1) / (2LL * g));
                int got = 0;
                double worst = 0, spans = 0;
                for (int j = 0; j < G && got < g; j++) {
                    int k = u[j].id;
                    if (p->tokens[k] + need > in->cap)
                        continue;
                    u[G + got] = u[j]; /* scratch: the chosen ones */
                    got++;
                    worst = dmax(worst, p->load[k]);
                    spans = dmax(spans, p->span[k]);
                }
                if (got < g)
                    continue;
                double m = gmember(s, len, g);
                double v = dmax(dmax(target, worst + m), dmax(gspan(s, len, g, 1, 1), spans));
                if (clearly_below(v, best_v)) {
                    best_v = v;
                    best_g = g;
                    for (int j = 0; j < g; j++)
                        pick[j] = u[G + j].id;
                }
            }
        }
        if (best_g == 1) {
            if (k0 < 0)
                return doc_err(s, d, "no GPU of its node has room left for this document");
            put_local(s, d, k0);
            charged += w;
            cur = dmax(cur, dmax(p->load[k0], p->span[k0]));
            continue;
        }
        double m = gmember(s, len, best_g), sp = gspan(s, len, best_g, 1, 1);
        int rc = add_ring(s, ZS_ZEP_INTRA, pick, best_g, &d, 1, m, sp, 0);
        if (rc)
            return rc;
        charged += best_g * m;
        for (int j = 0; j < best_g; j++)
            cur = dmax(cur, dmax(p->load[pick[j]], p->span[pick[j]]));
    }
    return ZS_OK;
}

int zs_zep_part_order(const int32_t *len, int32_t ndocs, int32_t *order, zs_err *e)
{
    ord *o = malloc(sizeof(ord) * (size_t)(ndocs > 0 ? ndocs : 1));
    if (!o)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int32_t d = 0; d < ndocs; d++)
        o[d] = (ord){len[d], d};
    qsort(o, (size_t)(ndocs > 0 ? ndocs : 0), sizeof *o, cmp_len_desc);
    for (int32_t i = 0; i < ndocs; i++)
        order[i] = o[i].id;
    free(o);
    return ZS_OK;
}

int zs_zep_partition(const zs_zep_part_in *in, zs_zep_part **out, zs_err *e)
{
    if (in->nodes < 1 || in->slots_per_node < 1 || in->cap < 1 || in->ndocs < 0 || !in->member ||
        !in->span)
        return zs_err_set(e, ZS_EINVALID, "zeppelin partitioning", NULL,
                          "bad cluster shape, capacity or pricing");
    int S = in->nodes * in->slots_per_node, N = in->nodes;
    size_t nd = (size_t)(in->ndocs > 0 ? in->ndocs : 1);
    zs_zep_part *p = calloc(1, sizeof *p);
    ord *o = malloc(sizeof(ord) * nd);
    int *node_of = malloc(sizeof(int) * nd);
    nodes ns = {calloc((size_t)N, sizeof(double)), calloc((size_t)N, sizeof(double)),
                calloc((size_t)N, sizeof(int)), calloc((size_t)N, sizeof(int64_t)), 0};
    int nu = 2 * (S > N ? S : N);
    unit *u = malloc(sizeof(unit) * (size_t)nu);
    int *pick = malloc(sizeof(int) * (size_t)(S + N));
    st s = {in, p, 0, e};
    int rc = ZS_OK;
    if (p) {
        p->cls = malloc(nd);
        p->ring_of = malloc(sizeof(int32_t) * nd);
        p->slot_of = malloc(sizeof(int32_t) * nd);
        p->tokens = calloc((size_t)S, sizeof(int64_t));
        p->load = calloc((size_t)S, sizeof(double));
        p->span = calloc((size_t)S, sizeof(double));
    }
    if (!p || !o || !node_of || !ns.load || !ns.span || !ns.rings || !ns.tok || !u || !pick ||
        !p->cls || !p->ring_of || !p->slot_of || !p->tokens || !p->load || !p->span) {
        rc = nomem(&s);
        goto out;
    }
    p->nslots = S;
    p->nodes = in->nodes;
    p->slots_per_node = in->slots_per_node;
    p->ndocs = in->ndocs;
    double total = 0;
    for (int32_t d = 0; d < in->ndocs; d++) {
        o[d] = (ord){in->len[d], d};
        p->cls[d] = -1;
        p->ring_of[d] = p->slot_of[d] = -1;
        node_of[d] = -1;
        total += in->w[d];
    }
    if (in->order)
        for (int32_t i = 0; i < in->ndocs; i++)
            o[i] = (ord){in->len[in->order[i]], in->order[i]};
    else
        qsort(o, nd, sizeof *o, cmp_len_desc);
    if (!in->hier) {
        rc = place_flat(&s, o);
    } else {
        rc = place_nodes(&s, o, node_of, &ns, pick, total);
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
        if (!rc)
            rc = reprice_slots(&s);
        for (int n = 0; n < in->nodes && !rc; n++)
            rc = place_gpus(&s, lst + off[n], off[n + 1] - off[n], n, u, pick);
        free(off);
        free(lst);
    }
    for (int k = 0; k < S && !rc; k++)
        p->makespan = dmax(p->makespan, dmax(p->load[k], p->span[k]));
out:
    free(o);
    free(node_of);
    free(ns.load);
    free(ns.span);
    free(ns.rings);
    free(ns.tok);
    free(u);
    free(pick);
    if (rc) {
        zs_zep_part_free(p);
        return rc;
    }
    *out = p;
    return ZS_OK;
}
