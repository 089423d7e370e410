/* `zepsim run PLAN`: replays a schedule dumped by `zepsim plan --dump`, or
 * Chakra execution traces (`zepsim plan --chakra`, Chakra's converters),
 * on a backend of the registry (zs_backend.h), on the plan's own cluster
 * (sized to its ranks) unless told otherwise. The default backend is the
 * study point's (`simulate`'s, from the option table) and --quiet is the
 * shared one of cli_flags.h, so `run` and `simulate` agree on both. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_point.h"
#include "zs_backend.h"
#include "zs_machine.h"
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
/* The shared flags run takes, with what they mean for a replay. */
static const zs_cli_use uses[] = {
    {ZS_FP(BACKEND), NULL}, /* its default: the study point's, as `zepsim simulate` */
    {ZS_FP(CLUSTER), "default: the one named in the plan, with as many nodes as the plan "
                     "needs; cluster-a for Chakra traces of other tools"},
    {ZS_FP(MODEL), "for the cost model (default: the plan's; llama-7b for Chakra traces of "
                   "other tools)"},
    {ZS_FP(CALIB), "the analytic backend's costs and both backends' links"},
    {ZS_FP(VALIDATE), NULL},
    {ZS_FP(TIMELINE), NULL},
    {ZS_FP(TL_RANKS), NULL},
    {ZS_FP(TL_LAYERS), NULL},
    {ZS_FP(FOLD), NULL},
    {ZS_FP(INTERFERENCE), NULL},
    {ZS_F_FORMAT, NULL},
    {ZS_F_QUIET, NULL},
    {ZS_F_RANKS, NULL},
    {0, NULL}};

typedef struct run_args {
    const zs_backend *backend;
    const char *cluster, *model, *calib, *timeline, *plan, *chakra;
    zs_point_cfg
        tl; /* the timeline limits, fold mode and interference, read by the study-point rows */
    zs_cli_flags fl; /* the shared flags as given: the names above point into it */
    zs_format fmt;
    int validate, ranks, quiet;
} run_args;

/* What the shared flags were given as: the study point's rows, so `run`
 * accepts the same values as `simulate`. */
static void take_flags(run_args *a)
{
    const zs_cli_flags *fl = &a->fl;
    a->backend = zs_backend_find(fl->p.backend);
    a->cluster = zs_cli_given(fl, ZS_P_CLUSTER);
    a->model = zs_cli_given(fl, ZS_P_MODEL);
    a->calib = zs_cli_given(fl, ZS_P_CALIB);
    a->timeline = zs_cli_given(fl, ZS_P_TIMELINE);
    a->validate = fl->p.validate;
    a->tl = fl->p;
    a->fmt = fl->fmt;
    a->quiet = fl->quiet;
    a->ranks = fl->ranks;
}

static const zs_opt_spec run_own[] = {
    ZS_OPT_ROW("chakra", ZS_OPT_TEXT, run_args, chakra, 0, 0, NULL, "DIR|PREFIX",
               "Chakra traces: a folder holding one set, or its prefix")};

/* -1: parsed; otherwise the exit status. */
static int parse_args(int argc, char **argv, run_args *a)
{
    static const zs_cli_cmd cmd = {
        .name = "run", .head = run_help_head, ZS_CLI_OWN_ROWS(run_own), .uses = uses};
    int st = zs_cli_parse(&cmd, argc, argv, a, &a->fl);
    if (st >= 0)
        return st;
    take_flags(a);
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
static int load_machine(const run_args *a, const zs_schedule *s, zs_machine *m, zs_err *e)
{
    /* Chakra traces of other tools name neither: the defaults of `simulate` */
    zs_machine_cfg mc;
    zs_machine_cfg_init(&mc);
    mc.model = a->model ? a->model : s->model[0] ? s->model : "llama-7b";
    mc.cluster = a->cluster ? a->cluster : s->cluster[0] ? s->cluster : "cluster-a";
    mc.ranks = s->nranks;
    mc.calib = a->calib;
    return zs_machine_load(&mc, m, e);
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
        const char *cols[] = {"rank",    "compute_ms", "exposed_ms",     "idle_ms",
                              "comm_ms", "end_ms",     "interference_ms"};
        for (int i = 0; i < (r->interference ? 7 : 6); i++)
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
    zs_machine m;
    zs_result *r = NULL;
    int rc = load_machine(&a, s, &m, &e);
    if (!rc && a.validate) {
        zs_validate_opts vo = {0, 0};
        rc = zs_validate(s, &vo, &e);
    }
    if (!rc) {
        zs_backend_in in;
        zs_backend_in_init(&in, &m.cluster, m.cost);
        zs_point_exec(&a.tl, a.timeline, &in.exec);
        rc = replay(&a, s, &in, &r, &e);
    }
    int out = 0;
    if (!rc)
        out = print_result(&a, s, &m.model, &m.cluster, m.cost, r);
    zs_result_free(r);
    zs_machine_clear(&m);
    zs_schedule_free(s);
    return rc ? zs_cli_fail(&e) : out;
}
