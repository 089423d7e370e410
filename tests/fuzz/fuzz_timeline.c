/* Fuzz target: timelines for `zepsim timeline compare` (experiments/
 * zs_tlcmp.c), the input compared with itself, and for the cross-node
 * transfer times the runner reads back (experiments/zs_tlxnode.c). */
#include "zs_fuzz.h"
#include "zs_tlcmp.h"
#include "zs_tlxnode_internal.h"

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
    zs_tlxnode x;
    zs_tlxnode_file(p, 1 + (int)(size % 8), &x, &e);
    return 0;
}
