/* `zepsim hw devices|check|run|bench`: the CUDA/NCCL hardware backend.
 * Without a GPU (or in a build without CUDA) every subcommand that needs
 * one says why and exits 1; `hw run --check-only` prepares a plan on the
 * CPU alone (unrolling, message matching, buffer sizes). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_afile.h"
#include "zs_hw.h"
#include "zs_hw_info.h"
#include "zs_hw_prog.h"

static const char hw_help[] =
    "usage: zepsim hw devices|check|run|bench [options]\n"
    "\n"
    "Runs on real GPUs with CUDA and NCCL (docs/hw-backend.md).\n"
    "\n"
    "  hw devices              list the visible GPUs\n"
    "  hw check                check every CUDA kernel against the CPU reference\n"
    "  hw run PLAN.json        execute a schedule dump (`zepsim plan --dump`) and report\n"
    "      --warmup N          unmeasured iterations (default 1)\n"
    "      --iters N           measured iterations, the median one is reported (default 3)\n"
    "      --timeline FILE     Chrome trace of the kept iteration (Perfetto, chrome://tracing)\n"
    "      --gpus-per-node N   timeline: GPUs per node (default 8)\n"
    "      --rank R --nprocs N --rendezvous FILE\n"
    "                          one process per GPU (several nodes): the NCCL id goes\n"
    "                          through FILE on a shared file system\n"
    "      --check-only        prepare the plan on the CPU only (no GPU needed) and print\n"
    "                          what a run would need\n"
    "      --format table|csv|json\n"
    "  hw bench                calibration microbenchmarks -> measurement file\n"
    "      --model M           model preset or file (repeatable, default llama-7b)\n"
    "      --max-tokens N      largest attention length and GEMM token count (default 16384)\n"
    "      --reps N            timed repetitions per point (default 5)\n"
    "      --quick             fewer points\n"
    "      --out FILE          measurement file (default: standard output)\n"
    "\n"
    "Exit status: 0 success, 1 no GPU / backend not built / runtime failure, 2 bad usage.\n";

static int devices(void)
{
    int n = 0;
    char desc[4096];
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_hw_devices(&n, desc, sizeof desc, &e);
    if (rc)
        return zs_cli_fail(&e);
    printf("%s\n%s\n", zs_hw_build_summary(), desc);
    return 0;
}

static int check_only(const zs_schedule *s, zs_format fmt)
{
    zs_hw_prog *progs = NULL;
    zs_hw_needs nd;
    zs_err e;
    zs_err_clear(&e);
    int rc = zs_hw_progs_build(s, &progs, &nd, &e);
    if (rc)
        return zs_cli_fail(&e);
    int64_t items = 0;
    for (int r = 0; r < s->nranks; r++)
        items += progs[r].n;
    zs_table *t = zs_table_new("hw run --check-only: the plan is executable as written");
    zs_table_col(t, "key", 0);
    zs_table_col(t, "value", 1);
    zs_table_col(t, "unit", 0);
#define ROW(k, f, v, u)                                                                            \
    do {                                                                                           \
        zs_table_row(t);                                                                           \
        zs_table_set(t, 0, "%s", k);                                                               \
        zs_table_set(t, 1, f, v);                                                                  \
        zs_table_set(t, 2, "%s", u);                                                               \
    } while (0)
    ROW("ranks", "%d", s->nranks, "GPUs");
    ROW("streams", "%d", s->nstreams, "per GPU");
    ROW("unrolled_ops", "%lld", (long long)items, "ops");
    ROW("p2p_lanes", "%d", nd.p2p_lanes, "NCCL communicators for send/recv");
    ROW("groups", "%d", s->ngroups, "collective groups");
    ROW("attn_rows_max", "%lld", (long long)nd.attn_q_rows, "query rows in one op");
    ROW("attn_heads_max", "%d", nd.attn_heads, "heads");
    ROW("gemm_max", "%.0f", nd.gemm_c, "output elements");
    ROW("p2p_max", "%.0f", nd.p2p_bytes, "bytes");
    ROW("coll_max", "%.0f", nd.coll_bytes, "bytes");
#undef ROW
    zs_hw_progs_free(progs, s->nranks);
    return zs_cli_print1("hw", fmt, "check", t);
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"warmup", required_argument, 0, 'w'},
                                         {"iters", required_argument, 0, 'i'},
                                         {"timeline", required_argument, 0, 't'},
                                         {"gpus-per-node", required_argument, 0, 'g'},
                                         {"rank", required_argument, 0, 'r'},
                                         {"nprocs", required_argument, 0, 'n'},
                                         {"rendezvous", required_argument, 0, 'z'},
                                         {"check-only", no_argument, 0, 'c'},
                                         {"format", required_argument, 0, 'f'},
                                         {0, 0, 0, 0}};
    zs_hw_run_cfg cfg = zs_hw_run_cfg_default();
    zs_format fmt = ZS_FMT_TABLE;
    zs_err e;
    zs_err_clear(&e);
    int only = 0, c;
    long v;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        int rc = ZS_OK;
        switch (c) {
        case 'h':
            fputs(hw_help, stdout);
            return 0;
        case 'w':
            rc = zs_cli_parse_int("--warmup", optarg, 0, 1000, &v, &e);
            cfg.warmup = (int)v;
            break;
        case 'i':
            rc = zs_cli_parse_int("--iters", optarg, 1, 1000, &v, &e);
            cfg.iters = (int)v;
            break;
        case 't':
            cfg.exec.timeline = optarg;
            break;
        case 'g':
            rc = zs_cli_parse_int("--gpus-per-node", optarg, 1, 1024, &v, &e);
            cfg.gpus_per_node = (int)v;
            break;
        case 'r':
            rc = zs_cli_parse_int("--rank", optarg, 0, 1 << 20, &v, &e);
            cfg.rank = (int)v;
            break;
        case 'n':
            rc = zs_cli_parse_int("--nprocs", optarg, 1, 1 << 20, &v, &e);
            cfg.nprocs = (int)v;
            break;
        case 'z':
            cfg.rendezvous = optarg;
            break;
        case 'c':
            only = 1;
            break;
        case 'f':
            rc = zs_format_parse(optarg, &fmt, &e);
            break;
        default:
            return zs_cli_bad_option("hw run", c, argv);
        }
        if (rc)
            return zs_cli_fail(&e);
    }
    if (argc - optind != 1)
        return zs_cli_usage_error("hw", "hw run expects one plan file (a schedule dump)");
    if ((cfg.rank >= 0) != (cfg.nprocs > 1) || (cfg.nprocs > 1 && !cfg.rendezvous))
        return zs_cli_usage_error("hw", "--rank, --nprocs (> 1) and --rendezvous go together");
    zs_schedule *s = NULL;
    int rc = zs_schedule_load_file(argv[optind], &s, &e);
    if (rc)
        return zs_cli_fail(&e);
    if (only) {
        rc = check_only(s, fmt);
        zs_schedule_free(s);
        return rc;
    }
    zs_result *r = NULL;
    rc = zs_hw_run(s, &cfg, &r, &e);
    if (rc == ZS_OK) {
        for (int32_t d = 0; d < s->ndocs; d++)
            r->tokens += s->doc_len[d]; /* the batch's tokens, for tokens/s */
        zs_table *t = zs_table_kv_new("hw run: measured on GPUs");
        zs_result_summary(r, t);
        zs_table *ranks = zs_table_new("per rank (ms)");
        const char *cols[] = {"rank", "compute_ms", "exposed_ms", "idle_ms", "comm_ms", "end_ms"};
        for (int i = 0; i < 6; i++)
            zs_table_col(ranks, cols[i], 1);
        zs_result_ranks(r, ranks);
        zs_output *d = zs_output_new("hw", fmt, stdout);
        if (d) {
            zs_output_table(d, "result", t);
            zs_output_table(d, "ranks", ranks);
            zs_output_text(d, "\nslowest rank %d: %s\n", r->slowest_rank, r->slowest_why);
            zs_output_set_text(d, NULL, "why", r->slowest_why);
            if (r->notes[0])
                zs_output_note(d, "notes: %s", r->notes);
        } else {
            zs_table_free(t);
            zs_table_free(ranks);
        }
        int out = zs_cli_doc_end(d);
        zs_result_free(r);
        zs_schedule_free(s);
        return out;
    }
    zs_result_free(r);
    zs_schedule_free(s);
    return zs_cli_fail(&e);
}

static int bench(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"model", required_argument, 0, 'm'},
                                         {"max-tokens", required_argument, 0, 't'},
                                         {"reps", required_argument, 0, 'r'},
                                         {"quick", no_argument, 0, 'q'},
                                         {"out", required_argument, 0, 'o'},
                                         {0, 0, 0, 0}};
    zs_hw_bench_cfg cfg = zs_hw_bench_cfg_default();
    const char *out = NULL;
    int nmodels = 0, c;
    long v;
    zs_err e;
    zs_err_clear(&e);
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        int rc = ZS_OK;
        switch (c) {
        case 'h':
            fputs(hw_help, stdout);
            return 0;
        case 'm':
            if (nmodels >= 7)
                return zs_cli_usage_error("hw", "at most 7 --model options");
            cfg.models[nmodels++] = optarg;
            cfg.models[nmodels] = NULL;
            break;
        case 't':
            rc = zs_cli_parse_int("--max-tokens", optarg, 512, 1 << 20, &v, &e);
            cfg.max_tokens = (int)v;
            break;
        case 'r':
            rc = zs_cli_parse_int("--reps", optarg, 1, 1000, &v, &e);
            cfg.reps = (int)v;
            break;
        case 'q':
            cfg.quick = 1;
            break;
        case 'o':
            out = optarg;
            break;
        default:
            return zs_cli_bad_option("hw bench", c, argv);
        }
        if (rc)
            return zs_cli_fail(&e);
    }
    if (argc != optind)
        return zs_cli_usage_error("hw", "hw bench takes no positional argument");
    /* Models are checked before any device work, so typos fail fast. */
    for (int i = 0; cfg.models[i]; i++) {
        zs_model m;
        if (zs_model_load(cfg.models[i], &m, &e))
            return zs_cli_fail(&e);
    }
    int n = 0;
    if (zs_hw_devices(&n, NULL, 0, &e))
        return zs_cli_fail(&e);
    zs_afile a;
    if (out && zs_afile_open(&a, out, &e))
        return zs_cli_fail(&e);
    cfg.log = stderr;
    int rc = zs_hw_bench(&cfg, out ? a.f : stdout, &e);
    if (out)
        rc = rc ? zs_afile_fail(&a, rc, &e) : zs_afile_commit(&a, &e);
    return rc ? zs_cli_fail(&e) : 0;
}

int zs_cmd_hw(int argc, char **argv)
{
    if (argc < 2)
        return zs_cli_usage_error("hw", "expected a subcommand: devices, check, run or bench");
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
        fputs(hw_help, stdout);
        return 0;
    }
    if (strcmp(sub, "devices") == 0)
        return argc == 2 ? devices() : zs_cli_usage_error("hw", "hw devices takes no argument");
    if (strcmp(sub, "check") == 0) {
        if (argc != 2)
            return zs_cli_usage_error("hw", "hw check takes no argument");
        zs_err e;
        zs_err_clear(&e);
        int rc = zs_hw_check(stdout, &e);
        if (rc == ZS_OK)
            printf("all kernel checks passed\n");
        return rc ? zs_cli_fail(&e) : 0;
    }
    if (strcmp(sub, "run") == 0)
        return run(argc - 1, argv + 1);
    if (strcmp(sub, "bench") == 0)
        return bench(argc - 1, argv + 1);
    return zs_cli_usage_error("hw", "unknown subcommand '%s' (use devices, check, run or bench)",
                              sub);
}
