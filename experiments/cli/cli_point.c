/* Study-point options shared by simulate, compare and plan: see cli_point.h. */
#include "cli_point.h"

#include <string.h>
#include <unistd.h>

#include "zs_calib.h"
#include "zs_cluster.h"
#include "zs_model.h"

#include "zs_point_opts.h"

static int skipped(const char *name, const char *const *skip)
{
    for (int i = 0; skip && skip[i]; i++)
        if (!strcmp(skip[i], name))
            return 1;
    return 0;
}

void zs_cli_point_longopts(const struct option *extra, const char *const *skip, struct option *out)
{
    int n = 0;
    for (; extra && extra[n].name && n < ZS_CLI_MAX_OPTS - 2; n++)
        out[n] = extra[n];
    for (int i = 0; i < zs_popt_count() && n < ZS_CLI_MAX_OPTS - 2; i++) {
        const zs_opt_spec *o = zs_popt_at(i);
        if (o->cli && !skipped(o->cli, skip))
            out[n++] = (struct option){o->cli, o->arg ? required_argument : no_argument, 0,
                                       ZS_PO_BASE + i};
    }
    out[n++] = (struct option){"format", required_argument, 0, ZS_PO_FORMAT};
    out[n] = (struct option){0, 0, 0, 0};
}

FILE *zs_cli_progress_file(int quiet)
{
    return quiet ? NULL : stderr;
}

void zs_cli_help_entry(FILE *f, const char *name, const char *arg, const char *text)
{
    char head[96];
    snprintf(head, sizeof head, "  --%s%s%s", name, arg ? " " : "", arg ? arg : "");
    fputs(head, f);
    int col = (int)strlen(head);
    if (col > 30) {
        fputc('\n', f);
        col = 0;
    }
    int start = col + 2 > 25 ? col + 2 : 25;
    fprintf(f, "%*s", start - col, "");
    col = start;
    for (const char *p = text; *p;) {
        size_t w = strcspn(p, " ");
        if (col > start && col + 1 + (int)w > 79) {
            fprintf(f, "\n%25s", "");
            col = start = 25;
        } else if (col > start) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)w, p);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

void zs_cli_point_help(FILE *f, const char *const *skip)
{
    for (int i = 0; i < zs_popt_count(); i++) {
        const zs_opt_spec *o = zs_popt_at(i);
        if (!o->cli || skipped(o->cli, skip))
            continue;
        char text[600];
        const char *def = zs_opt_default(o);
        if (def[0] && o->type != ZS_OPT_FLAG && o->type != ZS_OPT_OPTSET && o->type != ZS_OPT_RANGE)
            snprintf(text, sizeof text, "%s (default %s)", o->help, def);
        else
            snprintf(text, sizeof text, "%s", o->help);
        zs_cli_help_entry(f, o->cli, o->arg, text);
    }
    zs_cli_help_entry(f, "format", "table|csv|json", "output format (default table)");
}

int zs_cli_point_opt(const char *cmd, int c, char **argv, zs_point_cfg *p, zs_format *fmt)
{
    zs_err e;
    zs_err_clear(&e);
    if (c == ZS_PO_FORMAT)
        return zs_format_parse(optarg, fmt, &e) ? zs_cli_fail(&e) : 0;
    const zs_opt_spec *o = zs_popt_at(c - ZS_PO_BASE);
    if (c < ZS_PO_BASE || !o || !o->cli)
        return zs_cli_bad_option(cmd, c, argv);
    char where[64];
    snprintf(where, sizeof where, "--%s", o->cli);
    if (zs_opt_parse(o, o->arg ? optarg : "1", ZS_EUSAGE, where, p, &e) ||
        zs_opt_check(o, p, ZS_EUSAGE, where, &e))
        return zs_cli_fail(&e);
    return 0;
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
                   p->fold == 0   ? "off"
                   : p->fold == 1 ? "on"
                                  : "steady");
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
