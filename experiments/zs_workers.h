/* The iteration workers: run the iterations of one or more study points in
 * parallel worker processes, one iteration per worker (zs_point_run_iter),
 * and add each point's iterations in iteration order (zs_point_add), so
 * every point's figures are those of zs_point_run bit for bit, whatever
 * the number of workers. `compare` runs its methods through it and
 * `simulate` its iterations: with 2 CPUs and 3 iterations the wall time
 * falls towards half the CPU time instead of the longest method's.
 *
 * Points start in their order, a point's iterations in theirs; iteration
 * k of a point starts only while k < (its iterations added) +
 * ZS_WORKERS_WINDOW, which bounds what the parent holds. A point whose
 * iteration fails starts no more and reports the earliest failed
 * iteration's error, as a sequential run would; a worker that dies is
 * such a failure ("the te-cp iteration 2 process crashed (signal 11, ...)").
 * Memory: up to `jobs` iterations run at once, each with its own plan and
 * simulation. Depends on zs_point and base/zs_fork. */
#ifndef ZS_WORKERS_H
#define ZS_WORKERS_H

#include "zs_point.h"

#define ZS_WORKERS_WINDOW 16

typedef struct zs_work_point {
    zs_point_cfg cfg; /* in */
    int want_last;    /* in: bring the last iteration's result back (r.last) */
    int rc;           /* out: ZS_OK or the earliest failed iteration's error */
    zs_err err;
    zs_point_result r;   /* out: the point's figures (r.last only with want_last) */
    double tl_bytes;     /* out: JSON size of the timeline written (0: none) */
    char tl_subset[512]; /* out: its automatic rank subset ("": none; zs_result) */
    /* Progress, kept up to date for the callback. */
    int started, running, done; /* iterations started, in flight, finished */
    int finished;               /* every iteration in (or the point failed) */
} zs_work_point;

/* Called after every finished iteration (step 1; finished: the point that
 * just finished, else -1) and every 10 s while nothing finishes (step 0). */
typedef void (*zs_workers_progress)(void *arg, const zs_work_point *pts, int n, int step,
                                    int finished);

/* Runs every iteration of pts[0..n-1] on at most `jobs` workers. Point
 * failures are in pts[i].rc; the return value is an error (e filled) only
 * when the workers themselves could not go on (no process or memory): then the
 * workers it started are killed. */
int zs_workers_run(zs_work_point *pts, int n, int jobs, zs_workers_progress cb, void *arg,
                   zs_err *e);

#endif
