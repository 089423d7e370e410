/* The experiment runner: runs the points of a spec that the results
 * database lacks, in parallel worker processes, and stores each result as
 * it arrives (the parent is the only writer of its results; one
 * transaction per point). Each point is claimed in the database before it
 * runs, so several runners started on one spec and database share the
 * work instead of each running all of it. A killed run loses only the
 * points in flight; rerunning resumes. `--shard i/n` keeps the points
 * whose index is i-1 modulo n, so a sweep can be spread over machines and
 * merged with zs_db_merge.
 * Depends on zs_spec, zs_db and zs_point (which runs every point). */
#ifndef ZS_RUNNER_H
#define ZS_RUNNER_H

#include <stdio.h>

#include "zs_db.h"
#include "zs_spec.h"

typedef struct zs_runner_opts {
    int jobs;                 /* worker processes (>= 1) */
    int shard_i, shard_n;     /* 1-based shard i of n; n = 1 runs everything */
    int retry_failed;         /* rerun points stored as failed */
    const char *timeline_dir; /* where relative timeline names are written ("" : cwd) */
    FILE *progress;           /* progress: a bar on a terminal, lines elsewhere; NULL: none */
} zs_runner_opts;

void zs_runner_opts_init(zs_runner_opts *o);

typedef struct zs_runner_stats {
    int points;        /* in the spec */
    int in_shard;      /* of them in this shard */
    int stored_before; /* already in the database (skipped) */
    int duplicates;    /* same configuration as another point of the spec */
    int ran;           /* run now and stored ok */
    int failed;        /* run now and failed (stored as failed when deterministic) */
    int elsewhere;     /* run (or being run) by another runner at the same time */
    double wall_s;
    char first_error[1024]; /* the first failure, for the summary */
} zs_runner_stats;

/* Runs the spec's missing points of this shard. Point failures do not stop
 * the run (they are counted in st); the return value is an error only when
 * the run itself could not proceed (database, fork). */
int zs_runner_run(const zs_spec *s, zs_db *db, const zs_runner_opts *o, zs_runner_stats *st,
                  zs_err *e);

#endif
