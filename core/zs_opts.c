/* Method options: see zs_opts.h. */
#include "zs_opts.h"

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
        snprintf(range, sizeof range, ">= %ld, ", s->min);
    else if (s->type == ZS_OPT_INT)
        snprintf(range, sizeof range, "%ld..%ld, ", s->min, s->max);
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
