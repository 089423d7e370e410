/* Table-driven configuration parsing: see zs_config.h. */
#include "zs_config.h"

#include "zs_afile.h"
#include "zs_fdio.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

int zs_json_doc_load_text(const char *source, const char *text, zs_json_doc **out, zs_err *e)
{
    json_error_t je;
    /* REJECT_DUPLICATES: a repeated key is almost always a copy-paste slip. */
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char where[512];
        snprintf(where, sizeof where, "%s:%d:%d", source, je.line, je.column);
        return zs_err_set(e, ZS_EINPUT, where, "fix the JSON syntax at that position",
                          "malformed JSON (%s)", je.text);
    }
    zs_json_doc *doc = calloc(1, sizeof *doc);
    if (!doc || !(doc->source = dup_str(source)) || !(doc->text = dup_str(text))) {
        json_decref(root);
        zs_json_doc_free(doc);
        return zs_err_set(e, ZS_ENOMEM, source, NULL, "out of memory parsing JSON");
    }
    doc->root = root;
    *out = doc;
    return ZS_OK;
}

int zs_json_doc_load_file(const char *path, zs_json_doc **out, zs_err *e)
{
    char *buf = NULL;
    size_t len = 0;
    int rc =
        zs_read_file(path, "check the path (or use a preset name: zepsim list)", &buf, &len, e);
    if (rc)
        return rc;
    if (strlen(buf) != len) {
        free(buf);
        return zs_err_set(e, ZS_EINPUT, path, "the file must be UTF-8 JSON text",
                          "file contains a NUL byte (binary file?)");
    }
    rc = zs_json_doc_load_text(path, buf, out, e);
    free(buf);
    return rc;
}

int zs_json_write_file(const json_t *root, const char *path, size_t flags, zs_err *e)
{
    zs_afile a;
    int rc = zs_afile_open(&a, path, e);
    if (rc)
        return rc;
    if (json_dumpf(root, a.f, flags) != 0 || fputc('\n', a.f) == EOF)
        return zs_afile_fail(
            &a, zs_err_set(e, ZS_EIO, path, "check free disk space", "cannot write the file"), e);
    return zs_afile_commit(&a, e);
}

void zs_json_doc_free(zs_json_doc *doc)
{
    if (!doc)
        return;
    json_decref(doc->root);
    free(doc->source);
    free(doc->text);
    free(doc);
}

/* Offset of `"key"` followed by ':' at or after start, or -1. Good enough
 * for locating keys in messages; parsing itself never relies on it. */
static long find_key(const char *text, long start, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = text + start; (p = strchr(p, '"')) != NULL; p++) {
        if (strncmp(p + 1, key, klen) == 0 && p[1 + klen] == '"') {
            const char *q = p + 2 + klen;
            while (*q && isspace((unsigned char)*q))
                q++;
            if (*q == ':')
                return (long)(p - text);
        }
    }
    return -1;
}

void zs_json_where(const zs_json_doc *doc, const char *parent_key, const char *key, char *buf,
                   size_t n)
{
    long start = 0;
    if (parent_key) {
        long ps = find_key(doc->text, 0, parent_key);
        if (ps >= 0)
            start = ps;
    }
    long off = key ? find_key(doc->text, start, key) : -1;
    if (off < 0) {
        if (key)
            snprintf(buf, n, "%s: key '%s%s%s'", doc->source, parent_key ? parent_key : "",
                     parent_key ? "." : "", key);
        else
            snprintf(buf, n, "%s", doc->source);
        return;
    }
    int line = 1, col = 1;
    for (long i = 0; i < off; i++) {
        if (doc->text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(buf, n, "%s:%d:%d: key '%s%s%s'", doc->source, line, col, parent_key ? parent_key : "",
             parent_key ? "." : "", key);
}

void zs_config_defaults(const zs_field *fields, size_t nfields, void *out)
{
    for (size_t i = 0; i < nfields; i++) {
        const zs_field *f = &fields[i];
        char *p = (char *)out + f->offset;
        switch (f->type) {
        case ZS_F_INT:
        case ZS_F_BOOL:
            *(int *)p = (int)f->def;
            break;
        case ZS_F_DOUBLE:
            *(double *)p = f->def;
            break;
        case ZS_F_STRING:
            p[0] = '\0';
            break;
        }
    }
}

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "a value";
}

static int is_ignored(const char *key, const char *const *ignore)
{
    for (; ignore && *ignore; ignore++)
        if (strcmp(*ignore, key) == 0)
            return 1;
    return 0;
}

static void range_fix(const zs_field *f, char *buf, size_t n)
{
    if (f->type == ZS_F_INT)
        snprintf(buf, n, "use an integer in [%.0f, %.0f]%s%s", f->min, f->max,
                 f->unit && *f->unit ? " " : "", f->unit ? f->unit : "");
    else
        snprintf(buf, n, "use a number in [%g, %g]%s%s", f->min, f->max,
                 f->unit && *f->unit ? " " : "", f->unit ? f->unit : "");
}

int zs_config_parse(const zs_json_doc *doc, const json_t *obj, const char *parent_key,
                    const zs_field *fields, size_t nfields, const char *const *ignore_keys,
                    void *out, zs_err *e)
{
    char where[512], fix[512];
    if (!json_is_object(obj)) {
        zs_json_where(doc, NULL, parent_key, where, sizeof where);
        return zs_err_set(e, ZS_EINPUT, parent_key ? where : doc->source,
                          "the description must be a JSON object { \"key\": value, ... }",
                          "expected a JSON object, got %s", json_type_name(obj));
    }
    /* Unknown keys first: a misspelt key would otherwise surface as a
     * confusing "missing key" error for its correct spelling. */
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        size_t i;
        for (i = 0; i < nfields; i++)
            if (strcmp(fields[i].key, key) == 0)
                break;
        if (i == nfields && !is_ignored(key, ignore_keys)) {
            zs_json_where(doc, parent_key, key, where, sizeof where);
            size_t o = (size_t)snprintf(fix, sizeof fix, "known keys:");
            for (size_t j = 0; j < nfields && o < sizeof fix; j++)
                o += (size_t)snprintf(fix + o, sizeof fix - o, " %s", fields[j].key);
            for (const char *const *ig = ignore_keys; ig && *ig && o < sizeof fix; ig++)
                o += (size_t)snprintf(fix + o, sizeof fix - o, " %s", *ig);
            return zs_err_set(e, ZS_EINPUT, where, fix, "unknown key '%s'", key);
        }
    }
    zs_config_defaults(fields, nfields, out);
    for (size_t i = 0; i < nfields; i++) {
        const zs_field *f = &fields[i];
        json_t *v = json_object_get(obj, f->key);
        char *p = (char *)out + f->offset;
        if (!v) {
            if (f->required) {
                if (parent_key)
                    zs_json_where(doc, NULL, parent_key, where, sizeof where);
                else
                    snprintf(where, sizeof where, "%s", doc->source);
                snprintf(fix, sizeof fix, "add \"%s\": <%s>%s%s", f->key, f->help,
                         f->unit && *f->unit ? " in " : "", f->unit ? f->unit : "");
                return zs_err_set(e, ZS_EINPUT, where, fix, "missing key '%s'", f->key);
            }
            continue;
        }
        zs_json_where(doc, parent_key, f->key, where, sizeof where);
        switch (f->type) {
        case ZS_F_STRING:
            if (!json_is_string(v))
                return zs_err_set(e, ZS_EINPUT, where, "quote the value: \"...\"",
                                  "'%s' must be a string, got %s", f->key, json_type_name(v));
            if (json_string_length(v) == 0 || json_string_length(v) >= f->size) {
                snprintf(fix, sizeof fix, "use 1 to %zu characters", f->size - 1);
                return zs_err_set(e, ZS_EINPUT, where, fix, "'%s' has a bad length", f->key);
            }
            memcpy(p, json_string_value(v), json_string_length(v) + 1);
            break;
        case ZS_F_BOOL:
            if (!json_is_boolean(v))
                return zs_err_set(e, ZS_EINPUT, where, "use true or false",
                                  "'%s' must be a boolean, got %s", f->key, json_type_name(v));
            *(int *)p = json_is_true(v);
            break;
        case ZS_F_INT:
        case ZS_F_DOUBLE: {
            double d;
            if (json_is_integer(v)) {
                d = (double)json_integer_value(v);
            } else if (json_is_real(v) && f->type == ZS_F_DOUBLE) {
                d = json_real_value(v);
            } else {
                range_fix(f, fix, sizeof fix);
                return zs_err_set(e, ZS_EINPUT, where, fix, "'%s' must be %s, got %s", f->key,
                                  f->type == ZS_F_INT ? "an integer" : "a number",
                                  json_type_name(v));
            }
            if (!isfinite(d) || d < f->min || d > f->max) {
                range_fix(f, fix, sizeof fix);
                return zs_err_set(e, ZS_EINPUT, where, fix, "'%s' = %g is out of range", f->key, d);
            }
            if (f->type == ZS_F_INT)
                *(int *)p = (int)d;
            else
                *(double *)p = d;
            break;
        }
        }
    }
    return ZS_OK;
}

void zs_config_print(FILE *out, const zs_field *fields, size_t nfields, const void *obj, int indent)
{
    for (size_t i = 0; i < nfields; i++) {
        const zs_field *f = &fields[i];
        const char *p = (const char *)obj + f->offset;
        fprintf(out, "%*s%-22s ", indent, "", f->key);
        switch (f->type) {
        case ZS_F_INT:
            fprintf(out, "%d", *(const int *)p);
            break;
        case ZS_F_BOOL:
            fprintf(out, "%s", *(const int *)p ? "true" : "false");
            break;
        case ZS_F_DOUBLE:
            fprintf(out, "%g", *(const double *)p);
            break;
        case ZS_F_STRING:
            fprintf(out, "%s", p);
            break;
        }
        if (f->unit && *f->unit && f->type != ZS_F_STRING)
            fprintf(out, " %s", f->unit);
        fputc('\n', out);
    }
}

json_t *zs_config_to_json(const zs_field *fields, size_t nfields, const void *obj)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < nfields; i++) {
        const zs_field *f = &fields[i];
        const char *p = (const char *)obj + f->offset;
        json_t *v = NULL;
        switch (f->type) {
        case ZS_F_INT:
            v = json_integer(*(const int *)p);
            break;
        case ZS_F_BOOL:
            v = json_boolean(*(const int *)p);
            break;
        case ZS_F_DOUBLE:
            v = json_real(*(const double *)p);
            break;
        case ZS_F_STRING:
            v = json_string(p);
            break;
        }
        json_object_set_new(o, f->key, v);
    }
    return o;
}
