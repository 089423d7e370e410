/* The analytic backend: executes a schedule without contention. Each
 * compute op takes its predicted duration, each transfer latency + bytes /
 * bottleneck bandwidth of its path, each collective the cost model's time.
 * Event-driven and exact about dependencies, stream order, p2p matching and
 * collectives, so it is the cross-check for the SimGrid backend (on a
 * schedule without shared links both agree) and the fast mode for sweeps.
 * The plan validator also uses it, with `dry` set, to prove that a schedule
 * cannot deadlock. It can write a timeline: every op's start and end are
 * known. Repeated segments fold (zs_fold.h) unless `unrolled` is set.
 * Depends on the schedule IR, the cost model, zs_fold, zs_result and
 * zs_timeline. */
#ifndef ZS_ANALYTIC_H
#define ZS_ANALYTIC_H

#include "zs_cost.h"
#include "zs_fold.h"
#include "zs_result.h"
#include "zs_schedule.h"
#include "zs_timeline.h"

typedef struct zs_analytic_opts {
    int dry;              /* 1: every op takes zero time (deadlock check only, no result figures) */
    int unrolled;         /* 1: simulate every iteration; 0: fold repeated segments (zs_fold.h) */
    int fold_steady;      /* also fold steady repeats (zs_fold_cfg_steady) */
    double fold_tol;      /* folding's period tolerance (0: the default, 1e-4) */
    const char *timeline; /* timeline file (zs_timeline.h) or NULL; not with dry */
    const zs_tl_cfg *tl;  /* its ranks and layers (NULL: all; gpus_per_node from the
                           * cost model's cluster) */
} zs_analytic_opts;

/* Runs the schedule; *out is a new result (free with zs_result_free).
 * A schedule that cannot finish (a receive nobody sends, a collective a
 * member never joins, a cycle through messages) is a ZS_EINVALID error
 * naming a stuck rank and op. */
int zs_analytic_run(const zs_schedule *s, const zs_cost *cost, const zs_analytic_opts *o,
                    zs_result **out, zs_err *e);

#endif
