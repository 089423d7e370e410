/* A planning environment for tests: a preset model on cluster-a with the
 * analytic cost model, default memory configuration and empty method
 * options, ready for zs_plan_batch. Shared by the planner tests. */
#ifndef ZS_TEST_ENV_H
#define ZS_TEST_ENV_H

#include "zs_iteration.h"
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

/* What zs_test_plan_random plans: `trials` batches of 1..40 documents of
 * 1..maxlen tokens (every long_every-th document, from the first, 1..
 * long_len instead; long_every 0: none) drawn from `seed`, on llama-550m
 * over 2 nodes, with the options opts[trial % nopts]. */
typedef struct zs_test_random_plans {
    const char *method;
    const char *const *opts;
    int nopts, trials;
    int32_t maxlen, long_every, long_len;
    uint64_t seed;
} zs_test_random_plans;

/* Every batch must plan and pass the plan validator (a failure names the
 * method and options). The property test of a planner. */
void zs_test_plan_random(const zs_test_random_plans *r);

/* An attention emitter for zs_iter_spec (tests of the iteration builder):
 * each slot's attention is one local causal block over the schedule's
 * first document, after the slot's entry. */
int zs_test_emit_local(void *arg, zs_iter *it, int stage, int micro, int backward, zs_err *e);

#endif
