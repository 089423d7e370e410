/* What the commands that run a study point (`simulate`, `compare`,
 * `plan`, `run`) share beyond their options (those come from the option
 * tables through cli_flags.h): where progress goes, the effective
 * configuration they print, the calibration's warnings and the cluster's
 * size as run. */
#ifndef ZS_CLI_POINT_H
#define ZS_CLI_POINT_H

#include "cli.h"
#include "cli_flags.h"
#include "zs_model.h"
#include "zs_point.h"

/* Where progress goes: stderr, or NULL (silent) with --quiet. */
FILE *zs_cli_progress_file(int quiet);

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
