/* The collective part of a calibration: the nccl-tests points go to the
 * NCCL model's fit (zs_nccl_fit) on the cluster they ran on, and the file
 * keeps the fitted parameters and, per point, the algorithm and protocol
 * NCCL runs there with the measured and predicted times. See zs_calib.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_calib_internal.h"

#define NCCL_MODEL_NAME "NCCL 2.29.2 tuning model (src/graph/tuning.cc); docs/cost-model.md"

int zs__meas_coll(const zs_meas *m)
{
    int s = zs_calib_slot_parse(m->op);
    return s >= ZS_CAL_COLL_AG && s <= ZS_CAL_COLL_A2A ? s - ZS_CAL_COLL_AG : -1;
}

int zs__coll_shape(const zs_meas *m, int *nodes, int *ppn, zs_err *e)
{
    int nn = m->nodes > 0 ? m->nodes : 1;
    if (m->gpus < 2 || m->gpus % nn != 0)
        return zs_err_set(e, ZS_EINPUT, m->source,
                          "a collective needs at least 2 GPUs, the same number on each node",
                          "%d GPUs on %d nodes", m->gpus, nn);
    *nodes = nn;
    *ppn = m->gpus / nn;
    return ZS_OK;
}

int zs__calib_fit_nccl(zs_calib *c, const zs_meas_set *s, const char *keep, const zs_cluster *cl,
                       zs_err *e)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += keep[i] && zs__meas_coll(&s->v[i]) >= 0;
    if (!n)
        return ZS_OK;
    if (!cl)
        return zs_err_set(e, ZS_EINPUT, s->nfiles ? s->files[0].path : NULL,
                          "give the hardware the collectives ran on (--cluster PRESET|FILE)",
                          "collective measurements need a cluster description");
    zs_nccl_obs *obs = calloc(n, sizeof *obs);
    const zs_meas **src = calloc(n, sizeof *src);
    zs__coll_pt *pts = calloc(n, sizeof *pts);
    if (!obs || !src || !pts) {
        free(obs);
        free(src);
        free(pts);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory fitting");
    }
    zs_cluster hw = *cl;
    int rc = ZS_OK;
    size_t k = 0;
    for (size_t i = 0; i < s->n && rc == ZS_OK; i++) {
        const zs_meas *m = &s->v[i];
        int kind = zs__meas_coll(m);
        if (!keep[i] || kind < 0)
            continue;
        zs_nccl_obs *o = &obs[k];
        if ((rc = zs__coll_shape(m, &o->nodes, &o->ppn, e)))
            break;
        if (o->ppn > hw.gpus_per_node) {
            rc = zs_err_set(e, ZS_EINPUT, m->source,
                            "use a cluster with as many GPUs per node as the run had (--cluster)",
                            "%d GPUs per node, cluster '%s' has %d", o->ppn, hw.name,
                            hw.gpus_per_node);
            break;
        }
        if (o->nodes > hw.nodes)
            hw.nodes = o->nodes;
        o->kind = (zs_coll_kind)kind;
        o->nbytes = m->bytes;
        o->seconds = m->seconds;
        o->algo_mask = m->algo_mask;
        o->proto_mask = m->proto_mask;
        src[k++] = m;
    }
    zs_nccl_params prm;
    if (rc == ZS_OK)
        rc = zs_nccl_fit(&hw, obs, n, &prm, e);
    if (rc == ZS_OK) {
        for (size_t i = 0; i < n; i++) {
            zs__coll_pt *p = &pts[i];
            snprintf(p->source, sizeof p->source, "%s", src[i]->source);
            snprintf(p->op, sizeof p->op, "%s", src[i]->op);
            p->gpus = src[i]->gpus;
            p->nodes = obs[i].nodes;
            p->bytes = obs[i].nbytes;
            p->measured = obs[i].seconds;
            p->predicted = obs[i].predicted;
            snprintf(p->algo, sizeof p->algo, "%s", zs_nccl_algo_name(obs[i].algo));
            snprintf(p->proto, sizeof p->proto, "%s", zs_nccl_proto_name(obs[i].proto));
        }
        c->has_nccl = 1;
        c->nccl = prm;
        snprintf(c->nccl_cluster, sizeof c->nccl_cluster, "%s", cl->name);
        c->nccl_inplace = s->nccl_inplace;
        free(c->cpts);
        c->cpts = pts;
        c->ncpts = n;
        pts = NULL;
        /* The ring's bus bandwidth inside one node, as fitted: what an
         * NVLink link of the SimGrid platform should carry. */
        zs_nccl_topo t;
        c->nvl_bus_gbs = 0;
        if (prm.fitted[ZS_NP_NVL_EFF] && cl->gpus_per_node > 1 &&
            zs_nccl_topo_init(&hw, 1, 2, 0, &t, NULL) == ZS_OK)
            c->nvl_bus_gbs = t.ring.nch * t.ring.bw_intra * prm.v[ZS_NP_NVL_EFF];
        /* What one NIC carries for a ring across two full nodes, as
         * fitted: each of the ring's channels crosses the node boundary
         * through one NIC at the graph's network speed times net_eff. The
         * SimGrid platform's NIC links and the analytic backend's
         * transfers across nodes take it (zs_calib_link). */
        c->nic_gbs = 0;
        if (prm.fitted[ZS_NP_NET_EFF] &&
            zs_nccl_topo_init(&hw, 2, cl->gpus_per_node, 0, &t, NULL) == ZS_OK && t.nics > 0)
            c->nic_gbs = t.ring.nch * t.ring.bw_inter * prm.v[ZS_NP_NET_EFF] / t.nics;
    }
    free(obs);
    free(src);
    free(pts);
    return rc;
}

static void residuals(const zs_calib *c, double *rms, double *mx)
{
    double ss = 0, m = 0;
    for (size_t i = 0; i < c->ncpts; i++) {
        double r = fabs(c->cpts[i].predicted - c->cpts[i].measured) / c->cpts[i].measured;
        ss += r * r;
        m = r > m ? r : m;
    }
    *rms = c->ncpts ? sqrt(ss / (double)c->ncpts) : 0;
    *mx = m;
}

json_t *zs__calib_nccl_json(const zs_calib *c)
{
    json_t *o = json_object(), *prm = json_object(), *pts = json_array();
    json_object_set_new(o, "model", json_string(NCCL_MODEL_NAME));
    json_object_set_new(o, "cluster", json_string(c->nccl_cluster));
    json_object_set_new(o, "column", json_string(c->nccl_inplace ? "in-place" : "out-of-place"));
    json_object_set_new(o, "nvlink_bus_gbs", json_real(c->nvl_bus_gbs));
    json_object_set_new(o, "nic_gbs", json_real(c->nic_gbs));
    for (int i = 0; i < ZS_NP_NPARAMS; i++) {
        json_t *p = json_object();
        json_object_set_new(p, "value", json_real(c->nccl.v[i]));
        json_object_set_new(p, "fitted", json_boolean(c->nccl.fitted[i]));
        json_object_set_new(prm, zs_nccl_param_name(i), p);
    }
    json_object_set_new(o, "params", prm);
    double rms, mx;
    residuals(c, &rms, &mx);
    json_object_set_new(o, "points_fitted", json_integer((json_int_t)c->ncpts));
    json_object_set_new(o, "rms_rel", json_real(rms));
    json_object_set_new(o, "max_rel", json_real(mx));
    for (size_t i = 0; i < c->ncpts; i++) {
        const zs__coll_pt *p = &c->cpts[i];
        json_t *x = json_object();
        json_object_set_new(x, "source", json_string(p->source));
        json_object_set_new(x, "op", json_string(p->op));
        json_object_set_new(x, "gpus", json_integer(p->gpus));
        json_object_set_new(x, "nodes", json_integer(p->nodes));
        json_object_set_new(x, "bytes", json_real(p->bytes));
        json_object_set_new(x, "algo", json_string(p->algo));
        json_object_set_new(x, "proto", json_string(p->proto));
        json_object_set_new(x, "measured", json_real(p->measured));
        json_object_set_new(x, "predicted", json_real(p->predicted));
        json_object_set_new(x, "rel", json_real((p->predicted - p->measured) / p->measured));
        json_array_append_new(pts, x);
    }
    json_object_set_new(o, "points", pts);
    return o;
}

static int bad(const zs_json_doc *doc, const char *parent, const char *key, const char *what,
               zs_err *e)
{
    char where[600];
    zs_json_where(doc, parent, key, where, sizeof where);
    return zs_err_set(e, ZS_EINPUT, where, "regenerate the file with `zepsim calib fit`",
                      "collectives: %s", what);
}

int zs__calib_nccl_load(zs_calib *c, const zs_json_doc *doc, json_t *o, zs_err *e)
{
    if (!json_is_object(o))
        return bad(doc, NULL, "collectives", "not an object", e);
    json_t *prm = json_object_get(o, "params"), *cl = json_object_get(o, "cluster");
    json_t *col = json_object_get(o, "column"), *nv = json_object_get(o, "nvlink_bus_gbs");
    if (!json_is_object(prm))
        return bad(doc, "collectives", "params", "'params' must be an object", e);
    zs_nccl_params p;
    zs_nccl_params_default(&p);
    const char *key;
    json_t *v;
    json_object_foreach(prm, key, v)
    {
        int i = zs_nccl_param_parse(key);
        if (i < 0)
            return bad(doc, "params", key, "unknown parameter", e);
        json_t *val = json_object_get(v, "value"), *fit = json_object_get(v, "fitted");
        double x = json_is_number(val) ? json_number_value(val) : -1;
        int zero_ok = i == ZS_NP_RAMP_HALF || i == ZS_NP_RED_HALF || i == ZS_NP_NET_RAMP_HALF;
        if (!isfinite(x) || x < 0 || (x == 0 && !zero_ok) || x > zs_nccl_param_max(i) * 1.000001 ||
            x > 1e15 || !json_is_boolean(fit))
            return bad(doc, "params", key,
                       "a parameter is {\"value\": positive number in range, \"fitted\": bool}", e);
        p.v[i] = x;
        p.fitted[i] = (unsigned char)json_is_true(fit);
    }
    if (!json_is_string(cl))
        return bad(doc, "collectives", "cluster", "'cluster' must name the hardware description",
                   e);
    double nvb = json_is_number(nv) ? json_number_value(nv) : 0;
    if (!isfinite(nvb) || nvb < 0)
        return bad(doc, "collectives", "nvlink_bus_gbs", "must be a number >= 0", e);
    c->has_nccl = 1;
    c->nccl = p;
    snprintf(c->nccl_cluster, sizeof c->nccl_cluster, "%s", json_string_value(cl));
    c->nccl_inplace = json_is_string(col) && strcmp(json_string_value(col), "in-place") == 0;
    c->nvl_bus_gbs = nvb;
    /* Files written before the network fit have no "nic_gbs": 0, unknown. */
    json_t *nic = json_object_get(o, "nic_gbs");
    double nicb = json_is_number(nic) ? json_number_value(nic) : 0;
    if (!isfinite(nicb) || nicb < 0 || nicb > 1e6)
        return bad(doc, "collectives", "nic_gbs", "must be a number >= 0", e);
    c->nic_gbs = nicb;
    /* Per-point explanations: kept for `calib show`, not needed to price. */
    json_t *pts = json_object_get(o, "points"), *x;
    size_t i;
    if (json_is_array(pts) && json_array_size(pts) > 0) {
        zs__coll_pt *cp = calloc(json_array_size(pts), sizeof *cp);
        if (!cp)
            return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        size_t k = 0;
        json_array_foreach(pts, i, x)
        {
            json_t *me = json_object_get(x, "measured"), *pr = json_object_get(x, "predicted");
            if (!json_is_number(me) || !json_is_number(pr) || !(json_number_value(me) > 0))
                continue;
            zs__coll_pt *q = &cp[k++];
            json_t *s;
            if (json_is_string(s = json_object_get(x, "source")))
                snprintf(q->source, sizeof q->source, "%s", json_string_value(s));
            if (json_is_string(s = json_object_get(x, "op")))
                snprintf(q->op, sizeof q->op, "%s", json_string_value(s));
            if (json_is_string(s = json_object_get(x, "algo")))
                snprintf(q->algo, sizeof q->algo, "%s", json_string_value(s));
            if (json_is_string(s = json_object_get(x, "proto")))
                snprintf(q->proto, sizeof q->proto, "%s", json_string_value(s));
            if (json_is_integer(s = json_object_get(x, "gpus")))
                q->gpus = (int)json_integer_value(s);
            if (json_is_integer(s = json_object_get(x, "nodes")))
                q->nodes = (int)json_integer_value(s);
            if (json_is_number(s = json_object_get(x, "bytes")))
                q->bytes = json_number_value(s);
            q->measured = json_number_value(me);
            q->predicted = json_number_value(pr);
        }
        free(c->cpts);
        c->cpts = cp;
        c->ncpts = k;
    }
    return ZS_OK;
}

void zs__calib_nccl_print(FILE *f, const zs_calib *c)
{
    if (!c->has_nccl)
        return;
    double rms, mx;
    residuals(c, &rms, &mx);
    fprintf(f, "  collectives: NCCL 2.29.2 model, fitted on cluster '%s' (%s times)",
            c->nccl_cluster, c->nccl_inplace ? "in-place" : "out-of-place");
    if (c->ncpts)
        fprintf(f, ", %zu points, rms %.2f%%, max %.2f%%", c->ncpts, 100 * rms, 100 * mx);
    fprintf(f, "\n");
    for (int i = 0; i < ZS_NP_NPARAMS; i++)
        if (c->nccl.fitted[i])
            fprintf(f, "    %-18s %12.6g  (fitted%s)\n", zs_nccl_param_name(i), c->nccl.v[i],
                    c->nccl.v[i] >= zs_nccl_param_max(i) * 0.9999 ? ", at its upper bound" : "");
    if (c->nvl_bus_gbs > 0)
        fprintf(f, "    ring bus bandwidth inside a node: %.1f GB/s\n", c->nvl_bus_gbs);
    if (c->nic_gbs > 0)
        fprintf(f, "    one NIC's achieved rate across nodes: %.1f GB/s\n", c->nic_gbs);
    if (rms > 0.2)
        fprintf(f,
                "    warning: the model explains these collectives poorly (rms %.0f%%): check "
                "the cluster (--cluster) and NCCL_ALGO/NCCL_PROTO of the runs\n",
                100 * rms);
    /* Which pair explains how many points. */
    char seen[32][32];
    int count[32], ns = 0;
    for (size_t i = 0; i < c->ncpts; i++) {
        char key[32];
        snprintf(key, sizeof key, "%s/%s", c->cpts[i].algo, c->cpts[i].proto);
        int j = 0;
        while (j < ns && strcmp(seen[j], key) != 0)
            j++;
        if (j == ns && ns < 32) {
            snprintf(seen[ns], sizeof seen[0], "%s", key);
            count[ns++] = 0;
        }
        if (j < ns)
            count[j]++;
    }
    if (ns) {
        fprintf(f, "    points explained by:");
        for (int j = 0; j < ns; j++)
            fprintf(f, " %s %d%s", seen[j], count[j], j + 1 < ns ? "," : "");
        fprintf(f, "\n");
    }
}
