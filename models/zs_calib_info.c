/* What a calibration holds, for reports: see zs_calib.h. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zs_calib_internal.h"

int zs_calib_version(const zs_calib *c)
{
    return c->version;
}

size_t zs_calib_nsources(const zs_calib *c)
{
    return c->nfiles;
}

const zs_calib_source *zs_calib_source_at(const zs_calib *c, size_t i)
{
    return i < c->nfiles ? &c->files[i] : NULL;
}

int zs_calib_nccl_info_get(const zs_calib *c, zs_calib_nccl_info *out)
{
    memset(out, 0, sizeof *out);
    if (!c->has_nccl)
        return 0;
    double ss = 0;
    for (size_t i = 0; i < c->ncpts; i++) {
        const zs__coll_pt *p = &c->cpts[i];
        double r = p->measured > 0 ? fabs(p->predicted - p->measured) / p->measured : 0;
        ss += r * r;
        out->max = r > out->max ? r : out->max;
        if (out->min_bytes == 0 || p->bytes < out->min_bytes) {
            out->min_bytes = p->bytes;
            snprintf(out->min_op, sizeof out->min_op, "%s", p->op);
            out->min_gpus = p->gpus;
            out->min_nodes = p->nodes;
        }
    }
    /* which pair explains how many points, in order of first use */
    size_t o = 0;
    for (size_t i = 0; i < c->ncpts && o < sizeof out->pairs; i++) {
        int seen = 0, n = 0;
        for (size_t j = 0; j < c->ncpts; j++) {
            int same = !strcmp(c->cpts[j].algo, c->cpts[i].algo) &&
                       !strcmp(c->cpts[j].proto, c->cpts[i].proto);
            seen |= same && j < i;
            n += same;
        }
        if (!seen)
            o += (size_t)snprintf(out->pairs + o, sizeof out->pairs - o, "%s%s/%s on %d",
                                  o ? ", " : "", c->cpts[i].algo, c->cpts[i].proto, n);
    }
    out->inplace = c->nccl_inplace;
    out->points = c->ncpts;
    out->rms = c->ncpts ? sqrt(ss / (double)c->ncpts) : 0;
    out->nvl_bus_gbs = c->nvl_bus_gbs;
    return 1;
}

/* ---- provenance (issue 35) ------------------------------------------------------ */

/* The GPU's model in a device or preset name: its first word that is not
 * the vendor, lower case ("NVIDIA H100 80GB HBM3", "h100-sxm" -> "h100"). */
static void gpu_key(const char *name, char *out, size_t n)
{
    out[0] = '\0';
    const char *p = name ? name : "";
    while (*p) {
        while (*p && !isalnum((unsigned char)*p))
            p++;
        size_t k = 0;
        char w[64];
        while (*p && isalnum((unsigned char)*p)) {
            if (k + 1 < sizeof w)
                w[k++] = (char)tolower((unsigned char)*p);
            p++;
        }
        w[k] = '\0';
        if (k && strcmp(w, "nvidia") && strcmp(w, "tesla")) {
            snprintf(out, n, "%s", w);
            return;
        }
    }
}

static int same_key(const char *a, const char *b)
{
    char ka[64], kb[64];
    gpu_key(a, ka, sizeof ka);
    gpu_key(b, kb, sizeof kb);
    return !ka[0] || !kb[0] || strcmp(ka, kb) == 0;
}

static void merge_dim(int *dst, int v)
{
    if (v == 0 || *dst == -1)
        return;
    *dst = *dst == 0 ? v : *dst == v ? v : -1;
}

static unsigned slot_bits(int slot)
{
    if (slot >= ZS_CAL_COLL_AG && slot < ZS_CAL_NSLOTS)
        return ((1u << ZS_CAL_NSLOTS) - 1) & ~((1u << ZS_CAL_COLL_AG) - 1);
    return 1u << slot;
}

int zs_calib_origin_get(const zs_calib *c, int slot, zs_calib_origin *o)
{
    memset(o, 0, sizeof *o);
    if (!c || slot < 0 || slot >= ZS_CAL_NSLOTS)
        return 0;
    if (slot >= ZS_CAL_COLL_AG ? !c->has_nccl : !c->curve[slot].fitted)
        return 0;
    unsigned want = slot_bits(slot);
    size_t at = 0;
    for (size_t i = 0; i < c->nfiles; i++) {
        const zs_calib_source *f = &c->files[i];
        if (!(f->slots & want))
            continue;
        if (o->nfiles < (int)(sizeof o->file / sizeof o->file[0]))
            o->file[o->nfiles] = f;
        o->nfiles++;
        merge_dim(&o->heads, f->heads);
        merge_dim(&o->kv_heads, f->kv_heads);
        merge_dim(&o->head_dim, f->head_dim);
        if (!f->gpu[0])
            continue;
        /* list each GPU once */
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = (c->files[j].slots & want) && c->files[j].gpu[0] &&
                   !strcmp(c->files[j].gpu, f->gpu);
        if (!seen && at < sizeof o->gpu)
            at += (size_t)snprintf(o->gpu + at, sizeof o->gpu - at, "%s%s", at ? ", " : "", f->gpu);
    }
    /* files of a calibration from before provenance: its one GPU */
    if (!o->gpu[0] && !o->nfiles)
        snprintf(o->gpu, sizeof o->gpu, "%s", c->gpu);
    return 1;
}

/* The GPUs of an origin are several when its list holds two keys. */
static int several_gpus(const zs_calib *c, unsigned want, char *first, char *second, size_t n)
{
    first[0] = second[0] = '\0';
    for (size_t i = 0; i < c->nfiles; i++) {
        const zs_calib_source *f = &c->files[i];
        if (!(f->slots & want) || !f->gpu[0])
            continue;
        if (!first[0])
            snprintf(first, n, "%s", f->gpu);
        else if (!same_key(first, f->gpu)) {
            snprintf(second, n, "%s", f->gpu);
            return 1;
        }
    }
    return 0;
}

int zs_calib_check_mixed(const zs_calib *c, char *out, size_t n)
{
    char a[64], b[64];
    if (n)
        out[0] = '\0';
    if (!c || !several_gpus(c, ~0u, a, b, sizeof a))
        return 0;
    size_t at = (size_t)snprintf(out, n, "warning: the measurements come from several GPUs:");
    for (int s = 0; s < ZS_CAL_NSLOTS && at < n; s++) {
        zs_calib_origin o;
        if (s > ZS_CAL_COLL_AG || !zs_calib_origin_get(c, s, &o))
            continue;
        at += (size_t)snprintf(out + at, n - at, " %s from %s;",
                               s == ZS_CAL_COLL_AG ? "collectives" : zs_calib_slot_name(s),
                               o.gpu[0] ? o.gpu : "an unnamed GPU");
    }
    if (at < n)
        snprintf(out + at, n - at,
                 " a calibration describes one GPU, and `--calib` applies every curve to the "
                 "cluster's GPU: fit each GPU's files into a calibration of its own (each "
                 "curve records the GPU, shape and files it came from)");
    return 1;
}

static size_t add_line(char *out, size_t n, size_t at, const char *line)
{
    if (at < n)
        at += (size_t)snprintf(out + at, n - at, "%s\n", line);
    return at;
}

int zs_calib_check_use(const zs_calib *c, const char *gpu, const zs_model *m, char *out, size_t n)
{
    int k = 0;
    size_t at = 0;
    if (n)
        out[0] = '\0';
    for (int s = 0; c && s < ZS_CAL_NSLOTS; s++) {
        zs_calib_origin o;
        if (s > ZS_CAL_COLL_AG || !zs_calib_origin_get(c, s, &o))
            continue;
        const char *what = s == ZS_CAL_COLL_AG ? "collectives" : zs_calib_slot_name(s);
        char a[64], b[64], line[900];
        if (several_gpus(c, slot_bits(s), a, b, sizeof a)) {
            snprintf(line, sizeof line,
                     "warning: the calibration's %s fit mixes GPUs (%s): it describes none of "
                     "them; fit each GPU's files into a calibration of its own",
                     what, o.gpu);
            at = add_line(out, n, at, line);
            k++;
        } else if (o.gpu[0] && gpu && !same_key(o.gpu, gpu)) {
            snprintf(line, sizeof line,
                     "warning: the calibration's %s fit was measured on %s, and is applied "
                     "here to %s: measure on %s (or use a cluster of %s GPUs); its figures "
                     "may not hold",
                     what, o.gpu, gpu, gpu, o.gpu);
            at = add_line(out, n, at, line);
            k++;
        }
        if ((s == ZS_CAL_ATTN_FWD || s == ZS_CAL_ATTN_BWD) && m && o.heads &&
            (o.heads != m->heads || o.kv_heads != m->kv_heads || o.head_dim != m->head_dim)) {
            char shape[80];
            if (o.heads < 0 || o.kv_heads < 0 || o.head_dim < 0)
                snprintf(shape, sizeof shape, "several head shapes");
            else
                snprintf(shape, sizeof shape, "%d query / %d KV heads of %d", o.heads, o.kv_heads,
                         o.head_dim);
            snprintf(line, sizeof line,
                     "warning: the calibration's %s fit was measured at %s, and model %s has "
                     "%d / %d of %d: the fitted kernel may not carry over; measure attention "
                     "at the model's shape (hqo, hkv, d columns) and refit",
                     what, shape, m->name, m->heads, m->kv_heads, m->head_dim);
            at = add_line(out, n, at, line);
            k++;
        }
    }
    return k;
}
