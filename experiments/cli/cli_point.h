/* Command-line options that describe a study point (model, cluster, trace,
 * method and options, context, iterations, seed, backend, calibration),
 * shared by `simulate`, `compare` and `plan` (and `run`'s --quiet and
 * backend default). Their getopt table, their
 * --help lines and their parsing are generated from the study-point option
 * table (zs_point_opts.h), so every command spells, documents and checks
 * them the same way and prints the same effective configuration. */
#ifndef ZS_CLI_POINT_H
#define ZS_CLI_POINT_H

#include "cli.h"
#include "zs_model.h"
#include "zs_point.h"

/* getopt ids: ZS_PO_BASE + the row of a point option, ZS_PO_FORMAT for
 * --format; a command's own options use ids from 2000 or characters. */
enum { ZS_PO_FORMAT = 999, ZS_PO_BASE = 1000 };
/* Rows of a command's getopt table (its own options, the point options,
 * --format and the terminating zero row). */
#define ZS_CLI_MAX_OPTS 64

/* Builds a command's getopt table into out[ZS_CLI_MAX_OPTS]: its own
 * options (extra, ended by a zero row), the point options except those
 * named in skip (a NULL-terminated list of names; NULL: none), --format. */
void zs_cli_point_longopts(const struct option *extra, const char *const *skip, struct option *out);

/* One --help entry: "  --name ARG" (arg may be NULL) in a 25-column
 * gutter, the text wrapped at 79 columns. */
void zs_cli_help_entry(FILE *f, const char *name, const char *arg, const char *text);

/* --quiet, one option with one meaning in every command that reports
 * progress on stderr (simulate, compare, run, experiment run): no progress
 * lines. Its getopt row (value ZS_CLI_QUIET, an id no command gives its
 * own options) and its --help text are written here once. */
enum { ZS_CLI_QUIET = 1999 };
#define ZS_CLI_QUIET_OPT                                                                           \
    {                                                                                              \
        "quiet", no_argument, 0, ZS_CLI_QUIET                                                      \
    }
#define ZS_CLI_QUIET_HELP                                                                          \
    "no progress on stderr (default: on a terminal one line rewritten in place; in a log a "       \
    "line when a step finishes and at most one every 10 s between, with the time elapsed and, "    \
    "once it can be estimated, the time left)"
/* Where progress goes: stderr, or NULL (silent) with --quiet. */
FILE *zs_cli_progress_file(int quiet);

/* Prints the --help lines of the point options (except skip) and --format. */
void zs_cli_point_help(FILE *f, const char *const *skip);

/* Handles getopt result c (with optarg) of command cmd as a point option:
 * parses the value and resolves names (an unknown method fails here, before
 * anything runs). Returns 0 when it was one and its value is good;
 * otherwise prints the error (a bad value, or an option cmd does not know)
 * and returns the exit status. */
int zs_cli_point_opt(const char *cmd, int c, char **argv, zs_point_cfg *p, zs_format *fmt);

/* The effective configuration as "# ..." lines for people (nodes: the
 * count as run, and where it came from: --nodes or the cluster file). */
void zs_cli_point_print_cfg(zs_output *d, const zs_point_cfg *p, int nodes, const char *cost_desc);
/* Notes where the calibration is applied beyond its data (another GPU, an
 * attention head shape it did not measure): zs_calib_check_use. */
void zs_cli_calib_warnings(zs_output *d, const char *calib, const char *model, const char *cluster,
                           int nodes);
/* The same for a GPU (preset name) and a model already loaded. */
void zs_cli_calib_notes(zs_output *d, const char *calib, const char *gpu, const zs_model *m);

/* The cluster's size as p runs it: --nodes when given, else the cluster's
 * own count. */
int zs_cli_point_size(const zs_point_cfg *p, int *nodes, int *gpus, zs_err *e);

#endif
