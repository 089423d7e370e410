/* The columns of a result row: one table of names, units and meanings from
 * which `zepsim simulate` and `zepsim compare` build their output (table,
 * CSV, JSON), `zepsim list columns` prints the reference, and
 * docs/output.md documents it (a test checks they agree). The same
 * quantity has the same name and unit everywhere: iter_ms is always
 * milliseconds, *_pct always percent, and every row carries the
 * configuration it was run with, so files of several runs concatenate.
 * Depends on zs_point (configuration and results) and zs_table. */
#ifndef ZS_COLS_H
#define ZS_COLS_H

#include "zs_output.h"
#include "zs_point.h"
#include "zs_table.h"

typedef struct zs_rcol {
    const char *name;
    const char *unit; /* "" for none */
    const char *help;
    int config; /* 1: a configuration column */
    int kind;   /* ZS_COL_TEXT or ZS_COL_NUM */
    int human;  /* in compare's human table */
} zs_rcol;

int zs_rcol_count(void);
const zs_rcol *zs_rcol_at(int i);
/* The column named name, or NULL. */
const zs_rcol *zs_rcol_find(const char *name);

/* What a row is made of. */
typedef struct zs_rrow {
    const zs_point_cfg *cfg;
    int nodes, gpus;          /* the cluster's size as run */
    const zs_point_result *r; /* NULL: the point failed */
    const char *error;        /* why it failed (r NULL) */
    double speedup;           /* tokens/s over the baseline; NAN: none */
} zs_rrow;

/* Adds the columns to t: all of them, or (human) those of compare's human
 * table. */
void zs_rcols_add(zs_table *t, int human);
/* Adds one row to t (columns of this table, by name). A failed point's
 * figures are empty (null), its status "failed" and its error set; in a
 * table without a status column (human), tokens_per_s says "failed". */
void zs_rcols_row(zs_table *t, const zs_rrow *in);
/* Sets cell col of t's current row to column c of in. */
void zs_rcol_put(const zs_rcol *c, zs_table *t, int col, const zs_rrow *in);
/* Column name of in as the table for people prints it ("333525"), for
 * what must say exactly what the table says (a chart's labels); "" when
 * it has none. */
void zs_rcol_human(const char *name, const zs_rrow *in, char *buf, size_t n);
/* The unit of every result column that has one, as the object "units" of
 * a JSON document ({"iter_ms": "ms", ...}): the rows' numbers stay bare. */
void zs_rcols_units(zs_output *d);

#endif
