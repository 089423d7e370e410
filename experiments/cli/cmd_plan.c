/* `zepsim plan`: plans one global batch with a method and reports the plan
 * (layout, tokens per GPU, imbalance, schedule size); `--dump FILE` saves
 * the schedule for `zepsim run` or `zepsim hw run`. `zepsim run PLAN`
 * replays a dumped schedule on a backend. */
#include <stdlib.h>
#include <string.h>

#include "cli_point.h"
#include "zs_analytic.h"
#include "zs_batcher_greedy.h"
#include "zs_calib.h"
#include "zs_planner.h"
#include "zs_sim.h"
#include "zs_trace_src.h"
#include "zs_validate.h"

static void methods_help(void)
{
    printf("\nmethods and their options (--opt K=V):\n");
    for (int i = 0; i < zs_planner_count(); i++) {
        const zs_planner_ops *p = zs_planner_at(i);
        printf("  %-10s %s\n", p->name, p->summary);
        if (p->options_help && *p->options_help)
            printf("             options: %s\n", p->options_help);
    }
}

static void kv(zs_table *t, const char *k, const char *fmt, double v)
{
    zs_table_row(t);
    zs_table_set(t, 0, "%s", k);
    zs_table_set(t, 1, fmt, v);
}

int zs_cmd_plan(int argc, char **argv)
{
    enum { O_DUMP = 2000, O_BATCH };
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"dump", required_argument, 0, O_DUMP},
                                         {"batch", required_argument, 0, O_BATCH},
                                         ZS_POINT_LONGOPTS,
                                         {0, 0, 0, 0}};
    zs_point_cfg p;
    zs_point_cfg_default(&p);
    zs_format fmt = ZS_FMT_TABLE;
    zs_err e;
    zs_err_clear(&e);
    const char *dump = NULL;
    long batch_idx = 0;
    int c;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: zepsim plan --method NAME [options] [--dump FILE]\n\n"
                   "Plans one global batch and prints the plan's figures; --dump writes the\n"
                   "schedule as JSON for `zepsim run` (either backend) or `zepsim hw run`.\n\n"
                   "options:\n"
                   "  --dump FILE            write the schedule\n"
                   "  --batch K              plan the K-th global batch of the trace (default 0)\n"
                   "%s",
                   zs_cli_point_help);
            methods_help();
            return 0;
        }
        if (c == O_DUMP) {
            dump = optarg;
            continue;
        }
        if (c == O_BATCH) {
            if (zs_cli_parse_int("--batch", optarg, 0, 1000000, &batch_idx, &e))
                return zs_cli_fail(&e);
            continue;
        }
        int st = zs_cli_point_opt("plan", c, argv, &p, &fmt);
        if (st)
            return st;
    }
    if (optind < argc)
        return zs_cli_usage_error("plan", "unexpected argument '%s'", argv[optind]);
    const zs_planner_ops *pl = zs_planner_find(p.method);
    if (!pl)
        return zs_cli_usage_error("plan", "unknown method '%s' (see zepsim plan --help)", p.method);
    zs_model m;
    zs_cluster cl;
    zs_calib *cal = NULL;
    zs_cost *cost = NULL;
    zs_trace_src *src = NULL;
    zs_batcher *bat = NULL;
    zs_batch *b = NULL;
    zs_schedule *s = NULL;
    zs_opts mo;
    zs_opts_init(&mo);
    int rc = zs_model_load(p.model, &m, &e);
    if (!rc)
        rc = zs_cluster_load(p.cluster, p.nodes, &cl, &e);
    if (!rc && p.calib[0] && (rc = zs_calib_load(p.calib, &cal, &e)) == ZS_OK)
        cost = zs_cost_calibrated_new(&m, &cl, cal);
    else if (!rc)
        cost = zs_cost_analytic_new(&m, &cl);
    if (!rc && !cost)
        rc = zs_err_set(&e, ZS_ENOMEM, NULL, NULL, "out of memory");
    if (!rc)
        rc = zs_opts_parse(&mo, p.opts, &e);
    zs_trace_src_cfg scfg;
    memset(&scfg, 0, sizeof scfg);
    scfg.seed = p.seed;
    if (!rc)
        rc = zs_trace_src_open(p.trace, &scfg, &src, &e);
    int gpus = rc ? 0 : zs_cluster_gpus(&cl);
    if (!rc && gpus % p.group != 0)
        rc = zs_err_set(&e, ZS_EUSAGE, "--group", "use a group size that divides the GPUs",
                        "%d GPUs cannot be cut into context groups of %d", gpus, p.group);
    zs_batcher_cfg bcfg = {(int64_t)(gpus / (p.group ? p.group : 1)) * p.context,
                           (int32_t)p.context, ZS_LONG_SPLIT, 1};
    if (!rc)
        rc = zs_batcher_greedy_new(src, &bcfg, &bat, &e);
    for (long k = 0; !rc && k <= batch_idx; k++) {
        zs_batch_free(b);
        b = NULL;
        rc = zs_batcher_next(bat, &b, &e);
        if (!rc && !b)
            rc = zs_err_set(&e, ZS_EINPUT, p.trace, "use a smaller --batch",
                            "the trace has fewer than %ld batches", batch_idx + 1);
    }
    zs_plan_report rep;
    if (!rc) {
        zs_plan_ctx ctx = {&m, &cl, cost, zs_mem_cfg_default(), &mo, p.seed};
        ctx.mem.zero_stage = p.zero_stage;
        ctx.mem.recompute = p.recompute;
        rc = zs_plan_batch(pl, &ctx, b, p.validate, &s, &rep, &e);
    }
    if (!rc && dump)
        rc = zs_schedule_dump_file(s, dump, &e);
    if (!rc) {
        if (fmt == ZS_FMT_TABLE) {
            zs_cli_point_print_cfg(stdout, &p, cost->desc);
            printf("# method %s, batch %ld: %d documents, %lld tokens\n", p.method, batch_idx,
                   b->ndocs, (long long)b->tokens);
        }
        zs_table *t = zs_table_new(NULL);
        zs_table_col(t, "key", 0);
        zs_table_col(t, "value", 1);
        kv(t, "ranks", "%.0f", s->nranks);
        kv(t, "tp", "%.0f", rep.dims.tp);
        kv(t, "cp", "%.0f", rep.dims.cp);
        kv(t, "pp", "%.0f", rep.dims.pp);
        kv(t, "dp", "%.0f", rep.dims.dp);
        kv(t, "micro_batches", "%.0f", s->micro_batches);
        kv(t, "documents", "%.0f", b->ndocs);
        kv(t, "tokens", "%.0f", (double)b->tokens);
        kv(t, "max_attn_tokens_per_gpu", "%.0f", (double)rep.max_attn_tokens);
        kv(t, "max_linear_tokens_per_gpu", "%.0f", (double)rep.max_linear_tokens);
        kv(t, "attn_imbalance", "%.3f", rep.attn_imbalance);
        kv(t, "linear_imbalance", "%.3f", rep.linear_imbalance);
        kv(t, "plan_ms", "%.2f", rep.plan_seconds * 1e3);
        kv(t, "ops_stored", "%.0f", (double)zs_schedule_total_ops(s));
        kv(t, "ops_unrolled", "%.0f", (double)zs_schedule_total_unrolled(s));
        kv(t, "schedule_mib", "%.1f", zs_schedule_memory(s) / 1048576.0);
        kv(t, "validated", "%.0f", p.validate);
        zs_table_print(t, stdout, fmt);
        zs_table_free(t);
        if (fmt == ZS_FMT_TABLE) {
            if (rep.notes[0])
                printf("planner: %s\n", rep.notes);
            if (dump)
                printf("schedule written to %s\n", dump);
        }
    }
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_batcher_free(bat);
    zs_trace_src_free(src);
    zs_cost_free(cost);
    zs_calib_free(cal);
    return rc ? zs_cli_fail(&e) : 0;
}

int zs_cmd_run(int argc, char **argv)
{
    enum { O_TIMELINE = 2000, O_TL_RANKS, O_TL_LAYERS };
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"backend", required_argument, 0, 'b'},
                                         {"cluster", required_argument, 0, 'c'},
                                         {"model", required_argument, 0, 'm'},
                                         {"calib", required_argument, 0, 'k'},
                                         {"format", required_argument, 0, 'f'},
                                         {"validate", no_argument, 0, 'v'},
                                         {"timeline", required_argument, 0, O_TIMELINE},
                                         {"ranks", no_argument, 0, 'r'},
                                         {"timeline-ranks", required_argument, 0, O_TL_RANKS},
                                         {"timeline-layers", required_argument, 0, O_TL_LAYERS},
                                         {0, 0, 0, 0}};
    int tl[4] = {-1, -1, -1, -1};
    const char *backend = "analytic", *cluster = NULL, *model = NULL, *calib = NULL,
               *timeline = NULL;
    zs_format fmt = ZS_FMT_TABLE;
    int validate = 0, ranks = 0, c;
    zs_err e;
    zs_err_clear(&e);
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            printf("usage: zepsim run [options] PLAN.json\n\n"
                   "Replays a schedule written by `zepsim plan --dump` on a backend.\n\n"
                   "options:\n"
                   "  --backend analytic|sim  (default analytic)\n"
                   "  --cluster NAME|FILE     cluster (default: the one named in the plan, with\n"
                   "                          as many nodes as the plan needs)\n"
                   "  --model NAME|FILE       model for the cost model (default: the plan's)\n"
                   "  --calib FILE            calibrated cost model (analytic backend)\n"
                   "  --validate              check the schedule first\n"
                   "  --timeline FILE         sim: Chrome trace events\n"
                   "  --timeline-ranks A-B    only ranks A..B in the timeline (default all)\n"
                   "  --timeline-layers A-B   only layers A..B (from 0) in the timeline\n"
                   "  --ranks                 per-rank table\n"
                   "  --format table|csv|json\n");
            return 0;
        case 'b':
            if (strcmp(optarg, "sim") && strcmp(optarg, "analytic"))
                return zs_cli_usage_error("run", "unknown backend '%s' (use sim or analytic)",
                                          optarg);
            backend = optarg;
            break;
        case 'c':
            cluster = optarg;
            break;
        case 'm':
            model = optarg;
            break;
        case 'k':
            calib = optarg;
            break;
        case 'f':
            if (zs_format_parse(optarg, &fmt, &e))
                return zs_cli_fail(&e);
            break;
        case 'v':
            validate = 1;
            break;
        case 'r':
            ranks = 1;
            break;
        case O_TIMELINE:
            timeline = optarg;
            break;
        case O_TL_RANKS:
        case O_TL_LAYERS:
            if (zs_cli_parse_timeline_limit(c == O_TL_LAYERS, optarg, &tl[c == O_TL_RANKS ? 0 : 2],
                                            &tl[c == O_TL_RANKS ? 1 : 3], &e))
                return zs_cli_fail(&e);
            break;
        default:
            return zs_cli_bad_option("run", c, argv);
        }
    }
    if (argc - optind != 1)
        return zs_cli_usage_error("run", "expected one schedule file");
    zs_schedule *s = NULL;
    int rc = zs_schedule_load_file(argv[optind], &s, &e);
    if (rc)
        return zs_cli_fail(&e);
    zs_model m;
    zs_cluster cl;
    zs_calib *cal = NULL;
    zs_cost *cost = NULL;
    zs_result *r = NULL;
    rc = zs_model_load(model ? model : s->model, &m, &e);
    if (!rc) {
        /* The plan's own cluster by default, sized to its ranks. */
        rc = zs_cluster_load(cluster ? cluster : s->cluster, 1, &cl, &e);
        if (!rc)
            rc = zs_cluster_load(cluster ? cluster : s->cluster,
                                 (s->nranks + cl.gpus_per_node - 1) / cl.gpus_per_node, &cl, &e);
    }
    if (!rc && calib && (rc = zs_calib_load(calib, &cal, &e)) == ZS_OK)
        cost = zs_cost_calibrated_new(&m, &cl, cal);
    else if (!rc)
        cost = zs_cost_analytic_new(&m, &cl);
    if (!rc && !cost)
        rc = zs_err_set(&e, ZS_ENOMEM, NULL, NULL, "out of memory");
    if (!rc && validate) {
        zs_validate_opts vo = {0, 0};
        rc = zs_validate(s, &vo, &e);
    }
    if (!rc && !strcmp(backend, "sim")) {
        zs_sim_opts so;
        zs_sim_opts_init(&so);
        so.timeline = timeline;
        so.tl_rank0 = tl[0];
        so.tl_rank1 = tl[1];
        so.tl_layer0 = tl[2];
        so.tl_layer1 = tl[3];
        rc = zs_sim_run(s, &cl, &so, &r, &e);
    } else if (!rc) {
        rc = zs_analytic_run(s, cost, NULL, &r, &e);
    }
    if (!rc) {
        if (fmt == ZS_FMT_TABLE)
            printf("# %s: method %s, model %s, cluster %s (%d ranks), backend %s\n# cost model: "
                   "%s\n",
                   argv[optind], s->method, m.name, cl.name, s->nranks, backend,
                   !strcmp(backend, "sim") ? "durations stamped in the plan" : cost->desc);
        zs_table *t = zs_table_new(NULL);
        zs_table_col(t, "key", 0);
        zs_table_col(t, "value", 1);
        zs_table_col(t, "unit", 0);
        zs_result_summary(r, t);
        zs_table_print(t, stdout, fmt);
        zs_table_free(t);
        if (fmt == ZS_FMT_TABLE)
            zs_result_print_text(r, stdout);
        if (ranks) {
            zs_table *rt = zs_table_new(NULL);
            const char *cols[] = {"rank", "compute", "exposed_comm", "idle", "comm", "end"};
            for (int i = 0; i < 6; i++)
                zs_table_col(rt, cols[i], 1);
            zs_result_ranks(r, rt);
            zs_table_print(rt, stdout, fmt);
            zs_table_free(rt);
        }
    }
    zs_result_free(r);
    zs_cost_free(cost);
    zs_calib_free(cal);
    zs_schedule_free(s);
    return rc ? zs_cli_fail(&e) : 0;
}
