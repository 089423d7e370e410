/* The calibration object: which measurements feed which curve, the fit of
 * every covered slot (collectives: the NCCL model, zs_calib_nccl.c), the
 * versioned JSON file with provenance and residuals, and the accessors the
 * cost model and the SimGrid platform use. See zs_calib.h and
 * docs/validation.md. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zs_calib_internal.h"
#include "zs_config.h"
#include "zs_fdio.h"
#include "zs_presets.h"

static const char *const slot_names[ZS_CAL_NSLOTS] = {
    "attn_fwd", "attn_bwd",   "gemm",       "elementwise",    "p2p_nvlink", "p2p_pcie",
    "p2p_nic",  "p2p_fabric", "all-gather", "reduce-scatter", "all-reduce", "all-to-all"};

const char *zs_calib_slot_name(int s)
{
    return s >= 0 && s < ZS_CAL_NSLOTS ? slot_names[s] : "?";
}

int zs_calib_slot_parse(const char *name)
{
    for (int i = 0; i < ZS_CAL_NSLOTS; i++)
        if (strcmp(name, slot_names[i]) == 0)
            return i;
    return -1;
}

static double min3(double a, double b, double c)
{
    double m = a < b ? a : b;
    return m < c ? m : c;
}

/* The smallest size variable of n fitted points. */
static double min_x(const zs__fit_pt *pt, size_t n)
{
    double lo = pt[0].x;
    for (size_t i = 1; i < n; i++)
        lo = pt[i].x < lo ? pt[i].x : lo;
    return lo;
}

/* nccl-tests "size" -> the per-rank bytes zs_cost_ops.collective takes
 * (all-to-all's size is the whole exchange, n per-rank buffers). */
static double coll_rank_bytes(zs_coll_kind k, int n, double size)
{
    return k == ZS_COLL_ALLREDUCE ? size : size / n;
}

int zs_meas_attn_launch(const zs_meas *m, zs_attn_block **blocks, int *n, int *heads, int *kv_heads,
                        zs_err *e)
{
    int tp = m->tp > 1 ? m->tp : 1, cp = m->cp > 1 ? m->cp : 1, docs = m->docs > 1 ? m->docs : 1;
    int h = m->heads / tp, kv = (m->kv_heads > 0 ? m->kv_heads : m->heads) / tp;
    if (m->seq_len < 1 || h < 1 || m->head_dim < 1 || docs > (1 << 24) ||
        (double)docs * m->seq_len > 2147483648.0 || (!m->causal && cp > 1))
        return zs_err_set(e, ZS_EINPUT, m->source,
                          "attention points need seq_len, heads (>= tp) and head_dim (give "
                          "--model for per-document profiles), at most 2^31 tokens per launch "
                          "(docs x seq_len); cp > 1 only for causal points",
                          "cannot build the launch of attention point '%s'", m->op);
    /* The shard a CP rank computes for one document, as the DistCA
     * profiler builds it: L/cp queries (the end of the document) against
     * the (1/2 + 1/(2cp)) L keys a zigzag shard sees on average. */
    int64_t L = m->seq_len, K = (int64_t)((0.5 + 0.5 / cp) * (double)L), Q = L / cp;
    zs_attn_block b = m->causal ? (zs_attn_block){0, (int32_t)(K - Q), (int32_t)K, 0, (int32_t)K}
                                : (zs_attn_block){0, (int32_t)L, (int32_t)(2 * L), 0, (int32_t)L};
    if (Q < 1 || (m->causal ? K : 2 * L) > 2147483647LL)
        return zs_err_set(e, ZS_EINPUT, m->source, "use fewer CP ranks or a shorter document",
                          "attention point's shard is empty or too long");
    zs_attn_block *v = malloc(sizeof *v * (size_t)docs);
    if (!v)
        return zs_err_set(e, ZS_ENOMEM, m->source, NULL, "out of memory");
    for (int i = 0; i < docs; i++) {
        v[i] = b;
        v[i].doc = i;
    }
    *blocks = v;
    *n = docs;
    *heads = h;
    *kv_heads = kv > 0 ? kv : 1;
    return ZS_OK;
}

int zs_meas_set_unshaped(const zs_meas_set *s)
{
    int k = 0;
    for (size_t i = 0; i < s->n; i++)
        k += strncmp(s->v[i].op, "attn_", 5) == 0 && s->v[i].heads < 1;
    return k;
}

int zs_meas_set_apply_model(zs_meas_set *s, const zs_model *m)
{
    int k = 0;
    for (size_t i = 0; i < s->n; i++) {
        zs_meas *p = &s->v[i];
        if (strncmp(p->op, "attn_", 5) != 0 || p->heads > 0)
            continue;
        p->heads = m->heads;
        p->kv_heads = m->kv_heads;
        p->head_dim = m->head_dim;
        k++;
    }
    /* the files whose attention points had no shape now have the model's */
    unsigned attn = 1u << ZS_CAL_ATTN_FWD | 1u << ZS_CAL_ATTN_BWD;
    for (size_t i = 0; k && i < s->nfiles; i++)
        if ((s->files[i].slots & attn) && s->files[i].heads == 0) {
            s->files[i].heads = m->heads;
            s->files[i].kv_heads = m->kv_heads;
            s->files[i].head_dim = m->head_dim;
        }
    return k;
}

int zs__meas_point(const zs_meas *m, const zs_model *lm, zs__fit_pt *out)
{
    memset(out, 0, sizeof *out);
    out->t = m->seconds;
    out->steps = 1;
    out->m = m;
    int s = zs_calib_slot_parse(m->op);
    if (s == ZS_CAL_ATTN_FWD || s == ZS_CAL_ATTN_BWD) {
        /* Priced by the kernel model from the point's launch shape. */
        zs_attn_block *b = NULL;
        int n, h, kv;
        zs_err e;
        if (zs_meas_attn_launch(m, &b, &n, &h, &kv, &e))
            return -1;
        free(b);
        return s;
    }
    if (s == ZS_CAL_GEMM) {
        out->work = 2.0 * m->m * m->n * m->k;
        out->x = min3(m->m, m->n, m->k);
        return out->work > 0 ? s : -1;
    }
    if (s == ZS_CAL_ELEMENTWISE || (s >= ZS_CAL_LINK_NVLINK && s <= ZS_CAL_LINK_FABRIC)) {
        out->work = out->x = m->bytes;
        return m->bytes > 0 ? s : -1;
    }
    if (s >= ZS_CAL_COLL_AG && s <= ZS_CAL_COLL_A2A) {
        zs_coll_kind k = (zs_coll_kind)(s - ZS_CAL_COLL_AG);
        if (m->gpus < 2 || m->bytes <= 0)
            return -1;
        double b = coll_rank_bytes(k, m->gpus, m->bytes);
        zs_coll_bus(k, m->gpus, b, &out->work, &out->steps);
        out->x = out->work;
        return s;
    }
    /* Megatron layer ops: only with a model, only without TP (with TP the
     * measured times include the TP communication). */
    if (strncmp(m->op, "layer:", 6) != 0 || !lm || m->tp != 1 || m->tokens <= 0)
        return -1;
    const char *op = m->op + 6;
    double t = m->tokens, h = lm->hidden, ad = (double)lm->heads * lm->head_dim;
    double kvd = 2.0 * lm->kv_heads * lm->head_dim;
    if (strcmp(op, "qkv") == 0) {
        out->work = 2 * t * h * (ad + kvd);
        out->x = min3(t, h, ad + kvd);
        return ZS_CAL_GEMM;
    }
    if (strcmp(op, "linear_proj") == 0) {
        out->work = 2 * t * ad * h;
        out->x = min3(t, ad, h);
        return ZS_CAL_GEMM;
    }
    if (strcmp(op, "mlp") == 0) { /* three GEMMs (gate, up, down) */
        out->work = 2 * t * 3 * h * lm->ffn;
        out->x = min3(t, h, lm->ffn);
        out->steps = 3;
        return ZS_CAL_GEMM;
    }
    if (strstr(op, "bda")) { /* bias-dropout-add: read input and residual, write */
        out->work = out->x = 3 * t * h * lm->dtype_bytes;
        return ZS_CAL_ELEMENTWISE;
    }
    return -1;
}

zs_calib *zs_calib_new(void)
{
    zs_calib *c = calloc(1, sizeof *c);
    if (c)
        c->version = ZS_CALIB_VERSION;
    return c;
}

void zs_calib_free(zs_calib *c)
{
    if (!c)
        return;
    free(c->files);
    free(c->resid);
    free(c->cpts);
    free(c);
}

/* Predicted seconds of a fitted point: the attention kernel for the
 * attention slots, the slot's curve otherwise. */
static double slot_predict(const zs_calib *c, int slot, const zs__fit_pt *p)
{
    if (slot != ZS_CAL_ATTN_FWD && slot != ZS_CAL_ATTN_BWD)
        return zs_curve_time(&c->curve[slot], p->steps, p->work, p->x);
    zs_attn_block *b = NULL;
    int n, h, kv;
    zs_err e;
    if (zs_meas_attn_launch(p->m, &b, &n, &h, &kv, &e))
        return 0;
    zs_attn_shape sh = {h, kv, p->m->head_dim, c->attn_sms, 0, 2};
    double t = zs_attn_kernel_time(&c->attn, slot == ZS_CAL_ATTN_BWD, b, n, &sh, NULL) / n;
    free(b);
    return t;
}

static int add_resid(zs_calib *c, int slot, const zs__fit_pt *p)
{
    zs__resid *r = realloc(c->resid, (c->nresid + 1) * sizeof *r);
    if (!r)
        return ZS_ENOMEM;
    c->resid = r;
    r += c->nresid++;
    r->slot = slot;
    snprintf(r->source, sizeof r->source, "%s", p->m->source);
    r->x = p->x;
    r->measured = p->t;
    r->predicted = slot_predict(c, slot, p);
    return ZS_OK;
}

int zs_calib_fit(const zs_meas_set *s, const zs_fit_opts *o, zs_calib **out, zs_err *e)
{
    return zs_calib_fit_gpu(s, o, NULL, out, e);
}

int zs_calib_fit_gpu(const zs_meas_set *s, const zs_fit_opts *o, const zs_gpu *g, zs_calib **out,
                     zs_err *e)
{
    zs_calib *c = zs_calib_new();
    zs__fit_pt *pt = malloc((s->n ? s->n : 1) * sizeof *pt);
    int *slot = malloc((s->n ? s->n : 1) * sizeof *slot);
    char *keep = calloc(s->n ? s->n : 1, 1);
    if (!c || !pt || !slot || !keep) {
        zs_calib_free(c);
        free(pt);
        free(slot);
        free(keep);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory fitting");
    }
    snprintf(c->gpu, sizeof c->gpu, "%s", s->gpu);
    int rc = ZS_OK, any = 0;
    /* The attention fit keeps this GPU kernel's structure. */
    zs_gpu gpu;
    if (g)
        gpu = *g;
    else if ((rc = zs__gpu_for_device(s->gpu, &gpu, e))) {
        zs_calib_free(c);
        free(pt);
        free(slot);
        free(keep);
        return rc;
    }
    if (s->nfiles) {
        c->files = calloc(s->nfiles, sizeof *c->files);
        if (!c->files)
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        else
            memcpy(c->files, s->files, s->nfiles * sizeof *c->files);
        c->nfiles = c->files ? s->nfiles : 0;
    }
    for (size_t i = 0; i < s->n; i++) {
        zs__fit_pt p;
        slot[i] = zs__meas_point(&s->v[i], o ? o->model : NULL, &p);
        if (slot[i] >= 0 && o && o->exclude && o->exclude(&s->v[i], o->exclude_arg))
            slot[i] = -1;
        keep[i] = slot[i] >= 0;
        pt[i] = p;
    }
    /* Collectives: NCCL's model, not a curve. */
    if (rc == ZS_OK)
        rc = zs__calib_fit_nccl(c, s, keep, o ? o->cluster : NULL, e);
    any = c->has_nccl;
    for (int sl = 0; sl < ZS_CAL_COLL_AG && rc == ZS_OK; sl++) {
        zs__fit_pt *sel = malloc((s->n ? s->n : 1) * sizeof *sel);
        if (!sel) {
            rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory fitting");
            break;
        }
        size_t n = 0;
        for (size_t i = 0; i < s->n; i++)
            if (slot[i] == sl)
                sel[n++] = pt[i];
        int mask[4] = {1, 1, 1, 1};
        double fixed[4] = {0, 0, 0, 1};
        if (sl == ZS_CAL_ELEMENTWISE || n < 6) {
            mask[2] = mask[3] = 0; /* too little data for a size effect: latency-bandwidth */
        }
        int ok = 0;
        if (n > 0 && (sl == ZS_CAL_ATTN_FWD || sl == ZS_CAL_ATTN_BWD))
            ok = zs__fit_attn(c, sl, sel, n, zs_gpu_attn_kernel(&gpu), gpu.sms, gpu.peak_tflops);
        else if (n > 0)
            ok = zs__fit_curve(sel, n, mask, fixed, &c->curve[sl]);
        if (ok && sl == ZS_CAL_GEMM) /* the data's thinnest GEMM: the size term's floor */
            c->curve[sl].x_floor = min_x(sel, n);
        if (ok) {
            any = 1;
            for (size_t i = 0; i < n && rc == ZS_OK; i++)
                if (add_resid(c, sl, &sel[i]))
                    rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        }
        free(sel);
    }
    free(pt);
    free(slot);
    free(keep);
    if (rc == ZS_OK && !any)
        rc = zs_err_set(e, ZS_EINPUT, s->nfiles ? s->files[0].path : NULL,
                        "give nccl-tests logs, attention latency CSVs, or a layer-op TSV with "
                        "--model",
                        "no measurement could be fitted");
    if (rc) {
        zs_calib_free(c);
        return rc;
    }
    *out = c;
    return ZS_OK;
}

const zs_curve *zs_calib_curve(const zs_calib *c, zs_calib_slot s)
{
    if (!c || s < 0 || s >= ZS_CAL_NSLOTS || !c->curve[s].fitted)
        return NULL;
    return &c->curve[s];
}

const zs_attn_kernel *zs_calib_attn_kernel(const zs_calib *c, int *sms)
{
    if (!c || (!c->curve[ZS_CAL_ATTN_FWD].fitted && !c->curve[ZS_CAL_ATTN_BWD].fitted))
        return NULL;
    if (sms)
        *sms = c->attn_sms;
    return &c->attn;
}

int zs__gpu_for_device(const char *device, zs_gpu *out, zs_err *e)
{
    char name[64];
    for (size_t i = 0; device[0] && zs_preset_name("gpu", i, name, sizeof name); i++)
        if (zs__same_gpu(device, name))
            return zs_gpu_load(name, out, e);
    return zs_gpu_load("h100-sxm", out, e);
}

const zs_nccl_params *zs_calib_nccl(const zs_calib *c)
{
    return c && c->has_nccl ? &c->nccl : NULL;
}

const char *zs_calib_nccl_cluster(const zs_calib *c)
{
    return c && c->has_nccl ? c->nccl_cluster : "";
}

int zs_calib_link(const zs_calib *c, zs_link_class lc, double *latency_s, double *bw_Bps)
{
    if (!c || lc < 0 || lc >= ZS_LINK_NCLASSES)
        return 0;
    const zs_curve *cv = zs_calib_curve(c, (zs_calib_slot)(ZS_CAL_LINK_NVLINK + lc));
    if (cv) {
        *latency_s = cv->t0;
        *bw_Bps = cv->rmax;
        return 1;
    }
    /* No NVLink p2p data: a ring step inside a node is one NVLink transfer,
     * so the fitted ring bus bandwidth is the link's, and its per-step
     * latency NCCL's (3.4 us for ring/Simple over NVLink) times the fitted
     * scale. */
    if (lc == ZS_LINK_NVLINK && c->has_nccl && c->nvl_bus_gbs > 0) {
        *latency_s = zs_nccl_ring_step_us(0) / 1e6 * c->nccl.v[ZS_NP_INTRA_LAT];
        *bw_Bps = c->nvl_bus_gbs * 1e9;
        return 1;
    }
    /* No NIC p2p data: a ring step across nodes is one NIC transfer, so
     * the fitted network efficiency gives the NIC's achieved rate; its
     * latency is NCCL's network step for ring/Simple (14 us) times the
     * fitted scale, half on each end of the link. */
    if (lc == ZS_LINK_NIC && c->has_nccl && c->nic_gbs > 0) {
        *latency_s = zs_nccl_ring_step_us(1) / 1e6 * c->nccl.v[ZS_NP_NET_LAT] / 2;
        *bw_Bps = c->nic_gbs * 1e9;
        return 1;
    }
    return 0;
}

void zs_calib_apply_links(const zs_calib *c, zs_cluster *cl)
{
    double lat, bw;
    if (zs_calib_link(c, ZS_LINK_NVLINK, &lat, &bw)) {
        cl->nvlink_latency_us = lat * 1e6;
        cl->gpu.nvlink_gbs = bw / 1e9;
    }
    if (zs_calib_link(c, ZS_LINK_NIC, &lat, &bw)) {
        if (!(cl->nic_line_gbps > 0))
            cl->nic_line_gbps = cl->nic_gbps; /* NCCL's model keeps the line rate */
        cl->nic_latency_us = lat * 1e6;
        cl->nic_gbps = bw * 8 / 1e9;
    }
}

void zs_calib_merge(zs_calib *dst, const zs_calib *src)
{
    int had_attn = dst->curve[ZS_CAL_ATTN_FWD].fitted || dst->curve[ZS_CAL_ATTN_BWD].fitted;
    for (int s = 0; s < ZS_CAL_NSLOTS; s++)
        if (!dst->curve[s].fitted && src->curve[s].fitted) {
            dst->curve[s] = src->curve[s];
            /* An attention direction comes with its kernel structure; a
             * second direction joins only when the structures agree. */
            if (s == ZS_CAL_ATTN_FWD || s == ZS_CAL_ATTN_BWD) {
                if (!had_attn) {
                    dst->attn = src->attn;
                    dst->attn_sms = src->attn_sms;
                } else if (dst->attn.tile_q == src->attn.tile_q &&
                           dst->attn.tile_k == src->attn.tile_k) {
                    if (s == ZS_CAL_ATTN_FWD)
                        dst->attn.fwd = src->attn.fwd;
                    else
                        dst->attn.bwd = src->attn.bwd;
                } else {
                    dst->curve[s].fitted = 0;
                }
            }
        }
    if (!dst->has_nccl && src->has_nccl) {
        dst->has_nccl = 1;
        dst->nccl = src->nccl;
        dst->nccl_inplace = src->nccl_inplace;
        dst->nvl_bus_gbs = src->nvl_bus_gbs;
        dst->nic_gbs = src->nic_gbs;
        snprintf(dst->nccl_cluster, sizeof dst->nccl_cluster, "%s", src->nccl_cluster);
    }
    if (!dst->gpu[0])
        snprintf(dst->gpu, sizeof dst->gpu, "%s", src->gpu);
    /* the sources come along, so each curve still says where it came from */
    zs_calib_source *nf =
        src->nfiles ? realloc(dst->files, (dst->nfiles + src->nfiles) * sizeof *nf) : NULL;
    if (nf) {
        dst->files = nf;
        for (size_t i = 0; i < src->nfiles; i++) {
            int dup = 0;
            for (size_t j = 0; j < dst->nfiles && !dup; j++)
                dup = !strcmp(dst->files[j].sha256, src->files[i].sha256) &&
                      !strcmp(dst->files[j].path, src->files[i].path);
            if (!dup)
                dst->files[dst->nfiles++] = src->files[i];
        }
    }
}

const char *zs_calib_gpu(const zs_calib *c)
{
    return c ? c->gpu : "";
}

/* ---- the file ---------------------------------------------------------------------- */
/* A source's provenance: the device it names, the fits it feeds, the
 * shape of its attention points. */
static void source_json(json_t *f, const zs_calib_source *src)
{
    json_object_set_new(f, "gpu", json_string(src->gpu));
    json_t *fits = json_array();
    for (int s = 0; s < ZS_CAL_NSLOTS; s++)
        if (src->slots & 1u << s)
            json_array_append_new(fits, json_string(slot_names[s]));
    json_object_set_new(f, "fits", fits);
    if (src->heads) {
        json_object_set_new(f, "heads", json_integer(src->heads));
        json_object_set_new(f, "kv_heads", json_integer(src->kv_heads));
        json_object_set_new(f, "head_dim", json_integer(src->head_dim));
    }
}

/* Where a fit came from, for people and scripts reading the file (the
 * loader derives it from the sources again). */
static json_t *origin_json(const zs_calib *c, int s)
{
    zs_calib_origin o;
    json_t *j = json_object(), *files = json_array();
    zs_calib_origin_get(c, s, &o);
    json_object_set_new(j, "gpu", json_string(o.gpu));
    if ((s == ZS_CAL_ATTN_FWD || s == ZS_CAL_ATTN_BWD) && o.heads) {
        json_object_set_new(j, "heads", json_integer(o.heads));
        json_object_set_new(j, "kv_heads", json_integer(o.kv_heads));
        json_object_set_new(j, "head_dim", json_integer(o.head_dim));
    }
    unsigned want = s >= ZS_CAL_COLL_AG ? ~0u << ZS_CAL_COLL_AG : 1u << s;
    for (size_t i = 0; i < c->nfiles; i++)
        if (c->files[i].slots & want)
            json_array_append_new(files, json_string(c->files[i].path));
    json_object_set_new(j, "files", files);
    return j;
}

/* The provenance fields of a source (absent in files from before them). */
static void source_load(json_t *f, zs_calib_source *src)
{
    json_t *g = json_object_get(f, "gpu"), *fits = json_object_get(f, "fits"), *x;
    size_t i;
    if (json_is_string(g))
        snprintf(src->gpu, sizeof src->gpu, "%s", json_string_value(g));
    json_array_foreach(fits, i, x)
    {
        int s = json_is_string(x) ? zs_calib_slot_parse(json_string_value(x)) : -1;
        if (s >= 0)
            src->slots |= 1u << s;
    }
    int *dims[3] = {&src->heads, &src->kv_heads, &src->head_dim};
    const char *keys[3] = {"heads", "kv_heads", "head_dim"};
    for (int k = 0; k < 3; k++) {
        json_t *v = json_object_get(f, keys[k]);
        if (json_is_integer(v) && json_integer_value(v) >= -1 && json_integer_value(v) <= 65536)
            *dims[k] = (int)json_integer_value(v);
    }
}

int zs_calib_save(const zs_calib *c, const char *path, zs_err *e)
{
    json_t *root = json_object(), *src = json_array(), *curves = json_object();
    json_object_set_new(root, "format", json_string("zepsim-calibration"));
    json_object_set_new(root, "version", json_integer(c->version));
    json_object_set_new(root, "gpu", json_string(c->gpu));
    json_object_set_new(root, "curve",
                        json_string("seconds = steps*t0 + work/rmax * (1 + (half/x)^p)"));
    for (size_t i = 0; i < c->nfiles; i++) {
        json_t *f = json_object();
        json_object_set_new(f, "path", json_string(c->files[i].path));
        json_object_set_new(f, "sha256", json_string(c->files[i].sha256));
        json_object_set_new(f, "points", json_integer(c->files[i].points));
        source_json(f, &c->files[i]);
        json_array_append_new(src, f);
    }
    json_object_set_new(root, "sources", src);
    for (int s = 0; s < ZS_CAL_NSLOTS; s++) {
        const zs_curve *cv = &c->curve[s];
        if (!cv->fitted)
            continue;
        json_t *o, *res = json_array();
        if (s == ZS_CAL_ATTN_FWD || s == ZS_CAL_ATTN_BWD) {
            /* The kernel direction and the structure it was fitted with. */
            o = zs_attn_dir_to_json(s == ZS_CAL_ATTN_FWD ? &c->attn.fwd : &c->attn.bwd);
            json_object_set_new(o, "kernel", json_string(c->attn.name));
            json_object_set_new(o, "tile_q", json_integer(c->attn.tile_q));
            json_object_set_new(o, "tile_k", json_integer(c->attn.tile_k));
            json_object_set_new(o, "ctas_per_sm", json_integer(c->attn.ctas_per_sm));
            json_object_set_new(o, "dfix", json_real(c->attn.dfix));
            json_object_set_new(o, "sms", json_integer(c->attn_sms));
        } else {
            o = json_object();
            json_object_set_new(o, "t0", json_real(cv->t0));
            json_object_set_new(o, "rmax", json_real(cv->rmax));
            json_object_set_new(o, "half", json_real(cv->half));
            json_object_set_new(o, "p", json_real(cv->p));
            if (s == ZS_CAL_GEMM)
                json_object_set_new(o, "x_floor", json_real(cv->x_floor));
        }
        json_object_set_new(o, "points", json_integer(cv->npoints));
        json_object_set_new(o, "rms_rel", json_real(cv->rms_rel));
        json_object_set_new(o, "max_rel", json_real(cv->max_rel));
        for (size_t i = 0; i < c->nresid; i++) {
            const zs__resid *r = &c->resid[i];
            if (r->slot != s)
                continue;
            json_t *x = json_object();
            json_object_set_new(x, "source", json_string(r->source));
            json_object_set_new(x, "x", json_real(r->x));
            json_object_set_new(x, "measured", json_real(r->measured));
            json_object_set_new(x, "predicted", json_real(r->predicted));
            json_object_set_new(x, "rel", json_real((r->predicted - r->measured) / r->measured));
            json_array_append_new(res, x);
        }
        json_object_set_new(o, "residuals", res);
        json_object_set_new(o, "from", origin_json(c, s));
        json_object_set_new(curves, slot_names[s], o);
    }
    json_object_set_new(root, "curves", curves);
    if (c->has_nccl) {
        json_t *co = zs__calib_nccl_json(c);
        json_object_set_new(co, "from", origin_json(c, ZS_CAL_COLL_AG));
        json_object_set_new(root, "collectives", co);
    }
    int rc = zs_json_write_file(root, path,
                                JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10), e);
    json_decref(root);
    return rc;
}

static int num(const zs_json_doc *doc, json_t *o, const char *parent, const char *key, int req,
               double *out, zs_err *e)
{
    json_t *v = json_object_get(o, key);
    char where[600];
    if (!v && !req)
        return ZS_OK;
    zs_json_where(doc, parent, key, where, sizeof where);
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
        return zs_err_set(e, ZS_EINPUT, v ? where : doc->source,
                          "regenerate the file with `zepsim calib fit`",
                          "curve '%s': '%s' must be a non-negative number", parent, key);
    *out = json_number_value(v);
    return ZS_OK;
}

/* An attention slot: the kernel direction and its structure (the same for
 * both directions). */
static int load_attn(const zs_json_doc *doc, json_t *o, const char *key, zs_calib *c, int s,
                     zs_err *e)
{
    static const char *const structure[] = {"kernel",  "tile_q",    "tile_k", "ctas_per_sm",
                                            "dfix",    "sms",       "points", "rms_rel",
                                            "max_rel", "residuals", "from"};
    json_t *d = json_deep_copy(o);
    if (!d)
        return zs_err_set(e, ZS_ENOMEM, doc->source, NULL, "out of memory");
    for (size_t i = 0; i < sizeof structure / sizeof structure[0]; i++)
        json_object_del(d, structure[i]);
    zs_attn_dir dir;
    int rc = zs_attn_dir_from_json(doc, d, key, &dir, e);
    json_decref(d);
    if (rc)
        return rc;
    double tq = 0, tk = 0, cps = 0, dfix = 0, sms = 0;
    if ((rc = num(doc, o, key, "tile_q", 1, &tq, e)) ||
        (rc = num(doc, o, key, "tile_k", 1, &tk, e)) ||
        (rc = num(doc, o, key, "ctas_per_sm", 1, &cps, e)) ||
        (rc = num(doc, o, key, "dfix", 1, &dfix, e)) || (rc = num(doc, o, key, "sms", 1, &sms, e)))
        return rc;
    char where[600];
    zs_json_where(doc, "curves", key, where, sizeof where);
    if (tq < 16 || tq > 1024 || tk < 16 || tk > 1024 || cps < 1 || cps > 64 || dfix > 1 ||
        sms < 1 || sms > 100000)
        return zs_err_set(e, ZS_EINPUT, where, "regenerate the file with `zepsim calib fit`",
                          "curve '%s': tile sizes, CTAs per SM, dfix or SMs out of range", key);
    json_t *kn = json_object_get(o, "kernel");
    c->attn.tile_q = (int)tq;
    c->attn.tile_k = (int)tk;
    c->attn.ctas_per_sm = (int)cps;
    c->attn.dfix = dfix;
    c->attn_sms = (int)sms;
    snprintf(c->attn.name, sizeof c->attn.name, "%s",
             json_is_string(kn) ? json_string_value(kn) : "fitted");
    snprintf(c->attn.source, sizeof c->attn.source, "calibration %s", doc->source);
    *(s == ZS_CAL_ATTN_FWD ? &c->attn.fwd : &c->attn.bwd) = dir;
    return ZS_OK;
}

/* The GEMM curve's x_floor. A file written before it had one takes the
 * smallest x of its own residuals (the points it was fitted on), or,
 * without them, ZS_GEMM_DIM_FLOOR (the presets' floor). */
static int gemm_floor(const zs_json_doc *doc, json_t *o, const char *key, zs_curve *cv, zs_err *e)
{
    if (json_object_get(o, "x_floor"))
        return num(doc, o, key, "x_floor", 1, &cv->x_floor, e);
    double lo = INFINITY;
    json_t *r, *res = json_object_get(o, "residuals");
    size_t i;
    json_array_foreach(res, i, r)
    {
        json_t *x = json_object_get(r, "x");
        if (json_is_number(x) && json_number_value(x) > 0 && json_number_value(x) < lo)
            lo = json_number_value(x);
    }
    cv->x_floor = isfinite(lo) ? lo : ZS_GEMM_DIM_FLOOR;
    return ZS_OK;
}

/* A curve's point count: a whole number that fits an int ((int) of more is
 * undefined: the calib fuzz target found 2.25e11). */
static int count_of(double np, const char *key, const char *where, int *out, zs_err *e)
{
    if (np > INT32_MAX || np != floor(np))
        return zs_err_set(e, ZS_EINPUT, where, "regenerate the file with `zepsim calib fit`",
                          "curve '%s': 'points' must be a whole number up to 2^31 - 1", key);
    *out = (int)np;
    return ZS_OK;
}

/* A file that is not JSON but reads as measurements (an nccl-tests log, a
 * kernel CSV or TSV) was given where a calibration belongs: say to fit it
 * first (issue 35 item 7; before: "malformed JSON ... near '$'"). */
static int measurements_not_calib(const char *path, int rc, zs_err *e)
{
    char *text = NULL;
    size_t len = 0;
    zs_err ignored;
    if (zs_read_file(path, NULL, &text, &len, &ignored))
        return rc;
    const char *p = text + strspn(text, " \t\r\n");
    int meas =
        *p != '{' && *p != '[' && (zs__nccl_log_sniff(text) || strchr(p, ',') || strchr(p, '\t'));
    free(text);
    if (!meas)
        return rc;
    char fix[1200];
    snprintf(fix, sizeof fix,
             "fit it first: `zepsim calib fit %s -o OUT.calib.json` (with every file of one "
             "GPU), then pass --calib OUT.calib.json",
             path);
    return zs_err_set(e, ZS_EINPUT, path, fix,
                      "a measurement file (nccl-tests log, kernel CSV or TSV), not a calibration");
}

int zs_calib_load(const char *path, zs_calib **out, zs_err *e)
{
    zs_json_doc *doc = NULL;
    int rc = zs_json_doc_load_file(path, &doc, e);
    if (rc == ZS_EINPUT)
        return measurements_not_calib(path, rc, e);
    if (rc)
        return rc;
    zs_calib *c = zs_calib_new();
    if (!c) {
        zs_json_doc_free(doc);
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory");
    }
    json_t *fmt = json_object_get(doc->root, "format"),
           *ver = json_object_get(doc->root, "version");
    json_t *curves = json_object_get(doc->root, "curves"), *gpu = json_object_get(doc->root, "gpu");
    char where[600];
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "zepsim-calibration") != 0 ||
        !json_is_object(curves)) {
        rc = zs_err_set(e, ZS_EINPUT, path, "write one with `zepsim calib fit FILES -o OUT.json`",
                        "not a zepsim calibration file");
    } else if (!json_is_integer(ver) || json_integer_value(ver) != ZS_CALIB_VERSION) {
        /* Versions 1 to 3 priced collectives with per-collective curves
         * that this build no longer has (and 1 and 2 attention with a
         * curve): reading them would silently mis-price them. */
        zs_json_where(doc, NULL, "version", where, sizeof where);
        rc = zs_err_set(e, ZS_EINPUT, where,
                        "refit with this zepsim version (`zepsim calib fit FILES -o OUT.json`)",
                        "unsupported calibration version (this build reads version %d)",
                        ZS_CALIB_VERSION);
    }
    if (!rc && json_is_string(gpu))
        snprintf(c->gpu, sizeof c->gpu, "%s", json_string_value(gpu));
    const char *key;
    json_t *o;
    json_object_foreach(curves, key, o)
    {
        if (rc)
            break;
        int s = zs_calib_slot_parse(key);
        zs_json_where(doc, "curves", key, where, sizeof where);
        if (s < 0 || s >= ZS_CAL_COLL_AG) {
            rc = zs_err_set(e, ZS_EINPUT, where, "curve names are those zepsim calib fit writes",
                            "unknown curve '%s'", key);
            break;
        }
        if (!json_is_object(o)) {
            rc = zs_err_set(e, ZS_EINPUT, where, "a curve is an object", "bad curve '%s'", key);
            break;
        }
        zs_curve *cv = &c->curve[s];
        double np = 0;
        if (s == ZS_CAL_ATTN_FWD || s == ZS_CAL_ATTN_BWD) {
            if ((rc = load_attn(doc, o, key, c, s, e)) ||
                (rc = num(doc, o, key, "points", 0, &np, e)) ||
                (rc = num(doc, o, key, "rms_rel", 0, &cv->rms_rel, e)) ||
                (rc = num(doc, o, key, "max_rel", 0, &cv->max_rel, e)) ||
                (rc = count_of(np, key, where, &cv->npoints, e)))
                break;
            cv->fitted = 1;
            continue;
        }
        if ((rc = num(doc, o, key, "t0", 1, &cv->t0, e)) ||
            (rc = num(doc, o, key, "rmax", 1, &cv->rmax, e)) ||
            (rc = num(doc, o, key, "half", 1, &cv->half, e)) ||
            (rc = num(doc, o, key, "p", 1, &cv->p, e)) ||
            (rc = num(doc, o, key, "points", 0, &np, e)) ||
            (rc = num(doc, o, key, "rms_rel", 0, &cv->rms_rel, e)) ||
            (rc = num(doc, o, key, "max_rel", 0, &cv->max_rel, e)) ||
            (rc = count_of(np, key, where, &cv->npoints, e)))
            break;
        if (cv->rmax <= 0) {
            rc = zs_err_set(e, ZS_EINPUT, where, "rmax is a rate and must be positive",
                            "curve '%s' has rmax 0", key);
            break;
        }
        if (s == ZS_CAL_GEMM && (rc = gemm_floor(doc, o, key, cv, e)))
            break;
        cv->fitted = 1;
    }
    json_t *coll = json_object_get(doc->root, "collectives");
    if (!rc && coll)
        rc = zs__calib_nccl_load(c, doc, coll, e);
    json_t *src = json_object_get(doc->root, "sources"), *f;
    size_t i;
    if (!rc && json_is_array(src) && json_array_size(src) > 0) {
        c->files = calloc(json_array_size(src), sizeof *c->files);
        if (!c->files)
            rc = zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory");
        json_array_foreach(src, i, f)
        {
            if (rc)
                break;
            json_t *p = json_object_get(f, "path"), *h = json_object_get(f, "sha256"),
                   *n = json_object_get(f, "points");
            snprintf(c->files[i].path, sizeof c->files[i].path, "%s",
                     json_is_string(p) ? json_string_value(p) : "");
            snprintf(c->files[i].sha256, sizeof c->files[i].sha256, "%s",
                     json_is_string(h) ? json_string_value(h) : "");
            /* a count shown by `calib show`; anything else reads as 0 */
            if (json_is_integer(n) && json_integer_value(n) >= 0 &&
                json_integer_value(n) <= INT32_MAX)
                c->files[i].points = (int)json_integer_value(n);
            source_load(f, &c->files[i]);
            c->nfiles = i + 1;
        }
    }
    zs_json_doc_free(doc);
    if (rc) {
        zs_calib_free(c);
        return rc;
    }
    *out = c;
    return ZS_OK;
}

void zs_calib_print(FILE *f, const zs_calib *c)
{
    fprintf(f, "calibration v%d, measured on %s\n", c->version, c->gpu[0] ? c->gpu : "(unknown)");
    for (size_t i = 0; i < c->nfiles; i++)
        fprintf(f, "  source %s (sha256 %.16s..., %d points%s%s)\n", c->files[i].path,
                c->files[i].sha256, c->files[i].points, c->files[i].gpu[0] ? ", GPU " : "",
                c->files[i].gpu);
    for (int s = 0; s < ZS_CAL_NSLOTS; s++) {
        const zs_curve *cv = &c->curve[s];
        if (!cv->fitted)
            continue;
        if (s == ZS_CAL_ATTN_FWD || s == ZS_CAL_ATTN_BWD) {
            const zs_attn_dir *d = s == ZS_CAL_ATTN_FWD ? &c->attn.fwd : &c->attn.bwd;
            fprintf(
                f,
                "  %-14s %.1f TFLOP/s, cta %.3f us, seq %.3f us, launch %.1f us, half %.4g, "
                "p %.3f, floor %.4g [tiles %dx%d, %d SMs] (%d points, rms %.2f%%, max %.2f%%)\n",
                slot_names[s], d->tflops, d->cta_us, d->seq_us, d->launch_us, d->half, d->p,
                d->half_floor, c->attn.tile_q, c->attn.tile_k, c->attn_sms, cv->npoints,
                100 * cv->rms_rel, 100 * cv->max_rel);
            continue;
        }
        fprintf(f,
                "  %-14s t0 %9.3f us  rmax %10.4g /s  half %10.4g  p %5.3f  (%d points, rms "
                "%.2f%%, max %.2f%%)",
                slot_names[s], cv->t0 * 1e6, cv->rmax, cv->half, cv->p, cv->npoints,
                100 * cv->rms_rel, 100 * cv->max_rel);
        if (s == ZS_CAL_GEMM)
            fprintf(f, "  size term held below %.4g", cv->x_floor);
        fputc('\n', f);
    }
    zs__calib_nccl_print(f, c);
}
