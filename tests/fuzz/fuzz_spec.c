/* Fuzz target: experiment specs (experiments/zs_spec.c), loaded and
 * expanded into points as `zepsim experiment run|list|report` do. */
#include "zs_fuzz.h"
#include "zs_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_fuzz_limits();
    const char *p = zs_fuzz_path(data, size);
    if (!p)
        return 0;
    zs_spec *s = NULL;
    zs_err e;
    zs_spec_load(p, &s, &e);
    zs_spec_free(s);
    return 0;
}
