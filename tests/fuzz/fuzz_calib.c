/* Fuzz target: calibration files (`--calib FILE`, `zepsim calib show`),
 * then a calibrated cost model built from a file that loaded. */
#include "zs_calib.h"
#include "zs_cluster.h"
#include "zs_fuzz.h"
#include "zs_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_fuzz_limits();
    const char *p = zs_fuzz_path(data, size);
    if (!p)
        return 0;
    zs_err e;
    zs_calib *c = NULL;
    if (zs_calib_load(p, &c, &e) == ZS_OK) {
        static zs_model m;
        static zs_cluster cl;
        static int ready;
        if (!ready)
            ready = zs_model_load("llama-7b", &m, &e) == ZS_OK &&
                    zs_cluster_load("cluster-a", 1, &cl, &e) == ZS_OK;
        if (ready)
            zs_cost_free(zs_cost_calibrated_new(&m, &cl, c));
        zs_calib_free(c);
    }
    return 0;
}
