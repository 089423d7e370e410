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

#define HW_EXIT                                                                                    \
    "Exit status: 0 success, 1 no GPU / backend not built / runtime failure, 2 bad usage.\n"

static const char hw_help[] =
    "usage: zepsim hw devices|check|run|bench [options]\n"
    "\n"
    "Runs on real GPUs with CUDA and NCCL (docs/hw-backend.md).\n"
    "\n"
    "  hw devices              list the visible GPUs\n"
    "  hw check                check every CUDA kernel against the CPU reference\n"
    "  hw run PLAN.json        execute a schedule dump (`zepsim plan --dump`) and report\n"
    "  hw bench                calibration microbenchmarks -> measurement file\n"
    "\n" HW_EXIT;

/* hw run's own options, into its configuration. */
typedef struct hw_run_args {
    zs_hw_run_cfg cfg;
    int only; /* --check-only */
} hw_run_args;

enum { R_WARMUP, R_ITERS, R_RANK, R_NPROCS, R_RENDEZVOUS, R_CHECK_ONLY };
#define R(r, name, type, m, lo, hi, def, arg, help)                                                \
    [R_##r] = ZS_OPT_ROW(name, type, hw_run_args, m, lo, hi, def, arg, help)
static const zs_opt_spec run_own[] = {
    R(WARMUP, "warmup", ZS_OPT_INT, cfg.warmup, 0, 1000, ZS_CLI_STR(ZS_HW_WARMUP), "N",
      "unmeasured iterations"),
    R(ITERS, "iters", ZS_OPT_INT, cfg.iters, 1, 1000, ZS_CLI_STR(ZS_HW_ITERS), "N",
      "measured iterations, the median one is reported"),
    R(RANK, "rank", ZS_OPT_INT, cfg.rank, 0, 1 << 20, NULL, "R",
      "one process per GPU (several nodes): this process's GPU, with --nprocs and --rendezvous"),
    R(NPROCS, "nprocs", ZS_OPT_INT, cfg.nprocs, 1, 1 << 20, "1", "N",
      "the processes (GPUs) of the run"),
    R(RENDEZVOUS, "rendezvous", ZS_OPT_TEXT, cfg.rendezvous, 0, 0, NULL, "FILE",
      "the NCCL id goes through FILE on a shared file system"),
    R(CHECK_ONLY, "check-only", ZS_OPT_FLAG, only, 0, 1, NULL, NULL,
      "prepare the plan on the CPU only (no GPU needed) and print what a run would need"),
};
#undef R
static const zs_cli_use run_uses[] = {
    {ZS_FP(TIMELINE), "hw run: of the kept (median) iteration, every rank and layer"},
    {ZS_F_GPUS_PER_NODE, "of the timeline's processes (default " ZS_CLI_STR(ZS_HW_GPN) ")"},
    {ZS_F_FORMAT, NULL},
    {0, NULL}};
static const zs_cli_cmd run_cmd = {
    .name = "hw run",
    .head = "usage: zepsim hw run PLAN.json [options]\n\n"
            "Executes a schedule dump (`zepsim plan --dump`) on the GPUs and reports it.\n\n"
            "options:\n",
    ZS_CLI_OWN_ROWS(run_own),
    .uses = run_uses,
    .tail = "\n" HW_EXIT};

/* hw bench's own options, and the models it was given (--model repeats). */
typedef struct hw_bench_args {
    zs_hw_bench_cfg cfg;
    int nmodels;
} hw_bench_args;

static const zs_opt_spec bench_own[] = {
    ZS_OPT_ROW("max-tokens", ZS_OPT_INT, hw_bench_args, cfg.max_tokens, 512, 1 << 20,
               ZS_CLI_STR(ZS_HW_MAX_TOKENS), "N", "largest attention length and GEMM token count"),
    ZS_OPT_ROW("quick", ZS_OPT_FLAG, hw_bench_args, cfg.quick, 0, 1, NULL, NULL, "fewer points"),
};
static const zs_cli_use bench_uses[] = {
    {ZS_FP(MODEL), "repeatable (default llama-7b)"},
    {ZS_F_REPS, "per point, the median is reported (default " ZS_CLI_STR(ZS_HW_REPS) ")"},
    {ZS_F_OUT, "the measurement file (default: standard output)"},
    {0, NULL}};

/* Each --model adds one (its name was checked when given: a typo fails
 * before any device work). */
static int bench_model(int id, const char *text, void *args)
{
    hw_bench_args *a = args;
    if (id != ZS_FP(MODEL))
        return 0;
    if (a->nmodels >= 7)
        return zs_cli_usage_error("hw", "at most 7 --model options");
    a->cfg.models[a->nmodels++] = text;
    a->cfg.models[a->nmodels] = NULL;
    return 0;
}

static const zs_cli_cmd bench_cmd = {
    .name = "hw bench",
    .head = "usage: zepsim hw bench [options]\n\n"
            "Calibration microbenchmarks on the GPUs, written as a measurement file.\n\n"
            "options:\n",
    ZS_CLI_OWN_ROWS(bench_own),
    .uses = bench_uses,
    .tail = "\n" HW_EXIT,
    .each = bench_model};

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
    ROW("host_copy_max", "%.0f", nd.host_copy_bytes, "bytes (d2h/h2d, pinned on the host)");
#undef ROW
    zs_hw_progs_free(progs, s->nranks);
    return zs_cli_print1("hw", fmt, "check", t);
}

static int run(int argc, char **argv)
{
    zs_cli_flags fl;
    hw_run_args a = {.cfg = zs_hw_run_cfg_default(), .only = 0};
    int st = zs_cli_parse(&run_cmd, argc, argv, &a, &fl);
    if (st >= 0)
        return st;
    zs_hw_run_cfg cfg = a.cfg;
    if (!zs_cli_was_given(&fl, ZS_CLI_OWN + R_RANK))
        cfg.rank = -1; /* one thread per GPU */
    if (fl.p.timeline[0])
        cfg.exec.timeline = fl.p.timeline;
    if (fl.gpus_per_node)
        cfg.gpus_per_node = fl.gpus_per_node;
    zs_format fmt = fl.fmt;
    int only = a.only;
    zs_err e;
    zs_err_clear(&e);
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
    hw_bench_args ba;
    memset(&ba, 0, sizeof ba);
    ba.cfg = zs_hw_bench_cfg_default();
    zs_cli_flags fl;
    int st = zs_cli_parse(&bench_cmd, argc, argv, &ba, &fl);
    if (st >= 0)
        return st;
    zs_hw_bench_cfg cfg = ba.cfg;
    if (fl.reps)
        cfg.reps = fl.reps;
    const char *out = fl.out;
    zs_err e;
    zs_err_clear(&e);
    if (argc != optind)
        return zs_cli_usage_error("hw", "hw bench takes no positional argument");
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
    if (zs_cli_is_help(sub) || strcmp(sub, "help") == 0) {
        fputs(hw_help, stdout);
        fputc('\n', stdout);
        zs_cli_help(stdout, &run_cmd);
        fputc('\n', stdout);
        zs_cli_help(stdout, &bench_cmd);
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
