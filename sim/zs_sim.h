/* The SimGrid backend: runs a schedule on a SimGrid model of a cluster and
 * fills the shared zs_result (iteration time, per-rank compute / exposed
 * communication / idle, bytes and busy time per link class and per NIC)
 * and, optionally, a timeline (exec/zs_timeline.h).
 *
 * How ops are modelled (also written into the result notes):
 *   - one SimGrid actor per GPU drives all its streams with asynchronous
 *     activities; a compute op takes exactly its predicted duration, ended
 *     by the actor at its known date (concurrent compute ops of one GPU
 *     share it equally);
 *   - repeated segments fold (exec/zs_fold.h) unless exec.fold is off:
 *     once a segment's iterations take the same time, the rest are
 *     replayed instead of simulated;
 *   - SEND/RECV are SimGrid communications between the two GPU hosts,
 *     matched per (src, dst, tag) in order, sharing links max-min fairly
 *     (CM02 model, no cross traffic, no TCP window bound);
 *   - a collective starts when every member has reached it and runs as
 *     aggregated flows: one flow per edge of NCCL's channel rings carrying
 *     what the algorithm NCCL runs moves over that edge (a ring's bus
 *     bytes, a tree's or NVLS's buffer; zs_nccl_traffic), for all-to-all
 *     one flow per ordered pair; all of a collective's flows stretched by
 *     one factor so that, alone on the platform, it ends at the cost
 *     model's time (zs_nccl_group_plan, as the analytic backend). Never
 *     message by message.
 *
 * SimGrid allows one platform per process: zs_sim_run can be called once
 * per process (a second call is a ZS_EUNSUPPORTED error). zs_sim_run_forked
 * runs it in a child process and ships the result back (base/zs_fork.h),
 * so a caller can simulate many schedules. The implementation is split by
 * concern (sim/zs_sim_internal.h lists the files). Depends on the schedule IR,
 * zs_result, zs_cluster, zs_nccl, zs_platform, zs_exec and zs_timeline. */
#ifndef ZS_SIM_H
#define ZS_SIM_H

#include <stdint.h>

#include "zs_cluster.h"
#include "zs_err.h"
#include "zs_exec.h"
#include "zs_nccl.h"
#include "zs_result.h"
#include "zs_schedule.h"

typedef struct zs_sim_opts {
    zs_exec_opts exec;        /* timeline and folding (exec/zs_exec.h) */
    const char *platform_out; /* also write the generated platform XML here (NULL: no) */
    /* Collectives: the parameters of NCCL's model the cost model prices them
     * with (zs_cost_nccl), so that both backends run the same algorithm
     * with the same uncontended time; NULL: NCCL's own figures. */
    const zs_nccl_params *nccl;
    int wake_every_end; /* 1: each actor wakes at every compute end, as before the
                         * horizon (zs_sim_walk.c): the reference its tests compare to */
} zs_sim_opts;

void zs_sim_opts_init(zs_sim_opts *o);

/* Runs s on cluster c in this process. *out is a new result (free with
 * zs_result_free); its tokens/model_flops/peak_flops are left for the
 * caller. A schedule that cannot finish is a ZS_EINVALID error naming a
 * stuck rank and op. Only once per process. */
int zs_sim_run(const zs_schedule *s, const zs_cluster *c, const zs_sim_opts *o, zs_result **out,
               zs_err *e);

/* The same in a forked child; any number of calls per process. */
int zs_sim_run_forked(const zs_schedule *s, const zs_cluster *c, const zs_sim_opts *o,
                      zs_result **out, zs_err *e);

/* What the SimGrid engine was given to do by this process's simulation:
 * every transfer the executor started (a SimGrid comm), so that a run's
 * CPU time can be read against SimGrid's own cost per transfer
 * (zs_sim_floor.h). Counted where each comm is posted by its sender;
 * iterations folding replays post nothing and count nothing. Counting
 * changes no simulated figure. */
typedef struct zs_sim_stats {
    int64_t p2p;          /* point-to-point messages (one per send) */
    int64_t p2p_across;   /* of which between two nodes */
    int64_t flows;        /* flows of collectives (one per edge and channel, or pair) */
    int64_t flows_across; /* of which between two nodes */
    int64_t signals;      /* zero-byte go and wake-up messages of collectives (to a
                           * rank's own host, detached: one wake-up each) */
} zs_sim_stats;

/* The counters of the simulation this process ran with zs_sim_run (all
 * zero before one, or when it failed before the engine started). A
 * caller that wants them for zs_sim_run_forked's child runs zs_sim_run
 * in its own child and reads them there. */
void zs_sim_last_stats(zs_sim_stats *out);

/* Peak resident set size of this process and of its finished children, bytes. */
double zs_sim_peak_rss(int children);

#endif
