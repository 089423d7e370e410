/* The study-point options as one table: one row per option of a
 * zs_point_cfg (its command-line name, its key in figure specs, type,
 * range, default, argument name and help), from which the command line's
 * parser and --help (experiments/cli/cli_point.c), the spec reader
 * (zs_spec.c) and the defaults (zs_point_cfg_default) are all generated,
 * so an option's spelling, range and default are written once. As Redis
 * keeps its configuration (one createIntConfig row per option).
 *
 * Values arrive as text: a command-line value, a default, or a spec value
 * (spec numbers and booleans are printed as text first), and go through
 * the same strict parser (base/zs_num.h), so every reader accepts and
 * rejects the same values with the same ranges. Names that must resolve
 * (model, cluster, trace, method, backend) have a check that loads or
 * looks them up; method and backend names are canonicalised
 * (`--method Zeppelin` is zeppelin). Depends on zs_point. */
#ifndef ZS_POINT_OPTS_H
#define ZS_POINT_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "zs_err.h"
#include "zs_point.h"

typedef enum zs_popt_type {
    ZS_POPT_STR,    /* text (a name or a path); may be empty only when its default is */
    ZS_POPT_INT,    /* an int in [min, max] */
    ZS_POPT_I64,    /* an int64_t in [min, max] */
    ZS_POPT_U64,    /* a uint64_t in [min, max] */
    ZS_POPT_ENUM,   /* one of the '|'-separated values: its index, into an int field */
    ZS_POPT_FLAG,   /* 0 or 1 (command line: given without a value, sets 1) */
    ZS_POPT_OPTS,   /* method options "k=v,k=v", appended (repeatable) */
    ZS_POPT_OPTSET, /* command-line switch that appends its `values` ("routing=0") to opts */
    ZS_POPT_RANGE,  /* "A" or "A-B" (A <= B) in [min, max], into two int fields */
    ZS_POPT_RANKS   /* a timeline's ranks, "all" or "0,5,17-20" (zs_tl_ranks_check), into a
                     * char field; "" (the default): automatic */
} zs_popt_type;

typedef struct zs_popt {
    const char *cli; /* command-line name (without --); NULL: spec only */
    const char *key; /* figure-spec key; NULL: command line only */
    zs_popt_type type;
    size_t off, size; /* the field in zs_point_cfg */
    size_t off2;      /* RANGE: the field of the upper end */
    int64_t min;
    uint64_t max;
    const char *def;    /* the default as text; "" none (RANGE: all, -1; RANKS: automatic) */
    const char *arg;    /* the value's name in --help ("N", "NAME|FILE"); NULL: no value */
    const char *values; /* ENUM: "none|full"; OPTSET: the options it appends */
    /* Resolves a name (loads a model, looks up a method); may rewrite the
     * value in place to its canonical spelling (n bytes). NULL: none. */
    int (*check)(char *val, size_t n, int code, zs_err *e);
    const char *help;
} zs_popt;

int zs_popt_count(void);
const zs_popt *zs_popt_at(int i); /* NULL past the end */
const zs_popt *zs_popt_find_cli(const char *name);
const zs_popt *zs_popt_find_key(const char *key);
/* The spec keys, ", "-separated (for "use one of" messages). */
const char *zs_popt_keys(void);

/* Sets the option of c from text: errors are `code` (ZS_EUSAGE on the
 * command line, ZS_EINPUT in a file) naming `where` and the accepted
 * values; c is untouched on failure. Runs no check. */
int zs_popt_parse(const zs_popt *o, const char *text, int code, const char *where, zs_point_cfg *c,
                  zs_err *e);
/* Runs the option's check on its value in c (ZS_OK when it has none or
 * the value is empty). The check's own error is kept; `where` is filled in
 * only when the check left it empty. */
int zs_popt_check(const zs_popt *o, zs_point_cfg *c, int code, const char *where, zs_err *e);

/* The default as shown in --help ("" none). */
const char *zs_popt_default(const zs_popt *o);

#endif
