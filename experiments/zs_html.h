/* The results database as one self-contained web page (`zepsim report DB
 * -o report.html`): a summary of every spec that stored points (points,
 * failures, how many of its paper comparisons land within 15%), then each
 * spec's figure report as zs_report writes it (NAME.md), turned into HTML
 * with its plot inlined as SVG: the paper-vs-ours table, the table of
 * every point, the assumptions and each point's configuration. The page
 * has no script and names no other file or address, so it renders from the
 * file alone, offline; it is written atomically (zs_afile) and holds no
 * timestamp (same database, same bytes). Depends on zs_report, zs_spec and
 * zs_db. */
#ifndef ZS_HTML_H
#define ZS_HTML_H

#include "zs_db.h"
#include "zs_spec.h"

typedef struct zs_html_stats {
    int specs;   /* specs on the page */
    int points;  /* their points stored */
    int plotted; /* specs whose plot is inlined (gnuplot rendered it) */
} zs_html_stats;

/* Writes the page of the specs at paths[0..n) (their points read from db)
 * to out; tmp_dir is an existing folder for zs_report's files, emptied of
 * them afterwards. */
int zs_html_write(zs_db *db, const char *const *paths, int n, const char *out, const char *tmp_dir,
                  zs_html_stats *st, zs_err *e);

/* The Markdown subset zs_report writes (headings, paragraphs, "- " lists,
 * pipe tables, `code`, [links](x), ![images](x.png)) as HTML on f; an
 * image is replaced by svg (the plot's SVG text) when svg is not NULL, and
 * links to files become their text. For tests. */
void zs_html_markdown(FILE *f, const char *md, const char *svg);

#endif
