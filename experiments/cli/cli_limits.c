/* Input limits from the environment: ZEPSIM_MAX_INPUT_MB (the largest file
 * read whole), ZEPSIM_MAX_PLAN_OPS and ZEPSIM_MAX_PLAN_RANKS (the work a
 * plan file may ask for), and the output limit ZEPSIM_TIMELINE_MAX_MB (the
 * size above which a timeline keeps a subset of the ranks unless told
 * which). Environment variables rather than options, so one setting
 * reaches every command and the worker processes they start.
 * docs/reliability.md lists the limits and their defaults. */
#include <stdint.h>
#include <stdlib.h>

#include "cli.h"
#include "zs_fdio.h"
#include "zs_num.h"
#include "zs_schedule.h"
#include "zs_timeline.h"

/* Reads one variable when it is set: a whole number in [1, max]. */
static int env_u64(const char *name, uint64_t max, uint64_t *out, int *set, zs_err *e)
{
    const char *v = getenv(name);
    *set = v != NULL;
    if (!v)
        return ZS_OK;
    return zs_num_u64(v, 1, max, ZS_EUSAGE, name, out, e);
}

int zs_cli_limits_from_env(zs_err *e)
{
    uint64_t mb, ops, ranks;
    int set, rc;
    if ((rc = env_u64("ZEPSIM_MAX_INPUT_MB", (uint64_t)1 << 30, &mb, &set, e)))
        return rc;
    if (set)
        zs_input_limit_set((size_t)mb << 20);
    zs_plan_limits l = zs_plan_limits_get();
    if ((rc = env_u64("ZEPSIM_MAX_PLAN_OPS", (uint64_t)1 << 50, &ops, &set, e)))
        return rc;
    if (set)
        l.ops = (int64_t)ops;
    if ((rc = env_u64("ZEPSIM_MAX_PLAN_RANKS", (uint64_t)1 << 20, &ranks, &set, e)))
        return rc;
    if (set)
        l.ranks = (int64_t)ranks;
    zs_plan_limits_set(l);
    uint64_t tl;
    if ((rc = env_u64("ZEPSIM_TIMELINE_MAX_MB", (uint64_t)1 << 30, &tl, &set, e)))
        return rc;
    if (set)
        zs_timeline_limit_set((double)tl * 1e6);
    return ZS_OK;
}
