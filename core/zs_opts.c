/* Method options: see zs_opts.h. */
#include "zs_opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int zs_opts_int(zs_opts *o, const char *key, long def, long min, long max, long *out, zs_err *e)
{
    const char *v = find(o, key);
    if (!v) {
        *out = def;
        return ZS_OK;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max) {
        char fix[128];
        snprintf(fix, sizeof fix, "use an integer in [%ld, %ld]", min, max);
        return zs_err_set(e, ZS_EUSAGE, key, fix, "bad value '%s' for option '%s'", v, key);
    }
    *out = x;
    return ZS_OK;
}

int zs_opts_double(zs_opts *o, const char *key, double def, double min, double max, double *out,
                   zs_err *e)
{
    const char *v = find(o, key);
    if (!v) {
        *out = def;
        return ZS_OK;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < min || x > max) {
        char fix[128];
        snprintf(fix, sizeof fix, "use a number in [%g, %g]", min, max);
        return zs_err_set(e, ZS_EUSAGE, key, fix, "bad value '%s' for option '%s'", v, key);
    }
    *out = x;
    return ZS_OK;
}

int zs_opts_bool(zs_opts *o, const char *key, int def, int *out, zs_err *e)
{
    const char *v = find(o, key);
    if (!v) {
        *out = def;
        return ZS_OK;
    }
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "yes"))
        *out = 1;
    else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "no"))
        *out = 0;
    else
        return zs_err_set(e, ZS_EUSAGE, key, "use 1/0, true/false, on/off",
                          "bad value '%s' for option '%s'", v, key);
    return ZS_OK;
}

const char *zs_opts_str(zs_opts *o, const char *key, const char *def)
{
    const char *v = find(o, key);
    return v ? v : def;
}

int zs_opts_check_used(const zs_opts *o, const char *who, zs_err *e)
{
    for (int i = 0; i < o->n; i++)
        if (!o->used[i])
            return zs_err_set(e, ZS_EUSAGE, "--opt",
                              "see `zepsim plan --help` for the options each method reads",
                              "method '%s' has no option '%s'", who, o->key[i]);
    return ZS_OK;
}

void zs_opts_format(const zs_opts *o, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < o->n && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s=%s", i ? "," : "", o->key[i], o->val[i]);
}
