/* The analytical cost model (SYSTEM.md section 4). Compute kernels are
 * priced from the GPU description's measured kernel curves (zs_kernel.h:
 * the selected attention kernel's forward and backward curves, the GEMM
 * curve; each with its source in the preset); memory-bound ops and
 * transfers are written as saturating curves (zs_curve): a fixed launch or
 * step latency plus bytes at a rate. The calibrated model (zs_calib_cost.c)
 * builds the same object with fitted curves, fitted attention kernels and
 * fitted NCCL parameters, so both price ops with the code below.
 *
 * Transfers: a point-to-point message pays the latency of the default path
 * plus bytes over its bottleneck link. Collectives are NCCL's: the
 * algorithm and protocol NCCL 2.29.2 runs on the group's topology and the
 * time of that pair (models/zs_nccl.h; NCCL's own figures here, fitted
 * ones in a calibrated model). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_calib.h"
#include "zs_calib_internal.h"

/* ---- assumptions of the analytic model (see docs/cost-model.md) ---------- */
#define ELEM_EFF      0.80 /* fraction of HBM bandwidth a streaming kernel reaches */
#define ELEM_LAUNCH_S 3e-6

typedef struct cost_impl {
    zs_curve curve[ZS_CAL_NSLOTS];
    zs_gemm_curve gemm;  /* the GEMM slot's curve as zs_gemm_time takes it */
    zs_attn_kernel kern; /* attention: forward and backward curves */
    int kern_sms;        /* SMs the kernel's CTAs spread over */
    zs_nccl_params nccl; /* collectives */
} cost_impl;

double zs_curve_time(const zs_curve *c, double steps, double work, double x)
{
    double slow = 1.0;
    x = x > c->x_floor ? x : c->x_floor;
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
    out[ZS_CAL_GEMM] = (zs_curve){
        g->launch_us * 1e-6, g->tflops * 1e12, g->half_dim, g->p, 0, 0, 0, 0, g->dim_floor};
    out[ZS_CAL_ELEMENTWISE] =
        (zs_curve){ELEM_LAUNCH_S, ELEM_EFF * cl->gpu.hbm_gbs * 1e9, 0, 1.0, 0, 0, 0, 0, 0};
    /* Link slots stay unfitted: priced from the cluster. Collectives are
     * NCCL's model, never a curve. */
}

static const cost_impl *impl(const zs_cost *c)
{
    return (const cost_impl *)c->impl;
}

static double gemm(const zs_cost *c, double m, double n, double k, double bytes);
static double elementwise(const zs_cost *c, double bytes);

/* Megatron-LM's attention before FlashAttention (CoreAttention,
 * megatron/model/transformer.py at 00baee46 [P]), per block of Sq queries
 * and Sk keys over H heads: the whole Sq x Sk score matrix is computed
 * (the causal mask is applied by the softmax), E = H Sq Sk elements of b
 * bytes. Forward: QK^T (batched GEMM, H x (Sq x d)(d x Sk)), the fused
 * scale-mask-softmax (reads and writes E), attention dropout when the
 * model has dropout (reads E, writes E and a one-byte mask), the product
 * with V. Backward: dP = dO V^T and dV = P^T dO, dropout's backward (reads
 * dP and the mask, writes), the softmax's (reads the gradient and the
 * probabilities, writes), dQ = dS K and dK = dS^T Q. GEMMs on the GEMM
 * curve (the batch folded into m: each head's product has the same
 * smallest dimension), the score passes at the memory-bound rate. */
static double unfused_attn(const zs_cost *c, const zs_attn_block *blk, int n, int heads,
                           int backward, zs_attn_work *w)
{
    const zs_model *m = &c->model;
    double bb = m->dtype_bytes, d = m->head_dim, H = heads, tg = 0, te = 0, bytes = 0, pairs = 0;
    int drop = m->dropout > 0;
    for (int i = 0; i < n; i++) {
        double sq = blk[i].q1 - blk[i].q0, sk = blk[i].k1 - blk[i].k0, E = H * sq * sk;
        if (sq <= 0 || sk <= 0)
            continue;
        double qk = H * (sq * d + sk * d) * bb, sc = E * bb; /* Q, K (or dO, V); the scores */
        double ew = backward ? E * (3 * bb + (drop ? 2 * bb + 1 : 0))  /* dropout, softmax bwd */
                             : E * (2 * bb + (drop ? 2 * bb + 1 : 0)); /* softmax, dropout */
        if (!backward) {
            tg += gemm(c, H * sq, sk, d, qk + sc) + gemm(c, H * sq, d, sk, sc + qk);
            bytes += 2 * (qk + sc) + ew;
        } else {
            tg += gemm(c, H * sq, sk, d, qk + sc) + gemm(c, H * sk, d, sq, sc + qk) +
                  gemm(c, H * sq, d, sk, sc + qk) + gemm(c, H * sk, d, sq, sc + qk);
            bytes += 4 * (qk + sc) + ew;
        }
        te += elementwise(c, ew);
        pairs += (double)zs_attn_block_pairs(&blk[i]);
    }
    if (w) {
        memset(w, 0, sizeof *w);
        w->seqs = n;
        w->flops_exact = 4.0 * pairs * d * H * (backward ? 2.5 : 1.0);
        w->bytes = bytes;
        w->t_compute = tg; /* the GEMMs */
        w->t_memory = te;  /* the score passes */
        w->seconds = tg + te;
    }
    return tg + te;
}

double zs_cost_attn_work(const zs_cost *c, const zs_attn_block *b, int n, int heads, int backward,
                         zs_attn_work *w)
{
    if (n <= 0 || heads <= 0) {
        if (w)
            memset(w, 0, sizeof *w);
        return 0;
    }
    if (impl(c)->kern.unfused)
        return unfused_attn(c, b, n, heads, backward, w);
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

static double gemm(const zs_cost *c, double m, double n, double k, double bytes)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0;
    if (bytes <= 0)
        bytes = zs_gemm_bytes(m, n, k, zs_cost_dtype_bytes(c), zs_cost_dtype_bytes(c));
    return zs_gemm_time(&impl(c)->gemm, m, n, k, bytes, zs_cost_gemm_hbm_Bps(c));
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

void zs_coll_bus(zs_coll_kind k, int n, double bytes, double *bus_bytes, double *steps)
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

double zs_cost_collective_how(const zs_cost *c, zs_coll_kind kind, const int *ranks, int n,
                              double bytes, char *how, size_t len)
{
    if (how && len)
        snprintf(how, len, "nothing to do");
    if (n <= 1 || bytes <= 0 || kind < 0 || kind >= ZS_COLL_NKINDS)
        return 0;
    zs_nccl_choice ch;
    zs_err e;
    if (zs_nccl_group_plan(&c->cluster, ranks, n, kind, bytes, &impl(c)->nccl, &ch, NULL, &e)) {
        /* Ranks outside the cluster: the callers' bug, never a plan's. */
        if (how && len)
            snprintf(how, len, "cannot price: %s", e.what);
        return 0;
    }
    if (how && len) {
        int fitted = 0;
        for (int i = 0; i < ZS_NP_NPARAMS; i++)
            fitted |= impl(c)->nccl.fitted[i];
        if (ch.algo == ZS_NCCL_P2P)
            snprintf(how, len,
                     "all-to-all as NCCL runs it (grouped sends and receives, no tuning): latency "
                     "%.2f us + %.2f us of data (each GPU's share of its node's NICs across "
                     "nodes, NVLink inside); uncontended",
                     ch.lat_s * 1e6, ch.data_s * 1e6);
        else
            snprintf(how, len,
                     "NCCL 2.29.2 model: %s/%s (NCCL's own estimate %.2f us); latency %.2f us + "
                     "data %.2f us + local reduce %.2f us, bus bandwidth %.1f GB/s before the "
                     "size ramp; %s; uncontended",
                     zs_nccl_algo_name(ch.algo), zs_nccl_proto_name(ch.proto), ch.nccl_us,
                     ch.lat_s * 1e6, ch.data_s * 1e6, ch.reduce_s * 1e6, ch.busbw_gbs,
                     fitted ? "fitted parameters" : "NCCL's figures");
    }
    return ch.seconds;
}

static double collective(const zs_cost *c, zs_coll_kind kind, const int *ranks, int n, double bytes)
{
    return zs_cost_collective_how(c, kind, ranks, n, bytes, NULL, 0);
}

const zs_nccl_params *zs_cost_nccl(const zs_cost *c)
{
    return &impl(c)->nccl;
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

/* The GEMM curve the cost prices with: the GPU's own when the slot holds
 * it (the analytic model: the very figures, so that its prices do not
 * move by a rounding), a calibration's fit in the GPU curve's units
 * otherwise (x_floor: the smallest dimension it was fitted on). */
static zs_gemm_curve gemm_of_slot(const zs_cluster *cl, const zs_curve *cv)
{
    if (!cv->fitted)
        return cl->gpu.gemm;
    zs_gemm_curve g = cl->gpu.gemm;
    g.tflops = cv->rmax / 1e12;
    g.half_dim = cv->half;
    g.p = cv->p;
    g.launch_us = cv->t0 * 1e6;
    g.dim_floor = cv->x_floor;
    snprintf(g.source, sizeof g.source, "calibration fit");
    return g;
}

zs_cost *zs__cost_curves_new(int calibrated, const zs_model *m, const zs_cluster *cl,
                             const zs_curve curves[ZS_CAL_NSLOTS], const zs_attn_kernel *kern,
                             int kern_sms, const zs_nccl_params *nccl, const char *desc)
{
    zs_cost *c = calloc(1, sizeof *c);
    cost_impl *im = calloc(1, sizeof *im);
    if (!c || !im) {
        free(c);
        free(im);
        return NULL;
    }
    memcpy(im->curve, curves, sizeof im->curve);
    im->gemm = gemm_of_slot(cl, &curves[ZS_CAL_GEMM]);
    im->kern = *kern;
    im->kern_sms = kern_sms;
    if (nccl)
        im->nccl = *nccl;
    else
        zs_nccl_params_default(&im->nccl);
    c->ops = calibrated ? &calibrated_ops : &analytic_ops;
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
             "the cluster; collectives: NCCL 2.29.2 model)",
             cl->gpu.name, k->name,
             cl->gpu.assumed_kernels ? "; ASSUMED, scaled from a800-80g" : "");
    return zs__cost_curves_new(0, m, cl, cv, k, cl->gpu.sms, NULL, desc);
}
