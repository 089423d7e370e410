/* Everything one study point runs with, built by one function: the
 * method and backend, the model, the cluster (with calibrated link figures
 * when a calibration is given), the cost model, the method options, the
 * planning context, the trace source and the method's batcher. `simulate`,
 * `compare`, `plan` and the experiment runner all get their batches,
 * plans and results through an env, so they cannot disagree on what a
 * configuration means (which batcher a method gets, how a batch is cut,
 * which cost model prices it).
 *
 * The batcher is the method's own (its zs_planner_ops.batcher hook:
 * WLB-LLM's packer, the 4D loaders' window-sized batches) or the greedy
 * batcher with the study's shape (GPUs / group x context tokens, documents
 * longer than the context split). Depends on the core, the models, the
 * traces, the machine loader and the backend registry. */
#ifndef ZS_POINT_ENV_H
#define ZS_POINT_ENV_H

#include "zs_backend.h"
#include "zs_batcher.h"
#include "zs_machine.h"
#include "zs_planner.h"
#include "zs_point.h"
#include "zs_trace_src.h"

typedef struct zs_point_env {
    zs_point_cfg cfg; /* a copy; method and backend in their registry spelling */
    const zs_planner_ops *planner;
    const zs_backend *backend;
    /* model, cluster (link figures from the calibration when there is
     * one), calibration (NULL: analytic costs) and cost model */
    zs_machine mach;
    int gpus;
    zs_opts opts;
    zs_plan_ctx ctx; /* points into this env: an env never moves */
    zs_trace_src *src;
    zs_batcher *batcher;
    int batches; /* drawn so far */
} zs_point_env;

/* Builds the env of cfg; on failure *out is untouched and nothing leaks.
 * Errors name the option at fault (--method, --group, a method option). */
int zs_point_env_new(const zs_point_cfg *cfg, zs_point_env **out, zs_err *e);
/* Frees env (NULL is a no-op). */
void zs_point_env_free(zs_point_env *env);

/* The next global batch into *out (caller frees with zs_batch_free), or
 * *out = NULL when the trace is exhausted. */
int zs_point_env_next(zs_point_env *env, zs_batch **out, zs_err *e);
/* Plans b with the env's method (zs_plan_batch, validated when the
 * configuration asks for it). */
int zs_point_env_plan(zs_point_env *env, const zs_batch *b, zs_schedule **out, zs_plan_report *rep,
                      zs_err *e);
/* Runs s on the env's backend; timeline = 1 writes the configuration's
 * timeline file, if any. */
int zs_point_env_run(const zs_point_env *env, const zs_schedule *s, int timeline, zs_result **out,
                     zs_err *e);

#endif
