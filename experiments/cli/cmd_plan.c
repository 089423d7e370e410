/* `zepsim plan`: plans one global batch with a method and reports the plan
 * (layout, tokens per GPU, imbalance, schedule size); `--dump FILE` saves
 * the schedule for `zepsim run` or `zepsim hw run`, `--chakra DIR` writes
 * it as Chakra execution traces (one per rank) for ASTRA-sim and
 * `zepsim run --chakra`. The batch is the one
 * `zepsim simulate` plans in the same iteration (zs_point_plan_batch: the
 * method's own batcher, the same env). */
#include <stdlib.h>
#include <string.h>

#include "cli_point.h"
#include "zs_chakra.h"
#include "zs_point_advice.h"
#include "zs_planner.h"

typedef struct plan_args {
    zs_point_cfg p;
    zs_format fmt;
    const char *dump;
    const char *chakra, *chakra_prefix;
    long batch;
} plan_args;

static void methods_help(void)
{
    printf("\nmethods and their options (--opt K=V; from each planner's option table):\n");
    for (int i = 0; i < zs_planner_count(); i++) {
        const zs_planner_ops *p = zs_planner_at(i);
        printf("  %-10s %s\n", p->name, p->summary);
        for (int k = 0; p->options && p->options[k]; k++) {
            char row[768];
            zs_opt_help_row(p->options[k], row, sizeof row);
            printf("             %s\n", row);
        }
    }
}

static const char plan_help[] =
    "usage: zepsim plan --method NAME [options] [--dump FILE]\n\n"
    "Plans one global batch and prints the plan's figures; --dump writes the\n"
    "schedule as JSON for `zepsim run` (either backend) or `zepsim hw run`.\n\n"
    "options:\n";

static const zs_opt_spec plan_own[] = {
    ZS_OPT_ROW("dump", ZS_OPT_TEXT, plan_args, dump, 0, 0, NULL, "FILE", "write the schedule"),
    ZS_OPT_ROW("chakra", ZS_OPT_TEXT, plan_args, chakra, 0, 0, NULL, "DIR",
               "write the schedule as Chakra execution traces, one per rank: DIR/PREFIX.RANK.et "
               "(and DIR/PREFIX.comm_group.json)"),
    ZS_OPT_ROW("chakra-prefix", ZS_OPT_TEXT, plan_args, chakra_prefix, 0, 0, NULL, "NAME",
               "PREFIX of those files (default: the method's name)"),
    ZS_OPT_ROW("batch", ZS_OPT_INT, plan_args, batch, 0, 1000000, "0", "K",
               "plan the K-th global batch of the trace"),
};

/* plan runs no backend: it takes the timeline options only to say so
 * (`plan --timeline`: "plan runs no backend"), and leaves them out of its
 * help (an empty note). */
static const zs_popt_row no_run[] = {ZS_P_INTERFERENCE, ZS_P_TIMELINE, ZS_P_TL_RANKS,
                                     ZS_P_TL_LAYERS, ZS_P_COUNT};
static const zs_cli_use hidden[] = {
    {ZS_FP(TIMELINE), ""}, {ZS_FP(TL_RANKS), ""}, {ZS_FP(TL_LAYERS), ""}, {0, NULL}};

/* -1: parsed; otherwise the exit status (help printed, or an error). */
static int parse_args(int argc, char **argv, plan_args *a)
{
    zs_cli_use uses[ZS_CLI_MAX_OPTS];
    zs_cli_point_uses(no_run, hidden, uses);
    const zs_cli_cmd cmd = {
        .name = "plan", .head = plan_help, ZS_CLI_OWN_ROWS(plan_own), .uses = uses};
    zs_cli_flags fl;
    int st = zs_cli_parse(&cmd, argc, argv, a, &fl);
    if (st == 0) /* the help: then each method's options */
        methods_help();
    if (st >= 0)
        return st;
    a->p = fl.p;
    a->fmt = fl.fmt;
    if (optind < argc)
        return zs_cli_usage_error("plan", "unexpected argument '%s'", argv[optind]);
    if (a->chakra_prefix && !a->chakra)
        return zs_cli_usage_error("plan", "--chakra-prefix needs --chakra DIR");
    if (a->p.timeline[0] || a->p.tl_ranks[0] || a->p.tl_layer0 >= 0)
        return zs_cli_usage_error("plan",
                                  "--timeline needs a run: plan runs no backend (use `zepsim "
                                  "simulate --timeline`, or `zepsim plan --dump F` then "
                                  "`zepsim run F --timeline`)");
    return -1;
}

static void kv(zs_table *t, const char *k, const char *fmt, double v, const char *unit)
{
    zs_table_kv_num(t, k, unit, fmt, v);
}

static const char *chakra_prefix(const plan_args *a, const zs_point_plan *pl)
{
    return a->chakra_prefix ? a->chakra_prefix : pl->method;
}

/* The schedule as Chakra traces (the model's shapes giving attention
 * FLOPs), and ASTRA-sim's inputs for the cluster beside them: the
 * machine the plan was made for. */
static int write_chakra(const plan_args *a, const zs_point_plan *pl, zs_err *e)
{
    const char *prefix = chakra_prefix(a, pl);
    int rc = zs_chakra_write(pl->sched, &pl->model, a->chakra, prefix, e);
    return rc ? rc : zs_cli_astra_inputs(&pl->cluster, pl->sched->nranks, a->chakra, prefix, e);
}

static int print_plan(const plan_args *a, const zs_point_plan *pl)
{
    const zs_schedule *s = pl->sched;
    const zs_plan_report *rep = &pl->rep;
    const zs_batch *b = pl->batch;
    zs_output *d = zs_output_new("plan", a->fmt, stdout);
    if (!d)
        return zs_cli_doc_end(NULL);
    zs_cli_point_print_cfg(d, &a->p, pl->nodes, pl->cost_desc);
    zs_output_text(d, "# method %s, batch %ld: %d documents, %lld tokens\n", pl->method, a->batch,
                   b->ndocs, (long long)b->tokens);
    zs_output_set_text(d, NULL, "method", pl->method);
    zs_output_set_int(d, NULL, "batch", a->batch);
    zs_table *t = zs_table_kv_new(NULL);
    kv(t, "ranks", "%.0f", s->nranks, "GPUs");
    kv(t, "tp", "%.0f", rep->dims.tp, "");
    kv(t, "cp", "%.0f", rep->dims.cp, "");
    kv(t, "pp", "%.0f", rep->dims.pp, "");
    kv(t, "dp", "%.0f", rep->dims.dp, "");
    kv(t, "micro_batches", "%.0f", s->micro_batches, "");
    kv(t, "documents", "%.0f", b->ndocs, "");
    kv(t, "tokens", "%.0f", (double)b->tokens, "tokens");
    kv(t, "max_attn_tokens_per_gpu", "%.0f", (double)rep->max_attn_tokens, "tokens");
    kv(t, "max_linear_tokens_per_gpu", "%.0f", (double)rep->max_linear_tokens, "tokens");
    kv(t, "peak_mem_gib", "%.1f", pl->peak_mem / 1073741824.0, "GiB (memory model estimate)");
    kv(t, "mem_usable_gib", "%.1f", pl->mem_capacity / 1073741824.0, "GiB per GPU");
    kv(t, "attn_imbalance", "%.3f", rep->attn_imbalance, "max/mean");
    kv(t, "linear_imbalance", "%.3f", rep->linear_imbalance, "max/mean");
    if (rep->imbalance_degree > 0)
        kv(t, "imbalance_degree", "%.3f", rep->imbalance_degree, "");
    kv(t, "plan_ms", "%.2f", rep->plan_seconds * 1e3, "ms");
    kv(t, "ops_stored", "%.0f", (double)zs_schedule_total_ops(s), "ops");
    kv(t, "ops_unrolled", "%.0f", (double)zs_schedule_total_unrolled(s), "ops");
    kv(t, "schedule_mib", "%.1f", zs_schedule_memory(s) / 1048576.0, "MiB");
    kv(t, "validated", "%.0f", a->p.validate, "");
    zs_output_table(d, "plan", t);
    if (rep->notes[0])
        zs_output_note(d, "planner: %s", rep->notes);
    if (a->dump)
        zs_output_text(d, "schedule written to %s\n", a->dump);
    if (a->chakra)
        zs_output_text(d,
                       "Chakra traces written to %s/%s.{0..%d}.et, with ASTRA-sim's inputs beside "
                       "them (%s.network.yml, .system.json, .remote_memory.json, "
                       ".comm_group.json; docs/interop.md)\n",
                       a->chakra, chakra_prefix(a, pl), s->nranks - 1, chakra_prefix(a, pl));
    return zs_cli_doc_end(d);
}

int zs_cmd_plan(int argc, char **argv)
{
    plan_args a;
    memset(&a, 0, sizeof a);
    zs_point_cfg_default(&a.p);
    a.fmt = ZS_FMT_TABLE;
    int st = parse_args(argc, argv, &a);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    zs_point_plan pl;
    int rc = zs_point_plan_batch(&a.p, a.batch, &pl, &e);
    if (!rc && a.dump)
        rc = zs_schedule_dump_file(pl.sched, a.dump, &e);
    if (!rc && a.chakra)
        rc = write_chakra(&a, &pl, &e);
    int out = 0;
    char advice[512];
    if (rc && zs_point_advice(&a.p, advice, sizeof advice))
        snprintf(e.fix, sizeof e.fix, "%s", advice);
    if (!rc)
        out = print_plan(&a, &pl);
    zs_point_plan_clear(&pl);
    return rc ? zs_cli_fail(&e) : out;
}
