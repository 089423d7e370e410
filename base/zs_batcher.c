/* Batchers: see zs_batcher.h. */
#include "zs_batcher.h"

#include <stddef.h>

int zs_batcher_next(zs_batcher *b, zs_batch **out, zs_err *e)
{
    return b->ops->next(b, out, e);
}

void zs_batcher_free(zs_batcher *b)
{
    if (b)
        b->ops->free(b);
}

const zs_batcher_counts *zs_batcher_counts_get(const zs_batcher *b)
{
    return &b->counts;
}
