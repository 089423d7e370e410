/* `zepsim bench <what>`: performance benchmarks (never tests: figures are
 * printed, not asserted). Subcommands:
 *   sim   the SimGrid backend on one full training iteration of a synthetic
 *         but representative CP ring-attention schedule (zs_synth.h) at
 *         256, 1024 and 4096 GPUs: wall time, peak RSS, simulated ops and
 *         ops per second, medians over runs, each run in a fresh process;
 *         optionally layer folding (simulate 1 and 2 layers, extrapolate).
 * Other benchmarks (e.g. `bench plan`) add a row to the table below. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_cluster.h"
#include "zs_cost.h"
#include "zs_lengen.h"
#include "zs_sort.h"
#include "zs_model.h"
#include "zs_schedule.h"
#include "zs_sim.h"
#include "zs_zeppelin_bench.h"
#include "zs_synth.h"

static const char bench_sim_help[] =
    "usage: zepsim bench sim [options]\n"
    "\n"
    "Times the SimGrid backend on one training iteration (all layers forward and\n"
    "backward, then the data-parallel gradient all-reduce) of a SYNTHETIC schedule:\n"
    "context-parallel ring attention, CP groups of --cp ranks (2 nodes at CP 16), each\n"
    "holding one long sequence of --tokens tokens per rank; durations from the analytic\n"
    "cost model with a fixed +-5% jitter per rank. Each run is a fresh process.\n"
    "\n"
    "  unrolled  every layer simulated\n"
    "  folded    1 and 2 layers simulated, the iteration extrapolated linearly:\n"
    "            T = T1 + (L - 1) (T2 - T1), exact when layers repeat identically\n"
    "\n"
    "options:\n"
    "  --gpus LIST             GPU counts, comma-separated (default 256,1024,4096)\n"
    "  --runs N                runs per point; medians are printed (default 3)\n"
    "  --mode unrolled|folded|both   (default both)\n"
    "  --model NAME_OR_FILE    (default llama-7b)\n"
    "  --cluster NAME_OR_FILE  (default cluster-a; nodes follow from the GPU count)\n"
    "  --cp N                  ring size (default 16)\n"
    "  --tokens N              tokens per rank (default 4096)\n"
    "  --format table|csv|json (default table)\n"
    "\n"
    "wall_s is the simulation's wall time (platform load, deadlock pre-check and run);\n"
    "cpu_s the child's user + system CPU time (median; cpu_s_min and cpu_s_max the spread):\n"
    "less sensitive to other load than wall time, but other tenants' use of caches and\n"
    "memory still inflates it (on our shared machines single runs varied up to 2x).\n";

typedef struct bench_cfg {
    zs_model model;
    zs_cluster cluster;
    int cp, tokens, runs;
} bench_cfg;

typedef struct sample {
    double iter, wall, cpu, rss, ops;
} sample;

/* One simulation of `layers` layers at `gpus` GPUs in a child process. */
static int run_one(const bench_cfg *b, int gpus, int layers, sample *out, zs_err *e)
{
    zs_cluster c = b->cluster;
    c.nodes = (gpus + c.gpus_per_node - 1) / c.gpus_per_node;
    zs_cost *cost = zs_cost_analytic_new(&b->model, &c);
    if (!cost)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    zs_synth_spec sp = {gpus, layers, b->cp, b->tokens, 42};
    zs_schedule *s = NULL;
    int rc = zs_synth_cp_ring(cost, &sp, &s, e);
    zs_result *r = NULL;
    double rss = 0, cpu = 0;
    if (rc == ZS_OK)
        rc = zs__sim_run_forked_rss(s, &c, NULL, &r, &rss, &cpu, e);
    if (rc == ZS_OK) {
        out->iter = r->iter_time;
        out->wall = r->wall_seconds;
        out->rss = rss;
        out->cpu = cpu;
        out->ops = (double)r->ops_executed;
    }
    zs_result_free(r);
    zs_schedule_free(s);
    zs_cost_free(cost);
    return rc;
}

static int bench_point(const bench_cfg *b, int gpus, int folded, zs_table *t, double *unrolled_iter,
                       zs_err *e)
{
    int n = b->runs;
    double iter[16], wall[16], cpu[16], rss[16], ops = 0, it = 0;
    for (int k = 0; k < n; k++) {
        sample s1, s2;
        int rc;
        fprintf(stderr, "bench sim: %d GPUs, %s, run %d/%d\n", gpus, folded ? "folded" : "unrolled",
                k + 1, n);
        if (folded) {
            int L = b->model.layers;
            if ((rc = run_one(b, gpus, 1, &s1, e)) || (rc = run_one(b, gpus, 2, &s2, e)))
                return rc;
            iter[k] = s1.iter + (L - 1) * (s2.iter - s1.iter);
            wall[k] = s1.wall + s2.wall;
            cpu[k] = s1.cpu + s2.cpu;
            rss[k] = s1.rss > s2.rss ? s1.rss : s2.rss;
            ops = s1.ops + s2.ops;
        } else {
            if ((rc = run_one(b, gpus, b->model.layers, &s1, e)))
                return rc;
            iter[k] = s1.iter;
            wall[k] = s1.wall;
            cpu[k] = s1.cpu;
            rss[k] = s1.rss;
            ops = s1.ops;
        }
    }
    it = zs_median(iter, (size_t)n);
    double w = zs_median(wall, (size_t)n);
    zs_table_row(t);
    zs_table_set(t, 0, "%d", gpus);
    zs_table_set(t, 1, "%s", folded ? "folded" : "unrolled");
    zs_table_set(t, 2, "%.3f", it * 1e3);
    zs_table_set(t, 3, "%.2f", w);
    double cp = zs_median(cpu, (size_t)n); /* sorts cpu: its ends are the extremes */
    zs_table_set(t, 4, "%.2f", cp);
    zs_table_set(t, 5, "%.2f", cpu[0]);
    zs_table_set(t, 6, "%.2f", cpu[n - 1]);
    zs_table_set(t, 7, "%.0f", zs_median(rss, (size_t)n) / 1048576.0);
    zs_table_set(t, 8, "%.0f", ops);
    zs_table_set(t, 9, "%.0f", w > 0 ? ops / w : 0);
    zs_table_set(t, 10, "%.0f", cp > 0 ? ops / cp : 0);
    if (!folded)
        *unrolled_iter = it;
    else if (*unrolled_iter > 0)
        zs_table_set(t, 11, "%+.3f", 100.0 * (it - *unrolled_iter) / *unrolled_iter);
    return ZS_OK;
}

static int bench_sim(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, 0, 'h'},         {"gpus", required_argument, 0, 'g'},
        {"runs", required_argument, 0, 'r'},   {"mode", required_argument, 0, 'm'},
        {"model", required_argument, 0, 'M'},  {"cluster", required_argument, 0, 'c'},
        {"cp", required_argument, 0, 'p'},     {"tokens", required_argument, 0, 't'},
        {"format", required_argument, 0, 'f'}, {0, 0, 0, 0}};
    zs_err e;
    zs_err_clear(&e);
    const char *gpus_s = "256,1024,4096", *mode = "both", *model = "llama-7b",
               *cluster = "cluster-a";
    long runs = 3, cp = 16, tokens = 4096;
    zs_format fmt = ZS_FMT_TABLE;
    int c;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        int rc = ZS_OK;
        switch (c) {
        case 'h':
            fputs(bench_sim_help, stdout);
            return 0;
        case 'g':
            gpus_s = optarg;
            break;
        case 'r':
            rc = zs_cli_parse_int("--runs", optarg, 1, 15, &runs, &e);
            break;
        case 'm':
            mode = optarg;
            break;
        case 'M':
            model = optarg;
            break;
        case 'c':
            cluster = optarg;
            break;
        case 'p':
            rc = zs_cli_parse_int("--cp", optarg, 1, 1024, &cp, &e);
            break;
        case 't':
            rc = zs_cli_parse_int("--tokens", optarg, 1, 1 << 22, &tokens, &e);
            break;
        case 'f':
            rc = zs_format_parse(optarg, &fmt, &e);
            break;
        default:
            return zs_cli_bad_option("bench sim", c, argv);
        }
        if (rc)
            return zs_cli_fail(&e);
    }
    if (optind != argc)
        return zs_cli_usage_error("bench", "unexpected argument '%s'", argv[optind]);
    int do_unrolled = strcmp(mode, "unrolled") == 0 || strcmp(mode, "both") == 0;
    int do_folded = strcmp(mode, "folded") == 0 || strcmp(mode, "both") == 0;
    if (!do_unrolled && !do_folded)
        return zs_cli_usage_error("bench", "unknown --mode '%s' (use unrolled, folded or both)",
                                  mode);
    int gpus[32], ng = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", gpus_s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        long v;
        if (ng == 32 || zs_cli_parse_int("--gpus", tok, 1, 1 << 20, &v, &e))
            return ng == 32 ? zs_cli_usage_error("bench", "at most 32 GPU counts")
                            : zs_cli_fail(&e);
        if (v % cp != 0)
            return zs_cli_usage_error("bench", "--gpus %ld is not a multiple of --cp %ld", v, cp);
        gpus[ng++] = (int)v;
    }
    if (ng == 0)
        return zs_cli_usage_error("bench", "--gpus needs at least one count");
    bench_cfg b;
    memset(&b, 0, sizeof b);
    b.cp = (int)cp;
    b.tokens = (int)tokens;
    b.runs = (int)runs;
    int rc = zs_model_load(model, &b.model, &e);
    if (rc == ZS_OK)
        rc = zs_cluster_load(cluster, 0, &b.cluster, &e);
    if (rc)
        return zs_cli_fail(&e);
    char title[512];
    snprintf(title, sizeof title,
             "zepsim bench sim: %s on %s, SYNTHETIC CP-ring schedule (cp %d, %d tokens/rank, "
             "grad all-reduce), medians of %d run(s), one process each",
             b.model.name, b.cluster.name, b.cp, b.tokens, b.runs);
    zs_table *t = zs_table_new(title);
    zs_table_col(t, "gpus", 1);
    zs_table_col(t, "mode", 0);
    zs_table_col(t, "iter_ms", 1);
    zs_table_col(t, "wall_s", 1);
    zs_table_col(t, "cpu_s", 1);
    zs_table_col(t, "cpu_s_min", 1); /* the spread shows how noisy the machine was */
    zs_table_col(t, "cpu_s_max", 1);
    zs_table_col(t, "peak_rss_mb", 1);
    zs_table_col(t, "sim_ops", 1);
    zs_table_col(t, "ops_per_wall_s", 1);
    zs_table_col(t, "ops_per_cpu_s", 1);
    zs_table_col(t, "vs_unrolled_pct", 1);
    for (int i = 0; i < ng && rc == ZS_OK; i++) {
        double unrolled = 0;
        if (do_unrolled)
            rc = bench_point(&b, gpus[i], 0, t, &unrolled, &e);
        if (rc == ZS_OK && do_folded)
            rc = bench_point(&b, gpus[i], 1, t, &unrolled, &e);
    }
    if (rc == ZS_OK)
        zs_table_print(t, stdout, fmt);
    zs_table_free(t);
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

static int bench_plan(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, 0, 'h'},          {"model", required_argument, 0, 'm'},
        {"cluster", required_argument, 0, 'c'}, {"nodes", required_argument, 0, 'n'},
        {"traces", required_argument, 0, 't'},  {"tokens", required_argument, 0, 'k'},
        {"seed", required_argument, 0, 's'},    {"reps", required_argument, 0, 'r'},
        {"opt", required_argument, 0, 'o'},     {"format", required_argument, 0, 'f'},
        {"method", required_argument, 0, 'M'},  {0, 0, 0, 0}};
    const char *model = "llama-7b", *cluster = "cluster-a", *opt = "", *method = "zeppelin";
    char traces[256] = "arxiv,github,prolong64k";
    long nodes = 128, tokens = 32L << 20, seed = 1, reps = 3;
    zs_format fmt = ZS_FMT_TABLE;
    zs_err e;
    zs_err_clear(&e);
    int c, rc = 0;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            printf("usage: zepsim bench plan [options]\n\n"
                   "Times a method's planning of one global batch (default: Zeppelin, 1024\n"
                   "GPUs of cluster-a, llama-7b, 32M tokens): the decisions (Zeppelin:\n"
                   "crossovers, hierarchical partitioning, remap plan; auto: prices and\n"
                   "search; other methods: none, empty) and the full planner including the\n"
                   "schedule. Host wall time, best of --reps; a benchmark, never a test.\n\n"
                   "options: --method (zeppelin) --model --cluster --nodes (128)\n"
                   "         --traces (arxiv,github,prolong64k) --tokens (33554432) --seed (1)\n"
                   "         --reps (3) --opt K=V --format\n");
            return 0;
        case 'm':
            model = optarg;
            break;
        case 'c':
            cluster = optarg;
            break;
        case 'n':
            rc = zs_cli_parse_int("--nodes", optarg, 1, 65536, &nodes, &e);
            break;
        case 't':
            snprintf(traces, sizeof traces, "%s", optarg);
            break;
        case 'k':
            rc = zs_cli_parse_int("--tokens", optarg, 1, 1L << 40, &tokens, &e);
            break;
        case 's':
            rc = zs_cli_parse_int("--seed", optarg, 0, 1L << 62, &seed, &e);
            break;
        case 'r':
            rc = zs_cli_parse_int("--reps", optarg, 1, 100, &reps, &e);
            break;
        case 'o':
            opt = optarg;
            break;
        case 'M':
            method = optarg;
            break;
        case 'f':
            rc = zs_format_parse(optarg, &fmt, &e);
            break;
        default:
            return zs_cli_bad_option("bench plan", c, argv);
        }
        if (rc)
            return zs_cli_fail(&e);
    }
    zs_table *t = zs_table_new(NULL);
    const char *cols[] = {"trace", "gpus", "documents", "tokens", "decide_ms", "plan_ms", "ops"};
    for (int i = 0; i < 7; i++)
        zs_table_col(t, cols[i], i > 0);
    char *save = NULL;
    for (char *tr = strtok_r(traces, ",", &save); tr && !rc; tr = strtok_r(NULL, ",", &save)) {
        zs_zep_bench b;
        fprintf(stderr, "bench plan: %s ...\n", tr);
        zs_batch *batch = NULL;
        rc = bench_batch(tr, tokens, (uint64_t)seed, &batch, &e);
        if (!rc)
            rc = zs_zeppelin_bench_plan(method, model, cluster, (int)nodes, batch, (uint64_t)seed,
                                        opt, (int)reps, &b, &e);
        zs_batch_free(batch);
        if (rc)
            break;
        zs_table_row(t);
        zs_table_set(t, 0, "%s", tr);
        zs_table_set(t, 1, "%d", b.gpus);
        zs_table_set(t, 2, "%d", b.docs);
        zs_table_set(t, 3, "%lld", (long long)b.tokens);
        if (b.decide_s >= 0) /* else empty (null): no separate decision step */
            zs_table_set(t, 4, "%.2f", b.decide_s * 1e3);
        zs_table_set(t, 5, "%.1f", b.plan_s * 1e3);
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
    {"sim", bench_sim, "SimGrid backend speed and memory at 256-4096 GPUs"},
    {"plan", bench_plan, "a planner's planning time for one global batch at 1024 GPUs"},
};

int zs_cmd_bench(int argc, char **argv)
{
    size_t nb = sizeof benches / sizeof benches[0];
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
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
