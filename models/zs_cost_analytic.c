/* The analytical cost model (SYSTEM.md section 4). Compute kernels are
 * priced from the GPU description's measured kernel curves (zs_kernel.h:
 * the selected attention kernel's forward and backward curves, the GEMM
 * curve; each with its source in the preset); memory-bound ops, transfers
 * and collectives are written as saturating curves (zs_curve): a fixed
 * launch or step latency plus bytes at a rate. The calibrated model
 * (zs_calib_cost.c) builds the same object with fitted curves and fitted
 * attention kernels, so both price ops with the code below.
 *
 * Transfers: a point-to-point message pays the latency of the default path
 * plus bytes over its bottleneck link. Collectives are rings: all-gather and
 * reduce-scatter take n-1 steps that each move one rank's share, all-reduce
 * is a reduce-scatter then an all-gather, all-to-all moves (n-1)/n of the
 * buffer; the bandwidth is that of the group's slowest link (NVLink inside
 * a node, else the NICs its members share). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_calib.h"

/* ---- assumptions of the analytic model (see docs/cost-model.md) ---------- */
#define ELEM_EFF      0.80 /* fraction of HBM bandwidth a streaming kernel reaches */
#define ELEM_LAUNCH_S 3e-6

typedef struct cost_impl {
    zs_curve curve[ZS_CAL_NSLOTS];
    zs_attn_kernel kern; /* attention: forward and backward curves */
    int kern_sms;        /* SMs the kernel's CTAs spread over */
} cost_impl;

double zs_curve_time(const zs_curve *c, double steps, double work, double x)
{
    double slow = 1.0;
    if (c->half > 0 && x > 0)
        slow += pow(c->half / x, c->p);
    return steps * c->t0 + (c->rmax > 0 ? work / c->rmax * slow : 0.0);
}

void zs__cost_analytic_curves(const zs_cluster *cl, zs_curve out[ZS_CAL_NSLOTS])
{
    memset(out, 0, sizeof(zs_curve) * ZS_CAL_NSLOTS);
    const zs_gemm_curve *g = &cl->gpu.gemm;
    /* The GEMM curve of the GPU description in zs_curve form (x = the
     * smallest dimension). Attention slots stay empty: priced by kernels. */
    out[ZS_CAL_GEMM] =
        (zs_curve){g->launch_us * 1e-6, g->tflops * 1e12, g->half_dim, g->p, 0, 0, 0, 0};
    out[ZS_CAL_ELEMENTWISE] =
        (zs_curve){ELEM_LAUNCH_S, ELEM_EFF * cl->gpu.hbm_gbs * 1e9, 0, 1.0, 0, 0, 0, 0};
    /* Link and collective slots stay unfitted: priced from the cluster. */
}

static const cost_impl *impl(const zs_cost *c)
{
    return (const cost_impl *)c->impl;
}

double zs_cost_attn_work(const zs_cost *c, const zs_attn_block *b, int n, int heads, int backward,
                         zs_attn_work *w)
{
    if (n <= 0 || heads <= 0) {
        if (w)
            memset(w, 0, sizeof *w);
        return 0;
    }
    const zs_model *m = &c->model;
    /* KV heads on this GPU: the model's, divided as the query heads are
     * (tensor or head parallelism), at least one. */
    int kv = m->heads > 0 ? (int)((int64_t)m->kv_heads * heads / m->heads) : heads;
    zs_attn_shape sh = {heads,
                        kv > 0 ? kv : 1,
                        m->head_dim,
                        impl(c)->kern_sms,
                        c->cluster.gpu.hbm_gbs * 1e9,
                        m->dtype_bytes};
    return zs_attn_kernel_time(&impl(c)->kern, backward, b, n, &sh, w);
}

static double attn(const zs_cost *c, const zs_attn_block *b, int n, int heads, int backward)
{
    return zs_cost_attn_work(c, b, n, heads, backward, NULL);
}

static double gemm(const zs_cost *c, double m, double n, double k)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0;
    double x = m < n ? m : n;
    x = x < k ? x : k;
    return zs_curve_time(&impl(c)->curve[ZS_CAL_GEMM], 1, 2.0 * m * n * k, x);
}

static double elementwise(const zs_cost *c, double bytes)
{
    if (bytes <= 0)
        return 0;
    return zs_curve_time(&impl(c)->curve[ZS_CAL_ELEMENTWISE], 1, bytes, bytes);
}

static double p2p(const zs_cost *c, int src, int dst, double bytes)
{
    if (src == dst || bytes < 0)
        return 0;
    const zs_cluster *cl = &c->cluster;
    zs_link_class lc =
        zs_cluster_node_of(cl, src) == zs_cluster_node_of(cl, dst) ? ZS_LINK_NVLINK : ZS_LINK_NIC;
    const zs_curve *cv = &impl(c)->curve[ZS_CAL_LINK_NVLINK + lc];
    if (cv->fitted)
        return zs_curve_time(cv, 1, bytes, bytes);
    double lat, bw;
    zs_cluster_path(cl, src, dst, &lat, &bw);
    return lat + bytes / bw;
}

void zs__coll_bus(zs_coll_kind k, int n, double bytes, double *bus_bytes, double *steps)
{
    double nn = n;
    switch (k) {
    case ZS_COLL_ALLGATHER:
    case ZS_COLL_REDUCESCATTER:
        *bus_bytes = (nn - 1) * bytes; /* n-1 steps, each one rank's share */
        *steps = nn - 1;
        break;
    case ZS_COLL_ALLREDUCE:
        *bus_bytes = 2 * (nn - 1) / nn * bytes;
        *steps = 2 * (nn - 1);
        break;
    default: /* all-to-all: all but one n-th leaves the rank */
        *bus_bytes = (nn - 1) / nn * bytes;
        *steps = nn - 1;
        break;
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Latency per step and bottleneck bandwidth of a group. Across nodes NCCL
 * runs one ring per channel and spreads the channels over the NICs its
 * members reach, so the ring's inter-node edges together get k NICs, k
 * being the fewest distinct NICs the members of any one node use (on
 * cluster-a a 16-GPU group over 2 nodes uses all 4 NICs of each node; a
 * group with one GPU per node only that GPU's NIC). Inside a node every
 * channel also crosses NVLink, which bounds the rate too. */
static void group_link(const zs_cluster *cl, const int *ranks, int n, int *intra, double *lat,
                       double *bw)
{
    int node0 = zs_cluster_node_of(cl, ranks[0]);
    *intra = 1;
    for (int i = 1; i < n; i++)
        if (zs_cluster_node_of(cl, ranks[i]) != node0)
            *intra = 0;
    if (*intra) {
        *lat = cl->nvlink_latency_us * 1e-6;
        *bw = zs_cluster_link_bw(cl, ZS_LINK_NVLINK);
        return;
    }
    /* (node, nic) keys of the members, sorted: count NICs per node. */
    int *key = malloc(sizeof(int) * (size_t)n);
    int k = 1, multi = 0;
    if (key) {
        for (int i = 0; i < n; i++)
            key[i] = zs_cluster_node_of(cl, ranks[i]) * cl->nics_per_node +
                     zs_cluster_nic_of(cl, ranks[i]);
        qsort(key, (size_t)n, sizeof(int), cmp_int);
        k = cl->nics_per_node;
        for (int i = 0; i < n;) {
            int node = key[i] / cl->nics_per_node, nics = 0, members = 0;
            for (; i < n && key[i] / cl->nics_per_node == node; i++) {
                members++;
                if (members == 1 || key[i] != key[i - 1])
                    nics++;
            }
            k = nics < k ? nics : k;
            multi |= members > 1;
        }
        free(key);
    }
    double l, b;
    int far = -1;
    for (int i = 1; i < n && far < 0; i++)
        if (zs_cluster_node_of(cl, ranks[i]) != node0)
            far = ranks[i];
    zs_cluster_path(cl, ranks[0], far, &l, &b);
    *lat = l;
    *bw = k * b; /* b: one NIC path (NIC, PCIe, spine), k of them in parallel */
    double nv = zs_cluster_link_bw(cl, ZS_LINK_NVLINK);
    if (multi && nv < *bw)
        *bw = nv;
}

/* Seconds the busiest NIC direction needs for an all-to-all (bytes/n from
 * every member to every other) over one NIC path's bandwidth (*bw). */
static double a2a_nic_time(const zs_cluster *cl, const int *ranks, int n, double bytes, double *bw)
{
    int nn = cl->nodes * cl->nics_per_node;
    double *load = calloc((size_t)(nn > 0 ? nn : 1), sizeof *load), worst = 0, lat;
    int far = -1;
    for (int i = 1; i < n && far < 0; i++)
        if (zs_cluster_node_of(cl, ranks[i]) != zs_cluster_node_of(cl, ranks[0]))
            far = ranks[i];
    zs_cluster_path(cl, ranks[0], far, &lat, bw);
    for (int i = 0; i < n; i++) {
        int others = 0, node = zs_cluster_node_of(cl, ranks[i]);
        for (int j = 0; j < n; j++)
            others += zs_cluster_node_of(cl, ranks[j]) != node;
        double b = others * bytes / n;
        if (load) {
            int k = node * cl->nics_per_node + zs_cluster_nic_of(cl, ranks[i]);
            load[k] += b; /* sending and receiving carry the same per member */
            b = load[k];
        }
        worst = b > worst ? b : worst;
    }
    free(load);
    return worst / *bw;
}

double zs_cost_collective_how(const zs_cost *c, zs_coll_kind kind, const int *ranks, int n,
                              double bytes, char *how, size_t len)
{
    if (how && len)
        snprintf(how, len, "nothing to do");
    if (n <= 1 || bytes < 0 || kind < 0 || kind >= ZS_COLL_NKINDS)
        return 0;
    int intra;
    double lat, bw, bus, steps;
    group_link(&c->cluster, ranks, n, &intra, &lat, &bw);
    zs__coll_bus(kind, n, bytes, &bus, &steps);
    const zs_curve *cv = &impl(c)->curve[ZS_CAL_COLL_AG + kind];
    if (intra && cv->fitted) {
        if (how && len)
            snprintf(how, len, "fitted curve (intra-node, calibration): %.0f bus bytes, %.0f steps",
                     bus, steps);
        return zs_curve_time(cv, steps, bus, bus);
    }
    if (kind == ZS_COLL_ALLTOALL && !intra) {
        /* Every member sends bytes/n to every other: what leaves a node
         * goes through the NICs its members sit behind, and GPUs behind one
         * NIC share it. The busiest NIC direction (or a GPU's NVLink share)
         * sets the time. */
        double nic_t = a2a_nic_time(&c->cluster, ranks, n, bytes, &bw);
        double nv = zs_cluster_link_bw(&c->cluster, ZS_LINK_NVLINK), nv_t = 0;
        for (int i = 0; i < n; i++) {
            int same = 0;
            for (int j = 0; j < n; j++)
                same += j != i && zs_cluster_node_of(&c->cluster, ranks[j]) ==
                                      zs_cluster_node_of(&c->cluster, ranks[i]);
            nv_t = same * bytes / n / nv > nv_t ? same * bytes / n / nv : nv_t;
        }
        double t = nic_t > nv_t ? nic_t : nv_t;
        if (how && len)
            snprintf(how, len,
                     "all-to-all: %.0f steps of %.2f us; the busiest NIC direction carries what "
                     "its GPUs send to other nodes at %.1f GB/s (GPUs behind one NIC share it), "
                     "NVLink inside nodes; no contention with other transfers",
                     steps, lat * 1e6, bw / 1e9);
        return steps * lat + t;
    }
    if (how && len)
        snprintf(how, len,
                 "ring: %.0f steps of %.2f us, %.0f bus bytes over %.1f GB/s (%s; no contention "
                 "with other transfers)",
                 steps, lat * 1e6, bus, bw / 1e9,
                 intra ? "NVLink inside one node" : "NIC paths shared by the group across nodes");
    return steps * lat + bus / bw;
}

static double collective(const zs_cost *c, zs_coll_kind kind, const int *ranks, int n, double bytes)
{
    return zs_cost_collective_how(c, kind, ranks, n, bytes, NULL, 0);
}

static void cost_free(zs_cost *c)
{
    free(c->impl);
    c->impl = NULL;
}

static const zs_cost_ops analytic_ops = {"analytic", attn,       gemm,     elementwise,
                                         p2p,        collective, cost_free};
static const zs_cost_ops calibrated_ops = {"calibrated", attn,       gemm,     elementwise,
                                           p2p,          collective, cost_free};

zs_cost *zs__cost_curves_new(const char *name, const zs_model *m, const zs_cluster *cl,
                             const zs_curve curves[ZS_CAL_NSLOTS], const zs_attn_kernel *kern,
                             int kern_sms, const char *desc)
{
    zs_cost *c = calloc(1, sizeof *c);
    cost_impl *im = calloc(1, sizeof *im);
    if (!c || !im) {
        free(c);
        free(im);
        return NULL;
    }
    memcpy(im->curve, curves, sizeof im->curve);
    im->kern = *kern;
    im->kern_sms = kern_sms;
    c->ops = strcmp(name, "calibrated") == 0 ? &calibrated_ops : &analytic_ops;
    c->model = *m;
    c->cluster = *cl;
    snprintf(c->desc, sizeof c->desc, "%s", desc);
    c->impl = im;
    return c;
}

const zs_attn_kernel *zs_cost_attn_kernel(const zs_cost *c)
{
    return &impl(c)->kern;
}

zs_cost *zs_cost_analytic_new(const zs_model *m, const zs_cluster *cl)
{
    zs_curve cv[ZS_CAL_NSLOTS];
    zs__cost_analytic_curves(cl, cv);
    const zs_attn_kernel *k = zs_gpu_attn_kernel(&cl->gpu);
    char desc[256];
    snprintf(desc, sizeof desc,
             "analytic (%s kernel curves: attention %s, GEMM%s; transfers from "
             "the cluster)",
             cl->gpu.name, k->name,
             cl->gpu.assumed_kernels ? "; ASSUMED, scaled from a800-80g" : "");
    return zs__cost_curves_new("analytic", m, cl, cv, k, cl->gpu.sms, desc);
}
