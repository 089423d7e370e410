/* `zepsim calib fit FILES... -o OUT.json [--model M] [--cluster C]`: fits
 * the cost curves, the attention kernel and the NCCL collective model to
 * measurements and writes a calibration file; `zepsim calib show FILE`
 * prints one. Both print every fitted parameter with its unit, a one-line
 * reading of each fit, and warnings where the data cannot support a
 * parameter (one at its bound, a latency fitted from sizes where latency
 * is a sliver of the time, a size ramp below the smallest size measured,
 * fewer points than parameters). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_calib.h"

/* What a parameter of the NCCL model means, in what unit, and how to show
 * it (scale: value x scale in that unit). */
typedef struct nccl_meta {
    const char *unit, *meaning;
    double scale;
} nccl_meta;

static const nccl_meta nccl_params[ZS_NP_NPARAMS] = {
    {"x NCCL's", "achieved / NCCL-estimated bandwidth on NVLink", 1},
    {"x NCCL's", "achieved / NCCL-estimated bandwidth on PCIe", 1},
    {"x NCCL's", "achieved / NCCL-estimated bandwidth on the network", 1},
    {"x NCCL's", "scale of NCCL's base and intra-node step latencies", 1},
    {"x NCCL's", "scale of NCCL's network step latencies", 1},
    {"x ring", "tree's efficiency against ring", 1},
    {"x ring", "NVLS's efficiency against ring", 1},
    {"x ring", "NVLS-tree's efficiency against ring", 1},
    {"x ring", "CollNet's efficiency against ring", 1},
    {"x ring", "PAT's efficiency against ring", 1},
    {"MB", "bus bytes per GPU at which the data term doubles (size ramp)", 1e-6},
    {"", "power of that ramp", 1},
    {"of HBM", "local reduce rate as a fraction of HBM bandwidth", 1},
    {"MB", "bus bytes per GPU at which the reduce term doubles", 1e-6},
    {"", "power of that ramp", 1},
    {"MB", "the size ramp of collectives across nodes (network pipeline)", 1e-6},
    {"", "power of that ramp", 1},
};

/* Warnings, printed after the tables. */
typedef struct warnings {
    int n;
    char text[16][1024];
} warnings;

static void warn(warnings *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(warnings *w, const char *fmt, ...)
{
    if (w->n == 16)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->text[w->n++], sizeof w->text[0], fmt, ap);
    va_end(ap);
}

static void fit_row(zs_table *t, const char *fit, const char *param, const char *fmt, double v,
                    const char *unit, const char *meaning)
{
    zs_table_row(t);
    zs_table_set(t, 0, "%s", fit);
    zs_table_set(t, 1, "%s", param);
    zs_table_num(t, 2, fmt, v);
    zs_table_set(t, 3, "%s", unit);
    zs_table_set(t, 4, "%s", meaning);
}

/* The attention kernel's fitted figures and its reading. */
static void attn_rows(warnings *d, zs_table *t, zs_table *rd, const zs_calib *c, int s)
{
    int sms = 0;
    const zs_attn_kernel *k = zs_calib_attn_kernel(c, &sms);
    if (!k)
        return;
    const zs_attn_dir *a = s == ZS_CAL_ATTN_FWD ? &k->fwd : &k->bwd;
    const char *nm = zs_calib_slot_name(s);
    fit_row(t, nm, "rate", "%.1f", a->tflops, "TFLOP/s", "rate of a full tile");
    fit_row(t, nm, "cta", "%.3f", a->cta_us, "us", "fixed cost of one CTA");
    fit_row(t, nm, "seq", "%.3f", a->seq_us, "us", "fixed cost of one sequence");
    fit_row(t, nm, "launch", "%.1f", a->launch_us, "us", "fixed cost of one launch");
    fit_row(t, nm, "half", "%.4g", a->half, "FLOP", "work of a launch at which the rate halves");
    fit_row(t, nm, "p", "%.3f", a->p, "", "power of that size effect");
    if (a->half_floor > 0)
        fit_row(t, nm, "half_floor", "%.4g", a->half_floor, "FLOP",
                "smallest launch fitted: the size effect stops growing below it");
    zs_table_row(rd);
    zs_table_set(rd, 0, "%s", nm);
    zs_table_set(rd, 1,
                 "%.1f TFLOP/s on full %dx%d tiles over %d SMs; a launch costs %.1f us, each "
                 "sequence %.1f us and each CTA %.2f us more",
                 a->tflops, k->tile_q, k->tile_k, sms, a->launch_us, a->seq_us, a->cta_us);
    (void)d;
}

/* A fitted curve (gemm, elementwise, links): its figures in the units of
 * what it prices, and its reading. */
static void curve_rows(warnings *d, zs_table *t, zs_table *rd, const zs_curve *cv, int s)
{
    const char *nm = zs_calib_slot_name(s);
    int gemm = s == ZS_CAL_GEMM;
    double rs = gemm ? 1e-12 : 1e-9;
    const char *ru = gemm ? "TFLOP/s" : "GB/s";
    fit_row(t, nm, "t0", "%.3f", cv->t0 * 1e6, "us", gemm ? "per launch" : "per message or launch");
    fit_row(t, nm, "rmax", "%.1f", cv->rmax * rs, ru, "rate at large sizes");
    if (gemm)
        fit_row(t, nm, "half", "%.1f", cv->half, "elements",
                "smallest GEMM dimension at which the rate halves");
    else
        fit_row(t, nm, "half", "%.3f", cv->half / 1e6, "MB", "size at which the rate halves");
    fit_row(t, nm, "p", "%.3f", cv->p, "", "power of that size effect");
    if (gemm)
        fit_row(t, nm, "x_floor", "%.0f", cv->x_floor, "elements",
                "smallest dimension fitted: thinner GEMMs keep the size effect there");
    zs_table_row(rd);
    zs_table_set(rd, 0, "%s", nm);
    if (gemm)
        zs_table_set(rd, 1,
                     "up to %.1f TFLOP/s; half that where the smallest dimension is %.0f; %.1f us "
                     "per launch",
                     cv->rmax * rs, cv->half, cv->t0 * 1e6);
    else
        zs_table_set(rd, 1, "up to %.1f GB/s; half that at %.2f MB; %.1f us per message",
                     cv->rmax * rs, cv->half / 1e6, cv->t0 * 1e6);
    if (cv->npoints < 4) /* t0, rmax, half, p */
        warn(d,
             "warning: %s was fitted from %d points for 4 parameters: the data cannot "
             "determine them all (measure more sizes)",
             nm, cv->npoints);
}

/* Where a collective fit's latency lies against the smallest point. */
static void nccl_latency_warning(warnings *d, const zs_calib *c, const zs_calib_nccl_info *in)
{
    const zs_nccl_params *prm = zs_calib_nccl(c);
    zs_cluster cl;
    zs_nccl_topo t;
    int kind = -1;
    for (int k = 0; k < ZS_COLL_NKINDS; k++)
        if (!strcmp(in->min_op, zs_coll_kind_name(k)))
            kind = k;
    int nodes = in->min_nodes > 0 ? in->min_nodes : 1;
    if (kind < 0 || in->min_gpus < 2 || zs_cluster_load(zs_calib_nccl_cluster(c), 0, &cl, NULL) ||
        zs_nccl_topo_init(&cl, nodes, in->min_gpus / nodes, 0, &t, NULL))
        return;
    zs_nccl_choice tiny, small;
    if (zs_nccl_choose(&t, (zs_coll_kind)kind, 8, 0, 0, prm, &tiny, NULL) ||
        zs_nccl_choose(&t, (zs_coll_kind)kind, in->min_bytes, 0, 0, prm, &small, NULL) ||
        small.seconds <= 0)
        return;
    /* latency is pinned only by points where it dominates; elsewhere it
     * trades off against the size ramp */
    double share = tiny.seconds / small.seconds;
    if (prm->fitted[ZS_NP_INTRA_LAT] && share < 0.5)
        warn(d,
             "warning: the smallest collective measured is %s of %.3g MB on %d GPUs, where "
             "latency is %.0f%% of the time: intra_lat_scale (NCCL's latency) is only loosely "
             "determined by these data (it trades off against the size ramp), and predictions "
             "below that size are extrapolated (measure down to a few KB: nccl-tests -b 8)",
             in->min_op, in->min_bytes / 1e6, in->min_gpus, 100 * share);
    double bus = zs_nccl_bus_bytes((zs_coll_kind)kind, in->min_gpus, in->min_bytes);
    if (prm->fitted[ZS_NP_RAMP_HALF] && prm->v[ZS_NP_RAMP_HALF] > 0 &&
        prm->v[ZS_NP_RAMP_HALF] < bus)
        warn(d,
             "warning: ramp_half_bytes (%.2f MB of bus bytes per GPU) lies below the "
             "smallest size measured (%.2f MB): the size ramp is extrapolated there",
             prm->v[ZS_NP_RAMP_HALF] / 1e6, bus / 1e6);
}

/* The collective fit's parameters, its reading and its warnings. */
static void nccl_rows(warnings *d, zs_table *t, zs_table *rd, const zs_calib *c)
{
    const zs_nccl_params *prm = zs_calib_nccl(c);
    zs_calib_nccl_info in;
    if (!prm || !zs_calib_nccl_info_get(c, &in))
        return;
    for (int i = 0; i < ZS_NP_NPARAMS; i++) {
        if (!prm->fitted[i])
            continue;
        const nccl_meta *m = &nccl_params[i];
        fit_row(t, "collectives", zs_nccl_param_name(i), "%.4g", prm->v[i] * m->scale, m->unit,
                m->meaning);
        if (prm->v[i] >= zs_nccl_param_max(i) * 0.9999)
            warn(d,
                 "warning: %s sits at its upper bound (%.4g): the data do not determine "
                 "it",
                 zs_nccl_param_name(i), prm->v[i]);
    }
    zs_table_row(rd);
    zs_table_set(rd, 0, "collectives");
    char ramp[160] = "";
    if (prm->v[ZS_NP_RAMP_HALF] > 0)
        snprintf(ramp, sizeof ramp,
                 "; below %.2f MB of bus bytes per GPU the data term costs over "
                 "twice its asymptote (power %.2f)",
                 prm->v[ZS_NP_RAMP_HALF] / 1e6, prm->v[ZS_NP_RAMP_POW]);
    zs_table_set(rd, 1,
                 "NCCL 2.29.2's model on cluster '%s' (%s times): NVLink at %.0f%% of NCCL's "
                 "bandwidth estimate, latencies x%.2f NCCL's%s; NCCL runs %s points; rms %.1f%%, "
                 "max %.1f%%",
                 zs_calib_nccl_cluster(c), in.inplace ? "in-place" : "out-of-place",
                 100 * prm->v[ZS_NP_NVL_EFF], prm->v[ZS_NP_INTRA_LAT], ramp, in.pairs, 100 * in.rms,
                 100 * in.max);
    if (in.rms > 0.2)
        warn(d,
             "warning: the model explains these collectives poorly (rms %.0f%%): check "
             "the cluster (--cluster) and NCCL_ALGO/NCCL_PROTO of the runs",
             100 * in.rms);
    nccl_latency_warning(d, c, &in);
}

/* The calibration for people and scripts: its sources, every fitted
 * parameter with its unit, a reading per fit, warnings. */
static void report(zs_output *d, const zs_calib *c)
{
    warnings w;
    w.n = 0;
    zs_output_text(d, "calibration v%d, measured on %s\n", zs_calib_version(c),
                   zs_calib_gpu(c)[0] ? zs_calib_gpu(c) : "(unknown)");
    zs_output_set_int(d, NULL, "version", zs_calib_version(c));
    zs_output_set_text(d, NULL, "gpu", zs_calib_gpu(c));
    zs_table *src = zs_table_new("sources:");
    zs_table_col(src, "path", 0);
    zs_table_col(src, "sha256", 0);
    zs_table_col(src, "points", 1);
    zs_table_col(src, "gpu", 0);
    zs_table_col(src, "fits", 0);
    zs_table_col(src, "attn_shape", 0);
    for (size_t i = 0; i < zs_calib_nsources(c); i++) {
        const zs_calib_source *f = zs_calib_source_at(c, i);
        zs_table_row(src);
        zs_table_set(src, 0, "%s", f->path);
        zs_table_set(src, 1, "%s", f->sha256);
        zs_table_num(src, 2, "%.0f", f->points);
        if (f->gpu[0])
            zs_table_set(src, 3, "%s", f->gpu);
        char fits[200] = "";
        size_t o = 0;
        for (int s = 0; s < ZS_CAL_NSLOTS && o < sizeof fits; s++)
            if (f->slots & 1u << s)
                o += (size_t)snprintf(fits + o, sizeof fits - o, "%s%s", o ? "," : "",
                                      zs_calib_slot_name(s));
        if (fits[0])
            zs_table_set(src, 4, "%s", fits);
        /* query heads / KV heads x head dim of its attention points */
        if (f->heads > 0 && f->kv_heads > 0 && f->head_dim > 0)
            zs_table_set(src, 5, "%d/%dx%d", f->heads, f->kv_heads, f->head_dim);
        else if (f->heads < 0 || f->kv_heads < 0 || f->head_dim < 0)
            zs_table_set(src, 5, "several");
    }
    zs_output_table(d, "sources", src);
    zs_table *t = zs_table_new("fitted parameters:");
    const char *cols[] = {"fit", "parameter", "value", "unit", "meaning"};
    for (int i = 0; i < 5; i++)
        zs_table_col(t, cols[i], i == 2);
    zs_table *rd = zs_table_new("reading:");
    zs_table_col(rd, "fit", 0);
    zs_table_col(rd, "reading", 0);
    zs_table *q = zs_table_new("fit quality:");
    const char *qc[] = {"fit", "points", "rms_pct", "max_pct"};
    for (int i = 0; i < 4; i++)
        zs_table_col(q, qc[i], i > 0);
    for (int s = 0; s < ZS_CAL_NSLOTS; s++) {
        const zs_curve *cv = zs_calib_curve(c, (zs_calib_slot)s);
        if (!cv || !cv->fitted)
            continue;
        if (s == ZS_CAL_ATTN_FWD || s == ZS_CAL_ATTN_BWD)
            attn_rows(&w, t, rd, c, s);
        else
            curve_rows(&w, t, rd, cv, s);
        zs_table_row(q);
        zs_table_set(q, 0, "%s", zs_calib_slot_name(s));
        zs_table_num(q, 1, "%.0f", cv->npoints);
        zs_table_num(q, 2, "%.2f", 100 * cv->rms_rel);
        zs_table_num(q, 3, "%.2f", 100 * cv->max_rel);
    }
    zs_calib_nccl_info in;
    if (zs_calib_nccl_info_get(c, &in)) {
        zs_table_row(q);
        zs_table_set(q, 0, "collectives");
        zs_table_num(q, 1, "%.0f", (double)in.points);
        zs_table_num(q, 2, "%.2f", 100 * in.rms);
        zs_table_num(q, 3, "%.2f", 100 * in.max);
    }
    nccl_rows(&w, t, rd, c);
    char mixed[sizeof w.text[0]];
    if (zs_calib_check_mixed(c, mixed, sizeof mixed))
        warn(&w, "%s", mixed);
    zs_output_table(d, "parameters", t);
    zs_output_table(d, "quality", q);
    zs_output_table(d, "readings", rd);
    if (w.n)
        zs_output_text(d, "\n");
    for (int i = 0; i < w.n; i++)
        zs_output_note(d, "%s", w.text[i]);
}

static const char calib_help[] =
    "usage: zepsim calib fit FILES... -o OUT.json [--model M] [--gpu G [--attn-kernel K]]\n"
    "                                             [--cluster C]\n"
    "       zepsim calib show FILE.json\n"
    "       zepsim calib predict [options]   (see zepsim calib predict --help)\n"
    "\n"
    "fit: reads nccl-tests logs (one node or many), kernel latency CSVs,\n"
    "Megatron layer-op TSVs and zepsim-measurements JSON files\n"
    "(docs/validation.md), fits one curve per kernel class, the attention\n"
    "kernel and the parameters of NCCL's collective model (docs/cost-model.md)\n"
    "with GSL least squares, and writes a versioned calibration file with the\n"
    "source files' SHA-256, the fit residuals and, per collective point, the\n"
    "algorithm and protocol NCCL runs there. What the data does not cover\n"
    "stays analytic.\n"
    "\n"
    "options:\n";

static const zs_cli_use calib_uses[] = {
    {ZS_FP(MODEL), "the shape of layer-op TSV rows (default: those rows are not fitted, the TSV "
                   "does not name its model)"},
    {ZS_F_GPU, "the one whose attention kernel gives the structure (tile sizes, CTAs per SM, "
               "launch cost, SMs) the attention fit keeps (default: the preset matching the "
               "measured device, else h100-sxm)"},
    {ZS_FP(ATTN_KERNEL), "that GPU's kernel to take the structure from"},
    {ZS_FP(CLUSTER), "the hardware the collectives ran on (default cluster-c: 8 x H200, "
                     "NVSwitch with NVLS)"},
    {ZS_F_FORMAT, "fit, show (default table)"},
    {ZS_F_NCCL_COLUMN, NULL},
    {ZS_F_NCCL_ALGO, "what the runs used when their logs do not show it"},
    {ZS_F_NCCL_PROTO, "likewise"},
    {ZS_F_COLLECTIVE, NULL},
    {0, NULL}};

/* What the options say; the subcommand and its files follow them. */
typedef struct calib_args {
    const char *out, *model, *gpu_name, *kernel, *cluster;
    zs_format fmt;
    zs_cli_flags fl; /* the shared flags as given: the names above point into it */
} calib_args;

static const zs_opt_spec calib_own[] = {
    ZS_OPT_ROW("output", ZS_OPT_TEXT, calib_args, out, 0, 0, NULL, "FILE",
               "calibration file to write (required for fit; -o is the same option)")};

/* Reads the options into *a (the NCCL ones into *s); returns the exit
 * status when the command ends here (help, a bad option), else -1. */
static int parse_args(int argc, char **argv, calib_args *a, zs_meas_set *s)
{
    static const int o_ids[] = {ZS_CLI_OWN};
    static const zs_cli_cmd cmd = {.name = "calib",
                                   .head = calib_help,
                                   ZS_CLI_OWN_ROWS(calib_own),
                                   .uses = calib_uses,
                                   .letters = "o",
                                   .letter_ids = o_ids};
    int st = zs_cli_parse(&cmd, argc, argv, a, &a->fl);
    if (st >= 0)
        return st;
    a->model = zs_cli_given(&a->fl, ZS_P_MODEL);
    a->gpu_name = a->fl.gpu;
    a->kernel = zs_cli_given(&a->fl, ZS_P_ATTN_KERNEL);
    if (zs_cli_given(&a->fl, ZS_P_CLUSTER)) /* else cluster-c */
        a->cluster = a->fl.p.cluster;
    a->fmt = a->fl.fmt;
    zs_err e;
    zs_err_clear(&e);
    return zs_cli_nccl_apply(&a->fl, s, &e) ? zs_cli_fail(&e) : -1;
}

/* calib show FILE: the fit a calibration file holds. */
static int calib_show(const calib_args *a, const char *file)
{
    zs_err e;
    zs_err_clear(&e);
    zs_calib *cal = NULL;
    if (zs_calib_load(file, &cal, &e))
        return zs_cli_fail(&e);
    zs_output *d = zs_output_new("calib", a->fmt, stdout);
    if (d) {
        zs_output_set_text(d, NULL, "file", file);
        report(d, cal);
    }
    zs_calib_free(cal);
    return zs_cli_doc_end(d);
}

/* What calib fit prints once the fit is written. */
static int fit_report(const calib_args *a, const zs_meas_set *s, const zs_calib *cal)
{
    zs_output *d = zs_output_new("calib", a->fmt, stdout);
    if (d) {
        zs_output_text(d, "read %zu points from %zu files; wrote %s\n", s->n, s->nfiles, a->out);
        zs_output_set_text(d, NULL, "file", a->out);
        zs_output_set_int(d, NULL, "points_read", (long long)s->n);
        report(d, cal);
        if (!a->model)
            for (size_t i = 0; i < s->n; i++)
                if (strncmp(s->v[i].op, "layer:", 6) == 0) {
                    zs_output_note(d, "layer-op rows were not fitted (give --model for their "
                                      "shape)");
                    break;
                }
    }
    return zs_cli_doc_end(d);
}

/* calib fit FILE...: reads the measurements into *s, fits, writes a->out. */
static int calib_fit(const calib_args *a, zs_meas_set *s, int nfiles, char **files)
{
    zs_err e;
    zs_err_clear(&e);
    if (!a->out)
        return zs_cli_usage_error("calib", "calib fit needs -o OUT.json");
    if (nfiles < 1)
        return zs_cli_usage_error("calib", "calib fit needs at least one measurement file");
    zs_model m;
    zs_cluster cl;
    if (a->model && zs_model_load(a->model, &m, &e))
        return zs_cli_fail(&e);
    if (zs_cluster_load(a->cluster, 0, &cl, &e))
        return zs_cli_fail(&e);
    zs_gpu g;
    if (a->kernel && !a->gpu_name)
        return zs_cli_usage_error("calib", "--attn-kernel needs --gpu");
    if (a->gpu_name && (zs_gpu_load(a->gpu_name, &g, &e) ||
                        (a->kernel && zs_gpu_select_kernel(&g, a->kernel, &e))))
        return zs_cli_fail(&e);
    if (a->gpu_name && zs_gpu_attn_kernel(&g)->unfused)
        return zs_cli_usage_error("calib", "--attn-kernel unfused has no curve to fit (its "
                                           "GEMMs take the GEMM curve, its passes HBM): name a "
                                           "tiled kernel of the GPU");
    int rc = ZS_OK;
    for (int i = 0; i < nfiles && rc == ZS_OK; i++)
        rc = zs_meas_read(s, files[i], &e);
    zs_calib *cal = NULL;
    zs_fit_opts fo = {a->model ? &m : NULL, NULL, NULL, &cl};
    if (rc == ZS_OK)
        rc = zs_calib_fit_gpu(s, &fo, a->gpu_name ? &g : NULL, &cal, &e);
    if (rc == ZS_OK)
        rc = zs_calib_save(cal, a->out, &e);
    int st = rc == ZS_OK ? fit_report(a, s, cal) : 0;
    zs_calib_free(cal);
    return rc ? zs_cli_fail(&e) : st;
}

int zs_cmd_calib(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "predict") == 0)
        return zs_cmd_calib_predict(argc - 1, argv + 1);
    calib_args a = {.cluster = "cluster-c", .fmt = ZS_FMT_TABLE};
    zs_meas_set s;
    zs_meas_set_init(&s);
    int st = parse_args(argc, argv, &a, &s);
    if (st < 0) {
        if (optind >= argc)
            st = zs_cli_usage_error("calib", "expected a subcommand (fit, show or predict)");
        else if (strcmp(argv[optind], "show") == 0)
            st = argc - optind != 2
                     ? zs_cli_usage_error("calib", "calib show takes one calibration file")
                     : calib_show(&a, argv[optind + 1]);
        else if (strcmp(argv[optind], "fit") == 0)
            st = calib_fit(&a, &s, argc - optind - 1, argv + optind + 1);
        else
            st = zs_cli_usage_error("calib", "unknown subcommand '%s' (use fit, show or predict)",
                                    argv[optind]);
    }
    zs_meas_set_clear(&s);
    return st;
}
