/* Result tables: see zs_table.h. */
#include "zs_table.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define ZS_TABLE_MAXCOLS 96

struct zs_table {
    char *title;
    int ncols, nrows, cap;
    char *names[ZS_TABLE_MAXCOLS];
    int numeric[ZS_TABLE_MAXCOLS];
    char **cells;         /* nrows * ZS_TABLE_MAXCOLS, NULL for empty */
    unsigned char *kinds; /* zs_cell_kind of each cell */
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
    free(t->kinds);
    free(t->title);
    free(t);
}

int zs_table_col(zs_table *t, const char *name, int kind)
{
    if (t->ncols >= ZS_TABLE_MAXCOLS || !(t->names[t->ncols] = sdup(name)))
        return ZS_ENOMEM;
    t->numeric[t->ncols++] = kind;
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
        unsigned char *k = realloc(t->kinds, (size_t)nc * ZS_TABLE_MAXCOLS);
        if (!k)
            return ZS_ENOMEM;
        t->kinds = k;
        t->cap = nc;
    }
    size_t at = (size_t)t->nrows * ZS_TABLE_MAXCOLS;
    memset(t->cells + at, 0, sizeof(char *) * ZS_TABLE_MAXCOLS);
    memset(t->kinds + at, ZS_CELL_NULL, ZS_TABLE_MAXCOLS);
    t->nrows++;
    return ZS_OK;
}

const char *zs_json_number(const char *s)
{
    if (*s == '+')
        s++;
    const char *p = s;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        p += strspn(p, "0123456789");
    else
        return NULL;
    if (*p == '.') {
        size_t n = strspn(++p, "0123456789");
        if (!n)
            return NULL;
        p += n;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        size_t n = strspn(p, "0123456789");
        if (!n)
            return NULL;
        p += n;
    }
    return *p ? NULL : s;
}

/* Stores text (copied) with kind in the current row's cell col. */
static int put(zs_table *t, int col, const char *text, zs_cell_kind kind)
{
    if (t->nrows == 0 || col < 0 || col >= t->ncols)
        return ZS_EINVALID;
    size_t at = (size_t)(t->nrows - 1) * ZS_TABLE_MAXCOLS + (size_t)col;
    free(t->cells[at]);
    t->cells[at] = NULL;
    t->kinds[at] = ZS_CELL_NULL;
    if (kind == ZS_CELL_NULL)
        return ZS_OK;
    if (!(t->cells[at] = sdup(text)))
        return ZS_ENOMEM;
    t->kinds[at] = (unsigned char)kind;
    return ZS_OK;
}

int zs_table_set(zs_table *t, int col, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (col >= 0 && col < t->ncols && t->numeric[col] && zs_json_number(buf))
        return put(t, col, buf, ZS_CELL_NUM); /* "+5.65" shows as written */
    return put(t, col, buf, ZS_CELL_TEXT);
}

int zs_table_num(zs_table *t, int col, const char *fmt, double v)
{
    if (!isfinite(v))
        return put(t, col, "", ZS_CELL_NULL);
    char buf[128];
    snprintf(buf, sizeof buf, fmt, v);
    /* "%.0f" of -0.4 is "-0": a JSON number, but people read 0 */
    if (!strcmp(buf, "-0") || !strcmp(buf, "+0"))
        snprintf(buf, sizeof buf, "0");
    return zs_json_number(buf) ? put(t, col, buf, ZS_CELL_NUM) : put(t, col, buf, ZS_CELL_TEXT);
}

int zs_table_str(zs_table *t, int col, const char *s)
{
    return put(t, col, s, ZS_CELL_TEXT);
}

int zs_table_numtext(zs_table *t, int col, const char *text)
{
    return put(t, col, text, zs_json_number(text) ? ZS_CELL_NUM : ZS_CELL_TEXT);
}

int zs_table_nrows(const zs_table *t)
{
    return t->nrows;
}

int zs_table_ncols(const zs_table *t)
{
    return t->ncols;
}

const char *zs_table_title(const zs_table *t)
{
    return t->title;
}

const char *zs_table_colname(const zs_table *t, int col)
{
    return col >= 0 && col < t->ncols ? t->names[col] : NULL;
}

int zs_table_col_numeric(const zs_table *t, int col)
{
    return col >= 0 && col < t->ncols && t->numeric[col] == ZS_COL_NUM;
}

int zs_table_find(const zs_table *t, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (!strcmp(t->names[c], name))
            return c;
    return -1;
}

const char *zs_table_value(const zs_table *t, int row, int col)
{
    const char *s = zs_table_text(t, row, col);
    const char *num = zs_table_kind(t, row, col) == ZS_CELL_NUM ? zs_json_number(s) : NULL;
    return num ? num : s;
}

zs_cell_kind zs_table_kind(const zs_table *t, int row, int col)
{
    if (row < 0 || row >= t->nrows || col < 0 || col >= t->ncols)
        return ZS_CELL_NULL;
    return (zs_cell_kind)t->kinds[(size_t)row * ZS_TABLE_MAXCOLS + (size_t)col];
}

const char *zs_table_text(const zs_table *t, int row, int col)
{
    if (row < 0 || row >= t->nrows || col < 0 || col >= t->ncols)
        return "";
    const char *s = t->cells[(size_t)row * ZS_TABLE_MAXCOLS + (size_t)col];
    return s ? s : "";
}

void zs_table_print_text(const zs_table *t, FILE *out)
{
    int w[ZS_TABLE_MAXCOLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->names[c]);
        for (int r = 0; r < t->nrows; r++) {
            int l = (int)strlen(zs_table_text(t, r, c));
            if (l > w[c])
                w[c] = l;
        }
    }
    if (t->title)
        fprintf(out, "%s\n", t->title);
    for (int c = 0; c < t->ncols; c++) {
        int right = t->numeric[c] == ZS_COL_NUM && c;
        if (c == t->ncols - 1 && !right)
            fprintf(out, c ? "  %s" : "%s", t->names[c]);
        else
            fprintf(out, c ? "  %*s" : "%-*s", right ? w[c] : -w[c], t->names[c]);
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
            int right = t->numeric[c] == ZS_COL_NUM && c;
            const char *s = zs_table_text(t, r, c);
            if (c == t->ncols - 1 && !right)
                fprintf(out, c ? "  %s" : "%s", s);
            else
                fprintf(out, c ? "  %*s" : "%-*s", right ? w[c] : -w[c], s);
        }
        fputc('\n', out);
    }
}
