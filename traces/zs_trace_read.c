/* Trace readers: see zs_trace_read.h.
 *
 * The lines and CSV readers are hand-written scanners over the whole file
 * held in memory: a million lengths is ~7 MB of text and parses in tens of
 * milliseconds, and a scanner knows the line and column of every value,
 * which a generic CSV library would not tell us. JSON goes through
 * jansson; since jansson reports positions only for syntax errors, a small
 * locator finds the line and column of the i-th array element when a
 * value is wrong. */
#include "zs_trace_read.h"

#include "zs_fdio.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

/* ---- shared helpers ------------------------------------------------------ */

typedef struct reader {
    const char *name;
    const char *text;
    size_t n;
    const zs_trace_read_cfg *cfg;
    zs_trace *t;
    zs_err *e;
} reader;

/* A short printable copy of a token for messages ("\x00" for odd bytes). */
static void quote_token(const char *p, const char *end, char *buf, size_t n)
{
    size_t o = 0;
    for (; p < end && *p != '\n' && *p != '\r' && o + 5 < n; p++) {
        unsigned char c = (unsigned char)*p;
        if (o >= 40) {
            o += (size_t)snprintf(buf + o, n - o, "...");
            break;
        }
        if (isprint(c))
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
    }
    buf[o < n ? o : n - 1] = '\0';
}

static int fail_at(reader *r, long line, long col, const char *fix, const char *fmt,
                   const char *token_start, const char *token_end)
{
    char where[600], tok[64];
    snprintf(where, sizeof where, "%s:%ld:%ld", r->name, line, col);
    quote_token(token_start, token_end, tok, sizeof tok);
    return zs_err_set(r->e, ZS_EINPUT, where, fix, fmt, tok);
}

static const char fix_positive[] =
    "lengths are token counts: write one whole number >= 1 per document";

/* Parses one length from [p, end) (already trimmed of blanks on the left).
 * On success returns the position after the digits and stores the value;
 * on failure fills the error (file:line:col) and returns NULL. */
static const char *parse_length(reader *r, const char *p, const char *end, long line, long col,
                                int32_t *out)
{
    const char *tok_end = p;
    while (tok_end < end && *tok_end != ',' && *tok_end != '#' && *tok_end != ']' &&
           !isspace((unsigned char)*tok_end))
        tok_end++;
    if (p < end && *p == '-') {
        fail_at(r, line, col, fix_positive, "negative length '%s'", p, tok_end);
        return NULL;
    }
    if (p >= end || !isdigit((unsigned char)*p)) {
        if (p >= end || p == tok_end)
            fail_at(r, line, col, fix_positive, "missing length%s", p, p);
        else
            fail_at(r, line, col, fix_positive, "not an integer: '%s'", p, tok_end);
        return NULL;
    }
    uint64_t v = 0;
    const char *q = p;
    while (q < end && isdigit((unsigned char)*q)) {
        if (v <= (uint64_t)ZS_TRACE_MAX_LEN)
            v = v * 10 + (uint64_t)(*q - '0');
        q++;
    }
    if (q < end && (*q == '.' || *q == 'e' || *q == 'E')) {
        fail_at(r, line, col, fix_positive, "not a whole number: '%s'", p, tok_end);
        return NULL;
    }
    if (q < tok_end) {
        fail_at(r, line, col, fix_positive, "not an integer: '%s'", p, tok_end);
        return NULL;
    }
    if (v == 0) {
        fail_at(r, line, col, "remove the empty document or give its length in tokens (>= 1)",
                "zero length '%s'", p, q);
        return NULL;
    }
    if (v > (uint64_t)ZS_TRACE_MAX_LEN) {
        char fix[160];
        snprintf(fix, sizeof fix,
                 "lengths above %d tokens are rejected as corrupt; check the column or unit",
                 ZS_TRACE_MAX_LEN);
        fail_at(r, line, col, fix, "length '%s' is above the limit", p, q);
        return NULL;
    }
    *out = (int32_t)v;
    return q;
}

static int push(reader *r, int32_t v)
{
    return zs_trace_push(r->t, v, r->e);
}

static int full(const reader *r)
{
    return r->cfg->max_docs > 0 && r->t->n >= r->cfg->max_docs;
}

static int empty_error(reader *r, const char *what_kind)
{
    char where[600];
    snprintf(where, sizeof where, "%s:1", r->name);
    return zs_err_set(r->e, ZS_EINPUT, where,
                      "a trace needs at least one document length; check the file and its format",
                      "no lengths in the file (%s)", what_kind);
}

/* ---- lines --------------------------------------------------------------- */

static int read_lines(reader *r)
{
    const char *p = r->text, *end = r->text + r->n;
    long line = 1;
    for (; p < end && !full(r); line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        const char *s = p;
        while (s < le && (*s == ' ' || *s == '\t' || *s == '\r'))
            s++;
        if (s < le && *s != '#') {
            int32_t v;
            const char *q = parse_length(r, s, le, line, (long)(s - p) + 1, &v);
            if (!q)
                return r->e->code;
            while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
                q++;
            if (q < le && *q != '#')
                return fail_at(r, line, (long)(q - p) + 1,
                               "write one length per line (a comment may follow after '#')",
                               "unexpected text after the length: '%s'", q, le);
            int rc = push(r, v);
            if (rc)
                return rc;
        }
        if (!eol)
            break;
        p = eol + 1;
    }
    return r->t->n ? ZS_OK : empty_error(r, "only blank or comment lines");
}

/* ---- csv ----------------------------------------------------------------- */

#define CSV_MAX_FIELDS 256

typedef struct csv_field {
    const char *s, *e; /* content (quotes removed at the ends, "" kept as is) */
    long col;          /* 1-based byte column of the field start */
    int quoted;
} csv_field;

/* Splits one line into fields; returns the count, or -1 with the error set. */
static int csv_split(reader *r, const char *p, const char *le, long line, csv_field *f)
{
    const char *start = p;
    int nf = 0;
    for (;;) {
        if (nf == CSV_MAX_FIELDS) {
            char where[600];
            snprintf(where, sizeof where, "%s:%ld", r->name, line);
            zs_err_set(r->e, ZS_EINPUT, where, "keep only the columns you need",
                       "more than %d columns", CSV_MAX_FIELDS);
            return -1;
        }
        csv_field *c = &f[nf++];
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        c->col = (long)(p - start) + 1;
        c->quoted = p < le && *p == '"';
        if (c->quoted) {
            const char *q = p + 1;
            for (;;) {
                while (q < le && *q != '"')
                    q++;
                if (q >= le) {
                    fail_at(r, line, c->col, "close the quoted field with '\"' on the same line",
                            "unterminated quote: '%s'", p, le);
                    return -1;
                }
                if (q + 1 < le && q[1] == '"') {
                    q += 2;
                    continue;
                }
                break;
            }
            c->s = p + 1;
            c->e = q;
            p = q + 1;
            while (p < le && (*p == ' ' || *p == '\t' || *p == '\r'))
                p++;
            if (p < le && *p != ',') {
                fail_at(r, line, (long)(p - start) + 1, "separate fields with ','",
                        "unexpected text after a quoted field: '%s'", p, le);
                return -1;
            }
        } else {
            const char *q = p;
            while (q < le && *q != ',')
                q++;
            c->s = p;
            c->e = q;
            while (c->e > c->s && (c->e[-1] == ' ' || c->e[-1] == '\t' || c->e[-1] == '\r'))
                c->e--;
            p = q;
        }
        if (p >= le)
            return nf;
        p++; /* the comma */
    }
}

static int is_integer_text(const char *s, const char *e)
{
    if (s == e)
        return 0;
    for (; s < e; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static int field_is(const csv_field *f, const char *name)
{
    size_t k = strlen(name);
    return (size_t)(f->e - f->s) == k && strncasecmp(f->s, name, k) == 0;
}

/* Picks the length column (0-based) from the first row and cfg->column. */
static int csv_pick_column(reader *r, const csv_field *f, int nf, int header, long line, int *col)
{
    static const char *const known[] = {"length",      "len",     "tokens",          "num_tokens",
                                        "n_tokens",    "ntokens", "seq_len",         "seqlen",
                                        "token_count", "doc_len", "document_length", NULL};
    char where[600];
    snprintf(where, sizeof where, "%s:%ld", r->name, line);
    const char *want = r->cfg->column;
    char names[400];
    size_t o = 0;
    names[0] = '\0';
    for (int i = 0; i < nf && o + 40 < sizeof names; i++)
        o += (size_t)snprintf(names + o, sizeof names - o, "%s%d=%.*s", i ? ", " : "", i + 1,
                              (int)(f[i].e - f[i].s > 24 ? 24 : f[i].e - f[i].s), f[i].s);
    char fix[600];
    if (want && is_integer_text(want, want + strlen(want))) {
        long k = strtol(want, NULL, 10);
        if (k < 1 || k > nf) {
            snprintf(fix, sizeof fix, "give --column a number in 1..%d or a header name (%s)", nf,
                     names);
            return zs_err_set(r->e, ZS_EINPUT, where, fix, "column %s does not exist (%d columns)",
                              want, nf);
        }
        *col = (int)k - 1;
        return ZS_OK;
    }
    if (want) {
        for (int i = 0; header && i < nf; i++)
            if (field_is(&f[i], want)) {
                *col = i;
                return ZS_OK;
            }
        snprintf(fix, sizeof fix, "%s%s", header ? "choose one of the columns: " : "",
                 header ? names
                        : "the first row holds numbers, so there is no header: give --column a "
                          "1-based number");
        return zs_err_set(r->e, ZS_EINPUT, where, fix, "no column named '%s'", want);
    }
    if (nf == 1) {
        *col = 0;
        return ZS_OK;
    }
    for (int k = 0; header && known[k]; k++)
        for (int i = 0; i < nf; i++)
            if (field_is(&f[i], known[k])) {
                *col = i;
                return ZS_OK;
            }
    snprintf(fix, sizeof fix, "choose the length column with --column NAME_OR_NUMBER (%s)", names);
    return zs_err_set(r->e, ZS_EINPUT, where, fix,
                      "%d columns and none is named length/tokens/len: which one holds lengths?",
                      nf);
}

static int read_csv(reader *r)
{
    csv_field f[CSV_MAX_FIELDS];
    const char *p = r->text, *end = r->text + r->n;
    long line = 1;
    int col = -1, rows = 0;
    for (; p < end && !full(r); line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        const char *s = p;
        while (s < le && (*s == ' ' || *s == '\t' || *s == '\r'))
            s++;
        if (s < le && *s != '#') {
            int nf = csv_split(r, p, le, line, f);
            if (nf < 0)
                return r->e->code;
            if (col < 0) {
                /* The first row is a header when any of its cells is not a
                 * plain integer: a header of numbers is indistinguishable
                 * from data and therefore treated as data. */
                int header = 0;
                for (int i = 0; i < nf; i++)
                    header |= !is_integer_text(f[i].s, f[i].e);
                int rc = csv_pick_column(r, f, nf, header, line, &col);
                if (rc)
                    return rc;
                if (header)
                    goto next;
            }
            if (col >= nf) {
                char where[600], fix[200];
                snprintf(where, sizeof where, "%s:%ld", r->name, line);
                snprintf(fix, sizeof fix, "every row needs at least %d fields", col + 1);
                return zs_err_set(r->e, ZS_EINPUT, where, fix,
                                  "row has %d field%s; the length column %d is missing", nf,
                                  nf == 1 ? "" : "s", col + 1);
            }
            const csv_field *c = &f[col];
            int32_t v;
            const char *q = parse_length(r, c->s, c->e, line, c->col + c->quoted, &v);
            if (!q)
                return r->e->code;
            if (q < c->e)
                return fail_at(r, line, c->col, fix_positive, "not an integer: '%s'", c->s, c->e);
            int rc = push(r, v);
            if (rc)
                return rc;
            rows++;
        }
    next:
        if (!eol)
            break;
        p = eol + 1;
    }
    return rows ? ZS_OK : empty_error(r, col < 0 ? "no rows" : "a header but no data rows");
}

/* ---- json ---------------------------------------------------------------- */

/* Line and column of element idx of the array that starts at text[start]
 * ('['). Strings and nested values are skipped; positions are 1-based. */
static void json_elem_pos(const char *text, size_t n, size_t start, size_t idx, long *line,
                          long *col)
{
    long ln = 1, c0 = 0; /* c0: offset of the current line start */
    for (size_t i = 0; i < start && i < n; i++)
        if (text[i] == '\n') {
            ln++;
            c0 = (long)i + 1;
        }
    int depth = 0, in_str = 0, want = 1;
    size_t k = 0;
    for (size_t i = start + 1; i < n; i++) {
        char ch = text[i];
        if (ch == '\n') {
            ln++;
            c0 = (long)i + 1;
        }
        if (in_str) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_str = 0;
            continue;
        }
        if (want && depth == 0 && !isspace((unsigned char)ch)) {
            if (k == idx) {
                *line = ln;
                *col = (long)i - c0 + 1;
                return;
            }
            k++;
            want = 0;
        }
        if (ch == '"')
            in_str = 1;
        else if (ch == '[' || ch == '{')
            depth++;
        else if (ch == ']' || ch == '}') {
            if (depth-- == 0)
                break;
        } else if (ch == ',' && depth == 0)
            want = 1;
    }
    *line = ln;
    *col = 1;
}

/* Offset of the '[' that opens the lengths array (after "lengths" when the
 * root is an object). */
static size_t json_array_start(const char *text, size_t n, int root_is_object)
{
    size_t i = 0;
    if (root_is_object) {
        const char *k = strstr(text, "\"lengths\"");
        i = k ? (size_t)(k - text) : 0;
    }
    while (i < n && text[i] != '[')
        i++;
    return i;
}

static int read_json(reader *r)
{
    json_error_t je;
    json_t *root = json_loadb(r->text, r->n, JSON_DECODE_ANY, &je);
    char where[600];
    if (!root) {
        snprintf(where, sizeof where, "%s:%d:%d", r->name, je.line, je.column);
        return zs_err_set(r->e, ZS_EINPUT, where,
                          "fix the JSON syntax: the file must hold an array of integers, "
                          "e.g. [512, 4096, 130000]",
                          "malformed JSON (%s)", je.text);
    }
    json_t *arr = root;
    int is_obj = json_is_object(root);
    if (is_obj)
        arr = json_object_get(root, "lengths");
    if (!json_is_array(arr)) {
        snprintf(where, sizeof where, "%s:1:1", r->name);
        json_decref(root);
        return zs_err_set(r->e, ZS_EINPUT, where,
                          "write an array of integers, e.g. [512, 4096], or an object "
                          "{\"lengths\": [...]}",
                          is_obj ? "JSON object without a \"lengths\" array"
                                 : "JSON value is not an array of lengths");
    }
    size_t n = json_array_size(arr);
    size_t start = json_array_start(r->text, r->n, is_obj);
    int rc = ZS_OK;
    for (size_t i = 0; i < n && !full(r); i++) {
        json_t *v = json_array_get(arr, i);
        json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
        const char *what = NULL, *fix = fix_positive;
        if (!json_is_integer(v))
            what = json_is_real(v) ? "not a whole number" : "not an integer";
        else if (x < 0)
            what = "negative length";
        else if (x == 0) {
            what = "zero length";
            fix = "remove the empty document or give its length (>= 1)";
        } else if (x > ZS_TRACE_MAX_LEN) {
            what = "length above the limit";
            fix = "lengths above 2147483647 tokens are rejected as corrupt; check the unit";
        }
        if (what) {
            long line, col;
            json_elem_pos(r->text, r->n, start, i, &line, &col);
            snprintf(where, sizeof where, "%s:%ld:%ld", r->name, line, col);
            rc = zs_err_set(r->e, ZS_EINPUT, where, fix, "%s at element %zu", what, i);
            break;
        }
        if ((rc = push(r, (int32_t)x)))
            break;
    }
    json_decref(root);
    if (rc == ZS_OK && r->t->n == 0)
        rc = empty_error(r, "an empty JSON array");
    return rc;
}

/* ---- entry points ---------------------------------------------------------- */

static zs_trace_format sniff(const char *text, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && isspace((unsigned char)text[i]))
            i++;
        if (i < n && text[i] == '#') {
            while (i < n && text[i] != '\n')
                i++;
            continue;
        }
        break;
    }
    if (i < n && (text[i] == '[' || text[i] == '{'))
        return ZS_TRACE_FMT_JSON;
    for (; i < n && text[i] != '\n'; i++)
        if (text[i] == ',')
            return ZS_TRACE_FMT_CSV;
    return ZS_TRACE_FMT_LINES;
}

int zs_trace_read_text(const char *name, const char *text, size_t n, const zs_trace_read_cfg *cfg,
                       zs_trace **out, zs_err *e)
{
    static const zs_trace_read_cfg defaults = {ZS_TRACE_FMT_AUTO, NULL, 0};
    reader r = {name, text, n, cfg ? cfg : &defaults, NULL, e};
    /* A UTF-8 byte-order mark is an editor artefact, not data. */
    if (n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        r.text += 3;
        r.n -= 3;
    }
    zs_trace_format fmt = r.cfg->format;
    if (fmt == ZS_TRACE_FMT_AUTO)
        fmt = zs_trace_format_from_path(name);
    if (fmt == ZS_TRACE_FMT_AUTO)
        fmt = sniff(r.text, r.n);
    if (!(r.t = zs_trace_new(name)))
        return zs_err_set(e, ZS_ENOMEM, name, NULL, "out of memory");
    int rc = fmt == ZS_TRACE_FMT_JSON  ? read_json(&r)
             : fmt == ZS_TRACE_FMT_CSV ? read_csv(&r)
                                       : read_lines(&r);
    if (rc) {
        zs_trace_free(r.t);
        return rc;
    }
    *out = r.t;
    return ZS_OK;
}

int zs_trace_read_file(const char *path, const zs_trace_read_cfg *cfg, zs_trace **out, zs_err *e)
{
    char *buf = NULL;
    size_t n = 0;
    int rc = zs_read_file(path, "check the path (a trace file or a preset name)", &buf, &n, e);
    if (rc == ZS_OK)
        rc = zs_trace_read_text(strcmp(path, "-") ? path : "<stdin>", buf, n, cfg, out, e);
    free(buf);
    return rc;
}
