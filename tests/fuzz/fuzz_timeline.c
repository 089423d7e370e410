/* Fuzz target: timelines for `zepsim timeline compare` (experiments/
 * zs_tlcmp.c), the input compared with itself. */
#include "zs_fuzz.h"
#include "zs_tlcmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zs_fuzz_limits();
    const char *p = zs_fuzz_path(data, size);
    if (!p)
        return 0;
    zs_tlcmp *c = NULL;
    zs_err e;
    zs_tlcmp_files(p, p, &c, &e);
    zs_tlcmp_free(c);
    return 0;
}
