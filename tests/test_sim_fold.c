/* Folded against unrolled on the SimGrid backend at every point of every
 * figure spec (experiments/specs/) with at most 64 GPUs: the first global
 * batch of the point, planned as the runner plans it, run with --fold off
 * and on. The iteration time (every figure's metric is made of it) must
 * agree to 0.5%; the mean compute / exposed / idle shares, which folding
 * approximates (each sleeping stream replays its own last period, and
 * SimGrid's streams repeat only to the tolerance), to 3 percentage points.
 * Larger points are a benchmark, not a test: the same check over the
 * points of ZS_FOLD_MIN_GPUS..ZS_FOLD_MAX_GPUS GPUs (defaults 1 and 64),
 * of the specs whose file name contains ZS_FOLD_SPEC (default: all), e.g.
 *   ZS_FOLD_MIN_GPUS=65 ZS_FOLD_MAX_GPUS=1024 ZS_FOLD_SPEC=zeppelin-main \
 *     build/tests/test_sim_fold
 * (and `zepsim bench sim --fold off,on` on the default study). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_point_env.h"
#include "zs_sim.h"
#include "zs_spec.h"
#include "zs_test.h"

#define MAX_GPUS 64
/* Under the sanitizers SimGrid runs on thread contexts (20-35x slower):
 * every 8th point then, which still covers every spec and method. */
#if defined(__SANITIZE_ADDRESS__)
#define STRIDE 8
#else
#define STRIDE 1
#endif

typedef struct shares {
    double t, c, x, i;
} shares;

static shares run(const zs_point_env *env, const zs_schedule *s, int fold)
{
    zs_sim_opts o;
    zs_sim_opts_init(&o);
    o.exec.fold = fold ? ZS_FOLD_EXACT : ZS_FOLD_OFF;
    zs_result *r = NULL;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_sim_run_forked(s, &env->mach.cluster, &o, &r, &e), &e);
    shares sh = {r->iter_time, 0, 0, 0};
    for (int k = 0; k < r->nranks; k++) {
        sh.c += r->ranks[k].compute / r->nranks / r->iter_time;
        sh.x += r->ranks[k].exposed_comm / r->nranks / r->iter_time;
        sh.i += r->ranks[k].idle / r->nranks / r->iter_time;
    }
    zs_result_free(r);
    return sh;
}

static int npoints, worst_t_pt;
static double worst_t, worst_s;
static long min_gpus = 1, max_gpus = MAX_GPUS;

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    char *end = NULL;
    long x = v && *v ? strtol(v, &end, 10) : def;
    return v && *v && end && !*end && x > 0 ? x : def;
}

static void check_point(const zs_spec *sp, const zs_spec_point *pt)
{
    zs_point_cfg c = pt->cfg;
    c.iterations = 1;
    c.timeline[0] = '\0';
    zs_point_env *env = NULL;
    zs_batch *b = NULL;
    zs_schedule *s = NULL;
    zs_plan_report rep;
    zs_err e;
    zs_err_clear(&e);
    ZS_ASSERT_OK(zs_point_env_new(&c, &env, &e), &e);
    if (env->gpus > max_gpus || env->gpus < min_gpus) {
        zs_point_env_free(env);
        return;
    }
    ZS_ASSERT_OK(zs_point_env_next(env, &b, &e), &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    ZS_ASSERT_OK(zs_point_env_plan(env, b, &s, &rep, &e), &e);
    shares u = run(env, s, 0), f = run(env, s, 1);
    double dt = fabs(f.t - u.t) / u.t;
    double ds = fmax(fabs(f.c - u.c), fmax(fabs(f.x - u.x), fabs(f.i - u.i)));
    if (dt > 5e-3 || ds > 3e-2)
        fprintf(stderr, "  %s / %s / %s: time %+.3f%%, shares %.2f pp\n", sp->name,
                sp->cases[pt->case_idx].label, sp->series[pt->series_idx].label,
                100 * (f.t - u.t) / u.t, 100 * ds);
    ZS_ASSERT_NEAR(dt, 0, 5e-3);
    ZS_ASSERT_NEAR(ds, 0, 3e-2);
    npoints++;
    if (dt > worst_t) {
        worst_t = dt;
        worst_t_pt = npoints;
    }
    worst_s = fmax(worst_s, ds);
    zs_schedule_free(s);
    zs_batch_free(b);
    zs_point_env_free(env);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_every_spec(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/experiments/specs", ZS_SOURCE_DIR);
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    min_gpus = env_long("ZS_FOLD_MIN_GPUS", 1);
    max_gpus = env_long("ZS_FOLD_MAX_GPUS", MAX_GPUS);
    const char *only = getenv("ZS_FOLD_SPEC");
    char *names[64];
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) && n < 64;)
        if (strstr(de->d_name, ".json") && (!only || strstr(de->d_name, only)))
            names[n++] = strdup(de->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    CU_ASSERT(n > 0);
    for (int k = 0; k < n; k++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        zs_spec *sp = NULL;
        zs_err e;
        zs_err_clear(&e);
        ZS_ASSERT_OK(zs_spec_load(path, &sp, &e), &e);
        int before = npoints;
        for (int p = 0; p < sp->npoints; p += STRIDE)
            check_point(sp, &sp->points[p]);
        fprintf(stderr, "  %s: %d points\n", sp->name, npoints - before);
        zs_spec_free(sp);
        free(names[k]);
    }
    fprintf(stderr, "  %d points: worst time %.4f%% (point %d), worst share %.3f pp\n", npoints,
            100 * worst_t, worst_t_pt, 100 * worst_s);
    CU_ASSERT(npoints > 0);
}

int main(int argc, char **argv)
{
    static const zs_test_case cases[] = {{"every_spec", test_every_spec}, {NULL, NULL}};
    static const zs_test_suite suites[] = {{"sim_fold", cases}, {NULL, NULL}};
    return zs_test_main(argc, argv, suites);
}
