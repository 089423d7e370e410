/* `zepsim compare`: the main job. Runs the same study (model, cluster,
 * trace, context, iterations, seed) for several methods, in parallel worker
 * processes that report each iteration, and prints one table (the result
 * columns of zs_cols.h: tokens/s, tokens per iteration, iteration time,
 * speedup over the baseline, MFU, where the time goes, NIC use, peak
 * memory per GPU, imbalance), a verdict (the fastest method, its margin,
 * why each method's slowest rank was slowest) and notes on figures out of
 * their range; then draws a bar chart with gnuplot. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_point.h"
#include "zs_afile.h"
#include "zs_backend.h"
#include "zs_cols.h"
#include "zs_fdio.h"
#include "zs_planner.h"
#include "zs_point_fit.h"
#include "zs_progress.h"
#include "zs_verdict.h"

#define MAX_METHODS 16

/* A method's outcome, once all its iterations are in. */
typedef struct outcome {
    int rc;
    zs_err err;
    zs_point_result r; /* r.last is NULL here */
    double tl_bytes;   /* JSON size of the timeline written (0: none) */
} outcome;

/* What a worker sends back, once: one iteration of one method (plain
 * data, no pointers). */
typedef struct task_out {
    int rc;
    zs_err err;
    zs_point_iter q;
} task_out;

static const char default_methods[] = "te-cp,llama-cp,hybrid-dp,ulysses,usp,zeppelin,auto";

static void run_child(const zs_point_cfg *p, int it, int fd)
{
    task_out o;
    memset(&o, 0, sizeof o);
    o.rc = zs_point_run_iter(p, it, &o.q, &o.err);
    char advice[512];
    if (o.rc != ZS_OK && zs_point_fit_advice(p, advice, sizeof advice))
        snprintf(o.err.fix, sizeof o.err.fix, "%s", advice);
    zs_write_all(fd, &o, sizeof o);
    close(fd);
    _exit(0);
}

static int split_methods(char *list, char **out, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == max)
            return -1;
        out[n++] = t;
    }
    return n;
}

/* Iterations of one method finished ahead of the next one to add are
 * held here until it comes (the means add them in order, so the figures
 * are those of one sequential run bit for bit); a method's iteration k
 * starts only when k < added + WINDOW, which bounds the memory held. */
#define WINDOW 16

/* Per method: where its iterations are. */
typedef struct mstate {
    int started, running, done; /* iterations started, in flight, finished */
    int added;                  /* iterations added to the sums, in order */
    int failed_at;              /* the earliest failed iteration (-1: none) */
    zs_point_acc acc;
    zs_point_iter held[WINDOW];
    char have[WINDOW];
} mstate;

/* Where the workers are. */
typedef struct board {
    const char *const *methods;
    int n, iters, finished;
    mstate *m;
    zs_progress pg;
} board;

static void board_report(board *b, int step, const char *finished)
{
    char st[512];
    double frac = 0;
    size_t o = (size_t)snprintf(st, sizeof st, "%d/%d methods done", b->finished, b->n);
    if (finished)
        o += (size_t)snprintf(st + o, sizeof st - o, " (%s finished)", finished);
    int k = 0;
    for (int i = 0; i < b->n; i++) {
        const mstate *m = &b->m[i];
        frac += (double)m->done / b->iters;
        if (m->running > 0 && o < sizeof st)
            o += (size_t)snprintf(st + o, sizeof st - o, "%s %s %d/%d", k++ ? "," : "; running",
                                  b->methods[i], m->done, b->iters);
    }
    zs_progress_report(&b->pg, zs_progress_now(), frac / b->n, step, st);
}

/* A worker's message for iteration it of method i, into its state; 1
 * when the method is finished (res[i] then holds its outcome). */
static int take(board *b, int i, int it, int fd, outcome *res)
{
    mstate *m = &b->m[i];
    task_out o;
    if (zs_read_all(fd, &o, sizeof o) != 1) {
        memset(&o, 0, sizeof o);
        o.rc = ZS_ERUNTIME;
        zs_err_set(&o.err, ZS_ERUNTIME, b->methods[i], NULL,
                   "the worker process died (out of memory?)");
    }
    m->running--;
    m->done++;
    if (o.rc != ZS_OK) {
        if (m->failed_at < 0 || it < m->failed_at) {
            m->failed_at = it;
            res[i].rc = o.rc;
            res[i].err = o.err;
        }
    } else if (m->failed_at < 0) {
        m->held[it % WINDOW] = o.q;
        m->have[it % WINDOW] = 1;
        while (m->have[m->added % WINDOW]) {
            const zs_point_iter *q = &m->held[m->added % WINDOW];
            zs_point_add(&m->acc, q, &res[i].r);
            if (m->added == b->iters - 1)
                res[i].tl_bytes = q->tl_bytes;
            m->have[m->added % WINDOW] = 0;
            m->added++;
        }
    }
    if (m->running > 0 || (m->failed_at < 0 && m->added < b->iters))
        return 0;
    if (m->failed_at < 0)
        zs_point_finish(&m->acc, &res[i].r);
    else
        memset(&res[i].r, 0, sizeof res[i].r);
    return 1;
}

/* The next (method, iteration) to start, methods in their order (-1:
 * none may start now). */
static int next_task(const board *b, int *it)
{
    for (int i = 0; i < b->n; i++) {
        const mstate *m = &b->m[i];
        if (m->failed_at < 0 && m->started < b->iters && m->started < m->added + WINDOW) {
            *it = m->started;
            return i;
        }
    }
    return -1;
}

/* Whether every method failed on the command line (a usage error, such as
 * a group that does not divide the GPUs): then nothing ran and the table
 * would only list failures, so the errors are printed (once when they
 * agree) for an exit status of 2. A method that does not fit is not one:
 * the table says which options make it fit, per method. */
static int all_bad_input(const char *const *methods, const outcome *res, int n)
{
    int same = 1;
    for (int i = 0; i < n; i++) {
        if (res[i].rc != ZS_EUSAGE)
            return 0;
        same = same && !strcmp(res[i].err.what, res[0].err.what) &&
               !strcmp(res[i].err.where, res[0].err.where);
    }
    for (int i = 0; i < (same ? 1 : n); i++) {
        if (!same)
            fprintf(stderr, "%s: ", methods[i]);
        zs_err_print(stderr, &res[i].err);
    }
    return 1;
}

/* Runs every iteration of every method, at most jobs at a time, each in
 * a worker process of its own (iterations are independent: zs_point.h);
 * fills res[]. tl: each method's timeline file (NULL: the
 * configuration's). Progress goes to pf (NULL: none). */
static int run_all(const zs_point_cfg *base, const char *const *methods, char (*tl)[512], int n,
                   int jobs, FILE *pf, outcome *res)
{
    enum { MAX_JOBS = 64 };
    pid_t pid[MAX_JOBS];
    int fd[MAX_JOBS], meth[MAX_JOBS], iter[MAX_JOBS], running = 0;
    board b;
    memset(&b, 0, sizeof b);
    b.methods = methods;
    b.n = n;
    b.iters = base->iterations;
    b.m = calloc((size_t)n, sizeof *b.m);
    if (!b.m)
        return -1;
    for (int i = 0; i < n; i++)
        b.m[i].failed_at = -1;
    jobs = jobs < 1 ? 1 : jobs > MAX_JOBS ? MAX_JOBS : jobs;
    zs_progress_init(&b.pg, pf, pf && isatty(fileno(pf)), "compare", zs_progress_now());
    int rc = 0;
    while (b.finished < n) {
        int it, i;
        while (running < jobs && (i = next_task(&b, &it)) >= 0) {
            int pfd[2];
            if (pipe(pfd) != 0) {
                rc = -1;
                goto out;
            }
            zs_point_cfg p = *base;
            snprintf(p.method, sizeof p.method, "%s", methods[i]);
            if (tl)
                snprintf(p.timeline, sizeof p.timeline, "%s", tl[i]);
            fflush(NULL);
            pid_t k = fork();
            if (k < 0) {
                close(pfd[0]);
                close(pfd[1]);
                rc = -1;
                goto out;
            }
            if (k == 0) {
                close(pfd[0]);
                run_child(&p, it, pfd[1]);
            }
            close(pfd[1]);
            pid[running] = k;
            fd[running] = pfd[0];
            meth[running] = i;
            iter[running] = it;
            running++;
            b.m[i].started++;
            b.m[i].running++;
        }
        /* Wait for any worker's message; every 10 s a line in a log. */
        struct pollfd pf_[MAX_JOBS];
        for (int k = 0; k < running; k++) {
            pf_[k].fd = fd[k];
            pf_[k].events = POLLIN;
        }
        int pr = poll(pf_, (nfds_t)running, 10000);
        if (pr < 0 && errno != EINTR) {
            rc = -1;
            goto out;
        }
        if (pr == 0)
            board_report(&b, 0, NULL);
        for (int k = running - 1; pr > 0 && k >= 0; k--) {
            if (!(pf_[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            i = meth[k];
            int fin = take(&b, i, iter[k], fd[k], res);
            close(fd[k]);
            waitpid(pid[k], NULL, 0);
            running--; /* the last slot moves into this one */
            pid[k] = pid[running];
            fd[k] = fd[running];
            meth[k] = meth[running];
            iter[k] = iter[running];
            if (fin) {
                b.finished++;
                board_report(&b, 1, methods[i]);
            } else {
                board_report(&b, 0, NULL);
            }
        }
    }
out:
    for (int k = 0; k < running; k++) { /* only after a failure to fork or poll */
        close(fd[k]);
        waitpid(pid[k], NULL, 0);
    }
    zs_progress_end(&b.pg);
    free(b.m);
    return rc;
}

static int plot(const char *path, const char *const *methods, const outcome *res, int n,
                const char *title)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0)
        return 1;
    char dat[1100], gp[1100];
    snprintf(dat, sizeof dat, "%s.dat", path);
    snprintf(gp, sizeof gp, "%s.gp", path);
    /* every file under its name only once whole: the chart is rendered to
     * a temporary name and renamed when gnuplot succeeded */
    zs_afile ad, ag, ap;
    zs_err e;
    if (zs_afile_reserve(&ap, path, &e))
        return -1;
    if (zs_afile_open(&ad, dat, &e)) {
        zs_afile_abort(&ap);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (res[i].rc == ZS_OK)
            fprintf(ad.f, "\"%s\" %.1f\n", methods[i], res[i].r.tokens_per_s);
    if (zs_afile_commit(&ad, &e) || zs_afile_open(&ag, gp, &e)) {
        remove(dat);
        zs_afile_abort(&ap);
        return -1;
    }
    char term[128];
    zs_cli_plot_terminal(path, 900, 500, term, sizeof term);
    fprintf(ag.f,
            "%s\nset output '%s'\n"
            "set title \"%s\"\nset ylabel 'tokens/s'\nset style fill solid 0.8\n"
            "set boxwidth 0.6\nset grid ytics\nset yrange [0:*]\nunset key\n"
            "plot '%s' using 0:2:xtic(1) with boxes lc rgb '#3070b0', "
            "'' using 0:2:(sprintf('%%.0f',$2)) with labels offset 0,0.8\n",
            term, ap.tmp, title, dat);
    int rc = zs_afile_commit(&ag, &e) ? -1 : 0;
    if (rc == 0) {
        char cmd[2400];
        snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", gp);
        rc = system(cmd) == 0 && zs_afile_commit(&ap, &e) == ZS_OK ? 0 : -1;
    }
    zs_afile_abort(&ap); /* a no-op once committed */
    remove(dat);
    remove(gp);
    return rc;
}

typedef struct compare_args {
    zs_point_cfg p;
    zs_format fmt;
    char mlist[512];
    const char *methods[MAX_METHODS]; /* the registry's spelling */
    int n;
    const char *plot_path;
    char baseline[64];
    long jobs;
    int quiet;
    char tl[MAX_METHODS][512]; /* per-method timeline files (several methods) */
    int nodes, gpus;           /* the cluster's size as run */
} compare_args;

static void usage(void)
{
    static const char *const skip[] = {"method", NULL};
    printf("usage: zepsim compare [options]\n\n"
           "Simulates the same study for several methods and prints a comparison\n"
           "table (the default study: cluster-a, 16 nodes, llama-7b, arxiv, 256K\n"
           "tokens per 16-GPU context group, 3 iterations, seed 1).\n\n"
           "options:\n");
    char text[256];
    snprintf(text, sizeof text, "methods to compare, any case (default %s)", default_methods);
    zs_cli_help_entry(stdout, "methods", "A,B,...", text);
    zs_cli_help_entry(stdout, "baseline", "NAME", "speedups are over this method (default te-cp)");
    zs_cli_help_entry(stdout, "jobs", "N",
                      "worker processes, each simulating one iteration of one method at a time "
                      "(default: CPUs)");
    zs_cli_help_entry(stdout, "plot", "FILE.png|FILE.svg|FILE.pdf|none",
                      "bar chart of tokens/s, in the format the extension names (default "
                      "zepsim-compare.png)");
    zs_cli_help_entry(stdout, "quiet", NULL,
                      "no progress on stderr (default: a line per finished method and every "
                      "10 s with the time left; on a terminal, one line in place)");
    zs_cli_point_help(stdout, skip);
}

/* Each method's timeline file: T.json -> T.METHOD.json (also .json.gz,
 * .gz; other names get .METHOD appended), so no two workers ever write one
 * file, whatever --jobs. */
static int timeline_names(compare_args *a, zs_err *e)
{
    static const char *const exts[] = {".json.gz", ".json", ".gz"};
    const char *t = a->p.timeline;
    size_t len = strlen(t), stem = len;
    const char *ext = "";
    for (int k = 0; k < 3; k++) {
        size_t el = strlen(exts[k]);
        if (len > el && !strcmp(t + len - el, exts[k])) {
            stem = len - el;
            ext = exts[k];
            break;
        }
    }
    for (int i = 0; i < a->n; i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(a->methods[i], a->methods[j]))
                return zs_err_set(e, ZS_EUSAGE, "--methods", "list each method once",
                                  "method '%s' is listed twice (each writes its own timeline)",
                                  a->methods[i]);
        int k = snprintf(a->tl[i], sizeof a->tl[i], "%.*s.%s%s", (int)stem, t, a->methods[i], ext);
        if (k < 0 || (size_t)k >= sizeof a->tl[i])
            return zs_err_set(e, ZS_EUSAGE, "--timeline", "use a shorter file name",
                              "timeline name too long");
    }
    return ZS_OK;
}

/* Every method name resolves (any case, to the registry's spelling)
 * before anything runs; so does the baseline. */
static int resolve_methods(compare_args *a, zs_err *e)
{
    char *names[MAX_METHODS];
    a->n = split_methods(a->mlist, names, MAX_METHODS);
    if (a->n <= 0)
        return zs_err_set(e, ZS_EUSAGE, "--methods", "give 1 to 16 methods, comma-separated",
                          "bad method list");
    for (int i = 0; i < a->n; i++) {
        const zs_planner_ops *pl;
        if (zs_planner_lookup(names[i], "--methods", &pl, e))
            return ZS_EUSAGE;
        a->methods[i] = pl->name;
    }
    const zs_planner_ops *pl;
    if (zs_planner_lookup(a->baseline, "--baseline", &pl, e))
        return ZS_EUSAGE;
    snprintf(a->baseline, sizeof a->baseline, "%s", pl->name);
    if (a->p.timeline[0] && a->n > 1)
        return timeline_names(a, e);
    return ZS_OK;
}

/* -1: parsed; otherwise the exit status. */
static int parse_args(int argc, char **argv, compare_args *a)
{
    enum { O_METHODS = 2000, O_JOBS, O_PLOT, O_BASELINE, O_QUIET };
    static const struct option own[] = {{"help", no_argument, 0, 'h'},
                                        {"methods", required_argument, 0, O_METHODS},
                                        {"jobs", required_argument, 0, O_JOBS},
                                        {"plot", required_argument, 0, O_PLOT},
                                        {"baseline", required_argument, 0, O_BASELINE},
                                        {"quiet", no_argument, 0, O_QUIET},
                                        {0, 0, 0, 0}};
    /* one method per run here: --methods */
    static const char *const skip[] = {"method", NULL};
    struct option opts[ZS_CLI_MAX_OPTS];
    zs_cli_point_longopts(own, skip, opts);
    zs_err e;
    zs_err_clear(&e);
    int c;
    zs_cli_reset_getopt();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        int st = 0;
        if (c == 'h') {
            usage();
            return 0;
        } else if (c == O_METHODS) {
            if (strlen(optarg) >= sizeof a->mlist)
                return zs_cli_usage_error("compare", "--methods is too long");
            snprintf(a->mlist, sizeof a->mlist, "%s", optarg);
        } else if (c == O_JOBS) {
            if (zs_cli_parse_int("--jobs", optarg, 1, 64, &a->jobs, &e))
                return zs_cli_fail(&e);
        } else if (c == O_PLOT) {
            a->plot_path = optarg;
        } else if (c == O_BASELINE) {
            snprintf(a->baseline, sizeof a->baseline, "%.63s", optarg);
        } else if (c == O_QUIET) {
            a->quiet = 1;
        } else if ((st = zs_cli_point_opt("compare", c, argv, &a->p, &a->fmt))) {
            return st;
        }
    }
    if (optind < argc)
        return zs_cli_usage_error("compare", "unexpected argument '%s'", argv[optind]);
    if (resolve_methods(a, &e) || zs_cli_plot_check(a->plot_path, &e) ||
        zs_cli_point_size(&a->p, &a->nodes, &a->gpus, &e))
        return zs_cli_fail(&e);
    return -1;
}

/* The results: every column in csv and json, compare's set for people. */
static void print_table(zs_doc *d, const compare_args *a, const outcome *res, int base)
{
    int human = zs_doc_format(d) == ZS_FMT_TABLE;
    zs_table *t = zs_table_new(NULL);
    zs_rcols_add(t, human);
    for (int i = 0; i < a->n; i++) {
        zs_point_cfg p = a->p;
        snprintf(p.method, sizeof p.method, "%s", a->methods[i]);
        const zs_point_result *r = res[i].rc == ZS_OK ? &res[i].r : NULL;
        char err[1600];
        zs_err_format(&res[i].err, err, sizeof err);
        zs_rrow row = {&p, a->nodes, a->gpus, r, err, NAN};
        if (r && base >= 0 && res[base].r.tokens_per_s > 0)
            row.speedup = r->tokens_per_s / res[base].r.tokens_per_s;
        zs_rcols_row(t, &row);
    }
    zs_doc_table(d, "results", t);
}

/* The verdict line, the slowest rank's reason per method, and the notes
 * on figures out of their range. */
static void print_verdict(zs_doc *d, const compare_args *a, const outcome *res, int base)
{
    const zs_point_result *r[MAX_METHODS];
    for (int i = 0; i < a->n; i++)
        r[i] = res[i].rc == ZS_OK ? &res[i].r : NULL;
    zs_verdict v;
    zs_verdict_make(a->methods, r, a->n, base, &v);
    if (v.fastest >= 0) {
        zs_doc_text(d, "%s\n", v.line);
        zs_doc_set_text(d, "verdict", "fastest", a->methods[v.fastest]);
        zs_doc_set_num(d, "verdict", "tokens_per_s", r[v.fastest]->tokens_per_s);
        zs_doc_set_text(d, "verdict", "runner_up", v.second >= 0 ? a->methods[v.second] : NULL);
        zs_doc_set_num(d, "verdict", "margin_pct", v.margin_pct);
        zs_doc_set_text(d, "verdict", "text", v.line);
    }
    zs_doc_text(d, "why (each method's slowest rank in the last iteration):\n");
    for (int i = 0; i < a->n; i++)
        zs_doc_text(d, "  %-10s %s\n", a->methods[i],
                    r[i] ? (r[i]->why[0] ? r[i]->why : "-") : "failed (see the error above)");
    char note[1200];
    if (zs_verdict_nic_note(a->methods, r, a->n, a->p.backend, note, sizeof note))
        zs_doc_note(d, "%s", note);
}

static void print_notes(zs_doc *d, const compare_args *a, const outcome *res, int base)
{
    if (base < 0)
        zs_doc_note(d, "no speedups: the baseline '%s' is not among the methods that ran",
                    a->baseline);
    double cap = 0;
    for (int i = 0; i < a->n; i++)
        if (res[i].rc == ZS_OK && res[i].r.mem_capacity > 0)
            cap = res[i].r.mem_capacity;
    zs_doc_text(d,
                "speedup = tokens_per_s over %s; tokens_per_iter = tokens trained per iteration "
                "(methods that delay or cut documents train different amounts); busy / exposed "
                "/ idle = mean share of the iteration a GPU computes / waits on its own "
                "transfers / waits on other GPUs; max_nic = busiest NIC's busy share; "
                "peak_mem_gib = one GPU's model state and activations (memory model estimate",
                a->baseline);
    if (cap > 0)
        zs_doc_text(d, "; %.1f GiB usable", cap / 1073741824.0);
    zs_doc_text(d, "); attn_imbalance = max/mean attention work per GPU; `zepsim list columns` "
                   "explains every column\n");
    const zs_backend *b = zs_backend_find(a->p.backend);
    if (b && b->caveat)
        zs_doc_note(d, "%s", b->caveat);
}

/* Where each method's timeline went (several methods: one file each). */
static void print_timelines(zs_doc *d, const compare_args *a, const outcome *res)
{
    int several = a->n > 1;
    zs_table *t = zs_doc_format(d) == ZS_FMT_JSON ? zs_table_new(NULL) : NULL;
    if (t) {
        zs_table_col(t, "method", 0);
        zs_table_col(t, "path", 0);
        zs_table_col(t, "json_mb", 1);
    }
    for (int i = 0; i < a->n && a->p.timeline[0]; i++) {
        if (res[i].rc != ZS_OK)
            continue;
        const char *path = several ? a->tl[i] : a->p.timeline;
        zs_cli_timeline_done(zs_doc_human(d), several ? a->methods[i] : NULL, path,
                             res[i].tl_bytes);
        if (t) {
            zs_table_row(t);
            zs_table_set(t, 0, "%s", a->methods[i]);
            zs_table_set(t, 1, "%s", path);
            zs_table_num(t, 2, "%.1f", res[i].tl_bytes / 1e6);
        }
    }
    if (t && zs_table_nrows(t))
        zs_doc_table(d, "timelines", t);
    else
        zs_table_free(t);
}

static void draw(FILE *o, const compare_args *a, const outcome *res, int ok)
{
    if (strcmp(a->plot_path, "none") == 0 || ok == 0)
        return;
    const zs_point_cfg *p = &a->p;
    char title[600];
    snprintf(title, sizeof title, "%s on %s x%d, %s, %lld tokens per %d GPUs", p->model, p->cluster,
             a->nodes, p->trace, (long long)p->context, p->group);
    int pr = plot(a->plot_path, a->methods, res, a->n, title);
    if (pr == 0)
        fprintf(o, "bar chart: %s\n", a->plot_path);
    else if (pr == 1)
        fprintf(o, "no bar chart: gnuplot is not installed (scripts/setup installs it)\n");
    else
        fprintf(o, "no bar chart: gnuplot failed writing %s\n", a->plot_path);
}

int zs_cmd_compare(int argc, char **argv)
{
    compare_args a;
    memset(&a, 0, sizeof a);
    zs_point_cfg_default(&a.p);
    a.fmt = ZS_FMT_TABLE;
    snprintf(a.mlist, sizeof a.mlist, "%s", default_methods);
    snprintf(a.baseline, sizeof a.baseline, "te-cp");
    a.plot_path = "zepsim-compare.png";
    a.jobs = sysconf(_SC_NPROCESSORS_ONLN);
    int st = parse_args(argc, argv, &a);
    if (st >= 0)
        return st;
    outcome *res = calloc((size_t)a.n, sizeof *res);
    if (!res || run_all(&a.p, a.methods, a.n > 1 && a.p.timeline[0] ? a.tl : NULL, a.n, (int)a.jobs,
                        a.quiet ? NULL : stderr, res) != 0) {
        free(res);
        fprintf(stderr, "zepsim: cannot start worker processes: %s\n", strerror(errno));
        return 1;
    }
    if (all_bad_input(a.methods, res, a.n)) {
        free(res);
        return 2;
    }
    int base = -1, failed = 0;
    const char *cost_desc = "";
    for (int i = 0; i < a.n; i++) {
        if (res[i].rc == ZS_OK && !strcmp(a.methods[i], a.baseline))
            base = i;
        if (res[i].rc == ZS_OK)
            cost_desc = res[i].r.cost_desc;
        else
            failed++;
    }
    zs_doc *d = zs_doc_new("compare", a.fmt, stdout);
    if (!d) {
        free(res);
        return zs_cli_doc_end(NULL);
    }
    zs_cli_point_print_cfg(d, &a.p, a.nodes, cost_desc);
    print_table(d, &a, res, base);
    for (int i = 0; i < a.n; i++)
        if (res[i].rc != ZS_OK) {
            fprintf(stderr, "%s: ", a.methods[i]);
            zs_err_print(stderr, &res[i].err);
        }
    print_verdict(d, &a, res, base);
    print_notes(d, &a, res, base);
    print_timelines(d, &a, res);
    FILE *human = zs_doc_human(d);
    int out = zs_cli_doc_end(d);
    draw(human, &a, res, a.n - failed);
    free(res);
    return out ? out : failed ? 1 : 0;
}
