/* Shared pieces of the command-line front end: see cli.h. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "zs_afile.h"
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

int zs_cli_parse_int_list(const char *opt, const char *s, long max, int *v, int cap, int *n,
                          zs_err *e)
{
    char buf[512];
    if (strlen(s) >= sizeof buf)
        return zs_err_set(e, ZS_EUSAGE, opt, "give a shorter list", "the list is too long");
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long x;
        if (*n == cap)
            return zs_err_set(e, ZS_EUSAGE, opt, "give fewer values", "more than %d values", cap);
        int rc = zs_cli_parse_int(opt, tok, 1, max, &x, e);
        if (rc)
            return rc;
        v[(*n)++] = (int)x;
    }
    if (*n == 0)
        return zs_err_set(e, ZS_EUSAGE, opt, "give at least one value", "empty list");
    return ZS_OK;
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

void zs_cli_timeline_done(FILE *out, const char *label, const char *path, double bytes,
                          const char *subset)
{
    fprintf(out, "timeline%s%s: %s (%.1f MB of JSON)\n", label ? " " : "", label ? label : "", path,
            bytes / 1e6);
    if (subset && subset[0])
        fprintf(stderr, "zepsim: note: timeline %s holds %s\n", path, subset);
    if (bytes > ZS_TL_WARN_BYTES)
        fprintf(stderr,
                "zepsim: warning: timeline %s is %.0f MB of JSON: chrome://tracing stops at "
                "256 MB and Perfetto slows down: write fewer ranks or layers with "
                "--timeline-ranks 0,5,17-20 / --timeline-layers A-B\n",
                path, bytes / 1e6);
}

static int ends_with(const char *s, const char *ext)
{
    size_t ls = strlen(s), le = strlen(ext);
    return ls > le && !strcasecmp(s + ls - le, ext);
}

const char *zs_cli_plot_terminal(const char *path, int w, int h, char *buf, size_t n)
{
    if (ends_with(path, ".png"))
        snprintf(buf, n, "set terminal pngcairo size %d,%d noenhanced", w, h);
    else if (ends_with(path, ".svg"))
        snprintf(buf, n, "set terminal svg size %d,%d noenhanced", w, h);
    else if (ends_with(path, ".pdf")) /* pdfcairo sizes in inches */
        snprintf(buf, n, "set terminal pdfcairo size %.1fin,%.1fin noenhanced", w / 100.0,
                 h / 100.0);
    else
        return NULL;
    return buf;
}

int zs_cli_plot_check(const char *path, zs_err *e)
{
    char buf[128];
    if (!path || !strcmp(path, "none") || zs_cli_plot_terminal(path, 1, 1, buf, sizeof buf))
        return ZS_OK;
    return zs_err_set(e, ZS_EUSAGE, "--plot", "name a .png, .svg or .pdf file, or none",
                      "cannot tell the plot format of '%s' from its extension", path);
}

int zs_cli_gnuplot_draw(const char *path, int w, int h, void (*data)(FILE *f, const void *arg),
                        void (*script)(FILE *f, const char *out, const char *dat, const void *arg),
                        const void *arg)
{
    char dat[1100], gp[1100], term[128];
    snprintf(dat, sizeof dat, "%s.dat", path);
    snprintf(gp, sizeof gp, "%s.gp", path);
    zs_afile ad, ag, ap;
    zs_err e;
    if (zs_afile_open(&ad, dat, &e))
        return -1;
    data(ad.f, arg);
    if (zs_afile_commit(&ad, &e))
        return -1;
    if (system("command -v gnuplot >/dev/null 2>&1") != 0)
        return 1; /* the data stays for another tool */
    if (zs_afile_reserve(&ap, path, &e))
        return -1;
    if (zs_afile_open(&ag, gp, &e)) {
        zs_afile_abort(&ap);
        return -1;
    }
    zs_cli_plot_terminal(path, w, h, term, sizeof term);
    fprintf(ag.f, "%s\n", term);
    script(ag.f, ap.tmp, dat, arg);
    if (zs_afile_commit(&ag, &e)) {
        zs_afile_abort(&ap);
        return -1;
    }
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>/dev/null", gp);
    int rc = system(cmd) == 0 && zs_afile_commit(&ap, &e) == ZS_OK ? 0 : -1;
    zs_afile_abort(&ap); /* a no-op once committed */
    remove(gp);
    return rc;
}

void zs_cli_gnuplot(const char *path, int w, int h, void (*data)(FILE *f, const void *arg),
                    void (*script)(FILE *f, const char *out, const char *dat, const void *arg),
                    const void *arg)
{
    int rc = zs_cli_gnuplot_draw(path, w, h, data, script, arg);
    if (rc == 0)
        fprintf(stderr, "plot written to %s\n", path);
    else
        fprintf(stderr, "zepsim: gnuplot not found or failed: no plot written (data in %s.dat)\n",
                path);
}

int zs_cli_doc_end(zs_output *d)
{
    if (!d) {
        fprintf(stderr, "zepsim: out of memory writing the output\n");
        return 1;
    }
    int rc = zs_output_end(d);
    zs_output_free(d);
    if (rc) {
        fprintf(stderr, "zepsim: cannot write the output: %s\n",
                rc == ZS_EIO ? "standard output failed" : "out of memory");
        return 1;
    }
    return 0;
}

int zs_cli_print1(const char *cmd, zs_format fmt, const char *name, zs_table *t)
{
    zs_output *d = zs_output_new(cmd, fmt, stdout);
    if (!d) {
        zs_table_free(t);
        return zs_cli_doc_end(NULL);
    }
    zs_output_table(d, name, t);
    return zs_cli_doc_end(d);
}
