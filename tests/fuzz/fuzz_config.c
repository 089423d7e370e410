/* Fuzz target: JSON configuration files (models/zs_config.c through the
 * model, GPU and cluster loaders, as `--model FILE`, `--cluster FILE` read
 * them). */
#include "zs_cluster.h"
#include "zs_fuzz.h"
#include "zs_gpu.h"
#include "zs_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_fuzz_limits();
    const char *p = zs_fuzz_path(data, size);
    if (!p)
        return 0;
    zs_err e;
    zs_model m;
    zs_gpu g;
    zs_cluster c;
    zs_model_load(p, &m, &e);
    zs_gpu_load(p, &g, &e);
    zs_cluster_load(p, 0, &c, &e);
    zs_cluster_load(p, 3, &c, &e);
    return 0;
}
