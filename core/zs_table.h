/* Result tables printed three ways: an aligned human table (default), CSV
 * or JSON (--format). Every command that prints rows of figures builds a
 * zs_table, so machine-readable output is never an afterthought. Depends
 * on nothing but libc. */
#ifndef ZS_TABLE_H
#define ZS_TABLE_H

#include <stdio.h>

#include "zs_err.h"

typedef enum zs_format { ZS_FMT_TABLE = 0, ZS_FMT_CSV, ZS_FMT_JSON } zs_format;

/* Parses "table", "csv" or "json". */
int zs_format_parse(const char *s, zs_format *out, zs_err *e);

typedef struct zs_table zs_table;

/* title may be NULL; it is printed above human tables and as a JSON key. */
zs_table *zs_table_new(const char *title);
void zs_table_free(zs_table *t);
/* Adds a column; numeric columns are right-aligned and unquoted in JSON. */
int zs_table_col(zs_table *t, const char *name, int numeric);
/* Starts a new row; cells not set stay empty (null in JSON). */
int zs_table_row(zs_table *t);
/* Sets a cell of the current row. */
int zs_table_set(zs_table *t, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int zs_table_nrows(const zs_table *t);
void zs_table_print(const zs_table *t, FILE *out, zs_format fmt);

#endif
