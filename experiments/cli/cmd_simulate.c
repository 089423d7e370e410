/* `zepsim simulate --method NAME ...`: one method, N iterations, on the
 * SimGrid backend (or the analytic one): the result row of zs_cols.h (the
 * same columns as `compare`), the last iteration's breakdown and, with
 * --ranks, the per-rank times. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "cli_point.h"
#include "zs_cols.h"
#include "zs_point_advice.h"
#include "zs_progress.h"
#include "zs_workers.h"

static void progress(void *arg, int done, int total)
{
    zs_progress *pg = arg;
    char st[96];
    snprintf(st, sizeof st, "iteration %d/%d done", done, total);
    /* a line per iteration off a terminal, but at most one per 10 s
     * between the first and the last */
    zs_progress_report(pg, zs_progress_now(), (double)done / total, done == 1 || done == total, st);
}

static void workers_progress(void *arg, const zs_work_point *pts, int n, int step, int finished)
{
    if (pts[0].rc)
        return; /* a failed iteration is not "done": its error follows */
    if (step) {
        progress(arg, pts[0].done, pts[0].cfg.iterations);
        return;
    }
    char st[96];
    snprintf(st, sizeof st, "iteration %d/%d done, %d running", pts[0].done, pts[0].cfg.iterations,
             pts[0].running);
    zs_progress_report(arg, zs_progress_now(), (double)pts[0].done / pts[0].cfg.iterations, 0, st);
}

/* The point's iterations: several at once on `jobs` workers
 * (zs_workers.h: the same figures as one after the other), else in order. */
static int run_point(const zs_point_cfg *p, int jobs, zs_progress *pg, zs_point_result *r,
                     zs_err *e)
{
    if (jobs <= 1 || p->iterations <= 1)
        return zs_point_run(p, progress, pg, r, e);
    zs_work_point pt;
    memset(&pt, 0, sizeof pt);
    pt.cfg = *p;
    pt.want_last = 1;
    int rc = zs_workers_run(&pt, 1, jobs, workers_progress, pg, e);
    if (!rc && pt.rc) {
        *e = pt.err;
        rc = pt.rc;
    }
    if (!rc)
        *r = pt.r;
    return rc;
}

/* The result row for people: one line per column, with its unit. */
static zs_table *vertical(const zs_rrow *row)
{
    zs_table *w = zs_table_new(NULL), *t = zs_table_new(NULL);
    zs_rcols_add(w, 0);
    zs_rcols_row(w, row);
    zs_table_col(t, "key", 0);
    zs_table_col(t, "value", ZS_COL_NUM);
    zs_table_col(t, "unit", 0);
    for (int c = 0; c < zs_table_ncols(w); c++) {
        const zs_rcol *rc = zs_rcol_find(zs_table_colname(w, c));
        if (!rc || rc->config || zs_table_kind(w, 0, c) != ZS_CELL_NUM)
            continue;
        zs_table_row(t);
        zs_table_set(t, 0, "%s", rc->name);
        zs_table_set(t, 1, "%s", zs_table_text(w, 0, c));
        zs_table_set(t, 2, "%s", rc->unit);
    }
    zs_table_free(w);
    return t;
}

/* The last iteration: its summary, the slowest rank, the backend's and
 * the planner's notes (people); its per-rank times (--ranks). */
static void last_iteration(zs_output *d, const zs_point_result *r, int ranks)
{
    if (!r->last)
        return;
    if (zs_output_format(d) == ZS_FMT_TABLE) {
        zs_table *l = zs_table_kv_new("last iteration:");
        zs_result_summary(r->last, l);
        zs_output_table(d, "last_iteration", l);
        zs_output_text(d, "\n");
        zs_result_print_text(r->last, stdout);
        if (r->notes[0])
            zs_output_text(d, "planner: %s\n", r->notes);
    } else {
        if (r->last->notes[0])
            zs_output_note(d, "%s backend: %s", r->last->backend, r->last->notes);
        if (r->notes[0])
            zs_output_note(d, "planner: %s", r->notes);
    }
    if (ranks) {
        zs_table *rt = zs_table_new(zs_output_format(d) == ZS_FMT_TABLE ? "per rank (ms):" : NULL);
        const char *cols[] = {"rank",    "compute_ms", "exposed_ms",     "idle_ms",
                              "comm_ms", "end_ms",     "interference_ms"};
        for (int i = 0; i < (r->last->interference ? 7 : 6); i++)
            zs_table_col(rt, cols[i], 1);
        zs_result_ranks(r->last, rt);
        zs_output_table(d, "ranks", rt);
    }
}

int zs_cmd_simulate(int argc, char **argv)
{
    static const zs_cli_use more[] = {
        {ZS_F_QUIET, NULL},
        {ZS_F_RANKS, "the last iteration's"},
        {ZS_F_JOBS, "iterations simulated at once, each in a worker process of its own, with "
                    "the same figures as one after the other (default: CPUs; 1: in order, in "
                    "the least memory)"},
        {0, NULL}};
    zs_cli_use uses[ZS_CLI_MAX_OPTS];
    zs_cli_point_uses(NULL, more, uses);
    const zs_cli_cmd cmd = {.name = "simulate",
                            .head =
                                "usage: zepsim simulate --method NAME [options]\n\n"
                                "Plans N global batches with one method and runs each schedule on "
                                "the\nsimulator; prints throughput, MFU and the per-rank breakdown "
                                "(the result\ncolumns of `zepsim compare`: `zepsim list "
                                "columns`).\n\noptions:\n",
                            .uses = uses};
    zs_cli_flags fl;
    int st = zs_cli_parse(&cmd, argc, argv, NULL, &fl);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    int ranks = fl.ranks;
    long jobs = fl.jobs ? fl.jobs : sysconf(_SC_NPROCESSORS_ONLN);
    zs_point_cfg p = fl.p;
    zs_format fmt = fl.fmt;
    int quiet = fl.quiet;
    if (optind < argc)
        return zs_cli_usage_error("simulate", "unexpected argument '%s'", argv[optind]);
    int nodes, gpus;
    if (zs_cli_point_size(&p, &nodes, &gpus, &e))
        return zs_cli_fail(&e);
    zs_progress pg;
    char what[96];
    snprintf(what, sizeof what, "simulate %s", p.method);
    zs_progress_init(&pg, zs_cli_progress_file(quiet), isatty(STDERR_FILENO), what,
                     zs_progress_now());
    zs_point_result r;
    int rc = run_point(&p, (int)jobs, &pg, &r, &e);
    zs_progress_end(&pg);
    char advice[512];
    if (rc && zs_point_advice(&p, advice, sizeof advice))
        snprintf(e.fix, sizeof e.fix, "%s", advice);
    if (rc)
        return zs_cli_fail(&e);
    zs_output *d = zs_output_new("simulate", fmt, stdout);
    if (!d) {
        zs_point_result_clear(&r);
        return zs_cli_doc_end(NULL);
    }
    zs_cli_point_print_cfg(d, &p, nodes, r.cost_desc);
    zs_output_text(d, "# method %s\n", p.method);
    zs_rrow row = {&p, nodes, gpus, &r, NULL, NAN};
    if (fmt == ZS_FMT_TABLE) {
        zs_output_table(d, "results", vertical(&row)); /* why: the slowest rank, below */
    } else {
        zs_table *t = zs_table_new(NULL);
        zs_rcols_add(t, 0);
        zs_rcols_row(t, &row);
        zs_rcols_units(d);
        zs_output_table(d, "results", t);
    }
    last_iteration(d, &r, ranks);
    if (p.timeline[0] && r.last)
        zs_cli_timeline_done(zs_output_human(d), NULL, p.timeline, r.last->timeline_bytes,
                             r.last->timeline_subset);
    zs_point_result_clear(&r);
    return zs_cli_doc_end(d);
}
