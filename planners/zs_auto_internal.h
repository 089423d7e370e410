/* The `auto` planner's decisions alone (options, capacity, prices, the
 * search of zs_auto_search_internal.h), without lowering them to a schedule: what a
 * training job would compute per batch, timed by `zepsim bench plan
 * --method auto`. The planner itself is zs_planner_auto (zs_planners.def).
 * Depends on the planner interface. */
#ifndef ZS_AUTO_INTERNAL_H
#define ZS_AUTO_INTERNAL_H

#include "zs_planner.h"

/* Decides the plan of batch b; its predicted seconds per layer of the
 * slowest GPU into *makespan. */
int zs__auto_decide(const zs_plan_ctx *ctx, const zs_batch *b, double *makespan, zs_err *e);

#endif
