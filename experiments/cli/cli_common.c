/* Shared pieces of the command-line front end: see cli.h. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "zs_calib.h"
#include "zs_num.h"
#include "zs_timeline.h"

int zs_cli_fail(const zs_err *e)
{
    zs_err_print(stderr, e);
    return zs_err_exit_code(e->code);
}

int zs_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "zepsim: %s: zepsim %s: see `zepsim %s --help`\n", buf, cmd, cmd);
    return 2;
}

void zs_cli_reset_getopt(void)
{
    optind = 0; /* glibc: 0 fully reinitialises getopt's state */
    opterr = 0;
}

int zs_cli_parse_int(const char *opt, const char *s, long min, long max, long *out, zs_err *e)
{
    int64_t v;
    int rc = zs_num_i64(s, min, max, ZS_EUSAGE, opt, &v, e);
    if (!rc)
        *out = (long)v;
    return rc;
}

int zs_cli_parse_double(const char *opt, const char *s, double min, double max, double *out,
                        zs_err *e)
{
    return zs_num_f64(s, min, max, ZS_EUSAGE, opt, out, e);
}

int zs_cli_bad_option(const char *cmd, int c, char **argv)
{
    if (c == ':')
        return zs_cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    if (optopt)
        return zs_cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return zs_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

void zs_cli_timeline_done(FILE *out, const char *label, const char *path, double bytes)
{
    fprintf(out, "timeline%s%s: %s (%.1f MB of JSON)\n", label ? " " : "", label ? label : "", path,
            bytes / 1e6);
    if (bytes > ZS_TL_WARN_BYTES)
        fprintf(stderr,
                "zepsim: warning: timeline %s is %.0f MB of JSON: chrome://tracing stops at "
                "256 MB and Perfetto slows down: write fewer ranks or layers with "
                "--timeline-ranks A-B / --timeline-layers A-B\n",
                path, bytes / 1e6);
}

int zs_cli_nccl_opt(int code, const char *arg, struct zs_meas_set *s, zs_err *e)
{
    const char *where = code == ZS_CLI_NCCL_COLUMN ? "--nccl-column"
                        : code == ZS_CLI_NCCL_ALGO ? "--nccl-algo"
                                                   : "--nccl-proto";
    int rc = ZS_OK;
    if (code == ZS_CLI_NCCL_COLUMN) {
        if (strcmp(arg, "out-of-place") == 0 || strcmp(arg, "in-place") == 0)
            s->nccl_inplace = arg[0] == 'i';
        else
            rc = zs_err_set(e, ZS_EUSAGE, where, "use out-of-place or in-place",
                            "unknown nccl-tests column '%s'", arg);
    } else if (code == ZS_CLI_NCCL_ALGO) {
        rc = zs_nccl_algo_mask_parse(arg, &s->nccl_algo_mask, e);
    } else {
        rc = zs_nccl_proto_mask_parse(arg, &s->nccl_proto_mask, e);
    }
    if (rc) {
        e->code = ZS_EUSAGE;
        snprintf(e->where, sizeof e->where, "%s", where);
    }
    return rc;
}
