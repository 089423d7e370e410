/* Fuzz target: plan dumps (`zepsim run PLAN`): load, validate (which dry
 * runs the analytic backend for deadlocks), then a priced analytic run
 * whose figures must all be finite. */
#include <stdlib.h>

#include "zs_analytic.h"
#include "zs_cluster.h"
#include "zs_fuzz.h"
#include "zs_model.h"
#include "zs_schedule.h"
#include "zs_validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_fuzz_limits();
    const char *p = zs_fuzz_path(data, size);
    if (!p)
        return 0;
    static zs_cost *cost;
    zs_err e;
    if (!cost) {
        zs_model m;
        zs_cluster cl;
        /* 8 nodes of 8 GPUs: room for the 64 ranks zs_fuzz_limits allows */
        if (zs_model_load("llama-7b", &m, &e) || zs_cluster_load("cluster-a", 8, &cl, &e) ||
            !(cost = zs_cost_analytic_new(&m, &cl)))
            abort();
    }
    zs_schedule *s = NULL;
    if (zs_schedule_load_file(p, &s, &e) != ZS_OK)
        return 0;
    zs_validate_opts vo = {0, 0};
    zs_validate(s, &vo, &e);
    zs_result *r = NULL;
    if (zs_analytic_run(s, cost, NULL, &r, &e) == ZS_OK && zs_result_check(r, &e) != ZS_OK)
        abort(); /* zs_analytic_run returned a non-finite result as success */
    zs_result_free(r);
    zs_schedule_free(s);
    return 0;
}
