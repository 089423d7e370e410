/* `zepsim platform --cluster NAME [--nodes N] [--out FILE]`: writes the
 * SimGrid platform XML the simulator generates for a cluster, so it can be
 * inspected (or loaded by other SimGrid tools). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_cluster.h"
#include "zs_platform.h"

static const char platform_help[] =
    "usage: zepsim platform --cluster NAME_OR_FILE [--nodes N] [--out FILE]\n"
    "\n"
    "Writes the SimGrid platform (XML) that `zepsim simulate` builds for a cluster:\n"
    "one zone per node (GPUs and their routes over NVLink up/down links, PCIe links and\n"
    "NICs shared by the GPUs of their PCIe switch; the links themselves are declared in\n"
    "a zone 'links' ahead of the node zones, which keeps loading linear in the nodes),\n"
    "rail leaves and, beyond nodes_per_leaf nodes, a spine.\n"
    "\n"
    "options:\n";

int zs_cmd_platform(int argc, char **argv)
{
    static const zs_cli_use uses[] = {{ZS_FP(CLUSTER), "required"},
                                      {ZS_FP(NODES), NULL},
                                      {ZS_F_OUT, "the XML file (default: standard output)"},
                                      {0, NULL}};
    static const zs_cli_cmd cmd = {.name = "platform", .head = platform_help, .uses = uses};
    zs_cli_flags fl;
    int st = zs_cli_parse(&cmd, argc, argv, NULL, &fl);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    const char *cluster = zs_cli_given(&fl, ZS_P_CLUSTER), *out = fl.out;
    long nodes = fl.p.nodes;
    if (optind != argc)
        return zs_cli_usage_error("platform", "unexpected argument '%s'", argv[optind]);
    if (!cluster)
        return zs_cli_usage_error("platform", "--cluster is required");
    zs_cluster cl;
    int rc = zs_cluster_load(cluster, (int)nodes, &cl, &e);
    if (rc == ZS_OK)
        rc = out ? zs_platform_write_file(&cl, out, &e) : zs_platform_write(&cl, stdout, &e);
    return rc ? zs_cli_fail(&e) : 0;
}
