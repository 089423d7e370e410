/* `zepsim bench plan` measurement for any planner (`--method`, Zeppelin by
 * default): how long planning one global batch takes on one core. Two
 * figures: the decisions alone (the planner's decide hook, zs_planner.h;
 * Zeppelin: zs_zep_decide, i.e. crossovers,
 * partitioning by predicted makespan, remap plan and whether it pays,
 * routing decisions; auto: its search; what a training job computes every
 * iteration before launching kernels, and what the WLB-LLM paper's 8-23 ms
 * packing time measures) and the whole planner run through zs_plan_batch
 * (decisions plus lowering to a schedule of every rank's ops, which a real
 * system does not do). Memory: ZeRO-1 with full recomputation (32K tokens
 * per GPU do not fit otherwise). Timings are host wall time, the best of
 * `reps` runs; not asserted by any test. Depends on the planner registry
 * only; the caller draws the batch. */
#ifndef ZS_PLAN_BENCH_H
#define ZS_PLAN_BENCH_H

#include <stdint.h>

#include "zs_batch.h"
#include "zs_err.h"

typedef struct zs_plan_bench_figs {
    int gpus, docs;
    int64_t tokens;
    double decide_s; /* best of reps: the planner's decide hook (zeppelin: zs_zep_decide,
                      * auto: its search); < 0 for methods without one */
    double plan_s;   /* best of reps: the full planner (schedule included) */
    int64_t ops;     /* ops stored in the schedule */
    int count[4];    /* documents per class (decide's classes, ZS_PLAN_CLASSES) */
} zs_plan_bench_figs;

/* Plans the batch b (borrowed) with `method` (NULL: zeppelin) for
 * model/cluster presets with `nodes` nodes. Options as for the planner
 * ("" for defaults). */
int zs_plan_bench(const char *method, const char *model, const char *cluster, int nodes,
                  const zs_batch *b, uint64_t seed, const char *opts, int reps,
                  zs_plan_bench_figs *out, zs_err *e);

#endif
