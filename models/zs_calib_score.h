/* Scoring a cost model against measurements, as `zepsim validate` reports
 * it: which points a hold-out keeps out of the fit, every point's
 * prediction and relative error (collectives: with the algorithm and
 * protocol NCCL runs), and the summaries per op class and against the
 * project's accuracy targets (docs/validation.md: each collective and all
 * of them together, 64 MB and more within 5 % median, 8 MB and more within
 * 10 %; attention forward from 1K tokens within 10 %). The command line
 * only prints what this computes. Depends on zs_calib (measurements, the
 * calibrated cost model, the NCCL model) and zs_sort. */
#ifndef ZS_CALIB_SCORE_H
#define ZS_CALIB_SCORE_H

#include <stddef.h>

#include "zs_calib.h"

#define ZS_HOLDOUT_MAX_TERMS 8

/* One --holdout term: fit collectives on these GPU counts (gpus) or node
 * counts (nodes, in gpus[]), fit attention on sequences up to limit tokens
 * (seq) or on CP degrees up to limit (cp: per-document profiles), fit
 * collectives and p2p on sizes up to limit bytes (bytes). */
typedef struct zs_holdout_term {
    char key[8]; /* gpus, nodes, seq, cp, bytes */
    int gpus[16];
    int ngpus;
    double limit;
} zs_holdout_term;

typedef struct zs_holdout {
    int nterms; /* 0: no hold-out, every point is fitted on */
    zs_holdout_term t[ZS_HOLDOUT_MAX_TERMS];
} zs_holdout;

/* Adds a term "gpus=2[+4...]", "nodes=1[+2...]", "seq<=N", "cp<=N" or
 * "bytes<=N[K|M|G]"; ZS_EUSAGE
 * naming --holdout on a bad one (h unchanged). */
int zs_holdout_add(zs_holdout *h, const char *spec, zs_err *e);
/* 1 when m is held out (not fitted on); arg is the zs_holdout. The
 * zs_fit_opts.exclude predicate. */
int zs_holdout_held(const zs_meas *m, void *arg);

/* One priced measurement. */
typedef struct zs_score_point {
    const zs_meas *m; /* borrowed from the set */
    double pred;      /* predicted seconds */
    double err;       /* relative: (pred - measured) / measured */
    int held;         /* 1: held out of the fit */
    char nccl[32];    /* collectives: "algorithm/protocol" NCCL runs; others "-" */
} zs_score_point;

/* Prices every measurement of s with cost and, for collectives, the NCCL
 * model with cal's parameters (model prices layer ops; NULL: they cannot
 * be priced and are left out, so *n <= s->n). A collective the cost's
 * cluster cannot hold is an error. *out is a new array (free()). */
int zs_score_points(const zs_cost *cost, const zs_calib *cal, const zs_meas_set *s,
                    const zs_model *model, const zs_holdout *h, zs_score_point **out, size_t *n,
                    zs_err *e);

/* One summary line: the absolute relative error over a class of points. */
typedef struct zs_score_row {
    char cls[48]; /* an op class or a target's name */
    int held;     /* 1: over held-out points only */
    int points;
    double median, max;
    double target; /* the median a target asks for; 0: not a target */
} zs_score_row;

/* Per op class (first-seen order; the held-out points first when there is
 * a hold-out, then all), then the targets (each collective, all of them,
 * attention; over held-out points when there is a hold-out). Classes and targets without points are
 * left out. *rows is a new array (free()). */
int zs_score_summary(const zs_score_point *p, size_t n, int holdout, zs_score_row **rows,
                     int *nrows, zs_err *e);

/* The shape of a measurement in words ("8 GPUs, 1048576 B"; across nodes
 * "2 x 8 GPUs, 1048576 B"). */
void zs_meas_shape(const zs_meas *m, char *buf, size_t n);

#endif
