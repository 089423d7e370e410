/* What makes a point that ran out of memory fit: when a point fails, plan
 * its batches again with 64 times the GPU memory; if that succeeds, the
 * failure was memory, and the usual remedies are tried in order (full
 * recomputation, ZeRO stage 2 and 3, tensor parallelism 2, 4, 8 where the
 * method has a tp option, then ZeRO 3 with tp), planning every batch of
 * the point with each, and the first that plans is reported as the
 * options to add. Planning only: no backend runs, so it takes a few
 * planning times per candidate. Depends on zs_point_env. */
#ifndef ZS_POINT_ADVICE_H
#define ZS_POINT_ADVICE_H

#include <stddef.h>

#include "zs_point.h"

/* 1 when cfg fails for memory (planning with unbounded memory succeeds);
 * then advice holds the options that make it fit ("--zero 3", "--opt
 * tp=8", ...) or, when none of the candidates does, a sentence saying so.
 * 0 when the failure is not memory (or cfg plans): advice is "". */
int zs_point_advice(const zs_point_cfg *cfg, char *advice, size_t n);

#endif
