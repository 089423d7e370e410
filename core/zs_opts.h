/* Method options: "key=value,key=value" strings (`--opt cp=16,routing=0`)
 * and the tables in which every planner declares the keys it reads.
 *
 * A planner declares each option once, as a zs_opt_spec row (key, type,
 * range, default, one sentence of help), lists its rows in its
 * zs_planner_ops, and reads values only through the row (zs_opt_int,
 * zs_opt_bool, zs_opt_enum), so the range a value is checked against, the
 * default it gets and the `zepsim plan --help` text (zs_opt_help) all come
 * from the same row. Numbers are parsed strictly (base/zs_num.h). Keys a
 * planner never read are reported as errors, so a misspelt option never
 * silently does nothing. Depends on zs_err, zs_num and zs_suggest. */
#ifndef ZS_OPTS_H
#define ZS_OPTS_H

#include <stddef.h>

#include "zs_err.h"

#define ZS_OPTS_MAX 32

typedef struct zs_opts {
    int n;
    char key[ZS_OPTS_MAX][32];
    char val[ZS_OPTS_MAX][96];
    int used[ZS_OPTS_MAX];
    /* The keys read through rows, given or not (their rows' key strings),
     * so zs_plan_batch can check a planner reads only what it declares. */
    int nasked;
    const char *asked[ZS_OPTS_MAX];
} zs_opts;

void zs_opts_init(zs_opts *o);
/* Adds "k=v[,k=v...]" (a bare "k" means k=1); later values override. */
int zs_opts_parse(zs_opts *o, const char *spec, zs_err *e);
/* Sets a key programmatically (overrides). */
int zs_opts_set(zs_opts *o, const char *key, const char *val, zs_err *e);
/* "k=v,k=v" of all keys, for provenance. */
void zs_opts_format(const zs_opts *o, char *buf, size_t n);

/* ---- the option tables ---------------------------------------------------- */

typedef enum zs_opt_type {
    ZS_OPT_INT,  /* an integer in [min, max] */
    ZS_OPT_BOOL, /* 1/0, true/false, on/off, yes/no */
    ZS_OPT_ENUM  /* one of the '|'-separated values; the value's index */
} zs_opt_type;

/* One option of a method. A default the planner computes from the model,
 * the cluster or the batch is given in words in `computed` (and passed to
 * zs_opt_int_def); otherwise `def` is the default (ENUM: an index). */
typedef struct zs_opt_spec {
    const char *key;
    zs_opt_type type;
    long min, max;
    long def;
    const char *values;   /* ENUM: "adaptive|doc|seq" */
    const char *computed; /* a computed default in words, or NULL */
    const char *help;     /* one phrase: what the option sets */
} zs_opt_spec;

/* Typed reads through a row: the default when the key is absent, a
 * ZS_EUSAGE error naming the key and the accepted values when the value is
 * malformed or out of range. zs_opt_int uses the row's def; zs_opt_int_def
 * the computed default def (rows with `computed`). */
int zs_opt_int(zs_opts *o, const zs_opt_spec *s, long *out, zs_err *e);
int zs_opt_int_def(zs_opts *o, const zs_opt_spec *s, long def, long *out, zs_err *e);
int zs_opt_bool(zs_opts *o, const zs_opt_spec *s, int *out, zs_err *e);
int zs_opt_enum(zs_opts *o, const zs_opt_spec *s, int *out, zs_err *e);

/* The help of one row: "tp=N (default 1): tensor-parallel degree". */
void zs_opt_help_row(const zs_opt_spec *s, char *buf, size_t n);
/* The help text of a table (NULL-terminated row pointers), rows joined by
 * "; ". */
void zs_opt_help(const zs_opt_spec *const *specs, char *buf, size_t n);

/* ZS_EINVALID when a key was read through a row that is not in specs (a
 * planner whose table misses an option it reads): `who` names it. */
int zs_opts_check_declared(const zs_opts *o, const char *who, const zs_opt_spec *const *specs,
                           zs_err *e);

/* Error on any key nobody read; `who` names the method in the message and
 * its table (may be NULL) gives the keys it reads and a "did you mean". */
int zs_opts_check_used(const zs_opts *o, const char *who, const zs_opt_spec *const *specs,
                       zs_err *e);

#endif
