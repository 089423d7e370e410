/* Method options: see zs_opts.h. */
#include "zs_opts.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zs_num.h"
#include "zs_suggest.h"

void zs_opts_init(zs_opts *o)
{
    memset(o, 0, sizeof *o);
}

int zs_opts_set(zs_opts *o, const char *key, const char *val, zs_err *e)
{
    if (!*key || strlen(key) >= sizeof o->key[0] || strlen(val) >= sizeof o->val[0])
        return zs_err_set(e, ZS_EUSAGE, "--opt", "use key=value with short keys and values",
                          "bad option '%s=%s'", key, val);
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->key[i], key) == 0) {
            snprintf(o->val[i], sizeof o->val[i], "%s", val);
            return ZS_OK;
        }
    if (o->n == ZS_OPTS_MAX)
        return zs_err_set(e, ZS_EUSAGE, "--opt", NULL, "too many options (at most %d)",
                          ZS_OPTS_MAX);
    snprintf(o->key[o->n], sizeof o->key[0], "%s", key);
    snprintf(o->val[o->n], sizeof o->val[0], "%s", val);
    o->used[o->n] = 0;
    o->n++;
    return ZS_OK;
}

int zs_opts_parse(zs_opts *o, const char *spec, zs_err *e)
{
    char buf[1024];
    if (strlen(spec) >= sizeof buf)
        return zs_err_set(e, ZS_EUSAGE, "--opt", NULL, "option string too long");
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        int rc;
        if (eq) {
            *eq = '\0';
            rc = zs_opts_set(o, tok, eq + 1, e);
        } else {
            rc = zs_opts_set(o, tok, "1", e);
        }
        if (rc)
            return rc;
    }
    return ZS_OK;
}

static const char *find(zs_opts *o, const char *key)
{
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->key[i], key) == 0) {
            o->used[i] = 1;
            return o->val[i];
        }
    return NULL;
}

/* The value of a row's key (NULL when absent), noting that it was asked. */
static const char *lookup(zs_opts *o, const zs_opt_spec *s)
{
    int seen = 0;
    for (int i = 0; i < o->nasked && !seen; i++)
        seen = o->asked[i] == s->key || strcmp(o->asked[i], s->key) == 0;
    if (!seen && o->nasked < ZS_OPTS_MAX)
        o->asked[o->nasked++] = s->key;
    return find(o, s->key);
}

static int int_in(zs_opts *o, const zs_opt_spec *s, long def, long *out, zs_err *e)
{
    const char *v = lookup(o, s);
    if (!v) {
        *out = def;
        return ZS_OK;
    }
    int64_t x;
    int rc = zs_num_i64(v, s->min, s->max, ZS_EUSAGE, s->key, &x, e);
    if (!rc)
        *out = (long)x;
    return rc;
}

int zs_opt_int(zs_opts *o, const zs_opt_spec *s, long *out, zs_err *e)
{
    return int_in(o, s, s->def, out, e);
}

int zs_opt_int_def(zs_opts *o, const zs_opt_spec *s, long def, long *out, zs_err *e)
{
    return int_in(o, s, def, out, e);
}

int zs_opt_bool(zs_opts *o, const zs_opt_spec *s, int *out, zs_err *e)
{
    const char *v = lookup(o, s);
    if (!v) {
        *out = s->def != 0;
        return ZS_OK;
    }
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "yes"))
        *out = 1;
    else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "no"))
        *out = 0;
    else
        return zs_err_set(e, ZS_EUSAGE, s->key, "use 1/0, true/false, on/off",
                          "bad value '%s' for option '%s'", v, s->key);
    return ZS_OK;
}

/* Index of v among the '|'-separated values, or -1. */
static int enum_index(const char *values, const char *v)
{
    size_t len = strlen(v);
    int i = 0;
    for (const char *p = values; *p; i++) {
        size_t w = strcspn(p, "|");
        if (w == len && strncmp(p, v, len) == 0)
            return i;
        p += w;
        if (*p == '|')
            p++;
    }
    return -1;
}

int zs_opt_enum(zs_opts *o, const zs_opt_spec *s, int *out, zs_err *e)
{
    const char *v = lookup(o, s);
    if (!v) {
        *out = (int)s->def;
        return ZS_OK;
    }
    int i = enum_index(s->values, v);
    if (i < 0) {
        char fix[256];
        snprintf(fix, sizeof fix, "use %s=%s", s->key, s->values);
        return zs_err_set(e, ZS_EUSAGE, s->key, fix, "bad value '%s' for option '%s'", v, s->key);
    }
    *out = i;
    return ZS_OK;
}

/* The default of a row as text. */
static void default_text(const zs_opt_spec *s, char *buf, size_t n)
{
    if (s->computed) {
        snprintf(buf, n, "%s", s->computed);
    } else if (s->type == ZS_OPT_ENUM) {
        const char *p = s->values;
        for (long i = 0; i < s->def && *p; i++) {
            p += strcspn(p, "|");
            if (*p)
                p++;
        }
        snprintf(buf, n, "%.*s", (int)strcspn(p, "|"), p);
    } else {
        snprintf(buf, n, "%ld", s->def);
    }
}

void zs_opt_help_row(const zs_opt_spec *s, char *buf, size_t n)
{
    char def[256];
    default_text(s, def, sizeof def);
    const char *arg = s->type == ZS_OPT_INT ? "N" : s->type == ZS_OPT_BOOL ? "0|1" : s->values;
    char range[64] = "";
    if (s->type == ZS_OPT_INT && s->max == LONG_MAX)
        snprintf(range, sizeof range, ">= %ld, ", (long)s->min);
    else if (s->type == ZS_OPT_INT)
        snprintf(range, sizeof range, "%ld..%ld, ", (long)s->min, (long)s->max);
    snprintf(buf, n, "%s=%s (%sdefault %s): %s", s->key, arg, range, def, s->help);
}

void zs_opt_help(const zs_opt_spec *const *specs, char *buf, size_t n)
{
    size_t off = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; specs && specs[i] && off < n; i++) {
        char row[768];
        zs_opt_help_row(specs[i], row, sizeof row);
        off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? "; " : "", row);
    }
}

int zs_opts_check_declared(const zs_opts *o, const char *who, const zs_opt_spec *const *specs,
                           zs_err *e)
{
    for (int i = 0; i < o->nasked; i++) {
        int found = 0;
        for (int k = 0; specs && specs[k] && !found; k++)
            found = strcmp(specs[k]->key, o->asked[i]) == 0;
        if (!found)
            return zs_err_set(e, ZS_EINVALID, who, "add the option's row to the method's table",
                              "method '%s' reads option '%s', which its option table does not "
                              "declare",
                              who, o->asked[i]);
    }
    return ZS_OK;
}

int zs_opts_check_used(const zs_opts *o, const char *who, const zs_opt_spec *const *specs,
                       zs_err *e)
{
    for (int i = 0; i < o->n; i++) {
        if (o->used[i])
            continue;
        char fix[600], keys[400] = "";
        zs_suggest sg;
        zs_suggest_init(&sg, o->key[i]);
        size_t off = 0;
        for (int k = 0; specs && specs[k] && off < sizeof keys; k++) {
            zs_suggest_add(&sg, specs[k]->key);
            off += (size_t)snprintf(keys + off, sizeof keys - off, "%s%s", k ? ", " : "",
                                    specs[k]->key);
        }
        zs_suggest_phrase(&sg, fix, sizeof fix);
        if (keys[0])
            snprintf(fix + strlen(fix), sizeof fix - strlen(fix), "%s reads: %s", who, keys);
        else
            snprintf(fix + strlen(fix), sizeof fix - strlen(fix), "%s reads no options", who);
        return zs_err_set(e, ZS_EUSAGE, "--opt", fix, "method '%s' has no option '%s'", who,
                          o->key[i]);
    }
    return ZS_OK;
}

void zs_opts_format(const zs_opts *o, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < o->n && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s=%s", i ? "," : "", o->key[i], o->val[i]);
}

/* ---- field rows --------------------------------------------------------- */

const zs_opt_spec *zs_opt_find(const zs_opt_spec *rows, int n, const char *cli, const char *key)
{
    for (int i = 0; i < n; i++)
        if ((cli && rows[i].cli && !strcmp(rows[i].cli, cli)) ||
            (key && rows[i].key && !strcmp(rows[i].key, key)))
            return &rows[i];
    return NULL;
}

const char *zs_opt_default(const zs_opt_spec *s)
{
    return s->type == ZS_OPT_RANGE ? "all" : s->deftext ? s->deftext : "";
}

/* The option's name in messages: its spec key, else its flag. */
static const char *name_of(const zs_opt_spec *s)
{
    return s->key ? s->key : s->cli;
}

/* "256K", "2M": a token count with a binary suffix (K = 1024, M = 2^20,
 * G = 2^30), as `cost --bytes` takes sizes and as the papers write
 * contexts (issue 35 item 7). -1 when text has no suffix. */
static int with_suffix(const zs_opt_spec *s, const char *text, int code, const char *where,
                       int64_t *out, zs_err *e)
{
    size_t n = strlen(text);
    int sh = n > 1 ? (text[n - 1] == 'K' || text[n - 1] == 'k'   ? 10
                      : text[n - 1] == 'M' || text[n - 1] == 'm' ? 20
                      : text[n - 1] == 'G' || text[n - 1] == 'g' ? 30
                                                                 : 0)
                   : 0;
    if (!sh)
        return -1;
    char num[64];
    snprintf(num, sizeof num, "%.*s", (int)(n - 1), text);
    int64_t v;
    char fix[160];
    snprintf(fix, sizeof fix,
             "give a whole number with an optional K, M or G (x1024) in [%lld, %llu]",
             (long long)s->min, (unsigned long long)s->max);
    if (zs_num_i64(num, 0, INT64_MAX >> sh, code, where, &v, e) || (v << sh) < s->min ||
        (v << sh) > s->max)
        return zs_err_set(e, code, where, fix, "bad value '%s'", text);
    *out = v << sh;
    return ZS_OK;
}

static int parse_str(const zs_opt_spec *s, const char *text, int code, const char *where, char *dst,
                     zs_err *e)
{
    if (!*text && zs_opt_default(s)[0])
        return zs_err_set(e, code, where, "give a value", "'%s' must not be empty", name_of(s));
    if (strlen(text) >= s->size)
        return zs_err_set(e, code, where, "shorten the value",
                          "'%s' is too long (at most %zu characters)", name_of(s), s->size - 1);
    memcpy(dst, text, strlen(text) + 1);
    return ZS_OK;
}

/* Appends "k=v[,k=v]" to the options in dst. */
static int append_opts(const zs_opt_spec *s, const char *text, int code, const char *where,
                       char *dst, zs_err *e)
{
    for (const char *p = text; *p; p++)
        if (isspace((unsigned char)*p))
            return zs_err_set(e, code, where, "write them as k=v,k=v without spaces",
                              "method options '%s' contain a space", text);
    size_t cur = strlen(dst), len = strlen(text);
    if (!len)
        return ZS_OK;
    if (cur + len + 2 > s->size)
        return zs_err_set(e, code, where, "give fewer or shorter options",
                          "method options too long (at most %zu characters)", s->size - 1);
    snprintf(dst + cur, s->size - cur, "%s%s", cur ? "," : "", text);
    return ZS_OK;
}

static int parse_range(const zs_opt_spec *s, const char *text, int code, const char *where, int *lo,
                       int *hi, zs_err *e)
{
    char a[32], b[32];
    const char *dash = strchr(text, '-');
    size_t la = dash ? (size_t)(dash - text) : strlen(text);
    int64_t x, y;
    int ok = la < sizeof a && (!dash || strlen(dash + 1) < sizeof b);
    if (ok) {
        snprintf(a, sizeof a, "%.*s", (int)la, text);
        snprintf(b, sizeof b, "%s", dash ? dash + 1 : a);
        ok = !zs_num_i64(a, s->min, s->max, code, where, &x, NULL) &&
             !zs_num_i64(b, s->min, s->max, code, where, &y, NULL) && x <= y;
    }
    if (!ok) {
        char fix[160];
        snprintf(fix, sizeof fix, "give A or A-B with %lld <= A <= B <= %lld", (long long)s->min,
                 (long long)s->max);
        return zs_err_set(e, code, where, fix, "bad range '%s'", text);
    }
    *lo = (int)x;
    *hi = (int)y;
    return ZS_OK;
}

/* An integer into a field of 4 bytes (int) or 8 (int64_t, long). */
static void store_int(void *dst, size_t size, int64_t v)
{
    if (size == sizeof(int64_t))
        *(int64_t *)dst = v;
    else
        *(int *)dst = (int)v;
}

static int parse_int(const zs_opt_spec *s, const char *text, int code, const char *where, void *dst,
                     zs_err *e)
{
    int64_t v;
    int rc;
    if (!*text && !zs_opt_default(s)[0]) { /* no default: 0, "not given" (nodes: the cluster's) */
        store_int(dst, s->size, 0);
        return ZS_OK;
    }
    if (s->type == ZS_OPT_I64 && (rc = with_suffix(s, text, code, where, &v, e)) != -1) {
        if (rc)
            return rc;
    } else if ((rc = zs_num_i64(text, s->min, s->max, code, where, &v, e))) {
        return rc;
    }
    store_int(dst, s->size, v);
    return ZS_OK;
}

static int parse_enum(const zs_opt_spec *s, const char *text, int code, const char *where, int *dst,
                      zs_err *e)
{
    int i = enum_index(s->values, text);
    if (i >= 0) {
        *dst = i;
        return ZS_OK;
    }
    char fix[128];
    snprintf(fix, sizeof fix, "use %s", s->values);
    return zs_err_set(e, code, where, fix, "bad %s '%s'", name_of(s), text);
}

int zs_opt_parse(const zs_opt_spec *s, const char *text, int code, const char *where, void *base,
                 zs_err *e)
{
    char *dst = (char *)base + s->off;
    int rc;
    if (s->syntax && *text && (rc = s->syntax(text, code, where, e)))
        return rc;
    switch (s->type) {
    case ZS_OPT_STR:
        return parse_str(s, text, code, where, dst, e);
    case ZS_OPT_TEXT:
        *(const char **)(void *)dst = text;
        return ZS_OK;
    case ZS_OPT_OPTS:
        return append_opts(s, text, code, where, dst, e);
    case ZS_OPT_OPTSET:
        return append_opts(s, s->values, code, where, dst, e);
    case ZS_OPT_ENUM:
        return parse_enum(s, text, code, where, (int *)(void *)dst, e);
    case ZS_OPT_RANGE:
        if (!*text) { /* the default: all */
            *(int *)(void *)dst = *(int *)(void *)((char *)base + s->off2) = -1;
            return ZS_OK;
        }
        return parse_range(s, text, code, where, (int *)(void *)dst,
                           (int *)(void *)((char *)base + s->off2), e);
    case ZS_OPT_BOOL:
    case ZS_OPT_FLAG:
    case ZS_OPT_INT:
    case ZS_OPT_I64:
        return parse_int(s, text, code, where, dst, e);
    case ZS_OPT_F64:
        if (!*text && !zs_opt_default(s)[0]) { /* no default: 0, "not given" */
            *(double *)(void *)dst = 0;
            return ZS_OK;
        }
        return zs_num_f64(text, (double)s->min, (double)s->max, code, where, (double *)(void *)dst,
                          e);
    case ZS_OPT_PARSE:
        if (!(rc = s->set(text, base, e)))
            return ZS_OK;
        if (e) {
            e->code = code;
            if (!e->where[0])
                snprintf(e->where, sizeof e->where, "%s", where);
        }
        return code;
    case ZS_OPT_U64: {
        uint64_t u;
        if ((rc = zs_num_u64(text, (uint64_t)s->min, (uint64_t)s->max, code, where, &u, e)))
            return rc;
        *(uint64_t *)(void *)dst = u;
        return ZS_OK;
    }
    }
    return zs_err_set(e, ZS_EINVALID, where, NULL, "option of unknown type");
}

int zs_opt_check(const zs_opt_spec *s, void *base, int code, const char *where, zs_err *e)
{
    char *val = (char *)base + s->off;
    size_t n = s->size;
    if (s->type == ZS_OPT_TEXT) { /* the given text itself: checked, never rewritten */
        val = *(char **)(void *)val;
        n = 0;
    }
    if (!s->check || !val || !*val)
        return ZS_OK;
    int rc = s->check(val, n, code, e);
    if (rc && !e->where[0] && where)
        snprintf(e->where, sizeof e->where, "%s", where);
    return rc;
}

void zs_opt_defaults(const zs_opt_spec *rows, int n, void *base)
{
    /* The tables' defaults parse (unit tests check every row). */
    for (int i = 0; i < n; i++)
        if (rows[i].type == ZS_OPT_TEXT) /* the default is text that outlives the parse */
            *(const char **)(void *)((char *)base + rows[i].off) = rows[i].deftext;
        else if ((rows[i].type == ZS_OPT_PARSE && rows[i].deftext) ||
                 (rows[i].type != ZS_OPT_OPTSET && rows[i].type != ZS_OPT_PARSE && rows[i].size))
            zs_opt_parse(&rows[i], rows[i].deftext ? rows[i].deftext : "", ZS_EINPUT, "default",
                         base, NULL);
}
