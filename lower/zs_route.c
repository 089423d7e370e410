/* Zeppelin's routing layer: see zs_route.h. */
#include "zs_route.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Chunks per slice: the pipeline's fill and drain cost two NVLink chunk hops,
 * about 2 / (n x NVLink/NIC) of the slice's network time (6% at n = 4 on
 * cluster-a), while every chunk adds ops on four GPUs. */
#define MAX_CHUNKS 2

struct zs_route {
    const zs_cluster *cl;
    int tp, k, stream, send_stream, join_stream;
    double chunk;
    double relay_s_per_byte; /* compute seconds a relay loses per byte it forwards */
    double *relay;           /* per rank: bytes it relays in the current phase */
    double *up, *down;       /* planned bytes per NIC and direction: node * nics_per_node + j */
    long routed, direct;
    uint64_t *direct_pairs; /* sorted src * ranks + dst */
    int ndirect;
    int off; /* 1: every transfer direct (the planner's decision for the batch) */
    zs_route_path last;
    zs_iter *it; /* during zs_route_xfer: the builder (layer anchors) */
};

zs_route *zs_route_new(const zs_cluster *cl, int tp, int k, double chunk, int route_stream)
{
    zs_route *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->up = calloc((size_t)(cl->nodes * cl->nics_per_node), sizeof(double));
    r->down = calloc((size_t)(cl->nodes * cl->nics_per_node), sizeof(double));
    r->relay = calloc((size_t)zs_cluster_gpus(cl), sizeof(double));
    if (!r->up || !r->down || !r->relay) {
        zs_route_free(r);
        return NULL;
    }
    r->cl = cl;
    r->tp = tp;
    r->k = k < 1 ? 1 : (k > ZS_ZEP_MAX_K ? ZS_ZEP_MAX_K : k);
    r->chunk = chunk > 0 ? chunk : 1;
    r->stream = r->send_stream = r->join_stream = route_stream;
    r->relay_s_per_byte = zs_route_relay_compute_s(cl, 1);
    return r;
}

int zs_route_relay_ctas(const zs_cluster *cl)
{
    /* NCCL's channels per network peer of a point-to-point operation when
     * the user sets none (src/graph/paths.cc, ncclTopoGetNchannels): at
     * least one per local NIC, and enough for NCCL_P2P_PER_CHANNEL_NET_BW
     * (14 GB/s) each to drive the NIC. One NIC per relaying GPU here. */
    double gbytes = cl->nic_gbps / 8;
    int c = (int)ceil(gbytes / 14.0 - 1e-9);
    return c < 1 ? 1 : c;
}

double zs_route_relay_compute_s(const zs_cluster *cl, double bytes)
{
    double nic = cl->nic_gbps * 1e9 / 8;
    int sms = cl->gpu.sms > 0 ? cl->gpu.sms : 1;
    if (!(bytes > 0) || !(nic > 0))
        return 0;
    return (double)zs_route_relay_ctas(cl) / sms * (bytes / nic);
}

void zs_route_set_streams(zs_route *r, int send_stream, int join_stream)
{
    r->send_stream = send_stream;
    r->join_stream = join_stream;
}

void zs_route_free(zs_route *r)
{
    if (!r)
        return;
    free(r->up);
    free(r->down);
    free(r->relay);
    free(r->direct_pairs);
    free(r);
}

void zs_route_phase(zs_route *r)
{
    size_t n = (size_t)(r->cl->nodes * r->cl->nics_per_node);
    memset(r->up, 0, sizeof(double) * n);
    memset(r->down, 0, sizeof(double) * n);
    memset(r->relay, 0, sizeof(double) * (size_t)zs_cluster_gpus(r->cl));
}

/* The GPU behind NIC j of node `node` that relays for this transfer: `own`
 * when it is behind j (no NVLink hop), else the TP-rank-0 GPU behind j that
 * relays the fewest bytes in the phase (ties: the lower rank), so relays
 * spread over every GPU that shares the NIC. -1: none. */
static int relay_gpu(const zs_route *r, int node, int j, int own)
{
    const zs_cluster *cl = r->cl;
    int G = cl->gpus_per_node, best = -1;
    if (zs_cluster_nic_of(cl, own) == j)
        return own;
    for (int g = node * G; g < (node + 1) * G; g += r->tp)
        if (zs_cluster_nic_of(cl, g) == j && (best < 0 || r->relay[g] < r->relay[best]))
            best = g;
    return best;
}

double zs_route_nic_bytes(const zs_route *r, int node, int nic)
{
    int i = node * r->cl->nics_per_node + nic;
    return r->up[i] + r->down[i];
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : (x > y);
}

int zs_route_set_direct(zs_route *r, const int *src, const int *dst, int n)
{
    uint64_t *p = malloc(sizeof(uint64_t) * (size_t)(n > 0 ? n : 1));
    if (!p)
        return ZS_ENOMEM;
    uint64_t R = (uint64_t)zs_cluster_gpus(r->cl);
    for (int i = 0; i < n; i++)
        p[i] = (uint64_t)src[i] * R + (uint64_t)dst[i];
    qsort(p, (size_t)n, sizeof *p, cmp_u64);
    free(r->direct_pairs);
    r->direct_pairs = p;
    r->ndirect = n;
    return ZS_OK;
}

int zs_route_routed(const zs_route *r, int src, int dst)
{
    const zs_cluster *cl = r->cl;
    if (r->k <= 1 || r->off || zs_cluster_node_of(cl, src) == zs_cluster_node_of(cl, dst))
        return 0;
    uint64_t key = (uint64_t)src * (uint64_t)zs_cluster_gpus(cl) + (uint64_t)dst;
    return r->ndirect == 0 ||
           !bsearch(&key, r->direct_pairs, (size_t)r->ndirect, sizeof key, cmp_u64);
}

void zs_route_enable(zs_route *r, int on)
{
    r->off = !on;
}

int zs_route_recv_stream(const zs_route *r)
{
    return r->stream;
}

const zs_route_path *zs_route_last(const zs_route *r)
{
    return &r->last;
}

void zs_route_counts(const zs_route *r, long *routed, long *direct)
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

void zs_route_plan(zs_route *r, int src, int dst, double bytes, zs_route_path *p)
{
    const zs_cluster *cl = r->cl;
    int nn = cl->nics_per_node;
    int sn = zs_cluster_node_of(cl, src), dn = zs_cluster_node_of(cl, dst);
    memset(p, 0, sizeof *p);
    p->chunk = r->chunk;
    if (!zs_route_routed(r, src, dst)) {
        p->k = 1;
        p->direct = 1;
        p->proxy[0] = src;
        p->peer[0] = dst;
        p->slice[0] = bytes;
        p->nchunks[0] = 1;
        if (sn != dn) {
            p->nic[0] = zs_cluster_nic_of(cl, src);
            r->up[sn * nn + p->nic[0]] += bytes;
            r->down[dn * nn + zs_cluster_nic_of(cl, dst)] += bytes;
            r->direct++;
        }
        r->last = *p;
        return;
    }
    /* One candidate per NIC of the source node that a TP-rank-0 GPU reaches. */
    cand c[ZS_ZEP_MAX_K * 4];
    int nc = 0;
    for (int j = 0; j < nn && nc < (int)(sizeof c / sizeof c[0]); j++) {
        int proxy = relay_gpu(r, sn, j, src), peer = relay_gpu(r, dn, j, dst);
        if (proxy < 0 || peer < 0)
            continue;
        /* Prefer the hops that need no NVLink leg: the source's own NIC,
         * then the destination's. */
        int pref = (proxy != src) + (peer != dst);
        c[nc++] = (cand){r->up[sn * nn + j] + r->down[dn * nn + j], pref, j, proxy, peer};
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
        r->up[sn * nn + c[i].nic] += p->slice[i];
        r->down[dn * nn + c[i].nic] += p->slice[i];
        if (c[i].proxy != src)
            r->relay[c[i].proxy] += p->slice[i];
        if (c[i].peer != dst)
            r->relay[c[i].peer] += p->slice[i];
    }
    r->routed++;
    r->last = *p;
}

int64_t zs_route_sync(zs_schedule *s, int rank, int stream, const int64_t *deps, int ndeps)
{
    return zs_sched_elementwise(s, rank, stream, "route-sync", 0, 0, deps, ndeps);
}

/* The dependency of a receive that has no other: the receiving GPU's
 * start of the layer (zs_iter_rank_layer_start), -1 without a builder. A
 * receive is posted as soon as its dependencies are met, so without one
 * every relay posted the receives of a whole iteration at its start: the
 * SimGrid backend then waits on thousands of open receives per GPU (one
 * 16-node GitHub iteration ran for over 20 minutes). A GPU reaches the
 * layer before its peers' transfers of that layer's attention reach it
 * (they follow their own pre-attention linear ops), so this holds no
 * source in practice; the analytic backend's results are unchanged. */
static int64_t layer_anchor(const zs_route *r, int rank)
{
    return r->it ? zs_iter_rank_layer_start(r->it, rank) : -1;
}

/* Carry lists scaled to a chunk's bytes: a routed transfer's chunks come in
 * at most two sizes per slice, so a few lists serve them all. */
typedef struct chunk_carry {
    zs_schedule *s;
    const zs_xfer *x;
    double bytes[4];
    int64_t c0[4];
    int n;
} chunk_carry;

/* Sets op's carry list to x's scaled to `bytes`. */
static void carry_chunk(chunk_carry *cc, int rank, int64_t op, double bytes)
{
    const zs_xfer *x = cc->x;
    if (x->ncarry < 1 || op < 0)
        return;
    int i = 0;
    while (i < cc->n && cc->bytes[i] != bytes)
        i++;
    if (i == cc->n) {
        int64_t c0 = zs_schedule_carry_scaled(cc->s, x->carry0, x->ncarry, bytes);
        if (c0 < 0)
            return; /* recorded in the schedule */
        i = cc->n < 4 ? cc->n++ : 3;
        cc->bytes[i] = bytes;
        cc->c0[i] = c0;
    }
    zs_sched_set_carry(cc->s, rank, op, cc->c0[i], x->ncarry);
}

/* A relay: its receives on the route stream (nothing else there, no
 * dependency but the layer's start), each forward on the send stream after
 * its own receive, so relays of different transfers through one GPU never
 * wait for each other's data. */
static void relay(const zs_route *r, chunk_carry *cc, int rank, int from, int to, int tag, int n,
                  double chunk, double slice, const char *lin, const char *lout)
{
    zs_schedule *s = cc->s;
    int64_t a[1] = {layer_anchor(r, rank)};
    for (int c = 0; c < n; c++) {
        double b = c == n - 1 ? slice - chunk * (n - 1) : chunk;
        int64_t d[1] = {zs_sched_recv(s, rank, r->stream, lin, from, tag, b, a, a[0] >= 0)};
        carry_chunk(cc, rank, d[0], b);
        carry_chunk(cc, rank, zs_sched_send(s, rank, r->send_stream, lout, to, tag, b, d, 1), b);
    }
    /* The relay's NCCL kernel holds zs_route_relay_ctas SMs while the slice
     * passes at the NIC's rate: that share of the GPU's compute for that
     * long, charged on its compute stream (one op per slice, no
     * dependency: it runs where the stream reaches it, and delays the
     * GPU's own work by the SM time the forwarding takes). */
    zs_sched_elementwise(s, rank, ZS_STREAM_COMPUTE, "route-relay-sm", 0,
                         slice * r->relay_s_per_byte, NULL, 0);
}

static const char *hop_label(const zs_cluster *cl, int a, int b)
{
    return zs_cluster_node_of(cl, a) == zs_cluster_node_of(cl, b) ? "route-nvlink" : "route-net";
}

int zs_route_xfer(void *arg, zs_iter *it, const zs_xfer *x, int64_t *src_op, int64_t *dst_op,
                  zs_err *e)
{
    zs_route *r = arg;
    int t = -1;
    if (zs_cluster_node_of(r->cl, x->src) != zs_cluster_node_of(r->cl, x->dst) && r->k > 1)
        t = zs_iter_tag(it);
    r->it = it;
    int rc = zs_route_emit(r, zs_iter_schedule(it), x, t, src_op, dst_op, e);
    r->it = NULL;
    return rc;
}

/* The source's sends, chunk by chunk across the slices: a slice's chunks go
 * one after the other (each after the previous one arrived), so the next
 * hop forwards chunk c while c+1 arrives (chunks of one slice share its
 * links anyway), and no slice's chunk waits behind more than one chunk of
 * another. A slice's first chunk waits for x's dependencies. */
static void source_sends(const zs_route *r, chunk_carry *cc, const zs_route_path *p, int t,
                         int64_t *src_op)
{
    const zs_xfer *x = cc->x;
    int64_t prev[ZS_ZEP_MAX_K];
    int maxn = 0;
    for (int i = 0; i < p->k; i++) {
        prev[i] = -1;
        maxn = p->nchunks[i] > maxn ? p->nchunks[i] : maxn;
    }
    for (int c = 0; c < maxn; c++)
        for (int i = 0; i < p->k; i++) {
            int n = p->nchunks[i], first = p->proxy[i] != x->src ? p->proxy[i] : p->peer[i];
            if (c >= n)
                continue;
            double sl = p->slice[i], ch = sl / n, b = c == n - 1 ? sl - ch * (n - 1) : ch;
            const int64_t *d = c == 0 ? x->src_deps : &prev[i];
            int nd = c == 0 ? x->nsrc_deps : prev[i] >= 0;
            int64_t op = zs_sched_send(cc->s, x->src, x->stream, hop_label(r->cl, x->src, first),
                                       first, t, b, d, nd);
            carry_chunk(cc, x->src, op, b);
            prev[i] = op;
            *src_op = op;
        }
}

int zs_route_emit(zs_route *r, zs_schedule *s, const zs_xfer *x, int route_tag, int64_t *src_op,
                  int64_t *dst_op, zs_err *e)
{
    zs_route_path p;
    int src = x->src, dst = x->dst;
    zs_route_plan(r, src, dst, x->bytes, &p);
    if (p.direct) {
        zs_sched_xfer(s, x, "ring-xfer", src_op, dst_op);
        return zs_schedule_check(s, e);
    }
    /* The destination's chunks arrive on the route stream, which holds
     * only receives: bounded like a relay's. */
    int64_t d2[1] = {x->dst_dep >= 0 ? x->dst_dep : layer_anchor(r, dst)};
    const zs_cluster *cl = r->cl;
    int t = route_tag;
    int64_t arr[ZS_ZEP_MAX_K * MAX_CHUNKS + 1];
    int narr = 0;
    chunk_carry cc = {s, x, {0}, {0}, 0};
    *src_op = *dst_op = -1;
    /* hops: src -> px (if px != src) -> q -> dst (if q != dst). */
    source_sends(r, &cc, &p, t, src_op);
    for (int i = 0; i < p.k; i++) {
        int px = p.proxy[i], q = p.peer[i], n = p.nchunks[i];
        double sl = p.slice[i], ch = sl / n;
        int last = q != dst ? q : px;
        if (px != src)
            relay(r, &cc, px, src, q, t, n, ch, sl, "route-nvlink", "route-net");
        if (q != dst)
            relay(r, &cc, q, px, dst, t, n, ch, sl, "route-net", "route-nvlink");
        for (int c = 0; c < n; c++) {
            double b = c == n - 1 ? sl - ch * (n - 1) : ch;
            arr[narr] = zs_sched_recv(s, dst, r->stream, hop_label(cl, last, dst), last, t, b, d2,
                                      d2[0] >= 0);
            carry_chunk(&cc, dst, arr[narr++], b);
        }
    }
    /* The receiver's consumers wait for every chunk: a join on the join
     * stream (which holds nothing but joins) depends on each receive. */
    *dst_op = zs_sched_elementwise(s, dst, r->join_stream, "route-join", 0, 0, arr, narr);
    return zs_schedule_check(s, e);
}
