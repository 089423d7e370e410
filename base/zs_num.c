/* Strict number parsing: see zs_num.h. */
#include "zs_num.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Text a parser accepts at all: not empty and no leading blank (strto*
 * skip those silently). */
static int starts_ok(const char *s)
{
    return s && *s && !isspace((unsigned char)*s);
}

int zs_num_i64(const char *s, int64_t min, int64_t max, int code, const char *where, int64_t *out,
               zs_err *e)
{
    char *end = NULL;
    errno = 0;
    long long v = starts_ok(s) ? strtoll(s, &end, 10) : 0;
    if (!starts_ok(s) || errno || end == s || *end || v < min || v > max) {
        char fix[128];
        snprintf(fix, sizeof fix, "give an integer in [%" PRId64 ", %" PRId64 "]", min, max);
        return zs_err_set(e, code, where, fix, "bad value '%s'", s ? s : "");
    }
    *out = (int64_t)v;
    return ZS_OK;
}

int zs_num_u64(const char *s, uint64_t min, uint64_t max, int code, const char *where,
               uint64_t *out, zs_err *e)
{
    char *end = NULL;
    errno = 0;
    int ok = starts_ok(s) && *s != '-' && *s != '+';
    unsigned long long v = ok ? strtoull(s, &end, 10) : 0;
    if (!ok || errno || end == s || *end || v < min || v > max) {
        char fix[128];
        snprintf(fix, sizeof fix, "give a whole number in [%" PRIu64 ", %" PRIu64 "]", min, max);
        return zs_err_set(e, code, where, fix, "bad value '%s'", s ? s : "");
    }
    *out = (uint64_t)v;
    return ZS_OK;
}

int zs_num_f64(const char *s, double min, double max, int code, const char *where, double *out,
               zs_err *e)
{
    char *end = NULL;
    errno = 0;
    double v = starts_ok(s) ? strtod(s, &end) : 0;
    if (!starts_ok(s) || errno == ERANGE || end == s || *end || !isfinite(v) || v < min ||
        v > max) {
        char fix[128];
        snprintf(fix, sizeof fix, "give a number in [%g, %g]", min, max);
        return zs_err_set(e, code, where, fix, "bad value '%s'", s ? s : "");
    }
    *out = v;
    return ZS_OK;
}

int zs_num_check_f64(double v, double min, double max, int code, const char *where, zs_err *e)
{
    if (isfinite(v) && v >= min && v <= max)
        return ZS_OK;
    char fix[128];
    snprintf(fix, sizeof fix, "give a number in [%g, %g]", min, max);
    return zs_err_set(e, code, where, fix, "bad value %g", v);
}
