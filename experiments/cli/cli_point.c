/* What the study-point commands share: see cli_point.h. */
#include "cli_point.h"

#include <string.h>
#include <unistd.h>

#include "zs_calib.h"
#include "zs_cluster.h"
#include "zs_model.h"

#include "zs_point_opts.h"
#include "zs_step.h"

FILE *zs_cli_progress_file(int quiet)
{
    return quiet ? NULL : stderr;
}

void zs_cli_point_print_cfg(zs_output *d, const zs_point_cfg *p, int nodes, const char *cost_desc)
{
    zs_output_text(d, "# model %s, cluster %s x %d nodes (%s), trace %s, seed %llu\n", p->model,
                   p->cluster, nodes, p->nodes > 0 ? "--nodes" : "the cluster's own count",
                   p->trace, (unsigned long long)p->seed);
    zs_output_text(d,
                   "# context %lld tokens per %d-GPU group, %d iterations, backend %s, ZeRO-%d, "
                   "recompute %s, folding %s\n",
                   (long long)p->context, p->group, p->iterations, p->backend, p->zero_stage,
                   p->recompute == ZS_RECOMPUTE_FULL ? "full" : "none",
                   p->fold == ZS_FOLD_OFF     ? "off"
                   : p->fold == ZS_FOLD_EXACT ? "on"
                                              : "steady");
    if (p->interference)
        zs_output_text(d, "# interference on: compute slows under NCCL kernels (folding off)\n");
    if (p->precision)
        zs_output_text(d,
                       "# precision %s: the layers' linear GEMMs in FP8 (TransformerEngine, %s)\n",
                       zs_precision_name((zs_precision)p->precision),
                       p->precision == ZS_PREC_FP8_CS ? "current scaling" : "delayed scaling");
    if (p->fsdp != ZS_FSDP2)
        zs_output_text(d, "# ZeRO-3 as %s%s\n", zs_fsdp_name(p->fsdp),
                       p->zero_stage < 3 ? " (no effect below ZeRO-3)" : "");
    if (p->grad == ZS_GRAD_BF16)
        zs_output_text(d, "# gradients: a bf16 buffer (memory)\n");
    if (p->opts[0])
        zs_output_text(d, "# method options: %s\n", p->opts);
    if (cost_desc && *cost_desc)
        zs_output_text(d, "# cost model: %s%s%s\n", cost_desc, p->calib[0] ? ", calibration " : "",
                       p->calib);
    if (p->calib[0])
        zs_cli_calib_warnings(d, p->calib, p->model, p->cluster, p->nodes);
}

void zs_cli_calib_warnings(zs_output *d, const char *calib, const char *model, const char *cluster,
                           int nodes)
{
    /* The run itself loaded all three: a failure here was reported there. */
    zs_err e;
    zs_model m;
    zs_cluster cl;
    if (!zs_model_load(model, &m, &e) && !zs_cluster_load(cluster, nodes, &cl, &e))
        zs_cli_calib_notes(d, calib, cl.gpu.name, &m);
}

void zs_cli_calib_notes(zs_output *d, const char *calib, const char *gpu, const zs_model *m)
{
    zs_err e;
    zs_calib *c = NULL;
    if (zs_calib_load(calib, &c, &e))
        return;
    char lines[4096];
    if (zs_calib_check_use(c, gpu, m, lines, sizeof lines))
        for (char *l = lines, *nl; *l; l = nl + 1) {
            if (!(nl = strchr(l, '\n')))
                break;
            *nl = '\0';
            zs_output_note(d, "%s", l);
        }
    zs_calib_free(c);
}

int zs_cli_point_size(const zs_point_cfg *p, int *nodes, int *gpus, zs_err *e)
{
    zs_cluster c;
    int rc = zs_cluster_load(p->cluster, p->nodes, &c, e);
    if (rc)
        return rc;
    *nodes = c.nodes;
    *gpus = zs_cluster_gpus(&c);
    return ZS_OK;
}
