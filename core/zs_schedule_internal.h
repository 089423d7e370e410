/* Internals of the schedule builder (zs_schedule.h) shared inside core/
 * (the dump reader, the Chakra builder) and with tests; not exported. */
#ifndef ZS_SCHEDULE_INTERNAL_H
#define ZS_SCHEDULE_INTERNAL_H

#include "zs_schedule.h"

/* An
 * attention op over blocks already in the pool [block0, block0+nblocks). */
int64_t zs__sched_attn_ref(zs_schedule *s, int rank, int stream, const char *label, int backward,
                           int64_t block0, int nblocks, int heads, double duration,
                           const int64_t *deps, int ndeps);

#endif
