/* The machine a schedule is planned for and run on, loaded by one
 * function: the model, the cluster (sized, with its GPU, attention kernel
 * and memory as asked), the calibration and the cost model built from them
 * (models/zs_cost_model.h: calibrated when a calibration is given, its
 * link figures then in the cluster too). Study points, `run`, `cost`,
 * `plan`, `zeppelin`, `calib predict` and `validate runs` load through it, so a name means
 * the same machine to all of them. Depends on the models. */
#ifndef ZS_MACHINE_H
#define ZS_MACHINE_H

#include "zs_calib.h"
#include "zs_cluster.h"
#include "zs_cost.h"
#include "zs_cost_model.h"
#include "zs_model.h"

/* What to load (strings borrowed; NULL or "" leaves a part as described). */
typedef struct zs_machine_cfg {
    const char *model;   /* preset or file; NULL or "": none, and no cost model (a
                          * calibration's link figures still go into the cluster) */
    const char *cluster; /* preset or file */
    int nodes;           /* 0: the cluster's own */
    int ranks;           /* > 0: as many nodes as this many ranks need (nodes unused) */
    const char *gpu;     /* a GPU preset or file replacing the cluster's */
    const char *kernel;  /* an attention kernel of the GPU (zs_gpu_select_kernel) */
    double mem_gib;      /* > 0: the GPU's memory, GiB */
    /* > 0: the model's attention shape replaced (what-if pricing); named
     * by the options that set them in errors */
    int heads, kv_heads, head_dim;
    const char *calib; /* calibration file: the calibrated cost model */
} zs_machine_cfg;

typedef struct zs_machine {
    zs_model model;
    zs_cluster cluster;
    zs_calib *calib;                 /* NULL: none */
    const zs_cost_model *cost_model; /* NULL without a model */
    zs_cost *cost;                   /* NULL without a model */
} zs_machine;

/* Nothing replaced, no calibration, no model; the cluster still to be
 * named. */
void zs_machine_cfg_init(zs_machine_cfg *c);

/* Loads c into *m: model, cluster, GPU, kernel, memory, shape, calibration,
 * then the cost model. On failure *m holds nothing to free. */
int zs_machine_load(const zs_machine_cfg *c, zs_machine *m, zs_err *e);

/* Frees the calibration and the cost model (a cleared machine is a no-op). */
void zs_machine_clear(zs_machine *m);

#endif
