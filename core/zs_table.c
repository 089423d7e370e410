/* Result tables: see zs_table.h. */
#include "zs_table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define ZS_TABLE_MAXCOLS 64

struct zs_table {
    char *title;
    int ncols, nrows, cap;
    char *names[ZS_TABLE_MAXCOLS];
    int numeric[ZS_TABLE_MAXCOLS];
    char **cells; /* nrows * ZS_TABLE_MAXCOLS, NULL for empty */
};

int zs_format_parse(const char *s, zs_format *out, zs_err *e)
{
    if (strcmp(s, "table") == 0)
        *out = ZS_FMT_TABLE;
    else if (strcmp(s, "csv") == 0)
        *out = ZS_FMT_CSV;
    else if (strcmp(s, "json") == 0)
        *out = ZS_FMT_JSON;
    else
        return zs_err_set(e, ZS_EUSAGE, "--format", "use table, csv or json",
                          "unknown output format '%s'", s);
    return ZS_OK;
}

static char *sdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

zs_table *zs_table_new(const char *title)
{
    zs_table *t = calloc(1, sizeof *t);
    if (t && title && !(t->title = sdup(title))) {
        free(t);
        return NULL;
    }
    return t;
}

void zs_table_free(zs_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ncols; i++)
        free(t->names[i]);
    for (long i = 0; i < (long)t->nrows * ZS_TABLE_MAXCOLS; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->title);
    free(t);
}

int zs_table_col(zs_table *t, const char *name, int numeric)
{
    if (t->ncols >= ZS_TABLE_MAXCOLS || !(t->names[t->ncols] = sdup(name)))
        return ZS_ENOMEM;
    t->numeric[t->ncols++] = numeric;
    return ZS_OK;
}

int zs_table_row(zs_table *t)
{
    if (t->nrows == t->cap) {
        int nc = t->cap ? t->cap * 2 : 16;
        char **c = realloc(t->cells, sizeof(char *) * (size_t)nc * ZS_TABLE_MAXCOLS);
        if (!c)
            return ZS_ENOMEM;
        t->cells = c;
        t->cap = nc;
    }
    memset(t->cells + (size_t)t->nrows * ZS_TABLE_MAXCOLS, 0, sizeof(char *) * ZS_TABLE_MAXCOLS);
    t->nrows++;
    return ZS_OK;
}

int zs_table_set(zs_table *t, int col, const char *fmt, ...)
{
    if (t->nrows == 0 || col < 0 || col >= t->ncols)
        return ZS_EINVALID;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **cell = &t->cells[(size_t)(t->nrows - 1) * ZS_TABLE_MAXCOLS + col];
    free(*cell);
    *cell = sdup(buf);
    return *cell ? ZS_OK : ZS_ENOMEM;
}

int zs_table_nrows(const zs_table *t)
{
    return t->nrows;
}

static const char *cell(const zs_table *t, int r, int c)
{
    const char *s = t->cells[(size_t)r * ZS_TABLE_MAXCOLS + c];
    return s ? s : "";
}

static void print_csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
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

static void print_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

/* A numeric cell is emitted bare in JSON only if it really is a number. */
static int is_number(const char *s)
{
    if (!*s)
        return 0;
    char *end;
    strtod(s, &end);
    return *end == '\0' && !strpbrk(s, "xXnNiI");
}

void zs_table_print(const zs_table *t, FILE *out, zs_format fmt)
{
    if (fmt == ZS_FMT_CSV) {
        for (int c = 0; c < t->ncols; c++) {
            if (c)
                fputc(',', out);
            print_csv_field(out, t->names[c]);
        }
        fputc('\n', out);
        for (int r = 0; r < t->nrows; r++) {
            for (int c = 0; c < t->ncols; c++) {
                if (c)
                    fputc(',', out);
                print_csv_field(out, cell(t, r, c));
            }
            fputc('\n', out);
        }
        return;
    }
    if (fmt == ZS_FMT_JSON) {
        fputs("[", out);
        for (int r = 0; r < t->nrows; r++) {
            fputs(r ? ",\n {" : "\n {", out);
            for (int c = 0; c < t->ncols; c++) {
                if (c)
                    fputs(", ", out);
                print_json_string(out, t->names[c]);
                fputs(": ", out);
                const char *s = cell(t, r, c);
                if (!*s)
                    fputs("null", out);
                else if (t->numeric[c] && is_number(s))
                    fputs(s, out);
                else
                    print_json_string(out, s);
            }
            fputs("}", out);
        }
        fputs("\n]\n", out);
        return;
    }
    int w[ZS_TABLE_MAXCOLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->names[c]);
        for (int r = 0; r < t->nrows; r++) {
            int l = (int)strlen(cell(t, r, c));
            if (l > w[c])
                w[c] = l;
        }
    }
    if (t->title)
        fprintf(out, "%s\n", t->title);
    for (int c = 0; c < t->ncols; c++) {
        if (c == t->ncols - 1 && !(t->numeric[c] && c))
            fprintf(out, c ? "  %s" : "%s", t->names[c]);
        else
            fprintf(out, c ? "  %*s" : "%-*s", t->numeric[c] && c ? w[c] : -w[c], t->names[c]);
    }
    fputc('\n', out);
    for (int c = 0; c < t->ncols; c++) {
        fputs(c ? "  " : "", out);
        for (int i = 0; i < w[c]; i++)
            fputc('-', out);
    }
    fputc('\n', out);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            /* No padding after a left-aligned last column: no trailing blanks. */
            int last_left = c == t->ncols - 1 && !(t->numeric[c] && c);
            if (last_left)
                fprintf(out, c ? "  %s" : "%s", cell(t, r, c));
            else
                fprintf(out, c ? "  %*s" : "%-*s", t->numeric[c] && c ? w[c] : -w[c],
                        cell(t, r, c));
        }
        fputc('\n', out);
    }
}
