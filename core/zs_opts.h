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
 * silently does nothing.
 *
 * The same row type and parser serve every other option table: the
 * study-point options (experiments/zs_point_opts.c) and the command
 * line's shared flags (experiments/cli/cli_flags.c) are rows that name a
 * field of a struct, so one parser gives every option its range, default
 * and error message. Depends on zs_err, zs_num and zs_suggest. */
#ifndef ZS_OPTS_H
#define ZS_OPTS_H

#include <stddef.h>
#include <stdint.h>

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
    ZS_OPT_INT,  /* an integer in [min, max] (a field: int, or int64_t/long when size is 8) */
    ZS_OPT_BOOL, /* 1/0, true/false, on/off, yes/no */
    ZS_OPT_ENUM, /* one of the '|'-separated values; the value's index (a field: int) */
    /* The kinds below are field rows only (read by zs_opt_parse): */
    ZS_OPT_STR,    /* text (a name or a path) into a char field; may be empty only when its
                    * default is */
    ZS_OPT_I64,    /* an int64_t in [min, max]; "256K", "2M", "1G" (x1024) too */
    ZS_OPT_U64,    /* a uint64_t in [min, max] */
    ZS_OPT_FLAG,   /* 0 or 1 (command line: given without a value, sets 1) */
    ZS_OPT_OPTS,   /* method options "k=v,k=v", appended (repeatable) */
    ZS_OPT_OPTSET, /* command-line switch that appends its `values` ("routing=0") to opts */
    ZS_OPT_RANGE,  /* "A" or "A-B" (A <= B) in [min, max], into two int fields */
    ZS_OPT_TEXT,   /* the given text itself, into a const char * field (a command line's
                    * argv string, which outlives the parse); NULL: not given */
    ZS_OPT_F64,    /* a double in [min, max] */
    ZS_OPT_PARSE   /* a value in a shape of its own ("64M" bytes, a list): the row's `set`
                    * parses it into the struct; its default is set(deftext) when deftext
                    * is not NULL */
} zs_opt_type;

/* One option, wherever it is given: a method option (`--opt key=value`,
 * read through zs_opt_int/zs_opt_bool/zs_opt_enum with the default `def`),
 * a study-point option (command line `--cli`, figure-spec `key`) or a
 * command-line flag. An option that lands in a struct (a field row) names
 * its field (off, size) and is set from text by zs_opt_parse, the default
 * being text too (`deftext`), so a default, a command-line value and a
 * spec value go through the same parser and range. A method's computed
 * default is given in words in `computed` (and passed to zs_opt_int_def). */
typedef struct zs_opt_spec {
    const char *key; /* method option / figure-spec key; NULL: command line only */
    const char *cli; /* command-line name (without --); NULL: not on the command line */
    zs_opt_type type;
    int64_t min, max;
    long def;             /* method options: the default (ENUM: an index) */
    const char *deftext;  /* field rows: the default as text; "" none (RANGE: all, -1) */
    const char *values;   /* ENUM: "adaptive|doc|seq"; OPTSET: the options it appends */
    const char *computed; /* a computed default in words, or NULL */
    const char *arg;      /* the value's name in --help ("N", "NAME|FILE"); NULL: no value */
    size_t off, size;     /* field rows: the field */
    size_t off2;          /* RANGE: the field of the upper end */
    /* Field rows: checks the syntax of a value before it is stored (a
     * timeline's rank list); NULL: none. */
    int (*syntax)(const char *text, int code, const char *where, zs_err *e);
    /* Field rows: resolves a name (loads a model, looks up a method) when
     * zs_opt_check runs; may rewrite the value in place to its canonical
     * spelling (n bytes). NULL: none. */
    int (*check)(char *val, size_t n, int code, zs_err *e);
    /* ZS_OPT_PARSE rows: sets the struct base from text (it may set more
     * than one field: `cost --lens` sets the lengths and their count), or
     * fills e; zs_opt_parse gives the error its code, and its place when
     * the parser named none. */
    int (*set)(const char *text, void *base, zs_err *e);
    const char *help; /* one phrase: what the option sets */
} zs_opt_spec;

/* The field of a field row: member m of struct type T. */
#define ZS_OPT_FIELD(T, m) .off = offsetof(T, m), .size = sizeof(((T *)0)->m)

/* A command-line field row on one line: flag name, type, member m of T,
 * range, default text, value name and help. */
#define ZS_OPT_ROW(name, type_, T, m, lo, hi, def, arg_, help_)                                    \
    {                                                                                              \
        .cli = name, .type = type_, ZS_OPT_FIELD(T, m), .min = lo, .max = hi, .deftext = def,      \
        .arg = arg_, .help = help_                                                                 \
    }

/* A ZS_OPT_PARSE row on one line: flag name, parser, default text
 * (NULL: none), value name and help. */
#define ZS_OPT_SET(name, fn, def, arg_, help_)                                                     \
    {                                                                                              \
        .cli = name, .type = ZS_OPT_PARSE, .set = fn, .deftext = def, .arg = arg_, .help = help_   \
    }

/* The row of a table (n rows) with command-line name cli or key key
 * (either may be NULL), or NULL. */
const zs_opt_spec *zs_opt_find(const zs_opt_spec *rows, int n, const char *cli, const char *key);

/* Sets a field row's field in base (the struct) from text: errors are
 * `code` (ZS_EUSAGE on the command line, ZS_EINPUT in a file) naming
 * `where` and the accepted values; the field is untouched on failure.
 * Runs the row's syntax check, not its name check. */
int zs_opt_parse(const zs_opt_spec *s, const char *text, int code, const char *where, void *base,
                 zs_err *e);
/* Runs the row's check on its value in base (ZS_OK when it has none or
 * the value is empty). The check's own error is kept; `where` is filled in
 * only when the check left it empty. */
int zs_opt_check(const zs_opt_spec *s, void *base, int code, const char *where, zs_err *e);
/* Sets every field row of a table (n rows) to its default. */
void zs_opt_defaults(const zs_opt_spec *rows, int n, void *base);
/* A field row's default as --help shows it ("" none). */
const char *zs_opt_default(const zs_opt_spec *s);

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
