/* `zepsim zeppelin thresholds --model M --cluster C [--nodes N]`: Zeppelin's
 * cost crossovers (m_intra, m_inter) with the reasoning behind them: the
 * compute and the transfer of one ring step at each crossover. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_machine.h"
#include "zs_cost.h"
#include "zs_crossover.h"
#include "zs_route.h"

static const char zep_help[] =
    "usage: zepsim zeppelin thresholds --model M --cluster C [options]\n"
    "\n"
    "Prints Zeppelin's cost crossovers from the analytical cost model: the tokens\n"
    "per GPU above which one ring step's attention (at the kernel's saturated\n"
    "rate) hides the transfer of its KV shard, over NVLink (m_intra) and over\n"
    "the network through one NIC (m_inter; and, for information, routed over k\n"
    "NICs). The planner splits a document inside a node at >= 2 x m_intra and\n"
    "across nodes at >= m_inter x GPUs per node (when it outweighs a node).\n"
    "\n"
    "options:\n";

typedef struct zep_args {
    long k; /* --k; 0: from the bandwidths */
} zep_args;

static const zs_opt_spec own[] = {ZS_OPT_ROW("k", ZS_OPT_INT, zep_args, k, 1, ZS_ZEP_MAX_K, "", "N",
                                             "NICs per routed transfer (default: from "
                                             "bandwidths)")};

static const zs_cli_use uses[] = {
    {ZS_F_TP, NULL},      {ZS_FP(MODEL), "required"}, {ZS_FP(CLUSTER), "required"},
    {ZS_FP(NODES), NULL}, {ZS_F_FORMAT, NULL},        {0, NULL}};

static void row(zs_table *t, const char *key, const char *unit, const char *fmt, double v,
                const char *why)
{
    zs_table_kv_num(t, key, unit, fmt, v);
    zs_table_kv_note(t, "%s", why);
}

int zs_cmd_zeppelin(int argc, char **argv)
{
    static const zs_cli_cmd cmd = {
        .name = "zeppelin", .head = zep_help, ZS_CLI_OWN_ROWS(own), .uses = uses};
    zs_cli_flags fl;
    zep_args a;
    int st = zs_cli_parse(&cmd, argc, argv, &a, &fl);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    long tp = fl.tp, k = a.k;
    zs_format fmt = fl.fmt;
    long nodes = fl.p.nodes;
    const char *model = zs_cli_given(&fl, ZS_P_MODEL), *cluster = zs_cli_given(&fl, ZS_P_CLUSTER);
    if (argc - optind != 1 || strcmp(argv[optind], "thresholds") != 0)
        return zs_cli_usage_error("zeppelin", "expected the subcommand 'thresholds'");
    if (!model || !cluster)
        return zs_cli_usage_error("zeppelin", "--model and --cluster are required");
    zs_machine_cfg mc;
    zs_machine_cfg_init(&mc);
    mc.model = model;
    mc.cluster = cluster;
    mc.nodes = (int)nodes;
    zs_machine mach;
    int rc = zs_machine_load(&mc, &mach, &e);
    if (rc)
        return zs_cli_fail(&e);
    const zs_model m = mach.model;
    const zs_cluster cl = mach.cluster;
    zs_cost *cost = mach.cost;
    if (cl.gpus_per_node % tp != 0 || m.heads % tp != 0) {
        zs_machine_clear(&mach);
        zs_err_set(
            &e, ZS_EUSAGE, "--tp", "use a TP degree that divides the GPUs of a node and the heads",
            "tp=%ld does not fit %d GPUs per node / %d heads", tp, cl.gpus_per_node, m.heads);
        return zs_cli_fail(&e);
    }
    if (k == 0)
        k = zs_route_default_k(&cl, (int)tp);
    double chunk = zs_route_default_chunk(&cl);
    zs_crossover th;
    if ((rc = zs_crossover_solve(cost, (int)tp, (int)k, chunk, &th, &e))) {
        zs_machine_clear(&mach);
        return zs_cli_fail(&e);
    }
    char title[256];
    snprintf(title, sizeof title, "Zeppelin crossovers: %s on %s (%d GPUs/node, tp=%ld), cost: %s",
             m.name, cl.name, cl.gpus_per_node, tp, cost->desc);
    zs_table *t = zs_table_kv_new(fmt == ZS_FMT_TABLE ? title : NULL);
    char why[256];
    snprintf(why, sizeof why, "NVLink ring step compute = transfer%s",
             th.intra_always ? " (compute hides it at every length)" : "");
    row(t, "m_intra", "tokens/GPU", "%.0f", th.m_intra, why);
    row(t, "m_intra_step_compute_us", "us", "%.1f", th.intra_compute_s * 1e6,
        "attention of the step (m^2/2 pairs, saturated rate)");
    row(t, "m_intra_step_transfer_us", "us", "%.1f", th.intra_xfer_s * 1e6,
        "KV shard of m tokens over NVLink");
    row(t, "m_inter", "tokens/GPU", "%.0f", th.m_inter, "network ring step through one NIC");
    row(t, "m_inter_step_compute_us", "us", "%.1f", th.inter_compute_s * 1e6,
        "attention of the step");
    row(t, "m_inter_step_transfer_us", "us", "%.1f", th.inter_xfer_s * 1e6,
        "KV shard of m tokens through one NIC");
    snprintf(why, sizeof why, "the same spread over k=%d NICs by routing", th.k);
    row(t, "m_inter_routed", "tokens/GPU", "%.0f", th.m_inter_routed, why);
    row(t, "m_inter_routed_step_transfer_us", "us", "%.1f", th.routed_xfer_s * 1e6,
        "slices over k NICs, pipelined NVLink scatter/gather");
    row(t, "routing_k", "NICs", "%.0f", th.k,
        "NICs one GPU's NVLink can feed, capped by the node's");
    row(t, "routing_chunk_kib", "KiB", "%.0f", th.chunk_bytes / 1024,
        "10x the bytes a NIC moves in one network latency");
    row(t, "split_intra_at", "document tokens", "%.0f", 2 * th.m_intra,
        "a 2-GPU ring hides its transfers");
    row(t, "split_inter_at", "document tokens", "%.0f", th.m_inter * cl.gpus_per_node / tp,
        "m_inter x GPUs per node");
    zs_output *d = zs_output_new("zeppelin", fmt, stdout);
    if (d) {
        zs_output_set_text(d, NULL, "model", m.name);
        zs_output_set_text(d, NULL, "cluster", cl.name);
        zs_output_set_int(d, NULL, "gpus_per_node", cl.gpus_per_node);
        zs_output_set_int(d, NULL, "tp", tp);
        zs_output_set_text(d, NULL, "cost_model", cost->desc);
        zs_output_table(d, "thresholds", t);
    } else {
        zs_table_free(t);
    }
    zs_machine_clear(&mach);
    return zs_cli_doc_end(d);
}
