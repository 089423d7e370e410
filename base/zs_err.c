/* Error reporting: see zs_err.h. */
#include "zs_err.h"

#include <stdarg.h>
#include <string.h>

void zs_err_clear(zs_err *e)
{
    if (e)
        memset(e, 0, sizeof *e);
}

int zs_err_set(zs_err *e, int code, const char *where, const char *fix, const char *fmt, ...)
{
    if (!e)
        return code;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->what, sizeof e->what, fmt, ap);
    va_end(ap);
    snprintf(e->where, sizeof e->where, "%s", where ? where : "");
    snprintf(e->fix, sizeof e->fix, "%s", fix ? fix : "");
    return code;
}

void zs_err_prefix_where(zs_err *e, const char *prefix)
{
    if (!e || !prefix || !*prefix)
        return;
    char buf[sizeof e->where];
    if (e->where[0])
        snprintf(buf, sizeof buf, "%s:%s", prefix, e->where);
    else
        snprintf(buf, sizeof buf, "%s", prefix);
    memcpy(e->where, buf, sizeof buf);
}

void zs_err_format(const zs_err *e, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s%s%s", e->what[0] ? e->what : zs_status_name(e->code),
             e->where[0] ? ": " : "", e->where, e->fix[0] ? ": " : "", e->fix);
}

void zs_err_print(FILE *out, const zs_err *e)
{
    fprintf(out, "zepsim: %s", e->what[0] ? e->what : zs_status_name(e->code));
    if (e->where[0])
        fprintf(out, ": %s", e->where);
    if (e->fix[0])
        fprintf(out, ": %s", e->fix);
    fputc('\n', out);
}

int zs_err_exit_code(int code)
{
    switch (code) {
    case ZS_OK:
        return 0;
    case ZS_EINPUT:
    case ZS_EUSAGE:
        return 2;
    default:
        return 1;
    }
}

const char *zs_status_name(int code)
{
    switch (code) {
    case ZS_OK:
        return "ok";
    case ZS_EINPUT:
        return "bad input";
    case ZS_EUSAGE:
        return "bad usage";
    case ZS_EIO:
        return "i/o error";
    case ZS_ENOMEM:
        return "out of memory";
    case ZS_ERUNTIME:
        return "runtime failure";
    case ZS_EINVALID:
        return "invalid plan";
    case ZS_EUNSUPPORTED:
        return "unsupported";
    default:
        return "unknown error";
    }
}
