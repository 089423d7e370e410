/* `zepsim validate --runs FILE --cluster C` (cmd_validate_runs.c),
 * dispatched by zs_cmd_validate when --runs is given: predicts published
 * Megatron / NeMo training runs with the analytic step model. */
#ifndef ZS_VALIDATE_RUNS_H
#define ZS_VALIDATE_RUNS_H

int zs_cmd_validate_runs(int argc, char **argv);
/* Whether argv gives --runs (its row in cmd_validate_runs.c). */
int zs_validate_wants_runs(int argc, char **argv);

#endif
