/* Planning environment for tests: see zs_test_env.h. */
#include "zs_test_env.h"

#include "zs_test.h"

void zs_test_env_init(zs_test_env *v, const char *model, int nodes, const char *opts)
{
    zs_err e;
    ZS_ASSERT_OK(zs_model_load(model, &v->m, &e), &e);
    ZS_ASSERT_OK(zs_cluster_load("cluster-a", nodes, &v->c, &e), &e);
    v->cost = zs_cost_analytic_new(&v->m, &v->c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v->cost);
    zs_opts_init(&v->opts);
    if (opts && *opts)
        ZS_ASSERT_OK(zs_opts_parse(&v->opts, opts, &e), &e);
    v->ctx = (zs_plan_ctx){&v->m, &v->c, v->cost, zs_mem_cfg_default(), &v->opts, 1};
}
