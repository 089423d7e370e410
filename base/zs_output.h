/* One output document per command invocation. A command adds its tables
 * (zs_table.h), notes and named values to a zs_output; with --format table
 * each is printed at once, aligned for people; with --format json the
 * whole is printed at the end as one JSON object (jansson), and with
 * --format csv as one CSV table with one header. So `zepsim CMD --format
 * json | jq`, `pandas.read_csv` and the like always get exactly one
 * document, whatever the command prints.
 *
 * JSON: {"zepsim": VERSION, "command": CMD, <values>, <table name>:
 * [{column: cell, ...}, ...], ..., "notes": [...]}: a number cell is a
 * JSON number, an empty cell null, in insertion order.
 * CSV: one table as it is; several tables as one, a first column `table`
 * naming each row's table and the union of their columns (empty where a
 * row's table lacks one); values only when there is no table (one row).
 * Notes go to stderr ("zepsim: note: ...") so the CSV stays data.
 * Depends on zs_table and jansson. */
#ifndef ZS_OUTPUT_H
#define ZS_OUTPUT_H

#include <stdio.h>

#include "zs_table.h"

typedef struct zs_output zs_output;

/* A document of command cmd (NULL: none named) printed to out in fmt;
 * NULL when out of memory. */
zs_output *zs_output_new(const char *cmd, zs_format fmt, FILE *out);
/* Frees d (NULL is a no-op); prints nothing. */
void zs_output_free(zs_output *d);
zs_format zs_output_format(const zs_output *d);
/* The stream people read: out for tables, stderr for csv and json (for
 * progress and remarks that are not part of the document). */
FILE *zs_output_human(const zs_output *d);

/* Adds table t under name (a JSON key, the CSV `table` value); the doc
 * takes t (freed on failure too). Table format: printed now, after a blank
 * line when a table came before. */
int zs_output_table(zs_output *d, const char *name, zs_table *t);
/* A remark about the output (an approximation, a warning): a line on out
 * (table), an entry of "notes" (json), a line on stderr (csv). */
void zs_output_note(zs_output *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text only people need (headers, explanations): printed as is in table
 * format, dropped otherwise. */
void zs_output_text(zs_output *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Named values: top-level keys (obj NULL) or keys of the object obj
 * (created on first use). Not printed in table format (say it with
 * zs_output_text too); a v that is not finite is null. */
int zs_output_set_text(zs_output *d, const char *obj, const char *key, const char *val);
int zs_output_set_num(zs_output *d, const char *obj, const char *key, double v);
int zs_output_set_int(zs_output *d, const char *obj, const char *key, long long v);

/* Prints the document (csv, json; nothing more for table format) and
 * flushes out; ZS_EIO when out could not be written. */
int zs_output_end(zs_output *d);

#endif
