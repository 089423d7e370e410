/* One study point: see zs_point.h. A point is an env (zs_point_env.h)
 * and a loop over iterations: draw a batch, plan it, run it, add its
 * figures; the means come at the end. */
#include "zs_point.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zs_afile.h"
#include "zs_point_env.h"
#include "zs_point_opts.h"

void zs_point_cfg_default(zs_point_cfg *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < zs_popt_count(); i++) {
        const zs_popt *o = zs_popt_at(i);
        /* The table's defaults parse (a unit test checks every row). */
        if (o->type != ZS_POPT_OPTSET)
            zs_popt_parse(o, o->def, ZS_EINPUT, "default", c, NULL);
    }
}

void zs_point_cfg_format(const zs_point_cfg *c, char *buf, size_t n)
{
    snprintf(buf, n,
             "model=%s; cluster=%s; nodes=%d; trace=%s; method=%s; opts=%s; context=%lld; "
             "group=%d; iterations=%d; seed=%llu; backend=%s; calib=%s; zero=%d; recompute=%s",
             c->model, c->cluster, c->nodes, c->trace, c->method, c->opts, (long long)c->context,
             c->group, c->iterations, (unsigned long long)c->seed, c->backend,
             c->calib[0] ? c->calib : "none", c->zero_stage,
             c->recompute == ZS_RECOMPUTE_FULL ? "full" : "none");
    size_t o = strlen(buf);
    if (c->attn_kernel[0] && o < n) /* only when chosen: older records stay equal */
        snprintf(buf + o, n - o, "; attn_kernel=%s", c->attn_kernel);
}

void zs_point_result_clear(zs_point_result *r)
{
    zs_result_free(r->last);
    memset(r, 0, sizeof *r);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Useful FLOPs of a batch: forward + backward (3x forward) of the linear
 * modules, the causal attention and the LM head; recomputation and padding
 * are not useful work, so they are not counted (MFU as in the papers). */
static double batch_flops(const zs_model *m, const zs_batch *b)
{
    double lin = zs_model_linear_flops_per_token(m) * m->layers;
    double f = 0;
    for (int32_t d = 0; d < b->ndocs; d++)
        f += lin * b->len[d] + zs_model_attn_flops_causal(m, b->len[d]) * m->layers +
             2.0 * m->hidden * (double)m->vocab * b->len[d];
    return 3.0 * f;
}

/* The memory model's peak of one GPU for a plan (see zs_point_result). */
static void peak_memory(const zs_point_env *env, const zs_plan_report *rep, double *peak_max,
                        double *capacity)
{
    zs_mem_cfg mc = env->ctx.mem;
    mc.tp = rep->dims.tp > 0 ? rep->dims.tp : 1;
    mc.pp = rep->dims.pp > 0 ? rep->dims.pp : 1;
    mc.dp = env->gpus / (mc.tp * mc.pp) > 0 ? env->gpus / (mc.tp * mc.pp) : 1;
    zs_mem_breakdown mb;
    if (zs_mem_breakdown_compute(&env->model, &env->cluster.gpu, &mc, &mb, NULL))
        return;
    int64_t tok = rep->max_attn_tokens > rep->max_linear_tokens ? rep->max_attn_tokens
                                                                : rep->max_linear_tokens;
    double peak = mb.static_bytes + mb.act_per_token * (double)tok;
    if (peak > *peak_max)
        *peak_max = peak;
    *capacity = mb.capacity;
}

/* Sums over iterations, for the means. */
typedef struct sums {
    double imb_a, imb_l, imb_d, wait, plan_s, exposed, nic, flops, peak, busy, idle;
} sums;

/* Adds one iteration's result r (whose ownership moves to out->last). */
static void add_iteration(const zs_point_env *env, const zs_batch *b, const zs_plan_report *rep,
                          zs_result *r, sums *t, zs_point_result *out)
{
    r->tokens = (double)b->tokens;
    r->model_flops = batch_flops(&env->model, b);
    r->peak_flops = env->cluster.gpu.peak_tflops * 1e12 * env->gpus;
    out->tokens += r->tokens;
    out->seconds += r->iter_time;
    out->ops += r->ops_executed;
    t->flops += r->model_flops;
    t->peak = r->peak_flops;
    double se = 0, sc = 0, si = 0, maxu = 0;
    for (int k = 0; k < r->nranks; k++) {
        se += r->ranks[k].exposed_comm;
        sc += r->ranks[k].compute;
        si += r->ranks[k].idle;
    }
    for (int k = 0; k < r->nnics; k++)
        if (r->nic_busy[k] > maxu)
            maxu = r->nic_busy[k];
    if (r->iter_time > 0) {
        t->exposed += se / r->nranks / r->iter_time;
        t->busy += sc / r->nranks / r->iter_time;
        t->idle += si / r->nranks / r->iter_time;
        t->nic += maxu / r->iter_time;
    }
    t->imb_a += rep->attn_imbalance;
    t->imb_l += rep->linear_imbalance;
    t->imb_d += rep->imbalance_degree;
    t->wait += b->wait_iters * (double)b->tokens;
    t->plan_s += rep->plan_seconds;
    out->iterations++;
    peak_memory(env, rep, &out->peak_mem, &out->mem_capacity);
    snprintf(out->notes, sizeof out->notes, "%s", rep->notes);
    snprintf(out->why, sizeof out->why, "%s", r->slowest_rank >= 0 ? r->slowest_why : "");
    zs_result_free(out->last);
    out->last = r;
}

static void take_means(const sums *t, zs_point_result *out)
{
    int n = out->iterations;
    out->iter_time = out->seconds / n;
    out->tokens_per_iter = out->tokens / n;
    out->tokens_per_s = out->seconds > 0 ? out->tokens / out->seconds : 0;
    out->mfu = out->seconds > 0 && t->peak > 0 ? t->flops / (out->seconds * t->peak) : 0;
    out->exposed_share = t->exposed / n;
    out->compute_share = t->busy / n;
    out->idle_share = t->idle / n;
    out->max_nic_util = t->nic / n;
    out->attn_imbalance = t->imb_a / n;
    out->linear_imbalance = t->imb_l / n;
    out->imbalance_degree = t->imb_d / n;
    out->delay_iters = out->tokens > 0 ? t->wait / out->tokens : 0;
    out->plan_ms = t->plan_s / n * 1e3;
}

/* One iteration: the next batch, planned and run. */
static int iterate(zs_point_env *env, int it, sums *t, zs_point_result *out, zs_err *e)
{
    const zs_point_cfg *cfg = &env->cfg;
    zs_batch *b = NULL;
    int rc = zs_point_env_next(env, &b, e);
    if (rc)
        return rc;
    if (!b)
        return zs_err_set(e, ZS_EINPUT, cfg->trace, "use a longer trace or fewer iterations",
                          "the trace ran out after %d batches", it);
    zs_schedule *s = NULL;
    zs_plan_report rep;
    zs_result *r = NULL;
    rc = zs_point_env_plan(env, b, &s, &rep, e);
    if (!rc)
        rc = zs_point_env_run(env, s, it == cfg->iterations - 1, &r, e);
    if (!rc)
        add_iteration(env, b, &rep, r, t, out);
    zs_schedule_free(s);
    zs_batch_free(b);
    return rc;
}

/* The timeline is written in the last iteration: a path that cannot be
 * written fails now, not after the iterations before it. */
static int probe_timeline(const char *path, zs_err *e)
{
    zs_afile probe;
    int rc = zs_afile_open(&probe, path, e);
    if (!rc)
        zs_afile_abort(&probe);
    return rc;
}

int zs_point_run(const zs_point_cfg *cfg, zs_point_progress progress, void *parg,
                 zs_point_result *out, zs_err *e)
{
    double t_start = now_s();
    memset(out, 0, sizeof *out);
    zs_point_env *env = NULL;
    int rc = zs_point_env_new(cfg, &env, e);
    if (!rc && cfg->timeline[0])
        rc = probe_timeline(cfg->timeline, e);
    if (!rc) {
        snprintf(out->cost_desc, sizeof out->cost_desc, "%s", env->cost->desc);
        out->nodes = env->cluster.nodes;
        out->gpus = env->gpus;
        sums t;
        memset(&t, 0, sizeof t);
        for (int it = 0; it < cfg->iterations && rc == ZS_OK; it++) {
            rc = iterate(env, it, &t, out, e);
            if (progress && rc == ZS_OK)
                progress(parg, it + 1, cfg->iterations);
        }
        if (rc == ZS_OK && out->iterations > 0)
            take_means(&t, out);
    }
    zs_point_env_free(env);
    out->wall_s = now_s() - t_start;
    if (rc)
        zs_point_result_clear(out);
    return rc;
}

void zs_point_plan_clear(zs_point_plan *p)
{
    zs_schedule_free(p->sched);
    zs_batch_free(p->batch);
    memset(p, 0, sizeof *p);
}

int zs_point_plan_batch(const zs_point_cfg *cfg, long index, zs_point_plan *out, zs_err *e)
{
    memset(out, 0, sizeof *out);
    zs_point_env *env = NULL;
    int rc = zs_point_env_new(cfg, &env, e);
    for (long k = 0; !rc && k <= index; k++) {
        zs_batch_free(out->batch);
        out->batch = NULL;
        rc = zs_point_env_next(env, &out->batch, e);
        if (!rc && !out->batch)
            rc = zs_err_set(e, ZS_EINPUT, cfg->trace, "use a smaller --batch",
                            "the trace has fewer than %ld batches", index + 1);
    }
    if (!rc)
        rc = zs_point_env_plan(env, out->batch, &out->sched, &out->rep, e);
    if (!rc) {
        snprintf(out->cost_desc, sizeof out->cost_desc, "%s", env->cost->desc);
        snprintf(out->method, sizeof out->method, "%s", env->planner->name);
        peak_memory(env, &out->rep, &out->peak_mem, &out->mem_capacity);
        out->nodes = env->cluster.nodes;
    }
    zs_point_env_free(env);
    if (rc)
        zs_point_plan_clear(out);
    return rc;
}
