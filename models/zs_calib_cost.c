/* The calibrated cost model: the analytic model's curves with every slot
 * the calibration fits replaced by its fitted curve, and predictions of
 * single measurement points through the cost model's own ops (so the
 * validation exercises the code planners use). See zs_calib.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "zs_calib_internal.h"

/* "NVIDIA H200" / "H200" vs the preset "h200": compare letters and
 * digits without case, the measured name containing the preset's. */
int zs__same_gpu(const char *measured, const char *preset)
{
    char a[128], b[128];
    size_t na = 0, nb = 0;
    for (const char *p = measured; *p && na < sizeof a - 1; p++)
        if (isalnum((unsigned char)*p))
            a[na++] = (char)tolower((unsigned char)*p);
    for (const char *p = preset; *p && nb < sizeof b - 1; p++)
        if (isalnum((unsigned char)*p))
            b[nb++] = (char)tolower((unsigned char)*p);
    a[na] = b[nb] = '\0';
    if (!na)
        return 1; /* unknown: nothing to warn about */
    /* "h100sxm" preset vs "h100" measured: compare the shorter prefix */
    size_t k = na < nb ? na : nb;
    return strncmp(a, b, k) == 0 || strstr(a, b) != NULL;
}

zs_cost *zs_cost_calibrated_new(const zs_model *m, const zs_cluster *cl_in, const zs_calib *calib)
{
    /* Transfers are priced on the calibrated links, whoever built the cost. */
    zs_cluster hw = *cl_in;
    zs_calib_apply_links(calib, &hw);
    const zs_cluster *cl = &hw;
    zs_curve cv[ZS_CAL_NSLOTS];
    zs__cost_analytic_curves(cl, cv);
    char desc[256], fitted[200] = "";
    size_t o = 0;
    for (int s = 0; s < ZS_CAL_NSLOTS; s++) {
        const zs_curve *c = zs_calib_curve(calib, (zs_calib_slot)s);
        if (!c)
            continue;
        if (s != ZS_CAL_ATTN_FWD && s != ZS_CAL_ATTN_BWD)
            cv[s] = *c;
        if (o < sizeof fitted)
            o += (size_t)snprintf(fitted + o, sizeof fitted - o, "%s%s", o ? "," : "",
                                  zs_calib_slot_name(s));
    }
    /* Attention: the fitted kernel's directions, the GPU's selected kernel
     * for a direction the calibration does not fit. */
    const zs_attn_kernel *pk = zs_gpu_attn_kernel(&cl->gpu);
    zs_attn_kernel k = *pk;
    int sms = cl->gpu.sms, fsms = 0;
    const zs_attn_kernel *fk = zs_calib_attn_kernel(calib, &fsms);
    if (fk) {
        k = *fk;
        sms = fsms;
        if (!zs_calib_curve(calib, ZS_CAL_ATTN_FWD))
            k.fwd = pk->fwd;
        if (!zs_calib_curve(calib, ZS_CAL_ATTN_BWD))
            k.bwd = pk->bwd;
    }
    const char *gpu = zs_calib_gpu(calib);
    int same = zs__same_gpu(gpu, cl->gpu.name);
    const zs_nccl_params *np = zs_calib_nccl(calib);
    if (np && o < sizeof fitted)
        snprintf(fitted + o, sizeof fitted - o, "%scollectives", o ? "," : "");
    snprintf(desc, sizeof desc,
             "calibrated on %s (fitted: %s; %s kernel %s elsewhere; collectives: NCCL 2.29.2 "
             "model%s)%s%s",
             gpu[0] ? gpu : "unknown GPU", fitted[0] ? fitted : "none", cl->gpu.name, pk->name,
             np ? "" : " with NCCL's figures", same ? "" : "; applied to ",
             same ? "" : cl->gpu.name);
    return zs__cost_curves_new(1, m, cl, cv, &k, sms, np, desc);
}

int zs_calib_predict(const zs_cost *c, const zs_calib *cal, const zs_meas *m, const zs_model *lm,
                     double *seconds, zs_nccl_choice *choice, zs_err *e)
{
    zs__fit_pt p;
    int s = zs__meas_point(m, lm, &p);
    if (s < 0)
        return zs_err_set(e, ZS_EINPUT, m->source,
                          "layer ops need --model and tp 1; other points need their shape",
                          "cannot price measurement '%s'", m->op);
    /* A private copy whose model and cluster fit the point's shape. */
    zs_cost tmp = *c;
    if (s == ZS_CAL_ATTN_FWD || s == ZS_CAL_ATTN_BWD) {
        zs_attn_block *b = NULL;
        int n, h, kv, rc = zs_meas_attn_launch(m, &b, &n, &h, &kv, e);
        if (rc)
            return rc;
        tmp.model.heads = h;
        tmp.model.kv_heads = kv;
        tmp.model.head_dim = m->head_dim;
        *seconds = zs_cost_attn(&tmp, b, n, h, s == ZS_CAL_ATTN_BWD) / n;
        free(b);
        return ZS_OK;
    }
    if (strncmp(m->op, "layer:", 6) == 0) {
        /* Layer ops go through the GEMM / elementwise ops. */
        const char *op = m->op + 6;
        double t = m->tokens, h = lm->hidden, ad = (double)lm->heads * lm->head_dim;
        double kvd = 2.0 * lm->kv_heads * lm->head_dim;
        if (strcmp(op, "qkv") == 0)
            *seconds = zs_cost_gemm(c, t, ad + kvd, h);
        else if (strcmp(op, "linear_proj") == 0)
            *seconds = zs_cost_gemm(c, t, h, ad);
        else if (strcmp(op, "mlp") == 0)
            *seconds = 2 * zs_cost_gemm(c, t, lm->ffn, h) + zs_cost_gemm(c, t, h, lm->ffn);
        else
            *seconds = zs_cost_elementwise(c, p.work);
        return ZS_OK;
    }
    switch (s) {
    case ZS_CAL_GEMM:
        *seconds = zs_cost_gemm(c, m->m, m->n, m->k);
        return ZS_OK;
    case ZS_CAL_ELEMENTWISE:
        *seconds = zs_cost_elementwise(c, m->bytes);
        return ZS_OK;
    default:
        break;
    }
    if (s >= ZS_CAL_LINK_NVLINK && s <= ZS_CAL_LINK_FABRIC) {
        if (tmp.cluster.nodes < 2)
            tmp.cluster.nodes = 2;
        int dst = s == ZS_CAL_LINK_NVLINK ? 1 : tmp.cluster.gpus_per_node;
        *seconds = zs_cost_p2p(&tmp, 0, dst, m->bytes);
        return ZS_OK;
    }
    /* Collectives: NCCL's choice and the calibrated time of that pair, on
     * the measurement's nodes x GPUs per node (the first GPUs of each node). */
    zs_coll_kind k = (zs_coll_kind)(s - ZS_CAL_COLL_AG);
    int nodes, ppn, rc = zs__coll_shape(m, &nodes, &ppn, e);
    zs_nccl_topo t;
    if (rc == ZS_OK && tmp.cluster.nodes < nodes)
        tmp.cluster.nodes = nodes;
    if (rc == ZS_OK && (rc = zs_nccl_topo_init(&tmp.cluster, nodes, ppn, 0, &t, e)))
        zs_err_prefix_where(e, m->source);
    zs_nccl_choice ch;
    if (rc == ZS_OK)
        rc = zs_nccl_choose(&t, k, m->bytes, m->algo_mask, m->proto_mask, zs_calib_nccl(cal), &ch,
                            e);
    if (rc)
        return rc;
    *seconds = ch.seconds;
    if (choice)
        *choice = ch;
    return ZS_OK;
}
