/* The cost-model table: see zs_cost_model.h. */
#include "zs_cost_model.h"

#include <stddef.h>

static zs_cost *make_analytic(const zs_model *m, const zs_cluster *cl, const zs_calib *calib)
{
    (void)calib;
    return zs_cost_analytic_new(m, cl);
}

static const zs_cost_model table[] = {
    {"analytic",
     "kernel curves of the GPU preset, transfers from the cluster's links, NCCL's model", 0,
     make_analytic},
    {"calibrated",
     "the analytic model with every curve a calibration fits replaced by the fitted one", 1,
     zs_cost_calibrated_new},
};

int zs_cost_model_count(void)
{
    return (int)(sizeof table / sizeof table[0]);
}

const zs_cost_model *zs_cost_model_at(int i)
{
    return i >= 0 && i < zs_cost_model_count() ? &table[i] : NULL;
}

const zs_cost_model *zs_cost_model_for(const zs_calib *calib)
{
    for (int i = 0; i < zs_cost_model_count(); i++)
        if (table[i].calibrated == (calib != NULL))
            return &table[i];
    return NULL;
}

int zs_cost_build(const zs_model *m, zs_cluster *cl, const zs_calib *calib, zs_cost **out,
                  zs_err *e)
{
    if (calib)
        zs_calib_apply_links(calib, cl); /* the backends' platform too */
    *out = zs_cost_model_for(calib)->make(m, cl, calib);
    if (!*out)
        return zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory creating the cost model");
    return ZS_OK;
}
