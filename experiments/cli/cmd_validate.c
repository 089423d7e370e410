/* `zepsim validate`: predicts every measured point with the (calibrated)
 * cost model and prints predicted, measured and error per point, then the
 * median and max absolute error per op class and against the project's
 * targets. --holdout refits on part of the data and scores the rest, so
 * the figures say how well the simulator predicts what it was not fitted
 * on. Writes a log-log plot with gnuplot when it is installed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_calib.h"
#include "zs_sort.h"

static const char validate_help[] =
    "usage: zepsim validate [--calib FILE] --against FILE... [FILE...] [options]\n"
    "\n"
    "Predicts each measured point (nccl-tests logs, kernel CSVs, layer-op TSVs,\n"
    "zepsim-measurements JSON) and prints predicted vs measured with the error,\n"
    "then median and max absolute error per op class and the targets.\n"
    "\n"
    "options:\n"
    "  --calib FILE        calibration to validate (default: fit one from the\n"
    "                      --against data, which only measures the fit itself)\n"
    "  --against FILE      measurements to predict (repeatable; further files may\n"
    "                      follow as arguments)\n"
    "  --holdout SPEC      refit on part of the data and score the rest (repeatable):\n"
    "                        gpus=2[+4...]  collectives: fit on these GPU counts\n"
    "                        seq<=N         attention: fit on sequences <= N tokens\n"
    "                        bytes<=N[K|M|G] collectives: fit on sizes <= N\n"
    "  --model M           model shape for layer-op TSV rows\n"
    "  --cluster C         cluster whose analytic figures fill unfitted slots\n"
    "                      (default cluster-c)\n"
    "  --plot FILE|none    predicted-vs-measured log-log PNG (default validate.png;\n"
    "                      needs gnuplot)\n"
    "  --points            print every point (default: only summaries when more\n"
    "                      than 200 points)\n"
    "  --format table|csv|json\n";

#define MAX_TERMS 8
typedef struct holdout_term {
    char key[8]; /* gpus, seq, bytes */
    int gpus[16];
    int ngpus;
    double limit;
} holdout_term;
typedef struct holdout {
    int nterms;
    holdout_term t[MAX_TERMS];
} holdout;

static int is_coll(const char *op)
{
    int s = zs_calib_slot_parse(op);
    return s >= ZS_CAL_COLL_AG && s <= ZS_CAL_COLL_A2A;
}
static int is_attn(const char *op)
{
    return strncmp(op, "attn_", 5) == 0;
}

/* 1 when the point is held out (not fitted on). */
static int held_out(const zs_meas *m, void *arg)
{
    const holdout *h = arg;
    for (int i = 0; i < h->nterms; i++) {
        if (strcmp(h->t[i].key, "gpus") == 0 && is_coll(m->op)) {
            int in = 0;
            for (int j = 0; j < h->t[i].ngpus; j++)
                in |= m->gpus == h->t[i].gpus[j];
            if (!in)
                return 1;
        } else if (strcmp(h->t[i].key, "seq") == 0 && is_attn(m->op)) {
            if (m->seq_len > h->t[i].limit)
                return 1;
        } else if (strcmp(h->t[i].key, "bytes") == 0 &&
                   (is_coll(m->op) || strncmp(m->op, "p2p", 3) == 0)) {
            if (m->bytes > h->t[i].limit)
                return 1;
        }
    }
    return 0;
}

static int parse_holdout(const char *spec, holdout *h, zs_err *e)
{
    static const char fix[] = "use gpus=2[+4...], seq<=N or bytes<=N[K|M|G]";
    if (h->nterms == MAX_TERMS)
        return zs_err_set(e, ZS_EUSAGE, "--holdout", fix, "too many --holdout terms");
    holdout_term *t = &h->t[h->nterms];
    memset(t, 0, sizeof *t);
    if (strncmp(spec, "gpus=", 5) == 0) {
        snprintf(t->key, sizeof t->key, "gpus");
        const char *p = spec + 5;
        while (*p && t->ngpus < 16) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 1 || (*end && *end != '+'))
                return zs_err_set(e, ZS_EUSAGE, "--holdout", fix, "bad GPU list in '%s'", spec);
            t->gpus[t->ngpus++] = (int)v;
            p = *end ? end + 1 : end;
        }
    } else if (strncmp(spec, "seq<=", 5) == 0 || strncmp(spec, "bytes<=", 7) == 0) {
        int seq = spec[0] == 's';
        snprintf(t->key, sizeof t->key, "%s", seq ? "seq" : "bytes");
        char *end;
        const char *p = spec + (seq ? 5 : 7);
        double v = strtod(p, &end);
        double mul = 1;
        if (*end == 'K' || *end == 'k')
            mul = 1024, end++;
        else if (*end == 'M')
            mul = 1048576, end++;
        else if (*end == 'G')
            mul = 1073741824, end++;
        if (end == p || *end || !(v > 0))
            return zs_err_set(e, ZS_EUSAGE, "--holdout", fix, "bad limit in '%s'", spec);
        t->limit = v * mul;
    } else {
        return zs_err_set(e, ZS_EUSAGE, "--holdout", fix, "unknown hold-out '%s'", spec);
    }
    h->nterms++;
    return ZS_OK;
}

typedef struct point {
    const zs_meas *m;
    double pred, err; /* err relative: (pred - meas) / meas */
    int held;
} point;

/* Median and max |err| of the points selected by keep(); n returned. */
static int stats(const point *p, size_t n, int only_held, int (*keep)(const zs_meas *, void *),
                 void *arg, double *med, double *mx)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    int k = 0;
    if (!v)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((!only_held || p[i].held) && keep(p[i].m, arg))
            v[k++] = fabs(p[i].err);
    *med = k ? zs_median(v, (size_t)k) : 0;
    *mx = k ? v[k - 1] : 0;
    free(v);
    return k;
}

static int keep_op(const zs_meas *m, void *arg)
{
    return strcmp(m->op, (const char *)arg) == 0;
}
static int keep_coll_ge(const zs_meas *m, void *arg)
{
    return is_coll(m->op) && m->bytes >= *(const double *)arg;
}
static int keep_attn_1k(const zs_meas *m, void *arg)
{
    return strcmp(m->op, "attn_fwd") == 0 && m->seq_len >= 1024;
}

static void shape_of(const zs_meas *m, char *buf, size_t n)
{
    if (is_coll(m->op) || strncmp(m->op, "p2p", 3) == 0)
        snprintf(buf, n, "%d GPUs, %.0f B", m->gpus, m->bytes);
    else if (is_attn(m->op))
        snprintf(buf, n, "%d tokens, %d/%d heads, d=%d", m->seq_len, m->heads, m->kv_heads,
                 m->head_dim);
    else if (strncmp(m->op, "layer:", 6) == 0)
        snprintf(buf, n, "%.0f tokens, tp=%d cp=%d", m->tokens, m->tp, m->cp);
    else if (strcmp(m->op, "gemm") == 0)
        snprintf(buf, n, "%.0fx%.0fx%.0f", m->m, m->n, m->k);
    else
        snprintf(buf, n, "%.0f B", m->bytes);
}

static void plot(const char *png, const point *p, size_t n, int have_holdout)
{
    char dat[1100], gp[1100];
    snprintf(dat, sizeof dat, "%s.dat", png);
    snprintf(gp, sizeof gp, "%s.gp", png);
    FILE *f = fopen(dat, "w");
    if (!f) {
        fprintf(stderr, "zepsim: cannot write %s: plot skipped\n", dat);
        return;
    }
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.6g %.6g %d\n", p[i].m->seconds * 1e6, p[i].pred * 1e6,
                have_holdout ? p[i].held : 1);
    fclose(f);
    f = fopen(gp, "w");
    if (!f)
        return;
    fprintf(f,
            "set terminal pngcairo size 800,700\nset output '%s'\nset logscale xy\n"
            "set xlabel 'measured (us)'\nset ylabel 'predicted (us)'\nset key top left\n"
            "set title 'zepsim validate: predicted vs measured'\n"
            "plot x title 'y = x' lc rgb 'gray', 1.1*x title '+-10%%' dt 2 lc rgb 'gray', "
            "0.9*x notitle dt 2 lc rgb 'gray', '%s' using 1:($3==1?$2:1/0) title '%s' pt 7, "
            "'%s' using 1:($3==0?$2:1/0) title 'fitted on' pt 6\n",
            png, dat, have_holdout ? "held out" : "points", dat);
    fclose(f);
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "command -v gnuplot >/dev/null 2>&1 && gnuplot '%s' 2>/dev/null", gp);
    if (system(cmd) != 0)
        fprintf(stderr, "zepsim: gnuplot not found or failed: no plot written (data in %s)\n", dat);
    else
        fprintf(stderr, "plot written to %s\n", png);
    remove(gp);
}

int zs_cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, 0, 'h'},          {"calib", required_argument, 0, 'c'},
        {"against", required_argument, 0, 'a'}, {"holdout", required_argument, 0, 'H'},
        {"model", required_argument, 0, 'm'},   {"cluster", required_argument, 0, 'C'},
        {"plot", required_argument, 0, 'p'},    {"points", no_argument, 0, 'P'},
        {"format", required_argument, 0, 'f'},  {0, 0, 0, 0}};
    zs_err e;
    zs_err_clear(&e);
    const char *calib_path = NULL, *model_name = NULL, *cluster_name = "cluster-c",
               *png = "validate.png";
    const char *files[256];
    int nfiles = 0, all_points = 0;
    zs_format fmt = ZS_FMT_TABLE;
    holdout h;
    memset(&h, 0, sizeof h);
    int c;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        int rc = ZS_OK;
        switch (c) {
        case 'h':
            fputs(validate_help, stdout);
            return 0;
        case 'c':
            calib_path = optarg;
            break;
        case 'a':
            if (nfiles == 256)
                return zs_cli_usage_error("validate", "at most 256 measurement files");
            files[nfiles++] = optarg;
            break;
        case 'H':
            rc = parse_holdout(optarg, &h, &e);
            break;
        case 'm':
            model_name = optarg;
            break;
        case 'C':
            cluster_name = optarg;
            break;
        case 'p':
            png = strcmp(optarg, "none") == 0 ? NULL : optarg;
            break;
        case 'P':
            all_points = 1;
            break;
        case 'f':
            rc = zs_format_parse(optarg, &fmt, &e);
            break;
        default:
            return zs_cli_bad_option("validate", c, argv);
        }
        if (rc)
            return zs_cli_fail(&e);
    }
    for (int i = optind; i < argc; i++) {
        if (nfiles == 256)
            return zs_cli_usage_error("validate", "at most 256 measurement files");
        files[nfiles++] = argv[i];
    }
    if (!nfiles)
        return zs_cli_usage_error("validate", "expected measurement files (--against FILE)");

    zs_model lm, cm;
    zs_cluster cl;
    int rc = ZS_OK;
    if (model_name && (rc = zs_model_load(model_name, &lm, &e)))
        return zs_cli_fail(&e);
    if ((rc = zs_cluster_load(cluster_name, 0, &cl, &e)))
        return zs_cli_fail(&e);
    cm = model_name ? lm
                    : (zs_model){.name = "none",
                                 .layers = 1,
                                 .hidden = 128,
                                 .heads = 1,
                                 .kv_heads = 1,
                                 .head_dim = 128,
                                 .ffn = 128,
                                 .vocab = 1,
                                 .dtype_bytes = 2};
    zs_meas_set s;
    zs_meas_set_init(&s);
    for (int i = 0; i < nfiles && rc == ZS_OK; i++)
        rc = zs_meas_read(&s, files[i], &e);
    zs_calib *cal = NULL, *base = NULL;
    if (rc == ZS_OK && calib_path)
        rc = zs_calib_load(calib_path, &base, &e);
    if (rc == ZS_OK && (h.nterms || !base)) {
        zs_fit_opts fo = {model_name ? &lm : NULL, h.nterms ? held_out : NULL, &h};
        rc = zs_calib_fit(&s, &fo, &cal, &e);
        if (rc == ZS_OK && base)
            zs_calib_merge(cal, base);
    } else if (rc == ZS_OK) {
        cal = base;
        base = NULL;
    }
    zs_cost *cost = NULL;
    point *pts = NULL;
    size_t np = 0;
    if (rc == ZS_OK && !(cost = zs_cost_calibrated_new(&cm, &cl, cal)))
        rc = zs_err_set(&e, ZS_ENOMEM, NULL, NULL, "out of memory");
    if (rc == ZS_OK && !(pts = calloc(s.n ? s.n : 1, sizeof *pts)))
        rc = zs_err_set(&e, ZS_ENOMEM, NULL, NULL, "out of memory");
    for (size_t i = 0; rc == ZS_OK && i < s.n; i++) {
        double pred;
        zs_err pe;
        if (zs_calib_predict(cost, &s.v[i], model_name ? &lm : NULL, &pred, &pe))
            continue; /* unpriceable (layer ops without --model): counted below */
        pts[np].m = &s.v[i];
        pts[np].pred = pred;
        pts[np].err = (pred - s.v[i].seconds) / s.v[i].seconds;
        pts[np].held = h.nterms ? held_out(&s.v[i], &h) : 0;
        np++;
    }
    if (rc) {
        free(pts);
        zs_cost_free(cost);
        zs_calib_free(cal);
        zs_calib_free(base);
        zs_meas_set_clear(&s);
        return zs_cli_fail(&e);
    }
    if (fmt == ZS_FMT_TABLE) {
        printf("cost model: %s\n", cost->desc);
        printf("%s\n", h.nterms ? "hold-out validation: errors below are on points NOT used in "
                                  "the fit (set=held-out); set=fit points are in-sample"
                                : (calib_path ? "validation of the given calibration"
                                              : "in-sample: the calibration was fitted on these "
                                                "same points (use --holdout for prediction "
                                                "error)"));
        if (np < s.n)
            printf("note: %zu points could not be priced (layer ops need --model)\n", s.n - np);
        printf("\n");
    }
    if (all_points || np <= 200) {
        zs_table *t = zs_table_new("points");
        zs_table_col(t, "op", 0);
        zs_table_col(t, "shape", 0);
        zs_table_col(t, "measured_us", 1);
        zs_table_col(t, "predicted_us", 1);
        zs_table_col(t, "error_pct", 1);
        zs_table_col(t, "set", 0);
        for (size_t i = 0; i < np; i++) {
            char sh[128];
            shape_of(pts[i].m, sh, sizeof sh);
            zs_table_row(t);
            zs_table_set(t, 0, "%s", pts[i].m->op);
            zs_table_set(t, 1, "%s", sh);
            zs_table_set(t, 2, "%.2f", pts[i].m->seconds * 1e6);
            zs_table_set(t, 3, "%.2f", pts[i].pred * 1e6);
            zs_table_set(t, 4, "%+.2f", 100 * pts[i].err);
            zs_table_set(t, 5, "%s", h.nterms ? (pts[i].held ? "held-out" : "fit") : "all");
        }
        zs_table_print(t, stdout, fmt);
        zs_table_free(t);
        if (fmt == ZS_FMT_TABLE)
            printf("\n");
    }
    /* Per op class, then the targets. With a hold-out, classes are scored
     * on held-out points when they have any. */
    zs_table *sum = zs_table_new("summary (absolute relative error)");
    zs_table_col(sum, "class", 0);
    zs_table_col(sum, "set", 0);
    zs_table_col(sum, "points", 1);
    zs_table_col(sum, "median_pct", 1);
    zs_table_col(sum, "max_pct", 1);
    zs_table_col(sum, "target", 0);
    char seen[64][32];
    int nseen = 0;
    for (size_t i = 0; i < np; i++) {
        int dup = 0;
        for (int j = 0; j < nseen; j++)
            dup |= strcmp(seen[j], pts[i].m->op) == 0;
        if (dup || nseen == 64)
            continue;
        snprintf(seen[nseen++], 32, "%s", pts[i].m->op);
    }
    for (int j = 0; j < nseen; j++) {
        for (int held = 1; held >= 0; held--) {
            double med, mx;
            int k;
            if (held) {
                if (!h.nterms)
                    continue;
                k = stats(pts, np, 1, keep_op, seen[j], &med, &mx);
            } else {
                k = stats(pts, np, 0, keep_op, seen[j], &med, &mx);
                /* all points of the class */
            }
            if (!k)
                continue;
            zs_table_row(sum);
            zs_table_set(sum, 0, "%s", seen[j]);
            zs_table_set(sum, 1, "%s", held ? "held-out" : "all");
            zs_table_set(sum, 2, "%d", k);
            zs_table_set(sum, 3, "%.2f", 100 * med);
            zs_table_set(sum, 4, "%.2f", 100 * mx);
        }
    }
    static const struct {
        const char *name;
        double min_bytes;
        double target;
    } targets[] = {{"collectives >= 64 MB", 64e6, 0.05}, {"collectives >= 8 MB", 8e6, 0.10}};
    int only_held = h.nterms > 0;
    for (size_t j = 0; j < 2; j++) {
        double med, mx, lim = targets[j].min_bytes;
        int k = stats(pts, np, only_held, keep_coll_ge, &lim, &med, &mx);
        if (!k)
            continue;
        zs_table_row(sum);
        zs_table_set(sum, 0, "%s", targets[j].name);
        zs_table_set(sum, 1, "%s", only_held ? "held-out" : "all");
        zs_table_set(sum, 2, "%d", k);
        zs_table_set(sum, 3, "%.2f", 100 * med);
        zs_table_set(sum, 4, "%.2f", 100 * mx);
        zs_table_set(sum, 5, "median <= %.0f%%: %s", 100 * targets[j].target,
                     med <= targets[j].target ? "met" : "NOT met");
    }
    double med, mx;
    int k = stats(pts, np, only_held, keep_attn_1k, NULL, &med, &mx);
    if (k) {
        zs_table_row(sum);
        zs_table_set(sum, 0, "attn_fwd >= 1K tokens");
        zs_table_set(sum, 1, "%s", only_held ? "held-out" : "all");
        zs_table_set(sum, 2, "%d", k);
        zs_table_set(sum, 3, "%.2f", 100 * med);
        zs_table_set(sum, 4, "%.2f", 100 * mx);
        zs_table_set(sum, 5, "median <= 10%%: %s", med <= 0.10 ? "met" : "NOT met");
    }
    zs_table_print(sum, stdout, fmt);
    zs_table_free(sum);
    if (png && np)
        plot(png, pts, np, h.nterms > 0);
    free(pts);
    zs_cost_free(cost);
    zs_calib_free(cal);
    zs_calib_free(base);
    zs_meas_set_clear(&s);
    return 0;
}
