/* Study-point options shared by simulate, compare and plan: see cli_point.h. */
#include "cli_point.h"
#include "zs_num.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char zs_cli_point_help[] =
    "  --model NAME|FILE      model (default llama-7b; `zepsim list models`)\n"
    "  --cluster NAME|FILE    cluster (default cluster-a; `zepsim list clusters`)\n"
    "  --nodes N              nodes (default 16)\n"
    "  --trace SPEC|FILE      document lengths: a preset (arxiv, github, prolong64k, ...),\n"
    "                         uniform:A-B, fixed:N, lognormal:MU,SIGMA, mix:..., or a file\n"
    "                         (default arxiv; `zepsim trace presets`)\n"
    "  --context TOKENS       tokens per context group (default 262144)\n"
    "  --group GPUS           GPUs per context group; global batch = GPUs/group x context\n"
    "                         (default 16, the Zeppelin paper's CP groups of 2 nodes)\n"
    "  --iterations N         training iterations simulated (default 3)\n"
    "  --seed S               seed of the trace generator and planners (default 1)\n"
    "  --backend sim|analytic SimGrid (contention) or the analytic evaluator (default sim)\n"
    "  --calib FILE           calibration from `zepsim calib fit` (default: analytic costs)\n"
    "  --opt K=V[,K=V]        method options (repeatable; `zepsim plan --help` lists them)\n"
    "  --no-routing --no-remap --no-hier   Zeppelin ablation switches\n"
    "  --zero S               ZeRO stage 0-3 (default 1)\n"
    "  --recompute none|full  activation recomputation (default full)\n"
    "  --validate             check every plan with the plan validator\n"
    "  --timeline FILE        sim: Chrome trace of the last iteration\n"
    "  --timeline-ranks A-B   only ranks A..B in the timeline (default all; also `A`)\n"
    "  --timeline-layers A-B  only layers A..B (from 0) in the timeline (default all)\n"
    "  --format table|csv|json  output format (default table)\n";

static int append_opt(zs_point_cfg *p, const char *kv, zs_err *e)
{
    size_t len = strlen(p->opts);
    if (len + strlen(kv) + 2 >= sizeof p->opts)
        return zs_err_set(e, ZS_EUSAGE, "--opt", NULL, "too many method options");
    snprintf(p->opts + len, sizeof p->opts - len, "%s%s", len ? "," : "", kv);
    return ZS_OK;
}

static int copy(char *dst, size_t n, const char *src, const char *opt, zs_err *e)
{
    if (strlen(src) >= n || !*src)
        return zs_err_set(e, ZS_EUSAGE, opt, "give a shorter, non-empty value", "bad value '%s'",
                          src);
    memcpy(dst, src, strlen(src) + 1);
    return ZS_OK;
}

/* 1: c was a point option (ok); 0: it is not one; -1: bad value (e filled). */
static int point_opt(int c, const char *arg, zs_point_cfg *p, zs_format *fmt, zs_err *e)
{
    long v;
    int rc = ZS_OK;
    switch (c) {
    case ZS_PO_MODEL:
        rc = copy(p->model, sizeof p->model, arg, "--model", e);
        break;
    case ZS_PO_CLUSTER:
        rc = copy(p->cluster, sizeof p->cluster, arg, "--cluster", e);
        break;
    case ZS_PO_NODES:
        rc = zs_cli_parse_int("--nodes", arg, 1, 65536, &v, e);
        p->nodes = (int)v;
        break;
    case ZS_PO_TRACE:
        rc = copy(p->trace, sizeof p->trace, arg, "--trace", e);
        break;
    case ZS_PO_METHOD:
        rc = copy(p->method, sizeof p->method, arg, "--method", e);
        break;
    case ZS_PO_OPT:
        rc = append_opt(p, arg, e);
        break;
    case ZS_PO_CONTEXT:
        rc = zs_cli_parse_int("--context", arg, 1, 1L << 34, &v, e);
        p->context = v;
        break;
    case ZS_PO_GROUP:
        rc = zs_cli_parse_int("--group", arg, 1, 1 << 20, &v, e);
        p->group = (int)v;
        break;
    case ZS_PO_ITERS:
        rc = zs_cli_parse_int("--iterations", arg, 1, 100000, &v, e);
        p->iterations = (int)v;
        break;
    case ZS_PO_SEED: {
        uint64_t s = p->seed;
        rc = zs_num_u64(arg, 0, UINT64_MAX, ZS_EUSAGE, "--seed", &s, e);
        p->seed = s;
        break;
    }
    case ZS_PO_BACKEND:
        if (strcmp(arg, "sim") && strcmp(arg, "analytic"))
            rc = zs_err_set(e, ZS_EUSAGE, "--backend", "use sim or analytic",
                            "unknown backend '%s'", arg);
        else
            snprintf(p->backend, sizeof p->backend, "%s", arg);
        break;
    case ZS_PO_CALIB:
        rc = copy(p->calib, sizeof p->calib, arg, "--calib", e);
        break;
    case ZS_PO_ZERO:
        rc = zs_cli_parse_int("--zero", arg, 0, 3, &v, e);
        p->zero_stage = (int)v;
        break;
    case ZS_PO_RECOMPUTE:
        if (!strcmp(arg, "none"))
            p->recompute = ZS_RECOMPUTE_NONE;
        else if (!strcmp(arg, "full"))
            p->recompute = ZS_RECOMPUTE_FULL;
        else
            rc = zs_err_set(e, ZS_EUSAGE, "--recompute", "use none or full",
                            "unknown recomputation mode '%s'", arg);
        break;
    case ZS_PO_VALIDATE:
        p->validate = 1;
        break;
    case ZS_PO_NO_ROUTING:
        rc = append_opt(p, "routing=0", e);
        break;
    case ZS_PO_NO_REMAP:
        rc = append_opt(p, "remap=0", e);
        break;
    case ZS_PO_NO_HIER:
        rc = append_opt(p, "hier=0", e);
        break;
    case ZS_PO_TIMELINE:
        rc = copy(p->timeline, sizeof p->timeline, arg, "--timeline", e);
        break;
    case ZS_PO_TL_RANKS:
        rc = zs_cli_parse_timeline_limit(0, arg, &p->tl_rank0, &p->tl_rank1, e);
        break;
    case ZS_PO_TL_LAYERS:
        rc = zs_cli_parse_timeline_limit(1, arg, &p->tl_layer0, &p->tl_layer1, e);
        break;
    case ZS_PO_FORMAT:
        rc = zs_format_parse(arg, fmt, e);
        break;
    default:
        return 0;
    }
    return rc ? -1 : 1;
}

int zs_cli_point_opt(const char *cmd, int c, char **argv, zs_point_cfg *p, zs_format *fmt)
{
    zs_err e;
    zs_err_clear(&e);
    int h = point_opt(c, optarg, p, fmt, &e);
    return h > 0 ? 0 : h < 0 ? zs_cli_fail(&e) : zs_cli_bad_option(cmd, c, argv);
}

void zs_cli_point_print_cfg(FILE *f, const zs_point_cfg *p, const char *cost_desc)
{
    fprintf(f, "# model %s, cluster %s x %d nodes, trace %s, seed %llu\n", p->model, p->cluster,
            p->nodes, p->trace, (unsigned long long)p->seed);
    fprintf(f,
            "# context %lld tokens per %d-GPU group, %d iterations, backend %s, ZeRO-%d, "
            "recompute %s\n",
            (long long)p->context, p->group, p->iterations, p->backend, p->zero_stage,
            p->recompute == ZS_RECOMPUTE_FULL ? "full" : "none");
    if (p->opts[0])
        fprintf(f, "# method options: %s\n", p->opts);
    if (cost_desc && *cost_desc)
        fprintf(f, "# cost model: %s%s%s\n", cost_desc, p->calib[0] ? ", calibration " : "",
                p->calib);
}

void zs_cli_progress(const char *what, int done, int total)
{
    if (!isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\r%-60s %d/%d%s", what, done, total, done == total ? "\n" : "");
    fflush(stderr);
}
