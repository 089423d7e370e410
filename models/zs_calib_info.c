/* What a calibration holds, for reports: see zs_calib.h. */
#include <math.h>
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
