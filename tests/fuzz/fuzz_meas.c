/* Fuzz target: measurement files for `zepsim calib fit` and `zepsim
 * validate` (models/zs_calib_import.c): nccl-tests logs, kernel latency
 * CSVs, layer-op TSVs and zepsim-measurements JSON, told apart by content
 * as for a file on the command line. */
#include "zs_calib.h"
#include "zs_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_fuzz_limits();
    const char *p = zs_fuzz_path(data, size);
    if (!p)
        return 0;
    zs_meas_set s;
    zs_meas_set_init(&s);
    zs_err e;
    zs_meas_read(&s, p, &e);
    zs_meas_set_clear(&s);
    return 0;
}
