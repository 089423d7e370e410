/* Traces: see zs_trace.h. */
#include "zs_trace.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

zs_trace *zs_trace_new(const char *source)
{
    zs_trace *t = calloc(1, sizeof *t);
    if (t && source)
        snprintf(t->source, sizeof t->source, "%s", source);
    return t;
}

void zs_trace_free(zs_trace *t)
{
    if (!t)
        return;
    free(t->len);
    free(t);
}

int zs_trace_reserve(zs_trace *t, int64_t cap, zs_err *e)
{
    if (cap <= t->cap)
        return ZS_OK;
    int32_t *p = realloc(t->len, sizeof(int32_t) * (size_t)cap);
    if (!p)
        return zs_err_set(e, ZS_ENOMEM, t->source, NULL, "out of memory for %lld lengths",
                          (long long)cap);
    t->len = p;
    t->cap = cap;
    return ZS_OK;
}

int zs_trace_push(zs_trace *t, int32_t len, zs_err *e)
{
    if (t->n == t->cap) {
        int rc = zs_trace_reserve(t, t->cap ? t->cap * 2 : 1024, e);
        if (rc)
            return rc;
    }
    t->len[t->n++] = len;
    return ZS_OK;
}

int64_t zs_trace_tokens(const zs_trace *t)
{
    int64_t s = 0;
    for (int64_t i = 0; i < t->n; i++)
        s += t->len[i];
    return s;
}

static const char *const format_names[] = {"auto", "lines", "csv", "json"};

int zs_trace_format_parse(const char *s, zs_trace_format *out, zs_err *e)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, format_names[i]) == 0) {
            *out = (zs_trace_format)i;
            return ZS_OK;
        }
    return zs_err_set(e, ZS_EUSAGE, "--trace-format", "use auto, lines, csv or json",
                      "unknown trace format '%s'", s);
}

const char *zs_trace_format_name(zs_trace_format f)
{
    return (unsigned)f < 4 ? format_names[f] : "?";
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

zs_trace_format zs_trace_format_from_path(const char *path)
{
    if (ends_with(path, ".lengths") || ends_with(path, ".len") || ends_with(path, ".txt"))
        return ZS_TRACE_FMT_LINES;
    if (ends_with(path, ".csv"))
        return ZS_TRACE_FMT_CSV;
    if (ends_with(path, ".json"))
        return ZS_TRACE_FMT_JSON;
    return ZS_TRACE_FMT_AUTO;
}

int zs_trace_write(const zs_trace *t, FILE *f, zs_trace_format fmt, const char *comment, zs_err *e)
{
    if (fmt == ZS_TRACE_FMT_CSV) {
        fputs("length\n", f);
    } else if (fmt == ZS_TRACE_FMT_JSON) {
        fputc('[', f);
    } else if (comment) {
        /* Every line of the comment gets its '#', so a multi-line note cannot
         * turn into data. */
        for (const char *p = comment; *p;) {
            const char *nl = strchr(p, '\n');
            size_t k = nl ? (size_t)(nl - p) : strlen(p);
            fprintf(f, "# %.*s\n", (int)k, p);
            p += k + (nl ? 1 : 0);
        }
    }
    for (int64_t i = 0; i < t->n; i++) {
        if (fmt == ZS_TRACE_FMT_JSON)
            fprintf(f, "%s%s%d", i ? "," : "", i % 16 == 0 ? "\n " : " ", t->len[i]);
        else
            fprintf(f, "%d\n", t->len[i]);
    }
    if (fmt == ZS_TRACE_FMT_JSON)
        fputs("\n]\n", f);
    if (fflush(f) != 0 || ferror(f))
        return zs_err_set(e, ZS_EIO, t->source, "check the disk space and the path",
                          "cannot write the trace");
    return ZS_OK;
}
