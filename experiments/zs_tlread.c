/* Streaming timeline reader: see zs_tlread_internal.h.
 *
 * Bytes come from zlib (gzread reads a plain file as it is) one block at a
 * time. The scanner knows only the top level: whitespace, the brackets of
 * the root and of the event array, member names, ':' and ','. Every value
 * below that is cut out whole (its brackets matched, strings skipped over)
 * into one buffer and handed to jansson. */
#include "zs_tlread_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define BLOCK     (1u << 20)
#define MAX_DEPTH 512
#define RD_EOF    (-1) /* rd_peek: end of the input */
#define RD_ERR    (-2) /* rd_peek: an error, in r->rc */

typedef struct rd {
    const char *path;
    gzFile g;
    unsigned char *buf;
    size_t n, pos;
    int eof, rc;
    long line, col; /* of the next byte, from 1 */
    char *v;        /* the value cut out last, NUL-terminated */
    size_t vn, vcap;
    zs_err *e;
} rd;

static int rd_fail(rd *r, int code, const char *fix, const char *what)
{
    r->rc = zs_err_set(r->e, code, r->path, fix, "%s", what);
    return RD_ERR;
}

static int rd_fill(rd *r)
{
    int k = gzread(r->g, r->buf, BLOCK);
    if (k < 0) {
        int zerr;
        const char *msg = gzerror(r->g, &zerr);
        if (zerr == Z_ERRNO)
            return rd_fail(r, ZS_EIO, "check that the path is a readable file", strerror(errno));
        char what[300];
        snprintf(what, sizeof what, "cannot decompress: %s", msg);
        return rd_fail(r, ZS_EINPUT, "check that the file is a whole gzip file", what);
    }
    r->n = (size_t)k;
    r->pos = 0;
    r->eof = k == 0;
    return 0;
}

/* The next byte (not consumed), RD_EOF or RD_ERR. */
static inline int rd_peek(rd *r)
{
    if (r->rc)
        return RD_ERR;
    if (r->pos == r->n && (r->eof || rd_fill(r) || r->eof))
        return r->rc ? RD_ERR : RD_EOF;
    int c = r->buf[r->pos];
    if (c == 0)
        return rd_fail(r, ZS_EINPUT, "give a timeline written by zepsim",
                       "file contains a NUL byte (binary file?)");
    return c;
}

/* Consumes the byte rd_peek returned. */
static inline void rd_adv(rd *r)
{
    if (r->buf[r->pos++] == '\n') {
        r->line++;
        r->col = 1;
    } else {
        r->col++;
    }
}

static int ws(rd *r)
{
    int c;
    while ((c = rd_peek(r)) == ' ' || c == '\n' || c == '\r' || c == '\t')
        rd_adv(r);
    return c;
}

/* A syntax error at line, col (the current position when line is 0). */
__attribute__((format(printf, 4, 5))) static int syntax_at(rd *r, long line, long col,
                                                           const char *fmt, ...)
{
    if (r->rc)
        return r->rc;
    char where[700], what[400];
    snprintf(where, sizeof where, "%s:%ld:%ld", r->path, line ? line : r->line,
             line ? col : r->col);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    r->rc = zs_err_set(r->e, ZS_EINPUT, where, "fix the JSON syntax at that position",
                       "malformed JSON (%s)", what);
    return r->rc;
}

static int vpush(rd *r, int c, long l0, long c0)
{
    if (r->vn + 1 >= r->vcap) {
        if (r->vcap >= ZS_TLREAD_MAX_VALUE)
            return syntax_at(r, l0, c0,
                             "a value of more than %zu MiB; events are small: is this "
                             "a timeline?",
                             ZS_TLREAD_MAX_VALUE >> 20);
        size_t cap = r->vcap * 2;
        char *v = realloc(r->v, cap);
        if (!v)
            return r->rc = zs_err_set(r->e, ZS_ENOMEM, r->path, NULL,
                                      "out of memory reading the timeline");
        r->v = v;
        r->vcap = cap;
    }
    r->v[r->vn++] = (char)c;
    return ZS_OK;
}

/* A number or a literal: up to the next delimiter. */
static int cut_scalar(rd *r, long l0, long c0)
{
    int c;
    while ((c = rd_peek(r)) >= 0 && !strchr(" \t\r\n,]}:", c)) {
        if (vpush(r, c, l0, c0))
            return r->rc;
        rd_adv(r);
    }
    if (c == RD_ERR)
        return r->rc;
    return r->vn ? ZS_OK : syntax_at(r, 0, 0, "a value expected");
}

/* Appends buf[pos, pos + k) to the value and consumes it. */
static int take(rd *r, size_t k, long l0, long c0)
{
    if (r->vn + k + 1 > r->vcap) {
        size_t cap = r->vcap;
        while (cap < r->vn + k + 1)
            cap *= 2;
        if (cap > ZS_TLREAD_MAX_VALUE)
            return syntax_at(r, l0, c0,
                             "a value of more than %zu MiB; events are small: is this "
                             "a timeline?",
                             ZS_TLREAD_MAX_VALUE >> 20);
        char *v = realloc(r->v, cap);
        if (!v)
            return r->rc = zs_err_set(r->e, ZS_ENOMEM, r->path, NULL,
                                      "out of memory reading the timeline");
        r->v = v;
        r->vcap = cap;
    }
    memcpy(r->v + r->vn, r->buf + r->pos, k);
    r->vn += k;
    r->pos += k;
    return ZS_OK;
}

/* Where a value being cut stands: its open brackets, inside a string,
 * after a backslash there. */
typedef struct cutst {
    char stack[MAX_DEPTH];
    int depth, in_str, esc;
} cutst;

/* Scans the buffered bytes for the end of the value, block by block (the
 * hot loop of the reader); *done when its last byte was consumed. */
static int scan(rd *r, cutst *st, long l0, long c0, int *done)
{
    const unsigned char *b = r->buf + r->pos, *p = b, *end = r->buf + r->n;
    long line = r->line, col = r->col;
    int bad = 0;
    for (; p < end && !*done && !bad; p++) {
        int c = *p;
        if (c == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
        if (!c) {
            bad = 1;
        } else if (st->esc) {
            st->esc = 0;
        } else if (st->in_str) {
            st->esc = c == '\\';
            st->in_str = c != '"';
            *done = !st->in_str && !st->depth;
        } else if (c == '"') {
            st->in_str = 1;
        } else if (c == '{' || c == '[') {
            bad = st->depth == MAX_DEPTH;
            if (!bad)
                st->stack[st->depth++] = (char)c;
        } else if (c == '}' || c == ']') {
            bad = st->stack[--st->depth] != (c == '}' ? '{' : '[');
            *done = !bad && !st->depth;
        }
    }
    if (bad) { /* at the offending byte (not a newline) */
        p--;
        r->line = line;
        r->col = col - 1;
        if (!*p)
            return rd_fail(r, ZS_EINPUT, "give a timeline written by zepsim",
                           "file contains a NUL byte (binary file?)");
        if (st->depth == MAX_DEPTH)
            return syntax_at(r, 0, 0, "nested deeper than %d", MAX_DEPTH);
        return syntax_at(r, 0, 0, "'%c' does not close '%c'", *p, st->stack[st->depth]);
    }
    if (take(r, (size_t)(p - b), l0, c0))
        return r->rc;
    r->line = line;
    r->col = col;
    return ZS_OK;
}

/* Cuts the value at the current position out into r->v: an object or an
 * array up to its matching bracket, a string up to its closing quote. */
static int cut(rd *r)
{
    long l0 = r->line, c0 = r->col;
    r->vn = 0;
    int c = rd_peek(r);
    if (c == RD_ERR)
        return r->rc;
    if (c == RD_EOF)
        return syntax_at(r, 0, 0, "a value expected near end of file");
    if (c != '{' && c != '[' && c != '"') {
        if (cut_scalar(r, l0, c0))
            return r->rc;
        r->v[r->vn] = '\0';
        return ZS_OK;
    }
    cutst st;
    st.depth = st.in_str = st.esc = 0;
    int done = 0;
    while (!done) {
        if ((c = rd_peek(r)) < 0)
            return c == RD_ERR ? r->rc : syntax_at(r, 0, 0, "end of file inside a value");
        if (scan(r, &st, l0, c0, &done))
            return r->rc;
    }
    r->v[r->vn] = '\0';
    return ZS_OK;
}

/* Cuts out and parses the value at the current position. */
static int value(rd *r, json_t **out)
{
    long l0 = r->line, c0 = r->col;
    if (cut(r))
        return r->rc;
    json_error_t je;
    *out = json_loadb(r->v, r->vn, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (*out)
        return ZS_OK;
    /* jansson counts from the value's start: lines and, on its first, columns */
    long line = je.line > 0 ? l0 + je.line - 1 : l0;
    long col = je.line > 1 ? je.column : je.column > 0 ? c0 + je.column - 1 : c0;
    return syntax_at(r, line, col, "%s", je.text);
}

/* The event array, at its '['. */
static int events(rd *r, zs_tlread_fn fn, void *arg)
{
    rd_adv(r);
    if (ws(r) == ']') {
        rd_adv(r);
        return ZS_OK;
    }
    for (size_t i = 0;; i++) {
        json_t *ev;
        ws(r);
        if (value(r, &ev))
            return r->rc;
        int rc = fn(arg, r->path, i, ev, r->e);
        json_decref(ev);
        if (rc)
            return r->rc = rc;
        int c = ws(r);
        if (c == ']') {
            rd_adv(r);
            return ZS_OK;
        }
        if (c != ',')
            return c == RD_ERR ? r->rc : syntax_at(r, 0, 0, "',' or ']' expected");
        rd_adv(r);
    }
}

/* The root object, at its '{': its "traceEvents" read as events, its other
 * members checked and dropped. *found: the event array was read. */
static int root_object(rd *r, zs_tlread_fn fn, void *arg, int *found)
{
    rd_adv(r);
    if (ws(r) == '}') {
        rd_adv(r);
        return ZS_OK;
    }
    for (;;) {
        json_t *key, *val;
        if (ws(r) != '"')
            return syntax_at(r, 0, 0, "a member name expected");
        if (value(r, &key))
            return r->rc;
        int te = !strcmp(json_string_value(key), "traceEvents");
        json_decref(key);
        if (te && *found)
            return syntax_at(r, 0, 0, "duplicate object key \"traceEvents\"");
        if (ws(r) != ':')
            return syntax_at(r, 0, 0, "':' expected");
        rd_adv(r);
        int c = ws(r);
        if (te && c == '[') {
            if (events(r, fn, arg))
                return r->rc;
            *found = 1;
        } else {
            if (value(r, &val))
                return r->rc;
            json_decref(val);
            if (te) /* not an array */
                return r->rc = zs_err_set(r->e, ZS_EINPUT, r->path,
                                          "give a Chrome trace (Perfetto / chrome://tracing)",
                                          "not a timeline: no \"traceEvents\" array");
        }
        c = ws(r);
        if (c != ',' && c != '}')
            return c == RD_ERR ? r->rc : syntax_at(r, 0, 0, "',' or '}' expected");
        rd_adv(r);
        if (c == '}')
            return ZS_OK;
    }
}

static int rd_open(rd *r, const char *path, zs_err *e)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->e = e;
    r->line = r->col = 1;
    int is_stdin = !strcmp(path, "-");
    int fd = is_stdin ? dup(0) : open(path, O_RDONLY);
    if (fd < 0)
        return zs_err_set(e, ZS_EINPUT, path, "check the path", "cannot open file (%s)",
                          strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return zs_err_set(e, ZS_EINPUT, path, "give a file, not a folder",
                          "a folder where a file is expected");
    }
    r->vcap = 1 << 12;
    r->buf = malloc(BLOCK);
    r->v = malloc(r->vcap);
    if (!r->buf || !r->v || !(r->g = gzdopen(fd, "rb"))) {
        if (!r->g)
            close(fd);
        return zs_err_set(e, ZS_ENOMEM, path, NULL, "out of memory reading the timeline");
    }
    gzbuffer(r->g, 1 << 18);
    return ZS_OK;
}

static void rd_close(rd *r)
{
    if (r->g)
        gzclose(r->g);
    free(r->buf);
    free(r->v);
}

int zs_tlread_file(const char *path, zs_tlread_fn fn, void *arg, zs_err *e)
{
    rd r;
    int rc = rd_open(&r, path, e);
    if (rc) {
        rd_close(&r);
        return rc;
    }
    int c = ws(&r), found = 0;
    if (c == '[') {
        found = 1;
        events(&r, fn, arg);
    } else if (c == '{') {
        root_object(&r, fn, arg, &found);
    } else if (c != RD_ERR) {
        syntax_at(&r, 0, 0, "'[' or '{' expected%s", c == RD_EOF ? " near end of file" : "");
    }
    if (!r.rc && ws(&r) != RD_EOF)
        syntax_at(&r, 0, 0, "end of file expected");
    if (!r.rc && !found)
        r.rc = zs_err_set(e, ZS_EINPUT, path, "give a Chrome trace (Perfetto / chrome://tracing)",
                          "not a timeline: no \"traceEvents\" array");
    rc = r.rc;
    rd_close(&r);
    return rc;
}
