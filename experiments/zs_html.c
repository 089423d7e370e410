/* The results database as one web page: see zs_html.h. */
#include "zs_html.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zs_afile.h"
#include "zs_report.h"

/* Text as HTML: the five characters that mean markup escaped. */
static void esc(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        switch (s[i]) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(s[i], f);
        }
    }
}

/* One line's inline Markdown: `code`, [text](target) as its text (the
 * page names no other file), ![alt](x) as the SVG when there is one,
 * "\|" as "|". */
static void inline_md(FILE *f, const char *s, size_t n, const char *svg)
{
    size_t i = 0;
    while (i < n) {
        const char *end;
        if (s[i] == '`' && (end = memchr(s + i + 1, '`', n - i - 1))) {
            fputs("<code>", f);
            esc(f, s + i + 1, (size_t)(end - s - i - 1));
            fputs("</code>", f);
            i = (size_t)(end - s) + 1;
        } else if ((s[i] == '[' || (s[i] == '!' && i + 1 < n && s[i + 1] == '[')) &&
                   (end = memchr(s + i, ']', n - i)) && (size_t)(end - s) + 1 < n &&
                   end[1] == '(' && memchr(end, ')', n - (size_t)(end - s))) {
            int image = s[i] == '!';
            const char *text = s + i + (image ? 2 : 1),
                       *close = memchr(end, ')', n - (size_t)(end - s));
            if (image && svg)
                fputs(svg, f);
            else
                esc(f, text, (size_t)(end - text));
            i = (size_t)(close - s) + 1;
        } else if (s[i] == '\\' && i + 1 < n && s[i + 1] == '|') {
            fputc('|', f);
            i += 2;
        } else {
            esc(f, s + i, 1);
            i++;
        }
    }
}

/* The cells of a pipe-table line ("| a | b |"): their starts and lengths,
 * blanks trimmed; "\|" is not a separator. Returns the count. */
static int cells(const char *s, size_t n, const char **c, size_t *len, int max)
{
    int k = 0;
    size_t i = s[0] == '|' ? 1 : 0, start = i;
    for (; i <= n && k < max; i++) {
        if (i < n && (s[i] != '|' || s[i - 1] == '\\'))
            continue;
        if (i == n && start >= n)
            break;
        size_t a = start, b = i;
        while (a < b && s[a] == ' ')
            a++;
        while (b > a && s[b - 1] == ' ')
            b--;
        c[k] = s + a, len[k] = b - a, k++;
        start = i + 1;
    }
    return k;
}

enum { NONE, PARA, LIST, TABLE };

/* Ends the open block. */
static void close_block(FILE *f, int *blk)
{
    static const char *const end[] = {"", "</p>\n", "</ul>\n", "</tbody></table></div>\n"};
    fputs(end[*blk], f);
    *blk = NONE;
}

/* One table line: the header row opens the table, the rule under it sets
 * each column's alignment, the rest are rows. */
static void table_line(FILE *f, const char *s, size_t n, int *blk, int *right, int *row,
                       const char *svg)
{
    enum { MAXC = 32 };
    const char *c[MAXC];
    size_t len[MAXC];
    int k = cells(s, n, c, len, MAXC);
    if (*blk != TABLE) {
        close_block(f, blk);
        *blk = TABLE;
        *row = 0;
        memset(right, 0, sizeof(int) * MAXC);
        fputs("<div class=\"tw\"><table><thead><tr>", f);
        for (int j = 0; j < k; j++) {
            fputs("<th>", f);
            inline_md(f, c[j], len[j], svg);
            fputs("</th>", f);
        }
        fputs("</tr></thead><tbody>\n", f);
        return;
    }
    if ((*row)++ == 0 && strspn(s, "|-: ") == n) { /* the alignment rule */
        for (int j = 0; j < k; j++)
            right[j] = len[j] > 0 && c[j][len[j] - 1] == ':';
        return;
    }
    fputs("<tr>", f);
    for (int j = 0; j < k; j++) {
        fputs(right[j] ? "<td class=\"n\">" : "<td>", f);
        inline_md(f, c[j], len[j], svg);
        fputs("</td>", f);
    }
    fputs("</tr>\n", f);
}

void zs_html_markdown(FILE *f, const char *md, const char *svg)
{
    int blk = NONE, right[32], row = 0;
    for (const char *p = md; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n == 0 || !strncmp(p, "[SVG](", 6)) { /* the files' links: none on the page */
            close_block(f, &blk);
        } else if (p[0] == '#') {
            size_t h = strspn(p, "#");
            close_block(f, &blk);
            fprintf(f, "<h%zu>", h + 1 > 6 ? 6 : h + 1);
            inline_md(f, p + h + (h < n && p[h] == ' '), n - h - (h < n && p[h] == ' '), svg);
            fprintf(f, "</h%zu>\n", h + 1 > 6 ? 6 : h + 1);
        } else if (p[0] == '|') {
            table_line(f, p, n, &blk, right, &row, svg);
        } else if (n > 1 && p[0] == '-' && p[1] == ' ') {
            if (blk != LIST) {
                close_block(f, &blk);
                fputs("<ul>\n", f);
                blk = LIST;
            }
            fputs("<li>", f);
            inline_md(f, p + 2, n - 2, svg);
            fputs("</li>\n", f);
        } else if (p[0] == '!' && p[1] == '[') {
            close_block(f, &blk);
            fputs("<div class=\"plot\">", f);
            inline_md(f, p, n, svg);
            fputs("</div>\n", f);
        } else {
            if (blk != PARA) {
                close_block(f, &blk);
                fputs("<p>", f);
                blk = PARA;
            } else {
                fputc('\n', f);
            }
            inline_md(f, p, n, svg);
        }
        p += n + (nl != NULL);
    }
    close_block(f, &blk);
}

/* A file's whole text (caller frees), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got + 1 > cap) {
            cap = (n + got + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        memcpy(buf + n, chunk, got);
        n += got;
    }
    fclose(f);
    if (!buf)
        buf = calloc(1, 1);
    else
        buf[n] = '\0';
    return buf;
}

/* Of the paper-vs-ours table of a report: the comparisons with a value
 * on both sides, and those within 15%. */
static void paper_hits(const char *md, int *compared, int *within)
{
    *compared = *within = 0;
    const char *p = strstr(md, "| what | series | ours | paper | ours / paper |");
    if (!p)
        return;
    for (p = strchr(p, '\n'); p && p[1] == '|'; p = strchr(p + 1, '\n')) {
        const char *c[8];
        size_t len[8];
        const char *nl = strchr(p + 1, '\n');
        size_t n = nl ? (size_t)(nl - p - 1) : strlen(p + 1);
        if (cells(p + 1, n, c, len, 8) < 5 || c[4][0] == '-')
            continue;
        char *end;
        double r = strtod(c[4], &end);
        if (end == c[4] || !isfinite(r))
            continue;
        (*compared)++;
        *within += fabs(r - 1) <= 0.15;
    }
}

static const char style[] =
    "body{font:14px/1.45 sans-serif;margin:2em auto;max-width:1280px;padding:0 1em;color:#222}"
    "h1{font-size:1.6em}h2{border-top:2px solid #ccc;padding-top:.8em;margin-top:2em}"
    "h3{font-size:1.1em}code{background:#f3f3f3;padding:0 .2em}"
    ".tw{overflow-x:auto}table{border-collapse:collapse;margin:.6em 0}"
    "th,td{border:1px solid #ccc;padding:.2em .5em;vertical-align:top}"
    "th{background:#f3f3f3}td.n{text-align:right;white-space:nowrap}"
    ".plot svg{max-width:100%;height:auto}";

/* One spec's section: its report written into tmp, read back and turned
 * into HTML, the files removed. */
static int spec_section(FILE *f, zs_db *db, const zs_spec *s, const char *tmp, zs_html_stats *st,
                        int *compared, int *within, zs_err *e)
{
    zs_report_opts o;
    zs_report_opts_init(&o);
    o.out_dir = tmp;
    zs_report_stats rs;
    int rc = zs_report_write(s, db, &o, &rs, e);
    if (rc)
        return rc;
    static const char *const ext[] = {"md", "svg", "png", "dat", "gp"};
    char path[5][1200];
    for (int i = 0; i < 5; i++)
        snprintf(path[i], sizeof path[i], "%s/%s.%s", tmp, s->name, ext[i]);
    char *md = slurp(path[0]), *svg = rs.plotted ? slurp(path[1]) : NULL;
    for (int i = 0; i < 5; i++)
        remove(path[i]);
    if (!md) {
        free(svg);
        return zs_err_set(e, ZS_EIO, path[0], NULL, "cannot read the report back");
    }
    paper_hits(md, compared, within);
    st->points += rs.stored;
    st->plotted += svg != NULL;
    fprintf(f, "<section id=\"%s\">\n", s->name);
    const char *tag = svg ? strstr(svg, "<svg") : NULL; /* no XML prolog inside HTML */
    zs_html_markdown(f, md, tag);
    fputs("</section>\n", f);
    free(md);
    free(svg);
    return ZS_OK;
}

/* The summary row of one spec. */
static void summary_row(FILE *f, const zs_spec *s, int compared, int within, int stored)
{
    fprintf(f, "<tr><td><a href=\"#%s\">", s->name);
    esc(f, s->name, strlen(s->name));
    fputs("</a></td><td>", f);
    esc(f, s->title, strlen(s->title));
    fprintf(f, "</td><td class=\"n\">%d / %d</td><td class=\"n\">", stored, s->npoints);
    if (compared)
        fprintf(f, "%d of %d", within, compared);
    else
        fputs("none published", f);
    fputs("</td></tr>\n", f);
}

int zs_html_write(zs_db *db, const char *const *paths, int n, const char *out, const char *tmp_dir,
                  zs_html_stats *st, zs_err *e)
{
    memset(st, 0, sizeof *st);
    zs_afile body, page;
    char body_path[1200];
    snprintf(body_path, sizeof body_path, "%s/body.html", tmp_dir);
    int rc = zs_afile_open(&body, body_path, e);
    if (rc)
        return rc;
    char *summary = NULL;
    size_t summary_n = 0;
    FILE *sf = open_memstream(&summary, &summary_n);
    for (int i = 0; i < n && !rc && sf; i++) {
        zs_spec *s = NULL;
        int compared = 0, within = 0, before = st->points;
        if (!(rc = zs_spec_load(paths[i], &s, e)) &&
            !(rc = spec_section(body.f, db, s, tmp_dir, st, &compared, &within, e))) {
            summary_row(sf, s, compared, within, st->points - before);
            st->specs++;
        }
        zs_spec_free(s);
    }
    if (!sf)
        rc = zs_err_set(e, ZS_ENOMEM, NULL, NULL, "out of memory");
    else
        fclose(sf);
    if (!rc)
        rc = zs_afile_commit(&body, e);
    else
        zs_afile_abort(&body);
    char *b = rc ? NULL : slurp(body_path);
    remove(body_path);
    if (!rc && !b)
        rc = zs_err_set(e, ZS_EIO, body_path, NULL, "cannot read the page back");
    if (!rc && !(rc = zs_afile_open(&page, out, e))) {
        fprintf(page.f,
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<title>zepsim results</title><style>%s</style></head><body>\n"
                "<h1>zepsim results</h1>\n<p>Every figure spec with points in the results "
                "database: its plot, the paper's numbers beside ours, every point and its "
                "configuration. <em>within 15%%</em> counts the paper comparisons whose ours / "
                "paper lies in 0.85-1.15.</p>\n<div class=\"tw\"><table><thead><tr><th>spec</th>"
                "<th>title</th><th>points stored</th><th>paper within 15%%</th></tr></thead>"
                "<tbody>\n%s</tbody></table></div>\n%s</body></html>\n",
                style, summary ? summary : "", b);
        rc = zs_afile_commit(&page, e);
    }
    free(b);
    free(summary);
    return rc;
}
