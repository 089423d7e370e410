/* Result tables: named columns and rows of cells, each cell empty (null),
 * text or a number. A table is printed aligned for people
 * (zs_table_print) or, as part of one output document per command
 * (zs_output.h), as CSV or JSON: a number cell is a JSON number, an empty
 * cell null, whatever the column. Every command that prints rows of figures
 * builds zs_tables, so machine-readable output is never an afterthought.
 * Depends on nothing but libc. */
#ifndef ZS_TABLE_H
#define ZS_TABLE_H

#include <stdio.h>

#include "zs_err.h"

typedef enum zs_format { ZS_FMT_TABLE = 0, ZS_FMT_CSV, ZS_FMT_JSON } zs_format;

/* Parses "table", "csv" or "json". */
int zs_format_parse(const char *s, zs_format *out, zs_err *e);

typedef struct zs_table zs_table;

/* The kind of a cell. */
typedef enum zs_cell_kind { ZS_CELL_NULL = 0, ZS_CELL_TEXT, ZS_CELL_NUM } zs_cell_kind;

/* title may be NULL; it is printed above human tables only. */
zs_table *zs_table_new(const char *title);
void zs_table_free(zs_table *t);
/* Column kinds: text; numbers (right-aligned for people); mixed (a value
 * column of key/value rows: left-aligned, but typed like numbers). */
enum { ZS_COL_TEXT = 0, ZS_COL_NUM = 1, ZS_COL_MIXED = 2 };
/* Adds a column of a kind above; a cell set with zs_table_set in a NUM or
 * MIXED column is a number when its text is one. */
int zs_table_col(zs_table *t, const char *name, int kind);
/* Starts a new row; cells not set stay empty (null in JSON, "" in CSV). */
int zs_table_row(zs_table *t);
/* Sets a cell of the current row to text; in a numeric column, text that
 * is a JSON number (a leading '+' dropped) becomes a number cell. */
int zs_table_set(zs_table *t, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sets a cell of the current row to the number v: people read it written
 * with fmt (one printf conversion of a double, "%.1f"), CSV and JSON get
 * every digit a double carries (DBL_DIG, 15 significant). A v that is not
 * finite leaves the cell empty, so no inf or nan is ever printed. */
int zs_table_num(zs_table *t, int col, const char *fmt, double v);
/* Sets a cell to the number v that people read as text ("1,234,567"). */
int zs_table_num_as(zs_table *t, int col, const char *text, double v);
/* Sets a cell to text s, never a number (a TEXT value from SQLite). */
int zs_table_str(zs_table *t, int col, const char *s);
/* Sets a cell to a number given as text (a number from SQLite, say); text
 * that is not a JSON number becomes a text cell. */
int zs_table_numtext(zs_table *t, int col, const char *text);

/* Key/value tables, the shape every command uses for a list of named
 * figures: columns key, value (a number whenever it is one, so scripts
 * read it at full precision), unit and note (what the figure assumes or
 * means in words; null when nothing). Units and notes never go into the
 * value. */
zs_table *zs_table_kv_new(const char *title);
/* A row whose value is the number v (fmt as in zs_table_num). */
int zs_table_kv_num(zs_table *t, const char *key, const char *unit, const char *fmt, double v);
/* A row whose value is text (a name, a description). */
int zs_table_kv_text(zs_table *t, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The note of the last row added. */
int zs_table_kv_note(zs_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int zs_table_nrows(const zs_table *t);
int zs_table_ncols(const zs_table *t);
const char *zs_table_title(const zs_table *t);
const char *zs_table_colname(const zs_table *t, int col);
int zs_table_col_numeric(const zs_table *t, int col);
/* A cell: its kind, its text as people read it ("" when empty; "+5.65"
 * as written), and its value for CSV and JSON (a number's JSON text at
 * full precision when set by zs_table_num, "5.6523", else "5.65"). */
zs_cell_kind zs_table_kind(const zs_table *t, int row, int col);
const char *zs_table_text(const zs_table *t, int row, int col);
const char *zs_table_value(const zs_table *t, int row, int col);
/* The column named name, or -1. */
int zs_table_find(const zs_table *t, const char *name);

/* The aligned human table (title, header, rule, rows). */
void zs_table_print_text(const zs_table *t, FILE *out);
/* t alone: the human table, or a document (zs_output.h) whose one table is t,
 * under the name "rows". A command that prints more than one table, notes
 * or values builds a zs_output instead. */
void zs_table_print(const zs_table *t, FILE *out, zs_format fmt);

/* The text of a JSON number, the '+' of "%+.2f" dropped, or NULL when s is
 * not one (JSON's grammar: no inf, nan, hex or leading zeros). */
const char *zs_json_number(const char *s);

#endif
