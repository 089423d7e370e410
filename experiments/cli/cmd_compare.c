/* `zepsim compare`: the main job. Runs the same study (model, cluster,
 * trace, context, iterations, seed) for several methods, each iteration
 * of each method in a worker process of its own (zs_workers.h), and prints
 * one table (the result
 * columns of zs_cols.h: tokens/s, tokens per iteration, iteration time,
 * speedup over the baseline, MFU, where the time goes, NIC use, peak
 * memory per GPU, imbalance), a verdict (the fastest method, its margin,
 * why each method's slowest rank was slowest) and notes on figures out of
 * their range; then draws the chart (tokens/s; busy / exposed / idle) with
 * gnuplot. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_point.h"
#include "zs_afile.h"
#include "zs_backend.h"
#include "zs_cols.h"
#include "zs_planner.h"
#include "zs_progress.h"
#include "zs_verdict.h"
#include "zs_workers.h"

#define MAX_METHODS 16

static const char default_methods[] = "te-cp,llama-cp,hybrid-dp,ulysses,usp,zeppelin,auto";

static int split_methods(char *list, char **out, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        /* "te-cp, zeppelin" (as people write lists): blanks around a name go */
        t += strspn(t, " \t");
        size_t len = strlen(t);
        while (len && (t[len - 1] == ' ' || t[len - 1] == '\t'))
            t[--len] = '\0';
        if (!len)
            continue;
        if (n == max)
            return -1;
        out[n++] = t;
    }
    return n;
}

/* Progress: methods done, and the iterations of those running. */
static void report(void *arg, const zs_work_point *pts, int n, int step, int finished)
{
    zs_progress *pg = arg;
    char st[512];
    double frac = 0;
    int nfin = 0;
    for (int i = 0; i < n; i++)
        nfin += pts[i].finished;
    size_t o = (size_t)snprintf(st, sizeof st, "%d/%d methods done", nfin, n);
    if (finished >= 0)
        o += (size_t)snprintf(st + o, sizeof st - o, " (%s finished)", pts[finished].cfg.method);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const zs_work_point *p = &pts[i];
        frac += p->finished ? 1.0 : (double)p->done / p->cfg.iterations;
        if (p->running > 0 && o < sizeof st)
            o += (size_t)snprintf(st + o, sizeof st - o, "%s %s %d/%d", k++ ? "," : "; running",
                                  p->cfg.method, p->done, p->cfg.iterations);
    }
    zs_progress_report(pg, zs_progress_now(), frac / n, step && finished >= 0, st);
}

/* Whether every method failed on the command line (a usage error, such as
 * a group that does not divide the GPUs): then nothing ran and the table
 * would only list failures, so the errors are printed (once when they
 * agree) for an exit status of 2. A method that does not fit is not one:
 * the table says which options make it fit, per method. */
static int all_bad_input(const char *const *methods, const zs_work_point *res, int n)
{
    int same = 1;
    for (int i = 0; i < n; i++) {
        if (res[i].rc != ZS_EUSAGE)
            return 0;
        same = same && !strcmp(res[i].err.what, res[0].err.what) &&
               !strcmp(res[i].err.where, res[0].err.where);
    }
    for (int i = 0; i < (same ? 1 : n); i++) {
        if (!same)
            fprintf(stderr, "%s: ", methods[i]);
        zs_err_print(stderr, &res[i].err);
    }
    return 1;
}

typedef struct compare_args {
    zs_point_cfg p;
    zs_format fmt;
    char mlist[512];
    const char *methods[MAX_METHODS]; /* the registry's spelling */
    int n;
    const char *plot_path;
    char baseline[64];
    long jobs;
    int quiet;
    char tl[MAX_METHODS][512]; /* per-method timeline files (several methods) */
    int nodes, gpus;           /* the cluster's size as run */
} compare_args;

/* one method per run here: --methods */
static const zs_popt_row skip[] = {ZS_P_METHOD, ZS_P_COUNT};

static const char compare_help[] =
    "usage: zepsim compare [options]\n\n"
    "Simulates the same study for several methods and prints a comparison\n"
    "table (the default study: cluster-a, 16 nodes, llama-7b, arxiv, 256K\n"
    "tokens per 16-GPU context group, 3 iterations, seed 1).\n\n"
    "options:\n";

/* compare's own options */
static const zs_opt_spec compare_own[] = {
    ZS_OPT_ROW("methods", ZS_OPT_STR, compare_args, mlist, 0, 0, default_methods, "A,B,...",
               "methods to compare, any case"),
    ZS_OPT_ROW("baseline", ZS_OPT_STR, compare_args, baseline, 0, 0, "te-cp", "NAME",
               "speedups are over this method"),
    ZS_OPT_ROW("chart", ZS_OPT_TEXT, compare_args, plot_path, 0, 0, "zepsim-compare.png",
               "FILE.png|FILE.svg|FILE.pdf|none",
               "chart of tokens/s and of the iteration time split into busy / exposed / idle, "
               "labelled as the table prints them, in the format the extension names (--plot is "
               "the same option)"),
};
static const zs_cli_use compare_more[] = {
    {ZS_F_QUIET, NULL},
    {ZS_F_JOBS, "each simulating one iteration of one method at a time (default: CPUs)"},
    {ZS_F_PLOT, "as --chart"},
    {0, NULL}};

/* Each method's timeline file: T.json -> T.METHOD.json (also .json.gz,
 * .gz; other names get .METHOD appended), so no two workers ever write one
 * file, whatever --jobs. */
static int timeline_names(compare_args *a, zs_err *e)
{
    static const char *const exts[] = {".json.gz", ".json", ".gz"};
    const char *t = a->p.timeline;
    size_t len = strlen(t), stem = len;
    const char *ext = "";
    for (int k = 0; k < 3; k++) {
        size_t el = strlen(exts[k]);
        if (len > el && !strcmp(t + len - el, exts[k])) {
            stem = len - el;
            ext = exts[k];
            break;
        }
    }
    for (int i = 0; i < a->n; i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(a->methods[i], a->methods[j]))
                return zs_err_set(e, ZS_EUSAGE, "--methods", "list each method once",
                                  "method '%s' is listed twice (each writes its own timeline)",
                                  a->methods[i]);
        int k = snprintf(a->tl[i], sizeof a->tl[i], "%.*s.%s%s", (int)stem, t, a->methods[i], ext);
        if (k < 0 || (size_t)k >= sizeof a->tl[i])
            return zs_err_set(e, ZS_EUSAGE, "--timeline", "use a shorter file name",
                              "timeline name too long");
    }
    return ZS_OK;
}

/* Every method name resolves (any case, to the registry's spelling)
 * before anything runs; so does the baseline. */
static int resolve_methods(compare_args *a, zs_err *e)
{
    char *names[MAX_METHODS];
    a->n = split_methods(a->mlist, names, MAX_METHODS);
    if (a->n <= 0)
        return zs_err_set(e, ZS_EUSAGE, "--methods", "give 1 to 16 methods, comma-separated",
                          "bad method list");
    for (int i = 0; i < a->n; i++) {
        const zs_planner_ops *pl;
        if (zs_planner_lookup(names[i], "--methods", &pl, e))
            return ZS_EUSAGE;
        a->methods[i] = pl->name;
    }
    const zs_planner_ops *pl;
    if (zs_planner_lookup(a->baseline, "--baseline", &pl, e))
        return ZS_EUSAGE;
    snprintf(a->baseline, sizeof a->baseline, "%s", pl->name);
    if (a->p.timeline[0] && a->n > 1)
        return timeline_names(a, e);
    return ZS_OK;
}

/* -1: parsed; otherwise the exit status. */
static int parse_args(int argc, char **argv, compare_args *a)
{
    zs_cli_use uses[ZS_CLI_MAX_OPTS];
    zs_cli_point_uses(skip, compare_more, uses);
    const zs_cli_cmd cmd = {
        .name = "compare", .head = compare_help, ZS_CLI_OWN_ROWS(compare_own), .uses = uses};
    zs_cli_flags fl;
    int st = zs_cli_parse(&cmd, argc, argv, a, &fl);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    if (fl.plot)
        a->plot_path = fl.plot;
    if (fl.jobs)
        a->jobs = fl.jobs;
    a->p = fl.p;
    a->fmt = fl.fmt;
    a->quiet = fl.quiet;
    if (optind < argc)
        return zs_cli_usage_error("compare", "unexpected argument '%s'", argv[optind]);
    if (resolve_methods(a, &e) || zs_cli_plot_check(a->plot_path, &e) ||
        zs_cli_point_size(&a->p, &a->nodes, &a->gpus, &e))
        return zs_cli_fail(&e);
    return -1;
}

/* Method i's row of the results (p and err hold what it points to). */
static zs_rrow result_row(const compare_args *a, const zs_work_point *res, int i, int base,
                          zs_point_cfg *p, char *err, size_t nerr)
{
    *p = a->p;
    snprintf(p->method, sizeof p->method, "%s", a->methods[i]);
    const zs_point_result *r = res[i].rc == ZS_OK ? &res[i].r : NULL;
    zs_err_format(&res[i].err, err, nerr);
    zs_rrow row = {p, a->nodes, a->gpus, r, err, NAN};
    if (r && base >= 0 && res[base].r.tokens_per_s > 0)
        row.speedup = r->tokens_per_s / res[base].r.tokens_per_s;
    return row;
}

/* The results: every column in csv and json, compare's set for people. */
static void print_table(zs_output *d, const compare_args *a, const zs_work_point *res, int base)
{
    int human = zs_output_format(d) == ZS_FMT_TABLE;
    zs_table *t = zs_table_new(NULL);
    zs_rcols_add(t, human);
    zs_rcols_units(d);
    for (int i = 0; i < a->n; i++) {
        zs_point_cfg p;
        char err[1600];
        zs_rrow row = result_row(a, res, i, base, &p, err, sizeof err);
        zs_rcols_row(t, &row);
    }
    zs_output_table(d, "results", t);
}

/* The verdict line, the slowest rank's reason per method, and the notes
 * on figures out of their range. */
static void print_verdict(zs_output *d, const compare_args *a, const zs_work_point *res, int base)
{
    const zs_point_result *r[MAX_METHODS];
    for (int i = 0; i < a->n; i++)
        r[i] = res[i].rc == ZS_OK ? &res[i].r : NULL;
    zs_verdict v;
    zs_verdict_make(a->methods, r, a->n, base, &v);
    if (v.fastest >= 0) {
        zs_output_text(d, "%s\n", v.line);
        zs_output_set_text(d, "verdict", "fastest", a->methods[v.fastest]);
        zs_output_set_num(d, "verdict", "tokens_per_s", r[v.fastest]->tokens_per_s);
        zs_output_set_text(d, "verdict", "runner_up", v.second >= 0 ? a->methods[v.second] : NULL);
        zs_output_set_num(d, "verdict", "margin_pct", v.margin_pct);
        zs_output_set_text(d, "verdict", "text", v.line);
    }
    zs_output_text(d, "why (each method's slowest rank in the last iteration):\n");
    for (int i = 0; i < a->n; i++) {
        /* a failure says why in its own line: the error on stderr may be
         * far away, or in another file */
        char err[1600] = "";
        if (!r[i])
            zs_err_format(&res[i].err, err, sizeof err);
        zs_output_text(d, "  %-10s %s%s\n", a->methods[i],
                       r[i] ? (r[i]->why[0] ? r[i]->why : "-") : "failed: ", err);
    }
    char note[1200];
    if (zs_verdict_nic_note(a->methods, r, a->n, a->p.backend, note, sizeof note))
        zs_output_note(d, "%s", note);
}

/* Each method's planner notes on the last iteration, as simulate prints
 * them: what the planner decided (a routing it turned off by itself, say,
 * which is why `--no-routing` can change nothing). */
static void print_planner(zs_output *d, const compare_args *a, const zs_work_point *res)
{
    int any = 0;
    for (int i = 0; i < a->n; i++)
        any |= res[i].rc == ZS_OK && res[i].r.notes[0];
    if (!any)
        return;
    if (zs_output_format(d) == ZS_FMT_TABLE)
        zs_output_text(d, "planner (each method's notes on the last iteration):\n");
    for (int i = 0; i < a->n; i++) {
        if (res[i].rc != ZS_OK || !res[i].r.notes[0])
            continue;
        if (zs_output_format(d) == ZS_FMT_TABLE)
            zs_output_text(d, "  %-10s %s\n", a->methods[i], res[i].r.notes);
        else
            zs_output_note(d, "planner: %s: %s", a->methods[i], res[i].r.notes);
    }
}

static void print_notes(zs_output *d, const compare_args *a, const zs_work_point *res, int base)
{
    if (base < 0)
        zs_output_note(d, "no speedups: the baseline '%s' is not among the methods that ran",
                       a->baseline);
    double cap = 0;
    for (int i = 0; i < a->n; i++)
        if (res[i].rc == ZS_OK && res[i].r.mem_capacity > 0)
            cap = res[i].r.mem_capacity;
    zs_output_text(d,
                   "speedup = tokens_per_s over %s; tokens_per_iter = tokens trained per iteration "
                   "(methods that delay or cut documents train different amounts); busy / exposed "
                   "/ idle = mean share of the iteration a GPU computes / waits on its own "
                   "transfers / waits on other GPUs; max_nic = busiest NIC's busy share; "
                   "peak_mem_gib = one GPU's model state and activations (memory model estimate",
                   a->baseline);
    if (cap > 0)
        zs_output_text(d, "; %.1f GiB usable", cap / 1073741824.0);
    zs_output_text(d, "); attn_imbalance = max/mean attention work per GPU; `zepsim list columns` "
                      "explains every column\n");
    const zs_backend *b = zs_backend_find(a->p.backend);
    if (b && b->caveat)
        zs_output_note(d, "%s", b->caveat);
}

/* Where each method's timeline went (several methods: one file each). */
static void print_timelines(zs_output *d, const compare_args *a, const zs_work_point *res)
{
    int several = a->n > 1;
    zs_table *t = zs_output_format(d) == ZS_FMT_JSON ? zs_table_new(NULL) : NULL;
    if (t) {
        zs_table_col(t, "method", 0);
        zs_table_col(t, "path", 0);
        zs_table_col(t, "json_mb", 1);
    }
    for (int i = 0; i < a->n && a->p.timeline[0]; i++) {
        if (res[i].rc != ZS_OK)
            continue;
        const char *path = several ? a->tl[i] : a->p.timeline;
        zs_cli_timeline_done(zs_output_human(d), several ? a->methods[i] : NULL, path,
                             res[i].tl_bytes, res[i].tl_subset);
        if (t) {
            zs_table_row(t);
            zs_table_set(t, 0, "%s", a->methods[i]);
            zs_table_set(t, 1, "%s", path);
            zs_table_num(t, 2, "%.1f", res[i].tl_bytes / 1e6);
        }
    }
    if (t && zs_table_nrows(t))
        zs_output_table(d, "timelines", t);
    else
        zs_table_free(t);
}

/* What the chart draws: the methods that ran, with the table's own text
 * for every number it prints. */
typedef struct chart {
    const compare_args *a;
    const zs_work_point *res;
    int base, fastest, nok;
    char title[700];
} chart;

/* One line per method that ran: "method" tokens_per_s "its text" busy_ms
 * exposed_ms idle_ms iter_ms "its text" fastest. */
static void chart_data(FILE *f, const void *arg)
{
    const chart *c = arg;
    for (int i = 0; i < c->a->n; i++) {
        if (c->res[i].rc != ZS_OK)
            continue;
        zs_point_cfg p;
        char err[1600], tps[64], iter[64];
        zs_rrow row = result_row(c->a, c->res, i, c->base, &p, err, sizeof err);
        zs_rcol_human("tokens_per_s", &row, tps, sizeof tps);
        zs_rcol_human("iter_ms", &row, iter, sizeof iter);
        const zs_point_result *r = &c->res[i].r;
        double ms = r->iter_time * 1e3;
        fprintf(f, "\"%s\" %.17g \"%s\" %.17g %.17g %.17g %.17g \"%s\" %d\n", c->a->methods[i],
                r->tokens_per_s, tps, r->compute_share * ms, r->exposed_share * ms,
                r->idle_share * ms, ms, iter, i == c->fastest);
    }
}

/* Two panels: tokens/s with the fastest in its own colour, and the
 * iteration time split into busy / exposed / idle (the `why` lines'
 * explanation); headroom above the bars for their labels. */
static void chart_script(FILE *f, const char *out, const char *dat, const void *arg)
{
    const chart *c = arg;
    fprintf(f,
            "set output '%s'\nset multiplot layout 1,2 title \"%s\"\n"
            "set style fill solid 0.8 border -1\nset grid ytics\nset yrange [0:*]\n"
            "set offsets 0,0,graph 0.15,0\nset xrange [-0.6:%.1f]\n"
            "set xtics rotate by -30 nomirror\n"
            "set boxwidth 0.6\nunset key\nset title 'tokens/s (higher is better)'\n"
            "plot '%s' using 0:($9 > 0 ? $2 : 1/0):xtic(1) with boxes lc rgb '#d07020', "
            "'' using 0:($9 > 0 ? 1/0 : $2) with boxes lc rgb '#3070b0', "
            "'' using 0:2:3 with labels offset 0,0.7 font ',9'\n"
            "set title 'iteration time, ms: busy / exposed comm / idle'\n"
            "set key top left horizontal\nset style data histograms\n"
            "set style histogram rowstacked\nset boxwidth 0.6 relative\n"
            "plot '%s' using 4:xtic(1) title 'busy' lc rgb '#3070b0', "
            "'' using 5 title 'exposed' lc rgb '#d04040', '' using 6 title 'idle' lc rgb "
            "'#b0b0b0', '' using 0:7:8 with labels offset 0,0.7 font ',9' notitle\n"
            "unset multiplot\n",
            out, c->title, c->nok - 0.4, dat, dat);
}

static void draw(FILE *o, const compare_args *a, const zs_work_point *res, int ok, int base)
{
    if (strcmp(a->plot_path, "none") == 0 || ok == 0)
        return;
    const zs_point_cfg *p = &a->p;
    chart c = {a, res, base, -1, ok, ""};
    for (int i = 0; i < a->n; i++)
        if (res[i].rc == ZS_OK &&
            (c.fastest < 0 || res[i].r.tokens_per_s > res[c.fastest].r.tokens_per_s))
            c.fastest = i;
    snprintf(c.title, sizeof c.title, "%s on %s x%d, %s, %lld tokens per %d GPUs; fastest: %s",
             p->model, p->cluster, a->nodes, p->trace, (long long)p->context, p->group,
             a->methods[c.fastest]);
    int pr = zs_cli_gnuplot_draw(a->plot_path, 1200, 520, chart_data, chart_script, &c);
    char dat[1100];
    snprintf(dat, sizeof dat, "%s.dat", a->plot_path);
    remove(dat);
    if (pr == 0)
        fprintf(o, "chart: %s (tokens/s; iteration time as busy / exposed / idle)\n", a->plot_path);
    else if (pr == 1)
        fprintf(o, "no chart: gnuplot is not installed (scripts/setup installs it)\n");
    else
        fprintf(o, "no chart: gnuplot failed writing %s\n", a->plot_path);
}

int zs_cmd_compare(int argc, char **argv)
{
    compare_args a;
    memset(&a, 0, sizeof a);
    zs_point_cfg_default(&a.p);
    a.fmt = ZS_FMT_TABLE;
    a.jobs = sysconf(_SC_NPROCESSORS_ONLN);
    int st = parse_args(argc, argv, &a);
    if (st >= 0)
        return st;
    zs_work_point *res = calloc((size_t)a.n, sizeof *res);
    if (!res) {
        fprintf(stderr, "zepsim: out of memory\n");
        return 1;
    }
    for (int i = 0; i < a.n; i++) {
        res[i].cfg = a.p;
        snprintf(res[i].cfg.method, sizeof res[i].cfg.method, "%s", a.methods[i]);
        if (a.n > 1 && a.p.timeline[0])
            snprintf(res[i].cfg.timeline, sizeof res[i].cfg.timeline, "%s", a.tl[i]);
    }
    zs_progress pg;
    FILE *pf = zs_cli_progress_file(a.quiet);
    zs_progress_init(&pg, pf, pf && isatty(fileno(pf)), "compare", zs_progress_now());
    zs_err pe;
    zs_err_clear(&pe);
    int prc = zs_workers_run(res, a.n, (int)a.jobs, report, &pg, &pe);
    zs_progress_end(&pg);
    if (prc) {
        free(res);
        return zs_cli_fail(&pe);
    }
    if (all_bad_input(a.methods, res, a.n)) {
        free(res);
        return 2;
    }
    int base = -1, failed = 0;
    const char *cost_desc = "";
    for (int i = 0; i < a.n; i++) {
        if (res[i].rc == ZS_OK && !strcmp(a.methods[i], a.baseline))
            base = i;
        if (res[i].rc == ZS_OK)
            cost_desc = res[i].r.cost_desc;
        else
            failed++;
    }
    zs_output *d = zs_output_new("compare", a.fmt, stdout);
    if (!d) {
        free(res);
        return zs_cli_doc_end(NULL);
    }
    zs_cli_point_print_cfg(d, &a.p, a.nodes, cost_desc);
    print_table(d, &a, res, base);
    for (int i = 0; i < a.n; i++)
        if (res[i].rc != ZS_OK) {
            fprintf(stderr, "%s: ", a.methods[i]);
            zs_err_print(stderr, &res[i].err);
        }
    print_verdict(d, &a, res, base);
    print_planner(d, &a, res);
    print_notes(d, &a, res, base);
    print_timelines(d, &a, res);
    FILE *human = zs_output_human(d);
    int out = zs_cli_doc_end(d);
    draw(human, &a, res, a.n - failed, base);
    free(res);
    return out ? out : failed ? 1 : 0;
}
