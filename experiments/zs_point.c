/* One study point: see zs_point.h. A point is an env (zs_point_env.h)
 * and a loop over iterations: draw a batch, plan it, run it, add its
 * figures; the means come at the end. */
#include "zs_point.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zs_afile.h"
#include "zs_backend.h"
#include "zs_cluster.h"
#include "zs_point_env.h"
#include "zs_point_opts.h"
#include "zs_tlxnode_internal.h"

void zs_point_cfg_default(zs_point_cfg *c)
{
    memset(c, 0, sizeof *c);
    zs_opt_defaults(zs_popt_at(0), zs_popt_count(), c);
}

void zs_point_exec(const zs_point_cfg *c, const char *timeline, zs_exec_opts *o)
{
    zs_exec_opts_init(o);
    o->fold = c->fold;
    o->interference = c->interference;
    o->timeline = timeline;
    o->tl_ranks = c->tl_ranks;
    o->tl_layer0 = c->tl_layer0;
    o->tl_layer1 = c->tl_layer1;
}

double zs_point_cost_hint(const zs_point_cfg *c)
{
    zs_cluster cl;
    zs_err e;
    int gpus = zs_cluster_load(c->cluster, c->nodes, &cl, &e) ? 1 : zs_cluster_gpus(&cl);
    const zs_backend *b = zs_backend_find(c->backend);
    return (double)c->iterations * pow(gpus, ZS_POINT_COST_EXPONENT) * (b ? b->rel_cost : 1);
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
    o = strlen(buf);
    if (c->fsdp != ZS_FSDP2 && o < n) /* likewise */
        snprintf(buf + o, n - o, "; fsdp=%s", zs_fsdp_name(c->fsdp));
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
    mc.lora = rep->lora;
    zs_mem_breakdown mb;
    if (zs_mem_breakdown_compute(&env->mach.model, &env->mach.cluster.gpu, &mc, &mb, NULL))
        return;
    /* The tokens alive at once, not all of a GPU's micro-batches. */
    int64_t tok = rep->max_live_attn_tokens > rep->max_live_linear_tokens
                      ? rep->max_live_attn_tokens
                      : rep->max_live_linear_tokens;
    if (rep->max_resident_tokens > 0)
        tok = rep->max_resident_tokens; /* offloaded activations are not on the device */
    double peak = mb.static_bytes + mb.act_per_token * (double)tok;
    if (peak > *peak_max)
        *peak_max = peak;
    *capacity = mb.capacity;
}

/* Stamps an iteration's result with what the backend cannot know. With
 * LoRA (frozen base weights) the backward computes input gradients only:
 * two thirds of the FLOPs, as NeMo counts a LoRA step's model FLOPs (the
 * step model's, zs_mstep.model_flops). */
static void stamp(const zs_point_env *env, const zs_batch *b, const zs_plan_report *rep,
                  zs_result *r)
{
    r->tokens = (double)b->tokens;
    r->model_flops = batch_flops(&env->mach.model, b) * (rep->lora ? 2.0 / 3.0 : 1.0);
    r->peak_flops = env->mach.cluster.gpu.peak_tflops * 1e12 * env->gpus;
}

/* One iteration's record from its batch, plan report and stamped result. */
static void record(const zs_point_env *env, const zs_batch *b, const zs_plan_report *rep,
                   const zs_result *r, zs_point_iter *q)
{
    memset(q, 0, sizeof *q);
    q->nodes = env->mach.cluster.nodes;
    q->gpus = env->gpus;
    q->tokens = r->tokens;
    q->model_flops = r->model_flops;
    q->peak_flops = r->peak_flops;
    q->iter_time = r->iter_time;
    q->ops = r->ops_executed;
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
        q->exposed = se / r->nranks / r->iter_time;
        q->busy = sc / r->nranks / r->iter_time;
        q->idle = si / r->nranks / r->iter_time;
        q->nic = maxu / r->iter_time;
    }
    q->imb_a = rep->attn_imbalance;
    q->imb_l = rep->linear_imbalance;
    q->imb_d = rep->imbalance_degree;
    q->wait = b->wait_iters * (double)b->tokens;
    q->plan_s = rep->plan_seconds;
    peak_memory(env, rep, &q->peak_mem, &q->mem_capacity);
    q->tl_bytes = r->timeline_bytes;
    snprintf(q->tl_subset, sizeof q->tl_subset, "%s", r->timeline_subset);
    snprintf(q->cost_desc, sizeof q->cost_desc, "%s", env->mach.cost->desc);
    snprintf(q->notes, sizeof q->notes, "%s", rep->notes);
    snprintf(q->why, sizeof q->why, "%s", r->slowest_rank >= 0 ? r->slowest_why : "");
}

void zs_point_add(zs_point_acc *t, const zs_point_iter *q, zs_point_result *out)
{
    out->nodes = q->nodes;
    out->gpus = q->gpus;
    out->tokens += q->tokens;
    out->seconds += q->iter_time;
    out->ops += q->ops;
    t->flops += q->model_flops;
    t->peak = q->peak_flops;
    if (q->iter_time > 0) {
        t->exposed += q->exposed;
        t->busy += q->busy;
        t->idle += q->idle;
        t->nic += q->nic;
    }
    t->imb_a += q->imb_a;
    t->imb_l += q->imb_l;
    t->imb_d += q->imb_d;
    t->wait += q->wait;
    t->plan_s += q->plan_s;
    out->iterations++;
    if (q->peak_mem > out->peak_mem)
        out->peak_mem = q->peak_mem;
    if (q->mem_capacity > 0)
        out->mem_capacity = q->mem_capacity;
    out->wall_s += q->wall_s;
    if (q->xnode_n > 0) {
        out->xnode_n = q->xnode_n;
        out->xnode_us = q->xnode_us;
    }
    snprintf(out->cost_desc, sizeof out->cost_desc, "%s", q->cost_desc);
    snprintf(out->notes, sizeof out->notes, "%s", q->notes);
    snprintf(out->why, sizeof out->why, "%s", q->why);
}

void zs_point_finish(const zs_point_acc *t, zs_point_result *out)
{
    int n = out->iterations;
    if (n <= 0)
        return;
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

/* The next batch (iteration it's). */
static int draw(zs_point_env *env, int it, zs_batch **b, zs_err *e)
{
    int rc = zs_point_env_next(env, b, e);
    if (!rc && !*b)
        rc = zs_err_set(e, ZS_EINPUT, env->cfg.trace, "use a longer trace or fewer iterations",
                        "the trace ran out after %d batches", it);
    return rc;
}

/* The cross-node transfers of the timeline the run just wrote. */
static int xnode(const zs_point_env *env, zs_point_iter *q, zs_err *e)
{
    zs_tlxnode x;
    int rc = zs_tlxnode_file(env->cfg.timeline, env->mach.cluster.gpus_per_node, &x, e);
    if (!rc) {
        q->xnode_n = (int64_t)x.n;
        q->xnode_us = x.mean_us;
    }
    return rc;
}

/* Plans and runs batch b as iteration it; its record in *q, its result
 * (owned) in *out. */
static int plan_run(zs_point_env *env, const zs_batch *b, int it, zs_point_iter *q, zs_result **out,
                    zs_err *e)
{
    double t0 = now_s();
    zs_schedule *s = NULL;
    zs_plan_report rep;
    zs_result *r = NULL;
    int rc = zs_point_env_plan(env, b, &s, &rep, e);
    if (!rc)
        rc = zs_point_env_run(env, s, it == env->cfg.iterations - 1, &r, e);
    zs_schedule_free(s);
    if (rc)
        return rc;
    stamp(env, b, &rep, r);
    record(env, b, &rep, r, q);
    /* a measured timeline is one file per process, not this path */
    if (r->timeline_bytes > 0 && env->backend->xnode_from_timeline)
        rc = xnode(env, q, e);
    q->wall_s = now_s() - t0;
    if (rc) {
        zs_result_free(r);
        return rc;
    }
    *out = r;
    return ZS_OK;
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
    zs_point_acc t;
    memset(&t, 0, sizeof t);
    for (int it = 0; it < cfg->iterations && rc == ZS_OK; it++) {
        zs_batch *b = NULL;
        zs_result *r = NULL;
        zs_point_iter q;
        rc = draw(env, it, &b, e);
        if (!rc)
            rc = plan_run(env, b, it, &q, &r, e);
        zs_batch_free(b);
        if (rc)
            break;
        zs_point_add(&t, &q, out);
        zs_result_free(out->last);
        out->last = r;
        if (progress)
            progress(parg, it + 1, cfg->iterations);
    }
    if (rc == ZS_OK)
        zs_point_finish(&t, out);
    zs_point_env_free(env);
    out->wall_s = now_s() - t_start;
    if (rc)
        zs_point_result_clear(out);
    return rc;
}

int zs_point_run_iter(const zs_point_cfg *cfg, int it, zs_point_iter *out, zs_result **last,
                      zs_err *e)
{
    if (last)
        *last = NULL;
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    if (it < 0 || it >= cfg->iterations)
        return zs_err_set(e, ZS_EUSAGE, NULL, NULL, "iteration %d of a point of %d", it,
                          cfg->iterations);
    zs_point_env *env = NULL;
    int rc = zs_point_env_new(cfg, &env, e);
    if (!rc && cfg->timeline[0])
        rc = probe_timeline(cfg->timeline, e);
    zs_batch *b = NULL;
    for (int k = 0; k <= it && rc == ZS_OK; k++) {
        zs_batch_free(b);
        b = NULL;
        rc = draw(env, k, &b, e);
    }
    zs_result *r = NULL;
    if (!rc)
        rc = plan_run(env, b, it, out, &r, e);
    if (last && !rc)
        *last = r;
    else
        zs_result_free(r);
    zs_batch_free(b);
    zs_point_env_free(env);
    out->wall_s = now_s() - t0;
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
        snprintf(out->cost_desc, sizeof out->cost_desc, "%s", env->mach.cost->desc);
        snprintf(out->method, sizeof out->method, "%s", env->planner->name);
        peak_memory(env, &out->rep, &out->peak_mem, &out->mem_capacity);
        out->nodes = env->mach.cluster.nodes;
        out->model = env->mach.model;
        out->cluster = env->mach.cluster;
    }
    zs_point_env_free(env);
    if (rc)
        zs_point_plan_clear(out);
    return rc;
}
