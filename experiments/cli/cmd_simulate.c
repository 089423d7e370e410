/* `zepsim simulate --method NAME ...`: one method, N iterations, on the
 * SimGrid backend (or the analytic one), with the per-rank breakdown. */
#include <string.h>

#include "cli_point.h"

static void progress(void *arg, int done, int total)
{
    char what[96];
    snprintf(what, sizeof what, "simulating %s", (const char *)arg);
    zs_cli_progress(what, done, total);
}

static void row(zs_table *t, const char *k, const char *fmt, double v, const char *unit)
{
    zs_table_row(t);
    zs_table_set(t, 0, "%s", k);
    zs_table_set(t, 1, fmt, v);
    zs_table_set(t, 2, "%s", unit);
}

int zs_cmd_simulate(int argc, char **argv)
{
    static const struct option own[] = {
        {"help", no_argument, 0, 'h'}, {"ranks", no_argument, 0, 'r'}, {0, 0, 0, 0}};
    struct option opts[ZS_CLI_MAX_OPTS];
    zs_cli_point_longopts(own, NULL, opts);
    zs_point_cfg p;
    zs_point_cfg_default(&p);
    zs_format fmt = ZS_FMT_TABLE;
    zs_err e;
    zs_err_clear(&e);
    int ranks = 0, c;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: zepsim simulate --method NAME [options]\n\n"
                   "Plans N global batches with one method and runs each schedule on the\n"
                   "simulator; prints throughput, MFU and the per-rank breakdown.\n\n"
                   "options:\n");
            zs_cli_point_help(stdout, NULL);
            printf("  --ranks                per-rank table of the last iteration\n");
            return 0;
        }
        if (c == 'r') {
            ranks = 1;
            continue;
        }
        int st = zs_cli_point_opt("simulate", c, argv, &p, &fmt);
        if (st)
            return st;
    }
    if (optind < argc)
        return zs_cli_usage_error("simulate", "unexpected argument '%s'", argv[optind]);
    zs_point_result r;
    int rc = zs_point_run(&p, progress, p.method, &r, &e);
    if (rc)
        return zs_cli_fail(&e);
    if (fmt == ZS_FMT_TABLE) {
        zs_cli_point_print_cfg(stdout, &p, r.cost_desc);
        printf("# method %s\n", p.method);
    }
    zs_table *t = zs_table_new(NULL);
    zs_table_col(t, "key", 0);
    zs_table_col(t, "value", 1);
    zs_table_col(t, "unit", 0);
    row(t, "iterations", "%.0f", r.iterations, "");
    row(t, "mean_iteration_time", "%.3f", r.iter_time * 1e3, "ms");
    row(t, "tokens_per_s", "%.0f", r.tokens_per_s, "tokens/s");
    row(t, "tokens_per_iteration", "%.0f", r.tokens_per_iter, "tokens trained (mean)");
    row(t, "mfu", "%.1f", r.mfu * 100, "%");
    row(t, "compute_share", "%.1f", r.compute_share * 100, "% of iteration (mean)");
    row(t, "exposed_comm_share", "%.1f", r.exposed_share * 100, "% of iteration (mean)");
    row(t, "idle_share", "%.1f", r.idle_share * 100, "% of iteration (mean)");
    row(t, "max_nic_utilisation", "%.1f", r.max_nic_util * 100, "% busy (mean)");
    row(t, "attn_imbalance", "%.3f", r.attn_imbalance, "max/mean attention work");
    row(t, "linear_imbalance", "%.3f", r.linear_imbalance, "max/mean linear tokens");
    if (r.imbalance_degree > 0)
        row(t, "imbalance_degree", "%.3f", r.imbalance_degree,
            "max micro-batch latency x micro-batches / total (mean)");
    if (r.delay_iters > 0)
        row(t, "token_delay", "%.3f", r.delay_iters, "iterations a token waited (mean)");
    row(t, "plan_time", "%.2f", r.plan_ms, "ms per batch");
    row(t, "ops_simulated", "%.0f", (double)r.ops, "");
    row(t, "wall_time", "%.2f", r.wall_s, "s");
    zs_table_print(t, stdout, fmt);
    zs_table_free(t);
    if (fmt == ZS_FMT_TABLE && r.last) {
        zs_table *l = zs_table_new("\nlast iteration:");
        zs_table_col(l, "key", 0);
        zs_table_col(l, "value", 1);
        zs_table_col(l, "unit", 0);
        zs_result_summary(r.last, l);
        zs_table_print(l, stdout, fmt);
        zs_table_free(l);
        putchar('\n');
        zs_result_print_text(r.last, stdout);
        if (r.notes[0])
            printf("planner: %s\n", r.notes);
    }
    if (ranks && r.last) {
        zs_table *rt = zs_table_new(fmt == ZS_FMT_TABLE ? "\nper rank (ms):" : NULL);
        const char *cols[] = {"rank", "compute", "exposed_comm", "idle", "comm", "end"};
        for (int i = 0; i < 6; i++)
            zs_table_col(rt, cols[i], 1);
        zs_result_ranks(r.last, rt);
        zs_table_print(rt, stdout, fmt);
        zs_table_free(rt);
    }
    if (p.timeline[0] && r.last)
        zs_cli_timeline_done(fmt == ZS_FMT_TABLE ? stdout : stderr, NULL, p.timeline,
                             r.last->timeline_bytes);
    zs_point_result_clear(&r);
    return 0;
}
