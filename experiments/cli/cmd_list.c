/* `zepsim list models|gpus|clusters|methods|backends|specs|columns`: the
 * built-in presets, the planners, the backends (hw among them, said not
 * built where it was not), the figure specs, the result columns. */
#include <string.h>

#include "cli.h"
#include "zs_backend.h"
#include "zs_cluster.h"
#include "zs_cols.h"
#include "zs_model.h"
#include "zs_planner.h"
#include "zs_presets.h"

/* Every row of the backend table; one this build cannot run says why. */
static int list_backends(zs_format fmt)
{
    zs_table *t = zs_table_new(NULL);
    zs_table_col(t, "name", 0);
    zs_table_col(t, "built", 0);
    zs_table_col(t, "summary", 0);
    for (int i = 0; i < zs_backend_count(); i++) {
        const zs_backend *b = zs_backend_at(i);
        zs_table_row(t);
        zs_table_set(t, 0, "%s", b->name);
        zs_table_set(t, 1, "%s", zs_backend_usable(b, NULL) == ZS_OK ? "yes" : "no");
        zs_table_set(t, 2, "%s", b->summary);
    }
    return zs_cli_print1("list", fmt, "backends", t);
}

static const char list_help[] =
    "usage: zepsim list models|gpus|clusters|methods|backends|specs|columns [options]\n\n"
    "Lists the built-in presets (models/presets/*.json in the source tree), the\n"
    "methods (planners) of --method and --methods, the backends of --backend\n"
    "(and whether this build has them), the figure specs (as\n"
    "`zepsim experiment list` does), or the columns of a result row\n"
    "(`simulate`, `compare`: name, unit, meaning).\n\n"
    "options:\n";

int zs_cmd_list(int argc, char **argv)
{
    static const zs_cli_use uses[] = {{ZS_F_FORMAT, NULL}, {0, NULL}};
    static const zs_cli_cmd cmd = {.name = "list", .head = list_help, .uses = uses};
    zs_cli_flags fl;
    int st = zs_cli_parse(&cmd, argc, argv, NULL, &fl);
    if (st >= 0)
        return st;
    zs_format fmt = fl.fmt;
    zs_err e;
    zs_err_clear(&e);
    if (argc - optind != 1)
        return zs_cli_usage_error(
            "list", "expected one of models, gpus, clusters, methods, backends, specs, columns");
    const char *what = argv[optind];
    if (!strcmp(what, "specs")) { /* the same list as `experiment list` */
        char f[16];
        snprintf(f, sizeof f, "%s",
                 fmt == ZS_FMT_JSON  ? "json"
                 : fmt == ZS_FMT_CSV ? "csv"
                                     : "table");
        char *av[] = {"experiment", "list", "--format", f, NULL};
        return zs_cmd_experiment(4, av);
    }
    if (!strcmp(what, "backends"))
        return list_backends(fmt);
    if (!strcmp(what, "methods")) {
        zs_table *t = zs_table_new(NULL);
        zs_table_col(t, "name", 0);
        zs_table_col(t, "summary", 0);
        for (int i = 0; i < zs_planner_count(); i++) {
            const zs_planner_ops *p = zs_planner_at(i);
            zs_table_row(t);
            zs_table_set(t, 0, "%s", p->name);
            zs_table_set(t, 1, "%s", p->summary ? p->summary : "");
        }
        return zs_cli_print1("list", fmt, "methods", t);
    }
    if (!strcmp(what, "columns")) {
        zs_table *t = zs_table_new(NULL);
        zs_table_col(t, "column", 0);
        zs_table_col(t, "unit", 0);
        zs_table_col(t, "kind", 0);
        zs_table_col(t, "meaning", 0);
        for (int i = 0; i < zs_rcol_count(); i++) {
            const zs_rcol *c = zs_rcol_at(i);
            zs_table_row(t);
            zs_table_set(t, 0, "%s", c->name);
            zs_table_set(t, 1, "%s", c->unit);
            zs_table_set(t, 2, "%s",
                         c->config               ? "config"
                         : c->kind == ZS_COL_NUM ? "number"
                                                 : "text");
            zs_table_set(t, 3, "%s", c->help);
        }
        return zs_cli_print1("list", fmt, "columns", t);
    }
    const char *kind = strcmp(what, "models") == 0     ? "model"
                       : strcmp(what, "gpus") == 0     ? "gpu"
                       : strcmp(what, "clusters") == 0 ? "cluster"
                                                       : NULL;
    if (!kind)
        return zs_cli_usage_error(
            "list",
            "unknown list '%s' (use models, gpus, clusters, methods, backends, specs or columns)",
            what);
    zs_table *t = zs_table_new(NULL);
    zs_table_col(t, "name", 0);
    zs_table_col(t, "summary", 0);
    char name[128];
    int rc = ZS_OK;
    for (size_t i = 0; rc == ZS_OK && zs_preset_name(kind, i, name, sizeof name); i++) {
        zs_table_row(t);
        zs_table_set(t, 0, "%s", name);
        if (strcmp(kind, "model") == 0) {
            zs_model m;
            if ((rc = zs_model_load(name, &m, &e)) == ZS_OK)
                zs_table_set(t, 1, "%.2fB params, %d layers, h=%d, %d/%d heads%s",
                             zs_model_params(&m) / 1e9, m.layers, m.hidden, m.heads, m.kv_heads,
                             m.experts ? ", MoE" : "");
        } else if (strcmp(kind, "gpu") == 0) {
            zs_gpu g;
            if ((rc = zs_gpu_load(name, &g, &e)) == ZS_OK)
                zs_table_set(t, 1, "%.0f TFLOP/s bf16, %.0f GiB, %.0f GB/s HBM", g.peak_tflops,
                             g.mem_gib, g.hbm_gbs);
        } else {
            zs_cluster cl;
            if ((rc = zs_cluster_load(name, 0, &cl, &e)) == ZS_OK)
                zs_table_set(t, 1, "%d nodes x %d %s, %d x %.0f Gb/s NICs per node", cl.nodes,
                             cl.gpus_per_node, cl.gpu.name, cl.nics_per_node, cl.nic_gbps);
        }
    }
    if (rc) {
        zs_table_free(t);
        return zs_cli_fail(&e);
    }
    return zs_cli_print1("list", fmt, what, t);
}
