/* The command line's option engine. One table holds the flags several
 * commands take (--format, --quiet, --gpu, --out, --dir, --db, --plot,
 * --tp, --dp, --jobs, --gpus-per-node, --reps, --ranks, the nccl-tests
 * ones), rows of the option engine (core/zs_opts.h) like the study-point
 * options (--model, --cluster, --nodes, --calib, --seed, ...:
 * zs_point_opts.h). A command describes itself as a zs_cli_cmd: its own
 * options as rows of its argument struct, and the shared flags it takes
 * (zs_cli_use: a row and, where the flag means something particular to it,
 * a note); zs_cli_parse generates its getopt table and --help from them and
 * parses every value through its row. So a flag's spelling, value name,
 * range, default and error message are written once, and getopt is called
 * only here. */
#ifndef ZS_CLI_FLAGS_H
#define ZS_CLI_FLAGS_H

#include <getopt.h>
#include <stdio.h>

#include "zs_opts.h"
#include "zs_output.h"
#include "zs_point.h"
#include "zs_point_opts.h"

/* getopt values: ZS_PO_BASE + a study-point row (ZS_FP(MODEL)), the
 * shared flags from ZS_F_BASE; a command's own options use characters or
 * values from 2000 to 2999. */
enum { ZS_PO_BASE = 1000, ZS_F_BASE = 3000 };
#define ZS_FP(row) (ZS_PO_BASE + ZS_P_##row)
typedef enum zs_cli_flag_id {
    ZS_F_FORMAT = ZS_F_BASE,
    ZS_F_QUIET,
    ZS_F_GPU,
    ZS_F_OUT,
    ZS_F_DIR,
    ZS_F_DB,
    ZS_F_PLOT,
    ZS_F_NCCL_COLUMN, /* how calib fit and validate read nccl-tests logs */
    ZS_F_NCCL_ALGO,
    ZS_F_NCCL_PROTO,
    ZS_F_COLLECTIVE,
    ZS_F_TP, /* parallel degrees and worker counts several commands take */
    ZS_F_DP,
    ZS_F_JOBS,
    ZS_F_GPUS_PER_NODE,
    ZS_F_REPS,  /* timed repetitions (bench plan, hw bench) */
    ZS_F_RANKS, /* the per-rank table (simulate, run) */
    ZS_F_END
} zs_cli_flag_id;

/* Rows of a command's getopt table (--help, its own options, the shared
 * flags it takes, the terminating zero row). */
#define ZS_CLI_MAX_OPTS 64

/* What the shared flags were given as. The study-point options start at
 * their defaults (zs_point_cfg_default); zs_cli_given tells which were
 * given. */
typedef struct zs_cli_flags {
    zs_point_cfg p;
    unsigned long long given; /* bit r: study-point row r was given */
    zs_format fmt;            /* --format (default table) */
    int quiet;                /* --quiet */
    /* the text given, NULL when not */
    const char *gpu, *out, *dir, *db, *plot;
    int nccl_inplace; /* --nccl-column: 0 out-of-place, 1 in-place */
    const char *nccl_algo, *nccl_proto, *collective;
    int tp, dp;        /* --tp, --dp (default 1) */
    int jobs;          /* --jobs; 0: not given (the command's default) */
    int gpus_per_node; /* --gpus-per-node; 0: not given (the cluster's) */
    int reps;          /* --reps; 0: not given (the command's default) */
    int ranks;         /* --ranks */
    /* Every option given, by getopt value, in order (zs_cli_parse), so a
     * command can refuse one that does not apply to what it was asked
     * (zs_cli_only). */
    int given_ids[ZS_CLI_MAX_OPTS];
    int ngiven;
} zs_cli_flags;

/* The text of a study-point option given on the command line (a name or
 * a path), NULL when it was not given. */
const char *zs_cli_given(const zs_cli_flags *f, zs_popt_row r);

/* A flag a command takes: its getopt value (ZS_FP(..) or ZS_F_..) and,
 * where the flag means something particular to the command (what it
 * applies to, another default), a note added to the row's help; an empty
 * note leaves it out of --help (a flag taken only to refuse it with a
 * reason: `plan --timeline`). A list ends with a zero row. */
typedef struct zs_cli_use {
    int id;
    const char *note;
} zs_cli_use;

/* The uses of a command that runs a study point: every study-point option
 * except the rows in skip (ended by ZS_P_COUNT; NULL: none), then
 * --format, then extra (ended by a zero row; NULL: none). out holds
 * ZS_CLI_MAX_OPTS rows. */
void zs_cli_point_uses(const zs_popt_row *skip, const zs_cli_use *extra, zs_cli_use *out);

/* How calib fit and validate read nccl-tests logs, from --nccl-column,
 * --nccl-algo, --nccl-proto and --collective, into s; on error fills e
 * (ZS_EUSAGE naming the flag). */
struct zs_meas_set;
int zs_cli_nccl_apply(const zs_cli_flags *f, struct zs_meas_set *s, zs_err *e);

/* A command's options as tables: its own options, field rows of the
 * command's argument struct (getopt values ZS_CLI_OWN + row), and the
 * shared flags it takes. */
enum { ZS_CLI_OWN = 2000 };
typedef struct zs_cli_cmd {
    const char *name;       /* "timeline": in messages */
    const char *head;       /* --help before the options: usage, what it does, "options:" */
    const zs_opt_spec *own; /* its own options (NULL: none) */
    int nown;
    const zs_cli_use *uses; /* the shared flags it takes */
    const char *tail;       /* --help after the options (NULL: none) */
    /* Called after each option is stored, with its getopt value and text,
     * for an option that accumulates (hw bench's repeatable --model):
     * 0, or the exit status after printing why. NULL: none. */
    int (*each)(int id, const char *text, void *args);
    /* One-letter spellings: letter i of `letters` ("o") is the option of
     * getopt value letter_ids[i] (calib's -o is --output). NULL: none. */
    const char *letters;
    const int *letter_ids;
} zs_cli_cmd;

/* The own rows of a zs_cli_cmd from an array (designated: `.own, .nown`). */
#define ZS_CLI_OWN_ROWS(rows) .own = rows, .nown = (int)(sizeof rows / sizeof rows[0])

/* The whole option parse of a command: the own options into args (set to
 * their defaults first), the shared flags into f (set to their defaults
 * first); --help prints head, the options' help lines and tail. -1:
 * parsed (optind at the first operand); 0: the help was printed (a
 * command may add to it); otherwise the exit status of an error. */
int zs_cli_parse(const zs_cli_cmd *cmd, int argc, char **argv, void *args, zs_cli_flags *f);
/* The --help text of a command (head, options, tail). */
void zs_cli_help(FILE *out, const zs_cli_cmd *cmd);

/* Whether arg asks for help (-h, --help): for commands whose first
 * argument picks a part (`hw run`, `bench sim`), before any part parses. */
int zs_cli_is_help(const char *arg);
/* Whether argv (argc) gives the option of row o (--NAME or --NAME=V):
 * for a command with two option sets (`validate --runs` and `validate
 * --against`), before either parses. */
int zs_cli_asks(int argc, char **argv, const zs_opt_spec *o);
/* Whether the option of getopt value id was given (f->given_ids). */
int zs_cli_was_given(const zs_cli_flags *f, int id);
/* The command-line name of getopt value id of cmd (own row or shared
 * flag), "?" when none. */
const char *zs_cli_name(const zs_cli_cmd *cmd, int id);
/* For a command whose parts take different options (`trace stats` and
 * `trace gen`): 0 when every option given (f->given_ids) is in allowed
 * (getopt values, ended by 0); otherwise prints "option '--X' does not
 * apply to CMD PART" and returns the exit status. */
int zs_cli_only(const zs_cli_cmd *cmd, const char *part, const zs_cli_flags *f, const int *allowed);

#endif
