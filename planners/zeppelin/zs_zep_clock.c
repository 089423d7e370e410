/* The predicted clock of Zeppelin's attention engine: see zs_zep_clock_internal.h. */
#include "zs_zep_clock_internal.h"

#include <stdlib.h>
#include <string.h>

/* Link index layout: [nvu R][nvd R][pu R][pd R][xu N][xd N] for R ranks and
 * N NICs (node-major), the directions of the SimGrid platform's links. */
enum { L_NVU, L_NVD, L_PU, L_PD, L_XU, L_XD };

struct zs_zep_clock {
    const zs_cost *c;
    int R, N;
    double *free; /* per link: time it is next free */
    double bw[6];
};

zs_zep_clock *zs_zep_clock_new(const zs_cost *c)
{
    zs_zep_clock *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    const zs_cluster *cl = &c->cluster;
    k->c = c;
    k->R = zs_cluster_gpus(cl);
    k->N = cl->nodes * cl->nics_per_node;
    k->free = calloc((size_t)(4 * k->R + 2 * k->N), sizeof(double));
    if (!k->free) {
        free(k);
        return NULL;
    }
    k->bw[L_NVU] = k->bw[L_NVD] = zs_cluster_link_bw(cl, ZS_LINK_NVLINK);
    k->bw[L_PU] = k->bw[L_PD] = zs_cluster_link_bw(cl, ZS_LINK_PCIE);
    k->bw[L_XU] = k->bw[L_XD] = zs_cluster_link_bw(cl, ZS_LINK_NIC);
    return k;
}

void zs_zep_clock_free(zs_zep_clock *k)
{
    if (!k)
        return;
    free(k->free);
    free(k);
}

void zs_zep_clock_reset(zs_zep_clock *k)
{
    memset(k->free, 0, sizeof(double) * (size_t)(4 * k->R + 2 * k->N));
}

static int link_id(const zs_zep_clock *k, int kind, int i)
{
    return kind < L_XU ? kind * k->R + i : 4 * k->R + (kind - L_XU) * k->N + i;
}

/* The links of one hop a -> b: NVLink ports inside a node; PCIe and NIC on
 * both ends across nodes (nic: the NIC index inside the node, -1: a's). */
static int hop_links(const zs_zep_clock *k, int a, int b, int nic, int *l, int *kind)
{
    const zs_cluster *cl = &k->c->cluster;
    if (zs_cluster_node_of(cl, a) == zs_cluster_node_of(cl, b)) {
        kind[0] = L_NVU;
        l[0] = link_id(k, L_NVU, a);
        kind[1] = L_NVD;
        l[1] = link_id(k, L_NVD, b);
        return 2;
    }
    int na = nic >= 0 ? nic : zs_cluster_nic_of(cl, a),
        nb = nic >= 0 ? nic : zs_cluster_nic_of(cl, b);
    int nn = cl->nics_per_node;
    kind[0] = L_PU;
    l[0] = link_id(k, L_PU, a);
    kind[1] = L_XU;
    l[1] = link_id(k, L_XU, zs_cluster_node_of(cl, a) * nn + na);
    kind[2] = L_XD;
    l[2] = link_id(k, L_XD, zs_cluster_node_of(cl, b) * nn + nb);
    kind[3] = L_PD;
    l[3] = link_id(k, L_PD, b);
    return 4;
}

double zs_zep_clock_xfer(zs_zep_clock *k, const zs_route_path *p, int src, int dst, double bytes,
                         double t)
{
    if (!(bytes > 0))
        return t;
    int l[12] = {0}, kind[12] = {0}; /* -O3 GCC cannot see hop_links fills the first n */
    if (p->direct) {
        int n = hop_links(k, src, dst, -1, l, kind);
        double s = t;
        for (int i = 0; i < n; i++)
            s = k->free[l[i]] > s ? k->free[l[i]] : s;
        for (int i = 0; i < n; i++)
            k->free[l[i]] = s + bytes / k->bw[kind[i]];
        return s + zs_cost_p2p(k->c, src, dst, bytes);
    }
    double end = t;
    for (int i = 0; i < p->k; i++) {
        int px = p->proxy[i], q = p->peer[i], n = 0;
        double sl = p->slice[i], ch = p->nchunks[i] > 0 ? sl / p->nchunks[i] : sl;
        double dur = zs_cost_p2p(k->c, px, q, sl);
        if (px != src) {
            n += hop_links(k, src, px, -1, l + n, kind + n);
            dur += zs_cost_p2p(k->c, src, px, ch);
        }
        n += hop_links(k, px, q, p->nic[i], l + n, kind + n);
        if (q != dst) {
            n += hop_links(k, q, dst, -1, l + n, kind + n);
            dur += zs_cost_p2p(k->c, q, dst, ch);
        }
        double s = t;
        for (int j = 0; j < n; j++)
            s = k->free[l[j]] > s ? k->free[l[j]] : s;
        for (int j = 0; j < n; j++)
            k->free[l[j]] = s + sl / k->bw[kind[j]];
        if (s + dur > end)
            end = s + dur;
    }
    return end;
}

/* ---- events ---------------------------------------------------------------- */

static int ev_less(const zs_zep_event *a, const zs_zep_event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int zs_zep_events_push(zs_zep_events *q, double t, int kind, int a, int b, int c)
{
    if (q->n == q->cap) {
        int64_t nc = q->cap ? 2 * q->cap : 256;
        zs_zep_event *v = realloc(q->v, sizeof *v * (size_t)nc);
        if (!v)
            return ZS_ENOMEM;
        q->v = v;
        q->cap = nc;
    }
    zs_zep_event x = {t, q->seq++, kind, a, b, c};
    int64_t i = q->n++;
    while (i > 0 && ev_less(&x, &q->v[(i - 1) / 2])) {
        q->v[i] = q->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->v[i] = x;
    return ZS_OK;
}

int zs_zep_events_pop(zs_zep_events *q, zs_zep_event *out)
{
    if (q->n == 0)
        return 0;
    *out = q->v[0];
    zs_zep_event x = q->v[--q->n];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && ev_less(&q->v[c + 1], &q->v[c]))
            c++;
        if (!ev_less(&q->v[c], &x))
            break;
        q->v[i] = q->v[c];
        i = c;
    }
    if (q->n > 0)
        q->v[i] = x;
    return 1;
}

void zs_zep_events_free(zs_zep_events *q)
{
    free(q->v);
    q->v = NULL;
    q->n = q->cap = 0;
}
