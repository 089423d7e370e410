/* SimGrid's own floor: what a transfer costs SimGrid 3.32 with the
 * executor's platform, engine settings and wait-any, but no program.
 *
 * Each GPU's actor exchanges `width` messages with one partner per round
 * (the neighbouring GPU of its node, or the same GPU of the paired node),
 * posting them all and waiting for any until they are done, as the
 * executor's actors do. A transfer wakes two actors (its sender's and its
 * receiver's), so the floor per transfer is at least two wake-ups; a
 * schedule of T transfers and C compute ends that need a wake-up cannot
 * run faster than about (T + C / 2) times it on this machine, whatever
 * the executor does. `zepsim bench floor` prints it (docs/simulator.md).
 * Depends on SimGrid's C API, zs_platform and zs_fork. */
#ifndef ZS_SIM_FLOOR_H
#define ZS_SIM_FLOOR_H

#include <stdio.h>

#include "zs_cluster.h"
#include "zs_err.h"

#define ZS_SIM_FLOOR_WIDTH_MAX 16

typedef struct zs_sim_floor_cfg {
    int gpus;   /* actors, one per GPU (even, at most the cluster's GPUs) */
    int rounds; /* rounds per actor */
    int width;  /* messages each way per round (1..ZS_SIM_FLOOR_WIDTH_MAX) */
    int across; /* 0: partner in the same node; 1: the same GPU of the paired node */
} zs_sim_floor_cfg;

typedef struct zs_sim_floor_out {
    long comms;      /* transfers completed */
    long wakes;      /* wait-any returns (actor wake-ups) */
    double cpu_s;    /* the simulation's CPU time (engine run only) */
    double sim_s;    /* simulated seconds */
    double peak_rss; /* bytes, the child process */
} zs_sim_floor_out;

/* Runs the floor in a child process (one SimGrid per process). */
int zs_sim_floor_forked(const zs_cluster *c, const zs_sim_floor_cfg *f, zs_sim_floor_out *out,
                        zs_err *e);

/* Rounds that make about `transfers` transfers of f's actors and width
 * (at least one). */
int zs_sim_floor_rounds(int gpus, int width, long transfers);

/* The floor run `runs` times (1..ZS_SIM_FLOOR_RUNS_MAX), each in its own
 * process: *out gets the counts, cpu_s the median CPU time, peak_rss the
 * largest; *cpu_lo and *cpu_hi (either may be NULL) the extremes. With a
 * `log`, one line per run ("bench floor: N GPUs, inside|across nodes: run
 * i/n took S CPU s"). `zepsim bench floor` and `zepsim bench sim` measure
 * it this way. */
#define ZS_SIM_FLOOR_RUNS_MAX 16
int zs_sim_floor_measure(const zs_cluster *c, const zs_sim_floor_cfg *f, int runs, FILE *log,
                         zs_sim_floor_out *out, double *cpu_lo, double *cpu_hi, zs_err *e);

#endif
