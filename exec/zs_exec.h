/* How a schedule is executed, whichever backend executes it: the timeline
 * to write (its path, ranks and layers) and how repeated segments fold.
 * One struct, so a study point, `zepsim run`, the backend table and every
 * backend (SimGrid, the analytic evaluator, the GPUs) pass the same
 * options on instead of restating them field by field; a backend's own
 * extras (SimGrid's platform file and NCCL parameters, the analytic
 * evaluator's dry run, the GPUs' warm-up and process layout) sit beside it
 * in that backend's options. Depends on zs_fold and zs_timeline. */
#ifndef ZS_EXEC_H
#define ZS_EXEC_H

#include "zs_fold.h"
#include "zs_timeline.h"

/* Repeated segments (zs_fold.h), in the order of the --fold values
 * off|on|steady. */
typedef enum zs_fold_mode {
    ZS_FOLD_OFF,    /* execute every iteration */
    ZS_FOLD_EXACT,  /* replay exact repeats (the default) */
    ZS_FOLD_STEADY, /* also replay steady repeats (zs_fold_cfg_steady) */
} zs_fold_mode;

typedef struct zs_exec_opts {
    const char *timeline;     /* timeline path (zs_timeline.h; ".gz": compressed), NULL: none */
    const char *tl_ranks;     /* ranks it writes (zs_tl_cfg.ranks: NULL or "" automatic,
                               * "all", "0,5,17-20") */
    int tl_layer0, tl_layer1; /* layers it writes, inclusive (-1: all) */
    zs_fold_mode fold;
    double fold_tol; /* folding's period tolerance (0: the default, zs_fold_cfg_init) */
    /* 1: compute-communication interference (--interference on): while a
     * GPU's collectives and transfers run, their NCCL kernels hold SMs and
     * its compute slows (the analytic backend, docs/cost-model.md); 0 (the
     * default): compute takes its predicted time whatever overlaps it. */
    int interference;
} zs_exec_opts;

/* No timeline (automatic ranks, all layers if one is set), exact repeats
 * fold with the default tolerance, no interference. */
void zs_exec_opts_init(zs_exec_opts *o);

/* The timeline's ranks and layers as a writer's configuration, with
 * gpus_per_node ranks per node. */
void zs_exec_tl_cfg(const zs_exec_opts *o, int gpus_per_node, zs_tl_cfg *tc);

/* The folding configuration of o (NULL: the defaults): fc->on is 0 when
 * nothing folds. tl, the open timeline or NULL, keeps the iterations it
 * shows: every iteration without a layer range, else those of its layers
 * on its ranks. */
void zs_exec_fold_cfg(const zs_exec_opts *o, const zs_timeline *tl, zs_fold_cfg *fc);

#endif
