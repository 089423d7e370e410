/* `zepsim experiment run|report|list`: figure specs (experiments/specs/)
 * run into the results database, and rendered as plots plus a markdown
 * table that puts the paper's numbers beside ours. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_point.h"
#include "zs_db.h"
#include "zs_report.h"
#include "zs_runner.h"
#include "zs_spec.h"

static const char experiment_help[] =
    "usage: zepsim experiment run SPEC [--jobs N] [--db FILE] [--shard i/n|slurm]\n"
    "       zepsim experiment report SPEC [--db FILE] [--out DIR]\n"
    "       zepsim experiment list [SPEC] [--dir DIR] [--db FILE]\n"
    "SPEC is a spec file, or the name of one in the spec folder (zeppelin-fig8)\n"
    "\n"
    "run     runs the points of a figure spec that the database lacks, in N worker\n"
    "        processes, storing each result with its full configuration (a killed\n"
    "        run resumes where it stopped); progress on stderr: a bar on a terminal,\n"
    "        elsewhere (a batch log) a line after the first and last point and at\n"
    "        most every 10 s between, with the time left\n"
    "report  writes DIR/NAME.md (paper vs ours, every point), NAME.png and NAME.svg\n"
    "        (gnuplot), NAME.dat and NAME.gp from the stored results\n"
    "list    the specs in DIR, or the points of SPEC with their stored status\n"
    "\n"
    "options:\n";

typedef struct args {
    const char *db, *shard, *tldir, *out, *dir;
    long jobs;
    int retry, noplot, quiet;
    zs_format fmt;
    const char *spec;
} args;

static const zs_opt_spec own[] = {
    ZS_OPT_ROW("shard", ZS_OPT_TEXT, args, shard, 0, 0, NULL, "i/n|slurm",
               "run: only points with index = i-1 modulo n (1 <= i <= n); slurm: i-1 = "
               "SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN, n = SLURM_ARRAY_TASK_COUNT (an array "
               "job, 0-based or not; scripts/slurm-sweep.sbatch)"),
    ZS_OPT_ROW("retry-failed", ZS_OPT_FLAG, args, retry, 0, 1, NULL, NULL,
               "run: rerun points stored as failed"),
    ZS_OPT_ROW("timeline-dir", ZS_OPT_TEXT, args, tldir, 0, 0, NULL, "DIR",
               "run: folder for the points' timeline files (default: the database's folder)"),
    ZS_OPT_ROW("no-plot", ZS_OPT_FLAG, args, noplot, 0, 1, NULL, NULL,
               "report: write the gnuplot script but do not run gnuplot"),
};

/* The shared flags experiment takes, with what they do here. */
static const zs_cli_use uses[] = {{ZS_F_JOBS, "run: worker processes (default 1)"},
                                  {ZS_F_DB, NULL},
                                  {ZS_F_QUIET, "run only (as simulate, compare, run)"},
                                  {ZS_F_OUT, "report: output folder (default report)"},
                                  {ZS_F_DIR, "for list and for SPEC given by name"},
                                  {ZS_F_FORMAT, "list only (default table)"},
                                  {0, NULL}};

static const zs_cli_cmd experiment_cmd = {
    .name = "experiment", .head = experiment_help, ZS_CLI_OWN_ROWS(own), .uses = uses};

static void print_help(void)
{
    zs_cli_help(stdout, &experiment_cmd);
}

/* The options into a; -1 parsed, 0 help printed, or an error's exit status
 * (e holds it when it is not printed yet: 1). */
static int parse(int argc, char **argv, args *a, zs_err *e)
{
    zs_cli_flags fl;
    memset(a, 0, sizeof *a);
    int st = zs_cli_parse(&experiment_cmd, argc, argv, a, &fl);
    if (st >= 0)
        return st;
    a->jobs = fl.jobs ? fl.jobs : 1;
    a->db = fl.db ? fl.db : "zepsim.db";
    a->out = fl.out ? fl.out : "report";
    a->dir = fl.dir; /* NULL: zs_cli_specs_dir finds them from anywhere */
    a->quiet = fl.quiet;
    a->fmt = fl.fmt;
    if (optind < argc) {
        static char path[2048];
        if (zs_cli_spec_missing(argv[optind], a->dir, e))
            return 1;
        zs_cli_spec_path(argv[optind++], a->dir, path, sizeof path);
        a->spec = path;
    }
    if (optind < argc) {
        zs_err_set(e, ZS_EUSAGE, "zepsim experiment", "see `zepsim experiment --help`",
                   "unexpected argument '%s'", argv[optind]);
        return 1;
    }
    return -1;
}

/* The folder of path ("." when it has none). */
static void dir_of(const char *path, char *buf, size_t n)
{
    snprintf(buf, n, "%s", path);
    char *sl = strrchr(buf, '/');
    if (!sl)
        snprintf(buf, n, ".");
    else if (sl == buf)
        buf[1] = '\0';
    else
        *sl = '\0';
}

static int do_run(const args *a)
{
    zs_err e;
    zs_err_clear(&e);
    zs_runner_opts o;
    zs_runner_opts_init(&o);
    o.jobs = (int)a->jobs;
    o.retry_failed = a->retry;
    if (a->shard && zs_cli_parse_shard(a->shard, &o.shard_i, &o.shard_n, &e))
        return zs_cli_fail(&e);
    char tldir[1024];
    dir_of(a->db, tldir, sizeof tldir);
    o.timeline_dir = a->tldir ? a->tldir : tldir;
    o.progress = zs_cli_progress_file(a->quiet); /* a bar on a terminal, lines in a log */
    zs_spec *s = NULL;
    zs_db *db = NULL;
    if (zs_spec_load(a->spec, &s, &e) || zs_db_open(a->db, &db, &e)) {
        zs_spec_free(s);
        return zs_cli_fail(&e);
    }
    zs_runner_stats st;
    int rc = zs_runner_run(s, db, &o, &st, &e);
    zs_db_close(db);
    if (rc) {
        zs_spec_free(s);
        return zs_cli_fail(&e);
    }
    printf("%s: %d points", s->name, st.points);
    if (o.shard_n > 1)
        printf(", %d in shard %d/%d", st.in_shard, o.shard_i, o.shard_n);
    printf("; %d already stored, %d duplicate configurations, %d ran, %d failed", st.stored_before,
           st.duplicates, st.ran, st.failed);
    if (st.elsewhere)
        printf(", %d run by another process on the same database", st.elsewhere);
    printf("; %.1f s; database %s\n", st.wall_s, a->db);
    zs_spec_free(s);
    if (st.failed) {
        fprintf(stderr, "zepsim: %d points failed; first: %s\n", st.failed, st.first_error);
        return 1;
    }
    return 0;
}

static int do_report(const args *a)
{
    zs_err e;
    zs_err_clear(&e);
    zs_spec *s = NULL;
    zs_db *db = NULL;
    if (zs_spec_load(a->spec, &s, &e) || zs_db_open_readonly(a->db, &db, &e)) {
        zs_spec_free(s);
        return zs_cli_fail(&e);
    }
    zs_report_opts o;
    zs_report_opts_init(&o);
    o.out_dir = a->out;
    o.plot = !a->noplot;
    zs_report_stats st;
    int rc = zs_report_write(s, db, &o, &st, &e);
    zs_db_close(db);
    if (rc) {
        zs_spec_free(s);
        return zs_cli_fail(&e);
    }
    printf("%s: %d points, %d stored, %d failed, %d not run; wrote %s", s->name, st.points,
           st.stored, st.failed, st.missing, st.md_path);
    if (st.plotted)
        printf(", %s/%s.png, %s/%s.svg\n", a->out, s->name, a->out, s->name);
    else
        printf("\nzepsim: note: %s\n", st.plot_note);
    zs_spec_free(s);
    return 0;
}

static int name_cmp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static int do_list(const args *a)
{
    zs_err e;
    zs_err_clear(&e);
    if (a->spec) { /* the points of one spec */
        zs_spec *s = NULL;
        zs_db *db = NULL;
        if (zs_spec_load(a->spec, &s, &e))
            return zs_cli_fail(&e);
        if (!access(a->db, F_OK) && zs_db_open_readonly(a->db, &db, &e)) {
            zs_spec_free(s);
            return zs_cli_fail(&e);
        }
        zs_table *t = zs_table_new(NULL);
        const char *cols[] = {"point", "case", "series", "method", "opts", "stored"};
        for (int i = 0; i < 6; i++)
            zs_table_col(t, cols[i], i == 0);
        int rc = ZS_OK;
        for (int i = 0; i < s->npoints && !rc; i++) {
            const zs_spec_point *p = &s->points[i];
            const char *status = "no";
            if (db) {
                char key[4096];
                int found = 0, ok = 0;
                rc = zs_db_key(&p->cfg, key, sizeof key, &e);
                if (!rc)
                    rc = zs_db_has(db, key, &found, &ok, &e);
                status = !found ? "no" : ok ? "ok" : "failed";
            }
            zs_table_row(t);
            zs_table_set(t, 0, "%d", i);
            zs_table_set(t, 1, "%s", s->cases[p->case_idx].label);
            zs_table_set(t, 2, "%s", s->series[p->series_idx].label);
            zs_table_set(t, 3, "%s", p->cfg.method);
            zs_table_set(t, 4, "%s", p->cfg.opts);
            zs_table_set(t, 5, "%s", status);
        }
        zs_db_close(db);
        zs_spec_free(s);
        if (rc) {
            zs_table_free(t);
            return zs_cli_fail(&e);
        }
        return zs_cli_print1("experiment", a->fmt, "points", t);
    }
    char dir[1024];
    if (zs_cli_specs_dir(a->dir, dir, sizeof dir, &e))
        return zs_cli_fail(&e);
    DIR *d = opendir(dir);
    if (!d) {
        zs_err_set(&e, ZS_EIO, dir, "pass --dir DIR", "cannot open the spec folder");
        return zs_cli_fail(&e);
    }
    char **names = NULL;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json"))
            continue;
        char **nn = realloc(names, (size_t)(n + 1) * sizeof *nn);
        if (!nn)
            break;
        names = nn;
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, name_cmp);
    zs_table *t = zs_table_new(NULL);
    zs_table_col(t, "spec", 0);
    zs_table_col(t, "points", 1);
    zs_table_col(t, "title", 0);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        zs_spec *s = NULL;
        zs_table_row(t);
        zs_table_set(t, 0, "%s", path);
        if (zs_spec_load(path, &s, &e)) {
            zs_table_set(t, 2, "(invalid: %s)", e.what);
            bad = 1;
        } else {
            zs_table_set(t, 1, "%d", s->npoints);
            zs_table_set(t, 2, "%s", s->title);
        }
        zs_spec_free(s);
        free(names[i]);
    }
    free(names);
    int out = zs_cli_print1("experiment", a->fmt, "specs", t);
    if (bad)
        return zs_cli_fail(&e);
    return out;
}

int zs_cmd_experiment(int argc, char **argv)
{
    if (argc < 2)
        return zs_cli_usage_error("experiment", "give a subcommand: run, report or list");
    if (zs_cli_is_help(argv[1])) {
        print_help();
        return 0;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "run") && strcmp(sub, "report") && strcmp(sub, "list"))
        return zs_cli_usage_error("experiment", "unknown subcommand '%s' (use run, report or list)",
                                  sub);
    args a;
    zs_err e;
    zs_err_clear(&e);
    int p = parse(argc - 1, argv + 1, &a, &e);
    if (p >= 0)
        return e.code ? zs_cli_fail(&e) : p;
    if (!a.spec && strcmp(sub, "list"))
        return zs_cli_usage_error("experiment", "%s needs a SPEC file", sub);
    if (!strcmp(sub, "run"))
        return do_run(&a);
    if (!strcmp(sub, "report"))
        return do_report(&a);
    return do_list(&a);
}
