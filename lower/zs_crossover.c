/* Zeppelin's cost crossovers: see zs_crossover.h.
 *
 * f(x) = step compute(x) - step transfer(x) is negative for mid-sized x
 * (transfer ~ x, compute ~ x^2) and positive for large x. At very small x
 * the kernel launch can exceed a latency-bound transfer, so f is positive
 * there too; that region is not a useful ring (the launch cost is paid per
 * step anyway), so the crossover we want is the last sign change: scan
 * down from a large length by halving until f < 0, then bisect. */
#include "zs_crossover.h"

#include <math.h>

#define SCAN_TOP (1 << 24) /* tokens per GPU: far beyond any GPU's memory */
#define SCAN_MIN 64.0

/* The attention rate the cost model reaches on large kernels: a step is
 * priced at this rate, so that the slowness of small kernels (which would
 * "hide" any transfer by being slow) cannot make splitting look free. */
static double saturated_rate(const zs_cost *c, int heads)
{
    zs_attn_block big = {0, 1 << 16, 1 << 17, 0, 1 << 16};
    double flops = 4.0 * heads * c->model.head_dim * (double)(1 << 16) * (double)(1 << 16);
    double t = zs_cost_attn(c, &big, 1, heads, 0);
    return t > 0 ? flops / t : 1e30;
}

double zs_crossover_step_compute(const zs_cost *c, int heads, double tokens)
{
    return 4.0 * heads * c->model.head_dim * tokens * tokens / 2 / saturated_rate(c, heads);
}

double zs_crossover_kv_bytes(const zs_model *m, int kv_heads, double tokens)
{
    return tokens * 2.0 * kv_heads * m->head_dim * m->dtype_bytes;
}

double zs_crossover_step_xfer(const zs_cost *c, int kv_heads, double tokens, int net, int k,
                              double chunk_bytes)
{
    double bytes = zs_crossover_kv_bytes(&c->model, kv_heads, tokens);
    int far = c->cluster.gpus_per_node; /* a GPU of the next node */
    if (!net)
        return zs_cost_p2p(c, 0, 1, bytes);
    if (k <= 1)
        return zs_cost_p2p(c, 0, far, bytes);
    double slice = bytes / k, chunk = chunk_bytes < slice ? chunk_bytes : slice;
    /* The network leg dominates; the NVLink scatter of the first chunk and
     * gather of the last one are the pipeline's fill and drain. */
    return zs_cost_p2p(c, 0, far, slice) + 2 * zs_cost_p2p(c, 0, 1, chunk);
}

int zs_route_default_k(const zs_cluster *cl, int tp)
{
    double nv = zs_cluster_link_bw(cl, ZS_LINK_NVLINK), nic = zs_cluster_link_bw(cl, ZS_LINK_NIC);
    int k = nic > 0 ? (int)floor(nv / nic) : 1;
    /* Proxies must be TP rank 0 of their group; count the NICs they reach. */
    int nics = 0, last = -1;
    for (int g = 0; g < cl->gpus_per_node; g += tp) {
        int n = zs_cluster_nic_of(cl, g);
        if (n != last)
            nics++;
        last = n;
    }
    if (k > nics)
        k = nics;
    return k < 1 ? 1 : k;
}

double zs_route_default_chunk(const zs_cluster *cl)
{
    double lat = (2 * cl->pcie_latency_us + 2 * cl->nic_latency_us + cl->fabric_latency_us) * 1e-6;
    double want = 10 * lat * zs_cluster_link_bw(cl, ZS_LINK_NIC), c = 256.0 * 1024;
    while (c < want)
        c *= 2;
    return c;
}

typedef struct side {
    const zs_cost *c;
    int heads, kv, net, k;
    double chunk;
} side;

static double f(const side *s, double x)
{
    return zs_crossover_step_compute(s->c, s->heads, x) -
           zs_crossover_step_xfer(s->c, s->kv, x, s->net, s->k, s->chunk);
}

/* Smallest x (to one token) above which compute hides the transfer. */
static double crossover(const side *s, int *always)
{
    double x = SCAN_TOP;
    *always = 0;
    if (f(s, x) < 0)
        return -1;
    while (x > SCAN_MIN && f(s, x / 2) >= 0)
        x /= 2;
    if (x <= SCAN_MIN) {
        *always = 1;
        return SCAN_MIN;
    }
    double lo = x / 2, hi = x; /* f(lo) < 0 <= f(hi) */
    while (hi - lo > 0.5) {
        double mid = 0.5 * (lo + hi);
        if (f(s, mid) >= 0)
            hi = mid;
        else
            lo = mid;
    }
    return ceil(hi);
}

int zs_crossover_solve(const zs_cost *c, int tp, int k, double chunk_bytes, zs_crossover *out,
                       zs_err *e)
{
    const zs_model *m = &c->model;
    zs_crossover t = {0};
    t.heads = m->heads / tp;
    t.kv_heads = m->kv_heads / tp > 0 ? m->kv_heads / tp : 1;
    t.k = k;
    t.chunk_bytes = chunk_bytes;
    side si = {c, t.heads, t.kv_heads, 0, 1, chunk_bytes};
    side sn = {c, t.heads, t.kv_heads, 1, 1, chunk_bytes};
    side sr = {c, t.heads, t.kv_heads, 1, k, chunk_bytes};
    int a1, a2, a3;
    t.m_intra = crossover(&si, &a1);
    t.m_inter = crossover(&sn, &a2);
    t.m_inter_routed = crossover(&sr, &a3);
    if (t.m_intra < 0 || t.m_inter < 0 || t.m_inter_routed < 0)
        return zs_err_set(
            e, ZS_EINPUT, c->cluster.name, "check the cluster's link bandwidths and the GPU's peak",
            "attention never hides a ring transfer below %d tokens per GPU", SCAN_TOP);
    t.intra_always = a1;
    t.inter_always = a2;
    t.intra_compute_s = zs_crossover_step_compute(c, t.heads, t.m_intra);
    t.intra_xfer_s = zs_crossover_step_xfer(c, t.kv_heads, t.m_intra, 0, 1, chunk_bytes);
    t.inter_compute_s = zs_crossover_step_compute(c, t.heads, t.m_inter);
    t.inter_xfer_s = zs_crossover_step_xfer(c, t.kv_heads, t.m_inter, 1, 1, chunk_bytes);
    t.routed_compute_s = zs_crossover_step_compute(c, t.heads, t.m_inter_routed);
    t.routed_xfer_s = zs_crossover_step_xfer(c, t.kv_heads, t.m_inter_routed, 1, k, chunk_bytes);
    *out = t;
    return ZS_OK;
}
