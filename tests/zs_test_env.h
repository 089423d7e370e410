/* A planning environment for tests: a preset model on cluster-a with the
 * analytic cost model, default memory configuration and empty method
 * options, ready for zs_plan_batch. Shared by the planner tests. */
#ifndef ZS_TEST_ENV_H
#define ZS_TEST_ENV_H

#include "zs_planner.h"

typedef struct zs_test_env {
    zs_model m;
    zs_cluster c;
    zs_cost *cost; /* owned: zs_cost_free(v->cost) when done */
    zs_opts opts;
    zs_plan_ctx ctx;
} zs_test_env;

/* Loads model and cluster-a with `nodes` nodes; opts may be NULL or "". */
void zs_test_env_init(zs_test_env *v, const char *model, int nodes, const char *opts);

#endif
