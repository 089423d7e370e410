/* The analytic backend: executes a schedule without contention. Each
 * compute op takes its predicted duration, each transfer latency + bytes /
 * bottleneck bandwidth of its path, each collective the cost model's time.
 * Event-driven and exact about dependencies, stream order, p2p matching and
 * collectives, so it is the cross-check for the SimGrid backend (on a
 * schedule without shared links both agree) and the fast mode for sweeps.
 * The plan validator also uses it, with `dry` set, to prove that a schedule
 * cannot deadlock. It can write a timeline: every op's start and end are
 * known. Repeated segments fold (zs_fold.h) as exec.fold says.
 * Depends on the schedule IR, the cost model, zs_exec (zs_fold,
 * zs_timeline) and zs_result. */
#ifndef ZS_ANALYTIC_H
#define ZS_ANALYTIC_H

#include "zs_cost.h"
#include "zs_exec.h"
#include "zs_result.h"
#include "zs_schedule.h"

typedef struct zs_analytic_opts {
    zs_exec_opts exec; /* timeline (not with dry; its GPUs per node from the cost
                        * model's cluster) and folding */
    int dry;           /* 1: every op takes zero time (deadlock check only, no result figures) */
} zs_analytic_opts;

/* Not dry, zs_exec_opts_init's execution. */
void zs_analytic_opts_init(zs_analytic_opts *o);

/* Runs the schedule; *out is a new result (free with zs_result_free).
 * A schedule that cannot finish (a receive nobody sends, a collective a
 * member never joins, a cycle through messages) is a ZS_EINVALID error
 * naming a stuck rank and op. */
int zs_analytic_run(const zs_schedule *s, const zs_cost *cost, const zs_analytic_opts *o,
                    zs_result **out, zs_err *e);

#endif
