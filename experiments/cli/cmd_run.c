/* `zepsim run PLAN`: replays a schedule dumped by `zepsim plan --dump`, or
 * Chakra execution traces (`zepsim plan --chakra`, Chakra's converters),
 * on a backend of the registry (zs_backend.h), on the plan's own cluster
 * (sized to its ranks) unless told otherwise. The default backend is the
 * study point's (`simulate`'s, from the option table) and --quiet is the
 * one of cli_point.h, so `run` and `simulate` agree on both. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_point.h"
#include "zs_backend.h"
#include "zs_calib.h"
#include "zs_chakra.h"
#include "zs_point_opts.h"
#include "zs_progress.h"
#include "zs_validate.h"

static const char run_help_head[] =
    "usage: zepsim run [options] PLAN.json\n"
    "       zepsim run [options] --chakra DIR|DIR/PREFIX\n\n"
    "Replays a schedule written by `zepsim plan --dump` on a backend, or Chakra\n"
    "execution traces DIR/PREFIX.RANK.et (`zepsim plan --chakra`, or Chakra's\n"
    "converters; a folder or a PREFIX given as PLAN is read as such too).\n\n"
    "options:\n";
static const char run_help[] =
    "  --chakra DIR|PREFIX    Chakra traces: a folder holding one set, or its prefix\n"
    "  --cluster NAME|FILE    cluster (default: the one named in the plan, with\n"
    "                         as many nodes as the plan needs; cluster-a for Chakra\n"
    "                         traces of other tools)\n"
    "  --model NAME|FILE      model for the cost model (default: the plan's;\n"
    "                         llama-7b for Chakra traces of other tools)\n"
    "  --calib FILE           calibration from `zepsim calib fit`: the analytic\n"
    "                         backend's costs and both backends' links\n"
    "  --validate             check the schedule first\n"
    "  --timeline FILE        Chrome trace events (.json, or .json.gz compressed)\n"
    "  --timeline-ranks LIST  ranks in the timeline: all, or a list such as\n"
    "                         0,5,17-20 (default: every rank while the timeline\n"
    "                         stays under 64 MB (ZEPSIM_TIMELINE_MAX_MB), else 8\n"
    "                         chosen ones, with a note)\n"
    "  --timeline-layers A-B  only layers A..B (from 0) in the timeline\n"
    "  --fold off|on|steady   layer folding (default on; `zepsim simulate --help`)\n"
    "  --ranks                per-rank table\n"
    "  --format table|csv|json  output format (default table)\n";

/* --help: --backend with the study point's default (`simulate`'s), the
 * options above and the shared --quiet. */
static void print_help(void)
{
    const zs_opt_spec *b = zs_popt_find_cli("backend");
    char text[256];
    snprintf(text, sizeof text, "%s (default %s, as `zepsim simulate`)", b->help,
             zs_opt_default(b));
    fputs(run_help_head, stdout);
    zs_cli_help_entry(stdout, "backend", b->arg, text);
    fputs(run_help, stdout);
    zs_cli_help_entry(stdout, "quiet", NULL, ZS_CLI_QUIET_HELP);
}

typedef struct run_args {
    const zs_backend *backend;
    const char *cluster, *model, *calib, *timeline, *plan, *chakra;
    zs_point_cfg tl; /* the timeline limits, read by the study-point rows */
    zs_format fmt;
    int validate, ranks, quiet;
} run_args;

/* A timeline limit (or the fold mode) through its row of the study-point
 * table, so `run` accepts the same values as `simulate`. */
static int timeline_limit(const char *name, const char *val, zs_point_cfg *tl, zs_err *e)
{
    char where[64];
    snprintf(where, sizeof where, "--%s", name);
    return zs_opt_parse(zs_popt_find_cli(name), val, ZS_EUSAGE, where, tl, e);
}

static int parse_opt(int c, run_args *a, zs_err *e)
{
    switch (c) {
    case 'b':
        return zs_backend_lookup(optarg, "--backend", ZS_EUSAGE, &a->backend, e);
    case 'c':
        a->cluster = optarg;
        return ZS_OK;
    case 'm':
        a->model = optarg;
        return ZS_OK;
    case 'k':
        a->calib = optarg;
        return ZS_OK;
    case 'f':
        return zs_format_parse(optarg, &a->fmt, e);
    case 'v':
        a->validate = 1;
        return ZS_OK;
    case 'r':
        a->ranks = 1;
        return ZS_OK;
    case 't':
        a->timeline = optarg;
        return ZS_OK;
    case 'R':
        return timeline_limit("timeline-ranks", optarg, &a->tl, e);
    case 'L':
        return timeline_limit("timeline-layers", optarg, &a->tl, e);
    case 'F':
        return timeline_limit("fold", optarg, &a->tl, e);
    case ZS_CLI_QUIET:
        a->quiet = 1;
        return ZS_OK;
    case 'C':
        a->chakra = optarg;
        return ZS_OK;
    }
    return 1;
}

/* -1: parsed; otherwise the exit status. */
static int parse_args(int argc, char **argv, run_args *a)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"backend", required_argument, 0, 'b'},
                                         {"cluster", required_argument, 0, 'c'},
                                         {"model", required_argument, 0, 'm'},
                                         {"calib", required_argument, 0, 'k'},
                                         {"format", required_argument, 0, 'f'},
                                         {"validate", no_argument, 0, 'v'},
                                         {"timeline", required_argument, 0, 't'},
                                         {"ranks", no_argument, 0, 'r'},
                                         {"timeline-ranks", required_argument, 0, 'R'},
                                         {"timeline-layers", required_argument, 0, 'L'},
                                         {"fold", required_argument, 0, 'F'},
                                         ZS_CLI_QUIET_OPT,
                                         {"chakra", required_argument, 0, 'C'},
                                         {0, 0, 0, 0}};
    zs_err e;
    zs_err_clear(&e);
    int c;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            print_help();
            return 0;
        }
        int rc = parse_opt(c, a, &e);
        if (rc > 0)
            return zs_cli_bad_option("run", c, argv);
        if (rc < 0)
            return zs_cli_fail(&e);
    }
    if (a->chakra && argc - optind == 0) {
        a->plan = a->chakra;
        return -1;
    }
    if (argc - optind != 1 || a->chakra)
        return zs_cli_usage_error("run", "expected one schedule file (or --chakra DIR)");
    a->plan = argv[optind];
    return -1;
}

/* The model, the cluster (the plan's own by default, sized to its ranks)
 * and the cost model of a replay. */
static int load_machine(const run_args *a, const zs_schedule *s, zs_model *m, zs_cluster *cl,
                        zs_calib **cal, zs_cost **cost, zs_err *e)
{
    /* Chakra traces of other tools name neither: the defaults of `simulate` */
    const char *cluster = a->cluster ? a->cluster : s->cluster[0] ? s->cluster : "cluster-a";
    int rc = zs_model_load(a->model ? a->model : s->model[0] ? s->model : "llama-7b", m, e);
    if (!rc)
        rc = zs_cluster_load(cluster, 1, cl, e);
    if (!rc)
        rc = zs_cluster_load(cluster, (s->nranks + cl->gpus_per_node - 1) / cl->gpus_per_node, cl,
                             e);
    if (!rc && a->calib && (rc = zs_calib_load(a->calib, cal, e)) == ZS_OK) {
        zs_calib_apply_links(*cal, cl); /* the backend's platform too */
        *cost = zs_cost_calibrated_new(m, cl, *cal);
    } else if (!rc)
        *cost = zs_cost_analytic_new(m, cl);
    if (!rc && !*cost)
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    return rc;
}

static int print_result(const run_args *a, const zs_schedule *s, const zs_model *m,
                        const zs_cluster *cl, const zs_cost *cost, const zs_result *r)
{
    zs_output *d = zs_output_new("run", a->fmt, stdout);
    if (!d)
        return zs_cli_doc_end(NULL);
    const char *costs = a->backend->durations ? a->backend->durations : cost->desc;
    zs_output_text(
        d, "# %s: method %s, model %s, cluster %s (%d ranks), backend %s\n# cost model: %s\n",
        a->plan, s->method, m->name, cl->name, s->nranks, a->backend->name, costs);
    zs_output_set_text(d, NULL, "plan", a->plan);
    zs_output_set_text(d, NULL, "method", s->method);
    zs_output_set_text(d, NULL, "model", m->name);
    zs_output_set_text(d, NULL, "cluster", cl->name);
    zs_output_set_int(d, NULL, "ranks", s->nranks);
    zs_output_set_text(d, NULL, "backend", a->backend->name);
    zs_output_set_text(d, NULL, "cost_model", costs);
    if (a->calib)
        zs_cli_calib_notes(d, a->calib, cl->gpu.name, m);
    zs_table *t = zs_table_kv_new(NULL);
    zs_result_summary(r, t);
    zs_output_table(d, "result", t);
    if (a->fmt == ZS_FMT_TABLE) {
        zs_result_print_text(r, stdout);
    } else {
        if (r->slowest_rank >= 0)
            zs_output_set_text(d, NULL, "why", r->slowest_why);
        if (r->notes[0])
            zs_output_note(d, "%s backend: %s", r->backend, r->notes);
    }
    if (a->ranks) {
        zs_table *rt = zs_table_new(NULL);
        const char *cols[] = {"rank", "compute_ms", "exposed_ms", "idle_ms", "comm_ms", "end_ms"};
        for (int i = 0; i < 6; i++)
            zs_table_col(rt, cols[i], 1);
        zs_result_ranks(r, rt);
        zs_output_table(d, "ranks", rt);
    }
    if (a->timeline)
        zs_cli_timeline_done(zs_output_human(d), NULL, a->timeline, r->timeline_bytes,
                             r->timeline_subset);
    return zs_cli_doc_end(d);
}

/* The backend's run, with progress on stderr (none with --quiet): a line
 * when it starts and one when it ends, as `simulate` does per iteration. */
static int replay(const run_args *a, const zs_schedule *s, const zs_backend_in *in, zs_result **r,
                  zs_err *e)
{
    zs_progress pg;
    char st[160];
    zs_progress_init(&pg, zs_cli_progress_file(a->quiet), isatty(STDERR_FILENO), "run",
                     zs_progress_now());
    snprintf(st, sizeof st, "replaying %d ranks on %s", s->nranks, a->backend->name);
    zs_progress_report(&pg, zs_progress_now(), 0, 1, st);
    int rc = a->backend->run(s, in, r, e);
    snprintf(st, sizeof st, "%s on %s", rc ? "failed" : "replayed", a->backend->name);
    zs_progress_report(&pg, zs_progress_now(), 1, 1, st);
    zs_progress_end(&pg);
    return rc;
}

/* PLAN names Chakra traces: a folder, a prefix (PLAN.0.et), a rank file. */
static int is_chakra(const char *plan)
{
    struct stat st;
    char p[4200];
    size_t n = strlen(plan);
    snprintf(p, sizeof p, "%s.0.et", plan);
    return (stat(plan, &st) == 0 && S_ISDIR(st.st_mode)) || stat(p, &st) == 0 ||
           (n > 3 && strcmp(plan + n - 3, ".et") == 0);
}

static int load_plan(const run_args *a, zs_schedule **s, zs_err *e)
{
    struct stat st;
    /* a build without Chakra support reads files and folders as plans, as
     * before (a folder: "a folder where a file is expected") */
    int exists = stat(a->plan, &st) == 0;
    if (!a->chakra && (!is_chakra(a->plan) || (!zs_chakra_available() && exists)))
        return zs_schedule_load_file(a->plan, s, e);
    char base[4096];
    int rc = zs_chakra_find(a->plan, base, sizeof base, e);
    return rc ? rc : zs_chakra_load(base, s, e);
}

int zs_cmd_run(int argc, char **argv)
{
    run_args a;
    memset(&a, 0, sizeof a);
    zs_point_cfg_default(&a.tl); /* the backend, fold and timeline limits of `simulate` */
    a.backend = zs_backend_find(a.tl.backend);
    a.fmt = ZS_FMT_TABLE;
    int st = parse_args(argc, argv, &a);
    if (st >= 0)
        return st;
    zs_err e;
    zs_err_clear(&e);
    zs_schedule *s = NULL;
    if (load_plan(&a, &s, &e))
        return zs_cli_fail(&e);
    zs_model m;
    zs_cluster cl;
    zs_calib *cal = NULL;
    zs_cost *cost = NULL;
    zs_result *r = NULL;
    int rc = load_machine(&a, s, &m, &cl, &cal, &cost, &e);
    if (!rc && a.validate) {
        zs_validate_opts vo = {0, 0};
        rc = zs_validate(s, &vo, &e);
    }
    if (!rc) {
        zs_backend_in in;
        zs_backend_in_init(&in, &cl, cost);
        in.timeline = a.timeline;
        in.tl_ranks = a.tl.tl_ranks;
        in.tl_layer0 = a.tl.tl_layer0;
        in.tl_layer1 = a.tl.tl_layer1;
        in.fold = a.tl.fold;
        rc = replay(&a, s, &in, &r, &e);
    }
    int out = 0;
    if (!rc)
        out = print_result(&a, s, &m, &cl, cost, r);
    zs_result_free(r);
    zs_cost_free(cost);
    zs_calib_free(cal);
    zs_schedule_free(s);
    return rc ? zs_cli_fail(&e) : out;
}
