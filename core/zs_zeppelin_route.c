/* Zeppelin's routing layer: see zs_zeppelin_route.h. */
#include "zs_zeppelin_route.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Chunks per slice: the pipeline's fill and drain cost two NVLink chunk hops,
 * about 2 / (n x NVLink/NIC) of the slice's network time (6% at n = 4 on
 * cluster-a), while every chunk adds ops on four GPUs. */
#define MAX_CHUNKS 4

struct zs_zep_route {
    const zs_cluster *cl;
    int tp, k, stream;
    double chunk;
    double *nic; /* planned bytes per NIC: node * nics_per_node + j */
    long routed, direct;
};

zs_zep_route *zs_zep_route_new(const zs_cluster *cl, int tp, int k, double chunk, int route_stream)
{
    zs_zep_route *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->nic = calloc((size_t)(cl->nodes * cl->nics_per_node), sizeof(double));
    if (!r->nic) {
        free(r);
        return NULL;
    }
    r->cl = cl;
    r->tp = tp;
    r->k = k < 1 ? 1 : (k > ZS_ZEP_MAX_K ? ZS_ZEP_MAX_K : k);
    r->chunk = chunk > 0 ? chunk : 1;
    r->stream = route_stream;
    return r;
}

void zs_zep_route_free(zs_zep_route *r)
{
    if (!r)
        return;
    free(r->nic);
    free(r);
}

void zs_zep_route_phase(zs_zep_route *r)
{
    memset(r->nic, 0, sizeof(double) * (size_t)(r->cl->nodes * r->cl->nics_per_node));
}

double zs_zep_route_nic_bytes(const zs_zep_route *r, int node, int nic)
{
    return r->nic[node * r->cl->nics_per_node + nic];
}

void zs_zep_route_counts(const zs_zep_route *r, long *routed, long *direct)
{
    *routed = r->routed;
    *direct = r->direct;
}

typedef struct cand {
    double load;
    int pref, nic, proxy, peer;
} cand;

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->load != y->load)
        return x->load < y->load ? -1 : 1;
    if (x->pref != y->pref)
        return x->pref < y->pref ? -1 : 1;
    return x->nic < y->nic ? -1 : (x->nic > y->nic);
}

void zs_zep_route_plan(zs_zep_route *r, int src, int dst, double bytes, zs_zep_path *p)
{
    const zs_cluster *cl = r->cl;
    int G = cl->gpus_per_node, nn = cl->nics_per_node;
    int sn = zs_cluster_node_of(cl, src), dn = zs_cluster_node_of(cl, dst);
    memset(p, 0, sizeof *p);
    p->chunk = r->chunk;
    if (sn == dn || r->k <= 1) {
        p->k = 1;
        p->direct = 1;
        p->proxy[0] = src;
        p->peer[0] = dst;
        p->slice[0] = bytes;
        p->nchunks[0] = 1;
        if (sn != dn) {
            p->nic[0] = zs_cluster_nic_of(cl, src);
            r->nic[sn * nn + p->nic[0]] += bytes;
            r->nic[dn * nn + zs_cluster_nic_of(cl, dst)] += bytes;
            r->direct++;
        }
        return;
    }
    /* One candidate per NIC of the source node that a TP-rank-0 GPU reaches. */
    cand c[ZS_ZEP_MAX_K * 4];
    int nc = 0;
    for (int j = 0; j < nn && nc < (int)(sizeof c / sizeof c[0]); j++) {
        int proxy = -1;
        if (zs_cluster_nic_of(cl, src) == j)
            proxy = src;
        for (int g = 0; g < G && proxy < 0; g += r->tp)
            if (zs_cluster_nic_of(cl, sn * G + g) == j)
                proxy = sn * G + g;
        if (proxy < 0)
            continue;
        int peer = zs_cluster_nic_of(cl, dst) == j ? dst : dn * G + proxy % G;
        /* Prefer the hops that need no NVLink leg: the source's own NIC,
         * then the destination's. */
        int pref = (proxy != src) + (peer != dst);
        c[nc++] = (cand){r->nic[sn * nn + j] + r->nic[dn * nn + j], pref, j, proxy, peer};
    }
    qsort(c, (size_t)nc, sizeof c[0], cmp_cand);
    int k = r->k < nc ? r->k : nc;
    p->k = k;
    for (int i = 0; i < k; i++) {
        p->proxy[i] = c[i].proxy;
        p->peer[i] = c[i].peer;
        p->nic[i] = c[i].nic;
        p->slice[i] = bytes / k;
        int relay = c[i].proxy != src || c[i].peer != dst;
        double n = relay ? ceil(p->slice[i] / r->chunk) : 1;
        p->nchunks[i] = n < 1 ? 1 : (n > MAX_CHUNKS ? MAX_CHUNKS : (int)n);
        r->nic[sn * nn + c[i].nic] += p->slice[i];
        r->nic[dn * nn + c[i].nic] += p->slice[i];
    }
    r->routed++;
}

int64_t zs_zep_sync(zs_schedule *s, int rank, int stream, const int64_t *deps, int ndeps)
{
    return zs_sched_elementwise(s, rank, stream, "route-sync", 0, 0, deps, ndeps);
}

/* A relay on the route stream: receive chunk c, then send it while the
 * next one arrives. */
static void relay(zs_schedule *s, int rank, int stream, int from, int to, int tag, int n,
                  double chunk, double slice, const char *lin, const char *lout)
{
    int64_t prev = -1;
    for (int c = 0; c <= n; c++) {
        double b = c < n ? (c == n - 1 ? slice - chunk * (n - 1) : chunk) : 0;
        double bp = c > 0 ? (c == n ? slice - chunk * (n - 1) : chunk) : 0;
        if (c > 0) {
            int64_t d[1] = {prev};
            zs_zep_sync(s, rank, stream, d, 1);
            zs_sched_send(s, rank, stream, lout, to, tag, bp, NULL, 0);
        }
        if (c < n)
            prev = zs_sched_recv(s, rank, stream, lin, from, tag, b, NULL, 0);
    }
}

static const char *hop_label(const zs_cluster *cl, int a, int b)
{
    return zs_cluster_node_of(cl, a) == zs_cluster_node_of(cl, b) ? "route-nvlink" : "route-net";
}

int zs_zep_route_xfer(void *arg, zs_iter *it, int src, int dst, int stream, int tag, double bytes,
                      int64_t src_dep, int64_t dst_dep, int64_t *src_op, int64_t *dst_op, zs_err *e)
{
    zs_zep_route *r = arg;
    int t = -1;
    if (zs_cluster_node_of(r->cl, src) != zs_cluster_node_of(r->cl, dst) && r->k > 1)
        t = zs_iter_tag(it);
    return zs_zep_route_emit(r, zs_iter_schedule(it), src, dst, stream, tag, t, bytes, src_dep,
                             dst_dep, src_op, dst_op, e);
}

int zs_zep_route_emit(zs_zep_route *r, zs_schedule *s, int src, int dst, int stream, int tag,
                      int route_tag, double bytes, int64_t src_dep, int64_t dst_dep,
                      int64_t *src_op, int64_t *dst_op, zs_err *e)
{
    zs_zep_path p;
    zs_zep_route_plan(r, src, dst, bytes, &p);
    int64_t d1[1] = {src_dep}, d2[1] = {dst_dep};
    if (p.direct) {
        *src_op = zs_sched_send(s, src, stream, "ring-xfer", dst, tag, bytes, d1, src_dep >= 0);
        *dst_op = zs_sched_recv(s, dst, stream, "ring-xfer", src, tag, bytes, d2, dst_dep >= 0);
        return zs_schedule_check(s, e);
    }
    const zs_cluster *cl = r->cl;
    int t = route_tag;
    *src_op = *dst_op = -1;
    for (int i = 0; i < p.k; i++) {
        int px = p.proxy[i], q = p.peer[i], n = p.nchunks[i];
        double sl = p.slice[i], ch = sl / n;
        /* hops: src -> px (if px != src) -> q -> dst (if q != dst) */
        int first = px != src ? px : q, last = q != dst ? q : px;
        for (int c = 0; c < n; c++) {
            double b = c == n - 1 ? sl - ch * (n - 1) : ch;
            *src_op = zs_sched_send(s, src, stream, hop_label(cl, src, first), first, t, b, d1,
                                    src_dep >= 0);
        }
        if (px != src)
            relay(s, px, r->stream, src, q, t, n, ch, sl, "route-nvlink", "route-net");
        if (q != dst)
            relay(s, q, r->stream, px, dst, t, n, ch, sl, "route-net", "route-nvlink");
        for (int c = 0; c < n; c++) {
            double b = c == n - 1 ? sl - ch * (n - 1) : ch;
            zs_sched_recv(s, dst, r->stream, hop_label(cl, last, dst), last, t, b, d2,
                          dst_dep >= 0);
        }
    }
    /* The receiver's compute must wait for every slice: a dependency on one
     * receive waits for that transfer only, so join them with a sync on the
     * route stream (it waits for the stream's earlier transfers). The ring
     * stream is not used for this: a sync there would hold the receiver's
     * own ring send of the step until the receive is complete. */
    *dst_op = zs_zep_sync(s, dst, r->stream, NULL, 0);
    return zs_schedule_check(s, e);
}
