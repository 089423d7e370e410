/* `zepsim compare`: the main job. Runs the same study (model, cluster,
 * trace, context, iterations, seed) for several methods, in parallel worker
 * processes, and prints one table: tokens/s, iteration time, speedup over
 * the baseline, MFU, exposed communication share, max NIC utilisation and
 * attention imbalance; then draws a bar chart with gnuplot. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_point.h"
#include "zs_backend.h"
#include "zs_fdio.h"
#include "zs_planner.h"

#define MAX_METHODS 16

/* What a worker sends back: plain data, no pointers. */
typedef struct outcome {
    int rc;
    zs_err err;
    zs_point_result r; /* r.last is NULL here */
    char why[256];     /* slowest rank's explanation of the last iteration */
    double tl_bytes;   /* JSON size of the timeline written (0: none) */
} outcome;

static const char default_methods[] = "te-cp,llama-cp,hybrid-dp,ulysses,usp,zeppelin";

static void run_child(const zs_point_cfg *p, int fd)
{
    outcome o;
    memset(&o, 0, sizeof o);
    o.rc = zs_point_run(p, NULL, NULL, &o.r, &o.err);
    if (o.rc == ZS_OK && o.r.last) {
        snprintf(o.why, sizeof o.why, "%s", o.r.last->slowest_why);
        o.tl_bytes = o.r.last->timeline_bytes;
    }
    zs_result_free(o.r.last);
    o.r.last = NULL;
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

/* Runs every method, at most jobs at a time; fills res[]. tl: each
 * method's timeline file (NULL: the configuration's). */
static int run_all(const zs_point_cfg *base, const char *const *methods, char (*tl)[512], int n,
                   int jobs, outcome *res)
{
    pid_t pid[MAX_METHODS];
    int fd[MAX_METHODS], started = 0, finished = 0, running = 0;
    for (int i = 0; i < n; i++)
        fd[i] = -1;
    zs_cli_progress("comparing methods", 0, n);
    while (finished < n) {
        while (running < jobs && started < n) {
            int pfd[2];
            if (pipe(pfd) != 0)
                return -1;
            zs_point_cfg p = *base;
            snprintf(p.method, sizeof p.method, "%s", methods[started]);
            if (tl)
                snprintf(p.timeline, sizeof p.timeline, "%s", tl[started]);
            fflush(NULL);
            pid_t k = fork();
            if (k < 0)
                return -1;
            if (k == 0) {
                close(pfd[0]);
                run_child(&p, pfd[1]);
            }
            close(pfd[1]);
            pid[started] = k;
            fd[started] = pfd[0];
            started++;
            running++;
        }
        /* Wait for any running worker's result. */
        struct pollfd pf[MAX_METHODS];
        int idx[MAX_METHODS], np = 0;
        for (int i = 0; i < started; i++)
            if (fd[i] >= 0) {
                pf[np].fd = fd[i];
                pf[np].events = POLLIN;
                idx[np++] = i;
            }
        if (poll(pf, (nfds_t)np, -1) < 0 && errno != EINTR)
            return -1;
        for (int k = 0; k < np; k++) {
            if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int i = idx[k];
            if (zs_read_all(fd[i], &res[i], sizeof res[i]) != 1) {
                memset(&res[i], 0, sizeof res[i]);
                res[i].rc = ZS_ERUNTIME;
                zs_err_set(&res[i].err, ZS_ERUNTIME, methods[i], NULL,
                           "the worker process died (out of memory?)");
            }
            close(fd[i]);
            fd[i] = -1;
            waitpid(pid[i], NULL, 0);
            running--;
            finished++;
            zs_cli_progress("comparing methods", finished, n);
        }
    }
    return 0;
}

static int plot(const char *path, const char *const *methods, const outcome *res, int n,
                const char *title)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0)
        return 1;
    char dat[1100], gp[1100];
    snprintf(dat, sizeof dat, "%s.dat", path);
    snprintf(gp, sizeof gp, "%s.gp", path);
    FILE *f = fopen(dat, "w");
    if (!f)
        return -1;
    for (int i = 0; i < n; i++)
        if (res[i].rc == ZS_OK)
            fprintf(f, "\"%s\" %.1f\n", methods[i], res[i].r.tokens_per_s);
    fclose(f);
    f = fopen(gp, "w");
    if (!f)
        return -1;
    fprintf(f,
            "set terminal pngcairo size 900,500 noenhanced\nset output '%s'\n"
            "set title \"%s\"\nset ylabel 'tokens/s'\nset style fill solid 0.8\n"
            "set boxwidth 0.6\nset grid ytics\nset yrange [0:*]\nunset key\n"
            "plot '%s' using 0:2:xtic(1) with boxes lc rgb '#3070b0', "
            "'' using 0:2:(sprintf('%%.0f',$2)) with labels offset 0,0.8\n",
            path, title, dat);
    fclose(f);
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", gp);
    int rc = system(cmd);
    remove(dat);
    remove(gp);
    return rc == 0 ? 0 : -1;
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
    char tl[MAX_METHODS][512]; /* per-method timeline files (several methods) */
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
    zs_cli_help_entry(stdout, "jobs", "N", "methods simulated in parallel (default: CPUs)");
    zs_cli_help_entry(stdout, "plot", "FILE.png|none",
                      "bar chart of tokens/s (default zepsim-compare.png)");
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
    enum { O_METHODS = 2000, O_JOBS, O_PLOT, O_BASELINE };
    static const struct option own[] = {{"help", no_argument, 0, 'h'},
                                        {"methods", required_argument, 0, O_METHODS},
                                        {"jobs", required_argument, 0, O_JOBS},
                                        {"plot", required_argument, 0, O_PLOT},
                                        {"baseline", required_argument, 0, O_BASELINE},
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
        } else if ((st = zs_cli_point_opt("compare", c, argv, &a->p, &a->fmt))) {
            return st;
        }
    }
    if (optind < argc)
        return zs_cli_usage_error("compare", "unexpected argument '%s'", argv[optind]);
    if (resolve_methods(a, &e))
        return zs_cli_fail(&e);
    return -1;
}

static void print_table(const compare_args *a, const outcome *res, int base)
{
    zs_table *t = zs_table_new(NULL);
    const char *cols[] = {"method", "tokens/s",  "tok/iter", "iter_ms",   "speedup",  "mfu_%",
                          "busy_%", "exposed_%", "idle_%",   "max_nic_%", "attn_imb", "plan_ms"};
    const int ncols = (int)(sizeof cols / sizeof cols[0]);
    for (int i = 0; i < ncols; i++)
        zs_table_col(t, cols[i], i > 0);
    for (int i = 0; i < a->n; i++) {
        zs_table_row(t);
        zs_table_set(t, 0, "%s", a->methods[i]);
        if (res[i].rc != ZS_OK) {
            zs_table_set(t, 1, "failed");
            continue;
        }
        const zs_point_result *r = &res[i].r;
        zs_table_set(t, 1, "%.0f", r->tokens_per_s);
        zs_table_set(t, 2, "%.0f", r->tokens_per_iter);
        zs_table_set(t, 3, "%.1f", r->iter_time * 1e3);
        if (base >= 0)
            zs_table_set(t, 4, "%.2f", r->tokens_per_s / res[base].r.tokens_per_s);
        zs_table_set(t, 5, "%.1f", r->mfu * 100);
        zs_table_set(t, 6, "%.1f", r->compute_share * 100);
        zs_table_set(t, 7, "%.1f", r->exposed_share * 100);
        zs_table_set(t, 8, "%.1f", r->idle_share * 100);
        zs_table_set(t, 9, "%.1f", r->max_nic_util * 100);
        zs_table_set(t, 10, "%.2f", r->attn_imbalance);
        zs_table_set(t, 11, "%.1f", r->plan_ms);
    }
    zs_table_print(t, stdout, a->fmt);
    zs_table_free(t);
}

static void print_notes(const compare_args *a, int base)
{
    if (a->fmt != ZS_FMT_TABLE)
        return;
    if (base < 0)
        printf("(no speedups: the baseline '%s' is not among the methods that ran)\n", a->baseline);
    printf("speedup = tokens/s over %s; tok/iter = tokens trained per iteration (methods "
           "that delay or cut documents train different amounts); busy / exposed / idle = mean "
           "share of the "
           "iteration a GPU computes / waits on its own transfers / waits on other GPUs; "
           "max_nic = busiest NIC's busy share; attn_imb = max/mean attention work per "
           "GPU\n",
           a->baseline);
    const zs_backend *b = zs_backend_find(a->p.backend);
    if (b && b->caveat)
        printf("%s\n", b->caveat);
}

/* Where each method's timeline went (several methods: one file each). */
static void print_timelines(const compare_args *a, const outcome *res)
{
    int several = a->n > 1;
    for (int i = 0; i < a->n && a->p.timeline[0]; i++)
        if (res[i].rc == ZS_OK)
            zs_cli_timeline_done(a->fmt == ZS_FMT_TABLE ? stdout : stderr,
                                 several ? a->methods[i] : NULL, several ? a->tl[i] : a->p.timeline,
                                 res[i].tl_bytes);
}

static void draw(const compare_args *a, const outcome *res, int ok)
{
    if (strcmp(a->plot_path, "none") == 0 || ok == 0)
        return;
    const zs_point_cfg *p = &a->p;
    char title[600];
    snprintf(title, sizeof title, "%s on %s x%d, %s, %lld tokens per %d GPUs", p->model, p->cluster,
             p->nodes, p->trace, (long long)p->context, p->group);
    int pr = plot(a->plot_path, a->methods, res, a->n, title);
    FILE *o = a->fmt == ZS_FMT_TABLE ? stdout : stderr;
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
                        res) != 0) {
        free(res);
        fprintf(stderr, "zepsim: cannot start worker processes: %s\n", strerror(errno));
        return 1;
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
    if (a.fmt == ZS_FMT_TABLE)
        zs_cli_point_print_cfg(stdout, &a.p, cost_desc);
    print_table(&a, res, base);
    for (int i = 0; i < a.n; i++)
        if (res[i].rc != ZS_OK) {
            fprintf(stderr, "%s: ", a.methods[i]);
            zs_err_print(stderr, &res[i].err);
        }
    print_notes(&a, base);
    print_timelines(&a, res);
    draw(&a, res, a.n - failed);
    free(res);
    return failed ? 1 : 0;
}
