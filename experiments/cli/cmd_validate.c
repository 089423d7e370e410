/* `zepsim validate`: predicts every measured point with the (calibrated)
 * cost model and prints predicted, measured and error per point, then the
 * median and max absolute error per op class and against the project's
 * targets. --holdout refits on part of the data and scores the rest, so
 * the figures say how well the simulator predicts what it was not fitted
 * on. Writes a log-log plot with gnuplot when it is installed. The scoring
 * is models/zs_calib_score.h; this file parses the options and prints. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "validate_runs.h"
#include "zs_calib_score.h"
#include "zs_cost_model.h"

static const char validate_help[] =
    "usage: zepsim validate [--calib FILE] --against FILE... [FILE...] [options]\n"
    "       zepsim validate --runs FILE.csv --cluster C   (published training runs;\n"
    "                      zepsim validate --runs x --help)\n"
    "\n"
    "Predicts each measured point (nccl-tests logs of one node or many, kernel\n"
    "CSVs, per-document attention profiles L,cp,tp,duration_per_doc, layer-op\n"
    "TSVs, zepsim-measurements JSON) and prints predicted vs measured with the\n"
    "error (collectives: with the algorithm and protocol NCCL runs), then median\n"
    "and max absolute error per op class and the targets.\n"
    "\n"
    "options:\n";

static const char validate_tail[] = "\n"
                                    "--holdout SPEC:\n"
                                    "  gpus=2[+4...]    collectives: fit on these GPU counts\n"
                                    "  nodes=1[+2...]   collectives: fit on these node counts\n"
                                    "  seq<=N           attention: fit on sequences <= N tokens\n"
                                    "  cp<=N            attention: fit on CP degrees <= N\n"
                                    "  bytes<=N[K|M|G]  collectives: fit on sizes <= N\n";

static const zs_cli_use validate_uses[] = {
    {ZS_FP(CALIB), "the one to validate (default: fit one from the --against data, which only "
                   "measures the fit itself); `analytic`: the analytic cost model, nothing "
                   "fitted (a file of that name: ./analytic)"},
    {ZS_FP(MODEL), "the shape of layer-op TSV rows and attention profiles"},
    {ZS_FP(CLUSTER), "the hardware the measurements ran on (collectives) and whose analytic "
                     "figures fill unfitted slots (default cluster-c)"},
    {ZS_F_GPU, "the GPU measured (default: the cluster's); its attention kernel prices "
               "attention and gives a fit its structure"},
    {ZS_FP(ATTN_KERNEL), "that GPU's attention kernel"},
    {ZS_F_PLOT, "predicted-vs-measured, log-log (default validate.png; needs gnuplot)"},
    {ZS_F_FORMAT, NULL},
    {ZS_F_NCCL_COLUMN, NULL},
    {ZS_F_NCCL_ALGO, "what the runs used when their logs do not show it"},
    {ZS_F_NCCL_PROTO, "likewise"},
    {ZS_F_COLLECTIVE, NULL},
    {0, NULL}};

typedef struct plot_pts {
    const zs_score_point *p;
    size_t n;
    int have_holdout;
} plot_pts;

static void plot_data(FILE *f, const void *arg)
{
    const plot_pts *x = arg;
    for (size_t i = 0; i < x->n; i++)
        fprintf(f, "%.6g %.6g %d\n", x->p[i].m->seconds * 1e6, x->p[i].pred * 1e6,
                x->have_holdout ? x->p[i].held : 1);
}

static void plot_script(FILE *f, const char *out, const char *dat, const void *arg)
{
    const plot_pts *x = arg;
    fprintf(f,
            "set output '%s'\nset logscale xy\n"
            "set xlabel 'measured (us)'\nset ylabel 'predicted (us)'\nset key top left\n"
            "set title 'zepsim validate: predicted vs measured'\n"
            "plot x title 'y = x' lc rgb 'gray', 1.1*x title '+-10%%' dt 2 lc rgb 'gray', "
            "0.9*x notitle dt 2 lc rgb 'gray', '%s' using 1:($3==1?$2:1/0) title '%s' pt 7, "
            "'%s' using 1:($3==0?$2:1/0) title 'fitted on' pt 6\n",
            out, dat, x->have_holdout ? "held out" : "points", dat);
}

/* Predicted against measured, log-log, held-out points apart (zs_cli_gnuplot). */
static void plot(const char *png, const zs_score_point *p, size_t n, int have_holdout)
{
    plot_pts x = {p, n, have_holdout};
    zs_cli_gnuplot(png, 800, 700, plot_data, plot_script, &x);
}

typedef struct validate_args {
    const char *calib_path, *model_name, *cluster_name, *png, *gpu_name, *kernel;
    const char *files[256];
    int nfiles, all_points;
    zs_format fmt;
    zs_holdout h;
    zs_meas_set nccl; /* only its nccl-tests reading options */
    zs_cli_flags fl;  /* the shared flags as given: the names above point into it */
} validate_args;

/* --calib analytic: an empty calibration, so every cost is the analytic
 * model's (what the data does not cover stays analytic). */
static int is_analytic(const validate_args *a)
{
    return a->calib_path && !strcmp(a->calib_path, "analytic");
}

static int add_file(validate_args *a, const char *path)
{
    if (a->nfiles == 256)
        return zs_cli_usage_error("validate", "at most 256 measurement files");
    a->files[a->nfiles++] = path;
    return 0;
}

/* --against and --holdout repeat: each adds one (--against's text is the
 * argv string, which outlives the parse). */
static int set_against(const char *text, void *base, zs_err *e)
{
    validate_args *a = base;
    if (a->nfiles == 256)
        return zs_err_set(e, ZS_EUSAGE, NULL, "give fewer files", "at most 256 measurement files");
    a->files[a->nfiles++] = text;
    return ZS_OK;
}

static int set_holdout(const char *text, void *base, zs_err *e)
{
    return zs_holdout_add(&((validate_args *)base)->h, text, e);
}

static const zs_opt_spec validate_own[] = {
    ZS_OPT_SET("against", set_against, NULL, "FILE",
               "measurements to predict (repeatable; further files may follow as arguments)"),
    ZS_OPT_SET("holdout", set_holdout, NULL, "SPEC",
               "refit on part of the data and score the rest (repeatable; SPEC below)"),
    ZS_OPT_ROW("points", ZS_OPT_FLAG, validate_args, all_points, 0, 1, "0", NULL,
               "print every point (default: only summaries when more than 200 points)"),
};

/* The shared flags into a (cluster-c and validate.png unless given). */
static void take_flags(validate_args *a)
{
    const zs_cli_flags *f = &a->fl;
    a->calib_path = zs_cli_given(f, ZS_P_CALIB);
    a->model_name = zs_cli_given(f, ZS_P_MODEL);
    if (zs_cli_given(f, ZS_P_CLUSTER))
        a->cluster_name = f->p.cluster;
    if (f->plot)
        a->png = strcmp(f->plot, "none") == 0 ? NULL : f->plot;
    a->gpu_name = f->gpu;
    a->kernel = zs_cli_given(f, ZS_P_ATTN_KERNEL);
    a->fmt = f->fmt;
}

/* -1: parsed; otherwise the exit status. */
static int parse_args(int argc, char **argv, validate_args *a)
{
    static const zs_cli_cmd cmd = {.name = "validate",
                                   .head = validate_help,
                                   ZS_CLI_OWN_ROWS(validate_own),
                                   .uses = validate_uses,
                                   .tail = validate_tail};
    int st = zs_cli_parse(&cmd, argc, argv, a, &a->fl);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    take_flags(a);
    if (zs_cli_nccl_apply(&a->fl, &a->nccl, &e))
        return zs_cli_fail(&e);
    for (int i = optind; i < argc; i++)
        if ((st = add_file(a, argv[i])))
            return st;
    if (!a->nfiles)
        return zs_cli_usage_error("validate", "expected measurement files (--against FILE)");
    if (is_analytic(a) && a->h.nterms)
        return zs_cli_usage_error("validate", "--calib analytic fits nothing, so there is nothing "
                                              "to hold out: drop --holdout, or --calib");
    return -1;
}

/* What is validated: the measurements, the calibration (given, fitted, or
 * fitted on the kept points and merged over the given one) and its cost
 * model on the cluster. */
typedef struct validation {
    zs_model lm, cm; /* the --model (layer ops), and the shape the cost model gets */
    zs_cluster cl;
    zs_meas_set s;
    zs_calib *cal, *base;
    zs_cost *cost;
} validation;

static void validation_clear(validation *v)
{
    zs_cost_free(v->cost);
    zs_calib_free(v->cal);
    zs_calib_free(v->base);
    zs_meas_set_clear(&v->s);
}

static int load_and_fit(const validate_args *a, validation *v, zs_err *e)
{
    int rc = ZS_OK;
    zs_meas_set_init(&v->s);
    v->s.nccl_inplace = a->nccl.nccl_inplace;
    v->s.nccl_algo_mask = a->nccl.nccl_algo_mask;
    v->s.nccl_proto_mask = a->nccl.nccl_proto_mask;
    memcpy(v->s.nccl_collective, a->nccl.nccl_collective, sizeof v->s.nccl_collective);
    if (a->model_name && (rc = zs_model_load(a->model_name, &v->lm, e)))
        return rc;
    if ((rc = zs_cluster_load(a->cluster_name, 0, &v->cl, e)) ||
        (a->gpu_name && (rc = zs_gpu_load(a->gpu_name, &v->cl.gpu, e))) ||
        (a->kernel && (rc = zs_gpu_select_kernel(&v->cl.gpu, a->kernel, e))))
        return rc;
    v->cm = a->model_name ? v->lm
                          : (zs_model){.name = "none",
                                       .layers = 1,
                                       .hidden = 128,
                                       .heads = 1,
                                       .kv_heads = 1,
                                       .head_dim = 128,
                                       .ffn = 128,
                                       .vocab = 1,
                                       .dtype_bytes = 2};
    for (int i = 0; i < a->nfiles && rc == ZS_OK; i++)
        rc = zs_meas_read(&v->s, a->files[i], e);
    if (rc == ZS_OK && a->model_name)
        zs_meas_set_apply_model(&v->s, &v->lm);
    if (rc == ZS_OK && zs_meas_set_unshaped(&v->s))
        return zs_err_set(e, ZS_EUSAGE, "--model",
                          "give the model (and --gpu) the profiles were measured for",
                          "%d attention points have no shape (per-document profiles)",
                          zs_meas_set_unshaped(&v->s));
    if (rc == ZS_OK && is_analytic(a))
        rc = (v->base = zs_calib_new()) ? ZS_OK
                                        : zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    else if (rc == ZS_OK && a->calib_path)
        rc = zs_calib_load(a->calib_path, &v->base, e);
    if (rc == ZS_OK && (a->h.nterms || !v->base)) {
        zs_fit_opts fo = {a->model_name ? &v->lm : NULL, a->h.nterms ? zs_holdout_held : NULL,
                          (void *)&a->h, &v->cl};
        rc = zs_calib_fit_gpu(&v->s, &fo, a->gpu_name || a->kernel ? &v->cl.gpu : NULL, &v->cal, e);
        if (rc == ZS_OK && v->base)
            zs_calib_merge(v->cal, v->base);
    } else if (rc == ZS_OK) {
        v->cal = v->base;
        v->base = NULL;
    }
    /* Through the cost-model table, as every command builds its cost; a
     * calibration is always there by now, so it is the calibrated row
     * (--calib analytic: the analytic row, its empty calibration fitting
     * nothing). */
    if (rc == ZS_OK)
        rc = zs_cost_build(&v->cm, &v->cl, is_analytic(a) ? NULL : v->cal, &v->cost, e);
    return rc;
}

static void print_header(zs_output *d, const validate_args *a, const validation *v, size_t np)
{
    zs_output_text(d, "cost model: %s\n", v->cost->desc);
    zs_output_set_text(d, NULL, "cost_model", v->cost->desc);
    const zs_nccl_params *np_ = zs_calib_nccl(v->cal);
    if (np_) {
        int nf = 0;
        for (int j = 0; j < ZS_NP_NPARAMS; j++)
            nf += np_->fitted[j];
        const char *fc = zs_calib_nccl_cluster(v->cal);
        int other = strcmp(fc, v->cl.name) != 0;
        zs_output_text(
            d,
            "collectives: NCCL's model (2.29.2 tuning.cc) on cluster '%s', %d parameters "
            "fitted%s%s%s (calib show lists them)\n",
            v->cl.name, nf, other ? " on cluster '" : "", other ? fc : "", other ? "'" : "");
    }
    const char *mode = a->h.nterms      ? "holdout"
                       : is_analytic(a) ? "analytic"
                       : a->calib_path  ? "given"
                                        : "in-sample";
    zs_output_set_text(d, NULL, "mode", mode);
    zs_output_text(d, "%s\n",
                   a->h.nterms
                       ? "hold-out validation: errors below are on points NOT used in "
                         "the fit (set=held-out); set=fit points are in-sample"
                       : (is_analytic(a)  ? "validation of the analytic cost model "
                                            "(nothing fitted)"
                          : a->calib_path ? "validation of the given calibration"
                                          : "in-sample: the calibration was fitted on these "
                                            "same points (use --holdout for prediction "
                                            "error)"));
    if (np < v->s.n)
        zs_output_note(d, "%zu points could not be priced (layer ops need --model)", v->s.n - np);
    zs_output_text(d, "\n");
}

static void print_points(zs_output *d, const validate_args *a, const zs_score_point *pts, size_t np)
{
    zs_table *t = zs_table_new("points");
    zs_table_col(t, "op", 0);
    zs_table_col(t, "shape", 0);
    zs_table_col(t, "nccl", 0);
    zs_table_col(t, "measured_us", 1);
    zs_table_col(t, "predicted_us", 1);
    zs_table_col(t, "error_pct", 1);
    zs_table_col(t, "set", 0);
    for (size_t i = 0; i < np; i++) {
        char sh[128];
        zs_meas_shape(pts[i].m, sh, sizeof sh);
        zs_table_row(t);
        zs_table_set(t, 0, "%s", pts[i].m->op);
        zs_table_set(t, 1, "%s", sh);
        zs_table_set(t, 2, "%s", pts[i].nccl);
        zs_table_num(t, 3, "%.2f", pts[i].m->seconds * 1e6);
        zs_table_num(t, 4, "%.2f", pts[i].pred * 1e6);
        zs_table_num(t, 5, "%+.2f", 100 * pts[i].err);
        zs_table_set(t, 6, "%s", a->h.nterms ? (pts[i].held ? "held-out" : "fit") : "all");
    }
    zs_output_table(d, "points", t);
}

static void print_summary(zs_output *d, const zs_score_row *rows, int nrows)
{
    zs_table *sum = zs_table_new("summary (absolute relative error)");
    zs_table_col(sum, "class", 0);
    zs_table_col(sum, "set", 0);
    zs_table_col(sum, "points", 1);
    zs_table_col(sum, "median_pct", 1);
    zs_table_col(sum, "max_pct", 1);
    zs_table_col(sum, "target_pct", 1);
    zs_table_col(sum, "target_met", 0);
    for (int i = 0; i < nrows; i++) {
        const zs_score_row *r = &rows[i];
        zs_table_row(sum);
        zs_table_set(sum, 0, "%s", r->cls);
        zs_table_set(sum, 1, "%s", r->held ? "held-out" : "all");
        zs_table_num(sum, 2, "%.0f", r->points);
        zs_table_num(sum, 3, "%.2f", 100 * r->median);
        zs_table_num(sum, 4, "%.2f", 100 * r->max);
        if (r->target > 0) { /* the target is on the median */
            zs_table_num(sum, 5, "%.0f", 100 * r->target);
            zs_table_set(sum, 6, "%s", r->median <= r->target ? "yes" : "NO");
        }
    }
    zs_output_table(d, "summary", sum);
}

int zs_cmd_validate(int argc, char **argv)
{
    if (zs_validate_wants_runs(argc, argv))
        return zs_cmd_validate_runs(argc, argv);
    validate_args a;
    memset(&a, 0, sizeof a);
    a.cluster_name = "cluster-c";
    a.png = "validate.png";
    a.fmt = ZS_FMT_TABLE;
    int st = parse_args(argc, argv, &a);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    validation v;
    memset(&v, 0, sizeof v);
    zs_score_point *pts = NULL;
    zs_score_row *rows = NULL;
    size_t np = 0;
    int nrows = 0;
    int rc = load_and_fit(&a, &v, &e);
    if (!rc)
        rc = zs_score_points(v.cost, v.cal, &v.s, a.model_name ? &v.lm : NULL, &a.h, &pts, &np, &e);
    if (!rc)
        rc = zs_score_summary(pts, np, a.h.nterms > 0, &rows, &nrows, &e);
    int out = 0;
    if (!rc) {
        zs_output *d = zs_output_new("validate", a.fmt, stdout);
        if (d) {
            print_header(d, &a, &v, np);
            if (a.all_points || np <= 200)
                print_points(d, &a, pts, np);
            print_summary(d, rows, nrows);
        }
        out = zs_cli_doc_end(d);
        if (a.png && np)
            plot(a.png, pts, np, a.h.nterms > 0);
    }
    free(rows);
    free(pts);
    validation_clear(&v);
    return rc ? zs_cli_fail(&e) : out;
}
