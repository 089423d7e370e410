/* The planner interface: one global batch in, one schedule out.
 *
 * A method (local, te-cp, llama-cp, hybrid-dp, ulysses, usp, plain-4d,
 * fixed-4d, wlb-llm, zeppelin) is a zs_planner_ops in its own file plus
 * one row in zs_planners.def. Planners see the model, the cluster, the
 * cost model, the memory configuration and method options; they place
 * tokens, lower the plan to a schedule through the builder in
 * zs_schedule.h (and the shared layer helpers in zs_iteration.h), and fill a
 * small report. Depends on the core and models only. */
#ifndef ZS_PLANNER_H
#define ZS_PLANNER_H

#include "zs_batch.h"
#include "zs_cluster.h"
#include "zs_cost.h"
#include "zs_memory.h"
#include "zs_model.h"
#include "zs_opts.h"
#include "zs_schedule.h"

typedef struct zs_plan_ctx {
    const zs_model *model;
    const zs_cluster *cluster;
    const zs_cost *cost;
    zs_mem_cfg mem; /* ZeRO stage, recomputation, reserve (degrees set by the planner) */
    zs_opts *opts;  /* method options; planners read theirs, the rest is an error */
    uint64_t seed;  /* for methods with randomness (MoE imbalance) */
} zs_plan_ctx;

/* What a planner says about its plan, printed beside the result. */
typedef struct zs_plan_report {
    zs_layout_dims dims;
    double attn_imbalance;   /* max / mean attention work per rank (per micro-batch for PP) */
    double linear_imbalance; /* max / mean tokens per rank for the linear modules */
    int64_t max_attn_tokens, max_linear_tokens;
    double plan_seconds; /* host time spent planning */
    char notes[1024];    /* decisions and approximations, "; "-separated */
} zs_plan_report;

typedef struct zs_planner_ops {
    const char *name;
    const char *summary;
    const char *options_help; /* "cp=N (default 16): context-parallel degree; ..." */
    int (*plan)(const zs_plan_ctx *ctx, const zs_batch *batch, zs_schedule **out,
                zs_plan_report *rep, zs_err *e);
} zs_planner_ops;

/* The registry (zs_planners.def). */
const zs_planner_ops *zs_planner_find(const char *name);
const zs_planner_ops *zs_planner_at(int i); /* NULL past the end */
int zs_planner_count(void);
/* The registered methods' names, ", "-separated, into buf (truncated to n). */
void zs_planner_names(char *buf, size_t n);

/* The planners' common "tp" option: 1..64 (default def), dividing the GPUs
 * of a node (TP groups stay inside NVLink). */
int zs_plan_opt_tp(const zs_plan_ctx *ctx, long def, long *tp, zs_err *e);

/* Runs a planner, times it, and (with validate=1) checks the schedule. */
int zs_plan_batch(const zs_planner_ops *p, const zs_plan_ctx *ctx, const zs_batch *batch,
                  int validate, zs_schedule **out, zs_plan_report *rep, zs_err *e);

void zs_plan_report_note(zs_plan_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
