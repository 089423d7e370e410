/* DCP's blocks, hypergraph and partitioner: see zs_dcp_part_internal.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "zs_dcp_part_internal.h"

static int oom(zs_err *e)
{
    return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
}

void zs_dcp_blocks_free(zs_dcp_blocks *b)
{
    free(b->ddoc);
    free(b->dt0);
    free(b->dt1);
    free(b->cq);
    free(b->ck);
    memset(b, 0, sizeof *b);
}

int zs_dcp_blocks_build(const int32_t *len, int32_t ndocs, int32_t block, zs_dcp_blocks *out,
                        zs_err *e)
{
    memset(out, 0, sizeof *out);
    if (block < 1 || ndocs < 0)
        return zs_err_set(e, ZS_EINVALID, "dcp blocks", NULL, "block size %d, %d documents",
                          (int)block, (int)ndocs);
    int64_t nd = 0, nc = 0;
    for (int32_t d = 0; d < ndocs; d++) {
        int64_t n = ((int64_t)len[d] + block - 1) / block;
        nd += n;
        nc += n * (n + 1) / 2;
    }
    if (nd > INT32_MAX / 2)
        return zs_err_set(e, ZS_EINPUT, "dcp", "raise the block size",
                          "%lld data blocks, more than the partitioner holds", (long long)nd);
    size_t dn = (size_t)(nd > 0 ? nd : 1), cn = (size_t)(nc > 0 ? nc : 1);
    out->ddoc = malloc(sizeof(int32_t) * dn);
    out->dt0 = malloc(sizeof(int32_t) * dn);
    out->dt1 = malloc(sizeof(int32_t) * dn);
    out->cq = malloc(sizeof(int32_t) * cn);
    out->ck = malloc(sizeof(int32_t) * cn);
    if (!out->ddoc || !out->dt0 || !out->dt1 || !out->cq || !out->ck) {
        zs_dcp_blocks_free(out);
        return oom(e);
    }
    int32_t i = 0;
    int64_t c = 0;
    for (int32_t d = 0; d < ndocs; d++) {
        int32_t first = i;
        for (int32_t t = 0; t < len[d]; t += block, i++) {
            out->ddoc[i] = d;
            out->dt0[i] = t;
            out->dt1[i] = len[d] - t > block ? t + block : len[d];
        }
        for (int32_t q = first; q < i; q++)
            for (int32_t k = first; k <= q; k++, c++) {
                out->cq[c] = q;
                out->ck[c] = k;
            }
    }
    out->ndata = i;
    out->ncomp = c;
    return ZS_OK;
}

double zs_dcp_comp_work(const zs_dcp_blocks *b, int64_t c)
{
    double nq = b->dt1[b->cq[c]] - b->dt0[b->cq[c]], nk = b->dt1[b->ck[c]] - b->dt0[b->ck[c]];
    return b->cq[c] == b->ck[c] ? nq * (nq + 1) / 2 : nq * nk;
}

/* ---- vertices and nets ---------------------------------------------------------
 * Vertex v < ndata is data block v, v >= ndata compute block v - ndata.
 * Net 2i is data block i's KV net, 2i + 1 its Q net; every vertex has two. */

typedef struct pstate {
    const zs_dcp_part_in *in;
    const zs_dcp_blocks *b;
    int64_t nv;
    double *mem, *comp; /* per vertex */
    int *node;          /* per vertex: level-1 part */
    int *loc;           /* per vertex: part in the level being built (-1: not in it) */
    int moves;
} pstate;

static void vnets(const pstate *P, int64_t v, int64_t n[2])
{
    if (v < P->b->ndata) {
        n[0] = 2 * v;
        n[1] = 2 * v + 1;
    } else {
        n[0] = 2 * (int64_t)P->b->ck[v - P->b->ndata];
        n[1] = 2 * (int64_t)P->b->cq[v - P->b->ndata] + 1;
    }
}

static double net_w(const pstate *P, int64_t n)
{
    const zs_dcp_blocks *b = P->b;
    int64_t d = n / 2;
    return (double)(b->dt1[d] - b->dt0[d]) * (n % 2 ? P->in->wq : P->in->wkv);
}

/* One level: k parts over a subset of the vertices. */
typedef struct level {
    int k;
    const int64_t *verts;
    int64_t n;
    int32_t *cnt; /* [net * k + part]: pins of the net in the part */
    double *mload, *cload;
    double capm, capc;
} level;

/* The km1 reduction of moving v from its part to t. */
static double gain(const pstate *P, const level *L, int64_t v, int t)
{
    int64_t n[2];
    vnets(P, v, n);
    int p = P->loc[v];
    double g = 0;
    for (int j = 0; j < 2; j++) {
        double w = net_w(P, n[j]);
        if (L->cnt[n[j] * L->k + p] == 1)
            g += w;
        if (L->cnt[n[j] * L->k + t] == 0)
            g -= w;
    }
    return g;
}

static int fits(const pstate *P, const level *L, int64_t v, int t)
{
    return L->mload[t] + P->mem[v] <= L->capm && L->cload[t] + P->comp[v] <= L->capc;
}

static void place(pstate *P, level *L, int64_t v, int t, int sign)
{
    int64_t n[2];
    vnets(P, v, n);
    for (int j = 0; j < 2; j++)
        L->cnt[n[j] * L->k + t] += sign;
    L->mload[t] += sign * P->mem[v];
    L->cload[t] += sign * P->comp[v];
}

static void move(pstate *P, level *L, int64_t v, int t)
{
    place(P, L, v, P->loc[v], -1);
    place(P, L, v, t, 1);
    P->loc[v] = t;
    P->moves++;
}

/* The part other than v's own that v fits in with the largest gain (lowest
 * part on ties), or -1. */
static int best_target(const pstate *P, const level *L, int64_t v, double *g)
{
    int best = -1;
    for (int t = 0; t < L->k; t++) {
        if (t == P->loc[v] || !fits(P, L, v, t))
            continue;
        double x = gain(P, L, v, t);
        if (best < 0 || x > *g) {
            best = t;
            *g = x;
        }
    }
    return best;
}

/* Initial placement: data blocks in contiguous runs of equal memory (a
 * block goes to the part its middle token falls in), compute blocks with
 * their query block, else their key block, else on the least-loaded part. */
static void initial(pstate *P, level *L)
{
    double M = 0, cum = 0;
    for (int64_t i = 0; i < L->n; i++)
        M += P->mem[L->verts[i]];
    for (int64_t i = 0; i < L->n; i++) {
        int64_t v = L->verts[i];
        int t = 0;
        if (v < P->b->ndata) {
            t = M > 0 ? (int)((cum + P->mem[v] / 2) * L->k / M) : 0;
            cum += P->mem[v];
        } else {
            int64_t c = v - P->b->ndata;
            int lq = P->loc[P->b->cq[c]], lk = P->loc[P->b->ck[c]];
            t = lq >= 0 ? lq : lk;
            if (t < 0) {
                t = 0;
                for (int u = 1; u < L->k; u++)
                    if (L->cload[u] < L->cload[t])
                        t = u;
            }
        }
        if (t >= L->k)
            t = L->k - 1;
        P->loc[v] = t;
        place(P, L, v, t, 1);
    }
}

typedef struct cand {
    double g;
    int64_t v;
} cand;

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->g != y->g)
        return x->g > y->g ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

/* Moves compute blocks off parts above the compute cap, the ones losing
 * least (gaining most) km1 first. */
static int rebalance(pstate *P, level *L, zs_err *e)
{
    cand *cs = malloc(sizeof(cand) * (size_t)(L->n > 0 ? L->n : 1));
    if (!cs)
        return oom(e);
    for (int round = 0; round < 4; round++) {
        int over = 0;
        for (int p = 0; p < L->k; p++) {
            if (L->cload[p] <= L->capc)
                continue;
            over = 1;
            int64_t nc = 0;
            for (int64_t i = 0; i < L->n; i++) {
                int64_t v = L->verts[i];
                double g = 0;
                if (v >= P->b->ndata && P->loc[v] == p && best_target(P, L, v, &g) >= 0)
                    cs[nc++] = (cand){g, v};
            }
            qsort(cs, (size_t)nc, sizeof *cs, cmp_cand);
            for (int64_t i = 0; i < nc && L->cload[p] > L->capc; i++) {
                double g = 0;
                int t = best_target(P, L, cs[i].v, &g);
                if (t >= 0)
                    move(P, L, cs[i].v, t);
            }
        }
        if (!over)
            break;
    }
    free(cs);
    return ZS_OK;
}

/* Greedy refinement: every vertex in id order moves to the part that
 * reduces km1 most within both caps; passes until none moves. */
static void refine(pstate *P, level *L)
{
    double tiny = 1e-9 * (P->in->wq + P->in->wkv);
    for (int pass = 0; pass < P->in->passes; pass++) {
        int moved = 0;
        for (int64_t i = 0; i < L->n; i++) {
            int64_t v = L->verts[i];
            double g = 0;
            int t = best_target(P, L, v, &g);
            if (t >= 0 && g > tiny) {
                move(P, L, v, t);
                moved = 1;
            }
        }
        if (!moved)
            break;
    }
}

/* One level over verts (ascending ids) into k parts with compute tolerance
 * eps; leaves each vertex's part in P->loc. */
static int kway(pstate *P, const int64_t *verts, int64_t n, int k, double eps, zs_err *e)
{
    level L = {.k = k, .verts = verts, .n = n};
    size_t nn = (size_t)P->b->ndata * 2;
    L.cnt = calloc(nn * (size_t)k + 1, sizeof(int32_t));
    L.mload = calloc((size_t)k, sizeof(double));
    L.cload = calloc((size_t)k, sizeof(double));
    if (!L.cnt || !L.mload || !L.cload) {
        free(L.cnt);
        free(L.mload);
        free(L.cload);
        return oom(e);
    }
    double M = 0, C = 0, cmax = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = verts[i];
        M += P->mem[v];
        C += P->comp[v];
        cmax = P->comp[v] > cmax ? P->comp[v] : cmax;
    }
    /* A compute cap below the mean plus the heaviest block may leave the
     * rebalancing nothing to move; the memory cap is at least what the
     * contiguous split gives (within one block of the mean), so the
     * initial placement is feasible. */
    L.capc = (1 + eps) * C / k;
    L.capc = L.capc < C / k + cmax ? C / k + cmax : L.capc;
    for (int64_t v = 0; v < P->nv; v++)
        P->loc[v] = -1;
    initial(P, &L);
    L.capm = (1 + P->in->eps_mem) * M / k;
    for (int p = 0; p < k; p++)
        L.capm = L.mload[p] > L.capm ? L.mload[p] : L.capm;
    int rc = rebalance(P, &L, e);
    if (!rc)
        refine(P, &L);
    free(L.cnt);
    free(L.mload);
    free(L.cload);
    return rc;
}

/* ---- the hierarchy ------------------------------------------------------------ */

static int pstate_init(pstate *P, const zs_dcp_part_in *in, zs_err *e)
{
    const zs_dcp_blocks *b = in->b;
    memset(P, 0, sizeof *P);
    P->in = in;
    P->b = b;
    P->nv = b->ndata + b->ncomp;
    size_t n = (size_t)(P->nv > 0 ? P->nv : 1);
    P->mem = calloc(n, sizeof(double));
    P->comp = calloc(n, sizeof(double));
    P->node = calloc(n, sizeof(int));
    P->loc = malloc(sizeof(int) * n);
    if (!P->mem || !P->comp || !P->node || !P->loc)
        return oom(e);
    for (int32_t i = 0; i < b->ndata; i++)
        P->mem[i] = b->dt1[i] - b->dt0[i];
    for (int64_t c = 0; c < b->ncomp; c++)
        P->comp[b->ndata + c] = zs_dcp_comp_work(b, c);
    return ZS_OK;
}

static void pstate_free(pstate *P)
{
    free(P->mem);
    free(P->comp);
    free(P->node);
    free(P->loc);
}

/* Max / mean of the parts' memory and compute. */
static void imbalance(const pstate *P, const int *part, int parts, zs_dcp_part_out *out)
{
    double *m = calloc((size_t)parts * 2, sizeof(double));
    out->mem_imb = out->comp_imb = 1;
    if (!m)
        return;
    double tm = 0, tc = 0, mm = 0, mc = 0;
    for (int64_t v = 0; v < P->nv; v++) {
        m[part[v]] += P->mem[v];
        m[parts + part[v]] += P->comp[v];
        tm += P->mem[v];
        tc += P->comp[v];
    }
    for (int p = 0; p < parts; p++) {
        mm = m[p] > mm ? m[p] : mm;
        mc = m[parts + p] > mc ? m[parts + p] : mc;
    }
    out->mem_imb = tm > 0 ? mm * parts / tm : 1;
    out->comp_imb = tc > 0 ? mc * parts / tc : 1;
    free(m);
}

/* Level 1 over the nodes (node[]), level 2 over each node's devices
 * (part[] = node * per_node + device). */
static int hierarchy(pstate *P, int64_t *verts, int *part, zs_err *e)
{
    const zs_dcp_part_in *in = P->in;
    int rc = ZS_OK;
    for (int64_t v = 0; v < P->nv; v++)
        verts[v] = v;
    if (in->nodes > 1) {
        rc = kway(P, verts, P->nv, in->nodes, in->eps_comp * in->inter_factor, e);
        for (int64_t v = 0; v < P->nv && !rc; v++)
            P->node[v] = P->loc[v];
    }
    for (int nd = 0; nd < in->nodes && !rc; nd++) {
        int64_t n = 0;
        for (int64_t v = 0; v < P->nv; v++)
            if (P->node[v] == nd)
                verts[n++] = v;
        if (n == 0)
            continue;
        if (in->per_node > 1) {
            rc = kway(P, verts, n, in->per_node, in->eps_comp, e);
        } else {
            for (int64_t i = 0; i < n; i++)
                P->loc[verts[i]] = 0;
        }
        for (int64_t i = 0; i < n && !rc; i++)
            part[verts[i]] = nd * in->per_node + P->loc[verts[i]];
    }
    return rc;
}

void zs_dcp_part_free(zs_dcp_part_out *o)
{
    free(o->dpart);
    free(o->cpart);
    o->dpart = o->cpart = NULL;
}

int zs_dcp_partition(const zs_dcp_part_in *in, zs_dcp_part_out *out, zs_err *e)
{
    memset(out, 0, sizeof *out);
    if (in->nodes < 1 || in->per_node < 1 || in->passes < 0 || in->eps_mem < 0 ||
        in->eps_comp < 0 || in->inter_factor < 0)
        return zs_err_set(e, ZS_EINVALID, "dcp partitioner", NULL,
                          "%d nodes x %d devices, %d passes: bad parameters", in->nodes,
                          in->per_node, in->passes);
    const zs_dcp_blocks *b = in->b;
    pstate P;
    int rc = pstate_init(&P, in, e);
    size_t n = (size_t)(P.nv > 0 ? P.nv : 1);
    int64_t *verts = malloc(sizeof(int64_t) * n);
    int *part = calloc(n, sizeof(int));
    out->dpart = malloc(sizeof(int) * (size_t)(b->ndata > 0 ? b->ndata : 1));
    out->cpart = malloc(sizeof(int) * (size_t)(b->ncomp > 0 ? b->ncomp : 1));
    if (!rc && (!verts || !part || !out->dpart || !out->cpart))
        rc = oom(e);
    if (!rc)
        rc = hierarchy(&P, verts, part, e);
    if (!rc) {
        int parts = in->nodes * in->per_node;
        memcpy(out->dpart, part, sizeof(int) * (size_t)b->ndata);
        memcpy(out->cpart, part + b->ndata, sizeof(int) * (size_t)b->ncomp);
        out->km1 = zs_dcp_km1(b, in->wkv, in->wq, out->dpart, out->cpart, parts);
        out->moves = P.moves;
        imbalance(&P, part, parts, out);
    }
    free(verts);
    free(part);
    pstate_free(&P);
    if (rc)
        zs_dcp_part_free(out);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

double zs_dcp_km1(const zs_dcp_blocks *b, double wkv, double wq, const int *dpart, const int *cpart,
                  int parts)
{
    /* (net, part) pairs of every pin, sorted: a net's distinct pairs are
     * its connectivity. */
    int64_t np = 2 * ((int64_t)b->ndata + b->ncomp), k = 0;
    int64_t *pair = malloc(sizeof(int64_t) * (size_t)(np > 0 ? np : 1));
    if (!pair)
        return -1;
    for (int32_t i = 0; i < b->ndata; i++) {
        pair[k++] = (2 * (int64_t)i) * parts + dpart[i];
        pair[k++] = (2 * (int64_t)i + 1) * parts + dpart[i];
    }
    for (int64_t c = 0; c < b->ncomp; c++) {
        pair[k++] = (2 * (int64_t)b->ck[c]) * parts + cpart[c];
        pair[k++] = (2 * (int64_t)b->cq[c] + 1) * parts + cpart[c];
    }
    qsort(pair, (size_t)np, sizeof *pair, cmp_i64);
    double km1 = 0;
    for (int64_t i = 1; i < np; i++)
        if (pair[i] != pair[i - 1] && pair[i] / parts == pair[i - 1] / parts) {
            int64_t net = pair[i] / parts, d = net / 2;
            km1 += (double)(b->dt1[d] - b->dt0[d]) * (net % 2 ? wq : wkv);
        }
    free(pair);
    return km1;
}
