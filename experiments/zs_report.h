/* Figure reports: reads a spec's points from the results database and
 * writes, into one folder, NAME.md (the paper-vs-ours table, the table of
 * every point, the assumptions and the approximations the models made),
 * NAME.dat + NAME.gp (the data and the gnuplot script) and NAME.png +
 * NAME.svg (rendered by gnuplot when it is installed). Everything written
 * comes from stored rows, so a report is reproducible from the database
 * alone (no timestamps: same database, same bytes).
 * Depends on zs_spec and zs_db; runs the gnuplot program. */
#ifndef ZS_REPORT_H
#define ZS_REPORT_H

#include "zs_db.h"
#include "zs_spec.h"

typedef struct zs_report_opts {
    const char *out_dir; /* created when absent */
    int plot;            /* run gnuplot (the script is written either way) */
    const char *gnuplot; /* the program ("gnuplot") */
} zs_report_opts;

void zs_report_opts_init(zs_report_opts *o);

typedef struct zs_report_stats {
    int points, stored, failed, missing;
    int plotted;         /* PNG and SVG rendered */
    char plot_note[512]; /* why not, when not */
    char md_path[1100];
} zs_report_stats;

int zs_report_write(const zs_spec *s, zs_db *db, const zs_report_opts *o, zs_report_stats *st,
                    zs_err *e);

/* The value of a metric (zs_spec_metric_valid) for point i of rows (NAN
 * when missing or failed); speedups divide by the baseline series' point
 * of the same case. rows/found are indexed like s->points. */
double zs_report_metric(const zs_spec *s, const zs_db_row *rows, const int *found, int i,
                        const char *metric);

#endif
