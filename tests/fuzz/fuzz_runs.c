/* Fuzz target: published-runs CSVs for `zepsim validate --runs`
 * (models/zs_runs.c): header, cells, divisibility and model names. */
#include "zs_fuzz.h"
#include "zs_runs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_fuzz_limits();
    const char *p = zs_fuzz_path(data, size);
    if (!p)
        return 0;
    zs_runs r;
    zs_err e;
    if (zs_runs_read(p, &r, &e) == ZS_OK)
        zs_runs_free(&r);
    return 0;
}
