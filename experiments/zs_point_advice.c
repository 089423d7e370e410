/* What makes a point that ran out of memory fit: see zs_point_advice.h. */
#include "zs_point_advice.h"

#include <stdio.h>
#include <string.h>

#include "zs_point_env.h"

/* 0 when every batch of the point plans. */
static int plans(const zs_point_cfg *c)
{
    zs_err e;
    zs_err_clear(&e);
    zs_point_env *env = NULL;
    int rc = zs_point_env_new(c, &env, &e);
    for (int it = 0; !rc && it < c->iterations; it++) {
        zs_batch *b = NULL;
        zs_schedule *s = NULL;
        zs_plan_report rep;
        rc = zs_point_env_next(env, &b, &e);
        if (!rc && !b)
            break; /* the trace ran out: not a memory question */
        if (!rc)
            rc = zs_point_env_plan(env, b, &s, &rep, &e);
        zs_schedule_free(s);
        zs_batch_free(b);
    }
    zs_point_env_free(env);
    return rc;
}

/* 1 when the method reads a `tp` option and cfg does not set one. */
static int tp_searchable(const zs_point_cfg *c)
{
    const zs_planner_ops *p = zs_planner_find(c->method);
    if (!p || !p->options || strstr(c->opts, "tp="))
        return 0;
    for (const zs_opt_spec *const *o = p->options; *o; o++)
        if (!strcmp((*o)->key, "tp"))
            return 1;
    return 0;
}

/* A candidate: cfg with recomputation, a ZeRO stage and a tp (0: as
 * given); its options as text in what. 0 when it differs from cfg. */
static int candidate(const zs_point_cfg *cfg, int full, int zero, int tp, zs_point_cfg *c,
                     char *what, size_t n)
{
    *c = *cfg;
    what[0] = '\0';
    size_t o = 0;
    if (full && cfg->recompute != ZS_RECOMPUTE_FULL) {
        c->recompute = ZS_RECOMPUTE_FULL;
        o += (size_t)snprintf(what + o, n - o, "--recompute full");
    }
    if (zero > cfg->zero_stage) {
        c->zero_stage = zero;
        o += (size_t)snprintf(what + o, o < n ? n - o : 0, "%s--zero %d", o ? " " : "", zero);
    }
    if (tp > 1) {
        size_t l = strlen(c->opts);
        snprintf(c->opts + l, sizeof c->opts - l, "%stp=%d", l ? "," : "", tp);
        o += (size_t)snprintf(what + o, o < n ? n - o : 0, "%s--opt tp=%d", o ? " " : "", tp);
    }
    return o > 0;
}

int zs_point_advice(const zs_point_cfg *cfg, char *advice, size_t n)
{
    advice[0] = '\0';
    zs_point_cfg big = *cfg;
    big.timeline[0] = '\0';
    big.validate = 0;
    if (!plans(&big))
        return 0; /* it plans: whatever failed, it was not planning */
    zs_cluster cl;
    if (zs_cluster_load(cfg->cluster, cfg->nodes, &cl, NULL))
        return 0;
    int gpn = cl.gpus_per_node;
    /* "unbounded": 64 times the GPU's memory, enough for any layout that
     * could fit, small enough that token capacities stay within int */
    big.mem_gib_override =
        64 * (cfg->mem_gib_override > 0 ? cfg->mem_gib_override : cl.gpu.mem_gib);
    if (plans(&big))
        return 0; /* fails with unbounded memory too: not memory */
    int tps = tp_searchable(cfg);
    /* cheapest in speed first: recomputation, sharding, then splitting layers */
    const int order[][3] = {{1, 0, 0}, {1, 2, 0}, {1, 3, 0}, {1, 0, 2}, {1, 0, 4},
                            {1, 0, 8}, {1, 3, 2}, {1, 3, 4}, {1, 3, 8}};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        int tp = order[k][2];
        if (tp && (!tps || tp > gpn || gpn % tp))
            continue;
        zs_point_cfg c;
        char what[128];
        if (!candidate(&big, order[k][0], order[k][1], tp, &c, what, sizeof what))
            continue;
        c.mem_gib_override = cfg->mem_gib_override;
        if (!plans(&c)) {
            snprintf(advice, n,
                     "it fits with %s (the first of full recomputation, ZeRO 2-3%s "
                     "that plans every batch)",
                     what, tps ? ", tp 2-8 and ZeRO 3 with tp" : "");
            return 1;
        }
    }
    snprintf(advice, n,
             "out of GPU memory, and neither full recomputation, ZeRO 2-3%s makes it fit: use "
             "more nodes, a shorter --context or a GPU with more memory",
             tps ? ", tp 2-8 nor ZeRO 3 with tp" : " nor (this method has no tp option) tp");
    return 1;
}
