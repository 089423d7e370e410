/* Planning-time measurement: see zs_plan_bench.h. */
#include "zs_plan_bench.h"

#include <stdlib.h>
#include <time.h>

#include <string.h>

#include "zs_planner.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 32K tokens per GPU need full recomputation on 80 GB GPUs. */
static zs_mem_cfg bench_mem(void)
{
    zs_mem_cfg mc = zs_mem_cfg_default();
    mc.recompute = ZS_RECOMPUTE_FULL;
    return mc;
}

int zs_plan_bench(const char *method, const char *model, const char *cluster, int nodes,
                  const zs_batch *b, uint64_t seed, const char *opts, int reps,
                  zs_plan_bench_figs *out, zs_err *e)
{
    zs_model m;
    zs_cluster cl;
    int rc = zs_model_load(model, &m, e);
    if (!rc)
        rc = zs_cluster_load(cluster, nodes, &cl, e);
    if (rc)
        return rc;
    const zs_planner_ops *p = zs_planner_find(method ? method : "zeppelin");
    if (!p)
        return zs_planner_lookup(method, "--method", &p, e);
    zs_cost *cost = zs_cost_analytic_new(&m, &cl);
    if (!cost)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    zs_plan_bench_figs r = {0};
    r.gpus = zs_cluster_gpus(&cl);
    r.docs = b->ndocs;
    r.tokens = b->tokens;
    r.decide_s = r.plan_s = 1e30;
    if (!p->decide)
        r.decide_s = -1;
    for (int i = 0; i < (reps > 0 ? reps : 1) && !rc && p->decide; i++) {
        zs_opts o;
        zs_opts_init(&o);
        zs_plan_ctx ctx = {&m, &cl, cost, bench_mem(), &o, seed};
        int classes[ZS_PLAN_CLASSES] = {0};
        double t0 = now_s();
        if (!(opts && *opts && (rc = zs_opts_parse(&o, opts, e))))
            rc = p->decide(&ctx, b, classes, e);
        double t = now_s() - t0;
        if (t < r.decide_s)
            r.decide_s = t;
        memcpy(r.count, classes, sizeof r.count);
    }
    for (int i = 0; i < (reps > 0 ? reps : 1) && !rc; i++) {
        zs_opts o;
        zs_opts_init(&o);
        if (opts && *opts && (rc = zs_opts_parse(&o, opts, e)))
            break;
        zs_plan_ctx ctx = {&m, &cl, cost, bench_mem(), &o, seed};
        zs_schedule *s = NULL;
        zs_plan_report rep;
        if ((rc = zs_plan_batch(p, &ctx, b, 0, &s, &rep, e)))
            break;
        if (rep.plan_seconds < r.plan_s)
            r.plan_s = rep.plan_seconds;
        r.ops = zs_schedule_total_ops(s);
        zs_schedule_free(s);
    }
    if (!rc)
        *out = r;
    zs_cost_free(cost);
    return rc;
}
