/* The environment of a study point: see zs_point_env.h. Built in phases:
 * names (method, backend, sizes), the machine (model, cluster, cost
 * model), the planning context, the batches. */
#include "zs_point_env.h"

#include <stdlib.h>
#include <string.h>

#include "zs_batcher_greedy.h"

static int resolve_names(zs_point_env *env, zs_err *e)
{
    zs_point_cfg *c = &env->cfg;
    int rc = zs_planner_lookup(c->method, "--method", &env->planner, e);
    if (!rc)
        rc = zs_backend_lookup(c->backend, "--backend", ZS_EUSAGE, &env->backend, e);
    if (rc)
        return rc;
    snprintf(c->method, sizeof c->method, "%s", env->planner->name);
    snprintf(c->backend, sizeof c->backend, "%s", env->backend->name);
    if (c->interference && strcmp(c->backend, "analytic"))
        return zs_err_set(e, ZS_EUSAGE, "--interference on",
                          "use --backend analytic, or --interference off",
                          "the %s backend does not model compute-communication interference; "
                          "only the analytic backend does",
                          c->backend);
    if (c->iterations < 1 || c->context < 1 || c->group < 1)
        return zs_err_set(e, ZS_EUSAGE, "--iterations/--context", NULL,
                          "iterations, context and group must be positive");
    return ZS_OK;
}

/* Model, cluster and cost model. The study's group shapes the batches of
 * the methods without a batcher of their own, so only they need it to
 * divide the GPUs. */
static int load_machine(zs_point_env *env, zs_err *e)
{
    const zs_point_cfg *c = &env->cfg;
    zs_machine_cfg mc;
    zs_machine_cfg_init(&mc);
    mc.model = c->model;
    mc.cluster = c->cluster;
    mc.nodes = c->nodes;
    mc.kernel = c->attn_kernel;
    mc.mem_gib = c->mem_gib_override;
    mc.calib = c->calib;
    int rc = zs_machine_load(&mc, &env->mach, e);
    if (!rc && c->precision)
        rc = zs_cost_set_fp8(env->mach.cost, c->precision, e); /* 2: current scaling */
    if (rc)
        return rc;
    env->gpus = zs_cluster_gpus(&env->mach.cluster);
    if (env->gpus % c->group != 0 && !env->planner->batcher)
        return zs_err_set(e, ZS_EUSAGE, "--group", "use a group size that divides the GPUs",
                          "%d GPUs cannot be cut into context groups of %d", env->gpus, c->group);
    return ZS_OK;
}

static int plan_context(zs_point_env *env, zs_err *e)
{
    const zs_point_cfg *c = &env->cfg;
    zs_opts_init(&env->opts);
    int rc = zs_opts_parse(&env->opts, c->opts, e);
    if (rc)
        return rc;
    env->ctx = (zs_plan_ctx){&env->mach.model,     &env->mach.cluster, env->mach.cost,
                             zs_mem_cfg_default(), &env->opts,         c->seed};
    env->ctx.mem.zero_stage = c->zero_stage;
    env->ctx.mem.fsdp = c->fsdp;
    env->ctx.mem.recompute = c->recompute;
    env->ctx.mem.grad = c->grad;
    env->ctx.mem.fp8 = c->precision != 0;
    return ZS_OK;
}

/* Every method of a study reads the same stream of documents; the method's
 * batcher hook (if any) decides how they become batches. */
static int open_batches(zs_point_env *env, zs_err *e)
{
    const zs_point_cfg *c = &env->cfg;
    zs_trace_src_cfg scfg;
    memset(&scfg, 0, sizeof scfg);
    scfg.seed = c->seed;
    int rc = zs_trace_src_open(c->trace, &scfg, &env->src, e);
    if (rc)
        return rc;
    zs_batch_shape shape = {(int64_t)(env->gpus / c->group) * c->context, (int32_t)c->context};
    if (env->planner->batcher &&
        (rc = env->planner->batcher(&env->ctx, zs_trace_src_stream(env->src), &shape, &env->batcher,
                                    e)))
        return rc;
    if (env->batcher)
        return ZS_OK;
    zs_batcher_cfg bcfg = {shape.budget, shape.window, ZS_LONG_SPLIT, 1};
    return zs_batcher_greedy_new(env->src, &bcfg, &env->batcher, e);
}

int zs_point_env_new(const zs_point_cfg *cfg, zs_point_env **out, zs_err *e)
{
    zs_point_env *env = calloc(1, sizeof *env);
    if (!env)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    env->cfg = *cfg;
    int rc = resolve_names(env, e);
    if (!rc)
        rc = load_machine(env, e);
    if (!rc)
        rc = plan_context(env, e);
    if (!rc)
        rc = open_batches(env, e);
    if (rc) {
        zs_point_env_free(env);
        return rc;
    }
    *out = env;
    return ZS_OK;
}

void zs_point_env_free(zs_point_env *env)
{
    if (!env)
        return;
    zs_batcher_free(env->batcher);
    zs_trace_src_free(env->src);
    zs_machine_clear(&env->mach);
    free(env);
}

int zs_point_env_next(zs_point_env *env, zs_batch **out, zs_err *e)
{
    int rc = zs_batcher_next(env->batcher, out, e);
    if (!rc && *out)
        env->batches++;
    return rc;
}

int zs_point_env_plan(zs_point_env *env, const zs_batch *b, zs_schedule **out, zs_plan_report *rep,
                      zs_err *e)
{
    return zs_plan_batch(env->planner, &env->ctx, b, env->cfg.validate, out, rep, e);
}

int zs_point_env_run(const zs_point_env *env, const zs_schedule *s, int timeline, zs_result **out,
                     zs_err *e)
{
    zs_backend_in in;
    zs_backend_in_init(&in, &env->mach.cluster, env->mach.cost);
    zs_point_exec(&env->cfg, timeline && env->cfg.timeline[0] ? env->cfg.timeline : NULL, &in.exec);
    return env->backend->run(s, &in, out, e);
}
