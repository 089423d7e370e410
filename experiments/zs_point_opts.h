/* The study-point options as one table: one row per option of a
 * zs_point_cfg (its command-line name, its key in figure specs, type,
 * range, default, argument name and help), from which the command line's
 * parser and --help (experiments/cli/cli_point.c), the spec reader
 * (zs_spec.c) and the defaults (zs_point_cfg_default) are all generated,
 * so an option's spelling, range and default are written once. As Redis
 * keeps its configuration (one createIntConfig row per option).
 *
 * Values arrive as text: a command-line value, a default, or a spec value
 * (spec numbers and booleans are printed as text first), and go through
 * the same strict parser (base/zs_num.h), so every reader accepts and
 * rejects the same values with the same ranges. Names that must resolve
 * (model, cluster, trace, method, backend) have a check that loads or
 * looks them up; method and backend names are canonicalised
 * (`--method Zeppelin` is zeppelin). The rows are the option engine's
 * (core/zs_opts.h): zs_opt_parse sets a field of a zs_point_cfg from
 * text, zs_opt_check resolves its name. Depends on zs_point. */
#ifndef ZS_POINT_OPTS_H
#define ZS_POINT_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "zs_err.h"
#include "zs_opts.h"
#include "zs_point.h"

/* The rows by name, so code picks a row by its place in the table, never
 * by spelling its name again (zs_popt_at(ZS_P_METHOD)). */
typedef enum zs_popt_row {
    ZS_P_MODEL,
    ZS_P_CLUSTER,
    ZS_P_NODES,
    ZS_P_TRACE,
    ZS_P_METHOD,
    ZS_P_OPT,
    ZS_P_NO_ROUTING,
    ZS_P_NO_REMAP,
    ZS_P_NO_HIER,
    ZS_P_CONTEXT,
    ZS_P_GROUP,
    ZS_P_ITERATIONS,
    ZS_P_SEED,
    ZS_P_BACKEND,
    ZS_P_CALIB,
    ZS_P_ATTN_KERNEL,
    ZS_P_ZERO,
    ZS_P_FSDP,
    ZS_P_RECOMPUTE,
    ZS_P_PRECISION,
    ZS_P_GRAD_DTYPE,
    ZS_P_VALIDATE,
    ZS_P_FOLD,
    ZS_P_INTERFERENCE,
    ZS_P_TIMELINE,
    ZS_P_TL_RANKS,
    ZS_P_TL_LAYERS,
    ZS_P_COUNT
} zs_popt_row;

/* The rows (field rows of zs_point_cfg, core/zs_opts.h), in --help order. */
int zs_popt_count(void);
const zs_opt_spec *zs_popt_at(int i); /* NULL past the end */
const zs_opt_spec *zs_popt_find_cli(const char *name);
const zs_opt_spec *zs_popt_find_key(const char *key);
/* The spec keys, ", "-separated (for "use one of" messages). */
const char *zs_popt_keys(void);

#endif
