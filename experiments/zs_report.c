/* Figure reports: see zs_report.h. */
#include "zs_report.h"

#include "zs_afile.h"
#include "zs_version.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void zs_report_opts_init(zs_report_opts *o)
{
    o->out_dir = ".";
    o->plot = 1;
    o->gnuplot = "gnuplot";
}

double zs_report_metric(const zs_spec *s, const zs_db_row *rows, const int *found, int i,
                        const char *metric)
{
    if (!found[i] || !rows[i].ok)
        return NAN;
    const zs_point_result *r = &rows[i].r;
    if (!strcmp(metric, "tokens_per_s"))
        return r->tokens_per_s;
    if (!strcmp(metric, "iter_time_ms"))
        return r->iter_time * 1e3;
    if (!strcmp(metric, "mfu"))
        return r->mfu;
    if (!strcmp(metric, "exposed_share"))
        return r->exposed_share;
    if (!strcmp(metric, "max_nic_util"))
        return r->max_nic_util;
    if (!strcmp(metric, "attn_imbalance"))
        return r->attn_imbalance;
    if (!strcmp(metric, "linear_imbalance"))
        return r->linear_imbalance;
    if (!strcmp(metric, "plan_ms"))
        return r->plan_ms;
    if (!strcmp(metric, "tokens_per_iter"))
        return r->iterations > 0 ? r->tokens / r->iterations : NAN;
    if (!strcmp(metric, "imbalance_degree"))
        return r->imbalance_degree > 0 ? r->imbalance_degree : NAN;
    if (!strcmp(metric, "delay_iters"))
        return r->delay_iters;
    if (!strcmp(metric, "xnode_p2p_us"))
        return r->xnode_n > 0 ? r->xnode_us : NAN;
    if (!strcmp(metric, "speedup")) {
        if (s->baseline < 0)
            return NAN;
        int b = s->points[i].case_idx * s->nseries + s->baseline;
        double base = zs_report_metric(s, rows, found, b, "tokens_per_s");
        return base > 0 ? r->tokens_per_s / base : NAN;
    }
    return NAN;
}

static void fmt_metric(const char *metric, double v, char *buf, size_t n)
{
    if (isnan(v))
        snprintf(buf, n, "—");
    else if (!strcmp(metric, "tokens_per_s") || !strcmp(metric, "tokens_per_iter") ||
             !strcmp(metric, "xnode_p2p_us"))
        snprintf(buf, n, "%.0f", v);
    else if (!strcmp(metric, "iter_time_ms"))
        snprintf(buf, n, "%.1f", v);
    else if (!strcmp(metric, "speedup"))
        snprintf(buf, n, "%.2fx", v);
    else if (!strcmp(metric, "mfu") || !strcmp(metric, "exposed_share") ||
             !strcmp(metric, "max_nic_util"))
        snprintf(buf, n, "%.1f%%", v * 100);
    else if (!strcmp(metric, "plan_ms"))
        snprintf(buf, n, "%.2f", v);
    else
        snprintf(buf, n, "%.3f", v);
}

static const char *metric_title(const char *m)
{
    if (!strcmp(m, "tokens_per_s"))
        return "throughput (tokens/s)";
    if (!strcmp(m, "iter_time_ms"))
        return "iteration time (ms)";
    if (!strcmp(m, "xnode_p2p_us"))
        return "cross-node ring round, forward pass (us, mean)";
    if (!strcmp(m, "speedup"))
        return "speedup";
    if (!strcmp(m, "mfu"))
        return "MFU";
    if (!strcmp(m, "exposed_share"))
        return "exposed communication share";
    if (!strcmp(m, "max_nic_util"))
        return "max NIC utilisation";
    if (!strcmp(m, "attn_imbalance"))
        return "attention imbalance (max/mean)";
    if (!strcmp(m, "linear_imbalance"))
        return "linear-module imbalance (max/mean)";
    if (!strcmp(m, "tokens_per_iter"))
        return "tokens trained per iteration";
    if (!strcmp(m, "imbalance_degree"))
        return "imbalance degree (max micro-batch latency x micro-batches / total)";
    if (!strcmp(m, "delay_iters"))
        return "iterations a token waits (mean)";
    return "planning time (ms)";
}

/* Markdown cell text: '|' escaped, newlines flattened. */
static void md(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '\n')
            fputc(' ', f);
        else
            fputc(*s, f);
    }
}

/* A gnuplot double-quoted string body. */
static void gq(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
}

/* A title as a gnuplot string body broken into lines of at most `width`
 * characters at blanks, so a long title is never clipped by the plot's
 * edges. */
static void gq_wrapped(FILE *f, const char *s, int width)
{
    int col = 0;
    while (*s) {
        size_t word = strcspn(s, " ");
        if (col > 0 && col + 1 + (int)word > width) {
            fputs("\\n", f);
            col = 0;
        } else if (col > 0) {
            fputc(' ', f);
            col++;
        }
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(word < sizeof buf ? word : sizeof buf - 1), s);
        gq(f, buf);
        col += (int)word;
        s += word;
        s += strspn(s, " ");
    }
}

static int case_matches(const zs_spec *s, const zs_spec_paper *p, int c)
{
    for (int k = 0; k < p->nmatch; k++) {
        const char *have = NULL;
        if (!strcmp(p->match_axis[k], "case"))
            have = s->cases[c].label;
        for (int a = 0; a < s->naxes; a++)
            if (!strcmp(s->axis_name[a], p->match_axis[k]))
                have = s->cases[c].axis[a];
        if (!have || strcmp(have, p->match_val[k]))
            return 0;
    }
    return 1;
}

/* Our figure for a paper entry; *n = points it aggregates. */
static double paper_ours(const zs_spec *s, const zs_db_row *rows, const int *found,
                         const zs_spec_paper *p, int *n, int *nmatch)
{
    double acc = 0, lg = 0, mn = INFINITY, mx = -INFINITY;
    *n = *nmatch = 0;
    for (int i = 0; i < s->npoints; i++) {
        const zs_spec_point *pt = &s->points[i];
        if (strcmp(s->series[pt->series_idx].label, p->series) || !case_matches(s, p, pt->case_idx))
            continue;
        (*nmatch)++;
        double v = zs_report_metric(s, rows, found, i, p->metric);
        if (isnan(v))
            continue;
        (*n)++;
        acc += v;
        lg += log(v > 0 ? v : 1e-300);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    if (*n == 0)
        return NAN;
    if (!strcmp(p->agg, "value"))
        return *n == 1 && *nmatch == 1 ? acc : NAN;
    if (!strcmp(p->agg, "mean"))
        return acc / *n;
    if (!strcmp(p->agg, "geomean"))
        return exp(lg / *n);
    if (!strcmp(p->agg, "min"))
        return mn;
    return mx;
}

/* The files of one report, all written under temporary names and renamed
 * together at the end (zs_afile), so a failure half-way (a full disk)
 * leaves none of them: not a .dat without its .md. */
typedef struct outputs {
    zs_afile dat, gp, png, svg, md;
} outputs;

static void outputs_abort(outputs *w)
{
    zs_afile *all[] = {&w->dat, &w->gp, &w->png, &w->svg, &w->md};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        zs_afile_abort(all[i]); /* a no-op for a file not opened or committed */
}

/* Every file flushed to disk first, then renamed: a full disk shows up in
 * the first phase, when nothing has appeared yet. */
static int outputs_commit(outputs *w, zs_err *e)
{
    zs_afile *all[] = {&w->dat, &w->gp, &w->png, &w->svg, &w->md};
    int rc = ZS_OK;
    for (size_t i = 0; i < sizeof all / sizeof all[0] && !rc; i++)
        rc = zs_afile_flush(all[i], e);
    for (size_t i = 0; i < sizeof all / sizeof all[0] && !rc; i++)
        if (all[i]->tmp[0])
            rc = zs_afile_commit(all[i], e);
    if (rc)
        outputs_abort(w);
    return rc;
}

/* Opens DIR/NAME.EXT for an atomic write (zs_afile): nothing appears under
 * that name unless the whole file was written. */
static int open_out(const char *dir, const char *name, const char *ext, zs_afile *a, zs_err *e)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    return zs_afile_open(a, path, e);
}

static void cfg_line(FILE *f, const zs_point_cfg *c)
{
    char nodes[32] = "its own node count"; /* no "nodes": the cluster file's */
    if (c->nodes > 0)
        snprintf(nodes, sizeof nodes, "%d nodes", c->nodes);
    fprintf(f,
            "model `%s`, cluster `%s` x %s, trace `%s`, method `%s`%s%s%s, context %lld "
            "tokens per %d-GPU group, %d iteration%s, seed %llu, backend `%s`, ZeRO-%d, "
            "recompute %s%s%s",
            c->model, c->cluster, nodes, c->trace, c->method, c->opts[0] ? " (`" : "", c->opts,
            c->opts[0] ? "`)" : "", (long long)c->context, c->group, c->iterations,
            c->iterations == 1 ? "" : "s", (unsigned long long)c->seed, c->backend, c->zero_stage,
            c->recompute == ZS_RECOMPUTE_FULL ? "full" : "none",
            c->calib[0] ? ", calibration " : "", c->calib);
}

/* The points a report reads: rows/found indexed like s->points. */
typedef struct report_rows {
    zs_db_row *rows;
    int *found;
} report_rows;

/* Bars: one line per case, one column per series. */
static void dat_bars(FILE *d, const zs_spec *s, const report_rows *r)
{
    fprintf(d, "case");
    for (int k = 0; k < s->nseries; k++)
        fprintf(d, "\t%s", s->series[k].label);
    fputc('\n', d);
    for (int c = 0; c < s->ncases; c++) {
        fprintf(d, "%s", s->cases[c].label);
        for (int k = 0; k < s->nseries; k++) {
            double v = zs_report_metric(s, r->rows, r->found, c * s->nseries + k, s->plot.metric);
            if (isnan(v))
                fprintf(d, "\t?");
            else
                fprintf(d, "\t%.6g", v);
        }
        fputc('\n', d);
    }
}

/* A line's name: the series and the labels of the axes other than x. */
static void line_group(const zs_spec *s, int k, int c, int xaxis, char *g, size_t n)
{
    snprintf(g, n, "%s", s->series[k].label);
    for (int a = 0; a < s->naxes; a++)
        if (a != xaxis && s->cases[c].axis[a][0])
            snprintf(g + strlen(g), n - strlen(g), ", %s", s->cases[c].axis[a]);
}

/* The lines of a line plot, in series then case order. */
typedef struct line_groups {
    int n;
    char (*name)[320];
    int *series;
} line_groups;

static int line_groups_find(const zs_spec *s, int xaxis, line_groups *lg)
{
    lg->n = 0;
    lg->name = calloc((size_t)s->npoints + 1, sizeof *lg->name);
    lg->series = calloc((size_t)s->npoints + 1, sizeof *lg->series);
    if (!lg->name || !lg->series)
        return ZS_ENOMEM;
    for (int k = 0; k < s->nseries; k++) {
        int first = lg->n;
        for (int c = 0; c < s->ncases; c++) {
            char g[320];
            line_group(s, k, c, xaxis, g, sizeof g);
            int have = 0;
            for (int j = first; j < lg->n; j++)
                have |= !strcmp(lg->name[j], g);
            if (!have) {
                snprintf(lg->name[lg->n], sizeof lg->name[0], "%s", g);
                lg->series[lg->n++] = k;
            }
        }
    }
    return ZS_OK;
}

/* Lines: one gnuplot data block per line, x and the metric. */
static void dat_lines(FILE *d, const zs_spec *s, const report_rows *r, int xaxis,
                      const line_groups *lg)
{
    for (int j = 0; j < lg->n; j++) {
        fprintf(d, "# %s\n", lg->name[j]);
        int k = lg->series[j];
        for (int c = 0; c < s->ncases; c++) {
            char g[320];
            line_group(s, k, c, xaxis, g, sizeof g);
            if (strcmp(g, lg->name[j]) || isnan(s->cases[c].x))
                continue;
            double v = zs_report_metric(s, r->rows, r->found, c * s->nseries + k, s->plot.metric);
            if (isnan(v))
                fprintf(d, "%.6g\t?\n", s->cases[c].x);
            else
                fprintf(d, "%.6g\t%.6g\n", s->cases[c].x, v);
        }
        fprintf(d, "\n\n");
    }
}

static void gp_axes(FILE *g, const zs_spec *s, int lines, int width_px)
{
    fprintf(g, "set datafile separator \"\\t\"\nset datafile missing \"?\"\n");
    fprintf(g, "set title \"");
    gq_wrapped(g, s->title, width_px / 9); /* sans 10: ~7 px per character */
    fprintf(g, "\" noenhanced\nset ylabel \"");
    gq(g, s->plot.ylabel[0] ? s->plot.ylabel : metric_title(s->plot.metric));
    /* headroom: no bar or marker touches the top of the plot */
    /* the key below the plot: beside it, long series names squeezed the
     * plot into a third of the width and pushed its title off the page */
    fprintf(g, "\" noenhanced\nset grid ytics\nset key outside center bottom horizontal "
               "noenhanced\n"
               "set offsets 0, 0, graph 0.08, 0\n");
    if (s->plot.logy)
        fprintf(g, "set logscale y\n");
    if (!lines) {
        fprintf(g, "set style data histograms\nset style histogram clustered gap 1\n"
                   "set style fill solid 0.85 border -1\nset boxwidth 0.9\n"
                   "set xtics rotate by -40 scale 0 noenhanced\nset yrange [0:*]\n");
        if (s->plot.xlabel[0]) {
            fprintf(g, "set xlabel \"");
            gq(g, s->plot.xlabel);
            fprintf(g, "\" noenhanced\n");
        }
    } else {
        fprintf(g, "set xlabel \"");
        gq(g, s->plot.xlabel[0] ? s->plot.xlabel : s->plot.x);
        fprintf(g, "\" noenhanced\n");
        if (s->plot.logx)
            fprintf(g, "set logscale x 2\n");
        fprintf(g, "set yrange [0:*]\n");
    }
}

/* The x of a bar: gnuplot centres case c's cluster of n bars on c, each
 * 1 / (n + gap) wide (gap 1, gp_axes). */
static double bar_x(int c, int k, int n)
{
    return c + (k - (n - 1) / 2.0) / (n + 1.0);
}

/* The paper's numbers on the plot, from the spec's reference table (never
 * from a result): a published value of one point as a marker on its bar or
 * line ($paper, one "x y" row each), an aggregate (a mean, a maximum) as a
 * dashed line across the plot with its label. Returns the markers. */
static int gp_paper(FILE *g, const zs_spec *s, int lines, int xaxis, char *keys, size_t nkeys)
{
    size_t ok = 0;
    keys[0] = '\0';
    int nmark = 0, nline = 0;
    fprintf(g, "$paper << EOD\n");
    for (int i = 0; i < s->npaper; i++) {
        const zs_spec_paper *p = &s->paper[i];
        if (!p->has_value || strcmp(p->metric, s->plot.metric) || strcmp(p->agg, "value"))
            continue;
        int hit = -1, nhit = 0;
        for (int j = 0; j < s->npoints; j++) {
            const zs_spec_point *pt = &s->points[j];
            if (!strcmp(s->series[pt->series_idx].label, p->series) &&
                case_matches(s, p, pt->case_idx))
                hit = j, nhit++;
        }
        if (nhit != 1)
            continue;
        const zs_spec_point *pt = &s->points[hit];
        double x =
            lines ? s->cases[pt->case_idx].x : bar_x(pt->case_idx, pt->series_idx, s->nseries);
        if (lines && (xaxis < 0 || isnan(x)))
            continue;
        fprintf(g, "%.6g\t%.6g\n", x, p->value);
        nmark++;
    }
    fprintf(g, "EOD\n");
    for (int i = 0; i < s->npaper; i++) {
        const zs_spec_paper *p = &s->paper[i];
        if (!p->has_value || strcmp(p->metric, s->plot.metric) || !strcmp(p->agg, "value"))
            continue;
        nline++;
        /* the line across the plot, named in the key (a label on the plot
         * ran through the bars) */
        fprintf(g,
                "set arrow %d from graph 0, first %.6g to graph 1, first %.6g nohead dt 2 lw 1.5 "
                "lc rgb \"%s\" front\n",
                nline, p->value, p->value, nline % 2 ? "#b03030" : "#3050b0");
        char what[300];
        /* the key stays narrow; the full text is in the markdown table */
        snprintf(what, sizeof what, "%.48s%s", p->what, strlen(p->what) > 48 ? "..." : "");
        for (char *q = what; *q; q++)
            if (*q == '"' || *q == '\\')
                *q = '\'';
        if (ok < nkeys)
            ok += (size_t)snprintf(keys + ok, nkeys - ok,
                                   ", \\\n     NaN with lines dt 2 lw 1.5 lc rgb \"%s\" title "
                                   "\"paper, %s: %s = %.4g\"",
                                   nline % 2 ? "#b03030" : "#3050b0", p->agg, what, p->value);
    }
    return nmark;
}

/* gnuplot has eight default line colours and then starts over, so a plot
 * of nine series drew the ninth in the first one's colour (the 16-node
 * study: TE CP and auto). Series 9 on get colours of their own (up to 16,
 * then gnuplot cycles); plots of at most eight series are unchanged. */
static void gp_colors(FILE *g, int n)
{
    static const char *const extra[] = {"#7f7f7f", "#8c564b", "#e377c2", "#17becf",
                                        "#bcbd22", "#1f3a93", "#ff7f0e", "#2ca02c"};
    for (int i = 8; i < n && i < 8 + (int)(sizeof extra / sizeof extra[0]); i++)
        fprintf(g, "set linetype %d lc rgb \"%s\"\n", i + 1, extra[i - 8]);
}

/* The gnuplot script: axes, the paper's numbers, then a PNG and an SVG of
 * the same plot. */
static void gp_script(FILE *g, const zs_spec *s, int lines, const line_groups *lg, int xaxis)
{
    fprintf(g,
            "# gnuplot script written by `zepsim experiment report`; renders %s.png and "
            "%s.svg\n# from %s.dat (run it in this folder: gnuplot %s.gp). zepsim names the\n"
            "# files with -e \"dat='...'; out_png='...'; out_svg='...'\" to write them\n"
            "# atomically.\n"
            "if (!exists(\"dat\")) dat = \"%s.dat\"\n"
            "if (!exists(\"out_png\")) out_png = \"%s.png\"\n"
            "if (!exists(\"out_svg\")) out_svg = \"%s.svg\"\n",
            s->name, s->name, s->name, s->name, s->name, s->name, s->name);
    int w = s->ncases * (lines ? 0 : s->nseries) * 14 + 500;
    w = w < 900 ? 900 : w > 2400 ? 2400 : w;
    gp_axes(g, s, lines, w);
    gp_colors(g, lines ? lg->n : s->nseries);
    char keys[2400];
    int nmark = gp_paper(g, s, lines, xaxis, keys, sizeof keys);
    char paper[2600] = "";
    snprintf(paper, sizeof paper, "%s%s",
             nmark ? ", \\\n     $paper using 1:2 with points pt 9 ps 2 lc rgb \"#b03030\" "
                     "title \"paper\""
                   : "",
             keys);
    for (int t = 0; t < 2; t++) {
        if (t == 0)
            fprintf(g, "set terminal pngcairo size %d,560 font \"sans,10\"\n", w);
        else
            fprintf(g, "set terminal svg size %d,560 font \"sans,10\"\n", w);
        fprintf(g, "set output %s\n", t == 0 ? "out_png" : "out_svg");
        if (!lines) {
            fprintf(g, "plot for [i=2:%d] dat using i:xtic(1) title columnheader(i)%s\n",
                    s->nseries + 1, paper);
        } else {
            fprintf(g, "plot ");
            for (int j = 0; j < lg->n; j++) {
                fprintf(g, "%sdat index %d using 1:2 with linespoints lw 2 title \"",
                        j ? ", \\\n     " : "", j);
                gq(g, lg->name[j]);
                fputc('"', g);
            }
            fprintf(g, "%s\n", paper);
        }
    }
    fprintf(g, "unset output\n");
}

/* NAME.dat and NAME.gp (committed with the other files). */
static int write_plot(const zs_spec *s, const report_rows *r, const char *dir, outputs *out,
                      zs_err *e)
{
    int lines = !strcmp(s->plot.kind, "lines");
    int xaxis = -1;
    for (int a = 0; a < s->naxes; a++)
        if (!strcmp(s->axis_name[a], s->plot.x))
            xaxis = a;
    line_groups lg;
    int rc = ZS_OK;
    if (line_groups_find(s, xaxis, &lg)) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
        goto out;
    }
    if ((rc = open_out(dir, s->name, "dat", &out->dat, e)))
        goto out;
    if (lines)
        dat_lines(out->dat.f, s, r, xaxis, &lg);
    else
        dat_bars(out->dat.f, s, r);
    if ((rc = open_out(dir, s->name, "gp", &out->gp, e)))
        goto out;
    gp_script(out->gp.f, s, lines, &lg, xaxis);
out:
    free(lg.name);
    free(lg.series);
    return rc;
}

static const char *base_name(const char *path)
{
    const char *sl = strrchr(path, '/');
    return sl ? sl + 1 : path;
}

/* Runs gnuplot on the report's script inside dir, reading the data and
 * writing the plots under their temporary names (w->png and w->svg are
 * committed with the other files); 0 when it succeeded. */
static int render(const zs_spec *s, const zs_report_opts *o, outputs *w, char *note, size_t n)
{
    char log[1200], vars[600], png[1200], svg[1200];
    snprintf(log, sizeof log, "%s/%s.gnuplot.log", o->out_dir, s->name);
    snprintf(png, sizeof png, "%s/%s.png", o->out_dir, s->name);
    snprintf(svg, sizeof svg, "%s/%s.svg", o->out_dir, s->name);
    zs_err e;
    if (zs_afile_flush(&w->dat, &e) || zs_afile_flush(&w->gp, &e) ||
        zs_afile_reserve(&w->png, png, &e) || zs_afile_reserve(&w->svg, svg, &e)) {
        zs_afile_abort(&w->png);
        snprintf(note, n, "cannot write the plot: %s: %s", e.where, e.what);
        return -1;
    }
    snprintf(vars, sizeof vars, "dat='%s'; out_png='%s'; out_svg='%s'", base_name(w->dat.tmp),
             base_name(w->png.tmp), base_name(w->svg.tmp));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        snprintf(note, n, "cannot start gnuplot: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (chdir(o->out_dir) == 0)
            execlp(o->gnuplot, o->gnuplot, "-e", vars, base_name(w->gp.tmp), (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        unlink(log);
        return 0;
    }
    zs_afile_abort(&w->png);
    zs_afile_abort(&w->svg);
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 127)
        snprintf(note, n,
                 "gnuplot was not found (install the Debian package gnuplot-nox), "
                 "so the plot was not rendered; the script is %s.gp",
                 s->name);
    else if (pid > 0)
        snprintf(note, n, "gnuplot failed (see %s); the script is %s.gp", log, s->name);
    return -1;
}

/* Every point's stored row, counted into st. */
static int read_rows(const zs_spec *s, zs_db *db, report_rows *r, zs_report_stats *st, zs_err *e)
{
    r->rows = calloc((size_t)s->npoints + 1, sizeof *r->rows);
    r->found = calloc((size_t)s->npoints + 1, sizeof *r->found);
    if (!r->rows || !r->found)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    int rc = ZS_OK;
    for (int i = 0; i < s->npoints && !rc; i++) {
        char key[4096];
        rc = zs_db_key(&s->points[i].cfg, key, sizeof key, e);
        if (!rc)
            rc = zs_db_get(db, key, &r->rows[i], &r->found[i], e);
        if (!r->found[i])
            st->missing++;
        else if (!r->rows[i].ok)
            st->failed++;
        else
            st->stored++;
    }
    return rc;
}

static void md_head(FILE *f, const zs_spec *s, const zs_report_stats *st)
{
    fprintf(f, "# ");
    md(f, s->title);
    fprintf(f, "\n\n");
    if (s->description[0])
        fprintf(f, "%s\n\n", s->description);
    fprintf(f,
            "Written by `zepsim experiment report` from spec `%s` with zepsim %s. Every number "
            "below is a stored run; its full configuration is in the results database "
            "(`zepsim db query \"SELECT config FROM results WHERE spec = '%s'\"`).\n\n",
            s->name, ZS_VERSION, s->name);
    fprintf(f, "Points: %d in the spec, %d stored, %d failed, %d not run yet%s.\n\n", s->npoints,
            st->stored, st->failed, st->missing,
            st->missing ? " (run `zepsim experiment run` on the spec)" : "");
    if (st->plotted)
        fprintf(f, "![%s](%s.png)\n\n[SVG](%s.svg) · [data](%s.dat) · [gnuplot script](%s.gp)\n\n",
                s->name, s->name, s->name, s->name, s->name);
    else
        fprintf(f, "Plot: %s.\n\n", st->plot_note);
    if (s->nassumptions) {
        fprintf(f, "## Assumptions\n\n");
        for (int i = 0; i < s->nassumptions; i++)
            fprintf(f, "- %s\n", s->assumptions[i]);
        fputc('\n', f);
    }
}

static void md_paper(FILE *f, const zs_spec *s, const report_rows *r)
{
    if (!s->npaper)
        return;
    fprintf(f, "## Paper vs ours\n\n| what | series | ours | paper | ours / paper | points "
               "| source, note |\n|---|---|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < s->npaper; i++) {
        const zs_spec_paper *p = &s->paper[i];
        int n, nm;
        double v = paper_ours(s, r->rows, r->found, p, &n, &nm);
        char ours[64], paper[64] = "not published", ratio[64] = "—";
        fmt_metric(p->metric, v, ours, sizeof ours);
        if (p->has_value) {
            fmt_metric(p->metric, p->value, paper, sizeof paper);
            if (!isnan(v) && p->value != 0)
                snprintf(ratio, sizeof ratio, "%.2f", v / p->value);
        }
        fputs("| ", f);
        md(f, p->what);
        fputs(" | ", f);
        md(f, p->series);
        fprintf(f, " | %s | %s | %s | %d/%d | ", ours, paper, ratio, n, nm);
        md(f, p->source);
        if (p->source[0] && p->note[0])
            fputs("; ", f);
        md(f, p->note);
        fputs(" |\n", f);
    }
    fprintf(f,
            "\n`ours` aggregates (%s) the metric over the matching points that ran; "
            "`points` is ran/matching.\n\n",
            "value, mean, geomean, min or max as the entry says");
}

static void md_results(FILE *f, const zs_spec *s, const report_rows *r)
{
    fprintf(f,
            "## Results\n\n| case | series | tokens/s | tokens/iteration | iteration (ms) | "
            "speedup%s%s | MFU | exposed comm | max NIC util | attn imbalance | imbalance degree "
            "| status |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
            s->baseline >= 0 ? " over " : "", s->baseline >= 0 ? s->series[s->baseline].label : "");
    static const char *const cols[] = {
        "tokens_per_s",  "tokens_per_iter", "iter_time_ms",   "speedup",         "mfu",
        "exposed_share", "max_nic_util",    "attn_imbalance", "imbalance_degree"};
    for (int i = 0; i < s->npoints; i++) {
        const zs_spec_point *p = &s->points[i];
        fputs("| ", f);
        md(f, s->cases[p->case_idx].label);
        fputs(" | ", f);
        md(f, s->series[p->series_idx].label);
        for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
            char b[64];
            fmt_metric(cols[k], zs_report_metric(s, r->rows, r->found, i, cols[k]), b, sizeof b);
            fprintf(f, " | %s", b);
        }
        fputs(" | ", f);
        if (!r->found[i])
            fputs("not run", f);
        else if (!r->rows[i].ok) {
            fputs("failed: ", f);
            md(f, r->rows[i].error);
        } else
            fputs("ok", f);
        fputs(" |\n", f);
    }
}

static void md_config(FILE *f, const zs_spec *s)
{
    fprintf(f, "\n## Configuration\n\nFirst point: ");
    cfg_line(f, &s->points[0].cfg);
    fprintf(f, ".\n\n");
    for (int a = 0; a < s->naxes; a++) {
        fprintf(f, "- sweep `%s`:", s->axis_name[a]);
        int nv = 0;
        for (int c = 0; c < s->ncases; c++) {
            int seen = 0;
            for (int c2 = 0; c2 < c; c2++)
                seen |= !strcmp(s->cases[c2].axis[a], s->cases[c].axis[a]);
            if (!seen && s->cases[c].axis[a][0]) {
                fprintf(f, "%s %s", nv++ ? "," : "", s->cases[c].axis[a]);
            }
        }
        fputc('\n', f);
    }
    for (int k = 0; k < s->nseries; k++) {
        const zs_point_cfg *c = &s->points[k].cfg;
        fprintf(f, "- series `");
        md(f, s->series[k].label);
        fprintf(f, "`: method `%s`%s%s%s\n", c->method, c->opts[0] ? ", options `" : "", c->opts,
                c->opts[0] ? "`" : "");
    }
}

/* The approximations behind the numbers, each stated once. */
static void md_models(FILE *f, const zs_spec *s, const report_rows *r)
{
    fprintf(f, "\n## Models and approximations\n\n");
    int any = 0;
    for (int i = 0; i < s->npoints; i++) {
        if (!r->found[i] || !r->rows[i].ok)
            continue;
        const char *txt[2] = {r->rows[i].r.cost_desc, r->rows[i].backend_notes};
        const char *pre[2] = {"cost model", "backend"};
        for (int t = 0; t < 2; t++) {
            if (!txt[t][0])
                continue;
            int seen = 0;
            for (int j = 0; j < i && !seen; j++)
                if (r->found[j] && r->rows[j].ok)
                    seen = !strcmp(t ? r->rows[j].backend_notes : r->rows[j].r.cost_desc, txt[t]);
            if (seen)
                continue;
            fprintf(f, "- %s: ", pre[t]);
            md(f, txt[t]);
            fputc('\n', f);
            any = 1;
        }
    }
    if (!any)
        fprintf(f, "- (no stored points)\n");
}

int zs_report_write(const zs_spec *s, zs_db *db, const zs_report_opts *o, zs_report_stats *st,
                    zs_err *e)
{
    memset(st, 0, sizeof *st);
    st->points = s->npoints;
    report_rows r = {NULL, NULL};
    outputs w;
    memset(&w, 0, sizeof w);
    int rc = read_rows(s, db, &r, st, e);
    if (rc)
        goto out;
    if (mkdir(o->out_dir, 0777) && errno != EEXIST) {
        rc = zs_err_set(e, ZS_EIO, o->out_dir, "check the parent folder exists",
                        "cannot create the report folder: %s", strerror(errno));
        goto out;
    }
    if ((rc = write_plot(s, &r, o->out_dir, &w, e)))
        goto out;
    if (o->plot)
        st->plotted = render(s, o, &w, st->plot_note, sizeof st->plot_note) == 0;
    else
        snprintf(st->plot_note, sizeof st->plot_note,
                 "rendering was not requested (--no-plot); the script is %s.gp", s->name);
    snprintf(st->md_path, sizeof st->md_path, "%s/%s.md", o->out_dir, s->name);
    if ((rc = open_out(o->out_dir, s->name, "md", &w.md, e)))
        goto out;
    md_head(w.md.f, s, st);
    md_paper(w.md.f, s, &r);
    md_results(w.md.f, s, &r);
    md_config(w.md.f, s);
    md_models(w.md.f, s, &r);
    rc = outputs_commit(&w, e);
out:
    outputs_abort(&w); /* a no-op once committed */
    free(r.rows);
    free(r.found);
    return rc;
}
