/* One output document per command invocation: see zs_output.h. */
#include "zs_output.h"
#include "zs_version.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define ZS_DOC_MAXTABLES 16

struct zs_output {
    zs_format fmt;
    FILE *out;
    json_t *root;  /* json: the document so far */
    json_t *notes; /* json: the notes */
    int ntables, printed;
    zs_table *tables[ZS_DOC_MAXTABLES]; /* csv: kept until the end */
    char *names[ZS_DOC_MAXTABLES];
    int borrowed[ZS_DOC_MAXTABLES]; /* not freed (zs_table_print's table) */
    int oom;                        /* an allocation failed: zs_output_end reports it */
};

zs_output *zs_output_new(const char *cmd, zs_format fmt, FILE *out)
{
    zs_output *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->fmt = fmt;
    d->out = out;
    d->root = json_object();
    d->notes = json_array();
    if (!d->root || !d->notes || json_object_set_new(d->root, "zepsim", json_string(ZS_VERSION)) ||
        (cmd && json_object_set_new(d->root, "command", json_string(cmd)))) {
        zs_output_free(d);
        return NULL;
    }
    return d;
}

void zs_output_free(zs_output *d)
{
    if (!d)
        return;
    json_decref(d->root);
    json_decref(d->notes);
    for (int i = 0; i < d->ntables; i++) {
        if (!d->borrowed[i])
            zs_table_free(d->tables[i]);
        free(d->names[i]);
    }
    free(d);
}

zs_format zs_output_format(const zs_output *d)
{
    return d->fmt;
}

FILE *zs_output_human(const zs_output *d)
{
    return d->fmt == ZS_FMT_TABLE ? d->out : stderr;
}

/* A number cell's JSON value: an integer when it is written as one. */
static json_t *number(const char *s)
{
    if (!strpbrk(s, ".eE")) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == 0)
            return json_integer(v);
    }
    double v = strtod(s, NULL);
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *table_json(const zs_table *t)
{
    json_t *rows = json_array();
    for (int r = 0; rows && r < zs_table_nrows(t); r++) {
        json_t *o = json_object();
        if (!o || json_array_append_new(rows, o)) {
            json_decref(rows);
            return NULL;
        }
        for (int c = 0; c < zs_table_ncols(t); c++) {
            const char *s = zs_table_value(t, r, c);
            zs_cell_kind k = zs_table_kind(t, r, c);
            json_t *v = k == ZS_CELL_NUM    ? number(s)
                        : k == ZS_CELL_TEXT ? json_string(s)
                                            : json_null();
            if (json_object_set_new(o, zs_table_colname(t, c), v)) {
                json_decref(rows);
                return NULL;
            }
        }
    }
    return rows;
}

/* Adds t; frees it when it is not borrowed and the doc does not keep it. */
static int add_table(zs_output *d, const char *name, zs_table *t, int borrowed)
{
    if (!t) {
        d->oom = 1;
        return ZS_ENOMEM;
    }
    if (d->fmt == ZS_FMT_TABLE || d->fmt == ZS_FMT_JSON) {
        json_t *rows = NULL;
        if (d->fmt == ZS_FMT_TABLE) {
            if (d->printed)
                fputc('\n', d->out);
            zs_table_print_text(t, d->out);
            d->printed = 1;
        } else {
            rows = table_json(t);
        }
        if (!borrowed)
            zs_table_free(t);
        if (d->fmt == ZS_FMT_JSON && (!rows || json_object_set_new(d->root, name, rows))) {
            d->oom = 1;
            return ZS_ENOMEM;
        }
        return ZS_OK;
    }
    char *nm = malloc(strlen(name) + 1);
    if (d->ntables == ZS_DOC_MAXTABLES || !nm) {
        free(nm);
        if (!borrowed)
            zs_table_free(t);
        d->oom = 1;
        return ZS_ENOMEM;
    }
    memcpy(nm, name, strlen(name) + 1);
    d->names[d->ntables] = nm;
    d->borrowed[d->ntables] = borrowed;
    d->tables[d->ntables++] = t;
    return ZS_OK;
}

int zs_output_table(zs_output *d, const char *name, zs_table *t)
{
    return add_table(d, name, t, 0);
}

void zs_table_print(const zs_table *t, FILE *out, zs_format fmt)
{
    if (fmt == ZS_FMT_TABLE) {
        zs_table_print_text(t, out);
        return;
    }
    zs_output *d = zs_output_new(NULL, fmt, out);
    if (d) {
        add_table(d, "rows", (zs_table *)t, 1);
        zs_output_end(d);
    }
    zs_output_free(d);
}

void zs_output_note(zs_output *d, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (d->fmt == ZS_FMT_TABLE)
        fprintf(d->out, "%s\n", buf);
    else if (d->fmt == ZS_FMT_CSV)
        fprintf(stderr, "zepsim: %s%s\n", strncmp(buf, "warning: ", 9) ? "note: " : "", buf);
    else if (json_array_append_new(d->notes, json_string(buf)))
        d->oom = 1;
}

void zs_output_text(zs_output *d, const char *fmt, ...)
{
    if (d->fmt != ZS_FMT_TABLE)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(d->out, fmt, ap);
    va_end(ap);
}

static int set(zs_output *d, const char *obj, const char *key, json_t *v)
{
    json_t *o = d->root;
    if (v && obj) {
        o = json_object_get(d->root, obj);
        if (!json_is_object(o)) {
            o = json_object();
            if (!o || json_object_set_new(d->root, obj, o))
                o = NULL;
        }
    }
    if (!v || !o || json_object_set_new(o, key, v)) {
        d->oom = 1;
        return ZS_ENOMEM;
    }
    return ZS_OK;
}

int zs_output_set_text(zs_output *d, const char *obj, const char *key, const char *val)
{
    return set(d, obj, key, val ? json_string(val) : json_null());
}

int zs_output_set_num(zs_output *d, const char *obj, const char *key, double v)
{
    return set(d, obj, key, isfinite(v) ? json_real(v) : json_null());
}

int zs_output_set_int(zs_output *d, const char *obj, const char *key, long long v)
{
    return set(d, obj, key, json_integer(v));
}

static void csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* The values of a document without tables, as one row. */
static void csv_values(const zs_output *d)
{
    const char *k;
    json_t *v;
    int n = 0;
    json_object_foreach(d->root, k, v)
    {
        if (!json_is_object(v) && !json_is_array(v)) {
            fputs(n++ ? "," : "", d->out);
            csv_field(d->out, k);
        }
    }
    fputc('\n', d->out);
    n = 0;
    json_object_foreach(d->root, k, v)
    {
        if (json_is_object(v) || json_is_array(v))
            continue;
        fputs(n++ ? "," : "", d->out);
        if (json_is_string(v)) {
            csv_field(d->out, json_string_value(v));
        } else if (!json_is_null(v)) {
            char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
            if (s)
                fputs(s, d->out);
            free(s);
        }
    }
    fputc('\n', d->out);
}

/* The union of the tables' column names, in order of first appearance. */
static int csv_union(const zs_output *d, const char **cols, int max)
{
    int n = 0;
    for (int i = 0; i < d->ntables; i++)
        for (int c = 0; c < zs_table_ncols(d->tables[i]); c++) {
            const char *nm = zs_table_colname(d->tables[i], c);
            int have = 0;
            for (int j = 0; j < n && !have; j++)
                have = !strcmp(cols[j], nm);
            if (!have && n < max)
                cols[n++] = nm;
        }
    return n;
}

static void csv_tables(const zs_output *d)
{
    const char *cols[256];
    int several = d->ntables > 1;
    int n = csv_union(d, cols, 256);
    if (several)
        fputs("table,", d->out);
    for (int c = 0; c < n; c++) {
        fputs(c ? "," : "", d->out);
        csv_field(d->out, cols[c]);
    }
    fputc('\n', d->out);
    for (int i = 0; i < d->ntables; i++) {
        const zs_table *t = d->tables[i];
        int map[256];
        for (int c = 0; c < n; c++)
            map[c] = zs_table_find(t, cols[c]);
        for (int r = 0; r < zs_table_nrows(t); r++) {
            if (several) {
                csv_field(d->out, d->names[i]);
                fputc(',', d->out);
            }
            for (int c = 0; c < n; c++) {
                fputs(c ? "," : "", d->out);
                if (map[c] >= 0)
                    csv_field(d->out, zs_table_value(t, r, map[c]));
            }
            fputc('\n', d->out);
        }
    }
}

/* One value with jansson: compact but spaced, `{"a": 1, "b": "x"}`. */
static void dump(FILE *out, const json_t *v)
{
    json_dumpf(v, out, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
}

/* The document with a key per line and an array element (a row) per
 * line, so it reads and greps like the tables it holds. */
static void json_doc(const zs_output *d)
{
    const char *k;
    json_t *v;
    int first = 1;
    fputs("{", d->out);
    json_object_foreach(d->root, k, v)
    {
        json_t *key = json_string(k);
        fputs(first ? "\n " : ",\n ", d->out);
        first = 0;
        dump(d->out, key);
        json_decref(key);
        fputs(": ", d->out);
        if (!json_is_array(v) || json_array_size(v) == 0) {
            dump(d->out, v);
            continue;
        }
        fputs("[", d->out);
        for (size_t i = 0; i < json_array_size(v); i++) {
            fputs(i ? ",\n  " : "\n  ", d->out);
            dump(d->out, json_array_get(v, i));
        }
        fputs("\n ]", d->out);
    }
    fputs("\n}\n", d->out);
}

int zs_output_end(zs_output *d)
{
    if (d->fmt == ZS_FMT_JSON) {
        if (json_object_set(d->root, "notes", d->notes)) /* always: [] when none */
            d->oom = 1;
        json_doc(d);
    } else if (d->fmt == ZS_FMT_CSV) {
        if (d->ntables)
            csv_tables(d);
        else
            csv_values(d);
    }
    if (fflush(d->out) != 0 || ferror(d->out))
        return ZS_EIO;
    return d->oom ? ZS_ENOMEM : ZS_OK;
}
