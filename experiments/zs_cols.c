/* The columns of a result row: see zs_cols.h. */
#include "zs_cols.h"

#include <math.h>
#include <string.h>

#define CFG(name, unit, kind, help)                                                                \
    {                                                                                              \
        name, unit, help, 1, kind, 0                                                               \
    }
#define RES(name, unit, human, help)                                                               \
    {                                                                                              \
        name, unit, help, 0, ZS_COL_NUM, human                                                     \
    }
#define TXT(name, human, help)                                                                     \
    {                                                                                              \
        name, "", help, 0, ZS_COL_TEXT, human                                                      \
    }

/* Order: the order of CSV and JSON columns. docs/output.md has the same
 * table. */
static const zs_rcol table[] = {
    CFG("model", "", ZS_COL_TEXT, "model preset or file"),
    CFG("cluster", "", ZS_COL_TEXT, "cluster preset or file"),
    CFG("nodes", "nodes", ZS_COL_NUM, "nodes simulated"),
    CFG("nodes_from", "", ZS_COL_TEXT,
        "where the node count came from: --nodes (or a spec's \"nodes\") or cluster (the "
        "cluster file's own count)"),
    CFG("gpus", "GPUs", ZS_COL_NUM, "GPUs simulated"),
    CFG("trace", "", ZS_COL_TEXT, "document lengths: preset, generator or file"),
    CFG("method", "", ZS_COL_TEXT, "method (planner)"),
    CFG("opts", "", ZS_COL_TEXT, "method options k=v,k=v (null: none)"),
    CFG("context", "tokens", ZS_COL_NUM, "tokens per context group"),
    CFG("group", "GPUs", ZS_COL_NUM, "GPUs per context group"),
    CFG("iterations", "", ZS_COL_NUM, "training iterations simulated"),
    CFG("seed", "", ZS_COL_NUM, "seed of the trace generator and planners"),
    CFG("backend", "", ZS_COL_TEXT, "sim (SimGrid) or analytic"),
    CFG("calib", "", ZS_COL_TEXT, "calibration file (null: analytic costs)"),
    CFG("attn_kernel", "", ZS_COL_TEXT, "attention kernel (null: the GPU's own)"),
    CFG("zero_stage", "", ZS_COL_NUM, "ZeRO stage"),
    CFG("recompute", "", ZS_COL_TEXT, "activation recomputation: none or full"),
    TXT("status", 0, "ok or failed"),
    TXT("error", 0, "why the point failed (null when ok)"),
    RES("tokens_per_s", "tokens/s", 1, "tokens trained per simulated second"),
    RES("tokens_per_iter", "tokens", 1,
        "tokens trained per iteration (mean; methods that delay or cut documents differ)"),
    RES("iter_ms", "ms", 1, "mean iteration time"),
    RES("speedup", "x", 1, "tokens_per_s over the baseline method (compare; null: none)"),
    RES("mfu_pct", "%", 1, "model FLOPs utilisation (useful FLOPs / peak)"),
    RES("busy_pct", "% of iteration", 1, "mean share of the iteration a GPU computes"),
    RES("exposed_pct", "% of iteration", 1,
        "mean share a GPU waits on its own transfers (exposed communication)"),
    RES("idle_pct", "% of iteration", 1, "mean share a GPU waits on other GPUs"),
    RES("max_nic_pct", "% busy", 1,
        "busiest NIC's busy time / iteration time (mean; above 100 only on the analytic "
        "backend, see the note)"),
    RES("xnode_p2p_us", "us", 0,
        "mean time a cross-node point-to-point transfer of the forward pass adds on its link "
        "(a ring round: from its start, or its link's previous arrival, to its arrival) in "
        "the last iteration, read from its timeline (null: no --timeline, or none)"),
    RES("peak_mem_gib", "GiB", 1,
        "peak memory of one GPU: model state as the plan shards it + activations of the most "
        "tokens a GPU holds at once (its micro-batches alive together; memory model estimate, "
        "not measured)"),
    RES("attn_imbalance", "max/mean", 1, "attention work of the busiest GPU over the mean"),
    RES("linear_imbalance", "max/mean", 0, "linear-module tokens of the busiest GPU over the mean"),
    RES("imbalance_degree", "", 0,
        "max micro-batch latency x micro-batches / total (null: no micro-batches)"),
    RES("delay_iters", "iterations", 0, "iterations a trained token waited (mean)"),
    RES("plan_ms", "ms", 1, "planning time per batch (host)"),
    RES("ops", "ops", 0, "ops simulated, all iterations"),
    RES("wall_s", "s", 0,
        "host time of the point (summed over its iterations' workers when they run apart)"),
    TXT("why", 0, "why the last iteration's slowest rank was slowest"),
};
#undef CFG
#undef RES
#undef TXT

int zs_rcol_count(void)
{
    return (int)(sizeof table / sizeof table[0]);
}

const zs_rcol *zs_rcol_at(int i)
{
    return i >= 0 && i < zs_rcol_count() ? &table[i] : NULL;
}

const zs_rcol *zs_rcol_find(const char *name)
{
    for (int i = 0; i < zs_rcol_count(); i++)
        if (!strcmp(table[i].name, name))
            return &table[i];
    return NULL;
}

static int shown(const zs_rcol *c, int human)
{
    return !human || c->human || !strcmp(c->name, "method");
}

void zs_rcols_add(zs_table *t, int human)
{
    /* people read the method first */
    if (human)
        zs_table_col(t, "method", ZS_COL_TEXT);
    for (int i = 0; i < zs_rcol_count(); i++)
        if (shown(&table[i], human) && !(human && !strcmp(table[i].name, "method")))
            zs_table_col(t, table[i].name, table[i].kind);
}

static void text(zs_table *t, int col, const char *s)
{
    if (s && *s)
        zs_table_set(t, col, "%s", s);
}

static int put_config(const zs_rcol *c, zs_table *t, int col, const zs_rrow *in)
{
    const zs_point_cfg *p = in->cfg;
    const char *n = c->name;
    if (!strcmp(n, "model"))
        text(t, col, p->model);
    else if (!strcmp(n, "cluster"))
        text(t, col, p->cluster);
    else if (!strcmp(n, "nodes"))
        zs_table_num(t, col, "%.0f", in->nodes);
    else if (!strcmp(n, "nodes_from"))
        text(t, col, p->nodes > 0 ? "--nodes" : "cluster");
    else if (!strcmp(n, "gpus"))
        zs_table_num(t, col, "%.0f", in->gpus);
    else if (!strcmp(n, "trace"))
        text(t, col, p->trace);
    else if (!strcmp(n, "method"))
        text(t, col, p->method);
    else if (!strcmp(n, "opts"))
        text(t, col, p->opts);
    else if (!strcmp(n, "context"))
        zs_table_num(t, col, "%.0f", (double)p->context);
    else if (!strcmp(n, "group"))
        zs_table_num(t, col, "%.0f", p->group);
    else if (!strcmp(n, "iterations"))
        zs_table_num(t, col, "%.0f", p->iterations);
    else if (!strcmp(n, "seed"))
        zs_table_set(t, col, "%llu", (unsigned long long)p->seed);
    else if (!strcmp(n, "backend"))
        text(t, col, p->backend);
    else if (!strcmp(n, "calib"))
        text(t, col, p->calib);
    else if (!strcmp(n, "attn_kernel"))
        text(t, col, p->attn_kernel);
    else if (!strcmp(n, "zero_stage"))
        zs_table_num(t, col, "%.0f", p->zero_stage);
    else if (!strcmp(n, "recompute"))
        text(t, col, p->recompute == ZS_RECOMPUTE_FULL ? "full" : "none");
    else
        return 0;
    return 1;
}

/* The figure of a result column (NAN: none), and its printf format. */
static double figure(const char *n, const zs_rrow *in, const char **fmt)
{
    const zs_point_result *r = in->r;
    *fmt = "%.1f";
    if (!strcmp(n, "tokens_per_s"))
        return *fmt = "%.0f", r->tokens_per_s;
    if (!strcmp(n, "tokens_per_iter"))
        return *fmt = "%.0f", r->tokens_per_iter;
    if (!strcmp(n, "iter_ms"))
        return r->iter_time * 1e3;
    if (!strcmp(n, "speedup"))
        return *fmt = "%.2f", in->speedup;
    if (!strcmp(n, "mfu_pct"))
        return r->mfu * 100;
    if (!strcmp(n, "busy_pct"))
        return r->compute_share * 100;
    if (!strcmp(n, "exposed_pct"))
        return r->exposed_share * 100;
    if (!strcmp(n, "idle_pct"))
        return r->idle_share * 100;
    if (!strcmp(n, "max_nic_pct"))
        return r->max_nic_util * 100;
    if (!strcmp(n, "xnode_p2p_us"))
        return r->xnode_n > 0 ? r->xnode_us : NAN;
    if (!strcmp(n, "peak_mem_gib"))
        return r->peak_mem > 0 ? r->peak_mem / 1073741824.0 : NAN;
    if (!strcmp(n, "attn_imbalance"))
        return *fmt = "%.2f", r->attn_imbalance;
    if (!strcmp(n, "linear_imbalance"))
        return *fmt = "%.2f", r->linear_imbalance;
    if (!strcmp(n, "imbalance_degree"))
        return *fmt = "%.3f", r->imbalance_degree > 0 ? r->imbalance_degree : NAN;
    if (!strcmp(n, "delay_iters"))
        return *fmt = "%.3f", r->delay_iters;
    if (!strcmp(n, "plan_ms"))
        return r->plan_ms;
    if (!strcmp(n, "ops"))
        return *fmt = "%.0f", (double)r->ops;
    if (!strcmp(n, "wall_s"))
        return *fmt = "%.2f", r->wall_s;
    return NAN;
}

void zs_rcol_put(const zs_rcol *c, zs_table *t, int col, const zs_rrow *in)
{
    if (c->config && put_config(c, t, col, in))
        return;
    if (!strcmp(c->name, "status"))
        text(t, col, in->r ? "ok" : "failed");
    else if (!strcmp(c->name, "error"))
        text(t, col, in->r ? NULL : in->error);
    else if (!strcmp(c->name, "why"))
        text(t, col, in->r ? in->r->why : NULL);
    else if (in->r) {
        const char *fmt;
        double v = figure(c->name, in, &fmt);
        zs_table_num(t, col, fmt, v);
    }
}

void zs_rcols_row(zs_table *t, const zs_rrow *in)
{
    zs_table_row(t);
    for (int col = 0; col < zs_table_ncols(t); col++) {
        const zs_rcol *c = zs_rcol_find(zs_table_colname(t, col));
        if (c)
            zs_rcol_put(c, t, col, in);
    }
    int tps = zs_table_find(t, "tokens_per_s");
    if (!in->r && tps >= 0 && zs_table_find(t, "status") < 0)
        zs_table_set(t, tps, "failed");
}

void zs_rcol_human(const char *name, const zs_rrow *in, char *buf, size_t n)
{
    const zs_rcol *c = zs_rcol_find(name);
    zs_table *t = zs_table_new(NULL);
    snprintf(buf, n, "%s", "");
    if (c && t && !zs_table_col(t, name, c->kind) && !zs_table_row(t)) {
        zs_rcol_put(c, t, 0, in);
        snprintf(buf, n, "%s", zs_table_text(t, 0, 0));
    }
    zs_table_free(t);
}

void zs_rcols_units(zs_output *d)
{
    for (int i = 0; i < zs_rcol_count(); i++)
        if (zs_rcol_at(i)->unit[0])
            zs_output_set_text(d, "units", zs_rcol_at(i)->name, zs_rcol_at(i)->unit);
}
