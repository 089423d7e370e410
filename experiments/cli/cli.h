/* Shared pieces of the zepsim command-line front end: the command
 * signature, error printing, and the loaders for the options every command
 * shares (--model, --cluster, --nodes, --format). Only code under
 * experiments/cli prints to the terminal and chooses exit codes. */
#ifndef ZS_CLI_H
#define ZS_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "cli_flags.h"
#include "zs_cluster.h"
#include "zs_output.h"
#include "zs_err.h"
#include "zs_table.h"

/* The benchmarks' default sizes, written once: `zepsim bench sim`, `bench
 * plan` and `bench floor` (cmd_bench.c, cmd_bench_floor.c) run with them,
 * and their --help texts, `zepsim bench --help` and `zepsim --help`
 * (commands.def) print them through ZS_CLI_STR. README.md and
 * docs/simulator.md state the same (tests/cli/bench_help.sh). */
#define ZS_CLI_STR_(x)        #x
#define ZS_CLI_STR(x)         ZS_CLI_STR_(x)
#define ZS_BENCH_SIM_GPUS_LO  1024  /* bench sim's GPU counts: lowest, */
#define ZS_BENCH_SIM_GPUS_MID 4096  /* middle */
#define ZS_BENCH_SIM_GPUS_HI  16384 /* and highest */
#define ZS_BENCH_SIM_GPUS                                                                          \
    ZS_CLI_STR(ZS_BENCH_SIM_GPUS_LO)                                                               \
    "," ZS_CLI_STR(ZS_BENCH_SIM_GPUS_MID) "," ZS_CLI_STR(ZS_BENCH_SIM_GPUS_HI)
#define ZS_BENCH_SIM_METHODS "te-cp,zeppelin"
#define ZS_BENCH_SIM_RUNS    5 /* runs per point */
/* processes per floor: bench floor --runs, bench sim --floor-runs */
#define ZS_BENCH_FLOOR_RUNS    3
#define ZS_BENCH_FLOOR_WIDTH   1       /* messages each way per round */
#define ZS_BENCH_FLOOR_XFERS   1000000 /* transfers per floor run, about */
#define ZS_BENCH_FLOOR_GPUS    ZS_CLI_STR(ZS_BENCH_SIM_GPUS_LO) "," ZS_CLI_STR(ZS_BENCH_SIM_GPUS_MID)
#define ZS_BENCH_PLAN_GPUS     1024 /* bench plan: GPUs (nodes = GPUs / GPUs per node) */
#define ZS_BENCH_PLAN_TOKENS_M 32   /* tokens of the batch, in M (2^20) */
#define ZS_BENCH_PLAN_REPS     3    /* best of */

/* A command gets argv with argv[0] = the command name and returns the
 * process exit status (0 ok, 1 runtime failure, 2 bad usage or input). */
typedef int (*zs_cmd_fn)(int argc, char **argv);

#define ZS_CMD(name, fn, summary) int fn(int argc, char **argv);
#include "commands.def"
#undef ZS_CMD

/* ASTRA-sim's analytical network, system and remote-memory inputs for a
 * plan of nranks ranks on cluster c: dir/<prefix>.network.yml,
 * .system.json, .remote_memory.json (experiments/cli/cli_astra.c). */
int zs_cli_astra_inputs(const zs_cluster *c, int nranks, const char *dir, const char *prefix,
                        zs_err *e);

/* Prints e to stderr and returns its exit status. */
int zs_cli_fail(const zs_err *e);
/* Reports a usage error for cmd ("zepsim: what: zepsim CMD: see zepsim CMD --help") and returns 2.
 */
int zs_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Resets getopt so a command can parse its own argv. */
void zs_cli_reset_getopt(void);
/* Parses a positive integer option value; on error fills e (ZS_EUSAGE). */
int zs_cli_parse_int(const char *opt, const char *s, long min, long max, long *out, zs_err *e);
/* A comma-separated list of integers in 1..max into v (at most cap); on
 * error fills e (ZS_EUSAGE). */
int zs_cli_parse_int_list(const char *opt, const char *s, long max, int *v, int cap, int *n,
                          zs_err *e);
int zs_cli_parse_double(const char *opt, const char *s, double min, double max, double *out,
                        zs_err *e);
/* Reports a timeline written to path (bytes of JSON text): "timeline[
 * LABEL]: PATH (N MB)" on out; on stderr a note when it holds an
 * automatic subset of the ranks (subset: its sentence, zs_tl_select; ""
 * or NULL: none), and a warning naming --timeline-ranks /
 * --timeline-layers when it is above ZS_TL_WARN_BYTES. */
void zs_cli_timeline_done(FILE *out, const char *label, const char *path, double bytes,
                          const char *subset);
/* Prints t (taken) as the one table of command cmd's document in fmt,
 * under name; returns the exit status (0, or 1 when stdout failed). */
int zs_cli_print1(const char *cmd, zs_format fmt, const char *name, zs_table *t);
/* Ends and frees d; returns the exit status (0, or 1 when stdout failed). */
int zs_cli_doc_end(zs_output *d);
/* The gnuplot `set terminal` line for a plot file, chosen by its
 * extension (.png, .svg, .pdf) at w x h pixels; NULL for another one. */
const char *zs_cli_plot_terminal(const char *path, int w, int h, char *buf, size_t n);
/* ZS_EUSAGE unless path is "none" or names a format zs_cli_plot_terminal
 * knows. */
int zs_cli_plot_check(const char *path, zs_err *e);
/* Draws a plot into path (w x h) with gnuplot, each file under its name
 * only once whole (zs_afile): data(f, arg) writes PATH.dat, script(f,
 * term, out, dat, arg) the gnuplot commands after the `set terminal` line
 * term, rendering into out (a temporary name, renamed when gnuplot
 * succeeded). Says on stderr what it wrote or why it wrote no plot. */
void zs_cli_gnuplot(const char *path, int w, int h, void (*data)(FILE *f, const void *arg),
                    void (*script)(FILE *f, const char *out, const char *dat, const void *arg),
                    const void *arg);
/* zs_cli_gnuplot without a word: 0 drawn, 1 gnuplot is not installed, -1
 * it failed (PATH.dat is left in both cases). */
int zs_cli_gnuplot_draw(const char *path, int w, int h, void (*data)(FILE *f, const void *arg),
                        void (*script)(FILE *f, const char *out, const char *dat, const void *arg),
                        const void *arg);
/* `experiment run --shard`: "i/n" (1 <= i <= n) or "slurm" (the array
 * task's 0-based place from SLURM_ARRAY_TASK_MIN, of SLURM_ARRAY_TASK_COUNT
 * tasks); *i is 1-based. On error fills e (ZS_EUSAGE). */
int zs_cli_parse_shard(const char *s, int *i, int *n, zs_err *e);
/* The folder of the figure specs: given (--dir), else $ZEPSIM_SPECS, else
 * ./experiments/specs, else the installed copy, else the source tree the
 * binary was built from (cli_specs.c). ZS_EIO naming where it looked. */
int zs_cli_specs_dir(const char *given, char *out, size_t n, zs_err *e);
/* A spec argument as a path: a file as given, or a bare name
 * ("zeppelin-fig8", with or without .json) in the spec folder (dir: as
 * zs_cli_specs_dir's given). */
void zs_cli_spec_path(const char *spec, const char *dir, char *out, size_t n);
/* ZS_EUSAGE (did you mean, and where the specs are) when spec is a bare
 * name that neither is a readable file nor names a spec of the folder;
 * ZS_OK otherwise (a path: its reader reports what is wrong). */
int zs_cli_spec_missing(const char *spec, const char *dir, zs_err *e);
/* Sets the input and plan limits from ZEPSIM_MAX_INPUT_MB,
 * ZEPSIM_MAX_PLAN_OPS and ZEPSIM_MAX_PLAN_RANKS, and the timeline size
 * limit from ZEPSIM_TIMELINE_MAX_MB, when they are set; a bad value is a
 * ZS_EUSAGE error naming the variable. */
int zs_cli_limits_from_env(zs_err *e);
/* Handles getopt's '?' and ':' results uniformly. */
int zs_cli_bad_option(const char *cmd, int optopt_c, char **argv);
/* `zepsim bench floor` (cmd_bench_floor.c), dispatched by zs_cmd_bench. */
int zs_cli_bench_floor(int argc, char **argv);
/* `zepsim calib predict` (cmd_calib_predict.c), dispatched by zs_cmd_calib. */
int zs_cmd_calib_predict(int argc, char **argv);

#endif
