/* One study point: see zs_point.h. */
#include "zs_point.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zs_analytic.h"
#include "zs_batcher_greedy.h"
#include "zs_calib.h"
#include "zs_plan4d.h"
#include "zs_planner.h"
#include "zs_sim.h"
#include "zs_trace_src.h"
#include "zs_wlb_pack.h"

void zs_point_cfg_default(zs_point_cfg *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->model, sizeof c->model, "llama-7b");
    snprintf(c->cluster, sizeof c->cluster, "cluster-a");
    c->nodes = 16;
    snprintf(c->trace, sizeof c->trace, "arxiv");
    snprintf(c->method, sizeof c->method, "zeppelin");
    c->context = 262144;
    c->group = 16;
    c->iterations = 3;
    c->seed = 1;
    snprintf(c->backend, sizeof c->backend, "sim");
    c->zero_stage = 1;
    c->recompute = ZS_RECOMPUTE_FULL;
    c->tl_rank0 = c->tl_rank1 = c->tl_layer0 = c->tl_layer1 = -1;
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

/* The SimGrid platform takes the calibrated link figures too. */
static void calib_cluster(const zs_calib *cal, zs_cluster *c)
{
    double lat, bw;
    if (zs_calib_link(cal, ZS_LINK_NVLINK, &lat, &bw)) {
        c->nvlink_latency_us = lat * 1e6;
        c->gpu.nvlink_gbs = bw / 1e9;
    }
    if (zs_calib_link(cal, ZS_LINK_NIC, &lat, &bw)) {
        c->nic_latency_us = lat * 1e6;
        c->nic_gbps = bw * 8 / 1e9;
    }
}

static int is_4d(const char *m)
{
    return !strcmp(m, "plain-4d") || !strcmp(m, "fixed-4d") || !strcmp(m, "wlb-llm");
}

int zs_point_run(const zs_point_cfg *cfg, zs_point_progress progress, void *parg,
                 zs_point_result *out, zs_err *e)
{
    double t_start = now_s();
    memset(out, 0, sizeof *out);
    const zs_planner_ops *pl = zs_planner_find(cfg->method);
    if (!pl) {
        char names[512];
        zs_planner_names(names, sizeof names);
        char fix[600];
        snprintf(fix, sizeof fix, "use one of: %s", names);
        return zs_err_set(e, ZS_EUSAGE, "--method", fix, "unknown method '%s'", cfg->method);
    }
    if (strcmp(cfg->backend, "sim") && strcmp(cfg->backend, "analytic"))
        return zs_err_set(e, ZS_EUSAGE, "--backend", "use sim or analytic", "unknown backend '%s'",
                          cfg->backend);
    if (cfg->iterations < 1 || cfg->context < 1 || cfg->group < 1)
        return zs_err_set(e, ZS_EUSAGE, "--iterations/--context", NULL,
                          "iterations, context and group must be positive");
    zs_model m;
    zs_cluster cl;
    int rc = zs_model_load(cfg->model, &m, e);
    if (!rc)
        rc = zs_cluster_load(cfg->cluster, cfg->nodes, &cl, e);
    if (rc)
        return rc;
    int gpus = zs_cluster_gpus(&cl);
    if (gpus % cfg->group != 0 && !is_4d(cfg->method))
        return zs_err_set(e, ZS_EUSAGE, "--group", "use a group size that divides the GPUs",
                          "%d GPUs cannot be cut into context groups of %d", gpus, cfg->group);
    zs_calib *cal = NULL;
    zs_cost *cost = NULL;
    zs_trace_src *src = NULL;
    zs_batcher *bat = NULL;
    zs_opts opts;
    zs_opts_init(&opts);
    if (cfg->calib[0]) {
        if ((rc = zs_calib_load(cfg->calib, &cal, e)))
            return rc;
        calib_cluster(cal, &cl);
        cost = zs_cost_calibrated_new(&m, &cl, cal);
    } else {
        cost = zs_cost_analytic_new(&m, &cl);
    }
    if (!cost) {
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory creating the cost model");
        goto out;
    }
    snprintf(out->cost_desc, sizeof out->cost_desc, "%s", cost->desc);
    if ((rc = zs_opts_parse(&opts, cfg->opts, e)))
        goto out;
    zs_plan_ctx ctx = {&m, &cl, cost, zs_mem_cfg_default(), &opts, cfg->seed};
    ctx.mem.zero_stage = cfg->zero_stage;
    ctx.mem.recompute = cfg->recompute;

    /* Every method of a study sees the same stream of documents; the
     * 4D methods bring them in batches of their own shape (PP x DP
     * micro-batches of one window), as WLB-LLM's loader does. */
    zs_trace_src_cfg scfg;
    memset(&scfg, 0, sizeof scfg);
    scfg.seed = cfg->seed;
    if ((rc = zs_trace_src_open(cfg->trace, &scfg, &src, e)))
        goto out;
    zs_batcher_cfg bcfg = {(int64_t)(gpus / cfg->group) * cfg->context, (int32_t)cfg->context,
                           ZS_LONG_SPLIT, 1};
    zs__4d o4;
    zs__4d_doc_cost dc = {&ctx, &o4}; /* must outlive the batcher */
    if (is_4d(cfg->method)) {
        if ((rc = zs__4d_options(&ctx, cfg->method, &o4, e)))
            goto out;
        int nmicro = o4.dims.pp * o4.dims.dp * (o4.micro > 0 ? o4.micro / o4.dims.pp : 1);
        if (nmicro < 1)
            nmicro = o4.dims.pp * o4.dims.dp;
        if (!strcmp(cfg->method, "wlb-llm")) {
            zs_wlb_pack_cfg wc;
            memset(&wc, 0, sizeof wc);
            wc.nmicro = nmicro;
            wc.window = o4.window;
            wc.nqueues = 2;
            wc.cost = (zs_pack_cost){zs__4d_doc_cost_fn, &dc};
            rc = zs_batcher_wlb_new(zs_trace_src_stream(src), &wc, &bat, e);
        } else {
            bcfg.budget = (int64_t)nmicro * o4.window;
            bcfg.window = o4.window;
            rc = zs_batcher_greedy_new(src, &bcfg, &bat, e);
        }
    } else {
        rc = zs_batcher_greedy_new(src, &bcfg, &bat, e);
    }
    if (rc)
        goto out;

    double imb_a = 0, imb_l = 0, plan_s = 0, exposed = 0, nic = 0, flops = 0, peak = 0;
    double busy = 0, idle = 0;
    for (int it = 0; it < cfg->iterations && rc == ZS_OK; it++) {
        zs_batch *b = NULL;
        if ((rc = zs_batcher_next(bat, &b, e)))
            break;
        if (!b) {
            rc = zs_err_set(e, ZS_EINPUT, cfg->trace, "use a longer trace or fewer iterations",
                            "the trace ran out after %d batches", it);
            break;
        }
        zs_schedule *s = NULL;
        zs_plan_report rep;
        rc = zs_plan_batch(pl, &ctx, b, cfg->validate, &s, &rep, e);
        if (rc) {
            zs_batch_free(b);
            break;
        }
        zs_result *r = NULL;
        if (!strcmp(cfg->backend, "sim")) {
            zs_sim_opts so;
            zs_sim_opts_init(&so);
            if (cfg->timeline[0] && it == cfg->iterations - 1) {
                so.timeline = cfg->timeline;
                so.tl_rank0 = cfg->tl_rank0;
                so.tl_rank1 = cfg->tl_rank1;
                so.tl_layer0 = cfg->tl_layer0;
                so.tl_layer1 = cfg->tl_layer1;
            }
            rc = zs_sim_run_forked(s, &cl, &so, &r, e);
        } else {
            rc = zs_analytic_run(s, cost, NULL, &r, e);
        }
        if (rc == ZS_OK) {
            r->tokens = (double)b->tokens;
            r->model_flops = batch_flops(&m, b);
            r->peak_flops = cl.gpu.peak_tflops * 1e12 * gpus;
            out->tokens += r->tokens;
            out->seconds += r->iter_time;
            out->ops += r->ops_executed;
            flops += r->model_flops;
            peak = r->peak_flops;
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
                exposed += se / r->nranks / r->iter_time;
                busy += sc / r->nranks / r->iter_time;
                idle += si / r->nranks / r->iter_time;
                nic += maxu / r->iter_time;
            }
            imb_a += rep.attn_imbalance;
            imb_l += rep.linear_imbalance;
            plan_s += rep.plan_seconds;
            out->iterations++;
            snprintf(out->notes, sizeof out->notes, "%s", rep.notes);
            zs_result_free(out->last);
            out->last = r;
        }
        zs_schedule_free(s);
        zs_batch_free(b);
        if (progress)
            progress(parg, it + 1, cfg->iterations);
    }
    if (rc == ZS_OK && out->iterations > 0) {
        int n = out->iterations;
        out->iter_time = out->seconds / n;
        out->tokens_per_s = out->seconds > 0 ? out->tokens / out->seconds : 0;
        out->mfu = out->seconds > 0 && peak > 0 ? flops / (out->seconds * peak) : 0;
        out->exposed_share = exposed / n;
        out->compute_share = busy / n;
        out->idle_share = idle / n;
        out->max_nic_util = nic / n;
        out->attn_imbalance = imb_a / n;
        out->linear_imbalance = imb_l / n;
        out->plan_ms = plan_s / n * 1e3;
    }
out:
    zs_batcher_free(bat);
    zs_trace_src_free(src);
    zs_cost_free(cost);
    zs_calib_free(cal);
    out->wall_s = now_s() - t_start;
    if (rc)
        zs_point_result_clear(out);
    return rc;
}
