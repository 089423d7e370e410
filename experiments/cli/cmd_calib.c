/* `zepsim calib fit FILES... -o OUT.json [--model M] [--cluster C]`: fits
 * the cost curves, the attention kernel and the NCCL collective model to
 * measurements and writes a calibration file; `zepsim calib show FILE`
 * prints one. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_calib.h"

static const char calib_help[] =
    "usage: zepsim calib fit FILES... -o OUT.json [--model M] [--gpu G [--attn-kernel K]]\n"
    "                                             [--cluster C]\n"
    "       zepsim calib show FILE.json\n"
    "       zepsim calib predict [options]   (see zepsim calib predict --help)\n"
    "\n"
    "fit: reads nccl-tests logs (one node or many), kernel latency CSVs,\n"
    "Megatron layer-op TSVs and zepsim-measurements JSON files\n"
    "(docs/validation.md), fits one curve per kernel class, the attention\n"
    "kernel and the parameters of NCCL's collective model (docs/cost-model.md)\n"
    "with GSL least squares, and writes a versioned calibration file with the\n"
    "source files' SHA-256, the fit residuals and, per collective point, the\n"
    "algorithm and protocol NCCL runs there. What the data does not cover\n"
    "stays analytic.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   calibration file to write (required for fit)\n"
    "  --model M           model shape of layer-op TSV rows (default: those rows\n"
    "                      are not fitted, the TSV does not name its model)\n"
    "  --gpu G             GPU whose attention kernel gives the structure (tile sizes,\n"
    "                      CTAs per SM, launch cost, SMs) the attention fit keeps\n"
    "                      (default: the preset matching the measured device, else\n"
    "                      h100-sxm)\n"
    "  --attn-kernel K     that GPU's kernel to take the structure from (default the\n"
    "                      GPU's own)\n"
    "  --cluster C         hardware the collectives ran on (preset or JSON;\n"
    "                      default cluster-c: 8 x H200, NVSwitch with NVLS)\n" ZS_CLI_NCCL_HELP;

int zs_cmd_calib(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"output", required_argument, 0, 'o'},
                                         {"model", required_argument, 0, 'm'},
                                         {"gpu", required_argument, 0, 'g'},
                                         {"attn-kernel", required_argument, 0, 'k'},
                                         {"cluster", required_argument, 0, 'C'},
                                         ZS_CLI_NCCL_OPTS,
                                         {0, 0, 0, 0}};
    if (argc > 1 && strcmp(argv[1], "predict") == 0)
        return zs_cmd_calib_predict(argc - 1, argv + 1);
    const char *out = NULL, *model = NULL, *gpu_name = NULL, *kernel = NULL, *cluster = "cluster-c";
    zs_meas_set s;
    zs_meas_set_init(&s);
    zs_err e;
    zs_err_clear(&e);
    int c;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(calib_help, stdout);
            return 0;
        case 'o':
            out = optarg;
            break;
        case 'm':
            model = optarg;
            break;
        case 'g':
            gpu_name = optarg;
            break;
        case 'k':
            kernel = optarg;
            break;
        case 'C':
            cluster = optarg;
            break;
        case ZS_CLI_NCCL_COLUMN:
        case ZS_CLI_NCCL_ALGO:
        case ZS_CLI_NCCL_PROTO:
            if (zs_cli_nccl_opt(c, optarg, &s, &e))
                return zs_cli_fail(&e);
            break;
        default:
            return zs_cli_bad_option("calib", c, argv);
        }
    }
    if (optind >= argc)
        return zs_cli_usage_error("calib", "expected a subcommand (fit, show or predict)");
    const char *sub = argv[optind++];
    if (strcmp(sub, "show") == 0) {
        if (argc - optind != 1)
            return zs_cli_usage_error("calib", "calib show takes one calibration file");
        zs_calib *cal = NULL;
        if (zs_calib_load(argv[optind], &cal, &e))
            return zs_cli_fail(&e);
        zs_calib_print(stdout, cal);
        zs_calib_free(cal);
        return 0;
    }
    if (strcmp(sub, "fit") != 0)
        return zs_cli_usage_error("calib", "unknown subcommand '%s' (use fit, show or predict)",
                                  sub);
    if (!out)
        return zs_cli_usage_error("calib", "calib fit needs -o OUT.json");
    if (optind >= argc)
        return zs_cli_usage_error("calib", "calib fit needs at least one measurement file");
    zs_model m;
    zs_cluster cl;
    if (model && zs_model_load(model, &m, &e))
        return zs_cli_fail(&e);
    if (zs_cluster_load(cluster, 0, &cl, &e))
        return zs_cli_fail(&e);
    zs_gpu g;
    if (kernel && !gpu_name)
        return zs_cli_usage_error("calib", "--attn-kernel needs --gpu");
    if (gpu_name &&
        (zs_gpu_load(gpu_name, &g, &e) || (kernel && zs_gpu_select_kernel(&g, kernel, &e))))
        return zs_cli_fail(&e);
    int rc = ZS_OK;
    for (int i = optind; i < argc && rc == ZS_OK; i++)
        rc = zs_meas_read(&s, argv[i], &e);
    zs_calib *cal = NULL;
    zs_fit_opts fo = {model ? &m : NULL, NULL, NULL, &cl};
    if (rc == ZS_OK)
        rc = zs_calib_fit_gpu(&s, &fo, gpu_name ? &g : NULL, &cal, &e);
    if (rc == ZS_OK)
        rc = zs_calib_save(cal, out, &e);
    if (rc == ZS_OK) {
        printf("read %zu points from %zu files; wrote %s\n", s.n, s.nfiles, out);
        zs_calib_print(stdout, cal);
        if (!model)
            for (size_t i = 0; i < s.n; i++)
                if (strncmp(s.v[i].op, "layer:", 6) == 0) {
                    printf("note: layer-op rows were not fitted (give --model for their shape)\n");
                    break;
                }
    }
    zs_calib_free(cal);
    zs_meas_set_clear(&s);
    return rc ? zs_cli_fail(&e) : 0;
}
