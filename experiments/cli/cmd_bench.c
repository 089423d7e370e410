/* `zepsim bench <what>`: performance benchmarks (never tests: figures are
 * printed, not asserted). Subcommands:
 *   sim   a backend (SimGrid or analytic) on one training iteration of real
 *         plans (any method, planned as `zepsim simulate` plans them) at
 *         ZS_BENCH_SIM_GPUS (cli.h: every default size is written there
 *         once, for the code and the help texts): CPU seconds, peak RSS, ops and ops per second,
 *         medians with min/max over runs, each run in a fresh process, and
 *         the fitted scaling exponent of CPU time against the GPU count;
 *         with --fold off beside on, how far folding moves the results; on
 *         SimGrid, the transfers the run started against SimGrid's own
 *         floor for that many (zs_sim_floor.h), measured at the GPU count.
 *   plan  Zeppelin planning time for one global batch.
 *   floor SimGrid's own cost per transfer (cmd_bench_floor.c).
 * Other benchmarks add a row to the table at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_backend.h"
#include "zs_fork.h"
#include "zs_lengen.h"
#include "zs_point_env.h"
#include "zs_point_opts.h"
#include "zs_sim.h"
#include "zs_sim_floor.h"
#include "zs_sort.h"
#include "zs_plan_bench.h"

static const char bench_sim_help[] =
    "usage: zepsim bench sim [options]\n"
    "\n"
    "Times a backend on one training iteration of real plans: for each method and GPU\n"
    "count, one global batch is drawn and planned exactly as `zepsim simulate` does\n"
    "(cluster nodes = GPUs / GPUs per node), then run --runs times, each run in a fresh\n"
    "process. cpu_s is that process's user + system CPU time (the backend: platform,\n"
    "deadlock pre-check and run; planning is plan_s, outside it), medians with min and\n"
    "max; peak_rss_mb its peak resident set (the schedule included). ops counts every\n"
    "op of the iteration, ops_sim the ops the backend simulated (folding replays the\n"
    "rest), ops_per_s = ops_sim / cpu_s, eff_ops_per_s = ops / cpu_s. The scaling\n"
    "exponent b fits cpu_s = a * GPUs^b over the GPU counts (least squares in logs).\n"
    "With --fold listing off beside on or steady, vs_off_pct is the iteration time's\n"
    "difference from the unrolled run and shares_pp the largest difference of the mean\n"
    "compute / exposed / idle shares, in percentage points.\n"
    "\n"
    "Against SimGrid's floor (--backend sim): xfers counts the transfers the run\n"
    "started in SimGrid (messages, collective flows, and the zero-byte go / wake-up\n"
    "messages of collectives), xfers_across those between two nodes. After a GPU\n"
    "count's first runs, `zepsim bench floor` is measured at that count (--floor-runs\n"
    "processes, inside and across nodes, --floor-width, --floor-transfers), and\n"
    "floor_s = inside transfers x its us per transfer + across transfers x its us per\n"
    "transfer + go / wake-ups x the inside us per wake-up: what SimGrid alone costs\n"
    "for that many transfers; floor_us = floor_s / xfers; x_floor = cpu_s / floor_s.\n"
    "Empty on the analytic backend and with --floor-runs 0.\n"
    "\n"
    "options:\n";
/* After the study point's options (generated from its table). */
static const char bench_sim_help_tail[] =
    "\n"
    "CPU time is less sensitive to other load than wall time, but not immune: on a\n"
    "shared machine report the load (uptime) beside the figures.\n";

#define BENCH_MAX 16

typedef struct bench_out { /* what a run's process sends back */
    double iter, compute, exposed, idle;
    int64_t ops, replayed;
    int have_stats;  /* the SimGrid backend ran: st holds its transfers */
    zs_sim_stats st; /* zs_sim_last_stats */
} bench_out;

typedef struct bench_job {
    const zs_point_env *env;
    const zs_schedule *s;
    zs_fold_mode fold; /* also an index: off, on, steady */
} bench_job;

/* In the child: one run of the backend, nothing but the run. */
static int bench_child(void *arg, zs_fork_buf *out, zs_err *e)
{
    const bench_job *j = arg;
    zs_result *r = NULL;
    zs_backend_in in;
    zs_backend_in_init(&in, &j->env->mach.cluster, j->env->mach.cost);
    in.exec.fold = j->fold;
    int rc = j->env->backend->run_here(j->s, &in, &r, e);
    if (rc)
        return rc;
    bench_out o;
    memset(&o, 0, sizeof o);
    o.iter = r->iter_time;
    o.ops = r->ops_executed;
    o.replayed = r->ops_replayed;
    if (j->env->backend->engine_stats) { /* it ran in this process */
        j->env->backend->engine_stats(&o.st);
        o.have_stats = 1;
    }
    for (int k = 0; k < r->nranks && r->iter_time > 0; k++) {
        o.compute += r->ranks[k].compute / r->nranks / r->iter_time;
        o.exposed += r->ranks[k].exposed_comm / r->nranks / r->iter_time;
        o.idle += r->ranks[k].idle / r->nranks / r->iter_time;
    }
    zs_result_free(r);
    return zs_fork_buf_add(out, &o, sizeof o, e);
}

static int bench_run(const bench_job *j, bench_out *o, zs_child_usage *u, zs_err *e)
{
    zs_fork_buf b = {0};
    int rc = zs_fork_call("benchmark run", bench_child, (void *)j, &b, u, e);
    size_t pos = 0;
    if (rc == ZS_OK && zs_fork_buf_get(&b, &pos, o, sizeof *o))
        rc = zs_err_set(e, ZS_ERUNTIME, "benchmark run", NULL, "the run sent no result");
    zs_fork_buf_free(&b);
    return rc;
}

typedef struct bench_cfg {
    zs_point_cfg base;
    char methods[BENCH_MAX][64];
    int nmethods, gpus[BENCH_MAX], ngpus, folds[3], nfolds, runs;
    int floor_runs, floor_width; /* floor_runs 0: no floor */
    long floor_xfers;
} bench_cfg;

/* SimGrid's floor at one GPU count (zs_sim_floor.h), measured once. */
typedef struct bench_floor {
    int done;
    double us_in, us_across; /* CPU us per transfer, inside / across nodes */
    double wake_in;          /* CPU us per wake-up, inside nodes */
} bench_floor;

/* Measures the floor at the GPU count of cluster cl (nodes set) with
 * b's floor settings: inside nodes, and across them on the largest even
 * number of its nodes (the inside figure when it has one node). */
static int floor_measure(const bench_cfg *b, const zs_cluster *cl, bench_floor *fl, zs_err *e)
{
    int gpn = cl->gpus_per_node, gpus = zs_cluster_gpus(cl);
    zs_sim_floor_cfg f = {gpus - gpus % 2, 1, b->floor_width, 0};
    zs_sim_floor_out o;
    if (f.gpus < 2) { /* one GPU: no transfer to measure; the floor is not known */
        memset(fl, 0, sizeof *fl);
        fl->done = 1;
        return ZS_OK;
    }
    f.rounds = zs_sim_floor_rounds(f.gpus, f.width, b->floor_xfers);
    int rc = zs_sim_floor_measure(cl, &f, b->floor_runs, stderr, &o, NULL, NULL, e);
    if (rc)
        return rc;
    fl->us_in = o.comms > 0 ? 1e6 * o.cpu_s / (double)o.comms : 0;
    fl->wake_in = o.wakes > 0 ? 1e6 * o.cpu_s / (double)o.wakes : 0;
    fl->us_across = fl->us_in;
    if (cl->nodes >= 2) {
        f.gpus = cl->nodes / 2 * 2 * gpn;
        f.across = 1;
        f.rounds = zs_sim_floor_rounds(f.gpus, f.width, b->floor_xfers);
        if ((rc = zs_sim_floor_measure(cl, &f, b->floor_runs, stderr, &o, NULL, NULL, e)))
            return rc;
        fl->us_across = o.comms > 0 ? 1e6 * o.cpu_s / (double)o.comms : 0;
    }
    fl->done = 1;
    fprintf(stderr,
            "bench sim: SimGrid's floor at %d GPUs: %.3f us per transfer inside nodes, %.3f "
            "across, %.3f per wake-up\n",
            gpus, fl->us_in, fl->us_across, fl->wake_in);
    return ZS_OK;
}

/* The floor's seconds for the transfers of st (0 when unknown). */
static double floor_seconds(const bench_floor *fl, const zs_sim_stats *st)
{
    double across = (double)(st->p2p_across + st->flows_across);
    double inside = (double)(st->p2p + st->flows) - across;
    return 1e-6 * (inside * fl->us_in + across * fl->us_across + (double)st->signals * fl->wake_in);
}

static const char *fold_name(int f)
{
    return f == 0 ? "off" : f == 1 ? "on" : "steady";
}

/* One row per fold mode of (method, gpus); cpu[f] gets the medians. */
static int bench_point(const bench_cfg *b, int mi, int gi, zs_table *t, double cpu[3],
                       bench_floor *fl, zs_err *e)
{
    zs_point_cfg c = b->base;
    snprintf(c.method, sizeof c.method, "%s", b->methods[mi]);
    c.iterations = 1;
    zs_cluster cl;
    int rc = zs_cluster_load(c.cluster, 0, &cl, e);
    if (rc)
        return rc;
    if (b->gpus[gi] % cl.gpus_per_node)
        return zs_err_set(e, ZS_EINPUT, "--gpus", "use multiples of the GPUs per node",
                          "%d GPUs is not a whole number of %d-GPU nodes of %s", b->gpus[gi],
                          cl.gpus_per_node, cl.name);
    c.nodes = b->gpus[gi] / cl.gpus_per_node;
    zs_point_env *env = NULL;
    zs_batch *batch = NULL;
    zs_schedule *s = NULL;
    zs_plan_report rep;
    fprintf(stderr, "bench sim: %s at %d GPUs: planning\n", c.method, b->gpus[gi]);
    rc = zs_point_env_new(&c, &env, e);
    if (!rc)
        rc = zs_point_env_next(env, &batch, e);
    if (!rc && !batch)
        rc = zs_err_set(e, ZS_EINPUT, c.trace, "use a longer trace", "the trace is empty");
    if (!rc)
        rc = zs_point_env_plan(env, batch, &s, &rep, e);
    bench_out off = {0};
    int have_off = 0;
    for (int f = 0; f < b->nfolds && !rc; f++) {
        bench_job j = {env, s, b->folds[f]};
        double cpus[BENCH_MAX], rss = 0;
        bench_out o = {0};
        for (int k = 0; k < b->runs && !rc; k++) {
            fprintf(stderr, "bench sim: %s at %d GPUs, %s, fold %s: run %d/%d\n", c.method,
                    b->gpus[gi], env->backend->name, fold_name(j.fold), k + 1, b->runs);
            zs_child_usage u = {0, 0};
            rc = bench_run(&j, &o, &u, e);
            cpus[k] = u.cpu_s;
            rss = u.max_rss > rss ? u.max_rss : rss;
            /* each run's figures at once: a long sweep stopped early keeps them */
            if (!rc)
                fprintf(stderr,
                        "bench sim: %s at %d GPUs, %s, fold %s: run %d/%d took %.2f CPU s, "
                        "%.0f MB, iteration %.3f ms\n",
                        c.method, b->gpus[gi], env->backend->name, fold_name(j.fold), k + 1,
                        b->runs, u.cpu_s, u.max_rss / 1048576.0, o.iter * 1e3);
        }
        if (rc)
            break;
        if (j.fold == 0) {
            off = o;
            have_off = 1;
        }
        double med = zs_median(cpus, (size_t)b->runs); /* sorts: the ends are the extremes */
        cpu[j.fold] = med;
        int64_t sim_ops = o.ops - o.replayed;
        if (o.have_stats && b->floor_runs > 0 && !fl->done)
            rc = floor_measure(b, &env->mach.cluster, fl, e);
        if (rc)
            break;
        zs_table_row(t);
        zs_table_set(t, 0, "%s", c.method);
        zs_table_set(t, 1, "%d", b->gpus[gi]);
        zs_table_set(t, 2, "%s", env->backend->name);
        zs_table_set(t, 3, "%s", fold_name(j.fold));
        zs_table_num(t, 4, "%.3f", o.iter * 1e3);
        zs_table_num(t, 5, "%.2f", med);
        zs_table_num(t, 6, "%.2f", cpus[0]);
        zs_table_num(t, 7, "%.2f", cpus[b->runs - 1]);
        zs_table_num(t, 8, "%.0f", rss / 1048576.0);
        zs_table_set(t, 9, "%lld", (long long)o.ops);
        zs_table_set(t, 10, "%lld", (long long)sim_ops);
        zs_table_num(t, 11, "%.0f", med > 0 ? sim_ops / med : 0);
        zs_table_num(t, 12, "%.0f", med > 0 ? o.ops / med : 0);
        zs_table_num(t, 13, "%.2f", rep.plan_seconds);
        if (o.have_stats) {
            const zs_sim_stats *st = &o.st;
            int64_t xf = st->p2p + st->flows + st->signals;
            zs_table_set(t, 14, "%lld", (long long)xf);
            zs_table_set(t, 15, "%lld", (long long)(st->p2p_across + st->flows_across));
            double fs = fl->done ? floor_seconds(fl, st) : 0;
            if (fs > 0 && xf > 0) { /* else empty: no floor measured */
                zs_table_num(t, 16, "%.3f", 1e6 * fs / (double)xf);
                zs_table_num(t, 17, "%.3f", fs);
                zs_table_num(t, 18, "%.2f", med / fs);
            }
        }
        if (have_off && j.fold != 0 && off.iter > 0) {
            double d[3] = {o.compute - off.compute, o.exposed - off.exposed, o.idle - off.idle},
                   worst = 0;
            for (int q = 0; q < 3; q++)
                worst = fabs(d[q]) > worst ? fabs(d[q]) : worst;
            zs_table_num(t, 19, "%+.3f", 100.0 * (o.iter - off.iter) / off.iter);
            zs_table_num(t, 20, "%.2f", 100.0 * worst);
        }
    }
    zs_schedule_free(s);
    zs_batch_free(batch);
    zs_point_env_free(env);
    return rc;
}

/* b in cpu = a * gpus^b, least squares over the points with a time. */
static int fit_exponent(const int *gpus, const double *cpu, int n, double *b)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!(cpu[i] > 0))
            continue;
        double x = log(gpus[i]), y = log(cpu[i]);
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        m++;
    }
    double den = m * sxx - sx * sx;
    if (m < 2 || !(fabs(den) > 0))
        return 0;
    *b = (m * sxy - sx * sy) / den;
    return 1;
}

static int parse_folds(const char *s, bench_cfg *b, zs_err *e)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    b->nfolds = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int f = !strcmp(tok, "off") ? 0 : !strcmp(tok, "on") ? 1 : !strcmp(tok, "steady") ? 2 : -1;
        if (f < 0 || b->nfolds == 3)
            return zs_err_set(e, ZS_EINPUT, "--fold", "use off, on or steady, each once",
                              "bad fold mode list '%s'", s);
        b->folds[b->nfolds++] = f;
    }
    /* off first, so the others compare with it */
    for (int i = 1; i < b->nfolds; i++)
        if (b->folds[i] == 0) {
            b->folds[i] = b->folds[0];
            b->folds[0] = 0;
        }
    return b->nfolds ? ZS_OK
                     : zs_err_set(e, ZS_EINPUT, "--fold", "use off, on or steady", "empty list");
}

static int parse_methods(const char *s, bench_cfg *b, zs_err *e)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    b->nmethods = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (b->nmethods == BENCH_MAX)
            return zs_err_set(e, ZS_EINPUT, "--method", "give fewer methods",
                              "more than %d methods", BENCH_MAX);
        zs_point_cfg probe = b->base;
        int rc = zs_opt_parse(zs_popt_at(ZS_P_METHOD), tok, ZS_EINPUT, "--method", &probe, e);
        if (rc)
            return rc;
        snprintf(b->methods[b->nmethods++], sizeof b->methods[0], "%s", probe.method);
    }
    return ZS_OK;
}

/* bench sim's measuring phase: every (method, GPU count) point into one
 * table, printed, then the scaling exponents. */
static int bench_sim_run(const bench_cfg *bp, zs_format fmt, zs_err *e)
{
    bench_cfg b = *bp;
    char title[1200];
    snprintf(title, sizeof title,
             "zepsim bench sim: %s on %s, trace %s, %lld tokens per %d-GPU group, one iteration, "
             "medians of %d run(s), one process each; floor: medians of %d run(s), width %d, "
             "%ld transfers%s%s",
             b.base.model, b.base.cluster, b.base.trace, (long long)b.base.context, b.base.group,
             b.runs, b.floor_runs, b.floor_width, b.floor_xfers, b.base.opts[0] ? "; --opt " : "",
             b.base.opts);
    zs_table *t = zs_table_new(title);
    const char *cols[] = {"method",       "gpus",      "backend",       "fold",        "iter_ms",
                          "cpu_s",        "cpu_s_min", "cpu_s_max",     "peak_rss_mb", "ops",
                          "ops_sim",      "ops_per_s", "eff_ops_per_s", "plan_s",      "xfers",
                          "xfers_across", "floor_us",  "floor_s",       "x_floor",     "vs_off_pct",
                          "shares_pp"};
    for (int i = 0; i < 21; i++)
        zs_table_col(t, cols[i], i != 0 && i != 2 && i != 3);
    double cpu[BENCH_MAX][BENCH_MAX][3];
    memset(cpu, 0, sizeof cpu);
    bench_floor floors[BENCH_MAX]; /* per GPU count, measured once for all methods */
    memset(floors, 0, sizeof floors);
    int rc = ZS_OK;
    for (int m = 0; m < b.nmethods && !rc; m++)
        for (int g = 0; g < b.ngpus && !rc; g++)
            rc = bench_point(&b, m, g, t, cpu[m][g], &floors[g], e);
    if (rc == ZS_OK) {
        zs_table_print(t, stdout, fmt);
        for (int m = 0; m < b.nmethods && fmt == ZS_FMT_TABLE; m++)
            for (int f = 0; f < b.nfolds; f++) {
                double v[BENCH_MAX], ex;
                for (int g = 0; g < b.ngpus; g++)
                    v[g] = cpu[m][g][b.folds[f]];
                if (fit_exponent(b.gpus, v, b.ngpus, &ex))
                    printf("scaling: %s, fold %s: cpu_s ~ GPUs^%.2f\n", b.methods[m],
                           fold_name(b.folds[f]), ex);
            }
    }
    zs_table_free(t);
    return rc;
}

/* The study-point options bench sim takes, read through the option table. */
static const zs_cli_use sim_uses[] = {
    {ZS_FP(MODEL), NULL},     {ZS_FP(CLUSTER), NULL}, {ZS_FP(TRACE), NULL},
    {ZS_FP(CONTEXT), NULL},   {ZS_FP(GROUP), NULL},   {ZS_FP(SEED), NULL},
    {ZS_FP(RECOMPUTE), NULL}, {ZS_FP(ZERO), NULL},    {ZS_FP(BACKEND), NULL},
    {ZS_FP(OPT), NULL},       {ZS_F_FORMAT, NULL},    {0, NULL}};

/* bench sim's own options: lists of what to time, and the floor's size. */
typedef struct sim_args {
    const char *methods, *gpus, *folds;
    long runs, floor_runs, floor_width, floor_xfers;
} sim_args;

#define ROW(name, type, m, lo, hi, def, arg, help)                                                 \
    ZS_OPT_ROW(name, type, sim_args, m, lo, hi, def, arg, help)
static const zs_opt_spec sim_own[] = {
    /* lists: --method and --fold of simulate take one value */
    ROW("method", ZS_OPT_TEXT, methods, 0, 0, ZS_BENCH_SIM_METHODS, "LIST",
        "methods, comma-separated"),
    ROW("gpus", ZS_OPT_TEXT, gpus, 0, 0, ZS_BENCH_SIM_GPUS, "LIST", "GPU counts, comma-separated"),
    ROW("fold", ZS_OPT_TEXT, folds, 0, 0, "on", "LIST", "off, on, steady, comma-separated"),
    ROW("runs", ZS_OPT_INT, runs, 1, BENCH_MAX - 1, ZS_CLI_STR(ZS_BENCH_SIM_RUNS), "N",
        "runs per point"),
    ROW("floor-runs", ZS_OPT_INT, floor_runs, 0, ZS_SIM_FLOOR_RUNS_MAX,
        ZS_CLI_STR(ZS_BENCH_FLOOR_RUNS), "N", "runs of each floor, 0 to skip it"),
    ROW("floor-width", ZS_OPT_INT, floor_width, 1, ZS_SIM_FLOOR_WIDTH_MAX,
        ZS_CLI_STR(ZS_BENCH_FLOOR_WIDTH), "N", "the floor's messages each way per round"),
    ROW("floor-transfers", ZS_OPT_INT, floor_xfers, 1, 1000000000, ZS_CLI_STR(ZS_BENCH_FLOOR_XFERS),
        "N", "the floor's transfers per run, about"),
};
#undef ROW

static int bench_sim(int argc, char **argv)
{
    static const zs_cli_cmd cmd = {.name = "bench sim",
                                   .head = bench_sim_help,
                                   ZS_CLI_OWN_ROWS(sim_own),
                                   .uses = sim_uses,
                                   .tail = bench_sim_help_tail};
    sim_args a;
    zs_cli_flags fl;
    int rc = zs_cli_parse(&cmd, argc, argv, &a, &fl);
    if (rc >= 0)
        return rc;
    zs_err e;
    zs_err_clear(&e);
    bench_cfg b;
    memset(&b, 0, sizeof b);
    b.base = fl.p;
    zs_format fmt = fl.fmt;
    const char *methods = a.methods, *gpus = a.gpus, *folds = a.folds;
    long runs = a.runs, floor_runs = a.floor_runs, floor_width = a.floor_width,
         floor_xfers = a.floor_xfers;
    if (optind != argc)
        return zs_cli_usage_error("bench", "unexpected argument '%s'", argv[optind]);
    b.runs = (int)runs;
    b.floor_runs = (int)floor_runs;
    b.floor_width = (int)floor_width;
    b.floor_xfers = floor_xfers;
    if ((rc = parse_methods(methods, &b, &e)) ||
        (rc = zs_cli_parse_int_list("--gpus", gpus, 1 << 20, b.gpus, BENCH_MAX, &b.ngpus, &e)) ||
        (rc = parse_folds(folds, &b, &e)))
        return zs_cli_fail(&e);
    rc = bench_sim_run(&b, fmt, &e);
    return rc ? zs_cli_fail(&e) : 0;
}

/* `bench plan`: Zeppelin planning time for one global batch (decisions
 * alone, and the full planner with the schedule), best of --reps runs. */
/* A batch of about `tokens` tokens drawn from the generator spec `trace`
 * (e.g. "arxiv") with `seed`; the budget cuts the last document. */
static int bench_batch(const char *trace, int64_t tokens, uint64_t seed, zs_batch **out, zs_err *e)
{
    zs_lengen *g = NULL;
    int rc = zs_lengen_new(trace, seed, &g, e);
    if (rc)
        return rc;
    zs_batch *b = zs_batch_new(1024);
    while (b && b->tokens < tokens && !rc) {
        int32_t len = zs_lengen_next(g);
        if (b->tokens + len > tokens)
            len = (int32_t)(tokens - b->tokens);
        rc = zs_batch_push(b, len, -1);
    }
    zs_lengen_free(g);
    if (!b || rc) {
        zs_batch_free(b);
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    }
    *out = b;
    return ZS_OK;
}

static const char bench_plan_help[] =
    "usage: zepsim bench plan [options]\n\n"
    "Times a method's planning of one global batch (default: Zeppelin, " ZS_CLI_STR(
        ZS_BENCH_PLAN_GPUS) "\n"
                            "GPUs of cluster-a, llama-7b, " ZS_CLI_STR(
                                ZS_BENCH_PLAN_TOKENS_M) "M tokens): the decisions (Zeppelin:\n"
                                                        "crossovers, hierarchical partitioning, "
                                                        "remap plan; auto: prices and\n"
                                                        "search; other methods: none, empty) and "
                                                        "the full planner including the\n"
                                                        "schedule. Host wall time, best of --reps; "
                                                        "a benchmark, never a test.\n\n"
                                                        "options:\n";

typedef struct plan_args {
    const char *traces;
    long tokens;
} plan_args;

static const zs_opt_spec plan_own[] = {
    ZS_OPT_ROW("traces", ZS_OPT_TEXT, plan_args, traces, 0, 0, "arxiv,github,prolong64k", "LIST",
               "document length generators, comma-separated, one batch each"),
    ZS_OPT_ROW("tokens", ZS_OPT_I64, plan_args, tokens, 1, 1L << 40,
               ZS_CLI_STR(ZS_BENCH_PLAN_TOKENS_M) "M", "N",
               "tokens of the global batch, K/M/G x1024")};
static const zs_cli_use plan_uses[] = {
    {ZS_FP(METHOD), NULL},
    {ZS_FP(MODEL), NULL},
    {ZS_FP(CLUSTER), NULL},
    {ZS_FP(NODES), "default " ZS_CLI_STR(ZS_BENCH_PLAN_GPUS) " GPUs' worth"},
    {ZS_FP(SEED), NULL},
    {ZS_FP(OPT), NULL},
    {ZS_F_REPS, "the best is kept (default " ZS_CLI_STR(ZS_BENCH_PLAN_REPS) ")"},
    {ZS_F_FORMAT, NULL},
    {0, NULL}};

/* bench plan's default node count: ZS_BENCH_PLAN_GPUS on the cluster's
 * nodes (rounded up). */
static int plan_nodes(const char *cluster, long *nodes, zs_err *e)
{
    zs_cluster cl;
    int rc = zs_cluster_load(cluster, 1, &cl, e);
    if (!rc)
        *nodes = (ZS_BENCH_PLAN_GPUS + cl.gpus_per_node - 1) / cl.gpus_per_node;
    return rc;
}

static int bench_plan(int argc, char **argv)
{
    static const zs_cli_cmd cmd = {.name = "bench plan",
                                   .head = bench_plan_help,
                                   ZS_CLI_OWN_ROWS(plan_own),
                                   .uses = plan_uses};
    plan_args a;
    zs_cli_flags fl;
    int rc = zs_cli_parse(&cmd, argc, argv, &a, &fl);
    if (rc >= 0)
        return rc;
    rc = ZS_OK;
    const char *model = fl.p.model, *cluster = fl.p.cluster, *opt = fl.p.opts,
               *method = fl.p.method;
    char traces[256];
    snprintf(traces, sizeof traces, "%s", a.traces);
    /* nodes 0: ZS_BENCH_PLAN_GPUS of the cluster (plan_nodes) */
    long nodes = fl.p.nodes, tokens = a.tokens, reps = fl.reps ? fl.reps : ZS_BENCH_PLAN_REPS;
    uint64_t seed = fl.p.seed;
    zs_format fmt = fl.fmt;
    zs_err e;
    zs_err_clear(&e);
    if (!nodes && (rc = plan_nodes(cluster, &nodes, &e)))
        return zs_cli_fail(&e);
    zs_table *t = zs_table_new(NULL);
    const char *cols[] = {"trace", "gpus", "documents", "tokens", "decide_ms", "plan_ms", "ops"};
    for (int i = 0; i < 7; i++)
        zs_table_col(t, cols[i], i > 0);
    char *save = NULL;
    for (char *tr = strtok_r(traces, ",", &save); tr && !rc; tr = strtok_r(NULL, ",", &save)) {
        zs_plan_bench_figs b;
        fprintf(stderr, "bench plan: %s ...\n", tr);
        zs_batch *batch = NULL;
        rc = bench_batch(tr, tokens, (uint64_t)seed, &batch, &e);
        if (!rc)
            rc = zs_plan_bench(method, model, cluster, (int)nodes, batch, (uint64_t)seed, opt,
                               (int)reps, &b, &e);
        zs_batch_free(batch);
        if (rc)
            break;
        zs_table_row(t);
        zs_table_set(t, 0, "%s", tr);
        zs_table_set(t, 1, "%d", b.gpus);
        zs_table_set(t, 2, "%d", b.docs);
        zs_table_set(t, 3, "%lld", (long long)b.tokens);
        if (b.decide_s >= 0) /* else empty (null): no separate decision step */
            zs_table_num(t, 4, "%.2f", b.decide_s * 1e3);
        zs_table_num(t, 5, "%.1f", b.plan_s * 1e3);
        zs_table_set(t, 6, "%lld", (long long)b.ops);
    }
    if (!rc) {
        if (fmt == ZS_FMT_TABLE)
            printf("zepsim bench plan: %s, %s on %s x %ld nodes, best of %ld (host wall "
                   "time, one core)\n",
                   method, model, cluster, nodes, reps);
        zs_table_print(t, stdout, fmt);
        if (fmt == ZS_FMT_TABLE)
            printf("decide = what a training job computes per batch (zeppelin: crossovers + "
                   "partitioning + remap plan; auto: prices + search); plan = the whole planner "
                   "including every rank's ops\n");
    }
    zs_table_free(t);
    return rc ? zs_cli_fail(&e) : 0;
}

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} benches[] = {
    {"sim", bench_sim,
     "a backend's speed and memory on real plans at " ZS_CLI_STR(
         ZS_BENCH_SIM_GPUS_LO) "-" ZS_CLI_STR(ZS_BENCH_SIM_GPUS_HI) " GPUs"},
    {"plan", bench_plan,
     "a planner's planning time for one global batch at " ZS_CLI_STR(ZS_BENCH_PLAN_GPUS) " GPUs"},
    {"floor", zs_cli_bench_floor,
     "what a transfer costs SimGrid itself, with no program, at " ZS_BENCH_FLOOR_GPUS " GPUs"},
};

int zs_cmd_bench(int argc, char **argv)
{
    size_t nb = sizeof benches / sizeof benches[0];
    if (argc < 2 || zs_cli_is_help(argv[1])) {
        FILE *f = argc < 2 ? stderr : stdout;
        fprintf(f, "usage: zepsim bench <benchmark> [options]\n\nbenchmarks:\n");
        for (size_t i = 0; i < nb; i++)
            fprintf(f, "  %-8s %s\n", benches[i].name, benches[i].summary);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < nb; i++)
        if (strcmp(argv[1], benches[i].name) == 0)
            return benches[i].fn(argc - 1, argv + 1);
    return zs_cli_usage_error("bench", "unknown benchmark '%s'", argv[1]);
}
