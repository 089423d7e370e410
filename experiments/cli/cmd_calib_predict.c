/* `zepsim calib predict`: NCCL's choice and the calibrated time of
 * collectives on a cluster shape nobody measured (more GPUs per node, more
 * nodes), with the runner-up pair NCCL's model compared it with (why the
 * choice), for the sizes asked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_machine.h"
#include "zs_calib.h"
#include "zs_num.h"

static const char predict_help[] =
    "usage: zepsim calib predict [--calib FILE] [--cluster C] [--nodes N]\n"
    "                            [--gpus-per-node G] [--op LIST] [--sizes SPEC]\n"
    "\n"
    "Prints, per collective and size, the algorithm and protocol NCCL runs\n"
    "(NCCL 2.29.2's tuning model on the cluster's topology), NCCL's own\n"
    "estimate, the runner-up pair and its estimate (why the choice), and the\n"
    "calibrated prediction with its bus bandwidth (nccl-tests convention).\n"
    "\n"
    "options:\n";

static const zs_cli_use predict_uses[] = {
    {ZS_FP(CALIB), "whose collective parameters to use (default: NCCL's own figures, nothing "
                   "fitted)"},
    {ZS_FP(CLUSTER), "the hardware (default cluster-c)"},
    {ZS_FP(NODES), "default 1"},
    {ZS_F_GPUS_PER_NODE, "taking part (default: all of them)"},
    {ZS_F_NCCL_ALGO, "to run with (default: NCCL chooses)"},
    {ZS_F_NCCL_PROTO, "likewise"},
    {ZS_F_FORMAT, NULL},
    {0, NULL}};

static int parse_size(const char *s, double *out, zs_err *e)
{
    char buf[64];
    size_t n = strlen(s);
    double mul = 1;
    if (n > 0 && n < sizeof buf) {
        char last = s[n - 1];
        mul = last == 'K' || last == 'k'   ? 1024.0
              : last == 'M' || last == 'm' ? 1048576.0
              : last == 'G' || last == 'g' ? 1073741824.0
                                           : 1;
        snprintf(buf, sizeof buf, "%.*s", (int)(mul > 1 ? n - 1 : n), s);
    } else {
        buf[0] = '\0';
    }
    double v;
    if (zs_num_f64(buf, 1, 1e15, ZS_EUSAGE, "--sizes", &v, e))
        return ZS_EUSAGE;
    *out = v * mul;
    return ZS_OK;
}

#define MAX_SIZES 64

/* A comma list whose items are sizes or A-B ranges doubling from A. */
static int parse_sizes(const char *spec, double *v, int *n, zs_err *e)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", spec);
    *n = 0;
    char *save = NULL;
    for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(t, '-');
        double a, b;
        if (dash)
            *dash = '\0';
        if (parse_size(t, &a, e) || (dash && parse_size(dash + 1, &b, e)))
            return ZS_EUSAGE;
        if (!dash)
            b = a;
        if (b < a)
            return zs_err_set(e, ZS_EUSAGE, "--sizes", "give A-B with A <= B", "bad range in '%s'",
                              spec);
        for (double x = a; x <= b * (1 + 1e-12); x *= 2) {
            if (*n == MAX_SIZES)
                return zs_err_set(e, ZS_EUSAGE, "--sizes", NULL, "at most %d sizes", MAX_SIZES);
            v[(*n)++] = x;
        }
    }
    if (!*n)
        return zs_err_set(e, ZS_EUSAGE, "--sizes", "give sizes like 8M,64M or 8M-8G",
                          "no sizes in '%s'", spec);
    return ZS_OK;
}

static int parse_ops(const char *spec, int *ops, int *n, zs_err *e)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", spec);
    *n = 0;
    for (char *t = strtok(tmp, ","); t; t = strtok(NULL, ",")) {
        int k = -1;
        for (int i = 0; i < ZS_COLL_NKINDS; i++)
            if (strcmp(t, zs_coll_kind_name(i)) == 0)
                k = i;
        if (k < 0 || *n == ZS_COLL_NKINDS)
            return zs_err_set(e, ZS_EUSAGE, "--op",
                              "use all-gather, reduce-scatter, all-reduce or all-to-all",
                              "unknown collective '%s'", t);
        ops[(*n)++] = k;
    }
    if (!*n)
        return zs_err_set(e, ZS_EUSAGE, "--op", NULL, "no collective given");
    return ZS_OK;
}

/* NCCL's second-best enabled pair (its estimate in us), or -1. */
static double runner_up(const zs_nccl_topo *t, zs_coll_kind k, double bytes, unsigned am,
                        unsigned pm, const zs_nccl_choice *best, char *name, size_t n)
{
    double r = INFINITY;
    snprintf(name, n, "-");
    for (int a = 0; a < ZS_NCCL_NALGOS; a++)
        for (int p = 0; p < ZS_NCCL_NPROTOS; p++) {
            if ((am && !(am & (1u << a))) || (pm && !(pm & (1u << p))) ||
                (a == (int)best->algo && p == (int)best->proto))
                continue;
            double us = zs_nccl_model_us(t, k, bytes, (zs_nccl_algo)a, (zs_nccl_proto)p);
            if (us >= 0 && us < r) {
                r = us;
                snprintf(name, n, "%s/%s", zs_nccl_algo_name(a), zs_nccl_proto_name(p));
            }
        }
    return isfinite(r) ? r : -1;
}

typedef struct predict_args {
    const char *calib_path, *cluster;
    long nodes, gpn;
    int ops[ZS_COLL_NKINDS], nops, nsizes;
    double sizes[MAX_SIZES];
    unsigned am, pm;
    zs_format fmt;
    zs_cli_flags fl; /* the shared flags as given: cluster and calib point into it */
} predict_args;

static int set_ops(const char *text, void *base, zs_err *e)
{
    predict_args *a = base;
    return parse_ops(text, a->ops, &a->nops, e);
}

static int set_sizes(const char *text, void *base, zs_err *e)
{
    predict_args *a = base;
    return parse_sizes(text, a->sizes, &a->nsizes, e);
}

static const zs_opt_spec predict_own[] = {
    ZS_OPT_SET("op", set_ops, NULL, "LIST",
               "all-gather,reduce-scatter,all-reduce,all-to-all (default: the first three)"),
    ZS_OPT_SET("sizes", set_sizes, "8M-8G", "SPEC",
               "sizes in bytes (nccl-tests \"size\": the whole buffer), a comma list of sizes or "
               "A-B ranges doubling from A, K/M/G binary suffixes"),
};

/* -1: parsed; otherwise the exit status. */
static int parse_args(int argc, char **argv, predict_args *a)
{
    static const zs_cli_cmd cmd = {.name = "calib predict",
                                   .head = predict_help,
                                   ZS_CLI_OWN_ROWS(predict_own),
                                   .uses = predict_uses};
    int st = zs_cli_parse(&cmd, argc, argv, a, &a->fl);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    if (zs_cli_given(&a->fl, ZS_P_CLUSTER))
        a->cluster = a->fl.p.cluster;
    a->calib_path = zs_cli_given(&a->fl, ZS_P_CALIB);
    if (a->fl.p.nodes)
        a->nodes = a->fl.p.nodes;
    /* the lists were checked when given */
    if (a->fl.nccl_algo)
        zs_nccl_algo_mask_parse(a->fl.nccl_algo, &a->am, &e);
    if (a->fl.nccl_proto)
        zs_nccl_proto_mask_parse(a->fl.nccl_proto, &a->pm, &e);
    a->fmt = a->fl.fmt;
    a->gpn = a->fl.gpus_per_node;
    if (optind < argc)
        return zs_cli_usage_error("calib", "calib predict takes options only, not '%s'",
                                  argv[optind]);
    return -1;
}

static void print_header(const predict_args *a, const zs_cluster *cl, const zs_nccl_topo *t,
                         const zs_nccl_params *prm)
{
    printf("cluster %s: %d node(s) x %d GPUs (%s, sm%d), %d NIC(s) per node at %.0f Gb/s; "
           "NVLink SHARP %s, CollNet %s\n",
           cl->name, t->nnodes, t->ppn, cl->gpu.name, t->sm, t->nics, cl->nic_gbps,
           t->nvls ? "yes" : "no", t->collnet ? "yes" : "no");
    printf("NCCL 2.29.2 model: ring %d x %.1f GB/s, tree %d x %.1f/%.1f GB/s, nvls %d x "
           "%.1f/%.1f GB/s (channels x intra/inter)\n",
           t->ring.nch, t->ring.bw_intra, t->tree.nch, t->tree.bw_intra, t->tree.bw_inter,
           t->nvls_g.nch, t->nvls_g.bw_intra, t->nvls_g.bw_inter);
    if (prm) {
        printf("calibration %s:", a->calib_path);
        for (int i = 0; i < ZS_NP_NPARAMS; i++)
            if (prm->fitted[i])
                printf(" %s %.4g", zs_nccl_param_name(i), prm->v[i]);
        printf(" (the rest NCCL's)\n");
    } else {
        printf("no calibration of collectives: NCCL's own figures, no size ramp\n");
    }
    printf("\n");
}

/* One row per collective and size. */
static int predict_table(const predict_args *a, const zs_nccl_topo *t, const zs_nccl_params *prm,
                         zs_err *e)
{
    zs_table *tb = zs_table_new("collectives");
    static const char *const cols[] = {"op",        "bytes",     "nccl",         "nccl_us",
                                       "runner_up", "runner_us", "predicted_us", "busbw_gbs"};
    for (int i = 0; i < 8; i++)
        zs_table_col(tb, cols[i], i == 1 || i == 3 || i >= 5);
    int rc = ZS_OK;
    for (int o = 0; o < a->nops && rc == ZS_OK; o++)
        for (int i = 0; i < a->nsizes && rc == ZS_OK; i++) {
            zs_nccl_choice ch;
            zs_coll_kind k = (zs_coll_kind)a->ops[o];
            double b = a->sizes[i];
            if ((rc = zs_nccl_choose(t, k, b, a->am, a->pm, prm, &ch, e)))
                break;
            char ru[32];
            double rus = runner_up(t, k, b, a->am, a->pm, &ch, ru, sizeof ru);
            double bus = zs_nccl_bus_bytes(k, t->nranks, b);
            zs_table_row(tb);
            zs_table_set(tb, 0, "%s", zs_coll_kind_name(k));
            zs_table_num(tb, 1, "%.0f", b);
            zs_table_set(tb, 2, "%s/%s", zs_nccl_algo_name(ch.algo), zs_nccl_proto_name(ch.proto));
            zs_table_num(tb, 3, "%.1f", ch.nccl_us);
            if (rus >= 0) { /* no other algorithm and protocol: both cells empty */
                zs_table_set(tb, 4, "%s", ru);
                zs_table_num(tb, 5, "%.1f", rus);
            }
            zs_table_num(tb, 6, "%.1f", ch.seconds * 1e6);
            zs_table_num(tb, 7, "%.1f", ch.seconds > 0 ? bus / ch.seconds / 1e9 : NAN);
        }
    if (rc) {
        zs_table_free(tb);
        return rc;
    }
    return zs_cli_print1("calib", a->fmt, "collectives", tb) ? ZS_EIO : ZS_OK;
}

int zs_cmd_calib_predict(int argc, char **argv)
{
    predict_args a = {.cluster = "cluster-c",
                      .nodes = 1,
                      .ops = {ZS_COLL_ALLGATHER, ZS_COLL_REDUCESCATTER, ZS_COLL_ALLREDUCE},
                      .nops = 3,
                      .fmt = ZS_FMT_TABLE};
    int st = parse_args(argc, argv, &a);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    /* The machine loader, as every command loads one: a calibration's
     * NVLink and NIC figures go into the cluster the topology is built on,
     * as they do for the cost model `simulate --calib` prices with. */
    zs_machine_cfg mc;
    zs_machine_cfg_init(&mc);
    mc.cluster = a.cluster;
    mc.nodes = (int)a.nodes;
    mc.calib = a.calib_path;
    zs_machine mach;
    if (zs_machine_load(&mc, &mach, &e))
        return zs_cli_fail(&e);
    zs_cluster cl = mach.cluster;
    zs_calib *cal = mach.calib; /* ours now: freed below */
    mach.calib = NULL;
    zs_machine_clear(&mach);
    int ppn = a.gpn ? (int)a.gpn : cl.gpus_per_node;
    zs_nccl_topo t;
    int rc = ZS_OK;
    if (a.nodes * ppn < 2) {
        zs_calib_free(cal);
        return zs_cli_usage_error("calib", "a collective needs at least 2 GPUs (--nodes, "
                                           "--gpus-per-node)");
    }
    if ((rc = zs_nccl_topo_init(&cl, (int)a.nodes, ppn, 0, &t, &e)) == ZS_OK) {
        const zs_nccl_params *prm = zs_calib_nccl(cal);
        if (a.fmt == ZS_FMT_TABLE)
            print_header(&a, &cl, &t, prm);
        rc = predict_table(&a, &t, prm, &e);
    }
    zs_calib_free(cal);
    if (rc == ZS_EIO && !e.what[0]) /* the output failed: already said */
        return 1;
    return rc ? zs_cli_fail(&e) : 0;
}
