/* Zeppelin's predictions for its per-batch decisions: see zs_zep_predict.h.
 *
 * Units: seconds of one layer. A layer runs `fwd_passes` attention
 * forwards (2 with full recomputation) and one backward; a ring step moves
 * its KV shard forward, and backward the KV and the dK/dV (each shard once
 * more at the end, when the dK/dV return to their owner). */
#include "zs_zep_predict.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zs_iteration.h"
#include "zs_ring.h"
#include "zs_crossover.h"

typedef struct fb {
    double f, b; /* one forward pass, the backward pass */
} fb;

static double layer_of(const zs_zep_pred *p, fb x)
{
    return p->fwd_passes * x.f + x.b;
}

/* Step j of member 0 of a ring of g over one document (g = 1: the whole
 * document), forward and backward. */
static fb step_cost(const zs_zep_pred *p, int32_t len, int g, int j)
{
    zs_attn_block b[4];
    int n = g <= 1 ? 1 : zs_ring_member_blocks(0, len, g, ZS_RING_EXACT, 0, j, b);
    if (g <= 1)
        b[0] = (zs_attn_block){0, 0, len, 0, len};
    fb r = {0, 0};
    if (n > 0) {
        r.f = zs_cost_attn(p->cost, b, n, p->heads, 0);
        r.b = zs_cost_attn(p->cost, b, n, p->heads, 1);
    }
    return r;
}

/* KV bytes of member 0's shard. */
static double shard_bytes(const zs_zep_pred *p, int32_t len, int g)
{
    return zs_crossover_kv_bytes(&p->cost->model, p->kv_heads,
                                 (double)zs_zep_ring_share(len, g, 0));
}

/* A ring's figures: its first and other steps, the dK/dV accumulation. */
typedef struct ringfig {
    fb c0, c1;
    double acc;
} ringfig;

struct zs_zep_memo {
    uint64_t *key; /* (len << 24 | g) + 1; 0: empty */
    ringfig *v;
    size_t cap, n;
    /* Linear times by (tokens, moved): a small direct-mapped cache. */
    uint64_t lkey[4096];
    zs_iter_lin lv[4096];
};

zs_zep_memo *zs_zep_pred_memo_new(void)
{
    zs_zep_memo *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->cap = 4096;
    m->key = calloc(m->cap, sizeof(uint64_t));
    m->v = malloc(sizeof(ringfig) * m->cap);
    if (!m->key || !m->v) {
        zs_zep_pred_memo_free(m);
        return NULL;
    }
    return m;
}

void zs_zep_pred_memo_free(zs_zep_memo *m)
{
    if (!m)
        return;
    free(m->key);
    free(m->v);
    free(m);
}

static size_t slot_in(const uint64_t *keys, size_t cap, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ULL;
    size_t i = (size_t)(h >> 20) & (cap - 1);
    while (keys[i] && keys[i] != key)
        i = (i + 1) & (cap - 1);
    return i;
}

static size_t memo_slot(const zs_zep_memo *m, uint64_t key)
{
    return slot_in(m->key, m->cap, key);
}

/* Doubles the table (kept at most half full); on failure the memo simply
 * stops growing and prices are computed each time. */
static int memo_grow(zs_zep_memo *m)
{
    size_t cap = 2 * m->cap;
    uint64_t *key = calloc(cap, sizeof(uint64_t));
    ringfig *v = malloc(sizeof(ringfig) * cap);
    if (!key || !v) {
        free(key);
        free(v);
        return ZS_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->key[i]) {
            size_t j = slot_in(key, cap, m->key[i]);
            key[j] = m->key[i];
            v[j] = m->v[i];
        }
    free(m->key);
    free(m->v);
    m->key = key;
    m->v = v;
    m->cap = cap;
    return ZS_OK;
}

static ringfig ring_fig(const zs_zep_pred *p, int32_t len, int g)
{
    zs_zep_memo *m = p->memo;
    uint64_t key = (((uint64_t)len << 24) | (uint64_t)g) + 1;
    size_t i = 0;
    if (m) {
        i = memo_slot(m, key);
        if (m->key[i] == key)
            return m->v[i];
    }
    ringfig r;
    r.c0 = step_cost(p, len, g, 0);
    r.c1 = g > 1 ? step_cost(p, len, g, 1) : (fb){0, 0};
    r.acc = g > 1 ? zs_cost_elementwise(p->cost, 3 * shard_bytes(p, len, g)) : 0;
    if (m && (2 * (m->n + 1) <= m->cap || !memo_grow(m))) {
        i = memo_slot(m, key);
        m->key[i] = key;
        m->v[i] = r;
        m->n++;
    }
    return r;
}

/* The builder's linear times for a slot's share, through the memo: with
 * remapping most slots hold the same share, and the plans weighed share
 * their partitions' shares. */
static int linear_time(const zs_zep_pred *p, double tokens, double moved, zs_iter_lin *out,
                       zs_err *e)
{
    zs_zep_memo *m = p->memo;
    uint64_t key = (((uint64_t)tokens << 32) ^ (uint64_t)moved) + 1;
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 52) & 4095;
    if (m && m->lkey[i] == key) {
        *out = m->lv[i];
        return ZS_OK;
    }
    int rc = zs_iter_linear_time(p->cost, p->tp, p->slots_per_node, tokens, moved, out, e);
    if (!rc && m) {
        m->lkey[i] = key;
        m->lv[i] = *out;
    }
    return rc;
}

static fb member_fb(const zs_zep_pred *p, int32_t len, int g)
{
    ringfig r = ring_fig(p, len, g);
    if (g <= 1)
        return r.c0;
    return (fb){r.c0.f + (g - 1) * r.c1.f, r.c0.b + (g - 1) * (r.c1.b + r.acc)};
}

double zs_zep_pred_member(const zs_zep_pred *p, int32_t len, int g)
{
    return layer_of(p, member_fb(p, len, g));
}

/* One inter-node hop of `bytes` whose links carry `load` times its own
 * bytes in the same pass (fair share): direct through one NIC, or routed
 * over k NICs (slices plus the pipeline's NVLink fill and drain). */
static double hop_time(const zs_zep_pred *p, double bytes, double load, int routed)
{
    int far = p->slots_per_node * p->tp; /* a rank of the next node */
    if (!(bytes > 0))
        return 0;
    if (load < 1)
        load = 1;
    if (!routed || p->k <= 1)
        return zs_cost_p2p(p->cost, 0, far, bytes * load);
    double slice = bytes / p->k, chunk = p->chunk < slice ? p->chunk : slice;
    return zs_cost_p2p(p->cost, 0, far, slice * load) + 2 * zs_cost_p2p(p->cost, 0, p->tp, chunk);
}

/* A ring's span from its per-step figures and its slowest hop's time x. */
static fb span_of(fb c0, fb c1, double acc, double x, int g)
{
    if (g <= 1)
        return c0;
    return (fb){c0.f + (g - 1) * fmax(c1.f, x), c0.b + (g - 1) * fmax(c1.b + acc, 2 * x) + x};
}

static fb span_fb(const zs_zep_pred *p, int32_t len, int g, int nodes, double x_net)
{
    ringfig r = ring_fig(p, len, g);
    if (g <= 1)
        return r.c0;
    double x = zs_cost_p2p(p->cost, 0, p->tp, shard_bytes(p, len, g));
    if (nodes >= 2 && x_net > x)
        x = x_net;
    return span_of(r.c0, r.c1, r.acc, x, g);
}

double zs_zep_pred_span(const zs_zep_pred *p, int32_t len, int g, int nodes, int sharing)
{
    double x_net = 0;
    /* Routed, every ring of the node spreads over its NICs; direct, the
     * rings are rotated over the NICs (zs_zep_part_in.nics_per_node). */
    int nics = p->cost->cluster.nics_per_node > 1 ? p->cost->cluster.nics_per_node : 1;
    double load = p->k > 1 ? sharing : 1 + (sharing - 1) / nics;
    if (nodes >= 2 && g > 1)
        x_net = hop_time(p, shard_bytes(p, len, g), load, p->k > 1);
    return layer_of(p, span_fb(p, len, g, nodes, x_net));
}

double zs_zep_pred_member_hook(void *arg, int32_t len, int g)
{
    const zs_zep_pred *p = arg;
    return zs_zep_pred_member(p, len, g) + p->lin_tok * (double)zs_zep_ring_share(len, g, 0);
}

double zs_zep_pred_span_hook(void *arg, int32_t len, int g, int nodes, int sharing)
{
    const zs_zep_pred *p = arg;
    return zs_zep_pred_span(p, len, g, nodes, sharing) +
           p->lin_tok * (double)zs_zep_ring_share(len, g, 0);
}

int zs_zep_pred_lin_tok(const zs_zep_pred *p, double tokens, double *out, zs_err *e)
{
    zs_iter_lin l;
    if (!(tokens >= 1))
        tokens = 1;
    int rc = zs_iter_linear_time(p->cost, p->tp, p->slots_per_node, tokens, 0, &l, e);
    if (rc)
        return rc;
    *out = (p->fwd_passes * (l.fwd_entry + l.fwd_post) + l.bwd_entry + l.bwd_post) / tokens;
    return ZS_OK;
}

/* ---- routing ---------------------------------------------------------------
 *
 * Transfer groups of one layer across nodes: a ring hop (member k -> k+1 on
 * another node: every KV and dK/dV shard of the layer) or a remap flow
 * (both directions). Ring hops and remap flows run at different times of
 * the pass (during attention, around it), so each kind is balanced against
 * its own table of link loads. */

typedef struct grp {
    int src, dst;             /* ranks (a flow: linear holder -> attention holder) */
    int ring;                 /* ring index, -1 for a flow */
    double bytes;             /* per layer, each direction that is used */
    double step;              /* a ring hop: bytes per step */
    int both;                 /* a flow: also dst -> src */
    int routed;               /* decision */
    int nic[ZS_ZEP_MAX_K], k; /* NICs of the routed slices */
} grp;

typedef struct loads {
    int N, nn;
    double *up, *down; /* bytes per layer per NIC (node * nn + j) */
} loads;

static void charge(const zs_cluster *cl, loads *L, const grp *g, double sign)
{
    int nn = cl->nics_per_node;
    int sn = zs_cluster_node_of(cl, g->src), dn = zs_cluster_node_of(cl, g->dst);
    for (int dir = 0; dir < (g->both ? 2 : 1); dir++) {
        int a = dir ? dn : sn, b = dir ? sn : dn;
        int ra = dir ? g->dst : g->src, rb = dir ? g->src : g->dst;
        if (!g->routed) {
            L->up[a * nn + zs_cluster_nic_of(cl, ra)] += sign * g->bytes;
            L->down[b * nn + zs_cluster_nic_of(cl, rb)] += sign * g->bytes;
            continue;
        }
        for (int i = 0; i < g->k; i++) {
            L->up[a * nn + g->nic[i]] += sign * g->bytes / g->k;
            L->down[b * nn + g->nic[i]] += sign * g->bytes / g->k;
        }
    }
}

/* The busiest link the group's transfers use, as a multiple of the group's
 * own bytes on it (>= 1: its fair-share slowdown), and its busy seconds. */
static double slowdown(const zs_cluster *cl, const loads *L, const grp *g, double bw, double *busy)
{
    int nn = cl->nics_per_node;
    int sn = zs_cluster_node_of(cl, g->src), dn = zs_cluster_node_of(cl, g->dst);
    double worst = 0, mine = g->routed ? g->bytes / g->k : g->bytes;
    for (int dir = 0; dir < (g->both ? 2 : 1); dir++) {
        int a = dir ? dn : sn, b = dir ? sn : dn;
        int ra = dir ? g->dst : g->src, rb = dir ? g->src : g->dst;
        int n = g->routed ? g->k : 1;
        for (int i = 0; i < n; i++) {
            int ja = g->routed ? g->nic[i] : zs_cluster_nic_of(cl, ra);
            int jb = g->routed ? g->nic[i] : zs_cluster_nic_of(cl, rb);
            double u = L->up[a * nn + ja], d = L->down[b * nn + jb];
            worst = fmax(worst, fmax(u, d));
        }
    }
    *busy = worst / bw;
    return mine > 0 ? worst / mine : 1;
}

/* The k NICs a routed group would use: least loaded (out of the source
 * node plus into the destination node), as the routing layer picks them. */
static void pick_nics(const zs_cluster *cl, const loads *L, grp *g, int k)
{
    int nn = cl->nics_per_node, sn = zs_cluster_node_of(cl, g->src),
        dn = zs_cluster_node_of(cl, g->dst);
    int used[64] = {0};
    if (k > nn)
        k = nn;
    if (k > ZS_ZEP_MAX_K)
        k = ZS_ZEP_MAX_K;
    for (int i = 0; i < k; i++) {
        int best = -1;
        double bl = 0;
        for (int j = 0; j < nn && j < 64; j++) {
            if (used[j])
                continue;
            double l = L->up[sn * nn + j] + L->down[dn * nn + j];
            if (best < 0 || l < bl) {
                best = j;
                bl = l;
            }
        }
        if (best < 0) {
            k = i;
            break;
        }
        used[best] = 1;
        g->nic[i] = best;
    }
    g->k = k > 0 ? k : 1;
}

typedef struct route_ws {
    const zs_zep_pred *p;
    const zs_zep_part *part;
    const int32_t *len;
    grp *g;
    int ng, nhops;
    loads ring, remap;
    fb *c0, *c1; /* per ring: step figures */
    double *acc;
} route_ws;

/* Per-step time of a ring hop under the current loads. */
static double hop_x(route_ws *w, const grp *g)
{
    const zs_cluster *cl = &w->p->cost->cluster;
    double busy;
    double sd = slowdown(cl, &w->ring, g, zs_cluster_link_bw(cl, ZS_LINK_NIC), &busy);
    return hop_time(w->p, g->step, sd, g->routed);
}

/* The span of ring r with its hops' current decisions and loads. */
static double ring_span(route_ws *w, int r)
{
    const zs_zep_ring *R = &w->part->rings[r];
    double x = 0;
    for (int i = 0; i < w->nhops; i++)
        if (w->g[i].ring == r)
            x = fmax(x, hop_x(w, &w->g[i]));
    double b = shard_bytes(w->p, w->len[R->docs[0]], R->g);
    x = fmax(x, zs_cost_p2p(w->p->cost, 0, w->p->tp, b));
    return layer_of(w->p, span_of(w->c0[r], w->c1[r], w->acc[r], x, R->g));
}

/* What a group's decision is judged by: the busiest link it touches and,
 * for a ring hop, its ring's span; a routed flow also pays its pipeline's
 * fill and drain on each of its transfers. */
static double objective(route_ws *w, grp *g)
{
    const zs_cluster *cl = &w->p->cost->cluster;
    double busy, bw = zs_cluster_link_bw(cl, ZS_LINK_NIC);
    slowdown(cl, g->ring >= 0 ? &w->ring : &w->remap, g, bw, &busy);
    if (g->ring >= 0)
        return fmax(busy, ring_span(w, g->ring));
    if (g->routed) /* the pipeline's fill and drain */
        busy += 2 * zs_cost_p2p(w->p->cost, 0, w->p->tp, w->p->chunk);
    return busy;
}

static int cmp_grp(const void *a, const void *b)
{
    const grp *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->ring != y->ring)
        return x->ring < y->ring ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return x->dst < y->dst ? -1 : (x->dst > y->dst);
}

static double max_link(const loads *L, double bw)
{
    double m = 0;
    for (int i = 0; i < L->N; i++)
        m = fmax(m, fmax(L->up[i], L->down[i]));
    return m / bw;
}

static double max_span(route_ws *w)
{
    double m = 0;
    for (int r = 0; r < w->part->nrings; r++)
        if (w->part->rings[r].cls == ZS_ZEP_INTER || w->part->rings[r].cls == ZS_ZEP_GLOBAL)
            m = fmax(m, ring_span(w, r));
    return m;
}

/* Bytes per token of one layer's remap transfers, one direction: forward
 * passes move Q, K, V in and O out; backward dO in, dQ, dK, dV out. */
static double remap_token_bytes(const zs_zep_pred *p)
{
    const zs_model *m = &p->cost->model;
    double qkv = (p->heads + 2.0 * p->kv_heads) * m->head_dim * m->dtype_bytes;
    double o = (double)p->heads * m->head_dim * m->dtype_bytes;
    return (p->fwd_passes + 1) * (qkv + o) / 2;
}

static void route_ws_free(route_ws *w)
{
    free(w->g);
    free(w->ring.up);
    free(w->ring.down);
    free(w->remap.up);
    free(w->remap.down);
    free(w->c0);
    free(w->c1);
    free(w->acc);
}

/* Collects the groups (all direct) and charges them. */
static int route_ws_init(route_ws *w, const zs_zep_pred *p, const zs_zep_part *part,
                         const zs_remap *rm, const int32_t *len)
{
    const zs_cluster *cl = &p->cost->cluster;
    memset(w, 0, sizeof *w);
    w->p = p;
    w->part = part;
    w->len = len;
    int cap = (rm ? rm->nflows : 0) + 1;
    for (int r = 0; r < part->nrings; r++)
        cap += part->rings[r].g;
    int N = cl->nodes * cl->nics_per_node;
    w->g = calloc((size_t)cap, sizeof(grp));
    w->ring = (loads){N, cl->nics_per_node, calloc((size_t)N, sizeof(double)),
                      calloc((size_t)N, sizeof(double))};
    w->remap = (loads){N, cl->nics_per_node, calloc((size_t)N, sizeof(double)),
                       calloc((size_t)N, sizeof(double))};
    size_t nr = (size_t)(part->nrings > 0 ? part->nrings : 1);
    w->c0 = calloc(nr, sizeof(fb));
    w->c1 = calloc(nr, sizeof(fb));
    w->acc = calloc(nr, sizeof(double));
    if (!w->g || !w->ring.up || !w->ring.down || !w->remap.up || !w->remap.down || !w->c0 ||
        !w->c1 || !w->acc)
        return ZS_ENOMEM;
    int tp = p->tp;
    for (int r = 0; r < part->nrings; r++) {
        const zs_zep_ring *R = &part->rings[r];
        int32_t l = len[R->docs[0]];
        ringfig f = ring_fig(p, l, R->g);
        w->c0[r] = f.c0;
        w->c1[r] = f.c1;
        w->acc[r] = f.acc;
        if (R->g < 2)
            continue;
        /* Every document of the ring (Zeppelin's rings hold one; the global
         * ring of hier=0 many) adds its shard to each step. */
        double step = 0;
        for (int i = 0; i < R->ndocs; i++)
            step += shard_bytes(p, len[R->docs[i]], R->g);
        double per_layer = step * (p->fwd_passes * (R->g - 1) + (R->g - 1) + R->g);
        for (int k = 0; k < R->g; k++) {
            int a = R->slots[k] * tp, b = R->slots[(k + 1) % R->g] * tp;
            if (zs_cluster_node_of(cl, a) == zs_cluster_node_of(cl, b))
                continue;
            w->g[w->ng++] = (grp){a, b, r, per_layer, step, 0, 0, {0}, 1};
        }
    }
    w->nhops = w->ng;
    /* A flow's bytes in one pass and one direction (the average of the
     * forward's Q, K, V in and O out and the backward's reverse). */
    double tok = remap_token_bytes(p) / (p->fwd_passes + 1);
    for (int i = 0; rm && i < rm->nflows; i++) {
        const zs_remap_flow *f = &rm->flows[i];
        int l = f->to * tp, a = f->from * tp;
        if (zs_cluster_node_of(cl, l) == zs_cluster_node_of(cl, a))
            continue;
        w->g[w->ng++] = (grp){l, a, -1, (double)f->tokens * tok, 0, 1, 0, {0}, 1};
    }
    /* Largest first, ties on the ranks (deterministic); hops keep their
     * place before flows. */
    qsort(w->g, (size_t)w->nhops, sizeof(grp), cmp_grp);
    qsort(w->g + w->nhops, (size_t)(w->ng - w->nhops), sizeof(grp), cmp_grp);
    for (int i = 0; i < w->ng; i++)
        charge(cl, w->g[i].ring >= 0 ? &w->ring : &w->remap, &w->g[i], 1);
    return ZS_OK;
}

int zs_zep_pred_routing(const zs_zep_pred *p, const zs_zep_part *part, const zs_remap *rm,
                        const int32_t *len, zs_route *route, zs_route_decision *out, zs_err *e)
{
    const zs_cluster *cl = &p->cost->cluster;
    route_ws w;
    zs_route_decision d = {0};
    if (route_ws_init(&w, p, part, rm, len)) {
        route_ws_free(&w);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    double bw = zs_cluster_link_bw(cl, ZS_LINK_NIC);
    d.nic_direct_s = fmax(max_link(&w.ring, bw), max_link(&w.remap, bw));
    d.span_direct_s = max_span(&w);
    /* Second pass: each unit (a ring's inter-node hops together, or one
     * remap flow), largest first, is routed when that lowers the busiest
     * link it touches and its ring's span, against every other group's
     * current choice. */
    grp *save = malloc(sizeof(grp) * (size_t)(w.ng > 0 ? w.ng : 1));
    if (!save) {
        route_ws_free(&w);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int i = 0; i < w.ng && p->k > 1;) {
        int j = i + 1;
        while (w.g[i].ring >= 0 && j < w.nhops && w.g[j].ring == w.g[i].ring)
            j++;
        loads *L = w.g[i].ring >= 0 ? &w.ring : &w.remap;
        double before = 0, after = 0;
        for (int x = i; x < j; x++)
            before = fmax(before, objective(&w, &w.g[x]));
        memcpy(save, w.g + i, sizeof(grp) * (size_t)(j - i));
        for (int x = i; x < j; x++) {
            charge(cl, L, &w.g[x], -1);
            w.g[x].routed = 1;
            pick_nics(cl, L, &w.g[x], p->k);
            charge(cl, L, &w.g[x], 1);
        }
        for (int x = i; x < j; x++)
            after = fmax(after, objective(&w, &w.g[x]));
        if (!(after < before))
            for (int x = j - 1; x >= i; x--) {
                charge(cl, L, &w.g[x], -1);
                w.g[x] = save[x - i];
                charge(cl, L, &w.g[x], 1);
            }
        i = j;
    }
    free(save);
    int *src = malloc(sizeof(int) * (size_t)(2 * w.ng + 1));
    int *dst = malloc(sizeof(int) * (size_t)(2 * w.ng + 1));
    int nd = 0;
    if (!src || !dst) {
        free(src);
        free(dst);
        route_ws_free(&w);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int i = 0; i < w.ng; i++) {
        grp *g = &w.g[i];
        if (g->ring >= 0)
            g->routed ? d.hops_routed++ : d.hops_direct++;
        else
            g->routed ? d.flows_routed++ : d.flows_direct++;
        if (g->routed)
            continue;
        src[nd] = g->src;
        dst[nd++] = g->dst;
        if (g->both) {
            src[nd] = g->dst;
            dst[nd++] = g->src;
        }
    }
    int rc = zs_route_set_direct(route, src, dst, nd);
    d.nic_decided_s = fmax(max_link(&w.ring, bw), max_link(&w.remap, bw));
    d.span_decided_s = max_span(&w);
    free(src);
    free(dst);
    route_ws_free(&w);
    if (rc)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    *out = d;
    return ZS_OK;
}

/* ---- the layer ---------------------------------------------------------------- */

typedef struct slot_pred {
    fb comp;     /* attention compute (local documents and ring shares) */
    fb local;    /* of which local documents */
    fb imp_comp; /* compute of the work that waits for imported tokens */
    zs_iter_lin lin;
    double lin_tok, moved, exported;
} slot_pred;

/* Arrival time (after the sender's mark) of one remap flow, one direction:
 * its bytes through the busiest link of its path in the remap table. */
static double flow_time(const zs_zep_pred *p, const zs_route *route, const loads *L, int from,
                        int to, double bytes)
{
    const zs_cluster *cl = &p->cost->cluster;
    if (zs_cluster_node_of(cl, from) == zs_cluster_node_of(cl, to))
        return zs_cost_p2p(p->cost, from, to, bytes);
    int nn = cl->nics_per_node, a = zs_cluster_node_of(cl, from), b = zs_cluster_node_of(cl, to);
    if (!zs_route_routed(route, from, to)) {
        double link = fmax(L->up[a * nn + zs_cluster_nic_of(cl, from)],
                           L->down[b * nn + zs_cluster_nic_of(cl, to)]);
        return zs_cost_p2p(p->cost, from, to, fmax(bytes, link));
    }
    double link = 0;
    for (int j = 0; j < nn; j++)
        link = fmax(link, fmax(L->up[a * nn + j], L->down[b * nn + j]));
    double slice = bytes / p->k, chunk = p->chunk < slice ? p->chunk : slice;
    return zs_cost_p2p(p->cost, from, to, fmax(slice, link)) +
           2 * zs_cost_p2p(p->cost, 0, p->tp, chunk);
}

typedef struct layer_ws {
    const zs_zep_pred *p;
    const zs_zep_part *part;
    const zs_remap *rm;
    const int32_t *len;
    const zs_route *route;
    route_ws w;
    slot_pred *sp;
    double *start, *A, *imp, *oarr;
    fb *span, *share;        /* per ring: its span, a member's compute */
    int *mem_off, *mem_ring; /* per slot: its rings (CSR) */
} layer_ws;

static void layer_ws_free(layer_ws *L)
{
    route_ws_free(&L->w);
    free(L->sp);
    free(L->start);
    free(L->span);
    free(L->A);
    free(L->imp);
    free(L->oarr);
    free(L->share);
    free(L->mem_off);
    free(L->mem_ring);
}

/* Loads with the routing layer's decisions, compute per slot, ring spans,
 * linear times. */
static int layer_prepare(layer_ws *L, zs_err *e)
{
    const zs_zep_pred *p = L->p;
    const zs_zep_part *part = L->part;
    const zs_remap *rm = L->rm;
    const zs_cluster *cl = &p->cost->cluster;
    int S = part->nslots, tp = p->tp, rc = ZS_OK;
    route_ws *w = &L->w;
    for (int i = 0; i < w->ng; i++) {
        grp *g = &w->g[i];
        if (!zs_route_routed(L->route, g->src, g->dst))
            continue;
        loads *ld = g->ring >= 0 ? &w->ring : &w->remap;
        charge(cl, ld, g, -1);
        g->routed = 1;
        pick_nics(cl, ld, g, p->k);
        charge(cl, ld, g, 1);
    }
    for (int32_t d = 0; d < part->ndocs; d++)
        if (part->cls[d] == ZS_ZEP_LOCAL) {
            fb c = member_fb(p, L->len[d], 1);
            L->sp[part->slot_of[d]].comp.f += c.f;
            L->sp[part->slot_of[d]].comp.b += c.b;
            L->sp[part->slot_of[d]].local.f += c.f;
            L->sp[part->slot_of[d]].local.b += c.b;
        }
    for (int r = 0; r < part->nrings; r++) {
        const zs_zep_ring *R = &part->rings[r];
        fb c = {0, 0};
        double b = 0, x = 0;
        for (int i = 0; i < R->ndocs; i++) {
            fb m = member_fb(p, L->len[R->docs[i]], R->g);
            c.f += m.f;
            c.b += m.b;
            b += shard_bytes(p, L->len[R->docs[i]], R->g);
        }
        L->share[r] = c;
        for (int k = 0; k < R->g; k++) {
            L->sp[R->slots[k]].comp.f += c.f;
            L->sp[R->slots[k]].comp.b += c.b;
        }
        for (int i = 0; i < w->nhops; i++)
            if (w->g[i].ring == r)
                x = fmax(x, hop_x(w, &w->g[i]));
        x = fmax(x, R->g > 1 ? zs_cost_p2p(p->cost, 0, tp, b) : 0);
        L->span[r] = span_of(w->c0[r], w->c1[r], w->acc[r], x, R->g);
    }
    /* Linear tokens, moved and exported tokens (the engine exports the
     * tokens a slot computes last: its local documents). */
    for (int s = 0; s < S; s++) {
        L->sp[s].lin_tok = rm ? (double)rm->target[s] : (double)part->tokens[s];
        if (rm && part->tokens[s] > rm->target[s])
            L->sp[s].exported = (double)(part->tokens[s] - rm->target[s]);
    }
    for (int i = 0; rm && i < rm->nflows; i++)
        L->sp[rm->flows[i].to].moved += (double)rm->flows[i].tokens;
    for (int s = 0; s < S && !rc; s++)
        rc = linear_time(p, L->sp[s].lin_tok, L->sp[s].moved, &L->sp[s].lin, e);
    for (int s = 0; s < S && !rc; s++) {
        slot_pred *x = &L->sp[s];
        double t = (double)part->tokens[s];
        if (t > 0 && x->exported > 0)
            x->imp_comp = (fb){x->comp.f * x->exported / t, x->comp.b * x->exported / t};
    }
    return rc;
}

/* When slot s's attention ends in direction dir. Its work becomes
 * available at release times (local documents at its entry, work on
 * imported tokens when they arrived, each ring when every member entered),
 * so it cannot end before any release time plus all the work released at
 * or after it (the single-machine bound with release times), nor before
 * its rings' spans end. */
static double slot_attention_end(const layer_ws *L, int s, int dir)
{
    const slot_pred *x = &L->sp[s];
    double en = dir ? x->lin.bwd_entry : x->lin.fwd_entry;
    double loc = dir ? x->local.b : x->local.f, imp = dir ? x->imp_comp.b : x->imp_comp.f;
    double rel[64], work[64], end = en;
    int n = 0;
    if (L->imp[s] > 0 && imp > 0) {
        rel[n] = fmax(L->imp[s], en);
        work[n++] = imp;
        loc = fmax(0, loc - imp);
    }
    rel[n] = en;
    work[n++] = loc;
    for (int i = L->mem_off[s]; i < L->mem_off[s + 1]; i++) {
        int r = L->mem_ring[i];
        double st = L->start[r], sh = dir ? L->share[r].b : L->share[r].f;
        end = fmax(end, st + (dir ? L->span[r].b : L->span[r].f));
        if (n < 64) {
            rel[n] = st;
            work[n++] = sh;
        } else {
            work[n - 1] += sh; /* beyond 64 rings: released with the last one */
        }
    }
    for (int i = 0; i < n; i++) {
        double w = 0;
        for (int j = 0; j < n; j++)
            if (rel[j] >= rel[i])
                w += work[j];
        end = fmax(end, rel[i] + w);
    }
    return end;
}

/* One direction (0: a forward pass, 1: the backward): when each slot's
 * attention ends (imports, rings starting when all members entered), when
 * its remapped outputs are back, and the slowest slot's layer end. */
static void layer_direction(layer_ws *L, int dir, double *end, double *attn, double *lin)
{
    const zs_zep_pred *p = L->p;
    const zs_zep_part *part = L->part;
    const zs_remap *rm = L->rm;
    int S = part->nslots, tp = p->tp;
    double tok = remap_token_bytes(p) / (p->fwd_passes + 1); /* one pass, one direction */
    for (int s = 0; s < S; s++)
        L->imp[s] = L->oarr[s] = 0;
    for (int i = 0; rm && i < rm->nflows; i++) {
        const zs_remap_flow *f = &rm->flows[i];
        const zs_iter_lin *l = &L->sp[f->to].lin;
        double x =
            flow_time(p, L->route, &L->w.remap, f->to * tp, f->from * tp, (double)f->tokens * tok);
        L->imp[f->from] = fmax(L->imp[f->from], (dir ? l->bwd_moved : l->fwd_moved) + x);
    }
    for (int r = 0; r < part->nrings; r++) {
        const zs_zep_ring *R = &part->rings[r];
        L->start[r] = 0;
        for (int k = 0; k < R->g; k++) {
            const zs_iter_lin *l = &L->sp[R->slots[k]].lin;
            L->start[r] = fmax(L->start[r], dir ? l->bwd_entry : l->fwd_entry);
        }
    }
    for (int s = 0; s < S; s++)
        L->A[s] = slot_attention_end(L, s, dir);
    /* A ring ends with its last member: a member busy with other work
     * holds the ring's steps, and every member waits for them. */
    for (int r = 0; r < part->nrings; r++) {
        const zs_zep_ring *R = &part->rings[r];
        double t = 0;
        for (int k = 0; k < R->g; k++)
            t = fmax(t, L->A[R->slots[k]]);
        L->start[r] = t; /* reused: the ring's end */
    }
    for (int r = 0; r < part->nrings; r++) {
        const zs_zep_ring *R = &part->rings[r];
        for (int k = 0; k < R->g; k++)
            L->A[R->slots[k]] = fmax(L->A[R->slots[k]], L->start[r]);
    }
    for (int i = 0; rm && i < rm->nflows; i++) {
        const zs_remap_flow *f = &rm->flows[i];
        double x =
            flow_time(p, L->route, &L->w.remap, f->from * tp, f->to * tp, (double)f->tokens * tok);
        L->oarr[f->to] = fmax(L->oarr[f->to], L->A[f->from] + x);
    }
    *end = *attn = *lin = 0;
    for (int s = 0; s < S; s++) {
        const zs_iter_lin *l = &L->sp[s].lin;
        double post = dir ? l->bwd_post : l->fwd_post, kept = dir ? l->bwd_kept : l->fwd_kept;
        double en = dir ? l->bwd_entry : l->fwd_entry, a = L->A[s], t = a + post;
        if (L->sp[s].moved > 0)
            t = fmax(a + kept, L->oarr[s]) + (post - kept);
        *end = fmax(*end, t);
        *attn = fmax(*attn, a - en);
        *lin = fmax(*lin, en + post);
    }
}

int zs_zep_pred_layer(const zs_zep_pred *p, const zs_zep_part *part, const zs_remap *rm,
                      const int32_t *len, const zs_route *route, zs_zep_layer_pred *out, zs_err *e)
{
    int S = part->nslots;
    size_t nr = (size_t)(part->nrings > 0 ? part->nrings : 1);
    layer_ws L = {p,    part, rm,   len,  route, {0},  NULL, NULL,
                  NULL, NULL, NULL, NULL, NULL,  NULL, NULL};
    int rc = route_ws_init(&L.w, p, part, rm, len);
    L.sp = calloc((size_t)S, sizeof(slot_pred));
    L.start = calloc(nr, sizeof(double));
    L.span = calloc(nr, sizeof(fb));
    L.A = calloc((size_t)S, sizeof(double));
    L.imp = calloc((size_t)S, sizeof(double));
    L.oarr = calloc((size_t)S, sizeof(double));
    L.share = calloc(nr, sizeof(fb));
    L.mem_off = calloc((size_t)S + 1, sizeof(int));
    int nm = 0;
    for (int r = 0; r < part->nrings; r++)
        nm += part->rings[r].g;
    L.mem_ring = malloc(sizeof(int) * (size_t)(nm > 0 ? nm : 1));
    if (rc || !L.sp || !L.start || !L.span || !L.A || !L.imp || !L.oarr || !L.share || !L.mem_off ||
        !L.mem_ring) {
        layer_ws_free(&L);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    /* Each slot's rings (CSR). */
    for (int r = 0; r < part->nrings; r++)
        for (int k = 0; k < part->rings[r].g; k++)
            L.mem_off[part->rings[r].slots[k] + 1]++;
    for (int s = 0; s < S; s++)
        L.mem_off[s + 1] += L.mem_off[s];
    int *fill = calloc((size_t)S, sizeof(int));
    if (!fill) {
        layer_ws_free(&L);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    for (int r = 0; r < part->nrings; r++)
        for (int k = 0; k < part->rings[r].g; k++) {
            int s = part->rings[r].slots[k];
            L.mem_ring[L.mem_off[s] + fill[s]++] = r;
        }
    free(fill);
    if (!(rc = layer_prepare(&L, e))) {
        double fe, fa, fl, be, ba, bl;
        layer_direction(&L, 0, &fe, &fa, &fl);
        layer_direction(&L, 1, &be, &ba, &bl);
        out->layer_s = p->fwd_passes * fe + be;
        out->attn_s = p->fwd_passes * fa + ba;
        out->linear_s = p->fwd_passes * fl + bl;
    }
    layer_ws_free(&L);
    return rc;
}
