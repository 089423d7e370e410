/* Internals of the attention kernel model (zs_kernel.h) that its tests
 * check; not for use outside models/ and tests/. */
#ifndef ZS_KERNEL_INTERNAL_H
#define ZS_KERNEL_INTERNAL_H

#include "zs_kernel.h"

/* 1 when the closed-form tile count of a block agrees,
 * in both directions, with the walk one query tile at a time. */
int zs__attn_walk_agrees(const zs_attn_kernel *k, const zs_attn_block *b);

#endif
