/* Command-line options that describe a study point (model, cluster, trace,
 * method and options, context, iterations, seed, backend, calibration),
 * shared by `simulate`, `compare` and `plan`, so every command spells and
 * checks them the same way and prints the same effective configuration. */
#ifndef ZS_CLI_POINT_H
#define ZS_CLI_POINT_H

#include "cli.h"
#include "zs_point.h"

/* Option ids above the ASCII range so commands can add their own. */
enum {
    ZS_PO_MODEL = 1000,
    ZS_PO_CLUSTER,
    ZS_PO_NODES,
    ZS_PO_TRACE,
    ZS_PO_METHOD,
    ZS_PO_OPT,
    ZS_PO_CONTEXT,
    ZS_PO_GROUP,
    ZS_PO_ITERS,
    ZS_PO_SEED,
    ZS_PO_BACKEND,
    ZS_PO_CALIB,
    ZS_PO_ZERO,
    ZS_PO_RECOMPUTE,
    ZS_PO_VALIDATE,
    ZS_PO_NO_ROUTING,
    ZS_PO_NO_REMAP,
    ZS_PO_NO_HIER,
    ZS_PO_TIMELINE,
    ZS_PO_TL_RANKS,
    ZS_PO_TL_LAYERS,
    ZS_PO_FORMAT
};

#define ZS_POINT_LONGOPTS                                                                          \
    {"model", required_argument, 0, ZS_PO_MODEL},                                                  \
        {"cluster", required_argument, 0, ZS_PO_CLUSTER},                                          \
        {"nodes", required_argument, 0, ZS_PO_NODES},                                              \
        {"trace", required_argument, 0, ZS_PO_TRACE},                                              \
        {"method", required_argument, 0, ZS_PO_METHOD}, {"opt", required_argument, 0, ZS_PO_OPT},  \
        {"context", required_argument, 0, ZS_PO_CONTEXT},                                          \
        {"group", required_argument, 0, ZS_PO_GROUP},                                              \
        {"iterations", required_argument, 0, ZS_PO_ITERS},                                         \
        {"seed", required_argument, 0, ZS_PO_SEED},                                                \
        {"backend", required_argument, 0, ZS_PO_BACKEND},                                          \
        {"calib", required_argument, 0, ZS_PO_CALIB}, {"zero", required_argument, 0, ZS_PO_ZERO},  \
        {"recompute", required_argument, 0, ZS_PO_RECOMPUTE},                                      \
        {"validate", no_argument, 0, ZS_PO_VALIDATE},                                              \
        {"no-routing", no_argument, 0, ZS_PO_NO_ROUTING},                                          \
        {"no-remap", no_argument, 0, ZS_PO_NO_REMAP}, {"no-hier", no_argument, 0, ZS_PO_NO_HIER},  \
        {"timeline", required_argument, 0, ZS_PO_TIMELINE},                                        \
        {"timeline-ranks", required_argument, 0, ZS_PO_TL_RANKS},                                  \
        {"timeline-layers", required_argument, 0, ZS_PO_TL_LAYERS},                                \
    {                                                                                              \
        "format", required_argument, 0, ZS_PO_FORMAT                                               \
    }

/* The --help text for these options. */
extern const char zs_cli_point_help[];

/* Handles getopt result c (with optarg) of command cmd as a point option.
 * Returns 0 when it was one and its value is good; otherwise prints the
 * error (a bad value, or an option cmd does not know) and returns the exit
 * status. */
int zs_cli_point_opt(const char *cmd, int c, char **argv, zs_point_cfg *p, zs_format *fmt);

/* Prints the effective configuration ("# key: value" lines) to f. */
void zs_cli_point_print_cfg(FILE *f, const zs_point_cfg *p, const char *cost_desc);

/* A progress line on stderr when it is a terminal. */
void zs_cli_progress(const char *what, int done, int total);

#endif
