/* ByteScale's selective activation offloading: see
 * zs_bytescale_offload_internal.h. */
#include "zs_bytescale_offload_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int zs_bs_offload_init(zs_bs_offload *o, const zs_cost *cost, const zs_mem_cfg *mc, int tp,
                       long cap, zs_err *e)
{
    const zs_model *m = &cost->model;
    const zs_gpu *g = &cost->cluster.gpu;
    memset(o, 0, sizeof *o);
    int rc = zs_gpu_check_host(g, "offload", e);
    if (rc)
        return rc;
    zs_mem_breakdown mb;
    if ((rc = zs_mem_breakdown_compute(m, g, mc, &mb, e)))
        return rc;
    o->cost = cost;
    o->tp = tp;
    o->slots_per_node = cost->cluster.gpus_per_node / tp > 0 ? cost->cluster.gpus_per_node / tp : 1;
    o->heads = m->heads / tp > 0 ? m->heads / tp : 1;
    o->layers = m->layers;
    o->recompute = mc->recompute;
    o->act_layer = zs_mem_act_per_token_layer(m, tp, mc->recompute, mc->fp8);
    /* cap (max_seqlen) is the device budget: at most the memory model's. */
    o->free_bytes = mb.capacity - mb.static_bytes;
    double budget = (double)cap * o->act_layer * m->layers;
    o->free_bytes = budget < o->free_bytes ? budget : o->free_bytes;
    o->host_bps = g->host_gbs * 1e9;
    o->cap = cap;
    o->stream = -1;
    return ZS_OK;
}

void zs_bs_offload_free(zs_bs_offload *o)
{
    free(o->ratio);
    free(o->bytes);
    free(o->fwd_seen);
    o->ratio = o->bytes = NULL;
    o->fwd_seen = NULL;
}

/* Layers' worth of activations a GPU keeps with a share r offloaded: the
 * rest of every layer plus the offloaded part of two (double buffering);
 * a model of two layers or fewer gains nothing. */
static double resident_layers(const zs_bs_offload *o, double r)
{
    double L = o->layers;
    return L > 2 ? L - (L - 2) * r : L;
}

long zs_bs_offload_capacity(const zs_bs_offload *o, double r)
{
    double t = o->free_bytes / (o->act_layer * resident_layers(o, r));
    return t > 0 ? (long)t : 0;
}

double zs_bs_offload_min_ratio(const zs_bs_offload *o, int64_t s)
{
    double L = o->layers, need = o->act_layer * (double)s;
    if (need * L <= o->free_bytes)
        return 0;
    if (L <= 2)
        return 2; /* nothing to gain */
    /* s a (L - (L - 2) r) <= F  <=>  r >= (L - F / (a s)) / (L - 2) */
    return (L - o->free_bytes / need) / (L - 2);
}

double zs_bs_offload_max_ratio(const zs_bs_offload *o, int32_t len, int n, double *fwd_s)
{
    int64_t s = zs_dyncp_share(len, n);
    zs_iter_lin lin;
    double t = zs_cost_attn_zigzag(o->cost, len, n, 0, o->heads, 0, 0);
    if (zs_iter_linear_time(o->cost, o->tp, o->slots_per_node, (double)s, 0, &lin, NULL) == ZS_OK)
        t += lin.fwd_entry + lin.fwd_post;
    if (fwd_s)
        *fwd_s = t;
    double r = o->host_bps * t / (o->act_layer * (double)s);
    return r < 1 ? r : 1;
}

int zs_bs_offload_needed(const zs_bs_offload *o, int32_t len, int max_n, double *r)
{
    for (int n = 1; n <= max_n; n++) {
        int64_t s = zs_dyncp_share(len, n);
        if (s <= o->cap) {
            *r = 0;
            return n;
        }
        double lo = zs_bs_offload_min_ratio(o, s);
        if (lo <= 1 && lo <= zs_bs_offload_max_ratio(o, len, n, NULL)) {
            *r = lo;
            return n;
        }
    }
    *r = 0;
    return 0;
}

double zs_bs_offload_copy_s(const zs_bs_offload *o, double bytes)
{
    return bytes / o->host_bps;
}

int zs_bs_offload_assign(zs_bs_offload *o, const zs_dyncp_plan *p, const int32_t *len, zs_err *e)
{
    size_t G = (size_t)(p->ngroups > 0 ? p->ngroups : 1);
    o->ngroups = p->ngroups;
    o->ratio = calloc(G, sizeof(double));
    o->bytes = calloc(G, sizeof(double));
    o->fwd_seen = calloc((size_t)(p->nwaves > 0 ? p->nwaves : 1), sizeof(int));
    if (!o->ratio || !o->bytes || !o->fwd_seen)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (int g = 0; g < p->ngroups; g++) {
        int n = p->size[g];
        int64_t s = 0;
        int32_t longest = 0;
        for (int i = p->doc_start[g]; i < p->doc_start[g + 1]; i++) {
            int32_t d = p->docs[i];
            s += zs_dyncp_share(len[d], n);
            longest = len[d] > longest ? len[d] : longest;
        }
        if (s <= o->cap)
            continue;
        double r = zs_bs_offload_min_ratio(o, s);
        /* The scheduler gave a group more than cap tokens only for one
         * document whose copies hide at this width (zs_bs_offload_needed). */
        if (r > 1 || r > zs_bs_offload_max_ratio(o, longest, n, NULL) * (1 + 1e-9)) {
            char what[64];
            snprintf(what, sizeof what, "micro-batch group %d", g);
            return zs_err_set(e, ZS_EINPUT, what, "raise max_cp or use more GPUs",
                              "%lld tokens per GPU do not fit with hidden offloading",
                              (long long)s);
        }
        o->ratio[g] = r;
        o->bytes[g] = r * o->act_layer * (double)s;
    }
    return ZS_OK;
}

int64_t zs_bs_offload_resident(const zs_bs_offload *o, const zs_dyncp_plan *p, const int32_t *len)
{
    int64_t most = 0;
    for (int g = 0; g < p->ngroups; g++) {
        int64_t s = 0;
        for (int i = p->doc_start[g]; i < p->doc_start[g + 1]; i++)
            s += zs_dyncp_share(len[p->docs[i]], p->size[g]);
        if (g < o->ngroups && o->ratio[g] > 0)
            s = (int64_t)ceil((double)s * resident_layers(o, o->ratio[g]) / o->layers - 1e-6);
        most = s > most ? s : most;
    }
    return most;
}

int zs_bs_offload_pass(zs_bs_offload *o, int micro, int backward)
{
    if (backward)
        return 3;
    return ++o->fwd_seen[micro] >= 2 ? 2 : 1;
}

int zs_bs_offload_emit(zs_bs_offload *o, zs_iter *it, int stage, int micro, int backward, int g,
                       int first, int n, int64_t *dep, zs_err *e)
{
    (void)micro;
    if (g >= o->ngroups || o->bytes[g] <= 0)
        return ZS_OK;
    zs_schedule *s = zs_iter_schedule(it);
    double b = o->bytes[g], t = zs_bs_offload_copy_s(o, b);
    int pass = backward ? 3 : o->fwd_seen[micro] >= 2 ? 2 : 1;
    int fetch_pass = o->recompute == ZS_RECOMPUTE_FULL ? 2 : 3;
    for (int k = 0; k < n; k++) {
        int rank = zs_iter_rank(it, stage, first + k);
        if (pass == 1) {
            /* The layer's input (and, without recomputation, what it
             * saves) leaves while the layer computes. */
            int64_t start = zs_iter_rank_layer_start(it, rank);
            zs_sched_host_copy(s, rank, o->stream, "offload-d2h", 1, b, t, &start, start >= 0);
        } else if (pass == fetch_pass) {
            /* Prefetched on the copy stream as early as it is free; the
             * layer's attention waits for it. */
            int64_t h2d = zs_sched_host_copy(s, rank, o->stream, "offload-h2d", 0, b, t, NULL, 0);
            if (h2d < 0)
                break;
            int64_t both[2] = {h2d, dep[k]};
            dep[k] = zs_sched_elementwise(s, rank, ZS_STREAM_COMPUTE, "offload-wait", 0, 0, both,
                                          dep[k] >= 0 ? 2 : 1);
        }
    }
    return zs_schedule_check(s, e);
}
