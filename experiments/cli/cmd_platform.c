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
    "options:\n"
    "  --cluster NAME_OR_FILE  cluster preset or JSON file (required)\n"
    "  --nodes N               number of nodes (default: the preset's)\n"
    "  --out FILE              output file (default: standard output)\n";

int zs_cmd_platform(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"cluster", required_argument, 0, 'c'},
                                         {"nodes", required_argument, 0, 'n'},
                                         {"out", required_argument, 0, 'o'},
                                         {0, 0, 0, 0}};
    zs_err e;
    zs_err_clear(&e);
    const char *cluster = NULL, *out = NULL;
    long nodes = 0;
    int c;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        int rc = ZS_OK;
        switch (c) {
        case 'h':
            fputs(platform_help, stdout);
            return 0;
        case 'c':
            cluster = optarg;
            break;
        case 'n':
            rc = zs_cli_parse_int("--nodes", optarg, 1, 65536, &nodes, &e);
            break;
        case 'o':
            out = optarg;
            break;
        default:
            return zs_cli_bad_option("platform", c, argv);
        }
        if (rc)
            return zs_cli_fail(&e);
    }
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
