/* `zepsim bench floor`: what a transfer costs SimGrid 3.32 itself on this
 * machine (sim/zs_sim_floor.h), so that the simulator's own speed can be
 * read against what no executor can beat. Figures are printed, never
 * asserted. Default sizes: cli.h (ZS_BENCH_FLOOR_*). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_cluster.h"
#include "zs_sim_floor.h"

static const char help[] =
    "usage: zepsim bench floor [options]\n"
    "\n"
    "SimGrid's floor: every GPU's actor exchanges --width 1 MiB messages each way with\n"
    "one partner per round (the neighbouring GPU of its node, or the same GPU of the\n"
    "paired node), posting them all and waiting for any until they are done, on the\n"
    "platform and engine settings the SimGrid backend uses, with nothing else to do.\n"
    "cpu_s is the engine's CPU time, medians with min and max over --runs processes;\n"
    "us_per_xfer = cpu_s / transfers, us_per_wake = cpu_s / actor wake-ups (each\n"
    "transfer wakes its sender and its receiver). A run of the backend that simulates\n"
    "T transfers cannot cost less than about T * us_per_xfer on this machine.\n"
    "\n"
    "options:\n";

#define FLOOR_MAX ZS_SIM_FLOOR_RUNS_MAX

typedef struct floor_args {
    const char *gpus;
    long width, xfers, runs;
} floor_args;

static const zs_opt_spec own[] = {
    ZS_OPT_ROW("gpus", ZS_OPT_TEXT, floor_args, gpus, 0, 0, ZS_BENCH_FLOOR_GPUS, "LIST",
               "GPU counts, comma-separated"),
    ZS_OPT_ROW("width", ZS_OPT_INT, floor_args, width, 1, ZS_SIM_FLOOR_WIDTH_MAX,
               ZS_CLI_STR(ZS_BENCH_FLOOR_WIDTH), "N", "messages each way per round, 1..16"),
    ZS_OPT_ROW("transfers", ZS_OPT_INT, floor_args, xfers, 1, 1000000000,
               ZS_CLI_STR(ZS_BENCH_FLOOR_XFERS), "N", "transfers per run, about"),
    ZS_OPT_ROW("runs", ZS_OPT_INT, floor_args, runs, 1, FLOOR_MAX, ZS_CLI_STR(ZS_BENCH_FLOOR_RUNS),
               "N", "runs per point")};
static const zs_cli_use uses[] = {
    {ZS_FP(CLUSTER), "default cluster-a; nodes = GPUs / GPUs per node"},
    {ZS_F_FORMAT, NULL},
    {0, NULL}};

int zs_cli_bench_floor(int argc, char **argv)
{
    static const zs_cli_cmd cmd = {
        .name = "bench floor", .head = help, ZS_CLI_OWN_ROWS(own), .uses = uses};
    floor_args a;
    zs_cli_flags fl;
    int rc = zs_cli_parse(&cmd, argc, argv, &a, &fl);
    if (rc >= 0)
        return rc;
    const char *gpus_s = a.gpus, *cluster = fl.p.cluster;
    long width = a.width, xfers = a.xfers, runs = a.runs;
    zs_format fmt = fl.fmt;
    zs_err e;
    zs_err_clear(&e);
    if (optind != argc)
        return zs_cli_usage_error("bench", "unexpected argument '%s'", argv[optind]);
    int gpus[FLOOR_MAX], ngpus = 0;
    if ((rc = zs_cli_parse_int_list("--gpus", gpus_s, 1 << 20, gpus, FLOOR_MAX, &ngpus, &e)))
        return zs_cli_fail(&e);
    char title[256];
    snprintf(title, sizeof title,
             "zepsim bench floor: SimGrid's own cost per transfer on %s, %ld message(s) each way "
             "per round, medians of %ld run(s), one process each",
             cluster, width, runs);
    zs_table *t = zs_table_new(title);
    const char *cols[] = {"gpus",        "pattern",     "transfers",  "wakes",
                          "cpu_s",       "cpu_s_min",   "cpu_s_max",  "us_per_xfer",
                          "us_per_wake", "peak_rss_mb", "simulated_s"};
    for (int i = 0; i < 11; i++)
        zs_table_col(t, cols[i], i == 1 ? ZS_COL_TEXT : ZS_COL_NUM);
    zs_cluster cl;
    if ((rc = zs_cluster_load(cluster, 1, &cl, &e))) { /* its GPUs per node */
        zs_table_free(t);
        return zs_cli_fail(&e);
    }
    int gpn = cl.gpus_per_node;
    for (int g = 0; g < ngpus && rc == ZS_OK; g++)
        for (int across = 0; across < 2 && rc == ZS_OK; across++) {
            int nodes = (gpus[g] + gpn - 1) / gpn;
            if (across && nodes < 2)
                continue;
            if ((rc = zs_cluster_load(cluster, nodes, &cl, &e)))
                break;
            zs_sim_floor_cfg f = {gpus[g], 1, (int)width, across};
            f.rounds = zs_sim_floor_rounds(gpus[g], (int)width, xfers);
            zs_sim_floor_out o = {0};
            double lo = 0, hi = 0;
            if ((rc = zs_sim_floor_measure(&cl, &f, (int)runs, stderr, &o, &lo, &hi, &e)))
                break;
            double med = o.cpu_s;
            zs_table_row(t);
            zs_table_set(t, 0, "%d", gpus[g]);
            zs_table_str(t, 1, across ? "across nodes" : "inside nodes");
            zs_table_set(t, 2, "%ld", o.comms);
            zs_table_set(t, 3, "%ld", o.wakes);
            zs_table_num(t, 4, "%.2f", med);
            zs_table_num(t, 5, "%.2f", lo);
            zs_table_num(t, 6, "%.2f", hi);
            zs_table_num(t, 7, "%.2f", o.comms > 0 ? 1e6 * med / (double)o.comms : 0);
            zs_table_num(t, 8, "%.2f", o.wakes > 0 ? 1e6 * med / (double)o.wakes : 0);
            zs_table_num(t, 9, "%.0f", o.peak_rss / 1048576.0);
            zs_table_num(t, 10, "%.4f", o.sim_s);
        }
    if (rc == ZS_OK)
        zs_table_print(t, stdout, fmt);
    zs_table_free(t);
    return rc ? zs_cli_fail(&e) : 0;
}
