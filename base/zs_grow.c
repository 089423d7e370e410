/* Room in a growing array: see zs_grow.h. */
#include "zs_grow.h"

#include <stdlib.h>

#include "zs_err.h"

int zs_grow(void **p, int64_t *cap, int64_t need, size_t size)
{
    if (need <= *cap)
        return ZS_OK;
    int64_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * size);
    if (!q)
        return ZS_ENOMEM;
    *p = q;
    *cap = c;
    return ZS_OK;
}
