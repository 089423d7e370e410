/* Result tables: see zs_table.h. */
#include "zs_table.h"

#include <float.h>
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
    char **vals;          /* a number's full-precision JSON text, or NULL */
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
    for (long i = 0; i < (long)t->nrows * ZS_TABLE_MAXCOLS; i++) {
        free(t->cells[i]);
        free(t->vals[i]);
    }
    free(t->cells);
    free(t->vals);
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
        char **v = realloc(t->vals, sizeof(char *) * (size_t)nc * ZS_TABLE_MAXCOLS);
        if (!v)
            return ZS_ENOMEM;
        t->vals = v;
        unsigned char *k = realloc(t->kinds, (size_t)nc * ZS_TABLE_MAXCOLS);
        if (!k)
            return ZS_ENOMEM;
        t->kinds = k;
        t->cap = nc;
    }
    size_t at = (size_t)t->nrows * ZS_TABLE_MAXCOLS;
    memset(t->cells + at, 0, sizeof(char *) * ZS_TABLE_MAXCOLS);
    memset(t->vals + at, 0, sizeof(char *) * ZS_TABLE_MAXCOLS);
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
    free(t->vals[at]);
    t->cells[at] = NULL;
    t->vals[at] = NULL;
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

/* v at DBL_DIG (15) significant digits: every digit a double carries in
 * decimal, and what the JSON writer prints (zs_output.c), so CSV and JSON
 * agree; "-0" reads as 0. */
static void exact_text(double v, char *buf, size_t n)
{
    snprintf(buf, n, "%.*g", DBL_DIG, v);
    if (!strcmp(buf, "-0"))
        snprintf(buf, n, "0");
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
    if (!zs_json_number(buf))
        return put(t, col, buf, ZS_CELL_TEXT);
    return zs_table_num_as(t, col, buf, v);
}

int zs_table_num_as(zs_table *t, int col, const char *text, double v)
{
    if (!isfinite(v))
        return put(t, col, "", ZS_CELL_NULL);
    int rc = put(t, col, text, ZS_CELL_NUM);
    if (rc)
        return rc;
    /* scripts get every digit; people get the rounded text */
    char exact[64];
    exact_text(v, exact, sizeof exact);
    size_t at = (size_t)(t->nrows - 1) * ZS_TABLE_MAXCOLS + (size_t)col;
    return (t->vals[at] = sdup(exact)) ? ZS_OK : ZS_ENOMEM;
}

int zs_table_str(zs_table *t, int col, const char *s)
{
    return put(t, col, s, ZS_CELL_TEXT);
}

int zs_table_numtext(zs_table *t, int col, const char *text)
{
    return put(t, col, text, zs_json_number(text) ? ZS_CELL_NUM : ZS_CELL_TEXT);
}

zs_table *zs_table_kv_new(const char *title)
{
    zs_table *t = zs_table_new(title);
    if (t && (zs_table_col(t, "key", ZS_COL_TEXT) || zs_table_col(t, "value", ZS_COL_MIXED) ||
              zs_table_col(t, "unit", ZS_COL_TEXT) || zs_table_col(t, "note", ZS_COL_TEXT))) {
        zs_table_free(t);
        return NULL;
    }
    return t;
}

int zs_table_kv_num(zs_table *t, const char *key, const char *unit, const char *fmt, double v)
{
    int rc = zs_table_row(t);
    if (!rc && !(rc = zs_table_str(t, 0, key)) && !(rc = zs_table_num(t, 1, fmt, v)) && unit &&
        *unit)
        rc = zs_table_str(t, 2, unit);
    return rc;
}

int zs_table_kv_text(zs_table *t, const char *key, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    int rc = zs_table_row(t);
    if (!rc && !(rc = zs_table_str(t, 0, key)))
        rc = zs_table_str(t, 1, buf);
    return rc;
}

int zs_table_kv_note(zs_table *t, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return zs_table_str(t, 3, buf);
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
    if (zs_table_kind(t, row, col) == ZS_CELL_NUM) {
        const char *v = t->vals[(size_t)row * ZS_TABLE_MAXCOLS + (size_t)col];
        if (v)
            return v;
    }
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

/* Whether t has zs_table_kv_new's columns. */
static int is_kv(const zs_table *t)
{
    return t->ncols == 4 && !strcmp(t->names[0], "key") && !strcmp(t->names[1], "value") &&
           !strcmp(t->names[2], "unit") && !strcmp(t->names[3], "note");
}

/* The value cell of row r of a key/value table for people: a number
 * right-aligned in wn with its unit after it, a text as it is. */
static void kv_value(const zs_table *t, int r, int wn, char *v, size_t n)
{
    const char *u = zs_table_text(t, r, 2);
    if (zs_table_kind(t, r, 1) == ZS_CELL_NUM)
        snprintf(v, n, "%*s%s%s", wn, zs_table_text(t, r, 1), *u ? " " : "", u);
    else
        snprintf(v, n, "%s%s%s", zs_table_text(t, r, 1), *u ? " " : "", u);
}

/* A key/value table for people: "key  value unit  note", numbers lined
 * up, the notes after the numbers and short texts (a long text runs on). */
static void print_kv(const zs_table *t, FILE *out)
{
    enum { LONG = 40 };
    int wk = 3, wn = 0, wv = 5;
    char v[1200];
    for (int r = 0; r < t->nrows; r++) {
        int lk = (int)strlen(zs_table_text(t, r, 0)), ln = (int)strlen(zs_table_text(t, r, 1));
        wk = lk > wk ? lk : wk;
        wn = zs_table_kind(t, r, 1) == ZS_CELL_NUM && ln > wn ? ln : wn;
    }
    for (int r = 0; r < t->nrows; r++) {
        kv_value(t, r, wn, v, sizeof v);
        int lv = (int)strlen(v);
        wv = lv > wv && lv <= LONG ? lv : wv;
    }
    if (t->title)
        fprintf(out, "%s\n", t->title);
    fprintf(out, "%-*s  %-*s  note\n", wk, "key", wv, "value");
    for (int i = 0; i < wk + wv + 8; i++)
        fputc(i == wk || i == wk + 1 || i == wk + wv + 2 || i == wk + wv + 3 ? ' ' : '-', out);
    fputc('\n', out);
    for (int r = 0; r < t->nrows; r++) {
        kv_value(t, r, wn, v, sizeof v);
        const char *n = zs_table_text(t, r, 3);
        if (*n)
            fprintf(out, "%-*s  %-*s  %s\n", wk, zs_table_text(t, r, 0), wv, v, n);
        else
            fprintf(out, "%-*s  %s\n", wk, zs_table_text(t, r, 0), v);
    }
}

void zs_table_print_text(const zs_table *t, FILE *out)
{
    if (is_kv(t)) {
        print_kv(t, out);
        return;
    }
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
