/* Table-driven configuration: JSON objects into C structs.
 *
 * A description (model, GPU, cluster, method options) is one table of
 * zs_field rows (key, type, offset, range, unit, default, help). The same
 * table drives JSON parsing with jansson, range checks, defaults, printing
 * and --help text, so there is one place per option. Errors name the file,
 * line, column and key, and say how to fix the value. Depends on jansson. */
#ifndef ZS_CONFIG_H
#define ZS_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "zs_err.h"

typedef enum zs_ftype { ZS_F_INT, ZS_F_DOUBLE, ZS_F_STRING, ZS_F_BOOL } zs_ftype;

typedef struct zs_field {
    const char *key;
    zs_ftype type;
    size_t offset;   /* offsetof(struct, member) */
    size_t size;     /* capacity of a char[] member (strings only) */
    double min, max; /* inclusive range (numbers only) */
    int required;    /* 1: the key must be present; 0: def is used */
    double def;      /* default for numbers and bools */
    const char *unit;
    const char *help;
} zs_field;

/* A parsed JSON document that remembers its text, so that errors about a
 * key (not only syntax errors) can name its line and column. */
typedef struct zs_json_doc {
    char *source; /* file name or "preset:NAME" */
    char *text;
    json_t *root;
} zs_json_doc;

/* Loads and parses a file; malformed JSON is an error with line:column. */
int zs_json_doc_load_file(const char *path, zs_json_doc **out, zs_err *e);
/* Parses text; source names it in messages. */
int zs_json_doc_load_text(const char *source, const char *text, zs_json_doc **out, zs_err *e);
void zs_json_doc_free(zs_json_doc *doc);

/* Writes root to path atomically (zs_afile: a temporary file renamed on
 * success), with jansson's dump flags. ZS_EIO naming path on failure, when
 * nothing is left under path. */
int zs_json_write_file(const json_t *root, const char *path, size_t flags, zs_err *e);

/* "source:line:col: key" for key (searched after parent_key when given);
 * just "source: key" when the key cannot be found in the text. */
void zs_json_where(const zs_json_doc *doc, const char *parent_key, const char *key, char *buf,
                   size_t n);

/* Fills out from obj according to fields: defaults first, then values.
 * Unknown keys, missing required keys, wrong types and out-of-range values
 * are ZS_EINPUT errors. ignore_keys (NULL-terminated, may be NULL) are keys
 * the caller handles itself. parent_key locates nested objects. */
int zs_config_parse(const zs_json_doc *doc, const json_t *obj, const char *parent_key,
                    const zs_field *fields, size_t nfields, const char *const *ignore_keys,
                    void *out, zs_err *e);

/* Sets every field to its default (strings to ""). */
void zs_config_defaults(const zs_field *fields, size_t nfields, void *out);

/* Prints "key = value unit" lines (indent spaces first). */
void zs_config_print(FILE *f, const zs_field *fields, size_t nfields, const void *obj, int indent);

/* Writes obj as a JSON object the parser accepts (caller frees with json_decref). */
json_t *zs_config_to_json(const zs_field *fields, size_t nfields, const void *obj);

#endif
