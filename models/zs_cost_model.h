/* The cost models a run can price ops with, one row each: analytic (no
 * data) and calibrated (fitted from a calibration file, `--calib`). Every
 * command that builds a cost model builds it here, through zs_cost_build,
 * so they all choose the same way (calibrated exactly when a calibration
 * is given) and all put the calibration's link figures into the cluster
 * the backends run on, not only into the cost model's copy: a SimGrid
 * platform and the cost model then price transfers alike. Adding a cost
 * model is one row in zs_cost_model.c. Depends on zs_cost and zs_calib. */
#ifndef ZS_COST_MODEL_H
#define ZS_COST_MODEL_H

#include "zs_calib.h"
#include "zs_cost.h"

typedef struct zs_cost_model {
    const char *name;    /* as its costs' ops name them (zs_cost_ops.name) */
    const char *summary; /* one line for listings */
    int calibrated;      /* 1: built from a calibration, which it needs */
    /* A new cost model of m on cl (calib: the calibration, or NULL for a
     * row that needs none); NULL: out of memory. */
    zs_cost *(*make)(const zs_model *m, const zs_cluster *cl, const zs_calib *calib);
} zs_cost_model;

int zs_cost_model_count(void);
const zs_cost_model *zs_cost_model_at(int i); /* NULL past the end */
/* The row that prices with calib: calibrated when there is one (not
 * NULL), else analytic. */
const zs_cost_model *zs_cost_model_for(const zs_calib *calib);

/* The cost model of m on *cl, calibrated by calib (NULL: analytic), into
 * *out (zs_cost_free). A calibration's link figures go into *cl first
 * (zs_calib_apply_links). ZS_ENOMEM when it cannot be built; *out is then
 * NULL. */
int zs_cost_build(const zs_model *m, zs_cluster *cl, const zs_calib *calib, zs_cost **out,
                  zs_err *e);

#endif
